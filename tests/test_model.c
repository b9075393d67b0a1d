/* Models over the flat parameter buffer: analytic gradients against central finite
 * differences for every architecture, forward passes against hand-computed numbers and a
 * direct (loop) convolution, the parameter layout and FLOP counts against hand formulas,
 * seeded initialisation, and the rejection of bad configurations. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "model.h"
#include "rng.h"
#include "group_checks.h"

/* ---- helpers --------------------------------------------------------------------------- */

static float *xmalloc_floats(size_t n)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    ck_assert_ptr_nonnull(p);
    return p;
}

static void build_ok(trainer_model_t *m, const trainer_model_config_t *cfg)
{
    dt_err_t err = {{0}};
    dt_status st = trainer_model_build(m, cfg, &err);
    ck_assert_msg(st == DT_OK, "build failed: %s", err.msg);
}

static trainer_model_config_t cfg_logreg(int in, int classes)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_LOGREG);
    c.in_channels = 1;
    c.in_h = 1;
    c.in_w = in;
    c.classes = classes;
    return c;
}

static trainer_model_config_t cfg_mlp(int in, const int *hidden, int n_hidden, int classes)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_MLP);
    c.in_channels = 1;
    c.in_h = 1;
    c.in_w = in;
    c.classes = classes;
    c.n_hidden = n_hidden;
    for (int i = 0; i < n_hidden; i++)
        c.hidden[i] = hidden[i];
    return c;
}

static trainer_model_config_t cfg_cnn(int ch, int h, int w, int k, int c1, int c2, int fc,
                                      int classes)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_CNN);
    c.in_channels = ch;
    c.in_h = h;
    c.in_w = w;
    c.kernel = k;
    c.conv[0] = c1;
    c.conv[1] = c2;
    c.fc = fc;
    c.classes = classes;
    return c;
}

/* A random batch: x (batch, in_size) standard normal, labels uniform. */
static void random_batch(float *x, uint8_t *y, size_t in_size, int batch, int classes,
                         uint64_t seed)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 77);
    for (size_t i = 0; i < (size_t)batch * in_size; i++)
        x[i] = (float)trainer_rng_normal(&r);
    for (int b = 0; b < batch; b++)
        y[b] = (uint8_t)trainer_rng_below(&r, (uint64_t)classes);
}

/* ---- 1. finite-difference gradient checks ---------------------------------------------- */

/* Everything one gradient check needs: the model, its workspace and dev buffers. */
typedef struct gradcheck {
    const trainer_backend_t *be;
    trainer_model_t m;
    trainer_workspace_t ws;
    int batch;
    float *params;    /* dev */
    float *grads;     /* dev */
    uint8_t *pattern; /* host: ReLU signs and max-pool winners of one forward pass */
    size_t pattern_len;
} gradcheck_t;

/* A ReLU feeding a max pool: the pair is max(relu(window)) = relu(max(window)), whose pieces
 * are fixed by the winner where the pooled value is positive and by its sign; the signs of
 * the losers do not matter (and flip often in a conv layer with thousands of outputs). */
static int relu_before_pool(const trainer_model_t *m, int i)
{
    return i + 1 < m->n_layers && m->layers[i + 1].kind == TRAINER_LAYER_MAXPOOL;
}

static size_t pattern_size(const trainer_model_t *m, int batch)
{
    size_t n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const trainer_layer_t *l = &m->layers[i];
        if (l->kind == TRAINER_LAYER_RELU && !relu_before_pool(m, i))
            n += (size_t)batch * l->out_size;
        else if (l->kind == TRAINER_LAYER_MAXPOOL)
            n += (size_t)batch * l->out_size * sizeof(int32_t);
    }
    return n;
}

/* Mean loss of the loaded batch at the current params; fills `pattern` with what decides
 * the piecewise-linear parts: ReLU output > 0, and for a max pool the winner where the
 * pooled value is positive (-1 where it is not; with a ReLU before it, the gradient there
 * is 0 whichever zero wins). Two points with the same pattern lie on one smooth piece. */
static double gc_loss(gradcheck_t *g, uint8_t *pattern)
{
    double loss_sum;
    int correct;
    trainer_model_forward(&g->ws, g->params, g->batch);
    trainer_model_loss(&g->ws, g->batch, &loss_sum, &correct);
    size_t off = 0;
    for (int i = 0; i < g->m.n_layers; i++) {
        const trainer_layer_t *l = &g->m.layers[i];
        size_t n = (size_t)g->batch * l->out_size;
        if (l->kind == TRAINER_LAYER_RELU && !relu_before_pool(&g->m, i)) {
            float *a = xmalloc_floats(n);
            g->be->download(a, g->ws.act[i], sizeof(float) * n);
            for (size_t e = 0; e < n; e++)
                pattern[off + e] = a[e] > 0.0f;
            free(a);
            off += n;
        } else if (l->kind == TRAINER_LAYER_MAXPOOL) {
            float *a = xmalloc_floats(n);
            int32_t *am = malloc(sizeof(int32_t) * n);
            ck_assert_ptr_nonnull(am);
            g->be->download(a, g->ws.act[i], sizeof(float) * n);
            g->be->download(am, g->ws.argmax[i], sizeof(int32_t) * n);
            for (size_t e = 0; e < n; e++)
                if (!(a[e] > 0.0f))
                    am[e] = -1;
            memcpy(pattern + off, am, sizeof(int32_t) * n);
            free(a);
            free(am);
            off += n * sizeof(int32_t);
        }
    }
    return loss_sum / g->batch;
}

typedef struct gc_stats {
    int checked, retried, skipped, failed;
    double max_abs_err;       /* over checked parameters at the full step */
    double max_abs_err_small; /* over those checked at a smaller step */
    double max_rel_err;       /* |fd - an| / max(|fd|, |an|) over those with max >= 1e-3 */
    double max_grad;          /* largest |an| seen, to show the check is not vacuous */
    int tensors_short;        /* tensors with fewer than 3/4 of their samples checked */
} gc_stats_t;

