/* One simulated run: the data, the model, the simulated hosts and what every strategy
 * shares (real compute charged as simulated time, messages with their real sizes, the
 * global batch sampler, evaluation and recording).
 *
 * Actors run in one OS thread and only switch at SimGrid calls, so the real forward and
 * backward of every node use ONE workspace (run->engine.ws) without interference, and
 * every node keeps only its own parameter, gradient and momentum buffers.
 *
 * Message ownership: a sim_msg_t and the floats it points to belong to the sender, are
 * allocated once per node before the simulation starts, and are never freed by the
 * receiver. The receiver reads (copies or accumulates) the payload right after its wait
 * returns, before its next SimGrid call; every protocol here only rewrites a sent region
 * after an exchange that the receiver can only reach after that read. A failed send leaves
 * the message with its sender. */
#ifndef DTSIM_RUN_H
#define DTSIM_RUN_H

#include <stdint.h>

#include "data.h"
#include "db.h"
#include "fault.h"
#include "model.h"
#include "model_profile.h"
#include "partition.h"
#include "platform.h"
#include "breakdown.h"
#include "record.h"
#include "rng.h"
#include "scenario.h"
#include "train.h"
#include "transport.h"

/* Long enough never to cut a transfer short in a healthy run (faults come with their own
 * timeouts: sim_fault_timeout). */
#define SIM_COMM_TIMEOUT 1e7

/* A part of an all-reduce's sum that a node did not copy in: data[0..n) is sum[offset..],
 * still in the buffer of the member that sent it (comm/collective.h,
 * sim_groups_allreduce_lazy). */
typedef struct sim_part {
    size_t offset, n;
    const float *data;
} sim_part_t;

typedef struct sim_msg {
    int from;                      /* sender's rank among its role */
    sim_host_t src;                /* sender's host (for per-link bytes) */
    const struct sim_node *sender; /* the sending node (the messages table), NULL: not said */
    long step;                     /* sender's step, round or parameter version */
    double sent_at;                /* simulated time the send was posted */
    double bytes;                  /* simulated size on the wire */
    const float *data;             /* payload, owned by the sender */
    const uint8_t *packed;         /* or an encoded payload of `bytes` bytes (comm/wire.h), also
                                      the sender's; data is then unused */
    size_t offset, n;              /* slice of the model buffer: data[0..n) is params[offset..] */
    const float *aux;              /* a second payload of n floats, counted in bytes by the sender
                                      (SCAFFOLD's control variate), or NULL */
    double weight;                 /* fedavg: samples behind the update */
    int flag;                      /* strategy-specific (e.g. "last message") */
    int tag;                       /* the kind of a strategy's control message (secure aggregation's
                                      steps), 0 for the rest */
    long count, count2;            /* what a control message's bytes stand for (a peer count) */
    const sim_part_t *parts;       /* a lazy all-reduce's parts that go with data (the sender's,
                                      n_parts of them), or NULL */
    int n_parts;
} sim_msg_t;

/* A mailbox between a node and one peer, kept by the node (comm/collective.c's cache). */
typedef struct sim_peer_box {
    const struct sim_node *peer; /* NULL: an empty slot */
    int inward;                  /* the box of (node, peer) where the peer's messages
                                    arrive; 0: of (peer, node), where the node's go */
    sim_box_t box;
} sim_peer_box_t;

/* Slots of a node's peer-box cache: slot 2 (peer rank mod 8) + inward, so the two ring
 * neighbours, and the log2 p partners of a tree or halving-doubling up to p = 16, each
 * have their own slot (beyond, a miss costs a look-up by name). */
#define SIM_PEER_BOXES 16

/* What a node holds, bytes (NAN: not known). */
typedef struct sim_memory {
    double params;      /* parameters */
    double grads;       /* gradients */
    double optimizer;   /* optimizer state (momentum) */
    double activations; /* activations kept for the backward pass */
} sim_memory_t;

