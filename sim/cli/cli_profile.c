/* `dtsim profile transformer ... --out FILE`: writes the model profile of a transformer of
 * the user's shape (sim/scenario/profile_transformer.h) for timing-only runs
 * (`model.arch = profile:FILE`). The file is written under a temporary name and renamed, so
 * a failure leaves an earlier file as it was; `--out -` writes to stdout. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

static void profile_help(void)
{
    printf("usage: dtsim profile transformer --layers L --hidden H --heads A --seq T --vocab V\n"
           "                                 [OPTIONS] --out FILE\n"
           "\n"
           "Writes the model profile of a transformer (for model.arch = profile:FILE): its\n"
           "layers laid out as the family's Hugging Face implementation does, with\n"
           "make_profiles.py's FLOP convention (2 per multiply-add, 4 per normalised element,\n"
           "5 per attention score, backward twice forward except the first layer's), and\n"
           "Megatron-LM's tensor-parallel split of each layer ([tensor]: strategy.tensor).\n"
           "\n"
           "shape (required):\n"
           "  --layers L        transformer layers (blocks), at most 10000\n"
           "  --hidden H        hidden size (model width)\n"
           "  --heads A         attention heads; A divides H\n"
           "  --seq T           tokens per sample (sequence length)\n"
           "  --vocab V         vocabulary size\n"
           "options (default: the family's):\n"
           "  --family NAME     gpt (GPT-2: LayerNorm, biases, GELU, learned positions, output\n"
           "                    tied to the token embedding), llama (RMSNorm, no biases,\n"
           "                    SwiGLU, rotary positions, untied), bert (BertModel: post-norm,\n"
           "                    512 positions, 2 token types, pooler, no output layer)\n"
           "  --kv-heads K      key and value heads (grouped-query attention); K divides A;\n"
           "                    default A\n"
           "  --ffn F           feed-forward width; default 4H, with --swiglu 8H/3 rounded up\n"
           "                    to a multiple of 256 (Llama's rule)\n"
           "  --positions P     rows of the learned position embedding (gpt: T, bert: 512);\n"
           "                    0 for none (rotary, llama)\n"
           "  --norm KIND       layernorm (scale and shift) or rmsnorm (scale)\n"
           "  --bias, --no-bias biases in the linear layers, or none\n"
           "  --tied, --untied  the output layer shares the token embedding's weights, or not\n"
           "  --swiglu, --gelu  gated MLP (gate, up, down projections) or a plain one\n"
           "mixture of experts (every layer dense without --experts):\n"
           "  --experts N       routed experts in each MoE layer's MLP ([experts]:\n"
           "                    strategy.expert), behind a router of H x N\n"
           "  --top-k K         routed experts each token uses (required with --experts)\n"
           "  --shared-experts S  experts every token uses, besides; default 0\n"
           "  --moe-ffn F       an expert's feed-forward width; default --ffn's\n"
           "  --dense-layers D  the first D layers keep the dense MLP; default 0\n"
           "multi-head latent attention (llama family; DeepSeek-V2 and V3):\n"
           "  --kv-lora-rank R  keys and values from a latent of R (with it, the rest)\n"
           "  --q-lora-rank R   queries from a latent of R; default none (from the hidden)\n"
           "  --qk-nope-dim N, --qk-rope-dim P  a query and key head's dimensions without\n"
           "                    and with rotary positions; default H/A and 0\n"
           "  --v-head-dim V    a value head's dimension; default H/A\n"
           "  --name NAME       profile.name; default FILE's base name without .ini\n"
           "  --out FILE        where to write (required; - for stdout)\n"
           "  -h, --help        this text\n"
           "\n"
           "example (Llama-2 7B, 6,738,415,616 parameters):\n"
           "  dtsim profile transformer --family llama --layers 32 --hidden 4096 --heads 32 \\\n"
           "      --seq 4096 --vocab 32000 --ffn 11008 --out llama2-7b.ini\n");
}

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
           "sample, %d layers\n", path, p.name, p.params, active, p.forward_flops / 1e9,
           p.backward_flops / 1e9, p.n_layers);
    sim_model_profile_free(&p);
    return CLI_EXIT_OK;
}

/* The shape options: one row each, the field they set and their range. */
typedef struct shape_opt {
    const char *name;
    size_t field; /* offset of a long in sim_transformer_t */
    long lo, hi;
} shape_opt_t;

