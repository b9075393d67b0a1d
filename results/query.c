/* The read side of the results store (see query.h): a read-only connection, the choice of
 * runs to show, and the evaluation, summary, timeline, memory and clients rows of each.
 *
 * Why these choices:
 *   - PRAGMA query_only on a read-write connection: drawing figures must not be able to
 *     change a result, and a reader never takes the write lock that a sweep's writers need
 *     (WAL readers do not block writers); read-write (read-only only where the file is
 *     write-protected) so that a reader that closes last checkpoints the database and
 *     removes its -wal and -shm files, which a read-only connection leaves behind.
 *   - a run's figures come from the run_summary view, not from a second formula here: the
 *     scaling efficiency a figure shows is the one `sqlite3 ... run_summary` shows.
 *   - a --runs range is a filter over existing runs ("1-1000000" costs nothing), a single
 *     id a promise that the run exists (a typo is an error, not an empty figure). */
#define _POSIX_C_SOURCE 200809L
#include "query.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "db.h" /* RESULTS_SCHEMA_VERSION */
#include "query_impl.h"

#define RESULTS_APPLICATION_ID 1685353321

enum q_stmt {
    Q_RUN,
    Q_EVALS,
    Q_TIMELINE,
    Q_RUN_COUNT,
    Q_FINISHED_COUNT,
    Q_LATEST_NAME,
    Q_NAMED_SWEEP,
    Q_SWEEP_RUNS,
    Q_SWEEP_COUNT,
    Q_RECENT,
    Q_RANGE,
    Q_FAULTS,
    Q_SWEEP_ALL,
    Q_COUNT
};

/* The columns of a results_run_view_t, in run_view_read's order. */
#define RUN_VIEW_SQL                                                                               \
    "SELECT r.id, r.name, r.strategy, r.status, r.sweep, r.sweep_index,"                           \
    " (SELECT number FROM params WHERE run = r.id AND key = 'cluster.workers'),"                   \
    " (SELECT number FROM params WHERE run = r.id AND key = 'cluster.bandwidth'),"                 \
    " s.run IS NOT NULL, s.final_accuracy, s.sim_time, s.time_to_target,"                          \
    " s.target_accuracy, s.total_bytes, s.compute_share, s.comm_share,"                            \
    " s.idle_share, s.steps, s.throughput, s.scaling_efficiency, s.final_loss,"                    \
    " EXISTS (SELECT 1 FROM evals e WHERE e.run = r.id AND e.perplexity IS NOT NULL)"              \
    " FROM runs r LEFT JOIN run_summary s ON s.run = r.id"

static const char *const q_sql[Q_COUNT] = {
    [Q_RUN] = RUN_VIEW_SQL " WHERE r.id = ?1",
    [Q_EVALS] = "SELECT sim_time, step, samples, bytes, test_loss, test_acc, perplexity FROM evals"
                " WHERE run = ?1 ORDER BY sim_time, step, rowid",
    [Q_TIMELINE] = "SELECT host, role, rank, state, start, end FROM timeline WHERE run = ?1"
                   " ORDER BY CASE role WHEN 'server' THEN 0 WHEN 'worker' THEN 1 ELSE 2 END,"
                   " role, rank, host, start, end",
    [Q_RUN_COUNT] = "SELECT count(*) FROM runs",
    /* a collapsed run ran its whole schedule: its curves are drawn with the finished ones */
    [Q_FINISHED_COUNT] = "SELECT count(*) FROM runs WHERE status IN ('finished', 'collapsed')",
    [Q_LATEST_NAME] = "SELECT name FROM runs WHERE sweep IS NOT NULL AND status IN"
                      " ('finished', 'collapsed') ORDER BY id DESC LIMIT 1",
    /* ?1 a sweep's name: its runs are named ?1 or ?1/...; the newest of its sweeps with more
     * than one finished run, else the newest (a --member run is a sweep of one) */
    [Q_NAMED_SWEEP] = "SELECT sweep FROM runs WHERE sweep IS NOT NULL AND status IN"
                      " ('finished', 'collapsed') AND (name = ?1 OR"
                      " substr(name, 1, length(?1) + 1) = ?1 || '/')"
                      " GROUP BY sweep ORDER BY count(*) > 1 DESC, max(id) DESC LIMIT 1",
    [Q_SWEEP_RUNS] = "SELECT id FROM runs WHERE sweep = ?1 AND status IN ('finished', 'collapsed')"
                     " ORDER BY sweep_index, id",
    [Q_SWEEP_COUNT] = "SELECT count(*) FROM runs WHERE sweep = ?1",
    [Q_RECENT] = "SELECT id FROM runs WHERE status IN ('finished', 'collapsed') ORDER BY id DESC"
                 " LIMIT ?1",
    [Q_RANGE] = "SELECT id FROM runs WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
    [Q_FAULTS] = "SELECT sim_time, kind FROM faults WHERE run = ?1 ORDER BY sim_time, rowid",
    [Q_SWEEP_ALL] = RUN_VIEW_SQL " WHERE r.sweep = ?1 ORDER BY r.sweep_index, r.id",
};

