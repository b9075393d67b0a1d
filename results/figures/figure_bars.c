/* The bar figures, a bar per run named under it: breakdown.png (compute, communication and
 * idle shares), parallelism.png (time per step or round, memory of the most loaded host) and
 * step.png (a step's parts, the breakdown table).
 * A file of its own beside figures.c, which holds the others and the table. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

/* --- bars named by runs (breakdown, parallelism) ------------------------------------------ */

/* Run names are labels under the bars, not tic labels: gnuplot reads a tic label as a
 * format, and cuts one that holds a % to 49 characters. Short names of a few bars stand
 * level under them; longer ones slant, steeper the closer the bars (a slanted name needs a
 * line's height / sin(angle) of room along the axis), and the first one then needs room on
 * the left. The angle in degrees, 0: level. */
static int bars_angle(const fig_t *f, size_t n, size_t longest, int key_px)
{
    double slot = (fig_width(f) - key_px - 120) / ((double)n + 0.2);
    if (n <= 6 && 8.0 * (double)longest < slot)
        return 0;
    return slot >= 56 ? 25 : slot >= 26 ? 45 : 90;
}

#define PI 3.14159265358979323846

/* Margins in characters (about 8.8 by 17 pixels) for names of longest characters (about 8
 * pixels each) at angle. */
static void bars_margins(gp_t *g, int angle, size_t longest)
{
    double a = angle * PI / 180, len = (double)longest;
    int left = 6 + (int)(0.55 * len * cos(a)); /* and never less than the y labels need */
    if (angle)
        gp_printf(g, "set lmargin %d\nset bmargin %d\n", left > 10 ? left : 10,
                  3 + (int)(0.47 * len * sin(a)));
    else
        gp_printf(g, "set lmargin 10\nset bmargin 3\n");
}

/* A tic, with no text, under each of n bars at 0, 1, ... */
static void bars_tics(gp_t *g, size_t n)
{
    gp_printf(g, "set format x ''\nset xtics (");
    for (size_t b = 0; b < n; b++)
        gp_printf(g, "%s%zu", b ? ", " : "", b);
    gp_printf(g, ")\n");
}

/* The names of n bars taken away, for the next panel. */
static void bars_unname(gp_t *g, size_t n)
{
    for (size_t b = 0; b < n; b++)
        gp_printf(g, "unset label %zu\n", b + 1);
}

/* Bar b named by the label of run shown[b], at angle (bars_angle). */
static void bars_names(fig_t *f, const size_t *shown, size_t n, int angle)
{
    for (size_t b = 0; b < n; b++) {
        gp_printf(&f->body, "set label %zu ", b + 1);
        gp_text(&f->body, f->labels[shown[b]]);
        if (angle)
            gp_printf(&f->body,
                      " at first %zu, graph 0 right rotate by %d offset %.2g,-1 "
                      "tc rgb '#333333'\n",
                      b, angle, angle == 90 ? 0.4 : 1);
        else
            gp_printf(&f->body, " at first %zu, graph 0 center offset 0,-1 tc rgb '#333333'\n", b);
    }
}

/* Text of `points` points in pixels (pngcairo draws points at 96 dpi): the width of "100%",
 * and the height of a line. */
#define PCT_WIDTH_PX(points) (3.4 * (points))
#define LINE_PX(points) (1.6 * (points))

typedef struct bar_fit {
    int font;         /* points; 0: no labels */
    int along;        /* 1: turned along the bar */
    double min_share; /* percent of the axis a segment needs to hold its label */
} bar_fit_t;

/* How percentages fit inside n bars of 0.7 of a slot each, in a panel as wide as the image
 * less the bars' left margin and a key of key_px pixels, as high as the image less about
 * 150 pixels of title, caption and names. */
static bar_fit_t bars_fit(const fig_t *f, size_t n, int angle, size_t longest, int key_px)
{
    double lmargin_px = 8.8 * (angle ? 6 + 0.55 * (double)longest * cos(angle * PI / 180) : 10);
    double plot_w = fig_width(f) - lmargin_px - key_px - 20;
    double plot_h = fig_height(f) - 150;
    double bar_px = plot_w * 0.7 / ((double)n + 0.2);
    bar_fit_t fit = {0, 0, 100};
    int across = (int)(bar_px / PCT_WIDTH_PX(1));
    if (across >= 7) {
        fit.font = across > 11 ? 11 : across;
        fit.min_share = 100 * LINE_PX(fit.font) / plot_h;
    } else if (bar_px >= LINE_PX(8)) {
        fit.font = 8;
        fit.along = 1;
        fit.min_share = 100 * (PCT_WIDTH_PX(8) + 6) / plot_h;
    }
    if (fit.min_share < 5)
        fit.min_share = 5;
    return fit;
}

