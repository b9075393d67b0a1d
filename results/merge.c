/* Joining results databases (see merge.h). The tables are not listed here: every table of
 * the schema with a `run` column is copied, with the columns the target has (the same as the
 * source's: both are of this schema version), so a table added to schema.sql is merged
 * without a change here. Values travel as SQLite values (sqlite3_bind_value), never as
 * text. */
#define _POSIX_C_SOURCE 200809L
#include "merge.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "query.h"

#define MAX_TABLES 32
#define MAX_SWEEPS 256

/* One table's copy: its columns (the run column's position) and the two statements. */
typedef struct table {
    char name[64];
    char cols[1024]; /* "a", "b", ... */
    int n_cols, run_col;
    sqlite3_stmt *insert; /* on the target */
    sqlite3_stmt *select; /* on the current source: its rows of one run (runs: the row) */
} table_t;

typedef struct merge {
    sqlite3 *to;
    const char *into;
    table_t tables[MAX_TABLES]; /* tables[0] is runs */
    int n_tables;
    char *sweeps[MAX_SWEEPS]; /* sweep ids touched, each once */
    int n_sweeps;
    results_merge_stats_t *stats;
    dt_err_t *err;
} merge_t;

static dt_status sql_error(merge_t *m, sqlite3 *h, const char *path, const char *what)
{
    dt_err_input(m->err, "%s: %s: %s", path, what, sqlite3_errmsg(h));
    return DT_ERR_RUN;
}

/* The columns of table `name` on the target, less `id` for runs. */
static dt_status table_columns(merge_t *m, table_t *t)
{
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", t->name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->to, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_error(m, m->to, m->into, "reading the schema");
    t->run_col = -1;
    size_t len = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(st, 1);
        if (!strcmp(t->name, "runs") && !strcmp(col, "id"))
            continue;
        if (!strcmp(col, "run"))
            t->run_col = t->n_cols;
        len += (size_t)snprintf(t->cols + len, sizeof t->cols - len, "%s\"%s\"",
                                t->n_cols ? ", " : "", col);
        DT_ASSERT(len < sizeof t->cols);
        t->n_cols++;
    }
    sqlite3_finalize(st);
    return DT_OK;
}

/* runs, then every table with a run column, with their insert statements. */
static dt_status tables_init(merge_t *m)
{
    table_t *runs = &m->tables[m->n_tables++];
    snprintf(runs->name, sizeof runs->name, "runs");
    if (table_columns(m, runs))
        return DT_ERR_RUN;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->to,
                           "SELECT name FROM sqlite_schema WHERE type = 'table' AND name != "
                           "'runs' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_error(m, m->to, m->into, "reading the schema");
    while (sqlite3_step(st) == SQLITE_ROW) {
        DT_ASSERT(m->n_tables < MAX_TABLES);
        table_t *t = &m->tables[m->n_tables];
        snprintf(t->name, sizeof t->name, "%s", (const char *)sqlite3_column_text(st, 0));
        if (table_columns(m, t)) {
            sqlite3_finalize(st);
            return DT_ERR_RUN;
        }
        if (t->run_col >= 0)
            m->n_tables++;
        else
            memset(t, 0, sizeof *t);
    }
    sqlite3_finalize(st);
    for (int i = 0; i < m->n_tables; i++) {
        table_t *t = &m->tables[i];
        char sql[2048];
        int len = snprintf(sql, sizeof sql, "INSERT INTO \"%s\" (%s) VALUES (", t->name, t->cols);
        for (int c = 0; c < t->n_cols; c++)
            len += snprintf(sql + len, sizeof sql - (size_t)len, c ? ", ?" : "?");
        snprintf(sql + len, sizeof sql - (size_t)len, ")");
        if (sqlite3_prepare_v2(m->to, sql, -1, &t->insert, NULL) != SQLITE_OK)
            return sql_error(m, m->to, m->into, "preparing an insert");
    }
    return DT_OK;
}

static void tables_free(merge_t *m)
{
    for (int i = 0; i < m->n_tables; i++) {
        sqlite3_finalize(m->tables[i].insert);
        sqlite3_finalize(m->tables[i].select);
    }
}

/* The select statements of every table on source h. */
static dt_status selects_prepare(merge_t *m, sqlite3 *h, const char *path)
{
    for (int i = 0; i < m->n_tables; i++) {
        table_t *t = &m->tables[i];
        sqlite3_finalize(t->select);
        char sql[2048];
        snprintf(sql, sizeof sql, "SELECT %s FROM \"%s\" WHERE %s = ?1", t->cols, t->name,
                 i == 0 ? "id" : "run");
        if (sqlite3_prepare_v2(h, sql, -1, &t->select, NULL) != SQLITE_OK)
            return sql_error(m, h, path, "reading its tables");
    }
    return DT_OK;
}

