/* pipeline: the model's layers cut into S stages on S hosts (pipeline parallelism, GPipe
 * and PipeDream-Flush / 1F1B). Each step's model.batch is cut into M micro-batches; stage s
 * runs the forward pass of its layers on each micro-batch as its activations arrive from
 * stage s-1, sends its output activations on to stage s+1, and later runs the backward pass
 * on the gradients that come back from stage s+1, sending the gradient of its input to
 * stage s-1. Activations and their gradients are messages of their real sizes (micro-batch
 * x the cut layer's output). The stage sums its layers' gradients over the micro-batches
 * and, after its last backward, applies SGD to its own layers: one update per step, the
 * same as one worker with the whole batch (up to float rounding).
 *
 * Schedules: gpipe runs every forward, then every backward (last micro-batch first);
 * 1f1b runs S-s-1 warm-up forwards, then alternates one forward and one backward, then
 * drains the backwards, so a stage holds at most S-s micro-batches' activations. Both
 * idle (S-1)/(M+S-1) of the step when the stages take equal time and messages take none:
 * the pipeline bubble, recorded as the workers' idle share. interleaved (Megatron-LM,
 * Narayanan et al. 2021) cuts the model into S V chunks (V = virtual_stages), chunk c on
 * stage c mod S, and runs 1F1B over the M V (micro-batch, chunk) pairs in Megatron-LM's
 * order (schedule, virtual_mb): the last stage's chunk v sends on to the first stage's
 * chunk v + 1, and the bubble shrinks to (S-1)/(V M+S-1) for V times the messages. A
 * message's flag names the micro-batch and the chunk it is for (msg_tag).
 *
 * The stages cut at layers with weights, where the forward + backward FLOPs of the most
 * loaded stage are the lowest (non-weight layers go with the weight layer before them).
 * The real gpt cuts between blocks: stage 0 holds the embeddings, the last stage the final
 * norm and the output layer tied to wte, whose gradient the two sum (pipeline_gpt.c).
 * A timing-only run (a model profile with a [forward] section) cuts at the profile's cut
 * places the same way; its messages carry the cut's elements, and nothing is computed.
 *
 * One process runs every stage, so the micro-batches' activations live in one workspace per
 * micro-batch that every stage uses for its own layers (a message's payload is the sender's
 * output in it; the receiver reads its input there). The parameters are one buffer too:
 * each stage updates only its own slice. Stage 0 draws the micro-batches and decides when
 * the run stops (a STOP travels down the pipe); the last of replica 0's stages to update
 * evaluates (a stage all-reduces and updates after it sent its input gradient down, so
 * stage 0 is not always the last).
 *
 * Tensor parallelism (strategy.tensor = T > 1, a model profile with a [tensor] section):
 * each stage runs on a tensor group of T hosts, worker (d S + s) T + r being member r of
 * stage s of replica d. The profile's split layers (column, row, heads, vocab) cost each
 * member 1/T of their FLOPs, parameters and kept outputs, the others (norms, residuals)
 * are replicated; after each layer's pass the member takes part in the all-reduce the
 * split needs (row, vocab: after the forward pass; column: after the backward pass), ring,
 * in the tensor group; member r sends its activations to member r of the next stage, and
 * all-reduces its gradients with member r of the same stage of the other replicas (1/T of
 * the split layers' parameters). Sequence parallelism turns each all-reduce into a
 * reduce-scatter and an all-gather and also divides the replicated layers' FLOPs and
 * outputs, and the activations between stages, by T; model.recompute works on each
 * member's share (plan_split).
 *
 * Gradient buckets over the replicas (strategy.bucket_mb, without ZeRO; bucket.h): during
 * the step's last backward pass each member hands its stage's buckets, layer by layer from
 * the last, to its stream, which all-reduces them with the same member of the other
 * replicas while the pass goes on (gradient accumulation: the earlier micro-batches only
 * add up); the update waits for the last bucket (plan_buckets).
 *
 * ZeRO over the replicas (strategy.shard_optimizer = yes, stage strategy.zero_stage): 1
 * reduce-scatters a stage's summed gradients and all-gathers the updated weights; 2
 * reduce-scatters the gradients in buckets during each chunk's last backward pass, on the
 * stream (strategy.zero_grad_overlap), or without it each micro-batch's after its backward
 * pass; 3 also all-gathers the stage's parameters before each forward and backward pass
 * (prefetched: strategy.zero_prefetch) and keeps them sharded after the update
 * (pipeline_zero.c).
 *
 * The layout (where the stages cut, what each computes, keeps and sends, a member's share,
 * the buckets, the groups) is pipeline_plan.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

/* The k-th forward (backward) of a stage under the interleaved schedule, over M V virtual
 * micro-batches: micro-batch *m of the stage's chunk *v (Megatron-LM's get_model_chunk_id:
 * S micro-batches through one chunk, then the same S through the next, V chunks, then the
 * next S micro-batches; backwards go through the chunks the other way). Every stage runs
 * the same order, so a stage receives its activations and gradients in the order they
 * were sent. */
static void virtual_mb(const pipe_plan_t *plan, int k, int forward, int *m, int *v)
{
    int S = plan->S, V = plan->V, j = k / S % V;
    *v = forward ? j : V - 1 - j;
    *m = k / (S * V) * S + k % S;
}

/* The stage's schedule for one step: op k is the forward (F) or backward of micro-batch
 * mb[k] through its chunk ch[k] (0 unless interleaved). */
static int schedule(const pipe_plan_t *plan, sim_pipeline_schedule_t kind, int s, char *op,
                    int *mb, int *ch)
{
    int M = plan->M, V = plan->V, n = 0;
    if (kind == SIM_PIPE_GPIPE) {
        for (int m = 0; m < M; m++)
            op[n] = 'F', ch[n] = 0, mb[n++] = m;
        for (int m = M - 1; m >= 0; m--)
            op[n] = 'B', ch[n] = 0, mb[n++] = m;
        return n;
    }
    if (V > 1) {
        /* Megatron-LM's interleaved 1F1B: (S-s-1) 2 + (V-1) S warm-up forwards (the first
         * chunk's micro-batches must come round the whole pipeline V-1 times before the
         * last chunk's first backward can start), then one forward and one backward in
         * turn, then the remaining backwards */
        int total = M * V, warm = (plan->S - s - 1) * 2 + (V - 1) * plan->S, f = 0, b = 0;
        warm = warm < total ? warm : total;
        while (f < total || b < total) {
            int fwd = f < warm || (f < total && f - warm <= b);
            int k = fwd ? f++ : b++;
            op[n] = fwd ? 'F' : 'B';
            virtual_mb(plan, k, fwd, &mb[n], &ch[n]);
            n++;
        }
        return n;
    }
    int warm = plan->S - s - 1 < M ? plan->S - s - 1 : M, f = 0, b = 0;
    while (f < warm)
        op[n] = 'F', ch[n] = 0, mb[n++] = f++;
    while (f < M) {
        op[n] = 'F', ch[n] = 0, mb[n++] = f++;
        op[n] = 'B', ch[n] = 0, mb[n++] = b++;
    }
    while (b < M)
        op[n] = 'B', ch[n] = 0, mb[n++] = b++;
    return n;
}

/* What a message to model chunk c about micro-batch m carries in its flag: the receiver
 * checks that what arrives is what its schedule expects. */
static int msg_tag(const pipe_plan_t *plan, int m, int c)
{
    return m * plan->C + c;
}

/* A message of n floats at data (in the shared workspace), for micro-batch m, in the
 * stage's own header msg: its activations and gradients stay in flight for the whole step,
 * while a tensor group's collectives cycle through the node's ring of headers. */
static sim_msg_t *payload(sim_node_t *node, sim_msg_t *msg, const float *data, size_t n, int m,
                          long step)
{
    sim_msg_init(node, msg);
    msg->data = data;
    msg->n = n;
    /* tensor_members = one: member 0's message stands for the group's (plan_members) */
    msg->bytes = sim_current->value_bytes * (double)n *
                 ((const pipe_plan_t *)sim_current->shared)->fold;
    msg->flag = m;
    msg->step = step;
    return msg;
}

/* A tensor group's all-reduce of n elements (a timing-only buffer: nothing is read), or
 * under sequence parallelism its reduce-scatter and all-gather. */
static sim_status_t tp_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *g,
                              int r, float *buf, size_t n)
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
           sim_nccl_best(m, SIM_NCCL_ALLGATHER, plan->nccl_algo, plan->nccl_proto, v, NULL,
                         NULL);
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

/* ---- expert parallelism (strategy.expert; pipeline_expert.c) ---------- */

static sim_allreduce_algo_t dp_algo(const sim_run_t *run); /* (below) */

/* The step's gradient reduction of a member's slice of n parameters with expert
 * parallelism: the last pe (its experts') summed over the replicas holding the same experts
 * (data_parallel / E of them), the rest over all the stage's replicas. */
static sim_status_t ep_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_node_t *node,
                              float *g, size_t n, size_t pe)
{
    int E = plan->E, T = plan->T, S = plan->S;
    int r = node->rank % T, s = node->rank / T % S, d = node->rank / T / S;
    sim_allreduce_algo_t algo = dp_algo(run);
    sim_status_t st = SIM_OK;
    if (plan->D > 1 && n > pe)
        st = pipe_dp_allreduce(run, plan, &plan->group[s * T + r], d, g, n - pe, algo);
    if (st == SIM_OK && plan->D / E > 1 && pe > 0)
        st = pipe_dp_allreduce(run, plan, &plan->eg[(d % E * S + s) * T + r], d / E,
                               g + n - pe, pe, algo);
    return st;
}

