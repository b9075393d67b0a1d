/* What the federated strategies (fedavg, fedbuff) share: their clients' availability, device
 * classes and dropouts ([faults]), their local training, the Byzantine clients among them
 * ([faults] byzantine, attack, attack_scale), the clients table at the end, the release of
 * the client hosts, and their slots of sim_strategy_t. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "strategy.h"

enum {
    FL_STREAM_LOCAL = 102, /* numbered as fedavg's streams were: the same runs */
    FL_STREAM_DROPOUT = 103,
    FL_STREAM_BYZANTINE = 105, /* which clients attack */
    FL_STREAM_ATTACK = 106,    /* the noise attack's draws, per client and round */
};

/* ---- client heterogeneity and availability ([faults]) ------------------------------------ */

/* A client's availability phase, a fraction of the period from its own seeded stream: the
 * same whatever the order of events. */
static double client_phase(const sim_run_t *run, int c)
{
    trainer_rng_t r;
    sim_client_rng(run->sc->seed, c, SIM_CLIENT_DRAW_PHASE, &r);
    return trainer_rng_uniform(&r);
}

int sim_fl_client_available(const sim_run_t *run, int c, double t)
{
    const sim_fl_t *fl = run->shared;
    const sim_availability_t *av = &fl->availability;
    if (fl->avail_trace.n_clients)
        return sim_avail_trace_online(&fl->avail_trace, c, t);
    if (av->period <= 0)
        return 1;
    double phase = client_phase(run, c) * av->period;
    double x = fmod(t - phase, av->period);
    if (x < 0)
        x += av->period;
    return x < av->fraction * av->period;
}

double sim_fl_next_online(const sim_run_t *run, double t)
{
    const sim_fl_t *fl = run->shared;
    const sim_availability_t *av = &fl->availability;
    double best = INFINITY;
    if (fl->avail_trace.n_clients) {
        /* the population's rows only: a trace may hold more clients than the run */
        long n = sim_fl_clients(run->sc) < (long)fl->avail_trace.n_clients
                     ? sim_fl_clients(run->sc)
                     : (long)fl->avail_trace.n_clients;
        for (long c = 0; c < n; c++) {
            double x = sim_avail_trace_next_online(&fl->avail_trace, c, t);
            if (x < best)
                best = x;
        }
        return best;
    }
    for (int c = 0; c < (int)sim_fl_clients(run->sc); c++) {
        double phase = client_phase(run, c) * av->period;
        double x = fmod(phase - t, av->period);
        if (x <= 0)
            x += av->period;
        if (t + x < best)
            best = t + x;
    }
    return best;
}

double sim_fl_client_slowdown(const sim_run_t *run, int c)
{
    const sim_fl_t *fl = run->shared;
    return run->sc->device_flops / sim_client_speed(&fl->devices, c);
}

int sim_fl_drop_step(const scenario_t *sc, int c, long round, int steps)
{
    if (sc->dropout <= 0)
        return steps;
    trainer_rng_t r;
    trainer_rng_seed(&r, sc->seed ^ ((uint64_t)(c + 1) << 24) ^ (uint64_t)round, FL_STREAM_DROPOUT);
    if (trainer_rng_uniform(&r) >= sc->dropout)
        return steps;
    return steps > 1 ? (int)trainer_rng_below(&r, (uint64_t)steps) : 0;
}

int sim_fl_client_drops(const sim_run_t *run, int c, long round)
{
    return sim_fl_drop_step(run->sc, c, round, 1) == 0;
}

float *sim_fl_slot(sim_run_t *run, sim_fl_slots_t *s, long round)
{
    if (round != s->round) {
        s->round = round;
        s->used = 0;
    }
    if (s->used == s->n) {
        s->slot = realloc(s->slot, sizeof(float *) * (size_t)(s->n + 1));
        DT_CHECK(s->slot, "out of memory");
        s->slot[s->n++] = run->be->alloc(sizeof(float) * (run->n_params ? run->n_params : 1));
    }
    return s->slot[s->used++];
}

void sim_fl_slots_free(sim_run_t *run, sim_fl_slots_t *s)
{
    for (int i = 0; i < s->n; i++)
        run->be->free(s->slot[i]);
    free(s->slot);
}

static void fl_free(void *p)
{
    sim_fl_t *fl = p;
    free(fl->byzantine);
    free(fl->flipped);
    free(fl->noise);
    free(fl->rounds);
    free(fl->holders);
    sim_client_devices_close(&fl->devices);
    sim_avail_trace_free(&fl->avail_trace);
    free(fl);
}

