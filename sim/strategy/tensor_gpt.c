/* tensor, on the real gpt: each block split across T workers as Megatron-LM splits a
 * transformer (Shoeybi et al. 2019, section 3). Attention by heads: member r holds heads
 * [r h, (r+1) h), h = heads / T, that is rows [r c, (r+1) c) of each of Q, K and V
 * (c = hidden / T) and their biases, runs its heads' causal attention on its own, and
 * multiplies their outputs by its columns of the output projection: a partial sum of the
 * projection, completed by an all-reduce of the (batch, seq, hidden) activations. The MLP
 * likewise: member r holds rows [r f, (r+1) f) of fc (f = 4 hidden / T) with their biases,
 * applies GELU to its slice, multiplies it by its columns of fc proj, and an all-reduce
 * completes the sum. Backward mirrors it: the gradient of each pair's input (the layer
 * norm's output) is a partial sum, one all-reduce each. Four all-reduces a block and step.
 *
 * Replicated on every member, as Megatron-LM replicates its layer norms: the embeddings,
 * the layer norms, the row-split projections' biases (added after the all-reduce), the final
 * norm and the output layer tied to wte. Their inputs are the same on every member after
 * each all-reduce (a ring all-reduce leaves the same bits everywhere), so their gradients
 * are too, and each member updates its own copy in its own parameter buffer; its split
 * slices live there too, at their offsets in the model's layout. Megatron-LM splits the
 * output layer by vocabulary as well; here every member computes the whole logits and the
 * loss (and is charged for them), which keeps the loss in the backend's one op.
 *
 * Sequence parallelism (strategy.sequence_parallel, Korthikanti et al. 2022): between the
 * split layers the B S token rows are divided among the members (member r holds rows
 * [r R, (r+1) R), R = B S / T, of the residual stream), each all-reduce becoming a
 * reduce-scatter (after a row-split product) or an all-gather (before a column-split one:
 * the layer norm's output, kept whole for the weight gradients), the same bytes; the norms,
 * the residual additions and the output layer then run on a member's rows alone, so the
 * replicated tensors' gradients are partial sums: one all-reduce of them (and of the loss)
 * ends the backward pass, as Megatron-LM all-reduces its layer norms' gradients.
 *
 * FLOPs by trainer_gpt_flops' convention (dtsim profile transformer's): a member is charged
 * 1/T of each split layer's and attention's, the norms and the output layer whole (1/T of
 * them too under sequence parallelism).
 * Worker 0 evaluates at the first all-reduce of the next step (every member's update of the
 * step is done then), on its buffer with the other members' slices copied in. */
#include <string.h>

#include "tensor_gpt.h"
#include "tensor_impl.h"

struct tg_worker {
    int T, r, B, L, C, c, f, h, S, V; /* S: tokens a window; c, f, h: a member's share */
    const sim_group_t *grp;           /* the tensor group of the pass under way; r: its member */
    int sp, R, row0; /* sequence parallel; its rows of the stream [row0, row0 + R) */
    size_t n_rep;    /* replicated parameters (sp: their gradients all-reduced) */
    uint32_t *idx;
    float *x;         /* (B, S + 1) dev: the windows */
    uint8_t *labels;  /* (B) (unused: the targets are the windows' tokens) */
    int32_t *tokens;  /* (B, S) */
    uint8_t *targets; /* (B, S) */
    float *embed;     /* (B S, C) the embeddings (sp: all rows, of which its R) */
    float *encoded;   /* (R, C) the first block's input: its rows */
    /* per block, L slabs each: what the backward pass reads (stream tensors: its R rows) */
    float *ln1, *ln1_mean, *ln1_rstd; /* (B S, C) whole, (R), (R) */
    float *qkv;                       /* (B S, 3c) its heads' queries, keys, values */
    float *atty;                      /* (B S, c) its heads' outputs */
    float *att;                       /* (B, h, S, S) */
    float *res2;                      /* (R, C) */
    float *ln2, *ln2_mean, *ln2_rstd; /* (B S, C) whole, (R), (R) */
    float *fch, *fch_gelu;            /* (B S, f) */
    float *res3;                      /* (R, C) */
    float *lnf, *lnf_mean, *lnf_rstd; /* (R, C), (R), (R) */
    float *logits, *dlogits;          /* (R, V) */
    float *part;                      /* (B S, C) a partial sum, then its rows' sum */
    float *dres;                      /* (R, C) the stream's gradient, its rows */
    float *dfull;                     /* (B S, C) sp: the stream's gradient, all rows */
    float *dln;                       /* (B S, C) a partial sum, then its rows' sum */
    float *rep;                       /* sp: (n_rep + 1) replicated gradients and the loss */
    float *datty;                     /* (B S, c) */
    float *dqkv;                      /* (B S, 3c) */
    float *dfch;                      /* (B S, f) */
    float *datt;                      /* (S, S) */
    float *qkvb, *dqkvb;              /* (3c) its Q, K, V biases side by side */
    float *one;                       /* (1) the final barrier's payload */
    long pending_step;                /* worker 0: an evaluation of this step is due, or -1 */
    double pending_time;
};
typedef sim_tgpt_t tg_worker_t;

