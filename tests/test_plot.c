/* The read side and the figures: a database written with the writer (db.h) is read back with
 * the query functions, and every number they return is checked against what was written,
 * the scaling efficiency against its formula worked out here, the clients' sorted accuracies
 * and fairness figures (10th percentile, spread) against values worked by hand; the run
 * choice (default, a sweep, --runs lists) and its errors; every figure drawn as a real PNG or
 * SVG by gnuplot, and skipped, saying why, when the runs cannot make it; hostile run, strategy
 * and host names that try to break out of gnuplot strings (quotes, backquotes, newlines,
 * macros) executing nothing and appearing verbatim in the SVG; and `dtsim plot` as a user
 * meets it.
 *
 * Exits 77 ("skipped" for ctest) only when gnuplot is not installed, after the query tests
 * have passed. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db.h"
#include "figure.h" /* FIG_TITLE_MAX */
#include "plot.h"
#include "query.h"

static char dir[64];
static char db_path[128];

/* --- fixtures -------------------------------------------------------------------------- */

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rm_tree(p);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void setup(void)
{
    strcpy(dir, "/tmp/dtsim-plot-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(db_path, sizeof db_path, "%s/results.db", dir);
}

static void teardown(void)
{
    rm_tree(dir);
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* --- the database ------------------------------------------------------------------------- */

/* One run of the test sweep. The single run's throughput is SINGLE_RATE samples per second;
 * every other run processes eff x workers x SINGLE_RATE, so that its scaling efficiency is
 * eff by construction. */
#define SINGLE_RATE 1600.0
typedef struct test_run {
    const char *name, *strategy;
    double workers, bandwidth; /* as stored in params: workers, bytes/s */
    double sim_time, time_to_target, eff;
    double shares[3];
} test_run_t;

static const test_run_t sweep_runs[] = {
    {"allreduce-1G", "allreduce", 8, 1.25e8, 8.0, 6.0, 0.15, {0.10, 0.85, 0.05}},
    {"allreduce-10G", "allreduce", 8, 1.25e9, 2.0, 1.5, 0.60, {0.40, 0.55, 0.05}},
    {"allreduce-100G", "allreduce", 8, 1.25e10, 1.0, 0.75, 0.90, {0.80, 0.20, 0.0}},
    {"sync-ps-1G", "sync-ps", 8, 1.25e8, 20.0, NAN, 0.05, {0.03, 0.96, 0.01}},
    {"sync-ps-10G", "sync-ps", 8, 1.25e9, 4.0, 3.0, 0.30, {0.20, 0.78, 0.02}},
    {"sync-ps-100G", "sync-ps", 8, 1.25e10, 1.5, 1.2, 0.70, {0.55, 0.40, 0.05}},
    /* 'single' ignores cluster.workers: the 8 stored must count as 1 */
    {"single", "single", 8, 1.25e9, 2.0, 1.8, 1.0, {1.0, 0.0, 0.0}},
    {"allreduce-2w", "allreduce", 2, 1.25e9, 2.5, 1.9, 0.80, {0.70, 0.30, 0.0}},
    {"allreduce-4w", "allreduce", 4, 1.25e9, 2.5, 1.7, 0.70, {0.60, 0.38, 0.02}},
};
#define N_SWEEP (sizeof sweep_runs / sizeof sweep_runs[0])
#define TIMELINE_RUN 3 /* allreduce-10G: run 1 is "old", the sweep starts at 2 */

static double eff_workers(const test_run_t *t)
{
    return strcmp(t->strategy, "single") ? t->workers : 1;
}

/* Final samples of run t: throughput x sim_time. */
static double total_samples(const test_run_t *t)
{
    return t->eff * eff_workers(t) * SINGLE_RATE * t->sim_time;
}

/* Evaluation k (1..4) of run i: at k/4 of the run, a quarter of the samples each. */
static double eval_acc(size_t i, int k)
{
    return 0.5 + 0.1 * k - 0.01 * (double)i;
}

static void ok(dt_status st, const dt_err_t *err)
{
    ck_assert_msg(st == DT_OK, "%s", err->msg);
}

static int64_t add_run(results_db_t *db, const char *name, const char *strategy, const char *sweep,
                       long index, const test_run_t *t, const char *status)
{
    dt_err_t err = {""};
    results_run_info_t info = {name, strategy, "[run]\n", "0.1.0", "3.32", 1, sweep, index};
    int64_t id = 0;
    ok(results_run_begin(db, &info, &id, &err), &err);
    ok(results_param_add(db, id, "cluster.workers", "x", t->workers, &err), &err);
    ok(results_param_add(db, id, "cluster.bandwidth", "x", t->bandwidth, &err), &err);
    double samples = total_samples(t);
    for (int k = 1; k <= 4; k++)
        ok(results_eval_add(db, id, t->sim_time * k / 4, 10 * k, samples * k / 4,
                            1e8 * t->workers * t->sim_time * k / 4, 1.0 / k,
                            eval_acc((size_t)index, k), &err),
           &err);
    /* two hosts; the second holds more */
    ok(results_memory_add(db, id, 0, "worker", 4e6, 4e6, 0, 1e6, 1, &err), &err);
    ok(results_memory_add(db, id, 1, "worker", 4e6, 4e6, 4e6 / t->workers, NAN, 1, &err), &err);
    if (status) {
        results_summary_t s = {
            eval_acc((size_t)index, 4),     0.25,         t->sim_time,  t->time_to_target, 0.7,
            1e8 * t->workers * t->sim_time, t->shares[0], t->shares[1], t->shares[2],      40};
        ok(results_run_end(db, id, status, &s, &err), &err);
        /* $2 per host-hour; 300 W per host while busy */
        double dollars = t->workers * t->sim_time / 3600 * 2;
        double joules = t->workers * t->sim_time * 300 * (t->shares[0] + 0.1);
        results_energy_t e = {.hosts = (long)t->workers,
                              .host_joules = joules,
                              .link_ports = 2 * (long)t->workers,
                              .link_joules = 0,
                              .joules_per_step = joules / 40,
                              .joules_per_sample = joules / samples,
                              .dollars = dollars,
                              .dollars_per_sample = dollars / samples,
                              .dollars_to_target = NAN};
        ok(results_energy_add(db, id, &e, &err), &err);
        /* the step (sim_time / 40) in three parts, as the shares split it */
        double parts[RESULTS_PART_COUNT] = {0}, step = t->sim_time / 40;
        parts[RESULTS_PART_COMPUTE] = t->shares[0] * step;
        parts[RESULTS_PART_DATA] = t->shares[1] * step;
        parts[RESULTS_PART_WAIT] = t->shares[2] * step;
        ok(results_breakdown_add(db, id, parts, &err), &err);
    }
    return id;
}

static void add_timeline(results_db_t *db, int64_t run, const char *host0)
{
    dt_err_t err = {""};
    /* deliberately out of order: the query sorts */
    ok(results_timeline_add(db, run, "node-1", "worker", 1, "comm", 1.2, 1.7, &err), &err);
    ok(results_timeline_add(db, run, "node-1", "worker", 1, "compute", 0.0, 1.2, &err), &err);
    ok(results_timeline_add(db, run, "node-8", "server", 0, "comm", 1.0, 1.7, &err), &err);
    ok(results_timeline_add(db, run, "node-8", "server", 0, "idle", 0.0, 1.0, &err), &err);
    ok(results_timeline_add(db, run, host0, "worker", 0, "idle", 1.5, 2.0, &err), &err);
    ok(results_timeline_add(db, run, host0, "worker", 0, "compute", 0.0, 1.0, &err), &err);
    ok(results_timeline_add(db, run, host0, "worker", 0, "comm", 1.0, 1.5, &err), &err);
}

/* A crash and its recovery, a reaction between them (not drawn as a line). */
static void add_faults(results_db_t *db, int64_t run, const char *host)
{
    dt_err_t err = {""};
    ok(results_fault_add(db, run, 0.4, "host-crash", host, "scheduled crash", &err), &err);
    ok(results_fault_add(db, run, 0.5, "reform", "worker-0", "group 1: 7 workers", &err), &err);
    ok(results_fault_add(db, run, 0.9, "host-recover", host, "host back on", &err), &err);
}

/* Clients of a federated run, worked by hand: 11 honest clients with held-out accuracies
 * (stored out of order), a Byzantine one below them all and one without held-out samples.
 * Sorted, the honest accuracies are 0.15 0.35 0.48 0.55 0.59 0.62 0.66 0.71 0.77 0.80 0.90:
 * n = 11, so the 10th percentile is rank 1 + 10 / 10 = 2, 0.35 (with the Byzantine client
 * counted it would be 0.15), the 90th rank 10, 0.80; mean 6.58 / 11, spread 0.75. Rounds
 * taken part: 33 over 13 clients, two never aggregated, at most 5. */
#define N_HONEST 11
static const double client_acc[N_HONEST] = {0.62, 0.35, 0.80, 0.71, 0.15, 0.90,
                                            0.55, 0.48, 0.66, 0.77, 0.59};
static const long client_rounds[N_HONEST] = {3, 1, 4, 3, 0, 5, 2, 2, 3, 4, 2};
static const double sorted_acc[N_HONEST] = {0.15, 0.35, 0.48, 0.55, 0.59, 0.62,
                                            0.66, 0.71, 0.77, 0.80, 0.90};
static const long sorted_rounds[N_HONEST] = {0, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5};

static void add_clients(results_db_t *db, int64_t run)
{
    dt_err_t err = {""};
    for (int k = 0; k < N_HONEST; k++) {
        results_client_t c = {.client = k + 1,
                              .rounds = client_rounds[k],
                              .samples = 100,
                              .held_out = 20,
                              .test_acc = client_acc[k],
                              .test_loss = 1.0};
        ok(results_client_add(db, run, &c, &err), &err);
    }
    results_client_t byz = {.client = N_HONEST + 1,
                            .rounds = 4,
                            .samples = 100,
                            .held_out = 20,
                            .test_acc = 0.05,
                            .test_loss = 3.0,
                            .byzantine = 1};
    results_client_t none = {
        .client = 0, .rounds = 0, .samples = 100, .test_acc = NAN, .test_loss = NAN};
    ok(results_client_add(db, run, &byz, &err), &err);
    ok(results_client_add(db, run, &none, &err), &err);
}

/* A federated run without data.client_holdout: clients rows, none evaluated. */
static void add_clients_unevaluated(results_db_t *db, int64_t run)
{
    dt_err_t err = {""};
    for (int k = 0; k < 4; k++) {
        results_client_t c = {
            .client = k, .rounds = k, .samples = 100, .test_acc = NAN, .test_loss = NAN};
        ok(results_client_add(db, run, &c, &err), &err);
    }
}

/* Run 1: "old", sweep s0. Runs 2..10: sweep s1 (sweep_runs). Run 11: s1, still running.
 * Run 12: "loner", no sweep. Run 2 has one more evaluation whose accuracy is NaN. Run 2 has
 * the clients above, run 4 clients without held-out samples. */
static void build_db(void)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    add_run(db, "old", "allreduce", "s0", 0, &sweep_runs[1], "finished");
    for (size_t i = 0; i < N_SWEEP; i++) {
        int64_t id = add_run(db, sweep_runs[i].name, sweep_runs[i].strategy, "s1", (long)i,
                             &sweep_runs[i], "finished");
        ck_assert_int_eq(id, (int64_t)i + 2);
    }
    ok(results_eval_add(db, 2, 0.5, 1, 10.0, 1e6, NAN, NAN, &err), &err);
    add_run(db, "still-running", "allreduce", "s1", (long)N_SWEEP, &sweep_runs[1], NULL);
    add_run(db, "loner", "allreduce", NULL, 0, &sweep_runs[1], "finished");
    add_timeline(db, TIMELINE_RUN, "node-0");
    add_faults(db, TIMELINE_RUN, "node-0");
    add_clients(db, 2);
    add_clients_unevaluated(db, 4);
    results_db_close(db);
}

static results_query_t *query_open_ok(void)
{
    results_query_t *q = NULL;
    dt_err_t err = {""};
    ok(results_query_open(&q, db_path, &err), &err);
    return q;
}

static int dbl_cmp_test(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void ck_close(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "%s: %.17g, expected %.17g", what, got,
                  want);
}

/* --- the read side ------------------------------------------------------------------------ */

START_TEST(runs_spec_parse)
{
    results_id_range_t *r;
    size_t n;
    dt_err_t err = {""};
    ok(results_runs_spec_parse("3,5-9,12-12", &r, &n, &err), &err);
    ck_assert_uint_eq(n, 3);
    ck_assert(r[0].lo == 3 && r[0].hi == 3 && r[1].lo == 5 && r[1].hi == 9);
    ck_assert(r[2].lo == 12 && r[2].hi == 12);
    free(r);
    const char *bad[] = {"",   "3,", ",3",   "a",    "5-3",   "0",
                         "-3", "3-", "1,,2", "1 ,2", "3-4-5", "99999999999999999999",
                         "1;2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(results_runs_spec_parse(bad[i], &r, &n, &err) == DT_ERR_INPUT, "\"%s\"",
                      bad[i]);
        ck_assert_ptr_null(r);
        ck_assert_msg(strstr(err.msg, "3,5-9"), "%s", err.msg);
    }
}
END_TEST