typedef struct sim_node {
    struct sim_run *run; /* the run it belongs to (sim_current in its actors) */
    int rank;
    const char *role; /* "worker", "server" or "client" */
    char name[32];
    sim_host_t host;
    sim_box_t inbox;
    double compute_s, comm_s, idle_s;
    double bytes_sent, bytes_recv;
    double last_transfer_s; /* its latest receive, from when both sides were ready */
    const uint8_t *labels;  /* the training labels sim_compute_grad uses (a
                               Byzantine client's flipped ones), NULL: the data's */
    long steps;
    double end_time;
    float *params, *grads, *velocity; /* (n_params) each, dev; a server holds its slice;
                                         velocity: SGD's momentum or Adam's first moment */
    float *moment2;                   /* (n_params) dev, Adam's second moment; NULL: sgd */
    float *scratch;                   /* (n_params) dev, for receives and snapshots */
    trainer_rng_t rng;                /* this node's batch order */
    uint32_t *order;                  /* own samples, shuffled per epoch */
    size_t order_n, order_pos;
    sim_msg_t *msgs; /* message headers, used in rotation (sim_msg_next) */
    size_t n_msgs, next_msg;
    sim_comm_t *comms;          /* (n_msgs) scratch for concurrent communications */
    void **recv_data;           /* (n_msgs) */
    sim_peer_box_t *peer_boxes; /* (SIM_PEER_BOXES) its collectives' pair mailboxes,
                                   made on first use, or NULL */
    sim_part_t *parts;          /* (cap_parts) its latest lazy all-reduce's parts not
                                   copied in (n_parts of them) */
    int n_parts, cap_parts;
    size_t timeline_last;            /* 1 + index of its latest timeline interval, 0: none */
    double part[RESULTS_PART_COUNT]; /* seconds its own activity spent in each part of a
                                        step (breakdown.h) */
    double part_at;                  /* the end of the latest interval counted there */
    const void *actor;               /* its own activity (sim_self_id), NULL: not started */
    int part_comm, part_work;        /* the parts its communication and compute go to */
    void *state;                     /* strategy-specific, kept across restarts; with the
                                        node, state_free (if set) frees what it holds, then
                                        free(state) */
    void (*state_free)(struct sim_node *node);
    void (*entry)(struct sim_node *node); /* the actor's code */

    /* faults (fault.h) */
    int alive;       /* its actor runs (0 from its host's crash until it is
                        started again) */
    int incarnation; /* times started again after a crash */
    int finished;    /* its code returned */
    double slow;     /* compute slowdown set by the strategy (1: none) */
    sim_comm_t *win; /* sim_inbox_*: receives kept posted */
    void **win_data;
    uint8_t *win_live;    /* healthy runs: win[i] still posted (0: its message
                             arrived, held in win_data[i] until taken) */
    double *win_seen;     /* when a held message was seen arrived */
    sim_comm_t *win_wait; /* scratch: the posted ones, waited on together */
    int *win_at;          /* scratch: their places in win */
    int win_n, win_head;
    struct sim_codec_node *codec; /* compression state (comm/wire.h), or NULL */
    int wire_fp16;                /* inside a gradient all-reduce that moves fp16 */
    sim_memory_t mem;             /* what it holds: its strategy's memory slot, filled
                                     by sim_run_prepare before the run (mem_set) */
    int mem_set;
    float *ckpt;     /* (n_params) dev checkpoint, with checkpoint_every */
    float *norm_sum; /* (1) dev, or NULL: sim_clip_factor_sum's all-reduce */
    long ckpt_step;  /* step of ckpt, -1: none */
} sim_node_t;

typedef struct sim_cleanup {
    void (*fn)(struct sim_run *run, void *ctx); /* NULL: nothing to free */
    void *ctx;
    const void *key; /* sim_run_keep's key, else NULL */
    struct sim_cleanup *next;
} sim_cleanup_t;

/* How a run shows its progress on stderr: not at all (a sweep's member: the sweep shows its
 * own), one line rewritten in place on a terminal, or a plain line every
 * SIM_PROGRESS_EVERY seconds of wall time when stderr is a pipe or a file (a log). */
