/* The transformer (model.arch = gpt, trainer/gpt.c): every new op's backward against
 * central finite differences, the whole model's loss gradient against finite differences,
 * its parameter and FLOP counts against `dtsim profile transformer`'s for the same shape,
 * determinism, learning a short text, and the refusal of a backend without its ops.
 * `test_gpt torch` (the gpt_torch suite) compares logits, loss and gradients with PyTorch's
 * on the same weights (tests/gpt_torch.py); it exits 77, skipped, without a python3 that
 * imports torch. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "data.h"
#include "model.h"
#include "profile_transformer.h"
#include "rng.h"
#include "train.h"

/* ---- helpers --------------------------------------------------------------------------- */

static float *floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    ck_assert_ptr_nonnull(p);
    return p;
}

static void fill_uniform(float *p, size_t n, float bound, trainer_rng_t *r)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((2.0 * trainer_rng_uniform(r) - 1.0) * bound);
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* The tolerance of the op checks (float32 ops, double sums, central step FD_H on inputs of
 * order 1): |fd - an| <= FD_RTOL max(|fd|, |an|) + FD_ATOL. The float32 rounding of the
 * outputs (about 1e-7 of each) summed over at most a few hundred outputs of order 1 and
 * divided by 2 h is about 1e-4 at worst; the truncation error is O(h^2) = 1e-4 times the third
 * derivative. Measured errors are printed. */
#define FD_H 1e-2f
#define FD_RTOL 1e-2
#define FD_ATOL 2e-4

typedef double (*objective_fn)(void *ctx);

/* Checks d f / d x[i] against an[i] for every i < n; returns the largest |fd - an|. */
static double fd_check(const char *what, float *x, size_t n, const float *an, objective_fn f,
                       void *ctx)
{
    double worst = 0.0, biggest = 0.0;
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        float orig = x[i];
        x[i] = orig + FD_H;
        double fp = f(ctx);
        x[i] = orig - FD_H;
        double fm = f(ctx);
        x[i] = orig;
        double fd = (fp - fm) / (2.0 * FD_H), a = an[i];
        double err = fabs(fd - a);
        worst = fmax(worst, err);
        biggest = fmax(biggest, fabs(a));
        if (err > FD_RTOL * fmax(fabs(fd), fabs(a)) + FD_ATOL) {
            if (failed++ < 5)
                fprintf(stderr, "fd %s[%zu]: analytic %.6g, finite difference %.6g\n", what, i, a,
                        fd);
        }
    }
    printf("fd %-22s %4zu checked, max |fd-an| %.2e, max |an| %.2e\n", what, n, worst, biggest);
    fflush(stdout);
    ck_assert_msg(failed == 0, "%s: %d of %zu gradients off", what, failed, n);
    ck_assert_msg(biggest > 1e-2, "%s: vacuous check, every gradient near 0", what);
    return worst;
}

/* The tiny model of the checks: 2 layers, hidden 16, 2 heads, 8 tokens, bytes. */
static trainer_model_config_t tiny_cfg(void)
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
    c.in_w = c.seq + 1; /* windows of seq + 1 tokens */
    return c;
}

static void build_ok(trainer_model_t *m, const trainer_model_config_t *c)
{
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_model_build(m, c, &err) == DT_OK, "build: %s", err.msg);
}

/* Random windows of tokens as the data set stores them: seq + 1 ids per row, as floats. */
static void random_windows(float *x, uint8_t *y, int batch, int seq, int vocab, uint64_t seed)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 91);
    for (size_t i = 0; i < (size_t)batch * (seq + 1); i++)
        x[i] = (float)trainer_rng_below(&r, (uint64_t)vocab);
    memset(y, 0, (size_t)batch);
}

/* Parameters away from GPT-2's special starting point (unit scales, zero biases), so that
 * every path of the gradient carries something. */
static void random_params(const trainer_model_t *m, float *p, uint64_t seed)
{
    trainer_model_init_params(m, p, seed);
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 92);
    for (size_t i = 0; i < m->n_params; i++)
        p[i] += (float)((2.0 * trainer_rng_uniform(&r) - 1.0) * 0.3);
}

/* The tensors of the layout, in buffer order. */
typedef struct tensor_list {
    size_t off[64], len[64];
    char name[64][24];
    int n;
} tensor_list_t;

static void add_tensor(tensor_list_t *t, const char *name, size_t off, size_t len)
{
    ck_assert_int_lt(t->n, 64);
    snprintf(t->name[t->n], sizeof t->name[0], "%s", name);
    t->off[t->n] = off;
    t->len[t->n] = len;
    t->n++;
}

static void gpt_tensors(const trainer_model_t *m, tensor_list_t *t)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    size_t C = (size_t)g->C;
    memset(t, 0, sizeof *t);
    add_tensor(t, "wte", g->wte, (size_t)g->V * C);
    add_tensor(t, "wpe", g->wpe, (size_t)g->T * C);
    for (int l = 0; l < g->L; l++) {
        trainer_gpt_block_t b = trainer_gpt_block(g, l);
        char n[24];
#define T_(field, len) snprintf(n, sizeof n, "h%d.%s", l, #field), add_tensor(t, n, b.field, len)
        T_(ln1w, C);
        T_(ln1b, C);
        T_(qkvw, 3 * C * C);
        T_(qkvb, 3 * C);
        T_(attprojw, C * C);
        T_(attprojb, C);
        T_(ln2w, C);
        T_(ln2b, C);
        T_(fcw, 4 * C * C);
        T_(fcb, 4 * C);
        T_(fcprojw, 4 * C * C);
        T_(fcprojb, C);
#undef T_
    }
    add_tensor(t, "lnfw", g->lnfw, C);
    add_tensor(t, "lnfb", g->lnfb, C);
}

