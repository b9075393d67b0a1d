/* The breakdown of a step (see breakdown.h). */
#include "breakdown.h"

#include <string.h>

#include "profile_memory.h"
#include "run.h"

int sim_breakdown_comm(sim_node_t *node, int comm)
{
    DT_ASSERT(comm >= RESULTS_PART_TENSOR && comm <= RESULTS_PART_DATA);
    int was = node->part_comm;
    node->part_comm = comm;
    return was;
}

int sim_breakdown_work(sim_node_t *node, int work)
{
    DT_ASSERT(work >= RESULTS_PART_COMPUTE && work <= RESULTS_PART_OPTIMIZER);
    int was = node->part_work;
    node->part_work = work;
    return was;
}

void sim_breakdown_start(sim_node_t *node)
{
    node->actor = sim_self_id();
    node->part_comm = RESULTS_PART_DATA;
    node->part_work = RESULTS_PART_COMPUTE;
}

void sim_breakdown_interval(sim_node_t *node, sim_state_t state, double start, double end)
{
    const sim_run_t *run = node->run;
    if (!node->actor || sim_self_id() != node->actor)
        return; /* another activity's, behind the node's own */
    if (run && run->has_faults && run->ended && end > run->end_time)
        end = run->end_time; /* a node started again after the end does not count */
    if (start < node->part_at)
        start = node->part_at; /* counted already (real mode's compute ends where it began) */
    if (!(end > start))
        return;
    int part = state == SIM_STATE_COMPUTE                 ? node->part_work
               : state == SIM_STATE_COMM                  ? node->part_comm
               : node->part_comm == RESULTS_PART_PIPELINE ? RESULTS_PART_BUBBLE
                                                          : RESULTS_PART_WAIT;
    node->part[part] += end - start;
    node->part_at = end;
}

/* model.recompute's share of a timing-only step's compute FLOPs (0 for a real model, whose
 * FLOPs leave recomputation out). */
static double recompute_share(const sim_run_t *run)
{
    if (!run->timing_only || !(run->step_flops > 0))
        return 0;
    double r =
        sim_profile_recompute_flops(&run->profile, 0, run->profile.n_layers, run->sc->recompute);
    return r > 0 ? r / run->step_flops : 0;
}

void sim_breakdown_of(const sim_run_t *run, double end, long steps, double out[RESULTS_PART_COUNT])
{
    memset(out, 0, sizeof(double) * RESULTS_PART_COUNT);
    if (run->n_workers <= 0 || steps <= 0 || !(end > 0))
        return;
    double share = recompute_share(run);
    for (int i = 0; i < run->n_workers; i++) {
        const sim_node_t *n = &run->workers[i];
        double p[RESULTS_PART_COUNT], sum = 0;
        memcpy(p, n->part, sizeof p);
        p[RESULTS_PART_RECOMPUTE] += share * p[RESULTS_PART_COMPUTE];
        p[RESULTS_PART_COMPUTE] -= share * p[RESULTS_PART_COMPUTE];
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            sum += p[k];
        /* what no interval covers is wait; a node whose intervals passed end (none should)
         * has its parts scaled to end, so they still sum to it */
        if (sum > end)
            for (int k = 0; k < RESULTS_PART_COUNT; k++)
                p[k] *= end / sum;
        else
            p[RESULTS_PART_WAIT] += end - sum;
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            out[k] += p[k];
    }
    for (int k = 0; k < RESULTS_PART_COUNT; k++)
        out[k] /= (double)run->n_workers * (double)steps;
}