enum { SIM_PROGRESS_NONE, SIM_PROGRESS_TERMINAL, SIM_PROGRESS_PLAIN };
#define SIM_PROGRESS_EVERY 10.0

typedef struct sim_run {
    const scenario_t *sc;
    sim_platform_t plat;
    trainer_dataset_t train, test;
    trainer_partition_t part; /* per worker (per client for fedavg) */
    size_t *held_out;         /* (clients) data.client_holdout: the samples at the end of
                                 each client's part kept out of its training, or NULL */
    trainer_model_t model;
    const trainer_backend_t *be;
    int dry;         /* sim_run_init_dry: set up to be checked, not run (no model,
                        node or checkpoint buffers) */
    int timing_only; /* a model profile: compute is charged, nothing is trained
                        (be is the timing backend; no data, no evaluations) */
    sim_model_profile_t profile;
    trainer_learner_t engine; /* its workspace computes every node's steps and evaluations */
    size_t n_params;
    double step_flops;  /* forward + backward of one sample (+ what model.recompute
                           recomputes), as charged: timed by shape, the FLOPs that
                           take the shape model's time at device_flops */
    double model_flops; /* the same in the model's own FLOPs */
    double shape_speed; /* > 0: timed by shape (compute_model.h), the model's FLOPs a
                           device computes per second of compute; 0: flat */
    double value_bytes; /* bytes of one parameter, gradient or activation on the wire
                           and in memory (model.precision: scenario_value_bytes) */
    int n_workers, n_servers;
    int n_live; /* the workers that may run actors, the first ones (the
                   strategy's live_workers; n_workers without it): the others
                   stand in and hold no message slots */
    sim_node_t *workers, *servers;
    const int *worker_twin; /* (n_workers) or NULL: a strategy that simulates one of
                               identical workers (pipeline's tensor_members = one) counts
                               worker i's host energy as worker worker_twin[i]'s, and
                               records its timeline and traffic for each */
    double twin_share;      /* with worker_twin: the share of a message's bytes between
                               two workers that each worker it stands for sent */

    /* global sampler (sync strategies on iid data): one permutation per epoch */
    uint32_t *global_order;
    long global_epoch;
    long global_batch; /* samples per global step */

    /* strategy-wide state (groups, schedules), freed after the simulation */
    void *shared;
    void (*shared_free)(void *shared);

    int momentum_correction;  /* top-k with error feedback and momentum (sync-ps, allreduce):
                                 each sender keeps the momentum (comm/wire.h), updates are
                                 plain SGD */
    char note[1024];          /* what the strategy set up, for the run's summary, or "" */
    int prepared;             /* sim_run_prepare has deployed the strategy */
    char oversubscribed[512]; /* "does not fit: ..." of a layout timed anyway, or "" */
    char oversubscribed_host[64];

    /* progress and stopping */
    long total_steps; /* steps (rounds for fedavg): the schedule's horizon */
    long stop_before; /* no node starts this step or later */
    int diverged, failed;
    char diverged_why[200]; /* with diverged: the step, the loss and the bound, or "" */
    int interrupted;        /* the signal that stopped it (SIGINT, SIGTERM), 0 none */
    int halt;               /* stop at once, whatever the step (stalled, or a signal while
                               recoveries loop) */
    int stalled;            /* the watchdog ended it (run.stall_after) */
    long chance_streak;     /* the latest evaluations in a row at chance (1.5 / classes) */
    int collapsed;          /* ended with run.collapse_after of them */
    long progress_step;     /* the furthest step any node finished (sim_eval_due) */
    double progress_wall;   /* wall clock when it last moved */
    double samples;         /* processed so far */
    double bytes_total;     /* sent so far, every node */
    long msgs_recv;         /* point-to-point messages received (msg.c) */
    double msg_flight_s;    /* their seconds on the wire summed, each from its transfer's
                               start (its send, or its receive's post if later) to its
                               receipt: over a span of simulated time, the mean number of
                               messages in flight (Little's law; the live view's) */
    long evals;
    long last_eval_step;
    long last_step_mark;   /* step marks passed (steps_done / eval_every) */
    double next_time_mark; /* simulated time of the next time mark */
    long last_sample_mark; /* sample marks passed (samples / eval_samples) */
    double last_loss, last_acc, time_to_target;
    double eval_wall;             /* wall seconds spent evaluating (instrumentation) */
    double final_eval_wall;       /* of those, the final evaluation's: real mode's clock leaves
                                     them out of the run's end, as the simulation's has none */
    double execute_wall;          /* wall seconds of the whole simulation (sim_run_execute) */
    double eval_cpu, execute_cpu; /* the same in CPU seconds of the process (the figures a
                                     machine shared with other work disturbs less) */
    long *staleness;              /* histogram */
    long staleness_cap;

    /* cleanups run by sim_run_free, the last registered first; and what strategies and
     * comm/ helpers keep for the run (sim_run_keep: a few, looked up often), freed first */
    struct sim_cleanup *cleanups, *kept;

    /* faults (engine/fault.c) */
    struct sim_faults *faults;
    int has_faults;        /* the scenario describes faults: waits use faults.timeout */
    int ended;             /* the strategy's coordinating node has finished */
    double end_time;       /* when (the summary's simulated time), else the clock */
    float *init_params;    /* (n_params) dev initial weights, with faults: restarts */
    long fault_rows;       /* rows written to the faults table */
    char fault_kinds[256]; /* the kinds seen, each once, in order: "host-crash timeout" */

    /* recording */
    struct sim_record *record; /* per-link bytes and the timeline (record.c) */
    long timeline_steps;       /* the timeline covers the run until the first node has
                                  computed this many gradients */
    double timeline_end;       /* that moment (INFINITY until then) */
    double timeline_first;     /* when the first node computed its first gradient (0: not
                                  yet): a sampled timeline keeps its first step (record.c) */
    results_db_t *db;
    int64_t run_id;
    dt_err_t db_err;
    int db_failed;
    int progress;          /* print progress on stderr: SIM_PROGRESS_* */
    double progress_shown; /* wall clock of the last plain progress line */
    double started_wall;   /* wall clock when the simulation started (run_start) */
    struct sim_live *live; /* the live view (live.h), or NULL */
    struct sim_real *real; /* real mode's share of this process (real.c), or NULL */
    int job;               /* 1, 2, ...: a job of several simulated together (jobs.h), its
                              node names prefixed "jJOB."; it ends when its nodes end.
                              0: a run of its own */
} sim_run_t;

