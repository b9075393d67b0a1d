/* The CUDA backend's transformer ops (model.arch = gpt; backend.h), tested against cpu.c's
 * by tests/test_cuda.c (gpt_backend_checks.h). They follow cpu.c's formulas, in the same
 * order within each element; what differs is the order of the sums (warp trees instead of a
 * running sum), libdevice's expf and tanhf instead of glibc's expf and cpu.c's polynomial
 * tanh, and cuBLAS's order inside the products. tokens_split, embed_forward and
 * embed_backward add in cpu.c's order and give its bits. Like cuda.cu, compiled with
 * --fmad=false, run on the legacy default stream, and for one OS thread. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "cuda_common.cuh"

/* The token ids the ops take: bytes (softmax_xent's classes <= 256 bounds the vocabulary). */
#define GPT_MAX_VOCAB 256
/* Rows per block of the row-wise kernels: one warp per row. */
#define ROW_WARPS (THREADS / 32)

/* Sum and maximum over the 32 lanes of a warp; every lane gets the result (butterfly: a
 * fixed order, so deterministic). */
__device__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ float warp_max(float v)
{
    for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    return v;
}

/* Grid for one warp per row; the kernels loop with a stride over rows past MAX_BLOCKS. */
static unsigned row_blocks(size_t rows)
{
    size_t b = (rows + ROW_WARPS - 1) / ROW_WARPS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define WARP_ROWS(r, rows)                                                                         \
    for (size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < (rows);              \
         r += (size_t)gridDim.x * blockDim.x / 32)

/* Device scratch of the gpt ops (the column partial sums of layer norm, the attention
 * gradient's scores): grown on demand, never shrunk, like the loss scratch. */
typedef struct dev_scratch {
    void *p;
    size_t cap;
} dev_scratch_t;

static void *dev_scratch_reserve(dev_scratch_t *s, size_t bytes)
{
    if (bytes > s->cap) {
        CUDA_CHECK(cudaFree(s->p)); /* waits for the kernels that may still read it */
        s->p = NULL;
        s->cap = 0;
        CUDA_CHECK(cudaMalloc(&s->p, bytes));
        s->cap = bytes;
    }
    return s->p;
}

static dev_scratch_t ln_scratch, att_scratch;

__global__ void tokens_split_kernel(int32_t *tokens, uint8_t *targets, const float *x, size_t total,
                                    int seq)
{
    GRID_STRIDE(e, total)
    {
        size_t b = e / (size_t)seq, t = e % (size_t)seq;
        const float *row = x + b * (size_t)(seq + 1);
        tokens[e] = (int32_t)row[t];
        targets[e] = (uint8_t)row[t + 1];
    }
}

static void cuda_tokens_split(int32_t *tokens, uint8_t *targets, const float *x, int batch, int seq)
{
    size_t total = (size_t)batch * seq;
    if (!total)
        return;
    tokens_split_kernel<<<blocks_for(total), THREADS>>>(tokens, targets, x, total, seq);
    LAUNCH_CHECK();
}

/* One thread per output element: out[b][t][i] = wte[token][i] + wpe[t][i]. */
__global__ void embed_forward_kernel(float *out, const int32_t *tokens, const float *wte,
                                     const float *wpe, size_t total, int seq, int C)
{
    GRID_STRIDE(e, total)
    {
        size_t bt = e / (size_t)C, i = e % (size_t)C, t = bt % (size_t)seq;
        out[e] = wte[(size_t)tokens[bt] * C + i] + wpe[t * C + i];
    }
}

static void cuda_embed_forward(float *out, const int32_t *tokens, const float *wte,
                               const float *wpe, int batch, int seq, int C)
{
    size_t total = (size_t)batch * seq * C;
    if (!total)
        return;
    embed_forward_kernel<<<blocks_for(total), THREADS>>>(out, tokens, wte, wpe, total, seq, C);
    LAUNCH_CHECK();
}

/* dwpe[t][i] = sum over b of dout[b][t][i], from 0 in b order (cpu.c's order): one thread per
 * (t, i). */
__global__ void embed_dwpe_kernel(float *dwpe, const float *dout, int batch, int seq, int C)
{
    size_t total = (size_t)seq * C;
    GRID_STRIDE(e, total)
    {
        float s = 0.0f;
        for (int b = 0; b < batch; b++)
            s += dout[(size_t)b * total + e];
        dwpe[e] = s;
    }
}

/* dwte[v][i] += dout at every position whose token is v, positions in ascending order (cpu.c's
 * order, so its bits, and no atomics): block v, threads over i. Every thread of a block reads
 * the same token at each step, so the branch does not diverge. Rows of tokens that never
 * occur are not touched (nor read: v may exceed the model's vocabulary). */
__global__ void embed_dwte_kernel(float *dwte, const float *dout, const int32_t *tokens,
                                  size_t positions, int C)
{
    int v = (int)blockIdx.x;
    for (int i = (int)threadIdx.x; i < C; i += (int)blockDim.x) {
        float acc = 0.0f;
        int hit = 0;
        for (size_t p = 0; p < positions; p++) {
            if (tokens[p] != v)
                continue;
            if (!hit)
                acc = dwte[(size_t)v * C + i];
            hit = 1;
            acc += dout[p * (size_t)C + i];
        }
        if (hit)
            dwte[(size_t)v * C + i] = acc;
    }
}

static void cuda_embed_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                                int batch, int seq, int C)
{
    if (seq <= 0 || C <= 0)
        return;
    size_t tc = (size_t)seq * C;
    embed_dwpe_kernel<<<blocks_for(tc), THREADS>>>(dwpe, dout, batch, seq, C);
    LAUNCH_CHECK();
    if (batch <= 0)
        return;
    embed_dwte_kernel<<<GPT_MAX_VOCAB, THREADS>>>(dwte, dout, tokens, (size_t)batch * seq, C);
    LAUNCH_CHECK();
}