/* The tolerance every gradient check uses (float32 model, double loss, central step h):
 * |fd - an| <= RTOL * max(|fd|, |an|) + ATOL * (EPS / h).
 * The truncation error is O(h^2); the float32 rounding of the logits (about 1e-7 of the
 * loss) divided by 2h is about 5e-5 at h = 1e-3 in the worst case, and measured errors
 * (printed by the suite) stay below 2e-5. One activation close to a kink makes the +-h
 * points straddle it for every parameter upstream of it, so a parameter whose two points
 * differ in pattern is retried at h / 4 and h / 16 (the noise floor, hence ATOL, grows as
 * 1/h) before it is counted as skipped. */
#define GC_EPS 1e-3f
#define GC_RTOL 1e-2
#define GC_ATOL 5e-5
#define GC_TRIES 3

/* Checks parameter j: central difference of the mean loss against an[j]. Returns 1 if it
 * was compared, 0 if skipped. */
static int gc_check_one(gradcheck_t *g, const float *an, size_t j, uint8_t *pat_plus,
                        uint8_t *pat_minus, gc_stats_t *st, const char *what)
{
    float orig;
    g->be->download(&orig, g->params + j, sizeof(float));
    float h = GC_EPS;
    double lp = 0.0, lm = 0.0;
    float plus = orig, minus = orig;
    int try = 0;
    for (; try < GC_TRIES; try++, h /= 4.0f) {
        plus = orig + h;
        minus = orig - h;
        g->be->upload(g->params + j, &plus, sizeof(float));
        lp = gc_loss(g, pat_plus);
        g->be->upload(g->params + j, &minus, sizeof(float));
        lm = gc_loss(g, pat_minus);
        if (memcmp(pat_plus, pat_minus, g->pattern_len) == 0)
            break;
    }
    g->be->upload(g->params + j, &orig, sizeof(float));
    if (try == GC_TRIES) {
        st->skipped++; /* a ReLU kink or a max-pool tie lies between the two points */
        return 0;
    }
    double fd = (lp - lm) / ((double)plus - (double)minus); /* the step actually taken */
    double a = an[j];
    double err = fabs(fd - a), big = fmax(fabs(fd), fabs(a));
    st->checked++;
    if (try > 0) {
        st->retried++;
        st->max_abs_err_small = fmax(st->max_abs_err_small, err);
    } else {
        st->max_abs_err = fmax(st->max_abs_err, err);
        if (big >= 1e-3 && err / big > st->max_rel_err)
            st->max_rel_err = err / big;
    }
    if (fabs(a) > st->max_grad)
        st->max_grad = fabs(a);
    if (err > GC_RTOL * big + GC_ATOL * (GC_EPS / h)) {
        if (st->failed < 10)
            fprintf(stderr,
                    "gradcheck %s: param %zu: analytic %.6g, finite difference %.6g "
                    "(step %g)\n",
                    what, j, a, fd, h);
        st->failed++;
    }
    return 1;
}

/* Checks every parameter of tensors up to 60 elements, else 40 stratified samples (one at a
 * random position in each of 40 equal slices), of every layer's weights and biases. */
static gc_stats_t gradcheck_model(const trainer_model_config_t *cfg, int batch, uint64_t seed,
                                  const char *what)
{
    gradcheck_t g;
    memset(&g, 0, sizeof g);
    g.be = trainer_backend_cpu();
    g.batch = batch;
    build_ok(&g.m, cfg);
    trainer_workspace_init(&g.ws, g.be, &g.m, batch + 2); /* batch < max_batch on purpose */

    size_t np = g.m.n_params;
    float *host = xmalloc_floats(np);
    trainer_model_init_params(&g.m, host, seed);
    g.params = g.be->alloc(sizeof(float) * np);
    g.be->upload(g.params, host, sizeof(float) * np);
    for (size_t i = 0; i < np; i++)
        host[i] = 1e3f; /* backward must overwrite every gradient */
    g.grads = g.be->alloc(sizeof(float) * np);
    g.be->upload(g.grads, host, sizeof(float) * np);

    float *x = xmalloc_floats((size_t)batch * g.m.in_size);
    uint8_t *y = malloc((size_t)batch);
    ck_assert_ptr_nonnull(y);
    random_batch(x, y, g.m.in_size, batch, g.m.classes, seed);
    trainer_workspace_load(&g.ws, x, y, batch);

    g.pattern_len = pattern_size(&g.m, batch);
    uint8_t *pp = malloc(g.pattern_len + 1), *pm = malloc(g.pattern_len + 1);
    ck_assert_ptr_nonnull(pp);
    ck_assert_ptr_nonnull(pm);
    gc_loss(&g, pp);
    trainer_model_backward(&g.ws, g.params, g.grads, batch);
    float *an = xmalloc_floats(np);
    g.be->download(an, g.grads, sizeof(float) * np);
    for (size_t i = 0; i < np; i++)
        ck_assert_msg(isfinite(an[i]) && fabsf(an[i]) < 1e2f,
                      "%s: gradient %zu = %g not written by backward", what, i, an[i]);

    gc_stats_t st = {0};
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 78);
    for (int li = 0; li < g.m.n_layers; li++) {
        const trainer_layer_t *l = &g.m.layers[li];
        size_t offs[2] = {l->w_off, l->b_off}, lens[2] = {l->w_len, l->b_len};
        for (int t = 0; t < 2; t++) {
            if (!lens[t])
                continue;
            int tried = 0, ok = 0;
            if (lens[t] <= 60) {
                for (size_t e = 0; e < lens[t]; e++, tried++)
                    ok += gc_check_one(&g, an, offs[t] + e, pp, pm, &st, what);
            } else {
                for (size_t s = 0; s < 40; s++, tried++) {
                    size_t lo = s * lens[t] / 40, hi = (s + 1) * lens[t] / 40;
                    size_t e = lo + (size_t)trainer_rng_below(&r, hi - lo);
                    ok += gc_check_one(&g, an, offs[t] + e, pp, pm, &st, what);
                }
            }
            if (ok * 4 < tried * 3) {
                fprintf(stderr, "gradcheck %s: layer %d %s: %d of %d checked\n", what, li,
                        t ? "bias" : "weights", ok, tried);
                st.tensors_short++;
            }
        }
    }
    printf("gradcheck %-18s checked %4d (%2d at a smaller step) skipped %2d  max |fd-an| "
           "%.2e (%.2e at smaller steps)  max rel %.2e  max |grad| %.2e\n",
           what, st.checked, st.retried, st.skipped, st.max_abs_err, st.max_abs_err_small,
           st.max_rel_err, st.max_grad);
    fflush(stdout);

    free(pp);
    free(pm);
    free(an);
    free(x);
    free(y);
    free(host);
    g.be->free(g.params);
    g.be->free(g.grads);
    trainer_workspace_free(&g.ws);
    return st;
}

