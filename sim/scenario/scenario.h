/* Scenario files: INI (parsed with inih) with sections [run] [model] [data] [cluster]
 * [strategy] [faults], every key typed, ranged and defaulted from one table (keys.c),
 * units written out (10Gbps, 5us, 19.5Tf). `--set section.key=value` overrides a key as if
 * it were written in the file. Unknown sections, keys and units are errors naming the file,
 * the line and the key; nothing is silently ignored.
 *
 * A [sweep] section lists values for some keys (`cluster.bandwidth = 1Gbps, 10Gbps`); the
 * scenario then stands for the cross product of those lists: scenario_sweep_count runs, run
 * i made by scenario_sweep_run. */
#ifndef DTSIM_SCENARIO_H
#define DTSIM_SCENARIO_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "compress.h"
#include "model.h"
#include "partition.h"
#include "strategy_def.h"
#include "train.h"

#define SCENARIO_STR 512
#define SCENARIO_JOBS_FILES 4096       /* jobs.files: 100 jobs of paths up to 38 characters */
#define SCENARIO_TIMELINE_ALL LONG_MAX /* run.timeline_steps = all */
#define SCENARIO_MAX_KEYS 208          /* room in key_line for every key of the table */
#define SCENARIO_OWN_KEYS 80 /* strategies' own keys (sim_strategy_t.own_keys), together */

#define SCENARIO_SWEEP_KEYS 16    /* keys in one [sweep] */
#define SCENARIO_SWEEP_VALUES 64  /* values of one swept key */
#define SCENARIO_SWEEP_TEXT 8192  /* the text of every value of a sweep, together */
#define SCENARIO_SWEEP_RUNS 10000 /* runs of one sweep */

typedef enum sim_allreduce_algo {
    SIM_ALLREDUCE_RING,
    SIM_ALLREDUCE_TREE,
    SIM_ALLREDUCE_HALVING_DOUBLING,
    SIM_ALLREDUCE_HIERARCHICAL,
    SIM_ALLREDUCE_2D, /* reduce-scatter in groups, a ring per position across, all-gather */
} sim_allreduce_algo_t;

typedef enum sim_ring_messages {
    SIM_RING_STEPS,  /* a message per ring step */
    SIM_RING_PHASES, /* a message per phase, the step latencies waited out (timing only) */
} sim_ring_messages_t;

typedef enum sim_time_model {
    SIM_TIME_FLOPS,    /* counted FLOPs / simulated device speed: deterministic */
    SIM_TIME_MEASURED, /* measured wall time of the real kernels */
} sim_time_model_t;

typedef enum sim_backend {
    SIM_BACKEND_CPU,  /* OpenBLAS */
    SIM_BACKEND_CUDA, /* cuBLAS and CUDA kernels; an error without a usable GPU */
    SIM_BACKEND_AUTO, /* cuda when usable, else cpu */
} sim_backend_t;

/* fedavg: a round's sampled clients trained side by side as replicas (one launch per op for
 * all of them) or one after the other. */
typedef enum sim_side_by_side {
    SIM_SIDE_AUTO, /* side by side on the cuda device, one after the other on the cpu */
    SIM_SIDE_YES,
    SIM_SIDE_NO,
} sim_side_by_side_t;

/* Federated clients' attacks ([faults] byzantine): their update negated and scaled, replaced
 * by Gaussian noise, or trained on flipped labels (classes - 1 - y). */
typedef enum sim_attack {
    SIM_ATTACK_SIGN_FLIP,
    SIM_ATTACK_NOISE,
    SIM_ATTACK_LABEL_FLIP,
} sim_attack_t;

/* The number format a model trains in (model.precision): it picks the device's peak and
 * sets the bytes of the parameters, gradients and activations (scenario_value_bytes) and
 * of the optimizer (scenario_optimizer_bytes). */
