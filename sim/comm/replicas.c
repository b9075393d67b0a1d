/* fedavg clients and local-sgd workers trained side by side as replicas (see replicas.h). */
#include "replicas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* At most this many replicas share one group call (activations of each are allocated for
 * the batch size, so this bounds the workspace). */
#define SIDE_CHUNK 128

typedef struct side_replica {
    int client;
    size_t n;          /* its samples */
    uint32_t *order;   /* (n) its samples, shuffled per epoch */
    size_t first_step; /* its steps in the step arrays */
    size_t steps;
} side_replica_t;

struct sim_side {
    int cap, count; /* replicas allocated, trained this round */
    long round;
    float *params, *grads, *velocity; /* (cap, n_params) dev */
    side_replica_t *rep;              /* (count), largest first */
    int *replica_of;                  /* (clients) index in rep, -1: none */
    trainer_workspace_t ws;           /* SIDE_CHUNK replicas of batch B */
    int ws_replicas;
    uint32_t *idx;    /* (SIDE_CHUNK * batch) one group call's samples */
    uint32_t *orders; /* the replicas' orders, back to back */
    size_t orders_cap;
    double *step_loss, *step_wall; /* per replica step: mean loss, wall share */
    int *step_batch;
    size_t steps_cap;
    double *loss; /* (SIDE_CHUNK) one call's losses */
    int *correct;
    /* local-sgd: the period each worker registered and whether it is trained */
    long *period_step, *period_steps; /* (workers) -1: none */
    int *period_done;
    sim_node_t **members; /* (SIDE_CHUNK) one batch of workers */
};

int sim_side_enabled(const sim_run_t *run)
{
    if (run->timing_only)
        return 0;
    if (run->sc->accumulate > 1) /* (side_by_side = yes with it is refused with the scenario) */
        return 0;
    /* replicas update with sgd, unclipped (yes with another is refused with the scenario) */
    if (run->sc->sgd.kind != TRAINER_OPT_SGD || run->sc->sgd.clip_norm > 0.0f)
        return 0;
    switch (run->sc->side_by_side) {
    case SIM_SIDE_YES:
        return 1;
    case SIM_SIDE_NO:
        return 0;
    case SIM_SIDE_AUTO:
        break;
    }
    /* auto: on a GPU, but not the gpt, whose workspace holds one replica (yes is refused
     * for it with the scenario); its clients train one after the other */
    return strcmp(run->be->name, "cuda") == 0 && run->model.cfg.arch != TRAINER_ARCH_GPT;
}

static void side_free(sim_run_t *run, void *ctx);

sim_side_t *sim_side_new(sim_run_t *run)
{
    sim_side_t *s = dt_calloc(1, sizeof *s);
    sim_run_on_free(run, side_free, s);
    s->round = -1;
    s->replica_of = dt_malloc(sizeof(int) * (size_t)scenario_own(run->sc, "clients")->l);
    for (long c = 0; c < scenario_own(run->sc, "clients")->l; c++)
        s->replica_of[c] = -1;
    size_t w = (size_t)run->n_workers;
    s->period_step = dt_malloc(sizeof(long) * w);
    s->period_steps = dt_malloc(sizeof(long) * w);
    s->period_done = dt_calloc(w, sizeof(int));
    for (size_t i = 0; i < w; i++)
        s->period_step[i] = -1;
    s->members = dt_malloc(sizeof(sim_node_t *) * SIDE_CHUNK);
    s->idx = dt_malloc(sizeof(uint32_t) * SIDE_CHUNK * (size_t)run->sc->batch);
    s->loss = dt_malloc(sizeof(double) * SIDE_CHUNK);
    s->correct = dt_malloc(sizeof(int) * SIDE_CHUNK);
    return s;
}

static void side_free(sim_run_t *run, void *ctx)
{
    sim_side_t *s = ctx;
    run->be->free(s->params);
    run->be->free(s->grads);
    run->be->free(s->velocity);
    trainer_workspace_free(&s->ws);
    free(s->rep);
    free(s->replica_of);
    free(s->idx);
    free(s->orders);
    free(s->step_loss);
    free(s->step_wall);
    free(s->step_batch);
    free(s->loss);
    free(s->correct);
    free(s->period_step);
    free(s->period_steps);
    free(s->period_done);
    free(s->members);
    free(s);
}

