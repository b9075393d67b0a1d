/* The pipeline's layout (pipeline_impl.h): where a model's or a profile's layers cut into
 * stages, what each stage computes, keeps and sends per sample, a tensor group member's
 * share (plan_split), the stages' gradient buckets (plan_buckets), and the groups. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"
#include "platform.h"
#include "profile_memory.h"

void pipe_plan_free(void *p)
{
    pipe_plan_t *plan = p;
    for (int m = 0; plan->ws && m < plan->D * plan->M; m++)
        trainer_workspace_free(&plan->ws[m]);
    free(plan->ws);
    for (int k = 0; plan->group && k < plan->S * plan->T; k++)
        free(plan->group[k].members);
    for (int k = 0; plan->tp && k < plan->D * plan->S; k++)
        free(plan->tp[k].members);
    int n_ep = plan->E > 1 ? plan->D / plan->E * plan->S * plan->T : 0;
    int n_eg = plan->E > 1 ? plan->E * plan->S * plan->T : 0;
    for (int k = 0; plan->ep && k < n_ep; k++)
        free(plan->ep[k].members);
    for (int k = 0; plan->eg && k < n_eg; k++)
        free(plan->eg[k].members);
    pipe_dp_free(plan);
    free(plan->ep);
    free(plan->eg);
    free(plan->a2a);
    for (int d = 0; plan->emb && d < plan->D; d++)
        free(plan->emb[d].members);
    free(plan->emb);
    free(plan->group);
    free(plan->tp);
    free(plan->lf);
    free(plan->lb);
    free(plan->red_f);
    free(plan->red_b);
    for (int c = 0; c < plan->C; c++)
        sim_bucket_list_free(&plan->bk[c]);
    for (int s = 0; s < plan->S; s++) {
        sim_bucket_list_free(&plan->bk_stage[s]);
        sim_bucket_list_free(&plan->zjobs[s]);
        free(plan->zkind[s]);
        free(plan->zgather[s]);
    }
    free(plan->bk_end);
    free(plan);
}

static int has_weights(const trainer_layer_t *l)
{
    return l->kind == TRAINER_LAYER_DENSE || l->kind == TRAINER_LAYER_CONV;
}

/* The cut of G groups into k stages with the lowest possible largest stage cost, and among
 * those cuts the most even one (the least sum of squared stage costs): cuts[j] is the first
 * group of stage j + 1. Only the largest stage bounding the cut would leave the others to
 * chance: 79 layers in 39 chunks under a largest of 3 came out 1, 1, 1, 3, 3 a stage where
 * frameworks lay out 2 each (Megatron-LM's even split), and the interleaved schedule idles
 * on the uneven chunks. */
static void best_cut_solve(const double *cost, int G, int k, int *cuts);

/* best_cut_solve takes k G^2 steps, and the memory slot asks it the same question for every
 * host of a run (16,384 of them, 128 groups: seconds): the last answer is kept. */
static void best_cut(const double *cost, int G, int k, int *cuts)
{
    static double *last_cost;
    static int last_G = -1, last_k, last_cuts[PIPE_MAX_CHUNKS];
    if (G == last_G && k == last_k && !memcmp(cost, last_cost, sizeof(double) * (size_t)G)) {
        memcpy(cuts, last_cuts, sizeof(int) * (size_t)(k > 0 ? k - 1 : 0));
        return;
    }
    best_cut_solve(cost, G, k, cuts);
    free(last_cost);
    last_cost = dt_malloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
    memcpy(last_cost, cost, sizeof(double) * (size_t)G);
    memcpy(last_cuts, cuts, sizeof(int) * (size_t)(k > 0 ? k - 1 : 0));
    last_G = G;
    last_k = k;
}

/* best[j][g]: the lowest largest cost of groups g..G-1 in j + 1 non-empty stages (cap <
 * 0), or the least sum of squared stage costs with none above cap (INFINITY: none fits);
 * end[j][g] the end of its first stage, the earliest among equals. */
static double cut_table(const double *suffix, int G, int k, double cap, double *best, int *end)
{
    for (int g = 0; g <= G; g++) {
        double all = suffix[g];
        best[g] = cap < 0 ? all : all <= cap ? all * all : INFINITY;
    }
    for (int j = 1; j < k; j++)
        for (int g = 0; g + j < G; g++) {
            double b = INFINITY;
            end[j * (G + 1) + g] = g + 1;
            for (int e = g + 1; e <= G - j; e++) {
                double here = suffix[g] - suffix[e], rest = best[(j - 1) * (G + 1) + e], c;
                if (cap < 0)
                    c = here > rest ? here : rest;
                else if (here > cap)
                    break;
                else
                    c = here * here + rest;
                if (c < b) {
                    b = c;
                    end[j * (G + 1) + g] = e;
                }
            }
            best[j * (G + 1) + g] = b;
        }
    return best[(k - 1) * (G + 1)];
}