START_TEST(default_choice_is_the_latest_sweep)
{
    build_db();
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    ck_assert_uint_eq(runs.n, N_SWEEP); /* not "old" (s0), "still-running" nor "loner" */
    ck_assert_msg(strstr(runs.what, "sweep s1"), "%s", runs.what);
    for (size_t i = 0; i < N_SWEEP; i++) {
        const results_run_view_t *r = &runs.v[i];
        const test_run_t *t = &sweep_runs[i];
        ck_assert_int_eq(r->id, (int64_t)i + 2);
        ck_assert_str_eq(r->name, t->name);
        ck_assert_str_eq(r->strategy, t->strategy);
        ck_assert_str_eq(r->status, "finished");
        ck_assert_str_eq(r->sweep, "s1");
        ck_assert_int_eq(r->sweep_index, (long)i);
        ck_assert(r->workers == t->workers && r->bandwidth == t->bandwidth);
        ck_assert(results_run_view_workers(r) == eff_workers(t));
        ck_assert(r->has_summary);
        ck_assert(r->sim_time == t->sim_time);
        ck_assert(isnan(t->time_to_target) ? isnan(r->time_to_target)
                                           : r->time_to_target == t->time_to_target);
        ck_assert(r->target_accuracy == 0.7);
        ck_assert(r->final_accuracy == eval_acc(i, 4));
        ck_assert(r->compute_share == t->shares[0] && r->comm_share == t->shares[1] &&
                  r->idle_share == t->shares[2]);
        ck_assert(r->total_bytes == 1e8 * t->workers * t->sim_time);
        ck_assert_int_eq(r->steps, 40);
        /* throughput = final samples / sim_time; efficiency against the single run */
        ck_close(r->throughput, total_samples(t) / t->sim_time, "throughput");
        double single = total_samples(&sweep_runs[6]) / sweep_runs[6].sim_time;
        ck_close(r->scaling_efficiency, total_samples(t) / t->sim_time / (eff_workers(t) * single),
                 "efficiency");
        ck_close(r->scaling_efficiency, t->eff, "efficiency by construction");
    }
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

START_TEST(evals_and_timeline_read_back)
{
    build_db();
    results_query_t *q = query_open_ok();
    dt_err_t err = {""};
    results_evals_t e;
    ok(results_query_evals(q, 2, &e, &err), &err);
    ck_assert_uint_eq(e.n, 5);
    /* in time order: the NaN evaluation at 0.5 s comes first */
    ck_assert(e.sim_time[0] == 0.5 && e.step[0] == 1 && e.samples[0] == 10.0);
    ck_assert(e.bytes[0] == 1e6 && isnan(e.test_acc[0]) && isnan(e.test_loss[0]));
    const test_run_t *t = &sweep_runs[0];
    for (int j = 1; j <= 4; j++) {
        ck_assert(e.sim_time[j] == t->sim_time * j / 4);
        ck_assert_int_eq(e.step[j], 10 * j);
        ck_assert(e.samples[j] == total_samples(t) * j / 4);
        ck_assert(e.bytes[j] == 1e8 * t->workers * t->sim_time * j / 4);
        ck_assert(e.test_loss[j] == 1.0 / j);
        ck_assert(e.test_acc[j] == eval_acc(0, j));
    }
    results_evals_free(&e);
    ok(results_query_evals(q, 999, &e, &err), &err);
    /* faults: every row counted, only host and link faults kept, in time order */
    results_faults_t fl;
    ok(results_query_faults(q, TIMELINE_RUN, &fl, &err), &err);
    ck_assert_uint_eq(fl.rows, 3);
    ck_assert_uint_eq(fl.n, 2);
    ck_assert(fl.sim_time[0] == 0.4 && fl.down[0] == 1);
    ck_assert(fl.sim_time[1] == 0.9 && fl.down[1] == 0);
    results_faults_free(&fl);
    ok(results_query_faults(q, 2, &fl, &err), &err);
    ck_assert_uint_eq(fl.rows, 0);
    results_faults_free(&fl);
    ck_assert_uint_eq(e.n, 0);
    results_evals_free(&e);

    results_timeline_t tl;
    ok(results_query_timeline(q, TIMELINE_RUN, &tl, &err), &err);
    ck_assert_uint_eq(tl.n_lanes, 3);
    ck_assert_str_eq(tl.lanes[0].role, "server");
    ck_assert_str_eq(tl.lanes[0].host, "node-8");
    ck_assert_str_eq(tl.lanes[1].role, "worker");
    ck_assert_int_eq(tl.lanes[1].rank, 0);
    ck_assert_str_eq(tl.lanes[1].host, "node-0");
    ck_assert_int_eq(tl.lanes[2].rank, 1);
    ck_assert_uint_eq(tl.n, 7);
    struct {
        size_t lane;
        results_state_t s;
        double a, b;
    } want[7] = {
        {0, RESULTS_STATE_IDLE, 0.0, 1.0},    {0, RESULTS_STATE_COMM, 1.0, 1.7},
        {1, RESULTS_STATE_COMPUTE, 0.0, 1.0}, {1, RESULTS_STATE_COMM, 1.0, 1.5},
        {1, RESULTS_STATE_IDLE, 1.5, 2.0},    {2, RESULTS_STATE_COMPUTE, 0.0, 1.2},
        {2, RESULTS_STATE_COMM, 1.2, 1.7},
    };
    for (size_t k = 0; k < 7; k++) {
        ck_assert_uint_eq(tl.iv[k].lane, want[k].lane);
        ck_assert_int_eq(tl.iv[k].state, want[k].s);
        ck_assert(tl.iv[k].start == want[k].a && tl.iv[k].end == want[k].b);
    }
    results_timeline_free(&tl);
    ok(results_query_timeline(q, 2, &tl, &err), &err);
    ck_assert_uint_eq(tl.n, 0);
    results_timeline_free(&tl);
    results_query_close(q);
}
END_TEST

START_TEST(choices_by_sweep_and_ids)
{
    build_db();
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, "s0", &runs, &err), &err);
    ck_assert_uint_eq(runs.n, 1);
    ck_assert_str_eq(runs.v[0].name, "old");
    results_runs_free(&runs);

    /* a list names runs whatever their status; duplicates count once; a range is a filter */
    ok(results_query_select(q, "11,4-5,5,12-1000", NULL, &runs, &err), &err);
    ck_assert_uint_eq(runs.n, 4);
    int64_t want[4] = {4, 5, 11, 12};
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(runs.v[i].id, want[i]);
    ck_assert_str_eq(runs.v[2].status, "running");
    ck_assert(!runs.v[2].has_summary && isnan(runs.v[2].time_to_target));
    ck_assert(isnan(runs.v[3].scaling_efficiency)); /* no sweep, no single run to compare */
    results_runs_free(&runs);

    ck_assert_int_eq(results_query_select(q, "3,999", NULL, &runs, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no run 999"), "%s", err.msg);
    ck_assert_uint_eq(runs.n, 0);
    ck_assert_int_eq(results_query_select(q, "500-600", NULL, &runs, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "500-600"), "%s", err.msg);
    ck_assert_int_eq(results_query_select(q, NULL, "nope", &runs, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no sweep \"nope\""), "%s", err.msg);

    results_run_view_t r;
    ck_assert_int_eq(results_query_run(q, 77, &r, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no run 77"), "%s", err.msg);
    results_query_close(q);
}
END_TEST

START_TEST(without_sweeps_the_recent_runs)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    for (int i = 0; i < RESULTS_RECENT_RUNS + 4; i++)
        add_run(db, "r", "allreduce", NULL, 0, &sweep_runs[1], i == 0 ? "failed" : "finished");
    results_db_close(db);
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    ck_assert_uint_eq(runs.n, RESULTS_RECENT_RUNS);
    for (size_t i = 0; i < runs.n; i++) /* the newest, in id order */
        ck_assert_int_eq(runs.v[i].id, 5 + (int64_t)i);
    ck_assert_msg(strstr(runs.what, "most recent"), "%s", runs.what);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

START_TEST(bad_databases)
{
    results_query_t *q = NULL;
    dt_err_t err = {""};
    ck_assert_int_eq(results_query_open(&q, db_path, &err), DT_ERR_INPUT); /* missing */
    ck_assert_ptr_null(q);
    ck_assert_msg(strstr(err.msg, db_path), "%s", err.msg);

    FILE *f = fopen(db_path, "w");
    fputs("not a database, just text that is long enough to be a header.....\n", f);
    fclose(f);
    ck_assert_int_eq(results_query_open(&q, db_path, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "not a dtsim results database"), "%s", err.msg);
    unlink(db_path);

    /* an empty dtsim database opens, but has nothing to show */
    results_db_t *db = NULL;
    ok(results_db_open(&db, db_path, &err), &err);
    results_db_close(db);
    q = query_open_ok();
    results_runs_t runs;
    ck_assert_int_eq(results_query_select(q, NULL, NULL, &runs, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no runs"), "%s", err.msg);
    results_query_close(q);
}
END_TEST

/* The most loaded host's memory: host 0 holds 9 MB (4 + 4 + 0 + 1), host 1 8 MB plus 4 MB over
 * the workers and activations not known (add_run). */
START_TEST(memory_of_the_most_loaded_host)
{
    build_db();
    results_query_t *q = query_open_ok();
    dt_err_t err = {""};
    results_memory_t m;
    int found = 0;
    ok(results_query_memory(q, 2, &m, &found, &err), &err); /* 8 workers: host 0, 9 MB */
    ck_assert_int_eq(found, 1);
    ck_assert(m.params == 4e6 && m.grads == 4e6 && m.optimizer == 0 && m.activations == 1e6);
    ok(results_query_memory(q, 9, &m, &found, &err), &err); /* 2 workers: host 1, 10 MB */
    ck_assert_int_eq(found, 1);
    ck_assert(m.params == 4e6 && m.grads == 4e6 && m.optimizer == 2e6 && isnan(m.activations));
    ok(results_query_memory(q, 10, &m, &found, &err), &err); /* 4 workers: a tie, worker 0 */
    ck_assert(m.optimizer == 0 && m.activations == 1e6);
    ok(results_query_memory(q, 999, &m, &found, &err), &err);
    ck_assert_int_eq(found, 0);
    ck_assert(isnan(m.params) && isnan(m.grads) && isnan(m.optimizer) && isnan(m.activations));
    results_query_close(q);
}
END_TEST

/* The clients query against the hand-worked figures of add_clients: the view's statistics
 * (Byzantine client left out), the honest accuracies sorted with their rounds; a run without
 * held-out samples, one without clients rows, and a file from before the clients table. */
START_TEST(clients_read_back)
{
    build_db();
    results_query_t *q = query_open_ok();
    dt_err_t err = {""};
    results_clients_t c;
    ok(results_query_clients(q, 2, &c, &err), &err);
    ck_assert_uint_eq(c.clients, N_HONEST + 2);
    ck_assert_uint_eq(c.byzantine, 1);
    ck_assert_uint_eq(c.never_aggregated, 2);
    ck_close(c.mean_rounds, 33.0 / 13, "mean rounds");
    ck_assert_int_eq(c.max_rounds, 5);
    ck_assert(c.p10_acc == 0.35);
    ck_assert(c.p90_acc == 0.80);
    ck_close(c.mean_acc, 6.58 / 11, "mean accuracy");
    ck_close(c.spread, 0.75, "spread");
    ck_assert_uint_eq(c.n, N_HONEST);
    for (int k = 0; k < N_HONEST; k++) {
        ck_assert_msg(c.acc[k] == sorted_acc[k], "acc[%d] = %g", k, c.acc[k]);
        ck_assert_int_eq(c.rounds[k], sorted_rounds[k]);
    }
    results_clients_free(&c);
    ok(results_query_clients(q, 4, &c, &err), &err); /* clients, none held out */
    ck_assert_uint_eq(c.clients, 4);
    ck_assert_uint_eq(c.never_aggregated, 1);
    ck_assert_uint_eq(c.n, 0);
    ck_assert(isnan(c.p10_acc) && isnan(c.mean_acc) && isnan(c.spread));
    results_clients_free(&c);
    ok(results_query_clients(q, 3, &c, &err), &err); /* not federated */
    ck_assert_uint_eq(c.clients, 0);
    ck_assert_uint_eq(c.n, 0);
    results_clients_free(&c);
    results_query_close(q);

    /* a version-2 file, read as it is: no clients, no error */
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h,
                                  "DROP VIEW client_fairness; DROP TABLE clients; "
                                  "PRAGMA user_version = 2",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    q = query_open_ok();
    ok(results_query_clients(q, 2, &c, &err), &err);
    ck_assert_uint_eq(c.clients, 0);
    ck_assert_uint_eq(c.n, 0);
    results_clients_free(&c);
    results_query_close(q);
}
END_TEST

/* What `dtsim run` tables at the end of a sweep: every run, whatever its status. */
START_TEST(sweep_runs_whatever_their_status)
{
    build_db();
    results_query_t *q = query_open_ok();
    dt_err_t err = {""};
    results_runs_t runs;
    ok(results_query_sweep(q, "s1", &runs, &err), &err);
    ck_assert_uint_eq(runs.n, N_SWEEP + 1);
    for (size_t i = 0; i < N_SWEEP; i++) {
        const results_run_view_t *r = &runs.v[i];
        ck_assert_int_eq(r->id, (int64_t)i + 2);
        ck_assert_int_eq(r->sweep_index, (long)i);
        ck_assert_str_eq(r->name, sweep_runs[i].name);
        ck_assert_str_eq(r->status, "finished");
        ck_assert(r->has_summary && r->bandwidth == sweep_runs[i].bandwidth);
        ck_assert(r->final_accuracy == eval_acc(i, 4));
        ck_assert(r->total_bytes == 1e8 * sweep_runs[i].workers * sweep_runs[i].sim_time);
    }
    const results_run_view_t *last = &runs.v[N_SWEEP];
    ck_assert_str_eq(last->name, "still-running");
    ck_assert_str_eq(last->status, "running");
    ck_assert_int_eq(last->sweep_index, (long)N_SWEEP);
    ck_assert(!last->has_summary && isnan(last->final_accuracy) && isnan(last->total_bytes));
    ck_assert(last->bandwidth == sweep_runs[1].bandwidth); /* from params, not the summary */
    results_runs_free(&runs);
    ok(results_query_sweep(q, "nope", &runs, &err), &err); /* no run yet: not an error */
    ck_assert_uint_eq(runs.n, 0);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* --- gnuplot strings ------------------------------------------------------------------------- */

START_TEST(gp_string_quoting)
{
    struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "'plain'"},
        {"a'b''", "'a''b'''''"},
        {"x\ny\tz\r\x7f", "'x y z  '"},
        {"50% %d %n", "'50% %d %n'"},
        {"`id` @m \\ \" $x {}", "'`id` @m \\ \" $x {}'"},
        {"bad\xff\xc3(", "'bad?\?('"},
        {"na\xc3\xafve \xe6\x9d\xb1", "'na\xc3\xafve \xe6\x9d\xb1'"},
        {"\xed\xa0\x80", "'?\?\?'"}, /* a surrogate is not UTF-8 */
        {"", "''"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = results_plot_gp_string(cases[i].in);
        ck_assert_str_eq(s, cases[i].out);
        free(s);
    }
    char longer[200];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    char *s = results_plot_gp_string(longer);
    ck_assert_uint_eq(strlen(s), RESULTS_PLOT_TEXT_MAX + 5); /* 'aaa...' */
    ck_assert_str_eq(s + RESULTS_PLOT_TEXT_MAX + 1, "...'");
    free(s);
}
END_TEST

/* Data travel as numbers only, %.10g each (integers of up to ten digits print as integers). */
START_TEST(gp_datablocks_hold_numbers)
{
    gp_t g;
    gp_init(&g);
    gp_block_begin(&g, "run%zu", (size_t)3);
    GP_ROW(&g, 1, 0.1, 1e-12, 1234567890.0, 12345678901.0, -0.35, (size_t)7 - 0.38);
    GP_ROW(&g, 1.0 / 3);
    gp_block_end(&g);
    fflush(g.f);
    ck_assert_str_eq(g.buf, "$run3 << EOD\n1 0.1 1e-12 1234567890 1.23456789e+10 -0.35 6.62\n"
                            "0.3333333333\nEOD\n");
    gp_free(&g);
}
END_TEST

/* The table of figures: every row filled, distinct file names, the known ones where users
 * know them, help that fits the --help column. */
START_TEST(figure_table_rows)
{
    static const struct {
        results_figure_t fig;
        const char *name;
    } known[] = {
        {RESULTS_FIGURE_ACCURACY, "accuracy"},   {RESULTS_FIGURE_ACCURACY_BYTES, "accuracy_bytes"},
        {RESULTS_FIGURE_BREAKDOWN, "breakdown"}, {RESULTS_FIGURE_TIME_TO_TARGET, "time_to_target"},
        {RESULTS_FIGURE_SCALING, "scaling"},     {RESULTS_FIGURE_TIMELINE, "timeline"},
        {RESULTS_FIGURE_FAULTS, "faults"},       {RESULTS_FIGURE_PARALLELISM, "parallelism"},
        {RESULTS_FIGURE_CLIENTS, "clients"},     {RESULTS_FIGURE_COST, "cost"},
        {RESULTS_FIGURE_STEP, "step"},
    };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        ck_assert_str_eq(results_figure_name(known[k].fig), known[k].name);
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        const char *name = results_figure_name((results_figure_t)fig);
        ck_assert_msg(name && name[0], "figure %d has no name", fig);
        for (int other = 0; other < fig; other++)
            ck_assert_str_ne(results_figure_name((results_figure_t)other), name);
        const char *help = results_figure_help((results_figure_t)fig);
        ck_assert_msg(help && help[0], "%s has no help", name);
        for (const char *line = help; *line;) {
            size_t len = strcspn(line, "\n");
            ck_assert_msg(len > 0 && len <= 57, "%s: help line of %zu characters", name, len);
            line += len + (line[len] == '\n');
        }
    }
}
END_TEST

/* --- figures -------------------------------------------------------------------------------- */

static int starts_with(const char *path, const char *magic, size_t n)
{
    char buf[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    return got == n && memcmp(buf, magic, n) == 0;
}

/* path is an image of the format its extension names: the format's magic bytes. */
static void ck_image(const char *path)
{
    struct stat sb;
    ck_assert_msg(stat(path, &sb) == 0, "%s missing", path);
    ck_assert_msg(sb.st_size > 1000, "%s: %lld bytes", path, (long long)sb.st_size);
    size_t l = strlen(path);
    if (l > 4 && !strcmp(path + l - 4, ".png"))
        ck_assert_msg(starts_with(path, "\x89PNG\r\n\x1a\n", 8), "%s: not a PNG", path);
    else if (l > 4 && !strcmp(path + l - 4, ".pdf"))
        ck_assert_msg(starts_with(path, "%PDF-", 5), "%s: not a PDF", path);
    else
        ck_assert_msg(starts_with(path, "<?xml", 5) || starts_with(path, "<svg", 4),
                      "%s: not an SVG", path);
}

/* Draws every figure of the selection (runs_spec, NULL: default) into dir/out in formats;
 * returns a bit per figure drawn; notes[fig] gets each note. */
static unsigned draw_all(const char *runs_spec, unsigned formats, int64_t timeline_run,
                         char notes[RESULTS_FIGURE_COUNT][512])
{
    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    mkdir(out_dir, 0777);
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, runs_spec, NULL, &runs, &err), &err);
    results_plot_opts_t o = {.out_dir = out_dir, .formats = formats, .timeline_run = timeline_run};
    unsigned drawn = 0;
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        results_plot_out_t out;
        ok(results_plot_draw(q, &runs, (results_figure_t)fig, &o, &out, &err), &err);
        /* a file per format asked (none: PNG), in the order png, svg, pdf */
        int i = 0;
        for (int fmt = 0; out.n_files && fmt < GP_FORMAT_COUNT; fmt++) {
            if (!((formats ? formats : RESULTS_PLOT_PNG) & 1u << fmt))
                continue;
            char want[512];
            snprintf(want, sizeof want, "%s/%s.%s", out_dir,
                     results_figure_name((results_figure_t)fig), gp_format_ext[fmt]);
            ck_assert_int_lt(i, out.n_files);
            ck_assert_str_eq(out.files[i++], want);
            ck_image(want);
        }
        ck_assert_int_eq(i, out.n_files);
        if (!out.n_files)
            ck_assert_msg(out.note[0], "%s skipped without a reason",
                          results_figure_name((results_figure_t)fig));
        drawn |= out.n_files ? 1u << fig : 0;
        if (notes)
            snprintf(notes[fig], 512, "%s", out.note);
        results_plot_out_free(&out);
    }
    results_runs_free(&runs);
    results_query_close(q);
    /* nothing but the figures: no temporary file left behind */
    DIR *d = opendir(out_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        ck_assert_msg(!strstr(e->d_name, ".tmp"), "left behind: %s", e->d_name);
    closedir(d);
    return drawn;
}

#define ALL_FIGURES ((1u << RESULTS_FIGURE_COUNT) - 1)

START_TEST(every_figure_of_the_sweep)
{
    build_db();
    char notes[RESULTS_FIGURE_COUNT][512];
    ck_assert_uint_eq(draw_all(NULL, RESULTS_PLOT_PNG, 0, notes), ALL_FIGURES);
    /* sync-ps-1G never reached its target */
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_TIME_TO_TARGET], "1 run "), "%s",
                  notes[RESULTS_FIGURE_TIME_TO_TARGET]);
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_TIMELINE], "run 3"), "%s",
                  notes[RESULTS_FIGURE_TIMELINE]);
    /* runs 3, 5-10 have no clients rows, run 4 no held-out samples */
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_CLIENTS], "7 runs without clients rows") &&
                      strstr(notes[RESULTS_FIGURE_CLIENTS], "1 run whose clients have no "
                                                            "held-out samples"),
                  "%s", notes[RESULTS_FIGURE_CLIENTS]);
}
END_TEST

