/* The transformer (model.arch = gpt): layout, initialisation, FLOP count, and the forward
 * and backward passes through the backend's ops (see gpt.h). The linear layers are GEMMs
 * over all B T tokens of the batch at once; the residual additions are GEMMs with beta 1
 * onto a copy of the stream, so the projections' own outputs are never stored. */
#include "gpt.h"

#include <math.h>
#include <string.h>

#include "data.h"
#include "model.h"
#include "rng.h"

struct trainer_gpt_acts {
    int32_t *tokens;  /* (B, T) inputs */
    uint8_t *targets; /* (B, T) next tokens */
    float *encoded;   /* (B, T, C) embeddings: the first block's input */
    /* per layer, L slabs each */
    float *ln1, *ln1_mean, *ln1_rstd; /* (B, T, C), (B, T), (B, T) */
    float *qkv;                       /* (B, T, 3C) */
    float *atty;                      /* (B, T, C) the heads' outputs */
    float *att;                       /* (B, NH, T, T) probabilities */
    float *res2;                      /* (B, T, C) stream after attention */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu; /* (B, T, 4C) */
    float *res3;           /* (B, T, C) stream after the MLP: the block's output */
    float *lnf, *lnf_mean, *lnf_rstd;
    float *logits, *dlogits; /* (B, T, V) */
    /* gradient scratch, one slab each */
    float *dres;        /* (B, T, C) gradient of the residual stream */
    float *dln, *datty; /* (B, T, C) */
    float *dqkv;        /* (B, T, 3C) */
    float *dfch;        /* (B, T, 4C) */
    float *datt;        /* (T, T) attention backward's scratch */
    float *grads;       /* (n_params) for the fused update */
};

trainer_gpt_block_t trainer_gpt_block(const trainer_gpt_layout_t *g, int l)
{
    size_t d = (size_t)l * g->block_len;
    trainer_gpt_block_t b = g->block0;
    size_t *f = (size_t *)&b;
    for (size_t i = 0; i < sizeof b / sizeof(size_t); i++)
        f[i] += d;
    return b;
}

dt_status trainer_gpt_build(trainer_model_t *m, dt_err_t *err)
{
    const trainer_model_config_t *c = &m->cfg;
    if (c->n_hidden != 1)
        return dt_err_input(err, "gpt: hidden takes one size, its width (e.g. 64), not %d sizes",
                            c->n_hidden);
    int C = c->hidden[0], L = c->layers, NH = c->heads, T = c->seq;
    if (L < 1 || L > 1024)
        return dt_err_input(err, "gpt: layers %d out of range [1, 1024]", L);
    if (C < 1 || C > 65536)
        return dt_err_input(err, "gpt: hidden %d out of range [1, 65536]", C);
    if (NH < 1 || C % NH)
        return dt_err_input(err, "gpt: heads %d does not divide hidden %d", NH, C);
    if (T < 1 || T > TRAINER_GPT_MAX_SEQ)
        return dt_err_input(err, "gpt: seq %d out of range [1, %d]", T, TRAINER_GPT_MAX_SEQ);
    long dim = (long)c->in_channels * c->in_h * c->in_w;
    if (dim != (long)T + 1)
        return dt_err_input(err,
                            "gpt: samples of %ld values are not windows of seq + 1 = %d "
                            "tokens (a text source of the same seq)",
                            dim, T + 1);
    trainer_gpt_layout_t *g = &m->gpt;
    memset(g, 0, sizeof *g);
    g->L = L, g->C = C, g->NH = NH, g->T = T, g->V = c->classes;
    size_t o = 0, Cz = (size_t)C;
#define TAKE(field, n) (field = o, o += (n))
    TAKE(g->wte, (size_t)g->V * Cz);
    TAKE(g->wpe, (size_t)T * Cz);
    size_t start = o;
    trainer_gpt_block_t *b = &g->block0;
    TAKE(b->ln1w, Cz);
    TAKE(b->ln1b, Cz);
    TAKE(b->qkvw, 3 * Cz * Cz);
    TAKE(b->qkvb, 3 * Cz);
    TAKE(b->attprojw, Cz * Cz);
    TAKE(b->attprojb, Cz);
    TAKE(b->ln2w, Cz);
    TAKE(b->ln2b, Cz);
    TAKE(b->fcw, 4 * Cz * Cz);
    TAKE(b->fcb, 4 * Cz);
    TAKE(b->fcprojw, 4 * Cz * Cz);
    TAKE(b->fcprojb, Cz);
    g->block_len = o - start;
    o = start + (size_t)L * g->block_len;
    TAKE(g->lnfw, Cz);
    TAKE(g->lnfb, Cz);
#undef TAKE
    m->n_params = o;
    m->in_size = (size_t)T + 1;
    m->classes = g->V;
    return DT_OK;
}

