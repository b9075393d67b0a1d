/* What the pipeline strategy's files share (README.md: what each owns): the plan of a run
 * (pipe_plan_t: the layout, where the stages cut, what each computes, keeps and sends, its
 * tensor shares, gradient buckets and groups), a stage's state, and each part's functions. */
#ifndef DTSIM_PIPELINE_IMPL_H
#define DTSIM_PIPELINE_IMPL_H

#include "bucket.h"
#include "collective.h"
#include "nccl.h"
#include "nccl_group.h"
#include "strategy.h"
#include "tensor_gpt.h"

/* stages x strategy.virtual_stages: the chunks of layers the model is cut into, at most */
#define PIPE_MAX_CHUNKS 512
enum { PIPE_STOP = -1 };

/* strategy.pipeline_schedule */
typedef enum sim_pipeline_schedule {
    SIM_PIPE_GPIPE,       /* every micro-batch forward, then every backward (Huang et al. 2019) */
    SIM_PIPE_1F1B,        /* one forward, one backward in the steady state (PipeDream-Flush) */
    SIM_PIPE_INTERLEAVED, /* 1F1B over strategy.virtual_stages chunks a stage (Megatron-LM) */
} sim_pipeline_schedule_t;

/* The model is cut into C = S V chunks of consecutive layers (V = strategy.virtual_stages
 * under the interleaved schedule, else 1): chunk c runs on stage c mod S, as chunk c / S of
 * its V (Megatron-LM's interleaving); with V = 1 chunk s is stage s. The per-chunk arrays
 * below are in model order. */
