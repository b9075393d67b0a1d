/* `dtsim goodput`: what failures cost a job of N devices that checkpoints and restarts
 * (scenario/goodput.h): the job's MTBF, a checkpoint's write time, Young's and Daly's
 * intervals, the share of wall time that is useful and where the rest goes, and for a
 * training length its wall time, failures and lost device-hours. --simulate checks the
 * formula against simulated crashes (engine/goodput_sim.h) and prints both. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_goodput.h"
#include "cli_util.h"
#include "goodput.h"
#include "goodput_sim.h"
#include "model_profile.h"
#include "scenario.h"

enum {
    O_DEVICES = 1,
    O_PARAMS,
    O_PROFILE,
    O_CKPT_SIZE,
    O_PRECISION,
    O_MTBF,
    O_BW,
    O_BW_TOTAL,
    O_RESTART,
    O_STEP,
    O_TRAIN,
    O_STEPS,
    O_TOKENS,
    O_STEP_TOKENS,
    O_PRICE,
    O_SIMULATE,
    O_SEED
};

static const cli_option goodput_options[] = {
    {.help = "required:"},
    {.id = O_DEVICES,
     .name = "devices",
     .kind = CLI_VALUE_INT,
     .metavar = "N",
     .help = "devices the job runs on",
     .lo = 1,
     .hi = 1e9},
    {.id = O_PARAMS,
     .name = "params",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "P",
     .help = "model parameters (405e9); or",
     .lo = 1,
     .hi = 1e15},
    {.id = O_PROFILE,
     .name = "profile",
     .kind = CLI_VALUE_TEXT,
     .metavar = "P",
     .help = "a model profile's (built-in name or file); or"},
    {.id = O_CKPT_SIZE,
     .name = "ckpt-size",
     .kind = CLI_VALUE_SIZE,
     .metavar = "S",
     .help = "one checkpoint's size (5.67TB)"},
    {.help = "options:"},
    {.id = O_PRECISION,
     .name = "precision",
     .kind = CLI_VALUE_TEXT,
     .metavar = "P",
     .help =
         "model.precision (default bf16); the optimizer is Adam: a checkpoint holds weights, FP32 "
         "master copy and both moments, 14 bytes a parameter in bf16"},
    {.id = O_MTBF,
     .name = "mtbf",
     .kind = CLI_VALUE_DURATION,
     .metavar = "T",
     .help = "one device's mean time between failures (default 50677h: Llama 3, 419 "
             "interruptions in 54 days on 16,384 GPUs)"},
    {.id = O_BW,
     .name = "ckpt-bandwidth",
     .kind = CLI_VALUE_BANDWIDTH,
     .metavar = "BW",
     .help =
         "checkpoint write rate per device (default 122MBps: Llama 3's storage, 2 TB/s sustained "
         "over 16,384 GPUs)"},
    {.id = O_BW_TOTAL,
     .name = "ckpt-total-bandwidth",
     .kind = CLI_VALUE_BANDWIDTH,
     .metavar = "BW",
     .help = "the whole job's write rate instead (2TBps)"},
    {.id = O_RESTART,
     .name = "restart",
     .kind = CLI_VALUE_DURATION,
     .metavar = "T",
     .help = "a restart after a failure (default 10min, assumed)"},
    {.id = O_STEP,
     .name = "step-time",
     .kind = CLI_VALUE_DURATION,
     .metavar = "T",
     .help = "one training step (intervals in whole steps)"},
    {.id = O_TRAIN,
     .name = "train-time",
     .kind = CLI_VALUE_DURATION,
     .metavar = "T",
     .help = "failure-free training time (54d, 1296h); or"},
    {.id = O_STEPS,
     .name = "steps",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "K",
     .help = "training steps (needs --step-time); or",
     .lo = 1,
     .hi = 1e18},
    {.id = O_TOKENS,
     .name = "tokens",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "X",
     .help = "training tokens (needs --step-time, --step-tokens)",
     .lo = 1,
     .hi = 1e18},
    {.id = O_STEP_TOKENS,
     .name = "step-tokens",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "X",
     .help = "tokens a step (16.8e6)",
     .lo = 1,
     .hi = 1e18},
    {.id = O_PRICE,
     .name = "price",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "USD",
     .help = "dollars per device-hour (the lost dollars)",
     .hi = 1e9},
    {.id = O_SIMULATE,
     .name = "simulate",
     .help = "also simulate the training with crashes drawn at the job's MTBF (SimGrid: "
             "checkpoints and "
             "restarts as events; without a training length, 1000 MTBFs of work or a million "
             "checkpoints, the shorter)"},
    {.id = O_SEED,
     .name = "seed",
     .kind = CLI_VALUE_INT,
     .metavar = "S",
     .help = "the simulated crashes' seed (default 1)",
     .hi = 1e9},
    {0},
};

const cli_spec cli_goodput_spec = {
    .usage = "--devices N (--params P | --profile P | --ckpt-size S)\n[OPTIONS]",
    .about = "What failures cost a training job (sim/docs/planning.md: Goodput: failures and\n"
             "checkpoints): a failure of any of the N devices stops the job, which restarts\n"
             "and goes on from its last checkpoint. Prints the job's mean time between\n"
             "failures (a device's MTBF / N), a checkpoint's write time, the checkpoint\n"
             "interval of Young (sqrt(2 x write x MTBF)) and of Daly 2006 (higher order,\n"
             "the one used, rounded to whole steps with --step-time), the expected goodput\n"
             "(useful time / wall time) with the shares lost to checkpoints, rework and\n"
             "restarts, and with a training length its expected wall time, failures and\n"
             "lost device-hours (and dollars with --price).\n",
    .options = goodput_options,
    .options_title = "",
    .footer = "Times take ns, us, ms, s, min, h and d; rates bps to Tbps and Bps to TBps;\n"
              "sizes B to TB and KiB to TiB.\n"
              "\n"
              "example (Llama 3 405B on 16,384 H100s, 16M tokens a step in 6.22 s):\n"
              "  dtsim goodput --devices 16384 --params 405e9 --step-time 6.22s \\\n"
              "      --train-time 54d\n",
};

/* checkpoints --simulate simulates at most (10 s or so) */
#define SIM_MAX_CKPTS 1e6

