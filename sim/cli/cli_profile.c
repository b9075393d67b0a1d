/* `dtsim profile transformer ... --out FILE`: writes the model profile of a transformer of
 * the user's shape (sim/scenario/profile_transformer.h) for timing-only runs
 * (`model.arch = profile:FILE`). The file is written under a temporary name and renamed, so
 * a failure leaves an earlier file as it was; `--out -` writes to stdout. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_util.h"
#include "compute_model.h"
#include "model_profile.h"
#include "profile_transformer.h"

/* A value the loader reads back as it was written: printable, no comment or key character,
 * no blank at either end, shorter than profile.name's 64 bytes. */
static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 64 || isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)s[i]) || strchr(";#=[]", s[i]))
            return 0;
    return 1;
}

/* The default name: FILE's base name without .ini ("transformer" for stdout); may be too
 * long for a name (the caller checks). */
static void name_from_path(const char *path, char *name, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strcmp(path, "-") || !*base)
        base = "transformer";
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".ini"))
        n -= 4;
    snprintf(name, size, "%.*s", (int)n, base);
}

/* Writes t to path through a temporary file beside it (stdout for "-"). */
static int write_profile(const sim_transformer_t *t, const char *path)
{
    dt_err_t err;
    if (!strcmp(path, "-")) { /* a model too large prints nothing */
        if (sim_transformer_write(t, stdout, &err))
            return cli_usage_error("profile", "%s", err.msg);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "dtsim profile: stdout: write failed: %s\n", strerror(errno));
            return CLI_EXIT_RUN;
        }
        return CLI_EXIT_OK;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return cli_usage_error("profile", "--out: path too long");
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "dtsim profile: %s: cannot write: %s\n", path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    dt_status st = sim_transformer_write(t, f, &err);
    int failed = ferror(f);
    failed |= fclose(f) != 0;
    if (st == DT_OK && !failed && rename(tmp, path) == 0)
        return CLI_EXIT_OK;
    int saved = errno;
    unlink(tmp);
    if (st)
        return cli_usage_error("profile", "%s", err.msg);
    fprintf(stderr, "dtsim profile: %s: cannot write: %s\n", path, strerror(saved));
    return CLI_EXIT_USAGE;
}

/* The written file, read back by the profile loader, in one line. */
static int report(const char *path)
{
    char spec[4096]; /* a name without '/' or .ini would be a built-in profile's */
    snprintf(spec, sizeof spec, "%s%s", sim_model_profile_is_file(path) ? "" : "./", path);
    sim_model_profile_t p;
    dt_err_t err;
    if (sim_model_profile_load(&p, spec, &err)) {
        fprintf(stderr, "dtsim profile: %s does not load back: %s\n", path, err.msg);
        return CLI_EXIT_RUN;
    }
    char active[64] = "";
    if (p.has_experts)
        snprintf(active, sizeof active, " (%.0f active per token)",
                 sim_model_profile_active_params(&p));
    printf("%s: profile %s, %zu parameters%s, %.6g GFLOP forward and %.6g backward per "
           "sample, %d layers\n",
           path, p.name, p.params, active, p.forward_flops / 1e9, p.backward_flops / 1e9,
           p.n_layers);
    sim_model_profile_free(&p);
    return CLI_EXIT_OK;
}

/* The options of profile transformer: the shape's (ids 1 to N_SHAPE, each a long of
 * sim_transformer_t at shape_field[id]), then the others. */
enum {
    OPT_LAYERS = 1,
    OPT_HIDDEN,
    OPT_HEADS,
    OPT_SEQ,
    OPT_VOCAB,
    OPT_KV_HEADS,
    OPT_FFN,
    OPT_POSITIONS,
    OPT_EXPERTS,
    OPT_TOP_K,
    OPT_SHARED_EXPERTS,
    OPT_MOE_FFN,
    OPT_DENSE_LAYERS,
    OPT_KV_LORA_RANK,
    OPT_Q_LORA_RANK,
    OPT_QK_NOPE_DIM,
    OPT_QK_ROPE_DIM,
    OPT_V_HEAD_DIM,
    N_SHAPE = OPT_V_HEAD_DIM,
    OPT_FAMILY,
    OPT_NORM,
    OPT_BIAS,
    OPT_NO_BIAS,
    OPT_TIED,
    OPT_UNTIED,
    OPT_SWIGLU,
    OPT_GELU,
    OPT_NAME,
    OPT_OUT,
    N_TRANSFORMER_OPTS
};

