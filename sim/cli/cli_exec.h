/* The run service of the commands (cli_exec.c): one resolved scenario run in this process and
 * stored (dtsim run, each member of a sweep, each layout dtsim plan simulates), a file of jobs
 * run as one simulation, what a run would meet checked in a child process (dtsim check, dtsim
 * plan's fit), and the one child-process helper that every command forking a child uses. */
#ifndef DTSIM_CLI_EXEC_H
#define DTSIM_CLI_EXEC_H

#include <stddef.h>
#include <sys/types.h>

#include "common.h"
#include "scenario.h"

/* ---- running a scenario ----------------------------------------------------------------- */

/* A row of a run's params table besides its scenario keys ("plan.options": dtsim plan's
 * own, for --show and --resume); number NAN when it is text only. */
typedef struct cli_param {
    const char *key, *text;
    double number;
} cli_param_t;

/* live: the terminal view (--live) and the published state (--publish), or'd */
enum { CLI_LIVE_TERM = 1, CLI_LIVE_PUBLISH = 2 };
/** Runs one resolved scenario in this process (SimGrid runs once per process) and stores it
 * in sc->db with the sweep id and index (NULL, 0: none); prints the summary table when
 * summary is set; draws the live view on stderr and/or publishes it (live), at pace
 * simulated seconds per wall second (0: as fast as it goes). Returns the exit code. */
int cli_exec_run(const scenario_t *sc, const char *argv0, const char *sweep, long index,
                 int summary, int live, double pace);
/** cli_exec_run with no summary, no live view, and params[0..n) stored with the run's
 * scenario keys (one transaction: a run row never lacks them). */
int cli_exec_run_with(const scenario_t *sc, const char *argv0, const char *sweep, long index,
                      const cli_param_t *params, int n);
/** In a sweep's child, before it runs: the run begins its row only after a byte or end of
 * file on in (the run started before it began its row, or ended), then writes a byte to
 * out, so that run ids follow the order the runs were started; -1: no one to wait for, or
 * to tell. Both are closed once used. */
void cli_exec_order(int in, int out);
/** A file of jobs (jobs.h): every job set up and stored as its own run (TOP/JOB, under the
 * sweep id, its index the job's), then one simulation of them all, a summary each. Returns
 * the exit code. */
int cli_exec_jobs(const scenario_t *top, const char *argv0, const char *id);

/* ---- checking a scenario: the one pipeline ---------------------------------------------- */

/* The stages of a scenario's check, in the order cli_check_scenario runs them. The first,
 * the scenario's own checks (scenario_validate: units, ranges, relations between keys, the
 * strategy's check of its keys), is loading's: a scenario here is loaded, or a sweep's run
 * expanded (scenario_sweep_run), and so checked. */
enum {
    CLI_CHECK_PLATFORM = 1,   /* the platform: a topology's shape, a platform file as SimGrid
                               * loads it (in a child: SimGrid ends a process on a bad file) */
    CLI_CHECK_REAL = 2,       /* what real mode cannot run (sim_real_check; --real) */
    CLI_CHECK_DRY = 4,        /* what a run meets before its first step, in a child
                               * (cli_exec_check: data, fault targets, the layout, memory) */
    CLI_CHECK_DRY_MEMORY = 8, /* CLI_CHECK_DRY only on a device that states its memory */
};
/** The one place a command checks a scenario before running it: the stages asked for, in
 * order, the first refusal returned (DT_ERR_INPUT, one line naming file, line and key in
 * err: the command prints it and exits 2). memory (n bytes) gets the dry check's line, or
 * "" (no dry check, or a device without a capacity). */
dt_status cli_check_scenario(const scenario_t *sc, const char *argv0, unsigned stages, char *memory,
                             size_t n, dt_err_t *err);

/* ---- checking a scenario in a child ----------------------------------------------------- */

