/* `dtsim plan`: capacity planning of a timing-only model on N devices. Enumerates the tensor x
 * pipeline x data layouts (strategy.kind = pipeline) of one global batch with their micro-batch
 * sizes, the interleaved schedule's virtual stages, sequence parallelism, recomputation (none,
 * selective, full) and ZeRO stage 0 or 1, drops those that do not fit the device's memory (the
 * check `dtsim check` makes, no simulation), and tries one whose ZeRO-1 does not fit again at
 * ZeRO-2, then ZeRO-3; a fitting one of replicas without ZeRO it tries again with gradient
 * buckets. It simulates the fitting ones as one sweep (`dtsim run`'s machinery: -j children,
 * one database, one sweep id) in order of a lower bound of their step time (their compute as
 * the run charges it and the pipeline's bubble), in batches of -j, and prunes those whose bound
 * exceeds the best step simulated so far: the bound never exceeds the simulated step, so a
 * pruned layout cannot win. It prints them by step time with memory, achieved FLOP/s per
 * device, energy and cost, read back from the database. The scenarios go to temporary files
 * (removed after): a base made of the options, then it with each layout's keys.
 *
 * A plan always answers: on SIGINT or SIGTERM, or when --time-limit passes, it stops its
 * runs (cli_sweep_run_opts) and ranks those that finished, marked PARTIAL. What the ranking
 * needs besides the runs (the options, the profile's FLOPs and tokens per sample, the
 * device's peak and memory) is stored with each run as params plan.*, so that --show ranks
 * a stored plan from the database alone and --resume finds the plan of the same options and
 * simulates only the layouts that have no finished run, under the same sweep id. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"
#include "cli_exec.h"
#include "compare.h"
#include "cli_sweep.h"
#include "cli_util.h"
#include "compute_model.h"
#include "db.h"
#include "goodput.h"
#include "model_profile.h"
#include "profile_memory.h"
#include "query.h"
#include "run.h"
#include "scenario.h"
#include "strategy_def.h"

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

typedef struct plan_opts {
    const char *profile, *device, *precision, *db;
    long devices, per_server, global_batch, heads, steps, top, max_runs;
    int jobs, no_run, resume, show, no_prune;
    double time_limit; /* wall seconds from the start; 0: none */
    double tokens;     /* --tokens: tokens to train; 0: none */
    const char *time_limit_text, *tokens_text;
    const char *sweep;    /* --show --sweep */
    const char *planning; /* the first option --show does not take, for its error */
    const char *sets[PLAN_MAX_SETS];
    int n_sets;
    /* side by side (compare.c): each --device value and --option */
    const char *device_args[CLI_PLAN_MAX_OPTIONS], *option_args[CLI_PLAN_MAX_OPTIONS];
    int n_device_args, n_option_args;
    long tensor[PLAN_MAX_LIST], stages[PLAN_MAX_LIST]; /* --tensor, --stages; none: all */
    int n_tensor, n_stages;
    const char *label;           /* an option's name after the profile's in the runs' names */
    cli_plan_goodput_t goodput;  /* --mtbf, --ckpt-bandwidth, --restart */
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
    double ckpt_bytes;           /* a checkpoint of the model (goodput); NAN: unknown */
    long runs;                   /* the plan's fitting layouts: its sweep's indices */
    long pruned, capped;         /* of those, not simulated: their bound exceeds the best
                                  * step; past --max-runs */
    double best_bound;           /* the best simulated step the pruning compared with */
} plan_info_t;

/* One layout: t x p x d devices, each replica's batch b = global / d in b / mbs micro-batches
 * of mbs samples, ZeRO stage 0 to 3 over the d replicas, model.recompute rc, gradient
 * buckets of bucket_mb (PLAN_BUCKET_MB or 0) over the replicas, sequence parallelism sp,
 * the interleaved schedule over v virtual stages (1: 1F1B). */
typedef struct plan_layout {
    long t, p, d, mbs, m, v;
    long e; /* strategy.expert (a MoE profile's expert groups; 0 or 1: none) */
    long cp; /* context parallelism (strategy.context), 1: none */
    int zero, bucket_mb, sp;
    sim_recompute_t rc;
    long order;       /* its place in the list (enumerated, then ZeRO-2 and 3 after ZeRO-1) */
    double bound;     /* lower bound of its step time, seconds (plan_bound) */
    int fits;         /* the fullest device holds no more than its memory */
    char memory[512]; /* "worker 0 holds 40.5 GB of 80 GB (a100-80gb)", or why dropped */
    int64_t run;      /* its run in the database; 0: none */
    long index;       /* its index in the plan's sweep (the ranking's tie-break) */
    double step_s, samples_s, mem_bytes, joules, dollars_per_sample;
} plan_layout_t;

static void plan_help(void)
{
    printf("usage: dtsim plan --profile P --device D --devices N --global-batch B [OPTIONS]\n"
           "       dtsim plan --profile P --device D[,D...] [--option NAME:KEY=VALUE,...]...\n"
           "                  --devices N --global-batch B [OPTIONS]\n"
           "       dtsim plan --show [--db PATH] [--sweep ID] [--top K] [--tokens N]\n"
           "\n"
           "Capacity planning of a timing-only model (sim/docs/planning.md: Planning a layout):\n"
        "enumerates the tensor x pipeline x data layouts of N devices for one global\n"
        "batch, each with micro-batches of 1, 2 or 4 samples, the 1F1B or the\n"
        "interleaved schedule (virtual stages 2, 4, 8), sequence parallelism or not\n"
        "(tensor > 1), no, selective or full recomputation, and ZeRO stage 0 or 1\n"
        "(a MoE profile: also expert groups of 2, 4, ... replicas without ZeRO);\n"
        "drops those that do not fit the device's memory, tries those of ZeRO-1 again\n"
        "with ZeRO-2, then 3, and those of replicas without ZeRO that fit with\n"
        "gradient buckets too; simulates the fitting ones as one sweep\n"
        "(strategy.kind = pipeline) in order of a lower bound of their step time\n"
        "(the compute seconds of the busiest stage as the run charges them, times\n"
        "1 + the bubble (stages - 1) / (virtual stages x micro-batches); no\n"
        "communication), -j at a time, and prunes those whose bound exceeds the best\n"
        "step simulated so far (they cannot win; --no-prune runs them all);\n"
        "prints them by step time with the fullest device's memory,\n"
        "achieved TFLOP/s per device and its share of the device's peak, memory\n"
        "headroom, tokens/s, energy, cost, and the goodput under failures: Daly's\n"
        "checkpoint interval in steps (ckpt/steps) and the useful share of wall time\n"
        "(dtsim goodput's model: any device's failure stops the job, which restarts\n"
        "from its last checkpoint).\n"
        "\n"
        "Side by side: several devices (--device h100,h200, or --device repeated) or\n"
        "cluster options (--option) make one plan for each device x option, each its\n"
        "own sweep with the option's name in its runs' names (plan-PROFILE-NAME-...),\n"
        "then one table of each option's best layout: s/step, tokens/s, TFLOP/s per\n"
        "device, kJ/step, $/M tokens, with --tokens the days, MWh and $ to train\n"
        "them, and the goodput columns. Every device and option is checked before\n"
        "any plan starts.\n"
        "\n"
        "It always answers: on Ctrl-C (SIGINT) or SIGTERM, or when --time-limit\n"
        "passes, it stops its runs and ranks those that finished, marked PARTIAL (k of\n"
        "n simulated); --resume with the same options and --db simulates the rest.\n"
        "\n"
        "required:\n"
        "  --profile P         model profile: a built-in name or a file (dtsim profile\n"
        "                      transformer writes one)\n"
        "  --device D          cluster.device (dtsim devices lists them); D,D,... or\n"
        "                      --device again: the devices side by side\n"
        "  --devices N         devices in all\n"
        "  --global-batch B    samples per step over all replicas\n"
        "options:\n"
        "  --precision P       model.precision (default bf16); the optimizer is Adam\n"
        "  --per-server S      devices per server (default 8): multi-rack platform, a\n"
        "                      rack per server, 2400 Gbit/s inside, 1600 Gbit/s\n"
        "                      uplinks; a tensor group stays inside a server\n"
        "  --heads A           attention heads: tensor must divide A (default: not\n"
        "                      checked)\n"
        "  --tensor T[,T...]   only these tensor sizes (1, 2, 4, 8; default all)\n"
        "  --stages P[,P...]   only these pipeline stage counts (1 to 64; default\n"
        "                      all)\n"
        "  --set KEY=VALUE     any scenario key for every layout\n"
        "                      (cluster.price_per_device_hour=4, ...); tensor\n"
        "                      all-reduces are timed in closed form\n"
        "                      (strategy.tensor_comm=formula; =messages simulates\n"
        "                      each ring step), one member of a tensor group\n"
        "                      simulated for all where it fills a server\n"
        "                      (strategy.tensor_members=one; =all: every member);\n"
        "                      the replicas' collectives in closed form\n"
        "                      (strategy.dp_comm=formula, within 0.5%% of messages;\n"
        "                      =messages) and replica 0 simulated for all where\n"
        "                      the racks allow it, exactly (strategy.data_members=one;\n"
        "                      =all: every replica)\n"
        "  --option NAME:KEY=VALUE[,KEY=VALUE...]\n"
        "  --fabric NAME:KEY=VALUE[,KEY=VALUE...]\n"
        "                      a cluster option side by side with the others (with\n"
        "                      each --device; the two are the same). KEY: bandwidth\n"
        "                      (cluster.bandwidth, inside a server), uplink\n"
        "                      (cluster.uplink_bandwidth), latency, uplink_latency,\n"
        "                      platform, price (cluster.price_per_device_hour),\n"
        "                      port_price (cluster.price_per_port_hour: $ per network\n"
        "                      port-hour), or any scenario key SECTION.KEY. NAME:\n"
        "                      letters, digits, _ . -\n"
        "  --mtbf T            one device's mean time between failures for the goodput\n"
        "                      (default 50677h: Llama 3, 419 interruptions in 54 days\n"
        "                      on 16,384 GPUs; 2h, 30d)\n"
        "  --ckpt-bandwidth BW checkpoint write rate per device (default 122MBps:\n"
        "                      Llama 3's storage, 2 TB/s over 16,384 GPUs)\n"
        "  --restart T         a restart after a failure (default 10min, assumed)\n"
        "  --steps K           simulated steps per layout (default 1)\n"
        "  -j, --jobs J        layouts checked and simulated at once (default 1)\n"
        "  --db PATH           results database (default " DEFAULT_DB ")\n"
        "  --top K             layouts printed (default 10)\n"
        "  --max-runs M        layouts simulated at most, in order of their lower bound\n"
        "                      (default and at most %d)\n"
        "  --no-prune          simulate every fitting layout (up to --max-runs), however\n"
        "                      far its bound is above the best step\n"
        "  --no-run            list the layouts and their fit; simulate nothing\n"
        "  --time-limit T      wall time (120s, 10min, 2h) after which no layout starts\n"
        "                      and the running ones stop: the ranking is PARTIAL\n"
        "  --resume            continue the plan of the same options stored in --db:\n"
        "                      simulate only the layouts without a finished run\n"
        "                      (all of them when there is none), then rank them all\n"
        "  --tokens N          also the days, MWh and dollars to train N tokens at each\n"
        "                      layout's pace (300e9, 300B, 1T: k, M, B or G, T for\n"
        "                      10^3 to 10^12); the profile must count tokens per sample;\n"
        "                      days+fail and $+fail: the same with failures (a step's\n"
        "                      expected wall time: s/step / goodput)\n"
        "  --show              rank the plan stored in --db again, from the database\n"
        "                      alone (no profile): the newest plan, or --sweep ID\n"
        "  --sweep ID          with --show: the plan's sweep id (--show takes --tokens,\n"
        "                      --top, --mtbf, --ckpt-bandwidth, --restart too)\n"
        "  -h, --help          this text\n"
        "\n"
        "tensor is 1, 2, 4 or 8 (dividing N); pipeline stages 1 to 64, at most the\n"
        "profile's transformer layers (its *.scores layers; its pipeline pieces when\n"
        "it has none), which they need not divide (the pipeline cuts them where the\n"
        "largest stage is smallest); data = N / (tensor x stages x context) must\n"
        "divide B. Context parallelism 2, 4, 8, 16 (strategy.context) is tried for\n"
        "profiles with attention shapes and 32768 tokens a sample or more. A fitting\n"
        "layout of replicas without ZeRO runs again with gradient buckets of 25 MB\n"
        "(PyTorch DDP's default; strategy.bucket_mb) all-reduced during the last\n"
        "backward pass instead of one all-reduce per stage after it; ZeRO reduces\n"
        "unbucketed.\n"
        "The interleaved schedule needs stages > 1, micro-batches a multiple of the\n"
        "stages, and stages x virtual stages at most the profile's pieces. A layout\n"
        "is named tT pP dD mbSIZExCOUNT zZERO, then b25 with buckets, cpC with\n"
        "context groups of C, sp with sequence parallelism, vV interleaved over V\n"
        "virtual stages, then selective or full when it recomputes.\n"
        "\n"
        "exit code: 0 a plan ranked whole, or PARTIAL because --time-limit passed;\n"
        "1 a run failed; 2 bad input (side by side: also an option where no layout\n"
        "fits, the other options still planned); 130 (128 + SIGINT) or 143 (SIGTERM)\n"
        "when stopped by that signal, after the PARTIAL ranking. Progress goes to\n"
        "stderr: a line on a terminal, else \"plan: 3/8 done, 12 s, about 20 s left\"\n"
        "after each run (done of what may still run, the plan's elapsed time, its\n"
        "checks included, and the time left at its runs' pace).\n"
        "\n"
        "example (GPT-3 175B, Narayanan et al. 2021):\n"
           "  dtsim profile transformer --layers 96 --hidden 12288 --heads 96 --seq 2048 \\\n"
           "      --vocab 51200 --out gpt3.ini\n"
           "  dtsim plan --profile gpt3.ini --device a100-80gb --devices 1024 --heads 96 \\\n"
           "      --global-batch 1536 --no-run\n"
           "\n"
           "example (Llama 2 7B on 16 H100s or H200s, 400 or 100 Gbit/s uplinks):\n"
           "  dtsim profile transformer --family llama --layers 32 --hidden 4096 \\\n"
           "      --heads 32 --seq 4096 --vocab 32000 --ffn 11008 --out llama2-7b.ini\n"
           "  dtsim plan --profile llama2-7b.ini --device h100,h200 --devices 16 \\\n"
           "      --heads 32 --global-batch 64 --set cluster.price_per_device_hour=4 \\\n"
           "      --option 400g:uplink=400Gbps,port_price=0.1 \\\n"
           "      --option 100g:uplink=100Gbps,port_price=0.03 --tokens 2T -j 2\n",
           PLAN_MAX_RUNS);
}

