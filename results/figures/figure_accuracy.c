/* Figures 1 and 2, accuracy.png and accuracy_bytes.png: test accuracy against simulated time
 * and against the bytes sent, a curve per run, a colour per strategy and a dash per the other
 * values that tell the runs apart, panels past 8 curves with one time axis (a file of its own
 * beside figures.c, which stays under 40 KB). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

/* --- panels of curves (accuracy, accuracy_bytes) ------------------------------------------ */

static void bandwidth_key(const results_run_view_t *r, char *key, size_t n)
{
    if (isfinite(r->bandwidth) && r->bandwidth > 0)
        snprintf(key, n, "%g Gb/s", fig_gbps(r->bandwidth));
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
        fig_groups_add(&by[0], key, i);
        fig_groups_add(&by[1], runs->v[i].strategy, i);
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
            if (fits_k != fits_p ? fits_k : fits_k ? by[k].n < by[pick].n : big_k < big_p)
                pick = k;
        }
    if (pick >= 0) {
        *out = by[pick];
        by[pick] = (groups_t){0};
    } else {
        for (size_t i = 0; i < runs->n; i++)
            if (use[i])
                fig_groups_add(out, "", i);
    }
    fig_groups_free(&by[0]);
    fig_groups_free(&by[1]);
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
    gp_printf(g, " ps 0.9*marker title ");
    gp_text(g, label);
}

/* A curve per run, its points thinned to about eight markers and staggered between the
 * curves of a panel (phase), so that curves lying on each other still show every marker. */
static void curve_plot(gp_t *g, size_t run, size_t points, look_t look, size_t phase, size_t curves,
                       const char *label, int keyed, int first)
{
    size_t every = points > 8 ? points / 8 : 1;
    gp_printf(g, "%s$run%zu using 1:2 with lines ", first ? "" : ", \\\n     ", run);
    gp_line_look(g, look.colour, look.dash);
    gp_printf(g, " notitle, \\\n     $run%zu every %zu::%zu using 1:2 with points ", run, every,
              phase * every / (curves ? curves : 1));
    gp_point_look(g, look.colour, look.dash);
    gp_printf(g, " ps 0.9*marker notitle");
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
        if (!isnan(xa) &&
            (fabs(xa - xb) > 1e-9 * fabs(xa) || fabs(a->test_acc[k] - b->test_acc[k]) > 1e-9))
            return 0;
    }
    return 1;
}

/* The label of one curve for the runs whose labels are labels[0..n) (n > 1): the words
 * they share, then the one word that differs as a list, "sync-ps partition=iid (1Gbps,
 * 10Gbps, 100Gbps)", or their count when more differ or the list would be too long.
 * malloc'ed. */
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
            o += (size_t)snprintf(out + o, len - o, "%s%.*s", k ? ", " : "", (int)strcspn(p, " "),
                                  p);
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
const char *fig_acc_ylabel(size_t text, size_t all)
{
    return !text         ? "test accuracy (%)"
           : text == all ? "next-token accuracy (%)"
                         : "test or next-token accuracy (%)";
}

/* The caption line that says what a language model's accuracy is, when there is one. */
void fig_acc_caption(fig_t *f, size_t text, size_t all)
{
    if (text)
        fig_caption(f,
                    "%snext-token accuracy: the share of validation tokens predicted "
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
                           int keyed, size_t fits, int max_tics, char **styles, look_t *style_looks,
                           size_t *n_styles)
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
        char *fit = fig_fit_label(labels[m], fits);
        curve_plot(g, pan->members[m], c->points[pan->members[m]], looks[pan->members[m]], o,
                   pan->n, fit, keyed, o == 0);
        free(fit);
    }
    free(ord);
    gp_printf(g, "\n");
}