void sim_fl_setup(sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    sim_fl_t *fl = dt_calloc(1, sizeof *fl);
    DT_ASSERT(!run->shared);
    run->shared = fl;
    run->shared_free = fl_free;
    fl->rounds = dt_calloc((size_t)sim_fl_clients(sc), sizeof(long));
    fl->holders = dt_malloc(sizeof(uint32_t) * (size_t)sim_fl_clients(sc));
    for (long c = 0; c < sim_fl_clients(sc); c++)
        if (sim_client_samples(run, (int)c) > 0)
            fl->holders[fl->n_holders++] = (uint32_t)c;
    /* the traces were loaded when the scenario was read: an error now is a file changed
     * since, told as any bad input */
    dt_err_t e;
    DT_ASSERT(sim_availability_parse(sc->availability, &fl->availability, &e) == DT_OK);
    if (sim_client_devices_open(&fl->devices, sc, run->step_flops, &e) ||
        (fl->availability.trace &&
         sim_avail_trace_load(fl->availability.trace, &fl->avail_trace, &e))) {
        fprintf(stderr, "dtsim: %s\n", e.msg);
        exit(DT_ERR_INPUT);
    }
    long bad = (long)floor(sc->byzantine * (double)sim_fl_clients(sc) + 1e-9);
    if (bad < 1)
        return;
    /* the first `bad` clients of a seeded permutation: the same set whatever the order of
     * events */
    uint32_t *perm = dt_malloc(sizeof(uint32_t) * (size_t)sim_fl_clients(sc));
    for (long c = 0; c < sim_fl_clients(sc); c++)
        perm[c] = (uint32_t)c;
    trainer_rng_t r;
    trainer_rng_seed(&r, sc->seed, FL_STREAM_BYZANTINE);
    trainer_rng_shuffle_u32(&r, perm, (size_t)sim_fl_clients(sc));
    fl->byzantine = dt_calloc((size_t)sim_fl_clients(sc), 1);
    for (long i = 0; i < bad; i++)
        fl->byzantine[perm[i]] = 1;
    fl->n_byzantine = bad;
    free(perm);
    if (run->timing_only)
        return;
    if (sc->attack == SIM_ATTACK_LABEL_FLIP) {
        fl->flipped = dt_malloc(run->train.n ? run->train.n : 1);
        for (size_t i = 0; i < run->train.n; i++)
            fl->flipped[i] = (uint8_t)(run->train.classes - 1 - run->train.y[i]);
    } else if (sc->attack == SIM_ATTACK_NOISE) {
        fl->noise = dt_malloc(sizeof(float) * (run->n_params ? run->n_params : 1));
    }
}

/* A Byzantine client's model after its local training, y in w (dev, n_params): sign_flip
 * sends x - s (y - x), noise x + s z with z standard normal per parameter (label_flip
 * trained on its flipped labels already). Its training time stands as it is: an attacker
 * that hides among the honest clients answers when they do. */
static void attack(sim_run_t *run, sim_node_t *node, int c, long round, const float *x, float *w)
{
    const scenario_t *sc = run->sc;
    const sim_fl_t *fl = run->shared;
    size_t n = run->n_params;
    float s = (float)sc->attack_scale;
    if (run->timing_only)
        return;
    switch (sc->attack) {
    case SIM_ATTACK_SIGN_FLIP: /* w = (1 + s) x - s y */
        run->be->scale(n, -s, w);
        run->be->axpy(n, 1.0f + s, x, w);
        break;
    case SIM_ATTACK_NOISE: {
        trainer_rng_t r;
        trainer_rng_seed(&r, sc->seed ^ ((uint64_t)(c + 1) << 24) ^ (uint64_t)round,
                         FL_STREAM_ATTACK);
        for (size_t i = 0; i < n; i++)
            fl->noise[i] = (float)trainer_rng_normal(&r);
        run->be->upload(node->scratch, fl->noise, sizeof(float) * n);
        run->be->copy(w, x, sizeof(float) * n);
        run->be->axpy(n, s, node->scratch, w);
        break;
    }
    case SIM_ATTACK_LABEL_FLIP:
        break;
    }
}

void sim_fl_local_rng(const sim_run_t *run, int c, long round, trainer_rng_t *rng)
{
    trainer_rng_seed(rng, run->sc->seed ^ ((uint64_t)c << 20) ^ (uint64_t)round, FL_STREAM_LOCAL);
}

/* What local_steps does with each micro-batch: compute it and charge it (a client training
 * on its host), only charge it (a client the server trains as it averages), or only
 * compute it (the server, for such a client). */
typedef enum local_mode {
    LOCAL_TRAIN,
    LOCAL_CHARGE,
    LOCAL_COMPUTE,
} local_mode_t;