/* an X-macro list, a few names a line (clang-format would stair-step it) */
// clang-format off
#define TG_BUFS(X)                                                                 \
    X(x) X(labels) X(tokens) X(targets) X(embed) X(encoded) X(ln1) X(ln1_mean)     \
    X(ln1_rstd) X(qkv) X(atty) X(att) X(res2) X(ln2) X(ln2_mean) X(ln2_rstd)       \
    X(fch) X(fch_gelu) X(res3) X(lnf) X(lnf_mean) X(lnf_rstd) X(logits) X(dlogits) \
    X(part) X(dres) X(dfull) X(dln) X(rep) X(datty) X(dqkv) X(dfch)                \
    X(datt) X(qkvb) X(dqkvb) X(one)
// clang-format on

void sim_tgpt_free(const trainer_backend_t *be, sim_tgpt_t *t)
{
    if (!t)
        return;
#define FREE(b) be->free(t->b);
    TG_BUFS(FREE)
#undef FREE
    free(t->idx);
    free(t);
}

static void tg_free(sim_node_t *node)
{
    sim_tgpt_free(sim_current->be, node->state);
    node->state = NULL;
}

static void count_piece(void *ctx, size_t at, size_t n);
static void tg_pieces(const trainer_gpt_layout_t *g, int T, int r, int split,
                      void (*fn)(void *ctx, size_t at, size_t n), void *ctx);

sim_tgpt_t *sim_tgpt_make(sim_run_t *run, int T, int r, int sp, int batch)
{
    const trainer_backend_t *be = run->be;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    tg_worker_t *t = dt_calloc(1, sizeof *t);
    t->T = T, t->r = r, t->B = batch;
    t->L = g->L, t->C = g->C, t->S = g->T, t->V = g->V;
    t->c = g->C / t->T, t->f = 4 * g->C / t->T, t->h = g->NH / t->T;
    size_t BS = (size_t)t->B * t->S, C = (size_t)t->C, L = (size_t)t->L;
    t->sp = t->T > 1 && sp; /* B S % T == 0: checked */
    t->R = t->sp ? (int)(BS / (size_t)t->T) : (int)BS;
    t->row0 = t->sp ? t->r * t->R : 0;
    size_t R = (size_t)t->R;
    double rep = 0;
    tg_pieces(g, t->T, t->r, 0, count_piece, &rep);
    t->n_rep = (size_t)rep;
#define F(n) be->alloc(sizeof(float) * (n))
    t->x = F((size_t)t->B * run->model.in_size);
    t->labels = be->alloc((size_t)t->B);
    t->tokens = be->alloc(sizeof(int32_t) * BS);
    t->targets = be->alloc(BS);
    t->embed = F(BS * C);
    t->encoded = F(R * C);
    t->ln1 = F(L * BS * C);
    t->ln1_mean = F(L * R);
    t->ln1_rstd = F(L * R);
    t->qkv = F(L * BS * 3 * (size_t)t->c);
    t->atty = F(L * BS * (size_t)t->c);
    t->att = F(L * BS * (size_t)t->h * (size_t)t->S);
    t->res2 = F(L * R * C);
    t->ln2 = F(L * BS * C);
    t->ln2_mean = F(L * R);
    t->ln2_rstd = F(L * R);
    t->fch = F(L * BS * (size_t)t->f);
    t->fch_gelu = F(L * BS * (size_t)t->f);
    t->res3 = F(L * R * C);
    t->lnf = F(R * C);
    t->lnf_mean = F(R);
    t->lnf_rstd = F(R);
    t->logits = F(R * (size_t)t->V);
    t->dlogits = F(R * (size_t)t->V);
    t->part = F(BS * C);
    t->dres = F(R * C);
    t->dfull = F(BS * C);
    t->dln = F(BS * C);
    t->rep = F(t->n_rep + 1);
    t->datty = F(BS * (size_t)t->c);
    t->dqkv = F(BS * 3 * (size_t)t->c);
    t->dfch = F(BS * (size_t)t->f);
    t->datt = F((size_t)t->S * t->S);
    t->qkvb = F(3 * (size_t)t->c);
    t->dqkvb = F(3 * (size_t)t->c);
    t->one = F(1);
#undef F
    t->idx = dt_malloc(sizeof(uint32_t) * (size_t)t->B);
    t->pending_step = -1;
    return t;
}

void sim_tgpt_gather(sim_run_t *run, sim_tgpt_t *t, const uint32_t *idx)
{
    run->be->gather(t->x, t->labels, run->train.x, run->train.y, idx, t->B, run->train.dim);
}

