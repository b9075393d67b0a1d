/* Transformer profiles (see profile_transformer.h). A network is three groups of rows: the
 * embeddings, one block per layer (the same rows, the layer's index in their names), and the
 * top (final norm and output layer, or BERT's pooler). The counts of a group do not depend on
 * the layer, so each group is counted once and the file is printed row by row from the
 * groups: nothing grows with the number of layers. Counts are 64-bit integers, checked for
 * overflow, so a profile made here reads back to exactly make_profiles.py's numbers. */
#include "profile_transformer.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

typedef enum row_kind {
    ROW_NONE, /* ends a list */
    ROW_EMBED,
    ROW_POSITION,
    ROW_TOKEN_TYPE,
    ROW_NORM,
    ROW_QKV, /* fused query, key and value projection */
    ROW_Q,
    ROW_K,
    ROW_V,
    ROW_SCORES, /* Q K^T, softmax, times V: no parameters */
    ROW_ATTN_OUT,
    ROW_MLP_GATE, /* listed with --swiglu only */
    ROW_MLP_IN,
    ROW_MLP_OUT,
    ROW_HEAD,   /* the output layer: tokens x vocabulary logits */
    ROW_POOLER, /* BERT's pooler: one token, hidden x hidden */
    ROW_ROUTER, /* a MoE layer's router: hidden x experts logits, no bias */
    /* multi-head latent attention, in place of the Q, K and V rows */
    ROW_Q_A,       /* hidden -> q_lora_rank */
    ROW_Q_A_NORM,  /* RMSNorm of the query latent */
    ROW_Q_B,       /* q_lora_rank -> heads x (nope + rope) */
    ROW_KV_A,      /* hidden -> kv_lora_rank + rope (the shared rotary key) */
    ROW_KV_A_NORM, /* RMSNorm of the key-value latent */
    ROW_KV_B,      /* kv_lora_rank -> heads x (nope + v) */
} row_kind_t;

typedef struct row_def {
    row_kind_t kind;
    const char *name; /* in a block, after "PREFIX.LAYER." */
    int cut;          /* a stage may end after this row (or the last row before it, when it
                         is left out) */
} row_def_t;

/* A family: its layout (rows in forward order), the prefix of its blocks' names, and the
 * defaults of the options. Adding one is a row of this table. */
typedef struct family {
    const char *name;
    row_def_t embed[5], block[12], top[3];
    const char *block_prefix;
    int rmsnorm, bias, tied, swiglu;
    long positions; /* -1: the sequence length */
    long token_types;
    int has_head; /* --tied / --untied mean something */
} family_t;

static const family_t families[] = {
    /* Hugging Face GPT2Model + LM head (make_profiles.py's gpt2_xl): pre-norm */
    {"gpt",
     {{ROW_EMBED, "wte", 0}, {ROW_POSITION, "wpe", 1}},
     {{ROW_NORM, "ln_1", 0},
      {ROW_QKV, "attn.c_attn", 0},
      {ROW_SCORES, "attn.scores", 0},
      {ROW_ATTN_OUT, "attn.c_proj", 0},
      {ROW_NORM, "ln_2", 0},
      {ROW_MLP_GATE, "mlp.c_gate", 0},
      {ROW_MLP_IN, "mlp.c_fc", 0},
      {ROW_MLP_OUT, "mlp.c_proj", 1}},
     {{ROW_NORM, "ln_f", 1}, {ROW_HEAD, "lm_head", 0}},
     .block_prefix = "h",
     .bias = 1,
     .tied = 1,
     .positions = -1,
     .has_head = 1},
    /* Hugging Face LlamaForCausalLM: pre-norm, rotary positions (no parameters) */
    {"llama",
     {{ROW_EMBED, "model.embed_tokens", 0}, {ROW_POSITION, "model.embed_positions", 1}},
     {{ROW_NORM, "input_layernorm", 0},
      {ROW_Q, "self_attn.q_proj", 0},
      {ROW_K, "self_attn.k_proj", 0},
      {ROW_V, "self_attn.v_proj", 0},
      {ROW_SCORES, "self_attn.scores", 0},
      {ROW_ATTN_OUT, "self_attn.o_proj", 0},
      {ROW_NORM, "post_attention_layernorm", 0},
      {ROW_MLP_GATE, "mlp.gate_proj", 0},
      {ROW_MLP_IN, "mlp.up_proj", 0},
      {ROW_MLP_OUT, "mlp.down_proj", 1}},
     {{ROW_NORM, "model.norm", 1}, {ROW_HEAD, "lm_head", 0}},
     .block_prefix = "model.layers",
     .rmsnorm = 1,
     .swiglu = 1,
     .has_head = 1},
    /* Hugging Face BertModel with its pooler (make_profiles.py's bert_large): post-norm, an
     * encoder without an output layer */
    {"bert",
     {{ROW_EMBED, "embeddings.word", 0},
      {ROW_POSITION, "embeddings.position", 0},
      {ROW_TOKEN_TYPE, "embeddings.token_type", 0},
      {ROW_NORM, "embeddings.LayerNorm", 1}},
     {{ROW_QKV, "attention.qkv", 0},
      {ROW_SCORES, "attention.scores", 0},
      {ROW_ATTN_OUT, "attention.output", 0},
      {ROW_NORM, "attention.LayerNorm", 0},
      {ROW_MLP_GATE, "intermediate.gate", 0},
      {ROW_MLP_IN, "intermediate", 0},
      {ROW_MLP_OUT, "output", 0},
      {ROW_NORM, "output.LayerNorm", 1}},
     {{ROW_POOLER, "pooler", 0}},
     .block_prefix = "encoder.layer",
     .bias = 1,
     .positions = 512,
     .token_types = 2},
};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* The most layers: the file grows with them (a line per row), and a block's names stay far
 * within the loader's 64 bytes. */
