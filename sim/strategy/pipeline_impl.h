/* What pipeline.c (the stages' activities and the strategy's slots) and pipeline_plan.c
 * (the layout: where the stages cut, what each computes, keeps and sends, its tensor
 * shares, gradient buckets and groups) share. */
#ifndef DTSIM_PIPELINE_IMPL_H
#define DTSIM_PIPELINE_IMPL_H

#include "bucket.h"
#include "collective.h"
#include "nccl.h"
#include "strategy.h"

#define PIPE_MAX_STAGES 64
/* stages x strategy.virtual_stages: the chunks of layers the model is cut into */
#define PIPE_MAX_CHUNKS 512
enum { PIPE_STOP = -1 };

/* The model is cut into C = S V chunks of consecutive layers (V = strategy.virtual_stages
 * under the interleaved schedule, else 1): chunk c runs on stage c mod S, as chunk c / S of
 * its V (Megatron-LM's interleaving); with V = 1 chunk s is stage s. The per-chunk arrays
 * below are in model order. */
typedef struct pipe_plan {
    int S, M, micro, D;             /* D: data-parallel replicas of the whole pipeline */
    int V, C;                       /* chunks a stage, chunks in all (S V) */
    int T, sp;                      /* hosts of a stage's tensor group; sequence parallelism */
    int zero;  /* ZeRO stage over the D replicas (shard_optimizer: zero_stage; else 0) */
    int rerun_fwd; /* T > 1, model.recompute = full: each backward pass re-runs the forward pass */
    int first[PIPE_MAX_CHUNKS + 1]; /* chunk c runs layers [first[c], first[c+1]) */
    double fwd[PIPE_MAX_CHUNKS], bwd[PIPE_MAX_CHUNKS]; /* FLOPs per sample of each chunk */
    size_t p0[PIPE_MAX_CHUNKS], p1[PIPE_MAX_CHUNKS];   /* its parameters [p0, p1) */
    double act[PIPE_MAX_CHUNKS];    /* values per sample it keeps for the backward pass */
    double act_piece[PIPE_MAX_CHUNKS]; /* and holds besides while it recomputes a piece
                                          (model.recompute) */
    size_t out[PIPE_MAX_CHUNKS];    /* floats per sample it sends on (the last: 0) */
    trainer_workspace_t *ws;        /* (D M) one per micro-batch of each replica; NULL in a
                                       timing-only run */
    sim_group_t *group; /* (S T) D > 1: member r of stage s of every replica, s T + r */
    sim_group_t *tp;    /* (D S) T > 1: the tensor group of stage s of replica d, d S + s */
    /* T > 1, per layer in forward order: a member's FLOPs per sample, forward and backward,
     * and the elements per sample it all-reduces after each */
    double *lf, *lb, *red_f, *red_b;
    /* strategy.bucket_mb with replicas, ZeRO off (plan_buckets): each chunk's gradient
     * buckets, all-reduced by each member's stream during the chunk's last backward pass of
     * the step; a stage's stream takes its chunks' in the order those passes come (the last
     * chunk's first); and per layer 1 where a bucket's last gradient is final after its
     * backward pass */
    int bucketed;
    sim_bucket_list_t bk[PIPE_MAX_CHUNKS];
    sim_bucket_list_t bk_stage[PIPE_MAX_STAGES];
    char *bk_end; /* (layers) */
    int updated, exited; /* replica 0's stages that updated this step, that left the run */
    /* strategy.tensor_comm = formula, where the tensor groups allow it (plan_formula): a
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
    /* strategy.expert = E > 1 (a profile with [experts]; sim/README.md, Expert
     * parallelism): replicas d of one expert group, d / E alike, hold 1/E of each routed
     * layer's experts; a member's chunk c holds pe[c] expert parameters, the last pe[c] of
     * its slice [p0, p1) as the gradient reduction sees them */
    int E;
    double imbalance;                /* strategy.expert_imbalance: the busiest member's
                                        routed FLOPs over the mean */
    size_t pe[PIPE_MAX_CHUNKS];
    double *a2a;                     /* (layers) each all-to-all's elements per sample of
                                        the MoE block whose routed experts start there */
    sim_group_t *ep;                 /* (D/E S T) expert groups: member r of stage s of
                                        replicas x E .. x E + E-1, index (x S + s) T + r */
    sim_group_t *eg;                 /* (E S T) the same experts' replicas: member r of stage
                                        s of replicas d = e mod E, index (e S + s) T + r */
    int ep_formula;                  /* all-to-alls in closed form: a step of b bytes takes
                                        ep_a + ep_c b seconds */
    double ep_a, ep_c;
    const char *ep_why;              /* why they are messages after all (NULL: not) */
    int tp_overlap; /* strategy.tensor_overlap, where tp_formula holds */
    /* strategy.tensor_members = one, where the tensor groups are symmetric (plan_members):
     * member 0 of each group is simulated for all T, its messages and its all-reduces over
     * the replicas carrying fold times a member's bytes (fold: T where the T members' flows
     * share a rack's uplink, 1 where each has links of its own); one_why: why every member
     * is simulated after all (NULL: one was asked for and holds, or all was asked for);
     * widen: fold T on racks of several groups or slow host links, member 0's links and the
     * TCP window made T times as wide (sim_platform_widen) */
    int one, fold, widen;
    const char *one_why;
    /* strategy.context = cp > 1 (plan_context): each micro-batch's sequence split over a
     * context group of cp hosts, which D counts among the replicas (D = data_parallel x cp:
     * the group holds the same weights); per chunk, what its ring attention's key/value
     * exchange adds to a micro-batch's forward and backward pass where it outlasts the
     * attention it overlaps (seconds), and the bytes each member sends meanwhile */
    int cp;
    double cx_f[PIPE_MAX_CHUNKS], cx_b[PIPE_MAX_CHUNKS];
    double cx_bytes_f[PIPE_MAX_CHUNKS], cx_bytes_b[PIPE_MAX_CHUNKS];
} pipe_plan_t;

