/* A stage at work (pipe_stage, one activity per worker simulated): each step its schedule's
 * passes in turn, a forward pass taking its micro-batch or the activations from the stage
 * before and sending its own on, a backward pass taking the gradients from the stage after
 * and sending its input's gradient back; after the step's last backward pass, the stage's
 * reduction over its replicas and its update. Stage 0 decides when the run stops (a STOP
 * travels down the pipe); the last of replica 0's stages to update evaluates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

/* What a message to model chunk `chunk` about micro-batch `micro` carries in its flag: the
 * receiver checks that what arrives is what its schedule expects. */
static int msg_tag(const pipe_plan_t *plan, int micro, int chunk)
{
    return micro * plan->C + chunk;
}

/* A message of n floats at data (in the shared workspace), flagged `flag`, in the
 * stage's own header msg: its activations and gradients stay in flight for the whole step,
 * while a tensor group's collectives cycle through the node's ring of headers. */
static sim_msg_t *payload(sim_node_t *node, sim_msg_t *msg, const float *data, size_t n, int flag,
                          long step)
{
    sim_msg_init(node, msg);
    msg->data = data;
    msg->n = n;
    /* tensor_members = one: member 0's message stands for the group's (pipe_plan_members) */
    msg->bytes =
        sim_current->value_bytes * (double)n * ((const pipe_plan_t *)sim_current->shared)->fold;
    msg->flag = flag;
    msg->step = step;
    return msg;
}

/* A stage's last backward pass of the step with buckets, without a tensor group: its FLOPs
 * bucket by bucket (the measured wall time shared by FLOPs), each bucket handed to the
 * stream once charged. */
static void charge_buckets(sim_run_t *run, sim_node_t *node, const sim_bucket_list_t *bk,
                           int samples, double wall, double flops)
{
    for (int k = 0; k < bk->n; k++) {
        sim_charge(run, node, bk->flops[k] * samples, flops > 0 ? wall * bk->flops[k] / flops : 0);
        sim_buckets_ready(run, node);
    }
}

void pipe_optim_apply(sim_run_t *run, const pipe_optim_t *o, size_t at, size_t n, float clip)
{
    if (clip != 1.0f)
        run->be->scale(n, clip, o->g + at);
    sim_update(run, o->w + at, o->g + at, o->m + at, o->v ? o->v + at : NULL, n, o->step,
               o->step + 1);
}

/* The first half of a stage's update after its last backward pass of the step, on chunk
 * c's slice of n parameters from p0: with replicas, the sum of its gradients over them
 * (the group of replica d's stage), then their mean; its sum of squares added to *sq
 * unless NULL. ZeRO (strategy.shard_optimizer with zero_stage): replica d's chunk d of the
 * slice alone (pipe_zero_slice_reduce: stage 1 gets the chunk's sum by a ring
 * reduce-scatter of the step's gradients, the same weights and bytes as the ring
 * all-reduce; stages 2 and 3 have it in acc). reduced: the stage's stream has summed the
 * gradients already, bucket by bucket (plan_buckets in plan.c). */
static sim_status_t stage_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                 int d, float *g, const float *acc, size_t n, int reduced,
                                 double *sq)
{
    float mean = 1.0f / (float)(plan->M * plan->D);
    sim_status_t st;
    if (plan->D > 1 && plan->zero)
        return pipe_zero_slice_reduce(run, plan, grp, d, g, acc, n, sq);
    if (plan->D > 1 && !reduced &&
        (st = pipe_dp_allreduce(run, plan, grp, d, g, n, pipe_dp_algo(run))) != SIM_OK)
        return st;
    run->be->scale(n, mean, g);
    if (sq)
        *sq += run->be->sumsq(g, n);
    return SIM_OK;
}

/* Its second half: the optimizer on what replica d updates of the slice, the gradients
 * scaled by clip first; under ZeRO, replica d's chunk with that chunk's state alone, then
 * stages 1 and 2 all-gather the weights, stage 3 keeps its shard
 * (pipe_zero_slice_update). */
static sim_status_t stage_apply(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                int d, const pipe_optim_t *o, size_t p0, size_t n, float clip)
{
    if (plan->D > 1 && plan->zero)
        return pipe_zero_slice_update(run, plan, grp, d, o, p0, n, clip);
    pipe_optim_apply(run, o, p0, n, clip);
    return SIM_OK;
}

