/* The report page (see report.h): one HTML file, written top to bottom.
 *
 * Why it is built this way:
 *   - self-contained: the figures are gnuplot's SVG copied into the page, the style is one
 *     <style> element, and a Content-Security-Policy allows nothing else (no fetch, no
 *     script), so the page opens the same from a mail attachment or a USB stick, and a
 *     run name that gets past the escaping still cannot run or load anything;
 *   - every text from the database (names, statuses, keys, values, notes, configurations)
 *     passes through results_report_escape; only dtsim's own fixed strings are written as
 *     markup. gnuplot escapes the names it draws into its SVG (& and <), and the test checks
 *     that too;
 *   - gnuplot gives every SVG the same ids (gpPt0, gnuplot_canvas, ...): each figure's ids
 *     get its name as a prefix, so that a page of nine figures has unique ids and each
 *     figure's references (href='#gpPt6', url(#textbox)) stay within it. */
#define _POSIX_C_SOURCE 200809L
#include "report.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plot.h"

/* Each figure's heading and what to look at in it, shown under it; a figure added to plot.h
 * without a row here gets its file name and its --help text instead. */
typedef struct caption {
    const char *title, *text;
} caption_t;
static const caption_t captions[RESULTS_FIGURE_COUNT] = {
    [RESULTS_FIGURE_ACCURACY] =
        {"Accuracy against time",
         "Test accuracy against simulated time, a curve per run. Look at which curve rises "
         "first and how high each one ends: on a slow network a strategy that sends less "
         "per step gets to a given accuracy sooner, even when it ends lower."},
    [RESULTS_FIGURE_ACCURACY_BYTES] =
        {"Accuracy against data sent",
         "Test accuracy against the bytes sent over the network. A curve further left reaches "
         "the same accuracy with less traffic: this is the cost of each strategy in data, "
         "whatever the network's speed."},
    [RESULTS_FIGURE_BREAKDOWN] =
        {"Where the time goes",
         "How the hosts spent their time: computing, communicating, waiting. A large "
         "communication share means the network, not the devices, sets the pace; idle time "
         "is time spent waiting for a slower peer or a server."},
    [RESULTS_FIGURE_TIME_TO_TARGET] =
        {"Time to target against bandwidth",
         "Simulated time to the target accuracy against the bandwidth, per strategy. Where a "
         "curve flattens, more bandwidth no longer helps (compute sets the pace); where it "
         "keeps falling, the network does."},
    [RESULTS_FIGURE_SCALING] =
        {"Scaling with workers",
         "Speedup and scaling efficiency against the number of workers. An efficiency near 1 "
         "means each added worker adds its whole throughput; where it drops, communication "
         "and waiting eat the gain."},
    [RESULTS_FIGURE_TIMELINE] =
        {"Timeline of one run",
         "What each host did during the first steps of one run. Look for the gaps: who "
         "waits for whom (workers for a server, pipeline stages for each other), and how long "
         "a step's communication takes next to its compute."},
    [RESULTS_FIGURE_FAULTS] =
        {"Faults",
         "Accuracy against simulated time, runs with faults next to runs without. Look at what "
         "each fault costs: a dip, a stall, and how long the run takes to catch up."},
    [RESULTS_FIGURE_PARALLELISM] =
        {"Time per step and memory",
         "Time per step and the memory the most loaded host holds. Splitting a model or its "
         "state across hosts trades memory for communication: look at which part of the "
         "memory shrinks and what the step time pays for it."},
    [RESULTS_FIGURE_CLIENTS] =
        {"Federated clients",
         "Each federated client's accuracy on its own held-out samples, sorted, and against "
         "the rounds it took part in. A wide spread means one global model serves some "
         "clients much worse than others, as non-IID data does."},
    [RESULTS_FIGURE_COST] =
        {"Cost and energy against step time",
         "What each run costs in dollars and joules per sample against its time per step. "
         "Points low and to the left are the cheap, fast runs; past 12 runs only the fastest "
         "are drawn (the Pareto chart shows them all)."},
    [RESULTS_FIGURE_STEP] =
        {"A step in its parts",
         "Each run's step (a round for federated runs) in its parts, the mean device's: "
         "compute and recomputation, the communication it waited on by kind (tensor, "
         "context, expert, pipeline, data; what ran behind compute is not there), the "
         "pipeline's bubble and other waits. The bar's height is the step: see which part "
         "a faster network, fewer stages or more micro-batches would shrink."},
    [RESULTS_FIGURE_PARETO] =
        {"Pareto chart: cost, step time and memory",
         "Every run as a point: its time per step against its cost per sample, coloured by "
         "the memory its fullest device holds. The circled, numbered runs are the Pareto "
         "front: no other run is as fast, as cheap and as light on memory and better in one. "
         "Choose among them: the fastest, or a slower one that leaves the devices more "
         "memory."},
};

/* The page's look: readable on a laptop and on a projector, tables that scroll inside
 * their box rather than widen the page, figures that shrink to the column. */
