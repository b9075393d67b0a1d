/* The numbers the lessons state (scenarios/lessons/NAME.md) against their runs
 * (results/figures/lesson_numbers.h): every number of every lesson's prose tied to a run's metric,
 * a key or a reason; the rules of a tie on texts made here (a drift, an untied number, a bad
 * annotation, rounding, units, words that hold digits); and one lesson run for real, the
 * bandwidth lesson (8 runs, about 16 s of CPU), whose every stated number must be what its
 * runs measure.
 *
 * `test_lessons slow` (ctest lessons_slow, `make check-lessons`) runs all six lessons (about
 * 4 minutes on 2 cores) and checks each; it skips, saying so, unless DTSIM_SLOW=1. With
 * DTSIM_LESSON_DBS=DIR it checks DIR/NAME.db instead of running (runs a teacher or a writer
 * already has: dtsim run scenarios/lessons/NAME.ini --db DIR/NAME.db). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lesson_numbers.h"
#include "query.h"

#include "cli_checks.h"

static const char *const lessons[] = {"bandwidth", "staleness",   "noniid",
                                      "pipeline",  "transformer", "optimizer"};
enum { N_LESSONS = sizeof lessons / sizeof lessons[0] };

static char dir[64];

static char *lesson_text(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/scenarios/lessons/%s.md", DTSIM_SOURCE, name);
    return cli_slurp(p);
}

/* Runs lesson name into db (-j 2, as its README says), from dir. */
static void lesson_run(const char *name, const char *db)
{
    char ini[512], out[128], err[128];
    snprintf(ini, sizeof ini, "%s/scenarios/lessons/%s.ini", DTSIM_SOURCE, name);
    snprintf(out, sizeof out, "%s/%s.out", dir, name);
    snprintf(err, sizeof err, "%s/%s.err", dir, name);
    unlink(db);
    const char *argv[] = {DTSIM_BINARY, "run", ini, "-j", "2", "--db", db, NULL};
    int rc = cli_wait(cli_start_in(dir, out, err, argv));
    ck_assert_msg(rc == 0, "dtsim run %s: exit %d (%s)", ini, rc, err);
}

/* Every issue, one line each, for a failing check's message. */
static void issues_print(const char *what, const results_lesson_check_t *c)
{
    static const char *const kind[] = {"differs", "untied", "bad"};
    for (size_t i = 0; i < c->n_issues; i++)
        fprintf(stderr, "%s:%d: %s: %s\n", what, c->issues[i].line, kind[c->issues[i].kind],
                c->issues[i].msg);
}

/* text against the runs of sweep name in db (NULL: no runs, the ties alone). */
static void check_text(const char *text, const char *db, const char *name,
                       results_lesson_check_t *c)
{
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    dt_err_t err = {""};
    if (db) {
        ck_assert_msg(results_query_open(&q, db, &err) == DT_OK, "%s", err.msg);
        ck_assert_msg(results_query_select(q, NULL, name, &runs, &err) == DT_OK, "%s", err.msg);
    }
    ck_assert_msg(results_lesson_check(text, q, db ? &runs : NULL, c, &err) == DT_OK, "%s",
                  err.msg);
    results_runs_free(&runs);
    results_query_close(q);
}

/* Lesson name's text holds against db's runs: no issue, and at least min_measured numbers
 * compared with them. */
static void lesson_holds(const char *name, const char *db, size_t min_measured)
{
    char *text = lesson_text(name), sweep[64], what[96];
    snprintf(sweep, sizeof sweep, "lesson-%s", name);
    snprintf(what, sizeof what, "scenarios/lessons/%s.md", name);
    results_lesson_check_t c;
    check_text(text, db, sweep, &c);
    issues_print(what, &c);
    ck_assert_msg(c.n_issues == 0, "%s: %zu numbers the runs contradict or leave unchecked", what,
                  c.n_issues);
    ck_assert_msg(c.measured >= min_measured, "%s: %zu measured numbers", what, c.measured);
    results_lesson_check_free(&c);
    free(text);
}

/* --- the quick suite ------------------------------------------------------------------- */

static char bandwidth_db[128];

