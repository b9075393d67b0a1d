/* A lesson's stated numbers against its runs (see lesson_numbers.h).
 *
 * Why it is built this way:
 *   - the tie sits in the text, beside the number, as an HTML comment: a teacher editing the
 *     text sees it, GitHub and libcmark's safe mode show nothing of it, and no number needs a
 *     template the source would read badly with;
 *   - one walk of libcmark's tree does both jobs, the test's (every number tied, every tie
 *     true) and the page's (a warning beside a number these runs contradict), so the page
 *     and the test cannot disagree about what a tie means;
 *   - a metric is one SQL statement of a run's rows, bound to its id: a new metric is a row
 *     of the table below (and of scenarios/lessons/README.md's). */
#define _POSIX_C_SOURCE 200809L
#include "lesson_numbers.h"

#include <ctype.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmark.h>

#include "report.h" /* results_report_params */

/* Each metric: its name in a run: annotation, what it is, and its SQL (?1 the run). */
enum { N_METRICS = 21 };
static const char *const metric_sql[N_METRICS][3] = {
    {"accuracy", "test accuracy of the last evaluation",
     "SELECT final_accuracy FROM summary WHERE run = ?1"},
    {"acc_max", "the highest test accuracy of any evaluation",
     "SELECT max(test_acc) FROM evals WHERE run = ?1"},
    {"loss", "test loss of the last evaluation (nats for a language model)",
     "SELECT final_loss FROM summary WHERE run = ?1"},
    {"first_loss", "test loss of the first evaluation",
     "SELECT test_loss FROM evals WHERE run = ?1 ORDER BY sim_time, step, rowid LIMIT 1"},
    {"first_accuracy", "test accuracy of the first evaluation",
     "SELECT test_acc FROM evals WHERE run = ?1 ORDER BY sim_time, step, rowid LIMIT 1"},
    {"learning_step", "the step from which every evaluation's accuracy is above the first's",
     "WITH f AS (SELECT test_acc AS a FROM evals WHERE run = ?1 ORDER BY sim_time, step, rowid"
     " LIMIT 1) SELECT min(e.step) FROM evals e, f WHERE e.run = ?1 AND NOT EXISTS (SELECT 1"
     " FROM evals x WHERE x.run = ?1 AND x.step >= e.step AND x.test_acc <= f.a + 0.002)"},
    {"time", "simulated seconds of the whole run", "SELECT sim_time FROM summary WHERE run = ?1"},
    {"step_time", "simulated seconds per step (time / steps)",
     "SELECT sim_time / steps FROM summary WHERE run = ?1 AND steps > 0"},
    {"time_to_target", "simulated seconds to run.target_accuracy",
     "SELECT time_to_target FROM summary WHERE run = ?1"},
    {"bytes", "bytes sent, all hosts, whole run", "SELECT total_bytes FROM summary WHERE run = ?1"},
    {"host_step_bytes", "bytes a worker sends a step (bytes / steps / cluster.workers)",
     "SELECT s.total_bytes / s.steps / p.number FROM summary s JOIN params p ON p.run = s.run"
     " AND p.key = 'cluster.workers' WHERE s.run = ?1 AND s.steps > 0"},
    {"compute", "the hosts' share of time computing",
     "SELECT compute_share FROM summary WHERE run = ?1"},
    {"comm", "the hosts' share of time communicating",
     "SELECT comm_share FROM summary WHERE run = ?1"},
    {"idle", "the hosts' share of time waiting", "SELECT idle_share FROM summary WHERE run = ?1"},
    {"staleness", "mean staleness of the applied gradients",
     "SELECT sum(staleness * count) * 1.0 / sum(count) FROM staleness WHERE run = ?1"},
    {"client_min", "the lowest client accuracy on its held-out samples",
     "SELECT min_acc FROM client_fairness WHERE run = ?1"},
    {"client_max", "the highest client accuracy on its held-out samples",
     "SELECT max_acc FROM client_fairness WHERE run = ?1"},
    {"client_spread", "client_max - client_min",
     "SELECT spread FROM client_fairness WHERE run = ?1"},
    {"params_memory", "bytes of parameters the fullest host holds",
     "SELECT max(params) FROM memory WHERE run = ?1"},
    {"optimizer_memory", "bytes of optimizer state the fullest host holds",
     "SELECT max(optimizer) FROM memory WHERE run = ?1"},
    {"activations", "bytes of activations the fullest host keeps",
     "SELECT max(activations) FROM memory WHERE run = ?1"},
};