typedef struct pipe_plan {
    int S, M, micro, D; /* D: data-parallel replicas of the whole pipeline */
    int V, C;           /* chunks a stage, chunks in all (S V) */
    int T, sp;          /* hosts of a stage's tensor group; sequence parallelism */
    int zero;           /* ZeRO stage over the D replicas (shard_optimizer: zero_stage; else 0) */
    int zero_overlap;   /* zero >= 2, D > 1, strategy.zero_grad_overlap: the buckets (below)
                           reduce-scattered by the stream (zero.c) */
    int zero_prefetch;  /* zero >= 3, D > 1, strategy.zero_prefetch: each pass's gather of its
                           chunk's slice run by the stream while the pass before computes */
    /* zero_prefetch: stage s's stream jobs of a step in the order they are handed over
     * (the slice gathered or the bucket reduce-scattered), their kinds ('G', 'R') and, per
     * op of its schedule, the job gathering for it (pipe_zero_jobs) */
    sim_bucket_list_t *zjobs; /* (S) */
    char **zkind;             /* (S) */
    int **zgather;            /* (S) */
    /* strategy.dp_comm = formula, where the replicas' rings allow it (pipe_plan_dp_formula):
     * a ring step of b bytes over a stage's replicas takes dp_a + dp_c b seconds (dp_why
     * below: why it is messages after all) */
    int dp_formula;
    int dp_key; /* strategy.dp_comm: SIM_DP_MESSAGES, _FORMULA or _NCCL */
    double dp_a, dp_c;
    int rerun_fwd; /* T > 1, model.recompute = full: each backward pass re-runs the forward
                      pass of its layers among [rerun_lo, rerun_hi), the numbered blocks
                      (sim_profile_full_range: not the embeddings, nor the output layer) */
    int rerun_lo, rerun_hi;
    /* T > 1 without sequence parallelism, timing only: Megatron-LM's scatter/gather between
     * stages (Narayanan et al. 2021, section 4.1): member r sends its 1/T of the activation
     * (or its gradient) to member r of the next stage, and the receiving group all-gathers
     * the whole inside its server (pipe_tp_gather): a message of a cut's n elements
     * carries ceil(n / T) (stage.c) */
    int scatter;
    /* per chunk (the arrays of C and of S are allocated with the layout, pipe_plan_layout) */
    int *first;              /* (C + 1) chunk c runs layers [first[c], first[c+1]) */
    double *fwd, *bwd;       /* (C) FLOPs per sample of each chunk */
    size_t *p0, *p1;         /* (C) its parameters [p0, p1) */
    double *act;             /* (C) values per sample it keeps for the backward pass */
    double *act_piece;       /* (C) and holds besides while it recomputes a piece
                                (model.recompute) */
    size_t *out;             /* (C) floats per sample it sends on (the last: 0); a member's
                                1/T under sequence parallelism */
    trainer_workspace_t *ws; /* (D M) one per micro-batch of each replica; NULL in a
                                timing-only run and for a real gpt split by tensor */
    sim_tgpt_t **tg;         /* (D T M) T > 1 on the real gpt: member r's share of
                                replica d's micro-batch m, (d T + r) M + m; else NULL */
    sim_group_t *group;      /* (S T) D > 1: member r of stage s of every replica, s T + r */
    sim_group_t *tp;         /* (D S) T > 1: the tensor group of stage s of replica d, d S + s */
    sim_group_t *emb;        /* (D T) the real gpt on S > 1 stages: member r of replica d's stage 0
                                and last stage, d T + r, which sum the tied wte's gradient
                                (pipe_gpt_tied) */
    /* T > 1, per layer in forward order: a member's FLOPs per sample, forward and backward,
     * and the elements per sample it all-reduces after each */
    double *lf, *lb, *red_f, *red_b;
    /* strategy.bucket_mb with replicas, ZeRO off, or zero_overlap (plan_buckets): each
     * chunk's gradient buckets, all-reduced (zero_overlap: reduce-scattered) by each
     * member's stream during the chunk's last backward pass of
     * the step; a stage's stream takes its chunks' in the order those passes come (the last
     * chunk's first); and per layer 1 where a bucket's last gradient is final after its
     * backward pass */
    int bucketed;
    sim_bucket_list_t *bk;       /* (C) */
    sim_bucket_list_t *bk_stage; /* (S) */
    char *bk_end;                /* (layers) */
    /* model.clip_norm on a real model: the groups that sum their members' squares of the
     * mean gradient before any updates (Megatron-LM's model-parallel group): replica d's
     * stages, group d; under ZeRO, every replica's stages in one group (each holds a
     * shard) */
    sim_group_t *norm;
    int n_norm;
    int updated, exited; /* replica 0's stages that updated this step, that left the run */
    /* strategy.tensor_comm = formula, where the tensor groups allow it (pipe_plan_formula): a
     * ring step of b bytes in a group takes tp_a + tp_c b seconds, and a member's pass is one
     * charge of its layers' FLOPs and one wait of its all-reduces; tp_why: why it is
     * messages after all (NULL: it is not) */
    int tp_formula;
    double tp_a, tp_c;
    const char *tp_why;
    /* strategy.tensor_comm = nccl (tp_formula set too): each collective takes NCCL's time
     * (nccl.h) on the device's NVLink or the platform's ring step, by the algorithm and
     * protocol the keys fix (-1: NCCL's tuner chooses by size) */
    int tp_nccl, nccl_algo, nccl_proto, nccl_device;
    sim_nccl_t nccl;
    /* strategy.expert = E > 1 (a profile with [experts]; sim/docs/scale.md, Expert
     * parallelism): replicas d of one expert group, d / E alike, hold 1/E of each routed
     * layer's experts; a member's chunk c holds pe[c] expert parameters, the last pe[c] of
     * its slice [p0, p1) as the gradient reduction sees them */
    int E;
    double imbalance; /* strategy.expert_imbalance: the busiest member's
                         routed FLOPs over the mean */
    size_t *pe;       /* (C) */
    double *a2a;      /* (layers) each all-to-all's elements per sample of
                         the MoE block whose routed experts start there */
    sim_group_t *ep;  /* (D/E S T) expert groups: member r of stage s of
                         replicas x E .. x E + E-1, index (x S + s) T + r */
    sim_group_t *eg;  /* (E S T) the same experts' replicas: member r of stage
                         s of replicas d = e mod E, index (e S + s) T + r */
    int ep_formula;   /* all-to-alls in closed form: a step of b bytes takes
                         ep_a + ep_c b seconds */
    double ep_a, ep_c;
    const char *ep_why; /* why they are messages after all (NULL: not) */
    /* where ep_formula holds: strategy.expert_overlap (DualPipe's pairs), expert_nodes
     * (0: any member; else each token to at most this many servers of expert_node_size
     * members) and the bytes a value of a dispatch (expert_dispatch: fp8 1, else the
     * model's) */
    int ep_overlap, ep_nodes, ep_node_size;
    double ep_dispatch_bytes;
    double ep_comm_share; /* expert_comm_sms / the device's sms: compute the all-to-alls hold */
    int tp_overlap;       /* strategy.tensor_overlap, where tp_formula holds */
    /* strategy.tensor_members = one, where the tensor groups are symmetric (pipe_plan_members):
     * member 0 of each group is simulated for all T, its messages and its all-reduces over
     * the replicas carrying fold times a member's bytes (fold: T where the T members' flows
     * share a rack's uplink, 1 where each has links of its own); one_why: why every member
     * is simulated after all (NULL: one was asked for and holds, or all was asked for);
     * widen: fold T on racks of several groups or slow host links, member 0's links and the
     * TCP window made T times as wide (sim_platform_widen) */
    int one, fold, widen;
    const char *one_why;
    /* strategy.data_members = one, where the replicas are independent (pipe_plan_replicas):
     * replica 0 is simulated for all D, its bytes counted D times (rep_counted: the run's
     * bytes when they last were); rep_why: why every replica is simulated after all */
    int rep_one;
    const char *rep_why;
    double rep_counted;
    /* strategy.context = cp > 1 (context.c): each micro-batch's sequence split over a
     * context group of cp hosts, which D counts among the replicas (D = data_parallel x cp:
     * the group holds the same weights); per chunk, what its ring attention's key/value
     * exchange adds to a micro-batch's forward and backward pass where it outlasts the
     * attention it overlaps (seconds), and the bytes each member sends meanwhile */
    int cp;
    double *cx_f, *cx_b;             /* (C) */
    double *cx_bytes_f, *cx_bytes_b; /* (C) */
    /* strategy.dp_comm = nccl (pipe_dp_plan): the collectives over the replicas take
     * NCCL's time in closed form, each group's from where its hosts lie (parallel to group
     * and eg); dp_why: why the replicas' collectives are messages after all under dp_comm =
     * nccl or formula (NULL: they are not) */
    int dp_nccl;
    sim_nccl_group_t *dp_group, *dp_eg;
    const char *dp_why;
} pipe_plan_t;

