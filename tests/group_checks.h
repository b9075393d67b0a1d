/* Replicas side by side (trainer_model_*_group) against the single model, shared by
 * test_model (the CPU backend: the group must give the single passes' exact bits) and
 * test_cuda (the CUDA backend's batched launches against the CPU's single passes, within a
 * stated tolerance).
 *
 * `count` replicas of one architecture, each with its own seeded parameters and its own
 * random batch, run as one group on `be` with their parameters `stride` floats apart
 * (stride > n_params: the gaps are poisoned and must come back untouched); every replica is
 * then run alone on `ref`. Logits, dlogits, each replica's loss and hit count and every
 * gradient are compared, relative to the largest |value| of each replica's tensor.
 *
 * Static functions in a header: each test program includes it once. */
#ifndef DTSIM_TESTS_GROUP_CHECKS_H
#define DTSIM_TESTS_GROUP_CHECKS_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "model.h"
#include "rng.h"

#define GROUP_POISON 12345.0f

static float *group_floats(size_t n)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    ck_assert_ptr_nonnull(p);
    return p;
}

/* |got - ref| <= tol * max |ref| over n values (tol 0: the same bits). */
static void group_expect_close(const char *what, int r, const float *got, const float *ref,
                               size_t n, double tol)
{
    double largest = 0.0;
    for (size_t i = 0; i < n; i++)
        largest = fmax(largest, fabs((double)ref[i]));
    for (size_t i = 0; i < n; i++) {
        if (tol == 0.0) {
            ck_assert_msg(memcmp(&got[i], &ref[i], sizeof(float)) == 0,
                          "%s, replica %d, [%zu]: group %.9g, single %.9g (expected the same "
                          "bits)",
                          what, r, i, got[i], ref[i]);
            continue;
        }
        ck_assert_msg(fabs((double)got[i] - ref[i]) <= tol * largest,
                      "%s, replica %d, [%zu]: group %.9g, single %.9g (tolerance %g of %g)", what,
                      r, i, got[i], ref[i], tol, largest);
    }
}

