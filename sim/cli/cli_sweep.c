/* `dtsim run` of a scenario with a [sweep] (see cli_sweep.h). SimGrid initialises once per
 * process, so each run is a child process that calls cli_exec_run_with and exits with its code;
 * the parent never touches SimGrid. All runs write to one database (WAL with a busy timeout:
 * see results/db.h), tagged with one sweep id "NAME-YYYYmmddTHHMMSSZ-PID" and their index.
 *
 * The parent keeps at most `jobs` children, reads each child's stderr through a pipe and
 * relays it line by line as "run I: ..." (errors are seen; the child's stderr is then no
 * terminal, so it prints no per-step progress of its own), drops their stdout, and on a
 * terminal keeps one progress line with an estimate of the time left. SIGINT and SIGTERM
 * are forwarded to the children (each in its own process group, so that a terminal's ^C
 * reaches them once, through the parent: a run stops at its next step and is recorded as
 * interrupted; a second signal ends it at once); the parent waits for them, prints what
 * there is, then ends on the same signal. A run whose child died leaves a 'running' row
 * that the next open of the database (the parent's, at the end) marks 'interrupted'. The
 * summary table is read back from the database, so it shows what was stored.
 *
 * dtsim plan asks more (cli_sweep_run_opts): runs that continue a stored sweep under their
 * own indices, a deadline after which it stops as on a signal (SIGTERM to the runs, a second
 * one a few seconds later to those still going), a plain progress line per finished run when
 * stderr is no terminal, and no ending on the signal: the plan still prints its ranking. */
#define _POSIX_C_SOURCE 200809L
#include "cli_sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <poll.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_exec.h"
#include "cli_util.h"
#include "db.h"
#include "query.h"

#define RUN_NOT_STARTED (-1) /* status[i] before run i is started */

typedef struct child {
    cli_child_t child; /* pid 0: free slot; fd the read end of its stderr pipe */
    long index;
    size_t len;
    char line[1024]; /* the unfinished line so far */
} child_t;

typedef struct sweep {
    const scenario_t *base;
    const scenario_t *list; /* the runs themselves (cli_sweep_run_list); NULL: base's sweep */
    const char *name;       /* the sweep's name in its id; NULL: base's */
    const char *argv0;
    char id[SCENARIO_STR + 64];
    long n;
    int jobs;
    child_t *slots; /* jobs of them */
    int *status;    /* per run: RUN_NOT_STARTED or its wait status */
    char *told;     /* per run: it was running when the sweep was told to stop */
    long done;      /* runs ended (the pace's count) */
    long cut;       /* of those, stopped mid-run as told: not done for the progress */
    int live;
    double t0;
    int progress;           /* stderr is a terminal */
    char shown[128];        /* the progress line on screen, "" none */
    cli_sweep_opts_t *opts; /* NULL: a plain sweep */
    int deadline_hit;       /* opts->deadline passed: stopping */
    int next_gate;          /* read end of the gate of the run started next (-1: none) */
    char *skip;             /* per run: finished in the sweep this one resumes (NULL: none) */
    long skipped;           /* how many of them */
    double stored_mean;     /* their mean wall time, seconds (0: none), for the first
                             * estimate before a run of this session has finished */
    char label[SCENARIO_STR + 16]; /* a plain sweep's progress label: "sweep NAME" */
    char fingerprint[24];          /* a plain sweep's scenario hash (stored as sweep.fingerprint) */
} sweep_t;

/* The grace a run stopped at the deadline has to record its step before a second signal
 * ends it at once (its row is then marked interrupted by the next open of the database). */
#define SWEEP_STOP_GRACE_S 3.0

/* Run i's index in the sweep. */
static long sweep_index_of(const sweep_t *s, long i)
{
    return s->opts && s->opts->index ? s->opts->index[i] : i;
}

static volatile sig_atomic_t stop_signal, signals;

