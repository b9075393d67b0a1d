/* A pipeline of the real gpt (pipeline_impl.h): its layout, cut by blocks, and its tied
 * embedding. gpt's pipeline layers (gpt.h) are the embeddings, the L blocks and the output
 * layer (the final norm, then the logits through wte), so stage 0 holds the embeddings and
 * the last stage the output layer, and both use wte: as in Megatron-LM's embedding group, the
 * two sum their parts of its gradient once a step (pipe_gpt_tied). */
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
        plan->act[c] = (double)trainer_gpt_range_activation_floats(m, lo, hi);
        plan->out[c] = c + 1 < plan->C ? (size_t)m->gpt.T * (size_t)m->gpt.C : 0;
    }
    free(start);
    free(cost);
}

void pipe_gpt_groups(pipe_plan_t *plan, sim_run_t *run)
{
    if (plan->S < 2) /* one stage holds both uses of wte */
        return;
    plan->emb = dt_calloc((size_t)plan->D, sizeof(sim_group_t));
    for (int d = 0; d < plan->D; d++) { /* (T = 1: a real model has no tensor groups) */
        plan->emb[d].size = 2;
        plan->emb[d].members = dt_calloc(2, sizeof(sim_node_t *));
        plan->emb[d].members[0] = &run->workers[d * plan->S];
        plan->emb[d].members[1] = &run->workers[d * plan->S + plan->S - 1];
    }
}

double pipe_gpt_tied_copy(const sim_run_t *run, int S, int s)
{
    if (run->timing_only || run->model.cfg.arch != TRAINER_ARCH_GPT || S < 2 || s != S - 1)
        return 0;
    return (double)run->model.gpt.V * run->model.gpt.C;
}

sim_status_t pipe_gpt_tied(sim_run_t *run, const pipe_plan_t *plan, int d, int s, float *g,
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
    return sim_allreduce(run, &plan->emb[d], s == 0 ? 0 : 1, (sharded ? acc : g) + gl->wte, n,
                         SIM_ALLREDUCE_RING);
}
