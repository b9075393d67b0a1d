/* The figures (see plot.h), one function each and one row in results_figures at the end of
 * this file. A figure reads what it needs through query.h, reduces it, and writes the body of
 * a gnuplot script (gnuplot.h): numbers in datablocks, text from the database only through
 * gp_text. It sets f->drawn when it drew, and says in f->note why it did not, or what it
 * left out. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

const char *const fig_state_colors[RESULTS_STATE_COUNT] = {"#59a14f", "#4e79a7", "#cfcfcf"};
const char *const fig_state_titles[RESULTS_STATE_COUNT] = {"compute", "communication", "idle"};

/* --- sets of runs ------------------------------------------------------------------------- */

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v and keeps one of each value (equal to 1e-9 relative); returns how many remain. */
static size_t distinct(double *v, size_t n)
{
    qsort(v, n, sizeof *v, dbl_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || fabs(v[i] - v[k - 1]) > 1e-9 * fabs(v[i]))
            v[k++] = v[i];
    return k;
}

static double gbps(double bytes_per_s)
{
    return bytes_per_s * 8 / 1e9;
}

/* A curve per group of runs (time to target, scaling): the runs whose key text is equal. */
typedef struct group {
    char *key;
    size_t *members; /* indices into runs, sorted by x */
    size_t n;
} group_t;

typedef struct groups {
    group_t *v;
    size_t n;
} groups_t;

static void groups_add(groups_t *g, const char *key, size_t member)
{
    size_t i = 0;
    while (i < g->n && strcmp(g->v[i].key, key) != 0)
        i++;
    if (i == g->n) {
        g->v = realloc(g->v, (g->n + 1) * sizeof *g->v);
        DT_CHECK(g->v, "out of memory");
        size_t kl = strlen(key) + 1;
        g->v[i].key = dt_malloc(kl);
        memcpy(g->v[i].key, key, kl);
        g->v[i].members = NULL;
        g->v[i].n = 0;
        g->n++;
    }
    group_t *gr = &g->v[i];
    gr->members = realloc(gr->members, (gr->n + 1) * sizeof *gr->members);
    DT_CHECK(gr->members, "out of memory");
    gr->members[gr->n++] = member;
}

static void groups_free(groups_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->v[i].key);
        free(g->v[i].members);
    }
    free(g->v);
    g->v = NULL;
    g->n = 0;
}

/* Sorts each group's members by xs[member]. */
static void groups_sort(groups_t *g, const double *xs)
{
    for (size_t i = 0; i < g->n; i++) {
        size_t *m = g->v[i].members;
        for (size_t a = 1; a < g->v[i].n; a++)
            for (size_t b = a; b > 0 && xs[m[b - 1]] > xs[m[b]]; b--) {
                size_t t = m[b];
                m[b] = m[b - 1];
                m[b - 1] = t;
            }
    }
}

/* --- panels of curves (accuracy, accuracy_bytes) ------------------------------------------ */

static void bandwidth_key(const results_run_view_t *r, char *key, size_t n)
{
    if (isfinite(r->bandwidth) && r->bandwidth > 0)
        snprintf(key, n, "%g Gb/s", gbps(r->bandwidth));
    else
        snprintf(key, n, "no cluster.bandwidth");
}

static size_t groups_largest(const groups_t *g)
{
    size_t m = 0;
    for (size_t i = 0; i < g->n; i++)
        m = g->v[i].n > m ? g->v[i].n : m;
    return m;
}

/* The panels of the runs with use[i] set, into out (a group per panel, keyed by its title):
 * one panel of every run up to FIG_MAX_CURVES of them; past that, a panel per bandwidth or
 * per strategy, whichever the runs vary, preferring panels that stay within FIG_MAX_CURVES
 * curves, then fewer panels, then bandwidth (strategies side by side on one network is the
 * comparison dtsim is for). Runs that vary neither stay in one panel. */
static void curve_panels(const fig_t *f, const int *use, groups_t *out)
{
    const results_runs_t *runs = f->runs;
    groups_t by[2] = {{0}, {0}}; /* bandwidth, strategy */
    size_t n_use = 0;
    for (size_t i = 0; i < runs->n; i++) {
        if (!use[i])
            continue;
        char key[64];
        bandwidth_key(&runs->v[i], key, sizeof key);
        groups_add(&by[0], key, i);
        groups_add(&by[1], runs->v[i].strategy, i);
        n_use++;
    }
    int pick = -1;
    if (n_use > FIG_MAX_CURVES)
        for (int k = 0; k < 2; k++) {
            if (by[k].n < 2)
                continue;
            if (pick < 0) {
                pick = k;
                continue;
            }
            size_t big_k = groups_largest(&by[k]), big_p = groups_largest(&by[pick]);
            int fits_k = big_k <= FIG_MAX_CURVES, fits_p = big_p <= FIG_MAX_CURVES;
            if (fits_k != fits_p ? fits_k
                                 : fits_k ? by[k].n < by[pick].n : big_k < big_p)
                pick = k;
        }
    if (pick >= 0) {
        *out = by[pick];
        by[pick] = (groups_t){0};
    } else {
        for (size_t i = 0; i < runs->n; i++)
            if (use[i])
                groups_add(out, "", i);
    }
    groups_free(&by[0]);
    groups_free(&by[1]);
}

/* label as it fits in fits characters: cut, "..." at its end, when longer. malloc'ed. */
static char *fit_label(const char *label, size_t fits)
{
    size_t len = strlen(label), chars = 0, cut = len;
    for (size_t b = 0; b < len; b++)
        if (((unsigned char)label[b] & 0xc0) != 0x80 && chars++ == fits - 3)
            cut = b;
    char *out = dt_malloc(len + 4);
    if (chars <= fits || fits < 4)
        strcpy(out, label);
    else
        snprintf(out, len + 4, "%.*s...", (int)cut, label);
    return out;
}

