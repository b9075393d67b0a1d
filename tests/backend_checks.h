/* The backend op checks shared by test_backend (the CPU backend) and test_cuda (the CUDA
 * backend): each check is a function of (backend, tolerance) that moves its data through the
 * backend's own alloc/upload/download and compares with naive double-precision references
 * written here (the oracle pattern of ggml's test-backend-ops). The callers state
 * the tolerance beside every call; "relative to the sum of |terms|" means
 * |got - ref| <= tol * sum_i |term_i| (+ a floor of 1e-30), the natural bound for a float32
 * sum of products in any order.
 *
 * Static functions in a header: each test program includes it once and uses every check. */
#ifndef DTSIM_TESTS_BACKEND_CHECKS_H
#define DTSIM_TESTS_BACKEND_CHECKS_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rng.h"

/* ---- helpers --------------------------------------------------------------------------- */

static float *dev_floats(const trainer_backend_t *be, const float *host, size_t n)
{
    float *d = be->alloc(sizeof(float) * n);
    if (host)
        be->upload(d, host, sizeof(float) * n);
    return d;
}

static float *host_floats(size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    ck_assert_ptr_nonnull(h);
    return h;
}

static float *download_floats(const trainer_backend_t *be, const float *dev, size_t n)
{
    float *h = host_floats(n);
    be->download(h, dev, sizeof(float) * n);
    return h;
}

/* Uniform in [lo, hi). */
static void fill_uniform(float *x, size_t n, trainer_rng_t *r, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)trainer_rng_uniform(r);
}

/* Asserts |got - ref| <= tol * scale, naming the op and the element. */
static void expect_close(const char *what, size_t i, double got, double ref, double tol,
                         double scale)
{
    double err = fabs(got - ref);
    ck_assert_msg(err <= tol * scale + 1e-30,
                  "%s[%zu]: got %.9g, expected %.9g (error %.3g > %.3g)", what, i, got, ref, err,
                  tol * scale);
}

/* ---- gemm ------------------------------------------------------------------------------ */

/* c (m, n) = alpha op(a) op(b) + beta c with every stride padded by `pad` elements; checks
 * every element of c against the double reference (tol relative to the sum of |terms|,
 * |beta c| included) and that the padding columns of c are untouched. */
static void check_gemm(const trainer_backend_t *be, double tol, int ta, int tb, int m, int n, int k,
                       int pad, float alpha, float beta)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, 1000 + (uint64_t)(ta * 2 + tb), 0);
    int a_rows = ta ? k : m, a_cols = ta ? m : k;
    int b_rows = tb ? n : k, b_cols = tb ? k : n;
    int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
    size_t na = (size_t)a_rows * lda, nb = (size_t)b_rows * ldb, nc = (size_t)m * ldc;
    float *a = host_floats(na), *b = host_floats(nb), *c0 = host_floats(nc);
    fill_uniform(a, na, &r, -1.0f, 1.0f);
    fill_uniform(b, nb, &r, -1.0f, 1.0f);
    fill_uniform(c0, nc, &r, -1.0f, 1.0f);

    float *da = dev_floats(be, a, na), *db = dev_floats(be, b, nb), *dc = dev_floats(be, c0, nc);
    be->gemm(ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc);
    float *c = download_floats(be, dc, nc);

    char what[64];
    snprintf(what, sizeof what, "gemm(%d,%d) %dx%dx%d", ta, tb, m, n, k);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double sum = 0.0, mag = 0.0;
            for (int p = 0; p < k; p++) {
                double av = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
                double bv = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                sum += av * bv;
                mag += fabs(av * bv);
            }
            double cv = c0[(size_t)i * ldc + j];
            double ref = (double)alpha * sum + (double)beta * cv;
            double scale = fabs((double)alpha) * mag + fabs((double)beta * cv);
            expect_close(what, (size_t)i * ldc + j, c[(size_t)i * ldc + j], ref, tol, scale);
        }
        for (int j = n; j < ldc; j++) /* padding: must not be written */
            ck_assert_msg(c[(size_t)i * ldc + j] == c0[(size_t)i * ldc + j],
                          "%s wrote padding element (%d, %d)", what, i, j);
    }
    be->free(da);
    be->free(db);
    be->free(dc);
    free(a);
    free(b);
    free(c0);
    free(c);
}

