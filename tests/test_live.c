/* `dtsim run --live` as a terminal shows it: dtsim runs inside a detached tmux session of a
 * known size (a private tmux server, -L), and the screen is read back with capture-pane. The
 * final frame is compared with what the run stored: the rounds, the final accuracy, every
 * host's compute / communication / idle shares (the workers table), the mean of the hosts
 * that did not fit; no line is wider than the terminal and no frame taller; with --pace the
 * wall clock the frame shows is at least the simulated time over the pace; a line typed
 * under the view changes a link (faults.live_links) and the rerun with the recorded item
 * gives the same rows. Without tmux the suite is skipped (exit 77). The option errors need
 * no terminal. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/dtsim-live-XXXXXX";
static char sock[64];
/* The latest run_live saw a frame of the run under way: steps short of the total. */
static int saw_midway;

static const char *scenario =
    "[run]\nname = live\nsteps = 40\neval_every = 5\n[model]\narch = logreg\nbatch = 16\n"
    "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\nsynthetic_dim = 16\n"
    "synthetic_classes = 4\n[cluster]\nworkers = %d\n[strategy]\nkind = %s\n";

static void write_scenario(const char *path, int workers, const char *kind)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, scenario, workers, kind);
    fclose(f);
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The screen and its history, as text (malloc'ed). */
static char *capture(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "tmux -L %s capture-pane -p -J -S -500 2>/dev/null", sock);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    pclose(p);
    return strdup(buf);
}

/* Runs `dtsim run SCENARIO --live ARGS` in a cols x rows terminal until it exits (at most
 * 120 s) and returns the screen; *rc gets its exit code. */
