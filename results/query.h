/* The read side of the results store: which runs to show, and the rows each figure needs
 * (schema and units: results/schema.sql). It opens the database read-only, so plotting can
 * never change a result, and it only reads: every statement is prepared once at open, values
 * are bound, never pasted into SQL.
 *
 * Errors as in db.h: DT_ERR_INPUT for what the user can fix (no such file, not a dtsim
 * database, no runs, an unknown run or sweep, a bad --runs list), DT_ERR_RUN when the machine
 * fails (I/O). err->msg is one line naming the database path. */
#ifndef DTSIM_RESULTS_QUERY_H
#define DTSIM_RESULTS_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "db.h" /* results_memory_t */

typedef struct results_query results_query_t;

/* Opens an existing dtsim database read-only. On failure *q is NULL. */
dt_status results_query_open(results_query_t **q, const char *path, dt_err_t *err);
/* Closes q and its statements; NULL is allowed. */
void results_query_close(results_query_t *q);
/* The read-only SQLite connection behind q, for readers elsewhere in results/ (export.c);
 * statements on it must bind every value. */
struct sqlite3 *results_query_sqlite(results_query_t *q);

/* One run as the figures see it: the runs row, the two parameters the figures group by, and
 * its run_summary row (has_summary = 0 and NAN metrics for a run that has no summary yet).
 * Undefined values (NULL in the database) are NAN. */
typedef struct results_run_view {
    int64_t id;
    char *name;     /* "" when the run has none */
    char *strategy; /* "" when the run has none */
    char *status;
    char *sweep; /* NULL: not part of a sweep */
    long sweep_index;
    double workers;   /* cluster.workers as stored (a 'single' run stores the scenario's) */
    double bandwidth; /* cluster.bandwidth, bytes/s */
    int has_summary;
    double final_accuracy, sim_time, time_to_target, target_accuracy, total_bytes;
    double compute_share, comm_share, idle_share;
    double throughput;         /* training samples per simulated second */
    double scaling_efficiency; /* against the sweep's finished 'single' run; NAN: none */
    long steps;
    double final_loss;  /* test loss of the last evaluation (nats for a language model) */
    int language_model; /* its evaluations have a perplexity (text data, next tokens) */
} results_run_view_t;

/* The hosts a run's figures count: 1 for the 'single' strategy (which ignores
 * cluster.workers), cluster.workers otherwise. */
double results_run_view_workers(const results_run_view_t *r);

typedef struct results_runs {
    results_run_view_t *v;
    size_t n;
    char what[256]; /* how they were chosen, for a message: "6 finished runs of sweep s1" */
} results_runs_t;

/* Chooses the runs to show:
 *   - runs_spec ("3,5-9"): those runs, ascending by id, whatever their status; a single id
 *     must exist, a range takes the runs that exist in it and must hold at least one;
 *   - sweep: the finished runs of that sweep, in sweep order; a sweep id, or a sweep's name
 *     (its runs are named NAME or NAME/...: the newest sweep of that name with more than one
 *     finished run, else the newest);
 *   - neither: as for the name of the newest finished run that has a sweep (so that one
 *     member run alone, --member, does not hide its sweep); without any, the
 *     RESULTS_RECENT_RUNS most recent finished runs.
 * Giving both is the caller's usage error (DT_ASSERT). An empty choice is DT_ERR_INPUT with a
 * message saying why. On success out owns its rows: free with results_runs_free. */
#define RESULTS_RECENT_RUNS 16
/* runs_spec and sweep may each be NULL; on failure out is left empty (n = 0). */
dt_status results_query_select(results_query_t *q, const char *runs_spec, const char *sweep,
                               results_runs_t *out, dt_err_t *err);
/* Frees the rows of runs and empties it (v = NULL, n = 0); NULL is allowed. */
void results_runs_free(results_runs_t *runs);

/* One run by id (DT_ERR_INPUT if there is none); free with results_run_view_free. */
dt_status results_query_run(results_query_t *q, int64_t id, results_run_view_t *out, dt_err_t *err);
/* Frees r's strings and zeroes r; NULL is allowed. */
void results_run_view_free(results_run_view_t *r);

/* Every run of sweep (an id, or a name as results_query_select takes it) whatever its status
 * (running, failed, interrupted, ...), by sweep index then id: what `dtsim run` tables when a
 * sweep ends. No run is not an error (out->n = 0).
 * On success out owns its rows: free with results_runs_free. */
dt_status results_query_sweep(results_query_t *q, const char *sweep, results_runs_t *out,
                              dt_err_t *err);

/* "3,5-9" -> {3,3}, {5,9}. Ids are >= 1, a range is LO-HI with LO <= HI, no blanks. On
 * success *ranges is malloc'ed (free it); on DT_ERR_INPUT err says what is wrong. */
