/* The report page (results/figures/report.h, `dtsim report`): text from the database escaped to the
 * exact characters expected, a lesson's text turned into the expected markup, the keys that
 * differ between runs against the table the test wrote, the page's sections, rows, figures
 * and ids (every reference inside a figure pointing at an id of that figure), a hostile run
 * name nowhere as markup, and the command as a user meets it: exit codes, one error line, a
 * missing database never made, an earlier page kept when the new one cannot be written, the
 * database unchanged, a lesson's text on its runs' page only.
 *
 * The figures need gnuplot; without it the page is checked with its figures left out, and
 * the checks that need them say so. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db.h"
#include "plot.h"
#include "query.h"
#include "report.h"

#include "cli_checks.h"

static char dir[64];
static char db_path[128];

#define HOSTILE "<script>alert(\"x\")</script> & 'q'"
#define HOSTILE_HTML "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"

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
    strcpy(dir, "/tmp/dtsim-report-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(db_path, sizeof db_path, "%s/results.db", dir);
}

static void teardown(void)
{
    rm_tree(dir);
}

static void ok(dt_status st, const dt_err_t *err)
{
    ck_assert_msg(st == DT_OK, "%s", err->msg);
}

static char *slurp(const char *path)
{
    return cli_slurp(path);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* What f wrote into a memstream, as a string (free it). */
typedef struct mem {
    char *buf;
    size_t len;
    FILE *f;
} mem_t;

static void mem_open(mem_t *m)
{
    m->buf = NULL;
    m->f = open_memstream(&m->buf, &m->len);
    ck_assert_ptr_nonnull(m->f);
}

static char *mem_close(mem_t *m)
{
    fclose(m->f);
    return m->buf;
}

/* The runs: three of sweep "s1", one of them named HOSTILE. Their keys: model.arch the same
 * in all, cluster.bandwidth and strategy.kind different, only.some missing in run 2, run.name
 * each its own. */
#define N_RUNS 3
static const char *const run_names[N_RUNS] = {"sw/kind=allreduce,bw=1Gbps", HOSTILE,
                                              "sw/kind=sync-ps,bw=10Gbps"};
typedef struct key {
    const char *key, *values[N_RUNS]; /* NULL: the run has no such key */
} key_t;
static const key_t keys[] = {
    {"strategy.kind", {"allreduce", "allreduce", "sync-ps"}},
    {"cluster.bandwidth", {"1Gbps", "10Gbps", "10Gbps"}},
    {"model.arch", {"mlp", "mlp", "mlp"}},
    {"only.some", {"7", NULL, "7"}},
    {"run.name", {"sw", "odd", "sw"}},
    {"data.source", {"fashion-mnist", "fashion-mnist", "fashion-mnist"}},
};
#define N_KEYS (sizeof keys / sizeof keys[0])

/* Writes the runs (ids 1..N_RUNS) with evaluations, summaries and a timeline, so that the
 * accuracy, breakdown and timeline figures can be drawn; run 3 has staleness rows. */
static void build_db(const char *const *names)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    for (int i = 0; i < N_RUNS; i++) {
        results_run_info_t info = {names[i],
                                   i == 2 ? "sync-ps" : "allreduce",
                                   "[run]\nname = x<y>\n",
                                   "0.1.0",
                                   "3.32",
                                   7,
                                   "s1",
                                   i};
        int64_t id = 0;
        ok(results_run_begin(db, &info, &id, &err), &err);
        ck_assert_int_eq(id, i + 1);
        for (size_t k = 0; k < N_KEYS; k++)
            if (keys[k].values[i])
                ok(results_param_add(db, id, keys[k].key, keys[k].values[i], NAN, &err), &err);
        for (int e = 1; e <= 4; e++)
            ok(results_eval_add(db, id, 0.5 * e, 10 * e, 1000.0 * e, 1e6 * e, 1.0 / e,
                                0.5 + 0.1 * e - 0.01 * i, &err),
               &err);
        ok(results_timeline_add(db, id, "node-0", "worker", 0, "compute", 0, 1, &err), &err);
        ok(results_timeline_add(db, id, "node-0", "worker", 0, "comm", 1, 1.5, &err), &err);
        results_summary_t s = {0.9 - 0.01 * i, 0.25, 2.0, 1.0 + i, 0.85, 4e6, 0.5, 0.4, 0.1, 40};
        ok(results_run_end(db, id, "finished", &s, &err), &err);
    }
    ok(results_staleness_add(db, 3, 1, 3, &err), &err);
    ok(results_staleness_add(db, 3, 4, 1, &err), &err); /* mean (1*3 + 4*1) / 4 = 1.75 */
    results_db_close(db);
}

