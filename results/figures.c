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

/* The same three colours in the breakdown and the timeline. */
static const char *const state_colors[RESULTS_STATE_COUNT] = {"#59a14f", "#4e79a7", "#cfcfcf"};
static const char *const state_titles[RESULTS_STATE_COUNT] = {"compute", "communication",
                                                              "idle"};

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

/* --- bars named by runs (breakdown, parallelism) ------------------------------------------ */

/* Run names are labels under the bars, not tic labels: gnuplot reads a tic label as a
 * format, and cuts one that holds a % to 49 characters. Long names are slanted; the first
 * one then needs room on the left. */
static int bars_slant(size_t n, size_t longest)
{
    return n > 6 || longest > 14;
}

static void bars_margins(gp_t *g, int slant, size_t longest)
{
    if (slant)
        gp_printf(g, "set lmargin %d\nset bmargin %d\n", 6 + (int)(0.5 * (double)longest),
                  3 + (int)longest / 5);
    else
        gp_printf(g, "set bmargin 3\n");
}

/* A tic, with no text, under each of n bars at 0, 1, ... */
static void bars_tics(gp_t *g, size_t n)
{
    gp_printf(g, "set format x ''\nset xtics (");
    for (size_t b = 0; b < n; b++)
        gp_printf(g, "%s%zu", b ? ", " : "", b);
    gp_printf(g, ")\n");
}

/* Bar b named by the label of run shown[b]. */
static void bars_names(fig_t *f, const size_t *shown, size_t n, int slant)
{
    for (size_t b = 0; b < n; b++) {
        gp_printf(&f->body, "set label %zu ", b + 1);
        gp_text(&f->body, f->labels[shown[b]]);
        gp_printf(&f->body, " at first %zu, graph 0 %s tc rgb '#333333'\n", b,
                  slant ? "right rotate by 25 offset 1,-1" : "center offset 0,-1");
    }
}

/* --- 1, 2: accuracy vs simulated time, vs bytes --------------------------------------------- */