static void stage_state_free(sim_node_t *node)
{
    pipe_stage_state_t *st = node->state;
    free(st->backwards_of);
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
    pipe_gpt_tensor_bufs_free(st->tb, sim_current->be);
}

/* The peer that our sends of direction dir go to has sent us its next message: the sends it
 * had taken in by then are finished (no simulated time passes). */
static sim_status_t finish_acked(sim_run_t *run, sim_node_t *node, pipe_stage_state_t *st, int dir)
{
    int upto = st->acked[dir][st->n_got[dir]++];
    for (; st->n_done[dir] < upto && st->n_done[dir] < st->n_dir[dir]; st->n_done[dir]++) {
        int slot = st->order[dir][st->n_done[dir]];
        sim_status_t status = sim_send_finish(run, node, st->sends[slot], st->sent[slot]);
        st->sends[slot] = NULL;
        if (status != SIM_OK)
            return status;
    }
    return SIM_OK;
}

/* zero_prefetch: returns once the stream has run the step's job `job` and those before it */
static void wait_job(sim_run_t *run, sim_node_t *node, pipe_stage_state_t *st, int job)
{
    for (; st->zawaited <= job; st->zawaited++)
        sim_buckets_wait(run, node);
}

/* One member of a stage at work: who it is, its buffers and groups, and how far its step
 * has come. */
typedef struct stage_ctx {
    sim_run_t *run;
    pipe_plan_t *plan;
    sim_node_t *node;
    pipe_stage_state_t *st;
    int real;                   /* a timing-only stage computes and reads nothing */
    int member, stage, replica; /* member r of stage s of replica d */
    int samples;                /* a micro-batch's */
    const sim_group_t *tp;      /* the stage's tensor group (NULL: tensor = 1) */
    const sim_group_t *dp;      /* the same member of the stage in every replica */
    sim_tgpt_t *const *tg;      /* the real gpt split by tensor: the member's share of each of
                                   its replica's micro-batches (NULL: not split) */
    /* replica d's parameters: one buffer, each stage updating its chunks' slices */
    float *weights, *grads, *acc;
    pipe_optim_t opt;  /* the replica's weights and optimizer state, the member's gradients */
    int sharded_grads; /* ZeRO 2, 3 without zero_grad_overlap: pipe_zero_shard_reduce */
    int bucketed;      /* the stage's stream reduces its chunks' buckets */
    int n_ops;         /* the passes of its schedule a step */
    /* the next and the previous stage, member r; interleaved, the last stage's chunks send
     * on to the first stage's next chunks and the first stage's gradients go back round */
    sim_box_t act_in, grad_in, act_out, grad_out;
    long step; /* the step under way, its sends, its backward passes, its loss */
    int n_sent, backwards, stop;
    double loss;
} stage_ctx_t;

enum { STAGE_ON, STAGE_STOPPED, STAGE_FAILED };

static int stage_failed(stage_ctx_t *x)
{
    x->run->failed = 1;
    return STAGE_FAILED;
}

/* ZeRO stage 3 before op k computes on its slice of n parameters from p0: the slice
 * gathered in turn (pipe_zero_gather_slice), or with zero_prefetch the gather the stream ran
 * meanwhile waited for and the next op's handed over (op 0's first). */
static int zero_gather(stage_ctx_t *x, int k, size_t p0, size_t n)
{
    pipe_plan_t *plan = x->plan;
    if (!plan->zero_prefetch) {
        if (pipe_zero_gather_slice(x->run, plan, x->dp, x->replica, x->weights + p0, n) != SIM_OK)
            return stage_failed(x);
        return STAGE_ON;
    }
    if (k == 0)
        sim_buckets_ready(x->run, x->node);
    wait_job(x->run, x->node, x->st, plan->zgather[x->stage][k]);
    if (k + 1 < x->n_ops)
        sim_buckets_ready(x->run, x->node);
    return STAGE_ON;
}

/* Worker node's place in the run (member r of stage s of replica d), its buffers, its
 * schedule and what its neighbours' schedules say of our sends (pipe_acked_counts). */
