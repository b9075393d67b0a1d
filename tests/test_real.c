/* Real mode against the simulation: `mpirun -n P dtsim run SCENARIO --real` on loopback (one
 * process per host, oversubscribed on a small machine) and `dtsim run SCENARIO` of the same
 * scenario into one database. With the flops time model a synchronous strategy must give the
 * same evaluation rows (step, test loss and accuracy to the last bit) and every node the same
 * steps and bytes sent, real or simulated: the same strategy code, only the transport
 * differs. The asynchronous parameter server and FedBuff are checked for a finished run of
 * the same shape (their order of arrivals is the machine's); FedBuff with one client host,
 * or one client in flight, for the same numbers. Refusals: a process count that does not
 * match the hosts, a strategy or key real mode cannot run, --real with a sweep, -j or --live:
 * exit 2, one line, no database made. A sweep spread over processes (--mpi) and merged by
 * rank 0 gives the rows of the same sweep run in one place.
 *
 * Skipped (77) when dtsim was built without MPI or mpirun is missing. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strategy.h"

static char dir[] = "/tmp/dtsim-real-XXXXXX";
static char err_text[8192];

/* 3 workers on a star; a ring all-reduce unless a --set says otherwise */
static const char *scenario_ini =
    "[run]\nname = r\nsteps = 12\neval_every = 4\nseed = 5\n[model]\narch = mlp\nhidden = 32\n"
    "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 1024\ntest_samples = 256\n"
    "synthetic_dim = 24\nsynthetic_classes = 4\n[cluster]\nworkers = 3\nbandwidth = 1Gbps\n"
    "latency = 50us\n[strategy]\nkind = allreduce\n";

static const char *at(const char *name)
{
    static char buf[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Runs a shell command line (stdout dropped, stderr kept in err_text); its exit code. */
static int sh(const char *line)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s >/dev/null 2>%s/err", line, dir);
    int st = system(cmd);
    FILE *f = fopen(at("err"), "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(err_text, 1, sizeof err_text - 1, f);
    err_text[n] = 0;
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* mpirun -n np dtsim run SCENARIO --real --db DB ARGS, as root too, oversubscribed, quiet */
static int real_run(int np, const char *db, const char *args)
{
    char line[2048];
    snprintf(line, sizeof line,
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_"
             "oversubscribe=1 timeout 120 %s -q -n %d %s run %s --real --db %s %s",
             DTSIM_MPIRUN, np, DTSIM_BINARY, at("s.ini"), db, args);
    return sh(line);
}

static int sim_run(const char *db, const char *args)
{
    char line[2048];
    snprintf(line, sizeof line, "%s run %s --db %s %s", DTSIM_BINARY, at("s.ini"), db, args);
    return sh(line);
}

static void one_line(const char *needle)
{
    char *nl = strchr(err_text, '\n');
    ck_assert_msg(nl && !nl[1], "expected one error line, got: %s", err_text);
    ck_assert_msg(strstr(err_text, needle), "\"%s\" not in: %s", needle, err_text);
}

/* The rows of a query joined into one text, a row a line. */
static char *rows(sqlite3 *h, const char *sql, long run)
{
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *v = (const char *)sqlite3_column_text(st, c);
            len += (size_t)snprintf(out + len, cap - len, "%s%s", c ? "|" : "", v ? v : "NULL");
        }
        len += (size_t)snprintf(out + len, cap - len, "\n");
        ck_assert(len < cap - 256);
    }
    sqlite3_finalize(st);
    return out;
}

static long run_id(sqlite3 *h, const char *name)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT id FROM runs WHERE name = ?1 ORDER BY id DESC",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    ck_assert_msg(sqlite3_step(st) == SQLITE_ROW, "no run named %s", name);
    long id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

/* Real and simulated runs of the scenario with these --set options into one database;
 * exact: the evaluation rows and every node's steps and bytes must be equal. */
static void compare(int np, const char *args, int exact)
{
    char db[300];
    snprintf(db, sizeof db, "%s", at("cmp.db"));
    unlink(db);
    ck_assert_msg(real_run(np, db, args) == 0, "real run of %s: %s", args, err_text);
    ck_assert_msg(sim_run(db, args) == 0, "simulated run of %s: %s", args, err_text);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long real = run_id(h, "r-real"), sim = run_id(h, "r");
    char *engine = rows(h, "SELECT status, simgrid_version FROM runs WHERE id = ?1", real);
    ck_assert_msg(!strncmp(engine, "finished|real: ", 15), "%s: %s", args, engine);
    free(engine);
    const char *evals = "SELECT step, test_loss, test_acc FROM evals WHERE run = ?1 ORDER BY step";
    const char *nodes = "SELECT role, worker, host, steps, bytes_sent, bytes_recv FROM workers "
                        "WHERE run = ?1 ORDER BY role, worker";
    const char *shape = "SELECT count(*), max(step) FROM evals WHERE run = ?1";
    const char *queries[3] = {evals, nodes, shape};
    for (int q = exact ? 0 : 2; q < 3; q++) {
        char *a = rows(h, queries[q], real), *b = rows(h, queries[q], sim);
        ck_assert_msg(b[0] && strncmp(b, "0|", 2), "%s: no rows for %s", args, queries[q]);
        ck_assert_msg(!strcmp(a, b), "%s: %s\nreal:\n%s\nsimulated:\n%s", args, queries[q], a, b);
        free(a);
        free(b);
    }
    /* the real run's clock is the wall clock: its workers' compute is their real gradients'
     * time, more than nothing */
    char *t = rows(h,
                   "SELECT count(*), sum(compute_s > 0) FROM workers WHERE run = ?1 AND "
                   "role != 'server'",
                   real);
    int all, busy;
    ck_assert_int_eq(sscanf(t, "%d|%d", &all, &busy), 2);
    ck_assert_msg(all > 0 && busy == all, "%s: workers with compute: %s", args, t);
    free(t);
    sqlite3_close(h);
}

START_TEST(allreduce_same_numbers)
{
    static const char *algorithms[] = {"ring", "tree", "halving-doubling"};
    for (int i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof args, "--set strategy.algorithm=%s", algorithms[i]);
        compare(3, args, 1);
    }
    compare(4,
            "--set strategy.algorithm=hierarchical --set cluster.workers=4 "
            "--set strategy.group_size=2",
            1);
}
END_TEST