static void fill_normal(float *p, size_t n, double std, trainer_rng_t *r)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(trainer_rng_normal(r) * std);
}

static void fill_value(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

void trainer_gpt_init_params(const trainer_model_t *m, float *params, uint64_t seed)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    size_t C = (size_t)g->C;
    double proj = 0.02 / sqrt(2.0 * g->L);
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, TRAINER_STREAM_INIT);
    memset(params, 0, sizeof(float) * m->n_params); /* biases */
    fill_normal(params + g->wte, (size_t)g->V * C, 0.02, &r);
    fill_normal(params + g->wpe, (size_t)g->T * C, 0.02, &r);
    for (int l = 0; l < g->L; l++) {
        trainer_gpt_block_t b = trainer_gpt_block(g, l);
        fill_value(params + b.ln1w, C, 1.0f);
        fill_normal(params + b.qkvw, 3 * C * C, 0.02, &r);
        fill_normal(params + b.attprojw, C * C, proj, &r);
        fill_value(params + b.ln2w, C, 1.0f);
        fill_normal(params + b.fcw, 4 * C * C, 0.02, &r);
        fill_normal(params + b.fcprojw, 4 * C * C, proj, &r);
    }
    fill_value(params + g->lnfw, C, 1.0f);
}

void trainer_gpt_flops(const trainer_model_t *m, double *forward, double *backward)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    double T = g->T, C = g->C, V = g->V, NH = g->NH;
    double norm = 4.0 * T * C;
    double block = norm + 2.0 * T * C * 3.0 * C          /* layer norm, qkv */
                   + 4.0 * T * T * C + 5.0 * NH * T * T  /* scores, softmax, times values */
                   + 2.0 * T * C * C                     /* attention projection */
                   + norm + 2.0 * 2.0 * T * C * 4.0 * C; /* layer norm, fc, fc projection */
    *forward = g->L * block + norm + 2.0 * T * C * V;    /* final norm, tied output layer */
    *backward = 2.0 * *forward; /* the first layer with parameters, the embedding, has none */
}

void trainer_gpt_layer_flops(const trainer_model_t *m, int i, double *forward, double *backward)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    double T = g->T, C = g->C, NH = g->NH, norm = 4.0 * T * C;
    DT_ASSERT(i >= 0 && i <= g->L + 1);
    if (i == 0)
        *forward = 0.0; /* the embeddings: a gather and an addition, counted as nothing */
    else if (i <= g->L)
        *forward = norm + 2.0 * T * C * 3.0 * C + 4.0 * T * T * C + 5.0 * NH * T * T +
                   2.0 * T * C * C + norm + 2.0 * 2.0 * T * C * 4.0 * C;
    else
        *forward = norm + 2.0 * T * C * g->V;
    *backward = 2.0 * *forward;
}

