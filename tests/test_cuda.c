/* The CUDA backend against the CPU backend, its oracle, with the tolerance stated beside
 * every call:
 *   - every op through the checks test_backend runs on the CPU (backend_checks.h);
 *   - what only a GPU backend can get wrong: gather's staging, the transfer counter, empty
 *     ops, grid-stride loops, multi-block reductions, TF32 creeping into the GEMM, and the
 *     ops that cuda.cu says give the CPU's bits;
 *   - whole models (logreg, mlp, two small cnns): one forward/loss/backward (logits, loss,
 *     every gradient) and five SGD steps, on CUDA and on the CPU from the same parameters;
 *   - the transformer's ops and a tiny gpt's steps likewise (gpt_backend_checks.h).
 *
 * Without a usable GPU, or in a build without CUDA, it says why on stderr and exits 77, which
 * CTest reports as skipped. The tests run in this process (CK_NOFORK): a CUDA context does
 * not survive fork(). */
#include <check.h>
#include <stdio.h>

#ifndef DTSIM_HAVE_CUDA

int main(void)
{
    fprintf(stderr, "test_cuda: SKIPPED: dtsim was built without CUDA (configure with "
                    "-DDTSIM_CUDA=ON where nvcc is installed)\n");
    return 77;
}

#else

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_checks.h"
#include "data.h"
#include "model.h"
#include "train.h"
#include "group_checks.h"
#include "gpt_backend_checks.h"

static const trainer_backend_t *cuda; /* set by main before any test runs */

/* ---- the shared op checks -------------------------------------------------------------- */

START_TEST(test_cuda_name)
{
    ck_assert_str_eq(cuda->name, "cuda");
    char name[256];
    trainer_backend_cuda_device_name(name, sizeof name);
    ck_assert_msg(strcmp(name, "no CUDA device") != 0, "device name: %s", name);
}
END_TEST

START_TEST(test_cuda_gemm)
{
    /* 1e-4 relative to the sum of |terms|: cuBLAS in FP32 splits and orders the k terms as
     * it likes, so the bound is float32's worst case for any order, k * 6e-8 = 7.7e-6 at
     * k = 129 (1e-5, the CPU's tolerance, would leave no margin) and 3.6e-5 at k = 600; TF32,
     * which the 1e-4 could let through, is caught exactly by test_cuda_gemm_fp32. */
    check_gemm_all(cuda, 1e-4);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            check_gemm(cuda, 1e-4, ta, tb, 130, 257, 600, 2, 1.0f, 0.0f); /* tiled, split-K */
}
END_TEST

START_TEST(test_cuda_gemm_beta0)
{
    check_gemm_beta0_ignores_c(cuda); /* exact: a times the identity */
}
END_TEST

START_TEST(test_cuda_gemm_fp32)
{
    /* a = 1 + 2^-12 everywhere, b = 1: every partial sum j (1 + 2^-12), j <= 64, is exact in
     * float32 whatever the order, so c = 64 + 2^-6 exactly. TF32 keeps 10 mantissa bits,
     * rounds a to 1 and gives 64. */
    enum { N = 64 };
    float *a = host_floats(N * N), *b = host_floats(N * N);
    for (int i = 0; i < N * N; i++) {
        a[i] = 1.0f + 0x1p-12f;
        b[i] = 1.0f;
    }
    float *da = dev_floats(cuda, a, N * N), *db = dev_floats(cuda, b, N * N);
    float *dc = dev_floats(cuda, NULL, N * N);
    for (int t = 0; t < 4; t++) {
        cuda->gemm(t & 1, t >> 1, N, N, N, 1.0f, da, N, db, N, 0.0f, dc, N);
        float *c = download_floats(cuda, dc, N * N);
        for (int i = 0; i < N * N; i++)
            ck_assert_msg(c[i] == 64.0f + 0x1p-6f,
                          "gemm(%d,%d) c[%d] = %.9g, expected %.9g exactly (TF32 gives 64)", t & 1,
                          t >> 1, i, c[i], 64.0f + 0x1p-6f);
        free(c);
    }
    cuda->free(da);
    cuda->free(db);
    cuda->free(dc);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_cuda_bias)
{
    /* 1e-6 relative to the sum of |terms|: bias_add is one correctly rounded add;
     * bias_grad's sums here go through at most 1 + 8 roundings (a term per thread, a tree of
     * 256), worst case 9 * 6e-8 = 5.4e-7. */
    check_bias_all(cuda, 1e-6);
    /* many terms per thread: 4608 / 256 = 18 in a row, then the tree of 8: worst case
     * 26 * 6e-8 = 1.6e-6, hence 2e-6 */
    check_bias(cuda, 2e-6, 1, 16, 4608); /* conv: (1, out_c, batch*oh*ow) */
    check_bias(cuda, 2e-6, 700, 33, 1);  /* dense, batch 700 */
}
END_TEST

START_TEST(test_cuda_relu)
{
    check_relu(cuda, 0); /* exact: a select */
    check_relu(cuda, 1);
}
END_TEST

START_TEST(test_cuda_im2col)
{
    /* im2col is a copy: exact. col2im sums at most 25 terms: 1e-6 relative to the sum of
     * |terms| (the adjoint identity too). */
    check_im2col_all(cuda, 1e-6);
}
END_TEST

START_TEST(test_cuda_maxpool)
{
    check_maxpool_all(cuda); /* exact, ties included (first maximum wins) */
}
END_TEST

START_TEST(test_cuda_permute)
{
    check_permute_all(cuda); /* exact: copies */
}
END_TEST

START_TEST(test_cuda_softmax_xent)
{
    /* 1e-6: loss relative to |loss| + batch, dlogits relative to grad_scale (the CPU's
     * arithmetic in double; float32 rounding of p is 6e-8) */
    check_softmax_xent_all(cuda, 1e-6);
}
END_TEST