static results_query_t *select_all(results_runs_t *runs)
{
    results_query_t *q = NULL;
    dt_err_t err = {""};
    ok(results_query_open(&q, db_path, &err), &err);
    ok(results_query_select(q, "1-3", NULL, runs, &err), &err);
    ck_assert_uint_eq(runs->n, N_RUNS);
    return q;
}

/* --- text ------------------------------------------------------------------------------- */

START_TEST(escape_exact)
{
    mem_t m;
    mem_open(&m);
    results_report_escape(m.f, "a<b>&\"c\"'d'\x01\x7f\t\nz\xc3\xa9");
    results_report_escape(m.f, NULL);
    char *got = mem_close(&m);
    ck_assert_str_eq(got, "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;\xef\xbf\xbd\xef\xbf\xbd\t\nz"
                          "\xc3\xa9");
    free(got);
}
END_TEST

START_TEST(lesson_markup)
{
    /* CommonMark through libcmark: headings a level down under the report's h1, emphasis,
     * code and links rendered, raw HTML left out, a javascript: link without a target */
    const char *text = "# Title & <b>\n"
                       "\n"
                       "A paragraph with `code <x>`, **bold** and *stressed* words and [the "
                       "figure](#fig-accuracy),\n"
                       "going on; [not a link](javascript:alert(1)) and [y](#ok).\n"
                       "## What to observe\n"
                       "- first item\n"
                       "  goes on\n"
                       "- second\n"
                       "\n"
                       "1. one\n"
                       "2. two `2 < 3`\n";
    const char *want = "<h2>Title &amp; <!-- raw HTML omitted --></h2>\n"
                       "<p>A paragraph with <code>code &lt;x&gt;</code>, <strong>bold</strong> "
                       "and <em>stressed</em> words and <a href=\"#fig-accuracy\">the "
                       "figure</a>,\n"
                       "going on; <a href=\"\">not a link</a> and <a href=\"#ok\">y</a>.</p>\n"
                       "<h3>What to observe</h3>\n"
                       "<ul>\n<li>first item\ngoes on</li>\n<li>second</li>\n</ul>\n"
                       "<ol>\n<li>one</li>\n<li>two <code>2 &lt; 3</code></li>\n</ol>\n";
    mem_t m;
    mem_open(&m);
    ck_assert_int_eq(results_report_lesson(m.f, text, NULL, NULL, NULL, NULL), DT_OK);
    char *got = mem_close(&m);
    ck_assert_str_eq(got, want);
    free(got);
    /* the page's: headings as written */
    char *page = results_markdown_html("# A\n\n## B\n", 0);
    ck_assert_str_eq(page, "<h1>A</h1>\n<h2>B</h2>\n");
    free(page);
}
END_TEST

/* --- the keys that differ ---------------------------------------------------------------- */

static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const key_t *)a)->key, ((const key_t *)b)->key);
}