const char *results_lesson_metric(size_t i)
{
    return i < N_METRICS ? metric_sql[i][0] : NULL;
}

/* --- numbers in prose -------------------------------------------------------------------- */

/* The units a stated number may carry, and the base units' factor (a share is a fraction: 46%
 * is 0.46 of it; "points" are percentage points). Longest first where one begins another. */
static const struct {
    const char *text;
    double scale;
} units[] = {
    {"%", 0.01}, {"points", 0.01}, {"nats", 1}, {"ms", 1e-3}, {"us", 1e-6},
    {"s", 1},    {"GB", 1e9},      {"MB", 1e6}, {"KB", 1e3},  {"kB", 1e3},
    {"B", 1},    {"Gb/s", 1},      {"Mb/s", 1},
};

typedef struct num {
    double value, scale; /* value as written; scale: its unit's factor (1 without one) */
    int decimals;
    const char *unit; /* NULL: none written */
    char text[40];    /* as written, for messages */
} num_t;

enum { SPAN_MAX = 48 };
typedef struct span {
    num_t v[SPAN_MAX];
    size_t n;
} span_t;

/* The unit written after s (one blank allowed), or -1. */
static int unit_at(const char *s)
{
    if (*s == ' ')
        s++;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t n = strlen(units[u].text);
        if (!strncmp(s, units[u].text, n) && !isalnum((unsigned char)s[n]))
            return (int)u;
    }
    return -1;
}

/* A number starts at s[i]: a digit not inside a word or a name (1F1B, a100, shards:2,
 * worker-0). */
static int number_starts(const char *s, size_t i)
{
    if (!isdigit((unsigned char)s[i]))
        return 0;
    if (i == 0)
        return 1;
    unsigned char p = (unsigned char)s[i - 1];
    if (p == '-' && i >= 2 && isalpha((unsigned char)s[i - 2])) /* worker-0, GPT-2 */
        return 0;
    return !isalnum(p) && p != '_' && p != ':' && p != '.' && p != '/';
}

/* Parses the number at s (218,496; 0.91; 46.2) into n; returns its length, or 0 when it is
 * part of a word (1F1B, 32-bit). */
static size_t number_read(const char *s, num_t *n)
{
    size_t j = 0;
    char digits[40];
    size_t d = 0;
    while (isdigit((unsigned char)s[j]) ||
           (s[j] == ',' && isdigit((unsigned char)s[j + 1]) && isdigit((unsigned char)s[j + 2]) &&
            isdigit((unsigned char)s[j + 3]) && !isdigit((unsigned char)s[j + 4]))) {
        if (s[j] != ',' && d < sizeof digits - 8)
            digits[d++] = s[j];
        j++;
    }
    n->decimals = 0;
    if (s[j] == '.' && isdigit((unsigned char)s[j + 1])) {
        digits[d++] = s[j++];
        while (isdigit((unsigned char)s[j])) {
            if (d < sizeof digits - 1)
                digits[d++] = s[j];
            j++;
            n->decimals++;
        }
    }
    if (isalpha((unsigned char)s[j]) || s[j] == '_' ||
        (s[j] == '-' && isalpha((unsigned char)s[j + 1]))) /* 1F1B, 32-bit */
        return 0;
    digits[d] = '\0';
    n->value = strtod(digits, NULL);
    int u = unit_at(s + j);
    n->unit = u >= 0 ? units[u].text : NULL;
    n->scale = u >= 0 ? units[u].scale : 1;
    snprintf(n->text, sizeof n->text, "%.*s%s%s", (int)j, s, u >= 0 && s[j] == ' ' ? " " : "",
             u >= 0 ? units[u].text : "");
    return j;
}