enum { PIPE_TP_MESSAGES, PIPE_TP_FORMULA, PIPE_TP_NCCL }; /* strategy.tensor_comm */

/* A replica's optimizer (model.optimizer) over the parameters' layout: its weights and
 * state are the replica's head's, the gradients the member's own; each stage updates only
 * its slices (pipe_optim_apply, stage.c). */
typedef struct pipe_optim {
    float *w; /* (n_params) replica d's weights */
    float *g; /* (n_params) the member's gradients, the mean once reduced */
    float *m; /* (n_params) SGD's momentum or Adam's first moment */
    float *v; /* (n_params) Adam's second moment; NULL: sgd */
    long step;
} pipe_optim_t;
/* The update of [at, at + n) at o's step, the gradients scaled by clip first (1: none). */
void pipe_optim_apply(sim_run_t *run, const pipe_optim_t *o, size_t at, size_t n, float clip);
enum { PIPE_MEMBERS_ALL, PIPE_MEMBERS_ONE };     /* strategy.tensor_members */
enum { PIPE_LINKS_DEVICE, PIPE_LINKS_PLATFORM }; /* strategy.nccl_links */
/* strategy.nccl_algorithm's and nccl_protocol's values (auto first) as nccl.h's, -1: auto */
int pipe_nccl_algo(const scenario_t *sc);
int pipe_nccl_proto(const scenario_t *sc);

/* strategy.tensor_overlap: of a layer's compute c seconds and its tensor collective's m,
 * split into T chunks each, the time the collective adds to the layer (the pass waits for
 * the first chunk's transfer, then each chunk's compute and the next chunk's transfer go
 * together): c/T + (T-1)/T max(c, m) + m/T - c = m/T + (T-1)/T max(0, m - c). */
double pipe_overlap_exposed(double c, double m, int T);

/* strategy.dp_comm = nccl: NCCL's closed form for the replicas' groups where it holds
 * (plan->dp_nccl, else plan->dp_why); pipe_dp_free frees it. */
void pipe_dp_plan(pipe_plan_t *plan, const sim_run_t *run);
void pipe_dp_free(pipe_plan_t *plan);
/* A collective over a group of replicas (plan->group or plan->eg) of member d's n elements
 * (tensor_members = one: the fold members' it stands for as messages), as messages or in
 * NCCL's closed form. */
