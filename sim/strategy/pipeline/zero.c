/* ZeRO over a pipeline's replicas with the gradients' reduce-scatters behind the backward
 * pass (strategy.zero_grad_overlap; sim/docs/parallelism.md, Hybrid: replicas of a pipeline). As
 * Megatron-LM's distributed optimizer with overlap_grad_reduce, and FSDP under pipelining,
 * run it: the earlier micro-batches' backward passes add up whole gradients; during each
 * chunk's last backward pass of the step the stage's stream reduce-scatters its buckets
 * over the replicas as each becomes final (plan_buckets in plan.c, bucket_reduce in
 * pipeline.c); then replica d updates chunk d of every bucket and, below ZeRO stage 3,
 * all-gathers each bucket's weights. Elementwise, as every shard's update is, it trains
 * single's weights. Without the overlap, ZeRO's collectives of a whole slice
 * (pipe_zero_slice_update and the two before it).
 *
 * ZeRO stage 3 with strategy.zero_prefetch: each pass's all-gather of its chunk's slice is
 * handed to the stream when the pass before it starts computing (FSDP's forward and
 * backward prefetch), the buckets' reduce-scatters queued behind it (pipe_zero_jobs).
 * The collectives themselves, as messages or in closed form, are dp_comm.c's. */
#include <stdio.h>

#include "pipeline_impl.h"

/* Chunk d of bucket k of chunk c's buckets: [*lo, *hi). */
static void bucket_shard(const pipe_plan_t *plan, int c, int k, int d, size_t *lo, size_t *hi)
{
    const sim_bucket_list_t *bk = &plan->bk[c];
    size_t n = bk->hi[k] - bk->lo[k];
    *lo = bk->lo[k] + n * (size_t)d / (size_t)plan->D;
    *hi = bk->lo[k] + n * (size_t)(d + 1) / (size_t)plan->D;
}

void pipe_zero_mean(sim_run_t *run, const pipe_plan_t *plan, int d, int c, float *g, double *sq)
{
    float mean = 1.0f / (float)(plan->M * plan->D);
    for (int k = 0; k < plan->bk[c].n; k++) { /* chunk d of each bucket, reduced by the stream */
        size_t lo, hi;
        bucket_shard(plan, c, k, d, &lo, &hi);
        run->be->scale(hi - lo, mean, g + lo);
        if (sq)
            *sq += run->be->sumsq(g + lo, hi - lo);
    }
}

sim_status_t pipe_zero_update(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                              int d, int c, const pipe_optim_t *o, float clip)
{
    const sim_bucket_list_t *bk = &plan->bk[c];
    for (int k = 0; k < bk->n; k++) {
        size_t lo, hi;
        bucket_shard(plan, c, k, d, &lo, &hi);
        pipe_optim_apply(run, o, lo, hi - lo, clip);
    }
    for (int k = 0; k < bk->n && plan->zero < 3; k++) {
        sim_status_t e =
            pipe_dp_allgather(run, plan, grp, d, o->w + bk->lo[k], bk->hi[k] - bk->lo[k]);
        if (e != SIM_OK)
            return e;
    }
    return SIM_OK;
}

double pipe_zero_bucket_bytes(const scenario_t *sc, double value_bytes, int replicas)
{
    if (sc->bucket_mb > 0)
        return sc->bucket_mb * 1e6;
    double params = 1e6 * replicas > 40e6 ? 1e6 * replicas : 40e6;
    return params * value_bytes;
}

void pipe_zero_jobs(pipe_plan_t *plan, int s, const char *op, const int *ch, int n_ops)
{
    int total = n_ops, nb[PIPE_MAX_CHUNKS] = {0}, backwards[PIPE_MAX_CHUNKS] = {0};
    for (int v = 0; v < plan->V; v++)
        total += plan->bucketed ? plan->bk[v * plan->S + s].n : 0;
    sim_bucket_list_t *l = &plan->zjobs[s];
    l->lo = dt_calloc((size_t)total, sizeof(size_t));
    l->hi = dt_calloc((size_t)total, sizeof(size_t));
    plan->zkind[s] = dt_calloc((size_t)total, 1);
    plan->zgather[s] = dt_calloc((size_t)n_ops, sizeof(int));
    for (int k = 0; k < n_ops; k++)
        if (op[k] == 'B')
            backwards[ch[k]]++;
    for (int k = 0; k <= n_ops; k++) {
        if (k < n_ops) { /* op k's gather: handed as op k - 1 starts (op 0: as it starts) */
            int c = ch[k] * plan->S + s;
            plan->zgather[s][k] = l->n;
            l->lo[l->n] = plan->p0[c];
            l->hi[l->n] = plan->p1[c];
            plan->zkind[s][l->n++] = 'G';
        }
        /* op k - 1's buckets, after its compute: its chunk's last backward pass */
        int j = k - 1;
        if (j < 0 || op[j] != 'B' || ++nb[ch[j]] < backwards[ch[j]] || !plan->bucketed)
            continue;
        const sim_bucket_list_t *b = &plan->bk[ch[j] * plan->S + s];
        for (int q = 0; q < b->n; q++) {
            l->lo[l->n] = b->lo[q];
            l->hi[l->n] = b->hi[q];
            plan->zkind[s][l->n++] = 'R';
        }
    }
    DT_ASSERT(l->n == total);
}

