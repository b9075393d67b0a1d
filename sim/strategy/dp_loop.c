/* The helpers the data-parallel strategies share: the synchronous worker loop, batches,
 * gradients with accumulation, evaluation marks, and the parameter servers' join. */
#include "strategy.h"

#include "bucket.h"
#include "collective.h"
#include "nccl.h"

#include <stddef.h>

const char *const sim_dp_comm_names[] = {"messages", "formula", "nccl", "auto", NULL};
const char *const sim_nccl_algorithm_names[] = {"auto", "ring", "tree", "nvls", NULL};
const char *const sim_nccl_protocol_names[] = {"auto", "simple", "ll", "ll128", NULL};

int sim_dp_comm_nccl(const scenario_t *sc, int timing_only)
{
    int key = (int)scenario_own(sc, "dp_comm")->i;
    if (key != SIM_DP_AUTO)
        return key == SIM_DP_NCCL;
    const sim_device_profile_t *d = scenario_device(sc);
    return timing_only && d && d->value[SIM_DEV_NVLINK_BUSBW] > 0;
}

int sim_nccl_algo_key(const scenario_t *sc)
{
    static const int algo[] = {-1, SIM_NCCL_RING, SIM_NCCL_TREE, SIM_NCCL_NVLS};
    return algo[scenario_own(sc, "nccl_algorithm")->i];
}

int sim_nccl_proto_key(const scenario_t *sc)
{
    static const int proto[] = {-1, SIM_NCCL_SIMPLE, SIM_NCCL_LL, SIM_NCCL_LL128};
    return proto[scenario_own(sc, "nccl_protocol")->i];
}
#include <stdlib.h>
#include <string.h>

/* A shared replica's steps applied so far (sim_dp_loop), kept with the run. */
static const char replica_key;

static void free_kept(sim_run_t *run, void *state)
{
    (void)run;
    free(state);
}

static long *replica_steps(sim_run_t *run)
{
    long *steps = sim_run_kept(run, &replica_key);
    if (!steps) {
        steps = dt_calloc(1, sizeof *steps);
        sim_run_keep(run, &replica_key, steps, free_kept);
    }
    return steps;
}

void sim_ps_hosts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)sc->workers;
    *servers = (int)scenario_own(sc, "servers")->l;
}

dt_status sim_ps_check(const scenario_t *sc, dt_err_t *err)
{
    if (scenario_own(sc, "servers")->l <= sc->workers)
        return DT_OK;
    char where[96];
    const char *k = scenario_blame(sc, "strategy.servers", "cluster.workers", where, sizeof where);
    return scenario_fail(sc, err, k,
                         "%ld servers for %ld workers (expected servers <= workers for %s; %s)",
                         scenario_own(sc, "servers")->l, sc->workers, sc->strategy->name, where);
}

dt_status sim_hierarchical_check(const scenario_t *sc, dt_err_t *err)
{
    /* groups are racks on a multi-rack platform (uneven racks: 2d runs as hierarchical),
     * servers on the rail platform, blocks of group_size elsewhere */
    if (sc->algorithm < SIM_ALLREDUCE_HIERARCHICAL || sc->platform == SIM_PLATFORM_MULTI_RACK)
        return DT_OK;
    int rail = sc->platform == SIM_PLATFORM_RAIL;
    long size = rail ? sc->gpus_per_server : sc->group_size;
    if ((rail && sc->workers < size) || (size <= sc->workers && sc->workers % size == 0))
        return DT_OK;
    const char *name = rail ? "cluster.gpus_per_server" : "strategy.group_size";
    char where[96];
    const char *k = scenario_blame(sc, name, "cluster.workers", where, sizeof where);
    return scenario_fail(sc, err, k,
                         "%s %ld does not divide %ld workers (%s all-reduce needs equal groups; "
                         "%s)",
                         name + strcspn(name, ".") + 1, size, sc->workers,
                         scenario_algorithm_name(sc->algorithm), where);
}