/* One warp per row: the mean, the biased variance about it (two passes, as cpu.c), then the
 * normalised row. */
__global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *x,
                                         const float *w, const float *b, size_t n, int C)
{
    int lane = (int)(threadIdx.x % 32);
    WARP_ROWS(r, n)
    {
        const float *xr = x + r * C;
        float *o = out + r * C;
        float m = 0.0f;
        for (int i = lane; i < C; i += 32)
            m += xr[i];
        m = warp_sum(m) / (float)C;
        float v = 0.0f;
        for (int i = lane; i < C; i += 32)
            v += (xr[i] - m) * (xr[i] - m);
        v = warp_sum(v) / (float)C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        for (int i = lane; i < C; i += 32)
            o[i] = (xr[i] - m) * s * w[i] + b[i];
        if (lane == 0) {
            mean[r] = m;
            rstd[r] = s;
        }
    }
}

static void cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                   const float *w, const float *b, int n, int C)
{
    if (n <= 0 || C <= 0)
        return;
    layernorm_forward_kernel<<<row_blocks((size_t)n), THREADS>>>(out, mean, rstd, x, w, b,
                                                                 (size_t)n, C);
    LAUNCH_CHECK();
}

/* The input gradient, one warp per row: the two means over the row (of dnorm and of dnorm
 * times norm), then dx. */
__global__ void layernorm_backward_dx_kernel(float *dx, const float *dout, const float *x,
                                             const float *w, const float *mean, const float *rstd,
                                             size_t n, int C, int accumulate)
{
    int lane = (int)(threadIdx.x % 32);
    WARP_ROWS(r, n)
    {
        const float *d = dout + r * C, *xr = x + r * C;
        float *g = dx + r * C;
        float m = mean[r], s = rstd[r];
        float dn_mean = 0.0f, dnn_mean = 0.0f;
        for (int i = lane; i < C; i += 32) {
            float norm = (xr[i] - m) * s, dn = w[i] * d[i];
            dn_mean += dn;
            dnn_mean += dn * norm;
        }
        dn_mean = warp_sum(dn_mean) / (float)C;
        dnn_mean = warp_sum(dnn_mean) / (float)C;
        for (int i = lane; i < C; i += 32) {
            float norm = (xr[i] - m) * s, dn = w[i] * d[i];
            float v = (dn - dn_mean - norm * dnn_mean) * s;
            g[i] = accumulate ? g[i] + v : v;
        }
    }
}

