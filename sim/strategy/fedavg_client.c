/* fedavg's client hosts (fedavg.c has the server): each serves the clients c with c mod
 * hosts = its rank, one message at a time, so a host with several clients of a round
 * trains them one after the other and interleaves their secure aggregation steps. When the
 * server computes the updates as it averages (at_server), a host only charges each client's
 * steps and sends an update of the model's size. */
#include <stdlib.h>
#include <string.h>

#include "fedavg_impl.h"
#include "wire.h"

typedef struct client_host {
    sim_fl_slots_t slots; /* the models of the clients served in the current round */
    uint8_t **packed;     /* compressed: encoded updates, one per client served in the round */
    int n_packed, packed_used;
    long packed_round;
    uint32_t *order;
    size_t order_cap;
} client_host_t;

/* A buffer for the encoded update of the next client this host serves in `round` (the
 * server reads them all after the round). */
static uint8_t *host_packed(sim_run_t *run, client_host_t *h, long round)
{
    if (run->timing_only)
        return NULL;
    if (round != h->packed_round) {
        h->packed_round = round;
        h->packed_used = 0;
    }
    if (h->packed_used == h->n_packed) {
        h->packed = realloc(h->packed, sizeof(uint8_t *) * (size_t)(h->n_packed + 1));
        DT_CHECK(h->packed, "out of memory");
        h->packed[h->n_packed++] =
            dt_malloc(trainer_codec_bytes(&run->sc->compression, run->n_params));
    }
    return h->packed[h->packed_used++];
}

/* SCAFFOLD on client c's host before its local steps: corr = c - c_i (c_i made, zero, on
 * the client's first round). */
static void scaffold_begin(sim_run_t *run, server_state_t *st, int c, float *corr)
{
    if (!st->ci[c])
        st->ci[c] = run->be->alloc(sizeof(float) * (run->n_params ? run->n_params : 1));
    run->be->copy(corr, st->c, sizeof(float) * run->n_params);
    run->be->axpy(run->n_params, -1.0f, st->ci[c], corr);
}

/* After K local steps from x to y: dc = (x - y) / (K lr) - c into dc (which held the
 * correction), c_i += dc. Charges the control variates' FLOPs to the client. */
static void scaffold_end(sim_run_t *run, sim_node_t *node, server_state_t *st, int c, long steps,
                         long round, const float *x, const float *y, float *dc)
{
    size_t n = run->n_params;
    float lr = sim_lr(run, round);
    run->be->copy(dc, x, sizeof(float) * n);
    run->be->axpy(n, -1.0f, y, dc);
    run->be->scale(n, steps > 0 && lr > 0 ? 1.0f / ((float)steps * lr) : 0.0f, dc);
    run->be->axpy(n, -1.0f, st->c, dc);
    run->be->axpy(n, 1.0f, dc, st->ci[c]);
    int was = sim_breakdown_work(node, RESULTS_PART_OPTIMIZER);
    sim_charge(run, node, (double)n * (2.0 * (double)steps + 7.0), 0.0);
    sim_breakdown_work(node, was);
}

static void client_host_free(sim_node_t *node)
{
    client_host_t *h = node->state;
    sim_fl_slots_free(sim_current, &h->slots);
    for (int i = 0; i < h->n_packed; i++)
        free(h->packed[i]);
    free(h->packed);
    free(h->order);
}

