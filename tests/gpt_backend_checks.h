/* The transformer's backend ops (model.arch = gpt) and whole gpt training steps of one backend
 * against the CPU backend, the oracle: used by test_cuda. Each comparison states
 * its tolerance, relative to the largest |value| of the tensor compared; the ops that add in
 * cpu.c's order (tokens_split, embed_forward, embed_backward) are compared bit for bit. */
#ifndef DTSIM_TESTS_GPT_BACKEND_CHECKS_H
#define DTSIM_TESTS_GPT_BACKEND_CHECKS_H

#include "backend_checks.h"
#include "data.h"
#include "gpt.h"
#include "model.h"
#include "train.h"

/* max |got - ref| <= tol * max(max |ref|, floor) over one tensor, every value finite. An index
 * or layout bug gives differences of the order of the values; rounding, a small fraction. */
static void gpt_expect_close(const char *what, const float *got, const float *ref, size_t n,
                             double tol, double floor)
{
    double max_ref = 0.0, max_err = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(isfinite(got[i]), "%s[%zu] = %g", what, i, got[i]);
        double err = fabs((double)got[i] - ref[i]);
        max_ref = fmax(max_ref, fabs((double)ref[i]));
        if (err > max_err) {
            max_err = err;
            worst = i;
        }
    }
    ck_assert_msg(max_err <= tol * fmax(max_ref, floor),
                  "%s: differs from the CPU by %.3g at [%zu] (%.9g vs %.9g), more than %g x "
                  "the largest |value| %.3g",
                  what, max_err, worst, n ? got[worst] : 0.0f, n ? ref[worst] : 0.0f, tol, max_ref);
}

/* The device result against the CPU's, downloaded first. */
static void gpt_expect_dev_close(const trainer_backend_t *be, const char *what, const float *dev,
                                 const float *ref, size_t n, double tol)
{
    float *got = download_floats(be, dev, n);
    gpt_expect_close(what, got, ref, n, tol, 0.0);
    free(got);
}

static void gpt_expect_dev_same(const trainer_backend_t *be, const char *what, const void *dev,
                                const void *ref, size_t bytes)
{
    unsigned char *got = malloc(bytes ? bytes : 1);
    ck_assert_ptr_nonnull(got);
    be->download(got, dev, bytes);
    size_t i = 0;
    while (i < bytes && got[i] == ((const unsigned char *)ref)[i])
        i++;
    ck_assert_msg(i == bytes,
                  "%s: byte %zu of %zu differs from the CPU's (expected the same "
                  "bits: the op adds in cpu.c's order)",
                  what, i, bytes);
    free(got);
}

static float *gpt_random(size_t n, trainer_rng_t *r, float lo, float hi)
{
    float *p = host_floats(n);
    fill_uniform(p, n, r, lo, hi);
    return p;
}

/* Every gpt op of `be` on one shape against cpu.c's: batch B, seq T, width C, NH heads.
 * Tolerances: layer norm forward, GELU and attention forward 1e-5 (float sums of at most C or T
 * terms in another order, tanhf and expf against cpu.c's tanh and glibc's expf: ~1e-6
 * expected); the backward passes 1e-4 (the same, through the softmax's and the norm's
 * subtractions of means). */
