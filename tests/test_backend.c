/* The CPU backend, op by op, against naive double-precision references (the oracle pattern
 * of ggml's test-backend-ops). The checks live in backend_checks.h, shared with
 * test_cuda, which runs the same functions on the CUDA backend's table; the tolerance is
 * stated beside every call. */
#include <check.h>

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "blas.h"
#include "backend_checks.h"
#include "data.h"
#include "model.h"
#include "train.h"

START_TEST(test_cpu_gemm)
{
    /* float32 vs double: 1e-5 relative to the sum of |terms| (k <= 129 terms, float32
     * epsilon 6e-8; a TF32 GPU GEMM would need about 2e-3). */
    check_gemm_all(trainer_backend_cpu(), 1e-5);
}
END_TEST

START_TEST(test_cpu_gemm_beta0)
{
    check_gemm_beta0_ignores_c(trainer_backend_cpu()); /* exact: a times the identity */
}
END_TEST

START_TEST(test_cpu_bias)
{
    /* 1e-6 relative to the sum of |terms| (a float32 add is correctly rounded; bias_grad sums
     * up to 600 terms in any order, error <= 600 * 6e-8 * sum|terms| in the worst case but
     * about sqrt(600) * 6e-8 in practice) */
    check_bias_all(trainer_backend_cpu(), 1e-6);
}
END_TEST

START_TEST(test_cpu_relu)
{
    check_relu(trainer_backend_cpu(), 0); /* exact: a select */
    check_relu(trainer_backend_cpu(), 1);
}
END_TEST

START_TEST(test_cpu_im2col)
{
    /* im2col is a copy: exact. col2im sums at most k*k = 25 terms per element: 1e-6
     * relative to the sum of |terms| (also the bound for the adjoint identity). */
    check_im2col_all(trainer_backend_cpu(), 1e-6);
}
END_TEST

START_TEST(test_cpu_maxpool)
{
    check_maxpool_all(trainer_backend_cpu()); /* exact: selections and copies */
}
END_TEST

START_TEST(test_cpu_permute)
{
    check_permute_all(trainer_backend_cpu()); /* exact: copies */
}
END_TEST

START_TEST(test_cpu_softmax_xent)
{
    /* 1e-6: loss relative to |loss| + batch, dlogits relative to grad_scale (probabilities
     * are in [0, 1]; float32 rounding of p is 6e-8) */
    check_softmax_xent_all(trainer_backend_cpu(), 1e-6);
}
END_TEST

START_TEST(test_cpu_sgd)
{
    /* 1e-6 relative to 1 + |w|: a few float32 roundings per step over 5 steps */
    check_sgd_all(trainer_backend_cpu(), 1e-6);
}
END_TEST

START_TEST(test_cpu_axpy_scale)
{
    check_axpy_scale(trainer_backend_cpu(), 1e-6); /* 1e-6 relative to the sum of |terms| */
}
END_TEST

START_TEST(test_cpu_average)
{
    /* 1e-6 relative to the sum of |terms| (4 terms) */
    check_average(trainer_backend_cpu(), 1e-6, 0);
    check_average(trainer_backend_cpu(), 1e-6, 1);
}
END_TEST

START_TEST(test_cpu_alloc_zeroed)
{
    check_alloc_zeroed(trainer_backend_cpu());
}
END_TEST

START_TEST(test_cpu_round_trip)
{
    check_round_trip(trainer_backend_cpu()); /* exact: bytes */
}
END_TEST

START_TEST(test_cpu_name)
{
    ck_assert_str_eq(trainer_backend_cpu()->name, "cpu");
}
END_TEST