/* --- 3: compute / communication / idle shares --------------------------------------------- */

dt_status fig_breakdown(fig_t *f, dt_err_t *err)
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
    f->title = "Compute, communication and idle share";
    fig_caption_runs(f);
    fig_panel(f, 0, 0, 1, 1);
    gp_printf(g,
              "set ylabel 'share of the summed time of all hosts (%%)'\n"
              "set yrange [0:100]\nset xrange [-0.6:%.1f]\n"
              "set grid noxtics\n",
              n - 0.4);
    int angle = bars_angle(f, n, longest, 170);
    bars_margins(g, angle, longest);
    bars_tics(g, n);
    bars_names(f, shown, n, angle);
    gp_printf(g, "plot ");
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g,
                  "%s$state%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                  "lc rgb 'white' lc rgb '%s' title '%s'",
                  s ? ", \\\n     " : "", s, fig_state_colors[s], fig_state_titles[s]);
    /* The percentages inside the segments that hold them: across the bar in a font that
     * fits "100%", or along it when the bars are too narrow for 7 points. */
    bar_fit_t fit = bars_fit(f, n, angle, longest, 170);
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        if (fit.font > 0)
            gp_printf(g,
                      ", \\\n     $state%d using 1:2:($7 >= %.3g ? sprintf('%%.0f%%%%', $7) "
                      ": '') with labels font ',%d' %s tc rgb '%s' notitle",
                      s, fit.min_share, fit.font, fit.along ? "rotate by 90" : "",
                      s == RESULTS_STATE_IDLE ? "#333333" : "white");
    gp_printf(g, "\n");
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f, "leaves out %zu run%s without a summary", runs->n - n,
                 runs->n - n == 1 ? "" : "s");
    free(shown);
    return DT_OK;
}

/* --- 8: time per step and memory per host ----------------------------------------------- */

/* The kinds of memory, bottom to top in a bar. */
#define MEM_KINDS 4
static const char *const mem_titles[MEM_KINDS] = {"parameters", "gradients", "optimizer state",
                                                  "activations"};
static const char *const mem_colors[MEM_KINDS] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f"};

/* m's kinds in mem_titles' order, bytes, NULL (not known) as 0. */
static void mem_bytes(const results_memory_t *m, double v[MEM_KINDS])
{
    const double bytes[MEM_KINDS] = {m->params, m->grads, m->optimizer, m->activations};
    for (int k = 0; k < MEM_KINDS; k++)
        v[k] = isfinite(bytes[k]) ? bytes[k] : 0;
}

/* Bars of time per step or per round (ms, or s when the longest passes a second) of the runs
 * shown[0..n), in the panel p of a column of panels; on a log axis when the times span more
 * than a factor of 100 (a 100 Mb/s step of 1.24 s beside a 100 Gb/s one of 1.9 ms: on a
 * linear axis most bars would be a line), the bars rising from the axis' foot. */
static void time_panel(fig_t *f, const char *block, const size_t *shown, const double *ms, size_t n,
                       int rounds, size_t p, size_t panels, size_t longest)
{
    gp_t *g = &f->body;
    double tmax = 0, tmin = INFINITY;
    for (size_t b = 0; b < n; b++) {
        tmax = ms[b] > tmax ? ms[b] : tmax;
        tmin = ms[b] > 0 && ms[b] < tmin ? ms[b] : tmin;
    }
    int secs = tmax >= 1000, logy = tmax > 100 * tmin;
    double unit = secs ? 1e3 : 1, foot = logy ? pow(10, floor(log10(tmin / unit))) : 0;
    gp_block_begin(g, "%s", block);
    for (size_t b = 0; b < n; b++)
        GP_ROW(g, b, secs ? ms[b] / 1e3 : ms[b]);
    gp_block_end(g);
    int angle = bars_angle(f, n, longest, 0);
    fig_grid_panel(f, p, panels, 1);
    gp_printf(g, "set xrange [-0.6:%.1f]\nset grid noxtics\n", n - 0.4);
    bars_tics(g, n);
    bars_margins(g, angle, longest);
    bars_names(f, shown, n, angle);
    if (logy)
        gp_printf(g,
                  "set logscale y\nset yrange [%.10g:%.10g]\nset ytics autofreq\n"
                  "set format y '%%g'\n",
                  foot, tmax / unit * 4);
    else
        gp_printf(g, "unset logscale y\nset yrange [0:%.10g]\n", tmax / unit * 1.2);
    gp_printf(g,
              "set title 'Time per %s'\nset ylabel '%s per %s (simulated%s)'\n"
              "plot $%s using 1:2:($1-0.35):($1+0.35):(%.10g):2 with boxxyerror fs solid 0.8 "
              "lc rgb '%s' notitle, \\\n"
              "     $%s using 1:2:(plain($2)) with labels offset 0,0.7 tc rgb '#333333' "
              "notitle\n",
              rounds ? "round" : "step", secs ? "s" : "ms", rounds ? "round" : "step",
              logy ? ", log scale" : "", block, foot, gp_colour(g, rounds ? 3 : 0), block);
    if (logy)
        gp_printf(g, "unset logscale y\nset format y\n");
    bars_unname(g, n);
}