struct results_query {
    sqlite3 *h;
    sqlite3_stmt *st[Q_COUNT];
    char path[]; /* for error messages */
};

dt_status results_q_error(const results_query_t *q, int rc, dt_err_t *err, const char *what)
{
    if (err) {
        snprintf(err->msg, sizeof err->msg, "%s: %s: %s", q->path, what, sqlite3_errmsg(q->h));
        dt_err_clean(err);
    }
    /* a damaged file (SQLITE_CORRUPT) is bad input like one that is no database at all */
    return (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CANTOPEN ||
                   (rc & 0xff) == SQLITE_CORRUPT
               ? DT_ERR_INPUT
               : DT_ERR_RUN;
}

static void *xrealloc(void *p, size_t bytes)
{
    p = realloc(p, bytes);
    DT_CHECK(p, "out of memory (%zu bytes)", bytes);
    return p;
}

/* Makes room for need elements of elem bytes in p (capacity *cap, doubling). */
void *results_q_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    *cap = c;
    return xrealloc(p, c * elem);
}

char *results_q_text_dup(const unsigned char *t)
{
    const char *s = t ? (const char *)t : "";
    size_t n = strlen(s);
    char *d = dt_malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

double results_q_col_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static void q_reset(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

/* --- opening --------------------------------------------------------------------------- */

struct sqlite3 *results_query_sqlite(results_query_t *q)
{
    return q->h;
}

/* read each time: a command that reads opens the file for writing too, which may upgrade it
 * after this connection was opened (results_query_open_current) */
int results_q_version(const results_query_t *q)
{
    int version = 0;
    return results_sql_int(q->h, "PRAGMA user_version", &version) == SQLITE_OK ? version : 0;
}

/* PRAGMA quick_check(1): "ok", or the first damage found (DT_ERR_INPUT naming the file). */
static dt_status quick_check(results_query_t *q, dt_err_t *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(q->h, "PRAGMA quick_check(1)", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    dt_status st = DT_OK;
    if (rc == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(s, 0);
        if (!r || strcmp(r, "ok")) {
            /* "*** in database main ***\nPage 5: ...": the line that names the damage */
            const char *nl = r ? strrchr(r, '\n') : NULL;
            st = dt_err_input(err,
                              "%s: the database is damaged (SQLite: %s); "
                              "restore it from a copy, or recover it with sqlite3's .recover",
                              q->path,
                              nl  ? nl + 1
                              : r ? r
                                  : "no answer");
        }
    } else {
        st = results_q_error(q, rc, err, "checking the file");
    }
    sqlite3_finalize(s);
    return st;
}

dt_status results_query_open(results_query_t **out, const char *path, dt_err_t *err)
{
    DT_ASSERT(out && path);
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return dt_err_input(err, "%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return dt_err_input(err, "%s: not a file", path);

    size_t len = strlen(path);
    results_query_t *q = dt_calloc(1, sizeof *q + len + 1);
    memcpy(q->path, path, len + 1);
    dt_status st = DT_OK;
    /* without SQLITE_OPEN_CREATE: a missing file stays an error */
    int rc = sqlite3_open_v2(path, &q->h, SQLITE_OPEN_READWRITE, NULL);
    DT_CHECK(q->h, "out of memory opening SQLite database %s", path);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(q->h, "PRAGMA query_only = 1", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        st = results_q_error(q, rc, err, "cannot open");
        goto fail;
    }
    sqlite3_extended_result_codes(q->h, 1);
    sqlite3_busy_timeout(q->h, 10000);
    int app = 0, version = 0;
    if ((rc = results_sql_int(q->h, "PRAGMA application_id", &app)) != SQLITE_OK ||
        (rc = results_sql_int(q->h, "PRAGMA user_version", &version)) != SQLITE_OK) {
        st = results_q_error(q, rc, err, "cannot read");
        if ((rc & 0xff) == SQLITE_NOTADB)
            st = dt_err_input(err, "%s: not a dtsim results database", path);
        goto fail;
    }
    if (app != RESULTS_APPLICATION_ID || version < 1) {
        st = dt_err_input(err, "%s: not a dtsim results database", path);
        goto fail;
    }
    if (version > RESULTS_SCHEMA_VERSION) {
        st = dt_err_input(err,
                          "%s: written by a newer dtsim (schema version %d; this dtsim knows "
                          "versions up to %d)",
                          path, version, RESULTS_SCHEMA_VERSION);
        goto fail;
    }
    /* A damaged page is found before anything is read, wherever it lies: a command that
     * happened not to read it would list or draw a file that has lost rows (quick_check
     * reads every page once: 0.08 s of CPU for a 35 MB file). */
    if ((st = quick_check(q, err)) != DT_OK)
        goto fail;
    for (int i = 0; i < Q_COUNT; i++) {
        rc = sqlite3_prepare_v3(q->h, q_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &q->st[i], NULL);
        if (rc != SQLITE_OK) {
            st = results_q_error(q, rc, err, "preparing a query");
            goto fail;
        }
    }
    *out = q;
    return DT_OK;
fail:
    results_query_close(q);
    return st;
}

void results_query_close(results_query_t *q)
{
    if (!q)
        return;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(q->st[i]);
    sqlite3_close(q->h);
    free(q);
}

/* --- one run ---------------------------------------------------------------------------- */

double results_run_view_workers(const results_run_view_t *r)
{
    return strcmp(r->strategy, "single") == 0 ? 1.0 : r->workers;
}

/* out from the current row of a RUN_VIEW_SQL statement. */
static void run_view_read(sqlite3_stmt *s, results_run_view_t *out)
{
    out->id = sqlite3_column_int64(s, 0);
    out->name = results_q_text_dup(sqlite3_column_text(s, 1));
    out->strategy = results_q_text_dup(sqlite3_column_text(s, 2));
    out->status = results_q_text_dup(sqlite3_column_text(s, 3));
    out->sweep = sqlite3_column_type(s, 4) == SQLITE_NULL
                     ? NULL
                     : results_q_text_dup(sqlite3_column_text(s, 4));
    out->sweep_index = (long)sqlite3_column_int64(s, 5);
    out->workers = results_q_col_real(s, 6);
    out->bandwidth = results_q_col_real(s, 7);
    out->has_summary = sqlite3_column_int(s, 8);
    out->final_accuracy = results_q_col_real(s, 9);
    out->sim_time = results_q_col_real(s, 10);
    out->time_to_target = results_q_col_real(s, 11);
    out->target_accuracy = results_q_col_real(s, 12);
    out->total_bytes = results_q_col_real(s, 13);
    out->compute_share = results_q_col_real(s, 14);
    out->comm_share = results_q_col_real(s, 15);
    out->idle_share = results_q_col_real(s, 16);
    out->steps = (long)sqlite3_column_int64(s, 17);
    out->throughput = results_q_col_real(s, 18);
    out->scaling_efficiency = results_q_col_real(s, 19);
    out->final_loss = results_q_col_real(s, 20);
    out->language_model = sqlite3_column_int(s, 21);
}

/* Fills out from the run's row; DT_ERR_INPUT with "no run ID" when there is none. */
dt_status results_query_run(results_query_t *q, int64_t id, results_run_view_t *out, dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    sqlite3_stmt *s = q->st[Q_RUN];
    DT_ASSERT(sqlite3_bind_int64(s, 1, id) == SQLITE_OK);
    int rc = sqlite3_step(s);
    dt_status st = DT_OK;
    if (rc == SQLITE_ROW) {
        run_view_read(s, out);
    } else if (rc == SQLITE_DONE) {
        st = dt_err_input(err, "%s: no run %lld", q->path, (long long)id);
    } else {
        st = results_q_error(q, rc, err, "reading a run");
    }
    q_reset(s);
    return st;
}

void results_run_view_free(results_run_view_t *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->strategy);
    free(r->status);
    free(r->sweep);
    memset(r, 0, sizeof *r);
}

/* --- choosing runs ---------------------------------------------------------------------- */

dt_status results_runs_spec_parse(const char *spec, results_id_range_t **ranges, size_t *n,
                                  dt_err_t *err)
{
    DT_ASSERT(spec && ranges && n);
    *ranges = NULL;
    *n = 0;
    size_t cap = 0;
    const char *p = spec;
    for (;;) {
        int64_t v[2] = {0, 0};
        int k = 0;
        for (;;) {
            if (*p < '0' || *p > '9')
                goto bad;
            int64_t x = 0;
            while (*p >= '0' && *p <= '9') {
                if (x > (INT64_MAX - 9) / 10)
                    goto bad;
                x = x * 10 + (*p++ - '0');
            }
            v[k++] = x;
            if (k == 2 || *p != '-')
                break;
            p++;
        }
        if (k == 1)
            v[1] = v[0];
        if (v[0] < 1 || v[1] < v[0])
            goto bad;
        *ranges = results_q_grow(*ranges, &cap, *n + 1, sizeof **ranges);
        (*ranges)[(*n)++] = (results_id_range_t){v[0], v[1]};
        if (*p == '\0')
            return DT_OK;
        if (*p++ != ',')
            goto bad;
    }
bad:
    free(*ranges);
    *ranges = NULL;
    *n = 0;
    return dt_err_input(err, "--runs \"%s\": expected run ids and ranges such as 3,5-9", spec);
}

/* Single-integer queries (counts). */
static dt_status q_count(results_query_t *q, enum q_stmt id, const char *text, int64_t *out,
                         dt_err_t *err)
{
    sqlite3_stmt *s = q->st[id];
    if (text)
        DT_ASSERT(sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC) == SQLITE_OK);
    int rc = sqlite3_step(s);
    dt_status st = DT_OK;
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    else
        st = results_q_error(q, rc, err, "counting runs");
    q_reset(s);
    return st;
}

typedef struct id_list {
    int64_t *v;
    size_t n, cap;
} id_list_t;

/* Appends the ids the (already bound) statement returns. */
static dt_status q_ids(results_query_t *q, sqlite3_stmt *s, id_list_t *ids, dt_err_t *err)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        ids->v = results_q_grow(ids->v, &ids->cap, ids->n + 1, sizeof *ids->v);
        ids->v[ids->n++] = sqlite3_column_int64(s, 0);
    }
    dt_status st = rc == SQLITE_DONE ? DT_OK : results_q_error(q, rc, err, "listing runs");
    q_reset(s);
    return st;
}

