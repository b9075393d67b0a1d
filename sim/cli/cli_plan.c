/* `dtsim plan`: capacity planning of a timing-only model on N devices. Enumerates the
 * tensor x pipeline x data layouts (strategy.kind = pipeline) of one global batch with their
 * micro-batch sizes and ZeRO stage 0 or 1, drops the layouts that do not fit the device's
 * memory (the check `dtsim check` makes, no simulation), and tries one that does not fit
 * again with what saves more memory at a cost: ZeRO stages 2 and 3 over its replicas and
 * selective or full recomputation (each fitting combination with nothing less saving that
 * fits); a fitting one of replicas without ZeRO it tries again with gradient buckets. It runs the fitting ones as one sweep (the machinery of `dtsim run`, -j children,
 * one database, one sweep id) and prints them by step time with memory, achieved FLOP/s per
 * device, energy and cost, read back from the database. The scenarios are written to
 * temporary files (removed at the end): a base made of the options, then the same with each
 * layout's keys.
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
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"
#include "cli_plan_compare.h"
#include "cli_sweep.h"
#include "db.h"
#include "goodput.h"
#include "model_profile.h"
#include "profile_memory.h"
#include "query.h"
#include "scenario.h"

#define PLAN_MAX_SETS 64
#define PLAN_MAX_LAYOUTS 4096
/* the runs of one plan: their scenarios are held in memory at once */
#define PLAN_MAX_RUNS 256
/* gradient buckets tried besides one all-reduce per stage: PyTorch DDP's bucket_cap_mb */
#define PLAN_BUCKET_MB 25

typedef struct plan_opts {
    const char *profile, *device, *precision, *db;
    long devices, per_server, global_batch, heads, steps, top, max_runs;
    int jobs, no_run, resume, show;
    double time_limit; /* wall seconds from the start; 0: none */
    double tokens;     /* --tokens: tokens to train; 0: none */
    const char *time_limit_text, *tokens_text;
    const char *sweep;    /* --show --sweep */
    const char *planning; /* the first option --show does not take, for its error */
    const char *sets[PLAN_MAX_SETS];
    int n_sets;
    /* side by side (cli_plan_compare.c): each --device value and --option */
    const char *device_args[CLI_PLAN_MAX_OPTIONS], *option_args[CLI_PLAN_MAX_OPTIONS];
    int n_device_args, n_option_args;
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
    long runs;                   /* layouts the whole plan simulates */
} plan_info_t;

/* One layout: t x p x d devices, each replica's batch b = global / d in b / mbs micro-batches
 * of mbs samples, ZeRO stage 0 to 3 over the d replicas, model.recompute rc, gradient
 * buckets of bucket_mb (PLAN_BUCKET_MB or 0) over the replicas. */
