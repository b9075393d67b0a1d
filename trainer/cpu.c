/* The CPU backend: matrix products on OpenBLAS, everything else in plain loops that the
 * compiler vectorises. This is the oracle every other backend is tested against. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend.h"
#include "common.h"

/* The loops that carry most of a step besides the GEMMs, compiled twice: for AVX2 and for
 * the x86-64 baseline, the loader picking one (the binary still runs on any x86-64). Both
 * clones compute the same operations in the same order (no FMA contraction under -std=c11),
 * so results are the same bits on every machine. */
#if defined(__x86_64__) && defined(__GNUC__)
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif
/* The helpers of HOT functions: inlined into each clone, so that they are compiled for it. */
#if defined(__GNUC__)
#define HOT_HELPER static inline __attribute__((always_inline))
#else
#define HOT_HELPER static inline
#endif

static void *cpu_alloc(size_t bytes)
{
    /* 64-byte alignment for SIMD loads; aligned_alloc wants a multiple of the alignment. */
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    DT_CHECK(p, "out of memory allocating %zu bytes", bytes);
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_free(void *p)
{
    free(p);
}
static void cpu_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src)
        memmove(dst, src, bytes);
}

static void cpu_gather(float *x_dst, uint8_t *y_dst, const float *x, const uint8_t *y,
                       const uint32_t *idx, int batch, size_t dim)
{
    for (int b = 0; b < batch; b++) {
        memcpy(x_dst + (size_t)b * dim, x + (size_t)idx[b] * dim, sizeof(float) * dim);
        y_dst[b] = y[idx[b]];
    }
}

/* beta = 0 is a zeroed c and beta = 1: OpenBLAS zeroes c itself first, but with a loop that
 * took a quarter of the cnn's largest products (c of 6.5 MB); memset does it in less than half
 * the time, and the products that follow are the same operations, so the same bits. */