typedef struct goodput_opts {
    sim_goodput_in_t in;
    const char *profile, *precision;
    double params, ckpt_size, steps, tokens, step_tokens, price;
    int simulate;
    long seed;
} goodput_opts_t;

static int goodput_opts_parse(goodput_opts_t *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    sim_goodput_defaults(&o->in);
    o->in.devices = 0;
    o->precision = "bf16";
    o->seed = 1;
    int id;
    cli_parser p;
    cli_parse_init(&p, "goodput", &cli_goodput_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        const char *want = NULL;
        switch (id) {
        case O_DEVICES:
            o->in.devices = (double)p.integer;
            break;
        case O_PARAMS:
            o->params = p.number;
            break;
        case O_PROFILE:
            o->profile = p.value;
            break;
        case O_PRECISION:
            o->precision = p.value;
            break;
        case O_CKPT_SIZE:
            o->ckpt_size = p.number;
            if (!(o->ckpt_size > 0))
                want = "a positive size (5.67TB, 80GiB)";
            break;
        case O_MTBF:
            o->in.mtbf_device_s = p.number;
            if (!(p.number > 0))
                want = "a positive time (50677h)";
            break;
        case O_RESTART:
            o->in.restart_s = p.number;
            break;
        case O_STEP:
            o->in.step_s = p.number;
            break;
        case O_TRAIN:
            o->in.train_s = p.number;
            break;
        case O_BW:
        case O_BW_TOTAL:
            if (!(p.number > 0) || !isfinite(p.number))
                want = "a positive rate (122MBps, 1Gbps)";
            *(id == O_BW ? &o->in.ckpt_bw_device : &o->in.ckpt_bw_total) = p.number;
            break;
        case O_STEPS:
            o->steps = p.number;
            break;
        case O_TOKENS:
            o->tokens = p.number;
            break;
        case O_STEP_TOKENS:
            o->step_tokens = p.number;
            break;
        case O_PRICE:
            o->price = p.number;
            break;
        case O_SIMULATE:
            o->simulate = 1;
            break;
        case O_SEED:
            o->seed = p.integer;
            break;
        }
        if (want)
            return cli_usage_error("goodput", "--%s %s: expected %s", p.option->name, p.value,
                                   want);
    }
    if (id < 0)
        return p.status == CLI_EXIT_OK ? -1 : p.status;
    if (p.n_args)
        return cli_usage_error("goodput", "unexpected argument \"%s\"", p.args[0]);
    if (!o->in.devices)
        return cli_usage_error("goodput", "missing --devices N");
    int sizes = (o->params > 0) + (o->profile != NULL) + (o->ckpt_size > 0);
    if (sizes != 1)
        return cli_usage_error("goodput", "%s one of --params, --profile and --ckpt-size",
                               sizes ? "give only" : "missing");
    int lengths = (o->in.train_s > 0) + (o->steps > 0) + (o->tokens > 0);
    if (lengths > 1)
        return cli_usage_error("goodput", "give only one of --train-time, --steps and --tokens");
    if ((o->steps > 0 || o->tokens > 0) && !(o->in.step_s > 0))
        return cli_usage_error("goodput", "%s needs --step-time",
                               o->steps > 0 ? "--steps" : "--tokens");
    if (o->tokens > 0 && !(o->step_tokens > 0))
        return cli_usage_error("goodput", "--tokens needs --step-tokens");
    if (o->step_tokens > 0 && !(o->tokens > 0))
        return cli_usage_error("goodput", "--step-tokens goes with --tokens");
    return 0;
}

