/* The results store, read back with plain SQLite queries that share no code with the writer:
 * every value of every table round-trips (NaN as NULL), hostile strings are stored verbatim
 * and harm nothing, run statuses move only from 'running', a newer or foreign file is
 * refused, a writer killed mid-transaction leaves its committed batches intact and its run
 * 'interrupted', concurrent writers lose nothing, and a missing directory is a clear error. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "export.h"
#include "query.h"

static char dir[64];
static char path[128];

static void setup(void)
{
    strcpy(dir, "/tmp/dtsim_results_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/results.db", dir);
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* --- a second, independent reader ------------------------------------------------------ */

static sqlite3 *raw_open(void)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 10000);
    return h;
}

static void raw_exec(sqlite3 *h, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
}

/* Prepares sql, binds ?1 = a (if the statement has a parameter) and steps to its one row. */
static sqlite3_stmt *raw_row(sqlite3 *h, const char *sql, int64_t a)
{
    sqlite3_stmt *s = NULL;
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    if (sqlite3_bind_parameter_count(s) > 0)
        sqlite3_bind_int64(s, 1, a);
    ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "no row for %s (?1 = %lld)", sql, (long long)a);
    return s;
}

static int64_t raw_int(sqlite3 *h, const char *sql, int64_t a)
{
    sqlite3_stmt *s = raw_row(h, sql, a);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The text of the one value, copied into buf (NULL -> "(NULL)"). */
static const char *raw_text(sqlite3 *h, const char *sql, int64_t a, char *buf, size_t n)
{
    sqlite3_stmt *s = raw_row(h, sql, a);
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(buf, n, "%s", t ? (const char *)t : "(NULL)");
    sqlite3_finalize(s);
    return buf;
}

/* Column i is exactly the double want, or NULL when want is NaN. */
static void ck_real(sqlite3_stmt *s, int i, double want)
{
    if (isnan(want)) {
        ck_assert_msg(sqlite3_column_type(s, i) == SQLITE_NULL, "column %d: expected NULL", i);
    } else {
        ck_assert_msg(sqlite3_column_type(s, i) == SQLITE_FLOAT, "column %d: type %d", i,
                      sqlite3_column_type(s, i));
        ck_assert_msg(sqlite3_column_double(s, i) == want, "column %d: %.17g != %.17g", i,
                      sqlite3_column_double(s, i), want);
    }
}

static void ck_int(sqlite3_stmt *s, int i, int64_t want)
{
    ck_assert_msg(sqlite3_column_type(s, i) == SQLITE_INTEGER, "column %d: type %d", i,
                  sqlite3_column_type(s, i));
    ck_assert_msg(sqlite3_column_int64(s, i) == want, "column %d: %lld != %lld", i,
                  (long long)sqlite3_column_int64(s, i), (long long)want);
}

static void ck_text(sqlite3_stmt *s, int i, const char *want)
{
    const char *t = (const char *)sqlite3_column_text(s, i);
    ck_assert_msg(t != NULL, "column %d: NULL", i);
    ck_assert_int_eq(sqlite3_column_bytes(s, i), (int)strlen(want));
    ck_assert_str_eq(t, want);
}

/* "2025-01-31T12:34:56.789Z" */
static void ck_iso_time(const char *t)
{
    ck_assert_msg(strlen(t) == 24, "time '%s'", t);
    for (int i = 0; i < 24; i++) {
        char c = t[i];
        int ok;
        switch (i) {
        case 4:
        case 7:
            ok = c == '-';
            break;
        case 10:
            ok = c == 'T';
            break;
        case 13:
        case 16:
            ok = c == ':';
            break;
        case 19:
            ok = c == '.';
            break;
        case 23:
            ok = c == 'Z';
            break;
        default:
            ok = c >= '0' && c <= '9';
        }
        ck_assert_msg(ok, "time '%s', character %d", t, i);
    }
}

static results_db_t *open_ok(void)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    dt_status st = results_db_open(&db, path, &err);
    ck_assert_msg(st == DT_OK, "open: %s", err.msg);
    ck_assert_ptr_nonnull(db);
    return db;
}

