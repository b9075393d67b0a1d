/* The pipeline's plan (pipe_plan_t): the layout of its chunks (what each computes, keeps
 * and sends per sample, a tensor group member's share: plan_split), the stages' gradient
 * buckets (plan_buckets), the workspaces and the groups; pipe_plan_make calls on the other
 * parts' plans (tensor.c, dp_comm.c, context.c, members.c, experts.c, gpt.c), where the
 * chunks cut is cut.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"
#include "platform.h"
#include "profile_memory.h"

/* The per-chunk and per-stage arrays, zeroed, for plan->C chunks on plan->S stages. */
static void plan_arrays(pipe_plan_t *plan)
{
    size_t chunks = (size_t)plan->C, stages = (size_t)plan->S;
    plan->first = dt_calloc(chunks + 1, sizeof(int));
    plan->fwd = dt_calloc(chunks, sizeof(double));
    plan->bwd = dt_calloc(chunks, sizeof(double));
    plan->p0 = dt_calloc(chunks, sizeof(size_t));
    plan->p1 = dt_calloc(chunks, sizeof(size_t));
    plan->act = dt_calloc(chunks, sizeof(double));
    plan->act_piece = dt_calloc(chunks, sizeof(double));
    plan->out = dt_calloc(chunks, sizeof(size_t));
    plan->pe = dt_calloc(chunks, sizeof(size_t));
    plan->cx_f = dt_calloc(chunks, sizeof(double));
    plan->cx_b = dt_calloc(chunks, sizeof(double));
    plan->cx_bytes_f = dt_calloc(chunks, sizeof(double));
    plan->cx_bytes_b = dt_calloc(chunks, sizeof(double));
    plan->bk = dt_calloc(chunks, sizeof(sim_bucket_list_t));
    plan->bk_stage = dt_calloc(stages, sizeof(sim_bucket_list_t));
    plan->zjobs = dt_calloc(stages, sizeof(sim_bucket_list_t));
    plan->zkind = dt_calloc(stages, sizeof(char *));
    plan->zgather = dt_calloc(stages, sizeof(int *));
}

static void plan_arrays_free(pipe_plan_t *plan)
{
    free(plan->first);
    free(plan->fwd);
    free(plan->bwd);
    free(plan->p0);
    free(plan->p1);
    free(plan->act);
    free(plan->act_piece);
    free(plan->out);
    free(plan->pe);
    free(plan->cx_f);
    free(plan->cx_b);
    free(plan->cx_bytes_f);
    free(plan->cx_bytes_b);
    free(plan->bk);
    free(plan->bk_stage);
    free(plan->zjobs);
    free(plan->zkind);
    free(plan->zgather);
}

void pipe_plan_free(void *p)
{
    pipe_plan_t *plan = p;
    for (int m = 0; plan->ws && m < plan->D * plan->M; m++)
        trainer_workspace_free(&plan->ws[m]);
    free(plan->ws);
    if (plan->tg) /* made in a run (sim_current's), never for memory() */
        pipe_gpt_tensor_free(plan, sim_current->be);
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
    for (int k = 0; plan->emb && k < plan->D * plan->T; k++)
        free(plan->emb[k].members);
    free(plan->emb);
    free(plan->group);
    for (int g = 0; g < plan->n_norm; g++)
        free(plan->norm[g].members);
    free(plan->norm);
    free(plan->tp);
    free(plan->lf);
    free(plan->lb);
    free(plan->red_f);
    free(plan->red_b);
    for (int c = 0; plan->bk && c < plan->C; c++)
        sim_bucket_list_free(&plan->bk[c]);
    for (int s = 0; plan->bk_stage && s < plan->S; s++) {
        sim_bucket_list_free(&plan->bk_stage[s]);
        sim_bucket_list_free(&plan->zjobs[s]);
        free(plan->zkind[s]);
        free(plan->zgather[s]);
    }
    free(plan->bk_end);
    plan_arrays_free(plan);
    free(plan);
}

static int has_weights(const trainer_layer_t *l)
{
    return l->kind == TRAINER_LAYER_DENSE || l->kind == TRAINER_LAYER_CONV;
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
 * stage's forward pass before its backward pass, with its all-reduces (pipe_tp_pass). */
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
            size_t held = expert_held(
                plan, l, l->split ? (l->params + (size_t)T - 1) / (size_t)T : l->params);
            off += held;
            plan->pe[s] += l->experts && plan->E > 1 ? held : 0;
            if (l->split == SIM_SPLIT_COLUMN)
                plan->red_b[i] = l->reduce;
            else
                plan->red_f[i] = l->reduce;
        }
        for (int i = plan->first[s]; i < plan->first[s + 1] && plan->rerun_fwd; i++)
            if (i >= plan->rerun_lo && i < plan->rerun_hi)
                plan->bwd[s] += plan->lf[i];
        plan->act[s] =
            sim_profile_activations_split(p, plan->first[s], plan->first[s + 1], rc, kept,
                                          plan->sp ? 1.0 / T : 1.0, &plan->act_piece[s]);
        plan->p1[s] = off;
        if (plan->sp)
            plan->out[s] = (plan->out[s] + (size_t)T - 1) / (size_t)T;
    }
    free(kept);
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
        plan->act[s] =
            sim_profile_activations(p, plan->first[s], plan->first[s + 1], r, &plan->act_piece[s]);
        plan->p1[s] = off;
        plan->out[s] = s + 1 < plan->C ? (size_t)p->layers[L - plan->first[s + 1]].cut : 0;
    }
    free(start);
    free(cost);
    if (plan->T > 1)
        plan_split(plan, p, r);
    if (plan->cp > 1)
        pipe_plan_context_split(plan);
}

