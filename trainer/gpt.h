/* The decoder-only transformer (model.arch = gpt) over the flat parameter buffer: token
 * and position embeddings, `layers` pre-norm blocks (layer norm, causal multi-head
 * self-attention, residual; layer norm, GELU MLP of 4 x hidden, residual), a final layer
 * norm and an output layer tied to the token embedding (GPT-2's shape, llm.c's
 * train_gpt2.c). model.c calls in here for this architecture; the ops are the backend's.
 *
 * A sample is a window of seq + 1 token ids, stored as floats in one row of the data set
 * (dim = seq + 1): tokens 0 .. seq-1 are the inputs, 1 .. seq the next-token targets. The
 * vocabulary is the data's classes (256 for bytes). Loss and accuracy are per token.
 *
 * Layout (GPT-2's tensors and their PyTorch shapes, one block after the other so that a
 * block's parameters are contiguous):
 *   wte (V, C), wpe (T, C),
 *   per block: ln1 w, b (C); qkv w (3C, C), b (3C); attn proj w (C, C), b (C);
 *              ln2 w, b (C); fc w (4C, C), b (4C); fc proj w (C, 4C), b (C),
 *   lnf w, b (C).
 * V C + T C + L (12 C^2 + 13 C) + 2 C parameters: `dtsim profile transformer`'s count for
 * the gpt family of the same shape. */
#ifndef DTSIM_GPT_H
#define DTSIM_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

struct trainer_model;
struct trainer_workspace;
struct trainer_backend;

/* Offsets of one block's tensors in the parameter buffer. */
typedef struct trainer_gpt_block {
    size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
} trainer_gpt_block_t;

typedef struct trainer_gpt_layout {
    int L, C, NH, T, V; /* layers, hidden, heads, sequence, vocabulary */
    size_t wte, wpe, lnfw, lnfb;
    trainer_gpt_block_t block0; /* block l is block0 + l * block_len, tensor by tensor */
    size_t block_len;
} trainer_gpt_layout_t;

/* Activations of the batch, kept for the backward pass (gpt.c allocates them on the
 * backend; per-layer tensors are `layers` slabs of max_batch rows each). */
typedef struct trainer_gpt_acts trainer_gpt_acts_t;

/* The offsets of block l. */
trainer_gpt_block_t trainer_gpt_block(const trainer_gpt_layout_t *g, int l);

/* Checks the shape (layers, hidden = cfg->hidden[0], heads, seq, classes as the
 * vocabulary, in_channels x in_h x in_w = seq + 1: the data's windows) and lays out m's parameters;
 * DT_ERR_INPUT naming what does not fit. */
dt_status trainer_gpt_build(struct trainer_model *m, dt_err_t *err);
/* GPT-2's initialisation: weights N(0, 0.02), the two projections into the residual stream
 * N(0, 0.02 / sqrt(2 L)), biases 0, layer-norm scales 1, from the seeded init stream. */
void trainer_gpt_init_params(const struct trainer_model *m, float *params, uint64_t seed);
/* FLOPs per sample (a window of T tokens) by `dtsim profile transformer`'s convention: 2 per
 * multiply-add of every linear layer (biases not counted), 4 per element of each layer norm,
 * attention 4 T^2 C + 5 heads T^2 (the full square, not its causal half), embeddings, GELU,
 * residuals and the loss nothing; backward twice forward. */
void trainer_gpt_flops(const struct trainer_model *m, double *forward, double *backward);
/* The gradient's pieces in the order the backward pass completes them, for gradient buckets:
 * the final norm (after the output layer's products), blocks L-1 .. 0, then the embeddings
 * (wte is complete only once the embedding's backward has added its part). Piece i is
 * [lo[i], hi[i]), each ending where the one before begins; flops[i] is the backward FLOPs per
 * sample from the end of the piece before (the output layer's are the first piece's). The
 * arrays hold layers + 2; returns that count. */
int trainer_gpt_backward_pieces(const struct trainer_model *m, size_t *lo, size_t *hi,
                                double *flops);
