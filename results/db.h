/* The results store: one SQLite file holding every run's configuration and metrics
 * (schema and units: results/schema.sql). It knows neither the trainer nor SimGrid: it stores
 * what it is given.
 *
 * Every statement is prepared once, at open, and values are only ever bound, never pasted
 * into SQL. The file is in WAL mode with a 10 s busy timeout, so several processes (a sweep
 * run with -j N) can write to it at once. One results_db_t belongs to one thread.
 *
 * Errors: functions return DT_OK, DT_ERR_INPUT (the caller or user can fix it: a directory
 * that does not exist, a file that is not a dtsim database or comes from a newer dtsim, an
 * unknown status or role, a run id that does not exist, a run already ended) or DT_ERR_RUN
 * (the machine failed: disk I/O, disk full, a lock held longer than the timeout). err->msg
 * then names the database path and carries SQLite's message; nothing is printed or aborted.
 *
 * Rows are written as they are given; callers batch a round's or an evaluation's rows between
 * results_tx_begin and results_tx_commit, which is both faster and atomic: a writer killed
 * mid-batch leaves every committed batch intact and none of the open one. */
#ifndef DTSIM_RESULTS_DB_H
#define DTSIM_RESULTS_DB_H

#include <stdint.h>

#include "common.h"

/* The schema version this build writes and reads (PRAGMA user_version). */
#define RESULTS_SCHEMA_VERSION 9

typedef struct results_db results_db_t;

/* For the store's own readers (query.c): runs a query of one integer (a PRAGMA, a count)
 * on an open SQLite handle into *out; returns SQLite's result code (SQLITE_OK on success). */
struct sqlite3;
int results_sql_int(struct sqlite3 *h, const char *sql, int *out);

/* Opens path, creating the file and its schema if needed (not its directory: a missing
 * directory is DT_ERR_INPUT). Runs still marked 'running' whose writer process was on this
 * host and no longer exists are marked 'interrupted'. On failure *db is NULL. */
dt_status results_db_open(results_db_t **db, const char *path, dt_err_t *err);
/* Rolls back an open transaction, then closes. NULL is allowed. */
void results_db_close(results_db_t *db);
/* The open SQLite handle, for the store's own writers beyond one row at a time (merge.c). */
struct sqlite3 *results_db_sqlite(results_db_t *db);

typedef struct results_run_info {
    const char *name;
    const char *strategy;
    const char *config; /* the fully resolved scenario, INI text */
    const char *dtsim_version;
    const char *simgrid_version;
    uint64_t seed;
    const char *sweep; /* sweep id shared by the runs of one [sweep] (NULL: none) */
    long sweep_index;  /* position in the sweep */
} results_run_info_t;

/* A new run, status 'running', started now (wall clock, UTC); its id in *run_id. The strings
 * are stored verbatim; NULL ones are stored as NULL. */
dt_status results_run_begin(results_db_t *db, const results_run_info_t *info, int64_t *run_id,
                            dt_err_t *err);

/* One evaluation checkpoint of a classifier. A NaN loss or accuracy (or any NaN) is stored
 * as NULL. */
dt_status results_eval_add(results_db_t *db, int64_t run, double sim_time, long step,
                           double samples, double bytes, double test_loss, double test_acc,
                           dt_err_t *err);
/* One evaluation checkpoint of a language model (text data): test_loss its mean next-token
 * cross-entropy in nats, test_acc its next-token accuracy, perplexity exp(test_loss) as the
 * caller computed it. NaNs are stored as NULL. */
dt_status results_eval_add_text(results_db_t *db, int64_t run, double sim_time, long step,
                                double samples, double bytes, double test_loss, double test_acc,
                                double perplexity, dt_err_t *err);

/* One host's totals; role is "worker", "server" or "client". weight >= 1: the hosts the row
 * stands for, each with these figures (schema.sql: workers); 1 for the host alone. */
dt_status results_worker_add(results_db_t *db, int64_t run, int worker, const char *host,
                             const char *role, double compute_s, double comm_s, double idle_s,
                             double bytes_sent, double bytes_recv, long steps, long weight,
                             dt_err_t *err);

/* What one host holds, bytes (NAN: not known; stored as NULL). */
typedef struct results_memory {
    double params;      /* parameters */
    double grads;       /* gradients */
    double optimizer;   /* optimizer state (momentum) */
    double activations; /* activations kept for the backward pass */
} results_memory_t;

/* What one host holds, in bytes, the fields of results_memory_t in its order (NAN stores
 * NULL: not known); weight as results_worker_add's. */
dt_status results_memory_add(results_db_t *db, int64_t run, int worker, const char *role,
                             double params, double grads, double optimizer, double activations,
                             long weight, dt_err_t *err);

/* One round's privacy spent (DP-FedAvg): epsilon (INFINITY or NaN stored as NULL) at delta. */
dt_status results_privacy_add(results_db_t *db, int64_t run, long round, double epsilon,
                              double delta, dt_err_t *err);

/* A federated client's figures at the end of a run (the clients table). */
typedef struct results_client {
    long client;
    long rounds;                /* rounds its update was aggregated in */
    long samples;               /* training samples it holds */
    long held_out;              /* samples of its own held out for its evaluation, 0: none */
    double test_acc, test_loss; /* the final model on them; NaN: not evaluated */
    int byzantine;
} results_client_t;

/* Stores one client's row. */
dt_status results_client_add(results_db_t *db, int64_t run, const results_client_t *c,
                             dt_err_t *err);

/* Adds count to the staleness histogram bucket (created at 0 if absent). */
dt_status results_staleness_add(results_db_t *db, int64_t run, long staleness, long count,
                                dt_err_t *err);