static dt_status accuracy(fig_t *f, int by_bytes, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    results_evals_t *ev = dt_calloc(runs->n ? runs->n : 1, sizeof *ev);
    dt_status st = DT_OK;
    int *has_points = dt_calloc(runs->n ? runs->n : 1, sizeof *has_points);
    size_t with_points = 0, left_out = 0;
    double xmax = 0, end_min = INFINITY, end_max = 0, xpos_min = INFINITY;
    for (size_t i = 0; i < runs->n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &ev[i], err)) != DT_OK)
            goto done;
        double end = -1;
        for (size_t k = 0; k < ev[i].n; k++) {
            double x = by_bytes ? ev[i].bytes[k] : ev[i].sim_time[k];
            if (isfinite(x) && isfinite(ev[i].test_acc[k]))
                end = x > end ? x : end;
        }
        if (end < 0) {
            left_out++;
            continue;
        }
        with_points++;
        has_points[i] = 1;
        xmax = end > xmax ? end : xmax;
        if (end > 0) {
            end_min = end < end_min ? end : end_min;
            end_max = end > end_max ? end : end_max;
        }
        for (size_t k = 0; k < ev[i].n; k++) {
            double x = by_bytes ? ev[i].bytes[k] : ev[i].sim_time[k];
            if (isfinite(x) && isfinite(ev[i].test_acc[k]) && x > 0)
                xpos_min = x < xpos_min ? x : xpos_min;
        }
    }
    if (with_points == 0) {
        fig_note(f, "none of the selected runs has an evaluation with a test accuracy");
        goto done;
    }
    /* Runs ten times faster than others are lost against a linear time axis. */
    int logx = !by_bytes && end_max > 30 * end_min;
    double div = 1;
    const char *unit = "s";
    if (by_bytes) {
        div = xmax >= 1e9 ? 1e9 : 1e6;
        unit = xmax >= 1e9 ? "GB, 10^9 bytes" : "MB, 10^6 bytes";
    }
    gp_t *g = &f->body;
    for (size_t i = 0; i < runs->n; i++) {
        if (!has_points[i])
            continue;
        gp_block_begin(g, "run%zu", i);
        for (size_t k = 0; k < ev[i].n; k++) {
            double x = by_bytes ? ev[i].bytes[k] : ev[i].sim_time[k];
            if (isfinite(x) && isfinite(ev[i].test_acc[k]) && (!logx || x > 0))
                GP_ROW(g, x / div, 100 * ev[i].test_acc[k]);
        }
        gp_block_end(g);
    }
    if (by_bytes) {
        fig_title(f, "Test accuracy vs data sent");
        gp_printf(g, "set xlabel 'data sent by all hosts (%s)'\n", unit);
    } else {
        fig_title(f, "Test accuracy vs simulated time");
        gp_printf(g, "set xlabel 'simulated time (s%s)'\n", logx ? ", log scale" : "");
        if (logx)
            gp_printf(g, "set logscale x\n");
    }
    if (logx) /* the decades the data span, not the whole decades around them */
        gp_printf(g, "set xrange [%.10g:%.10g]\n", xpos_min / 1.25, xmax * 1.25);
    else
        gp_printf(g, "set xrange [0:*]\n");
    /* Long names would squeeze the plot from the right: their key goes under it. */
    size_t longest = 0;
    for (size_t i = 0; i < runs->n; i++) {
        size_t w = has_points[i] ? gp_text_width(f->labels[i]) : 0;
        longest = w > longest ? w : longest;
    }
    size_t curves = with_points;
    if (longest > 36 && curves <= 8)
        gp_printf(g, "set key outside bottom center Left reverse\n");
    if (curves > 12)
        gp_printf(g, "set key font ',9' spacing 1\n");
    gp_printf(g, "set ylabel 'test accuracy (%%)'\nplot ");
    int first = 1;
    for (size_t i = 0; i < runs->n; i++) {
        if (!has_points[i])
            continue;
        gp_printf(g, "%s$run%zu using 1:2 with linespoints ", first ? "" : ", \\\n     ", i);
        gp_curve_style(g, i);
        gp_printf(g, " ps 0.6 title ");
        gp_text(g, f->labels[i]);
        first = 0;
    }
    gp_printf(g, "\n");
    f->drawn = 1;
    if (left_out)
        fig_note(f, "leaves out %zu run%s without evaluations", left_out,
                 left_out == 1 ? "" : "s");
done:
    for (size_t i = 0; i < runs->n; i++)
        results_evals_free(&ev[i]);
    free(ev);
    free(has_points);
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

/* --- 3: compute / communication / idle shares --------------------------------------------- */

