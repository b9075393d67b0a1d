/* async-ps: asynchronous SGD through S parameter-server shards. Workers push gradients
 * and pull parameters at their own pace; each shard applies a gradient the moment it
 * arrives, so a gradient computed on version v of the parameters may be applied to version
 * v + k: k is its staleness, recorded for every gradient shard 0 applies. With a staleness
 * bound K > 0 (stale-synchronous parallel), a shard holds back the reply to a worker that
 * is more than K pushes ahead of the slowest unfinished worker. */
#include <stdlib.h>
#include <string.h>

#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>

#include "strategy.h"

static size_t slice_start(const sim_run_t *run, int s)
{
    return run->n_params * (size_t)s / (size_t)run->n_servers;
}

typedef struct worker_state {
    sg_mailbox_t *to;
    sim_msg_t **msgs;
    long *version; /* (S) version of each shard this worker's parameters come from */
    uint32_t *idx;
} worker_state_t;

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    int S = run->n_servers, batch = (int)run->sc->batch;
    worker_state_t *ws = dt_calloc(1, sizeof *ws);
    node->state = ws;
    ws->to = dt_calloc((size_t)S, sizeof(sg_mailbox_t));
    ws->msgs = dt_calloc((size_t)S, sizeof(sim_msg_t *));
    ws->version = dt_calloc((size_t)S, sizeof(long));
    ws->idx = dt_calloc((size_t)batch, sizeof(uint32_t));
    sg_mailbox_t params_box = sim_mailbox(node->name, "params");
    for (long step = 0; !sim_should_stop(run, step); step++) {
        sim_batch_own(run, node, batch, ws->idx);
        sim_compute_grad(run, node, node->params, node->grads, ws->idx, batch);
        int last = sim_should_stop(run, step + 1);
        for (int s = 0; s < S; s++) {
            size_t off = slice_start(run, s);
            ws->to[s] = run->servers[s].inbox;
            ws->msgs[s] = sim_msg_slice(node, node->grads, off, slice_start(run, s + 1) - off,
                                        ws->version[s]);
            ws->msgs[s]->flag = last;
        }
        if (sim_sendv(run, node, S, ws->to, ws->msgs) != SG_OK ||
            sim_recvv(run, node, params_box, S, ws->msgs) != SG_OK) {
            run->failed = 1;
            break;
        }
        for (int s = 0; s < S; s++) {
            sim_msg_t *m = ws->msgs[s];
            run->be->copy(node->params + m->offset, m->data, sizeof(float) * m->n);
            ws->version[m->from] = m->step;
        }
        if (last)
            break;
    }
    free(ws->to);
    free(ws->msgs);
    free(ws->version);
    free(ws->idx);
}

typedef struct server_state {
    long *clock;        /* (N) pushes received from each worker */
    int *finished;      /* (N) */
    int *pending;       /* (N) reply held back by the staleness bound */
    float **snapshot;   /* (N) parameter slice sent to each worker */
    sg_comm_t *reply;   /* (N) reply in flight */
    sim_msg_t *reply_msg; /* (N) header of the reply to each worker */
} server_state_t;

/* Shards that have finished; the last one evaluates the final model. */
static int shards_done;

static void evaluate_model(sim_run_t *run, long step)
{
    /* the whole model: every shard's slice, read in place (no simulated traffic) */
    float *full = run->engine.grads;
    for (int s = 0; s < run->n_servers; s++) {
        size_t o = slice_start(run, s);
        run->be->copy(full + o, run->servers[s].params + o,
                      sizeof(float) * (slice_start(run, s + 1) - o));
    }
    sim_evaluate(run, step, full);
}

static long slowest(const sim_run_t *run, const server_state_t *st)
{
    long m = -1;
    for (int i = 0; i < run->n_workers; i++)
        if (!st->finished[i] && (m < 0 || st->clock[i] < m))
            m = st->clock[i];
    return m;
}

static void finish_reply(sim_run_t *run, sim_node_t *node, server_state_t *st, int i)
{
    if (!st->reply[i])
        return;
    double t0 = simgrid_get_clock();
    sg_error_t e = sg_comm_wait_for(st->reply[i], SIM_COMM_TIMEOUT);
    node->comm_s += simgrid_get_clock() - t0;
    st->reply[i] = NULL;
    if (e != SG_OK) {
        run->failed = 1;
        return;
    }
    node->bytes_sent += st->reply_msg[i].bytes;
    run->bytes_total += st->reply_msg[i].bytes;
}