static void best_cut_solve(const double *cost, int G, int k, int *cuts)
{
    double *best = dt_malloc(sizeof(double) * (size_t)(k * (G + 1)));
    int *end = dt_malloc(sizeof(int) * (size_t)(k * (G + 1)));
    double *suffix = dt_malloc(sizeof(double) * (size_t)(G + 1));
    suffix[G] = 0;
    for (int g = G - 1; g >= 0; g--)
        suffix[g] = suffix[g + 1] + cost[g];
    double largest = cut_table(suffix, G, k, -1, best, end);
    /* the same largest, up to the rounding of sums taken in another order */
    cut_table(suffix, G, k, largest * (1 + 1e-9), best, end);
    for (int j = k - 1, g = 0; j > 0; j--) {
        g = end[j * (G + 1) + g];
        cuts[k - 1 - j] = g;
    }
    free(best);
    free(end);
    free(suffix);
}

void pipe_cut_stages(pipe_plan_t *plan, const double *cost, const int *start, int G,
                     int n_layers)
{
    DT_ASSERT(plan->C <= G); /* checked with the scenario */
    int cuts[PIPE_MAX_CHUNKS];
    best_cut(cost, G, plan->C, cuts);
    plan->first[0] = 0;
    for (int c = 1; c < plan->C; c++)
        plan->first[c] = start[cuts[c - 1]];
    plan->first[plan->C] = n_layers;
}

/* What a member of a tensor group of T holds and computes of a layer split so: a split
 * layer's 1/T, a replicated one's whole or, under sequence parallelism, 1/T too. */
static double split_share(const pipe_plan_t *plan, sim_split_t split)
{
    return split != SIM_SPLIT_NONE || plan->sp ? 1.0 / plan->T : 1.0;
}

/* Expert parallelism: the parameters a member holds of layer l (1/E of a routed layer's),
 * and the factor on its FLOPs (the busiest member's share of a routed layer's tokens). */
static size_t expert_held(const pipe_plan_t *plan, const sim_profile_layer_t *l, size_t n)
{
    return plan->E > 1 && l->experts ? (n + (size_t)plan->E - 1) / (size_t)plan->E : n;
}

static double expert_load(const pipe_plan_t *plan, const sim_profile_layer_t *l)
{
    return plan->E > 1 && l->experts ? plan->imbalance : 1.0;
}

/* Tensor parallelism: the stages' FLOPs, parameters, kept outputs and activations sent on
 * as a member of a tensor group has them, and each layer's FLOPs and all-reduces. A row or
 * vocab layer's output is the all-reduced whole, kept whole unless sequence parallelism
 * splits it; so are the checkpoints at the cuts (model.recompute = full). Recomputation
 * (Korthikanti et al. 2022): selective recomputes a member's share of each attention core
 * in its backward pass (no all-reduce: the heads are the member's own); full re-runs the
 * stage's forward pass before its backward pass, with its all-reduces (tp_pass). */
static void plan_split(pipe_plan_t *plan, const sim_model_profile_t *p, sim_recompute_t rc)
{
    int L = p->n_layers, T = plan->T;
    plan->lf = dt_calloc((size_t)L, sizeof(double));
    plan->lb = dt_calloc((size_t)L, sizeof(double));
    plan->red_f = dt_calloc((size_t)L, sizeof(double));
    plan->red_b = dt_calloc((size_t)L, sizeof(double));
    double *kept = dt_calloc((size_t)L, sizeof(double)); /* a member's share of each output */
    size_t off = 0;
    for (int s = 0; s < plan->C; s++) { /* s: a chunk (V = 1: a stage) */
        plan->fwd[s] = plan->bwd[s] = 0;
        plan->p0[s] = off;
        plan->pe[s] = 0;
        for (int i = plan->first[s]; i < plan->first[s + 1]; i++) {
            const sim_profile_layer_t *l = &p->layers[L - 1 - i];
            double share = split_share(plan, l->split) * expert_load(plan, l);
            int whole_out = l->split == SIM_SPLIT_ROW || l->split == SIM_SPLIT_VOCAB;
            plan->lf[i] = l->forward_flops * share;
            plan->lb[i] = l->backward_flops * share;
            if (rc == SIM_RECOMPUTE_SELECTIVE && sim_profile_recomputed(p, i, rc))
                plan->lb[i] += plan->lf[i];
            plan->fwd[s] += plan->lf[i];
            plan->bwd[s] += plan->lb[i];
            kept[i] = whole_out && !plan->sp ? 1.0 : share;
            size_t held = expert_held(plan, l, l->split ? (l->params + (size_t)T - 1) /
                                                           (size_t)T : l->params);
            off += held;
            plan->pe[s] += l->experts && plan->E > 1 ? held : 0;
            if (l->split == SIM_SPLIT_COLUMN)
                plan->red_b[i] = l->reduce;
            else
                plan->red_f[i] = l->reduce;
        }
        if (rc == SIM_RECOMPUTE_FULL)
            plan->bwd[s] += plan->fwd[s];
        plan->act[s] = sim_profile_activations_split(p, plan->first[s], plan->first[s + 1], rc,
                                                     kept, plan->sp ? 1.0 / T : 1.0,
                                                     &plan->act_piece[s]);
        plan->p1[s] = off;
        if (plan->sp)
            plan->out[s] = (plan->out[s] + (size_t)T - 1) / (size_t)T;
    }
    free(kept);
}

