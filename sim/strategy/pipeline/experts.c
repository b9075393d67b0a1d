/* Expert parallelism of a pipeline (strategy.expert; sim/docs/scale.md, Expert parallelism):
 * the keys' checks, the expert groups and the all-to-alls' closed form (pipe_plan_experts),
 * a MoE block's dispatch and combine (pipe_expert_alltoall), a stage's pass through them
 * (pipe_expert_pass), and what DeepSeek-V3's system changes about them: node-limited
 * routing (expert_nodes), FP8 dispatch (expert_dispatch) and DualPipe's overlap of one
 * micro-batch's all-to-alls with another's compute (expert_overlap). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pipeline_impl.h"
#include "platform.h"

enum { PIPE_DISPATCH_MODEL, PIPE_DISPATCH_FP8 }; /* strategy.expert_dispatch */

/* ---- checks -------------------------------------------------------------------------- */

/* expert: a profile's routed experts, split evenly over groups of replicas. */
static dt_status check_groups(const scenario_t *sc, long E, dt_err_t *err)
{
    char where[96];
    const char *k;
    if (!sc->profile_experts)
        return scenario_fail(sc, err, "strategy.expert",
                             "expert = %ld splits the routed experts of a model profile with an "
                             "[experts] section (dtsim profile transformer --experts); %s",
                             E, sc->profile[0] ? "this one has none" : "not a real model");
    if (pipe_replicas(sc) % E) {
        k = scenario_blame(sc, "strategy.expert", "strategy.data_parallel", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert = %ld groups the replicas: it must divide data_parallel = "
                             "%ld (%s)",
                             E, pipe_replicas(sc), where);
    }
    if (sc->profile_experts % E) {
        k = scenario_blame(sc, "strategy.expert", "model.arch", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert = %ld does not divide the profile's %d routed experts (%s)", E,
                             sc->profile_experts, where);
    }
    if (pipe_sharded(sc)) {
        k = scenario_blame(sc, "strategy.expert", "strategy.shard_optimizer", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert = %ld with shard_optimizer (ZeRO over the replicas) is not "
                             "modelled: the experts' shards would span other groups (%s)",
                             E, where);
    }
    if (scenario_own(sc, "context")->l > 1) {
        k = scenario_blame(sc, "strategy.expert", "strategy.context", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert = %ld with context = %ld is not modelled: expert groups "
                             "are consecutive replicas, and context members sit among them (%s)",
                             E, scenario_own(sc, "context")->l, where);
    }
    return DT_OK;
}

/* expert_overlap, expert_nodes, expert_dispatch: the all-to-alls in closed form (they
 * change its terms), expert > 1; overlap without tensor groups (a pass of a tensor group
 * waits its all-to-alls with its all-reduces); whole servers of expert_node_size members. */
