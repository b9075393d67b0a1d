/* The tidy table (see tidy.h). Which keys become columns is one GROUP BY over the selected
 * runs' params rows (the run ids travel as one bound JSON array); each row is then the run's
 * runs and run_summary row with its params rows merged in by key, both sides in key order.
 * Keys are bound or compared, never pasted into SQL.
 *
 * A key is written as the user wrote it (10Gbps, 0.05, yes), so that a column reads as the
 * scenario does; a key written with a unit gets a second column, "KEY (B/s)", its value in
 * base units as params.number holds it, for computations. Nothing is written twice:
 * strategy.kind is the strategy column, and run_summary's workers and bandwidth are
 * cluster.workers and cluster.bandwidth, which are always columns. */
#define _POSIX_C_SOURCE 200809L
#include "tidy.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

/* The identity columns, from runs; run_summary's own copies of them are left out. */
static const char *const identity[] = {"run", "name", "strategy", "status", "sweep", "sweep_index"};
#define N_IDENTITY (sizeof identity / sizeof identity[0])

static const char row_sql[] =
    "SELECT r.id AS run, r.name, r.strategy, r.status, r.sweep, r.sweep_index, s.*"
    " FROM runs r LEFT JOIN run_summary s ON s.run = r.id WHERE r.id = ?1";
static const char params_sql[] = "SELECT key, value, number FROM params WHERE run = ?1"
                                 " ORDER BY key";
/* ?1: the run ids as a JSON array, ?2: how many. A key is a column when it differs, or is
 * one that run_summary's own columns would otherwise repeat; strategy.kind when it is not
 * the strategy column (a run whose kind and strategy name differ). */
static const char keys_sql[] =
    "SELECT key, count(*) < ?2 OR count(DISTINCT value) > 1"
    " OR key IN ('cluster.workers', 'cluster.bandwidth'),"
    " key <> 'strategy.kind' OR EXISTS (SELECT 1 FROM params p JOIN runs r ON r.id = p.run"
    "   WHERE p.key = 'strategy.kind' AND p.value IS NOT r.strategy"
    "   AND p.run IN (SELECT j.value FROM json_each(?1) AS j))"
    " FROM params WHERE run IN (SELECT j.value FROM json_each(?1) AS j)"
    " AND key <> 'run.name' GROUP BY key ORDER BY key";
/* ?1: the key, ?2: the run ids */
static const char values_sql[] =
    "SELECT value FROM params WHERE key = ?1 AND run IN (SELECT j.value FROM json_each(?2) AS j)"
    " AND number IS NOT NULL";

/* run_summary's columns that the key columns hold already */
static const char *const repeated[] = {"workers", "bandwidth"};

typedef struct key_col {
    char *key;
    const char *si; /* the base unit of a key written with one ("B/s"), else NULL */
} key_col_t;