/* Run ids in sweep order: the runs' rows are begun one after the other, in the order the runs
 * were started, whatever their set-up takes. Each child gets a gate (cli_exec_order): the
 * read end of a pipe whose only writer is the run started before it, and the write end of
 * the next run's. The parent keeps the read end of the gate of the run it starts next (-1: no
 * run started yet). */

/* Run i of the sweep: made from base's [sweep], or a copy of the list's. */
static dt_status sweep_member(const sweep_t *s, long i, scenario_t *run, dt_err_t *err)
{
    if (!s->list)
        return scenario_sweep_run(s->base, i, run, err);
    memcpy(run, &s->list[i], sizeof *run);
    return DT_OK;
}

static void on_signal(int sig)
{
    stop_signal = sig;
    signals++;
}

double cli_sweep_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the progress line ------------------------------------------------------------------ */

/* Runs done and in all as the progress counts them (a continued sweep counts what was done
 * before), and the time left at this session's pace. */
static void progress_counts(const sweep_t *s, long *done, long *total, double *elapsed,
                            double *left)
{
    long before = s->opts ? s->opts->done_before : s->skipped;
    long to_run = s->n - s->skipped; /* runs this session starts */
    *done = before + s->done - s->cut;
    *total = s->opts && s->opts->total ? s->opts->total : s->opts ? before + s->n : s->n;
    double now = cli_sweep_now();
    *elapsed = now - s->t0;
    *left = s->done > 0 && s->done < to_run
                ? *elapsed / (double)s->done * (double)(to_run - s->done)
                : NAN;
    if (s->opts && s->opts->started > 0) { /* the caller's whole time and pace (dtsim plan) */
        long runs = s->opts->pace_runs + s->done;
        *elapsed = now - s->opts->started;
        *left = runs > 0 && *done < *total
                    ? (now - s->opts->pace_since) / (double)runs * (double)(*total - *done)
                    : NAN;
        if (*left >= 0)
            return;
    }
    if (s->done == 0 && s->stored_mean > 0 && to_run > 0) /* resumed: the earlier runs' pace */
        *left = s->stored_mean * (double)((to_run + s->jobs - 1) / s->jobs) - *elapsed;
    if (*left < 0)
        *left = 0;
}

/* The plain line after a finished run when stderr is no terminal (a log, a pipe): done,
 * elapsed, time left. */
static void progress_line(const sweep_t *s)
{
    const char *label = s->opts ? s->opts->label : s->label;
    if (s->progress || !label)
        return;
    long done, total;
    double elapsed, left;
    progress_counts(s, &done, &total, &elapsed, &left);
    char spent[32], rest[48] = "";
    dt_duration_words(elapsed, spent, sizeof spent);
    if (!isnan(left)) {
        char words[32];
        dt_duration_words(left, words, sizeof words);
        snprintf(rest, sizeof rest, ", about %s left", words);
    }
    fprintf(stderr, "%s: %ld/%ld done, %s%s\n", label, done, total, spent, rest);
    fflush(stderr);
}

static void progress_clear(sweep_t *s)
{
    if (s->shown[0])
        fprintf(stderr, "\r%*s\r", (int)strlen(s->shown), "");
    s->shown[0] = '\0';
}

static void progress_show(sweep_t *s)
{
    if (!s->progress)
        return;
    long done, total;
    double elapsed, left;
    progress_counts(s, &done, &total, &elapsed, &left);
    char text[128];
    int len = snprintf(text, sizeof text, "[%ld/%ld] elapsed %.0fs", done, total, elapsed);
    if (!isnan(left))
        snprintf(text + len, sizeof text - (size_t)len, ", about %.0fs left", left);
    if (!strcmp(text, s->shown))
        return;
    size_t len_now = strlen(text), len_before = strlen(s->shown);
    fprintf(stderr, "\r%s", text);
    if (len_now < len_before)
        fprintf(stderr, "%*s", (int)(len_before - len_now), "");
    memcpy(s->shown, text, len_now + 1);
    fflush(stderr);
}

/* ---- children --------------------------------------------------------------------------- */

