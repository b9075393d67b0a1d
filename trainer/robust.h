/* Robust aggregation: how the federated server turns k client models (or updates) of n
 * parameters each, x_0 .. x_{k-1}, into one, when some clients may send garbage.
 *
 *   mean          sum_i w_i x_i, w renormalised to sum to 1 (FedAvg; McMahan et al. 2017).
 *                 One Byzantine input moves it arbitrarily far.
 *   median        per coordinate j, the median of x_0[j] .. x_{k-1}[j], unweighted; for even
 *                 k the mean of the two middle values (Yin et al. 2018, "Byzantine-Robust
 *                 Distributed Learning: Towards Optimal Statistical Rates").
 *   trimmed_mean  per coordinate, sort the k values, drop c = floor(trim k) at each end and
 *                 average the k - 2c left, unweighted (Yin et al. 2018). trim 0 is the
 *                 unweighted mean; c is computed with a 1e-9 allowance, so 0.29 x 100 cuts 29.
 *   krum          score(i) = sum of ||x_i - x_j||^2 over the k - f - 2 inputs j != i nearest
 *                 to x_i; the result is the input of smallest score, ties to the lower index.
 *                 Tolerates f Byzantine inputs when k > 2f + 2 (Blanchard et al. 2017,
 *                 "Machine Learning with Adversaries: Byzantine Tolerant Gradient Descent").
 *   multi_krum    the m inputs of smallest scores (scores computed once, ties to the lower
 *                 index), averaged with their w renormalised over the chosen (Blanchard et al.
 *                 2017, section 5). m = 0 means k - f, the most the f bound allows; m = 1
 *                 is krum.
 *
 * Byzantine clients may send non-finite values: a NaN coordinate counts as +infinity in
 * median and trimmed_mean, a NaN distance counts as +infinity in the Krum scores, and an
 * input of weight 0 (or not chosen) never enters a sum, so its NaNs do not either.
 *
 * Host arrays; deterministic (no randomness, a fixed summation order). Sums are in double,
 * stored as float. Cost: mean and the averages one pass over the k inputs in blocks of
 * coordinates; median and trimmed_mean gather the k values of 64 coordinates at a time into
 * scratch and sort them with a sorting network, branch-free vector compares across the 64;
 * Krum's k(k-1)/2 squared distances each computed once, in blocks of coordinates so that the
 * inputs are read from memory once. No allocation: the caller provides trainer_agg_scratch
 * floats. */
#ifndef DTSIM_ROBUST_H
#define DTSIM_ROBUST_H

#include <stddef.h>

#include "common.h"

typedef enum trainer_agg_kind {
    TRAINER_AGG_MEAN,
    TRAINER_AGG_MEDIAN,
    TRAINER_AGG_TRIMMED_MEAN,
    TRAINER_AGG_KRUM,
    TRAINER_AGG_MULTI_KRUM,
} trainer_agg_kind_t;

typedef struct trainer_agg {
    trainer_agg_kind_t kind;
    double trim; /* trimmed_mean: fraction cut at EACH end, [0, 0.5) */
    int f;       /* krum, multi_krum: Byzantine inputs tolerated, >= 0 */
    int m;       /* multi_krum: inputs averaged, 0 = k - f */
} trainer_agg_t;

/* "mean", "median", "trimmed_mean", "krum", "multi_krum", NULL: the kinds' names in enum order. */
extern const char *const trainer_agg_names[];

/* DT_OK if rule a can aggregate k inputs, else DT_ERR_INPUT with the numbers in err. */
dt_status trainer_agg_check(const trainer_agg_t *a, int k, dt_err_t *err);
/* Floats of scratch trainer_aggregate needs for k inputs of n (doubles inside: malloc it). */
size_t trainer_agg_scratch(const trainer_agg_t *a, int k, size_t n);
/* out (n) = rule a applied to x[0..k) (n floats each), weights w (k, >= 0; NULL: equal);
 * chosen (k, or NULL) = 1 for the inputs that entered out (mean, median, trimmed_mean: all),
 * 0 for those rejected; returns how many entered. out aliases no x[i]; scratch as above; a
 * must pass trainer_agg_check. */
int trainer_aggregate(const trainer_agg_t *a, float *out, const float *const *x, const float *w,
                      int k, size_t n, float *scratch, int *chosen);
/* FLOPs of one aggregation, for the server's simulated time (counts in robust.c). */
double trainer_agg_flops(const trainer_agg_t *a, int k, size_t n);

#endif