static void check_gemm_all(const trainer_backend_t *be, double tol)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(be, tol, ta, tb, 7, 5, 9, 3, -1.25f, 0.75f);   /* tiny, odd */
            check_gemm(be, tol, ta, tb, 67, 45, 129, 5, 0.5f, -2.0f); /* blocked kernels */
            check_gemm(be, tol, ta, tb, 3, 70, 1, 1, 2.0f, 0.0f);     /* k == 1, beta 0 */
        }
}

/* beta == 0 must ignore c entirely, even NaN there (BLAS semantics; the model relies on it
 * when it reuses activation buffers). */
static void check_gemm_beta0_ignores_c(const trainer_backend_t *be)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4];
    for (int i = 0; i < 4; i++)
        c[i] = NAN;
    float *da = dev_floats(be, a, 4), *db = dev_floats(be, b, 4), *dc = dev_floats(be, c, 4);
    be->gemm(0, 0, 2, 2, 2, 1.0f, da, 2, db, 2, 0.0f, dc, 2);
    float *got = download_floats(be, dc, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(got[i] == a[i], "gemm beta 0 [%d] = %g, expected %g", i, got[i], a[i]);
    be->free(da);
    be->free(db);
    be->free(dc);
    free(got);
}

/* ---- bias ------------------------------------------------------------------------------ */

static void check_bias(const trainer_backend_t *be, double tol, int outer, int channels, int inner)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, 2000 + (uint64_t)inner, 0);
    size_t n = (size_t)outer * channels * inner;
    float *y0 = host_floats(n), *bias = host_floats((size_t)channels);
    fill_uniform(y0, n, &r, -2.0f, 2.0f);
    fill_uniform(bias, (size_t)channels, &r, -1.0f, 1.0f);

    float *dy = dev_floats(be, y0, n), *db = dev_floats(be, bias, (size_t)channels);
    be->bias_add(dy, db, outer, channels, inner);
    float *y = download_floats(be, dy, n);
    for (int o = 0; o < outer; o++)
        for (int c = 0; c < channels; c++)
            for (int i = 0; i < inner; i++) {
                size_t e = ((size_t)o * channels + c) * inner + i;
                double ref = (double)y0[e] + bias[c];
                expect_close("bias_add", e, y[e], ref, tol, fabs(y0[e]) + fabs(bias[c]));
            }

    /* bias_grad overwrites: start from garbage */
    float *garbage = host_floats((size_t)channels);
    for (int c = 0; c < channels; c++)
        garbage[c] = 1234.5f;
    float *dg = dev_floats(be, garbage, (size_t)channels);
    float *dgrad = dev_floats(be, y0, n);
    be->bias_grad(dg, dgrad, outer, channels, inner);
    float *g = download_floats(be, dg, (size_t)channels);
    for (int c = 0; c < channels; c++) {
        double ref = 0.0, mag = 0.0;
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                double v = y0[((size_t)o * channels + c) * inner + i];
                ref += v;
                mag += fabs(v);
            }
        expect_close("bias_grad", (size_t)c, g[c], ref, tol, mag);
    }
    be->free(dy);
    be->free(db);
    be->free(dg);
    be->free(dgrad);
    free(y0);
    free(bias);
    free(y);
    free(garbage);
    free(g);
}

/* The three layouts the model uses: dense (batch, out), conv (1, out_c, batch*oh*ow), and a
 * general (outer, channels, inner). */
static void check_bias_all(const trainer_backend_t *be, double tol)
{
    check_bias(be, tol, 5, 7, 1);
    check_bias(be, tol, 1, 4, 150);
    check_bias(be, tol, 3, 4, 50);
}