static int64_t begin_ok(results_db_t *db, const char *name)
{
    results_run_info_t info = {name, "sync-ps", "[run]\nseed = 1\n", "0.1.0", "3.32", 1, NULL, 0};
    int64_t run = -1;
    dt_err_t err = {""};
    ck_assert_msg(results_run_begin(db, &info, &run, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_gt(run, 0);
    return run;
}

/* --- tests ----------------------------------------------------------------------------- */

START_TEST(round_trip_every_value)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    const uint64_t seed = 0xDEADBEEFCAFEF00DULL; /* above 2^63: the same 64 bits come back */
    results_run_info_t info = {"fedavg-noniid",
                               "fedavg",
                               "[run]\nname = x\n[model]\narch = mlp\n",
                               "0.1.0",
                               "3.32",
                               seed,
                               NULL,
                               0};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);

    struct {
        double t;
        long step;
        double samples, bytes, loss, acc;
    } ev[3] = {
        {0.0, 0, 0.0, 0.0, 2.302585092994046, 0.1},
        {12.5, 100, 3200.0, 1.5e9, NAN, NAN},
        {25.125, 200, 6400.0, 3.0000000001e9, 0.3141592653589793, 0.9375},
    };
    ck_assert_int_eq(results_tx_begin(db, &err), DT_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(results_eval_add(db, run, ev[i].t, ev[i].step, ev[i].samples, ev[i].bytes,
                                          ev[i].loss, ev[i].acc, &err),
                         DT_OK);
    ck_assert_int_eq(
        results_worker_add(db, run, 0, "node-0", "server", 1.25, 20.5, 3.25, 1e9, 2e9, 0, 1, &err),
        DT_OK);
    ck_assert_int_eq(results_worker_add(db, run, 7, "edge-7", "client", 11.0, 9.5, 4.625,
                                        123456789.0, 987654321.0, 200, 1, &err),
                     DT_OK);
    ck_assert_int_eq(results_staleness_add(db, run, 0, 5, &err), DT_OK);
    ck_assert_int_eq(results_staleness_add(db, run, 3, 2, &err), DT_OK);
    ck_assert_int_eq(results_staleness_add(db, run, 3, 4, &err), DT_OK); /* adds: 6 */
    ck_assert_int_eq(results_label_hist_add(db, run, 1, 9, 40, &err), DT_OK);
    ck_assert_int_eq(results_label_hist_add(db, run, 2, 0, 17, &err), DT_OK);
    ck_assert_int_eq(results_label_hist_add(db, run, 1, 9, 2, &err), DT_OK); /* adds: 42 */
    ck_assert_int_eq(results_tx_commit(db, &err), DT_OK);

    results_summary_t sum = {
        0.9375, 0.3141592653589793, 25.125, NAN, 0.95, 3.0000000001e9, 0.5, 0.375, 0.125, 200};
    ck_assert_msg(results_run_end(db, run, "finished", &sum, &err) == DT_OK, "%s", err.msg);
    results_db_close(db);

    sqlite3 *h = raw_open();
    char buf[256];
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_str_eq(raw_text(h, "PRAGMA journal_mode", 0, buf, sizeof buf), "wal");
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs", 0), 1);

    sqlite3_stmt *s = raw_row(h,
                              "SELECT name, strategy, status, config, seed, dtsim_version,"
                              " simgrid_version, pid, host, started, ended FROM runs WHERE id = ?1",
                              run);
    ck_text(s, 0, info.name);
    ck_text(s, 1, info.strategy);
    ck_text(s, 2, "finished");
    ck_text(s, 3, info.config);
    ck_assert_uint_eq((uint64_t)sqlite3_column_int64(s, 4), seed);
    ck_text(s, 5, "0.1.0");
    ck_text(s, 6, "3.32");
    ck_int(s, 7, getpid());
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    ck_text(s, 8, host);
    char started[64], ended[64];
    snprintf(started, sizeof started, "%s", (const char *)sqlite3_column_text(s, 9));
    snprintf(ended, sizeof ended, "%s", (const char *)sqlite3_column_text(s, 10));
    ck_iso_time(started);
    ck_iso_time(ended);
    ck_assert_int_le(strcmp(started, ended), 0);
    sqlite3_finalize(s);

    /* evaluations, in the order written */
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM evals WHERE run = ?1", run), 3);
    sqlite3_prepare_v2(h,
                       "SELECT sim_time, step, samples, bytes, test_loss, test_acc FROM evals"
                       " WHERE run = ?1 ORDER BY rowid",
                       -1, &s, NULL);
    sqlite3_bind_int64(s, 1, run);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
        ck_real(s, 0, ev[i].t);
        ck_int(s, 1, ev[i].step);
        ck_real(s, 2, ev[i].samples);
        ck_real(s, 3, ev[i].bytes);
        ck_real(s, 4, ev[i].loss);
        ck_real(s, 5, ev[i].acc);
    }
    ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);

    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM workers WHERE run = ?1", run), 2);
    s = raw_row(h,
                "SELECT worker, host, role, compute_s, comm_s, idle_s, bytes_sent, bytes_recv,"
                " steps FROM workers WHERE role = 'client'",
                0);
    ck_int(s, 0, 7);
    ck_text(s, 1, "edge-7");
    ck_text(s, 2, "client");
    ck_real(s, 3, 11.0);
    ck_real(s, 4, 9.5);
    ck_real(s, 5, 4.625);
    ck_real(s, 6, 123456789.0);
    ck_real(s, 7, 987654321.0);
    ck_int(s, 8, 200);
    sqlite3_finalize(s);
    s = raw_row(h,
                "SELECT worker, host, compute_s, comm_s, idle_s, bytes_sent, bytes_recv, steps"
                " FROM workers WHERE role = 'server'",
                0);
    ck_int(s, 0, 0);
    ck_text(s, 1, "node-0");
    ck_real(s, 2, 1.25);
    ck_real(s, 3, 20.5);
    ck_real(s, 4, 3.25);
    ck_real(s, 5, 1e9);
    ck_real(s, 6, 2e9);
    ck_int(s, 7, 0);
    sqlite3_finalize(s);

    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM staleness", 0), 2);
    ck_assert_int_eq(raw_int(h, "SELECT count FROM staleness WHERE staleness = 0", 0), 5);
    ck_assert_int_eq(raw_int(h, "SELECT count FROM staleness WHERE staleness = 3", 0), 6);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM label_hist", 0), 2);
    ck_assert_int_eq(raw_int(h, "SELECT count FROM label_hist WHERE client = 1 AND label = 9", 0),
                     42);
    ck_assert_int_eq(raw_int(h, "SELECT count FROM label_hist WHERE client = 2 AND label = 0", 0),
                     17);

    s = raw_row(h,
                "SELECT final_accuracy, final_loss, sim_time, time_to_target, target_accuracy,"
                " total_bytes, compute_share, comm_share, idle_share, steps FROM summary"
                " WHERE run = ?1",
                run);
    ck_real(s, 0, sum.final_accuracy);
    ck_real(s, 1, sum.final_loss);
    ck_real(s, 2, sum.sim_time);
    ck_real(s, 3, NAN); /* never reached: NULL */
    ck_real(s, 4, sum.target_accuracy);
    ck_real(s, 5, sum.total_bytes);
    ck_real(s, 6, sum.compute_share);
    ck_real(s, 7, sum.comm_share);
    ck_real(s, 8, sum.idle_share);
    ck_int(s, 9, 200);
    sqlite3_finalize(s);

    /* deleting a run takes its rows with it */
    raw_exec(h, "PRAGMA foreign_keys = ON; DELETE FROM runs;");
    ck_assert_int_eq(raw_int(h,
                             "SELECT (SELECT count(*) FROM evals) + (SELECT count(*) FROM"
                             " workers) + (SELECT count(*) FROM staleness) + (SELECT count(*)"
                             " FROM label_hist) + (SELECT count(*) FROM summary)",
                             0),
                     0);
    sqlite3_close(h);
}
END_TEST

START_TEST(params_timeline_links_faults_and_scaling_view)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    /* a sweep: a single-worker run and a 4-worker run of the same sweep */
    results_run_info_t a = {"s/single", "single", "[run]\n", "0.1.0", "3.32", 1, "sw-1", 0};
    results_run_info_t b = {"s/ring", "allreduce", "[run]\n", "0.1.0", "3.32", 1, "sw-1", 1};
    int64_t ra, rb;
    ck_assert_int_eq(results_run_begin(db, &a, &ra, &err), DT_OK);
    ck_assert_int_eq(results_run_begin(db, &b, &rb, &err), DT_OK);
    ck_assert_int_eq(results_param_add(db, ra, "cluster.workers", "1", 1, &err), DT_OK);
    ck_assert_int_eq(results_param_add(db, rb, "cluster.workers", "4", 4, &err), DT_OK);
    ck_assert_int_eq(results_param_add(db, rb, "cluster.bandwidth", "10Gbps", 1.25e9, &err), DT_OK);
    ck_assert_int_eq(results_param_add(db, rb, "model.arch", "mlp", NAN, &err), DT_OK);
    /* single: 1000 samples in 10 s (100/s); ring: 3000 samples in 10 s (300/s) on 4 workers:
     * efficiency 300 / (4 x 100) = 0.75 */
    ck_assert_int_eq(results_eval_add(db, ra, 10, 10, 1000, 0, 0.5, 0.8, &err), DT_OK);
    ck_assert_int_eq(results_eval_add(db, rb, 10, 10, 3000, 5e6, 0.5, 0.8, &err), DT_OK);
    results_summary_t sum = {0.8, 0.5, 10, NAN, 0.85, 0, 1, 0, 0, 10};
    ck_assert_int_eq(results_run_end(db, ra, "finished", &sum, &err), DT_OK);
    sum.total_bytes = 5e6;
    ck_assert_int_eq(results_run_end(db, rb, "finished", &sum, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(db, rb, "node-0", "worker", 0, "compute", 0, 0.5, &err),
                     DT_OK);
    ck_assert_int_eq(results_timeline_add(db, rb, "node-0", "worker", 0, "nap", 0.5, 1, &err),
                     DT_ERR_INPUT);
    ck_assert_int_eq(results_link_add(db, rb, "node-0_UP", 100, 1, &err), DT_OK);
    ck_assert_int_eq(results_link_add(db, rb, "node-0_UP", 50, 1, &err), DT_OK);
    ck_assert_int_eq(results_fault_add(db, rb, 3.5, "host-crash", "node-2", "planned", &err),
                     DT_OK);
    results_db_close(db);

    sqlite3 *h = raw_open();
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM params WHERE number IS NULL", 0), 1);
    ck_assert_int_eq(raw_int(h, "SELECT bytes FROM links WHERE link = 'node-0_UP'", 0), 150);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM timeline", 0), 1);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM faults WHERE kind = 'host-crash'", 0), 1);
    ck_assert_int_eq(raw_int(h, "SELECT sweep_index FROM runs WHERE id = ?1", rb), 1);
    sqlite3_stmt *s = raw_row(h,
                              "SELECT scaling_efficiency, throughput, workers, bandwidth"
                              " FROM run_summary WHERE run = ?1",
                              rb);
    ck_assert_double_eq_tol(sqlite3_column_double(s, 0), 0.75, 1e-12);
    ck_assert_double_eq_tol(sqlite3_column_double(s, 1), 300, 1e-9);
    ck_assert_int_eq(sqlite3_column_int(s, 2), 4);
    ck_assert_double_eq(sqlite3_column_double(s, 3), 1.25e9);
    sqlite3_finalize(s);
    s = raw_row(h, "SELECT scaling_efficiency FROM run_summary WHERE run = ?1", ra);
    ck_assert_double_eq_tol(sqlite3_column_double(s, 0), 1.0, 1e-12);
    sqlite3_finalize(s);
    sqlite3_close(h);
}
END_TEST

