/* Figure 10, cost.png: what a layout costs against how fast it steps (a file of its own beside
 * figures.c, which holds the others and the table). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "figure.h"

/* One axis: log scale when the values span more than a factor of 10. */
static void cost_axis(gp_t *g, const char *axis, double lo, double hi)
{
    if (hi > 10 * lo && lo > 0) {
        gp_printf(g, "set logscale %s\nset %srange [%.10g:%.10g]\nset %stics autofreq\n", axis,
                  axis, lo / 1.3, hi * 1.3, axis);
        return;
    }
    double a = lo > 0 ? lo - (hi - lo) * 0.1 - 0.05 * lo : 0;
    double b = hi + (hi - lo) * 0.1 + 0.05 * hi;
    gp_printf(g, "unset logscale %s\nset %srange [%.10g:%.10g]\n", axis, axis, a, b);
    /* about 4 tics of 1, 2 or 5 times a power of ten: gnuplot's own choice writes seven
     * numbers of five digits under a panel half the image wide, over each other */
    double raw = (b - a) / 4;
    if (raw > 0 && isfinite(raw)) {
        double mag = pow(10, floor(log10(raw))), m = raw / mag;
        gp_printf(g, "set %stics %.10g\n", axis, (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag);
    }
}

/* One panel: a point per run at (seconds per step, y[i]), column `column` of its datablock,
 * the run's label in the key when `key` (the last panel's: the runs are the same; every
 * panel's on a projector, where each is a screen of its own). */
static void cost_panel(fig_t *f, const size_t *shown, size_t n, const double *x, const double *y,
                       int column, int key, const char *title, const char *ylabel)
{
    gp_t *g = &f->body;
    double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = shown[k];
        if (!isfinite(y[i]))
            continue;
        xlo = fmin(xlo, x[i]), xhi = fmax(xhi, x[i]);
        ylo = fmin(ylo, y[i]), yhi = fmax(yhi, y[i]);
    }
    cost_axis(g, "x", xlo, xhi);
    cost_axis(g, "y", ylo, yhi);
    gp_printf(g,
              "set title '%s'\nset xlabel 'simulated seconds per step'\nset ylabel '%s'\n"
              "%s\nplot ",
              title, ylabel, key ? "set key outside right top" : "unset key");
    int first = 1;
    for (size_t k = 0; k < n; k++) {
        size_t i = shown[k];
        if (!isfinite(y[i]))
            continue;
        gp_printf(g, "%s$run%zu using 1:%d with points ", first ? "" : ", \\\n     ", i, column);
        gp_point_style(g, k);
        gp_printf(g, " ps 1.6*marker title ");
        gp_text(g, f->labels[i]);
        first = 0;
    }
    gp_printf(g, "\n");
}

/* Seconds per step (sim_time / steps) against dollars per 1000 samples and joules per sample
 * (the energy table), a point per run: the cheapest and the leanest layouts at each speed.
 * The dollar panel needs cluster.price_per_device_hour, the joule one device power figures. */
dt_status fig_cost(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1, n_shown = 0, priced = 0, powered = 0;
    size_t *shown = dt_calloc(n, sizeof *shown);
    double *x = dt_calloc(n, sizeof *x), *dollars = dt_calloc(n, sizeof *dollars);
    double *joules = dt_calloc(n, sizeof *joules);
    dt_status st = DT_OK;
    gp_t *g = &f->body;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        results_energy_view_t e;
        if ((st = results_query_energy(f->q, r->id, &e, err)) != DT_OK)
            goto done;
        if (!r->has_summary || r->steps <= 0 || !(r->sim_time > 0))
            continue;
        x[i] = r->sim_time / (double)r->steps;
        dollars[i] = 1000 * e.dollars_per_sample;
        joules[i] = e.joules_per_sample;
        if (isnan(dollars[i]) && isnan(joules[i]))
            continue;
        priced += !isnan(dollars[i]);
        powered += !isnan(joules[i]);
        shown[n_shown++] = i;
        gp_block_begin(g, "run%zu", i);
        GP_ROW(g, x[i], isnan(dollars[i]) ? 0 : dollars[i], isnan(joules[i]) ? 0 : joules[i]);
        gp_block_end(g);
    }
    if (n_shown == 0) {
        fig_note(f, "none of the selected runs has an energy row with joules or dollars per "
                    "sample (runs before schema version 6, or without device power figures "
                    "and cluster.price_per_device_hour)");
        goto done;
    }
    fig_caption_runs(f);
    fig_caption(f, "dollars: hosts x simulated hours x cluster.price_per_device_hour; joules: "
                   "device power_max while computing, power_idle otherwise, plus network ports "
                   "at cluster.link_power");
    size_t panels = (priced > 0) + (powered > 0), p = 0;
    if (priced) {
        fig_grid_panel(f, p++, 1, panels);
        cost_panel(f, shown, n_shown, x, dollars, 2, !powered || fig_projector(f),
                   "Cost vs step time", "$ per 1000 samples");
    }
    if (powered) {
        fig_grid_panel(f, p++, 1, panels);
        cost_panel(f, shown, n_shown, x, joules, 3, 1, "Energy vs step time", "J per sample");
    }
    if (priced < n_shown || powered < n_shown)
        fig_note(f, "%zu of %zu runs without a price, %zu without device power figures",
                 n_shown - priced, n_shown, n_shown - powered);
    f->drawn = 1;
done:
    free(shown);
    free(x);
    free(dollars);
    free(joules);
    return st;
}