/* The entry of longs whose value is c. */
static int at_of(const struct option *longs, int c)
{
    int i = 0;
    while (longs[i].name && longs[i].val != c)
        i++;
    return i;
}

/* "300e9", "300B", "1.5T", "2T": a count of tokens (k 10^3, M 10^6, B or G 10^9, T 10^12);
 * 0 when it is one above 0, -1 otherwise. */
static int parse_tokens(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno)
        return -1;
    static const char suffixes[] = "kMBGT";
    static const double scale[] = {1e3, 1e6, 1e9, 1e9, 1e12};
    if (*end) {
        const char *at = strchr(suffixes, *end);
        if (!at || end[1])
            return -1;
        v *= scale[at - suffixes];
    }
    if (!isfinite(v) || !(v >= 1))
        return -1;
    *out = v;
    return 0;
}

/* "8" or "4,8": up to PLAN_MAX_LIST integers in [1, hi] into v (*n of them, increasing),
 * each once; -1 otherwise. */
static int parse_list(const char *text, long hi, long *v, int *n)
{
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        long x;
        if (*n == PLAN_MAX_LIST || cli_parse_long(w, 1, hi, &x))
            return -1;
        for (int i = 0; i < *n; i++)
            if (v[i] == x)
                return -1;
        int at = (*n)++; /* in increasing order, as the plan enumerates */
        for (; at > 0 && v[at - 1] > x; at--)
            v[at] = v[at - 1];
        v[at] = x;
    }
    return *n ? 0 : -1;
}

static int powers_of_two(const long *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] & (v[i] - 1))
            return 0;
    return 1;
}

static int plan_opts_parse(plan_opts_t *o, int argc, char **argv)
{
    static const struct option longs[] = {
        {"profile", required_argument, 0, 'p'},
        {"device", required_argument, 0, 'D'},
        {"devices", required_argument, 0, 'n'},
        {"global-batch", required_argument, 0, 'b'},
        {"precision", required_argument, 0, 'P'},
        {"per-server", required_argument, 0, 'S'},
        {"heads", required_argument, 0, 'a'},
        {"set", required_argument, 0, 's'},
        {"steps", required_argument, 0, 'k'},
        {"jobs", required_argument, 0, 'j'},
        {"db", required_argument, 0, 'd'},
        {"top", required_argument, 0, 't'},
        {"max-runs", required_argument, 0, 'm'},
        {"no-prune", no_argument, 0, 'X'},
        {"no-run", no_argument, 0, 'N'},
        {"time-limit", required_argument, 0, 'T'},
        {"resume", no_argument, 0, 'R'},
        {"tokens", required_argument, 0, 'o'},
        {"show", no_argument, 0, 'W'},
        {"sweep", required_argument, 0, 'w'},
        {"option", required_argument, 0, 'O'},
        {"fabric", required_argument, 0, 'O'},
        {"mtbf", required_argument, 0, 'M'},
        {"ckpt-bandwidth", required_argument, 0, 'B'},
        {"restart", required_argument, 0, 'r'},
        {"tensor", required_argument, 0, 'e'},
        {"stages", required_argument, 0, 'g'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->precision = "bf16";
    o->db = DEFAULT_DB;
    o->per_server = 8;
    o->steps = 1;
    o->jobs = 1;
    o->top = 10;
    o->max_runs = PLAN_MAX_RUNS;
    cli_plan_goodput_defaults(&o->goodput);
    int c, at = -1;
    long v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:", longs, &at)) != -1) {
        const char *name = argv[optind - 1]; /* the option itself where it takes no value */
        char named[32];
        snprintf(named, sizeof named, "--%s", c == 'j' ? "jobs" : at >= 0 ? longs[at].name : "");
        at = -1;
        /* what --show does not take: the options of a plan to make */
        if (!o->planning && c != 'd' && c != 't' && c != 'o' && c != 'W' && c != 'w' &&
            c != 'M' && c != 'B' && c != 'r' && c != 'h' && c != ':' && c != '?')
            o->planning = longs[at_of(longs, c)].name;
        switch (c) {
        case 'p':
            o->profile = optarg;
            break;
        case 'D':
            if (o->n_device_args == CLI_PLAN_MAX_OPTIONS)
                return cli_usage_error("plan", "more than %d --device options",
                                       CLI_PLAN_MAX_OPTIONS);
            o->device = o->device_args[o->n_device_args++] = optarg;
            break;
        case 'O':
            if (o->n_option_args == CLI_PLAN_MAX_OPTIONS)
                return cli_usage_error("plan", "more than %d --option options",
                                       CLI_PLAN_MAX_OPTIONS);
            o->option_args[o->n_option_args++] = optarg;
            break;
        case 'M':
        case 'B':
        case 'r':
            if (cli_plan_goodput_option(&o->goodput, named + 2, optarg))
                return CLI_EXIT_USAGE;
            break;
        case 'P':
            o->precision = optarg;
            break;
        case 'e':
        case 'g':
            if (c == 'e' ? parse_list(optarg, 8, o->tensor, &o->n_tensor) ||
                               !powers_of_two(o->tensor, o->n_tensor)
                         : parse_list(optarg, 64, o->stages, &o->n_stages))
                return cli_usage_error("plan", "%s %s: expected %s", named, optarg,
                                       c == 'e' ? "tensor sizes of 1, 2, 4 or 8 (8, 4,8)"
                                                : "stage counts in [1, 64] (16, 8,16)");
            break;
        case 'N':
            o->no_run = 1;
            break;
        case 'X':
            o->no_prune = 1;
            break;
        case 'R':
            o->resume = 1;
            break;
        case 'W':
            o->show = 1;
            break;
        case 'w':
            o->sweep = optarg;
            break;
        case 'T': {
            dt_err_t e;
            o->time_limit_text = optarg;
            if (scenario_parse_time(optarg, &o->time_limit, &e) || !(o->time_limit > 0))
                return cli_usage_error("plan", "--time-limit %s: expected a wall time above 0 "
                                               "with a unit (120s, 10min, 2h)", optarg);
            break;
        }
        case 'o':
            o->tokens_text = optarg;
            if (parse_tokens(optarg, &o->tokens))
                return cli_usage_error("plan", "--tokens %s: expected a count of tokens above 0 "
                                               "(300e9, 300B, 1T)", optarg);
            break;
        case 'd':
            if (!optarg[0])
                return cli_usage_error("plan", "--db needs a path");
            o->db = optarg;
            break;
        case 's':
            if (o->n_sets == PLAN_MAX_SETS)
                return cli_usage_error("plan", "more than %d --set options", PLAN_MAX_SETS);
            o->sets[o->n_sets++] = optarg;
            break;
        case 'n':
        case 'b':
        case 'S':
        case 'a':
        case 'k':
        case 'j':
        case 't':
        case 'm': {
            long hi = c == 'j' ? CLI_SWEEP_MAX_JOBS : c == 'm' ? PLAN_MAX_RUNS : 1000000000L;
            if (cli_parse_long(optarg, 1, hi, &v))
                return cli_usage_error("plan", "%s %s: expected an integer in [1, %ld]", named,
                                       optarg, hi);
            long *dst = c == 'n'   ? &o->devices
                        : c == 'b' ? &o->global_batch
                        : c == 'S' ? &o->per_server
                        : c == 'a' ? &o->heads
                        : c == 'k' ? &o->steps
                        : c == 't' ? &o->top
                                   : &o->max_runs;
            if (c == 'j')
                o->jobs = (int)v;
            else
                *dst = v;
            break;
        }
        case 'h':
            plan_help();
            return -1;
        case ':':
            return cli_usage_error("plan", "%s needs a value", name);
        default:
            return cli_usage_error("plan", "unknown option \"%s\"", name);
        }
    }
    if (optind < argc)
        return cli_usage_error("plan", "unexpected argument \"%s\"", argv[optind]);
    if (o->show) {
        if (o->planning)
            return cli_usage_error("plan", "--show ranks a stored plan: --%s does not go with "
                                           "it (--db, --sweep, --top, --tokens, --mtbf, "
                                           "--ckpt-bandwidth, --restart do)",
                                   o->planning);
        return 0;
    }
    if (o->sweep)
        return cli_usage_error("plan", "--sweep %s goes with --show", o->sweep);
    if (o->resume && o->no_run)
        return cli_usage_error("plan", "--resume simulates: --no-run does not go with it");
    if (!o->profile || !o->device || !o->devices || !o->global_batch)
        return cli_usage_error("plan", "missing %s",
                               !o->profile   ? "--profile P"
                               : !o->device  ? "--device D"
                               : !o->devices ? "--devices N"
                                             : "--global-batch B");
    if (o->devices > o->per_server && o->devices % o->per_server)
        return cli_usage_error("plan",
                               "--devices %ld is not a whole number of servers of %ld "
                               "(--per-server)",
                               o->devices, o->per_server);
    return 0;
}

/* Pipeline stages must divide this: the profile's transformer layers (its attention cores,
 * layers named *.scores), or its pipeline pieces when it has none. */
static long profile_blocks(const sim_model_profile_t *prof)
{
    long blocks = 0, pieces = 1;
    for (int i = 0; i < prof->n_layers; i++) {
        const char *name = prof->layers[i].name;
        size_t len = strlen(name);
        blocks += len >= 7 && !strcmp(name + len - 7, ".scores");
        pieces += prof->layers[i].cut > 0;
    }
    return blocks ? blocks : pieces;
}

/* The pieces the profile can be cut into (its [forward] cuts + 1): the interleaved schedule
 * needs a piece for each of its stages x virtual stages chunks. */
static long profile_pieces(const sim_model_profile_t *prof)
{
    long pieces = 1;
    for (int i = 0; i < prof->n_layers; i++)
        pieces += prof->layers[i].cut > 0;
    return pieces;
}

/* Every layout of o's devices and batch, in the order printed: tensor, then stages, from
 * small to large, then micro-batch size, virtual stages (1 first: 1F1B), sequence
 * parallelism (off first), recomputation (none, selective, full) and ZeRO (0, then 1 with
 * replicas; plan_zero_more adds 2 and 3). Tensor 1, 2, 4, 8 and stages 1 to 64, or those of
 * --tensor and --stages. Stages need not divide the layers: the pipeline cuts them where
 * the largest stage is smallest (Llama 3 405B ran 126 layers in 16 stages). Selective only
 * with attention cores, sequence parallelism only with tensor > 1, where it changes
 * something; Megatron-LM turns it on with every tensor split, but off it is what a layout
 * without it costs, so both run. Returns how many went to out. */
static long plan_enumerate(const plan_opts_t *o, long blocks, long pieces, int splits,
                           int attention, long seq, plan_layout_t *out, long max)
{
    static const long all_tensors[] = {1, 2, 4, 8}, sizes[] = {1, 2, 4};
    const long *tensors = o->n_tensor ? o->tensor : all_tensors;
    int n_tensors = o->n_tensor ? o->n_tensor : 4;
    long n = 0;
    for (int ti = 0; ti < n_tensors; ti++) {
        long t = tensors[ti];
        if (t > o->per_server || o->devices % t || (o->heads && o->heads % t) || (t > 1 && !splits))
            continue;
        for (int pi = 0; pi < (o->n_stages ? o->n_stages : 64); pi++)
        for (long cp = 1; cp <= (seq >= PLAN_LONG_SEQUENCE ? PLAN_MAX_CONTEXT : 1); cp *= 2) {
            long p = o->n_stages ? o->stages[pi] : pi + 1;
            if (p > blocks || (o->devices / t) % p || (o->devices / t / p) % cp ||
                seq % (2 * cp))
                continue;
            long d = o->devices / (t * p * cp);
            if (o->global_batch % d)
                continue;
            long b = o->global_batch / d;
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                long mbs = sizes[si], m = b / mbs;
                if (b % mbs || m > 4096)
                    continue;
                for (long v = 1; v <= PLAN_MAX_VIRTUAL; v *= 2) {
                    /* the schedule's own rules (strategy/pipeline/check.c): 2 or more stages, micro-batches
                     * S at a time, a piece of the profile for every chunk */
                    if (v > 1 && (p < 2 || m % p || p * v > pieces))
                        continue;
                    for (int sp = 0; sp <= (t > 1); sp++)
                        for (int rc = SIM_RECOMPUTE_NONE; rc <= SIM_RECOMPUTE_FULL; rc++) {
                            if (rc == SIM_RECOMPUTE_SELECTIVE && !attention)
                                continue;
                            for (int zero = 0; zero <= (d * cp > 1); zero++) {
                                if (n == max)
                                    return n;
                                out[n] = (plan_layout_t){.t = t, .p = p, .d = d, .cp = cp,
                                                         .mbs = mbs,
                                                         .m = m, .v = v, .sp = sp,
                                                         .rc = (sim_recompute_t)rc,
                                                         .zero = zero, .order = 16 * n};
                                n++;
                            }
                        }
                }
            }
        }
    }
    return n;
}