/* Reads one RFC 4180 record (fields into f[], up to max) from p; returns the next record. */
static const char *csv_record(const char *p, char f[][256], int max, int *n)
{
    *n = 0;
    for (;;) {
        char *o = f[*n];
        size_t k = 0;
        if (*p == '"') {
            for (p++; *p; p++) {
                if (*p == '"' && p[1] == '"')
                    o[k++] = *p++;
                else if (*p == '"') {
                    p++;
                    break;
                } else
                    o[k++] = *p;
            }
        } else {
            while (*p && *p != ',' && *p != '\n')
                o[k++] = *p++;
        }
        o[k] = 0;
        (*n)++;
        if (*p == ',' && *n < max) {
            p++;
            continue;
        }
        return *p == '\n' ? p + 1 : p;
    }
}

START_TEST(csv_export_and_run_list)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    const char *name = "a,b \"quoted\"\nnext line; DROP TABLE runs; --";
    results_run_info_t info = {name, "sync-ps", "[run]\nseed = 1\n", "0.1.0", "3.32", 7, NULL, 0};
    int64_t r1, r2;
    ck_assert_int_eq(results_run_begin(db, &info, &r1, &err), DT_OK);
    info.name = "second";
    ck_assert_int_eq(results_run_begin(db, &info, &r2, &err), DT_OK);
    ck_assert_int_eq(results_eval_add(db, r1, 0.5, 10, 640, 1e6, 0.25, 0.875, &err), DT_OK);
    ck_assert_int_eq(results_eval_add(db, r2, 0.5, 10, 640, 1e6, NAN, 0.5, &err), DT_OK);
    results_db_close(db);

    const char *out = dir; /* teardown removes the files */
    int64_t only[1] = {r1};
    ck_assert_int_eq(results_export_csv(path, only, 1, 0, out, NULL, &err), DT_OK);
    char file[300];
    snprintf(file, sizeof file, "%s/runs.csv", out);
    FILE *f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    static char fields[32][256];
    int n;
    const char *p = csv_record(text, fields, 32, &n);
    ck_assert_str_eq(fields[0], "id");
    ck_assert_str_eq(fields[1], "name");
    p = csv_record(p, fields, 32, &n);
    ck_assert_str_eq(fields[1], name); /* round trip through quoting */
    ck_assert_str_eq(fields[2], "sync-ps");
    ck_assert(*p == 0); /* run 2 was not asked for */

    snprintf(file, sizeof file, "%s/evals.csv", out);
    f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    p = csv_record(csv_record(text, fields, 32, &n), fields, 32, &n);
    ck_assert_int_eq(n, 8);
    ck_assert_double_eq(strtod(fields[6], NULL), 0.875);
    ck_assert_str_eq(fields[7], ""); /* a classifier's evaluation has no perplexity */
    ck_assert_double_eq(strtod(fields[5], NULL), 0.25);

    /* all runs: the NaN loss of run 2 is an empty field */
    ck_assert_int_eq(results_export_csv(path, NULL, 0, 0, out, NULL, &err), DT_OK);
    f = fopen(file, "r");
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    p = csv_record(csv_record(csv_record(text, fields, 32, &n), fields, 32, &n), fields, 32, &n);
    ck_assert_str_eq(fields[5], "");

    /* run list */
    char list[300];
    snprintf(list, sizeof list, "%s/list.txt", dir);
    f = fopen(list, "w");
    results_query_t *q;
    ck_assert_int_eq(results_query_open_current(&q, path, &err), DT_OK);
    ck_assert_int_eq(results_runs_print(q, f, 0, &err), DT_OK);
    results_query_close(q);
    fclose(f);
    f = fopen(list, "r");
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "second"));
    /* not a dtsim database */
    ck_assert_int_eq(results_query_open_current(&q, list, &err), DT_ERR_INPUT);
}
END_TEST

START_TEST(hostile_strings_stored_verbatim)
{
    static const char *const nasty[] = {
        "it's \"quoted\" `back` ; @x $y \\n \\ %s %n",
        "\"); DROP TABLE runs; --",
        "'); DELETE FROM evals; --",
        "x'; UPDATE runs SET status = 'finished' WHERE '1' = '1",
        "[run]\nname = \"a;b\" ; comment\n\tkey = caf\xc3\xa9 \xe2\x88\x91\n",
        "",
    };
    const int n = (int)(sizeof nasty / sizeof nasty[0]);
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    int64_t ids[8];
    for (int i = 0; i < n; i++) {
        results_run_info_t info = {
            nasty[i],           nasty[(i + 1) % n], nasty[(i + 2) % n], nasty[(i + 3) % n],
            nasty[(i + 4) % n], (uint64_t)i,        nasty[i],           i};
        ck_assert_int_eq(results_run_begin(db, &info, &ids[i], &err), DT_OK);
        ck_assert_int_eq(
            results_worker_add(db, ids[i], i, nasty[i], "worker", 1, 2, 3, 4, 5, 6, 1, &err),
            DT_OK);
        ck_assert_int_eq(results_eval_add(db, ids[i], 1.0, 1, 1, 1, 1, 0.5, &err), DT_OK);
    }
    results_db_close(db);
    db = open_ok(); /* the schema still opens cleanly */
    results_db_close(db);

    sqlite3 *h = raw_open();
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'", 0), 16);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs", 0), n);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs WHERE status = 'running'", 0), n);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM evals", 0), n);
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *s = raw_row(h,
                                  "SELECT name, strategy, config, dtsim_version, simgrid_version,"
                                  " (SELECT host FROM workers WHERE run = runs.id)"
                                  " FROM runs WHERE id = ?1",
                                  ids[i]);
        for (int c = 0; c < 5; c++)
            ck_text(s, c, nasty[(i + c) % n]);
        ck_text(s, 5, nasty[i]);
        sqlite3_finalize(s);
    }
    sqlite3_close(h);
}
END_TEST

