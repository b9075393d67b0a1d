/* The guarded backend: the CPU backend's ops on buffers that are readable and writable only
 * while an op that is handed them runs. Every alloc is its own run of pages in one arena
 * reserved with no access; each op opens the buffers its pointer arguments fall in, calls the
 * CPU backend's op and closes them again. Host code that reads or writes a backend buffer
 * without an op (a memset, a loop over a gradient, a float read back by dereference) faults
 * at once, where on a GPU it would read garbage or crash in the driver: the CPU's test of what
 * the CUDA backend needs. An op's own reach past its arguments' buffers faults too. Selected
 * with DTSIM_GUARDED=1 in the environment wherever the cpu device is (backends.c); the guarded
 * suite runs every strategy on every model under it. Slower than the CPU backend (two
 * mprotect calls per buffer an op touches), never reusing a buffer's pages until all are
 * freed, and for one OS thread (OpenBLAS's own threads work inside an op's call). */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend.h"

/* Virtual space reserved for the arena (pages are committed only as they are used). */
#define ARENA_BYTES ((size_t)64 << 30)
#define PAGE ((size_t)4096)

static const trainer_backend_t *cpu;
static char *arena;
/* The buffers handed out, in address order (each starts a page): start offsets and page
 * counts; how many, how many of them not yet freed, and the arena's first unused byte. */
static size_t *starts, *pages;
static size_t n_bufs, cap_bufs, live, top;

/* The buffer p points into, or -1 (a host pointer, or NULL). */
static long find(const void *p)
{
    const char *c = p;
    if (!c || c < arena || c >= arena + top)
        return -1;
    size_t at = (size_t)(c - arena), lo = 0, hi = n_bufs;
    while (hi - lo > 1) { /* the last start <= at */
        size_t mid = (lo + hi) / 2;
        if (starts[mid] <= at)
            lo = mid;
        else
            hi = mid;
    }
    return at < starts[lo] + pages[lo] * PAGE ? (long)lo : -1;
}

static void protect(long k, int access)
{
    if (k >= 0)
        DT_CHECK(mprotect(arena + starts[k], pages[k] * PAGE, access) == 0,
                 "guarded backend: mprotect failed");
}

/* Opens (access PROT_READ | PROT_WRITE) or closes (PROT_NONE) the buffers of n pointers. */
static void guard(int access, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        protect(find(va_arg(ap, const void *)), access);
    va_end(ap);
}

/* average's: dst and each of count sources (a host array of buffers). */
static void guard_all(int access, const float *dst, const float *const *srcs, int count)
{
    protect(find(dst), access);
    for (int i = 0; i < count; i++)
        protect(find(srcs[i]), access);
}

static void *g_alloc(size_t bytes)
{
    size_t n = (bytes + PAGE - 1) / PAGE;
    n = n ? n : 1;
    DT_CHECK(top + n * PAGE <= ARENA_BYTES, "guarded backend: more than %zu bytes allocated",
             ARENA_BYTES);
    if (n_bufs == cap_bufs) {
        cap_bufs = cap_bufs ? 2 * cap_bufs : 256;
        starts = realloc(starts, sizeof(size_t) * cap_bufs);
        pages = realloc(pages, sizeof(size_t) * cap_bufs);
        DT_CHECK(starts && pages, "out of memory");
    }
    starts[n_bufs] = top, pages[n_bufs] = n;
    char *p = arena + top;
    top += n * PAGE;
    live++;
    protect((long)n_bufs, PROT_READ | PROT_WRITE);
    memset(p, 0, n * PAGE); /* zero-filled, as alloc promises (pages reused after a reset) */
    protect((long)n_bufs++, PROT_NONE);
    return p;
}

/* A buffer's pages are not reused one by one; once none is live the arena starts again. */
static void g_free(void *dev)
{
    if (!dev)
        return;
    DT_CHECK(live > 0 && find(dev) >= 0, "guarded backend: free of a pointer it did not allocate");
    if (--live == 0) {
        DT_CHECK(madvise(arena, top, MADV_DONTNEED) == 0, "guarded backend: madvise failed");
        top = n_bufs = 0;
    }
}

static void g_upload(void *dev_dst, const void *host_src, size_t bytes)
{
    guard(PROT_READ | PROT_WRITE, 1, dev_dst);
    cpu->upload(dev_dst, host_src, bytes);
    guard(PROT_NONE, 1, dev_dst);
}