#define MAX_LAYERS 10000L
#define MAX_PARAMS 1e13 /* what the profile loader accepts */

static const family_t *family_of(const char *name)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (!strcmp(families[i].name, name ? name : "gpt"))
            return &families[i];
    return NULL;
}

void sim_transformer_init(sim_transformer_t *t)
{
    memset(t, 0, sizeof *t);
    t->kv_heads = t->ffn = t->positions = -1;
    t->rmsnorm = t->bias = t->tied = t->swiglu = -1;
    t->moe_ffn = -1;
    t->qk_nope_dim = t->v_head_dim = -1;
}

dt_status sim_transformer_resolve(sim_transformer_t *t, dt_err_t *err)
{
    const family_t *f = family_of(t->family);
    if (!f) {
        char names[128] = "";
        for (size_t i = 0; i < N_FAMILIES; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     families[i].name);
        return dt_err_input(err, "--family: unknown family \"%s\" (%s)", t->family, names);
    }
    t->family = f->name;
    static const char *const required[] = {"--layers", "--hidden", "--heads", "--seq", "--vocab"};
    const long given[] = {t->layers, t->hidden, t->heads, t->seq, t->vocab};
    for (int i = 0; i < 5; i++)
        if (given[i] < 1)
            return dt_err_input(err, "%s missing (a whole number >= 1)", required[i]);
    if (t->layers > MAX_LAYERS)
        return dt_err_input(err, "--layers %ld: at most %ld", t->layers, MAX_LAYERS);
    if (!f->has_head && t->tied >= 0)
        return dt_err_input(err, "--%s: the %s family has no output layer",
                            t->tied ? "tied" : "untied", f->name);
    if (t->rmsnorm < 0)
        t->rmsnorm = f->rmsnorm;
    if (t->bias < 0)
        t->bias = f->bias;
    if (t->tied < 0)
        t->tied = f->tied;
    if (t->swiglu < 0)
        t->swiglu = f->swiglu;
    if (t->kv_heads < 0)
        t->kv_heads = t->heads;
    if (t->positions < 0)
        t->positions = f->positions < 0 ? t->seq : f->positions;
    if (t->ffn < 0) {
        /* Llama's rule for SwiGLU: 2/3 of 4 x hidden, rounded up to a multiple of 256
         * (4096 -> 11008), which keeps the MLP's parameters those of a 4 x hidden GELU MLP */
        long third = 8 * t->hidden / 3;
        t->ffn = t->swiglu ? (third + 255) / 256 * 256 : 4 * t->hidden;
    }
    if (t->hidden % t->heads)
        return dt_err_input(err, "--heads %ld does not divide --hidden %ld", t->heads, t->hidden);
    if (t->kv_heads < 1 || t->heads % t->kv_heads)
        return dt_err_input(err, "--kv-heads %ld does not divide --heads %ld", t->kv_heads,
                            t->heads);
    if (!t->experts) {
        const char *moe = t->top_k            ? "--top-k"
                          : t->shared_experts ? "--shared-experts"
                          : t->moe_ffn >= 0   ? "--moe-ffn"
                          : t->dense_layers   ? "--dense-layers"
                                              : NULL;
        if (moe)
            return dt_err_input(err, "%s needs --experts", moe);
    } else {
        if (t->top_k < 1 || t->top_k > t->experts)
            return dt_err_input(err,
                                "--top-k %ld: the experts a token uses, 1 to --experts "
                                "%ld",
                                t->top_k, t->experts);
        if (t->dense_layers >= t->layers)
            return dt_err_input(err, "--dense-layers %ld leaves no MoE layer of --layers %ld",
                                t->dense_layers, t->layers);
        if (t->moe_ffn < 0)
            t->moe_ffn = t->ffn;
    }
    if (!t->kv_lora_rank) {
        const char *mla = t->q_lora_rank        ? "--q-lora-rank"
                          : t->qk_rope_dim      ? "--qk-rope-dim"
                          : t->qk_nope_dim >= 0 ? "--qk-nope-dim"
                          : t->v_head_dim >= 0  ? "--v-head-dim"
                                                : NULL;
        if (mla)
            return dt_err_input(err, "%s needs --kv-lora-rank (multi-head latent attention)", mla);
    } else {
        if (strcmp(f->name, "llama"))
            return dt_err_input(err,
                                "--kv-lora-rank: multi-head latent attention is a block "
                                "of the llama family (DeepSeek's layout), not %s",
                                f->name);
        if (t->kv_heads != t->heads)
            return dt_err_input(err,
                                "--kv-heads %ld with --kv-lora-rank: latent attention "
                                "gives every head its keys and values",
                                t->kv_heads);
        if (t->qk_nope_dim < 0)
            t->qk_nope_dim = t->hidden / t->heads;
        if (t->v_head_dim < 0)
            t->v_head_dim = t->hidden / t->heads;
    }
    if (t->positions > 0 && t->seq > t->positions)
        return dt_err_input(err,
                            "--seq %ld is longer than the %ld learned positions "
                            "(--positions)",
                            t->seq, t->positions);
    return DT_OK;
}