static dt_status fig_breakdown(fig_t *f, dt_err_t *err)
{
    (void)err;
    const results_runs_t *runs = f->runs;
    size_t *shown = dt_calloc(runs->n ? runs->n : 1, sizeof *shown);
    size_t n = 0, longest = 0;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (r->has_summary && isfinite(r->compute_share) && isfinite(r->comm_share) &&
            isfinite(r->idle_share)) {
            shown[n++] = i;
            size_t l = gp_text_width(f->labels[i]);
            longest = l > longest ? l : longest;
        }
    }
    if (n == 0) {
        fig_note(f, "none of the selected runs has a summary with time shares");
        free(shown);
        return DT_OK;
    }
    gp_t *g = &f->body;
    /* Segment k of bar b spans [sum of shares before k, + share k], in percent. */
    for (int s = 0; s < RESULTS_STATE_COUNT; s++) {
        gp_block_begin(g, "state%d", s);
        for (size_t b = 0; b < n; b++) {
            const results_run_view_t *r = &runs->v[shown[b]];
            double sh[3] = {r->compute_share, r->comm_share, r->idle_share};
            double lo = 0;
            for (int k = 0; k < s; k++)
                lo += 100 * sh[k];
            double hi = lo + 100 * sh[s];
            /* x y xlow xhigh ylow yhigh share */
            GP_ROW(g, b, (lo + hi) / 2, b - 0.35, b + 0.35, lo, hi, 100 * sh[s]);
        }
        gp_block_end(g);
    }
    fig_title(f, "Where the time goes: compute, communication and idle share of each run");
    gp_printf(g, "set ylabel 'share of the summed time of all hosts (%%)'\n"
                 "set yrange [0:100]\nset xrange [-0.6:%.1f]\n"
                 "set grid noxtics\n",
              n - 0.4);
    int slant = bars_slant(n, longest);
    bars_margins(g, slant, longest);
    bars_tics(g, n);
    bars_names(f, shown, n, slant);
    gp_printf(g, "plot ");
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, "%s$state%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                     "lc rgb 'white' lc rgb '%s' title '%s'",
                  s ? ", \\\n     " : "", s, state_colors[s], state_titles[s]);
    /* The percentages inside segments big enough to hold them. */
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, ", \\\n     $state%d using 1:2:($7 >= 6 ? sprintf('%%.0f%%%%', $7) : '') "
                     "with labels tc rgb '%s' notitle",
                  s, s == RESULTS_STATE_IDLE ? "#333333" : "white");
    gp_printf(g, "\n");
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f, "leaves out %zu run%s without a summary", runs->n - n,
                 runs->n - n == 1 ? "" : "s");
    free(shown);
    return DT_OK;
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
    /* Fixed text and numbers only: a double-quoted title may hold a \n. */
    char what[64];
    if (one_target && isfinite(target))
        snprintf(what, sizeof what, "%g%% test accuracy", 100 * target);
    else
        snprintf(what, sizeof what, "each run's target accuracy");
    size_t never = nc - reached;
    gp_printf(g, "set title \"Simulated time to reach %s vs link bandwidth", what);
    if (never)
        gp_printf(g, "\\n(%zu run%s that never reached it left out)", never,
                  never == 1 ? "" : "s");
    gp_printf(g, "\"\n");
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
    gp_printf(g, "set multiplot layout 2,1\n"
                 "set logscale x 2\nset xrange [%.10g:%.10g]\n",
              ws[0] / 1.3, ws[nw - 1] * 1.3);
    gp_tics_at(g, "x", ws, nw);
    gp_printf(g, "set title 'Speedup vs number of workers (throughput / single-worker "
                 "throughput)'\n"
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
    gp_printf(g, "unset logscale y\n"
                 "set title 'Scaling efficiency vs number of workers (speedup / workers)'\n"
                 "set ylabel 'scaling efficiency'\n"
                 "set yrange [0:%.10g]\nplot ",
              emax * 1.15);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     1 with lines lc rgb '#333333' dt 2 lw 1.5 title 'ideal (1)'\n"
                 "unset multiplot\n");
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

/* --- 6: per-host timeline of one run ----------------------------------------------------- */

