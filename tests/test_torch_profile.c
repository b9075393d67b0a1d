/* scenarios/profiles/torch_profile.py against the built-in profiles make_profiles.py wrote by
 * hand from the papers' layouts: torchvision's resnet50, vgg16 and inception_v3 traced on
 * PyTorch's meta device give the same parameters, forward and backward FLOPs, layers (their
 * parameters, FLOPs and outputs, in order) and pipeline cuts. One documented difference: the
 * script's last cut of ResNet-50 and Inception-v3 crosses after the global average pool
 * (2,048 elements), the built-in one before it (7 x 7 and 8 x 8 times as many). A module of
 * one's own (tests/fixtures/torch_module.py) against its layers worked out by hand; GPT-2
 * written in PyTorch against `dtsim profile transformer` of its shape; the
 * script's errors are one line with exit code 2. Skipped (exit 77) without a python3 that
 * imports torch and torchvision (Debian: python3-torch, python3-torchvision). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model_profile.h"
#include "profile_transformer.h"

static char dir[] = "/tmp/dtsim-torch-profile-XXXXXX";
static const char *python;
static char err_text[4096];
#define SCRIPT DTSIM_SOURCE "/scenarios/profiles/torch_profile.py"

/* "DIR/name" in a static buffer of 4 (rotating) */
static const char *at(const char *name)
{
    static char buf[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Runs a shell command, stderr kept in err_text; returns the exit code. */
static int sh(const char *cmd)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>%s/err", cmd, dir);
    int st = system(full);
    FILE *f = fopen(at("err"), "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(err_text, 1, sizeof err_text - 1, f);
    err_text[n] = 0;
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Debian's interpreter (python3-torch installs there), else the first python3 on PATH;
 * NULL when neither imports torch and torchvision. */
static const char *python_with_torch(void)
{
    static const char *const candidates[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import torch, torchvision' >/dev/null 2>&1",
                 candidates[i]);
        if (system(cmd) == 0)
            return candidates[i];
    }
    return NULL;
}

/* Everything that needs torch runs once, in one interpreter (importing it takes seconds),
 * before the tests: each command line through the script's main(), a usage error printed as
 * the script prints it. Its exit code and what it printed on stderr: */
static int all_rc = -1;
static char all_err[4096];

static void profile_all(void)
{
    FILE *f = fopen(at("run_all.py"), "w");
    if (!f)
        return;
    fprintf(f,
            "import sys\nsys.path.insert(0, \"%s/scenarios/profiles\")\n"
            "import torch_profile\n"
            "for args in sys.argv[1:]:\n"
            "    try:\n"
            "        torch_profile.main(args.split())\n"
            "    except torch_profile.UsageError as e:\n"
            "        print(\"torch_profile.py: %%s\" %% e, file=sys.stderr)\n",
            DTSIM_SOURCE);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && %s run_all.py 'resnet50 --out resnet50.ini' 'vgg16 --out vgg16.ini' "
             "'inception_v3 --input 3x299x299 --out inception_v3.ini' "
             "'%s/tests/fixtures/torch_module.py:Net --input 5x16 --out net.ini' "
             "'%s/tests/fixtures/torch_gpt.py:GPT --input 16 --dtype long --out gpt.ini' "
             "'resnet5 --out x.ini' 'resnet50 --input 1x5 --out x.ini' 2>%s/all.err",
             dir, python, DTSIM_SOURCE, DTSIM_SOURCE, dir);
    int st = system(cmd);
    all_rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    f = fopen(at("all.err"), "r");
    if (f) {
        all_err[fread(all_err, 1, sizeof all_err - 1, f)] = 0;
        fclose(f);
    }
}

static void compare(const char *name, double pool)
{
    sim_model_profile_t got, want;
    dt_err_t err;
    char path[512];
    snprintf(path, sizeof path, "%s/%s.ini", dir, name);
    ck_assert_msg(sim_model_profile_load(&got, path, &err) == DT_OK, "%s", err.msg);
    ck_assert(sim_model_profile_load(&want, name, NULL) == DT_OK);
    ck_assert_uint_eq(got.params, want.params);
    ck_assert_double_eq(got.forward_flops, want.forward_flops);
    ck_assert_double_eq(got.backward_flops, want.backward_flops);
    ck_assert_int_eq(got.n_layers, want.n_layers);
    ck_assert(got.has_forward_layers);
    int pooled = 0; /* cuts after the global average pool */
    for (int i = 0; i < got.n_layers; i++) {
        const sim_profile_layer_t *g = &got.layers[i], *w = &want.layers[i];
        ck_assert_msg(g->params == w->params && g->forward_flops == w->forward_flops &&
                          g->backward_flops == w->backward_flops && g->outputs == w->outputs,
                      "%s: layer %s (built in: %s) differs", name, g->name, w->name);
        if (g->cut != w->cut) {
            /* only the last cut, the one before the classifier (layers in backward order) */
            ck_assert_msg(i == 1 && g->cut * pool == w->cut, "%s: cut after %s: %g, built in %g",
                          name, g->name, g->cut, w->cut);
            pooled++;
        }
    }
    ck_assert_int_eq(pooled, pool > 1);
    sim_model_profile_free(&got);
    sim_model_profile_free(&want);
}

START_TEST(torchvision_models_as_built_in)
{
    ck_assert_msg(all_rc == 0, "%s", all_err);
    /* inception_v3's auxiliary classifier runs in training only: left out, and said */
    ck_assert_msg(strstr(all_err, "torch_profile.py: 3326696 parameters the forward pass "
                                  "does not use are left out (AuxLogits."),
                  "%s", all_err);
    compare("resnet50", 7 * 7);
    compare("vgg16", 1);
    compare("inception_v3", 8 * 8);
}
END_TEST

/* The fixture by hand (5 tokens of 16 features): x @ w (16 x 8), LayerNorm(8), h @ h^T,
 * softmax, a @ h, Linear(8, 4) twice, times a parameter of 4. */
START_TEST(own_module_by_hand)
{
    ck_assert_msg(all_rc == 0, "%s", all_err);
    ck_assert_msg(strstr(all_err, "12 parameters the forward pass does not use are left out "
                                  "(unused.weight, unused.bias)"),
                  "%s", all_err);
    sim_model_profile_t p;
    dt_err_t err;
    ck_assert_msg(sim_model_profile_load(&p, at("net.ini"), &err) == DT_OK, "%s", err.msg);
    static const struct {
        const char *name;
        size_t params;
        double flops, outputs, cut;
    } want[] = {
        {"matmul", 16 * 8, 2 * 5 * 8 * 16, 40, 0}, /* no cut before the norm of its output */
        {"norm", 2 * 8, 4 * 40, 40, 40},
        {"matmul#2", 0, 2 * 25 * 8, 25, 0}, /* h is still needed: two tensors cross */
        {"softmax", 0, 5 * 25, 25, 0},
        {"matmul#3", 0, 2 * 40 * 5, 40, 40},
        {"fc", 8 * 4 + 4, 2 * 20 * 8, 20, 0},
        {"fc#2", 0, 2 * 20 * 8, 20, 20}, /* after the sum */
        {"scale", 4, 0, 0, 0},
    };
    int n = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(p.n_layers, n);
    double forward = 0;
    for (int i = 0; i < n; i++) {
        const sim_profile_layer_t *l = &p.layers[n - 1 - i];
        ck_assert_str_eq(l->name, want[i].name);
        ck_assert_uint_eq(l->params, want[i].params);
        ck_assert_double_eq(l->forward_flops, want[i].flops);
        ck_assert_double_eq(l->backward_flops, (i ? 2 : 1) * want[i].flops);
        ck_assert_double_eq(l->outputs, want[i].outputs);
        ck_assert_double_eq(l->cut, want[i].cut);
        forward += want[i].flops;
    }
    ck_assert_uint_eq(p.params, 184);
    ck_assert_double_eq(p.forward_flops, forward);
    sim_model_profile_free(&p);
}
END_TEST

/* GPT-2 written in PyTorch (tests/fixtures/torch_gpt.py) counts what `dtsim profile
 * transformer` counts for its shape: two implementations of the convention. Its layers
 * differ where they should: the attention's products and softmax are rows of their own. */
START_TEST(gpt_in_pytorch_as_dtsim_profile_transformer)
{
    ck_assert_msg(all_rc == 0, "%s", all_err);
    sim_transformer_t t;
    sim_transformer_init(&t);
    t.layers = 2;
    t.hidden = 64;
    t.heads = 4;
    t.seq = 16;
    t.vocab = 100;
    strcpy(t.name, "gpt");
    dt_err_t err;
    ck_assert(sim_transformer_resolve(&t, &err) == DT_OK);
    FILE *f = fopen(at("transformer.ini"), "w");
    ck_assert_ptr_nonnull(f);
    ck_assert(sim_transformer_write(&t, f, &err) == DT_OK);
    fclose(f);
    sim_model_profile_t traced, written;
    ck_assert_msg(sim_model_profile_load(&traced, at("gpt.ini"), &err) == DT_OK, "%s", err.msg);
    ck_assert(sim_model_profile_load(&written, at("transformer.ini"), NULL) == DT_OK);
    ck_assert_uint_eq(traced.params, written.params);
    ck_assert_double_eq(traced.forward_flops, written.forward_flops);
    ck_assert_double_eq(traced.backward_flops, written.backward_flops);
    ck_assert_int_eq(traced.n_layers, written.n_layers + 2 * 2); /* scores: 3 rows, not 1 */
    sim_model_profile_free(&traced);
    sim_model_profile_free(&written);
}
END_TEST

START_TEST(errors_are_one_line)
{
    static const struct {
        const char *args, *needle;
    } bad[] = {
        {"resnet50 --input 3x0 --out x.ini", "--input: \"3x0\" is not a shape"},
        {"resnet50", "the following arguments are required: --out"},
        {"nosuch.py:Net --out x.ini", "nosuch.py: no such file"},
        {"resnet50 --name 'a;b' --out x.ini", "--name: \"a;b\" is not 1 to 63"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cd %s && %s %s %s", dir, python, SCRIPT, bad[i].args);
        ck_assert_msg(sh(cmd) == 2, "%s: exit code not 2", bad[i].args);
        char *nl = strchr(err_text, '\n');
        ck_assert_msg(nl && !nl[1], "%s: expected one error line, got: %s", bad[i].args, err_text);
        ck_assert_msg(strstr(err_text, bad[i].needle), "\"%s\" not in: %s", bad[i].needle,
                      err_text);
    }
    /* those that need torch, in profile_all's interpreter */
    ck_assert_msg(strstr(all_err, "torch_profile.py: unknown model \"resnet5\" (did you mean "
                                  "resnet50"),
                  "%s", all_err);
    ck_assert_msg(strstr(all_err, "torch_profile.py: the forward pass of resnet50 on a 1x5 "
                                  "input failed: RuntimeError: "),
                  "%s", all_err);
    ck_assert_int_ne(access(at("x.ini"), F_OK), 0);
}
END_TEST

int main(void)
{
    python = python_with_torch();
    if (!python) {
        fprintf(stderr, "profile_torch: skipped: no python3 imports torch and torchvision "
                        "(Debian: python3-torch, python3-torchvision)\n");
        return 77;
    }
    if (!mkdtemp(dir)) {
        perror(dir);
        return 1;
    }
    profile_all();
    Suite *s = suite_create("profile_torch");
    TCase *tc = tcase_create("torch_profile.py");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, torchvision_models_as_built_in);
    tcase_add_test(tc, own_module_by_hand);
    tcase_add_test(tc, gpt_in_pytorch_as_dtsim_profile_transformer);
    tcase_add_test(tc, errors_are_one_line);
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