static const size_t shape_field[N_SHAPE + 1] = {
    [OPT_LAYERS] = offsetof(sim_transformer_t, layers),
    [OPT_HIDDEN] = offsetof(sim_transformer_t, hidden),
    [OPT_HEADS] = offsetof(sim_transformer_t, heads),
    [OPT_SEQ] = offsetof(sim_transformer_t, seq),
    [OPT_VOCAB] = offsetof(sim_transformer_t, vocab),
    [OPT_KV_HEADS] = offsetof(sim_transformer_t, kv_heads),
    [OPT_FFN] = offsetof(sim_transformer_t, ffn),
    [OPT_POSITIONS] = offsetof(sim_transformer_t, positions),
    [OPT_EXPERTS] = offsetof(sim_transformer_t, experts),
    [OPT_TOP_K] = offsetof(sim_transformer_t, top_k),
    [OPT_SHARED_EXPERTS] = offsetof(sim_transformer_t, shared_experts),
    [OPT_MOE_FFN] = offsetof(sim_transformer_t, moe_ffn),
    [OPT_DENSE_LAYERS] = offsetof(sim_transformer_t, dense_layers),
    [OPT_KV_LORA_RANK] = offsetof(sim_transformer_t, kv_lora_rank),
    [OPT_Q_LORA_RANK] = offsetof(sim_transformer_t, q_lora_rank),
    [OPT_QK_NOPE_DIM] = offsetof(sim_transformer_t, qk_nope_dim),
    [OPT_QK_ROPE_DIM] = offsetof(sim_transformer_t, qk_rope_dim),
    [OPT_V_HEAD_DIM] = offsetof(sim_transformer_t, v_head_dim),
};

#define SHAPE(ID, NAME, METAVAR, LO, HI, HELP)                                                     \
    {                                                                                              \
        .id = (ID), .name = (NAME), .kind = CLI_VALUE_INT, .metavar = (METAVAR), .help = (HELP),   \
        .lo = (LO), .hi = (HI)                                                                     \
    }
#define SWITCH(ID, NAME, HELP)                                                                     \
    {                                                                                              \
        .id = (ID), .name = (NAME), .help = (HELP)                                                 \
    }

