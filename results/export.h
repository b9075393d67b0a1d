/* Reading runs back out: CSV export of a run's tables (the run list: query.h). */
#ifndef DTSIM_RESULTS_EXPORT_H
#define DTSIM_RESULTS_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"

/* Writes DIR/TABLE.csv for every table (runs, params, evals, workers, summary, staleness,
 * label_hist, timeline, links, faults, memory, privacy, clients) with the rows of the given runs (all runs when
 * n_runs is 0). RFC 4180 quoting; NULL is an empty field. The directory is created if
 * missing (not its parents). Prints nothing; the written paths go to `written` if not
 * NULL, one per line. */
dt_status results_export_csv(const char *db_path, const int64_t *runs, size_t n_runs,
                             const char *dir, FILE *written, dt_err_t *err);

#endif