START_TEST(test_cuda_softmax_xent_many_blocks)
{
    /* Batches over several blocks of 256 rows (the per-block sums and their total), and the
     * most classes a model may have. Same tolerance as above. */
    const int shapes[][2] = {{600, 10}, {257, 256}, {1, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int batch = shapes[s][0], classes = shapes[s][1];
        trainer_rng_t r;
        trainer_rng_seed(&r, 7100 + s, 0);
        float *z = host_floats((size_t)batch * classes);
        uint8_t *y = malloc((size_t)batch);
        ck_assert_ptr_nonnull(y);
        fill_uniform(z, (size_t)batch * classes, &r, -6.0f, 6.0f);
        for (int b = 0; b < batch; b++)
            y[b] = (uint8_t)trainer_rng_below(&r, (uint64_t)classes);
        for (int b = 0; b < batch; b += 2) /* half of them right */
            z[(size_t)b * classes + y[b]] = 20.0f;
        check_softmax_xent(cuda, 1e-6, z, y, batch, classes, 1.0f / (float)batch);
        free(z);
        free(y);
    }
}
END_TEST

START_TEST(test_cuda_softmax_xent_ties)
{
    /* Equal largest logits: the first one is the prediction, as on the CPU (exact: a count).
     * Rows: (3, 3, ...) with label 0 right, label 1 wrong; (0, 2, 2, 2) with label 1 right
     * twice: 3 right (the last maximum would give 1). */
    const float z[4][4] = {{3, 3, -1, -1}, {3, 3, -1, -1}, {0, 2, 2, 2}, {0, 2, 2, 2}};
    const uint8_t y[4] = {0, 1, 1, 1};
    float *dz = dev_floats(cuda, &z[0][0], 16);
    uint8_t *dy = cuda->alloc(sizeof y);
    cuda->upload(dy, y, sizeof y);
    double loss;
    int correct = -1;
    cuda->softmax_xent(NULL, dz, dy, 4, 4, 1.0f, &loss, &correct);
    ck_assert_int_eq(correct, 3);
    cuda->free(dz);
    cuda->free(dy);
}
END_TEST

START_TEST(test_cuda_sgd)
{
    check_sgd_all(cuda, 1e-6); /* 1e-6 relative to 1 + |w|, as on the CPU */
}
END_TEST

START_TEST(test_cuda_axpy_scale)
{
    check_axpy_scale(cuda, 1e-6); /* 1e-6 relative to the sum of |terms| */
}
END_TEST

START_TEST(test_cuda_average)
{
    check_average(cuda, 1e-6, 0); /* 1e-6 relative to the sum of |terms| (4 terms) */
    check_average(cuda, 1e-6, 1);
}
END_TEST

START_TEST(test_cuda_alloc_zeroed)
{
    check_alloc_zeroed(cuda);
}
END_TEST

START_TEST(test_cuda_round_trip)
{
    check_round_trip(cuda); /* exact: bytes */
}
END_TEST

/* ---- what only a device backend can get wrong ------------------------------------------ */

START_TEST(test_cuda_gather)
{
    /* Rows of a host data set, with repeats and both ends, into device buffers; then a larger
     * batch (the pinned staging grows) and the first again. Exact, and the transfer counter
     * counts exactly the rows and labels. */
    enum { N = 50, DIM = 37, SMALL = 13 };
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, N, DIM, 5, 1.0f, 3);
    const uint32_t small[SMALL] = {49, 0, 7, 7, 12, 3, 48, 25, 1, 7, 30, 44, 2};
    uint32_t all[N];
    for (int i = 0; i < N; i++)
        all[i] = (uint32_t)(N - 1 - i);
    const struct {
        const uint32_t *idx;
        int batch;
    } rounds[] = {{small, SMALL}, {all, N}, {small, SMALL}};
    float *dx = cuda->alloc(sizeof(float) * N * DIM);
    uint8_t *dy = cuda->alloc(N);
    float *x = host_floats((size_t)N * DIM);
    uint8_t y[N];
    for (size_t r = 0; r < sizeof rounds / sizeof rounds[0]; r++) {
        const uint32_t *idx = rounds[r].idx;
        int batch = rounds[r].batch;
        size_t before = trainer_backend_cuda_bytes_transferred();
        cuda->gather(dx, dy, ds.x, ds.y, idx, batch, DIM);
        ck_assert_uint_eq(trainer_backend_cuda_bytes_transferred() - before,
                          sizeof(float) * (size_t)batch * DIM + (size_t)batch);
        cuda->download(x, dx, sizeof(float) * (size_t)batch * DIM);
        cuda->download(y, dy, (size_t)batch);
        for (int b = 0; b < batch; b++) {
            ck_assert_msg(
                memcmp(x + (size_t)b * DIM, ds.x + (size_t)idx[b] * DIM, sizeof(float) * DIM) == 0,
                "gather round %zu: row %d is not sample %u", r, b, idx[b]);
            ck_assert_msg(y[b] == ds.y[idx[b]], "gather round %zu: label %d is %d, expected %d", r,
                          b, y[b], ds.y[idx[b]]);
        }
    }
    cuda->free(dx);
    cuda->free(dy);
    free(x);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_cuda_bytes_transferred)
{
    /* upload and download count their bytes; device-to-device copies do not */
    enum { BYTES = 1001 };
    uint8_t host[BYTES];
    memset(host, 7, sizeof host);
    void *a = cuda->alloc(BYTES), *b = cuda->alloc(BYTES);
    size_t t0 = trainer_backend_cuda_bytes_transferred();
    cuda->upload(a, host, BYTES);
    ck_assert_uint_eq(trainer_backend_cuda_bytes_transferred() - t0, BYTES);
    cuda->copy(b, a, BYTES);
    ck_assert_uint_eq(trainer_backend_cuda_bytes_transferred() - t0, BYTES);
    cuda->download(host, b, BYTES);
    ck_assert_uint_eq(trainer_backend_cuda_bytes_transferred() - t0, 2 * BYTES);
    cuda->free(a);
    cuda->free(b);
}
END_TEST

