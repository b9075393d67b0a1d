/* Tensor parallelism of a pipeline's stages (strategy.tensor; Megatron-LM): a member's pass
 * through its layers with the all-reduce each split needs, as ring messages
 * (tensor_comm = messages) or in closed form (formula, nccl: pipe_plan_formula decides where
 * it holds), and tensor_overlap's exposed share of a collective. What a member holds and
 * computes of each layer is plan.c's (plan_split). */
#include "pipeline_impl.h"

/* A tensor group's all-reduce of n elements (a timing-only buffer: nothing is read), or
 * under sequence parallelism its reduce-scatter and all-gather. */
static sim_status_t tp_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *g, int r,
                              float *buf, size_t n)
{
    if (!plan->sp)
        return sim_allreduce(run, g, r, buf, n, SIM_ALLREDUCE_RING);
    sim_status_t st = sim_reduce_scatter(run, g, r, buf, n);
    return st != SIM_OK ? st : sim_allgather(run, g, r, buf, n);
}

/* The seconds NCCL takes for a tensor group's all-reduce of v bytes (under sequence
 * parallelism its reduce-scatter and all-gather, each NCCL's own choice, as each is its own
 * call), by the keys' algorithm and protocol or the tuner's. */
static double nccl_time(const pipe_plan_t *plan, double v)
{
    const sim_nccl_t *m = &plan->nccl;
    if (!plan->sp)
        return sim_nccl_best(m, SIM_NCCL_ALLREDUCE, plan->nccl_algo, plan->nccl_proto, v, NULL,
                             NULL);
    return sim_nccl_best(m, SIM_NCCL_REDUCE_SCATTER, plan->nccl_algo, plan->nccl_proto, v, NULL,
                         NULL) +
           sim_nccl_best(m, SIM_NCCL_ALLGATHER, plan->nccl_algo, plan->nccl_proto, v, NULL, NULL);
}

/* Adds a layer's FLOPs (flops) and the ring time and bytes of its all-reduce of n elements
 * (2 (T-1) steps of n / T each; strategy.tensor_comm = nccl: NCCL's time, the bytes still
 * counted as the ring's) to a pass's sums. The time added is what the all-reduce adds to the
 * pass: all of it, or under strategy.tensor_overlap what the layer's compute (flops at
 * speed) does not hide (exposed). */
static void ring_time(const sim_run_t *run, const pipe_plan_t *plan, double flops, double n,
                      double speed, double *sum_flops, double *seconds, double *bytes)
{
    *sum_flops += flops;
    if (n > 0) {
        double chunk = run->value_bytes * n / plan->T;
        double t = plan->tp_nccl ? nccl_time(plan, run->value_bytes * n)
                                 : 2.0 * (plan->T - 1) * (plan->tp_a + plan->tp_c * chunk);
        *seconds += plan->tp_overlap ? pipe_overlap_exposed(flops / speed, t, plan->T) : t;
        *bytes += 2.0 * (plan->T - 1) * chunk;
    }
}

/* strategy.tensor_comm = formula: a member's pass of layers [lo, hi) on b samples as one
 * charge of their FLOPs and one wait of their all-reduces' ring time (2 (T-1) steps of 1/T
 * of the elements each; under sequence parallelism the reduce-scatter and all-gather make
 * the same steps), cut where a gradient bucket is ready; a backward pass under full
 * recomputation includes the forward pass of its blocks it repeats. Exact where the group's links
 * carry nothing else meanwhile; the bytes count as sent, the links' tables miss them. */