START_TEST(params_against_the_written_table)
{
    build_db(run_names);
    results_runs_t runs;
    results_query_t *q = select_all(&runs);
    results_params_t p;
    dt_err_t err = {""};
    ok(results_report_params(q, &runs, &p, &err), &err);
    key_t sorted[N_KEYS];
    memcpy(sorted, keys, sizeof sorted);
    qsort(sorted, N_KEYS, sizeof *sorted, key_cmp);
    ck_assert_uint_eq(p.n_keys, N_KEYS);
    ck_assert_uint_eq(p.n_runs, N_RUNS);
    for (size_t k = 0; k < N_KEYS; k++) {
        ck_assert_str_eq(p.keys[k], sorted[k].key);
        int differs = 0;
        for (int r = 0; r < N_RUNS; r++) {
            const char *want = sorted[k].values[r], *got = p.values[k * N_RUNS + r];
            ck_assert_msg(want ? got && !strcmp(got, want) : !got, "%s of run %d: %s",
                          sorted[k].key, r + 1, got ? got : "NULL");
            const char *first = sorted[k].values[0];
            differs |= !want || !first || strcmp(want, first) != 0;
        }
        ck_assert_msg(p.differs[k] == differs, "%s", sorted[k].key);
    }
    results_params_free(&p);
    ck_assert_ptr_null(p.keys);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* --- the page ---------------------------------------------------------------------------- */

static int have_gnuplot(void)
{
    dt_err_t err;
    return results_plot_gnuplot_check(&err) == DT_OK;
}

static char *write_page(int figures, results_report_out_t *out)
{
    build_db(run_names);
    results_runs_t runs;
    results_query_t *q = select_all(&runs);
    char path[256];
    snprintf(path, sizeof path, "%s/page.html", dir);
    results_report_opts_t o = {.db_path = db_path, .made_by = "dtsim test", .figures = figures};
    dt_err_t err = {""};
    ok(results_report_write(q, &runs, &o, path, out, &err), &err);
    results_runs_free(&runs);
    results_query_close(q);
    return slurp(path);
}

/* The text between the first `from` after start and the next `to`, malloc'ed. */
static char *between(const char *start, const char *from, const char *to)
{
    const char *a = strstr(start, from);
    ck_assert_msg(a != NULL, "no %s", from);
    a += strlen(from);
    const char *b = strstr(a, to);
    ck_assert_msg(b != NULL, "no %s after %s", to, from);
    return strndup(a, (size_t)(b - a));
}

START_TEST(page_sections_rows_and_escaping)
{
    results_report_out_t out;
    char *page = write_page(0, &out);
    ck_assert(!strncmp(page, "<!DOCTYPE html>\n", 16));
    ck_assert_ptr_nonnull(strstr(page, "Content-Security-Policy\" content=\"default-src 'none'"));
    const char *sections[] = {"summary", "figures", "config", "config-differs", "config-common",
                              "runs",    "run-1",   "run-2",  "run-3"};
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
        char id[64];
        snprintf(id, sizeof id, "id=\"%s\"", sections[i]);
        ck_assert_msg(count(page, id) == 1, "%s", id);
    }
    ck_assert_ptr_null(strstr(page, "id=\"lesson\""));
    /* the hostile name only as text: no script element, its escaped form in the summary,
     * the details' heading and the title of none (the sweep names the page) */
    ck_assert_ptr_null(strstr(page, "<script"));
    ck_assert_ptr_null(strstr(page, "<SCRIPT"));
    ck_assert_int_eq(count(page, "<h3>Run 2: " HOSTILE_HTML "</h3>"), 1);
    ck_assert_ptr_nonnull(strstr(page, "[run]\nname = x&lt;y&gt;\n"));

    /* the summary: a row per run in the selection's order, the staleness column with run 3's
     * mean (1.75) and no value for the others */
    char *summary = between(page, "id=\"summary\"", "</table>");
    ck_assert_uint_eq(count(summary, "<tr>"), N_RUNS + 1);
    ck_assert_ptr_nonnull(strstr(summary, "<th>time to 0.85</th>"));
    ck_assert_ptr_nonnull(strstr(summary, "<th>mean staleness</th>"));
    ck_assert_ptr_nonnull(strstr(summary, "<td class=\"num\">1.75</td></tr>"));
    ck_assert_uint_eq(count(summary, "<td class=\"num\">&ndash;</td></tr>"), 2);
    ck_assert_ptr_nonnull(strstr(summary, "<td class=\"num\">0.8900</td>"));
    ck_assert_ptr_nonnull(strstr(summary, "<td class=\"num\">4 MB</td>"));
    for (int i = 0; i < N_RUNS; i++) {
        char link[64];
        snprintf(link, sizeof link, "<a href=\"#run-%d\">%d</a>", i + 1, i + 1);
        ck_assert_msg(strstr(summary, link), "%s", link);
    }
    free(summary);

    /* what differs: the differing keys but run.name, in key order, "not set" for run 2's
     * missing only.some; what is shared: the others once each */
    char *differs = between(page, "id=\"config-differs\"", "</table>");
    ck_assert_ptr_nonnull(strstr(differs, "<tr><th>run</th><th>cluster.bandwidth</th>"
                                          "<th>only.some</th><th>strategy.kind</th></tr>"));
    ck_assert_ptr_nonnull(strstr(differs, "<td>10Gbps</td><td class=\"note\">not set</td>"
                                          "<td>allreduce</td></tr>"));
    ck_assert_ptr_null(strstr(differs, "run.name"));
    free(differs);
    char *common = between(page, "id=\"config-common\"", "</ul>");
    ck_assert_uint_eq(count(common, "<li>"), 2);
    ck_assert_ptr_nonnull(strstr(common, "<li><code>data.source</code> = fashion-mnist</li>"));
    ck_assert_ptr_nonnull(strstr(common, "<li><code>model.arch</code> = mlp</li>"));
    free(common);

    /* no gnuplot asked for: every figure's place says so */
    ck_assert_int_eq(out.drawn, 0);
    ck_assert_int_eq(out.skipped, RESULTS_FIGURE_COUNT);
    ck_assert_int_eq(out.failed, 0);
    ck_assert_uint_eq(count(page, "<svg"), 0);
    ck_assert_uint_eq(count(page, "<figure id=\"fig-"), RESULTS_FIGURE_COUNT);
    ck_assert_uint_eq(count(page, "Not drawn: the figures need gnuplot"), RESULTS_FIGURE_COUNT);
    free(page);
}
END_TEST

