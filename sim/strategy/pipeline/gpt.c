/* A pipeline of the real gpt (pipeline_impl.h): its layout, cut by blocks, and its tied
 * embedding. gpt's pipeline layers (gpt.h) are the embeddings, the L blocks and the output
 * layer (the final norm, then the logits through wte), so stage 0 holds the embeddings and
 * the last stage the output layer, and both use wte: as in Megatron-LM's embedding group, the
 * two sum their parts of its gradient once a step (pipe_gpt_tied).
 *
 * With tensor groups (strategy.tensor > 1: Megatron-LM's 3-D parallelism) each stage's
 * layers are split as the tensor strategy splits them (tensor_gpt.h): member r's share of
 * each micro-batch lives in plan->tg, shared by its stages in turn as a trainer workspace is
 * without the split; member r of each replica holds its own weights. Its pieces of a chunk
 * (split, then replicated) are packed side by side for the replicas' collectives, and under
 * ZeRO the pack is what is sharded (Megatron-LM's distributed optimizer also shards a flat
 * buffer of a member's gradients). */
#include <stdlib.h>

#include "pipeline_impl.h"

void pipe_gpt_layout(pipe_plan_t *plan, const sim_run_t *run)
{
    const trainer_model_t *m = &run->model;
    int L = m->gpt.L, n = trainer_gpt_n_layers(&m->gpt);
    /* groups: the embeddings and block 0, blocks 1 .. L-2, block L-1 and the output layer */
    int *start = dt_malloc(sizeof(int) * (size_t)(L + 1));
    double *cost = dt_calloc((size_t)L, sizeof(double));
    for (int i = 0; i < n; i++) {
        double f, b;
        trainer_gpt_layer_flops(m, i, &f, &b);
        cost[i == 0 ? 0 : i <= L ? i - 1 : L - 1] += f + b;
    }
    for (int k = 0; k < L; k++)
        start[k] = k == 0 ? 0 : k + 1;
    start[L] = n;
    pipe_cut_stages(plan, cost, start, L, n);
    for (int c = 0; c < plan->C; c++) {
        int lo = plan->first[c], hi = plan->first[c + 1];
        size_t q0, q1;
        trainer_gpt_layer_params(m, lo, &plan->p0[c], &q1);
        trainer_gpt_layer_params(m, hi - 1, &q0, &plan->p1[c]);
        DT_ASSERT(c == 0 || plan->p0[c] == plan->p1[c - 1]);
        for (int i = lo; i < hi; i++) { /* by trainer_gpt_flops' convention, layer by layer */
            double f, b;
            trainer_gpt_layer_flops(m, i, &f, &b);
            plan->fwd[c] += f;
            plan->bwd[c] += b;
        }
        /* a tensor member's share (tensor_gpt.h), or the whole layers' */
        plan->act[c] = plan->T > 1 ? sim_tgpt_activation_floats(&m->gpt, plan->T, plan->sp, lo, hi)
                                   : (double)trainer_gpt_range_activation_floats(m, lo, hi);
        /* the stream at the cut: under sequence parallelism a member's 1/T of its rows */
        size_t width = (size_t)m->gpt.C / (plan->sp ? (size_t)plan->T : 1); /* T divides C */
        plan->out[c] = c + 1 < plan->C ? (size_t)m->gpt.T * width : 0;
    }
    free(start);
    free(cost);
}

void pipe_gpt_groups(pipe_plan_t *plan, sim_run_t *run)
{
    if (plan->S < 2) /* one stage holds both uses of wte */
        return;
    int S = plan->S, T = plan->T;
    plan->emb = dt_calloc((size_t)(plan->D * T), sizeof(sim_group_t));
    for (int k = 0; k < plan->D * T; k++) { /* k = d T + r */
        int d = k / T, r = k % T;
        plan->emb[k].size = 2;
        plan->emb[k].members = dt_calloc(2, sizeof(sim_node_t *));
        plan->emb[k].members[0] = &run->workers[d * S * T + r];
        plan->emb[k].members[1] = &run->workers[(d * S + S - 1) * T + r];
    }
}

double pipe_gpt_tied_copy(const sim_run_t *run, int S, int s)
{
    if (run->timing_only || run->model.cfg.arch != TRAINER_ARCH_GPT || S < 2 || s != S - 1)
        return 0;
    return (double)run->model.gpt.V * run->model.gpt.C;
}