/* The run in progress, which actors reach through sim_current: the calling actor's node's
 * run while several jobs share the simulation (jobs.h), else (and in code outside actors)
 * the run being set up, executed or freed. */
sim_run_t *sim_run_current(void);
#define sim_current (sim_run_current())

/* Loads data and model, initialises SimGrid and the platform, creates the nodes and
 * their buffers. argv0 is passed to sim_transport_init. */
dt_status sim_run_init(sim_run_t *run, const scenario_t *sc, const char *argv0, dt_err_t *err);
/* sim_run_init as `dtsim check` needs it: data, model layout, platform, partition, nodes and
 * fault targets, without the model's weights, workspace and the nodes' buffers, so that a
 * model of any size is checked in the time its data takes to load (and its memory counted
 * by sim_run_prepare's formulas); such a run is only prepared and freed, never executed. */
dt_status sim_run_init_dry(sim_run_t *run, const scenario_t *sc, const char *argv0, dt_err_t *err);
/* sim_run_init for job `job` (1, 2, ...) of several that share one simulation (jobs.h): the
 * transport is started and the platform loaded already; plat holds this job's hosts (the
 * run takes its lists over and zeroes it). */
dt_status sim_run_init_job(sim_run_t *run, const scenario_t *sc, int job, sim_platform_t *plat,
                           dt_err_t *err);
/* Fills every node's memory (the strategy's memory slot) and checks the trainers' hosts
 * against the device's capacity: DT_ERR_INPUT with "PATH:LINE: cluster.device: does not
 * fit: 93.1 GB > 80 GB on worker 3 (...)" unless run.allow_oversubscribed_memory, which only
 * notes it. Nothing is started yet (no actor: a refused run ends cleanly);
 * sim_run_execute calls it when the caller has not. */