/* Every id="..." or id='...' in text, as a newline-separated list with a leading newline. */
static char *ids_of(const char *text)
{
    mem_t m;
    mem_open(&m);
    fputc('\n', m.f);
    for (const char *p = strstr(text, " id="); p; p = strstr(p + 1, " id=")) {
        char q = p[4];
        const char *end = strchr(p + 5, q);
        fprintf(m.f, "%.*s\n", (int)(end - p - 5), p + 5);
    }
    return mem_close(&m);
}

START_TEST(page_figures_inlined)
{
    if (!have_gnuplot()) {
        fprintf(stderr, "page_figures_inlined: skipped, gnuplot is not installed\n");
        return;
    }
    results_report_out_t out;
    char *page = write_page(1, &out);
    ck_assert_int_eq(out.failed, 0);
    ck_assert_int_eq(out.drawn + out.skipped, RESULTS_FIGURE_COUNT);
    /* these runs make at least the accuracy, breakdown and timeline figures */
    ck_assert_int_ge(out.drawn, 3);
    ck_assert_uint_eq(count(page, "<svg"), (size_t)out.drawn);
    ck_assert_uint_eq(count(page, "</svg>"), (size_t)out.drawn);
    ck_assert_uint_eq(count(page, "<figure id=\"fig-"), RESULTS_FIGURE_COUNT);
    ck_assert_uint_eq(count(page, "<figure id=\"fig-") - count(page, "class=\"skipped\""),
                      (size_t)out.drawn);
    ck_assert_ptr_null(strstr(page, "<?xml"));
    const char *drawn[] = {"accuracy", "breakdown", "timeline"};
    for (size_t i = 0; i < 3; i++) {
        char head[64];
        snprintf(head, sizeof head, "<figure id=\"fig-%s\">", drawn[i]);
        char *fig = between(page, head, "</figure>");
        ck_assert_msg(strstr(fig, "<svg") && strstr(fig, "<figcaption>"), "%s", drawn[i]);
        /* every reference in the figure points at an id of the same figure */
        char *ids = ids_of(fig);
        for (const char *p = strstr(fig, "href='#"); p; p = strstr(p + 1, "href='#")) {
            char want[128];
            int n = (int)strcspn(p + 7, "'");
            snprintf(want, sizeof want, "\n%.*s\n", n, p + 7);
            ck_assert_msg(strstr(ids, want), "%s: no id %s", drawn[i], want + 1);
            ck_assert_msg(!strncmp(p + 7, drawn[i], strlen(drawn[i])), "%.20s", p);
        }
        for (const char *p = strstr(fig, "url(#"); p; p = strstr(p + 1, "url(#")) {
            char want[128];
            snprintf(want, sizeof want, "\n%.*s\n", (int)strcspn(p + 5, ")"), p + 5);
            ck_assert_msg(strstr(ids, want), "%s: no id %s", drawn[i], want + 1);
        }
        free(ids);
        free(fig);
    }
    /* ids unique in the page: gnuplot's own (gpPt0, gnuplot_canvas) once per figure */
    char *ids = ids_of(page);
    for (char *p = ids + 1; *p; p = strchr(p, '\n') + 1) {
        char want[160];
        snprintf(want, sizeof want, "\n%.*s\n", (int)strcspn(p, "\n"), p);
        ck_assert_msg(count(ids, want) == 1, "id %s more than once", want + 1);
    }
    free(ids);
    /* the hostile name, drawn into the figures by gnuplot, stays text there too */
    ck_assert_ptr_null(strstr(page, "<script"));
    free(page);
}
END_TEST

START_TEST(page_replaced_whole)
{
    build_db(run_names);
    results_runs_t runs;
    results_query_t *q = select_all(&runs);
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/page.html", dir);
    snprintf(bad, sizeof bad, "%s/no/such/dir/page.html", dir);
    FILE *f = fopen(path, "w");
    fputs("earlier page", f);
    fclose(f);
    results_report_opts_t o = {.db_path = db_path};
    results_report_out_t out;
    dt_err_t err = {""};
    ck_assert_int_eq(results_report_write(q, &runs, &o, bad, &out, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no/such/dir/page.html.tmp-"), "%s", err.msg);
    ok(results_report_write(q, &runs, &o, path, &out, &err), &err);
    char *page = slurp(path);
    ck_assert(!strncmp(page, "<!DOCTYPE html>", 15));
    ck_assert_ptr_nonnull(strstr(page, "</html>\n"));
    free(page);
    /* nothing left beside it: the results database, its page */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        ck_assert_msg(!strstr(e->d_name, ".tmp-"), "%s left behind", e->d_name);
    closedir(d);
    results_runs_free(&runs);
    results_query_close(q);
}
END_TEST

/* --- the command ------------------------------------------------------------------------- */

/* Runs dtsim with args (no shell); stdout and stderr into DIR/out and DIR/err. */
static int dtsim(const char *const *args)
{
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    return cli_run(DTSIM_BINARY, out, err, args);
}

static char *output(const char *which)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, which);
    return slurp(p);
}

