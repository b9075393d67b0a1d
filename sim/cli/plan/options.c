/* dtsim plan's options: the help text, and argv into plan_opts_t with the checks that need
 * no profile (plan_opts_parse). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_sweep.h"
#include "cli_util.h"
#include "plan_impl.h"
#include "scenario.h"

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

/* The long options; each one's value is its code in plan_opts_parse's cases. */
static const struct option plan_longs[] = {
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

/* What an option's function returns for a code it does not take. */
enum { OPT_NOT_MINE = -2 };

/* The entry of plan_longs whose value is code. */
static int at_of(int code)
{
    int i = 0;
    while (plan_longs[i].name && plan_longs[i].val != code)
        i++;
    return i;
}

/* The options --show takes (and help and getopt's errors): the others make a plan. */
static int show_takes(int code)
{
    return code == 'd' || code == 't' || code == 'o' || code == 'W' || code == 'w' ||
           code == 'M' || code == 'B' || code == 'r' || code == 'h' || code == ':' || code == '?';
}

/* "300e9", "300B", "1.5T", "2T": a count of tokens (k 10^3, M 10^6, B or G 10^9, T 10^12);
 * 0 when it is one above 0, -1 otherwise. */
static int parse_tokens(const char *text, double *out)
{
    char *end;
    errno = 0;
    double count = strtod(text, &end);
    if (end == text || errno)
        return -1;
    static const char suffixes[] = "kMBGT";
    static const double scale[] = {1e3, 1e6, 1e9, 1e9, 1e12};
    if (*end) {
        const char *at = strchr(suffixes, *end);
        if (!at || end[1])
            return -1;
        count *= scale[at - suffixes];
    }
    if (!isfinite(count) || !(count >= 1))
        return -1;
    *out = count;
    return 0;
}

/* "8" or "4,8": up to PLAN_MAX_LIST integers in [1, most] into values (*n of them,
 * increasing), each once; -1 otherwise. */
static int parse_list(const char *text, long most, long *values, int *n)
{
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    char *save = NULL;
    for (char *word = strtok_r(buf, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
        long value;
        if (*n == PLAN_MAX_LIST || cli_parse_long(word, 1, most, &value))
            return -1;
        for (int i = 0; i < *n; i++)
            if (values[i] == value)
                return -1;
        int at = (*n)++; /* in increasing order, as the plan enumerates */
        for (; at > 0 && values[at - 1] > value; at--)
            values[at] = values[at - 1];
        values[at] = value;
    }
    return *n ? 0 : -1;
}

static int powers_of_two(const long *values, int n)
{
    for (int i = 0; i < n; i++)
        if (values[i] & (values[i] - 1))
            return 0;
    return 1;
}

static void opts_defaults(plan_opts_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->precision = "bf16";
    opts->db = DEFAULT_DB;
    opts->per_server = 8;
    opts->steps = 1;
    opts->jobs = 1;
    opts->top = 10;
    opts->max_runs = PLAN_MAX_RUNS;
    cli_plan_goodput_defaults(&opts->goodput);
}

/* A flag, or an option whose value is kept as its text, into opts: 0, the usage error's exit
 * code, or OPT_NOT_MINE. */
static int opt_text(plan_opts_t *opts, int code)
{
    switch (code) {
    case 'p':
        opts->profile = optarg;
        return 0;
    case 'D':
        if (opts->n_device_args == CLI_PLAN_MAX_OPTIONS)
            return cli_usage_error("plan", "more than %d --device options", CLI_PLAN_MAX_OPTIONS);
        opts->device = opts->device_args[opts->n_device_args++] = optarg;
        return 0;
    case 'O':
        if (opts->n_option_args == CLI_PLAN_MAX_OPTIONS)
            return cli_usage_error("plan", "more than %d --option options", CLI_PLAN_MAX_OPTIONS);
        opts->option_args[opts->n_option_args++] = optarg;
        return 0;
    case 'P':
        opts->precision = optarg;
        return 0;
    case 'N':
        opts->no_run = 1;
        return 0;
    case 'X':
        opts->no_prune = 1;
        return 0;
    case 'R':
        opts->resume = 1;
        return 0;
    case 'W':
        opts->show = 1;
        return 0;
    case 'w':
        opts->sweep = optarg;
        return 0;
    case 'd':
        if (!optarg[0])
            return cli_usage_error("plan", "--db needs a path");
        opts->db = optarg;
        return 0;
    case 's':
        if (opts->n_sets == PLAN_MAX_SETS)
            return cli_usage_error("plan", "more than %d --set options", PLAN_MAX_SETS);
        opts->sets[opts->n_sets++] = optarg;
        return 0;
    }
    return OPT_NOT_MINE;
}

/* An integer option (code n, b, S, a, k, j, t or m) in [1, its most] into opts: 0, or the
 * usage error's exit code. named: "--devices". */
static int opt_number(plan_opts_t *opts, int code, const char *named)
{
    long most = code == 'j' ? CLI_SWEEP_MAX_JOBS : code == 'm' ? PLAN_MAX_RUNS : 1000000000L;
    long value;
    if (cli_parse_long(optarg, 1, most, &value))
        return cli_usage_error("plan", "%s %s: expected an integer in [1, %ld]", named, optarg,
                               most);
    if (code == 'j') {
        opts->jobs = (int)value;
        return 0;
    }
    long *dst = code == 'n'   ? &opts->devices
                : code == 'b' ? &opts->global_batch
                : code == 'S' ? &opts->per_server
                : code == 'a' ? &opts->heads
                : code == 'k' ? &opts->steps
                : code == 't' ? &opts->top
                              : &opts->max_runs;
    *dst = value;
    return 0;
}

/* An option whose value is parsed (a list, a time, a count, a number, a goodput figure) into
 * opts: 0, the usage error's exit code, or OPT_NOT_MINE. named: "--tensor". */
static int opt_value(plan_opts_t *opts, int code, const char *named)
{
    dt_err_t err;
    switch (code) {
    case 'e':
        if (parse_list(optarg, 8, opts->tensor, &opts->n_tensor) ||
            !powers_of_two(opts->tensor, opts->n_tensor))
            return cli_usage_error("plan", "%s %s: expected %s", named, optarg,
                                   "tensor sizes of 1, 2, 4 or 8 (8, 4,8)");
        return 0;
    case 'g':
        if (parse_list(optarg, 64, opts->stages, &opts->n_stages))
            return cli_usage_error("plan", "%s %s: expected %s", named, optarg,
                                   "stage counts in [1, 64] (16, 8,16)");
        return 0;
    case 'T':
        opts->time_limit_text = optarg;
        if (scenario_parse_time(optarg, &opts->time_limit, &err) || !(opts->time_limit > 0))
            return cli_usage_error("plan", "--time-limit %s: expected a wall time above 0 "
                                           "with a unit (120s, 10min, 2h)", optarg);
        return 0;
    case 'o':
        opts->tokens_text = optarg;
        if (parse_tokens(optarg, &opts->tokens))
            return cli_usage_error("plan", "--tokens %s: expected a count of tokens above 0 "
                                           "(300e9, 300B, 1T)", optarg);
        return 0;
    case 'M':
    case 'B':
    case 'r':
        return cli_plan_goodput_option(&opts->goodput, named + 2, optarg) ? CLI_EXIT_USAGE : 0;
    case 'n':
    case 'b':
    case 'S':
    case 'a':
    case 'k':
    case 'j':
    case 't':
    case 'm':
        return opt_number(opts, code, named);
    }
    return OPT_NOT_MINE;
}

/* The checks of the options as a whole, after the last: 0, or the usage error's exit code. */
static int opts_check(const plan_opts_t *opts, int argc, char **argv)
{
    if (optind < argc)
        return cli_usage_error("plan", "unexpected argument \"%s\"", argv[optind]);
    if (opts->show) {
        if (opts->planning)
            return cli_usage_error("plan", "--show ranks a stored plan: --%s does not go with "
                                           "it (--db, --sweep, --top, --tokens, --mtbf, "
                                           "--ckpt-bandwidth, --restart do)",
                                   opts->planning);
        return 0;
    }
    if (opts->sweep)
        return cli_usage_error("plan", "--sweep %s goes with --show", opts->sweep);
    if (opts->resume && opts->no_run)
        return cli_usage_error("plan", "--resume simulates: --no-run does not go with it");
    if (!opts->profile || !opts->device || !opts->devices || !opts->global_batch)
        return cli_usage_error("plan", "missing %s",
                               !opts->profile   ? "--profile P"
                               : !opts->device  ? "--device D"
                               : !opts->devices ? "--devices N"
                                                : "--global-batch B");
    if (opts->devices > opts->per_server && opts->devices % opts->per_server)
        return cli_usage_error("plan",
                               "--devices %ld is not a whole number of servers of %ld "
                               "(--per-server)",
                               opts->devices, opts->per_server);
    return 0;
}

int plan_opts_parse(plan_opts_t *opts, int argc, char **argv)
{
    opts_defaults(opts);
    int code, at = -1;
    optind = 1;
    opterr = 0;
    while ((code = getopt_long(argc, argv, ":hj:", plan_longs, &at)) != -1) {
        const char *name = argv[optind - 1]; /* the option itself where it takes no value */
        char named[32];
        snprintf(named, sizeof named, "--%s",
                 code == 'j' ? "jobs" : at >= 0 ? plan_longs[at].name : "");
        at = -1;
        if (!opts->planning && !show_takes(code))
            opts->planning = plan_longs[at_of(code)].name;
        if (code == 'h') {
            plan_help();
            return -1;
        }
        int rc = opt_text(opts, code);
        if (rc == OPT_NOT_MINE)
            rc = opt_value(opts, code, named);
        if (rc == OPT_NOT_MINE)
            rc = code == ':' ? cli_usage_error("plan", "%s needs a value", name)
                             : cli_usage_error("plan", "unknown option \"%s\"", name);
        if (rc)
            return rc;
    }
    return opts_check(opts, argc, argv);
}