void sim_ps_memory(const sim_run_t *run, sim_node_t *node)
{
    sim_memory_default(run, node);
    if (strcmp(node->role, "server"))
        node->mem.optimizer = 0;
}

void sim_dp_batch(sim_run_t *run, sim_node_t *node, long step, int index, uint32_t *idx)
{
    int batch = (int)run->sc->batch;
    if (run->sc->partition.kind == TRAINER_PARTITION_IID)
        sim_batch_global(run, step, index, batch, idx);
    else
        sim_batch_own(run, node, batch, idx);
}

double sim_dp_grad(sim_run_t *run, sim_node_t *node, const float *w, float *grads, long step,
                   int index, uint32_t *idx)
{
    int acc = (int)run->sc->accumulate, batch = (int)run->sc->batch;
    if (acc == 1) {
        sim_dp_batch(run, node, step, index, idx);
        return sim_compute_grad(run, node, w, grads, idx, batch);
    }
    double loss = 0.0, wall = 0.0;
    for (int j = 0; j < acc; j++) {
        if (run->sc->partition.kind == TRAINER_PARTITION_IID)
            sim_batch_global(run, step, index * acc + j, batch, idx);
        else
            sim_batch_own(run, node, batch, idx);
        double wj;
        loss += sim_compute_grad_only(run, w, j ? node->scratch : grads, idx, batch, &wj);
        wall += wj;
        if (j) {
            double w0 = dt_wall_seconds();
            run->be->axpy(run->n_params, 1.0f, node->scratch, grads);
            wall += dt_wall_seconds() - w0;
        }
    }
    /* the mean gradient of the acc x batch samples */
    run->be->scale(run->n_params, 1.0f / (float)acc, grads);
    sim_charge(run, node, run->step_flops * batch * acc + (double)acc * (double)run->n_params,
               wall);
    sim_count_step(run, node, batch * acc, loss / acc);
    return loss / acc;
}

void sim_eval_mark(sim_run_t *run, long step, const float *params)
{
    if (sim_eval_due(run, step + 1))
        sim_evaluate(run, step + 1, params);
}

void sim_eval_final(sim_run_t *run, long steps_done, const float *params)
{
    double before = run->eval_wall;
    if (run->evals == 0 || run->last_eval_step != steps_done)
        sim_evaluate(run, steps_done, params);
    run->final_eval_wall += run->eval_wall - before;
    sim_run_end(run);
}

int sim_is_evaluator(const sim_run_t *run, const sim_node_t *node)
{
    if (!run->has_faults)
        return node->rank == 0;
    for (int i = 0; i < run->n_workers; i++)
        if (run->workers[i].alive && !run->workers[i].finished)
            return &run->workers[i] == node;
    return 0;
}

/* After a crash the single worker's memory is gone: it restarts from its checkpoint or
 * from the initial weights. */
static long restart_single(sim_run_t *run, sim_node_t *node)
{
    int ck = node->ckpt && node->ckpt_step >= 0;
    run->be->copy(node->params, ck ? node->ckpt : run->init_params, sizeof(float) * run->n_params);
    sim_optim_clear(run, node, 0, run->n_params);
    long from = ck ? node->ckpt_step : 0;
    sim_fault_log(run, "restore", node->name, "restarted from %s of step %ld",
                  ck ? "its checkpoint" : "the initial weights", from);
    return from;
}