/* Rows per chunk of the scale and shift gradients, and the block shape that sums a chunk:
 * 32 columns by LN_ROW_THREADS rows, each thread LN_CHUNK / LN_ROW_THREADS rows. */
#define LN_CHUNK 64
#define LN_ROW_THREADS 8

/* Chunk blockIdx.y of rows, columns blockIdx.x * 32 + threadIdx.x: the chunk's sums of
 * norm * dout and of dout, into part_w and part_b (chunks, C), each summed by a fixed tree. */
__global__ void layernorm_dwdb_part_kernel(float *part_w, float *part_b, const float *dout,
                                           const float *x, const float *mean, const float *rstd,
                                           size_t n, int C)
{
    __shared__ float sw[LN_ROW_THREADS][32], sb[LN_ROW_THREADS][32];
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    size_t col = (size_t)blockIdx.x * 32 + (size_t)tx;
    size_t r0 = (size_t)blockIdx.y * LN_CHUNK, r1 = r0 + LN_CHUNK < n ? r0 + LN_CHUNK : n;
    float aw = 0.0f, ab = 0.0f;
    if (col < (size_t)C)
        for (size_t r = r0 + (size_t)ty; r < r1; r += LN_ROW_THREADS) {
            float d = dout[r * C + col];
            aw += (x[r * C + col] - mean[r]) * rstd[r] * d;
            ab += d;
        }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    for (int half = LN_ROW_THREADS / 2; half > 0; half /= 2) {
        if (ty < half) {
            sw[ty][tx] += sw[ty + half][tx];
            sb[ty][tx] += sb[ty + half][tx];
        }
        __syncthreads();
    }
    if (ty == 0 && col < (size_t)C) {
        part_w[(size_t)blockIdx.y * C + col] = sw[0][tx];
        part_b[(size_t)blockIdx.y * C + col] = sb[0][tx];
    }
}

/* dw[i], db[i]: the chunks' partial sums added in chunk order, one thread per column. */
__global__ void layernorm_dwdb_total_kernel(float *dw, float *db, const float *part_w,
                                            const float *part_b, size_t chunks, int C)
{
    GRID_STRIDE(i, (size_t)C)
    {
        float sw = 0.0f, sb = 0.0f;
        for (size_t k = 0; k < chunks; k++) {
            sw += part_w[k * C + i];
            sb += part_b[k * C + i];
        }
        dw[i] = sw;
        db[i] = sb;
    }
}

static void cuda_layernorm_backward(float *dx, float *dw, float *db, const float *dout,
                                    const float *x, const float *w, const float *mean,
                                    const float *rstd, int n, int C, int accumulate)
{
    if (C <= 0)
        return;
    /* n = 0 still writes dw = db = 0 (overwrite, as on the CPU) */
    size_t chunks = n > 0 ? ((size_t)n + LN_CHUNK - 1) / LN_CHUNK : 1;
    DT_ASSERT(chunks <= 65535); /* gridDim.y: n up to 4 million rows */
    if (n > 0) {
        layernorm_backward_dx_kernel<<<row_blocks((size_t)n), THREADS>>>(dx, dout, x, w, mean, rstd,
                                                                         (size_t)n, C, accumulate);
        LAUNCH_CHECK();
    }
    float *part = (float *)dev_scratch_reserve(&ln_scratch, sizeof(float) * 2 * chunks * C);
    if (n > 0) {
        dim3 grid((unsigned)((C + 31) / 32), (unsigned)chunks), block(32, LN_ROW_THREADS);
        layernorm_dwdb_part_kernel<<<grid, block>>>(part, part + chunks * C, dout, x, mean, rstd,
                                                    (size_t)n, C);
        LAUNCH_CHECK();
    } else {
        CUDA_CHECK(cudaMemset(part, 0, sizeof(float) * 2 * C));
    }
    layernorm_dwdb_total_kernel<<<blocks_for((size_t)C), THREADS>>>(dw, db, part, part + chunks * C,
                                                                    chunks, C);
    LAUNCH_CHECK();
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* In place allowed (y == x, dx == dy): each element is read, then written, by one thread. */
__global__ void gelu_forward_kernel(float *y, const float *x, size_t n)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(GELU_SCALE * (v + 0.044715f * v * v * v)));
    }
}

