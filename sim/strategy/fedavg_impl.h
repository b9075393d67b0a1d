/* What fedavg's server (fedavg.c) and its client hosts (fedavg_client.c) share: the
 * server's state, which the client hosts read where the simulation lets them (the SCAFFOLD
 * variates, the clients trained side by side) as a real client would receive them. */
#ifndef DTSIM_FEDAVG_IMPL_H
#define DTSIM_FEDAVG_IMPL_H

#include "fedopt.h"
#include "replicas.h"
#include "robust.h"
#include "secagg.h"
#include "strategy.h"

typedef struct server_state {
    int cap;              /* updates a round can hold */
    uint32_t *population; /* (clients) */
    sim_box_t *to;        /* (max(m, hosts)) */
    sim_msg_t **msgs;
    const float **srcs;
    float *weights;
    sim_comm_t *tasks; /* (selected) tasks in flight, with faults */
    sim_msg_t **task_msgs;
    sim_msg_t **drained;    /* (cap) what the inbox held when a round closed */
    sim_side_t *side;       /* clients trained side by side (sim_side_enabled), else NULL */
    trainer_rng_t *rngs;    /* (cap) their order streams */
    uint32_t *side_clients; /* (cap) the sampled clients that stay in the round */
    float **residual;       /* (clients) compressed with error feedback: each client's (host,
                               n_params), made when the client first uploads */
    trainer_fedopt_t opt;   /* the server optimizer, when opt_on */
    int opt_on;             /* 0: the average replaces the global model (FedAvg) */
    int server_step;        /* opt_on with weights to step (not a timing-only run) */
    float *w, *delta;       /* (n_params) host: the global model before the round, the update */
    float *m, *v;           /* (n_params) host: the optimizer's state, or NULL */
    trainer_agg_t agg;      /* the aggregation rule (robust.h) */
    float **hx;             /* (cap) host: the round's models, for a rule other than mean */
    float *hout, *agg_scratch;
    int *chosen;              /* (cap) which of them the rule took */
    double dp_clip, dp_noise; /* DP-FedAvg: clip norm S (0: off), noise multiplier z */
    trainer_rng_t dp_rng;
    int scaffold;       /* SCAFFOLD's control variates */
    float *c;           /* (n_params) dev: the server's control variate, or NULL */
    float **ci;         /* (clients) dev: each client's, made when it first trains */
    sim_secagg_t sa;    /* secure aggregation's cost (secure_agg), or sa.on == 0 */
    int at_server;      /* the server computes each update as it averages (at_server) */
    float *local, *sum; /* (n_params) dev, with at_server: the update being computed, and
                           the weighted sum so far */
    uint32_t *order;    /* its samples' order */
    size_t order_cap;
} server_state_t;

/* A client host's loop: takes tasks (and secure aggregation's steps) for any of its clients
 * until a stop task (flag < 0) or the end of the run. */
void fedavg_client_host(sim_node_t *node);

#endif
