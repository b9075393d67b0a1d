/* A sweep run as separate jobs and joined again: `dtsim run SWEEP.ini --member I` (or
 * SLURM_ARRAY_TASK_ID) into a database per job, then `dtsim merge`. The merged sweep is
 * compared with the same sweep run whole in one place: the same members under one sweep id,
 * the same evaluation rows to the last bit, every row of every table copied with its run;
 * merging twice or overlapping files adds nothing twice; a member that had not finished is
 * replaced by one that did; disjoint sweeps stay apart. Refusals (another schema version, a
 * conflict, the target among the sources, a foreign file, bad member numbers) exit 2 with one
 * line and leave the target as it was, or not made. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/dtsim-merge-XXXXXX";
static char err_text[4096];

static const char *sweep_ini =
    "[run]\nname = %s\nsteps = 6\neval_every = 3\n[model]\narch = logreg\nbatch = 16\n"
    "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\nsynthetic_dim = 16\n"
    "synthetic_classes = 4\n[cluster]\nworkers = 2\n[strategy]\nkind = allreduce\n"
    "[sweep]\nmodel.lr = 0.1, 0.2, 0.3\n";

/* "DIR/name" in a static buffer of 4 (rotating) */
static const char *at(const char *name)
{
    static char buf[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_sweep(const char *path, const char *name)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, sweep_ini, name);
    fclose(f);
}

/* Runs "ENV dtsim ARGS" through the shell (stdout dropped, stderr kept in err_text). */
static int dtsim(const char *env, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s %s >/dev/null 2>%s/err", env ? env : "", DTSIM_BINARY, args,
             dir);
    int st = system(cmd);
    FILE *f = fopen(at("err"), "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(err_text, 1, sizeof err_text - 1, f);
    err_text[n] = 0;
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void one_line(const char *needle)
{
    char *nl = strchr(err_text, '\n');
    ck_assert_msg(nl && !nl[1], "expected one error line, got: %s", err_text);
    ck_assert_msg(strstr(err_text, needle), "\"%s\" not in: %s", needle, err_text);
}

static sqlite3 *open_db(const char *path)
{
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    return h;
}

static long count(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long v = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void exec(sqlite3 *h, const char *sql)
{
    ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
}

static void copy_file(const char *from, const char *to)
{
    char cmd[800];
    snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

/* The evaluation rows of the member `index` of the only sweep, as text. */
static char *evals_of(sqlite3 *h, long index)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT e.sim_time, e.step, e.samples, e.bytes, "
                                        "e.test_loss, e.test_acc FROM evals e JOIN runs r ON "
                                        "r.id = e.run WHERE r.sweep_index = ?1 ORDER BY "
                                        "e.sim_time, e.step",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, index);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int c = 0; c < 6; c++) /* %a: every bit of the double */
            fprintf(f, "%a%c", sqlite3_column_double(st, c), c == 5 ? '\n' : ' ');
    sqlite3_finalize(st);
    fclose(f);
    return buf;
}

/* The members 0 and 1 into a.db (--member), 1 and 2 into b.db (SLURM_ARRAY_TASK_ID). */
static void run_members(void)
{
    char args[1024];
    snprintf(args, sizeof args, "rm -f %s/*.db %s/*.db-*", dir, dir);
    ck_assert_int_eq(system(args), 0); /* each test starts from no database */
    write_sweep(at("sw.ini"), "sw");
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "run %s --member %d --db %s", at("sw.ini"), i, at("a.db"));
        ck_assert_int_eq(dtsim(NULL, args), 0);
    }
    for (int i = 1; i < 3; i++) {
        char env[64];
        snprintf(env, sizeof env, "SLURM_ARRAY_TASK_ID=%d", i);
        snprintf(args, sizeof args, "run %s --db %s", at("sw.ini"), at("b.db"));
        ck_assert_int_eq(dtsim(env, args), 0);
    }
}

