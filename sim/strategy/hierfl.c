/* hierfl: hierarchical federated learning, clients -> edge aggregators -> cloud (HierFAVG:
 * L. Liu, J. Zhang, S. H. Song, K. B. Letaief, "Client-Edge-Cloud Hierarchical Federated
 * Learning", IEEE ICC 2020, arXiv:1905.06641, Algorithm 1).
 *
 * `regions` aggregators (servers 1..R) each serve a region of the client population; the
 * cloud is server 0. A client's region is that of its host: client c lives on host
 * c mod workers (as fedavg's) and host h is in region h mod R, so client c is in region
 * (c mod workers) mod R, which is c mod R when every client has its own host or R divides
 * the workers. A cloud round k: the cloud sends its model to every aggregator; each runs
 * `edge_rounds` rounds of FedAvg among its own clients, starting from that model (edge round
 * t = k x edge_rounds + e samples floor(fraction x the region's clients) of them, at least
 * one, checked with the scenario; each trains as fedavg's clients do, sim_fl_local_train,
 * in round t; the aggregator takes their mean weighted by samples); then each sends its
 * regional model to the cloud, which takes their mean weighted by the region's samples
 * |D^l| = the samples of all its clients, as HierFAVG's cloud aggregation
 * w = sum_l |D^l| w^l / |D| does, and evaluates on fedavg's marks. `rounds` counts cloud
 * rounds. Region r samples from fedavg's sampling stream with r in the seed, so one region
 * with one edge round a cloud round draws fedavg's clients and lands on fedavg's model bit
 * for bit (tested). On the edge platform the clients reach only their aggregator and the
 * aggregators the cloud (platform.c): over the WAN go 2 x R models a cloud round. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedopt.h"
#include "robust.h"
#include "strategy.h"

enum { HIERFL_STREAM_SAMPLE = 101 }; /* fedavg's: region 0 draws as fedavg does */

static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_CLIENTS,
    SIM_KEY_FRACTION,
    SIM_KEY_LOCAL_EPOCHS,
    SIM_KEY_ROUNDS,
    SIM_KEY_PROX_MU,
    {.key = "regions",
     .kind = SIM_KEY_INT,
     .def = "4",
     .min = 1,
     .max = 10000,
     .doc = "edge aggregators R (servers 1..R, the cloud server 0); client c is in "
            "region (c mod workers) mod R, that of its host"},
    {.key = "edge_rounds",
     .kind = SIM_KEY_INT,
     .def = "2",
     .min = 1,
     .max = 1000000,
     .doc = "FedAvg rounds each aggregator runs among its clients per cloud round"},
    {0},
};

/* Clients in region r: those of the hosts h = r, r + R, ... (client c on host c mod W). */
static long region_clients(long clients, long workers, long R, long r)
{
    long n = 0;
    for (long h = r; h < workers && h < clients; h += R)
        n += (clients - h + workers - 1) / workers; /* clients h, h + W, ... below clients */
    return n;
}

static long region_sampled(const scenario_t *sc, long n)
{
    return (long)floor((double)n * scenario_own(sc, "fraction")->d + 1e-9);
}

static int regions(const scenario_t *sc)
{
    return (int)scenario_own(sc, "regions")->l;
}

/* ---- client hosts ------------------------------------------------------------------------ */

typedef struct client_host {
    sim_fl_slots_t slots; /* the models of the clients trained in the current edge round */
    uint32_t *order;
    size_t order_cap;
} client_host_t;

static void client_host_free(sim_node_t *node)
{
    client_host_t *h = node->state;
    sim_fl_slots_free(sim_current, &h->slots);
    free(h->order);
}

/* Takes tasks (client c, edge round t) from its region's aggregator until a stop (flag -1),
 * trains c from the model the task carries and sends the model back to the aggregator. */
static void client_host(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    client_host_t *h = node->state;
    if (!h) {
        h = dt_calloc(1, sizeof *h);
        node->state = h;
        node->state_free = client_host_free;
        h->slots.round = -1;
    }
    const sim_node_t *agg = &run->servers[1 + node->rank % regions(run->sc)];
    for (;;) {
        sim_msg_t *task = NULL;
        if (sim_recv(run, node, node->inbox, &task) != SIM_OK) {
            run->failed = 1;
            break;
        }
        if (task->flag < 0)
            break;
        int c = task->flag;
        long round = task->step;
        float *w = sim_fl_slot(run, &h->slots, round);
        node->slow = sim_fl_client_slowdown(run, c);
        /* the aggregator's model, which it rewrites only once every upload of the round is in */
        sim_fl_local_train(run, node, &h->order, &h->order_cap, c, round, task->data, NULL, w);
        node->slow = 1.0;
        sim_msg_t *up = sim_msg_slice(node, w, 0, run->n_params, round);
        up->flag = c;
        up->weight = (double)sim_client_samples(run, c);
        if (sim_send(run, node, agg->inbox, up) != SIM_OK) {
            run->failed = 1;
            break;
        }
    }
}