static const char *const page_style =
    "body{font-family:sans-serif;color:#222;background:#fff;margin:0 auto;max-width:1080px;"
    "padding:0 16px 48px;line-height:1.45}"
    "h1{font-size:1.6em;margin:24px 0 4px}h2{font-size:1.3em;margin:32px 0 8px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:1.1em;margin:20px 0 6px}"
    ".meta{color:#555;margin:0 0 8px;overflow-wrap:anywhere}"
    "nav a{margin-right:14px}"
    ".scroll{overflow-x:auto;max-width:100%}"
    "table{border-collapse:collapse;font-size:.9em;margin:6px 0}"
    "th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "td.num{white-space:nowrap}td.name{min-width:10em;overflow-wrap:anywhere}"
    "figure{margin:18px 0 28px}figure svg{display:block;max-width:100%;height:auto}"
    "figcaption{color:#333;margin-top:4px}"
    ".note{color:#8a5a00}.skipped{border-left:4px solid #e0c080;padding-left:10px}"
    ".common{columns:3 300px;column-gap:24px;font-size:.9em;padding:0;list-style:none}"
    ".common li{break-inside:avoid;overflow-wrap:anywhere}"
    "code,pre{font-family:monospace,monospace;font-size:.88em}pre{background:#f7f7f7;padding:8px;"
    "overflow-x:auto;max-height:420px}"
    ".lesson{background:#f4f8fc;border:1px solid #c8d8e8;padding:4px 18px 12px;"
    "margin-top:16px}.drift{color:#a00;font-weight:bold}";

/* --- text --------------------------------------------------------------------------------- */

/* The first n bytes of text, escaped as results_report_escape says. */
static void escape_n(FILE *f, const char *text, size_t n)
{
    for (const unsigned char *s = (const unsigned char *)text; n > 0; s++, n--) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if ((*s < 0x20 && *s != '\t' && *s != '\n') || *s == 0x7f)
                fputs("\xef\xbf\xbd", f); /* U+FFFD */
            else
                fputc(*s, f);
        }
    }
}

void results_report_escape(FILE *f, const char *text)
{
    if (text)
        escape_n(f, text, strlen(text));
}

/* A cell of text from the database. */
static void td_text(FILE *f, const char *text)
{
    fputs("<td>", f);
    results_report_escape(f, text);
    fputs("</td>", f);
}

/* A cell of a run name: breaks allowed after the commas and slashes of a sweep run's name
 * (NAME/key=value,key=value), which has no blanks to break at. */
static void td_name(FILE *f, const char *name)
{
    fputs("<td class=\"name\">", f);
    for (const char *p = name ? name : ""; *p;) {
        size_t n = strcspn(p, ",/");
        n += p[n] != '\0'; /* the comma or slash with the part before it */
        escape_n(f, p, n);
        p += n;
        if (*p)
            fputs("<wbr>", f);
    }
    fputs("</td>", f);
}

/* A right-aligned cell of dtsim's own formatting (numbers, units: no escaping needed). */
static void td_num(FILE *f, const char *text)
{
    fprintf(f, "<td class=\"num\">%s</td>", text);
}

static void fmt_fixed(char *buf, size_t n, double v, int digits)
{
    if (isnan(v))
        snprintf(buf, n, "&ndash;");
    else
        snprintf(buf, n, "%.*f", digits, v);
}

static void fmt_seconds(char *buf, size_t n, double s)
{
    if (isnan(s))
        snprintf(buf, n, "&ndash;");
    else
        snprintf(buf, n, "%.4g s", s);
}

static void fmt_bytes(char *buf, size_t n, double b)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    if (isnan(b)) {
        snprintf(buf, n, "&ndash;");
        return;
    }
    while (fabs(b) >= 1000 && u < 5) {
        b /= 1000;
        u++;
    }
    snprintf(buf, n, u ? "%.3g %s" : "%.0f %s", b, units[u]);
}

static void fmt_share(char *buf, size_t n, double v)
{
    if (isnan(v))
        snprintf(buf, n, "&ndash;");
    else
        snprintf(buf, n, "%.1f%%", 100 * v);
}

/* --- configuration keys -------------------------------------------------------------------- */

/* A statement that failed on the database (I/O, a damaged file): DT_ERR_RUN. */
static dt_status sql_failed(dt_err_t *err, sqlite3 *h, const char *what)
{
    if (err) {
        snprintf(err->msg, sizeof err->msg, "%s: %s: %s", sqlite3_db_filename(h, "main"), what,
                 sqlite3_errmsg(h));
        dt_err_clean(err);
    }
    return DT_ERR_RUN;
}

static char *dup_text(const unsigned char *t)
{
    if (!t)
        return NULL;
    size_t n = strlen((const char *)t) + 1;
    char *s = dt_malloc(n);
    memcpy(s, t, n);
    return s;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One run's keys and values, in key order. */
typedef struct kv {
    size_t n;
    char **keys, **values;
} kv_t;

static dt_status read_params(sqlite3_stmt *s, int64_t run, kv_t *out, dt_err_t *err)
{
    size_t cap = 0;
    memset(out, 0, sizeof *out);
    DT_ASSERT(sqlite3_bind_int64(s, 1, run) == SQLITE_OK);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            out->keys = realloc(out->keys, cap * sizeof *out->keys);
            out->values = realloc(out->values, cap * sizeof *out->values);
            DT_CHECK(out->keys && out->values, "out of memory");
        }
        out->keys[out->n] = dup_text(sqlite3_column_text(s, 0));
        out->values[out->n] = dup_text(sqlite3_column_text(s, 1));
        if (!out->values[out->n])
            out->values[out->n] = dup_text((const unsigned char *)"");
        out->n++;
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? DT_OK : sql_failed(err, sqlite3_db_handle(s), "reading keys");
}

static void kv_free(kv_t *kv)
{
    for (size_t i = 0; i < kv->n; i++) {
        free(kv->keys[i]);
        free(kv->values[i]);
    }
    free(kv->keys);
    free(kv->values);
}