static void expect_gradcheck(const trainer_model_config_t *cfg, int batch, uint64_t seed,
                             const char *what)
{
    gc_stats_t st = gradcheck_model(cfg, batch, seed, what);
    ck_assert_msg(st.failed == 0, "%s: %d of %d parameters disagree with finite differences", what,
                  st.failed, st.checked);
    /* even at h / 16 a kink is crossed only by an activation within about 1e-4 of it */
    ck_assert_msg(st.skipped * 20 <= st.checked, "%s: %d skipped of %d checked", what, st.skipped,
                  st.checked);
    ck_assert_msg(st.tensors_short == 0, "%s: %d tensors mostly unchecked", what, st.tensors_short);
    ck_assert_msg(st.checked >= 30, "%s: only %d parameters checked", what, st.checked);
    ck_assert_msg(st.max_grad > 1e-2, "%s: gradients all tiny (max %g)", what, st.max_grad);
}

START_TEST(test_gradcheck_logreg)
{
    trainer_model_config_t c = cfg_logreg(12, 4);
    expect_gradcheck(&c, 5, 11, "logreg 12-4");
}
END_TEST

START_TEST(test_gradcheck_mlp)
{
    const int hidden[] = {7, 5};
    trainer_model_config_t c = cfg_mlp(12, hidden, 2, 4);
    expect_gradcheck(&c, 6, 12, "mlp 12-7-5-4");
}
END_TEST

START_TEST(test_gradcheck_mlp_wide)
{
    /* tensors larger than 60 elements: the stratified sample */
    const int hidden[] = {40, 30, 20};
    trainer_model_config_t c = cfg_mlp(50, hidden, 3, 5);
    expect_gradcheck(&c, 8, 13, "mlp 50-40-30-20-5");
}
END_TEST

START_TEST(test_gradcheck_cnn)
{
    /* 1x14x14, k 3: conv 12x12 -> pool 6x6 -> conv 4x4 -> pool 2x2 -> fc 6 -> 3 */
    trainer_model_config_t c = cfg_cnn(1, 14, 14, 3, 3, 4, 6, 3);
    expect_gradcheck(&c, 4, 14, "cnn 1x14x14 k3");
}
END_TEST

START_TEST(test_gradcheck_cnn_channels)
{
    /* 2 input channels (the input permute) and a non-square input, 2x10x14, k 3:
     * conv 8x12 -> pool 4x6 -> conv 2x4 -> pool 1x2 */
    trainer_model_config_t c = cfg_cnn(2, 10, 14, 3, 3, 4, 6, 3);
    expect_gradcheck(&c, 4, 15, "cnn 2x10x14 k3");
    /* k 5 on 3x16x20: conv 12x16 -> 6x8 -> conv 2x4 -> 1x2 */
    c = cfg_cnn(3, 16, 20, 5, 2, 3, 5, 4);
    expect_gradcheck(&c, 3, 16, "cnn 3x16x20 k5");
}
END_TEST

/* ---- 2. forward passes against hand numbers and a direct convolution ------------------- */

static void forward_logits(const trainer_model_t *m, const float *params, const float *x,
                           const uint8_t *y, int batch, int max_batch, float *logits,
                           double *loss_sum, int *correct)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_workspace_t ws;
    trainer_workspace_init(&ws, be, m, max_batch);
    float *dp = be->alloc(sizeof(float) * m->n_params);
    be->upload(dp, params, sizeof(float) * m->n_params);
    trainer_workspace_load(&ws, x, y, batch);
    trainer_model_forward(&ws, dp, batch);
    trainer_model_loss(&ws, batch, loss_sum, correct);
    be->download(logits, ws.act[m->n_layers - 1], sizeof(float) * (size_t)batch * m->classes);
    be->free(dp);
    trainer_workspace_free(&ws);
}

START_TEST(test_forward_logreg_hand)
{
    trainer_model_t m;
    trainer_model_config_t c = cfg_logreg(2, 2);
    build_ok(&m, &c);
    ck_assert_uint_eq(m.n_params, 6);
    /* W (2, 2) = [[1, 2], [3, -1]], b = [0.5, -0.5]
     * x0 = (1, -1), label 1: z = (1 - 2 + 0.5, 3 + 1 - 0.5) = (-0.5, 3.5),
     *   loss = log(e^-0.5 + e^3.5) - 3.5 = log(1 + e^-4) = 0.018149927917809738
     * x1 = (0.5, 2), label 0: z = (0.5 + 4 + 0.5, 1.5 - 2 - 0.5) = (5, -1),
     *   loss = log(1 + e^-6) = 0.0024756851377304495
     * both right; loss_sum = 0.020625613055540188 */
    const float params[6] = {1, 2, 3, -1, 0.5f, -0.5f};
    const float x[4] = {1, -1, 0.5f, 2};
    const uint8_t y[2] = {1, 0};
    float z[4];
    double loss;
    int correct;
    forward_logits(&m, params, x, y, 2, 2, z, &loss, &correct);
    const float ref[4] = {-0.5f, 3.5f, 5.0f, -1.0f};
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq_tol(z[i], ref[i], 1e-6f);
    ck_assert_double_eq_tol(loss, 0.020625613055540188, 1e-6);
    ck_assert_int_eq(correct, 2);
}
END_TEST