static dt_status fig_timeline(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    results_timeline_t t = {0};
    results_run_view_t own = {0};
    const char *name = NULL;
    int64_t id = f->o->timeline_run;
    dt_status st = DT_OK;
    if (id > 0) {
        if ((st = results_query_run(f->q, id, &own, err)) != DT_OK)
            return st;
        name = own.name;
        if ((st = results_query_timeline(f->q, id, &t, err)) != DT_OK)
            goto done;
        if (t.n == 0) {
            fig_note(f, "run %lld has no timeline rows", (long long)id);
            goto done;
        }
    } else {
        /* the run whose hosts compute the largest share of the time: where computing,
         * sending and waiting all show (in a run that only communicates, the compute boxes
         * are too thin to see) */
        size_t n = runs->n;
        char *tried = dt_calloc(n ? n : 1, 1);
        for (size_t round = 0; round < n && t.n == 0; round++) {
            size_t best = n;
            for (size_t i = 0; i < n; i++) {
                double c = runs->v[i].compute_share;
                double b = best < n ? runs->v[best].compute_share : NAN;
                if (!tried[i] && (best == n || c > b || (isnan(b) && !isnan(c))))
                    best = i;
            }
            tried[best] = 1;
            results_timeline_free(&t);
            if ((st = results_query_timeline(f->q, runs->v[best].id, &t, err)) != DT_OK) {
                free(tried);
                goto done;
            }
            id = runs->v[best].id;
            name = runs->v[best].name;
        }
        free(tried);
        if (t.n == 0) {
            fig_note(f, "none of the selected runs has timeline rows");
            goto done;
        }
    }
    double t0 = INFINITY, t1 = -INFINITY;
    for (size_t k = 0; k < t.n; k++) {
        t0 = t.iv[k].start < t0 ? t.iv[k].start : t0;
        t1 = t.iv[k].end > t1 ? t.iv[k].end : t1;
    }
    double span = t1 > 0 ? t1 : 1;
    double div = span >= 1 ? 1 : span >= 1e-3 ? 1e-3 : 1e-6;
    const char *unit = span >= 1 ? "s" : span >= 1e-3 ? "ms" : "us";

    gp_t *g = &f->body;
    /* One box per stretch of a state: intervals of a lane (which come in start order) that
     * touch, or are apart by less than a quarter of a pixel, are merged. A gap that narrow
     * cannot be seen, but would leave an anti-aliased seam in a long box. */
    double bridge = (t1 - (t0 < 0 ? t0 : 0)) / 4000;
    for (int s = 0; s < RESULTS_STATE_COUNT; s++) {
        gp_block_begin(g, "state%d", s);
        size_t lane = 0;
        double lo = 0, hi = -1; /* the pending box; none while hi < lo */
        for (size_t k = 0; k <= t.n; k++) {
            const results_interval_t *iv = k < t.n ? &t.iv[k] : NULL;
            if (iv && ((int)iv->state != s || !(iv->end >= iv->start)))
                continue;
            if (iv && hi >= lo && iv->lane == lane && iv->start <= hi + bridge) {
                hi = iv->end > hi ? iv->end : hi;
                continue;
            }
            if (hi >= lo) /* x y xlow xhigh ylow yhigh */
                GP_ROW(g, (lo + hi) / 2 / div, lane, lo / div, hi / div, lane - 0.38,
                       lane + 0.38);
            if (iv) {
                lane = iv->lane;
                lo = iv->start;
                hi = iv->end;
            }
        }
        gp_block_end(g);
    }
    gp_printf(g, "set title 'Timeline of ' . ");
    gp_text(g, name);
    /* fixed text in double quotes, for its \n */
    gp_printf(g, " . \" (run %lld)\\nwhen each host computes, communicates and waits\"\n",
              (long long)id);
    /* Lane names are labels left of the lanes, not tic labels (see bars_slant). */
    size_t every = (t.n_lanes + 39) / 40; /* at most 40 names */
    char **lane = dt_calloc(t.n_lanes, sizeof *lane);
    size_t widest = 0;
    for (size_t l = 0; l < t.n_lanes; l += every) {
        lane[l] = dt_malloc(300);
        snprintf(lane[l], 300, "%.100s %d (%.100s)", t.lanes[l].role, t.lanes[l].rank,
                 t.lanes[l].host);
        size_t w = gp_text_width(lane[l]);
        widest = w > widest ? w : widest;
    }
    gp_printf(g, "set xlabel 'simulated time (%s)'\nset xrange [%.10g:%.10g]\n"
                 "set yrange [%.1f:-0.5]\nset grid xtics noytics\nset lmargin %d\n"
                 "set format y ''\nset ytics (",
              unit, (t0 < 0 ? t0 : 0) / div, t1 / div, t.n_lanes - 0.5,
              4 + (int)widest);
    for (size_t l = 0; l < t.n_lanes; l += every)
        gp_printf(g, "%s%zu", l ? ", " : "", l);
    gp_printf(g, ")\n");
    for (size_t l = 0; l < t.n_lanes; l += every) {
        gp_printf(g, "set label %zu ", l + 1);
        gp_text(g, lane[l]);
        gp_printf(g, " at graph 0, first %zu right offset -1,0 tc rgb '#333333'\n", l);
        free(lane[l]);
    }
    free(lane);
    /* Idle at the bottom, compute on top: the thinnest, most telling boxes stay visible.
     * The key lists the states in their usual order. */
    gp_printf(g, "plot ");
    for (int s = RESULTS_STATE_COUNT - 1; s >= 0; s--)
        gp_printf(g, "$state%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 noborder "
                     "lc rgb '%s' notitle, \\\n     ",
                  s, state_colors[s]);
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, "%skeyentry with boxxyerror fs solid 1.0 lc rgb '%s' title '%s'",
                  s ? ", " : "", state_colors[s], state_titles[s]);
    gp_printf(g, "\n");
    f->drawn = 1;
    fig_note(f, "timeline of run %lld", (long long)id);
