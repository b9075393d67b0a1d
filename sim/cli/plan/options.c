/* dtsim plan's options: the help text, and argv into plan_opts_t with the checks that need
 * no profile (plan_opts_parse). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_goodput.h"
#include "cli_sweep.h"
#include "cli_util.h"
#include "plan_help.h"
#include "plan_impl.h"
#include "scenario.h"

/* The help text (help.txt, compiled in as plan_help.h), printed with @DEFAULT_DB@ and
 * @PLAN_MAX_RUNS@ replaced by the values the code uses, so that the text cannot lag them. */
static void plan_help(void)
{
    const char *text = (const char *)plan_help_text;
    for (const char *at; (at = strchr(text, '@'));) {
        fwrite(text, 1, (size_t)(at - text), stdout);
        if (!strncmp(at, "@DEFAULT_DB@", 12)) {
            fputs(DEFAULT_DB, stdout);
            text = at + 12;
        } else if (!strncmp(at, "@PLAN_MAX_RUNS@", 15)) {
            printf("%d", PLAN_MAX_RUNS);
            text = at + 15;
        } else {
            putchar('@');
            text = at + 1;
        }
    }
    fputs(text, stdout);
}

/* The codes of the options of fleets, ownership and sensitivity (opt_fleet). */
enum {
    OPT_RANK_BY = 1000,
    OPT_PURCHASE,
    OPT_AMORTIZE,
    OPT_PUE,
    OPT_HOST_POWER,
    OPT_ELECTRICITY,
    OPT_SENSITIVITY,
    OPT_SENSITIVITY_TOP
};

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
    {"verbose", no_argument, 0, 'v'},
    {"breakdown", no_argument, 0, 'K'},
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
    {"memory-margin", required_argument, 0, 'G'},
    /* fleets, ownership, sensitivity (opt_fleet) */
    {"rank-by", required_argument, 0, OPT_RANK_BY},
    {"purchase", required_argument, 0, OPT_PURCHASE},
    {"amortize", required_argument, 0, OPT_AMORTIZE},
    {"pue", required_argument, 0, OPT_PUE},
    {"host-power", required_argument, 0, OPT_HOST_POWER},
    {"electricity", required_argument, 0, OPT_ELECTRICITY},
    {"sensitivity", required_argument, 0, OPT_SENSITIVITY},
    {"sensitivity-top", required_argument, 0, OPT_SENSITIVITY_TOP},
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
    return code == 'd' || code == 't' || code == 'o' || code == 'W' || code == 'w' || code == 'K' ||
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

/* --memory-margin's value: "4GB" (a size, units as the device files write them) or "10%" (of
 * the device's memory, below 100) into opts; 0 or the usage error's exit code. */
