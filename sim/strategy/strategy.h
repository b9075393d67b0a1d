/* The strategies: each is one file filling one sim_strategy_t (the interface, in
 * sim/scenario/strategy_def.h: everything the scenario code and the engine ask), and
 * registry.c lists them; adding a strategy is one new file, one line there and `make docs`.
 * Below: the registry, the key descriptors two strategies share, and the helpers the
 * data-parallel strategies share (dp_loop.c). */
#ifndef DTSIM_STRATEGY_H
#define DTSIM_STRATEGY_H

#include <stdio.h>

#include "client_devices.h"
#include "run.h"
#include "scenario.h"

/** Every strategy, NULL-terminated, in the order of `dtsim keys` and the strategy table. */
extern const sim_strategy_t *const sim_strategies[];
/** Gives the scenario code the registry (scenario_strategies_use); call once at start. */
void sim_strategies_register(void);
/** The strategy table in Markdown (kind, keys, what happens), from the registry. */
void sim_strategies_write_markdown(FILE *out);

/* Slots the parameter-server strategies share (sync-ps, async-ps): trainers and shards as
 * hosts, at most one shard per worker, and workers that hold no optimizer state (the
 * shards apply the updates). */
void sim_ps_hosts(const scenario_t *sc, int *workers, int *servers);
/** The check: at most one shard per worker, else an error naming the key to blame. */
dt_status sim_ps_check(const scenario_t *sc, dt_err_t *err);
/** The memory slot: sim_memory_default, less the optimizer state of the workers. */
void sim_ps_memory(const sim_run_t *run, sim_node_t *node);
/* strategy.servers, a key of both, declared by each with this one descriptor. */
#define SIM_KEY_SERVERS                                                                            \
    {                                                                                              \
        .key = "servers", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 1024,                  \
        .doc = "parameter-server shards, each holding a slice of the parameters on a host of "     \
               "its own; at most workers",                                                         \
        .ignored_elsewhere = 1                                                                     \
    }
/* The check of the strategies that all-reduce with `algorithm` (allreduce, local-sgd):
 * hierarchical groups of group_size must divide the workers (unless racks are the
 * groups). */
dt_status sim_hierarchical_check(const scenario_t *sc, dt_err_t *err);

/* The synchronous data-parallel worker loop (single, allreduce): batch, real gradient,
 * exchange (NULL for none), SGD on the worker's replica, evaluation marks by worker 0.
 * exchange turns node->grads into the sum over the workers, identical on every worker
 * (divided by the worker count only where an update is applied); with run.shared_replicas the
 * workers then share worker 0's parameter and momentum buffers, and the first worker done with step
 * t applies its update once. */
typedef sim_status_t (*sim_exchange_fn)(sim_run_t *run, sim_node_t *node, float *buf, size_t n);
/** Runs that loop as node's code until the run stops (restarted: it restores or rejoins first). */
void sim_dp_loop(sim_run_t *run, sim_node_t *node, sim_exchange_fn exchange);

/* Shared by the synchronous data-parallel strategies (single, allreduce, sync-ps): the
 * samples of the worker at `index` among those stepping together (its rank, or its place in
 * an elastic group) for global step `step` (global sampler on iid data, else the worker's
 * own partition). */
void sim_dp_batch(sim_run_t *run, sim_node_t *node, long step, int index, uint32_t *idx);
/* The gradient of the worker at `index` for global step `step` into grads (dev), charged
 * and counted as one step: with strategy.accumulate = k, the mean over k micro-batches of
 * model.batch (micro-batch j is index k + j of the global sampler, or the next batch of
 * the worker's own partition), accumulated in node->scratch. idx holds a batch. Returns
 * the mean loss. */
double sim_dp_grad(sim_run_t *run, sim_node_t *node, const float *w, float *grads, long step,
                   int index, uint32_t *idx);
/* Evaluates after global step `step` (0-based) when a step or time mark has been passed
 * (sim_eval_due). */
void sim_eval_mark(sim_run_t *run, long step, const float *params);
/* The final evaluation, unless the last mark already evaluated `steps_done` steps; then
 * the run is over (sim_run_end). */
void sim_eval_final(sim_run_t *run, long steps_done, const float *params);
/* The node that evaluates: worker 0, or with faults the lowest-ranked worker that is up
 * and still training. */
int sim_is_evaluator(const sim_run_t *run, const sim_node_t *node);

