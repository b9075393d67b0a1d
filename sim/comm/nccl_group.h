/* A group's collectives as NCCL runs them, in closed form, wherever its members sit
 * (strategy.dp_comm = nccl): the servers the members' hosts lie in make NCCL's model
 * (nccl.h: NVLink inside a server, a NIC per GPU between them), and a collective starts when
 * the group's last member arrives and ends NCCL's time later for every member, as NCCL's
 * kernels do; no messages. sim/docs/scale.md, "Collectives between servers". */
#ifndef DTSIM_NCCL_GROUP_H
#define DTSIM_NCCL_GROUP_H

#include "collective.h"
#include "nccl.h"

typedef struct sim_nccl_group {
    sim_nccl_t model;
    int size;           /* the group's members */
    int arrived;        /* members at the current collective so far */
    int quorum;         /* members that arrive before a collective starts: size, or 1 where
                           one member stands for all (pipeline's data_members = one) */
    double start, done; /* the current collective's start (the last arrival) and end */
    sim_sem_t sem;      /* where the members wait for the last */
    float **bufs;       /* (size) sim_nccl_group_allreduce: each member's buffer */
} sim_nccl_group_t;

/* NCCL's model for group g from the platform (sim_platform_server_of: the servers, a
 * GPU's NIC) and cluster.device (nvlink_busbw where a server holds several members,
 * nic_efficiency, else the catalogue's [defaults]); NULL, or why there is none (the
 * platform, servers holding different numbers of members, no NVLink figure). */
const char *sim_nccl_group_init(sim_nccl_group_t *ng, const scenario_t *sc, const sim_group_t *g);
void sim_nccl_group_free(sim_nccl_group_t *ng);
/* Collective c of n bytes (the whole buffer) over the group, by algorithm and protocol
 * (-1: NCCL's tuner; where the fixed algorithm has no such collective across servers, the
 * tuner's ring, as NCCL falls back): every member calls it and returns at its end; the time
 * from a member's arrival to the last one's is idle, the rest communication; each member
 * counts the ring's bytes as sent and received. */
void sim_nccl_group_run(sim_run_t *run, sim_nccl_group_t *ng, sim_node_t *node, sim_nccl_coll_t c,
                        int algo, int proto, double n);
/* An all-reduce of the group's real buffers as sim_nccl_group_run times it: member me's buf
 * (n floats on the run's backend) becomes the sum of every member's, added in member order
 * by the last to arrive. */
void sim_nccl_group_allreduce(sim_run_t *run, sim_nccl_group_t *ng, sim_node_t *node, int me,
                              float *buf, size_t n, int algo, int proto);

#endif