/* ---- relu ------------------------------------------------------------------------------ */

static void check_relu(const trainer_backend_t *be, int in_place)
{
    enum { N = 1001 };
    trainer_rng_t r;
    trainer_rng_seed(&r, 3000, 0);
    float *x = host_floats(N), *dy = host_floats(N);
    fill_uniform(x, N, &r, -1.0f, 1.0f);
    fill_uniform(dy, N, &r, -3.0f, 3.0f);
    x[0] = 0.0f; /* the kink itself: relu(0) = 0, gradient 0 */
    x[1] = -0.0f;
    x[2] = 1e-30f;

    float *dx_dev = dev_floats(be, x, N);
    float *dy_dev = in_place ? dx_dev : dev_floats(be, NULL, N);
    be->relu_forward(dy_dev, dx_dev, N);
    float *y = download_floats(be, dy_dev, N);
    for (size_t i = 0; i < N; i++) {
        float ref = x[i] > 0.0f ? x[i] : 0.0f;
        ck_assert_msg(y[i] == ref, "relu_forward%s[%zu]: %g, expected %g",
                      in_place ? " in place" : "", i, y[i], ref);
    }

    float *g = dev_floats(be, dy, N);
    float *gx = in_place ? g : dev_floats(be, NULL, N);
    be->relu_backward(gx, g, dy_dev, N);
    float *got = download_floats(be, gx, N);
    for (size_t i = 0; i < N; i++) {
        float ref = x[i] > 0.0f ? dy[i] : 0.0f;
        ck_assert_msg(got[i] == ref, "relu_backward%s[%zu]: %g, expected %g",
                      in_place ? " in place" : "", i, got[i], ref);
    }
    be->free(dx_dev);
    if (!in_place) {
        be->free(dy_dev);
        be->free(gx);
    }
    be->free(g);
    free(x);
    free(dy);
    free(y);
    free(got);
}

/* ---- im2col / col2im ------------------------------------------------------------------- */

/* Naive im2col index: col[(c k + ki) k + kj][(b oh + i) ow + j] = x[c][b][i + ki][j + kj]. */
static void check_im2col(const trainer_backend_t *be, double tol, int channels, int batch, int h,
                         int w, int k)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, 4000 + (uint64_t)k, 0);
    int oh = h - k + 1, ow = w - k + 1;
    size_t nx = (size_t)channels * batch * h * w;
    size_t ncols = (size_t)batch * oh * ow, nrows = (size_t)channels * k * k;
    size_t ncol = nrows * ncols;
    float *x = host_floats(nx), *cin = host_floats(ncol);
    fill_uniform(x, nx, &r, -1.0f, 1.0f);
    fill_uniform(cin, ncol, &r, -1.0f, 1.0f);

    float *dx = dev_floats(be, x, nx), *dcol = dev_floats(be, NULL, ncol);
    be->im2col(dcol, dx, channels, batch, h, w, k);
    float *col = download_floats(be, dcol, ncol);

    /* col2im overwrites dx: start from garbage */
    float *garbage = host_floats(nx);
    for (size_t i = 0; i < nx; i++)
        garbage[i] = 777.0f;
    float *dback = dev_floats(be, garbage, nx), *dcin = dev_floats(be, cin, ncol);
    be->col2im(dback, dcin, channels, batch, h, w, k);
    float *back = download_floats(be, dback, nx);

    double *ref_back = calloc(nx, sizeof(double)), *mag_back = calloc(nx, sizeof(double));
    ck_assert_ptr_nonnull(ref_back);
    ck_assert_ptr_nonnull(mag_back);
    double ip_col = 0.0, ip_x = 0.0, ip_mag = 0.0; /* <im2col(x), c> and <x, col2im(c)> */
    for (int c = 0; c < channels; c++)
        for (int ki = 0; ki < k; ki++)
            for (int kj = 0; kj < k; kj++)
                for (int b = 0; b < batch; b++)
                    for (int i = 0; i < oh; i++)
                        for (int j = 0; j < ow; j++) {
                            size_t row = ((size_t)c * k + ki) * k + kj;
                            size_t ci = row * ncols + ((size_t)b * oh + i) * ow + j;
                            size_t xi = (((size_t)c * batch + b) * h + i + ki) * w + j + kj;
                            ck_assert_msg(col[ci] == x[xi],
                                          "im2col k=%d: col[%zu] = %g, expected x[%zu] = %g", k, ci,
                                          col[ci], xi, x[xi]);
                            ref_back[xi] += cin[ci];
                            mag_back[xi] += fabs(cin[ci]);
                            ip_col += (double)col[ci] * cin[ci];
                            ip_mag += fabs((double)col[ci] * cin[ci]);
                        }
    for (size_t i = 0; i < nx; i++) {
        expect_close("col2im", i, back[i], ref_back[i], tol, mag_back[i]);
        ip_x += (double)x[i] * back[i];
    }
    /* adjoint: the two inner products differ only by col2im's float32 rounding */
    ck_assert_msg(fabs(ip_col - ip_x) <= tol * ip_mag,
                  "col2im is not the adjoint of im2col (k=%d): <im2col x, c> = %.12g, "
                  "<x, col2im c> = %.12g",
                  k, ip_col, ip_x);

    be->free(dx);
    be->free(dcol);
    be->free(dback);
    be->free(dcin);
    free(x);
    free(cin);
    free(col);
    free(garbage);
    free(back);
    free(ref_back);
    free(mag_back);
}

