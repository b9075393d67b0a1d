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
    double step_x = x->run ? x->step_s : INFINITY, step_y = y->run ? y->step_s : INFINITY;
    if (step_x != step_y)
        return (step_x > step_y) - (step_x < step_y);
    return (x->index > y->index) - (x->index < y->index);
}

/* The list in one line: how many fit, how many were dropped for their memory and for what
 * else (the first such reason), and how to see each. */
static void list_summary(const plan_layout_t *layouts, long n)
{
    long fit = 0, memory = 0;
    const char *other = NULL; /* the first reason that is not memory */
    for (long i = 0; i < n; i++) {
        fit += layouts[i].fits;
        if (layouts[i].fits)
            continue;
        if (!strncmp(layouts[i].memory, "does not fit", 12))
            memory++;
        else if (!other)
            other = layouts[i].memory[0] ? layouts[i].memory : "no capacity stated";
    }
    printf("%ld layouts: %ld fit, %ld do not fit the device's memory", n, fit, memory);
    if (other)
        printf(", %ld cannot be simulated (%s)", n - fit - memory, other);
    printf(" (--verbose or --no-run lists each with its memory)\n");
}

void plan_list_print(const plan_layout_t *layouts, long n, int each)
{
    char name[64];
    if (!each) {
        list_summary(layouts, n);
        return;
    }
    printf("%-34s %s\n", "layout", "memory (dtsim check)");
    for (long i = 0; i < n; i++) {
        const plan_layout_t *layout = &layouts[i];
        plan_layout_name(layout, name, sizeof name);
        printf("%-34s %s %s\n", name, layout->fits ? "fits:" : "dropped:",
               layout->memory[0] ? layout->memory : "no capacity stated");
    }
}

