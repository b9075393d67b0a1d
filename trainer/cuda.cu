/* The CUDA backend: the trainer_backend_t table (backend.h) on one GPU, tested op by op
 * against cpu.c (tests/test_cuda.c).
 *
 * Matrix products go to cuBLAS in plain FP32: the handle keeps CUBLAS_DEFAULT_MATH, under
 * which cublasSgemm never rounds its inputs to TF32. Everything else is a small kernel that
 * follows cpu.c operation for operation: the same first-maximum tie rule in max pooling and
 * in the predicted class, col2im adding its k*k terms in the CPU's order, softmax in double.
 * This file is compiled with --fmad=false (CMakeLists.txt) because the CPU build (x86-64
 * without -mfma) never fuses a multiply and an add; the elementwise ops, im2col/col2im,
 * pooling, permute and SGD therefore give the CPU's bits. The two reductions (bias_grad and
 * the loss sum) use fixed trees: deterministic, but summed in another order than the CPU.
 *
 * Everything runs on the legacy default stream and every copy is a synchronous cudaMemcpy,
 * so kernels run in call order and data handed back to the host is complete. The cuBLAS
 * handle, gather's pinned staging buffer and the loss scratch are made on first use, grown
 * only when a larger batch needs it, and live until the process exits. Like the rest of the
 * trainer this expects one OS thread (SimGrid actors share one). The transformer's ops are in
 * cuda_gpt.cu; what both files share, in cuda_common.cuh. */
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

static size_t transferred; /* bytes between host and device */

/* ---- memory ---------------------------------------------------------------------------- */

static void *cuda_alloc(size_t bytes)
{
    void *p = NULL;
    size_t n = bytes ? bytes : 1; /* never NULL, even for 0 bytes */
    cudaError_t e = cudaMalloc(&p, n);
    DT_CHECK(e == cudaSuccess, "CUDA: cudaMalloc of %zu bytes: %s", n, cudaGetErrorString(e));
    CUDA_CHECK(cudaMemset(p, 0, n));
    return p;
}

static void cuda_free(void *dev)
{
    CUDA_CHECK(cudaFree(dev));
} /* NULL is a no-op */

static void cuda_upload(void *dev_dst, const void *host_src, size_t bytes)
{
    if (!bytes)
        return;
    CUDA_CHECK(cudaMemcpy(dev_dst, host_src, bytes, cudaMemcpyHostToDevice));
    transferred += bytes;
}

static void cuda_download(void *host_dst, const void *dev_src, size_t bytes)
{
    if (!bytes)
        return;
    CUDA_CHECK(cudaMemcpy(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost));
    transferred += bytes;
}

/* Whole buffers or disjoint ranges (cudaMemcpy does not promise memmove's overlap rule). */
static void cuda_copy(void *dev_dst, const void *dev_src, size_t bytes)
{
    if (!bytes || dev_dst == dev_src)
        return;
    CUDA_CHECK(cudaMemcpy(dev_dst, dev_src, bytes, cudaMemcpyDeviceToDevice));
}

/* Pinned host memory for gather: one DMA per batch instead of a copy per row. */
static void *staging;
static size_t staging_cap;

static void *staging_reserve(size_t bytes)
{
    if (bytes > staging_cap) {
        if (staging)
            CUDA_CHECK(cudaFreeHost(staging));
        staging = NULL;
        staging_cap = 0;
        CUDA_CHECK(cudaMallocHost(&staging, bytes));
        staging_cap = bytes;
    }
    return staging;
}

static void cuda_gather(float *x_dst, uint8_t *y_dst, const float *x, const uint8_t *y,
                        const uint32_t *idx, int batch, size_t dim)
{
    if (batch <= 0)
        return;
    size_t x_bytes = sizeof(float) * dim * (size_t)batch;
    /* rows (batch, dim) then the labels (batch), in one staging buffer */
    char *stage = (char *)staging_reserve(x_bytes + (size_t)batch);
    float *xs = (float *)stage;
    uint8_t *ys = (uint8_t *)(stage + x_bytes);
    for (int b = 0; b < batch; b++) {
        memcpy(xs + (size_t)b * dim, x + (size_t)idx[b] * dim, sizeof(float) * dim);
        ys[b] = y[idx[b]];
    }
    /* From pinned memory cudaMemcpy returns when the copy is done: the buffer is free again. */
    CUDA_CHECK(cudaMemcpy(x_dst, xs, x_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y_dst, ys, (size_t)batch, cudaMemcpyHostToDevice));
    transferred += x_bytes + (size_t)batch;
}

