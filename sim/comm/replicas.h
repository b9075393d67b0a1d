/* fedavg clients side by side: a round's sampled clients trained as replicas of the model
 * on the run's device, one launch per op for all of them (trainer_model_*_group) instead of
 * one small launch after another per client.
 *
 * A client's local training depends only on the global model, its own samples and its own
 * seeded order, so the server trains every sampled client the moment it starts the round;
 * each client then charges, step by step, the simulated compute its training would have
 * taken (the same flops, the same slowdowns), and sends its replica's weights. The client
 * sees no difference in simulated time; its weights are those of its single run up to float
 * rounding (on the CPU backend, exactly: the batched ops are the single ops block by block).
 *
 * Clients hold different numbers of samples, so the replicas do not all take the same steps:
 * they are ordered by sample count, largest first, and at each step the replicas still
 * training with the same batch size form contiguous runs, each run one group call. */
#ifndef DTSIM_SIDE_H
#define DTSIM_SIDE_H

#include "run.h"

typedef struct sim_side sim_side_t;

/* Whether model.side_by_side asks for replicas side by side in this run (never in
 * timing-only runs nor with accumulate; local-sgd also needs no faults and the flops time
 * model, which its caller checks). */
int sim_side_enabled(const sim_run_t *run);

/* The replicas' state; freed with the run. */
sim_side_t *sim_side_new(sim_run_t *run);

/* Trains clients[0..count) for `round` from the global model (dev), each from its own
 * seeded order stream rngs[i] (consumed), with the run's local epochs, batch, optimizer and
 * prox term, as fedavg's local training does for one client. Earlier results are dropped. */
void sim_side_train(sim_side_t *s, sim_run_t *run, const uint32_t *clients, trainer_rng_t *rngs,
                    int count, long round, const float *global);

/* Client c's result of `round` (dev, n_params), after charging node with each of its steps
 * (simulated compute and step counting as sim_compute_grad does); NULL when c was not
 * trained side by side for that round. */
const float *sim_side_replay(sim_side_t *s, sim_run_t *run, sim_node_t *node, int c, long round);

/* local-sgd: the workers' local periods side by side. Between two averages a worker's H
 * local steps depend only on its weights and optimizer state at the start of the period and
 * on its own batch stream, so a worker registers its start (sim_side_period_start, after the
 * average), charges and counts its H steps as it goes, and needs the trained weights only
 * when it reaches the next average (sim_side_period_end). The first worker to get there
 * trains every registered worker of that period side by side (their weights and momentum
 * copied into replica buffers and back) and leaves each result in its node's params and
 * velocity. A loss that is not finite marks the run diverged then: local-sgd stops only at
 * averages, so at the same step as training one worker after the other. Charging before
 * computing needs the flops time model; elastic re-formation after faults rewinds workers,
 * so neither goes side by side. */
void sim_side_period_start(sim_side_t *s, sim_run_t *run, sim_node_t *node, long step, long steps);
/* Leaves node's trained period in its params and velocity (training the period if first). */
void sim_side_period_end(sim_side_t *s, sim_run_t *run, sim_node_t *node);

#endif
