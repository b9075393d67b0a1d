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

double fig_gbps(double bytes_per_s)
{
    return bytes_per_s * 8 / 1e9;
}

void fig_groups_add(groups_t *g, const char *key, size_t member)
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

void fig_groups_free(groups_t *g)
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

/* label as it fits in fits characters: cut, "..." at its end, when longer. malloc'ed. */
char *fig_fit_label(const char *label, size_t fits)
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
    double *x = dt_calloc(n, sizeof *x);     /* Gb/s of each run, NAN: not drawn */
    double *bws = dt_calloc(n, sizeof *bws); /* the candidates' bandwidths, then distinct */
    double *ws = dt_calloc(n, sizeof *ws);   /* worker counts of the runs drawn, distinct */
    size_t nc = 0, reached = 0;
    groups_t groups = {0};
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        x[i] = fig_gbps(r->bandwidth);
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
            fig_note(f, "the selected runs do not vary cluster.bandwidth (all at %g Gb/s)", bws[0]);
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
        fig_groups_add(&groups, key, i);
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
        fig_caption(f, "%zu run%s that never reached %s left out", never, never == 1 ? "" : "s",
                    one_target ? "it" : "its target");
    fig_panel(f, 0, 0, 1, 1);
    int logy = tmax > 30 * tmin;
    gp_printf(g, "set logscale x\nset xrange [%.10g:%.10g]\n", bws[0] / 1.5, bws[nbw - 1] * 1.5);
    gp_tics_at(g, "x", bws, nbw);
    gp_printf(g,
              "set xlabel 'link bandwidth (Gb/s, log scale)'\n"
              "set ylabel 'simulated time to target (s%s)'\n%s",
              logy ? ", log scale" : "", logy ? "set logscale y\n" : "set yrange [0:*]\n");
    if (logy)
        gp_printf(g, "set yrange [%.10g:%.10g]\n", tmin / 1.5, tmax * 1.5);
    gp_printf(g, "plot ");
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1*marker title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, "\n");
    f->drawn = 1;
    if (never)
        fig_note(f, "leaves out %zu run%s that never reached the target accuracy", never,
                 never == 1 ? "" : "s");
done:
    fig_groups_free(&groups);
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
    double *x = dt_calloc(n, sizeof *x);     /* workers of each run, NAN: not drawn */
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
            snprintf(key, sizeof key, "%.200s, %g Gb/s", r->strategy, fig_gbps(r->bandwidth));
        else
            snprintf(key, sizeof key, "%.200s", r->strategy);
        fig_groups_add(&groups, key, i);
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
    gp_printf(g,
              "set title 'Speedup vs number of workers'\n"
              "set xlabel 'workers (log scale)'\n"
              "set ylabel 'speedup (log scale)'\n"
              "set logscale y 2\nset yrange [%.10g:%.10g]\nplot ",
              ws[0] / 1.3 < 1 ? ws[0] / 1.3 : 0.5, smax * 1.3);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:($1*$2) with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1*marker title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     x with lines lc rgb '#333333' dt 2 lw 1.5 title "
                 "'ideal (speedup = workers)'\n");
    fig_grid_panel(f, 1, 2, 1);
    gp_printf(g,
              "unset logscale y\n"
              "set title 'Scaling efficiency vs number of workers'\n"
              "set ylabel 'scaling efficiency'\n"
              "set yrange [0:%.10g]\nplot ",
              emax * 1.15);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1*marker title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     1 with lines lc rgb '#333333' dt 2 lw 1.5 title 'ideal (1)'\n");
    f->height = 1000;
    f->drawn = 1;
    if (with_eff < nc)
        fig_note(f,
                 "leaves out %zu run%s without a scaling efficiency (not in a sweep with a "
                 "finished single run)",
                 nc - with_eff, nc - with_eff == 1 ? "" : "s");
