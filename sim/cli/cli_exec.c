/* The run service (see cli_exec.h): a resolved scenario run in this process and stored, its
 * summary printed; a file of jobs run as one simulation; what a run would meet checked in a
 * child process; and the child processes themselves. SimGrid initialises once per process,
 * so whatever runs or checks more than one scenario forks a child for each (cli_child_start)
 * and reads its answer through a pipe: one line (a check's error or memory), a run's stderr
 * (a sweep's member), or nothing (a program spawned). A child that dies closes its end of the
 * pipe, so the parent's read ends and waitpid says how the child ended. */
#define _GNU_SOURCE
#include "cli_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "db.h"
#include "jobs.h"
#include "live.h"
#include "platform.h"
#include "real.h"
#include "run.h"
#include "strategy.h"
#include "transport_mpi.h"

/* ---- child processes -------------------------------------------------------------------- */

/* In a child: sig's handler back to the default, an ignored sig left ignored (as exec does). */
static void handler_default(int sig)
{
    struct sigaction now, dfl = {.sa_handler = SIG_DFL};
    if (sigaction(sig, NULL, &now) == 0 && now.sa_handler != SIG_IGN)
        sigaction(sig, &dfl, NULL);
}

int cli_child_start(cli_child_t *c, int flags, int out, int (*body)(void *ctx, int fd), void *ctx)
{
    int fds[2];
    c->pid = 0;
    c->fd = -1;
    c->status = 0;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old); /* until the child has reset its handlers */
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        handler_default(SIGINT);
        handler_default(SIGTERM);
        if (flags & CLI_CHILD_GROUP)
            setpgid(0, 0);
        /* a parent already gone before prctl: end at once */
        if ((flags & CLI_CHILD_TIED) &&
            (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent))
            _exit(128 + SIGTERM);
        if (flags & CLI_CHILD_STDERR)
            signal(SIGPIPE, SIG_IGN);
        sigprocmask(SIG_SETMASK, &old, NULL);
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        int err_to = flags & CLI_CHILD_STDERR ? fds[1] : flags & CLI_CHILD_QUIET ? null : -1;
        if (out >= 0 || null >= 0)
            dup2(out >= 0 ? out : null, STDOUT_FILENO);
        if (err_to >= 0)
            dup2(err_to, STDERR_FILENO);
        int rc = body(ctx, fds[1]);
        fflush(NULL);
        _exit(rc);
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[1]); /* the child is its only writer */
    if (pid < 0) {
        close(fds[0]);
        errno = e;
        return -1;
    }
    c->pid = pid;
    c->fd = fds[0];
    return 0;
}

