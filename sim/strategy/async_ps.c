/* async-ps: asynchronous SGD through S parameter-server shards. Workers push gradients
 * and pull parameters at their own pace; each shard applies a gradient the moment it
 * arrives, so a gradient computed on version v of the parameters may be applied to version
 * v + k: k is its staleness, recorded for every gradient shard 0 applies. With max_lead
 * K > 0 (stale-synchronous parallel, Ho et al. 2013: K is its staleness threshold, a bound
 * on clocks, not on a gradient's staleness), a shard holds back the reply to a worker that
 * is more than K pushes ahead of the slowest unfinished worker. */
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

static size_t slice_start(const sim_run_t *run, int s)
{
    return run->n_params * (size_t)s / (size_t)run->n_servers;
}

/* MSG_BYE: the worker stops without a last gradient (another worker's max_time request moved
 * the stop before its next step), so that the shards do not wait for it. */
enum { MSG_GRAD = 0, MSG_LAST = 1, MSG_JOIN = 2, MSG_BYE = 3 };

typedef struct worker_state {
    sim_box_t *to;
    sim_msg_t **msgs;
    long *version; /* (S) version of each shard this worker's parameters come from */
    uint32_t *idx;
    long step; /* gradients pushed (lost ones included) */
} worker_state_t;

static void worker_state_free(sim_node_t *node)
{
    worker_state_t *ws = node->state;
    free(ws->to);
    free(ws->msgs);
    free(ws->version);
    free(ws->idx);
}

/* Takes count parameter slices into the worker's replica. */
static void take_params(sim_run_t *run, sim_node_t *node, worker_state_t *ws, int count)
{
    for (int s = 0; s < count; s++) {
        sim_msg_t *m = ws->msgs[s];
        run->be->copy(node->params + m->offset, m->data, sizeof(float) * m->n);
        ws->version[m->from] = m->step;
    }
}

/* JOIN to every shard until all of them answer with parameters. 0: joined, -1: give up. */
static int rejoin(sim_run_t *run, sim_node_t *node, worker_state_t *ws)
{
    if (sim_ps_join(run, node, MSG_JOIN, ws->to, ws->msgs))
        return -1;
    take_params(run, node, ws, run->n_servers);
    sim_fault_log(run, "rejoin", node->name, "fresh parameters from %d shard%s", run->n_servers,
                  run->n_servers == 1 ? "" : "s");
    return 0;
}

/* Tells every shard that this worker pushes no more (a request-sized message, no reply). */
static void say_bye(sim_run_t *run, sim_node_t *node, worker_state_t *ws)
{
    for (int s = 0; s < run->n_servers; s++) {
        ws->to[s] = run->servers[s].inbox;
        ws->msgs[s] = sim_msg_next(node);
        ws->msgs[s]->flag = MSG_BYE;
        ws->msgs[s]->step = ws->version[s];
        ws->msgs[s]->bytes = 64;
        ws->msgs[s]->data = node->params;
    }
    if (sim_sendv(run, node, run->n_servers, ws->to, ws->msgs) != SIM_OK && run->has_faults)
        sim_fault_log(run, "lost-push", node->name, "its goodbye did not reach every shard");
}

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    int S = run->n_servers, batch = (int)run->sc->batch;
    worker_state_t *ws = node->state;
    if (!ws) {
        ws = dt_calloc(1, sizeof *ws);
        node->state = ws;
        node->state_free = worker_state_free;
        ws->to = dt_calloc((size_t)S, sizeof(sim_box_t));
        ws->msgs = dt_calloc((size_t)S, sizeof(sim_msg_t *));
        ws->version = dt_calloc((size_t)S, sizeof(long));
        ws->idx = dt_calloc((size_t)batch, sizeof(uint32_t));
    }
    sim_box_t params_box = sim_mailbox(node->name, "params");
    if (node->incarnation > 0 && rejoin(run, node, ws))
        return;
    int said_last = 0;
    while (!sim_should_stop(run, ws->step) && !run->ended) {
        long step = ws->step++;
        sim_batch_own(run, node, batch, ws->idx);
        sim_compute_grad(run, node, node->params, node->grads, ws->idx, batch);
        sim_clip(run, node->grads, run->n_params); /* each push, clipped by its worker */
        int last = sim_should_stop(run, step + 1);
        for (int s = 0; s < S; s++) {
            size_t off = slice_start(run, s);
            ws->to[s] = run->servers[s].inbox;
            ws->msgs[s] = sim_msg_slice(node, node->grads, off, slice_start(run, s + 1) - off,
                                        ws->version[s]);
            ws->msgs[s]->flag = last ? MSG_LAST : MSG_GRAD;
        }
        sim_status_t e = sim_sendv(run, node, S, ws->to, ws->msgs);
        said_last = last;
        if (e == SIM_OK)
            e = sim_recvv_for(run, node, params_box, S, ws->msgs, 2 * sim_fault_timeout(run));
        if (e != SIM_OK) {
            if (!run->has_faults) {
                run->failed = 1;
                break;
            }
            /* the push or its reply is lost; the run goes on */
            sim_fault_log(run, "lost-push", node->name, "gradient %ld: no reply within %gs", step,
                          2 * sim_fault_timeout(run));
            if (last || rejoin(run, node, ws))
                break;
            continue;
        }
        take_params(run, node, ws, S);
        if (last)
            break;
    }
    if (!said_last && !run->ended && !run->failed)
        say_bye(run, node, ws);
}

