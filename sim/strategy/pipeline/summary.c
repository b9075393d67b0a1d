/* The pipeline's summary line (pipe_summary, its strategy's summary slot): the layout, the
 * schedule and its bubble, then how each kind of communication is simulated (tensor groups,
 * the replicas' collectives, the experts' all-to-alls, the stand-ins, ZeRO), a clause each. */
#include <stdio.h>
#include <string.h>

#include "pipeline_impl.h"

/* "hybrid: 2 replicas of pipeline: 2 stages of layers 0-1 | 2-3, 4 micro-batches of 8, ...";
 * 0 where the line is full. */
static int summary_layout(const sim_run_t *run, const pipe_plan_t *plan, char *line, size_t size)
{
    int reps = plan->D / plan->cp;
    int n = reps > 1 ? snprintf(line, size, "hybrid: %d replicas of ", reps) : 0;
    n += snprintf(line + n, size - (size_t)n, "pipeline: %d stage%s", plan->S,
                  plan->S == 1 ? "" : "s");
    if (plan->T > 1)
        n += snprintf(line + n, size - (size_t)n, " on tensor groups of %d%s", plan->T,
                      plan->sp ? " (sequence parallel)" : "");
    if (plan->cp > 1)
        n += snprintf(line + n, size - (size_t)n,
                      " %s context groups of %d (the sequence split, ring attention)",
                      plan->T > 1 ? "x" : "on", plan->cp);
    n += snprintf(line + n, size - (size_t)n, " of layers");
    if (!run->timing_only && run->model.cfg.arch == TRAINER_ARCH_GPT) /* its pipeline layers */
        n += snprintf(line + n, size - (size_t)n, " (0 the embeddings, %d the output layer)",
                      run->model.gpt.L + 1);
    /* a stage's chunks, "0-1,4-5", between the stages' " | " */
    for (int s = 0; s < plan->S && n < (int)size; s++)
        for (int u = 0; u < plan->V && n < (int)size; u++) {
            int c = u * plan->S + s;
            n += snprintf(line + n, size - (size_t)n, "%s%d-%d",
                          u   ? ","
                          : s ? " | "
                              : " ",
                          plan->first[c], plan->first[c + 1] - 1);
        }
    if (n >= (int)size)
        return 0;
    if (plan->V > 1)
        snprintf(line + n, size - (size_t)n,
                 ", %d micro-batches of %d, interleaved (%d chunks a stage); bubble "
                 "(S-1)/(V M+S-1) = %.1f%% with equal chunks and free messages",
                 plan->M, plan->micro, plan->V,
                 100.0 * (plan->S - 1) / (plan->V * plan->M + plan->S - 1));
    else
        snprintf(line + n, size - (size_t)n,
                 ", %d micro-batches of %d, %s; bubble (S-1)/(M+S-1) = %.1f%% with equal stages "
                 "and free messages",
                 plan->M, plan->micro,
                 pipe_schedule_of(run->sc) == SIM_PIPE_GPIPE ? "gpipe" : "1f1b",
                 100.0 * (plan->S - 1) / (plan->M + plan->S - 1));
    return 1;
}

