/* dtsim plan's comparison of devices and cluster options (cli_plan_compare). A comparison
 * plans each device x option as a plan of its own (its own sweep, the option's name in its
 * runs' names, so that --resume and --show find each), and reads each plan's best row back
 * as the ranking printed it: the final table holds the same figures as the plans above it,
 * from the same code (cli_plan_row_compute). An option may bring its own device and device
 * count (device=NAME, devices=N: a mixed fleet, each planned on its own N) and purchase price;
 * the table ranks the options by time, rental cost, ownership cost or energy (--rank-by). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "plan_impl.h"

/* --option's short key names and the scenario keys they stand for. */
static const struct {
    const char *name, *key;
} option_keys[] = {
    {"bandwidth", "cluster.bandwidth"},
    {"uplink", "cluster.uplink_bandwidth"},
    {"latency", "cluster.latency"},
    {"uplink_latency", "cluster.uplink_latency"},
    {"platform", "cluster.platform"},
    {"price", "cluster.price_per_device_hour"},
    {"port_price", "cluster.price_per_port_hour"},
};

/* An option's own key, not a scenario key: devices=N (cluster.workers, workers), device=NAME
 * (cluster.device) and purchase=$ into opt. 1 when it was one (*rc: 0, or the usage error's
 * exit code), 0 otherwise. text: the whole --option, for the error. */
static int option_own_key(cli_plan_option_t *opt, const char *text, const char *key,
                          const char *value, int *rc)
{
    *rc = 0;
    if (!strcmp(key, "devices") || !strcmp(key, "workers") || !strcmp(key, "cluster.workers")) {
        if (cli_parse_long(value, 1, 1000000000L, &opt->devices))
            *rc = cli_usage_error("plan",
                                  "--option %s: %s=%s: expected a device count in "
                                  "[1, 1000000000]",
                                  text, key, value);
        return 1;
    }
    if (!strcmp(key, "device") || !strcmp(key, "cluster.device")) {
        if (strlen(value) >= sizeof opt->device)
            *rc = cli_usage_error("plan", "--option %s: %s: a device name too long", text, key);
        snprintf(opt->device, sizeof opt->device, "%.511s", value);
        opt->named_device = 1;
        return 1;
    }
    if (!strcmp(key, "purchase")) {
        if (cli_parse_double(value, 0, 1e12, &opt->purchase))
            *rc = cli_usage_error("plan",
                                  "--option %s: purchase=%s: expected a device's price "
                                  "in dollars (30000)",
                                  text, value);
        return 1;
    }
    return 0;
}

/* "NAME:KEY=VALUE[,KEY=VALUE...]" into opt's name, sets and own keys (option_own_key; else
 * the device is the caller's); 0, or the one-line usage error printed and CLI_EXIT_USAGE. */