static void setup_once(void)
{
    strcpy(dir, "/tmp/dtsim-lessons-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(bandwidth_db, sizeof bandwidth_db, "%s/bandwidth.db", dir);
    lesson_run("bandwidth", bandwidth_db);
}

static void teardown_once(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Every number of every lesson's prose is tied: a new one without its annotation fails. */
START_TEST(every_lesson_number_is_tied)
{
    for (int i = 0; i < N_LESSONS; i++) {
        char *text = lesson_text(lessons[i]), what[96];
        snprintf(what, sizeof what, "scenarios/lessons/%s.md", lessons[i]);
        results_lesson_check_t c;
        check_text(text, NULL, NULL, &c);
        issues_print(what, &c);
        ck_assert_msg(c.n_issues == 0, "%s: %zu numbers untied or badly tied", what, c.n_issues);
        ck_assert_msg(c.measured >= 4, "%s: %zu measured numbers", what, c.measured);
        ck_assert_uint_eq(c.numbers, c.measured + c.inputs + c.fixed);
        results_lesson_check_free(&c);
        free(text);
    }
}
END_TEST

/* scenarios/lessons/README.md names every metric a run: annotation may use. */
START_TEST(readme_lists_the_metrics)
{
    char p[512], want[64];
    snprintf(p, sizeof p, "%s/scenarios/lessons/README.md", DTSIM_SOURCE);
    char *readme = cli_slurp(p);
    size_t i = 0;
    for (const char *m; (m = results_lesson_metric(i)); i++) {
        snprintf(want, sizeof want, "`%s`", m);
        ck_assert_msg(strstr(readme, want), "%s does not name the metric %s", p, want);
    }
    ck_assert_uint_ge(i, 20);
    free(readme);
}
END_TEST

/* The rules, on texts made here against the bandwidth runs: sync-ps computes 18.96% of its
 * time at 100 Gb/s and reaches 80% in 86.93, 8.734, 0.9143 and 0.1324 s (measured). */
START_TEST(tie_rules)
{
    static const struct {
        const char *text;
        size_t drift, untied, bad, measured, inputs, fixed;
    } cases[] = {
        {"19%<!-- run: compute strategy.kind=sync-ps cluster.bandwidth=100Gbps -->", 0, 0, 0, 1, 0,
         0},
        {"19.0%<!-- run: compute strategy.kind=sync-ps cluster.bandwidth=100Gbps -->", 0, 0, 0, 1,
         0, 0}, /* 18.96 is 19.0 to a tenth */
        {"18.9%<!-- run: compute strategy.kind=sync-ps cluster.bandwidth=100Gbps -->", 1, 0, 0, 1,
         0, 0},
        {"25%<!-- run: compute strategy.kind=sync-ps cluster.bandwidth=100Gbps -->", 1, 0, 0, 1, 0,
         0},
        /* a list in sweep order, the unit of the last for all */
        {"87, 8.7, 0.91 and 0.13 s<!-- run: time_to_target strategy.kind=sync-ps -->", 0, 0, 0, 4,
         0, 0},
        {"87 s, 8.7 s, 0.13 s<!-- run: time_to_target strategy.kind=sync-ps -->", 0, 0, 1, 3, 0, 0},
        /* one number for many runs: every one of them */
        {"200<!-- key: run.steps --> steps, 3.01 GB<!-- run: bytes strategy.kind=sync-ps -->", 0, 0,
         0, 1, 1, 0},
        {"2.63 GB<!-- run: bytes -->", 1, 0, 0, 1, 0, 0},
        /* inputs: as written or in base units (80% of 0.8) */
        {"on 8<!-- key: cluster.workers --> workers to 80%<!-- key: run.target_accuracy -->", 0, 0,
         0, 0, 2, 0},
        {"on 16<!-- key: cluster.workers --> workers", 1, 0, 0, 0, 1, 0},
        {"100 Mb/s to 100 Gb/s<!-- key: cluster.bandwidth -->", 0, 0, 0, 0, 2, 0},
        {"2 (p - 1) / p<!-- fixed: the formula -->", 0, 0, 0, 0, 0, 2},
        /* untied; tied across a paragraph's end is not tied */
        {"a 256 x 128 grid", 0, 1, 0, 0, 0, 0},
        {"19%\n\nand<!-- run: compute strategy.kind=sync-ps cluster.bandwidth=100Gbps -->", 0, 1, 1,
         0, 0, 0},
        /* not prose numbers: code, words, names, an ordered list's numbers */
        {"`--set model.hidden=1024` 1F1B a100 shards:2 worker-0 x8\n\n1. a\n2. b\n", 0, 0, 0, 0, 0,
         0},
        /* bad annotations */
        {"19%<!-- run: speed -->", 0, 0, 1, 0, 0, 0},
        {"19%<!-- fixed: -->", 0, 0, 1, 0, 0, 0},
        {"19%<!-- run: compute cluster.bandwidth=3Gbps -->", 0, 0, 1, 1, 0, 0},
        {"19%\n<!-- run: compute strategy.kind=sync-ps -->", 0, 1, 1, 0, 0, 0},
        {"a comment that is no tie<!-- TODO -->", 0, 0, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        results_lesson_check_t c;
        check_text(cases[i].text, bandwidth_db, "lesson-bandwidth", &c);
        size_t n[3] = {0};
        for (size_t k = 0; k < c.n_issues; k++)
            n[c.issues[k].kind]++;
        issues_print(cases[i].text, &c);
        ck_assert_msg(n[RESULTS_LESSON_DRIFT] == cases[i].drift &&
                          n[RESULTS_LESSON_UNTIED] == cases[i].untied &&
                          n[RESULTS_LESSON_BAD] == cases[i].bad,
                      "case %zu (%s): %zu drift, %zu untied, %zu bad", i, cases[i].text,
                      n[RESULTS_LESSON_DRIFT], n[RESULTS_LESSON_UNTIED], n[RESULTS_LESSON_BAD]);
        ck_assert_msg(c.measured == cases[i].measured && c.inputs == cases[i].inputs &&
                          c.fixed == cases[i].fixed,
                      "case %zu: %zu measured, %zu inputs, %zu fixed", i, c.measured, c.inputs,
                      c.fixed);
        results_lesson_check_free(&c);
    }
}
END_TEST

/* The page: no annotation in it, the number the runs contradict marked with their value and
 * counted at the top. */
START_TEST(page_marks_a_drift)
{
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    dt_err_t err = {""};
    ck_assert(results_query_open(&q, bandwidth_db, &err) == DT_OK);
    ck_assert(results_query_select(q, NULL, "lesson-bandwidth", &runs, &err) == DT_OK);
    const char *text = "Compute: 25%<!-- run: compute strategy.kind=sync-ps "
                       "cluster.bandwidth=100Gbps -->, 3.01 GB<!-- run: bytes "
                       "strategy.kind=sync-ps -->.\n";
    results_lesson_check_t c;
    char *html = results_lesson_html(text, 0, q, &runs, &c, &err);
    ck_assert_str_eq(html, "<p class=\"drift\">1 of the numbers below is not checked or not "
                           "what these runs measured: each is marked (a key changed since the "
                           "lesson was written?).</p>\n"
                           "<p>Compute: 25% <span class=\"drift\">[these runs measured 19%]"
                           "</span>, 3.01 GB.</p>\n");
    ck_assert_uint_eq(c.n_issues, 1);
    free(html);
    results_lesson_check_free(&c);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* The bandwidth lesson, run here: every number it states is what its runs measure. */
START_TEST(bandwidth_lesson_holds)
{
    lesson_holds("bandwidth", bandwidth_db, 10);
}
END_TEST

/* --- the slow suite: every lesson run and checked ------------------------------------------ */

START_TEST(every_lesson_holds)
{
    const char *have = getenv("DTSIM_LESSON_DBS");
    for (int i = 0; i < N_LESSONS; i++) {
        char db[512];
        snprintf(db, sizeof db, "%s/%s.db", have ? have : dir, lessons[i]);
        if (!have)
            lesson_run(lessons[i], db);
        lesson_holds(lessons[i], db, 4);
    }
}
END_TEST

static void setup_dir(void)
{
    strcpy(dir, "/tmp/dtsim-lessons-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int run_suite(TCase *tc)
{
    Suite *s = suite_create("lessons");
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "slow")) {
        if (!getenv("DTSIM_LESSON_DBS") && !(getenv("DTSIM_SLOW") && *getenv("DTSIM_SLOW"))) {
            printf("lessons_slow: skipped: DTSIM_SLOW=1 runs all six lessons (about 4 minutes "
                   "on 2 cores; make check-lessons)\n");
            return 77;
        }
        TCase *tc = tcase_create("slow");
        tcase_add_unchecked_fixture(tc, setup_dir, teardown_once);
        tcase_set_timeout(tc, 1200);
        tcase_add_test(tc, every_lesson_holds);
        return run_suite(tc);
    }
    TCase *tc = tcase_create("lessons");
    tcase_add_unchecked_fixture(tc, setup_once, teardown_once);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_lesson_number_is_tied);
    tcase_add_test(tc, readme_lists_the_metrics);
    tcase_add_test(tc, tie_rules);
    tcase_add_test(tc, page_marks_a_drift);
    tcase_add_test(tc, bandwidth_lesson_holds);
    return run_suite(tc);
}