/* "6.22 s", "4.1 min", "3.09 h", "58.3 days", "5.78 years": a duration in the unit that
 * reads best. */
static void fmt_time(double s, char *buf, size_t n)
{
    if (s < 120)
        snprintf(buf, n, "%.3g s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.3g min", s / 60);
    else if (s < 3 * 86400)
        snprintf(buf, n, "%.3g h", s / 3600);
    else if (s < 999.5 * 86400)
        snprintf(buf, n, "%.3g days", s / 86400);
    else
        snprintf(buf, n, "%.3g years", s / (365.25 * 86400));
}

/* "1.69 million", "81234": a count or an amount, millions and billions to three figures. */
static void fmt_count(double v, char *buf, size_t n)
{
    if (v >= 1e9)
        snprintf(buf, n, "%.3g billion", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, n, "%.3g million", v / 1e6);
    else
        snprintf(buf, n, "%.0f", v);
}

/* "5.67 TB", "812 GB": bytes in the decimal unit that reads best. */
static void fmt_bytes(double v, char *buf, size_t n)
{
    if (v >= 1e12)
        snprintf(buf, n, "%.3g TB", v / 1e12);
    else
        snprintf(buf, n, "%.3g GB", v / 1e9);
}

int cli_goodput(int argc, char **argv)
{
    goodput_opts_t o;
    int rc = goodput_opts_parse(&o, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    dt_err_t err;
    scenario_t sc;
    scenario_defaults(&sc);
    char set[96];
    snprintf(set, sizeof set, "model.precision=%s", o.precision);
    if (scenario_set(&sc, set, &err) || scenario_set(&sc, "model.optimizer=adam", &err)) {
        /* the key's own message, without the --set it was given as */
        const char *why = strstr(err.msg, "model.precision: ");
        return cli_usage_error("goodput", "--precision %s: %s", o.precision,
                               why ? why + strlen("model.precision: ") : err.msg);
    }
    if (o.profile) {
        sim_model_profile_t prof;
        if (sim_model_profile_load(&prof, o.profile, &err))
            return cli_usage_error("goodput", "--profile %s: %s", o.profile, err.msg);
        o.params = (double)prof.params;
        sim_model_profile_free(&prof);
    }
    o.in.ckpt_bytes = o.ckpt_size > 0 ? o.ckpt_size : sim_goodput_ckpt_bytes(&sc, o.params);
    if (o.steps > 0)
        o.in.train_s = o.steps * o.in.step_s;
    if (o.tokens > 0)
        o.in.train_s = ceil(o.tokens / o.step_tokens) * o.in.step_s;
    sim_goodput_t g;
    if (sim_goodput_compute(&o.in, &g, &err))
        return cli_usage_error("goodput", "%s", err.msg);
    /* the simulation's cost is its checkpoints (about 100,000 a second): 1000 MTBFs of work
     * unless that takes more than a million of them; refused before anything is printed */
    double work =
        o.in.train_s > 0 ? o.in.train_s : fmin(1000 * g.mtbf_s, SIM_MAX_CKPTS * g.interval_s);
    if (o.simulate && work / g.interval_s > SIM_MAX_CKPTS)
        return cli_usage_error("goodput",
                               "--simulate: %.3g checkpoints to simulate, more than %g: give a "
                               "shorter training",
                               ceil(work / g.interval_s), SIM_MAX_CKPTS);

    char a[48], b[48], c[48];
    double N = o.in.devices;
    fmt_time(g.mtbf_s, a, sizeof a);
    printf("%-34s %.0f; a failure every %s (%.0f device-hours each)\n", "devices", N, a,
           o.in.mtbf_device_s / 3600);
    fmt_bytes(o.in.ckpt_bytes, b, sizeof b);
    if (o.params > 0) {
        char count[48];
        fmt_count(o.params, count, sizeof count);
        printf("%-34s %s parameters x %g bytes (%s, Adam) = %s\n", "checkpoint", count,
               o.in.ckpt_bytes / o.params, o.precision, b);
    } else
        printf("%-34s %s\n", "checkpoint", b);
    double bw = o.in.ckpt_bw_total > 0 ? o.in.ckpt_bw_total : o.in.ckpt_bw_device * N;
    fmt_time(g.ckpt_s, a, sizeof a);
    printf("%-34s %s at %.4g GB/s\n", "checkpoint write (delta)", a, bw / 1e9);
    fmt_time(o.in.restart_s, a, sizeof a);
    printf("%-34s %s\n", "restart (R)", a);
    fmt_time(g.young_s, a, sizeof a);
    printf("%-34s %s\n", "interval, Young sqrt(2 delta M)", a);
    fmt_time(g.daly_s, a, sizeof a);
    printf("%-34s %s\n", "interval, Daly 2006", a);
    fmt_time(g.interval_s, a, sizeof a);
    if (g.interval_steps)
        printf("%-34s %s: %ld steps of %.4g s\n", "interval used", a, g.interval_steps,
               o.in.step_s);
    else
        printf("%-34s %s\n", "interval used", a);
    printf("%-34s %.2f%% of wall time\n", "goodput (useful)", 100 * g.goodput);
    printf("%-34s %.2f%%\n", "  lost writing checkpoints", 100 * g.ckpt_share);
    printf("%-34s %.2f%%\n", "  lost to rework after failures", 100 * g.rework_share);
    printf("%-34s %.2f%%\n", "  lost restarting", 100 * g.restart_share);
    if (g.step_wall_s > 0)
        printf("%-34s %.4g s with failures (%.4g s without)\n", "a step in wall time",
               g.step_wall_s, o.in.step_s);
    if (o.in.train_s > 0) {
        fmt_time(o.in.train_s, a, sizeof a);
        fmt_time(g.wall_s, b, sizeof b);
        fmt_time(g.lost_s, c, sizeof c);
        printf("%-34s %s failure-free: %s of wall time, %s lost, %.0f failure%s\n", "training", a,
               b, c, g.failures, round(g.failures) == 1 ? "" : "s");
        fmt_count(g.lost_s / 3600 * N, a, sizeof a);
        printf("%-34s %s device-hours", "lost", a);
        if (o.price > 0) {
            fmt_count(g.lost_s / 3600 * N * o.price, b, sizeof b);
            fmt_count(g.wall_s / 3600 * N * o.price, c, sizeof c);
            printf(" = $%s at $%g per device-hour (of $%s in all)", b, o.price, c);
        }
        printf("\n");
    }
    if (o.simulate) {
        sim_goodput_job_t job = {
            .interval_s = g.interval_s,
            .ckpt_s = g.ckpt_s,
            .restart_s = o.in.restart_s,
            .mtbf_s = g.mtbf_s,
            .work_s = work,
            .seed = (uint64_t)o.seed,
        };
        if (sim_goodput_simulate(&job, 1, argv[0], &err))
            return cli_usage_error("goodput", "--simulate: %s", err.msg);
        fmt_time(job.wall_s, a, sizeof a);
        printf("%-34s %.2f%% of wall time (checkpoints %.2f%%, rework %.2f%%, restarts "
               "%.2f%%): %ld failures in %s, seed %ld\n",
               "simulated goodput", 100 * job.useful_s / job.wall_s,
               100 * job.ckpt_spent_s / job.wall_s, 100 * job.rework_s / job.wall_s,
               100 * job.restart_spent_s / job.wall_s, job.failures, a, o.seed);
    }
    return CLI_EXIT_OK;
}
