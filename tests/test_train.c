/* The learner: bit-identical results from the same seed, a big batch's gradient equal to
 * the mean of its halves' (what synchronous data parallelism relies on), evaluation that
 * does not depend on its batch size, epochs that visit every sample, and divergence
 * reported rather than hidden. Data: seeded synthetic Gaussians (no files needed). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "fedopt.h"
#include "model.h"
#include "train.h"

#include "mlp_fixture.h"

static const trainer_optim_t sgd = {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f};

START_TEST(same_seed_same_weights)
{
    /* Two replicas, same seed, 3 epochs: every bit of the parameters agrees. A third with
     * another seed must differ (else the check could not fail). */
    trainer_learner_t a, b, c;
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_learner_init(&a, be, &mlp, &sgd, 32, 11);
    trainer_learner_init(&b, be, &mlp, &sgd, 32, 11);
    trainer_learner_init(&c, be, &mlp, &sgd, 32, 12);
    for (int e = 0; e < 3; e++) {
        trainer_learner_epoch(&a, &ds, NULL, ds.n, 32);
        trainer_learner_epoch(&b, &ds, NULL, ds.n, 32);
        trainer_learner_epoch(&c, &ds, NULL, ds.n, 32);
    }
    size_t bytes = sizeof(float) * mlp.n_params;
    ck_assert_int_eq(memcmp(a.params, b.params, bytes), 0);
    ck_assert_int_ne(memcmp(a.params, c.params, bytes), 0);
    trainer_learner_free(&a);
    trainer_learner_free(&b);
    trainer_learner_free(&c);
}
END_TEST

START_TEST(big_batch_gradient_is_mean_of_halves)
{
    /* d(mean loss over 2b)/dw = (grad over first b + grad over last b) / 2: the identity
     * that makes N workers of batch b equal one worker of batch N*b. */
    trainer_learner_t l;
    trainer_learner_init(&l, trainer_backend_cpu(), &mlp, &sgd, 64, 3);
    uint32_t idx[64];
    for (int i = 0; i < 64; i++)
        idx[i] = (uint32_t)(i * 7 % (int)ds.n);
    size_t n = mlp.n_params;
    float *whole = malloc(sizeof(float) * n), *half = malloc(sizeof(float) * n);
    trainer_learner_grad(&l, &ds, idx, 64);
    memcpy(whole, l.grads, sizeof(float) * n);
    trainer_learner_grad(&l, &ds, idx, 32);
    memcpy(half, l.grads, sizeof(float) * n);
    trainer_learner_grad(&l, &ds, idx + 32, 32);
    double max_err = 0.0, max_g = 0.0;
    for (size_t i = 0; i < n; i++) {
        double mean = 0.5 * ((double)half[i] + (double)l.grads[i]);
        max_err = fmax(max_err, fabs(mean - whole[i]));
        max_g = fmax(max_g, fabs(whole[i]));
    }
    /* float32 sums over 64 vs 2 x 32 terms: a few ulps of the largest gradient. */
    ck_assert_msg(max_err <= 1e-5 * max_g, "max error %g (largest gradient %g)", max_err, max_g);
    ck_assert(max_g > 0.0);
    free(whole);
    free(half);
    trainer_learner_free(&l);
}
END_TEST

START_TEST(evaluation_independent_of_batch)
{
    /* Accuracy and loss computed 64 at a time and one sample at a time agree. */
    trainer_learner_t big, one;
    trainer_learner_init(&big, trainer_backend_cpu(), &mlp, &sgd, 64, 5);
    trainer_learner_init(&one, trainer_backend_cpu(), &mlp, &sgd, 1, 5);
    trainer_learner_epoch(&big, &ds, NULL, ds.n, 16);
    trainer_eval_t a = trainer_evaluate(&big, big.params, &ds);
    trainer_eval_t b = trainer_evaluate(&one, big.params, &ds);
    ck_assert_double_eq_tol(a.loss, b.loss, 1e-5);
    ck_assert_double_eq(a.accuracy, b.accuracy);
    trainer_learner_free(&big);
    trainer_learner_free(&one);
}
END_TEST

