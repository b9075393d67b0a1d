/* The stand-ins: tensor_members = one (member 0 of each tensor group simulated for all T)
 * and data_members = one (replica 0 for all D): where they hold (pipe_plan_members,
 * pipe_plan_replicas, or why not), the bytes counted for the members and replicas not
 * simulated, and their rows copied at the end. */
#include "pipeline_impl.h"
#include "platform.h"

#include <string.h>

/* tensor_members = one: member 0's tensor all-reduce of `bytes` is every member's */
void pipe_count_tp_bytes(sim_node_t *node, double bytes)
{
    const pipe_plan_t *plan = sim_current->shared;
    if (plan->one) {
        ((pipe_stage_state_t *)node->state)->tp_bytes += bytes;
        sim_current->bytes_total += (plan->T - 1) * bytes;
    }
}

/* tensor_members = one: the run's bytes as far as the step has come, every member's. Each
 * member 0's messages stood for fold members; the other T - fold sent as much (on a star,
 * fold 1: every member's messages its own). */
void pipe_count_members(sim_run_t *run, const pipe_plan_t *plan)
{
    for (int i = 0; plan->one && plan->fold < plan->T && i < run->n_workers; i += plan->T) {
        sim_node_t *node = &run->workers[i];
        pipe_stage_state_t *st = node->state;
        if (!st || st->counted < 0)
            continue;
        double net = node->bytes_sent - st->tp_bytes;
        run->bytes_total += (double)(plan->T / plan->fold - 1) * (net - st->counted);
        st->counted = net;
    }
}

/* A worker not simulated, at the end of the one that did its work at the same times: that
 * one's row, finished now. */
static void stand_in(sim_node_t *worker, const sim_node_t *from)
{
    worker->compute_s = from->compute_s;
    worker->comm_s = from->comm_s;
    worker->idle_s = from->idle_s;
    memcpy(worker->part, from->part, sizeof worker->part);
    worker->bytes_sent = from->bytes_sent;
    worker->bytes_recv = from->bytes_recv;
    worker->steps = from->steps;
    worker->end_time = sim_now();
    worker->finished = 1;
}

/* data_members = one: the run's bytes as far as the step has come, every replica's: each
 * byte of replica 0's since the last count stands for D. */
void pipe_count_replicas(sim_run_t *run, pipe_plan_t *plan)
{
    if (!plan->rep_one)
        return;
    run->bytes_total += (plan->D - 1) * (run->bytes_total - plan->rep_counted);
    plan->rep_counted = run->bytes_total;
}

/* data_members = one, a worker of replica 0 at its end (under tensor_members = one, its
 * tensor group's member 0, after it stood for the others): the same worker of every other
 * replica did the same work at the same times. */
void pipe_stand_for_replicas(sim_run_t *run, pipe_plan_t *plan, const sim_node_t *node)
{
    int ST = plan->S * plan->T, members = plan->one ? plan->T : 1;
    pipe_count_replicas(run, plan);
    for (int d = 1; d < plan->D; d++)
        for (int k = 0; k < members; k++)
            stand_in(&run->workers[d * ST + node->rank + k], &run->workers[node->rank + k]);
}

/* tensor_members = one, member 0 of a tensor group at its end: the other members' rows are
 * its own (they did the same work at the same times), with a member's bytes: its messages
 * carried fold members' (pipe_plan_members), its tensor all-reduces its own. */
void pipe_stand_for_members(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node)
{
    pipe_stage_state_t *st = node->state;
    pipe_count_members(run, plan);
    st->counted = -1;
    double tp = st->tp_bytes;
    double sent = (node->bytes_sent - tp) / plan->fold, recv = (node->bytes_recv - tp) / plan->fold;
    node->bytes_sent = sent + tp;
    node->bytes_recv = recv + tp;
    for (int k = 1; k < plan->T; k++)
        stand_in(&run->workers[node->rank + k], node);
}

/* strategy.tensor_members = one: the T members of a tensor group do the same work at the
 * same times when their all-reduces are in closed form (pipe_plan_formula) on a symmetric
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
void pipe_plan_members(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    plan->fold = 1;
    if (plan->T < 2 || scenario_own(sc, "tensor_members")->i != PIPE_MEMBERS_ONE)
        return;
    if (!plan->tp_formula) {
        plan->one_why =
            plan->tp_why ? plan->tp_why : "tensor_comm = messages runs each member's all-reduces";
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
        double route =
            2 * (sc->latency + sc->uplink_latency) * (model == SIM_NET_LV08 ? 13.01 : 1.0);
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
            if (sim_platform_ring_step_seconds(sc, g * plan->T, g * plan->T + plan->T - 1, 0) < 0) {
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
void pipe_plan_replicas(pipe_plan_t *plan, const sim_run_t *run)
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
