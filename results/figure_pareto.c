/* Figure 11, pareto.png: what each run costs against how fast it steps, one point per run
 * whatever their number (a plan's 100 layouts and more), the memory of its fullest device as
 * the point's colour, and only the runs of the Pareto front named: no other run is both
 * faster and cheaper than one of them. A key of a hundred names, or a hundred labels, would
 * cover the points; the front is what a planner chooses from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

/* Front runs named at most: past them the slowest front runs go unnamed (said in the note). */
#define PARETO_LABELS 16

typedef struct pareto_pt {
    double x, y;
    size_t i;
} pareto_pt_t;

static int pt_cmp(const void *a, const void *b)
{
    const pareto_pt_t *p = a, *q = b;
    if (p->x != q->x)
        return (p->x > q->x) - (p->x < q->x);
    if (p->y != q->y)
        return (p->y > q->y) - (p->y < q->y);
    return (p->i > q->i) - (p->i < q->i);
}

size_t fig_pareto_front(const double *x, const double *y, size_t n, size_t *front)
{
    pareto_pt_t *p = dt_malloc((n ? n : 1) * sizeof *p);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i]) && !isnan(y[i]))
            p[m++] = (pareto_pt_t){x[i], y[i], i};
    qsort(p, m, sizeof *p, pt_cmp);
    /* by ascending x: a point is on the front when its y is below every y before it, or
     * equal to the lowest and at the same x (a copy of a front point dominates nothing) */
    size_t k = 0;
    double best_y = INFINITY, best_x = NAN;
    for (size_t j = 0; j < m; j++) {
        if (p[j].y < best_y || (p[j].y == best_y && p[j].x == best_x)) {
            front[k++] = p[j].i;
            best_y = p[j].y;
            best_x = p[j].x;
        }
    }
    free(p);
    return k;
}

/* One axis: log scale when the values span more than a factor of 10 (as cost.png). */
static void pareto_axis(gp_t *g, const char *axis, double lo, double hi)
{
    if (hi > 10 * lo && lo > 0)
        gp_printf(g, "set logscale %s\nset %srange [%.10g:%.10g]\n", axis, axis, lo / 1.3,
                  hi * 1.3);
    else
        gp_printf(g, "unset logscale %s\nset %srange [%.10g:%.10g]\n", axis, axis,
                  lo - (hi - lo) * 0.08 - 0.05 * lo, hi + (hi - lo) * 0.08 + 0.05 * hi);
}

/* Seconds per step (sim_time / steps) against dollars per 1000 samples (joules per sample
 * when no run has a price), a point per run coloured by the memory its fullest device holds
 * (the memory table), the front a dashed staircase with its runs named. */