/* ---- counting ------------------------------------------------------------------------ */

typedef struct row {
    const char *name;
    uint64_t params, flops, outputs, cut; /* per sample; cut 0: none */
    const char *split;                    /* Megatron-LM's tensor split ([tensor]); NULL:
                                             replicated */
    uint64_t reduce;                      /* elements per sample it all-reduces */
    uint64_t experts, top_k, a2a;         /* [experts]: a routed experts' row (model_profile.h) */
    char label[48];                       /* the name of a MoE layer's row */
    const char *op;                       /* [shape]: gemm, attention or memory */
    uint64_t dim[5];                      /* its sizes (model_profile.h); n_dim of them */
    int n_dim;
} row_t;

typedef struct group {
    row_t rows[24];
    int n;
} group_t;

/* F: the width of the MLP being counted; k: the copies of each token it computes (a MoE
 * layer's routed experts: top_k, else 1) */
typedef struct counter {
    const sim_transformer_t *t;
    int overflow;
    uint64_t F, k;
    int routed; /* counting a MoE layer's routed experts */
} counter_t;

static uint64_t mul(counter_t *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        c->overflow = 1;
    return r;
}

static uint64_t add(counter_t *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r))
        c->overflow = 1;
    return r;
}

/* fin -> fout on `tokens` tokens: 2 FLOPs per multiply-add, bias by the option */
static row_t linear(counter_t *c, uint64_t fin, uint64_t fout, uint64_t tokens)
{
    return (row_t){.name = "",
                   add(c, mul(c, fin, fout), c->t->bias ? fout : 0),
                   mul(c, 2, mul(c, tokens, mul(c, fin, fout))),
                   mul(c, tokens, fout),
                   0};
}

