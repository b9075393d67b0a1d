/* Reading runs back out: the export of runs as CSV tables (one file per table, and the
 * tidy table) and of a run's timeline as a Chrome trace (the run list: query.h). */
#ifndef DTSIM_RESULTS_EXPORT_H
#define DTSIM_RESULTS_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"

/* A table or view that `dtsim export --csv` writes to DIR/NAME.csv: its name, the column
 * holding the run id, and what one row is (for --help). */
typedef struct results_export_table {
    const char *name, *run_col, *row;
} results_export_table_t;
/* Every table and view of schema.sql, in the order they are written. */
extern const results_export_table_t results_export_tables[];
extern const size_t results_export_n_tables;
/* The file name of the tidy table that `dtsim export --csv` writes next to the tables. */
#define RESULTS_TIDY_CSV "tidy.csv"

/* The runs to export: those of runs_spec ("3,5-9": a single id must exist, a range keeps
 * the runs in it and must hold one), or every run of sweep whatever its status, in sweep
 * order, or, both NULL, every run (*n = 0, *runs NULL). Not both. *runs is malloc'ed. */
dt_status results_export_select(const char *db_path, const char *runs_spec, const char *sweep,
                                int64_t **runs, size_t *n, dt_err_t *err);

/* Writes DIR/NAME.csv for every table of results_export_tables and DIR/tidy.csv (tidy.h;
 * all_params as there) with the rows of the given runs (all runs when n_runs is 0). RFC 4180
 * quoting; NULL is an empty field; reals in their shortest round-trip form. The directory
 * is created if missing (not its parents); each file is written under a temporary name and
 * renamed when complete. Prints nothing; the written paths go to `written` if not NULL, one
 * per line. */
dt_status results_export_csv(const char *db_path, const int64_t *runs, size_t n_runs,
                             int all_params, const char *dir, FILE *written, dt_err_t *err);

/* Writes the tidy table (tidy.h) of the given runs (all when n_runs is 0) to path ("-":
 * stdout), as results_export_csv writes a file. */
dt_status results_export_tidy(const char *db_path, const int64_t *runs, size_t n_runs,
                              int all_params, const char *path, FILE *written, dt_err_t *err);

/* Writes run's timeline as Chrome trace JSON (trace_json.h) to path ("-": stdout), as
 * results_export_csv writes a file. DT_ERR_INPUT, writing nothing, when there is no such
 * run or it has no timeline rows. */
dt_status results_export_trace(const char *db_path, int64_t run, const char *path, FILE *written,
                               dt_err_t *err);

#endif