/* Adds the numbers of prose text to span; returns those that did not fit. */
static size_t span_scan(span_t *sp, const char *text)
{
    size_t lost = 0;
    for (size_t i = 0; text[i];) {
        if (!number_starts(text, i)) {
            i++;
            continue;
        }
        num_t n;
        size_t len = number_read(text + i, &n);
        if (len == 0) { /* a word: past it */
            while (isalnum((unsigned char)text[i]) || text[i] == '_' || text[i] == '.')
                i++;
            continue;
        }
        if (sp->n < SPAN_MAX)
            sp->v[sp->n++] = n;
        else
            lost++;
        i += len;
    }
    return lost;
}

/* "20.0 / 9.8 / 8.8 ms": a number without a unit takes the next one's. */
static void span_units(span_t *sp)
{
    for (size_t i = sp->n; i-- > 1;)
        if (!sp->v[i - 1].unit && sp->v[i].unit) {
            sp->v[i - 1].unit = sp->v[i].unit;
            sp->v[i - 1].scale = sp->v[i].scale;
        }
}

/* Whether measured (base units) rounds to the stated number as the text rounds it. */
static int num_matches(const num_t *n, double measured)
{
    if (isnan(measured))
        return 0;
    double half = 0.5 * pow(10, -n->decimals);
    return fabs(measured / n->scale - n->value) <= half * (1 + 1e-9) + 1e-12;
}

/* measured written as the text writes n: its decimals and unit. */
static int num_format(char *buf, size_t size, const num_t *n, double measured)
{
    if (isnan(measured))
        return snprintf(buf, size, "none");
    const char *gap = n->unit && strcmp(n->unit, "%") ? " " : "";
    return snprintf(buf, size, "%.*f%s%s", n->decimals, measured / n->scale, gap,
                    n->unit ? n->unit : "");
}

/* --- annotations ------------------------------------------------------------------------- */

enum { FILTERS_MAX = 8 };
typedef enum { A_RUN, A_KEY, A_FIXED } annot_kind_t;
typedef struct annot {
    annot_kind_t kind;
    int metric;   /* A_RUN: index into metric_sql */
    char key[96]; /* A_KEY */
    size_t n_filters;
    char fkey[FILTERS_MAX][128], fvalue[FILTERS_MAX][128]; /* A_RUN: KEY=VALUE */
} annot_t;

/* The next word of *s (a "quoted value" whole), into out; 0 at the end. */
static int next_word(const char **s, char *out, size_t size)
{
    const char *p = *s;
    while (isspace((unsigned char)*p))
        p++;
    size_t n = 0;
    int quoted = 0;
    for (; *p && (quoted || !isspace((unsigned char)*p)); p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (n + 1 < size)
            out[n++] = *p;
    }
    out[n] = '\0';
    *s = p;
    return n > 0;
}

/* Parses an HTML comment's body as an annotation: 1 when it is one, 0 when it is some other
 * comment, -1 when it is a bad one (why says so). */