/* The value of key in kv (sorted by key, as SQLite's ORDER BY key gives: by bytes), or NULL. */
static char *kv_find(const kv_t *kv, const char *key)
{
    char **hit = bsearch(&key, kv->keys, kv->n, sizeof *kv->keys, str_cmp);
    return hit ? kv->values[hit - kv->keys] : NULL;
}

dt_status results_report_params(results_query_t *q, const results_runs_t *runs,
                                results_params_t *out, dt_err_t *err)
{
    DT_ASSERT(q && runs && out);
    memset(out, 0, sizeof *out);
    sqlite3 *h = results_query_sqlite(q);
    sqlite3_stmt *s;
    /* BINARY collation: the order strcmp (and so bsearch) expects */
    if (sqlite3_prepare_v2(h, "SELECT key, value FROM params WHERE run = ?1 ORDER BY key", -1, &s,
                           NULL) != SQLITE_OK)
        return sql_failed(err, h, "reading keys");
    kv_t *per_run = dt_calloc(runs->n ? runs->n : 1, sizeof *per_run);
    dt_status st = DT_OK;
    size_t all = 0;
    for (size_t r = 0; r < runs->n && st == DT_OK; r++) {
        st = read_params(s, runs->v[r].id, &per_run[r], err);
        all += per_run[r].n;
    }
    sqlite3_finalize(s);
    if (st == DT_OK) {
        /* every key of any run, once, sorted */
        char **keys = dt_calloc(all ? all : 1, sizeof *keys);
        size_t n = 0;
        for (size_t r = 0; r < runs->n; r++)
            for (size_t i = 0; i < per_run[r].n; i++)
                keys[n++] = per_run[r].keys[i];
        qsort(keys, n, sizeof *keys, str_cmp);
        out->n_runs = runs->n;
        out->keys = dt_calloc(n ? n : 1, sizeof *out->keys);
        out->differs = dt_calloc(n ? n : 1, sizeof *out->differs);
        out->values = dt_calloc(n && runs->n ? n * runs->n : 1, sizeof *out->values);
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && !strcmp(keys[i], keys[i - 1]))
                continue;
            size_t k = out->n_keys++;
            out->keys[k] = dup_text((const unsigned char *)keys[i]);
            for (size_t r = 0; r < runs->n; r++) {
                const char *v = kv_find(&per_run[r], keys[i]);
                out->values[k * runs->n + r] = dup_text((const unsigned char *)v);
                const char *first = out->values[k * runs->n];
                out->differs[k] |= !v || !first || strcmp(v, first) != 0;
            }
        }
        free(keys);
    }
    for (size_t r = 0; r < runs->n; r++)
        kv_free(&per_run[r]);
    free(per_run);
    if (st != DT_OK)
        results_params_free(out);
    return st;
}

void results_params_free(results_params_t *p)
{
    if (!p)
        return;
    for (size_t k = 0; k < p->n_keys; k++) {
        free(p->keys[k]);
        for (size_t r = 0; r < p->n_runs; r++)
            free(p->values[k * p->n_runs + r]);
    }
    free(p->keys);
    free(p->values);
    free(p->differs);
    memset(p, 0, sizeof *p);
}

/* --- figures ------------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = dt_malloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            DT_CHECK(buf, "out of memory reading %s", path);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Writes the SVG document svg into the page from its <svg> element on (the XML declaration
 * is not HTML), every id in it, and every reference to one, prefixed "PREFIX-". Only the
 * inside of tags is rewritten: a name drawn as text that reads id='x' stays as it is. */
static void inline_svg(FILE *f, const char *svg, const char *prefix)
{
    const char *p = strstr(svg, "<svg");
    int in_tag = 0;
    char quote = 0;
    for (; p && *p; p++) {
        if (!in_tag) {
            in_tag = *p == '<';
            fputc(*p, f);
            continue;
        }
        if (quote && *p == quote) {
            quote = 0;
        } else if (!quote && (*p == '"' || *p == '\'')) {
            quote = *p;
        } else if (!quote && *p == '>') {
            in_tag = 0;
        } else if (!quote && isspace((unsigned char)p[-1]) && !strncmp(p, "id=", 3) &&
                   (p[3] == '"' || p[3] == '\'')) {
            fprintf(f, "id=%c%s-", p[3], prefix);
            quote = p[3];
            p += 3;
            continue;
        } else if (!quote && !strncmp(p, "href=", 5) && (p[5] == '"' || p[5] == '\'') &&
                   p[6] == '#') {
            fprintf(f, "href=%c#%s-", p[5], prefix);
            quote = p[5];
            p += 6;
            continue;
        } else if (!strncmp(p, "url(#", 5)) {
            fprintf(f, "url(#%s-", prefix);
            p += 4;
            continue;
        }
        fputc(*p, f);
    }
}

/* Draws figure fig as SVG into dir and returns its file's path in out (NULL: skipped, the
 * reason in out->note). The one place that tells plot.h which format to draw. */
static dt_status draw_svg(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                          const char *dir, int64_t timeline_run, results_plot_out_t *out,
                          const char **svg, dt_err_t *err)
{
    results_plot_opts_t po = {
        .out_dir = dir, .formats = RESULTS_PLOT_SVG, .timeline_run = timeline_run};
    *svg = NULL;
    dt_status st = results_plot_draw(q, runs, fig, &po, out, err);
    for (int i = 0; i < out->n_files; i++) {
        size_t n = strlen(out->files[i]);
        if (n > 4 && !strcmp(out->files[i] + n - 4, ".svg"))
            *svg = out->files[i];
    }
    return st;
}

