/* Federated clients' devices: each client's compute speed and access link, from the
 * scenario's [faults] keys: device_trace (a device trace, trace.h), client_speed (device
 * classes or a distribution), client_up, client_down and client_latency (distributions).
 * A column of the trace wins over the cluster's value; a key given as well as the trace's
 * column is refused by scenario_validate. Draws are per client from seeded streams, so a
 * client's device does not depend on the order of events nor on the other clients.
 *
 * Speeds are per client (the client hosts' compute is scaled as each client trains);
 * links are per client host of the edge platform (client c's host is c mod workers, so a
 * scenario that gives links needs a host per client: scenario_validate checks). */
#ifndef DTSIM_CLIENT_DEVICES_H
#define DTSIM_CLIENT_DEVICES_H

#include "fault_spec.h"
#include "rng.h"
#include "scenario.h"
#include "trace.h"

/* What a client's draw is for: each has its own seeded stream per client. */
enum {
    SIM_CLIENT_DRAW_PHASE = 1, /* faults.availability PERIOD:FRACTION: the client's phase */
    SIM_CLIENT_DRAW_CLASS,     /* faults.client_speed classes */
    SIM_CLIENT_DRAW_SPEED,     /* faults.client_speed distribution */
    SIM_CLIENT_DRAW_UP,
    SIM_CLIENT_DRAW_DOWN,
    SIM_CLIENT_DRAW_LATENCY,
};
/** Seeds r with client c's stream for draws of kind `what` (SIM_CLIENT_DRAW_*) under the
 *  run's seed. */
void sim_client_rng(uint64_t seed, long c, int what, trainer_rng_t *r);

typedef struct sim_client_devices {
    sim_device_trace_t trace;     /* faults.device_trace; trace.n = 0 without one */
    sim_client_classes_t classes; /* faults.client_speed */
    sim_dist_t up, down, latency; /* faults.client_up, client_down, client_latency */
    unsigned dists;               /* SIM_DEVICE_UP / DOWN / LATENCY given as distributions */
    uint64_t seed;
    double device_flops; /* cluster.device_flops: the speed of a client nothing describes */
    double step_flops;   /* training FLOPs of one sample: FedScale's times per sample */
} sim_client_devices_t;

/** Reads sc's client device keys (loading the device trace); step_flops is the model's
 *  forward and backward FLOPs of one sample (0 where no speed is asked). On error (a trace
 *  that changed since the scenario was read) d holds nothing to free. */
dt_status sim_client_devices_open(sim_client_devices_t *d, const scenario_t *sc, double step_flops,
                                  dt_err_t *err);
void sim_client_devices_close(sim_client_devices_t *d);
/** Client c's speed in FLOP/s. */
double sim_client_speed(const sim_client_devices_t *d, long c);
/** The SIM_DEVICE_UP / DOWN / LATENCY values the scenario gives client c (bytes/s, one-way
 *  seconds) in up, down, latency; returns which (0: the platform's for all three). */
unsigned sim_client_link(const sim_client_devices_t *d, long c, double *up, double *down,
                         double *latency);
/** Which of SIM_DEVICE_UP / DOWN / LATENCY sc gives per client (trace columns or keys). */
unsigned sim_client_links_given(const scenario_t *sc);

#endif