START_TEST(test_cuda_empty_ops)
{
    /* Zero-sized ops return without launching (a launch of zero blocks is an error) and
     * leave memory alone; bias_grad over zero terms writes zeros. */
    float host[3] = {5.0f, 6.0f, 7.0f}, got[3];
    float *d = dev_floats(cuda, host, 3), *g = dev_floats(cuda, host, 3);
    const float *srcs[1] = {d};
    const float w1 = 0.5f;
    cuda->upload(d, host, 0);
    cuda->download(got, d, 0);
    cuda->copy(g, d, 0);
    cuda->relu_forward(d, d, 0);
    cuda->relu_backward(d, d, d, 0);
    cuda->axpy(0, 2.0f, d, d);
    cuda->scale(0, 2.0f, d);
    cuda->average(d, srcs, &w1, 1, 0);
    cuda->sgd_update(d, d, NULL, 0, 0.1f, 0.0f, 0.0f);
    cuda->bias_add(d, d, 0, 3, 1);
    cuda->permute(d, g, 0, 3, 1);
    cuda->gemm(0, 0, 0, 3, 1, 1.0f, d, 1, d, 3, 0.0f, g, 3);
    cuda->download(got, d, sizeof got);
    ck_assert_msg(memcmp(got, host, sizeof got) == 0, "an empty op wrote memory");
    cuda->bias_grad(g, d, 0, 3, 1);
    cuda->download(got, g, sizeof got);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(got[i] == 0.0f, "bias_grad over no terms: [%d] = %g", i, got[i]);
    cuda->free(d);
    cuda->free(g);
}
END_TEST

START_TEST(test_cuda_grid_stride)
{
    /* More elements than one pass of the largest grid (65536 blocks of 256 threads): the
     * grid-stride loops must reach the tail. Exact against the CPU backend (one rounding
     * each, no fused multiply-add on either side). */
    const size_t n = (size_t)65536 * 256 * 2 + 777;
    const trainer_backend_t *cpu = trainer_backend_cpu();
    trainer_rng_t r;
    trainer_rng_seed(&r, 9500, 0);
    float *x = host_floats(n), *y = host_floats(n);
    fill_uniform(x, n, &r, -1.0f, 1.0f);
    fill_uniform(y, n, &r, -1.0f, 1.0f);
    float *dx = dev_floats(cuda, x, n), *dy = dev_floats(cuda, y, n);
    cuda->axpy(n, 0.3f, dx, dy);
    cuda->relu_forward(dy, dy, n);
    cpu->axpy(n, 0.3f, x, y);
    cpu->relu_forward(y, y, n);
    float *got = download_floats(cuda, dy, n);
    size_t i = 0;
    while (i < n && got[i] == y[i])
        i++;
    ck_assert_msg(i == n, "element %zu of %zu: %.9g, expected %.9g", i, n, i < n ? got[i] : 0.0f,
                  i < n ? y[i] : 0.0f);
    cuda->free(dx);
    cuda->free(dy);
    free(x);
    free(y);
    free(got);
}
END_TEST

/* ---- the ops that round exactly like cpu.c --------------------------------------------- */

/* Runs on the CPU backend over host copies and on CUDA over device copies of the same
 * inputs, then compares the bits. */
static float *dup_floats(const float *x, size_t n)
{
    float *h = host_floats(n);
    memcpy(h, x, sizeof(float) * n);
    return h;
}

static void expect_same_bits(const char *what, const float *dev, const float *cpu_result, size_t n)
{
    float *got = download_floats(cuda, dev, n);
    size_t i = 0;
    while (i < n && memcmp(&got[i], &cpu_result[i], sizeof(float)) == 0)
        i++;
    ck_assert_msg(i == n,
                  "%s[%zu]: CUDA %.9g, CPU %.9g: not the same bits (cuda.cu must be built with "
                  "--fmad=false and follow cpu.c's order)",
                  what, i, i < n ? got[i] : 0.0f, i < n ? cpu_result[i] : 0.0f);
    free(got);
}

/* The three inputs back to their values, on the host (for the CPU) and on the device. */
static void reset_inputs(float *ha, float *da, const float *a, float *hb, float *db, const float *b,
                         float *hc, float *dc, const float *c, size_t n)
{
    memcpy(ha, a, sizeof(float) * n);
    memcpy(hb, b, sizeof(float) * n);
    memcpy(hc, c, sizeof(float) * n);
    cuda->upload(da, a, sizeof(float) * n);
    cuda->upload(db, b, sizeof(float) * n);
    cuda->upload(dc, c, sizeof(float) * n);
}

