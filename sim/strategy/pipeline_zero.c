/* ZeRO over a pipeline's replicas with the gradients' reduce-scatters behind the backward
 * pass (strategy.zero_grad_overlap; sim/docs/parallelism.md, Hybrid: replicas of a pipeline). As
 * Megatron-LM's distributed optimizer with overlap_grad_reduce, and FSDP under pipelining,
 * run it: the earlier micro-batches' backward passes add up whole gradients; during each
 * chunk's last backward pass of the step the stage's stream reduce-scatters its buckets
 * over the replicas as each becomes final (plan_buckets, bucket_reduce in pipeline.c); then
 * replica d updates chunk d of every bucket and, below ZeRO stage 3, all-gathers each
 * bucket's weights. Elementwise, as every shard's update is, it trains single's weights.
 * Without the overlap, ZeRO's collectives of a whole slice (pipe_zero_slice_update and the
 * two before it).
 *
 * ZeRO stage 3 with strategy.zero_prefetch: each pass's all-gather of its chunk's slice is
 * handed to the stream when the pass before it starts computing (FSDP's forward and
 * backward prefetch), the buckets' reduce-scatters queued behind it (pipe_zero_jobs).
 *
 * strategy.dp_comm = formula: the collectives over a stage's replicas (reduce-scatters,
 * all-gathers, ring all-reduces) as one wait of their ring steps in closed form
 * (pipe_ring_step), where the replicas' rings are alike on the fabric (pipe_plan_dp_formula);
 * the stream is then a timeline with no actor (sim_buckets_start_timed, bucket_seconds in
 * pipeline.c). */
#include <stdio.h>

#include "pipeline_impl.h"

double pipe_dp_phase_seconds(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node,
                             size_t n)
{
    int D = plan->D;
    double chunk = run->value_bytes * (double)n / D;
    double sent = (D - 1) * chunk * plan->fold;
    node->bytes_sent += sent;
    node->bytes_recv += sent;
    run->bytes_total += sent;
    return (D - 1) * (plan->dp_a + plan->dp_c * chunk);
}

/* dp_comm = formula: the phase waited by the member. */
static void dp_phase_formula(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node,
                             size_t n)
{
    sim_comm_wait(run, node, pipe_dp_phase_seconds(run, plan, node, n));
}

void pipe_plan_dp_formula(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    plan->dp_key = (int)scenario_own(sc, "dp_comm")->i;
    if (plan->dp_key != SIM_DP_FORMULA || plan->D < 2)
        return;
    if (!run->timing_only) {
        plan->dp_why = "a real model's gradients are summed by messages";
        return;
    }
    /* the stages reduce at different times (the last stage's backward passes end first):
     * a rack's uplink is shared as the closed form says only by hosts of one stage */
    int hosts = run->n_workers, racks = sc->racks < hosts ? (int)sc->racks : hosts;
    if (sc->platform == SIM_PLATFORM_MULTI_RACK && plan->S > 1 && hosts / racks > plan->T) {
        plan->dp_why = "a rack holds hosts of more than one stage, whose collectives come at "
                       "other times";
        return;
    }
    double big = 1e9, a = pipe_ring_step(sc, plan->S * plan->T, plan->D, 0);
    double b = pipe_ring_step(sc, plan->S * plan->T, plan->D, big);
    if (a < 0 || b < 0) {
        plan->dp_why = "no closed form: a platform other than star or multi-rack, or the SMPI "
                       "model";
        return;
    }
    plan->dp_a = a;
    plan->dp_c = (b - a) / big;
    plan->dp_formula = 1;
}

sim_status_t pipe_ring_allreduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                               int d, float *buf, size_t n, sim_allreduce_algo_t algo)
{
    if (plan->dp_formula && algo == SIM_ALLREDUCE_RING) {
        dp_phase_formula(run, plan, grp->members[d], n);
        dp_phase_formula(run, plan, grp->members[d], n);
        return SIM_OK;
    }
    return sim_allreduce(run, grp, d, buf, n * (size_t)plan->fold, algo);
}