/* Copies source run `from` (its row and every row that refers to it) as a new run of the
 * target; *id gets the new id. */
static dt_status copy_run(merge_t *m, sqlite3 *h, const char *path, sqlite3_int64 from,
                          sqlite3_int64 *id)
{
    for (int i = 0; i < m->n_tables; i++) {
        table_t *t = &m->tables[i];
        sqlite3_reset(t->select);
        sqlite3_bind_int64(t->select, 1, from);
        int rc;
        while ((rc = sqlite3_step(t->select)) == SQLITE_ROW) {
            sqlite3_reset(t->insert);
            for (int c = 0; c < t->n_cols; c++) {
                if (c == t->run_col)
                    sqlite3_bind_int64(t->insert, c + 1, *id);
                else
                    sqlite3_bind_value(t->insert, c + 1, sqlite3_column_value(t->select, c));
            }
            if (sqlite3_step(t->insert) != SQLITE_DONE)
                return sql_error(m, m->to, m->into, "writing a run");
            if (i == 0)
                *id = sqlite3_last_insert_rowid(m->to);
        }
        if (rc != SQLITE_DONE)
            return sql_error(m, h, path, "reading a run");
    }
    return DT_OK;
}

static void sweep_touched(merge_t *m, const char *sweep)
{
    for (int i = 0; i < m->n_sweeps; i++)
        if (!strcmp(m->sweeps[i], sweep))
            return;
    if (m->n_sweeps < MAX_SWEEPS)
        m->sweeps[m->n_sweeps++] = strdup(sweep);
}

/* The target's run with the identity of the source's current row (0: none), its status and
 * configuration (malloc'ed copies). */
static dt_status find_twin(merge_t *m, sqlite3_stmt *src, sqlite3_int64 *id, char **status,
                           char **config)
{
    static const char *by_sweep =
        "SELECT id, status, config FROM runs WHERE sweep = ?1 AND sweep_index IS ?2";
    static const char *by_run = "SELECT id, status, config FROM runs WHERE sweep IS NULL AND "
                                "name IS ?3 AND started IS ?4 AND host IS ?5 AND pid IS ?6";
    int in_sweep = sqlite3_column_type(src, 1) != SQLITE_NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->to, in_sweep ? by_sweep : by_run, -1, &st, NULL) != SQLITE_OK)
        return sql_error(m, m->to, m->into, "looking a run up");
    for (int k = 1; k <= 6; k++)
        if ((in_sweep && k <= 2) || (!in_sweep && k >= 3))
            sqlite3_bind_value(st, k, sqlite3_column_value(src, k));
    *id = 0;
    *status = *config = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        *status = strdup((const char *)sqlite3_column_text(st, 1));
        const unsigned char *c = sqlite3_column_text(st, 2);
        *config = c ? strdup((const char *)c) : NULL;
    }
    sqlite3_finalize(st);
    return DT_OK;
}

/* Two resolved configurations are the same run's when they differ at most in the database
 * they were written to (the [run] key db: each job of a job array may write its own). */
