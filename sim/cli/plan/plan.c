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

/* What a step of plan_one returns to let the plan go on; any other value is its exit code. */
enum { PLAN_GO_ON = -1 };

/* One plan under way (plan_one): what its steps share, freed by plan_state_free. */
typedef struct plan_state {
    plan_opts_t opts;  /* the options, a device file by its absolute path */
    const char *argv0; /* this program, for its children */
    double t0;         /* when the command started: --time-limit counts from it */
    char *why;         /* a comparison's check: the error goes here (why_n), not stderr */
    size_t why_n;
    cli_plan_row_t *best;   /* the first ranked row (cli_plan_compare), or NULL */
    char profile[PATH_MAX]; /* the profile, a file by its absolute path */
    char device[PATH_MAX];  /* a device file's absolute path, where opts.device points */
    sim_model_profile_t prof;
    int prof_loaded;
    plan_info_t *info;
    char name[SCENARIO_STR];       /* "plan-PROFILE", "plan-PROFILE-OPTION": the runs' names */
    long blocks;                   /* plan_profile_blocks: the most stages */
    plan_layout_t *layouts;        /* the list (room for PLAN_MAX_LAYOUTS), n of them */
    long n, fit;                   /* layouts listed; of those, fitting */
    plan_layout_t *cand;           /* the fitting layouts, by sweep index */
    plan_layout_t *ranked;         /* the finished runs read back, by sweep index */
    char base[PATH_MAX];           /* the base scenario's temporary file; "": none */
    char device_name[64];          /* the device the layouts load: a --set may name it */
    char sweep[SCENARIO_STR + 64]; /* the plan's sweep id; "": none yet */
    long stored;                   /* --resume: the layouts that had finished */
    int sweep_rc, stopped;         /* plan_simulate's exit code and *stopped */
} plan_state_t;

static void plan_state_free(plan_state_t *ps)
{
    if (ps->prof_loaded)
        sim_model_profile_free(&ps->prof);
    if (ps->base[0])
        unlink(ps->base);
    free(ps->cand);
    free(ps->layouts);
    free(ps->ranked);
    free(ps->info);
    free(ps);
}

/* msg into ps->why where a comparison checks, else on stderr; CLI_EXIT_USAGE. */
static int plan_error(plan_state_t *ps, const char *msg)
{
    if (ps->why_n)
        snprintf(ps->why, ps->why_n, "%s", msg);
    else
        fprintf(stderr, "dtsim plan: %s\n", msg);
    return CLI_EXIT_USAGE;
}

/* The layouts a plan simulates at most: the fitting ones, up to --max-runs. */
static long plan_most(const plan_state_t *ps)
{
    return ps->fit < ps->opts.max_runs ? ps->fit : ps->opts.max_runs;
}

/* A key the plan searches, from an --option (the user's --set are checked before). */
static int plan_sets_check(plan_state_t *ps)
{
    for (int i = 0; i < ps->opts.n_sets; i++) {
        char refused[600];
        if (!plan_set_refused(ps->opts.sets[i], refused, sizeof refused))
            continue;
        if (ps->why_n) {
            snprintf(ps->why, ps->why_n, "%s", refused);
            return CLI_EXIT_USAGE;
        }
        return cli_usage_error("plan", "%s", refused);
    }
    return PLAN_GO_ON;
}

/* The profile and a device file by their absolute paths, as the temporary scenario lies
 * elsewhere (the catalogue's device names end in no .ini). */
static int plan_paths(plan_state_t *ps)
{
    plan_opts_t *opts = &ps->opts;
    if (sim_model_profile_is_file(opts->profile)) {
        if (!realpath(opts->profile, ps->profile))
            return cli_usage_error("plan", "--profile %s: %s", opts->profile, strerror(errno));
    } else {
        snprintf(ps->profile, sizeof ps->profile, "%s", opts->profile);
    }
    size_t len = strlen(opts->device);
    if (len > 4 && !strcmp(opts->device + len - 4, ".ini")) {
        if (!realpath(opts->device, ps->device))
            return cli_usage_error("plan", "--device %s: %s", opts->device, strerror(errno));
        opts->device = ps->device;
    }
    return PLAN_GO_ON;
}