static const char *const rc_names[] = {"", "selective", "full"}; /* sim_recompute_t */

/* What a layout adds to tT pP dD mbSxC zZ, each word after sep: "b25", "sp", "v2", the
 * recomputation. */
static void layout_more(const plan_layout_t *l, char sep, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    if (l->bucket_mb)
        k += (size_t)snprintf(buf + k, n - k, "%cb%d", sep, l->bucket_mb);
    if (l->cp > 1 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%ccp%ld", sep, l->cp);
    if (l->sp && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%csp", sep);
    if (l->v > 1 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%cv%ld", sep, l->v);
    if (l->e > 1 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%ce%ld", sep, l->e);
    if (l->rc && k < n)
        snprintf(buf + k, n - k, "%c%s", sep, rc_names[l->rc]);
}

static void layout_name(const plan_layout_t *l, char *buf, size_t n)
{
    char more[40]; /* " b25 cp16 sp v8 e4096 selective" at most */
    layout_more(l, ' ', more, sizeof more);
    snprintf(buf, n, "t%ld p%ld d%ld mb%ldx%ld z%d%s", l->t, l->p, l->d, l->mbs, l->m, l->zero,
             more);
}

/* The base scenario: every layout's keys but the layout's own. */
static void write_scenario(FILE *f, const plan_opts_t *o, const char *profile, const char *name)
{
    long per_server = o->devices < o->per_server ? o->devices : o->per_server;
    fprintf(f,
            "[run]\nname = %s\nsteps = %ld\neval_every = 0\ndb = %s\n"
            "[model]\narch = profile:%s\nprecision = %s\noptimizer = adam\n"
            "[cluster]\nplatform = multi-rack\nracks = %ld\nworkers = %ld\ndevice = %s\n"
            "bandwidth = 2400Gbps\nuplink_bandwidth = 1600Gbps\nlatency = 2us\n"
            "uplink_latency = 2us\nnetwork_model = CM02\n"
            "[strategy]\nkind = pipeline\nalgorithm = ring\npipeline_schedule = 1f1b\n"
            "tensor_comm = formula\ntensor_members = one\ndp_comm = formula\n"
            "data_members = one\n",
            name, o->steps, o->db, profile, o->precision, o->devices / per_server, o->devices,
            o->device);
}

/* Writes a scenario to a new temporary file; its path into path (PATH_MAX). */
static dt_status write_temp(char *path, const plan_opts_t *o, const char *profile, const char *name,
                            dt_err_t *err)
{
    const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    snprintf(path, PATH_MAX, "%s/dtsim-plan-XXXXXX.ini", dir);
    int fd = mkstemps(path, 4);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return dt_err_input(err, "cannot write a scenario in %s: %s", dir, strerror(errno));
    write_scenario(f, o, profile, name);
    if (fclose(f) != 0)
        return dt_err_input(err, "cannot write %s: %s", path, strerror(errno));
    return DT_OK;
}

/* Loads the base scenario at path with the user's --set options, then the layout's, and
 * names the run after the profile (name) and the layout. */
static dt_status load_layout(scenario_t *sc, const char *path, const plan_opts_t *o,
                             const plan_layout_t *l, const char *name, dt_err_t *err)
{
    char keys[12][SCENARIO_STR], more[64];
    const char *sets[PLAN_MAX_SETS + 14];
    for (int i = 0; i < o->n_sets; i++)
        sets[i] = o->sets[i];
    snprintf(keys[0], sizeof keys[0], "strategy.tensor=%ld", l->t);
    snprintf(keys[1], sizeof keys[1], "strategy.stages=%ld", l->p);
    snprintf(keys[2], sizeof keys[2], "strategy.data_parallel=%ld", l->d);
    snprintf(keys[3], sizeof keys[3], "model.batch=%ld", l->m * l->mbs);
    snprintf(keys[4], sizeof keys[4], "strategy.micro_batches=%ld", l->m);
    layout_more(l, '-', more, sizeof more);
    snprintf(keys[5], sizeof keys[5], "run.name=%.200s-t%ldp%ldd%ld-mb%ldx%ld-z%d%s", name, l->t,
             l->p, l->d, l->mbs, l->m, l->zero, more);
    snprintf(keys[6], sizeof keys[6], "strategy.zero_stage=%d", l->zero ? l->zero : 1);
    snprintf(keys[7], sizeof keys[7], "model.recompute=%s", l->rc ? rc_names[l->rc] : "none");
    int n = o->n_sets;
    for (int i = 0; i < 6; i++)
        sets[n++] = keys[i];
    if (l->zero) {
        sets[n++] = "strategy.shard_optimizer=yes";
        sets[n++] = keys[6];
    }
    if (l->rc)
        sets[n++] = keys[7];
    if (l->bucket_mb) {
        snprintf(keys[8], sizeof keys[8], "strategy.bucket_mb=%d", l->bucket_mb);
        sets[n++] = keys[8];
    }
    if (l->sp)
        sets[n++] = "strategy.sequence_parallel=yes";
    if (l->cp > 1) {
        snprintf(keys[11], sizeof keys[11], "strategy.context=%ld", l->cp);
        sets[n++] = keys[11];
    }
    if (l->v > 1) {
        sets[n++] = "strategy.pipeline_schedule=interleaved";
        snprintf(keys[9], sizeof keys[9], "strategy.virtual_stages=%ld", l->v);
        sets[n++] = keys[9];
    }
    if (l->e > 1) {
        snprintf(keys[10], sizeof keys[10], "strategy.expert=%ld", l->e);
        sets[n++] = keys[10];
    }
    return scenario_load(sc, path, sets, n, err);
}

/* msg without the temporary scenario's "PATH:LINE: " at its start: the user never saw it. */
static const char *without_path(const char *msg, const char *base)
{
    if (strncmp(msg, base, strlen(base)))
        return msg;
    msg += strlen(base);
    return msg + strspn(msg, ": 0123456789");
}

/* A lower bound of l's step time in seconds, without simulating (sc: l loaded): the compute
 * of its busiest device, which no communication shortens. Each layer's seconds as the run
 * charges them (timed by shape, cluster.compute_model, a tensor group member's share; else
 * its FLOPs at the device's sustained speed, at most 1/tensor of them split), forward and
 * backward, the forward again where l recomputes it; the replica's batch over the stages
 * (the busiest stage holds at least the mean); times the pipeline's bubble, 1 + (S - 1) /
 * (V M) for S stages, V virtual stages and M micro-batches (the first micro-batch's forward
 * and the last one's backward cross the other stages while a stage waits). It assumes the
 * stages as even as the simulator cuts them; the plan reports any simulated step below its
 * bound. 0 where the device states no speed: then nothing is pruned. */
static double plan_bound(const plan_layout_t *l, const scenario_t *sc,
                         const sim_model_profile_t *prof)
{
    double speed = sc->device_flops;
    if (!(speed > 0))
        return 0;
    sim_compute_t cm;
    sim_compute_call_t call = sim_compute_call_of(sc);
    int shape = sim_compute_by_shape(sc, prof, &cm);
    double member = 0; /* a tensor group member's seconds per sample */
    for (int i = 0; i < prof->n_layers; i++) {
        const sim_profile_layer_t *x = &prof->layers[i];
        double fwd, bwd;
        if (shape) {
            sim_compute_layer(&cm, x, &call, speed, &fwd, &bwd);
            fwd /= call.samples;
            bwd /= call.samples;
        } else {
            fwd = x->forward_flops / ((double)l->t * speed);
            bwd = x->backward_flops / ((double)l->t * speed);
        }
        size_t len = strlen(x->name); /* selective recomputes the attention cores */
        int again = l->rc == SIM_RECOMPUTE_FULL ||
                    (l->rc == SIM_RECOMPUTE_SELECTIVE && len >= 7 &&
                     !strcmp(x->name + len - 7, ".scores"));
        member += fwd + bwd + (again ? fwd : 0);
    }
    /* a context group's member computes 1/cp of each micro-batch (timed by shape, a call of
     * its 1/cp of the samples) */
    return member * (double)(l->m * l->mbs) / (double)l->p / (double)(l->cp > 1 ? l->cp : 1) *
           (1 + (double)(l->p - 1) / (double)(l->v * l->m));
}

/* A layout's memory against the device's as `dtsim check` finds it, in this process: the
 * pipeline's memory slot, which needs the layout (sc loaded with it) and the profile, not
 * the platform or SimGrid, asked for one host of each stage (the first of its tensor
 * group: the members of a stage hold the same, and the check names the first fullest
 * host), then the check's own line or error (sim_memory_line, sim_memory_verdict). The
 * child's check (cli_exec_check) meets the rest too, the platform and fault targets, which
 * every layout of a plan shares: plan_fit asks it once and compares (plan_fit_same). */
static dt_status plan_memory(const scenario_t *sc, const sim_model_profile_t *prof,
                             char *memory, size_t n, dt_err_t *err)
{
    sim_run_t *run = dt_calloc(1, sizeof *run);
    run->sc = sc;
    run->timing_only = 1;
    /* the layers as the run charges them (timed by shape: the FLOPs that take the shape
     * model's time), for the pipeline cuts them by these, and the cut sets the memory */
    size_t layers = sizeof *prof->layers * (size_t)prof->n_layers;
    run->profile = *prof;
    run->profile.layers = dt_malloc(layers ? layers : 1);
    memcpy(run->profile.layers, prof->layers, layers);
    sim_compute_charge_run(&run->profile, sc);
    run->n_params = prof->params;
    run->value_bytes = scenario_value_bytes(sc);
    /* the hosts as the pipeline counts them: its context groups among the replicas */
    run->n_workers = (int)(scenario_own(sc, "stages")->l * scenario_own(sc, "data_parallel")->l *
                           scenario_own(sc, "tensor")->l * scenario_own(sc, "context")->l);
    sim_node_t node, best;
    int have = 0;
    for (long s = 0; s < scenario_own(sc, "stages")->l; s++) {
        memset(&node, 0, sizeof node);
        node.rank = (int)(s * scenario_own(sc, "tensor")->l);
        node.role = "worker";
        sim_node_memory(run, &node);
        double total = node.mem.params + node.mem.grads + node.mem.optimizer +
                       (isnan(node.mem.activations) ? 0 : node.mem.activations);
        double top = have ? best.mem.params + best.mem.grads + best.mem.optimizer +
                                (isnan(best.mem.activations) ? 0 : best.mem.activations)
                          : 0;
        if (!have || total > top) /* the first fullest, as the check takes it */
            best = node;
        have = 1;
    }
    free(run->profile.layers);
    free(run);
    char over[512];
    dt_status st = sim_memory_verdict(sc, &best.mem, best.role, best.rank, over, sizeof over,
                                      err);
    if (st == DT_OK)
        sim_memory_line(sc, &best.mem, best.role, best.rank, memory, n);
    return st;
}

/* The check's answer: into l->fits, and l->memory says how full or what does not fit. */
static const char *layout_key_error(const char *msg);

static void fit_answer(plan_layout_t *l, dt_status st, const char *memory, const dt_err_t *err,
                       const char *base)
{
    l->fits = st == DT_OK;
    if (l->fits) {
        snprintf(l->memory, sizeof l->memory, "%s", memory);
        return;
    }
    /* "cluster.device: does not fit: ...; set run.allow_oversubscribed_memory = yes to
     * time it anyway": the plan says what does not fit, and drops it */
    const char *why = without_path(err->msg, base);
    if (!strncmp(why, "cluster.device: ", 16))
        why += 16;
    if (layout_key_error(why)) /* the layout's own key: no --set of the user's */
        why = layout_key_error(why);
    snprintf(l->memory, sizeof l->memory, "%s", why);
    char *hint = strstr(l->memory, "; set run.allow_oversubscribed_memory");
    if (hint)
        *hint = '\0';
}

/* A layout's check under way in a child (cli_exec.h), or the error its scenario gave when
 * it did not load. */
typedef struct fit_check {
    cli_exec_check_t dry;
    dt_err_t err;
    int loaded;
} fit_check_t;

/* Starts the check of a layout's memory in a child, as `dtsim check` makes it. sc: a
 * scenario's room, free again when this returns. */
static void fit_start(plan_layout_t *l, scenario_t *sc, const char *base, const plan_opts_t *o,
                      const sim_model_profile_t *prof, const char *name, const char *argv0,
                      fit_check_t *c)
{
    c->err.msg[0] = '\0';
    c->loaded = load_layout(sc, base, o, l, name, &c->err) == DT_OK;
    if (c->loaded) {
        l->bound = plan_bound(l, sc, prof);
        cli_exec_check_start(sc, argv0, &c->dry);
    }
}

static void fit_finish(plan_layout_t *l, fit_check_t *c, const char *base)
{
    char memory[512] = "";
    dt_status st = DT_ERR_INPUT;
    if (c->loaded)
        st = cli_exec_check_finish(&c->dry, memory, sizeof memory, &c->err);
    fit_answer(l, st, memory, &c->err, base);
}

/* The layouts' fit in this process (plan_memory), each loaded once for it and its bound.
 * sc: a scenario's room. */
static void fit_here(plan_layout_t *l, long n, scenario_t *sc, const char *base,
                     const plan_opts_t *o, const sim_model_profile_t *prof, const char *name)
{
    for (long i = 0; i < n; i++) {
        dt_err_t err = {""};
        char memory[512] = "";
        dt_status st = load_layout(sc, base, o, &l[i], name, &err);
        if (st == DT_OK) {
            l[i].bound = plan_bound(&l[i], sc, prof);
            st = plan_memory(sc, prof, memory, sizeof memory, &err);
        }
        fit_answer(&l[i], st, memory, &err, base);
    }
}

/* 1 when the first loadable layout of l (n) gets the same answer in this process as from
 * the child's check, which meets the platform and fault targets too: then those are sound
 * for every layout (they share them) and the rest is checked here. */
static int plan_fit_same(plan_layout_t *l, long n, scenario_t *sc, const char *base,
                         const plan_opts_t *o, const sim_model_profile_t *prof,
                         const char *name, const char *argv0)
{
    for (long i = 0; i < n; i++) {
        fit_check_t c;
        fit_start(&l[i], sc, base, o, prof, name, argv0, &c);
        if (!c.loaded)
            continue; /* its keys' own error: the same either way */
        fit_finish(&l[i], &c, base);
        plan_layout_t here = l[i];
        fit_here(&here, 1, sc, base, o, prof, name);
        return here.fits == l[i].fits && !strcmp(here.memory, l[i].memory);
    }
    return 1;
}

/* Each layout's fit: in this process where the first one's answer equals its child's
 * (plan_fit_same; once a plan, plan_fit asks), else each in a child, o->jobs at once.
 * *same: -1 not asked yet, then plan_fit_same's answer. */
static void plan_fit(plan_layout_t *l, long n, const char *base, const plan_opts_t *o,
                     const sim_model_profile_t *prof, const char *name, const char *argv0,
                     int *same)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    if (*same < 0 && n > 0)
        *same = plan_fit_same(l, n, sc, base, o, prof, name, argv0);
    if (*same > 0) {
        fit_here(l, n, sc, base, o, prof, name);
        free(sc);
        return;
    }
    int slots = o->jobs > 1 ? o->jobs : 1;
    fit_check_t *c = dt_malloc(sizeof *c * (size_t)slots);
    for (long i = 0; i < n + slots; i++) {
        if (i >= slots && i - slots < n) /* the oldest first: answers in the listed order */
            fit_finish(&l[i - slots], &c[(i - slots) % slots], base);
        if (i < n)
            fit_start(&l[i], sc, base, o, prof, name, argv0, &c[i % slots]);
    }
    free(c);
    free(sc);
}

/* ZeRO-2 over the replicas where ZeRO-1 does not fit, then ZeRO-3 where ZeRO-2 does not: a
 * stage more only adds messages (at best, one micro-batch, ZeRO-2 ties), so it is tried only
 * where the one below does not fit. Appends to l (n rows, fitted; room for max) a row of
 * stage z for each row of stage z - 1 that does not fit, checks them, and returns the rows
 * there are then. */
static long plan_zero_more(plan_layout_t *l, long n, int z, const char *base,
                           const plan_opts_t *o, const sim_model_profile_t *prof,
                           const char *name, const char *argv0, int *same, long max)
{
    long k = n;
    for (long i = 0; i < n && k < max; i++)
        if (l[i].zero == z - 1 && l[i].d * l[i].cp > 1 && !l[i].fits) {
            l[k] = l[i];
            l[k].zero = z;
            l[k++].order = l[i].order + 1; /* right after the row it retries */
        }
    plan_fit(l + n, k - n, base, o, prof, name, argv0, same);
    return k;
}

/* A MoE profile's expert parallelism (strategy/pipeline/experts.c: expert groups of E replicas, E dividing
 * the replicas and the routed experts, no ZeRO): appends to l (n rows, not yet fitted;
 * room for max) a row of each E = 2, 4, ... for each row with replicas and without ZeRO,
 * right after it, and returns the rows there are then. */
static long plan_expert_more(plan_layout_t *l, long n, int experts, long max)
{
    long k = n;
    for (long i = 0; i < n; i++) {
        long slot = 1; /* orders are 16 apart (plan_enumerate) */
        for (long e = 2; e <= l[i].d && l[i].zero == 0 && l[i].cp < 2 && k < max && slot < 16;
             e *= 2)
            if (l[i].d % e == 0 && experts % e == 0) {
                l[k] = l[i];
                l[k].e = e;
                l[k++].order = l[i].order + slot++;
            }
    }
    return k;
}

static int by_order(const void *a, const void *b)
{
    const plan_layout_t *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

/* The layouts of l (n) into out (at most max), each fitting one with replicas and without
 * ZeRO followed by the same with gradient buckets of PLAN_BUCKET_MB all-reduced during the
 * last backward pass (the pipeline takes buckets without ZeRO only); they hold the same
 * memory. Returns how many went to out. */
static long plan_buckets(const plan_layout_t *l, long n, plan_layout_t *out, long max)
{
    long k = 0;
    for (long i = 0; i < n && k < max; i++) {
        out[k++] = l[i];
        if (l[i].d * l[i].cp > 1 && !l[i].zero && l[i].e < 2 && l[i].fits && k < max) {
            out[k] = l[i];
            out[k++].bucket_mb = PLAN_BUCKET_MB;
        }
    }
    return k;
}

/* ---- what a plan stores for its ranking, and the ranking --------------------------------- */

/* Appends text to buf (size) as a shell word: as it is when it is plain, else in single
 * quotes. */
static void append_word(char *buf, size_t size, const char *text)
{
    size_t len = strlen(buf);
    int plain = text[0] && strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_./=:,+-@%") == strlen(text);
    len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s", len ? " " : "",
                            plain ? "" : "'");
    for (const char *c = text; *c && len < size; c++) /* a quote: end, \', begin again */
        len += (size_t)(*c == '\'' && !plain ? snprintf(buf + len, size - len, "'\\''")
                                              : snprintf(buf + len, size - len, "%c", *c));
    if (!plain && len < size)
        snprintf(buf + len, size - len, "'");
}

/* The options that plan the same again on db (what --resume and the PARTIAL line take). */
static void plan_again(const plan_info_t *in, const char *db, char *buf, size_t size)
{
    snprintf(buf, size, "%s", in->options);
    append_word(buf, size, "--db");
    append_word(buf, size, db);
}

/* The options that decide a plan's layouts and runs as a command line (-j, --top, --db,
 * --time-limit and --tokens do not): the profile and a device file by their absolute paths. */
static void plan_options_text(const plan_opts_t *o, const char *profile, char *buf, size_t size)
{
    char num[32];
    buf[0] = '\0';
    const char *pairs[][2] = {{"--profile", profile}, {"--device", o->device},
                              {"--precision", o->precision}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        append_word(buf, size, pairs[i][0]);
        append_word(buf, size, pairs[i][1]);
    }
    const struct {
        const char *name;
        long v;
    } nums[] = {{"--devices", o->devices},       {"--per-server", o->per_server},
                {"--global-batch", o->global_batch}, {"--heads", o->heads},
                {"--steps", o->steps},           {"--max-runs", o->max_runs}};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        if (!nums[i].v) /* --heads not given */
            continue;
        snprintf(num, sizeof num, "%ld", nums[i].v);
        append_word(buf, size, nums[i].name);
        append_word(buf, size, num);
    }
    for (int k = 0; k < 2; k++) { /* --tensor and --stages when given */
        const long *v = k ? o->stages : o->tensor;
        int n = k ? o->n_stages : o->n_tensor;
        char list[PLAN_MAX_LIST * 4] = "";
        for (int i = 0, len = 0; i < n; i++)
            len += snprintf(list + len, sizeof list - (size_t)len, "%s%ld", i ? "," : "", v[i]);
        if (n) {
            append_word(buf, size, k ? "--stages" : "--tensor");
            append_word(buf, size, list);
        }
    }
    for (int i = 0; i < o->n_sets; i++) {
        append_word(buf, size, "--set");
        append_word(buf, size, o->sets[i]);
    }
}

/* The plan.* params of info, into p (PLAN_PARAMS; numbers' text in texts). */
#define PLAN_PARAMS 11
static void plan_params(const plan_info_t *in, cli_param_t *p, char texts[][32])
{
    const struct {
        const char *key;
        double v;
    } nums[] = {{"plan.flops_per_sample", in->flops_per_sample},
                {"plan.tokens_per_sample", in->tokens_per_sample},
                {"plan.global_batch", in->global_batch},
                {"plan.devices", in->devices},
                {"plan.peak_flops", in->peak_flops},
                {"plan.memory", in->capacity},
                {"plan.ckpt_bytes", in->ckpt_bytes},
                {"plan.runs", (double)in->runs}};
    int n = 0;
    p[n++] = (cli_param_t){"plan.options", in->options, NAN};
    p[n++] = (cli_param_t){"plan.title", in->title, NAN};
    p[n++] = (cli_param_t){"plan.precision", in->precision, NAN};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        snprintf(texts[i], 32, isnan(nums[i].v) ? "-" : "%.17g", nums[i].v);
        p[n++] = (cli_param_t){nums[i].key, texts[i], nums[i].v};
    }
    DT_ASSERT(n == PLAN_PARAMS);
}

/* A prepared statement on q's connection, or the error naming the database. */
static dt_status plan_prepare(results_query_t *q, const char *sql, sqlite3_stmt **st,
                              dt_err_t *err)
{
    sqlite3 *h = results_query_sqlite(q);
    if (sqlite3_prepare_v2(h, sql, -1, st, NULL) == SQLITE_OK)
        return DT_OK;
    return dt_err_input(err, "%s: cannot read plans: %s", results_query_path(q),
                        sqlite3_errmsg(h));
}

/* The sweep id of the newest plan (options NULL) or of the newest plan of those options,
 * into sweep (size); "" when there is none. */
static dt_status plan_find(results_query_t *q, const char *options, char *sweep, size_t size,
                           dt_err_t *err)
{
    sqlite3_stmt *st;
    sweep[0] = '\0';
    if (plan_prepare(q,
                     "SELECT r.sweep FROM runs r JOIN params p ON p.run = r.id AND p.key = "
                     "'plan.options' WHERE r.sweep IS NOT NULL AND (?1 IS NULL OR p.value = ?1) "
                     "ORDER BY r.id DESC LIMIT 1",
                     &st, err))
        return DT_ERR_INPUT;
    sqlite3_bind_text(st, 1, options, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(sweep, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return DT_OK;
}

/* The plan.* params of sweep's newest run that has them into in. */
static dt_status plan_info_read(results_query_t *q, const char *sweep, plan_info_t *in,
                                dt_err_t *err)
{
    sqlite3_stmt *st;
    if (plan_prepare(q,
                     "SELECT key, value, number FROM params WHERE key LIKE 'plan.%' AND run = "
                     "(SELECT max(r.id) FROM runs r JOIN params p ON p.run = r.id AND p.key = "
                     "'plan.options' WHERE r.sweep = ?1)",
                     &st, err))
        return DT_ERR_INPUT;
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
    memset(in, 0, sizeof *in);
    in->peak_flops = in->capacity = in->ckpt_bytes = NAN; /* ckpt_bytes: not in older plans */
    int found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0) + 5;
        const char *text = (const char *)sqlite3_column_text(st, 1);
        double v = sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 2);
        found = 1;
        if (!strcmp(key, "options"))
            snprintf(in->options, sizeof in->options, "%s", text ? text : "");
        else if (!strcmp(key, "title"))
            snprintf(in->title, sizeof in->title, "%s", text ? text : "");
        else if (!strcmp(key, "precision"))
            snprintf(in->precision, sizeof in->precision, "%s", text ? text : "");
        else if (!strcmp(key, "flops_per_sample"))
            in->flops_per_sample = v;
        else if (!strcmp(key, "tokens_per_sample"))
            in->tokens_per_sample = v;
        else if (!strcmp(key, "global_batch"))
            in->global_batch = v;
        else if (!strcmp(key, "devices"))
            in->devices = v;
        else if (!strcmp(key, "peak_flops"))
            in->peak_flops = v;
        else if (!strcmp(key, "memory"))
            in->capacity = v;
        else if (!strcmp(key, "ckpt_bytes"))
            in->ckpt_bytes = v;
        else if (!strcmp(key, "runs"))
            in->runs = isnan(v) ? 0 : (long)v;
        else if (!strcmp(key, "pruned"))
            in->pruned = isnan(v) ? 0 : (long)v;
        else if (!strcmp(key, "capped"))
            in->capped = isnan(v) ? 0 : (long)v;
        else if (!strcmp(key, "best_bound"))
            in->best_bound = v;
    }
    sqlite3_finalize(st);
    if (!found || in->runs < 1 || in->runs > PLAN_MAX_LAYOUTS || !(in->global_batch > 0) ||
        !(in->devices > 0))
        return dt_err_input(err, "%s: sweep %s is not a plan's (its runs have no plan.* params)",
                            results_query_path(q), sweep);
    return DT_OK;
}

