/* local-sgd: every worker takes H local SGD steps on its own partition with its own
 * optimizer state, then the workers average their parameters by all-reduce (the
 * scenario's algorithm) and go on from the average. Stopping is decided only at
 * averaging points, where all workers stand at the same step. */
#include <stdlib.h>

#include "collective.h"
#include "strategy.h"

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    long H = run->sc->local_steps;
    int batch = (int)run->sc->batch;
    uint32_t *idx = dt_malloc(sizeof(uint32_t) * (size_t)batch);
    long step = 0;
    for (;;) {
        if (step % H == 0 && sim_should_stop(run, step))
            break;
        if (step >= run->total_steps)
            break;
        sim_batch_own(run, node, batch, idx);
        sim_compute_grad(run, node, node->params, node->grads, idx, batch);
        sim_sgd(run, node->params, node->grads, node->velocity, run->n_params, step);
        step++;
        if (step % H == 0 || step == run->total_steps) {
            if (sim_groups_allreduce(run, run->shared, node, node->params, run->n_params) !=
                SG_OK) {
                run->failed = 1;
                break;
            }
            run->be->scale(run->n_params, 1.0f / (float)run->n_workers, node->params);
            /* evaluate at the first averaging point at or after each mark */
            if (node->rank == 0 && sim_eval_due(run, step))
                sim_evaluate(run, step, node->params);
        }
    }
    if (node->rank == 0 && !run->failed)
        sim_eval_final(run, step, node->params);
    free(idx);
}

static void deploy(sim_run_t *run)
{
    sim_groups_make(run);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

const sim_strategy_t sim_strategy_local_sgd = {SIM_STRATEGY_LOCAL_SGD, "local-sgd", deploy};