int trainer_gpt_backward_pieces(const trainer_model_t *m, size_t *lo, size_t *hi, double *flops)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    double fwd, bwd, T = g->T, C = g->C;
    trainer_gpt_flops(m, &fwd, &bwd);
    double top = 2.0 * (4.0 * T * C + 2.0 * T * C * g->V); /* final norm, output layer */
    double block = (bwd - top) / g->L;                     /* the embeddings count nothing */
    int n = 0;
    lo[n] = g->lnfw, hi[n] = m->n_params, flops[n++] = top;
    for (int l = g->L - 1; l >= 0; l--) {
        trainer_gpt_block_t b = trainer_gpt_block(g, l);
        lo[n] = b.ln1w, hi[n] = lo[n] + g->block_len, flops[n++] = block;
    }
    lo[n] = 0, hi[n] = g->block0.ln1w, flops[n++] = 0.0;
    return n;
}

size_t trainer_gpt_activation_floats(const trainer_model_t *m)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    size_t T = (size_t)g->T, C = (size_t)g->C;
    size_t block = T * C + 2 * T /* ln1 */ + 3 * T * C + T * C + (size_t)g->NH * T * T +
                   T * C /* res2 */ + T * C + 2 * T /* ln2 */ + 8 * T * C + T * C /* res3 */;
    return T * C + (size_t)g->L * block + T * C + 2 * T + T * (size_t)g->V;
}

size_t trainer_gpt_range_activation_floats(const trainer_model_t *m, int first, int last)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    size_t T = (size_t)g->T, C = (size_t)g->C, n = 0;
    size_t block = T * C + 2 * T /* ln1 */ + 3 * T * C + T * C + (size_t)g->NH * T * T +
                   T * C /* res2 */ + T * C + 2 * T /* ln2 */ + 8 * T * C + T * C /* res3 */;
    for (int i = first; i < last; i++)
        n += i == 0 ? T * C : i <= g->L ? block : T * C + 2 * T + T * (size_t)g->V;
    return n;
}

/* Slabs of max_batch windows: per-layer tensors are L of them. */
void trainer_gpt_workspace_init(trainer_workspace_t *ws, int max_batch)
{
    const trainer_backend_t *be = ws->be;
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    size_t BT = (size_t)max_batch * g->T, C = (size_t)g->C, L = (size_t)g->L;
    trainer_gpt_acts_t *a = dt_calloc(1, sizeof *a);
#define F(n) be->alloc(sizeof(float) * (n))
    a->tokens = be->alloc(sizeof(int32_t) * BT);
    a->targets = be->alloc(BT);
    a->encoded = F(BT * C);
    a->ln1 = F(L * BT * C);
    a->ln1_mean = F(L * BT);
    a->ln1_rstd = F(L * BT);
    a->qkv = F(L * BT * 3 * C);
    a->atty = F(L * BT * C);
    a->att = F(L * BT * (size_t)g->NH * g->T);
    a->res2 = F(L * BT * C);
    a->ln2 = F(L * BT * C);
    a->ln2_mean = F(L * BT);
    a->ln2_rstd = F(L * BT);
    a->fch = F(L * BT * 4 * C);
    a->fch_gelu = F(L * BT * 4 * C);
    a->res3 = F(L * BT * C);
    a->lnf = F(BT * C);
    a->lnf_mean = F(BT);
    a->lnf_rstd = F(BT);
    a->logits = F(BT * (size_t)g->V);
    a->dlogits = F(BT * (size_t)g->V);
    a->dres = F(BT * C);
    a->dln = F(BT * C);
    a->datty = F(BT * C);
    a->dqkv = F(BT * 3 * C);
    a->dfch = F(BT * 4 * C);
    a->datt = F((size_t)g->T * g->T);
    a->grads = F(ws->m->n_params);
#undef F
    ws->gpt = a;
}

