/* The dtsim command line: one function per command, sharing how options are read and how
 * usage errors are reported (one line, exit code 2). */
#ifndef DTSIM_CLI_H
#define DTSIM_CLI_H

#include <stdint.h>

#ifndef DTSIM_VERSION
#define DTSIM_VERSION "unknown"
#endif

enum { CLI_EXIT_OK = 0, CLI_EXIT_RUN = 1, CLI_EXIT_USAGE = 2 };

int cli_train(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_run(int argc, char **argv);
/* Runs one resolved scenario in this process (SimGrid runs once per process) and stores it
 * in sc->db with the sweep id and index (NULL, 0: none); prints the summary table when
 * summary is set. Returns the exit code. */
struct scenario;
int cli_run_scenario(const struct scenario *sc, const char *argv0, const char *sweep,
                     long index, int summary);
int cli_check(int argc, char **argv);
int cli_platform(int argc, char **argv);
int cli_bench_sim(int argc, char **argv);
int cli_keys(int argc, char **argv);
int cli_strategies(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_runs(int argc, char **argv);
int cli_export(int argc, char **argv);

/* Prints "dtsim CMD: MESSAGE" and a hint to --help on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict number parsing for option values: the whole text must be a number in [lo, hi]. */
int cli_parse_long(const char *text, long lo, long hi, long *out);
int cli_parse_double(const char *text, double lo, double hi, double *out);

#endif