static int id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static dt_status select_spec(results_query_t *q, const char *spec, id_list_t *ids,
                             results_runs_t *out, dt_err_t *err)
{
    results_id_range_t *r;
    size_t n;
    dt_status st = results_runs_spec_parse(spec, &r, &n, err);
    if (st != DT_OK)
        return st;
    sqlite3_stmt *s = q->st[Q_RANGE];
    for (size_t i = 0; i < n && st == DT_OK; i++) {
        size_t before = ids->n;
        DT_ASSERT(sqlite3_bind_int64(s, 1, r[i].lo) == SQLITE_OK);
        DT_ASSERT(sqlite3_bind_int64(s, 2, r[i].hi) == SQLITE_OK);
        if ((st = q_ids(q, s, ids, err)) != DT_OK)
            break;
        if (ids->n == before && r[i].lo == r[i].hi)
            st = dt_err_input(err, "%s: no run %lld", q->path, (long long)r[i].lo);
        else if (ids->n == before)
            st = dt_err_input(err, "%s: no runs with ids %lld-%lld", q->path, (long long)r[i].lo,
                              (long long)r[i].hi);
    }
    free(r);
    if (st != DT_OK)
        return st;
    qsort(ids->v, ids->n, sizeof *ids->v, id_cmp);
    size_t k = 0;
    for (size_t i = 0; i < ids->n; i++)
        if (k == 0 || ids->v[i] != ids->v[k - 1])
            ids->v[k++] = ids->v[i];
    ids->n = k;
    snprintf(out->what, sizeof out->what, "%zu run%s (--runs %s)", k, k == 1 ? "" : "s", spec);
    return DT_OK;
}