typedef enum sim_precision {
    SIM_PREC_FP32, /* FP32 throughout */
    SIM_PREC_TF32, /* FP32 values, GEMMs on TF32 tensor cores */
    SIM_PREC_BF16, /* mixed precision: 16-bit weights, gradients, activations; FP32 master */
    SIM_PREC_FP8,  /* FP8 GEMMs (Transformer Engine), everything stored as in bf16 */
} sim_precision_t;
#define SIM_PRECISIONS 4

/* How fp8 GEMMs scale their operands (model.fp8_scaling): the scaling decides the kernels
 * and so the fraction of the FP8 peak they reach (compute_model.h). */
typedef enum sim_fp8_scaling {
    SIM_FP8_TENSOR, /* a scale per tensor (Transformer Engine's delayed or current scaling) */
    SIM_FP8_BLOCK,  /* per 1 x 128 activation and 128 x 128 weight blocks, promoted to FP32
                       on CUDA cores (DeepSeek-V3, DeepGEMM) */
} sim_fp8_scaling_t;

/* Activation recomputation (model.recompute): what the backward pass recomputes instead of
 * keeping it from the forward pass. */
/* run.timeline: AUTO is SAMPLED for a timing-only model, WHOLE for a real one (a
 * plan's runs are many and large; a real model's runs are few and small). */
typedef enum sim_timeline_mode {
    SIM_TIMELINE_AUTO,
    SIM_TIMELINE_SAMPLED, /* the first step of at most 16 hosts, within about 700 KB */
    SIM_TIMELINE_WHOLE,   /* every host over run.timeline_steps (200,000 rows at most) */
} sim_timeline_mode_t;

/* run.group_rows: the workers, memory and links rows whose figures are all the same, one
 * row weighted by their number (YES), a row each (NO), or YES for a run of more than
 * SIM_GROUP_ROWS_HOSTS hosts (AUTO). */
typedef enum sim_group_rows {
    SIM_GROUP_ROWS_AUTO,
    SIM_GROUP_ROWS_YES,
    SIM_GROUP_ROWS_NO,
} sim_group_rows_t;
#define SIM_GROUP_ROWS_HOSTS 256

typedef enum sim_recompute {
    SIM_RECOMPUTE_NONE,
    SIM_RECOMPUTE_SELECTIVE, /* the attention cores (layers named *.scores) */
    SIM_RECOMPUTE_FULL,      /* every layer: only the inputs at the profile's cuts are kept */
} sim_recompute_t;

/* Hosts of several jobs on one platform ([jobs] placement). */
typedef enum sim_placement {
    SIM_PLACEMENT_PACKED,      /* job 1 the first hosts, job 2 the next */
    SIM_PLACEMENT_INTERLEAVED, /* one host each in turn */
} sim_placement_t;

/* How a timing-only model's layers are timed (cluster.compute_model). */
typedef enum sim_compute_model {
    SIM_COMPUTE_SHAPE, /* by operation and shape where the profile and the device say them */
    SIM_COMPUTE_FLAT,  /* every FLOP at cluster.device_flops */
} sim_compute_model_t;

typedef enum sim_net_model {
    SIM_NET_LV08, /* SimGrid's default, calibrated TCP */
    SIM_NET_CM02, /* plain max-min sharing; with crosstraffic off: pure alpha-beta */
    SIM_NET_SMPI, /* SMPI's piecewise factors */
    SIM_NET_TCP,  /* CM02's sharing, each message charged TCP's window (the cluster.tcp_* keys) */
    SIM_NET_AUTO, /* resolved at load: tcp where a host link's latency reaches 1 ms, else LV08 */
} sim_net_model_t;

/* The congestion control the tcp network model follows (cluster.tcp_congestion). */
typedef enum sim_tcp_cc {
    SIM_TCP_CUBIC, /* Linux's default: slow start, then at most half the window a round trip */
    SIM_TCP_BBR,   /* its own pacing: no slow start after idle */
    SIM_TCP_RENO,  /* slow start, then one segment a round trip */
} sim_tcp_cc_t;