/* Whole SVG file, with the XML escapes gnuplot writes turned back into characters. */
static char *svg_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    static const char *const ent[][2] = {{"&lt;", "<"},   {"&gt;", ">"},  {"&quot;", "\""},
                                         {"&apos;", "'"}, {"&#39;", "'"}, {"&amp;", "&"}};
    char *o = buf;
    for (const char *p = buf; *p;) {
        size_t k = 0;
        for (; k < sizeof ent / sizeof ent[0]; k++)
            if (!strncmp(p, ent[k][0], strlen(ent[k][0])))
                break;
        if (k < sizeof ent / sizeof ent[0]) {
            *o++ = ent[k][1][0];
            p += strlen(ent[k][0]);
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return buf;
}

START_TEST(every_format)
{
    build_db();
    ck_assert_uint_eq(
        draw_all(NULL, RESULTS_PLOT_PNG | RESULTS_PLOT_SVG | RESULTS_PLOT_PDF, 0, NULL),
        ALL_FIGURES);
    char p[256];
    snprintf(p, sizeof p, "%s/out/scaling.svg", dir);
    char *s = svg_text(p);
    ck_assert_msg(strstr(s, "single (the baseline)") && strstr(s, "ideal (1)"), "scaling key");
    ck_assert_msg(strstr(s, "Scaling efficiency vs number of workers"), "scaling title");
    ck_assert_msg(strstr(s, "Speedup vs number of workers") &&
                      strstr(s, "ideal (speedup = workers)"),
                  "scaling: the speedup panel");
    free(s);
    snprintf(p, sizeof p, "%s/out/time_to_target.svg", dir);
    s = svg_text(p);
    ck_assert_msg(strstr(s, "allreduce, 8 workers") && strstr(s, "sync-ps, 8 workers") &&
                      strstr(s, "single, 1 worker"),
                  "time to target key");
    ck_assert_msg(strstr(s, "Time to 70% accuracy vs bandwidth"), "time to target title");
    free(s);
    snprintf(p, sizeof p, "%s/out/parallelism.svg", dir);
    s = svg_text(p);
    ck_assert_msg(strstr(s, "Time per step") && strstr(s, "Memory of the most loaded host") &&
                      strstr(s, "optimizer state") && strstr(s, "activations"),
                  "parallelism titles and key");
    free(s);
    /* the view's figures of run 2 in its key; run 4 (no held-out samples) not drawn */
    snprintf(p, sizeof p, "%s/out/clients.svg", dir);
    s = svg_text(p);
    ck_assert_msg(strstr(s, "Each client's held-out accuracy, sorted") &&
                      strstr(s, "(Byzantine clients left out)") &&
                      strstr(s, "Held-out accuracy vs rounds taken part"),
                  "clients titles");
    ck_assert_msg(strstr(s, "allreduce-1G: p10 35.0%, mean 59.8%, spread 75.0 points"),
                  "clients: run 2's fairness in the key");
    ck_assert_msg(strstr(s, "2 of 13 clients never aggregated, 2.5 rounds each on average"),
                  "clients: run 2's participation in the caption");
    ck_assert_msg(!strstr(s, "sync-ps-1G"), "clients: a run without held-out accuracies");
    free(s);
    snprintf(p, sizeof p, "%s/out/cost.svg", dir);
    s = svg_text(p);
    ck_assert_msg(strstr(s, "Cost vs step time") && strstr(s, "Energy vs step time") &&
                      strstr(s, "$ per 1000 samples") && strstr(s, "J per sample"),
                  "cost titles");
    free(s);
    /* no format is PNG only, SVG alone is SVG alone (draw_all checks the files) */
    ck_assert(draw_all("2-4", 0, 0, NULL) & 1u << RESULTS_FIGURE_ACCURACY);
    ck_assert(draw_all("2-4", RESULTS_PLOT_SVG, 0, NULL) & 1u << RESULTS_FIGURE_ACCURACY);
}
END_TEST

START_TEST(figures_skipped_with_a_reason)
{
    build_db();
    char notes[RESULTS_FIGURE_COUNT][512];
    /* one bandwidth: 10G, 2w, 4w and single */
    unsigned drawn = draw_all("3,8-10", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_TIME_TO_TARGET));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_TIME_TO_TARGET], "cluster.bandwidth") &&
                      strstr(notes[RESULTS_FIGURE_TIME_TO_TARGET], "10 Gb/s"),
                  "%s", notes[RESULTS_FIGURE_TIME_TO_TARGET]);
    ck_assert(drawn & 1u << RESULTS_FIGURE_SCALING);
    /* one worker count: the bandwidth runs; no timeline rows among 5-7 */
    drawn = draw_all("5-7", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_SCALING));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_SCALING], "cluster.workers"), "%s",
                  notes[RESULTS_FIGURE_SCALING]);
    ck_assert(drawn & 1u << RESULTS_FIGURE_TIME_TO_TARGET);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_TIMELINE));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_TIMELINE], "timeline rows"), "%s",
                  notes[RESULTS_FIGURE_TIMELINE]);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_FAULTS));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_FAULTS], "none of the selected runs has a fault"),
                  "%s", notes[RESULTS_FIGURE_FAULTS]);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_CLIENTS));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_CLIENTS], "data.client_holdout"), "%s",
                  notes[RESULTS_FIGURE_CLIENTS]);
    /* clients rows without held-out samples are no figure either */
    drawn = draw_all("4", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_CLIENTS));
    /* runs without energy rows (before schema version 6): no cost figure; without a price,
     * the energy panel alone */
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h,
                                  "UPDATE energy SET dollars_per_sample = NULL WHERE run = 5;"
                                  "DELETE FROM energy WHERE run IN (6, 7)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    drawn = draw_all("6-7", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_COST));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_COST], "energy row"), "%s",
                  notes[RESULTS_FIGURE_COST]);
    drawn = draw_all("5-7", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(drawn & 1u << RESULTS_FIGURE_COST);
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_COST], "1 of 1 runs without a price"), "%s",
                  notes[RESULTS_FIGURE_COST]);
    sqlite3_close(h);
    /* ... unless the timeline's run is named */
    drawn = draw_all("5-7", RESULTS_PLOT_PNG, TIMELINE_RUN, notes);
    ck_assert(drawn & 1u << RESULTS_FIGURE_TIMELINE);
    /* workers vary, but the sweep has no single run */
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    ck_assert_int_eq(add_run(db, "s2-2w", "allreduce", "s2", 0, &sweep_runs[7], "finished"), 13);
    ck_assert_int_eq(add_run(db, "s2-4w", "allreduce", "s2", 1, &sweep_runs[8], "finished"), 14);
    results_db_close(db);
    drawn = draw_all("13-14", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_SCALING));
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_SCALING], "single"), "%s",
                  notes[RESULTS_FIGURE_SCALING]);
    /* a version-5 file, read as it is: no energy table, no cost figure, no error */
    ck_assert_int_eq(sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(h, "DROP TABLE energy; PRAGMA user_version = 5", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    drawn = draw_all("13-14", RESULTS_PLOT_PNG, 0, notes);
    ck_assert(!(drawn & 1u << RESULTS_FIGURE_COST));
}
END_TEST

/* Names that would run commands or break the script if they reached gnuplot as anything but
 * single-quoted strings. */
static char hostile[4][256], evil_strategy[256], evil_host[256];

static void build_hostile_db(void)
{
    snprintf(hostile[0], sizeof hostile[0], "x'); system(\"touch %s/pwned1\"); print('", dir);
    snprintf(hostile[1], sizeof hostile[1], "`touch %s/pwned2` ; @ \" \\ ^ _ {} %%s %%n &<", dir);
    snprintf(hostile[2], sizeof hostile[2], "a\nplot '<touch %s/pwned3' @x", dir);
    snprintf(hostile[3], sizeof hostile[3], "`touch %s/pwned6`'", dir);
    snprintf(evil_strategy, sizeof evil_strategy, "ev'il`touch %s/pwned4`", dir);
    snprintf(evil_host, sizeof evil_host, "node`touch %s/pwned5`'\nset output", dir);
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    test_run_t a = sweep_runs[0], b = sweep_runs[7], c = sweep_runs[6], d = sweep_runs[2];
    int64_t id = add_run(db, hostile[0], "allreduce", "evil", 0, &a, "finished");
    add_run(db, hostile[1], evil_strategy, "evil", 1, &b, "finished");
    add_run(db, hostile[2], "single", "evil", 2, &c, "finished");
    add_run(db, hostile[3], "allreduce", "evil", 3, &d, "finished");
    add_timeline(db, id, evil_host);
    add_faults(db, id + 1, evil_host);
    for (int64_t k = 0; k < 4; k++)
        add_clients(db, id + k);
    /* participation that differs: said per run, in the key under the second panel */
    results_client_t idle = {.client = 99, .rounds = 0, .test_acc = NAN, .test_loss = NAN};
    ok(results_client_add(db, id + 3, &idle, &err), &err);
    results_db_close(db);
}

START_TEST(hostile_names_stay_text)
{
    build_hostile_db();
    ck_assert_uint_eq(draw_all(NULL, RESULTS_PLOT_PNG | RESULTS_PLOT_SVG, 0, NULL), ALL_FIGURES);
    for (int i = 1; i <= 6; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/pwned%d", dir, i);
        ck_assert_msg(!file_exists(p), "%s was created: a name was executed", p);
    }
    /* verbatim in the legends and tic labels; the newline became a blank */
    char shown2[256];
    snprintf(shown2, sizeof shown2, "%s", hostile[2]);
    *strchr(shown2, '\n') = ' ';
    const char *figs[] = {"accuracy", "accuracy_bytes", "breakdown", "clients"};
    for (size_t k = 0; k < 4; k++) {
        char p[256];
        snprintf(p, sizeof p, "%s/out/%s.svg", dir, figs[k]);
        char *s = svg_text(p);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(strstr(s, i == 2 ? shown2 : hostile[i]), "%s: \"%s\" not shown", figs[k],
                          hostile[i]);
        free(s);
    }
    char p[256];
    snprintf(p, sizeof p, "%s/out/time_to_target.svg", dir);
    char *s = svg_text(p);
    ck_assert_msg(strstr(s, evil_strategy), "strategy \"%s\" not shown", evil_strategy);
    free(s);
    snprintf(p, sizeof p, "%s/out/timeline.svg", dir);
    s = svg_text(p);
    char lane[300];
    snprintf(lane, sizeof lane, "worker 0 (%s)", evil_host);
    *strchr(lane, '\n') = ' ';
    ck_assert_msg(strstr(s, lane), "lane \"%s\" not shown", lane);
    ck_assert_msg(strstr(s, hostile[0]), "timeline title");
    free(s);
}
END_TEST

/* --- what the figures draw: their scripts ------------------------------------------------- */

/* The grid: 4 strategies x 3 bandwidths, runs 1..12 of sweep "g", named like a sweep's runs
 * "grid/kind=K,bandwidth=B". A strategy's runs send the same bytes for the same accuracies at
 * every bandwidth (their curves against bytes are one), while time shrinks with bandwidth. */
static const char *const grid_kinds[] = {"sync-ps", "async-ps", "allreduce", "local-sgd"};
static const double grid_gbps[] = {1, 10, 100};
#define GRID_KINDS 4
#define GRID_BWS 3

static int64_t add_plain_run(results_db_t *db, const char *name, const char *strategy,
                             const char *sweep, long index, double gbps, double sim_time,
                             long steps)
{
    dt_err_t err = {""};
    results_run_info_t info = {name, strategy, "[run]\n", "0.1.0", "3.32", 1, sweep, index};
    int64_t id = 0;
    ok(results_run_begin(db, &info, &id, &err), &err);
    ok(results_param_add(db, id, "cluster.workers", "8", 8, &err), &err);
    ok(results_param_add(db, id, "cluster.bandwidth", "x", gbps * 1.25e8, &err), &err);
    results_summary_t sum = {0.8, 0.5, sim_time, NAN, 0.9, 1e9, 0.5, 0.4, 0.1, steps};
    ok(results_run_end(db, id, "finished", &sum, &err), &err);
    return id;
}

static void build_grid_db(void)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    for (int k = 0; k < GRID_KINDS; k++)
        for (int b = 0; b < GRID_BWS; b++) {
            char name[64];
            snprintf(name, sizeof name, "grid/kind=%s,bandwidth=%gGbps", grid_kinds[k],
                     grid_gbps[b]);
            int64_t id = add_plain_run(db, name, grid_kinds[k], "g", k * GRID_BWS + b, grid_gbps[b],
                                       10.0 * (k + 1) / grid_gbps[b], 100);
            for (int e = 1; e <= 10; e++)
                ok(results_eval_add(db, id, e * (k + 1) / grid_gbps[b], 10 * e, 320.0 * e,
                                    1e9 * e * (k + 1), 1.0 / e, 0.3 + 0.05 * e - 0.02 * k, &err),
                   &err);
        }
    results_db_close(db);
}