/* The sweep id that name stands for: name itself when a sweep has that id, else the sweep
 * that Q_NAMED_SWEEP picks among those whose runs are named name or name/... (malloc'ed in
 * *id; NULL when there is none). */
static dt_status sweep_by_name(results_query_t *q, const char *name, char **id, dt_err_t *err)
{
    *id = NULL;
    int64_t all = 0;
    dt_status st = q_count(q, Q_SWEEP_COUNT, name, &all, err);
    if (st != DT_OK || all > 0) {
        *id = st == DT_OK ? results_q_text_dup((const unsigned char *)name) : NULL;
        return st;
    }
    sqlite3_stmt *s = q->st[Q_NAMED_SWEEP];
    DT_ASSERT(sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC) == SQLITE_OK);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *id = results_q_text_dup(sqlite3_column_text(s, 0));
    else if (rc != SQLITE_DONE)
        st = results_q_error(q, rc, err, "finding the sweep by its name");
    q_reset(s);
    return st;
}

/* The finished runs of sweep id, and how they were chosen in out->what (name: the sweep name
 * the id was found by, NULL when given as is). */
static dt_status select_sweep_id(results_query_t *q, const char *sweep, const char *name,
                                 id_list_t *ids, results_runs_t *out, dt_err_t *err)
{
    sqlite3_stmt *s = q->st[Q_SWEEP_RUNS];
    DT_ASSERT(sqlite3_bind_text(s, 1, sweep, -1, SQLITE_STATIC) == SQLITE_OK);
    dt_status st = q_ids(q, s, ids, err);
    if (st != DT_OK)
        return st;
    if (ids->n == 0) {
        int64_t all = 0;
        if ((st = q_count(q, Q_SWEEP_COUNT, sweep, &all, err)) != DT_OK)
            return st;
        if (all == 0)
            return dt_err_input(err, "%s: no sweep \"%s\"", q->path, sweep);
        return dt_err_input(err,
                            "%s: sweep \"%s\" has no finished runs yet (%lld runs; choose "
                            "some with --runs)",
                            q->path, sweep, (long long)all);
    }
    char by[96] = "";
    if (name)
        snprintf(by, sizeof by, " (the latest sweep named %.40s%s)", name,
                 ids->n > 1 ? " with more than one run" : "");
    snprintf(out->what, sizeof out->what, "%zu finished run%s of sweep %s%s", ids->n,
             ids->n == 1 ? "" : "s", sweep, by);
    return DT_OK;
}