/* TCP as the tcp network model charges it (the cluster.tcp_* keys, Linux's defaults). */
typedef struct sim_tcp {
    sim_tcp_cc_t congestion;
    long initial_window;       /* segments (RFC 6928: 10) */
    long mss;                  /* payload bytes of a full segment */
    long header;               /* bytes a segment adds on the wire (Ethernet, IP, TCP) */
    long wmem_max, rmem_max;   /* socket buffer caps, bytes (net.ipv4.tcp_wmem, tcp_rmem) */
    int slow_start_after_idle; /* net.ipv4.tcp_slow_start_after_idle */
    double rto_min;            /* seconds: the retransmission timeout's floor */
    long handshake;            /* round trips a connection's first message waits for */
} sim_tcp_t;

typedef enum sim_platform_kind {
    SIM_PLATFORM_STAR,       /* one switch, every host on its own link */
    SIM_PLATFORM_FAT_TREE,   /* two-level fat-tree */
    SIM_PLATFORM_MULTI_RACK, /* racks of hosts on a switch each, slower uplinks between */
    SIM_PLATFORM_EDGE,       /* a datacenter server, clients on heterogeneous access links */
    SIM_PLATFORM_TORUS,      /* SimGrid's torus cluster: each host a router, links to neighbours */
    SIM_PLATFORM_DRAGONFLY,  /* SimGrid's dragonfly cluster: groups of chassis of routers */
    SIM_PLATFORM_RAIL,       /* servers of NVLink-joined GPUs, GPU r's NIC on rail leaf r */
    SIM_PLATFORM_FILE,       /* a SimGrid XML file given by path */
} sim_platform_kind_t;

/* One swept key of [sweep]. Keys of one line move together: a line "a.x, b.y = (1, p),
 * (2, q)" gives two keys of the same group whose values are taken pairwise. */
typedef struct scenario_sweep_key {
    int key;   /* index in the key table (keys.c) */
    int line;  /* of the [sweep] line */
    int group; /* keys of one line share a group; groups are crossed */
    int n_values;
    int chosen; /* in a run made by scenario_sweep_run: the index of its value */
    uint16_t value[SCENARIO_SWEEP_VALUES]; /* offsets in text: each value as scenario_write
                                              writes it (units, absolute paths) */
} scenario_sweep_key_t;

typedef struct scenario_sweep {
    int n_keys; /* 0: no sweep */
    int is_run; /* 1 in a run made by scenario_sweep_run (which keeps the sweep for its
                   messages; scenario_write writes such a run as a plain scenario) */
    long run;   /* and which run it is */
    size_t text_len;
    char text[SCENARIO_SWEEP_TEXT]; /* NUL-terminated values, zero-filled past text_len */
    scenario_sweep_key_t keys[SCENARIO_SWEEP_KEYS]; /* in file order */
} scenario_sweep_t;

