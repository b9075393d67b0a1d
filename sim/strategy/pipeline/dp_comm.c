/* The pipeline's collectives over its replicas (the data-parallel all-reduces, ZeRO's
 * reduce-scatters and all-gathers, expert parallelism's gradient reductions), by
 * strategy.dp_comm: real exchanges of messages (collective.h; a message per phase where
 * strategy.ring_messages = phases), under formula each phase of the ring as one wait in
 * closed form (pipe_ring_step), where the replicas' rings are alike on the fabric
 * (pipe_plan_dp_formula; the stream is then a timeline with no actor:
 * sim_buckets_start_timed, bucket_seconds in pipeline.c), or under nccl NCCL's time in
 * closed form over the servers the replicas' hosts occupy (nccl_group.h; sim/docs/scale.md,
 * "Collectives between servers"). */
#include "pipeline_impl.h"

#include "nccl_group.h"

/* The closed form of each group of n, where every group has one (plan->dp_why: NULL) */
static sim_nccl_group_t *groups_init(const sim_run_t *run, const sim_group_t *g, int n,
                                     const char **why)
{
    sim_nccl_group_t *ng = dt_calloc((size_t)n, sizeof *ng);
    for (int k = 0; k < n && !*why; k++)
        *why = sim_nccl_group_init(&ng[k], run->sc, &g[k]);
    return ng;
}

void pipe_dp_plan(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    if (!sim_dp_comm_nccl(sc, run->timing_only) || plan->D < 2)
        return;
    if (!run->timing_only) {
        plan->dp_why = "NCCL's time moves no data: a real model's replicas exchange messages";
        return;
    }
    if (scenario_has_faults(sc)) {
        plan->dp_why = "faults are detected by messages";
        return;
    }
    int ST = plan->S * plan->T;
    const char *why = NULL;
    plan->dp_group = groups_init(run, plan->group, ST, &why);
    if (plan->E > 1 && plan->D / plan->E > 1 && !why)
        plan->dp_eg = groups_init(run, plan->eg, plan->E * ST, &why);
    if (why) {
        pipe_dp_free(plan);
        plan->dp_why = why;
        return;
    }
    plan->dp_nccl = 1;
}

void pipe_dp_free(pipe_plan_t *plan)
{
    int ST = plan->S * plan->T;
    for (int k = 0; plan->dp_group && k < ST; k++)
        sim_nccl_group_free(&plan->dp_group[k]);
    for (int k = 0; plan->dp_eg && k < plan->E * ST; k++)
        sim_nccl_group_free(&plan->dp_eg[k]);
    free(plan->dp_group);
    free(plan->dp_eg);
    plan->dp_group = plan->dp_eg = NULL;
}

/* grp's closed form: grp is one of plan->group or plan->eg */
static sim_nccl_group_t *closed_form(const pipe_plan_t *plan, const sim_group_t *grp)
{
    int ST = plan->S * plan->T;
    if (grp >= plan->group && grp < plan->group + ST)
        return &plan->dp_group[grp - plan->group];
    DT_ASSERT(plan->dp_eg && grp >= plan->eg && grp < plan->eg + plan->E * ST);
    return &plan->dp_eg[grp - plan->eg];
}

/* Collective c of member d's n elements by NCCL's model (the keys' algorithm and protocol);
 * under tensor_members = one, member 0's bytes stand for the fold members whose flows it
 * carries (as its messages would), its time its own */
static void nccl_run(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp, int d,
                     sim_nccl_coll_t c, size_t n)
{
    sim_nccl_group_t *ng = closed_form(plan, grp);
    sim_node_t *node = grp->members[d];
    double before = node->bytes_sent;
    sim_nccl_group_run(run, ng, node, c, pipe_nccl_algo(run->sc), pipe_nccl_proto(run->sc),
                       run->value_bytes * (double)n);
    double more = (node->bytes_sent - before) * (plan->fold - 1);
    node->bytes_sent += more;
    node->bytes_recv += more;
    run->bytes_total += more;
}

sim_status_t pipe_dp_allreduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                               int d, float *buf, size_t n, sim_allreduce_algo_t algo)
{
    if (!plan->dp_nccl)
        return pipe_ring_allreduce(run, plan, grp, d, buf, n, algo);
    nccl_run(run, plan, grp, d, SIM_NCCL_ALLREDUCE, n);
    return SIM_OK;
}

sim_status_t pipe_dp_reduce_scatter(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    int d, float *buf, size_t n)
{
    if (!plan->dp_nccl)
        return pipe_ring_reduce_scatter(run, plan, grp, d, buf, n);
    nccl_run(run, plan, grp, d, SIM_NCCL_REDUCE_SCATTER, n);
    return SIM_OK;
}

