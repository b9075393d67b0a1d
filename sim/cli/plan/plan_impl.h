/* What dtsim plan's files share (README.md: what each owns): its limits, the options
 * (plan_opts_t), what the ranking needs besides the runs (plan_info_t), a layout
 * (plan_layout_t), a ranked row's figures and the comparison's options (cli_plan_row_t,
 * cli_plan_option_t), and each part's functions. */
#ifndef DTSIM_CLI_PLAN_IMPL_H
#define DTSIM_CLI_PLAN_IMPL_H

#define PLAN_DEFAULT_TOP 10 /* --top: the rows the ranking shows */
/* --memory-margin's default, the larger of the two: what the memory table does not count
 * (the CUDA context, NCCL's buffers, the allocator's fragmentation, ZeRO's gather and
 * reduction buffers) takes a few GB whatever the device, and more on a larger one */
#define PLAN_MARGIN_BYTES 2e9
#define PLAN_MARGIN_SHARE 0.05

#include <stddef.h>
#include <stdint.h>

#include "cli_exec.h"
#include "model_profile.h"
#include "query.h"
#include "scenario.h"

#define PLAN_MAX_SETS 64
#define PLAN_MAX_LAYOUTS 16384
/* the runs of one plan (--max-runs): the scenarios of one call of the sweep are held in
 * memory at once */
#define PLAN_MAX_RUNS 256
/* virtual stages of the interleaved schedule tried: 2, 4, ... up to this (and up to the
 * profile's pieces over the stages) */
#define PLAN_MAX_VIRTUAL 8
/* gradient buckets tried besides one all-reduce per stage: PyTorch DDP's bucket_cap_mb */
#define PLAN_BUCKET_MB 25
/* context parallelism (strategy.context) tried, 2, 4, ... up to this, for sequences of at
 * least PLAN_LONG_SEQUENCE tokens (shorter ones split well enough by tensor and sequence
 * parallelism: Llama 3 used it only at 128K) */
#define PLAN_MAX_CONTEXT 16
#define PLAN_LONG_SEQUENCE 32768
/* values a --tensor or --stages list holds at most */
#define PLAN_MAX_LIST 16
/* --sensitivity-top's default: the ranked layouts --sensitivity re-simulates */
#define PLAN_SENSITIVITY_TOP 3

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
    double days, mwh, dollars;      /* to train --tokens without failures */
    long ckpt_steps;                /* Daly's checkpoint interval in steps; 0: unknown */
    double goodput;                 /* useful share of the wall time under failures */
    double days_fail, dollars_fail; /* to train --tokens with failures (step_wall_s) */
    /* ownership (cli_plan_capex_compute): the devices, energy at the wall (the run's devices
     * and links, the hosts, x PUE) and the cost of owning the cluster; NAN where unknown */
    long devices;
    double site_kj, site_mwh, own_hour, own_per_1k, own_per_m, own_dollars;
} cli_plan_row_t;

/* Owning the devices rather than renting them (--purchase, --amortize, --pue, --host-power,
 * --electricity; row.c: cli_plan_capex_compute). */
typedef struct cli_plan_capex {
    double purchase;   /* $ a device; NAN: none given (no ownership columns) */
    double amortize_s; /* the period the purchase is written off over, seconds */
    double pue;        /* the facility's power over the IT equipment's */
    double host_w;     /* W a device: its share of the server's CPUs, NICs, fans, drives */
    double kwh_price;  /* $ a kWh */
} cli_plan_capex_t;

/* --rank-by: what the options' table ranks by */
typedef enum { PLAN_RANK_TIME, PLAN_RANK_COST, PLAN_RANK_CAPEX, PLAN_RANK_ENERGY } plan_rank_t;

/* One option of a comparison: its name (in its runs' names), device and scenario keys. */
typedef struct cli_plan_option {
    char name[64];
    char device[512];
    char sets[CLI_PLAN_OPTION_KEYS][256];
    int n_sets;
    long devices;     /* devices=N: its own device count; 0: --devices */
    int named_device; /* device=NAME given: not crossed with --device */
    double purchase;  /* purchase=$: its device's price; NAN: --purchase */
} cli_plan_option_t;

/* Plans one option of a comparison (plan.c: plan_compare_one). check: only load its
 * scenario as every layout would (no output, nothing written), its error into why (n) with
 * CLI_EXIT_USAGE; otherwise the whole plan, printed, its best row into best (best->run 0
 * when none ran). Returns the plan's exit code. */
typedef int (*cli_plan_one_fn)(void *ctx, const cli_plan_option_t *opt, int check,
                               cli_plan_row_t *best, char *why, size_t n);

