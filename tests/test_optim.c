/* The optimizers (trainer/train.h): Adam and AdamW's first step against its closed form,
 * clipping's factor, the learning-rate schedules against hand-computed rates (and cosine
 * without a floor equal to the formula before floors, bit for bit). `test_optim torch` (the
 * optim_torch suite) trains the mlp with dtsim and with PyTorch (tests/optim_torch.py) from
 * the same weights on the same batches, SGD, Adam and AdamW, clipped or not, and compares the
 * parameters; it exits 77, skipped, without a python3 that imports torch. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "model.h"
#include "train.h"

#include "mlp_fixture.h"

/* Adam's first step from zero moments is lr g / (|g| + eps) (bias correction makes m = g and
 * v = g^2); AdamW first shrinks w by 1 - lr wd, Adam adds wd w to g. */
START_TEST(adam_first_step_is_closed_form)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    float w0[4] = {0.5f, -1.0f, 2.0f, 0.0f}, g[4] = {0.1f, -3.0f, 1e-3f, 0.25f};
    for (int kind = TRAINER_OPT_ADAM; kind <= TRAINER_OPT_ADAMW; kind++) {
        trainer_optim_t o = {.lr = 0.01f,
                             .weight_decay = 0.1f,
                             .kind = kind,
                             .beta1 = 0.9,
                             .beta2 = 0.999,
                             .eps = 1e-8};
        float w[4], m[4] = {0}, v[4] = {0};
        memcpy(w, w0, sizeof w);
        trainer_optim_update(be, &o, o.lr, 1, w, g, m, v, 4);
        for (int i = 0; i < 4; i++) {
            double wi = w0[i], gi = g[i];
            if (kind == TRAINER_OPT_ADAMW)
                wi *= 1.0 - 0.01 * 0.1;
            else
                gi += 0.1 * wi;
            double want = wi - 0.01 * gi / (fabs(gi) + 1e-8);
            ck_assert_msg(fabs(w[i] - want) <= 1e-7, "%s w[%d] = %.9g, expected %.9g",
                          trainer_optimizer_name(o.kind), i, (double)w[i], want);
            ck_assert_double_eq_tol(m[i], 0.1 * gi, 1e-7);
            ck_assert_double_eq_tol(v[i], 0.001 * gi * gi, 1e-8);
        }
    }
}
END_TEST

START_TEST(clip_scales_to_the_norm)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    float g[2] = {3.0f, 4.0f}; /* norm 5 */
    trainer_optim_t o = {.lr = 0.1f, .clip_norm = 1.0f};
    double norm = trainer_clip(be, &o, g, 2);
    ck_assert_double_eq_tol(norm, 5.0, 1e-12);
    ck_assert_double_eq_tol(g[0], 3.0 / (5.0 + 1e-6), 1e-7);
    ck_assert_double_eq_tol(g[1], 4.0 / (5.0 + 1e-6), 1e-7);
    o.clip_norm = 10.0f; /* below the limit: untouched */
    float h[2] = {3.0f, 4.0f};
    trainer_clip(be, &o, h, 2);
    ck_assert(h[0] == 3.0f && h[1] == 4.0f);
    ck_assert(trainer_clip_factor(0.0f, 1e9) == 1.0f); /* off */
}
END_TEST

START_TEST(schedules_give_hand_computed_rates)
{
    trainer_lr_t p = {TRAINER_LR_COSINE, 0.1f, 0.0f, 0};
    /* without warmup or floor: the formula before floors, to the bit */
    for (long s = 0; s <= 100; s += 7) {
        double progress = (double)s / 100.0;
        float before = (float)(0.5 * 0.1f * (1.0 + cos(3.14159265358979323846 * progress)));
        ck_assert(trainer_lr_at(&p, s, 100) == before);
    }
    p = (trainer_lr_t){TRAINER_LR_COSINE, 0.1f, 0.01f, 10};
    ck_assert_double_eq_tol(trainer_lr_at(&p, 0, 110), 0.01, 1e-8);   /* 0.1 x 1 / 10 */
    ck_assert_double_eq_tol(trainer_lr_at(&p, 9, 110), 0.1, 1e-8);    /* warmup's last */
    ck_assert_double_eq_tol(trainer_lr_at(&p, 10, 110), 0.1, 1e-8);   /* decay's first */
    ck_assert_double_eq_tol(trainer_lr_at(&p, 60, 110), 0.055, 1e-8); /* halfway */
    ck_assert_double_eq_tol(trainer_lr_at(&p, 110, 110), 0.01, 1e-8); /* the floor */
    p.schedule = TRAINER_LR_LINEAR;
    ck_assert_double_eq_tol(trainer_lr_at(&p, 35, 110), 0.1 - 0.09 * 0.25, 1e-8);
    p.schedule = TRAINER_LR_CONSTANT;
    ck_assert_double_eq_tol(trainer_lr_at(&p, 4, 110), 0.05, 1e-8);
    ck_assert(trainer_lr_at(&p, 50, 110) == 0.1f);
}
END_TEST

/* ---- PyTorch on the same weights and batches ------------------------------------------ */

static const char *python;

static const char *python_with_torch(void)
{
    static const char *const candidates[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0)
            return candidates[i];
    }
    return NULL;
}

#define STEPS 40
#define BATCH 32