/* The tensor strategy's member: the whole batch, its group every worker. */
static tg_worker_t *tg_make(sim_run_t *run, sim_node_t *node)
{
    int T = (int)scenario_own(run->sc, "tensor_parallel")->l;
    tg_worker_t *t =
        sim_tgpt_make(run, T, node->rank, (int)scenario_own(run->sc, "sequence_parallel")->i,
                      (int)run->sc->batch);
    t->grp = &((sim_groups_t *)run->shared)->all;
    node->state = t;
    node->state_free = tg_free;
    return t;
}

/* A member's FLOPs per sample: a layer norm; a block's attention (its heads' share of the
 * QKV product, the attention and the output projection) and MLP products; the output layer
 * with the final norm. Backward passes twice these (trainer_gpt_flops' convention). Under
 * sequence parallelism the norms and the output layer run on 1/T of the rows. */
typedef struct tg_flops {
    double norm, attn, mlp, top;
} tg_flops_t;

static tg_flops_t tg_flops(const trainer_gpt_layout_t *g, int T, int sp)
{
    double S = g->T, C = g->C, rows = sp ? 1.0 / T : 1.0;
    tg_flops_t f;
    f.norm = 4.0 * S * C * rows;
    f.attn = (2.0 * S * C * 3.0 * C + 4.0 * S * S * C + 5.0 * g->NH * S * S + 2.0 * S * C * C) / T;
    f.mlp = 2.0 * 2.0 * S * C * 4.0 * C / T;
    f.top = f.norm + 2.0 * S * C * g->V * rows;
    return f;
}
/* Calls fn(at, n) on each contiguous piece of the parameters that member r of T holds of
 * the split layers (split), or on each replicated piece (!split), of gpt's pipeline layers
 * [first, last) (0: the embeddings, 1 .. L: the blocks, L + 1: the final norm; the tied wte
 * is the embeddings'), in layout order. */
void sim_tgpt_pieces(const trainer_gpt_layout_t *g, int T, int r, int split, int first, int last,
                     void (*fn)(void *ctx, size_t at, size_t n), void *ctx)
{
    size_t C = (size_t)g->C, c = C / (size_t)T, f = 4 * C / (size_t)T;
    if (!split && first == 0)
        fn(ctx, 0, g->block0.ln1w); /* wte, wpe */
    for (int l = (first > 0 ? first : 1) - 1; l < g->L && l + 1 < last; l++) {
        trainer_gpt_block_t b = trainer_gpt_block(g, l);
        if (!split) {
            fn(ctx, b.ln1w, 2 * C);     /* ln1 w, b */
            fn(ctx, b.attprojb, 3 * C); /* attn proj b, ln2 w, b */
            fn(ctx, b.fcprojb, C);
            continue;
        }
        for (size_t j = 0; j < 3; j++) /* its rows of Q, K, V */
            fn(ctx, b.qkvw + (j * C + (size_t)r * c) * C, c * C);
        for (size_t j = 0; j < 3; j++)
            fn(ctx, b.qkvb + j * C + (size_t)r * c, c);
        for (size_t row = 0; row < C; row++) /* its columns of the projection */
            fn(ctx, b.attprojw + row * C + (size_t)r * c, c);
        fn(ctx, b.fcw + (size_t)r * f * C, f * C);
        fn(ctx, b.fcb + (size_t)r * f, f);
        for (size_t row = 0; row < C; row++)
            fn(ctx, b.fcprojw + row * 4 * C + (size_t)r * f, f);
    }
    if (!split && last == g->L + 2)
        fn(ctx, g->lnfw, 2 * C);
}

static void tg_pieces(const trainer_gpt_layout_t *g, int T, int r, int split,
                      void (*fn)(void *ctx, size_t at, size_t n), void *ctx)
{
    sim_tgpt_pieces(g, T, r, split, 0, g->L + 2, fn, ctx);
}

/* The all-reduce (sum) over the T members; failure ends the run. */
static int sum_all(sim_run_t *run, const tg_worker_t *t, float *buf, size_t n)
{
    if (sim_allreduce(run, t->grp, t->r, buf, n, SIM_ALLREDUCE_RING) != SIM_OK) {
        run->failed = 1;
        return -1;
    }
    return 0;
}

/* Worker 0's evaluation of the previous step, deferred to the first all-reduce of this one
 * (or to the end-of-training barrier): its buffer with the other members' slices. */
typedef struct tg_copy {
    const trainer_backend_t *be;
    float *dst;
    const float *src;
} tg_copy_t;

static void copy_piece(void *ctx, size_t at, size_t n)
{
    tg_copy_t *k = ctx;
    k->be->copy(k->dst + at, k->src + at, sizeof(float) * n);
}

void sim_tgpt_assemble(sim_run_t *run, int T)
{
    for (int r = 1; r < T; r++) {
        tg_copy_t k = {run->be, run->workers[0].params, run->workers[r].params};
        tg_pieces(&run->model.gpt, T, r, 1, copy_piece, &k);
    }
}

