/* Figure 9, clients.png: the clients of federated runs, their fairness and participation
 * (a file of its own beside figures.c, which holds the others and the table). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "figure.h"

/* Two panels, a colour per run. Above, the honest clients' held-out accuracies sorted, worst
 * to best, at mid-rank positions (k + 0.5) / n: the left end is the clients the model serves
 * worst, the curve's flatness its fairness, and the view's 10th percentile a dot on it. Below,
 * each client's accuracy against the rounds its update was aggregated in, the runs side by
 * side around each whole number, a line through each run's mean per round count: whether
 * taking part less costs a client accuracy. Byzantine clients are left out of both, as the
 * client_fairness view leaves them out. */
dt_status fig_clients(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n;
    results_clients_t *cl = dt_calloc(n ? n : 1, sizeof *cl);
    size_t *shown = dt_calloc(n ? n : 1, sizeof *shown);
    dt_status st = DT_OK;
    size_t n_shown = 0, no_rows = 0, no_acc = 0, byzantine = 0;
    long max_rounds = 0;
    for (size_t i = 0; i < n; i++) {
        if ((st = results_query_clients(f->q, runs->v[i].id, &cl[i], err)) != DT_OK)
            goto done;
        if (cl[i].clients == 0) {
            no_rows++;
            continue;
        }
        if (cl[i].n == 0) {
            no_acc++;
            continue;
        }
        shown[n_shown++] = i;
        byzantine += cl[i].byzantine;
        for (size_t k = 0; k < cl[i].n; k++)
            max_rounds = cl[i].rounds[k] > max_rounds ? cl[i].rounds[k] : max_rounds;
    }
    if (n_shown == 0) {
        fig_note(f, "none of the selected runs has clients with a held-out accuracy (federated "
                    "runs with data.client_holdout > 0 record them)");
        goto done;
    }
    gp_t *g = &f->body;
    /* the runs side by side around each round count, within +-0.35 */
    double dodge = n_shown > 1 ? 0.7 / (double)n_shown : 0;
    if (dodge > 0.12)
        dodge = 0.12;
    for (size_t s = 0; s < n_shown; s++) {
        const results_clients_t *c = &cl[shown[s]];
        double dx = dodge * ((double)s - (double)(n_shown - 1) / 2);
        gp_block_begin(g, "sorted%zu", s);
        for (size_t k = 0; k < c->n; k++)
            GP_ROW(g, ((double)k + 0.5) / (double)c->n, 100 * c->acc[k]);
        gp_block_end(g);
        /* the client at the view's 10th-percentile rank, 1 + (n - 1) / 10 */
        gp_block_begin(g, "p10_%zu", s);
        if (isfinite(c->p10_acc))
            GP_ROW(g, ((double)((c->n - 1) / 10) + 0.5) / (double)c->n, 100 * c->p10_acc);
        gp_block_end(g);
        gp_block_begin(g, "part%zu", s);
        for (size_t k = 0; k < c->n; k++)
            GP_ROW(g, (double)c->rounds[k] + dx, 100 * c->acc[k]);
        gp_block_end(g);
        gp_block_begin(g, "mean%zu", s);
        for (long r = 0; r <= max_rounds; r++) {
            double sum = 0;
            size_t m = 0;
            for (size_t k = 0; k < c->n; k++)
                if (c->rounds[k] == r) {
                    sum += c->acc[k];
                    m++;
                }
            if (m)
                GP_ROW(g, (double)r + dx, 100 * sum / (double)m);
        }
        gp_block_end(g);
    }
    /* A sweep's runs sample the same clients (one seed): their participation is said once,
     * in the title, and per run only where it differs. */
    int same_part = 1;
    for (size_t s = 1; s < n_shown; s++) {
        const results_clients_t *a = &cl[shown[0]], *b = &cl[shown[s]];
        same_part &= a->clients == b->clients && a->never_aggregated == b->never_aggregated &&
                     a->mean_rounds == b->mean_rounds;
    }
    /* The keys go under the panels: beside them they would squeeze the curves. */
    fig_caption(f, "dots: each run's 10th percentile; lines below: the mean per round count");
    if (byzantine)
        fig_caption(f, "honest clients only (Byzantine clients left out)");
    if (same_part) {
        const results_clients_t *c = &cl[shown[0]];
        fig_caption(f, "%zu of %zu clients never aggregated, %.1f rounds each on average",
                    c->never_aggregated, c->clients, c->mean_rounds);
    }
    fig_caption_runs(f);
    fig_grid_panel(f, 0, 2, 1);
    gp_printf(g, "set key outside below center horizontal Left reverse width 2 "
                 "height 1.5\n"
                 "set title \"Each client's held-out accuracy, sorted\"\n"
                 "set xlabel 'clients ranked by their held-out accuracy (fraction, "
                 "0: worst, 1: best)'\n"
                 "set ylabel 'held-out accuracy (%%)'\nset xrange [0:1]\n"
                 "set arrow 1 from 0.1, graph 0 to 0.1, graph 1 nohead lc rgb '#999999' dt 2 "
                 "lw 1 back\n"
                 "plot ");
    for (size_t s = 0; s < n_shown; s++) {
        size_t i = shown[s];
        const results_clients_t *c = &cl[i];
        gp_printf(g, "%s$sorted%zu using 1:2 with linespoints ", s ? ", \\\n     " : "", s);
        gp_curve_style(g, i);
        gp_printf(g, " ps 0.4*marker title ");
        gp_text(g, f->labels[i]);
        gp_printf(g,
                  " . ': p10 %.1f%%, mean %.1f%%, spread %.1f points', \\\n"
                  "     $p10_%zu using 1:2 with points lt %zu pt 7 ps 1.6*marker notitle",
                  100 * c->p10_acc, 100 * c->mean_acc, 100 * c->spread, s, i % GP_COLORS + 1);
    }
    gp_printf(g, "\nunset arrow 1\n");
    fig_grid_panel(f, 1, 2, 1);
    /* a tic per round count while they are few (FedBuff's clients may take part hundreds
     * of times) */
    gp_printf(g,
              "set title \"Held-out accuracy vs rounds taken part\"\n"
              "set xlabel 'rounds the client''s update was aggregated in'\n"
              "set xrange [-0.5:%.1f]\n%sset grid noxtics\n%s"
              "plot ",
              (double)max_rounds + 0.5, max_rounds <= 20 ? "set xtics 1\n" : "",
              same_part ? "unset key\n" : "");
    for (size_t s = 0; s < n_shown; s++) {
        size_t i = shown[s];
        const results_clients_t *c = &cl[i];
        gp_printf(g,
                  "%s$part%zu using 1:2 with points lt %zu pt 7 ps 0.5*marker notitle, \\\n"
                  "     $mean%zu using 1:2 with lines ",
                  s ? ", \\\n     " : "", s, i % GP_COLORS + 1, s);
        gp_line_style(g, i);
        gp_printf(g, " title ");
        gp_text(g, f->labels[i]);
        gp_printf(g, " . ': %zu of %zu never aggregated, %.1f rounds on average'",
                  c->never_aggregated, c->clients, c->mean_rounds);
    }
    gp_printf(g, "\n");
    f->height = 1000;
    f->drawn = 1;
    if (no_rows || no_acc) {
        char rows_part[96] = "", acc_part[128] = "";
        if (no_rows)
            snprintf(rows_part, sizeof rows_part, "%zu run%s without clients rows", no_rows,
                     no_rows == 1 ? "" : "s");
        if (no_acc)
            snprintf(acc_part, sizeof acc_part,
                     "%zu run%s whose clients have no held-out samples (data.client_holdout = 0)",
                     no_acc, no_acc == 1 ? "" : "s");
        fig_note(f, "leaves out %s%s%s", rows_part, no_rows && no_acc ? " and " : "", acc_part);
    }
done:
    for (size_t i = 0; i < n; i++)
        results_clients_free(&cl[i]);
    free(cl);
    free(shown);
    return st;
}
