/* Several jobs on one platform (sim/engine/jobs.h), through the dtsim binary: a job that
 * shares nothing runs as its own scenario does, row for row; two jobs of identical traffic
 * on one bottleneck link each take twice the communication time; bad files of jobs are one
 * line and exit code 2. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_checks.h"

static char dir[] = "/tmp/dtsim-jobs-XXXXXX";
static char err_path[256], out_path[256];

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    char jobs[300];
    snprintf(jobs, sizeof jobs, "%s/jobs", dir);
    ck_assert_int_eq(mkdir(jobs, 0777), 0);
}

/* Runs dtsim with args (no shell), stdout and stderr into files; returns its exit code. */
static int dtsim(const char *const *args)
{
    return cli_run(DTSIM_BINARY, out_path, err_path, args);
}

/* dir/name with text in it; the path in path. */
static void write_file(char *path, size_t n, const char *name, const char *text)
{
    snprintf(path, n, "%s/%s", dir, name);
    cli_write_file(path, text);
}

/* stderr is exactly one line holding both needles. */
static void one_error_line(const char *needle1, const char *needle2)
{
    cli_one_error_line(err_path, needle1, needle2);
}

static double query(sqlite3 *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static double query(sqlite3 *db, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(db));
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static long run_id(sqlite3 *db, const char *name)
{
    return (long)query(db, "SELECT id FROM runs WHERE name = '%s'", name);
}

/* A tiny job: 2-worker all-reduce of an MLP on synthetic data. */
static const char *job_a = "[run]\nsteps = 6\neval_every = 2\nseed = 7\n"
                           "[model]\nhidden = 256\nbatch = 16\n"
                           "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                           "synthetic_dim = 64\n"
                           "[cluster]\nworkers = 2\n"
                           "[strategy]\nkind = allreduce\n";
/* Another: a parameter server of 3 workers. */
static const char *job_b = "[run]\nsteps = 8\neval_every = 4\n"
                           "[model]\nhidden = 64\nbatch = 16\n"
                           "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                           "synthetic_dim = 64\n"
                           "[cluster]\nworkers = 3\n"
                           "[strategy]\nkind = sync-ps\n";

/* Evaluation rows of runs x and y that differ (time, step, loss, accuracy), by step. */
static long evals_differing(sqlite3 *db, long x, long y, double tol)
{
    long nx = (long)query(db, "SELECT count(*) FROM evals WHERE run = %ld", x);
    long ny = (long)query(db, "SELECT count(*) FROM evals WHERE run = %ld", y);
    ck_assert_int_gt(nx, 1);
    ck_assert_int_eq(nx, ny);
    return (long)query(db,
                       "SELECT count(*) FROM evals a JOIN evals b ON a.step = b.step "
                       "WHERE a.run = %ld AND b.run = %ld AND (a.test_loss IS NOT b.test_loss OR "
                       "a.test_acc IS NOT b.test_acc OR "
                       "abs(a.sim_time - b.sim_time) > %g * b.sim_time)",
                       x, y, tol);
}

START_TEST(a_job_that_shares_nothing_runs_as_its_scenario_does)
{
    char a[300], b[300], alone[300], beside[300], db_path[300];
    write_file(a, sizeof a, "jobs/a.ini", job_a);
    write_file(b, sizeof b, "jobs/b.ini", job_b);
    const char *platform = "[cluster]\nplatform = multi-rack\nracks = 2\n"
                           "uplink_bandwidth = 1Gbps\n";
    char text[1024];
    /* A alone in the jobs machinery, on the platform its own run builds (2 hosts) */
    snprintf(text, sizeof text, "%sworkers = 2\n[jobs]\nfiles = jobs/a.ini\n", platform);
    write_file(alone, sizeof alone, "alone.ini", text);
    /* A beside B on a star: every host its own link, a non-blocking switch */
    write_file(beside, sizeof beside, "beside.ini",
               "[cluster]\nworkers = 7\n[jobs]\nfiles = jobs/a.ini, jobs/b.ini\n");
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"run", alone, "--db", db_path, NULL}), 0);
    ck_assert_int_eq(dtsim((const char *[]){
                         "run", a, "--db", db_path, "--set", "cluster.platform=multi-rack", "--set",
                         "cluster.racks=2", "--set", "cluster.uplink_bandwidth=1Gbps", NULL}),
                     0);
    ck_assert_int_eq(dtsim((const char *[]){"run", beside, "--db", db_path, NULL}), 0);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", a, "--db", db_path, "--set", "run.name=a-star", NULL}), 0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long job = run_id(db, "alone/a"), own = run_id(db, "a");
    ck_assert_int_eq(evals_differing(db, job, own, 0), 0);
    ck_assert(query(db, "SELECT sim_time FROM summary WHERE run = %ld", job) ==
              query(db, "SELECT sim_time FROM summary WHERE run = %ld", own));
    ck_assert(query(db, "SELECT total_bytes FROM summary WHERE run = %ld", job) ==
              query(db, "SELECT total_bytes FROM summary WHERE run = %ld", own));
    /* beside B, sharing no link: the same rows (times to rounding: B's events cut the
     * clock's steps differently) */
    long with_b = run_id(db, "beside/a"), star = run_id(db, "a-star");
    ck_assert_int_eq(evals_differing(db, with_b, star, 1e-9), 0);
    double t = query(db, "SELECT sim_time FROM summary WHERE run = %ld", star);
    ck_assert(fabs(query(db, "SELECT sim_time FROM summary WHERE run = %ld", with_b) - t) <=
              1e-9 * t);
    /* B is a run of its own beside A: its rows, tied to A's by the sweep id */
    long jb = run_id(db, "beside/b");
    ck_assert_int_gt((long)query(db, "SELECT count(*) FROM evals WHERE run = %ld", jb), 0);
    ck_assert_int_eq((long)query(db, "SELECT count(*) FROM workers WHERE run = %ld", jb), 4);
    ck_assert_int_eq((long)query(db,
                                 "SELECT count(*) FROM runs a JOIN runs b ON a.sweep = b.sweep "
                                 "WHERE a.id = %ld AND b.id = %ld AND a.sweep_index = 0 AND "
                                 "b.sweep_index = 1",
                                 with_b, jb),
                     1);
    sqlite3_close(db);
}
END_TEST