/* Relays the complete lines of c's buffer (all of it when flush is set) as "run I: LINE". */
static void relay_lines(sweep_t *s, child_t *c, int flush)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(c->line + start, '\n', c->len - start);
        size_t end = nl ? (size_t)(nl - c->line) : c->len;
        if (!nl && !(flush && end > start) && !(start == 0 && c->len == sizeof c->line))
            break;
        progress_clear(s);
        fprintf(stderr, "member %ld: %.*s\n", c->index, (int)(end - start), c->line + start);
        start = nl ? end + 1 : end;
    }
    memmove(c->line, c->line + start, c->len - start);
    c->len -= start;
}

/* Reads what c's pipe holds; closes it at end of file. */
static void child_read(sweep_t *s, child_t *c)
{
    while (c->child.fd >= 0) {
        ssize_t got = read(c->child.fd, c->line + c->len, sizeof c->line - c->len);
        if (got > 0) {
            c->len += (size_t)got;
            relay_lines(s, c, 0);
            continue;
        }
        if (got < 0 && (errno == EINTR))
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        relay_lines(s, c, 1);
        close(c->child.fd);
        c->child.fd = -1;
    }
}

/* What a run's child gets: the sweep, its run, and the gates (read end from the run
 * started before, write end to the next one's; the read end of the next one's, to close). */
typedef struct child_ctx {
    sweep_t *s;
    const scenario_t *run;
    long i;
    int gate_in, gate_out, next_gate;
} child_ctx_t;

/* In the child (stdout to /dev/null, stderr into the pipe, default signal handling): the run;
 * its exit code. */
static int child_main(void *ctx, int err_fd)
{
    const child_ctx_t *x = ctx;
    sweep_t *s = x->s;
    long i = x->i;
    cli_exec_order(x->gate_in, x->gate_out);
    close(x->next_gate);
    close(err_fd); /* its stderr now */
    for (int j = 0; j < s->jobs; j++)
        if (s->slots[j].child.pid && s->slots[j].child.fd >= 0)
            close(s->slots[j].child.fd);
    cli_param_t fp = {.key = "sweep.fingerprint", .text = s->fingerprint, .number = NAN};
    return s->opts ? cli_exec_run_with(x->run, s->argv0, s->id, sweep_index_of(s, i),
                                       s->opts->params, s->opts->n_params)
                   : cli_exec_run_with(x->run, s->argv0, s->id, i, &fp, 1);
}

/* Starts run i in slot c. Returns 0, or -1 when fork or pipe failed (reported). */
static int child_start(sweep_t *s, child_t *c, long i, scenario_t *run)
{
    dt_err_t err;
    if (sweep_member(s, i, run, &err)) {
        /* scenario_load checked every run: only a file removed since can get here */
        progress_clear(s);
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        s->status[i] = 2 << 8; /* as if the child had exited with 2 */
        s->done++;
        return 0;
    }
    int next[2];
    if (pipe(next)) {
        fprintf(stderr, "dtsim run: pipe: %s\n", strerror(errno));
        return -1;
    }
    /* its own group, so that a terminal's ^C reaches it once, through the sweep; it does not
     * outlive the sweep: killed with it (even by SIGKILL), it stops as a signal stops it */
    child_ctx_t ctx = {s, run, i, s->next_gate, next[1], next[0]};
    cli_child_t child;
    int started = cli_child_start(&child, CLI_CHILD_STDERR | CLI_CHILD_TIED | CLI_CHILD_GROUP, -1,
                                  child_main, &ctx);
    int e = errno;
    close(next[1]); /* the child is its only writer */
    if (started != 0) {
        close(next[0]); /* the next run waits on the same gate as this one would have */
        fprintf(stderr, "dtsim run: fork: %s\n", strerror(e));
        return -1;
    }
    if (s->next_gate >= 0)
        close(s->next_gate);
    s->next_gate = next[0];
    fcntl(child.fd, F_SETFL, fcntl(child.fd, F_GETFL) | O_NONBLOCK);
    c->child = child;
    c->index = i;
    c->len = 0;
    s->status[i] = 0;
    s->live++;
    return 0;
}