/* Parameter-server workers (sync-ps, async-ps) after a crash or a lost reply: sends a JOIN
 * request (flag join_flag) to every shard and waits 2 x faults.timeout for their
 * parameters, again after a pause until all answer. 0: msgs[0..S) hold the parameter
 * slices; -1: the run is over or a shard is gone for good. to and msgs hold S entries. */
int sim_ps_join(sim_run_t *run, sim_node_t *node, int join_flag, sim_box_t *to, sim_msg_t **msgs);

/* What the federated strategies share through run->shared (fl_clients.c). */
typedef struct sim_fl {
    uint8_t *byzantine; /* (clients) 1: the client attacks; NULL without [faults] byzantine */
    long n_byzantine;
    uint8_t *flipped;  /* (train.n) label_flip: the labels its clients train on */
    float *noise;      /* (n_params) host: the noise attack's draws */
    long *rounds;      /* (clients) updates of each client the server aggregated */
    uint32_t *holders; /* (n_holders) the clients holding training samples, ascending: the
                          population rounds sample from (a client without data has nothing
                          to train on or to weigh in the average) */
    long n_holders;    /* clients when every client holds data */
    sim_client_devices_t devices;    /* each client's speed (and links: platform.c) */
    sim_availability_t availability; /* faults.availability */
    sim_avail_trace_t avail_trace;   /* its windows with trace:PATH (n_clients 0: none) */
} sim_fl_t;

/* [faults] of federated clients, each drawn from its own seeded stream or read from a
 * trace: client c online at t (availability), the earliest time after t some client comes
 * online (INFINITY: never), c's compute slowdown (cluster speed / c's speed; 1 without
 * client devices), whether c drops out of `round`. */
int sim_fl_client_available(const sim_run_t *run, int c, double t);
double sim_fl_next_online(const sim_run_t *run, double t);
double sim_fl_client_slowdown(const sim_run_t *run, int c);
int sim_fl_client_drops(const sim_run_t *run, int c, long round);
/* Of a round of `steps` steps (secure aggregation's four, or 1), the step at which client c
 * leaves it (faults.dropout: the same draw as sim_fl_client_drops, then a uniform step from
 * the same stream), or `steps` when it stays to the end. */
int sim_fl_drop_step(const scenario_t *sc, int c, long round, int steps);
/* Model buffers (dev, n_params each) of the clients a host trains in one round: the server
 * reads them only after the round, so a host serving several clients keeps one each; they
 * are reused from round to round. Zeroed with round = -1 before the first use. */
typedef struct sim_fl_slots {
    float **slot; /* (n) */
    int n, used;  /* buffers, and those taken in `round` */
    long round;
} sim_fl_slots_t;
/** The next free buffer of `round` (a new round frees them all). */
float *sim_fl_slot(sim_run_t *run, sim_fl_slots_t *s, long round);
/** Frees the buffers (not s). */
void sim_fl_slots_free(sim_run_t *run, sim_fl_slots_t *s);
/* Sets run->shared to a new sim_fl_t for the run (its Byzantine clients drawn from the
 * seed); the federated strategies' deploy calls it first. */
void sim_fl_setup(sim_run_t *run);
/* Counts an aggregated update of client c (the clients table's rounds). */
void sim_fl_took_part(sim_run_t *run, int c);
/* At the end of a federated run that did not fail, after `step` server updates of the final
 * model params (dev): the final evaluation, then one row per client in the clients table (its
 * rounds, samples, and the model's accuracy on its held-out samples, data.client_holdout). */
void sim_fl_finish(sim_run_t *run, long step, const float *params);
/* The stream that orders client c's samples in `round`. */
void sim_fl_local_rng(const sim_run_t *run, int c, long round, trainer_rng_t *rng);
/* Federated clients (fl_clients.c, for fedavg and fedbuff): strategy.local_epochs epochs of client
 * c on its partition from the global model (copied into w, dev, n_params; trained in place), batch
 * model.batch, fresh momentum, FedProx's term when prox_mu > 0, corr (dev, n_params, or NULL) added
 * to every step's gradient (SCAFFOLD's c - c_i); the sample order from (seed, c, round). *order_buf
 * (*order_cap entries) is the caller's scratch, grown here. A Byzantine client trains on flipped
 * labels or sends its attack in w. Returns the local steps taken. */