/* How a curve looks: a colour (and marker) per strategy, a dash per value of the other keys
 * that tell the runs apart (bandwidth, partition, ...); or, when the runs share one strategy,
 * both by curve. */
typedef struct look {
    size_t colour, dash;
} look_t;

static int look_cmp(look_t a, look_t b)
{
    return a.colour != b.colour ? (a.colour > b.colour) - (a.colour < b.colour)
                                : (a.dash > b.dash) - (a.dash < b.dash);
}

/* A key entry of a curve's look (a line through a marker). */
static void key_entry(gp_t *g, look_t look, const char *label)
{
    gp_printf(g, ", \\\n     keyentry with linespoints ");
    gp_curve_look(g, look.colour, look.dash);
    gp_printf(g, " ps 0.9 title ");
    gp_text(g, label);
}

/* A curve per run, its points thinned to about eight markers and staggered between the
 * curves of a panel (phase), so that curves lying on each other still show every marker. */
static void curve_plot(gp_t *g, size_t run, size_t points, look_t look, size_t phase,
                       size_t curves, const char *label, int keyed, int first)
{
    size_t every = points > 8 ? points / 8 : 1;
    gp_printf(g, "%s$run%zu using 1:2 with lines ", first ? "" : ", \\\n     ", run);
    gp_line_look(g, look.colour, look.dash);
    gp_printf(g, " notitle, \\\n     $run%zu every %zu::%zu using 1:2 with points ", run, every,
              phase * every / (curves ? curves : 1));
    gp_point_look(g, look.colour);
    gp_printf(g, " ps 0.9 notitle");
    if (keyed)
        key_entry(g, look, label);
}

/* Linear tics at 1, 2 or 5 x 10^k apart, at most max_tics of them from 0 to max: gnuplot's
 * own would crowd a narrow panel with labels that run into each other. */
static void linear_tics(gp_t *g, const char *axis, double max, int max_tics)
{
    if (!(max > 0) || max_tics < 2) {
        gp_printf(g, "set %stics autofreq\n", axis);
        return;
    }
    double step = max / max_tics, mag = pow(10, floor(log10(step))), m = step / mag;
    step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
    gp_printf(g, "set %stics 0, %.10g\n", axis, step);
}

/* --- 1, 2: accuracy vs simulated time, vs bytes --------------------------------------------- */

/* The x of evaluation k of e: simulated time, or bytes sent. NAN when it has no accuracy. */
static double eval_x(const results_evals_t *e, size_t k, int by_bytes)
{
    double x = by_bytes ? e->bytes[k] : e->sim_time[k];
    return isfinite(x) && isfinite(e->test_acc[k]) ? x : NAN;
}

/* Whether two runs draw the same curve: every point equal to 1e-9 relative (the same
 * training at another bandwidth sends the same bytes). */
static int same_curve(const results_evals_t *a, const results_evals_t *b, int by_bytes)
{
    if (a->n != b->n)
        return 0;
    for (size_t k = 0; k < a->n; k++) {
        double xa = eval_x(a, k, by_bytes), xb = eval_x(b, k, by_bytes);
        if (isnan(xa) != isnan(xb))
            return 0;
        if (!isnan(xa) && (fabs(xa - xb) > 1e-9 * fabs(xa) ||
                           fabs(a->test_acc[k] - b->test_acc[k]) > 1e-9))
            return 0;
    }
    return 1;
}

/* The label of one curve for the runs whose labels are labels[0..n) (n > 1): the words
 * they share, then the one word that differs as a list, "sync-ps iid (1Gbps, 10Gbps,
 * 100Gbps)", or their count when more differ or the list would be too long. malloc'ed. */
static char *merged_label(char *const *labels, size_t n)
{
#define WORDS 16
    char *w[WORDS];
    size_t nw = 0, len = 64;
    for (size_t k = 0; k < n; k++)
        len += strlen(labels[k]) + 2;
    char *first = dt_malloc(strlen(labels[0]) + 1);
    strcpy(first, labels[0]);
    for (char *t = strtok(first, " "); t && nw < WORDS; t = strtok(NULL, " "))
        w[nw++] = t;
    /* the position of the one word that differs, -1: several (or other word counts) */
    long differs = -2;
    for (size_t k = 1; k < n && differs != -1; k++) {
        const char *p = labels[k];
        for (size_t i = 0; i < nw && differs != -1; i++) {
            size_t l = strcspn(p, " ");
            if (l != strlen(w[i]) || strncmp(p, w[i], l))
                differs = differs == -2 || differs == (long)i ? (long)i : -1;
            p += l + (p[l] == ' ');
        }
        if (*p)
            differs = -1;
    }
    char *out = dt_malloc(len);
    size_t o = 0;
    for (size_t i = 0; i < nw; i++)
        if ((long)i != differs)
            o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " " : "", w[i]);
    size_t plain = o;
    if (differs >= 0) {
        o += (size_t)snprintf(out + o, len - o, "%s(", o ? " " : "");
        for (size_t k = 0; k < n; k++) {
            const char *p = labels[k];
            for (long i = 0; i < differs; i++)
                p += strcspn(p, " ") + 1;
            o += (size_t)snprintf(out + o, len - o, "%s%.*s", k ? ", " : "",
                                  (int)strcspn(p, " "), p);
        }
        snprintf(out + o, len - o, ")");
    }
    if (differs < 0 || gp_text_width(out) > 44)
        snprintf(out + plain, len - plain, "%s(%zu runs)", plain ? " " : "", n);
    free(first);
    return out;