/* stderr is one line holding needle. */
static void one_error_line(const char *needle)
{
    char err[256];
    snprintf(err, sizeof err, "%s/err", dir);
    cli_one_error_line(err, needle, NULL);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

START_TEST(command_errors)
{
    char missing[256], page[256];
    snprintf(missing, sizeof missing, "%s/missing.db", dir);
    snprintf(page, sizeof page, "%s/page.html", dir);
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", missing, "--out", page, NULL}), 2);
    one_error_line("missing.db");
    ck_assert(!exists(missing) && !exists(page));

    build_db(run_names);
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--runs", "1", "--sweep",
                                            "s1", "--out", page, NULL}),
                     2);
    one_error_line("cannot be combined");
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--runs", "1-", NULL}), 2);
    one_error_line("3,5-9");
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--timeline-run", "99",
                                            "--out", page, NULL}),
                     2);
    one_error_line("99");
    ck_assert_int_eq(dtsim((const char *[]){"report", "--bogus", NULL}), 2);
    one_error_line("--bogus");
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--out", "", NULL}), 2);
    one_error_line("--out");
    ck_assert(!exists(page));
}
END_TEST

START_TEST(command_writes_the_page_and_keeps_the_database)
{
    build_db(run_names);
    char *before = slurp(db_path);
    struct stat sb0;
    ck_assert_int_eq(stat(db_path, &sb0), 0);
    char page[256];
    snprintf(page, sizeof page, "%s/made/page.html", dir); /* made/ is made */
    /* 0 without gnuplot too: the page says its figures need it */
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--out", page, NULL}), 0);
    char *out = output("out"), want[300];
    snprintf(want, sizeof want, "%s\n", page);
    ck_assert_str_eq(out, want);
    free(out);
    char *html = slurp(page);
    ck_assert_ptr_nonnull(strstr(html, "3 finished runs of sweep s1"));
    /* a bad choice afterwards leaves that page as it was */
    ck_assert_int_eq(
        dtsim((const char *[]){"report", "--db", db_path, "--runs", "99", "--out", page, NULL}), 2);
    one_error_line("no run 99");
    char *again = slurp(page);
    ck_assert_str_eq(again, html);
    free(again);
    free(html);
    struct stat sb1;
    ck_assert_int_eq(stat(db_path, &sb1), 0);
    char *after = slurp(db_path);
    ck_assert(sb0.st_size == sb1.st_size && memcmp(before, after, (size_t)sb0.st_size) == 0);
    free(before);
    free(after);
}
END_TEST

/* A plan's sweep (runs "plan-toy-tTp1dD-mb1xM-z0", one sweep): the page ranks them, its order
 * that of the stored step times (ORDER BY sim_time / steps, run: ties in their order), each
 * row with the fullest device's memory and the cost; the Pareto chart's place comes first
 * among the figures. Another sweep's page has no ranking. */