static void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                     int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (beta == 0.0f) {
        if (ldc == n)
            memset(c, 0, sizeof(float) * (size_t)m * n);
        else
            for (int i = 0; i < m; i++)
                memset(c + (size_t)i * ldc, 0, sizeof(float) * (size_t)n);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

HOT static void cpu_bias_add(float *y, const float *bias, int outer, int channels, int inner)
{
    if (inner == 1) { /* dense layers: add the bias vector to every row */
        for (int o = 0; o < outer; o++) {
            float *row = y + (size_t)o * channels;
            for (int c = 0; c < channels; c++)
                row[c] += bias[c];
        }
        return;
    }
    for (int o = 0; o < outer; o++) {
        float *yo = y + (size_t)o * channels * inner;
        for (int c = 0; c < channels; c++) {
            float b = bias[c];
            float *yc = yo + (size_t)c * inner;
            for (int i = 0; i < inner; i++)
                yc[i] += b;
        }
    }
}

/* Sum of n floats in 16 interleaved partial sums (lane j takes the terms i = j mod 16) added
 * pairwise at the end: a fixed order, so the same bits on every machine, and one the compiler
 * turns into vector adds (a single running sum is a chain of n dependent adds). */
HOT_HELPER float sum16(const float *p, size_t n)
{
    float lane[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            lane[j] += p[i + j];
    for (int j = 0; i < n; i++, j++)
        lane[j] += p[i];
    for (int half = 8; half >= 1; half /= 2)
        for (int j = 0; j < half; j++)
            lane[j] += lane[j + half];
    return lane[0];
}

HOT static void cpu_bias_grad(float *dbias, const float *dy, int outer, int channels, int inner)
{
    if (inner == 1) {
        /* dense layers: sum rows of (outer, channels), row by row for contiguous access */
        memset(dbias, 0, sizeof(float) * (size_t)channels);
        for (int o = 0; o < outer; o++) {
            const float *row = dy + (size_t)o * channels;
            for (int c = 0; c < channels; c++)
                dbias[c] += row[c];
        }
        return;
    }
    for (int c = 0; c < channels; c++) {
        float s = 0.0f;
        for (int o = 0; o < outer; o++)
            s += sum16(dy + ((size_t)o * channels + c) * inner, (size_t)inner);
        dbias[c] = s;
    }
}

HOT static void cpu_relu_forward(float *y, const float *x, size_t n)
{
    /* Unconditional loads and a select: the form the compiler vectorises. */
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

HOT static void cpu_relu_backward(float *dx, const float *dy, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}

/* rows x cols floats from src (row stride src_w) to dst (row stride dst_w), dst = src
 * (add 0) or dst += src (add 1). The rows of a convolution window are short (8 or 24 floats
 * in the cnn): too short for a memcpy call each, and short enough that a loop of known length
 * (the cases below, inlined) becomes a few vector moves with no loop control. */
HOT_HELPER void move_rows(float *restrict dst, int dst_w, const float *restrict src, int src_w,
                          int rows, int cols, int add)
{
    for (int i = 0; i < rows; i++) {
        float *d = dst + (size_t)i * dst_w;
        const float *s = src + (size_t)i * src_w;
        if (!add) { /* of a known size, memcpy is inlined as moves */
            memcpy(d, s, sizeof(float) * (size_t)cols);
            continue;
        }
        for (int j = 0; j < cols; j++)
            d[j] += s[j];
    }
}

HOT_HELPER void move_window_rows(float *dst, int dst_w, const float *src, int src_w, int rows,
                                 int cols, int add)
{
    if (cols == 8)
        move_rows(dst, dst_w, src, src_w, rows, 8, add);
    else if (cols == 24)
        move_rows(dst, dst_w, src, src_w, rows, 24, add);
    else
        move_rows(dst, dst_w, src, src_w, rows, cols, add);
}

HOT static void cpu_im2col(float *col, const float *x, int channels, int batch, int h, int w, int k)
{
    int oh = h - k + 1, ow = w - k + 1;
    size_t ncols = (size_t)batch * oh * ow;
    for (int c = 0; c < channels; c++)
        for (int ki = 0; ki < k; ki++)
            for (int kj = 0; kj < k; kj++) {
                float *row = col + ((size_t)(c * k + ki) * k + kj) * ncols;
                for (int b = 0; b < batch; b++)
                    move_window_rows(row + (size_t)b * oh * ow, ow,
                                     x + ((size_t)c * batch + b) * h * w + (size_t)ki * w + kj, w,
                                     oh, ow, 0);
            }
}

/* Every element of dx sums its k*k window terms in the order (ki, kj) ascending from zero:
 * the order the CUDA backend's col2im uses, so both give the same bits. */
HOT static void cpu_col2im(float *dx, const float *col, int channels, int batch, int h, int w,
                           int k)
{
    int oh = h - k + 1, ow = w - k + 1;
    size_t ncols = (size_t)batch * oh * ow;
    memset(dx, 0, sizeof(float) * (size_t)channels * batch * h * w);
    for (int c = 0; c < channels; c++)
        for (int ki = 0; ki < k; ki++)
            for (int kj = 0; kj < k; kj++) {
                const float *row = col + ((size_t)(c * k + ki) * k + kj) * ncols;
                for (int b = 0; b < batch; b++)
                    move_window_rows(dx + ((size_t)c * batch + b) * h * w + (size_t)ki * w + kj, w,
                                     row + (size_t)b * oh * ow, ow, oh, ow, 1);
            }
}

/* One output row of 2 x 2 windows, the cnn's pooling, from input rows r0 and r1 (r0 starting
 * at offset `at` of its plane): the four candidates in row-major order, each taking over only
 * when strictly greater (first maximum wins), written as selects over restrict pointers so
 * that the compiler vectorises along the row. */
HOT_HELPER void maxpool2_row(float *restrict out, int32_t *restrict am, const float *restrict r0,
                             const float *restrict r1, int ow, int w, int32_t at)
{
    for (int j = 0; j < ow; j++) {
        float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        int32_t o = at + 2 * j;
        int gb = b > a;
        float v = gb ? b : a;
        int32_t best = gb ? o + 1 : o;
        int gc = c > v;
        v = gc ? c : v;
        best = gc ? o + w : best;
        int gd = d > v;
        out[j] = gd ? d : v;
        am[j] = gd ? o + w + 1 : best;
    }
}

/* Row `at` (an offset in its plane) of the gradient of 2 x 2 windows: each element gets its
 * window's gradient if it was the winner, else zero. 0 + g, as a sum onto zeros would give
 * (and the CUDA kernel does): -0 becomes +0. */
HOT_HELPER void maxpool2_backward_row(float *restrict row, const float *restrict g,
                                      const int32_t *restrict am, int ow, int32_t at)
{
    for (int j = 0; j < ow; j++) {
        float v = 0.0f + g[j]; /* unconditionally: a select, not a branch */
        row[2 * j] = am[j] == at + 2 * j ? v : 0.0f;
        row[2 * j + 1] = am[j] == at + 2 * j + 1 ? v : 0.0f;
    }
}

HOT static void cpu_maxpool_forward(float *y, int32_t *argmax, const float *x, int planes, int h,
                                    int w, int k)
{
    int oh = h / k, ow = w / k;
    if (k == 2 && h % 2 == 0) { /* then the output rows of all planes are one sequence */
        for (size_t r = 0; r < (size_t)planes * oh; r++) {
            const float *r0 = x + 2 * r * w;
            maxpool2_row(y + r * ow, argmax + r * ow, r0, r0 + w, ow, w, (int32_t)(r % oh) * 2 * w);
        }
        return;
    }
    for (int p = 0; p < planes; p++) {
        const float *in = x + (size_t)p * h * w;
        float *out = y + (size_t)p * oh * ow;
        int32_t *am = argmax + (size_t)p * oh * ow;
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                int best = (i * k) * w + j * k;
                float v = in[best];
                for (int di = 0; di < k; di++)
                    for (int dj = 0; dj < k; dj++) {
                        int off = (i * k + di) * w + j * k + dj;
                        if (in[off] > v) {
                            v = in[off];
                            best = off;
                        }
                    }
                out[i * ow + j] = v;
                am[i * ow + j] = best;
            }
    }
}

/* Where the windows tile the plane (h, w multiples of k, as in every model), every element of
 * dx is either its window's winner or zero: each window writes its k*k values, with no
 * clearing pass first. */
HOT static void cpu_maxpool_backward(float *dx, const float *dy, const int32_t *argmax, int planes,
                                     int h, int w, int k)
{
    int oh = h / k, ow = w / k;
    if (k == 2 && h % 2 == 0 && w % 2 == 0) {
        for (size_t r = 0; r < (size_t)planes * oh; r++) {
            int32_t at = (int32_t)(r % oh) * 2 * w;
            float *d = dx + 2 * r * w;
            maxpool2_backward_row(d, dy + r * ow, argmax + r * ow, ow, at);
            maxpool2_backward_row(d + w, dy + r * ow, argmax + r * ow, ow, at + w);
        }
        return;
    }
    size_t per_out = (size_t)oh * ow;
    memset(dx, 0, sizeof(float) * (size_t)planes * h * w);
    for (int p = 0; p < planes; p++) {
        float *d = dx + (size_t)p * h * w;
        const float *g = dy + (size_t)p * per_out;
        const int32_t *am = argmax + (size_t)p * per_out;
        for (size_t i = 0; i < per_out; i++)
            d[am[i]] += g[i];
    }
}

static void cpu_permute(float *dst, const float *src, int a, int b, int inner)
{
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++)
            memcpy(dst + ((size_t)j * a + i) * inner, src + ((size_t)i * b + j) * inner,
                   sizeof(float) * (size_t)inner);
}

static void cpu_softmax_xent(float *dlogits, const float *logits, const uint8_t *labels, int batch,
                             int classes, float grad_scale, double *loss_sum, int *correct)
{
    DT_ASSERT(classes >= 1 && classes <= 256);
    double loss = 0.0;
    int right = 0;
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * classes;
        int best = 0;
        float zmax = z[0];
        for (int c = 1; c < classes; c++)
            if (z[c] > zmax) {
                zmax = z[c];
                best = c;
            }
        double e[256], sum = 0.0; /* classes <= 256 (model.c); each exp computed once */
        for (int c = 0; c < classes; c++) {
            e[c] = exp((double)(z[c] - zmax));
            sum += e[c];
        }
        int y = labels[b];
        /* -log softmax(z)_y = log(sum exp(z - zmax)) - (z_y - zmax) */
        loss += log(sum) - (double)(z[y] - zmax);
        right += best == y;
        if (dlogits) {
            float *d = dlogits + (size_t)b * classes;
            for (int c = 0; c < classes; c++)
                d[c] = (float)((e[c] / sum - (c == y ? 1.0 : 0.0)) * grad_scale);
        }
    }
    *loss_sum = loss;
    *correct = right;
}