static const cli_option transformer_options[] = {
    {.help = "shape (required):"},
    SHAPE(OPT_LAYERS, "layers", "L", 1, 10000, "transformer layers (blocks), at most 10000"),
    SHAPE(OPT_HIDDEN, "hidden", "H", 1, 1L << 20, "hidden size (model width)"),
    SHAPE(OPT_HEADS, "heads", "A", 1, 1L << 20, "attention heads; A divides H"),
    SHAPE(OPT_SEQ, "seq", "T", 1, 1L << 24, "tokens per sample (sequence length)"),
    SHAPE(OPT_VOCAB, "vocab", "V", 1, 1L << 24, "vocabulary size"),
    {.help = "options (default: the family's):"},
    {.id = OPT_FAMILY,
     .name = "family",
     .kind = CLI_VALUE_CHOICE,
     .metavar = "NAME",
     .choices = "gpt,llama,bert",
     .help = "gpt (GPT-2: LayerNorm, biases, GELU, learned positions, output tied to the token "
             "embedding), llama (RMSNorm, no biases, SwiGLU, rotary positions, untied), bert "
             "(BertModel: post-norm, 512 positions, 2 token types, pooler, no output layer)"},
    SHAPE(OPT_KV_HEADS, "kv-heads", "K", 1, 1L << 20,
          "key and value heads (grouped-query attention); K divides A; default A"),
    SHAPE(OPT_FFN, "ffn", "F", 1, 1L << 24,
          "feed-forward width; default 4H, with --swiglu 8H/3 rounded up to a multiple of 256 "
          "(Llama's rule)"),
    SHAPE(OPT_POSITIONS, "positions", "P", 0, 1L << 24,
          "rows of the learned position embedding (gpt: T, bert: 512); 0 for none (rotary, "
          "llama)"),
    {.id = OPT_NORM,
     .name = "norm",
     .kind = CLI_VALUE_CHOICE,
     .metavar = "KIND",
     .choices = "layernorm,rmsnorm",
     .help = "layernorm (scale and shift) or rmsnorm (scale)"},
    SWITCH(OPT_BIAS, "bias", "biases in the linear layers"),
    SWITCH(OPT_NO_BIAS, "no-bias", "no biases"),
    SWITCH(OPT_TIED, "tied", "the output layer shares the token embedding's weights"),
    SWITCH(OPT_UNTIED, "untied", "the output layer has its own"),
    SWITCH(OPT_SWIGLU, "swiglu", "gated MLP (gate, up, down projections)"),
    SWITCH(OPT_GELU, "gelu", "a plain MLP"),
    {.help = "mixture of experts (every layer dense without --experts):"},
    SHAPE(OPT_EXPERTS, "experts", "N", 1, 100000,
          "routed experts in each MoE layer's MLP ([experts]: strategy.expert), behind a router "
          "of H x N"),
    SHAPE(OPT_TOP_K, "top-k", "K", 1, 100000,
          "routed experts each token uses (required with --experts)"),
    SHAPE(OPT_SHARED_EXPERTS, "shared-experts", "S", 0, 1000,
          "experts every token uses, besides; default 0"),
    SHAPE(OPT_MOE_FFN, "moe-ffn", "F", 1, 1L << 24,
          "an expert's feed-forward width; default --ffn's"),
    SHAPE(OPT_DENSE_LAYERS, "dense-layers", "D", 0, 10000,
          "the first D layers keep the dense MLP; default 0"),
    {.help = "multi-head latent attention (llama family; DeepSeek-V2 and V3):"},
    SHAPE(OPT_KV_LORA_RANK, "kv-lora-rank", "R", 1, 1L << 20,
          "keys and values from a latent of R (with it, the rest)"),
    SHAPE(OPT_Q_LORA_RANK, "q-lora-rank", "R", 1, 1L << 20,
          "queries from a latent of R; default none (from the hidden)"),
    SHAPE(OPT_QK_NOPE_DIM, "qk-nope-dim", "N", 1, 1L << 16,
          "a query and key head's dimension without rotary positions; default H/A"),
    SHAPE(OPT_QK_ROPE_DIM, "qk-rope-dim", "P", 1, 1L << 16,
          "a query and key head's dimension with rotary positions; default 0"),
    SHAPE(OPT_V_HEAD_DIM, "v-head-dim", "V", 1, 1L << 16, "a value head's dimension; default H/A"),
    {.help = "output:"},
    {.id = OPT_NAME,
     .name = "name",
     .kind = CLI_VALUE_TEXT,
     .metavar = "NAME",
     .help = "profile.name; default FILE's base name without .ini"},
    {.id = OPT_OUT,
     .name = "out",
     .kind = CLI_VALUE_PATH,
     .metavar = "FILE",
     .help = "where to write (required; - for stdout)"},
    {0},
};

const cli_spec cli_profile_transformer_spec = {
    .usage = "--layers L --hidden H --heads A --seq T --vocab V\n[OPTIONS] --out FILE",
    .about = "Writes the model profile of a transformer (for model.arch = profile:FILE): its\n"
             "layers laid out as the family's Hugging Face implementation does, with\n"
             "make_profiles.py's FLOP convention (2 per multiply-add, 4 per normalised element,\n"
             "5 per attention score, backward twice forward except the first layer's), and\n"
             "Megatron-LM's tensor-parallel split of each layer ([tensor]: strategy.tensor).\n",
    .options = transformer_options,
    .options_title = "",
    .footer = "example (Llama-2 7B, 6,738,415,616 parameters):\n"
              "  dtsim profile transformer --family llama --layers 32 --hidden 4096 --heads 32 \\\n"
              "      --seq 4096 --vocab 32000 --ffn 11008 --out llama2-7b.ini\n",
};