START_TEST(training_learns_separable_classes)
{
    /* Four well separated Gaussian classes: chance is 0.25, a working learner passes 0.9
     * after a few epochs and its loss falls. */
    trainer_learner_t l;
    trainer_learner_init(&l, trainer_backend_cpu(), &mlp, &sgd, 32, 9);
    trainer_eval_t before = trainer_evaluate(&l, l.params, &ds);
    trainer_epoch_stats_t st = {0};
    for (int e = 0; e < 5; e++)
        st = trainer_learner_epoch(&l, &ds, NULL, ds.n, 32);
    trainer_eval_t after = trainer_evaluate(&l, l.params, &ds);
    ck_assert(!st.diverged);
    ck_assert_msg(after.accuracy > 0.9, "accuracy %g", after.accuracy);
    ck_assert_msg(after.loss < 0.5 * before.loss, "loss %g -> %g", before.loss, after.loss);
    trainer_learner_free(&l);
}
END_TEST

START_TEST(epoch_counts_and_subset)
{
    /* 100 samples of a subset in batches of 32: 4 steps (32, 32, 32, 4), 100 samples. */
    trainer_learner_t l;
    trainer_learner_init(&l, trainer_backend_cpu(), &mlp, &sgd, 32, 1);
    uint32_t subset[100];
    for (int i = 0; i < 100; i++)
        subset[i] = (uint32_t)(599 - i);
    trainer_epoch_stats_t st = trainer_learner_epoch(&l, &ds, subset, 100, 32);
    ck_assert_uint_eq(st.steps, 4);
    ck_assert_uint_eq(st.samples, 100);
    /* The shuffled order is a permutation of the subset. */
    int seen[600] = {0};
    for (int i = 0; i < 100; i++)
        seen[l.order[i]]++;
    for (int i = 0; i < 600; i++)
        ck_assert_int_eq(seen[i], i >= 500 ? 1 : 0);
    trainer_learner_free(&l);
}
END_TEST

START_TEST(divergence_is_reported)
{
    /* Parameters blown up to 1e30: logits overflow, the loss is not finite, and the epoch
     * says so after its first step instead of training on. */
    trainer_learner_t l;
    trainer_learner_init(&l, trainer_backend_cpu(), &mlp, &sgd, 32, 1);
    for (size_t i = 0; i < mlp.n_params; i++)
        l.params[i] = 1e30f;
    trainer_epoch_stats_t st = trainer_learner_epoch(&l, &ds, NULL, ds.n, 32);
    ck_assert(st.diverged);
    ck_assert_uint_eq(st.steps, 1);
    ck_assert(!isfinite(st.mean_loss));
    trainer_learner_free(&l);
}
END_TEST

START_TEST(sgd_step_matches_formula)
{
    /* One update with momentum and weight decay, starting from zero velocity:
     * w' = w - lr * (g + wd * w). */
    trainer_learner_t l;
    trainer_learner_init(&l, trainer_backend_cpu(), &mlp, &sgd, 32, 2);
    uint32_t idx[32];
    for (int i = 0; i < 32; i++)
        idx[i] = (uint32_t)i;
    size_t n = mlp.n_params;
    float *w0 = malloc(sizeof(float) * n);
    memcpy(w0, l.params, sizeof(float) * n);
    trainer_learner_grad(&l, &ds, idx, 32);
    trainer_learner_update(&l);
    for (size_t i = 0; i < n; i++) {
        double want = w0[i] - (double)sgd.lr * (l.grads[i] + (double)sgd.weight_decay * w0[i]);
        ck_assert_double_eq_tol(l.params[i], want, 1e-6);
    }
    free(w0);
    trainer_learner_free(&l);
}
END_TEST