/* ---- the layout against the profile ------------------------------------------------------ */

START_TEST(layout_covers_the_buffer)
{
    trainer_model_t m;
    trainer_model_config_t c = tiny_cfg();
    build_ok(&m, &c);
    tensor_list_t t;
    gpt_tensors(&m, &t);
    size_t next = 0;
    for (int i = 0; i < t.n; i++) { /* contiguous, in order, nothing left over */
        ck_assert_uint_eq(t.off[i], next);
        next += t.len[i];
    }
    ck_assert_uint_eq(next, m.n_params);
    size_t C = 16, V = 256, T = 8, L = 2; /* GPT-2's count by hand */
    ck_assert_uint_eq(m.n_params, V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
    ck_assert_uint_eq(m.in_size, T + 1);
}
END_TEST

/* params, forward and backward FLOPs per sample as `dtsim profile transformer` writes them */
static void profile_counts(long L, long C, long NH, long T, long V, double out[3])
{
    sim_transformer_t t;
    sim_transformer_init(&t);
    t.layers = L, t.hidden = C, t.heads = NH, t.seq = T, t.vocab = V;
    snprintf(t.name, sizeof t.name, "check");
    dt_err_t err = {{0}};
    ck_assert_msg(sim_transformer_resolve(&t, &err) == DT_OK, "%s", err.msg);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(sim_transformer_write(&t, f, &err), DT_OK);
    fclose(f);
    const char *keys[3] = {"\nparams = ", "\nforward_flops = ", "\nbackward_flops = "};
    for (int i = 0; i < 3; i++) {
        const char *p = strstr(buf, keys[i]);
        ck_assert_ptr_nonnull(p);
        out[i] = strtod(p + strlen(keys[i]), NULL);
    }
    free(buf);
}

START_TEST(counts_match_the_profile)
{
    static const int shapes[][5] = {
        {2, 16, 2, 8, 256}, {6, 384, 6, 256, 256}, {12, 768, 12, 1024, 256}, {1, 8, 8, 1, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *sh = shapes[s];
        trainer_model_config_t c = tiny_cfg();
        c.layers = sh[0], c.hidden[0] = sh[1], c.heads = sh[2], c.seq = sh[3];
        c.classes = sh[4], c.in_w = sh[3] + 1;
        trainer_model_t m;
        build_ok(&m, &c);
        double prof[3];
        profile_counts(sh[0], sh[1], sh[2], sh[3], sh[4], prof);
        trainer_flops_t f = trainer_model_flops(&m);
        printf("shape L%d C%d H%d T%d V%d: params %zu (profile %.0f), forward %.6g (%.6g), "
               "backward %.6g (%.6g)\n",
               sh[0], sh[1], sh[2], sh[3], sh[4], m.n_params, prof[0], f.forward, prof[1],
               f.backward, prof[2]);
        ck_assert_double_eq((double)m.n_params, prof[0]);
        ck_assert_double_eq(f.forward, prof[1]);
        ck_assert_double_eq(f.backward, prof[2]);
    }
}
END_TEST

START_TEST(bad_shapes_are_refused)
{
    struct {
        int layers, hidden, n_hidden, heads, seq, classes;
        const char *expect;
    } bad[] = {
        {2, 16, 2, 2, 8, 256, "one size"}, {0, 16, 1, 2, 8, 256, "layers"},
        {2, 16, 1, 3, 8, 256, "divide"},   {2, 16, 1, 2, 0, 256, "seq"},
        {2, 16, 1, 2, 4096, 256, "seq"},   {2, 16, 1, 2, 8, 1, "vocabulary"},
    };
    trainer_model_config_t img = tiny_cfg(); /* image-shaped data: 28 x 28 values */
    img.in_h = img.in_w = 28;
    trainer_model_t mi;
    dt_err_t e = {{0}};
    ck_assert_int_eq(trainer_model_build(&mi, &img, &e), DT_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, "784 values") && strstr(e.msg, "seq + 1 = 9"), "%s", e.msg);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        trainer_model_config_t c = tiny_cfg();
        c.layers = bad[i].layers, c.hidden[0] = bad[i].hidden, c.n_hidden = bad[i].n_hidden;
        c.heads = bad[i].heads, c.seq = bad[i].seq, c.classes = bad[i].classes;
        c.in_w = bad[i].seq + 1;
        trainer_model_t m;
        dt_err_t err = {{0}};
        ck_assert_int_eq(trainer_model_build(&m, &c, &err), DT_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, bad[i].expect), "case %zu: \"%s\"", i, err.msg);
    }
}
END_TEST

