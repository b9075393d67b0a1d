/* Collectives as NCCL runs them inside a server: the time of an all-reduce, reduce-scatter
 * or all-gather of n bytes on T GPUs by each of NCCL's algorithms (ring, tree, NVLS: NVLink
 * SHARP, the switch reducing) and protocols (LL, LL128, Simple), and the choice NCCL's
 * tuner makes between them, in closed form (no messages). The model is NCCL's own tuning
 * model (src/graph/tuning.cc, NCCL 2.19-2.21): time = base latency + steps x hop latency
 * + bytes / algorithm bandwidth, the algorithm bandwidth being the server's bus bandwidth
 * times the protocol's efficiency and the algorithm's ratio; sim/docs/scale.md, "Collectives as
 * NCCL runs them", gives the figures and what is left out. */
#ifndef DTSIM_NCCL_H
#define DTSIM_NCCL_H

typedef enum sim_nccl_algo {
    SIM_NCCL_RING,
    SIM_NCCL_TREE,
    SIM_NCCL_NVLS,
    SIM_NCCL_ALGOS,
} sim_nccl_algo_t;

typedef enum sim_nccl_proto {
    SIM_NCCL_LL,
    SIM_NCCL_LL128,
    SIM_NCCL_SIMPLE,
    SIM_NCCL_PROTOS,
} sim_nccl_proto_t;

typedef enum sim_nccl_coll {
    SIM_NCCL_ALLREDUCE,
    SIM_NCCL_REDUCE_SCATTER, /* n: the whole buffer, each GPU keeping n / T */
    SIM_NCCL_ALLGATHER,      /* n: the whole buffer, each GPU giving n / T */
} sim_nccl_coll_t;

typedef struct sim_nccl {
    int ranks;                                    /* T, the GPUs of the group */
    int nodes;                                    /* N, the servers they span (1: NVLink) */
    double busbw;                                 /* bytes/s, ring Simple, large sizes */
    double tree_busbw;                            /* bytes/s, the same for the tree */
    double nvls_busbw;                            /* bytes/s; 0: no NVLink SHARP */
    double base[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS]; /* s, once a collective */
    double hop[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS];  /* s, each step */
    double eff[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS];  /* fraction of the bus bandwidth */
    /* between servers (nodes > 1): hop[][] is the NVLink step inside a server, net_hop[][]
     * the step that crosses the network */
    double net_busbw;                                /* bytes/s, a server's NICs the group uses */
    double net_hop[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS]; /* s */
    double ll_max;                                   /* bytes/s, NCCL's cap on LL's bandwidth */
} sim_nccl_t;

/* T GPUs of a server on NVLink: bus bandwidths (nccl-tests' busbw, bytes/s) of a ring
 * all-reduce and with NVLS (0: none), NCCL's NVLink latencies and protocol efficiencies. */
void sim_nccl_nvlink(sim_nccl_t *m, int ranks, double busbw, double nvls_busbw);
/* T GPUs on links whose ring step of b bytes takes step + b x per_byte seconds (the
 * platform's closed form, sim_platform_ring_step_seconds): every step's latency is step,
 * no base latency, the bus bandwidth 1 / per_byte, no NVLS; the protocols keep NCCL's
 * efficiencies. Ring with Simple is then the 2 (T-1) steps of the ring formula. */
void sim_nccl_links(sim_nccl_t *m, int ranks, double step, double per_byte);
/* T GPUs spread over N servers, T / N in each, every GPU with a NIC of its own (rails):
 * NCCL's rings and double binary trees between servers, NVLink inside them (bus bandwidth
 * nvlink_busbw, unused where T = N) and the T / N NICs of a server together carrying
 * net_busbw bytes/s each way; NCCL's latencies for NVLink and the network, no NVLS (NCCL
 * needs CollNet for NVLS across servers; NVLS-tree is left out). N = 1 is sim_nccl_nvlink
 * without NVLS. sim/docs/scale.md, "Collectives between servers", gives the formulas. */
void sim_nccl_net(sim_nccl_t *m, int ranks, int nodes, double nvlink_busbw, double net_busbw);
/* Seconds a collective of n bytes takes by algorithm a and protocol p; -1 where NCCL has no
 * such pairing (tree other than for an all-reduce, NVLS without SHARP or other than
 * Simple). */
double sim_nccl_time(const sim_nccl_t *m, sim_nccl_coll_t c, sim_nccl_algo_t a, sim_nccl_proto_t p,
                     double n);
/* NCCL's tuner: the fastest allowed pairing for n bytes (algo, proto: a fixed one, or -1 for
 * any), ties to the first in enum order; its seconds, and what it chose in *a, *p (either
 * may be NULL); -1 where none is allowed. */
double sim_nccl_best(const sim_nccl_t *m, sim_nccl_coll_t c, int algo, int proto, double n,
                     sim_nccl_algo_t *a, sim_nccl_proto_t *p);
const char *sim_nccl_algo_name(sim_nccl_algo_t a);
const char *sim_nccl_proto_name(sim_nccl_proto_t p);

#endif
