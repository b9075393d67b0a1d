/* dtsim plan's figures of a ranked row (throughput, energy, cost, goodput under failures)
 * and its side-by-side comparison of devices and cluster options (compare.c): several
 * --device values and --option NAME:KEY=VALUE,... each planned in turn (plan.c runs each
 * plan), then one table of each option's best layout. */
#ifndef DTSIM_CLI_PLAN_COMPARE_H
#define DTSIM_CLI_PLAN_COMPARE_H

#include <stddef.h>

/* devices x options a comparison plans at most */
#define CLI_PLAN_MAX_OPTIONS 16
/* scenario keys one --option sets at most */
#define CLI_PLAN_OPTION_KEYS 8

/* The failure model of the goodput columns: dtsim goodput's --mtbf, --ckpt-bandwidth and
 * --restart, with its defaults (scenario/goodput.h: Llama 3's MTBF and storage, a 10 min
 * restart). */
typedef struct cli_plan_goodput {
    double mtbf_device_s, ckpt_bw_device, restart_s;
} cli_plan_goodput_t;

void cli_plan_goodput_defaults(cli_plan_goodput_t *g);
/* One of "mtbf", "ckpt-bandwidth", "restart" (option, without its dashes) from its value
 * into g: 0, or the one-line usage error printed and CLI_EXIT_USAGE. */
int cli_plan_goodput_option(cli_plan_goodput_t *g, const char *option, const char *value);

/* What every row of one plan is worked out from. */
typedef struct cli_plan_basis {
    double flops_per_sample, tokens_per_sample; /* tokens 0: the profile counts none */
    double global_batch, devices;
    double peak_flops; /* the device's at the precision; NAN: unknown */
    double capacity;   /* the device's memory, bytes; NAN: unknown */
    double ckpt_bytes; /* one checkpoint of the model; NAN or 0: unknown (no goodput) */
    double tokens;     /* --tokens; 0: none */
    cli_plan_goodput_t goodput;
} cli_plan_basis_t;

/* One ranked layout's figures, as dtsim plan prints them; NAN where unknown. */
typedef struct cli_plan_row {
    char layout[64];
    char device[64]; /* the device's name as the plan resolved it ("" where unknown) */
    long long run;   /* 0: none (no layout of the option ran) */
    double step_s, samples_s, tokens_s, mem_gb, headroom_gb, tflops_dev, peak_pct, kj_step,
        per_1k_samples, per_m_tokens;
    double days, mwh, dollars; /* to train --tokens without failures */
    long ckpt_steps;           /* Daly's checkpoint interval in steps; 0: unknown */
    double goodput;            /* useful share of the wall time under failures */
    double days_fail, dollars_fail; /* to train --tokens with failures (step_wall_s) */
} cli_plan_row_t;

/* r's figures from a run's step time, samples/s, fullest device's bytes, joules a step and
 * dollars a sample (r->layout and r->run are left as they are). */
void cli_plan_row_compute(const cli_plan_basis_t *b, double step_s, double samples_s,
                          double mem_bytes, double joules, double dollars_per_sample,
                          cli_plan_row_t *r);

/* One option of a comparison: its name (in its runs' names), device and scenario keys. */
typedef struct cli_plan_option {
    char name[64];
    char device[512];
    char sets[CLI_PLAN_OPTION_KEYS][256];
    int n_sets;
} cli_plan_option_t;

/* Plans one option (plan.c). check: only load its scenario as every layout would (no
 * output, nothing written), its error into why (n) with CLI_EXIT_USAGE; otherwise the whole
 * plan, printed, its best row into best (best->run 0 when none ran). Returns the plan's exit
 * code. */
typedef int (*cli_plan_one_fn)(void *ctx, const cli_plan_option_t *opt, int check,
                               cli_plan_row_t *best, char *why, size_t n);

/* dtsim plan with several devices (device_args: each --device value, a comma-separated list)
 * or --option values (option_args): checks them all first (one error line, exit 2, nothing
 * run), plans each device x option with one, then prints the table of their best layouts.
 * tokens: --tokens (0: none), for its columns. Returns the worst exit code. */
int cli_plan_compare(const char *const *device_args, int n_device_args,
                     const char *const *option_args, int n_option_args, double tokens,
                     cli_plan_one_fn one, void *ctx);

#endif