#undef WORDS
}

/* The accuracy axis of runs of which `text` of `all` are language models (their evaluations
 * have a perplexity): a classifier's test accuracy, a language model's next-token accuracy,
 * or both. */
static const char *acc_ylabel(size_t text, size_t all)
{
    return !text ? "test accuracy (%)"
           : text == all ? "next-token accuracy (%)"
                         : "test or next-token accuracy (%)";
}

/* The caption line that says what a language model's accuracy is, when there is one. */
static void acc_caption(fig_t *f, size_t text, size_t all)
{
    if (text)
        fig_caption(f, "%snext-token accuracy: the share of validation tokens predicted "
                       "(perplexity in the evals table)",
                    text == all ? "" : "text runs: ");
}

/* The runs' curves: evaluations, points with an accuracy, and the run each one's curve is
 * drawn as (itself, or an earlier run with the same curve). */
typedef struct curves {
    results_evals_t *ev;
    size_t *points;
    size_t *as;
    int *drawn; /* has points and is its own curve */
} curves_t;

static void curves_free(curves_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        results_evals_free(&c->ev[i]);
    free(c->ev);
    free(c->points);
    free(c->as);
    free(c->drawn);
}

/* The key labels of a panel's curves: the values that tell its runs apart, and for a curve
 * of several runs, theirs among all the panel's runs (merged_label). malloc'ed, pan->n of
 * them: free with fig_labels_free. */
static char **panel_labels(const fig_t *f, const curves_t *c, const group_t *pan)
{
    const results_runs_t *runs = f->runs;
    char **labels = fig_labels_of(f, pan->members, pan->n);
    size_t n_all = 0, *all = dt_calloc(runs->n ? runs->n : 1, sizeof *all);
    for (size_t j = 0; j < runs->n; j++)
        for (size_t m = 0; m < pan->n; m++)
            if (c->points[j] && c->as[j] == pan->members[m])
                all[n_all++] = j;
    char **all_labels = fig_labels_of(f, all, n_all);
    char **same = dt_calloc(n_all ? n_all : 1, sizeof *same);
    for (size_t m = 0; m < pan->n; m++) {
        size_t n_same = 0;
        for (size_t j = 0; j < n_all; j++)
            if (c->as[all[j]] == pan->members[m])
                same[n_same++] = all_labels[j];
        if (n_same > 1) {
            free(labels[m]);
            labels[m] = merged_label(same, n_same);
        }
    }
    fig_labels_free(all_labels, n_all);
    free(all);
    free(same);
    return labels;
}

/* The time axis every panel shares: logarithmic when the runs' lengths differ more than ten
 * times (runs ten times faster than others are lost against a linear axis), from the data's
 * smallest positive x (log) or 0 to its largest. */
typedef struct x_axis {
    int logx;
    double lo, hi;
} x_axis_t;

static x_axis_t shared_x(const curves_t *c, size_t n, int by_bytes)
{
    double end_min = INFINITY, end_max = 0, xpos_min = INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!c->drawn[i])
            continue;
        const results_evals_t *e = &c->ev[i];
        double end = 0;
        for (size_t k = 0; k < e->n; k++) {
            double x = eval_x(e, k, by_bytes);
            if (!isnan(x) && x > 0) {
                end = fmax(end, x);
                xpos_min = fmin(xpos_min, x);
            }
        }
        if (end > 0) {
            end_min = fmin(end_min, end);
            end_max = fmax(end_max, end);
        }
    }
    x_axis_t ax = {!by_bytes && end_max > 10 * end_min, 0, end_max};
    if (ax.logx) /* the decades the data span, not the whole decades around them */
        ax = (x_axis_t){1, xpos_min / 1.25, end_max * 1.25};
    return ax;
}

/* A panel's curves (its runs' evaluations, x divided by div) and key (labels cut to fits
 * characters), in the order of their looks, so that a strategy's curves stand together in
 * the key. styles holds the labels seen so far and style_looks their looks, for the key that
 * panels share. */
static void accuracy_panel(fig_t *f, const curves_t *c, const group_t *pan, char **labels,
                           const look_t *looks, const x_axis_t *ax, int by_bytes, double div,
                           int keyed, size_t fits, int max_tics, char **styles,
                           look_t *style_looks, size_t *n_styles)
{
    gp_t *g = &f->body;
    if (!by_bytes)
        gp_printf(g, "set xlabel 'simulated time (s%s)'\n", ax->logx ? ", log scale" : "");
    if (ax->logx) {
        gp_printf(g, "set logscale x\nset xrange [%.10g:%.10g]\nset xtics autofreq\n", ax->lo,
                  ax->hi);
    } else {
        gp_printf(g, "unset logscale x\nset xrange [0:%.10g]\n", ax->hi > 0 ? ax->hi / div : 1);
        linear_tics(g, "x", ax->hi / div, max_tics);
    }
    size_t *ord = dt_calloc(pan->n ? pan->n : 1, sizeof *ord);
    for (size_t m = 0; m < pan->n; m++) { /* insertion sort by look: few curves */
        size_t j = m;
        while (j > 0 && look_cmp(looks[pan->members[ord[j - 1]]], looks[pan->members[m]]) > 0) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = m;
    }
    gp_printf(g, "plot ");
    for (size_t o = 0; o < pan->n; o++) {
        size_t m = ord[o], s = 0;
        while (s < *n_styles && strcmp(styles[s], labels[m]))
            s++;
        if (s == *n_styles) {
            styles[s] = dt_malloc(strlen(labels[m]) + 1);
            strcpy(styles[s], labels[m]);
            style_looks[(*n_styles)++] = looks[pan->members[m]];
        }
        char *fit = fit_label(labels[m], fits);
        curve_plot(g, pan->members[m], c->points[pan->members[m]], looks[pan->members[m]], o,
                   pan->n, fit, keyed, o == 0);
        free(fit);
    }
    free(ord);
    gp_printf(g, "\n");
}