static void cpu_sgd_update(float *w, const float *g, float *v, size_t n, float lr, float momentum,
                           float weight_decay)
{
    if (momentum == 0.0f) {
        for (size_t i = 0; i < n; i++)
            w[i] -= lr * (g[i] + weight_decay * w[i]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float vi = momentum * v[i] + (g[i] + weight_decay * w[i]);
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

static void cpu_adam_update(float *w, const float *g, float *m, float *v, size_t n,
                            const trainer_adam_step_t *a)
{
    /* PyTorch's lerp: from the nearer end, so weight 1 gives g' exactly */
    int from_m = a->one_minus_beta1 < 0.5f;
    float keep = 1.0f - a->one_minus_beta1;
    for (size_t i = 0; i < n; i++) {
        float wi = w[i];
        if (a->decay != 1.0f)
            wi *= a->decay;
        float gi = g[i];
        if (a->l2 != 0.0f)
            gi = gi + a->l2 * wi;
        float mi = from_m ? m[i] + a->one_minus_beta1 * (gi - m[i]) : gi - (gi - m[i]) * keep;
        float vi = v[i] * a->beta2 + a->one_minus_beta2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / a->bias2_sqrt + a->eps;
        w[i] = wi + -a->step_size * mi / denom;
    }
}

static double cpu_sumsq(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

static void cpu_zero(float *x, size_t n)
{
    memset(x, 0, sizeof(float) * n);
}

static void cpu_axpy(size_t n, float a, const float *x, float *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void cpu_scale(size_t n, float a, float *x)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
}

static void cpu_average(float *dst, const float *const *srcs, const float *weights, int count,
                        size_t n)
{
    DT_ASSERT(count >= 1);
    /* srcs[0] first so that dst may alias it. */
    float w0 = weights[0];
    const float *s0 = srcs[0];
    for (size_t i = 0; i < n; i++)
        dst[i] = w0 * s0[i];
    for (int j = 1; j < count; j++) {
        DT_ASSERT(srcs[j] != dst);
        cpu_axpy(n, weights[j], srcs[j], dst);
    }
}

/* ---- replicas: the single ops block by block (backend.h) ---- */

static void cpu_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                             const float *a, int lda, size_t stride_a, const float *b, int ldb,
                             size_t stride_b, float beta, float *c, int ldc, size_t stride_c,
                             int count)
{
    for (int r = 0; r < count; r++)
        cpu_gemm(trans_a, trans_b, m, n, k, alpha, a + r * stride_a, lda, b + r * stride_b, ldb,
                 beta, c + r * stride_c, ldc);
}

static void cpu_bias_add_batched(float *y, const float *bias, size_t bias_stride, int count,
                                 int outer, int channels, int inner)
{
    size_t block = (size_t)outer * channels * inner;
    for (int r = 0; r < count; r++)
        cpu_bias_add(y + r * block, bias + r * bias_stride, outer, channels, inner);
}

static void cpu_bias_grad_batched(float *dbias, size_t dbias_stride, const float *dy, int count,
                                  int outer, int channels, int inner)
{
    size_t block = (size_t)outer * channels * inner;
    for (int r = 0; r < count; r++)
        cpu_bias_grad(dbias + r * dbias_stride, dy + r * block, outer, channels, inner);
}

static void cpu_permute_batched(float *dst, const float *src, int count, int a, int b, int inner)
{
    size_t block = (size_t)a * b * inner;
    for (int r = 0; r < count; r++)
        cpu_permute(dst + r * block, src + r * block, a, b, inner);
}

static void cpu_softmax_xent_batched(float *dlogits, const float *logits, const uint8_t *labels,
                                     int count, int batch, int classes, float grad_scale,
                                     double *loss_sum, int *correct)
{
    size_t block = (size_t)batch * classes;
    for (int r = 0; r < count; r++)
        cpu_softmax_xent(dlogits ? dlogits + r * block : NULL, logits + r * block,
                         labels + (size_t)r * batch, batch, classes, grad_scale, &loss_sum[r],
                         &correct[r]);
}

/* ---- the transformer's ops (gpt.c); the reference every other backend is tested against */

static void cpu_tokens_split(int32_t *tokens, uint8_t *targets, const float *x, int batch, int seq)
{
    for (int b = 0; b < batch; b++) {
        const float *row = x + (size_t)b * (seq + 1);
        for (int t = 0; t < seq; t++) {
            tokens[(size_t)b * seq + t] = (int32_t)row[t];
            targets[(size_t)b * seq + t] = (uint8_t)row[t + 1];
        }
    }
}

static void cpu_embed_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                              int batch, int seq, int C)
{
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < seq; t++) {
            float *o = out + ((size_t)b * seq + t) * C;
            const float *e = wte + (size_t)tokens[(size_t)b * seq + t] * C;
            const float *p = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++)
                o[i] = e[i] + p[i];
        }
}