done:
    fig_groups_free(&groups);
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
    fig_acc_caption(f, text, n);
    /* keys of 9 points under panels side by side; of 11 on a projector's screen */
    int projector = fig_projector(f);
    gp_printf(g,
              "set key outside below left Left reverse font ',%d' spacing 1 "
              "height 1.5\n"
              "set xlabel 'simulated time (s)'\nset ylabel '%s'\n"
              "set xrange [0:*]\n",
              projector ? 11 : 9, fig_acc_ylabel(text, n));
    /* characters a key under a panel holds */
    size_t fits =
        (size_t)((fig_width(f) / (int)cols - 88 - FIG_KEY_SAMPLE_PX) / (projector ? 8.2 : 6.8));
    fits = fits > RESULTS_PLOT_TEXT_MAX ? RESULTS_PLOT_TEXT_MAX : fits < 20 ? 20 : fits;
    for (size_t p = 0; p < n_panels; p++) {
        fig_grid_panel(f, p, rows, cols);
        gp_printf(g, "unset arrow\nset title ");
        gp_text(g, panel[p]);
        gp_printf(g, "\n");
        for (size_t i = 0; i < n; i++)
            if (!strcmp(runs->v[i].strategy, panel[p]))
                for (size_t k = 0; k < fl[i].n; k++)
                    gp_printf(g,
                              "set arrow from %.10g, graph 0 to %.10g, graph 1 nohead "
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
                gp_curve_look(g, 2, 1 + faulty++ % (GP_DASHES - 1));
            else
                gp_curve_style(g, clean < 2 ? clean : clean + 1);
            clean += !fl[i].rows;
            gp_printf(g, " ps 0.5*marker title ");
            /* in a panel the scenario's name is clear: the swept values tell the runs apart */
            const char *name = runs->v[i].name, *slash = strchr(name, '/');
            char *label = fig_fit_label(slash && slash[1] ? slash + 1 : f->labels[i], fits);
            gp_text(g, label);
            free(label);
            first = 0;
        }
        gp_printf(g, "\n");
    }
    f->drawn = 1;
    f->height = rows > 1 ? 60 + 400 * (int)rows : 600;
    if (left_out)
        fig_note(f, "leaves out %zu run%s beyond %d strategies", left_out, left_out == 1 ? "" : "s",
                 FAULT_PANELS);
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
                                 "colour per strategy, a dash and marker per other swept\n"
                                 "value (past 8, a panel per bandwidth or strategy, one\n"
                                 "time axis)",
                                 fig_accuracy, 0},
    [RESULTS_FIGURE_ACCURACY_BYTES] = {"accuracy_bytes",
                                       "test accuracy vs data sent (MB or GB); equal curves\n"
                                       "drawn once",
                                       fig_accuracy_bytes, 0},
    [RESULTS_FIGURE_BREAKDOWN] = {"breakdown",
                                  "compute / communication / idle share, a bar per run (past\n"
                                  "24 runs the 24 fastest)",
                                  fig_breakdown, 24},
    [RESULTS_FIGURE_TIME_TO_TARGET] = {"time_to_target",
                                       "time to the target accuracy vs bandwidth, per strategy\n"
                                       "(needs runs at several cluster.bandwidth values)",
                                       fig_time_to_target, 0},
    [RESULTS_FIGURE_SCALING] = {"scaling",
                                "speedup and scaling efficiency vs workers, per strategy\n"
                                "(needs several cluster.workers values and a single run in\n"
                                "the sweep)",
                                fig_scaling, 0},
    [RESULTS_FIGURE_TIMELINE] = {"timeline",
                                 "what each host does over simulated time, one run: its\n"
                                 "first 3 whole steps or rounds (a timing-only run: 1)",
                                 fig_timeline, 0},
    [RESULTS_FIGURE_FAULTS] = {"faults",
                               "accuracy vs simulated time, a panel per strategy, runs\n"
                               "with host or link faults next to those without",
                               fig_faults, 0},
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
                                fig_clients, 0},
    [RESULTS_FIGURE_COST] = {"cost",
                             "dollars per 1000 samples and joules per sample vs\n"
                             "simulated seconds per step, a point per run (needs\n"
                             "cluster.price_per_device_hour or device power figures;\n"
                             "past 12 runs the 12 fastest)",
                             fig_cost, 12},
    [RESULTS_FIGURE_STEP] = {"step",
                             "a step (a round) in its parts, a stacked bar per run:\n"
                             "compute, recompute, optimizer, the tensor, context,\n"
                             "expert, pipeline and data communication waited on, the\n"
                             "bubble, other waits (past 24 runs the 24 fastest)",
                             fig_step, 24},
    [RESULTS_FIGURE_PARETO] = {"pareto",
                               "$ per 1000 samples (J per sample without a price) vs\n"
                               "seconds per step, a point per run however many, coloured\n"
                               "by the fullest device's memory, the Pareto front named",
                               fig_pareto, 0},
};