START_TEST(test_forward_mlp_hand)
{
    trainer_model_t m;
    const int hidden[] = {2};
    trainer_model_config_t c = cfg_mlp(2, hidden, 1, 2);
    build_ok(&m, &c);
    ck_assert_uint_eq(m.n_params, 12);
    /* W1 (2, 2) = [[1, -1], [-2, 1]], b1 = [0.5, -1]; W2 = [[1, 2], [-1, 0.5]], b2 = [0.25, 0]
     * x0 = (2, 1), label 0: h = relu(2 - 1 + 0.5, -4 + 1 - 1) = relu(1.5, -4) = (1.5, 0)
     *   z = (1.5 + 0.25, -1.5 + 0) = (1.75, -1.5), loss = log(1 + e^-3.25)
     *   = 0.038041371687783126, right
     * x1 = (-1, 1), label 1: h = relu(-1 - 1 + 0.5, 2 + 1 - 1) = relu(-1.5, 2) = (0, 2)
     *   z = (4 + 0.25, 1) = (4.25, 1), loss = log(1 + e^3.25) = 3.288041371687783, wrong
     * loss_sum = 3.326082743375566, one right */
    const float params[12] = {1, -1, -2, 1, 0.5f, -1, 1, 2, -1, 0.5f, 0.25f, 0};
    const float x[4] = {2, 1, -1, 1};
    const uint8_t y[2] = {0, 1};
    float z[4];
    double loss;
    int correct;
    forward_logits(&m, params, x, y, 2, 3, z, &loss, &correct);
    const float ref[4] = {1.75f, -1.5f, 4.25f, 1.0f};
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq_tol(z[i], ref[i], 1e-6f);
    ck_assert_double_eq_tol(loss, 3.326082743375566, 1e-6);
    ck_assert_int_eq(correct, 1);
}
END_TEST

/* Direct k x k valid convolution of one sample in double: in (cin, h, w) -> out (cout, oh, ow),
 * weights (cout, cin, k, k) as in PyTorch, then ReLU. */
static void ref_conv_relu(double *out, const double *in, const float *w, const float *b, int cin,
                          int h, int wd, int cout, int k)
{
    int oh = h - k + 1, ow = wd - k + 1;
    for (int o = 0; o < cout; o++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                double s = b[o];
                for (int c = 0; c < cin; c++)
                    for (int ki = 0; ki < k; ki++)
                        for (int kj = 0; kj < k; kj++)
                            s += (double)w[((o * cin + c) * k + ki) * k + kj] *
                                 in[(c * h + i + ki) * wd + j + kj];
                out[(o * oh + i) * ow + j] = s > 0.0 ? s : 0.0;
            }
}

/* 2x2 max pooling of (c, h, w) -> (c, h/2, w/2). */
static void ref_pool2(double *out, const double *in, int c, int h, int w)
{
    for (int p = 0; p < c; p++)
        for (int i = 0; i < h / 2; i++)
            for (int j = 0; j < w / 2; j++) {
                const double *q = in + ((size_t)p * h + 2 * i) * w + 2 * j;
                out[((size_t)p * (h / 2) + i) * (w / 2) + j] =
                    fmax(fmax(q[0], q[1]), fmax(q[w], q[w + 1]));
            }
}

/* Dense (out, in) of one sample, optional ReLU. */
static void ref_dense(double *out, const double *in, const float *w, const float *b, int nin,
                      int nout, int relu)
{
    for (int o = 0; o < nout; o++) {
        double s = b[o];
        for (int i = 0; i < nin; i++)
            s += (double)w[(size_t)o * nin + i] * in[i];
        out[o] = relu && s < 0.0 ? 0.0 : s;
    }
}

START_TEST(test_forward_cnn_direct)
{
    /* 2x10x14 input, k 3, conv 3 then 4, fc 6, 3 classes; batch 3 in a workspace for 5 */
    enum { CH = 2, H = 10, W = 14, K = 3, C1 = 3, C2 = 4, FC = 6, CL = 3, B = 3 };
    enum { H1 = H - K + 1, W1 = W - K + 1, P1H = H1 / 2, P1W = W1 / 2 };
    enum { H2 = P1H - K + 1, W2 = P1W - K + 1, P2H = H2 / 2, P2W = W2 / 2 };
    enum { FLAT = C2 * P2H * P2W };
    trainer_model_t m;
    trainer_model_config_t c = cfg_cnn(CH, H, W, K, C1, C2, FC, CL);
    build_ok(&m, &c);
    float *params = xmalloc_floats(m.n_params);
    trainer_model_init_params(&m, params, 21);
    float x[B * CH * H * W];
    uint8_t y[B];
    random_batch(x, y, (size_t)CH * H * W, B, CL, 22);
    float z[B * CL];
    double loss;
    int correct;
    forward_logits(&m, params, x, y, B, 5, z, &loss, &correct);

    /* the documented layout: conv1 w, b, conv2 w, b, fc w, b, out w, b, back to back */
    const float *w1 = params, *b1 = w1 + C1 * CH * K * K;
    const float *w2 = b1 + C1, *b2 = w2 + C2 * C1 * K * K;
    const float *w3 = b2 + C2, *b3 = w3 + FC * FLAT;
    const float *w4 = b3 + FC, *b4 = w4 + CL * FC;
    ck_assert_uint_eq((size_t)(b4 + CL - params), m.n_params);

    double ref_loss = 0.0, max_err = 0.0;
    int ref_correct = 0;
    for (int s = 0; s < B; s++) {
        double in[CH * H * W], a1[C1 * H1 * W1], p1[C1 * P1H * P1W];
        double a2[C2 * H2 * W2], p2[FLAT], f[FC], out[CL];
        for (int i = 0; i < CH * H * W; i++)
            in[i] = x[s * CH * H * W + i];
        ref_conv_relu(a1, in, w1, b1, CH, H, W, C1, K);
        ref_pool2(p1, a1, C1, H1, W1);
        ref_conv_relu(a2, p1, w2, b2, C1, P1H, P1W, C2, K);
        ref_pool2(p2, a2, C2, H2, W2); /* flattened (c, h, w) as PyTorch's view */
        ref_dense(f, p2, w3, b3, FLAT, FC, 1);
        ref_dense(out, f, w4, b4, FC, CL, 0);
        double zmax = out[0], se = 0.0;
        int best = 0;
        for (int k = 0; k < CL; k++) {
            double err = fabs(z[s * CL + k] - out[k]);
            max_err = fmax(max_err, err);
            /* float32 through four layers of at most 54-term sums, values O(1) */
            ck_assert_msg(err <= 1e-5 * (1.0 + fabs(out[k])),
                          "cnn logit [%d][%d] = %.8g, direct convolution gives %.8g", s, k,
                          z[s * CL + k], out[k]);
            if (out[k] > zmax) {
                zmax = out[k];
                best = k;
            }
        }
        for (int k = 0; k < CL; k++)
            se += exp(out[k] - zmax);
        ref_loss += zmax + log(se) - out[y[s]];
        ref_correct += best == y[s];
    }
    printf("cnn forward vs direct convolution: max |logit error| %.2e\n", max_err);
    ck_assert_double_eq_tol(loss, ref_loss, 1e-5);
    ck_assert_int_eq(correct, ref_correct);
    free(params);
}
END_TEST