/* Client c's local training of `round` in `mode` (sim_fl_local_train says what it does).
 * Returns its local steps; *finite is 0 when LOCAL_COMPUTE met a loss that is not. */
static long local_steps(sim_run_t *run, sim_node_t *node, uint32_t **order_buf, size_t *order_cap,
                        int c, long round, const float *global, const float *corr, float *w,
                        local_mode_t mode, int *finite)
{
    const scenario_t *sc = run->sc;
    const trainer_partition_t *p = &run->part;
    size_t n = sim_client_samples(run, c);
    int real = mode != LOCAL_CHARGE;
    if (real) {
        run->be->copy(w, global, sizeof(float) * run->n_params);
        /* a fresh optimizer each round (Adam's moments too, as FedOpt's clients); plain SGD
         * has no velocity to clear, and clearing it would cost a client of one step as much
         * as its update */
        if (sim_optim_floats(run) > 0)
            sim_optim_clear(run, node, 0, run->n_params);
    }
    /* a timing-only client has no samples to order: the same steps are only charged */
    uint32_t *order = NULL;
    if (!run->timing_only && real) {
        if (n > *order_cap) {
            free(*order_buf);
            *order_buf = dt_malloc(sizeof(uint32_t) * n);
            *order_cap = n;
        }
        order = *order_buf;
        memcpy(order, p->idx + p->offsets[c], sizeof(uint32_t) * n);
    }
    trainer_rng_t rng;
    sim_fl_local_rng(run, c, round, &rng);
    const sim_fl_t *fl = run->shared;
    int attacker = fl && fl->byzantine && fl->byzantine[c];
    if (attacker && fl->flipped)
        node->labels = fl->flipped;
    long steps = 0, epochs = scenario_own(sc, "local_epochs")->l;
    float mu = (float)scenario_own(sc, "prox_mu")->d; /* FedProx: grad += mu (w - w_global) */
    int prox = scenario_own(sc, "prox_mu")->d > 0;
    for (long e = 0; e < epochs; e++) {
        if (order)
            trainer_rng_shuffle_u32(&rng, order, n);
        for (size_t off = 0; off < n;) {
            /* one local step: up to `accumulate` micro-batches of B, their mean gradient
             * weighted by their sizes (the tail's may be smaller) */
            size_t taken = 0;
            for (long k = 0; k < sc->accumulate && off < n; k++) {
                int b = (int)(n - off < (size_t)sc->batch ? n - off : (size_t)sc->batch);
                float *g = k ? node->scratch : node->grads;
                const uint32_t *idx = order ? order + off : NULL;
                if (mode == LOCAL_TRAIN) {
                    sim_compute_grad(run, node, w, g, idx, b);
                } else if (mode == LOCAL_CHARGE) { /* its loss is the server's to check */
                    sim_charge(run, node, run->step_flops * b, 0.0);
                    sim_count_step(run, node, b, 0.0);
                } else {
                    double wall;
                    if (!isfinite(sim_compute_grad_only(run, w, g, idx, b, &wall)))
                        *finite = 0;
                }
                if (real && sc->accumulate > 1) {
                    if (k)
                        run->be->axpy(run->n_params, (float)b, g, node->grads);
                    else
                        run->be->scale(run->n_params, (float)b, g);
                }
                off += (size_t)b;
                taken += (size_t)b;
            }
            steps++;
            if (!real)
                continue;
            if (sc->accumulate > 1)
                run->be->scale(run->n_params, 1.0f / (float)taken, node->grads);
            if (prox) {
                run->be->axpy(run->n_params, mu, w, node->grads);
                run->be->axpy(run->n_params, -mu, global, node->grads);
            }
            if (corr)
                run->be->axpy(run->n_params, 1.0f, corr, node->grads);
            sim_clip(run, node->grads, run->n_params);
            /* the rate of the round; Adam's bias correction counts this round's steps */
            sim_update(run, w, node->grads, node->velocity, node->moment2, run->n_params, round,
                       steps);
        }
    }
    node->labels = NULL;
    if (attacker && real)
        attack(run, node, c, round, global, w);
    return steps;
}

long sim_fl_local_train(sim_run_t *run, sim_node_t *node, uint32_t **order_buf, size_t *order_cap,
                        int c, long round, const float *global, const float *corr, float *w)
{
    return local_steps(run, node, order_buf, order_cap, c, round, global, corr, w, LOCAL_TRAIN,
                       NULL);
}

long sim_fl_local_charge(sim_run_t *run, sim_node_t *node, int c, long round)
{
    return local_steps(run, node, NULL, NULL, c, round, NULL, NULL, NULL, LOCAL_CHARGE, NULL);
}

