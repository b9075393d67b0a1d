/* The read side's pages for people (see query.h): the run list of `dtsim runs` in 100
 * columns and one run whole for `dtsim show`, through the handle query.c opens. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db.h"
#include "query.h"
#include "query_impl.h"

/* --- what `dtsim runs` and `dtsim show` print ------------------------------------------- */

dt_status results_query_open_current(results_query_t **q, const char *path, dt_err_t *err)
{
    DT_ASSERT(q && path);
    *q = NULL;
    /* a read command never makes a database: a mistyped path is an error */
    struct stat sb;
    if (stat(path, &sb) != 0)
        return dt_err_input(err, "%s: %s (dtsim run writes a results database)", path,
                            strerror(errno));
    /* read-only first: an empty file, another program's database or a damaged one is
     * refused before a writer's open could give it a schema or touch it */
    dt_status st = results_query_open(q, path, err);
    if (st != DT_OK)
        return st;
    results_db_t *w;
    if (results_db_open(&w, path, err)) {
        results_query_close(*q);
        *q = NULL;
        return DT_ERR_INPUT;
    }
    results_db_close(w);
    return DT_OK;
}

void results_duration_text(double s, char *buf, size_t size)
{
    static const struct {
        double below, unit;
        const char *name;
    } units[] = {{1e-3, 1e-6, "us"}, {60, 1, "s"}, {3600, 60, "min"}, {3 * 86400, 3600, "h"}};
    if (isnan(s)) {
        snprintf(buf, size, "-");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (s < units[i].below) {
            /* trailing zeros kept ("19.0s" under "19.4s"), which %.3g drops */
            double v = s / units[i].unit;
            int decimals = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : -1;
            if (decimals < 0)
                snprintf(buf, size, "%.3g%s", v, units[i].name);
            else
                snprintf(buf, size, "%.*f%s", decimals, v, units[i].name);
            return;
        }
    snprintf(buf, size, s < 1000 * 86400 ? "%.3gd" : "%.0fd", s / 86400);
}

/* Text from the database as a table or page shows it: NULL as "", control bytes as \xNN (a
 * name with a newline or an escape sequence must not break a line or drive the terminal). */
static char *text_shown(const unsigned char *t)
{
    const unsigned char *s = t ? t : (const unsigned char *)"";
    size_t n = 0;
    for (const unsigned char *c = s; *c; c++)
        n += *c < 0x20 || *c == 0x7f ? 4 : 1;
    char *d = dt_malloc(n + 1), *o = d;
    for (const unsigned char *c = s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            o += sprintf(o, "\\x%02x", *c);
        else
            *o++ = (char)*c;
    }
    *o = '\0';
    return d;
}

void results_put_text(const char *s, FILE *out)
{
    char *t = text_shown((const unsigned char *)s);
    fputs(t, out);
    free(t);
}

/* Columns a UTF-8 text takes: its code points (a wide character counts one; names are
 * mostly ASCII). */
static size_t text_cols(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* Byte offset of code point k of s (its end when s is shorter). */
static size_t text_at(const char *s, size_t k)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && k-- == 0)
            break;
    return i;
}

#define ELISION "..."

/* Writes s in exactly cols columns: padded with blanks (left: right-aligned), or, when
 * longer, its first and last code points around ELISION: the ends of a sweep's run names
 * ("demo/kind=...", "...bandwidth=10Gbps") are the parts that tell them apart. */
static void put_cell(FILE *out, const char *s, size_t cols, int right)
{
    size_t n = text_cols(s);
    if (n <= cols) {
        fprintf(out, "%*s%s%*s", right ? (int)(cols - n) : 0, "", s, right ? 0 : (int)(cols - n),
                "");
        return;
    }
    if (cols <= strlen(ELISION)) {
        fprintf(out, "%.*s", (int)text_at(s, cols), s);
        return;
    }
    size_t keep = cols - strlen(ELISION), head = (keep + 1) / 2, tail = keep - head;
    fprintf(out, "%.*s" ELISION "%s", (int)text_at(s, head), s, s + text_at(s, n - tail));
}

typedef struct runs_row {
    int64_t id;
    char *name, *strategy, *status, *sweep, *started; /* shown text; sweep NULL: none */
    long sweep_index, steps;
    int has_summary;
    double acc, loss, sim_time, time_to_target, bytes, wall;
} runs_row_t;

