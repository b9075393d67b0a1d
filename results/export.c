/* The export (see export.h): CSV tables, the tidy table and the Chrome
 * trace, each written whole under a temporary name and then renamed, so that a failed export
 * leaves the files of an earlier one as they were. Read-only, through prepared statements
 * with bound run ids; table names come from a fixed list, never from the user. */
#define _POSIX_C_SOURCE 200809L
#include "export.h"

#include "csv.h"
#include "db.h"
#include "query.h"
#include "tidy.h"
#include "trace_json.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const results_export_table_t results_export_tables[] = {
    {"runs", "id", "run: name, strategy, status, configuration, seed, sweep"},
    {"params", "run", "run and key: its text, its number in base units"},
    {"evals", "run", "evaluation: time, step, samples, bytes, loss, accuracy, perplexity (text)"},
    {"workers", "run", "host, or hosts alike (weight): role, rank, seconds, bytes, steps"},
    {"memory", "run", "host, or hosts alike (weight): params, grads, optimizer, activations"},
    {"summary", "run", "ended run: final accuracy, loss, times, bytes, shares"},
    {"energy", "run", "ended run: host and link joules, per step and sample; dollars"},
    {"breakdown", "run", "ended run and part of a step: simulated seconds per step"},
    {"run_summary", "run", "ended run: summary, workers, throughput, scaling (view)"},
    {"staleness", "run", "staleness value: gradients async-ps applied that stale"},
    {"privacy", "run", "DP-FedAvg round: epsilon spent at delta"},
    {"clients", "run", "federated client: rounds, samples, held-out accuracy"},
    {"client_fairness", "run", "federated run: participation, accuracy spread (view)"},
    {"label_hist", "run", "client and label: the partition's label counts"},
    {"timeline", "run", "interval: what a host did (compute, comm, idle), when"},
    {"messages", "run", "message in the timeline's window: who to whom, when, bytes"},
    {"links", "run", "link, or links alike (weight): bytes it carried"},
    {"faults", "run", "fault: simulated time, kind, target, detail"},
};
const size_t results_export_n_tables =
    sizeof results_export_tables / sizeof results_export_tables[0];

/* Writes a file through fn(ctx, f, err): under a temporary name beside path, renamed to path
 * when fn succeeded and every byte reached the file, removed otherwise; "-" is stdout. */
typedef dt_status (*write_fn)(void *ctx, FILE *f, dt_err_t *err);

static dt_status write_file(const char *path, write_fn fn, void *ctx, FILE *written, dt_err_t *err)
{
    if (!strcmp(path, "-")) {
        dt_status st = fn(ctx, stdout, err);
        if (fflush(stdout) != 0 && st == DT_OK)
            st = dt_err_input(err, "stdout: write failed: %s", strerror(errno));
        return st;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return dt_err_input(err, "%.200s...: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return dt_err_input(err, "%s: cannot write: %s", path, strerror(errno));
    dt_status st = fn(ctx, f, err);
    if (ferror(f) && st == DT_OK)
        st = dt_err_input(err, "%s: write failed", path);
    if (fclose(f) != 0 && st == DT_OK)
        st = dt_err_input(err, "%s: write failed: %s", path, strerror(errno));
    if (st == DT_OK && rename(tmp, path) != 0)
        st = dt_err_input(err, "%s: cannot write: %s", path, strerror(errno));
    if (st != DT_OK) {
        unlink(tmp);
        return st;
    }
    if (written)
        fprintf(written, "%s\n", path);
    return DT_OK;
}

/* mkdir -p of path's directory (of path itself when is_dir); "-" (stdout) needs none. */
static dt_status make_dirs(const char *path, int is_dir, dt_err_t *err)
{
    if (!strcmp(path, "-"))
        return DT_OK;
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return dt_err_input(err, "%.200s...: path too long", path);
    char *end = is_dir ? dir + strlen(dir) : strrchr(dir, '/');
    if (!end || end == dir)
        return DT_OK; /* a file in the working directory, or in / */
    *end = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        struct stat sb;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return dt_err_input(err, "%s: cannot create: %s", dir, strerror(errno));
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return dt_err_input(err, "%s: not a directory", dir);
        if (!(*p = c))
            return DT_OK;
    }
}

typedef struct table_job {
    sqlite3 *h;
    const char *db_path;
    const results_export_table_t *table;
    const int64_t *runs;
    size_t n_runs;
} table_job_t;

/* One table's rows, those of the given runs (all when none), as CSV. */
static dt_status table_csv(void *ctx, FILE *f, dt_err_t *err)
{
    const table_job_t *j = ctx;
    char sql[256];
    if (j->n_runs)
        snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE %s = ?1", j->table->name,
                 j->table->run_col);
    else
        snprintf(sql, sizeof sql, "SELECT * FROM %s", j->table->name);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(j->h, sql, -1, &s, NULL) != SQLITE_OK)
        return dt_err_input(err, "%s: %s: %s", j->db_path, j->table->name, sqlite3_errmsg(j->h));
    int cols = sqlite3_column_count(s);
    for (int c = 0; c < cols; c++) {
        if (c)
            fputc(',', f);
        results_csv_header(f, j->table->name, sqlite3_column_name(s, c));
    }
    fputc('\n', f);
    dt_status st = DT_OK;
    for (size_t r = 0; r < (j->n_runs ? j->n_runs : 1) && st == DT_OK; r++) {
        if (j->n_runs) {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, j->runs[r]);
        }
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            for (int c = 0; c < cols; c++) {
                if (c)
                    fputc(',', f);
                results_csv_column(f, s, c);
            }
            fputc('\n', f);
        }
        if (rc != SQLITE_DONE)
            st = dt_err_input(err, "%s: %s: %s", j->db_path, j->table->name, sqlite3_errmsg(j->h));
    }
    sqlite3_finalize(s);
    return st;
}