static char *run_live(const char *scen, const char *db, const char *args, int cols, int rows,
                      int *rc)
{
    char cmd[2048];
    /* a server of its own each time: a new session on a socket whose server is still
     * shutting down (kill-server just before) can fail */
    static int calls;
    snprintf(sock, sizeof sock, "dtsim-live-%d-%d", (int)getpid(), calls++);
    snprintf(cmd, sizeof cmd,
             "tmux -L %s -f /dev/null new-session -d -x %d -y %d "
             "'%s run %s --db %s --live %s; echo EXIT=$?; sleep 600'",
             sock, cols, rows, DTSIM_BINARY, scen, db, args);
    ck_assert_int_eq(sh(cmd), 0);
    char *screen = NULL;
    saw_midway = 0;
    for (int i = 0; i < 1200; i++) {
        free(screen);
        screen = capture();
        if (strstr(screen, "EXIT="))
            break;
        long done, total;
        char *step = strstr(screen, "\nstep ");
        if (step && !strstr(screen, "[done]") &&
            sscanf(step, "\nstep %ld of %ld", &done, &total) == 2 && done < total)
            saw_midway = 1;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    snprintf(cmd, sizeof cmd, "tmux -L %s kill-server 2>/dev/null", sock);
    sh(cmd);
    char *e = strstr(screen, "EXIT=");
    ck_assert_msg(e, "the run did not end within 120 s:\n%s", screen);
    *rc = atoi(e + 5);
    return screen;
}

static double query(sqlite3 *db, const char *sql, const char *host)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (host)
        sqlite3_bind_text(st, 1, host, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The final frame: from its "[done]" line to its sparkline. */
static char *final_frame(char *screen)
{
    char *f = strstr(screen, "[done]");
    ck_assert_msg(f, "no final frame:\n%s", screen);
    while (f > screen && f[-1] != '\n')
        f--;
    return f;
}

/* Every line of the frame, to its sparkline, is narrower than the terminal. */
static void assert_fits(const char *frame, int cols)
{
    for (const char *l = frame; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        ck_assert_msg(len < (size_t)cols, "a line of %zu columns in %d: %.*s", len, cols, (int)len,
                      l);
        if (!strncmp(l, "accuracy", 8))
            break;
        l = nl ? nl + 1 : l + len;
    }
}

/* A host row of the frame: "HOST ROLE STEPS C% M% I%  BAR". */
typedef struct row {
    char host[32], role[16];
    long steps;
    double c, m, i;
} row_t;

static int rows_of(const char *frame, row_t *rows, int max)
{
    int n = 0;
    const char *l = frame;
    while (*l && n < max) {
        row_t r;
        if (sscanf(l, "%31s %15s %ld %lf%% %lf%% %lf%%", r.host, r.role, &r.steps, &r.c, &r.m,
                   &r.i) == 6 &&
            strncmp(r.host, "...", 3))
            rows[n++] = r;
        const char *nl = strchr(l, '\n');
        if (!nl || !strncmp(l, "accuracy", 8))
            break;
        l = nl + 1;
    }
    return n;
}

static const char *share_sql =
    "SELECT %s / (compute_s + comm_s + idle_s) FROM workers WHERE host = ?1 AND run = 1";

START_TEST(final_frame_matches_the_database)
{
    char scen[300], db_path[300];
    snprintf(scen, sizeof scen, "%s/live.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/live.db", dir);
    write_scenario(scen, 3, "sync-ps");
    int rc;
    char *screen = run_live(scen, db_path, "", 100, 30, &rc);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, screen);
    char *frame = final_frame(screen);
    assert_fits(frame, 100);

    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long steps;
    double acc, sim_time;
    char *step_line = strstr(frame, "\nstep ");
    ck_assert_ptr_nonnull(step_line);
    ck_assert_int_eq(sscanf(step_line, "\nstep %ld of %*d accuracy %lf", &steps, &acc), 2);
    ck_assert_int_eq(steps, (long)query(db, "SELECT steps FROM summary", NULL));
    ck_assert_double_eq_tol(acc, query(db, "SELECT final_accuracy FROM summary", NULL), 5e-5);
    ck_assert_int_eq(sscanf(strstr(frame, "simulated "), "simulated %lf", &sim_time), 1);
    ck_assert_double_eq_tol(sim_time, query(db, "SELECT sim_time FROM summary", NULL), 5e-4);

    row_t rows[16];
    int n = rows_of(frame, rows, 16);
    ck_assert_int_eq(n, (int)query(db, "SELECT count(*) FROM workers", NULL));
    ck_assert_int_eq(n, 4); /* 3 workers and the server */
    char sql[256];
    for (int k = 0; k < n; k++) {
        const char *col[3] = {"compute_s", "comm_s", "idle_s"};
        double shown[3] = {rows[k].c, rows[k].m, rows[k].i};
        for (int j = 0; j < 3; j++) {
            snprintf(sql, sizeof sql, share_sql, col[j]);
            ck_assert_double_eq_tol(shown[j], 100 * query(db, sql, rows[k].host), 0.051);
        }
        snprintf(sql, sizeof sql, "SELECT steps FROM workers WHERE host = ?1");
        ck_assert_int_eq(rows[k].steps, (long)query(db, sql, rows[k].host));
    }
    sqlite3_close(db);
    free(screen);
}
END_TEST

START_TEST(hosts_that_do_not_fit_are_summed_up)
{
    char scen[300], db_path[300];
    snprintf(scen, sizeof scen, "%s/many.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/many.db", dir);
    write_scenario(scen, 16, "allreduce");
    int rc;
    char *screen = run_live(scen, db_path, "", 80, 12, &rc);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, screen);
    char *frame = final_frame(screen);
    assert_fits(frame, 80);
    /* 12 rows: 3 header lines, 6 host rows, the rest, the sparkline */
    row_t rows[32];
    int n = rows_of(frame, rows, 32);
    ck_assert_int_eq(n, 6);
    int more;
    double c, m, i;
    char *rest = strstr(frame, "... ");
    ck_assert_msg(rest, "no summary of the hosts that did not fit:\n%s", frame);
    ck_assert_int_eq(
        sscanf(rest, "... %d more workers (mean) %lf%% %lf%% %lf%%", &more, &c, &m, &i), 4);
    ck_assert_int_eq(more, 16 - 6);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    /* the workers past the first 6, by index */
    ck_assert_double_eq_tol(
        c,
        100 * query(db,
                    "SELECT avg(compute_s / (compute_s + comm_s + idle_s)) FROM workers "
                    "WHERE worker >= 6",
                    NULL),
        0.051);
    ck_assert_double_eq_tol(
        m,
        100 * query(db,
                    "SELECT avg(comm_s / (compute_s + comm_s + idle_s)) FROM workers "
                    "WHERE worker >= 6",
                    NULL),
        0.051);
    sqlite3_close(db);
    /* the frame is never taller than the screen: from its first line to the sparkline */
    int lines = 0;
    for (char *l = frame; l && strncmp(l, "accuracy", 8); l = strchr(l, '\n'), l = l ? l + 1 : l)
        lines++;
    ck_assert_int_le(lines + 1, 12);
    free(screen);
}
END_TEST