sim_status_t pipe_dp_allgather(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                               int d, float *buf, size_t n)
{
    if (!plan->dp_nccl)
        return pipe_ring_allgather(run, plan, grp, d, buf, n);
    nccl_run(run, plan, grp, d, SIM_NCCL_ALLGATHER, n);
    return SIM_OK;
}

double pipe_dp_phase_seconds(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node, size_t n)
{
    int D = plan->D;
    double chunk = run->value_bytes * (double)n / D;
    double sent = (D - 1) * chunk * plan->fold;
    node->bytes_sent += sent;
    node->bytes_recv += sent;
    run->bytes_total += sent;
    return (D - 1) * (plan->dp_a + plan->dp_c * chunk);
}

/* dp_comm = formula: the phase waited by the member. */
static void dp_phase_formula(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node, size_t n)
{
    sim_comm_wait(run, node, pipe_dp_phase_seconds(run, plan, node, n));
}

void pipe_plan_dp_formula(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    plan->dp_key = (int)scenario_own(sc, "dp_comm")->i;
    if (plan->dp_key != SIM_DP_FORMULA || plan->D < 2)
        return;
    if (!run->timing_only) {
        plan->dp_why = "a real model's gradients are summed by messages";
        return;
    }
    /* the stages reduce at different times (the last stage's backward passes end first):
     * a rack's uplink is shared as the closed form says only by hosts of one stage */
    int hosts = run->n_workers, racks = sc->racks < hosts ? (int)sc->racks : hosts;
    if (sc->platform == SIM_PLATFORM_MULTI_RACK && plan->S > 1 && hosts / racks > plan->T) {
        plan->dp_why = "a rack holds hosts of more than one stage, whose collectives come at "
                       "other times";
        return;
    }
    double big = 1e9, a = pipe_ring_step(sc, plan->S * plan->T, plan->D, 0);
    double b = pipe_ring_step(sc, plan->S * plan->T, plan->D, big);
    if (a < 0 || b < 0) {
        plan->dp_why = "no closed form: a platform other than star or multi-rack, or the SMPI "
                       "model";
        return;
    }
    plan->dp_a = a;
    plan->dp_c = (b - a) / big;
    plan->dp_formula = 1;
}

sim_status_t pipe_ring_allreduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                 int d, float *buf, size_t n, sim_allreduce_algo_t algo)
{
    if (plan->dp_formula && algo == SIM_ALLREDUCE_RING) {
        dp_phase_formula(run, plan, grp->members[d], n);
        dp_phase_formula(run, plan, grp->members[d], n);
        return SIM_OK;
    }
    return sim_allreduce(run, grp, d, buf, n * (size_t)plan->fold, algo);
}

sim_status_t pipe_ring_reduce_scatter(sim_run_t *run, const pipe_plan_t *plan,
                                      const sim_group_t *grp, int d, float *buf, size_t n)
{
    size_t m = n * (size_t)plan->fold; /* tensor_members = one: the group's bytes */
    if (plan->dp_formula) {
        dp_phase_formula(run, plan, grp->members[d], n);
        return SIM_OK;
    }
    if (run->timing_only && run->sc->ring_messages == SIM_RING_PHASES && grp->size > 2) {
        sim_status_t e = sim_ring_phase(run, grp, d, buf, m, 0);
        sim_exchange_done();
        return e;
    }
    return sim_reduce_scatter(run, grp, d, buf, m);
}

sim_status_t pipe_ring_allgather(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                 int d, float *buf, size_t n)
{
    size_t m = n * (size_t)plan->fold;
    if (plan->dp_formula) {
        dp_phase_formula(run, plan, grp->members[d], n);
        return SIM_OK;
    }
    if (run->timing_only && run->sc->ring_messages == SIM_RING_PHASES && grp->size > 2) {
        sim_status_t e = sim_ring_phase(run, grp, d, buf, m, 1);
        sim_exchange_done();
        return e;
    }
    return sim_allgather(run, grp, d, buf, m);
}

/* The all-reduce over a stage's replicas: the scenario's algorithm, ring for those of
 * groups (hierarchical, 2d: the replicas are one group). */
sim_allreduce_algo_t pipe_dp_algo(const sim_run_t *run)
{
    return run->sc->algorithm >= SIM_ALLREDUCE_HIERARCHICAL ? SIM_ALLREDUCE_RING
                                                            : run->sc->algorithm;
}