/* The kernels asked of OpenBLAS, case by case. */
START_TEST(test_blas_core_choice)
{
    trainer_cpu_t none = {0, 0}, skx = {1, 0}, cpx = {1, 1};
    ck_assert_ptr_null(trainer_blas_core_for(none, "Zen"));
    ck_assert_ptr_null(trainer_blas_core_for(none, "Haswell"));
    ck_assert_str_eq(trainer_blas_core_for(skx, "Zen"), "SKYLAKEX");
    ck_assert_str_eq(trainer_blas_core_for(skx, "Haswell"), "SKYLAKEX");
    ck_assert_str_eq(trainer_blas_core_for(cpx, "Zen"), "COOPERLAKE");
    /* OpenBLAS already runs AVX-512 kernels: nothing to change */
    ck_assert_ptr_null(trainer_blas_core_for(cpx, "SkylakeX"));
    ck_assert_ptr_null(trainer_blas_core_for(cpx, "Cooperlake"));
    ck_assert_ptr_null(trainer_blas_core_for(skx, "SapphireRapids"));
    ck_assert_ptr_null(trainer_blas_core_for(skx, NULL));
}
END_TEST

/* Whether a flag is among the first "flags" line of /proc/cpuinfo (-1: no such file). */
static int cpuinfo_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    static char line[1 << 14];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            for (char *t = strtok(strchr(line, ':') + 1, " \n"); t; t = strtok(NULL, " \n"))
                found |= !strcmp(t, flag);
            break;
        }
    fclose(f);
    return found;
}

/* This CPU as the compiler's runtime sees it against the kernel's flags, and the description
 * against what OpenBLAS reports. */
START_TEST(test_blas_this_cpu)
{
    trainer_cpu_t cpu = trainer_cpu_detect();
    int f = cpuinfo_has("avx512f"), bw = cpuinfo_has("avx512bw"), dq = cpuinfo_has("avx512dq"),
        vl = cpuinfo_has("avx512vl");
    if (f >= 0)
        ck_assert_int_eq(cpu.avx512, f && bw && dq && vl);
    if (f >= 0 && cpu.avx512)
        ck_assert_int_eq(cpu.avx512_bf16, cpuinfo_has("avx512_bf16"));
    char text[256];
    trainer_blas_describe(text, sizeof text);
    ck_assert_msg(strstr(text, openblas_get_corename()), "%s", text);
    ck_assert_msg(!strncmp(text, "OpenBLAS ", 9), "%s", text);
    if (!getenv("OPENBLAS_CORETYPE") && !cpu.avx512)
        ck_assert_msg(strstr(text, "no AVX-512"), "%s", text);
}
END_TEST

/* max |a - b| <= tol * max |b| over n values, naming what differs. */
static void expect_rel_close(const char *what, const float *a, const float *b, size_t n, double tol)
{
    double big = 0.0, err = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs((double)b[i]));
        if (fabs((double)a[i] - b[i]) > err) {
            err = fabs((double)a[i] - b[i]);
            worst = i;
        }
    }
    ck_assert_msg(big > 0.0, "%s: all zero (the comparison would prove nothing)", what);
    ck_assert_msg(err <= tol * big, "%s[%zu]: %.9g sliced, %.9g whole (%.3g of the largest %.3g)",
                  what, worst, a[worst], b[worst], err / big, big);
}