/* Device scratch for the loss: grown on demand, never shrunk. */
static void *scratch;
static size_t scratch_cap;

static void *scratch_reserve(size_t bytes)
{
    if (bytes > scratch_cap) {
        CUDA_CHECK(cudaFree(scratch));
        scratch = NULL;
        scratch_cap = 0;
        CUDA_CHECK(cudaMalloc(&scratch, bytes));
        scratch_cap = bytes;
    }
    return scratch;
}

/* ---- gemm ------------------------------------------------------------------------------ */

static cublasHandle_t cublas_create(void)
{
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    /* FP32 products and sums: no TF32 (that needs CUBLAS_TF32_TENSOR_OP_MATH). */
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    return h;
}

static cublasHandle_t cublas(void)
{
    static cublasHandle_t handle = cublas_create(); /* on first use */
    return handle;
}

/* cuBLAS is column-major, and a row-major matrix with row stride ld is, read column-major,
 * its transpose with leading dimension ld. So row-major C = op(A) op(B) is column-major
 * C^T = op(B)^T op(A)^T: the same call with A and B swapped and m and n swapped; the
 * transpose flags keep their meaning. */
static void cuda_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                      int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    CUBLAS_CHECK(cublasSgemm(cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                             trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                             &beta, c, ldc));
}

/* Replicas: one strided-batched call (one launch for every replica's product). */
void cuda_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                       int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                       float beta, float *c, int ldc, size_t stride_c, int count)
{
    if (count == 1) {
        cuda_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (m <= 0 || n <= 0 || count <= 0)
        return;
    CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b,
                                           ldb, (long long)stride_b, a, lda, (long long)stride_a,
                                           &beta, c, ldc, (long long)stride_c, count));
}

/* ---- bias ------------------------------------------------------------------------------ */

/* y is replicas of `block` elements each; replica r adds bias + r * stride. */
__global__ void bias_add_kernel(float *y, const float *bias, size_t stride, size_t block, size_t n,
                                int channels, int inner)
{
    GRID_STRIDE(e, n)
    {
        size_t r = e / block, in_block = e % block;
        y[e] += bias[r * stride + (in_block / (size_t)inner) % (size_t)channels];
    }
}

static void cuda_bias_add_batched(float *y, const float *bias, size_t bias_stride, int count,
                                  int outer, int channels, int inner)
{
    size_t block = (size_t)outer * channels * inner, n = block * (size_t)count;
    if (!n)
        return;
    bias_add_kernel<<<blocks_for(n), THREADS>>>(y, bias, bias_stride, block, n, channels, inner);
    LAUNCH_CHECK();
}

static void cuda_bias_add(float *y, const float *bias, int outer, int channels, int inner)
{
    cuda_bias_add_batched(y, bias, 0, 1, outer, channels, inner);
}

/* One block per channel: each thread sums a strided share of the (outer, inner) terms, then
 * a tree in shared memory. Writes every dbias[c] (overwrite, as on the CPU). */
