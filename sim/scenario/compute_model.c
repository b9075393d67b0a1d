/* The compute model by operation and shape (see compute_model.h). */
#include "compute_model.h"

#include <math.h>
#include <string.h>

#include "strategy_def.h"

int sim_compute_of_device(const sim_device_profile_t *d, const scenario_t *sc, sim_compute_t *c)
{
    double peak = d->value[sc->precision];
    if (isnan(d->value[SIM_DEV_SMS]) || isnan(peak))
        return 0;
    int fp32 = sc->precision == SIM_PREC_FP32, fp8 = sc->precision == SIM_PREC_FP8;
    /* fp8: Transformer Engine's attention runs in BF16 */
    double attn_peak = sc->precision == SIM_PREC_FP8 ? d->value[SIM_DEV_BF16] : peak;
    if (isnan(attn_peak))
        attn_peak = peak;
    /* no tensor cores in FP32: the device's FP32 fraction for both */
    double gemm_eff = fp32 ? d->value[SIM_DEV_EFFICIENCY] : d->value[SIM_DEV_GEMM_EFFICIENCY];
    *c = (sim_compute_t){
        .peak = peak,
        .attn_peak = attn_peak,
        .sms = d->value[SIM_DEV_SMS],
        .gemm_eff = fp8 && sc->fp8_scaling == SIM_FP8_BLOCK
                        ? d->value[SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY]
                        : gemm_eff,
        .wide_peak = attn_peak,
        .wide_eff = gemm_eff,
        .attn_eff = fp32 ? d->value[SIM_DEV_EFFICIENCY] : d->value[SIM_DEV_ATTENTION_EFFICIENCY],
        .bandwidth = d->value[SIM_DEV_MEMORY_BANDWIDTH] * d->value[SIM_DEV_MEMORY_EFFICIENCY],
        .value_bytes = scenario_value_bytes(sc),
    };
    return 1;
}

int sim_compute_by_shape(const scenario_t *sc, const sim_model_profile_t *p, sim_compute_t *c)
{
    if (sc->compute_model != SIM_COMPUTE_SHAPE || sc->device_efficiency > 0 || !p->has_shapes)
        return 0;
    const sim_device_profile_t *d = scenario_device(sc);
    return d && sim_compute_of_device(d, sc, c);
}

double sim_compute_gemm(const sim_compute_t *c, double m, double n, double k)
{
    /* a tile no larger than the matrix: a product of a few rows (a pooler's one token) is
     * not charged for 128 of them */
    double tm = m < SIM_GEMM_TILE ? m : SIM_GEMM_TILE, tn = n < SIM_GEMM_TILE ? n : SIM_GEMM_TILE;
    double waves = ceil(ceil(m / tm) * ceil(n / tn) / c->sms);
    double compute = waves * 2 * tm * tn * k / (c->peak / c->sms * c->gemm_eff);
    double memory = (m * k + k * n + m * n) * c->value_bytes / c->bandwidth;
    return compute > memory ? compute : memory;
}

double sim_compute_grouped_gemm(const sim_compute_t *c, double groups, double m, double n, double k)
{
    double tn = n < SIM_GEMM_TILE ? n : SIM_GEMM_TILE;
    double tiles = groups * ceil(m / SIM_GEMM_TILE) * ceil(n / tn);
    double compute =
        ceil(tiles / c->sms) * 2 * SIM_GEMM_TILE * tn * k / (c->peak / c->sms * c->gemm_eff);
    double memory = groups * (m * k + k * n + m * n) * c->value_bytes / c->bandwidth;
    return compute > memory ? compute : memory;
}

double sim_compute_memory(const sim_compute_t *c, double elements)
{
    return elements * c->value_bytes / c->bandwidth;
}

double sim_compute_attention(const sim_compute_t *c, double flops, double elements)
{
    double compute = flops / (c->attn_peak * c->attn_eff);
    double memory = sim_compute_memory(c, elements);
    return compute > memory ? compute : memory;
}

/* What a member of a tensor group computes of a layer: a split layer's 1/T, a replicated
 * one's whole or, under sequence parallelism, 1/T (strategy/pipeline/plan.c's split_share). */
static double flops_share(const sim_profile_layer_t *l, const sim_compute_call_t *call)
{
    return call->T > 1 && (l->split != SIM_SPLIT_NONE || call->sp) ? 1.0 / call->T : 1.0;
}