/* Reaps c if it has ended (block: wait for it); relays the rest of its stderr. */
static void child_reap(sweep_t *s, child_t *c, int block)
{
    if (!cli_child_reap(&c->child, block))
        return;
    if (c->child.fd >= 0) {
        fcntl(c->child.fd, F_SETFL, fcntl(c->child.fd, F_GETFL) & ~O_NONBLOCK);
        child_read(s, c);
    }
    int status = c->child.status;
    s->status[c->index] = status;
    s->live--;
    s->done++;
    /* a run stopped as it was told is not done: counting it would say more were done than
     * finished (dtsim plan's PARTIAL line counts those that finished) */
    if (s->told[c->index] && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        s->cut++;
        return;
    }
    progress_line(s);
}

/* Starts runs and waits for them until every started one has ended. */
static void sweep_execute(sweep_t *s)
{
    scenario_t *run = dt_malloc(sizeof *run);
    struct pollfd *pfd = dt_malloc(sizeof *pfd * (size_t)s->jobs);
    long next = 0;
    int forwarded = 0, failed_start = 0, stops = 0;
    double deadline = s->opts ? s->opts->deadline : 0;
    for (;;) {
        if (signals > forwarded) {
            forwarded = signals;
            for (int j = 0; j < s->jobs; j++)
                if (s->slots[j].child.pid) {
                    kill(s->slots[j].child.pid, stop_signal);
                    s->told[s->slots[j].index] = 1;
                }
        }
        /* the deadline: stop as a first signal stops, then as a second after the grace */
        double now = deadline > 0 ? cli_sweep_now() : 0;
        if (deadline > 0 && stops < 2 && now >= deadline + (stops ? SWEEP_STOP_GRACE_S : 0)) {
            s->deadline_hit = 1;
            stops++;
            for (int j = 0; j < s->jobs; j++)
                if (s->slots[j].child.pid) {
                    kill(s->slots[j].child.pid, SIGTERM);
                    s->told[s->slots[j].index] = 1;
                }
        }
        int stopping = stop_signal || s->deadline_hit;
        for (int j = 0; j < s->jobs && !stopping && !failed_start; j++) {
            while (next < s->n && s->skip && s->skip[next])
                next++; /* finished in the sweep this one resumes */
            if (next < s->n && !s->slots[j].child.pid && child_start(s, &s->slots[j], next++, run))
                failed_start = 1;
        }
        while (next < s->n && s->skip && s->skip[next])
            next++;
        if (!s->live && (next == s->n || stopping || failed_start))
            break;
        int n = 0;
        for (int j = 0; j < s->jobs; j++)
            if (s->slots[j].child.pid && s->slots[j].child.fd >= 0)
                pfd[n++] = (struct pollfd){.fd = s->slots[j].child.fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)n, 100) > 0)
            for (int j = 0; j < s->jobs; j++)
                if (s->slots[j].child.pid && s->slots[j].child.fd >= 0)
                    child_read(s, &s->slots[j]);
        for (int j = 0; j < s->jobs; j++)
            if (s->slots[j].child.pid)
                child_reap(s, &s->slots[j], 0);
        progress_show(s);
    }
    progress_clear(s);
    if (s->next_gate >= 0)
        close(s->next_gate);
    s->next_gate = -1;
    free(pfd);
    free(run);
}

/* ---- the summary table ------------------------------------------------------------------ */

typedef struct row {
    int stored;     /* a run row exists */
    int64_t id;     /* its id in the database */
    int summarized; /* and its summary */
    char name[SCENARIO_STR];
    char strategy[32];
    char status[32];
    double bandwidth, accuracy, time_to_target, bytes; /* NAN: none */
} row_t;

/* The sweep's runs as stored: rows[sweep_index]. The database was opened (and its vanished
 * writers' runs marked interrupted) by results_db_open just before. */