__global__ void bias_grad_kernel(float *dbias, size_t dbias_stride, const float *dy, int outer,
                                 int channels, int inner)
{
    __shared__ float part[THREADS];
    size_t c = blockIdx.x;
    /* replica blockIdx.y: its own dy block and its own dbias */
    dy += (size_t)blockIdx.y * outer * channels * inner;
    dbias += (size_t)blockIdx.y * dbias_stride;
    size_t terms = (size_t)outer * inner;
    float s = 0.0f;
    for (size_t t = threadIdx.x; t < terms; t += blockDim.x) {
        size_t o = t / (size_t)inner, i = t % (size_t)inner;
        s += dy[(o * (size_t)channels + c) * (size_t)inner + i];
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        dbias[c] = part[0];
}

static void cuda_bias_grad_batched(float *dbias, size_t dbias_stride, const float *dy, int count,
                                   int outer, int channels, int inner)
{
    if (channels <= 0 || count <= 0)
        return;
    DT_ASSERT(count <= 65535); /* gridDim.y */
    /* outer * inner == 0 still runs: every dbias[c] becomes 0 */
    bias_grad_kernel<<<dim3((unsigned)channels, (unsigned)count), THREADS>>>(
        dbias, dbias_stride, dy, outer, channels, inner);
    LAUNCH_CHECK();
}

static void cuda_bias_grad(float *dbias, const float *dy, int outer, int channels, int inner)
{
    cuda_bias_grad_batched(dbias, 0, dy, 1, outer, channels, inner);
}

/* ---- relu (in place allowed: each element is read, then written, by one thread) --------- */

__global__ void relu_forward_kernel(float *y, const float *x, size_t n)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

__global__ void relu_backward_kernel(float *dx, const float *dy, const float *y, size_t n)
{
    GRID_STRIDE(i, n)
    {
        float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}

static void cuda_relu_forward(float *y, const float *x, size_t n)
{
    if (!n)
        return;
    relu_forward_kernel<<<blocks_for(n), THREADS>>>(y, x, n);
    LAUNCH_CHECK();
}

static void cuda_relu_backward(float *dx, const float *dy, const float *y, size_t n)
{
    if (!n)
        return;
    relu_backward_kernel<<<blocks_for(n), THREADS>>>(dx, dy, y, n);
    LAUNCH_CHECK();
}

/* ---- im2col / col2im ------------------------------------------------------------------- */

/* One thread per col element: col[(c k + ki) k + kj][(b oh + i) ow + j]
 * = x[c][b][i + ki][j + kj]. */
__global__ void im2col_kernel(float *col, const float *x, size_t total, int batch, int h, int w,
                              int k, int oh, int ow)
{
    size_t ncols = (size_t)batch * oh * ow, plane_out = (size_t)oh * ow;
    GRID_STRIDE(e, total)
    {
        size_t row = e / ncols, pos = e % ncols;
        int kj = (int)(row % (size_t)k), ki = (int)(row / (size_t)k % (size_t)k);
        size_t c = row / ((size_t)k * k);
        size_t b = pos / plane_out;
        int rem = (int)(pos % plane_out), i = rem / ow, j = rem % ow;
        col[e] = x[((c * batch + b) * h + (size_t)(i + ki)) * w + (size_t)(j + kj)];
    }
}

/* One thread per dx element, gathering its terms instead of scattering them (no atomics, so
 * deterministic). Element (c, b, yy, xx) collects col[(c k + ki) k + kj][(b oh + yy - ki) ow
 * + xx - kj] for every ki, kj whose output position lies inside (oh, ow), in the order ki,
 * then kj, from 0: the order in which cpu.c accumulates into the zeroed dx. */
__global__ void col2im_kernel(float *dx, const float *col, size_t total, int batch, int h, int w,
                              int k, int oh, int ow)
{
    size_t ncols = (size_t)batch * oh * ow;
    GRID_STRIDE(e, total)
    {
        int xx = (int)(e % (size_t)w);
        size_t t = e / (size_t)w;
        int yy = (int)(t % (size_t)h);
        t /= (size_t)h;
        size_t b = t % (size_t)batch, c = t / (size_t)batch;
        int ki_lo = yy - oh + 1 > 0 ? yy - oh + 1 : 0, ki_hi = yy < k - 1 ? yy : k - 1;
        int kj_lo = xx - ow + 1 > 0 ? xx - ow + 1 : 0, kj_hi = xx < k - 1 ? xx : k - 1;
        float s = 0.0f;
        for (int ki = ki_lo; ki <= ki_hi; ki++)
            for (int kj = kj_lo; kj <= kj_hi; kj++) {
                size_t row = (c * k + (size_t)ki) * k + (size_t)kj;
                s += col[row * ncols + (b * oh + (size_t)(yy - ki)) * ow + (size_t)(xx - kj)];
            }
        dx[e] = s;
    }
}

static void cuda_im2col(float *col, const float *x, int channels, int batch, int h, int w, int k)
{
    int oh = h - k + 1, ow = w - k + 1;
    size_t total = (size_t)channels * k * k * batch * oh * ow;
    if (!total)
        return;
    im2col_kernel<<<blocks_for(total), THREADS>>>(col, x, total, batch, h, w, k, oh, ow);
    LAUNCH_CHECK();
}

static void cuda_col2im(float *dx, const float *col, int channels, int batch, int h, int w, int k)
{
    int oh = h - k + 1, ow = w - k + 1;
    size_t total = (size_t)channels * batch * h * w;
    if (!total)
        return;
    col2im_kernel<<<blocks_for(total), THREADS>>>(dx, col, total, batch, h, w, k, oh, ow);
    LAUNCH_CHECK();
}

/* ---- maxpool --------------------------------------------------------------------------- */

/* One thread per output: the window in row-major order, replaced only by a strictly larger
 * value, so the first maximum wins (cpu.c's rule). */
__global__ void maxpool_forward_kernel(float *y, int32_t *argmax, const float *x, size_t total,
                                       int h, int w, int k, int oh, int ow)
{
    GRID_STRIDE(e, total)
    {
        int j = (int)(e % (size_t)ow);
        size_t t = e / (size_t)ow;
        int i = (int)(t % (size_t)oh);
        size_t p = t / (size_t)oh;
        const float *in = x + p * h * w;
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
        y[e] = v;
        argmax[e] = best;
    }
}

/* One thread per input element: windows do not overlap (stride k), so an element gets the
 * gradient of its own window if it was that window's winner, else 0; rows and columns past
 * the last whole window get 0. Every dx element is written (overwrite). 0.0f + g rounds as
 * cpu.c's accumulation into the zeroed dx does (-0 becomes +0). */
__global__ void maxpool_backward_kernel(float *dx, const float *dy, const int32_t *argmax,
                                        size_t total, int h, int w, int k, int oh, int ow)
{
    GRID_STRIDE(e, total)
    {
        int xx = (int)(e % (size_t)w);
        size_t t = e / (size_t)w;
        int yy = (int)(t % (size_t)h);
        size_t p = t / (size_t)h;
        int i = yy / k, j = xx / k;
        float g = 0.0f;
        if (i < oh && j < ow) {
            size_t o = (p * oh + (size_t)i) * ow + (size_t)j;
            if (argmax[o] == yy * w + xx)
                g = 0.0f + dy[o];
        }
        dx[e] = g;
    }
}

static void cuda_maxpool_forward(float *y, int32_t *argmax, const float *x, int planes, int h,
                                 int w, int k)
{
    int oh = h / k, ow = w / k;
    size_t total = (size_t)planes * oh * ow;
    if (!total)
        return;
    maxpool_forward_kernel<<<blocks_for(total), THREADS>>>(y, argmax, x, total, h, w, k, oh, ow);
    LAUNCH_CHECK();
}

static void cuda_maxpool_backward(float *dx, const float *dy, const int32_t *argmax, int planes,
                                  int h, int w, int k)
{
    int oh = h / k, ow = w / k;
    size_t total = (size_t)planes * h * w;
    if (!total)
        return;
    maxpool_backward_kernel<<<blocks_for(total), THREADS>>>(dx, dy, argmax, total, h, w, k, oh, ow);
    LAUNCH_CHECK();
}

/* ---- permute --------------------------------------------------------------------------- */

/* One thread per dst element: dst[r][j][i][e] = src[r][i][j][e], src blocks (a, b, inner). */
__global__ void permute_kernel(float *dst, const float *src, size_t total, int a, int b, int inner)
{
    size_t block = (size_t)a * b * inner;
    GRID_STRIDE(e, total)
    {
        size_t r = e / block, f = e % block;
        size_t in = f % (size_t)inner, t = f / (size_t)inner;
        size_t i = t % (size_t)a, j = t / (size_t)a;
        dst[e] = src[r * block + (i * b + j) * inner + in];
    }
}

static void cuda_permute_batched(float *dst, const float *src, int count, int a, int b, int inner)
{
    size_t total = (size_t)a * b * inner * (size_t)(count > 0 ? count : 0);
    if (!total)
        return;
    permute_kernel<<<blocks_for(total), THREADS>>>(dst, src, total, a, b, inner);
    LAUNCH_CHECK();
}

static void cuda_permute(float *dst, const float *src, int a, int b, int inner)
{
    cuda_permute_batched(dst, src, 1, a, b, inner);
}

/* ---- softmax cross-entropy ------------------------------------------------------------- */

/* What comes back to the host. */
typedef struct xent_result {
    double loss_sum;
    int correct;
} xent_result_t;

/* One thread per row, the arithmetic of cpu.c line for line (max and first argmax in float,
 * exp and log in double); then each block sums its rows' loss and hits with a fixed tree. */
__global__ void softmax_xent_kernel(float *dlogits, const float *logits, const uint8_t *labels,
                                    int batch, int classes, float grad_scale, double *block_loss,
                                    int *block_right)
{
    __shared__ double loss_part[THREADS];
    __shared__ int right_part[THREADS];
    int b = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    /* replica blockIdx.y: its rows, and its partial sums after those of the replicas before */
    size_t rows = (size_t)blockIdx.y * batch;
    logits += rows * classes;
    labels += rows;
    if (dlogits)
        dlogits += rows * classes;
    block_loss += (size_t)blockIdx.y * gridDim.x;
    block_right += (size_t)blockIdx.y * gridDim.x;
    double loss = 0.0;
    int right = 0;
    if (b < batch) {
        const float *z = logits + (size_t)b * classes;
        int best = 0;
        float zmax = z[0];
        for (int c = 1; c < classes; c++)
            if (z[c] > zmax) {
                zmax = z[c];
                best = c;
            }
        double sum = 0.0;
        for (int c = 0; c < classes; c++)
            sum += exp((double)(z[c] - zmax));
        int y = labels[b];
        /* -log softmax(z)_y = log(sum exp(z - zmax)) - (z_y - zmax) */
        loss = log(sum) - (double)(z[y] - zmax);
        right = best == y;
        if (dlogits) {
            float *d = dlogits + (size_t)b * classes;
            for (int c = 0; c < classes; c++) {
                double p = exp((double)(z[c] - zmax)) / sum;
                d[c] = (float)((p - (c == y ? 1.0 : 0.0)) * grad_scale);
            }
        }
    }
    loss_part[threadIdx.x] = loss;
    right_part[threadIdx.x] = right;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            loss_part[threadIdx.x] += loss_part[threadIdx.x + half];
            right_part[threadIdx.x] += right_part[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        block_loss[blockIdx.x] = loss_part[0];
        block_right[blockIdx.x] = right_part[0];
    }
}

/* One thread per replica adds its blocks' partial sums in block order (a few blocks per
 * batch). */
__global__ void softmax_xent_total_kernel(xent_result_t *out, const double *block_loss,
                                          const int *block_right, int blocks, int count)
{
    int r = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (r >= count)
        return;
    double loss = 0.0;
    int right = 0;
    for (int i = 0; i < blocks; i++) {
        loss += block_loss[(size_t)r * blocks + i];
        right += block_right[(size_t)r * blocks + i];
    }
    out[r].loss_sum = loss;
    out[r].correct = right;
}

static void cuda_softmax_xent_batched(float *dlogits, const float *logits, const uint8_t *labels,
                                      int count, int batch, int classes, float grad_scale,
                                      double *loss_sum, int *correct)
{
    if (count <= 0)
        return;
    if (batch <= 0) {
        for (int r = 0; r < count; r++) {
            loss_sum[r] = 0.0;
            correct[r] = 0;
        }
        return;
    }
    DT_ASSERT(count <= 65535); /* gridDim.y */
    int blocks = (batch + THREADS - 1) / THREADS;
    size_t parts = (size_t)blocks * (size_t)count;
    /* scratch: the results, then the blocks' losses (doubles), then their hit counts */
    size_t loss_off = (sizeof(xent_result_t) * (size_t)count + 15) / 16 * 16;
    size_t right_off = loss_off + sizeof(double) * parts;
    char *s = (char *)scratch_reserve(right_off + sizeof(int) * parts);
    xent_result_t *out = (xent_result_t *)s;
    double *block_loss = (double *)(s + loss_off);
    int *block_right = (int *)(s + right_off);
    softmax_xent_kernel<<<dim3((unsigned)blocks, (unsigned)count), THREADS>>>(
        dlogits, logits, labels, batch, classes, grad_scale, block_loss, block_right);
    LAUNCH_CHECK();
    softmax_xent_total_kernel<<<(unsigned)((count + THREADS - 1) / THREADS), THREADS>>>(
        out, block_loss, block_right, blocks, count);
    LAUNCH_CHECK();
    /* the replicas' results come back through gather's pinned buffer: every copy here is
     * synchronous, so it is free between calls */
    size_t bytes = sizeof(xent_result_t) * (size_t)count;
    xent_result_t *res = (xent_result_t *)staging_reserve(bytes);
    CUDA_CHECK(cudaMemcpy(res, out, bytes, cudaMemcpyDeviceToHost));
    transferred += bytes;
    for (int r = 0; r < count; r++) {
        loss_sum[r] = res[r].loss_sum;
        correct[r] = res[r].correct;
    }
}

static void cuda_softmax_xent(float *dlogits, const float *logits, const uint8_t *labels, int batch,
                              int classes, float grad_scale, double *loss_sum, int *correct)
{
    cuda_softmax_xent_batched(dlogits, logits, labels, 1, batch, classes, grad_scale, loss_sum,
                              correct);
}

static void cuda_sync(void)
{
    CUDA_CHECK(cudaDeviceSynchronize());
}

/* ---- sgd and buffer ops (cpu.c's formulas; no fused multiply-add, see the top) ---------- */

__global__ void sgd_kernel(float *w, const float *g, float *v, size_t n, float lr, float momentum,
                           float weight_decay)
{
    GRID_STRIDE(i, n)
    {
        if (momentum == 0.0f) {
            w[i] -= lr * (g[i] + weight_decay * w[i]);
        } else {
            float vi = momentum * v[i] + (g[i] + weight_decay * w[i]);
            v[i] = vi;
            w[i] -= lr * vi;
        }
    }
}

static void cuda_sgd_update(float *w, const float *g, float *v, size_t n, float lr, float momentum,
                            float weight_decay)
{
    if (!n)
        return;
    DT_ASSERT(momentum == 0.0f || v);
    sgd_kernel<<<blocks_for(n), THREADS>>>(w, g, v, n, lr, momentum, weight_decay);
    LAUNCH_CHECK();
}

/* cpu.c's cpu_adam_update, element by element (sqrtf and the division IEEE-rounded, as
 * nvcc's defaults make them) */
__global__ void adam_kernel(float *w, const float *g, float *m, float *v, size_t n,
                            trainer_adam_step_t a)
{
    int from_m = a.one_minus_beta1 < 0.5f;
    float keep = 1.0f - a.one_minus_beta1;
    GRID_STRIDE(i, n)
    {
        float wi = w[i];
        if (a.decay != 1.0f)
            wi *= a.decay;
        float gi = g[i];
        if (a.l2 != 0.0f)
            gi = gi + a.l2 * wi;
        float mi = from_m ? m[i] + a.one_minus_beta1 * (gi - m[i]) : gi - (gi - m[i]) * keep;
        float vi = v[i] * a.beta2 + a.one_minus_beta2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / a.bias2_sqrt + a.eps;
        w[i] = wi + -a.step_size * mi / denom;
    }
}

static void cuda_adam_update(float *w, const float *g, float *m, float *v, size_t n,
                             const trainer_adam_step_t *a)
{
    if (!n)
        return;
    adam_kernel<<<blocks_for(n), THREADS>>>(w, g, m, v, n, *a);
    LAUNCH_CHECK();
}

/* Each block's sum of squares in double, by a fixed tree: part[blockIdx.x]. */
__global__ void sumsq_kernel(const float *x, size_t n, double *part)
{
    __shared__ double acc[THREADS];
    double s = 0.0;
    GRID_STRIDE(i, n)
    {
        s += (double)x[i] * x[i];
    }
    acc[threadIdx.x] = s;
    __syncthreads();
    for (unsigned h = THREADS / 2; h > 0; h /= 2) {
        if (threadIdx.x < h)
            acc[threadIdx.x] += acc[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc[0];
}

static double cuda_sumsq(const float *x, size_t n)
{
    if (!n)
        return 0.0;
    unsigned blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
    double *part = (double *)scratch_reserve(sizeof(double) * blocks);
    sumsq_kernel<<<blocks, THREADS>>>(x, n, part);
    LAUNCH_CHECK();
    double host[1024], s = 0.0;
    CUDA_CHECK(cudaMemcpy(host, part, sizeof(double) * blocks, cudaMemcpyDeviceToHost));
    transferred += sizeof(double) * blocks;
    for (unsigned b = 0; b < blocks; b++)
        s += host[b];
    return s;
}

__global__ void axpy_kernel(size_t n, float a, const float *x, float *y)
{
    GRID_STRIDE(i, n)
    {
        y[i] += a * x[i];
    }
}

__global__ void scale_kernel(size_t n, float a, float *x)
{
    GRID_STRIDE(i, n)
    {
        x[i] *= a;
    }
}

/* dst = a * src; dst may be src. */
__global__ void scaled_copy_kernel(size_t n, float a, const float *src, float *dst)
{
    GRID_STRIDE(i, n)
    {
        dst[i] = a * src[i];
    }
}

static void cuda_axpy(size_t n, float a, const float *x, float *y)
{
    if (!n)
        return;
    axpy_kernel<<<blocks_for(n), THREADS>>>(n, a, x, y);
    LAUNCH_CHECK();
}

static void cuda_zero(float *x, size_t n)
{
    if (n)
        CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(float) * n, 0));
}

static void cuda_scale(size_t n, float a, float *x)
{
    if (!n)
        return;
    scale_kernel<<<blocks_for(n), THREADS>>>(n, a, x);
    LAUNCH_CHECK();
}

/* srcs and weights are host arrays (of dev pointers and of floats): one launch per source,
 * srcs[0] first so that dst may alias it, in cpu.c's order and rounding. */
static void cuda_average(float *dst, const float *const *srcs, const float *weights, int count,
                         size_t n)
{
    DT_ASSERT(count >= 1);
    for (int j = 1; j < count; j++)
        DT_ASSERT(srcs[j] != dst);
    if (!n)
        return;
    scaled_copy_kernel<<<blocks_for(n), THREADS>>>(n, weights[0], srcs[0], dst);
    LAUNCH_CHECK();
    for (int j = 1; j < count; j++)
        cuda_axpy(n, weights[j], srcs[j], dst);
}

/* ---- the table ------------------------------------------------------------------------- */

static trainer_backend_t cuda_table(void)
{
    trainer_backend_t t;
    memset(&t, 0, sizeof t);
    t.name = "cuda";
    t.alloc = cuda_alloc;
    t.free = cuda_free;
    t.upload = cuda_upload;
    t.download = cuda_download;
    t.copy = cuda_copy;
    t.gather = cuda_gather;
    t.gemm = cuda_gemm;
    t.bias_add = cuda_bias_add;
    t.bias_grad = cuda_bias_grad;
    t.relu_forward = cuda_relu_forward;
    t.relu_backward = cuda_relu_backward;
    t.im2col = cuda_im2col;
    t.col2im = cuda_col2im;
    t.maxpool_forward = cuda_maxpool_forward;
    t.maxpool_backward = cuda_maxpool_backward;
    t.permute = cuda_permute;
    t.softmax_xent = cuda_softmax_xent;
    t.sgd_update = cuda_sgd_update;
    t.adam_update = cuda_adam_update;
    t.sumsq = cuda_sumsq;
    t.axpy = cuda_axpy;
    t.scale = cuda_scale;
    t.zero = cuda_zero;
    t.average = cuda_average;
    t.gemm_batched = cuda_gemm_batched;
    t.bias_add_batched = cuda_bias_add_batched;
    t.bias_grad_batched = cuda_bias_grad_batched;
    t.permute_batched = cuda_permute_batched;
    t.softmax_xent_batched = cuda_softmax_xent_batched;
    cuda_gpt_fill(&t);
    t.sync = cuda_sync;
    return t;
}

extern "C" const trainer_backend_t *trainer_backend_cuda(dt_err_t *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear it: the caller may go on with the CPU */
        if (e == cudaErrorInsufficientDriver)
            dt_err_input(err, "CUDA driver not found or older than this CUDA runtime (%s)",
                         cudaGetErrorString(e));
        else
            dt_err_input(err, "no CUDA device: %s", cudaGetErrorString(e));
        return NULL;
    }
    if (count == 0) {
        dt_err_input(err, "no CUDA device: the driver reports none");
        return NULL;
    }
    /* A GPU older than this build's architectures (CMAKE_CUDA_ARCHITECTURES) has no image of
     * our kernels: find out here rather than at the first launch. */
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, relu_forward_kernel);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        char name[256];
        trainer_backend_cuda_device_name(name, sizeof name);
        dt_err_input(err,
                     "no usable CUDA device: %s: %s (reconfigure with "
                     "-DCMAKE_CUDA_ARCHITECTURES=native)",
                     name, cudaGetErrorString(e));
        return NULL;
    }
    static const trainer_backend_t table = cuda_table();
    return &table;
}