/* A run's layout back from its scenario keys (the params load_layout set). */
static dt_status plan_layout_read(results_query_t *q, sqlite3_stmt *st, plan_layout_t *x,
                                  dt_err_t *err)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, x->run);
    int shard = 0, stage = 0, interleaved = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        const char *text = (const char *)sqlite3_column_text(st, 1);
        long v = (long)sqlite3_column_double(st, 2);
        if (!strcmp(key, "strategy.tensor"))
            x->t = v;
        else if (!strcmp(key, "strategy.stages"))
            x->p = v;
        else if (!strcmp(key, "strategy.data_parallel"))
            x->d = v;
        else if (!strcmp(key, "strategy.micro_batches"))
            x->m = v;
        else if (!strcmp(key, "model.batch"))
            x->mbs = v; /* the replica's batch: divided by m below */
        else if (!strcmp(key, "strategy.bucket_mb"))
            x->bucket_mb = (int)v;
        else if (!strcmp(key, "strategy.shard_optimizer"))
            shard = text && !strcmp(text, "yes");
        else if (!strcmp(key, "strategy.zero_stage"))
            stage = (int)v;
        else if (!strcmp(key, "strategy.sequence_parallel"))
            x->sp = text && !strcmp(text, "yes");
        else if (!strcmp(key, "strategy.virtual_stages"))
            x->v = v;
        else if (!strcmp(key, "strategy.expert"))
            x->e = v;
        else if (!strcmp(key, "strategy.context"))
            x->cp = v;
        else if (!strcmp(key, "strategy.pipeline_schedule"))
            interleaved = text && !strcmp(text, "interleaved");
        else if (!strcmp(key, "model.recompute"))
            x->rc = text && !strcmp(text, "full")        ? SIM_RECOMPUTE_FULL
                    : text && !strcmp(text, "selective") ? SIM_RECOMPUTE_SELECTIVE
                                                         : SIM_RECOMPUTE_NONE;
    }
    if (x->m < 1 || x->t < 1 || x->p < 1 || x->d < 1)
        return dt_err_input(err, "%s: run %lld has no plan layout", results_query_path(q),
                            (long long)x->run);
    x->mbs /= x->m;
    x->zero = shard ? stage : 0;
    if (!interleaved || x->v < 1)
        x->v = 1;
    if (x->cp < 1)
        x->cp = 1;
    return DT_OK;
}

