/* What the read side's files share beyond query.h (query.c, query_runs.c): SQLite errors
 * worded as every read error is, growing arrays, and reading text and reals from a row. */
#ifndef DTSIM_RESULTS_QUERY_IMPL_H
#define DTSIM_RESULTS_QUERY_IMPL_H

#include <sqlite3.h>
#include <stddef.h>

#include "query.h"

/* "PATH: WHAT: SQLite's message" into err; DT_ERR_INPUT for a file that is no database or
 * cannot be opened, DT_ERR_RUN otherwise. */
dt_status results_q_error(const results_query_t *q, int rc, dt_err_t *err, const char *what);
/* Makes room for need elements of elem bytes in p (capacity *cap, doubling). */
void *results_q_grow(void *p, size_t *cap, size_t need, size_t elem);
/* A malloc'ed copy of a column's text ("" for NULL). */
char *results_q_text_dup(const unsigned char *t);
/* A column as a real, NAN for NULL. */
double results_q_col_real(sqlite3_stmt *s, int i);
/* The file's schema version: a file read as it is may predate a column (the workers and
 * memory rows' weight came with version 8). */
int results_q_version(const results_query_t *q);

#endif