sim_status_t pipe_zero_shard_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *g, float *acc, size_t n, int first)
{
    sim_status_t st = plan->dp_formula || plan->dp_nccl
                          ? pipe_dp_reduce_scatter(run, plan, grp, d, g, n)
                          : sim_reduce_scatter(run, grp, d, g, n * (size_t)plan->fold);
    if (st != SIM_OK || run->timing_only)
        return st;
    size_t lo = n * (size_t)d / (size_t)plan->D, hi = n * (size_t)(d + 1) / (size_t)plan->D;
    if (first)
        run->be->copy(acc + lo, g + lo, sizeof(float) * (hi - lo));
    else
        run->be->axpy(hi - lo, 1.0f, g + lo, acc + lo);
    return SIM_OK;
}

sim_status_t pipe_zero_gather_slice(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *w, size_t n)
{
    if (plan->zero < 3 || plan->D < 2)
        return SIM_OK;
    return plan->dp_formula || plan->dp_nccl
               ? pipe_dp_allgather(run, plan, grp, d, w, n)
               : sim_allgather(run, grp, d, w, n * (size_t)plan->fold);
}

sim_status_t pipe_zero_slice_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *g, const float *acc, size_t n, double *sq)
{
    int D = plan->D;
    float mean = 1.0f / (float)(plan->M * D);
    size_t lo = n * (size_t)d / (size_t)D, hi = n * (size_t)(d + 1) / (size_t)D;
    sim_status_t st;
    if (plan->zero == 1 && (st = plan->dp_formula || plan->dp_nccl
                                     ? pipe_dp_reduce_scatter(run, plan, grp, d, g, n)
                                     : sim_reduce_scatter(run, grp, d, g, n * (size_t)plan->fold)))
        return st;
    if (plan->zero >= 2 && !run->timing_only)
        run->be->copy(g + lo, acc + lo, sizeof(float) * (hi - lo));
    run->be->scale(hi - lo, mean, g + lo);
    if (sq)
        *sq += run->be->sumsq(g + lo, hi - lo);
    return SIM_OK;
}

sim_status_t pipe_zero_slice_update(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, const pipe_optim_t *o, size_t p0, size_t n, float clip)
{
    size_t lo = n * (size_t)d / (size_t)plan->D, hi = n * (size_t)(d + 1) / (size_t)plan->D;
    pipe_optim_apply(run, o, p0 + lo, hi - lo, clip);
    if (plan->zero >= 3)
        return SIM_OK;
    float *w = o->w + p0;
    return plan->dp_formula || plan->dp_nccl
               ? pipe_dp_allgather(run, plan, grp, d, w, n)
               : sim_allgather(run, grp, d, w, n * (size_t)plan->fold);
}

void pipe_zero_summary(const pipe_plan_t *plan, char *line, size_t size)
{
    int n = 0;
    if (plan->zero_overlap)
        n = snprintf(line, size,
                     "; ZeRO-%d's reduce-scatters in buckets behind each chunk's last backward "
                     "pass%s",
                     plan->zero, plan->zero_prefetch ? ", its gathers prefetched" : "");
    else if (plan->zero_prefetch)
        n = snprintf(line, size, "; ZeRO-3's gathers prefetched");
    if (n >= (int)size)
        return;
    if (plan->dp_formula)
        snprintf(line + n, size - (size_t)n,
                 "; the replicas' collectives in closed form (dp_comm = formula; contention "
                 "with other traffic left out)");
    else if (plan->dp_why && plan->dp_key == SIM_DP_FORMULA)
        snprintf(line + n, size - (size_t)n,
                 "; the replicas' collectives as messages (dp_comm = formula, but %s)",
                 plan->dp_why);
}