/* The finished runs of the plan's sweep into *rows (in->runs of them, by sweep index, run 0
 * where none finished; the newest finished run of an index counts), with their step time,
 * throughput, memory, energy and cost; how many finished into *finished. read_info: in from
 * the runs' plan.* params first (--show). Opening the database marks the runs of vanished
 * writers interrupted. */
static dt_status plan_rank_read(const char *db, const char *sweep, int read_info,
                                plan_info_t *in, plan_layout_t **rows, long *finished,
                                dt_err_t *err)
{
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    sqlite3_stmt *st = NULL;
    *rows = NULL;
    *finished = 0;
    dt_status s = results_query_open_current(&q, db, err);
    if (s == DT_OK && read_info)
        s = plan_info_read(q, sweep, in, err);
    if (s == DT_OK)
        s = results_query_sweep(q, sweep, &runs, err);
    if (s == DT_OK)
        s = plan_prepare(q,
                         "SELECT key, value, number FROM params WHERE run = ?1 AND key IN "
                         "('strategy.tensor', 'strategy.stages', 'strategy.data_parallel', "
                         "'strategy.micro_batches', 'model.batch', 'strategy.bucket_mb', "
                         "'strategy.shard_optimizer', 'strategy.zero_stage', "
                         "'model.recompute', 'strategy.sequence_parallel', "
                         "'strategy.pipeline_schedule', 'strategy.virtual_stages', "
                         "'strategy.expert', 'strategy.context')",
                         &st, err);
    plan_layout_t *l = s == DT_OK ? dt_calloc((size_t)in->runs, sizeof *l) : NULL;
    for (size_t r = 0; s == DT_OK && r < runs.n; r++) {
        const results_run_view_t *v = &runs.v[r];
        if (v->sweep_index < 0 || v->sweep_index >= in->runs || strcmp(v->status, "finished"))
            continue;
        plan_layout_t *x = &l[v->sweep_index];
        *finished += !x->run;
        memset(x, 0, sizeof *x);
        x->run = v->id;
        x->index = v->sweep_index;
        x->step_s = v->steps > 0 ? v->sim_time / (double)v->steps : NAN;
        x->samples_s = v->throughput;
        results_memory_t mem;
        results_energy_view_t en;
        int found = 0;
        s = plan_layout_read(q, st, x, err);
        if (s == DT_OK)
            s = results_query_memory(q, v->id, &mem, &found, err);
        x->mem_bytes = found ? mem.params + mem.grads + mem.optimizer +
                                   (isnan(mem.activations) ? 0 : mem.activations)
                             : NAN;
        if (s == DT_OK)
            s = results_query_energy(q, v->id, &en, err);
        if (s == DT_OK) {
            double link = isnan(en.link_joules) ? 0 : en.link_joules;
            x->joules = v->steps > 0 ? (en.host_joules + link) / (double)v->steps : NAN;
            x->dollars_per_sample = en.dollars_per_sample;
        }
    }
    sqlite3_finalize(st);
    results_runs_free(&runs);
    results_query_close(q);
    if (s != DT_OK) {
        free(l);
        *finished = 0;
        return s;
    }
    *rows = l;
    return DT_OK;
}