__global__ void gelu_backward_kernel(float *dx, const float *dy, const float *x, size_t n)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i];
        float th = tanhf(GELU_SCALE * (v + 0.044715f * v * v * v));
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du) * dy[i];
    }
}

static void cuda_gelu_forward(float *y, const float *x, size_t n)
{
    if (!n)
        return;
    gelu_forward_kernel<<<blocks_for(n), THREADS>>>(y, x, n);
    LAUNCH_CHECK();
}

static void cuda_gelu_backward(float *dx, const float *dy, const float *x, size_t n)
{
    if (!n)
        return;
    gelu_backward_kernel<<<blocks_for(n), THREADS>>>(dx, dy, x, n);
    LAUNCH_CHECK();
}

/* Causal softmax of every row of att (batch, heads, seq, seq) in place, one warp per row:
 * row t keeps columns 0..t (max, exp, sum, times the inverse, as cpu.c) and gets zeros above.
 * Each lane reads and writes only its own columns. */
__global__ void causal_softmax_kernel(float *att, size_t rows, int seq)
{
    int lane = (int)(threadIdx.x % 32);
    WARP_ROWS(row, rows)
    {
        int t = (int)(row % (size_t)seq);
        float *r = att + row * seq;
        float amax = -FLT_MAX;
        for (int u = lane; u <= t; u += 32)
            amax = r[u] > amax ? r[u] : amax;
        amax = warp_max(amax);
        float sum = 0.0f;
        for (int u = lane; u <= t; u += 32) {
            float e = expf(r[u] - amax);
            r[u] = e;
            sum += e;
        }
        float inv = 1.0f / warp_sum(sum);
        for (int u = lane; u <= t; u += 32)
            r[u] *= inv;
        for (int u = t + 1 + lane; u < seq; u += 32)
            r[u] = 0.0f;
    }
}

/* Through the softmax, one warp per row of da (in place): ds = a (da - sum_u a da) scale on
 * columns 0..t, zeros above. */
__global__ void causal_softmax_backward_kernel(float *da, const float *att, size_t rows, int seq,
                                               float scale)
{
    int lane = (int)(threadIdx.x % 32);
    WARP_ROWS(row, rows)
    {
        int t = (int)(row % (size_t)seq);
        const float *ar = att + row * seq;
        float *r = da + row * seq;
        float dot = 0.0f;
        for (int u = lane; u <= t; u += 32)
            dot += ar[u] * r[u];
        dot = warp_sum(dot);
        for (int u = lane; u <= t; u += 32)
            r[u] = ar[u] * (r[u] - dot) * scale;
        for (int u = t + 1 + lane; u < seq; u += 32)
            r[u] = 0.0f;
    }
}

/* The products of cpu.c's attention, head by head, each one strided-batched call over the
 * sequences: head h's queries, keys and values start at columns h hs, C + h hs and
 * 2 C + h hs of qkv (row stride 3C, seq rows per sequence), its scores at (b heads + h) seq^2,
 * its output at column h hs of out (row stride C). */