void sim_compute_layer(const sim_compute_t *c, const sim_profile_layer_t *l,
                       const sim_compute_call_t *call, double speed, double *fwd, double *bwd)
{
    double s = call->samples, T = call->T, share = flops_share(l, call);
    /* the elementwise and memory-bound work follows the outputs: a row or vocab layer's
     * output is the all-reduced whole on every member unless sequence parallelism splits
     * it (as strategy/pipeline/plan.c keeps it) */
    int whole = (l->split == SIM_SPLIT_ROW || l->split == SIM_SPLIT_VOCAB) && !call->sp;
    double elements_share = whole ? 1.0 : share;
    double f_flops = l->forward_flops * share * s, b_flops = l->backward_flops * share * s;
    switch (l->op) {
    case SIM_OP_GEMM: {
        double m = l->dim[0] * s, n = l->dim[1], k = l->dim[2];
        if (T > 1 && l->split == SIM_SPLIT_ROW)
            k /= T; /* by input features */
        else if (T > 1 && l->split != SIM_SPLIT_NONE)
            n /= T; /* column (and a vocab or heads GEMM): by output features */
        else if (T > 1 && call->sp)
            m /= T; /* replicated, its tokens split */
        sim_compute_t wide;
        if (l->wide) { /* kept in 16 bits under fp8 */
            wide = *c;
            wide.peak = c->wide_peak;
            wide.gemm_eff = c->wide_eff;
            c = &wide;
        }
        /* the profile's FLOPs at the speed its GEMMs reach: a first layer without an input
         * gradient, or a bias counted in, keeps its own count */
        double gemm_flops = 2 * m * n * k;
        if (l->experts) { /* the member's experts, each on its rows from the whole group */
            /* strategy.expert divides the profile's fewest routed experts; a layer of more
             * that it does not divide holds a fractional share on average */
            double g = (double)l->experts / call->E, me = m / g;
            *fwd = sim_compute_grouped_gemm(c, g, me, n, k) * f_flops / gemm_flops;
            *bwd = (sim_compute_grouped_gemm(c, g, me, k, n) +
                    sim_compute_grouped_gemm(c, g, k, n, me)) *
                   b_flops / (2 * gemm_flops);
        } else {
            *fwd = sim_compute_gemm(c, m, n, k) * f_flops / gemm_flops;
            *bwd = (sim_compute_gemm(c, m, k, n) + sim_compute_gemm(c, k, n, m)) * b_flops /
                   (2 * gemm_flops);
        }
        *fwd += sim_compute_memory(c, l->dim[3] * s * elements_share);
        *bwd += sim_compute_memory(c, l->dim[4] * s * elements_share);
        return;
    }
    case SIM_OP_ATTENTION: {
        double io = (2 * l->dim[1] + 2 * l->dim[2]) * l->dim[0] * l->dim[3] * s * share;
        *fwd = sim_compute_attention(c, f_flops, io);
        *bwd = sim_compute_attention(c, b_flops, 2 * io);
        return;
    }
    case SIM_OP_MEMORY:
        *fwd = sim_compute_memory(c, l->dim[0] * s * elements_share);
        *bwd = sim_compute_memory(c, l->dim[1] * s * elements_share);
        return;
    case SIM_OP_NONE:
        break;
    }
    *fwd = f_flops / speed;
    *bwd = b_flops / speed;
}

void sim_compute_charge(sim_model_profile_t *p, const sim_compute_t *c,
                        const sim_compute_call_t *call, double speed, double *flops,
                        double *seconds)
{
    *flops = *seconds = 0;
    p->forward_flops = p->backward_flops = 0;
    for (int i = 0; i < p->n_layers; i++) {
        sim_profile_layer_t *l = &p->layers[i];
        double share = flops_share(l, call), fwd, bwd;
        sim_compute_layer(c, l, call, speed, &fwd, &bwd);
        *flops += (l->forward_flops + l->backward_flops) * share;
        *seconds += (fwd + bwd) / call->samples;
        /* charged per sample as a whole layer: the plan takes a member's share of it */
        l->forward_flops = fwd * speed / (call->samples * share);
        l->backward_flops = bwd * speed / (call->samples * share);
        p->forward_flops += l->forward_flops;
        p->backward_flops += l->backward_flops;
    }
}

sim_compute_call_t sim_compute_call_of(const scenario_t *sc)
{
    sim_compute_call_t call = {.samples = (double)sc->batch, .T = 1, .sp = 0, .E = 1};
    if (sc->strategy->compute_call)
        sc->strategy->compute_call(sc, &call.samples, &call.T, &call.sp, &call.E);
    return call;
}

double sim_compute_charge_run(sim_model_profile_t *p, const scenario_t *sc)
{
    sim_compute_t cm;
    if (!sim_compute_by_shape(sc, p, &cm))
        return 0;
    sim_compute_call_t call = sim_compute_call_of(sc);
    double flops, seconds;
    sim_compute_charge(p, &cm, &call, sc->device_flops, &flops, &seconds);
    return flops / seconds;
}
