/* The tidy table (see tidy.h). Which keys become columns is one GROUP BY over the selected
 * runs' params rows (the run ids travel as one bound JSON array); each row is then the run's
 * runs and run_summary row with its params rows merged in by key, both sides in key order.
 * Keys are bound or compared, never pasted into SQL. */
#define _POSIX_C_SOURCE 200809L
#include "tidy.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

/* The identity columns, from runs; run_summary's own copies of them are left out. */
static const char *const identity[] = {"run", "name", "strategy", "status", "sweep",
                                       "sweep_index"};
#define N_IDENTITY (sizeof identity / sizeof identity[0])

static const char row_sql[] =
    "SELECT r.id AS run, r.name, r.strategy, r.status, r.sweep, r.sweep_index, s.*"
    " FROM runs r LEFT JOIN run_summary s ON s.run = r.id WHERE r.id = ?1";
static const char params_sql[] = "SELECT key, value, number FROM params WHERE run = ?1"
                                 " ORDER BY key";
/* ?1: the run ids as a JSON array, ?2: how many */
static const char keys_sql[] =
    "SELECT key, count(*) < ?2 OR count(DISTINCT value) > 1, min(number IS NOT NULL)"
    " FROM params WHERE run IN (SELECT j.value FROM json_each(?1) AS j)"
    " AND key <> 'run.name' GROUP BY key ORDER BY key";

typedef struct key_col {
    char *key;
    int numeric; /* every run's value has a number */
} key_col_t;

typedef struct tidy {
    sqlite3 *h;
    const char *db;
    sqlite3_stmt *row, *params, *keys, *all;
    key_col_t *cols;
    size_t n_cols;
    int64_t *ids;
    size_t n_ids;
} tidy_t;

static dt_status sql_error(const tidy_t *t, dt_err_t *err)
{
    return dt_err_input(err, "%s: tidy table: %s", t->db, sqlite3_errmsg(t->h));
}

/* Room for one more element in p, which holds n (its capacity: n rounded up to a power of
 * two). */
static void *grow(void *p, size_t n, size_t elem)
{
    if (n & (n - 1)) /* not a power of two (nor 0): not full */
        return p;
    p = realloc(p, (n ? 2 * n : 1) * elem);
    DT_CHECK(p, "out of memory");
    return p;
}

/* Every run id, ascending: the selection when none was given. */
static dt_status all_ids(tidy_t *t, dt_err_t *err)
{
    if (sqlite3_prepare_v2(t->h, "SELECT id FROM runs ORDER BY id", -1, &t->all, NULL))
        return sql_error(t, err);
    int rc;
    while ((rc = sqlite3_step(t->all)) == SQLITE_ROW) {
        t->ids = grow(t->ids, t->n_ids, sizeof *t->ids);
        t->ids[t->n_ids++] = sqlite3_column_int64(t->all, 0);
    }
    return rc == SQLITE_DONE ? DT_OK : sql_error(t, err);
}

/* The key columns: the keys of the runs' params that differ between them (all_params: every
 * key), in key order. */