int pipe_context(const scenario_t *sc)
{
    return (int)scenario_own(sc, "context")->l;
}

/* Context parallelism (strategy.context = cp): a member of a context group holds the whole
 * of its chunks' weights and 1/cp of each micro-batch's sequence (Megatron-LM's
 * load-balanced chunks under the causal mask, so 1/cp of the attention's FLOPs too): 1/cp of
 * every layer's FLOPs, kept outputs, activations sent between stages and tensor
 * all-reduces. Called after plan_profile (and plan_split). */
static void plan_context_split(pipe_plan_t *plan)
{
    double cp = plan->cp;
    for (int c = 0; c < plan->C; c++) {
        plan->fwd[c] /= cp;
        plan->bwd[c] /= cp;
        plan->act[c] /= cp;
        plan->act_piece[c] /= cp;
        plan->out[c] = (plan->out[c] + (size_t)plan->cp - 1) / (size_t)plan->cp;
    }
    int L = plan->first[plan->C];
    for (int i = 0; plan->T > 1 && i < L; i++) {
        plan->lf[i] /= cp;
        plan->lb[i] /= cp;
        plan->red_f[i] /= cp;
        plan->red_b[i] /= cp;
    }
}

/* The key and value elements per token of the attention core at forward index j: the
 * query, key and value projections (q, k, v apart or fused) are the GEMMs between it and
 * the layer before them that is not one (the norm; dtsim profile transformer's layout),
 * whose outputs add up to (heads + 2 kv_heads) x head_dim; heads x head_dim alone
 * (multi-head attention) where they add up to less. */
static double kv_per_token(const sim_model_profile_t *p, int j)
{
    const sim_profile_layer_t *a = &p->layers[p->n_layers - 1 - j];
    double q = a->dim[0] * a->dim[3], n = 0;
    for (int i = j - 1; i >= 0 && p->layers[p->n_layers - 1 - i].op == SIM_OP_GEMM; i--)
        n += p->layers[p->n_layers - 1 - i].dim[1];
    return n > q ? (n - q) / 2 : q;
}

double pipe_context_step(const scenario_t *sc, int S, int T, int cp, double bytes)
{
    return pipe_ring_step(sc, S * T, cp, bytes);
}

double pipe_ring_step(const scenario_t *sc, int stride, int cp, double bytes)
{
    int hosts = (int)(pipe_stages(sc) * pipe_replicas(sc) * pipe_tensor(sc)) * pipe_context(sc);
    double t = sim_platform_ring_step_seconds(sc, 0, (cp - 1) * stride, bytes);
    sim_net_model_t model = scenario_network_model(sc);
    if (t >= 0 || model == SIM_NET_SMPI || model == SIM_NET_TCP ||
        (sc->platform != SIM_PLATFORM_MULTI_RACK && sc->platform != SIM_PLATFORM_STAR))
        return t;
    /* a ring across racks: every host of a rack takes part in its own group's step at once;
     * a flow that leaves the rack crosses its host's link, the rack's uplink up, the other
     * rack's down and that host's link, and shares the uplink with the rack's other
     * outgoing flows (counted on rack 0: the racks are alike); with cross traffic each
     * flow's acknowledgements weigh 0.05 of it on the reverse direction. Here (and in one
     * rack under LV08 where it binds) the TCP window's bound, gamma / (2 x the route's
     * latency), is left out: it binds at WAN latencies */
    int out = 0;
    if (sc->platform == SIM_PLATFORM_MULTI_RACK) {
        int racks = (int)sc->racks < hosts ? (int)sc->racks : hosts, in_rack = hosts / racks;
        for (int h = 0; h < in_rack; h++) {
            int k = h / stride % cp, next = k + 1 < cp ? h + stride : h - (cp - 1) * stride;
            out += next >= in_rack;
        }
    }
    int lv08 = model == SIM_NET_LV08;
    double lat = (2 * sc->latency + (out ? 2 * sc->uplink_latency : 0)) * (lv08 ? 13.01 : 1.0);
    double rate = (out ? fmin(sc->bandwidth, sc->uplink_bandwidth / out) : sc->bandwidth) *
                  (lv08 ? 0.97 : 1.0) / (sc->crosstraffic ? 1.05 : 1.0);
    return lat + bytes / rate;
}

