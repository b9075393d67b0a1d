/* Figure 6, timeline.png: what each host of one run does over simulated time (a file of its
 * own beside figures.c, which stays under 40 KB). A timing-only run's (a model profile, a
 * plan's layout) shows its first step whatever was recorded: the window is its step time,
 * and a sampled timeline (run.timeline = sampled) says what it kept. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

/* --- 6: per-host timeline of one run ----------------------------------------------------- */

/* Simulated seconds per step (per round for the federated), NAN without a summary. */
static double step_time(const results_run_view_t *r)
{
    return r->has_summary && r->steps > 0 && r->sim_time > 0 && isfinite(r->sim_time)
               ? r->sim_time / (double)r->steps
               : NAN;
}

/* The steps (rounds) the figure shows of a run of real training: a few whole ones from its
 * start, enough to see the pattern repeat, not the hundreds a whole run holds. */
#define SHOWN_STEPS 3

/* The run the figure shows and its timeline: --timeline-run's, or the selected run whose
 * hosts compute the largest share of the time (where computing, sending and waiting all
 * show: in a run that only communicates, the compute boxes are too thin to see) among
 * those with rows. Sets *id, *name and *rv (own holds a --timeline-run's summary); t->n is
 * 0 when no run has rows, said in a note. */
static dt_status timeline_pick(fig_t *f, results_timeline_t *t, results_run_view_t *own,
                               int64_t *id, const char **name, const results_run_view_t **rv,
                               dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    dt_status st;
    *id = f->o->timeline_run;
    if (*id > 0) {
        if ((st = results_query_run(f->q, *id, own, err)) != DT_OK)
            return st;
        *name = own->name;
        *rv = own;
        if ((st = results_query_timeline(f->q, *id, t, err)) != DT_OK)
            return st;
        if (t->n == 0)
            fig_note(f, "run %lld has no timeline rows", (long long)*id);
        return DT_OK;
    }
    size_t n = runs->n;
    char *tried = dt_calloc(n ? n : 1, 1);
    for (size_t round = 0; round < n && t->n == 0; round++) {
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            double c = runs->v[i].compute_share;
            double b = best < n ? runs->v[best].compute_share : NAN;
            if (!tried[i] && (best == n || c > b || (isnan(b) && !isnan(c))))
                best = i;
        }
        tried[best] = 1;
        results_timeline_free(t);
        if ((st = results_query_timeline(f->q, runs->v[best].id, t, err)) != DT_OK) {
            free(tried);
            return st;
        }
        *id = runs->v[best].id;
        *name = runs->v[best].name;
        *rv = &runs->v[best];
    }
    free(tried);
    if (t->n == 0)
        fig_note(f, "none of the selected runs has timeline rows");
    return DT_OK;
}

/* One datablock per state ($stateS), one box per stretch of it: intervals of a lane (which
 * come in start order) that touch, or are apart by less than a quarter of a pixel, are
 * merged. A gap that narrow cannot be seen, but would leave an anti-aliased seam in a long
 * box. Intervals from t1 on are left out when cut (the first steps shown); boxes[s] counts
 * each state's boxes. */
static void timeline_boxes(gp_t *g, const results_timeline_t *t, double t0, double t1, int cut,
                           double div, size_t *boxes)
{
    double bridge = (t1 - (t0 < 0 ? t0 : 0)) / 4000;
    for (int s = 0; s < RESULTS_STATE_COUNT; s++) {
        gp_block_begin(g, "state%d", s);
        size_t lane = 0;
        double lo = 0, hi = -1; /* the pending box; none while hi < lo */
        for (size_t k = 0; k <= t->n; k++) {
            const results_interval_t *iv = k < t->n ? &t->iv[k] : NULL;
            if (iv && ((int)iv->state != s || !(iv->end >= iv->start) || !isfinite(iv->start) ||
                       !isfinite(iv->end) || (cut && iv->start >= t1)))
                continue;
            if (iv && hi >= lo && iv->lane == lane && iv->start <= hi + bridge) {
                hi = iv->end > hi ? iv->end : hi;
                continue;
            }
            boxes[s] += hi >= lo;
            if (hi >= lo) /* x y xlow xhigh ylow yhigh */
                GP_ROW(g, (lo + hi) / 2 / div, lane, lo / div, hi / div, lane - 0.38, lane + 0.38);
            if (iv) {
                lane = iv->lane;
                lo = iv->start;
                hi = iv->end;
            }
        }
        gp_block_end(g);
    }
}

/* The axes, a name left of each lane (labels, not tic labels: see bars_angle; at most 40)
 * and the plot command: idle at the bottom, compute on top, so that the thinnest, most
 * telling boxes stay visible; the key lists the states in their usual order. */
