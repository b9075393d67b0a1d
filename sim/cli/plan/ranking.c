/* What a plan prints: the list of layouts and their fit (plan_list_print), the ranking of
 * the finished runs (plan_ranking_print), and --show's ranking of a stored plan
 * (plan_show). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "plan_impl.h"

/* By step time; a tie by the order listed, so that the ranking is the same however the
 * runs were stored (one sweep, or resumed). */
static int by_step_time(const void *a, const void *b)
{
    const plan_layout_t *x = a, *y = b;
    double u = x->run ? x->step_s : INFINITY, w = y->run ? y->step_s : INFINITY;
    if (u != w)
        return (u > w) - (u < w);
    return (x->index > y->index) - (x->index < y->index);
}

void plan_list_print(const plan_layout_t *l, long n)
{
    char name[64];
    printf("%-34s %s\n", "layout", "memory (dtsim check)");
    for (long i = 0; i < n; i++) {
        plan_layout_name(&l[i], name, sizeof name);
        printf("%-34s %s %s\n", name, l[i].fits ? "fits:" : "dropped:",
               l[i].memory[0] ? l[i].memory : "no capacity stated");
    }
}

/* The ranking of the plan's finished runs (l: in->runs, sorted here), then, when some are
 * missing, the PARTIAL line and how to go on; the same from the plan and from --show, as
 * everything in it comes from in and the database. tokens: --tokens (0: none); goodput: the
 * failure model of the goodput columns; best: the first row's figures (NULL: not wanted;
 * best->run 0 when none finished). */