done:
    results_timeline_free(&t);
    results_run_view_free(&own);
    return st;
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
    size_t with_faults = 0;
    for (size_t i = 0; i < n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &ev[i], err)) != DT_OK ||
            (st = results_query_faults(f->q, runs->v[i].id, &fl[i], err)) != DT_OK)
            goto done;
        with_faults += fl[i].rows > 0;
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
    size_t cols = n_panels > 1 ? 2 : 1, rows = (n_panels + cols - 1) / cols;
    gp_printf(g, "set multiplot layout %zu,%zu title \"Test accuracy vs simulated time, with "
                 "and without faults (red: a host or link goes down, green: back)\"",
              rows, cols);
    fig_runs_of(f);
    gp_printf(g, "\nset key inside bottom right Left reverse font ',9' spacing 1 samplen 2\n"
                 "set xlabel 'simulated time (s)'\nset ylabel 'test accuracy (%%)'\n"
                 "set xrange [0:*]\n");
    for (size_t p = 0; p < n_panels; p++) {
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
        size_t c = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(runs->v[i].strategy, panel[p]))
                continue;
            gp_printf(g, "%s$run%zu using 1:2 with linespoints lt %d ps 0.5 title ",
                      first ? "" : ", ", i, fl[i].rows ? 3 : 1 + (int)(c % 2) * 3);
            /* in a panel the scenario's name is clear: the swept values tell the runs apart */
            const char *name = runs->v[i].name, *slash = strchr(name, '/');
            char label[64];
            snprintf(label, sizeof label, "%s", slash && slash[1] ? slash + 1 : f->labels[i]);
            if (strlen(label) > 48) /* a longer key does not fit in a panel */
                strcpy(label + 45, "...");
            gp_text(g, label);
            first = 0;
            c++;
        }
        gp_printf(g, "\n");
    }
    gp_printf(g, "unset multiplot\n");
    f->drawn = 1;
    f->height = rows > 1 ? 420 * (int)rows : 600;
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

/* --- 8: time per step and memory per host ----------------------------------------------- */

/* The kinds of memory, bottom to top in a bar. */
#define MEM_KINDS 4
static const char *const mem_titles[MEM_KINDS] = {"parameters", "gradients", "optimizer state",
                                                  "activations"};
static const char *const mem_colors[MEM_KINDS] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f"};

/* m's kinds in mem_titles' order, MB, NULL (not known) as 0. */
static void mem_mb(const results_memory_t *m, double mb[MEM_KINDS])
{
    const double bytes[MEM_KINDS] = {m->params, m->grads, m->optimizer, m->activations};
    for (int k = 0; k < MEM_KINDS; k++)
        mb[k] = isfinite(bytes[k]) ? bytes[k] / 1e6 : 0;
}

