/* Gradient bucketing with overlap (strategy.bucket_mb: allreduce, and pipeline over its
 * replicas): as PyTorch DDP and Horovod's tensor fusion do, the gradients are grouped into
 * buckets of about bucket_mb in the order the backward pass produces them, and each bucket
 * is all-reduced as soon as its last layer's gradient is ready, while the backward pass goes
 * on with the layers below.
 *
 * Each worker gets a second actor on its host, its communication stream: the worker charges
 * the backward pass bucket by bucket, handing each finished bucket to the stream (a
 * semaphore), and waits for the stream to finish the last all-reduce before its optimizer
 * step. The buckets are contiguous slices of the gradient buffer: layers sit in it in
 * forward order, so the layers of a bucket (consecutive in backward order) are adjacent.
 * Real models split their backward FLOPs by layer (trainer_model_layer_flops, activations'
 * and the loss's FLOPs going with the layer whose gradient follows them); timing-only models
 * by their profile's [backward] lines. The allreduce strategy buckets the whole model
 * (sim_buckets_start, sim_buckets_step); the pipeline each stage's layers, on the step's
 * last micro-batch (sim_bucket_list_make, sim_buckets_start_lists). */
#ifndef DTSIM_BUCKET_H
#define DTSIM_BUCKET_H

#include "run.h"

typedef struct sim_buckets sim_buckets_t;

/* One layer's gradient, in backward order: the slice [lo, hi) of the gradient buffer and the
 * backward FLOPs per sample from the previous layer's gradient to its own. */
typedef struct sim_grad_segment {
    size_t lo, hi;
    double flops;
} sim_grad_segment_t;

/* Buckets in backward order: bucket k is the slice [lo[k], hi[k]), its backward FLOPs per
 * sample flops[k], its last segment last[k]. */
typedef struct sim_bucket_list {
    int n;
    size_t *lo, *hi; /* (n) */
    double *flops;   /* (n) */
    int *last;       /* (n) */
} sim_bucket_list_t;

/* Groups n_seg segments (backward order, adjacent slices) into buckets: a bucket closes
 * once it holds cap_bytes of value_bytes each (DDP's bucket_cap_mb). */
void sim_bucket_list_make(sim_bucket_list_t *b, const sim_grad_segment_t *seg, int n_seg,
                          double cap_bytes, double value_bytes);
void sim_bucket_list_free(sim_bucket_list_t *b);

/* A stream's all-reduce of a bucket: node's buf (n values) summed over its peers. */
typedef sim_status_t (*sim_bucket_reduce_fn)(sim_run_t *run, sim_node_t *node, float *buf,
                                             size_t n);

/* Plans the buckets of the run's model and starts every worker's stream (call from the
 * strategy's deploy, after the groups exist); freed with the run. */
void sim_buckets_start(sim_run_t *run);
/* Starts a stream for each worker i whose list[i] has buckets: it reduces them, slices of
 * node->grads, in order with reduce as the worker hands them over. The lists stay the
 * caller's and must outlive the run's actors. */
void sim_buckets_start_lists(sim_run_t *run, const sim_bucket_list_t *const *list,
                             sim_bucket_reduce_fn reduce);
/* The same, its done released after every bucket: sim_buckets_wait returns once the next
 * bucket not yet waited for is reduced (zero's prefetched gathers and reduce-scatters). */
void sim_buckets_start_each(sim_run_t *run, const sim_bucket_list_t *const *list,
                            sim_bucket_reduce_fn reduce);
/* A stream's bucket in closed form: the seconds its collective takes on node, the n values
 * from lo of the gradient buffer (its bytes counted by the function). */
typedef double (*sim_bucket_time_fn)(sim_run_t *run, sim_node_t *node, size_t lo, size_t n);
/* Streams without actors, for collectives in closed form: a bucket handed over at t starts
 * when the stream is free (at t, or when the bucket before it ends) and takes time()'s
 * seconds; sim_buckets_wait waits (as communication) until the next bucket not yet waited
 * for ends (each) or until the last handed over ends. The same timeline as a stream actor
 * waiting those seconds, with no actor: at tens of thousands of workers SimGrid runs out of
 * memory mappings for the streams' stacks. */
void sim_buckets_start_timed(sim_run_t *run, const sim_bucket_list_t *const *list,
                             sim_bucket_time_fn time, int each);
/* The whole model's buckets of cap_bytes in backward order, as sim_buckets_start plans them;
 * returns the forward FLOPs per sample. */
double sim_bucket_list_model(sim_bucket_list_t *b, const sim_run_t *run, double cap_bytes);
/* Whether the run's buckets are started (its workers hand gradients to streams). */
int sim_buckets_on(const sim_run_t *run);
/* Hands node's next bucket to its stream. */
void sim_buckets_ready(sim_run_t *run, sim_node_t *node);
/* Returns once node's stream has reduced the last of its buckets handed over. */
void sim_buckets_wait(sim_run_t *run, sim_node_t *node);
/* One step of a worker: the real gradient of params on idx (timing-only: none), the compute
 * charged bucket by bucket with each bucket's all-reduce started when it is ready; returns
 * when node->grads holds the sum over the workers. Returns the mean loss. */
double sim_buckets_step(sim_run_t *run, sim_node_t *node, const float *params, const uint32_t *idx,
                        int batch);

#endif