START_TEST(two_jobs_on_one_bottleneck_each_take_twice_the_transfer_time)
{
    /* Two racks joined by a 100 Mbps uplink (each way), 10 Gbps host links, pure latency +
     * size / bandwidth (CM02 without cross traffic). Interleaved, each job has one worker
     * in each rack, and both jobs' identical transfers cross the uplink at the same time:
     * each gets half of it, so the transfer time of each doubles. */
    char a[300], alone[300], shared[300], db_path[300];
    write_file(a, sizeof a, "jobs/a.ini", job_a);
    const char *platform = "[cluster]\nplatform = multi-rack\nracks = 2\nbandwidth = 10Gbps\n"
                           "uplink_bandwidth = 100Mbps\nlatency = 1us\nuplink_latency = 1us\n"
                           "network_model = CM02\ncrosstraffic = no\n";
    char text[1024];
    snprintf(text, sizeof text, "%sworkers = 2\n[jobs]\nfiles = jobs/a.ini\n", platform);
    write_file(alone, sizeof alone, "alone.ini", text);
    snprintf(text, sizeof text,
             "%sworkers = 4\n[jobs]\nfiles = jobs/a.ini, jobs/a.ini\nplacement = interleaved\n",
             platform);
    write_file(shared, sizeof shared, "shared.ini", text);
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"run", alone, "--db", db_path, NULL}), 0);
    ck_assert_int_eq(dtsim((const char *[]){"run", shared, "--db", db_path, NULL}), 0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long solo = run_id(db, "alone/a");
    for (int job = 1; job <= 2; job++) {
        char name[32];
        snprintf(name, sizeof name, "shared/a-%d", job);
        long id = run_id(db, name);
        /* the same traffic, each job's bytes its own */
        ck_assert(query(db, "SELECT total_bytes FROM summary WHERE run = %ld", id) ==
                  query(db, "SELECT total_bytes FROM summary WHERE run = %ld", solo));
        double comm1 = query(db,
                             "SELECT comm_s FROM workers WHERE run = %ld AND worker = 0 "
                             "AND role = 'worker'",
                             solo);
        double comm2 = query(db,
                             "SELECT comm_s FROM workers WHERE run = %ld AND worker = 0 "
                             "AND role = 'worker'",
                             id);
        /* alone, by hand: 6 steps of a ring of 2 (a reduce-scatter and an all-gather
         * step), each transfer half the mlp 64-256-10's parameters over 4 links of 1 us
         * at the uplink's 12.5e6 bytes/s */
        double params = 64 * 256 + 256 + 256 * 10 + 10, latency = 12 * 4 * 1e-6;
        double by_hand = latency + 12 * (4 * params / 2) / 12.5e6;
        ck_assert_msg(fabs(comm1 - by_hand) < 1e-6 * by_hand, "alone %g s, by hand %g s", comm1,
                      by_hand);
        double ratio = (comm2 - latency) / (comm1 - latency);
        ck_assert_msg(ratio > 1.99 && ratio < 2.01,
                      "job %d: communication %g s beside the "
                      "other, %g s alone (ratio %g, expected 2)",
                      job, comm2, comm1, ratio);
        /* the compute is the same: the simulated time grows by the transfers' */
        double t1 = query(db, "SELECT sim_time FROM summary WHERE run = %ld", solo);
        double t2 = query(db, "SELECT sim_time FROM summary WHERE run = %ld", id);
        ck_assert_msg(fabs((t2 - t1) - (comm2 - comm1)) < 0.01 * (comm2 - comm1),
                      "sim_time %g -> %g, comm %g -> %g", t1, t2, comm1, comm2);
    }
    sqlite3_close(db);
}
END_TEST