/* ---- aggregators and the cloud ------------------------------------------------------------ */

typedef struct server_state {
    uint32_t *clients; /* (n) the region's clients in increasing order; the cloud: none */
    uint32_t *pool;    /* (n) sampling scratch */
    int n;
    sim_box_t *to; /* (cap) */
    sim_msg_t **msgs;
    const float **srcs;
    float *weights;
} server_state_t;

static void server_state_free(sim_node_t *node)
{
    server_state_t *st = node->state;
    free(st->clients);
    free(st->pool);
    free(st->to);
    free(st->msgs);
    free(st->srcs);
    free(st->weights);
}

static server_state_t *server_state_new(sim_node_t *node, int cap)
{
    server_state_t *st = dt_calloc(1, sizeof *st);
    node->state = st;
    node->state_free = server_state_free;
    st->to = dt_calloc((size_t)cap, sizeof(sim_box_t));
    st->msgs = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    st->srcs = dt_calloc((size_t)cap, sizeof(float *));
    st->weights = dt_calloc((size_t)cap, sizeof(float));
    return st;
}

/* params = the mean of msgs[0..got) weighted by their weights, in flag order (fedavg's
 * order: clients by index), charged as fedavg's aggregation. */
static void weighted_mean(sim_run_t *run, sim_node_t *node, server_state_t *st, int got)
{
    double w0 = dt_wall_seconds();
    qsort(st->msgs, (size_t)got, sizeof(sim_msg_t *), sim_fl_by_client);
    double total = 0.0;
    for (int i = 0; i < got; i++)
        total += st->msgs[i]->weight;
    for (int i = 0; i < got; i++) {
        st->srcs[i] = st->msgs[i]->data;
        st->weights[i] = (float)(st->msgs[i]->weight / total);
    }
    run->be->average(node->params, st->srcs, st->weights, got, run->n_params);
    sim_charge(run, node, 2.0 * got * (double)run->n_params, dt_wall_seconds() - w0);
}

/* Region r's aggregator (server 1 + r): per cloud task, edge_rounds FedAvg rounds among its
 * clients from the cloud's model, then its model to the cloud weighted by the region's
 * samples; on the cloud's stop, a stop to each of its hosts. */
static void aggregator(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    const scenario_t *sc = run->sc;
    int R = regions(sc), r = node->rank - 1, hosts = run->n_workers;
    long E = scenario_own(sc, "edge_rounds")->l;
    int n = (int)region_clients(sim_fl_clients(sc), hosts, R, r);
    int m = (int)region_sampled(sc, n);
    int region_hosts = (hosts - r + R - 1) / R;
    server_state_t *st = server_state_new(node, m > region_hosts ? m : region_hosts);
    st->clients = dt_malloc(sizeof(uint32_t) * (size_t)n);
    st->pool = dt_malloc(sizeof(uint32_t) * (size_t)n);
    double samples = 0.0; /* |D^r| */
    for (long c = 0; c < sim_fl_clients(sc); c++)
        if ((c % hosts) % R == r) {
            st->clients[st->n++] = (uint32_t)c;
            samples += (double)sim_client_samples(run, (int)c);
        }
    DT_ASSERT(st->n == n && m >= 1); /* checked with the scenario */
    trainer_rng_t rng;
    trainer_rng_seed(&rng, sc->seed ^ ((uint64_t)r << 40), HIERFL_STREAM_SAMPLE);
    size_t bytes = sizeof(float) * run->n_params;
    for (;;) {
        sim_msg_t *task = NULL;
        if (sim_recv(run, node, node->inbox, &task) != SIM_OK) {
            run->failed = 1;
            break;
        }
        if (task->flag < 0)
            break;
        long k = task->step;
        /* the cloud rewrites its model only once every region's is in */
        run->be->copy(node->params, task->data, bytes);
        for (long e = 0; e < E; e++) {
            long t = k * E + e;
            /* m distinct clients of the region: a partial Fisher-Yates, as fedavg's */
            memcpy(st->pool, st->clients, sizeof(uint32_t) * (size_t)n);
            for (int i = 0; i < m; i++) {
                int j = i + (int)trainer_rng_below(&rng, (uint64_t)(n - i));
                uint32_t x = st->pool[i];
                st->pool[i] = st->pool[j];
                st->pool[j] = x;
            }
            for (int i = 0; i < m; i++) {
                int c = (int)st->pool[i];
                st->to[i] = run->workers[c % hosts].inbox;
                st->msgs[i] = sim_msg_slice(node, node->params, 0, run->n_params, t);
                st->msgs[i]->flag = c;
            }
            /* a host of several sampled clients answers the first before it takes the next
             * task: the receives are posted before the tasks go out */
            if (sim_sendv_recvv(run, node, m, st->to, st->msgs, node->inbox, m, st->msgs) !=
                SIM_OK) {
                run->failed = 1;
                goto release;
            }
            for (int i = 0; i < m; i++)
                sim_fl_took_part(run, st->msgs[i]->flag);
            weighted_mean(run, node, st, m);
            node->steps++;
        }
        sim_msg_t *up = sim_msg_slice(node, node->params, 0, run->n_params, k);
        up->flag = r;
        up->weight = samples;
        if (sim_send(run, node, run->servers[0].inbox, up) != SIM_OK) {
            run->failed = 1;
            break;
        }
    }
release:
    for (int h = r, i = 0; h < hosts; h += R, i++) {
        st->to[i] = run->workers[h].inbox;
        st->msgs[i] = sim_msg_next(node);
        st->msgs[i]->flag = -1;
        st->msgs[i]->data = node->params;
    }
    sim_sendv(run, node, region_hosts, st->to, st->msgs);
}

