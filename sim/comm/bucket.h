/* Gradient bucketing with overlap (strategy.bucket_mb, allreduce): as PyTorch DDP and
 * Horovod's tensor fusion do, the gradients are grouped into buckets of about bucket_mb in
 * the order the backward pass produces them, and each bucket is all-reduced as soon as its
 * last layer's gradient is ready, while the backward pass goes on with the layers below.
 *
 * Each worker gets a second actor on its host, its communication stream: the worker charges
 * the forward pass, then the backward pass bucket by bucket, handing each finished bucket to
 * the stream (a semaphore), and waits for the stream to finish the last all-reduce before
 * its optimizer step. The buckets are contiguous slices of the gradient buffer: layers sit in
 * it in forward order, so the layers of a bucket (consecutive in backward order) are
 * adjacent. Real models split their backward FLOPs by layer (trainer_model_layer_flops,
 * activations' and the loss's FLOPs going with the layer whose gradient follows them);
 * timing-only models by their profile's [backward] lines. */
#ifndef DTSIM_BUCKET_H
#define DTSIM_BUCKET_H

#include "run.h"

typedef struct sim_buckets sim_buckets_t;

/* Plans the buckets of the run's model and starts every worker's stream (call from the
 * strategy's deploy, after the groups exist); freed with the run. */
void sim_buckets_start(sim_run_t *run);
/* One step of a worker: the real gradient of params on idx (timing-only: none), the compute
 * charged bucket by bucket with each bucket's all-reduce started when it is ready; returns
 * when node->grads holds the sum over the workers. Returns the mean loss. */
double sim_buckets_step(sim_run_t *run, sim_node_t *node, const float *params,
                        const uint32_t *idx, int batch);

#endif