/* Each drawn run's look, from its key label in its panel (so that a label looks the same in
 * every panel, as the key that panels share shows it): with more than one strategy among the
 * runs a colour per strategy and a dash per the rest of the label (what else tells the runs
 * apart: iid, shards:2, 1Gbps), else a colour and dash per label. */
static void curve_looks(const fig_t *f, const groups_t *panels, char ***labels, look_t *looks)
{
    const results_runs_t *runs = f->runs;
    size_t n = 0;
    for (size_t p = 0; p < panels->n; p++)
        n += panels->v[p].n;
    char **kinds = dt_calloc(n + 1, sizeof *kinds), **rests = dt_calloc(n + 1, sizeof *rests);
    size_t n_kinds = 0, n_rests = 0;
    for (size_t p = 0; p < panels->n; p++)
        for (size_t m = 0; m < panels->v[p].n; m++) {
            const char *kind = runs->v[panels->v[p].members[m]].strategy;
            size_t k = 0;
            while (k < n_kinds && strcmp(kinds[k], kind ? kind : ""))
                k++;
            if (k == n_kinds)
                kinds[n_kinds++] = (char *)(kind ? kind : "");
        }
    for (size_t p = 0; p < panels->n; p++)
        for (size_t m = 0; m < panels->v[p].n; m++) {
            size_t i = panels->v[p].members[m];
            const char *kind = runs->v[i].strategy ? runs->v[i].strategy : "";
            const char *label = labels[p][m];
            size_t len = strlen(label), o = 0;
            char *rest = dt_malloc(len + 1); /* the label less the word that is the strategy */
            rest[0] = '\0';
            for (const char *q = label; *q;) {
                size_t w = strcspn(q, " ");
                if (n_kinds < 2 || w != strlen(kind) || strncmp(q, kind, w))
                    o += (size_t)snprintf(rest + o, len + 1 - o, "%s%.*s", o ? " " : "", (int)w,
                                          q);
                q += w + (q[w] == ' ');
            }
            size_t k = 0, r = 0;
            while (k < n_kinds && strcmp(kinds[k], kind))
                k++;
            while (r < n_rests && strcmp(rests[r], rest))
                r++;
            if (r == n_rests)
                rests[n_rests++] = rest;
            else
                free(rest);
            looks[i] = n_kinds > 1 ? (look_t){k, r} : (look_t){r, r};
        }
    for (size_t r = 0; r < n_rests; r++)
        free(rests[r]);
    free(rests);
    free(kinds);
}