static dt_status read_rows(const sweep_t *s, row_t *rows, dt_err_t *err)
{
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    dt_status st = results_query_open(&q, s->base->db, err);
    if (st == DT_OK)
        st = results_query_sweep(q, s->id, &runs, err);
    for (size_t k = 0; k < runs.n; k++) {
        const results_run_view_t *v = &runs.v[k];
        long i = v->sweep_index;
        if (s->opts && s->opts->index) { /* a continued sweep: the run of that index, if ours */
            long at = 0;
            while (at < s->n && s->opts->index[at] != i)
                at++;
            i = at;
        }
        if (i < 0 || i >= s->n)
            continue;
        row_t *r = &rows[i];
        r->stored = 1;
        r->id = v->id;
        snprintf(r->name, sizeof r->name, "%s", v->name);
        snprintf(r->strategy, sizeof r->strategy, "%s", v->strategy);
        snprintf(r->status, sizeof r->status, "%s", v->status);
        r->bandwidth = v->bandwidth;
        r->accuracy = v->final_accuracy;
        r->time_to_target = v->time_to_target;
        r->bytes = v->total_bytes;
        r->summarized = v->has_summary;
    }
    results_runs_free(&runs);
    results_query_close(q);
    return st;
}

/* A run with no row: its name and strategy from the scenario, its status from how its
 * child ended. */
static void row_unstored(const sweep_t *s, long i, row_t *r, scenario_t *run)
{
    dt_err_t err;
    if (sweep_member(s, i, run, &err) == DT_OK) {
        snprintf(r->name, sizeof r->name, "%s", run->name);
        snprintf(r->strategy, sizeof r->strategy, "%s", run->strategy->name);
        r->bandwidth = run->bandwidth;
    } else {
        snprintf(r->name, sizeof r->name, "%.480s/run %ld", s->base->name, i);
    }
    int w = s->status[i];
    snprintf(r->status, sizeof r->status, "%s",
             w == RUN_NOT_STARTED ? "not run"
             : WIFSIGNALED(w)     ? "killed"
                                  : "failed");
}

/* A run told to stop that finished all the same (its row stored, its exit the signal's) was
 * not counted done as it ended: the progress's last line again, counting it, so that it says
 * what the database (and dtsim plan's PARTIAL line) says finished. */
static void progress_settle(sweep_t *s, const row_t *rows)
{
    long late = 0;
    for (long i = 0; i < s->n; i++) {
        int w = s->status[i];
        late += s->told[i] && w != RUN_NOT_STARTED && !(WIFEXITED(w) && WEXITSTATUS(w) == 0) &&
                !strcmp(rows[i].status, "finished");
    }
    if (!late)
        return;
    s->cut -= late;
    progress_line(s);
}

static void print_table(const row_t *rows, long n)
{
    int width = 24;
    for (long i = 0; i < n; i++)
        if ((int)strlen(rows[i].name) > width)
            width = (int)strlen(rows[i].name);
    printf("%-*s %-10s %10s %8s %14s %9s %s\n", width, "run", "strategy", "bandwidth", "accuracy",
           "time_to_target", "bytes", "status");
    for (long i = 0; i < n; i++) {
        const row_t *r = &rows[i];
        char bw[64] = "-", acc[32] = "-", ttt[32] = "-", bytes[32] = "-";
        if (isfinite(r->bandwidth) && r->bandwidth > 0)
            scenario_format_bandwidth(r->bandwidth, bw, sizeof bw);
        if (!isnan(r->accuracy))
            snprintf(acc, sizeof acc, "%.4f", r->accuracy);
        if (!isnan(r->time_to_target))
            snprintf(ttt, sizeof ttt, "%.4fs", r->time_to_target);
        else if (r->summarized && !isnan(r->accuracy)) /* timing-only runs have neither */
            snprintf(ttt, sizeof ttt, "never");
        if (!isnan(r->bytes))
            snprintf(bytes, sizeof bytes, "%.3g", r->bytes);
        printf("%-*s %-10s %10s %8s %14s %9s %s\n", width, r->name, r->strategy, bw, acc, ttt,
               bytes, r->status);
    }
}

