/* Client-level differential privacy (privacy.h): the RDP accountant against published
 * numbers (TF Privacy's and dp_accounting's tests and tutorial, Opacus's tests, Abadi et al.
 * 2016), against a multi-precision second implementation (tests/privacy_oracle.py: exact
 * binomial sums and mpmath quadrature), against the Renyi divergence integrated numerically
 * here, against its closed forms (q = 1; alpha = 2), the integer sum against the fractional
 * series; clipping and noise against their definitions, the noise's moments over many draws
 * (seeded, so the statistical checks cannot flake). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "privacy.h"
#include "rng.h"

/* |got - want| <= rel |want| */
#define ck_assert_rel(got, want, rel)                                                              \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        ck_assert_msg(fabs(g_ - w_) <= (rel)*fabs(w_), "%s = %.17g, want %.17g (rel %g)", #got,    \
                      g_, w_, (rel));                                                              \
    } while (0)

/* The TF Privacy compute_dp_sgd_privacy order list, spelled out here rather than taken from
 * trainer_rdp_orders so that a changed default list shows up. */
static const double tf_orders[] = {
    1.25, 1.5, 1.75, 2,  2.25, 2.5, 3,  3.5, 4,  4.5, 5,  6,  7,  8,  9,  10,  11,  12,
    13,   14,  15,   16, 17,   18,  19, 20,  21, 22,  23, 24, 25, 26, 27, 28,  29,  30,
    31,   32,  33,   34, 35,   36,  37, 38,  39, 40,  41, 42, 43, 44, 45, 46,  47,  48,
    49,   50,  51,   52, 53,   54,  55, 56,  57, 58,  59, 60, 61, 62, 63, 128, 256, 512,
};
#define N_TF_ORDERS ((int)(sizeof tf_orders / sizeof tf_orders[0]))

/* Opacus's RDPAccountant.DEFAULT_ALPHAS (opacus/accountants/rdp.py), also the orders of TF
 * Privacy's 2019 MNIST tutorial: 1.1, 1.2, ..., 10.9, then 12, ..., 63 (150 orders). */
static int fine_orders(double *o)
{
    int n = 0;
    for (int x = 1; x < 100; x++)
        o[n++] = 1.0 + x / 10.0;
    for (int a = 12; a < 64; a++)
        o[n++] = a;
    return n;
}

/* ---- the Renyi divergence by quadrature: the independent oracle in C --------------------- */

/* log of the integrand of A_alpha at z: log N(z; 0, s^2) + alpha log(mu(z) / mu0(z)),
 * mu / mu0 = (1 - q) + q e^((2z - 1) / (2 s^2)), its log taken as a log-sum-exp. */
static double log_integrand(double z, double q, double s, double alpha)
{
    double a = log1p(-q), b = log(q) + (2.0 * z - 1.0) / (2.0 * s * s);
    double lr = a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
    return -z * z / (2.0 * s * s) - log(s) - 0.91893853320467274178 + alpha * lr;
}

/* RDP as log(integral) / (alpha - 1), trapezoid rule with step s/16 over [-40 s, alpha + 40 s]:
 * the integrand is a sum of Gaussians of width s centred in [0, alpha] (analytic, so the
 * trapezoid rule's error is of order e^(-2 pi^2 16^2)), and beyond those bounds it is below
 * e^-800 of its peak. Summed as e^(f - max f). */
static double rdp_by_quadrature(double q, double s, double alpha)
{
    double lo = -40.0 * s, hi = alpha + 40.0 * s, h = s / 16.0;
    long n = (long)ceil((hi - lo) / h);
    double top = -INFINITY;
    for (long i = 0; i <= n; i++)
        top = fmax(top, log_integrand(lo + i * h, q, s, alpha));
    double sum = 0.0;
    for (long i = 0; i <= n; i++)
        sum += exp(log_integrand(lo + i * h, q, s, alpha) - top);
    return (top + log(sum * h)) / (alpha - 1.0);
}

/* Points where privacy_oracle.py's 60-digit values (printed there; integer orders by the exact
 * binomial sum, fractional ones by mpmath quadrature) are known: (q, sigma, alpha, rdp). */