static void check_im2col_all(const trainer_backend_t *be, double tol)
{
    check_im2col(be, tol, 3, 2, 9, 7, 3);
    check_im2col(be, tol, 2, 3, 8, 11, 5);
    check_im2col(be, tol, 1, 1, 5, 5, 5); /* output 1x1 */
    check_im2col(be, tol, 2, 2, 4, 6, 1); /* k = 1: col is x itself */
    /* the cnn's shapes, rows of 24 and of 8 (the CPU backend has loops of those lengths) */
    check_im2col(be, tol, 1, 2, 28, 28, 5);
    check_im2col(be, tol, 3, 2, 12, 12, 5);
}

/* ---- maxpool --------------------------------------------------------------------------- */

/* Inputs drawn from a few levels so that ties are common. The contract tested is the CPU
 * kernel's: the winner is the first maximum in row-major order inside the window (backend.h
 * documents only "the winning offset"; a GPU kernel must pick the same one, or a tie would
 * route the gradient differently from the oracle). */
static void check_maxpool(const trainer_backend_t *be, int planes, int h, int w, int k)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, 5000 + (uint64_t)k, 0);
    int oh = h / k, ow = w / k;
    size_t nx = (size_t)planes * h * w, ny = (size_t)planes * oh * ow;
    float *x = host_floats(nx), *g = host_floats(ny);
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)trainer_rng_below(&r, 4) - 2.0f; /* {-2, -1, 0, 1} */
    fill_uniform(g, ny, &r, -1.0f, 1.0f);

    float *dx = dev_floats(be, x, nx), *dy = dev_floats(be, NULL, ny);
    int32_t *dam = be->alloc(sizeof(int32_t) * ny);
    be->maxpool_forward(dy, dam, dx, planes, h, w, k);
    float *y = download_floats(be, dy, ny);
    int32_t *am = malloc(sizeof(int32_t) * ny);
    ck_assert_ptr_nonnull(am);
    be->download(am, dam, sizeof(int32_t) * ny);

    int ties = 0;
    double *ref_dx = calloc(nx, sizeof(double));
    ck_assert_ptr_nonnull(ref_dx);
    for (int p = 0; p < planes; p++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                const float *plane = x + (size_t)p * h * w;
                int best = -1, count = 0;
                for (int di = 0; di < k; di++)
                    for (int dj = 0; dj < k; dj++) {
                        int off = (i * k + di) * w + j * k + dj;
                        if (best < 0 || plane[off] > plane[best]) {
                            best = off;
                            count = 1;
                        } else if (plane[off] == plane[best]) {
                            count++;
                        }
                    }
                ties += count > 1;
                size_t o = ((size_t)p * oh + i) * ow + j;
                ck_assert_msg(y[o] == plane[best], "maxpool y[%zu] = %g, expected %g", o, y[o],
                              plane[best]);
                ck_assert_msg(am[o] == best,
                              "maxpool argmax[%zu] = %d, expected %d (first maximum)", o,
                              (int)am[o], best);
                ref_dx[(size_t)p * h * w + best] += g[o];
            }
    ck_assert_msg(ties > 0, "the test data should contain ties");

    float *garbage = host_floats(nx);
    for (size_t i = 0; i < nx; i++)
        garbage[i] = 99.0f;
    float *dgx = dev_floats(be, garbage, nx), *dg = dev_floats(be, g, ny);
    be->maxpool_backward(dgx, dg, dam, planes, h, w, k);
    float *gx = download_floats(be, dgx, nx);
    for (size_t i = 0; i < nx; i++) /* exact: one term per input element (windows disjoint) */
        ck_assert_msg(gx[i] == (float)ref_dx[i], "maxpool_backward dx[%zu] = %g, expected %g", i,
                      gx[i], ref_dx[i]);

    be->free(dx);
    be->free(dy);
    be->free(dam);
    be->free(dgx);
    be->free(dg);
    free(x);
    free(g);
    free(y);
    free(am);
    free(ref_dx);
    free(garbage);
    free(gx);
}