sim_status_t pipe_dp_allreduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                               int d, float *buf, size_t n, sim_allreduce_algo_t algo);
sim_status_t pipe_dp_reduce_scatter(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *buf, size_t n);
sim_status_t pipe_dp_allgather(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                               int d, float *buf, size_t n);
/* experts.c: the expert keys' checks; the expert groups and the all-to-alls' closed
 * form; one all-to-all pass (count of them) of layer i's MoE block on b samples, waited or
 * added to *seconds (closed form only); tp_pass_formula's layer i (its all-to-alls added to
 * the pass's sums, or waited as messages after the sums are charged); a stage's pass of
 * chunk c without a tensor group (expert_overlap's partner: for a forward pass the chunk of
 * the backward pass the schedule runs next, for a backward pass that of the forward pass
 * before it; -1: none). */
dt_status pipe_expert_check(const scenario_t *sc, dt_err_t *err);
void pipe_plan_experts(pipe_plan_t *plan, sim_run_t *run);
sim_status_t pipe_expert_alltoall(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int i,
                                  int b, int count, float *buf, double *seconds);
sim_status_t pipe_expert_formula_a2a(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                                     int i, int b, double *flops, double *seconds);
sim_status_t pipe_expert_pass(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int c,
                              int b, int forward, float *buf, int partner);
/* dp_comm.c: the collectives of pipe_dp_* where NCCL's form does not take them: as
 * messages (a message per phase where strategy.ring_messages = phases), or under
 * dp_comm = formula each phase of the ring in closed form; that form's plan. */
sim_status_t pipe_ring_allreduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                 int d, float *buf, size_t n, sim_allreduce_algo_t algo);
sim_status_t pipe_ring_reduce_scatter(sim_run_t *run, const pipe_plan_t *plan,
                                      const sim_group_t *grp, int d, float *buf, size_t n);
sim_status_t pipe_ring_allgather(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                 int d, float *buf, size_t n);
void pipe_plan_dp_formula(pipe_plan_t *plan, const sim_run_t *run);
/* dp_comm = formula: one phase of the ring over a stage's replicas (a reduce-scatter's or an
 * all-gather's) of n of a member's elements on node, D - 1 steps of n/D each: its seconds,
 * its bytes counted as the messages' (the links' tables miss them). */
double pipe_dp_phase_seconds(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node, size_t n);
/* zero.c: zero_grad_overlap's update of chunk c: the mean of replica d's chunk of each
 * bucket the stream reduce-scattered (its sum of squares added to *sq, unless NULL), then
 * the update of those chunks, the gradients scaled by clip first (model.clip_norm's
 * factor; 1: none), and below stage 3 each bucket's weights all-gathered; and the size of
 * its buckets. */
void pipe_zero_mean(sim_run_t *run, const pipe_plan_t *plan, int d, int c, float *g, double *sq);
sim_status_t pipe_zero_update(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                              int d, int c, const pipe_optim_t *o, float clip);
double pipe_zero_bucket_bytes(const scenario_t *sc, double value_bytes, int replicas);
/* ZeRO without the overlap's buckets (zero.c): stages 2 and 3 without
 * zero_grad_overlap reduce-scatter each micro-batch's gradients of a slice of n after its
 * backward pass (DeepSpeed's stage 2 reduces them as the backward pass makes them, so that
 * only the shard accumulates), replica d adding chunk d of the sum into acc (`first` starts
 * it); stage 3 gathers the slice before each pass (nothing without replicas); and the
 * update of a slice: replica d's chunk d with its optimizer state alone, its mean first
 * (pipe_zero_slice_reduce: stage 1 reduce-scattering the step's gradients, the ring
 * all-reduce's bytes; stages 2 and 3 taking acc; its sum of squares added to *sq unless
 * NULL), then its update from p0 (the slice's start) scaled by clip, and stages 1 and 2
 * all-gather the weights, stage 3 keeps its shard. */
sim_status_t pipe_zero_shard_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *g, float *acc, size_t n, int first);
sim_status_t pipe_zero_gather_slice(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *w, size_t n);
sim_status_t pipe_zero_slice_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *g, const float *acc, size_t n, double *sq);
sim_status_t pipe_zero_slice_update(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, const pipe_optim_t *o, size_t p0, size_t n, float clip);
/* What the summary line says of ZeRO's overlap and of dp_comm, appended at line. */
void pipe_zero_summary(const pipe_plan_t *plan, char *line, size_t size);
/* zero_prefetch: stage s's jobs (zjobs, zkind, zgather) for its schedule of n_ops passes
 * (op[k] 'F' or 'B' of chunk ch[k] of the stage): op k's gather is handed over as op k - 1
 * computes, and a chunk's last backward pass hands over its buckets after it. */
