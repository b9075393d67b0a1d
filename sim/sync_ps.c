/* sync-ps: synchronous SGD through S parameter-server shards. The parameter buffer is cut
 * into S slices; each step every worker pushes slice s of its gradient to shard s, each
 * shard averages the N gradients (in worker order, so the result does not depend on
 * arrival order), applies SGD to its slice and sends it back to every worker. */
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

static size_t slice_start(const sim_run_t *run, int s)
{
    return run->n_params * (size_t)s / (size_t)run->n_servers;
}

typedef struct boxes {
    sg_mailbox_t *to;     /* (max(N, S)) destinations */
    sim_msg_t **msgs;     /* (max(N, S)) */
    uint32_t *idx;        /* (batch) */
} boxes_t;

static boxes_t *boxes_new(sim_run_t *run, sim_node_t *node)
{
    int n = run->n_workers > run->n_servers ? run->n_workers : run->n_servers;
    boxes_t *b = dt_calloc(1, sizeof *b);
    b->to = dt_calloc((size_t)n, sizeof(sg_mailbox_t));
    b->msgs = dt_calloc((size_t)n, sizeof(sim_msg_t *));
    b->idx = dt_calloc((size_t)run->sc->batch, sizeof(uint32_t));
    node->state = b;
    return b;
}

static void boxes_free(sim_node_t *node)
{
    boxes_t *b = node->state;
    free(b->to);
    free(b->msgs);
    free(b->idx);
}

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    boxes_t *b = boxes_new(run, node);
    int S = run->n_servers, batch = (int)run->sc->batch;
    sg_mailbox_t params_box = sim_mailbox(node->name, "params");
    long step;
    for (step = 0; !sim_should_stop(run, step); step++) {
        sim_dp_batch(run, node, step, b->idx);
        sim_compute_grad(run, node, node->params, node->grads, b->idx, batch);
        for (int s = 0; s < S; s++) {
            size_t off = slice_start(run, s);
            b->to[s] = run->servers[s].inbox;
            b->msgs[s] = sim_msg_slice(node, node->grads, off, slice_start(run, s + 1) - off, step);
        }
        if (sim_sendv(run, node, S, b->to, b->msgs) != SG_OK ||
            sim_recvv(run, node, params_box, S, b->msgs) != SG_OK) {
            run->failed = 1;
            break;
        }
        for (int s = 0; s < S; s++)
            run->be->copy(node->params + b->msgs[s]->offset, b->msgs[s]->data,
                          sizeof(float) * b->msgs[s]->n);
        if (node->rank == 0)
            sim_eval_mark(run, step, node->params);
    }
    if (node->rank == 0 && !run->failed)
        sim_eval_final(run, step, node->params);
    boxes_free(node);
}

static int by_sender(const void *a, const void *b)
{
    const sim_msg_t *x = *(sim_msg_t *const *)a, *y = *(sim_msg_t *const *)b;
    return (x->from > y->from) - (x->from < y->from);
}

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    boxes_t *b = boxes_new(run, node);
    int N = run->n_workers;
    size_t off = slice_start(run, node->rank), len = slice_start(run, node->rank + 1) - off;
    float *g = node->grads + off, *w = node->params + off, *v = node->velocity + off;
    for (long step = 0; !sim_should_stop(run, step); step++) {
        if (sim_recvv(run, node, node->inbox, N, b->msgs) != SG_OK) {
            run->failed = 1;
            break;
        }
        double w0 = dt_wall_seconds();
        qsort(b->msgs, (size_t)N, sizeof(sim_msg_t *), by_sender);
        run->be->copy(g, b->msgs[0]->data, sizeof(float) * len);
        for (int i = 1; i < N; i++)
            run->be->axpy(len, 1.0f, b->msgs[i]->data, g);
        run->be->scale(len, 1.0f / (float)N, g);
        sim_sgd(run, w, g, v, len, step);
        /* the averaging and the update are real work on the server */
        sim_charge(run, node, (double)N * len + trainer_sgd_flops(len, run->sc->sgd.momentum,
                                                                   run->sc->sgd.weight_decay),
                   dt_wall_seconds() - w0);
        node->steps++;
        for (int i = 0; i < N; i++) {
            b->to[i] = sim_mailbox(run->workers[i].name, "params");
            b->msgs[i] = sim_msg_slice(node, node->params, off, len, step);
        }
        if (sim_sendv(run, node, N, b->to, b->msgs) != SG_OK) {
            run->failed = 1;
            break;
        }
    }
    boxes_free(node);
}

static void deploy(sim_run_t *run)
{
    for (int s = 0; s < run->n_servers; s++)
        sim_spawn(run, &run->servers[s], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

const sim_strategy_t sim_strategy_sync_ps = {SIM_STRATEGY_SYNC_PS, "sync-ps", deploy};
