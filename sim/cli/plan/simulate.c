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
int plan_simulate(const plan_opts_t *o, plan_info_t *in, const plan_layout_t *cand,
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
            if (plan_layout_load(&list[k], base, o, &cand[i], name, &err)) {
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