static const double oracle_points[][4] = {
    {0.01, 2.5, 1.5, 1.3001417943760795e-5},
    {0.01, 2.5, 2.5, 2.1708361138362486e-5},
    {0.01, 2.5, 5, 4.3615131246157617e-5},
    {0.01, 2.5, 50, 0.00047692075077412338},
    {0.01, 2.5, 100, 3.3483261509683651},
    {0.1, 2, 5, 0.0077369684897958652},
    {0.05, 1.0, 2, 0.0042865043704189779},
    {0.05, 1.0, 7.5, 0.35255685811974143},
    {0.2, 0.7, 3, 0.83222259642018965},
    {0.2, 0.7, 12.25, 10.747500940259564},
    {0.001, 5.0, 32, 6.537832089926422e-7},
    {0.5, 0.5, 2.5, 3.8494871350349096},
    {0.5, 1.0, 1.25, 0.18403840772767036},
    {0.9, 3.0, 6.5, 0.30707059318830342},
    {1e-5, 0.3, 256.1, 1411.2197212839369},
    {0.3, 0.3, 1.75, 6.9180350193842235},
    /* A = 1 + 1e-6 from a series whose terms fall only like k^-3.25: summed plainly to
     * 200,000 terms these come out 5e-10 off; the Euler means get them to the last bits */
    {0.5, 100.0, 1.25, 1.5625292966918993e-5},
    {0.5, 100.0, 1.5, 1.875046875097655e-5},
    {0.5, 100.0, 1.75, 2.1875683600301033e-5},
};
#define N_ORACLE ((int)(sizeof oracle_points / sizeof oracle_points[0]))

START_TEST(rdp_matches_multiprecision_oracle)
{
    /* Both implementations (integer sum where alpha is an integer, series otherwise) and the
     * series alone at every point, against 60-digit values: relative 1e-10, what double
     * log-space sums of up to a few hundred terms keep, plus 1e-15 in log A (a few ulps of
     * log A ~ 0: RDP 1e-5 keeps only 10 digits in any double sum of A). */
    for (int i = 0; i < N_ORACLE; i++) {
        const double *p = oracle_points[i];
        double tol = 1e-10 * p[3] + 1e-15 / (p[2] - 1.0);
        double a = trainer_rdp_sgm(p[0], p[1], p[2]), b = trainer_rdp_sgm_series(p[0], p[1], p[2]);
        ck_assert_msg(fabs(a - p[3]) <= tol && fabs(b - p[3]) <= tol,
                      "q %g sigma %g alpha %g: %.17g and %.17g, want %.17g", p[0], p[1], p[2], a, b,
                      p[3]);
    }
}
END_TEST

START_TEST(rdp_matches_quadrature)
{
    /* The divergence integrated here, in double, against the accountant at the oracle points
     * (a third implementation, so that the oracle values themselves are checked), and at
     * points of its own across the accountant's range: relative 1e-9 where the RDP is above
     * 1e-5 (below it, log(integral) = log(1 + tiny) keeps fewer digits than the
     * accountant's expm1 form). */
    for (int i = 0; i < N_ORACLE; i++) {
        const double *p = oracle_points[i];
        if (p[3] > 1e-5)
            ck_assert_rel(rdp_by_quadrature(p[0], p[1], p[2]), p[3], 1e-9);
    }
    static const double qs[] = {1e-3, 0.02, 0.25, 0.6, 0.97};
    static const double sigmas[] = {0.4, 0.9, 2.0, 6.0};
    static const double alphas[] = {1.1, 1.5, 2, 3.3, 8, 20.5, 64};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 7; c++) {
                double q = qs[a], s = sigmas[b], al = alphas[c];
                double want = rdp_by_quadrature(q, s, al);
                if (want > 1e-5)
                    ck_assert_msg(fabs(trainer_rdp_sgm(q, s, al) - want) <= 1e-9 * want,
                                  "q %g sigma %g alpha %g: %.17g, quadrature %.17g", q, s, al,
                                  trainer_rdp_sgm(q, s, al), want);
            }
}
END_TEST

START_TEST(rdp_published_values)
{
    /* TF Privacy, tensorflow_privacy/privacy/analysis/rdp_accountant_test.py (commit
     * 09270af, 2021), test_compute_rdp_sequence: compute_rdp(q 0.01, sigma 2.5, 50 steps)
     * at orders 1.5, 2.5, 5, 50, 100 = 0.00065, 0.001085, 0.00218075, 0.023846, 167.416307,
     * their tolerance 1e-5 absolute; test_compute_rdp_scalar: compute_rdp(0.1, 2, 10 steps,
     * order 5) = 0.07737, to 5 places. */
    static const double orders[] = {1.5, 2.5, 5, 50, 100};
    static const double tf2021[] = {0.00065, 0.001085, 0.00218075, 0.023846, 167.416307};
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq_tol(50.0 * trainer_rdp_sgm(0.01, 2.5, orders[i]), tf2021[i], 1e-5);
    ck_assert_double_eq_tol(10.0 * trainer_rdp_sgm(0.1, 2.0, 5), 0.07737, 5e-6);

    /* google/differential-privacy, python/dp_accounting/dp_accounting/rdp/
     * rdp_privacy_accountant_test.py (2024), test_compute_rdp_poisson_sampled_gaussian, the
     * same mechanism: 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02 at
     * orders 2.5, 5, 50, 100, their tolerance rtol 1e-4. Its 6.70579741e-04 at order 1.5 is
     * not A_1.5 but the series with |C(1.5, k)| for every k (dp_accounting sums the
     * alternating terms' magnitudes since 2024): an upper bound, 3.2% above the exact
     * 6.50070897e-04 (mpmath quadrature, privacy_oracle.py), which TF Privacy's 2021 0.00065
     * agrees with. Ours must sit below it. */
    static const double dpacc[] = {1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02};
    for (int i = 1; i < 5; i++)
        ck_assert_rel(50.0 * trainer_rdp_sgm(0.01, 2.5, orders[i]), dpacc[i - 1], 1e-4);
    double r15 = 50.0 * trainer_rdp_sgm(0.01, 2.5, 1.5);
    ck_assert(r15 < 6.70579741e-04);
    ck_assert_rel(r15, 6.5007089718803975e-4, 1e-10);
}
END_TEST

