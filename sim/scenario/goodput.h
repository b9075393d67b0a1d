/* Goodput: what failures cost a training job that writes checkpoints and restarts from the
 * last one after each failure. Pure arithmetic, no SimGrid: dtsim goodput prints it, dtsim
 * plan may call sim_goodput_layout per layout, and sim/engine/goodput_sim.c checks it
 * against simulated crashes.
 *
 * The model (Daly 2006, "A higher order estimate of the optimum checkpoint interval for
 * restart dumps", Future Generation Computer Systems 22(3)): the job computes for tau
 * seconds, then writes a checkpoint for delta seconds, and again; failures of the whole job
 * come as a Poisson process of mean M = (a device's MTBF) / devices, during computing,
 * writing and restarting alike (any device's failure stops a synchronous job); after each
 * failure the job restarts for R seconds and goes on from its last complete checkpoint. A
 * segment of s = tau + delta then takes M e^(R/M) (e^(s/M) - 1) seconds on average, which is
 * exact for this model (not an approximation), and the goodput is tau over that.
 *
 * Defaults and their sources:
 *  - MTBF per device: Llama 3's pre-training saw 419 unexpected interruptions in 54 days on
 *    16,384 H100s (Meta, "The Llama 3 Herd of Models", 2024, section 3.3.4): 54 x 24 h x
 *    16,384 / 419 = 50,677 device-hours per interruption, one every 3.09 h for the job.
 *  - Checkpoint write bandwidth: 2 TB/s for the whole job, the sustained throughput of the
 *    Tectonic storage Llama 3 trained on (same paper, section 3.3.1; 7 TB/s at peak), i.e.
 *    2 TB/s / 16,384 = 122 MB/s per device, scaled with the devices.
 *  - Restart: 10 minutes (detecting the failure, rescheduling onto spare hosts, starting
 *    the collectives, reading the checkpoint back). The paper gives no figure: this is an
 *    assumption, and --restart in dtsim goodput changes it.
 *  - Checkpoint size: parameters x (scenario_value_bytes + scenario_optimizer_bytes): 14
 *    bytes a parameter in bf16 with Adam (2 weights, 4 FP32 master copy, 8 Adam moments),
 *    as the memory check of dtsim check and dtsim plan counts them. */
#ifndef DTSIM_GOODPUT_H
#define DTSIM_GOODPUT_H

#include "common.h"
#include "scenario.h"

/* Llama 3's device-hours per interruption: 54 days x 24 h x 16,384 GPUs / 419. */
#define SIM_GOODPUT_MTBF_DEVICE_H (54.0 * 24.0 * 16384.0 / 419.0)
/* Llama 3's storage, sustained: 2 TB/s over 16,384 GPUs, bytes/s per device. */
#define SIM_GOODPUT_CKPT_BW_DEVICE (2e12 / 16384.0)
/* Restart after a failure, seconds (an assumption: the paper states none). */
#define SIM_GOODPUT_RESTART_S 600.0

/* What the model needs. */
typedef struct sim_goodput_in {
    double devices;        /* N, >= 1 */
    double mtbf_device_s;  /* one device's mean time between failures, s */
    double ckpt_bytes;     /* one checkpoint of the whole model, bytes */
    double ckpt_bw_device; /* bytes/s one device writes: N of them write a checkpoint */
    double ckpt_bw_total;  /* > 0: the whole job's bytes/s instead (a shared file system) */
    double restart_s;      /* R, s */
    double step_s;         /* one training step, s; 0: intervals not rounded to steps */
    double train_s;        /* failure-free training time, s; 0: none (no totals) */
} sim_goodput_in_t;

/* What it gives. Shares of the wall time: useful + checkpoint + rework + restart = 1. */
typedef struct sim_goodput {
    double mtbf_s;        /* M: the job's mean time between failures, s */
    double ckpt_s;        /* delta: one checkpoint's write time, s */
    double young_s;       /* Young's interval sqrt(2 delta M), s */
    double daly_s;        /* Daly's higher-order interval, s */
    double interval_s;    /* tau used: Daly's, rounded to whole steps (at least one) */
    long interval_steps;  /* tau in steps; 0 when step_s is 0 */
    double goodput;       /* useful share at tau */
    double ckpt_share;    /* writing checkpoints that complete */
    double rework_share;  /* computing and writing that a failure then loses */
    double restart_share; /* restarting (restarts a failure cuts short included) */
    double step_wall_s;   /* step_s / goodput: a step's expected wall time; 0 without step_s */
    double wall_s;        /* train_s / goodput: the expected wall time; 0 without train_s */
    double lost_s;        /* wall_s - train_s */
    double failures;      /* expected failures in wall_s */
} sim_goodput_t;

/** Fills in the defaults above for the rest of in (devices 1, no step, no training time). */
void sim_goodput_defaults(sim_goodput_in_t *in);
/** Young's first-order optimum interval, sqrt(2 ckpt_s mtbf_s) (Young 1974). */
double sim_goodput_young(double ckpt_s, double mtbf_s);
/** Daly's higher-order optimum interval (compute time between checkpoints, s). */
double sim_goodput_daly(double ckpt_s, double mtbf_s);
/** Expected useful share of wall time at interval_s under the model above. */
double sim_goodput_fraction(double interval_s, double ckpt_s, double restart_s, double mtbf_s);
/** Bytes of a checkpoint of params parameters in sc's precision and optimizer. */
double sim_goodput_ckpt_bytes(const scenario_t *sc, double params);
/** Everything of sim_goodput_t from in; DT_ERR_INPUT naming a field out of range. */
dt_status sim_goodput_compute(const sim_goodput_in_t *in, sim_goodput_t *out, dt_err_t *err);
/** dtsim plan, a layout at the defaults: its interval, goodput, step_wall_s (and wall_s). */
dt_status sim_goodput_layout(double devices, double step_s, double params, double bytes_per_param,
                             double train_s, sim_goodput_t *out, dt_err_t *err);

#endif