/* Each drawn run's look, from its key label in its panel (so that a label looks the same in
 * every panel, as the key that panels share shows it): with more than one strategy among the
 * runs a colour per strategy and a dash (and marker) per the rest of the label (what else
 * tells the runs apart: iid, shards:2, 1Gbps), else a colour and dash per label; when the
 * rest is the same for every run (a strategy's curve of several bandwidths against bytes, a
 * panel per bandwidth), the strategy's own dash too, so that its curves do not differ in
 * colour alone. */
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
                    o += (size_t)snprintf(rest + o, len + 1 - o, "%s%.*s", o ? " " : "", (int)w, q);
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
            looks[i] = (look_t){k, r};
        }
    for (size_t p = 0; p < panels->n; p++)
        for (size_t m = 0; m < panels->v[p].n; m++) {
            look_t *l = &looks[panels->v[p].members[m]];
            if (n_kinds < 2)
                l->colour = l->dash;
            else if (n_rests < 2)
                l->dash = l->colour;
        }
    for (size_t r = 0; r < n_rests; r++)
        free(rests[r]);
    free(rests);
    free(kinds);
}

/* Each run's evaluations read into c, its points counted (those with an x: a time, or
 * bytes), a curve equal to an earlier drawn one drawn as that one (c->as); the largest x,
 * the accuracy range in percent, and how many runs have points, are text (a language
 * model's) and are drawn as another's. */
static dt_status accuracy_read(fig_t *f, curves_t *c, int by_bytes, double *xmax, double *amin,
                               double *amax, size_t *with_points, size_t *text, size_t *merged,
                               dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    dt_status st;
    for (size_t i = 0; i < runs->n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &c->ev[i], err)) != DT_OK)
            return st;
        for (size_t k = 0; k < c->ev[i].n; k++) {
            double x = eval_x(&c->ev[i], k, by_bytes);
            if (isnan(x))
                continue;
            c->points[i]++;
            *xmax = x > *xmax ? x : *xmax;
            *amin = fmin(*amin, 100 * c->ev[i].test_acc[k]);
            *amax = fmax(*amax, 100 * c->ev[i].test_acc[k]);
        }
        c->as[i] = i;
        for (size_t j = 0; j < i && c->as[i] == i && c->points[i]; j++)
            if (c->drawn[j] && same_curve(&c->ev[j], &c->ev[i], by_bytes))
                c->as[i] = j;
        c->drawn[i] = c->points[i] > 0 && c->as[i] == i;
        *with_points += c->points[i] > 0;
        *text += c->points[i] > 0 && c->ev[i].text > 0;
        *merged += c->points[i] > 0 && c->as[i] != i;
    }
    return DT_OK;
}

/* A datablock ($runI) per drawn curve: x in the axis's unit (div), accuracy in percent. */
static void accuracy_blocks(gp_t *g, const curves_t *c, size_t n, int by_bytes, double div)
{
    for (size_t i = 0; i < n; i++) {
        if (!c->drawn[i])
            continue;
        gp_block_begin(g, "run%zu", i);
        for (size_t k = 0; k < c->ev[i].n; k++) {
            double x = eval_x(&c->ev[i], k, by_bytes);
            if (!isnan(x))
                GP_ROW(g, x / div, 100 * c->ev[i].test_acc[k]);
        }
        gp_block_end(g);
    }
}

/* The key the panels share, alone in the grid's free cell: every style seen, by look (a
 * strategy's entries together). */