typedef struct tidy_job {
    results_query_t *q;
    const int64_t *runs;
    size_t n_runs;
    int all_params;
} tidy_job_t;

static dt_status tidy_csv(void *ctx, FILE *f, dt_err_t *err)
{
    const tidy_job_t *j = ctx;
    return results_tidy_write(j->q, j->runs, j->n_runs, j->all_params, f, err);
}

dt_status results_export_select(const char *db_path, const char *runs_spec, const char *sweep,
                                int64_t **runs, size_t *n, dt_err_t *err)
{
    DT_ASSERT(!(runs_spec && sweep));
    *runs = NULL;
    *n = 0;
    if (!runs_spec && !sweep)
        return DT_OK;
    results_query_t *q;
    if (results_query_open(&q, db_path, err))
        return DT_ERR_INPUT;
    results_runs_t sel = {0};
    dt_status st = runs_spec ? results_query_select(q, runs_spec, NULL, &sel, err)
                             : results_query_sweep(q, sweep, &sel, err);
    if (st == DT_OK && sel.n == 0)
        st = dt_err_input(err, "%s: no sweep \"%s\"", db_path, sweep);
    if (st == DT_OK) {
        *runs = dt_malloc(sel.n * sizeof **runs);
        for (size_t i = 0; i < sel.n; i++)
            (*runs)[i] = sel.v[i].id;
        *n = sel.n;
    }
    results_runs_free(&sel);
    results_query_close(q);
    return st;
}

/* Whether the file has the table or view (an older schema version lacks the newer ones). */
static int has_table(sqlite3 *h, const char *name)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(h, "SELECT 1 FROM sqlite_schema WHERE name = ?1", -1, &s, NULL))
        return 1; /* let the table's own query say what is wrong */
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int found = sqlite3_step(s) != SQLITE_DONE;
    sqlite3_finalize(s);
    return found;
}

dt_status results_export_csv(const char *db_path, const int64_t *runs, size_t n_runs,
                             int all_params, const char *dir, FILE *written, dt_err_t *err)
{
    results_query_t *q;
    if (results_query_open(&q, db_path, err))
        return DT_ERR_INPUT;
    dt_status st = make_dirs(dir, 1, err);
    char path[4096];
    for (size_t t = 0; t < results_export_n_tables && st == DT_OK; t++) {
        if (!has_table(results_query_sqlite(q), results_export_tables[t].name))
            continue;
        table_job_t job = {results_query_sqlite(q), db_path, &results_export_tables[t], runs,
                           n_runs};
        snprintf(path, sizeof path, "%s/%s.csv", dir, results_export_tables[t].name);
        st = write_file(path, table_csv, &job, written, err);
    }
    if (st == DT_OK) {
        tidy_job_t job = {q, runs, n_runs, all_params};
        snprintf(path, sizeof path, "%s/%s", dir, RESULTS_TIDY_CSV);
        st = write_file(path, tidy_csv, &job, written, err);
    }
    results_query_close(q);
    return st;
}

dt_status results_export_tidy(const char *db_path, const int64_t *runs, size_t n_runs,
                              int all_params, const char *path, FILE *written, dt_err_t *err)
{
    results_query_t *q;
    if (results_query_open(&q, db_path, err))
        return DT_ERR_INPUT;
    tidy_job_t job = {q, runs, n_runs, all_params};
    dt_status st = make_dirs(path, 0, err);
    if (st == DT_OK)
        st = write_file(path, tidy_csv, &job, written, err);
    results_query_close(q);
    return st;
}

static dt_status trace_json(void *trace, FILE *f, dt_err_t *err)
{
    return results_trace_write(trace, f, err);
}

dt_status results_export_trace(const char *db_path, int64_t run, const char *path, FILE *written,
                               dt_err_t *err)
{
    results_query_t *q;
    if (results_query_open(&q, db_path, err))
        return DT_ERR_INPUT;
    /* read and built first: a missing run or timeline leaves no file behind */
    results_trace_t *trace = NULL;
    dt_status st = results_trace_build(q, run, &trace, err);
    if (st == DT_OK)
        st = make_dirs(path, 0, err);
    if (st == DT_OK)
        st = write_file(path, trace_json, trace, written, err);
    results_trace_free(trace);
    results_query_close(q);
    return st;
}