void pipe_zero_jobs(pipe_plan_t *plan, int s, const char *op, const int *ch, int n_ops);

/* The layout of run's pipeline (chunks, their layers, FLOPs, parameters, activations, the
 * tensor split; the per-chunk and per-stage arrays allocated), without workspaces or groups:
 * what the memory and check slots need. */
void pipe_plan_layout(pipe_plan_t *plan, const sim_run_t *run);
/* The layout, a workspace per micro-batch of a real model, the gradient buckets and the
 * groups of a hybrid; pipe_plan_free frees it (a run's shared_free). */
pipe_plan_t *pipe_plan_make(sim_run_t *run);
void pipe_plan_free(void *plan);
/* strategy.context: the context group's size (1: none). */
int pipe_context(const scenario_t *sc);
/* The pipeline's own keys (scenario_own): stages S, replicas D, tensor group T, micro-batches,
 * the schedule (sim_pipeline_schedule_t) and shard_optimizer. */
static inline long pipe_stages(const scenario_t *sc)
{
    return scenario_own(sc, "stages")->l;
}
static inline long pipe_replicas(const scenario_t *sc)
{
    return scenario_own(sc, "data_parallel")->l;
}
static inline long pipe_tensor(const scenario_t *sc)
{
    return scenario_own(sc, "tensor")->l;
}
static inline long pipe_micro_batches(const scenario_t *sc)
{
    return scenario_own(sc, "micro_batches")->l;
}
static inline sim_pipeline_schedule_t pipe_schedule_of(const scenario_t *sc)
{
    return (sim_pipeline_schedule_t)scenario_own(sc, "pipeline_schedule")->i;
}
static inline int pipe_sharded(const scenario_t *sc)
{
    return scenario_own(sc, "shard_optimizer")->i;
}
/* The chunks' first layers: G groups of layers (group g starts at layer start[g]) of costs
 * cost[g], cut into plan->C chunks where the most loaded chunk's cost is lowest. */
void pipe_cut_stages(pipe_plan_t *plan, const double *cost, const int *start, int G, int n_layers);

/* The real gpt (gpt.c). Its chunks cut by blocks, stage 0 with the embeddings and
 * the last stage with the output layer. */
void pipe_gpt_layout(pipe_plan_t *plan, const sim_run_t *run);
/* With S > 1 stages, each replica's embedding group (plan->emb): its stage 0 and last stage. */
void pipe_gpt_groups(pipe_plan_t *plan, sim_run_t *run);
/* The floats stage s of S holds besides its slice: the last stage's copy of wte (0 for the
 * others, for one stage and for any other model). */
double pipe_gpt_tied_copy(const sim_run_t *run, int S, int s);
/* After each backward pass on stage 0 or the last stage of replica d (first: the step's
 * first pass of the last chunk, -1 for other chunks): under ZeRO 2 the last stage keeps the
 * output layer's part of wte's gradient in acc, summed over the micro-batches; at the
 * stage's last pass of the step (last_pass), the all-reduce of the two stages' parts (stage
 * 0's, with the embedding's, in g) before any reduction over the replicas. Stage 0 then
 * updates wte for both; the last stage reads it from the one buffer (its copy would take the
 * same update). */
sim_status_t pipe_gpt_tied(sim_run_t *run, const pipe_plan_t *plan, int d, int r, int s, float *g,
                           float *acc, int first, int last_pass);
/* The real gpt split by a tensor group on each stage (T > 1; tensor_gpt.h): each member's
 * share of each micro-batch (plan->tg), made and freed with the plan. A member holds its own
 * weights (member r of replica d: worker d S T + r's buffer, its stages updating their
 * slices' pieces), so replicated tensors are not updated twice in one buffer. */
void pipe_gpt_tensor_make(pipe_plan_t *plan, sim_run_t *run);
void pipe_gpt_tensor_free(pipe_plan_t *plan, const trainer_backend_t *be);
/* The floats member r holds of chunk c's parameters. */
size_t pipe_gpt_tensor_floats(const pipe_plan_t *plan, const sim_run_t *run, int r, int c);
/* Member r of stage s's packs for its updates (one per node, pipe_gpt_tensor_bufs): its
 * chunks' pieces side by side, each split pieces first, then the replicated ones; chunk u's
 * from base[u]. */
