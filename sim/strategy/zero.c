/* zero: sharded data parallelism (ZeRO, Rajbhandari et al. 2020). Every worker computes the
 * gradient of its own batch on the whole model, as allreduce does; then the gradients are
 * reduce-scattered (worker r gets the sum of shard r, chunk r of the flat buffer), each
 * worker updates its shard with the optimizer state of that shard alone, and the parameters
 * are all-gathered back. Stage 1 shards the optimizer state, stage 2 the gradients too (only
 * the reduced shard is kept), stage 3 the parameters too: a worker keeps its shard and
 * all-gathers the whole model before the forward pass and again before the backward pass,
 * so a step moves 3 (p-1)/p of the model per worker instead of all-reduce's 2 (p-1)/p. The
 * arithmetic is data parallelism's: the same weights as one worker with the global batch
 * (tested).
 *
 * The simulation keeps a whole buffer per worker (the memory table records what ZeRO keeps);
 * the real gradient is computed in one pass and its simulated time charged as forward, then
 * (stage 3) the backward all-gather, then backward. Stage 3 evaluates at the next forward
 * all-gather (recorded at the time the step ended) and all-gathers once more at the end.
 *
 * Overlap (strategy.zero_grad_overlap, stages 2 and 3; strategy.zero_prefetch, stage 3):
 * every collective goes bucket by bucket (bucket.h's buckets of the model, bucket_mb or
 * Megatron-LM's size) and the ones overlapped run on the worker's stream, in the order FSDP
 * issues them: each bucket's gather when the previous bucket's compute starts (forward
 * order, then backward order), each bucket's reduce-scatter once its backward is charged.
 * Replica r updates chunk r of every bucket. The forward FLOPs are shared among the buckets
 * as their backward FLOPs are. */
#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "collective.h"
#include "strategy.h"

/* The overlapped collectives of a run (zero_bucketed): the model's buckets, and the jobs
 * a worker's stream runs each step, in the order the worker hands them over. */
typedef struct zero_plan {
    sim_bucket_list_t bk;     /* backward order */
    double forward, backward; /* FLOPs per sample: the forward pass, the buckets' sum */
    int overlap, prefetch;    /* reduce-scatters, gathers on the stream */
    sim_bucket_list_t jobs;   /* the stream's, slices of the buffers */
    char *kind;               /* (jobs.n) 'G' all-gather of params, 'R' reduce-scatter */
    int *gather_bwd;          /* (bk.n) zero_prefetch: the job gathering bucket k for the
                                 backward pass (the forward's bucket k: job bk.n - 1 - k) */
} zero_plan_t;

typedef struct zero_worker {
    uint32_t *idx;
    long pending_step; /* worker 0, stage 3: an evaluation of this step is due */
    double pending_time;
    const zero_plan_t *zp;         /* NULL: no buckets */
    int handed, awaited, run_jobs; /* the step's jobs handed, waited for; the stream's count */
    double per_flop;               /* measured time: the last step's wall seconds a FLOP */
} zero_worker_t;

static void zero_free(sim_node_t *node)
{
    free(((zero_worker_t *)node->state)->idx);
}

static void zero_plan_free(sim_run_t *run, void *ctx)
{
    (void)run;
    zero_plan_t *zp = ctx;
    sim_bucket_list_free(&zp->bk);
    sim_bucket_list_free(&zp->jobs);
    free(zp->kind);
    free(zp->gather_bwd);
    free(zp);
}

/* Stages 2 and 3 with zero_grad_overlap, stage 3 with zero_prefetch: collectives by bucket. */
static int zero_bucketed(const scenario_t *sc, int stage)
{
    return (stage >= 2 && scenario_own(sc, "zero_grad_overlap")->i) ||
           (stage >= 3 && scenario_own(sc, "zero_prefetch")->i);
}

static void add_job(zero_plan_t *zp, int k, char kind)
{
    zp->jobs.lo[zp->jobs.n] = zp->bk.lo[k];
    zp->jobs.hi[zp->jobs.n] = zp->bk.hi[k];
    zp->kind[zp->jobs.n++] = kind;
}