static dt_status accuracy(fig_t *f, int by_bytes, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1;
    curves_t c = {dt_calloc(n, sizeof *c.ev), dt_calloc(n, sizeof *c.points),
                  dt_calloc(n, sizeof *c.as), dt_calloc(n, sizeof *c.drawn)};
    groups_t panels = {0};
    char ***labels = NULL; /* each panel's key labels */
    char **styles = dt_calloc(n, sizeof *styles); /* labels seen: a label keeps its style */
    look_t *style_looks = dt_calloc(n, sizeof *style_looks), *looks = dt_calloc(n, sizeof *looks);
    size_t n_styles = 0, with_points = 0, merged = 0, text = 0;
    dt_status st = DT_OK;
    double xmax = 0, amin = 100, amax = 0;
    for (size_t i = 0; i < runs->n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &c.ev[i], err)) != DT_OK)
            goto done;
        for (size_t k = 0; k < c.ev[i].n; k++) {
            double x = eval_x(&c.ev[i], k, by_bytes);
            if (isnan(x))
                continue;
            c.points[i]++;
            xmax = x > xmax ? x : xmax;
            amin = fmin(amin, 100 * c.ev[i].test_acc[k]);
            amax = fmax(amax, 100 * c.ev[i].test_acc[k]);
        }
        c.as[i] = i;
        for (size_t j = 0; j < i && c.as[i] == i && c.points[i]; j++)
            if (c.drawn[j] && same_curve(&c.ev[j], &c.ev[i], by_bytes))
                c.as[i] = j;
        c.drawn[i] = c.points[i] > 0 && c.as[i] == i;
        with_points += c.points[i] > 0;
        text += c.points[i] > 0 && c.ev[i].text > 0;
        merged += c.points[i] > 0 && c.as[i] != i;
    }
    if (with_points == 0) {
        fig_note(f, "none of the selected runs has an evaluation with a test accuracy");
        goto done;
    }
    double div = 1;
    const char *unit = "s";
    if (by_bytes) {
        div = xmax >= 1e9 ? 1e9 : 1e6;
        unit = xmax >= 1e9 ? "GB" : "MB";
    }
    gp_t *g = &f->body;
    for (size_t i = 0; i < runs->n; i++) {
        if (!c.drawn[i])
            continue;
        gp_block_begin(g, "run%zu", i);
        for (size_t k = 0; k < c.ev[i].n; k++) {
            double x = eval_x(&c.ev[i], k, by_bytes);
            if (!isnan(x))
                GP_ROW(g, x / div, 100 * c.ev[i].test_acc[k]);
        }
        gp_block_end(g);
    }
    curve_panels(f, c.drawn, &panels);
    x_axis_t ax = shared_x(&c, runs->n, by_bytes);
    labels = dt_calloc(panels.n, sizeof *labels);
    for (size_t p = 0; p < panels.n; p++)
        labels[p] = panel_labels(f, &c, &panels.v[p]);
    curve_looks(f, &panels, labels, looks);
    int many = panels.n > 1;
    size_t cols = fig_grid_cols(f, panels.n), rows = (panels.n + cols - 1) / cols;
    double panel_w = fig_width(f) / (double)cols;
    /* Panels of the same curves (a sweep's strategies at each bandwidth) share one key, in
     * the free cell of the grid, so that every panel keeps its whole width. */
    int shared_key = many && rows * cols > panels.n;
    for (size_t p = 1; p < panels.n && shared_key; p++) {
        shared_key = panels.v[p].n == panels.v[0].n;
        for (size_t m = 0; m < panels.v[0].n && shared_key; m++)
            shared_key = !strcmp(labels[0][m], labels[p][m]);
    }
    /* A key beside the plot takes at most a third of the panel; a longer one goes under. */
    size_t longest = 0, most = 0;
    for (size_t p = 0; p < panels.n; p++) {
        for (size_t m = 0; m < panels.v[p].n; m++)
            longest = fmax(longest, gp_text_width(labels[p][m]));
        most = panels.v[p].n > most ? panels.v[p].n : most;
    }
    double char_px = many ? 6.8 : 8.2; /* the key's font: 9 points in panels, else 11 */
    int below = !shared_key && 60 + char_px * (double)longest > panel_w / 3;
    if (text == with_points)
        f->title = by_bytes ? "Next-token accuracy vs data sent"
                            : "Next-token accuracy vs simulated time";
    else
        f->title = by_bytes ? "Test accuracy vs data sent" : "Test accuracy vs simulated time";
    /* a key under a plot makes the figure taller by its lines, rather than the plot lower */
    if (many)
        f->height = 60 + (400 + (below ? 16 * (int)most : 0)) * (int)rows;
    else if (below)
        f->height = FIG_HEIGHT + 19 * (int)most;
    fig_caption_runs(f);
    acc_caption(f, text, with_points);
    if (merged)
        fig_caption(f, "a key entry listing runs in parentheses: their curves are the same, "
                       "drawn once");
    /* one accuracy range for every panel, in whole tens */
    double ylo = 10 * floor(amin / 10), yhi = 10 * ceil(amax / 10);
    if (yhi <= ylo)
        yhi = ylo + 10;
    gp_printf(g, "set ylabel '%s'\nset yrange [%g:%g]\n", acc_ylabel(text, with_points), ylo,
              yhi);
    if (by_bytes)
        gp_printf(g, "set xlabel 'data sent by all hosts (%s)'\n", unit);
    if (below)
        gp_printf(g, "set key outside below left Left reverse height 1.5\n");
    if (many && !shared_key)
        gp_printf(g, "set key font ',9' spacing 1 samplen 2\n");
    /* a tic label every 60 pixels of a panel less its margins and key */
    int max_tics = (int)((panel_w - (below || shared_key ? 100 : panel_w / 3 + 100)) / 60);
    size_t fits = (size_t)((panel_w - 110) / char_px); /* characters a key line holds */
    for (size_t p = 0; p < panels.n; p++) {
        fig_grid_panel(f, p, rows, cols);
        if (many) {
            gp_printf(g, "set title ");
            gp_text(g, panels.v[p].key);
            gp_printf(g, "\n");
        }
        if (shared_key)
            gp_printf(g, "unset key\n");
        accuracy_panel(f, &c, &panels.v[p], labels[p], looks, &ax, by_bytes, div, !shared_key,
                       fits, max_tics, styles, style_looks, &n_styles);
    }
    if (shared_key) {
        fig_grid_panel(f, panels.n, rows, cols);
        gp_printf(g, "unset title\nunset xlabel\nunset ylabel\nunset border\nunset tics\n"
                     "unset grid\nunset logscale\nset xrange [0:1]\nset yrange [0:1]\n"
                     "set key inside center center Left reverse spacing 1.4 samplen 3\n"
                     "plot NaN notitle");
        for (size_t k = 0; k < n_styles; k++) { /* by look: a strategy's entries together */
            size_t s = 0;
            for (size_t j = 0; j < n_styles; j++) {
                int before = 0; /* the k-th smallest (look, first seen) */
                for (size_t i = 0; i < n_styles; i++)
                    before += look_cmp(style_looks[i], style_looks[j]) < 0 ||
                              (!look_cmp(style_looks[i], style_looks[j]) && i < j);
                if ((size_t)before == k)
                    s = j;
            }
            key_entry(g, style_looks[s], styles[s]);
        }
        gp_printf(g, "\n");
    }
    f->drawn = 1;
    if (with_points < runs->n)
        fig_note(f, "leaves out %zu run%s without evaluations", runs->n - with_points,
                 runs->n - with_points == 1 ? "" : "s");
done:
    curves_free(&c, runs->n);
    for (size_t s = 0; s < n_styles; s++)
        free(styles[s]);
    free(styles);
    free(style_looks);
    free(looks);
    for (size_t p = 0; labels && p < panels.n; p++)
        fig_labels_free(labels[p], panels.v[p].n);
    free(labels);
    groups_free(&panels);
    return st;
}

static dt_status fig_accuracy(fig_t *f, dt_err_t *err)
{
    return accuracy(f, 0, err);
}

static dt_status fig_accuracy_bytes(fig_t *f, dt_err_t *err)
{
    return accuracy(f, 1, err);
}

/* --- 4: time to target accuracy vs bandwidth ---------------------------------------------- */

static int reached_target(const results_run_view_t *r)
{
    return r->has_summary && isfinite(r->time_to_target) && r->time_to_target > 0;
}