/* Ring attention's key/value exchange (Megatron-LM's and Transformer Engine's
 * AttnFuncWithCPAndKVP2P), per attention core and micro-batch of b samples, as a member
 * sees it. Forward: cp steps of attention, each over one chunk of keys (1/cp of the
 * member's attention FLOPs, a), the first cp - 1 overlapped with sending the chunk on and
 * receiving the next, x = 2 x keys/cp x kv_heads x head_dim x b values: the exchange adds
 * (cp-1) max(0, t(x) - a), t the context ring's step (pipe_context_step). Backward: the
 * key/value chunks travel again with the partial sums of their gradients (dK, dV): the
 * first step sends K, V only, the next cp - 2 both (2 x), the last dK, dV only, each
 * overlapped with a step of the backward attention a_b: 2 max(0, t(x) - a_b) + (cp-2)
 * max(0, t(2x) - a_b). A recomputed attention core (model.recompute) exchanges its
 * forward's again in the backward pass. Under tensor parallelism a member holds
 * kv_heads / T of the heads (at least one, as Megatron-LM replicates them). The
 * exchange's links are assumed free of other traffic. */
static void plan_context_exchange(pipe_plan_t *plan, const sim_run_t *run)
{
    const sim_model_profile_t *p = &run->profile;
    const scenario_t *sc = run->sc;
    int L = p->n_layers, cp = plan->cp;
    double b = plan->micro, speed = sc->device_flops;
    for (int c = 0; c < plan->C; c++) {
        plan->cx_f[c] = plan->cx_b[c] = plan->cx_bytes_f[c] = plan->cx_bytes_b[c] = 0;
        for (int i = plan->first[c]; i < plan->first[c + 1]; i++) {
            const sim_profile_layer_t *l = &p->layers[L - 1 - i];
            if (l->op != SIM_OP_ATTENTION)
                continue;
            double kv = kv_per_token(p, i), share = 1.0;
            if (plan->T > 1 && l->split != SIM_SPLIT_NONE) {
                kv = fmax(kv / plan->T, l->dim[3]);
                share = 1.0 / plan->T;
            }
            double x = 2.0 * l->dim[2] / cp * kv * b * run->value_bytes;
            double a = l->forward_flops * share * b / cp / cp / speed;
            double ab = l->backward_flops * share * b / cp / cp / speed;
            double t1 = pipe_context_step(sc, plan->S, plan->T, cp, x);
            double t2 = pipe_context_step(sc, plan->S, plan->T, cp, 2 * x);
            DT_ASSERT(t1 >= 0 && t2 >= 0); /* pipe_context_check refuses the others */
            double f = (cp - 1) * fmax(0, t1 - a);
            plan->cx_f[c] += f;
            plan->cx_bytes_f[c] += (cp - 1) * x;
            plan->cx_b[c] += 2 * fmax(0, t1 - ab) + (cp - 2) * fmax(0, t2 - ab);
            plan->cx_bytes_b[c] += 2.0 * (cp - 1) * x;
            if (sim_profile_recomputed(p, i, sc->recompute)) {
                plan->cx_b[c] += f;
                plan->cx_bytes_b[c] += (cp - 1) * x;
            }
        }
    }
}

/* A timing-only plan: the profile's layers in forward order, cut where it allows; the
 * forward FLOPs model.recompute recomputes are part of the backward pass. */
static void plan_profile(pipe_plan_t *plan, const sim_model_profile_t *p, sim_recompute_t r)
{
    int L = p->n_layers, G = 0;
    int *start = dt_malloc(sizeof(int) * (size_t)(L + 1));
    double *cost = dt_calloc((size_t)L, sizeof(double));
    for (int i = 0; i < L; i++) {
        const sim_profile_layer_t *l = &p->layers[L - 1 - i];
        if (i == 0 || p->layers[L - i].cut > 0)
            start[G++] = i;
        cost[G - 1] += l->forward_flops + l->backward_flops;
    }
    pipe_cut_stages(plan, cost, start, G, L);
    size_t off = 0;
    if (plan->E > 1)
        plan->a2a = dt_calloc((size_t)L, sizeof(double));
    for (int s = 0; s < plan->C; s++) { /* s: a chunk (V = 1: a stage) */
        plan->p0[s] = off;
        plan->pe[s] = 0;
        for (int i = plan->first[s]; i < plan->first[s + 1]; i++) {
            const sim_profile_layer_t *l = &p->layers[L - 1 - i];
            plan->fwd[s] += l->forward_flops * expert_load(plan, l);
            plan->bwd[s] += l->backward_flops * expert_load(plan, l);
            size_t held = expert_held(plan, l, l->params);
            off += held;
            if (plan->E > 1 && l->experts) {
                plan->pe[s] += held;
                plan->a2a[i] = l->a2a;
            }
        }
        plan->bwd[s] += sim_profile_recompute_flops(p, plan->first[s], plan->first[s + 1], r);
        plan->act[s] = sim_profile_activations(p, plan->first[s], plan->first[s + 1], r,
                                               &plan->act_piece[s]);
        plan->p1[s] = off;
        plan->out[s] = s + 1 < plan->C ? (size_t)p->layers[L - plan->first[s + 1]].cut : 0;
    }
    free(start);
    free(cost);
    if (plan->T > 1)
        plan_split(plan, p, r);
    if (plan->cp > 1)
        plan_context_split(plan);
}