static void check_maxpool_all(const trainer_backend_t *be)
{
    check_maxpool(be, 6, 6, 10, 2);
    check_maxpool(be, 2, 9, 6, 3);
}

/* ---- permute --------------------------------------------------------------------------- */

static void check_permute(const trainer_backend_t *be, int a, int b, int inner)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, 6000, 0);
    size_t n = (size_t)a * b * inner;
    float *x = host_floats(n);
    fill_uniform(x, n, &r, -1.0f, 1.0f);
    float *dx = dev_floats(be, x, n), *dt = dev_floats(be, NULL, n), *dbk = dev_floats(be, NULL, n);
    be->permute(dt, dx, a, b, inner);
    be->permute(dbk, dt, b, a, inner);
    float *t = download_floats(be, dt, n), *back = download_floats(be, dbk, n);
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++)
            for (int e = 0; e < inner; e++) {
                size_t src = ((size_t)i * b + j) * inner + e, dst = ((size_t)j * a + i) * inner + e;
                ck_assert_msg(t[dst] == x[src], "permute (%d,%d,%d): dst[%zu] != src[%zu]", a, b,
                              inner, dst, src);
            }
    ck_assert_msg(memcmp(back, x, sizeof(float) * n) == 0,
                  "permuting (%d,%d,%d) back does not restore the input", a, b, inner);
    be->free(dx);
    be->free(dt);
    be->free(dbk);
    free(x);
    free(t);
    free(back);
}

static void check_permute_all(const trainer_backend_t *be)
{
    check_permute(be, 3, 5, 4);
    check_permute(be, 7, 2, 1);
    check_permute(be, 1, 6, 9);
}

/* ---- softmax cross-entropy ------------------------------------------------------------- */