static dt_status fig_parallelism(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t cap = runs->n ? runs->n : 1, n = 0, longest = 0;
    size_t *shown = dt_calloc(cap, sizeof *shown);
    results_memory_t *mem = dt_calloc(cap, sizeof *mem);
    dt_status st = DT_OK;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        int found = 0;
        if ((st = results_query_memory(f->q, r->id, &mem[n], &found, err)) != DT_OK)
            goto done;
        if (!found || !r->has_summary || r->steps <= 0 || !isfinite(r->sim_time))
            continue;
        shown[n++] = i;
        size_t l = gp_text_width(f->labels[i]);
        longest = l > longest ? l : longest;
    }
    if (n == 0) {
        fig_note(f, "none of the selected runs has memory rows and a summary with steps "
                    "(memory is recorded since schema version 2)");
        goto done;
    }
    gp_t *g = &f->body;
    double tmax = 0, mmax = 0;
    gp_block_begin(g, "time");
    for (size_t b = 0; b < n; b++) {
        const results_run_view_t *r = &runs->v[shown[b]];
        double ms = 1e3 * r->sim_time / (double)r->steps;
        tmax = ms > tmax ? ms : tmax;
        GP_ROW(g, b, ms);
    }
    gp_block_end(g);
    /* segment k of bar b: [sum of the kinds before k, + kind k], in MB (NULL as 0) */
    for (int k = 0; k < MEM_KINDS; k++) {
        gp_block_begin(g, "mem%d", k);
        for (size_t b = 0; b < n; b++) {
            double mb[MEM_KINDS], lo = 0;
            mem_mb(&mem[b], mb);
            for (int j = 0; j < k; j++)
                lo += mb[j];
            double hi = lo + mb[k];
            mmax = hi > mmax ? hi : mmax;
            GP_ROW(g, b, (lo + hi) / 2, b - 0.35, b + 0.35, lo, hi);
        }
        gp_block_end(g);
    }
    int slant = bars_slant(n, longest);
    gp_printf(g, "set multiplot layout 2,1\nset xrange [-0.6:%.1f]\nset grid noxtics\n",
              n - 0.4);
    bars_tics(g, n);
    bars_margins(g, slant, longest);
    bars_names(f, shown, n, slant);
    gp_printf(g, "set title 'Time per step (simulated milliseconds: simulated time / steps)'\n"
                 "set ylabel 'ms per step'\nset yrange [0:%.10g]\n"
                 "plot $time using 1:2:(0.7) with boxes fs solid 0.8 lc rgb '%s' notitle, \\\n"
                 "     $time using 1:2:(sprintf('%%.3g', $2)) with labels offset 0,0.7 "
                 "tc rgb '#333333' notitle\n",
              tmax * 1.2, gp_palette[0]);
    gp_printf(g, "set title 'Memory of the most loaded host (MB), by kind'\n"
                 "set ylabel 'MB'\nset yrange [0:%.10g]\nset key top right\nplot ",
              mmax * 1.25 > 0 ? mmax * 1.25 : 1);
    for (int k = 0; k < MEM_KINDS; k++)
        gp_printf(g, "%s$mem%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                     "lc rgb 'white' lc rgb '%s' title '%s'",
                  k ? ", \\\n     " : "", k, mem_colors[k], mem_titles[k]);
    gp_printf(g, "\nunset multiplot\n");
    f->height = 1000;
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f, "leaves out %zu run%s without memory rows or steps", runs->n - n,
                 runs->n - n == 1 ? "" : "s");
done:
    free(shown);
    free(mem);
    return st;
}

/* --- the table ---------------------------------------------------------------------------- */

const figure_t results_figures[RESULTS_FIGURE_COUNT] = {
    [RESULTS_FIGURE_ACCURACY] = {"accuracy", "test accuracy vs simulated time, a curve per run",
                                 fig_accuracy},
    [RESULTS_FIGURE_ACCURACY_BYTES] = {"accuracy_bytes", "test accuracy vs data sent (MB or GB)",
                                       fig_accuracy_bytes},
    [RESULTS_FIGURE_BREAKDOWN] = {"breakdown",
                                  "compute / communication / idle share, a bar per run",
                                  fig_breakdown},
    [RESULTS_FIGURE_TIME_TO_TARGET] = {"time_to_target",
                                       "time to the target accuracy vs bandwidth, per strategy\n"
                                       "(needs runs at several cluster.bandwidth values)",
                                       fig_time_to_target},
    [RESULTS_FIGURE_SCALING] = {"scaling",
                                "speedup and scaling efficiency vs workers, per strategy\n"
                                "(needs several cluster.workers values and a single run in\n"
                                "the sweep)",
                                fig_scaling},
    [RESULTS_FIGURE_TIMELINE] = {"timeline", "what each host does over simulated time, one run",
                                 fig_timeline},
    [RESULTS_FIGURE_FAULTS] = {"faults",
                               "accuracy vs simulated time, a panel per strategy, runs\n"
                               "with host or link faults next to those without",
                               fig_faults},
    [RESULTS_FIGURE_PARALLELISM] = {"parallelism",
                                    "time per step and the memory of the most loaded host\n"
                                    "(parameters, gradients, optimizer state, activations),\n"
                                    "a bar per run",
                                    fig_parallelism},
    [RESULTS_FIGURE_CLIENTS] = {"clients",
                                "federated runs: each honest client's held-out accuracy,\n"
                                "sorted (10th percentile, spread), and against the rounds\n"
                                "it took part in (needs data.client_holdout > 0)",
                                fig_clients},
};