static void stage_init(stage_ctx_t *x, sim_node_t *node)
{
    sim_run_t *run = sim_current;
    pipe_plan_t *plan = run->shared;
    int stages = plan->S, tensor = plan->T;
    *x = (stage_ctx_t){.run = run, .plan = plan, .node = node, .real = !run->timing_only};
    x->member = node->rank % tensor;
    x->stage = node->rank / tensor % stages;
    x->replica = node->rank / tensor / stages;
    x->samples = plan->micro;
    x->tp = tensor > 1 ? &plan->tp[x->replica * stages + x->stage] : NULL;
    x->dp = &plan->group[x->stage * tensor + x->member];
    /* the replica's weights: its first worker's, or on a split real gpt its member's */
    sim_node_t *head = &run->workers[x->replica * stages * tensor + (plan->tg ? x->member : 0)];
    x->weights = head->params;
    x->grads = node->grads;
    x->opt = (pipe_optim_t){
        .w = head->params, .g = node->grads, .m = head->velocity, .v = head->moment2};
    x->acc = node->scratch;
    x->sharded_grads = plan->zero >= 2 && plan->D > 1 && !plan->zero_overlap;
    x->bucketed = plan->bucketed && plan->bk_stage[x->stage].n > 0;
    pipe_stage_state_t *st = dt_calloc(1, sizeof *st);
    x->st = st;
    node->state = st;
    node->state_free = stage_state_free;
    size_t n_max = 2 * (size_t)plan->M * (size_t)plan->V; /* the step's passes, and its sends */
    st->op = dt_malloc(n_max);
    st->mb = dt_malloc(sizeof(int) * n_max);
    st->ch = dt_malloc(sizeof(int) * n_max);
    st->idx = dt_malloc(sizeof(uint32_t) * (size_t)x->samples);
    st->sends = dt_calloc(n_max, sizeof(sim_comm_t));
    st->sent = dt_calloc(n_max, sizeof(sim_msg_t *));
    for (int dir = 0; dir < 2; dir++) {
        st->order[dir] = dt_calloc(n_max, sizeof(int));
        st->acked[dir] = dt_calloc(n_max, sizeof(int));
    }
    st->own = dt_calloc(n_max + 1, sizeof(sim_msg_t));
    st->backwards_of = dt_calloc((size_t)plan->V, sizeof(int));
    if (plan->tg) {
        x->tg = plan->tg + (size_t)(x->replica * tensor + x->member) * (size_t)plan->M;
        st->tb = pipe_gpt_tensor_bufs(plan, run, node, x->member, x->stage);
    }
    sim_pipeline_schedule_t kind = pipe_schedule_of(run->sc);
    int next = (x->stage + 1) % stages, prev = (x->stage + stages - 1) % stages;
    x->n_ops = pipe_schedule(plan, kind, x->stage, st->op, st->mb, st->ch);
    if (stages > 1) {
        pipe_acked_counts(plan, kind, next, 'B', 'F', st->acked[0]);
        pipe_acked_counts(plan, kind, prev, 'F', 'B', st->acked[1]);
    }
    int next_worker = (x->replica * stages + next) * tensor + x->member;
    int prev_worker = (x->replica * stages + prev) * tensor + x->member;
    x->act_in = sim_mailbox(node->name, "act");
    x->grad_in = sim_mailbox(node->name, "grad");
    x->act_out = stages > 1 ? sim_mailbox(run->workers[next_worker].name, "act") : NULL;
    x->grad_out = stages > 1 ? sim_mailbox(run->workers[prev_worker].name, "grad") : NULL;
}

/* The floats of a message of n elements at a cut: a member's ceil(n / T) under
 * Megatron-LM's scatter/gather (plan->scatter), else n. */
static size_t cut_floats(const pipe_plan_t *plan, size_t n)
{
    return plan->scatter ? (n + (size_t)plan->T - 1) / (size_t)plan->T : n;
}

/* The message a pass waits for (forward: activations, which may be the STOP instead;
 * backward: gradients) about micro-batch `micro` of model chunk `chunk`, a cut of n
 * elements (cut_floats of them); then the sends the peer had taken in by then are finished
 * (finish_acked: forward, our gradients back); under scatter the tensor group's all-gather
 * of the n. */