START_TEST(pace_holds_the_wall_clock_back)
{
    char scen[300], db_path[300];
    snprintf(scen, sizeof scen, "%s/pace.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/pace.db", dir);
    write_scenario(scen, 2, "allreduce");
    /* how long the run is in simulated time, then watched at a pace that makes it ~1.5 s */
    int rc;
    char *screen = run_live(scen, db_path, "", 100, 30, &rc);
    ck_assert_int_eq(rc, 0);
    double sim_time;
    ck_assert_int_eq(sscanf(strstr(final_frame(screen), "simulated "), "simulated %lf", &sim_time),
                     1);
    free(screen);
    char args[64];
    double pace = sim_time / 1.5;
    snprintf(args, sizeof args, "--pace %.9g", pace);
    snprintf(db_path, sizeof db_path, "%s/pace2.db", dir);
    screen = run_live(scen, db_path, args, 100, 30, &rc);
    ck_assert_int_eq(rc, 0);
    double sim2, wall;
    char *frame = final_frame(screen);
    ck_assert_int_eq(sscanf(strstr(frame, "simulated "), "simulated %lf s wall %lf", &sim2, &wall),
                     2);
    ck_assert_double_eq_tol(sim2, sim_time, 1e-3); /* pacing does not change the run */
    ck_assert_msg(saw_midway, "no frame of the run under way in 1.5 s");
    ck_assert_msg(wall >= sim2 / pace - 0.1, "wall %.1f s < %.3f s simulated / pace %g", wall, sim2,
                  pace);
    free(screen);
}
END_TEST

/* A line typed under the view changes a link (faults.live_links): a faults row with the
 * link_degrade item that replays it, and a rerun with that item gives the same evals rows. */