static void evaluate_pending(sim_run_t *run, sim_node_t *node, tg_worker_t *t)
{
    if (node->rank != 0 || t->pending_step < 0) /* (a pipeline's members: never pending) */
        return;
    sim_tgpt_assemble(run, t->T);
    sim_evaluate_at(run, t->pending_step, node->params, t->pending_time);
    t->pending_step = -1;
}

/* Whole tensors: B S rows; the stream's: a member's R. */
#define SLAB(ptr, l, per) ((ptr) + (size_t)(l)*BS * (per))
#define RSLAB(ptr, l, per) ((ptr) + (size_t)(l) * (size_t)t->R * (per))

/* After a row-split product: the partial sums in buf (B S, C) summed over the members, all
 * rows (all-reduce) or its R (sp: reduce-scatter); its rows' sums, or NULL on failure. */
static float *sum_rows(sim_run_t *run, tg_worker_t *t, float *buf)
{
    size_t n = (size_t)t->B * t->S * (size_t)t->C;
    sim_status_t st = t->sp ? sim_reduce_scatter(run, t->grp, t->r, buf, n)
                            : sim_allreduce(run, t->grp, t->r, buf, n, SIM_ALLREDUCE_RING);
    if (st != SIM_OK) {
        run->failed = 1;
        return NULL;
    }
    return buf + (size_t)t->row0 * t->C;
}

/* Before a column-split product under sp: whole (B S, C), its R rows written at its place,
 * all-gathered. 0, or -1 on failure. */
static int gather_rows(sim_run_t *run, tg_worker_t *t, float *whole)
{
    if (t->sp &&
        sim_allgather(run, t->grp, t->r, whole, (size_t)t->B * t->S * (size_t)t->C) != SIM_OK) {
        run->failed = 1;
        return -1;
    }
    return 0;
}

/* Block l's forward pass on member r's share; res3 of layer l from res (its rows). */
static int block_forward(sim_run_t *run, sim_node_t *node, tg_worker_t *t, const float *P, int l,
                         int *first_done)
{
    const trainer_backend_t *be = run->be;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    trainer_gpt_block_t b = trainer_gpt_block(g, l);
    int B = t->B, S = t->S, C = t->C, c = t->c, f = t->f, BT = B * S, r = t->r, R = t->R;
    size_t BS = (size_t)BT, n = (size_t)R * C, at = (size_t)t->row0 * C;
    tg_flops_t fl = tg_flops(g, t->T, t->sp);
    const float *res = l ? RSLAB(t->res3, l - 1, C) : t->encoded, *sum;
    float *ln1 = SLAB(t->ln1, l, C), *qkv = SLAB(t->qkv, l, 3 * c), *atty = SLAB(t->atty, l, c);
    float *att = SLAB(t->att, l, (size_t)t->h * S), *res2 = RSLAB(t->res2, l, C);
    float *ln2 = SLAB(t->ln2, l, C), *fch = SLAB(t->fch, l, f), *gel = SLAB(t->fch_gelu, l, f);
    float *res3 = RSLAB(t->res3, l, C);
    double w0 = dt_wall_seconds();
    be->layernorm_forward(ln1 + at, RSLAB(t->ln1_mean, l, 1), RSLAB(t->ln1_rstd, l, 1), res,
                          P + b.ln1w, P + b.ln1b, R, C);
    sim_charge(run, node, fl.norm * B, dt_wall_seconds() - w0);
    if (gather_rows(run, t, ln1))
        return -1;
    w0 = dt_wall_seconds();
    for (int j = 0; j < 3; j++) { /* its heads' Q, K, V (BT, c) each, side by side */
        size_t rows = (size_t)j * C + (size_t)r * c;
        be->gemm(0, 1, BT, c, C, 1.0f, ln1, C, P + b.qkvw + rows * C, C, 0.0f, qkv + j * c, 3 * c);
        be->copy(t->qkvb + j * c, P + b.qkvb + rows, sizeof(float) * (size_t)c);
    }
    be->bias_add(qkv, t->qkvb, BT, 3 * c, 1);
    be->attention_forward(atty, att, qkv, B, S, c, t->h);
    /* its part of the projection: atty (BT, c) times its columns (C, c) of attprojw */
    be->gemm(0, 1, BT, C, c, 1.0f, atty, c, P + b.attprojw + (size_t)r * c, C, 0.0f, t->part, C);
    sim_charge(run, node, fl.attn * B, dt_wall_seconds() - w0);
    if (!(sum = sum_rows(run, t, t->part)))
        return -1;
    if (!(*first_done)++)
        evaluate_pending(run, node, t);
    w0 = dt_wall_seconds();
    be->copy(res2, res, sizeof(float) * n);
    be->axpy(n, 1.0f, sum, res2);
    be->bias_add(res2, P + b.attprojb, R, C, 1);
    be->layernorm_forward(ln2 + at, RSLAB(t->ln2_mean, l, 1), RSLAB(t->ln2_rstd, l, 1), res2,
                          P + b.ln2w, P + b.ln2b, R, C);
    sim_charge(run, node, fl.norm * B, dt_wall_seconds() - w0);
    if (gather_rows(run, t, ln2))
        return -1;
    w0 = dt_wall_seconds();
    be->gemm(0, 1, BT, f, C, 1.0f, ln2, C, P + b.fcw + (size_t)r * f * C, C, 0.0f, fch, f);
    be->bias_add(fch, P + b.fcb + (size_t)r * f, BT, f, 1);
    be->gelu_forward(gel, fch, BS * (size_t)f);
    be->gemm(0, 1, BT, C, f, 1.0f, gel, f, P + b.fcprojw + (size_t)r * f, 4 * C, 0.0f, t->part, C);
    sim_charge(run, node, fl.mlp * B, dt_wall_seconds() - w0);
    if (!(sum = sum_rows(run, t, t->part)))
        return -1;
    w0 = dt_wall_seconds();
    be->copy(res3, res2, sizeof(float) * n);
    be->axpy(n, 1.0f, sum, res3);
    be->bias_add(res3, P + b.fcprojb, R, C, 1);
    sim_charge(run, node, 0, dt_wall_seconds() - w0);
    return 0;
}

