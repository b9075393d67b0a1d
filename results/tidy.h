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
 * all_params; never run.name, which is the name column, nor strategy.kind, the strategy
 * column), and cluster.workers and cluster.bandwidth always; then the columns of the
 * run_summary view (empty for a run that has not ended) less its workers and bandwidth. A
 * key is written as the scenario wrote it (10Gbps, 0.05, yes); one written with a unit is
 * followed by "KEY (UNIT)": params.number in base units (B/s, s, FLOP/s). */
dt_status results_tidy_write(results_query_t *q, const int64_t *runs, size_t n_runs, int all_params,
                             FILE *out, dt_err_t *err);

#endif