static zero_plan_t *zero_plan_make(sim_run_t *run, int stage)
{
    const scenario_t *sc = run->sc;
    zero_plan_t *zp = dt_calloc(1, sizeof *zp);
    double cap = sc->bucket_mb > 0
                     ? sc->bucket_mb * 1e6
                     : run->value_bytes * (run->n_workers > 40 ? 1e6 * run->n_workers : 40e6);
    zp->forward = sim_bucket_list_model(&zp->bk, run, cap);
    for (int k = 0; k < zp->bk.n; k++)
        zp->backward += zp->bk.flops[k];
    zp->overlap = stage >= 2 && scenario_own(sc, "zero_grad_overlap")->i;
    zp->prefetch = stage >= 3 && scenario_own(sc, "zero_prefetch")->i;
    int B = zp->bk.n;
    zp->jobs.lo = dt_calloc((size_t)(3 * B), sizeof(size_t));
    zp->jobs.hi = dt_calloc((size_t)(3 * B), sizeof(size_t));
    zp->kind = dt_calloc((size_t)(3 * B), 1);
    zp->gather_bwd = dt_calloc((size_t)B, sizeof(int));
    for (int i = 0; i < B && zp->prefetch; i++) /* the forward's, first layers first */
        add_job(zp, B - 1 - i, 'G');
    if (zp->prefetch) { /* the backward's first, during the forward's last bucket */
        zp->gather_bwd[0] = zp->jobs.n;
        add_job(zp, 0, 'G');
    }
    for (int k = 0; k < B; k++) {
        if (zp->prefetch && k + 1 < B) {
            zp->gather_bwd[k + 1] = zp->jobs.n;
            add_job(zp, k + 1, 'G');
        }
        if (zp->overlap)
            add_job(zp, k, 'R');
    }
    sim_run_on_free(run, zero_plan_free, zp);
    return zp;
}

/* A worker's stream: its next job, a bucket's gather of the parameters or reduce-scatter
 * of the gradients (buf: the bucket's slice of node->grads). */
static sim_status_t stream_job(sim_run_t *run, sim_node_t *node, float *buf, size_t n)
{
    sim_groups_t *g = run->shared;
    zero_worker_t *z = node->state;
    const zero_plan_t *zp = z->zp;
    int j = z->run_jobs++ % zp->jobs.n;
    if (zp->kind[j] == 'G')
        return sim_allgather(run, &g->all, node->rank, node->params + (buf - node->grads), n);
    return sim_reduce_scatter(run, &g->all, node->rank, buf, n);
}

static void hand_job(sim_run_t *run, sim_node_t *node, zero_worker_t *z)
{
    if (z->handed < z->zp->jobs.n) {
        z->handed++;
        sim_buckets_ready(run, node);
    }
}

/* Returns once the stream has run the step's job j (and every job before it). */
static void wait_job(sim_run_t *run, sim_node_t *node, zero_worker_t *z, int j)
{
    while (z->awaited <= j) {
        sim_buckets_wait(run, node);
        z->awaited++;
    }
}

static int gather_params(sim_run_t *run, sim_node_t *node, float *w)
{
    sim_groups_t *g = run->shared;
    if (sim_allgather(run, &g->all, node->rank, w, run->n_params) != SIM_OK) {
        run->failed = 1;
        return -1;
    }
    return 0;
}

static void evaluate_pending(sim_run_t *run, sim_node_t *node, zero_worker_t *z)
{
    if (node->rank == 0 && z->pending_step >= 0) {
        sim_evaluate_at(run, z->pending_step, node->params, z->pending_time);
        z->pending_step = -1;
    }
}