static dt_status check_deepseek(const scenario_t *sc, long E, dt_err_t *err)
{
    char where[96];
    const char *k;
    const char *keys[] = {"expert_overlap", "expert_nodes", "expert_dispatch"};
    int given[3] = {scenario_own(sc, "expert_overlap")->i != 0,
                    scenario_own(sc, "expert_nodes")->l > 0,
                    scenario_own(sc, "expert_dispatch")->i != PIPE_DISPATCH_MODEL};
    for (int i = 0; i < 3; i++) {
        if (!given[i])
            continue;
        char key[48];
        snprintf(key, sizeof key, "strategy.%s", keys[i]);
        if (E < 2 || scenario_own(sc, "tensor_comm")->i == PIPE_TP_MESSAGES) {
            k = scenario_blame(sc, key, "strategy.tensor_comm", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "%s changes expert parallelism's all-to-alls in closed form: "
                                 "it needs expert > 1 and tensor_comm = formula or nccl "
                                 "(expert = %ld; %s)",
                                 keys[i], E, where);
        }
    }
    if (given[0] && pipe_tensor(sc) > 1) {
        k = scenario_blame(sc, "strategy.expert_overlap", "strategy.tensor", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert_overlap with tensor = %ld is not modelled: a tensor "
                             "group's pass waits its all-to-alls with its all-reduces (%s)",
                             pipe_tensor(sc), where);
    }
    long comm = scenario_own(sc, "expert_comm_sms")->l;
    if (comm > 0) {
        const sim_device_profile_t *d = scenario_device(sc);
        double sms = d ? d->value[SIM_DEV_SMS] : NAN;
        if (!scenario_own(sc, "expert_overlap")->i) {
            k = scenario_blame(sc, "strategy.expert_comm_sms", "strategy.expert_overlap", where,
                               sizeof where);
            return scenario_fail(sc, err, k,
                                 "expert_comm_sms = %ld: the SMs all-to-alls hold beside "
                                 "compute, which needs expert_overlap = yes (%s)",
                                 comm, where);
        }
        if (isnan(sms) || comm >= sms) {
            k = scenario_blame(sc, "strategy.expert_comm_sms", "cluster.device", where,
                               sizeof where);
            return scenario_fail(sc, err, k,
                                 "expert_comm_sms = %ld must be fewer than the device's sms "
                                 "(%s: %s; %s)",
                                 comm, d ? d->name : "custom", isnan(sms) ? "none given" : "fewer",
                                 where);
        }
    }
    long g = scenario_own(sc, "expert_node_size")->l, nodes = scenario_own(sc, "expert_nodes")->l;
    if (given[1] && E % g) {
        k = scenario_blame(sc, "strategy.expert_node_size", "strategy.expert", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert_node_size = %ld does not divide expert = %ld: an expert "
                             "group is whole servers (%s)",
                             g, E, where);
    }
    if (given[1] && nodes > E / g) {
        k = scenario_blame(sc, "strategy.expert_nodes", "strategy.expert", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "expert_nodes = %ld: a token can reach at most the %ld servers of "
                             "its expert group (expert = %ld, expert_node_size = %ld; %s)",
                             nodes, E / g, E, g, where);
    }
    return DT_OK;
}

dt_status pipe_expert_check(const scenario_t *sc, dt_err_t *err)
{
    long E = scenario_own(sc, "expert")->l;
    if (E > 1 && check_groups(sc, E, err) != DT_OK)
        return DT_ERR_INPUT;
    return check_deepseek(sc, E, err);
}

/* ---- the plan ------------------------------------------------------------------------ */

/* A group of n workers, member i rank first + i * stride. */
static void group_of(sim_group_t *g, sim_run_t *run, int n, int first, int stride)
{
    g->size = n;
    g->members = dt_calloc((size_t)n, sizeof(sim_node_t *));
    for (int i = 0; i < n; i++)
        g->members[i] = &run->workers[first + i * stride];
}