static dt_status key_cols(tidy_t *t, int all_params, dt_err_t *err)
{
    size_t cap = 32 + 24 * t->n_ids, len = 0;
    char *json = dt_malloc(cap);
    json[len++] = '[';
    for (size_t i = 0; i < t->n_ids; i++)
        len += (size_t)snprintf(json + len, cap - len, "%s%lld", i ? "," : "",
                                (long long)t->ids[i]);
    snprintf(json + len, cap - len, "]");
    dt_status st = DT_OK;
    if (sqlite3_prepare_v2(t->h, keys_sql, -1, &t->keys, NULL) ||
        sqlite3_bind_text(t->keys, 1, json, -1, SQLITE_TRANSIENT) ||
        sqlite3_bind_int64(t->keys, 2, (sqlite3_int64)t->n_ids)) {
        st = sql_error(t, err);
        goto done;
    }
    int rc;
    while ((rc = sqlite3_step(t->keys)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(t->keys, 0);
        /* sweep.fingerprint (dtsim run --resume's) is bookkeeping, not a key of the runs */
        if (!all_params && (!sqlite3_column_int(t->keys, 1) || !strcmp(key, "sweep.fingerprint")))
            continue;
        t->cols = grow(t->cols, t->n_cols, sizeof *t->cols);
        t->cols[t->n_cols].key = dt_malloc(strlen(key) + 1);
        strcpy(t->cols[t->n_cols].key, key);
        t->cols[t->n_cols++].numeric = sqlite3_column_int(t->keys, 2);
    }
    if (rc != SQLITE_DONE)
        st = sql_error(t, err);
done:
    free(json);
    return st;
}

/* run_summary's columns that are not identity columns. */
static int is_metric(sqlite3_stmt *row, int col)
{
    if (col < (int)N_IDENTITY)
        return 0;
    for (size_t i = 0; i < N_IDENTITY; i++)
        if (!strcmp(sqlite3_column_name(row, col), identity[i]))
            return 0;
    return 1;
}

static void write_header(const tidy_t *t, FILE *out)
{
    int cols = sqlite3_column_count(t->row);
    for (size_t i = 0; i < N_IDENTITY; i++)
        fprintf(out, "%s%s", i ? "," : "", identity[i]);
    for (size_t k = 0; k < t->n_cols; k++) {
        fputc(',', out);
        results_csv_text(out, t->cols[k].key);
    }
    for (int c = 0; c < cols; c++)
        if (is_metric(t->row, c))
            fprintf(out, ",%s", sqlite3_column_name(t->row, c));
    fputc('\n', out);
}

/* One key's field: a plain number as written, else params.number (base units); or text. */
static void key_field(FILE *out, const key_col_t *col, sqlite3_stmt *p)
{
    const char *value = (const char *)sqlite3_column_text(p, 1);
    if (!col->numeric) {
        if (value)
            results_csv_text(out, value);
        return;
    }
    char *end, num[RESULTS_DOUBLE_LEN];
    double v = value ? strtod(value, &end) : 0.0;
    if (!value || end == value || *end)
        v = sqlite3_column_double(p, 2);
    fputs(results_csv_double(num, v), out);
}

/* The run's row; p has been bound to the run and steps through its params by key. */
static dt_status write_row(const tidy_t *t, FILE *out, dt_err_t *err)
{
    sqlite3_stmt *r = t->row, *p = t->params;
    for (size_t i = 0; i < N_IDENTITY; i++) {
        if (i)
            fputc(',', out);
        results_csv_column(out, r, (int)i);
    }
    int rc = sqlite3_step(p);
    for (size_t k = 0; k < t->n_cols; k++) {
        fputc(',', out);
        int cmp = -1;
        while (rc == SQLITE_ROW &&
               (cmp = strcmp((const char *)sqlite3_column_text(p, 0), t->cols[k].key)) < 0)
            rc = sqlite3_step(p);
        if (rc == SQLITE_ROW && cmp == 0)
            key_field(out, &t->cols[k], p);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_error(t, err);
    int cols = sqlite3_column_count(r);
    for (int c = 0; c < cols; c++)
        if (is_metric(r, c)) {
            fputc(',', out);
            results_csv_column(out, r, c);
        }
    fputc('\n', out);
    return DT_OK;
}

dt_status results_tidy_write(results_query_t *q, const int64_t *runs, size_t n_runs,
                             int all_params, FILE *out, dt_err_t *err)
{
    tidy_t t = {.h = results_query_sqlite(q), .db = results_query_path(q)};
    dt_status st = DT_OK;
    if (n_runs) {
        t.ids = dt_malloc(n_runs * sizeof *t.ids);
        memcpy(t.ids, runs, n_runs * sizeof *t.ids);
        t.n_ids = n_runs;
    } else if ((st = all_ids(&t, err)) != DT_OK) {
        goto done;
    }
    if ((st = key_cols(&t, all_params, err)) != DT_OK)
        goto done;
    if (sqlite3_prepare_v2(t.h, row_sql, -1, &t.row, NULL) ||
        sqlite3_prepare_v2(t.h, params_sql, -1, &t.params, NULL)) {
        st = sql_error(&t, err);
        goto done;
    }
    write_header(&t, out);
    for (size_t i = 0; i < t.n_ids && st == DT_OK; i++) {
        sqlite3_reset(t.row);
        sqlite3_reset(t.params);
        sqlite3_bind_int64(t.row, 1, t.ids[i]);
        sqlite3_bind_int64(t.params, 1, t.ids[i]);
        int rc = sqlite3_step(t.row);
        if (rc == SQLITE_ROW)
            st = write_row(&t, out, err);
        else if (rc != SQLITE_DONE)
            st = sql_error(&t, err);
    }
done:
    sqlite3_finalize(t.row);
    sqlite3_finalize(t.params);
    sqlite3_finalize(t.keys);
    sqlite3_finalize(t.all);
    for (size_t k = 0; k < t.n_cols; k++)
        free(t.cols[k].key);
    free(t.cols);
    free(t.ids);
    return st;
}