/* ---- 3. parameter layout --------------------------------------------------------------- */

/* Offsets contiguous, non-overlapping, in layer order, weights before biases; layers
 * without parameters have none. */
static void check_layout(const trainer_model_t *m)
{
    size_t next = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const trainer_layer_t *l = &m->layers[i];
        int has = l->kind == TRAINER_LAYER_DENSE || l->kind == TRAINER_LAYER_CONV;
        if (!has) {
            ck_assert_msg(l->w_len == 0 && l->b_len == 0, "layer %d has parameters", i);
            continue;
        }
        ck_assert_msg(l->w_off == next, "layer %d weights at %zu, expected %zu", i, l->w_off, next);
        ck_assert_msg(l->b_off == l->w_off + l->w_len, "layer %d biases not after weights", i);
        ck_assert_uint_eq(l->b_len, (size_t)l->out_c);
        ck_assert_uint_eq(l->w_len % (size_t)l->out_c, 0);
        next = l->b_off + l->b_len;
    }
    ck_assert_uint_eq(next, m->n_params);
}

START_TEST(test_layout_mlp_default)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_MLP);
    trainer_model_t m;
    build_ok(&m, &c);
    ck_assert_uint_eq(m.n_params, 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
    ck_assert_uint_eq(m.n_params, 235146);
    ck_assert_uint_eq(m.in_size, 784);
    ck_assert_int_eq(m.classes, 10);
    ck_assert_int_eq(m.n_layers, 5); /* dense relu dense relu dense */
    check_layout(&m);
    ck_assert_uint_eq(m.layers[2].w_off, 784 * 256 + 256);
    ck_assert_uint_eq(m.layers[4].b_off, 235146 - 10);
}
END_TEST

START_TEST(test_layout_cnn_default)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_CNN);
    /* the defaults as `dtsim train --help` states them (sim/cli_train.c): conv 16,32 */
    ck_assert_int_eq(c.conv[0], 16);
    ck_assert_int_eq(c.conv[1], 32);
    ck_assert_int_eq(c.kernel, 5);
    ck_assert_int_eq(c.fc, 128);
    trainer_model_t m;
    build_ok(&m, &c);
    /* 28 -conv5-> 24 -pool-> 12 -conv5-> 8 -pool-> 4:
     * conv1 16*(1*25) + 16, conv2 32*(16*25) + 32, fc 128*(32*4*4) + 128, out 10*128 + 10 */
    size_t expect = 16 * 25 + 16 + 32 * 16 * 25 + 32 + 128 * 32 * 16 + 128 + 10 * 128 + 10;
    ck_assert_uint_eq(expect, 80202);
    ck_assert_uint_eq(m.n_params, expect);
    ck_assert_int_eq(m.n_layers, 10);
    check_layout(&m);
    const trainer_layer_t *l = m.layers;
    ck_assert(l[0].kind == TRAINER_LAYER_CONV && l[0].out_c == 16 && l[0].out_h == 24);
    ck_assert(l[2].kind == TRAINER_LAYER_MAXPOOL && l[2].out_h == 12 && l[2].out_w == 12);
    ck_assert(l[3].kind == TRAINER_LAYER_CONV && l[3].out_c == 32 && l[3].out_w == 8);
    ck_assert(l[5].kind == TRAINER_LAYER_MAXPOOL && l[5].out_h == 4);
    ck_assert(l[6].kind == TRAINER_LAYER_FLATTEN && l[6].out_size == 512);
    ck_assert(l[7].kind == TRAINER_LAYER_DENSE && l[7].in_c == 512 && l[7].out_c == 128);
    ck_assert(l[9].kind == TRAINER_LAYER_DENSE && l[9].out_c == 10);
}
END_TEST

START_TEST(test_layout_other)
{
    trainer_model_t m;
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_LOGREG);
    build_ok(&m, &c);
    ck_assert_uint_eq(m.n_params, 7850);
    check_layout(&m);
    /* 3x16x20 k5: 12x16 -> 6x8 -> 2x4 -> 1x2, conv1 fan-in 3*25, fc fan-in 3*1*2 */
    c = cfg_cnn(3, 16, 20, 5, 2, 3, 5, 4);
    build_ok(&m, &c);
    ck_assert_uint_eq(m.n_params, 2 * 75 + 2 + 3 * 50 + 3 + 5 * 6 + 5 + 4 * 5 + 4);
    check_layout(&m);
    const int hidden[] = {7, 5};
    c = cfg_mlp(12, hidden, 2, 4);
    build_ok(&m, &c);
    ck_assert_uint_eq(m.n_params, 12 * 7 + 7 + 7 * 5 + 5 + 5 * 4 + 4);
    check_layout(&m);
}
END_TEST

/* ---- 4. FLOP counts -------------------------------------------------------------------- */

/* Per the model.h convention: GEMM 2mnk; bias add/grad, ReLU and its mask, col2im
 * accumulation (one add per col element) 1 per element; max-pool forward 1 per input
 * element, backward 1 per output element (the scatter); softmax cross-entropy 5 per logit
 * forward, 2 backward; the first layer has no input gradient. */
START_TEST(test_flops_logreg)
{
    trainer_model_t m;
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_LOGREG);
    build_ok(&m, &c);
    trainer_flops_t f = trainer_model_flops(&m);
    double fwd = 2.0 * 784 * 10 + 10 + 5 * 10; /* product, bias, loss */
    double bwd = 2.0 * 784 * 10 + 10 + 2 * 10; /* weight gradient, bias gradient, loss */
    ck_assert_double_eq(fwd, 15740);
    ck_assert_double_eq(f.forward, fwd);
    ck_assert_double_eq(f.backward, bwd);
}
END_TEST

