/* `dtsim run` of a scenario with a [sweep] (cli_sweep.c). */
#ifndef DTSIM_CLI_SWEEP_H
#define DTSIM_CLI_SWEEP_H

#include "cli_exec.h"
#include "scenario.h"

#define CLI_SWEEP_MAX_JOBS 256

/* Runs every run of base's sweep (base loaded and validated by scenario_load, its database
 * path final), each in its own child process, at most jobs (1..CLI_SWEEP_MAX_JOBS) at once,
 * then prints the sweep's summary table. Returns the exit code: 0 every run finished, 1 some
 * did not (each one is named on stderr), 2 bad input (nothing ran). After SIGINT or SIGTERM,
 * forwarded to the children and waited for, the process ends on that signal. The sweep's id
 * goes to id (id_size bytes) unless id is NULL; "" when nothing ran. resume: continue the
 * newest stored sweep of the same scenario (cli_sweep_fingerprint) under its id, running only
 * its members with no finished run (none stored: every member, in a new sweep). */
int cli_sweep_run(const scenario_t *base, int jobs, int resume, const char *argv0, char *id,
                  size_t id_size);
/* The same for runs made by the caller (runs[0..n), each validated, all with runs[0]'s
 * database): one sweep whose id begins with name, run i its index i. */
int cli_sweep_run_list(const scenario_t *runs, long n, const char *name, int jobs,
                       const char *argv0, char *id, size_t id_size);

/* What a caller that must answer whatever happens (dtsim plan) asks of a list's sweep. */
typedef struct cli_sweep_opts {
    const char *id;    /* continue this sweep (its id, "": a new one, as above) */
    const long *index; /* runs[i]'s sweep index (NULL: i) */
    double deadline;   /* CLOCK_MONOTONIC seconds (cli_sweep_now) after which no run starts
                        * and the running ones are stopped; 0: none */
    const char *label; /* when stderr is no terminal: "LABEL: 3/8 done, 12 s, about 20 s
                        * left" after each run; NULL: nothing (the terminal line as ever) */
    long done_before;  /* runs counted done before these (the progress says so) */
    long total;        /* runs in all for the progress; 0: n */
    double started;    /* > 0: the caller's start (cli_sweep_now), from which the progress
                        * counts the elapsed time (a plan's, over its batches); 0: the
                        * sweep's own start */
    double pace_since; /* with started: when the caller's first run began, and how many of
                        * its runs finished before these (pace_runs): the estimate of the
                        * time left is that pace over all of them, these included */
    long pace_runs;
    const cli_param_t *params; /* stored with each run's parameters (NULL: none) */
    int n_params;
    int quiet;   /* no table and no "stored in" line (dtsim plan runs its sweep in
                  * batches and prints its own ranking) */
    int checked; /* the runs' memory is checked already (dtsim plan's own check):
                  * no dry run of each before they start */
    int stopped; /* out: 0 ran to the end; the signal (SIGINT, SIGTERM) that stopped
                  * it; -1 the deadline passed */
} cli_sweep_opts_t;
/* cli_sweep_run_list with o: a run stopped by a signal or by the deadline, and one never
 * started, counts as neither failed nor listed (o->stopped says the sweep stopped); after a
 * signal the process does not end on it: the caller answers, then ends as it chooses. */
int cli_sweep_run_opts(const scenario_t *runs, long n, const char *name, int jobs,
                       const char *argv0, char *id, size_t id_size, cli_sweep_opts_t *o);
/* A hash of base's resolved scenario, its database left out (16 hex digits): every run of a
 * plain sweep stores it as its sweep.fingerprint, by which --resume finds the sweep. */
void cli_sweep_fingerprint(const scenario_t *base, char *out, size_t size);
/* The clock of cli_sweep_opts_t.deadline. */
double cli_sweep_now(void);

#endif
