/* The pipeline's schedules: the order of a stage's forward and backward passes in a step
 * (gpipe, 1f1b, and Megatron-LM's interleaved 1F1B over virtual stages), and what a
 * neighbour's schedule says of our sends it has taken in (pipe_acked_counts). */
#include <stdlib.h>

#include "pipeline_impl.h"

/* The k-th forward (backward) of a stage under the interleaved schedule, over M V virtual
 * micro-batches: micro-batch *micro of the stage's chunk *chunk (Megatron-LM's
 * get_model_chunk_id: S micro-batches through one chunk, then the same S through the next,
 * V chunks, then the next S micro-batches; backwards go through the chunks the other way).
 * Every stage runs the same order, so a stage receives its activations and gradients in the
 * order they were sent. */
static void virtual_mb(const pipe_plan_t *plan, int k, int forward, int *micro, int *chunk)
{
    int round = k / plan->S % plan->V;
    *chunk = forward ? round : plan->V - 1 - round;
    *micro = k / (plan->S * plan->V) * plan->S + k % plan->S;
}

/* Megatron-LM's interleaved 1F1B: (S-s-1) 2 + (V-1) S warm-up forwards (the first chunk's
 * micro-batches must come round the whole pipeline V-1 times before the last chunk's first
 * backward can start), then one forward and one backward in turn, then the remaining
 * backwards. */
static int interleaved(const pipe_plan_t *plan, int s, char *op, int *mb, int *ch)
{
    int total = plan->M * plan->V, n = 0, fwds = 0, bwds = 0;
    int warm = (plan->S - s - 1) * 2 + (plan->V - 1) * plan->S;
    warm = warm < total ? warm : total;
    while (fwds < total || bwds < total) {
        int forward = fwds < warm || (fwds < total && fwds - warm <= bwds);
        int k = forward ? fwds++ : bwds++;
        op[n] = forward ? 'F' : 'B';
        virtual_mb(plan, k, forward, &mb[n], &ch[n]);
        n++;
    }
    return n;
}

int pipe_schedule(const pipe_plan_t *plan, sim_pipeline_schedule_t kind, int s, char *op, int *mb,
                  int *ch)
{
    int micro_batches = plan->M, n = 0;
    if (kind == SIM_PIPE_GPIPE) {
        for (int m = 0; m < micro_batches; m++)
            op[n] = 'F', ch[n] = 0, mb[n++] = m;
        for (int m = micro_batches - 1; m >= 0; m--)
            op[n] = 'B', ch[n] = 0, mb[n++] = m;
        return n;
    }
    if (plan->V > 1)
        return interleaved(plan, s, op, mb, ch);
    int warm = plan->S - s - 1 < micro_batches ? plan->S - s - 1 : micro_batches;
    int fwds = 0, bwds = 0;
    while (fwds < warm)
        op[n] = 'F', ch[n] = 0, mb[n++] = fwds++;
    while (fwds < micro_batches) {
        op[n] = 'F', ch[n] = 0, mb[n++] = fwds++;
        op[n] = 'B', ch[n] = 0, mb[n++] = bwds++;
    }
    while (bwds < micro_batches)
        op[n] = 'B', ch[n] = 0, mb[n++] = bwds++;
    return n;
}

/* A stage's sends of a step used to be waited for at the step's end, and the simulator
 * scans an activity's list of unwaited sends at each completion: with hundreds of
 * micro-batches a step's cost grew as their square. But a message from a neighbour says
 * which of our sends it had taken in before it sent it: its schedule, known here. After
 * the j-th message received from a neighbour, the sends acked[dir][j] of that direction
 * are done, and waiting for them takes no simulated time. */
void pipe_acked_counts(const pipe_plan_t *plan, sim_pipeline_schedule_t kind, int neighbour,
                       char sends, char takes, int *acked)
{
    size_t n_max = 2 * (size_t)plan->M * (size_t)plan->V;
    char *op = dt_malloc(n_max);
    int *mb = dt_malloc(sizeof(int) * n_max), *ch = dt_malloc(sizeof(int) * n_max);
    int n_ops = pipe_schedule(plan, kind, neighbour, op, mb, ch), taken = 0, j = 0;
    for (int k = 0; k < n_ops; k++) {
        int c = ch[k] * plan->S + neighbour;
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