/** What a run of sc meets before its first step (data, platform, fault targets, every host's
 * memory against its device's), met in a child process as `run` would meet it; DT_ERR_INPUT
 * with the run's one-line error. On success memory gets "worker 3 holds 61.2 GB of 80 GB
 * (h100)", or "" when the device states no capacity. */
dt_status cli_exec_check(const scenario_t *sc, const char *argv0, char *memory, size_t n,
                         dt_err_t *err);
/* A check under way in a child (cli_exec_check_start), for a caller that checks several at
 * once (dtsim plan -j). */
typedef struct cli_child {
    pid_t pid;  /* 0: none (never started, or reaped) */
    int fd;     /* read end of the pipe the child writes; -1: closed */
    int status; /* waitpid's status, once reaped */
} cli_child_t;
typedef struct cli_exec_check {
    cli_child_t child; /* pid 0: no child */
    char path[512];    /* the scenario's, for a child that dies without a word */
} cli_exec_check_t;
/** cli_exec_check in two halves: start forks the child (sc may be reused as soon as it
 * returns), finish waits for it and answers as cli_exec_check does. A start with nothing to
 * check, or that cannot fork, leaves no child and its finish says DT_OK with memory "" (a
 * run would then meet what there is). */
void cli_exec_check_start(const scenario_t *sc, const char *argv0, cli_exec_check_t *c);
dt_status cli_exec_check_finish(cli_exec_check_t *c, char *memory, size_t n, dt_err_t *err);

/* ---- child processes -------------------------------------------------------------------- */

/* How a child's standard streams and signals are set (cli_child_start's flags). */
enum {
    CLI_CHILD_QUIET = 1,  /* stderr to /dev/null too */
    CLI_CHILD_STDERR = 2, /* stderr into the pipe (SIGPIPE ignored: with dtsim gone, a write
                           * fails instead of killing the child before it records its end) */
    CLI_CHILD_TIED = 4,   /* dies with dtsim however dtsim ends (SIGKILL included), as on a
                           * SIGTERM (a run stops and is recorded interrupted) */
    CLI_CHILD_GROUP = 8,  /* a process group of its own: a terminal's ^C reaches it only
                           * through dtsim, which forwards it */
};
/** Forks a child that runs body(ctx, fd), fd the write end of a pipe whose read end is c->fd,
 * and exits with the code body returns (its stdio flushed). The child's stdout goes to out
 * (-1: /dev/null); SIGINT and SIGTERM are blocked across the fork and the child's handlers
 * of them are the defaults (an ignored one stays ignored, as across exec). Both ends of the
 * pipe close on exec. Returns 0, or -1 with errno
 * (pipe, fork) and nothing left open. */
int cli_child_start(cli_child_t *c, int flags, int out, int (*body)(void *ctx, int fd), void *ctx);
/** Reaps c when it has ended (block: waits for it): 1 with c->status set and c->pid 0, 0
 * while it runs. The pipe is the caller's to read and close. */
int cli_child_reap(cli_child_t *c, int block);
/** Reads c's pipe to its end into text (n - 1 bytes kept, NUL-terminated), closes it, and
 * reaps c; returns cli_child_code of its status. A child that dies closes its end of the
 * pipe, so the read ends: no hang. */
int cli_child_finish(cli_child_t *c, char *text, size_t n);
/** A wait status as an exit code: the child's own, or 128 + the signal that killed it. */
int cli_child_code(int status);
/** A wait status in words: "exit status 3", "signal 9". */
void cli_child_describe(int status, char *buf, size_t n);

/* Programs run as children, without a shell: path run with args (args[0] its name, NULL at
 * the end), its stdout to `out` (-1: /dev/null), stderr shared, tied to dtsim (above).
 * cli_spawn_start returns the pid (or -1), cli_spawn_wait its exit code (127 when it could
 * not start, 128 killed), cli_spawn both. */
pid_t cli_spawn_start(const char *path, const char *const *args, int out);
int cli_spawn_wait(pid_t pid);
int cli_spawn(const char *path, const char *const *args, int out);

#endif