/* One row's counts; .name NULL when the shape leaves the row out. */
static row_t count_row(counter_t *c, row_kind_t kind)
{
    const sim_transformer_t *t = c->t;
    uint64_t T = (uint64_t)t->seq, d = (uint64_t)t->hidden, V = (uint64_t)t->vocab;
    uint64_t kv = d / (uint64_t)t->heads * (uint64_t)t->kv_heads, F = c->F;
    uint64_t Td = mul(c, T, d), TT = mul(c, T, T), Tk = mul(c, T, c->k);
    const family_t *f = family_of(t->family);
    int mla = t->kv_lora_rank > 0;
    uint64_t A = (uint64_t)t->heads, qk = (uint64_t)(t->qk_nope_dim + t->qk_rope_dim);
    uint64_t vd = (uint64_t)t->v_head_dim, Rq = (uint64_t)t->q_lora_rank;
    uint64_t Rkv = (uint64_t)t->kv_lora_rank;
    switch (kind) {
    case ROW_EMBED:
        return (row_t){.name = "", mul(c, V, d), 0, Td, 0};
    case ROW_POSITION:
        return t->positions ? (row_t){.name = "", mul(c, (uint64_t)t->positions, d), 0, Td, 0}
                            : (row_t){0};
    case ROW_TOKEN_TYPE:
        return f->token_types ? (row_t){.name = "", mul(c, (uint64_t)f->token_types, d), 0, Td, 0}
                              : (row_t){0};
    case ROW_NORM: /* 4 FLOPs per output element, LayerNorm or RMSNorm */
        return (row_t){.name = "", t->rmsnorm ? d : 2 * d, mul(c, 4, Td), Td, 0};
    case ROW_QKV:
        return linear(c, d, add(c, d, mul(c, 2, kv)), T);
    case ROW_Q: /* latent attention without a query latent: hidden -> heads x qk */
        return mla ? linear(c, d, mul(c, A, qk), T) : linear(c, d, d, T);
    case ROW_ATTN_OUT:
        return mla ? linear(c, mul(c, A, vd), d, T) : linear(c, d, d, T);
    case ROW_Q_A:
        return Rq ? linear(c, d, Rq, T) : (row_t){0};
    case ROW_Q_A_NORM:
        return Rq ? (row_t){.name = "", Rq, mul(c, 4, mul(c, T, Rq)), mul(c, T, Rq), 0}
                  : (row_t){0};
    case ROW_Q_B:
        return linear(c, Rq, mul(c, A, qk), T);
    case ROW_KV_A:
        return linear(c, d, add(c, Rkv, (uint64_t)t->qk_rope_dim), T);
    case ROW_KV_A_NORM:
        return (row_t){.name = "", Rkv, mul(c, 4, mul(c, T, Rkv)), mul(c, T, Rkv), 0};
    case ROW_KV_B:
        return linear(c, Rkv, mul(c, A, add(c, (uint64_t)t->qk_nope_dim, vd)), T);
    case ROW_K:
    case ROW_V:
        return linear(c, d, kv, T);
    case ROW_SCORES: /* Q K^T and the probabilities times V: 2 x 2 T^2 d; softmax: 5 per
                        score of every head; keeps the probabilities and the output (latent
                        attention: 2 T^2 heads qk + 2 T^2 heads v) */
        if (mla)
            return (row_t){
                .name = "",
                0,
                add(c, mul(c, 2, mul(c, TT, mul(c, A, add(c, qk, vd)))), mul(c, 5, mul(c, A, TT))),
                add(c, mul(c, A, TT), mul(c, T, mul(c, A, vd))),
                0};
        return (row_t){.name = "",
                       0,
                       add(c, mul(c, 4, mul(c, TT, d)), mul(c, 5, mul(c, (uint64_t)t->heads, TT))),
                       add(c, mul(c, (uint64_t)t->heads, TT), Td),
                       0};
    case ROW_MLP_GATE:
        return t->swiglu ? linear(c, d, F, Tk) : (row_t){0};
    case ROW_MLP_IN:
        return linear(c, d, F, Tk);
    case ROW_MLP_OUT:
        return linear(c, F, d, Tk);
    case ROW_ROUTER: { /* no bias (Mixtral's and DeepSeek-V3's gate) */
        uint64_t E = (uint64_t)t->experts;
        return (row_t){
            .name = "", mul(c, d, E), mul(c, 2, mul(c, T, mul(c, d, E))), mul(c, T, E), 0};
    }
    case ROW_HEAD: { /* no bias; tied: its gradient lands in the token embedding's */
        row_t r = {
            .name = "", t->tied ? 0 : mul(c, V, d), mul(c, 2, mul(c, Td, V)), mul(c, T, V), 0};
        return r;
    }
    case ROW_POOLER:
        return linear(c, d, d, 1);
    case ROW_NONE:
        break;
    }
    DT_ASSERT(0);
    return (row_t){0};
}

/* What a row computes ([shape]), per sample of T tokens, for the compute model by shape.
 * Elements moved by the memory-bound work (values read plus values written): a norm reads
 * its input and writes its output (2 T H), and its backward pass reads the output gradient
 * and the input and writes the input gradient (3 T H); an embedding gathers T rows (2 T H),
 * its backward pass scatter-adds them into the table's gradient (3 T H); a position or
 * token-type embedding adds its rows to the sum so far (3 T H either way). Around the GEMMs,
 * what frameworks fuse into one elementwise kernel after them (biases go into the GEMM's
 * epilogue): the MLP's activation (GELU: 2 T F forward, 3 T F backward; SwiGLU's SiLU on
 * the gate the same, its product with the up projection 3 T F and 5 T F), dropout and the
 * residual addition after the attention and MLP outputs (3 T H, 2 T H), and the loss's
 * softmax over the output layer's logits (2 T V each way). */