static const char *const runs_sql =
    "SELECT r.id, r.name, r.strategy, r.status, r.sweep, r.sweep_index, r.started,"
    " s.run IS NOT NULL, s.final_accuracy, s.final_loss, s.sim_time, s.time_to_target,"
    " s.total_bytes, s.steps, (julianday(r.ended) - julianday(r.started)) * 86400"
    " FROM runs r LEFT JOIN summary s ON s.run = r.id ORDER BY r.id";

static void runs_row_read(sqlite3_stmt *s, runs_row_t *r)
{
    r->id = sqlite3_column_int64(s, 0);
    r->name = text_shown(sqlite3_column_text(s, 1));
    r->strategy = text_shown(sqlite3_column_text(s, 2));
    r->status = text_shown(sqlite3_column_text(s, 3));
    r->sweep =
        sqlite3_column_type(s, 4) == SQLITE_NULL ? NULL : text_shown(sqlite3_column_text(s, 4));
    r->sweep_index = (long)sqlite3_column_int64(s, 5);
    r->started = text_shown(sqlite3_column_text(s, 6));
    r->has_summary = sqlite3_column_int(s, 7);
    r->acc = results_q_col_real(s, 8);
    r->loss = results_q_col_real(s, 9);
    r->sim_time = results_q_col_real(s, 10);
    r->time_to_target = results_q_col_real(s, 11);
    r->bytes = results_q_col_real(s, 12);
    r->steps = sqlite3_column_type(s, 13) == SQLITE_NULL ? -1 : (long)sqlite3_column_int64(s, 13);
    r->wall = results_q_col_real(s, 14);
}

static void runs_rows_free(runs_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].name);
        free(rows[i].strategy);
        free(rows[i].status);
        free(rows[i].sweep);
        free(rows[i].started);
    }
    free(rows);
}

static void fixed_text(double v, const char *fmt, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, fmt, v);
}

/* The columns of the list, in order; the name's width is what the others leave. */
enum {
    RC_ID,
    RC_NAME,
    RC_STRATEGY,
    RC_STATUS,
    RC_ACC,
    RC_SIM,
    RC_WALL,
    RC_NARROW,
    RC_LOSS = RC_NARROW,
    RC_TARGET,
    RC_BYTES,
    RC_STEPS,
    RC_STARTED,
    RC_SWEEP,
    RC_COUNT
};
static const struct {
    const char *head;
    int right;
} runs_cols[RC_COUNT] = {
    [RC_ID] = {"id", 1},         [RC_NAME] = {"name", 0},    [RC_STRATEGY] = {"strategy", 0},
    [RC_STATUS] = {"status", 0}, [RC_ACC] = {"accuracy", 1}, [RC_SIM] = {"sim time", 1},
    [RC_WALL] = {"wall", 1},     [RC_LOSS] = {"loss", 1},    [RC_TARGET] = {"to target", 1},
    [RC_BYTES] = {"bytes", 1},   [RC_STEPS] = {"steps", 1},  [RC_STARTED] = {"started", 0},
    [RC_SWEEP] = {"sweep", 0},
};

/* The text of column c of row r, in buf or a string of r. */
static const char *runs_cell(const runs_row_t *r, int c, char *buf, size_t size)
{
    switch (c) {
    case RC_ID:
        snprintf(buf, size, "%lld", (long long)r->id);
        return buf;
    case RC_NAME:
        return r->name;
    case RC_STRATEGY:
        return r->strategy;
    case RC_STATUS:
        return r->status;
    case RC_ACC:
        fixed_text(r->acc, "%.4f", buf, size);
        return buf;
    case RC_SIM:
        results_duration_text(r->sim_time, buf, size);
        return buf;
    case RC_WALL:
        results_duration_text(r->wall, buf, size);
        return buf;
    case RC_LOSS:
        fixed_text(r->loss, "%.4f", buf, size);
        return buf;
    case RC_TARGET:
        if (r->has_summary && isnan(r->time_to_target))
            snprintf(buf, size, "never");
        else
            results_duration_text(r->time_to_target, buf, size);
        return buf;
    case RC_BYTES:
        fixed_text(r->bytes, "%.3g", buf, size);
        return buf;
    case RC_STEPS:
        if (r->steps < 0)
            snprintf(buf, size, "-");
        else
            snprintf(buf, size, "%ld", r->steps);
        return buf;
    case RC_STARTED:
        return r->started;
    default:
        if (!r->sweep)
            return "-";
        snprintf(buf, size, "%s:%ld", r->sweep, r->sweep_index);
        return buf;
    }
}

