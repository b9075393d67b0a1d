/* Figure 11, pareto.png: what each run costs against how fast it steps, one point per run
 * whatever their number (a plan's 100 layouts and more), the memory of its fullest device as
 * the point's colour, and only the runs of the Pareto front named: those no other run beats
 * at once on step time, cost and memory. A key of a hundred names, or a hundred labels,
 * would cover the points; the front is what a planner chooses from. Memory is one of the
 * three because on a fixed number of devices the cost is the step time times a constant:
 * a front of the first two alone would be the fastest run, where the planner's trade is
 * the memory left on the devices against the time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

/* Front runs named at most: past them the slowest front runs go unnamed (said in the note). */
#define PARETO_LABELS 16

typedef struct pareto_pt {
    double v[3];
    size_t i;
} pareto_pt_t;

static int pt_cmp(const void *a, const void *b)
{
    const pareto_pt_t *p = a, *q = b;
    for (int k = 0; k < 3; k++)
        if (p->v[k] != q->v[k])
            return (p->v[k] > q->v[k]) - (p->v[k] < q->v[k]);
    return (p->i > q->i) - (p->i < q->i);
}

/* a is at least as good as b in every objective and better in one */
static int dominates(const pareto_pt_t *a, const pareto_pt_t *b)
{
    int better = 0;
    for (int k = 0; k < 3; k++) {
        if (a->v[k] > b->v[k])
            return 0;
        better |= a->v[k] < b->v[k];
    }
    return better;
}

size_t fig_pareto_front(const double *x, const double *y, const double *z, size_t n, size_t *front)
{
    pareto_pt_t *p = dt_malloc((n ? n : 1) * sizeof *p);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i]) && !isnan(y[i]))
            p[m++] = (pareto_pt_t){{x[i], y[i], !z ? 0 : isnan(z[i]) ? INFINITY : z[i]}, i};
    /* in lexicographic order a point's dominators all come before it, and one of them is on
     * the front (domination is transitive): each point is checked against the front so far */
    qsort(p, m, sizeof *p, pt_cmp);
    size_t *on = dt_malloc((m ? m : 1) * sizeof *on), k = 0;
    for (size_t j = 0; j < m; j++) {
        size_t f = 0;
        while (f < k && !dominates(&p[on[f]], &p[j]))
            f++;
        if (f == k)
            on[k++] = j;
    }
    for (size_t f = 0; f < k; f++)
        front[f] = p[on[f]].i;
    free(on);
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

/* Each run's point: seconds per step (x), dollars per 1000 samples, joules per sample and
 * the GB its fullest device holds, NAN where unknown; counts the runs priced and powered. */
static dt_status pareto_points(fig_t *f, double *x, double *dollars, double *joules, double *mem,
                               size_t *priced, size_t *powered, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    dt_status st;
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
            return st;
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
        *priced += !isnan(dollars[i]);
        *powered += !isnan(joules[i]);
    }
    return DT_OK;
}

/* How much of the front's first `named` names they all share ("plan-gpt2_xl-"), cut after
 * a - or /; 0 when a name would be left empty. */
static size_t pareto_common_cut(const fig_t *f, const size_t *front, size_t named)
{
    if (!named)
        return 0;
    const char *first = f->labels[front[0]];
    size_t common = strlen(first), cut = 0;
    for (size_t k = 1; k < named; k++) {
        const char *l = f->labels[front[k]];
        size_t c = 0;
        while (c < common && l[c] == first[c])
            c++;
        common = c;
    }
    for (size_t c = 0; c < common; c++)
        if (first[c] == '-' || first[c] == '/')
            cut = c + 1;
    for (size_t k = 0; k < named && cut; k++)
        if (!f->labels[front[k]][cut])
            return 0; /* a name would be empty */
    return cut;
}

/* The front's runs numbered at their points, alternately above and below, and listed by
 * name on the right, fastest first. */
