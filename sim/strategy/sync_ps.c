/* sync-ps: synchronous SGD through S parameter-server shards. The parameter buffer is cut
 * into S slices; each step every worker pushes slice s of its gradient to shard s, each
 * shard averages the gradients (in worker order, so the result does not depend on arrival
 * order), applies SGD to its slice and sends it back to the workers that pushed.
 *
 * Faults, as a parameter server with failure detection does it:
 * - a shard waits for the gradients of the workers it believes alive; when none arrives
 *   for faults.timeout it presumes the missing ones dead and steps with the gradients it
 *   has (the average is over who answered);
 * - a worker that gets no parameters back within the timeout (a dead shard, or it was
 *   presumed dead) sends JOIN to every shard and waits for fresh parameters, retrying
 *   until the shards answer; a worker whose host comes back does the same first;
 * - a shard that crashed restarts from its last checkpoint (faults.checkpoint_every) or
 *   from the initial weights, and adopts the step the workers are at. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "wire.h"
#include "strategy.h"

enum { MSG_GRAD = 0, MSG_JOIN = 2 };

static size_t slice_start(const sim_run_t *run, int s)
{
    return run->n_params * (size_t)s / (size_t)run->n_servers;
}

typedef struct ps_state {
    sim_box_t *to;      /* (max(N, S)) destinations */
    sim_msg_t **msgs;   /* (max(N, S)) */
    sim_msg_t **have;   /* (N) server: this step's gradient of each worker */
    int *live;          /* (N) server: workers believed alive */
    uint32_t *idx;      /* (batch) */
    uint8_t *packed;    /* worker, compressed: its slices' encodings, one after the other */
    float *residual;    /* worker, error feedback: (n_params) host */
    long step;          /* worker: next step; server: current step */
    sim_group_t shards; /* server, model.clip_norm over several shards: all of them */
} ps_state_t;

static void state_free(sim_node_t *node)
{
    ps_state_t *b = node->state;
    free(b->to);
    free(b->msgs);
    free(b->have);
    free(b->live);
    free(b->idx);
    free(b->residual);
    free(b->shards.members);
}

static ps_state_t *state_get(sim_run_t *run, sim_node_t *node)
{
    if (node->state)
        return node->state;
    int n = run->n_workers > run->n_servers ? run->n_workers : run->n_servers;
    ps_state_t *b = dt_calloc(1, sizeof *b);
    b->to = dt_calloc((size_t)n, sizeof(sim_box_t));
    b->msgs = dt_calloc((size_t)n, sizeof(sim_msg_t *));
    b->have = dt_calloc((size_t)run->n_workers, sizeof(sim_msg_t *));
    b->live = dt_calloc((size_t)run->n_workers, sizeof(int));
    b->idx = dt_calloc((size_t)run->sc->batch, sizeof(uint32_t));
    if (sim_codec_on(run) && !strcmp(node->role, "worker") && !run->timing_only) {
        size_t bytes = 0;
        for (int s = 0; s < run->n_servers; s++)
            bytes += trainer_codec_bytes(&run->sc->compression,
                                         slice_start(run, s + 1) - slice_start(run, s));
        b->packed = sim_codec_node(run, node, bytes)->packed;
        if (run->sc->error_feedback && trainer_codec_lossy(&run->sc->compression))
            b->residual = dt_calloc(run->n_params ? run->n_params : 1, sizeof(float));
    }
    node->state = b;
    node->state_free = state_free;
    return b;
}

/* ---- worker ----------------------------------------------------------------------------- */

/* Parameters from the shards: copied in, and the next step is the one after theirs. */
static void take_params(sim_run_t *run, sim_node_t *node, ps_state_t *b, int count)
{
    long step = -1;
    for (int s = 0; s < count; s++) {
        run->be->copy(node->params + b->msgs[s]->offset, b->msgs[s]->data,
                      sizeof(float) * b->msgs[s]->n);
        if (b->msgs[s]->step > step)
            step = b->msgs[s]->step;
    }
    b->step = step + 1;
}

/* JOIN to every shard until all of them send parameters back. 0: joined; -1: the run is
 * over or a shard is gone for good. */