void pipe_plan_experts(pipe_plan_t *plan, sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    int S = plan->S, T = plan->T, D = plan->D, E = plan->E, ST = S * T;
    plan->ep = dt_calloc((size_t)(D / E * ST), sizeof(sim_group_t));
    for (int x = 0; x < D / E; x++)
        for (int k = 0; k < ST; k++) /* k = s T + r */
            group_of(&plan->ep[x * ST + k], run, E, x * E * ST + k, ST);
    plan->eg = dt_calloc((size_t)(E * ST), sizeof(sim_group_t));
    for (int e = 0; e < E; e++)
        for (int k = 0; k < ST; k++)
            group_of(&plan->eg[e * ST + k], run, D / E, e * ST + k, E * ST);
    if (scenario_own(sc, "tensor_comm")->i == PIPE_TP_MESSAGES)
        return;
    const char *deepseek = scenario_own(sc, "expert_overlap")->i ||
                                   scenario_own(sc, "expert_nodes")->l > 0 ||
                                   scenario_own(sc, "expert_dispatch")->i != PIPE_DISPATCH_MODEL
                               ? "; expert_overlap, expert_nodes and expert_dispatch not applied"
                               : "";
    if (scenario_has_faults(sc)) {
        plan->ep_why = *deepseek ? "faults are detected by messages; expert_overlap, "
                                   "expert_nodes and expert_dispatch not applied"
                                 : "faults are detected by messages";
        return;
    }
    double big = 1e9;
    plan->ep_a = sim_platform_ring_step_seconds(sc, 0, (E - 1) * ST, 0);
    double b = sim_platform_ring_step_seconds(sc, 0, (E - 1) * ST, big);
    for (int g = 1; g < D / E * ST && plan->ep_a >= 0; g++) {
        int first = g / ST * E * ST + g % ST;
        if (sim_platform_ring_step_seconds(sc, first, first + (E - 1) * ST, 0) != plan->ep_a)
            plan->ep_a = -1;
    }
    if (plan->ep_a < 0 || b < 0) {
        plan->ep_why = *deepseek ? "no closed form: an expert group outside one cluster of a "
                                   "star or multi-rack platform, the SMPI model, or LV08 where "
                                   "the TCP window bounds a flow; expert_overlap, expert_nodes "
                                   "and expert_dispatch not applied"
                                 : "no closed form: an expert group outside one cluster of a "
                                   "star or multi-rack platform, the SMPI model, or LV08 where "
                                   "the TCP window bounds a flow";
        return;
    }
    plan->ep_c = (b - plan->ep_a) / big;
    plan->ep_formula = 1;
    plan->ep_overlap = scenario_own(sc, "expert_overlap")->i;
    plan->ep_nodes = (int)scenario_own(sc, "expert_nodes")->l;
    plan->ep_node_size = (int)scenario_own(sc, "expert_node_size")->l;
    if (plan->ep_overlap && scenario_own(sc, "expert_comm_sms")->l > 0)
        plan->ep_comm_share = (double)scenario_own(sc, "expert_comm_sms")->l /
                              scenario_device(sc)->value[SIM_DEV_SMS];
    plan->ep_dispatch_bytes =
        scenario_own(sc, "expert_dispatch")->i == PIPE_DISPATCH_FP8 ? 1.0 : run->value_bytes;
}

/* ---- the all-to-alls ----------------------------------------------------------------- */

/* In closed form, the seconds and the bytes a member sends in one all-to-all of layer l's
 * MoE block over b samples at vb bytes a value. Without expert_nodes: E - 1 shifted
 * exchanges of 1/E of the block's b a2a values (every token's top_k copies). With
 * expert_nodes = M (DeepSeek-V3's node-limited routing): the group's N = E / g servers of
 * g members exchange in N - 1 shifts between members of the same index (InfiniBand), a
 * token crossing once to each of its n = min(top_k, M, N) servers, N - 1 of N of them
 * remote on average, its copies for the experts of one server forwarded inside it (NVLink,
 * not timed: DeepSeek sized it to hide behind the InfiniBand transfer). */
static void alltoall_closed(const pipe_plan_t *plan, const sim_profile_layer_t *l, double b,
                            double vb, double *seconds, double *sent)
{
    double elements = l->a2a * b, block;
    int steps;
    if (plan->ep_nodes > 0) {
        int N = plan->E / plan->ep_node_size, n = plan->ep_nodes;
        n = n < l->top_k ? n : l->top_k;
        n = n < N ? n : N;
        steps = N - 1;
        block = ceil(elements / l->top_k * n / N);
    } else {
        steps = plan->E - 1;
        block = ceil(elements / plan->E);
    }
    *seconds = sim_alltoall_seconds(steps + 1, plan->ep_a, plan->ep_c, vb * block);
    *sent = steps * vb * block;
}