static void cpu_embed_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                               int batch, int seq, int C)
{
    memset(dwpe, 0, sizeof(float) * (size_t)seq * C);
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < seq; t++) {
            const float *d = dout + ((size_t)b * seq + t) * C;
            float *e = dwte + (size_t)tokens[(size_t)b * seq + t] * C;
            float *p = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) {
                e[i] += d[i];
                p[i] += d[i];
            }
        }
}

HOT static void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                      const float *w, const float *b, int n, int C)
{
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * C;
        float *o = out + (size_t)r * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++)
            m += xr[i];
        m /= (float)C;
        float v = 0.0f;
        for (int i = 0; i < C; i++)
            v += (xr[i] - m) * (xr[i] - m);
        v /= (float)C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        for (int i = 0; i < C; i++)
            o[i] = (xr[i] - m) * s * w[i] + b[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

HOT static void cpu_layernorm_backward(float *dx, float *dw, float *db, const float *dout,
                                       const float *x, const float *w, const float *mean,
                                       const float *rstd, int n, int C, int accumulate)
{
    memset(dw, 0, sizeof(float) * (size_t)C);
    memset(db, 0, sizeof(float) * (size_t)C);
    for (int r = 0; r < n; r++) {
        const float *d = dout + (size_t)r * C, *xr = x + (size_t)r * C;
        float *g = dx + (size_t)r * C;
        float m = mean[r], s = rstd[r];
        /* the two means the input gradient needs: of dnorm and of dnorm * norm */
        float dn_mean = 0.0f, dnn_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            float norm = (xr[i] - m) * s, dn = w[i] * d[i];
            dn_mean += dn;
            dnn_mean += dn * norm;
        }
        dn_mean /= (float)C;
        dnn_mean /= (float)C;
        for (int i = 0; i < C; i++) {
            float norm = (xr[i] - m) * s, dn = w[i] * d[i];
            dw[i] += norm * d[i];
            db[i] += d[i];
            float v = (dn - dn_mean - norm * dnn_mean) * s;
            g[i] = accumulate ? g[i] + v : v;
        }
    }
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* tanh(u) = sign(u) (1 - e) / (1 + e), e = exp(-2|u|), with exp by range reduction
 * (2^k e^r, |r| <= ln2 / 2) and a degree-7 Taylor polynomial: plain float and integer
 * arithmetic that the compiler vectorises, where libm's tanhf is a call per element and took
 * four fifths of GELU's time. Absolute error below 1e-7 over [-10, 10] (measured against
 * double tanh), which is what GELU needs (x/2 times it). The exponent is clamped at -64 on
 * its bits (for negative floats they grow with the magnitude; a NaN clamps too), where e is
 * 0 in float after the scaling, so no branch stops the vectoriser. */
