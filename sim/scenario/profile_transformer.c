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
     .block_prefix = "h", .bias = 1, .tied = 1, .positions = -1, .has_head = 1},
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
     .block_prefix = "model.layers", .rmsnorm = 1, .swiglu = 1, .has_head = 1},
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
     .block_prefix = "encoder.layer", .bias = 1, .positions = 512, .token_types = 2},
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
}

dt_status sim_transformer_resolve(sim_transformer_t *t, dt_err_t *err)
{
    const family_t *f = family_of(t->family);
    if (!f) {
        char names[128] = "";
        for (size_t i = 0; i < N_FAMILIES; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     i ? ", " : "", families[i].name);
        return dt_err_input(err, "--family: unknown family \"%s\" (%s)", t->family, names);
    }
    t->family = f->name;
    static const char *const required[] = {"--layers", "--hidden", "--heads", "--seq",
                                           "--vocab"};
    const long given[] = {t->layers, t->hidden, t->heads, t->seq, t->vocab};
    for (int i = 0; i < 5; i++)
        if (given[i] < 1)
            return dt_err_input(err, "%s missing (a whole number >= 1)", required[i]);
    if (t->layers > MAX_LAYERS)
        return dt_err_input(err, "--layers %ld: at most %ld", t->layers, MAX_LAYERS);
    if (!f->has_head && t->tied >= 0)
        return dt_err_input(err, "--%s: the %s family has no output layer", t->tied ? "tied"
                            : "untied", f->name);
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
        return dt_err_input(err, "--heads %ld does not divide --hidden %ld", t->heads,
                            t->hidden);
    if (t->kv_heads < 1 || t->heads % t->kv_heads)
        return dt_err_input(err, "--kv-heads %ld does not divide --heads %ld", t->kv_heads,
                            t->heads);
    if (t->positions > 0 && t->seq > t->positions)
        return dt_err_input(err, "--seq %ld is longer than the %ld learned positions "
                                 "(--positions)", t->seq, t->positions);
    return DT_OK;
}

/* ---- counting ------------------------------------------------------------------------ */

typedef struct row {
    const char *name;
    uint64_t params, flops, outputs, cut; /* per sample; cut 0: none */
    const char *split;                    /* Megatron-LM's tensor split ([tensor]); NULL:
                                             replicated */
    uint64_t reduce;                      /* elements per sample it all-reduces */
    const char *op;                       /* [shape]: gemm, attention or memory */
    uint64_t dim[5];                      /* its sizes (model_profile.h); n_dim of them */
    int n_dim;
} row_t;

typedef struct group {
    row_t rows[12];
    int n;
} group_t;

typedef struct counter {
    const sim_transformer_t *t;
    int overflow;
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
    return (row_t){.name = "", add(c, mul(c, fin, fout), c->t->bias ? fout : 0),
                   mul(c, 2, mul(c, tokens, mul(c, fin, fout))), mul(c, tokens, fout), 0};
}