static void gpt_check_ops(const trainer_backend_t *be, int B, int T, int C, int NH, uint64_t seed)
{
    const trainer_backend_t *cpu = trainer_backend_cpu();
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 0);
    size_t BT = (size_t)B * T, n = BT * C, V = 256;
    char what[96];

    /* tokens_split: windows of T + 1 byte ids stored as floats */
    float *x = host_floats((size_t)B * (T + 1));
    for (size_t i = 0; i < (size_t)B * (T + 1); i++)
        x[i] = (float)trainer_rng_below(&r, V);
    float *dx_ = dev_floats(be, x, (size_t)B * (T + 1));
    int32_t *tok = malloc(sizeof(int32_t) * BT), *dtok = be->alloc(sizeof(int32_t) * BT);
    uint8_t *tar = malloc(BT), *dtar = be->alloc(BT);
    ck_assert_ptr_nonnull(tok);
    ck_assert_ptr_nonnull(tar);
    cpu->tokens_split(tok, tar, x, B, T);
    be->tokens_split(dtok, dtar, dx_, B, T);
    gpt_expect_dev_same(be, "tokens_split tokens", dtok, tok, sizeof(int32_t) * BT);
    gpt_expect_dev_same(be, "tokens_split targets", dtar, tar, BT);

    /* embeddings: forward, then backward onto a dwte that holds the output layer's part and
     * a dwpe of garbage (overwritten) */
    float *wte = gpt_random(V * C, &r, -1, 1), *wpe = gpt_random((size_t)T * C, &r, -1, 1);
    float *dwte = dev_floats(be, wte, V * C), *dwpe = dev_floats(be, wpe, (size_t)T * C);
    float *emb = host_floats(n), *demb = dev_floats(be, NULL, n);
    cpu->embed_forward(emb, tok, wte, wpe, B, T, C);
    be->embed_forward(demb, dtok, dwte, dwpe, B, T, C);
    gpt_expect_dev_same(be, "embed_forward", demb, emb, sizeof(float) * n);
    float *dout = gpt_random(n, &r, -1, 1), *ddout = dev_floats(be, dout, n);
    cpu->embed_backward(wte, wpe, dout, tok, B, T, C);
    be->embed_backward(dwte, dwpe, ddout, dtok, B, T, C);
    gpt_expect_dev_same(be, "embed_backward dwte", dwte, wte, sizeof(float) * V * C);
    gpt_expect_dev_same(be, "embed_backward dwpe", dwpe, wpe, sizeof(float) * T * C);

    /* layer norm: rows with their own offset and spread, so that mean and variance matter */
    float *xn = host_floats(n);
    for (size_t i = 0; i < BT; i++) {
        float off = (float)(4.0 * trainer_rng_uniform(&r) - 2.0);
        float spread = (float)(0.2 + 2.0 * trainer_rng_uniform(&r));
        for (int j = 0; j < C; j++)
            xn[i * C + j] = off + spread * (float)(2.0 * trainer_rng_uniform(&r) - 1.0);
    }
    float *w = gpt_random(C, &r, 0.5f, 1.5f), *b = gpt_random(C, &r, -0.5f, 0.5f);
    float *dxn = dev_floats(be, xn, n), *dw_ = dev_floats(be, w, C), *db_ = dev_floats(be, b, C);
    float *ln = host_floats(n), *mean = host_floats(BT), *rstd = host_floats(BT);
    float *dln = dev_floats(be, NULL, n), *dmean = dev_floats(be, NULL, BT);
    float *drstd = dev_floats(be, NULL, BT);
    cpu->layernorm_forward(ln, mean, rstd, xn, w, b, (int)BT, C);
    be->layernorm_forward(dln, dmean, drstd, dxn, dw_, db_, (int)BT, C);
    snprintf(what, sizeof what, "layernorm_forward (%zu, %d)", BT, C);
    gpt_expect_dev_close(be, what, dln, ln, n, 1e-5);
    gpt_expect_dev_close(be, "layernorm_forward mean", dmean, mean, BT, 1e-5);
    gpt_expect_dev_close(be, "layernorm_forward rstd", drstd, rstd, BT, 1e-5);
    for (int acc = 0; acc < 2; acc++) {
        /* dx starts at other values: overwritten (acc 0) or added to (acc 1) */
        float *g = gpt_random(n, &r, -1, 1), *dg = dev_floats(be, g, n);
        float *gw = gpt_random(C, &r, -1, 1), *gb = gpt_random(C, &r, -1, 1);
        float *dgw = dev_floats(be, gw, C), *dgb = dev_floats(be, gb, C);
        cpu->layernorm_backward(g, gw, gb, dout, xn, w, mean, rstd, (int)BT, C, acc);
        be->layernorm_backward(dg, dgw, dgb, ddout, dxn, dw_, dmean, drstd, (int)BT, C, acc);
        snprintf(what, sizeof what, "layernorm_backward dx (accumulate %d)", acc);
        gpt_expect_dev_close(be, what, dg, g, n, 1e-4);
        gpt_expect_dev_close(be, "layernorm_backward dw", dgw, gw, C, 1e-4);
        gpt_expect_dev_close(be, "layernorm_backward db", dgb, gb, C, 1e-4);
        free(g), free(gw), free(gb);
        be->free(dg), be->free(dgw), be->free(dgb);
    }

    /* GELU over [-6, 6] (its tails and its bend), in place as gpt.c calls the backward */
    size_t ng = 4 * n;
    float *u = gpt_random(ng, &r, -6, 6), *du = dev_floats(be, u, ng);
    float *y = host_floats(ng), *dy = dev_floats(be, NULL, ng);
    cpu->gelu_forward(y, u, ng);
    be->gelu_forward(dy, du, ng);
    gpt_expect_dev_close(be, "gelu_forward", dy, y, ng, 1e-5);
    float *gg = gpt_random(ng, &r, -1, 1), *dgg = dev_floats(be, gg, ng);
    cpu->gelu_backward(gg, gg, u, ng);
    be->gelu_backward(dgg, dgg, du, ng);
    gpt_expect_dev_close(be, "gelu_backward", dgg, gg, ng, 1e-5);

    /* causal attention: qkv (B, T, 3C); the CPU's scratch is T x T */
    size_t nq = 3 * n, na = (size_t)B * NH * T * T;
    float *qkv = gpt_random(nq, &r, -2, 2), *dqkv_in = dev_floats(be, qkv, nq);
    float *att = host_floats(na), *datt = dev_floats(be, NULL, na);
    float *out = host_floats(n), *dattout = dev_floats(be, NULL, n);
    cpu->attention_forward(out, att, qkv, B, T, C, NH);
    be->attention_forward(dattout, datt, dqkv_in, B, T, C, NH);
    snprintf(what, sizeof what, "attention_forward probabilities (B %d, T %d, C %d, NH %d)", B, T,
             C, NH);
    gpt_expect_dev_close(be, what, datt, att, na, 1e-5);
    gpt_expect_dev_close(be, "attention_forward out", dattout, out, n, 1e-5);
    float *scratch = host_floats((size_t)T * T), *dscratch = dev_floats(be, NULL, (size_t)T * T);
    float *gq = gpt_random(nq, &r, -1, 1), *dgq = dev_floats(be, gq, nq); /* overwritten */
    cpu->attention_backward(gq, scratch, dout, qkv, att, B, T, C, NH);
    be->attention_backward(dgq, dscratch, ddout, dqkv_in, datt, B, T, C, NH);
    gpt_expect_dev_close(be, "attention_backward dqkv", dgq, gq, nq, 1e-4);

    free(x), free(tok), free(tar), free(wte), free(wpe), free(emb), free(dout), free(xn);
    free(w), free(b), free(ln), free(mean), free(rstd), free(u), free(y), free(gg), free(qkv);
    free(att), free(out), free(scratch), free(gq);
    void *devs[] = {dx_,   dtok,  dtar, dwte, dwpe, demb,    ddout, dxn,     dw_,      db_, dln,
                    dmean, drstd, du,   dy,   dgg,  dqkv_in, datt,  dattout, dscratch, dgq};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
        be->free(devs[i]);
}