static void shape_row(counter_t *c, row_kind_t kind, row_t *r)
{
    const sim_transformer_t *t = c->t;
    uint64_t T = (uint64_t)t->seq, d = (uint64_t)t->hidden, V = (uint64_t)t->vocab;
    uint64_t A = (uint64_t)t->heads, kv = d / A * (uint64_t)t->kv_heads, F = c->F;
    uint64_t Td = mul(c, T, d), Tk = mul(c, T, c->k), TF = mul(c, Tk, F), Tkd = mul(c, Tk, d);
    int mla = t->kv_lora_rank > 0;
    uint64_t qk = (uint64_t)(t->qk_nope_dim + t->qk_rope_dim), vd = (uint64_t)t->v_head_dim;
    uint64_t Rq = (uint64_t)t->q_lora_rank, Rkv = (uint64_t)t->kv_lora_rank;
#define SHAPE(op_, n_, ...)                                                                        \
    do {                                                                                           \
        const uint64_t v_[] = {__VA_ARGS__};                                                       \
        r->op = op_;                                                                               \
        r->n_dim = n_;                                                                             \
        memcpy(r->dim, v_, sizeof v_);                                                             \
    } while (0)
    switch (kind) {
    case ROW_EMBED:
        SHAPE("memory", 2, mul(c, 2, Td), mul(c, 3, Td));
        break;
    case ROW_POSITION:
    case ROW_TOKEN_TYPE:
        SHAPE("memory", 2, mul(c, 3, Td), mul(c, 3, Td));
        break;
    case ROW_NORM:
        SHAPE("memory", 2, mul(c, 2, Td), mul(c, 3, Td));
        break;
    case ROW_QKV:
        SHAPE("gemm", 3, T, add(c, d, mul(c, 2, kv)), d);
        break;
    case ROW_Q:
        if (mla)
            SHAPE("gemm", 3, T, mul(c, A, qk), d);
        else
            SHAPE("gemm", 3, T, d, d);
        break;
    case ROW_Q_A:
        SHAPE("gemm", 3, T, Rq, d);
        break;
    case ROW_Q_A_NORM:
        SHAPE("memory", 2, mul(c, 2, mul(c, T, Rq)), mul(c, 3, mul(c, T, Rq)));
        break;
    case ROW_Q_B:
        SHAPE("gemm", 3, T, mul(c, A, qk), Rq);
        break;
    case ROW_KV_A:
        SHAPE("gemm", 3, T, add(c, Rkv, (uint64_t)t->qk_rope_dim), d);
        break;
    case ROW_KV_A_NORM:
        SHAPE("memory", 2, mul(c, 2, mul(c, T, Rkv)), mul(c, 3, mul(c, T, Rkv)));
        break;
    case ROW_KV_B:
        SHAPE("gemm", 3, T, mul(c, A, add(c, (uint64_t)t->qk_nope_dim, vd)), Rkv);
        break;
    case ROW_K:
    case ROW_V:
        SHAPE("gemm", 3, T, kv, d);
        break;
    case ROW_SCORES: /* latent attention: queries and keys of qk, values and outputs of v,
                        (2 qk + 2 v) T heads values moved: a head dimension of (qk + v) / 2
                        (rounded down where odd) */
        SHAPE("attention", 4, A, T, T, mla ? (qk + vd) / 2 : d / A);
        break;
    case ROW_ATTN_OUT:
        SHAPE("gemm", 5, T, d, mla ? mul(c, A, vd) : d, mul(c, 3, Td), mul(c, 2, Td));
        break;
    case ROW_MLP_GATE: /* SiLU */
        SHAPE("gemm", 5, Tk, F, d, mul(c, 2, TF), mul(c, 3, TF));
        break;
    case ROW_MLP_IN: /* GELU, or SwiGLU's product */
        if (t->swiglu)
            SHAPE("gemm", 5, Tk, F, d, mul(c, 3, TF), mul(c, 5, TF));
        else
            SHAPE("gemm", 5, Tk, F, d, mul(c, 2, TF), mul(c, 3, TF));
        break;
    case ROW_MLP_OUT: /* routed experts: their k outputs weighted and summed, 2 T k H */
        if (c->routed)
            SHAPE("gemm", 5, Tk, d, F, mul(c, 2, Tkd), mul(c, 2, Tkd));
        else
            SHAPE("gemm", 5, T, d, F, mul(c, 3, Td), mul(c, 2, Td));
        break;
    case ROW_ROUTER: /* and its softmax over the logits */
        SHAPE("gemm", 5, T, (uint64_t)t->experts, d, mul(c, 2, mul(c, T, (uint64_t)t->experts)),
              mul(c, 2, mul(c, T, (uint64_t)t->experts)));
        break;
    case ROW_HEAD:
        SHAPE("gemm", 5, T, V, d, mul(c, 2, mul(c, T, V)), mul(c, 2, mul(c, T, V)));
        break;
    case ROW_POOLER: /* one token */
        SHAPE("gemm", 3, 1, d, d);
        break;
    case ROW_NONE:
        break;
    }
#undef SHAPE
}

/* How Megatron-LM splits a row across a tensor group, and the all-reduce of T x hidden
 * elements the split needs: the token embedding by vocabulary (its output), the attention
 * core by heads (none), the attention output and the MLP's last projection by rows (their
 * outputs), the projections reading the block's input by columns (their input gradient,
 * once: on the first of the projections that read the same input, whose backward pass
 * ends theirs). Norms, positions and BERT's pooler are replicated. */
static void split_row(row_kind_t kind, row_t *r, const row_t *prev, uint64_t Td)
{
    switch (kind) {
    case ROW_Q_B:  /* Megatron-LM's latent attention: the down projections replicated, the */
    case ROW_KV_B: /* up projections by columns, their latent input's gradient all-reduced */
        r->split = "column";
        r->reduce = prev ? prev->outputs : Td;
        break;
    case ROW_EMBED:
        r->split = "vocab", r->reduce = Td;
        break;
    case ROW_SCORES:
        r->split = "heads";
        break;
    case ROW_ATTN_OUT:
    case ROW_MLP_OUT:
        r->split = "row", r->reduce = Td;
        break;
    case ROW_QKV:
    case ROW_Q:
    case ROW_K:
    case ROW_V:
    case ROW_MLP_GATE:
    case ROW_MLP_IN:
    case ROW_HEAD:
        r->split = "column";
        r->reduce = prev && prev->split && !strcmp(prev->split, "column") ? 0 : Td;
        break;
    default:
        break;
    }
}