static int stage_receive(stage_ctx_t *x, int forward, int micro, int chunk, size_t whole)
{
    size_t n = cut_floats(x->plan, whole);
    sim_msg_t *in = NULL;
    sim_breakdown_comm(x->node, RESULTS_PART_PIPELINE); /* waiting for it: the bubble */
    sim_status_t got = sim_recv(x->run, x->node, forward ? x->act_in : x->grad_in, &in);
    if (got == SIM_OK && !(forward && in->flag == PIPE_STOP)) {
        DT_ASSERT(in->flag == msg_tag(x->plan, micro, chunk) && in->step == x->step && in->n == n);
        got = finish_acked(x->run, x->node, x->st, forward);
    }
    sim_breakdown_comm(x->node, RESULTS_PART_DATA);
    if (got != SIM_OK)
        return stage_failed(x);
    if (forward && in->flag == PIPE_STOP)
        return STAGE_STOPPED;
    /* Megatron-LM's scatter/gather: the member got its 1/T; the group gathers the whole (a
     * tensor group's collective: the breakdown's tensor part) */
    if (x->plan->scatter) {
        sim_breakdown_comm(x->node, RESULTS_PART_TENSOR);
        got = pipe_tp_gather(x->run, x->node, x->plan, x->tp, x->member, x->weights, whole);
        sim_breakdown_comm(x->node, RESULTS_PART_DATA);
        if (got != SIM_OK)
            return stage_failed(x);
    }
    return STAGE_ON;
}

/* Posts a message of a cut of n elements at data (cut_floats of them) to box, for
 * micro-batch `micro` of model chunk `chunk`, among the step's sends of direction dir (0
 * activations on, 1 gradients back). */
static void stage_send(stage_ctx_t *x, sim_box_t box, const float *data, size_t whole, int micro,
                       int chunk, int dir)
{
    pipe_stage_state_t *st = x->st;
    size_t n = cut_floats(x->plan, whole);
    int slot = x->n_sent++;
    st->sent[slot] =
        payload(x->node, &st->own[slot], data, n, msg_tag(x->plan, micro, chunk), x->step);
    st->sends[slot] = sim_send_post(x->run, x->node, box, st->sent[slot]);
    st->order[dir][st->n_dir[dir]++] = slot;
}

/* The part of the step a pass's communication is (breakdown.h): its tensor group's, its
 * experts' all-to-alls, or (set back after the pass) the replicas'. */
static void pass_part(stage_ctx_t *x)
{
    sim_breakdown_comm(x->node, x->tp            ? RESULTS_PART_TENSOR
                                : x->plan->E > 1 ? RESULTS_PART_EXPERT
                                                 : RESULTS_PART_DATA);
}

/* Op k's forward pass of model chunk `chunk`: its FLOPs (those measured take their wall time
 * since `start`, plus `wall` before it), by tensor group, through the experts or alone. */
static int forward_compute(stage_ctx_t *x, int k, int chunk, double wall, double start)
{
    sim_run_t *run = x->run;
    pipe_plan_t *plan = x->plan;
    int lo = plan->first[chunk], hi = plan->first[chunk + 1];
    pass_part(x);
    if (x->tp) {
        if (pipe_tp_pass(run, x->node, plan, x->tp, x->member, lo, hi, x->samples, 1, x->weights,
                         NULL) != SIM_OK)
            return stage_failed(x);
    } else if (plan->E > 1) {
        /* its partner: the backward pass the schedule runs next */
        int next_b = k + 1 < x->n_ops && x->st->op[k + 1] == 'B';
        if (pipe_expert_pass(run, x->node, plan, chunk, x->samples, 1, x->weights,
                             next_b ? x->st->ch[k + 1] * plan->S + x->stage : -1) != SIM_OK)
            return stage_failed(x);
    } else {
        sim_charge(run, x->node, plan->fwd[chunk] * x->samples, wall + dt_wall_seconds() - start);
    }
    sim_breakdown_comm(x->node, RESULTS_PART_CONTEXT);
    pipe_context_exchange(run, x->node, plan, chunk, 1);
    sim_breakdown_comm(x->node, RESULTS_PART_DATA);
    return STAGE_ON;
}

/* Op k, a forward pass: its input (the micro-batch drawn, or the activations received), its
 * slice gathered under ZeRO 3, its compute, its activations sent on. */