dt_status sim_run_prepare(sim_run_t *run, dt_err_t *err);
/* The fullest host's memory against the device's: "worker 3 holds 61.2 GB of 80 GB", or
 * "" when the device states no capacity; after sim_run_prepare. */
void sim_run_memory_line(const sim_run_t *run, char *buf, size_t n);
/* One host's memory m against sc's device, the host named by role and rank: the line
 * sim_run_memory_line prints ("" when the device states no capacity), and the verdict
 * sim_run_prepare gives, DT_ERR_INPUT with its error over the capacity (over gets the
 * "does not fit: ..." text, "" when it fits; run.allow_oversubscribed_memory: DT_OK with
 * it). dtsim plan checks its layouts with them without a platform (sim/cli/plan/). */
void sim_memory_line(const scenario_t *sc, const sim_memory_t *m, const char *role, int rank,
                     char *buf, size_t n);
dt_status sim_memory_verdict(const scenario_t *sc, const sim_memory_t *m, const char *role,
                             int rank, char *over, size_t over_n, dt_err_t *err);
/* sim_run_prepare, then deploys the strategy, runs the simulation, records the summary.
 * Returns DT_OK for a finished or diverged run, DT_ERR_RUN when the run failed, and
 * sim_run_prepare's DT_ERR_INPUT. */
dt_status sim_run_execute(sim_run_t *run, dt_err_t *err);
/* sim_run_execute of n runs in one simulation (the jobs of jobs.h): each is prepared and
 * deployed, one simulation runs them all, each records its own summary. Returns the first
 * run's error that is not DT_OK (in err), DT_OK when none. */
dt_status sim_run_execute_all(sim_run_t *const *runs, int n, dt_err_t *err);
/* The signal (SIGINT, SIGTERM) that stopped this process's simulation, 0 none. */
int sim_run_stop_signal(void);
/* Frees what sim_run_init set up (after a failed one too), not run itself. */
void sim_run_free(sim_run_t *run);
/* Calls fn(run, ctx) in sim_run_free (last registered first), after the nodes' buffers
 * are freed: for state that helpers above the engine attach to the run or its nodes. */
void sim_run_on_free(sim_run_t *run, void (*fn)(sim_run_t *run, void *ctx), void *ctx);
/* State a strategy or a comm/ helper keeps for one run, out of the engine's sight: found by
 * key (the address of something static in the module that owns it), freed by
 * free_fn(run, state) in sim_run_free as sim_run_on_free's are (free_fn NULL: nothing to
 * free). One state a key: keeping a second replaces the first's lookup, not its free. */
void sim_run_keep(sim_run_t *run, const void *key, void *state,
                  void (*free_fn)(sim_run_t *run, void *state));
/* The state kept under key, or NULL. */
void *sim_run_kept(const sim_run_t *run, const void *key);

/* Starts an actor on host running fn(node). */
void sim_spawn(sim_run_t *run, sim_node_t *node, void (*fn)(sim_node_t *node));
/* The code of every actor: runs node->entry(node) for the node in the actor's data. */
void sim_actor_main(int argc, char **argv);

/* Real gradient of params on samples idx[0..batch) into grads (dev buffers of the whole
 * model); charges the simulated compute time to node; returns the mean loss and marks the
 * run diverged when it is not finite. */
double sim_compute_grad(sim_run_t *run, sim_node_t *node, const float *params, float *grads,
                        const uint32_t *idx, int batch);
/* The parts of sim_compute_grad: the gradient's compute only (nothing charged; *wall gets
 * its wall seconds; NAN and no work in a timing-only run), and counting a computed step
 * (steps, samples, divergence on a loss that is not finite). */
double sim_compute_grad_only(sim_run_t *run, const float *params, float *grads, const uint32_t *idx,
                             int batch, double *wall);
/* The watchdog, on every fault row: with no step finished for run.stall_after seconds of
 * wall-clock time, or a SIGINT / SIGTERM received while recoveries loop, the run halts (every
 * node's sim_should_stop is true at once). */