/* The ranking's title and its columns' heads (tokens: --tokens, 0: none). */
static void ranking_head(const plan_info_t *in, double tokens)
{
    printf("\nbest layouts of %s by step time (t tensor, p stages, d replicas, mb SIZExCOUNT "
           "micro-batches, z ZeRO stage, rs its gradients reduce-scattered every micro-batch, "
           "b%d gradient buckets of %d MB if any, cpC context "
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
}

/* One ranked row, at rank (tokens: --tokens, 0: none). */
static void ranking_row(long rank, const cli_plan_row_t *row, double tokens)
{
    char cells[6][32];
    printf("%-4ld %-40s %6lld %12.6g %10.4g %10s %10.4g %11s %12.4g %6s %10s %12s %10s", rank,
           row->layout, row->run, row->step_s, row->samples_s,
           plan_cell(cells[0], 32, "%.4g", row->tokens_s), row->mem_gb,
           plan_cell(cells[1], 32, "%.4g", row->headroom_gb), row->tflops_dev,
           plan_cell(cells[2], 32, "%.3g", row->peak_pct),
           plan_cell(cells[3], 32, "%.4g", row->kj_step),
           plan_cell(cells[4], 32, "%.4g", row->per_1k_samples),
           plan_cell(cells[5], 32, "%.4g", row->per_m_tokens));
    plan_row_tail(row, tokens);
}

void plan_row_tail(const cli_plan_row_t *row, double tokens)
{
    char cells[7][32];
    if (tokens > 0)
        printf(" %9s %9s %11s", plan_cell(cells[0], 32, "%.4g", row->days),
               plan_cell(cells[1], 32, "%.4g", row->mwh),
               plan_cell(cells[2], 32, "%.4g", row->dollars));
    if (row->ckpt_steps)
        snprintf(cells[3], 32, "%ld", row->ckpt_steps);
    printf(" %10s %8s", row->ckpt_steps ? cells[3] : "-",
           plan_cell(cells[4], 32, "%.4f", row->goodput));
    if (tokens > 0)
        printf(" %10s %11s", plan_cell(cells[5], 32, "%.4g", row->days_fail),
               plan_cell(cells[6], 32, "%.4g", row->dollars_fail));
    printf("\n");
}

/* --breakdown: the ranked rows' steps in their parts (rows sorted, the first top that ran),
 * seconds each; they sum to s/step (the breakdown table, results/schema.sql). */
static void ranking_breakdown(const plan_layout_t *rows, long n, long top)
{
    char name[64], cell[32];
    printf("\nbreakdown of each ranked layout's step (simulated seconds, the mean device's; "
           "communication where it waited on it, not what ran behind compute):\n");
    printf("%-4s %-40s %12s", "rank", "layout", "s/step");
    for (int k = 0; k < RESULTS_PART_COUNT; k++)
        printf(" %10s", results_part_names[k]);
    printf("\n");
    for (long i = 0, shown = 0; i < n && shown < top; i++) {
        const plan_layout_t *layout = &rows[i];
        if (!layout->run)
            continue;
        plan_layout_name(layout, name, sizeof name);
        printf("%-4ld %-40s %12.6g", ++shown, name, layout->step_s);
        if (!layout->has_parts) {
            printf(" no breakdown stored\n");
            continue;
        }
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            printf(" %10s", plan_cell(cell, sizeof cell, "%.4g", layout->parts[k]));
        printf("\n");
    }
}

/* What was not simulated: pruned, past --max-runs, or not yet (the PARTIAL line, with how
 * to go on from db). */
static void ranking_skipped(const plan_info_t *in, long finished, const plan_opts_t *opts)
{
    if (in->pruned)
        printf("pruned %ld of %ld layouts: their lower bound exceeds the best simulated step "
               "(%.6g s)\n",
               in->pruned, in->runs, in->best_bound);
    if (in->capped)
        printf("not simulated %ld of %ld layouts: past --max-runs, by their lower bound\n",
               in->capped, in->runs);
    long owed = in->runs - in->pruned - in->capped; /* what the progress's total counts */
    if (finished < owed) {
        char again[sizeof in->options + PATH_MAX + 64];
        plan_again(in, opts, again, sizeof again);
        /* the others: ended unfinished (read back: stopped mid-run, failed), or not started */
        long unfinished = in->unfinished < owed - finished ? in->unfinished : owed - finished;
        printf("PARTIAL: %ld of %ld layouts simulated, the ranking is of those; %ld stopped "
               "mid-run or failed, %ld not started; to simulate the rest: dtsim plan %s "
               "--resume\n",
               finished, owed, unfinished, owed - finished - unfinished, again);
    }
}

/* What the columns are worked out from: the profile's and the device's figures, the failure
 * model (goodput) and --tokens (0: none). */
static void ranking_notes(const plan_info_t *in, double tokens, const cli_plan_goodput_t *goodput)
{
    char cell[32];
    double tps = in->tokens_per_sample;
    printf("TFLOP/s/dev: the profile's %.4g FLOP per sample (forward and backward, no "
           "recomputation) x %.0f samples / s/step / %.0f devices; %%peak: of the device's "
           "%s peak, %s TFLOP/s\n",
           in->flops_per_sample, in->global_batch, in->devices, in->precision,
           plan_cell(cell, sizeof cell, "%.6g", in->peak_flops / 1e12));
    char margin[32];
    printf("headroom: the device's %s GB less the fullest device's memory, at least %s GB to "
           "fit (--memory-margin); kJ/step: hosts and links; $: cluster.price_per_device_hour "
           "and cluster.price_per_port_hour (- without)\n",
           plan_cell(cell, sizeof cell, "%.6g", in->capacity / 1e9),
           plan_cell(margin, sizeof margin, "%.3g", in->margin / 1e9));
    if (tps > 0)
        printf("tokens: %.0f per sample (the profile's sample)%s\n", tps,
               tokens > 0 ? "; days, MWh, $: to train --tokens at each layout's step time, "
                            "energy and price"
                          : "");
    printf("goodput: the useful share of wall time when any device's failure (MTBF %.6g h a "
           "device) stops the job, which restarts (%.6g s) from its last checkpoint of %s GB "
           "written at %.6g MB/s a device every ckpt/steps steps (Daly's interval)%s\n",
           goodput->mtbf_device_s / 3600, goodput->restart_s,
           plan_cell(cell, sizeof cell, "%.4g", in->ckpt_bytes / 1e9),
           goodput->ckpt_bw_device / 1e6,
           tokens > 0 ? "; days+fail, $+fail: to train --tokens with failures" : "");
    if (tokens > 0)
        printf("--tokens: %.6g tokens, %.6g steps of %.0f samples\n", tokens,
               tokens / (tps * in->global_batch), in->global_batch);
}

/* The ranking of the plan's finished runs (rows: in->runs, sorted here), then, when some
 * are missing, the PARTIAL line and how to go on; the same from the plan and from --show, as
 * everything in it comes from in and the database. tokens: --tokens (0: none); goodput: the
 * failure model of the goodput columns; best: the first row's figures (NULL: not wanted;
 * best->run 0 when none finished). */
void plan_ranking_print(const plan_info_t *in, plan_layout_t *rows, long finished,
                        const plan_opts_t *opts, cli_plan_row_t *best)
{
    long top = opts->top;
    double tokens = opts->tokens;
    const cli_plan_goodput_t *goodput = &opts->goodput;
    qsort(rows, (size_t)in->runs, sizeof *rows, by_step_time);
    cli_plan_basis_t basis = {.flops_per_sample = in->flops_per_sample,
                              .tokens_per_sample = in->tokens_per_sample,
                              .global_batch = in->global_batch,
                              .devices = in->devices,
                              .peak_flops = in->peak_flops,
                              .capacity = in->capacity,
                              .ckpt_bytes = in->ckpt_bytes,
                              .tokens = tokens,
                              .goodput = *goodput};
    ranking_head(in, tokens);
    if (best)
        memset(best, 0, sizeof *best);
    for (long i = 0, shown = 0; i < in->runs && shown < top; i++) {
        const plan_layout_t *layout = &rows[i];
        if (!layout->run)
            continue;
        cli_plan_row_t row = {.run = layout->run};
        plan_layout_name(layout, row.layout, sizeof row.layout);
        cli_plan_row_compute(&basis, layout->step_s, layout->samples_s, layout->mem_bytes,
                             layout->joules, layout->dollars_per_sample, &row);
        if (best && !shown)
            *best = row;
        ranking_row(++shown, &row, tokens);
    }
    if (opts->breakdown)
        ranking_breakdown(rows, in->runs, top);
    ranking_skipped(in, finished, opts);
    ranking_notes(in, tokens, goodput);
}

/* dtsim plan --show: the stored plan's ranking again, from the database alone. */
int plan_show(const plan_opts_t *opts)
{
    dt_err_t err;
    char sweep[SCENARIO_STR + 64];
    plan_info_t *in = dt_calloc(1, sizeof *in);
    plan_layout_t *rows = NULL;
    long finished = 0;
    int rc = CLI_EXIT_USAGE;
    results_query_t *query = NULL;
    dt_status st = results_query_open_current(&query, opts->db, &err);
    if (st == DT_OK && opts->sweep)
        snprintf(sweep, sizeof sweep, "%s", opts->sweep);
    else if (st == DT_OK && (st = plan_find(query, NULL, sweep, sizeof sweep, &err)) == DT_OK &&
             !sweep[0])
        st = dt_err_input(&err, "%s holds no plan", opts->db);
    results_query_close(query);
    if (st) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    if (plan_rank_read(opts->db, sweep, 1, in, &rows, &finished, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    if (opts->tokens > 0 && !(in->tokens_per_sample > 0)) {
        cli_usage_error("plan", "--tokens %s: the plan's profile counts no tokens per sample",
                        opts->tokens_text);
        goto done;
    }
    printf("plan %s (sweep %s in %s)\n", in->title, sweep, opts->db);
    plan_ranking_print(in, rows, finished, opts, NULL);
    rc = CLI_EXIT_OK;
done:
    free(rows);
    free(in);
    return rc;
}