static int stage_forward(stage_ctx_t *x, int k)
{
    sim_run_t *run = x->run;
    pipe_plan_t *plan = x->plan;
    pipe_stage_state_t *st = x->st;
    int micro = st->mb[k], chunk = st->ch[k] * plan->S + x->stage; /* its model chunk */
    int lo = plan->first[chunk], hi = plan->first[chunk + 1], samples = x->samples;
    size_t p0 = plan->p0[chunk];
    sim_tgpt_t *tg = x->tg ? x->tg[micro] : NULL;
    trainer_workspace_t *ws = x->real && !tg ? &plan->ws[x->replica * plan->M + micro] : NULL;
    double wall = 0, start;
    if (chunk == 0 && x->real) {
        sim_batch_global(run, x->step, x->replica * plan->M + micro, samples, st->idx);
        start = dt_wall_seconds();
        if (tg)
            sim_tgpt_gather(run, tg, st->idx);
        else
            run->be->gather(ws->x, ws->labels, run->train.x, run->train.y, st->idx, samples,
                            run->train.dim);
        wall += dt_wall_seconds() - start;
    } else if (chunk > 0) {
        int got = stage_receive(x, 1, micro, chunk, (size_t)samples * plan->out[chunk - 1]);
        if (got != STAGE_ON)
            return got;
    }
    if (zero_gather(x, k, p0, plan->p1[chunk] - p0) != STAGE_ON)
        return STAGE_FAILED;
    start = dt_wall_seconds();
    if (tg) { /* the member's share, its all-reduces and charges (tensor_gpt.h) */
        double loss = 0;
        if (chunk == 0)
            sim_charge(run, x->node, 0, wall);
        sim_breakdown_comm(x->node, RESULTS_PART_TENSOR);
        if (sim_tgpt_forward(run, x->node, tg, x->tp, x->weights, lo, hi, &loss))
            return stage_failed(x);
        sim_breakdown_comm(x->node, RESULTS_PART_DATA);
        x->loss += loss / run->model.gpt.T; /* as trainer_model_loss: per window */
    } else {
        if (x->real)
            trainer_model_forward_range(ws, x->weights, samples, lo, hi);
        if (chunk == plan->C - 1 && x->real) {
            double loss;
            int correct;
            trainer_model_loss(ws, samples, &loss, &correct);
            x->loss += loss;
        }
        if (forward_compute(x, k, chunk, wall, start) != STAGE_ON)
            return STAGE_FAILED;
    }
    /* (a split gpt's stages share its activations: the message is their size and time) */
    if (chunk + 1 < plan->C)
        stage_send(x, x->act_out, ws ? trainer_model_range_output(ws, hi - 1) : x->weights,
                   (size_t)samples * plan->out[chunk], micro, chunk + 1, 0);
    return STAGE_ON;
}

/* Op k's backward pass of model chunk `chunk`: by tensor group (full recomputation: the
 * forward pass again, first), bucket by bucket (overlap: the chunk's last backward pass of the step
 * with buckets), through the experts or alone. */
static int backward_compute(stage_ctx_t *x, int k, int chunk, int overlap, double start)
{
    sim_run_t *run = x->run;
    pipe_plan_t *plan = x->plan;
    int lo = plan->first[chunk], hi = plan->first[chunk + 1];
    pass_part(x);
    if (x->tp) {
        /* full recomputation: the forward pass of its layers among the blocks, first */
        int r0 = lo > plan->rerun_lo ? lo : plan->rerun_lo;
        int r1 = hi < plan->rerun_hi ? hi : plan->rerun_hi;
        if ((plan->rerun_fwd && !plan->tp_formula && r0 < r1 &&
             pipe_tp_pass(run, x->node, plan, x->tp, x->member, r0, r1, x->samples, 1, x->weights,
                          NULL) != SIM_OK) ||
            pipe_tp_pass(run, x->node, plan, x->tp, x->member, lo, hi, x->samples, 0, x->weights,
                         overlap ? plan->bk_end : NULL) != SIM_OK)
            return stage_failed(x);
    } else if (overlap) {
        charge_buckets(run, x->node, &plan->bk[chunk], x->samples, dt_wall_seconds() - start,
                       plan->bwd[chunk]);
    } else if (plan->E > 1) {
        /* its partner: the forward pass the schedule ran before it */
        int after_f = k > 0 && x->st->op[k - 1] == 'F';
        if (pipe_expert_pass(run, x->node, plan, chunk, x->samples, 0, x->weights,
                             after_f ? x->st->ch[k - 1] * plan->S + x->stage : -1) != SIM_OK)
            return stage_failed(x);
    } else {
        sim_charge(run, x->node, plan->bwd[chunk] * x->samples, dt_wall_seconds() - start);
    }
    sim_breakdown_comm(x->node, RESULTS_PART_CONTEXT);
    pipe_context_exchange(run, x->node, plan, chunk, 0);
    sim_breakdown_comm(x->node, RESULTS_PART_DATA);
    return STAGE_ON;
}

