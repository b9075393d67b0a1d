/* Strategy registry and the helpers the synchronous strategies share. */
#include "strategy.h"

#include <stddef.h>
#include <stdlib.h>

static const sim_strategy_t *const strategies[] = {
    &sim_strategy_single,    &sim_strategy_sync_ps,   &sim_strategy_async_ps,
    &sim_strategy_allreduce, &sim_strategy_local_sgd, &sim_strategy_fedavg,
};

const sim_strategy_t *sim_strategy_find(sim_strategy_kind_t kind)
{
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        if (strategies[i]->kind == kind)
            return strategies[i];
    return NULL;
}

void sim_dp_batch(sim_run_t *run, sim_node_t *node, long step, uint32_t *idx)
{
    int batch = (int)run->sc->batch;
    if (run->sc->partition.kind == TRAINER_PARTITION_IID)
        sim_batch_global(run, step, node->rank, batch, idx);
    else
        sim_batch_own(run, node, batch, idx);
}

void sim_eval_mark(sim_run_t *run, long step, const float *params)
{
    if (sim_eval_due(run, step + 1))
        sim_evaluate(run, step + 1, params);
}

void sim_eval_final(sim_run_t *run, long steps_done, const float *params)
{
    if (run->evals == 0 || run->last_eval_step != steps_done)
        sim_evaluate(run, steps_done, params);
}

void sim_dp_loop(sim_run_t *run, sim_node_t *node, sim_exchange_fn exchange)
{
    int batch = (int)run->sc->batch;
    uint32_t *idx = dt_malloc(sizeof(uint32_t) * (size_t)batch);
    int shared = run->sc->shared_replicas;
    float *w = shared ? run->workers[0].params : node->params;
    float *v = shared ? run->workers[0].velocity : node->velocity;
    long step;
    for (step = 0; !sim_should_stop(run, step); step++) {
        sim_dp_batch(run, node, step, idx);
        sim_compute_grad(run, node, w, node->grads, idx, batch);
        if (exchange && exchange(run, node, node->grads, run->n_params) != SG_OK) {
            run->failed = 1;
            break;
        }
        /* a worker still inside this step's exchange only reads gradients, never w */
        if (!shared || run->replica_step <= step) {
            if (run->n_workers > 1)
                run->be->scale(run->n_params, 1.0f / (float)run->n_workers, node->grads);
            sim_sgd(run, w, node->grads, v, run->n_params, step);
            run->replica_step = step + 1;
        }
        if (node->rank == 0)
            sim_eval_mark(run, step, w);
    }
    if (node->rank == 0 && !run->failed)
        sim_eval_final(run, step, w);
    free(idx);
}