HOT_HELPER float tanh_fast(float u)
{
    float z = -2.0f * fabsf(u);
    uint32_t zb, lim = 0xC2800000u; /* -64.0f */
    memcpy(&zb, &z, sizeof zb);
    zb = zb < lim ? zb : lim;
    memcpy(&z, &zb, sizeof z);
    /* k = round(z / ln 2): adding and subtracting 1.5 * 2^23 rounds to an integer */
    float kf = (z * 1.4426950408889634f + 12582912.0f) - 12582912.0f;
    int32_t k = (int32_t)kf;
    float r = z - kf * 0.693145751953125f - kf * 1.428606765330187e-06f;
    float p =
        1.0f +
        r * (1.0f +
             r * (0.5f +
                  r * (1.0f / 6 +
                       r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t bits = (k + 127) * (1 << 23); /* 2^k, a normal float: -93 <= k <= 0 */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float e = p * scale;
    return copysignf((1.0f - e) / (1.0f + e), u);
}

HOT static void cpu_gelu_forward(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanh_fast(GELU_SCALE * (v + 0.044715f * v * v * v)));
    }
}

HOT static void cpu_gelu_backward(float *dx, const float *dy, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float th = tanh_fast(GELU_SCALE * (v + 0.044715f * v * v * v));
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du) * dy[i];
    }
}