START_TEST(backend_without_the_ops_is_refused)
{
    trainer_backend_t be = *trainer_backend_cpu();
    trainer_model_t m;
    trainer_model_config_t c = tiny_cfg();
    build_ok(&m, &c);
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_model_check_backend(&m, &be, &err), DT_OK);
    be.attention_backward = NULL;
    be.name = "nokernels";
    ck_assert_int_eq(trainer_model_check_backend(&m, &be, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "nokernels") && strstr(err.msg, "gpt"), "%s", err.msg);
}
END_TEST

/* The gradient's pieces for buckets: contiguous from the top of the buffer down to 0, in the
 * order backward completes them, their FLOPs adding up to the backward pass's. */
START_TEST(backward_pieces_tile_the_buffer)
{
    trainer_model_t m;
    trainer_model_config_t c = tiny_cfg();
    c.layers = 3;
    build_ok(&m, &c);
    size_t lo[5], hi[5];
    double fl[5], sum = 0.0;
    ck_assert_int_eq(trainer_gpt_backward_pieces(&m, lo, hi, fl), 5);
    size_t top = m.n_params;
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(hi[i], top);
        ck_assert_uint_lt(lo[i], hi[i]);
        top = lo[i];
        sum += fl[i];
    }
    ck_assert_uint_eq(top, 0);
    ck_assert_uint_eq(lo[0], m.gpt.lnfw);             /* the final norm first */
    ck_assert_uint_eq(hi[4], (size_t)(256 + 8) * 16); /* the embeddings last */
    ck_assert_double_eq(fl[1], fl[3]);                /* blocks cost the same */
    ck_assert_double_eq_tol(sum, trainer_model_flops(&m).backward, 1e-6 * sum);
}
END_TEST

/* ---- each op against finite differences ---------------------------------------------- */

/* f = sum R . out for the op's output out, as a function of its inputs */
typedef struct op_ctx {
    const trainer_backend_t *be;
    float *x, *w, *b, *out, *mean, *rstd, *r;
    int32_t *tokens;
    int n, C, batch, seq, heads;
    size_t n_out;
} op_ctx_t;

static double ln_objective(void *p)
{
    op_ctx_t *c = p;
    c->be->layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->n, c->C);
    return dot(c->out, c->r, c->n_out);
}

START_TEST(layernorm_gradients)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 5, 1);
    op_ctx_t c = {.be = be, .n = 4, .C = 12};
    c.n_out = (size_t)c.n * c.C;
    c.x = floats(c.n_out), c.out = floats(c.n_out), c.r = floats(c.n_out);
    c.w = floats(12), c.b = floats(12), c.mean = floats(4), c.rstd = floats(4);
    fill_uniform(c.x, c.n_out, 2.0f, &rng);
    fill_uniform(c.r, c.n_out, 1.0f, &rng);
    fill_uniform(c.w, 12, 1.5f, &rng);
    fill_uniform(c.b, 12, 1.0f, &rng);
    ln_objective(&c);
    /* forward against the formula, row 0 */
    double m = 0, v = 0;
    for (int i = 0; i < 12; i++)
        m += c.x[i];
    m /= 12;
    for (int i = 0; i < 12; i++)
        v += (c.x[i] - m) * (c.x[i] - m);
    v /= 12;
    for (int i = 0; i < 12; i++)
        ck_assert_double_eq_tol(c.out[i], (c.x[i] - m) / sqrt(v + 1e-5) * c.w[i] + c.b[i], 1e-5);
    float *dx = floats(c.n_out), *dw = floats(12), *db = floats(12);
    for (size_t i = 0; i < c.n_out; i++)
        dx[i] = 1e3f; /* overwritten without accumulate */
    be->layernorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, c.n, c.C, 0);
    fd_check("layernorm dx", c.x, c.n_out, dx, ln_objective, &c);
    fd_check("layernorm dw", c.w, 12, dw, ln_objective, &c);
    fd_check("layernorm db", c.b, 12, db, ln_objective, &c);
    /* with accumulate, the same gradient is added to what dx holds */
    float *acc = floats(c.n_out);
    for (size_t i = 0; i < c.n_out; i++)
        acc[i] = 0.5f;
    be->layernorm_backward(acc, dw, db, c.r, c.x, c.w, c.mean, c.rstd, c.n, c.C, 1);
    for (size_t i = 0; i < c.n_out; i++)
        ck_assert_float_eq_tol(acc[i], 0.5f + dx[i], 1e-6f);
    free(acc), free(dx), free(dw), free(db);
    free(c.x), free(c.out), free(c.r), free(c.w), free(c.b), free(c.mean), free(c.rstd);
}
END_TEST

static double gelu_objective(void *p)
{
    op_ctx_t *c = p;
    c->be->gelu_forward(c->out, c->x, c->n_out);
    return dot(c->out, c->r, c->n_out);
}