/* An option given a second time is refused, not silently won by the last one (--layers 2
 * --layers 3): seen[group] holds the name it came as; a pair of opposites (--bias and
 * --no-bias) is one group. Returns 0, or the usage error's exit code. */
static int once(const char *cmd, const char **seen, int group, const char *name)
{
    if (seen[group]) {
        if (!strcmp(seen[group], name))
            return cli_usage_error(cmd, "--%s given twice (give each option once)", name);
        return cli_usage_error(cmd, "--%s and --%s both given (one or the other)", seen[group],
                               name);
    }
    seen[group] = name;
    return 0;
}

static int cli_profile_transformer(int argc, char **argv)
{
    sim_transformer_t t;
    sim_transformer_init(&t);
    const char *out = NULL, *name = NULL;
    const char *seen[N_TRANSFORMER_OPTS] = {0};
    int id;
    cli_parser p;
    cli_parse_init(&p, "profile transformer", &cli_profile_transformer_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        /* a pair of opposites counts as one option: its first member's */
        int group = id == OPT_NO_BIAS || id == OPT_UNTIED || id == OPT_GELU ? id - 1 : id;
        int rc = once("profile transformer", seen, group, p.option->name);
        if (rc)
            return rc;
        if (id <= N_SHAPE) {
            *(long *)((char *)&t + shape_field[id]) = p.integer;
            continue;
        }
        switch (id) {
        case OPT_FAMILY:
            t.family = p.value;
            break;
        case OPT_NORM:
            t.rmsnorm = !strcmp(p.value, "rmsnorm");
            break;
        case OPT_BIAS:
        case OPT_NO_BIAS:
            t.bias = id == OPT_BIAS;
            break;
        case OPT_TIED:
        case OPT_UNTIED:
            t.tied = id == OPT_TIED;
            break;
        case OPT_SWIGLU:
        case OPT_GELU:
            t.swiglu = id == OPT_SWIGLU;
            break;
        case OPT_NAME:
            name = p.value;
            break;
        case OPT_OUT:
            out = p.value;
            break;
        }
    }
    if (id < 0)
        return p.status;
    if (p.n_args)
        return cli_usage_error("profile", "unexpected argument \"%s\"", p.args[0]);
    dt_err_t err;
    if (sim_transformer_resolve(&t, &err))
        return cli_usage_error("profile", "%s", err.msg);
    if (!out || !*out)
        return cli_usage_error("profile", "say where: --out FILE (- for stdout)");
    if (name && !valid_name(name))
        return cli_usage_error("profile",
                               "--name: \"%s\" is not a profile name (1 to 63 "
                               "printable characters, none of ;#=[], no blank at "
                               "either end)",
                               name);
    char derived[4096];
    if (!name) {
        name_from_path(out, derived, sizeof derived);
        if (!valid_name(derived))
            return cli_usage_error("profile",
                                   "the name from --out, \"%.80s\", is not a profile "
                                   "name: give --name",
                                   derived);
        name = derived;
    }
    memcpy(t.name, name, strlen(name) + 1); /* valid_name: shorter than t.name */
    int rc = write_profile(&t, out);
    return rc || !strcmp(out, "-") ? rc : report(out);
}

/* ---- dtsim profile time: what the compute model by shape makes of a profile ------------- */

enum { OPT_DEVICE = 1, OPT_PRECISION, OPT_MICRO, OPT_TENSOR, OPT_SP, N_TIME_OPTS };