START_TEST(rdp_closed_forms)
{
    /* q = 1: the Gaussian mechanism, alpha / (2 sigma^2), exactly (what TF Privacy's
     * test_compute_rdp_no_sampling checks: q 1, sigma 10, order 20 -> 0.1). */
    static const double alphas[] = {1.25, 2, 3.5, 20, 512};
    static const double sigmas[] = {0.3, 1, 10, 100};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
            double a = alphas[i], s = sigmas[j];
            ck_assert_double_eq(trainer_rdp_sgm(1.0, s, a), a / (2.0 * s * s));
            ck_assert_double_eq(trainer_rdp_sgm_series(1.0, s, a), a / (2.0 * s * s));
        }
    ck_assert_double_eq(trainer_rdp_sgm(1.0, 10.0, 20.0), 0.1);
    /* alpha = 2: A = 1 + q^2 (e^(1/sigma^2) - 1), so rdp = log1p(q^2 expm1(1/sigma^2)), down
     * to 1e-14 (q 1e-5, sigma 100), where summing A's own terms would keep no digit. */
    static const double qs[] = {1e-5, 1e-3, 0.1, 0.5, 0.99};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
            double q = qs[i], s = sigmas[j];
            ck_assert_rel(trainer_rdp_sgm(q, s, 2.0), log1p(q * q * expm1(1.0 / (s * s))), 1e-13);
        }
    /* Edge cases: no sampling, no noise, orders out of range, and alpha infinite. */
    ck_assert_double_eq(trainer_rdp_sgm(0.0, 1.0, 5), 0.0);
    ck_assert_double_eq(trainer_rdp_sgm(0.0, 0.0, 5), 0.0);
    ck_assert(isinf(trainer_rdp_sgm(0.01, 0.0, 5)));
    ck_assert(isinf(trainer_rdp_sgm(0.01, 1.0, INFINITY)));
    ck_assert(isnan(trainer_rdp_sgm(0.01, 1.0, 1.0)));
    ck_assert(isnan(trainer_rdp_sgm(1.5, 1.0, 2.0)));
    ck_assert(isnan(trainer_rdp_sgm(0.1, -1.0, 2.0)));
    ck_assert(isnan(trainer_rdp_sgm(NAN, 1.0, 2.0)));
}
END_TEST

START_TEST(integer_sum_matches_series)
{
    /* Two formulas for A_alpha at integer alpha: the binomial sum (as 1 + positive terms)
     * and the erfc-weighted series of Section 3.3 (split at x0, summed by sign), which at an
     * integer alpha reduce to each other only through erfc(x) + erfc(-x) = 2. Relative
     * 1e-11, or a few ulps of log A ~ 0 for the tiny values (the series sums A, not A - 1). */
    static const double qs[] = {1e-5, 1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999};
    static const double sigmas[] = {0.3, 0.5, 0.8, 1.0, 1.5, 3.0, 10.0, 100.0};
    static const double alphas[] = {2, 3, 4, 5, 8, 13, 32, 63, 128, 256, 512};
    for (int a = 0; a < 10; a++)
        for (int b = 0; b < 8; b++)
            for (int c = 0; c < 11; c++) {
                double q = qs[a], s = sigmas[b], al = alphas[c];
                double x = trainer_rdp_sgm(q, s, al), y = trainer_rdp_sgm_series(q, s, al);
                ck_assert_msg(fabs(x - y) <= 1e-11 * x + 1e-15 / (al - 1.0),
                              "q %g sigma %g alpha %g: sum %.17g series %.17g", q, s, al, x, y);
            }
}
END_TEST