START_TEST(gelu_gradients)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 6, 1);
    op_ctx_t c = {.be = be, .n_out = 64};
    c.x = floats(64), c.out = floats(64), c.r = floats(64);
    fill_uniform(c.x, 64, 4.0f, &rng);
    c.x[0] = 12.0f, c.x[1] = -12.0f; /* past tanh's clamp */
    fill_uniform(c.r, 64, 1.0f, &rng);
    gelu_objective(&c);
    for (int i = 0; i < 64; i++) { /* GPT-2's tanh form */
        double v = c.x[i];
        double ref =
            0.5 * v * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
        ck_assert_double_eq_tol(c.out[i], ref, 1e-5);
    }
    float *dx = floats(64);
    memcpy(dx, c.r, sizeof(float) * 64);
    be->gelu_backward(dx, dx, c.x, 64); /* in place, as the model calls it */
    fd_check("gelu dx", c.x, 64, dx, gelu_objective, &c);
    free(dx), free(c.x), free(c.out), free(c.r);
}
END_TEST

static double attn_objective(void *p)
{
    op_ctx_t *c = p;
    c->be->attention_forward(c->out, c->mean, c->x, c->batch, c->seq, c->C, c->heads);
    return dot(c->out, c->r, c->n_out);
}

START_TEST(attention_gradients)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 7, 1);
    op_ctx_t c = {.be = be, .batch = 2, .seq = 5, .C = 8, .heads = 2};
    size_t nqkv = (size_t)c.batch * c.seq * 3 * c.C;
    c.n_out = (size_t)c.batch * c.seq * c.C;
    size_t natt = (size_t)c.batch * c.heads * c.seq * c.seq;
    c.x = floats(nqkv), c.out = floats(c.n_out), c.r = floats(c.n_out);
    c.mean = floats(natt); /* the probabilities */
    fill_uniform(c.x, nqkv, 1.5f, &rng);
    fill_uniform(c.r, c.n_out, 1.0f, &rng);
    attn_objective(&c);
    /* causal rows of probabilities: sum 1, zero above the diagonal */
    for (int row = 0; row < c.batch * c.heads * c.seq; row++) {
        int t = row % c.seq;
        double s = 0;
        for (int u = 0; u < c.seq; u++) {
            float a = c.mean[(size_t)row * c.seq + u];
            if (u > t)
                ck_assert_float_eq(a, 0.0f);
            s += a;
        }
        ck_assert_double_eq_tol(s, 1.0, 1e-6);
    }
    /* the first query sees only the first value */
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++)
            ck_assert_float_eq_tol(c.out[h * 4 + i], c.x[2 * 8 + h * 4 + i], 1e-6f);
    float *dqkv = floats(nqkv);
    for (size_t i = 0; i < nqkv; i++)
        dqkv[i] = 1e3f;
    float *scratch = floats((size_t)c.seq * c.seq);
    be->attention_backward(dqkv, scratch, c.r, c.x, c.mean, c.batch, c.seq, c.C, c.heads);
    free(scratch);
    fd_check("attention dqkv", c.x, nqkv, dqkv, attn_objective, &c);
    free(dqkv), free(c.x), free(c.out), free(c.r), free(c.mean);
}
END_TEST

static double embed_objective(void *p)
{
    op_ctx_t *c = p;
    c->be->embed_forward(c->out, c->tokens, c->w, c->b, c->batch, c->seq, c->C);
    return dot(c->out, c->r, c->n_out);
}

START_TEST(embedding_gradients)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 8, 1);
    int V = 5;
    op_ctx_t c = {.be = be, .batch = 3, .seq = 4, .C = 3};
    c.n_out = (size_t)c.batch * c.seq * c.C;
    c.out = floats(c.n_out), c.r = floats(c.n_out);
    c.w = floats((size_t)V * c.C), c.b = floats((size_t)c.seq * c.C);
    fill_uniform(c.w, (size_t)V * c.C, 1.0f, &rng);
    fill_uniform(c.b, (size_t)c.seq * c.C, 1.0f, &rng);
    fill_uniform(c.r, c.n_out, 1.0f, &rng);
    /* token ids through tokens_split: row b holds b, b+1, ... mod V; targets are the next */
    float x[3 * 5];
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 5; t++)
            x[b * 5 + t] = (float)((b + t) % V);
    int32_t tok[12];
    uint8_t tgt[12];
    be->tokens_split(tok, tgt, x, 3, 4);
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 4; t++) {
            ck_assert_int_eq(tok[b * 4 + t], (b + t) % V);
            ck_assert_int_eq(tgt[b * 4 + t], (b + t + 1) % V);
        }
    c.tokens = tok;
    embed_objective(&c);
    float *dwte = floats((size_t)V * c.C), *dwpe = floats((size_t)c.seq * c.C);
    for (size_t i = 0; i < (size_t)c.seq * c.C; i++)
        dwpe[i] = 1e3f; /* overwritten */
    be->embed_backward(dwte, dwpe, c.r, tok, c.batch, c.seq, c.C);
    fd_check("embedding dwte", c.w, (size_t)V * c.C, dwte, embed_objective, &c);
    fd_check("embedding dwpe", c.b, (size_t)c.seq * c.C, dwpe, embed_objective, &c);
    /* dwte is added to (the tied output layer's part is already there) */
    float *again = floats((size_t)V * c.C);
    for (size_t i = 0; i < (size_t)V * c.C; i++)
        again[i] = 2.0f;
    be->embed_backward(again, dwpe, c.r, tok, c.batch, c.seq, c.C);
    for (size_t i = 0; i < (size_t)V * c.C; i++)
        ck_assert_float_eq_tol(again[i], 2.0f + dwte[i], 1e-6f);
    free(again), free(dwte), free(dwpe), free(c.out), free(c.r), free(c.w), free(c.b);
}
END_TEST