typedef struct scenario {
    char path[SCENARIO_STR]; /* the file read, for messages */

    /* [run] */
    char name[SCENARIO_STR];
    uint64_t seed;
    long steps;               /* synchronous steps (per worker for async-ps and local-sgd) */
    double max_time;          /* simulated seconds, 0 = no limit */
    double stall_after;       /* wall seconds of fault rows without a step: stalled; 0 = never */
    long collapse_after;      /* evaluations at chance that end a run `collapsed`; 0 = never */
    double divergence_factor; /* a test loss above this x ln classes ends a run `diverged`;
                                 0 = NaN / Inf only */
    long eval_every;          /* evaluate every N steps (rounds for fedavg), 0 = off */
    double eval_interval;     /* and every this many simulated seconds, 0 = off */
    long eval_samples;        /* and every this many training samples, 0 = off */
    double target_accuracy;   /* for "time to target" */
    sim_time_model_t time_model;
    int shared_replicas; /* workers whose replicas are identical by construction share one */
    long timeline_steps; /* the timeline covers the run until a node's N-th gradient
                            (SCENARIO_TIMELINE_ALL: the whole run) */
    sim_timeline_mode_t timeline;    /* what of that window is stored (run.timeline) */
    sim_group_rows_t group_rows;     /* rows alike: one weighted, or each its own */
    int allow_oversubscribed_memory; /* time a layout that does not fit its devices' memory */
    char db[SCENARIO_STR];           /* results database path */

    /* [model] */
    trainer_model_config_t model;    /* arch, hidden, conv, kernel, fc (shape from the data) */
    char profile[SCENARIO_STR];      /* model profile (built-in name or absolute path of a
                                        file): a timing-only run; "" for a real model */
    int profile_pieces;              /* the profile's pipeline cuts + 1; 0 without [forward] */
    int profile_attention;           /* the profile has attention cores (layers *.scores) */
    int profile_splits;              /* the profile has a [tensor] section */
    int profile_experts;             /* the fewest routed experts of its [experts] layers; 0:
                                        none */
    long batch;                      /* per worker (per client for fedavg) */
    trainer_optim_t sgd;             /* the optimizer (model.optimizer, lr, momentum,
                                        weight_decay, beta1, beta2, eps, clip_norm) */
    trainer_lr_schedule_t schedule;  /* after the warmup */
    long warmup;                     /* steps (rounds) of linear warmup */
    float lr_min;                    /* the decay's floor */
    long threads;                    /* OpenBLAS threads of the real kernels */
    sim_backend_t backend;           /* where the real kernels run */
    sim_side_by_side_t side_by_side; /* fedavg clients as replicas on the device */
    sim_precision_t precision;       /* the simulated number format (timing, bytes, memory) */
    sim_fp8_scaling_t fp8_scaling;   /* fp8: how its GEMMs scale (their sustained fraction) */
    sim_recompute_t recompute;       /* activations traded for FLOPs */

    /* [data] */
    char data_source[SCENARIO_STR]; /* "fashion-mnist", "synthetic", "text" or an MNIST-format
                                       dir */
    char data_text[SCENARIO_STR];   /* with data_source "text": "fortunes", "fortunes-languages"
                                       or the absolute path of a text file or folder */
    long train_samples;             /* 0 = all (synthetic: how many to make) */
    long test_samples;              /* 0 = all */
    long synthetic_dim, synthetic_classes;
    double synthetic_noise;
    trainer_partition_spec_t partition;
    double client_holdout; /* federated: share of each client's samples kept for its eval */

    /* [cluster] */
    sim_platform_kind_t platform;
    char platform_file[SCENARIO_STR]; /* when platform is a file */
    long workers;                     /* trainers (fedavg: simulated client hosts) */
    double bandwidth;                 /* host link, bytes/s */
    double latency;                   /* host link, seconds */
    double uplink_bandwidth;          /* rack / fat-tree uplinks, bytes/s */
    double uplink_latency;            /* seconds */
    long racks;                       /* multi-rack; hierarchical group count default */
    long torus[4];                    /* torus dimensions (0 = unused); all 0 = sized to hold
                                         the hosts */
    long dragonfly[4];                /* groups, chassis, routers, nodes; all 0 = sized */
    long gpus_per_server;             /* rail: GPUs (hosts) per NVLink domain */
    double nvlink_bandwidth;          /* rail: each GPU's NVLink port, bytes/s each way */
    double nvlink_latency;            /* seconds */
    sim_net_model_t network_model;
    int crosstraffic;                  /* 0: pure alpha-beta with CM02 */
    sim_tcp_t tcp;                     /* network_model = tcp: the connections' TCP */
    double device_flops;               /* simulated device speed, FLOP/s: the device's peak
                                          at model.precision x its achieved fraction */
    char device[SCENARIO_STR];         /* catalogue name, a profile file (absolute path, as
                                          dtsim calibrate writes them), or "custom" */
    double device_efficiency;          /* achieved fraction of the peak; 0: the device's */
    sim_compute_model_t compute_model; /* shape: a profile's [shape] lines timed by
                                          compute_model.h; flat: at device_flops */
    double link_power;                 /* W per network port, busy or idle */
    double price_per_device_hour;      /* $ per host-hour; 0: no cost */
    double price_per_port_hour;        /* $ per network port-hour, added; 0: none */

    /* [strategy] */
    const sim_strategy_t *strategy; /* strategy.kind (strategy_def.h) */
    sim_allreduce_algo_t algorithm;
    long group_size; /* hierarchical: workers per group */
    sim_ring_messages_t ring_messages;
    double bucket_mb;            /* allreduce, pipeline gradient buckets (MB), 0 = off */
    long accumulate;             /* micro-batches summed per exchange (strategies with
                                    SIM_TAKES_ACCUMULATE) */
    trainer_codec_t compression; /* what gradients and updates travel as */
    int error_feedback;          /* carry the codec's error into the next message */
    int momentum_correction;     /* top-k: momentum kept by the senders (DGC) */

    /* [faults] (event lists and distributions as written; fault_spec.h parses them) */
    double fault_timeout;     /* seconds a peer may be silent before it is presumed
                                 dead */
    char crash[SCENARIO_STR]; /* "worker-3 at 2s for 1s, ..." or "none" */
    char link_down[SCENARIO_STR];
    char link_degrade[SCENARIO_STR];
    int live_links;                  /* the run takes link changes from dtsim serve's page */
    int live_hosts;                  /* and host crashes and stragglers */
    char straggler[SCENARIO_STR];    /* "worker-1 x4, worker-2 x2 at 1s for 3s" */
    char slowdown[64];               /* none, uniform:LO:HI, lognormal:SIGMA */
    double mtbf, mttr;               /* random worker crashes, seconds; 0 = none / never
                                        back */
    long checkpoint_every;           /* server / single worker checkpoint, 0 = none */
    double dropout;                  /* fedavg: probability a sampled client drops out */
    double deadline;                 /* fedavg: round deadline, seconds; 0 = none */
    double over_select;              /* fedavg: sample this many times the clients needed */
    char availability[SCENARIO_STR]; /* fedavg: always, PERIOD:FRACTION or trace:PATH
                                        (absolute) */
    char client_speed[SCENARIO_STR]; /* federated: same, SPEED:SHARE, ... or a distribution */
    char device_trace[SCENARIO_STR]; /* federated: none or a device trace (absolute path) */
    unsigned device_trace_has;       /* its columns (SIM_DEVICE_*, trace.h), read with it */
    char client_up[128], client_down[128], client_latency[128]; /* platform or a distribution */
    double byzantine;    /* federated: fraction of the clients that attack */
    sim_attack_t attack; /* what they do */
    double attack_scale; /* sign_flip: factor; noise: standard deviation */

    /* [jobs] */
    char jobs_files[SCENARIO_JOBS_FILES]; /* job scenario files, comma-separated (repeated
                                             `files` lines append); "none": one run */
    sim_placement_t jobs_placement;       /* which hosts each job gets */

    /* The values of the strategies' own keys (sim_strategy_t.own_keys), in registration
     * order; read them with scenario_own. */
    sim_own_value_t own[SCENARIO_OWN_KEYS];

    /* Private to sim/scenario: where each key's value came from, indexed like the key
     * table: > 0 the file's line, -1 a --set override, 0 the default. For messages and
     * scenario_key_given; not part of the configuration. */
    int key_line[SCENARIO_MAX_KEYS];
    /* Private: the file is a resolved configuration (scenario_write's, every key given):
     * another strategy's own key at its default is then no choice of the user's. */
    int resolved;

    /* [sweep]: swept keys keep their defaults in the scenario itself (a swept key may not
     * also be given in its section), run i gets its values. */
    scenario_sweep_t sweep;
} scenario_t;