/* The forward pass of gpt's pipeline layers [first, last) (the windows in t->x at first 0;
 * else block first - 1's input is the stream the layers before left in t) and, with the
 * output layer, the loss of its rows (all of them without sp) summed over its tokens into
 * *loss. 0, or -1 when the run failed. */
int sim_tgpt_forward(sim_run_t *run, sim_node_t *node, sim_tgpt_t *t, const sim_group_t *grp,
                     const float *P, int first, int last, double *loss)
{
    const trainer_backend_t *be = run->be;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    int B = t->B, S = t->S, C = t->C, R = t->R, first_done = 0, right;
    tg_flops_t fl = tg_flops(g, t->T, t->sp);
    t->grp = grp;
    double w0 = dt_wall_seconds();
    if (first == 0) {
        be->tokens_split(t->tokens, t->targets, t->x, B, S);
        be->embed_forward(t->embed, t->tokens, P + g->wte, P + g->wpe, B, S, C);
        be->copy(t->encoded, t->embed + (size_t)t->row0 * C, sizeof(float) * (size_t)R * C);
        sim_charge(run, node, 0, dt_wall_seconds() - w0);
    }
    for (int i = first > 0 ? first : 1; i < last && i <= t->L; i++)
        if (block_forward(run, node, t, P, i - 1, &first_done))
            return -1;
    if (last < t->L + 2)
        return 0;
    w0 = dt_wall_seconds();
    be->layernorm_forward(t->lnf, t->lnf_mean, t->lnf_rstd, RSLAB(t->res3, t->L - 1, C),
                          P + g->lnfw, P + g->lnfb, R, C);
    be->gemm(0, 1, R, t->V, C, 1.0f, t->lnf, C, P + g->wte, C, 0.0f, t->logits, t->V);
    /* d(mean over all B S tokens)/d(logits), its rows' share */
    be->softmax_xent(t->dlogits, t->logits, t->targets + t->row0, R, t->V, 1.0f / (float)(B * S),
                     loss, &right);
    sim_charge(run, node, fl.top * B, dt_wall_seconds() - w0);
    return 0;
}

/* Block l's backward pass: dres holds d res3 (its rows) on entry, d res on exit; member r's
 * slices' gradients and the replicated ones' (sp: its rows' part) into G. */