/* One (sequence, head) at a time: the scores and the products with the values are GEMMs
 * over the whole square (strided views into qkv, no copies), then the causal softmax row by
 * row over the keys up to the query's own position. */
static void cpu_attention_forward(float *out, float *att, const float *qkv, int batch, int seq,
                                  int C, int heads)
{
    int hs = C / heads, row = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
            const float *q = qkv + (size_t)b * seq * row + (size_t)h * hs;
            float *a = att + ((size_t)b * heads + h) * seq * seq;
            /* a (T, T) = scale q (T, hs) k^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq, seq, hs, scale, q, row, q + C,
                        row, 0.0f, a, seq);
            for (int t = 0; t < seq; t++) {
                float *r = a + (size_t)t * seq, amax = -FLT_MAX, sum = 0.0f;
                for (int u = 0; u <= t; u++)
                    amax = r[u] > amax ? r[u] : amax;
                for (int u = 0; u <= t; u++) {
                    r[u] = expf(r[u] - amax);
                    sum += r[u];
                }
                float inv = 1.0f / sum;
                for (int u = 0; u <= t; u++)
                    r[u] *= inv;
                for (int u = t + 1; u < seq; u++)
                    r[u] = 0.0f;
            }
            /* out (T, hs) = a (T, T) v (T, hs), into the head's columns */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq, hs, seq, 1.0f, a, seq,
                        q + 2 * C, row, 0.0f, out + (size_t)b * seq * C + (size_t)h * hs, C);
        }
}