static int is_mlp(row_kind_t kind)
{
    return kind == ROW_MLP_GATE || kind == ROW_MLP_IN || kind == ROW_MLP_OUT;
}

/* Appends row r (kept: r.name set) of kind to g, split and shaped; label (if not NULL)
 * names it instead of r.name. */
static void push_row(counter_t *c, group_t *g, row_kind_t kind, row_t r, const char *label)
{
    uint64_t Tkd = mul(c, mul(c, (uint64_t)c->t->seq, c->k), (uint64_t)c->t->hidden);
    DT_ASSERT(g->n < (int)(sizeof g->rows / sizeof g->rows[0]));
    split_row(kind, &r, g->n ? &g->rows[g->n - 1] : NULL, Tkd);
    shape_row(c, kind, &r);
    g->rows[g->n] = r;
    if (label) {
        snprintf(g->rows[g->n].label, sizeof r.label, "%s", label);
        g->rows[g->n].name = g->rows[g->n].label;
    }
    g->n++;
}

/* A MoE layer's rows for the family's MLP row d: the router before the first of them, the
 * routed experts' row (all experts' weights, the FLOPs of top_k of them per token; the first
 * such row carries the dispatch all-to-all's elements, T top_k H), and after the last MLP
 * row the shared experts' rows, as one MLP shared x moe_ffn wide. Named after the family's
 * row: mlp.router, mlp.experts.NAME, mlp.shared_experts.NAME (NAME: its last component). */
static void moe_rows(counter_t *c, const row_def_t *defs, const row_def_t *d, group_t *g)
{
    const sim_transformer_t *t = c->t;
    char label[48];
    const char *base = strrchr(d->name, '.');
    base = base ? base + 1 : d->name;
    if (d->kind == ROW_MLP_GATE)
        push_row(c, g, ROW_ROUTER, count_row(c, ROW_ROUTER), "mlp.router");
    c->F = (uint64_t)t->moe_ffn;
    c->k = (uint64_t)t->top_k;
    c->routed = 1;
    row_t r = count_row(c, d->kind);
    if (r.name) {
        r.params = mul(c, r.params, (uint64_t)t->experts);
        r.experts = (uint64_t)t->experts;
        r.top_k = (uint64_t)t->top_k;
        int first = 1; /* the first routed row of the layer dispatches */
        for (int i = 0; i < g->n; i++)
            first &= g->rows[i].experts == 0;
        r.a2a = first ? mul(c, mul(c, (uint64_t)t->seq, c->k), (uint64_t)t->hidden) : 0;
        snprintf(label, sizeof label, "mlp.experts.%s", base);
        push_row(c, g, d->kind, r, label);
    }
    c->routed = 0;
    c->k = 1;
    if (d->kind == ROW_MLP_OUT && t->shared_experts > 0) {
        c->F = mul(c, (uint64_t)t->shared_experts, (uint64_t)t->moe_ffn);
        for (const row_def_t *e = defs; e->kind != ROW_NONE; e++) {
            if (!is_mlp(e->kind) || !(r = count_row(c, e->kind)).name)
                continue;
            const char *b = strrchr(e->name, '.');
            snprintf(label, sizeof label, "mlp.shared_experts.%s", b ? b + 1 : e->name);
            push_row(c, g, e->kind, r, label);
        }
    }
    c->F = (uint64_t)t->ffn;
}

/* The rows of a group that the shape keeps, with their cuts and splits; a cut on a row left
 * out moves to the row before it. moe: a MoE layer's block (moe_rows for the MLP). */
static void count_group(counter_t *c, const row_def_t *defs, group_t *g, int moe)
{
    g->n = 0;
    /* latent attention's rows, in forward order (Hugging Face DeepseekV3Attention's names) */
    static const row_def_t mla[] = {{ROW_Q_A, "self_attn.q_a_proj", 0},
                                    {ROW_Q_A_NORM, "self_attn.q_a_layernorm", 0},
                                    {ROW_Q_B, "self_attn.q_b_proj", 0},
                                    {ROW_KV_A, "self_attn.kv_a_proj_with_mqa", 0},
                                    {ROW_KV_A_NORM, "self_attn.kv_a_layernorm", 0},
                                    {ROW_KV_B, "self_attn.kv_b_proj", 0},
                                    {ROW_NONE, NULL, 0}};
    for (const row_def_t *d = defs; d->kind != ROW_NONE; d++) {
        if (c->t->kv_lora_rank > 0 && (d->kind == ROW_Q || d->kind == ROW_K || d->kind == ROW_V)) {
            if (d->kind != ROW_Q)
                continue;
            for (const row_def_t *m = mla; m->kind != ROW_NONE; m++) {
                /* without a query latent, the queries come from q_proj */
                const row_def_t *e = c->t->q_lora_rank || m->kind != ROW_Q_B ? m : d;
                row_t r = count_row(c, e->kind);
                if (r.name) {
                    r.name = e->name;
                    push_row(c, g, e->kind, r, NULL);
                }
            }
            continue;
        }
        if (moe && is_mlp(d->kind)) {
            moe_rows(c, defs, d, g);
        } else {
            row_t r = count_row(c, d->kind);
            if (r.name) {
                r.name = d->name;
                push_row(c, g, d->kind, r, NULL);
            }
        }
        if (d->cut && g->n)
            g->rows[g->n - 1].cut = mul(c, (uint64_t)c->t->seq, (uint64_t)c->t->hidden);
    }
}