/* Removes what draw_svg wrote. */
static void remove_files(const results_plot_out_t *out)
{
    for (int i = 0; i < out->n_files; i++)
        unlink(out->files[i]);
}

/* The figure's place in the page: its SVG and caption, or why it is not there (nothing, on
 * a lesson's page: a class needs no box about a figure these runs cannot make). dir is where
 * to draw, NULL when no figure can be drawn (why_not says why). */
static void write_figure(FILE *f, results_query_t *q, const results_runs_t *runs,
                         results_figure_t fig, const char *dir, const char *why_not,
                         const results_report_opts_t *o, int linked, results_report_out_t *res)
{
    const char *name = results_figure_name(fig);
    const char *title = captions[fig].title ? captions[fig].title : name;
    const char *caption = captions[fig].text ? captions[fig].text : results_figure_help(fig);
    results_plot_out_t out = {0};
    const char *svg_path = NULL;
    dt_err_t err = {""};
    dt_status st = DT_OK;
    char *svg = NULL;
    size_t len = 0;
    if (dir) {
        st = draw_svg(q, runs, fig, dir, o->timeline_run, &out, &svg_path, &err);
        if (st == DT_OK && svg_path && !(svg = read_file(svg_path, &len)))
            st = dt_err_input(&err, "%s: %s", svg_path, strerror(errno));
        remove_files(&out);
    }
    /* a lesson's page leaves out a figure its runs cannot make, unless its text links to it
     * (the link lands on the figure's note) */
    if (!svg && o->lesson && !linked && st == DT_OK) {
        res->skipped++;
        results_plot_out_free(&out);
        return;
    }
    fprintf(f, "<figure id=\"fig-%s\"%s>\n<h3>%s</h3>\n", name, svg ? "" : " class=\"skipped\"",
            title);
    if (svg) {
        inline_svg(f, svg, name);
        fputs("\n<figcaption>", f);
        results_report_escape(f, caption);
        fputs("</figcaption>\n", f);
        res->drawn++;
    } else {
        fputs("<p class=\"note\">Not drawn: ", f);
        results_report_escape(f, !dir ? why_not : st != DT_OK ? err.msg : out.note);
        fputs(".</p>\n<p>What it shows: ", f);
        results_report_escape(f, caption);
        fputs("</p>\n", f);
        if (st == DT_OK)
            res->skipped++;
        else if (res->failed++ == 0)
            res->failure = err;
    }
    if (svg && out.note[0]) {
        fputs("<p class=\"note\">", f);
        results_report_escape(f, out.note);
        fputs("</p>\n", f);
    }
    fputs("</figure>\n", f);
    free(svg);
    results_plot_out_free(&out);
}

/* The figure folders of reports killed while drawing (dtsim-report-PID-XXXXXX in parent,
 * whose PID is gone): their files, then the folder. */
static void remove_stale_folders(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        char tail[16];
        if (sscanf(e->d_name, "dtsim-report-%ld-%15s", &pid, tail) != 2 || pid <= 0 ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        size_t n = strlen(parent) + strlen(e->d_name) + 2;
        char *path = dt_malloc(n);
        snprintf(path, n, "%s/%s", parent, e->d_name);
        DIR *in = opendir(path);
        struct dirent *f;
        while (in && (f = readdir(in))) {
            if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, ".."))
                continue;
            size_t m = n + strlen(f->d_name) + 1;
            char *file = dt_malloc(m);
            snprintf(file, m, "%s/%s", path, f->d_name);
            unlink(file);
            free(file);
        }
        if (in)
            closedir(in);
        rmdir(path);
        free(path);
    }
    closedir(d);
}

/* Every figure, drawn in a temporary directory that is gone afterwards (or, when the report
 * is killed, with the next report). */
static void write_figures(FILE *f, results_query_t *q, const results_runs_t *runs,
                          const results_report_opts_t *o, results_report_out_t *res)
{
    const char *tmp = getenv("TMPDIR");
    size_t n = (tmp && *tmp ? strlen(tmp) : 4) + 64;
    char *dir = dt_malloc(n);
    remove_stale_folders(tmp && *tmp ? tmp : "/tmp");
    snprintf(dir, n, "%s/dtsim-report-%ld-XXXXXX", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    char why_not[320] = "";
    const char *made = NULL;
    if (!o->figures)
        snprintf(why_not, sizeof why_not, "the figures need gnuplot (Debian package gnuplot-nox)");
    else if (!(made = mkdtemp(dir)))
        snprintf(why_not, sizeof why_not, "cannot make a temporary directory %s: %s", dir,
                 strerror(errno));
    fputs("<section id=\"figures\">\n<h2>Figures</h2>\n", f);
    /* a plan's runs: the Pareto chart first, what a planner reads before the rest */
    int plan = results_runs_plan(runs);
    if (plan)
        write_figure(f, q, runs, RESULTS_FIGURE_PARETO, made, why_not, o, 0, res);
    /* a lesson's page: the figures its text links to, the others folded away */
    int linked[RESULTS_FIGURE_COUNT] = {0}, folded = 0;
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT && o->lesson; fig++) {
        char anchor[64];
        snprintf(anchor, sizeof anchor, "(#fig-%s)", results_figure_name((results_figure_t)fig));
        linked[fig] = strstr(o->lesson, anchor) != NULL;
    }
    for (int pass = 0; pass < (o->lesson ? 2 : 1); pass++)
        for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
            if ((plan && fig == RESULTS_FIGURE_PARETO) || (o->lesson && linked[fig] == pass))
                continue;
            if (pass && !folded++)
                fputs("<details class=\"more\"><summary>More figures of these runs (the lesson "
                      "does not use them)</summary>\n",
                      f);
            write_figure(f, q, runs, (results_figure_t)fig, made, why_not, o, linked[fig], res);
        }
    if (folded)
        fputs("</details>\n", f);
    fputs("</section>\n", f);
    if (made)
        rmdir(made);
    else if (o->figures) { /* no figure could be drawn: that is a failure, not a skip */
        res->failed = res->skipped;
        res->skipped = 0;
        dt_err_input(&res->failure, "%s", why_not);
    }
    free(dir);
}