static dt_status end_run(results_db_t *db, int64_t run, const char *status, dt_err_t *err)
{
    results_summary_t sum = {0.5, 1.0, 10.0, 5.0, 0.4, 100.0, 0.6, 0.3, 0.1, 10};
    return results_run_end(db, run, status, &sum, err);
}

START_TEST(status_moves_only_from_running)
{
    results_db_t *db = open_ok();
    sqlite3 *h = raw_open();
    dt_err_t err = {""};
    char buf[256];
    const char *status_sql = "SELECT status FROM runs WHERE id = ?1";

    int64_t run = begin_ok(db, "a");
    ck_assert_str_eq(raw_text(h, status_sql, run, buf, sizeof buf), "running");
    ck_assert_str_eq(raw_text(h, "SELECT ended FROM runs WHERE id = ?1", run, buf, sizeof buf),
                     "(NULL)");

    /* not an end status */
    ck_assert_int_eq(end_run(db, run, "running", &err), DT_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "'running'"));
    ck_assert_int_eq(end_run(db, run, "done", &err), DT_ERR_INPUT);
    ck_assert_int_eq(end_run(db, run, "Finished", &err), DT_ERR_INPUT);
    ck_assert_int_eq(end_run(db, run, NULL, &err), DT_ERR_INPUT);
    ck_assert_str_eq(raw_text(h, status_sql, run, buf, sizeof buf), "running");

    /* diverged without a summary: the status changes, no summary row appears */
    ck_assert_int_eq(results_run_end(db, run, "diverged", NULL, &err), DT_OK);
    ck_assert_str_eq(raw_text(h, status_sql, run, buf, sizeof buf), "diverged");
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM summary", 0), 0);

    /* an ended run stays ended */
    ck_assert_int_eq(end_run(db, run, "finished", &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "already ended as 'diverged'") && strstr(err.msg, path), "%s",
                  err.msg);
    ck_assert_str_eq(raw_text(h, status_sql, run, buf, sizeof buf), "diverged");
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM summary", 0), 0);

    /* a run that does not exist */
    ck_assert_int_eq(end_run(db, 999, "finished", &err), DT_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "no run 999"));
    ck_assert_int_eq(results_eval_add(db, 999, 1, 1, 1, 1, 1, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "run 999") && strstr(err.msg, "FOREIGN KEY"), "%s", err.msg);
    ck_assert_int_eq(results_worker_add(db, run, 0, "h", "boss", 0, 0, 0, 0, 0, 0, 1, &err),
                     DT_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "'boss'"));

    /* every end status is accepted once, with its summary */
    static const char *const ends[] = {"finished", "failed", "interrupted"};
    for (int i = 0; i < 3; i++) {
        int64_t r = begin_ok(db, ends[i]);
        ck_assert_int_eq(end_run(db, r, ends[i], &err), DT_OK);
        ck_assert_str_eq(raw_text(h, status_sql, r, buf, sizeof buf), ends[i]);
        ck_assert_int_eq(raw_int(h, "SELECT steps FROM summary WHERE run = ?1", r), 10);
        ck_assert_int_eq(end_run(db, r, "finished", &err), DT_ERR_INPUT);
    }

    /* inside the caller's transaction, rolled back: as if never ended */
    int64_t r = begin_ok(db, "rolled back");
    ck_assert_int_eq(results_tx_begin(db, &err), DT_OK);
    ck_assert_int_eq(end_run(db, r, "finished", &err), DT_OK);
    ck_assert_int_eq(results_tx_rollback(db, &err), DT_OK);
    ck_assert_str_eq(raw_text(h, status_sql, r, buf, sizeof buf), "running");
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM summary WHERE run = ?1", r), 0);
    ck_assert_int_eq(results_tx_rollback(db, &err), DT_OK); /* nothing open: harmless */

    /* the schema itself refuses an unknown status, whoever writes it */
    char *msg = NULL;
    ck_assert_int_ne(sqlite3_exec(h, "UPDATE runs SET status = 'done'", NULL, NULL, &msg),
                     SQLITE_OK);
    sqlite3_free(msg);

    sqlite3_close(h);
    results_db_close(db);
}
END_TEST

/* The evals table before version 7 (no perplexity), its rows kept (legacy_alter_table: the
 * views that read evals are left as they are while it is renamed). */
#define EVALS_V6                                                                                   \
    "CREATE TABLE evals_v6 (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, "         \
    "sim_time REAL, step INTEGER, samples REAL, bytes REAL, test_loss REAL, test_acc REAL); "      \
    "INSERT INTO evals_v6 SELECT run, sim_time, step, samples, bytes, test_loss, test_acc "        \
    "FROM evals; PRAGMA legacy_alter_table = ON; DROP TABLE evals; "                               \
    "ALTER TABLE evals_v6 RENAME TO evals; PRAGMA legacy_alter_table = OFF; "                      \
    "CREATE INDEX evals_run ON evals (run, sim_time); "
/* The workers, memory and links tables before version 8 (no weight). */
#define HOSTS_V7                                                                                   \
    "ALTER TABLE workers DROP COLUMN weight; ALTER TABLE memory DROP COLUMN weight; "              \
    "ALTER TABLE links DROP COLUMN weight; "

/* A version-1 file (before the memory table) is upgraded when opened, step by step: its runs
 * stay, the memory, privacy and clients tables appear and take rows, the version reads 3. */
START_TEST(version_1_file_upgraded)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "old", .strategy = "single", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    raw_exec(
        h, HOSTS_V7
        "DROP TABLE breakdown; DROP TABLE memory; DROP VIEW client_fairness; DROP TABLE privacy; "
        "DROP TABLE clients; DROP TABLE messages; DROP TABLE energy; " EVALS_V6
        "PRAGMA user_version = 1");
    sqlite3_close(h);
    db = open_ok();
    ck_assert_int_eq(results_memory_add(db, run, 0, "worker", 4e6, 4e6, NAN, 1e5, 1, &err), DT_OK);
    ck_assert_int_eq(results_privacy_add(db, run, 1, INFINITY, 1e-5, &err), DT_OK);
    ck_assert_int_eq(results_privacy_add(db, run, 2, 0.5, 1e-5, &err), DT_OK);
    results_client_t c = {.client = 3,
                          .rounds = 2,
                          .samples = 40,
                          .held_out = 10,
                          .test_acc = 0.7,
                          .test_loss = NAN,
                          .byzantine = 1};
    ck_assert_int_eq(results_client_add(db, run, &c, &err), DT_OK);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM messages", 0), 0);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM privacy WHERE round = 1 AND epsilon IS "
                             "NULL",
                             0),
                     1);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM clients WHERE client = 3 AND rounds = 2 "
                             "AND test_loss IS NULL AND byzantine = 1",
                             0),
                     1);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs WHERE name = 'old'", 0), 1);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM memory WHERE params = 4e6 AND "
                             "optimizer IS NULL AND activations = 1e5",
                             0),
                     1);
    sqlite3_close(h);
}
END_TEST