static int annot_parse(const char *html, annot_t *a, char *why, size_t size)
{
    memset(a, 0, sizeof *a);
    const char *s = html + 4;
    char word[128];
    if (strncmp(html, "<!--", 4) || !next_word(&s, word, sizeof word))
        return 0;
    size_t end = strlen(s);
    while (end > 0 && isspace((unsigned char)s[end - 1]))
        end--;
    if (end < 3 || strncmp(s + end - 3, "-->", 3))
        return 0;
    char body[512];
    snprintf(body, sizeof body, "%.*s", (int)(end - 3), s);
    s = body;
    if (!strcmp(word, "fixed:")) {
        a->kind = A_FIXED;
        if (!next_word(&s, word, sizeof word))
            return snprintf(why, size, "fixed: says why: <!-- fixed: the formula -->"), -1;
        return 1;
    }
    if (!strcmp(word, "key:")) {
        a->kind = A_KEY;
        if (!next_word(&s, a->key, sizeof a->key) || !strchr(a->key, '.'))
            return snprintf(why, size, "key: names a key: <!-- key: cluster.workers -->"), -1;
        return 1;
    }
    if (strcmp(word, "run:"))
        return 0;
    a->kind = A_RUN;
    a->metric = -1;
    if (next_word(&s, word, sizeof word))
        for (int m = 0; m < N_METRICS; m++)
            if (!strcmp(word, metric_sql[m][0]))
                a->metric = m;
    if (a->metric < 0)
        return snprintf(why, size, "run: \"%s\" is not a metric (scenarios/lessons/README.md)",
                        word),
               -1;
    while (next_word(&s, word, sizeof word)) {
        char *eq = strchr(word, '=');
        if (!eq || eq == word || a->n_filters == FILTERS_MAX)
            return snprintf(why, size, "run: \"%s\": expected KEY=VALUE (at most %d)", word,
                            FILTERS_MAX),
                   -1;
        *eq = '\0';
        snprintf(a->fkey[a->n_filters], sizeof a->fkey[0], "%s", word);
        snprintf(a->fvalue[a->n_filters++], sizeof a->fvalue[0], "%s", eq + 1);
    }
    return 1;
}

/* --- the walk ------------------------------------------------------------------------------ */

/* A note to write beside an annotation's numbers on the page. */
typedef struct mark {
    cmark_node *at;
    char text[192];
} mark_t;

typedef struct walk {
    results_query_t *q;
    const results_runs_t *runs;
    results_params_t params; /* the runs' keys, when q */
    sqlite3_stmt *st[N_METRICS];
    results_lesson_check_t *out;
    span_t span;
    char text[4096]; /* prose since the last number was read */
    size_t text_n;
    int line;
    mark_t *marks;
    size_t n_marks;
    dt_err_t *err;
    dt_status status;
} walk_t;

static results_lesson_issue_t *issue_add(walk_t *w, results_lesson_issue_kind_t kind,
                                         const char *fmt, ...)
{
    results_lesson_check_t *c = w->out;
    c->issues = realloc(c->issues, (c->n_issues + 1) * sizeof *c->issues);
    DT_CHECK(c->issues, "out of memory");
    results_lesson_issue_t *is = &c->issues[c->n_issues++];
    memset(is, 0, sizeof *is);
    is->kind = kind;
    is->line = w->line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->msg, sizeof is->msg, fmt, ap);
    va_end(ap);
    return is;
}

static void mark_add(walk_t *w, cmark_node *at, const char *text)
{
    w->marks = realloc(w->marks, (w->n_marks + 1) * sizeof *w->marks);
    DT_CHECK(w->marks, "out of memory");
    w->marks[w->n_marks].at = at;
    snprintf(w->marks[w->n_marks++].text, sizeof w->marks[0].text, "%s", text);
}

/* The numbers of the prose gathered so far into the span. */
static void text_flush(walk_t *w)
{
    w->text[w->text_n] = '\0';
    if (span_scan(&w->span, w->text))
        issue_add(w, RESULTS_LESSON_BAD, "more than %d numbers before one annotation", SPAN_MAX);
    w->text_n = 0;
}

static void text_add(walk_t *w, const char *s)
{
    size_t n = strlen(s);
    if (w->text_n + n >= sizeof w->text)
        text_flush(w);
    n = n < sizeof w->text - 1 ? n : sizeof w->text - 1;
    memcpy(w->text + w->text_n, s, n);
    w->text_n += n;
}