typedef struct pipe_tensor_bufs {
    int r, s;
    size_t *base;   /* (V + 1) */
    float *grads;   /* (base[V] + 1) the gradients packed, then the loss (sequence parallel) */
    float *weights; /* ZeRO: a chunk's weights packed (its most) */
    float *acc;     /* ZeRO 2: the replica's shard of each pass's gradients, summed (base[V]) */
    float *m, *v;   /* ZeRO: the shards' optimizer state, at the packs' places (the node's
                       velocity and moment2, which it does not use otherwise) */
} pipe_tensor_bufs_t;
pipe_tensor_bufs_t *pipe_gpt_tensor_bufs(const pipe_plan_t *plan, const sim_run_t *run,
                                         sim_node_t *node, int r, int s);
void pipe_gpt_tensor_bufs_free(pipe_tensor_bufs_t *b, const trainer_backend_t *be);
/* ZeRO 2, after each backward pass through the stage's chunk u: its gradients packed and
 * reduce-scattered over the replicas (grp), replica d's shard added to b->acc (first:
 * copied). */
sim_status_t pipe_gpt_tensor_shard_reduce(sim_run_t *run, const pipe_plan_t *plan,
                                          const sim_group_t *grp, int d,
                                          const pipe_tensor_bufs_t *b, int u, float *grads,
                                          int first);
/* The first half of the member's update of the stage's chunk u after the step's last
 * backward pass: its pieces packed; summed over the replicas (grp) when there are several
 * (ZeRO: replica d's shard alone, reduce-scattered or from b->acc) and scaled to the mean;
 * under sequence parallelism the replicated ones (its rows' parts) and *loss (its rows',
 * after the last chunk; NULL for the others) summed over the tensor group tp; without ZeRO
 * unpacked into grads. Their squares added to *sq unless NULL (the replicated pieces' by
 * member 0 alone: every member holds the same). */
sim_status_t pipe_gpt_tensor_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    const sim_group_t *tp, int d, const pipe_tensor_bufs_t *b,
                                    int u, float *grads, double *loss, double *sq);
/* Its second half: the optimizer on the member's pieces of chunk u, scaled by clip first;
 * under ZeRO on replica d's shard of the pack with the shard's state, the packed weights
 * then all-gathered over the replicas and unpacked. */
sim_status_t pipe_gpt_tensor_apply(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                   int d, const pipe_tensor_bufs_t *b, int u, const pipe_optim_t *o,
                                   float clip);
/* The seconds of one step of the context groups' ring, every member sending `bytes` to the
 * next at once, in closed form on a star or multi-rack platform (CM02, LV08); negative
 * where there is none (pipe_context_check refuses those). */
double pipe_context_step(const scenario_t *sc, int S, int T, int cp, double bytes);
/* The same for any ring of cp members `stride` hosts apart (member k of the ring on host k
 * stride of its offset), every host in a ring of its own alike: the context groups' (stride
 * S T), a stage's replicas' (stride S T, cp the replicas D). */
double pipe_ring_step(const scenario_t *sc, int stride, int cp, double bytes);

/* A stage's state (node->state), beside the stage's activity (stage.c). */
typedef struct pipe_stage_state {
    int zjob;     /* zero_prefetch: the jobs the stream has run (bucket_reduce) */
    int zawaited; /* and the step's jobs the stage waited for */
    char *op;     /* (2 M V) the step's passes: 'F' or 'B' of micro-batch mb[k], chunk ch[k] */
    int *mb, *ch;
    uint32_t *idx;     /* (micro) the samples of stage 0's micro-batch */
    sim_comm_t *sends; /* NULL once finished early (finish_acked) */
    sim_msg_t **sent;
    /* finish_acked: per direction (0 activations on, 1 gradients back) the step's sends in
     * order, how many were sent and finished, how many messages came the other way, and
     * after the j-th of those how many of ours the peer had taken in (acked) */
    int *order[2], n_dir[2], n_done[2], n_got[2], *acked[2];
    sim_msg_t *own;    /* (2 M V + 1) the headers of the step's sends and of the STOP */
    int *backwards_of; /* (V) the step's backward passes through each of the stage's chunks */
    /* tensor_members = one: its tensor all-reduces' bytes in closed form (tp_pass_formula);
     * of the bytes its messages sent, those counted for the members they did not stand for
     * (pipe_count_members), -1 once it stood for them (pipe_stand_for_members) */
    double tp_bytes, counted;
    struct pipe_tensor_bufs *tb; /* the real gpt split by tensor: the member's packs */
} pipe_stage_state_t;