static void reserve(sim_side_t *s, sim_run_t *run, int count, size_t samples, size_t steps)
{
    const trainer_backend_t *be = run->be;
    if (count > s->cap) {
        size_t bytes = sizeof(float) * run->n_params * (size_t)count;
        be->free(s->params);
        be->free(s->grads);
        be->free(s->velocity);
        s->params = be->alloc(bytes);
        s->grads = be->alloc(bytes);
        s->velocity = be->alloc(bytes);
        free(s->rep);
        s->rep = dt_calloc((size_t)count, sizeof *s->rep);
        s->cap = count;
    }
    int chunk = count < SIDE_CHUNK ? count : SIDE_CHUNK;
    if (chunk > s->ws_replicas) {
        trainer_workspace_free(&s->ws);
        trainer_workspace_init_group(&s->ws, be, &run->model, (int)run->sc->batch, chunk);
        s->ws_replicas = chunk;
    }
    if (samples > s->orders_cap) {
        free(s->orders);
        s->orders = dt_malloc(sizeof(uint32_t) * samples);
        s->orders_cap = samples;
    }
    if (steps > s->steps_cap) {
        free(s->step_loss);
        free(s->step_wall);
        free(s->step_batch);
        s->step_loss = dt_malloc(sizeof(double) * steps);
        s->step_wall = dt_malloc(sizeof(double) * steps);
        s->step_batch = dt_malloc(sizeof(int) * steps);
        s->steps_cap = steps;
    }
}

static int by_samples(const void *a, const void *b)
{
    const side_replica_t *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1; /* largest first */
    return (x->client > y->client) - (x->client < y->client);
}

/* The gradients of `count` replicas (weights w, gradients g, n_params apart) on the
 * samples in s->idx, `batch` per replica; their summed losses in s->loss. */
static void replicas_grad(sim_side_t *s, sim_run_t *run, const float *w, float *g, int count,
                          int batch)
{
    size_t n = run->n_params;
    run->be->gather(s->ws.x, s->ws.labels, run->train.x, run->train.y, s->idx, count * batch,
                    run->train.dim);
    trainer_model_forward_group(&s->ws, w, n, count, batch);
    trainer_model_loss_group(&s->ws, count, batch, s->loss, s->correct);
    trainer_model_backward_group(&s->ws, w, g, n, count, batch);
}

/* One group call: replicas [r0, r1), each at step k of local epoch e (samples from s_off of
 * its order) with `batch` samples. */
static void group_step(sim_side_t *s, sim_run_t *run, int r0, int r1, size_t s_off, int batch,
                       long e, size_t k, long round, const float *global)
{
    const trainer_backend_t *be = run->be;
    size_t n = run->n_params;
    int count = r1 - r0;
    double w0 = dt_wall_seconds();
    for (int r = r0; r < r1; r++)
        memcpy(s->idx + (size_t)(r - r0) * batch, s->rep[r].order + s_off,
               sizeof(uint32_t) * (size_t)batch);
    float *w = s->params + (size_t)r0 * n, *g = s->grads + (size_t)r0 * n;
    replicas_grad(s, run, w, g, count, batch);
    double prox_mu = scenario_own(run->sc, "prox_mu")->d;
    if (prox_mu > 0) { /* grad += mu (w - w_global), replica by replica */
        float mu = (float)prox_mu;
        be->axpy(n * (size_t)count, mu, w, g);
        for (int r = 0; r < count; r++)
            be->axpy(n, -mu, global, g + (size_t)r * n);
    }
    sim_sgd(run, w, g, s->velocity + (size_t)r0 * n, n * (size_t)count, round);
    double wall = (dt_wall_seconds() - w0) / count;
    for (int r = r0; r < r1; r++) {
        size_t per_epoch = (s->rep[r].n + (size_t)run->sc->batch - 1) / (size_t)run->sc->batch;
        size_t j = s->rep[r].first_step + (size_t)e * per_epoch + k;
        s->step_loss[j] = s->loss[r - r0] / batch;
        s->step_wall[j] = wall;
        s->step_batch[j] = batch;
    }
}

