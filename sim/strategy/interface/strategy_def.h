/* The strategy interface: everything the scenario code and the run engine ask of a
 * strategy. Each file under sim/strategy/ fills one sim_strategy_t and
 * sim/strategy/registry.c lists them; nothing else names a strategy. The type sits beside
 * the strategies in a folder of its own that the layers below include (CMake's
 * dtsim_strategy_interface), so that the scenario's checks and the engine call the
 * strategies above them through it (as ggml's backends fill ggml_backend_i). Optional
 * slots may be NULL; what NULL means is said beside each. */
#ifndef DTSIM_STRATEGY_DEF_H
#define DTSIM_STRATEGY_DEF_H

#include <stddef.h>

#include "common.h"

struct scenario;
struct sim_run;
struct sim_node;

/* What a strategy takes (sim_strategy_t.takes): techniques the scenario refuses to the
 * others, and what it needs of the platform. */
enum {
    SIM_TAKES_COMPRESSION = 1 << 0,         /* strategy.compression, error_feedback */
    SIM_TAKES_ACCUMULATE = 1 << 1,          /* strategy.accumulate > 1 */
    SIM_TAKES_MOMENTUM_CORRECTION = 1 << 2, /* strategy.momentum_correction (DGC) */
    SIM_NEEDS_PEER_LINKS = 1 << 3,          /* exchanges between workers: not on the edge
                                               platform, whose clients reach the server only */
    SIM_SAME_AS_SINGLE = 1 << 4,            /* trains single's model with the global batch
                                               (model.batch x accumulate x replicas): the
                                               weights agree up to float rounding (tested) */
    SIM_TAKES_EMPTY_CLIENTS = 1 << 5,       /* a population whose clients may hold no sample
                                               (data.partition over more clients than
                                               samples): it samples among those holding some */
    SIM_TAKES_CLIENT_LINKS = 1 << 7,        /* per-client links (faults.client_up, ...):
                                               each client trains on a host of its own, so a
                                               host's access link is that client's */
    SIM_TAKES_ALLREDUCE = 1 << 8,           /* its replicas all-reduce through the engine's
                                               collectives: strategy.algorithm, ring_messages */
    SIM_TAKES_GROUPS = 1 << 9,              /* hierarchical and 2d all-reduces in groups of
                                               strategy.group_size */
    SIM_TAKES_BUCKETS = 1 << 10,            /* gradient buckets reduced during the backward
                                               pass: strategy.bucket_mb */
    SIM_RUNS_REAL = 1 << 6,                 /* `dtsim run --real` runs it over MPI: every
                                               node runs as it would on SimGrid, none reads
                                               another's memory or trains on its behalf
                                               (what else it refuses: real_check) */
};

/* A [strategy] key of a strategy's own, declared in its file (sim_strategy_t.own_keys).
 * Registering the strategy adds it to the key table, so it is read, range-checked, swept,
 * written back and listed in the key reference like every key; the strategy reads its
 * value with scenario_own(sc, key) (scenario.h). */
typedef enum sim_key_kind {
    SIM_KEY_INT,  /* whole number in [min, max]; read as .l */
    SIM_KEY_REAL, /* number in [min, max]; read as .d */
    SIM_KEY_BOOL, /* yes / no; read as .i */
    SIM_KEY_ENUM, /* one of names; read as .i, its index */
} sim_key_kind_t;

enum { SIM_KEY_OPEN_MIN = 1, SIM_KEY_OPEN_MAX = 2 };

typedef struct sim_strategy_key {
    const char *key; /* the name under [strategy] */
    sim_key_kind_t kind;
    const char *def;          /* the default, as a scenario file writes it */
    double min, max;          /* INT, REAL: the range, bounds included unless open says */
    unsigned open;            /* SIM_KEY_OPEN_MIN, SIM_KEY_OPEN_MAX: bounds left out */
    const char *const *names; /* ENUM: the values, NULL-terminated */
    const char *doc;          /* one line for the key reference */
    int ignored_elsewhere;    /* 1: a scenario of another strategy may set it and it is
                                 ignored there (the keys every strategy's file could hold
                                 before they were a strategy's own); 0: set there to
                                 other than its default, it is refused */
} sim_strategy_key_t;

/* Where a scenario keeps the value of a strategy's own key (scenario_t.own). */
typedef union sim_own_value {
    long l;
    double d;
    int i;
} sim_own_value_t;

