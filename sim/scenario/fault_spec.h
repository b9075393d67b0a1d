/* The text of the [faults] keys that describe events (crash, link_down, link_degrade,
 * straggler) and distributions (slowdown, availability, client_speed): parsed here, with
 * no SimGrid, so that the scenario parser checks the syntax when it reads a file and the
 * run (sim/fault.c) turns the same text into events once the platform is loaded.
 *
 * Event lists are comma-separated items, or "none":
 *   crash         TARGET at TIME [for DURATION | until TIME]   (no end: never recovers)
 *   link_down     LINK at TIME [for DURATION | until TIME]
 *   link_degrade  LINK at TIME to BANDWIDTH|LATENCY [for DURATION | until TIME]
 *   straggler     TARGET xFACTOR [at TIME] [for DURATION | until TIME]
 * TARGET is a node (worker-3, server-0, client-2) or a host name; LINK a link name, a
 * link name without its _UP/_DOWN suffix (both directions), or a node or host (its own
 * access links). */
#ifndef DTSIM_FAULT_SPEC_H
#define DTSIM_FAULT_SPEC_H

#include <stddef.h>

#include "common.h"
#include "trace.h"

typedef enum sim_fault_kind {
    SIM_FAULT_CRASH,
    SIM_FAULT_LINK_DOWN,
    SIM_FAULT_LINK_DEGRADE,
    SIM_FAULT_STRAGGLER,
} sim_fault_kind_t;

#define SIM_FAULT_TARGET 64
#define SIM_FAULT_MAX 64 /* items of one event list */

typedef struct sim_fault_spec {
    sim_fault_kind_t kind;
    char target[SIM_FAULT_TARGET];
    double at;    /* simulated seconds */
    double until; /* end, INFINITY: never */
    double value; /* link_degrade: bandwidth (bytes/s) or latency (s); straggler: factor */
    int latency;  /* link_degrade: value is the links' latency (to 50ms), not bandwidth */
} sim_fault_spec_t;

/* Parses an event list of one kind into out[0..*count) (at most cap items); "none" and ""
 * give 0 items. On error: DT_ERR_INPUT and a message without location naming the item. */
dt_status sim_fault_spec_parse(sim_fault_kind_t kind, const char *text, sim_fault_spec_t *out,
                               size_t cap, size_t *count, dt_err_t *err);

/* Per-host slowdown factors drawn once per run: none, uniform:LO:HI (factor in [LO, HI]),
 * lognormal:SIGMA (factor exp(SIGMA z), z standard normal: median 1). */
typedef enum sim_slowdown_kind {
    SIM_SLOWDOWN_NONE,
    SIM_SLOWDOWN_UNIFORM,
    SIM_SLOWDOWN_LOGNORMAL,
} sim_slowdown_kind_t;

typedef struct sim_slowdown {
    sim_slowdown_kind_t kind;
    double a, b; /* uniform: LO, HI; lognormal: SIGMA */
} sim_slowdown_t;

/* Parses none, uniform:LO:HI (0 < LO <= HI) or lognormal:SIGMA (0 < SIGMA <= 5). */
dt_status sim_slowdown_parse(const char *text, sim_slowdown_t *out, dt_err_t *err);

/* FedAvg client availability: always, PERIOD:FRACTION (each client is online for
 * FRACTION of every PERIOD, from a phase drawn per client), or trace:PATH (the windows of
 * an availability trace, trace.h). */
typedef struct sim_availability {
    double period;     /* 0: always available (or a trace) */
    double fraction;   /* (0, 1] */
    const char *trace; /* trace:PATH: PATH, inside the parsed text; NULL otherwise */
} sim_availability_t;

/* Parses always, PERIOD:FRACTION (a time > 0, a fraction in (0, 1]) or trace:PATH (the
 * path as written: the scenario parser resolves and loads it). */
dt_status sim_availability_parse(const char *text, sim_availability_t *out, dt_err_t *err);

/* Federated clients' compute speed: same (every client at cluster.device_flops),
 * SPEED:SHARE, ... (device classes, shares summing to 1; each client draws its class), or a
 * distribution of speeds (uniform:LO:HI, lognormal:MEDIAN:SIGMA, choice:V@P,...; trace.h). */
#define SIM_CLIENT_CLASSES 16
typedef struct sim_client_classes {
    int n;                            /* classes; 0: same, or a distribution */
    int is_dist;                      /* 1: dist holds the speeds */
    double speed[SIM_CLIENT_CLASSES]; /* FLOP/s */
    double share[SIM_CLIENT_CLASSES];
    sim_dist_t dist;
} sim_client_classes_t;

/* Parses same, SPEED:SHARE items (at most SIM_CLIENT_CLASSES, shares summing to 1) or a
 * distribution of speeds. */
dt_status sim_client_classes_parse(const char *text, sim_client_classes_t *out, dt_err_t *err);

#endif