static void g_download(void *host_dst, const void *dev_src, size_t bytes)
{
    guard(PROT_READ | PROT_WRITE, 1, dev_src);
    cpu->download(host_dst, dev_src, bytes);
    guard(PROT_NONE, 1, dev_src);
}

static void g_copy(void *dev_dst, const void *dev_src, size_t bytes)
{
    guard(PROT_READ | PROT_WRITE, 2, dev_dst, dev_src);
    cpu->copy(dev_dst, dev_src, bytes);
    guard(PROT_NONE, 2, dev_dst, dev_src);
}

static void g_gather(float *x_dst, uint8_t *y_dst, const float *x, const uint8_t *y,
                     const uint32_t *idx, int batch, size_t dim)
{
    guard(PROT_READ | PROT_WRITE, 2, x_dst, y_dst);
    cpu->gather(x_dst, y_dst, x, y, idx, batch, dim);
    guard(PROT_NONE, 2, x_dst, y_dst);
}

static void g_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                   int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    guard(PROT_READ | PROT_WRITE, 3, a, b, c);
    cpu->gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    guard(PROT_NONE, 3, a, b, c);
}

static void g_bias_add(float *y, const float *bias, int outer, int channels, int inner)
{
    guard(PROT_READ | PROT_WRITE, 2, y, bias);
    cpu->bias_add(y, bias, outer, channels, inner);
    guard(PROT_NONE, 2, y, bias);
}

static void g_bias_grad(float *dbias, const float *dy, int outer, int channels, int inner)
{
    guard(PROT_READ | PROT_WRITE, 2, dbias, dy);
    cpu->bias_grad(dbias, dy, outer, channels, inner);
    guard(PROT_NONE, 2, dbias, dy);
}

static void g_relu_forward(float *y, const float *x, size_t n)
{
    guard(PROT_READ | PROT_WRITE, 2, y, x);
    cpu->relu_forward(y, x, n);
    guard(PROT_NONE, 2, y, x);
}

static void g_relu_backward(float *dx, const float *dy, const float *y, size_t n)
{
    guard(PROT_READ | PROT_WRITE, 3, dx, dy, y);
    cpu->relu_backward(dx, dy, y, n);
    guard(PROT_NONE, 3, dx, dy, y);
}

static void g_im2col(float *col, const float *x, int channels, int batch, int h, int w, int k)
{
    guard(PROT_READ | PROT_WRITE, 2, col, x);
    cpu->im2col(col, x, channels, batch, h, w, k);
    guard(PROT_NONE, 2, col, x);
}

static void g_col2im(float *dx, const float *col, int channels, int batch, int h, int w, int k)
{
    guard(PROT_READ | PROT_WRITE, 2, dx, col);
    cpu->col2im(dx, col, channels, batch, h, w, k);
    guard(PROT_NONE, 2, dx, col);
}

static void g_maxpool_forward(float *y, int32_t *argmax, const float *x, int planes, int h, int w,
                              int k)
{
    guard(PROT_READ | PROT_WRITE, 3, y, argmax, x);
    cpu->maxpool_forward(y, argmax, x, planes, h, w, k);
    guard(PROT_NONE, 3, y, argmax, x);
}

static void g_maxpool_backward(float *dx, const float *dy, const int32_t *argmax, int planes, int h,
                               int w, int k)
{
    guard(PROT_READ | PROT_WRITE, 3, dx, dy, argmax);
    cpu->maxpool_backward(dx, dy, argmax, planes, h, w, k);
    guard(PROT_NONE, 3, dx, dy, argmax);
}

static void g_permute(float *dst, const float *src, int a, int b, int inner)
{
    guard(PROT_READ | PROT_WRITE, 2, dst, src);
    cpu->permute(dst, src, a, b, inner);
    guard(PROT_NONE, 2, dst, src);
}

static void g_softmax_xent(float *dlogits, const float *logits, const uint8_t *labels, int batch,
                           int classes, float grad_scale, double *loss_sum, int *correct)
{
    guard(PROT_READ | PROT_WRITE, 3, dlogits, logits, labels);
    cpu->softmax_xent(dlogits, logits, labels, batch, classes, grad_scale, loss_sum, correct);
    guard(PROT_NONE, 3, dlogits, logits, labels);
}

