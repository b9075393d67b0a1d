/* Helpers shared by the commands (cli_util.c): exit codes, usage errors, strict number
 * parsing, and the option parser every command's option table drives (its --help, its
 * completion and its man page section come from the same table: sim/cli/README.md). */
#ifndef DTSIM_CLI_UTIL_H
#define DTSIM_CLI_UTIL_H

#include <stdio.h>

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
/** A time of at least 0 in scenario units (ns to h) or days (54d), which a training length
 * and an MTBF want and a scenario never does: 0, or -1. */
int cli_parse_duration(const char *text, double *out);

/* What an option's value is; the parser checks it before the command sees it. */
typedef enum {
    CLI_VALUE_NONE,      /* a switch: --wide */
    CLI_VALUE_TEXT,      /* any word the command reads itself: --runs 3,5-9 */
    CLI_VALUE_INT,       /* an integer in [lo, hi] */
    CLI_VALUE_FLOAT,     /* a finite number in [lo, hi] */
    CLI_VALUE_SIZE,      /* bytes with a unit (5.67TB, 64KiB), in [lo, hi] bytes */
    CLI_VALUE_DURATION,  /* a time >= 0 with a unit (10min, 54d: cli_parse_duration), in [lo, hi] s
                          */
    CLI_VALUE_BANDWIDTH, /* a rate with a unit (400Gbps, 122MBps), in [lo, hi] bytes/s */
    CLI_VALUE_PATH,      /* a file (completed as one); not empty */
    CLI_VALUE_DIR,       /* a folder (completed as one); not empty */
    CLI_VALUE_CHOICE,    /* one of the words of choices (CLI_OPT_LIST: a comma list of them) */
} cli_value_kind;

#define CLI_OPT_LIST 1u /* CLI_VALUE_CHOICE: png,svg takes several words of choices */

/* One option of a command's table. A row with a NULL name and a help text is a heading
 * ("required:") between the options; a row with neither ends the table. */
typedef struct {
    int id;           /* what cli_parse_next returns for it (> 0) */
    const char *name; /* "db" for --db */
    char alias;       /* 'j' for -j; 0: none */
    cli_value_kind kind;
    const char *metavar; /* its value in the help: "PATH"; NULL for a switch */
    const char *help;    /* wrapped to the help's width by the code */
    const char *choices; /* CLI_VALUE_CHOICE: "png,svg,pdf" */
    double lo, hi;       /* numbers, sizes, durations and rates: the range; lo = hi = 0: any */
    unsigned flags;      /* CLI_OPT_LIST */
} cli_option;

/* A command's help and options: what its --help prints and what its parser takes. */
typedef struct {
    /* after "usage: dtsim NAME ": a line that begins "dtsim " is another form (under the
     * first), any other continues the form above, aligned after "dtsim NAME " */
    const char *usage;
    const char *about;         /* the text under the usage, as printed ("" or NULL: none) */
    const cli_option *options; /* ended by a row with neither name nor help */
    const char *options_title; /* the options' heading [options:]; "" for none */
    void (*more)(FILE *out);   /* prints what the text cannot hold (a list the code knows)
                                * after the about; NULL: none */
    const char *footer;        /* the text after the options, as printed */
} cli_spec;

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x) /* a number's macro as text, for a spec's help */

/* The state of one parse of a command's arguments. */
typedef struct {
    const char *cmd; /* "run", "bench sim": for messages */
    const cli_spec *spec;
    int argc;
    char **argv;
    int next;                 /* the next word of argv */
    int n_args;               /* the words that are no option, gathered into args */
    char **args;              /* argv + 1: those words, in their order */
    const cli_option *option; /* the option last returned */
    const char *value;        /* its value as typed (NULL for a switch) */
    long integer;             /* CLI_VALUE_INT: the value */
    double number;            /* FLOAT, SIZE, DURATION, BANDWIDTH: the value in base units */
    int status;               /* after -1: CLI_EXIT_OK (--help printed) or CLI_EXIT_USAGE */
} cli_parser;

/** Begins parsing argv[1..argc) (argv[0] is the command's word) against spec. */
void cli_parse_init(cli_parser *p, const char *cmd, const cli_spec *spec, int argc, char **argv);
/** The next option's id (> 0) with its value checked into p; 0 when the options are done
 * (the other words in p->args[0..n_args)); -1 after printing the help (--help) or one usage
 * line naming the option (unknown, a missing or wrong value): exit with p->status. */
int cli_parse_next(cli_parser *p);
/** Prints the help of `dtsim cmd` from spec to out. */
void cli_help_print(FILE *out, const char *cmd, const cli_spec *spec);
/** Prints text to out from column `indent` (the first line from column `first`, already
 * written), its words wrapped so that no line passes `width` columns. */
void cli_wrap(FILE *out, const char *text, int first, int indent, int width);
/** An option's label in the help: "-j, --jobs N". */
void cli_option_label(const cli_option *o, char *out, size_t n);

#endif