static void check_softmax_xent(const trainer_backend_t *be, double tol, const float *logits,
                               const uint8_t *labels, int batch, int classes, float scale)
{
    size_t n = (size_t)batch * classes;
    float *dl = dev_floats(be, logits, n), *dd = dev_floats(be, NULL, n);
    uint8_t *dlab = be->alloc((size_t)batch);
    be->upload(dlab, labels, (size_t)batch);
    double loss = -1.0, loss2 = -1.0;
    int correct = -1, correct2 = -1;
    be->softmax_xent(dd, dl, dlab, batch, classes, scale, &loss, &correct);
    float *d = download_floats(be, dd, n);
    be->softmax_xent(NULL, dl, dlab, batch, classes, scale, &loss2, &correct2);

    double ref_loss = 0.0;
    int ref_correct = 0;
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * classes;
        double zmax = z[0];
        int best = 0;
        for (int c = 1; c < classes; c++)
            if (z[c] > zmax) {
                zmax = z[c];
                best = c;
            }
        double s = 0.0;
        for (int c = 0; c < classes; c++)
            s += exp((double)z[c] - zmax);
        ref_loss += zmax + log(s) - z[labels[b]];
        ref_correct += best == labels[b];
        for (int c = 0; c < classes; c++) {
            double p = exp((double)z[c] - zmax) / s;
            double ref = (p - (c == labels[b])) * scale;
            size_t e = (size_t)b * classes + c;
            ck_assert_msg(isfinite(d[e]), "dlogits[%zu] is not finite", e);
            expect_close("dlogits", e, d[e], ref, tol, fabs((double)scale));
        }
    }
    ck_assert_msg(isfinite(loss), "loss is not finite");
    expect_close("loss_sum", 0, loss, ref_loss, tol, fabs(ref_loss) + batch);
    ck_assert_int_eq(correct, ref_correct);
    ck_assert_msg(loss2 == loss && correct2 == correct,
                  "softmax_xent without dlogits gives a different loss or count");
    be->free(dl);
    be->free(dd);
    be->free(dlab);
    free(d);
}

/* Random logits with some right predictions, hand values, and logits near +-1e4. */
static void check_softmax_xent_all(const trainer_backend_t *be, double tol)
{
    enum { B = 9, C = 6 };
    trainer_rng_t r;
    trainer_rng_seed(&r, 7000, 0);
    float z[B * C];
    uint8_t y[B];
    fill_uniform(z, B * C, &r, -4.0f, 4.0f);
    for (int b = 0; b < B; b++)
        y[b] = (uint8_t)trainer_rng_below(&r, C);
    /* make some predictions right: rows 0, 3, 6 get their label as the argmax */
    for (int b = 0; b < B; b += 3)
        z[b * C + y[b]] = 10.0f;
    check_softmax_xent(be, tol, z, y, B, C, 1.0f / B);
    check_softmax_xent(be, tol, z, y, B, C, 1.0f);

    /* hand values: logits (0, ln 3) label 1: p = (1/4, 3/4), loss = ln(4/3); label 0:
     * loss = ln 4; one of the two is right */
    float zh[4] = {0.0f, (float)log(3.0), 0.0f, (float)log(3.0)};
    uint8_t yh[2] = {1, 0};
    double loss;
    int correct;
    float *dzh = dev_floats(be, zh, 4), *dd = dev_floats(be, NULL, 4);
    uint8_t *dyh = be->alloc(sizeof yh);
    be->upload(dyh, yh, sizeof yh);
    be->softmax_xent(dd, dzh, dyh, 2, 2, 0.5f, &loss, &correct);
    float *d = download_floats(be, dd, 4);
    ck_assert_double_eq_tol(loss, log(4.0 / 3.0) + log(4.0), 1e-6);
    ck_assert_int_eq(correct, 1);
    ck_assert_float_eq_tol(d[0], 0.125f, 1e-7f);  /* (1/4 - 0) / 2 */
    ck_assert_float_eq_tol(d[1], -0.125f, 1e-7f); /* (3/4 - 1) / 2 */
    ck_assert_float_eq_tol(d[2], -0.375f, 1e-7f); /* (1/4 - 1) / 2 */
    ck_assert_float_eq_tol(d[3], 0.375f, 1e-7f);
    be->free(dzh);
    be->free(dd);
    be->free(dyh);
    free(d);

    /* stability: logits around +-1e4 overflow a naive exp */
    float zs[3 * 4] = {1e4f,  1e4f - 1.0f, 1e4f - 3.0f,  -1e4f,         /* label 0 */
                       -1e4f, -1e4f,       -1e4f + 2.0f, -1e4f,         /* label 2 */
                       1e4f,  -1e4f,       0.0f,         1e4f - 50.0f}; /* label 1: loss 2e4 */
    uint8_t ys[3] = {0, 2, 1};
    check_softmax_xent(be, tol, zs, ys, 3, 4, 1.0f / 3);
}