START_TEST(test_cuda_matches_cpu_bits)
{
    /* Exact: the ops cuda.cu computes operation for operation as cpu.c does (every op but
     * gemm, bias_grad and softmax_xent). */
    const trainer_backend_t *cpu = trainer_backend_cpu();
    trainer_rng_t r;
    trainer_rng_seed(&r, 9700, 0);
    enum { N = 3000 };
    float a[N], b[N], c[N];
    fill_uniform(a, N, &r, -2.0f, 2.0f);
    fill_uniform(b, N, &r, -2.0f, 2.0f);
    fill_uniform(c, N, &r, -2.0f, 2.0f);
    for (int i = 0; i < N; i += 7) /* ties for max pooling and relu's kink */
        a[i] = 0.0f;
    float *da = dev_floats(cuda, a, N), *db = dev_floats(cuda, b, N), *dc = dev_floats(cuda, c, N);
    float *ha = dup_floats(a, N), *hb = dup_floats(b, N), *hc = dup_floats(c, N);

    /* bias_add, dense and conv layouts (bias = b) */
    cpu->bias_add(ha, hb, 20, 30, 1);
    cuda->bias_add(da, db, 20, 30, 1);
    expect_same_bits("bias_add (20, 30, 1)", da, ha, 600);
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    cpu->bias_add(ha, hb, 3, 7, 50);
    cuda->bias_add(da, db, 3, 7, 50);
    expect_same_bits("bias_add (3, 7, 50)", da, ha, 1050);

    /* relu forward and backward */
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    cpu->relu_forward(hc, ha, N);
    cuda->relu_forward(dc, da, N);
    expect_same_bits("relu_forward", dc, hc, N);
    cpu->relu_backward(ha, hb, hc, N);
    cuda->relu_backward(da, db, dc, N);
    expect_same_bits("relu_backward", da, ha, N);

    /* im2col and col2im: x (2, 3, 9, 8) = 432 values, col (2*3*3, 3*7*6) = 2268 */
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    cpu->im2col(hc, ha, 2, 3, 9, 8, 3);
    cuda->im2col(dc, da, 2, 3, 9, 8, 3);
    expect_same_bits("im2col", dc, hc, 2268);
    cpu->col2im(ha, hb, 2, 3, 9, 8, 3);
    cuda->col2im(da, db, 2, 3, 9, 8, 3);
    expect_same_bits("col2im", da, ha, 432);

    /* max pooling 2 x 2 over 10 planes of (10, 12), and its gradient (dy = b) */
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    int32_t am_cpu[300], am_cuda[300];
    int32_t *dam = cuda->alloc(sizeof am_cuda);
    cpu->maxpool_forward(hc, am_cpu, ha, 10, 10, 12, 2);
    cuda->maxpool_forward(dc, dam, da, 10, 10, 12, 2);
    expect_same_bits("maxpool_forward", dc, hc, 300);
    cuda->download(am_cuda, dam, sizeof am_cuda);
    ck_assert_msg(memcmp(am_cpu, am_cuda, sizeof am_cpu) == 0, "maxpool argmax differs");
    cpu->maxpool_backward(ha, hb, am_cpu, 10, 10, 12, 2);
    cuda->maxpool_backward(da, db, dam, 10, 10, 12, 2);
    expect_same_bits("maxpool_backward", da, ha, 1200);
    cuda->free(dam);

    /* permute (5, 6, 7) */
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    cpu->permute(hc, ha, 5, 6, 7);
    cuda->permute(dc, da, 5, 6, 7);
    expect_same_bits("permute", dc, hc, 210);

    /* sgd: plain with weight decay (v untouched), then momentum (w = a, g = b, v = c) */
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    cpu->sgd_update(ha, hb, NULL, N, 0.1f, 0.0f, 0.01f);
    cuda->sgd_update(da, db, NULL, N, 0.1f, 0.0f, 0.01f);
    expect_same_bits("sgd w", da, ha, N);
    cpu->sgd_update(ha, hb, hc, N, 0.05f, 0.9f, 5e-4f);
    cuda->sgd_update(da, db, dc, N, 0.05f, 0.9f, 5e-4f);
    expect_same_bits("sgd momentum w", da, ha, N);
    expect_same_bits("sgd momentum v", dc, hc, N);

    /* axpy, scale, average (dst = the first source) */
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    cpu->axpy(N, -0.7f, ha, hb);
    cuda->axpy(N, -0.7f, da, db);
    expect_same_bits("axpy", db, hb, N);
    cpu->scale(N, 1.3f, hb);
    cuda->scale(N, 1.3f, db);
    expect_same_bits("scale", db, hb, N);
    reset_inputs(ha, da, a, hb, db, b, hc, dc, c, N);
    const float weights[3] = {0.2f, 0.3f, 0.5f};
    const float *hs[3] = {ha, hb, hc}, *ds[3] = {da, db, dc};
    cpu->average(ha, hs, weights, 3, N);
    cuda->average(da, ds, weights, 3, N);
    expect_same_bits("average", da, ha, N);

    cuda->free(da);
    cuda->free(db);
    cuda->free(dc);
    free(ha);
    free(hb);
    free(hc);
}
END_TEST

/* ---- whole models ---------------------------------------------------------------------- */

enum { N_MODELS = 4, BATCH = 32 };
static const char *const model_names[N_MODELS] = {"logreg", "mlp", "cnn", "cnn on 2 channels"};

/* The small shapes of test_model and test_train, and a synthetic set that fits each. */
static void model_setup(int which, trainer_model_t *m, trainer_dataset_t *ds)
{
    trainer_model_config_t c;
    switch (which) {
    case 0:
        trainer_model_config_default(&c, TRAINER_ARCH_LOGREG);
        c.in_channels = 1;
        c.in_h = 1;
        c.in_w = 12;
        c.classes = 4;
        break;
    case 1:
        trainer_model_config_default(&c, TRAINER_ARCH_MLP);
        c.in_channels = 1;
        c.in_h = 1;
        c.in_w = 20;
        c.classes = 4;
        c.n_hidden = 2;
        c.hidden[0] = 16;
        c.hidden[1] = 8;
        break;
    default: /* cnn: 1 x 14 x 14, or 2 x 10 x 14 (the input permute runs) */
        trainer_model_config_default(&c, TRAINER_ARCH_CNN);
        c.in_channels = which == 2 ? 1 : 2;
        c.in_h = which == 2 ? 14 : 10;
        c.in_w = 14;
        c.kernel = 3;
        c.conv[0] = 3;
        c.conv[1] = 4;
        c.fc = 6;
        c.classes = which == 2 ? 4 : 3;
        break;
    }
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_model_build(m, &c, &err) == DT_OK, "%s: %s", model_names[which], err.msg);
    trainer_dataset_synthetic(ds, 200, m->in_size, c.classes, 1.0f, 40 + (uint64_t)which);
}