/* After the narrow list, each sweep's id (what `dtsim plot --sweep` takes) and its runs. */
static void runs_print_sweeps(FILE *out, const runs_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].sweep)
            continue;
        size_t first = i, count = 0;
        for (size_t j = 0; j < i && first == i; j++)
            if (rows[j].sweep && !strcmp(rows[j].sweep, rows[i].sweep))
                first = j;
        if (first != i)
            continue; /* printed with its first run */
        int64_t last = rows[i].id;
        for (size_t j = i; j < n; j++)
            if (rows[j].sweep && !strcmp(rows[j].sweep, rows[i].sweep)) {
                count++;
                last = rows[j].id;
            }
        char tail[96];
        if (count == 1)
            snprintf(tail, sizeof tail, ": run %lld", (long long)rows[i].id);
        else if (last - rows[i].id + 1 == (int64_t)count)
            snprintf(tail, sizeof tail, ": runs %lld-%lld", (long long)rows[i].id, (long long)last);
        else
            snprintf(tail, sizeof tail, ": %zu runs, ids %lld to %lld", count,
                     (long long)rows[i].id, (long long)last);
        fputs("sweep ", out);
        size_t room = RESULTS_RUNS_COLUMNS - strlen("sweep ") - strlen(tail);
        put_cell(out, rows[i].sweep,
                 text_cols(rows[i].sweep) < room ? text_cols(rows[i].sweep) : room, 0);
        fprintf(out, "%s\n", tail);
    }
}

dt_status results_runs_print(results_query_t *q, FILE *out, int wide, dt_err_t *err)
{
    DT_ASSERT(q && out);
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(results_query_sqlite(q), runs_sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return results_q_error(q, rc, err, "listing runs");
    runs_row_t *rows = NULL;
    size_t n = 0, cap = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        rows = results_q_grow(rows, &cap, n + 1, sizeof *rows);
        runs_row_read(s, &rows[n++]);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        runs_rows_free(rows, n);
        return results_q_error(q, rc, err, "listing runs");
    }

    int cols = wide ? RC_COUNT : RC_NARROW;
    size_t width[RC_COUNT];
    char buf[512];
    for (int c = 0; c < cols; c++) {
        width[c] = strlen(runs_cols[c].head);
        for (size_t i = 0; i < n; i++) {
            size_t w = text_cols(runs_cell(&rows[i], c, buf, sizeof buf));
            width[c] = w > width[c] ? w : width[c];
        }
    }
    if (!wide) {
        /* the strategy and name take what the other columns leave of the line */
        if (width[RC_STRATEGY] > 10)
            width[RC_STRATEGY] = 10;
        size_t used = 2 * (RC_NARROW - 1);
        for (int c = 0; c < RC_NARROW; c++)
            used += c == RC_NAME ? 0 : width[c];
        size_t room = used < RESULTS_RUNS_COLUMNS - 4 ? RESULTS_RUNS_COLUMNS - used : 4;
        width[RC_NAME] = width[RC_NAME] < room ? width[RC_NAME] : room;
    }
    for (int c = 0; c < cols; c++) {
        fputs(c ? "  " : "", out);
        const char *h = runs_cols[c].head;
        put_cell(out, h, c == cols - 1 && !runs_cols[c].right ? strlen(h) : width[c],
                 runs_cols[c].right);
    }
    fputc('\n', out);
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < cols; c++) {
            fputs(c ? "  " : "", out);
            const char *t = runs_cell(&rows[i], c, buf, sizeof buf);
            /* the last column unpadded: no trailing blanks */
            put_cell(out, t, c == cols - 1 && !runs_cols[c].right ? text_cols(t) : width[c],
                     runs_cols[c].right);
        }
        fputc('\n', out);
    }
    if (!wide)
        runs_print_sweeps(out, rows, n);
    runs_rows_free(rows, n);
    return DT_OK;
}

/* --- one run whole (`dtsim show`) -------------------------------------------------------- */

/* A statement over one run, prepared here, not at open: a file older than the table (read as
 * it is) has none, which reads as no rows (NULL). */
static sqlite3_stmt *run_stmt(results_query_t *q, const char *sql, int64_t run)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(results_query_sqlite(q), sql, -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return NULL;
    }
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    return s;
}