#define SHAPE(name, field, lo, hi) {name, offsetof(sim_transformer_t, field), lo, hi}
static const shape_opt_t shape_opts[] = {
    SHAPE("layers", layers, 1, 10000),       SHAPE("hidden", hidden, 1, 1L << 20),
    SHAPE("heads", heads, 1, 1L << 20),      SHAPE("seq", seq, 1, 1L << 24),
    SHAPE("vocab", vocab, 1, 1L << 24),      SHAPE("kv-heads", kv_heads, 1, 1L << 20),
    SHAPE("ffn", ffn, 1, 1L << 24),          SHAPE("positions", positions, 0, 1L << 24),
    SHAPE("experts", experts, 1, 100000),    SHAPE("top-k", top_k, 1, 100000),
    SHAPE("shared-experts", shared_experts, 0, 1000), SHAPE("moe-ffn", moe_ffn, 1, 1L << 24),
    SHAPE("dense-layers", dense_layers, 0, 10000),
    SHAPE("q-lora-rank", q_lora_rank, 1, 1L << 20),
    SHAPE("kv-lora-rank", kv_lora_rank, 1, 1L << 20),
    SHAPE("qk-rope-dim", qk_rope_dim, 1, 1L << 16), SHAPE("qk-nope-dim", qk_nope_dim, 1, 1L << 16),
    SHAPE("v-head-dim", v_head_dim, 1, 1L << 16),
};
#define N_SHAPE (int)(sizeof shape_opts / sizeof shape_opts[0])

enum { OPT_FAMILY = 256, OPT_NORM, OPT_BIAS, OPT_NO_BIAS, OPT_TIED, OPT_UNTIED, OPT_SWIGLU,
       OPT_GELU, OPT_NAME, OPT_OUT };

/* An option given a second time is refused, not silently won by the last one (--layers 2
 * --layers 3): seen[group] holds the name it came as; a pair of opposites (--bias and
 * --no-bias) is one group. Returns 0, or the usage error's exit code. */
static int once(const char **seen, int group, const char *name)
{
    if (seen[group]) {
        if (!strcmp(seen[group], name))
            return cli_usage_error("profile", "--%s given twice (give each option once)", name);
        return cli_usage_error("profile", "--%s and --%s both given (one or the other)",
                               seen[group], name);
    }
    seen[group] = name;
    return 0;
}