/* The script of figure fig of runs_spec (NULL: the default choice) in format at w x h pixels
 * (0 x 0: its own), malloc'ed; NULL when the figure is skipped. */
static char *script_of(const char *runs_spec, results_figure_t fig, int w, int h,
                       gp_format_t format)
{
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, runs_spec, NULL, &runs, &err), &err);
    results_plot_opts_t o = {.out_dir = dir, .width = w, .height = h};
    results_plot_out_t out;
    char *script = NULL;
    ok(results_plot_script(q, &runs, fig, &o, format, 0, &script, &out, &err), &err);
    results_plot_out_free(&out);
    results_runs_free(&runs);
    results_query_close(q);
    return script;
}

static size_t count_of(const char *s, const char *end, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(s, needle); p && (!end || p < end); p = strstr(p + 1, needle))
        n++;
    return n;
}

/* What follows each `after` in s[0..end) up to the next `until`, into out[i] (at most max of
 * them, 96 characters each); returns the count. */
static size_t fields(const char *s, const char *end, const char *after, const char *until,
                     char out[][96], size_t max)
{
    size_t n = 0;
    for (const char *p = strstr(s, after); p && (!end || p < end) && n < max;
         p = strstr(p + 1, after)) {
        const char *a = p + strlen(after), *b = strstr(a, until);
        ck_assert_ptr_nonnull(b);
        snprintf(out[n++], 96, "%.*s", (int)(b - a), a);
    }
    return n;
}

/* The colour ("lc rgb '#4e79a7'") and the dash ("dt (6,3)") of a style. */
static void style_parts(const char *style, char colour[32], char dash[48])
{
    const char *lc = strstr(style, "lc rgb '"), *dt = strstr(style, " dt ");
    ck_assert_msg(lc && dt, "style \"%s\" without a colour and a dash", style);
    snprintf(colour, 32, "%.9s", lc + 8);
    snprintf(dash, 48, "%.*s", (int)strcspn(dt + 4, " "), dt + 4);
}

/* styles[0..n) differ in colour and dash pairs, and also each in colour and in dash alone
 * when alone is set. */
static void ck_distinct_styles(char styles[][96], size_t n, int alone, const char *what)
{
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++) {
            char ca[32], da[48], cb[32], db[48];
            style_parts(styles[a], ca, da);
            style_parts(styles[b], cb, db);
            ck_assert_msg(strcmp(ca, cb) || strcmp(da, db), "%s: curves %zu and %zu look alike: %s",
                          what, a, b, styles[a]);
            if (alone)
                ck_assert_msg(strcmp(ca, cb) && strcmp(da, db),
                              "%s: curves %zu and %zu share a colour or a dash: %s, %s", what, a, b,
                              styles[a], styles[b]);
        }
}

/* Curve i's style: the first GP_DASHES differ in colour and in dash, 40 in the pair. */
START_TEST(curve_styles_differ)
{
    char styles[40][96];
    for (size_t i = 0; i < 40; i++) {
        gp_t g;
        gp_init(&g);
        gp_curve_style(&g, i);
        fflush(g.f);
        snprintf(styles[i], sizeof styles[i], "%s", g.buf);
        gp_free(&g);
    }
    ck_distinct_styles(styles, GP_DASHES, 1, "gp_curve_style");
    ck_distinct_styles(styles, 40, 0, "gp_curve_style");
}
END_TEST

/* Curves a and b of styles share a colour exactly when same_colour, a dash exactly when
 * same_dash. */
static void ck_look_pair(char styles[][96], size_t a, size_t b, int same_colour, int same_dash,
                         const char *what)
{
    char ca[32], da[48], cb[32], db[48];
    style_parts(styles[a], ca, da);
    style_parts(styles[b], cb, db);
    ck_assert_msg((strcmp(ca, cb) == 0) == same_colour, "%s: curves %zu and %zu: colours %s, %s",
                  what, a, b, ca, cb);
    ck_assert_msg((strcmp(da, db) == 0) == same_dash, "%s: curves %zu and %zu: dashes %s, %s", what,
                  a, b, da, db);
}

/* Legend labels keep the first of keys swept together (the optimizer, not its learning
 * rate) and name a value that does not read alone: a strategy and a quantity with its unit
 * stand bare (the bandwidth, here dropped: it tells no two runs apart), a number or another
 * word gets its key ("allreduce optimizer=adamw workers=8"); labels of values alone ("0.01
 * 8") told nobody which key. */
START_TEST(legend_labels_name_their_keys)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    static const char *const names[] = {
        "tup/kind=allreduce,optimizer=sgd,lr=0.2,workers=4,bandwidth=1Gbps",
        "tup/kind=allreduce,optimizer=adamw,lr=0.01,workers=4,bandwidth=1Gbps",
        "tup/kind=allreduce,optimizer=adamw,lr=0.01,workers=8,bandwidth=1Gbps",
        "tup/kind=local-sgd,optimizer=adamw,lr=0.01,workers=8,bandwidth=1Gbps",
    };
    static const char *const want[] = {
        "allreduce optimizer=sgd workers=4",
        "allreduce optimizer=adamw workers=4",
        "allreduce optimizer=adamw workers=8",
        "local-sgd optimizer=adamw workers=8",
    };
    for (int i = 0; i < 4; i++) {
        int64_t id =
            add_plain_run(db, names[i], i < 3 ? "allreduce" : "local-sgd", "t", i, 1, 10.0, 100);
        for (int e = 1; e <= 3; e++)
            ok(results_eval_add(db, id, e, 10 * e, 320.0 * e, 1e6 * e, 1.0 / e,
                                0.3 + 0.1 * e + 0.01 * i, &err),
               &err);
    }
    results_db_close(db);
    char *s = script_of(NULL, RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    char labels[16][96];
    ck_assert_msg(fields(s, NULL, " title '", "'", labels, 16) == 4, "%s", s);
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (int j = 0; j < 4; j++)
            found |= !strcmp(labels[j], want[i]);
        ck_assert_msg(found, "no label \"%s\" (first: \"%s\")", want[i], labels[0]);
    }
    free(s);
}
END_TEST

/* Up to 8 curves: one plot, a colour per strategy and a dash per bandwidth, the key grouped
 * by strategy (runs 1-8: sync-ps and async-ps at 1, 10, 100 Gb/s, allreduce at 1, 10). Past
 * 8: a panel per bandwidth (3 panels of 4 beat 4 of 3), each strategy drawn alike in every
 * panel, in a colour and dash of its own, one key shared in the free fourth cell. */