/* ---- resuming --------------------------------------------------------------------------- */

void cli_sweep_fingerprint(const scenario_t *base, char *out, size_t size)
{
    scenario_t *copy = dt_malloc(sizeof *copy);
    *copy = *base;
    copy->db[0] = '\0';
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    DT_CHECK(f, "open_memstream failed");
    scenario_write(copy, f);
    fclose(f);
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    free(text);
    free(copy);
    snprintf(out, size, "%016llx", (unsigned long long)h);
}

/* --resume: the newest sweep in the database whose runs carry s's fingerprint into s->id
 * ("" none), and which of its members finished into s->skip. A missing database holds none. */
static dt_status sweep_find_resumed(sweep_t *s, dt_err_t *err)
{
    s->id[0] = '\0';
    if (access(s->base->db, F_OK) != 0)
        return DT_OK;
    results_query_t *q = NULL;
    dt_status st = results_query_open_current(&q, s->base->db, err);
    if (st)
        return st;
    sqlite3 *h = results_query_sqlite(q);
    sqlite3_stmt *find = NULL, *done = NULL, *mean = NULL;
    if (sqlite3_prepare_v2(h,
                           "SELECT r.sweep FROM runs r JOIN params p ON p.run = r.id AND p.key = "
                           "'sweep.fingerprint' WHERE r.sweep IS NOT NULL AND p.value = ?1 "
                           "ORDER BY r.id DESC LIMIT 1",
                           -1, &find, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h,
                           "SELECT DISTINCT sweep_index FROM runs WHERE sweep = ?1 AND "
                           "status = 'finished'",
                           -1, &done, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h,
                           "SELECT avg((julianday(ended) - julianday(started)) * 86400) FROM "
                           "runs WHERE sweep = ?1 AND status = 'finished'",
                           -1, &mean, NULL) != SQLITE_OK) {
        st = dt_err_input(err, "%s: cannot read its sweeps: %s", s->base->db, sqlite3_errmsg(h));
        goto out;
    }
    sqlite3_bind_text(find, 1, s->fingerprint, -1, SQLITE_STATIC);
    if (sqlite3_step(find) != SQLITE_ROW)
        goto out;
    snprintf(s->id, sizeof s->id, "%s", (const char *)sqlite3_column_text(find, 0));
    sqlite3_bind_text(done, 1, s->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(mean, 1, s->id, -1, SQLITE_STATIC);
    if (sqlite3_step(mean) == SQLITE_ROW && sqlite3_column_type(mean, 0) != SQLITE_NULL)
        s->stored_mean = sqlite3_column_double(mean, 0);
    while (sqlite3_step(done) == SQLITE_ROW) {
        long i = (long)sqlite3_column_int64(done, 0);
        if (i >= 0 && i < s->n && !s->skip[i]) {
            s->skip[i] = 1;
            s->skipped++;
        }
    }
out:
    sqlite3_finalize(find);
    sqlite3_finalize(done);
    sqlite3_finalize(mean);
    results_query_close(q);
    return st;
}

/* ---- the command ------------------------------------------------------------------------ */

/* Bad input found before anything runs or is written: a member's scenario or memory, the
 * database's path. Prints the line and returns nonzero. */
static int sweep_precheck(const sweep_t *s)
{
    dt_err_t err;
    /* a layout that does not fit its device's memory is bad input, found before anything
     * runs or is written: each run on a device that states its capacity, as check does */
    scenario_t *each = dt_malloc(sizeof *each);
    for (long i = 0; i < s->n; i++) {
        char memory[512];
        if (sweep_member(s, i, each, &err) ||
            (!(s->opts && s->opts->checked) &&
             cli_check_scenario(each, s->argv0, CLI_CHECK_DRY_MEMORY, memory, sizeof memory,
                                &err))) {
            fprintf(stderr, "dtsim run: member %ld: %s\n", i, err.msg);
            free(each);
            return 1;
        }
    }
    free(each);
    /* the database first: a bad path is bad input, found before anything runs */
    results_db_t *db = NULL;
    if (results_db_open(&db, s->base->db, &err)) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        return 1;
    }
    results_db_close(db);
    return 0;
}