START_TEST(robust_over_the_range)
{
    /* q in [1e-5, 1], sigma in [0.3, 100], every default order and a few more: finite, not
     * negative, growing with alpha (RDP is monotone in the order) and with q. */
    static const double qs[] = {1e-5, 3e-5, 1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.8, 0.99, 1.0};
    static const double sigmas[] = {0.3, 0.45, 0.7, 1.0, 2.0, 5.0, 20.0, 100.0};
    int n;
    const double *orders = trainer_rdp_orders(&n);
    for (int a = 0; a < 11; a++)
        for (int b = 0; b < 8; b++) {
            double prev = 0.0;
            for (int i = 0; i < n; i++) {
                double r = trainer_rdp_sgm(qs[a], sigmas[b], orders[i]);
                ck_assert_msg(isfinite(r) && r >= 0.0, "q %g sigma %g alpha %g: %g", qs[a],
                              sigmas[b], orders[i], r);
                ck_assert_msg(r >= prev * (1.0 - 1e-12), "not monotone in alpha at %g", orders[i]);
                prev = r;
                if (a > 0)
                    ck_assert(r >=
                              trainer_rdp_sgm(qs[a - 1], sigmas[b], orders[i]) * (1.0 - 1e-12));
            }
            double eps = trainer_rdp_epsilon(qs[a], sigmas[b], 1000, 1e-5, NULL);
            ck_assert(isfinite(eps) && eps >= 0.0);
        }
    /* fractional orders beyond the list's, near 1 and large, at the range's corners */
    static const double more[] = {1.01, 1.001, 37.3, 300.5, 511.9};
    for (int a = 0; a < 11; a += 2)
        for (int b = 0; b < 8; b += 7)
            for (int i = 0; i < 5; i++) {
                double r = trainer_rdp_sgm(qs[a], sigmas[b], more[i]);
                ck_assert_msg(isfinite(r) && r >= 0.0, "q %g sigma %g alpha %g: %g", qs[a],
                              sigmas[b], more[i], r);
            }
}
END_TEST

START_TEST(conversions)
{
    /* TF Privacy rdp_accountant_test.py test_get_privacy_spent_check_target_delta (and
     * dp_accounting's test_compute_epsilon_delta_pure_dp): rdp 1.1 at every order 2..32,
     * delta 1e-5, Balle et al.'s conversion: 1.32783806176 at order 32 (7 places). By hand:
     * 1.1 + log(31/32) + (log(1e5) - log 32) / 31. */
    double best = INFINITY, best_order = 0;
    for (int a = 2; a <= 32; a++) {
        double e = trainer_rdp_to_epsilon(1.1, a, 1e-5, TRAINER_RDP_BALLE);
        if (e < best) {
            best = e;
            best_order = a;
        }
    }
    ck_assert_double_eq_tol(best, 1.32783806176, 5e-11);
    ck_assert_double_eq(best_order, 32);
    /* the classic one, by hand: 1.1 + log(1e5) / 31 = 1.47138469241... */
    ck_assert_double_eq_tol(trainer_rdp_to_epsilon(1.1, 32, 1e-5, TRAINER_RDP_CLASSIC),
                            1.1 + 11.512925464970229 / 31.0, 1e-14);
    /* Balle's is never above the classic one (log((a-1)/a) - log(a)/(a-1) < 0) */
    for (int a = 2; a <= 512; a *= 2)
        ck_assert(trainer_rdp_to_epsilon(0.3, a, 1e-6, TRAINER_RDP_BALLE) <
                  trainer_rdp_to_epsilon(0.3, a, 1e-6, TRAINER_RDP_CLASSIC));

    /* TF Privacy test_get_privacy_spent_check_target_delta, second part (and dp_accounting's
     * test_compute_epsilon_delta_gaussian): the Gaussian mechanism (q 1) with sigma
     * 4.530877117 over orders 1.000, 1.001, ..., 99.999 gives eps 1 at delta 1e-6 (7 places). */
    int n = 99000;
    double *orders = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++)
        orders[i] = 0.001 * (1000 + i);
    orders[0] = 1.0 + 1e-9; /* 1.000 itself is not an order RDP is defined at */
    double order;
    double eps =
        trainer_rdp_epsilon_orders(1.0, 4.530877117, 1, 1e-6, orders, n, TRAINER_RDP_BALLE, &order);
    ck_assert_double_eq_tol(eps, 1.0, 5e-8);
    free(orders);

    /* Bretagnolle-Huber: delta >= sqrt(1 - e^-r) needs no epsilon; bad input is NaN */
    ck_assert_double_eq(trainer_rdp_to_epsilon(1e-12, 2.0, 1e-5, TRAINER_RDP_BALLE), 0.0);
    ck_assert_double_eq(trainer_rdp_to_epsilon(1e-12, 2.0, 1e-5, TRAINER_RDP_CLASSIC), 0.0);
    ck_assert(trainer_rdp_to_epsilon(1e-9, 2.0, 1e-5, TRAINER_RDP_CLASSIC) > 0.0);
    ck_assert(isnan(trainer_rdp_to_epsilon(0.1, 2.0, 0.0, TRAINER_RDP_BALLE)));
    ck_assert(isnan(trainer_rdp_to_epsilon(0.1, 2.0, 1.0, TRAINER_RDP_BALLE)));
    ck_assert(isnan(trainer_rdp_to_epsilon(0.1, 1.0, 1e-5, TRAINER_RDP_BALLE)));
}
END_TEST