/* The backward pass of chunk `chunk` by the member's share of the split gpt (tensor_gpt.h):
 * its gradients into the member's, or after the step's first pass through the chunk
 * (accumulate) into the node's scratch and added from there, its slice and the output
 * layer's part of wte (trainer_gpt_backward_range's way). */
static int tensor_backward(stage_ctx_t *x, sim_tgpt_t *tg, int chunk, int accumulate)
{
    sim_run_t *run = x->run;
    const pipe_plan_t *plan = x->plan;
    const trainer_gpt_layout_t *g = &run->model.gpt;
    int lo = plan->first[chunk], hi = plan->first[chunk + 1];
    float *into = accumulate ? x->acc : x->grads;
    if (sim_tgpt_backward(run, x->node, tg, x->tp, x->weights, into, lo, hi))
        return stage_failed(x);
    if (accumulate) {
        size_t p0 = plan->p0[chunk];
        run->be->axpy(plan->p1[chunk] - p0, 1.0f, x->acc + p0, x->grads + p0);
        if (hi == g->L + 2 && lo > 0)
            run->be->axpy((size_t)g->V * g->C, 1.0f, x->acc + g->wte, x->grads + g->wte);
    }
    return STAGE_ON;
}

/* model.clip_norm's factor from the stage's sum of squares sq of the step's mean gradient:
 * the norm group's sum of them (a tree all-reduce of one float), so every stage clips by
 * the whole model's norm (torch.nn.utils.clip_grad_norm_'s factor); -1 on a failure. */
static float stage_clip_factor(stage_ctx_t *x, double sq)
{
    const pipe_plan_t *plan = x->plan;
    int size = plan->norm[0].size;
    return sim_clip_factor_sum(x->run, x->node, &plan->norm[x->node->rank / size],
                               x->node->rank % size, sq);
}

/* After the stage's last backward pass of the step: with replicas, the sum of the stage's
 * gradients over them, while the stages below go on with their backward passes; then its
 * update (stage 0 evaluates after its own, the step's last); interleaved, chunk by chunk
 * once all are done, as Megatron-LM reduces each model chunk's gradients. With
 * model.clip_norm every chunk is reduced, then the norm summed over the norm group, before
 * any chunk is updated. */