START_TEST(fused_step_matches_grad_then_update)
{
    /* Without momentum a step fuses the update into the backward GEMMs; with weight decay
     * it must land where gradient + separate update lands, up to float rounding. */
    /* _i = 0: the mlp on the 20-dimensional set; _i = 1: a small cnn on 14x14 images. */
    trainer_optim_t plain = {.lr = 0.1f, .momentum = 0.0f, .weight_decay = 1e-3f};
    trainer_dataset_t img;
    trainer_model_t cnn;
    trainer_dataset_synthetic(&img, 200, 196, 4, 1.0f, 3);
    img.rows = img.cols = 14;
    trainer_model_config_t cfg;
    trainer_model_config_default(&cfg, TRAINER_ARCH_CNN);
    cfg.in_h = cfg.in_w = 14;
    cfg.classes = 4;
    cfg.kernel = 3;
    cfg.conv[0] = 3;
    cfg.conv[1] = 4;
    cfg.fc = 6;
    ck_assert_int_eq(trainer_model_build(&cnn, &cfg, NULL), DT_OK);
    const trainer_model_t *model = _i ? &cnn : &mlp;
    const trainer_dataset_t *data = _i ? &img : &ds;
    trainer_learner_t a, b;
    trainer_learner_init(&a, trainer_backend_cpu(), model, &plain, 32, 4);
    trainer_learner_init(&b, trainer_backend_cpu(), model, &plain, 32, 4);
    uint32_t idx[32];
    for (int step = 0; step < 5; step++) {
        for (int i = 0; i < 32; i++)
            idx[i] = (uint32_t)((step * 32 + i * 5) % (int)data->n);
        double la = trainer_learner_step(&a, data, idx, 32);
        double lb = trainer_learner_grad(&b, data, idx, 32);
        trainer_learner_update(&b);
        ck_assert_double_eq_tol(la, lb, 1e-6);
    }
    double max_err = 0.0, max_w = 0.0;
    for (size_t i = 0; i < model->n_params; i++) {
        max_err = fmax(max_err, fabs((double)a.params[i] - b.params[i]));
        max_w = fmax(max_w, fabs((double)b.params[i]));
    }
    /* float32: a few ulps of the largest weight after 5 steps */
    ck_assert_msg(max_err <= 1e-6 * max_w, "max difference %g (largest weight %g)", max_err, max_w);
    /* and the step did move the weights: the check above is not comparing two copies of
     * the initial values */
    trainer_learner_t c;
    trainer_learner_init(&c, trainer_backend_cpu(), model, &plain, 32, 4);
    double moved = 0.0;
    for (size_t i = 0; i < model->n_params; i++)
        moved = fmax(moved, fabs((double)a.params[i] - c.params[i]));
    ck_assert(moved > 1e-3);
    trainer_learner_free(&a);
    trainer_learner_free(&b);
    trainer_learner_free(&c);
    trainer_dataset_free(&img);
}
END_TEST

/* Server optimizers (fedopt.h) against hand computations. FedAdam, beta1 0.9, beta2 0.99,
 * tau 1e-3, lr 0.1, delta (0.5, -1, 0) twice from w (1, 2, 3): after the first step
 * m = 0.1 delta = (0.05, -0.1, 0), v = 0.99 tau^2 + 0.01 delta^2 = (0.00250099, 0.01000099,
 * 9.9e-7), w0 = 1 + 0.1 x 0.05 / (sqrt(0.00250099) + 0.001) = 1.09802019 (w1 = 1.90099495;
 * w2 stays 3, m2 being 0); after the second m = (0.095, -0.19, 0), v0 = 0.0049759801,
 * w = (1.23081187, 1.76725885, 3). */