/* eps of (q, sigma, steps, delta) over tf_orders by conv, its order in *order. */
static double tf_eps(double q, double sigma, long steps, double delta,
                     trainer_rdp_conversion_t conv, double *order)
{
    return trainer_rdp_epsilon_orders(q, sigma, steps, delta, tf_orders, N_TF_ORDERS, conv, order);
}

START_TEST(epsilon_published_values)
{
    double order;
    int n;
    const double *defaults = trainer_rdp_orders(&n);
    ck_assert_int_eq(n, N_TF_ORDERS);
    ck_assert_int_eq(memcmp(defaults, tf_orders, sizeof tf_orders), 0);

    /* TF Privacy, tensorflow_privacy/privacy/analysis/compute_dp_sgd_privacy_test.py:
     * compute_dp_sgd_privacy(n, batch, noise, epochs, delta), q = batch / n, steps =
     * ceil(epochs n / batch), over tf_orders. Balle et al.'s conversion (commit be8175b,
     * December 2020, to today): Test0 (60000, 150, 1.3, 15, 1e-5) 0.7242234026109595 at
     * order 19; Test1 (100000, 100, 1.0, 30, 1e-7) 1.4154988495444845 at 13; Test2
     * (1e8, 1024, 0.1, 10, 1e-7) 5907982.31138195 at 1.25 (the 2024 value 5907982.3113978775
     * carries dp_accounting's |C| series, 2.7e-12 above). The classic conversion (the same
     * test before be8175b): 0.941870567, 1.70928734, 5907984.81339406. Theirs are to 7
     * places; ours agree to 1e-10 absolute (Test0, Test1) and 1e-13 relative (Test2), and
     * privacy_oracle.py gives 0.72422340261059641, 1.4154988495445377, 5907982.3113820069,
     * 0.94187056716789664, 1.7092873370065355, 5907984.8133941246. */
    ck_assert_double_eq_tol(tf_eps(150.0 / 60000, 1.3, 6000, 1e-5, TRAINER_RDP_BALLE, &order),
                            0.7242234026109595, 1e-10);
    ck_assert_double_eq(order, 19);
    ck_assert_double_eq_tol(tf_eps(100.0 / 100000, 1.0, 30000, 1e-7, TRAINER_RDP_BALLE, &order),
                            1.4154988495444845, 1e-10);
    ck_assert_double_eq(order, 13);
    ck_assert_rel(tf_eps(1024.0 / 1e8, 0.1, 976563, 1e-7, TRAINER_RDP_BALLE, &order),
                  5907982.31138195, 1e-13);
    ck_assert_double_eq(order, 1.25);
    ck_assert_double_eq_tol(tf_eps(150.0 / 60000, 1.3, 6000, 1e-5, TRAINER_RDP_CLASSIC, &order),
                            0.941870567, 1e-9);
    ck_assert_double_eq(order, 19);
    ck_assert_double_eq_tol(tf_eps(100.0 / 100000, 1.0, 30000, 1e-7, TRAINER_RDP_CLASSIC, &order),
                            1.70928734, 1e-8);
    ck_assert_rel(tf_eps(1024.0 / 1e8, 0.1, 976563, 1e-7, TRAINER_RDP_CLASSIC, &order),
                  5907984.81339406, 1e-13);
    /* trainer_rdp_epsilon is the first of these */
    ck_assert_double_eq(trainer_rdp_epsilon(150.0 / 60000, 1.3, 6000, 1e-5, &order),
                        tf_eps(150.0 / 60000, 1.3, 6000, 1e-5, TRAINER_RDP_BALLE, NULL));

    /* TF Privacy tutorials/README.md (2019, classic conversion): "compute_dp_sgd_privacy.py
     * --N=60000 --batch_size=256 --noise_multiplier=1.1 --epochs=60 --delta=1e-5 ... eps =
     * 3.01" (printed with 3 significant digits: +-0.005; 14063 steps); oracle 3.0092111730.
     * compute_noise_from_budget.py's docstring: eps 2.92 at those settings takes noise 1.12;
     * oracle 2.9223548505. The same runs by Balle et al.'s conversion: 2.5970795197 and
     * 2.5215588618 (oracle), what TF Privacy prints today. */
    double q = 256.0 / 60000;
    ck_assert_double_eq_tol(tf_eps(q, 1.1, 14063, 1e-5, TRAINER_RDP_CLASSIC, NULL), 3.01, 0.005);
    ck_assert_double_eq_tol(tf_eps(q, 1.1, 14063, 1e-5, TRAINER_RDP_CLASSIC, NULL),
                            3.0092111729975722, 1e-10);
    ck_assert_double_eq_tol(tf_eps(q, 1.12, 14063, 1e-5, TRAINER_RDP_CLASSIC, NULL), 2.92, 0.005);
    ck_assert_double_eq_tol(tf_eps(q, 1.1, 14063, 1e-5, TRAINER_RDP_BALLE, NULL),
                            2.5970795196566328, 1e-10);
    /* The README's table (the tutorial's own accounting: epochs x 234 steps, Opacus's
     * order list): noise 1.3 for 15 epochs 1.19, noise 0.7 for 45 epochs 7.10, +-0.005;
     * oracle 1.1914577425 (order 17) and 7.0956811344 (order 3.9). */
    double fine[160];
    int nf = fine_orders(fine);
    double e13 =
        trainer_rdp_epsilon_orders(q, 1.3, 15 * 234, 1e-5, fine, nf, TRAINER_RDP_CLASSIC, NULL);
    double e07 =
        trainer_rdp_epsilon_orders(q, 0.7, 45 * 234, 1e-5, fine, nf, TRAINER_RDP_CLASSIC, &order);
    ck_assert_double_eq_tol(e13, 1.19, 0.005);
    ck_assert_double_eq_tol(e07, 7.10, 0.005);
    ck_assert_double_eq_tol(e13, 1.1914577424688146, 1e-10);
    ck_assert_double_eq_tol(e07, 7.0956811343631656, 1e-10);
    ck_assert_double_eq(order, 3.9);

    /* Opacus, opacus/tests/accountants_test.py test_rdp_accountant: q 0.04, sigma 1.5,
     * int(90 / 0.04) = 2250 steps, delta 1e-5, DEFAULT_ALPHAS, Balle et al.'s formula:
     * 7.32911117143 (7 places); the best order is fractional (3.9), so this checks the
     * series; oracle 7.3291111714841742. */
    ck_assert_double_eq_tol(
        trainer_rdp_epsilon_orders(0.04, 1.5, 2250, 1e-5, fine, nf, TRAINER_RDP_BALLE, &order),
        7.32911117143, 1e-10);
    ck_assert_double_eq(order, 3.9);

    /* Abadi et al. 2016, section 3.1: q 0.01, sigma 4, delta 1e-5, T 10000: "eps ~ 1.26
     * using the moments accountant" (log moments at lambda 1..32, tail bound
     * eps = min (T alpha(lambda) + log(1/delta)) / lambda, which is the classic conversion
     * at orders lambda + 1 = 2..33 with the exact moments): +-0.005. Ours: 1.2585747413 at
     * order 20 (oracle: the same over orders 2..33 or tf_orders); Balle et al.'s conversion
     * gives 1.0354900660 (order 17). */
    double abadi[32];
    for (int i = 0; i < 32; i++)
        abadi[i] = i + 2;
    double e_abadi =
        trainer_rdp_epsilon_orders(0.01, 4.0, 10000, 1e-5, abadi, 32, TRAINER_RDP_CLASSIC, &order);
    ck_assert_double_eq_tol(e_abadi, 1.26, 0.005);
    ck_assert_double_eq_tol(e_abadi, 1.2585747412527875, 1e-10);
    ck_assert_double_eq(order, 20);
    ck_assert_double_eq_tol(trainer_rdp_epsilon(0.01, 4.0, 10000, 1e-5, &order), 1.0354900660362967,
                            1e-10);
    ck_assert_double_eq(order, 17);
}
END_TEST