typedef struct server_state {
    long *clock;          /* (N) pushes received from each worker */
    int *finished;        /* (N) */
    int *dead;            /* (N) presumed dead: a reply was not taken within the timeout */
    int *pending;         /* (N) reply held back by the staleness bound */
    float **snapshot;     /* (N) parameter slice sent to each worker */
    sim_comm_t *reply;    /* (N) reply in flight */
    long version;         /* gradients applied */
    sim_msg_t *reply_msg; /* (N) header of the reply to each worker */
} server_state_t;

/* Shards that have finished (run->shared, a run's own: jobs may share a process); the last
 * one evaluates the final model. */
static int *shards_done(sim_run_t *run)
{
    return run->shared;
}

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

/* Worker i will push no more: it said so, or it is down for good. */
static int gone(const sim_run_t *run, const server_state_t *st, int i)
{
    const sim_node_t *w = &run->workers[i];
    return st->finished[i] || (run->has_faults && !w->alive && !sim_fault_will_return(run, w));
}

static long slowest(const sim_run_t *run, const server_state_t *st)
{
    long m = -1;
    for (int i = 0; i < run->n_workers; i++)
        if (!gone(run, st, i) && !st->dead[i] && (m < 0 || st->clock[i] < m))
            m = st->clock[i];
    return m;
}