START_TEST(test_flops_mlp)
{
    trainer_model_t m;
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_MLP);
    build_ok(&m, &c);
    trainer_flops_t f = trainer_model_flops(&m);
    double fwd = (2.0 * 784 * 256 + 256) + 256       /* dense 1, relu */
                 + (2.0 * 256 * 128 + 128) + 128     /* dense 2, relu */
                 + (2.0 * 128 * 10 + 10)             /* dense 3 */
                 + 5 * 10;                           /* loss */
    double bwd = (2.0 * 784 * 256 + 256) + 256       /* dense 1: no input gradient */
                 + (2 * 2.0 * 256 * 128 + 128) + 128 /* dense 2: dW and dx, db, relu */
                 + (2 * 2.0 * 128 * 10 + 10)         /* dense 3 */
                 + 2 * 10;
    ck_assert_double_eq(f.forward, fwd);
    ck_assert_double_eq(f.backward, bwd);
}
END_TEST

START_TEST(test_flops_cnn)
{
    trainer_model_t m;
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_CNN);
    build_ok(&m, &c);
    trainer_flops_t f = trainer_model_flops(&m);
    /* conv1: 16 x (24*24) x (1*25); relu 16*576; pool reads 16*576, scatters 16*144
     * conv2: 32 x (8*8) x (16*25); relu 32*64; pool reads 32*64, scatters 32*16
     * fc 128 x 512, out 10 x 128 */
    double g1 = 2.0 * 16 * 576 * 25, g2 = 2.0 * 32 * 64 * 400;
    double g3 = 2.0 * 128 * 512, g4 = 2.0 * 10 * 128;
    double fwd = (g1 + 16 * 576) + 16 * 576 + 16 * 576               /* conv1, bias, relu, pool */
                 + (g2 + 32 * 64) + 32 * 64 + 32 * 64                /* conv2, bias, relu, pool */
                 + (g3 + 128) + 128                                  /* fc, bias, relu */
                 + (g4 + 10) + 5 * 10;                               /* out, bias, loss */
    double bwd = (g1 + 16 * 576) + 16 * 576 + 16 * 144               /* conv1: dW, db only */
                 + (2 * g2 + 32 * 64 + 400 * 64) + 32 * 64 + 32 * 16 /* conv2 + col2im */
                 + (2 * g3 + 128) + 128 + (2 * g4 + 10) + 2 * 10;
    ck_assert_double_eq(fwd, 2266940);
    ck_assert_double_eq(f.forward, fwd);
    ck_assert_double_eq(f.backward, bwd);
}
END_TEST

/* ---- 5. seeded initialisation ---------------------------------------------------------- */

static void check_init(const trainer_model_config_t *cfg)
{
    trainer_model_t m;
    build_ok(&m, cfg);
    size_t n = m.n_params;
    float *a = xmalloc_floats(n), *b = xmalloc_floats(n), *c = xmalloc_floats(n);
    trainer_model_init_params(&m, a, 42);
    trainer_model_init_params(&m, b, 42);
    trainer_model_init_params(&m, c, 43);
    ck_assert_msg(memcmp(a, b, sizeof(float) * n) == 0, "same seed, different parameters");
    size_t same = 0;
    for (size_t i = 0; i < n; i++)
        same += a[i] == c[i];
    ck_assert_msg(same * 100 < n, "seeds 42 and 43 agree on %zu of %zu parameters", same, n);

    for (int li = 0; li < m.n_layers; li++) {
        const trainer_layer_t *l = &m.layers[li];
        if (l->kind != TRAINER_LAYER_DENSE && l->kind != TRAINER_LAYER_CONV)
            continue;
        /* fan-in from the layer's shape, not from w_len */
        double fan_in =
            l->kind == TRAINER_LAYER_CONV ? (double)l->in_c * l->k * l->k : (double)l->in_c;
        double bound = 1.0 / sqrt(fan_in);
        size_t offs[2] = {l->w_off, l->b_off}, lens[2] = {l->w_len, l->b_len};
        for (int t = 0; t < 2; t++) {
            double sum = 0.0, sq = 0.0, amax = 0.0;
            for (size_t e = 0; e < lens[t]; e++) {
                double v = a[offs[t] + e];
                ck_assert_msg(fabs(v) <= bound, "layer %d %s[%zu] = %g outside +-%g", li,
                              t ? "bias" : "weight", e, v, bound);
                sum += v;
                sq += v * v;
                amax = fmax(amax, fabs(v));
            }
            double k = (double)lens[t];
            /* uniform(-b, b): mean 0 with standard error b / sqrt(3 k); variance b^2 / 3 */
            ck_assert_msg(fabs(sum / k) <= 5.0 * bound / sqrt(3.0 * k),
                          "layer %d %s mean %g (bound %g, %g values)", li, t ? "bias" : "weight",
                          sum / k, bound, k);
            if (k >= 1000) {
                ck_assert_msg(fabs(sq / k / (bound * bound / 3.0) - 1.0) < 0.1,
                              "layer %d weight variance %g, expected %g", li, sq / k,
                              bound * bound / 3.0);
                ck_assert_msg(amax > 0.99 * bound, "layer %d never near its bound", li);
            }
        }
    }
    free(a);
    free(b);
    free(c);
}

START_TEST(test_init)
{
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_MLP);
    check_init(&c);
    trainer_model_config_default(&c, TRAINER_ARCH_CNN);
    check_init(&c);
    c = cfg_cnn(3, 16, 20, 5, 2, 3, 5, 4);
    check_init(&c);
}
END_TEST

/* ---- 6. bad configurations ------------------------------------------------------------- */

static void expect_build_rejected(const trainer_model_config_t *cfg, const char *what)
{
    trainer_model_t m;
    dt_err_t err = {{0}};
    dt_status st = trainer_model_build(&m, cfg, &err);
    ck_assert_msg(st == DT_ERR_INPUT, "%s: build returned %d, expected DT_ERR_INPUT", what,
                  (int)st);
    ck_assert_msg(err.msg[0] != '\0', "%s: no error message", what);
}

