/* Gradient buckets all-reduced while the backward pass goes on (see bucket.h). */
#include "bucket.h"

#include <string.h>

#include "collective.h"
#include "profile_memory.h"

struct sim_buckets {
    sim_bucket_list_t own;          /* sim_buckets_start's: the whole model's */
    double forward;                 /* its forward FLOPs per sample (with the loss) */
    const sim_bucket_list_t **list; /* (workers) each worker's buckets; NULL: no stream */
    sim_bucket_reduce_fn reduce;
    sim_sem_t *ready; /* (workers) buckets handed to the stream */
    sim_sem_t *done;  /* (workers) released when the last bucket is reduced */
    int each;         /* done released after every bucket instead */
    /* sim_buckets_start_timed: no stream actors; per worker, when its stream is free, the
     * buckets handed over and waited for, and each bucket's end (in list order) */
    sim_bucket_time_fn time;
    double *busy;
    long *handed, *awaited;
    double **end;
};

/* The whole model's segments in backward order. */
static sim_grad_segment_t *plan_segments(const sim_run_t *run, int *count, double *forward)
{
    sim_grad_segment_t *seg;
    int n = 0;
    if (run->timing_only) {
        const sim_model_profile_t *p = &run->profile;
        seg = dt_calloc((size_t)p->n_layers, sizeof *seg);
        size_t top = run->n_params;
        double carry = 0;
        for (int i = 0; i < p->n_layers; i++) {
            /* a layer model.recompute recomputes runs its forward again before its backward */
            int j = p->n_layers - 1 - i;
            carry +=
                p->layers[i].backward_flops +
                (sim_profile_recomputed(p, j, run->sc->recompute) ? p->layers[i].forward_flops : 0);
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
    } else if (run->model.cfg.arch == TRAINER_ARCH_GPT) { /* no layer list: its pieces */
        const trainer_model_t *m = &run->model;
        size_t P = (size_t)m->gpt.L + 2, *lo = dt_calloc(P, sizeof *lo);
        size_t *hi = dt_calloc(P, sizeof *hi);
        double *fl = dt_calloc(P, sizeof *fl);
        seg = dt_calloc(P, sizeof *seg);
        n = trainer_gpt_backward_pieces(m, lo, hi, fl);
        for (int i = 0; i < n; i++)
            seg[i].lo = lo[i], seg[i].hi = hi[i], seg[i].flops = fl[i];
        free(lo);
        free(hi);
        free(fl);
        *forward = trainer_model_flops(m).forward;
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

void sim_bucket_list_make(sim_bucket_list_t *b, const sim_grad_segment_t *seg, int n_seg,
                          double cap_bytes, double value_bytes)
{
    memset(b, 0, sizeof *b);
    b->lo = dt_calloc((size_t)n_seg + 1, sizeof(size_t));
    b->hi = dt_calloc((size_t)n_seg + 1, sizeof(size_t));
    b->flops = dt_calloc((size_t)n_seg + 1, sizeof(double));
    b->last = dt_calloc((size_t)n_seg + 1, sizeof(int));
    for (int i = 0; i < n_seg; i++) {
        if (i == 0 || value_bytes * (double)(b->hi[b->n - 1] - b->lo[b->n - 1]) >= cap_bytes) {
            b->hi[b->n] = seg[i].hi; /* a new bucket */
            b->n++;
        }
        b->lo[b->n - 1] = seg[i].lo;
        b->flops[b->n - 1] += seg[i].flops;
        b->last[b->n - 1] = i;
    }
}

void sim_bucket_list_free(sim_bucket_list_t *b)
{
    free(b->lo);
    free(b->hi);
    free(b->flops);
    free(b->last);
    memset(b, 0, sizeof *b);
}

static void stream(int argc, char **argv);

static void buckets_free(sim_run_t *run, void *ctx);

/* The run's buckets, kept under this key (sim_run_keep). */
static const char buckets_key;

static sim_buckets_t *buckets_of(const sim_run_t *run)
{
    return sim_run_kept(run, &buckets_key);
}

int sim_buckets_on(const sim_run_t *run)
{
    return buckets_of(run) != NULL;
}

/* The allreduce strategy's reduction: the workers' groups, as its exchange without buckets. */
static sim_status_t groups_reduce(sim_run_t *run, sim_node_t *node, float *buf, size_t n)
{
    return sim_groups_allreduce(run, sim_elastic_groups(run), node, buf, n);
}

/* The run's buckets with each worker's semaphores, freed with the run. */
static sim_buckets_t *buckets_new(sim_run_t *run, sim_bucket_reduce_fn reduce)
{
    sim_buckets_t *b = dt_calloc(1, sizeof *b);
    b->reduce = reduce;
    b->list = dt_calloc((size_t)run->n_workers, sizeof *b->list);
    b->ready = dt_calloc((size_t)run->n_workers, sizeof(sim_sem_t));
    b->done = dt_calloc((size_t)run->n_workers, sizeof(sim_sem_t));
    for (int i = 0; i < run->n_workers; i++) {
        b->ready[i] = sim_sem_new(0);
        b->done[i] = sim_sem_new(0);
    }
    sim_run_keep(run, &buckets_key, b, buckets_free);
    return b;
}

/* A stream for each worker with buckets. */
static void streams_start(sim_run_t *run, sim_buckets_t *b)
{
    for (int i = 0; i < run->n_workers; i++) {
        if (!b->list[i] || b->list[i]->n == 0)
            continue;
        sim_node_t *node = &run->workers[i];
        char name[48];
        snprintf(name, sizeof name, "%s/stream", node->name);
        sim_start(name, node->host, stream, node, 1); /* a daemon: ends with the workers */
    }
}

void sim_buckets_start(sim_run_t *run)
{
    int n_seg;
    sim_buckets_t *b = buckets_new(run, groups_reduce);
    sim_grad_segment_t *seg = plan_segments(run, &n_seg, &b->forward);
    DT_ASSERT(n_seg > 0);
    sim_bucket_list_make(&b->own, seg, n_seg, run->sc->bucket_mb * 1e6, run->value_bytes);
    free(seg);
    for (int i = 0; i < run->n_workers; i++)
        b->list[i] = &b->own;
    streams_start(run, b);
}

void sim_buckets_start_lists(sim_run_t *run, const sim_bucket_list_t *const *list,
                             sim_bucket_reduce_fn reduce)
{
    sim_buckets_t *b = buckets_new(run, reduce);
    for (int i = 0; i < run->n_workers; i++)
        b->list[i] = list[i];
    streams_start(run, b);
}

void sim_buckets_start_timed(sim_run_t *run, const sim_bucket_list_t *const *list,
                             sim_bucket_time_fn time, int each)
{
    sim_buckets_t *b = buckets_new(run, NULL);
    b->each = each;
    b->time = time;
    b->busy = dt_calloc((size_t)run->n_workers, sizeof(double));
    b->handed = dt_calloc((size_t)run->n_workers, sizeof(long));
    b->awaited = dt_calloc((size_t)run->n_workers, sizeof(long));
    b->end = dt_calloc((size_t)run->n_workers, sizeof(double *));
    for (int i = 0; i < run->n_workers; i++) {
        b->list[i] = list[i];
        if (list[i] && list[i]->n > 0)
            b->end[i] = dt_calloc((size_t)list[i]->n, sizeof(double));
    }
}

void sim_buckets_start_each(sim_run_t *run, const sim_bucket_list_t *const *list,
                            sim_bucket_reduce_fn reduce)
{
    sim_buckets_t *b = buckets_new(run, reduce);
    b->each = 1;
    for (int i = 0; i < run->n_workers; i++)
        b->list[i] = list[i];
    streams_start(run, b);
}

double sim_bucket_list_model(sim_bucket_list_t *b, const sim_run_t *run, double cap_bytes)
{
    int n_seg;
    double forward;
    sim_grad_segment_t *seg = plan_segments(run, &n_seg, &forward);
    DT_ASSERT(n_seg > 0);
    sim_bucket_list_make(b, seg, n_seg, cap_bytes, run->value_bytes);
    free(seg);
    return forward;
}

/* A worker's communication stream: reduces its buckets in order as they are handed over. */
static void stream(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    sim_run_t *run = sim_current;
    sim_node_t *node = sim_self_data();
    sim_buckets_t *b = buckets_of(run);
    const sim_bucket_list_t *l = b->list[node->rank];
    for (;;) {
        for (int k = 0; k < l->n; k++) {
            sim_sem_acquire(b->ready[node->rank]);
            if (b->reduce(run, node, node->grads + l->lo[k], l->hi[k] - l->lo[k]) != SIM_OK)
                run->failed = 1;
            if (b->each)
                sim_sem_release(b->done[node->rank]);
        }
        sim_exchange_done();
        if (!b->each)
            sim_sem_release(b->done[node->rank]);
    }
}

void sim_buckets_ready(sim_run_t *run, sim_node_t *node)
{
    sim_buckets_t *b = buckets_of(run);
    int i = node->rank;
    if (!b->time) {
        sim_sem_release(b->ready[i]);
        return;
    }
    const sim_bucket_list_t *l = b->list[i];
    int k = (int)(b->handed[i]++ % l->n);
    double start = b->busy[i] > sim_now() ? b->busy[i] : sim_now();
    b->busy[i] = start + b->time(run, node, l->lo[k], l->hi[k] - l->lo[k]);
    b->end[i][k] = b->busy[i];
}

void sim_buckets_wait(sim_run_t *run, sim_node_t *node)
{
    sim_buckets_t *b = buckets_of(run);
    int i = node->rank;
    if (!b->time) {
        /* the stream's collectives the worker waits on: exposed data communication */
        double t0 = sim_now();
        sim_sem_acquire(b->done[i]);
        sim_breakdown_interval(node, SIM_STATE_COMM, t0, sim_now());
        return;
    }
    double until = b->each ? b->end[i][b->awaited[i]++ % b->list[i]->n] : b->busy[i];
    sim_comm_wait(run, node, until - sim_now());
}

double sim_buckets_step(sim_run_t *run, sim_node_t *node, const float *params, const uint32_t *idx,
                        int batch)
{
    sim_buckets_t *b = buckets_of(run);
    double wall, loss = sim_compute_grad_only(run, params, node->grads, idx, batch, &wall);
    /* measured time: each part's share of the wall time in proportion to its FLOPs */
    double per_flop = wall / (run->step_flops * batch);
    sim_charge(run, node, b->forward * batch, b->forward * batch * per_flop);
    for (int k = 0; k < b->own.n; k++) {
        sim_charge(run, node, b->own.flops[k] * batch, b->own.flops[k] * batch * per_flop);
        sim_buckets_ready(run, node);
    }
    sim_count_step(run, node, batch, loss);
    sim_buckets_wait(run, node);
    return loss;
}

static void buckets_free(sim_run_t *run, void *ctx)
{
    sim_buckets_t *b = ctx;
    for (int i = 0; i < run->n_workers; i++) {
        if (b->ready[i])
            sim_sem_free(b->ready[i]);
        if (b->done[i])
            sim_sem_free(b->done[i]);
    }
    free(b->ready);
    free(b->done);
    for (int i = 0; b->end && i < run->n_workers; i++)
        free(b->end[i]);
    free(b->end);
    free(b->busy);
    free(b->handed);
    free(b->awaited);
    free(b->list);
    sim_bucket_list_free(&b->own);
    free(b);
}
