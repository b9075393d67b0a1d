/* `dtsim profile transformer`: GPT-2 XL's and BERT-large's shapes give, line for line, the
 * built-in profiles make_profiles.py wrote; Llama-2 7B's and 70B's shapes give their published
 * parameter counts (Hugging Face's num_parameters() of meta-llama/Llama-2-7b-hf and -70b-hf)
 * and the FLOPs of a closed formula; each option changes the counts by what it says; the
 * command's errors are one line with exit code 2 and leave an earlier file as it was; a
 * written profile runs timing-only for exactly its FLOPs at the device's speed. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compute_model.h"
#include "model_profile.h"
#include "profile_transformer.h"

static char dir[] = "/tmp/dtsim-profile-XXXXXX";
static char err_text[4096];

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* "DIR/name" in a static buffer of 4 (rotating) */
static const char *at(const char *name)
{
    static char buf[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* The profile of t (resolved here) as text; NULL with err when it is refused. */
static char *generate(sim_transformer_t *t, dt_err_t *err)
{
    if (sim_transformer_resolve(t, err))
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    dt_status st = sim_transformer_write(t, f, err);
    fclose(f);
    if (st) {
        ck_assert_uint_eq(len, 0); /* refused: nothing written */
        free(text);
        return NULL;
    }
    return text;
}

/* Loads the profile text through a file, as a scenario would. */
static void load_text(const char *text, sim_model_profile_t *p)
{
    const char *path = at("loaded.ini");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    dt_err_t err;
    ck_assert_msg(sim_model_profile_load(p, path, &err) == DT_OK, "%s", err.msg);
}

static const sim_profile_layer_t *layer(const sim_model_profile_t *p, const char *name)
{
    for (int i = 0; i < p->n_layers; i++)
        if (!strcmp(p->layers[i].name, name))
            return &p->layers[i];
    ck_abort_msg("no layer %s in %s", name, p->name);
    return NULL;
}

static sim_transformer_t shape(const char *family, long layers, long hidden, long heads, long seq,
                               long vocab)
{
    sim_transformer_t t;
    sim_transformer_init(&t);
    t.family = family;
    t.layers = layers;
    t.hidden = hidden;
    t.heads = heads;
    t.seq = seq;
    t.vocab = vocab;
    snprintf(t.name, sizeof t.name, "%s", "test");
    return t;
}

/* ---- the built-in profiles and the published counts -------------------------------------- */

/* From "params =" to the end, and the sample line: byte for byte the built-in file. */
static void assert_same_as_builtin(sim_transformer_t t, const char *builtin)
{
    char path[512];
    snprintf(path, sizeof path, "%s/scenarios/profiles/%s.ini", DTSIM_SOURCE, builtin);
    char *want = slurp(path);
    dt_err_t err;
    char *got = generate(&t, &err);
    ck_assert_msg(got, "%s", err.msg);
    const char *w = strstr(want, "\nparams = "), *g = strstr(got, "\nparams = ");
    ck_assert(w && g);
    /* the built-in profiles have no [shape] section (make_profiles.py writes none): up to
     * the section, then the section in full */
    char *shape = strstr(got, "\n# layer = what it computes");
    ck_assert_ptr_nonnull(shape);
    ck_assert_ptr_nonnull(strstr(shape, "\n[shape]\n"));
    ck_assert_ptr_null(strstr(want, "[shape]"));
    shape[0] = '\0';
    ck_assert_msg(!strcmp(g, w), "%s: the generated profile differs from the built-in one",
                  builtin);
    const char *ws = strstr(want, "\nsample = "), *gs = strstr(got, "\nsample = ");
    ck_assert(ws && gs);
    ck_assert(!strncmp(ws, gs, (size_t)(strchr(ws + 1, '\n') - ws)));
    /* and it loads as the built-in one does */
    sim_model_profile_t p, q;
    load_text(got, &p);
    ck_assert(sim_model_profile_load(&q, builtin, NULL) == DT_OK);
    ck_assert_uint_eq(p.params, q.params);
    ck_assert_int_eq(p.n_layers, q.n_layers);
    ck_assert_str_eq(p.name, "test");
    sim_model_profile_free(&p);
    sim_model_profile_free(&q);
    free(got);
    free(want);
}

START_TEST(gpt2_xl_and_bert_large_as_built_in)
{
    assert_same_as_builtin(shape(NULL, 48, 1600, 25, 1024, 50257), "gpt2_xl");
    assert_same_as_builtin(shape("bert", 24, 1024, 16, 128, 30522), "bert_large");
}
END_TEST

/* Forward FLOPs of a Llama by the closed formula: per layer the q, k, v, o projections,
 * 2 x 2 T^2 d for the scores and the weighted values, 5 per score, the three MLP
 * projections and two norms; then the final norm and the output layer. */
static double llama_flops(double L, double d, double A, double K, double F, double T, double V)
{
    double kv = d / A * K;
    double block = 2 * T * (2 * d * d + 2 * d * kv) + 4 * T * T * d + 5 * A * T * T +
                   2 * T * 3 * d * F + 2 * 4 * T * d;
    return L * block + 4 * T * d + 2 * T * d * V;
}

START_TEST(llama2_published_parameter_counts)
{
    static const struct {
        long layers, hidden, heads, kv_heads, ffn; /* ffn -1: Llama's rule */
        size_t params;
    } llama[] = {
        {32, 4096, 32, -1, -1, 6738415616},    /* Llama-2 7B: ffn 11008 by the rule */
        {80, 8192, 64, 8, 28672, 68976648192}, /* Llama-2 70B: GQA, ffn multiplier 1.3 */
    };
    for (int i = 0; i < 2; i++) {
        sim_transformer_t t =
            shape("llama", llama[i].layers, llama[i].hidden, llama[i].heads, 4096, 32000);
        t.kv_heads = llama[i].kv_heads;
        t.ffn = llama[i].ffn;
        dt_err_t err;
        char *text = generate(&t, &err);
        ck_assert_msg(text, "%s", err.msg);
        ck_assert_int_eq(t.ffn, i ? 28672 : 11008);
        sim_model_profile_t p;
        load_text(text, &p);
        ck_assert_uint_eq(p.params, llama[i].params);
        double want = llama_flops((double)t.layers, (double)t.hidden, (double)t.heads,
                                  (double)(i ? 8 : 32), (double)t.ffn, 4096, 32000);
        ck_assert_double_eq(p.forward_flops, want);
        ck_assert_double_eq(p.backward_flops, 2 * want); /* the embedding computes nothing */
        ck_assert_int_eq(p.n_layers, 1 + 10 * (int)t.layers + 2);
        ck_assert_uint_eq(layer(&p, "model.layers.0.self_attn.k_proj")->params,
                          (size_t)(t.hidden * t.hidden / t.heads * t.kv_heads));
        ck_assert_uint_eq(layer(&p, "lm_head")->params, 32000 * (size_t)t.hidden);
        ck_assert_double_eq(layer(&p, "model.embed_tokens")->cut, 4096.0 * (double)t.hidden);
        sim_model_profile_free(&p);
        free(text);
    }
}
END_TEST

/* ---- each option changes what it says ------------------------------------------------------ */

static size_t params_of(sim_transformer_t t)
{
    dt_err_t err;
    char *text = generate(&t, &err);
    ck_assert_msg(text, "%s", err.msg);
    sim_model_profile_t p;
    load_text(text, &p);
    size_t n = p.params;
    sim_model_profile_free(&p);
    free(text);
    return n;
}

START_TEST(options_change_what_they_say)
{
    const size_t L = 3, d = 64, A = 4, T = 16, V = 100;
    sim_transformer_t base = shape("gpt", L, d, A, T, V);
    size_t n = params_of(base);
    /* GPT-2's count by hand: embeddings, per layer two norms, qkv, out, MLP (biases), ln_f */
    ck_assert_uint_eq(n, V * d + T * d +
                             L * (2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) +
                                  (4 * d * d + 4 * d) + (4 * d * d + d)) +
                             2 * d);
    sim_transformer_t t = base;
    t.tied = 0;
    ck_assert_uint_eq(params_of(t), n + V * d);
    t = base;
    t.bias = 0;
    ck_assert_uint_eq(params_of(t), n - L * (3 * d + d + 4 * d + d));
    t = base;
    t.rmsnorm = 1;
    ck_assert_uint_eq(params_of(t), n - (2 * L + 1) * d);
    t = base;
    t.kv_heads = 1; /* keys and values of one head: d / A wide each */
    ck_assert_uint_eq(params_of(t), n - L * 2 * (d - d / A) * (d + 1));
    t = base;
    t.swiglu = 1; /* the gate's d x F and F biases; F by Llama's rule: 8d/3 up to 256 */
    ck_assert_uint_eq(params_of(t), n + L * (256 * d + 256 + (256 - 4 * d) * (2 * d + 1)));
    t = base;
    t.ffn = 100;
    ck_assert_uint_eq(params_of(t), n - L * (4 * d - 100) * (2 * d + 1));
    t = base;
    t.positions = 0; /* no position table: the stage boundary moves to the token embedding */
    ck_assert_uint_eq(params_of(t), n - T * d);
    dt_err_t err;
    char *text = generate(&t, &err);
    sim_model_profile_t p;
    load_text(text, &p);
    ck_assert_double_eq(layer(&p, "wte")->cut, (double)(T * d));
    ck_assert_double_eq(layer(&p, "h.0.mlp.c_proj")->cut, (double)(T * d));
    ck_assert_double_eq(layer(&p, "h.0.attn.c_attn")->cut, 0);
    sim_model_profile_free(&p);
    free(text);
    /* the shape's limits, refused before anything is written */
    t = shape("gpt", 10000, 1 << 20, 1, 1 << 24, 1 << 24);
    ck_assert_ptr_null(generate(&t, &err));
    ck_assert_str_eq(err.msg, "the model is too large: its FLOPs per sample pass 2^64");
    t = shape("gpt", 10000, 1 << 20, 1, 1, 1);
    ck_assert_ptr_null(generate(&t, &err));
    ck_assert_msg(strstr(err.msg, "parameters: a profile holds at most 1e13"), "%s", err.msg);
}
END_TEST

/* ---- the command ------------------------------------------------------------------------ */

/* Runs "dtsim ARGS" through the shell, stdout to DIR/out, stderr kept in err_text. */
static int dtsim(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s >%s/out 2>%s/err", DTSIM_BINARY, args, dir, dir);
    int st = system(cmd);
    char *e = slurp(at("err"));
    snprintf(err_text, sizeof err_text, "%s", e);
    free(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void one_line(const char *needle)
{
    char *nl = strchr(err_text, '\n');
    ck_assert_msg(nl && !nl[1], "expected one error line, got: %s", err_text);
    ck_assert_msg(strstr(err_text, needle), "\"%s\" not in: %s", needle, err_text);
}

#define SHAPE_7B "--layers 32 --hidden 4096 --heads 32 --seq 4096 --vocab 32000"

START_TEST(command_errors_are_one_line_and_keep_files)
{
    char args[1024], out[300];
    snprintf(out, sizeof out, "%s", at("kept.ini"));
    snprintf(args, sizeof args, "profile transformer --family llama " SHAPE_7B " --out %s", out);
    ck_assert_int_eq(dtsim(args), 0);
    char *before = slurp(out);
    static const struct {
        const char *args, *needle;
    } bad[] = {
        {"--hidden 4096 --heads 32 --seq 4096 --vocab 32000", "--layers missing"},
        {"--layers 32 --hidden 4096 --heads 32 --seq 4096", "--vocab missing"},
        {SHAPE_7B " --ffn 0", "--ffn 0: expected an integer in [1, "},
        {"--hidden 4096 --heads 32 --seq 4096 --vocab 32000 --layers -2",
         "--layers -2: expected an integer in [1, 10000]"},
        /* an option given twice was won silently by the last one */
        {SHAPE_7B " --layers 3", "--layers given twice"},
        {SHAPE_7B " --family gpt --family=llama", "--family given twice"},
        {SHAPE_7B " --bias --no-bias", "--bias and --no-bias both given"},
        {SHAPE_7B " --gelu --gelu", "--gelu given twice"},
        {"--layers 32 --hidden 4096 --heads 3 --seq 4096 --vocab 32000",
         "--heads 3 does not divide --hidden 4096"},
        {SHAPE_7B " --kv-heads 5", "--kv-heads 5 does not divide --heads 32"},
        {"--layers 32 --hidden 4096 --heads 32 --vocab 32000 --positions 2048 --seq 4096",
         "--seq 4096 is longer than the 2048"},
        {SHAPE_7B " --family gpt2", "--family gpt2: expected one of gpt,llama,bert"},
        {SHAPE_7B " --norm batchnorm", "--norm batchnorm: expected one of layernorm,rmsnorm"},
        {SHAPE_7B " --family bert --untied", "--untied: the bert family has no output layer"},
        {SHAPE_7B " --swiglu --dropout 0.1", "unknown option \"--dropout\""},
        {SHAPE_7B " --top-k 2", "--top-k needs --experts"},
        {SHAPE_7B " --experts 8 --top-k 9", "--top-k 9: the experts a token uses, 1 to"},
        {SHAPE_7B " --experts 0 --top-k 1", "--experts 0: expected an integer in [1, "},
        {SHAPE_7B " --name 'a;b'", "--name: \"a;b\" is not a profile name"},
        {"--layers 10000 --hidden 1048576 --heads 1 --seq 16777216 --vocab 16777216",
         "the model is too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "profile transformer %s --out %s", bad[i].args, out);
        ck_assert_msg(dtsim(args) == 2, "%s: exit code not 2", bad[i].args);
        one_line(bad[i].needle);
        char *after = slurp(out);
        ck_assert_msg(!strcmp(before, after), "%s: the earlier file changed", bad[i].args);
        free(after);
    }
    ck_assert_int_eq(dtsim("profile transformer " SHAPE_7B), 2);
    one_line("say where: --out FILE");
    ck_assert_int_eq(dtsim("profile time --device a100 --device h100 gpt2_xl"), 2);
    one_line("--device given twice");
    ck_assert_int_eq(dtsim("profile resnet"), 2);
    one_line("unknown model kind \"resnet\"");
    snprintf(args, sizeof args, "profile transformer " SHAPE_7B " --out %s/no/such/dir.ini", dir);
    ck_assert_int_eq(dtsim(args), 2);
    one_line("cannot write");
    /* no temporary file left behind */
    snprintf(args, sizeof args, "ls %s | grep -c tmp >/dev/null", dir);
    ck_assert_int_ne(system(args), 0);
    free(before);
}
END_TEST

START_TEST(written_profile_runs_for_its_flops)
{
    /* --out - writes what --out FILE writes */
    char args[1024];
    snprintf(args, sizeof args,
             "profile transformer --family llama --layers 2 --hidden 64 "
             "--heads 4 --kv-heads 2 --seq 32 --vocab 1000 --out %s",
             at("tiny.ini"));
    ck_assert_int_eq(dtsim(args), 0);
    char *report = slurp(at("out"));
    ck_assert_msg(strstr(report, "tiny.ini: profile tiny, "), "%s", report);
    free(report);
    /* a file name without .ini is a file all the same */
    snprintf(args, sizeof args,
             "profile transformer --layers 1 --hidden 8 --heads 2 --seq 4 "
             "--vocab 10 --out %s",
             at("plain"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    report = slurp(at("out"));
    ck_assert_msg(strstr(report, "plain: profile plain, "), "%s", report);
    free(report);
    char *file = slurp(at("tiny.ini"));
    ck_assert_int_eq(dtsim("profile transformer --family llama --layers 2 --hidden 64 --heads 4 "
                           "--kv-heads 2 --seq 32 --vocab 1000 --name tiny --out -"),
                     0);
    char *printed = slurp(at("out"));
    ck_assert_str_eq(printed, file);
    free(printed);
    free(file);
    /* a scenario names it; the run is timed at exactly its FLOPs: 3 steps of batch 2 */
    FILE *f = fopen(at("s.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("[run]\nsteps = 3\neval_every = 0\n[model]\narch = profile:tiny.ini\nbatch = 2\n"
          "[cluster]\ndevice_flops = 1Tf\n[strategy]\nkind = single\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "check %s", at("s.ini"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    snprintf(args, sizeof args, "run %s --db %s", at("s.ini"), at("r.db"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(at("r.db"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT sim_time FROM summary", -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    double got = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    double flops = llama_flops(2, 64, 4, 2, 256, 32, 1000); /* ffn: 8 x 64 / 3 up to 256 */
    double want = 3 * 2 * 3 * flops / 1e12;                 /* forward + twice backward */
    ck_assert_msg(fabs(got - want) <= 1e-9 * want, "%.12g s, want %.12g s", got, want);
}
END_TEST

/* The [tensor] section a written profile carries splits as Megatron-LM does: with T = 2
 * a micro-batch all-reduces T x hidden values per sample after the embedding and twice per
 * layer forward (attention output, MLP output), twice per layer and once for the output
 * layer backward (the input gradients of the QKV projection, of the MLP's first one and
 * of lm_head): 2 + 4 L ring all-reduces of b x seq x hidden floats, 2 (T-1) times each
 * over the group. */
START_TEST(written_profile_splits_as_megatron)
{
    char args[1024];
    snprintf(args, sizeof args,
             "profile transformer --layers 2 --hidden 64 --heads 4 --seq 16 "
             "--vocab 128 --out %s",
             at("tp.ini"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    FILE *f = fopen(at("tp-s.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("[run]\nsteps = 3\neval_every = 0\n[model]\narch = profile:tp.ini\nbatch = 4\n"
          "[cluster]\nworkers = 2\ndevice_flops = 1Tf\n[strategy]\nkind = pipeline\n"
          "stages = 1\nmicro_batches = 2\ntensor = 2\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "run %s --db %s", at("tp-s.ini"), at("tp.db"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(at("tp.db"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT total_bytes FROM summary", -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    double got = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    double want = 3.0 * 2 * (2 + 4 * 2) * 2 * (2 - 1) * 2 * 16 * 64 * 4;
    ck_assert_msg(got == want, "%.0f bytes, want %.0f", got, want);
}
END_TEST

/* ---- the compute model by operation and shape ------------------------------------------ */

/* The catalogue's a100-80gb at bf16, as the shape model reads it. */
static const sim_device_profile_t *a100(sim_compute_t *c)
{
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n), *d = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cat[i].name, "a100-80gb"))
            d = &cat[i];
    ck_assert_ptr_nonnull(d);
    scenario_t *sc = calloc(1, sizeof *sc); /* what the model reads of it: the precision */
    sc->precision = SIM_PREC_BF16;
    ck_assert_int_eq(sim_compute_of_device(d, sc, c), 1);
    free(sc);
    return d;
}

/* The sustained bandwidth: the datasheet's x memory_efficiency. */
static double hand_bandwidth(const sim_device_profile_t *d)
{
    return d->value[SIM_DEV_MEMORY_BANDWIDTH] * d->value[SIM_DEV_MEMORY_EFFICIENCY];
}

/* By hand: the roofline of a GEMM in bf16 (2 bytes a value) on d, 128 x 128 tiles in whole
 * waves over its multiprocessors. */
static double hand_gemm(const sim_device_profile_t *d, double m, double n, double k)
{
    double sms = d->value[SIM_DEV_SMS];
    double per_sm = d->value[SIM_DEV_BF16] / sms * d->value[SIM_DEV_GEMM_EFFICIENCY];
    double tm = m < 128 ? m : 128, tn = n < 128 ? n : 128;
    double waves = ceil(ceil(m / tm) * ceil(n / tn) / sms);
    double compute = waves * 2 * tm * tn * k / per_sm;
    double memory = (m * k + k * n + m * n) * 2 / hand_bandwidth(d);
    return compute > memory ? compute : memory;
}

START_TEST(gemm_against_the_roofline)
{
    sim_compute_t c;
    const sim_device_profile_t *d = a100(&c);
    double peak = 312e12, sms = 108, bw = 2039e9 * d->value[SIM_DEV_MEMORY_EFFICIENCY];
    ck_assert_double_eq(d->value[SIM_DEV_SMS], sms);
    ck_assert_double_eq(d->value[SIM_DEV_BF16], peak);
    ck_assert_double_eq(c.bandwidth, bw);
    double eff = d->value[SIM_DEV_GEMM_EFFICIENCY];
    /* small: 4096 x 4096 outputs over k = 64 (an unfused attention score product) is bound
     * by its 16.8 M outputs and 0.5 M inputs moved, not by its 2.1 GFLOP */
    double t = sim_compute_gemm(&c, 4096, 4096, 64);
    double bytes = (4096.0 * 64 + 64.0 * 4096 + 4096.0 * 4096) * 2;
    ck_assert_msg(fabs(t - bytes / bw) <= 1e-12 * t, "%.9g s, want %.9g", t, bytes / bw);
    ck_assert_double_eq_tol(t, hand_gemm(d, 4096, 4096, 64), 1e-12 * t);
    ck_assert(2.0 * 4096 * 4096 * 64 / (peak * eff) < t); /* compute alone would be less */
    /* large: 13,824 x 4,096 is 108 x 32 tiles, 32 whole waves on 108 SMs: exactly the FLOPs
     * at the sustained fraction of the peak */
    t = sim_compute_gemm(&c, 13824, 4096, 8192);
    double want = 2.0 * 13824 * 4096 * 8192 / (peak * eff);
    ck_assert_msg(fabs(t - want) <= 1e-12 * want, "%.9g s, want %.9g", t, want);
    /* quantised: one more column of tiles (16 x 109 = 1,744 tiles, 17 waves where 16 x 108
     * = 1,728 fill 16) costs a whole wave for 0.9% more FLOPs */
    double full = sim_compute_gemm(&c, 2048, 108 * 128, 4096);
    double more = sim_compute_gemm(&c, 2048, 109 * 128, 4096);
    ck_assert_double_eq_tol(full, 16 * 2.0 * 128 * 128 * 4096 / (peak / sms * eff), 1e-12 * full);
    ck_assert_double_eq_tol(more / full, 17.0 / 16, 1e-12);
    ck_assert_double_eq_tol(more, hand_gemm(d, 2048, 109 * 128, 4096), 1e-12 * more);
    /* one row (a pooler's token): its tile is one row high, so the weights moved bound it */
    t = sim_compute_gemm(&c, 1, 4096, 4096);
    want = (4096.0 + 4096.0 * 4096 + 4096) * 2 / bw;
    ck_assert_double_eq_tol(t, want, 1e-12 * want);
    /* memory-bound: elements x 2 bytes at the sustained bandwidth */
    ck_assert_double_eq_tol(sim_compute_memory(&c, 1e9), 2e9 / bw, 1e-12);
    /* attention: its FLOPs at the 16-bit peak x attention_efficiency, or its IO */
    double ae = d->value[SIM_DEV_ATTENTION_EFFICIENCY];
    ck_assert_double_eq_tol(sim_compute_attention(&c, 1e12, 1e6), 1e12 / (peak * ae), 1e-15);
    ck_assert_double_eq_tol(sim_compute_attention(&c, 1e6, 1e9), 2e9 / bw, 1e-15);
}
END_TEST

/* The catalogue's h100 at fp8 with scaling `scaling`, as the shape model reads it. */
static const sim_device_profile_t *h100_fp8(sim_compute_t *c, sim_fp8_scaling_t scaling)
{
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n), *d = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cat[i].name, "h100"))
            d = &cat[i];
    ck_assert_ptr_nonnull(d);
    scenario_t *sc = calloc(1, sizeof *sc);
    sc->precision = SIM_PREC_FP8;
    sc->fp8_scaling = scaling;
    ck_assert_int_eq(sim_compute_of_device(d, sc, c), 1);
    free(sc);
    return d;
}

/* By hand: `groups` GEMMs of m x n x k in one set of waves on the h100 at FP8 and fraction
 * eff, each group's rows in whole 128-row tiles. */
static double hand_grouped(double groups, double m, double n, double k, double eff)
{
    double per_sm = 1978.9e12 / 132 * eff, tn = n < 128 ? n : 128;
    double waves = ceil(groups * ceil(m / 128) * ceil(n / tn) / 132);
    double compute = waves * 2 * 128 * tn * k / per_sm;
    double memory = groups * (m * k + k * n + m * n) * 2 / (3.35e12 * 0.8);
    return compute > memory ? compute : memory;
}

/* fp8: the GEMMs at the FP8 peak x gemm_efficiency (a scale per tensor) or x
 * fp8_block_gemm_efficiency (block scaling: DeepGEMM's 1358 of 1978.9 TFLOP/s x 0.75); the
 * output head and routers (wide) at the BF16 peak x gemm_efficiency */
START_TEST(fp8_scaling_and_wide_gemms)
{
    sim_compute_t t, b;
    const sim_device_profile_t *d = h100_fp8(&t, SIM_FP8_TENSOR);
    h100_fp8(&b, SIM_FP8_BLOCK);
    ck_assert_double_eq(t.gemm_eff, d->value[SIM_DEV_GEMM_EFFICIENCY]);
    ck_assert_double_eq_tol(b.gemm_eff, 1358.0 / 1978.9 * 0.75, 1e-4);
    ck_assert_double_eq(t.wide_peak, 989.4e12);
    ck_assert_double_eq(b.wide_eff, d->value[SIM_DEV_GEMM_EFFICIENCY]);
    /* 13,200 x 4,096 is 132 x 32 tiles: 32 whole waves, the FLOPs at peak x fraction */
    double flops = 2.0 * 16896 * 4096 * 8192;
    ck_assert_double_eq_tol(sim_compute_gemm(&t, 16896, 4096, 8192), flops / (1978.9e12 * 0.60075),
                            1e-12);
    ck_assert_double_eq_tol(sim_compute_gemm(&b, 16896, 4096, 8192), flops / (1978.9e12 * 0.5147),
                            1e-12);
    /* a layer of that shape, then the same marked wide: the BF16 peak at the same fraction */
    sim_profile_layer_t l = {.op = SIM_OP_GEMM,
                             .dim = {16896, 4096, 16896, 0, 0},
                             .forward_flops = flops,
                             .backward_flops = 2 * flops};
    sim_compute_call_t call = {.samples = 1, .T = 1, .sp = 0, .E = 1};
    double fwd, bwd;
    sim_compute_layer(&b, &l, &call, 1e15, &fwd, &bwd);
    ck_assert_double_eq_tol(fwd, flops / (1978.9e12 * 0.5147), 1e-12);
    ck_assert_double_eq_tol(bwd, 2 * flops / (1978.9e12 * 0.5147), 1e-12);
    l.wide = 1;
    sim_compute_layer(&b, &l, &call, 1e15, &fwd, &bwd);
    ck_assert_double_eq_tol(fwd, flops / (989.4e12 * 0.60075), 1e-12);
    ck_assert_double_eq_tol(bwd, 2 * flops / (989.4e12 * 0.60075), 1e-12);
}
END_TEST

/* Routed experts as grouped GEMMs: a member's experts / E experts, each on M x E / experts
 * rows in whole 128-row tiles, all tiles in one set of waves */
START_TEST(routed_experts_grouped_by_hand)
{
    sim_compute_t c;
    h100_fp8(&c, SIM_FP8_TENSOR);
    double eff = 0.60075;
    /* DeepSeek-V3's gate projection: a sequence's 4096 tokens x top-8 = 32,768 rows over
     * 256 experts of 2048 x 7168; with expert = 64 a member holds 4 experts of 8192 rows */
    sim_profile_layer_t l = {
        .op = SIM_OP_GEMM, .dim = {32768, 2048, 7168, 0, 0}, .experts = 256, .top_k = 8};
    double flops = 2.0 * 32768 * 2048 * 7168;
    l.forward_flops = flops;
    l.backward_flops = 2 * flops;
    sim_compute_call_t call = {.samples = 1, .T = 1, .sp = 0, .E = 64};
    double fwd, bwd;
    sim_compute_layer(&c, &l, &call, 1e15, &fwd, &bwd);
    /* 4 x 64 x 16 = 4,096 tiles: 32 waves, as one GEMM of 32,768 rows would take */
    ck_assert_double_eq_tol(fwd, hand_grouped(4, 8192, 2048, 7168, eff), 1e-12);
    ck_assert_double_eq_tol(fwd, 32.0 * 2 * 128 * 128 * 7168 / (1978.9e12 / 132 * eff), 1e-12);
    ck_assert_double_eq_tol(fwd, sim_compute_gemm(&c, 32768, 2048, 7168), 1e-12);
    ck_assert_double_eq_tol(
        bwd, hand_grouped(4, 8192, 7168, 2048, eff) + hand_grouped(4, 7168, 2048, 8192, eff),
        1e-12);
    /* without expert parallelism: all 256 on the device, 128 rows each, the same tiles */
    call.E = 1;
    sim_compute_layer(&c, &l, &call, 1e15, &fwd, &bwd);
    ck_assert_double_eq_tol(fwd, hand_grouped(256, 128, 2048, 7168, eff), 1e-12);
    /* 3,200 tokens: with expert = 16, 16 experts of 1,600 rows, each padded to 13 tiles of
     * 128: 3,328 tiles, 26 waves, where one GEMM of 25,600 rows fills 200 x 16 = 3,200 tiles
     * in 25 */
    l.dim[0] = 25600;
    l.forward_flops = 2.0 * 25600 * 2048 * 7168;
    l.backward_flops = 2 * l.forward_flops;
    call.E = 16;
    sim_compute_layer(&c, &l, &call, 1e15, &fwd, &bwd);
    ck_assert_double_eq_tol(fwd, hand_grouped(16, 1600, 2048, 7168, eff), 1e-12);
    ck_assert_double_eq_tol(fwd / sim_compute_gemm(&c, 25600, 2048, 7168), 26.0 / 25, 1e-12);
    /* all 256 on one device, 100 rows each: the 256 experts' weights read bound it */
    call.E = 1;
    sim_compute_layer(&c, &l, &call, 1e15, &fwd, &bwd);
    double bytes = 256 * (100 * 7168 + 7168.0 * 2048 + 100 * 2048) * 2;
    ck_assert_double_eq_tol(fwd, bytes / (3.35e12 * 0.8), 1e-12);
    /* a few tokens an expert: every expert's weights read, the memory bounds it */
    double m = 8;
    double want = 256 * (m * 7168 + 7168.0 * 2048 + m * 2048) * 2 / (3.35e12 * 0.8);
    ck_assert_double_eq_tol(sim_compute_grouped_gemm(&c, 256, m, 2048, 7168), want, 1e-15);
    ck_assert(sim_compute_gemm(&c, 256 * m, 2048, 7168) < want / 50); /* one weight: 1/256 */
}
END_TEST

/* On loading, the GEMMs fp8 keeps in 16 bits: the last layer (the output head) and a MoE
 * layer's router, nothing else */
START_TEST(loading_marks_head_and_router_wide)
{
    char ini[512], args[1024];
    snprintf(ini, sizeof ini, "%s", at("moe.ini"));
    snprintf(args, sizeof args,
             "profile transformer --family llama --layers 3 --hidden 256 "
             "--heads 4 --ffn 512 --seq 128 --vocab 1000 --experts 8 --top-k 2 "
             "--shared-experts 1 --moe-ffn 128 --dense-layers 1 --out %s",
             ini);
    ck_assert_int_eq(dtsim(args), 0);
    sim_model_profile_t p;
    dt_err_t err = {0};
    ck_assert_int_eq(sim_model_profile_load(&p, ini, &err), DT_OK);
    int wide = 0;
    for (int i = 0; i < p.n_layers; i++) {
        const sim_profile_layer_t *l = &p.layers[i];
        int head = !strcmp(l->name, "lm_head"), router = strstr(l->name, "mlp.router") != NULL;
        ck_assert_msg(l->wide == (head || router), "%s: wide %d", l->name, l->wide);
        wide += l->wide;
    }
    ck_assert_int_eq(wide, 1 + 2); /* the head, a router in each of the 2 MoE layers */
    sim_model_profile_free(&p);
}
END_TEST

/* Multi-head latent attention (--kv-lora-rank): a small model's rows by hand, then
 * DeepSeek-V3's counts against the published 671B and 37B (and the plain-attention profile
 * less the difference that moe_counts_by_hand_and_published works out) */
START_TEST(latent_attention_counts_by_hand_and_published)
{
    const double d = 64, A = 4, T = 16, V = 100, F = 96, Rq = 24, Rkv = 16, n = 8, r = 4, v = 12;
    sim_transformer_t t = shape("llama", 1, (long)d, (long)A, (long)T, (long)V);
    t.ffn = (long)F;
    t.q_lora_rank = (long)Rq;
    t.kv_lora_rank = (long)Rkv;
    t.qk_nope_dim = (long)n;
    t.qk_rope_dim = (long)r;
    t.v_head_dim = (long)v;
    dt_err_t err;
    char *text = generate(&t, &err);
    ck_assert_msg(text, "%s", err.msg);
    sim_model_profile_t p;
    load_text(text, &p);
    /* embedding and head, 3 RMSNorms of d, the latents' 2 norms; q_a, q_b, kv_a, kv_b, o; MLP */
    double attn = d * Rq + Rq * A * (n + r) + d * (Rkv + r) + Rkv * A * (n + v) + A * v * d;
    ck_assert_double_eq((double)p.params, 2 * V * d + 3 * d + Rq + Rkv + attn + 3 * d * F);
    double scores = 2 * T * T * A * (n + r) + 2 * T * T * A * v + 5 * A * T * T;
    ck_assert_double_eq(layer(&p, "model.layers.0.self_attn.scores")->forward_flops, scores);
    ck_assert_double_eq(layer(&p, "model.layers.0.self_attn.kv_b_proj")->forward_flops,
                        2 * T * Rkv * A * (n + v));
    ck_assert_double_eq(layer(&p, "model.layers.0.self_attn.o_proj")->dim[2], A * v);
    ck_assert_double_eq(layer(&p, "model.layers.0.self_attn.scores")->dim[3], (n + r + v) / 2);
    /* the up projections split by columns, their latent's gradient all-reduced */
    ck_assert_int_eq(layer(&p, "model.layers.0.self_attn.q_b_proj")->split, SIM_SPLIT_COLUMN);
    ck_assert_double_eq(layer(&p, "model.layers.0.self_attn.q_b_proj")->reduce, T * Rq);
    ck_assert_double_eq(layer(&p, "model.layers.0.self_attn.kv_b_proj")->reduce, T * Rkv);
    ck_assert_int_eq(layer(&p, "model.layers.0.self_attn.kv_a_proj_with_mqa")->split,
                     SIM_SPLIT_NONE);
    sim_model_profile_free(&p);
    free(text);
    /* without a query latent: q_proj, hidden -> heads x (n + r) */
    t.q_lora_rank = 0;
    text = generate(&t, &err);
    ck_assert_msg(text, "%s", err.msg);
    load_text(text, &p);
    ck_assert_double_eq((double)layer(&p, "model.layers.0.self_attn.q_proj")->params,
                        d * A * (n + r));
    ck_assert_double_eq((double)p.params, 2 * V * d + 3 * d + Rkv + attn - d * Rq -
                                              Rq * A * (n + r) + d * A * (n + r) + 3 * d * F);
    sim_model_profile_free(&p);
    free(text);

    /* DeepSeek-V3: 671B parameters, 37B active (DeepSeek-AI 2024, Table 1 and the
     * Hugging Face config: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
     * v_head_dim 128); 671,026,404,352 by hand below */
    t = shape("llama", 61, 7168, 128, 4096, 129280);
    t.ffn = 18432;
    t.experts = 256;
    t.top_k = 8;
    t.shared_experts = 1;
    t.moe_ffn = 2048;
    t.dense_layers = 3;
    t.q_lora_rank = 1536;
    t.kv_lora_rank = 512;
    t.qk_nope_dim = 128;
    t.qk_rope_dim = 64;
    t.v_head_dim = 128;
    text = generate(&t, &err);
    ck_assert_msg(text, "%s", err.msg);
    load_text(text, &p);
    uint64_t layer_attn = 7168 + 7168ull * 1536 + 1536 + 1536ull * 128 * 192 + 7168ull * 576 + 512 +
                          512ull * 128 * 256 + 16384ull * 7168 + 7168;
    uint64_t moe = 7168ull * 256 + 3ull * 7168 * 2048 * (256 + 1);
    uint64_t want =
        2 * 129280ull * 7168 + 7168 + 61 * layer_attn + 3 * 3ull * 7168 * 18432 + 58 * moe;
    ck_assert_uint_eq(p.params, want);
    ck_assert_uint_eq(p.params, 671026404352ull);
    ck_assert_double_eq_tol((double)p.params / 1e9, 671, 0.05);
    ck_assert_double_eq_tol(sim_model_profile_active_params(&p) / 1e9, 37, 0.6);
    sim_model_profile_free(&p);
    free(text);

    /* the options' errors */
    static const struct {
        const char *family;
        long q, kv, kv_heads;
        const char *needle;
    } bad[] = {
        {"llama", 8, 0, -1, "--q-lora-rank needs --kv-lora-rank"},
        {"gpt", 0, 8, -1, "--kv-lora-rank: multi-head latent attention is a block of the llama"},
        {"llama", 0, 8, 2, "--kv-heads 2 with --kv-lora-rank"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = shape(bad[i].family, 1, 64, 4, 16, 100);
        t.q_lora_rank = bad[i].q;
        t.kv_lora_rank = bad[i].kv;
        t.kv_heads = bad[i].kv_heads;
        ck_assert_ptr_null(generate(&t, &err));
        ck_assert_msg(strstr(err.msg, bad[i].needle), "%s", err.msg);
    }
}
END_TEST

/* The value of "SELECT sim_time FROM summary" in db. */
static double sim_time_of(const char *db_path)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT sim_time FROM summary", -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    double t = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return t;
}

/* One step of batch B of profile FILE on the a100-80gb at bf16, one worker; extra: --set
 * options. */
static double step_time(const char *profile, int batch, const char *extra)
{
    FILE *f = fopen(at("shape-s.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "[run]\nsteps = 1\neval_every = 0\n[model]\narch = profile:%s\nbatch = %d\n"
            "precision = bf16\n[cluster]\ndevice = a100-80gb\n[strategy]\nkind = single\n",
            profile, batch);
    fclose(f);
    char args[1024];
    snprintf(args, sizeof args, "run %s --db %s %s", at("shape-s.ini"), at("shape.db"), extra);
    unlink(at("shape.db"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    return sim_time_of(at("shape.db"));
}

START_TEST(profile_without_shapes_times_flat)
{
    char args[1024];
    snprintf(args, sizeof args,
             "profile transformer --layers 2 --hidden 256 --heads 4 --seq 128 "
             "--vocab 1000 --out %s",
             at("shaped.ini"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    char *text = slurp(at("shaped.ini"));
    char *cut = strstr(text, "\n# layer = what it computes");
    ck_assert_ptr_nonnull(cut);
    cut[1] = '\0';
    FILE *f = fopen(at("flat.ini"), "w");
    fputs(text, f);
    fclose(f);
    free(text);
    sim_model_profile_t p;
    dt_err_t err;
    ck_assert_msg(sim_model_profile_load(&p, at("flat.ini"), &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(p.has_shapes, 0);
    double flops = p.forward_flops + p.backward_flops;
    sim_model_profile_free(&p);
    /* without [shape]: every FLOP at 312 x 0.5 TFLOP/s, as before the model by shape */
    double want = 4 * flops / (312e12 * 0.5);
    double t = step_time("flat.ini", 4, "");
    ck_assert_msg(fabs(t - want) <= 1e-9 * want, "%.12g s, want %.12g", t, want);
    /* with it, the same by cluster.compute_model = flat or cluster.device_efficiency */
    ck_assert_double_eq(step_time("shaped.ini", 4, "--set cluster.compute_model=flat"), t);
    double half = step_time("shaped.ini", 4, "--set cluster.device_efficiency=0.25");
    ck_assert_double_eq_tol(half, 2 * t, 1e-9 * t);
    /* and by shape it differs */
    ck_assert(fabs(step_time("shaped.ini", 4, "") - t) > 1e-3 * t);
    char *out = slurp(at("out"));
    ck_assert_ptr_nonnull(strstr(out, "compute by shape: "));
    free(out);
}
END_TEST

/* A transformer layer written by dtsim profile transformer, timed by a run, against its
 * operations timed by hand: the embeddings and norms by the elements they move, the
 * projections as GEMMs (the backward pass: input and weight gradients) with their fused
 * elementwise work, the attention core as flash attention. */
START_TEST(layer_is_the_sum_of_its_operations)
{
    const double T = 512, d = 1024, A = 16, V = 2048, F = 4 * d, s = 2; /* s: the batch */
    char args[1024];
    snprintf(args, sizeof args,
             "profile transformer --layers 1 --hidden 1024 --heads 16 "
             "--seq 512 --vocab 2048 --out %s",
             at("layer.ini"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    sim_compute_t c;
    const sim_device_profile_t *dev = a100(&c);
    double bw = hand_bandwidth(dev), M = T * s, Td = T * d * s;
    double mem = 2 / bw; /* seconds per element moved */
    double peak_attn = 312e12 * dev->value[SIM_DEV_ATTENTION_EFFICIENCY];
    double want = 0;
    want += (2 + 3) * Td * mem;     /* wte: gather, scatter-add */
    want += (3 + 3) * Td * mem;     /* wpe: added */
    want += 3 * (2 + 3) * Td * mem; /* ln_1, ln_2, ln_f */
    want += hand_gemm(dev, M, 3 * d, d) + hand_gemm(dev, M, d, 3 * d) +
            hand_gemm(dev, d, 3 * d, M); /* c_attn */
    double attn_flops = s * (4 * T * T * d + 5 * A * T * T), io = 4 * T * d * s;
    want += fmax(attn_flops / peak_attn, io * mem) +
            fmax(2 * attn_flops / peak_attn, 2 * io * mem); /* scores */
    for (int k = 0; k < 2; k++) /* attn.c_proj (d x d) and mlp.c_proj (F -> d) */
        want += hand_gemm(dev, M, d, k ? F : d) + hand_gemm(dev, M, k ? F : d, d) +
                hand_gemm(dev, k ? F : d, d, M) + (3 + 2) * Td * mem;
    want += hand_gemm(dev, M, F, d) + hand_gemm(dev, M, d, F) + hand_gemm(dev, d, F, M) +
            (2 + 3) * T * F * s * mem; /* mlp.c_fc and GELU */
    want += hand_gemm(dev, M, V, d) + hand_gemm(dev, M, d, V) + hand_gemm(dev, d, V, M) +
            (2 + 2) * T * V * s * mem; /* lm_head and the loss's softmax */
    double t = step_time("layer.ini", 2, "");
    ck_assert_msg(fabs(t - want) <= 1e-9 * want, "%.12g s, want %.12g by hand", t, want);
    /* dtsim profile time says the same of a call of 2 samples, to its 4 digits */
    snprintf(args, sizeof args, "profile time %s --device a100-80gb --micro-batch 2",
             at("layer.ini"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    char *table = slurp(at("out")), *all = strstr(table, "\nall layers");
    ck_assert_ptr_nonnull(all);
    int layers;
    double gflop, ms;
    ck_assert_int_eq(sscanf(all, "\nall layers %d %lf %lf", &layers, &gflop, &ms), 3);
    ck_assert_int_eq(layers, 11);
    ck_assert_msg(fabs(ms - want * 1e3) <= 1e-3 * ms, "%.6g ms, want %.6g", ms, want * 1e3);
    ck_assert_ptr_nonnull(strstr(table, "\nblock h.0.*"));
    free(table);
    /* its errors: one line, exit code 2 */
    static const struct {
        const char *args, *needle;
    } bad[] = {
        {"", "which device? --device NAME"},
        {"--device tpu", "--device: unknown device \"tpu\""},
        {"--device cpu", "--device cpu: no peak at that precision"},
        {"--device a100 --precision fp8", "--device a100: no peak at that precision"},
        {"--device a100 --tensor 0", "--tensor 0: expected an integer in [1, "},
        {"--device a100 --precision fp16", "--precision: \"fp16\" is not fp32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "profile time %s %s", at("layer.ini"), bad[i].args);
        ck_assert_msg(dtsim(args) == 2, "%s: exit code not 2", bad[i].args);
        one_line(bad[i].needle);
    }
}
END_TEST

/* [shape] lines and device files with the model's figures: errors are FILE:LINE: KEY. */
START_TEST(shape_errors_name_file_line_key)
{
    static const struct {
        const char *shape, *needle;
    } bad[] = {
        {"a = gemm 8 8", ":11: shape.a: \"gemm 8 8\" is not gemm M N K"},
        {"a = conv 1 2 3", ":11: shape.a: \"conv 1 2 3\" is not"},
        {"a = gemm 0 8 8", ":11: shape.a: \"gemm 0 8 8\" is not"},
        {"a = memory 1.5 2", ":11: shape.a: \"memory 1.5 2\" is not"},
        {"c = memory 1 2", ":11: shape.c: no such layer in [backward]"},
        {"a = memory 1 2\na = memory 1 2", ":12: shape.a: layer listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(at("bad.ini"), "w");
        fprintf(f,
                "[profile]\nparams = 3\nforward_flops = 10\n[backward]\nb = 1 10\n"
                "a = 2 0\n[forward]\na = 0 4\nb = 10 4\n[shape]\n%s\n",
                bad[i].shape);
        fclose(f);
        sim_model_profile_t p;
        dt_err_t err;
        ck_assert_int_eq(sim_model_profile_load(&p, at("bad.ini"), &err), DT_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, bad[i].needle), "%s: got %s", bad[i].shape, err.msg);
    }
    /* a device file: sms needs the efficiencies; they need sms */
    FILE *f = fopen(at("gpu.ini"), "w");
    fputs("[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory_bandwidth = 1TBps\nsms = 50\n", f);
    fclose(f);
    sim_device_profile_t dev;
    dt_err_t err;
    ck_assert_int_eq(scenario_device_read(at("gpu.ini"), &dev, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "gpu.ini:1: device.gemm_efficiency: missing (sms at line 5"),
                  "%s", err.msg);
    f = fopen(at("gpu.ini"), "w");
    fputs("[device]\nfp32 = 10Tf\ngemm_efficiency = 0.8\n", f);
    fclose(f);
    ck_assert_int_eq(scenario_device_read(at("gpu.ini"), &dev, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "gpu.ini:3: device.gemm_efficiency: given without sms"), "%s",
                  err.msg);
    f = fopen(at("gpu.ini"), "w");
    fputs("[device]\nfp32 = 10Tf\nsms = 1.5\n", f);
    fclose(f);
    ck_assert_int_eq(scenario_device_read(at("gpu.ini"), &dev, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "gpu.ini:3: device.sms: bad count"), "%s", err.msg);
    /* given whole, the [defaults] fill the attention and memory fractions */
    f = fopen(at("gpu.ini"), "w");
    fputs("[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory_bandwidth = 1TBps\nsms = 50\n"
          "gemm_efficiency = 0.8\n",
          f);
    fclose(f);
    ck_assert_msg(scenario_device_read(at("gpu.ini"), &dev, &err) == DT_OK, "%s", err.msg);
    ck_assert_double_eq(dev.value[SIM_DEV_ATTENTION_EFFICIENCY],
                        scenario_device_defaults()->value[SIM_DEV_ATTENTION_EFFICIENCY]);
}
END_TEST

/* ---- mixture of experts ------------------------------------------------------------------ */

/* A small MoE llama against a hand count: its parameters (every expert), the parameters a
 * token uses (top_k of the routed ones), its FLOPs (top_k routed experts, the shared ones, the
 * router), its [experts] lines; Mixtral 8x7B's and DeepSeek-V3's shapes against their
 * published totals and active counts. */
START_TEST(moe_counts_by_hand_and_published)
{
    const double L = 3, d = 64, A = 4, T = 16, V = 100, F = 96, E = 4, k = 2, S = 1, Fm = 32;
    sim_transformer_t t = shape("llama", (long)L, (long)d, (long)A, (long)T, (long)V);
    t.ffn = (long)F;
    t.experts = (long)E;
    t.top_k = (long)k;
    t.shared_experts = (long)S;
    t.moe_ffn = (long)Fm;
    t.dense_layers = 1;
    dt_err_t err;
    char *text = generate(&t, &err);
    ck_assert_msg(text, "%s", err.msg);
    sim_model_profile_t p;
    load_text(text, &p);
    /* embeddings, per layer two RMSNorms and q, k, v, o; layer 0 a SwiGLU MLP of F, layers
     * 1, 2 a router, E experts of Fm and S shared of Fm; the final norm, the untied head */
    double common = 2 * V * d + L * (2 * d + 4 * d * d) + d + 3 * d * F;
    double moe = 2 * (d * E + 3 * S * d * Fm), routed = 2 * 3 * d * Fm;
    ck_assert_double_eq((double)p.params, common + moe + E * routed);
    ck_assert_double_eq(sim_model_profile_active_params(&p), common + moe + k * routed);
    double fwd = L * (2 * 4 * T * d + 2 * 4 * T * d * d + 4 * T * T * d + 5 * A * T * T) +
                 4 * T * d + 2 * T * d * V + 2 * T * 3 * d * F +
                 2 * (2 * T * d * E + 2 * T * 3 * d * S * Fm) + k * 2 * T * routed;
    ck_assert_double_eq(p.forward_flops, fwd);
    ck_assert_double_eq(p.backward_flops, 2 * fwd); /* the embedding computes nothing */
    ck_assert_int_eq(p.n_layers, 1 + 10 + 2 * 14 + 2);
    const sim_profile_layer_t *g = layer(&p, "model.layers.1.mlp.experts.gate_proj");
    ck_assert_int_eq(g->experts, 4);
    ck_assert_int_eq(g->top_k, 2);
    ck_assert_double_eq(g->a2a, T * k * d); /* the dispatch: each token's k copies */
    ck_assert_double_eq(layer(&p, "model.layers.2.mlp.experts.down_proj")->a2a, 0);
    ck_assert_int_eq(layer(&p, "model.layers.2.mlp.shared_experts.up_proj")->experts, 0);
    ck_assert_int_eq(layer(&p, "model.layers.0.mlp.up_proj")->experts, 0);
    ck_assert_double_eq(layer(&p, "model.layers.2.mlp.shared_experts.down_proj")->cut, T * d);
    sim_model_profile_free(&p);
    free(text);

    /* Mixtral 8x7B (Jiang et al. 2024): 46.7B parameters, 12.9B active; Hugging Face's
     * num_parameters() of mistralai/Mixtral-8x7B-v0.1 is 46,702,792,704 */
    t = shape("llama", 32, 4096, 32, 4096, 32000);
    t.kv_heads = 8;
    t.ffn = 14336;
    t.experts = 8;
    t.top_k = 2;
    text = generate(&t, &err);
    load_text(text, &p);
    ck_assert_uint_eq(p.params, 46702792704u);
    ck_assert_double_eq_tol(sim_model_profile_active_params(&p) / 1e9, 12.9, 0.05);
    sim_model_profile_free(&p);
    free(text);

    /* DeepSeek-V3 (DeepSeek-AI 2024): 671B parameters, 37B active. Without --kv-lora-rank
     * (latent_attention_counts_by_hand_and_published gives it), as plain attention of 128
     * heads its 61 layers hold 205.5M attention weights each instead of MLA's 187.1M (q_a
     * 7168 x 1536, q_b 1536 x 128 x 192, kv_a 7168 x 576, kv_b 512 x 128 x 256, o 16384 x
     * 7168): 1.12B more, here
     * and in the active count */
    t = shape("llama", 61, 7168, 128, 4096, 129280);
    t.ffn = 18432;
    t.experts = 256;
    t.top_k = 8;
    t.shared_experts = 1;
    t.moe_ffn = 2048;
    t.dense_layers = 3;
    text = generate(&t, &err);
    load_text(text, &p);
    double mla =
        61.0 * (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 16384 * 7168);
    double extra = 61.0 * 4 * 7168 * 7168 - mla;
    ck_assert_double_eq_tol(((double)p.params - extra) / 1e9, 671, 0.5);
    ck_assert_double_eq_tol((sim_model_profile_active_params(&p) - extra) / 1e9, 37, 0.6);
    sim_model_profile_free(&p);
    free(text);

    /* the options' errors */
    static const struct {
        long experts, top_k, dense;
        const char *needle;
    } bad[] = {
        {0, 2, 0, "--top-k needs --experts"},
        {0, 0, 1, "--dense-layers needs --experts"},
        {8, 0, 0, "--top-k 0: the experts a token uses, 1 to --experts 8"},
        {8, 9, 0, "--top-k 9: the experts a token uses"},
        {8, 2, 3, "--dense-layers 3 leaves no MoE layer of --layers 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = shape("llama", 3, 64, 4, 16, 100);
        t.experts = bad[i].experts;
        t.top_k = bad[i].top_k;
        t.dense_layers = bad[i].dense;
        ck_assert_ptr_null(generate(&t, &err));
        ck_assert_msg(strstr(err.msg, bad[i].needle), "got %s", err.msg);
    }
}
END_TEST

/* [experts] lines: errors are FILE:LINE: KEY. */
START_TEST(experts_errors_name_file_line_key)
{
    static const struct {
        const char *line, *needle;
    } bad[] = {
        {"a = 4", ":9: experts.a: \"4\" is not ROUTED TOP_K"},
        {"a = 4 5", ":9: experts.a: \"4 5\" is not"},
        {"a = 4 2 0", ":9: experts.a: \"4 2 0\" is not"},
        {"c = 4 2", ":9: experts.c: no such layer in [backward]"},
        {"a = 4 2\na = 4 2", ":10: experts.a: layer listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(at("bad.ini"), "w");
        fprintf(f,
                "[profile]\nparams = 3\nforward_flops = 10\n[backward]\nb = 1 10\n"
                "a = 2 0\n\n[experts]\n%s\n",
                bad[i].line);
        fclose(f);
        sim_model_profile_t p;
        dt_err_t err;
        ck_assert_int_eq(sim_model_profile_load(&p, at("bad.ini"), &err), DT_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, bad[i].needle), "%s: got %s", bad[i].line, err.msg);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("transformer");
    tcase_add_unchecked_fixture(tc, setup, NULL);
    tcase_add_test(tc, gpt2_xl_and_bert_large_as_built_in);
    tcase_add_test(tc, llama2_published_parameter_counts);
    tcase_add_test(tc, options_change_what_they_say);
    tcase_add_test(tc, command_errors_are_one_line_and_keep_files);
    tcase_add_test(tc, written_profile_runs_for_its_flops);
    tcase_add_test(tc, written_profile_splits_as_megatron);
    tcase_add_test(tc, gemm_against_the_roofline);
    tcase_add_test(tc, fp8_scaling_and_wide_gemms);
    tcase_add_test(tc, routed_experts_grouped_by_hand);
    tcase_add_test(tc, loading_marks_head_and_router_wide);
    tcase_add_test(tc, profile_without_shapes_times_flat);
    tcase_add_test(tc, layer_is_the_sum_of_its_operations);
    tcase_add_test(tc, shape_errors_name_file_line_key);
    tcase_add_test(tc, moe_counts_by_hand_and_published);
    tcase_add_test(tc, latent_attention_counts_by_hand_and_published);
    tcase_add_test(tc, experts_errors_name_file_line_key);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return failed ? 1 : 0;
}