int cli_child_reap(cli_child_t *c, int block)
{
    int status;
    pid_t got;
    while ((got = waitpid(c->pid, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR)
        ;
    if (got == 0)
        return 0;
    c->status = got < 0 ? 127 << 8 : status; /* not our child any more: cannot happen */
    c->pid = 0;
    return 1;
}

int cli_child_finish(cli_child_t *c, char *text, size_t n)
{
    size_t len = 0;
    ssize_t got;
    char drop[256];
    while (c->fd >= 0) {
        char *to = len + 1 < n ? text + len : drop;
        size_t room = len + 1 < n ? n - 1 - len : sizeof drop;
        got = read(c->fd, to, room);
        if (got > 0 && to == text + len)
            len += (size_t)got;
        else if (got == 0 || (got < 0 && errno != EINTR)) {
            close(c->fd);
            c->fd = -1;
        }
    }
    if (n)
        text[len] = '\0';
    if (c->pid)
        cli_child_reap(c, 1);
    return cli_child_code(c->status);
}

int cli_child_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void cli_child_describe(int status, char *buf, size_t n)
{
    snprintf(buf, n, "%s %d", WIFSIGNALED(status) ? "signal" : "exit status",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* The program a spawned child becomes, and its arguments. */
typedef struct spawn {
    const char *path;
    const char *const *args;
} spawn_t;

static int spawn_body(void *ctx, int fd)
{
    (void)fd;
    const spawn_t *s = ctx;
    execv(s->path, (char *const *)s->args);
    fprintf(stderr, "dtsim: cannot start %s: %s\n", s->path, strerror(errno));
    return 127;
}

pid_t cli_spawn_start(const char *path, const char *const *args, int out)
{
    /* a testbed then tears down its namespaces, a run stops as on a signal (recorded
     * interrupted) */
    spawn_t s = {path, args};
    cli_child_t c;
    if (cli_child_start(&c, CLI_CHILD_TIED, out, spawn_body, &s) != 0)
        return -1;
    close(c.fd);
    return c.pid;
}

int cli_spawn_wait(pid_t pid)
{
    cli_child_t c = {.pid = pid, .fd = -1};
    if (pid <= 0 || !cli_child_reap(&c, 1))
        return 127;
    return WIFSIGNALED(c.status) ? 128 : cli_child_code(c.status);
}

int cli_spawn(const char *path, const char *const *args, int out)
{
    return cli_spawn_wait(cli_spawn_start(path, args, out));
}

/* ---- checking a scenario in a child ----------------------------------------------------- */

typedef struct check_ctx {
    const scenario_t *sc;
    const char *argv0;
} check_ctx_t;

/* In the child: the same sim_run_init and sim_run_prepare a run does (data, model,
 * partition, platform, fault targets, the strategy's layout and every host's memory against
 * the device's), so `check` refuses what `run` would; the error line, or the fullest host's
 * memory against the device's, written to fd. */
static int check_body(void *ctx, int fd)
{
    const check_ctx_t *c = ctx;
    sim_run_t *run = dt_malloc(sizeof *run);
    dt_err_t e = {""};
    dt_status st = sim_run_init_dry(run, c->sc, c->argv0, &e);
    if (st == DT_OK)
        st = sim_run_prepare(run, &e);
    if (st == DT_OK)
        sim_run_memory_line(run, e.msg, sizeof e.msg); /* what the parent prints */
    if (write(fd, e.msg, strlen(e.msg)) < 0)
        return 3;
    return st == DT_OK ? 0 : st == DT_ERR_INPUT ? 2 : 1;
}

void cli_exec_check_start(const scenario_t *sc, const char *argv0, cli_exec_check_t *c)
{
    c->child.pid = 0;
    c->child.fd = -1;
    snprintf(c->path, sizeof c->path, "%.400s", sc->path);
    /* scenario_validate already checks the rest: what only loading finds is fault targets
     * (platform names), a data folder's files and shapes, and what the hosts hold */
    int own_data = strcmp(sc->data_source, "synthetic") && strcmp(sc->data_source, "fashion-mnist");
    const sim_device_profile_t *dev = scenario_device(sc);
    int capacity = dev && !isnan(dev->value[SIM_DEV_MEMORY]);
    if (!scenario_has_faults(sc) && !(own_data && !sc->profile[0]) && !capacity)
        return;
    check_ctx_t ctx = {sc, argv0};
    cli_child_start(&c->child, CLI_CHILD_QUIET, -1, check_body, &ctx); /* failed: the run
                                                                        * will say it */
}

dt_status cli_exec_check_finish(cli_exec_check_t *c, char *memory, size_t n, dt_err_t *err)
{
    memory[0] = '\0';
    if (!c->child.pid)
        return DT_OK;
    char msg[sizeof err->msg];
    int code = cli_child_finish(&c->child, msg, sizeof msg);
    if (code == 0) {
        snprintf(memory, n, "%s", msg);
        return DT_OK;
    }
    if (!msg[0]) {
        char how[48];
        cli_child_describe(c->child.status, how, sizeof how);
        snprintf(msg, sizeof msg, "%.400s: a run of it could not start (%s)", c->path, how);
    }
    return dt_err_input(err, "%s", msg);
}

dt_status cli_exec_check(const scenario_t *sc, const char *argv0, char *memory, size_t n,
                         dt_err_t *err)
{
    cli_exec_check_t c;
    cli_exec_check_start(sc, argv0, &c);
    return cli_exec_check_finish(&c, memory, n, err);
}

dt_status cli_check_scenario(const scenario_t *sc, const char *argv0, unsigned stages, char *memory,
                             size_t n, dt_err_t *err)
{
    memory[0] = '\0';
    if ((stages & CLI_CHECK_PLATFORM) && sim_platform_check(sc, err))
        return DT_ERR_INPUT;
    if ((stages & CLI_CHECK_REAL) && sim_real_check(sc, err))
        return DT_ERR_INPUT;
    int dry = stages & CLI_CHECK_DRY;
    if (stages & CLI_CHECK_DRY_MEMORY) {
        const sim_device_profile_t *dev = scenario_device(sc);
        dry |= dev && !isnan(dev->value[SIM_DEV_MEMORY]);
    }
    return dry ? cli_exec_check(sc, argv0, memory, n, err) : DT_OK;
}

/* ---- running a scenario ----------------------------------------------------------------- */

/* The gate of a sweep's run (cli_exec_order): the read end from the run started before it,
 * the write end to the next one's; -1: none. */
static int order_in = -1, order_out = -1;

void cli_exec_order(int in, int out)
{
    order_in = in;
    order_out = out;
}

static void order_wait(void)
{
    if (order_in < 0)
        return;
    char byte;
    while (read(order_in, &byte, 1) < 0 && errno == EINTR)
        ;
    close(order_in);
    order_in = -1;
}

static void order_pass(void)
{
    order_wait(); /* a run that never waited (it failed first) passes on in order */
    if (order_out < 0)
        return;
    char byte = 1;
    while (write(order_out, &byte, 1) < 0 && errno == EINTR)
        ;
    close(order_out);
    order_out = -1;
}

/* The resolved configuration as text (what check prints and run stores). */
static char *config_text(const scenario_t *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    DT_CHECK(f, "open_memstream failed");
    scenario_write(sc, f);
    fclose(f);
    return buf;
}

/* "energy: 12.3 kJ (hosts 11.1 kJ, links 1.2 kJ), 61.5 J/step, 0.96 J/sample" and, with a
 * price, "cost: $0.0123, $1.92e-07/sample, $0.0101 to target". */
static void print_energy(const sim_run_t *run)
{
    results_energy_t e;
    sim_run_energy(run, &e);
    if (isnan(e.host_joules))
        printf("energy: links %.4g kJ (%ld ports; no device power figures for the hosts)\n",
               e.link_joules / 1e3, e.link_ports);
    else if (isfinite(e.joules_per_step)) /* no step (stopped at once by a signal): none */
        printf("energy: %.4g kJ (hosts %.4g kJ, links %.4g kJ), %.4g J/step, %.4g J/sample\n",
               (e.host_joules + e.link_joules) / 1e3, e.host_joules / 1e3, e.link_joules / 1e3,
               e.joules_per_step, e.joules_per_sample);
    else
        printf("energy: %.4g kJ (hosts %.4g kJ, links %.4g kJ), no step finished\n",
               (e.host_joules + e.link_joules) / 1e3, e.host_joules / 1e3, e.link_joules / 1e3);
    if (isnan(e.dollars))
        return;
    char target[48] = "";
    if (!isnan(e.dollars_to_target))
        snprintf(target, sizeof target, ", $%.4g to target", e.dollars_to_target);
    printf("cost: $%.4g (%ld hosts), $%.4g/sample%s\n", e.dollars, e.hosts, e.dollars_per_sample,
           target);
}

static void print_summary(const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    double compute, comm, idle, end = sim_run_end_time(run);
    sim_run_shares(run, &compute, &comm, &idle);
    double total = compute + comm + idle;
    char ttt[32];
    if (isnan(run->time_to_target))
        snprintf(ttt, sizeof ttt, "never");
    else
        snprintf(ttt, sizeof ttt, "%.4fs", run->time_to_target);
    char acc[32] = "-"; /* a timing-only run has no accuracy and no time to target */
    if (run->timing_only)
        snprintf(ttt, sizeof ttt, "-");
    else
        snprintf(acc, sizeof acc, "%.4f", run->last_acc);
    printf("%-24s %-10s %8s %8s %12s %14s %9s %7s %7s %7s\n", "run", "strategy", "status",
           "accuracy", "sim_time", "time_to_target", "bytes", "compute", "comm", "idle");
    printf("%-24s %-10s %8s %8s %11.4fs %14s %9.3g %6.1f%% %6.1f%% %6.1f%%\n", sc->name,
           sc->strategy->name,
           run->stalled       ? "stalled"
           : run->failed      ? "failed"
           : run->diverged    ? "diverged"
           : run->interrupted ? "interrupted"
           : run->collapsed   ? "collapsed"
                              : "finished",
           acc, end, ttt, run->bytes_total, total > 0 ? 100 * compute / total : 0,
           total > 0 ? 100 * comm / total : 0, total > 0 ? 100 * idle / total : 0);
    if (run->diverged && run->diverged_why[0])
        printf("diverged: %s\n", run->diverged_why);
    if (run->fault_rows)
        printf("faults: %ld rows (%s)\n", run->fault_rows, run->fault_kinds);
    if (run->note[0])
        printf("%s; idle (measured) %.1f%%\n", run->note, total > 0 ? 100 * idle / total : 0);
    if (run->timing_only)
        printf("timing only: model profile %s (%.4g M parameters, %.4g GFLOP per sample), "
               "%.6g samples/s simulated\n",
               run->profile.name, run->profile.params / 1e6, run->model_flops / 1e9,
               end > 0 ? run->samples / end : 0.0);
    if (run->shape_speed > 0) /* what the layers' shapes make of the device */
        printf("compute by shape: %.4g TFLOP/s per device while computing (%.1f%% of the %s "
               "peak; flat: %.4g TFLOP/s)\n",
               run->shape_speed / 1e12,
               100 * run->shape_speed / scenario_device(sc)->value[sc->precision],
               scenario_precision_name(sc->precision), sc->device_flops / 1e12);
    long steps = sim_run_steps(run);
    if (steps > 0 && end > 0) { /* the parts of a step: what the breakdown table stores */
        double parts[RESULTS_PART_COUNT];
        char line[512];
        sim_breakdown_of(run, end, steps, parts);
        results_breakdown_line(parts, sc->strategy->steps_done ? "round" : "step", line,
                               sizeof line);
        printf("breakdown: %s\n", line);
    }
    print_energy(run);
    if (run->db)
        printf("stored as run %lld in %s\n", (long long)run->run_id, sc->db);
}

/* The label histogram of every worker's (client's) partition, stored with the run. */
static dt_status record_label_histograms(sim_run_t *run, dt_err_t *err)
{
    const trainer_partition_t *p = &run->part;
    int classes = run->train.classes;
    size_t *counts = dt_calloc((size_t)classes, sizeof(size_t));
    dt_status st = results_tx_begin(run->db, err);
    for (int c = 0; st == DT_OK && c < p->clients; c++) {
        trainer_partition_histogram(p, &run->train, c, counts);
        for (int k = 0; st == DT_OK && k < classes; k++)
            if (counts[k])
                st = results_label_hist_add(run->db, run->run_id, c, k, (long)counts[k], err);
    }
    if (st == DT_OK)
        st = results_tx_commit(run->db, err);
    else
        results_tx_rollback(run->db, NULL);
    free(counts);
    return st;
}

/* Stores every resolved key with its numeric value (for selecting and plotting runs). */
typedef struct param_ctx {
    results_db_t *db;
    int64_t run;
    dt_err_t *err;
    dt_status st;
} param_ctx_t;

static void store_param(void *ctx, const char *key, const char *text, double number)
{
    param_ctx_t *c = ctx;
    if (c->st == DT_OK)
        c->st = results_param_add(c->db, c->run, key, text, number, c->err);
}

/* Opens the database (unless *db is open: jobs share one), starts the run row with its
 * configuration, versions, parameters and label histograms (one transaction). */
static dt_status begin_run(sim_run_t *run, const scenario_t *sc, const char *sweep, long index,
                           const cli_param_t *params, int n_params, results_db_t **db,
                           char **config, dt_err_t *err)
{
    if (!*db && results_db_open(db, sc->db, err))
        return DT_ERR_INPUT;
    *config = config_text(sc);
    char engine_version[64], name[SCENARIO_STR + 8];
    sim_transport_version(engine_version, sizeof engine_version);
    /* a real run beside the simulated one of the same scenario: NAME-real, its engine
     * "real: Open MPI v4.1.4" */
    snprintf(name, sizeof name, "%s%s", sc->name, run->real ? "-real" : "");
    results_run_info_t info = {
        .name = name,
        .strategy = sc->strategy->name,
        .config = *config,
        .dtsim_version = DTSIM_VERSION,
        .simgrid_version = engine_version,
        .seed = sc->seed,
        .sweep = sweep,
        .sweep_index = index,
    };
    if (results_tx_begin(*db, err))
        return DT_ERR_RUN;
    param_ctx_t pc = {*db, 0, err, DT_OK};
    pc.st = results_run_begin(*db, &info, &run->run_id, err);
    pc.run = run->run_id;
    if (pc.st == DT_OK)
        scenario_foreach_key(sc, store_param, &pc);
    for (int i = 0; i < n_params; i++)
        store_param(&pc, params[i].key, params[i].text, params[i].number);
    if (pc.st != DT_OK || results_tx_commit(*db, err)) {
        results_tx_rollback(*db, NULL);
        return DT_ERR_RUN;
    }
    run->db = *db;
    if (run->timing_only)
        return DT_OK; /* no data */
    return record_label_histograms(run, err) ? DT_ERR_RUN : DT_OK;
}

static int run_scenario(const scenario_t *sc, const char *argv0, const char *sweep, long index,
                        int summary, int live, double pace, const cli_param_t *params, int n_params)
{
    dt_err_t err;
    sim_run_t *run = dt_malloc(sizeof *run);
    results_db_t *db = NULL;
    char *config = NULL;
    int rc = CLI_EXIT_OK;
    dt_status st;
    /* real mode: rank 0 speaks and stores; every process learns whether all could start */
    int real = sim_transport_is_real(), speaks = sim_real_rank() == 0;
    /* the layout is refused before anything is written when it does not fit */
    if (sim_run_init(run, sc, argv0, &err) || sim_run_prepare(run, &err)) {
        if (speaks)
            fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = CLI_EXIT_USAGE;
        if (real)
            sim_real_min_long(0);
        goto done;
    }
    if (run->oversubscribed[0] && speaks)
        fprintf(stderr, "dtsim run: %s: %s (timed anyway: run.allow_oversubscribed_memory)\n",
                sc->name, run->oversubscribed);
    if (speaks)
        order_wait(); /* run ids in the sweep's order */
    st = speaks ? begin_run(run, sc, sweep, index, params, n_params, &db, &config, &err) : DT_OK;
    order_pass();
    if (st) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
        if (real)
            sim_real_min_long(0);
        goto done;
    }
    if (real && !sim_real_min_long(1)) {
        if (speaks)
            fprintf(stderr,
                    "dtsim run: %s: another process could not start the run (its "
                    "error is above)\n",
                    sc->name);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    if (!speaks) {
        summary = 0;
        run->progress = SIM_PROGRESS_NONE;
    } else if (summary && run->progress == SIM_PROGRESS_NONE) {
        /* a run of its own into a pipe or a log: a plain line now and then (a sweep's or a
         * plan's member, run without a summary, leaves progress to the sweep) */
        run->progress = SIM_PROGRESS_PLAIN;
    }
    if (live && run->db) {
        char base[4096];
        snprintf(base, sizeof base, "%s.live-%lld", sc->db, (long long)run->run_id);
        if (live & CLI_LIVE_TERM)
            run->progress = SIM_PROGRESS_NONE; /* the view shows it */
        sim_live_start(run, pace, live & CLI_LIVE_TERM, live & CLI_LIVE_PUBLISH ? base : NULL);
    }
    if (sim_run_execute(run, &err)) {
        if (speaks)
            fprintf(stderr, "dtsim run: %s: %s\n", sc->name,
                    err.msg[0] ? err.msg : "the run failed");
        rc = CLI_EXIT_RUN;
    }
    if (summary)
        print_summary(run);
    if (summary && real) {
        char lib[64];
        sim_real_library(lib, sizeof lib);
        printf("real run: %d processes, one per host (%s); times are wall-clock seconds\n",
               sim_real_size(), lib);
    }
    if (run->diverged || run->interrupted || run->collapsed)
        rc = CLI_EXIT_RUN;
done:
    sim_run_free(run);
    if (db)
        results_db_close(db);
    free(config);
    free(run);
    return rc;
}

int cli_exec_run(const scenario_t *sc, const char *argv0, const char *sweep, long index,
                 int summary, int live, double pace)
{
    return run_scenario(sc, argv0, sweep, index, summary, live, pace, NULL, 0);
}

int cli_exec_run_with(const scenario_t *sc, const char *argv0, const char *sweep, long index,
                      const cli_param_t *params, int n)
{
    return run_scenario(sc, argv0, sweep, index, 0, 0, 0, params, n);
}

int cli_exec_jobs(const scenario_t *top, const char *argv0, const char *id)
{
    sim_jobs_t j;
    dt_err_t err;
    results_db_t *db = NULL;
    char **config = NULL;
    int rc = CLI_EXIT_OK;
    dt_status st = sim_jobs_load(&j, top, &err);
    if (!st)
        st = sim_jobs_init(&j, argv0, &err);
    for (int i = 0; !st && i < j.n; i++)
        st = sim_run_prepare(&j.runs[i], &err);
    if (st) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    config = dt_calloc((size_t)j.n, sizeof(char *));
    sim_run_t **runs = dt_calloc((size_t)j.n, sizeof(sim_run_t *));
    for (int i = 0; !st && i < j.n; i++) {
        runs[i] = &j.runs[i];
        st = begin_run(runs[i], &j.sc[i], id, i, NULL, 0, &db, &config[i], &err);
    }
    if (st) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
    } else if (sim_run_execute_all(runs, j.n, &err)) {
        fprintf(stderr, "dtsim run: %s: %s\n", top->name, err.msg[0] ? err.msg : "a job failed");
        rc = CLI_EXIT_RUN;
    }
    free(runs);
    for (int i = 0; rc != CLI_EXIT_USAGE && i < j.n; i++) {
        print_summary(&j.runs[i]);
        if (j.runs[i].diverged || j.runs[i].interrupted || j.runs[i].collapsed)
            rc = CLI_EXIT_RUN;
    }
    if (rc != CLI_EXIT_USAGE)
        printf("%d job%s of %s, one simulation (sweep %s)\n", j.n, j.n == 1 ? "" : "s", top->path,
               id);
done:
    for (int i = 0; config && i < j.n; i++)
        free(config[i]);
    free(config);
    sim_jobs_free(&j);
    if (db)
        results_db_close(db);
    return rc;
}