typedef struct tidy {
    sqlite3 *h;
    const char *db;
    sqlite3_stmt *row, *params, *keys, *values, *all;
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

/* The base unit that params.number holds for a value written with unit text (10Gbps, 5us,
 * 312Tf; the units of dtsim keys' table), or NULL for a plain number or no unit. */
static const char *base_unit(const char *text)
{
    char *end;
    strtod(text, &end);
    if (end == text)
        return NULL;
    end += strspn(end, " ");
    size_t n = strlen(end);
#define ENDS(s) (n >= sizeof(s) - 1 && !strcmp(end + n - (sizeof(s) - 1), s))
    if (n == 0)
        return NULL;
    if (ENDS("f") || ENDS("flops"))
        return "FLOP/s";
    if (ENDS("ps") || ENDS("/s"))
        return "B/s";
    if (!strcmp(end, "ns") || !strcmp(end, "us") || !strcmp(end, "ms") || !strcmp(end, "s") ||
        !strcmp(end, "min") || !strcmp(end, "h"))
        return "s";
    return NULL;
#undef ENDS
}

/* The base unit of key among the runs (json: their ids), the first any value has. */
static dt_status key_unit(tidy_t *t, const char *key, const char *json, const char **si,
                          dt_err_t *err)
{
    *si = NULL;
    sqlite3_reset(t->values);
    if (sqlite3_bind_text(t->values, 1, key, -1, SQLITE_TRANSIENT) ||
        sqlite3_bind_text(t->values, 2, json, -1, SQLITE_STATIC))
        return sql_error(t, err);
    int rc;
    while (!*si && (rc = sqlite3_step(t->values)) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(t->values, 0);
        *si = v ? base_unit(v) : NULL;
    }
    return *si || rc == SQLITE_DONE ? DT_OK : sql_error(t, err);
}

/* The key columns: the keys of the runs' params that differ between them (all_params: every
 * key), in key order, each with its base unit when written with one. */
static dt_status key_cols(tidy_t *t, int all_params, dt_err_t *err)
{
    size_t cap = 32 + 24 * t->n_ids, len = 0;
    char *json = dt_malloc(cap);
    json[len++] = '[';
    for (size_t i = 0; i < t->n_ids; i++)
        len +=
            (size_t)snprintf(json + len, cap - len, "%s%lld", i ? "," : "", (long long)t->ids[i]);
    snprintf(json + len, cap - len, "]");
    dt_status st = DT_OK;
    if (sqlite3_prepare_v2(t->h, keys_sql, -1, &t->keys, NULL) ||
        sqlite3_prepare_v2(t->h, values_sql, -1, &t->values, NULL) ||
        sqlite3_bind_text(t->keys, 1, json, -1, SQLITE_TRANSIENT) ||
        sqlite3_bind_int64(t->keys, 2, (sqlite3_int64)t->n_ids)) {
        st = sql_error(t, err);
        goto done;
    }
    int rc;
    while (st == DT_OK && (rc = sqlite3_step(t->keys)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(t->keys, 0);
        /* sweep.fingerprint (dtsim run --resume's) is bookkeeping, not a key of the runs */
        if (!all_params && (!sqlite3_column_int(t->keys, 1) || !strcmp(key, "sweep.fingerprint")))
            continue;
        if (!sqlite3_column_int(t->keys, 2))
            continue; /* strategy.kind: the strategy column */
        t->cols = grow(t->cols, t->n_cols, sizeof *t->cols);
        key_col_t *col = &t->cols[t->n_cols++];
        col->key = dt_malloc(strlen(key) + 1);
        strcpy(col->key, key);
        st = key_unit(t, key, json, &col->si, err);
    }
    if (st == DT_OK && rc != SQLITE_DONE)
        st = sql_error(t, err);
done:
    free(json);
    return st;
}

/* run_summary's columns that are neither identity nor key columns. */
static int is_metric(sqlite3_stmt *row, int col)
{
    if (col < (int)N_IDENTITY)
        return 0;
    for (size_t i = 0; i < N_IDENTITY; i++)
        if (!strcmp(sqlite3_column_name(row, col), identity[i]))
            return 0;
    for (size_t i = 0; i < sizeof repeated / sizeof *repeated; i++)
        if (!strcmp(sqlite3_column_name(row, col), repeated[i]))
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
        if (t->cols[k].si) {
            char name[512];
            snprintf(name, sizeof name, "%s (%s)", t->cols[k].key, t->cols[k].si);
            fputc(',', out);
            results_csv_text(out, name);
        }
    }
    for (int c = 0; c < cols; c++)
        if (is_metric(t->row, c)) {
            fputc(',', out);
            results_csv_header(out, "run_summary", sqlite3_column_name(t->row, c));
        }
    fputc('\n', out);
}

/* One key's field as written; then, for a key with a unit, params.number (base units). */
static void key_field(FILE *out, const key_col_t *col, sqlite3_stmt *p)
{
    const char *value = (const char *)sqlite3_column_text(p, 1);
    if (value) {
        char *end;
        strtod(value, &end);
        if (end != value && *end == '\0')
            fputs(value, out); /* a plain number stays one: 0.05, not "0.05" */
        else
            results_csv_text(out, value);
    }
    if (col->si) {
        fputc(',', out);
        if (sqlite3_column_type(p, 2) != SQLITE_NULL) {
            char num[RESULTS_DOUBLE_LEN];
            fputs(results_csv_double(num, sqlite3_column_double(p, 2)), out);
        }
    }
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
        else if (t->cols[k].si)
            fputc(',', out);
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

dt_status results_tidy_write(results_query_t *q, const int64_t *runs, size_t n_runs, int all_params,
                             FILE *out, dt_err_t *err)
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
    sqlite3_finalize(t.values);
    sqlite3_finalize(t.all);
    for (size_t k = 0; k < t.n_cols; k++)
        free(t.cols[k].key);
    free(t.cols);
    free(t.ids);
    return st;
}