long sim_fl_local_train(sim_run_t *run, sim_node_t *node, uint32_t **order_buf, size_t *order_cap,
                        int c, long round, const float *global, const float *corr, float *w);
/* The two halves of sim_fl_local_train, for a client whose update the server computes as it
 * averages (fedavg): the client's host charges node with its steps, as sim_fl_local_train
 * would (the same micro-batches, flops and step counts), and returns them; the server
 * computes its model into w without charging anyone (its own grads, scratch and velocity
 * serve as the client's) and returns 0 when a loss was not finite. Neither takes a
 * Byzantine client (sim_fl_local_train alone attacks) nor SCAFFOLD's correction. */
long sim_fl_local_charge(sim_run_t *run, sim_node_t *node, int c, long round);
int sim_fl_local_compute(sim_run_t *run, sim_node_t *node, uint32_t **order_buf, size_t *order_cap,
                         int c, long round, const float *global, float *w);
/* The end of a federated run: a stop task (flag -1) to every client host; to and msgs hold
 * one entry per host. */
void sim_fl_release_hosts(sim_run_t *run, sim_node_t *node, sim_box_t *to, sim_msg_t **msgs);
/* qsort order of message headers by flag (the client): the order the servers aggregate in. */
int sim_fl_by_client(const void *a, const void *b);
/* Whether a message that came to a gathering server belongs to it (1: into in[]), told
 * whether `need` already came; what it refuses it logs (a `late` row). */
typedef int (*sim_fl_accept_fn)(sim_run_t *run, const sim_msg_t *m, int full, void *ctx);
/* A scatter and gather with faults (fedavg's rounds, secure aggregation's steps): posts
 * out[i] to to[i] (i < n) without waiting for hosts to take them (posted: n handles), takes
 * into in[] what `accept` keeps until `need` came, or `until` if finite, else faults.timeout
 * of silence; then drains the inbox (drained: cap headers; what arrived counts, transfers
 * under way are cut) and withdraws what no host took, counting the bytes of what was taken.
 * Returns how many came. */
int sim_fl_gather(sim_run_t *run, sim_node_t *node, int n, sim_box_t *to, sim_msg_t **out,
                  sim_comm_t *posted, sim_msg_t **in, int need, double until, sim_msg_t **drained,
                  int cap, sim_fl_accept_fn accept, void *ctx);
/* The keys the federated strategies share, each declared by those that read it with its
 * one descriptor (fedavg, fedbuff and hierfl; fedbuff samples no fraction), and the
 * population, the one they read most. */
static inline long sim_fl_clients(const scenario_t *sc)
{
    return scenario_own(sc, "clients")->l;
}
#define SIM_KEY_CLIENTS                                                                            \
    {                                                                                              \
        .key = "clients", .kind = SIM_KEY_INT, .def = "100", .min = 1, .max = 10000000,            \
        .doc = "client population, spread over cluster.workers hosts (client c on host c mod "     \
               "workers)",                                                                         \
        .ignored_elsewhere = 1                                                                     \
    }
#define SIM_KEY_FRACTION                                                                           \
    {                                                                                              \
        .key = "fraction", .kind = SIM_KEY_REAL, .def = "0.1", .min = 0, .max = 1,                 \
        .open = SIM_KEY_OPEN_MIN,                                                                  \
        .doc = "fraction of clients sampled per round; floor(clients x fraction) >= 1",            \
        .ignored_elsewhere = 1                                                                     \
    }
#define SIM_KEY_LOCAL_EPOCHS                                                                       \
    {                                                                                              \
        .key = "local_epochs", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 1000,             \
        .doc = "local epochs per round (E): passes of a client over its partition",                \
        .ignored_elsewhere = 1                                                                     \
    }
#define SIM_KEY_ROUNDS                                                                             \
    {                                                                                              \
        .key = "rounds", .kind = SIM_KEY_INT, .def = "20", .min = 1, .max = 10000000,              \
        .doc = "rounds: updates of the global model (the run's horizon instead of run.steps)",     \
        .ignored_elsewhere = 1                                                                     \
    }
#define SIM_KEY_PROX_MU                                                                            \
    {                                                                                              \
        .key = "prox_mu", .kind = SIM_KEY_REAL, .def = "0", .min = 0, .max = 1000,                 \
        .doc = "FedProx's proximal term mu (Li et al. 2020): each local step's gradient plus "     \
               "mu (w - w_global); 0 = plain FedAvg",                                              \
        .ignored_elsewhere = 1                                                                     \
    }