START_TEST(epsilon_monotone_and_edges)
{
    /* More steps never lower epsilon; more noise never raises it; a higher sampling rate
     * never lowers it; delta smaller never lowers it. */
    static const double qs[] = {1e-5, 1e-3, 0.05, 0.5, 1.0};
    static const long steps[] = {1, 10, 100, 1000, 10000, 100000};
    static const double sigmas[] = {0.3, 0.5, 0.8, 1.0, 1.3, 2.0, 4.0, 10.0, 100.0};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 9; b++) {
            double prev = 0.0;
            for (int c = 0; c < 6; c++) {
                double e = trainer_rdp_epsilon(qs[a], sigmas[b], steps[c], 1e-5, NULL);
                ck_assert_msg(e >= prev, "q %g sigma %g: %ld steps %g < %g", qs[a], sigmas[b],
                              steps[c], e, prev);
                prev = e;
            }
        }
    for (int a = 0; a < 5; a++)
        for (int c = 0; c < 6; c++) {
            double prev = INFINITY;
            for (int b = 0; b < 9; b++) {
                double e = trainer_rdp_epsilon(qs[a], sigmas[b], steps[c], 1e-5, NULL);
                ck_assert_msg(e <= prev, "q %g %ld steps: sigma %g gives %g > %g", qs[a], steps[c],
                              sigmas[b], e, prev);
                prev = e;
                if (a > 0)
                    ck_assert(e >= trainer_rdp_epsilon(qs[a - 1], sigmas[b], steps[c], 1e-5, NULL));
                ck_assert(trainer_rdp_epsilon(qs[a], sigmas[b], steps[c], 1e-8, NULL) >= e);
            }
        }
    /* no noise: infinite; no sampling or no steps: 0 */
    double order = 0;
    ck_assert(isinf(trainer_rdp_epsilon(0.01, 0.0, 100, 1e-5, &order)));
    ck_assert(isnan(order));
    ck_assert_double_eq(trainer_rdp_epsilon(0.0, 1.0, 100, 1e-5, NULL), 0.0);
    ck_assert_double_eq(trainer_rdp_epsilon(0.0, 0.0, 100, 1e-5, NULL), 0.0);
    ck_assert_double_eq(trainer_rdp_epsilon(0.5, 1.0, 0, 1e-5, NULL), 0.0);
    ck_assert(isnan(trainer_rdp_epsilon(0.5, 1.0, 10, 0.0, NULL)));
    ck_assert(isnan(trainer_rdp_epsilon(0.5, 1.0, -1, 1e-5, NULL)));
}
END_TEST