/* max |got - ref| <= tol * max |ref| over one tensor. An indexing or layout bug gives
 * differences of the order of the values themselves; rounding, a small fraction. */
static void expect_tensor_close(const char *what, const float *got, const float *ref, size_t n,
                                double tol)
{
    double max_ref = 0.0, max_err = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(isfinite(got[i]), "%s[%zu] = %g on CUDA", what, i, got[i]);
        double err = fabs((double)got[i] - ref[i]);
        max_ref = fmax(max_ref, fabs((double)ref[i]));
        if (err > max_err) {
            max_err = err;
            worst = i;
        }
    }
    ck_assert_msg(max_err <= tol * max_ref,
                  "%s: CUDA differs from the CPU by %.3g at [%zu] (%.9g vs %.9g), more than "
                  "%g x the largest |value| %.3g",
                  what, max_err, worst, n ? got[worst] : 0.0f, n ? ref[worst] : 0.0f, tol, max_ref);
}

/* Every weight and bias tensor of the model's flat buffers, one at a time. */
static void expect_params_close(const char *what, const trainer_model_t *m, const float *got,
                                const float *ref, double tol)
{
    char name[128];
    for (int i = 0; i < m->n_layers; i++) {
        const trainer_layer_t *l = &m->layers[i];
        if (!l->w_len)
            continue;
        snprintf(name, sizeof name, "%s, layer %d weights", what, i);
        expect_tensor_close(name, got + l->w_off, ref + l->w_off, l->w_len, tol);
        snprintf(name, sizeof name, "%s, layer %d biases", what, i);
        expect_tensor_close(name, got + l->b_off, ref + l->b_off, l->b_len, tol);
    }
}

static void forward_backward(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                             double *loss, int *correct)
{
    trainer_learner_load(l, ds, idx, BATCH);
    trainer_model_forward(&l->ws, l->params, BATCH);
    trainer_model_loss(&l->ws, BATCH, loss, correct);
    trainer_model_backward(&l->ws, l->params, l->grads, BATCH);
}