static void timeline_plot(gp_t *g, const results_timeline_t *t, double t0, double t1, double div,
                          const char *unit, const size_t *boxes)
{
    size_t every = (t->n_lanes + 39) / 40; /* at most 40 names */
    char **lane = dt_calloc(t->n_lanes, sizeof *lane);
    size_t widest = 0;
    for (size_t l = 0; l < t->n_lanes; l += every) {
        lane[l] = dt_malloc(300);
        snprintf(lane[l], 300, "%.100s %d (%.100s)", t->lanes[l].role, t->lanes[l].rank,
                 t->lanes[l].host);
        size_t w = gp_text_width(lane[l]);
        widest = w > widest ? w : widest;
    }
    gp_printf(g,
              "set xlabel 'simulated time (%s)'\nset xrange [%.10g:%.10g]\n"
              "set yrange [%.1f:-0.5]\nset grid xtics noytics\nset lmargin %d\n"
              "set format y ''\nset ytics (",
              unit, (t0 < 0 ? t0 : 0) / div, t1 / div, t->n_lanes - 0.5, 4 + (int)widest);
    for (size_t l = 0; l < t->n_lanes; l += every)
        gp_printf(g, "%s%zu", l ? ", " : "", l);
    gp_printf(g, ")\n");
    for (size_t l = 0; l < t->n_lanes; l += every) {
        gp_printf(g, "set label %zu ", l + 1);
        gp_text(g, lane[l]);
        gp_printf(g, " at graph 0, first %zu right offset -1,0 tc rgb '#333333'\n", l);
        free(lane[l]);
    }
    free(lane);
    gp_printf(g, "plot ");
    for (int s = RESULTS_STATE_COUNT - 1; s >= 0; s--)
        if (boxes[s]) /* gnuplot warns of an empty block */
            gp_printf(g,
                      "$state%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 noborder "
                      "lc rgb '%s' notitle, \\\n     ",
                      s, fig_state_colors[s]);
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, "%skeyentry with boxxyerror fs solid 1.0 lc rgb '%s' title '%s'",
                  s ? ", " : "", fig_state_colors[s], fig_state_titles[s]);
    gp_printf(g, "\n");
}

dt_status fig_timeline(fig_t *f, dt_err_t *err)
{
    results_timeline_t t = {0};
    results_run_view_t own = {0};
    const char *name = NULL;
    const results_run_view_t *rv = NULL;
    int64_t id = 0;
    dt_status st = timeline_pick(f, &t, &own, &id, &name, &rv, err);
    if (st != DT_OK || t.n == 0)
        goto done;
    /* an interval whose start or end is not finite (a clock that ran off to infinity) has
     * no place on the axis: left out, and said so */
    double t0 = INFINITY, t1 = -INFINITY;
    size_t unbounded = 0;
    for (size_t k = 0; k < t.n; k++) {
        if (!isfinite(t.iv[k].start) || !isfinite(t.iv[k].end)) {
            unbounded++;
            continue;
        }
        t0 = t.iv[k].start < t0 ? t.iv[k].start : t0;
        t1 = t.iv[k].end > t1 ? t.iv[k].end : t1;
    }
    if (unbounded == t.n) {
        fig_note(f, "run %lld: no timeline row has finite times", (long long)id);
        goto done;
    }
    /* a timing-only run: its first step, from the step time (a window of several steps cut
     * to it, one cut short by the row cap said so) */
    char arch[300], mode[32];
    int found_arch, found_mode;
    if ((st = results_query_param(f->q, id, "model.arch", arch, sizeof arch, &found_arch, err)) !=
            DT_OK ||
        (st = results_query_param(f->q, id, "run.timeline", mode, sizeof mode, &found_mode, err)) !=
            DT_OK)
        goto done;
    double step = rv ? step_time(rv) : NAN;
    int one_step = found_arch && !strncmp(arch, "profile:", 8) && !isnan(step);
    /* a run of real training: its first SHOWN_STEPS steps when more were recorded */
    int few_steps = !one_step && !isnan(step) && rv->steps > SHOWN_STEPS &&
                    t1 > SHOWN_STEPS * step * (1 + 1e-9);
    double recorded = t1;
    if (one_step)
        t1 = step;
    if (few_steps)
        t1 = SHOWN_STEPS * step;
    double span = t1 > 0 ? t1 : 1;
    double div = span >= 1 ? 1 : span >= 1e-3 ? 1e-3 : 1e-6;
    const char *unit = span >= 1 ? "s" : span >= 1e-3 ? "ms" : "us";
    size_t boxes[RESULTS_STATE_COUNT] = {0};
    timeline_boxes(&f->body, &t, t0, t1, one_step || few_steps, div, boxes);
    f->title = "What each host does over simulated time";
    if (name && name[0])
        fig_caption(f, "run %lld: %s", (long long)id, name);
    else
        fig_caption(f, "run %lld", (long long)id);
    if (found_mode && !strcmp(mode, "sampled"))
        fig_caption(f,
                    "sampled (run.timeline = sampled): %zu hosts spread over the ranks, "
                    "short boxes merged",
                    t.n_lanes);
    if (one_step && recorded < step * (1 - 1e-9))
        fig_caption(f,
                    "recorded until %.4g s of its %.4g s step (run.timeline_steps, or "
                    "the 200,000-row cap; run.timeline = sampled keeps a whole step)",
                    recorded, step);
    else if (one_step)
        fig_caption(f, "its first step (%.4g s; simulated time / steps)", step);
    int rounds = 0; /* a federated run (clients rows) counts rounds */
    if (few_steps) {
        results_clients_t cl;
        if ((st = results_query_clients(f->q, id, &cl, err)) != DT_OK)
            goto done;
        rounds = cl.clients > 0;
        results_clients_free(&cl);
        fig_caption(f,
                    "its first %d %s of %ld (%d x %.4g s, simulated time / %s; the "
                    "timeline holds %.4g s: dtsim export --trace %lld shows it all)",
                    SHOWN_STEPS, rounds ? "rounds" : "steps", rv->steps, SHOWN_STEPS, step,
                    rounds ? "rounds" : "steps", recorded, (long long)id);
    } else if (!one_step && !isnan(step) && recorded < rv->sim_time * (1 - 1e-9))
        fig_caption(f,
                    "recorded until %.4g s of its %.4g s (run.timeline_steps, or the "
                    "200,000-row cap)",
                    recorded, rv->sim_time);
    if (unbounded)
        fig_caption(f, "%zu intervals left out: their times are not finite", unbounded);
    fig_panel(f, 0, 0, 1, 1);
    timeline_plot(&f->body, &t, t0, t1, div, unit, boxes);
    f->drawn = 1;
    fig_note(f, "timeline of run %lld", (long long)id);
done:
    results_timeline_free(&t);
    results_run_view_free(&own);
    return st;
}