/* The numbers of the span as written, "87 s, 8.7 s", into buf. */
static void span_text(const span_t *sp, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sp->n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", sp->v[i].text);
}

/* Numbers left without an annotation at the end of a paragraph. */
static void span_untied(walk_t *w)
{
    text_flush(w);
    if (w->span.n) {
        char nums[256];
        span_text(&w->span, nums, sizeof nums);
        w->out->numbers += w->span.n;
        issue_add(w, RESULTS_LESSON_UNTIED,
                  "%s: no annotation after %s (run:, key: or fixed:, scenarios/lessons/README.md)",
                  nums, w->span.n == 1 ? "it" : "them");
    }
    w->span.n = 0;
}

/* Whether run r's key has value (as the params table writes it), or one of value's
 * alternatives: 100Mbps|1Gbps. */
static int run_has(const walk_t *w, size_t r, const char *key, const char *value)
{
    for (size_t k = 0; k < w->params.n_keys; k++)
        if (!strcmp(w->params.keys[k], key)) {
            const char *v = w->params.values[k * w->params.n_runs + r];
            for (const char *alt = value; v && alt;) {
                size_t n = strcspn(alt, "|");
                if (strlen(v) == n && !strncmp(v, alt, n))
                    return 1;
                alt = alt[n] ? alt + n + 1 : NULL;
            }
            return 0;
        }
    return 0;
}

/* A metric's statement failed on the database (I/O, a damaged file): DT_ERR_RUN. */
static void metric_failed(walk_t *w, int m)
{
    sqlite3 *h = results_query_sqlite(w->q);
    if (w->err) {
        snprintf(w->err->msg, sizeof w->err->msg, "%s: lesson metric %s: %s",
                 sqlite3_db_filename(h, "main"), metric_sql[m][0], sqlite3_errmsg(h));
        dt_err_clean(w->err);
    }
    w->status = DT_ERR_RUN;
}

/* metric m of run id, NAN when NULL; a failed statement sets w->status. */
static double metric_of(walk_t *w, int m, int64_t id)
{
    sqlite3 *h = results_query_sqlite(w->q);
    if (!w->st[m] && sqlite3_prepare_v2(h, metric_sql[m][2], -1, &w->st[m], NULL) != SQLITE_OK) {
        metric_failed(w, m);
        return NAN;
    }
    DT_ASSERT(sqlite3_bind_int64(w->st[m], 1, id) == SQLITE_OK);
    int rc = sqlite3_step(w->st[m]);
    double v = rc == SQLITE_ROW && sqlite3_column_type(w->st[m], 0) != SQLITE_NULL
                   ? sqlite3_column_double(w->st[m], 0)
                   : NAN;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        metric_failed(w, m);
    sqlite3_reset(w->st[m]);
    return v;
}

/* The metric of each run a's filters match, in the page's order, into vals (at most SPAN_MAX
 * kept); returns how many runs match. */
static size_t runs_matching(walk_t *w, const annot_t *a, double *vals, size_t *k)
{
    size_t matched = 0;
    *k = 0;
    for (size_t r = 0; r < w->runs->n; r++) {
        int all = 1;
        for (size_t f = 0; f < a->n_filters && all; f++)
            all = run_has(w, r, a->fkey[f], a->fvalue[f]);
        if (!all)
            continue;
        matched++;
        if (*k < SPAN_MAX)
            vals[(*k)++] = metric_of(w, a->metric, w->runs->v[r].id);
    }
    return matched;
}

/* The measured values as the span's numbers are written, "46.2%, 33.1%", into buf. */
static void values_text(const span_t *sp, const double *vals, size_t k, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k && o + 1 < size; i++) {
        if (i)
            o += (size_t)snprintf(buf + o, size - o, ", ");
        if (o + 1 < size)
            o += (size_t)num_format(buf + o, size - o, &sp->v[sp->n == 1 ? 0 : i], vals[i]);
    }
}