void plan_ranking_print(const plan_info_t *in, plan_layout_t *l, long finished, long top,
                          double tokens, const cli_plan_goodput_t *goodput, const char *db,
                          cli_plan_row_t *best)
{
    qsort(l, (size_t)in->runs, sizeof *l, by_step_time);
    double tps = in->tokens_per_sample;
    cli_plan_basis_t basis = {.flops_per_sample = in->flops_per_sample,
                              .tokens_per_sample = tps,
                              .global_batch = in->global_batch,
                              .devices = in->devices,
                              .peak_flops = in->peak_flops,
                              .capacity = in->capacity,
                              .ckpt_bytes = in->ckpt_bytes,
                              .tokens = tokens,
                              .goodput = *goodput};
    printf("\nbest layouts of %s by step time (t tensor, p stages, d replicas, mb SIZExCOUNT "
           "micro-batches, z ZeRO stage, b%d gradient buckets of %d MB if any, cpC context "
           "groups of C if any, then the "
           "recomputation if any):\n",
           in->title, PLAN_BUCKET_MB, PLAN_BUCKET_MB);
    printf("%-4s %-40s %6s %12s %10s %10s %10s %11s %12s %6s %10s %12s %10s", "rank", "layout",
           "run", "s/step", "samples/s", "tokens/s", "memory GB", "headroom GB", "TFLOP/s/dev",
           "%peak", "kJ/step", "$/1k samples", "$/M tokens");
    if (tokens > 0)
        printf(" %9s %9s %11s", "days", "MWh", "$");
    printf(" %10s %8s", "ckpt/steps", "goodput");
    if (tokens > 0)
        printf(" %10s %11s", "days+fail", "$+fail");
    printf("\n");
    if (best)
        memset(best, 0, sizeof *best);
    char c[14][32];
    for (long i = 0, shown = 0; i < in->runs && shown < top; i++) {
        const plan_layout_t *x = &l[i];
        if (!x->run)
            continue;
        cli_plan_row_t r = {.run = x->run};
        plan_layout_name(x, r.layout, sizeof r.layout);
        cli_plan_row_compute(&basis, x->step_s, x->samples_s, x->mem_bytes, x->joules,
                             x->dollars_per_sample, &r);
        if (best && !shown)
            *best = r;
        printf("%-4ld %-40s %6lld %12.6g %10.4g %10s %10.4g %11s %12.4g %6s %10s %12s %10s",
               ++shown, r.layout, r.run, r.step_s, r.samples_s,
               plan_cell(c[0], 32, "%.4g", r.tokens_s), r.mem_gb, plan_cell(c[1], 32, "%.4g", r.headroom_gb),
               r.tflops_dev, plan_cell(c[2], 32, "%.3g", r.peak_pct), plan_cell(c[3], 32, "%.4g", r.kj_step),
               plan_cell(c[4], 32, "%.4g", r.per_1k_samples), plan_cell(c[5], 32, "%.4g", r.per_m_tokens));
        if (tokens > 0)
            printf(" %9s %9s %11s", plan_cell(c[6], 32, "%.4g", r.days), plan_cell(c[7], 32, "%.4g", r.mwh),
                   plan_cell(c[8], 32, "%.4g", r.dollars));
        if (r.ckpt_steps)
            snprintf(c[11], 32, "%ld", r.ckpt_steps);
        printf(" %10s %8s", r.ckpt_steps ? c[11] : "-", plan_cell(c[12], 32, "%.4f", r.goodput));
        if (tokens > 0)
            printf(" %10s %11s", plan_cell(c[13], 32, "%.4g", r.days_fail),
                   plan_cell(c[6], 32, "%.4g", r.dollars_fail));
        printf("\n");
    }
    if (in->pruned)
        printf("pruned %ld of %ld layouts: their lower bound exceeds the best simulated step "
               "(%.6g s)\n", in->pruned, in->runs, in->best_bound);
    if (in->capped)
        printf("not simulated %ld of %ld layouts: past --max-runs, by their lower bound\n",
               in->capped, in->runs);
    if (finished + in->pruned + in->capped < in->runs) {
        char again[sizeof in->options + PATH_MAX + 64];
        plan_again(in, db, again, sizeof again);
        printf("PARTIAL: %ld of %ld layouts simulated, the ranking is of those; to simulate the "
               "rest: dtsim plan %s --resume\n",
               finished, in->runs - in->pruned - in->capped, again);
    }
    printf("TFLOP/s/dev: the profile's %.4g FLOP per sample (forward and backward, no "
           "recomputation) x %.0f samples / s/step / %.0f devices; %%peak: of the device's "
           "%s peak, %s TFLOP/s\n",
           in->flops_per_sample, in->global_batch, in->devices, in->precision,
           plan_cell(c[9], 32, "%.6g", in->peak_flops / 1e12));
    printf("headroom: the device's %s GB less the fullest device's memory; kJ/step: hosts and "
           "links; $: cluster.price_per_device_hour and cluster.price_per_port_hour (- without)\n",
           plan_cell(c[10], 32, "%.6g", in->capacity / 1e9));
    if (tps > 0)
        printf("tokens: %.0f per sample (the profile's sample)%s\n", tps,
               tokens > 0 ? "; days, MWh, $: to train --tokens at each layout's step time, "
                            "energy and price"
                          : "");
    printf("goodput: the useful share of wall time when any device's failure (MTBF %.6g h a "
           "device) stops the job, which restarts (%.6g s) from its last checkpoint of %s GB "
           "written at %.6g MB/s a device every ckpt/steps steps (Daly's interval)%s\n",
           goodput->mtbf_device_s / 3600, goodput->restart_s,
           plan_cell(c[9], 32, "%.4g", in->ckpt_bytes / 1e9), goodput->ckpt_bw_device / 1e6,
           tokens > 0 ? "; days+fail, $+fail: to train --tokens with failures" : "");
    if (tokens > 0)
        printf("--tokens: %.6g tokens, %.6g steps of %.0f samples\n", tokens,
               tokens / (tps * in->global_batch), in->global_batch);
}

/* dtsim plan --show: the stored plan's ranking again, from the database alone. */
int plan_show(const plan_opts_t *o)
{
    dt_err_t err;
    char sweep[SCENARIO_STR + 64];
    plan_info_t *in = dt_calloc(1, sizeof *in);
    plan_layout_t *l = NULL;
    long finished = 0;
    int rc = CLI_EXIT_USAGE;
    results_query_t *q = NULL;
    dt_status st = results_query_open_current(&q, o->db, &err);
    if (st == DT_OK && o->sweep)
        snprintf(sweep, sizeof sweep, "%s", o->sweep);
    else if (st == DT_OK && (st = plan_find(q, NULL, sweep, sizeof sweep, &err)) == DT_OK &&
             !sweep[0])
        st = dt_err_input(&err, "%s holds no plan", o->db);
    results_query_close(q);
    if (st) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    if (plan_rank_read(o->db, sweep, 1, in, &l, &finished, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    if (o->tokens > 0 && !(in->tokens_per_sample > 0)) {
        cli_usage_error("plan", "--tokens %s: the plan's profile counts no tokens per sample",
                        o->tokens_text);
        goto done;
    }
    printf("plan %s (sweep %s in %s)\n", in->title, sweep, o->db);
    plan_ranking_print(in, l, finished, o->top, o->tokens, &o->goodput, o->db, NULL);
    rc = CLI_EXIT_OK;
done:
    free(l);
    free(in);
    return rc;
}