static void g_sgd_update(float *w, const float *g, float *v, size_t n, float lr, float momentum,
                         float weight_decay)
{
    guard(PROT_READ | PROT_WRITE, 3, w, g, v);
    cpu->sgd_update(w, g, v, n, lr, momentum, weight_decay);
    guard(PROT_NONE, 3, w, g, v);
}

static void g_adam_update(float *w, const float *g, float *m, float *v, size_t n,
                          const trainer_adam_step_t *a)
{
    guard(PROT_READ | PROT_WRITE, 4, w, g, m, v);
    cpu->adam_update(w, g, m, v, n, a);
    guard(PROT_NONE, 4, w, g, m, v);
}

static double g_sumsq(const float *x, size_t n)
{
    guard(PROT_READ | PROT_WRITE, 1, x);
    double r = cpu->sumsq(x, n);
    guard(PROT_NONE, 1, x);
    return r;
}

static void g_axpy(size_t n, float a, const float *x, float *y)
{
    guard(PROT_READ | PROT_WRITE, 2, x, y);
    cpu->axpy(n, a, x, y);
    guard(PROT_NONE, 2, x, y);
}

static void g_scale(size_t n, float a, float *x)
{
    guard(PROT_READ | PROT_WRITE, 1, x);
    cpu->scale(n, a, x);
    guard(PROT_NONE, 1, x);
}

static void g_zero(float *x, size_t n)
{
    guard(PROT_READ | PROT_WRITE, 1, x);
    cpu->zero(x, n);
    guard(PROT_NONE, 1, x);
}

static void g_average(float *dst, const float *const *srcs, const float *weights, int count,
                      size_t n)
{
    guard_all(PROT_READ | PROT_WRITE, dst, srcs, count);
    cpu->average(dst, srcs, weights, count, n);
    guard_all(PROT_NONE, dst, srcs, count);
}

static void g_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                           const float *a, int lda, size_t stride_a, const float *b, int ldb,
                           size_t stride_b, float beta, float *c, int ldc, size_t stride_c,
                           int count)
{
    guard(PROT_READ | PROT_WRITE, 3, a, b, c);
    cpu->gemm_batched(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                      ldc, stride_c, count);
    guard(PROT_NONE, 3, a, b, c);
}

static void g_bias_add_batched(float *y, const float *bias, size_t bias_stride, int count,
                               int outer, int channels, int inner)
{
    guard(PROT_READ | PROT_WRITE, 2, y, bias);
    cpu->bias_add_batched(y, bias, bias_stride, count, outer, channels, inner);
    guard(PROT_NONE, 2, y, bias);
}

static void g_bias_grad_batched(float *dbias, size_t dbias_stride, const float *dy, int count,
                                int outer, int channels, int inner)
{
    guard(PROT_READ | PROT_WRITE, 2, dbias, dy);
    cpu->bias_grad_batched(dbias, dbias_stride, dy, count, outer, channels, inner);
    guard(PROT_NONE, 2, dbias, dy);
}

static void g_permute_batched(float *dst, const float *src, int count, int a, int b, int inner)
{
    guard(PROT_READ | PROT_WRITE, 2, dst, src);
    cpu->permute_batched(dst, src, count, a, b, inner);
    guard(PROT_NONE, 2, dst, src);
}

static void g_softmax_xent_batched(float *dlogits, const float *logits, const uint8_t *labels,
                                   int count, int batch, int classes, float grad_scale,
                                   double *loss_sum, int *correct)
{
    guard(PROT_READ | PROT_WRITE, 3, dlogits, logits, labels);
    cpu->softmax_xent_batched(dlogits, logits, labels, count, batch, classes, grad_scale, loss_sum,
                              correct);
    guard(PROT_NONE, 3, dlogits, logits, labels);
}

static void g_tokens_split(int32_t *tokens, uint8_t *targets, const float *x, int batch, int seq)
{
    guard(PROT_READ | PROT_WRITE, 3, tokens, targets, x);
    cpu->tokens_split(tokens, targets, x, batch, seq);
    guard(PROT_NONE, 3, tokens, targets, x);
}

static void g_embed_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                            int batch, int seq, int C)
{
    guard(PROT_READ | PROT_WRITE, 4, out, tokens, wte, wpe);
    cpu->embed_forward(out, tokens, wte, wpe, batch, seq, C);
    guard(PROT_NONE, 4, out, tokens, wte, wpe);
}