/* A run: annotation against the runs: the metric of each run its filters match. */
static void tie_run(walk_t *w, const annot_t *a, cmark_node *at, const char *nums)
{
    w->out->measured += w->span.n;
    if (!w->q)
        return;
    double vals[SPAN_MAX];
    size_t k, matched = runs_matching(w, a, vals, &k);
    if (matched == 0 || (w->span.n != 1 && w->span.n != matched)) {
        char runs[160];
        snprintf(runs, sizeof runs, "%zu run%s of this page match%s", matched,
                 matched == 1 ? "" : "s", matched == 1 ? "es" : "");
        results_lesson_issue_t *is =
            issue_add(w, RESULTS_LESSON_BAD, "%s: run: %s: %zu number%s, %s", nums,
                      metric_sql[a->metric][0], w->span.n, w->span.n == 1 ? "" : "s", runs);
        snprintf(is->shown, sizeof is->shown, "[not checked: %s]", runs);
        mark_add(w, at, is->shown);
        return;
    }
    int drift = 0;
    for (size_t i = 0; i < k; i++)
        drift |= !num_matches(&w->span.v[w->span.n == 1 ? 0 : i], vals[i]);
    if (!drift)
        return;
    char got[160];
    values_text(&w->span, vals, k, got, sizeof got);
    results_lesson_issue_t *is = issue_add(w, RESULTS_LESSON_DRIFT, "%s: the runs measured %s (%s)",
                                           nums, got, metric_sql[a->metric][0]);
    snprintf(is->shown, sizeof is->shown, "[these runs measured %s]", got);
    mark_add(w, at, is->shown);
}

/* Whether number n is one of the numbers written in a key's value ("100Gbps", "256,128",
 * "0.8"): as written, or in base units (80% of run.target_accuracy = 0.8). */
static int value_has(const char *value, const num_t *n)
{
    for (const char *p = value; *p;) {
        if (!isdigit((unsigned char)*p) || (p > value && isdigit((unsigned char)p[-1]))) {
            p++;
            continue;
        }
        char *end;
        double v = strtod(p, &end);
        num_t as_written = *n;
        as_written.scale = 1;
        if (num_matches(&as_written, v) || num_matches(n, v))
            return 1;
        p = end > p ? end : p + 1;
    }
    return 0;
}

/* A key: annotation: each number is one of the key's values in these runs. */
static void tie_key(walk_t *w, const annot_t *a, cmark_node *at, const char *nums)
{
    w->out->inputs += w->span.n;
    if (!w->q)
        return;
    size_t k = 0;
    while (k < w->params.n_keys && strcmp(w->params.keys[k], a->key))
        k++;
    if (k == w->params.n_keys) {
        issue_add(w, RESULTS_LESSON_BAD, "%s: key: %s: no run of this page has it", nums, a->key);
        return;
    }
    char values[160] = "";
    size_t o = 0;
    for (size_t r = 0; r < w->params.n_runs && o < sizeof values; r++) {
        const char *v = w->params.values[k * w->params.n_runs + r];
        if (v && !strstr(values, v))
            o += (size_t)snprintf(values + o, sizeof values - o, "%s%s", o ? ", " : "", v);
    }
    for (size_t i = 0; i < w->span.n; i++) {
        int found = 0;
        for (size_t r = 0; r < w->params.n_runs && !found; r++) {
            const char *v = w->params.values[k * w->params.n_runs + r];
            found = v && value_has(v, &w->span.v[i]);
        }
        if (!found) {
            results_lesson_issue_t *is = issue_add(
                w, RESULTS_LESSON_DRIFT, "%s: these runs set %s = %s", nums, a->key, values);
            snprintf(is->shown, sizeof is->shown, "[these runs set %s = %s]", a->key, values);
            mark_add(w, at, is->shown);
            return;
        }
    }
}

