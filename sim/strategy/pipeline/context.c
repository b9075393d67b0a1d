/* Context parallelism of a pipeline (strategy.context = cp): each micro-batch's sequence
 * split over a context group of cp hosts, ring attention's key/value exchange in closed
 * form: its check (pipe_context_check), a member's share of the chunks (pipe_plan_context_split),
 * the exchange's seconds and bytes per chunk (pipe_plan_context_exchange) and their wait
 * in a stage's pass (pipe_context_exchange); and the closed form of a ring's step that the
 * replicas' collectives share (pipe_ring_step). */
#include <math.h>

#include "pipeline_impl.h"
#include "platform.h"
#include "profile_memory.h"

int pipe_context(const scenario_t *sc)
{
    return (int)scenario_own(sc, "context")->l;
}

/* Context parallelism (strategy.context = cp): a member of a context group holds the whole
 * of its chunks' weights and 1/cp of each micro-batch's sequence (Megatron-LM's
 * load-balanced chunks under the causal mask, so 1/cp of the attention's FLOPs too): 1/cp of
 * every layer's FLOPs, kept outputs, activations sent between stages and tensor
 * all-reduces. Called after plan_profile (and plan_split). */
void pipe_plan_context_split(pipe_plan_t *plan)
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
void pipe_plan_context_exchange(pipe_plan_t *plan, const sim_run_t *run)
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

/* Context parallelism: what the ring attention's key/value exchange adds to a member's
 * pass of chunk c on a micro-batch where it outlasts the attention it overlaps, waited at
 * the pass's end (pipe_plan_context_exchange), and the bytes it sends and receives meanwhile
 * (the links' tables miss them). */
void pipe_context_exchange(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int c,
                           int forward)
{
    if (plan->cp < 2)
        return;
    double seconds = forward ? plan->cx_f[c] : plan->cx_b[c];
    double bytes = forward ? plan->cx_bytes_f[c] : plan->cx_bytes_b[c];
    if (seconds > 0)
        sim_comm_wait(run, node, seconds);
    node->bytes_sent += bytes;
    node->bytes_recv += bytes;
    run->bytes_total += bytes;
}

/* context = cp > 1: a timing-only run of a transformer profile whose [shape] section gives
 * its attention cores (dtsim profile transformer writes it), each sequence cut into 2 cp
 * equal chunks (Megatron-LM's load balancing under the causal mask), on a star or
 * multi-rack platform under CM02 or LV08, where the key/value exchange has a closed form
 * (pipe_context_step). An error names its key. */
dt_status pipe_context_check(const scenario_t *sc, dt_err_t *err)
{
    long cp = pipe_context(sc);
    if (cp == 1)
        return DT_OK;
    if (!sc->profile[0])
        return scenario_fail(sc, err, "strategy.context",
                             "context = %ld splits the sequences of a model profile (timing "
                             "only); a real model has none to split",
                             cp);
    sim_model_profile_t p;
    if (sim_model_profile_load(&p, sc->profile, err))
        return DT_ERR_INPUT;
    double keys = 0;
    for (int i = 0; i < p.n_layers && keys == 0; i++)
        if (p.layers[i].op == SIM_OP_ATTENTION)
            keys = p.layers[i].dim[2];
    sim_model_profile_free(&p);
    if (keys == 0)
        return scenario_fail(sc, err, "strategy.context",
                             "context = %ld splits the sequence of a transformer profile's "
                             "attention, but %s has no attention layer in a [shape] section "
                             "(dtsim profile transformer writes one)",
                             cp, sc->profile);
    if (fmod(keys, 2.0 * cp) != 0)
        return scenario_fail(sc, err, "strategy.context",
                             "context = %ld cuts each sequence into 2 x %ld load-balanced "
                             "chunks, but the profile's sequence is %.0f tokens",
                             cp, cp, keys);
    sim_net_model_t model = scenario_network_model(sc);
    if ((sc->platform != SIM_PLATFORM_STAR && sc->platform != SIM_PLATFORM_MULTI_RACK) ||
        model == SIM_NET_SMPI || model == SIM_NET_TCP) {
        char where[96];
        const char *k =
            scenario_blame(sc, "strategy.context",
                           model == SIM_NET_SMPI || model == SIM_NET_TCP ? "cluster.network_model"
                                                                         : "cluster.platform",
                           where, sizeof where);
        return scenario_fail(sc, err, k,
                             "context = %ld times ring attention's key/value exchange in closed "
                             "form, on a star or multi-rack platform under CM02 or LV08 (%s)",
                             cp, where);
    }
    return DT_OK;
}