static sim_status_t tp_pass_formula(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                                    int lo, int hi, int b, int forward, const char *ready)
{
    double flops = 0, seconds = 0, bytes = 0, speed = sim_host_speed(node->host);
    /* a backward pass under full recomputation starts with the forward pass of its
     * blocks again: the same charge and wait */
    for (int k = lo > plan->rerun_lo ? lo : plan->rerun_lo;
         k < hi && k < plan->rerun_hi && !forward && plan->rerun_fwd; k++) {
        ring_time(run, plan, plan->lf[k] * b, plan->red_f[k] * b, speed, &flops, &seconds, &bytes);
        sim_status_t st = pipe_expert_formula_a2a(run, node, plan, k, b, &flops, &seconds);
        if (st != SIM_OK)
            return st;
    }
    for (int k = 0; k < hi - lo; k++) {
        int i = forward ? lo + k : hi - 1 - k;
        ring_time(run, plan, (forward ? plan->lf[i] : plan->lb[i]) * b,
                  (forward ? plan->red_f[i] : plan->red_b[i]) * b, speed, &flops, &seconds, &bytes);
        sim_status_t st = pipe_expert_formula_a2a(run, node, plan, i, b, &flops, &seconds);
        if (st != SIM_OK)
            return st;
        if ((ready && ready[i]) || k == hi - lo - 1) {
            sim_charge(run, node, flops, 0);
            sim_comm_wait(run, node, seconds);
            flops = seconds = 0;
            if (ready && ready[i])
                sim_buckets_ready(run, node);
        }
    }
    node->bytes_sent += bytes;
    node->bytes_recv += bytes;
    run->bytes_total += bytes;
    pipe_count_tp_bytes(node, bytes);
    return SIM_OK;
}

/* Member r of a stage's tensor group runs the forward (backward) pass of layers [lo, hi)
 * on b samples: each layer's FLOPs, then the all-reduce its split needs; a backward pass
 * with buckets (ready: plan->bk_end) hands each to the stream after its last layer. */
sim_status_t pipe_tp_pass(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                          const sim_group_t *g, int r, int lo, int hi, int b, int forward,
                          float *buf, const char *ready)
{
    if (plan->tp_formula)
        return tp_pass_formula(run, node, plan, lo, hi, b, forward, ready);
    for (int k = 0; k < hi - lo; k++) {
        int i = forward ? lo + k : hi - 1 - k;
        sim_charge(run, node, (forward ? plan->lf[i] : plan->lb[i]) * b, 0);
        double n = forward ? plan->red_f[i] : plan->red_b[i];
        sim_status_t st = n > 0 ? tp_reduce(run, plan, g, r, buf, (size_t)n * (size_t)b) : SIM_OK;
        if (st == SIM_OK && plan->a2a && plan->a2a[i] > 0) /* expert parallelism */
            st = pipe_expert_alltoall(run, node, plan, i, b, 2, buf, NULL);
        if (st != SIM_OK)
            return st;
        if (ready && ready[i])
            sim_buckets_ready(run, node);
    }
    return SIM_OK;
}

sim_status_t pipe_tp_gather(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                            const sim_group_t *g, int r, float *buf, size_t n)
{
    if (!plan->tp_formula)
        return sim_allgather(run, g, r, buf, n);
    double v = run->value_bytes * (double)n, chunk = v / plan->T;
    double t = plan->tp_nccl ? sim_nccl_best(&plan->nccl, SIM_NCCL_ALLGATHER, plan->nccl_algo,
                                             plan->nccl_proto, v, NULL, NULL)
                             : (plan->T - 1) * (plan->tp_a + plan->tp_c * chunk);
    sim_comm_wait(run, node, t);
    double bytes = (plan->T - 1) * chunk;
    node->bytes_sent += bytes;
    node->bytes_recv += bytes;
    run->bytes_total += bytes;
    pipe_count_tp_bytes(node, bytes);
    return SIM_OK;
}

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
void pipe_plan_formula(pipe_plan_t *plan, const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    int comm = scenario_own(sc, "tensor_comm")->i;
    if (plan->T < 2 || comm == PIPE_TP_MESSAGES)
        return;
    if (scenario_has_faults(sc)) {
        plan->tp_why = "faults are detected by messages";
        return;
    }
    int device = comm == PIPE_TP_NCCL && scenario_own(sc, "nccl_links")->i == PIPE_LINKS_DEVICE;
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