/* A version-3 file (before the 'stalled' and 'collapsed' statuses) takes a stalled and a
 * collapsed run once opened, its runs.status still refuses a status it does not know, and
 * its rows and foreign keys stay. */
START_TEST(version_3_file_takes_stalled)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "old", .strategy = "allreduce", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    ck_assert_int_eq(results_memory_add(db, run, 0, "worker", 1, 2, 3, 4, 1, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    int64_t schema = raw_int(h, "PRAGMA schema_version", 0);
    char sql[2048];
    snprintf(sql, sizeof sql,
             "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, "
             "', ''stalled'', ''collapsed'')', ')') WHERE name = 'runs'; "
             "PRAGMA schema_version = %lld; "
             "PRAGMA writable_schema = OFF; DROP TABLE breakdown; " HOSTS_V7
             "DROP TABLE messages; DROP TABLE energy; " EVALS_V6 "PRAGMA user_version = 3;",
             (long long)schema + 1);
    raw_exec(h, sql);
    ck_assert_int_eq(raw_int(h,
                             "SELECT instr(sql, '''stalled''') FROM sqlite_schema WHERE "
                             "name = 'runs'",
                             0),
                     0);
    sqlite3_close(h);
    db = open_ok();
    results_summary_t sum = {.final_accuracy = NAN, .final_loss = NAN, .time_to_target = NAN};
    ck_assert_msg(results_run_end(db, run, "stalled", &sum, &err) == DT_OK, "%s", err.msg);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs WHERE status = 'stalled'", 0), 1);
    ck_assert_int_eq(sqlite3_exec(h, "UPDATE runs SET status = 'collapsed'", NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM memory WHERE run = ?1", run), 1);
    ck_assert_int_ne(sqlite3_exec(h, "UPDATE runs SET status = 'bogus'", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(h);
}
END_TEST

/* A version-4 file (before the messages table) takes messages once opened; its runs stay,
 * and a message reads back as it was stored. */
START_TEST(version_4_file_takes_messages)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "old", .strategy = "sync-ps", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    raw_exec(h, HOSTS_V7 "DROP TABLE breakdown; DROP TABLE messages; DROP TABLE energy; " EVALS_V6
                         "PRAGMA user_version = 4");
    sqlite3_close(h);
    db = open_ok();
    results_msg_end_t src = {"node-1", "worker", 0}, dst = {"node-0", "server", 0};
    ck_assert_int_eq(results_message_add(db, run, &src, &dst, 0.5, 0.75, 1.0, 4096, &err), DT_OK);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs WHERE name = 'old'", 0), 1);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM messages WHERE run = ?1 AND src_host = "
                             "'node-1' AND src_role = 'worker' AND src_rank = 0 AND dst_host ="
                             " 'node-0' AND dst_role = 'server' AND sent = 0.5 AND start = "
                             "0.75 AND done = 1.0 AND bytes = 4096",
                             run),
                     1);
    sqlite3_close(h);
}
END_TEST

/* A version-5 file (before the energy table) takes an energy row once opened: its runs stay,
 * the row reads back as stored (NAN as NULL), and deleting the run deletes it. */
START_TEST(version_5_file_takes_energy)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "old", .strategy = "allreduce", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    raw_exec(h, HOSTS_V7 "DROP TABLE breakdown; DROP TABLE energy; " EVALS_V6
                         "PRAGMA user_version = 5");
    sqlite3_close(h);
    db = open_ok();
    results_energy_t e = {.hosts = 4,
                          .host_joules = 1500,
                          .link_ports = 8,
                          .link_joules = 250,
                          .joules_per_step = 17.5,
                          .joules_per_sample = 0.25,
                          .dollars = 0.5,
                          .dollars_per_sample = 0.125,
                          .dollars_to_target = NAN};
    ck_assert_int_eq(results_energy_add(db, run, &e, &err), DT_OK);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs WHERE name = 'old'", 0), 1);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM energy WHERE run = ?1 AND hosts = 4 AND "
                             "host_joules = 1500 AND link_ports = 8 AND link_joules = 250 AND "
                             "joules_per_step = 17.5 AND joules_per_sample = 0.25 AND "
                             "dollars = 0.5 AND dollars_per_sample = 0.125 AND "
                             "dollars_to_target IS NULL",
                             run),
                     1);
    raw_exec(h, "PRAGMA foreign_keys = ON; DELETE FROM runs");
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM energy", 0), 0);
    sqlite3_close(h);
}
END_TEST

/* A version-7 file (before the breakdown table) reads as it is: a run in it has no breakdown
 * (found 0, NAN), not an error; opened for writing it takes one, which reads back part by part
 * in results_part_t's order, and deleting the run deletes it. */
START_TEST(version_7_file_takes_a_breakdown)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "old", .strategy = "pipeline", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    raw_exec(h, "DROP TABLE breakdown; " HOSTS_V7 "PRAGMA user_version = 7");
    sqlite3_close(h);
    results_query_t *q = NULL;
    double parts[RESULTS_PART_COUNT];
    int found = 1;
    ck_assert_int_eq(results_query_open(&q, path, &err), DT_OK);
    ck_assert_int_eq(results_query_breakdown(q, run, parts, &found, &err), DT_OK);
    ck_assert_int_eq(found, 0);
    ck_assert(isnan(parts[RESULTS_PART_COMPUTE]) && isnan(parts[RESULTS_PART_WAIT]));
    results_query_close(q);
    db = open_ok();
    double given[RESULTS_PART_COUNT];
    for (int k = 0; k < RESULTS_PART_COUNT; k++)
        given[k] = 0.125 * k;
    ck_assert_int_eq(results_breakdown_add(db, run, given, &err), DT_OK);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM breakdown WHERE run = ?1", run),
                     RESULTS_PART_COUNT);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM breakdown WHERE part = 'bubble' AND "
                             "seconds = 1.0",
                             0),
                     1);
    sqlite3_close(h);
    ck_assert_int_eq(results_query_open(&q, path, &err), DT_OK);
    ck_assert_int_eq(results_query_breakdown(q, run, parts, &found, &err), DT_OK);
    ck_assert_int_eq(found, 1);
    for (int k = 0; k < RESULTS_PART_COUNT; k++)
        ck_assert_double_eq(parts[k], given[k]);
    results_query_close(q);
    char line[512];
    results_breakdown_line(given, "step", line, sizeof line);
    ck_assert_str_eq(line, "step 5.625 s = recompute 0.125 s (2.2%) + optimizer 0.25 s (4.4%) + "
                           "tensor 0.375 s (6.7%) + context 0.5 s (8.9%) + expert 0.625 s (11.1%) "
                           "+ pipeline 0.75 s (13.3%) + data 0.875 s (15.6%) + bubble 1 s (17.8%) "
                           "+ wait 1.125 s (20.0%)");
    h = raw_open();
    raw_exec(h, "PRAGMA foreign_keys = ON; DELETE FROM runs");
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM breakdown", 0), 0);
    sqlite3_close(h);
}
END_TEST

/* client_fairness against figures worked out by hand: 21 honest evaluated clients of
 * accuracy 0.01 .. 0.21, a Byzantine one (left out of the accuracies) and one without held-out
 * samples that never took part. n = 21: the 10th percentile is rank 1 + 20 / 10 = 3. */