static int cli_profile_transformer(int argc, char **argv)
{
    struct option longs[N_SHAPE + 12];
    for (int i = 0; i < N_SHAPE; i++)
        longs[i] = (struct option){shape_opts[i].name, required_argument, 0, i};
    const struct option rest[] = {
        {"family", required_argument, 0, OPT_FAMILY}, {"norm", required_argument, 0, OPT_NORM},
        {"bias", no_argument, 0, OPT_BIAS},           {"no-bias", no_argument, 0, OPT_NO_BIAS},
        {"tied", no_argument, 0, OPT_TIED},           {"untied", no_argument, 0, OPT_UNTIED},
        {"swiglu", no_argument, 0, OPT_SWIGLU},       {"gelu", no_argument, 0, OPT_GELU},
        {"name", required_argument, 0, OPT_NAME},     {"out", required_argument, 0, OPT_OUT},
        {"help", no_argument, 0, 'h'},                {0, 0, 0, 0}};
    memcpy(longs + N_SHAPE, rest, sizeof rest);
    sim_transformer_t t;
    sim_transformer_init(&t);
    const char *out = NULL, *name = NULL;
    const char *seen[N_SHAPE + 12] = {0};
    int c, at = -1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, &at)) != -1) {
        if (at >= 0 && c != 'h') {
            /* a pair of opposites counts as one option: its first member's row */
            int group = at;
            if (c == OPT_NO_BIAS || c == OPT_UNTIED || c == OPT_GELU)
                group--;
            int rc = once(seen, group, longs[at].name);
            if (rc)
                return rc;
        }
        at = -1;
        if (c >= 0 && c < N_SHAPE) {
            const shape_opt_t *o = &shape_opts[c];
            if (cli_parse_long(optarg, o->lo, o->hi, (long *)((char *)&t + o->field)))
                return cli_usage_error("profile", "--%s: \"%s\" is not a whole number in "
                                                  "[%ld, %ld]", o->name, optarg, o->lo, o->hi);
            continue;
        }
        switch (c) {
        case OPT_FAMILY:
            t.family = optarg;
            break;
        case OPT_NORM:
            if (strcmp(optarg, "layernorm") && strcmp(optarg, "rmsnorm"))
                return cli_usage_error("profile", "--norm: \"%s\" is not layernorm or rmsnorm",
                                       optarg);
            t.rmsnorm = !strcmp(optarg, "rmsnorm");
            break;
        case OPT_BIAS:
        case OPT_NO_BIAS:
            t.bias = c == OPT_BIAS;
            break;
        case OPT_TIED:
        case OPT_UNTIED:
            t.tied = c == OPT_TIED;
            break;
        case OPT_SWIGLU:
        case OPT_GELU:
            t.swiglu = c == OPT_SWIGLU;
            break;
        case OPT_NAME:
            name = optarg;
            break;
        case OPT_OUT:
            out = optarg;
            break;
        case 'h':
            profile_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("profile", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("profile", "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("profile", "unexpected argument \"%s\"", argv[optind]);
    dt_err_t err;
    if (sim_transformer_resolve(&t, &err))
        return cli_usage_error("profile", "%s", err.msg);
    if (!out || !*out)
        return cli_usage_error("profile", "say where: --out FILE (- for stdout)");
    if (name && !valid_name(name))
        return cli_usage_error("profile", "--name: \"%s\" is not a profile name (1 to 63 "
                                          "printable characters, none of ;#=[], no blank at "
                                          "either end)", name);
    char derived[4096];
    if (!name) {
        name_from_path(out, derived, sizeof derived);
        if (!valid_name(derived))
            return cli_usage_error("profile", "the name from --out, \"%.80s\", is not a profile "
                                              "name: give --name", derived);
        name = derived;
    }
    memcpy(t.name, name, strlen(name) + 1); /* valid_name: shorter than t.name */
    int rc = write_profile(&t, out);
    return rc || !strcmp(out, "-") ? rc : report(out);
}

/* ---- dtsim profile time: what the compute model by shape makes of a profile ------------- */

static void time_help(void)
{
    printf("usage: dtsim profile time FILE.ini|NAME --device DEVICE [--precision P]\n"
           "                          [--micro-batch B] [--tensor T] [--sequence-parallel]\n"
           "\n"
           "Times a model profile's layers with the compute model by operation and shape\n"
           "(cluster.compute_model = shape) on a device of the catalogue (or a device file),\n"
           "as a run charges them: per operation (gemm, attention, memory-bound, layers\n"
           "without a shape at the flat speed), the model's FLOPs, the forward and backward\n"
           "time of one call of B samples (default 1) on a member of a tensor group of T\n"
           "(default 1), and the sustained TFLOP/s and fraction of the peak at P (default\n"
           "bf16); then the first transformer block alone (the layers named like its\n"
           "first one, PREFIX.0.*) and the whole profile.\n");
}

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
    enum { OPT_DEVICE = 256, OPT_PRECISION, OPT_MICRO, OPT_TENSOR, OPT_SP };
    const struct option longs[] = {
        {"device", required_argument, 0, OPT_DEVICE},
        {"precision", required_argument, 0, OPT_PRECISION},
        {"micro-batch", required_argument, 0, OPT_MICRO},
        {"tensor", required_argument, 0, OPT_TENSOR},
        {"sequence-parallel", no_argument, 0, OPT_SP},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *device = NULL, *precision = "bf16";
    long micro = 1, tensor = 1;
    int sp = 0, c, at = -1;
    const char *seen[sizeof longs / sizeof longs[0]] = {0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, &at)) != -1) {
        if (at >= 0 && c != 'h') {
            int rc = once(seen, at, longs[at].name);
            if (rc)
                return rc;
        }
        at = -1;
        switch (c) {
        case OPT_DEVICE:
            device = optarg;
            break;
        case OPT_PRECISION:
            precision = optarg;
            break;
        case OPT_MICRO:
        case OPT_TENSOR:
            if (cli_parse_long(optarg, 1, 1L << 20, c == OPT_MICRO ? &micro : &tensor))
                return cli_usage_error("profile", "--%s: \"%s\" is not a whole number in [1, "
                                                  "1048576]",
                                       c == OPT_MICRO ? "micro-batch" : "tensor", optarg);
            break;
        case OPT_SP:
            sp = 1;
            break;
        case 'h':
            time_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("profile", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("profile", "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return cli_usage_error("profile", "time: %s", optind < argc ? "one profile only"
                                                                  : "which profile? FILE.ini");
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
        cli_usage_error("profile", "--precision: \"%s\" is not fp32, tf32, bf16 or fp8",
                        precision);
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
    if (sim_model_profile_load(&p, argv[optind], &err)) {
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
        time_sum_t one = {(l->forward_flops + l->backward_flops) * share * (double)micro,
                          fwd + bwd, 1};
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
           "%.6g\n", argv[optind], p.name, d->name, precision, micro, micro == 1 ? "" : "s",
           tensor, call.sp ? " with sequence parallelism" : "", peak / 1e12, speed / 1e12);
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
        profile_help();
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "transformer"))
        return cli_profile_transformer(argc - 1, argv + 1);
    if (!strcmp(argv[1], "time"))
        return cli_profile_time(argc - 1, argv + 1);
    return cli_usage_error("profile", "unknown model kind \"%s\" (transformer, or time to "
                                      "time a profile; torchvision "
                                      "models and your own modules: "
                                      "scenarios/profiles/torch_profile.py)", argv[1]);
}
