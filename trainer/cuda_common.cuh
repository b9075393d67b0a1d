/* What the CUDA backend's files share (cuda.cu, cuda_gpt.cu): the checks, the launch shape,
 * the strided-batched GEMM, and the filling of the table's transformer slots. Private to
 * trainer/. */
#ifndef DTSIM_CUDA_COMMON_CUH
#define DTSIM_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" {
#include "backend.h"
#include "common.h"
}

/* Machine failures (common.h's third tier): name the call, the file and line, and abort. */
#define CUDA_CHECK(call)                                                               \
    do {                                                                               \
        cudaError_t cuda_check_err_ = (call);                                          \
        DT_CHECK(cuda_check_err_ == cudaSuccess, "CUDA: %s: %s", #call,                \
                 cudaGetErrorString(cuda_check_err_));                                 \
    } while (0)

#define CUBLAS_CHECK(call)                                                             \
    do {                                                                               \
        cublasStatus_t cublas_check_st_ = (call);                                      \
        DT_CHECK(cublas_check_st_ == CUBLAS_STATUS_SUCCESS, "cuBLAS: %s: %s", #call,   \
                 cublasGetStatusString(cublas_check_st_));                             \
    } while (0)

/* A bad launch configuration shows at once; faults inside a kernel show at the next
 * synchronous copy, which checks its status too. */
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

/* Threads per block (a power of two: the block reductions halve it). */
#define THREADS 256
/* Elementwise kernels loop with a grid stride past this many blocks. */
#define MAX_BLOCKS 65536

#define GRID_STRIDE(i, n)                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);             \
         i += (size_t)gridDim.x * blockDim.x)

static inline unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

/* backend.h's gemm_batched (cuda.cu): row-major, on the legacy default stream. */
void cuda_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, size_t stride_a, const float *b, int ldb,
                       size_t stride_b, float beta, float *c, int ldc, size_t stride_c,
                       int count);

/* Fills the transformer's slots of the table (cuda_gpt.cu). */
void cuda_gpt_fill(trainer_backend_t *t);

#endif
