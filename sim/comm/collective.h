/* Collectives over a group of nodes, written once and used by every strategy that needs
 * them: real message exchanges of chunks of a float buffer (SPMD: every member calls the
 * same function with its own index). Sums are in place. */
#ifndef DTSIM_COLLECTIVE_H
#define DTSIM_COLLECTIVE_H

#include "run.h"

typedef struct sim_group {
    sim_node_t **members;
    int size;
} sim_group_t;

/* buf (n floats) becomes the sum over the group, by the named algorithm (hierarchical is
 * not one of these: see sim_allreduce_hierarchical). Alpha-beta costs with p members,
 * latency a, bandwidth B, n bytes:
 *   ring              2 (p-1) a + 2 (p-1)/p n/B
 *   tree (binomial)   2 ceil(log2 p) (a + n/B)
 *   halving-doubling  2 log2(p) a + 2 (p-1)/p n/B   (p a power of two; otherwise the
 *                     extra members first fold into the others: + 2 (a + n/B)) */
sim_status_t sim_allreduce(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                           sim_allreduce_algo_t algo);
/* model.clip_norm's factor for a gradient the group's members hold in parts: sq is member
 * me's sum of squares of its part, the group's sum of them (a tree all-reduce of one float,
 * in self's device float) the squared norm, and the factor torch.nn.utils.clip_grad_norm_'s
 * (trainer_clip_factor), the same on every member (Megatron-LM sums its shards' so). A group
 * of one sends nothing. -1 on a failure. */
float sim_clip_factor_sum(sim_run_t *run, sim_node_t *self, const sim_group_t *g, int me,
                          double sq);
/* Ring reduce-scatter: afterwards member me holds the group's sum of chunk me of buf (chunk c
 * is [n c / p, n (c+1) / p)); the other chunks hold partial sums. (p-1) a + (p-1)/p n/B. */
sim_status_t sim_reduce_scatter(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n);
/* Ring all-gather: member me holds chunk me of buf (chunk c is [n c / p, n (c+1) / p));
 * afterwards every member holds every chunk. (p-1) a + (p-1)/p n/B. */
sim_status_t sim_allgather(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n);
/* One phase of the ring (0: the reduce-scatter's, 1: the all-gather's) as one message after a
 * zero-byte one that measures a ring step's latency, the phase's other p-3 latencies waited
 * out (strategy.ring_messages = phases; timing only: nothing is summed; p > 2). */
sim_status_t sim_ring_phase(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                            int phase);
/* All-to-all (MPI_Alltoall; a MoE layer's token dispatch and combine): send holds p blocks of
 * `per` floats, block j for member j; afterwards block j of recv is member j's block me
 * (send and recv may be the same buffer only in a timing-only run, where nothing is read).
 * Pairwise shifts: at step s = 1 .. p-1 member me sends its block for me + s and receives
 * the block of me - s (mod p), so every member sends one flow and receives one at a time;
 * with b bytes a block, (p-1) (a + b/B) (sim_alltoall_seconds). */
sim_status_t sim_alltoall(sim_run_t *run, const sim_group_t *g, int me, const float *send,
                          float *recv, size_t per);
/* The all-to-all's closed form: p - 1 steps of one block of `bytes` each, a step taking
 * step_a + step_c bytes seconds (a ring step's, sim_platform_ring_step_seconds). */
double sim_alltoall_seconds(int p, double step_a, double step_c, double bytes);
/* Binomial-tree reduce to member 0 and broadcast from member 0. */
sim_status_t sim_reduce(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n);
/* Binomial-tree broadcast: every member's buf becomes member 0's. */
sim_status_t sim_broadcast(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n);

/* Reduce inside each group to its first member, ring all-reduce among the first members,
 * broadcast back inside each group. */
sim_status_t sim_allreduce_hierarchical(sim_run_t *run, const sim_group_t *local, int me_local,
                                        const sim_group_t *leaders, int me_leader, float *buf,
                                        size_t n);

/* NCCL-style two-level all-reduce, the fast domain first: ring reduce-scatter inside the
 * group (member i ends with chunk i of p), ring all-reduce of chunk i among the members at
 * position i of every group (one ring per rail), ring all-gather inside the group. Equal
 * groups only. */
sim_status_t sim_allreduce_2d(sim_run_t *run, const sim_group_t *local, int me_local,
                              const sim_group_t *rail, int me_rail, float *buf, size_t n);