/* strategy.tensor_comm = formula: a member's pass of layers [lo, hi) on b samples as one
 * charge of their FLOPs and one wait of their all-reduces' ring time (2 (T-1) steps of 1/T
 * of the elements each; under sequence parallelism the reduce-scatter and all-gather make
 * the same steps), cut where a gradient bucket is ready; a backward pass under full
 * recomputation includes the forward pass it repeats. Exact where the group's links
 * carry nothing else meanwhile; the bytes count as sent, the links' tables miss them. */
static void count_tp_bytes(sim_node_t *node, double bytes);
static sim_status_t tp_pass_formula(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                                    int lo, int hi, int b, int forward, const char *ready)
{
    double flops = 0, seconds = 0, bytes = 0, speed = sim_host_speed(node->host);
    /* a backward pass under full recomputation starts with the forward pass again: the
     * same charge and wait */
    for (int k = lo; k < hi && !forward && plan->rerun_fwd; k++) {
        ring_time(run, plan, plan->lf[k] * b, plan->red_f[k] * b, speed, &flops, &seconds,
                  &bytes);
        sim_status_t st = pipe_expert_formula_a2a(run, node, plan, k, b, &flops, &seconds);
        if (st != SIM_OK)
            return st;
    }
    for (int k = 0; k < hi - lo; k++) {
        int i = forward ? lo + k : hi - 1 - k;
        ring_time(run, plan, (forward ? plan->lf[i] : plan->lb[i]) * b,
                  (forward ? plan->red_f[i] : plan->red_b[i]) * b, speed, &flops, &seconds,
                  &bytes);
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
    count_tp_bytes(node, bytes);
    return SIM_OK;
}

/* Member r of a stage's tensor group runs the forward (backward) pass of layers [lo, hi)
 * on b samples: each layer's FLOPs, then the all-reduce its split needs; a backward pass
 * with buckets (ready: plan->bk_end) hands each to the stream after its last layer. */
static sim_status_t tp_pass(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan,
                            const sim_group_t *g, int r, int lo, int hi, int b, int forward,
                            float *buf, const char *ready)
{
    if (plan->tp_formula)
        return tp_pass_formula(run, node, plan, lo, hi, b, forward, ready);
    for (int k = 0; k < hi - lo; k++) {
        int i = forward ? lo + k : hi - 1 - k;
        sim_charge(run, node, (forward ? plan->lf[i] : plan->lb[i]) * b, 0);
        double n = forward ? plan->red_f[i] : plan->red_b[i];
        sim_status_t st = n > 0 ? tp_reduce(run, plan, g, r, buf, (size_t)n * (size_t)b)
                                : SIM_OK;
        if (st == SIM_OK && plan->a2a && plan->a2a[i] > 0) /* expert parallelism */
            st = pipe_expert_alltoall(run, node, plan, i, b, 2, buf, NULL);
        if (st != SIM_OK)
            return st;
        if (ready && ready[i])
            sim_buckets_ready(run, node);
    }
    return SIM_OK;
}

/* A stage's last backward pass of the step with buckets, without a tensor group: its FLOPs
 * bucket by bucket (the measured wall time shared by FLOPs), each bucket handed to the
 * stream once charged. */
static void charge_buckets(sim_run_t *run, sim_node_t *node, const sim_bucket_list_t *bk,
                           int b, double wall, double flops)
{
    for (int k = 0; k < bk->n; k++) {
        sim_charge(run, node, bk->flops[k] * b, flops > 0 ? wall * bk->flops[k] / flops : 0);
        sim_buckets_ready(run, node);
    }
}

/* The all-reduce over a stage's replicas: the scenario's algorithm, ring for those of
 * groups (hierarchical, 2d: the replicas are one group). */
static sim_allreduce_algo_t dp_algo(const sim_run_t *run)
{
    return run->sc->algorithm >= SIM_ALLREDUCE_HIERARCHICAL ? SIM_ALLREDUCE_RING
                                                            : run->sc->algorithm;
}

/* Context parallelism: what the ring attention's key/value exchange adds to a member's
 * pass of chunk c on a micro-batch where it outlasts the attention it overlaps, waited at
 * the pass's end (plan_context_exchange), and the bytes it sends and receives meanwhile
 * (the links' tables miss them). */
static void context_exchange(sim_run_t *run, sim_node_t *node, const pipe_plan_t *plan, int c,
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

/* A stage's update after its last backward pass of the step, on its slice of n parameters:
 * with replicas, the sum of its gradients over them (the group of replica d's stage), then
 * SGD on the mean. ZeRO (strategy.shard_optimizer with zero_stage): replica d updates chunk
 * d of the slice with that chunk's momentum alone; stage 1 gets the chunk's sum by a ring
 * reduce-scatter of the step's gradients (the same weights, the same bytes as the ring
 * all-reduce), stages 2 and 3 have it in acc; stages 1 and 2 then all-gather the weights,
 * stage 3 keeps its shard (pipe_zero_slice_update). reduced: the stage's stream has summed
 * the gradients already, bucket by bucket (plan_buckets). */
static sim_status_t stage_update(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                 int d, float *w, float *g, float *v, const float *acc, size_t n,
                                 long step, int reduced)
{
    int D = plan->D;
    float mean = 1.0f / (float)(plan->M * D);
    sim_status_t st;
    if (D > 1 && plan->zero)
        return pipe_zero_slice_update(run, plan, grp, d, w, g, v, acc, n, step);
    if (D > 1 && !reduced &&
        (st = pipe_dp_allreduce(run, plan, grp, d, g, n, dp_algo(run))) != SIM_OK)
        return st;
    run->be->scale(n, mean, g);
    sim_sgd(run, w, g, v, n, step);
    return SIM_OK;
}

typedef struct stage_state {
    int zjob;     /* zero_prefetch: the jobs the stream has run (bucket_reduce) */
    int zawaited; /* and the step's jobs the stage waited for */
    char *op;
    int *mb, *ch;
    uint32_t *idx;
    sim_comm_t *sends; /* NULL once finished early (finish_acked) */
    sim_msg_t **sent;
    /* finish_acked: per direction (0 activations on, 1 gradients back) the step's sends in
     * order, how many were sent and finished, how many messages came the other way, and
     * after the j-th of those how many of ours the peer had taken in (acked) */
    int *order[2], n_dir[2], n_done[2], n_got[2], *acked[2];
    sim_msg_t *own; /* (2 M V + 1) the headers of the step's sends and of the STOP */
    /* tensor_members = one: its tensor all-reduces' bytes in closed form (tp_pass_formula);
     * of the bytes its messages sent, those counted for the members they did not stand for
     * (count_members), -1 once it stood for them (stand_for_members) */
    double tp_bytes, counted;
} stage_state_t;

/* A stream's all-reduce of a bucket of node's stage with the same member of the other
 * replicas' (plan_buckets); under ZeRO its reduce-scatter, and with zero_prefetch the step's
 * next job, a pass's gather or a bucket's reduce-scatter (pipe_zero_jobs). */
static sim_status_t bucket_reduce(sim_run_t *run, sim_node_t *node, float *buf, size_t n)
{
    const pipe_plan_t *plan = run->shared;
    int T = plan->T, S = plan->S, r = node->rank % T, s = node->rank / T % S;
    const sim_group_t *grp = &plan->group[s * T + r];
    if (plan->zero_prefetch) { /* the step's next job: a pass's gather or a bucket's */
        int j = ((stage_state_t *)node->state)->zjob++ % plan->zjobs[s].n;
        if (plan->zkind[s][j] == 'G')
            return pipe_dp_allgather(run, plan, grp, node->rank / T / S, buf, n);
    }
    if (plan->zero_overlap) /* ZeRO: chunk d of the bucket to replica d (pipeline_zero.c) */
        return pipe_dp_reduce_scatter(run, plan, grp, node->rank / T / S, buf, n);
    return pipe_dp_allreduce(run, plan, grp, node->rank / T / S, buf, n, dp_algo(run));
}

/* bucket_reduce's collective in closed form (dp_comm = formula; sim_buckets_start_timed):
 * its seconds, its bytes counted. */
static double bucket_seconds(sim_run_t *run, sim_node_t *node, size_t lo, size_t n)
{
    (void)lo;
    const pipe_plan_t *plan = run->shared;
    /* ZeRO: a pass's gather or a bucket's reduce-scatter, one phase; else an all-reduce */
    double t = pipe_dp_phase_seconds(run, plan, node, n);
    return plan->zero ? t : t + pipe_dp_phase_seconds(run, plan, node, n);
}

/* tensor_members = one: member 0's tensor all-reduce of `bytes` is every member's */
static void count_tp_bytes(sim_node_t *node, double bytes)
{
    const pipe_plan_t *plan = sim_current->shared;
    if (plan->one) {
        ((stage_state_t *)node->state)->tp_bytes += bytes;
        sim_current->bytes_total += (plan->T - 1) * bytes;
    }
}

/* tensor_members = one: the run's bytes as far as the step has come, every member's. Each
 * member 0's messages stood for fold members; the other T - fold sent as much (on a star,
 * fold 1: every member's messages its own). */
static void count_members(sim_run_t *run, const pipe_plan_t *plan)
{
    for (int i = 0; plan->one && plan->fold < plan->T && i < run->n_workers; i += plan->T) {
        sim_node_t *node = &run->workers[i];
        stage_state_t *st = node->state;
        if (!st || st->counted < 0)
            continue;
        double net = node->bytes_sent - st->tp_bytes;
        run->bytes_total += (double)(plan->T / plan->fold - 1) * (net - st->counted);
        st->counted = net;
    }
}

/* A worker not simulated, at the end of the one that did its work at the same times: that
 * one's row, finished now. */
static void stand_in(sim_node_t *m, const sim_node_t *from)
{
    m->compute_s = from->compute_s;
    m->comm_s = from->comm_s;
    m->idle_s = from->idle_s;
    m->bytes_sent = from->bytes_sent;
    m->bytes_recv = from->bytes_recv;
    m->steps = from->steps;
    m->end_time = sim_now();
    m->finished = 1;
}

/* data_members = one: the run's bytes as far as the step has come, every replica's: each
 * byte of replica 0's since the last count stands for D. */
static void count_replicas(sim_run_t *run, pipe_plan_t *plan)
{
    if (!plan->rep_one)
        return;
    run->bytes_total += (plan->D - 1) * (run->bytes_total - plan->rep_counted);
    plan->rep_counted = run->bytes_total;
}

/* data_members = one, a worker of replica 0 at its end (under tensor_members = one, its
 * tensor group's member 0, after it stood for the others): the same worker of every other
 * replica did the same work at the same times. */
static void stand_for_replicas(sim_run_t *run, pipe_plan_t *plan, const sim_node_t *node)
{
    int ST = plan->S * plan->T, members = plan->one ? plan->T : 1;
    count_replicas(run, plan);
    for (int d = 1; d < plan->D; d++)
        for (int k = 0; k < members; k++)
            stand_in(&run->workers[d * ST + node->rank + k], &run->workers[node->rank + k]);
}

/* tensor_members = one, member 0 of a tensor group at its end: the other members' rows are
 * its own (they did the same work at the same times), with a member's bytes: its messages
 * carried fold members' (plan_members), its tensor all-reduces its own. */
static void stand_for_members(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node)
{
    stage_state_t *st = node->state;
    count_members(run, plan);
    st->counted = -1;
    double tp = st->tp_bytes;
    double sent = (node->bytes_sent - tp) / plan->fold, recv = (node->bytes_recv - tp) / plan->fold;
    node->bytes_sent = sent + tp;
    node->bytes_recv = recv + tp;
    for (int k = 1; k < plan->T; k++)
        stand_in(&run->workers[node->rank + k], node);
}

/* A stage's sends of a step used to be waited for at the step's end, and the simulator
 * scans an activity's list of unwaited sends at each completion: with hundreds of
 * micro-batches a step's cost grew as their square. But a message from a neighbour says
 * which of our sends it had taken in before it sent it: its schedule, known here. After
 * the j-th message received from a neighbour, the sends acked[dir][j] of that direction
 * are done, and waiting for them takes no simulated time. */

/* For neighbour x's schedule: before its j-th pass of kind `sends` that sends us a message,
 * the passes of kind `takes` in which it took one of ours (a forward takes activations where
 * its model chunk is not the first, a backward takes gradients where it is not the last;
 * a forward sends where it is not the last, a backward where it is not the first). */
static void acked_counts(const pipe_plan_t *plan, sim_pipeline_schedule_t kind, int x,
                         char sends, char takes, int *acked)
{
    size_t n_max = 2 * (size_t)plan->M * (size_t)plan->V;
    char *op = dt_malloc(n_max);
    int *mb = dt_malloc(sizeof(int) * n_max), *ch = dt_malloc(sizeof(int) * n_max);
    int n = schedule(plan, kind, x, op, mb, ch), taken = 0, j = 0;
    for (int k = 0; k < n; k++) {
        int c = ch[k] * plan->S + x;
        int first = c == 0, last = c == plan->C - 1;
        if (op[k] == takes && (takes == 'F' ? !first : !last))
            taken++;
        if (op[k] == sends && (sends == 'F' ? !last : !first))
            acked[j++] = taken;
    }
    free(op);
    free(mb);
    free(ch);
}

static void stage_state_free(sim_node_t *node)
{
    stage_state_t *st = node->state;
    free(st->op);
    free(st->mb);
    free(st->ch);
    free(st->idx);
    free(st->sends);
    free(st->sent);
    for (int k = 0; k < 2; k++) {
        free(st->order[k]);
        free(st->acked[k]);
    }
    free(st->own);
}

/* The peer that our sends of direction dir go to has sent us its next message: the sends it
 * had taken in by then are finished (no simulated time passes). */
static sim_status_t finish_acked(sim_run_t *run, sim_node_t *node, stage_state_t *st, int dir)
{
    int upto = st->acked[dir][st->n_got[dir]++];
    for (; st->n_done[dir] < upto && st->n_done[dir] < st->n_dir[dir]; st->n_done[dir]++) {
        int k = st->order[dir][st->n_done[dir]];
        sim_status_t e = sim_send_finish(run, node, st->sends[k], st->sent[k]);
        st->sends[k] = NULL;
        if (e != SIM_OK)
            return e;
    }
    return SIM_OK;
}

/* zero_prefetch: returns once the stream has run the step's job j and those before it */
static void wait_job(sim_run_t *run, sim_node_t *node, stage_state_t *st, int j)
{
    for (; st->zawaited <= j; st->zawaited++)
        sim_buckets_wait(run, node);
}

/* ZeRO stage 3 before op k of n_ops of stage s computes: its slice gathered in turn
 * (pipe_zero_gather_slice), or with zero_prefetch the gather the stream ran meanwhile
 * waited for and the next op's handed over (op 0's first). */
static sim_status_t zero_gather(sim_run_t *run, const pipe_plan_t *plan, sim_node_t *node,
                                stage_state_t *st, int s, int k, int n_ops,
                                const sim_group_t *dp, int d, float *w, size_t n)
{
    if (!plan->zero_prefetch)
        return pipe_zero_gather_slice(run, plan, dp, d, w, n);
    if (k == 0)
        sim_buckets_ready(run, node);
    wait_job(run, node, st, plan->zgather[s][k]);
    if (k + 1 < n_ops)
        sim_buckets_ready(run, node);
    return SIM_OK;
}

static void stage(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    pipe_plan_t *plan = run->shared;
    int real = !run->timing_only; /* a timing-only stage computes and reads nothing */
    int S = plan->S, M = plan->M, V = plan->V, C = plan->C, b = plan->micro, T = plan->T;
    int r = node->rank % T, s = node->rank / T % S, d = node->rank / T / S;
    /* member r of stage s of replica d, in the tensor group tp */
    const sim_group_t *tp = T > 1 ? &plan->tp[d * S + s] : NULL;
    /* replica d's parameters: one buffer, each stage updating its chunks' slices */
    sim_node_t *head = &run->workers[d * S * T];
    float *w = head->params, *v = head->velocity, *g = node->grads, *acc = node->scratch;
    const sim_group_t *dp = &plan->group[s * T + r]; /* the stage's replicas */
    /* ZeRO 2, 3 without zero_grad_overlap: pipe_zero_shard_reduce */
    int sharded_grads = plan->zero >= 2 && plan->D > 1 && !plan->zero_overlap;
    /* the stage's stream reduces its chunks' buckets */
    int bucketed = plan->bucketed && plan->bk_stage[s].n > 0;
    stage_state_t *st = dt_calloc(1, sizeof *st);
    node->state = st;
    node->state_free = stage_state_free;
    size_t n_max = 2 * (size_t)M * (size_t)V; /* the step's passes, and its sends */
    st->op = dt_malloc(n_max);
    st->mb = dt_malloc(sizeof(int) * n_max);
    st->ch = dt_malloc(sizeof(int) * n_max);
    st->idx = dt_malloc(sizeof(uint32_t) * (size_t)b);
    st->sends = dt_calloc(n_max, sizeof(sim_comm_t));
    st->sent = dt_calloc(n_max, sizeof(sim_msg_t *));
    for (int k = 0; k < 2; k++) {
        st->order[k] = dt_calloc(n_max, sizeof(int));
        st->acked[k] = dt_calloc(n_max, sizeof(int));
    }
    st->own = dt_calloc(n_max + 1, sizeof(sim_msg_t));
    int n_ops = schedule(plan, pipe_schedule_of(run->sc), s, st->op, st->mb, st->ch);
    if (S > 1) {
        acked_counts(plan, pipe_schedule_of(run->sc), (s + 1) % S, 'B', 'F', st->acked[0]);
        acked_counts(plan, pipe_schedule_of(run->sc), (s + S - 1) % S, 'F', 'B', st->acked[1]);
    }
    /* the next and the previous stage, member r; interleaved, the last stage's chunks send
     * on to the first stage's next chunks and the first stage's gradients go back round */
    int next = (d * S + (s + 1) % S) * T + r, prev = (d * S + (s + S - 1) % S) * T + r;
    sim_box_t act_in = sim_mailbox(node->name, "act"), grad_in = sim_mailbox(node->name, "grad");
    sim_box_t act_out = S > 1 ? sim_mailbox(run->workers[next].name, "act") : NULL;
    sim_box_t grad_out = S > 1 ? sim_mailbox(run->workers[prev].name, "grad") : NULL;
    int nb[PIPE_MAX_CHUNKS]; /* backward passes of the step through each of the stage's chunks */
    long step;
    for (step = 0;; step++) {
        int stop = 0;
        if (s == 0)
            stop = sim_should_stop(run, step) || run->ended;
        int n_sent = 0, backwards = 0;
        memset(st->n_dir, 0, sizeof st->n_dir);
        memset(st->n_done, 0, sizeof st->n_done);
        memset(st->n_got, 0, sizeof st->n_got);
        st->zawaited = 0;
        memset(nb, 0, sizeof(int) * (size_t)V);
        double loss = 0;
        for (int k = 0; k < n_ops && !stop; k++) {
            int m = st->mb[k], cv = st->ch[k], c = cv * S + s; /* chunk cv, model chunk c */
            int lo = plan->first[c], hi = plan->first[c + 1];
            size_t p0 = plan->p0[c], n_slice = plan->p1[c] - p0;
            size_t out_n = (size_t)b * plan->out[c]; /* activations sent on */
            size_t in_n = c > 0 ? (size_t)b * plan->out[c - 1] : 0;
            trainer_workspace_t *ws = real ? &plan->ws[d * M + m] : NULL;
            double wall = 0, w0;
            if (st->op[k] == 'F') {
                if (c == 0 && real) {
                    sim_batch_global(run, step, d * M + m, b, st->idx);
                    w0 = dt_wall_seconds();
                    run->be->gather(ws->x, ws->labels, run->train.x, run->train.y, st->idx, b,
                                    run->train.dim);
                    wall += dt_wall_seconds() - w0;
                } else if (c > 0) {
                    sim_msg_t *in = NULL;
                    if (sim_recv(run, node, act_in, &in) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                    if (in->flag == PIPE_STOP) {
                        stop = 1;
                        break;
                    }
                    DT_ASSERT(in->flag == msg_tag(plan, m, c) && in->step == step &&
                              in->n == in_n);
                    if (finish_acked(run, node, st, 1) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                }
                if (zero_gather(run, plan, node, st, s, k, n_ops, dp, d, w + p0, n_slice) !=
                    SIM_OK) {
                    run->failed = 1;
                    return;
                }
                w0 = dt_wall_seconds();
                if (real)
                    trainer_model_forward_range(ws, w, b, lo, hi);
                if (c == C - 1 && real) {
                    double l;
                    int correct;
                    trainer_model_loss(ws, b, &l, &correct);
                    loss += l;
                }
                if (tp) {
                    if (tp_pass(run, node, plan, tp, r, lo, hi, b, 1, w, NULL) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                } else if (plan->E > 1) {
                    int next_b = k + 1 < n_ops && st->op[k + 1] == 'B'; /* its partner */
                    if (pipe_expert_pass(run, node, plan, c, b, 1, w,
                                         next_b ? st->ch[k + 1] * S + s : -1) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                } else {
                    sim_charge(run, node, plan->fwd[c] * b, wall + dt_wall_seconds() - w0);
                }
                context_exchange(run, node, plan, c, 1);
                if (c + 1 < C) {
                    st->sent[n_sent] =
                        payload(node, &st->own[n_sent],
                                real ? trainer_model_range_output(ws, hi - 1) : w, out_n,
                                msg_tag(plan, m, c + 1), step);
                    st->sends[n_sent] = sim_send_post(run, node, act_out, st->sent[n_sent]);
                    st->order[0][st->n_dir[0]++] = n_sent++;
                }
            } else {
                if (c < C - 1) {
                    sim_msg_t *in = NULL;
                    if (sim_recv(run, node, grad_in, &in) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                    DT_ASSERT(in->flag == msg_tag(plan, m, c) && in->step == step &&
                              in->n == out_n);
                    if (finish_acked(run, node, st, 0) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                }
                if (zero_gather(run, plan, node, st, s, k, n_ops, dp, d, w + p0, n_slice) !=
                    SIM_OK) {
                    run->failed = 1;
                    return;
                }
                /* the chunk's last backward pass of the step reduces its buckets as it goes */
                int overlap = plan->bucketed && plan->bk[c].n > 0 && nb[cv] == M - 1;
                w0 = dt_wall_seconds();
                if (real)
                    trainer_model_backward_range(ws, w, g, b, lo, hi,
                                                 nb[cv] > 0 && !sharded_grads);
                if (tp) { /* (full recomputation: the forward pass again, first) */
                    if ((plan->rerun_fwd && !plan->tp_formula &&
                         tp_pass(run, node, plan, tp, r, lo, hi, b, 1, w, NULL) != SIM_OK) ||
                        tp_pass(run, node, plan, tp, r, lo, hi, b, 0, w,
                                overlap ? plan->bk_end : NULL) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                } else if (overlap) {
                    charge_buckets(run, node, &plan->bk[c], b, dt_wall_seconds() - w0,
                                   plan->bwd[c]);
                } else if (plan->E > 1) {
                    int after_f = k > 0 && st->op[k - 1] == 'F'; /* its partner */
                    if (pipe_expert_pass(run, node, plan, c, b, 0, w,
                                         after_f ? st->ch[k - 1] * S + s : -1) != SIM_OK) {
                        run->failed = 1;
                        return;
                    }
                } else {
                    sim_charge(run, node, plan->bwd[c] * b, dt_wall_seconds() - w0);
                }
                context_exchange(run, node, plan, c, 0);
                if (c > 0) { /* the input gradient goes down before any all-reduce */
                    st->sent[n_sent] = payload(node, &st->own[n_sent],
                                               real ? trainer_model_range_grad(ws, lo - 1)
                                                    : w,
                                               in_n,
                                               msg_tag(plan, m, c - 1), step);
                    st->sends[n_sent] = sim_send_post(run, node, grad_out, st->sent[n_sent]);
                    st->order[1][st->n_dir[1]++] = n_sent++;
                }
                if (plan->emb && (s == 0 || s == S - 1) &&
                    pipe_gpt_tied(run, plan, d, s, g, acc, c == C - 1 ? nb[cv] == 0 : -1,
                                  backwards + 1 == M * V) != SIM_OK) {
                    run->failed = 1;
                    return;
                }
                if (sharded_grads && pipe_zero_shard_reduce(run, plan, dp, d, g + p0, acc + p0,
                                                            n_slice, nb[cv] == 0) != SIM_OK) {
                    run->failed = 1;
                    return;
                }
                nb[cv]++;
                if (++backwards == M * V) {
                    /* the stage's last backward of the step: with replicas, the sum of the
                     * stage's gradients over them, while the stages below go on with their
                     * backward passes; then its update (stage 0 evaluates after its own, the
                     * step's last); interleaved, chunk by chunk once all are done, as
                     * Megatron-LM reduces each model chunk's gradients */
                    if (plan->zero_prefetch) /* every job of the step */
                        wait_job(run, node, st, plan->zjobs[s].n - 1);
                    else if (bucketed)
                        sim_buckets_wait(run, node);
                    for (int u = 0; u < V && !run->failed; u++) {
                        int cu = u * S + s;
                        size_t q0 = plan->p0[cu];
                        if (plan->zero_overlap) { /* the stream reduce-scattered it */
                            if (pipe_zero_update(run, plan, dp, d, cu, w, g, v, step) != SIM_OK)
                                run->failed = 1;
                        } else if ((plan->E > 1 && ep_reduce(run, plan, node, g + q0,
                                                             plan->p1[cu] - q0, plan->pe[cu])) ||
                                   stage_update(run, plan, dp, d, w + q0, g + q0, v + q0,
                                                acc + q0, plan->p1[cu] - q0, step,
                                                (plan->bucketed && plan->bk[cu].n > 0) ||
                                                    plan->E > 1) != SIM_OK)
                            run->failed = 1;
                    }
                    if (run->failed)
                        return;
                    /* replica 0's weights are the step's once its last stage has updated
                     * (no stage updates the next step before every stage did this one) */
                    if (d == 0 && r == 0 && ++plan->updated == S) {
                        plan->updated = 0;
                        /* the step's samples, every replica's, counted here before its
                         * evaluation row: another replica's last stage may end its step
                         * after this one (one stage on a tensor group did) */
                        run->samples += (double)run->sc->batch * (plan->D / plan->cp);
                        count_members(run, plan);
                        count_replicas(run, plan);
                        sim_eval_mark(run, step, w);
                    }
                }
            }
        }
        for (int k = 0; k < n_sent; k++)
            if (st->sends[k] && sim_send_finish(run, node, st->sends[k], st->sent[k]) != SIM_OK) {
                run->failed = 1;
                return;
            }
        if (stop) {
            if (s + 1 < S) { /* the stages below stop too */
                sim_msg_t *m = payload(node, &st->own[n_max], w, 0, PIPE_STOP, step);
                m->bytes = 64.0 * plan->fold;
                sim_send(run, node, act_out, m);
            }
            break;
        }
        if (s == S - 1 && r == 0) /* its samples: where replica 0's step ends, above */
            sim_count_step(run, node, 0, real ? loss / (double)run->sc->batch : NAN);
        else
            node->steps++;
    }
    if (d == 0 && r == 0 && ++plan->exited == S && !run->failed) { /* after replica 0's last update */
        count_members(run, plan);
        count_replicas(run, plan);
        sim_eval_final(run, step, w);
    }
    if (plan->one)
        stand_for_members(run, plan, node);
    if (plan->rep_one)
        stand_for_replicas(run, plan, node);
}

/* "hybrid: 2 replicas of pipeline: 2 stages of layers 0-1 | 2-3, 4 micro-batches of 8, ..." */
static void summary(const sim_run_t *run, char *line, size_t size)
{
    const pipe_plan_t *plan = run->shared;
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
            n += snprintf(line + n, size - (size_t)n, "%s%d-%d", u ? "," : s ? " | " : " ",
                          plan->first[c], plan->first[c + 1] - 1);
        }
    if (n >= (int)size)
        return;
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
    n = (int)strlen(line);
    if (plan->tp_nccl && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; tensor all-reduces as NCCL runs them (algorithm %s, protocol %s, on %s; "
                 "contention on the group's links left out)",
                 plan->nccl_algo < 0 ? "by size" : sim_nccl_algo_name(plan->nccl_algo),
                 plan->nccl_proto < 0 ? "by size" : sim_nccl_proto_name(plan->nccl_proto),
                 !plan->nccl_device        ? "the platform's links"
                 : plan->nccl.nvls_busbw > 0 ? "the device's NVLink with NVLS"
                                             : "the device's NVLink");
    else if (plan->tp_formula && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; tensor all-reduces by formula (an approximation: contention on the "
                 "group's links left out)");
    else if (plan->tp_why && n < (int)size)
        snprintf(line + n, size - (size_t)n, "; tensor all-reduces as messages (%s%s)",
                 plan->tp_why,
                 scenario_own(run->sc, "tensor_overlap")->i ? "; tensor_overlap not applied"
                                                            : "");
    n = (int)strlen(line);
    if (plan->tp_overlap && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; each all-reduce overlapped with its layer's compute in %d chunks "
                 "(tensor_overlap)",
                 plan->T);
    n = (int)strlen(line);
    if (plan->dp_nccl && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 "; replicas' collectives as NCCL runs them (%d servers of %d, algorithm %s, "
                 "protocol %s; contention with other traffic left out)",
                 plan->dp_group[0].model.nodes,
                 plan->dp_group[0].model.ranks / plan->dp_group[0].model.nodes,
                 pipe_nccl_algo(run->sc) < 0 ? "by size"
                                             : sim_nccl_algo_name(pipe_nccl_algo(run->sc)),
                 pipe_nccl_proto(run->sc) < 0 ? "by size"
                                              : sim_nccl_proto_name(pipe_nccl_proto(run->sc)));
    else if (plan->dp_why && n < (int)size &&
             scenario_own(run->sc, "dp_comm")->i == SIM_DP_NCCL)
        snprintf(line + n, size - (size_t)n, "; replicas' collectives as messages (dp_comm = "
                 "nccl, but %s)", plan->dp_why);
    n = (int)strlen(line);
    if (plan->E > 1 && n < (int)size)
        snprintf(line + n, size - (size_t)n, "; experts over groups of %d replicas%s, "
                 "all-to-alls %s%s%s", plan->E, plan->imbalance > 1 ? " (imbalanced)" : "",
                 plan->ep_formula ? "by formula" : "as messages", plan->ep_why ? ": " : "",
                 plan->ep_why ? plan->ep_why : "");
    n = (int)strlen(line);
    if (plan->ep_nodes > 0 && n < (int)size)
        snprintf(line + n, size - (size_t)n,
                 ", each token to at most %d servers of %d members (expert_nodes)",
                 plan->ep_nodes, plan->ep_node_size);
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
        snprintf(line + n, size - (size_t)n, " on %.3g%% of the multiprocessors while they run "
                 "(expert_comm_sms)", 100 * (1 - plan->ep_comm_share));
    n = (int)strlen(line);
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
    n = (int)strlen(line);
    if (n < (int)size)
        pipe_zero_summary(plan, line + n, size - (size_t)n);
}

static void free_twin(sim_run_t *run, void *ctx)
{
    (void)ctx;
    free((void *)run->worker_twin);
    run->worker_twin = NULL;
}

static void deploy(sim_run_t *run)
{
    pipe_plan_t *plan = pipe_plan_make(run);
    run->shared = plan;
    run->shared_free = pipe_plan_free;
    /* tensor_members = one: member 0 of each tensor group runs for all T (plan_members),
     * and the group's hosts' energy is its host's */
    int step = plan->one ? plan->T : 1;
    /* data_members = one: replica 0's workers run for all D (plan_replicas) */
    int live = plan->rep_one ? plan->S * plan->T : run->n_workers;
    if (plan->one || plan->rep_one) {
        int *twin = dt_malloc(sizeof(int) * (size_t)run->n_workers);
        for (int i = 0; i < run->n_workers; i++) {
            int j = i % live;
            twin[i] = plan->one ? j - j % plan->T : j;
        }
        run->worker_twin = twin;
        run->twin_share = 1.0 / plan->fold;
        sim_run_on_free(run, free_twin, NULL);
        if (plan->widen)
            sim_platform_widen(&run->plat, plan->T);
    }
    if (plan->zero_prefetch) { /* each member's stream gathers and reduces (pipe_zero_jobs) */
        size_t n_max = 2 * (size_t)plan->M * (size_t)plan->V;
        char *op = dt_malloc(n_max);
        int *mb = dt_malloc(sizeof(int) * n_max), *ch = dt_malloc(sizeof(int) * n_max);
        for (int s = 0; s < plan->S; s++) {
            int n_ops = schedule(plan, pipe_schedule_of(run->sc), s, op, mb, ch);
            pipe_zero_jobs(plan, s, op, ch, n_ops);
        }
        free(op);
        free(mb);
        free(ch);
        const sim_bucket_list_t **list = dt_calloc((size_t)run->n_workers, sizeof *list);
        for (int i = 0; i < live; i += step)
            list[i] = &plan->zjobs[i / plan->T % plan->S];
        if (plan->dp_formula) /* in closed form: no stream actors */
            sim_buckets_start_timed(run, list, bucket_seconds, 1);
        else
            sim_buckets_start_each(run, list, bucket_reduce);
        free(list);
    } else if (plan->bucketed) { /* each member's stream reduces its stage's buckets */
        const sim_bucket_list_t **list = dt_calloc((size_t)run->n_workers, sizeof *list);
        for (int i = 0; i < live; i += step)
            list[i] = &plan->bk_stage[i / plan->T % plan->S];
        if (plan->dp_formula && (plan->zero || dp_algo(run) == SIM_ALLREDUCE_RING))
            sim_buckets_start_timed(run, list, bucket_seconds, 0);
        else
            sim_buckets_start_lists(run, list, bucket_reduce);
        free(list);
    }
    for (int i = 0; i < live; i += step)
        sim_spawn(run, &run->workers[i], stage);
}

/* What a stage holds: its layers' parameters, gradients and optimizer state (ZeRO shards
 * the optimizer state, from stage 2 the gradients, at stage 3 the parameters: the ZeRO
 * paper's accounting, without the buffers of a gather or a reduction in flight), and the
 * activations of the micro-batches in flight at the schedule's peak (gpipe: all M; 1f1b:
 * at most S - s; interleaved: its warm-up's virtual micro-batches + 1, each a chunk's),
 * with the largest piece that model.recompute recomputes at once. */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    pipe_plan_t *plan = dt_calloc(1, sizeof *plan); /* before deploy: the layout alone */
    pipe_plan_layout(plan, run);
    int S = plan->S, V = plan->V, s = node->rank / plan->T % S;
    double slice = 0, shard = 0, piece = 0, vb = run->value_bytes;
    for (int u = 0; u < V; u++) {
        int c = u * S + s;
        double n = (double)(plan->p1[c] - plan->p0[c]);
        slice += n;
        shard += ceil(n / plan->D); /* ZeRO: the largest chunk of each slice */
        piece = fmax(piece, plan->act_piece[c]);
    }
    double tied = pipe_gpt_tied_copy(run, S, s); /* the real gpt's last stage: wte */
    slice += tied;
    shard += ceil(tied / plan->D);
    /* the schedule walked: a forward keeps its chunk's activations until its backward */
    size_t n_max = 2 * (size_t)plan->M * (size_t)V;
    char *op = dt_malloc(n_max);
    int *mb = dt_malloc(sizeof(int) * n_max), *ch = dt_malloc(sizeof(int) * n_max);
    int n_ops = schedule(plan, pipe_schedule_of(run->sc), s, op, mb, ch);
    int *live = dt_calloc((size_t)V, sizeof(int)); /* micro-batches held, per chunk */
    double peak = 0;
    for (int k = 0; k < n_ops; k++) {
        live[ch[k]] += op[k] == 'F' ? 1 : -1;
        double held = 0; /* (counts times sizes: 1f1b's S - s times its size, exactly) */
        for (int u = 0; u < V; u++)
            held += live[u] * plan->act[u * S + s];
        peak = fmax(peak, held);
    }
    free(live);
    free(op);
    free(mb);
    free(ch);
    node->mem.params = (plan->zero >= 3 ? shard : slice) * vb;
    /* zero_grad_overlap: whole gradients add up over the micro-batches (pipeline_zero.c) */
    int whole_grads = plan->zero_overlap && plan->M * V > 1;
    node->mem.grads = (plan->zero >= 2 && !whole_grads ? shard : slice) * vb;
    node->mem.optimizer = (plan->zero >= 1 ? shard : slice) * scenario_optimizer_bytes(run->sc);
    node->mem.activations = (peak + piece) * plan->micro * vb;
    pipe_plan_free(plan);
}

/* A compute call: a micro-batch, a member's share of its context group's tokens, a tensor
 * group member's share (sequence parallel or not), the expert group its routed experts take
 * tokens from. */
static void compute_call(const scenario_t *sc, double *samples, int *T, int *sp, int *E)
{
    *E = (int)scenario_own(sc, "expert")->l;
    *samples = (double)sc->batch / (double)pipe_micro_batches(sc);
    *T = (int)pipe_tensor(sc);
    *sp = *T > 1 && scenario_own(sc, "sequence_parallel")->i;
    *samples /= (double)scenario_own(sc, "context")->l;
}

static void hosts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)(pipe_stages(sc) * pipe_replicas(sc) * pipe_tensor(sc)) * pipe_context(sc);
    *servers = 0;
}

/* a pipeline trains one model on model.batch: its stages share the batch */
static int replicas(const scenario_t *sc, int workers)
{
    (void)workers;
    return (int)pipe_replicas(sc);
}

/* a step's activations and gradients in flight (interleaved: of every chunk) */
static size_t msg_slots(const sim_run_t *run, const sim_node_t *node, size_t n)
{
    (void)node;
    (void)n;
    const scenario_t *sc = run->sc;
    long V = pipe_schedule_of(sc) == SIM_PIPE_INTERLEAVED ? scenario_own(sc, "virtual_stages")->l
                                                           : 1;
    return 2 * (size_t)(2 * (pipe_micro_batches(sc) * V + pipe_replicas(sc) * pipe_context(sc) +
                             pipe_tensor(sc)) +
                        8);
}

/* virtual_stages: chunks a stage under the interleaved schedule; 1f1b or gpipe, 1 (checked
 * unless a sweep over schedules gives it to every run). An error names its key. */
static dt_status check_interleaved(const scenario_t *sc, dt_err_t *err, int weighted)
{
    char where[96];
    const char *k;
    long V = scenario_own(sc, "virtual_stages")->l, S = pipe_stages(sc);
    if (pipe_schedule_of(sc) != SIM_PIPE_INTERLEAVED) {
        if (V == 1 || scenario_key_swept(sc, "strategy.pipeline_schedule"))
            return DT_OK;
        k = scenario_blame(sc, "strategy.virtual_stages", "strategy.pipeline_schedule", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "virtual_stages = %ld chunks a stage need pipeline_schedule = "
                             "interleaved, not %s (%s)",
                             V, pipe_schedule_of(sc) == SIM_PIPE_GPIPE ? "gpipe" : "1f1b", where);
    }
    if (V == 1) /* 1f1b's schedule */
        return DT_OK;
    if (S == 1) {
        k = scenario_blame(sc, "strategy.virtual_stages", "strategy.stages", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "virtual_stages = %ld interleaves the chunks of 2 or more stages; "
                             "one stage has no pipeline to interleave (%s)",
                             V, where);
    }
    if (pipe_micro_batches(sc) % S) { /* Megatron-LM asserts it: its chunk order goes S at a time */
        k = scenario_blame(sc, "strategy.micro_batches", "strategy.stages", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "the interleaved schedule takes micro-batches S at a time through "
                             "each chunk: micro_batches = %ld must be a multiple of stages = %ld "
                             "(%s)",
                             pipe_micro_batches(sc), S, where);
    }
    int pieces = sc->profile[0] ? sc->profile_pieces : weighted;
    if (S * V > pieces || S * V > PIPE_MAX_CHUNKS) {
        k = scenario_blame(sc, "strategy.virtual_stages", "strategy.stages", where, sizeof where);
        char what[640];
        if (S * V > PIPE_MAX_CHUNKS)
            snprintf(what, sizeof what, "at most %d", PIPE_MAX_CHUNKS);
        else if (sc->profile[0])
            snprintf(what, sizeof what,
                     "the profile %s can be cut into at most %d (its [forward] cuts + 1)",
                     sc->profile, pieces);
        else
            snprintf(what, sizeof what, "the %s has %d %s, and a chunk needs at least one",
                     trainer_arch_name(sc->model.arch), pieces,
                     sc->model.arch == TRAINER_ARCH_GPT ? "blocks (model.layers)"
                     : pieces == 1                     ? "layer with weights"
                                                       : "layers with weights");
        return scenario_fail(sc, err, k,
                             "stages x virtual_stages = %ld x %ld = %ld chunks, but %s (%s)", S,
                             V, S * V, what, where);
    }
    return DT_OK;
}

/* strategy.tensor_comm's values, in the order of PIPE_TP_* */
static const char *const tensor_comm_names[] = {"messages", "formula", "nccl", NULL};

/* tensor_comm = nccl: what NCCL can run. The device's NVLink needs its figures and holds an
 * HGX server's 8 GPUs; NVLS needs the switch's SHARP (nvls_busbw) and runs Simple only;
 * NCCL's trees all-reduce only, so sequence parallelism's reduce-scatters cannot take one. */
static dt_status check_nccl(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    if (pipe_tensor(sc) < 2 || scenario_own(sc, "tensor_comm")->i != PIPE_TP_NCCL)
        return DT_OK;
    int device = scenario_own(sc, "nccl_links")->i == PIPE_LINKS_DEVICE;
    int algo = pipe_nccl_algo(sc), proto = pipe_nccl_proto(sc);
    const sim_device_profile_t *d = scenario_device(sc);
    int nvlink = d && d->value[SIM_DEV_NVLINK_BUSBW] > 0;
    int nvls = nvlink && d->value[SIM_DEV_NVLS_BUSBW] > 0;
    if (device && !nvlink) {
        k = scenario_blame(sc, "strategy.tensor_comm", "cluster.device", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor_comm = nccl runs on the server's NVLink, but the device %s "
                             "has no nvlink_busbw (the catalogue gives it for a100, a100-80gb, "
                             "h100, h200, b200); or use nccl_links = platform (%s)",
                             sc->device[0] ? sc->device : "custom", where);
    }
    if (device && pipe_tensor(sc) > 8) {
        k = scenario_blame(sc, "strategy.tensor", "strategy.tensor_comm", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor = %ld with tensor_comm = nccl on NVLink: a server's NVLink "
                             "joins 8 GPUs (HGX); use nccl_links = platform (%s)",
                             pipe_tensor(sc), where);
    }
    if (algo == SIM_NCCL_NVLS && !(device && nvls)) {
        k = scenario_blame(sc, "strategy.nccl_algorithm", device ? "cluster.device"
                                                                 : "strategy.nccl_links",
                           where, sizeof where);
        return scenario_fail(sc, err, k,
                             "nccl_algorithm = nvls needs NVLink SHARP in the server's switch: %s "
                             "(%s)",
                             device ? "the device has no nvls_busbw (h100, h200 and b200 do)"
                                    : "nccl_links = platform has none",
                             where);
    }
    if (algo == SIM_NCCL_NVLS && proto >= 0 && proto != SIM_NCCL_SIMPLE) {
        k = scenario_blame(sc, "strategy.nccl_protocol", "strategy.nccl_algorithm", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "nccl_algorithm = nvls runs the simple protocol only, not %s (%s)",
                             sim_nccl_proto_name((sim_nccl_proto_t)proto), where);
    }
    if (algo == SIM_NCCL_TREE && scenario_own(sc, "sequence_parallel")->i) {
        k = scenario_blame(sc, "strategy.nccl_algorithm", "strategy.sequence_parallel", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "nccl_algorithm = tree all-reduces only; sequence_parallel's "
                             "reduce-scatters and all-gathers need ring or nvls (%s)",
                             where);
    }
    return DT_OK;
}

/* context = cp > 1: a timing-only run of a transformer profile whose [shape] section gives
 * its attention cores (dtsim profile transformer writes it), each sequence cut into 2 cp
 * equal chunks (Megatron-LM's load balancing under the causal mask), on a star or
 * multi-rack platform under CM02 or LV08, where the key/value exchange has a closed form
 * (pipe_context_step). An error names its key. */
static dt_status check_context(const scenario_t *sc, dt_err_t *err)
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
        const char *k = scenario_blame(sc, "strategy.context",
                                       model == SIM_NET_SMPI || model == SIM_NET_TCP
                                           ? "cluster.network_model"
                                           : "cluster.platform",
                                       where, sizeof where);
        return scenario_fail(sc, err, k,
                             "context = %ld times ring attention's key/value exchange in closed "
                             "form, on a star or multi-rack platform under CM02 or LV08 (%s)",
                             cp, where);
    }
    return DT_OK;
}

/* The model must have a stage's worth of layers for every stage (a chunk's for every
 * chunk, interleaved), the hosts must be stages x data_parallel, and a step trains one
 * model on the global batch, without faults. */
static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    int weighted = sc->model.arch == TRAINER_ARCH_LOGREG ? 1
                   : sc->model.arch == TRAINER_ARCH_MLP  ? sc->model.n_hidden + 1
                   : sc->model.arch == TRAINER_ARCH_GPT  ? sc->model.layers
                                                         : 4;
    int gpt = !sc->profile[0] && sc->model.arch == TRAINER_ARCH_GPT;
    if (gpt && sc->bucket_mb > 0 && pipe_replicas(sc) > 1) {
        k = scenario_blame(sc, "strategy.bucket_mb", "model.arch", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "a pipeline of the real gpt reduces each stage's gradients over "
                             "its replicas after the step's last backward pass (its tied wte "
                             "is summed first): bucket_mb must be 0 (%s)",
                             where);
    }
    if (sc->profile[0]) { /* a profile's stages end at its cuts */
        int pieces = sc->profile_pieces;
        if (pieces == 0)
            return scenario_fail(sc, err, "model.arch",
                                 "a pipeline of the profile %s needs its [forward] section "
                                 "(each layer's forward FLOPs, outputs and the places a stage "
                                 "may end)",
                                 sc->profile);
        if (pipe_stages(sc) > pieces) {
            k = scenario_blame(sc, "strategy.stages", "model.arch", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "%ld stages but the profile %s can be cut into at most %d "
                                 "(its [forward] cuts + 1; %s)",
                                 pipe_stages(sc), sc->profile, pieces, where);
        }
    } else if (pipe_stages(sc) > weighted) {
        k = scenario_blame(sc, "strategy.stages", gpt ? "model.layers" : "model.arch", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "%ld stages but the %s has %d %s%s%s, and a stage needs at least "
                             "one (%s)",
                             pipe_stages(sc), trainer_arch_name(sc->model.arch), weighted,
                             gpt ? "block" : "layer", weighted == 1 ? "" : "s",
                             gpt ? " (model.layers)" : " with weights", where);
    }
    if (check_interleaved(sc, err, weighted) != DT_OK)
        return DT_ERR_INPUT;
    if (pipe_tensor(sc) > 1 && !sc->profile_splits)
        return scenario_fail(sc, err, "strategy.tensor",
                             "tensor = %ld splits the layers of a model profile with a [tensor] "
                             "section (%s); the tensor strategy splits a real mlp or gpt",
                             pipe_tensor(sc),
                             sc->profile[0] ? "this one has none" : "not a real model");
    if (scenario_own(sc, "tensor_overlap")->i &&
        (pipe_tensor(sc) < 2 || scenario_own(sc, "tensor_comm")->i == PIPE_TP_MESSAGES)) {
        char where[96];
        const char *k = scenario_blame(sc, "strategy.tensor_overlap", "strategy.tensor_comm",
                                       where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor_overlap needs tensor > 1 and tensor_comm = formula or "
                             "nccl (tensor = %ld, tensor_comm = %s; %s)",
                             pipe_tensor(sc), tensor_comm_names[scenario_own(sc, "tensor_comm")->i],
                             where);
    }
    if (check_nccl(sc, err) != DT_OK || pipe_expert_check(sc, err) != DT_OK ||
        check_context(sc, err) != DT_OK)
        return DT_ERR_INPUT;
    long zero = scenario_own(sc, "zero_stage")->l;
    if (!pipe_sharded(sc) && zero != 1 && scenario_key_given(sc, "strategy.zero_stage") &&
        !scenario_key_swept(sc, "strategy.kind")) /* a sweep over kinds: it is zero's */
        return scenario_fail(sc, err, "strategy.zero_stage",
                             "zero_stage = %ld shards a pipeline's replicas only with "
                             "shard_optimizer = yes",
                             zero);
    if (pipe_sharded(sc) && zero == 3 && !sc->profile[0])
        return scenario_fail(sc, err, "strategy.zero_stage",
                             "zero_stage = 3 on a pipeline shards a model profile's parameters "
                             "(timing only); a real model's stages evaluate whole weights: "
                             "expected 1 or 2");
    if (sc->bucket_mb > 0 && pipe_sharded(sc) && pipe_replicas(sc) > 1 &&
        !(zero >= 2 && scenario_own(sc, "zero_grad_overlap")->i)) {
        k = scenario_blame(sc, "strategy.bucket_mb", "strategy.shard_optimizer", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "bucket_mb overlaps a pipeline's all-reduces over its replicas with "
                             "the last backward pass; with shard_optimizer (ZeRO) it buckets "
                             "only zero_stage 2 or 3 with zero_grad_overlap = yes: use "
                             "bucket_mb = 0 (%s)",
                             where);
    }
    long hosts = pipe_stages(sc) * pipe_replicas(sc) * pipe_tensor(sc) * pipe_context(sc);
    if (sc->workers != hosts && scenario_key_given(sc, "cluster.workers")) {
        k = scenario_blame(sc, "cluster.workers", "strategy.stages", where, sizeof where);
        char tp[96] = "";
        int n = 0;
        if (pipe_tensor(sc) > 1)
            n = snprintf(tp, sizeof tp, " x tensor groups of %ld", pipe_tensor(sc));
        if (pipe_context(sc) > 1)
            snprintf(tp + n, sizeof tp - (size_t)n, " x context groups of %d", pipe_context(sc));
        return scenario_fail(sc, err, k,
                             "a pipeline of %ld stages x %ld replicas%s runs on %ld hosts, not %ld "
                             "(workers must equal stages x data_parallel%s%s; %s)",
                             pipe_stages(sc), pipe_replicas(sc), tp, hosts, sc->workers,
                             pipe_tensor(sc) > 1 ? " x tensor" : "",
                             pipe_context(sc) > 1 ? " x context" : "", where);
    }
    if (hosts > 100000)
        return scenario_fail(sc, err, "strategy.data_parallel",
                             "stages x data_parallel x tensor = %ld hosts (at most 100000)", hosts);
    if (sc->batch % pipe_micro_batches(sc)) {
        k = scenario_blame(sc, "strategy.micro_batches", "model.batch", where, sizeof where);
        return scenario_fail(sc, err, k, "%ld micro-batches do not divide a batch of %ld (%s)",
                             pipe_micro_batches(sc), sc->batch, where);
    }
    if (sc->partition.kind != TRAINER_PARTITION_IID)
        return scenario_fail(sc, err, "data.partition",
                             "a pipeline trains one model on the global batch: partition must "
                             "be iid");
    if (scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.kind", "pipeline with [faults] is not supported");
    return DT_OK;
}

/* zero's key: its ZeRO stage over the replicas (with shard_optimizer); how tensor groups'
 * all-reduces are simulated; the interleaved schedule's chunks a stage */
static const char *const nccl_links_names[] = {"device", "platform", NULL};
static const char *const tensor_members_names[] = {"all", "one", NULL};
static const char *const expert_dispatch_names[] = {"model", "fp8", NULL};

static const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", NULL};

static const sim_strategy_key_t own_keys[] = {
    {.key = "stages", .kind = SIM_KEY_INT, .def = "2", .min = 1, .max = 64,
     .doc = "stages, each a run of consecutive layers on its own host (cut where the FLOPs "
            "balance best, at layers with weights; a model profile: at its [forward] cuts); "
            "cluster.workers, if given, must equal it",
     .ignored_elsewhere = 1},
    {.key = "micro_batches", .kind = SIM_KEY_INT, .def = "4", .min = 1, .max = 4096,
     .doc = "micro-batches each step's model.batch is cut into (must divide it)",
     .ignored_elsewhere = 1},
    {.key = "pipeline_schedule", .kind = SIM_KEY_ENUM, .def = "1f1b", .names = schedule_names,
     .doc = "gpipe (all forwards, then all backwards; every micro-batch's activations held "
            "at once), 1f1b (PipeDream-Flush: one forward, one backward; at most stages "
            "micro-batches in flight) or interleaved (Megatron-LM: 1f1b over virtual_stages "
            "chunks of layers a stage, bubble divided by virtual_stages); all flush and "
            "update once per step",
     .ignored_elsewhere = 1},
    {.key = "data_parallel", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 4096,
     .doc = "replicas of the whole pipeline (hybrid data + pipeline parallelism: "
            "data_parallel x stages workers, each replica on its own batch of model.batch, "
            "each stage's gradients all-reduced with `algorithm` across the replicas before "
            "its update); cluster.workers, if given, must equal data_parallel x stages",
     .ignored_elsewhere = 1},
    {.key = "tensor", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 1024,
     .doc = "of a model profile with a [tensor] section: hosts every stage is split across "
            "(Megatron-LM tensor parallelism: the profile's column, row, heads and vocab "
            "layers divided, an all-reduce per marked layer in the tensor group); workers = "
            "tensor x stages x data_parallel",
     .ignored_elsewhere = 1},
    SIM_KEY_SEQUENCE_PARALLEL,
    {.key = "shard_optimizer", .kind = SIM_KEY_BOOL, .def = "no",
     .doc = "with data_parallel > 1: ZeRO over the replicas, stage zero_stage (1: each "
            "stage's gradients reduce-scattered, each replica updating 1/data_parallel of "
            "them with that share of the optimizer state, the weights all-gathered; ring)",
     .ignored_elsewhere = 1},
    SIM_KEY_ZERO_STAGE,
    SIM_KEY_ZERO_GRAD_OVERLAP,
    SIM_KEY_ZERO_PREFETCH,
    {.key = "tensor_comm", .kind = SIM_KEY_ENUM, .def = "messages", .names = tensor_comm_names,
     .doc = "of a profile with tensor > 1: how a tensor group's all-reduces are "
            "simulated; messages: a ring of real messages, each layer's in turn; formula: "
            "each member's pass is one charge of its layers' FLOPs and one wait of its "
            "all-reduces' ring time in closed form (a tensor group in one cluster of a star "
            "or multi-rack platform, CM02 or LV08, no faults; else messages), far cheaper to "
            "simulate, exact while the group's links carry nothing else (dtsim plan uses it); "
            "nccl: the same, each all-reduce (reduce-scatter and all-gather under "
            "sequence_parallel) taking the time NCCL takes inside a server, by "
            "nccl_algorithm and nccl_protocol on nccl_links (no faults; else messages)"},
    {.key = "tensor_members", .kind = SIM_KEY_ENUM, .def = "all", .names = tensor_members_names,
     .doc = "with tensor > 1 and tensor_comm = formula or nccl: which members of a "
            "tensor group are simulated; all: every member, an actor each; one: member 0 of "
            "each group for all T (they do the same work), its messages to the next stage and "
            "its all-reduces over the replicas carrying the group's bytes, the others' rows "
            "copied from it: T times fewer actors and activities, within 0.5% of all where "
            "the members' flows share a rack's uplink (multi-rack, a rack per tensor group, "
            "host links at least as fast as the uplink) or have links of their own (star); "
            "elsewhere all, and the summary says why"},
    {.key = "data_members", .kind = SIM_KEY_ENUM, .def = "all", .names = tensor_members_names,
     .doc = "with data_parallel > 1 (timing only): which replicas are simulated; "
            "all: every replica; one: replica 0 for all of them (they do the same work at the "
            "same times), the others' rows copied from it and its bytes counted for each: "
            "data_parallel times fewer actors, the same times to the digit, where nothing "
            "passes between replicas as a message (dp_comm = formula or nccl, the ring "
            "algorithm, no expert parallelism) and no link carries two replicas' flows (a "
            "star, or multi-rack with each rack's hosts in one replica); elsewhere all, and "
            "the summary says why; the timeline and the links' traffic show replica 0"},
    SIM_KEY_NCCL_ALGORITHM,
    SIM_KEY_NCCL_PROTOCOL,
    {.key = "nccl_links", .kind = SIM_KEY_ENUM, .def = "device", .names = nccl_links_names,
     .doc = "tensor_comm = nccl: what the tensor group's collectives run on; device: the "
            "server's NVLink as cluster.device gives it (nvlink_busbw, nvls_busbw), with "
            "NCCL's latencies; platform: the platform's ring step in closed form (as formula "
            "times it) as every step's latency and the bus bandwidth, no base latency, no NVLS"},
    SIM_KEY_DP_COMM,
    {.key = "tensor_overlap", .kind = SIM_KEY_BOOL, .def = "no",
     .doc = "tensor_comm = formula or nccl: each layer's tensor all-reduce (reduce-scatter "
            "and all-gather under sequence_parallel) overlapped with the layer's own compute, "
            "as Megatron-LM's tp-comm-overlap splits both into tensor chunks: the pass waits "
            "only for the first chunk's transfer and whatever of the rest the compute does "
            "not hide (c/T + (T-1)/T max(c, m) + m/T for compute c and communication m); no: "
            "the all-reduce follows the layer's compute (Megatron-LM's default)"},
    {.key = "expert", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 65536,
     .doc = "of a profile with an [experts] section (dtsim profile transformer "
            "--experts): expert parallelism; each MoE layer's routed experts split over "
            "groups of `expert` consecutive replicas (it divides data_parallel and the "
            "routed experts), its tokens dispatched and combined by all-to-all inside the "
            "group in the forward and the backward pass (in closed form where tensor_comm "
            "is formula or nccl and the group lies in one cluster, else messages); the "
            "experts' gradients all-reduced over the data_parallel / expert replicas holding "
            "them; 1: none"},
    {.key = "expert_imbalance", .kind = SIM_KEY_REAL, .def = "1", .min = 1, .max = 1000,
     .doc = "expert > 1: the busiest member's routed-expert FLOPs over the mean (the load "
            "imbalance of the router), charged to every member as the step waits for the "
            "busiest; 1: balanced"},
    {.key = "expert_overlap", .kind = SIM_KEY_BOOL, .def = "no",
     .doc = "expert > 1, tensor_comm = formula or nccl, no tensor groups: DeepSeek-V3's "
            "DualPipe overlap; a forward pass that the schedule follows with a backward pass "
            "runs beside it, the pair's all-to-alls behind the pair's compute (the pair takes "
            "the longer of its compute and its all-to-alls); the warm-up forwards and the last "
            "backwards, with no partner, wait theirs; no: each all-to-all follows its "
            "block's compute"},
    {.key = "expert_comm_sms", .kind = SIM_KEY_INT, .def = "0", .min = 0, .max = 1024,
     .doc = "expert_overlap, a device with sms (fewer than them): the multiprocessors the "
            "all-to-all kernels hold while they run beside the pair's compute (DeepSeek-V3: "
            "20 of the H800's 132), that share of the compute lost for as long as they run: "
            "the pair takes max(m, c + expert_comm_sms / sms x m) for compute c and "
            "all-to-alls m; 0: the all-to-alls take no compute"},
    {.key = "expert_nodes", .kind = SIM_KEY_INT, .def = "0", .min = 0, .max = 65536,
     .doc = "expert > 1, tensor_comm = formula or nccl: node-limited routing (DeepSeek-V3: 4); "
            "each token goes to at most this many servers of its expert group, crossing the "
            "network once to each (min(top_k, expert_nodes) of the group's servers, all but "
            "1/servers of them remote) and forwarded inside the server to its experts (not "
            "timed); the all-to-all is servers - 1 shifts between members of the same index; "
            "0: every copy of a token goes to its expert's member"},
    {.key = "expert_node_size", .kind = SIM_KEY_INT, .def = "8", .min = 1, .max = 1024,
     .doc = "expert_nodes > 0: members of an expert group per server (consecutive in the "
            "group; it divides expert)"},
    {.key = "expert_dispatch", .kind = SIM_KEY_ENUM, .def = "model",
     .names = expert_dispatch_names,
     .doc = "expert > 1, tensor_comm = formula or nccl: the bytes of a value the dispatch "
            "all-to-alls move (forward: the tokens; backward: the gradients of the combine's "
            "outputs); fp8: one (DeepSeek-V3, the combines staying in BF16); model: "
            "model.precision's"},
    {.key = "context", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 1024,
     .doc = "of a transformer profile (timing only): context parallelism, each "
            "micro-batch's sequence split over a context group of this many hosts (Megatron-LM's "
            "load-balanced chunks: 1/context of every layer's FLOPs, attention included, and "
            "of the activations), ring attention's key/value exchange per attention layer "
            "overlapped with the attention (forward: K, V; backward: K, V and dK, dV), the "
            "gradients all-reduced over data_parallel x context; hosts stages x data_parallel "
            "x tensor x context, worker ((d context + k) stages + s) tensor + r being member "
            "k of its context group (members stages x tensor hosts apart); star or "
            "multi-rack platform"},
    {.key = "virtual_stages", .kind = SIM_KEY_INT, .def = "1", .min = 1, .max = 64,
     .doc = "with pipeline_schedule = interleaved: chunks of layers each stage holds "
            "(Megatron-LM's virtual pipeline stages): the model is cut into stages x "
            "virtual_stages chunks, chunk c on stage c mod stages, which divides the bubble by "
            "virtual_stages for as many more messages; micro_batches must be a multiple of "
            "stages; 1 is 1f1b"},
    {0},
};

const sim_strategy_t sim_strategy_pipeline = {
    .name = "pipeline",
    .about = "the model's layers in `stages` consecutive runs, one per host; `micro_batches` "
             "micro-batches of `batch` flow through them (GPipe, 1F1B or Megatron-LM's "
             "interleaved 1F1B over `virtual_stages` chunks a stage, `pipeline_schedule`), "
             "activations forward and their gradients back as messages; one SGD update per "
             "step on each stage's layers; `data_parallel` > 1 replicates the whole pipeline "
             "(hybrid), each stage all-reducing its gradients across the replicas (in buckets of "
             "`bucket_mb` during the step's last backward pass; ZeRO stage `zero_stage` with "
             "`shard_optimizer`); `tensor` > 1 splits each stage of a model profile across a "
             "tensor group (Megatron-LM); `expert` > 1 splits a MoE profile's routed experts "
             "over groups of replicas, tokens dispatched and combined by all-to-all",
    .own_keys = own_keys,
    .worker_role = "worker",
    .takes =
        SIM_TAKES_ALLREDUCE | SIM_TAKES_BUCKETS | SIM_NEEDS_PEER_LINKS | SIM_SAME_AS_SINGLE,
    .check = check,
    .compute_call = compute_call,
    .hosts = hosts,
    .replicas = replicas,
    .msg_slots = msg_slots,
    .deploy = deploy,
    .memory = memory,
    .summary = summary,
};