sim_status_t pipe_gpt_tied(sim_run_t *run, const pipe_plan_t *plan, int d, int r, int s, float *g,
                           float *acc, int first, int last_pass)
{
    const trainer_gpt_layout_t *gl = &run->model.gpt;
    size_t n = (size_t)gl->V * (size_t)gl->C;
    int sharded = plan->zero >= 2 && plan->D > 1 && s > 0;
    if (sharded && first >= 0) { /* ZeRO 2: the last stage's part, summed over micro-batches */
        if (first)
            run->be->copy(acc + gl->wte, g + gl->wte, sizeof(float) * n);
        else
            run->be->axpy(n, 1.0f, g + gl->wte, acc + gl->wte);
    }
    if (!last_pass)
        return SIM_OK;
    /* stage 0 holds the embedding's part with its own gradient, member 0 of the group */
    return sim_allreduce(run, &plan->emb[d * plan->T + r], s == 0 ? 0 : 1,
                         (sharded ? acc : g) + gl->wte, n, SIM_ALLREDUCE_RING);
}

/* ---- the real gpt split by tensor groups --------------------------------------------- */

void pipe_gpt_tensor_make(pipe_plan_t *plan, sim_run_t *run)
{
    int D = plan->D, T = plan->T, M = plan->M;
    plan->tg = dt_calloc((size_t)(D * T * M), sizeof(sim_tgpt_t *));
    for (int k = 0; k < D * T * M; k++) /* k = (d T + r) M + m */
        plan->tg[k] = sim_tgpt_make(run, T, k / M % T, plan->sp, plan->micro);
}

void pipe_gpt_tensor_free(pipe_plan_t *plan, const trainer_backend_t *be)
{
    for (int k = 0; plan->tg && k < plan->D * plan->T * plan->M; k++)
        sim_tgpt_free(be, plan->tg[k]);
    free(plan->tg);
    plan->tg = NULL;
}

static void count_piece(void *ctx, size_t at, size_t n)
{
    (void)at;
    *(size_t *)ctx += n;
}

size_t pipe_gpt_tensor_floats(const pipe_plan_t *plan, const sim_run_t *run, int r, int c)
{
    int lo = plan->first[c], hi = plan->first[c + 1];
    size_t n = 0;
    sim_tgpt_pieces(&run->model.gpt, plan->T, r, 1, lo, hi, count_piece, &n);
    sim_tgpt_pieces(&run->model.gpt, plan->T, r, 0, lo, hi, count_piece, &n);
    return n;
}

pipe_tensor_bufs_t *pipe_gpt_tensor_bufs(const pipe_plan_t *plan, const sim_run_t *run,
                                         sim_node_t *node, int r, int s)
{
    const trainer_backend_t *be = run->be;
    pipe_tensor_bufs_t *b = dt_calloc(1, sizeof *b);
    b->r = r, b->s = s;
    b->base = dt_calloc((size_t)plan->V + 1, sizeof(size_t));
    size_t most = 0;
    for (int u = 0; u < plan->V; u++) {
        size_t n = pipe_gpt_tensor_floats(plan, run, r, u * plan->S + s);
        b->base[u + 1] = b->base[u] + n;
        most = n > most ? n : most;
    }
    b->grads = be->alloc(sizeof(float) * (b->base[plan->V] + 1));
    if (plan->zero && plan->D > 1) {
        b->weights = be->alloc(sizeof(float) * most);
        if (plan->zero >= 2)
            b->acc = be->alloc(sizeof(float) * b->base[plan->V]);
        /* the node's own state buffers, n_params long: a member holds fewer than that */
        b->m = node->velocity;
        b->v = node->moment2;
    }
    return b;
}

void pipe_gpt_tensor_bufs_free(pipe_tensor_bufs_t *b, const trainer_backend_t *be)
{
    if (!b)
        return;
    be->free(b->grads);
    if (b->weights)
        be->free(b->weights);
    if (b->acc)
        be->free(b->acc);
    free(b->base);
    free(b);
}

/* Member r's pieces of chunk c of layout into pack (out: back), split then replicated; the
 * split ones' count in *split unless NULL. Returns the count. */
static size_t pack(const sim_run_t *run, const pipe_plan_t *plan, int r, int c, float *layout,
                   float *packed, int out, size_t *split)
{
    const trainer_gpt_layout_t *g = &run->model.gpt;
    int lo = plan->first[c], hi = plan->first[c + 1];
    size_t n = sim_tgpt_pack(run->be, g, plan->T, r, 1, lo, hi, layout, packed, out);
    if (split)
        *split = n;
    return n + sim_tgpt_pack(run->be, g, plan->T, r, 0, lo, hi, layout, packed + n, out);
}

/* Replica d's shard [*lo, *hi) of a pack of n (pipe_zero_slice_reduce's). */
static void shard_of(const pipe_plan_t *plan, int d, size_t n, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)d / (size_t)plan->D;
    *hi = n * (size_t)(d + 1) / (size_t)plan->D;
}

sim_status_t pipe_gpt_tensor_shard_reduce(sim_run_t *run, const pipe_plan_t *plan,
                                          const sim_group_t *grp, int d,
                                          const pipe_tensor_bufs_t *b, int u, float *grads,
                                          int first)
{
    int c = u * plan->S + b->s;
    float *packed = b->grads + b->base[u];
    size_t n = pack(run, plan, b->r, c, grads, packed, 0, NULL);
    return pipe_zero_shard_reduce(run, plan, grp, d, packed, b->acc + b->base[u], n, first);
}