void trainer_gpt_workspace_free(trainer_workspace_t *ws)
{
    trainer_gpt_acts_t *a = ws->gpt;
    if (!a)
        return;
    void *bufs[] = {a->tokens,   a->targets, a->encoded,  a->ln1,  a->ln1_mean, a->ln1_rstd,
                    a->qkv,      a->atty,    a->att,      a->res2, a->ln2,      a->ln2_mean,
                    a->ln2_rstd, a->fch,     a->fch_gelu, a->res3, a->lnf,      a->lnf_mean,
                    a->lnf_rstd, a->logits,  a->dlogits,  a->dres, a->dln,      a->datty,
                    a->dqkv,     a->dfch,    a->datt,     a->grads};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ws->be->free(bufs[i]);
    free(a);
    ws->gpt = NULL;
}

/* Layer l's slab of a per-layer tensor with `per` floats per token. */
#define SLAB(ptr, l, per) ((ptr) + (size_t)(l)*BTmax * (per))

/* Block l's forward pass: res3 of layer l from res (the embeddings or block l-1's res3). */
static void block_forward(trainer_workspace_t *ws, const float *P, int batch, int l)
{
    const trainer_backend_t *be = ws->be;
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    trainer_gpt_acts_t *a = ws->gpt;
    int T = g->T, C = g->C, NH = g->NH, BT = batch * T;
    size_t BTmax = (size_t)ws->max_batch * T, n = (size_t)BT * C;
    trainer_gpt_block_t b = trainer_gpt_block(g, l);
    const float *res = l ? SLAB(a->res3, l - 1, C) : a->encoded;
    float *ln1 = SLAB(a->ln1, l, C), *qkv = SLAB(a->qkv, l, 3 * C);
    float *atty = SLAB(a->atty, l, C), *att = SLAB(a->att, l, (size_t)NH * T);
    float *res2 = SLAB(a->res2, l, C), *ln2 = SLAB(a->ln2, l, C);
    float *fch = SLAB(a->fch, l, 4 * C), *fch_gelu = SLAB(a->fch_gelu, l, 4 * C);
    float *res3 = SLAB(a->res3, l, C);
    be->layernorm_forward(ln1, SLAB(a->ln1_mean, l, 1), SLAB(a->ln1_rstd, l, 1), res, P + b.ln1w,
                          P + b.ln1b, BT, C);
    /* qkv (BT, 3C) = ln1 (BT, C) qkvw^T + b */
    be->gemm(0, 1, BT, 3 * C, C, 1.0f, ln1, C, P + b.qkvw, C, 0.0f, qkv, 3 * C);
    be->bias_add(qkv, P + b.qkvb, BT, 3 * C, 1);
    be->attention_forward(atty, att, qkv, batch, T, C, NH);
    /* res2 = res + atty attprojw^T + b */
    be->copy(res2, res, sizeof(float) * n);
    be->gemm(0, 1, BT, C, C, 1.0f, atty, C, P + b.attprojw, C, 1.0f, res2, C);
    be->bias_add(res2, P + b.attprojb, BT, C, 1);
    be->layernorm_forward(ln2, SLAB(a->ln2_mean, l, 1), SLAB(a->ln2_rstd, l, 1), res2, P + b.ln2w,
                          P + b.ln2b, BT, C);
    be->gemm(0, 1, BT, 4 * C, C, 1.0f, ln2, C, P + b.fcw, C, 0.0f, fch, 4 * C);
    be->bias_add(fch, P + b.fcb, BT, 4 * C, 1);
    be->gelu_forward(fch_gelu, fch, (size_t)BT * 4 * C);
    /* res3 = res2 + gelu (BT, 4C) fcprojw^T (4C, C) + b */
    be->copy(res3, res2, sizeof(float) * n);
    be->gemm(0, 1, BT, C, 4 * C, 1.0f, fch_gelu, 4 * C, P + b.fcprojw, 4 * C, 1.0f, res3, C);
    be->bias_add(res3, P + b.fcprojb, BT, C, 1);
}