static int same_config(const char *a, const char *b)
{
    while (*a || *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        int da = !strncmp(a, "db = ", 5), db = !strncmp(b, "db = ", 5);
        if (!(da && db) && (la != lb || memcmp(a, b, la)))
            return 0;
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    return 1;
}

/* Deletes a run of the target with its rows (ON DELETE CASCADE); SQLite's result code. */
static int delete_run(merge_t *m, sqlite3_int64 id)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(m->to, "DELETE FROM runs WHERE id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

static dt_status merge_source(merge_t *m, const char *path)
{
    results_query_t *q;
    if (results_query_open(&q, path, m->err))
        return DT_ERR_INPUT;
    sqlite3 *h = results_query_sqlite(q);
    dt_status st = selects_prepare(m, h, path);
    sqlite3_stmt *runs = NULL;
    if (!st && sqlite3_prepare_v2(h,
                                  "SELECT id, sweep, sweep_index, name, started, host, pid, "
                                  "status, config FROM runs ORDER BY id",
                                  -1, &runs, NULL) != SQLITE_OK)
        st = sql_error(m, h, path, "reading its runs");
    int rc = SQLITE_DONE;
    while (!st && (rc = sqlite3_step(runs)) == SQLITE_ROW) {
        sqlite3_int64 twin, id = 0, from = sqlite3_column_int64(runs, 0);
        char *status, *config;
        if ((st = find_twin(m, runs, &twin, &status, &config)))
            break;
        const char *in_status = (const char *)sqlite3_column_text(runs, 7);
        const char *in_config = (const char *)sqlite3_column_text(runs, 8);
        const char *sweep = (const char *)sqlite3_column_text(runs, 1);
        int in_finished = in_status && !strcmp(in_status, "finished");
        if (twin && config && in_config && !same_config(config, in_config)) {
            st = dt_err_input(m->err,
                              "%s: run %lld and run %lld of %s are both member %lld of sweep "
                              "%s, with different configurations (not the same sweep: "
                              "nothing was merged)",
                              path, (long long)from, (long long)twin, m->into,
                              (long long)sqlite3_column_int64(runs, 2), sweep);
        } else if (twin && (!strcmp(status, "finished") || !in_finished)) {
            m->stats->skipped++;
        } else {
            if (twin && delete_run(m, twin))
                st = sql_error(m, m->to, m->into, "replacing a run");
            else if (!(st = copy_run(m, h, path, from, &id)))
                *(twin ? &m->stats->replaced : &m->stats->copied) += 1;
            if (!st && sweep)
                sweep_touched(m, sweep);
        }
        free(status);
        free(config);
    }
    if (!st && rc != SQLITE_DONE)
        st = sql_error(m, h, path, "reading its runs");
    sqlite3_finalize(runs);
    for (int i = 0; i < m->n_tables; i++) {
        sqlite3_finalize(m->tables[i].select);
        m->tables[i].select = NULL;
    }
    results_query_close(q);
    return st;
}

/* "sweep ID: members 0-3, 5 (5 runs)" for every sweep the merge touched. */
static void report_sweeps(merge_t *m, FILE *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->to,
                           "SELECT sweep_index FROM runs WHERE sweep = ?1 GROUP BY sweep_index "
                           "ORDER BY sweep_index",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    for (int i = 0; i < m->n_sweeps; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, m->sweeps[i], -1, SQLITE_STATIC);
        fprintf(out, "sweep %s: members ", m->sweeps[i]);
        long n = 0, lo = -1, prev = -2;
        while (sqlite3_step(st) == SQLITE_ROW) {
            long k = (long)sqlite3_column_int64(st, 0);
            if (k != prev + 1) {
                if (lo >= 0)
                    fprintf(out, prev > lo ? "%ld-%ld, " : "%ld, ", lo, prev);
                lo = k;
            }
            prev = k;
            n++;
        }
        if (lo >= 0)
            fprintf(out, prev > lo ? "%ld-%ld" : "%ld", lo, prev);
        fprintf(out, " (%ld run%s)\n", n, n == 1 ? "" : "s");
    }
    sqlite3_finalize(st);
}

/* The same file (the target need not exist yet). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Every source opens as a dtsim database of this schema version. */
static dt_status check_sources(const char *const *srcs, int n, const char *into, dt_err_t *err)
{
    for (int i = 0; i < n; i++) {
        if (same_file(srcs[i], into))
            return dt_err_input(err, "%s: the target is also a source (merge into another file)",
                                srcs[i]);
        results_query_t *q;
        if (results_query_open(&q, srcs[i], err))
            return DT_ERR_INPUT;
        int version = 0;
        results_sql_int(results_query_sqlite(q), "PRAGMA user_version", &version);
        results_query_close(q);
        if (version != RESULTS_SCHEMA_VERSION)
            return dt_err_input(err,
                                "%s: schema version %d, and merge joins version %d only (the "
                                "dtsim that wrote it can bring it up: dtsim run --db on it)",
                                srcs[i], version, RESULTS_SCHEMA_VERSION);
    }
    return DT_OK;
}

dt_status results_merge(const char *const *srcs, int n, const char *into,
                        results_merge_stats_t *stats, FILE *report, dt_err_t *err)
{
    memset(stats, 0, sizeof *stats);
    if (n < 1)
        return dt_err_input(err, "nothing to merge: no source database");
    dt_status st = check_sources(srcs, n, into, err);
    if (st)
        return st;
    struct stat sb;
    int existed = stat(into, &sb) == 0;
    results_db_t *db;
    if ((st = results_db_open(&db, into, err)))
        return st;
    merge_t m = {.to = results_db_sqlite(db), .into = into, .stats = stats, .err = err};
    if (sqlite3_exec(m.to, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        st = sql_error(&m, m.to, into, "locking it");
    if (!st)
        st = tables_init(&m);
    for (int i = 0; !st && i < n; i++)
        st = merge_source(&m, srcs[i]);
    if (!st && sqlite3_exec(m.to, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        st = sql_error(&m, m.to, into, "committing");
    if (!st && report)
        report_sweeps(&m, report);
    tables_free(&m);
    for (int i = 0; i < m.n_sweeps; i++)
        free(m.sweeps[i]);
    results_db_close(db); /* rolls back what was not committed */
    if (st) {
        memset(stats, 0, sizeof *stats);
        if (!existed) { /* a target made for this merge does not outlive its failure */
            char side[4096];
            unlink(into);
            snprintf(side, sizeof side, "%s-wal", into);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", into);
            unlink(side);
        }
    }
    return st;
}