/* An HTML comment of the prose: an annotation ties the span's numbers. */
static void on_annotation(walk_t *w, cmark_node *node)
{
    annot_t a;
    char why[256];
    int kind = annot_parse(cmark_node_get_literal(node), &a, why, sizeof why);
    if (kind == 0)
        return;
    text_flush(w);
    span_units(&w->span);
    char nums[256];
    span_text(&w->span, nums, sizeof nums);
    w->out->numbers += w->span.n;
    if (kind < 0)
        issue_add(w, RESULTS_LESSON_BAD, "%s", why);
    else if (w->span.n == 0)
        issue_add(w, RESULTS_LESSON_BAD, "an annotation with no number before it");
    else if (a.kind == A_FIXED)
        w->out->fixed += w->span.n;
    else if (a.kind == A_KEY)
        tie_key(w, &a, node, nums);
    else
        tie_run(w, &a, node, nums);
    w->span.n = 0;
}

/* One node of the document, in the iterator's order. */
static void walk_node(walk_t *w, cmark_node *node, cmark_event_type ev)
{
    cmark_node_type t = cmark_node_get_type(node);
    if (t == CMARK_NODE_TEXT) {
        text_add(w, cmark_node_get_literal(node));
        return;
    }
    if (t == CMARK_NODE_SOFTBREAK || t == CMARK_NODE_LINEBREAK) {
        text_add(w, " ");
        return;
    }
    if ((t == CMARK_NODE_PARAGRAPH || t == CMARK_NODE_HEADING) && ev == CMARK_EVENT_ENTER) {
        span_untied(w);
        w->line = cmark_node_get_start_line(node);
        return;
    }
    if (t == CMARK_NODE_HTML_BLOCK) {
        annot_t a;
        char why[256];
        span_untied(w);
        w->line = cmark_node_get_start_line(node);
        if (annot_parse(cmark_node_get_literal(node), &a, why, sizeof why))
            issue_add(w, RESULTS_LESSON_BAD,
                      "an annotation that begins a line is a block of "
                      "its own: keep it on the line of its numbers");
        return;
    }
    text_flush(w); /* code, emphasis, a link: the prose before it is read */
    if (t == CMARK_NODE_HTML_INLINE)
        on_annotation(w, node);
}

static dt_status walk_doc(cmark_node *doc, walk_t *w)
{
    if (w->q && (w->status = results_report_params(w->q, w->runs, &w->params, w->err)) != DT_OK)
        return w->status;
    cmark_iter *it = cmark_iter_new(doc);
    for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;)
        walk_node(w, cmark_iter_get_node(it), ev);
    cmark_iter_free(it);
    span_untied(w);
    for (int m = 0; m < N_METRICS; m++)
        sqlite3_finalize(w->st[m]);
    results_params_free(&w->params);
    return w->status;
}

static cmark_node *parse(const char *text)
{
    const char *md = text ? text : "";
    cmark_node *doc = cmark_parse_document(md, strlen(md), CMARK_OPT_DEFAULT);
    DT_CHECK(doc, "out of memory parsing a lesson");
    return doc;
}

dt_status results_lesson_check(const char *text, results_query_t *q, const results_runs_t *runs,
                               results_lesson_check_t *out, dt_err_t *err)
{
    DT_ASSERT(out && (!q || runs));
    memset(out, 0, sizeof *out);
    cmark_node *doc = parse(text);
    walk_t w = {.q = q, .runs = runs, .out = out, .err = err};
    dt_status st = walk_doc(doc, &w);
    free(w.marks);
    cmark_node_free(doc);
    return st;
}

void results_lesson_check_free(results_lesson_check_t *c)
{
    if (!c)
        return;
    free(c->issues);
    memset(c, 0, sizeof *c);
}

/* The page's note beside an annotation's numbers: a span libcmark writes as given (custom
 * inline), its text escaped here (a key's value comes from the database). */