/* By step time; a tie by the order listed, so that the ranking is the same however the
 * runs were stored (one sweep, or resumed). */
static int by_step_time(const void *a, const void *b)
{
    const plan_layout_t *x = a, *y = b;
    double u = x->run ? x->step_s : INFINITY, w = y->run ? y->step_s : INFINITY;
    if (u != w)
        return (u > w) - (u < w);
    return (x->index > y->index) - (x->index < y->index);
}

static void print_list(const plan_layout_t *l, long n)
{
    char name[64];
    printf("%-34s %s\n", "layout", "memory (dtsim check)");
    for (long i = 0; i < n; i++) {
        layout_name(&l[i], name, sizeof name);
        printf("%-34s %s %s\n", name, l[i].fits ? "fits:" : "dropped:",
               l[i].memory[0] ? l[i].memory : "no capacity stated");
    }
}

/* x with printf's format into buf; "-" when x is NAN. */
static const char *cell(char *buf, size_t n, const char *format, double x)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, format, x);
    return buf;
}

/* The ranking of the plan's finished runs (l: in->runs, sorted here), then, when some are
 * missing, the PARTIAL line and how to go on; the same from the plan and from --show, as
 * everything in it comes from in and the database. tokens: --tokens (0: none); goodput: the
 * failure model of the goodput columns; best: the first row's figures (NULL: not wanted;
 * best->run 0 when none finished). */
static void print_ranking(const plan_info_t *in, plan_layout_t *l, long finished, long top,
                          double tokens, const cli_plan_goodput_t *goodput, const char *db,
                          cli_plan_row_t *best)
{
    qsort(l, (size_t)in->runs, sizeof *l, by_step_time);
    double tps = in->tokens_per_sample;
    cli_plan_basis_t basis = {.flops_per_sample = in->flops_per_sample,
                              .tokens_per_sample = tps,
                              .global_batch = in->global_batch,
                              .devices = in->devices,
                              .peak_flops = in->peak_flops,
                              .capacity = in->capacity,
                              .ckpt_bytes = in->ckpt_bytes,
                              .tokens = tokens,
                              .goodput = *goodput};
    printf("\nbest layouts of %s by step time (t tensor, p stages, d replicas, mb SIZExCOUNT "
           "micro-batches, z ZeRO stage, b%d gradient buckets of %d MB if any, cpC context "
           "groups of C if any, then the "
           "recomputation if any):\n",
           in->title, PLAN_BUCKET_MB, PLAN_BUCKET_MB);
    printf("%-4s %-40s %6s %12s %10s %10s %10s %11s %12s %6s %10s %12s %10s", "rank", "layout",
           "run", "s/step", "samples/s", "tokens/s", "memory GB", "headroom GB", "TFLOP/s/dev",
           "%peak", "kJ/step", "$/1k samples", "$/M tokens");
    if (tokens > 0)
        printf(" %9s %9s %11s", "days", "MWh", "$");
    printf(" %10s %8s", "ckpt/steps", "goodput");
    if (tokens > 0)
        printf(" %10s %11s", "days+fail", "$+fail");
    printf("\n");
    if (best)
        memset(best, 0, sizeof *best);
    char c[14][32];
    for (long i = 0, shown = 0; i < in->runs && shown < top; i++) {
        const plan_layout_t *x = &l[i];
        if (!x->run)
            continue;
        cli_plan_row_t r = {.run = x->run};
        layout_name(x, r.layout, sizeof r.layout);
        cli_plan_row_compute(&basis, x->step_s, x->samples_s, x->mem_bytes, x->joules,
                             x->dollars_per_sample, &r);
        if (best && !shown)
            *best = r;
        printf("%-4ld %-40s %6lld %12.6g %10.4g %10s %10.4g %11s %12.4g %6s %10s %12s %10s",
               ++shown, r.layout, r.run, r.step_s, r.samples_s,
               cell(c[0], 32, "%.4g", r.tokens_s), r.mem_gb, cell(c[1], 32, "%.4g", r.headroom_gb),
               r.tflops_dev, cell(c[2], 32, "%.3g", r.peak_pct), cell(c[3], 32, "%.4g", r.kj_step),
               cell(c[4], 32, "%.4g", r.per_1k_samples), cell(c[5], 32, "%.4g", r.per_m_tokens));
        if (tokens > 0)
            printf(" %9s %9s %11s", cell(c[6], 32, "%.4g", r.days), cell(c[7], 32, "%.4g", r.mwh),
                   cell(c[8], 32, "%.4g", r.dollars));
        if (r.ckpt_steps)
            snprintf(c[11], 32, "%ld", r.ckpt_steps);
        printf(" %10s %8s", r.ckpt_steps ? c[11] : "-", cell(c[12], 32, "%.4f", r.goodput));
        if (tokens > 0)
            printf(" %10s %11s", cell(c[13], 32, "%.4g", r.days_fail),
                   cell(c[6], 32, "%.4g", r.dollars_fail));
        printf("\n");
    }
    if (in->pruned)
        printf("pruned %ld of %ld layouts: their lower bound exceeds the best simulated step "
               "(%.6g s)\n", in->pruned, in->runs, in->best_bound);
    if (in->capped)
        printf("not simulated %ld of %ld layouts: past --max-runs, by their lower bound\n",
               in->capped, in->runs);
    if (finished + in->pruned + in->capped < in->runs) {
        char again[sizeof in->options + PATH_MAX + 64];
        plan_again(in, db, again, sizeof again);
        printf("PARTIAL: %ld of %ld layouts simulated, the ranking is of those; to simulate the "
               "rest: dtsim plan %s --resume\n",
               finished, in->runs - in->pruned - in->capped, again);
    }
    printf("TFLOP/s/dev: the profile's %.4g FLOP per sample (forward and backward, no "
           "recomputation) x %.0f samples / s/step / %.0f devices; %%peak: of the device's "
           "%s peak, %s TFLOP/s\n",
           in->flops_per_sample, in->global_batch, in->devices, in->precision,
           cell(c[9], 32, "%.6g", in->peak_flops / 1e12));
    printf("headroom: the device's %s GB less the fullest device's memory; kJ/step: hosts and "
           "links; $: cluster.price_per_device_hour and cluster.price_per_port_hour (- without)\n",
           cell(c[10], 32, "%.6g", in->capacity / 1e9));
    if (tps > 0)
        printf("tokens: %.0f per sample (the profile's sample)%s\n", tps,
               tokens > 0 ? "; days, MWh, $: to train --tokens at each layout's step time, "
                            "energy and price"
                          : "");
    printf("goodput: the useful share of wall time when any device's failure (MTBF %.6g h a "
           "device) stops the job, which restarts (%.6g s) from its last checkpoint of %s GB "
           "written at %.6g MB/s a device every ckpt/steps steps (Daly's interval)%s\n",
           goodput->mtbf_device_s / 3600, goodput->restart_s,
           cell(c[9], 32, "%.4g", in->ckpt_bytes / 1e9), goodput->ckpt_bw_device / 1e6,
           tokens > 0 ? "; days+fail, $+fail: to train --tokens with failures" : "");
    if (tokens > 0)
        printf("--tokens: %.6g tokens, %.6g steps of %.0f samples\n", tokens,
               tokens / (tps * in->global_batch), in->global_batch);
}

/* dtsim plan --show: the stored plan's ranking again, from the database alone. */
static int plan_show(const plan_opts_t *o)
{
    dt_err_t err;
    char sweep[SCENARIO_STR + 64];
    plan_info_t *in = dt_calloc(1, sizeof *in);
    plan_layout_t *l = NULL;
    long finished = 0;
    int rc = CLI_EXIT_USAGE;
    results_query_t *q = NULL;
    dt_status st = results_query_open_current(&q, o->db, &err);
    if (st == DT_OK && o->sweep)
        snprintf(sweep, sizeof sweep, "%s", o->sweep);
    else if (st == DT_OK && (st = plan_find(q, NULL, sweep, sizeof sweep, &err)) == DT_OK &&
             !sweep[0])
        st = dt_err_input(&err, "%s holds no plan", o->db);
    results_query_close(q);
    if (st) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    if (plan_rank_read(o->db, sweep, 1, in, &l, &finished, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    if (o->tokens > 0 && !(in->tokens_per_sample > 0)) {
        cli_usage_error("plan", "--tokens %s: the plan's profile counts no tokens per sample",
                        o->tokens_text);
        goto done;
    }
    printf("plan %s (sweep %s in %s)\n", in->title, sweep, o->db);
    print_ranking(in, l, finished, o->top, o->tokens, &o->goodput, o->db, NULL);
    rc = CLI_EXIT_OK;
done:
    free(l);
    free(in);
    return rc;
}

/* The signal that came between two batches of the sweep (each batch's own handler takes
 * those that come during it). */
static volatile sig_atomic_t plan_signal;

static void plan_on_signal(int sig)
{
    plan_signal = sig;
}

/* By lower bound; a tie by index, so that the order is the same in a plan and its
 * resumptions. */
static const plan_layout_t *bound_of;
static int by_bound(const void *a, const void *b)
{
    const plan_layout_t *x = &bound_of[*(const long *)a], *y = &bound_of[*(const long *)b];
    if (x->bound != y->bound)
        return (x->bound > y->bound) - (x->bound < y->bound);
    return (x->index > y->index) - (x->index < y->index);
}

/* in's pruned, capped and best_bound as params plan.* of every run of sweep, so that --show
 * and --resume know which layouts were left out on purpose. Known only when the sweep's
 * last batch has run, so written after it. */
static void plan_store_skipped(const char *db, const char *sweep, const plan_info_t *in)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    const struct {
        const char *key;
        double v;
    } nums[] = {{"plan.pruned", (double)in->pruned},
                {"plan.capped", (double)in->capped},
                {"plan.best_bound", in->best_bound}};
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_busy_timeout(h, 10000) == SQLITE_OK &&
        sqlite3_prepare_v2(h,
                           "INSERT OR REPLACE INTO params (run, key, value, number) "
                           "SELECT id, ?1, ?2, ?3 FROM runs WHERE sweep = ?4",
                           -1, &st, NULL) == SQLITE_OK) {
        for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
            char text[32];
            snprintf(text, sizeof text, "%.17g", nums[i].v);
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, nums[i].key, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
            if (isfinite(nums[i].v))
                sqlite3_bind_double(st, 3, nums[i].v);
            else
                sqlite3_bind_null(st, 3);
            sqlite3_bind_text(st, 4, sweep, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE)
                fprintf(stderr, "dtsim plan: %s: cannot store %s: %s\n", db, nums[i].key,
                        sqlite3_errmsg(h));
        }
    } else {
        fprintf(stderr, "dtsim plan: %s: cannot store what was pruned: %s\n", db,
                h ? sqlite3_errmsg(h) : "out of memory");
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* The best step time of sweep's finished runs in db, seconds; INFINITY when none (or the
 * database does not answer: then nothing more is pruned). One query after each batch:
 * reading every run back as the ranking does would cost more than a run of a small plan. */