START_TEST(client_fairness_view)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "fl", .strategy = "fedavg", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    for (int k = 1; k <= 21; k++) {
        results_client_t c = {.client = k,
                              .rounds = k % 4 + 1,
                              .samples = 100,
                              .held_out = 10,
                              .test_acc = k / 100.0,
                              .test_loss = 1.0};
        ck_assert_int_eq(results_client_add(db, run, &c, &err), DT_OK);
    }
    results_client_t bad = {.client = 22,
                            .rounds = 3,
                            .samples = 100,
                            .held_out = 10,
                            .test_acc = 0.99,
                            .test_loss = 1.0,
                            .byzantine = 1};
    results_client_t none = {
        .client = 0, .rounds = 0, .samples = 100, .test_acc = NAN, .test_loss = NAN};
    ck_assert_int_eq(results_client_add(db, run, &bad, &err), DT_OK);
    ck_assert_int_eq(results_client_add(db, run, &none, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    ck_assert_int_eq(raw_int(h, "SELECT clients FROM client_fairness", 0), 23);
    ck_assert_int_eq(raw_int(h, "SELECT byzantine FROM client_fairness", 0), 1);
    ck_assert_int_eq(raw_int(h, "SELECT evaluated FROM client_fairness", 0), 21);
    ck_assert_int_eq(raw_int(h, "SELECT never_aggregated FROM client_fairness", 0), 1);
    ck_assert_int_eq(raw_int(h, "SELECT max_rounds FROM client_fairness", 0), 4);
    ck_assert_int_eq(raw_int(h, "SELECT round(p10_acc * 1000) FROM client_fairness", 0), 30);
    ck_assert_int_eq(raw_int(h, "SELECT round(p90_acc * 1000) FROM client_fairness", 0), 190);
    ck_assert_int_eq(raw_int(h, "SELECT round(mean_acc * 1000) FROM client_fairness", 0), 110);
    ck_assert_int_eq(raw_int(h, "SELECT round(spread * 1000) FROM client_fairness", 0), 200);
    sqlite3_close(h);
}
END_TEST

/* A version-6 file (before the evaluations' perplexity) keeps its evaluations, NULL
 * perplexity, once opened, and takes a language model's: what was given reads back, and
 * the query's reader counts it as text. */
START_TEST(version_6_file_takes_perplexity)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "old", .strategy = "single", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    ck_assert_int_eq(results_eval_add(db, run, 1.0, 10, 640, 1e6, 0.5, 0.75, &err), DT_OK);
    results_db_close(db);
    sqlite3 *h = raw_open();
    raw_exec(h, "DROP TABLE breakdown; " HOSTS_V7 EVALS_V6 "PRAGMA user_version = 6");
    sqlite3_close(h);
    db = open_ok();
    const double loss = 1.75; /* nats: a perplexity of e^1.75 = 5.7546... */
    ck_assert_int_eq(
        results_eval_add_text(db, run, 2.0, 20, 1280, 2e6, loss, 0.375, exp(loss), &err), DT_OK);
    ck_assert_int_eq(results_eval_add_text(db, run, 3.0, 30, 1920, 3e6, NAN, NAN, NAN, &err),
                     DT_OK);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM evals WHERE perplexity IS NULL", 0), 2);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM evals WHERE step = 20 AND test_loss = "
                             "1.75 AND test_acc = 0.375 AND abs(perplexity - 5.754602676005731)"
                             " < 1e-12",
                             0),
                     1);
    sqlite3_close(h);
    results_query_t *q = NULL;
    ck_assert_int_eq(results_query_open(&q, path, &err), DT_OK);
    results_evals_t e;
    ck_assert_int_eq(results_query_evals(q, run, &e, &err), DT_OK);
    ck_assert_uint_eq(e.n, 3);
    ck_assert_uint_eq(e.text, 1);
    ck_assert(isnan(e.perplexity[0]) && isnan(e.perplexity[2]));
    ck_assert_double_eq_tol(e.perplexity[1], exp(e.test_loss[1]), 1e-12);
    results_evals_free(&e);
    results_query_close(q);
}
END_TEST

/* The workers and memory rows' weight (version 8; the file at version 9): show's role totals count
 * and sum each row for the hosts it stands for, against the sums written out here; a version-7 file
 * (no weight) reads as it is, a host a row, and when opened takes the column, 1 in its rows, and
 * rows that stand for many; a weight below 1 is refused. */