/* The cloud (server 0): per cloud round, its model to every aggregator, their models back,
 * the mean weighted by region samples, the evaluation marks; then a stop to each. */
static void cloud(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    int R = regions(run->sc);
    server_state_t *st = server_state_new(node, R);
    long k;
    for (k = 0; !sim_should_stop(run, k); k++) {
        for (int i = 0; i < R; i++) {
            st->to[i] = run->servers[1 + i].inbox;
            st->msgs[i] = sim_msg_slice(node, node->params, 0, run->n_params, k);
            st->msgs[i]->flag = i;
        }
        if (sim_sendv_recvv(run, node, R, st->to, st->msgs, node->inbox, R, st->msgs) != SIM_OK) {
            run->failed = 1;
            break;
        }
        weighted_mean(run, node, st, R);
        node->steps++;
        sim_eval_mark(run, k, node->params);
    }
    sim_fl_finish(run, k, node->params);
    for (int i = 0; i < R; i++) {
        st->to[i] = run->servers[1 + i].inbox;
        st->msgs[i] = sim_msg_next(node);
        st->msgs[i]->flag = -1;
        st->msgs[i]->data = node->params;
    }
    sim_sendv(run, node, R, st->to, st->msgs);
}

static void deploy(sim_run_t *run)
{
    sim_fl_setup(run);
    sim_spawn(run, &run->servers[0], cloud);
    for (int i = 1; i < run->n_servers; i++)
        sim_spawn(run, &run->servers[i], aggregator);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], client_host);
}

static void hosts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)sc->workers; /* the clients' hosts, as fedavg's */
    *servers = 1 + regions(sc);
}

/* the cloud talks to the R aggregators at once, an aggregator to its sampled clients (or,
 * at the end, its hosts) and the cloud; a client host sends each of its clients' models of
 * an edge round before its aggregator reads them */
static size_t msg_slots(const sim_run_t *run, const sim_node_t *node, size_t n)
{
    const scenario_t *sc = run->sc;
    if (strcmp(node->role, "server")) {
        long per_host = (sim_fl_clients(sc) + run->n_workers - 1) / run->n_workers;
        size_t need = 2 * (size_t)per_host + 8;
        return need > n ? need : n;
    }
    long R = regions(sc), most = R;
    if (node->rank > 0) {
        long r = node->rank - 1, hosts = run->n_workers;
        long m = region_sampled(sc, region_clients(sim_fl_clients(sc), hosts, R, r));
        long region_hosts = (hosts - r + R - 1) / R;
        most = m > region_hosts ? m : region_hosts;
    }
    size_t need = 2 * ((size_t)most + 1) + 8;
    return need > n ? need : n;
}

/* the cloud holds the global model and R regional ones, an aggregator its model and those of
 * its sampled clients */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    sim_memory_default(run, node);
    if (strcmp(node->role, "server"))
        return;
    const scenario_t *sc = run->sc;
    int R = regions(sc);
    double held =
        node->rank == 0
            ? R
            : (double)region_sampled(
                  sc, region_clients(sim_fl_clients(sc), run->n_workers, R, node->rank - 1));
    node->mem.params = (1 + held) * (double)run->n_params * run->value_bytes;
    node->mem.grads = node->mem.optimizer = node->mem.activations = 0;
}