static int parse_margin(plan_opts_t *opts, const char *text)
{
    dt_err_t err;
    size_t len = strlen(text);
    opts->margin_text = text;
    if (len > 1 && text[len - 1] == '%') {
        char *end;
        errno = 0;
        double share = strtod(text, &end) / 100;
        if (end == text + len - 1 && !errno && share >= 0 && share < 1) {
            opts->margin_share = share;
            return 0;
        }
    } else if (scenario_parse_size(text, &opts->margin_bytes, &err) == DT_OK &&
               opts->margin_bytes >= 0) {
        opts->margin_share = -1;
        return 0;
    }
    return cli_usage_error("plan",
                           "--memory-margin %s: expected a size (4GB, 512MB, 0) or a "
                           "share of the device's memory below 100%% (10%%)",
                           text);
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
    opts->top = PLAN_DEFAULT_TOP;
    opts->max_runs = PLAN_MAX_RUNS;
    cli_plan_goodput_defaults(&opts->goodput);
    cli_plan_capex_defaults(&opts->capex);
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
    case 'v':
        opts->verbose = 1;
        return 0;
    case 'K':
        opts->breakdown = 1;
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
            return cli_usage_error("plan",
                                   "--time-limit %s: expected a wall time above 0 "
                                   "with a unit (120s, 10min, 2h)",
                                   optarg);
        return 0;
    case 'o':
        opts->tokens_text = optarg;
        if (parse_tokens(optarg, &opts->tokens))
            return cli_usage_error("plan",
                                   "--tokens %s: expected a count of tokens above 0 "
                                   "(300e9, 300B, 1T)",
                                   optarg);
        return 0;
    case 'G':
        return parse_margin(opts, optarg);
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

/* The options of fleets, ownership and sensitivity (OPT_RANK_BY to OPT_SENSITIVITY_TOP) into
 * opts: 0, the usage error's exit code, or OPT_NOT_MINE. named: "--pue". */
static int opt_fleet(plan_opts_t *opts, int code, const char *named)
{
    static const char *const ranks[] = {"time", "cost", "capex", "energy"};
    double *dst = code == OPT_PURCHASE     ? &opts->capex.purchase
                  : code == OPT_PUE        ? &opts->capex.pue
                  : code == OPT_HOST_POWER ? &opts->capex.host_w
                                           : &opts->capex.kwh_price;
    double lo = code == OPT_PUE ? 1 : 0, hi = code == OPT_PUE ? 10 : 1e12;
    size_t len = strlen(optarg);
    if (code >= OPT_AMORTIZE && code <= OPT_ELECTRICITY && !opts->capex_given)
        opts->capex_given = plan_longs[at_of(code)].name;
    switch (code) {
    case OPT_RANK_BY:
        for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++)
            if (!strcmp(optarg, ranks[i])) {
                opts->rank_by = (plan_rank_t)i;
                opts->rank_by_given = 1;
                return 0;
            }
        return cli_usage_error("plan", "--rank-by %s: expected time, cost, capex or energy",
                               optarg);
    case OPT_AMORTIZE: /* "5y", "1826d", "43830h" */
        if (len > 1 && optarg[len - 1] == 'y') {
            char num[64];
            snprintf(num, sizeof num, "%.*s", (int)(len - 1), optarg);
            if (len - 1 < sizeof num &&
                !cli_parse_double(num, 1e-3, 1e3, &opts->capex.amortize_s)) {
                opts->capex.amortize_s *= 365.25 * 86400;
                return 0;
            }
        } else if (!cli_parse_duration(optarg, &opts->capex.amortize_s) &&
                   opts->capex.amortize_s > 0) {
            return 0;
        }
        return cli_usage_error("plan", "%s %s: expected a period above 0 (5y, 1826d, 43830h)",
                               named, optarg);
    case OPT_SENSITIVITY: /* "10%" */
        if (len > 1 && optarg[len - 1] == '%') {
            char num[64];
            snprintf(num, sizeof num, "%.*s", (int)(len - 1), optarg);
            if (len - 1 < sizeof num && !cli_parse_double(num, 0.1, 90, &opts->sensitivity)) {
                opts->sensitivity /= 100;
                return 0;
            }
        }
        return cli_usage_error("plan", "%s %s: expected a share in [0.1%%, 90%%] (10%%)", named,
                               optarg);
    case OPT_SENSITIVITY_TOP:
        if (cli_parse_long(optarg, 1, 16, &opts->sensitivity_top))
            return cli_usage_error("plan", "%s %s: expected an integer in [1, 16]", named, optarg);
        return 0;
    case OPT_PURCHASE:
    case OPT_PUE:
    case OPT_HOST_POWER:
    case OPT_ELECTRICITY:
        if (cli_parse_double(optarg, lo, hi, dst))
            return cli_usage_error("plan", "%s %s: expected %s", named, optarg,
                                   code == OPT_PURCHASE     ? "a device's price in dollars (30000)"
                                   : code == OPT_PUE        ? "a PUE in [1, 10] (1.2)"
                                   : code == OPT_HOST_POWER ? "watts a device, 0 or more (575)"
                                                            : "dollars a kWh, 0 or more (0.08)");
        return 0;
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
            return cli_usage_error("plan",
                                   "--show ranks a stored plan: --%s does not go with "
                                   "it (--db, --sweep, --top, --tokens, --mtbf, "
                                   "--ckpt-bandwidth, --restart do)",
                                   opts->planning);
        return 0;
    }
    if (opts->sweep)
        return cli_usage_error("plan", "--sweep %s goes with --show", opts->sweep);
    if (opts->resume && opts->no_run)
        return cli_usage_error("plan", "--resume simulates: --no-run does not go with it");
    if (opts->sensitivity_top && !(opts->sensitivity > 0))
        return cli_usage_error("plan", "--sensitivity-top %ld goes with --sensitivity",
                               opts->sensitivity_top);
    if (opts->sensitivity > 0 && opts->no_run)
        return cli_usage_error("plan", "--sensitivity simulates: --no-run does not go with it");
    /* an --option may give its own device and device count (compare.c checks each) */
    int own = opts->n_option_args > 0;
    if (!opts->profile || (!opts->device && !own) || (!opts->devices && !own) ||
        !opts->global_batch)
        return cli_usage_error("plan", "missing %s",
                               !opts->profile           ? "--profile P"
                               : !opts->device && !own  ? "--device D"
                               : !opts->devices && !own ? "--devices N"
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
                 code == 'j' ? "jobs"
                 : at >= 0   ? plan_longs[at].name
                             : "");
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
            rc = opt_fleet(opts, code, named);
        if (rc == OPT_NOT_MINE)
            rc = code == ':' ? cli_usage_error("plan", "%s needs a value", name)
                             : cli_usage_error("plan", "unknown option \"%s\"", name);
        if (rc)
            return rc;
    }
    return opts_check(opts, argc, argv);
}