/* dtsim plan's options (options.c: plan_opts_parse). */
typedef struct plan_opts {
    const char *profile, *device, *precision, *db;
    long devices, per_server, global_batch, heads, steps, top, max_runs;
    int jobs, no_run, resume, show, no_prune;
    int verbose;       /* --verbose: every layout's fit listed, as --no-run lists it */
    int breakdown;     /* --breakdown: each ranked layout's step in its parts after the ranking */
    double time_limit; /* wall seconds from the start; 0: none */
    double tokens;     /* --tokens: tokens to train; 0: none */
    const char *time_limit_text, *tokens_text;
    /* --memory-margin: bytes, or a share of the device's memory (margin_share >= 0); text
     * NULL: the default, the larger of PLAN_MARGIN_BYTES and PLAN_MARGIN_SHARE */
    const char *margin_text;
    double margin_bytes, margin_share;
    const char *sweep;    /* --show --sweep */
    const char *planning; /* the first option --show does not take, for its error */
    const char *sets[PLAN_MAX_SETS];
    int n_sets;
    /* side by side (compare.c): each --device value and --option */
    const char *device_args[CLI_PLAN_MAX_OPTIONS], *option_args[CLI_PLAN_MAX_OPTIONS];
    int n_device_args, n_option_args;
    long tensor[PLAN_MAX_LIST], stages[PLAN_MAX_LIST]; /* --tensor, --stages; none: all */
    int n_tensor, n_stages;
    const char *label;          /* an option's name after the profile's in the runs' names */
    cli_plan_goodput_t goodput; /* --mtbf, --ckpt-bandwidth, --restart */
    /* fleets, ownership, sensitivity (compare.c, row.c, sensitivity.c) */
    cli_plan_capex_t capex;  /* --purchase, --amortize, --pue, --host-power, --electricity */
    plan_rank_t rank_by;     /* --rank-by */
    int rank_by_given;       /* --rank-by given: the options' table even for one plan */
    const char *capex_given; /* the first of --amortize, --pue, --host-power, --electricity
                              * given ("--pue"), for the error where nothing shows it */
    double sensitivity;      /* --sensitivity: the share each constant varies by; 0: none */
    long sensitivity_top;    /* the ranked layouts it re-times; 0: PLAN_SENSITIVITY_TOP */
} plan_opts_t;

/* What a plan's ranking needs besides its runs: stored with each run as params plan.*
 * (plan_params), so that --show ranks a stored plan from the database alone. */
typedef struct plan_info {
    char options[8192]; /* the options deciding the layouts and runs, as a command line: what
                         * --resume matches */
    char title[512];    /* "tiny on 4 x a100-80gb, global batch 2, bf16" */
    char precision[16];
    double flops_per_sample, tokens_per_sample; /* tokens 0: the profile counts none */
    double global_batch, devices;
    double peak_flops, capacity; /* the device's at the precision, bytes; NAN: unknown */
    double margin;               /* bytes a layout leaves free to fit (--memory-margin) */
    double ckpt_bytes;           /* a checkpoint of the model (goodput); NAN: unknown */
    long runs;                   /* the plan's fitting layouts: its sweep's indices */
    long pruned, capped;         /* of those, not simulated: their bound exceeds the best
                                  * step; past --max-runs */
    double best_bound;           /* the best simulated step the pruning compared with */
    long unfinished;             /* read back, not stored: layouts whose runs all ended
                                  * unfinished (stopped mid-run, or failed) */
} plan_info_t;

/* One layout: t x p x d devices, each replica's batch b = global / d in b / mbs micro-batches
 * of mbs samples, ZeRO stage 0 to 3 over the d replicas, model.recompute rc, gradient
 * buckets of bucket_mb (PLAN_BUCKET_MB or 0) over the replicas, sequence parallelism sp,
 * the interleaved schedule over v virtual stages (1: 1F1B). */
typedef struct plan_layout {
    long t, p, d, mbs, m, v;
    long e;  /* strategy.expert (a MoE profile's expert groups; 0 or 1: none) */
    long cp; /* context parallelism (strategy.context), 1: none */
    int zero, bucket_mb, sp;
    int rs; /* ZeRO-2, 3: the gradients reduce-scattered after every micro-batch's backward
             * pass, only the shard held (strategy.zero_grad_overlap = no) */
    sim_recompute_t rc;
    long order;       /* its place in the list (enumerated, then ZeRO-2 and 3 after ZeRO-1) */
    double bound;     /* lower bound of its step time, seconds (plan_bound) */
    int fits;         /* the fullest device leaves the margin free (plan_margin) */
    char memory[512]; /* "worker 0 holds 40.5 GB of 80 GB (a100-80gb)", or why dropped */
    int64_t run;      /* its run in the database; 0: none */
    long index;       /* its index in the plan's sweep (the ranking's tie-break) */
    double step_s, samples_s, mem_bytes, joules, dollars_per_sample;
    double parts[RESULTS_PART_COUNT]; /* its step's breakdown, seconds (has_parts) */
    int has_parts;                    /* 0: none stored (a run before schema version 8) */
} plan_layout_t;

