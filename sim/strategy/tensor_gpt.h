/* A tensor group member's share of the real gpt (tensor_gpt.c: Megatron-LM's split of
 * attention by heads and of the MLP by its hidden width): what the tensor strategy runs over
 * the whole model, and what a pipeline's tensor group runs over a stage's layers. Layers are
 * gpt's pipeline layers (gpt.h): 0 the embeddings, 1 .. L the blocks, L + 1 the output
 * layer. A member's activations for one batch live in its sim_tgpt_t; a pipeline's stages
 * share one per member and micro-batch, each running its layers in turn, as they share a
 * trainer workspace without a tensor split. */
#ifndef DTSIM_TENSOR_GPT_H
#define DTSIM_TENSOR_GPT_H

#include "collective.h"
#include "strategy.h"

typedef struct tg_worker sim_tgpt_t;

/* Member r of T (sp: sequence parallelism, which divides batch x seq token rows by T) for
 * batches of `batch` windows. */
sim_tgpt_t *sim_tgpt_make(sim_run_t *run, int T, int r, int sp, int batch);
void sim_tgpt_free(const trainer_backend_t *be, sim_tgpt_t *t);
/* The training windows idx (batch of them) gathered for a forward pass from layer 0. */
void sim_tgpt_gather(sim_run_t *run, sim_tgpt_t *t, const uint32_t *idx);

/* The forward pass of layers [first, last) with the group grp's all-reduces (member r of
 * it); block first - 1 reads what the layers before it left in t. With the output layer
 * the loss of the member's rows summed over their tokens goes to *loss, its gradient
 * scaled for the mean over the batch's tokens. 0, or -1 when a collective failed (the run
 * is marked failed). */
int sim_tgpt_forward(sim_run_t *run, sim_node_t *node, sim_tgpt_t *t, const sim_group_t *grp,
                     const float *P, int first, int last, double *loss);
/* Its backward pass: the layers' gradients into G (overwritten; wte's the output layer's part
 * plus the embeddings'), the gradient of layer first - 1's output left in t for the layers
 * before. Under sp the replicated tensors' gradients are the member's rows' part: the caller
 * sums them over the group. 0, or -1 on failure. */
int sim_tgpt_backward(sim_run_t *run, sim_node_t *node, sim_tgpt_t *t, const sim_group_t *grp,
                      const float *P, float *G, int first, int last);

/* Member r's pieces of one kind (split, or replicated: !split) of layers [first, last) of a
 * buffer in the parameters' layout copied side by side into pack (out: from pack back into
 * layout), in sim_tgpt_pieces' order; their count. */
size_t sim_tgpt_pack(const trainer_backend_t *be, const trainer_gpt_layout_t *g, int T, int r,
                     int split, int first, int last, float *layout, float *pack, int out);

/* The whole weights in worker 0's buffer, member r's (r < T) at worker r: the other members'
 * split pieces copied in (before an evaluation; member 0 never reads them). */
void sim_tgpt_assemble(sim_run_t *run, int T);

/* The floats per window a member keeps from the forward pass of layers [first, last) for
 * the backward pass (its memory's activations). */
double sim_tgpt_activation_floats(const trainer_gpt_layout_t *g, int T, int sp, int first,
                                  int last);

/* Calls fn(ctx, at, n) on each contiguous piece of the parameters of layers [first, last)
 * that member r of T holds of the split layers (split), or on each replicated piece
 * (!split: the embeddings with the tied wte, the norms, the row-split projections' biases),
 * in layout order. */
void sim_tgpt_pieces(const trainer_gpt_layout_t *g, int T, int r, int split, int first, int last,
                     void (*fn)(void *ctx, size_t at, size_t n), void *ctx);

#endif