/* --- sections -------------------------------------------------------------------------------- */

/* The run's id, as a link to its details. */
static void run_link(FILE *f, const results_run_view_t *r)
{
    fprintf(f, "<a href=\"#run-%lld\">%lld</a>", (long long)r->id, (long long)r->id);
}

/* The target accuracy every run with a summary shares, or NAN. */
static double common_target(const results_runs_t *runs)
{
    double t = NAN;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (!r->has_summary)
            continue;
        if (isnan(r->target_accuracy) || (!isnan(t) && t != r->target_accuracy))
            return NAN;
        t = r->target_accuracy;
    }
    return t;
}

/* Each run's mean gradient staleness (async-ps), NAN for a run without staleness rows; NULL
 * when no run has any, or on a database error (err set). */
static double *mean_staleness(results_query_t *q, const results_runs_t *runs, dt_status *st,
                              dt_err_t *err)
{
    sqlite3 *h = results_query_sqlite(q);
    sqlite3_stmt *s;
    *st = DT_OK;
    if (sqlite3_prepare_v2(h,
                           "SELECT sum(staleness * count) * 1.0 / sum(count) FROM staleness"
                           " WHERE run = ?1 HAVING sum(count) > 0",
                           -1, &s, NULL) != SQLITE_OK) {
        *st = sql_failed(err, h, "reading staleness");
        return NULL;
    }
    double *mean = dt_calloc(runs->n ? runs->n : 1, sizeof *mean);
    int any = 0;
    for (size_t i = 0; i < runs->n && *st == DT_OK; i++) {
        DT_ASSERT(sqlite3_bind_int64(s, 1, runs->v[i].id) == SQLITE_OK);
        int rc = sqlite3_step(s);
        mean[i] = rc == SQLITE_ROW ? sqlite3_column_double(s, 0) : NAN;
        any |= rc == SQLITE_ROW;
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            *st = sql_failed(err, h, "reading staleness");
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    if (!any || *st != DT_OK) {
        free(mean);
        return NULL;
    }
    return mean;
}

/* A run of the ranking: its step time (INFINITY without one: last), then its id. */
typedef struct rank_row {
    double step_s;
    size_t i;
} rank_row_t;

static int rank_cmp(const void *a, const void *b)
{
    const rank_row_t *x = a, *y = b;
    if (x->step_s != y->step_s)
        return (x->step_s > y->step_s) - (x->step_s < y->step_s);
    return (x->i > y->i) - (x->i < y->i);
}

/* A plan's runs ranked by simulated seconds per step (as `dtsim plan` prints them), with the
 * memory of each one's fullest device and its cost, read from the database. */
static dt_status write_ranking(FILE *f, results_query_t *q, const results_runs_t *runs,
                               dt_err_t *err)
{
    rank_row_t *rows = dt_malloc(runs->n * sizeof *rows);
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        rows[i] = (rank_row_t){r->has_summary && r->steps > 0 && r->sim_time > 0
                                   ? r->sim_time / (double)r->steps
                                   : INFINITY,
                               i};
    }
    qsort(rows, runs->n, sizeof *rows, rank_cmp);
    fputs("<section id=\"ranking\">\n<h2>Ranking</h2>\n<div class=\"scroll\"><table>\n"
          "<tr><th>rank</th><th>run</th><th>name</th><th>s/step</th><th>memory GB</th>"
          "<th>$ per 1000 samples</th><th>J per sample</th></tr>\n",
          f);
    dt_status st = DT_OK;
    for (size_t k = 0; st == DT_OK && k < runs->n; k++) {
        const results_run_view_t *r = &runs->v[rows[k].i];
        results_memory_t m;
        results_energy_view_t e;
        int found;
        if ((st = results_query_memory(q, r->id, &m, &found, err)) != DT_OK ||
            (st = results_query_energy(q, r->id, &e, err)) != DT_OK)
            break;
        double parts[4] = {m.params, m.grads, m.optimizer, m.activations}, gb = 0;
        int known = 0;
        for (int p = 0; p < 4; p++)
            if (!isnan(parts[p])) {
                gb += parts[p] / 1e9;
                known = 1;
            }
        char step[32], mem[32], dollars[32], joules[32];
        fmt_fixed(step, sizeof step, isinf(rows[k].step_s) ? NAN : rows[k].step_s, 6);
        fmt_fixed(mem, sizeof mem, found && known ? gb : NAN, 2);
        fmt_fixed(dollars, sizeof dollars, 1000 * e.dollars_per_sample, 4);
        fmt_fixed(joules, sizeof joules, e.joules_per_sample, 1);
        fprintf(f, "<tr><td class=\"num\">%zu</td><td>", k + 1);
        run_link(f, r);
        fputs("</td>", f);
        td_name(f, r->name);
        td_num(f, step);
        td_num(f, mem);
        td_num(f, dollars);
        td_num(f, joules);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n<p>The runs of a plan (<code>dtsim plan</code>), fastest first: "
          "simulated seconds per step (simulated time / steps), the memory the fullest device "
          "holds (parameters, gradients, optimizer state, activations), dollars per 1000 "
          "samples (cluster.price_per_device_hour) and joules per sample. The Pareto chart "
          "below shows them all at once.</p>\n</section>\n",
          f);
    free(rows);
    return st;
}