/* ---- sgd ------------------------------------------------------------------------------- */

/* Several steps of the PyTorch rule (torch.optim.SGD, dampening 0, no nesterov) in double:
 * g' = g + wd w; v = momentum v + g' (v = g' at the first step, the same with v = 0); w -= lr v.
 * Error relative to 1 + |w|. */
static void check_sgd(const trainer_backend_t *be, double tol, float lr, float momentum, float wd,
                      int steps)
{
    enum { N = 257 };
    trainer_rng_t r;
    trainer_rng_seed(&r, 8000, 0);
    float w0[N], g[N];
    double w[N], v[N];
    fill_uniform(w0, N, &r, -1.0f, 1.0f);
    for (int i = 0; i < N; i++) {
        w[i] = w0[i];
        v[i] = 0.0;
    }
    float *dw = dev_floats(be, w0, N), *dg = dev_floats(be, NULL, N);
    float *dv = momentum != 0.0f ? dev_floats(be, NULL, N) : NULL;
    for (int s = 0; s < steps; s++) {
        fill_uniform(g, N, &r, -1.0f, 1.0f);
        be->upload(dg, g, sizeof g);
        be->sgd_update(dw, dg, dv, N, lr, momentum, wd);
        for (int i = 0; i < N; i++) {
            double gp = g[i] + (double)wd * w[i];
            v[i] = momentum != 0.0f ? (double)momentum * v[i] + gp : gp;
            w[i] -= (double)lr * v[i];
        }
    }
    float *got = download_floats(be, dw, N);
    for (int i = 0; i < N; i++)
        expect_close("sgd w", (size_t)i, got[i], w[i], tol, 1.0 + fabs(w[i]));
    if (dv) {
        float *gv = download_floats(be, dv, N);
        for (int i = 0; i < N; i++)
            expect_close("sgd v", (size_t)i, gv[i], v[i], tol, 1.0 + fabs(v[i]));
        free(gv);
        be->free(dv);
    }
    be->free(dw);
    be->free(dg);
    free(got);
}

static void check_sgd_all(const trainer_backend_t *be, double tol)
{
    check_sgd(be, tol, 0.1f, 0.0f, 0.0f, 5);   /* plain SGD, v NULL */
    check_sgd(be, tol, 0.1f, 0.0f, 0.01f, 5);  /* weight decay, v NULL */
    check_sgd(be, tol, 0.05f, 0.9f, 5e-4f, 5); /* momentum and weight decay */
    check_sgd(be, tol, 0.05f, 0.9f, 0.0f, 1);  /* first step: v = g */
}

/* ---- buffer ops ------------------------------------------------------------------------ */

static void check_axpy_scale(const trainer_backend_t *be, double tol)
{
    enum { N = 333 };
    trainer_rng_t r;
    trainer_rng_seed(&r, 9000, 0);
    float x[N], y[N];
    fill_uniform(x, N, &r, -1.0f, 1.0f);
    fill_uniform(y, N, &r, -1.0f, 1.0f);
    float *dx = dev_floats(be, x, N), *dy = dev_floats(be, y, N);
    be->axpy(N, -0.375f, dx, dy);
    float *got = download_floats(be, dy, N);
    for (int i = 0; i < N; i++)
        expect_close("axpy", (size_t)i, got[i], (double)y[i] - 0.375 * x[i], tol,
                     fabs(y[i]) + 0.375 * fabs(x[i]));
    be->scale(N, 2.5f, dx);
    free(got);
    got = download_floats(be, dx, N);
    for (int i = 0; i < N; i++)
        expect_close("scale", (size_t)i, got[i], 2.5 * x[i], tol, 2.5 * fabs(x[i]));
    be->free(dx);
    be->free(dy);
    free(got);
}

