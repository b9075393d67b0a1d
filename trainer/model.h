/* Models over ONE flat float buffer of parameters (as llm.c keeps its).
 *
 * A model is a list of layers whose weights and biases are offsets into one buffer; the
 * gradient buffer, the optimizer state and every message a strategy sends share that
 * layout, so a push, an all-reduce or a FedAvg average is one operation on one buffer.
 *
 *   logreg  in -> classes (one dense layer)
 *   mlp     in -> hidden[0] -> ... -> classes, ReLU between dense layers
 *   cnn     conv k x k (c1) -> ReLU -> maxpool 2 -> conv k x k (c2) -> ReLU -> maxpool 2
 *           -> dense (fc) -> ReLU -> dense (classes); convolutions by im2col + GEMM.
 *   gpt     a decoder-only transformer on windows of tokens (gpt.h, gpt.c); it has no
 *           layer list (n_layers is 0): its layout is m->gpt.
 *
 * Dense weights are (out, in) as in PyTorch; conv weights are (out_c, in_c * k * k).
 * Activations of the conv part are laid out (channels, batch, h, w) so that each
 * convolution is ONE GEMM over the whole batch; a permute turns them into (batch, features)
 * before the dense part. */
#ifndef DTSIM_MODEL_H
#define DTSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "common.h"
#include "gpt.h"

#define TRAINER_MAX_HIDDEN 8
#define TRAINER_MAX_LAYERS 24

typedef enum trainer_arch {
    TRAINER_ARCH_LOGREG,
    TRAINER_ARCH_MLP,
    TRAINER_ARCH_CNN,
    TRAINER_ARCH_GPT,
} trainer_arch_t;

typedef struct trainer_model_config {
    trainer_arch_t arch;
    int in_channels, in_h, in_w; /* sample shape; dense-only models use in_channels*in_h*in_w */
    int classes;
    int hidden[TRAINER_MAX_HIDDEN]; /* mlp hidden sizes; gpt: hidden[0] is the width */
    int n_hidden;
    int conv[2];            /* cnn output channels of the two convolutions */
    int kernel;             /* cnn kernel size */
    int fc;                 /* cnn dense hidden size */
    int layers, heads, seq; /* gpt blocks, attention heads, tokens per window */
} trainer_model_config_t;

typedef enum trainer_layer_kind {
    TRAINER_LAYER_DENSE,
    TRAINER_LAYER_CONV,
    TRAINER_LAYER_RELU,
    TRAINER_LAYER_MAXPOOL,
    TRAINER_LAYER_FLATTEN, /* (c, batch, h, w) -> (batch, c*h*w) */
} trainer_layer_kind_t;

typedef struct trainer_layer {
    trainer_layer_kind_t kind;
    int in_c, in_h, in_w;     /* input shape per sample */
    int out_c, out_h, out_w;  /* output shape per sample */
    int k;                    /* conv kernel or pool size */
    size_t w_off, w_len;      /* weights in the parameter buffer (dense, conv) */
    size_t b_off, b_len;      /* biases */
    size_t in_size, out_size; /* elements per sample */
} trainer_layer_t;

typedef struct trainer_model {
    trainer_model_config_t cfg;
    int n_layers;
    trainer_layer_t layers[TRAINER_MAX_LAYERS];
    size_t n_params;
    size_t in_size;           /* elements per input sample */
    int classes;              /* gpt: the vocabulary */
    trainer_gpt_layout_t gpt; /* gpt only */
} trainer_model_t;

/* Fills cfg with the defaults for an architecture on 1x28x28 inputs and 10 classes:
 * mlp 256,128; cnn conv 16,32 kernel 5, fc 128; gpt 2 layers, 4 heads, seq 64 (its width
 * is hidden[0]: one size). */
