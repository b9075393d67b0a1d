/* local-sgd: every worker takes H local SGD steps on its own partition with its own
 * optimizer state, then the workers average their parameters by all-reduce (the
 * scenario's algorithm) and go on from the average. Stopping is decided only at
 * averaging points, where all workers stand at the same step. */
#include <stdlib.h>

#include "collective.h"
#include "replicas.h"
#include "strategy.h"

/* Elastic re-formation: the new group starts from the last average of the member furthest
 * on (node->ckpt holds each member's last average). */
static int reform(sim_run_t *run, sim_node_t *node, long *step, long commit)
{
    if (sim_elastic_rendezvous(run, node, node->ckpt, NULL, run->n_params, step, commit))
        return -1;
    run->be->copy(node->params, node->ckpt, sizeof(float) * run->n_params);
    node->ckpt_step = *step;
    return 0;
}

/* The workers' local periods side by side (comm/replicas.h), kept with the run, or none. */
static const char side_key;

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    sim_side_t *side = sim_run_kept(run, &side_key);
    long H = scenario_own(run->sc, "local_steps")->l;
    int batch = (int)run->sc->batch, elastic = run->has_faults, me = node->rank;
    if (!node->state)
        node->state = dt_malloc(sizeof(uint32_t) * (size_t)batch);
    uint32_t *idx = node->state;
    long step = 0;
    if (elastic && node->incarnation == 0) {
        run->be->copy(node->ckpt, node->params, sizeof(float) * run->n_params);
        node->ckpt_step = 0;
    }
    if (elastic && node->incarnation > 0 && reform(run, node, &step, -1))
        return;
    for (;;) {
        if (step % H == 0 && (sim_should_stop(run, step) || run->ended))
            break;
        if (step >= run->total_steps)
            break;
        if (elastic && step % H == 0 && sim_elastic_pending(run)) {
            if (reform(run, node, &step, node->ckpt_step))
                return;
            continue;
        }
        if (side) {
            /* trained with the others at the period's end (comm/replicas.h): charge and count now
             */
            if (step % H == 0) {
                long left = run->total_steps - step;
                sim_side_period_start(side, run, node, step, left < H ? left : H);
            }
            sim_charge(run, node, run->step_flops * batch, 0.0);
            sim_count_step(run, node, batch, 0.0);
        } else {
            sim_batch_own(run, node, batch, idx);
            sim_compute_grad(run, node, node->params, node->grads, idx, batch);
            sim_clip(run, node->grads, run->n_params);
            sim_update(run, node->params, node->grads, node->velocity, node->moment2, run->n_params,
                       step, step + 1);
        }
        step++;
        if (step % H == 0 || step == run->total_steps) {
            if (side)
                sim_side_period_end(side, run, node);
            sim_groups_t *g = sim_elastic_groups(run);
            if (sim_groups_allreduce(run, g, node, node->params, run->n_params) != SIM_OK) {
                if (!elastic) {
                    run->failed = 1;
                    break;
                }
                sim_fault_log(run, "abort", node->name,
                              "averaging at step %ld failed: %ld local steps redone from the "
                              "last average",
                              step, step - node->ckpt_step);
                if (reform(run, node, &step, node->ckpt_step))
                    return;
                continue;
            }
            run->be->scale(run->n_params, 1.0f / (float)g->all.size, node->params);
            me = g->index[node->rank];
            if (elastic) {
                run->be->copy(node->ckpt, node->params, sizeof(float) * run->n_params);
                node->ckpt_step = step;
            }
            /* evaluate at the first averaging point at or after each mark */
            if (me == 0 && sim_eval_due(run, step))
                sim_evaluate(run, step, node->params);
        }
    }
    sim_elastic_close(run);
    if (me == 0 && !run->failed)
        sim_eval_final(run, step, node->params);
}

static void deploy(sim_run_t *run)
{
    sim_elastic_make(run);
    /* side by side needs every period to end on time: no faults, FLOP-counted time */
    if (!run->has_faults && run->sc->time_model == SIM_TIME_FLOPS && sim_side_enabled(run))
        sim_run_keep(run, &side_key, sim_side_new(run), NULL); /* it frees itself */
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

static const sim_strategy_key_t own_keys[] = {
    {.key = "local_steps",
     .kind = SIM_KEY_INT,
     .def = "8",
     .min = 1,
     .max = 1000000,
     .doc = "local steps between averagings (H)",
     .ignored_elsewhere = 1},
    {0},
};

const sim_strategy_t sim_strategy_local_sgd = {
    .own_keys = own_keys,
    .name = "local-sgd",
    .about = "`local_steps` (H) local SGD steps on each worker's own data and optimizer, then "
             "the parameters are averaged by all-reduce (`algorithm`)",
    .worker_role = "worker",
    .takes = SIM_TAKES_ALLREDUCE | SIM_TAKES_GROUPS | SIM_NEEDS_PEER_LINKS | SIM_RUNS_REAL,
    .check = sim_hierarchical_check,
    .deploy = deploy,
};