/* Whether any run is a language model's: its loss, not its accuracy, says what it learnt. */
static int any_language_model(const results_runs_t *runs)
{
    for (size_t i = 0; i < runs->n; i++)
        if (runs->v[i].language_model)
            return 1;
    return 0;
}

/* The summary table; a column of mean staleness when staleness is not NULL, of the loss and
 * perplexity when a run is a language model's. */
static void write_summary(FILE *f, const results_runs_t *runs, const double *staleness)
{
    int lm = any_language_model(runs);
    double target = common_target(runs);
    char ttt_head[48] = "time to target";
    if (!isnan(target))
        snprintf(ttt_head, sizeof ttt_head, "time to %.4g", target);
    fprintf(f,
            "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"scroll\"><table>\n"
            "<tr><th>run</th><th>name</th><th>strategy</th><th>status</th><th>accuracy</th>"
            "<th>simulated time</th><th>%s</th><th>bytes sent</th><th>compute</th>"
            "<th>comm</th><th>idle</th><th>steps</th>%s%s</tr>\n",
            ttt_head, lm ? "<th>loss (nats)</th><th>perplexity</th>" : "",
            staleness ? "<th>mean staleness</th>" : "");
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        char acc[32], t[32], ttt[48], bytes[32], c[16], m[16], idle[16], steps[24];
        fmt_fixed(acc, sizeof acc, r->final_accuracy, 4);
        fmt_seconds(t, sizeof t, r->sim_time);
        fmt_seconds(ttt, sizeof ttt, r->time_to_target);
        if (r->has_summary && isnan(r->time_to_target))
            snprintf(ttt, sizeof ttt, "never");
        if (r->has_summary && isnan(target) && !isnan(r->target_accuracy))
            snprintf(ttt + strlen(ttt), sizeof ttt - strlen(ttt), " (%.4g)", r->target_accuracy);
        fmt_bytes(bytes, sizeof bytes, r->total_bytes);
        fmt_share(c, sizeof c, r->compute_share);
        fmt_share(m, sizeof m, r->comm_share);
        fmt_share(idle, sizeof idle, r->idle_share);
        if (r->has_summary)
            snprintf(steps, sizeof steps, "%ld", r->steps);
        else
            snprintf(steps, sizeof steps, "&ndash;");
        fputs("<tr><td>", f);
        run_link(f, r);
        fputs("</td>", f);
        td_name(f, r->name);
        td_text(f, r->strategy);
        td_text(f, r->status);
        td_num(f, acc);
        td_num(f, t);
        td_num(f, ttt);
        td_num(f, bytes);
        td_num(f, c);
        td_num(f, m);
        td_num(f, idle);
        td_num(f, steps);
        if (lm) {
            char loss[32], ppl[32];
            fmt_fixed(loss, sizeof loss, r->final_loss, 6);
            fmt_fixed(ppl, sizeof ppl, exp(r->final_loss), 3);
            td_num(f, loss);
            td_num(f, ppl);
        }
        if (staleness) {
            char st[24];
            fmt_fixed(st, sizeof st, staleness[i], 2);
            td_num(f, st);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n<p>Accuracy: the test accuracy of the last evaluation. Time to "
          "target: the simulated time at which the test accuracy first reached the target "
          "(run.target_accuracy). Compute, comm and idle: the hosts' shares of their summed "
          "time.",
          f);
    if (lm)
        fputs(" Loss: the test loss of the last evaluation, for a language model the mean "
              "next-token cross-entropy in nats (its accuracy is the next-token accuracy, "
              "which can sit at the commonest token's share while the loss falls); "
              "perplexity: exp(loss).",
              f);
    if (staleness)
        fputs(" Mean staleness: how many updates, on average, the parameters had moved on "
              "between the moment a worker read them and the moment its gradient was applied "
              "(asynchronous SGD).",
              f);
    fputs("</p>\n</section>\n", f);
}

/* Whether key k is a column of the table of differences: run.name is left out, as the runs'
 * names (which a sweep makes from the swept values) are in the summary already. */
static int diff_column(const results_params_t *p, size_t k)
{
    return p->differs[k] && strcmp(p->keys[k], "run.name") != 0;
}