void sim_side_train(sim_side_t *s, sim_run_t *run, const uint32_t *clients, trainer_rng_t *rngs,
                    int count, long round, const float *global)
{
    const scenario_t *sc = run->sc;
    const trainer_partition_t *p = &run->part;
    size_t B = (size_t)sc->batch, n = run->n_params;
    long epochs = scenario_own(sc, "local_epochs")->l;
    for (int i = 0; i < s->count; i++)
        s->replica_of[s->rep[i].client] = -1;
    s->count = 0;
    s->round = round;
    if (count <= 0)
        return;
    size_t samples = 0, steps = 0;
    for (int i = 0; i < count; i++) {
        size_t ni = sim_client_samples(run, (int)clients[i]);
        samples += ni;
        steps += (size_t)epochs * ((ni + B - 1) / B);
    }
    reserve(s, run, count, samples, steps);

    /* replicas largest first; their orders and step ranges back to back */
    trainer_rng_t *rng_of = dt_malloc(sizeof(trainer_rng_t) * (size_t)count);
    for (int i = 0; i < count; i++) {
        s->rep[i].client = (int)clients[i];
        s->rep[i].n = sim_client_samples(run, (int)clients[i]);
        s->rep[i].steps = i; /* the caller's index, until sorted */
    }
    qsort(s->rep, (size_t)count, sizeof *s->rep, by_samples);
    size_t o = 0, st = 0;
    for (int r = 0; r < count; r++) {
        side_replica_t *q = &s->rep[r];
        rng_of[r] = rngs[q->steps];
        q->order = s->orders + o;
        memcpy(q->order, p->idx + p->offsets[q->client], sizeof(uint32_t) * q->n);
        o += q->n;
        q->first_step = st;
        q->steps = (size_t)epochs * ((q->n + B - 1) / B);
        st += q->steps;
        s->replica_of[q->client] = r;
        /* from the global model with a fresh optimizer, as one client's local training */
        run->be->copy(s->params + (size_t)r * n, global, sizeof(float) * n);
    }
    run->be->scale(n * (size_t)count, 0.0f, s->velocity);
    s->count = count;

    for (int c0 = 0; c0 < count; c0 += SIDE_CHUNK) {
        int c1 = c0 + SIDE_CHUNK < count ? c0 + SIDE_CHUNK : count;
        size_t epoch_steps = (s->rep[c0].n + B - 1) / B; /* the largest replica's */
        for (long e = 0; e < epochs; e++) {
            for (int r = c0; r < c1; r++)
                trainer_rng_shuffle_u32(&rng_of[r], s->rep[r].order, s->rep[r].n);
            for (size_t k = 0; k < epoch_steps; k++) {
                size_t off = k * B;
                /* replicas with samples left form a prefix; split it into runs of one batch
                 * size (full batches first, then the tails, largest first) */
                int r = c0;
                while (r < c1 && s->rep[r].n > off) {
                    size_t left = s->rep[r].n - off;
                    int batch = (int)(left < B ? left : B);
                    int r1 = r + 1;
                    while (r1 < c1 && s->rep[r1].n > off &&
                           (s->rep[r1].n - off < B ? s->rep[r1].n - off : B) == (size_t)batch)
                        r1++;
                    group_step(s, run, r, r1, off, batch, e, k, round, global);
                    r = r1;
                }
            }
        }
    }
    free(rng_of);
}

const float *sim_side_replay(sim_side_t *s, sim_run_t *run, sim_node_t *node, int c, long round)
{
    if (round != s->round || s->replica_of[c] < 0)
        return NULL;
    const side_replica_t *q = &s->rep[s->replica_of[c]];
    for (size_t k = q->first_step; k < q->first_step + q->steps; k++) {
        sim_charge(run, node, run->step_flops * s->step_batch[k], s->step_wall[k]);
        sim_count_step(run, node, s->step_batch[k], s->step_loss[k]);
    }
    return s->params + (size_t)s->replica_of[c] * run->n_params;
}

/* ---- local-sgd ----------------------------------------------------------------------- */

void sim_side_period_start(sim_side_t *s, sim_run_t *run, sim_node_t *node, long step, long steps)
{
    (void)run;
    s->period_step[node->rank] = step;
    s->period_steps[node->rank] = steps;
    s->period_done[node->rank] = 0;
}

/* Trains members[0..count): `steps` local steps each from their nodes' weights and momentum,
 * global steps step .. step + steps - 1, their batches from their own streams. */
static void train_period(sim_side_t *s, sim_run_t *run, int count, long step, long steps)
{
    const trainer_backend_t *be = run->be;
    size_t n = run->n_params, bytes = sizeof(float) * n;
    int batch = (int)run->sc->batch;
    for (int r = 0; r < count; r++) {
        be->copy(s->params + (size_t)r * n, s->members[r]->params, bytes);
        be->copy(s->velocity + (size_t)r * n, s->members[r]->velocity, bytes);
    }
    for (long h = 0; h < steps; h++) {
        for (int r = 0; r < count; r++)
            sim_batch_own(run, s->members[r], batch, s->idx + (size_t)r * batch);
        replicas_grad(s, run, s->params, s->grads, count, batch);
        sim_sgd(run, s->params, s->grads, s->velocity, n * (size_t)count, step + h);
        for (int r = 0; r < count; r++)
            if (!isfinite(s->loss[r]))
                sim_diverge(run, step + h, "training", s->loss[r], NAN);
    }
    for (int r = 0; r < count; r++) {
        be->copy(s->members[r]->params, s->params + (size_t)r * n, bytes);
        be->copy(s->members[r]->velocity, s->velocity + (size_t)r * n, bytes);
    }
}

void sim_side_period_end(sim_side_t *s, sim_run_t *run, sim_node_t *node)
{
    int me = node->rank;
    DT_ASSERT(s->period_step[me] >= 0);
    if (s->period_done[me])
        return;
    long step = s->period_step[me], steps = s->period_steps[me];
    int workers = run->n_workers;
    reserve(s, run, workers < SIDE_CHUNK ? workers : SIDE_CHUNK, 0, 0);
    /* every worker registered for this period and not trained yet, in rank order */
    int count = 0;
    for (int w = 0; w <= workers; w++) {
        if (w < workers && s->period_step[w] == step && s->period_steps[w] == steps &&
            !s->period_done[w]) {
            s->members[count++] = &run->workers[w];
            s->period_done[w] = 1;
        }
        if (count == SIDE_CHUNK || (w == workers && count)) {
            train_period(s, run, count, step, steps);
            count = 0;
        }
    }
}
