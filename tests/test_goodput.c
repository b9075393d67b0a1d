/* Goodput (sim/scenario/goodput.h, sim/engine/goodput_sim.h, dtsim goodput): Young's and
 * Daly's intervals against values computed by hand, Daly's interval as the optimum of the
 * model, the expected goodput against a SimGrid simulation of crashes, checkpoints and
 * restarts (thousands of crashes, within 5%), the simulated goodput lower at half and twice
 * the interval, and the command: its table, --simulate, one error line for bad input, and
 * its bash completion. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "blas.h"
#include "cli_checks.h"
#include "goodput.h"
#include "goodput_sim.h"
#include "strategy.h"

static char dir[] = "/tmp/dtsim-goodput-test-XXXXXX";
static char out_path[256], err_path[256];

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
}

static int dtsim(const char *const *args)
{
    return cli_run(DTSIM_BINARY, out_path, err_path, args);
}

#define NEAR(a, b, rel)                                                                            \
    ck_assert_msg(fabs((double)(a) - (double)(b)) <= (rel)*fabs((double)(b)), "%.10g, want %.10g", \
                  (double)(a), (double)(b))

/* delta = 60 s, M = 1 h by hand: Young sqrt(2 x 60 x 3600) = sqrt(432000) = 657.26707 s;
 * Daly x = sqrt(60 / 7200) = 0.0912871, 657.26707 x (1 + 0.0304290 + 0.0009259) - 60 =
 * 617.87565 s. */
START_TEST(young_and_daly_against_hand_values)
{
    NEAR(sim_goodput_young(60, 3600), 657.26707, 1e-7);
    NEAR(sim_goodput_daly(60, 3600), 617.87565, 1e-7);
    /* a checkpoint of two MTBFs or more: Daly's interval is the MTBF */
    NEAR(sim_goodput_daly(7200, 3600), 3600, 1e-12);
    NEAR(sim_goodput_daly(9000, 3600), 3600, 1e-12);
    /* Daly's complete model at tau = 600 s, R = 300 s: 600 / (3600 e^(1/12) (e^(660/3600) -
     * 1)) = 600 / (3600 x 1.0869040 x 0.2012147) = 0.7620750 */
    NEAR(sim_goodput_fraction(600, 60, 300, 3600), 0.7620750, 1e-6);
    /* no failures to speak of: the goodput is tau / (tau + delta) */
    NEAR(sim_goodput_fraction(600, 60, 300, 3.6e12), 600.0 / 660.0, 1e-6);
}
END_TEST

/* Daly's interval is the optimum of the model to within a hair (his is a series), and both
 * neighbours lose. */
START_TEST(daly_maximises_the_model)
{
    static const double cases[][3] = {{60, 300, 3600}, {2.835, 600, 11135}, {600, 600, 3600}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double d = cases[k][0], R = cases[k][1], M = cases[k][2];
        double t = sim_goodput_daly(d, M), g = sim_goodput_fraction(t, d, R, M);
        double best = 0;
        for (double x = t / 4; x < 4 * t; x *= 1.001)
            best = fmax(best, sim_goodput_fraction(x, d, R, M));
        ck_assert_msg(g > best * (1 - 1e-4), "case %zu: Daly %g, grid %g", k, g, best);
        ck_assert(sim_goodput_fraction(t / 2, d, R, M) < g);
        ck_assert(sim_goodput_fraction(2 * t, d, R, M) < g);
        /* Young's is close, and no better */
        ck_assert(sim_goodput_fraction(sim_goodput_young(d, M), d, R, M) <= g * (1 + 1e-12));
    }
}
END_TEST

/* Llama 3 405B on 16,384 H100s with the defaults: 54 x 24 / 419 = 3.0931 h between
 * failures, 405e9 x 14 bytes / 2 TB/s = 2.835 s a checkpoint, Daly's 249.38 s rounded to 40
 * steps of 6.22 s = 248.8 s, goodput 248.8 / (11135.08 e^(600/11135.08) (e^(251.635/11135.08)
 * - 1)) = 0.926321. */