extern "C" size_t trainer_backend_cuda_bytes_transferred(void)
{
    return transferred;
}

extern "C" void trainer_backend_cuda_device_name(char *buf, size_t n)
{
    if (!n)
        return;
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(buf, n, "no CUDA device");
        return;
    }
    snprintf(buf, n, "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
}

/* ---- the GEMM curve at a tensor-core precision (dtsim calibrate --gemm --precision) ------- */

/* Seconds of the best of reps n x n x n products at precision (1 TF32: FP32 data, TF32
 * tensor cores; 2 BF16: BF16 inputs, FP32 sums and output), timed by CUDA events; the
 * largest error of 64 sampled entries against a double product of the inputs as rounded,
 * relative to the sum of |terms|, in *max_rel_error. */
extern "C" double trainer_backend_cuda_gemm_seconds(int precision, int n, int reps,
                                                    double *max_rel_error)
{
    size_t nn = (size_t)n * (size_t)n;
    float *ha = (float *)malloc(sizeof(float) * nn), *hb = (float *)malloc(sizeof(float) * nn);
    float *hc = (float *)malloc(sizeof(float) * nn);
    DT_CHECK(ha && hb && hc, "out of memory");
    uint64_t x = 88172645463325252ull; /* xorshift: any fixed values in [-1, 1) */
    for (size_t i = 0; i < 2 * nn; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        float v = (float)((double)(x >> 11) / 9007199254740992.0 * 2 - 1);
        if (precision == 2) /* the inputs as BF16 holds them */
            v = __bfloat162float(__float2bfloat16(v));
        (i < nn ? ha[i] : hb[i - nn]) = v;
    }
    void *a, *b;
    float *c;
    size_t in_bytes = precision == 2 ? sizeof(__nv_bfloat16) : sizeof(float);
    CUDA_CHECK(cudaMalloc(&a, in_bytes * nn));
    CUDA_CHECK(cudaMalloc(&b, in_bytes * nn));
    CUDA_CHECK(cudaMalloc((void **)&c, sizeof(float) * nn));
    if (precision == 2) {
        __nv_bfloat16 *t = (__nv_bfloat16 *)malloc(sizeof(__nv_bfloat16) * nn);
        DT_CHECK(t, "out of memory");
        for (size_t i = 0; i < nn; i++)
            t[i] = __float2bfloat16(ha[i]);
        CUDA_CHECK(cudaMemcpy(a, t, in_bytes * nn, cudaMemcpyHostToDevice));
        for (size_t i = 0; i < nn; i++)
            t[i] = __float2bfloat16(hb[i]);
        CUDA_CHECK(cudaMemcpy(b, t, in_bytes * nn, cudaMemcpyHostToDevice));
        free(t);
    } else {
        CUDA_CHECK(cudaMemcpy(a, ha, in_bytes * nn, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b, hb, in_bytes * nn, cudaMemcpyHostToDevice));
    }
    cudaDataType_t type = precision == 2 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t compute =
        precision == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    float best = INFINITY;
    for (int r = 0; r <= reps; r++) { /* the first call warms up */
        CUDA_CHECK(cudaEventRecord(start));
        /* row-major C = A B is column-major C^T = B^T A^T: B first (as cuda_gemm) */
        CUBLAS_CHECK(cublasGemmEx(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, type, n, a,
                                  type, n, &zero, c, CUDA_R_32F, n, compute, CUBLAS_GEMM_DEFAULT));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r > 0 && ms < best)
            best = ms;
    }
    CUDA_CHECK(cudaMemcpy(hc, c, sizeof(float) * nn, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int s = 0; s < 64; s++) {
        size_t i = (size_t)(s * 7919) % (size_t)n, j = (size_t)(s * 104729 + 13) % (size_t)n;
        double sum = 0, mag = 1e-30;
        for (size_t k = 0; k < (size_t)n; k++) {
            double t = (double)ha[i * n + k] * (double)hb[k * n + j];
            sum += t;
            mag += fabs(t);
        }
        double e = fabs(hc[i * n + j] - sum) / mag;
        if (e > worst)
            worst = e;
    }
    *max_rel_error = worst;
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    free(ha);
    free(hb);
    free(hc);
    return best * 1e-3;
}
