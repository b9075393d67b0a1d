/* The compute backend: one table of function pointers that every model op, the optimizer
 * and the strategies' buffer operations go through (as ggml's backend interface does).
 * cpu.c fills it with OpenBLAS and plain loops; a CUDA backend fills the same table.
 *
 * Pointers marked "dev" live in the backend's memory (host memory for the CPU backend);
 * move data in and out with upload/download. Matrices are row-major. */
#ifndef DTSIM_BACKEND_H
#define DTSIM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The longest sequence the transformer's ops take (model.seq). */
#define TRAINER_GPT_MAX_SEQ 1024

/* One Adam step's constants (adam_update), computed on the host in double and rounded to
 * float as PyTorch rounds its Python scalars (trainer_optim_update). */
typedef struct trainer_adam_step {
    float decay;           /* AdamW: w's factor 1 - lr wd; 1: none */
    float l2;              /* Adam: g' = g + l2 w; 0 for AdamW */
    float one_minus_beta1; /* lerp's weight */
    float beta2, one_minus_beta2, eps;
    float step_size;  /* lr / (1 - beta1^t) */
    float bias2_sqrt; /* sqrt(1 - beta2^t) */
} trainer_adam_step_t;

typedef struct trainer_backend {
    const char *name;

    /* memory */
    void *(*alloc)(size_t bytes); /* zero-filled; never NULL (checked) */
    void (*free)(void *dev);
    void (*upload)(void *dev_dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *dev_src, size_t bytes);
    void (*copy)(void *dev_dst, const void *dev_src, size_t bytes);
    /* Batch assembly from a host data set: rows idx[0..batch) of x (n, dim) and their
     * labels go to x_dst (batch, dim) and y_dst (batch), both dev. */
    void (*gather)(float *x_dst, uint8_t *y_dst, const float *x, const uint8_t *y,
                   const uint32_t *idx, int batch, size_t dim);

    /* c (m, n) = alpha * op(a) op(b) + beta * c, op(a) (m, k), op(b) (k, n); trans_x != 0
     * means x is stored transposed. lda/ldb/ldc are row strides. */
    void (*gemm)(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);

    /* y viewed as (outer, channels, inner): y[o][c][i] += bias[c]. */
    void (*bias_add)(float *y, const float *bias, int outer, int channels, int inner);
    /* dbias[c] = sum over o, i of dy[o][c][i] (overwrites dbias). */
    void (*bias_grad)(float *dbias, const float *dy, int outer, int channels, int inner);

    /* y = max(x, 0); dx = dy where y > 0 else 0 (in place allowed: y == x, dx == dy). */
    void (*relu_forward)(float *y, const float *x, size_t n);
    void (*relu_backward)(float *dx, const float *dy, const float *y, size_t n);

    /* Convolution helpers over `planes` images stored plane after plane, each (h, w),
     * channel-major across the batch: x is (channels, batch, h, w). Kernel k x k, stride 1,
     * no padding; oh = h - k + 1, ow = w - k + 1.
     * col is (channels * k * k, batch * oh * ow). col2im overwrites dx. */
    void (*im2col)(float *col, const float *x, int channels, int batch, int h, int w, int k);
    void (*col2im)(float *dx, const float *col, int channels, int batch, int h, int w, int k);
    /* Where nonzero, a convolution runs its im2col, col2im and products slice of samples by
     * slice, each slice's col at most this many bytes (at least one sample), and computes col
     * again in the backward pass instead of keeping it (model.c): the CPU's, to stay in its
     * cache. 0: the whole batch in one call each (a GPU's). */
    size_t conv_slice_bytes;

    /* Max pooling k x k, stride k, over `planes` planes of (h, w) (h, w multiples of k);
     * argmax (planes * h/k * w/k) records the winning offset inside each plane; on ties the
     * first maximum in row-major order inside the window wins.
     * maxpool_backward overwrites dx. */
    void (*maxpool_forward)(float *y, int32_t *argmax, const float *x, int planes, int h, int w,
                            int k);
    void (*maxpool_backward)(float *dx, const float *dy, const int32_t *argmax, int planes, int h,
                             int w, int k);

    /* (a, b, inner) -> (b, a, inner), and its use backwards is the same call with a, b
     * swapped. Moves conv activations (channels, batch, hw) to (batch, features). */
    void (*permute)(float *dst, const float *src, int a, int b, int inner);

    /* Softmax cross-entropy over logits (batch, classes <= 256) with labels (batch, dev).
     * Returns the summed loss and the number of correct argmax predictions in host memory.
     * If dlogits is not NULL it gets (softmax - onehot) * grad_scale. */
    void (*softmax_xent)(float *dlogits, const float *logits, const uint8_t *labels, int batch,
                         int classes, float grad_scale, double *loss_sum, int *correct);

    /* SGD as PyTorch defines it: g' = g + wd * w; v = momentum * v + g'; w -= lr * v
     * (with momentum 0, v is not touched and may be NULL). */
    void (*sgd_update)(float *w, const float *g, float *v, size_t n, float lr, float momentum,
                       float weight_decay);

    /* Adam as PyTorch defines it, per element (torch.optim.Adam / AdamW, single-tensor):
     * w *= decay; g' = g + l2 w; m = lerp(m, g', 1 - beta1); v = beta2 v + (1 - beta2) g'^2;
     * w -= step_size m / (sqrt(v) / bias2_sqrt + eps). */
    void (*adam_update)(float *w, const float *g, float *m, float *v, size_t n,
                        const trainer_adam_step_t *a);
    /* The sum of x[i]^2 (in double), returned in host memory: a gradient's norm. */
    double (*sumsq)(const float *x, size_t n);

    /* Buffer ops for strategies. */
    void (*axpy)(size_t n, float a, const float *x, float *y); /* y += a x */
    void (*scale)(size_t n, float a, float *x);                /* x *= a */
    void (*zero)(float *x, size_t n);                          /* x = 0 */
    /* dst = sum_i weights[i] * srcs[i]; dst may alias srcs[0]. */
    void (*average)(float *dst, const float *const *srcs, const float *weights, int count,
                    size_t n);

    /* Replicas: `count` models of one architecture trained side by side (the clients of a
     * fedavg round on one GPU). Their activations are `count` consecutive blocks; their
     * parameters lie a fixed stride apart. Each op equals `count` calls of the op above on
     * block r (and on bias + r * stride): the CPU backend makes exactly those calls, the
     * CUDA backend one launch. count >= 1.
     * gemm: block r of c = alpha op(a + r stride_a) op(b + r stride_b) + beta (c + r stride_c). */
    void (*gemm_batched)(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                         float beta, float *c, int ldc, size_t stride_c, int count);
    /* y is count blocks of (outer, channels, inner); block r adds bias + r * bias_stride. */
    void (*bias_add_batched)(float *y, const float *bias, size_t bias_stride, int count, int outer,
                             int channels, int inner);
    void (*bias_grad_batched)(float *dbias, size_t dbias_stride, const float *dy, int count,
                              int outer, int channels, int inner);
    /* count blocks of (a, b, inner) -> count blocks of (b, a, inner). */
    void (*permute_batched)(float *dst, const float *src, int count, int a, int b, int inner);
    /* count blocks of batch rows: loss_sum[r] and correct[r] (host arrays) for block r. */
    void (*softmax_xent_batched)(float *dlogits, const float *logits, const uint8_t *labels,
                                 int count, int batch, int classes, float grad_scale,
                                 double *loss_sum, int *correct);
    /* The transformer's ops (model.arch = gpt, gpt.c); optional: NULL in a backend without
     * them, which then refuses the model (trainer_model_check_backend). n rows of C. */
    /* x (batch, seq + 1) token ids stored as floats -> tokens (batch, seq), the inputs, and
     * targets (batch, seq), the next tokens. */
    void (*tokens_split)(int32_t *tokens, uint8_t *targets, const float *x, int batch, int seq);
    /* out (batch, seq, C) = wte[tokens] + wpe[position]. */
    void (*embed_forward)(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                          int batch, int seq, int C);
    /* dwte[token] += dout (added to what dwte holds: the tied output layer's part);
     * dwpe (seq, C) = sum over the batch of dout (overwritten). */
    void (*embed_backward)(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                           int batch, int seq, int C);
    /* Layer normalisation over the last axis (eps 1e-5, biased variance): out (n, C),
     * mean and rstd (n) kept for the backward pass. */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *x, const float *w,
                              const float *b, int n, int C);
    /* dx = (accumulate ? dx : 0) + d/dx; dw, db (C) overwritten. */
    void (*layernorm_backward)(float *dx, float *dw, float *db, const float *dout, const float *x,
                               const float *w, const float *mean, const float *rstd, int n, int C,
                               int accumulate);
    /* GELU, tanh approximation (GPT-2's); dx = gelu'(x) dy (dx == dy allowed). */
    void (*gelu_forward)(float *y, const float *x, size_t n);
    void (*gelu_backward)(float *dx, const float *dy, const float *x, size_t n);
    /* Causal multi-head attention: qkv (batch, seq, 3C) holds queries, keys and values, each
     * C = heads * head size; att (batch, heads, seq, seq) gets the softmax probabilities
     * (zero above the diagonal), out (batch, seq, C) the heads' outputs side by side.
     * Backward overwrites dqkv; scratch holds seq * seq floats. */
    void (*attention_forward)(float *out, float *att, const float *qkv, int batch, int seq, int C,
                              int heads);
    void (*attention_backward)(float *dqkv, float *scratch, const float *dout, const float *qkv,
                               const float *att, int batch, int seq, int C, int heads);
    /* Waits until every op issued so far has finished (a no-op where ops are synchronous):
     * for timing. */
    void (*sync)(void);
} trainer_backend_t;

