/* The goodput model (scenario/goodput.h) checked by simulation: jobs that compute, write a
 * checkpoint every interval and, at each crash of a Poisson process (exponential times from
 * a seeded stream), lose what they computed since their last complete checkpoint, restart,
 * and go on from it. Each job is a SimGrid actor that a failure actor kills at each crash
 * and starts again, as a crashed process is; the simulated events are this code, apart from
 * the formula's. Several jobs run side by side in one simulation, and jobs of one seed meet
 * the same failure times (a fair comparison of their intervals). SimGrid runs once per
 * process: call sim_goodput_simulate once. */
#ifndef DTSIM_GOODPUT_SIM_H
#define DTSIM_GOODPUT_SIM_H

#include <stdint.h>

#include "common.h"

typedef struct sim_goodput_job {
    /* what the job is (seconds) */
    double interval_s; /* compute between checkpoints (the last interval may be shorter) */
    double ckpt_s;     /* one checkpoint's write time */
    double restart_s;  /* a restart after a crash */
    double mtbf_s;     /* the job's mean time between crashes */
    double work_s;     /* failure-free compute time to complete */
    uint64_t seed;     /* the crash times' stream */
    /* what the simulation measured (seconds): wall = useful + ckpt + rework + restart */
    double wall_s;          /* until the last checkpoint completed */
    double useful_s;        /* compute a complete checkpoint kept */
    double ckpt_spent_s;    /* writing checkpoints that completed */
    double rework_s;        /* compute and writing a crash lost */
    double restart_spent_s; /* restarting, restarts a crash cut short included */
    long failures, checkpoints;
} sim_goodput_job_t;

/** Simulates jobs[0..n) side by side until each has done its work; fills their measured
 * fields. argv0 for SimGrid's messages. DT_ERR_INPUT when a job's times are not positive
 * (restart_s may be 0) or no temporary platform file can be written. */
dt_status sim_goodput_simulate(sim_goodput_job_t *jobs, int n, const char *argv0, dt_err_t *err);

#endif