START_TEST(other_strategies_same_numbers)
{
    compare(4, "--set strategy.kind=sync-ps", 1);
    compare(3, "--set strategy.kind=local-sgd --set strategy.local_steps=3", 1);
    compare(3, "--set strategy.kind=zero", 1);
    compare(4,
            "--set strategy.kind=fedavg --set strategy.clients=6 --set strategy.fraction=0.5 "
            "--set strategy.rounds=3 --set run.eval_every=1",
            1);
    compare(4, "--set strategy.kind=async-ps", 0);
}
END_TEST

/* The same text of one query on the real and the simulated run. */
static void same_rows(sqlite3 *h, const char *sql, long real, long sim)
{
    char *a = rows(h, sql, real), *b = rows(h, sql, sim);
    ck_assert_msg(b[0] && !strstr(b, "NULL"), "no rows for %s: %s", sql, b);
    ck_assert_msg(!strcmp(a, b), "%s\nreal:\n%s\nsimulated:\n%s", sql, a, b);
    free(a);
    free(b);
}

/* FedBuff, 6 clients, 3 in flight, the model moved every 2 updates, 6 server updates. With
 * one client host, the host trains its tasks in the order the server sent them and the
 * server takes their updates in that order, real as on SimGrid: the same evaluation rows to
 * the bit, steps and bytes, and the same staleness (tasks queue behind others: some
 * updates are 1 and 2 versions old). One client in flight on 3 hosts: the same. 3 in flight
 * on 3 hosts: which update arrives first is the machine's, and so are the versions and the
 * clients drawn, but not the shape: as many evaluations up to the same step, the server's
 * steps and bytes (concurrency + rounds x buffer - 1 = 14 models each way, whatever the
 * order), the hosts' steps and bytes together (every client takes as many local steps),
 * each host's bytes a whole number of the simulated run's messages, down as up, and
 * 6 x 2 updates aggregated (clients and staleness tables). */