/* A plan of a real model (its workspaces: plan_make). */
static void plan_model(pipe_plan_t *plan, const sim_run_t *run)
{
    const trainer_model_t *m = &run->model;
    if (m->cfg.arch == TRAINER_ARCH_GPT) {
        pipe_gpt_layout(plan, run);
        return;
    }
    /* groups: a weight layer and the layers after it up to the next weight layer (the
     * input-side layers before the first weight layer, if any, join the first group) */
    int start[TRAINER_MAX_LAYERS + 1], G = 0;
    double cost[TRAINER_MAX_LAYERS] = {0};
    for (int i = 0; i < m->n_layers; i++) {
        if (has_weights(&m->layers[i]) || G == 0) {
            start[G] = G == 0 ? 0 : i;
            G++;
        }
        trainer_flops_t f = trainer_model_layer_flops(m, i);
        cost[G - 1] += f.forward + f.backward;
    }
    start[G] = m->n_layers;
    pipe_cut_stages(plan, cost, start, G, m->n_layers);
    for (int s = 0; s < plan->C; s++) { /* s: a chunk (V = 1: a stage) */
        plan->p0[s] = SIZE_MAX;
        plan->p1[s] = 0;
        for (int i = plan->first[s]; i < plan->first[s + 1]; i++) {
            const trainer_layer_t *l = &m->layers[i];
            trainer_flops_t f = trainer_model_layer_flops(m, i);
            plan->fwd[s] += f.forward;
            plan->bwd[s] += f.backward;
            if (has_weights(l)) {
                size_t lo = l->w_off < l->b_off ? l->w_off : l->b_off;
                size_t hi = l->w_off + l->w_len > l->b_off + l->b_len ? l->w_off + l->w_len
                                                                      : l->b_off + l->b_len;
                plan->p0[s] = lo < plan->p0[s] ? lo : plan->p0[s];
                plan->p1[s] = hi > plan->p1[s] ? hi : plan->p1[s];
            }
        }
        DT_ASSERT(s == 0 || plan->p0[s] == plan->p1[s - 1]); /* slices in layer order */
        int lo = plan->first[s], hi = plan->first[s + 1];
        plan->act[s] = (double)trainer_model_activation_floats(m, lo, hi);
        plan->out[s] = s + 1 < plan->C ? m->layers[hi - 1].out_size : 0;
    }
    /* the loss runs on the last chunk: 5 FLOPs per logit forward, 2 backward */
    plan->fwd[plan->C - 1] += 5.0 * m->classes;
    plan->bwd[plan->C - 1] += 2.0 * m->classes;
}

/* The chunks: their layers, FLOPs, parameters and activations. */
void pipe_plan_layout(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    plan->S = (int)pipe_stages(sc);
    plan->M = (int)pipe_micro_batches(sc);
    plan->micro = (int)(sc->batch / pipe_micro_batches(sc));
    plan->cp = pipe_context(sc);
    plan->D = (int)pipe_replicas(sc) * plan->cp; /* a context group's members: replicas */
    /* virtual_stages counts only under the interleaved schedule (a sweep over schedules
     * may set it for all) */
    plan->V = pipe_schedule_of(sc) == SIM_PIPE_INTERLEAVED
                  ? (int)scenario_own(sc, "virtual_stages")->l
                  : 1;
    plan->C = plan->S * plan->V;
    plan->T = (int)pipe_tensor(sc);
    plan->sp = plan->T > 1 && scenario_own(sc, "sequence_parallel")->i;
    plan->zero = pipe_sharded(sc) ? (int)scenario_own(sc, "zero_stage")->l : 0;
    /* the real gpt's stages reduce their slices after each backward pass: its tied wte has
     * no per-layer buckets to reduce behind the pass (pipeline_gpt.c) */
    int real_gpt = !run->timing_only && sc->model.arch == TRAINER_ARCH_GPT;
    plan->zero_overlap = plan->zero >= 2 && plan->D > 1 && !real_gpt &&
                         scenario_own(sc, "zero_grad_overlap")->i;
    plan->zero_prefetch = plan->zero >= 3 && plan->D > 1 && scenario_own(sc, "zero_prefetch")->i;
    plan->rerun_fwd = plan->T > 1 && sc->recompute == SIM_RECOMPUTE_FULL;
    plan->E = run->timing_only ? (int)scenario_own(sc, "expert")->l : 1;
    plan->imbalance = scenario_own(sc, "expert_imbalance")->d;
    DT_ASSERT(plan->S <= PIPE_MAX_STAGES && plan->C <= PIPE_MAX_CHUNKS &&
              plan->D * plan->S * plan->T == run->n_workers);
    if (run->timing_only)
        plan_profile(plan, &run->profile, run->sc->recompute);
    else
        plan_model(plan, run);
}

/* Layer i's gradient slice in the stage's layout, given the slice's end top (the layers
 * above i: plan_profile, plan_split and plan_model lay a stage's out in forward order), and
 * its backward FLOPs per sample as a member computes them. */