static int stage_step_update(stage_ctx_t *x)
{
    sim_run_t *run = x->run;
    pipe_plan_t *plan = x->plan;
    int replica = x->replica;
    float *weights = x->weights, *grads = x->grads;
    int clip = plan->norm != NULL;
    double sq = 0;
    x->opt.step = x->step;
    if (plan->zero_prefetch) /* every job of the step */
        wait_job(run, x->node, x->st, plan->zjobs[x->stage].n - 1);
    else if (x->bucketed)
        sim_buckets_wait(run, x->node);
    for (int pass = 0; pass < 1 + clip && !run->failed; pass++) {
        float factor = 1.0f;
        if (pass == 1 && (factor = stage_clip_factor(x, sq)) < 0.0f) {
            run->failed = 1;
            break;
        }
        for (int u = 0; u < plan->V && !run->failed; u++) {
            int chunk = u * plan->S + x->stage; /* the stage's chunk u */
            size_t p0 = plan->p0[chunk], n_params = plan->p1[chunk] - p0;
            int reduced = (plan->bucketed && plan->bk[chunk].n > 0) || plan->E > 1;
            int reduce = pass == 0, apply = pass == clip;
            if (plan->tg) { /* the member's pieces of the split gpt's chunk */
                double *loss = plan->sp && chunk == plan->C - 1 ? &x->loss : NULL;
                if (reduce && pipe_gpt_tensor_reduce(run, plan, x->dp, x->tp, replica, x->st->tb, u,
                                                     grads, loss, clip ? &sq : NULL) != SIM_OK)
                    run->failed = 1;
                else if (apply && pipe_gpt_tensor_apply(run, plan, x->dp, replica, x->st->tb, u,
                                                        &x->opt, factor) != SIM_OK)
                    run->failed = 1;
                continue;
            }
            if (plan->zero_overlap) { /* the stream reduce-scattered it */
                if (reduce)
                    pipe_zero_mean(run, plan, replica, chunk, grads, clip ? &sq : NULL);
                if (apply &&
                    pipe_zero_update(run, plan, x->dp, replica, chunk, &x->opt, factor) != SIM_OK)
                    run->failed = 1;
                continue;
            }
            if (reduce && ((plan->E > 1 && pipe_expert_reduce(run, plan, x->node, grads + p0,
                                                              n_params, plan->pe[chunk])) ||
                           stage_reduce(run, plan, x->dp, replica, grads + p0, x->acc + p0,
                                        n_params, reduced, clip ? &sq : NULL) != SIM_OK))
                run->failed = 1;
            else if (apply && stage_apply(run, plan, x->dp, replica, &x->opt, p0, n_params,
                                          factor) != SIM_OK)
                run->failed = 1;
        }
    }
    if (run->failed)
        return STAGE_FAILED;
    /* replica 0's weights are the step's once its last stage has updated (no stage updates
     * the next step before every stage did this one); a split gpt's once every member of
     * every stage has, then assembled in worker 0's buffer */
    int members = plan->tg ? plan->T : 1;
    if (replica == 0 && (x->member == 0 || plan->tg) && ++plan->updated == plan->S * members) {
        plan->updated = 0;
        /* the step's samples, every replica's, counted here before its evaluation row:
         * another replica's last stage may end its step after this one (one stage on a
         * tensor group did) */
        run->samples += (double)run->sc->batch * (plan->D / plan->cp);
        pipe_count_members(run, plan);
        pipe_count_replicas(run, plan);
        if (plan->tg && sim_eval_due(run, x->step + 1))
            sim_tgpt_assemble(run, plan->T); /* replica 0's member r: worker r */
        sim_eval_mark(run, x->step, plan->tg ? run->workers[0].params : weights);
    }
    return STAGE_ON;
}

/* Op k, a backward pass: the gradients received (but on the last chunk), its slice gathered
 * under ZeRO 3, its compute, its input gradient sent down before any reduction; the real
 * gpt's tied wte, ZeRO's reduce-scatter, and after the step's last, the update. */
static int stage_backward(stage_ctx_t *x, int k)
{
    sim_run_t *run = x->run;
    pipe_plan_t *plan = x->plan;
    pipe_stage_state_t *st = x->st;
    int stage = x->stage, replica = x->replica, samples = x->samples;
    int micro = st->mb[k], chunk = st->ch[k] * plan->S + stage; /* its model chunk */
    int lo = plan->first[chunk], last_chunk = chunk == plan->C - 1;
    int *done = &st->backwards_of[st->ch[k]]; /* the step's backward passes through it so far */
    size_t p0 = plan->p0[chunk], n_slice = plan->p1[chunk] - p0;
    sim_tgpt_t *tg = x->tg ? x->tg[micro] : NULL;
    trainer_workspace_t *ws = x->real && !tg ? &plan->ws[replica * plan->M + micro] : NULL;
    if (!last_chunk &&
        stage_receive(x, 0, micro, chunk, (size_t)samples * plan->out[chunk]) != STAGE_ON)
        return STAGE_FAILED;
    if (zero_gather(x, k, p0, n_slice) != STAGE_ON)
        return STAGE_FAILED;
    /* the chunk's last backward pass of the step reduces its buckets as it goes */
    int overlap = plan->bucketed && plan->bk[chunk].n > 0 && *done == plan->M - 1;
    double start = dt_wall_seconds();
    if (tg) {
        sim_breakdown_comm(x->node, RESULTS_PART_TENSOR);
        if (tensor_backward(x, tg, chunk, *done > 0 && !x->sharded_grads) != STAGE_ON)
            return STAGE_FAILED;
        sim_breakdown_comm(x->node, RESULTS_PART_DATA);
    } else {
        if (x->real)
            trainer_model_backward_range(ws, x->weights, x->grads, samples, lo,
                                         plan->first[chunk + 1], *done > 0 && !x->sharded_grads);
        if (backward_compute(x, k, chunk, overlap, start) != STAGE_ON)
            return STAGE_FAILED;
    }
    if (chunk > 0) /* the input gradient goes down before any all-reduce */
        stage_send(x, x->grad_out, ws ? trainer_model_range_grad(ws, lo - 1) : x->weights,
                   (size_t)samples * plan->out[chunk - 1], micro, chunk - 1, 1);
    if (plan->emb && (stage == 0 || stage == plan->S - 1) &&
        pipe_gpt_tied(run, plan, replica, x->member, stage, x->grads, x->acc,
                      last_chunk ? *done == 0 : -1,
                      x->backwards + 1 == plan->M * plan->V) != SIM_OK)
        return stage_failed(x);
    if (x->sharded_grads && tg &&
        pipe_gpt_tensor_shard_reduce(run, plan, x->dp, replica, x->st->tb, st->ch[k], x->grads,
                                     *done == 0) != SIM_OK)
        return stage_failed(x);
    if (x->sharded_grads && !tg &&
        pipe_zero_shard_reduce(run, plan, x->dp, replica, x->grads + p0, x->acc + p0, n_slice,
                               *done == 0) != SIM_OK)
        return stage_failed(x);
    (*done)++;
    if (++x->backwards == plan->M * plan->V)
        return stage_step_update(x);
    return STAGE_ON;
}