static const struct {
    trainer_optimizer_t kind;
    float lr, momentum, wd, clip;
} cases[] = {
    {TRAINER_OPT_SGD, 0.05f, 0.9f, 1e-3f, 0.5f},
    {TRAINER_OPT_ADAM, 0.01f, 0.0f, 1e-2f, 0.0f},
    {TRAINER_OPT_ADAMW, 0.01f, 0.0f, 0.1f, 0.0f},
    {TRAINER_OPT_ADAMW, 0.01f, 0.0f, 0.1f, 0.5f},
};

START_TEST(matches_pytorch)
{
    trainer_optim_t o = {.lr = cases[_i].lr,
                         .momentum = cases[_i].momentum,
                         .weight_decay = cases[_i].wd,
                         .kind = cases[_i].kind,
                         .beta1 = 0.9,
                         .beta2 = 0.999,
                         .eps = 1e-8,
                         .clip_norm = cases[_i].clip};
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_learner_t l;
    trainer_learner_init(&l, be, &mlp, &o, BATCH, 5);

    char dir[] = "/tmp/dtsim_optim_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char in[128], out[128], cmd[1024];
    snprintf(in, sizeof in, "%s/in.bin", dir);
    snprintf(out, sizeof out, "%s/out.bin", dir);
    FILE *f = fopen(in, "wb");
    ck_assert_ptr_nonnull(f);
    int32_t D = 0;
    for (int k = 0; k < mlp.n_layers; k++)
        D += mlp.layers[k].kind == TRAINER_LAYER_DENSE;
    fwrite(&D, sizeof D, 1, f);
    for (int k = 0; k < mlp.n_layers; k++) {
        const trainer_layer_t *y = &mlp.layers[k];
        if (y->kind != TRAINER_LAYER_DENSE)
            continue;
        int32_t row[4] = {y->in_c * y->in_h * y->in_w, y->out_c, (int32_t)y->w_off,
                          (int32_t)y->b_off};
        fwrite(row, sizeof row, 1, f);
    }
    int32_t head[4] = {(int32_t)mlp.n_params, (int32_t)o.kind, STEPS, BATCH};
    double hyper[7] = {o.lr, o.momentum, o.weight_decay, o.beta1, o.beta2, o.eps, o.clip_norm};
    fwrite(head, sizeof head, 1, f);
    fwrite(hyper, sizeof hyper, 1, f);
    fwrite(l.params, sizeof(float), mlp.n_params, f);
    uint32_t idx[BATCH];
    for (int s = 0; s < STEPS; s++) {
        for (int b = 0; b < BATCH; b++)
            idx[b] = (uint32_t)((s * BATCH + b * 7) % ds.n);
        for (int b = 0; b < BATCH; b++)
            fwrite(ds.x + (size_t)idx[b] * ds.dim, sizeof(float), ds.dim, f);
        for (int b = 0; b < BATCH; b++) {
            int32_t y = ds.y[idx[b]];
            fwrite(&y, sizeof y, 1, f);
        }
        ck_assert(isfinite(trainer_learner_step(&l, &ds, idx, BATCH)));
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s/tests/optim_torch.py %s %s", python, DTSIM_SOURCE, in, out);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    float *theirs = malloc(sizeof(float) * mlp.n_params);
    ck_assert_ptr_nonnull(theirs);
    f = fopen(out, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(theirs, sizeof(float), mlp.n_params, f), mlp.n_params);
    fclose(f);
    unlink(in);
    unlink(out);
    rmdir(dir);
    /* the run must have moved the weights far beyond the tolerance, or equality says nothing */
    float *init = malloc(sizeof(float) * mlp.n_params);
    ck_assert_ptr_nonnull(init);
    trainer_model_init_params(&mlp, init, 5);
    double worst = 0.0, moved = 0.0;
    for (size_t i = 0; i < mlp.n_params; i++) {
        worst = fmax(worst, fabs((double)l.params[i] - theirs[i]));
        moved = fmax(moved, fabs((double)theirs[i] - init[i]));
    }
    printf("torch %-5s clip %-3g: max |dtsim - torch| = %.2e after %d steps (weights moved "
           "up to %.3f)\n",
           trainer_optimizer_name(o.kind), (double)o.clip_norm, worst, STEPS, moved);
    ck_assert_double_gt(moved, 0.05);
    ck_assert_msg(worst <= 1e-6, "%s: %.3g off PyTorch", trainer_optimizer_name(o.kind), worst);
    free(init);
    free(theirs);
    trainer_learner_free(&l);
}
END_TEST

int main(int argc, char **argv)
{
    int torch = argc > 1 && !strcmp(argv[1], "torch");
    Suite *s = suite_create(torch ? "optim_torch" : "optim");
    TCase *tc = tcase_create(torch ? "torch" : "optim");
    tcase_add_checked_fixture(tc, setup, teardown);
    if (torch) {
        python = python_with_torch();
        if (!python) {
            fprintf(stderr, "optim_torch: SKIPPED: no python3 imports torch (Debian: "
                            "python3-torch); the comparison with PyTorch did not run\n");
            return 77;
        }
        tcase_set_timeout(tc, 120); /* importing torch takes seconds */
        tcase_add_loop_test(tc, matches_pytorch, 0, (int)(sizeof cases / sizeof cases[0]));
    } else {
        tcase_add_test(tc, adam_first_step_is_closed_form);
        tcase_add_test(tc, clip_scales_to_the_norm);
        tcase_add_test(tc, schedules_give_hand_computed_rates);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