START_TEST(many_curves_make_panels)
{
    build_grid_db();
    char *s = script_of("1-8", RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    ck_assert_uint_eq(count_of(s, NULL, "\nset origin "), 1);
    ck_assert_uint_eq(count_of(s, NULL, "\nset title '"), 0);
    char styles[16][96], labels[16][96];
    ck_assert_uint_eq(fields(s, NULL, "keyentry with linespoints ", " ps", styles, 16), 8);
    ck_assert_uint_eq(fields(s, NULL, " title '", "'", labels, 16), 8);
    for (size_t a = 0; a < 8; a++) {
        char want[64];
        snprintf(want, sizeof want, "%s %gGbps", grid_kinds[a / 3], grid_gbps[a % 3]);
        ck_assert_str_eq(labels[a], want);
        for (size_t b = a + 1; b < 8; b++)
            ck_look_pair(styles, a, b, a / 3 == b / 3, a % 3 == b % 3, "8 runs");
    }
    free(s);

    s = script_of(NULL, RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    ck_assert_uint_eq(count_of(s, NULL, "\nset origin "), GRID_BWS + 1);
    const char *panel[GRID_BWS + 1];
    char title[32];
    for (int b = 0; b < GRID_BWS; b++) {
        snprintf(title, sizeof title, "\nset title '%g Gb/s'\n", grid_gbps[b]);
        panel[b] = strstr(s, title);
        ck_assert_msg(panel[b] && (b == 0 || panel[b] > panel[b - 1]), "no panel %s", title);
    }
    panel[GRID_BWS] = strstr(panel[GRID_BWS - 1], "\nunset border\n");
    ck_assert_ptr_nonnull(panel[GRID_BWS]);
    char first[GRID_KINDS][96];
    for (int b = 0; b < GRID_BWS; b++) {
        size_t n = fields(panel[b], panel[b + 1], "with lines ", " notitle", styles, 16);
        ck_assert_uint_eq(n, GRID_KINDS);
        /* strategies alone tell a panel's curves apart: each its colour, and its dash (no
         * other value claims the dash), never colour alone */
        for (size_t x = 0; x < n; x++)
            for (size_t y = x + 1; y < n; y++)
                ck_look_pair(styles, x, y, 0, 0, "a panel");
        for (size_t k = 0; k < n; k++) {
            if (b == 0)
                strcpy(first[k], styles[k]);
            ck_assert_str_eq(styles[k], first[k]); /* a strategy looks alike in every panel */
        }
        ck_assert_uint_eq(count_of(panel[b], panel[b + 1], "keyentry"), 0);
    }
    char keys[8][96];
    ck_assert_uint_eq(fields(panel[GRID_BWS], NULL, "title '", "'", keys, 8), GRID_KINDS);
    for (int k = 0; k < GRID_KINDS; k++)
        ck_assert_str_eq(keys[k], grid_kinds[k]);
    free(s);
}
END_TEST

/* Against bytes, a strategy's three runs are one curve, drawn once and keyed with the
 * bandwidths it stands for; against time they are three. */
START_TEST(equal_curves_drawn_once)
{
    build_grid_db();
    char *s = script_of(NULL, RESULTS_FIGURE_ACCURACY_BYTES, 0, 0, GP_PNG);
    ck_assert_uint_eq(count_of(s, NULL, " with lines "), GRID_KINDS);
    char keys[8][96];
    ck_assert_uint_eq(fields(s, NULL, "title '", "'", keys, 8), GRID_KINDS);
    for (int k = 0; k < GRID_KINDS; k++) {
        char want[96];
        snprintf(want, sizeof want, "%s (1Gbps, 10Gbps, 100Gbps)", grid_kinds[k]);
        ck_assert_str_eq(keys[k], want);
    }
    ck_assert_msg(strstr(s, "their curves are the same"), "no caption for the merged curves");
    free(s);
    s = script_of(NULL, RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    ck_assert_uint_eq(count_of(s, NULL, " with lines "), GRID_KINDS * GRID_BWS);
    free(s);
}
END_TEST

/* Titles are dtsim's short fixed text: every figure's title and every panel's fit in
 * FIG_TITLE_MAX characters, and none holds a run's name, which goes to the caption. */
START_TEST(titles_are_short_and_names_go_to_the_caption)
{
    build_grid_db();
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        char *s = script_of(NULL, (results_figure_t)fig, 0, 0, GP_PNG);
        if (!s)
            continue;
        char titles[16][96];
        size_t n = fields(s, NULL, "set label 9000 '", "'", titles, 16);
        n += fields(s, NULL, "\nset title '", "'\n", titles + n, 16 - n);
        for (size_t t = 0; t < n; t++) {
            ck_assert_msg(strlen(titles[t]) <= FIG_TITLE_MAX, "%s: title \"%s\" too long",
                          results_figure_name((results_figure_t)fig), titles[t]);
            ck_assert_msg(!strstr(titles[t], "grid"), "%s: a name in the title \"%s\"",
                          results_figure_name((results_figure_t)fig), titles[t]);
        }
        if (fig == RESULTS_FIGURE_ACCURACY || fig == RESULTS_FIGURE_BREAKDOWN)
            ck_assert_msg(strstr(s, "set label 9001 'runs of grid"), "%s: no caption",
                          results_figure_name((results_figure_t)fig));
        free(s);
    }
}
END_TEST

/* Whether the file at path holds text (binary files included). */
static int file_holds(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    size_t len = strlen(text);
    int found = 0;
    for (long i = 0; i + (long)len <= n && !found; i++)
        found = memcmp(buf + i, text, len) == 0;
    free(buf);
    return found;
}

/* A PNG's width and height (its IHDR chunk). */
static void png_size(const char *path, unsigned *w, unsigned *h)
{
    unsigned char b[24];
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(b, 1, 24, f), 24);
    fclose(f);
    *w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
    *h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
}

/* --size is the pixels of a PNG and an SVG and W/96 x H/96 inches of a PDF page (72 points an
 * inch); a figure of stacked panels keeps its height in proportion. */
START_TEST(size_reaches_every_format)
{
    build_db();
    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    mkdir(out_dir, 0777);
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    results_plot_opts_t o = {.out_dir = out_dir,
                             .formats = RESULTS_PLOT_PNG | RESULTS_PLOT_SVG | RESULTS_PLOT_PDF,
                             .width = 640,
                             .height = 420};
    results_plot_out_t out;
    ok(results_plot_draw(q, &runs, RESULTS_FIGURE_BREAKDOWN, &o, &out, &err), &err);
    ck_assert_int_eq(out.n_files, 3);
    unsigned w, h;
    png_size(out.files[0], &w, &h);
    ck_assert(w == 640 && h == 420);
    char *svg = svg_text(out.files[1]);
    ck_assert_msg(strstr(svg, "width=\"640\" height=\"420\""), "SVG size");
    free(svg);
    char box[64];
    snprintf(box, sizeof box, "/MediaBox [ 0 0 %g %g ]", 640 * 72 / 96.0, 420 * 72 / 96.0);
    ck_assert_msg(file_holds(out.files[2], box), "PDF page not %s", box);
    results_plot_out_free(&out);
    /* stacked panels: as tall against 420 as they are against 600 by default */
    o.formats = RESULTS_PLOT_PNG;
    ok(results_plot_draw(q, &runs, RESULTS_FIGURE_PARALLELISM, &o, &out, &err), &err);
    png_size(out.files[0], &w, &h);
    results_plot_out_free(&out);
    o.width = o.height = 0;
    unsigned w0, h0;
    ok(results_plot_draw(q, &runs, RESULTS_FIGURE_PARALLELISM, &o, &out, &err), &err);
    png_size(out.files[0], &w0, &h0);
    results_plot_out_free(&out);
    ck_assert(w == 640 && w0 == 1000 && h0 > 600);
    ck_assert_int_eq(h, (unsigned)lround(420.0 * h0 / 600));
    char *s = script_of(NULL, RESULTS_FIGURE_BREAKDOWN, 640, 420, GP_PDF);
    ck_assert_msg(strstr(s, "set terminal pdfcairo size 6.667in,4.375in "), "pdf terminal");
    free(s);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* step.png: a bar per run whose segments stack its parts (each starts where the one below
 * ended) to its step, sim_time / 40 steps, in ms (the longest under a second); the parts no
 * run has are neither drawn nor in the key; a run without a breakdown (stored before schema
 * version 8) is left out, and the note says so. */
START_TEST(step_figure_stacks_the_parts_to_the_step)
{
    build_db();
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    add_plain_run(db, "no-breakdown", "allreduce", "s1", 99, 10, 2.0, 40);
    results_db_close(db);
    /* the sweep (runs 2-10), the run still running (11) and the one without a breakdown */
    char *s = script_of("2-11,13", RESULTS_FIGURE_STEP, 0, 0, GP_PNG);
    ck_assert_ptr_nonnull(s);
    static const int used[] = {RESULTS_PART_COMPUTE, RESULTS_PART_DATA, RESULTS_PART_WAIT};
    for (int k = 0; k < RESULTS_PART_COUNT; k++) {
        char block[32];
        snprintf(block, sizeof block, "$part%d << EOD", k);
        int want = k == used[0] || k == used[1] || k == used[2];
        ck_assert_msg(!strstr(s, block) == !want, "%s %s", results_part_names[k],
                      want ? "not drawn" : "drawn");
        snprintf(block, sizeof block, "title '%s'", results_part_names[k]);
        ck_assert_msg(!strstr(s, block) == !want, "%s %s the key", results_part_names[k],
                      want ? "not in" : "in");
    }
    ck_assert_msg(strstr(s, "set ylabel 'ms per step (simulated)'"), "%s", s);
    /* the bars, segment by segment: b mid xlow xhigh lo hi */
    double top[N_SWEEP] = {0};
    for (int u = 0; u < 3; u++) {
        char block[32];
        snprintf(block, sizeof block, "$part%d << EOD\n", used[u]);
        const char *row = strstr(s, block) + strlen(block);
        for (size_t b = 0; b < N_SWEEP; b++) {
            double x, mid, xl, xh, lo, hi;
            ck_assert_int_eq(sscanf(row, "%lf %lf %lf %lf %lf %lf", &x, &mid, &xl, &xh, &lo, &hi),
                             6);
            ck_assert(x == (double)b && lo <= hi);
            ck_assert_msg(fabs(lo - top[b]) <= 1e-9, "bar %zu: %s starts at %g, not %g", b,
                          results_part_names[used[u]], lo, top[b]);
            top[b] = hi;
            row = strchr(row, '\n') + 1;
        }
        ck_assert_msg(!strncmp(row, "EOD", 3), "more bars than runs with a breakdown");
    }
    /* each bar's top is one run's step, in ms, every run's once */
    double want[N_SWEEP];
    for (size_t i = 0; i < N_SWEEP; i++)
        want[i] = 1e3 * sweep_runs[i].sim_time / 40;
    qsort(want, N_SWEEP, sizeof *want, dbl_cmp_test);
    qsort(top, N_SWEEP, sizeof *top, dbl_cmp_test);
    for (size_t i = 0; i < N_SWEEP; i++)
        ck_assert_msg(fabs(top[i] - want[i]) <= 1e-9 * want[i], "a bar of %.12g ms, want %.12g",
                      top[i], want[i]);
    free(s);
    char notes[RESULTS_FIGURE_COUNT][512];
    ck_assert(draw_all("2-11,13", RESULTS_PLOT_PNG, 0, notes) & 1u << RESULTS_FIGURE_STEP);
    ck_assert_msg(strstr(notes[RESULTS_FIGURE_STEP], "leaves out 2 runs without a breakdown"), "%s",
                  notes[RESULTS_FIGURE_STEP]);
}
END_TEST

/* --size draws a figure larger or smaller with the same layout: every font and line scaled
 * by the smaller ratio of the size to 1000 x 600 (fontscale and linewidth on the terminal),
 * markers too (the variable marker, before it), the script after the terminal line the same
 * as at the figure's own size (so text grows with the image: at 1920 x 1080 it had come out
 * smaller than at 1000 x 600); fonts no smaller than 0.6 of their size. */
START_TEST(text_grows_with_the_size)
{
    build_db();
    static const results_figure_t figs[] = {RESULTS_FIGURE_ACCURACY, RESULTS_FIGURE_BREAKDOWN,
                                            RESULTS_FIGURE_PARALLELISM};
    for (size_t k = 0; k < sizeof figs / sizeof *figs; k++) {
        char *own = script_of(NULL, figs[k], 0, 0, GP_PNG);
        char *big = script_of(NULL, figs[k], 2000, 1200, GP_PNG);
        ck_assert_ptr_nonnull(own);
        ck_assert_ptr_nonnull(big);
        ck_assert_msg(strstr(own, "fontscale 1 linewidth 1 "), "%.200s", strstr(own, "set term"));
        ck_assert_msg(strstr(big, "fontscale 2 linewidth 2 "), "%.200s", strstr(big, "set term"));
        ck_assert_msg(strstr(own, "\nmarker = 1\n") && strstr(big, "\nmarker = 2\n"), "markers");
        const char *own_body = strchr(strstr(own, "set terminal"), '\n');
        const char *big_body = strchr(strstr(big, "set terminal"), '\n');
        ck_assert_msg(!strcmp(own_body, big_body), "figure %zu: the layout moved with --size", k);
        free(own);
        free(big);
    }
    char *svg = script_of(NULL, RESULTS_FIGURE_ACCURACY, 1920, 1080, GP_SVG);
    ck_assert_msg(strstr(svg, "svg size 1920,") && strstr(svg, " fontscale 2.39994 linewidth 1.8 "),
                  "%.200s", strstr(svg, "set term"));
    free(svg);
    char *small = script_of(NULL, RESULTS_FIGURE_ACCURACY, 400, 300, GP_PNG);
    ck_assert_msg(strstr(small, "fontscale 0.6 linewidth 0.6 "), "%.200s",
                  strstr(small, "set term"));
    free(small);
}
END_TEST

/* The bandwidth lesson's 8 runs (sync-ps and allreduce at 100 Mb/s, 1, 10 and 100 Gb/s, named
 * "lesson/kind=K,bandwidth=B"), 20 evaluations each. */
static void build_lesson_db(void)
{
    static const char *const kinds[] = {"sync-ps", "allreduce"};
    static const char *const bws[] = {"100Mbps", "1Gbps", "10Gbps", "100Gbps"};
    static const double gbps[] = {0.1, 1, 10, 100};
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    for (int k = 0; k < 2; k++)
        for (int b = 0; b < 4; b++) {
            char name[64];
            snprintf(name, sizeof name, "lesson/kind=%s,bandwidth=%s", kinds[k], bws[b]);
            int64_t id = add_plain_run(db, name, kinds[k], "l", 4 * k + b, gbps[b],
                                       (k + 1) * 20 / gbps[b], 200);
            for (int e = 1; e <= 20; e++)
                ok(results_eval_add(db, id, e * (k + 1) / gbps[b], 10 * e, 320.0 * e, 1e8 * e,
                                    1.0 / e, 0.5 + 0.017 * e - 0.01 * k, &err),
                   &err);
        }
    results_db_close(db);
}

/* The pattern script defines as dash type dt ("set dashtype DT (a,b,...)"), in the terminal's
 * units, into v; the count, 0 for "solid". */
static int dash_pattern(const char *script, const char *dt, double *v, int max)
{
    char head[64];
    snprintf(head, sizeof head, "\nset dashtype %s ", dt);
    const char *p = strstr(script, head);
    ck_assert_msg(p, "dash type %s not defined", dt);
    p += strlen(head);
    if (!strncmp(p, "solid\n", 6))
        return 0;
    ck_assert_msg(*p == '(', "dash type %s: %.40s", dt, p);
    int n = 0;
    for (char *e = (char *)p; *e != ')' && n < max; n++) {
        p = e + 1; /* past the ( or the , */
        v[n] = strtod(p, &e);
        ck_assert_msg(e != p && (*e == ',' || *e == ')'), "dash type %s", dt);
    }
    return n;
}

/* What a dash pattern looks like from afar, one line width being unit: solid (0), dashes
 * (1), dots (2: no mark longer than 1.5 line widths), marks of both lengths (3). */
static int dash_kind(const double *v, int n, double unit)
{
    int longs = 0, shorts = 0;
    for (int k = 0; k < n; k += 2) {
        longs += v[k] > 1.5 * unit;
        shorts += v[k] <= 1.5 * unit;
    }
    return n == 0 ? 0 : !shorts ? 1 : !longs ? 2 : 3;
}

/* The keys of the bandwidth lesson's accuracy figure tell its curves apart from the back of
 * a room. Two curves of one colour (one strategy) differ in dash and in marker: the marker
 * followed the colour, so a strategy's four curves differed in their dash alone. The four
 * dashes are of four kinds (solid, dashes, dots, dash-dot): three had been dashes of other
 * lengths (6,3; 6,3,1.5,3; 12,4), alike from a few metres. And every key's line sample, as
 * the SVG draws it, holds two periods of its dash: 2.5 characters had held 1.7 of the 12,4
 * dash and one dash of it, so that 100 Mb/s (solid) and 100 Gb/s keyed the same. */
START_TEST(legend_keys_differ_visibly)
{
    build_lesson_db();
    char *s = script_of(NULL, RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    char styles[16][96], labels[16][96];
    ck_assert_uint_eq(fields(s, NULL, "keyentry with linespoints ", " ps", styles, 16), 8);
    ck_assert_uint_eq(fields(s, NULL, " title '", "'", labels, 16), 8);
    int kinds_seen = 0;
    for (size_t a = 0; a < 8; a++) {
        char ca[32], da[48], cb[32], db[48];
        style_parts(styles[a], ca, da);
        const char *pa = strstr(styles[a], " pt ");
        ck_assert_msg(pa, "%s: no marker", styles[a]);
        double v[8];
        int n = dash_pattern(s, da, v, 8);
        if (a < 4) /* sync-ps's four bandwidths */
            kinds_seen |= 1 << dash_kind(v, n, 4);
        for (size_t b = a + 1; b < 8; b++) {
            style_parts(styles[b], cb, db);
            const char *pb = strstr(styles[b], " pt ");
            ck_assert_msg(strcmp(ca, cb) || strcmp(da, db), "%s and %s alike", labels[a],
                          labels[b]);
            if (!strcmp(ca, cb))
                ck_assert_msg(strcmp(da, db) && atoi(pa + 4) != atoi(pb + 4),
                              "%s and %s: one colour, %s and %s", labels[a], labels[b], styles[a],
                              styles[b]);
        }
    }
    ck_assert_msg(kinds_seen == 0xf, "dash kinds of the four bandwidths: %#x", kinds_seen);
    free(s);

    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    mkdir(out_dir, 0777);
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    results_plot_opts_t o = {.out_dir = out_dir, .formats = RESULTS_PLOT_SVG};
    results_plot_out_t out;
    ok(results_plot_draw(q, &runs, RESULTS_FIGURE_ACCURACY, &o, &out, &err), &err);
    char *svg = svg_text(out.files[0]);
    int samples = 0;
    for (const char *p = strstr(svg, "stroke-dasharray='"); p;
         p = strstr(p + 1, "stroke-dasharray='")) {
        double period = 0, x1, y1, x2, y2;
        char *e;
        for (p += 18; *p != '\''; p = e + (*e == ','))
            period += strtod(p, &e);
        int used = 0;
        /* a key's sample: a path of one level segment (the curves have 20 points) */
        if (sscanf(p, "'  d='M%lf,%lf L%lf,%lf %n", &x1, &y1, &x2, &y2, &used) == 4 && y1 == y2 &&
            p[used] == '\'') {
            samples++;
            ck_assert_msg(x2 - x1 >= 2 * period, "a key's sample of %g pixels, dash period %g",
                          x2 - x1, period);
        }
    }
    ck_assert_int_eq(samples, 6); /* the solid curves' samples have no dashes */
    free(svg);
    results_plot_out_free(&out);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* Runs "m": A at 4260 ms a step holding 12 GB (6 of parameters, 6 of gradients), B at 1.71 ms
 * holding 2 GB, C a federated run (clients rows) at 4.26 s a round. */
static void build_memory_db(void)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    int64_t a = add_plain_run(db, "m/kind=zero", "zero", "m", 0, 100, 42.6, 10);
    int64_t b = add_plain_run(db, "m/kind=allreduce", "allreduce", "m", 1, 100, 0.171, 100);
    int64_t c = add_plain_run(db, "m/kind=fedavg", "fedavg", "m", 2, 100, 42.6, 10);
    ok(results_memory_add(db, a, 0, "worker", 6e9, 6e9, 0, NAN, 1, &err), &err);
    ok(results_memory_add(db, b, 0, "worker", 1e9, 1e9, 0, NAN, 1, &err), &err);
    ok(results_memory_add(db, c, 0, "client", 1e9, 1e9, 0, NAN, 1, &err), &err);
    add_clients(db, c);
    results_db_close(db);
}

/* The first row of datablock name in s, into v[0..n). */
static void first_row(const char *s, const char *name, double *v, int n)
{
    char head[64];
    snprintf(head, sizeof head, "$%s << EOD\n", name);
    const char *p = strstr(s, head);
    ck_assert_msg(p, "no block %s", name);
    p += strlen(head);
    for (int i = 0; i < n; i++) {
        char *e;
        v[i] = strtod(p, &e);
        ck_assert_msg(e != p, "block %s: %d numbers expected", name, n);
        p = e;
    }
}

/* Two language models (evaluations with a perplexity) and a classifier. */
static void build_text_db(void)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    int64_t a = add_plain_run(db, "t/kind=allreduce", "allreduce", "t", 0, 10, 4, 40);
    int64_t b = add_plain_run(db, "t/kind=fedavg", "fedavg", "t", 1, 10, 4, 40);
    int64_t c = add_plain_run(db, "mlp", "allreduce", NULL, 0, 10, 4, 40);
    for (int k = 1; k <= 4; k++) {
        double loss = 3.0 / k;
        ok(results_eval_add_text(db, a, k, 10 * k, 640.0 * k, 1e6 * k, loss, 0.1 * k, exp(loss),
                                 &err),
           &err);
        ok(results_eval_add_text(db, b, k, 10 * k, 640.0 * k, 2e6 * k, loss, 0.05 * k, exp(loss),
                                 &err),
           &err);
        ok(results_eval_add(db, c, k, 10 * k, 640.0 * k, 1e6 * k, loss, 0.2 * k, &err), &err);
    }
    results_db_close(db);
}

/* A language model's accuracy is labelled next-token accuracy, in the title, the axis and a
 * caption line; a classifier's stays test accuracy; both together say both. */
START_TEST(text_runs_labelled_next_token)
{
    build_text_db();
    char *s = script_of("1-2", RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    ck_assert_msg(strstr(s, "set label 9000 'Next-token accuracy vs simulated time'"), "%s", s);
    ck_assert_msg(strstr(s, "set ylabel 'next-token accuracy (%)'"), "%s", s);
    ck_assert_msg(strstr(s, "'next-token accuracy: the share of validation tokens predicted"), "%s",
                  s);
    double v[2];
    first_row(s, "run0", v, 2); /* the curve is test_acc, in percent */
    ck_assert(v[0] == 1 && fabs(v[1] - 10) < 1e-9);
    free(s);
    s = script_of("1-3", RESULTS_FIGURE_ACCURACY_BYTES, 0, 0, GP_PNG);
    ck_assert_msg(strstr(s, "set label 9000 'Test accuracy vs data sent'"), "%s", s);
    ck_assert_msg(strstr(s, "set ylabel 'test or next-token accuracy (%)'"), "%s", s);
    ck_assert_msg(strstr(s, "'text runs: next-token accuracy"), "%s", s);
    free(s);
    s = script_of("3", RESULTS_FIGURE_ACCURACY, 0, 0, GP_PNG);
    ck_assert_msg(strstr(s, "set label 9000 'Test accuracy vs simulated time'"), "%s", s);
    ck_assert_msg(strstr(s, "set ylabel 'test accuracy (%)'"), "%s", s);
    ck_assert_msg(!strstr(s, "next-token"), "%s", s);
    free(s);
}
END_TEST

START_TEST(memory_in_gb_past_10_gb)
{
    build_memory_db();
    double v[6];
    char *s = script_of(NULL, RESULTS_FIGURE_PARALLELISM, 0, 0, GP_PNG);
    ck_assert_msg(strstr(s, "set ylabel 'GB (10^9 bytes)'"), "12 GB not in GB");
    first_row(s, "mem0", v, 6); /* bar 0: parameters from 0 to 6 GB */
    ck_assert(v[0] == 0 && v[4] == 0 && v[5] == 6);
    free(s);
    s = script_of("2-3", RESULTS_FIGURE_PARALLELISM, 0, 0, GP_PNG);
    ck_assert_msg(strstr(s, "set ylabel 'MB (10^6 bytes)'"), "2 GB not in MB");
    first_row(s, "mem0", v, 6);
    ck_assert(v[5] == 1000);
    free(s);
}
END_TEST

/* Time per step and time per round in panels of their own, each in a unit that keeps its
 * numbers plain: 4260 ms a step reads 4.26 (s), never 4.26e+03. */
START_TEST(steps_and_rounds_apart_numbers_plain)
{
    build_memory_db();
    char *s = script_of(NULL, RESULTS_FIGURE_PARALLELISM, 0, 0, GP_PNG);
    const char *step = strstr(s, "set title 'Time per step'"),
               *round = strstr(s, "set title 'Time per round'");
    ck_assert_msg(step && round && step < round, "no separate step and round panels");
    double v[2];
    first_row(s, "step", v, 2);
    ck_assert(v[0] == 0 && fabs(v[1] - 4.26) < 1e-9); /* run A, in s: the longest passes 1 s */
    first_row(s, "round", v, 2);
    ck_assert(v[0] == 0 && fabs(v[1] - 4.26) < 1e-9); /* run C, the only one per round */
    ck_assert_uint_eq(count_of(s, NULL, "set ylabel 's per step"), 1);
    /* 4260 ms beside 1.71 ms (2491 times): a log axis from the decade below the shortest, the
     * bars from its foot; the one round alone: linear from 0 */
    ck_assert_msg(strstr(s, "set logscale y\nset yrange [0.001:17.04]\n"), "no log step axis");
    ck_assert_msg(strstr(s, "set ylabel 's per step (simulated, log scale)'"), "%s", s);
    ck_assert_msg(strstr(s, ":(0.001):2 with boxxyerror"), "bars not from the axis' foot");
    const char *lin = strstr(step, "unset logscale y\nset yrange [0:");
    ck_assert_msg(lin && lin < round, "round axis not linear"); /* set before its title */
    ck_assert_msg(strstr(s, "set ylabel 's per round (simulated)'"), "%s", s);
    free(s);
    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    mkdir(out_dir, 0777);
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    results_plot_opts_t o = {.out_dir = out_dir, .formats = RESULTS_PLOT_SVG};
    results_plot_out_t out;
    ok(results_plot_draw(q, &runs, RESULTS_FIGURE_PARALLELISM, &o, &out, &err), &err);
    char *svg = svg_text(out.files[0]);
    ck_assert_msg(strstr(svg, ">4.26<") && strstr(svg, ">0.0017<"), "plain bar labels");
    ck_assert_msg(!strstr(svg, "e+0") && !strstr(svg, "e-0"), "a number with an exponent");
    free(svg);
    results_plot_out_free(&out);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* --- plans: the Pareto front, many runs ------------------------------------------------- */

/* i is on the front of (x, y, z) by the definition: no j at least as good in all three and
 * better in one (a NAN z the worst). */
static int on_front_brute(const double *x, const double *y, const double *z, size_t n, size_t i)
{
    if (isnan(x[i]) || isnan(y[i]))
        return 0;
    double zi = !z ? 0 : isnan(z[i]) ? INFINITY : z[i];
    for (size_t j = 0; j < n; j++) {
        if (j == i || isnan(x[j]) || isnan(y[j]))
            continue;
        double zj = !z ? 0 : isnan(z[j]) ? INFINITY : z[j];
        if (x[j] <= x[i] && y[j] <= y[i] && zj <= zi && (x[j] < x[i] || y[j] < y[i] || zj < zi))
            return 0;
    }
    return 1;
}

static void ck_front(const double *x, const double *y, const double *z, size_t n)
{
    size_t *front = calloc(n ? n : 1, sizeof *front);
    size_t k = fig_pareto_front(x, y, z, n, front);
    char *in = calloc(n ? n : 1, 1);
    for (size_t f = 0; f < k; f++) {
        ck_assert_uint_lt(front[f], n);
        ck_assert_msg(!in[front[f]], "point %zu twice", front[f]);
        in[front[f]] = 1;
        if (f > 0) /* by ascending x */
            ck_assert(x[front[f - 1]] <= x[front[f]]);
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(in[i] == on_front_brute(x, y, z, n, i), "point %zu (%g, %g, %g): %s", i, x[i],
                      y[i], z ? z[i] : 0,
                      in[i] ? "on the front, dominated" : "left out, not dominated");
    free(front);
    free(in);
}

/* The figure's front against the definition, on hand-made points (ties, copies, NANs) and
 * on random sets of small integers (many ties), with two and with three objectives. */
START_TEST(pareto_front_against_brute_force)
{
    double x[] = {1, 2, 2, 3, 1, 4, 2, NAN, 5, 0.5};
    double y[] = {5, 3, 3, 1, 5, 0.5, 4, 0, NAN, 9};
    double z[] = {1, 1, 1, 2, 1, 9, 0, 0, 0, NAN};
    ck_front(x, y, NULL, 10);
    ck_front(x, y, z, 10);
    size_t front[10];
    /* two: (0.5, 9), the copies (1, 5), the copies (2, 3), (3, 1), (4, 0.5) */
    ck_assert_uint_eq(fig_pareto_front(x, y, NULL, 10, front), 7);
    ck_assert_uint_eq(fig_pareto_front(x, y, NULL, 0, front), 0);
    unsigned seed = 7;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 60);
        double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
        for (size_t i = 0; i < n; i++) {
            a[i] = rand_r(&seed) % 8;
            b[i] = rand_r(&seed) % 8;
            c[i] = rand_r(&seed) % 10 == 0 ? NAN : rand_r(&seed) % 5;
        }
        ck_front(a, b, NULL, n);
        ck_front(a, b, c, n);
        free(a);
        free(b);
        free(c);
    }
}
END_TEST

#define PLAN_RUNS 30

/* A plan's sweep of PLAN_RUNS timing-only runs, "plan-toy-tTp1dD-mb1xM-z0" with D and M
 * made unique, each with a step time, dollars and a fullest device's memory of its own (a few
 * copies of one point among them); values[i] = {s/step, $ per 1000 samples, GB}. */
static void build_plan_db(double values[PLAN_RUNS][3])
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    unsigned seed = 11;
    for (int i = 0; i < PLAN_RUNS; i++) {
        char name[64];
        snprintf(name, sizeof name, "plan-toy-t%dp1d%d-mb1x%d-z0", 1 + i % 4, 1 + i / 4, 2 + i);
        double step = 0.5 + (rand_r(&seed) % 40) / 20.0, gb = 2 + rand_r(&seed) % 30;
        if (i == 7 || i == 8) /* a copy of run 6 */
            step = values[6][0], gb = values[6][2];
        int64_t id = add_plain_run(db, name, "pipeline", "plan-toy-1", i, 100, 2 * step, 2);
        ok(results_param_add(db, id, "model.arch", "profile:toy", NAN, &err), &err);
        ok(results_memory_add(db, id, 0, "worker", gb * 0.5e9, gb * 0.25e9, gb * 0.25e9, NAN, 1,
                              &err),
           &err);
        /* 8 hosts at $3 an hour, 64 samples a step; one run in 10 also cheaper */
        double dollars = 8 * 2 * step / 3600 * 3 * (i % 10 == 3 ? 0.5 : 1);
        results_energy_t e = {.hosts = 8,
                              .host_joules = 1e3 * step,
                              .link_joules = 0,
                              .joules_per_step = 500 * step,
                              .joules_per_sample = 1e3 * step / 128,
                              .dollars = dollars,
                              .dollars_per_sample = dollars / 128,
                              .dollars_to_target = NAN};
        ok(results_energy_add(db, id, &e, &err), &err);
        values[i][0] = step;
        values[i][1] = 1000 * dollars / 128;
        values[i][2] = gb;
    }
    results_db_close(db);
}

/* pareto.png of a plan: every run a point, the front computed here by the definition (step
 * time, dollars, memory) numbered at its points and listed, no other run named; a plan's
 * runs are told from other sweeps. */
START_TEST(pareto_names_only_the_front)
{
    double v[PLAN_RUNS][3];
    build_plan_db(v);
    char *script = script_of(NULL, RESULTS_FIGURE_PARETO, 0, 0, GP_SVG);
    ck_assert_ptr_nonnull(script);
    double x[PLAN_RUNS], y[PLAN_RUNS], z[PLAN_RUNS];
    size_t on = 0;
    for (int i = 0; i < PLAN_RUNS; i++)
        x[i] = v[i][0], y[i] = v[i][1], z[i] = v[i][2];
    for (size_t i = 0; i < PLAN_RUNS; i++)
        on += (size_t)on_front_brute(x, y, z, PLAN_RUNS, i);
    ck_assert_uint_gt(on, 2);
    ck_assert_uint_lt(on, PLAN_RUNS);
    /* numbers at the points (" at first "), names in the list (labels 200 and up) */
    ck_assert_uint_eq(count_of(script, NULL, " at first "), on);
    ck_assert_uint_eq(count_of(script, NULL, "set label 2"), on);
    for (size_t i = 0; i < PLAN_RUNS; i++) {
        char name[64], listed[80];
        snprintf(name, sizeof name, "t%zup1d%zu-mb1x%zu-z0'", 1 + i % 4, 1 + i / 4, 2 + i);
        snprintf(listed, sizeof listed, "  %.*s", (int)strlen(name) - 1, name);
        const char *p = strstr(script, listed);
        ck_assert_msg((p != NULL) == on_front_brute(x, y, z, PLAN_RUNS, i), "run %zu %s", i,
                      p ? "named off the front" : "on the front, not named");
    }
    /* every run a point */
    const char *block = strstr(script, "$runs << EOD\n");
    ck_assert_ptr_nonnull(block);
    block += strlen("$runs << EOD\n");
    ck_assert_uint_eq(count_of(block, strstr(block, "EOD\n"), "\n"), PLAN_RUNS);
    free(script);

    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    ck_assert_int_eq(results_runs_plan(&runs), 1);
    free(runs.v[4].name);
    runs.v[4].name = strdup("plan-toy-other");
    ck_assert_int_eq(results_runs_plan(&runs), 0);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* Bars past 24 runs and cost points past 12: the fastest drawn, the slowest not, the
 * caption and the note saying so; pareto.png keeps them all. */
START_TEST(many_runs_show_the_fastest)
{
    double v[PLAN_RUNS][3];
    build_plan_db(v);
    double sorted[PLAN_RUNS];
    for (int i = 0; i < PLAN_RUNS; i++)
        sorted[i] = v[i][0];
    qsort(sorted, PLAN_RUNS, sizeof *sorted, dbl_cmp_test);
    const results_figure_t figs[] = {RESULTS_FIGURE_PARALLELISM, RESULTS_FIGURE_BREAKDOWN,
                                     RESULTS_FIGURE_COST};
    const size_t max[] = {24, 24, 12};
    for (int k = 0; k < 3; k++) {
        results_query_t *q = query_open_ok();
        results_runs_t runs;
        dt_err_t err = {""};
        ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
        results_plot_opts_t o = {.out_dir = dir};
        results_plot_out_t out;
        char *script = NULL;
        ok(results_plot_script(q, &runs, figs[k], &o, GP_SVG, 0, &script, &out, &err), &err);
        ck_assert_ptr_nonnull(script);
        char note[64];
        snprintf(note, sizeof note, "the %zu fastest of %d runs", max[k], PLAN_RUNS);
        ck_assert_msg(strstr(out.note, note), "%s: %s", results_figure_name(figs[k]), out.note);
        snprintf(note, sizeof note, "the %zu fastest of %d runs by s/step", max[k], PLAN_RUNS);
        ck_assert_ptr_nonnull(strstr(script, note));
        /* named: those faster than the max-th, not those slower */
        for (int i = 0; i < PLAN_RUNS; i++) {
            char name[64];
            snprintf(name, sizeof name, "t%dp1d%d-mb1x%d-z0", 1 + i % 4, 1 + i / 4, 2 + i);
            if (v[i][0] < sorted[max[k] - 1])
                ck_assert_msg(strstr(script, name), "%s: %s left out", results_figure_name(figs[k]),
                              name);
            else if (v[i][0] > sorted[max[k] - 1])
                ck_assert_msg(!strstr(script, name), "%s: %s drawn", results_figure_name(figs[k]),
                              name);
        }
        free(script);
        results_plot_out_free(&out);
        results_runs_free(&runs);
        results_query_close(q);
    }
}
END_TEST

/* A timing-only run's timeline: the window is its step (simulated time / steps), whatever
 * was recorded past it; a sampled one says so. */
START_TEST(timeline_of_a_timing_only_run_is_its_step)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    int64_t id = add_plain_run(db, "plan-toy-t1p2d1-mb1x2-z0", "pipeline", NULL, 0, 100, 8, 2);
    ok(results_param_add(db, id, "model.arch", "profile:toy", NAN, &err), &err);
    ok(results_param_add(db, id, "run.timeline", "sampled", NAN, &err), &err);
    for (int k = 0; k < 8; k++)
        ok(results_timeline_add(db, id, "h0", "worker", 0, k % 2 ? "comm" : "compute", k, k + 1,
                                &err),
           &err);
    results_db_close(db);
    char *script = script_of(NULL, RESULTS_FIGURE_TIMELINE, 0, 0, GP_SVG);
    ck_assert_ptr_nonnull(script);
    ck_assert_ptr_nonnull(strstr(script, "set xrange [0:4]"));
    ck_assert_ptr_nonnull(strstr(script, "run.timeline = sampled"));
    ck_assert_ptr_nonnull(strstr(script, "its first step (4 s"));
    free(script);
}
END_TEST

START_TEST(missing_gnuplot_is_one_clear_error)
{
    build_db();
    char empty[256], out_dir[256];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    mkdir(empty, 0777);
    mkdir(out_dir, 0777);
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", empty, 1);
    dt_err_t err = {""};
    ck_assert_int_eq(results_plot_gnuplot_check(&err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "gnuplot-nox"), "%s", err.msg);
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    results_plot_opts_t o = {.out_dir = out_dir};
    results_plot_out_t out;
    ck_assert_int_eq(results_plot_draw(q, &runs, RESULTS_FIGURE_ACCURACY, &o, &out, &err),
                     DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "gnuplot-nox"), "%s", err.msg);
    ck_assert_int_eq(out.n_files, 0);
    results_plot_out_free(&out); /* the caller's, drawn or not */
    setenv("PATH", path, 1);     /* for CK_FORK=no, where the next test shares this process */
    free(path);
    results_runs_free(&runs);
    results_query_close(q);
    DIR *d = opendir(out_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        ck_assert_msg(e->d_name[0] == '.', "left behind: %s", e->d_name);
    closedir(d);
}
END_TEST

/* --- the command ------------------------------------------------------------------------------ */

static char out_path[256], err_path[256];

/* Runs dtsim plot with args in dir (no shell), PATH replaced when path_env is set. */
static int dtsim_plot(const char *path_env, const char *const *args)
{
    const char *argv[32] = {DTSIM_BINARY, "plot"};
    int n = 2;
    for (; args[n - 2]; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        if (chdir(dir) != 0)
            _exit(126);
        if (path_env)
            setenv("PATH", path_env, 1);
        execv(DTSIM_BINARY, (char *const *)argv);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strdup(buf);
}

static void one_error_line(const char *needle)
{
    char *e = slurp(err_path);
    char *nl = strchr(e, '\n');
    ck_assert_msg(nl && nl[1] == 0, "expected one error line, got: %s", e);
    ck_assert_msg(strstr(e, needle), "\"%s\" not in: %s", needle, e);
    free(e);
}

START_TEST(command_line)
{
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--help", NULL}), 0);
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--bogus", NULL}), 2);
    one_error_line("--bogus");
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--db", "nope.db", NULL}), 2);
    one_error_line("nope.db");
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--db", db_path, "--runs", "3,x", NULL}), 2);
    one_error_line("3,x");
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--runs", "1", "--sweep", "s1", NULL}), 2);
    one_error_line("--sweep");
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--timeline-run", "0", NULL}), 2);
    one_error_line("--timeline-run");

    /* an empty database */
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    results_db_close(db);
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--db", db_path, NULL}), 2);
    one_error_line("no runs");
    unlink(db_path);

    build_db();
    ck_assert_int_eq(
        dtsim_plot(NULL, (const char *[]){"--db", db_path, "--timeline-run", "99", NULL}), 2);
    one_error_line("no run 99");

    char empty[256];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    mkdir(empty, 0777);
    ck_assert_int_eq(dtsim_plot(empty, (const char *[]){"--db", db_path, NULL}), 2);
    one_error_line("gnuplot-nox");

    /* the default output directory is created; every path printed exists */
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--db", db_path, "--svg", NULL}), 0);
    char *o = slurp(out_path);
    int lines = 0;
    for (char *line = strtok(o, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        ck_assert_msg(!strncmp(line, "results/plots/", 14), "%s", line);
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, line);
        ck_image(p);
    }
    ck_assert_int_eq(lines, 2 * RESULTS_FIGURE_COUNT);
    free(o);

    /* --format: a comma list, repeatable; --svg adds SVG to it */
    char p[256];
    snprintf(p, sizeof p, "%s/f1", dir);
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--db", db_path, "--runs", "2-4", "--format",
                                                       "pdf,svg", "--out", p, NULL}),
                     0);
    snprintf(p, sizeof p, "%s/f2", dir);
    ck_assert_int_eq(
        dtsim_plot(NULL, (const char *[]){"--db", db_path, "--runs", "2-4", "--svg", "--format",
                                          "pdf", "--format", "png", "--out", p, NULL}),
        0);
    for (int k = 1; k <= 2; k++) {
        static const char *const ext[] = {"png", "svg", "pdf"};
        for (int e = 0; e < 3; e++) {
            snprintf(p, sizeof p, "%s/f%d/accuracy.%s", dir, k, ext[e]);
            if (k == 1 && e == 0)
                ck_assert_msg(!file_exists(p), "%s written without --format png", p);
            else
                ck_image(p);
        }
    }
    /* a gnuplot without pdfcairo: one line saying so, nothing drawn */
    char fake_dir[256], fake[300], real[512] = "", path_env[1024];
    snprintf(fake_dir, sizeof fake_dir, "%s/fake", dir);
    mkdir(fake_dir, 0777);
    const char *path_var = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
    char *paths = strdup(path_var);
    for (char *d = strtok(paths, ":"); d && !real[0]; d = strtok(NULL, ":")) {
        snprintf(real, sizeof real, "%s/gnuplot", d);
        if (access(real, X_OK) != 0)
            real[0] = '\0';
    }
    free(paths);
    ck_assert_msg(real[0], "gnuplot not found on PATH");
    snprintf(fake, sizeof fake, "%s/gnuplot", fake_dir);
    FILE *sh = fopen(fake, "w");
    ck_assert_ptr_nonnull(sh);
    fprintf(sh,
            "#!/bin/sh\ncase \"$*\" in *pdfcairo*) echo 'unknown terminal' >&2; exit 1;; "
            "esac\nexec '%s' \"$@\"\n",
            real);
    fclose(sh);
    chmod(fake, 0755);
    snprintf(path_env, sizeof path_env, "%s:%s", fake_dir, path_var);
    snprintf(p, sizeof p, "%s/f3", dir);
    ck_assert_int_eq(dtsim_plot(path_env, (const char *[]){"--db", db_path, "--format", "png,pdf",
                                                           "--out", p, NULL}),
                     2);
    one_error_line("no pdfcairo terminal");
    ck_assert_msg(!file_exists(p), "%s made for a PDF gnuplot cannot write", p);

    /* an output directory named like a gnuplot pipe is just a directory */
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--db", db_path, "--out", "|touch pwned7",
                                                       "--runs", "2", NULL}),
                     0);
    snprintf(p, sizeof p, "%s/|touch pwned7/accuracy.png", dir);
    ck_image(p);
    snprintf(p, sizeof p, "%s/pwned7", dir);
    ck_assert(!file_exists(p));
}
END_TEST