static dt_status fig_time_to_target(fig_t *f, dt_err_t *err)
{
    (void)err;
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1;
    double *x = dt_calloc(n, sizeof *x);    /* Gb/s of each run, NAN: not drawn */
    double *bws = dt_calloc(n, sizeof *bws); /* the candidates' bandwidths, then distinct */
    double *ws = dt_calloc(n, sizeof *ws);   /* worker counts of the runs drawn, distinct */
    size_t nc = 0, reached = 0;
    groups_t groups = {0};
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        x[i] = gbps(r->bandwidth);
        if (!r->has_summary || !(isfinite(x[i]) && x[i] > 0)) {
            x[i] = NAN;
            continue;
        }
        bws[nc++] = x[i];
        if (reached_target(r))
            ws[reached++] = results_run_view_workers(r);
    }
    size_t nbw = distinct(bws, nc);
    if (nbw < 2) {
        if (nc == 0)
            fig_note(f, "none of the selected runs has a summary and a cluster.bandwidth");
        else
            fig_note(f, "the selected runs do not vary cluster.bandwidth (all at %g Gb/s)",
                     bws[0]);
        goto done;
    }
    if (reached == 0) {
        fig_note(f, "none of the selected runs reached its target accuracy");
        goto done;
    }
    /* Runs at several worker counts make several curves per strategy. */
    size_t nw = distinct(ws, reached);
    double target = NAN;
    int one_target = 1;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (isnan(x[i]) || !reached_target(r))
            continue;
        if (isnan(target))
            target = r->target_accuracy;
        else if (!(r->target_accuracy == target))
            one_target = 0;
        char key[300];
        if (nw > 1)
            snprintf(key, sizeof key, "%.200s, %g worker%s", r->strategy,
                     results_run_view_workers(r), results_run_view_workers(r) == 1 ? "" : "s");
        else
            snprintf(key, sizeof key, "%.200s", r->strategy);
        groups_add(&groups, key, i);
    }
    groups_sort(&groups, x);

    gp_t *g = &f->body;
    double tmin = INFINITY, tmax = 0;
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_block_begin(g, "group%zu", gi);
        for (size_t m = 0; m < groups.v[gi].n; m++) {
            size_t i = groups.v[gi].members[m];
            double t = runs->v[i].time_to_target;
            GP_ROW(g, x[i], t);
            tmin = t < tmin ? t : tmin;
            tmax = t > tmax ? t : tmax;
        }
        gp_block_end(g);
    }
    size_t never = nc - reached;
    if (one_target && isfinite(target)) {
        snprintf(f->own_title, sizeof f->own_title, "Time to %g%% accuracy vs bandwidth",
                 100 * target);
        f->title = f->own_title;
    } else {
        f->title = "Time to target accuracy vs bandwidth";
    }
    if (never)
        fig_caption(f, "%zu run%s that never reached %s left out", never,
                    never == 1 ? "" : "s", one_target ? "it" : "its target");
    fig_panel(f, 0, 0, 1, 1);
    int logy = tmax > 30 * tmin;
    gp_printf(g, "set logscale x\nset xrange [%.10g:%.10g]\n", bws[0] / 1.5,
              bws[nbw - 1] * 1.5);
    gp_tics_at(g, "x", bws, nbw);
    gp_printf(g, "set xlabel 'link bandwidth (Gb/s, log scale)'\n"
                 "set ylabel 'simulated time to target (s%s)'\n%s",
              logy ? ", log scale" : "", logy ? "set logscale y\n" : "set yrange [0:*]\n");
    if (logy)
        gp_printf(g, "set yrange [%.10g:%.10g]\n", tmin / 1.5, tmax * 1.5);
    gp_printf(g, "plot ");
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, "\n");
    f->drawn = 1;
    if (never)
        fig_note(f, "leaves out %zu run%s that never reached the target accuracy", never,
                 never == 1 ? "" : "s");
done:
    groups_free(&groups);
    free(x);
    free(bws);
    free(ws);
    return DT_OK;
}

/* --- 5: scaling efficiency vs workers ------------------------------------------------------- */