typedef struct plan_layout {
    long t, p, d, mbs, m;
    int zero, bucket_mb;
    sim_recompute_t rc;
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
           "Capacity planning of a timing-only model (sim/README.md: Planning a layout):\n"
        "enumerates the tensor x pipeline x data layouts of N devices for one global\n"
        "batch, with micro-batches of 1, 2 or 4 samples and ZeRO stage 0 or 1, drops\n"
        "those that do not fit the device's memory, tries those again with ZeRO stage\n"
        "2 or 3 and selective or full recomputation (the least that fits), and those\n"
        "of replicas without ZeRO that fit with gradient buckets too, simulates\n"
        "the rest as one sweep (strategy.kind = pipeline, 1F1B) stored in the\n"
        "database, and prints them by step time with the fullest device's memory,\n"
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
        "  --set KEY=VALUE     any scenario key for every layout\n"
        "                      (cluster.price_per_device_hour=4, ...); tensor\n"
        "                      all-reduces are timed in closed form\n"
        "                      (strategy.tensor_comm=formula; =messages simulates\n"
        "                      each ring step)\n"
        "  --option NAME:KEY=VALUE[,KEY=VALUE...]\n"
        "                      a cluster option side by side with the others (with\n"
        "                      each --device); --fabric is the same. KEY: bandwidth\n"
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
        "  --max-runs M        layouts simulated at most, the first fitting ones in the\n"
        "                      listed order (default and at most %d)\n"
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
        "tensor is 1, 2, 4 or 8 (dividing N); pipeline stages divide the profile's\n"
        "transformer layers (its *.scores layers; its pipeline pieces when it has\n"
        "none); data = N / (tensor x stages) must divide B. A fitting layout of\n"
        "replicas without ZeRO runs again with gradient buckets of 25 MB (PyTorch\n"
        "DDP's default; strategy.bucket_mb) all-reduced during the last backward pass\n"
        "instead of one all-reduce per stage after it; ZeRO reduces unbucketed.\n"
        "A layout is named tT pP dD mbSIZExCOUNT zZERO, then b25 with buckets, then\n"
        "selective or full when it recomputes.\n"
        "\n"
        "exit code: 0 a plan ranked whole, or PARTIAL because --time-limit passed;\n"
        "1 a run failed; 2 bad input (side by side: also an option where no layout\n"
        "fits, the other options still planned); 130 (128 + SIGINT) or 143 (SIGTERM)\n"
        "when stopped by that signal, after the PARTIAL ranking. Progress goes to\n"
        "stderr: a line on a terminal, else \"plan: 3/8 done, 12 s, about 20 s left\"\n"
        "after each run.\n"
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
        case 'N':
            o->no_run = 1;
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

/* Every layout of o's devices and batch, in the order printed: tensor, then stages, from
 * small to large, then micro-batch size, then ZeRO. Returns how many went to out. */
static long plan_enumerate(const plan_opts_t *o, long blocks, int splits, plan_layout_t *out,
                           long max)
{
    static const long tensors[] = {1, 2, 4, 8}, sizes[] = {1, 2, 4};
    long n = 0;
    for (size_t ti = 0; ti < sizeof tensors / sizeof *tensors; ti++) {
        long t = tensors[ti];
        if (t > o->per_server || o->devices % t || (o->heads && o->heads % t) || (t > 1 && !splits))
            continue;
        for (long p = 1; p <= blocks && p <= 64; p++) {
            if (blocks % p || (o->devices / t) % p)
                continue;
            long d = o->devices / (t * p);
            if (o->global_batch % d)
                continue;
            long b = o->global_batch / d;
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                long mbs = sizes[si];
                if (b % mbs || b / mbs > 4096)
                    continue;
                for (int zero = 0; zero <= (d > 1); zero++) {
                    if (n == max)
                        return n;
                    out[n++] = (plan_layout_t){
                        .t = t, .p = p, .d = d, .mbs = mbs, .m = b / mbs, .zero = zero};
                }
            }
        }
    }
    return n;
}

static const char *const rc_names[] = {"", "selective", "full"}; /* sim_recompute_t */