static void pareto_names(fig_t *f, const double *x, const double *y, const double *mem,
                         const size_t *front, size_t named, size_t cut)
{
    gp_t *g = &f->body;
    double h = fig_height(f);
    if (named) {
        gp_printf(g,
                  "set label 199 'Pareto front, fastest first:' at screen 0.66, "
                  "fig_bottom + fig_area - %.6g left font ',10' tc rgb '#222222'\n",
                  10 / h);
    }
    for (size_t k = 0; k < named; k++) {
        size_t i = front[k];
        /* its number at the point, alternately above and below it */
        gp_printf(g,
                  "set label %zu '%zu' at first %.10g, first %.10g offset char 0.9, char %s "
                  "font ',9' tc rgb '#222222' front\n",
                  100 + k, k + 1, x[i], y[i], k % 2 ? "-0.7" : "0.7");
        char line[200], gb[32] = "";
        if (!isnan(mem[i]))
            snprintf(gb, sizeof gb, "  %.3g GB", mem[i]);
        snprintf(line, sizeof line, "%zu  %.60s  %.4g s%s", k + 1, f->labels[i] + cut, x[i], gb);
        gp_printf(g, "set label %zu ", 200 + k);
        gp_text(g, line);
        gp_printf(g,
                  " at screen 0.66, fig_bottom + fig_area - %.6g left font ',10' "
                  "tc rgb '#222222'\n",
                  (10 + 17 * (double)(k + 1)) / h);
    }
}

/* Seconds per step (sim_time / steps) against dollars per 1000 samples (joules per sample
 * when no run has a price), a point per run coloured by the memory its fullest device holds
 * (the memory table), the front circled with its runs named. */
dt_status fig_pareto(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1, priced = 0, powered = 0, n_pts = 0;
    double *x = dt_calloc(n, sizeof *x), *dollars = dt_calloc(n, sizeof *dollars);
    double *joules = dt_calloc(n, sizeof *joules), *mem = dt_calloc(n, sizeof *mem);
    size_t *front = dt_calloc(n, sizeof *front);
    gp_t *g = &f->body;
    dt_status st = pareto_points(f, x, dollars, joules, mem, &priced, &powered, err);
    if (st != DT_OK)
        goto done;
    if (!priced && !powered) {
        fig_note(f, "none of the selected runs has dollars or joules per sample (an energy row "
                    "with cluster.price_per_device_hour or device power figures)");
        goto done;
    }
    /* dollars when any run has a price: what a buyer compares; joules otherwise */
    const double *y = priced ? dollars : joules;
    size_t n_front = fig_pareto_front(x, y, mem, runs->n, front);
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
    size_t named = n_front < PARETO_LABELS ? n_front : PARETO_LABELS;
    size_t cut = pareto_common_cut(f, front, named);
    f->title = "Cost against step time: Pareto front";
    fig_caption_runs(f);
    fig_caption(f,
                "a point per run (%zu), coloured by the memory of its fullest device; the %zu "
                "circled: the Pareto front, no other run as fast, as cheap and as light on "
                "memory and better in one",
                n_pts + no_mem, n_front);
    if (cut)
        fig_caption(f, "front runs named less their common %.*s", (int)cut, f->labels[front[0]]);
    /* the plot on the left two thirds, the front's names listed on the right: labels at
     * the points would write over each other where the front is dense */
    fig_panel(f, 0, 0, 0.64, 1);
    pareto_axis(g, "x", xlo, xhi);
    pareto_axis(g, "y", ylo, yhi);
    gp_printf(g,
              "set xlabel 'simulated seconds per step'\nset ylabel '%s'\n"
              "set cblabel 'memory of the fullest device (GB)'\n"
              "set palette defined (0 '#4e79a7', 1 '#59a14f', 2 '#edc948', 3 '#e15759')\n"
              "set colorbox vertical\nset key inside top left opaque box\n",
              priced ? "$ per 1000 samples" : "J per sample");
    pareto_names(f, x, y, mem, front, named, cut);
    gp_printf(g, "plot ");
    if (n_pts)
        gp_printf(g, "$runs using 1:2:3 with points pt 7 ps 1.3*marker lc palette title 'run', ");
    if (no_mem)
        gp_printf(g, "$nomem using 1:2 with points pt 7 ps 1.3*marker lc rgb '#9a9a9a' "
                     "title 'run, memory unknown', ");
    gp_printf(g, "$front using 1:2 with points pt 6 ps 2.2*marker lw 1.5 lc rgb '#222222' "
                 "title 'Pareto front'\n");
    if (named < n_front)
        fig_note(f, "names %zu of the %zu runs on the Pareto front (the fastest)", named, n_front);
    size_t left = runs->n - n_pts - no_mem;
    if (left) {
        size_t len = strlen(f->note);
        snprintf(f->note + len, f->note_size - len, "%sleaves out %zu run%s without %s",
                 len ? "; " : "", left, left == 1 ? "" : "s", priced ? "a price" : "power figures");
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