static void cpu_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                   const float *att, int batch, int seq, int C, int heads)
{
    int hs = C / heads, row = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
            size_t off = (size_t)b * seq * row + (size_t)h * hs;
            const float *q = qkv + off, *a = att + ((size_t)b * heads + h) * seq * seq;
            const float *d = dout + (size_t)b * seq * C + (size_t)h * hs;
            float *dq = dqkv + off, *da = scratch;
            /* da (T, T) = d (T, hs) v^T; dv (T, hs) = a^T d */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq, seq, hs, 1.0f, d, C,
                        q + 2 * C, row, 0.0f, da, seq);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, seq, hs, seq, 1.0f, a, seq, d, C,
                        0.0f, dq + 2 * C, row);
            /* through the softmax: ds = a (da - sum a da) scale, zero above the diagonal */
            for (int t = 0; t < seq; t++) {
                const float *ar = a + (size_t)t * seq;
                float *r = da + (size_t)t * seq, dot = 0.0f;
                for (int u = 0; u <= t; u++)
                    dot += ar[u] * r[u];
                for (int u = 0; u <= t; u++)
                    r[u] = ar[u] * (r[u] - dot) * scale;
                for (int u = t + 1; u < seq; u++)
                    r[u] = 0.0f;
            }
            /* dq (T, hs) = ds k; dk (T, hs) = ds^T q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq, hs, seq, 1.0f, da, seq,
                        q + C, row, 0.0f, dq, row);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, seq, hs, seq, 1.0f, da, seq, q,
                        row, 0.0f, dq + C, row);
        }
}

static void cpu_sync(void)
{
}

/* A convolution's col slice (model.c): small enough that im2col's output is still in the L2
 * cache (2 MB a core on the Xeon measured) when the product reads it, and col2im's input when
 * the product has written it. 128 KB is 2 samples of the cnn's conv1 and 1 of its conv2 (col
 * 3.7 and 6.5 MB for batch 64 at once): a training step of the cnn took 6.4 to 7.2 ms of CPU
 * time against 10.7 to 11.2 ms with whole batches (interleaved, on a loaded machine); slices
 * of 64 KB to 256 KB were within that spread of each other, larger ones slower. */
#define CPU_CONV_SLICE_BYTES (128 * 1024)

static const trainer_backend_t cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .gather = cpu_gather,
    .gemm = cpu_gemm,
    .bias_add = cpu_bias_add,
    .bias_grad = cpu_bias_grad,
    .relu_forward = cpu_relu_forward,
    .relu_backward = cpu_relu_backward,
    .im2col = cpu_im2col,
    .col2im = cpu_col2im,
    .conv_slice_bytes = CPU_CONV_SLICE_BYTES,
    .maxpool_forward = cpu_maxpool_forward,
    .maxpool_backward = cpu_maxpool_backward,
    .permute = cpu_permute,
    .softmax_xent = cpu_softmax_xent,
    .sgd_update = cpu_sgd_update,
    .adam_update = cpu_adam_update,
    .sumsq = cpu_sumsq,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .zero = cpu_zero,
    .average = cpu_average,
    .gemm_batched = cpu_gemm_batched,
    .bias_add_batched = cpu_bias_add_batched,
    .bias_grad_batched = cpu_bias_grad_batched,
    .permute_batched = cpu_permute_batched,
    .softmax_xent_batched = cpu_softmax_xent_batched,
    .tokens_split = cpu_tokens_split,
    .embed_forward = cpu_embed_forward,
    .embed_backward = cpu_embed_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .sync = cpu_sync,
};

const trainer_backend_t *trainer_backend_cpu(void)
{
    return &cpu_backend;
}

void trainer_backend_cpu_set_threads(int threads)
{
    openblas_set_num_threads(threads > 0 ? threads : 1);
}