void sim_dp_loop(sim_run_t *run, sim_node_t *node, sim_exchange_fn exchange)
{
    int batch = (int)run->sc->batch;
    if (!node->state)
        node->state = dt_malloc(sizeof(uint32_t) * (size_t)batch);
    uint32_t *idx = node->state;
    int elastic = run->has_faults && exchange;
    /* real mode: every process holds its own replica (a shared one is a simulation's
     * saving, and the lazy all-reduce's parts would lie in other processes' memory) */
    int shared = run->sc->shared_replicas && !run->has_faults && !run->real;
    float *w = shared ? run->workers[0].params : node->params;
    float *v = shared ? run->workers[0].velocity : node->velocity;
    float *v2 = shared ? run->workers[0].moment2 : node->moment2;
    /* the state a re-formed group takes from its first member (with Adam, the second moment
     * goes along: sim_elastic_rendezvous) */
    float *vsync = run->sc->sgd.momentum > 0 || v2 ? v : NULL;
    long K = run->sc->checkpoint_every;
    long step = 0;
    int me = node->rank, size = run->n_workers;
    if (node->incarnation > 0) {
        if (!elastic)
            step = restart_single(run, node);
        else if (sim_elastic_rendezvous(run, node, w, vsync, run->n_params, &step, -1))
            return;
    }
    while (!sim_should_stop(run, step) && !run->ended) {
        if (elastic) {
            if (sim_elastic_pending(run)) {
                if (sim_elastic_rendezvous(run, node, w, vsync, run->n_params, &step, step))
                    return;
                continue;
            }
            me = sim_elastic_index(run, node);
            size = sim_elastic_groups(run)->all.size;
        }
        int exchanged = 1;
        if (exchange && sim_buckets_on(run)) { /* compute and exchange overlap (no faults) */
            sim_dp_batch(run, node, step, me, idx);
            sim_buckets_step(run, node, w, idx, batch);
            if (run->failed)
                break;
        } else {
            sim_dp_grad(run, node, w, node->grads, step, me, idx);
            exchanged = !exchange || exchange(run, node, node->grads, run->n_params) == SIM_OK;
        }
        if (!exchanged) {
            if (!elastic) {
                run->failed = 1;
                break;
            }
            sim_fault_log(run, "abort", node->name,
                          "all-reduce of step %ld failed: its gradient is lost", step);
            if (sim_elastic_rendezvous(run, node, w, vsync, run->n_params, &step, step))
                return;
            continue;
        }
        /* a worker still inside this step's exchange only reads gradients, never w (nor
         * has any changed the gradient whose parts a lazy all-reduce left with it) */
        if (!shared || *replica_steps(run) <= step) {
            sim_allreduce_settle(run, node, node->grads);
            if (size > 1)
                run->be->scale(run->n_params, 1.0f / (float)size, node->grads);
            sim_clip(run, node->grads, run->n_params);
            sim_update(run, w, node->grads, v, v2, run->n_params, step, step + 1);
            if (shared)
                *replica_steps(run) = step + 1;
        }
        step++;
        if (K > 0 && node->ckpt && !exchange && step % K == 0) {
            run->be->copy(node->ckpt, w, sizeof(float) * run->n_params);
            node->ckpt_step = step;
        }
        if (me == 0)
            sim_eval_mark(run, step - 1, w);
    }
    if (elastic)
        sim_elastic_close(run);
    if (me == 0 && !run->failed)
        sim_eval_final(run, step, w);
}

/* A shard is down for good, or has finished. */
static int shards_gone(sim_run_t *run)
{
    for (int s = 0; s < run->n_servers; s++)
        if (run->servers[s].finished ||
            (!run->servers[s].alive && !sim_fault_will_return(run, &run->servers[s])))
            return 1;
    return 0;
}

int sim_ps_join(sim_run_t *run, sim_node_t *node, int join_flag, sim_box_t *to, sim_msg_t **msgs)
{
    int S = run->n_servers;
    sim_box_t params_box = sim_mailbox(node->name, "params");
    while (!run->ended && !shards_gone(run)) {
        for (int s = 0; s < S; s++) {
            to[s] = run->servers[s].inbox;
            msgs[s] = sim_msg_next(node);
            msgs[s]->flag = join_flag;
            msgs[s]->step = -1;
            msgs[s]->bytes = 64; /* a request, not a model */
            msgs[s]->data = node->params;
        }
        if (sim_sendv(run, node, S, to, msgs) == SIM_OK &&
            sim_recvv_for(run, node, params_box, S, msgs, 2 * sim_fault_timeout(run)) == SIM_OK)
            return 0;
        /* not yet: try again after a timeout's pause (a dead shard may be back) */
        sim_sleep(sim_fault_timeout(run));
    }
    return -1;
}