void trainer_model_config_default(trainer_model_config_t *cfg, trainer_arch_t arch);
/* "logreg" | "mlp" | "cnn" | "gpt" -> arch; returns DT_ERR_INPUT on anything else. */
dt_status trainer_arch_parse(trainer_arch_t *arch, const char *text, dt_err_t *err);
const char *trainer_arch_name(trainer_arch_t arch);
/* Parses "256,128" into hidden sizes (each in [1, 1<<20], at most TRAINER_MAX_HIDDEN). */
dt_status trainer_hidden_parse(trainer_model_config_t *cfg, const char *text, dt_err_t *err);

/* Lays out the layers and the parameter buffer. DT_ERR_INPUT if the shapes do not fit
 * (e.g. a cnn input too small for two conv + pool stages). */
dt_status trainer_model_build(trainer_model_t *m, const trainer_model_config_t *cfg, dt_err_t *err);

/* Seeded initialisation into a host buffer of m->n_params floats: weights and biases
 * uniform in +-1/sqrt(fan_in) (PyTorch's default for Linear and Conv2d). */
void trainer_model_init_params(const trainer_model_t *m, float *params, uint64_t seed);

/* FLOPs per sample. Convention: a matrix product counts 2*m*n*k; bias add, bias gradient,
 * ReLU and its mask and col2im accumulation count 1 per element; max-pooling counts 1 per
 * input element forward and 1 per output element backward (the scatter); softmax cross-entropy
 * counts 5 per logit forward and 2 per logit backward. The first layer computes no input gradient.
 * Exact for what the kernels do. */
typedef struct trainer_flops {
    double forward;  /* per sample, including the loss */
    double backward; /* per sample */
} trainer_flops_t;
trainer_flops_t trainer_model_flops(const trainer_model_t *m);
/* The same for layer i alone (the loss is not a layer: forward 5, backward 2 per logit). */
trainer_flops_t trainer_model_layer_flops(const trainer_model_t *m, int i);
/* Floats one sample leaves in memory for the backward pass of layers [first, last): every
 * layer's output, the im2col columns of convolutions and the max-pool winners (int32). */
size_t trainer_model_activation_floats(const trainer_model_t *m, int first, int last);
/* FLOPs of one optimizer update over n parameters (independent of batch size). */
double trainer_sgd_flops(size_t n, float momentum, float weight_decay);

/* Activations, their gradients and scratch space for batches of up to max_batch samples,
 * allocated once on the backend (never per step). */
typedef struct trainer_workspace {
    const trainer_backend_t *be;
    const trainer_model_t *m;
    int max_batch;
    int max_replicas; /* replicas side by side (trainer_model_*_group) */
    float *x;         /* (max_batch, in_size) dev: the input batch */
    uint8_t *labels;  /* (max_batch) dev */
    /* Output of each layer and its gradient, dev; a ReLU followed by a max-pool in the same
     * pass leaves both of its own unwritten (the pair runs as pool then ReLU, model.c). */
    float *act[TRAINER_MAX_LAYERS];
    float *dact[TRAINER_MAX_LAYERS];
    float *col[TRAINER_MAX_LAYERS];      /* im2col buffer of conv layers, dev */
    int32_t *argmax[TRAINER_MAX_LAYERS]; /* maxpool winners, dev */
    float *dcol;                         /* scratch for conv input gradients, dev */
    float *dbias;                        /* (largest bias) scratch for fused updates, dev */
    float *dwt;                          /* 2 x the largest conv weight: a sliced conv's weight
                                          * gradient transposed, then not, dev (model.c) */
    trainer_gpt_acts_t *gpt;             /* gpt's activations (gpt.c); NULL otherwise */
} trainer_workspace_t;

void trainer_workspace_init(trainer_workspace_t *ws, const trainer_backend_t *be,
                            const trainer_model_t *m, int max_batch);
/* The same for up to max_replicas replicas of the model at once, each with its own batch of
 * up to max_batch samples: every activation buffer holds max_replicas blocks. */