/* ---- the whole model --------------------------------------------------------------------- */

typedef struct model_run {
    const trainer_backend_t *be;
    trainer_model_t m;
    trainer_workspace_t ws;
    float *params, *grads;
    int batch;
} model_run_t;

static void model_run_init(model_run_t *r, int batch, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->be = trainer_backend_cpu();
    trainer_model_config_t c = tiny_cfg();
    build_ok(&r->m, &c);
    r->batch = batch;
    trainer_workspace_init(&r->ws, r->be, &r->m, batch + 1); /* batch < max_batch on purpose */
    r->params = floats(r->m.n_params);
    r->grads = floats(r->m.n_params);
    random_params(&r->m, r->params, seed);
    float *x = floats((size_t)batch * r->m.in_size);
    uint8_t y[16];
    random_windows(x, y, batch, r->m.gpt.T, r->m.gpt.V, seed);
    trainer_workspace_load(&r->ws, x, y, batch);
    free(x);
}

static void model_run_free(model_run_t *r)
{
    trainer_workspace_free(&r->ws);
    free(r->params);
    free(r->grads);
}

/* mean token loss, no backward */
static double model_loss(model_run_t *r)
{
    double loss;
    int correct;
    trainer_model_forward(&r->ws, r->params, r->batch);
    trainer_model_loss(&r->ws, r->batch, &loss, &correct);
    return loss / r->batch;
}

/* Tolerance of the whole-model check, as in test_model.c: central step 1e-3 on a mean loss
 * of order 5 computed from float32 logits (noise about 1e-7 of it, 3e-4 after dividing by
 * 2h at worst), |fd - an| <= 1e-2 max(|fd|, |an|) + 5e-4. */
START_TEST(model_gradient_matches_finite_differences)
{
    model_run_t r;
    model_run_init(&r, 3, 11);
    size_t np = r.m.n_params;
    for (size_t i = 0; i < np; i++)
        r.grads[i] = 1e3f; /* backward must overwrite every gradient */
    model_loss(&r);
    trainer_model_backward(&r.ws, r.params, r.grads, r.batch);
    tensor_list_t t;
    gpt_tensors(&r.m, &t);
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 3, 3);
    const float h = 1e-3f;
    int checked = 0, failed = 0;
    double worst = 0.0, biggest = 0.0;
    for (int k = 0; k < t.n; k++) {
        int samples = t.len[k] <= 40 ? (int)t.len[k] : 40;
        double tensor_big = 0.0;
        for (int s = 0; s < samples; s++) {
            size_t lo = (size_t)s * t.len[k] / samples, hi = (size_t)(s + 1) * t.len[k] / samples;
            size_t j = t.off[k] + lo + (size_t)trainer_rng_below(&rng, hi - lo);
            float orig = r.params[j];
            r.params[j] = orig + h;
            double lp = model_loss(&r);
            r.params[j] = orig - h;
            double lm = model_loss(&r);
            r.params[j] = orig;
            double fd = (lp - lm) / ((double)(orig + h) - (double)(orig - h)), a = r.grads[j];
            double err = fabs(fd - a);
            worst = fmax(worst, err);
            tensor_big = fmax(tensor_big, fabs(a));
            checked++;
            if (err > 1e-2 * fmax(fabs(fd), fabs(a)) + 5e-4 && failed++ < 10)
                fprintf(stderr, "model fd %s[%zu]: analytic %.6g, finite difference %.6g\n",
                        t.name[k], j - t.off[k], a, fd);
        }
        ck_assert_msg(tensor_big > 1e-4, "%s: every sampled gradient near 0", t.name[k]);
        biggest = fmax(biggest, tensor_big);
    }
    printf("fd whole model: %d parameters of %zu checked in %d tensors, max |fd-an| %.2e, "
           "max |an| %.2e\n",
           checked, np, t.n, worst, biggest);
    ck_assert_int_eq(failed, 0);
    model_run_free(&r);
}
END_TEST

START_TEST(fused_update_and_determinism)
{
    model_run_t a, b;
    model_run_init(&a, 4, 21);
    model_run_init(&b, 4, 21);
    size_t np = a.m.n_params;
    double la = model_loss(&a), lb = model_loss(&b);
    ck_assert(la == lb);
    trainer_model_backward(&a.ws, a.params, a.grads, 4);
    trainer_model_backward(&b.ws, b.params, b.grads, 4);
    ck_assert(memcmp(a.grads, b.grads, sizeof(float) * np) == 0); /* same bits */
    /* the fused step equals backward + SGD */
    a.be->sgd_update(a.params, a.grads, NULL, np, 0.1f, 0.0f, 0.01f);
    trainer_model_backward_sgd(&b.ws, b.params, 4, 0.1f, 0.01f);
    ck_assert(memcmp(a.params, b.params, sizeof(float) * np) == 0);
    /* evaluation's per-sample sums: mean token loss and next-token accuracy */
    double loss, right;
    model_loss(&a);
    trainer_model_score(&a.ws, 4, &loss, &right);
    ck_assert_double_eq_tol(loss / 4, model_loss(&a), 1e-12);
    ck_assert(right >= 0.0 && right <= 4.0);
    model_run_free(&a);
    model_run_free(&b);
}
END_TEST