/* Screen `screen` of figure fig of the default runs drawn with o, in format: its script,
 * malloc'ed, NULL when it has no such screen; *screens how many it has. */
static char *screen_script(results_figure_t fig, const results_plot_opts_t *o, size_t screen,
                           size_t *screens)
{
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    results_plot_out_t out;
    char *script = NULL;
    ok(results_plot_script(q, &runs, fig, o, GP_PNG, screen, &script, &out, &err), &err);
    *screens = out.screens;
    results_plot_out_free(&out);
    results_runs_free(&runs);
    results_query_close(q);
    return script;
}

/* The first line of the plot command in s. */
static void plot_line(const char *s, char line[200])
{
    const char *p = strstr(s, "\nplot ");
    ck_assert_ptr_nonnull(p);
    snprintf(line, 200, "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
}

/* --projector: 1920 x 1080, type and lines 2.52 times their size (1.8 for the size, 1.4 for
 * the room), markers with them, the darker palette; one chart per image: a figure of several
 * panels (a grid on paper, or stacked) is an image per panel, NAME-1.png, ... in the order
 * they read, each the panel alone over the whole frame (its plot command, the others' left
 * out; every panel's settings kept, which later panels may build on), with the figure's
 * title and caption, and with its own key (cost.png had keyed only its last panel, and
 * accuracy.png's panels share a key in a cell of their own on paper). */
START_TEST(projector_one_chart_per_screen)
{
    build_db();
    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    mkdir(out_dir, 0777);
    results_plot_opts_t o = {.out_dir = out_dir, .projector = 1};
    size_t several = 0;
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        const char *name = results_figure_name((results_figure_t)fig);
        size_t screens = 0, n;
        char *paper = script_of(NULL, (results_figure_t)fig, 0, 0, GP_PNG);
        char *first = screen_script((results_figure_t)fig, &o, 0, &screens);
        ck_assert_msg(!paper == !first, "%s", name);
        free(first);
        if (!paper)
            continue;
        size_t panels = count_of(paper, NULL, "\nset origin ") -
                        (strstr(paper, "\nunset border\n") != NULL); /* a key's own cell */
        ck_assert_msg(screens == panels, "%s: %zu screens, %zu panels", name, screens, panels);
        several += screens > 1;
        char plots[8][200];
        for (size_t k = 0; k < screens && k < 8; k++) {
            char *s = screen_script((results_figure_t)fig, &o, k, &n);
            ck_assert_msg(strstr(s, "set terminal pngcairo size 1920,1080 fontscale 2.52 "
                                    "linewidth 2.52 ") &&
                              strstr(s, "\nmarker = 2.52\n") &&
                              strstr(s, "\nset linetype 1 lc rgb '#1f5aa6' "),
                          "%s: %.300s", name, s);
            ck_assert_msg(count_of(s, NULL, "\nplot ") == 1, "%s screen %zu: %zu plots", name, k,
                          count_of(s, NULL, "\nplot "));
            if (screens > 1) /* (pareto.png's one panel leaves room for its list) */
                ck_assert_uint_eq(count_of(s, NULL, "\nset origin "),
                                  count_of(s, NULL,
                                           "\nset origin 0, fig_bottom + 0 * fig_area\n"
                                           "set size 1, 1 * fig_area\n"));
            ck_assert_msg(!strstr(s, "unset label 9000"), "%s: the title left out", name);
            if (fig == RESULTS_FIGURE_COST || fig == RESULTS_FIGURE_ACCURACY)
                ck_assert_msg(!strstr(s, "unset key") && strstr(s, " title '"),
                              "%s screen %zu without its key", name, k);
            plot_line(s, plots[k]);
            for (size_t j = 0; j < k; j++)
                ck_assert_msg(strcmp(plots[j], plots[k]), "%s: screens %zu, %zu alike", name, j, k);
            free(s);
        }
        ck_assert_ptr_null(screen_script((results_figure_t)fig, &o, screens, &n));
        free(paper);
    }
    /* accuracy and accuracy_bytes (9 runs), scaling, faults, parallelism, clients, cost */
    ck_assert_uint_eq(several, 7);

    /* the images: a file per screen, the projector's size */
    results_query_t *q = query_open_ok();
    results_runs_t runs;
    dt_err_t err = {""};
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        results_plot_out_t out;
        ok(results_plot_draw(q, &runs, (results_figure_t)fig, &o, &out, &err), &err);
        ck_assert_uint_eq((size_t)out.n_files, out.screens);
        for (size_t k = 0; k < out.screens; k++) {
            char want[512];
            if (out.screens > 1)
                snprintf(want, sizeof want, "%s/%s-%zu.png", out_dir,
                         results_figure_name((results_figure_t)fig), k + 1);
            else
                snprintf(want, sizeof want, "%s/%s.png", out_dir,
                         results_figure_name((results_figure_t)fig));
            ck_assert_str_eq(out.files[k], want);
            unsigned w, h;
            png_size(want, &w, &h);
            ck_assert_msg(w == 1920 && h == 1080, "%s: %u x %u", want, w, h);
        }
        results_plot_out_free(&out);
    }
    results_runs_free(&runs);
    results_query_close(q);

    /* dtsim plot --projector, --size with it */
    char p[256];
    snprintf(p, sizeof p, "%s/pj", dir);
    ck_assert_int_eq(
        dtsim_plot(NULL, (const char *[]){"--db", db_path, "--runs", "2-4", "--projector", "--size",
                                          "1280x720", "--out", p, NULL}),
        0);
    char *o_text = slurp(out_path);
    for (int k = 1; k <= 3; k++) { /* steps, rounds (run 2 is federated), memory */
        char want[300];
        snprintf(want, sizeof want, "%s/parallelism-%d.png\n", p, k);
        ck_assert_msg(strstr(o_text, want), "no %s in %s", want, o_text);
        unsigned w, h;
        want[strlen(want) - 1] = '\0';
        png_size(want, &w, &h);
        ck_assert(w == 1280 && h == 720);
    }
    ck_assert_msg(!strstr(o_text, "parallelism.png") && strstr(o_text, "/accuracy.png\n"), "%s",
                  o_text);
    free(o_text);
    ck_assert_int_eq(dtsim_plot(NULL, (const char *[]){"--help", NULL}), 0);
    o_text = slurp(out_path);
    ck_assert_msg(strstr(o_text, "--projector") && strstr(o_text, "NAME-1.png"), "%s", o_text);
    free(o_text);
}
END_TEST