static double plan_best_step(const char *db, const char *sweep)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    double best = INFINITY;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_busy_timeout(h, 10000) == SQLITE_OK &&
        sqlite3_prepare_v2(h,
                           "SELECT min(s.sim_time / s.steps) FROM runs r JOIN summary s ON "
                           "s.run = r.id WHERE r.sweep = ?1 AND r.status = 'finished' AND "
                           "s.steps > 0",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            best = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return best;
}

/* Simulates the plan's fitting layouts (cand, in->runs of them by sweep index; stored: the
 * rows of those that finished in an earlier run of the plan, or NULL, stored of them) as
 * one sweep, continuing sweep (its id, "" for a new one; the id goes there), in order of
 * their lower bound: -j at a time, after each batch the best step read back and every
 * layout whose bound exceeds it pruned (all at once with --no-prune, none pruned), at most
 * --max-runs in all; the progress counts from t0, the plan's start. Into in: what was
 * pruned and capped. *stopped: the signal that
 * stopped it, -1 when the time limit passed, 0 when it ran to the end. Returns the sweep's
 * exit code. */
static int plan_simulate(const plan_opts_t *o, plan_info_t *in, const plan_layout_t *cand,
                         const plan_layout_t *stored, long n_stored, double t0, double deadline,
                         const char *base, const char *name, const char *argv0, char *sweep,
                         size_t size, int *stopped)
{
    enum { PENDING, SIMULATED, PRUNED, CAPPED };
    long fit = in->runs, batch = o->no_prune ? o->max_runs : o->jobs;
    if (batch > fit) /* the scenarios of a batch are held at once */
        batch = fit;
    char *state = dt_calloc((size_t)fit, 1);
    long *order = dt_malloc(sizeof *order * (size_t)fit);
    long *todo = dt_malloc(sizeof *todo * (size_t)batch);
    scenario_t *list = dt_malloc(sizeof *list * (size_t)batch);
    double best = INFINITY;
    for (long i = 0; i < fit; i++) {
        order[i] = i;
        if (stored && stored[i].run) {
            state[i] = SIMULATED;
            best = fmin(best, stored[i].step_s);
        }
    }
    bound_of = cand;
    qsort(order, (size_t)fit, sizeof *order, by_bound);
    cli_param_t params[PLAN_PARAMS];
    char texts[PLAN_PARAMS][32];
    plan_params(in, params, texts);
    struct sigaction sa = {.sa_handler = plan_on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    plan_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = CLI_EXIT_OK;
    long at = 0, started = n_stored, done = n_stored;
    double first_run = 0; /* when this session's first run began: its pace */
    *stopped = 0;
    for (;;) {
        long k = 0;
        while (at < fit && k < batch && started < o->max_runs) {
            long i = order[at];
            if (state[i] != PENDING) {
                at++;
                continue;
            }
            if (!o->no_prune && cand[i].bound > best)
                break; /* by bound: every one after it has a bound as high */
            dt_err_t err;
            if (load_layout(&list[k], base, o, &cand[i], name, &err)) {
                fprintf(stderr, "dtsim plan: %s\n", err.msg); /* it loaded a moment ago */
                rc = CLI_EXIT_USAGE;
                goto done;
            }
            state[i] = SIMULATED;
            todo[k++] = i;
            started++;
            at++;
        }
        if (!k)
            break;
        if (plan_signal || (deadline > 0 && cli_sweep_now() >= deadline)) {
            for (long j = 0; j < k; j++) /* never started */
                state[todo[j]] = PENDING;
            *stopped = plan_signal ? plan_signal : -1;
            break;
        }
        /* the progress's total: what is done, and what may still run at this best */
        long total = started;
        for (long j = at; j < fit && total < o->max_runs; j++)
            total += state[order[j]] == PENDING && (o->no_prune || cand[order[j]].bound <= best);
        char id[SCENARIO_STR + 64]; /* the sweep's answer goes to sweep, cleared as it starts */
        snprintf(id, sizeof id, "%s", sweep);
        if (!first_run)
            first_run = cli_sweep_now();
        cli_sweep_opts_t so = {.id = id, .index = todo, .label = "plan", .done_before = done,
                               .total = total, .started = t0, .pace_since = first_run,
                               .pace_runs = done - n_stored, .deadline = deadline,
                               .params = params, .n_params = PLAN_PARAMS, .quiet = 1,
                               .checked = 1};
        int r = cli_sweep_run_opts(list, k, name, o->jobs, argv0, sweep, size, &so);
        if (r == CLI_EXIT_USAGE || !sweep[0]) {
            rc = r ? r : CLI_EXIT_RUN;
            goto done;
        }
        if (r != CLI_EXIT_OK)
            rc = r;
        done += k;
        if (so.stopped) {
            *stopped = so.stopped;
            break;
        }
        if (o->no_prune)
            continue;
        best = fmin(best, plan_best_step(o->db, sweep));
    }
    /* what did not run, when nothing stopped the plan: pruned, or past --max-runs; when
     * something did, nothing is pruned yet and what --max-runs leaves out is capped */
    in->pruned = in->capped = 0;
    for (long i = 0; i < fit && !*stopped; i++) {
        if (state[i] != PENDING)
            continue;
        state[i] = !o->no_prune && cand[i].bound > best ? PRUNED : CAPPED;
        in->pruned += state[i] == PRUNED;
        in->capped += state[i] == CAPPED;
    }
    if (*stopped && fit > o->max_runs)
        in->capped = fit - o->max_runs;
    in->best_bound = best;
    if (sweep[0])
        plan_store_skipped(o->db, sweep, in);
done:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(list);
    free(todo);
    free(order);
    free(state);
    return rc;
}

/* The key of a --set ("KEY=VALUE") that each layout sets itself, or NULL: such a key would
 * be overridden on some layouts and not others, their names then saying what did not run. */
static const char *plan_searched_key(const char *set)
{
    static const char *const searched[] = {
        "strategy.tensor", "strategy.stages", "strategy.data_parallel", "model.batch",
        "strategy.micro_batches", "strategy.zero_stage", "strategy.shard_optimizer",
        "model.recompute", "strategy.bucket_mb", "strategy.sequence_parallel",
        "strategy.pipeline_schedule", "strategy.virtual_stages", "strategy.expert",
        "strategy.context"};
    for (size_t k = 0; k < sizeof searched / sizeof *searched; k++) {
        size_t len = strlen(searched[k]);
        if (!strncmp(set, searched[k], len) && set[len] == '=')
            return searched[k];
    }
    return NULL;
}

/* A --set ("KEY=VALUE") a plan cannot take, its reason into why: a key each layout sets
 * itself (plan_searched_key), or strategy.kind, which is pipeline in every layout (a
 * federated or data-parallel kind would plan a layout it does not run). Returns 1 when
 * refused. */
static int plan_set_refused(const char *set, char *why, size_t n)
{
    const char *key = plan_searched_key(set);
    if (key) {
        snprintf(why, n, "--set %s: the plan searches %s itself (each layout sets it)", set,
                 key);
        return 1;
    }
    if (!strncmp(set, "strategy.kind=", 14) && strcmp(set + 14, "pipeline")) {
        snprintf(why, n, "--set %s: a plan lays out tensor x pipeline x data parallel runs "
                 "(strategy.kind = pipeline in every layout); plan another strategy with "
                 "dtsim run and a [sweep]", set);
        return 1;
    }
    return 0;
}

/* A layout's key in an error ("--set strategy.data_parallel: 65536 is out of range"): the
 * user never gave it; msg without the "--set " then names the key the layout set. */
static const char *layout_key_error(const char *msg)
{
    if (strncmp(msg, "--set ", 6))
        return NULL;
    char set[96];
    size_t len = strcspn(msg + 6, ": =");
    if (len + 2 > sizeof set)
        return NULL;
    snprintf(set, sizeof set, "%.*s=", (int)len, msg + 6);
    return plan_searched_key(set) ? msg + 6 : NULL;
}

/* What stopped a plan (plan_simulate's *stopped: a signal, or -1 for the time limit). */
static const char *stop_reason(int stopped)
{
    return stopped == SIGINT    ? "interrupted (SIGINT)"
           : stopped == SIGTERM ? "stopped (SIGTERM)"
           : stopped > 0        ? "stopped by a signal"
                                : "the time limit passed";
}

/* One plan of o: enumerated, fitted, simulated and ranked (argv[0]: this program, for its
 * children; t0: when the command started, for --time-limit). check: only load the base
 * scenario with the first layout's keys (a bad device, --set or precision), printing nothing
 * on success and its error into why (n) rather than on stderr. best: the first ranked row
 * (cli_plan_compare), or NULL. Returns the exit code. */
static int plan_one(plan_opts_t o, char **argv, double t0, int check,
                    cli_plan_row_t *best, char *why, size_t why_n)
{
    int rc;
    if (best)
        memset(best, 0, sizeof *best);
    if (why_n)
        why[0] = '\0';
    /* a key the plan searches, from an --option (the user's --set are checked before) */
    for (int i = 0; i < o.n_sets; i++) {
        char refused[600];
        if (!plan_set_refused(o.sets[i], refused, sizeof refused))
            continue;
        if (why_n) {
            snprintf(why, why_n, "%s", refused);
            return CLI_EXIT_USAGE;
        }
        return cli_usage_error("plan", "%s", refused);
    }
    /* the profile: a file by its absolute path, as the temporary scenario lies elsewhere */
    char profile[PATH_MAX];
    if (sim_model_profile_is_file(o.profile)) {
        if (!realpath(o.profile, profile))
            return cli_usage_error("plan", "--profile %s: %s", o.profile, strerror(errno));
    } else {
        snprintf(profile, sizeof profile, "%s", o.profile);
    }
    /* a device file likewise (the catalogue's names end in no .ini) */
    char device[PATH_MAX];
    size_t dlen = strlen(o.device);
    if (dlen > 4 && !strcmp(o.device + dlen - 4, ".ini")) {
        if (!realpath(o.device, device))
            return cli_usage_error("plan", "--device %s: %s", o.device, strerror(errno));
        o.device = device;
    }
    sim_model_profile_t prof;
    dt_err_t err;
    if (sim_model_profile_load(&prof, profile, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    long blocks = profile_blocks(&prof), pieces = profile_pieces(&prof);
    int splits = prof.has_tensor_splits, attention = sim_profile_has_attention(&prof);
    plan_info_t *in = dt_calloc(1, sizeof *in);
    in->flops_per_sample = prof.forward_flops + prof.backward_flops;
    in->tokens_per_sample = sim_model_profile_tokens(&prof);
    in->global_batch = (double)o.global_batch;
    in->devices = (double)o.devices;
    snprintf(in->precision, sizeof in->precision, "%s", o.precision);
    char name[SCENARIO_STR], sample[sizeof prof.sample];
    if (o.label) /* a comparison's option: its name in the runs' names */
        snprintf(name, sizeof name, "plan-%.100s-%.64s", prof.name, o.label);
    else
        snprintf(name, sizeof name, "plan-%s", prof.name);
    double model_params = (double)prof.params;
    snprintf(sample, sizeof sample, "%s", prof.sample);
    if (o.tokens > 0 && !(in->tokens_per_sample > 0)) {
        sim_model_profile_free(&prof); /* kept for the bounds (plan_bound) */
        free(in);
        return cli_usage_error("plan", "--tokens %s: profile %s counts no tokens per sample "
                                       "(its sample: \"%s\")",
                               o.tokens_text, name + 5, sample);
    }

    plan_layout_t *l = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *l), *more = NULL, *ranked = NULL;
    plan_layout_t *cand = NULL; /* the fitting layouts, by sweep index */
    int stopped = 0;
    char base[PATH_MAX] = "";
    long seq = prof.has_shapes && attention ? (long)in->tokens_per_sample : 0;
    long n = plan_enumerate(&o, blocks, pieces, splits, attention, seq, l, PLAN_MAX_LAYOUTS);
    int experts = 0; /* the fewest routed experts of a MoE layer (0: none) */
    for (int i = 0; i < prof.n_layers; i++)
        if (prof.layers[i].experts && (!experts || prof.layers[i].experts < experts))
            experts = prof.layers[i].experts;
    if (experts)
        n = plan_expert_more(l, n, experts, PLAN_MAX_LAYOUTS);
    rc = CLI_EXIT_USAGE;
    if (!n) {
        cli_usage_error("plan",
                        "no layout of %ld devices (tensor %s, at most %ld per server; "
                        "stages %s, at most %ld layers) divides the global batch of %ld",
                        o.devices, o.n_tensor ? "of --tensor" : "1, 2, 4, 8", o.per_server,
                        o.n_stages ? "of --stages" : "1 to 64", blocks, o.global_batch);
        goto done;
    }
    if (write_temp(base, &o, profile, name, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    /* a bad --set, device or precision is the user's, named once, not once per layout */
    scenario_t *sc = dt_malloc(sizeof *sc);
    char device_name[64] = ""; /* the device the layouts load: a --set may name it */
    dt_status st = load_layout(sc, base, &o, &l[0], name, &err);
    /* a layout's own key out of its range (65,536 devices: data_parallel 65536) is that
     * layout's, dropped by its fit check: the user's keys are checked on one that loads */
    for (long i = 1; st && layout_key_error(err.msg) && i < n; i++)
        st = load_layout(sc, base, &o, &l[i], name, &err);
    if (st == DT_OK) { /* the device's peak at the precision and its memory, for the ranking */
        const sim_device_profile_t *dev = scenario_device(sc);
        in->peak_flops = dev ? dev->value[sc->precision] : NAN;
        in->capacity = dev ? dev->value[SIM_DEV_MEMORY] : NAN;
        /* the whole model's checkpoint, in the layout's precision and optimizer */
        in->ckpt_bytes = sim_goodput_ckpt_bytes(sc, model_params);
        snprintf(device_name, sizeof device_name, "%.63s", dev ? dev->name : o.device);
        snprintf(in->title, sizeof in->title, "%.100s on %ld x %.300s, global batch %ld, %s", name + 5,
                 o.devices, dev ? dev->name : o.device, o.global_batch, o.precision);
    }
    free(sc);
    if (st && layout_key_error(err.msg)) { /* no layout loads: say what the user gave */
        char what[700];
        snprintf(what, sizeof what, "--devices %ld and --global-batch %ld: no layout can be "
                 "simulated (each sets a key out of its range; e.g. %s)", o.devices, o.global_batch,
                 layout_key_error(err.msg));
        if (why_n)
            snprintf(why, why_n, "%s", what);
        else
            fprintf(stderr, "dtsim plan: %s\n", what);
        goto done;
    }
    if (st && (strstr(err.msg, "--set") || strstr(err.msg, "cluster.device") ||
               strstr(err.msg, "model.precision"))) {
        if (why_n)
            snprintf(why, why_n, "%s", without_path(err.msg, base));
        else
            fprintf(stderr, "dtsim plan: %s\n", without_path(err.msg, base));
        goto done;
    }
    if (check) {
        rc = CLI_EXIT_OK;
        goto done;
    }
    int same = -1; /* memory checked here or in children (plan_fit) */
    plan_fit(l, n, base, &o, &prof, name, argv[0], &same);
    for (int z = 2; z <= 3; z++)
        n = plan_zero_more(l, n, z, base, &o, &prof, name, argv[0], &same, PLAN_MAX_LAYOUTS);
    qsort(l, (size_t)n, sizeof *l, by_order);
    more = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *more);
    n = plan_buckets(l, n, more, PLAN_MAX_LAYOUTS);
    plan_layout_t *tmp = l; /* the list back in l */
    l = more;
    more = tmp;
    long fit = 0;
    for (long i = 0; i < n; i++)
        fit += l[i].fits;
    long runs = fit < o.max_runs ? fit : o.max_runs; /* at most */
    printf("plan: %s on %ld x %s, global batch %ld, %s: %ld layouts, %ld fit, at most %ld to "
           "simulate\n",
           name + 5, o.devices, o.device, o.global_batch, o.precision, n, fit, runs);
    print_list(l, n);
    fflush(stdout);
    long for_memory = 0;
    for (long i = 0; i < n; i++)
        for_memory += !strncmp(l[i].memory, "does not fit", 12);
    if (!fit && !for_memory) { /* not one was dropped for memory: say what dropped them */
        fprintf(stderr,
                "dtsim plan: none of the %ld layouts of %s on %ld x %s can be simulated, none "
                "for its memory: %s (the list says why each was dropped)\n",
                n, name + 5, o.devices, o.device, n ? l[0].memory : "no layout");
        goto done;
    }
    if (!fit) { /* the list above says what each would hold */
        fprintf(stderr,
                "dtsim plan: none of the %ld layouts of %s on %ld x %s fits its memory (the "
                "list says what each holds): more --devices, a --device with more memory, or "
                "--set run.allow_oversubscribed_memory=yes to time them anyway\n",
                n, name + 5, o.devices, o.device);
        goto done; /* rc: CLI_EXIT_USAGE */
    }
    rc = CLI_EXIT_OK;
    if (o.no_run)
        goto done;

    /* the default database's folder is made when missing, as `dtsim run` makes it */
    if (!strcmp(o.db, DEFAULT_DB) && mkdir("results", 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dtsim plan: cannot create results/ for %s: %s\n", DEFAULT_DB,
                strerror(errno));
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    /* the sweep's indices: index k is the k-th fitting layout, as listed, in the plan and in
     * its resumptions */
    in->runs = fit;
    cand = dt_malloc(sizeof *cand * (size_t)fit);
    for (long i = 0, k = 0; i < n; i++)
        if (l[i].fits) {
            l[i].index = k;
            cand[k++] = l[i];
        }
    plan_options_text(&o, profile, in->options, sizeof in->options);

    /* --resume: the newest stored plan of these options, and which of its layouts finished */
    char sweep[SCENARIO_STR + 64] = "";
    long stored = 0;
    if (o.resume && access(o.db, F_OK) == 0) {
        results_query_t *q = NULL;
        st = results_query_open_current(&q, o.db, &err);
        if (st == DT_OK)
            st = plan_find(q, in->options, sweep, sizeof sweep, &err);
        results_query_close(q);
        if (st == DT_OK && sweep[0]) {
            plan_info_t *was = dt_calloc(1, sizeof *was);
            st = plan_rank_read(o.db, sweep, 1, was, &ranked, &stored, &err);
            if (st == DT_OK && was->runs != fit)
                st = dt_err_input(&err, "%s: the plan of sweep %s has %ld fitting layouts, these "
                                        "options %ld", o.db, sweep, was->runs, fit);
            free(was);
        }
        if (st) {
            fprintf(stderr, "dtsim plan: --resume: %s\n", err.msg);
            rc = CLI_EXIT_USAGE;
            goto done;
        }
    }
    long most = fit < o.max_runs ? fit : o.max_runs;
    if (o.resume && sweep[0])
        printf("plan: resuming sweep %s of %s: %ld of %ld layouts finished, at most %ld to "
               "simulate\n", sweep, o.db, stored, most, most > stored ? most - stored : 0);
    else if (o.resume)
        fprintf(stderr, "dtsim plan: --resume: no plan of these options in %s: simulating all "
                        "%ld layouts\n", o.db, fit);

    rc = plan_simulate(&o, in, cand, ranked, stored, t0, o.time_limit > 0 ? t0 + o.time_limit : 0,
                       base, name, argv[0], sweep, sizeof sweep, &stopped);
    if (rc != CLI_EXIT_USAGE && !sweep[0] && stopped) { /* stopped before its first run */
        char again[sizeof in->options + PATH_MAX + 64];
        plan_again(in, o.db, again, sizeof again);
        printf("PARTIAL: 0 of %ld layouts simulated, nothing to rank yet; to simulate them: "
               "dtsim plan %s --resume\n",
               most, again);
        fflush(stdout);
        fprintf(stderr, "dtsim plan: %s before the first layout was simulated (the ranking is "
                        "PARTIAL: empty); --resume simulates them\n",
                stop_reason(stopped));
        rc = stopped > 0 ? 128 + stopped : CLI_EXIT_OK;
        goto done;
    }
    if (rc == CLI_EXIT_USAGE || !sweep[0])
        goto done;
    free(ranked);
    ranked = NULL;
    long finished = 0;
    if (plan_rank_read(o.db, sweep, 0, in, &ranked, &finished, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        rc = CLI_EXIT_RUN;
        goto done;
    }
    /* the bound is a bound: a simulated step below it would make the pruning unsafe */
    long below = 0;
    for (long i = 0; i < in->runs; i++)
        below += ranked[i].run && ranked[i].step_s < cand[i].bound * (1 - 1e-9);
    if (below)
        fprintf(stderr, "dtsim plan: %ld simulated steps are below their lower bound: run "
                        "again with --no-prune\n", below);
    print_ranking(in, ranked, finished, o.top, o.tokens, &o.goodput, o.db, best);
    if (best)
        snprintf(best->device, sizeof best->device, "%s", device_name);
    fflush(stdout);
    if (stopped) {
        fprintf(stderr, "dtsim plan: %s: %ld of %ld layouts simulated (the ranking is "
                        "PARTIAL); --resume simulates the rest\n",
                stop_reason(stopped),
                finished, fit - in->pruned - in->capped);
        if (stopped > 0)
            rc = 128 + stopped;
    }

done:
    sim_model_profile_free(&prof);
    if (base[0])
        unlink(base);
    free(cand);
    free(l);
    free(more);
    free(ranked);
    free(in);
    return rc;
}

/* A comparison's plan of one option: o's options with the option's device and keys, its
 * name in the runs' names (cli_plan_one_fn). */
typedef struct plan_compare_ctx {
    const plan_opts_t *o;
    char **argv;
    double t0;
} plan_compare_ctx_t;

static int plan_compare_one(void *ctx, const cli_plan_option_t *opt, int check,
                            cli_plan_row_t *best, char *why, size_t n)
{
    const plan_compare_ctx_t *c = ctx;
    plan_opts_t *o = dt_malloc(sizeof *o);
    *o = *c->o;
    o->device = opt->device;
    o->label = opt->name;
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < opt->n_sets && !rc; i++) {
        if (o->n_sets == PLAN_MAX_SETS)
            rc = cli_usage_error("plan", "--option %s: more than %d --set options with its keys",
                                 opt->name, PLAN_MAX_SETS);
        else
            o->sets[o->n_sets++] = opt->sets[i];
    }
    if (!rc)
        rc = plan_one(*o, c->argv, c->t0, check, best, why, n);
    free(o);
    return rc;
}

int cli_plan(int argc, char **argv)
{
    double t0 = cli_sweep_now(); /* --time-limit counts from here */
    plan_opts_t o;
    int rc = plan_opts_parse(&o, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (o.show)
        return plan_show(&o);
    for (int i = 0; i < o.n_sets; i++) {
        char refused[600];
        if (plan_set_refused(o.sets[i], refused, sizeof refused))
            return cli_usage_error("plan", "%s", refused);
    }
    /* several devices or any --option: each planned in turn, then their best side by side */
    if (o.n_device_args > 1 || strchr(o.device, ',') || o.n_option_args) {
        plan_compare_ctx_t ctx = {.o = &o, .argv = argv, .t0 = t0};
        return cli_plan_compare(o.device_args, o.n_device_args, o.option_args, o.n_option_args,
                                o.tokens, plan_compare_one, &ctx);
    }
    return plan_one(o, argv, t0, 0, NULL, NULL, 0);
}