/* ---- clipping and noise ------------------------------------------------------------------ */

static double norm2(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return sqrt(s);
}

START_TEST(clip_bounds_norm_and_keeps_direction)
{
    float v[2] = {3.0f, 4.0f};
    ck_assert_double_eq(trainer_dp_clip(v, 2, 1.0), 5.0);
    ck_assert_float_eq_tol(v[0], 0.6f, 2e-7f);
    ck_assert_float_eq_tol(v[1], 0.8f, 2e-7f);
    ck_assert(norm2(v, 2) <= 1.0);

    /* Random vectors of several sizes and scales: the norm after is at most clip (exactly,
     * as computed in double) and within 2^-21 of it; every coordinate is the old one times
     * clip / norm up to float rounding (2^-22 relative, the 2^-23 margin included), so the
     * direction is kept; the returned norm is the one before. */
    trainer_rng_t r;
    trainer_rng_seed(&r, 5, 1);
    size_t n = 10000;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    static const double scales[] = {1e-20, 1e-3, 1.0, 7.0, 1e15};
    for (int t = 0; t < 40; t++) {
        size_t m = 1 + (size_t)trainer_rng_below(&r, n);
        double scale = scales[t % 5];
        for (size_t i = 0; i < m; i++)
            x[i] = y[i] = (float)(scale * trainer_rng_normal(&r));
        double before = norm2(x, m), clip = before * (0.01 + 0.9 * trainer_rng_uniform(&r));
        ck_assert_double_eq(trainer_dp_clip(y, m, clip), before);
        double after = norm2(y, m);
        ck_assert_msg(after <= clip, "norm %.17g after clip %.17g", after, clip);
        ck_assert(after >= clip * (1.0 - 0x1.0p-21));
        double s = clip / before;
        for (size_t i = 0; i < m; i++)
            ck_assert(fabs(y[i] - x[i] * s) <= 0x1.0p-22 * fabs(x[i] * s));
    }
    /* Inside the ball, on its boundary, zero, NaN, or an infinite clip: not a bit moves. */
    for (size_t i = 0; i < 100; i++)
        x[i] = y[i] = (float)trainer_rng_normal(&r);
    double nx = norm2(x, 100);
    ck_assert_double_eq(trainer_dp_clip(y, 100, nx * 1.5), nx);
    ck_assert_int_eq(memcmp(x, y, 100 * sizeof(float)), 0);
    ck_assert_double_eq(trainer_dp_clip(y, 100, nx), nx);
    ck_assert_int_eq(memcmp(x, y, 100 * sizeof(float)), 0);
    ck_assert_double_eq(trainer_dp_clip(y, 100, INFINITY), nx);
    ck_assert_int_eq(memcmp(x, y, 100 * sizeof(float)), 0);
    float zero[3] = {0, 0, 0};
    ck_assert_double_eq(trainer_dp_clip(zero, 3, 1e-3), 0.0);
    ck_assert(zero[0] == 0.0f && zero[1] == 0.0f && zero[2] == 0.0f);
    y[7] = NAN;
    ck_assert(isnan(trainer_dp_clip(y, 100, 1e-3)));
    ck_assert_float_eq(y[0], x[0]);
    /* large floats: the sum of squares in double does not overflow */
    for (size_t i = 0; i < 1000; i++)
        y[i] = 3e37f;
    ck_assert_rel(trainer_dp_clip(y, 1000, 1.0), 3e37 * sqrt(1000.0), 1e-6);
    ck_assert(norm2(y, 1000) <= 1.0);
    free(x);
    free(y);
}
END_TEST