/* --sweep: a sweep id, or a sweep's name (run.name of its scenario: lesson-bandwidth). */
static dt_status select_sweep(results_query_t *q, const char *sweep, id_list_t *ids,
                              results_runs_t *out, dt_err_t *err)
{
    char *id;
    dt_status st = sweep_by_name(q, sweep, &id, err);
    if (st != DT_OK)
        return st;
    if (!id)
        return dt_err_input(err,
                            "%s: no sweep \"%s\" (neither a sweep id nor the name of a "
                            "sweep's finished runs; dtsim runs lists them)",
                            q->path, sweep);
    st = select_sweep_id(q, id, strcmp(id, sweep) ? sweep : NULL, ids, out, err);
    free(id);
    return st;
}

/* The name of a sweep that run name belongs to: name up to its first '/'. malloc'ed. */
static char *sweep_name_of(const char *name)
{
    size_t len = strcspn(name, "/");
    char *out = dt_malloc(len + 1);
    memcpy(out, name, len);
    out[len] = '\0';
    return out;
}

static dt_status select_default(results_query_t *q, id_list_t *ids, results_runs_t *out,
                                dt_err_t *err)
{
    int64_t all = 0, finished = 0;
    dt_status st;
    if ((st = q_count(q, Q_RUN_COUNT, NULL, &all, err)) != DT_OK)
        return st;
    if (all == 0)
        return dt_err_input(err,
                            "%s: no runs in this database (dtsim run SCENARIO --db %s "
                            "adds some)",
                            q->path, q->path);
    if ((st = q_count(q, Q_FINISHED_COUNT, NULL, &finished, err)) != DT_OK)
        return st;
    if (finished == 0)
        return dt_err_input(err,
                            "%s: none of its %lld runs has finished (choose some with "
                            "--runs)",
                            q->path, (long long)all);

    /* The sweep of the newest finished run's name, not that run's own sweep: one member run
     * alone (--member, for a projector) leaves the lesson's report as it was. */
    sqlite3_stmt *s = q->st[Q_LATEST_NAME];
    int rc = sqlite3_step(s);
    char *name = NULL, *sweep = NULL;
    if (rc == SQLITE_ROW)
        name = sweep_name_of((const char *)sqlite3_column_text(s, 0));
    else if (rc != SQLITE_DONE)
        st = results_q_error(q, rc, err, "finding the latest sweep");
    q_reset(s);
    if (st == DT_OK && name)
        st = sweep_by_name(q, name, &sweep, err);
    if (st == DT_OK && sweep)
        st = select_sweep_id(q, sweep, name, ids, out, err);
    free(name);
    free(sweep);
    if (st != DT_OK || ids->n)
        return st;
    s = q->st[Q_RECENT];
    DT_ASSERT(sqlite3_bind_int64(s, 1, RESULTS_RECENT_RUNS) == SQLITE_OK);
    if ((st = q_ids(q, s, ids, err)) != DT_OK)
        return st;
    qsort(ids->v, ids->n, sizeof *ids->v, id_cmp);
    if ((int64_t)ids->n < finished)
        snprintf(out->what, sizeof out->what,
                 "the %zu most recent of %lld finished runs (no sweep; --runs chooses others)",
                 ids->n, (long long)finished);
    else
        snprintf(out->what, sizeof out->what, "%zu finished run%s (no sweep)", ids->n,
                 ids->n == 1 ? "" : "s");
    return DT_OK;
}

dt_status results_query_select(results_query_t *q, const char *runs_spec, const char *sweep,
                               results_runs_t *out, dt_err_t *err)
{
    DT_ASSERT(q && out && !(runs_spec && sweep));
    memset(out, 0, sizeof *out);
    id_list_t ids = {0};
    dt_status st = runs_spec ? select_spec(q, runs_spec, &ids, out, err)
                   : sweep   ? select_sweep(q, sweep, &ids, out, err)
                             : select_default(q, &ids, out, err);
    if (st == DT_OK) {
        out->v = dt_calloc(ids.n ? ids.n : 1, sizeof *out->v);
        for (size_t i = 0; i < ids.n && st == DT_OK; i++) {
            st = results_query_run(q, ids.v[i], &out->v[i], err);
            out->n += st == DT_OK;
        }
    }
    free(ids.v);
    if (st != DT_OK)
        results_runs_free(out);
    return st;
}

void results_runs_free(results_runs_t *runs)
{
    if (!runs)
        return;
    for (size_t i = 0; i < runs->n; i++)
        results_run_view_free(&runs->v[i]);
    free(runs->v);
    runs->v = NULL;
    runs->n = 0;
}

dt_status results_query_sweep(results_query_t *q, const char *sweep, results_runs_t *out,
                              dt_err_t *err)
{
    DT_ASSERT(q && sweep && out);
    memset(out, 0, sizeof *out);
    char *id;
    dt_status st = sweep_by_name(q, sweep, &id, err);
    if (st != DT_OK)
        return st;
    sqlite3_stmt *s = q->st[Q_SWEEP_ALL];
    DT_ASSERT(sqlite3_bind_text(s, 1, id ? id : sweep, -1, SQLITE_TRANSIENT) == SQLITE_OK);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        out->v = results_q_grow(out->v, &cap, out->n + 1, sizeof *out->v);
        memset(&out->v[out->n], 0, sizeof *out->v);
        run_view_read(s, &out->v[out->n++]);
    }
    if (rc != SQLITE_DONE) {
        st = results_q_error(q, rc, err, "reading the sweep's runs");
        results_runs_free(out);
    } else {
        snprintf(out->what, sizeof out->what, "%zu run%s of sweep %s", out->n,
                 out->n == 1 ? "" : "s", id ? id : sweep);
    }
    q_reset(s);
    free(id);
    return st;
}