/* Every bucket's parameters all-gathered in turn (chunk r of each is worker r's). */
static int gather_buckets(sim_run_t *run, sim_node_t *node, const zero_plan_t *zp)
{
    sim_groups_t *g = run->shared;
    for (int k = 0; k < zp->bk.n; k++)
        if (sim_allgather(run, &g->all, node->rank, node->params + zp->bk.lo[k],
                          zp->bk.hi[k] - zp->bk.lo[k]) != SIM_OK) {
            run->failed = 1;
            return -1;
        }
    return 0;
}

/* A step with the collectives by bucket (zero_plan): the forward pass bucket by bucket (stage
 * 3: each bucket's gather waited for, the next one's handed to the stream as its compute
 * starts, or gathered in turn without zero_prefetch), the real gradient once the weights
 * are whole, the backward pass bucket by bucket (each bucket's reduce-scatter handed over
 * after its compute, or all in turn after the pass without zero_grad_overlap), then chunk r
 * of every bucket updated and, below stage 3, every bucket gathered. */
static void step_bucketed(sim_run_t *run, sim_node_t *node, zero_worker_t *z, long step, int stage)
{
    const scenario_t *sc = run->sc;
    const zero_plan_t *zp = z->zp;
    sim_groups_t *g = run->shared;
    int p = run->n_workers, r = node->rank, B = zp->bk.n, acc = (int)sc->accumulate;
    int batch = (int)sc->batch;
    double samples = (double)batch * acc;
    float *w = node->params;
    z->handed = z->awaited = 0;
    for (int i = 0; i < B; i++) {
        int k = B - 1 - i; /* forward order */
        size_t lo = zp->bk.lo[k], hi = zp->bk.hi[k];
        if (zp->prefetch) {
            if (i == 0)
                hand_job(run, node, z);
            wait_job(run, node, z, i);
            hand_job(run, node, z); /* the next bucket's, while this one computes */
        } else if (stage >= 3 && sim_allgather(run, &g->all, r, w + lo, hi - lo) != SIM_OK) {
            run->failed = 1;
            return;
        }
        double f = zp->forward * samples * zp->bk.flops[k] / zp->backward;
        sim_charge(run, node, f, f * z->per_flop);
    }
    if (stage >= 3)
        evaluate_pending(run, node, z);
    double loss = 0, wall = 0;
    for (int a = 0; a < acc; a++) {
        if (sc->partition.kind == TRAINER_PARTITION_IID)
            sim_batch_global(run, step, r * acc + a, batch, z->idx);
        else
            sim_batch_own(run, node, batch, z->idx);
        double wa;
        loss += sim_compute_grad_only(run, w, a ? node->scratch : node->grads, z->idx, batch, &wa);
        wall += wa;
        if (a)
            run->be->axpy(run->n_params, 1.0f, node->scratch, node->grads);
    }
    if (acc > 1)
        run->be->scale(run->n_params, 1.0f / (float)acc, node->grads);
    z->per_flop = wall / (run->step_flops * samples);
    for (int k = 0; k < B; k++) {
        size_t lo = zp->bk.lo[k], hi = zp->bk.hi[k];
        if (zp->prefetch) {
            wait_job(run, node, z, zp->gather_bwd[k]);
            if (k + 1 < B)
                hand_job(run, node, z);
        } else if (stage >= 3 && sim_allgather(run, &g->all, r, w + lo, hi - lo) != SIM_OK) {
            run->failed = 1;
            return;
        }
        double f = zp->bk.flops[k] * samples + (acc - 1.0) * (double)(hi - lo);
        sim_charge(run, node, f, zp->bk.flops[k] * samples * z->per_flop);
        if (zp->overlap)
            hand_job(run, node, z);
    }
    sim_count_step(run, node, batch * acc, loss / acc);
    if (zp->overlap)
        wait_job(run, node, z, zp->jobs.n - 1);
    /* with model.clip_norm every chunk is reduced, then the norm summed over the workers,
     * before any chunk is updated */
    int clip = run->sc->sgd.clip_norm > 0.0f;
    double sq = 0;
    float factor = 1.0f;
    for (int pass = 0; pass < 1 + clip; pass++) {
        /* the workers' sum of their chunks' squares: the whole model's norm */
        if (pass == 1 && (factor = sim_clip_factor_sum(run, node, &g->all, r, sq)) < 0.0f) {
            run->failed = 1;
            return;
        }
        for (int k = 0; k < B; k++) {
            size_t lo = zp->bk.lo[k], len = zp->bk.hi[k] - lo;
            size_t c0 = lo + len * (size_t)r / (size_t)p;
            size_t c1 = lo + len * (size_t)(r + 1) / (size_t)p;
            if (pass == 0) {
                if (!zp->overlap &&
                    sim_reduce_scatter(run, &g->all, r, node->grads + lo, len) != SIM_OK) {
                    run->failed = 1;
                    return;
                }
                run->be->scale(c1 - c0, 1.0f / (float)p, node->grads + c0);
                if (clip)
                    sq += run->be->sumsq(node->grads + c0, c1 - c0);
            }
            if (pass < clip)
                continue;
            if (factor != 1.0f)
                run->be->scale(c1 - c0, factor, node->grads + c0);
            sim_update(run, w + c0, node->grads + c0, node->velocity + c0, sim_moment2(node, c0),
                       c1 - c0, step, step + 1);
        }
    }
    if (stage < 3) {
        if (gather_buckets(run, node, zp))
            return;
        if (r == 0)
            sim_eval_mark(run, step, w);
    } else if (r == 0 && sim_eval_due(run, step + 1)) {
        z->pending_step = step + 1;
        z->pending_time = sim_now();
    }
}

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    const scenario_t *sc = run->sc;
    sim_groups_t *g = run->shared;
    int p = run->n_workers, r = node->rank, stage = (int)scenario_own(sc, "zero_stage")->l;
    size_t n = run->n_params, lo = n * (size_t)r / (size_t)p, hi = n * (size_t)(r + 1) / (size_t)p;
    zero_worker_t *z = node->state; /* (deploy) */
    float *w = node->params;
    long step;
    for (step = 0; !sim_should_stop(run, step) && !run->ended; step++) {
        if (z->zp) {
            step_bucketed(run, node, z, step, stage);
            if (run->failed)
                return;
            continue;
        }
        if (stage >= 3) { /* the whole model for the forward pass */
            if (gather_params(run, node, w))
                return;
            evaluate_pending(run, node, z);
        }
        int acc = (int)sc->accumulate, batch = (int)sc->batch;
        double loss = 0, wall = 0;
        for (int j = 0; j < acc; j++) {
            if (sc->partition.kind == TRAINER_PARTITION_IID)
                sim_batch_global(run, step, r * acc + j, batch, z->idx);
            else
                sim_batch_own(run, node, batch, z->idx);
            double wj;
            loss +=
                sim_compute_grad_only(run, w, j ? node->scratch : node->grads, z->idx, batch, &wj);
            wall += wj;
            if (j)
                run->be->axpy(n, 1.0f, node->scratch, node->grads);
        }
        if (acc > 1)
            run->be->scale(n, 1.0f / (float)acc, node->grads);
        /* forward, (stage 3: the parameters again), backward */
        const trainer_flops_t fl = trainer_model_flops(&run->model);
        double fwd = run->timing_only ? run->profile.forward_flops : fl.forward;
        double share = fwd / run->step_flops;
        sim_charge(run, node, fwd * batch * acc, wall * share);
        if (stage >= 3 && gather_params(run, node, w))
            return;
        sim_charge(run, node, (run->step_flops - fwd) * batch * acc + (acc - 1.0) * n,
                   wall * (1 - share));
        sim_count_step(run, node, batch * acc, loss / acc);
        if (sim_reduce_scatter(run, &g->all, r, node->grads, n) != SIM_OK) {
            run->failed = 1;
            return;
        }
        run->be->scale(hi - lo, 1.0f / (float)p, node->grads + lo);
        if (sc->sgd.clip_norm > 0.0f) {
            float f = sim_clip_factor_sum(run, node, &g->all, r,
                                          run->be->sumsq(node->grads + lo, hi - lo));
            if (f < 0.0f) {
                run->failed = 1;
                return;
            }
            if (f != 1.0f)
                run->be->scale(hi - lo, f, node->grads + lo);
        }
        sim_update(run, w + lo, node->grads + lo, node->velocity + lo, sim_moment2(node, lo),
                   hi - lo, step, step + 1);
        if (stage < 3) {
            if (gather_params(run, node, w))
                return;
            if (r == 0)
                sim_eval_mark(run, step, w);
        } else if (r == 0 && sim_eval_due(run, step + 1)) {
            z->pending_step = step + 1;
            z->pending_time = sim_now();
        }
    }
    if (stage >= 3) { /* the trained model, whole, once more */
        if (z->zp ? gather_buckets(run, node, z->zp) : gather_params(run, node, w))
            return;
        evaluate_pending(run, node, z);
    }
    if (r == 0 && !run->failed)
        sim_eval_final(run, step, w);
}