void trainer_workspace_init_group(trainer_workspace_t *ws, const trainer_backend_t *be,
                                  const trainer_model_t *m, int max_batch, int max_replicas);
void trainer_workspace_free(trainer_workspace_t *ws);

/* Copies a batch (host) into the workspace. x is (batch, in_size), labels (batch); for
 * replicas, their batches one after the other (batch = replicas * their batch). */
void trainer_workspace_load(trainer_workspace_t *ws, const float *x, const uint8_t *labels,
                            int batch);

/* Forward pass over the loaded batch with params (dev); logits end in the last act. */
void trainer_model_forward(trainer_workspace_t *ws, const float *params, int batch);
/* Loss over the loaded labels: returns the summed loss and the correct count, and seeds the
 * backward pass with d(mean loss)/d(logits). */
void trainer_model_loss(trainer_workspace_t *ws, int batch, double *loss_sum, int *correct);
/* The loss of the loaded batch without a backward pass, for evaluation: per-sample sums as
 * trainer_model_loss, the correct count as a double (gpt: next tokens right / seq). */
void trainer_model_score(trainer_workspace_t *ws, int batch, double *loss_sum, double *correct);
/* DT_ERR_INPUT when the backend cannot run the model (gpt on a backend without its ops). */
dt_status trainer_model_check_backend(const trainer_model_t *m, const trainer_backend_t *be,
                                      dt_err_t *err);
/* Backward pass: grads (dev, n_params) is overwritten with d(mean loss)/d(params). */
void trainer_model_backward(trainer_workspace_t *ws, const float *params, float *grads, int batch);
/* Backward pass fused with a plain SGD update (no momentum): each layer's weight-gradient
 * GEMM writes params = (1 - lr*wd) params - lr * grad in place (GEMM alpha and beta), after
 * that layer's input gradient has used the old weights. Same result as backward + update
 * up to float rounding, without the gradient buffer's write, re-read and zeroing. */
void trainer_model_backward_sgd(trainer_workspace_t *ws, float *params, int batch, float lr,
                                float weight_decay);

/* Layers [first, last) alone (pipeline stages): the forward pass reads layer first's input
 * from act[first - 1] (the loaded batch when first = 0) and leaves act[first .. last); the
 * backward pass reads dact[last - 1], writes the gradients of those layers' parameters into
 * grads (added to what grads holds with accumulate, for micro-batches) and, when first > 0,
 * the gradient of the stage's input into dact[first - 1]. gpt: its pipeline layers
 * (trainer_gpt_n_layers: the embeddings, the blocks, the output layer; gpt.h). */
void trainer_model_forward_range(trainer_workspace_t *ws, const float *params, int batch, int first,
                                 int last);
void trainer_model_backward_range(trainer_workspace_t *ws, const float *params, float *grads,
                                  int batch, int first, int last, int accumulate);
/* Layer i's output (act[i]) and its gradient (dact[i]), for gpt too. */
const float *trainer_model_range_output(const trainer_workspace_t *ws, int i);
const float *trainer_model_range_grad(const trainer_workspace_t *ws, int i);

/* Replicas (federated clients trained side by side on one GPU): `count` models of this
 * architecture, replica r with parameters params + r * stride (and grads + r * stride), each
 * on its own batch of `batch` samples, loaded one replica after the other (ws->x holds
 * count * batch rows). Each call equals `count` single calls on the replicas in turn, as
 * one launch per op instead of `count` (the CPU backend makes exactly the single calls).
 * loss_sum and correct get one entry per replica. Only the plain backward exists for
 * replicas: the fused update is for one model. */
void trainer_model_forward_group(trainer_workspace_t *ws, const float *params, size_t stride,
                                 int count, int batch);
void trainer_model_loss_group(trainer_workspace_t *ws, int count, int batch, double *loss_sum,
                              int *correct);
void trainer_model_backward_group(trainer_workspace_t *ws, const float *params, float *grads,
                                  size_t stride, int count, int batch);

#endif