static void finish_reply(sim_run_t *run, sim_node_t *node, server_state_t *st, int i)
{
    if (!st->reply[i])
        return;
    double t0 = sim_now();
    sim_status_t e = sim_wait_for(st->reply[i], sim_fault_timeout(run));
    node->comm_s += sim_now() - t0;
    st->reply[i] = NULL;
    if (e != SIM_OK) {
        if (!run->has_faults) {
            run->failed = 1;
            return;
        }
        st->dead[i] = 1;
        sim_fault_log(run, "timeout", run->workers[i].name,
                      "%s presumed it dead: its parameters were not taken", node->name);
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
    m->bytes = run->value_bytes * (double)len;
    m->step = version;
    m->from = node->rank;
    m->src = node->host;
    m->sender = node;
    m->sent_at = sim_now();
    st->reply[i] = sim_post_send(sim_mailbox(run->workers[i].name, "params"), m, (long)m->bytes);
    st->pending[i] = 0;
}

static void server_state_free(sim_node_t *node)
{
    server_state_t *st = node->state;
    for (int i = 0; i < sim_current->n_workers; i++)
        sim_current->be->free(st->snapshot[i]);
    free(st->clock);
    free(st->finished);
    free(st->dead);
    free(st->pending);
    free(st->snapshot);
    free(st->reply);
    free(st->reply_msg);
}

static server_state_t *server_state(sim_run_t *run, sim_node_t *node, size_t len)
{
    if (node->state)
        return node->state;
    int N = run->n_workers;
    server_state_t *st = dt_calloc(1, sizeof *st);
    node->state = st;
    node->state_free = server_state_free;
    st->clock = dt_calloc((size_t)N, sizeof(long));
    st->finished = dt_calloc((size_t)N, sizeof(int));
    st->dead = dt_calloc((size_t)N, sizeof(int));
    st->pending = dt_calloc((size_t)N, sizeof(int));
    st->snapshot = dt_calloc((size_t)N, sizeof(float *));
    st->reply = dt_calloc((size_t)N, sizeof(sim_comm_t));
    st->reply_msg = dt_calloc((size_t)N, sizeof(sim_msg_t));
    for (int i = 0; i < N; i++)
        st->snapshot[i] = run->be->alloc(sizeof(float) * (len ? len : 1));
    return st;
}

static int all_gone(const sim_run_t *run, const server_state_t *st)
{
    for (int i = 0; i < run->n_workers; i++)
        if (!gone(run, st, i))
            return 0;
    return 1;
}

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    int N = run->n_workers;
    long bound = scenario_own(run->sc, "max_lead")->l;
    size_t off = slice_start(run, node->rank), len = slice_start(run, node->rank + 1) - off;
    server_state_t *st = server_state(run, node, len);
    if (node->incarnation > 0) {
        /* its memory is gone: the slice restarts from the initial weights; replies that
         * were in flight died with it */
        run->be->copy(node->params + off, run->init_params + off, sizeof(float) * len);
        sim_optim_clear(run, node, off, len);
        memset(st->reply, 0, sizeof(sim_comm_t) * (size_t)N);
        memset(st->pending, 0, sizeof(int) * (size_t)N);
        sim_fault_log(run, "restore", node->name, "slice back to the initial weights");
    }
    /* a permanent receiver: pushes travel as soon as they are posted, all at once, instead
     * of one after the other as this loop takes them; the loop picks up finished ones */
    sim_inbox_open(run, node, N + 2);
    while (!all_gone(run, st) && !run->failed && !run->ended && !run->halt) {
        sim_msg_t *m = NULL;
        if (sim_inbox_recv(run, node, &m, sim_fault_timeout(run)) != SIM_OK) {
            if (!run->has_faults)
                run->failed = 1;
            /* with faults: a push was lost, or nobody pushed for a while; a worker whose code
             * has returned will push no more (nothing of it came within the timeout) */
            for (int i = 0; i < N; i++)
                if (run->workers[i].finished)
                    st->finished[i] = 1;
            sim_watchdog(run); /* a signal, or no step for run.stall_after: halt */
            continue;
        }
        int i = m->from;
        st->dead[i] = 0;
        if (m->flag == MSG_BYE) {
            st->finished[i] = 1;
            continue;
        }
        if (m->flag == MSG_JOIN) {
            reply(run, node, st, i, off, len, st->version);
            continue;
        }
        double w0 = dt_wall_seconds();
        long staleness = st->version - m->step;
        if (node->rank == 0)
            sim_staleness_add(run, staleness);
        /* applied on arrival; the schedule's step is the number of global steps so far */
        sim_update(run, node->params + off, m->data, node->velocity + off, sim_moment2(node, off),
                   len, st->version / N, st->version + 1);
        sim_charge(run, node, trainer_optim_flops(&run->sc->sgd, len), dt_wall_seconds() - w0);
        st->version++;
        node->steps++;
        st->clock[i]++;
        if (m->flag == MSG_LAST)
            st->finished[i] = 1;
        if (node->rank == 0 && st->version % N == 0 && sim_eval_due(run, st->version / N))
            evaluate_model(run, st->version / N);
        /* reply now, or hold it back while this worker is too far ahead */
        long slow = slowest(run, st);
        if (bound == 0 || st->finished[i] || slow < 0 || st->clock[i] - slow <= bound)
            reply(run, node, st, i, off, len, st->version);
        else
            st->pending[i] = 1;
        for (int j = 0; j < N; j++)
            if (st->pending[j] && (slow < 0 || st->clock[j] - slowest(run, st) <= bound))
                reply(run, node, st, j, off, len, st->version);
    }
    sim_inbox_close(run, node);
    for (int i = 0; i < N; i++)
        finish_reply(run, node, st, i);
    long final_step = (st->version + N - 1) / N;
    if (++*shards_done(run) == run->n_servers && !run->failed) {
        double before = run->eval_wall;
        if (run->evals == 0 || run->last_eval_step != final_step)
            evaluate_model(run, final_step);
        run->final_eval_wall += run->eval_wall - before;
        sim_run_end(run);
    }
}

static void deploy(sim_run_t *run)
{
    DT_ASSERT(!run->shared);
    run->shared = dt_calloc(1, sizeof(int));
    run->shared_free = free;
    for (int s = 0; s < run->n_servers; s++)
        sim_spawn(run, &run->servers[s], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_SERVERS,
    {.key = "max_lead",
     .kind = SIM_KEY_INT,
     .def = "0",
     .min = 0,
     .max = 1000000,
     .doc = "stale-synchronous parallel (SSP, Ho et al. 2013, its staleness threshold s): a "
            "shard holds back its reply to a worker more than this many pushes ahead of the "
            "slowest unfinished worker, so no worker runs further ahead; the staleness of a "
            "gradient (updates applied since its parameters were sent) is not bounded by it, "
            "as every worker's pushes count (the staleness table records it); 0 = unbounded "
            "(was `staleness`, which named what it does not bound)",
     .ignored_elsewhere = 1},
    {0},
};

const sim_strategy_t sim_strategy_async_ps = {
    .own_keys = own_keys,
    .name = "async-ps",
    .about = "workers push gradient slices and pull parameter slices at their own pace; pushes "
             "travel at once (the shard's inbox has a permanent receiver) and each shard "
             "applies a gradient the moment it has arrived; the staleness (shard version now "
             "minus the version the gradient was computed on) of every gradient shard 0 "
             "applies is recorded; `max_lead` = K > 0 holds back the reply to a worker more "
             "than K pushes ahead of the slowest (stale-synchronous parallel)",
    .worker_role = "worker",
    .takes = SIM_RUNS_REAL,
    .check = sim_ps_check,
    .hosts = sim_ps_hosts,
    .memory = sim_ps_memory,
    .deploy = deploy,
};