/* Time per step and the memory of the most loaded host, a bar per run. Federated runs (the
 * runs with clients rows) count rounds, not steps: their times, a thousand times longer, get
 * a panel of their own beside the steps', never one linear axis shared with them. */
dt_status fig_parallelism(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t cap = runs->n ? runs->n : 1, n = 0, longest = 0;
    size_t *shown = dt_calloc(cap, sizeof *shown);
    int *per_round = dt_calloc(cap, sizeof *per_round);
    results_memory_t *mem = dt_calloc(cap, sizeof *mem);
    dt_status st = DT_OK;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        int found = 0;
        if ((st = results_query_memory(f->q, r->id, &mem[n], &found, err)) != DT_OK)
            goto done;
        if (!found || !r->has_summary || r->steps <= 0 || !isfinite(r->sim_time))
            continue;
        results_clients_t cl;
        if ((st = results_query_clients(f->q, r->id, &cl, err)) != DT_OK)
            goto done;
        per_round[n] = cl.clients > 0;
        results_clients_free(&cl);
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
    /* the time panels, steps then rounds, above the memory */
    size_t kinds[2] = {0, 0};
    for (size_t b = 0; b < n; b++)
        kinds[per_round[b]]++;
    size_t panels = 1 + (kinds[0] > 0) + (kinds[1] > 0), p = 0;
    for (int rounds = 0; rounds < 2; rounds++) {
        if (!kinds[rounds])
            continue;
        size_t *idx = dt_calloc(kinds[rounds], sizeof *idx), m = 0;
        double *ms = dt_calloc(kinds[rounds], sizeof *ms);
        for (size_t b = 0; b < n; b++)
            if (per_round[b] == rounds) {
                const results_run_view_t *r = &runs->v[shown[b]];
                idx[m] = shown[b];
                ms[m++] = 1e3 * r->sim_time / (double)r->steps;
            }
        time_panel(f, rounds ? "round" : "step", idx, ms, m, rounds, p++, panels, longest);
        free(idx);
        free(ms);
    }
    /* segment k of bar b: [sum of the kinds before k, + kind k], in MB, or GB past 10 GB
     * (NULL as 0) */
    double peak = 0;
    for (size_t b = 0; b < n; b++) {
        double v[MEM_KINDS], sum = 0;
        mem_bytes(&mem[b], v);
        for (int k = 0; k < MEM_KINDS; k++)
            sum += v[k];
        peak = sum > peak ? sum : peak;
    }
    int gb = peak > 10e9;
    double div = gb ? 1e9 : 1e6;
    for (int k = 0; k < MEM_KINDS; k++) {
        gp_block_begin(g, "mem%d", k);
        for (size_t b = 0; b < n; b++) {
            double v[MEM_KINDS], lo = 0;
            mem_bytes(&mem[b], v);
            for (int j = 0; j < k; j++)
                lo += v[j] / div;
            double hi = lo + v[k] / div;
            GP_ROW(g, b, (lo + hi) / 2, b - 0.35, b + 0.35, lo, hi);
        }
        gp_block_end(g);
    }
    int angle = bars_angle(f, n, longest, 170);
    fig_grid_panel(f, p, panels, 1);
    gp_printf(g, "set xrange [-0.6:%.1f]\nset grid noxtics\n", n - 0.4);
    bars_tics(g, n);
    bars_margins(g, angle, longest);
    bars_names(f, shown, n, angle);
    gp_printf(g,
              "set title 'Memory of the most loaded host'\n"
              "set ylabel '%s (10^%d bytes)'\nset yrange [0:%.10g]\nset key top right\nplot ",
              gb ? "GB" : "MB", gb ? 9 : 6, peak / div * 1.25 > 0 ? peak / div * 1.25 : 1);
    for (int k = 0; k < MEM_KINDS; k++)
        gp_printf(g,
                  "%s$mem%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                  "lc rgb 'white' lc rgb '%s' title '%s'",
                  k ? ", \\\n     " : "", k, mem_colors[k], mem_titles[k]);
    gp_printf(g, "\n");
    fig_caption_runs(f);
    f->height = 60 + 470 * (int)panels;
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f, "leaves out %zu run%s without memory rows or steps", runs->n - n,
                 runs->n - n == 1 ? "" : "s");