/* ---- options.c ---- */
/* argv's options into opts: 0, -1 after --help (printed), or the usage error printed and its
 * exit code. */
int plan_opts_parse(plan_opts_t *opts, int argc, char **argv);

/* ---- layouts.c ---- */
/* The profile's transformer layers (its *.scores layers), or its pipeline pieces. */
long plan_profile_blocks(const sim_model_profile_t *prof);
/* The pieces the profile can be cut into (its [forward] cuts + 1). */
long plan_profile_pieces(const sim_model_profile_t *prof);
/* Every layout of opts's devices and batch into out (at most max), in the order printed. */
long plan_enumerate(const plan_opts_t *opts, long blocks, long pieces, int splits, int attention,
                    long seq, plan_layout_t *out, long max);
/* A MoE profile's expert groups appended after each layout that takes them. */
long plan_expert_more(plan_layout_t *layouts, long n, int experts, long max);
/* Each fitting layout of replicas without ZeRO followed by the same with buckets. */
long plan_buckets(const plan_layout_t *layouts, long n, plan_layout_t *out, long max);
/* qsort's order of layouts by their place in the list. */
int plan_layout_by_order(const void *a, const void *b);
/* model.recompute's name for rc; "" for none. */
const char *plan_recompute_name(sim_recompute_t rc);
/* What a layout adds to tT pP dD mbSxC zZ, each word after sep. */
void plan_layout_more(const plan_layout_t *layout, char sep, char *buf, size_t n);
/* "t2 p1 d2 mb1x1 z0 sp full": the layout's name as the list and the ranking print it. */
void plan_layout_name(const plan_layout_t *layout, char *buf, size_t n);

/* ---- scenario.c ---- */
/* The base scenario written to a new temporary file; its path into path (PATH_MAX). */
dt_status plan_scenario_write(char *path, const plan_opts_t *opts, const char *profile,
                              const char *name, dt_err_t *err);
/* The base scenario at path loaded with the user's --set options, then the layout's. */
dt_status plan_layout_load(scenario_t *sc, const char *path, const plan_opts_t *opts,
                           const plan_layout_t *layout, const char *name, dt_err_t *err);
/* msg without the temporary scenario's "PATH:LINE: " at its start. */
const char *plan_without_path(const char *msg, const char *base);
/* A --set the plan cannot take: 1 with its reason into why (n), else 0. */
int plan_set_refused(const char *set, char *why, size_t n);
/* An error about a key the layout set itself: msg from that key on, else NULL. */
const char *plan_layout_key_error(const char *msg);

/* ---- bound.c ---- */
/* A lower bound of layout's step time in seconds (sc: it loaded); 0 where the device states
 * no speed. */
double plan_bound(const plan_layout_t *layout, const scenario_t *sc,
                  const sim_model_profile_t *prof);

/* ---- fit.c ---- */
/* The bytes a layout must leave free on the device of capacity bytes (--memory-margin; 0
 * where the capacity is unknown). */
double plan_margin(const plan_opts_t *opts, double capacity);
/* The line under the plan's head saying the margin (bytes) a layout leaves free to fit. */
void plan_margin_print(double margin, const plan_opts_t *opts);
/* Each layout's fit and bound; *same: -1 not asked yet whether this process answers as the
 * child's check does, then the answer. */
void plan_fit(plan_layout_t *layouts, long n, const char *base, const plan_opts_t *opts,
              const sim_model_profile_t *prof, const char *name, const char *argv0, int *same);
/* ZeRO stage zero appended for each row of the stage below (overlapped) that does not fit,
 * then its per-micro-batch form (rs) where the overlapped one does not either, and checked. */
long plan_zero_more(plan_layout_t *layouts, long n, int zero, const char *base,
                    const plan_opts_t *opts, const sim_model_profile_t *prof, const char *name,
                    const char *argv0, int *same, long max);