START_TEST(llama3_with_the_defaults)
{
    sim_strategies_register();
    scenario_t sc;
    scenario_defaults(&sc);
    dt_err_t err;
    ck_assert_int_eq(scenario_set(&sc, "model.precision=bf16", &err), DT_OK);
    ck_assert_int_eq(scenario_set(&sc, "model.optimizer=adam", &err), DT_OK);
    double per_param = sim_goodput_ckpt_bytes(&sc, 1);
    NEAR(per_param, 14, 1e-12);
    sim_goodput_t g;
    ck_assert_int_eq(sim_goodput_layout(16384, 6.22, 405e9, per_param, 54 * 86400.0, &g, &err),
                     DT_OK);
    NEAR(g.mtbf_s / 3600, 54.0 * 24 / 419, 1e-12);
    NEAR(g.ckpt_s, 2.835, 1e-12);
    NEAR(g.daly_s, 249.38218, 1e-6);
    ck_assert_int_eq(g.interval_steps, 40);
    NEAR(g.interval_s, 248.8, 1e-12);
    NEAR(g.goodput, 0.926321, 1e-5);
    NEAR(g.goodput + g.ckpt_share + g.rework_share + g.restart_share, 1, 1e-12);
    NEAR(g.wall_s, 54 * 86400.0 / g.goodput, 1e-12);
    NEAR(g.step_wall_s, 6.22 / g.goodput, 1e-12);
    NEAR(g.failures, g.wall_s / g.mtbf_s, 1e-12);
    /* more than 90%, as the paper reports */
    ck_assert(g.goodput > 0.9);
    /* bad input: one message naming what is wrong, no exit */
    ck_assert_int_eq(sim_goodput_layout(0, 6.22, 405e9, 14, 0, &g, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "devices"), "%s", err.msg);
    ck_assert_int_eq(sim_goodput_layout(8, -1, 405e9, 14, 0, &g, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "step time"), "%s", err.msg);
    ck_assert_int_eq(sim_goodput_layout(8, 1, 0, 14, 0, &g, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "checkpoint size"), "%s", err.msg);
}
END_TEST

/* The simulation against the formula. One SimGrid run holds every job: the Daly interval
 * and its half and double under the same crash times (seed 7), and a Llama-3-like job.
 * Each sees thousands of crashes (hundreds for the Llama one). */
START_TEST(simulated_crashes_agree_with_the_formula)
{
    const double d = 60, R = 300, M = 3600, work = 2000 * M;
    const double tau = sim_goodput_daly(d, M);
    sim_goodput_job_t jobs[] = {
        {.interval_s = tau, .ckpt_s = d, .restart_s = R, .mtbf_s = M, .work_s = work, .seed = 7},
        {.interval_s = tau / 2,
         .ckpt_s = d,
         .restart_s = R,
         .mtbf_s = M,
         .work_s = work,
         .seed = 7},
        {.interval_s = 2 * tau,
         .ckpt_s = d,
         .restart_s = R,
         .mtbf_s = M,
         .work_s = work,
         .seed = 7},
        {.interval_s = 248.8,
         .ckpt_s = 2.835,
         .restart_s = 600,
         .mtbf_s = 11135.08,
         .work_s = 1000 * 11135.08,
         .seed = 8},
    };
    int n = (int)(sizeof jobs / sizeof jobs[0]);
    dt_err_t err;
    ck_assert_int_eq(sim_goodput_simulate(jobs, n, "test_goodput", &err), DT_OK);
    double sim_g[4];
    for (int i = 0; i < n; i++) {
        const sim_goodput_job_t *j = &jobs[i];
        double want = sim_goodput_fraction(j->interval_s, j->ckpt_s, j->restart_s, j->mtbf_s);
        sim_g[i] = j->useful_s / j->wall_s;
        fprintf(stderr,
                "goodput: job %d: tau %.1f s, %ld crashes, %ld checkpoints: simulated %.4f, "
                "formula %.4f (%+.2f%%)\n",
                i, j->interval_s, j->failures, j->checkpoints, sim_g[i], want,
                100 * (sim_g[i] / want - 1));
        ck_assert_int_ge(j->failures, i == 3 ? 1000 : 2500);
        /* every simulated second is useful, a checkpoint, rework or a restart */
        NEAR(j->useful_s + j->ckpt_spent_s + j->rework_s + j->restart_spent_s, j->wall_s, 1e-9);
        NEAR(j->useful_s, j->work_s, 1e-9);
        /* the bound, then the lost share, a sharper test of the same */
        NEAR(sim_g[i], want, 0.05);
        NEAR(1 - sim_g[i], 1 - want, 0.05);
        /* crashes come at rate 1 / M all along */
        NEAR((double)j->failures, j->wall_s / j->mtbf_s, 0.05);
        NEAR(j->checkpoints, ceil(j->work_s / j->interval_s), 1e-12);
    }
    /* the optimum wins against its neighbours in simulation too */
    ck_assert_msg(sim_g[0] > sim_g[1] + 0.01 && sim_g[0] > sim_g[2] + 0.01,
                  "tau %.4f, tau / 2 %.4f, 2 tau %.4f", sim_g[0], sim_g[1], sim_g[2]);
}
END_TEST