/* One step of the stage's schedule (stage 0 decides whether there is one; a STOP from the
 * stage before ends it), its sends finished; STAGE_STOPPED once the run is over. */
static int stage_step(stage_ctx_t *x)
{
    sim_run_t *run = x->run;
    pipe_plan_t *plan = x->plan;
    pipe_stage_state_t *st = x->st;
    x->stop = x->stage == 0 && (sim_should_stop(run, x->step) || run->ended);
    x->n_sent = x->backwards = 0;
    memset(st->n_dir, 0, sizeof st->n_dir);
    memset(st->n_done, 0, sizeof st->n_done);
    memset(st->n_got, 0, sizeof st->n_got);
    st->zawaited = 0;
    memset(st->backwards_of, 0, sizeof(int) * (size_t)plan->V);
    x->loss = 0;
    for (int k = 0; k < x->n_ops && !x->stop; k++) {
        int status = st->op[k] == 'F' ? stage_forward(x, k) : stage_backward(x, k);
        if (status == STAGE_FAILED)
            return STAGE_FAILED;
        x->stop = status == STAGE_STOPPED;
    }
    sim_breakdown_comm(x->node, RESULTS_PART_PIPELINE);
    for (int k = 0; k < x->n_sent; k++)
        if (st->sends[k] && sim_send_finish(run, x->node, st->sends[k], st->sent[k]) != SIM_OK)
            return stage_failed(x);
    if (x->stop) {
        if (x->stage + 1 < plan->S) { /* the stages below stop too */
            size_t n_max = 2 * (size_t)plan->M * (size_t)plan->V;
            sim_msg_t *msg = payload(x->node, &st->own[n_max], x->weights, 0, PIPE_STOP, x->step);
            msg->bytes = 64.0 * plan->fold;
            sim_send(run, x->node, x->act_out, msg);
        }
        return STAGE_STOPPED;
    }
    sim_breakdown_comm(x->node, RESULTS_PART_DATA);
    if (x->stage == plan->S - 1 && x->member == 0) /* its samples: stage_step_update */
        sim_count_step(run, x->node, 0, x->real ? x->loss / (double)run->sc->batch : NAN);
    else
        x->node->steps++;
    return STAGE_ON;
}

void pipe_stage(sim_node_t *node)
{
    stage_ctx_t x;
    stage_init(&x, node);
    int status;
    for (x.step = 0; (status = stage_step(&x)) == STAGE_ON; x.step++)
        ;
    if (status == STAGE_FAILED)
        return;
    sim_run_t *run = x.run;
    pipe_plan_t *plan = x.plan;
    /* after replica 0's last update (a split gpt's: every member's, assembled) */
    int members = plan->tg ? plan->T : 1;
    if (x.replica == 0 && (x.member == 0 || plan->tg) && ++plan->exited == plan->S * members &&
        !run->failed) {
        pipe_count_members(run, plan);
        pipe_count_replicas(run, plan);
        if (plan->tg)
            sim_tgpt_assemble(run, plan->T); /* replica 0's member r: worker r */
        sim_eval_final(run, x.step, plan->tg ? run->workers[0].params : x.weights);
    }
    if (plan->one)
        pipe_stand_for_members(run, plan, node);
    if (plan->rep_one)
        pipe_stand_for_replicas(run, plan, node);
}