/* Adds count to client's histogram of labels (created at 0 if absent). */
dt_status results_label_hist_add(results_db_t *db, int64_t run, int client, int label, long count,
                                 dt_err_t *err);

/* One write transaction (BEGIN IMMEDIATE: the write lock is taken, or waited for, up front).
 * No nesting. After a failed write inside one, results_tx_rollback drops the batch. */
dt_status results_tx_begin(results_db_t *db, dt_err_t *err);
/* Commits the open transaction, storing its rows together. */
dt_status results_tx_commit(results_db_t *db, dt_err_t *err);
/* Drops the open transaction's rows; DT_OK when none is open (SQLite may have ended it). */
dt_status results_tx_rollback(results_db_t *db, dt_err_t *err);

/* One resolved scenario key: its text and, if numeric (with or without a unit), its value in
 * base units (NAN: not a number, stored as NULL). */
dt_status results_param_add(results_db_t *db, int64_t run, const char *key, const char *value,
                            double number, dt_err_t *err);

/* One interval of a host's timeline; state is "compute", "comm" or "idle". */
dt_status results_timeline_add(results_db_t *db, int64_t run, const char *host, const char *role,
                               int rank, const char *state, double start, double end,
                               dt_err_t *err);

/* One message of the timeline's window: its sender's and receiver's host, role and rank,
 * when it was posted, when the receiver's transfer began and when it ended, its bytes. */
typedef struct results_msg_end {
    const char *host, *role;
    int rank;
} results_msg_end_t;
dt_status results_message_add(results_db_t *db, int64_t run, const results_msg_end_t *src,
                              const results_msg_end_t *dst, double sent, double start, double done,
                              double bytes, dt_err_t *err);

/* Adds bytes to a link's total. weight >= 1: the links the row stands for, each of which
 * carried these bytes (schema.sql: links); a row added to keeps the weight it was made with. */
dt_status results_link_add(results_db_t *db, int64_t run, const char *link, double bytes,
                           long weight, dt_err_t *err);

/* One fault or reaction at simulated time sim_time. */
dt_status results_fault_add(results_db_t *db, int64_t run, double sim_time, const char *kind,
                            const char *target, const char *detail, dt_err_t *err);

/* A run's energy and cost (the energy table); NAN is stored as NULL. */
typedef struct results_energy {
    long hosts;               /* hosts charged: workers and servers */
    double host_joules;       /* their devices, SimGrid's host energy plugin */
    long link_ports;          /* network ports charged at cluster.link_power */
    double link_joules;       /* ports x link_power x simulated time */
    double joules_per_step;   /* (host + link) / global steps */
    double joules_per_sample; /* (host + link) / training samples */
    double dollars;           /* hosts x simulated hours x cluster.price_per_device_hour */
    double dollars_per_sample;
    double dollars_to_target; /* hosts x hours to run.target_accuracy x price; NAN: never */
} results_energy_t;

/* The parts of a simulated step (a round for the federated strategies), in the order a
 * stacked bar draws them: the breakdown table (schema.sql says what each part holds). */
typedef enum results_part {
    RESULTS_PART_COMPUTE,   /* forward and backward passes */
    RESULTS_PART_RECOMPUTE, /* model.recompute's forward passes again */
    RESULTS_PART_OPTIMIZER, /* the update's work where the trainer is charged for it */
    RESULTS_PART_TENSOR,    /* tensor groups' collectives, exposed */
    RESULTS_PART_CONTEXT,   /* context groups' ring attention, exposed */
    RESULTS_PART_EXPERT,    /* experts' all-to-alls, exposed */
    RESULTS_PART_PIPELINE,  /* activations and gradients between stages, exposed */
    RESULTS_PART_DATA,      /* replicas' (or a server's, or clients') exchange, exposed */
    RESULTS_PART_BUBBLE,    /* waiting for a neighbouring stage: the pipeline's bubble */
    RESULTS_PART_WAIT,      /* waiting for any other peer, or after its own end */
    RESULTS_PART_COUNT
} results_part_t;

/* The names stored in breakdown.part, by results_part_t. */
extern const char *const results_part_names[RESULTS_PART_COUNT];

/* A breakdown as one line into buf: "UNIT 1.234 s = compute 0.8 s (64.8%) + ... + bubble
 * 0.2 s (16.2%)", the parts that are not 0 in results_part_t's order; UNIT "step", "round". */
void results_breakdown_line(const double seconds[RESULTS_PART_COUNT], const char *unit, char *buf,
                            size_t n);
/* Stores a run's breakdown: seconds[k] simulated seconds of part k per step (once per run). */
dt_status results_breakdown_add(results_db_t *db, int64_t run,
                                const double seconds[RESULTS_PART_COUNT], dt_err_t *err);

/* Stores a run's energy row (once per run). */
dt_status results_energy_add(results_db_t *db, int64_t run, const results_energy_t *e,
                             dt_err_t *err);

typedef struct results_summary {
    double final_accuracy, final_loss;
    double sim_time;
    double time_to_target; /* NAN if the target was never reached (stored as NULL) */
    double target_accuracy;
    double total_bytes;
    double compute_share, comm_share, idle_share;
    long steps;
} results_summary_t;

/* Ends a 'running' run: status is "finished", "failed", "diverged" or "interrupted"; the end
 * time is now; summary (may be NULL, e.g. for a run that failed before any evaluation) is
 * stored in the same transaction. Ending a run that is not 'running' is DT_ERR_INPUT and
 * changes nothing. Inside a caller's transaction it joins that transaction. */
dt_status results_run_end(results_db_t *db, int64_t run, const char *status,
                          const results_summary_t *summary, dt_err_t *err);

#endif