static const cli_option time_options[] = {
    {.id = OPT_DEVICE,
     .name = "device",
     .kind = CLI_VALUE_TEXT,
     .metavar = "DEVICE",
     .help = "a device of the catalogue (dtsim devices) or a device file (required)"},
    {.id = OPT_PRECISION,
     .name = "precision",
     .kind = CLI_VALUE_TEXT,
     .metavar = "P",
     .help = "the precision its peak is taken at (default bf16)"},
    {.id = OPT_MICRO,
     .name = "micro-batch",
     .kind = CLI_VALUE_INT,
     .metavar = "B",
     .help = "samples of one call (default 1)",
     .lo = 1,
     .hi = 1L << 20},
    {.id = OPT_TENSOR,
     .name = "tensor",
     .kind = CLI_VALUE_INT,
     .metavar = "T",
     .help = "the tensor group a device is a member of (default 1)",
     .lo = 1,
     .hi = 1L << 20},
    {.id = OPT_SP,
     .name = "sequence-parallel",
     .help = "with --tensor above 1, the layers tensor parallelism leaves whole (norms and "
             "the like) split T ways too, along the sequence"},
    {0},
};

const cli_spec cli_profile_time_spec = {
    .usage = "FILE.ini|NAME --device DEVICE [--precision P]\n"
             "[--micro-batch B] [--tensor T] [--sequence-parallel]",
    .about = "Times a model profile's layers with the compute model by operation and shape\n"
             "(cluster.compute_model = shape) on a device of the catalogue (or a device file),\n"
             "as a run charges them: per operation (gemm, attention, memory-bound, layers\n"
             "without a shape at the flat speed), the model's FLOPs, the forward and backward\n"
             "time of one call of B samples (default 1) on a member of a tensor group of T\n"
             "(default 1), and the sustained TFLOP/s and fraction of the peak at P (default\n"
             "bf16); then the first transformer block alone (the layers named like its\n"
             "first one, PREFIX.0.*) and the whole profile.\n",
    .options = time_options,
};

typedef struct time_sum {
    double flops, seconds;
    int layers;
} time_sum_t;

static void time_row(const char *what, const time_sum_t *t, double peak)
{
    double speed = t->seconds > 0 ? t->flops / t->seconds : 0;
    printf("%-22s %6d %12.4g %12.4g %9.1f %8.1f%%\n", what, t->layers, t->flops / 1e9,
           t->seconds * 1e3, speed / 1e12, 100 * speed / peak);
}

