/* Which stored runs a read command shows: `dtsim plot` and `dtsim report` take the same
 * --runs SPEC, --sweep ID and --timeline-run ID and the same default (query.h's
 * results_query_select), checked and opened here once for both. */
#ifndef DTSIM_CLI_SELECT_H
#define DTSIM_CLI_SELECT_H

#include <stdint.h>

#include "query.h"

/* The options alone, before anything is opened: --runs and --sweep together, or a --runs
 * SPEC that does not parse, is a usage error of cmd (printed; its exit code returned). */
int cli_select_check(const char *cmd, const char *runs_spec, const char *sweep);

/* Opens db_path read-only (never creating it) into *q and selects the runs into *runs; a
 * timeline_run other than 0 must exist. On failure prints "dtsim CMD: why" and returns the
 * exit code (2 for the user's input, 1 otherwise), with *q (maybe NULL) and *runs still to
 * be freed by the caller as on success. */
int cli_select_runs(const char *cmd, const char *db_path, const char *runs_spec,
                    const char *sweep, int64_t timeline_run, results_query_t **q,
                    results_runs_t *runs);

#endif
