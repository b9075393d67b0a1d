/* fedavg: federated averaging (McMahan et al. 2017). A population of clients, each with
 * its own partition of the training set (iid, dirichlet or shards), lives on the client
 * hosts (client c on host c mod hosts). Each round the server samples
 * floor(fraction * clients) clients (at least one, checked with the scenario), sends them the global model, each trains E
 * local epochs of batch B on its data and sends its model back, and the server replaces
 * the global model by the average weighted by client sample counts. prox_mu > 0 adds
 * FedProx's proximal term mu/2 |w - w_global|^2 to every local step (Li et al. 2020). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

enum { FEDAVG_STREAM_SAMPLE = 101, FEDAVG_STREAM_LOCAL = 102 };

typedef struct client_host {
    float **slot;  /* model buffers, one per client served in the current round */
    int n_slots, used;
    long round;
    uint32_t *order;
    size_t order_cap;
} client_host_t;

static float *host_slot(sim_run_t *run, client_host_t *h, long round)
{
    if (round != h->round) {
        h->round = round;
        h->used = 0;
    }
    if (h->used == h->n_slots) {
        h->slot = realloc(h->slot, sizeof(float *) * (size_t)(h->n_slots + 1));
        DT_CHECK(h->slot, "out of memory");
        h->slot[h->n_slots++] = run->be->alloc(sizeof(float) * run->n_params);
    }
    return h->slot[h->used++];
}

/* E local epochs of client c on its partition, starting from the global model. */
static void local_train(sim_run_t *run, sim_node_t *node, client_host_t *h, int c, long round,
                        const float *global, float *w)
{
    const scenario_t *sc = run->sc;
    const trainer_partition_t *p = &run->part;
    size_t n = trainer_partition_size(p, c);
    size_t bytes = sizeof(float) * run->n_params;
    run->be->copy(w, global, bytes);
    run->be->scale(run->n_params, 0.0f, node->velocity); /* fresh optimizer each round */
    if (n > h->order_cap) {
        free(h->order);
        h->order = dt_malloc(sizeof(uint32_t) * n);
        h->order_cap = n;
    }
    memcpy(h->order, p->idx + p->offsets[c], sizeof(uint32_t) * n);
    trainer_rng_t rng;
    trainer_rng_seed(&rng, sc->seed ^ ((uint64_t)c << 20) ^ (uint64_t)round, FEDAVG_STREAM_LOCAL);
    for (long e = 0; e < sc->local_epochs; e++) {
        trainer_rng_shuffle_u32(&rng, h->order, n);
        for (size_t off = 0; off < n; off += (size_t)sc->batch) {
            int b = (int)(n - off < (size_t)sc->batch ? n - off : (size_t)sc->batch);
            sim_compute_grad(run, node, w, node->grads, h->order + off, b);
            if (sc->prox_mu > 0) { /* grad += mu (w - w_global) */
                run->be->axpy(run->n_params, (float)sc->prox_mu, w, node->grads);
                run->be->axpy(run->n_params, -(float)sc->prox_mu, global, node->grads);
            }
            sim_sgd(run, w, node->grads, node->velocity, run->n_params, round);
        }
    }
}

static void client_host(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    client_host_t *h = dt_calloc(1, sizeof *h);
    node->state = h;
    h->round = -1;
    for (;;) {
        sim_msg_t *task = NULL;
        if (sim_recv(run, node, node->inbox, &task) != SG_OK) {
            run->failed = 1;
            break;
        }
        if (task->flag < 0)
            break;
        int c = task->flag;
        long round = task->step;
        const float *global = task->data; /* unchanged until every update is back */
        float *w = host_slot(run, h, round);
        local_train(run, node, h, c, round, global, w);
        sim_msg_t *up = sim_msg_slice(node, w, 0, run->n_params, round);
        up->flag = c;
        up->weight = (double)trainer_partition_size(&run->part, c);
        if (sim_send(run, node, run->servers[0].inbox, up) != SG_OK) {
            run->failed = 1;
            break;
        }
    }
    for (int i = 0; i < h->n_slots; i++)
        run->be->free(h->slot[i]);
    free(h->slot);
    free(h->order);
}