sim_status_t pipe_expert_alltoall(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int i,
                                  int b, int count, float *buf, double *seconds)
{
    const sim_model_profile_t *p = &run->profile;
    const sim_profile_layer_t *l = &p->layers[p->n_layers - 1 - i];
    int E = plan->E, T = plan->T, S = plan->S;
    int r = node->rank % T, s = node->rank / T % S, d = node->rank / T / S;
    if (plan->ep_formula) {
        /* half of them dispatch (forward: tokens to their experts; backward: the gradients
         * of the combine's outputs), half combine */
        double t_d, t_c, sent_d, sent_c;
        alltoall_closed(plan, l, b, plan->ep_dispatch_bytes, &t_d, &sent_d);
        alltoall_closed(plan, l, b, run->value_bytes, &t_c, &sent_c);
        double t = count / 2 * (t_d + t_c), sent = count / 2 * (sent_d + sent_c);
        if (seconds) { /* waited with the tensor group's (tensor.c): counted as tensor */
            *seconds += t;
        } else {
            int was = sim_breakdown_comm(node, RESULTS_PART_EXPERT);
            sim_comm_wait(run, node, t);
            sim_breakdown_comm(node, was);
        }
        node->bytes_sent += sent;
        node->bytes_recv += sent;
        run->bytes_total += sent;
        return SIM_OK;
    }
    size_t per = (size_t)ceil(l->a2a * b / E);
    const sim_group_t *g = &plan->ep[(d / E * S + s) * T + r];
    int was = sim_breakdown_comm(node, RESULTS_PART_EXPERT);
    sim_status_t st = SIM_OK;
    for (int k = 0; k < count && st == SIM_OK; k++)
        st = sim_alltoall(run, g, d % E, buf, buf, per);
    sim_breakdown_comm(node, was);
    return st;
}

sim_status_t pipe_expert_formula_a2a(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                                     int i, int b, double *flops, double *seconds)
{
    if (!plan->a2a || !(plan->a2a[i] > 0))
        return SIM_OK;
    if (!plan->ep_formula) {
        sim_charge(run, node, *flops, 0);
        sim_comm_wait(run, node, *seconds);
        *flops = *seconds = 0;
    }
    /* a timing-only buffer: nothing is read */
    return pipe_expert_alltoall(run, node, plan, i, b, 2, node->grads,
                                plan->ep_formula ? seconds : NULL);
}

/* ---- a stage's pass ------------------------------------------------------------------ */

/* The routed rows' FLOPs count expert_imbalance times. */
static double layer_flops(const pipe_plan_t *plan, const sim_profile_layer_t *l, int forward)
{
    return (forward ? l->forward_flops : l->backward_flops) * (l->experts ? plan->imbalance : 1.0);
}

/* The seconds of the all-to-alls of chunk c's forward (backward) pass on b samples in closed
 * form, the bytes a member sends meanwhile added to *sent (when not NULL). */
static double chunk_alltoalls(const sim_run_t *run, const pipe_plan_t *plan, int c, int b,
                              int forward, double *sent)
{
    const sim_model_profile_t *p = &run->profile;
    int pairs = !forward && run->sc->recompute == SIM_RECOMPUTE_FULL ? 2 : 1;
    double seconds = 0;
    for (int i = plan->first[c]; i < plan->first[c + 1]; i++) {
        if (!(plan->a2a[i] > 0))
            continue;
        const sim_profile_layer_t *l = &p->layers[p->n_layers - 1 - i];
        double t_d, t_c, sent_d, sent_c;
        alltoall_closed(plan, l, b, plan->ep_dispatch_bytes, &t_d, &sent_d);
        alltoall_closed(plan, l, b, run->value_bytes, &t_c, &sent_c);
        seconds += pairs * (t_d + t_c);
        if (sent)
            *sent += pairs * (sent_d + sent_c);
    }
    return seconds;
}

