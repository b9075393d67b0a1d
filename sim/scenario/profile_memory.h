/* What a model profile's layers keep for the backward pass, and what recomputing them
 * costs (model.recompute). Layers are counted in forward order here (the profile holds
 * them last layer first).
 *
 *   none       every layer's outputs are kept from its forward pass to its backward pass.
 *   selective  the attention cores (layers named *.scores: QK^T, softmax, dropout, times V)
 *              are not kept but recomputed in the backward pass, one layer at a time
 *              (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 *              Transformer Models"): their forward FLOPs are paid twice.
 *   full       only the inputs of the pieces between the profile's cuts are kept (the
 *              checkpoints; a pipeline stage's input among them); the backward pass
 *              recomputes each piece's forward pass before its own (Chen et al. 2016,
 *              "Training Deep Nets with Sublinear Memory Cost"): one more forward pass of
 *              the numbered blocks (layers named NAME.N.*: h.3.mlp.c_fc,
 *              model.layers.3.mlp.up_proj). As Megatron-LM checkpoints its transformer
 *              layers alone, the layers before the first block and after the last (the
 *              embeddings, the final norm, the output layer and its loss) are not
 *              recomputed; a profile without numbered blocks recomputes every layer. (The
 *              activations below still count those layers' outputs as recomputed pieces.)
 *
 * Elements are per sample; the first layer's input (the data) is not counted. */
#ifndef DTSIM_PROFILE_MEMORY_H
#define DTSIM_PROFILE_MEMORY_H

#include "model_profile.h"
#include "scenario.h"

/** 1 when forward-order layer j of p is recomputed in the backward pass under r. */
int sim_profile_recomputed(const sim_model_profile_t *p, int j, sim_recompute_t r);
/** 1 when p has an attention core (a layer whose name ends in ".scores"). */
int sim_profile_has_attention(const sim_model_profile_t *p);
/** Forward-order layers [lo, hi) of p, which has a [forward] section: the elements per
 * sample kept from the forward pass to the backward pass, and into *transient those held
 * besides while the largest recomputed piece is recomputed. */
double sim_profile_activations(const sim_model_profile_t *p, int lo, int hi, sim_recompute_t r,
                               double *transient);
/** The same as one member of a tensor group holds them: forward-order layer j's outputs
 * times share[j] (NULL: 1), the checkpoints at the cuts times cut_share. */
double sim_profile_activations_split(const sim_model_profile_t *p, int lo, int hi,
                                     sim_recompute_t r, const double *share, double cut_share,
                                     double *transient);
/** The forward-order layers [*lo, *hi) that full recomputation re-runs: from the first
 * numbered block's first layer to the last one's last; every layer (0, n_layers) where p
 * has no numbered block. */
void sim_profile_full_range(const sim_model_profile_t *p, int *lo, int *hi);
/** The forward FLOPs per sample that the backward pass of layers [lo, hi) recomputes:
 * under full, the layers of sim_profile_full_range among them (the whole profile's
 * forward_flops for a whole model without numbered blocks). */
double sim_profile_recompute_flops(const sim_model_profile_t *p, int lo, int hi, sim_recompute_t r);

#endif