/* The first line of a resolved configuration (scenario_write), as the reader knows it. */
#define SCENARIO_RESOLVED_MARK "; dtsim scenario, resolved"

/* ---- reading (file.c) ---- */

/** Every key at its default: each default text parsed as a user's value would be. */
void scenario_defaults(scenario_t *sc);
/** Defaults, the file at path (NULL: none), each "section.key=value" of sets, then
 * scenario_validate of every run; DT_ERR_INPUT with one line naming file, line and key. */
dt_status scenario_load(scenario_t *sc, const char *path, const char *const *sets, int n_sets,
                        dt_err_t *err);
/** scenario_load (no sets) with each "section.key=value" of under applied before the file as
 * if it were the key's default: the file may give it again, and scenario_key_given says
 * whether it did (a file of jobs' platform keys under a job's file). */
dt_status scenario_load_under(scenario_t *sc, const char *path, const char *const *under,
                              int n_under, dt_err_t *err);
/** Applies one "section.key=value" as if written in the file; on error sc is unchanged. */
dt_status scenario_set(scenario_t *sc, const char *assignment, dt_err_t *err);

/* ---- checks (validate.c, check.c) ---- */

/** Checks relations between keys once all are read: the generic ones and the strategy's
 * own (sim_strategy_t.check); called by scenario_load and scenario_sweep_run. */