static char *text_or_null(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NULL : text_shown(sqlite3_column_text(s, i));
}

/* The runs row and its summary's loss; SQLITE_DONE when there is no such run. */
static int detail_run(results_query_t *q, int64_t run, results_run_detail_t *d)
{
    sqlite3_stmt *s = run_stmt(
        q,
        "SELECT r.config, r.seed, r.dtsim_version, r.simgrid_version, r.pid, r.host, r.started,"
        " r.ended, (julianday(r.ended) - julianday(r.started)) * 86400, s.final_loss"
        " FROM runs r LEFT JOIN summary s ON s.run = r.id WHERE r.id = ?1",
        run);
    DT_ASSERT(s); /* runs and summary are in every version */
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        /* the configuration as stored: it is a file to replay, not a line to show */
        const unsigned char *c = sqlite3_column_text(s, 0);
        d->config = c ? results_q_text_dup(c) : NULL;
        d->seed = sqlite3_column_int64(s, 1);
        d->dtsim_version = text_or_null(s, 2);
        d->simgrid_version = text_or_null(s, 3);
        d->pid = (long)sqlite3_column_int64(s, 4);
        d->host = text_or_null(s, 5);
        d->started = text_or_null(s, 6);
        d->ended = text_or_null(s, 7);
        d->wall_s = results_q_col_real(s, 8);
        d->final_loss = results_q_col_real(s, 9);
    }
    sqlite3_finalize(s);
    return rc;
}

static int detail_params(results_query_t *q, int64_t run, results_run_detail_t *d)
{
    sqlite3_stmt *s = run_stmt(q, "SELECT key, value FROM params WHERE run = ?1 ORDER BY key", run);
    DT_ASSERT(s);
    size_t cap = 0, cap2 = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        d->param_key = results_q_grow(d->param_key, &cap, d->n_params + 1, sizeof *d->param_key);
        d->param_value =
            results_q_grow(d->param_value, &cap2, d->n_params + 1, sizeof *d->param_value);
        d->param_key[d->n_params] = text_shown(sqlite3_column_text(s, 0));
        d->param_value[d->n_params++] = text_shown(sqlite3_column_text(s, 1));
    }
    sqlite3_finalize(s);
    return rc;
}

static int detail_faults(results_query_t *q, int64_t run, results_run_detail_t *d)
{
    sqlite3_stmt *s = run_stmt(q,
                               "SELECT kind, count(*) FROM faults WHERE run = ?1 GROUP BY kind"
                               " ORDER BY min(sim_time), kind",
                               run);
    DT_ASSERT(s);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        d->fault_kinds =
            results_q_grow(d->fault_kinds, &cap, d->n_fault_kinds + 1, sizeof *d->fault_kinds);
        d->fault_kinds[d->n_fault_kinds++] = (results_kind_count_t){
            text_shown(sqlite3_column_text(s, 0)), (long)sqlite3_column_int64(s, 1)};
    }
    sqlite3_finalize(s);
    return rc;
}

/* Each role's hosts and their totals, a row counted for the hosts it stands for (its weight;
 * a host each before schema version 8). */
#define ROLES_SQL(W)                                                                               \
    "SELECT role, sum(" W "), sum(" W " * steps), sum(" W " * compute_s),"                         \
    " sum(" W " * comm_s), sum(" W " * idle_s), sum(" W " * bytes_sent) FROM workers"              \
    " WHERE run = ?1 GROUP BY role"                                                                \
    " ORDER BY CASE role WHEN 'server' THEN 0 WHEN 'worker' THEN 1 ELSE 2 END, role"

static int detail_roles(results_query_t *q, int64_t run, results_run_detail_t *d)
{
    sqlite3_stmt *s =
        run_stmt(q, results_q_version(q) >= 8 ? ROLES_SQL("weight") : ROLES_SQL("1"), run);
    DT_ASSERT(s);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        d->roles = results_q_grow(d->roles, &cap, d->n_roles + 1, sizeof *d->roles);
        d->roles[d->n_roles++] =
            (results_role_total_t){.role = text_shown(sqlite3_column_text(s, 0)),
                                   .hosts = (long)sqlite3_column_int64(s, 1),
                                   .steps = (long)sqlite3_column_int64(s, 2),
                                   .compute_s = results_q_col_real(s, 3),
                                   .comm_s = results_q_col_real(s, 4),
                                   .idle_s = results_q_col_real(s, 5),
                                   .bytes_sent = results_q_col_real(s, 6)};
    }
    sqlite3_finalize(s);
    return rc;
}