#define SIM_KEY_SERVER_LR                                                                          \
    {                                                                                              \
        .key = "server_lr", .kind = SIM_KEY_REAL, .def = "1", .min = 0, .max = 100,                \
        .open = SIM_KEY_OPEN_MIN, .doc = "the server's learning rate (eta) on the update"          \
    }

/* Federated strategies' slots (sim_strategy_t): clients live on cluster.workers hosts with
 * one server, a partition per client, strategy.rounds server updates, the server's steps. */
void sim_fl_hosts(const scenario_t *sc, int *workers, int *servers);
long sim_fl_parts(const scenario_t *sc, long workers);
long sim_fl_horizon(const scenario_t *sc);
long sim_fl_steps_done(const sim_run_t *run);

/* strategy.zero_stage, a key of two strategies (zero, and pipeline over its replicas):
 * both declare it with this one descriptor, as the registry asks of a shared key. */
#define SIM_KEY_ZERO_STAGE                                                                         \
    {                                                                                              \
        .key = "zero_stage", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 3,                  \
        .doc = "sharded data parallelism (ZeRO; a pipeline's over its replicas, with "             \
               "shard_optimizer = yes): 1 shards the optimizer state, 2 also the gradients "       \
               "(reduced behind the backward pass: zero_grad_overlap), 3 also the parameters "     \
               "(all-gathered for the forward and again for the backward pass, prefetched: "       \
               "zero_prefetch; a pipeline's, of a model profile, for each micro-batch's); the "    \
               "gradients are reduce-scattered, each shard updated, the parameters all-gathered"   \
    }

/* strategy.sequence_parallel, a key of pipeline (timing-only profiles) and tensor (the
 * real GPT). */
#define SIM_KEY_SEQUENCE_PARALLEL                                                                  \
    {                                                                                              \
        .key = "sequence_parallel", .kind = SIM_KEY_BOOL, .def = "no",                             \
        .doc = "with tensor groups of more than one member: sequence parallelism (Korthikanti "    \
               "et al. 2022): each all-reduce becomes a reduce-scatter and an all-gather (the "    \
               "same bytes), and the replicated layers' FLOPs and kept outputs, and the "          \
               "activations between stages, are divided by the group's size",                      \
        .ignored_elsewhere = 1                                                                     \
    }

/* strategy.zero_grad_overlap and strategy.zero_prefetch, keys of zero and of pipeline over
 * its replicas (sim/docs/parallelism.md, Sharded data parallelism: overlap). */
#define SIM_KEY_ZERO_GRAD_OVERLAP                                                                  \
    {                                                                                              \
        .key = "zero_grad_overlap", .kind = SIM_KEY_BOOL, .def = "yes",                            \
        .doc = "zero_stage 2 or 3: the gradients' reduce-scatters in buckets of bucket_mb (0: "    \
               "Megatron-LM's max(40M, 1M x replicas) parameters) behind the backward pass, "      \
               "each launched once its layers' gradients are final, as FSDP, DeepSpeed and "       \
               "Megatron-LM's distributed optimizer (overlap_grad_reduce) run them; a pipeline "   \
               "accumulates whole gradients over its micro-batches and reduce-scatters them "      \
               "during each chunk's last backward pass of the step (as Megatron-LM, and FSDP "     \
               "under pipelining, do), so the memory table counts its gradients whole; no: "       \
               "one reduce-scatter after the backward pass (a pipeline: after every "              \
               "micro-batch's, only the shard kept)"                                               \
    }
#define SIM_KEY_ZERO_PREFETCH                                                                      \
    {                                                                                              \
        .key = "zero_prefetch", .kind = SIM_KEY_BOOL, .def = "yes",                                \
        .doc = "zero_stage 3: each gather of the parameters issued when the compute before it "    \
               "starts (FSDP's forward and backward prefetch), on the worker's stream, the "       \
               "reduce-scatters queued behind; zero: bucket by bucket (bucket_mb, as "             \
               "zero_grad_overlap), the next bucket's while one computes, in the forward and "     \
               "the backward pass; pipeline: a pass's slice while the pass before it computes; "   \
               "no: each gathered when its compute is due, in turn"                                \
    }