static void deploy(sim_run_t *run)
{
    sim_groups_make(run);
    int stage = (int)scenario_own(run->sc, "zero_stage")->l;
    zero_plan_t *zp = zero_bucketed(run->sc, stage) ? zero_plan_make(run, stage) : NULL;
    for (int i = 0; i < run->n_workers; i++) {
        sim_node_t *node = &run->workers[i];
        zero_worker_t *z = dt_calloc(1, sizeof *z);
        z->idx = dt_malloc(sizeof(uint32_t) * (size_t)run->sc->batch);
        z->pending_step = -1;
        z->zp = zp;
        node->state = z;
        node->state_free = zero_free;
    }
    if (zp && zp->jobs.n > 0) { /* each worker's stream runs the same jobs */
        const sim_bucket_list_t **list = dt_calloc((size_t)run->n_workers, sizeof *list);
        for (int i = 0; i < run->n_workers; i++)
            list[i] = &zp->jobs;
        sim_buckets_start_each(run, list, stream_job);
        free(list);
    }
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

/* What ZeRO keeps: the shard of every sharded kind of state, the rest whole (Rajbhandari
 * et al. 2020's (2 + 2 + K) parameters, of which the stages shard K, then the gradients'
 * 2, then the parameters' 2). */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    int p = run->n_workers, r = node->rank, stage = (int)scenario_own(run->sc, "zero_stage")->l;
    size_t n = run->n_params, lo = n * (size_t)r / (size_t)p, hi = n * (size_t)(r + 1) / (size_t)p;
    double vb = run->value_bytes, shard = (double)(hi - lo), whole = (double)n;
    sim_memory_default(run, node);
    node->mem.params = (stage >= 3 ? shard : whole) * vb;
    node->mem.grads = (stage >= 2 ? shard : whole) * vb;
    node->mem.optimizer = shard * scenario_optimizer_bytes(run->sc);
}

static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    if (scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.kind", "zero with [faults] is not supported");
    return DT_OK;
}

static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_ZERO_STAGE,
    SIM_KEY_ZERO_GRAD_OVERLAP,
    SIM_KEY_ZERO_PREFETCH,
    {0},
};

const sim_strategy_t sim_strategy_zero = {
    .name = "zero",
    .about = "sharded data parallelism (ZeRO stage `zero_stage` = 1, 2, 3): gradients "
             "reduce-scattered, each worker updates its shard, parameters all-gathered (stage "
             "3: also before the forward and backward passes); stages 2 and 3 reduce-scatter "
             "in buckets behind the backward pass (`zero_grad_overlap`), stage 3 prefetches "
             "each bucket's gather during the previous bucket's compute (`zero_prefetch`)",
    .own_keys = own_keys,
    .worker_role = "worker",
    .takes = SIM_TAKES_ACCUMULATE | SIM_TAKES_BUCKETS | SIM_NEEDS_PEER_LINKS | SIM_SAME_AS_SINGLE |
             SIM_RUNS_REAL,
    .check = check,
    .deploy = deploy,
    .memory = memory,
};