static void write_config(FILE *f, const results_runs_t *runs, const results_params_t *p)
{
    size_t n_diff = 0;
    for (size_t k = 0; k < p->n_keys; k++)
        n_diff += diff_column(p, k);
    fputs("<section id=\"config\">\n<h2>Configuration</h2>\n", f);
    fputs("<h3 id=\"config-differs\">What differs between the runs</h3>\n", f);
    if (runs->n < 2)
        fputs("<p>One run: its whole configuration is below.</p>\n", f);
    else if (n_diff == 0)
        fputs("<p>Nothing: every run has the same configuration.</p>\n", f);
    else {
        fprintf(f,
                "<p>%zu key%s whose values are not the same in every run (a sweep's "
                "parameters, and the keys that follow from them).</p>\n",
                n_diff, n_diff == 1 ? "" : "s");
        fputs("<div class=\"scroll\"><table>\n<tr><th>run</th>", f);
        for (size_t k = 0; k < p->n_keys; k++)
            if (diff_column(p, k)) {
                fputs("<th>", f);
                results_report_escape(f, p->keys[k]);
                fputs("</th>", f);
            }
        fputs("</tr>\n", f);
        for (size_t r = 0; r < runs->n; r++) {
            fputs("<tr><td>", f);
            run_link(f, &runs->v[r]);
            fputs("</td>", f);
            for (size_t k = 0; k < p->n_keys; k++) {
                if (!diff_column(p, k))
                    continue;
                const char *v = p->values[k * p->n_runs + r];
                if (v)
                    td_text(f, v);
                else
                    fputs("<td class=\"note\">not set</td>", f);
            }
            fputs("</tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    size_t shared = 0;
    for (size_t k = 0; k < p->n_keys; k++)
        shared += !p->differs[k];
    /* the keys every run shares, folded: a lesson's 130 (faults.*, secagg_bits) are noise
     * beside the few it varies */
    fprintf(f,
            "<h3 id=\"config-common\">%s</h3>\n<details><summary>%zu key%s, the same in %s"
            "</summary>\n<ul class=\"common\">\n",
            runs->n < 2 ? "Its configuration" : "What every run shares", shared,
            shared == 1 ? "" : "s", runs->n < 2 ? "the run" : "every run");
    for (size_t k = 0; k < p->n_keys; k++) {
        if (p->differs[k])
            continue;
        fputs("<li><code>", f);
        results_report_escape(f, p->keys[k]);
        fputs("</code> = ", f);
        results_report_escape(f, p->values[k * p->n_runs]);
        fputs("</li>\n", f);
    }
    fputs("</ul>\n</details>\n</section>\n", f);
}

/* A row of a run's details: a name of dtsim's and a value from the database. */
static void detail_row(FILE *f, const char *what, const char *value)
{
    fprintf(f, "<tr><th>%s</th>", what);
    td_text(f, value ? value : "");
    fputs("</tr>\n", f);
}

/* The runs row's columns the run view does not hold, its faults and its staleness. */
enum { D_RUN, D_FAULTS, D_STALENESS, D_COUNT };
static const char *const detail_sql[D_COUNT] = {
    [D_RUN] = "SELECT seed, dtsim_version, simgrid_version, host, pid, started, ended, sweep,"
              " sweep_index, config FROM runs WHERE id = ?1",
    [D_FAULTS] = "SELECT kind, count(*) FROM faults WHERE run = ?1 GROUP BY kind"
                 " ORDER BY min(sim_time), kind",
    [D_STALENESS] = "SELECT sum(staleness * count) * 1.0 / sum(count), max(staleness),"
                    " sum(count) FROM staleness WHERE run = ?1 HAVING sum(count) > 0",
};

static dt_status write_run(FILE *f, sqlite3_stmt *const *st, const results_run_view_t *r,
                           dt_err_t *err)
{
    for (int i = 0; i < D_COUNT; i++)
        DT_ASSERT(sqlite3_bind_int64(st[i], 1, r->id) == SQLITE_OK);
    fprintf(f, "<section id=\"run-%lld\">\n<h3>Run %lld: ", (long long)r->id, (long long)r->id);
    results_report_escape(f, r->name);
    fputs("</h3>\n<div class=\"scroll\"><table>\n", f);
    detail_row(f, "strategy", r->strategy);
    detail_row(f, "status", r->status);
    int rc = sqlite3_step(st[D_RUN]);
    const char *config = NULL;
    if (rc == SQLITE_ROW) {
        sqlite3_stmt *s = st[D_RUN];
        char num[64];
        snprintf(num, sizeof num, "%lld", (long long)sqlite3_column_int64(s, 0));
        detail_row(f, "seed", num);
        if (sqlite3_column_type(s, 7) != SQLITE_NULL) {
            fputs("<tr><th>sweep</th><td>", f);
            results_report_escape(f, (const char *)sqlite3_column_text(s, 7));
            fprintf(f, ", run %lld of it</td></tr>\n", (long long)sqlite3_column_int64(s, 8));
        }
        detail_row(f, "started (UTC)", (const char *)sqlite3_column_text(s, 5));
        detail_row(f, "ended (UTC)", (const char *)sqlite3_column_text(s, 6));
        fputs("<tr><th>written by</th><td>dtsim ", f);
        results_report_escape(f, (const char *)sqlite3_column_text(s, 1));
        fputs(", SimGrid ", f);
        results_report_escape(f, (const char *)sqlite3_column_text(s, 2));
        fputs(", on ", f);
        results_report_escape(f, (const char *)sqlite3_column_text(s, 3));
        fprintf(f, " (process %lld)</td></tr>\n", (long long)sqlite3_column_int64(s, 4));
        config = (const char *)sqlite3_column_text(s, 9);
    }
    while (rc == SQLITE_ROW && (rc = sqlite3_step(st[D_FAULTS])) == SQLITE_ROW) {
        fputs("<tr><th>faults</th><td>", f);
        results_report_escape(f, (const char *)sqlite3_column_text(st[D_FAULTS], 0));
        fprintf(f, ": %lld</td></tr>\n", (long long)sqlite3_column_int64(st[D_FAULTS], 1));
    }
    if (rc == SQLITE_DONE && (rc = sqlite3_step(st[D_STALENESS])) == SQLITE_ROW) {
        fprintf(f,
                "<tr><th>staleness</th><td>mean %.2f, at most %lld, over %lld gradients"
                "</td></tr>\n",
                sqlite3_column_double(st[D_STALENESS], 0),
                (long long)sqlite3_column_int64(st[D_STALENESS], 1),
                (long long)sqlite3_column_int64(st[D_STALENESS], 2));
        rc = SQLITE_DONE;
    }
    fputs("</table></div>\n", f);
    if (config) {
        fputs("<details><summary>its resolved configuration (a scenario dtsim run takes as is)"
              "</summary>\n<pre>",
              f);
        results_report_escape(f, config);
        fputs("</pre></details>\n", f);
    }
    fputs("</section>\n", f);
    dt_status s = DT_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        s = sql_failed(err, sqlite3_db_handle(st[D_RUN]), "reading a run's details");
    for (int i = 0; i < D_COUNT; i++)
        sqlite3_reset(st[i]);
    return s;
}

static dt_status write_runs(FILE *f, results_query_t *q, const results_runs_t *runs, dt_err_t *err)
{
    sqlite3 *h = results_query_sqlite(q);
    sqlite3_stmt *st[D_COUNT] = {0};
    dt_status s = DT_OK;
    for (int i = 0; i < D_COUNT && s == DT_OK; i++)
        if (sqlite3_prepare_v2(h, detail_sql[i], -1, &st[i], NULL) != SQLITE_OK)
            s = sql_failed(err, h, "reading the runs' details");
    fputs("<section id=\"runs\">\n<h2>Runs</h2>\n", f);
    for (size_t i = 0; i < runs->n && s == DT_OK; i++)
        s = write_run(f, st, &runs->v[i], err);
    fputs("</section>\n", f);
    for (int i = 0; i < D_COUNT; i++)
        sqlite3_finalize(st[i]);
    return s;
}

/* --- the page ----------------------------------------------------------------------------------
 */

static void write_head(FILE *f, const results_runs_t *runs, const results_report_opts_t *o)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          /* nothing from outside the page, no script: only its own style and pictures */
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; img-src data:\">\n<title>dtsim report: ",
          f);
    results_report_escape(f, runs->what);
    fprintf(f,
            "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>dtsim report</h1>\n"
            "<p class=\"meta\">",
            page_style);
    results_report_escape(f, runs->what);
    fputs(", from ", f);
    results_report_escape(f, o->db_path);
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    fputs("; made by ", f);
    results_report_escape(f, o->made_by ? o->made_by : "dtsim");
    fprintf(f,
            " on %s.</p>\n<nav>%s%s<a href=\"#summary\">Summary</a><a href=\"#figures\">"
            "Figures</a><a href=\"#config\">Configuration</a><a href=\"#runs\">Runs</a>"
            "</nav>\n",
            when, o->lesson ? "<a href=\"#lesson\">Lesson</a>" : "",
            results_runs_plan(runs) ? "<a href=\"#ranking\">Ranking</a>" : "");
}

static dt_status write_page(FILE *f, results_query_t *q, const results_runs_t *runs,
                            const results_report_opts_t *o, results_report_out_t *res,
                            dt_err_t *err)
{
    results_params_t params;
    double *staleness = NULL;
    dt_status st = results_report_params(q, runs, &params, err);
    if (st == DT_OK)
        staleness = mean_staleness(q, runs, &st, err);
    if (st == DT_OK) {
        write_head(f, runs, o);
        if (o->lesson) {
            fputs("<section id=\"lesson\" class=\"lesson\">\n", f);
            st = results_report_lesson(f, o->lesson, q, runs, &res->lesson_drift, err);
            fputs("</section>\n", f);
        }
        if (st == DT_OK && results_runs_plan(runs))
            st = write_ranking(f, q, runs, err);
    }
    if (st == DT_OK) {
        write_summary(f, runs, staleness);
        write_figures(f, q, runs, o, res);
        write_config(f, runs, &params);
        st = write_runs(f, q, runs, err);
        fputs("</body>\n</html>\n", f);
    }
    free(staleness);
    results_params_free(&params);
    return st;
}

dt_status results_report_write(results_query_t *q, const results_runs_t *runs,
                               const results_report_opts_t *o, const char *path,
                               results_report_out_t *out, dt_err_t *err)
{
    DT_ASSERT(q && runs && o && path && out);
    memset(out, 0, sizeof *out);
    size_t pl = strlen(path);
    char *tmp = dt_malloc(pl + 64);
    int fd = -1;
    for (int attempt = 0; fd < 0; attempt++) {
        snprintf(tmp, pl + 64, "%s.tmp-%ld-%d", path, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt == 100)) {
            dt_status st = dt_err_input(err, "%s: %s", tmp, strerror(errno));
            free(tmp);
            return st;
        }
    }
    FILE *f = fdopen(fd, "w");
    DT_CHECK(f, "fdopen: %s", strerror(errno));
    dt_status st = write_page(f, q, runs, o, out, err);
    int werr = ferror(f) ? EIO : 0;
    if (fclose(f) != 0 && !werr)
        werr = errno;
    if (st == DT_OK && werr)
        st = dt_err_input(err, "%s: %s", tmp, strerror(werr));
    if (st == DT_OK && rename(tmp, path) != 0)
        st = dt_err_input(err, "%s: %s", path, strerror(errno));
    if (st != DT_OK)
        unlink(tmp);
    free(tmp);
    return st;
}