static int block_backward(sim_run_t *run, sim_node_t *node, tg_worker_t *t, const float *P,
                          float *G, int l)
{
    const trainer_backend_t *be = run->be;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    trainer_gpt_block_t b = trainer_gpt_block(g, l);
    int B = t->B, S = t->S, C = t->C, c = t->c, f = t->f, BT = B * S, r = t->r, R = t->R;
    size_t BS = (size_t)BT, at = (size_t)t->row0 * C;
    tg_flops_t fl = tg_flops(g, t->T, t->sp);
    const float *res = l ? RSLAB(t->res3, l - 1, C) : t->encoded, *sum;
    const float *ln1 = SLAB(t->ln1, l, C), *qkv = SLAB(t->qkv, l, 3 * c);
    const float *atty = SLAB(t->atty, l, c), *att = SLAB(t->att, l, (size_t)t->h * S);
    const float *res2 = RSLAB(t->res2, l, C), *ln2 = SLAB(t->ln2, l, C);
    const float *fch = SLAB(t->fch, l, f), *gel = SLAB(t->fch_gelu, l, f);
    /* the stream's gradient, all rows (sp: gathered) */
    float *dy = t->sp ? t->dfull : t->dres;
    if (t->sp) {
        be->copy(dy + at, t->dres, sizeof(float) * (size_t)R * C);
        if (gather_rows(run, t, dy))
            return -1;
    }
    /* MLP: its columns of fc proj, its rows of fc */
    double w0 = dt_wall_seconds();
    be->gemm(0, 0, BT, f, C, 1.0f, dy, C, P + b.fcprojw + (size_t)r * f, 4 * C, 0.0f, t->dfch, f);
    be->gemm(1, 0, C, f, BT, 1.0f, dy, C, gel, f, 0.0f, G + b.fcprojw + (size_t)r * f, 4 * C);
    be->bias_grad(G + b.fcprojb, t->dres, R, C, 1);
    be->gelu_backward(t->dfch, t->dfch, fch, BS * (size_t)f);
    be->gemm(0, 0, BT, C, f, 1.0f, t->dfch, f, P + b.fcw + (size_t)r * f * C, C, 0.0f, t->dln, C);
    be->gemm(1, 0, f, C, BT, 1.0f, t->dfch, f, ln2, C, 0.0f, G + b.fcw + (size_t)r * f * C, C);
    be->bias_grad(G + b.fcb + (size_t)r * f, t->dfch, BT, f, 1);
    sim_charge(run, node, 2.0 * fl.mlp * B, dt_wall_seconds() - w0);
    if (!(sum = sum_rows(run, t, t->dln))) /* the norm's output gradient, summed */
        return -1;
    w0 = dt_wall_seconds();
    be->layernorm_backward(t->dres, G + b.ln2w, G + b.ln2b, sum, res2, P + b.ln2w,
                           RSLAB(t->ln2_mean, l, 1), RSLAB(t->ln2_rstd, l, 1), R, C, 1);
    sim_charge(run, node, 2.0 * fl.norm * B, dt_wall_seconds() - w0);
    if (t->sp) {
        be->copy(dy + at, t->dres, sizeof(float) * (size_t)R * C);
        if (gather_rows(run, t, dy))
            return -1;
    }
    /* attention: its columns of the projection, its heads, its rows of Q, K, V */
    w0 = dt_wall_seconds();
    be->gemm(0, 0, BT, c, C, 1.0f, dy, C, P + b.attprojw + (size_t)r * c, C, 0.0f, t->datty, c);
    be->gemm(1, 0, C, c, BT, 1.0f, dy, C, atty, c, 0.0f, G + b.attprojw + (size_t)r * c, C);
    be->bias_grad(G + b.attprojb, t->dres, R, C, 1);
    be->attention_backward(t->dqkv, t->datt, t->datty, qkv, att, B, S, c, t->h);
    be->bias_grad(t->dqkvb, t->dqkv, BT, 3 * c, 1);
    for (int j = 0; j < 3; j++) {
        size_t rows = (size_t)j * C + (size_t)r * c;
        be->gemm(0, 0, BT, C, c, 1.0f, t->dqkv + j * c, 3 * c, P + b.qkvw + rows * C, C,
                 j ? 1.0f : 0.0f, t->dln, C);
        be->gemm(1, 0, c, C, BT, 1.0f, t->dqkv + j * c, 3 * c, ln1, C, 0.0f, G + b.qkvw + rows * C,
                 C);
        be->copy(G + b.qkvb + rows, t->dqkvb + j * c, sizeof(float) * (size_t)c);
    }
    sim_charge(run, node, 2.0 * fl.attn * B, dt_wall_seconds() - w0);
    if (!(sum = sum_rows(run, t, t->dln)))
        return -1;
    w0 = dt_wall_seconds();
    be->layernorm_backward(t->dres, G + b.ln1w, G + b.ln1b, sum, res, P + b.ln1w,
                           RSLAB(t->ln1_mean, l, 1), RSLAB(t->ln1_rstd, l, 1), R, C, 1);
    sim_charge(run, node, 2.0 * fl.norm * B, dt_wall_seconds() - w0);
    return 0;
}

typedef struct tg_pack {
    const trainer_backend_t *be;
    float *G, *buf;
    size_t n;
    int out; /* 0: G's pieces into buf; 1: back */
} tg_pack_t;

static void pack_piece(void *ctx, size_t at, size_t n)
{
    tg_pack_t *k = ctx;
    if (k->out)
        k->be->copy(k->G + at, k->buf + k->n, sizeof(float) * n);
    else
        k->be->copy(k->buf + k->n, k->G + at, sizeof(float) * n);
    k->n += n;
}

size_t sim_tgpt_pack(const trainer_backend_t *be, const trainer_gpt_layout_t *g, int T, int r,
                     int split, int first, int last, float *layout, float *pack, int out)
{
    tg_pack_t k = {be, layout, pack, 0, out};
    sim_tgpt_pieces(g, T, r, split, first, last, pack_piece, &k);
    return k.n;
}

/* The backward pass of gpt's pipeline layers [first, last): with the output layer from the
 * loss's gradient, else from the stream's gradient the layers after left in t->dres; their
 * gradients into G (overwritten; the output layer's part of the tied wte too, to which the
 * embeddings add theirs: without the output layer, G's wte starts from zero).
 * t->dres is left holding the gradient of layer first - 1's output. 0, or -1 on failure. */