static void layer_grad(const pipe_plan_t *plan, const sim_run_t *run, int i, size_t top,
                       sim_grad_segment_t *seg)
{
    if (run->timing_only) {
        const sim_model_profile_t *p = &run->profile;
        const sim_profile_layer_t *l = &p->layers[p->n_layers - 1 - i];
        size_t n = plan->T > 1 && l->split ? (l->params + (size_t)plan->T - 1) / (size_t)plan->T
                                           : l->params;
        *seg = (sim_grad_segment_t){top - n, top,
                                    plan->T > 1 ? plan->lb[i] : l->backward_flops / plan->cp};
        return;
    }
    const trainer_layer_t *l = &run->model.layers[i];
    seg->flops = trainer_model_layer_flops(&run->model, i).backward;
    seg->lo = seg->hi = top;
    if (!has_weights(l))
        return;
    seg->lo = l->w_off < l->b_off ? l->w_off : l->b_off;
    DT_ASSERT(l->w_len + l->b_len == top - seg->lo); /* weights and bias, adjacent */
}

/* bucket_mb with replicas: each chunk's layers in backward order as gradient segments,
 * grouped into buckets as the allreduce strategy groups the whole model's (bucket.h). A
 * layer without parameters adds its FLOPs to the next gradient; the chunk's backward FLOPs
 * beyond its layers' (the loss, model.recompute's forward passes) come before the first.
 * A stage's stream reduces its chunks' buckets in one list, its last chunk's first: the
 * chunks' last backward passes of a step come in that order (pipeline.c's schedule). */
static void plan_buckets(pipe_plan_t *plan, const sim_run_t *run)
{
    int L = run->timing_only ? run->profile.n_layers : run->model.n_layers, *layer;
    sim_grad_segment_t *seg = dt_calloc((size_t)L, sizeof *seg);
    layer = dt_calloc((size_t)L, sizeof *layer);
    plan->bk_end = dt_calloc((size_t)L, 1);
    plan->bucketed = 1;
    for (int s = 0; s < plan->C; s++) { /* s: a chunk (V = 1: a stage) */
        int n = 0;
        size_t top = plan->p1[s];
        double carry = 0, sum = 0;
        for (int i = plan->first[s + 1] - 1; i >= plan->first[s]; i--) {
            layer_grad(plan, run, i, top, &seg[n]);
            carry += seg[n].flops;
            sum += seg[n].flops;
            if (seg[n].hi == seg[n].lo)
                continue;
            seg[n].flops = carry;
            top = seg[n].lo;
            layer[n++] = i;
            carry = 0;
        }
        DT_ASSERT(top == plan->p0[s] || n == 0);
        if (n) {
            seg[n - 1].flops += carry;
            seg[0].flops += plan->bwd[s] - sum;
        }
        double cap = plan->zero_overlap
                         ? pipe_zero_bucket_bytes(run->sc, run->value_bytes, plan->D)
                         : run->sc->bucket_mb * 1e6;
        sim_bucket_list_make(&plan->bk[s], seg, n, cap, run->value_bytes);
        for (int k = 0; k < plan->bk[s].n; k++)
            plan->bk_end[layer[plan->bk[s].last[k]]] = 1;
    }
    free(seg);
    free(layer);
    for (int s = 0; s < plan->S; s++) {
        sim_bucket_list_t *l = &plan->bk_stage[s];
        for (int v = 0; v < plan->V; v++)
            l->n += plan->bk[v * plan->S + s].n;
        /* the stream reads the slices alone: the FLOPs are charged from each chunk's list */
        l->lo = dt_calloc((size_t)l->n + 1, sizeof(size_t));
        l->hi = dt_calloc((size_t)l->n + 1, sizeof(size_t));
        for (int v = plan->V - 1, n = 0; v >= 0; v--) {
            const sim_bucket_list_t *b = &plan->bk[v * plan->S + s];
            for (int k = 0; k < b->n; k++, n++) {
                l->lo[n] = b->lo[k];
                l->hi[n] = b->hi[k];
            }
        }
    }
}

/* The layout, a workspace per micro-batch of a real model, the groups of a hybrid. */
int pipe_nccl_algo(const scenario_t *sc) { return sim_nccl_algo_key(sc); }

int pipe_nccl_proto(const scenario_t *sc) { return sim_nccl_proto_key(sc); }

/* strategy.tensor_comm = nccl on the device's NVLink: the catalogue's bus bandwidths and
 * NCCL's latencies, whatever the platform's links (the server's NVLink is not one of them);
 * 0 where the device has no NVLink figure (check() says so first). */
static int plan_nccl_device(pipe_plan_t *plan, const scenario_t *sc)
{
    const sim_device_profile_t *d = scenario_device(sc);
    if (!d || !(d->value[SIM_DEV_NVLINK_BUSBW] > 0))
        return 0;
    double nvls = d->value[SIM_DEV_NVLS_BUSBW];
    sim_nccl_nvlink(&plan->nccl, plan->T, d->value[SIM_DEV_NVLINK_BUSBW], nvls > 0 ? nvls : 0);
    return 1;
}