/* Sends worker i a snapshot of this shard's slice without waiting for the transfer, so the
 * shard keeps receiving while replies travel. */
static void reply(sim_run_t *run, sim_node_t *node, server_state_t *st, int i, size_t off,
                  size_t len, long version)
{
    finish_reply(run, node, st, i);
    run->be->copy(st->snapshot[i], node->params + off, sizeof(float) * len);
    sim_msg_t *m = &st->reply_msg[i];
    memset(m, 0, sizeof *m);
    m->data = st->snapshot[i];
    m->offset = off;
    m->n = len;
    m->bytes = sizeof(float) * (double)len;
    m->step = version;
    m->from = node->rank;
    m->src = node->host;
    m->sent_at = simgrid_get_clock();
    st->reply[i] = sg_mailbox_put_async(sim_mailbox(run->workers[i].name, "params"), m,
                                        (long)m->bytes);
    st->pending[i] = 0;
}

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    int N = run->n_workers;
    long bound = run->sc->staleness;
    size_t off = slice_start(run, node->rank), len = slice_start(run, node->rank + 1) - off;
    server_state_t *st = dt_calloc(1, sizeof *st);
    node->state = st;
    st->clock = dt_calloc((size_t)N, sizeof(long));
    st->finished = dt_calloc((size_t)N, sizeof(int));
    st->pending = dt_calloc((size_t)N, sizeof(int));
    st->snapshot = dt_calloc((size_t)N, sizeof(float *));
    st->reply = dt_calloc((size_t)N, sizeof(sg_comm_t));
    st->reply_msg = dt_calloc((size_t)N, sizeof(sim_msg_t));
    for (int i = 0; i < N; i++)
        st->snapshot[i] = run->be->alloc(sizeof(float) * (len ? len : 1));
    /* a permanent receiver: pushes travel as soon as they are posted, all at once, instead
     * of one after the other as this loop takes them; the loop picks up finished ones */
    sg_mailbox_set_receiver(sg_mailbox_get_name(node->inbox));
    long version = 0, done = 0;
    while (done < N && !run->failed) {
        sim_msg_t *m = NULL;
        if (sim_recv(run, node, node->inbox, &m) != SG_OK) {
            run->failed = 1;
            break;
        }
        int i = m->from;
        double w0 = dt_wall_seconds();
        long staleness = version - m->step;
        if (node->rank == 0)
            sim_staleness_add(run, staleness);
        /* applied on arrival; the schedule's step is the number of global steps so far */
        sim_sgd(run, node->params + off, m->data, node->velocity + off, len, version / N);
        sim_charge(run, node,
                   trainer_sgd_flops(len, run->sc->sgd.momentum, run->sc->sgd.weight_decay),
                   dt_wall_seconds() - w0);
        version++;
        node->steps++;
        st->clock[i]++;
        if (m->flag) {
            st->finished[i] = 1;
            done++;
        }
        if (node->rank == 0 && version % N == 0 && sim_eval_due(run, version / N))
            evaluate_model(run, version / N);
        /* reply now, or hold it back while this worker is too far ahead */
        long slow = slowest(run, st);
        if (bound == 0 || st->finished[i] || slow < 0 || st->clock[i] - slow <= bound)
            reply(run, node, st, i, off, len, version);
        else
            st->pending[i] = 1;
        for (int j = 0; j < N; j++)
            if (st->pending[j] && (slow < 0 || st->clock[j] - slowest(run, st) <= bound))
                reply(run, node, st, j, off, len, version);
    }
    for (int i = 0; i < N; i++)
        finish_reply(run, node, st, i);
    long final_step = (version + N - 1) / N;
    if (++shards_done == run->n_servers && !run->failed &&
        (run->evals == 0 || run->last_eval_step != final_step))
        evaluate_model(run, final_step);
    for (int i = 0; i < N; i++)
        run->be->free(st->snapshot[i]);
    free(st->clock);
    free(st->finished);
    free(st->pending);
    free(st->snapshot);
    free(st->reply);
    free(st->reply_msg);
}

static void deploy(sim_run_t *run)
{
    shards_done = 0;
    for (int s = 0; s < run->n_servers; s++)
        sim_spawn(run, &run->servers[s], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

const sim_strategy_t sim_strategy_async_ps = {SIM_STRATEGY_ASYNC_PS, "async-ps", deploy};