/* Every run that did not finish, by name (ten of them, then a count), and the line saying
 * how many; returns the command's exit code for them. */
static int sweep_report_unfinished(const sweep_t *s, const row_t *rows)
{
    long bad = 0;
    for (long i = 0; i < s->n; i++) {
        int w = s->status[i];
        int ok = !strcmp(rows[i].status, "finished") &&
                 (s->skip[i] || (w != RUN_NOT_STARTED && WIFEXITED(w) && WEXITSTATUS(w) == 0));
        /* stopped on purpose (opts): not started, or stopped as it was told */
        int stopped = s->opts && (w == RUN_NOT_STARTED || s->told[i]);
        if (ok || stopped)
            continue;
        if (bad++ < 10) {
            char how[48] = "";
            if (w != RUN_NOT_STARTED && WIFEXITED(w) && WEXITSTATUS(w))
                snprintf(how, sizeof how, ", exit code %d", WEXITSTATUS(w));
            else if (w != RUN_NOT_STARTED && WIFSIGNALED(w))
                snprintf(how, sizeof how, ", signal %d", WTERMSIG(w));
            /* the member's index in the sweep, and the run id dtsim show takes */
            char id[64] = "";
            if (rows[i].stored)
                snprintf(id, sizeof id, ", run %lld", (long long)rows[i].id);
            fprintf(stderr, "dtsim run: member %ld%s (%s): %s%s\n", i, id, rows[i].name,
                    rows[i].status, how);
        }
    }
    if (bad > 10)
        fprintf(stderr, "dtsim run: ... and %ld more\n", bad - 10);
    if (!bad)
        return CLI_EXIT_OK;
    fprintf(stderr, "dtsim run: %ld of %ld runs did not finish%s\n", bad, s->n,
            !s->opts && stop_signal ? " (dtsim run with --resume, the same scenario, --set "
                                      "options and --db, runs the rest)"
                                    : "");
    return CLI_EXIT_RUN;
}

/* The runs of s (base and list set), as cli_sweep_run and cli_sweep_run_list say; resume:
 * continue the stored sweep of the same scenario (a plain sweep only). */