/* strategy.tensor_comm = formula (or nccl on the platform's links): every tensor group must
 * lie in one cluster of a star or multi-rack platform under CM02 or LV08 without faults,
 * where a ring step has a closed form (sim_platform_ring_step_seconds), the same for every
 * group; else messages, and why. nccl on the device's NVLink needs no faults only. */
static void plan_formula(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    int comm = scenario_own(sc, "tensor_comm")->i;
    if (plan->T < 2 || comm == PIPE_TP_MESSAGES)
        return;
    if (scenario_has_faults(sc)) {
        plan->tp_why = "faults are detected by messages";
        return;
    }
    int device = comm == PIPE_TP_NCCL &&
                 scenario_own(sc, "nccl_links")->i == PIPE_LINKS_DEVICE;
    if (device) {
        if (!plan_nccl_device(plan, sc)) {
            plan->tp_why = "the device has no NVLink figure (nvlink_busbw)";
            return;
        }
    } else {
        double big = 1e9;
        plan->tp_a = sim_platform_ring_step_seconds(sc, 0, plan->T - 1, 0);
        double b = sim_platform_ring_step_seconds(sc, 0, plan->T - 1, big);
        for (int g = 1; g < plan->D * plan->S && plan->tp_a >= 0; g++)
            if (sim_platform_ring_step_seconds(sc, g * plan->T, g * plan->T + plan->T - 1, 0) !=
                plan->tp_a)
                plan->tp_a = -1;
        if (plan->tp_a < 0 || b < 0) {
            plan->tp_why = "no closed form: a tensor group outside one cluster of a star or "
                           "multi-rack platform, the SMPI model, or LV08 where the TCP window "
                           "bounds a flow";
            return;
        }
        plan->tp_c = (b - plan->tp_a) / big;
        if (comm == PIPE_TP_NCCL)
            sim_nccl_links(&plan->nccl, plan->T, plan->tp_a, plan->tp_c);
    }
    if (comm == PIPE_TP_NCCL) {
        plan->tp_nccl = 1;
        plan->nccl_device = device;
        plan->nccl_algo = pipe_nccl_algo(sc);
        plan->nccl_proto = pipe_nccl_proto(sc);
    }
    plan->tp_formula = 1;
    plan->tp_overlap = scenario_own(sc, "tensor_overlap")->i;
}

double pipe_overlap_exposed(double c, double m, int T)
{
    return m / T + (T - 1.0) / T * (m > c ? m - c : 0.0);
}

/* strategy.tensor_members = one: the T members of a tensor group do the same work at the
 * same times when their all-reduces are in closed form (plan_formula) on a symmetric
 * network, so member 0 stands for all T. On a star every member's flows run on links of
 * its own: member 0's messages are a member's (fold 1). On a multi-rack platform whose
 * racks each hold one tensor group, every message leaves the rack, and the T members'
 * parallel flows share its uplink: one flow of T times the bytes takes the same time under
 * max-min sharing when that flow is bounded by the uplinks alone, i.e. a host's link is at
 * least as fast as an uplink and the TCP window (gamma / (2 x the route's latency)) does not
 * bound it either (fold T). Where those do not hold but each rack holds whole tensor
 * groups (several a rack, host links slower than the uplink, the window binding), under
 * CM02 member 0's own links are made T times as fast and the TCP window T times as wide
 * (widen): every flow of the run is then one of T identical flows, each constraint of
 * the sharing (a member's link, the shared uplinks and backbones, the window) scaled
 * alike, so its rate is T times each member's (fold T). LV08 weighs a flow by its links'
 * bandwidth, which the widened links would change. Else every member, and why. */
static void plan_members(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    plan->fold = 1;
    if (plan->T < 2 || scenario_own(sc, "tensor_members")->i != PIPE_MEMBERS_ONE)
        return;
    if (!plan->tp_formula) {
        plan->one_why = plan->tp_why ? plan->tp_why
                                     : "tensor_comm = messages runs each member's all-reduces";
        return;
    }
    sim_net_model_t model = scenario_network_model(sc);
    if (model == SIM_NET_SMPI || model == SIM_NET_TCP) {
        plan->one_why = model == SIM_NET_SMPI ? "SMPI's factors depend on a message's size"
                                              : "tcp's windows depend on each connection's "
                                                "messages";
        return;
    }
    if (plan->E > 1) {
        plan->one_why = "expert parallelism's all-to-alls run for every member";
        return;
    }
    if (plan->cp > 1) {
        plan->one_why = "context parallelism's exchanges run for every member";
        return;
    }
    if (sc->platform == SIM_PLATFORM_MULTI_RACK) {
        long hosts = (long)plan->D * plan->S * plan->T;
        double route = 2 * (sc->latency + sc->uplink_latency) *
                       (model == SIM_NET_LV08 ? 13.01 : 1.0);
        double gamma = sim_platform_tcp_gamma();
        const char *why = NULL;
        if (sc->racks * plan->T != hosts)
            why = "a rack holds other hosts than one tensor group";
        else if (sc->bandwidth < sc->uplink_bandwidth)
            why = "a host's link is slower than its rack's uplink";
        else if (route > 0 && gamma > 0 && gamma / (2 * route) < sc->uplink_bandwidth)
            why = "the TCP window bounds a flow below the uplink's bandwidth";
        if (why && model != SIM_NET_CM02) {
            plan->one_why = why; /* LV08: a flow's weight depends on its links' bandwidth */
            return;
        }
        for (int g = 0; why && g < plan->D * plan->S; g++)
            if (sim_platform_ring_step_seconds(sc, g * plan->T, g * plan->T + plan->T - 1,
                                               0) < 0) {
                plan->one_why = "a tensor group spans two racks";
                return;
            }
        plan->widen = why != NULL;
        plan->fold = plan->T;
    } else if (sc->platform != SIM_PLATFORM_STAR) {
        plan->one_why = "the platform is neither a star nor multi-rack";
        return;
    }
    plan->one = 1;
}