START_TEST(simulation_refuses_bad_jobs)
{
    sim_goodput_job_t job = {
        .interval_s = 0, .ckpt_s = 1, .restart_s = 1, .mtbf_s = 1, .work_s = 1};
    dt_err_t err;
    ck_assert_int_eq(sim_goodput_simulate(&job, 1, "test_goodput", &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "job 0"), "%s", err.msg);
}
END_TEST

START_TEST(command_prints_the_table)
{
    ck_assert_int_eq(dtsim((const char *[]){"goodput", "--help", NULL}), 0);
    char *o = cli_slurp(out_path);
    ck_assert_msg(strstr(o, "usage: dtsim goodput") && strstr(o, "--mtbf"), "%s", o);
    free(o);
    ck_assert_int_eq(
        dtsim((const char *[]){"goodput", "--devices", "16384", "--params", "405e9", "--step-time",
                               "6.22s", "--train-time", "54d", "--price", "2", "--simulate", NULL}),
        0);
    o = cli_slurp(out_path);
    static const char *const want[] = {
        "a failure every 3.09 h (50677 device-hours each)",
        "405 billion parameters x 14 bytes (bf16, Adam) = 5.67 TB",
        "2.83 s at 2000 GB/s",
        "4.16 min",
        "4.15 min: 40 steps of 6.22 s",
        "92.63% of wall time",
        "6.715 s with failures (6.22 s without)",
        "54 days failure-free: 58.3 days of wall time",
        "at $2 per device-hour",
        "simulated goodput",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(o, want[i]), "\"%s\" not in:\n%s", want[i], o);
    /* the simulated goodput is the formula's within 5% */
    const char *s = strstr(o, "simulated goodput");
    double simulated;
    ck_assert_int_eq(sscanf(s + strlen("simulated goodput"), " %lf%%", &simulated), 1);
    NEAR(simulated, 92.63, 0.05);
    /* sim/docs/planning.md shows this very output (regenerate its example when it changes) */
    char readme_path[512];
    snprintf(readme_path, sizeof readme_path, "%s/sim/docs/planning.md", DTSIM_SOURCE);
    char *readme = cli_slurp(readme_path);
    ck_assert_msg(strstr(readme, o),
                  "sim/docs/planning.md's goodput example is not the output of "
                  "its command now:\n%s",
                  o);
    free(readme);
    free(o);
    /* the same checkpoint from a size, and a profile's parameters */
    ck_assert_int_eq(dtsim((const char *[]){"goodput", "--devices", "16384", "--ckpt-size",
                                            "5.67TB", "--ckpt-total-bandwidth", "2TBps", NULL}),
                     0);
    o = cli_slurp(out_path);
    ck_assert_msg(strstr(o, "2.83 s at 2000 GB/s"), "%s", o);
    free(o);
    /* 15.6e12 tokens of 2^24 a step: ceil(929,832.5) = 929,833 steps of 6.22 s = 66.9 days,
     * as many steps given as such */
    static const char *const lengths[][6] = {
        {"--tokens", "15.6e12", "--step-tokens", "16777216", NULL},
        {"--steps", "929833", NULL},
    };
    for (int k = 0; k < 2; k++) {
        const char *args[16] = {"goodput", "--devices",   "16384", "--params",
                                "405e9",   "--step-time", "6.22s"};
        for (int i = 0; lengths[k][i]; i++)
            args[7 + i] = lengths[k][i];
        ck_assert_int_eq(dtsim(args), 0);
        o = cli_slurp(out_path);
        ck_assert_msg(strstr(o, "66.9 days failure-free: 72.3 days of wall time"), "%s", o);
        free(o);
    }
    ck_assert_int_eq(
        dtsim((const char *[]){"goodput", "--devices", "8", "--profile", "gpt2_xl", NULL}), 0);
    o = cli_slurp(out_path);
    ck_assert_msg(strstr(o, "billion parameters x 14 bytes"), "%s", o);
    free(o);
}
END_TEST

