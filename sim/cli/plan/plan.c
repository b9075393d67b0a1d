/* The command `dtsim plan` (cli_plan): its options parsed, then one plan (plan_one:
 * enumerated, fitted, simulated and ranked) or, with several devices or --option, one plan of
 * each side by side (cli_plan_compare). README.md tells how a plan runs. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_sweep.h"
#include "cli_util.h"
#include "goodput.h"
#include "plan_impl.h"
#include "profile_memory.h"

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
    long blocks = plan_profile_blocks(&prof), pieces = plan_profile_pieces(&prof);
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
    if (plan_scenario_write(base, &o, profile, name, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    /* a bad --set, device or precision is the user's, named once, not once per layout */
    scenario_t *sc = dt_malloc(sizeof *sc);
    char device_name[64] = ""; /* the device the layouts load: a --set may name it */
    dt_status st = plan_layout_load(sc, base, &o, &l[0], name, &err);
    /* a layout's own key out of its range (65,536 devices: data_parallel 65536) is that
     * layout's, dropped by its fit check: the user's keys are checked on one that loads */
    for (long i = 1; st && plan_layout_key_error(err.msg) && i < n; i++)
        st = plan_layout_load(sc, base, &o, &l[i], name, &err);
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
    if (st && plan_layout_key_error(err.msg)) { /* no layout loads: say what the user gave */
        char what[700];
        snprintf(what, sizeof what, "--devices %ld and --global-batch %ld: no layout can be "
                 "simulated (each sets a key out of its range; e.g. %s)", o.devices, o.global_batch,
                 plan_layout_key_error(err.msg));
        if (why_n)
            snprintf(why, why_n, "%s", what);
        else
            fprintf(stderr, "dtsim plan: %s\n", what);
        goto done;
    }
    if (st && (strstr(err.msg, "--set") || strstr(err.msg, "cluster.device") ||
               strstr(err.msg, "model.precision"))) {
        if (why_n)
            snprintf(why, why_n, "%s", plan_without_path(err.msg, base));
        else
            fprintf(stderr, "dtsim plan: %s\n", plan_without_path(err.msg, base));
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
    qsort(l, (size_t)n, sizeof *l, plan_layout_by_order);
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
    plan_list_print(l, n);
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
    plan_ranking_print(in, ranked, finished, o.top, o.tokens, &o.goodput, o.db, best);
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
