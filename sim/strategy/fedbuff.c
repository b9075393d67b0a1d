/* fedbuff: buffered asynchronous federated learning (Nguyen et al. 2022, "Federated Learning
 * with Buffered Asynchronous Aggregation"). The server keeps `concurrency` clients training
 * at all times, each on the model version it was sent; an update (the client's model minus
 * the model it started from) enters a buffer weighted by its staleness s, the server
 * versions between send and arrival: 1 / sqrt(1 + s) (staleness_weight = sqrt) or 1 (none).
 * Every `buffer` updates the server moves the global model by server_lr x their weighted
 * mean, a new version, and evaluates on the step marks; each arriving update frees its
 * client's place to a new client drawn among those not training. `rounds` counts server
 * updates. Clients train as fedavg's do (sim_fl_local_train), so with concurrency = buffer
 * = 1 fedbuff is fedavg with one client a round (tested). The run ends when the in-flight
 * clients have returned their (discarded) updates. Server and client hosts share nothing but
 * their messages (the task: client, version, model; the update: client, version, samples,
 * floats, kept by the host until the server has taken them: host_ring), so it runs real as
 * it is simulated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

enum { FEDBUFF_STREAM_SAMPLE = 101 }; /* fedavg's sampling stream: the same first draws */

static const char *const weight_names[] = {"sqrt", "none", NULL};
enum { WEIGHT_SQRT, WEIGHT_NONE };

static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_CLIENTS,
    {.key = "buffer",
     .kind = SIM_KEY_INT,
     .def = "10",
     .min = 1,
     .max = 100000,
     .doc = "client updates the server buffers before it updates the global model (K)"},
    {.key = "concurrency",
     .kind = SIM_KEY_INT,
     .def = "20",
     .min = 1,
     .max = 1000000,
     .doc = "clients training at any time (at most strategy.clients)"},
    {.key = "staleness_weight",
     .kind = SIM_KEY_ENUM,
     .def = "sqrt",
     .names = weight_names,
     .doc = "weight of an update s server versions old: sqrt = 1 / sqrt(1 + s), "
            "none = 1"},
    SIM_KEY_SERVER_LR,
    SIM_KEY_LOCAL_EPOCHS,
    SIM_KEY_ROUNDS,
    SIM_KEY_PROX_MU,
    {0},
};

typedef struct task {
    int client;      /* -1: the place is free */
    long version;    /* of the model it was sent */
    float *model;    /* (n_params) dev: that model, read by the client when it takes it */
    sim_comm_t comm; /* the posted send */
    sim_msg_t *msg;
} task_t;

typedef struct server_state {
    task_t *tasks;     /* (concurrency) */
    uint8_t *training; /* (clients) 1 while a client has a task */
    uint32_t *idle;    /* (clients) scratch: the clients not training */
    float *acc;        /* (n_params) dev: the buffer's weighted sum of updates */
    int buffered;
    sim_box_t *to;     /* (hosts) */
    sim_msg_t **stops; /* (hosts) */
} server_state_t;

typedef struct client_host {
    float *global; /* (n_params) dev: the model received */
    float **w;     /* (ring) (n_params) dev each: a model trained, then its update */
    int ring, next;
    uint32_t *order;
    size_t order_cap;
} client_host_t;

/* The updates a client host keeps, one per task of it that may be open at once (sent to it,
 * its update not yet taken by the server): at most concurrency and its clients (c mod hosts
 * = its rank). An update's floats stay with the host until the server takes them, and the
 * server's inbox has a permanent receiver: an upload is done once it has travelled, and a
 * busy server takes it later, after the host may have begun a task queued behind it (with
 * one buffer, a slow server between fast links read updates already overwritten by the
 * next training; real mode sent their copies). The server takes a host's updates in the
 * order sent, so the one `ring` tasks back has been read. */
static int host_ring(const sim_run_t *run, int rank)
{
    long hosts = run->n_workers, conc = scenario_own(run->sc, "concurrency")->l;
    long mine = (sim_fl_clients(run->sc) - rank + hosts - 1) / hosts;
    long ring = mine < conc ? mine : conc;
    return ring < 1 ? 1 : (int)ring;
}

static void client_host_free(sim_node_t *node)
{
    client_host_t *h = node->state;
    sim_current->be->free(h->global);
    for (int i = 0; i < h->ring; i++)
        sim_current->be->free(h->w[i]);
    free(h->w);
    free(h->order);
}

/* A client host: takes tasks (client c, version v), trains c from the model it came with,
 * sends back the update w - global. */