static void layout_name(const plan_layout_t *l, char *buf, size_t n)
{
    char bucket[16] = "";
    if (l->bucket_mb)
        snprintf(bucket, sizeof bucket, " b%d", l->bucket_mb);
    snprintf(buf, n, "t%ld p%ld d%ld mb%ldx%ld z%d%s%s%s", l->t, l->p, l->d, l->mbs, l->m,
             l->zero, bucket, l->rc ? " " : "", rc_names[l->rc]);
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
            "tensor_comm = formula\n",
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
    char keys[9][SCENARIO_STR];
    const char *sets[PLAN_MAX_SETS + 10];
    for (int i = 0; i < o->n_sets; i++)
        sets[i] = o->sets[i];
    snprintf(keys[0], sizeof keys[0], "strategy.tensor=%ld", l->t);
    snprintf(keys[1], sizeof keys[1], "strategy.stages=%ld", l->p);
    snprintf(keys[2], sizeof keys[2], "strategy.data_parallel=%ld", l->d);
    snprintf(keys[3], sizeof keys[3], "model.batch=%ld", l->m * l->mbs);
    snprintf(keys[4], sizeof keys[4], "strategy.micro_batches=%ld", l->m);
    char bucket[16] = "";
    if (l->bucket_mb)
        snprintf(bucket, sizeof bucket, "-b%d", l->bucket_mb);
    snprintf(keys[5], sizeof keys[5], "run.name=%.200s-t%ldp%ldd%ld-mb%ldx%ld-z%d%s%s%s", name,
             l->t, l->p, l->d, l->mbs, l->m, l->zero, bucket, l->rc ? "-" : "", rc_names[l->rc]);
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

/* A layout's check under way: its child (cli_dry_run_start), or the error its scenario
 * gave when it did not load. */
typedef struct fit_check {
    cli_dry_t dry;
    dt_err_t err;
    int loaded;
} fit_check_t;

/* Starts the check of a layout's memory against the device's, as `dtsim check` finds it (no
 * simulation). sc: a scenario's room, free again when this returns. */
static void fit_start(const plan_layout_t *l, scenario_t *sc, const char *base,
                      const plan_opts_t *o, const char *name, const char *argv0, fit_check_t *c)
{
    c->err.msg[0] = '\0';
    c->loaded = load_layout(sc, base, o, l, name, &c->err) == DT_OK;
    if (c->loaded)
        cli_dry_run_start(sc, argv0, &c->dry);
}

/* The check's answer: into l->fits, and l->memory says how full or what does not fit. */
static void fit_finish(plan_layout_t *l, fit_check_t *c, const char *base)
{
    char memory[512] = "";
    l->fits = 0;
    if (c->loaded && cli_dry_run_finish(&c->dry, memory, sizeof memory, &c->err) == DT_OK) {
        l->fits = 1;
        snprintf(l->memory, sizeof l->memory, "%s", memory);
        return;
    }
    /* "cluster.device: does not fit: ...; set run.allow_oversubscribed_memory = yes to
     * time it anyway": the plan says what does not fit, and drops it */
    const char *why = without_path(c->err.msg, base);
    if (!strncmp(why, "cluster.device: ", 16))
        why += 16;
    snprintf(l->memory, sizeof l->memory, "%s", why);
    char *hint = strstr(l->memory, "; set run.allow_oversubscribed_memory");
    if (hint)
        *hint = '\0';
}

static void fit_one(plan_layout_t *l, scenario_t *sc, const char *base, const plan_opts_t *o,
                    const char *name, const char *argv0)
{
    fit_check_t c;
    fit_start(l, sc, base, o, name, argv0, &c);
    fit_finish(l, &c, base);
}

/* Each layout's fit, o->jobs checks at once (each is a child process). */
static void plan_fit(plan_layout_t *l, long n, const char *base, const plan_opts_t *o,
                     const char *name, const char *argv0)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    int slots = o->jobs > 1 ? o->jobs : 1;
    fit_check_t *c = dt_malloc(sizeof *c * (size_t)slots);
    for (long i = 0; i < n + slots; i++) {
        if (i >= slots && i - slots < n) /* the oldest first: answers in the listed order */
            fit_finish(&l[i - slots], &c[(i - slots) % slots], base);
        if (i < n)
            fit_start(&l[i], sc, base, o, name, argv0, &c[i % slots]);
    }
    free(c);
    free(sc);
}

/* The rows that fit with more saved than top, the last row of a layout whose most saving
 * row (ZeRO-1 with replicas, else ZeRO-0; no recomputation) does not fit: ZeRO stage z =
 * top's up to 3 (with replicas) and recompute none, selective (a profile with attention
 * cores) or full, each (z, rc) that fits when neither (z - 1, rc) nor a lesser rc at z does
 * (more ZeRO or more recomputation only costs time). Into out (at most max); returns how
 * many. */
static long plan_retry(const plan_layout_t *top, int attention, scenario_t *sc, const char *base,
                       const plan_opts_t *o, const char *name, const char *argv0,
                       plan_layout_t *out, long max)
{
    /* hopeless when the most saving (the highest stage with full, or selective, which
     * may keep less) does not fit: one or two checks, not up to eight */
    int zmax = top->d > 1 ? 3 : 0;
    plan_layout_t probe = *top;
    probe.zero = zmax;
    probe.rc = SIM_RECOMPUTE_FULL;
    fit_one(&probe, sc, base, o, name, argv0);
    if (!probe.fits && attention) {
        probe.rc = SIM_RECOMPUTE_SELECTIVE;
        fit_one(&probe, sc, base, o, name, argv0);
    }
    if (!probe.fits)
        return 0;
    long k = 0;
    int least = SIM_RECOMPUTE_FULL + 1; /* the least recomputation that fits so far */
    for (int z = top->zero; z <= zmax && least > 0; z++)
        for (int rc = 0; rc < least && k < max; rc++) {
            if ((z == top->zero && rc == 0) || (rc == SIM_RECOMPUTE_SELECTIVE && !attention))
                continue;
            out[k] = *top;
            out[k].zero = z;
            out[k].rc = (sim_recompute_t)rc;
            fit_one(&out[k], sc, base, o, name, argv0);
            if (out[k].fits) {
                k++;
                least = rc;
            }
        }
    return k;
}