static void mark_insert(cmark_node *at, const char *text)
{
    size_t n = strlen(text);
    char *html = dt_malloc(6 * n + 64), *o = html;
    o += sprintf(o, " <span class=\"drift\">");
    for (const char *s = text; *s; s++)
        o += *s == '&'   ? sprintf(o, "&amp;")
             : *s == '<' ? sprintf(o, "&lt;")
             : *s == '>' ? sprintf(o, "&gt;")
             : *s == '"' ? sprintf(o, "&quot;")
                         : sprintf(o, "%c", *s);
    sprintf(o, "</span>");
    cmark_node *span = cmark_node_new(CMARK_NODE_CUSTOM_INLINE);
    DT_CHECK(span, "out of memory");
    cmark_node_set_on_enter(span, html);
    cmark_node_insert_after(at, span);
    free(html);
}

/* Says, under the title, how many numbers are marked: a teacher reads it before the class
 * does. */
static void note_insert(cmark_node *doc, size_t marked)
{
    char html[320];
    snprintf(html, sizeof html,
             "<p class=\"drift\">%zu of the numbers below %s not checked or not what these runs "
             "measured: each is marked (a key changed since the lesson was written?).</p>",
             marked, marked == 1 ? "is" : "are");
    cmark_node *note = cmark_node_new(CMARK_NODE_CUSTOM_BLOCK);
    DT_CHECK(note, "out of memory");
    cmark_node_set_on_enter(note, html);
    cmark_node *first = cmark_node_first_child(doc);
    if (first && cmark_node_get_type(first) == CMARK_NODE_HEADING)
        cmark_node_insert_after(first, note);
    else
        cmark_node_prepend_child(doc, note);
}

/* Every heading heading_shift levels down, within h1 to h6. */
static void headings_shift(cmark_node *doc, int shift)
{
    cmark_iter *it = cmark_iter_new(doc);
    for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
        cmark_node *n = cmark_iter_get_node(it);
        if (ev == CMARK_EVENT_ENTER && cmark_node_get_type(n) == CMARK_NODE_HEADING) {
            int level = cmark_node_get_heading_level(n) + shift;
            cmark_node_set_heading_level(n, level < 1 ? 1 : level > 6 ? 6 : level);
        }
    }
    cmark_iter_free(it);
}

/* The annotations out of the tree: the page has no use for them (safe mode would write each
 * as <!-- raw HTML omitted -->). Each is a leaf, freed on its ENTER event, when the iterator
 * has already stepped past it (cmark.h allows it). */
static void annotations_remove(cmark_node *doc)
{
    cmark_iter *it = cmark_iter_new(doc);
    for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
        cmark_node *n = cmark_iter_get_node(it);
        annot_t a;
        char why[8];
        if (cmark_node_get_type(n) == CMARK_NODE_HTML_INLINE &&
            annot_parse(cmark_node_get_literal(n), &a, why, sizeof why))
            cmark_node_free(n);
    }
    cmark_iter_free(it);
}

char *results_lesson_html(const char *text, int heading_shift, results_query_t *q,
                          const results_runs_t *runs, results_lesson_check_t *check, dt_err_t *err)
{
    DT_ASSERT(!q || runs);
    results_lesson_check_t own;
    results_lesson_check_t *out = check ? check : &own;
    memset(out, 0, sizeof *out);
    cmark_node *doc = parse(text);
    walk_t w = {.q = q, .runs = runs, .out = out, .err = err};
    char *html = NULL;
    if (walk_doc(doc, &w) == DT_OK) {
        for (size_t i = 0; i < w.n_marks; i++)
            mark_insert(w.marks[i].at, w.marks[i].text);
        if (w.n_marks)
            note_insert(doc, w.n_marks);
        annotations_remove(doc);
        headings_shift(doc, heading_shift);
        html = cmark_render_html(doc, CMARK_OPT_DEFAULT);
        DT_CHECK(html, "out of memory rendering a lesson");
    }
    free(w.marks);
    cmark_node_free(doc);
    if (!check)
        results_lesson_check_free(&own);
    return html;
}