void trainer_gpt_forward_range(trainer_workspace_t *ws, const float *params, int batch, int first,
                               int last)
{
    const trainer_backend_t *be = ws->be;
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    trainer_gpt_acts_t *a = ws->gpt;
    DT_ASSERT(a && batch >= 1 && batch <= ws->max_batch);
    DT_ASSERT(first >= 0 && first < last && last <= g->L + 2);
    int T = g->T, C = g->C, BT = batch * T;
    size_t BTmax = (size_t)ws->max_batch * T;
    const float *P = params;
    if (first == 0) {
        be->tokens_split(a->tokens, a->targets, ws->x, batch, T);
        be->embed_forward(a->encoded, a->tokens, P + g->wte, P + g->wpe, batch, T, C);
    }
    for (int i = first > 1 ? first : 1; i < last && i <= g->L; i++)
        block_forward(ws, P, batch, i - 1);
    if (last == g->L + 2) {
        const float *res = g->L ? SLAB(a->res3, g->L - 1, C) : a->encoded;
        be->layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, res, P + g->lnfw, P + g->lnfb, BT,
                              C);
        /* logits (BT, V) = lnf (BT, C) wte^T: the output layer is the token embedding */
        be->gemm(0, 1, BT, g->V, C, 1.0f, a->lnf, C, P + g->wte, C, 0.0f, a->logits, g->V);
    }
}

void trainer_gpt_forward(trainer_workspace_t *ws, const float *params, int batch)
{
    trainer_gpt_forward_range(ws, params, batch, 0, ws->m->gpt.L + 2);
}

void trainer_gpt_loss(trainer_workspace_t *ws, int batch, int seed_backward, double *loss_sum,
                      double *correct)
{
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    trainer_gpt_acts_t *a = ws->gpt;
    int BT = batch * g->T, right;
    double loss;
    ws->be->softmax_xent(seed_backward ? a->dlogits : NULL, a->logits, a->targets, BT, g->V,
                         1.0f / (float)BT, &loss, &right);
    *loss_sum = loss / g->T;
    *correct = (double)right / g->T;
}

/* Block l's backward pass: dres holds d res3 on entry, d res (the block's input) on exit;
 * the block's gradients overwrite G's. */
static void block_backward(trainer_workspace_t *ws, const float *P, float *G, int batch, int l)
{
    const trainer_backend_t *be = ws->be;
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    trainer_gpt_acts_t *a = ws->gpt;
    int T = g->T, C = g->C, NH = g->NH, BT = batch * T;
    size_t BTmax = (size_t)ws->max_batch * T;
    trainer_gpt_block_t b = trainer_gpt_block(g, l);
    const float *res = l ? SLAB(a->res3, l - 1, C) : a->encoded;
    const float *ln1 = SLAB(a->ln1, l, C), *qkv = SLAB(a->qkv, l, 3 * C);
    const float *atty = SLAB(a->atty, l, C), *att = SLAB(a->att, l, (size_t)NH * T);
    const float *res2 = SLAB(a->res2, l, C), *ln2 = SLAB(a->ln2, l, C);
    const float *fch = SLAB(a->fch, l, 4 * C), *fch_gelu = SLAB(a->fch_gelu, l, 4 * C);
    /* MLP: dres holds d res3 */
    be->gemm(0, 0, BT, 4 * C, C, 1.0f, a->dres, C, P + b.fcprojw, 4 * C, 0.0f, a->dfch, 4 * C);
    be->gemm(1, 0, C, 4 * C, BT, 1.0f, a->dres, C, fch_gelu, 4 * C, 0.0f, G + b.fcprojw, 4 * C);
    be->bias_grad(G + b.fcprojb, a->dres, BT, C, 1);
    be->gelu_backward(a->dfch, a->dfch, fch, (size_t)BT * 4 * C);
    be->gemm(0, 0, BT, C, 4 * C, 1.0f, a->dfch, 4 * C, P + b.fcw, C, 0.0f, a->dln, C);
    be->gemm(1, 0, 4 * C, C, BT, 1.0f, a->dfch, 4 * C, ln2, C, 0.0f, G + b.fcw, C);
    be->bias_grad(G + b.fcb, a->dfch, BT, 4 * C, 1);
    /* the residual: dres becomes d res2 */
    be->layernorm_backward(a->dres, G + b.ln2w, G + b.ln2b, a->dln, res2, P + b.ln2w,
                           SLAB(a->ln2_mean, l, 1), SLAB(a->ln2_rstd, l, 1), BT, C, 1);
    /* attention */
    be->gemm(0, 0, BT, C, C, 1.0f, a->dres, C, P + b.attprojw, C, 0.0f, a->datty, C);
    be->gemm(1, 0, C, C, BT, 1.0f, a->dres, C, atty, C, 0.0f, G + b.attprojw, C);
    be->bias_grad(G + b.attprojb, a->dres, BT, C, 1);
    be->attention_backward(a->dqkv, a->datt, a->datty, qkv, att, batch, T, C, NH);
    be->gemm(0, 0, BT, C, 3 * C, 1.0f, a->dqkv, 3 * C, P + b.qkvw, C, 0.0f, a->dln, C);
    be->gemm(1, 0, 3 * C, C, BT, 1.0f, a->dqkv, 3 * C, ln1, C, 0.0f, G + b.qkvw, C);
    be->bias_grad(G + b.qkvb, a->dqkv, BT, 3 * C, 1);
    /* dres becomes d res, the block's input */
    be->layernorm_backward(a->dres, G + b.ln1w, G + b.ln1b, a->dln, res, P + b.ln1w,
                           SLAB(a->ln1_mean, l, 1), SLAB(a->ln1_rstd, l, 1), BT, C, 1);
}

