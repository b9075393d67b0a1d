/* Federated clients' devices and availability: device traces (a client's speed, uplink,
 * downlink and latency, one row per client), availability traces (online windows, several
 * per client, repeating with a period), and the distributions that draw a client's value
 * where no trace gives one. Both CSV layouts are read: dtsim's (values with units) and
 * FedScale's (its pickles' field names and numbers, as scenarios/traces/fedscale_to_csv.py
 * writes them), told apart by the header. Parsing only, no SimGrid: the run asks these
 * structs which row a client takes and when it is online. The formats, the FedScale
 * mapping and the shipped samples are described in scenarios/traces/README.md.
 *
 * Clients are matched to rows by position, not by id: rows are used in order, client c
 * takes row c mod n of the rows sorted by client id (sim_device_trace_for,
 * sim_avail_trace_for), so a trace of any size serves any number of clients; a lookup by
 * id (sim_device_trace_find, sim_avail_trace_find) is there for callers that want ids. */
#ifndef DTSIM_TRACE_H
#define DTSIM_TRACE_H

#include <stddef.h>

#include "common.h"
#include "rng.h"

#define SIM_TRACE_PATH 4096

/* The layout a trace file was written in (told apart by its header). */
typedef enum sim_trace_layout {
    SIM_TRACE_DTSIM,    /* client,speed,up,down,latency / client,start,end[,period] */
    SIM_TRACE_FEDSCALE, /* client_id,computation,communication /
                           client_id,active,inactive[,finish_time] */
} sim_trace_layout_t;

/* ---- device traces ---- */

/* The columns a device trace has (sim_device_trace_t.has); every row has all of them. */
enum {
    SIM_DEVICE_SPEED = 1u << 0,         /* dtsim's speed */
    SIM_DEVICE_UP = 1u << 1,            /* dtsim's up; FedScale's communication */
    SIM_DEVICE_DOWN = 1u << 2,          /* dtsim's down; FedScale's communication */
    SIM_DEVICE_LATENCY = 1u << 3,       /* dtsim's latency */
    SIM_DEVICE_MS_PER_SAMPLE = 1u << 4, /* FedScale's computation */
};

/* FedScale's communication unit in bytes/s: its "kbits" are 1024 bits (an update of B
 * bytes takes B / 1024 * 8 / communication seconds in FedScale). */
#define SIM_FEDSCALE_KBPS 128.0

/* One client's device. Fields whose column the trace lacks are 0. */
typedef struct sim_device_row {
    long client;          /* id in the file, >= 0 */
    double speed;         /* FLOP/s */
    double up, down;      /* bytes/s (FedScale: communication * SIM_FEDSCALE_KBPS, both) */
    double latency;       /* seconds */
    double ms_per_sample; /* FedScale's computation: milliseconds of one sample's inference */
    int line;             /* the row's line in the file */
} sim_device_row_t;

typedef struct sim_device_trace {
    sim_device_row_t *rows; /* (n) sorted by client id, ids unique */
    size_t n;               /* >= 1 */
    unsigned has;           /* SIM_DEVICE_* of the columns present */
    sim_trace_layout_t layout;
    char path[SIM_TRACE_PATH];
} sim_device_trace_t;

/** Loads a device trace; on DT_ERR_INPUT, err reads "PATH:LINE: column KEY: what (expected ...)"
 *  and *out holds nothing to free. */
dt_status sim_device_trace_load(const char *path, sim_device_trace_t *out, dt_err_t *err);
/** The row client c >= 0 takes: row c mod n, in client-id order. */
const sim_device_row_t *sim_device_trace_for(const sim_device_trace_t *t, long c);
/** The row whose client id is id, NULL if none. */
const sim_device_row_t *sim_device_trace_find(const sim_device_trace_t *t, long id);
/** A FedScale row's speed in FLOP/s for a model of forward_flops FLOPs per sample:
 *  forward_flops / (ms_per_sample / 1000). FedScale charges a training sample 3x its
 *  inference time, dtsim charges training FLOPs (about 3x forward), so both agree. */
double sim_device_fedscale_speed(double ms_per_sample, double forward_flops);
/** Frees t's rows (t itself is the caller's); a zeroed or freed t is fine. */
void sim_device_trace_free(sim_device_trace_t *t);

/* ---- availability traces ---- */

/* An online window [start, end), seconds. */
typedef struct sim_avail_window {
    double start, end;
} sim_avail_window_t;

/* One client's windows, which repeat every period: online at t when t mod period falls in
 * a window. */
