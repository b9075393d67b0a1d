/* Joining results databases: the members of a sweep run as separate jobs (a Slurm job
 * array, `dtsim run SWEEP.ini --member I`), each into its own file, become one database that
 * `dtsim plot --sweep ID` and `dtsim report` read as if the sweep had run in one place.
 *
 * A run is copied with every row that refers to it (every table with a `run` column), under
 * a new id in the target. A run's identity is its sweep id and index (a run of no sweep: its
 * name, start time, host and process), so merging the same file twice, or two files that
 * share members, adds nothing twice: a run already in the target is kept, unless it did not
 * finish and the incoming one did (a member run again after a failure), which then replaces
 * it. Two runs that claim the same member of one sweep with different configurations are a
 * conflict: nothing is written. Sources must be dtsim databases of this schema version
 * exactly (an older file is brought up by opening it for writing with that dtsim; a newer
 * one is refused). Everything goes into the target in one transaction. */
#ifndef DTSIM_RESULTS_MERGE_H
#define DTSIM_RESULTS_MERGE_H

#include <stdio.h>

#include "common.h"

typedef struct results_merge_stats {
    long copied;   /* runs added */
    long replaced; /* runs that replaced one that had not finished */
    long skipped;  /* runs already there */
} results_merge_stats_t;

/* Merges the runs of srcs[0..n) into `into` (created when missing; a target that did not
 * exist is removed again if the merge fails). Prints nothing; `report` (may be NULL) gets
 * one line per sweep touched: "sweep ID: members 0-7 (8 runs)". DT_ERR_INPUT for what the
 * user can fix (a missing or foreign file, another schema version, the target among the
 * sources, a conflict), DT_ERR_RUN when SQLite fails. */
dt_status results_merge(const char *const *srcs, int n, const char *into,
                        results_merge_stats_t *stats, FILE *report, dt_err_t *err);

#endif
