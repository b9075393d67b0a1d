/* Model profiles of transformers of any shape (`dtsim profile transformer`): the layers of a
 * GPT-2, Llama or BERT-style network laid out as scenarios/profiles/make_profiles.py lays
 * out gpt2_xl and bert_large, with its FLOP convention, written as a profile file
 * (model_profile.h). A family fixes the layout and the layer names (those of its Hugging
 * Face implementation) and gives the defaults; the options change the shape. */
#ifndef DTSIM_PROFILE_TRANSFORMER_H
#define DTSIM_PROFILE_TRANSFORMER_H

#include <stdio.h>

#include "common.h"

typedef struct sim_transformer {
    const char *family;              /* gpt, llama or bert; NULL: gpt */
    long layers, hidden, heads, seq; /* required, >= 1 */
    long vocab;                      /* required, >= 1 */
    /* -1: the family's default (sim_transformer_resolve fills them in) */
    long kv_heads;  /* key and value heads (grouped-query attention); default heads */
    long ffn;       /* feed-forward width; default 4 x hidden, or Llama's rule with SwiGLU */
    long positions; /* rows of the learned position embedding; 0: none (rotary) */
    int rmsnorm;    /* RMSNorm (a scale only) rather than LayerNorm (scale and shift) */
    int bias;       /* biases in the linear layers */
    int tied;       /* the output layer shares the token embedding's weights */
    int swiglu;     /* gated MLP: gate and up projections, then down */
    /* mixture of experts (experts 0: every layer dense) */
    long experts;        /* routed experts of a MoE layer's MLP */
    long top_k;          /* of them each token uses; required with experts */
    long shared_experts; /* experts every token uses (as one MLP shared x moe_ffn wide) */
    long moe_ffn;        /* an expert's feed-forward width; default ffn */
    long dense_layers;   /* the first layers keep the dense MLP (DeepSeek-V3: 3) */
    /* multi-head latent attention (DeepSeek-V2 and V3; kv_lora_rank 0: plain attention):
     * keys and values from a latent of kv_lora_rank, queries from one of q_lora_rank (0:
     * straight from the hidden state), heads of qk_nope_dim + qk_rope_dim for queries and
     * keys and v_head_dim for values */
    long q_lora_rank, kv_lora_rank, qk_rope_dim;
    long qk_nope_dim, v_head_dim; /* default hidden / heads */
    char name[64];                /* profile.name */
} sim_transformer_t;

/** Sets every field to "not given": the family gpt, shape 0, options -1, no name. */
void sim_transformer_init(sim_transformer_t *t);
/** Fills what was not given from the family and checks the shape; errors name the option. */
dt_status sim_transformer_resolve(sim_transformer_t *t, dt_err_t *err);
/** Writes the profile of a resolved t to out; DT_ERR_INPUT if a count passes a profile's
 * limits (then nothing is written). */
dt_status sim_transformer_write(const sim_transformer_t *t, FILE *out, dt_err_t *err);

#endif