static int cli_profile_time(int argc, char **argv)
{
    const char *device = NULL, *precision = "bf16";
    long micro = 1, tensor = 1;
    int sp = 0, id;
    const char *seen[N_TIME_OPTS] = {0};
    cli_parser parser;
    cli_parse_init(&parser, "profile time", &cli_profile_time_spec, argc, argv);
    while ((id = cli_parse_next(&parser)) > 0) {
        int rc = once("profile time", seen, id, parser.option->name);
        if (rc)
            return rc;
        switch (id) {
        case OPT_DEVICE:
            device = parser.value;
            break;
        case OPT_PRECISION:
            precision = parser.value;
            break;
        case OPT_MICRO:
            micro = parser.integer;
            break;
        case OPT_TENSOR:
            tensor = parser.integer;
            break;
        case OPT_SP:
            sp = 1;
            break;
        }
    }
    if (id < 0)
        return parser.status;
    if (parser.n_args != 1)
        return cli_usage_error("profile", "time: %s",
                               parser.n_args ? "one profile only" : "which profile? FILE.ini");
    if (!device)
        return cli_usage_error("profile", "time: which device? --device NAME (dtsim devices)");
    scenario_t *sc = dt_calloc(1, sizeof *sc);
    scenario_defaults(sc);
    int q = 0;
    while (q < SIM_PRECISIONS && strcmp(scenario_precision_name((sim_precision_t)q), precision))
        q++;
    sim_device_profile_t file;
    const sim_device_profile_t *d = NULL;
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n);
    for (size_t i = 0; i < n && !d; i++)
        d = strcmp(cat[i].name, device) ? NULL : &cat[i];
    dt_err_t err;
    sim_compute_t cm;
    int rc = CLI_EXIT_USAGE;
    sim_model_profile_t p = {0};
    if (q == SIM_PRECISIONS) {
        cli_usage_error("profile", "--precision: \"%s\" is not fp32, tf32, bf16 or fp8", precision);
        goto done;
    }
    sc->precision = (sim_precision_t)q;
    if (!d && !strchr(device, '/') && !strstr(device, ".ini")) {
        char names[512] = "";
        for (size_t i = 0; i < n; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     cat[i].name);
        cli_usage_error("profile", "--device: unknown device \"%s\" (%s, or FILE.ini)", device,
                        names);
        goto done;
    }
    if (!d) {
        if (scenario_device_read(device, &file, &err)) {
            fprintf(stderr, "dtsim profile: %s\n", err.msg);
            goto done;
        }
        d = &file;
    }
    if (!sim_compute_of_device(d, sc, &cm)) {
        cli_usage_error("profile", "--device %s: %s", device,
                        isnan(d->value[sc->precision]) ? "no peak at that precision"
                                                       : "no sms: it has no model by shape");
        goto done;
    }
    if (sim_model_profile_load(&p, parser.args[0], &err)) {
        fprintf(stderr, "dtsim profile: %s\n", err.msg);
        goto done;
    }
    sc->device_efficiency = 0;
    double speed = scenario_device_speed(d, sc), peak = d->value[sc->precision];
    /* no expert parallelism: a MoE layer's experts all on the device */
    sim_compute_call_t call = {(double)micro, (int)tensor, tensor > 1 && sp, 1};
    /* the first block: the layers named like the first one with ".0." in its name */
    char block[64] = "";
    for (int i = p.n_layers - 1; i >= 0 && !block[0]; i--) {
        const char *at = strstr(p.layers[i].name, ".0.");
        if (at)
            snprintf(block, sizeof block, "%.*s", (int)(at - p.layers[i].name) + 3,
                     p.layers[i].name);
    }
    static const char *const ops[] = {"flat (no shape)", "gemm", "attention", "memory-bound"};
    time_sum_t by_op[4] = {{0}}, in_block = {0}, all = {0};
    for (int i = 0; i < p.n_layers; i++) {
        const sim_profile_layer_t *l = &p.layers[i];
        double share = tensor > 1 && (l->split || call.sp) ? 1.0 / (double)tensor : 1.0;
        double fwd, bwd;
        sim_compute_layer(&cm, l, &call, speed, &fwd, &bwd);
        time_sum_t one = {(l->forward_flops + l->backward_flops) * share * (double)micro, fwd + bwd,
                          1};
        time_sum_t *to[3] = {&by_op[l->op], &all,
                             block[0] && !strncmp(l->name, block, strlen(block)) ? &in_block
                                                                                 : NULL};
        for (int k = 0; k < 3; k++)
            if (to[k]) {
                to[k]->flops += one.flops;
                to[k]->seconds += one.seconds;
                to[k]->layers++;
            }
    }
    printf("%s: %s on %s at %s, %ld sample%s a call, tensor %ld%s; peak %.6g TFLOP/s, flat "
           "%.6g\n",
           parser.args[0], p.name, d->name, precision, micro, micro == 1 ? "" : "s", tensor,
           call.sp ? " with sequence parallelism" : "", peak / 1e12, speed / 1e12);
    printf("%-22s %6s %12s %12s %9s %9s\n", "forward + backward", "layers", "GFLOP", "ms",
           "TFLOP/s", "of peak");
    for (int k = 1; k <= 4; k++)
        if (by_op[k % 4].layers)
            time_row(ops[k % 4], &by_op[k % 4], peak);
    if (in_block.layers) {
        char what[64];
        snprintf(what, sizeof what, "block %.14s*", block);
        time_row(what, &in_block, peak);
    }
    time_row("all layers", &all, peak);
    rc = CLI_EXIT_OK;
done:
    sim_model_profile_free(&p);
    free(sc);
    return rc;
}

int cli_profile(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        if (argc < 2)
            return cli_usage_error("profile", "which model? dtsim profile transformer ...");
        cli_group_usage(stdout, "profile");
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "transformer"))
        return cli_profile_transformer(argc - 1, argv + 1);
    if (!strcmp(argv[1], "time"))
        return cli_profile_time(argc - 1, argv + 1);
    return cli_usage_error("profile",
                           "unknown model kind \"%s\" (transformer, or time to "
                           "time a profile; torchvision "
                           "models and your own modules: "
                           "scenarios/profiles/torch_profile.py)",
                           argv[1]);
}