/* The tiny gpt of the model checks (2 layers, hidden 16, 2 heads, seq 8, bytes) and the
 * windows of a short text. */
static void gpt_check_setup(trainer_model_t *m, trainer_dataset_t *ds)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_GPT);
    c.n_hidden = 1;
    c.hidden[0] = 16;
    c.layers = 2;
    c.heads = 2;
    c.seq = 8;
    c.classes = 256;
    c.in_channels = c.in_h = 1;
    c.in_w = c.seq + 1;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_model_build(m, &c, &err) == DT_OK, "gpt: %s", err.msg);
    static const char text[] =
        "It was the best of times, it was the worst of times, it was the age of wisdom, it "
        "was the age of foolishness, it was the epoch of belief, it was the epoch of "
        "incredulity, it was the season of Light, it was the season of Darkness.";
    ck_assert_int_eq(trainer_gpt_windows(ds, (const unsigned char *)text, sizeof text - 1, 8, &err),
                     DT_OK);
}

/* The layers of the models these checks build, at most. */
#define GPT_CHECK_MAX_LAYERS 4

/* The gpt's tensors, in layout order: offsets, then n_params at the end; returns the count. */
static int gpt_tensor_bounds(const trainer_model_t *m, size_t *at)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    int k = 0;
    ck_assert_int_le(g->L, GPT_CHECK_MAX_LAYERS);
    at[k++] = g->wte;
    at[k++] = g->wpe;
    for (int l = 0; l < g->L; l++) {
        trainer_gpt_block_t b = trainer_gpt_block(g, l);
        size_t f[] = {b.ln1w, b.ln1b, b.qkvw, b.qkvb, b.attprojw, b.attprojb,
                      b.ln2w, b.ln2b, b.fcw,  b.fcb,  b.fcprojw,  b.fcprojb};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            at[k++] = f[i];
    }
    at[k++] = g->lnfw;
    at[k++] = g->lnfb;
    at[k] = m->n_params;
    for (int i = 0; i < k; i++)
        ck_assert_msg(at[i] < at[i + 1], "gpt layout: tensor %d out of order", i);
    return k;
}

/* Each tensor of two flat buffers within tol of the larger of its own largest |value| and
 * 1e-3 of the whole buffer's (a tensor whose gradient is near 0 is held to the others'
 * scale). */
static void gpt_expect_params_close(const char *what, const trainer_model_t *m, const float *got,
                                    const float *ref, double tol)
{
    size_t at[5 + 12 * GPT_CHECK_MAX_LAYERS];
    int k = gpt_tensor_bounds(m, at);
    double all = 0.0;
    for (size_t i = 0; i < m->n_params; i++)
        all = fmax(all, fabs((double)ref[i]));
    ck_assert_msg(all > 0.0, "%s: all zero (the comparison would prove nothing)", what);
    char name[128];
    for (int i = 0; i < k; i++) {
        snprintf(name, sizeof name, "%s, tensor %d of %d (offset %zu)", what, i, k, at[i]);
        gpt_expect_close(name, got + at[i], ref + at[i], at[i + 1] - at[i], tol, 1e-3 * all);
    }
}