dt_status fig_pareto(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1, priced = 0, powered = 0, n_pts = 0;
    double *x = dt_calloc(n, sizeof *x), *dollars = dt_calloc(n, sizeof *dollars);
    double *joules = dt_calloc(n, sizeof *joules), *mem = dt_calloc(n, sizeof *mem);
    size_t *front = dt_calloc(n, sizeof *front);
    dt_status st = DT_OK;
    gp_t *g = &f->body;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        x[i] = dollars[i] = joules[i] = mem[i] = NAN;
        if (!r->has_summary || r->steps <= 0 || !(r->sim_time > 0))
            continue;
        results_energy_view_t e;
        results_memory_t m;
        int found;
        if ((st = results_query_energy(f->q, r->id, &e, err)) != DT_OK ||
            (st = results_query_memory(f->q, r->id, &m, &found, err)) != DT_OK)
            goto done;
        x[i] = r->sim_time / (double)r->steps;
        dollars[i] = 1000 * e.dollars_per_sample;
        joules[i] = e.joules_per_sample;
        double parts[4] = {m.params, m.grads, m.optimizer, m.activations}, sum = 0;
        int known = 0;
        for (int k = 0; k < 4; k++)
            if (!isnan(parts[k])) {
                sum += parts[k];
                known = 1;
            }
        mem[i] = found && known ? sum / 1e9 : NAN;
        priced += !isnan(dollars[i]);
        powered += !isnan(joules[i]);
    }
    if (!priced && !powered) {
        fig_note(f, "none of the selected runs has dollars or joules per sample (an energy row "
                    "with cluster.price_per_device_hour or device power figures)");
        goto done;
    }
    /* dollars when any run has a price: what a buyer compares; joules otherwise */
    const double *y = priced ? dollars : joules;
    size_t n_front = fig_pareto_front(x, y, runs->n, front);
    double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
    size_t no_mem = 0;
    gp_block_begin(g, "runs");
    for (size_t i = 0; i < runs->n; i++)
        if (!isnan(x[i]) && !isnan(y[i]) && !isnan(mem[i])) {
            GP_ROW(g, x[i], y[i], mem[i]);
            n_pts++;
        }
    gp_block_end(g);
    gp_block_begin(g, "nomem");
    for (size_t i = 0; i < runs->n; i++)
        if (!isnan(x[i]) && !isnan(y[i]) && isnan(mem[i])) {
            GP_ROW(g, x[i], y[i]);
            no_mem++;
        }
    gp_block_end(g);
    for (size_t i = 0; i < runs->n; i++)
        if (!isnan(x[i]) && !isnan(y[i])) {
            xlo = fmin(xlo, x[i]), xhi = fmax(xhi, x[i]);
            ylo = fmin(ylo, y[i]), yhi = fmax(yhi, y[i]);
        }
    gp_block_begin(g, "front");
    for (size_t k = 0; k < n_front; k++)
        GP_ROW(g, x[front[k]], y[front[k]]);
    gp_block_end(g);

    f->title = "Cost against step time: Pareto front";
    fig_caption_runs(f);
    fig_caption(f, "a point per run (%zu), coloured by the memory of its fullest device; the %zu "
                   "named on the dashed front: no other run is both faster and cheaper",
                n_pts + no_mem, n_front);
    fig_panel(f, 0, 0, 1, 1);
    pareto_axis(g, "x", xlo, xhi);
    pareto_axis(g, "y", ylo, yhi);
    gp_printf(g, "set xlabel 'simulated seconds per step'\nset ylabel '%s'\n"
                 "set cblabel 'memory of the fullest device (GB)'\n"
                 "set palette defined (0 '#4e79a7', 1 '#59a14f', 2 '#edc948', 3 '#e15759')\n"
                 "set colorbox vertical\nset key top right opaque box\n",
              priced ? "$ per 1000 samples" : "J per sample");
    /* names of the front, fastest first, alternately above and below their point so that
     * neighbours on a steep front do not write over each other */
    size_t named = n_front < PARETO_LABELS ? n_front : PARETO_LABELS;
    for (size_t k = 0; k < named; k++) {
        size_t i = front[k];
        gp_printf(g, "set label %zu ", 100 + k);
        gp_text(g, f->labels[i]);
        gp_printf(g, " at first %.10g, first %.10g offset char 1, char %s font ',9' "
                     "tc rgb '#222222' front\n",
                  x[i], y[i], k % 2 ? "-0.8" : "0.8");
    }
    gp_printf(g, "plot ");
    if (n_pts)
        gp_printf(g, "$runs using 1:2:3 with points pt 7 ps 1.3 lc palette title 'run', ");
    if (no_mem)
        gp_printf(g, "$nomem using 1:2 with points pt 7 ps 1.3 lc rgb '#9a9a9a' "
                     "title 'run, memory unknown', ");
    gp_printf(g, "$front using 1:2 with steps dt 2 lw 1.5 lc rgb '#333333' title 'Pareto front', "
                 "$front using 1:2 with points pt 6 ps 2.2 lw 1.5 lc rgb '#222222' notitle\n");
    if (named < n_front)
        fig_note(f, "names %zu of the %zu runs on the Pareto front (the fastest)", named,
                 n_front);
    size_t left = runs->n - n_pts - no_mem;
    if (left) {
        size_t len = strlen(f->note);
        snprintf(f->note + len, f->note_size - len, "%sleaves out %zu run%s without %s",
                 len ? "; " : "", left, left == 1 ? "" : "s",
                 priced ? "a price" : "power figures");
    }
    f->drawn = 1;
done:
    free(x);
    free(dollars);
    free(joules);
    free(mem);
    free(front);
    return st;
}