START_TEST(test_cpu_conv_slices)
{
    /* The CPU's convolutions slice by slice (conv_slice_bytes, model.c) against the whole
     * batch at once (the same table with conv_slice_bytes 0, the path a GPU takes): slices of
     * 3 samples of a batch of 13 (the last of 1), on a cnn of 1 and one of 2 input channels
     * (its input permuted first). The products of a slice's columns are the whole batch's
     * columns; the weight gradients sum over slices in another order: logits 1e-6, the loss
     * 1e-6 of itself, gradients and the weights after one fused SGD step 1e-5 of each
     * tensor's largest value (float32 sums of up to 13 * 144 terms). An index slip in a slice
     * gives differences of the order of the values. */
    enum { B = 13 };
    for (int two = 0; two < 2; two++) {
        trainer_model_config_t c;
        trainer_model_config_default(&c, TRAINER_ARCH_CNN);
        c.in_channels = two ? 2 : 1;
        c.in_h = two ? 10 : 14;
        c.in_w = 14;
        c.kernel = 3;
        c.conv[0] = 3;
        c.conv[1] = 4;
        c.fc = 6;
        c.classes = 4;
        trainer_model_t m;
        dt_err_t err = {{0}};
        ck_assert_int_eq(trainer_model_build(&m, &c, &err), DT_OK);
        trainer_dataset_t ds;
        trainer_dataset_synthetic(&ds, 50, m.in_size, c.classes, 1.0f, 77);
        trainer_backend_t sliced = *trainer_backend_cpu(), whole = sliced;
        const trainer_layer_t *l0 = &m.layers[0];
        sliced.conv_slice_bytes = 3 * sizeof(float) * (size_t)l0->in_c * l0->k * l0->k * l0->out_h *
                                  l0->out_w; /* conv2's per-sample col is smaller */
        whole.conv_slice_bytes = 0;
        const trainer_optim_t sgd = {.lr = 0.1f, .momentum = 0.0f, .weight_decay = 1e-3f};
        trainer_learner_t ls, lw;
        trainer_learner_init(&ls, &sliced, &m, &sgd, B, 5);
        trainer_learner_init(&lw, &whole, &m, &sgd, B, 5);
        uint32_t idx[B];
        for (int i = 0; i < B; i++)
            idx[i] = (uint32_t)(i * 3 + 1);
        double loss[2];
        int right[2];
        trainer_learner_t *both[2] = {&ls, &lw};
        for (int k = 0; k < 2; k++) {
            trainer_learner_load(both[k], &ds, idx, B);
            trainer_model_forward(&both[k]->ws, both[k]->params, B);
            trainer_model_loss(&both[k]->ws, B, &loss[k], &right[k]);
            trainer_model_backward(&both[k]->ws, both[k]->params, both[k]->grads, B);
        }
        int last = m.n_layers - 1;
        expect_rel_close("logits", ls.ws.act[last], lw.ws.act[last], (size_t)B * c.classes, 1e-6);
        ck_assert_msg(fabs(loss[0] - loss[1]) <= 1e-6 * fabs(loss[1]), "loss %.12g, %.12g", loss[0],
                      loss[1]);
        for (int i = 0; i < m.n_layers; i++) {
            const trainer_layer_t *l = &m.layers[i];
            if (l->w_len) {
                expect_rel_close("weight gradient", ls.grads + l->w_off, lw.grads + l->w_off,
                                 l->w_len, 1e-5);
                expect_rel_close("bias gradient", ls.grads + l->b_off, lw.grads + l->b_off,
                                 l->b_len, 1e-5);
            }
        }
        /* the fused step (weights updated inside the backward pass) */
        trainer_learner_step(&ls, &ds, idx, B);
        trainer_learner_step(&lw, &ds, idx, B);
        expect_rel_close("weights after a fused step", ls.params, lw.params, m.n_params, 1e-5);
        trainer_learner_free(&ls);
        trainer_learner_free(&lw);
        trainer_dataset_free(&ds);
    }
}
END_TEST

static Suite *backend_suite(void)
{
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60); /* each well under a second; several times that under ASan */
    tcase_add_test(tc, test_cpu_name);
    tcase_add_test(tc, test_cpu_gemm);
    tcase_add_test(tc, test_cpu_gemm_beta0);
    tcase_add_test(tc, test_cpu_bias);
    tcase_add_test(tc, test_cpu_relu);
    tcase_add_test(tc, test_cpu_im2col);
    tcase_add_test(tc, test_cpu_maxpool);
    tcase_add_test(tc, test_cpu_permute);
    tcase_add_test(tc, test_cpu_softmax_xent);
    tcase_add_test(tc, test_cpu_sgd);
    tcase_add_test(tc, test_cpu_axpy_scale);
    tcase_add_test(tc, test_cpu_average);
    tcase_add_test(tc, test_cpu_alloc_zeroed);
    tcase_add_test(tc, test_cpu_round_trip);
    tcase_add_test(tc, test_blas_core_choice);
    tcase_add_test(tc, test_blas_this_cpu);
    tcase_add_test(tc, test_cpu_conv_slices);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(backend_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