int sim_tgpt_backward(sim_run_t *run, sim_node_t *node, sim_tgpt_t *t, const sim_group_t *grp,
                      const float *P, float *G, int first, int last)
{
    const trainer_backend_t *be = run->be;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    int B = t->B, S = t->S, C = t->C, V = t->V, R = t->R;
    tg_flops_t fl = tg_flops(g, t->T, t->sp);
    t->grp = grp;
    double w0 = dt_wall_seconds();
    if (last == t->L + 2) {
        be->gemm(0, 0, R, C, V, 1.0f, t->dlogits, V, P + g->wte, C, 0.0f, t->dln, C);
        be->gemm(1, 0, V, C, R, 1.0f, t->dlogits, V, t->lnf, C, 0.0f, G + g->wte, C);
        be->layernorm_backward(t->dres, G + g->lnfw, G + g->lnfb, t->dln,
                               RSLAB(t->res3, t->L - 1, C), P + g->lnfw, t->lnf_mean, t->lnf_rstd,
                               R, C, 0);
        sim_charge(run, node, 2.0 * fl.top * B, dt_wall_seconds() - w0);
    } else if (first == 0) {
        be->zero(G + g->wte, (size_t)V * C);
    }
    for (int i = (last <= t->L ? last : t->L + 1) - 1; i >= first && i >= 1; i--)
        if (block_backward(run, node, t, P, G, i - 1))
            return -1;
    if (first > 0)
        return 0;
    w0 = dt_wall_seconds();
    const float *dy = t->dres;
    if (t->sp) { /* the embeddings' gradient from its rows: the others' zero */
        be->zero(t->dfull, (size_t)B * S * C);
        be->copy(t->dfull + (size_t)t->row0 * C, t->dres, sizeof(float) * (size_t)R * C);
        dy = t->dfull;
    }
    be->embed_backward(G + g->wte, G + g->wpe, dy, t->tokens, B, S, C);
    sim_charge(run, node, 0, dt_wall_seconds() - w0);
    return 0;
}

/* Under sp, after the whole backward pass: the all-reduce of the replicated tensors'
 * gradients and of the loss (*loss: its rows', the whole batch's on return). 0, or -1 on
 * failure. */
static int sp_reduce(sim_run_t *run, tg_worker_t *t, float *G, double *loss)
{
    const trainer_backend_t *be = run->be;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    if (!t->sp)
        return 0;
    size_t n_rep = sim_tgpt_pack(be, g, t->T, t->r, 0, 0, g->L + 2, G, t->rep, 0);
    DT_ASSERT(n_rep == t->n_rep);
    float l = (float)*loss;
    be->upload(t->rep + t->n_rep, &l, sizeof l);
    if (sum_all(run, t, t->rep, t->n_rep + 1))
        return -1;
    be->download(&l, t->rep + t->n_rep, sizeof l);
    *loss = l;
    sim_tgpt_pack(be, g, t->T, t->r, 0, 0, g->L + 2, G, t->rep, 1);
    return 0;
}

typedef struct tg_sgd {
    sim_run_t *run;
    sim_node_t *node;
    long step;
} tg_sgd_t;

static void sgd_piece(void *ctx, size_t at, size_t n)
{
    tg_sgd_t *k = ctx;
    sim_node_t *nd = k->node;
    sim_update(k->run, nd->params + at, nd->grads + at, nd->velocity + at, sim_moment2(nd, at), n,
               k->step, k->step + 1);
}

typedef struct tg_clip {
    const trainer_backend_t *be;
    float *grads;
    double sq;
    float f;
} tg_clip_t;

static void sumsq_piece(void *ctx, size_t at, size_t n)
{
    tg_clip_t *k = ctx;
    k->sq += k->be->sumsq(k->grads + at, n);
}

static void scale_piece(void *ctx, size_t at, size_t n)
{
    tg_clip_t *k = ctx;
    k->be->scale(n, k->f, k->grads + at);
}

/* model.clip_norm: the member's gradient scaled by the model's norm, the sum over the members
 * of their split pieces' squares and, once (member 0's), the replicated pieces' (all-reduced
 * already: every member holds the same), as Megatron-LM skips a tensor-parallel duplicate;
 * a tree all-reduce of one float. Returns -1 when the run failed. */
static int clip_grads(sim_run_t *run, sim_node_t *node, tg_worker_t *t)
{
    float clip = run->sc->sgd.clip_norm;
    if (clip <= 0.0f)
        return 0;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    tg_clip_t k = {run->be, node->grads, 0, 1.0f};
    tg_pieces(g, t->T, t->r, 1, sumsq_piece, &k);
    if (t->r == 0)
        tg_pieces(g, t->T, t->r, 0, sumsq_piece, &k);
    if ((k.f = sim_clip_factor_sum(run, node, t->grp, t->r, k.sq)) < 0.0f) {
        run->failed = 1;
        return -1;
    }
    if (k.f != 1.0f) {
        tg_pieces(g, t->T, t->r, 1, scale_piece, &k);
        tg_pieces(g, t->T, t->r, 0, scale_piece, &k);
    }
    return 0;
}