START_TEST(noise_moments_and_determinism)
{
    /* 200,000 draws of N(0, 0.7^2) added to 3: sample mean within 5 standard errors
     * (5 x 0.7 / sqrt(n) = 0.0078), variance within 5 of its standard errors (sqrt(2/n):
     * 1.6%), the share within one sigma 0.6827 +- 5 sqrt(p(1-p)/n) (a uniform of the same
     * variance would give 0.577), the fourth moment 3 sigma^4 within 5 standard errors
     * (d^4 has variance 105 - 9 = 96 sigma^8: 3.7%). Seeded: the same draws every run. */
    size_t n = 200000;
    double sd = 0.7;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = y[i] = 3.0f;
    trainer_rng_t r, r2;
    trainer_rng_seed(&r, 42, 9);
    trainer_dp_noise(x, n, sd, &r);
    double mean = 0.0, m2 = 0.0, m4 = 0.0;
    size_t within = 0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - 3.0, c = x[i] - mean;
        m2 += c * c;
        m4 += d * d * d * d;
        within += fabs(d) < sd;
    }
    m2 /= (double)(n - 1);
    m4 /= (double)n;
    ck_assert_double_eq_tol(mean, 3.0, 5.0 * sd / sqrt((double)n));
    ck_assert_rel(m2, sd * sd, 5.0 * sqrt(2.0 / (double)n));
    ck_assert_double_eq_tol((double)within / (double)n, 0.682689492, 5.0 * sqrt(0.2167 / n));
    ck_assert_rel(m4, 3.0 * pow(sd, 4), 5.0 * sqrt(96.0 / (double)n) / 3.0);

    /* same seed, same noise; another seed, other noise; stddev 0 draws nothing */
    trainer_rng_seed(&r2, 42, 9);
    trainer_dp_noise(y, n, sd, &r2);
    ck_assert_int_eq(memcmp(x, y, n * sizeof(float)), 0);
    trainer_rng_seed(&r2, 43, 9);
    trainer_dp_noise(y, 100, sd, &r2);
    ck_assert_int_ne(memcmp(x, y, 100 * sizeof(float)), 0);
    trainer_rng_seed(&r, 1, 1);
    trainer_rng_seed(&r2, 1, 1);
    memcpy(y, x, 10 * sizeof(float));
    trainer_dp_noise(y, 10, 0.0, &r);
    ck_assert_int_eq(memcmp(x, y, 10 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(&r, &r2, sizeof r), 0);
    free(x);
    free(y);
}
END_TEST

START_TEST(fedavg_finish_is_noisy_fixed_denominator_mean)
{
    /* Three clients' updates clipped to S = 2 and summed, no noise: exactly sum / (q K)
     * with q K = 2.5 (the expected count, not the 3 that came). */
    float u[3][4] = {{3, 4, 0, 0}, {0.5f, 0, 0, 0}, {0, 0, 6, 8}};
    float sum[4] = {0};
    for (int c = 0; c < 3; c++) {
        trainer_dp_clip(u[c], 4, 2.0);
        for (int i = 0; i < 4; i++)
            sum[i] += u[c][i];
    }
    trainer_rng_t r;
    trainer_rng_seed(&r, 3, 3);
    float avg[4];
    memcpy(avg, sum, sizeof avg);
    trainer_dp_fedavg_finish(avg, 4, 2.0, 0.0, 2.5, &r);
    ck_assert_float_eq_tol(avg[0], (1.2f + 0.5f) / 2.5f, 1e-6f);
    ck_assert_float_eq_tol(avg[1], 1.6f / 2.5f, 1e-6f);
    ck_assert_float_eq_tol(avg[2], 1.2f / 2.5f, 1e-6f);
    ck_assert_float_eq_tol(avg[3], 1.6f / 2.5f, 1e-6f);

    /* With z = 1.1 the noise on the average is N(0, (z S / (q K))^2) = N(0, 0.88^2): the
     * sample standard deviation over 100,000 coordinates within 5 standard errors
     * (5 / sqrt(2n) = 1.1%), the mean within 5 x 0.88 / sqrt(n). */
    size_t n = 100000;
    float *z = calloc(n, sizeof(float));
    trainer_dp_fedavg_finish(z, n, 2.0, 1.1, 2.5, &r);
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < n; i++)
        mean += z[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (z[i] - mean) * (z[i] - mean);
    var /= (double)(n - 1);
    ck_assert_double_eq_tol(mean, 0.0, 5.0 * 0.88 / sqrt((double)n));
    ck_assert_rel(sqrt(var), 0.88, 5.0 / sqrt(2.0 * (double)n));
    free(z);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("privacy");
    TCase *tc = tcase_create("privacy");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, rdp_matches_multiprecision_oracle);
    tcase_add_test(tc, rdp_matches_quadrature);
    tcase_add_test(tc, rdp_published_values);
    tcase_add_test(tc, rdp_closed_forms);
    tcase_add_test(tc, integer_sum_matches_series);
    tcase_add_test(tc, robust_over_the_range);
    tcase_add_test(tc, conversions);
    tcase_add_test(tc, epsilon_published_values);
    tcase_add_test(tc, epsilon_monotone_and_edges);
    tcase_add_test(tc, clip_bounds_norm_and_keeps_direction);
    tcase_add_test(tc, noise_moments_and_determinism);
    tcase_add_test(tc, fedavg_finish_is_noisy_fixed_denominator_mean);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