static int by_client(const void *a, const void *b)
{
    const sim_msg_t *x = *(sim_msg_t *const *)a, *y = *(sim_msg_t *const *)b;
    return (x->flag > y->flag) - (x->flag < y->flag);
}

typedef struct server_state {
    uint32_t *population; /* (clients) */
    sg_mailbox_t *to;     /* (max(m, hosts)) */
    sim_msg_t **msgs;
    const float **srcs;
    float *weights;
} server_state_t;

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    const scenario_t *sc = run->sc;
    int clients = (int)sc->clients, hosts = run->n_workers;
    int m = (int)scenario_fedavg_sampled(sc);
    int cap = m > hosts ? m : hosts;
    server_state_t *st = dt_calloc(1, sizeof *st);
    node->state = st;
    st->population = dt_malloc(sizeof(uint32_t) * (size_t)clients);
    st->to = dt_calloc((size_t)cap, sizeof(sg_mailbox_t));
    st->msgs = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    st->srcs = dt_calloc((size_t)m, sizeof(float *));
    st->weights = dt_calloc((size_t)m, sizeof(float));
    trainer_rng_t rng;
    trainer_rng_seed(&rng, sc->seed, FEDAVG_STREAM_SAMPLE);
    long round;
    for (round = 0; !sim_should_stop(run, round); round++) {
        /* sample m distinct clients: a partial Fisher-Yates over the population */
        for (int i = 0; i < clients; i++)
            st->population[i] = (uint32_t)i;
        for (int i = 0; i < m; i++) {
            int j = i + (int)trainer_rng_below(&rng, (uint64_t)(clients - i));
            uint32_t t = st->population[i];
            st->population[i] = st->population[j];
            st->population[j] = t;
        }
        for (int i = 0; i < m; i++) {
            int c = (int)st->population[i];
            st->to[i] = run->workers[c % hosts].inbox;
            st->msgs[i] = sim_msg_slice(node, node->params, 0, run->n_params, round);
            st->msgs[i]->flag = c;
        }
        /* a host serving several sampled clients answers the first before it takes the
         * second task: the receives must be posted before the tasks go out */
        if (sim_sendv_recvv(run, node, m, st->to, st->msgs, node->inbox, m, st->msgs) != SG_OK) {
            run->failed = 1;
            break;
        }
        double w0 = dt_wall_seconds();
        qsort(st->msgs, (size_t)m, sizeof(sim_msg_t *), by_client);
        double total = 0.0;
        for (int i = 0; i < m; i++)
            total += st->msgs[i]->weight;
        for (int i = 0; i < m; i++) {
            st->srcs[i] = st->msgs[i]->data;
            st->weights[i] = (float)(st->msgs[i]->weight / total);
        }
        run->be->average(node->params, st->srcs, st->weights, m, run->n_params);
        sim_charge(run, node, 2.0 * m * (double)run->n_params, dt_wall_seconds() - w0);
        node->steps++;
        sim_eval_mark(run, round, node->params);
    }
    if (!run->failed)
        sim_eval_final(run, round, node->params);
    /* release the client hosts */
    for (int i = 0; i < hosts; i++) {
        st->to[i] = run->workers[i].inbox;
        st->msgs[i] = sim_msg_next(node);
        st->msgs[i]->flag = -1;
        st->msgs[i]->data = node->params;
    }
    sim_sendv(run, node, hosts, st->to, st->msgs);
    free(st->population);
    free(st->to);
    free(st->msgs);
    free(st->srcs);
    free(st->weights);
}

static void deploy(sim_run_t *run)
{
    sim_spawn(run, &run->servers[0], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], client_host);
}

const sim_strategy_t sim_strategy_fedavg = {SIM_STRATEGY_FEDAVG, "fedavg", deploy};