/* Floats one sample leaves in memory for the backward pass (gpt.c's activations). */
size_t trainer_gpt_activation_floats(const struct trainer_model *m);

/* Pipeline layers (stages cut between them): 0 the embeddings, 1 .. L the blocks, L + 1 the
 * final norm and the output layer, tied to wte; layer i's output is the residual stream
 * (B, T, C) for i <= L, the logits for L + 1. */
static inline int trainer_gpt_n_layers(const trainer_gpt_layout_t *g)
{
    return g->L + 2;
}
/* Layer i's parameters [lo, hi) (the output layer's: the final norm; wte is layer 0's). */
void trainer_gpt_layer_params(const struct trainer_model *m, int i, size_t *lo, size_t *hi);
/* Layer i's FLOPs per sample by trainer_gpt_flops' convention (they sum to its). */
void trainer_gpt_layer_flops(const struct trainer_model *m, int i, double *forward,
                             double *backward);
/* Floats one sample leaves for the backward pass of layers [first, last). */
size_t trainer_gpt_range_activation_floats(const struct trainer_model *m, int first, int last);
void trainer_gpt_workspace_init(struct trainer_workspace *ws, int max_batch);
void trainer_gpt_workspace_free(struct trainer_workspace *ws);
void trainer_gpt_forward(struct trainer_workspace *ws, const float *params, int batch);
/* Per-token cross-entropy over the batch's B T next tokens, seeding the backward pass with
 * d(mean over tokens)/d(logits) when seed_backward. *loss_sum and *correct are per sample
 * (token sums / T), so that over n samples loss_sum / n is the mean token loss and
 * correct / n the next-token accuracy. */
void trainer_gpt_loss(struct trainer_workspace *ws, int batch, int seed_backward, double *loss_sum,
                      double *correct);
/* grads (n_params) overwritten with d(mean token loss)/d(params). */
void trainer_gpt_backward(struct trainer_workspace *ws, const float *params, float *grads,
                          int batch);
/* Layers [first, last) alone (pipeline stages, model.h's trainer_model_*_range): forward
 * reads layer first's input from layer first-1's output in the workspace; backward reads
 * the gradient of layer last-1's output (trainer_gpt_layer_grad), writes its layers'
 * gradients into grads (added to them with accumulate) and leaves the gradient of layer
 * first-1's output. A range with the output layer but not the embeddings writes (adds) the
 * output layer's part of wte's gradient: the pipeline sums the two stages' parts. */
void trainer_gpt_forward_range(struct trainer_workspace *ws, const float *params, int batch,
                               int first, int last);
void trainer_gpt_backward_range(struct trainer_workspace *ws, const float *params, float *grads,
                                int batch, int first, int last, int accumulate);
/* Layer i's output in the workspace, and its gradient (the same buffer for every block). */
const float *trainer_gpt_layer_output(const struct trainer_workspace *ws, int i);
const float *trainer_gpt_layer_grad(const struct trainer_workspace *ws, int i);
/* Backward into the workspace's own gradient buffer, then plain SGD on params. */
void trainer_gpt_backward_sgd(struct trainer_workspace *ws, float *params, int batch, float lr,
                              float weight_decay);
/* Every window of seq + 1 bytes of text[0..len) (len - seq of them, one starting at each
 * byte) as a data set of the layout above: rows of seq + 1 token ids stored as floats,
 * classes 256, labels 0. DT_ERR_INPUT when the text is shorter than seq + 1 bytes. */
struct trainer_dataset;
dt_status trainer_gpt_windows(struct trainer_dataset *ds, const unsigned char *text, size_t len,
                              int seq, dt_err_t *err);
/* The logits (batch, seq, V) of the last forward pass, dev. */
const float *trainer_gpt_logits(const struct trainer_workspace *ws);
/* DT_ERR_INPUT when be lacks the transformer's ops. */
dt_status trainer_gpt_check_backend(const struct trainer_backend *be, dt_err_t *err);

#endif