START_TEST(bad_input_is_one_line_and_exit_2)
{
    static const struct {
        const char *args[10], *needle;
    } cases[] = {
        {{"goodput", "--params", "405e9", NULL}, "missing --devices"},
        {{"goodput", "--devices", "0", "--params", "1e9", NULL}, "--devices 0"},
        {{"goodput", "--devices", "2.5", "--params", "1e9", NULL}, "--devices 2.5"},
        {{"goodput", "--devices", "8", NULL}, "one of --params, --profile and --ckpt-size"},
        {{"goodput", "--devices", "8", "--params", "1e9", "--mtbf", "5 years", NULL}, "--mtbf"},
        {{"goodput", "--devices", "8", "--params", "1e9", "--restart", "-1s", NULL}, "--restart"},
        {{"goodput", "--devices", "8", "--params", "1e9", "--ckpt-bandwidth", "fast", NULL},
         "--ckpt-bandwidth fast"},
        {{"goodput", "--devices", "8", "--params", "1e9", "--steps", "100", NULL},
         "--steps needs --step-time"},
        {{"goodput", "--devices", "8", "--profile", "nope", NULL}, "--profile nope"},
        {{"goodput", "--devices", "8", "--params", "1e9", "--precision", "fp9", NULL},
         "--precision fp9"},
        {{"goodput", "--devices", "8", "--params", "1e9", "--frobnicate", NULL},
         "unknown option \"--frobnicate\""},
        {{"goodput", "--devices", "8", "--params", "1e9", "--seed", NULL},
         "--seed needs an integer"},
        {{"goodput", "--devices", "1", "--params", "1e6", "--train-time", "20000000h", "--simulate",
          NULL},
         "--simulate: 1.11e+07 checkpoints to simulate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(dtsim(cases[i].args) == 2, "case %zu", i);
        cli_one_error_line(err_path, "dtsim goodput: ", cases[i].needle);
        char *o = cli_slurp(out_path);
        ck_assert_msg(!o[0], "case %zu printed: %s", i, o);
        free(o);
    }
}
END_TEST

/* The bash completion offers the command and its options (from its option table). */
START_TEST(completion_offers_goodput)
{
    static const char *const body =
        "source \"$1\" || exit 3\n"
        "COMP_LINE=$2 COMP_POINT=${#2} COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
        "COMP_WORDS=($2) COMP_CWORD=${#COMP_WORDS[@]}\n"
        "_dtsim\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    char script[512], line[1024];
    snprintf(script, sizeof script, "%s/sim/cli/dtsim-completion.bash", DTSIM_SOURCE);
    static const char *const cases[][2] = {
        {"goo", "goodput\n"},
        {"goodput --devices 8 --ckpt-t", "--ckpt-total-bandwidth\n"},
        {"goodput --mtbf 50000h --sim", "--simulate\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(line, sizeof line, "%s %s", DTSIM_BINARY, cases[i][0]);
        ck_assert_int_eq(cli_run("/bin/bash", out_path, err_path,
                                 (const char *[]){"-c", body, "bash", script, line, NULL}),
                         0);
        char *got = cli_slurp(out_path);
        ck_assert_msg(!strcmp(got, cases[i][1]), "dtsim %s<TAB>: got \"%s\", want \"%s\"",
                      cases[i][0], got, cases[i][1]);
        free(got);
    }
}
END_TEST

int main(void)
{
    /* the kernels dtsim would start itself again with (trainer_blas_select), chosen once
     * here: each of the suite's two dozen dtsim processes then starts once, not twice */
    const char *core = trainer_blas_core_for(trainer_cpu_detect(), openblas_get_corename());
    if (core)
        setenv("OPENBLAS_CORETYPE", core, 0);
    Suite *s = suite_create("goodput");
    TCase *tc = tcase_create("goodput");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, young_and_daly_against_hand_values);
    tcase_add_test(tc, daly_maximises_the_model);
    tcase_add_test(tc, llama3_with_the_defaults);
    tcase_add_test(tc, simulated_crashes_agree_with_the_formula);
    tcase_add_test(tc, simulation_refuses_bad_jobs);
    tcase_add_test(tc, command_prints_the_table);
    tcase_add_test(tc, bad_input_is_one_line_and_exit_2);
    tcase_add_test(tc, completion_offers_goodput);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
