/* Helpers shared by the commands (cli_util.c): exit codes, usage errors, strict number
 * parsing. */
#ifndef DTSIM_CLI_UTIL_H
#define DTSIM_CLI_UTIL_H

#include "common.h"

/* The results database when neither --db nor run.db names one (run.db's default). */
#define DEFAULT_DB "results/dtsim.db"

#ifndef DTSIM_VERSION
#define DTSIM_VERSION "unknown"
#endif

enum { CLI_EXIT_OK = 0, CLI_EXIT_RUN = 1, CLI_EXIT_USAGE = 2 };

/* Prints "dtsim CMD: MESSAGE" and a hint to --help on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict number parsing for option values: the whole text must be a number in [lo, hi]. */
int cli_parse_long(const char *text, long lo, long hi, long *out);
/** The field-th whitespace-separated word (0-based) of a file's first line, such as a
 * /proc/sys setting, into out (n bytes); -1 when unreadable, missing or longer. */
int cli_proc_word(const char *path, int field, char *out, size_t n);
/** The median of v[0..n) (n >= 1), sorting v in place. */
double cli_median(double *v, int n);
/** The same for a finite double: 0 with *out set, or -1 with *out untouched. */
int cli_parse_double(const char *text, double lo, double hi, double *out);

#endif