static int rejoin(sim_run_t *run, sim_node_t *node, ps_state_t *b)
{
    if (sim_should_stop(run, b->step) || sim_ps_join(run, node, MSG_JOIN, b->to, b->msgs))
        return -1;
    take_params(run, node, b, run->n_servers);
    sim_fault_log(run, "rejoin", node->name, "parameters of step %ld from %d shard%s", b->step - 1,
                  run->n_servers, run->n_servers == 1 ? "" : "s");
    return 0;
}

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    ps_state_t *b = state_get(run, node);
    int S = run->n_servers;
    sim_box_t params_box = sim_mailbox(node->name, "params");
    if (node->incarnation > 0 && rejoin(run, node, b))
        return;
    while (!sim_should_stop(run, b->step) && !run->ended) {
        long step = b->step;
        sim_dp_grad(run, node, node->params, node->grads, step, node->rank, b->idx);
        size_t at = 0; /* compressed: where slice s's encoding goes in the packed buffer */
        for (int s = 0; s < S; s++) {
            size_t off = slice_start(run, s), len = slice_start(run, s + 1) - off;
            b->to[s] = run->servers[s].inbox;
            if (sim_codec_on(run)) {
                b->msgs[s] = sim_codec_msg(run, node, node->grads, off, len, b->residual,
                                           b->packed ? b->packed + at : NULL, step);
                at += (size_t)b->msgs[s]->bytes;
            } else {
                b->msgs[s] = sim_msg_slice(node, node->grads, off, len, step);
            }
            b->msgs[s]->flag = MSG_GRAD;
        }
        /* the shards' detection timeout, then their reply: a worker waits twice as long */
        if (sim_sendv(run, node, S, b->to, b->msgs) != SIM_OK ||
            sim_recvv_for(run, node, params_box, S, b->msgs, 2 * sim_fault_timeout(run)) !=
                SIM_OK) {
            if (!run->has_faults) {
                run->failed = 1;
                break;
            }
            sim_fault_log(run, "timeout", node->name, "no parameters for step %ld within %gs", step,
                          2 * sim_fault_timeout(run));
            if (rejoin(run, node, b))
                break;
            continue;
        }
        take_params(run, node, b, S);
        if (sim_is_evaluator(run, node))
            sim_eval_mark(run, b->step - 1, node->params);
    }
    if (sim_is_evaluator(run, node) && !run->failed)
        sim_eval_final(run, b->step, node->params);
}

/* ---- server shard ----------------------------------------------------------------------- */

static int by_sender(const void *a, const void *b)
{
    const sim_msg_t *x = *(sim_msg_t *const *)a, *y = *(sim_msg_t *const *)b;
    return (x->from > y->from) - (x->from < y->from);
}

/* Sends this shard's slice (version `step`) to worker i. */
static sim_status_t send_params(sim_run_t *run, sim_node_t *node, int i, long step)
{
    size_t off = slice_start(run, node->rank), len = slice_start(run, node->rank + 1) - off;
    sim_msg_t *m = sim_msg_slice(node, node->params, off, len, step);
    return sim_send(run, node, sim_mailbox(run->workers[i].name, "params"), m);
}

/* After a crash the shard's memory is gone: its slice comes back from the checkpoint (or
 * the initial weights), its momentum from zero. */
static void restore(sim_run_t *run, sim_node_t *node, ps_state_t *b)
{
    size_t off = slice_start(run, node->rank), len = slice_start(run, node->rank + 1) - off;
    int ck = node->ckpt && node->ckpt_step >= 0;
    run->be->copy(node->params + off, (ck ? node->ckpt : run->init_params) + off,
                  sizeof(float) * len);
    sim_optim_clear(run, node, off, len);
    long from = ck ? node->ckpt_step : 0;
    sim_fault_log(run, "restore", node->name, "%s of step %ld; %ld step%s of this slice lost",
                  ck ? "checkpoint" : "initial weights", from, b->step - from,
                  b->step - from == 1 ? "" : "s");
    b->step = from;
}

/* model.clip_norm on shard g (len floats, the step's mean gradient): one shard clips by its
 * own norm, several by the norm their squares sum (a tree all-reduce of one float among
 * them: torch.nn.utils.clip_grad_norm_'s factor over the whole model; scenario_validate
 * keeps [faults] out, where a crashed shard would stall it). */