static dt_status fig_scaling(fig_t *f, dt_err_t *err)
{
    (void)err;
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1;
    double *x = dt_calloc(n, sizeof *x);    /* workers of each run, NAN: not drawn */
    double *ws = dt_calloc(n, sizeof *ws);   /* the candidates' worker counts, distinct */
    double *bws = dt_calloc(n, sizeof *bws); /* bandwidths of the runs drawn, distinct */
    size_t nc = 0, with_eff = 0;
    groups_t groups = {0};
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        x[i] = results_run_view_workers(r);
        if (!r->has_summary || !(isfinite(x[i]) && x[i] > 0)) {
            x[i] = NAN;
            continue;
        }
        ws[nc++] = x[i];
        with_eff += isfinite(r->scaling_efficiency);
    }
    size_t nw = distinct(ws, nc);
    if (nw < 2) {
        if (nc == 0)
            fig_note(f, "none of the selected runs has a summary and a worker count");
        else
            fig_note(f, "the selected runs do not vary cluster.workers (all at %g)", ws[0]);
        goto done;
    }
    if (with_eff == 0) {
        fig_note(f, "no scaling efficiency to draw: the sweep of the selected runs has no "
                    "finished single-worker run (strategy single) to compare with");
        goto done;
    }
    size_t nbw = 0;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (!isnan(x[i]) && isfinite(r->scaling_efficiency) && isfinite(r->bandwidth) &&
            strcmp(r->strategy, "single") != 0)
            bws[nbw++] = r->bandwidth;
    }
    nbw = distinct(bws, nbw);
    double emax = 1;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (isnan(x[i]) || !isfinite(r->scaling_efficiency))
            continue;
        char key[300];
        if (strcmp(r->strategy, "single") == 0)
            snprintf(key, sizeof key, "single (the baseline)");
        else if (nbw > 1 && isfinite(r->bandwidth))
            snprintf(key, sizeof key, "%.200s, %g Gb/s", r->strategy, gbps(r->bandwidth));
        else
            snprintf(key, sizeof key, "%.200s", r->strategy);
        groups_add(&groups, key, i);
        emax = r->scaling_efficiency > emax ? r->scaling_efficiency : emax;
    }
    groups_sort(&groups, x);

    gp_t *g = &f->body;
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_block_begin(g, "group%zu", gi);
        for (size_t m = 0; m < groups.v[gi].n; m++) {
            size_t i = groups.v[gi].members[m];
            GP_ROW(g, x[i], runs->v[i].scaling_efficiency);
        }
        gp_block_end(g);
    }
    /* two panels, one above the other: speedup (efficiency x workers) against the ideal
     * speedup = workers, then the efficiency against the ideal 1 */
    double smax = 1;
    for (size_t i = 0; i < runs->n; i++)
        if (!isnan(x[i]) && isfinite(runs->v[i].scaling_efficiency) &&
            runs->v[i].scaling_efficiency * x[i] > smax)
            smax = runs->v[i].scaling_efficiency * x[i];
    if (ws[nw - 1] > smax)
        smax = ws[nw - 1];
    fig_caption(f, "speedup: throughput / the single-worker run's throughput (same sweep); "
                   "scaling efficiency: speedup / workers");
    fig_grid_panel(f, 0, 2, 1);
    gp_printf(g, "set logscale x 2\nset xrange [%.10g:%.10g]\n", ws[0] / 1.3, ws[nw - 1] * 1.3);
    gp_tics_at(g, "x", ws, nw);
    gp_printf(g, "set title 'Speedup vs number of workers'\n"
                 "set xlabel 'workers (log scale)'\n"
                 "set ylabel 'speedup (log scale)'\n"
                 "set logscale y 2\nset yrange [%.10g:%.10g]\nplot ",
              ws[0] / 1.3 < 1 ? ws[0] / 1.3 : 0.5, smax * 1.3);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:($1*$2) with linespoints ", gi ? ", \\\n     " : "",
                  gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     x with lines lc rgb '#333333' dt 2 lw 1.5 title "
                 "'ideal (speedup = workers)'\n");
    fig_grid_panel(f, 1, 2, 1);
    gp_printf(g, "unset logscale y\n"
                 "set title 'Scaling efficiency vs number of workers'\n"
                 "set ylabel 'scaling efficiency'\n"
                 "set yrange [0:%.10g]\nplot ",
              emax * 1.15);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     1 with lines lc rgb '#333333' dt 2 lw 1.5 title 'ideal (1)'\n");
    f->height = 1000;
    f->drawn = 1;
    if (with_eff < nc)
        fig_note(f, "leaves out %zu run%s without a scaling efficiency (not in a sweep with a "
                    "finished single run)",
                 nc - with_eff, nc - with_eff == 1 ? "" : "s");
done:
    groups_free(&groups);
    free(x);
    free(ws);
    free(bws);
    return DT_OK;
}

/* --- 7: accuracy with and without faults ---------------------------------------------------- */

#define FAULT_PANELS 6

/* A panel per strategy (the runs with faults in red next to those without), host and link
 * faults drawn as vertical lines: red when a host or link goes down, green when it is back. */