/* strategy.dp_comm, a key of two strategies (allreduce, and pipeline over its replicas):
 * how their collectives over the replicas are simulated (sim/docs/scale.md, "Collectives between
 * servers"). */
enum { SIM_DP_MESSAGES, SIM_DP_FORMULA, SIM_DP_NCCL, SIM_DP_AUTO };
extern const char *const sim_dp_comm_names[];
/* 1 where sc's collectives over the replicas are to take NCCL's closed form: dp_comm =
 * nccl, or auto (the default) in a timing-only run on a GPU whose NVLink the catalogue
 * gives (nvlink_busbw), where NCCL would run them */
int sim_dp_comm_nccl(const scenario_t *sc, int timing_only);
extern const char *const sim_nccl_algorithm_names[];
extern const char *const sim_nccl_protocol_names[];
/* strategy.nccl_algorithm's and nccl_protocol's values as nccl.h's enums, -1: auto */
int sim_nccl_algo_key(const scenario_t *sc);
int sim_nccl_proto_key(const scenario_t *sc);
/* strategy.nccl_algorithm and nccl_protocol, keys of allreduce and pipeline */
#define SIM_KEY_NCCL_ALGORITHM                                                                     \
    {                                                                                              \
        .key = "nccl_algorithm", .kind = SIM_KEY_ENUM, .def = "auto",                              \
        .names = sim_nccl_algorithm_names,                                                         \
        .doc = "tensor_comm = nccl or dp_comm = nccl: NCCL's algorithm (NCCL_ALGO); auto: the "    \
               "fastest for each message's size, as NCCL's tuner chooses; ring: 2 (T-1) steps; "   \
               "tree: a chain inside a server (and double binary trees between servers), "         \
               "all-reduce only (not with sequence_parallel); nvls: NVLink SHARP, the switch "     \
               "reducing, on a device with nvls_busbw (H100, H200, B200) and nccl_links = "        \
               "device, protocol simple (across servers the ring instead)"                         \
    }
#define SIM_KEY_NCCL_PROTOCOL                                                                      \
    {                                                                                              \
        .key = "nccl_protocol", .kind = SIM_KEY_ENUM, .def = "auto",                               \
        .names = sim_nccl_protocol_names,                                                          \
        .doc = "tensor_comm = nccl or dp_comm = nccl: NCCL's protocol (NCCL_PROTO); auto: the "    \
               "fastest for each size; simple: the whole bandwidth, the highest latency; ll: a "   \
               "quarter of it in NCCL's model, the lowest latency; ll128: 92% of it"               \
    }
#define SIM_KEY_DP_COMM                                                                            \
    {                                                                                              \
        .key = "dp_comm", .kind = SIM_KEY_ENUM, .def = "auto", .names = sim_dp_comm_names,         \
        .doc = "with replicas (a pipeline's: data_parallel > 1): how the collectives over the "    \
               "replicas (the gradients' all-reduce; a pipeline's ZeRO reduce-scatters and "       \
               "all-gathers and experts' reductions too) are simulated; messages: real "           \
               "exchanges (strategy.algorithm, ring_messages); formula (pipeline): each phase "    \
               "of the ring, D - 1 steps, one wait in closed form, a step as SimGrid times a "     \
               "flow whose every ring steps at once (star or multi-rack platform, CM02 or LV08; "  \
               "else messages, and the summary says why), exact while nothing else crosses the "   \
               "replicas' links, within 0.5% beside a pipeline's messages; nccl: NCCL's time in "  \
               "closed "                                                                           \
               "form, the last member's arrival starting it for all, by nccl_algorithm and "       \
               "nccl_protocol (ring or tree; nvls falls back to ring across servers): NVLink "     \
               "inside a server (nvlink_busbw), the members' NICs between servers (a GPU's link "  \
               "or its share of the rack's uplink x the device's nic_efficiency), NCCL's "         \
               "latencies; allreduce sums the real gradients in rank order at once; on a star, "   \
               "multi-rack (a rack per server) or rail platform without faults (allreduce: and "   \
               "without compression or bucket_mb; a pipeline: timing only), else messages and "    \
               "the summary says why; contention with other traffic left out; auto: nccl where "   \
               "NCCL would run, a timing-only run on a GPU with an NVLink figure (the "            \
               "catalogue's nvlink_busbw) where nccl holds, else messages (a CPU's runs, real "    \
               "runs)"                                                                             \
    }

#endif