/* How the tensor groups' all-reduces are simulated, and tensor_overlap. */
static void summary_tensor(const sim_run_t *run, const pipe_plan_t *plan, char *line, size_t size)
{
    int n = (int)strlen(line);
    if (plan->tp_nccl && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; tensor all-reduces as NCCL runs them (algorithm %s, protocol %s, on %s; "
                 "contention on the group's links left out)",
                 plan->nccl_algo < 0 ? "by size" : sim_nccl_algo_name(plan->nccl_algo),
                 plan->nccl_proto < 0 ? "by size" : sim_nccl_proto_name(plan->nccl_proto),
                 !plan->nccl_device          ? "the platform's links"
                 : plan->nccl.nvls_busbw > 0 ? "the device's NVLink with NVLS"
                                             : "the device's NVLink");
    else if (plan->tp_formula && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; tensor all-reduces by formula (an approximation: contention on the "
                 "group's links left out)");
    else if (plan->tp_why && n < (int)size)
        snprintf(line + n, size - (size_t)n, "; tensor all-reduces as messages (%s%s)",
                 plan->tp_why,
                 scenario_own(run->sc, "tensor_overlap")->i ? "; tensor_overlap not applied" : "");
    n = (int)strlen(line);
    if (plan->tp_overlap && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; each all-reduce overlapped with its layer's compute in %d chunks "
                 "(tensor_overlap)",
                 plan->T);
}

/* How the collectives over the replicas are simulated (dp_comm). */
static void summary_replicas(const sim_run_t *run, const pipe_plan_t *plan, char *line, size_t size)
{
    int n = (int)strlen(line);
    if (plan->dp_nccl && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; replicas' collectives as NCCL runs them (%d servers of %d, algorithm %s, "
                 "protocol %s; contention with other traffic left out)",
                 plan->dp_group[0].model.nodes,
                 plan->dp_group[0].model.ranks / plan->dp_group[0].model.nodes,
                 pipe_nccl_algo(run->sc) < 0 ? "by size"
                 : pipe_nccl_algo(run->sc) == SIM_NCCL_NVLS && plan->dp_group[0].model.nodes > 1
                     ? "ring (nvls runs inside a server only)"
                     : sim_nccl_algo_name(pipe_nccl_algo(run->sc)),
                 pipe_nccl_proto(run->sc) < 0 ? "by size"
                                              : sim_nccl_proto_name(pipe_nccl_proto(run->sc)));
    else if (plan->dp_why && n < (int)size && scenario_own(run->sc, "dp_comm")->i == SIM_DP_NCCL)
        snprintf(line + n, size - (size_t)n,
                 "; replicas' collectives as messages (dp_comm = "
                 "nccl, but %s)",
                 plan->dp_why);
}

/* Expert parallelism: the groups, the all-to-alls, DeepSeek-V3's options. */
static void summary_experts(const pipe_plan_t *plan, char *line, size_t size)
{
    int n = (int)strlen(line);
    if (plan->E > 1 && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; experts over groups of %d replicas%s, "
                 "all-to-alls %s%s%s",
                 plan->E, plan->imbalance > 1 ? " (imbalanced)" : "",
                 plan->ep_formula ? "by formula" : "as messages", plan->ep_why ? ": " : "",
                 plan->ep_why ? plan->ep_why : "");
    n = (int)strlen(line);
    if (plan->ep_nodes > 0 && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 ", each token to at most %d servers of %d members (expert_nodes)", plan->ep_nodes,
                 plan->ep_node_size);
    n = (int)strlen(line);
    if (plan->ep_formula && plan->ep_dispatch_bytes == 1.0 && n < (int)size)
        snprintf(line + n, size - (size_t)n, ", dispatch in FP8 (expert_dispatch)");
    n = (int)strlen(line);
    if (plan->ep_overlap && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 ", a forward and a backward pass's all-to-alls behind their compute "
                 "(expert_overlap, DualPipe)");
    n = (int)strlen(line);
    if (plan->ep_overlap && plan->ep_comm_share > 0 && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 " on %.3g%% of the multiprocessors while they run "
                 "(expert_comm_sms)",
                 100 * (1 - plan->ep_comm_share));
}

/* The stand-ins (tensor_members, data_members = one), or why every member or replica runs. */
static void summary_members(const pipe_plan_t *plan, char *line, size_t size)
{
    int n = (int)strlen(line);
    if (plan->one && plan->widen && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; one member of each tensor group simulated for all %d (tensor_members = one, "
                 "an approximation: its messages carry the group's bytes, its own links and the "
                 "TCP window made %d times as wide)",
                 plan->T, plan->T);
    else if (plan->one && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; one member of each tensor group simulated for all %d (tensor_members = one, "
                 "an approximation: %s)",
                 plan->T,
                 plan->fold > 1 ? "its messages carry the group's bytes over the rack's uplink"
                                : "every member's flows on links of its own");
    else if (plan->one_why && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; every member of the tensor groups simulated (tensor_members = one, but %s)",
                 plan->one_why);
    n = (int)strlen(line);
    if (plan->rep_one && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; replica 0 simulated for all %d (data_members = one: exact, their "
                 "collectives in closed form and their links their own)",
                 plan->D);
    else if (plan->rep_why && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; every replica simulated (data_members = one, but %s)", plan->rep_why);
}

void pipe_summary(const sim_run_t *run, char *line, size_t size)
{
    const pipe_plan_t *plan = run->shared;
    if (!summary_layout(run, plan, line, size))
        return;
    summary_tensor(run, plan, line, size);
    summary_replicas(run, plan, line, size);
    summary_experts(plan, line, size);
    summary_members(plan, line, size);
    int n = (int)strlen(line);
    if (n < (int)size)
        pipe_zero_summary(plan, line + n, size - (size_t)n);
}