static int sweep_main(sweep_t s, int jobs, int resume, char *id, size_t id_size)
{
    const scenario_t *base = s.base;
    s.jobs = jobs < s.n ? jobs : (int)s.n;
    s.id[0] = '\0';
    dt_err_t err;
    if (id)
        id[0] = '\0';
    if (sweep_precheck(&s))
        return CLI_EXIT_USAGE;

    if (!s.opts) {
        cli_sweep_fingerprint(base, s.fingerprint, sizeof s.fingerprint);
        snprintf(s.label, sizeof s.label, "sweep %.480s", s.name ? s.name : base->name);
    }
    s.skip = dt_calloc((size_t)s.n, 1);
    if (resume && sweep_find_resumed(&s, &err)) {
        fprintf(stderr, "dtsim run: --resume: %s\n", err.msg);
        free(s.skip);
        return CLI_EXIT_USAGE;
    }
    if (resume && !s.id[0])
        fprintf(stderr,
                "dtsim run: --resume: no sweep of this scenario in %s: running all %ld "
                "runs\n",
                base->db, s.n);
    else if (resume)
        printf("resuming sweep %s of %s: %ld of %ld runs finished, %ld to run\n", s.id, base->db,
               s.skipped, s.n, s.n - s.skipped);
    fflush(stdout);

    char stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if (s.id[0])
        ; /* resumed */
    else if (s.opts && s.opts->id && s.opts->id[0])
        snprintf(s.id, sizeof s.id, "%s", s.opts->id);
    else
        snprintf(s.id, sizeof s.id, "%.480s-%s-%ld", s.name ? s.name : base->name, stamp,
                 (long)getpid());
    if (id)
        snprintf(id, id_size, "%s", s.id);

    s.slots = dt_calloc((size_t)s.jobs, sizeof *s.slots);
    s.status = dt_malloc(sizeof *s.status * (size_t)s.n);
    s.told = dt_calloc((size_t)s.n, 1);
    s.next_gate = -1;
    for (long i = 0; i < s.n; i++)
        s.status[i] = RUN_NOT_STARTED;
    s.progress = isatty(STDERR_FILENO);
    s.t0 = cli_sweep_now();

    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    stop_signal = signals = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (s.skipped && s.skipped < s.n)
        progress_line(&s); /* resumed: where it stands, at the earlier runs' pace */
    sweep_execute(&s);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (s.progress && !(s.opts && s.opts->started > 0)) /* a caller's batch: its line goes on */
        fprintf(stderr, "%ld runs in %.0fs\n", s.done, cli_sweep_now() - s.t0);

    /* the table, from the database (opening it marks the dead children's runs interrupted) */
    int rc = CLI_EXIT_OK;
    results_db_t *db = NULL;
    row_t *rows = dt_calloc((size_t)s.n, sizeof *rows);
    for (long i = 0; i < s.n; i++)
        rows[i].bandwidth = rows[i].accuracy = rows[i].time_to_target = rows[i].bytes = NAN;
    if (results_db_open(&db, base->db, &err) || read_rows(&s, rows, &err)) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = CLI_EXIT_RUN;
    }
    results_db_close(db);
    progress_settle(&s, rows);
    scenario_t *run = dt_malloc(sizeof *run);
    for (long i = 0; i < s.n; i++)
        if (!rows[i].stored)
            row_unstored(&s, i, &rows[i], run);
    free(run);
    if (!(s.opts && s.opts->quiet)) {
        printf("sweep %s: %ld runs\n", s.id, s.n);
        print_table(rows, s.n);
        printf("stored in %s (dtsim plot --db %s --sweep %s draws them)\n", base->db, base->db,
               s.id);
    }
    fflush(stdout);

    if (sweep_report_unfinished(&s, rows) != CLI_EXIT_OK)
        rc = CLI_EXIT_RUN;
    free(rows);
    free(s.status);
    free(s.skip);
    free(s.told);
    free(s.slots);
    if (s.opts) {
        s.opts->stopped = stop_signal ? stop_signal : s.deadline_hit ? -1 : 0;
        return rc;
    }
    if (stop_signal) {
        int sig = stop_signal;
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return rc;
}

int cli_sweep_run(const scenario_t *base, int jobs, int resume, const char *argv0, char *id,
                  size_t id_size)
{
    DT_ASSERT(jobs >= 1 && jobs <= CLI_SWEEP_MAX_JOBS && base->sweep.n_keys > 0);
    sweep_t s = {.base = base, .argv0 = argv0, .n = scenario_sweep_count(base)};
    return sweep_main(s, jobs, resume, id, id_size);
}

int cli_sweep_run_list(const scenario_t *runs, long n, const char *name, int jobs,
                       const char *argv0, char *id, size_t id_size)
{
    DT_ASSERT(jobs >= 1 && jobs <= CLI_SWEEP_MAX_JOBS && n > 0);
    sweep_t s = {.base = &runs[0], .list = runs, .name = name, .argv0 = argv0, .n = n};
    return sweep_main(s, jobs, 0, id, id_size);
}

int cli_sweep_run_opts(const scenario_t *runs, long n, const char *name, int jobs,
                       const char *argv0, char *id, size_t id_size, cli_sweep_opts_t *o)
{
    DT_ASSERT(jobs >= 1 && jobs <= CLI_SWEEP_MAX_JOBS && n > 0 && o);
    o->stopped = 0;
    sweep_t s = {.base = &runs[0], .list = runs, .name = name, .argv0 = argv0, .n = n, .opts = o};
    return sweep_main(s, jobs, 0, id, id_size);
}