/* expert_overlap: the pass's FLOPs as one charge, then the wait DualPipe leaves. A forward
 * pass that the schedule follows with the backward pass of chunk partner runs beside it:
 * the pair takes the longer of its all-to-alls m and its compute c slowed by the share
 * phi of the multiprocessors the all-to-alls hold while they run (expert_comm_sms),
 * max(m, c + phi m), so the forward pass waits what the pair's compute does not hide,
 * max(m - c, phi m) for m = m_F + m_B, c = c_F + c_B (before its activations go on: they
 * exist once its all-to-alls are done), and the backward pass
 * after it (partner >= 0) waits nothing; a pass without a partner (1F1B's warm-up forwards
 * and last backwards) waits its all-to-alls whole. */
static void overlapped_pass(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int c, int b,
                            int forward, double flops, int partner)
{
    double sent = 0, speed = sim_host_speed(node->host);
    double m = chunk_alltoalls(run, plan, c, b, forward, &sent), wait = m;
    node->bytes_sent += sent;
    node->bytes_recv += sent;
    run->bytes_total += sent;
    sim_charge(run, node, flops * b, 0);
    if (forward && partner >= 0) {
        double pair = m + chunk_alltoalls(run, plan, partner, b, 0, NULL);
        wait = pair - flops * b / speed - plan->bwd[partner] * b / speed;
        wait = wait > plan->ep_comm_share * pair ? wait : plan->ep_comm_share * pair;
    } else if (!forward && partner >= 0) {
        wait = 0;
    }
    sim_comm_wait(run, node, wait);
}

sim_status_t pipe_expert_pass(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int c,
                              int b, int forward, float *buf, int partner)
{
    const sim_model_profile_t *p = &run->profile;
    int L = p->n_layers, lo = plan->first[c], hi = plan->first[c + 1];
    int count = !forward && run->sc->recompute == SIM_RECOMPUTE_FULL ? 4 : 2;
    double layers = 0, flops = 0;
    for (int i = lo; i < hi; i++)
        layers += layer_flops(plan, &p->layers[L - 1 - i], forward);
    if (!forward) /* what the chunk recomputes, first */
        flops = plan->bwd[c] - layers;
    if (plan->ep_overlap) {
        overlapped_pass(run, node, plan, c, b, forward, forward ? layers : plan->bwd[c], partner);
        return SIM_OK;
    }
    for (int k = 0; k < hi - lo; k++) {
        int i = forward ? lo + k : hi - 1 - k;
        double f = layer_flops(plan, &p->layers[L - 1 - i], forward);
        if (!forward) /* backward: the gradients reach the block's dispatch after it */
            flops += f;
        if (plan->a2a[i] > 0) {
            sim_charge(run, node, flops * b, 0);
            flops = 0;
            sim_status_t st = pipe_expert_alltoall(run, node, plan, i, b, count, buf, NULL);
            if (st != SIM_OK)
                return st;
        }
        if (forward)
            flops += f;
    }
    sim_charge(run, node, flops * b, 0);
    return SIM_OK;
}

/* The step's gradient reduction of a member's slice of n parameters with expert
 * parallelism: the last pe (its experts') summed over the replicas holding the same experts
 * (data_parallel / E of them), the rest over all the stage's replicas. */
sim_status_t pipe_expert_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_node_t *node,
                                float *g, size_t n, size_t pe)
{
    int E = plan->E, T = plan->T, S = plan->S;
    int r = node->rank % T, s = node->rank / T % S, d = node->rank / T / S;
    sim_allreduce_algo_t algo = pipe_dp_algo(run);
    sim_status_t st = SIM_OK;
    if (plan->D > 1 && n > pe)
        st = pipe_dp_allreduce(run, plan, &plan->group[s * T + r], d, g, n - pe, algo);
    if (st == SIM_OK && plan->D / E > 1 && pe > 0)
        st = pipe_dp_allreduce(run, plan, &plan->eg[(d % E * S + s) * T + r], d / E, g + n - pe, pe,
                               algo);
    return st;
}