START_TEST(server_optimizers_match_hand_computations)
{
    trainer_fedopt_t adam = {TRAINER_FEDOPT_ADAM, 0.1f, 0.9f, 0.99f, 1e-3f};
    float w[3] = {1, 2, 3}, d[3] = {0.5f, -1, 0}, m[3], v[3];
    ck_assert_int_eq(trainer_fedopt_slots(TRAINER_FEDOPT_ADAM), 2);
    trainer_fedopt_init(&adam, m, v, 3);
    ck_assert_float_eq_tol(v[1], 1e-6f, 1e-11f);
    trainer_fedopt_step(&adam, w, d, m, v, 3);
    ck_assert_float_eq_tol(m[0], 0.05f, 1e-7f);
    ck_assert_float_eq_tol(v[0], 0.00250099f, 5e-9f);
    ck_assert_float_eq_tol(v[2], 9.9e-7f, 1e-11f);
    ck_assert_float_eq_tol(w[0], 1.09802019f, 2e-7f);
    ck_assert_float_eq_tol(w[1], 1.90099495f, 2e-7f);
    ck_assert_float_eq(w[2], 3.0f);
    trainer_fedopt_step(&adam, w, d, m, v, 3);
    ck_assert_float_eq_tol(m[1], -0.19f, 1e-7f);
    ck_assert_float_eq_tol(v[0], 0.0049759801f, 5e-9f);
    ck_assert_float_eq_tol(w[0], 1.23081187f, 3e-7f);
    ck_assert_float_eq_tol(w[1], 1.76725885f, 3e-7f);

    /* FedYogi moves v toward delta^2 by at most (1 - beta2) delta^2: from tau^2 with delta
     * 0.5, v = 1e-6 + 0.01 x 0.25 = 0.002501, w = 1.09802; with delta 0.1 next,
     * v = 0.002501 + 0.01 x 0.01 = 0.002601 (still below delta^2 = 0.01), m = 0.055,
     * w = 1.09802 + 0.1 x 0.055 / (0.051 + 0.001) = 1.20378923. */
    trainer_fedopt_t yogi = {TRAINER_FEDOPT_YOGI, 0.1f, 0.9f, 0.99f, 1e-3f};
    float wy = 1, my, vy;
    trainer_fedopt_init(&yogi, &my, &vy, 1);
    float d1 = 0.5f, d2 = 0.1f;
    trainer_fedopt_step(&yogi, &wy, &d1, &my, &vy, 1);
    ck_assert_float_eq_tol(vy, 0.002501f, 5e-9f);
    trainer_fedopt_step(&yogi, &wy, &d2, &my, &vy, 1);
    ck_assert_float_eq_tol(vy, 0.002601f, 5e-9f);
    ck_assert_float_eq_tol(wy, 1.20378923f, 3e-7f);
    /* above delta^2, yogi's v falls by (1 - beta2) delta^2 where adam's would decay by
     * (1 - beta2) (v - delta^2): v 1, delta 0.5: yogi 1 - 0.0025, adam 0.99 + 0.0025 */
    float v1 = 1, va = 1, w1 = 0, m1 = 0;
    trainer_fedopt_step(&yogi, &w1, &d1, &m1, &v1, 1);
    ck_assert_float_eq_tol(v1, 0.9975f, 1e-6f);
    m1 = 0;
    trainer_fedopt_step(&adam, &w1, &d1, &m1, &va, 1);
    ck_assert_float_eq_tol(va, 0.9925f, 1e-6f);

    /* FedAdagrad sums: v = tau^2 + 0.25 + 0.25 after two steps of 0.5 */
    trainer_fedopt_t ada = {TRAINER_FEDOPT_ADAGRAD, 0.1f, 0.0f, 0.99f, 1e-3f};
    float wa = 0, ma, vaa;
    trainer_fedopt_init(&ada, &ma, &vaa, 1);
    trainer_fedopt_step(&ada, &wa, &d1, &ma, &vaa, 1);
    trainer_fedopt_step(&ada, &wa, &d1, &ma, &vaa, 1);
    ck_assert_float_eq_tol(vaa, 0.500001f, 1e-6f);
    /* beta1 0: m = delta; w = 0.1 x 0.5 / (sqrt(0.250001) + 0.001) + 0.1 x 0.5 /
     * (sqrt(0.500001) + 0.001) = 0.0998002 + 0.0706107 */
    ck_assert_float_eq_tol(wa, 0.0998002f + 0.0706107f, 3e-7f);

    /* FedAvgM: m = beta1 m + delta, w += lr m; with beta1 0 and lr 1 it is FedAvg */
    trainer_fedopt_t avgm = {TRAINER_FEDOPT_AVGM, 1.0f, 0.5f, 0, 0};
    float wm = 0, mm = 0;
    trainer_fedopt_step(&avgm, &wm, &d1, &mm, NULL, 1);
    trainer_fedopt_step(&avgm, &wm, &d1, &mm, NULL, 1);
    ck_assert_float_eq(mm, 0.75f);
    ck_assert_float_eq(wm, 1.25f);
    trainer_fedopt_t avg = {TRAINER_FEDOPT_AVG, 0.5f, 0, 0, 0};
    float wv[3] = {1, 2, 3};
    trainer_fedopt_step(&avg, wv, d, NULL, NULL, 3);
    ck_assert_float_eq(wv[0], 1.25f);
    ck_assert_float_eq(wv[1], 1.5f);
    ck_assert_str_eq(trainer_fedopt_names[TRAINER_FEDOPT_YOGI], "yogi");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("learner");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, same_seed_same_weights);
    tcase_add_test(tc, big_batch_gradient_is_mean_of_halves);
    tcase_add_test(tc, evaluation_independent_of_batch);
    tcase_add_test(tc, training_learns_separable_classes);
    tcase_add_test(tc, epoch_counts_and_subset);
    tcase_add_test(tc, divergence_is_reported);
    tcase_add_test(tc, sgd_step_matches_formula);
    tcase_add_test(tc, server_optimizers_match_hand_computations);
    tcase_add_loop_test(tc, fused_step_matches_grad_then_update, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