START_TEST(members_merged_are_the_whole_sweep)
{
    run_members();
    char args[1024];
    snprintf(args, sizeof args, "run %s --db %s", at("sw.ini"), at("whole.db"));
    ck_assert_int_eq(dtsim(NULL, args), 0);
    snprintf(args, sizeof args, "merge %s %s --into %s", at("a.db"), at("b.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 0);

    sqlite3 *x = open_db(at("x.db")), *whole = open_db(at("whole.db"));
    sqlite3 *a = open_db(at("a.db")), *b = open_db(at("b.db"));
    ck_assert_int_eq(count(x, "SELECT count(*) FROM runs"), 3);
    ck_assert_int_eq(count(x, "SELECT count(DISTINCT sweep) FROM runs"), 1);
    ck_assert_int_eq(count(x, "SELECT count(DISTINCT sweep_index) FROM runs"), 3);
    /* a.db and b.db name the same sweep, whichever way the member was chosen */
    ck_assert_int_eq(count(a, "SELECT count(DISTINCT sweep) FROM runs"), 1);
    for (long i = 0; i < 3; i++) {
        char *m = evals_of(x, i), *w = evals_of(whole, i);
        ck_assert_msg(strlen(m) > 0, "member %ld has no evaluations", i);
        ck_assert_str_eq(m, w);
        free(m);
        free(w);
    }
    /* every row of every table came along, and refers to a run of x */
    const char *tables[] = {"params",     "evals",    "workers", "memory",
                            "label_hist", "timeline", "links",   "summary"};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", tables[t]);
        long in_a = count(a, sql), in_b = count(b, sql), in_x = count(x, sql);
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM %s WHERE run = (SELECT id FROM runs WHERE "
                 "sweep_index = 1)",
                 tables[t]);
        long dup = count(b, sql); /* member 1 is in both */
        ck_assert_msg(in_x == in_a + in_b - dup, "%s: %ld rows, expected %ld + %ld - %ld",
                      tables[t], in_x, in_a, in_b, dup);
        ck_assert_int_gt(in_x, 0);
    }
    ck_assert_int_eq(count(x, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM evals WHERE run NOT IN (SELECT id FROM "
                              "runs)"),
                     0);
    sqlite3_close(a);
    sqlite3_close(b);
    sqlite3_close(whole);

    /* again: nothing added */
    long evals = count(x, "SELECT count(*) FROM evals");
    ck_assert_int_eq(dtsim(NULL, args), 0);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM runs"), 3);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM evals"), evals);

    /* a disjoint sweep stays a sweep of its own */
    write_sweep(at("other.ini"), "other");
    snprintf(args, sizeof args, "run %s --member 2 --db %s", at("other.ini"), at("c.db"));
    ck_assert_int_eq(dtsim("SLURM_ARRAY_JOB_ID=4242", args), 0);
    snprintf(args, sizeof args, "merge %s --into %s", at("c.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 0);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM runs"), 4);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM runs WHERE sweep = 'other-slurm4242' AND "
                              "sweep_index = 2"),
                     1);
    sqlite3_close(x);
}
END_TEST

START_TEST(a_member_that_finished_replaces_one_that_did_not)
{
    run_members();
    copy_file(at("a.db"), at("f.db"));
    sqlite3 *f = open_db(at("f.db"));
    exec(f, "UPDATE runs SET status = 'failed' WHERE sweep_index = 0");
    sqlite3_close(f);
    char args[1024];
    snprintf(args, sizeof args, "merge %s --into %s", at("f.db"), at("y.db"));
    ck_assert_int_eq(dtsim(NULL, args), 0);
    snprintf(args, sizeof args, "merge %s --into %s", at("a.db"), at("y.db"));
    ck_assert_int_eq(dtsim(NULL, args), 0);
    sqlite3 *y = open_db(at("y.db"));
    ck_assert_int_eq(count(y, "SELECT count(*) FROM runs WHERE sweep_index = 0"), 1);
    ck_assert_int_eq(count(y, "SELECT count(*) FROM runs WHERE status = 'finished'"), 2);
    /* the failed one's rows went with it */
    ck_assert_int_eq(count(y, "SELECT count(*) FROM evals"),
                     2 * count(y, "SELECT count(*) FROM evals WHERE run = (SELECT id FROM runs "
                                  "WHERE sweep_index = 1)"));
    sqlite3_close(y);
}
END_TEST