/* A run whose clock ran off to infinity: a timeline row ending at inf, a summary whose
 * simulated time is inf. gnuplot read "inf" as an undefined variable and every figure of
 * plot and report failed (exit 1): the timeline leaves the row out and says so, the other
 * figures draw, and a data row holds NaN (gnuplot's missing point) where a value is not
 * finite. */
START_TEST(infinite_times_are_left_out)
{
    gp_t g;
    gp_init(&g);
    gp_block_begin(&g, "x");
    GP_ROW(&g, 1, INFINITY, -INFINITY, NAN, 2);
    gp_block_end(&g);
    fflush(g.f);
    ck_assert_str_eq(g.buf, "$x << EOD\n1 NaN NaN NaN 2\nEOD\n");
    gp_free(&g);

    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    test_run_t t = sweep_runs[1];
    t.sim_time = INFINITY;
    int64_t id = add_run(db, "lost-clock", "allreduce", NULL, 0, &t, "failed");
    add_timeline(db, id, "node-0");
    ok(results_timeline_add(db, id, "node-0", "worker", 0, "idle", 2.0, INFINITY, &err), &err);
    results_db_close(db);
    char *script = script_of("1", RESULTS_FIGURE_TIMELINE, 0, 0, GP_SVG);
    ck_assert_ptr_nonnull(script);
    ck_assert_msg(!strstr(script, "inf"), "%s", script);
    ck_assert_msg(strstr(script, "1 intervals left out: their times are not finite"), "%s", script);
    /* the x range ends where the finite rows end, 2 s */
    ck_assert_msg(strstr(script, "set xrange [0:2]"), "%s", script);
    free(script);
    if (results_plot_gnuplot_check(&err) != DT_OK)
        return;
    char notes[RESULTS_FIGURE_COUNT][512];
    ck_assert(draw_all("1", RESULTS_PLOT_PNG, id, notes) & 1u << RESULTS_FIGURE_TIMELINE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot");
    TCase *tq = tcase_create("query");
    tcase_add_checked_fixture(tq, setup, teardown);
    tcase_add_test(tq, runs_spec_parse);
    tcase_add_test(tq, default_choice_is_the_latest_sweep);
    tcase_add_test(tq, evals_and_timeline_read_back);
    tcase_add_test(tq, choices_by_sweep_and_ids);
    tcase_add_test(tq, without_sweeps_the_recent_runs);
    tcase_add_test(tq, bad_databases);
    tcase_add_test(tq, memory_of_the_most_loaded_host);
    tcase_add_test(tq, clients_read_back);
    tcase_add_test(tq, sweep_runs_whatever_their_status);
    tcase_add_test(tq, gp_string_quoting);
    tcase_add_test(tq, gp_datablocks_hold_numbers);
    tcase_add_test(tq, infinite_times_are_left_out);
    tcase_add_test(tq, figure_table_rows);
    tcase_add_test(tq, pareto_front_against_brute_force);
    suite_add_tcase(s, tq);

    dt_err_t err;
    int have_gnuplot = results_plot_gnuplot_check(&err) == DT_OK;
    if (have_gnuplot) {
        TCase *tp = tcase_create("figures");
        tcase_add_checked_fixture(tp, setup, teardown);
        tcase_set_timeout(tp, 120);
        tcase_add_test(tp, every_figure_of_the_sweep);
        tcase_add_test(tp, pareto_names_only_the_front);
        tcase_add_test(tp, many_runs_show_the_fastest);
        tcase_add_test(tp, timeline_of_a_timing_only_run_is_its_step);
        tcase_add_test(tp, every_format);
        tcase_add_test(tp, curve_styles_differ);
        tcase_add_test(tp, many_curves_make_panels);
        tcase_add_test(tp, legend_labels_name_their_keys);
        tcase_add_test(tp, equal_curves_drawn_once);
        tcase_add_test(tp, titles_are_short_and_names_go_to_the_caption);
        tcase_add_test(tp, size_reaches_every_format);
        tcase_add_test(tp, step_figure_stacks_the_parts_to_the_step);
        tcase_add_test(tp, text_grows_with_the_size);
        tcase_add_test(tp, legend_keys_differ_visibly);
        tcase_add_test(tp, memory_in_gb_past_10_gb);
        tcase_add_test(tp, text_runs_labelled_next_token);
        tcase_add_test(tp, steps_and_rounds_apart_numbers_plain);
        tcase_add_test(tp, figures_skipped_with_a_reason);
        tcase_add_test(tp, hostile_names_stay_text);
        tcase_add_test(tp, missing_gnuplot_is_one_clear_error);
        tcase_add_test(tp, command_line);
        tcase_add_test(tp, projector_one_chart_per_screen);
        suite_add_tcase(s, tp);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed)
        return EXIT_FAILURE;
    if (!have_gnuplot) {
        fprintf(stderr, "test_plot: %s: figure tests skipped\n", err.msg);
        return 77;
    }
    return EXIT_SUCCESS;
}