typedef struct results_id_range {
    int64_t lo, hi;
} results_id_range_t;
/* Parses spec into (*ranges)[0..*n); on failure *ranges is NULL and *n is 0. */
dt_status results_runs_spec_parse(const char *spec, results_id_range_t **ranges, size_t *n,
                                  dt_err_t *err);

/* A run's evaluations in simulated time order; NULLs read as NAN. A language model's
 * (text > 0) test_acc is its next-token accuracy, test_loss its next-token cross-entropy. */
typedef struct results_evals {
    size_t n;
    double *sim_time, *samples, *bytes, *test_loss, *test_acc;
    double *perplexity; /* exp(test_loss) of a language model; NAN for a classifier */
    size_t text;        /* evaluations with a perplexity */
    long *step;
} results_evals_t;
/* run's evaluations into out (none: n = 0; failure: empty); free with results_evals_free. */
dt_status results_query_evals(results_query_t *q, int64_t run, results_evals_t *out, dt_err_t *err);
/* Frees what results_query_evals filled and zeroes e; NULL is allowed. */
void results_evals_free(results_evals_t *e);

/* A run's host and link faults in time order (down = 1 for a crash, a link down or
 * degraded, 0 for the recovery), and how many fault rows it has of any kind. */
typedef struct results_faults {
    size_t rows;
    size_t n;
    double *sim_time;
    int *down;
} results_faults_t;
/* run's faults into out (failure: empty); free with results_faults_free. */
dt_status results_query_faults(results_query_t *q, int64_t run, results_faults_t *out,
                               dt_err_t *err);
/* Frees what results_query_faults filled and zeroes f; NULL is allowed. */
void results_faults_free(results_faults_t *f);

/* The memory of the run's most loaded host (NULL reads as NAN); *found = 0, every field NAN,
 * when the run has no memory rows (or the file predates them). */
dt_status results_query_memory(results_query_t *q, int64_t run, results_memory_t *mem, int *found,
                               dt_err_t *err);

/* The text of scenario key `key` (params.value) of run; *found = 0, buf "", when the run
 * has no such row (a key newer than the run). */
dt_status results_query_param(results_query_t *q, int64_t run, const char *key, char *buf, size_t n,
                              int *found, dt_err_t *err);

/* A federated run's clients at its end: the client_fairness row (the statistics are the
 * view's, NULL read as NAN) and the honest clients that have a held-out accuracy, ascending
 * by it. clients = 0 when the run has no clients rows (or the file predates them). */
typedef struct results_clients {
    size_t clients;          /* every client of the run */
    size_t byzantine;        /* of them, faults.byzantine's attackers */
    size_t never_aggregated; /* clients whose update no round aggregated */
    double mean_rounds;      /* rounds taken part, mean over every client */
    long max_rounds;
    double mean_acc, p10_acc, p90_acc, spread; /* over the honest clients with held-out samples */
    size_t n;                                  /* those clients */
    double *acc;                               /* (n) held-out accuracy, ascending */
    long *rounds;                              /* (n) rounds each took part in */
} results_clients_t;
/* run's clients into out (failure: empty); free with results_clients_free. */
dt_status results_query_clients(results_query_t *q, int64_t run, results_clients_t *out,
                                dt_err_t *err);
/* Frees what results_query_clients filled and zeroes c; NULL is allowed. */
void results_clients_free(results_clients_t *c);

/* A run's timeline: one lane per (role, rank, host), servers first, then workers, then
 * clients, each by rank; the intervals of every lane in start order. */
typedef enum results_state {
    RESULTS_STATE_COMPUTE,
    RESULTS_STATE_COMM,
    RESULTS_STATE_IDLE,
    RESULTS_STATE_COUNT
} results_state_t;
/* The state's name as the timeline table stores it (a static string). */
const char *results_state_name(results_state_t s); /* "compute", "comm", "idle" */

typedef struct results_lane {
    char *host, *role;
    int rank;
} results_lane_t;

typedef struct results_interval {
    size_t lane; /* index into lanes */
    results_state_t state;
    double start, end; /* simulated seconds */
} results_interval_t;

typedef struct results_timeline {
    results_lane_t *lanes;
    size_t n_lanes;
    results_interval_t *iv;
    size_t n;
} results_timeline_t;
/* run's timeline into out (no rows: empty); free with results_timeline_free. */
dt_status results_query_timeline(results_query_t *q, int64_t run, results_timeline_t *out,
                                 dt_err_t *err);
/* Frees the lanes (with their strings) and intervals and zeroes t; NULL is allowed. */
void results_timeline_free(results_timeline_t *t);

/* One message of the messages table: its sender's and receiver's lanes (as the timeline
 * names them) and when it went (simulated seconds). */