START_TEST(test_cuda_model_step)
{
    /* One forward, loss and backward of a batch of 32 on both backends from the same
     * parameters (initialised on the host from the seed). Tolerances, relative to the
     * largest |value| of each tensor: logits and dlogits 1e-5 (a few float32 roundings per
     * layer, in another summation order, through at most 6 layers: ~1e-6 expected); the
     * loss 1e-5 of itself (it moves by at most twice the largest logit error); gradients
     * 1e-4: a weight gradient sums up to 32 * 144 = 4608 terms, float32 rounding scales with
     * the sum of their |values|, and cancellation can leave the gradient ~sqrt(4608) = 68
     * times smaller than that sum (~1e-6 expected). A bug in an index or a layout gives
     * differences of order 1; so does a pooling window whose two largest inputs differ by
     * less than the rounding, which is why the winners are compared first. */
    const trainer_backend_t *cpu = trainer_backend_cpu();
    const char *name = model_names[_i];
    trainer_model_t m;
    trainer_dataset_t ds;
    model_setup(_i, &m, &ds);
    const trainer_optim_t sgd = {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f};
    trainer_learner_t lc, lg;
    trainer_learner_init(&lc, cpu, &m, &sgd, BATCH, 21);
    trainer_learner_init(&lg, cuda, &m, &sgd, BATCH, 21);
    uint32_t idx[BATCH];
    for (int i = 0; i < BATCH; i++)
        idx[i] = (uint32_t)((i * 7 + 3) % (int)ds.n);

    double loss_c, loss_g;
    int correct_c, correct_g;
    forward_backward(&lc, &ds, idx, &loss_c, &correct_c);
    forward_backward(&lg, &ds, idx, &loss_g, &correct_g);

    /* pooling winners first: if they differ, every later comparison would too */
    for (int i = 0; i < m.n_layers; i++) {
        if (m.layers[i].kind != TRAINER_LAYER_MAXPOOL)
            continue;
        size_t n = (size_t)BATCH * m.layers[i].out_size;
        int32_t *ac = malloc(sizeof(int32_t) * n), *ag = malloc(sizeof(int32_t) * n);
        ck_assert_ptr_nonnull(ac);
        ck_assert_ptr_nonnull(ag);
        cpu->download(ac, lc.ws.argmax[i], sizeof(int32_t) * n);
        cuda->download(ag, lg.ws.argmax[i], sizeof(int32_t) * n);
        size_t differ = 0;
        for (size_t j = 0; j < n; j++)
            differ += ac[j] != ag[j];
        ck_assert_msg(differ == 0,
                      "%s: layer %d: %zu of %zu pooling windows have another winner on CUDA "
                      "(a near tie rounded the other way, or a bug: the op checks tell which)",
                      name, i, differ, n);
        free(ac);
        free(ag);
    }

    int last = m.n_layers - 1;
    size_t nl = (size_t)BATCH * m.classes;
    char what[128];
    float *zc = download_floats(cpu, lc.ws.act[last], nl),
          *zg = download_floats(cuda, lg.ws.act[last], nl);
    snprintf(what, sizeof what, "%s logits", name);
    expect_tensor_close(what, zg, zc, nl, 1e-5);
    float *dc = download_floats(cpu, lc.ws.dact[last], nl),
          *dg = download_floats(cuda, lg.ws.dact[last], nl);
    snprintf(what, sizeof what, "%s dlogits", name);
    expect_tensor_close(what, dg, dc, nl, 1e-5);
    ck_assert_msg(fabs(loss_g - loss_c) <= 1e-5 * fabs(loss_c), "%s loss: CUDA %.12g, CPU %.12g",
                  name, loss_g, loss_c);
    ck_assert_msg(correct_g == correct_c, "%s: %d right on CUDA, %d on the CPU", name, correct_g,
                  correct_c);

    float *gc = download_floats(cpu, lc.grads, m.n_params);
    float *gg = download_floats(cuda, lg.grads, m.n_params);
    double largest = 0.0;
    for (size_t i = 0; i < m.n_params; i++)
        largest = fmax(largest, fabs((double)gc[i]));
    ck_assert_msg(largest > 0.0, "%s: zero gradient (the comparison would prove nothing)", name);
    snprintf(what, sizeof what, "%s gradient", name);
    expect_params_close(what, &m, gg, gc, 1e-4);

    free(zc);
    free(zg);
    free(dc);
    free(dg);
    free(gc);
    free(gg);
    trainer_learner_free(&lc);
    trainer_learner_free(&lg);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_cuda_model_sgd)
{
    /* Five training steps of batch 32, on both backends, for each model (_i / 2) with
     * momentum 0.9 and weight decay 5e-4 (gradient, then sgd_update) and with plain SGD and
     * weight decay 1e-3 (the update fused into the backward GEMMs). Each step's loss agrees
     * within 1e-5 of itself (as in test_cuda_model_step); the final parameters and the
     * velocity within 1e-4 of the largest |value| of each tensor (5 steps of lr <= 0.1
     * times gradients known to 1e-4 of their largest value; ~1e-6 expected). The evaluation
     * of the final parameters agrees too (loss 1e-5, accuracy to one sample of 200). */
    const trainer_backend_t *cpu = trainer_backend_cpu();
    int which = _i / 2, fused = _i % 2;
    const char *name = model_names[which];
    trainer_model_t m;
    trainer_dataset_t ds;
    model_setup(which, &m, &ds);
    const trainer_optim_t sgd =
        fused ? (trainer_optim_t){.lr = 0.1f, .momentum = 0.0f, .weight_decay = 1e-3f}
              : (trainer_optim_t){.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f};
    trainer_learner_t lc, lg;
    trainer_learner_init(&lc, cpu, &m, &sgd, BATCH, 33);
    trainer_learner_init(&lg, cuda, &m, &sgd, BATCH, 33);
    uint32_t idx[BATCH];
    for (int step = 0; step < 5; step++) {
        for (int i = 0; i < BATCH; i++)
            idx[i] = (uint32_t)((step * BATCH + i * 5) % (int)ds.n);
        double loss_c = trainer_learner_step(&lc, &ds, idx, BATCH);
        double loss_g = trainer_learner_step(&lg, &ds, idx, BATCH);
        ck_assert_msg(fabs(loss_g - loss_c) <= 1e-5 * fabs(loss_c),
                      "%s%s step %d loss: CUDA %.12g, CPU %.12g", name, fused ? " (fused)" : "",
                      step, loss_g, loss_c);
    }
    char what[128];
    float *wc = download_floats(cpu, lc.params, m.n_params);
    float *wg = download_floats(cuda, lg.params, m.n_params);
    snprintf(what, sizeof what, "%s%s after 5 steps", name, fused ? " (fused)" : "");
    expect_params_close(what, &m, wg, wc, 1e-4);
    if (!fused) {
        float *vc = download_floats(cpu, lc.velocity, m.n_params);
        float *vg = download_floats(cuda, lg.velocity, m.n_params);
        snprintf(what, sizeof what, "%s velocity after 5 steps", name);
        expect_params_close(what, &m, vg, vc, 1e-4);
        free(vc);
        free(vg);
    }

    /* the steps moved the weights: the comparison is not between two copies of the start */
    float *w0 = host_floats(m.n_params);
    trainer_model_init_params(&m, w0, 33);
    double moved = 0.0;
    for (size_t i = 0; i < m.n_params; i++)
        moved = fmax(moved, fabs((double)wc[i] - w0[i]));
    ck_assert_msg(moved > 1e-3, "%s: 5 steps moved no weight by more than %g", name, moved);

    trainer_eval_t ec = trainer_evaluate(&lc, lc.params, &ds);
    trainer_eval_t eg = trainer_evaluate(&lg, lg.params, &ds);
    ck_assert_msg(fabs(eg.loss - ec.loss) <= 1e-5 * fabs(ec.loss),
                  "%s evaluation loss: CUDA %.12g, CPU %.12g", name, eg.loss, ec.loss);
    ck_assert_msg(fabs(eg.accuracy - ec.accuracy) <= 1.0 / (double)ds.n + 1e-12,
                  "%s evaluation accuracy: CUDA %g, CPU %g", name, eg.accuracy, ec.accuracy);

    free(wc);
    free(wg);
    free(w0);
    trainer_learner_free(&lc);
    trainer_learner_free(&lg);
    trainer_dataset_free(&ds);
}
END_TEST

/* n random floats in [-1, 1) from seed. */
static float *random_floats(size_t n, uint64_t seed)
{
    float *p = host_floats(n);
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 3);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(2.0 * trainer_rng_uniform(&r) - 1.0);
    return p;
}

/* Adam and AdamW's kernel (20 steps over 100 000 floats, so the grid strides) and the sum of
 * squares against the CPU's: the update within 1e-6 of 1 + |w| (the same bits are expected,
 * cuda.cu built with --fmad=false and IEEE sqrtf and division, but the test asks for the
 * stated tolerance), the moments within 1e-6 relative, sumsq within 1e-12 relative (another
 * summation order in double). */