/* A plan of a real model (its workspaces: pipe_plan_make). */
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
     * no per-layer buckets to reduce behind the pass (gpt.c) */
    int real_gpt = !run->timing_only && sc->model.arch == TRAINER_ARCH_GPT;
    plan->zero_overlap =
        plan->zero >= 2 && plan->D > 1 && !real_gpt && scenario_own(sc, "zero_grad_overlap")->i;
    plan->zero_prefetch = plan->zero >= 3 && plan->D > 1 && scenario_own(sc, "zero_prefetch")->i;
    plan->rerun_fwd = plan->T > 1 && sc->recompute == SIM_RECOMPUTE_FULL;
    /* the real gpt's split stages keep whole messages: their all-gather would need a buffer
     * of its own, and nothing reads them */
    plan->scatter = plan->T > 1 && !plan->sp && run->timing_only && plan->S > 1;
    plan->E = run->timing_only ? (int)scenario_own(sc, "expert")->l : 1;
    plan->imbalance = scenario_own(sc, "expert_imbalance")->d;
    DT_ASSERT(plan->C <= PIPE_MAX_CHUNKS && plan->D * plan->S * plan->T == run->n_workers);
    plan_arrays(plan);
    plan->rerun_hi = run->timing_only ? 0 : run->model.n_layers;
    if (run->timing_only) {
        sim_profile_full_range(&run->profile, &plan->rerun_lo, &plan->rerun_hi);
        plan_profile(plan, &run->profile, run->sc->recompute);
    } else
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
 * chunks' last backward passes of a step come in that order (pipe_schedule). */
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
        double cap = plan->zero_overlap ? pipe_zero_bucket_bytes(run->sc, run->value_bytes, plan->D)
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

int pipe_nccl_algo(const scenario_t *sc)
{
    return sim_nccl_algo_key(sc);
}

int pipe_nccl_proto(const scenario_t *sc)
{
    return sim_nccl_proto_key(sc);
}

/* The layout, a workspace per micro-batch of a real model, the groups of a hybrid. */
pipe_plan_t *pipe_plan_make(sim_run_t *run)
{
    pipe_plan_t *plan = dt_calloc(1, sizeof *plan);
    pipe_plan_layout(plan, run);
    /* expert parallelism reduces its two kinds of gradients after the step (stage.c) */
    if ((run->sc->bucket_mb > 0 && plan->D > 1 && !plan->zero && plan->E == 1) ||
        plan->zero_overlap)
        plan_buckets(plan, run);
    if (!run->timing_only && plan->T > 1) { /* the real gpt split by tensor (check.c) */
        pipe_gpt_tensor_make(plan, run);
        pipe_gpt_groups(plan, run);
    } else if (!run->timing_only) {
        plan->ws = dt_calloc((size_t)(plan->D * plan->M), sizeof(trainer_workspace_t));
        for (int k = 0; k < plan->D * plan->M; k++)
            trainer_workspace_init(&plan->ws[k], run->be, &run->model, plan->micro);
        if (run->model.cfg.arch == TRAINER_ARCH_GPT)
            pipe_gpt_groups(plan, run);
    }
    pipe_plan_formula(plan, run);
    pipe_plan_dp_formula(plan, run);
    if (plan->cp > 1)
        pipe_plan_context_exchange(plan, run);
    pipe_plan_members(plan, run);
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
    /* model.clip_norm on a real model: who sums its squares with whom (stage.c) */
    if (!run->timing_only && run->sc->sgd.clip_norm > 0.0f) {
        int sharded = plan->zero && D > 1;
        plan->n_norm = sharded ? 1 : D;
        plan->norm = dt_calloc((size_t)plan->n_norm, sizeof(sim_group_t));
        for (int g = 0; g < plan->n_norm; g++) {
            int size = (sharded ? D : 1) * S * T;
            plan->norm[g].size = size;
            plan->norm[g].members = dt_calloc((size_t)size, sizeof(sim_node_t *));
            for (int k = 0; k < size; k++)
                plan->norm[g].members[k] = &run->workers[g * size + k];
        }
    }
    pipe_dp_plan(plan, run);
    pipe_plan_replicas(plan, run);
    return plan;
}