/* What data-parallel strategies rely on: the mean of two workers' gradients, each on half
 * the batch, is the gradient of the whole batch (the loss is a mean over tokens, and both
 * halves hold as many), in the flat buffer's layout. Up to float rounding: the sums run in
 * another order. */
START_TEST(half_batches_average_to_the_whole)
{
    model_run_t whole, half;
    model_run_init(&whole, 6, 41);
    model_run_init(&half, 6, 41); /* the same params and windows */
    size_t np = whole.m.n_params, row = whole.m.in_size;
    model_loss(&whole);
    trainer_model_backward(&whole.ws, whole.params, whole.grads, 6);
    float *x = floats(6 * row), *sum = floats(np);
    uint8_t y[6] = {0};
    random_windows(x, y, 6, whole.m.gpt.T, whole.m.gpt.V, 41);
    for (int w = 0; w < 2; w++) {
        trainer_workspace_load(&half.ws, x + (size_t)w * 3 * row, y, 3);
        half.batch = 3;
        model_loss(&half);
        trainer_model_backward(&half.ws, half.params, half.grads, 3);
        for (size_t i = 0; i < np; i++)
            sum[i] += 0.5f * half.grads[i];
    }
    double worst = 0.0, big = 0.0;
    for (size_t i = 0; i < np; i++) {
        worst = fmax(worst, fabs((double)sum[i] - whole.grads[i]));
        big = fmax(big, fabs((double)whole.grads[i]));
    }
    printf("two half batches against the whole: max |diff| %.2e of max |grad| %.2e\n", worst, big);
    ck_assert_double_gt(big, 1e-2);
    ck_assert_double_le(worst, 1e-5 * big);
    free(x);
    free(sum);
    model_run_free(&whole);
    model_run_free(&half);
}
END_TEST

/* A short text, repeated: SGD on the tiny model learns to continue it. */
START_TEST(learns_a_short_text)
{
    const char *text = "the quick brown fox jumps over the lazy dog. ";
    size_t len = strlen(text);
    trainer_model_config_t c = tiny_cfg();
    c.hidden[0] = 32;
    trainer_model_t m;
    build_ok(&m, &c);
    int B = 8, T = m.gpt.T;
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_workspace_t ws;
    trainer_workspace_init(&ws, be, &m, B);
    float *p = floats(m.n_params), *x = floats((size_t)B * (T + 1));
    uint8_t y[8] = {0};
    trainer_model_init_params(&m, p, 1);
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 1, 5);
    double first = 0, last = 0;
    for (int step = 0; step < 300; step++) {
        for (int b = 0; b < B; b++) {
            size_t at = (size_t)trainer_rng_below(&rng, len);
            for (int t = 0; t <= T; t++)
                x[b * (T + 1) + t] = (float)(unsigned char)text[(at + (size_t)t) % len];
        }
        trainer_workspace_load(&ws, x, y, B);
        double loss;
        int correct;
        trainer_model_forward(&ws, p, B);
        trainer_model_loss(&ws, B, &loss, &correct);
        trainer_model_backward_sgd(&ws, p, B, 0.5f, 0.0f);
        if (step == 0)
            first = loss / B;
        if (step >= 290)
            last += loss / B / 10;
    }
    printf("learns a short text: mean token loss %.3f at the first step, %.3f over the "
           "last 10 (ln 256 = %.3f)\n",
           first, last, log(256.0));
    ck_assert_double_eq_tol(first, log(256.0), 0.2); /* a fresh model guesses uniformly */
    ck_assert_double_lt(last, 1.0);                  /* 45 characters: ln 45 = 3.8 unigram */
    trainer_workspace_free(&ws);
    free(p);
    free(x);
}
END_TEST

/* ---- PyTorch on the same weights ---------------------------------------------------------- */

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

static const char *python;

/* Elementwise |c - t| <= 1e-4 max |t| over the tensor (t: torch's float64 numbers). */
static void compare(const char *what, const float *c, const double *t, size_t n)
{
    double big = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++)
        big = fmax(big, fabs(t[i]));
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)c[i] - t[i]));
    printf("torch %-14s max |dtsim - torch| / max |torch| = %.2e (max |torch| %.2e)\n", what,
           big > 0 ? worst / big : worst, big);
    ck_assert_msg(big > 0.0, "%s: torch's numbers are all 0", what);
    ck_assert_msg(worst <= 1e-4 * big, "%s: %.3g off, over 1e-4 of %.3g", what, worst, big);
}