/* --- evaluations ------------------------------------------------------------------------ */

dt_status results_query_evals(results_query_t *q, int64_t run, results_evals_t *out, dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    sqlite3_stmt *s = q->st[Q_EVALS];
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            out->sim_time = xrealloc(out->sim_time, cap * sizeof(double));
            out->samples = xrealloc(out->samples, cap * sizeof(double));
            out->bytes = xrealloc(out->bytes, cap * sizeof(double));
            out->test_loss = xrealloc(out->test_loss, cap * sizeof(double));
            out->test_acc = xrealloc(out->test_acc, cap * sizeof(double));
            out->perplexity = xrealloc(out->perplexity, cap * sizeof(double));
            out->step = xrealloc(out->step, cap * sizeof(long));
        }
        size_t i = out->n++;
        out->sim_time[i] = results_q_col_real(s, 0);
        out->step[i] = (long)sqlite3_column_int64(s, 1);
        out->samples[i] = results_q_col_real(s, 2);
        out->bytes[i] = results_q_col_real(s, 3);
        out->test_loss[i] = results_q_col_real(s, 4);
        out->test_acc[i] = results_q_col_real(s, 5);
        out->perplexity[i] = results_q_col_real(s, 6);
        out->text += !isnan(out->perplexity[i]);
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the evaluations of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
        results_evals_free(out);
    }
    q_reset(s);
    return st;
}

dt_status results_query_faults(results_query_t *q, int64_t run, results_faults_t *out,
                               dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    sqlite3_stmt *s = q->st[Q_FAULTS];
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        out->rows++;
        const char *kind = (const char *)sqlite3_column_text(s, 1);
        int down = kind && (!strcmp(kind, "host-crash") || !strcmp(kind, "link-down") ||
                            !strcmp(kind, "link-degrade"));
        int up = kind && (!strcmp(kind, "host-recover") || !strcmp(kind, "link-up") ||
                          !strcmp(kind, "link-restore"));
        if (!down && !up)
            continue;
        if (out->n == cap) {
            cap = cap ? 2 * cap : 16;
            out->sim_time = xrealloc(out->sim_time, cap * sizeof(double));
            out->down = xrealloc(out->down, cap * sizeof(int));
        }
        size_t i = out->n++;
        out->sim_time[i] = results_q_col_real(s, 0);
        out->down[i] = down;
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the faults of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
        results_faults_free(out);
    }
    q_reset(s);
    return st;
}

dt_status results_query_memory(results_query_t *q, int64_t run, results_memory_t *mem, int *found,
                               dt_err_t *err)
{
    DT_ASSERT(q && mem && found);
    *found = 0;
    *mem = (results_memory_t){NAN, NAN, NAN, NAN};
    /* prepared here, not at open: a version-1 file (read as it is) has no memory table */
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(
        q->h,
        "SELECT params, grads, optimizer, activations FROM memory WHERE run = ?1"
        " ORDER BY coalesce(params, 0) + coalesce(grads, 0) + coalesce(optimizer, 0)"
        " + coalesce(activations, 0) DESC, role, worker LIMIT 1",
        -1, &s, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(s);
        return DT_OK; /* no memory table: nothing recorded */
    }
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *found = 1;
        *mem = (results_memory_t){.params = results_q_col_real(s, 0),
                                  .grads = results_q_col_real(s, 1),
                                  .optimizer = results_q_col_real(s, 2),
                                  .activations = results_q_col_real(s, 3)};
        rc = SQLITE_DONE;
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the memory of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
    }
    sqlite3_finalize(s);
    return st;
}

/* --- clients ------------------------------------------------------------------------------ */

