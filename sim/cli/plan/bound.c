/* A lower bound of a layout's step time, without simulating (plan_bound): what the plan
 * orders its runs by and prunes with. */
#define _GNU_SOURCE
#include <string.h>

#include "compute_model.h"
#include "plan_impl.h"

/* A lower bound of layout's step time in seconds, without simulating (sc: it loaded): the
 * compute of its busiest device, which no communication shortens. Each layer's seconds as
 * the run charges them (timed by shape, cluster.compute_model, a tensor group member's
 * share; else its FLOPs at the device's sustained speed, at most 1/tensor of them split),
 * forward and backward, the forward again where the layout recomputes it; the replica's
 * batch over the stages (the busiest stage holds at least the mean); times the pipeline's
 * bubble, 1 + (S - 1) / (V M) for S stages, V virtual stages and M micro-batches (the first
 * micro-batch's forward and the last one's backward cross the other stages while a stage
 * waits). It assumes the stages as even as the simulator cuts them; the plan reports any
 * simulated step below its bound. 0 where the device states no speed: then nothing is
 * pruned. */
double plan_bound(const plan_layout_t *layout, const scenario_t *sc,
                  const sim_model_profile_t *prof)
{
    double speed = sc->device_flops;
    if (!(speed > 0))
        return 0;
    sim_compute_t cm;
    sim_compute_call_t call = sim_compute_call_of(sc);
    int shape = sim_compute_by_shape(sc, prof, &cm);
    double member = 0; /* a tensor group member's seconds per sample */
    for (int i = 0; i < prof->n_layers; i++) {
        const sim_profile_layer_t *layer = &prof->layers[i];
        double fwd, bwd;
        if (shape) {
            sim_compute_layer(&cm, layer, &call, speed, &fwd, &bwd);
            fwd /= call.samples;
            bwd /= call.samples;
        } else {
            fwd = layer->forward_flops / ((double)layout->t * speed);
            bwd = layer->backward_flops / ((double)layout->t * speed);
        }
        size_t len = strlen(layer->name); /* selective recomputes the attention cores */
        int again = layout->rc == SIM_RECOMPUTE_FULL ||
                    (layout->rc == SIM_RECOMPUTE_SELECTIVE && len >= 7 &&
                     !strcmp(layer->name + len - 7, ".scores"));
        member += fwd + bwd + (again ? fwd : 0);
    }
    /* a context group's member computes 1/cp of each micro-batch (timed by shape, a call of
     * its 1/cp of the samples) */
    double context = (double)(layout->cp > 1 ? layout->cp : 1);
    return member * (double)(layout->m * layout->mbs) / (double)layout->p / context *
           (1 + (double)(layout->p - 1) / (double)(layout->v * layout->m));
}