static int option_parse(const char *text, cli_plan_option_t *opt)
{
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : 0;
    /* the name goes into run names and sweep ids: plain characters only */
    if (!colon || !len || len >= sizeof opt->name ||
        strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
        return cli_usage_error("plan",
                               "--option %s: expected NAME:KEY=VALUE[,KEY=VALUE...] "
                               "with a NAME of letters, digits, _ . - (at most %zu)",
                               text, sizeof opt->name - 1);
    memcpy(opt->name, text, len);
    opt->name[len] = '\0';
    opt->n_sets = 0;
    opt->devices = 0;
    opt->named_device = 0;
    opt->purchase = NAN;
    char *keys = strdup(colon + 1), *save = NULL;
    int rc = 0;
    for (char *kv = strtok_r(keys, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || !eq[1]) {
            rc = cli_usage_error("plan", "--option %s: \"%s\" is not KEY=VALUE", text, kv);
            break;
        }
        *eq = '\0';
        int own = option_own_key(opt, text, kv, eq + 1, &rc);
        if (own || rc)
            continue;
        const char *key = kv;
        for (size_t i = 0; i < sizeof option_keys / sizeof *option_keys; i++)
            if (!strcmp(kv, option_keys[i].name))
                key = option_keys[i].key;
        if (!strchr(key, '.'))
            rc = cli_usage_error("plan",
                                 "--option %s: unknown key \"%s\" (devices, device, "
                                 "purchase, bandwidth, uplink, latency, uplink_latency, "
                                 "platform, price, port_price or a scenario key "
                                 "SECTION.KEY)",
                                 text, kv);
        else if (opt->n_sets == CLI_PLAN_OPTION_KEYS)
            rc = cli_usage_error("plan", "--option %s: more than %d keys", text,
                                 CLI_PLAN_OPTION_KEYS);
        else
            snprintf(opt->sets[opt->n_sets++], sizeof opt->sets[0], "%s=%s", key, eq + 1);
    }
    if (!rc && !opt->n_sets && !opt->devices && !opt->named_device && isnan(opt->purchase))
        rc = cli_usage_error("plan", "--option %s: expected NAME:KEY=VALUE[,KEY=VALUE...]", text);
    free(keys);
    return rc;
}

/* A device's short name for an option's name: a file's base name without .ini. */
static void device_short(const char *device, char *buf, size_t n)
{
    const char *base = strrchr(device, '/');
    base = base ? base + 1 : device;
    size_t len = strlen(base);
    if (len > 4 && !strcmp(base + len - 4, ".ini"))
        len -= 4;
    snprintf(buf, n, "%.*s", (int)len, base);
}

/* What --rank-by ranks the options' table by, and the row's figure of it (lower first; NAN
 * ranks last). */
static const char *const rank_titles[] = {
    [PLAN_RANK_TIME] = "step time (s/step; with --tokens, the days to train)",
    [PLAN_RANK_COST] = "rental cost ($/M tokens, else $/1k samples)",
    [PLAN_RANK_CAPEX] = "ownership cost (own $/M tokens, else own $/1k samples)",
    [PLAN_RANK_ENERGY] = "energy at the wall (site kJ/step)",
};

static double rank_key(plan_rank_t by, const cli_plan_row_t *row)
{
    if (!row->run)
        return NAN;
    switch (by) {
    case PLAN_RANK_COST:
        return isnan(row->per_m_tokens) ? row->per_1k_samples : row->per_m_tokens;
    case PLAN_RANK_CAPEX:
        return isnan(row->own_per_m) ? row->own_per_1k : row->own_per_m;
    case PLAN_RANK_ENERGY:
        return row->site_kj;
    default:
        return row->step_s;
    }
}

/* The table's order (by the ranked figure, NAN last, a tie in the options' order). */
static plan_rank_t rank_by;
static const cli_plan_row_t *rank_rows;
static int by_rank(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    double x = rank_key(rank_by, &rank_rows[i]), y = rank_key(rank_by, &rank_rows[j]);
    if (isnan(x) != isnan(y))
        return isnan(x) ? 1 : -1;
    if (!isnan(x) && x != y)
        return (x > y) - (x < y);
    return (i > j) - (i < j);
}

/* One option's row of the table at rank (0: none ran), its best layout's figures, or why it
 * has none; own: the ownership columns. */
static void table_row(long rank, const cli_plan_option_t *opt, const cli_plan_row_t *row, int rc,
                      double tokens, int own)
{
    char dev[64], cells[8][32];
    /* the plan's own device: an --option may set cluster.device (with its price) */
    if (row->device[0])
        snprintf(dev, sizeof dev, "%s", row->device);
    else
        device_short(opt->device, dev, sizeof dev);
    if (!row->run) {
        printf("%-4s %-20s %-14s %6ld %s\n", "-", opt->name, dev, opt->devices,
               rc ? "no layout ran (see its plan above)" : "not planned");
        return;
    }
    /* the columns of the plan's ranking, in its order, less memory and peak */
    printf("%-4ld %-20s %-14s %6ld %-40s %6lld %12.6g %10s %12.4g %10s %10s", rank, opt->name, dev,
           opt->devices, row->layout, row->run, row->step_s,
           plan_cell(cells[0], 32, "%.4g", row->tokens_s), row->tflops_dev,
           plan_cell(cells[1], 32, "%.4g", row->kj_step),
           plan_cell(cells[2], 32, "%.4g", row->per_m_tokens));
    if (own) {
        printf(" %12s %10s %12s", plan_cell(cells[3], 32, "%.4g", row->site_kj),
               plan_cell(cells[4], 32, "%.4g", row->own_hour),
               plan_cell(cells[5], 32, "%.4g",
                         isnan(row->own_per_m) ? row->own_per_1k : row->own_per_m));
        if (tokens > 0)
            printf(" %10s %11s", plan_cell(cells[6], 32, "%.4g", row->site_mwh),
                   plan_cell(cells[7], 32, "%.4g", row->own_dollars));
    }
    plan_row_tail(row, tokens);
}

static void print_table(const plan_opts_t *po, const cli_plan_option_t *opts, cli_plan_row_t *rows,
                        const int *rcs, int n, int own)
{
    double tokens = po->tokens;
    int *order = calloc((size_t)n, sizeof *order);
    for (int i = 0; i < n; i++) {
        order[i] = i;
        if (rows[i].run)
            cli_plan_capex_compute(&po->capex, opts[i].devices,
                                   isnan(opts[i].purchase) ? po->capex.purchase : opts[i].purchase,
                                   tokens, &rows[i]);
    }
    rank_by = po->rank_by;
    rank_rows = rows;
    qsort(order, (size_t)n, sizeof *order, by_rank);
    printf("\nbest layout of each option, ranked by %s; devices and --option side by side, "
           "each plan's rank 1 above:\n",
           rank_titles[po->rank_by]);
    printf("%-4s %-20s %-14s %6s %-40s %6s %12s %10s %12s %10s %10s", "rank", "option", "device",
           "N", "layout", "run", "s/step", "tokens/s", "TFLOP/s/dev", "kJ/step", "$/M tokens");
    if (own) {
        printf(" %12s %10s %12s", "site kJ/step", "own $/h", "own $/M tok");
        if (tokens > 0)
            printf(" %10s %11s", "site MWh", "own $");
    }
    if (tokens > 0)
        printf(" %9s %9s %11s", "days", "MWh", "$");
    printf(" %10s %8s", "ckpt/steps", "goodput");
    if (tokens > 0)
        printf(" %10s %11s", "days+fail", "$+fail");
    printf("\n");
    for (int k = 0, rank = 0; k < n; k++) {
        int i = order[k];
        table_row(rows[i].run ? ++rank : 0, &opts[i], &rows[i], rcs[i], tokens, own);
    }
    printf("each option's fastest layout on its N devices; $: cluster.price_per_device_hour and "
           "cluster.price_per_port_hour (- without); goodput: the useful share of wall time "
           "with failures and Daly's checkpoint interval (ckpt/steps)%s\n",
           tokens > 0 ? "; days+fail, $+fail: to train --tokens with failures" : "");
    if (own)
        printf("site kJ/step: the run's devices and links plus %.6g W of host a device, x PUE "
               "%.6g; own $/h: the N devices' purchase (purchase=, --purchase; - without) over "
               "%.6g years plus the site's power at $%.6g a kWh (--amortize, --host-power, "
               "--pue, --electricity)%s\n",
               po->capex.host_w, po->capex.pue, po->capex.amortize_s / (365.25 * 86400),
               po->capex.kwh_price,
               tokens > 0 ? "; site MWh, own $: to train --tokens without failures" : "");
    free(order);
}

/* The devices, each --device value split at its commas, into devices (*n of them): 0, or
 * the usage error's exit code. */
static int devices_split(const char *const *device_args, int n_device_args, char (*devices)[512],
                         int *n)
{
    *n = 0;
    for (int i = 0; i < n_device_args; i++) {
        const char *at = device_args[i];
        for (;;) {
            size_t len = strcspn(at, ",");
            if (!len || len >= sizeof devices[0])
                return cli_usage_error("plan", "--device %s: %s", device_args[i],
                                       len ? "a device name too long" : "an empty device name");
            if (*n == CLI_PLAN_MAX_OPTIONS)
                return cli_usage_error("plan", "--device %s: more than %d devices", device_args[i],
                                       CLI_PLAN_MAX_OPTIONS);
            snprintf(devices[(*n)++], sizeof devices[0], "%.*s", (int)len, at);
            if (!at[len])
                break;
            at += len + 1;
        }
    }
    return 0;
}

/* Each --option into kinds, each name once: 0, or the usage error's exit code. */
static int kinds_parse(const char *const *option_args, int n_option_args, cli_plan_option_t *kinds)
{
    for (int k = 0; k < n_option_args; k++) {
        if (option_parse(option_args[k], &kinds[k]))
            return CLI_EXIT_USAGE;
        for (int j = 0; j < k; j++)
            if (!strcmp(kinds[j].name, kinds[k].name))
                return cli_usage_error("plan", "--option %s: the name %s is given twice",
                                       option_args[k], kinds[k].name);
    }
    return 0;
}

/* Each option's device and device count against the others: its own device (device=) goes
 * with one --device or none (several are crossed with every option), its count (devices=, or
 * --devices) is a whole number of servers, and what --rank-by ranks by is priced. 0, or the
 * usage error's exit code. */
static int kinds_check(const plan_opts_t *po, const cli_plan_option_t *kinds, int n_kinds,
                       int n_devices)
{
    for (int k = 0; k < n_kinds; k++) {
        const cli_plan_option_t *kind = &kinds[k];
        const char *text = po->n_option_args ? po->option_args[k] : NULL;
        long devices = kind->devices ? kind->devices : po->devices;
        int priced = 0;
        for (int i = 0; i < po->n_sets; i++)
            priced |= !strncmp(po->sets[i], "cluster.price_per_device_hour=", 30);
        for (int i = 0; i < kind->n_sets; i++)
            priced |= !strncmp(kind->sets[i], "cluster.price_per_device_hour=", 30);
        if (kind->named_device && n_devices > 1)
            return cli_usage_error("plan",
                                   "--option %s: device= goes with one --device or none "
                                   "(%d are given, each crossed with every option)",
                                   text, n_devices);
        if (!kind->named_device && !n_devices)
            return cli_usage_error("plan",
                                   "--option %s: no device (device=NAME in the option, "
                                   "or --device)",
                                   text);
        if (!devices)
            return cli_usage_error("plan",
                                   "--option %s: no device count (devices=N in the "
                                   "option, or --devices)",
                                   text);
        if (kind->devices && devices > po->per_server && devices % po->per_server)
            return cli_usage_error("plan",
                                   "--option %s: devices=%ld is not a whole number of "
                                   "servers of %ld (--per-server)",
                                   text, devices, po->per_server);
        if (po->rank_by == PLAN_RANK_CAPEX && isnan(kind->purchase) && isnan(po->capex.purchase))
            return cli_usage_error("plan",
                                   "--rank-by capex: %s%s has no purchase price "
                                   "(purchase=DOLLARS in an --option, or --purchase)",
                                   text ? "--option " : "the plan", text ? text : "");
        if (po->rank_by == PLAN_RANK_COST && !priced)
            return cli_usage_error("plan",
                                   "--rank-by cost: %s%s has no rental price (price= "
                                   "in an --option, or --set "
                                   "cluster.price_per_device_hour=DOLLARS)",
                                   text ? "--option " : "the plan", text ? text : "");
    }
    return 0;
}

/* Every device x option into opts (n_kinds options; where --option is not given, n_kinds is
 * 1 and each is the device alone, named after it), named DEVICE-OPTION with several devices;
 * an option with its own device keeps it, and each its own device count or --devices. */
static void options_cross(char (*devices)[512], int n_devices, const cli_plan_option_t *kinds,
                          int n_kinds, int n_option_args, long n_default, cli_plan_option_t *opts)
{
    char dev[64];
    for (int d = 0; d < (n_devices ? n_devices : 1); d++)
        for (int k = 0; k < n_kinds; k++) {
            cli_plan_option_t *opt = &opts[d * n_kinds + k];
            *opt = kinds[k];
            if (!opt->devices)
                opt->devices = n_default;
            if (opt->named_device)
                continue; /* one device at most (kinds_check) */
            snprintf(opt->device, sizeof opt->device, "%.511s", devices[d]);
            device_short(devices[d], dev, sizeof dev);
            if (!n_option_args)
                snprintf(opt->name, sizeof opt->name, "%s", dev);
            else if (n_devices > 1)
                snprintf(opt->name, sizeof opt->name, "%.30s-%.32s", dev, kinds[k].name);
        }
}

/* Everything checked before anything runs: a bad device or key is one line naming its
 * option, and no plan is half made. Each device alone first (an error is the device's),
 * then each option on the first device (an error is the option's). Returns 0, or the exit
 * code. */
static int options_check(char (*devices)[512], int n_devices, const cli_plan_option_t *opts,
                         int n_kinds, const char *const *option_args, int n_option_args,
                         cli_plan_one_fn one, void *ctx)
{
    char why[1024];
    for (int d = 0; d < n_devices; d++) {
        cli_plan_option_t bare = {.devices = opts[d * n_kinds].devices};
        snprintf(bare.name, sizeof bare.name, "%s", opts[d * n_kinds].name);
        snprintf(bare.device, sizeof bare.device, "%.511s", devices[d]);
        int rc = one(ctx, &bare, 1, NULL, why, sizeof why);
        if (rc != CLI_EXIT_OK)
            return why[0] ? cli_usage_error("plan", "--device %s: %s", devices[d], why) : rc;
    }
    for (int k = 0; k < n_option_args; k++) {
        /* the option's keys go in as --set: the user wrote them in --option */
        int rc = one(ctx, &opts[k], 1, NULL, why, sizeof why);
        if (rc != CLI_EXIT_OK)
            return why[0] ? cli_usage_error("plan", "--option %s: %s", option_args[k],
                                            why + (strncmp(why, "--set ", 6) ? 0 : 6))
                          : rc;
    }
    return CLI_EXIT_OK;
}

/* Each of the n options planned in turn, its best row into rows and its exit code into rcs.
 * A signal stops the comparison (the plan printed its PARTIAL ranking): its exit code; a plan
 * where nothing fits or a run failed leaves its row empty and the rest go on. Returns 0, or
 * the signal's exit code. */
static int options_plan(const cli_plan_option_t *opts, int n, cli_plan_row_t *rows, int *rcs,
                        cli_plan_one_fn one, void *ctx)
{
    char why[1024];
    for (int i = 0; i < n; i++) {
        printf("%s=== option %s: --device %s --devices %ld", i ? "\n" : "", opts[i].name,
               opts[i].device, opts[i].devices);
        for (int k = 0; k < opts[i].n_sets; k++)
            printf(" --set %s", opts[i].sets[k]);
        printf(" ===\n");
        fflush(stdout);
        rcs[i] = one(ctx, &opts[i], 0, &rows[i], why, sizeof why);
        if (rcs[i] >= 128)
            return rcs[i];
    }
    return CLI_EXIT_OK;
}

int cli_plan_compare(const plan_opts_t *po, cli_plan_one_fn one, void *ctx)
{
    char devices[CLI_PLAN_MAX_OPTIONS][512];
    int n_devices, n_option_args = po->n_option_args;
    const char *const *option_args = po->option_args;
    int rc = devices_split(po->device_args, po->n_device_args, devices, &n_devices);
    if (rc)
        return rc;
    /* the options, then every device x option (an option of the one device alone when none) */
    int n_kinds = n_option_args ? n_option_args : 1;
    if ((n_devices ? n_devices : 1) * n_kinds > CLI_PLAN_MAX_OPTIONS)
        return cli_usage_error("plan", "%d devices x %d --option: more than %d plans", n_devices,
                               n_kinds, CLI_PLAN_MAX_OPTIONS);
    cli_plan_option_t kinds[CLI_PLAN_MAX_OPTIONS] = {0};
    for (int k = 0; k < CLI_PLAN_MAX_OPTIONS; k++)
        kinds[k].purchase = NAN;
    if ((rc = kinds_parse(option_args, n_option_args, kinds)) ||
        (rc = kinds_check(po, kinds, n_kinds, n_devices)))
        return rc;
    int n = (n_devices ? n_devices : 1) * n_kinds, own = po->rank_by == PLAN_RANK_ENERGY;
    cli_plan_option_t *opts = calloc((size_t)n, sizeof *opts);
    cli_plan_row_t *rows = calloc((size_t)n, sizeof *rows);
    int *rcs = calloc((size_t)n, sizeof *rcs);
    options_cross(devices, n_devices, kinds, n_kinds, n_option_args, po->devices, opts);
    for (int i = 0; i < n; i++)
        own |= !isnan(opts[i].purchase) || !isnan(po->capex.purchase);
    if (po->capex_given && !own) {
        free(rcs);
        free(rows);
        free(opts);
        return cli_usage_error("plan",
                               "--%s: the ownership columns need a purchase price "
                               "(--purchase, or purchase= in an --option) or "
                               "--rank-by energy",
                               po->capex_given);
    }
    rc = options_check(devices, n_devices, opts, n_kinds, option_args, n_option_args, one, ctx);
    if (!rc)
        rc = options_plan(opts, n, rows, rcs, one, ctx);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        ran |= rows[i].run != 0;
        if (!rc && rcs[i])
            rc = rcs[i];
    }
    if (ran || rc >= 128)
        print_table(po, opts, rows, rcs, n, own);
    fflush(stdout);
    free(rcs);
    free(rows);
    free(opts);
    return rc;
}