dt_status results_query_clients(results_query_t *q, int64_t run, results_clients_t *out,
                                dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    out->mean_rounds = out->mean_acc = out->p10_acc = out->p90_acc = out->spread = NAN;
    /* prepared here, not at open: a file older than version 3 (read as it is) has neither
     * the clients table nor the view. The statistics come from the view, not a second
     * formula here: the p10 a figure shows is the one `sqlite3 ... client_fairness` shows. */
    sqlite3_stmt *fair = NULL, *rows = NULL;
    if (sqlite3_prepare_v2(q->h,
                           "SELECT clients, byzantine, never_aggregated, mean_rounds, max_rounds,"
                           " mean_acc, p10_acc, p90_acc, spread FROM client_fairness"
                           " WHERE run = ?1",
                           -1, &fair, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(q->h,
                           "SELECT test_acc, rounds FROM clients WHERE run = ?1 AND byzantine = 0"
                           " AND test_acc IS NOT NULL ORDER BY test_acc, client",
                           -1, &rows, NULL) != SQLITE_OK) {
        sqlite3_finalize(fair);
        sqlite3_finalize(rows);
        return DT_OK; /* no clients table: nothing recorded */
    }
    DT_ASSERT(sqlite3_bind_int64(fair, 1, run) == SQLITE_OK);
    DT_ASSERT(sqlite3_bind_int64(rows, 1, run) == SQLITE_OK);
    int rc = sqlite3_step(fair);
    if (rc == SQLITE_ROW) {
        out->clients = (size_t)sqlite3_column_int64(fair, 0);
        out->byzantine = (size_t)sqlite3_column_int64(fair, 1);
        out->never_aggregated = (size_t)sqlite3_column_int64(fair, 2);
        out->mean_rounds = results_q_col_real(fair, 3);
        out->max_rounds = (long)sqlite3_column_int64(fair, 4);
        out->mean_acc = results_q_col_real(fair, 5);
        out->p10_acc = results_q_col_real(fair, 6);
        out->p90_acc = results_q_col_real(fair, 7);
        out->spread = results_q_col_real(fair, 8);
        rc = SQLITE_DONE;
    }
    size_t cap = 0;
    if (rc == SQLITE_DONE) {
        while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
            if (out->n == cap) {
                cap = cap ? 2 * cap : 64;
                out->acc = xrealloc(out->acc, cap * sizeof(double));
                out->rounds = xrealloc(out->rounds, cap * sizeof(long));
            }
            out->acc[out->n] = sqlite3_column_double(rows, 0);
            out->rounds[out->n++] = (long)sqlite3_column_int64(rows, 1);
        }
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the clients of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
        results_clients_free(out);
    }
    sqlite3_finalize(fair);
    sqlite3_finalize(rows);
    return st;
}

void results_clients_free(results_clients_t *c)
{
    if (!c)
        return;
    free(c->acc);
    free(c->rounds);
    memset(c, 0, sizeof *c);
}

void results_faults_free(results_faults_t *f)
{
    if (!f)
        return;
    free(f->sim_time);
    free(f->down);
    memset(f, 0, sizeof *f);
}

void results_evals_free(results_evals_t *e)
{
    if (!e)
        return;
    free(e->sim_time);
    free(e->samples);
    free(e->bytes);
    free(e->test_loss);
    free(e->test_acc);
    free(e->perplexity);
    free(e->step);
    memset(e, 0, sizeof *e);
}

/* --- timeline --------------------------------------------------------------------------- */

const char *results_state_name(results_state_t s)
{
    static const char *const names[RESULTS_STATE_COUNT] = {"compute", "comm", "idle"};
    DT_ASSERT(s < RESULTS_STATE_COUNT);
    return names[s];
}

static int str_eq(const char *a, const unsigned char *b)
{
    return strcmp(a, b ? (const char *)b : "") == 0;
}

dt_status results_query_timeline(results_query_t *q, int64_t run, results_timeline_t *out,
                                 dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    sqlite3_stmt *s = q->st[Q_TIMELINE];
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    size_t cap = 0, lane_cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *host = sqlite3_column_text(s, 0);
        const unsigned char *role = sqlite3_column_text(s, 1);
        int rank = sqlite3_column_int(s, 2);
        results_lane_t *last = out->n_lanes ? &out->lanes[out->n_lanes - 1] : NULL;
        if (!last || last->rank != rank || !str_eq(last->role, role) || !str_eq(last->host, host)) {
            out->lanes =
                results_q_grow(out->lanes, &lane_cap, out->n_lanes + 1, sizeof *out->lanes);
            out->lanes[out->n_lanes++] =
                (results_lane_t){results_q_text_dup(host), results_q_text_dup(role), rank};
        }
        const unsigned char *state = sqlite3_column_text(s, 3);
        results_state_t k = RESULTS_STATE_COUNT;
        for (int j = 0; j < RESULTS_STATE_COUNT; j++)
            if (str_eq(results_state_name((results_state_t)j), state))
                k = (results_state_t)j;
        DT_ASSERT(k != RESULTS_STATE_COUNT); /* the schema's CHECK allows only these */
        out->iv = results_q_grow(out->iv, &cap, out->n + 1, sizeof *out->iv);
        out->iv[out->n++] = (results_interval_t){out->n_lanes - 1, k, sqlite3_column_double(s, 4),
                                                 sqlite3_column_double(s, 5)};
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the timeline of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
        results_timeline_free(out);
    }
    q_reset(s);
    return st;
}

void results_timeline_free(results_timeline_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_lanes; i++) {
        free(t->lanes[i].host);
        free(t->lanes[i].role);
    }
    free(t->lanes);
    free(t->iv);
    memset(t, 0, sizeof *t);
}

const char *results_query_path(const results_query_t *q)
{
    return q->path;
}

/* --- energy ------------------------------------------------------------------------------- */