START_TEST(test_cuda_adam)
{
    const size_t N = 100000;
    const trainer_backend_t *cpu = trainer_backend_cpu();
    float *w = random_floats(N, 1), *g = random_floats(N, 2);
    for (int kind = TRAINER_OPT_ADAM; kind <= TRAINER_OPT_ADAMW; kind++) {
        trainer_optim_t o = {.lr = 0.01f,
                             .weight_decay = 0.05f,
                             .kind = kind,
                             .beta1 = 0.9,
                             .beta2 = 0.999,
                             .eps = 1e-8};
        float *hw = dup_floats(w, N), *hm = host_floats(N), *hv = host_floats(N);
        memset(hm, 0, sizeof(float) * N);
        memset(hv, 0, sizeof(float) * N);
        float *dw = cuda->alloc(sizeof(float) * N), *dg = cuda->alloc(sizeof(float) * N);
        float *dm = cuda->alloc(sizeof(float) * N), *dv = cuda->alloc(sizeof(float) * N);
        cuda->upload(dw, w, sizeof(float) * N);
        cuda->upload(dg, g, sizeof(float) * N);
        for (long t = 1; t <= 20; t++) {
            trainer_optim_update(cpu, &o, o.lr, t, hw, g, hm, hv, N);
            trainer_optim_update(cuda, &o, o.lr, t, dw, dg, dm, dv, N);
        }
        float *gw = download_floats(cuda, dw, N), *gm = download_floats(cuda, dm, N),
              *gv = download_floats(cuda, dv, N);
        double worst = 0.0;
        for (size_t i = 0; i < N; i++) {
            worst = fmax(worst, fabs((double)gw[i] - hw[i]) / (1.0 + fabs(hw[i])));
            ck_assert_double_le(fabs((double)gm[i] - hm[i]), 1e-6 * fabs(hm[i]) + 1e-12);
            ck_assert_double_le(fabs((double)gv[i] - hv[i]), 1e-6 * fabs(hv[i]) + 1e-12);
        }
        printf("cuda %s: max |w CUDA - w CPU| / (1 + |w|) = %.2e after 20 steps\n",
               trainer_optimizer_name(o.kind), worst);
        ck_assert_double_le(worst, 1e-6);
        double s_cpu = cpu->sumsq(hw, N), s_cuda = cuda->sumsq(dw, N);
        ck_assert_double_le(fabs(s_cuda - s_cpu), 1e-12 * s_cpu);
        free(gw);
        free(gm);
        free(gv);
        free(hw);
        free(hm);
        free(hv);
        cuda->free(dw);
        cuda->free(dg);
        cuda->free(dm);
        cuda->free(dv);
    }
    free(w);
    free(g);
}
END_TEST

/* The CUDA result of a batched op (dev, n floats) against the CPU's (host), within tol of
 * the largest |CPU value| (0: the same bits). */
static void expect_batched(const char *what, const float *dev, const float *ref, size_t n,
                           double tol)
{
    float *got = download_floats(cuda, dev, n);
    group_expect_close(what, 0, got, ref, n, tol);
    free(got);
}

START_TEST(test_cuda_batched_ops)
{
    /* Each replica op of the CUDA backend against the CPU backend's (which is the single op
     * block by block) on 3 replicas with gaps between their parameter blocks. Tolerances:
     * gemm 1e-5 of the largest |value| (sums of 11 or fewer products); bias_add, permute: the
     * same bits (one add, a move); bias_grad 1e-5; softmax: dlogits 1e-6, each replica's loss
     * 1e-9 of itself (both in double), hits exactly. */
    const trainer_backend_t *cpu = trainer_backend_cpu();
    const int R = 3, m = 7, n = 5, k = 11;
    const size_t stride = 100, big = (size_t)R * stride;
    float *a = random_floats(big, 1), *b = random_floats(big, 2), *c0 = random_floats(big, 3);
    float *da = dev_floats(cuda, a, big), *db = dev_floats(cuda, b, big);
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        float *hc = host_floats(big), *dc = dev_floats(cuda, c0, big);
        memcpy(hc, c0, sizeof(float) * big);
        cpu->gemm_batched(ta, tb, m, n, k, 0.5f, a, ta ? m : k, stride, b, tb ? k : n, stride,
                          0.25f, hc, n, stride, R);
        cuda->gemm_batched(ta, tb, m, n, k, 0.5f, da, ta ? m : k, stride, db, tb ? k : n, stride,
                           0.25f, dc, n, stride, R);
        char what[64];
        snprintf(what, sizeof what, "gemm_batched trans %d %d", ta, tb);
        expect_batched(what, dc, hc, big, 1e-5);
        free(hc);
        cuda->free(dc);
    }
    /* bias: blocks of (outer 4, channels 5, inner 3) = 60, biases 100 apart */
    size_t block = 60, ys = block * (size_t)R;
    float *hy = random_floats(ys, 4), *dy = dev_floats(cuda, hy, ys);
    cpu->bias_add_batched(hy, b, stride, R, 4, 5, 3);
    cuda->bias_add_batched(dy, db, stride, R, 4, 5, 3);
    expect_batched("bias_add_batched", dy, hy, ys, 0.0);
    float *hg = host_floats(big), *dg = dev_floats(cuda, c0, big);
    memcpy(hg, c0, sizeof(float) * big);
    cpu->bias_grad_batched(hg, stride, hy, R, 4, 5, 3);
    cuda->bias_grad_batched(dg, stride, dy, R, 4, 5, 3);
    expect_batched("bias_grad_batched", dg, hg, big, 1e-5);
    /* permute: blocks of (4, 5, 3) */
    float *hp = host_floats(ys), *dp = dev_floats(cuda, NULL, ys);
    cpu->permute_batched(hp, hy, R, 4, 5, 3);
    cuda->permute_batched(dp, dy, R, 4, 5, 3);
    expect_batched("permute_batched", dp, hp, ys, 0.0);
    /* softmax: 3 replicas of 300 rows (two blocks of rows each) of 10 classes */
    const int rows = 300, classes = 10;
    size_t nz = (size_t)R * rows * classes;
    float *z = random_floats(nz, 5);
    for (size_t i = 0; i < nz; i++)
        z[i] *= 4.0f;
    uint8_t *lab = malloc((size_t)R * rows), *dlab = cuda->alloc((size_t)R * rows);
    ck_assert_ptr_nonnull(lab);
    for (int i = 0; i < R * rows; i++)
        lab[i] = (uint8_t)((i * 7 + i / 13) % classes);
    cuda->upload(dlab, lab, (size_t)R * rows);
    float *dz = dev_floats(cuda, z, nz), *hd = host_floats(nz), *dd = dev_floats(cuda, NULL, nz);
    double lc[3], lg[3];
    int cc[3], cg[3];
    cpu->softmax_xent_batched(hd, z, lab, R, rows, classes, 1.0f / rows, lc, cc);
    cuda->softmax_xent_batched(dd, dz, dlab, R, rows, classes, 1.0f / rows, lg, cg);
    expect_batched("softmax_xent_batched dlogits", dd, hd, nz, 1e-6);
    for (int r = 0; r < R; r++) {
        ck_assert_msg(fabs(lg[r] - lc[r]) <= 1e-9 * fabs(lc[r]),
                      "softmax_xent_batched replica %d loss: CUDA %.15g, CPU %.15g", r, lg[r],
                      lc[r]);
        ck_assert_msg(cg[r] == cc[r],
                      "softmax_xent_batched replica %d: %d right on CUDA, %d "
                      "on the CPU",
                      r, cg[r], cc[r]);
    }
    ck_assert_msg(lc[0] != lc[1], "replicas 0 and 1 have the same loss");
    free(a), free(b), free(c0), free(hy), free(hg), free(hp), free(z), free(lab), free(hd);
    cuda->free(da), cuda->free(db), cuda->free(dy), cuda->free(dg), cuda->free(dp);
    cuda->free(dlab), cuda->free(dz), cuda->free(dd);
}
END_TEST