/* Overwrites G's gradients of layers [first, last); the tied wte's is the output layer's
 * part when last = L + 2, plus the embedding's when first = 0. */
static void backward_layers(trainer_workspace_t *ws, const float *P, float *G, int batch, int first,
                            int last)
{
    const trainer_backend_t *be = ws->be;
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    trainer_gpt_acts_t *a = ws->gpt;
    int T = g->T, C = g->C, V = g->V, L = g->L, BT = batch * T;
    size_t BTmax = (size_t)ws->max_batch * T;
    if (last == L + 2) {
        /* output layer: dlnf (BT, C) = dlogits (BT, V) wte; dwte (V, C) = dlogits^T lnf */
        be->gemm(0, 0, BT, C, V, 1.0f, a->dlogits, V, P + g->wte, C, 0.0f, a->dln, C);
        be->gemm(1, 0, V, C, BT, 1.0f, a->dlogits, V, a->lnf, C, 0.0f, G + g->wte, C);
        const float *top = L ? SLAB(a->res3, L - 1, C) : a->encoded;
        be->layernorm_backward(a->dres, G + g->lnfw, G + g->lnfb, a->dln, top, P + g->lnfw,
                               a->lnf_mean, a->lnf_rstd, BT, C, 0);
    } else if (first == 0) {
        /* a stage without the output layer: wte's gradient is the embedding's alone */
        be->zero(G + g->wte, (size_t)V * C);
    }
    for (int i = (last <= L ? last : L + 1) - 1; i >= first && i >= 1; i--)
        block_backward(ws, P, G, batch, i - 1);
    /* the token embedding adds to the output layer's part of dwte */
    if (first == 0)
        be->embed_backward(G + g->wte, G + g->wpe, a->dres, a->tokens, batch, T, C);
}

void trainer_gpt_layer_params(const trainer_model_t *m, int i, size_t *lo, size_t *hi)
{
    const trainer_gpt_layout_t *g = &m->gpt;
    DT_ASSERT(i >= 0 && i <= g->L + 1);
    if (i == 0)
        *lo = 0, *hi = g->block0.ln1w;
    else if (i <= g->L)
        *lo = trainer_gpt_block(g, i - 1).ln1w, *hi = *lo + g->block_len;
    else
        *lo = g->lnfw, *hi = m->n_params;
}