START_TEST(plan_page_ranks_by_step_time)
{
    results_report_out_t out;
    char *plain = write_page(0, &out);
    ck_assert_ptr_null(strstr(plain, "id=\"ranking\""));
    free(plain);
    char side[160];
    unlink(db_path);
    snprintf(side, sizeof side, "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db_path);
    unlink(side);

    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    const double step_s[] = {3, 1.5, 2, 1.5, 0.75, 4, 2, 1};
    const int n = (int)(sizeof step_s / sizeof *step_s);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "plan-toy-t%dp1d%d-mb1x%d-z0", 1 + i % 2, 1 + i, 2 * i + 1);
        results_run_info_t info = {
            name, "pipeline", "[run]\n", "0.1.0", "3.32", 1, "plan-toy-20261126T000000Z-1", i};
        int64_t id = 0;
        ok(results_run_begin(db, &info, &id, &err), &err);
        ok(results_memory_add(db, id, 0, "worker", 1e9 * (i + 1), 1e9, 0, NAN, 1, &err), &err);
        results_summary_t sum = {NAN, NAN, 3 * step_s[i], NAN, 0.85, 1e9, 0.5, 0.4, 0.1, 3};
        ok(results_run_end(db, id, "finished", &sum, &err), &err);
        results_energy_t e = {.hosts = 8,
                              .host_joules = 100,
                              .link_joules = 0,
                              .joules_per_step = 33,
                              .joules_per_sample = 0.5 * (i + 1),
                              .dollars = 1,
                              .dollars_per_sample = 1e-3 * step_s[i],
                              .dollars_to_target = NAN};
        ok(results_energy_add(db, id, &e, &err), &err);
    }
    results_db_close(db);

    results_query_t *q = NULL;
    ok(results_query_open(&q, db_path, &err), &err);
    results_runs_t runs;
    ok(results_query_select(q, NULL, NULL, &runs, &err), &err);
    ck_assert_uint_eq(runs.n, (size_t)n);
    char path[256];
    snprintf(path, sizeof path, "%s/plan.html", dir);
    results_report_opts_t o = {.db_path = db_path, .made_by = "dtsim test", .figures = 0};
    ok(results_report_write(q, &runs, &o, path, &out, &err), &err);
    results_runs_free(&runs);
    char *page = slurp(path);
    char *ranking = between(page, "<section id=\"ranking\">", "</section>");
    /* the order against the database's */
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(results_query_sqlite(q),
                                        "SELECT s.run, r.name FROM summary s JOIN runs r ON"
                                        " r.id = s.run ORDER BY s.sim_time / s.steps, s.run",
                                        -1, &st, NULL),
                     SQLITE_OK);
    const char *at = ranking;
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char link[64], rank[64];
        snprintf(rank, sizeof rank, "<tr><td class=\"num\">%d</td>", rows + 1);
        snprintf(link, sizeof link, "<a href=\"#run-%lld\">", sqlite3_column_int64(st, 0));
        const char *r = strstr(at, rank);
        ck_assert_msg(r != NULL, "no rank %d", rows + 1);
        const char *next = strstr(r + 1, "<tr>");
        const char *l = strstr(r, link);
        ck_assert_msg(l != NULL && (!next || l < next), "rank %d is not run %lld", rows + 1,
                      sqlite3_column_int64(st, 0));
        ck_assert_ptr_nonnull(strstr(r, (const char *)sqlite3_column_text(st, 1)));
        at = r + 1;
        rows++;
    }
    sqlite3_finalize(st);
    ck_assert_int_eq(rows, n);
    ck_assert_uint_eq(count(ranking, "<tr><td class=\"num\">"), (size_t)n);
    /* the fastest (0.75 s, run 5): 6 GB of memory ($ 0.75 per 1000 samples, 2.5 J) */
    ck_assert_ptr_nonnull(strstr(ranking, "<td class=\"num\">0.750000</td><td class=\"num\">"
                                          "6.00</td><td class=\"num\">0.7500</td>"
                                          "<td class=\"num\">2.5</td>"));
    /* ranking before the summary, the Pareto chart first of the figures */
    ck_assert(strstr(page, "id=\"ranking\"") < strstr(page, "id=\"summary\""));
    ck_assert_ptr_nonnull(strstr(page, "<a href=\"#ranking\">Ranking</a>"));
    const char *pareto = strstr(page, "<figure id=\"fig-pareto\"");
    ck_assert_ptr_nonnull(pareto);
    ck_assert(pareto < strstr(page, "<figure id=\"fig-accuracy\""));
    ck_assert_uint_eq(count(page, "<figure id=\"fig-pareto\""), 1);
    free(ranking);
    free(page);
    results_query_close(q);
}
END_TEST

/* The title of scenarios/lessons/NAME.md: its first line less "# ". */
static char *lesson_title(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/scenarios/lessons/%s.md", DTSIM_SOURCE, name);
    char *text = slurp(p);
    ck_assert_msg(!strncmp(text, "# ", 2), "%s does not start with a title", p);
    char *t = strndup(text + 2, strcspn(text + 2, "\n"));
    free(text);
    return t;
}

START_TEST(command_adds_a_lessons_text)
{
    const char *lesson[N_RUNS] = {"lesson-bandwidth/kind=sync-ps", "lesson-bandwidth",
                                  "lesson-bandwidth/kind=allreduce"};
    build_db(lesson);
    char page[256];
    snprintf(page, sizeof page, "%s/page.html", dir);
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--out", page, NULL}), 0);
    char *html = slurp(page), *title = lesson_title("bandwidth"), want[512];
    snprintf(want, sizeof want, "<section id=\"lesson\" class=\"lesson\">\n<h2>%s</h2>", title);
    ck_assert_msg(strstr(html, want), "no %s", want);
    ck_assert_ptr_nonnull(strstr(html, "<a href=\"#lesson\">Lesson</a>"));
    free(html);
    free(title);

    /* a run whose name only starts like the lesson's: no lesson */
    unlink(db_path);
    const char *other[N_RUNS] = {"lesson-bandwidth/kind=sync-ps", "lesson-bandwidthx",
                                 "lesson-bandwidth/kind=allreduce"};
    build_db(other);
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--out", page, NULL}), 0);
    html = slurp(page);
    ck_assert_ptr_null(strstr(html, "id=\"lesson\""));
    free(html);
}
END_TEST