/* The profile loaded (kept for the bounds: plan_bound), what the ranking takes from it and
 * from the options into ps->info, and the runs' name. */
static int plan_profile_read(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    const sim_model_profile_t *prof = &ps->prof;
    dt_err_t err;
    if (sim_model_profile_load(&ps->prof, ps->profile, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    ps->prof_loaded = 1;
    plan_info_t *in = ps->info = dt_calloc(1, sizeof *in);
    in->flops_per_sample = prof->forward_flops + prof->backward_flops;
    in->tokens_per_sample = sim_model_profile_tokens(prof);
    in->global_batch = (double)opts->global_batch;
    in->devices = (double)opts->devices;
    snprintf(in->precision, sizeof in->precision, "%s", opts->precision);
    if (opts->label) /* a comparison's option: its name in the runs' names */
        snprintf(ps->name, sizeof ps->name, "plan-%.100s-%.64s", prof->name, opts->label);
    else
        snprintf(ps->name, sizeof ps->name, "plan-%s", prof->name);
    if (opts->tokens > 0 && !(in->tokens_per_sample > 0))
        return cli_usage_error("plan",
                               "--tokens %s: profile %s counts no tokens per sample "
                               "(its sample: \"%s\")",
                               opts->tokens_text, ps->name + 5, prof->sample);
    return PLAN_GO_ON;
}

/* Every layout of the options (plan_enumerate), with a MoE profile's expert groups. */
static int plan_layouts_list(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    const sim_model_profile_t *prof = &ps->prof;
    int attention = sim_profile_has_attention(prof);
    long seq = prof->has_shapes && attention ? (long)ps->info->tokens_per_sample : 0;
    ps->blocks = plan_profile_blocks(prof);
    ps->layouts = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *ps->layouts);
    ps->n = plan_enumerate(opts, ps->blocks, plan_profile_pieces(prof), prof->has_tensor_splits,
                           attention, seq, ps->layouts, PLAN_MAX_LAYOUTS);
    int experts = 0; /* the fewest routed experts of a MoE layer (0: none) */
    for (int i = 0; i < prof->n_layers; i++)
        if (prof->layers[i].experts && (!experts || prof->layers[i].experts < experts))
            experts = prof->layers[i].experts;
    if (experts)
        ps->n = plan_expert_more(ps->layouts, ps->n, experts, PLAN_MAX_LAYOUTS);
    if (!ps->n)
        return cli_usage_error("plan",
                               "no layout of %ld devices (tensor %s, at most %ld per server; "
                               "stages %s, at most %ld layers) divides the global batch of %ld",
                               opts->devices, opts->n_tensor ? "of --tensor" : "1, 2, 4, 8",
                               opts->per_server, opts->n_stages ? "of --stages" : "1 to 64",
                               ps->blocks, opts->global_batch);
    return PLAN_GO_ON;
}

/* The device's peak at the precision and its memory, the whole model's checkpoint (in the
 * layout's precision and optimizer) and the plan's title, for the ranking (sc: a layout
 * loaded). */
static void plan_device_read(plan_state_t *ps, const scenario_t *sc)
{
    const plan_opts_t *opts = &ps->opts;
    plan_info_t *in = ps->info;
    const sim_device_profile_t *dev = scenario_device(sc);
    in->peak_flops = dev ? dev->value[sc->precision] : NAN;
    in->capacity = dev ? dev->value[SIM_DEV_MEMORY] : NAN;
    in->margin = sc->allow_oversubscribed_memory ? 0 : plan_margin(opts, in->capacity);
    in->ckpt_bytes = sim_goodput_ckpt_bytes(sc, (double)ps->prof.params);
    /* the layouts' precision, which --set or an --option may have set past --precision */
    snprintf(in->precision, sizeof in->precision, "%s", scenario_precision_name(sc->precision));
    const char *device = dev ? dev->name : opts->device;
    snprintf(ps->device_name, sizeof ps->device_name, "%.63s", device);
    snprintf(in->title, sizeof in->title, "%.100s on %ld x %.300s, global batch %ld, %s",
             ps->name + 5, opts->devices, device, opts->global_batch, in->precision);
}

/* The base scenario written, and loaded with the first layout that loads: a bad --set,
 * device or precision is the user's, named once, not once per layout. A comparison's check
 * (cli_plan_compare) ends here. */
static int plan_base_check(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    dt_err_t err;
    if (plan_scenario_write(ps->base, opts, ps->profile, ps->name, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    scenario_t *sc = dt_malloc(sizeof *sc);
    dt_status st = plan_layout_load(sc, ps->base, opts, &ps->layouts[0], ps->name, &err);
    /* a layout's own key out of its range (65,536 devices: data_parallel 65536) is that
     * layout's, dropped by its fit check: the user's keys are checked on one that loads */
    for (long i = 1; st && plan_layout_key_error(err.msg) && i < ps->n; i++)
        st = plan_layout_load(sc, ps->base, opts, &ps->layouts[i], ps->name, &err);
    if (st == DT_OK)
        plan_device_read(ps, sc);
    free(sc);
    if (st && plan_layout_key_error(err.msg)) { /* no layout loads: say what the user gave */
        char what[700];
        snprintf(what, sizeof what,
                 "--devices %ld and --global-batch %ld: no layout can be "
                 "simulated (each sets a key out of its range; e.g. %s)",
                 opts->devices, opts->global_batch, plan_layout_key_error(err.msg));
        return plan_error(ps, what);
    }
    if (st && (strstr(err.msg, "--set") || strstr(err.msg, "cluster.device") ||
               strstr(err.msg, "model.precision")))
        return plan_error(ps, plan_without_path(err.msg, ps->base));
    return PLAN_GO_ON;
}

/* Where no layout fits: one line on stderr saying why (the list above says what each would
 * hold, or why each was dropped), CLI_EXIT_USAGE. */
static int plan_none_fits(const plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    long for_memory = 0;
    for (long i = 0; i < ps->n; i++)
        for_memory += !strncmp(ps->layouts[i].memory, "does not fit", 12);
    if (!for_memory) /* not one was dropped for memory: say what dropped them */
        fprintf(stderr,
                "dtsim plan: none of the %ld layouts of %s on %ld x %s can be simulated, none "
                "for its memory: %s (the list says why each was dropped)\n",
                ps->n, ps->name + 5, opts->devices, opts->device,
                ps->n ? ps->layouts[0].memory : "no layout");
    else
        fprintf(stderr,
                "dtsim plan: none of the %ld layouts of %s on %ld x %s fits its memory (the "
                "list says what each holds): more --devices, a --device with more memory, a "
                "smaller --memory-margin, or --set run.allow_oversubscribed_memory=yes to time "
                "them anyway\n",
                ps->n, ps->name + 5, opts->devices, opts->device);
    return CLI_EXIT_USAGE;
}

/* Each layout's fit, ZeRO-2 and 3 where the stage below does not fit, gradient buckets
 * where a layout takes them; the list printed, or counted in a line. --no-run ends here. */
static int plan_layouts_fit(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    int same = -1; /* memory checked here or in children (plan_fit) */
    plan_fit(ps->layouts, ps->n, ps->base, opts, &ps->prof, ps->name, ps->argv0, &same);
    for (int zero = 2; zero <= 3; zero++)
        ps->n = plan_zero_more(ps->layouts, ps->n, zero, ps->base, opts, &ps->prof, ps->name,
                               ps->argv0, &same, PLAN_MAX_LAYOUTS);
    qsort(ps->layouts, (size_t)ps->n, sizeof *ps->layouts, plan_layout_by_order);
    plan_layout_t *listed = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *listed);
    ps->n = plan_buckets(ps->layouts, ps->n, listed, PLAN_MAX_LAYOUTS);
    free(ps->layouts);
    ps->layouts = listed;
    ps->fit = 0;
    for (long i = 0; i < ps->n; i++)
        ps->fit += ps->layouts[i].fits;
    printf("plan: %s on %ld x %s, global batch %ld, %s: %ld layouts, %ld fit, at most %ld to "
           "simulate\n",
           ps->name + 5, opts->devices, opts->device, opts->global_batch, ps->info->precision,
           ps->n, ps->fit, plan_most(ps));
    plan_margin_print(ps->info->margin, opts);
    /* each layout's line where it is the answer (--no-run, nothing fits) or asked for: a
     * plan of thousands would bury its ranking under them */
    plan_list_print(ps->layouts, ps->n, opts->verbose || opts->no_run || !ps->fit);
    fflush(stdout);
    if (!ps->fit)
        return plan_none_fits(ps);
    return opts->no_run ? CLI_EXIT_OK : PLAN_GO_ON;
}

/* The fitting layouts by sweep index (index k is the k-th fitting layout, as listed, in the
 * plan and in its resumptions) and the plan's options as --resume finds them; the default
 * database's folder made when missing, as `dtsim run` makes it. */
static int plan_candidates(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    if (!strcmp(opts->db, DEFAULT_DB) && mkdir("results", 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dtsim plan: cannot create results/ for %s: %s\n", DEFAULT_DB,
                strerror(errno));
        return CLI_EXIT_USAGE;
    }
    ps->info->runs = ps->fit;
    ps->cand = dt_malloc(sizeof *ps->cand * (size_t)ps->fit);
    for (long i = 0, k = 0; i < ps->n; i++)
        if (ps->layouts[i].fits) {
            ps->layouts[i].index = k;
            ps->cand[k++] = ps->layouts[i];
        }
    plan_options_text(opts, ps->profile, ps->info->options, sizeof ps->info->options);
    return PLAN_GO_ON;
}

/* --resume: the newest stored plan of these options, and which of its layouts finished. */
static int plan_resume(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    if (!opts->resume)
        return PLAN_GO_ON;
    if (access(opts->db, F_OK) == 0) {
        dt_err_t err;
        results_query_t *query = NULL;
        dt_status st = results_query_open_current(&query, opts->db, &err);
        if (st == DT_OK)
            st = plan_find(query, ps->info->options, ps->sweep, sizeof ps->sweep, &err);
        results_query_close(query);
        if (st == DT_OK && ps->sweep[0]) {
            plan_info_t *was = dt_calloc(1, sizeof *was);
            st = plan_rank_read(opts->db, ps->sweep, 1, was, &ps->ranked, &ps->stored, &err);
            if (st == DT_OK && was->runs != ps->fit)
                st = dt_err_input(&err,
                                  "%s: the plan of sweep %s has %ld fitting layouts, these "
                                  "options %ld",
                                  opts->db, ps->sweep, was->runs, ps->fit);
            free(was);
        }
        if (st) {
            fprintf(stderr, "dtsim plan: --resume: %s\n", err.msg);
            return CLI_EXIT_USAGE;
        }
    }
    long most = plan_most(ps);
    if (ps->sweep[0])
        printf("plan: resuming sweep %s of %s: %ld of %ld layouts finished, at most %ld to "
               "simulate\n",
               ps->sweep, opts->db, ps->stored, most, most > ps->stored ? most - ps->stored : 0);
    else
        fprintf(stderr,
                "dtsim plan: --resume: no plan of these options in %s: simulating all "
                "%ld layouts\n",
                opts->db, ps->fit);
    return PLAN_GO_ON;
}

/* The fitting layouts simulated (plan_simulate); stopped before the first run, the PARTIAL
 * line and the exit code of what stopped it. */
static int plan_runs(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    double deadline = opts->time_limit > 0 ? ps->t0 + opts->time_limit : 0;
    ps->sweep_rc =
        plan_simulate(opts, ps->info, ps->cand, ps->ranked, ps->stored, ps->t0, deadline, ps->base,
                      ps->name, ps->argv0, ps->sweep, sizeof ps->sweep, &ps->stopped);
    if (ps->sweep_rc != CLI_EXIT_USAGE && !ps->sweep[0] && ps->stopped) {
        char again[sizeof ps->info->options + PATH_MAX + 64];
        plan_again(ps->info, opts, again, sizeof again);
        printf("PARTIAL: 0 of %ld layouts simulated, nothing to rank yet; to simulate them: "
               "dtsim plan %s --resume\n",
               plan_most(ps), again);
        fflush(stdout);
        fprintf(stderr,
                "dtsim plan: %s before the first layout was simulated (the ranking is "
                "PARTIAL: empty); --resume simulates them\n",
                stop_reason(ps->stopped));
        return ps->stopped > 0 ? 128 + ps->stopped : CLI_EXIT_OK;
    }
    if (ps->sweep_rc == CLI_EXIT_USAGE || !ps->sweep[0])
        return ps->sweep_rc;
    return PLAN_GO_ON;
}

/* The plan's finished runs read back and ranked; the exit code of the sweep, or of the
 * signal that stopped it. */
static int plan_rank(plan_state_t *ps)
{
    const plan_opts_t *opts = &ps->opts;
    plan_info_t *in = ps->info;
    free(ps->ranked);
    ps->ranked = NULL;
    long finished = 0;
    dt_err_t err;
    if (plan_rank_read(opts->db, ps->sweep, 0, in, &ps->ranked, &finished, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        return CLI_EXIT_RUN;
    }
    /* the bound is a bound: a simulated step below it would make the pruning unsafe */
    long below = 0;
    for (long i = 0; i < in->runs; i++)
        below += ps->ranked[i].run && ps->ranked[i].step_s < ps->cand[i].bound * (1 - 1e-9);
    if (below)
        fprintf(stderr,
                "dtsim plan: %ld simulated steps are below their lower bound: run "
                "again with --no-prune\n",
                below);
    plan_ranking_print(in, ps->ranked, finished, opts, ps->best);
    if (ps->best)
        snprintf(ps->best->device, sizeof ps->best->device, "%s", ps->device_name);
    fflush(stdout);
    if (!ps->stopped)
        return ps->sweep_rc == CLI_EXIT_OK ? PLAN_GO_ON : ps->sweep_rc;
    fprintf(stderr,
            "dtsim plan: %s: %ld of %ld layouts simulated (the ranking is "
            "PARTIAL); --resume simulates the rest\n",
            stop_reason(ps->stopped), finished, ps->fit - in->pruned - in->capped);
    return ps->stopped > 0 ? 128 + ps->stopped : ps->sweep_rc;
}

/* --sensitivity: the top ranked layouts re-simulated at each end of each constant. */
static int plan_sensitivity_step(plan_state_t *ps)
{
    if (!(ps->opts.sensitivity > 0))
        return PLAN_GO_ON;
    double deadline = ps->opts.time_limit > 0 ? ps->t0 + ps->opts.time_limit : 0;
    int rc = plan_sensitivity(&ps->opts, ps->ranked, ps->info->runs, ps->cand, ps->base, ps->name,
                              &ps->prof, ps->argv0, deadline);
    return rc ? rc : PLAN_GO_ON;
}

/* One plan's steps in order, each returning PLAN_GO_ON or the plan's exit code; a
 * comparison's check takes the first PLAN_CHECK_STEPS. */
static int (*const plan_steps[])(plan_state_t *) = {
    plan_sets_check, plan_paths,       plan_profile_read,     plan_layouts_list,
    plan_base_check, plan_layouts_fit, plan_candidates,       plan_resume,
    plan_runs,       plan_rank,        plan_sensitivity_step,
};
enum { PLAN_CHECK_STEPS = 5 };

/* One plan of opts: enumerated, fitted, simulated and ranked (argv[0]: this program, for its
 * children; t0: when the command started, for --time-limit). check: only load the base
 * scenario with the first layout's keys (a bad device, --set or precision), printing nothing
 * on success and its error into why (why_n) rather than on stderr. best: the first ranked
 * row (cli_plan_compare), or NULL. Returns the exit code. */
static int plan_one(const plan_opts_t *opts, char **argv, double t0, int check,
                    cli_plan_row_t *best, char *why, size_t why_n)
{
    if (best)
        memset(best, 0, sizeof *best);
    if (why_n)
        why[0] = '\0';
    plan_state_t *ps = dt_calloc(1, sizeof *ps);
    *ps = (plan_state_t){
        .opts = *opts, .argv0 = argv[0], .t0 = t0, .why = why, .why_n = why_n, .best = best};
    size_t n_steps = check ? PLAN_CHECK_STEPS : sizeof plan_steps / sizeof *plan_steps;
    int rc = PLAN_GO_ON;
    for (size_t i = 0; i < n_steps && rc == PLAN_GO_ON; i++)
        rc = plan_steps[i](ps);
    plan_state_free(ps);
    return rc == PLAN_GO_ON ? CLI_EXIT_OK : rc;
}

/* A comparison's plan of one option: the options with the option's device and keys, its
 * name in the runs' names (cli_plan_one_fn). */
typedef struct plan_compare_ctx {
    const plan_opts_t *opts;
    char **argv;
    double t0;
    int single; /* one device, no --option (a table asked by --rank-by or --purchase): the
                 * runs named as a plain plan's, which --resume and --show then take */
} plan_compare_ctx_t;

static int plan_compare_one(void *ctx, const cli_plan_option_t *opt, int check,
                            cli_plan_row_t *best, char *why, size_t n)
{
    const plan_compare_ctx_t *compare = ctx;
    plan_opts_t *opts = dt_malloc(sizeof *opts);
    *opts = *compare->opts;
    opts->device = opt->device;
    if (opt->devices) /* a fleet of its own size */
        opts->devices = opt->devices;
    opts->label = compare->single ? NULL : opt->name;
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < opt->n_sets && !rc; i++) {
        if (opts->n_sets == PLAN_MAX_SETS)
            rc = cli_usage_error("plan", "--option %s: more than %d --set options with its keys",
                                 opt->name, PLAN_MAX_SETS);
        else
            opts->sets[opts->n_sets++] = opt->sets[i];
    }
    if (!rc)
        rc = plan_one(opts, compare->argv, compare->t0, check, best, why, n);
    free(opts);
    return rc;
}

int cli_plan(int argc, char **argv)
{
    double t0 = cli_sweep_now(); /* --time-limit counts from here */
    plan_opts_t opts;
    int rc = plan_opts_parse(&opts, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (opts.show)
        return plan_show(&opts);
    for (int i = 0; i < opts.n_sets; i++) {
        char refused[600];
        if (plan_set_refused(opts.sets[i], refused, sizeof refused))
            return cli_usage_error("plan", "%s", refused);
    }
    /* several devices, any --option, a ranking or ownership asked: each planned in turn,
     * then their best side by side, ranked */
    int several =
        opts.n_device_args > 1 || (opts.device && strchr(opts.device, ',')) || opts.n_option_args;
    if (several || opts.rank_by_given || !isnan(opts.capex.purchase) || opts.capex_given) {
        plan_compare_ctx_t ctx = {.opts = &opts, .argv = argv, .t0 = t0, .single = !several};
        return cli_plan_compare(&opts, plan_compare_one, &ctx);
    }
    return plan_one(&opts, argv, t0, 0, NULL, NULL, 0);
}