dt_status results_query_energy(results_query_t *q, int64_t run, results_energy_view_t *out,
                               dt_err_t *err)
{
    DT_ASSERT(q && out);
    double *col[] = {&out->host_joules, &out->link_joules,        &out->joules_per_sample,
                     &out->dollars,     &out->dollars_per_sample, &out->dollars_to_target};
    for (size_t k = 0; k < sizeof col / sizeof col[0]; k++)
        *col[k] = NAN;
    /* prepared here, not at open: a file before version 6 (read as it is) has no such table */
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(q->h,
                           "SELECT host_joules, link_joules, joules_per_sample, dollars,"
                           " dollars_per_sample, dollars_to_target FROM energy WHERE run = ?1",
                           -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return DT_OK;
    }
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        for (int k = 0; k < (int)(sizeof col / sizeof col[0]); k++)
            if (sqlite3_column_type(s, k) != SQLITE_NULL)
                *col[k] = sqlite3_column_double(s, k);
        rc = SQLITE_DONE;
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the energy of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
    }
    sqlite3_finalize(s);
    return st;
}

/* --- breakdown ---------------------------------------------------------------------------- */

dt_status results_query_breakdown(results_query_t *q, int64_t run,
                                  double seconds[RESULTS_PART_COUNT], int *found, dt_err_t *err)
{
    DT_ASSERT(q && seconds && found);
    *found = 0;
    for (int k = 0; k < RESULTS_PART_COUNT; k++)
        seconds[k] = NAN;
    /* prepared here, not at open: a file before version 9 (read as it is) has no such table */
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(q->h, "SELECT part, seconds FROM breakdown WHERE run = ?1", -1, &s,
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return DT_OK;
    }
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    int rc, n = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *part = (const char *)sqlite3_column_text(s, 0);
        for (int k = 0; part && k < RESULTS_PART_COUNT; k++)
            if (!strcmp(part, results_part_names[k])) {
                seconds[k] = sqlite3_column_double(s, 1);
                n++;
            }
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the breakdown of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
    }
    sqlite3_finalize(s);
    /* a part this build does not know is left out; one it knows that is missing is 0 */
    if (st == DT_OK && n > 0) {
        *found = 1;
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            if (isnan(seconds[k]))
                seconds[k] = 0;
    }
    return st;
}

/* --- params ------------------------------------------------------------------------------- */

dt_status results_query_param(results_query_t *q, int64_t run, const char *key, char *buf, size_t n,
                              int *found, dt_err_t *err)
{
    DT_ASSERT(q && key && buf && n > 0 && found);
    *found = 0;
    buf[0] = '\0';
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(q->h, "SELECT value FROM params WHERE run = ?1 AND key = ?2", -1,
                                &s, NULL);
    if (rc == SQLITE_OK) {
        DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
        DT_ASSERT(sqlite3_bind_text(s, 2, key, -1, SQLITE_TRANSIENT) == SQLITE_OK);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(s, 0);
            snprintf(buf, n, "%s", t ? (const char *)t : "");
            *found = 1;
            rc = SQLITE_DONE;
        }
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[160];
        snprintf(what, sizeof what, "reading %.100s of run %lld", key, (long long)run);
        st = results_q_error(q, rc, err, what);
    }
    sqlite3_finalize(s);
    return st;
}

/* --- messages ----------------------------------------------------------------------------- */

dt_status results_query_messages(results_query_t *q, int64_t run, results_messages_t *out,
                                 dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    /* prepared here, not at open: a file before version 5 (read as it is) has no such table */
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(q->h,
                           "SELECT src_host, src_role, src_rank, dst_host, dst_role, dst_rank,"
                           " sent, start, done, bytes FROM messages WHERE run = ?1"
                           " ORDER BY sent, rowid",
                           -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return DT_OK;
    }
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        out->m = results_q_grow(out->m, &cap, out->n + 1, sizeof *out->m);
        out->m[out->n++] =
            (results_message_t){.src_host = results_q_text_dup(sqlite3_column_text(s, 0)),
                                .src_role = results_q_text_dup(sqlite3_column_text(s, 1)),
                                .src_rank = sqlite3_column_int(s, 2),
                                .dst_host = results_q_text_dup(sqlite3_column_text(s, 3)),
                                .dst_role = results_q_text_dup(sqlite3_column_text(s, 4)),
                                .dst_rank = sqlite3_column_int(s, 5),
                                .sent = sqlite3_column_double(s, 6),
                                .start = sqlite3_column_double(s, 7),
                                .done = sqlite3_column_double(s, 8),
                                .bytes = sqlite3_column_double(s, 9)};
    }
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof what, "reading the messages of run %lld", (long long)run);
        st = results_q_error(q, rc, err, what);
        results_messages_free(out);
    }
    sqlite3_finalize(s);
    return st;
}

void results_messages_free(results_messages_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->m[i].src_host);
        free(m->m[i].src_role);
        free(m->m[i].dst_host);
        free(m->m[i].dst_role);
    }
    free(m->m);
    memset(m, 0, sizeof *m);
}
