/* CSV export (see export.h). Read-only, through prepared statements with
 * bound run ids; table names come from a fixed list, never from the user. */
#define _POSIX_C_SOURCE 200809L
#include "export.h"

#include "db.h"
#include "query.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One CSV field: quoted when it holds a comma, quote, CR or LF; quotes doubled. */
static void csv_field(FILE *f, sqlite3_stmt *s, int col)
{
    switch (sqlite3_column_type(s, col)) {
    case SQLITE_NULL:
        return;
    case SQLITE_INTEGER:
        fprintf(f, "%lld", (long long)sqlite3_column_int64(s, col));
        return;
    case SQLITE_FLOAT:
        fprintf(f, "%.17g", sqlite3_column_double(s, col));
        return;
    default: {
        const char *t = (const char *)sqlite3_column_text(s, col);
        if (!strpbrk(t, ",\"\r\n")) {
            fputs(t, f);
            return;
        }
        fputc('"', f);
        for (; *t; t++) {
            if (*t == '"')
                fputc('"', f);
            fputc(*t, f);
        }
        fputc('"', f);
    }
    }
}

static dt_status export_table(sqlite3 *h, const char *db_path, const char *table,
                              const char *run_col, const int64_t *runs, size_t n_runs,
                              const char *dir, FILE *written, dt_err_t *err)
{
    char path[4096], sql[256];
    snprintf(path, sizeof path, "%s/%s.csv", dir, table);
    if (n_runs)
        snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE %s = ?1", table, run_col);
    else
        snprintf(sql, sizeof sql, "SELECT * FROM %s", table);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(h, sql, -1, &s, NULL) != SQLITE_OK)
        return dt_err_input(err, "%s: %s: %s", db_path, table, sqlite3_errmsg(h));
    FILE *f = fopen(path, "w");
    if (!f) {
        sqlite3_finalize(s);
        return dt_err_input(err, "%s: cannot write: %s", path, strerror(errno));
    }
    int cols = sqlite3_column_count(s);
    for (int c = 0; c < cols; c++)
        fprintf(f, "%s%s", c ? "," : "", sqlite3_column_name(s, c));
    fputc('\n', f);
    dt_status st = DT_OK;
    for (size_t r = 0; r < (n_runs ? n_runs : 1) && st == DT_OK; r++) {
        if (n_runs) {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, runs[r]);
        }
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            for (int c = 0; c < cols; c++) {
                if (c)
                    fputc(',', f);
                csv_field(f, s, c);
            }
            fputc('\n', f);
        }
        if (rc != SQLITE_DONE)
            st = dt_err_input(err, "%s: %s: %s", db_path, table, sqlite3_errmsg(h));
    }
    sqlite3_finalize(s);
    if (fclose(f) != 0 && st == DT_OK)
        st = dt_err_input(err, "%s: write failed: %s", path, strerror(errno));
    if (st == DT_OK && written)
        fprintf(written, "%s\n", path);
    return st;
}

dt_status results_export_csv(const char *db_path, const int64_t *runs, size_t n_runs,
                             const char *dir, FILE *written, dt_err_t *err)
{
    static const char *const tables[][2] = {
        {"runs", "id"},          {"params", "run"},   {"evals", "run"},
        {"workers", "run"},      {"summary", "run"},  {"staleness", "run"},
        {"label_hist", "run"},   {"timeline", "run"}, {"links", "run"},
        {"faults", "run"},       {"memory", "run"},   {"privacy", "run"},
        {"clients", "run"},
    };
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return dt_err_input(err, "%s: cannot create: %s", dir, strerror(errno));
    results_query_t *q;
    if (results_query_open(&q, db_path, err))
        return DT_ERR_INPUT;
    dt_status st = DT_OK;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0] && st == DT_OK; t++)
        st = export_table(results_query_sqlite(q), db_path, tables[t][0], tables[t][1], runs,
                          n_runs, dir, written, err);
    results_query_close(q);
    return st;
}