START_TEST(jobs_of_one_file_keep_their_state_apart)
{
    /* two asynchronous parameter-server jobs of 2 shards each, side by side on a star: each
     * ends when its own shards have (a count of finished shards shared between the jobs
     * would end one early), with the same rows as the other */
    char a[300], top[300], db_path[300];
    write_file(a, sizeof a, "jobs/async.ini",
               "[run]\nsteps = 6\neval_every = 4\n[model]\nhidden = 32\nbatch = 16\n"
               "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
               "synthetic_dim = 32\n[cluster]\nworkers = 3\n"
               "[strategy]\nkind = async-ps\nservers = 2\n");
    write_file(top, sizeof top, "top.ini",
               "[cluster]\nworkers = 10\n[jobs]\nfiles = jobs/async.ini, jobs/async.ini\n");
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"run", top, "--db", db_path, NULL}), 0);
    ck_assert_int_eq(dtsim((const char *[]){"run", a, "--db", db_path, NULL}), 0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long j1 = run_id(db, "top/async-1"), j2 = run_id(db, "top/async-2");
    long own = run_id(db, "async");
    ck_assert_int_eq(evals_differing(db, j1, j2, 0), 0);
    double last = query(db, "SELECT max(step) FROM evals WHERE run = %ld", own);
    ck_assert(query(db, "SELECT max(step) FROM evals WHERE run = %ld", j1) == last);
    ck_assert(query(db, "SELECT steps FROM summary WHERE run = %ld", j1) ==
              query(db, "SELECT steps FROM summary WHERE run = %ld", own));
    sqlite3_close(db);
}
END_TEST

/* A hundred jobs in one simulation: jobs.files over ten lines (one line holds at most 198
 * characters, and a repeated key was refused). Each is its own finished run. */
START_TEST(a_hundred_jobs_over_several_lines)
{
    char job[300], top[300], db_path[300];
    write_file(job, sizeof job, "jobs/t.ini",
               "[run]\nsteps = 2\neval_every = 2\n[model]\nhidden = 16\nbatch = 16\n"
               "[data]\nsource = synthetic\ntrain_samples = 256\ntest_samples = 64\n"
               "synthetic_dim = 16\n[cluster]\nworkers = 2\n[strategy]\nkind = allreduce\n");
    static char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "[cluster]\nworkers = 200\n[jobs]\n");
    for (int line = 0; line < 10; line++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "files = ");
        for (int i = 0; i < 10; i++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%sjobs/t.ini", i ? ", " : "");
        len += (size_t)snprintf(text + len, sizeof text - len, "\n");
    }
    write_file(top, sizeof top, "top.ini", text);
    snprintf(db_path, sizeof db_path, "%s/hundred.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"run", top, "--db", db_path, NULL}), 0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert(query(db, "SELECT count(*) FROM runs WHERE status = 'finished'") == 100);
    ck_assert(query(db, "SELECT count(DISTINCT name) FROM runs WHERE name LIKE 'top/t-%%'") == 100);
    sqlite3_close(db);
}
END_TEST