void sim_tensor_gpt_worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    tg_worker_t *t = tg_make(run, node);
    sim_breakdown_comm(node, RESULTS_PART_TENSOR); /* every collective is the group's */
    long step;
    for (step = 0; !sim_should_stop(run, step) && !run->ended; step++) {
        sim_batch_global(run, step, 0, t->B, t->idx);
        double w0 = dt_wall_seconds();
        run->be->gather(t->x, t->labels, run->train.x, run->train.y, t->idx, t->B, run->train.dim);
        sim_charge(run, node, 0, dt_wall_seconds() - w0);
        double loss;
        int layers = t->L + 2;
        if (sim_tgpt_forward(run, node, t, t->grp, node->params, 0, layers, &loss) ||
            sim_tgpt_backward(run, node, t, t->grp, node->params, node->grads, 0, layers) ||
            sp_reduce(run, t, node->grads, &loss))
            return;
        if (clip_grads(run, node, t))
            return;
        tg_sgd_t k = {run, node, step};
        tg_pieces(&run->model.gpt, t->T, t->r, 1, sgd_piece, &k);
        tg_pieces(&run->model.gpt, t->T, t->r, 0, sgd_piece, &k);
        if (node->rank == 0) {
            sim_count_step(run, node, t->B, loss / ((double)t->B * t->S));
            if (sim_eval_due(run, step + 1)) {
                t->pending_step = step + 1;
                t->pending_time = sim_now();
            }
        } else {
            node->steps++;
        }
    }
    /* every update done before the final evaluation */
    if (t->T > 1 && sum_all(run, t, t->one, 1))
        return;
    if (node->rank == 0) {
        evaluate_pending(run, node, t);
        sim_tgpt_assemble(run, t->T);
        if (!run->failed)
            sim_eval_final(run, step, node->params);
    }
}
static void count_piece(void *ctx, size_t at, size_t n)
{
    (void)at;
    *(double *)ctx += (double)n;
}

void sim_tensor_gpt_memory(const sim_run_t *run, sim_node_t *node)
{
    const trainer_gpt_layout_t *g = &run->model.gpt;
    int T = (int)scenario_own(run->sc, "tensor_parallel")->l;
    double own = 0, vb = run->value_bytes;
    tg_pieces(g, T, node->rank, 1, count_piece, &own);
    tg_pieces(g, T, node->rank, 0, count_piece, &own);
    int sp = scenario_own(run->sc, "sequence_parallel")->i;
    double act = sim_tgpt_activation_floats(g, T, sp, 0, g->L + 2);
    node->mem.params = node->mem.grads = own * vb;
    node->mem.optimizer = own * scenario_optimizer_bytes(run->sc);
    node->mem.activations = act * (double)run->sc->batch * vb;
}

/* What the forward pass keeps for the backward pass (tg_worker_t): its shares of the split
 * layers' outputs, the layer norms' outputs whole, the stream's rows (sp: 1/T). */
double sim_tgpt_activation_floats(const trainer_gpt_layout_t *g, int T, int sp, int first, int last)
{
    double S = g->T, C = g->C, c = C / T, f = 4 * C / T;
    double rows = T > 1 && sp ? 1.0 / T : 1.0;
    double block = 2 * S * C + (2 * S * C + 4 * S) * rows /* ln outputs; res2, res3 */
                   + 3 * S * c + S * c + (double)(g->NH / T) * S * S + 2 * S * f;
    int from = first > 0 ? first : 1, to = last <= g->L ? last : g->L + 1;
    double act = (to > from ? to - from : 0) * block;
    if (first == 0)
        act += S * C * rows;
    if (last == g->L + 2)
        act += (S * C + 2 * S + S * g->V) * rows;
    return act;
}

dt_status sim_tensor_gpt_check(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    long T = scenario_own(sc, "tensor_parallel")->l;
    if (sc->model.heads % T) {
        const char *k =
            scenario_blame(sc, "strategy.tensor_parallel", "model.heads", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor_parallel = %ld does not divide the gpt's %d heads, which "
                             "it splits (%s)",
                             T, sc->model.heads, where);
    }
    if (scenario_own(sc, "sequence_parallel")->i && T > 1 && (sc->batch * sc->model.seq) % T) {
        const char *k =
            scenario_blame(sc, "strategy.sequence_parallel", "model.batch", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "sequence_parallel divides the batch's %ld x %d token rows among "
                             "the %ld members: tensor_parallel must divide batch x seq (%s)",
                             sc->batch, sc->model.seq, T, where);
    }
    return DT_OK;
}