/* "cpu", "cuda" or "auto" (cuda when a GPU is usable, else cpu). NULL with a message in err
 * for cuda without a usable GPU or in a build without CUDA, and for an unknown name. */
const trainer_backend_t *trainer_backend_by_name(const char *name, dt_err_t *err);

/* The timing backend (timing.c): no computation at all, for timing-only runs. Every
 * alloc of up to max_bytes returns the same inaccessible address range; every op leaves
 * memory alone. A later call with a larger max_bytes invalidates earlier buffers. */
const trainer_backend_t *trainer_backend_timing(size_t max_bytes);

/* The CPU backend (OpenBLAS). */
const trainer_backend_t *trainer_backend_cpu(void);
/* The CPU backend with its buffers readable and writable only inside its ops (guarded.c):
 * host code touching a backend buffer directly faults, as it would break on a GPU. The cpu
 * device is this one when the environment has DTSIM_GUARDED=1. */
const trainer_backend_t *trainer_backend_guarded(void);
/* Threads OpenBLAS may use (the only parallel part of the CPU backend). */
void trainer_backend_cpu_set_threads(int threads);

/* The CUDA backend (cuda.cu; only in builds where CMake defines DTSIM_HAVE_CUDA): the first
 * GPU the process sees (CUDA_VISIBLE_DEVICES chooses). NULL with a message in err when no
 * GPU is usable ("no CUDA device: ...", "CUDA driver not found ..."). Dev pointers are
 * cudaMalloc'd; gather reads the data set from host memory. Expects one OS thread. */
const trainer_backend_t *trainer_backend_cuda(dt_err_t *err);
/* Bytes copied between host and GPU so far by this process: upload, download, gather, the
 * loss read-back of softmax_xent and sumsq's partial sums (device-to-device copies are not
 * counted). */
size_t trainer_backend_cuda_bytes_transferred(void);
/* The GPU in use, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)", for reports; "no
 * CUDA device" when there is none. */
void trainer_backend_cuda_device_name(char *buf, size_t n);
/* Seconds of the fastest of reps n x n x n products on the GPU at precision 1 (TF32 tensor
 * cores on FP32 data) or 2 (BF16 inputs, FP32 sums), after one warm-up call; the largest
 * relative error of 64 sampled entries against a double product in *max_rel_error
 * (dtsim calibrate --gemm --precision). */
double trainer_backend_cuda_gemm_seconds(int precision, int n, int reps, double *max_rel_error);

#endif