START_TEST(refusals_leave_the_target_as_it_was)
{
    run_members();
    char args[1024];
    snprintf(args, sizeof args, "merge %s --into %s", at("a.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 0);
    struct stat before;
    ck_assert_int_eq(stat(at("x.db"), &before), 0);
    sqlite3 *x = open_db(at("x.db"));
    long runs = count(x, "SELECT count(*) FROM runs"),
         evals = count(x, "SELECT count(*) FROM evals");

    /* a member claimed with another configuration */
    copy_file(at("b.db"), at("conflict.db"));
    sqlite3 *c = open_db(at("conflict.db"));
    exec(c, "UPDATE runs SET config = replace(config, 'lr = 0.2', 'lr = 0.25')");
    sqlite3_close(c);
    snprintf(args, sizeof args, "merge %s --into %s", at("conflict.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("different configurations");
    ck_assert_int_eq(count(x, "SELECT count(*) FROM runs"), runs);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM evals"), evals);

    /* another schema version */
    copy_file(at("b.db"), at("old.db"));
    c = open_db(at("old.db"));
    exec(c, "PRAGMA user_version = 3");
    sqlite3_close(c);
    snprintf(args, sizeof args, "merge %s %s --into %s", at("b.db"), at("old.db"), at("new.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("schema version 3");
    ck_assert_int_ne(access(at("new.db"), F_OK), 0); /* not made */

    /* a conflict into a new file: the file made for it goes again */
    snprintf(args, sizeof args, "merge %s %s --into %s", at("a.db"), at("conflict.db"),
             at("new.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    ck_assert_int_ne(access(at("new.db"), F_OK), 0);

    /* the target among the sources, a foreign SQLite file, a missing one, no --into */
    snprintf(args, sizeof args, "merge %s %s --into %s", at("b.db"), at("x.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("also a source");
    sqlite3 *foreign;
    ck_assert_int_eq(sqlite3_open(at("foreign.db"), &foreign), SQLITE_OK);
    exec(foreign, "CREATE TABLE t (a)");
    sqlite3_close(foreign);
    snprintf(args, sizeof args, "merge %s --into %s", at("foreign.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("not a dtsim results database");
    snprintf(args, sizeof args, "merge %s --into %s", at("missing.db"), at("x.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("missing.db");
    snprintf(args, sizeof args, "merge %s", at("a.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("--into");
    ck_assert_int_eq(count(x, "SELECT count(*) FROM runs"), runs);
    ck_assert_int_eq(count(x, "SELECT count(*) FROM pragma_integrity_check WHERE "
                              "integrity_check = 'ok'"),
                     1);
    sqlite3_close(x);

    /* member numbers */
    snprintf(args, sizeof args, "run %s --member 3 --db %s", at("sw.ini"), at("z.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("members 0 to 2");
    snprintf(args, sizeof args, "run %s --db %s", at("sw.ini"), at("z.db"));
    ck_assert_int_eq(dtsim("SLURM_ARRAY_TASK_ID=-1", args), 2);
    one_line("SLURM_ARRAY_TASK_ID=-1");
    FILE *f = fopen(at("one.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("[run]\nsteps = 2\n[data]\nsource = synthetic\n", f);
    fclose(f);
    snprintf(args, sizeof args, "run %s --member 0 --db %s", at("one.ini"), at("z.db"));
    ck_assert_int_eq(dtsim(NULL, args), 2);
    one_line("no [sweep]");
    ck_assert_int_ne(access(at("z.db"), F_OK), 0);
}
END_TEST

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    Suite *s = suite_create("merge");
    TCase *tc = tcase_create("merge");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, members_merged_are_the_whole_sweep);
    tcase_add_test(tc, a_member_that_finished_replaces_one_that_did_not);
    tcase_add_test(tc, refusals_leave_the_target_as_it_was);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* the tests share dir: one after the other */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "merge: could not remove %s\n", dir);
    return failed ? 1 : 0;
}