typedef struct sim_strategy {
    /** strategy.kind in scenario files and the runs table. */
    const char *name;
    /** One line for the strategy table (sim/README.md, `dtsim strategies`). */
    const char *about;
    /** Keys of its own, {NULL}-terminated, listed in the key reference before
     * strategy.accumulate; a name no built-in key has; two strategies that declare a key
     * alike (kind, default, range, names) share it. NULL: none. The [strategy] keys it
     * reads are these and those of the techniques its takes names (scenario_strategy_keys):
     * the key reference and the strategy table list them from here. */
    const sim_strategy_key_t *own_keys;
    /** The role of its trainers: "worker", or "client" for federated strategies. */
    const char *worker_role;
    /** SIM_TAKES_* flags. */
    unsigned takes;
    /** Its checks of the keys once all are read (scenario_validate calls it after the
     * generic ones): DT_ERR_INPUT through scenario_fail and scenario_blame. NULL: none. */
    dt_status (*check)(const struct scenario *sc, dt_err_t *err);
    /** SIM_RUNS_REAL: what of its own it cannot run real, refused like check (real mode's
     * generic refusals come first). NULL: nothing beyond them. */
    dt_status (*real_check)(const struct scenario *sc, dt_err_t *err);
    /** What one compute call of a timing-only model holds (compute_model.h's call, the
     * shape model times by it): samples (its micro-batch), a tensor group member's share T
     * with sequence parallelism sp, the expert group E. NULL: model.batch whole, T = 1. */
    void (*compute_call)(const struct scenario *sc, double *samples, int *T, int *sp, int *E);
    /** The hosts it runs on: trainers and servers. NULL: cluster.workers, no server. */
    void (*hosts)(const struct scenario *sc, int *workers, int *servers);
    /** Regional aggregators R (hierarchical FL): server 1 + r serves the worker hosts h with
     * h mod R = r, server 0 (the cloud) serves the aggregators; on the edge platform a host
     * is routed to its region's aggregator only, and the aggregators to server 0. NULL:
     * none. */
    int (*regions)(const struct scenario *sc);
    /** Model replicas that take one global step together (the global batch is
     * model.batch x accumulate x replicas). NULL: one per worker. */
    int (*replicas)(const struct scenario *sc, int workers);
    /** The workers that run, the first n: worker i >= n stands in for worker i mod n (its
     * work, rows and memory are that one's; deploy spawns no actor for it). Asked before
     * the platform loads (run: its scenario, model and n_workers; no hosts or nodes yet),
     * so that the platform holds only what those use (sim_platform_load_live) and a
     * stand-in no message slots. NULL: every worker. */
    int (*live_workers)(const struct sim_run *run);
    /** Data partitions: clients of a population, or one per worker. NULL: one per
     * worker (cluster.workers before the platform is known). */
    long (*parts)(const struct scenario *sc, long workers);
    /** The schedule's horizon: rounds for federated strategies. NULL: run.steps. */
    long (*horizon)(const struct scenario *sc);
    /** Global steps done, for the summary. NULL: the first worker's steps. */
    long (*steps_done)(const struct sim_run *run);
    /** Message headers node keeps in rotation, given the engine's count (n). NULL: n. */
    size_t (*msg_slots)(const struct sim_run *run, const struct sim_node *node, size_t n);
    /** What node holds (sim_node_t.mem), from the run before deploy: the device's memory
     * is checked against it before anything starts. NULL: sim_memory_default. */
    void (*memory)(const struct sim_run *run, struct sim_node *node);
    /** Creates its actors on the run's hosts, before the simulation starts. */
    void (*deploy)(struct sim_run *run);
    /** What it set up, one line for the run's summary (sim_run_t.note), written after the
     * simulation and before the run's shared state is freed. NULL: no line. */
    void (*summary)(const struct sim_run *run, char *line, size_t n);
} sim_strategy_t;

/** Makes list (NULL-terminated, in table order) the strategies scenarios may name, and adds
 * their own keys to the key table (call it before reading any scenario). */
void scenario_strategies_use(const sim_strategy_t *const *list);
/** The strategies in use (NULL-terminated); asserts that some were given. */
const sim_strategy_t *const *scenario_strategies(void);
/** The strategy called name, or NULL. */
const sim_strategy_t *scenario_strategy_find(const char *name);
/** "a, b and c" (last = " and "): the strategies whose takes has every bit of mask, in
 * table order. */
void scenario_strategies_taking(unsigned mask, const char *last, char *buf, size_t n);
/** Likewise, the strategies whose takes has no bit of mask. */
void scenario_strategies_lacking(unsigned mask, const char *last, char *buf, size_t n);
/** 1 when st reads [strategy] key `key` (its own keys, the keys of the techniques it takes;
 * strategy.kind: every strategy). */
int scenario_strategy_reads(const sim_strategy_t *st, const char *key);
/** "`a`, `b`" of the [strategy] keys st reads, in the key table's order, less kind ("" for
 * none). */
void scenario_strategy_keys(const sim_strategy_t *st, char *buf, size_t n);
/** "a, b and c" (last = " and ") of the strategies that read [strategy] key `key`. */
void scenario_key_readers(const char *key, const char *last, char *buf, size_t n);
/** Likewise, the federated ones (worker_role "client") whose takes has every bit of mask
 * (0: every federated strategy). */
void scenario_strategies_federated(unsigned mask, const char *last, char *buf, size_t n);

#endif