START_TEST(test_cuda_group)
{
    /* Replicas side by side on the GPU (strided-batched GEMMs, one launch per op) against
     * each replica alone on the CPU: 4 replicas of batch 9 for every model, and 40 of batch
     * 32 for the mlp (a grid of 40 replicas). Tolerances as in test_cuda_model_step: 1e-4 of
     * the largest |value| of each tensor, the loss within 1e-5 of itself. */
    trainer_model_config_t cfg = group_config(_i < 4 ? _i : 1);
    int count = _i < 4 ? 4 : 40, batch = _i < 4 ? 9 : 32;
    group_check(cuda, trainer_backend_cpu(), &cfg, count, batch, 1e-4, 1e-5);
}
END_TEST

/* ---- the transformer ------------------------------------------------------------------- */

START_TEST(test_cuda_gpt_ops)
{
    /* gpt_backend_checks.h, tolerances there. Shapes: seq 40 and 33 (rows longer than a warp,
     * and not a multiple of it), widths 24 and 70 (fewer lanes than a warp; more, in three
     * column blocks), 120 and 66 rows (two row chunks of the norm's weight gradient). */
    gpt_check_ops(cuda, 3, 40, 24, 3, 1);
    gpt_check_ops(cuda, 2, 33, 70, 5, 2);
}
END_TEST

START_TEST(test_cuda_gpt_model)
{
    gpt_check_model(cuda, _i); /* plain SGD, then momentum and weight decay */
}
END_TEST

static Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda");
    TCase *ops = tcase_create("ops");
    tcase_add_test(ops, test_cuda_name);
    tcase_add_test(ops, test_cuda_gemm);
    tcase_add_test(ops, test_cuda_gemm_beta0);
    tcase_add_test(ops, test_cuda_gemm_fp32);
    tcase_add_test(ops, test_cuda_bias);
    tcase_add_test(ops, test_cuda_relu);
    tcase_add_test(ops, test_cuda_im2col);
    tcase_add_test(ops, test_cuda_maxpool);
    tcase_add_test(ops, test_cuda_permute);
    tcase_add_test(ops, test_cuda_softmax_xent);
    tcase_add_test(ops, test_cuda_softmax_xent_many_blocks);
    tcase_add_test(ops, test_cuda_softmax_xent_ties);
    tcase_add_test(ops, test_cuda_sgd);
    tcase_add_test(ops, test_cuda_adam);
    tcase_add_test(ops, test_cuda_axpy_scale);
    tcase_add_test(ops, test_cuda_average);
    tcase_add_test(ops, test_cuda_alloc_zeroed);
    tcase_add_test(ops, test_cuda_round_trip);
    tcase_add_test(ops, test_cuda_gather);
    tcase_add_test(ops, test_cuda_bytes_transferred);
    tcase_add_test(ops, test_cuda_empty_ops);
    tcase_add_test(ops, test_cuda_grid_stride);
    tcase_add_test(ops, test_cuda_matches_cpu_bits);
    tcase_add_test(ops, test_cuda_batched_ops);
    suite_add_tcase(s, ops);
    TCase *models = tcase_create("models");
    tcase_add_loop_test(models, test_cuda_model_step, 0, N_MODELS);
    tcase_add_loop_test(models, test_cuda_model_sgd, 0, 2 * N_MODELS);
    tcase_add_loop_test(models, test_cuda_group, 0, 5);
    tcase_add_test(models, test_cuda_gpt_ops);
    tcase_add_loop_test(models, test_cuda_gpt_model, 0, 2);
    suite_add_tcase(s, models);
    return s;
}

int main(void)
{
    dt_err_t err = {{0}};
    cuda = trainer_backend_cuda(&err);
    if (!cuda) {
        fprintf(stderr, "test_cuda: SKIPPED: %s\n", err.msg);
        return 77;
    }
    char name[256];
    trainer_backend_cuda_device_name(name, sizeof name);
    fprintf(stderr, "test_cuda: on %s\n", name);
    SRunner *sr = srunner_create(cuda_suite());
    srunner_set_fork_status(sr, CK_NOFORK); /* a CUDA context does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

#endif