int sim_fl_local_compute(sim_run_t *run, sim_node_t *node, uint32_t **order_buf, size_t *order_cap,
                         int c, long round, const float *global, float *w)
{
    int finite = 1;
    local_steps(run, node, order_buf, order_cap, c, round, global, NULL, w, LOCAL_COMPUTE, &finite);
    return finite;
}

void sim_fl_release_hosts(sim_run_t *run, sim_node_t *node, sim_box_t *to, sim_msg_t **msgs)
{
    for (int i = 0; i < run->n_workers; i++) {
        to[i] = run->workers[i].inbox;
        msgs[i] = sim_msg_next(node);
        msgs[i]->flag = -1;
        msgs[i]->data = node->params;
    }
    sim_sendv(run, node, run->n_workers, to, msgs);
}

int sim_fl_by_client(const void *a, const void *b)
{
    const sim_msg_t *x = *(sim_msg_t *const *)a, *y = *(sim_msg_t *const *)b;
    return (x->flag > y->flag) - (x->flag < y->flag);
}

int sim_fl_gather(sim_run_t *run, sim_node_t *node, int n, sim_box_t *to, sim_msg_t **out,
                  sim_comm_t *posted, sim_msg_t **in, int need, double until, sim_msg_t **drained,
                  int cap, sim_fl_accept_fn accept, void *ctx)
{
    double t0 = sim_now();
    for (int i = 0; i < n; i++) {
        out[i]->sent_at = t0;
        posted[i] = sim_post_send(to[i], out[i], (long)out[i]->bytes);
    }
    int got = 0;
    double last = t0, T = sim_fault_timeout(run);
    for (;;) {
        sim_msg_t *m = NULL;
        if (got < need) {
            double left = (isfinite(until) ? until : last + T) - sim_now();
            sim_status_t err = left > 0 ? sim_inbox_recv(run, node, &m, left) : SIM_ERR_TIMEOUT;
            if (err == SIM_ERR_NETWORK)
                continue;
            if (err == SIM_OK) {
                if (accept(run, m, got >= need, ctx))
                    in[got++] = m;
                last = sim_now();
                continue;
            }
        }
        /* closing: what already arrived counts, transfers under way are cut */
        int more = sim_inbox_drain(run, node, drained, cap);
        for (int i = 0; i < more; i++)
            if (accept(run, drained[i], got >= need, ctx))
                in[got++] = drained[i];
        break;
    }
    /* what no host took by now is withdrawn */
    for (int i = 0; i < n; i++)
        if (sim_wait_for(posted[i], 0) == SIM_OK) {
            node->bytes_sent += out[i]->bytes;
            run->bytes_total += out[i]->bytes;
        }
    return got;
}

void sim_fl_hosts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)sc->workers; /* the clients' hosts */
    *servers = 1;
}

long sim_fl_parts(const scenario_t *sc, long workers)
{
    (void)workers;
    return sim_fl_clients(sc);
}

long sim_fl_horizon(const scenario_t *sc)
{
    return scenario_own(sc, "rounds")->l;
}

long sim_fl_steps_done(const sim_run_t *run)
{
    return run->servers[0].steps;
}

void sim_fl_took_part(sim_run_t *run, int c)
{
    sim_fl_t *fl = run->shared;
    fl->rounds[c]++;
}

void sim_fl_finish(sim_run_t *run, long step, const float *params)
{
    if (run->failed)
        return;
    sim_eval_final(run, step, params);
    if (!run->db || run->db_failed)
        return;
    const sim_fl_t *fl = run->shared;
    const trainer_partition_t *p = &run->part;
    if (results_tx_begin(run->db, &run->db_err)) {
        run->db_failed = 1;
        return;
    }
    for (long c = 0; c < sim_fl_clients(run->sc); c++) {
        size_t n = sim_client_samples(run, (int)c);
        results_client_t r = {.client = c,
                              .rounds = fl->rounds[c],
                              .samples = (long)n,
                              .test_acc = NAN,
                              .test_loss = NAN,
                              .byzantine = fl->byzantine ? fl->byzantine[c] : 0};
        if (run->held_out && run->held_out[c]) {
            r.held_out = (long)run->held_out[c];
            trainer_eval_t ev = trainer_evaluate_subset(
                &run->engine, params, &run->train, p->idx + p->offsets[c] + n, run->held_out[c]);
            r.test_acc = ev.accuracy;
            r.test_loss = ev.loss;
        }
        if (results_client_add(run->db, run->run_id, &r, &run->db_err)) {
            run->db_failed = 1;
            results_tx_rollback(run->db, NULL);
            return;
        }
    }
    if (results_tx_commit(run->db, &run->db_err))
        run->db_failed = 1;
}