/* ---- writing ------------------------------------------------------------------------- */

/* The blocks: dense ones (block) first, then MoE ones (moe); layers = dense + n_moe. */
typedef struct net {
    group_t embed, block, moe, top;
    long layers, dense;
    const char *prefix;
    size_t first; /* the first row with parameters: its backward pass has no input gradient */
} net_t;

static size_t net_rows(const net_t *n)
{
    return (size_t)n->embed.n + (size_t)n->dense * (size_t)n->block.n +
           (size_t)(n->layers - n->dense) * (size_t)n->moe.n + (size_t)n->top.n;
}

/* Row i in forward order, its name written into name. */
static const row_t *net_row(const net_t *n, size_t i, char *name, size_t size)
{
    const row_t *r;
    if (i < (size_t)n->embed.n) {
        r = &n->embed.rows[i];
        snprintf(name, size, "%s", r->name);
        return r;
    }
    i -= (size_t)n->embed.n;
    if (i < (size_t)n->dense * (size_t)n->block.n) {
        r = &n->block.rows[i % (size_t)n->block.n];
        snprintf(name, size, "%s.%zu.%s", n->prefix, i / (size_t)n->block.n, r->name);
        return r;
    }
    i -= (size_t)n->dense * (size_t)n->block.n;
    if (i < (size_t)(n->layers - n->dense) * (size_t)n->moe.n) {
        r = &n->moe.rows[i % (size_t)n->moe.n];
        snprintf(name, size, "%s.%zu.%s", n->prefix, (size_t)n->dense + i / (size_t)n->moe.n,
                 r->name);
        return r;
    }
    r = &n->top.rows[i - (size_t)(n->layers - n->dense) * (size_t)n->moe.n];
    snprintf(name, size, "%s", r->name);
    return r;
}

static uint64_t group_sum(counter_t *c, const group_t *g, int flops)
{
    uint64_t s = 0;
    for (int i = 0; i < g->n; i++)
        s = add(c, s, flops ? g->rows[i].flops : g->rows[i].params);
    return s;
}

static uint64_t net_sum(counter_t *c, const net_t *n, int flops)
{
    uint64_t blocks = add(c, mul(c, (uint64_t)n->dense, group_sum(c, &n->block, flops)),
                          mul(c, (uint64_t)(n->layers - n->dense), group_sum(c, &n->moe, flops)));
    return add(c, add(c, group_sum(c, &n->embed, flops), blocks), group_sum(c, &n->top, flops));
}

/* The options that make this profile again, every one written out. */
static void print_command(const sim_transformer_t *t, FILE *out)
{
    fprintf(out,
            "# dtsim profile transformer --name %s --family %s --layers %ld --hidden %ld\n"
            "#   --heads %ld --kv-heads %ld --ffn %ld --seq %ld --vocab %ld --positions %ld\n"
            "#   --norm %s --%s",
            t->name, t->family, t->layers, t->hidden, t->heads, t->kv_heads, t->ffn, t->seq,
            t->vocab, t->positions, t->rmsnorm ? "rmsnorm" : "layernorm",
            t->bias ? "bias" : "no-bias");
    if (family_of(t->family)->has_head)
        fprintf(out, " --%s", t->tied ? "tied" : "untied");
    fprintf(out, " --%s\n", t->swiglu ? "swiglu" : "gelu");
    if (t->experts)
        fprintf(out,
                "#   --experts %ld --top-k %ld --shared-experts %ld --moe-ffn %ld "
                "--dense-layers %ld\n",
                t->experts, t->top_k, t->shared_experts, t->moe_ffn, t->dense_layers);
    if (t->kv_lora_rank)
        fprintf(out,
                "#   --q-lora-rank %ld --kv-lora-rank %ld --qk-nope-dim %ld --qk-rope-dim "
                "%ld --v-head-dim %ld\n",
                t->q_lora_rank, t->kv_lora_rank, t->qk_nope_dim, t->qk_rope_dim, t->v_head_dim);
}