static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    long R = scenario_own(sc, "regions")->l;
    if (R > sim_fl_clients(sc)) {
        k = scenario_blame(sc, "strategy.regions", "strategy.clients", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "%ld regions for %ld clients (expected regions <= clients; %s)", R,
                             sim_fl_clients(sc), where);
    }
    if (R > sc->workers) {
        k = scenario_blame(sc, "strategy.regions", "cluster.workers", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "%ld regions for %ld client hosts: a region is the clients of "
                             "the hosts h with h mod regions = r (expected regions <= workers; "
                             "%s)",
                             R, sc->workers, where);
    }
    for (long r = 0; r < R; r++) {
        long n = region_clients(sim_fl_clients(sc), sc->workers, R, r);
        if (region_sampled(sc, n) < 1) {
            k = scenario_blame(sc, "strategy.fraction", "strategy.regions", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "region %ld's %ld clients x fraction %g sample no client per "
                                 "edge round (expected a region's clients x fraction >= 1; "
                                 "%s)",
                                 r, n, scenario_own(sc, "fraction")->d, where);
        }
    }
    if (scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.kind",
                             "hierfl with [faults] events is not supported (its clients' "
                             "dropouts, deadlines and availability are fedavg's)");
    if (sc->side_by_side == SIM_SIDE_YES)
        return scenario_fail(sc, err, "model.side_by_side",
                             "hierfl's clients train one by one: side_by_side = yes is not "
                             "supported (no or auto)");
    /* fedavg's techniques hierfl's aggregators do not apply */
    if (scenario_own(sc, "scaffold")->i)
        return scenario_fail(sc, err, "strategy.scaffold",
                             "hierfl keeps no control variates: scaffold = yes is fedavg's "
                             "(expected no)");
    if (scenario_own(sc, "dp_clip")->d > 0)
        return scenario_fail(sc, err, "strategy.dp_clip",
                             "hierfl adds no privacy noise: dp_clip > 0 is fedavg's (expected "
                             "0)");
    if (scenario_own(sc, "aggregator")->i != TRAINER_AGG_MEAN)
        return scenario_fail(sc, err, "strategy.aggregator",
                             "hierfl's aggregators take the weighted mean: aggregator = %s is "
                             "fedavg's (expected mean)",
                             trainer_agg_names[scenario_own(sc, "aggregator")->i]);
    if (scenario_own(sc, "server_optimizer")->i != TRAINER_FEDOPT_AVG ||
        scenario_own(sc, "server_lr")->d != 1.0)
        return scenario_fail(sc, err,
                             scenario_own(sc, "server_optimizer")->i != TRAINER_FEDOPT_AVG
                                 ? "strategy.server_optimizer"
                                 : "strategy.server_lr",
                             "hierfl's cloud takes the weighted mean of the regions: server "
                             "optimizers are fedavg's (expected server_optimizer = avg, "
                             "server_lr = 1)");
    return DT_OK;
}

static void summary(const sim_run_t *run, char *line, size_t n)
{
    const scenario_t *sc = run->sc;
    int R = regions(sc);
    long lo = sim_fl_clients(sc), hi = 0, mlo = sim_fl_clients(sc), mhi = 0;
    for (int r = 0; r < R; r++) {
        long c = region_clients(sim_fl_clients(sc), run->n_workers, R, r),
             m = region_sampled(sc, c);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        mlo = m < mlo ? m : mlo;
        mhi = m > mhi ? m : mhi;
    }
    snprintf(line, n,
             "hierfl: %d regions of %ld to %ld clients, %ld to %ld sampled a region per edge "
             "round, %ld edge rounds per cloud round",
             R, lo, hi, mlo, mhi, scenario_own(sc, "edge_rounds")->l);
}

const sim_strategy_t sim_strategy_hierfl = {
    .name = "hierfl",
    .about = "hierarchical federated learning (HierFAVG): `clients` clients in `regions` "
             "regions (client c in region (c mod workers) mod R, that of its host), each "
             "served by an edge aggregator (servers 1..R); per cloud round every aggregator "
             "runs `edge_rounds` FedAvg rounds among its clients (floor(`fraction` x its "
             "clients) sampled, `local_epochs` each) from the cloud's model, and the cloud "
             "(server 0) averages the regional models weighted by the regions' samples; "
             "`rounds` cloud rounds; on the edge platform only the aggregators reach the cloud",
    .own_keys = own_keys,
    .worker_role = "client",
    .takes = SIM_TAKES_ACCUMULATE | SIM_TAKES_CLIENT_LINKS,
    .check = check,
    .hosts = hosts,
    .regions = regions,
    .parts = sim_fl_parts,
    .horizon = sim_fl_horizon,
    .steps_done = sim_fl_steps_done,
    .msg_slots = msg_slots,
    .memory = memory,
    .deploy = deploy,
    .summary = summary,
};