START_TEST(fedbuff_same_shape)
{
    const char *fb = "--set strategy.kind=fedbuff --set strategy.clients=6 --set strategy.buffer=2 "
                     "--set strategy.rounds=6 --set run.eval_every=1";
    char args[512];
    snprintf(args, sizeof args, "%s --set cluster.workers=1 --set strategy.concurrency=3", fb);
    compare(2, args, 1);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(at("cmp.db"), &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long real = run_id(h, "r-real"), sim = run_id(h, "r");
    same_rows(h, "SELECT staleness, count FROM staleness WHERE run = ?1 ORDER BY staleness", real,
              sim);
    char *stale = rows(h, "SELECT max(staleness) FROM staleness WHERE run = ?1", sim);
    ck_assert_msg(atoi(stale) >= 1, "no stale update in one host's queue: %s", stale);
    free(stale);
    sqlite3_close(h);
    snprintf(args, sizeof args, "%s --set strategy.concurrency=1", fb);
    compare(4, args, 1);

    snprintf(args, sizeof args, "%s --set strategy.concurrency=3", fb);
    compare(4, args, 0);
    ck_assert_int_eq(sqlite3_open_v2(at("cmp.db"), &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    real = run_id(h, "r-real");
    sim = run_id(h, "r");
    same_rows(h,
              "SELECT steps, bytes_sent, bytes_recv FROM workers WHERE run = ?1 AND "
              "role = 'server'",
              real, sim);
    same_rows(h,
              "SELECT count(*), sum(steps), sum(bytes_sent), sum(bytes_recv) FROM workers "
              "WHERE run = ?1 AND role = 'client'",
              real, sim);
    same_rows(h, "SELECT sum(rounds) FROM clients WHERE run = ?1", real, sim);
    same_rows(h, "SELECT sum(count) FROM staleness WHERE run = ?1", real, sim);
    /* the model's bytes: the largest message of the simulated run (the stops carry none) */
    char *b = rows(h, "SELECT max(bytes) FROM messages WHERE run = ?1", sim);
    double msg = atof(b);
    free(b);
    ck_assert_msg(msg > 0, "no messages in the simulated run");
    char *hosts = rows(h,
                       "SELECT bytes_sent, bytes_recv FROM workers WHERE run = ?1 AND "
                       "role = 'client' ORDER BY worker",
                       real);
    int n = 0;
    for (char *line = hosts; *line; n++) {
        double sent, recv;
        ck_assert_int_eq(sscanf(line, "%lf|%lf", &sent, &recv), 2);
        ck_assert_msg(sent == recv && fmod(sent, msg) == 0,
                      "a client host sent %g and took "
                      "%g bytes, messages of %g bytes",
                      sent, recv, msg);
        line = strchr(line, '\n') + 1;
    }
    ck_assert_int_eq(n, 3);
    free(hosts);
    sqlite3_close(h);
}
END_TEST

START_TEST(refusals)
{
    char db[300];
    snprintf(db, sizeof db, "%s", at("refused.db"));
    unlink(db);
    ck_assert_int_eq(real_run(2, db, ""), 2);
    one_line("2 processes for 3 hosts");
    ck_assert_msg(strstr(err_text, "mpirun -n 3"), "%s", err_text);
    ck_assert_int_eq(real_run(3, db,
                              "--set strategy.kind=tensor --set strategy.tensor_parallel=3 "
                              "--set model.hidden=36"),
                     2);
    one_line("strategy.kind");
    /* the strategies that run real, as they say of themselves (SIM_RUNS_REAL) */
    char takers[512], want[600];
    sim_strategies_register();
    scenario_strategies_taking(SIM_RUNS_REAL, " and ", takers, sizeof takers);
    snprintf(want, sizeof want, "tensor does not run real (--real runs %s)", takers);
    ck_assert_msg(strstr(err_text, want), "%s", err_text);
    /* fedavg's own refusal (its real_check), after real mode's generic ones */
    ck_assert_int_eq(real_run(3, db,
                              "--set strategy.kind=fedavg --set strategy.clients=4 "
                              "--set strategy.fraction=0.5 --set strategy.scaffold=yes"),
                     2);
    one_line("strategy.scaffold: SCAFFOLD's control variates");
    ck_assert_int_eq(real_run(3, db, "--set \"faults.crash=worker-1 at 1s\""), 2);
    one_line("faults.crash: real mode plays stragglers, slowdowns and (on the testbed) link");
    ck_assert_int_eq(real_run(3, db, "--set run.max_time=10s"), 2);
    one_line("run.max_time");
    ck_assert_int_eq(real_run(3, db, "-j 2"), 2);
    one_line("-j does not apply");
    /* without mpirun (one process of its own): the same line, not an MPI abort */
    char line[1024];
    snprintf(line, sizeof line,
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "%s run %s --real -j 2 --db %s",
             DTSIM_BINARY, at("s.ini"), db);
    ck_assert_int_eq(sh(line), 2);
    one_line("-j does not apply");
    struct stat sb;
    ck_assert_msg(stat(db, &sb) != 0, "a refused real run made %s", db);
}
END_TEST

/* `mpirun -n 3 dtsim run SWEEP --mpi`: the sweep's 6 members spread over 3 processes and
 * merged by rank 0 give the rows of the same sweep run in one place. */
START_TEST(sweep_spread)
{
    FILE *f = fopen(at("sw.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s[sweep]\nmodel.lr = 0.1, 0.2, 0.3\nstrategy.algorithm = ring, tree\n",
            scenario_ini);
    fclose(f);
    char spread[300], whole[300], line[2048];
    snprintf(spread, sizeof spread, "%s", at("spread.db"));
    snprintf(whole, sizeof whole, "%s", at("whole.db"));
    snprintf(line, sizeof line,
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_"
             "oversubscribe=1 timeout 120 %s -q -n 3 %s run %s --mpi --db %s",
             DTSIM_MPIRUN, DTSIM_BINARY, at("sw.ini"), spread);
    ck_assert_msg(sh(line) == 0, "%s", err_text);
    snprintf(line, sizeof line, "%s run %s -j 2 --db %s", DTSIM_BINARY, at("sw.ini"), whole);
    ck_assert_msg(sh(line) == 0, "%s", err_text);
    const char *q = "SELECT r.sweep_index, r.name, e.step, e.sim_time, e.test_loss, "
                    "e.test_acc FROM evals e JOIN runs r ON r.id = e.run WHERE ?1 = ?1 "
                    "ORDER BY r.sweep_index, e.step";
    sqlite3 *a, *b;
    ck_assert_int_eq(sqlite3_open_v2(spread, &a, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_open_v2(whole, &b, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *ra = rows(a, q, 0), *rb = rows(b, q, 0);
    ck_assert_msg(!strcmp(ra, rb), "spread:\n%s\nwhole:\n%s", ra, rb);
    char *n = rows(a, "SELECT count(DISTINCT sweep_index) FROM runs WHERE ?1 = ?1", 0);
    ck_assert_str_eq(n, "6\n");
    free(ra);
    free(rb);
    free(n);
    sqlite3_close(a);
    sqlite3_close(b);
    /* a scenario without a sweep: one line, exit 2 */
    snprintf(line, sizeof line,
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 %s run %s --mpi --db %s",
             DTSIM_BINARY, at("s.ini"), at("none.db"));
    ck_assert_int_eq(sh(line), 2);
    one_line("--mpi spreads a sweep's members");
}
END_TEST

/* A straggler computes for real, then sleeps the rest of its slowdown: its compute seconds
 * are many times its peers' (x1000: a second of sleep, far above what a loaded machine adds
 * to the others' real compute), and the numbers stay those of the simulation. */
START_TEST(straggler_sleeps)
{
    compare(3, "--set \"faults.straggler=worker-1 x1000\"", 1);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(at("cmp.db"), &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *t = rows(h,
                   "SELECT max(compute_s * (worker = 1)), max(compute_s * (worker != 1)) "
                   "FROM workers WHERE run = ?1",
                   run_id(h, "r-real"));
    double slow, others;
    ck_assert_int_eq(sscanf(t, "%lf|%lf", &slow, &others), 2);
    ck_assert_msg(slow > 5 * others, "straggler %g s, the others at most %g s", slow, others);
    free(t);
    sqlite3_close(h);
}
END_TEST

/* `dtsim validate` on the testbed (root): one link setting, 2 hosts, a few steps, the real
 * side twice; a table row with the real runs' median seconds per step (each run's figure
 * read back from the database: their mean, two runs), their spread (max - min over the
 * median), the load, and the four models' seconds per step, the runs in its database with
 * the same evaluation rows real and simulated. Without a data set's files or with a sweep:
 * one line, exit 2. */
START_TEST(validate_table)
{
    char line[2048], db[300];
    snprintf(db, sizeof db, "%s", at("validate.db"));
    snprintf(line, sizeof line, "%s validate %s --db %s", DTSIM_BINARY, at("s.ini"), db);
    ck_assert_int_eq(sh(line), 2);
    one_line("data.source = synthetic");
    snprintf(line, sizeof line, "%s validate %s --bandwidth 10Mbit --db %s", DTSIM_BINARY,
             at("s.ini"), db);
    ck_assert_int_eq(sh(line), 2);
    one_line("cluster.bandwidth: unknown unit \"Mbit\"");
    /* --calibrate: no scenario, every value checked before a testbed comes up */
    snprintf(line, sizeof line, "%s validate --calibrate --bandwidth 10Mbps,10Mbit", DTSIM_BINARY);
    ck_assert_int_eq(sh(line), 2);
    one_line("--bandwidth 10Mbit: unknown unit \"Mbit\"");
    snprintf(line, sizeof line, "%s validate --calibrate %s", DTSIM_BINARY, at("s.ini"));
    ck_assert_int_eq(sh(line), 2);
    one_line("--calibrate takes no SCENARIO");
    if (geteuid() != 0 || access("/usr/share/datasets/fashion-mnist", R_OK)) {
        printf("real: validate's table skipped (needs root and dataset-fashion-mnist)\n");
        return;
    }
    FILE *f = fopen(at("v.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("[run]\nname = v\nseed = 2\n[model]\narch = mlp\nhidden = 32\nbatch = 16\n"
          "[data]\ntrain_samples = 2048\ntest_samples = 500\n[cluster]\nworkers = 2\n"
          "[strategy]\nkind = allreduce\n",
          f);
    fclose(f);
    char out[300];
    snprintf(out, sizeof out, "%s", at("table.txt"));
    snprintf(line, sizeof line,
             "%s validate %s --bandwidth 100Mbps --latency 0.1ms --steps 3 "
             "--repeat 2 --db %s > %s",
             DTSIM_BINARY, at("v.ini"), db, out);
    ck_assert_msg(system(line) == 0, "%s", line);
    f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    char row[512] = "";
    double real = 0, spread = -1, load = -1, m[4];
    int found = 0;
    while (!found && fgets(row, sizeof row, f))
        found = sscanf(row, "allreduce 100Mbps 0.1ms %lf %lf%% %lf %lf %*s %lf %*s %lf %*s %lf",
                       &real, &spread, &load, &m[0], &m[1], &m[2], &m[3]) == 7;
    fclose(f);
    ck_assert_msg(found, "no table row in %s", out);
    ck_assert_msg(real > 0 && m[0] > 0 && m[1] > 0 && m[2] > 0 && m[3] > 0, "%s", row);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *n = rows(h, "SELECT count(*), sum(name LIKE '%-real') FROM runs WHERE ?1 = ?1", 0);
    ck_assert_str_eq(n, "6|2\n");
    free(n);
    /* the two real runs' seconds per step: the median of two is their mean, the spread
     * their difference over it */
    char *t = rows(h,
                   "SELECT group_concat(sim_time / steps, ' ') FROM summary WHERE run <= 2 "
                   "AND ?1 = ?1",
                   0);
    double t1, t2;
    ck_assert_int_eq(sscanf(t, "%lf %lf", &t1, &t2), 2);
    free(t);
    double mid = (t1 + t2) / 2;
    ck_assert_msg(fabs(real - mid) <= 1e-3 * mid &&
                      fabs(spread - 100 * fabs(t1 - t2) / mid) <= 0.06,
                  "row %s: runs %g and %g s a step", row, t1, t2);
    ck_assert_msg(load >= 0, "%s", row);
    const char *ev = "SELECT step, test_loss, test_acc FROM evals WHERE run = ?1";
    char *a = rows(h, ev, 1), *b = rows(h, ev, 3);
    ck_assert_msg(a[0] && !strcmp(a, b), "real:\n%s\nsimulated:\n%s", a, b);
    free(a);
    free(b);
    sqlite3_close(h);

    /* faults.link_degrade on the testbed: the script reshapes worker-1's link and back, two
     * rows at their moments; the numbers stay the simulation's. Off the testbed: refused. */
    snprintf(db, sizeof db, "%s", at("degrade.db"));
    const char *fault = "--set \"faults.link_degrade=worker-1 at 0.2s to 10Mbps for 0.3s\" "
                        "--set run.steps=150 --set cluster.bandwidth=100Mbps";
    ck_assert_int_eq(real_run(2, db, fault), 2);
    one_line("on the shaped-link testbed only");
    snprintf(line, sizeof line,
             "%s/tests/testbed/testbed.sh with --hosts 2 --bandwidth 100Mbps "
             "--latency 0.1ms -- %s run %s --real --db %s %s",
             DTSIM_SOURCE_DIR, DTSIM_BINARY, at("v.ini"), db, fault);
    ck_assert_msg(sh(line) == 0, "%s", err_text);
    snprintf(line, sizeof line, "%s run %s --db %s %s", DTSIM_BINARY, at("v.ini"), db, fault);
    ck_assert_msg(sh(line) == 0, "%s", err_text);
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    /* each row once the script has reshaped the link: its moment plus the script's time */
    char *fr = rows(h,
                    "SELECT kind, target, sim_time >= 0.2 AND sim_time < 0.2 + 1, "
                    "sim_time >= 0.5 AND sim_time < 0.5 + 1 FROM faults WHERE run = ?1 "
                    "ORDER BY sim_time",
                    1);
    ck_assert_msg(!strncmp(fr, "link-degrade|worker-1|1|", 24) &&
                      strstr(fr, "\nlink-restore|worker-1|") && strstr(fr, "|1\n"),
                  "%s", fr);
    free(fr);
    a = rows(h, ev, 1);
    b = rows(h, ev, 2);
    ck_assert_msg(a[0] && !strcmp(a, b), "degraded, real:\n%s\nsimulated:\n%s", a, b);
    free(a);
    free(b);
    sqlite3_close(h);
}
END_TEST

static int write_scenario(void)
{
    FILE *f = fopen(at("s.ini"), "w");
    if (!f)
        return -1;
    fputs(scenario_ini, f);
    return fclose(f);
}

int main(void)
{
    char line[512];
    snprintf(line, sizeof line, "%s --version | grep -q 'real mode: not built'", DTSIM_BINARY);
    if (!DTSIM_MPIRUN[0] || access(DTSIM_MPIRUN, X_OK) || system(line) == 0) {
        printf("real: skipped: dtsim was built without MPI or mpirun is missing (make deps "
               "installs openmpi-bin and libopenmpi-dev; configure again)\n");
        return 77;
    }
    if (!mkdtemp(dir))
        return 1;
    if (write_scenario())
        return 1;
    Suite *s = suite_create("real");
    TCase *tc = tcase_create("real");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, allreduce_same_numbers);
    tcase_add_test(tc, other_strategies_same_numbers);
    tcase_add_test(tc, fedbuff_same_shape);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, sweep_spread);
    tcase_add_test(tc, straggler_sleeps);
    tcase_add_test(tc, validate_table);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    snprintf(line, sizeof line, "rm -rf %s", dir);
    if (!failed && system(line) != 0)
        return 1;
    return failed ? 1 : 0;
}