/* stage.c: the activity of member r of stage s of replica d (worker (d S + s) T + r), one
 * per host simulated (deploy). */
void pipe_stage(sim_node_t *node);
/* schedule.c: the stage s's schedule for one step, its passes in order (op[k] 'F' or 'B' of
 * micro-batch mb[k] through its chunk ch[k], 0 unless interleaved), their count returned;
 * and for neighbour's schedule, before its j-th pass of kind `sends` that sends us a
 * message, the passes of kind `takes` in which it took one of ours (acked[j]). */
int pipe_schedule(const pipe_plan_t *plan, sim_pipeline_schedule_t kind, int s, char *op, int *mb,
                  int *ch);
void pipe_acked_counts(const pipe_plan_t *plan, sim_pipeline_schedule_t kind, int neighbour,
                       char sends, char takes, int *acked);
/* tensor.c: member r of a stage's tensor group g runs the forward (backward) pass of layers
 * [lo, hi) on b samples, each layer's FLOPs and the all-reduce its split needs (ready: a
 * bucket's end after layer i, handed to the stream); the tensor_comm keys' closed form, where
 * it holds (tp_formula, tp_nccl; else tp_why). */
sim_status_t pipe_tp_pass(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                          const sim_group_t *g, int r, int lo, int hi, int b, int forward,
                          float *buf, const char *ready);
/* plan->scatter: member r's all-gather of n elements (a whole activation or its gradient,
 * each member holding n / T) in its tensor group g after a stage-to-stage receive, by
 * tensor_comm: ring messages, or in closed form ((T - 1) ring steps of n / T; nccl: NCCL's
 * all-gather). */
sim_status_t pipe_tp_gather(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                            const sim_group_t *g, int r, float *buf, size_t n);
void pipe_plan_formula(pipe_plan_t *plan, const sim_run_t *run);
/* members.c: tensor_members = one and data_members = one, where they hold (one, rep_one; else
 * one_why, rep_why); the bytes of the members and replicas not simulated, counted as the
 * run goes (a tensor all-reduce's of member 0, the messages' since the last count); at a
 * worker's end, the rows of those it stood for. */
void pipe_plan_members(pipe_plan_t *plan, const sim_run_t *run);
void pipe_plan_replicas(pipe_plan_t *plan, const sim_run_t *run);
void pipe_count_tp_bytes(sim_node_t *node, double bytes);
void pipe_count_members(sim_run_t *run, const pipe_plan_t *plan);
void pipe_count_replicas(sim_run_t *run, pipe_plan_t *plan);
void pipe_stand_for_members(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node);
void pipe_stand_for_replicas(sim_run_t *run, pipe_plan_t *plan, const sim_node_t *node);
/* context.c: the context keys' check; a member's 1/cp of each chunk (after the layout); the
 * key/value exchange's seconds and bytes per chunk (cx_*), and their wait in a member's pass
 * of chunk c. */
dt_status pipe_context_check(const scenario_t *sc, dt_err_t *err);
void pipe_plan_context_split(pipe_plan_t *plan);
void pipe_plan_context_exchange(pipe_plan_t *plan, const sim_run_t *run);
void pipe_context_exchange(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int c,
                           int forward);
/* dp_comm.c: the all-reduce algorithm over a stage's replicas (the scenario's; ring for
 * those of groups). */
sim_allreduce_algo_t pipe_dp_algo(const sim_run_t *run);
/* experts.c: the step's reduction of a member's slice of n gradients, the last pe (its
 * experts') over the replicas holding the same experts, the rest over all. */
sim_status_t pipe_expert_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_node_t *node,
                                float *g, size_t n, size_t pe);
/* The strategy's slots: check.c's check, keys.c's key table (and tensor_comm's values, in
 * the order of PIPE_TP_*), summary.c's line. */
dt_status pipe_check(const scenario_t *sc, dt_err_t *err);
extern const sim_strategy_key_t pipe_own_keys[];
extern const char *const pipe_tensor_comm_names[];
void pipe_summary(const sim_run_t *run, char *line, size_t size);

#endif