dt_status scenario_validate(const scenario_t *sc, dt_err_t *err);
/** DT_ERR_INPUT with "PATH:LINE: section.key: MSG" for section_key where it was given,
 * worded as scenario_load words every key's error (--set, [sweep] value, default). */
dt_status scenario_fail(const scenario_t *sc, dt_err_t *err, const char *section_key,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/** Of keys a and b ("section.key") in a failed relation, the one to name (a or b itself):
 * a swept one in a run of a sweep, else the one given (a if both or neither); the other's
 * origin into where unless NULL ("section.key at line N", "section.key from --set",
 * "section.key by default", "section.key = V from [sweep] at line N"). */
const char *scenario_blame(const scenario_t *sc, const char *a, const char *b, char *where,
                           size_t n);
/** 1 if "section.key" was given in the file, by --set or by [sweep], 0 if it has its
 * default or was derived from another key (device_flops from device). */
int scenario_key_given(const scenario_t *sc, const char *section_key);
/** This machine's memory available to a run now, in bytes (/proc/meminfo's MemAvailable;
 * the physical memory where there is none). */
double scenario_memory_available(void);
/** 1 in a run of a sweep whose [sweep] gives it "section.key". */
int scenario_key_swept(const scenario_t *sc, const char *section_key);
/** "PATH:LINE: section.key" ("--set section.key", "PATH: section.key" for a default), for
 * errors found after loading (a fault naming a host the platform lacks). */
void scenario_key_location(const scenario_t *sc, const char *section_key, char *buf, size_t n);
/** What SimGrid's solver computes with, measured on 3.32 (sim/README.md, "Values the
 * simulator computes"): a latency in (0, 1 ns), below its surf/precision, crashed its
 * solver (SIGSEGV); a link of 0.19 B/s aborted it; a speed of 1e-300 flop/s made simulated
 * time inf. Latency 0, or SIM_LATENCY_MIN..SIM_LATENCY_MAX s; bandwidth and speed within
 * their MIN..MAX (B/s, flop/s). */
#define SIM_LATENCY_MIN 1e-9
#define SIM_LATENCY_MAX 1e3
#define SIM_BANDWIDTH_MIN 125.0 /* 1 kbps */
#define SIM_BANDWIDTH_MAX 1e15
#define SIM_SPEED_MIN 1.0
#define SIM_SPEED_MAX 1e24
typedef enum sim_quantity { SIM_Q_LATENCY, SIM_Q_BANDWIDTH, SIM_Q_SPEED } sim_quantity_t;
/** 1 when v (s, B/s or flop/s as q says) is in the range above. */
int scenario_simulable(sim_quantity_t q, double v);
/** The range of q as users write it ("0, or 1ns to 1000s"), for "(expected ...)". */
const char *scenario_simulable_range(sim_quantity_t q);
/** 1 when any fault, straggler or federated dropout is described: peers then wait for each
 * other at most faults.timeout. */
int scenario_has_faults(const scenario_t *sc);
/** The network model a run uses: cluster.network_model, auto resolved (tcp where a host link
 * or an uplink has 1 ms of latency or more, and on the edge platform; else LV08). */
sim_net_model_t scenario_network_model(const scenario_t *sc);
/** 1 when federated clients' devices are described (client_speed, device_trace,
 *  client_up, client_down, client_latency): not faults (nothing fails, peers wait as
 *  long as without them). */
int scenario_has_client_devices(const scenario_t *sc);
/** The value of a strategy's own key (sim_strategy_t.own_keys) called key, which must
 * have been registered: .l for SIM_KEY_INT, .d for REAL, .i for BOOL and ENUM. */
const sim_own_value_t *scenario_own(const scenario_t *sc, const char *key);
/** Clients sampled per federated round: floor(clients x fraction + 1e-9) (0.29 x 100 is
 * 29). */
long scenario_fedavg_sampled(const scenario_t *sc);

/* ---- [sweep] (sweep.c) ---- */

/** Runs of sc: the product of its [sweep] lists' lengths (a linked line counts once), 1
 * without a sweep. */
long scenario_sweep_count(const scenario_t *sc);
/** Run i (0 <= i < scenario_sweep_count; the last key varies fastest) into *run, named
 * "NAME/key=value,..." and validated; without a sweep, sc itself validated. */
dt_status scenario_sweep_run(const scenario_t *sc, long i, scenario_t *run, dt_err_t *err);

/* ---- output (output.c) ---- */

/** The resolved scenario, every key with its value, as INI that scenario_load reads back
 * to the same struct (a sweep with its [sweep]; a run of one as a plain scenario). */
void scenario_write(const scenario_t *sc, FILE *out);
/** Calls fn for every key in table order: "section.key", its text as scenario_write writes
 * it, and its value in base units (bytes/s, s, FLOP/s; booleans 0/1) or NAN if not numeric. */
void scenario_foreach_key(const scenario_t *sc,
                          void (*fn)(void *ctx, const char *key, const char *text, double number),
                          void *ctx);
/** The key reference in Markdown: a table per section, then units and device profiles. */
void scenario_write_keys_markdown(FILE *out);

/* ---- names, units and device profiles (keys.c, units.c, devices.c) ---- */

/** The name of a model.device value in files and output ("cpu", "cuda", "auto"). */
const char *scenario_backend_name(sim_backend_t b);
/** The name of a strategy.algorithm value ("ring", "tree", ...). */
const char *scenario_algorithm_name(sim_allreduce_algo_t a);
/** "10Gbps" into bytes/s; DT_ERR_INPUT (without location) for a bad number or unit. */
dt_status scenario_parse_bandwidth(const char *text, double *bytes_per_s, dt_err_t *err);
/** "5us" into seconds (a bare 0 allowed); DT_ERR_INPUT for a bad number or unit. */
dt_status scenario_parse_time(const char *text, double *seconds, dt_err_t *err);
/** "19.5Tf" into FLOP/s; DT_ERR_INPUT for a bad number or unit. */
dt_status scenario_parse_flops(const char *text, double *flops, dt_err_t *err);
/** A bandwidth in bytes/s as scenario files write it ("10Gbps"). */
void scenario_format_bandwidth(double bytes_per_s, char *buf, size_t n);

/* What the device catalogue and profile files say of a device, field by field. */
typedef enum sim_device_field {
    SIM_DEV_FP32, /* peak FLOP/s of each precision, in sim_precision_t's order */
    SIM_DEV_TF32,
    SIM_DEV_BF16,
    SIM_DEV_FP8,
    SIM_DEV_MEMORY,            /* capacity, bytes */
    SIM_DEV_MEMORY_BANDWIDTH,  /* bytes/s */
    SIM_DEV_POWER_IDLE,        /* W */
    SIM_DEV_POWER_MAX,         /* W */
    SIM_DEV_EFFICIENCY,        /* achieved fraction of the FP32 peak */
    SIM_DEV_TENSOR_EFFICIENCY, /* of the TF32, BF16 and FP8 peaks */
    /* the compute model by operation and shape (compute_model.h); a device without sms
     * runs every layer at the flat speed above */
    SIM_DEV_SMS,                  /* streaming multiprocessors (AMD: compute units) */
    SIM_DEV_GEMM_EFFICIENCY,      /* sustained fraction of the tensor peak, large GEMMs */
    SIM_DEV_ATTENTION_EFFICIENCY, /* of the 16-bit tensor peak, flash attention */
    SIM_DEV_MEMORY_EFFICIENCY,    /* sustained fraction of memory_bandwidth */
    /* collectives as NCCL runs them inside a server (strategy.tensor_comm = nccl), both in
     * nccl-tests' bus bandwidth convention (algbw x 2 (T-1) / T for an all-reduce) */
    SIM_DEV_NVLINK_BUSBW, /* bytes/s a GPU's ring all-reduce reaches over NVLink */
    SIM_DEV_NVLS_BUSBW,   /* bytes/s with NVLink SHARP (in-switch reduction); NAN: none */
    /* and between servers (strategy.dp_comm = nccl): the fraction of a NIC's line rate
     * NCCL's collectives carry (nccl-tests' busbw per NIC over its bandwidth) */
    SIM_DEV_NIC_EFFICIENCY,
    /* the compute model by shape again: the large-GEMM fraction of the FP8 peak with block
     * scaling (model.fp8_scaling = block); NAN: not known, block scaling refused */
    SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY,
    SIM_DEV_FIELDS,
} sim_device_field_t;

typedef struct sim_device_profile {
    char name[SCENARIO_STR];          /* cluster.device: a catalogue name or a file */
    char title[128];                  /* what it is */
    double value[SIM_DEV_FIELDS];     /* NAN where not known */
    char source[SIM_DEV_FIELDS][400]; /* where each known value comes from */
} sim_device_profile_t;

/** The device catalogue (scenarios/devices/catalogue.ini, compiled in), *count entries. */
const sim_device_profile_t *scenario_device_profiles(size_t *count);
/** The catalogue's [defaults]: the values and sources an entry or a file leaves out. */
const sim_device_profile_t *scenario_device_defaults(void);
/** The key of field f in device files ("fp32", "memory_bandwidth", ...). */
const char *scenario_device_field_name(sim_device_field_t f);
/** Reads a device profile file: dtsim calibrate's [device] (name, flops: a measured speed)
 * or one section written like a catalogue entry; "FILE:LINE: device.KEY: why" on error. */
dt_status scenario_device_read(const char *path, sim_device_profile_t *out, dt_err_t *err);
/** cluster.device's profile: a catalogue entry or its file; NULL for custom. */
const sim_device_profile_t *scenario_device(const scenario_t *sc);
/** The sustained speed of p at sc's precision: its peak x its achieved fraction (or
 * cluster.device_efficiency); NAN when p has no peak of that precision. */
double scenario_device_speed(const sim_device_profile_t *p, const scenario_t *sc);
/** Field f of p as the device tables print it: peaks in TFLOP/s, memory in GB, bandwidth
 * in GB/s, power in W, fractions; "-" when not known. */
void scenario_device_cell(const sim_device_profile_t *p, sim_device_field_t f, char *buf, size_t n);
/** The name of a precision ("fp32", "bf16", ...). */
const char *scenario_precision_name(sim_precision_t p);
/** Bytes of one value of the parameters, gradients and activations: 4 in fp32 and tf32,
 * 2 in bf16 and fp8 (what travels on the wire and what the memory counts). */
double scenario_value_bytes(const scenario_t *sc);
/** Optimizer bytes per parameter: the FP32 master copy of mixed precision (4) and the
 * optimizer's state (SGD: 4 with momentum, else 0; Adam: 8). */
double scenario_optimizer_bytes(const scenario_t *sc);
/** "93.1 GB": bytes in GB (10^9), three significant figures. */
void scenario_format_gb(double bytes, char *buf, size_t n);
/** "80GB" into bytes (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB). */
dt_status scenario_parse_size(const char *text, double *bytes, dt_err_t *err);
/** "700W" into watts (W, kW). */
dt_status scenario_parse_power(const char *text, double *watts, dt_err_t *err);

#endif