static void shared_key_panel(gp_t *g, char **styles, const look_t *style_looks, size_t n_styles)
{
    gp_printf(g, "unset title\nunset xlabel\nunset ylabel\nunset border\nunset tics\n"
                 "unset grid\nunset logscale\nset xrange [0:1]\nset yrange [0:1]\n"
                 "set key inside center center Left reverse spacing 1.4\n"
                 "plot NaN notitle");
    for (size_t k = 0; k < n_styles; k++) {
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

static dt_status accuracy(fig_t *f, int by_bytes, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1;
    curves_t c = {dt_calloc(n, sizeof *c.ev), dt_calloc(n, sizeof *c.points),
                  dt_calloc(n, sizeof *c.as), dt_calloc(n, sizeof *c.drawn)};
    groups_t panels = {0};
    char ***labels = NULL;                        /* each panel's key labels */
    char **styles = dt_calloc(n, sizeof *styles); /* labels seen: a label keeps its style */
    look_t *style_looks = dt_calloc(n, sizeof *style_looks), *looks = dt_calloc(n, sizeof *looks);
    size_t n_styles = 0, with_points = 0, merged = 0, text = 0;
    dt_status st = DT_OK;
    double xmax = 0, amin = 100, amax = 0;
    if ((st = accuracy_read(f, &c, by_bytes, &xmax, &amin, &amax, &with_points, &text, &merged,
                            err)) != DT_OK)
        goto done;
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
    accuracy_blocks(g, &c, runs->n, by_bytes, div);
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
    /* the key's font: 9 points in panels, else (and in a projector's screens) 11 */
    int small_key = many && !shared_key && !fig_projector(f);
    double char_px = small_key ? 6.8 : 8.2;
    int below = !shared_key && 38 + FIG_KEY_SAMPLE_PX + char_px * (double)longest > panel_w / 3;
    if (text == with_points)
        f->title =
            by_bytes ? "Next-token accuracy vs data sent" : "Next-token accuracy vs simulated time";
    else
        f->title = by_bytes ? "Test accuracy vs data sent" : "Test accuracy vs simulated time";
    /* a key under a plot makes the figure taller by its lines, rather than the plot lower */
    if (many)
        f->height = 60 + (400 + (below ? 16 * (int)most : 0)) * (int)rows;
    else if (below)
        f->height = FIG_HEIGHT + 19 * (int)most;
    fig_caption_runs(f);
    fig_acc_caption(f, text, with_points);
    if (merged)
        fig_caption(f, "a key entry listing runs in parentheses: their curves are the same, "
                       "drawn once");
    /* one accuracy range for every panel, in whole tens */
    double ylo = 10 * floor(amin / 10), yhi = 10 * ceil(amax / 10);
    if (yhi <= ylo)
        yhi = ylo + 10;
    gp_printf(g, "set ylabel '%s'\nset yrange [%g:%g]\n", fig_acc_ylabel(text, with_points), ylo,
              yhi);
    if (by_bytes)
        gp_printf(g, "set xlabel 'data sent by all hosts (%s)'\n", unit);
    if (below)
        gp_printf(g, "set key outside below left Left reverse height 1.5\n");
    if (small_key)
        gp_printf(g, "set key font ',9' spacing 1\n");
    /* a tic label every 60 pixels of a panel less its margins and key */
    int max_tics = (int)((panel_w - (below || shared_key ? 100 : panel_w / 3 + 100)) / 60);
    /* characters a key line holds */
    size_t fits = (size_t)((panel_w - 88 - FIG_KEY_SAMPLE_PX) / char_px);
    for (size_t p = 0; p < panels.n; p++) {
        fig_grid_panel(f, p, rows, cols);
        if (many) {
            gp_printf(g, "set title ");
            gp_text(g, panels.v[p].key);
            gp_printf(g, "\n");
        }
        if (shared_key)
            gp_printf(g, "unset key\n");
        accuracy_panel(f, &c, &panels.v[p], labels[p], looks, &ax, by_bytes, div, !shared_key, fits,
                       max_tics, styles, style_looks, &n_styles);
    }
    if (shared_key) {
        fig_grid_panel(f, panels.n, rows, cols);
        shared_key_panel(g, styles, style_looks, n_styles);
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
    fig_groups_free(&panels);
    return st;
}

dt_status fig_accuracy(fig_t *f, dt_err_t *err)
{
    return accuracy(f, 0, err);
}

dt_status fig_accuracy_bytes(fig_t *f, dt_err_t *err)
{
    return accuracy(f, 1, err);
}