typedef struct sim_avail_client {
    long client;                       /* id in the file, >= 0 */
    double period;                     /* seconds > 0: the row's period / finish_time, else span */
    const sim_avail_window_t *windows; /* (n) by start, disjoint, inside [0, period) */
    size_t n;                          /* 0: never online (FedScale rows of empty windows) */
} sim_avail_client_t;

typedef struct sim_avail_trace {
    sim_avail_client_t *clients; /* (n_clients) sorted by client id, ids unique */
    size_t n_clients;            /* >= 1 */
    sim_avail_window_t *windows; /* (n_windows) every client's, owned here */
    size_t n_windows;
    double span; /* the latest end of any window: the period of clients without their own */
    sim_trace_layout_t layout;
    char path[SIM_TRACE_PATH];
} sim_avail_trace_t;

/** Loads an availability trace; errors as sim_device_trace_load (overlapping windows name
 *  both lines). */
dt_status sim_avail_trace_load(const char *path, sim_avail_trace_t *out, dt_err_t *err);
/** The windows client c >= 0 takes: client c mod n_clients, in client-id order. */
const sim_avail_client_t *sim_avail_trace_for(const sim_avail_trace_t *t, long c);
/** The client whose id is id, NULL if none. */
const sim_avail_client_t *sim_avail_trace_find(const sim_avail_trace_t *t, long id);
/** 1 if client c (mapped as sim_avail_trace_for) is online at time t, else 0. */
int sim_avail_trace_online(const sim_avail_trace_t *t, long c, double time);
/** The earliest time >= time at which client c (mapped as sim_avail_trace_for), or any of
 *  the trace's clients for c = -1, is online; INFINITY if never. */
double sim_avail_trace_next_online(const sim_avail_trace_t *t, long c, double time);
/** 1 if the client is online at time, else 0. */
int sim_avail_client_online(const sim_avail_client_t *c, double time);
/** The earliest time >= time at which the client is online; INFINITY if never. */
double sim_avail_client_next_online(const sim_avail_client_t *c, double time);
/** Frees t's arrays (t itself is the caller's); a zeroed or freed t is fine. */
void sim_avail_trace_free(sim_avail_trace_t *t);

/* ---- distributions of per-client values ---- */

/* What a distribution's values are: they are written with that kind's units (2.5Gf,
 * 10Mbps, 40ms) and held in base units (FLOP/s, bytes/s, seconds); NUMBER is unitless. */
typedef enum sim_dist_unit {
    SIM_DIST_UNIT_NUMBER,
    SIM_DIST_UNIT_FLOPS,
    SIM_DIST_UNIT_BANDWIDTH,
    SIM_DIST_UNIT_TIME,
} sim_dist_unit_t;

typedef enum sim_dist_kind {
    SIM_DIST_CONST,     /* X or const:X */
    SIM_DIST_UNIFORM,   /* uniform:LO:HI, LO <= HI */
    SIM_DIST_LOGNORMAL, /* lognormal:MEDIAN:SIGMA, MEDIAN * exp(SIGMA z), 0 <= SIGMA <= 5 */
    SIM_DIST_CHOICE,    /* choice:V1@P1,V2@P2,... probabilities summing to 1 */
} sim_dist_kind_t;

#define SIM_DIST_CHOICES 16

typedef struct sim_dist {
    sim_dist_kind_t kind;
    sim_dist_unit_t unit;
    double a, b; /* const: X, -; uniform: LO, HI; lognormal: MEDIAN, SIGMA */
    int n;       /* choice: items */
    double value[SIM_DIST_CHOICES], prob[SIM_DIST_CHOICES];
} sim_dist_t;

/** Parses a distribution of values of the given unit; the message has no location. */
dt_status sim_dist_parse(const char *text, sim_dist_unit_t unit, sim_dist_t *out, dt_err_t *err);
/** The value for a uniform variate u in [0, 1) and a standard normal variate z: const
 *  uses neither, uniform and choice u (the u-quantile), lognormal z. */
double sim_dist_value(const sim_dist_t *d, double u, double z);
/** One draw from r: no variate for const, one trainer_rng_uniform for uniform and choice,
 *  one trainer_rng_normal for lognormal. */
double sim_dist_draw(const sim_dist_t *d, trainer_rng_t *r);
/** d as text that sim_dist_parse reads back to the same struct (shortest exact units). */
void sim_dist_format(const sim_dist_t *d, char *buf, size_t n);

#endif