void sim_watchdog(sim_run_t *run);
/* Counts node's step of batch samples; a loss that is not finite marks the run diverged. */
void sim_count_step(sim_run_t *run, sim_node_t *node, int batch, double loss);
/* Charges simulated compute time for `flops` (flops model) or `wall` seconds (measured). */
void sim_charge(sim_run_t *run, sim_node_t *node, double flops, double wall);
/* The learning rate at global step `step` (model.lr along model.schedule). */
float sim_lr(const sim_run_t *run, long step);
/* One update of the run's optimizer (model.optimizer) on a slice of a node's buffers: w by
 * the gradient g with the state m (SGD's momentum or Adam's first moment) and v (Adam's second
 * moment, NULL for sgd), each the same slice of its buffer. The rate is model.lr's schedule at
 * global step `step`; t counts the updates this state has had, this one included (Adam's bias
 * correction: step + 1 where every step updates it). */
void sim_update(sim_run_t *run, float *w, const float *g, float *m, float *v, size_t n, long step,
                long t);
/* sim_update for sgd (the run's optimizer must be sgd): the strategies that refuse Adam. */
void sim_sgd(sim_run_t *run, float *w, const float *g, float *v, size_t n, long step);
/* node's second moment at offset off, NULL without one (sgd). */
static inline float *sim_moment2(const sim_node_t *node, size_t off)
{
    return node->moment2 ? node->moment2 + off : NULL;
}
/* Global-norm clipping (model.clip_norm) of a gradient that one node holds whole: g (n
 * floats, dev) scaled as torch.nn.utils.clip_grad_norm_ does; nothing when clip_norm is 0. */
void sim_clip(sim_run_t *run, float *g, size_t n);
/* Clears the optimizer state of node's slice [off, off + len) (a fresh optimizer: after a
 * restart, or each round of a federated client). */
void sim_optim_clear(sim_run_t *run, sim_node_t *node, size_t off, size_t len);
/* The floats of optimizer state an update reads per parameter (trainer_optim_state_floats;
 * 0 with momentum correction, whose momentum the senders keep). */
int sim_optim_floats(const sim_run_t *run);

/* The next free message header of a node. Headers rotate through twice as many slots as
 * a node can have in flight, because a sender may run one exchange ahead of a receiver that
 * completed at the same simulated instant but has not read its header yet. */
sim_msg_t *sim_msg_next(sim_node_t *self);
/* Clears m, a header the caller keeps itself, and makes self its sender. */
void sim_msg_init(sim_node_t *self, sim_msg_t *m);
/* A header for a slice of buf: data = buf + offset, n floats, bytes = 4 n. */
sim_msg_t *sim_msg_slice(sim_node_t *self, const float *buf, size_t offset, size_t n, long step);

/* Point-to-point, with timing and byte accounting. The payload of a send stays owned by
 * the sender (see above). Each returns SIM_OK or the SimGrid error. */
sim_status_t sim_send(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *msg);
/* The same with its own timeout (sim_send waits sim_fault_timeout). */
sim_status_t sim_send_for(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *msg,
                          double timeout);
/* Waits for a message on from (sim_fault_timeout); *msg is the sender's header. */
sim_status_t sim_recv(sim_run_t *run, sim_node_t *self, sim_box_t from, sim_msg_t **msg);
/* A send that goes on while its sender computes (pipeline stages): posted now, waited for
 * (and accounted: the wait is communication) by sim_send_finish. */
sim_comm_t sim_send_post(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *msg);
/* Waits for a posted send (sim_fault_timeout); its bytes count once it has succeeded. */
sim_status_t sim_send_finish(sim_run_t *run, sim_node_t *self, sim_comm_t comm,
                             const sim_msg_t *msg);
/* The same with its own timeout (sim_recv waits sim_fault_timeout). */
sim_status_t sim_recv_for(sim_run_t *run, sim_node_t *self, sim_box_t from, sim_msg_t **msg,
                          double timeout);
