/* Several jobs on one platform: a top scenario file whose [cluster] describes the shared
 * platform (cluster.workers: its host count) and whose [jobs] lists job scenario files.
 * Each job is an ordinary scenario (its own strategy, model, data, steps, seed, workers)
 * that takes the platform keys from the top file; it becomes its own run (sim_run_t, node
 * names prefixed "jJOB.") on its own hosts, and one simulation runs them all, so that their
 * traffic shares the links. Each job ends when its own nodes end and records its own rows.
 * Sweeps, faults, real mode, the edge platform and platform files are refused. */
#ifndef DTSIM_JOBS_H
#define DTSIM_JOBS_H

#include "run.h"

typedef struct sim_jobs {
    const scenario_t *top;      /* the top file (the caller's) */
    int n;                      /* jobs */
    scenario_t *sc;             /* (n) each job's scenario, named TOP/JOB, run.db the top's */
    char (*path)[SCENARIO_STR]; /* (n) each job's file as the top file names it */
    int *n_hosts;               /* (n) hosts each job takes: its workers, then its servers */
    int **hosts;                /* (n) their indices on the platform (node-I) */
    sim_run_t *runs;            /* (n) after sim_jobs_init */
    int inited;                 /* runs set up (each to free) */
} sim_jobs_t;

/** 1 when sc is a top file of jobs (jobs.files given). */
int sim_jobs_given(const scenario_t *sc);
/** Reads top's job files and places their hosts; DT_ERR_INPUT with one line naming the
 * file, line and key: a job file missing or bad, a platform key a job sets otherwise than
 * the top file, more hosts wanted than cluster.workers, or what jobs do not support. */
dt_status sim_jobs_load(sim_jobs_t *j, const scenario_t *top, dt_err_t *err);
/** Starts the transport, loads the platform of top's cluster.workers hosts and sets up each
 * job's run on its hosts (sim_run_init_job). Once per process, as SimGrid runs once. */
dt_status sim_jobs_init(sim_jobs_t *j, const char *argv0, dt_err_t *err);
/** Frees what sim_jobs_load and sim_jobs_init set up (after a failed one too). */
void sim_jobs_free(sim_jobs_t *j);

#endif