/* The sum of squares of [lo, hi) of a pack whose first `split` are the member's split
 * pieces: the replicated ones' by member 0 alone (every member holds the same). */
static double pack_sumsq(const sim_run_t *run, const float *packed, size_t split, size_t lo,
                         size_t hi, int r)
{
    size_t mid = split < lo ? lo : split > hi ? hi : split;
    double replicated = r == 0 ? run->be->sumsq(packed + mid, hi - mid) : 0;
    return run->be->sumsq(packed + lo, mid - lo) + replicated;
}

sim_status_t pipe_gpt_tensor_reduce(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                    const sim_group_t *tp, int d, const pipe_tensor_bufs_t *b,
                                    int u, float *grads, double *loss, double *sq)
{
    int c = u * plan->S + b->s, r = b->r;
    float *packed = b->grads + b->base[u];
    size_t split, n = pack(run, plan, r, c, grads, packed, 0, &split), lo = 0, hi = n;
    sim_status_t st;
    int zero = plan->zero && plan->D > 1;
    if (zero) { /* replica d's shard, summed over the replicas (ZeRO 1) or from each pass's */
        if ((st = pipe_zero_slice_reduce(run, plan, grp, d, packed,
                                         b->acc ? b->acc + b->base[u] : NULL, n, NULL)) != SIM_OK)
            return st;
        shard_of(plan, d, n, &lo, &hi);
    }
    if (plan->sp) { /* the replicated pieces' parts of its rows (of its shard), and the loss */
        size_t from = split > lo ? split : lo, count = hi > from ? hi - from : 0;
        float l = loss ? (float)*loss : 0.0f;
        int with_loss = loss && !zero; /* (a shard's end is not the pack's: on its own) */
        if (with_loss)
            run->be->upload(packed + n, &l, sizeof l);
        if (count + (size_t)with_loss > 0 &&
            (st = sim_allreduce(run, tp, r, packed + from, count + (size_t)with_loss,
                                SIM_ALLREDUCE_RING)) != SIM_OK)
            return st;
        if (loss && zero) {
            run->be->upload(packed + n, &l, sizeof l);
            if ((st = sim_allreduce(run, tp, r, packed + n, 1, SIM_ALLREDUCE_RING)) != SIM_OK)
                return st;
        }
        if (loss) {
            run->be->download(&l, packed + n, sizeof l);
            *loss = l;
        }
    }
    if (!zero) {
        if (plan->D > 1 &&
            (st = pipe_dp_allreduce(run, plan, grp, d, packed, n, pipe_dp_algo(run))) != SIM_OK)
            return st;
        run->be->scale(n, 1.0f / (float)(plan->M * plan->D), packed);
    }
    if (sq)
        *sq += pack_sumsq(run, packed, split, lo, hi, r);
    if (!zero) /* the update works on the layout; ZeRO's on the pack (apply) */
        pack(run, plan, r, c, grads, packed, 1, NULL);
    return SIM_OK;
}

typedef struct tensor_apply {
    sim_run_t *run;
    const pipe_optim_t *o;
    float clip;
} tensor_apply_t;

static void apply_piece(void *ctx, size_t at, size_t n)
{
    tensor_apply_t *k = ctx;
    pipe_optim_apply(k->run, k->o, at, n, k->clip);
}

sim_status_t pipe_gpt_tensor_apply(sim_run_t *run, const pipe_plan_t *plan, const sim_group_t *grp,
                                   int d, const pipe_tensor_bufs_t *b, int u, const pipe_optim_t *o,
                                   float clip)
{
    int c = u * plan->S + b->s, lo = plan->first[c], hi = plan->first[c + 1];
    if (!(plan->zero && plan->D > 1)) {
        tensor_apply_t k = {run, o, clip};
        sim_tgpt_pieces(&run->model.gpt, plan->T, b->r, 1, lo, hi, apply_piece, &k);
        sim_tgpt_pieces(&run->model.gpt, plan->T, b->r, 0, lo, hi, apply_piece, &k);
        return SIM_OK;
    }
    /* ZeRO on the pack: the shard's update with its state, then the weights gathered */
    size_t n = pack(run, plan, b->r, c, o->w, b->weights, 0, NULL);
    pipe_optim_t shard = {.w = b->weights,
                          .g = b->grads + b->base[u],
                          .m = b->m + b->base[u],
                          .v = b->v ? b->v + b->base[u] : NULL,
                          .step = o->step};
    sim_status_t st = pipe_zero_slice_update(run, plan, grp, d, &shard, 0, n, clip);
    if (st == SIM_OK)
        pack(run, plan, b->r, c, o->w, b->weights, 1, NULL);
    return st;
}
