/* Which stored runs a read command shows: `dtsim plot` and `dtsim report` take the same
 * --runs SPEC, --sweep ID and --timeline-run ID and the same default (query.h's
 * results_query_select), checked and opened here once for both. */
#ifndef DTSIM_CLI_SELECT_H
#define DTSIM_CLI_SELECT_H

#include <stdint.h>

#include "cli_util.h"
#include "query.h"

/* The options that choose the runs, rows of plot's and report's option tables. */
enum { CLI_SELECT_DB = 100, CLI_SELECT_RUNS, CLI_SELECT_SWEEP, CLI_SELECT_TIMELINE_RUN };
#define CLI_SELECT_OPTIONS                                                                         \
    {.id = CLI_SELECT_DB,                                                                          \
     .name = "db",                                                                                 \
     .kind = CLI_VALUE_PATH,                                                                       \
     .metavar = "PATH",                                                                            \
     .help = "results database [" DEFAULT_DB "]"},                                                 \
        {.id = CLI_SELECT_RUNS,                                                                    \
         .name = "runs",                                                                           \
         .kind = CLI_VALUE_TEXT,                                                                   \
         .metavar = "SPEC",                                                                        \
         .help = "these runs: ids and ranges, e.g. 3,5-9"},                                        \
    {                                                                                              \
        .id = CLI_SELECT_SWEEP, .name = "sweep", .kind = CLI_VALUE_TEXT, .metavar = "ID|NAME",     \
        .help =                                                                                    \
            "the finished runs of this sweep: its id, or its name (run.name: the newest "          \
            "sweep of it with more than one run) [the sweep named as the newest finished "         \
            "run's, so that a --member run alone keeps its sweep's; without sweeps the " CLI_STR(  \
                RESULTS_RECENT_RUNS) " most recent finished runs]"                                 \
    }
#define CLI_SELECT_TIMELINE_OPTION                                                                 \
    {                                                                                              \
        .id = CLI_SELECT_TIMELINE_RUN, .name = "timeline-run", .kind = CLI_VALUE_INT,              \
        .metavar = "ID",                                                                           \
        .help = "the run of the timeline [of the selected runs with timeline rows, the one with "  \
                "the largest compute share]",                                                      \
        .lo = 1, .hi = (double)LONG_MAX                                                            \
    }

/* The options alone, before anything is opened: --runs and --sweep together, or a --runs
 * SPEC that does not parse, is a usage error of cmd (printed; its exit code returned). */
int cli_select_check(const char *cmd, const char *runs_spec, const char *sweep);

/* Opens db_path read-only (never creating it) into *q and selects the runs into *runs; a
 * timeline_run other than 0 must exist. On failure prints "dtsim CMD: why" and returns the
 * exit code (2 for the user's input, 1 otherwise), with *q (maybe NULL) and *runs still to
 * be freed by the caller as on success. */
int cli_select_runs(const char *cmd, const char *db_path, const char *runs_spec, const char *sweep,
                    int64_t timeline_run, results_query_t **q, results_runs_t *runs);

#endif