START_TEST(host_rows_weighted_and_version_7_read)
{
    results_db_t *db = open_ok();
    dt_err_t err = {""};
    results_run_info_t info = {.name = "w", .strategy = "pipeline", .config = "x", .seed = 1};
    int64_t run = 0;
    ck_assert_int_eq(results_run_begin(db, &info, &run, &err), DT_OK);
    ck_assert_int_eq(
        results_worker_add(db, run, 0, "node-0", "worker", 1.5, 0.25, 0.125, 1e9, 2e9, 3, 1, &err),
        DT_OK);
    ck_assert_int_eq(
        results_worker_add(db, run, 1, "node-1", "worker", 2.5, 0.75, 0.0625, 4e9, 1e9, 3, 1, &err),
        DT_OK);
    ck_assert_int_eq(results_memory_add(db, run, 0, "worker", 1, 2, 3, NAN, 0, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "weight 0"), "%s", err.msg);
    ck_assert_int_eq(results_worker_add(db, run, 2, "node-2", "worker", 1, 1, 1, 1, 1, 1, -3, &err),
                     DT_ERR_INPUT);
    results_db_close(db);
    sqlite3 *h = raw_open();
    raw_exec(h, "DROP TABLE breakdown; " HOSTS_V7 "PRAGMA user_version = 7");
    sqlite3_close(h);

    results_query_t *q = NULL;
    results_run_detail_t d;
    ck_assert_int_eq(results_query_open(&q, path, &err), DT_OK);
    ck_assert_int_eq(results_query_detail(q, run, &d, &err), DT_OK);
    ck_assert_uint_eq(d.n_roles, 1);
    ck_assert_int_eq(d.roles[0].hosts, 2);
    ck_assert_int_eq(d.roles[0].steps, 6);
    ck_assert_double_eq(d.roles[0].compute_s, 4.0);
    results_run_detail_free(&d);
    results_query_close(q);

    db = open_ok(); /* version 8: the rows there weigh 1; a row for 5 hosts, a server alone */
    ck_assert_int_eq(
        results_worker_add(db, run, 2, "node-2", "worker", 0.5, 0.5, 0.5, 1e8, 1e8, 2, 5, &err),
        DT_OK);
    ck_assert_int_eq(results_worker_add(db, run, 0, "node-7", "server", 1, 2, 4, 8, 16, 1, 1, &err),
                     DT_OK);
    ck_assert_int_eq(results_memory_add(db, run, 2, "worker", 1, 2, 3, NAN, 5, &err), DT_OK);
    results_db_close(db);
    h = raw_open();
    ck_assert_int_eq(raw_int(h, "PRAGMA user_version", 0), RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(raw_int(h,
                             "SELECT count(*) FROM workers WHERE weight = 1 AND worker < 2 "
                             "AND role = 'worker'",
                             0),
                     2);
    ck_assert_int_eq(raw_int(h, "SELECT sum(weight) FROM workers", 0), 8);
    ck_assert_int_eq(raw_int(h, "SELECT weight FROM memory", 0), 5);
    sqlite3_close(h);
    ck_assert_int_eq(results_query_open(&q, path, &err), DT_OK);
    ck_assert_int_eq(results_query_detail(q, run, &d, &err), DT_OK);
    ck_assert_uint_eq(d.n_roles, 2);
    ck_assert_str_eq(d.roles[0].role, "server");
    ck_assert_int_eq(d.roles[0].hosts, 1);
    ck_assert_double_eq(d.roles[0].idle_s, 4.0);
    const results_role_total_t *w = &d.roles[1];
    ck_assert_int_eq(w->hosts, 2 + 5);
    ck_assert_int_eq(w->steps, 3 + 3 + 5 * 2);
    ck_assert_double_eq(w->compute_s, 1.5 + 2.5 + 5 * 0.5);
    ck_assert_double_eq(w->comm_s, 0.25 + 0.75 + 5 * 0.5);
    ck_assert_double_eq(w->idle_s, 0.125 + 0.0625 + 5 * 0.5);
    ck_assert_double_eq(w->bytes_sent, 1e9 + 4e9 + 5 * 1e8);
    results_run_detail_free(&d);
    results_query_close(q);
}
END_TEST

START_TEST(newer_or_foreign_file_refused)
{
    results_db_t *db = open_ok();
    results_db_close(db);
    sqlite3 *h = raw_open();
    char newer[64];
    snprintf(newer, sizeof newer, "PRAGMA user_version = %d", RESULTS_SCHEMA_VERSION + 1);
    raw_exec(h, newer);
    sqlite3_close(h);

    dt_err_t err = {""};
    db = (results_db_t *)1;
    ck_assert_int_eq(results_db_open(&db, path, &err), DT_ERR_INPUT);
    ck_assert_ptr_null(db);
    snprintf(newer, sizeof newer, "version %d", RESULTS_SCHEMA_VERSION + 1);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "newer") && strstr(err.msg, newer), "%s",
                  err.msg);

    /* the same version number in somebody else's SQLite file */
    char other[160];
    snprintf(other, sizeof other, "%s/other.db", dir);
    ck_assert_int_eq(sqlite3_open(other, &h), SQLITE_OK);
    raw_exec(h, "CREATE TABLE runs (x); PRAGMA user_version = 1;");
    sqlite3_close(h);
    ck_assert_int_eq(results_db_open(&db, other, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "not a dtsim results database"), "%s", err.msg);
    /* and without a version */
    ck_assert_int_eq(sqlite3_open(other, &h), SQLITE_OK);
    raw_exec(h, "PRAGMA user_version = 0;");
    sqlite3_close(h);
    ck_assert_int_eq(results_db_open(&db, other, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "not a dtsim results database"), "%s", err.msg);

    /* a file that is not SQLite at all */
    FILE *f = fopen(other, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 200; i++)
        fputs("[run]\nname = demo\n", f);
    fclose(f);
    ck_assert_int_eq(results_db_open(&db, other, &err), DT_ERR_INPUT);
    ck_assert_ptr_null(db);
    ck_assert_msg(strstr(err.msg, other) && strstr(err.msg, "not a database"), "%s", err.msg);
}
END_TEST

START_TEST(missing_directory_is_clear_error)
{
    char p[256];
    snprintf(p, sizeof p, "%s/no/such/dir/results.db", dir);
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ck_assert_int_eq(results_db_open(&db, p, &err), DT_ERR_INPUT);
    ck_assert_ptr_null(db);
    ck_assert_msg(strstr(err.msg, "no/such/dir does not exist") && strstr(err.msg, p), "%s",
                  err.msg);
    char sub[200];
    snprintf(sub, sizeof sub, "%s/no", dir);
    struct stat sb;
    ck_assert_int_ne(stat(sub, &sb), 0); /* nothing was created */

    /* a parent that is a file */
    results_db_close(open_ok());
    snprintf(p, sizeof p, "%s/x.db", path);
    ck_assert_int_eq(results_db_open(&db, p, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "is not a directory"), "%s", err.msg);

    /* a directory where the file should be: SQLite's own message, with the path */
    ck_assert_int_eq(results_db_open(&db, dir, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, dir) && strstr(err.msg, "unable to open"), "%s", err.msg);
}
END_TEST

enum { BATCHES = 5, PER_BATCH = 40 };

/* The killed writer: commits BATCHES transactions of PER_BATCH evaluations, tells the parent
 * (run id, then 'c'), opens one more transaction, writes into it, says 'o' and keeps writing
 * until SIGKILL. No Check calls here: this is a bare child process. */
static void writer_child(int fd)
{
    alarm(60); /* never outlive a parent that failed */
    results_db_t *db = NULL;
    dt_err_t err;
    int64_t run;
    results_run_info_t info = {"victim", "async-ps", "[run]\n", "0.1.0", "3.32", 9, NULL, 0};
    if (results_db_open(&db, path, &err) != DT_OK || results_run_begin(db, &info, &run, &err))
        _exit(3);
    if (write(fd, &run, sizeof run) != (ssize_t)sizeof run)
        _exit(4);
    long step = 0;
    for (int b = 0; b < BATCHES; b++) {
        if (results_tx_begin(db, &err) != DT_OK)
            _exit(5);
        for (int i = 0; i < PER_BATCH; i++, step++)
            if (results_eval_add(db, run, (double)step, step, 32.0 * step, 1e6 * step, 1.0, 0.5,
                                 &err) != DT_OK)
                _exit(6);
        results_staleness_add(db, run, b, 1, &err);
        if (results_tx_commit(db, &err) != DT_OK)
            _exit(7);
    }
    if (write(fd, "c", 1) != 1 || results_tx_begin(db, &err) != DT_OK)
        _exit(8);
    for (int i = 0; i < PER_BATCH; i++, step++)
        results_eval_add(db, run, (double)step, step, 0, 0, 1.0, 0.5, &err);
    if (write(fd, "o", 1) != 1)
        _exit(9);
    for (;; step++) /* enough uncommitted rows to spill pages into the WAL */
        if (step < 2000000)
            results_eval_add(db, run, (double)step, step, 0, 0, 1.0, 0.5, &err);
        else
            pause();
}