sim_status_t pipe_ring_reduce_scatter(sim_run_t *run, const pipe_plan_t *plan,
                                    const sim_group_t *grp, int d, float *buf, size_t n)
{
    size_t m = n * (size_t)plan->fold; /* tensor_members = one: the group's bytes */
    if (plan->dp_formula) {
        dp_phase_formula(run, plan, grp->members[d], n);
        return SIM_OK;
    }
    if (run->timing_only && run->sc->ring_messages == SIM_RING_PHASES && grp->size > 2) {
        sim_status_t e = sim_ring_phase(run, grp, d, buf, m, 0);
        sim_exchange_done();
        return e;
    }
    return sim_reduce_scatter(run, grp, d, buf, m);
}

sim_status_t pipe_ring_allgather(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                               int d, float *buf, size_t n)
{
    size_t m = n * (size_t)plan->fold;
    if (plan->dp_formula) {
        dp_phase_formula(run, plan, grp->members[d], n);
        return SIM_OK;
    }
    if (run->timing_only && run->sc->ring_messages == SIM_RING_PHASES && grp->size > 2) {
        sim_status_t e = sim_ring_phase(run, grp, d, buf, m, 1);
        sim_exchange_done();
        return e;
    }
    return sim_allgather(run, grp, d, buf, m);
}

sim_status_t pipe_zero_update(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                              int d, int c, float *w, float *g, float *v, long step)
{
    const sim_bucket_list_t *bk = &plan->bk[c];
    int D = plan->D;
    float mean = 1.0f / (float)(plan->M * D);
    for (int k = 0; k < bk->n; k++) { /* chunk d of each bucket, reduced by the stream */
        size_t n = bk->hi[k] - bk->lo[k];
        size_t lo = bk->lo[k] + n * (size_t)d / (size_t)D;
        size_t hi = bk->lo[k] + n * (size_t)(d + 1) / (size_t)D;
        run->be->scale(hi - lo, mean, g + lo);
        sim_sgd(run, w + lo, g + lo, v + lo, hi - lo, step);
    }
    for (int k = 0; k < bk->n && plan->zero < 3; k++) {
        sim_status_t e = pipe_dp_allgather(run, plan, grp, d, w + bk->lo[k],
                                           bk->hi[k] - bk->lo[k]);
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

sim_status_t pipe_zero_shard_reduce(sim_run_t *run, const pipe_plan_t *plan,
                                    const sim_group_t *grp, int d, float *g, float *acc, size_t n,
                                    int first)
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

sim_status_t pipe_zero_gather_slice(sim_run_t *run, const pipe_plan_t *plan,
                                    const sim_group_t *grp, int d, float *w, size_t n)
{
    if (plan->zero < 3 || plan->D < 2)
        return SIM_OK;
    return plan->dp_formula || plan->dp_nccl ? pipe_dp_allgather(run, plan, grp, d, w, n)
                            : sim_allgather(run, grp, d, w, n * (size_t)plan->fold);
}

sim_status_t pipe_zero_slice_update(sim_run_t *run, const pipe_plan_t *plan,
                                    const sim_group_t *grp, int d, float *w, float *g, float *v,
                                    const float *acc, size_t n, long step)
{
    int D = plan->D;
    float mean = 1.0f / (float)(plan->M * D);
    size_t lo = n * (size_t)d / (size_t)D, hi = n * (size_t)(d + 1) / (size_t)D;
    sim_status_t st;
    if (plan->zero == 1 &&
        (st = plan->dp_formula || plan->dp_nccl ? pipe_dp_reduce_scatter(run, plan, grp, d, g, n)
                               : sim_reduce_scatter(run, grp, d, g, n * (size_t)plan->fold)))
        return st;
    if (plan->zero >= 2 && !run->timing_only)
        run->be->copy(g + lo, acc + lo, sizeof(float) * (hi - lo));
    run->be->scale(hi - lo, mean, g + lo);
    sim_sgd(run, w + lo, g + lo, v + lo, hi - lo, step);
    if (plan->zero >= 3)
        return SIM_OK;
    return plan->dp_formula || plan->dp_nccl ? pipe_dp_allgather(run, plan, grp, d, w, n)
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