static void check_average(const trainer_backend_t *be, double tol, int alias)
{
    enum { N = 301, K = 4 };
    trainer_rng_t r;
    trainer_rng_seed(&r, 9100, 0);
    float src[K][N];
    float *dsrc[K];
    const float weights[K] = {0.125f, 0.25f, 0.5f, 0.125f}; /* sum to 1: a weighted mean */
    for (int j = 0; j < K; j++) {
        fill_uniform(src[j], N, &r, -1.0f, 1.0f);
        dsrc[j] = dev_floats(be, src[j], N);
    }
    float *dst = alias ? dsrc[0] : dev_floats(be, NULL, N);
    be->average(dst, (const float *const *)dsrc, weights, K, N);
    float *got = download_floats(be, dst, N);
    for (int i = 0; i < N; i++) {
        double ref = 0.0, mag = 0.0;
        for (int j = 0; j < K; j++) {
            ref += (double)weights[j] * src[j][i];
            mag += fabs((double)weights[j] * src[j][i]);
        }
        expect_close(alias ? "average (dst = srcs[0])" : "average", (size_t)i, got[i], ref, tol,
                     mag);
    }
    /* equal sources and weights summing to 1 reproduce the source (a FedAvg fixed point) */
    for (int j = 0; j < K; j++)
        be->upload(dsrc[j], src[1], sizeof(float) * N);
    be->average(dst, (const float *const *)dsrc, weights, K, N);
    free(got);
    got = download_floats(be, dst, N);
    for (int i = 0; i < N; i++)
        expect_close("average of equal buffers", (size_t)i, got[i], src[1][i], tol,
                     fabs(src[1][i]));

    /* count 1, weight 1: a copy */
    float one = 1.0f;
    be->average(dst, (const float *const *)&dsrc[2], &one, 1, N);
    free(got);
    got = download_floats(be, dst, N);
    ck_assert_msg(memcmp(got, src[1], sizeof(float) * N) == 0, "average of one buffer");

    for (int j = 0; j < K; j++)
        be->free(dsrc[j]);
    if (!alias)
        be->free(dst);
    free(got);
}

/* ---- memory ---------------------------------------------------------------------------- */

static void check_alloc_zeroed(const trainer_backend_t *be)
{
    const size_t sizes[] = {1, 3, 64, 1000, 1 << 20};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        /* dirty a block of the same size first so that a reused block would show */
        size_t bytes = sizes[s];
        uint8_t *host = malloc(bytes);
        ck_assert_ptr_nonnull(host);
        memset(host, 0xA5, bytes);
        void *d = be->alloc(bytes);
        ck_assert_ptr_nonnull(d);
        be->upload(d, host, bytes);
        be->free(d);
        d = be->alloc(bytes);
        ck_assert_ptr_nonnull(d);
        be->download(host, d, bytes);
        size_t i = 0;
        while (i < bytes && host[i] == 0)
            i++;
        ck_assert_msg(i == bytes, "alloc(%zu): byte %zu is %d, expected 0", bytes, i,
                      i < bytes ? host[i] : 0);
        be->free(d);
        free(host);
    }
}

static void check_round_trip(const trainer_backend_t *be)
{
    enum { BYTES = 4099 }; /* not a multiple of 4 or 64 */
    uint8_t src[BYTES], out[BYTES];
    for (int i = 0; i < BYTES; i++)
        src[i] = (uint8_t)(i * 37 + 11);
    void *a = be->alloc(BYTES), *b = be->alloc(BYTES);
    be->upload(a, src, BYTES);
    be->copy(b, a, BYTES);
    memset(out, 0, BYTES);
    be->download(out, b, BYTES);
    ck_assert_msg(memcmp(src, out, BYTES) == 0, "upload/copy/download round trip");
    be->copy(a, a, BYTES); /* a no-op, not an error */
    be->download(out, a, BYTES);
    ck_assert_msg(memcmp(src, out, BYTES) == 0, "copy onto itself");
    be->free(a);
    be->free(b);
}

#endif
