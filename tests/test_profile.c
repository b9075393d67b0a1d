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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model_profile.h"
#include "profile_transformer.h"

static char dir[] = "/tmp/dtsim-profile-XXXXXX";
static char err_text[4096];

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(dir)); }

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

static sim_transformer_t shape(const char *family, long layers, long hidden, long heads,
                               long seq, long vocab)
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
static double llama_flops(double L, double d, double A, double K, double F, double T,
                          double V)
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
        {32, 4096, 32, -1, -1, 6738415616},     /* Llama-2 7B: ffn 11008 by the rule */
        {80, 8192, 64, 8, 28672, 68976648192},  /* Llama-2 70B: GQA, ffn multiplier 1.3 */
    };
    for (int i = 0; i < 2; i++) {
        sim_transformer_t t = shape("llama", llama[i].layers, llama[i].hidden, llama[i].heads,
                                    4096, 32000);
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
    ck_assert_uint_eq(n, V * d + T * d + L * (2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) +
                                             (4 * d * d + 4 * d) + (4 * d * d + d)) + 2 * d);
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
        {SHAPE_7B " --ffn 0", "--ffn: \"0\" is not a whole number in [1, "},
        {SHAPE_7B " --layers -2", "--layers: \"-2\" is not a whole number"},
        {SHAPE_7B " --heads 3", "--heads 3 does not divide --hidden 4096"},
        {SHAPE_7B " --kv-heads 5", "--kv-heads 5 does not divide --heads 32"},
        {SHAPE_7B " --positions 2048 --seq 4096", "--seq 4096 is longer than the 2048"},
        {SHAPE_7B " --family gpt2", "--family: unknown family \"gpt2\""},
        {SHAPE_7B " --norm batchnorm", "--norm: \"batchnorm\" is not layernorm or rmsnorm"},
        {SHAPE_7B " --family bert --untied", "--untied: the bert family has no output layer"},
        {SHAPE_7B " --swiglu --dropout 0.1", "unknown option \"--dropout\""},
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
    snprintf(args, sizeof args, "profile transformer --family llama --layers 2 --hidden 64 "
                                "--heads 4 --kv-heads 2 --seq 32 --vocab 1000 --out %s",
             at("tiny.ini"));
    ck_assert_int_eq(dtsim(args), 0);
    char *report = slurp(at("out"));
    ck_assert_msg(strstr(report, "tiny.ini: profile tiny, "), "%s", report);
    free(report);
    /* a file name without .ini is a file all the same */
    snprintf(args, sizeof args, "profile transformer --layers 1 --hidden 8 --heads 2 --seq 4 "
                                "--vocab 10 --out %s", at("plain"));
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
          "[cluster]\ndevice_flops = 1Tf\n[strategy]\nkind = single\n", f);
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
    snprintf(args, sizeof args, "profile transformer --layers 2 --hidden 64 --heads 4 --seq 16 "
                                "--vocab 128 --out %s", at("tp.ini"));
    ck_assert_msg(dtsim(args) == 0, "%s", err_text);
    FILE *f = fopen(at("tp-s.ini"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("[run]\nsteps = 3\neval_every = 0\n[model]\narch = profile:tp.ini\nbatch = 4\n"
          "[cluster]\nworkers = 2\ndevice_flops = 1Tf\n[strategy]\nkind = pipeline\n"
          "stages = 1\nmicro_batches = 2\ntensor = 2\n", f);
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