static void client_host(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    size_t bytes = sizeof(float) * run->n_params;
    client_host_t *h = node->state;
    if (!h) {
        h = dt_calloc(1, sizeof *h);
        node->state = h;
        node->state_free = client_host_free;
        h->global = run->be->alloc(bytes ? bytes : sizeof(float));
        h->ring = run->real ? 1 : host_ring(run, node->rank); /* real: the wire has a copy */
        h->w = dt_calloc((size_t)h->ring, sizeof *h->w);
        for (int i = 0; i < h->ring; i++)
            h->w[i] = run->be->alloc(bytes ? bytes : sizeof(float));
    }
    /* a receive always posted: the server's next task to this host flows while the host
     * trains, as MPI's eager sends deliver it in real mode (fedbuff refuses [faults]: a
     * permanent receiver) */
    int posted = !run->real;
    if (posted)
        sim_inbox_open(run, node, 1);
    for (;;) { /* until the server's stop: it sends one to every host */
        sim_msg_t *task = NULL;
        if ((posted ? sim_inbox_recv(run, node, &task, sim_fault_timeout(run))
                    : sim_recv(run, node, node->inbox, &task)) != SIM_OK) {
            run->failed = 1;
            break;
        }
        if (task->flag < 0)
            break;
        int c = task->flag;
        long version = task->step;
        node->slow = sim_fl_client_slowdown(run, c);
        if (!run->timing_only) /* before the next transport call: the sender's buffer */
            run->be->copy(h->global, task->data, bytes);
        float *w = h->w[h->next];
        h->next = (h->next + 1) % h->ring;
        sim_fl_local_train(run, node, &h->order, &h->order_cap, c, version, h->global, NULL, w);
        if (!run->timing_only)
            run->be->axpy(run->n_params, -1.0f, h->global, w); /* the update */
        sim_msg_t *up = sim_msg_slice(node, w, 0, run->n_params, version);
        up->flag = c;
        up->weight = (double)sim_client_samples(run, c);
        if (sim_send(run, node, run->servers[0].inbox, up) != SIM_OK) {
            run->failed = 1;
            break;
        }
    }
    if (posted)
        sim_inbox_close(run, node);
}

/* Sends the model (version) to a client drawn uniformly among those not training, in place
 * t. The draw is a Fisher-Yates step over the idle clients in index order, so that with
 * nothing in flight it is fedavg's draw of one client. */
static int dispatch(sim_run_t *run, sim_node_t *node, server_state_t *st, trainer_rng_t *rng, int t,
                    long version)
{
    int clients = (int)sim_fl_clients(run->sc), n = 0;
    for (int c = 0; c < clients; c++)
        if (!st->training[c])
            st->idle[n++] = (uint32_t)c;
    if (n == 0)
        return -1;
    int c = (int)st->idle[trainer_rng_below(rng, (uint64_t)n)];
    task_t *k = &st->tasks[t];
    k->client = c;
    k->version = version;
    st->training[c] = 1;
    if (!run->timing_only)
        run->be->copy(k->model, node->params, sizeof(float) * run->n_params);
    k->msg = sim_msg_slice(node, k->model, 0, run->n_params, version);
    k->msg->flag = c;
    k->comm = sim_send_post(run, node, run->workers[c % run->n_workers].inbox, k->msg);
    return 0;
}