/* Adds a finished run named name to sweep (its index 0) and returns its id. */
static int64_t add_run(const char *name, const char *sweep)
{
    results_db_t *db = NULL;
    dt_err_t err = {""};
    ok(results_db_open(&db, db_path, &err), &err);
    results_run_info_t info = {name, "sync-ps", "[run]\n", "0.1.0", "3.32", 7, sweep, 0};
    int64_t id = 0;
    ok(results_run_begin(db, &info, &id, &err), &err);
    ok(results_eval_add(db, id, 1, 10, 1000, 1e6, 1, 0.6, &err), &err);
    results_summary_t s = {0.6, 1, 2.0, 1.0, 0.85, 4e6, 0.5, 0.4, 0.1, 40};
    ok(results_run_end(db, id, "finished", &s, &err), &err);
    results_db_close(db);
    return id;
}

/* The ids query.c selects for sweep (NULL: the default), as "1,2,3". */
static void selected(const char *sweep, char *out, size_t n)
{
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    dt_err_t err = {""};
    ok(results_query_open(&q, db_path, &err), &err);
    ok(results_query_select(q, NULL, sweep, &runs, &err), &err);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < runs.n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%lld", i ? "," : "", (long long)runs.v[i].id);
    results_runs_free(&runs);
    results_query_close(q);
}

/* The projector step of the lessons: one member run alone (dtsim run --member 3, a sweep of
 * one under an id of its own) after the lesson's sweep leaves the default report on the
 * lesson's runs; --sweep takes a sweep's name (the newest of its sweeps with more than one
 * run) as well as its id; a newer whole sweep of the name wins. */
START_TEST(report_selects_a_sweep_by_name)
{
    const char *lesson[N_RUNS] = {"lesson-bandwidth/kind=sync-ps", "lesson-bandwidth/a",
                                  "lesson-bandwidth/kind=allreduce"};
    build_db(lesson); /* runs 1-3, sweep s1 */
    ck_assert_int_eq(add_run("lesson-bandwidth/kind=sync-ps", "lesson-bandwidth-abc"), 4);
    char ids[64];
    selected(NULL, ids, sizeof ids);
    ck_assert_str_eq(ids, "1,2,3");
    selected("lesson-bandwidth", ids, sizeof ids);
    ck_assert_str_eq(ids, "1,2,3");
    selected("lesson-bandwidth-abc", ids, sizeof ids); /* an id is taken as is */
    ck_assert_str_eq(ids, "4");
    selected("s1", ids, sizeof ids);
    ck_assert_str_eq(ids, "1,2,3");

    char page[256];
    snprintf(page, sizeof page, "%s/page.html", dir);
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--out", page, NULL}), 0);
    char *html = slurp(page);
    ck_assert_ptr_nonnull(strstr(html, "id=\"lesson\""));
    ck_assert_msg(strstr(html, "3 finished runs of sweep s1"), "the page names another choice");
    /* a lesson's page: no box about a figure its runs cannot make unless its text links to
     * it (the link lands on the note, not nowhere), the figures its text does not link to
     * (the timeline: bandwidth.md links none) folded after those it does, the shared keys
     * folded */
    char md_path[600];
    snprintf(md_path, sizeof md_path, "%s/scenarios/lessons/bandwidth.md", DTSIM_SOURCE);
    char *md = slurp(md_path);
    for (const char *sk = html; (sk = strstr(sk, "<figure id=\"fig-")); sk++) {
        char fig[64], anchor[80];
        if (sscanf(sk, "<figure id=\"fig-%63[a-z_]\"", fig) != 1 ||
            strncmp(sk + strlen("<figure id=\"fig-") + strlen(fig), "\" class=\"skipped\"", 17))
            continue;
        snprintf(anchor, sizeof anchor, "(#fig-%s)", fig);
        ck_assert_msg(strstr(md, anchor), "a note about %s, which the lesson does not link", fig);
    }
    /* and no dead link: every figure the text links to is on the page, drawn or noted */
    for (const char *l = md; (l = strstr(l, "(#fig-")); l++) {
        char fig[64], want_fig[96];
        if (sscanf(l, "(#fig-%63[a-z_])", fig) != 1)
            continue;
        snprintf(want_fig, sizeof want_fig, "<figure id=\"fig-%s\"", fig);
        ck_assert_msg(strstr(html, want_fig), "the lesson links #fig-%s, not on the page", fig);
    }
    free(md);
    const char *more = strstr(html, "<details class=\"more\">"),
               *acc = strstr(html, "<figure id=\"fig-accuracy\""),
               *timeline = strstr(html, "<figure id=\"fig-timeline\"");
    if (acc) /* drawn: gnuplot is installed */
        ck_assert_msg(more && acc < more && timeline && timeline > more, "lesson figures");
    ck_assert_ptr_nonnull(strstr(html, "id=\"config-common\">What every run shares</h3>\n"
                                       "<details><summary>"));
    free(html);

    /* another database's run of another name is not the lesson's: its own sweep */
    ck_assert_int_eq(add_run("other", "other-1"), 5);
    selected(NULL, ids, sizeof ids);
    ck_assert_str_eq(ids, "5");
    /* the lesson again, whole: the newest sweep of the name with more than one run */
    ck_assert_int_eq(add_run("lesson-bandwidth/x", "s2"), 6);
    ck_assert_int_eq(add_run("lesson-bandwidth/y", "s2"), 7);
    selected("lesson-bandwidth", ids, sizeof ids);
    ck_assert_str_eq(ids, "6,7");
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db_path, "--sweep", "nothing",
                                            "--out", page, NULL}),
                     2);
}
END_TEST