typedef struct results_message {
    char *src_host, *src_role, *dst_host, *dst_role;
    int src_rank, dst_rank;
    double sent;  /* the sender posted it */
    double start; /* the receiver's transfer began (the start of its comm interval) */
    double done;  /* the receiver had it */
    double bytes;
} results_message_t;

typedef struct results_messages {
    results_message_t *m;
    size_t n;
} results_messages_t;
/* A run's energy and cost (the energy table); NAN where the run has no such row or value (a
 * file that predates the table, a device without power figures, no price). */
typedef struct results_energy_view {
    double host_joules, link_joules, joules_per_sample;
    double dollars, dollars_per_sample, dollars_to_target;
} results_energy_view_t;
dt_status results_query_energy(results_query_t *q, int64_t run, results_energy_view_t *out,
                               dt_err_t *err);
/* A run's breakdown of a step (the breakdown table): seconds[k] of part k (results_part_t,
 * db.h) per step; *found 0 where the run has none (a file before version 9, a run that did
 * not end), the seconds then NAN. */
dt_status results_query_breakdown(results_query_t *q, int64_t run,
                                  double seconds[RESULTS_PART_COUNT], int *found, dt_err_t *err);

/* run's messages by send time into out (none, or a file that predates the table: n = 0;
 * failure: empty); free with results_messages_free. */
dt_status results_query_messages(results_query_t *q, int64_t run, results_messages_t *out,
                                 dt_err_t *err);
/* Frees what results_query_messages filled and zeroes m; NULL is allowed. */
void results_messages_free(results_messages_t *m);

/* The path q was opened with, for messages of readers elsewhere in results/. */
const char *results_query_path(const results_query_t *q);

/* --- what `dtsim runs` and `dtsim show` print ----------------------------------------- */

/* Opens an existing database for `dtsim runs` and `dtsim show`: a writer's open first marks
 * the runs of vanished writers interrupted, so a dead run does not read as running; a
 * missing file is DT_ERR_INPUT, never created. Then as results_query_open. */
dt_status results_query_open_current(results_query_t **q, const char *path, dt_err_t *err);

/* The widest line of the run list without --wide: names are elided in the middle to fit. */
#define RESULTS_RUNS_COLUMNS 100
/* The run list, one line per run by id: id, name, strategy, status, final accuracy, simulated
 * and wall time, then a line per sweep with its id and runs; wide adds the final loss, time to
 * target, bytes, steps, start time and sweep, and writes names whole. Text from the database
 * has its control bytes written \xNN. */
dt_status results_runs_print(results_query_t *q, FILE *out, int wide, dt_err_t *err);

/* Writes s to out as the run list and `dtsim show` write text from the database: control
 * bytes as \xNN, so a name cannot break a line or drive the terminal. */
void results_put_text(const char *s, FILE *out);

/* Duration text for tables: 3 significant digits in us, s, min, h or d ("7.65s", "12.5min");
 * "-" for NAN. buf holds at least 12 bytes. */
void results_duration_text(double seconds, char *buf, size_t size);

/* A run's rows beyond results_run_view_t, for `dtsim show` (text NULL where the column is
 * NULL; a table the file predates reads as empty). */
typedef struct results_role_total {
    char *role; /* worker, server, client */
    long hosts, steps;
    double compute_s, comm_s, idle_s, bytes_sent; /* summed over its hosts */
} results_role_total_t;

typedef struct results_kind_count {
    char *kind;
    long n;
} results_kind_count_t;

typedef struct results_run_detail {
    char *config, *dtsim_version, *simgrid_version, *host, *started, *ended;
    int64_t seed;
    long pid;
    double wall_s;     /* ended - started; NAN while running or when ended is unknown */
    double final_loss; /* the summary's; NAN: none */
    size_t n_params;
    char **param_key, **param_value; /* (n_params) by key */
    size_t n_fault_kinds;
    results_kind_count_t *fault_kinds; /* (n_fault_kinds) in order of first fault */
    size_t n_roles;
    results_role_total_t *roles; /* (n_roles) servers, workers, clients */
    long links;                  /* links that carried bytes */
    char *busiest_link;          /* NULL: no links rows */
    double busiest_bytes;
    long privacy_round;    /* last DP round recorded; 0: none */
    double epsilon, delta; /* at that round; epsilon NAN: infinite */
    long stale_gradients;  /* staleness rows' count; 0: none */
    double mean_staleness;
    long max_staleness;
} results_run_detail_t;
/* run's detail into out (DT_ERR_INPUT "no run ID" when there is none; failure: empty); free
 * with results_run_detail_free. */
dt_status results_query_detail(results_query_t *q, int64_t run, results_run_detail_t *out,
                               dt_err_t *err);
/* Frees what results_query_detail filled and zeroes d; NULL is allowed. */
void results_run_detail_free(results_run_detail_t *d);

#endif