static void server_state_free(sim_node_t *node)
{
    server_state_t *st = node->state;
    long conc = scenario_own(sim_current->sc, "concurrency")->l;
    for (long t = 0; st->tasks && t < conc; t++)
        sim_current->be->free(st->tasks[t].model);
    free(st->tasks);
    free(st->training);
    free(st->idle);
    sim_current->be->free(st->acc);
    free(st->to);
    free(st->stops);
}

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    const scenario_t *sc = run->sc;
    int conc = (int)scenario_own(sc, "concurrency")->l;
    int K = (int)scenario_own(sc, "buffer")->l;
    int weighting = scenario_own(sc, "staleness_weight")->i;
    float lr = (float)scenario_own(sc, "server_lr")->d;
    size_t n = run->n_params, bytes = sizeof(float) * (n ? n : 1);
    server_state_t *st = dt_calloc(1, sizeof *st);
    node->state = st;
    node->state_free = server_state_free;
    st->tasks = dt_calloc((size_t)conc, sizeof(task_t));
    for (int t = 0; t < conc; t++) {
        st->tasks[t].client = -1;
        st->tasks[t].model = run->be->alloc(bytes);
    }
    st->training = dt_calloc((size_t)sim_fl_clients(sc), 1);
    st->idle = dt_calloc((size_t)sim_fl_clients(sc), sizeof(uint32_t));
    st->acc = run->be->alloc(bytes);
    st->to = dt_calloc((size_t)run->n_workers, sizeof(sim_box_t));
    st->stops = dt_calloc((size_t)run->n_workers, sizeof(sim_msg_t *));
    trainer_rng_t rng;
    trainer_rng_seed(&rng, sc->seed, FEDBUFF_STREAM_SAMPLE);
    long version = 0;
    int in_flight = 0;
    /* uploads travel as soon as clients send them, not one after the other as the server
     * takes them */
    sim_inbox_open(run, node, conc);
    for (int t = 0; t < conc && !sim_should_stop(run, version); t++)
        if (dispatch(run, node, st, &rng, t, version) == 0)
            in_flight++;
    while (in_flight > 0) {
        sim_msg_t *up = NULL;
        if (sim_inbox_recv(run, node, &up, SIM_COMM_TIMEOUT) != SIM_OK) {
            run->failed = 1;
            break;
        }
        int t = 0;
        while (t < conc && st->tasks[t].client != up->flag)
            t++;
        DT_ASSERT(t < conc);
        task_t *k = &st->tasks[t];
        sim_send_finish(run, node, k->comm, k->msg); /* taken before the update came back */
        st->training[k->client] = 0;
        k->client = -1;
        in_flight--;
        if (sim_should_stop(run, version))
            continue; /* over: the update is only waited for */
        double w0 = dt_wall_seconds();
        long s = version - up->step;
        sim_staleness_add(run, s);
        sim_fl_took_part(run, up->flag);
        double weight = weighting == WEIGHT_SQRT ? 1.0 / sqrt(1.0 + (double)s) : 1.0;
        if (!run->timing_only)
            run->be->axpy(n, (float)weight, up->data, st->acc);
        double flops = 2.0 * (double)n;
        if (++st->buffered == K) {
            /* global += server_lr x the buffer's mean update */
            if (!run->timing_only) {
                run->be->axpy(n, lr / (float)K, st->acc, node->params);
                run->be->scale(n, 0.0f, st->acc);
            }
            flops += 3.0 * (double)n;
            st->buffered = 0;
            node->steps++;
            sim_charge(run, node, flops, dt_wall_seconds() - w0);
            sim_eval_mark(run, version, node->params);
            version++;
        } else {
            sim_charge(run, node, flops, dt_wall_seconds() - w0);
        }
        if (!sim_should_stop(run, version) && dispatch(run, node, st, &rng, t, version) == 0)
            in_flight++;
    }
    sim_fl_finish(run, version, node->params);
    sim_inbox_close(run, node);
    sim_fl_release_hosts(run, node, st->to, st->stops);
}

static void deploy(sim_run_t *run)
{
    sim_fl_setup(run);
    sim_spawn(run, &run->servers[0], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], client_host);
}

/* the server's tasks stay posted while their clients train; a client host's updates wait
 * for the server to take them, as their floats do (host_ring) */
static size_t msg_slots(const sim_run_t *run, const sim_node_t *node, size_t n)
{
    size_t need =
        !strcmp(node->role, "server")
            ? 2 * ((size_t)scenario_own(run->sc, "concurrency")->l + (size_t)run->n_workers) + 8
            : (size_t)host_ring(run, node->rank);
    return need > n ? need : n;
}

/* the server holds the global model, one per task in flight and the buffer */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    sim_memory_default(run, node);
    if (!strcmp(node->role, "server")) {
        double conc = (double)scenario_own(run->sc, "concurrency")->l;
        node->mem.params = (2 + conc) * (double)run->n_params * run->value_bytes;
        node->mem.grads = node->mem.optimizer = node->mem.activations = 0;
    }
}

static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    long conc = scenario_own(sc, "concurrency")->l;
    if (conc > sim_fl_clients(sc)) {
        k = scenario_blame(sc, "strategy.concurrency", "strategy.clients", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "%ld clients training at once, but the population is %ld "
                             "(expected concurrency <= clients; %s)",
                             conc, sim_fl_clients(sc), where);
    }
    if (scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.kind",
                             "fedbuff with [faults] events is not supported (its clients' "
                             "dropouts, deadlines and availability are fedavg's; client "
                             "devices are fedbuff's too: client_speed, device_trace)");
    if (sc->side_by_side == SIM_SIDE_YES)
        return scenario_fail(sc, err, "model.side_by_side",
                             "fedbuff's clients start at different times: they train one by "
                             "one (side_by_side = no or auto)");
    return DT_OK;
}

const sim_strategy_t sim_strategy_fedbuff = {
    .name = "fedbuff",
    .about = "asynchronous federated learning with a buffer (FedBuff): `concurrency` clients "
             "train at all times, each on the model version it was sent; the server adds each "
             "update weighted by its staleness (`staleness_weight`) and every `buffer` updates "
             "moves the global model by `server_lr` x their mean; `rounds` server updates",
    .own_keys = own_keys,
    .worker_role = "client",
    .takes = SIM_RUNS_REAL,
    .check = check,
    .hosts = sim_fl_hosts,
    .parts = sim_fl_parts,
    .horizon = sim_fl_horizon,
    .steps_done = sim_fl_steps_done,
    .msg_slots = msg_slots,
    .memory = memory,
    .deploy = deploy,
};