void fedavg_client_host(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    client_host_t *h = node->state;
    if (!h) {
        h = dt_calloc(1, sizeof *h);
        node->state = h;
        node->state_free = client_host_free;
        h->slots.round = -1;
        h->packed_round = -1;
    }
    /* a receive always posted: the server's next message to this host (a later client's
     * model) flows while this one trains and uploads, as MPI's eager sends deliver it in
     * real mode (or a gRPC stream), instead of waiting for this host to ask for it */
    int posted = !run->real;
    if (posted)
        sim_inbox_open(run, node, 1);
    while (!run->ended) {
        sim_msg_t *task = NULL;
        sim_status_t err = posted ? sim_inbox_recv(run, node, &task, sim_fault_timeout(run))
                                  : sim_recv(run, node, node->inbox, &task);
        if (err != SIM_OK) {
            if (!run->has_faults) {
                run->failed = 1;
                break;
            }
            continue; /* nothing to do for a while: keep listening */
        }
        if (task->flag < 0)
            break;
        /* the header is the server's: keep what it says while this host trains */
        sim_msg_t said = *task;
        task = &said;
        int c = task->flag;
        long round = task->step;
        int step = sim_secagg_step(task);
        if (step < 0 ? sim_fl_client_drops(run, c, round)
                     : sim_fl_drop_step(run->sc, c, round, SIM_SECAGG_STEPS) == step) {
            sim_fault_log(run, "dropout", node->name, "client %d left round %ld%s%s", c, round,
                          step < 0 ? "" : " at secure aggregation's ",
                          step < 0 ? "" : sim_secagg_step_name(step));
            continue;
        }
        if (step >= 0 && task->tag != SIM_SECAGG_MASKED) {
            /* a secure aggregation step without training: answer it */
            sim_msg_t *a = sim_secagg_answer(run, node, task);
            if (sim_send_for(run, node, run->servers[0].inbox, a, SIM_COMM_TIMEOUT) != SIM_OK &&
                !run->has_faults) {
                run->failed = 1;
                break;
            }
            continue;
        }
        node->slow = sim_fl_client_slowdown(run, c);
        /* trained side by side by the server at the start of the round: charge its steps */
        /* the server's choices this host follows; a real client process does not hold the
         * server's state (real.c refuses side by side, SCAFFOLD and error feedback there) */
        static const server_state_t remote_server;
        server_state_t *st =
            run->servers[0].state ? run->servers[0].state : (server_state_t *)&remote_server;
        const float *w = st->side ? sim_side_replay(st->side, run, node, c, round) : NULL;
        float *dc = NULL;  /* SCAFFOLD: the control variate's update, uploaded with w */
        if (st->at_server) /* the server computes the update: charge its steps */
            sim_fl_local_charge(run, node, c, round);
        else if (!w) {
            /* the global model, read by the server's aggregation only after the round, and
             * by late clients of this host after that: copy it before training */
            float *own = sim_fl_slot(run, &h->slots, round);
            if (st->scaffold && !run->timing_only) {
                dc = sim_fl_slot(run, &h->slots, round);
                scaffold_begin(run, st, c, dc);
            }
            long steps = sim_fl_local_train(run, node, &h->order, &h->order_cap, c, round,
                                            task->data, dc, own);
            if (dc)
                scaffold_end(run, node, st, c, steps, round, task->data, own, dc);
            else if (st->scaffold) { /* timing only: the same FLOPs */
                int was = sim_breakdown_work(node, RESULTS_PART_OPTIMIZER);
                sim_charge(run, node, (double)run->n_params * (2.0 * (double)steps + 7.0), 0.0);
                sim_breakdown_work(node, was);
            }
            w = own;
        }
        node->slow = 1.0;
        sim_msg_t *up;
        if (sim_codec_on(run)) {
            /* the update, w - global, encoded (with this client's error feedback) */
            run->be->copy(node->scratch, w, sizeof(float) * run->n_params);
            run->be->axpy(run->n_params, -1.0f, task->data, node->scratch);
            float *residual = NULL;
            if (st->residual && !run->timing_only) {
                if (!st->residual[c])
                    st->residual[c] = dt_calloc(run->n_params ? run->n_params : 1, sizeof(float));
                residual = st->residual[c];
            }
            up = sim_codec_msg(run, node, node->scratch, 0, run->n_params, residual,
                               host_packed(run, h, round), round);
        } else {
            up = sim_msg_slice(node, task->data, 0, run->n_params, round);
            up->data = w; /* NULL with at_server: nothing for the server to read */
        }
        up->flag = c;
        up->weight = (double)sim_client_samples(run, c);
        if (st->scaffold) {
            up->aux = dc;
            up->bytes += run->value_bytes * (double)run->n_params;
        }
        if (step >= 0)
            sim_secagg_mask(run, node, task, up);
        /* the server keeps receives posted on its inbox (sim_inbox_open): the upload runs
         * to its end, however slow the link, unless the server's deadline cuts it */
        if (sim_send_for(run, node, run->servers[0].inbox, up, SIM_COMM_TIMEOUT) != SIM_OK &&
            !run->has_faults) {
            run->failed = 1;
            break;
        }
    }
    if (posted)
        sim_inbox_close(run, node);
}