START_TEST(killed_writer_leaves_committed_rows_and_interrupted_run)
{
    /* created first, so that the child's open does not race to create the schema */
    results_db_t *db = open_ok();
    int64_t mine = begin_ok(db, "alive"); /* this process: alive, so it stays 'running' */
    results_db_close(db);

    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        writer_child(fds[1]);
    }
    close(fds[1]);
    int64_t run = 0;
    char c1 = 0, c2 = 0;
    ck_assert_int_eq(read(fds[0], &run, sizeof run), (ssize_t)sizeof run);
    ck_assert_int_eq(read(fds[0], &c1, 1), 1);
    ck_assert_int_eq(read(fds[0], &c2, 1), 1);
    ck_assert(c1 == 'c' && c2 == 'o');
    struct timespec pause_ts = {0, 20000000}; /* let it write more of the open transaction */
    nanosleep(&pause_ts, NULL);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int wst = 0;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
    close(fds[0]);

    /* before any results_db_open the run still says 'running': the change below is the
     * open's doing. A run of a dead pid on another host is none of our business. */
    sqlite3 *h = raw_open();
    char buf[64];
    ck_assert_str_eq(raw_text(h, "SELECT status FROM runs WHERE id = ?1", run, buf, sizeof buf),
                     "running");
    raw_exec(h, "INSERT INTO runs (name, status, pid, host, started)"
                " SELECT 'remote', 'running', pid, 'another-host', started FROM runs"
                " WHERE name = 'victim'");
    int64_t remote = sqlite3_last_insert_rowid(h);
    sqlite3_close(h);

    db = open_ok();
    h = raw_open();
    ck_assert_str_eq(raw_text(h, "PRAGMA integrity_check", 0, buf, sizeof buf), "ok");
    ck_assert_str_eq(raw_text(h, "SELECT status FROM runs WHERE id = ?1", run, buf, sizeof buf),
                     "interrupted");
    ck_assert_str_eq(raw_text(h, "SELECT ended FROM runs WHERE id = ?1", run, buf, sizeof buf),
                     "(NULL)");
    ck_assert_str_eq(raw_text(h, "SELECT status FROM runs WHERE id = ?1", mine, buf, sizeof buf),
                     "running");
    ck_assert_str_eq(raw_text(h, "SELECT status FROM runs WHERE id = ?1", remote, buf, sizeof buf),
                     "running");
    /* exactly the committed batches: steps 0 .. BATCHES*PER_BATCH-1, each once */
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM evals WHERE run = ?1", run),
                     BATCHES * PER_BATCH);
    ck_assert_int_eq(raw_int(h, "SELECT count(DISTINCT step) FROM evals WHERE run = ?1", run),
                     BATCHES * PER_BATCH);
    ck_assert_int_eq(raw_int(h, "SELECT max(step) FROM evals WHERE run = ?1", run),
                     BATCHES * PER_BATCH - 1);
    ck_assert_int_eq(raw_int(h, "SELECT sum(bytes) FROM evals WHERE run = ?1", run),
                     1000000LL * (BATCHES * PER_BATCH - 1) * (BATCHES * PER_BATCH) / 2);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM staleness WHERE run = ?1", run), BATCHES);
    sqlite3_close(h);

    /* the interrupted run is ended; writing on goes on normally */
    dt_err_t err = {""};
    ck_assert_int_eq(end_run(db, run, "finished", &err), DT_ERR_INPUT);
    ck_assert_int_eq(end_run(db, mine, "finished", &err), DT_OK);
    results_db_close(db);
}
END_TEST

/* A writer killed and not yet reaped (a zombie: its parent died with it and init has not
 * come round) has written its last row: the next open marks its run interrupted. */
START_TEST(zombie_writer_counts_as_gone)
{
    results_db_t *db = open_ok();
    results_db_close(db);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    siginfo_t info;
    /* waits until it has exited, leaving it unreaped */
    ck_assert_int_eq(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
    ck_assert_int_eq(kill(pid, 0), 0); /* a zombie still answers kill(pid, 0) */
    sqlite3 *h = raw_open();
    char sql[512], host[256];
    ck_assert_int_eq(gethostname(host, sizeof host), 0);
    host[sizeof host - 1] = '\0';
    snprintf(sql, sizeof sql,
             "INSERT INTO runs (name, status, pid, host, started)"
             " VALUES ('zombie', 'running', %d, '%s', 0)",
             (int)pid, host);
    raw_exec(h, sql);
    int64_t run = sqlite3_last_insert_rowid(h);
    sqlite3_close(h);

    db = open_ok();
    h = raw_open();
    char buf[64];
    ck_assert_str_eq(raw_text(h, "SELECT status FROM runs WHERE id = ?1", run, buf, sizeof buf),
                     "interrupted");
    sqlite3_close(h);
    results_db_close(db);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}
END_TEST

START_TEST(concurrent_writers_lose_nothing)
{
    /* Four processes on one new file at once (a sweep with -j 4): the schema is created once,
     * lock waits are absorbed by the busy timeout, every committed row is there. */
    enum { WRITERS = 4, ROUNDS = 25, ROWS = 8 };
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            alarm(60);
            results_db_t *db = NULL;
            dt_err_t err;
            int64_t run;
            results_run_info_t info = {"sweep", "ring",      "[run]\n", "0.1.0",
                                       "3.32",  (uint64_t)w, "sweep-1", w};
            if (results_db_open(&db, path, &err) != DT_OK ||
                results_run_begin(db, &info, &run, &err) != DT_OK) {
                fprintf(stderr, "writer %d: %s\n", w, err.msg);
                _exit(3);
            }
            for (int r = 0; r < ROUNDS; r++) {
                if (results_tx_begin(db, &err) != DT_OK)
                    _exit(4);
                for (int i = 0; i < ROWS; i++)
                    if (results_worker_add(db, run, i, "h", "worker", r, 1, 1, 1, 1, r, 1, &err))
                        _exit(5);
                if (results_tx_commit(db, &err) != DT_OK)
                    _exit(6);
            }
            if (results_run_end(db, run, "finished", NULL, &err) != DT_OK)
                _exit(7);
            results_db_close(db);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int wst = 0;
        ck_assert_int_eq(waitpid(pids[w], &wst, 0), pids[w]);
        ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "writer %d: status %d", w, wst);
    }
    sqlite3 *h = raw_open();
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM runs WHERE status = 'finished'", 0), WRITERS);
    ck_assert_int_eq(raw_int(h, "SELECT count(DISTINCT seed) FROM runs", 0), WRITERS);
    ck_assert_int_eq(raw_int(h, "SELECT count(*) FROM workers", 0), WRITERS * ROUNDS * ROWS);
    ck_assert_int_eq(raw_int(h, "SELECT sum(steps) FROM workers", 0),
                     WRITERS * ROWS * (ROUNDS - 1) * ROUNDS / 2);
    sqlite3_close(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("results");
    TCase *tc = tcase_create("db");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip_every_value);
    tcase_add_test(tc, params_timeline_links_faults_and_scaling_view);
    tcase_add_test(tc, csv_export_and_run_list);
    tcase_add_test(tc, hostile_strings_stored_verbatim);
    tcase_add_test(tc, status_moves_only_from_running);
    tcase_add_test(tc, newer_or_foreign_file_refused);
    tcase_add_test(tc, version_1_file_upgraded);
    tcase_add_test(tc, version_6_file_takes_perplexity);
    tcase_add_test(tc, host_rows_weighted_and_version_7_read);
    tcase_add_test(tc, version_7_file_takes_a_breakdown);
    tcase_add_test(tc, version_5_file_takes_energy);
    tcase_add_test(tc, version_4_file_takes_messages);
    tcase_add_test(tc, version_3_file_takes_stalled);
    tcase_add_test(tc, client_fairness_view);
    tcase_add_test(tc, missing_directory_is_clear_error);
    tcase_add_test(tc, killed_writer_leaves_committed_rows_and_interrupted_run);
    tcase_add_test(tc, zombie_writer_counts_as_gone);
    tcase_add_test(tc, concurrent_writers_lose_nothing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
