/* Model profiles: models too large to train here, described by what the simulation needs
 * to time them (timing-only runs, `model.arch = profile:NAME`): the parameter count, the
 * forward and backward FLOPs of one sample, and the gradient of every layer in the order
 * the backward pass produces it, with that layer's share of the backward FLOPs (for
 * gradient bucketing and overlap).
 *
 * A profile is an INI file:
 *   [profile]   name, sample (what one sample is), source, params, forward_flops,
 *               backward_flops (per sample, plain numbers: 8.2e9)
 *   [backward]  LAYER = GRADIENT_ELEMENTS BACKWARD_FLOPS, one line per layer, last layer
 *               first; the elements sum to params and the FLOPs to backward_flops.
 *   [forward]   optional (pipelines and activation memory need it): LAYER = FORWARD_FLOPS
 *               OUTPUT_ELEMENTS [CUT_ELEMENTS], the same layers first layer first; the FLOPs
 *               sum to forward_flops; OUTPUT_ELEMENTS (per sample) is what the layer keeps
 *               for the backward pass; CUT_ELEMENTS marks a place where a pipeline stage
 *               may end after the layer, and is what then crosses to the next stage.
 *   [tensor]    optional (tensor parallelism needs it; so does [forward]): LAYER = SPLIT
 *               [REDUCE_ELEMENTS], how Megatron-LM splits the layer across a tensor group:
 *               column (by output features), row (by input features), heads (an attention
 *               core, by heads), vocab (an embedding, by vocabulary entries); each divides
 *               the layer's parameters, FLOPs and outputs by the group's size. REDUCE_ELEMENTS
 *               (per sample) is the all-reduce the split needs: row and vocab after the
 *               forward pass (the partial sums of the output), column after the backward
 *               pass (those of its input gradient). Layers not listed are replicated.
 *   [shape]     optional, after [backward]: LAYER = OP ..., what the layer computes, for
 *               the compute model by operation and shape (compute_model.h), per sample:
 *               gemm M N K [FORWARD_ELEMENTS BACKWARD_ELEMENTS]: a matrix product of M rows
 *                 (tokens) by K inputs by N outputs, and the elements its fused elementwise
 *                 work (bias, activation, dropout, residual) reads and writes;
 *               attention HEADS QUERIES KEYS HEAD_DIM: an attention core, flash attention;
 *               memory FORWARD_ELEMENTS BACKWARD_ELEMENTS: a memory-bound layer (norm,
 *                 embedding) and the elements it reads and writes.
 *               Layers not listed run at the device's flat speed, as every layer of a
 *               profile without the section does.
 *   [experts]   optional, after [backward] (mixture of experts): LAYER = ROUTED TOP_K
 *               [ALL_TO_ALL_ELEMENTS]: the layer holds ROUTED experts' weights (its
 *               parameters count them all), of which each token uses TOP_K (its FLOPs count
 *               those); expert parallelism (strategy.expert = E) gives each member of an
 *               expert group ROUTED/E of them. ALL_TO_ALL_ELEMENTS (per sample, tokens x
 *               TOP_K x hidden), on the first routed layer of a MoE block, is what each of
 *               the block's two all-to-alls (dispatch before the experts, combine after)
 *               moves in the forward pass, and their gradients in the backward pass.
 * The built-in profiles are the .ini files of scenarios/profiles (made by
 * make_profiles.py there), compiled into the program. */
#ifndef DTSIM_MODEL_PROFILE_H
#define DTSIM_MODEL_PROFILE_H

#include <stddef.h>

#include "common.h"

/* How tensor parallelism splits a layer ([tensor]). */
typedef enum sim_split {
    SIM_SPLIT_NONE, /* replicated on every member of the tensor group */
    SIM_SPLIT_COLUMN,
    SIM_SPLIT_ROW,
    SIM_SPLIT_HEADS,
    SIM_SPLIT_VOCAB
} sim_split_t;

/* What a layer computes ([shape]). */
typedef enum sim_op {
    SIM_OP_NONE,      /* not said: the flat speed */
    SIM_OP_GEMM,      /* dim: M, N, K, elementwise elements forward, backward */
    SIM_OP_ATTENTION, /* dim: heads, queries, keys, head dimension */
    SIM_OP_MEMORY,    /* dim: elements moved forward, backward */
} sim_op_t;

typedef struct sim_profile_layer {
    char name[64];
    size_t params;         /* gradient elements */
    double backward_flops; /* per sample */
    /* from [forward] (has_forward_layers): */
    double forward_flops; /* per sample */
    double outputs;       /* elements kept for the backward pass, per sample */
    double cut;           /* > 0: a stage may end here, sending this many elements per
                             sample; 0: no cut after this layer */
    /* from [tensor] (has_tensor_splits): */
    sim_split_t split;
    double reduce; /* elements per sample all-reduced across the tensor group: row, vocab
                      after the forward pass, column after the backward pass */
    /* from [shape] (has_shapes): */
    sim_op_t op;
    double dim[5]; /* per sample, as sim_op_t says */
    /* from [experts] (has_experts): 0 for a layer not listed */
    int experts, top_k;
    double a2a; /* elements per sample each all-to-all of the MoE block moves */
    /* set on loading: a GEMM that FP8 training keeps in 16 bits, the output head (the last
     * layer, a GEMM) and a MoE router (the GEMM before a routed layer, one output per
     * expert) */
    int wide;
} sim_profile_layer_t;

typedef struct sim_model_profile {
    char name[64];
    char sample[128];
    char source[400];
    size_t params;
    double forward_flops, backward_flops; /* per sample */
    int n_layers;
    sim_profile_layer_t *layers; /* backward order */
    int has_forward_layers;      /* the file has a [forward] section */
    int has_tensor_splits;       /* the file has a [tensor] section */
    int has_shapes;              /* the file has a [shape] section */
    int has_experts;             /* the file has an [experts] section */
} sim_model_profile_t;

/* spec: a built-in name (resnet50, ...) or a profile file (a path with a '/' or ending in
 * .ini). Errors: "FILE:LINE: what" or "unknown model profile ..." in err, DT_ERR_INPUT. */
dt_status sim_model_profile_load(sim_model_profile_t *p, const char *spec, dt_err_t *err);
/* Frees p's layers and leaves it with none (freeing it again is harmless). */
void sim_model_profile_free(sim_model_profile_t *p);
/* True when spec names a profile file rather than a built-in one. */
int sim_model_profile_is_file(const char *spec);
/* Tokens per sample, read from the sample's description where it counts them ("a sequence
 * of 1024 tokens", as the built-in language models and `dtsim profile transformer` write
 * it); 0 when it does not (an image). */
double sim_model_profile_tokens(const sim_model_profile_t *p);
/* The parameters a token uses: all but the routed experts' a token does not ([experts]:
 * each such layer counts TOP_K / ROUTED of its parameters); params without experts. */
double sim_model_profile_active_params(const sim_model_profile_t *p);
/* The built-in profiles' names, i = 0, 1, ...; NULL past the last. */
const char *sim_model_profile_builtin(size_t i);

#endif
