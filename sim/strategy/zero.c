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
 * all-gather (recorded at the time the step ended) and all-gathers once more at the end. */
#include <stdlib.h>
#include <string.h>


#include "collective.h"
#include "strategy.h"

typedef struct zero_worker {
    uint32_t *idx;
    long pending_step; /* worker 0, stage 3: an evaluation of this step is due */
    double pending_time;
} zero_worker_t;

static void zero_free(sim_node_t *node) { free(((zero_worker_t *)node->state)->idx); }

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

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    const scenario_t *sc = run->sc;
    sim_groups_t *g = run->shared;
    int p = run->n_workers, r = node->rank, stage = (int)scenario_own(sc, "zero_stage")->l;
    size_t n = run->n_params, lo = n * (size_t)r / (size_t)p, hi = n * (size_t)(r + 1) / (size_t)p;
    zero_worker_t *z = dt_calloc(1, sizeof *z);
    z->idx = dt_malloc(sizeof(uint32_t) * (size_t)sc->batch);
    z->pending_step = -1;
    node->state = z;
    node->state_free = zero_free;
    float *w = node->params;
    long step;
    for (step = 0; !sim_should_stop(run, step) && !run->ended; step++) {
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
            loss += sim_real_grad(run, w, j ? node->scratch : node->grads, z->idx, batch, &wj);
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
        sim_sgd(run, w + lo, node->grads + lo, node->velocity + lo, hi - lo, step);
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
        if (gather_params(run, node, w))
            return;
        evaluate_pending(run, node, z);
    }
    if (r == 0 && !run->failed)
        sim_eval_final(run, step, w);
}

static void deploy(sim_run_t *run)
{
    sim_groups_make(run);
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
    {0},
};

const sim_strategy_t sim_strategy_zero = {
    .name = "zero",
    .about = "sharded data parallelism (ZeRO stage `zero_stage` = 1, 2, 3): gradients "
             "reduce-scattered, each worker updates its shard, parameters all-gathered (stage "
             "3: also before the forward and backward passes)",
    .keys = "`zero_stage`, `accumulate`",
    .own_keys = own_keys,
    .worker_role = "worker",
    .takes = SIM_TAKES_ACCUMULATE | SIM_NEEDS_PEER_LINKS | SIM_SAME_AS_SINGLE |
             SIM_RUNS_REAL,
    .check = check,
    .deploy = deploy,
    .memory = memory,
};