/* At most (3 + 1) stages x 3 recomputations a layout's retries list. */
#define PLAN_MAX_RETRIES 12

/* A layout's retries under way in a child process (plan -j), which writes how many and the
 * rows to fd. */
typedef struct retry_child {
    pid_t pid; /* 0: none (ran here, rows in the slot) */
    int fd;
    long n;
    plan_layout_t rows[PLAN_MAX_RETRIES];
} retry_child_t;

static void retry_start(retry_child_t *c, const plan_layout_t *top, int attention, scenario_t *sc,
                        const char *base, const plan_opts_t *o, const char *name,
                        const char *argv0)
{
    int fds[2];
    c->pid = 0;
    fflush(NULL);
    if (pipe(fds) == 0 && (c->pid = fork()) == 0) {
        close(fds[0]);
        long n = plan_retry(top, attention, sc, base, o, name, argv0, c->rows, PLAN_MAX_RETRIES);
        int ok = write(fds[1], &n, sizeof n) == (ssize_t)sizeof n;
        for (long i = 0; ok && i < n; i++)
            ok = write(fds[1], &c->rows[i], sizeof c->rows[i]) == (ssize_t)sizeof c->rows[i];
        _exit(ok ? 0 : 1);
    }
    if (c->pid > 0) {
        close(fds[1]);
        c->fd = fds[0];
        return;
    }
    if (c->pid < 0) { /* no child: here, one after the other */
        close(fds[0]);
        close(fds[1]);
        c->pid = 0;
    }
    c->n = plan_retry(top, attention, sc, base, o, name, argv0, c->rows, PLAN_MAX_RETRIES);
}