START_TEST(bad_files_of_jobs_are_one_line_and_exit_2)
{
    char a[300], bad[300], top[300], db_path[300];
    write_file(a, sizeof a, "jobs/a.ini", job_a);
    snprintf(db_path, sizeof db_path, "%s/never.db", dir);
    const char *cmds[] = {"check", "run"};
    for (int c = 0; c < 2; c++) {
        const char *args[] = {cmds[c], top, "--db", db_path, NULL};
        if (c == 0)
            args[2] = NULL;
        /* a job file that is not there */
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 4\n[jobs]\nfiles = jobs/a.ini, jobs/gone.ini\n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("top.ini:4: jobs.files: ", "jobs/gone.ini: No such file");
        /* a platform key a job gives otherwise */
        write_file(bad, sizeof bad, "jobs/bad.ini",
                   "[run]\nsteps = 2\n[cluster]\nworkers = 2\nbandwidth = 1Gbps\n");
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 4\nbandwidth = 25Gbps\n"
                   "[jobs]\nfiles = jobs/a.ini, jobs/bad.ini\n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("jobs/bad.ini:5: cluster.bandwidth: 1Gbps, but the platform is the top "
                       "file's (cluster.bandwidth = 25Gbps",
                       NULL);
        /* more hosts than the platform has */
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 3\n[jobs]\nfiles = jobs/a.ini, jobs/a.ini\n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("top.ini:2: cluster.workers: 3 hosts, but the jobs need 4 "
                       "(jobs/a.ini 2, jobs/a.ini 2)",
                       NULL);
        /* an empty name between two commas, or after the last, was skipped silently */
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 4\n[jobs]\nfiles = jobs/a.ini,,jobs/a.ini\n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("top.ini:4: jobs.files: an empty file name", NULL);
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 4\n[jobs]\nfiles = jobs/a.ini, \n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("top.ini:4: jobs.files: an empty file name", NULL);
        /* a job without cluster.workers silently got the default's 8 hosts */
        write_file(bad, sizeof bad, "jobs/bad.ini",
                   "[run]\nsteps = 2\n[strategy]\nkind = allreduce\n");
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 16\n[jobs]\nfiles = jobs/a.ini, jobs/bad.ini\n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("jobs/bad.ini: cluster.workers missing: a job states its own host count "
                       "(the platform has 16",
                       NULL);
        /* what jobs do not support */
        write_file(top, sizeof top, "top.ini",
                   "[cluster]\nworkers = 4\nplatform = edge\n[jobs]\nfiles = jobs/a.ini\n");
        ck_assert_int_eq(dtsim(args), 2);
        one_error_line("top.ini:3: cluster.platform: jobs share a generated platform", "edge");
    }
    /* a job with a [sweep], and options that do not apply */
    write_file(bad, sizeof bad, "jobs/bad.ini",
               "[run]\nsteps = 2\n[cluster]\nworkers = 2\n[sweep]\nrun.seed = 1, 2\n");
    write_file(top, sizeof top, "top.ini",
               "[cluster]\nworkers = 4\n[jobs]\nfiles = jobs/bad.ini\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", top, NULL}), 2);
    one_error_line("jobs/bad.ini: a [sweep] in a job", NULL);
    write_file(top, sizeof top, "top.ini", "[cluster]\nworkers = 4\n[jobs]\nfiles = jobs/a.ini\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", top, "--db", db_path, "-j", "2", NULL}), 2);
    one_error_line("-j does not apply to a file of jobs", NULL);
    ck_assert_int_ne(access(db_path, F_OK), 0); /* nothing written */
    const char *live[] = {"run", top, "--db", db_path, "--member", "0", NULL};
    write_file(top, sizeof top, "top.ini", "[cluster]\nworkers = 4\n[jobs]\nfiles = jobs/a.ini\n");
    ck_assert_int_eq(dtsim(live), 2);
    ck_assert_int_ne(access(db_path, F_OK), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("jobs");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_job_that_shares_nothing_runs_as_its_scenario_does);
    tcase_add_test(tc, two_jobs_on_one_bottleneck_each_take_twice_the_transfer_time);
    tcase_add_test(tc, jobs_of_one_file_keep_their_state_apart);
    tcase_add_test(tc, bad_files_of_jobs_are_one_line_and_exit_2);
    tcase_add_test(tc, a_hundred_jobs_over_several_lines);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