dt_status sim_transformer_write(const sim_transformer_t *t, FILE *out, dt_err_t *err)
{
    const family_t *f = family_of(t->family);
    DT_ASSERT(f && t->layers >= 1 && t->layers <= MAX_LAYERS && t->kv_heads >= 1);
    counter_t c = {t, 0, (uint64_t)t->ffn, 1, 0};
    net_t n = {.layers = t->layers,
               .dense = t->experts ? t->dense_layers : t->layers,
               .prefix = f->block_prefix};
    count_group(&c, f->embed, &n.embed, 0);
    count_group(&c, f->block, &n.block, 0);
    if (t->experts)
        count_group(&c, f->block, &n.moe, 1);
    count_group(&c, f->top, &n.top, 0);
    uint64_t params = net_sum(&c, &n, 0), forward = net_sum(&c, &n, 1);
    char name[64];
    size_t rows = net_rows(&n);
    while (n.first < rows && net_row(&n, n.first, name, sizeof name)->params == 0)
        n.first++;
    DT_ASSERT(n.first < rows); /* the token embedding has parameters */
    uint64_t backward = mul(&c, 2, forward) - net_row(&n, n.first, name, sizeof name)->flops;
    if (c.overflow)
        return dt_err_input(err, "the model is too large: its FLOPs per sample pass 2^64");
    if ((double)params > MAX_PARAMS)
        return dt_err_input(err,
                            "the model has %" PRIu64 " parameters: a profile holds at "
                            "most 1e13",
                            params);

    fprintf(out,
            "# Model profile %s: written by dtsim profile transformer (make_profiles.py's "
            "FLOP\n# convention) with\n",
            t->name);
    print_command(t, out);
    fprintf(out, "[profile]\nname = %s\nsample = a sequence of %ld tokens\n", t->name, t->seq);
    fprintf(out, "source = dtsim profile transformer, %s family, with the options above\n",
            f->name);
    fprintf(out,
            "params = %" PRIu64 "\nforward_flops = %" PRIu64 "\nbackward_flops = %" PRIu64 "\n\n",
            params, forward, backward);
    /* the comments and the order of make_profiles.py */
    fprintf(out, "# layer = gradient elements, backward FLOPs per sample; listed in the order\n"
                 "# the backward pass produces them (last layer first)\n[backward]\n");
    for (size_t i = rows; i-- > 0;) {
        const row_t *r = net_row(&n, i, name, sizeof name);
        fprintf(out, "%s = %" PRIu64 " %" PRIu64 "\n", name, r->params,
                i == n.first ? r->flops : 2 * r->flops);
    }
    fprintf(out, "\n# layer = forward FLOPs, output elements kept for the backward pass (per\n"
                 "# sample), and where a pipeline stage may end after it, the elements that\n"
                 "# cross to the next stage; first layer first\n[forward]\n");
    for (size_t i = 0; i < rows; i++) {
        const row_t *r = net_row(&n, i, name, sizeof name);
        fprintf(out, "%s = %" PRIu64 " %" PRIu64, name, r->flops, r->outputs);
        if (r->cut)
            fprintf(out, " %" PRIu64, r->cut);
        fputc('\n', out);
    }
    fprintf(out, "\n# layer = how Megatron-LM's tensor parallelism splits it (column, row, heads\n"
                 "# or vocab) and the elements per sample it then all-reduces across the tensor\n"
                 "# group (row, vocab: its output; column: its input gradient); layers not\n"
                 "# listed are replicated; first layer first\n[tensor]\n");
    for (size_t i = 0; i < rows; i++) {
        const row_t *r = net_row(&n, i, name, sizeof name);
        if (!r->split)
            continue;
        fprintf(out, "%s = %s", name, r->split);
        if (r->reduce)
            fprintf(out, " %" PRIu64, r->reduce);
        fputc('\n', out);
    }
    fprintf(out, "\n# layer = what it computes, per sample, for the compute model by shape:\n"
                 "# gemm M N K (tokens x outputs x inputs) and the elements its fused\n"
                 "# elementwise work moves forward and backward; attention HEADS QUERIES KEYS\n"
                 "# HEAD_DIM; memory ELEMENTS moved forward and backward; first layer first\n"
                 "[shape]\n");
    for (size_t i = 0; i < rows; i++) {
        const row_t *r = net_row(&n, i, name, sizeof name);
        fprintf(out, "%s = %s", name, r->op);
        for (int k = 0; k < r->n_dim; k++)
            fprintf(out, " %" PRIu64, r->dim[k]);
        fputc('\n', out);
    }
    if (!t->experts)
        return DT_OK;
    fprintf(out, "\n# layer = the routed experts it holds, how many of them each token uses, and\n"
                 "# on the first of a MoE layer's routed rows the elements per sample that each\n"
                 "# all-to-all (dispatch, combine) moves, tokens x top_k x hidden; first layer\n"
                 "# first\n[experts]\n");
    for (size_t i = 0; i < rows; i++) {
        const row_t *r = net_row(&n, i, name, sizeof name);
        if (!r->experts)
            continue;
        fprintf(out, "%s = %" PRIu64 " %" PRIu64, name, r->experts, r->top_k);
        if (r->a2a)
            fprintf(out, " %" PRIu64, r->a2a);
        fputc('\n', out);
    }
    return DT_OK;
}
