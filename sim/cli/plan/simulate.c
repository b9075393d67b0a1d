/* The plan's fitting layouts simulated as one sweep (plan_simulate): in order of their lower
 * bound, -j at a time, pruning after each batch those whose bound exceeds the best step;
 * stopped by a signal or --time-limit; what was pruned stored with the runs. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cli_sweep.h"
#include "cli_util.h"
#include "plan_impl.h"

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
    sqlite3 *handle = NULL;
    sqlite3_stmt *st = NULL;
    const struct {
        const char *key;
        double value;
    } nums[] = {{"plan.pruned", (double)in->pruned},
                {"plan.capped", (double)in->capped},
                {"plan.best_bound", in->best_bound}};
    if (sqlite3_open_v2(db, &handle, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_busy_timeout(handle, 10000) == SQLITE_OK &&
        sqlite3_prepare_v2(handle,
                           "INSERT OR REPLACE INTO params (run, key, value, number) "
                           "SELECT id, ?1, ?2, ?3 FROM runs WHERE sweep = ?4",
                           -1, &st, NULL) == SQLITE_OK) {
        for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
            char text[32];
            snprintf(text, sizeof text, "%.17g", nums[i].value);
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, nums[i].key, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
            if (isfinite(nums[i].value))
                sqlite3_bind_double(st, 3, nums[i].value);
            else
                sqlite3_bind_null(st, 3);
            sqlite3_bind_text(st, 4, sweep, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE)
                fprintf(stderr, "dtsim plan: %s: cannot store %s: %s\n", db, nums[i].key,
                        sqlite3_errmsg(handle));
        }
    } else {
        fprintf(stderr, "dtsim plan: %s: cannot store what was pruned: %s\n", db,
                handle ? sqlite3_errmsg(handle) : "out of memory");
    }
    sqlite3_finalize(st);
    sqlite3_close(handle);
}

/* The best step time of sweep's finished runs in db, seconds; INFINITY when none (or the
 * database does not answer: then nothing more is pruned). One query after each batch:
 * reading every run back as the ranking does would cost more than a run of a small plan. */