static void g_embed_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                             int batch, int seq, int C)
{
    guard(PROT_READ | PROT_WRITE, 4, dwte, dwpe, dout, tokens);
    cpu->embed_backward(dwte, dwpe, dout, tokens, batch, seq, C);
    guard(PROT_NONE, 4, dwte, dwpe, dout, tokens);
}

static void g_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                const float *w, const float *b, int n, int C)
{
    guard(PROT_READ | PROT_WRITE, 6, out, mean, rstd, x, w, b);
    cpu->layernorm_forward(out, mean, rstd, x, w, b, n, C);
    guard(PROT_NONE, 6, out, mean, rstd, x, w, b);
}

static void g_layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                                 const float *w, const float *mean, const float *rstd, int n, int C,
                                 int accumulate)
{
    guard(PROT_READ | PROT_WRITE, 8, dx, dw, db, dout, x, w, mean, rstd);
    cpu->layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, C, accumulate);
    guard(PROT_NONE, 8, dx, dw, db, dout, x, w, mean, rstd);
}

static void g_gelu_forward(float *y, const float *x, size_t n)
{
    guard(PROT_READ | PROT_WRITE, 2, y, x);
    cpu->gelu_forward(y, x, n);
    guard(PROT_NONE, 2, y, x);
}

static void g_gelu_backward(float *dx, const float *dy, const float *x, size_t n)
{
    guard(PROT_READ | PROT_WRITE, 3, dx, dy, x);
    cpu->gelu_backward(dx, dy, x, n);
    guard(PROT_NONE, 3, dx, dy, x);
}

static void g_attention_forward(float *out, float *att, const float *qkv, int batch, int seq, int C,
                                int heads)
{
    guard(PROT_READ | PROT_WRITE, 3, out, att, qkv);
    cpu->attention_forward(out, att, qkv, batch, seq, C, heads);
    guard(PROT_NONE, 3, out, att, qkv);
}

static void g_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                 const float *att, int batch, int seq, int C, int heads)
{
    guard(PROT_READ | PROT_WRITE, 5, dqkv, scratch, dout, qkv, att);
    cpu->attention_backward(dqkv, scratch, dout, qkv, att, batch, seq, C, heads);
    guard(PROT_NONE, 5, dqkv, scratch, dout, qkv, att);
}

static void g_sync(void)
{
    cpu->sync();
}

const trainer_backend_t *trainer_backend_guarded(void)
{
    static trainer_backend_t b;
    if (arena)
        return &b;
    cpu = trainer_backend_cpu();
    void *p =
        mmap(NULL, ARENA_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    DT_CHECK(p != MAP_FAILED, "guarded backend: cannot reserve %zu bytes", ARENA_BYTES);
    arena = p;
    b = *cpu;
    b.name = "cpu-guarded";
    b.alloc = g_alloc;
    b.free = g_free;
    b.upload = g_upload;
    b.download = g_download;
    b.copy = g_copy;
    b.gather = g_gather;
    b.gemm = g_gemm;
    b.bias_add = g_bias_add;
    b.bias_grad = g_bias_grad;
    b.relu_forward = g_relu_forward;
    b.relu_backward = g_relu_backward;
    b.im2col = g_im2col;
    b.col2im = g_col2im;
    b.maxpool_forward = g_maxpool_forward;
    b.maxpool_backward = g_maxpool_backward;
    b.permute = g_permute;
    b.softmax_xent = g_softmax_xent;
    b.sgd_update = g_sgd_update;
    b.adam_update = g_adam_update;
    b.sumsq = g_sumsq;
    b.axpy = g_axpy;
    b.scale = g_scale;
    b.zero = g_zero;
    b.average = g_average;
    b.gemm_batched = g_gemm_batched;
    b.bias_add_batched = g_bias_add_batched;
    b.bias_grad_batched = g_bias_grad_batched;
    b.permute_batched = g_permute_batched;
    b.softmax_xent_batched = g_softmax_xent_batched;
    b.tokens_split = g_tokens_split;
    b.embed_forward = g_embed_forward;
    b.embed_backward = g_embed_backward;
    b.layernorm_forward = g_layernorm_forward;
    b.layernorm_backward = g_layernorm_backward;
    b.gelu_forward = g_gelu_forward;
    b.gelu_backward = g_gelu_backward;
    b.attention_forward = g_attention_forward;
    b.attention_backward = g_attention_backward;
    b.sync = g_sync;
    return &b;
}