START_TEST(matches_pytorch)
{
    model_run_t r;
    int B = 3;
    model_run_init(&r, B, 31);
    const trainer_gpt_layout_t *g = &r.m.gpt;
    size_t np = r.m.n_params, nlog = (size_t)B * g->T * g->V;
    double loss = model_loss(&r);
    trainer_model_backward(&r.ws, r.params, r.grads, B);

    char dir[] = "/tmp/dtsim_gpt_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char in[128], out[128], cmd[1024];
    snprintf(in, sizeof in, "%s/in.bin", dir);
    snprintf(out, sizeof out, "%s/out.bin", dir);
    FILE *f = fopen(in, "wb");
    ck_assert_ptr_nonnull(f);
    int32_t head[6] = {g->L, g->C, g->NH, g->T, g->V, B};
    fwrite(head, sizeof head, 1, f);
    fwrite(r.params, sizeof(float), np, f);
    float *x = floats((size_t)B * (g->T + 1));
    uint8_t y[4];
    random_windows(x, y, B, g->T, g->V, 31); /* the batch model_run_init loaded */
    for (size_t i = 0; i < (size_t)B * (g->T + 1); i++) {
        int32_t tok = (int32_t)x[i];
        fwrite(&tok, sizeof tok, 1, f);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s/tests/gpt_torch.py %s %s", python, DTSIM_SOURCE, in, out);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);

    double *logits = malloc(sizeof(double) * nlog), tloss, *grads = malloc(sizeof(double) * np);
    ck_assert_ptr_nonnull(logits);
    ck_assert_ptr_nonnull(grads);
    f = fopen(out, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(logits, sizeof(double), nlog, f), nlog);
    ck_assert_uint_eq(fread(&tloss, sizeof(double), 1, f), 1);
    ck_assert_uint_eq(fread(grads, sizeof(double), np, f), np);
    fclose(f);
    unlink(in);
    unlink(out);
    rmdir(dir);

    float *ours = floats(nlog);
    r.be->download(ours, trainer_gpt_logits(&r.ws), sizeof(float) * nlog);
    compare("logits", ours, logits, nlog);
    free(ours);
    printf("torch loss %.9f, dtsim %.9f\n", tloss, loss);
    ck_assert_double_le(fabs(loss - tloss), 1e-4 * fabs(tloss));
    tensor_list_t t;
    gpt_tensors(&r.m, &t);
    for (int k = 0; k < t.n; k++)
        compare(t.name[k], r.grads + t.off[k], grads + t.off[k], t.len[k]);
    free(logits);
    free(grads);
    free(x);
    model_run_free(&r);
}
END_TEST

static Suite *gpt_suite(void)
{
    Suite *s = suite_create("gpt");
    TCase *tc = tcase_create("layout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, layout_covers_the_buffer);
    tcase_add_test(tc, counts_match_the_profile);
    tcase_add_test(tc, bad_shapes_are_refused);
    tcase_add_test(tc, backend_without_the_ops_is_refused);
    tcase_add_test(tc, backward_pieces_tile_the_buffer);
    suite_add_tcase(s, tc);
    tc = tcase_create("ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, layernorm_gradients);
    tcase_add_test(tc, gelu_gradients);
    tcase_add_test(tc, attention_gradients);
    tcase_add_test(tc, embedding_gradients);
    suite_add_tcase(s, tc);
    tc = tcase_create("model");
    tcase_set_timeout(tc, 120); /* about a second each; much more under ASan */
    tcase_add_test(tc, model_gradient_matches_finite_differences);
    tcase_add_test(tc, fused_update_and_determinism);
    tcase_add_test(tc, half_batches_average_to_the_whole);
    tcase_add_test(tc, learns_a_short_text);
    suite_add_tcase(s, tc);
    return s;
}

/* Training the gpt as a PyTorch user writes it (gpt_torch.py train: float32, the loss's
 * backward, clip_grad_norm_, torch.optim's SGD, Adam or AdamW at a LambdaLR's rate) against
 * trainer_learner_step, 30 steps of 4 random windows from the same weights: the weights
 * within 1e-5 of each other after moving by more than 0.01 (Adam divides each gradient by its
 * own running norm, so two float32 sums in other orders part by more than SGD's). */
static const struct {
    trainer_optimizer_t kind;
    trainer_lr_schedule_t schedule;
    int warmup;
    float lr, momentum, wd, clip;
} train_cases[] = {
    {TRAINER_OPT_ADAMW, TRAINER_LR_COSINE, 5, 0.01f, 0.0f, 0.1f, 0.5f},
    {TRAINER_OPT_ADAMW, TRAINER_LR_CONSTANT, 0, 0.01f, 0.0f, 0.01f, 0.0f},
    {TRAINER_OPT_ADAM, TRAINER_LR_LINEAR, 3, 0.005f, 0.0f, 0.01f, 1.0f},
    {TRAINER_OPT_SGD, TRAINER_LR_COSINE, 5, 0.1f, 0.9f, 0.0f, 0.5f},
};

START_TEST(trains_like_pytorch)
{
    enum { STEPS = 30, B = 4 };
    trainer_optim_t o = {.lr = train_cases[_i].lr,
                         .momentum = train_cases[_i].momentum,
                         .weight_decay = train_cases[_i].wd,
                         .kind = train_cases[_i].kind,
                         .beta1 = 0.9,
                         .beta2 = 0.999,
                         .eps = 1e-8,
                         .clip_norm = train_cases[_i].clip};
    trainer_model_t m;
    trainer_model_config_t c = tiny_cfg();
    build_ok(&m, &c);
    const trainer_gpt_layout_t *g = &m.gpt;
    trainer_learner_t l;
    trainer_learner_init(&l, trainer_backend_cpu(), &m, &o, B, 7);
    l.lr = (trainer_lr_t){.schedule = train_cases[_i].schedule,
                          .base = o.lr,
                          .min = 0.0f,
                          .warmup = train_cases[_i].warmup};
    l.lr_total = STEPS;
    float *init = floats(m.n_params);
    memcpy(init, l.params, sizeof(float) * m.n_params);
    /* the windows of every step, one data set */
    trainer_dataset_t ds = {.n = (size_t)STEPS * B, .dim = (size_t)g->T + 1, .classes = 256};
    ds.x = floats(ds.n * ds.dim);
    ds.y = calloc(ds.n, 1);
    ck_assert_ptr_nonnull(ds.y);
    random_windows(ds.x, ds.y, (int)ds.n, g->T, g->V, 41);

    char dir[] = "/tmp/dtsim_gpt_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char in[128], out[128], cmd[1024];
    snprintf(in, sizeof in, "%s/in.bin", dir);
    snprintf(out, sizeof out, "%s/out.bin", dir);
    FILE *f = fopen(in, "wb");
    ck_assert_ptr_nonnull(f);
    int32_t head[10] = {g->L,
                        g->C,
                        g->NH,
                        g->T,
                        g->V,
                        B,
                        (int32_t)o.kind,
                        STEPS,
                        train_cases[_i].warmup,
                        (int32_t)train_cases[_i].schedule};
    double hyper[8] = {o.lr, 0.0, o.momentum, o.weight_decay, o.beta1, o.beta2, o.eps, o.clip_norm};
    fwrite(head, sizeof head, 1, f);
    fwrite(hyper, sizeof hyper, 1, f);
    fwrite(init, sizeof(float), m.n_params, f);
    for (size_t i = 0; i < ds.n * ds.dim; i++) {
        int32_t tok = (int32_t)ds.x[i];
        fwrite(&tok, sizeof tok, 1, f);
    }
    fclose(f);
    uint32_t idx[B];
    for (int s = 0; s < STEPS; s++) {
        for (int b = 0; b < B; b++)
            idx[b] = (uint32_t)(s * B + b);
        ck_assert(isfinite(trainer_learner_step(&l, &ds, idx, B)));
    }
    snprintf(cmd, sizeof cmd, "%s %s/tests/gpt_torch.py train %s %s", python, DTSIM_SOURCE, in,
             out);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    double *theirs = malloc(sizeof(double) * 2 * m.n_params); /* float32's, float64's */
    ck_assert_ptr_nonnull(theirs);
    f = fopen(out, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(theirs, sizeof(double), 2 * m.n_params, f), 2 * m.n_params);
    fclose(f);
    unlink(in);
    unlink(out);
    rmdir(dir);
    const double *t32 = theirs, *t64 = theirs + m.n_params;
    double worst = 0.0, moved = 0.0, ours64 = 0.0, rounding = 0.0;
    for (size_t i = 0; i < m.n_params; i++) {
        worst = fmax(worst, fabs((double)l.params[i] - t32[i]));
        ours64 = fmax(ours64, fabs((double)l.params[i] - t64[i]));
        rounding = fmax(rounding, fabs(t32[i] - t64[i]));
        moved = fmax(moved, fabs(t64[i] - init[i]));
    }
    const char *sched = train_cases[_i].schedule == TRAINER_LR_COSINE   ? "cosine"
                        : train_cases[_i].schedule == TRAINER_LR_LINEAR ? "linear"
                                                                        : "constant";
    printf("torch gpt %-5s %-8s clip %-3g after %d steps: max |dtsim - torch float32| = %.2e, "
           "|dtsim - torch float64| = %.2e, |torch float32 - float64| = %.2e (weights moved up "
           "to %.3f)\n",
           trainer_optimizer_name(o.kind), sched, (double)o.clip_norm, STEPS, worst, ours64,
           rounding, moved);
    ck_assert_double_gt(moved, 0.01);
    /* as near float64's weights as PyTorch's own float32 run is (twice that, and 1e-6) */
    ck_assert_msg(ours64 <= 2 * rounding + 1e-6,
                  "%s: %.3g off PyTorch in float64, whose float32 "
                  "run is %.3g off",
                  trainer_optimizer_name(o.kind), ours64, rounding);
    free(theirs);
    free(init);
    free(ds.x);
    free(ds.y);
    trainer_learner_free(&l);
}
END_TEST

static Suite *torch_suite(void)
{
    Suite *s = suite_create("gpt_torch");
    TCase *tc = tcase_create("torch");
    tcase_set_timeout(tc, 120); /* importing torch takes seconds */
    tcase_add_test(tc, matches_pytorch);
    tcase_add_loop_test(tc, trains_like_pytorch, 0,
                        (int)(sizeof train_cases / sizeof train_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    int torch = argc > 1 && !strcmp(argv[1], "torch");
    if (torch) {
        python = python_with_torch();
        if (!python) {
            fprintf(stderr, "gpt_torch: SKIPPED: no python3 imports torch (Debian: "
                            "python3-torch); the comparison with PyTorch did not run\n");
            return 77;
        }
    }
    SRunner *sr = srunner_create(torch ? torch_suite() : gpt_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