/* strategy.data_members = one: the D replicas of a pipeline do the same work at the same
 * times when nothing passes between them as a message (their collectives in closed form:
 * dp_comm = formula or nccl; no expert all-to-alls) and no link carries two replicas'
 * flows (a star's links are each host's own, its switch never blocks; on a multi-rack
 * platform each rack holds hosts of one replica, and the core router has no link of its
 * own). Replica 0 then stands for all D, exactly: the others' rows are its own, its bytes
 * count D times. Else every replica, and why. */
static void plan_replicas(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    if (plan->D < 2 || scenario_own(sc, "data_members")->i != PIPE_MEMBERS_ONE)
        return;
    long hosts = (long)run->n_workers, racks = sc->racks < hosts ? sc->racks : hosts;
    long ST = (long)plan->S * plan->T;
    const char *why = NULL;
    if (!plan->dp_formula && !plan->dp_nccl)
        why = plan->dp_why ? plan->dp_why : "dp_comm = messages runs each replica's collectives";
    else if (plan->dp_formula && !plan->zero && sc->algorithm != SIM_ALLREDUCE_RING &&
             sc->algorithm < SIM_ALLREDUCE_HIERARCHICAL)
        why = "dp_comm = formula times the ring alone; this algorithm's all-reduces are "
              "messages";
    else if (plan->E > 1)
        why = "expert parallelism's all-to-alls pass between replicas";
    else if (sc->platform == SIM_PLATFORM_MULTI_RACK &&
             (hosts % racks != 0 || ST % (hosts / racks) != 0))
        why = "a rack holds hosts of more than one replica";
    else if (sc->platform != SIM_PLATFORM_MULTI_RACK && sc->platform != SIM_PLATFORM_STAR)
        why = "the platform is neither a star nor multi-rack";
    if (why) {
        plan->rep_why = why;
        return;
    }
    for (int k = 0; plan->dp_nccl && k < plan->S * plan->T; k++)
        plan->dp_group[k].quorum = 1; /* its member in replica 0 arrives for all */
    plan->rep_one = 1;
}

pipe_plan_t *pipe_plan_make(sim_run_t *run)
{
    pipe_plan_t *plan = dt_calloc(1, sizeof *plan);
    pipe_plan_layout(plan, run);
    /* expert parallelism reduces its two kinds of gradients after the step (pipeline.c) */
    if ((run->sc->bucket_mb > 0 && plan->D > 1 && !plan->zero && plan->E == 1) ||
        plan->zero_overlap)
        plan_buckets(plan, run);
    if (!run->timing_only) {
        plan->ws = dt_calloc((size_t)(plan->D * plan->M), sizeof(trainer_workspace_t));
        for (int k = 0; k < plan->D * plan->M; k++)
            trainer_workspace_init(&plan->ws[k], run->be, &run->model, plan->micro);
        if (run->model.cfg.arch == TRAINER_ARCH_GPT)
            pipe_gpt_groups(plan, run);
    }
    plan_formula(plan, run);
    pipe_plan_dp_formula(plan, run);
    if (plan->cp > 1)
        plan_context_exchange(plan, run);
    plan_members(plan, run);
    int S = plan->S, T = plan->T, D = plan->D;
    plan->group = dt_calloc((size_t)(S * T), sizeof(sim_group_t));
    for (int k = 0; k < S * T; k++) { /* k = s T + r: that member in every replica */
        plan->group[k].size = D;
        plan->group[k].members = dt_calloc((size_t)D, sizeof(sim_node_t *));
        for (int d = 0; d < D; d++)
            plan->group[k].members[d] = &run->workers[d * S * T + k];
    }
    if (plan->E > 1)
        pipe_plan_experts(plan, run);
    if (T > 1) {
        plan->tp = dt_calloc((size_t)(D * S), sizeof(sim_group_t));
        for (int k = 0; k < D * S; k++) { /* k = d S + s */
            plan->tp[k].size = T;
            plan->tp[k].members = dt_calloc((size_t)T, sizeof(sim_node_t *));
            for (int r = 0; r < T; r++)
                plan->tp[k].members[r] = &run->workers[k * T + r];
        }
    }
    pipe_dp_plan(plan, run);
    plan_replicas(plan, run);
    return plan;
}