START_TEST(test_reject_cnn_shapes)
{
    trainer_model_config_t c = cfg_cnn(1, 8, 8, 5, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn 8x8 k5 (second conv has no output)");
    c = cfg_cnn(1, 5, 5, 5, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn 5x5 k5 (first conv output 1x1)");
    c = cfg_cnn(1, 12, 12, 3, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn 12x12 k3 (second conv output 3x3, odd)");
    c = cfg_cnn(1, 13, 14, 3, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn 13x14 k3 (first conv output 11 high, odd)");
    c = cfg_cnn(1, 14, 13, 3, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn 14x13 k3 (first conv output 11 wide, odd)");
    c = cfg_cnn(1, 28, 28, 0, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn kernel 0");
    c = cfg_cnn(1, 28, 28, 5, 0, 2, 4, 3);
    expect_build_rejected(&c, "cnn conv 0");
    c = cfg_cnn(1, 28, 28, 5, 2, 2, 0, 3);
    expect_build_rejected(&c, "cnn fc 0");
    c = cfg_cnn(0, 28, 28, 5, 2, 2, 4, 3);
    expect_build_rejected(&c, "cnn 0 channels");
    /* and the shapes the other tests use are accepted */
    trainer_model_t m;
    c = cfg_cnn(1, 14, 14, 3, 3, 4, 6, 3);
    build_ok(&m, &c);
}
END_TEST

START_TEST(test_reject_classes)
{
    const trainer_arch_t archs[3] = {TRAINER_ARCH_LOGREG, TRAINER_ARCH_MLP, TRAINER_ARCH_CNN};
    for (int a = 0; a < 3; a++) {
        trainer_model_config_t c;
        trainer_model_config_default(&c, archs[a]);
        c.classes = 1;
        expect_build_rejected(&c, "1 class");
        c.classes = 0;
        expect_build_rejected(&c, "0 classes");
        c.classes = 257; /* labels are uint8_t */
        expect_build_rejected(&c, "257 classes");
        c.classes = 2;
        trainer_model_t m;
        build_ok(&m, &c);
    }
}
END_TEST

/* trainer_hidden_parse promises sizes in [1, 1<<20]; a hand-filled config must be held to
 * the same rules by build (hidden[] has TRAINER_MAX_HIDDEN entries). All cases are tried
 * and the accepted ones named together; the out-of-range count comes last because build
 * reads past hidden[] there (UBSan stops the test). */
START_TEST(test_reject_mlp_hidden)
{
    struct {
        int hidden[2], n_hidden;
        const char *what;
    } cases[] = {
        {{16, 0}, 2, "hidden size 0"},
        {{-3, 0}, 1, "hidden size -3"},
        {{16, 16}, -1, "n_hidden -1"},
        {{16, 16}, TRAINER_MAX_HIDDEN + 1, "n_hidden 9"},
    };
    char accepted[256] = "";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trainer_model_config_t c = cfg_mlp(12, cases[i].hidden, 2, 4);
        c.n_hidden = cases[i].n_hidden;
        for (int h = 0; h < TRAINER_MAX_HIDDEN && h < c.n_hidden; h++)
            c.hidden[h] = h < 2 ? cases[i].hidden[h] : 8;
        trainer_model_t m;
        dt_err_t err = {{0}};
        if (trainer_model_build(&m, &c, &err) != DT_ERR_INPUT) {
            strcat(accepted, " [");
            strcat(accepted, cases[i].what);
            strcat(accepted, "]");
        }
    }
    ck_assert_msg(accepted[0] == '\0', "mlp build accepted:%s", accepted);
}
END_TEST

START_TEST(test_hidden_parse)
{
    const char *bad[] = {"",   "0",    "256,", "a,b",     "1,2,3,4,5,6,7,8,9",
                         ",5", "5,,6", "-4",   "1048577", "12x"};
    char accepted[256] = "";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        trainer_model_config_t c;
        trainer_model_config_default(&c, TRAINER_ARCH_MLP);
        dt_err_t err = {{0}};
        dt_status st = trainer_hidden_parse(&c, bad[i], &err);
        if (st != DT_ERR_INPUT) {
            char one[64];
            snprintf(one, sizeof one, " \"%s\" (%d layers)", bad[i], c.n_hidden);
            strcat(accepted, one);
        } else {
            ck_assert_msg(err.msg[0] != '\0', "hidden \"%s\": no message", bad[i]);
        }
    }
    ck_assert_msg(accepted[0] == '\0', "trainer_hidden_parse accepted:%s", accepted);
    trainer_model_config_t c;
    trainer_model_config_default(&c, TRAINER_ARCH_MLP);
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_hidden_parse(&c, "300,100,1048576", &err), DT_OK);
    ck_assert_int_eq(c.n_hidden, 3);
    ck_assert_int_eq(c.hidden[0], 300);
    ck_assert_int_eq(c.hidden[1], 100);
    ck_assert_int_eq(c.hidden[2], 1 << 20);
    ck_assert_int_eq(trainer_hidden_parse(&c, "1,2,3,4,5,6,7,8", &err), DT_OK);
    ck_assert_int_eq(c.n_hidden, 8);
    ck_assert_int_eq(c.hidden[7], 8);
}
END_TEST

START_TEST(test_arch_parse)
{
    trainer_arch_t a = TRAINER_ARCH_CNN;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_arch_parse(&a, "resnet", &err), DT_ERR_INPUT);
    ck_assert_msg(err.msg[0] != '\0', "no message for resnet");
    ck_assert_int_eq(trainer_arch_parse(&a, "", &err), DT_ERR_INPUT);
    ck_assert_int_eq(trainer_arch_parse(&a, "mlp2", &err), DT_ERR_INPUT);
    const char *names[3] = {"logreg", "mlp", "cnn"};
    const trainer_arch_t archs[3] = {TRAINER_ARCH_LOGREG, TRAINER_ARCH_MLP, TRAINER_ARCH_CNN};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(trainer_arch_parse(&a, names[i], &err), DT_OK);
        ck_assert_int_eq(a, archs[i]);
        ck_assert_str_eq(trainer_arch_name(archs[i]), names[i]);
    }
}
END_TEST

START_TEST(test_group_matches_single)
{
    /* three replicas side by side on the CPU: exactly the bits of three single passes (the
     * CPU backend's batched ops are the single ops block by block, so any difference is a
     * layout error in the group passes) */
    trainer_model_config_t cfg = group_config(_i);
    group_check(trainer_backend_cpu(), trainer_backend_cpu(), &cfg, 3, 5, 0.0, 0.0);
}
END_TEST

/* Pipeline stages: the passes over layer ranges, stage after stage, give exactly the bits
 * of the whole passes (the same ops in the same order), and backward with accumulate adds
 * a second micro-batch's gradient to the first's. */
START_TEST(test_ranges_match_whole)
{
    int hidden[] = {12, 9};
    trainer_model_config_t cfgs[2] = {cfg_mlp(7, hidden, 2, 5), cfg_cnn(3, 10, 10, 3, 4, 3, 6, 4)};
    for (int c = 0; c < 2; c++) {
        const trainer_backend_t *be = trainer_backend_cpu();
        trainer_model_t m;
        build_ok(&m, &cfgs[c]);
        int batch = 4, L = m.n_layers;
        trainer_workspace_t ws;
        trainer_workspace_init(&ws, be, &m, batch);
        float *w = xmalloc_floats(m.n_params), *g0 = xmalloc_floats(m.n_params),
              *g1 = xmalloc_floats(m.n_params), *g2 = xmalloc_floats(m.n_params);
        trainer_model_init_params(&m, w, 3);
        float *x = xmalloc_floats((size_t)batch * m.in_size * 2);
        uint8_t y[8];
        random_batch(x, y, m.in_size, 2 * batch, m.classes, 5);
        double loss;
        int correct;
        /* whole passes on micro-batch 0, then 1 */
        trainer_workspace_load(&ws, x, y, batch);
        trainer_model_forward(&ws, w, batch);
        float *logits = xmalloc_floats((size_t)batch * m.classes);
        memcpy(logits, ws.act[L - 1], sizeof(float) * (size_t)batch * m.classes);
        trainer_model_loss(&ws, batch, &loss, &correct);
        trainer_model_backward(&ws, w, g0, batch);
        trainer_workspace_load(&ws, x + (size_t)batch * m.in_size, y + batch, batch);
        trainer_model_forward(&ws, w, batch);
        trainer_model_loss(&ws, batch, &loss, &correct);
        trainer_model_backward(&ws, w, g1, batch);
        /* the same in three stages cut at 1/3 and 2/3 of the layers; for the cnn also cut
         * between each ReLU and its max-pool (layers 1 | 2 and 4 | 5), where the whole pass
         * runs the pair as pool then ReLU and the stages cannot */
        int cut_sets[2][4] = {{0, L / 3, 2 * L / 3, L}, {0, 2, 5, L}};
        for (int set = 0; set < (c ? 2 : 1); set++) {
            const int *cuts = cut_sets[set];
            trainer_workspace_load(&ws, x, y, batch);
            for (int st = 0; st < 3; st++)
                trainer_model_forward_range(&ws, w, batch, cuts[st], cuts[st + 1]);
            ck_assert_msg(
                memcmp(logits, ws.act[L - 1], sizeof(float) * (size_t)batch * m.classes) == 0,
                "%s, cuts %d: logits differ", c ? "cnn" : "mlp", set);
            trainer_model_loss(&ws, batch, &loss, &correct);
            for (int st = 2; st >= 0; st--)
                trainer_model_backward_range(&ws, w, g2, batch, cuts[st], cuts[st + 1], 0);
            ck_assert_msg(memcmp(g0, g2, sizeof(float) * m.n_params) == 0,
                          "%s, cuts %d: stages differ", c ? "cnn" : "mlp", set);
        }
        int cuts[4] = {0, L / 3, 2 * L / 3, L};
        /* micro-batch 1 accumulated onto micro-batch 0 */
        trainer_workspace_load(&ws, x + (size_t)batch * m.in_size, y + batch, batch);
        for (int st = 0; st < 3; st++)
            trainer_model_forward_range(&ws, w, batch, cuts[st], cuts[st + 1]);
        trainer_model_loss(&ws, batch, &loss, &correct);
        for (int st = 2; st >= 0; st--)
            trainer_model_backward_range(&ws, w, g2, batch, cuts[st], cuts[st + 1], 1);
        double worst = 0;
        for (size_t i = 0; i < m.n_params; i++)
            worst = fmax(worst, fabs(g2[i] - (g0[i] + g1[i])) / (fabs(g0[i] + g1[i]) + 1e-3));
        ck_assert_msg(worst < 1e-5, "%s: accumulated %g", c ? "cnn" : "mlp", worst);
        trainer_workspace_free(&ws);
        free(w);
        free(g0);
        free(g1);
        free(g2);
        free(x);
        free(logits);
    }
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("gradcheck");
    tcase_set_timeout(tc, 120); /* a fraction of a second each; much more under ASan */
    tcase_add_test(tc, test_gradcheck_logreg);
    tcase_add_test(tc, test_gradcheck_mlp);
    tcase_add_test(tc, test_gradcheck_mlp_wide);
    tcase_add_test(tc, test_gradcheck_cnn);
    tcase_add_test(tc, test_gradcheck_cnn_channels);
    suite_add_tcase(s, tc);

    tc = tcase_create("forward");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_forward_logreg_hand);
    tcase_add_test(tc, test_forward_mlp_hand);
    tcase_add_test(tc, test_forward_cnn_direct);
    tcase_add_loop_test(tc, test_group_matches_single, 0, 4);
    tcase_add_test(tc, test_ranges_match_whole);
    suite_add_tcase(s, tc);

    tc = tcase_create("layout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_layout_mlp_default);
    tcase_add_test(tc, test_layout_cnn_default);
    tcase_add_test(tc, test_layout_other);
    tcase_add_test(tc, test_flops_logreg);
    tcase_add_test(tc, test_flops_mlp);
    tcase_add_test(tc, test_flops_cnn);
    tcase_add_test(tc, test_init);
    suite_add_tcase(s, tc);

    tc = tcase_create("config");
    tcase_add_test(tc, test_reject_cnn_shapes);
    tcase_add_test(tc, test_reject_classes);
    tcase_add_test(tc, test_reject_mlp_hidden);
    tcase_add_test(tc, test_hidden_parse);
    tcase_add_test(tc, test_arch_parse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