done:
    free(shown);
    free(per_round);
    free(mem);
    return st;
}

/* --- a step's parts ------------------------------------------------------------------------- */

static const char *const part_colors[RESULTS_PART_COUNT] = {
    "#4e79a7", "#a0cbe8", "#59a14f", "#f28e2b", "#ffbe7d",
    "#b07aa1", "#e15759", "#9c755f", "#bab0ac", "#d7d7d7"};

/* A stacked bar per run of its step's parts (seconds per step, ms below a second), the
 * parts no run has left out of the key. Runs without a stored breakdown (before schema
 * version 9) are left out, and said so. */
dt_status fig_step(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t cap = runs->n ? runs->n : 1, n = 0, longest = 0, rounds = 0;
    size_t *shown = dt_calloc(cap, sizeof *shown);
    double(*parts)[RESULTS_PART_COUNT] = dt_calloc(cap, sizeof *parts);
    dt_status st = DT_OK;
    int used[RESULTS_PART_COUNT] = {0};
    double tmax = 0;
    for (size_t i = 0; i < runs->n; i++) {
        int found = 0;
        if ((st = results_query_breakdown(f->q, runs->v[i].id, parts[n], &found, err)) != DT_OK)
            goto done;
        if (!found)
            continue;
        double sum = 0;
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            sum += parts[n][k];
        if (!(sum > 0) || !isfinite(sum))
            continue; /* a run without time (or whose clock was lost) has no bar */
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            used[k] |= parts[n][k] > 0;
        tmax = sum > tmax ? sum : tmax;
        results_clients_t cl;
        if ((st = results_query_clients(f->q, runs->v[i].id, &cl, err)) != DT_OK)
            goto done;
        rounds += cl.clients > 0;
        results_clients_free(&cl);
        shown[n++] = i;
        size_t l = gp_text_width(f->labels[i]);
        longest = l > longest ? l : longest;
    }
    if (n == 0) {
        fig_note(f, "none of the selected runs has a breakdown of its step (stored since "
                    "schema version 9)");
        goto done;
    }
    gp_t *g = &f->body;
    double unit = tmax >= 1 ? 1 : 1e-3;
    /* segment k of bar b: [the parts before k, + part k], in the axis' unit */
    for (int k = 0; k < RESULTS_PART_COUNT; k++) {
        if (!used[k])
            continue;
        gp_block_begin(g, "part%d", k);
        for (size_t b = 0; b < n; b++) {
            double lo = 0;
            for (int j = 0; j < k; j++)
                lo += parts[b][j] / unit;
            double hi = lo + parts[b][k] / unit;
            GP_ROW(g, b, (lo + hi) / 2, b - 0.35, b + 0.35, lo, hi);
        }
        gp_block_end(g);
    }
    f->title = "A step in its parts";
    fig_caption_runs(f);
    fig_caption(f, "the mean device's step; communication: only what it waited on%s",
                rounds ? (rounds == n ? "; federated runs: a round"
                                      : "; federated runs: a round "
                                        "(the others a step)")
                       : "");
    fig_panel(f, 0, 0, 1, 1);
    gp_printf(g,
              "set ylabel '%s per %s (simulated)'\nset yrange [0:%.10g]\n"
              "set xrange [-0.6:%.1f]\nset grid noxtics\nset key outside right top\n",
              unit == 1 ? "s" : "ms", rounds == n ? "round" : "step", tmax / unit * 1.1, n - 0.4);
    int angle = bars_angle(f, n, longest, 170);
    bars_margins(g, angle, longest);
    bars_tics(g, n);
    bars_names(f, shown, n, angle);
    gp_printf(g, "plot ");
    const char *sep = "";
    for (int k = 0; k < RESULTS_PART_COUNT; k++) {
        if (!used[k])
            continue;
        gp_printf(g,
                  "%s$part%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                  "lc rgb 'white' lc rgb '%s' title '%s'",
                  sep, k, part_colors[k], results_part_names[k]);
        sep = ", \\\n     ";
    }
    gp_printf(g, "\n");
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f,
                 "leaves out %zu run%s without a breakdown of its step (stored since schema "
                 "version 9) or a finite one",
                 runs->n - n, runs->n - n == 1 ? "" : "s");
done:
    free(shown);
    free(parts);
    return st;
}
