/* The timing backend: computes nothing, for timing-only runs (model profiles too large to
 * train). Every buffer it hands out is the same reserved, inaccessible range of addresses
 * (PROT_NONE, no memory behind it), so the strategies' offsets into parameter buffers stay
 * valid pointer arithmetic while any stray read or write faults at once; every operation
 * returns without touching memory. */
#define _DEFAULT_SOURCE
#include "backend.h"

#include <sys/mman.h>

static void *base;
static size_t reserved;

static void *t_alloc(size_t bytes)
{
    DT_ASSERT(bytes <= reserved);
    return base;
}

static void t_free(void *dev)
{
    (void)dev;
}
static void t_move(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
}
static void t_gather(float *x_dst, uint8_t *y_dst, const float *x, const uint8_t *y,
                     const uint32_t *idx, int batch, size_t dim)
{
    (void)x_dst, (void)y_dst, (void)x, (void)y, (void)idx, (void)batch, (void)dim;
}
static void t_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                   const float *b, int ldb, float beta, float *c, int ldc)
{
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b;
    (void)ldb, (void)beta, (void)c, (void)ldc;
}
static void t_bias(float *y, const float *b, int outer, int channels, int inner)
{
    (void)y, (void)b, (void)outer, (void)channels, (void)inner;
}
static void t_unary(float *y, const float *x, size_t n)
{
    (void)y, (void)x, (void)n;
}
static void t_relu_back(float *dx, const float *dy, const float *y, size_t n)
{
    (void)dx, (void)dy, (void)y, (void)n;
}
static void t_cols(float *a, const float *b, int channels, int batch, int h, int w, int k)
{
    (void)a, (void)b, (void)channels, (void)batch, (void)h, (void)w, (void)k;
}
static void t_pool(float *y, int32_t *argmax, const float *x, int planes, int h, int w, int k)
{
    (void)y, (void)argmax, (void)x, (void)planes, (void)h, (void)w, (void)k;
}
static void t_pool_back(float *dx, const float *dy, const int32_t *argmax, int planes, int h, int w,
                        int k)
{
    (void)dx, (void)dy, (void)argmax, (void)planes, (void)h, (void)w, (void)k;
}
static void t_permute(float *dst, const float *src, int a, int b, int inner)
{
    (void)dst, (void)src, (void)a, (void)b, (void)inner;
}
static void t_xent(float *dlogits, const float *logits, const uint8_t *labels, int batch,
                   int classes, float grad_scale, double *loss_sum, int *correct)
{
    (void)dlogits, (void)logits, (void)labels, (void)batch, (void)classes, (void)grad_scale;
    *loss_sum = 0.0;
    *correct = 0;
}
static void t_sgd(float *w, const float *g, float *v, size_t n, float lr, float momentum,
                  float weight_decay)
{
    (void)w, (void)g, (void)v, (void)n, (void)lr, (void)momentum, (void)weight_decay;
}
static void t_adam(float *w, const float *g, float *m, float *v, size_t n,
                   const trainer_adam_step_t *a)
{
    (void)w, (void)g, (void)m, (void)v, (void)n, (void)a;
}
static double t_sumsq(const float *x, size_t n)
{
    (void)x, (void)n;
    return 0.0;
}
static void t_axpy(size_t n, float a, const float *x, float *y)
{
    (void)n, (void)a, (void)x, (void)y;
}
static void t_scale(size_t n, float a, float *x)
{
    (void)n, (void)a, (void)x;
}
static void t_zero(float *x, size_t n)
{
    (void)x, (void)n;
}
static void t_average(float *dst, const float *const *srcs, const float *weights, int count,
                      size_t n)
{
    (void)dst, (void)srcs, (void)weights, (void)count, (void)n;
}

static void t_gemm_batched(int ta, int tb, int m, int n, int k, float alpha, const float *a,
                           int lda, size_t sa, const float *b, int ldb, size_t sb, float beta,
                           float *c, int ldc, size_t sc, int count)
{
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)sa;
    (void)b, (void)ldb, (void)sb, (void)beta, (void)c, (void)ldc, (void)sc, (void)count;
}
static void t_bias_batched(float *y, const float *b, size_t stride, int count, int outer,
                           int channels, int inner)
{
    (void)y, (void)b, (void)stride, (void)count, (void)outer, (void)channels, (void)inner;
}
static void t_bias_grad_batched(float *db, size_t stride, const float *dy, int count, int outer,
                                int channels, int inner)
{
    (void)db, (void)stride, (void)dy, (void)count, (void)outer, (void)channels, (void)inner;
}
static void t_permute_batched(float *dst, const float *src, int count, int a, int b, int inner)
{
    (void)dst, (void)src, (void)count, (void)a, (void)b, (void)inner;
}
static void t_xent_batched(float *dlogits, const float *logits, const uint8_t *labels, int count,
                           int batch, int classes, float grad_scale, double *loss_sum, int *correct)
{
    (void)dlogits, (void)logits, (void)labels, (void)batch, (void)classes, (void)grad_scale;
    for (int r = 0; r < count; r++) {
        loss_sum[r] = 0.0;
        correct[r] = 0;
    }
}
static void t_sync(void)
{
}

static const trainer_backend_t timing = {
    .name = "timing",
    .alloc = t_alloc,
    .free = t_free,
    .upload = t_move,
    .download = t_move,
    .copy = t_move,
    .gather = t_gather,
    .gemm = t_gemm,
    .bias_add = t_bias,
    .bias_grad = t_bias,
    .relu_forward = t_unary,
    .relu_backward = t_relu_back,
    .im2col = t_cols,
    .col2im = t_cols,
    .maxpool_forward = t_pool,
    .maxpool_backward = t_pool_back,
    .permute = t_permute,
    .softmax_xent = t_xent,
    .sgd_update = t_sgd,
    .adam_update = t_adam,
    .sumsq = t_sumsq,
    .axpy = t_axpy,
    .scale = t_scale,
    .zero = t_zero,
    .average = t_average,
    .gemm_batched = t_gemm_batched,
    .bias_add_batched = t_bias_batched,
    .bias_grad_batched = t_bias_grad_batched,
    .permute_batched = t_permute_batched,
    .softmax_xent_batched = t_xent_batched,
    .sync = t_sync,
};

const trainer_backend_t *trainer_backend_timing(size_t max_bytes)
{
    if (max_bytes > reserved) {
        if (base)
            munmap(base, reserved);
        base = mmap(NULL, max_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        DT_CHECK(base != MAP_FAILED, "cannot reserve %zu bytes of address space", max_bytes);
        reserved = max_bytes;
    }
    return &timing;
}
