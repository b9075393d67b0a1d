/* Activations of model profiles and what recomputing them costs (see profile_memory.h). */
#include "profile_memory.h"

#include <string.h>

static const sim_profile_layer_t *fwd_layer(const sim_model_profile_t *p, int j)
{
    return &p->layers[p->n_layers - 1 - j];
}

static int is_attention(const sim_profile_layer_t *l)
{
    size_t n = strlen(l->name);
    return n >= 7 && !strcmp(l->name + n - 7, ".scores");
}

int sim_profile_has_attention(const sim_model_profile_t *p)
{
    for (int i = 0; i < p->n_layers; i++)
        if (is_attention(&p->layers[i]))
            return 1;
    return 0;
}

int sim_profile_recomputed(const sim_model_profile_t *p, int j, sim_recompute_t r)
{
    return r == SIM_RECOMPUTE_FULL ||
           (r == SIM_RECOMPUTE_SELECTIVE && is_attention(fwd_layer(p, j)));
}

double sim_profile_activations_split(const sim_model_profile_t *p, int lo, int hi,
                                     sim_recompute_t r, const double *share, double cut_share,
                                     double *transient)
{
    DT_ASSERT(p->has_forward_layers && 0 <= lo && lo <= hi && hi <= p->n_layers);
    double kept = 0, piece = 0;
    *transient = 0;
    if (r == SIM_RECOMPUTE_FULL && lo > 0) /* the stage's input: its first checkpoint */
        kept += fwd_layer(p, lo - 1)->cut * cut_share;
    for (int j = lo; j < hi; j++) {
        const sim_profile_layer_t *l = fwd_layer(p, j);
        double out = l->outputs * (share ? share[j] : 1.0);
        if (r == SIM_RECOMPUTE_FULL) {
            /* pieces end at the cuts; the input of the next one is a checkpoint */
            piece += out;
            if (l->cut > 0 || j == hi - 1) {
                if (piece > *transient)
                    *transient = piece;
                piece = 0;
                if (j < hi - 1)
                    kept += l->cut * cut_share;
            }
        } else if (sim_profile_recomputed(p, j, r)) {
            if (out > *transient)
                *transient = out;
        } else {
            kept += out;
        }
    }
    return kept;
}

double sim_profile_activations(const sim_model_profile_t *p, int lo, int hi, sim_recompute_t r,
                               double *transient)
{
    return sim_profile_activations_split(p, lo, hi, r, NULL, 1.0, transient);
}

/* 1 when a layer's name has a numeric part between dots (h.3.attn, model.layers.12.mlp):
 * a layer of a numbered block */
static int in_block(const sim_profile_layer_t *l)
{
    for (const char *c = strchr(l->name, '.'); c; c = strchr(c + 1, '.')) {
        size_t digits = strspn(c + 1, "0123456789");
        if (digits > 0 && c[1 + digits] == '.')
            return 1;
    }
    return 0;
}

void sim_profile_full_range(const sim_model_profile_t *p, int *lo, int *hi)
{
    *lo = 0;
    *hi = p->n_layers;
    int first = -1, last = -1;
    for (int j = 0; j < p->n_layers; j++)
        if (in_block(fwd_layer(p, j))) {
            if (first < 0)
                first = j;
            last = j;
        }
    if (first >= 0) {
        *lo = first;
        *hi = last + 1;
    }
}

double sim_profile_recompute_flops(const sim_model_profile_t *p, int lo, int hi, sim_recompute_t r)
{
    int b0 = 0, b1 = p->n_layers;
    if (r == SIM_RECOMPUTE_FULL) {
        sim_profile_full_range(p, &b0, &b1);
        if (lo == 0 && hi == p->n_layers && b0 == 0 && b1 == p->n_layers)
            return p->forward_flops; /* exactly one more forward pass */
    }
    double flops = 0;
    for (int j = lo; j < hi && r != SIM_RECOMPUTE_NONE; j++)
        if (sim_profile_recomputed(p, j, r) && (r != SIM_RECOMPUTE_FULL || (j >= b0 && j < b1)))
            flops += fwd_layer(p, j)->forward_flops;
    return flops;
}