void trainer_gpt_backward_range(trainer_workspace_t *ws, const float *params, float *grads,
                                int batch, int first, int last, int accumulate)
{
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    trainer_gpt_acts_t *a = ws->gpt;
    DT_ASSERT(a && batch >= 1 && batch <= ws->max_batch);
    DT_ASSERT(first >= 0 && first < last && last <= g->L + 2);
    if (!accumulate) {
        backward_layers(ws, params, grads, batch, first, last);
        return;
    }
    /* micro-batches: the layers' gradients in the scratch buffer, then added slice by slice */
    backward_layers(ws, params, a->grads, batch, first, last);
    size_t lo, hi;
    trainer_gpt_layer_params(ws->m, first, &lo, &hi);
    size_t p0 = lo;
    trainer_gpt_layer_params(ws->m, last - 1, &lo, &hi);
    ws->be->axpy(hi - p0, 1.0f, a->grads + p0, grads + p0);
    if (last == g->L + 2 && first > 0) /* the output layer's part of the tied wte */
        ws->be->axpy((size_t)g->V * g->C, 1.0f, a->grads + g->wte, grads + g->wte);
}

void trainer_gpt_backward(trainer_workspace_t *ws, const float *params, float *grads, int batch)
{
    trainer_gpt_backward_range(ws, params, grads, batch, 0, ws->m->gpt.L + 2, 0);
}

const float *trainer_gpt_layer_output(const trainer_workspace_t *ws, int i)
{
    const trainer_gpt_layout_t *g = &ws->m->gpt;
    const trainer_gpt_acts_t *a = ws->gpt;
    size_t BTmax = (size_t)ws->max_batch * g->T;
    DT_ASSERT(i >= 0 && i <= g->L + 1);
    return i == 0 ? a->encoded : i <= g->L ? SLAB(a->res3, i - 1, g->C) : a->logits;
}

const float *trainer_gpt_layer_grad(const trainer_workspace_t *ws, int i)
{
    DT_ASSERT(i >= 0 && i <= ws->m->gpt.L + 1);
    return i <= ws->m->gpt.L ? ws->gpt->dres : ws->gpt->dlogits;
}

void trainer_gpt_backward_sgd(trainer_workspace_t *ws, float *params, int batch, float lr,
                              float weight_decay)
{
    trainer_gpt_backward(ws, params, ws->gpt->grads, batch);
    ws->be->sgd_update(params, ws->gpt->grads, NULL, ws->m->n_params, lr, 0.0f, weight_decay);
}

dt_status trainer_gpt_windows(trainer_dataset_t *ds, const unsigned char *text, size_t len, int seq,
                              dt_err_t *err)
{
    memset(ds, 0, sizeof *ds);
    if (seq < 1 || len < (size_t)seq + 1)
        return dt_err_input(err, "a text of %zu bytes holds no window of %d + 1 tokens", len, seq);
    size_t dim = (size_t)seq + 1;
    ds->n = len - (size_t)seq;
    ds->dim = dim;
    ds->channels = ds->rows = 1;
    ds->cols = (int)dim;
    ds->classes = 256;
    ds->x = dt_malloc(sizeof(float) * ds->n * dim);
    ds->y = dt_calloc(ds->n, 1);
    for (size_t i = 0; i < ds->n; i++)
        for (size_t t = 0; t < dim; t++)
            ds->x[i * dim + t] = (float)text[i + t];
    return DT_OK;
}

const float *trainer_gpt_logits(const trainer_workspace_t *ws)
{
    return ws->gpt->logits;
}

dt_status trainer_gpt_check_backend(const trainer_backend_t *be, dt_err_t *err)
{
    if (!be->tokens_split || !be->embed_forward || !be->embed_backward || !be->layernorm_forward ||
        !be->layernorm_backward || !be->gelu_forward || !be->gelu_backward ||
        !be->attention_forward || !be->attention_backward)
        return dt_err_input(err,
                            "the %s backend has no transformer kernels (model.arch = "
                            "gpt runs on the cpu backend)",
                            be->name);
    return DT_OK;
}