static void cuda_attention_forward(float *out, float *att, const float *qkv, int batch, int seq,
                                   int C, int heads)
{
    if (batch <= 0 || seq <= 0 || C <= 0)
        return;
    int hs = C / heads, row = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    size_t seq_qkv = (size_t)seq * row, seq_att = (size_t)heads * seq * seq;
    size_t seq_out = (size_t)seq * C, sq = (size_t)seq * seq;
    for (int h = 0; h < heads; h++) {
        const float *q = qkv + (size_t)h * hs;
        /* a (T, T) = scale q (T, hs) k^T */
        cuda_gemm_batched(0, 1, seq, seq, hs, scale, q, row, seq_qkv, q + C, row, seq_qkv, 0.0f,
                          att + (size_t)h * sq, seq, seq_att, batch);
    }
    size_t rows = (size_t)batch * heads * seq;
    causal_softmax_kernel<<<row_blocks(rows), THREADS>>>(att, rows, seq);
    LAUNCH_CHECK();
    for (int h = 0; h < heads; h++) {
        /* out (T, hs) = a (T, T) v (T, hs), into the head's columns */
        cuda_gemm_batched(0, 0, seq, hs, seq, 1.0f, att + (size_t)h * sq, seq, seq_att,
                          qkv + 2 * (size_t)C + (size_t)h * hs, row, seq_qkv, 0.0f,
                          out + (size_t)h * hs, C, seq_out, batch);
    }
}

/* The scores' gradient of every sequence and head at once lives in the backend's own scratch
 * (batch, heads, seq, seq), not in the caller's seq x seq one, so that each product is one
 * call per head as in the forward pass. */
static void cuda_attention_backward(float *dqkv, float *scratch, const float *dout,
                                    const float *qkv, const float *att, int batch, int seq, int C,
                                    int heads)
{
    (void)scratch;
    if (batch <= 0 || seq <= 0 || C <= 0)
        return;
    int hs = C / heads, row = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    size_t seq_qkv = (size_t)seq * row, seq_att = (size_t)heads * seq * seq;
    size_t seq_out = (size_t)seq * C, sq = (size_t)seq * seq;
    size_t rows = (size_t)batch * heads * seq;
    float *da = (float *)dev_scratch_reserve(&att_scratch, sizeof(float) * rows * seq);
    for (int h = 0; h < heads; h++) {
        size_t qo = (size_t)h * hs;
        const float *d = dout + qo, *a = att + (size_t)h * sq;
        /* da (T, T) = d (T, hs) v^T; dv (T, hs) = a^T d */
        cuda_gemm_batched(0, 1, seq, seq, hs, 1.0f, d, C, seq_out, qkv + 2 * (size_t)C + qo, row,
                          seq_qkv, 0.0f, da + (size_t)h * sq, seq, seq_att, batch);
        cuda_gemm_batched(1, 0, seq, hs, seq, 1.0f, a, seq, seq_att, d, C, seq_out, 0.0f,
                          dqkv + 2 * (size_t)C + qo, row, seq_qkv, batch);
    }
    causal_softmax_backward_kernel<<<row_blocks(rows), THREADS>>>(da, att, rows, seq, scale);
    LAUNCH_CHECK();
    for (int h = 0; h < heads; h++) {
        size_t qo = (size_t)h * hs;
        const float *ds = da + (size_t)h * sq;
        /* dq (T, hs) = ds k; dk (T, hs) = ds^T q */
        cuda_gemm_batched(0, 0, seq, hs, seq, 1.0f, ds, seq, seq_att, qkv + C + qo, row, seq_qkv,
                          0.0f, dqkv + qo, row, seq_qkv, batch);
        cuda_gemm_batched(1, 0, seq, hs, seq, 1.0f, ds, seq, seq_att, qkv + qo, row, seq_qkv, 0.0f,
                          dqkv + C + qo, row, seq_qkv, batch);
    }
}

void cuda_gpt_fill(trainer_backend_t *t)
{
    t->tokens_split = cuda_tokens_split;
    t->embed_forward = cuda_embed_forward;
    t->embed_backward = cuda_embed_backward;
    t->layernorm_forward = cuda_layernorm_forward;
    t->layernorm_backward = cuda_layernorm_backward;
    t->gelu_forward = cuda_gelu_forward;
    t->gelu_backward = cuda_gelu_backward;
    t->attention_forward = cuda_attention_forward;
    t->attention_backward = cuda_attention_backward;
}