/* Every lesson of scenarios/lessons/README.md's table has its scenario and its text, and the
 * text says what to observe and asks 3 to 5 questions. */
START_TEST(lessons_have_texts)
{
    /* the lessons the README's table lists: its rows' "](NAME.md)" links */
    char readme[512], lesson[16][64];
    size_t count = 0;
    snprintf(readme, sizeof readme, "%s/scenarios/lessons/README.md", DTSIM_SOURCE);
    char *table = slurp(readme);
    for (char *row = table; (row = strstr(row, "\n| [")) && count < 16; row++) {
        char *end = strchr(row + 1, '\n'), *link = strstr(row, "](");
        if (!link || (end && link > end))
            continue;
        size_t len = strcspn(link + 2, ")");
        if (len > 3 && len < 60 && !strncmp(link + 2 + len - 3, ".md", 3))
            snprintf(lesson[count++], sizeof lesson[0], "%.*s", (int)len - 3, link + 2);
    }
    free(table);
    ck_assert_uint_ge(count, 6); /* bandwidth, staleness, noniid, pipeline, transformer,
                                    optimizer */
    for (size_t i = 0; i < count; i++) {
        char p[768];
        snprintf(p, sizeof p, "%s/scenarios/lessons/%.63s.ini", DTSIM_SOURCE, lesson[i]);
        char *ini = slurp(p);
        char want[128];
        snprintf(want, sizeof want, "name = lesson-%.63s\n", lesson[i]);
        ck_assert_msg(strstr(ini, want), "%s: no %s", p, want);
        free(ini);
        snprintf(p, sizeof p, "%s/scenarios/lessons/%.63s.md", DTSIM_SOURCE, lesson[i]);
        char *md = slurp(p);
        ck_assert_msg(strstr(md, "\n## What to observe\n"), "%s", p);
        char *questions = strstr(md, "\n## Questions\n");
        ck_assert_msg(questions, "%s", p);
        size_t n = 0;
        for (char *l = questions; (l = strchr(l + 1, '\n'));)
            n += l[1] >= '1' && l[1] <= '9' && l[2] == '.';
        ck_assert_msg(n >= 3 && n <= 5, "%s: %zu questions", p, n);
        free(md);
    }
}
END_TEST

/* A report killed while drawing (SIGTERM, SIGKILL) left its figures' folder in TMPDIR: the
 * next report removes those whose process is gone, and leaves a live one's. */
START_TEST(stale_figure_folders_removed)
{
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    char stale[256], live[256], file[300];
    snprintf(stale, sizeof stale, "%s/dtsim-report-%ld-abcdef", dir, (long)dead);
    snprintf(live, sizeof live, "%s/dtsim-report-%ld-ghijkl", dir, (long)getpid());
    ck_assert_int_eq(mkdir(stale, 0700), 0);
    ck_assert_int_eq(mkdir(live, 0700), 0);
    snprintf(file, sizeof file, "%s/accuracy.svg", stale);
    cli_write_file(file, "<svg/>");
    setenv("TMPDIR", dir, 1);
    results_report_out_t out;
    char *page = write_page(0, &out);
    unsetenv("TMPDIR");
    free(page);
    ck_assert_msg(!exists(stale), "%s is still there", stale);
    ck_assert_msg(exists(live), "%s, a live report's, was removed", live);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, escape_exact);
    tcase_add_test(tc, lesson_markup);
    tcase_add_test(tc, params_against_the_written_table);
    tcase_add_test(tc, page_sections_rows_and_escaping);
    tcase_add_test(tc, page_figures_inlined);
    tcase_add_test(tc, page_replaced_whole);
    tcase_add_test(tc, command_errors);
    tcase_add_test(tc, command_writes_the_page_and_keeps_the_database);
    tcase_add_test(tc, plan_page_ranks_by_step_time);
    tcase_add_test(tc, command_adds_a_lessons_text);
    tcase_add_test(tc, report_selects_a_sweep_by_name);
    tcase_add_test(tc, lessons_have_texts);
    tcase_add_test(tc, stale_figure_folders_removed);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