/* ---- params.c ---- */
/* the plan.* params stored with each run (plan_params) */
#define PLAN_PARAMS 12
/* The options that plan the same again on db (what --resume and the PARTIAL line take). */
void plan_again(const plan_info_t *in, const plan_opts_t *opts, char *buf, size_t size);
/* The options that decide a plan's layouts and runs, as a command line. */
void plan_options_text(const plan_opts_t *opts, const char *profile, char *buf, size_t size);
/* The plan.* params of in, into params (PLAN_PARAMS; numbers' text in texts). */
void plan_params(const plan_info_t *in, cli_param_t *params, char texts[][32]);

/* ---- read.c ---- */
/* The sweep id of the newest plan (options NULL) or of the newest plan of those options. */
dt_status plan_find(results_query_t *query, const char *options, char *sweep, size_t size,
                    dt_err_t *err);
/* The finished runs of the plan's sweep into *rows (in->runs of them, by sweep index). */
dt_status plan_rank_read(const char *db, const char *sweep, int read_info, plan_info_t *in,
                         plan_layout_t **rows, long *finished, dt_err_t *err);

/* ---- ranking.c ---- */
/* The list of layouts and their fit, each on its line (each) or counted in one. */
void plan_list_print(const plan_layout_t *layouts, long n, int each);
/* The ranking of the plan's finished runs (rows: in->runs, sorted here). */
void plan_ranking_print(const plan_info_t *in, plan_layout_t *rows, long finished,
                        const plan_opts_t *opts, cli_plan_row_t *best);
/* dtsim plan --show: the stored plan's ranking again, from the database alone. */
int plan_show(const plan_opts_t *opts);

/* ---- row.c ---- */
/* dtsim goodput's defaults into goodput. */
void cli_plan_goodput_defaults(cli_plan_goodput_t *goodput);
/* One of "mtbf", "ckpt-bandwidth", "restart" (option, without its dashes) from its value
 * into goodput: 0, or the one-line usage error printed and CLI_EXIT_USAGE. */
int cli_plan_goodput_option(cli_plan_goodput_t *goodput, const char *option, const char *value);
/* row's figures from a run's step time, samples/s, fullest device's bytes, joules a step and
 * dollars a sample (row->layout and row->run are left as they are). */
void cli_plan_row_compute(const cli_plan_basis_t *basis, double step_s, double samples_s,
                          double mem_bytes, double joules, double dollars_per_sample,
                          cli_plan_row_t *row);
/* The capex defaults (--help and planning.md state them) into capex. */
void cli_plan_capex_defaults(cli_plan_capex_t *capex);
/* The ownership figures of row (its step, energy, throughput already computed) on devices
 * devices at purchase $ each (NAN: none) for tokens (0: none). */
void cli_plan_capex_compute(const cli_plan_capex_t *capex, long devices, double purchase,
                            double tokens, cli_plan_row_t *row);
/* value with printf's format into buf; "-" when it is NAN. */
const char *plan_cell(char *buf, size_t n, const char *format, double value);
/* The columns a ranking's row and the options' table share, from the days (with --tokens)
 * to the goodput and the days and dollars with failures, and the line's end. */
void plan_row_tail(const cli_plan_row_t *row, double tokens);

/* ---- compare.c ---- */
/* dtsim plan with several devices (opts->device_args: each --device value, a comma-separated
 * list) or --option values (opts->option_args, each with its own device and device count where
 * it gives them): checks them all first (one error line, exit 2, nothing run), plans each
 * device x option with one, then prints the table of their best layouts ranked by
 * opts->rank_by. Returns the worst exit code. */
int cli_plan_compare(const plan_opts_t *opts, cli_plan_one_fn one, void *ctx);

/* ---- sensitivity.c ---- */
/* --sensitivity: the top ranked layouts (rows, n of them, by step time; cand: the layouts by
 * sweep index) re-simulated with each constant the timing rests on at each end of the range,
 * one at a time, as a sweep of their own (stopped at deadline, cli_sweep_now's; 0: none); the
 * steps, each layout's range and the pairs that swap printed. Returns 0, or the exit code of
 * what failed or stopped it. */
int plan_sensitivity(const plan_opts_t *opts, const plan_layout_t *rows, long n,
                     const plan_layout_t *cand, const char *base, const char *name,
                     const sim_model_profile_t *prof, const char *argv0, double deadline);

/* ---- simulate.c ---- */
/* The plan's fitting layouts simulated as one sweep, in order of their lower bound. */
int plan_simulate(const plan_opts_t *opts, plan_info_t *in, const plan_layout_t *cand,
                  const plan_layout_t *stored, long n_stored, double t0, double deadline,
                  const char *base, const char *name, const char *argv0, char *sweep, size_t size,
                  int *stopped);

#endif