/* One row's counts; .name NULL when the shape leaves the row out. */
static row_t count_row(counter_t *c, row_kind_t kind)
{
    const sim_transformer_t *t = c->t;
    uint64_t T = (uint64_t)t->seq, d = (uint64_t)t->hidden, V = (uint64_t)t->vocab;
    uint64_t kv = d / (uint64_t)t->heads * (uint64_t)t->kv_heads, F = (uint64_t)t->ffn;
    uint64_t Td = mul(c, T, d), TT = mul(c, T, T);
    const family_t *f = family_of(t->family);
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
    case ROW_Q:
    case ROW_ATTN_OUT:
        return linear(c, d, d, T);
    case ROW_K:
    case ROW_V:
        return linear(c, d, kv, T);
    case ROW_SCORES: /* Q K^T and the probabilities times V: 2 x 2 T^2 d; softmax: 5 per
                        score of every head; keeps the probabilities and the output */
        return (row_t){.name = "", 0,
                       add(c, mul(c, 4, mul(c, TT, d)), mul(c, 5, mul(c, (uint64_t)t->heads, TT))),
                       add(c, mul(c, (uint64_t)t->heads, TT), Td), 0};
    case ROW_MLP_GATE:
        return t->swiglu ? linear(c, d, F, T) : (row_t){0};
    case ROW_MLP_IN:
        return linear(c, d, F, T);
    case ROW_MLP_OUT:
        return linear(c, F, d, T);
    case ROW_HEAD: { /* no bias; tied: its gradient lands in the token embedding's */
        row_t r = {.name = "", t->tied ? 0 : mul(c, V, d), mul(c, 2, mul(c, Td, V)),
                   mul(c, T, V), 0};
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
    uint64_t A = (uint64_t)t->heads, kv = d / A * (uint64_t)t->kv_heads, F = (uint64_t)t->ffn;
    uint64_t Td = mul(c, T, d), TF = mul(c, T, F);
#define SHAPE(op_, n_, ...)                                                                 \
    do {                                                                                    \
        const uint64_t v_[] = {__VA_ARGS__};                                                \
        r->op = op_;                                                                        \
        r->n_dim = n_;                                                                      \
        memcpy(r->dim, v_, sizeof v_);                                                      \
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
        SHAPE("gemm", 3, T, d, d);
        break;
    case ROW_K:
    case ROW_V:
        SHAPE("gemm", 3, T, kv, d);
        break;
    case ROW_SCORES:
        SHAPE("attention", 4, A, T, T, d / A);
        break;
    case ROW_ATTN_OUT:
        SHAPE("gemm", 5, T, d, d, mul(c, 3, Td), mul(c, 2, Td));
        break;
    case ROW_MLP_GATE: /* SiLU */
        SHAPE("gemm", 5, T, F, d, mul(c, 2, TF), mul(c, 3, TF));
        break;
    case ROW_MLP_IN: /* GELU, or SwiGLU's product */
        if (t->swiglu)
            SHAPE("gemm", 5, T, F, d, mul(c, 3, TF), mul(c, 5, TF));
        else
            SHAPE("gemm", 5, T, F, d, mul(c, 2, TF), mul(c, 3, TF));
        break;
    case ROW_MLP_OUT:
        SHAPE("gemm", 5, T, d, F, mul(c, 3, Td), mul(c, 2, Td));
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

/* The rows of a group that the shape keeps, with their cuts and splits; a cut on a row left
 * out moves to the row before it. */
static void count_group(counter_t *c, const row_def_t *defs, group_t *g)
{
    uint64_t Td = mul(c, (uint64_t)c->t->seq, (uint64_t)c->t->hidden);
    g->n = 0;
    for (const row_def_t *d = defs; d->kind != ROW_NONE; d++) {
        row_t r = count_row(c, d->kind);
        if (r.name) {
            r.name = d->name;
            split_row(d->kind, &r, g->n ? &g->rows[g->n - 1] : NULL, Td);
            shape_row(c, d->kind, &r);
            g->rows[g->n++] = r;
        }
        if (d->cut && g->n)
            g->rows[g->n - 1].cut = Td;
    }
}

/* ---- writing ------------------------------------------------------------------------- */

typedef struct net {
    group_t embed, block, top;
    long layers;
    const char *prefix;
    size_t first; /* the first row with parameters: its backward pass has no input gradient */
} net_t;

static size_t net_rows(const net_t *n)
{
    return (size_t)n->embed.n + (size_t)n->layers * (size_t)n->block.n + (size_t)n->top.n;
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
    if (i < (size_t)n->layers * (size_t)n->block.n) {
        r = &n->block.rows[i % (size_t)n->block.n];
        snprintf(name, size, "%s.%zu.%s", n->prefix, i / (size_t)n->block.n, r->name);
        return r;
    }
    r = &n->top.rows[i - (size_t)n->layers * (size_t)n->block.n];
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
    return add(c, add(c, group_sum(c, &n->embed, flops),
                      mul(c, (uint64_t)n->layers, group_sum(c, &n->block, flops))),
               group_sum(c, &n->top, flops));
}

/* The options that make this profile again, every one written out. */
static void print_command(const sim_transformer_t *t, FILE *out)
{
    fprintf(out, "# dtsim profile transformer --name %s --family %s --layers %ld --hidden %ld\n"
                 "#   --heads %ld --kv-heads %ld --ffn %ld --seq %ld --vocab %ld --positions %ld\n"
                 "#   --norm %s --%s",
            t->name, t->family, t->layers, t->hidden, t->heads, t->kv_heads, t->ffn, t->seq,
            t->vocab, t->positions, t->rmsnorm ? "rmsnorm" : "layernorm",
            t->bias ? "bias" : "no-bias");
    if (family_of(t->family)->has_head)
        fprintf(out, " --%s", t->tied ? "tied" : "untied");
    fprintf(out, " --%s\n", t->swiglu ? "swiglu" : "gelu");
}

dt_status sim_transformer_write(const sim_transformer_t *t, FILE *out, dt_err_t *err)
{
    const family_t *f = family_of(t->family);
    DT_ASSERT(f && t->layers >= 1 && t->layers <= MAX_LAYERS && t->kv_heads >= 1);
    counter_t c = {t, 0};
    net_t n = {.layers = t->layers, .prefix = f->block_prefix};
    count_group(&c, f->embed, &n.embed);
    count_group(&c, f->block, &n.block);
    count_group(&c, f->top, &n.top);
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
        return dt_err_input(err, "the model has %" PRIu64 " parameters: a profile holds at "
                                 "most 1e13", params);

    fprintf(out, "# Model profile %s: written by dtsim profile transformer (make_profiles.py's "
                 "FLOP\n# convention) with\n", t->name);
    print_command(t, out);
    fprintf(out, "[profile]\nname = %s\nsample = a sequence of %ld tokens\n", t->name, t->seq);
    fprintf(out, "source = dtsim profile transformer, %s family, with the options above\n",
            f->name);
    fprintf(out, "params = %" PRIu64 "\nforward_flops = %" PRIu64 "\nbackward_flops = %" PRIu64
                 "\n\n", params, forward, backward);
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
    return DT_OK;
}
