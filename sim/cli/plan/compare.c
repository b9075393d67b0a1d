/* dtsim plan's comparison of devices and cluster options (cli_plan_compare). A comparison
 * plans each device x option as a plan of its own (its own sweep, the option's name in its
 * runs' names, so that --resume and --show find each), and reads each plan's best row back
 * as the ranking printed it: the final table holds the same figures as the plans above it,
 * from the same code (cli_plan_row_compute). */
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

/* "NAME:KEY=VALUE[,KEY=VALUE...]" into opt's name and sets (the device is the caller's);
 * 0, or the one-line usage error printed and CLI_EXIT_USAGE. */
static int option_parse(const char *text, cli_plan_option_t *opt)
{
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : 0;
    /* the name goes into run names and sweep ids: plain characters only */
    if (!colon || !len || len >= sizeof opt->name ||
        strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
        return cli_usage_error("plan", "--option %s: expected NAME:KEY=VALUE[,KEY=VALUE...] "
                                       "with a NAME of letters, digits, _ . - (at most %zu)",
                               text, sizeof opt->name - 1);
    memcpy(opt->name, text, len);
    opt->name[len] = '\0';
    opt->n_sets = 0;
    char *keys = strdup(colon + 1), *save = NULL;
    int rc = 0;
    for (char *kv = strtok_r(keys, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || !eq[1]) {
            rc = cli_usage_error("plan", "--option %s: \"%s\" is not KEY=VALUE", text, kv);
            break;
        }
        *eq = '\0';
        const char *key = kv;
        for (size_t i = 0; i < sizeof option_keys / sizeof *option_keys; i++)
            if (!strcmp(kv, option_keys[i].name))
                key = option_keys[i].key;
        if (!strchr(key, '.'))
            rc = cli_usage_error("plan", "--option %s: unknown key \"%s\" (bandwidth, uplink, "
                                         "latency, uplink_latency, platform, price, port_price "
                                         "or a scenario key SECTION.KEY)", text, kv);
        else if (opt->n_sets == CLI_PLAN_OPTION_KEYS)
            rc = cli_usage_error("plan", "--option %s: more than %d keys", text,
                                 CLI_PLAN_OPTION_KEYS);
        else
            snprintf(opt->sets[opt->n_sets++], sizeof opt->sets[0], "%s=%s", key, eq + 1);
    }
    if (!rc && !opt->n_sets)
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

/* One option's row of the table: its best layout's figures, or why it has none. */
static void table_row(const cli_plan_option_t *opt, const cli_plan_row_t *row, int rc,
                      double tokens)
{
    char dev[64], cells[3][32];
    /* the plan's own device: an --option may set cluster.device (with its price) */
    if (row->device[0])
        snprintf(dev, sizeof dev, "%s", row->device);
    else
        device_short(opt->device, dev, sizeof dev);
    if (!row->run) {
        printf("%-20s %-14s %s\n", opt->name, dev,
               rc ? "no layout ran (see its plan above)" : "not planned");
        return;
    }
    /* the columns of the plan's ranking, in its order, less memory and peak */
    printf("%-20s %-14s %-40s %6lld %12.6g %10s %12.4g %10s %10s", opt->name, dev, row->layout,
           row->run, row->step_s, plan_cell(cells[0], 32, "%.4g", row->tokens_s),
           row->tflops_dev, plan_cell(cells[1], 32, "%.4g", row->kj_step),
           plan_cell(cells[2], 32, "%.4g", row->per_m_tokens));
    plan_row_tail(row, tokens);
}

static void print_table(const cli_plan_option_t *opts, const cli_plan_row_t *rows,
                        const int *rcs, int n, double tokens)
{
    printf("\nbest layout of each option (devices and --option side by side; each plan's "
           "rank 1 above):\n");
    printf("%-20s %-14s %-40s %6s %12s %10s %12s %10s %10s", "option", "device", "layout",
           "run", "s/step", "tokens/s", "TFLOP/s/dev", "kJ/step", "$/M tokens");
    if (tokens > 0)
        printf(" %9s %9s %11s", "days", "MWh", "$");
    printf(" %10s %8s", "ckpt/steps", "goodput");
    if (tokens > 0)
        printf(" %10s %11s", "days+fail", "$+fail");
    printf("\n");
    for (int i = 0; i < n; i++)
        table_row(&opts[i], &rows[i], rcs[i], tokens);
    printf("each option's fastest layout by s/step; $: cluster.price_per_device_hour and "
           "cluster.price_per_port_hour (- without); goodput: the useful share of wall time "
           "with failures and Daly's checkpoint interval (ckpt/steps)%s\n",
           tokens > 0 ? "; days+fail, $+fail: to train --tokens with failures" : "");
}

/* The devices, each --device value split at its commas, into devices (*n of them): 0, or
 * the usage error's exit code. */
static int devices_split(const char *const *device_args, int n_device_args,
                         char (*devices)[512], int *n)
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
                return cli_usage_error("plan", "--device %s: more than %d devices",
                                       device_args[i], CLI_PLAN_MAX_OPTIONS);
            snprintf(devices[(*n)++], sizeof devices[0], "%.*s", (int)len, at);
            if (!at[len])
                break;
            at += len + 1;
        }
    }
    return 0;
}

/* Each --option into kinds, each name once: 0, or the usage error's exit code. */
static int kinds_parse(const char *const *option_args, int n_option_args,
                       cli_plan_option_t *kinds)
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

/* Every device x option into opts (n_kinds options; where --option is not given, n_kinds is
 * 1 and each is the device alone, named after it), named DEVICE-OPTION with several devices. */
static void options_cross(char (*devices)[512], int n_devices, const cli_plan_option_t *kinds,
                          int n_kinds, int n_option_args, cli_plan_option_t *opts)
{
    char dev[64];
    for (int d = 0; d < n_devices; d++)
        for (int k = 0; k < n_kinds; k++) {
            cli_plan_option_t *opt = &opts[d * n_kinds + k];
            *opt = kinds[k];
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
        cli_plan_option_t bare = {0};
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
        printf("%s=== option %s: --device %s", i ? "\n" : "", opts[i].name, opts[i].device);
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

int cli_plan_compare(const char *const *device_args, int n_device_args,
                     const char *const *option_args, int n_option_args, double tokens,
                     cli_plan_one_fn one, void *ctx)
{
    char devices[CLI_PLAN_MAX_OPTIONS][512];
    int n_devices;
    int rc = devices_split(device_args, n_device_args, devices, &n_devices);
    if (rc)
        return rc;
    /* the options, then every device x option (an option of the one device alone when none) */
    int n_kinds = n_option_args ? n_option_args : 1;
    if (n_devices * n_kinds > CLI_PLAN_MAX_OPTIONS)
        return cli_usage_error("plan", "%d devices x %d --option: more than %d plans", n_devices,
                               n_kinds, CLI_PLAN_MAX_OPTIONS);
    cli_plan_option_t kinds[CLI_PLAN_MAX_OPTIONS] = {0};
    if ((rc = kinds_parse(option_args, n_option_args, kinds)))
        return rc;
    int n = n_devices * n_kinds;
    cli_plan_option_t *opts = calloc((size_t)n, sizeof *opts);
    cli_plan_row_t *rows = calloc((size_t)n, sizeof *rows);
    int *rcs = calloc((size_t)n, sizeof *rcs);
    options_cross(devices, n_devices, kinds, n_kinds, n_option_args, opts);
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
        print_table(opts, rows, rcs, n, tokens);
    fflush(stdout);
    free(rcs);
    free(rows);
    free(opts);
    return rc;
}