/* Send and receive at once (ring and pairwise exchanges). The received slice is added into
 * (add) or copied to dst at its offset the moment it arrives (dst NULL: neither, the caller
 * reads *in before its next SimGrid call); *in (may be NULL) gets its header. It does not yield: a
 * sequence of exchanges ends with sim_exchange_done() before its caller may rewrite what it sent.
 */
sim_status_t sim_sendrecv(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *out,
                          sim_box_t from, float *dst, int add, sim_msg_t **in);
/* A server's inbox, where many peers send at once: pushes must travel as soon as they are
 * posted, not one after the other as the server takes them, and the server keeps a window
 * of receives posted, renewing each one as it is taken. Healthy runs also make the server
 * the mailbox's permanent receiver, and sim_inbox_recv returns the first message to arrive
 * (ties: the first sent, then the lowest sender rank), as a real server's socket gives it;
 * real mode's MPI delivers in that order by itself. With faults a permanent receiver cannot
 * be used (SimGrid 3.32 asserts when its host is off) nor a wait on several transfers (it
 * aborts on a network failure): sim_inbox_recv returns the messages in the order the
 * senders were matched, within the timeout. */
void sim_inbox_open(sim_run_t *run, sim_node_t *self, int window);
/* The next message of self's inbox within timeout; *msg is the sender's header. */
sim_status_t sim_inbox_recv(sim_run_t *run, sim_node_t *self, sim_msg_t **msg, double timeout);
/* Closes a collection on self's inbox (with faults; 0 without): every receive of the window
 * is taken at once and posted again, so the next sim_inbox_recv does not wait behind a
 * transfer that belongs to a closed round. Messages already there go to msgs[0..) (at most
 * max, in the order they were matched; returns how many), transfers under way are cut. */
int sim_inbox_drain(sim_run_t *run, sim_node_t *self, sim_msg_t **msgs, int max);
/* Withdraws the receives still posted (in the simulation): a transfer one of them had
 * matched and that is still under way is cut on both sides, so a healthy run closes its
 * inbox only after it has taken every message sent to it (each strategy's protocol does:
 * its stops and last updates are the last messages). */
void sim_inbox_close(sim_run_t *run, sim_node_t *self);
/* Waits `seconds` that count as communication (latencies a collective models without
 * messages). */
void sim_comm_wait(sim_run_t *run, sim_node_t *self, double seconds);
/* Ends a sequence of sim_sendrecv: lets the receivers woken at this instant read what
 * they were sent (no simulated time passes). */
void sim_exchange_done(void);
/* Sends msgs[i] to boxes[i] for i < count at once and waits for all. */
sim_status_t sim_sendv(sim_run_t *run, sim_node_t *self, int count, sim_box_t *boxes,
                       sim_msg_t **msgs);
/* Posts count receives on one mailbox at once and waits for all, at most the timeout in
 * all; msgs[] in arrival order (NULL for those that did not come). */
sim_status_t sim_recvv(sim_run_t *run, sim_node_t *self, sim_box_t from, int count,
                       sim_msg_t **msgs);
/* The same with its own timeout (sim_recvv waits sim_fault_timeout). */
sim_status_t sim_recvv_for(sim_run_t *run, sim_node_t *self, sim_box_t from, int count,
                           sim_msg_t **msgs, double timeout);
/* Posts n_recv receives on `from`, then sends out[i] to boxes[i], then waits for all:
 * for a server that scatters work and gathers results from peers who may answer before
 * every send of the scatter has been taken. */
sim_status_t sim_sendv_recvv(sim_run_t *run, sim_node_t *self, int n_send, sim_box_t *boxes,
                             sim_msg_t **out, sim_box_t from, int n_recv, sim_msg_t **in);

/* Batch sampling. Global: the samples of `rank`'s share (batch each) of global step `step`
 * (epoch permutations of the whole training set, incomplete tail dropped). Own: the next
 * batch from the node's partition, reshuffled every pass. */
void sim_batch_global(sim_run_t *run, long step, int rank, int batch, uint32_t *idx);
/* Own: the next batch of node's partition into idx (reshuffled every pass). */
void sim_batch_own(sim_run_t *run, sim_node_t *node, int batch, uint32_t *idx);
/* Training samples held by fedavg client c (timing-only runs: an equal share of
 * data.train_samples, 60,000 when 0). Batch functions leave idx alone in timing-only runs. */