/* The workers as one group, and split into the platform's groups (racks, or blocks of
 * group_size) for hierarchical all-reduce. */
typedef struct sim_groups {
    sim_group_t all;
    sim_group_t *local;  /* (n_groups) members of each group, in rank order */
    sim_group_t leaders; /* first member of each group */
    int *local_index;    /* (workers) index of each worker in its group */
    int *index;          /* (workers) index of each worker in all, -1: not a member */
    int n_groups;
    sim_group_t *rails; /* (n_rails) the members at position r of every group, in group
                           order; none (n_rails 0) when the groups differ in size: 2d
                           then runs as hierarchical */
    int *rail_index;    /* (workers) index of each worker in its rail */
    int n_rails;
} sim_groups_t;

/* Builds the groups of the run's workers and hands them to run->shared (freed after the
 * simulation). */
sim_groups_t *sim_groups_make(sim_run_t *run);
/* The groups of the workers with member[rank] != 0 (all when member is NULL), in rank
 * order except that worker `first` (>= 0) comes first in all. */
sim_groups_t *sim_groups_new(sim_run_t *run, const int *member, int first);
/* Frees groups from sim_groups_new; NULL is allowed (sim_groups_make's go with the run). */
void sim_groups_free(sim_groups_t *g);

/* Elastic membership (Horovod Elastic / torchrun style) for the all-reduce strategies
 * when the scenario has faults. A member whose collective fails (a peer died, a link
 * stalled past the timeout) goes to a rendezvous; so does a worker whose host came back,
 * and the members see the open rendezvous at their next step boundary. The rendezvous
 * completes when every worker that is up and still training has arrived; the new group is
 * the arrivals in rank order, and its first member's state (parameters, momentum, step)
 * is broadcast to the others, as hvd.elastic's state.sync() does. */
typedef struct sim_elastic sim_elastic_t;
/* Sets up the groups (as sim_groups_make) and, with faults, the membership. */
void sim_elastic_make(sim_run_t *run);
/* The current groups; node's index among all members (-1: not a member). */
sim_groups_t *sim_elastic_groups(sim_run_t *run);
/* node's index in the current groups' all (-1: not a member). */
int sim_elastic_index(sim_run_t *run, const sim_node_t *node);
/* A rendezvous is open: members join it at their next step boundary. */
int sim_elastic_pending(sim_run_t *run);
/* Joins the rendezvous and takes the new group's state: buf (n floats) and velocity (may
 * be NULL) from its first member, *step from that member's *commit. Returns 0, or -1 when
 * training is over (the node leaves). */
int sim_elastic_rendezvous(sim_run_t *run, sim_node_t *node, float *buf, float *velocity, size_t n,
                           long *step, long commit);
/* Training is over: joiners leave instead of waiting. */
void sim_elastic_close(sim_run_t *run);
/* Sums buf over all workers with the scenario's algorithm (each worker calls it; dividing
 * by the worker count is left to the caller, who may need it once for all). */
sim_status_t sim_groups_allreduce(sim_run_t *run, sim_groups_t *g, sim_node_t *node, float *buf,
                                  size_t n);
/* The same messages at the same times, but the final phase of every algorithm (the ring's
 * all-gather, the tree's broadcast, halving-doubling's doubling) copies no finished sums: a
 * member forwards what it receives from the buffers it lies in and keeps it as parts
 * (node->parts; a message's parts travel with it). buf holds the sum only after
 * sim_allreduce_settle, which reads other members' buffers: call it only while none has
 * changed its buffer since its all-reduce ended, as the first worker through a step with
 * shared replicas does (sim_dp_loop; the sum no other worker reads is never copied). */
sim_status_t sim_groups_allreduce_lazy(sim_run_t *run, sim_groups_t *g, sim_node_t *node,
                                       float *buf, size_t n);
/* Copies the parts of node's latest lazy all-reduce into buf (none after an eager one). */
void sim_allreduce_settle(sim_run_t *run, sim_node_t *node, float *buf);

/* allreduce with topk or qsgd8: encodes node's gradient g (n, dev, with the worker's error
 * feedback), all-gathers the encodings round the group's ring and leaves in g the sum of
 * every member's decoded gradient, added in rank order. */
sim_status_t sim_codec_allgather(sim_run_t *run, const sim_group_t *grp, int me, float *g,
                                 size_t n);

#endif
