/* The tidy table: one row per run with its identity, each scenario key that tells the runs
 * apart as a column of its own, and its run_summary metrics; the shape pandas, R and a
 * spreadsheet read without a pivot. */
#ifndef DTSIM_RESULTS_TIDY_H
#define DTSIM_RESULTS_TIDY_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "query.h"

/* Writes the tidy CSV of the given runs (in that order; every run when n_runs is 0, by id)
 * to out. Columns: run, name, strategy, status, sweep, sweep_index; then, by key name, the
 * keys whose value differs between those runs or is missing from some (every key with
 * all_params; never run.name, which is the name column); then the columns of the
 * run_summary view (empty for a run that has not ended). A key is written as a number when
 * every run's value is one (as written when it is a plain number, else in base units: 10Gbps
 * is 1250000000 bytes/s), as text otherwise. */
dt_status results_tidy_write(results_query_t *q, const int64_t *runs, size_t n_runs,
                             int all_params, FILE *out, dt_err_t *err);

#endif