size_t sim_client_samples(const sim_run_t *run, int c);

/* CPU seconds this process has used so far, its threads together (`dtsim bench sim`). */
double sim_cpu_seconds(void);

/* Evaluates params (dev, whole model) on the test set at the current simulated time and
 * records it; step is the global step or round. */
void sim_evaluate(sim_run_t *run, long step, const float *params);
/* The same, recorded at simulated time `now` (an evaluation deferred to a moment when every
 * node's update of that step is known to be done). */
void sim_evaluate_at(sim_run_t *run, long step, const float *params, double now);
/* True when a step mark (steps_done a multiple of eval_every), a sample mark (samples a
 * multiple of eval_samples) or a time mark (eval_interval) has been passed since the last
 * evaluation; marks it consumed. */
int sim_eval_due(sim_run_t *run, long steps_done);
/* The test loss above which an evaluation ends the run `diverged`: run.divergence_factor x
 * ln classes; INFINITY with the factor 0, one class or no real model. */
double sim_divergence_bound(const sim_run_t *run);
/* Marks the run diverged at global step `step`: which loss ("test", "training") was loss,
 * above bound (NAN: not finite); the first call writes a fault row of kind `diverged`, every
 * call asks every node to stop before step + 1. */
void sim_diverge(sim_run_t *run, long step, const char *which, double loss, double bound);
/* Requests every node to stop before global step `step` (keeps the earliest request). */
void sim_request_stop(sim_run_t *run, long step);
/* True when the node should not start global step `step` (steps done, time limit,
 * divergence, or a stop request). */
int sim_should_stop(sim_run_t *run, long step);
/* The workers' compute, communication and idle seconds summed (idle: whatever is not
 * compute or transfer until the run ends, now). */
void sim_run_shares(const sim_run_t *run, double *compute, double *comm, double *idle);
/* The run's energy and cost (the energy table, results/schema.sql): host joules from
 * SimGrid's host energy plugin (NAN without device power figures or on a platform file),
 * link joules as ports x cluster.link_power x the end time, dollars NAN without a price. */
void sim_run_energy(const sim_run_t *run, results_energy_t *e);
/* The run's global steps (rounds for the federated strategies), as its summary counts them. */
long sim_run_steps(const sim_run_t *run);

/* The name of node's host as the whole platform names it, into buf (n) where its host was
 * not built (a stand-in's: sim_platform_load_live). */
const char *sim_node_host_name(const sim_node_t *node, char *buf, size_t n);
/* When the run ended: the strategy's end with faults (nodes that come back later do not
 * count), else the clock. */
double sim_run_end_time(const sim_run_t *run);
/* The run is over (the strategy's coordinating node has finished): nodes started again
 * after this exit at once, and the fault injector stops, so the clock ends here. */
void sim_run_end(sim_run_t *run);
/* A node's memory as the data-parallel strategies hold it (see sim_node_t.mem): the whole
 * model's parameters and gradients, the optimizer's state (scenario_optimizer_bytes a
 * parameter), activations of one batch (micro-batch with accumulate) as model.recompute
 * keeps them; a parameter server its slice. Values take run->value_bytes. Strategies adjust
 * it in their memory slot. */
void sim_memory_default(const sim_run_t *run, sim_node_t *node);
/* The activations one sample keeps for the backward pass, in values: a real model's, or a
 * profile's under model.recompute (its transient piece included); NAN for a profile without
 * [forward]. */
double sim_activation_values(const sim_run_t *run);
/* Fills node->mem unless done: its memory slot, else sim_memory_default, a stand-in's
 * (run->n_live) that of the worker it stands for (sim_run_prepare does it for every node
 * before the simulation starts). */
void sim_node_memory(const sim_run_t *run, sim_node_t *node);
/* Records one applied gradient's staleness (async-ps). */
void sim_staleness_add(sim_run_t *run, long staleness);

#endif
