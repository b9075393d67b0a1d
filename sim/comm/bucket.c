/* Gradient buckets all-reduced while the backward pass goes on (see bucket.h). */
#include "bucket.h"


#include "collective.h"
#include "profile_memory.h"

struct sim_buckets {
    int n;               /* buckets, in backward order */
    size_t *lo, *hi;     /* (n) slice of the gradient buffer */
    double *flops;       /* (n) backward FLOPs per sample from the previous bucket to this one */
    double forward;      /* forward FLOPs per sample (with the loss) */
    sim_sem_t *ready;     /* (workers) buckets handed to the stream */
    sim_sem_t *done;      /* (workers) released when the last bucket is reduced */
};

/* One layer's gradient slice and the backward FLOPs up to its gradient. */
typedef struct segment {
    size_t lo, hi;
    double flops;
} segment_t;

/* The segments in backward order. */
static segment_t *plan_segments(const sim_run_t *run, int *count, double *forward)
{
    segment_t *seg;
    int n = 0;
    if (run->timing_only) {
        const sim_model_profile_t *p = &run->profile;
        seg = dt_calloc((size_t)p->n_layers, sizeof *seg);
        size_t top = run->n_params;
        double carry = 0;
        for (int i = 0; i < p->n_layers; i++) {
            /* a layer model.recompute recomputes runs its forward again before its backward */
            int j = p->n_layers - 1 - i;
            carry += p->layers[i].backward_flops +
                     (sim_profile_recomputed(p, j, run->sc->recompute) ? p->layers[i].forward_flops
                                                                       : 0);
            if (!p->layers[i].params)
                continue; /* compute without a gradient: it delays the next one */
            seg[n].hi = top;
            seg[n].lo = top - p->layers[i].params;
            seg[n].flops = carry;
            top = seg[n++].lo;
            carry = 0;
        }
        if (n)
            seg[n - 1].flops += carry;
        *forward = p->forward_flops;
    } else {
        const trainer_model_t *m = &run->model;
        seg = dt_calloc((size_t)m->n_layers, sizeof *seg);
        double carry = 2.0 * m->classes; /* the loss's backward */
        size_t top = m->n_params;
        for (int i = m->n_layers - 1; i >= 0; i--) {
            const trainer_layer_t *l = &m->layers[i];
            carry += trainer_model_layer_flops(m, i).backward;
            if (!l->w_len)
                continue;
            DT_ASSERT(l->b_off == l->w_off + l->w_len && l->b_off + l->b_len == top);
            seg[n].lo = l->w_off;
            seg[n].hi = top;
            seg[n].flops = carry;
            top = l->w_off;
            n++;
            carry = 0;
        }
        if (n)
            seg[n - 1].flops += carry;
        *forward = trainer_model_flops(m).forward;
    }
    *count = n;
    return seg;
}

static void stream(int argc, char **argv);

static void buckets_free(sim_run_t *run, void *ctx);

void sim_buckets_start(sim_run_t *run)
{
    int n_seg;
    sim_buckets_t *b = dt_calloc(1, sizeof *b);
    segment_t *seg = plan_segments(run, &n_seg, &b->forward);
    DT_ASSERT(n_seg > 0);
    b->lo = dt_calloc((size_t)n_seg, sizeof(size_t));
    b->hi = dt_calloc((size_t)n_seg, sizeof(size_t));
    b->flops = dt_calloc((size_t)n_seg, sizeof(double));
    double cap = run->sc->bucket_mb * 1e6;
    for (int i = 0; i < n_seg; i++) {
        if (i == 0 || run->value_bytes * (double)(b->hi[b->n - 1] - b->lo[b->n - 1]) >= cap) {
            b->hi[b->n] = seg[i].hi; /* a new bucket */
            b->n++;
        }
        b->lo[b->n - 1] = seg[i].lo;
        b->flops[b->n - 1] += seg[i].flops;
    }
    free(seg);
    b->ready = dt_calloc((size_t)run->n_workers, sizeof(sim_sem_t));
    b->done = dt_calloc((size_t)run->n_workers, sizeof(sim_sem_t));
    run->buckets = b;
    sim_run_on_free(run, buckets_free, NULL);
    for (int i = 0; i < run->n_workers; i++) {
        sim_node_t *node = &run->workers[i];
        b->ready[i] = sim_sem_new(0);
        b->done[i] = sim_sem_new(0);
        char name[48];
        snprintf(name, sizeof name, "%s/stream", node->name);
        sim_start(name, node->host, stream, node, 1); /* a daemon: ends with the workers */
    }
}

/* A worker's communication stream: all-reduces its buckets in order as they are handed over. */
static void stream(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    sim_run_t *run = sim_current;
    sim_node_t *node = sim_self_data();
    sim_buckets_t *b = run->buckets;
    for (;;) {
        for (int k = 0; k < b->n; k++) {
            sim_sem_acquire(b->ready[node->rank]);
            if (sim_groups_allreduce(run, sim_elastic_groups(run), node,
                                     node->grads + b->lo[k], b->hi[k] - b->lo[k]) != SIM_OK)
                run->failed = 1;
        }
        sim_exchange_done();
        sim_sem_release(b->done[node->rank]);
    }
}

double sim_buckets_step(sim_run_t *run, sim_node_t *node, const float *params,
                        const uint32_t *idx, int batch)
{
    sim_buckets_t *b = run->buckets;
    double wall, loss = sim_real_grad(run, params, node->grads, idx, batch, &wall);
    /* measured time: each part's share of the wall time in proportion to its FLOPs */
    double per_flop = wall / (run->step_flops * batch);
    sim_charge(run, node, b->forward * batch, b->forward * batch * per_flop);
    for (int k = 0; k < b->n; k++) {
        sim_charge(run, node, b->flops[k] * batch, b->flops[k] * batch * per_flop);
        sim_sem_release(b->ready[node->rank]);
    }
    sim_count_step(run, node, batch, loss);
    sim_sem_acquire(b->done[node->rank]);
    return loss;
}

static void buckets_free(sim_run_t *run, void *ctx)
{
    (void)ctx;
    sim_buckets_t *b = run->buckets;
    if (!b)
        return;
    for (int i = 0; i < run->n_workers; i++) {
        if (b->ready[i])
            sim_sem_free(b->ready[i]);
        if (b->done[i])
            sim_sem_free(b->done[i]);
    }
    free(b->ready);
    free(b->done);
    free(b->lo);
    free(b->hi);
    free(b->flops);
    free(b);
    run->buckets = NULL;
}