static void group_check(const trainer_backend_t *be, const trainer_backend_t *ref,
                        const trainer_model_config_t *cfg, int count, int batch, double tol,
                        double loss_tol)
{
    trainer_model_t m;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_model_build(&m, cfg, &err) == DT_OK, "build: %s", err.msg);
    size_t n = m.n_params, stride = n + 7, in = m.in_size, classes = (size_t)m.classes;
    size_t rows = (size_t)count * batch;

    /* parameters: replica r from seed 40 + r, gaps poisoned */
    float *params = group_floats(stride * count);
    for (size_t i = 0; i < stride * count; i++)
        params[i] = GROUP_POISON;
    for (int r = 0; r < count; r++)
        trainer_model_init_params(&m, params + r * stride, 40 + (uint64_t)r);
    /* inputs in [-1, 1) and labels, replica after replica */
    float *x = group_floats(rows * in);
    uint8_t *y = malloc(rows);
    ck_assert_ptr_nonnull(y);
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 77, 1);
    for (size_t i = 0; i < rows * in; i++)
        x[i] = (float)(2.0 * trainer_rng_uniform(&rng) - 1.0);
    for (size_t i = 0; i < rows; i++)
        y[i] = (uint8_t)trainer_rng_below(&rng, classes);

    /* the group on be */
    trainer_workspace_t ws;
    trainer_workspace_init_group(&ws, be, &m, batch, count);
    float *dp = be->alloc(sizeof(float) * stride * count);
    float *dg = be->alloc(sizeof(float) * stride * count);
    be->upload(dp, params, sizeof(float) * stride * count);
    be->upload(dg, params, sizeof(float) * stride * count); /* poison in the gaps */
    trainer_workspace_load(&ws, x, y, (int)rows);
    double *loss = malloc(sizeof(double) * count);
    int *correct = malloc(sizeof(int) * count);
    ck_assert(loss && correct);
    trainer_model_forward_group(&ws, dp, stride, count, batch);
    trainer_model_loss_group(&ws, count, batch, loss, correct);
    trainer_model_backward_group(&ws, dp, dg, stride, count, batch);
    int last = m.n_layers - 1;
    float *logits = group_floats(rows * classes), *dlogits = group_floats(rows * classes);
    float *grads = group_floats(stride * count);
    be->download(logits, ws.act[last], sizeof(float) * rows * classes);
    be->download(dlogits, ws.dact[last], sizeof(float) * rows * classes);
    be->download(grads, dg, sizeof(float) * stride * count);

    /* each replica alone on ref */
    trainer_workspace_t wr;
    trainer_workspace_init(&wr, ref, &m, batch);
    float *rp = ref->alloc(sizeof(float) * n), *rg = ref->alloc(sizeof(float) * n);
    float *ref_z = group_floats((size_t)batch * classes),
          *ref_d = group_floats((size_t)batch * classes);
    float *ref_g = group_floats(n);
    char what[96];
    for (int r = 0; r < count; r++) {
        ref->upload(rp, params + r * stride, sizeof(float) * n);
        trainer_workspace_load(&wr, x + (size_t)r * batch * in, y + (size_t)r * batch, batch);
        double l;
        int c;
        trainer_model_forward(&wr, rp, batch);
        trainer_model_loss(&wr, batch, &l, &c);
        trainer_model_backward(&wr, rp, rg, batch);
        ref->download(ref_z, wr.act[last], sizeof(float) * batch * classes);
        ref->download(ref_d, wr.dact[last], sizeof(float) * batch * classes);
        ref->download(ref_g, rg, sizeof(float) * n);
        const char *arch = trainer_arch_name(cfg->arch);
        snprintf(what, sizeof what, "%s logits", arch);
        group_expect_close(what, r, logits + (size_t)r * batch * classes, ref_z,
                           (size_t)batch * classes, tol);
        snprintf(what, sizeof what, "%s dlogits", arch);
        group_expect_close(what, r, dlogits + (size_t)r * batch * classes, ref_d,
                           (size_t)batch * classes, tol);
        ck_assert_msg(loss_tol == 0.0 ? loss[r] == l : fabs(loss[r] - l) <= loss_tol * fabs(l),
                      "%s replica %d loss: group %.12g, single %.12g", arch, r, loss[r], l);
        ck_assert_msg(correct[r] == c, "%s replica %d: %d right in the group, %d alone", arch, r,
                      correct[r], c);
        double largest = 0.0;
        for (size_t i = 0; i < n; i++)
            largest = fmax(largest, fabs((double)ref_g[i]));
        ck_assert_msg(largest > 0.0, "%s replica %d: zero gradient", arch, r);
        snprintf(what, sizeof what, "%s gradient", arch);
        group_expect_close(what, r, grads + r * stride, ref_g, n, tol);
        for (size_t i = n; i < stride; i++)
            ck_assert_msg(grads[r * stride + i] == GROUP_POISON,
                          "%s replica %d: the gap after its gradient was written at %zu", arch, r,
                          i - n);
    }
    /* distinct replicas: the comparison is not one replica's result copied */
    if (count > 1)
        ck_assert_msg(memcmp(grads, grads + stride, sizeof(float) * n) != 0,
                      "replicas 0 and 1 have the same gradient");

    ref->free(rp);
    ref->free(rg);
    trainer_workspace_free(&wr);
    be->free(dp);
    be->free(dg);
    trainer_workspace_free(&ws);
    free(params);
    free(x);
    free(y);
    free(loss);
    free(correct);
    free(logits);
    free(dlogits);
    free(grads);
    free(ref_z);
    free(ref_d);
    free(ref_g);
}

/* The architectures checked: logreg, mlp (two hidden layers), cnn on one channel, cnn on
 * three channels (its first layer permutes the input). */
static trainer_model_config_t group_config(int which)
{
    trainer_model_config_t cfg;
    trainer_model_config_default(&cfg, which == 0   ? TRAINER_ARCH_LOGREG
                                       : which == 1 ? TRAINER_ARCH_MLP
                                                    : TRAINER_ARCH_CNN);
    cfg.in_h = cfg.in_w = 14;
    cfg.hidden[0] = 24;
    cfg.hidden[1] = 16;
    cfg.kernel = 3;
    cfg.conv[0] = 4;
    cfg.conv[1] = 6;
    cfg.fc = 10;
    if (which == 3)
        cfg.in_channels = 3;
    return cfg;
}

#endif