START_TEST(a_typed_line_changes_a_link)
{
    char scen[300], db_path[300], cmd[2048];
    snprintf(scen, sizeof scen, "%s/links.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/links.db", dir);
    FILE *f = fopen(scen, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, scenario, 2, "sync-ps");
    fprintf(f, "[faults]\nlive_links = yes\n");
    fclose(f);
    /* its simulated time, then watched over about 3 s */
    snprintf(cmd, sizeof cmd, "%s run %s --db %s/links0.db >/dev/null 2>&1", DTSIM_BINARY, scen,
             dir);
    ck_assert_int_eq(sh(cmd), 0);
    char db0[300];
    snprintf(db0, sizeof db0, "%s/links0.db", dir);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db0, &h), SQLITE_OK);
    double sim_time = query(h, "SELECT max(sim_time) FROM evals", NULL);
    sqlite3_close(h);
    snprintf(sock, sizeof sock, "dtsim-live-%d-links", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "tmux -L %s -f /dev/null new-session -d -x 120 -y 30 "
             "'%s run %s --db %s --live --pace %.9g; echo EXIT=$?; sleep 600'",
             sock, DTSIM_BINARY, scen, db_path, sim_time / 3);
    ck_assert_int_eq(sh(cmd), 0);
    char *screen = NULL;
    int typed = 0;
    for (int i = 0; i < 600 && !(screen && strstr(screen, "EXIT=")); i++) {
        free(screen);
        screen = capture();
        if (!typed && strstr(screen, "change a link: type LINK BANDWIDTH")) {
            snprintf(cmd, sizeof cmd, "tmux -L %s send-keys 'worker-0 10Mbps' Enter", sock);
            ck_assert_int_eq(sh(cmd), 0);
            typed = 1;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    snprintf(cmd, sizeof cmd, "tmux -L %s kill-server 2>/dev/null", sock);
    sh(cmd);
    ck_assert_msg(typed && strstr(screen, "EXIT=0"), "no prompt, or the run failed:\n%s", screen);
    ck_assert_msg(strstr(screen, "worker-0 at 10Mbps from "), "no note:\n%s", screen);
    free(screen);
    ck_assert_int_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(
        sqlite3_prepare_v2(h, "SELECT target, detail FROM faults WHERE run = 1", -1, &st, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "worker-0");
    const char *item = strstr((const char *)sqlite3_column_text(st, 1), "replay: link_degrade = ");
    ck_assert_ptr_nonnull(item);
    snprintf(cmd, sizeof cmd, "%s run %s --db %s --set 'faults.link_degrade=%s' >/dev/null 2>&1",
             DTSIM_BINARY, scen, db_path, item + strlen("replay: link_degrade = "));
    sqlite3_finalize(st);
    ck_assert_int_eq(sh(cmd), 0);
    /* the rerun's rows are the live run's; the run without the change differs */
    ck_assert_double_eq(query(h,
                              "SELECT count(*) FROM evals a JOIN evals b ON a.step = b.step"
                              " AND b.run = 2 WHERE a.run = 1 AND a.sim_time = b.sim_time"
                              " AND a.test_acc = b.test_acc",
                              NULL),
                        query(h, "SELECT count(*) FROM evals WHERE run = 1", NULL));
    ck_assert_double_eq(query(h, "SELECT count(*) FROM evals WHERE run = 2", NULL),
                        query(h, "SELECT count(*) FROM evals WHERE run = 1", NULL));
    ck_assert(query(h, "SELECT max(sim_time) FROM evals WHERE run = 1", NULL) > sim_time);
    sqlite3_close(h);
}
END_TEST

/* Option errors: one line, exit 2, without a terminal. */
static int dtsim_quiet(const char *args, char *err, size_t size)
{
    char cmd[2048], path[300];
    snprintf(path, sizeof path, "%s/err", dir);
    snprintf(cmd, sizeof cmd, "%s %s </dev/null >/dev/null 2>%s", DTSIM_BINARY, args, path);
    int rc = sh(cmd);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(err, 1, size - 1, f);
    err[n] = 0;
    fclose(f);
    return rc;
}

START_TEST(live_options_are_checked)
{
    char scen[300], sweep[300], args[1024], err[4096];
    snprintf(scen, sizeof scen, "%s/opts.ini", dir);
    write_scenario(scen, 2, "allreduce");
    struct {
        const char *args, *needle;
    } cases[] = {
        {"run %s --live", "stderr is not one"}, {"run %s --pace 2", "needs --live"},
        {"run %s --live --pace 0", "--pace 0"}, {"run %s --live --pace fast", "--pace fast"},
        {"check %s --live", "--live"},          {"run %s --live", "sweep of 2 runs"},
    };
    snprintf(sweep, sizeof sweep, "%s/sweep.ini", dir);
    FILE *f = fopen(sweep, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, scenario, 2, "allreduce");
    fprintf(f, "[sweep]\nmodel.lr = 0.1, 0.2\n");
    fclose(f);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(args, sizeof args, cases[k].args, k == 5 ? sweep : scen);
        ck_assert_int_eq(dtsim_quiet(args, err, sizeof err), 2);
        char *nl = strchr(err, '\n');
        ck_assert_msg(nl && !nl[1], "expected one line for \"%s\", got: %s", args, err);
        ck_assert_msg(strstr(err, cases[k].needle), "\"%s\" not in: %s", cases[k].needle, err);
    }
}
END_TEST

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    int have_tmux = sh("tmux -V >/dev/null 2>&1") == 0;
    Suite *s = suite_create("live");
    TCase *tc = tcase_create("live");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, live_options_are_checked);
    if (have_tmux) {
        tcase_add_test(tc, final_frame_matches_the_database);
        tcase_add_test(tc, hosts_that_do_not_fit_are_summed_up);
        tcase_add_test(tc, pace_holds_the_wall_clock_back);
        tcase_add_test(tc, a_typed_line_changes_a_link);
    } else {
        printf("live: the terminal tests are skipped: tmux is not installed (make deps "
               "installs it)\n");
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
    return failed ? 1 : 0;
}
