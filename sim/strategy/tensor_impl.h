/* What tensor.c (the strategy's slots, the mlp's split) asks of tensor_gpt.c (the real
 * gpt's split). */
#ifndef DTSIM_TENSOR_IMPL_H
#define DTSIM_TENSOR_IMPL_H

#include "strategy.h"

/* A member's actor: the gpt's blocks split as Megatron-LM splits them (tensor_gpt.c). */
void sim_tensor_gpt_worker(sim_node_t *node);
/* A member's parameters (its slices and the replicated tensors) and activations. */
void sim_tensor_gpt_memory(const sim_run_t *run, sim_node_t *node);
/* The gpt's own checks: tensor_parallel divides the heads (and so the widths it splits). */
dt_status sim_tensor_gpt_check(const scenario_t *sc, dt_err_t *err);

#endif
