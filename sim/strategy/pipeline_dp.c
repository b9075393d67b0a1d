/* The pipeline's collectives over its replicas (the data-parallel all-reduces, ZeRO's
 * reduce-scatters and all-gathers, expert parallelism's gradient reductions): real
 * exchanges of messages (collective.h), or under strategy.dp_comm = nccl NCCL's time in
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
    if (scenario_own(sc, "dp_comm")->i != SIM_DP_NCCL || plan->D < 2)
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

sim_status_t pipe_dp_reduce_scatter(sim_run_t *run, const pipe_plan_t *plan,
                                    const sim_group_t *grp, int d, float *buf, size_t n)
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