/* One forward, loss and backward of `be` and of the CPU from the same parameters, then five
 * SGD steps (momentum 0.9 and weight decay, or plain SGD, whose update gpt.c runs after its
 * backward) and an evaluation. Tolerances: logits 1e-5 and the loss 1e-5 of itself (a few
 * roundings per op through 2 blocks); gradients and the parameters after 5 steps 1e-4
 * (sums over up to 64 tokens in another order). */
static void gpt_check_model(const trainer_backend_t *be, int momentum)
{
    const trainer_backend_t *cpu = trainer_backend_cpu();
    enum { GB = 6 };
    trainer_model_t m;
    trainer_dataset_t ds;
    gpt_check_setup(&m, &ds);
    const trainer_optim_t sgd =
        momentum ? (trainer_optim_t){.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-3f}
                 : (trainer_optim_t){.lr = 0.3f, .momentum = 0.0f, .weight_decay = 0.0f};
    trainer_learner_t lc, lg;
    trainer_learner_init(&lc, cpu, &m, &sgd, GB, 71);
    trainer_learner_init(&lg, be, &m, &sgd, GB, 71);
    uint32_t idx[GB];
    for (int i = 0; i < GB; i++)
        idx[i] = (uint32_t)((i * 37 + 5) % (int)ds.n);
    double loss[2];
    int right[2];
    trainer_learner_t *ls[2] = {&lc, &lg};
    for (int s = 0; s < 2; s++) {
        trainer_learner_load(ls[s], &ds, idx, GB);
        trainer_model_forward(&ls[s]->ws, ls[s]->params, GB);
        trainer_model_loss(&ls[s]->ws, GB, &loss[s], &right[s]);
        trainer_model_backward(&ls[s]->ws, ls[s]->params, ls[s]->grads, GB);
    }
    size_t nl = (size_t)GB * 8 * 256;
    float *zc = download_floats(cpu, trainer_gpt_logits(&lc.ws), nl);
    float *zg = download_floats(be, trainer_gpt_logits(&lg.ws), nl);
    gpt_expect_close("gpt logits", zg, zc, nl, 1e-5, 0.0);
    ck_assert_msg(fabs(loss[1] - loss[0]) <= 1e-5 * fabs(loss[0]), "gpt loss: %.12g, CPU %.12g",
                  loss[1], loss[0]);
    ck_assert_msg(right[1] == right[0], "gpt: %d right, %d on the CPU", right[1], right[0]);
    float *gc = download_floats(cpu, lc.grads, m.n_params);
    float *gg = download_floats(be, lg.grads, m.n_params);
    gpt_expect_params_close("gpt gradient", &m, gg, gc, 1e-4);

    for (int step = 0; step < 5; step++) {
        for (int i = 0; i < GB; i++)
            idx[i] = (uint32_t)((step * GB + i * 11) % (int)ds.n);
        double a = trainer_learner_step(&lc, &ds, idx, GB);
        double g = trainer_learner_step(&lg, &ds, idx, GB);
        ck_assert_msg(fabs(g - a) <= 1e-5 * fabs(a), "gpt step %d loss: %.12g, CPU %.12g", step, g,
                      a);
    }
    float *wc = download_floats(cpu, lc.params, m.n_params);
    float *wg = download_floats(be, lg.params, m.n_params);
    float *w0 = host_floats(m.n_params);
    trainer_model_init_params(&m, w0, 71);
    double moved = 0.0;
    for (size_t i = 0; i < m.n_params; i++)
        moved = fmax(moved, fabs((double)wc[i] - w0[i]));
    ck_assert_msg(moved > 1e-3, "gpt: 5 steps moved no weight by more than %g", moved);
    gpt_expect_params_close(momentum ? "gpt after 5 momentum steps" : "gpt after 5 steps", &m, wg,
                            wc, 1e-4);
    trainer_eval_t ec = trainer_evaluate(&lc, lc.params, &ds);
    trainer_eval_t eg = trainer_evaluate(&lg, lg.params, &ds);
    ck_assert_msg(fabs(eg.loss - ec.loss) <= 1e-5 * fabs(ec.loss),
                  "gpt evaluation loss: %.12g, CPU %.12g", eg.loss, ec.loss);
    ck_assert_msg(fabs(eg.accuracy - ec.accuracy) <= 1.0 / ((double)ds.n * 8) + 1e-12,
                  "gpt evaluation accuracy: %g, CPU %g", eg.accuracy, ec.accuracy);
    free(zc), free(zg), free(gc), free(gg), free(wc), free(wg), free(w0);
    trainer_learner_free(&lc);
    trainer_learner_free(&lg);
    trainer_dataset_free(&ds);
}

#endif