/* Reads n bytes (a child's answer), 0 when they all came. */
static int read_all(int fd, void *p, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void retry_finish(retry_child_t *c)
{
    if (!c->pid)
        return;
    if (read_all(c->fd, &c->n, sizeof c->n) || c->n < 0 || c->n > PLAN_MAX_RETRIES ||
        read_all(c->fd, c->rows, sizeof c->rows[0] * (size_t)c->n))
        c->n = 0; /* a child that died: its retries are lost, the layout stays dropped */
    close(c->fd);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    c->pid = 0;
}

/* The layouts of l (n, as enumerated and fitted) into out (at most max), each layout's rows
 * followed by its retries (plan_retry) when the most saving of them does not fit; o->jobs
 * layouts' retries at once, each in a child process. Returns how many went to out. */
static long plan_more(const plan_layout_t *l, long n, int attention, const char *base,
                      const plan_opts_t *o, const char *name, const char *argv0,
                      plan_layout_t *out, long max)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    long *tops = dt_malloc(sizeof *tops * (size_t)(n + 1)), n_tops = 0;
    for (long i = 0; i < n; i++) {
        int last = i + 1 == n || l[i + 1].t != l[i].t || l[i + 1].p != l[i].p ||
                   l[i + 1].d != l[i].d || l[i + 1].mbs != l[i].mbs;
        if (last && !l[i].fits)
            tops[n_tops++] = i;
    }
    int slots = o->jobs > 1 ? o->jobs : 1;
    retry_child_t *c = dt_malloc(sizeof *c * (size_t)slots);
    long k = 0, started = 0, done = 0;
    for (long i = 0; i < n && k < max; i++) {
        out[k++] = l[i];
        if (done == n_tops || tops[done] != i)
            continue;
        while (started < n_tops && started < done + slots) {
            retry_start(&c[started % slots], &l[tops[started]], attention, sc, base, o, name,
                        argv0);
            started++;
        }
        retry_child_t *r = &c[done++ % slots];
        retry_finish(r);
        for (long j = 0; j < r->n && k < max; j++)
            out[k++] = r->rows[j];
    }
    while (done < started) /* out was full: the children still end */
        retry_finish(&c[done++ % slots]);
    free(c);
    free(tops);
    free(sc);
    return k;
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
        if (l[i].d > 1 && !l[i].zero && l[i].fits && k < max) {
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
    }
    sqlite3_finalize(st);
    if (!found || in->runs < 1 || in->runs > PLAN_MAX_RUNS || !(in->global_batch > 0) ||
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
    int shard = 0, stage = 0;
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
                         "'model.recompute')",
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
    printf("%-30s %s\n", "layout", "memory (dtsim check)");
    for (long i = 0; i < n; i++) {
        layout_name(&l[i], name, sizeof name);
        printf("%-30s %s %s\n", name, l[i].fits ? "fits:" : "dropped:",
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
           "micro-batches, z ZeRO stage, b%d gradient buckets of %d MB if any, then the "
           "recomputation if any):\n",
           in->title, PLAN_BUCKET_MB, PLAN_BUCKET_MB);
    printf("%-4s %-30s %6s %12s %10s %10s %10s %11s %12s %6s %10s %12s %10s", "rank", "layout",
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
        printf("%-4ld %-30s %6lld %12.6g %10.4g %10s %10.4g %11s %12.4g %6s %10s %12s %10s",
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
    if (finished < in->runs) {
        char again[sizeof in->options + PATH_MAX + 64];
        snprintf(again, sizeof again, "%s", in->options);
        append_word(again, sizeof again, "--db");
        append_word(again, sizeof again, db);
        printf("PARTIAL: %ld of %ld layouts simulated, the ranking is of those; to simulate the "
               "rest: dtsim plan %s --resume\n",
               finished, in->runs, again);
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
    long blocks = profile_blocks(&prof);
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
    sim_model_profile_free(&prof);
    if (o.tokens > 0 && !(in->tokens_per_sample > 0)) {
        free(in);
        return cli_usage_error("plan", "--tokens %s: profile %s counts no tokens per sample "
                                       "(its sample: \"%s\")",
                               o.tokens_text, name + 5, sample);
    }

    plan_layout_t *l = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *l), *more = NULL, *ranked = NULL;
    int *run = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *run);
    long *todo = NULL;
    char base[PATH_MAX] = "";
    scenario_t *list = NULL;
    long n = plan_enumerate(&o, blocks, splits, l, PLAN_MAX_LAYOUTS);
    rc = CLI_EXIT_USAGE;
    if (!n) {
        cli_usage_error("plan",
                        "no layout of %ld devices (tensor 1, 2, 4, 8 of at most %ld "
                        "per server, stages dividing %ld layers) divides the global "
                        "batch of %ld",
                        o.devices, o.per_server, blocks, o.global_batch);
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
    plan_fit(l, n, base, &o, name, argv[0]);
    more = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *more);
    n = plan_more(l, n, attention, base, &o, name, argv[0], more, PLAN_MAX_LAYOUTS);
    n = plan_buckets(more, n, l, PLAN_MAX_LAYOUTS);
    long fit = 0, runs = 0;
    for (long i = 0; i < n; i++) {
        fit += l[i].fits;
        run[i] = l[i].fits && runs < o.max_runs;
        runs += run[i];
    }
    printf("plan: %s on %ld x %s, global batch %ld, %s: %ld layouts, %ld fit, %ld to "
           "simulate\n",
           name + 5, o.devices, o.device, o.global_batch, o.precision, n, fit, runs);
    print_list(l, n);
    fflush(stdout);
    if (!fit) { /* the list above says what each would hold */
        fprintf(stderr,
                "dtsim plan: none of the %ld layouts of %s on %ld x %s fits its memory (the "
                "list says what each holds): more --devices, a --device with more memory, or "
                "--set run.allow_oversubscribed_memory=yes to time them anyway\n",
                n, name + 5, o.devices, o.device);
        goto done; /* rc: CLI_EXIT_USAGE */
    }
    rc = CLI_EXIT_OK;
    if (o.no_run || !runs)
        goto done;

    /* the default database's folder is made when missing, as `dtsim run` makes it */
    if (!strcmp(o.db, DEFAULT_DB) && mkdir("results", 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dtsim plan: cannot create results/ for %s: %s\n", DEFAULT_DB,
                strerror(errno));
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    in->runs = runs;
    plan_options_text(&o, profile, in->options, sizeof in->options);

    /* --resume: the newest stored plan of these options, and which of its layouts finished
     * (run index k is the k-th fitting layout, as listed, in the plan and in its resumptions) */
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
            if (st == DT_OK && was->runs != runs)
                st = dt_err_input(&err, "%s: the plan of sweep %s simulates %ld layouts, these "
                                        "options %ld", o.db, sweep, was->runs, runs);
            free(was);
        }
        if (st) {
            fprintf(stderr, "dtsim plan: --resume: %s\n", err.msg);
            rc = CLI_EXIT_USAGE;
            goto done;
        }
    }
    if (o.resume && sweep[0])
        printf("plan: resuming sweep %s of %s: %ld of %ld layouts finished, %ld to simulate\n",
               sweep, o.db, stored, runs, runs - stored);
    else if (o.resume)
        fprintf(stderr, "dtsim plan: --resume: no plan of these options in %s: simulating all "
                        "%ld layouts\n", o.db, runs);

    /* the layouts without a finished run as one sweep (continuing the stored one), each under
     * its index in the whole plan */
    list = dt_malloc(sizeof *list * (size_t)runs);
    todo = dt_malloc(sizeof *todo * (size_t)runs);
    long k = 0;
    for (long i = 0, at = 0; i < n; i++) {
        if (!run[i])
            continue;
        if (!(ranked && ranked[at].run)) {
            if (load_layout(&list[k], base, &o, &l[i], name, &err)) {
                fprintf(stderr, "dtsim plan: %s\n", err.msg); /* it loaded a moment ago */
                rc = CLI_EXIT_USAGE;
                goto done;
            }
            todo[k++] = at;
        }
        at++;
    }
    char stored_id[sizeof sweep]; /* sweep is the sweep's answer, cleared as it starts */
    snprintf(stored_id, sizeof stored_id, "%s", sweep);
    cli_sweep_opts_t so = {.id = stored_id, .index = todo, .label = "plan", .done_before = stored,
                           .total = runs};
    if (o.time_limit > 0)
        so.deadline = t0 + o.time_limit;
    cli_param_t params[PLAN_PARAMS];
    char texts[PLAN_PARAMS][32];
    plan_params(in, params, texts);
    so.params = params;
    so.n_params = PLAN_PARAMS;
    if (k > 0) {
        rc = cli_sweep_run_opts(list, k, name, o.jobs, argv[0], sweep, sizeof sweep, &so);
        if (rc == CLI_EXIT_USAGE || !sweep[0])
            goto done;
    }
    free(ranked);
    long finished = 0;
    if (plan_rank_read(o.db, sweep, 0, in, &ranked, &finished, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        rc = CLI_EXIT_RUN;
        goto done;
    }
    print_ranking(in, ranked, finished, o.top, o.tokens, &o.goodput, o.db, best);
    if (best)
        snprintf(best->device, sizeof best->device, "%s", device_name);
    fflush(stdout);
    if (so.stopped) {
        fprintf(stderr, "dtsim plan: %s: %ld of %ld layouts simulated (the ranking is "
                        "PARTIAL); --resume simulates the rest\n",
                so.stopped == SIGINT    ? "interrupted (SIGINT)"
                : so.stopped == SIGTERM ? "stopped (SIGTERM)"
                : so.stopped > 0        ? "stopped by a signal"
                                        : "the time limit passed",
                finished, runs);
        if (so.stopped > 0)
            rc = 128 + so.stopped;
    }

done:
    if (base[0])
        unlink(base);
    free(list);
    free(todo);
    free(run);
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
    /* several devices or any --option: each planned in turn, then their best side by side */
    if (o.n_device_args > 1 || strchr(o.device, ',') || o.n_option_args) {
        plan_compare_ctx_t ctx = {.o = &o, .argv = argv, .t0 = t0};
        return cli_plan_compare(o.device_args, o.n_device_args, o.option_args, o.n_option_args,
                                o.tokens, plan_compare_one, &ctx);
    }
    return plan_one(o, argv, t0, 0, NULL, NULL, 0);
}
