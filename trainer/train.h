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

/* The optimizer (model.optimizer): SGD with momentum as torch.optim.SGD, Adam as
 * torch.optim.Adam (weight decay added to the gradient) or AdamW as torch.optim.AdamW
 * (weight decay decoupled from the gradient). */
typedef enum trainer_optimizer {
    TRAINER_OPT_SGD,
    TRAINER_OPT_ADAM,
    TRAINER_OPT_ADAMW,
} trainer_optimizer_t;

/* "sgd" | "adam" | "adamw". */
const char *trainer_optimizer_name(trainer_optimizer_t kind);

/* The optimizer's settings; SGD's three come first (so {lr, momentum, wd} still reads). */
typedef struct trainer_optim {
    float lr;
    float momentum; /* sgd */
    float weight_decay;
    trainer_optimizer_t kind;
    double beta1, beta2, eps; /* adam, adamw (PyTorch's defaults: 0.9, 0.999, 1e-8), double
                              as PyTorch keeps them */
    float clip_norm; /* the gradient's largest 2-norm over all parameters; 0: no clipping */
} trainer_optim_t;

/* Floats of optimizer state per parameter: 2 for Adam's moments, 1 for SGD's momentum
 * (momentum != 0), else 0. */
int trainer_optim_state_floats(const trainer_optim_t *o);

/* Floating-point operations of one update of n parameters as trainer_optim_update does it,
 * per parameter: SGD 2 (w -= lr g), + 2 with weight decay, + 2 with momentum
 * (trainer_sgd_flops); Adam and AdamW 13 (the first moment's lerp 3, the second's 4, the
 * denominator's square root, division and epsilon 3, the step 3), + 2 for Adam's L2 term or
 * 1 for AdamW's decay when weight_decay is set. trainer_clip_flops: trainer_clip's, 3 per
 * parameter (the sum of squares' 2, the scaling's 1) when clip_norm is set, else 0. */
double trainer_optim_flops(const trainer_optim_t *o, size_t n);
double trainer_clip_flops(const trainer_optim_t *o, size_t n);

/* One update of w (n floats) by the gradient g: SGD through be->sgd_update with the momentum
 * m, Adam's step with moments m and v (v unused by SGD, m by SGD without momentum: NULL
 * allowed). lr is this step's rate; t the updates this state has had, this one included
 * (Adam's bias correction). */
void trainer_optim_update(const trainer_backend_t *be, const trainer_optim_t *o, float lr, long t,
                          float *w, const float *g, float *m, float *v, size_t n);

/* The factor torch.nn.utils.clip_grad_norm_ scales a gradient of total 2-norm `norm` by:
 * clip / (norm + 1e-6) when that is below 1, else 1 (also when clip is 0: no clipping). */
float trainer_clip_factor(float clip, double norm);
/* Clips g (n floats, dev) to o->clip_norm by its 2-norm (nothing when clip_norm is 0).
 * Returns the norm before clipping (0 when clipping is off: not computed). */
double trainer_clip(const trainer_backend_t *be, const trainer_optim_t *o, float *g, size_t n);

/* Learning rate over a run (Loshchilov and Hutter 2017; llm.c's warmup): `warmup` steps of
 * base (s + 1) / warmup at step s, then constant, or decay from base to `min` over the steps
 * left: cosine (min + (base - min) (1 + cos(pi p)) / 2) or linear (base - (base - min) p),
 * p = (step - warmup) / (total - warmup). */
typedef enum trainer_lr_schedule {
    TRAINER_LR_CONSTANT,
    TRAINER_LR_COSINE,
    TRAINER_LR_LINEAR,
} trainer_lr_schedule_t;

typedef struct trainer_lr {
    trainer_lr_schedule_t schedule;
    float base;  /* model.lr */
    float min;   /* the decay's floor (model.lr_min) */
    long warmup; /* steps of linear warmup (model.warmup); 0: none */
} trainer_lr_t;

/* The rate at step `step` (0-based) of `total`. */
float trainer_lr_at(const trainer_lr_t *p, long step, long total);
/* "constant" | "cosine" | "linear"; DT_ERR_INPUT otherwise. */
dt_status trainer_lr_schedule_parse(trainer_lr_schedule_t *s, const char *text, dt_err_t *err);

/* One replica. params, grads and velocity are dev buffers of m->n_params floats in the
 * model's flat layout; the workspace and host staging are its own. */
typedef struct trainer_learner {
    const trainer_backend_t *be;
    const trainer_model_t *m;
    trainer_optim_t sgd;
    trainer_workspace_t ws;
    float *params, *grads, *velocity; /* dev; velocity: momentum or Adam's first moment */
    float *moment2;                   /* dev, Adam's second moment, NULL for sgd */
    long updates;                     /* updates applied (Adam's bias correction) */
    trainer_lr_t lr;                  /* with lr_total > 0: sgd.lr at each step is
                                         trainer_lr_at(&lr, steps taken, lr_total) */
    long lr_total, lr_steps;
    uint32_t *batch_idx; /* (max_batch) indices scratch for evaluation */
    uint32_t *order;     /* epoch order scratch, grown on demand */
    size_t order_cap;
    trainer_rng_t shuffle; /* batch order, its own stream */
} trainer_learner_t;

/* Allocates everything once and initialises the parameters from seed. */
void trainer_learner_init(trainer_learner_t *l, const trainer_backend_t *be,
                          const trainer_model_t *m, const trainer_optim_t *sgd, int max_batch,
                          uint64_t seed);
void trainer_learner_free(trainer_learner_t *l);

/* Gathers samples idx[0..batch) of ds into the workspace. */
void trainer_learner_load(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                          int batch);

/* Gradient of the mean loss over samples idx[0..batch) into l->grads; returns the mean
 * loss (NaN or Inf if the model diverged: the caller decides). */
double trainer_learner_grad(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                            int batch);
/* Applies l->grads to l->params with l->sgd (clipped first with clip_norm). */
void trainer_learner_update(trainer_learner_t *l);
/* One training step on samples idx[0..batch): gradient and update. With plain SGD (no
 * momentum, no clipping) the update is fused into the backward pass (l->grads is then not
 * written). Returns the mean
 * loss before the update; when it is not finite, the parameters are left untouched. */
double trainer_learner_step(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                            int batch);

typedef struct trainer_epoch_stats {
    double mean_loss; /* over the batches of the epoch; NaN/Inf if it diverged */
    size_t samples;
    size_t steps;
    int diverged; /* a step produced a non-finite loss; the epoch stopped there */
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
                                       const trainer_dataset_t *ds, const uint32_t *idx, size_t n);

#endif