enum { PIPE_TP_MESSAGES, PIPE_TP_FORMULA, PIPE_TP_NCCL }; /* strategy.tensor_comm */
enum { PIPE_MEMBERS_ALL, PIPE_MEMBERS_ONE };                /* strategy.tensor_members */
enum { PIPE_LINKS_DEVICE, PIPE_LINKS_PLATFORM };         /* strategy.nccl_links */
/* strategy.nccl_algorithm's and nccl_protocol's values (auto first) as nccl.h's, -1: auto */
int pipe_nccl_algo(const scenario_t *sc);
int pipe_nccl_proto(const scenario_t *sc);

/* strategy.tensor_overlap: of a layer's compute c seconds and its tensor collective's m,
 * split into T chunks each, the time the collective adds to the layer (the pass waits for
 * the first chunk's transfer, then each chunk's compute and the next chunk's transfer go
 * together): c/T + (T-1)/T max(c, m) + m/T - c = m/T + (T-1)/T max(0, m - c). */
double pipe_overlap_exposed(double c, double m, int T);

/* The layout of run's pipeline (chunks, their layers, FLOPs, parameters, activations, the
 * tensor split), without workspaces or groups: what the memory and check slots need. */
void pipe_plan_layout(pipe_plan_t *plan, const sim_run_t *run);
/* The layout, a workspace per micro-batch of a real model, the gradient buckets and the
 * groups of a hybrid; pipe_plan_free frees it (a run's shared_free). */
pipe_plan_t *pipe_plan_make(sim_run_t *run);
void pipe_plan_free(void *plan);
/* strategy.context: the context group's size (1: none). */
int pipe_context(const scenario_t *sc);
/* The seconds of one step of the context groups' ring, every member sending `bytes` to the
 * next at once, in closed form on a star or multi-rack platform (CM02, LV08); negative
 * where there is none (pipe_context_check refuses those). */
double pipe_context_step(const scenario_t *sc, int S, int T, int cp, double bytes);

#endif
