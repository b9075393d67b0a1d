/* Training and evaluation on one backend: the learner (parameters, gradients and momentum
 * of one model replica) and the loops that every strategy and the `dtsim train` command
 * build on. */
#ifndef DTSIM_TRAIN_H
#define DTSIM_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "data.h"
#include "model.h"
#include "rng.h"

typedef struct trainer_sgd {
    float lr;
    float momentum;
    float weight_decay;
} trainer_sgd_t;

/* Learning rate over a run: constant, or cosine annealing from the base rate at progress 0
 * to 0 at progress 1 (Loshchilov and Hutter 2017). */
typedef enum trainer_lr_schedule {
    TRAINER_LR_CONSTANT,
    TRAINER_LR_COSINE,
} trainer_lr_schedule_t;

float trainer_lr_at(trainer_lr_schedule_t schedule, float base, double progress);
/* "constant" | "cosine"; DT_ERR_INPUT otherwise. */
dt_status trainer_lr_schedule_parse(trainer_lr_schedule_t *s, const char *text, dt_err_t *err);

/* One replica. params, grads and velocity are dev buffers of m->n_params floats in the
 * model's flat layout; the workspace and host staging are its own. */
typedef struct trainer_learner {
    const trainer_backend_t *be;
    const trainer_model_t *m;
    trainer_sgd_t sgd;
    trainer_workspace_t ws;
    float *params, *grads, *velocity; /* dev */
    uint32_t *batch_idx;              /* (max_batch) indices scratch for evaluation */
    uint32_t *order;                  /* epoch order scratch, grown on demand */
    size_t order_cap;
    trainer_rng_t shuffle;            /* batch order, its own stream */
} trainer_learner_t;

/* Allocates everything once and initialises the parameters from seed. */
void trainer_learner_init(trainer_learner_t *l, const trainer_backend_t *be,
                          const trainer_model_t *m, const trainer_sgd_t *sgd, int max_batch,
                          uint64_t seed);
void trainer_learner_free(trainer_learner_t *l);

/* Gathers samples idx[0..batch) of ds into the workspace. */
void trainer_learner_load(trainer_learner_t *l, const trainer_dataset_t *ds,
                          const uint32_t *idx, int batch);

/* Gradient of the mean loss over samples idx[0..batch) into l->grads; returns the mean
 * loss (NaN or Inf if the model diverged: the caller decides). */
double trainer_learner_grad(trainer_learner_t *l, const trainer_dataset_t *ds,
                            const uint32_t *idx, int batch);
/* Applies l->grads to l->params with l->sgd. */
void trainer_learner_update(trainer_learner_t *l);
/* One training step on samples idx[0..batch): gradient and update. Without momentum the
 * update is fused into the backward pass (l->grads is then not written). Returns the mean
 * loss before the update; when it is not finite, the parameters are left untouched. */
double trainer_learner_step(trainer_learner_t *l, const trainer_dataset_t *ds,
                            const uint32_t *idx, int batch);

typedef struct trainer_epoch_stats {
    double mean_loss; /* over the batches of the epoch; NaN/Inf if it diverged */
    size_t samples;
    size_t steps;
    int diverged;     /* a step produced a non-finite loss; the epoch stopped there */
} trainer_epoch_stats_t;

/* One pass over samples subset[0..n) (or 0..n-1 when subset is NULL) in an order shuffled
 * from the learner's stream, batches of `batch` with a final partial batch. */
trainer_epoch_stats_t trainer_learner_epoch(trainer_learner_t *l, const trainer_dataset_t *ds,
                                            const uint32_t *subset, size_t n, int batch);

typedef struct trainer_eval {
    double loss;     /* mean over the set */
    double accuracy; /* fraction correct */
} trainer_eval_t;

/* Evaluates params (dev) on the whole data set in batches of the workspace's size. */
trainer_eval_t trainer_evaluate(trainer_learner_t *l, const float *params,
                                const trainer_dataset_t *ds);
/* The same on the samples idx[0..n) of ds only (idx NULL: the first n). */
trainer_eval_t trainer_evaluate_subset(trainer_learner_t *l, const float *params,
                                       const trainer_dataset_t *ds, const uint32_t *idx,
                                       size_t n);

#endif