static sim_status_t clip_shard(sim_run_t *run, sim_node_t *node, ps_state_t *b, float *g,
                               size_t len)
{
    if (run->sc->sgd.clip_norm <= 0.0f)
        return SIM_OK;
    if (run->n_servers == 1) {
        sim_clip(run, g, len);
        return SIM_OK;
    }
    if (!b->shards.members) {
        b->shards.size = run->n_servers;
        b->shards.members = dt_calloc((size_t)run->n_servers, sizeof(sim_node_t *));
        for (int s = 0; s < run->n_servers; s++)
            b->shards.members[s] = &run->servers[s];
    }
    float f = sim_clip_factor_sum(run, node, &b->shards, node->rank, run->be->sumsq(g, len));
    if (f < 0.0f)
        return SIM_ERR_OTHER;
    if (f != 1.0f)
        run->be->scale(len, f, g);
    return SIM_OK;
}

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    ps_state_t *b = state_get(run, node);
    int N = run->n_workers;
    size_t off = slice_start(run, node->rank), len = slice_start(run, node->rank + 1) - off;
    float *g = node->grads + off, *w = node->params + off, *v = node->velocity + off;
    float *v2 = sim_moment2(node, off);
    long K = run->sc->checkpoint_every;
    sim_inbox_open(run, node, N + 2);
    if (node->incarnation > 0)
        restore(run, node, b);
    for (int i = 0; i < N; i++)
        b->live[i] = 1;
    while (!sim_should_stop(run, b->step) && !run->ended) {
        int expected = 0, got = 0;
        for (int i = 0; i < N; i++) {
            expected += b->live[i];
            b->have[i] = NULL;
        }
        if (!expected && !sim_fault_workers_left(run))
            break;
        /* missing workers are presumed dead after the timeout without a gradient */
        double last = sim_now(), T = sim_fault_timeout(run);
        while (got < expected || !expected) {
            sim_msg_t *m = NULL;
            double left = last + T - sim_now();
            sim_status_t e = left > 0 ? sim_inbox_recv(run, node, &m, left) : SIM_ERR_TIMEOUT;
            if (e == SIM_ERR_NETWORK && run->has_faults)
                continue; /* a sender died during its push: wait for the others */
            if (e != SIM_OK) {
                if (!run->has_faults) {
                    run->failed = 1;
                    break;
                }
                for (int i = 0; i < N; i++)
                    if (b->live[i] && !b->have[i]) {
                        b->live[i] = 0;
                        sim_fault_log(run, "timeout", run->workers[i].name,
                                      "%s presumed it dead: no gradient for step %ld in %gs",
                                      node->name, b->step, sim_fault_timeout(run));
                    }
                break;
            }
            int i = m->from;
            if (m->flag == MSG_JOIN) {
                /* it steps with the others from the parameters it gets now */
                if (send_params(run, node, i, b->step - 1) == SIM_OK && !b->live[i]) {
                    b->live[i] = 1;
                    expected++;
                }
                continue;
            }
            if (m->step < b->step) {
                sim_fault_log(run, "late", run->workers[i].name,
                              "gradient of step %ld reached %s at step %ld: dropped", m->step,
                              node->name, b->step);
                continue;
            }
            if (m->step > b->step) { /* a restarted shard catches up with the workers */
                for (int j = 0; j < N; j++)
                    b->have[j] = NULL;
                got = 0;
                b->step = m->step;
            }
            if (!b->live[i]) {
                b->live[i] = 1;
                expected++;
            }
            if (!b->have[i])
                got++;
            b->have[i] = m;
            last = sim_now();
        }
        if (run->failed)
            break;
        if (got == 0)
            continue;
        double w0 = dt_wall_seconds();
        int n = 0;
        for (int i = 0; i < N; i++)
            if (b->have[i])
                b->msgs[n++] = b->have[i];
        qsort(b->msgs, (size_t)n, sizeof(sim_msg_t *), by_sender);
        if (sim_codec_on(run)) { /* encodings: decoded as they are added */
            run->be->scale(len, 0.0f, g);
            for (int i = 0; i < n; i++)
                sim_msg_add(run, node, b->msgs[i], node->grads, 1.0f);
        } else {
            run->be->copy(g, b->msgs[0]->data, sizeof(float) * len);
            for (int i = 1; i < n; i++)
                run->be->axpy(len, 1.0f, b->msgs[i]->data, g);
        }
        run->be->scale(len, 1.0f / (float)n, g);
        if (clip_shard(run, node, b, g, len) != SIM_OK) {
            run->failed = 1;
            break;
        }
        sim_update(run, w, g, v, v2, len, b->step, b->step + 1);
        /* the averaging and the update are real work on the server */
        sim_charge(run, node,
                   (double)n * len + trainer_clip_flops(&run->sc->sgd, len) +
                       trainer_optim_flops(&run->sc->sgd, len),
                   dt_wall_seconds() - w0);
        node->steps++;
        if (K > 0 && (b->step + 1) % K == 0 && node->ckpt) {
            run->be->copy(node->ckpt + off, w, sizeof(float) * len);
            node->ckpt_step = b->step + 1;
        }
        int k = 0;
        for (int i = 0; i < N; i++)
            if (b->have[i]) {
                b->to[k] = sim_mailbox(run->workers[i].name, "params");
                b->msgs[k++] = sim_msg_slice(node, node->params, off, len, b->step);
            }
        if (sim_sendv(run, node, k, b->to, b->msgs) != SIM_OK && !run->has_faults) {
            run->failed = 1;
            break;
        }
        b->step++;
    }
    sim_inbox_close(run, node);
}

static void deploy(sim_run_t *run)
{
    for (int s = 0; s < run->n_servers; s++)
        sim_spawn(run, &run->servers[s], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_SERVERS,
    {0},
};

const sim_strategy_t sim_strategy_sync_ps = {
    .own_keys = own_keys,
    .name = "sync-ps",
    .about = "each worker pushes slice s of its gradient to server shard s (`servers`), each "
             "shard averages the N slices in worker order, applies SGD (momentum and weight "
             "decay live on the server) and sends the slice back to every worker",
    .worker_role = "worker",
    .takes = SIM_TAKES_COMPRESSION | SIM_TAKES_ACCUMULATE | SIM_TAKES_MOMENTUM_CORRECTION |
             SIM_SAME_AS_SINGLE | SIM_RUNS_REAL,
    .check = sim_ps_check,
    .hosts = sim_ps_hosts,
    .memory = sim_ps_memory,
    .deploy = deploy,
};