static dt_status fig_faults(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n;
    results_evals_t *ev = dt_calloc(n ? n : 1, sizeof *ev);
    results_faults_t *fl = dt_calloc(n ? n : 1, sizeof *fl);
    dt_status st = DT_OK;
    size_t with_faults = 0, text = 0;
    for (size_t i = 0; i < n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &ev[i], err)) != DT_OK ||
            (st = results_query_faults(f->q, runs->v[i].id, &fl[i], err)) != DT_OK)
            goto done;
        with_faults += fl[i].rows > 0;
        text += ev[i].text > 0;
    }
    if (!with_faults) {
        fig_note(f, "none of the selected runs has a fault");
        goto done;
    }
    /* panels: the strategies in order of first appearance */
    const char *panel[FAULT_PANELS];
    size_t n_panels = 0, left_out = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = 0;
        while (p < n_panels && strcmp(panel[p], runs->v[i].strategy))
            p++;
        if (p == n_panels) {
            if (n_panels == FAULT_PANELS) {
                left_out++;
                continue;
            }
            panel[n_panels++] = runs->v[i].strategy;
        }
    }
    gp_t *g = &f->body;
    for (size_t i = 0; i < n; i++) {
        gp_block_begin(g, "run%zu", i);
        for (size_t k = 0; k < ev[i].n; k++)
            if (isfinite(ev[i].sim_time[k]) && isfinite(ev[i].test_acc[k]))
                GP_ROW(g, ev[i].sim_time[k], 100 * ev[i].test_acc[k]);
        gp_block_end(g);
    }
    size_t cols = fig_grid_cols(f, n_panels), rows = (n_panels + cols - 1) / cols;
    f->title = text == n ? "Next-token accuracy with/without faults"
                         : "Test accuracy with and without faults";
    fig_caption(f, "red: runs with faults; dashed lines: a host or link down (red), back up "
                   "(green)");
    fig_caption_runs(f);
    acc_caption(f, text, n);
    gp_printf(g, "set key outside below left Left reverse font ',9' spacing 1 samplen 2 "
                 "height 1.5\n"
                 "set xlabel 'simulated time (s)'\nset ylabel '%s'\n"
                 "set xrange [0:*]\n",
              acc_ylabel(text, n));
    /* characters of 9 points a key under a panel holds */
    size_t fits = (size_t)((fig_width(f) / (int)cols - 110) / 6.8);
    fits = fits > RESULTS_PLOT_TEXT_MAX ? RESULTS_PLOT_TEXT_MAX : fits < 20 ? 20 : fits;
    for (size_t p = 0; p < n_panels; p++) {
        fig_grid_panel(f, p, rows, cols);
        gp_printf(g, "unset arrow\nset title ");
        gp_text(g, panel[p]);
        gp_printf(g, "\n");
        for (size_t i = 0; i < n; i++)
            if (!strcmp(runs->v[i].strategy, panel[p]))
                for (size_t k = 0; k < fl[i].n; k++)
                    gp_printf(g, "set arrow from %.10g, graph 0 to %.10g, graph 1 nohead "
                                 "lc rgb '%s' lw 1.5 dt 2 back\n",
                              fl[i].sim_time[k], fl[i].sim_time[k],
                              fl[i].down[k] ? "#e15759" : "#59a14f");
        gp_printf(g, "plot ");
        int first = 1;
        size_t clean = 0, faulty = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(runs->v[i].strategy, panel[p]))
                continue;
            gp_printf(g, "%s$run%zu using 1:2 with linespoints ", first ? "" : ", ", i);
            /* runs with faults red and dashed, the others in the curve styles without red */
            if (fl[i].rows)
                gp_printf(g, "lc rgb '%s' dt %s pt 5", gp_palette[2],
                          gp_dashes[1 + faulty++ % (GP_DASHES - 1)]);
            else
                gp_curve_style(g, clean < 2 ? clean : clean + 1);
            clean += !fl[i].rows;
            gp_printf(g, " ps 0.5 title ");
            /* in a panel the scenario's name is clear: the swept values tell the runs apart */
            const char *name = runs->v[i].name, *slash = strchr(name, '/');
            char *label = fit_label(slash && slash[1] ? slash + 1 : f->labels[i], fits);
            gp_text(g, label);
            free(label);
            first = 0;
        }
        gp_printf(g, "\n");
    }
    f->drawn = 1;
    f->height = rows > 1 ? 60 + 400 * (int)rows : 600;
    if (left_out)
        fig_note(f, "leaves out %zu run%s beyond %d strategies", left_out,
                 left_out == 1 ? "" : "s", FAULT_PANELS);
done:
    for (size_t i = 0; i < n; i++) {
        results_evals_free(&ev[i]);
        results_faults_free(&fl[i]);
    }
    free(ev);
    free(fl);
    return st;
}

/* --- the table ---------------------------------------------------------------------------- */

const figure_t results_figures[RESULTS_FIGURE_COUNT] = {
    [RESULTS_FIGURE_ACCURACY] = {"accuracy",
                                 "test accuracy vs simulated time, a curve per run: a\n"
                                 "colour per strategy, a dash per other swept value (past 8,\n"
                                 "a panel per bandwidth or strategy, one time axis)",
                                 fig_accuracy},
    [RESULTS_FIGURE_ACCURACY_BYTES] = {"accuracy_bytes",
                                       "test accuracy vs data sent (MB or GB); equal curves\n"
                                       "drawn once",
                                       fig_accuracy_bytes},
    [RESULTS_FIGURE_BREAKDOWN] = {"breakdown",
                                  "compute / communication / idle share, a bar per run (past\n"
                                  "24 runs the 24 fastest)",
                                  fig_breakdown, 24},
    [RESULTS_FIGURE_TIME_TO_TARGET] = {"time_to_target",
                                       "time to the target accuracy vs bandwidth, per strategy\n"
                                       "(needs runs at several cluster.bandwidth values)",
                                       fig_time_to_target},
    [RESULTS_FIGURE_SCALING] = {"scaling",
                                "speedup and scaling efficiency vs workers, per strategy\n"
                                "(needs several cluster.workers values and a single run in\n"
                                "the sweep)",
                                fig_scaling},
    [RESULTS_FIGURE_TIMELINE] = {"timeline",
                                 "what each host does over simulated time, one run: its\n"
                                 "first 3 whole steps or rounds (a timing-only run: 1)",
                                 fig_timeline},
    [RESULTS_FIGURE_FAULTS] = {"faults",
                               "accuracy vs simulated time, a panel per strategy, runs\n"
                               "with host or link faults next to those without",
                               fig_faults},
    [RESULTS_FIGURE_PARALLELISM] = {"parallelism",
                                    "time per step (per round: a panel of its own) and the\n"
                                    "memory of the most loaded host (parameters, gradients,\n"
                                    "optimizer state, activations), a bar per run (past\n"
                                    "24 runs the 24 fastest)",
                                    fig_parallelism, 24},
    [RESULTS_FIGURE_CLIENTS] = {"clients",
                                "federated runs: each honest client's held-out accuracy,\n"
                                "sorted (10th percentile, spread), and against the rounds\n"
                                "it took part in (needs data.client_holdout > 0)",
                                fig_clients},
    [RESULTS_FIGURE_COST] = {"cost",
                             "dollars per 1000 samples and joules per sample vs\n"
                             "simulated seconds per step, a point per run (needs\n"
                             "cluster.price_per_device_hour or device power figures;\n"
                             "past 12 runs the 12 fastest)",
                             fig_cost, 12},
    [RESULTS_FIGURE_PARETO] = {"pareto",
                               "$ per 1000 samples (J per sample without a price) vs\n"
                               "seconds per step, a point per run however many, coloured\n"
                               "by the fullest device's memory, the Pareto front named",
                               fig_pareto},
};