/* One aggregate row of an optional table into d; SQLITE_DONE when read or when the file
 * predates the table. */
static int detail_row(results_query_t *q, int64_t run, const char *sql,
                      void (*read)(sqlite3_stmt *, results_run_detail_t *), results_run_detail_t *d)
{
    sqlite3_stmt *s = run_stmt(q, sql, run);
    if (!s)
        return SQLITE_DONE;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        read(s, d);
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(s);
    return rc;
}

static void read_links(sqlite3_stmt *s, results_run_detail_t *d)
{
    d->links = (long)sqlite3_column_int64(s, 0);
    d->busiest_link = text_or_null(s, 1); /* SQLite: the link of the row max() took */
    d->busiest_bytes = results_q_col_real(s, 2);
}

static void read_privacy(sqlite3_stmt *s, results_run_detail_t *d)
{
    d->privacy_round = (long)sqlite3_column_int64(s, 0);
    d->epsilon = results_q_col_real(s, 1);
    d->delta = results_q_col_real(s, 2);
}

static void read_staleness(sqlite3_stmt *s, results_run_detail_t *d)
{
    d->stale_gradients = (long)sqlite3_column_int64(s, 0);
    d->mean_staleness = results_q_col_real(s, 1);
    d->max_staleness = (long)sqlite3_column_int64(s, 2);
}

static int detail_rest(results_query_t *q, int64_t run, results_run_detail_t *d)
{
    /* a row stands for weight links (schema version 8) */
    int rc = detail_row(q, run,
                        results_q_version(q) >= 8
                            ? "SELECT sum(weight), link, max(bytes) FROM links WHERE run = ?1"
                            : "SELECT count(*), link, max(bytes) FROM links WHERE run = ?1",
                        read_links, d);
    if (rc == SQLITE_DONE)
        rc = detail_row(q, run,
                        "SELECT round, epsilon, delta FROM privacy WHERE run = ?1"
                        " ORDER BY round DESC LIMIT 1",
                        read_privacy, d);
    if (rc == SQLITE_DONE)
        rc = detail_row(q, run,
                        "SELECT sum(count), sum(staleness * count) * 1.0 / sum(count),"
                        " max(staleness) FROM staleness WHERE run = ?1",
                        read_staleness, d);
    return rc;
}

dt_status results_query_detail(results_query_t *q, int64_t run, results_run_detail_t *out,
                               dt_err_t *err)
{
    DT_ASSERT(q && out);
    memset(out, 0, sizeof *out);
    out->wall_s = out->final_loss = out->busiest_bytes = out->epsilon = out->delta = NAN;
    out->mean_staleness = NAN;
    int rc = detail_run(q, run, out);
    if (rc == SQLITE_DONE)
        return dt_err_input(err, "%s: no run %lld", results_query_path(q), (long long)run);
    if (rc == SQLITE_ROW)
        rc = detail_params(q, run, out);
    if (rc == SQLITE_DONE)
        rc = detail_faults(q, run, out);
    if (rc == SQLITE_DONE)
        rc = detail_roles(q, run, out);
    if (rc == SQLITE_DONE)
        rc = detail_rest(q, run, out);
    if (rc == SQLITE_DONE)
        return DT_OK;
    char what[64];
    snprintf(what, sizeof what, "reading run %lld", (long long)run);
    dt_status st = results_q_error(q, rc, err, what);
    results_run_detail_free(out);
    return st;
}

void results_run_detail_free(results_run_detail_t *d)
{
    if (!d)
        return;
    free(d->config);
    free(d->dtsim_version);
    free(d->simgrid_version);
    free(d->host);
    free(d->started);
    free(d->ended);
    for (size_t i = 0; i < d->n_params; i++) {
        free(d->param_key[i]);
        free(d->param_value[i]);
    }
    free(d->param_key);
    free(d->param_value);
    for (size_t i = 0; i < d->n_fault_kinds; i++)
        free(d->fault_kinds[i].kind);
    free(d->fault_kinds);
    for (size_t i = 0; i < d->n_roles; i++)
        free(d->roles[i].role);
    free(d->roles);
    free(d->busiest_link);
    memset(d, 0, sizeof *d);
}
