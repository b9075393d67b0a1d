/* Client-level differential privacy for federated averaging, and its accountant.
 *
 * DP-FedAvg (McMahan, Ramage, Talwar, Zhang 2018, "Learning Differentially Private Recurrent
 * Language Models", Algorithm 1 with the fixed-denominator estimator): each round every
 * client is sampled independently with probability q out of K; a sampled client's update
 * u = w_client - w_global is clipped to L2 norm S, u <- u min(1, S / |u|); the server sums
 * the clipped updates, adds N(0, (z S)^2) to every coordinate and divides by q K, the
 * expected number of clients. Adding or removing one client moves the sum by at most S, so
 * each round is the sampled Gaussian mechanism (SGM) with sampling rate q and noise
 * multiplier z, and T rounds are its T-fold composition.
 *
 * The accountant (Renyi DP: Mironov 2017, "Renyi Differential Privacy"; the SGM: Mironov,
 * Talwar, Zhang 2019, "Renyi Differential Privacy of the Sampled Gaussian Mechanism"). With
 * mu0 = N(0, z^2), mu = (1 - q) mu0 + q N(1, z^2), one step is (alpha, eps_alpha)-RDP with
 *   eps_alpha = log A_alpha / (alpha - 1),   A_alpha = E_{x ~ mu0} [(mu(x) / mu0(x))^alpha],
 *   integer alpha:  A_alpha = sum_{k=0}^{alpha} C(alpha, k) (1-q)^(alpha-k) q^k e^((k^2-k)/(2 z^2))
 *                   (summed as 1 + sum_{k>=2} C(...) ... expm1(...), all terms positive);
 *   any alpha:      A_alpha = sum_{k>=0} C(alpha, k) [ q^k (1-q)^(alpha-k) e^((k^2-k)/(2 z^2)) E0_k
 *                   + q^(alpha-k) (1-q)^k e^((j^2-j)/(2 z^2)) E1_k ],  j = alpha - k,
 *                   E0_k = erfc((k - x0) / (sqrt2 z)) / 2, E1_k = erfc((x0 - j) / (sqrt2 z)) / 2,
 *                   x0 = z^2 log(1/q - 1) + 1/2 (Section 3.3), the generalised binomials
 *                   alternating in sign past k = alpha, summed in log space by sign;
 *   q = 1:          alpha / (2 z^2).
 * RDP adds up over steps: T steps are (alpha, T eps_alpha)-RDP. Conversion to (eps, delta)-DP,
 * minimised over a list of orders:
 *   BALLE    eps = r + log((alpha-1)/alpha) - (log delta + log alpha) / (alpha - 1)
 *            (Balle et al. 2020, "Hypothesis Testing Interpretations and Renyi Differential
 *            Privacy", Theorem 21; Canonne, Kamath, Steinke 2020, Proposition 12): what TF
 *            Privacy (since December 2020) and Opacus (since April 2021) report;
 *   CLASSIC  eps = r + log(1/delta) / (alpha - 1) (Mironov 2017, Proposition 3): what Abadi et
 *            al. 2016's moments accountant and earlier TF Privacy numbers used.
 * Both give eps = 0 when delta >= sqrt(1 - e^-r), the Bretagnolle-Huber bound on the total
 * variation (as TF Privacy does), and never less than 0.
 *
 * The accountant assumes Poisson sampling (each client in a round independently with
 * probability q) and add-or-remove-one-client neighbours; a fixed number of clients per
 * round is a different mechanism, which these numbers do not cover exactly. */
#ifndef DTSIM_PRIVACY_H
#define DTSIM_PRIVACY_H

#include <stddef.h>

#include "rng.h"

/* How RDP becomes (eps, delta)-DP (see above). */
typedef enum trainer_rdp_conversion {
    TRAINER_RDP_BALLE,   /* Balle et al. 2020, Theorem 21: TF Privacy's and Opacus's */
    TRAINER_RDP_CLASSIC, /* Mironov 2017, Proposition 3: eps = r + log(1/delta)/(alpha-1) */
} trainer_rdp_conversion_t;

/* Scales x (n floats) so that its L2 norm is at most clip (> 0; INFINITY clips nothing);
 * returns the norm before, computed in double (NaN when x holds a NaN, then x is left as
 * it is). The factor is clip / norm less one part in 2^23, so that rounding to float cannot
 * take the norm above clip; x already inside the ball is not touched. */
double trainer_dp_clip(float *x, size_t n, double clip);
/* Adds independent N(0, stddev^2) to each of x[0..n) from rng (one trainer_rng_normal per
 * element, none when stddev is 0). */
void trainer_dp_noise(float *x, size_t n, double stddev, trainer_rng_t *rng);
/* DP-FedAvg's server step: sum (n floats, the round's clipped updates added up) gets
 * N(0, (noise_multiplier clip)^2) per coordinate from rng and is divided by expected_clients
 * (q K, > 0; not the number that came, so that one client moves it by clip / (q K) at most). */
void trainer_dp_fedavg_finish(float *sum, size_t n, double clip, double noise_multiplier,
                              double expected_clients, trainer_rng_t *rng);

/* RDP of order alpha (> 1, may be INFINITY) of one step of the SGM, sampling rate q in
 * [0, 1], noise multiplier sigma >= 0, sensitivity 1: 0 when q = 0, INFINITY when sigma = 0,
 * alpha / (2 sigma^2) when q = 1, the integer sum for integer alpha <= 2^20, the series
 * otherwise; NaN for arguments outside these ranges. */
double trainer_rdp_sgm(double q, double sigma, double alpha);
/* The same through the fractional-order series at every alpha, integers included (the
 * second implementation the tests hold the integer sum against). */
double trainer_rdp_sgm_series(double q, double sigma, double alpha);
/* The orders trainer_rdp_epsilon tries, TF Privacy's compute_dp_sgd_privacy list: 1.25,
 * 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5, 5, 6, ..., 63, 128, 256, 512; count in *n. */
const double *trainer_rdp_orders(int *n);
/* eps of an (alpha, r)-RDP mechanism at delta in (0, 1), one order, by conv. */
double trainer_rdp_to_epsilon(double r, double alpha, double delta, trainer_rdp_conversion_t conv);
/* eps of steps steps of the SGM at delta in (0, 1): the least over orders[0..n_orders) by
 * conv, that order in *order (may be NULL). 0 when q = 0 or steps = 0; INFINITY when
 * sigma = 0; NaN for arguments out of range (*order NaN with either). */
double trainer_rdp_epsilon_orders(double q, double sigma, long steps, double delta,
                                  const double *orders, int n_orders, trainer_rdp_conversion_t conv,
                                  double *order);
/* trainer_rdp_epsilon_orders over trainer_rdp_orders with TRAINER_RDP_BALLE. */
double trainer_rdp_epsilon(double q, double sigma, long steps, double delta, double *order);

#endif