static double plan_best_step(const char *db, const char *sweep)
{
    sqlite3 *handle = NULL;
    sqlite3_stmt *st = NULL;
    double best = INFINITY;
    if (sqlite3_open_v2(db, &handle, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_busy_timeout(handle, 10000) == SQLITE_OK &&
        sqlite3_prepare_v2(handle,
                           "SELECT min(s.sim_time / s.steps) FROM runs r JOIN summary s ON "
                           "s.run = r.id WHERE r.sweep = ?1 AND r.status = 'finished' AND "
                           "s.steps > 0",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            best = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(handle);
    return best;
}

/* A layout's state in the sweep. */
enum { PENDING, SIMULATED, PRUNED, CAPPED };

/* The sweep under way (plan_simulate): what its batches share. */
typedef struct plan_sweep {
    const plan_opts_t *opts;
    const plan_layout_t *cand;       /* the fitting layouts, by sweep index (fit of them) */
    long fit, batch;                 /* the layouts; a batch's most (held at once) */
    const char *base, *name, *argv0; /* the base scenario, the runs' name, this program */
    double t0, deadline;             /* the plan's start (the progress's); 0: no deadline */
    char *sweep;                     /* the sweep's id (size): "" until its first batch */
    size_t size;
    cli_param_t params[PLAN_PARAMS]; /* plan.* with every run, their numbers' text in texts */
    char texts[PLAN_PARAMS][32];
    char *state;                  /* (fit) PENDING, SIMULATED, PRUNED or CAPPED */
    long *order;                  /* (fit) the sweep indices by lower bound */
    long *todo;                   /* (batch) the batch's sweep indices */
    scenario_t *list;             /* (batch) the batch's scenarios */
    double best;                  /* the best step simulated so far, seconds */
    long at;                      /* the next place in order */
    long n_stored, started, done; /* finished before this session; started; finished */
    double first_run;             /* when this session's first run began: its pace */
} plan_sweep_t;

/* The sweep's state: the layouts an earlier run of the plan finished (stored, or NULL)
 * simulated, the others pending, in order of their lower bound. */
static void sweep_init(plan_sweep_t *sw, const plan_layout_t *stored)
{
    sw->batch = sw->opts->no_prune ? sw->opts->max_runs : sw->opts->jobs;
    if (sw->batch > sw->fit) /* the scenarios of a batch are held at once */
        sw->batch = sw->fit;
    sw->state = dt_calloc((size_t)sw->fit, 1);
    sw->order = dt_malloc(sizeof *sw->order * (size_t)sw->fit);
    sw->todo = dt_malloc(sizeof *sw->todo * (size_t)sw->batch);
    sw->list = dt_malloc(sizeof *sw->list * (size_t)sw->batch);
    sw->best = INFINITY;
    for (long i = 0; i < sw->fit; i++) {
        sw->order[i] = i;
        if (stored && stored[i].run) {
            sw->state[i] = SIMULATED;
            sw->best = fmin(sw->best, stored[i].step_s);
        }
    }
    bound_of = sw->cand;
    qsort(sw->order, (size_t)sw->fit, sizeof *sw->order, by_bound);
}

static void sweep_free(plan_sweep_t *sw)
{
    free(sw->list);
    free(sw->todo);
    free(sw->order);
    free(sw->state);
}

/* The next batch's scenarios loaded, in order of their bound: up to the batch's most and
 * --max-runs, and up to the first bound above the best step (with --no-prune none is).
 * Returns how many, or -1 when one does not load (its error printed). */
static long sweep_load(plan_sweep_t *sw)
{
    const plan_opts_t *opts = sw->opts;
    long n = 0;
    while (sw->at < sw->fit && n < sw->batch && sw->started < opts->max_runs) {
        long i = sw->order[sw->at];
        if (sw->state[i] != PENDING) {
            sw->at++;
            continue;
        }
        if (!opts->no_prune && sw->cand[i].bound > sw->best)
            break; /* by bound: every one after it has a bound as high */
        dt_err_t err;
        if (plan_layout_load(&sw->list[n], sw->base, opts, &sw->cand[i], sw->name, &err)) {
            fprintf(stderr, "dtsim plan: %s\n", err.msg); /* it loaded a moment ago */
            return -1;
        }
        sw->state[i] = SIMULATED;
        sw->todo[n++] = i;
        sw->started++;
        sw->at++;
    }
    return n;
}

/* The progress's total: what is done, and what may still run at the best step so far. */
static long sweep_total(const plan_sweep_t *sw)
{
    const plan_opts_t *opts = sw->opts;
    long total = sw->started;
    for (long j = sw->at; j < sw->fit && total < opts->max_runs; j++) {
        long i = sw->order[j];
        total += sw->state[i] == PENDING && (opts->no_prune || sw->cand[i].bound <= sw->best);
    }
    return total;
}

/* The batch's n runs simulated (cli_sweep_run_opts), the sweep's id into sw->sweep; into
 * *stopped the signal that stopped it (0: none). Returns the sweep's exit code. */
static int sweep_batch(plan_sweep_t *sw, long n, int *stopped)
{
    long total = sweep_total(sw);
    char id[SCENARIO_STR + 64]; /* the sweep's answer goes to sweep, cleared as it starts */
    snprintf(id, sizeof id, "%s", sw->sweep);
    if (!sw->first_run)
        sw->first_run = cli_sweep_now();
    cli_sweep_opts_t so = {.id = id,
                           .index = sw->todo,
                           .label = "plan",
                           .done_before = sw->done,
                           .total = total,
                           .started = sw->t0,
                           .pace_since = sw->first_run,
                           .pace_runs = sw->done - sw->n_stored,
                           .deadline = sw->deadline,
                           .params = sw->params,
                           .n_params = PLAN_PARAMS,
                           .quiet = 1,
                           .checked = 1};
    int rc = cli_sweep_run_opts(sw->list, n, sw->name, sw->opts->jobs, sw->argv0, sw->sweep,
                                sw->size, &so);
    *stopped = so.stopped;
    return rc;
}

/* What will not run into in, as the progress's total counts it (sweep_total): in order of
 * their bound, a pending layout whose bound exceeds the best step is pruned, one past
 * --max-runs capped. Ran to its end, the sweep leaves none pending besides; stopped, the
 * others are the PARTIAL line's not yet simulated: pruning against the best step so far is
 * safe whenever it is made, so that a stopped plan counts what it still owes as its
 * progress did. */
static void sweep_tally(plan_sweep_t *sw, plan_info_t *in)
{
    const plan_opts_t *opts = sw->opts;
    long kept = 0; /* simulated (this session or before), or still to simulate */
    for (long i = 0; i < sw->fit; i++)
        kept += sw->state[i] == SIMULATED;
    in->pruned = in->capped = 0;
    for (long j = 0; j < sw->fit; j++) {
        long i = sw->order[j];
        if (sw->state[i] != PENDING)
            continue;
        if (!opts->no_prune && sw->cand[i].bound > sw->best)
            sw->state[i] = PRUNED;
        else if (kept >= opts->max_runs)
            sw->state[i] = CAPPED;
        else
            kept++;
        in->pruned += sw->state[i] == PRUNED;
        in->capped += sw->state[i] == CAPPED;
    }
    in->best_bound = sw->best;
}

/* Simulates the plan's fitting layouts (cand, in->runs of them by sweep index; stored: the
 * rows of those that finished in an earlier run of the plan, or NULL, n_stored of them) as
 * one sweep, continuing sweep (its id, "" for a new one; the id goes there), in order of
 * their lower bound: -j at a time, after each batch the best step read back and every
 * layout whose bound exceeds it pruned (all at once with --no-prune, none pruned), at most
 * --max-runs in all; the progress counts from t0, the plan's start. Into in: what was
 * pruned and capped. *stopped: the signal that stopped it, -1 when the time limit passed, 0
 * when it ran to the end. Returns the sweep's exit code. */
int plan_simulate(const plan_opts_t *opts, plan_info_t *in, const plan_layout_t *cand,
                  const plan_layout_t *stored, long n_stored, double t0, double deadline,
                  const char *base, const char *name, const char *argv0, char *sweep, size_t size,
                  int *stopped)
{
    plan_sweep_t sw = {.opts = opts,
                       .cand = cand,
                       .fit = in->runs,
                       .base = base,
                       .name = name,
                       .argv0 = argv0,
                       .t0 = t0,
                       .deadline = deadline,
                       .sweep = sweep,
                       .size = size,
                       .n_stored = n_stored,
                       .started = n_stored,
                       .done = n_stored};
    sweep_init(&sw, stored);
    plan_params(in, sw.params, sw.texts);
    struct sigaction sa = {.sa_handler = plan_on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    plan_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = CLI_EXIT_OK;
    *stopped = 0;
    for (;;) {
        long n = sweep_load(&sw);
        if (n < 0) {
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        if (!n)
            break;
        if (plan_signal || (deadline > 0 && cli_sweep_now() >= deadline)) {
            for (long j = 0; j < n; j++) /* never started */
                sw.state[sw.todo[j]] = PENDING;
            *stopped = plan_signal ? plan_signal : -1;
            break;
        }
        int batch_stopped;
        int batch_rc = sweep_batch(&sw, n, &batch_stopped);
        if (batch_rc == CLI_EXIT_USAGE || !sweep[0]) {
            rc = batch_rc ? batch_rc : CLI_EXIT_RUN;
            goto done;
        }
        if (batch_rc != CLI_EXIT_OK)
            rc = batch_rc;
        sw.done += n;
        if (batch_stopped) {
            *stopped = batch_stopped;
            break;
        }
        if (!opts->no_prune)
            sw.best = fmin(sw.best, plan_best_step(opts->db, sweep));
    }
    sweep_tally(&sw, in);
    if (sweep[0])
        plan_store_skipped(opts->db, sweep, in);
done:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sweep_free(&sw);
    return rc;
}
