/* Where the pipeline's layers cut into chunks (pipe_cut_stages): among the cuts whose most
 * loaded chunk costs least, the most even, by dynamic programming over the groups of layers
 * a chunk may start at (the layout, plan.c and gpt.c, says which). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

/* The cut of G groups into k stages with the lowest possible largest stage cost, and among
 * those cuts the most even one (the least sum of squared stage costs): cuts[j] is the first
 * group of stage j + 1. Only the largest stage bounding the cut would leave the others to
 * chance: 79 layers in 39 chunks under a largest of 3 came out 1, 1, 1, 3, 3 a stage where
 * frameworks lay out 2 each (Megatron-LM's even split), and the interleaved schedule idles
 * on the uneven chunks. */
static void best_cut_solve(const double *cost, int G, int k, int *cuts);

/* best_cut_solve takes k G^2 steps, and the memory slot asks it the same question for every
 * host of a run (16,384 of them, 128 groups: seconds): the last answer is kept. */
static void best_cut(const double *cost, int G, int k, int *cuts)
{
    static double *last_cost;
    static int last_G = -1, last_k, last_cuts[PIPE_MAX_CHUNKS];
    if (G == last_G && k == last_k && !memcmp(cost, last_cost, sizeof(double) * (size_t)G)) {
        memcpy(cuts, last_cuts, sizeof(int) * (size_t)(k > 0 ? k - 1 : 0));
        return;
    }
    best_cut_solve(cost, G, k, cuts);
    free(last_cost);
    last_cost = dt_malloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
    memcpy(last_cost, cost, sizeof(double) * (size_t)G);
    memcpy(last_cuts, cuts, sizeof(int) * (size_t)(k > 0 ? k - 1 : 0));
    last_G = G;
    last_k = k;
}

/* best[j][g]: the lowest largest cost of groups g..G-1 in j + 1 non-empty stages (cap <
 * 0), or the least sum of squared stage costs with none above cap (INFINITY: none fits);
 * end[j][g] the end of its first stage, the earliest among equals. */
static double cut_table(const double *suffix, int G, int k, double cap, double *best, int *end)
{
    for (int g = 0; g <= G; g++) {
        double all = suffix[g];
        best[g] = cap < 0 ? all : all <= cap ? all * all : INFINITY;
    }
    for (int j = 1; j < k; j++)
        for (int g = 0; g + j < G; g++) {
            double b = INFINITY;
            end[j * (G + 1) + g] = g + 1;
            for (int e = g + 1; e <= G - j; e++) {
                double here = suffix[g] - suffix[e], rest = best[(j - 1) * (G + 1) + e], c;
                if (cap < 0)
                    c = here > rest ? here : rest;
                else if (here > cap)
                    break;
                else
                    c = here * here + rest;
                if (c < b) {
                    b = c;
                    end[j * (G + 1) + g] = e;
                }
            }
            best[j * (G + 1) + g] = b;
        }
    return best[(k - 1) * (G + 1)];
}

static void best_cut_solve(const double *cost, int G, int k, int *cuts)
{
    double *best = dt_malloc(sizeof(double) * (size_t)(k * (G + 1)));
    int *end = dt_malloc(sizeof(int) * (size_t)(k * (G + 1)));
    double *suffix = dt_malloc(sizeof(double) * (size_t)(G + 1));
    suffix[G] = 0;
    for (int g = G - 1; g >= 0; g--)
        suffix[g] = suffix[g + 1] + cost[g];
    double largest = cut_table(suffix, G, k, -1, best, end);
    /* the same largest, up to the rounding of sums taken in another order */
    cut_table(suffix, G, k, largest * (1 + 1e-9), best, end);
    for (int j = k - 1, g = 0; j > 0; j--) {
        g = end[j * (G + 1) + g];
        cuts[k - 1 - j] = g;
    }
    free(best);
    free(end);
    free(suffix);
}

void pipe_cut_stages(pipe_plan_t *plan, const double *cost, const int *start, int G, int n_layers)
{
    DT_ASSERT(plan->C <= G); /* checked with the scenario */
    int cuts[PIPE_MAX_CHUNKS];
    best_cut(cost, G, plan->C, cuts);
    plan->first[0] = 0;
    for (int c = 1; c < plan->C; c++)
        plan->first[c] = start[cuts[c - 1]];
    plan->first[plan->C] = n_layers;
}
