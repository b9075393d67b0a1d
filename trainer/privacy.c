/* Client-level differential privacy: clipping, noise and the RDP accountant (privacy.h).
 * Everything of the accountant is in log space: A_alpha runs to e^(alpha^2 / (2 sigma^2))
 * (e^800000 at alpha 512, sigma 0.4) and its terms as low as q^alpha (1e-2560 at q 1e-5). */
#include "privacy.h"

#include <math.h>

#include "common.h"

/* Largest integer order summed term by term (the sum has alpha + 1 terms). */
#define RDP_INT_MAX 1048576.0
/* The series stops once past alpha its terms are below e^-40 (4e-18) of the sum (its
 * alternating tail is then smaller than that), or once the Euler means of its last
 * RDP_SERIES_WINDOW + 1 partial sums move by less than RDP_SERIES_TOL of the sum of its
 * positive terms; RDP_SERIES_MAX_TERMS bounds it in any case. */
#define RDP_SERIES_TAIL 40.0
#define RDP_SERIES_WINDOW 20
#define RDP_SERIES_TOL 1e-15
#define RDP_SERIES_MAX_TERMS 200000

static const double LOG_HALF = -0.69314718055994530942;
static const double LOG_SQRT_PI = 0.57236494292470008707; /* log(pi) / 2 */
static const double SQRT2 = 1.41421356237309504880;

/* ---- clipping and noise ---------------------------------------------------------------- */

double trainer_dp_clip(float *x, size_t n, double clip)
{
    DT_ASSERT(clip > 0.0);
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    double norm = sqrt(ss);
    if (norm > clip) { /* false for NaN: x stays as it is and the caller sees the NaN */
        /* each float rounding can grow |x_i s| by one part in 2^24: start 2^-23 inside */
        double s = clip / norm * (1.0 - 0x1.0p-23);
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(x[i] * s);
    }
    return norm;
}

void trainer_dp_noise(float *x, size_t n, double stddev, trainer_rng_t *rng)
{
    if (stddev == 0.0)
        return;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(x[i] + stddev * trainer_rng_normal(rng));
}

void trainer_dp_fedavg_finish(float *sum, size_t n, double clip, double noise_multiplier,
                              double expected_clients, trainer_rng_t *rng)
{
    DT_ASSERT(expected_clients > 0.0);
    double stddev = noise_multiplier > 0.0 ? noise_multiplier * clip : 0.0;
    double inv = 1.0 / expected_clients;
    for (size_t i = 0; i < n; i++) {
        double v = sum[i];
        if (stddev != 0.0)
            v += stddev * trainer_rng_normal(rng);
        sum[i] = (float)(v * inv);
    }
}

/* ---- log-space arithmetic -------------------------------------------------------------- */

/* log(e^a + e^b), -INFINITY standing for 0. */
static double log_add(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* log(e^a - 1), a > 0. */
static double log_expm1(double a)
{
    return a > 40.0 ? a + log1p(-exp(-a)) : log(expm1(a));
}

/* log(1 + e^a). */
static double log1p_exp(double a)
{
    return a > 0.0 ? a + log1p(exp(-a)) : log1p(exp(a));
}

/* log(erfc(x)) for any x: erfc itself down to 4e-296 (x = 26), past it the asymptotic
 * expansion erfc(x) = e^(-x^2) / (x sqrt(pi)) sum_n (-1)^n (2n-1)!! / (2x^2)^n, whose terms
 * at x >= 26 fall by 1/1352 or more: eight of them leave less than 1e-24. */
static double log_erfc(double x)
{
    if (x < 26.0)
        return log(erfc(x));
    double u = 1.0 / (2.0 * x * x), term = 1.0, s = 0.0;
    for (int k = 1; k <= 8; k++) {
        term *= -(2.0 * k - 1.0) * u;
        s += term;
    }
    return -x * x - log(x) - LOG_SQRT_PI + log1p(s);
}

/* ---- one step of the sampled Gaussian mechanism ----------------------------------------- */

/* log A_alpha for integer alpha, 0 < q < 1, as log(1 + (A - 1)): the binomial weights sum to
 * 1, so A - 1 = sum_{k>=2} C(alpha,k) (1-q)^(alpha-k) q^k expm1((k^2-k)/(2 sigma^2)), every
 * term positive. Summing A - 1 rather than A keeps its digits when A is 1 + 1e-14 (q small,
 * sigma large), where log(sum of A's terms) would keep none. */
static double log_a_int(double q, double sigma, long alpha)
{
    double lq = log(q), l1q = log1p(-q), inv2s2 = 1.0 / (2.0 * sigma * sigma);
    double log_c = log((double)alpha); /* log C(alpha, 1) */
    double acc = -INFINITY;            /* log(A - 1) */
    for (long k = 2; k <= alpha; k++) {
        log_c += log((double)(alpha - k + 1) / (double)k);
        double x = (double)k * (double)(k - 1) * inv2s2;
        acc = log_add(acc, log_c + (double)(alpha - k) * l1q + (double)k * lq + log_expm1(x));
    }
    return log1p_exp(acc);
}

/* log A_alpha by the series of Mironov et al. 2019, Section 3.3, 0 < q < 1, any alpha > 1:
 * positive and negative terms summed apart in log space, subtracted at the end. Past
 * alpha + 1 the terms alternate in sign; where they shrink fast the sum stops at the first
 * negligible one, but near the split x0 they shrink only like k^-(alpha+2) (the binomial
 * series of (1 + r)^alpha at r = 1), which would take 10^5 terms at alpha 1.25. There the
 * limit is taken from the partial sums by Euler's transform: the mean of the last
 * RDP_SERIES_WINDOW + 1 partial sums weighted by binomial coefficients (positive weights,
 * so no digits are lost), stopped once two successive means agree. */
static double log_a_series(double q, double sigma, double alpha)
{
    enum { W = RDP_SERIES_WINDOW };
    double lq = log(q), l1q = log1p(-q), inv2s2 = 1.0 / (2.0 * sigma * sigma);
    double x0 = sigma * sigma * (l1q - lq) + 0.5; /* where mu1 / mu0 = (1 - q) / q */
    double scale = 1.0 / (SQRT2 * sigma);
    double pos = -INFINITY, neg = -INFINITY;
    double log_c = 0.0; /* log |C(alpha, k)| */
    int sign = 1;       /* sign of C(alpha, k) */
    double weight[W + 1], partial[W + 1], ref = 0.0, mean = NAN;
    weight[0] = 1.0;
    for (int i = 1; i <= W; i++)
        weight[i] = weight[i - 1] * (W - i + 1) / i;
    for (int i = 0; i <= W; i++)
        weight[i] /= (double)(1L << W);
    long tail = 0; /* alternating terms so far */
    for (long k = 0; k < RDP_SERIES_MAX_TERMS; k++) {
        double j = alpha - (double)k, kd = (double)k;
        double s0 = log_c + kd * lq + j * l1q + (kd * kd - kd) * inv2s2 + LOG_HALF +
                    log_erfc((kd - x0) * scale);
        double s1 = log_c + j * lq + kd * l1q + (j * j - j) * inv2s2 + LOG_HALF +
                    log_erfc((x0 - j) * scale);
        double t = log_add(s0, s1);
        if (sign > 0)
            pos = log_add(pos, t);
        else
            neg = log_add(neg, t);
        if (j == 0.0) /* integer alpha: C(alpha, k) = 0 from here on */
            break;
        if (kd > alpha + 1.0) {
            if (t < pos - RDP_SERIES_TAIL) /* the rest is smaller than this term */
                break;
            if (tail == 0)
                ref = pos; /* partial sums in units of e^ref */
            partial[tail % (W + 1)] = exp(pos - ref) - exp(neg - ref);
            tail++;
            if (tail > W) {
                double m = 0.0;
                for (int i = 0; i <= W; i++)
                    m += weight[i] * partial[(tail + i) % (W + 1)];
                if (fabs(m - mean) <= RDP_SERIES_TOL * exp(pos - ref) && m > 0.0)
                    return ref + log(m);
                mean = m;
            }
        }
        log_c += log(fabs(j) / (kd + 1.0));
        if (j < 0.0)
            sign = -sign;
    }
    if (neg == -INFINITY)
        return pos;
    double d = neg - pos; /* A = e^pos (1 - e^d); A >= 1 so d < 0 */
    return d < 0.0 ? pos + log1p(-exp(d)) : 0.0;
}

/* Common cases of both entry points; returns 1 with the answer in *r when one applies. */
static int rdp_special(double q, double sigma, double alpha, double *r)
{
    if (!(q >= 0.0 && q <= 1.0 && sigma >= 0.0 && alpha > 1.0)) {
        *r = NAN;
        return 1;
    }
    if (q == 0.0) {
        *r = 0.0;
        return 1;
    }
    if (sigma == 0.0 || alpha == INFINITY || sigma == INFINITY) {
        *r = sigma == INFINITY ? 0.0 : INFINITY;
        return 1;
    }
    if (q == 1.0) {
        *r = alpha / (2.0 * sigma * sigma);
        return 1;
    }
    return 0;
}

double trainer_rdp_sgm(double q, double sigma, double alpha)
{
    double r;
    if (rdp_special(q, sigma, alpha, &r))
        return r;
    double la = alpha == floor(alpha) && alpha <= RDP_INT_MAX ? log_a_int(q, sigma, (long)alpha)
                                                              : log_a_series(q, sigma, alpha);
    return fmax(la, 0.0) / (alpha - 1.0);
}

double trainer_rdp_sgm_series(double q, double sigma, double alpha)
{
    double r;
    if (rdp_special(q, sigma, alpha, &r))
        return r;
    return fmax(log_a_series(q, sigma, alpha), 0.0) / (alpha - 1.0);
}

/* ---- (eps, delta) ------------------------------------------------------------------------ */

static const double default_orders[] = {
    1.25, 1.5, 1.75, 2,  2.25, 2.5, 3,  3.5, 4,  4.5, 5,  6,  7,  8,  9,  10,  11,  12,
    13,   14,  15,   16, 17,   18,  19, 20,  21, 22,  23, 24, 25, 26, 27, 28,  29,  30,
    31,   32,  33,   34, 35,   36,  37, 38,  39, 40,  41, 42, 43, 44, 45, 46,  47,  48,
    49,   50,  51,   52, 53,   54,  55, 56,  57, 58,  59, 60, 61, 62, 63, 128, 256, 512,
};

const double *trainer_rdp_orders(int *n)
{
    *n = (int)(sizeof default_orders / sizeof default_orders[0]);
    return default_orders;
}

double trainer_rdp_to_epsilon(double r, double alpha, double delta, trainer_rdp_conversion_t conv)
{
    if (!(alpha > 1.0 && delta > 0.0 && delta < 1.0 && r >= 0.0))
        return NAN;
    if (r == INFINITY)
        return INFINITY;
    /* total variation <= sqrt(1 - e^-KL) <= sqrt(1 - e^-r) (Bretagnolle-Huber; KL is the
     * order-1 divergence, below every order's): delta past it needs no epsilon */
    if (delta * delta + expm1(-r) >= 0.0)
        return 0.0;
    if (alpha == INFINITY)
        return r;
    double eps = conv == TRAINER_RDP_CLASSIC
                     ? r - log(delta) / (alpha - 1.0)
                     : r + log1p(-1.0 / alpha) - (log(delta) + log(alpha)) / (alpha - 1.0);
    return fmax(eps, 0.0);
}

double trainer_rdp_epsilon_orders(double q, double sigma, long steps, double delta,
                                  const double *orders, int n_orders, trainer_rdp_conversion_t conv,
                                  double *order)
{
    double best = INFINITY, best_order = NAN;
    if (!(delta > 0.0 && delta < 1.0) || steps < 0 || n_orders < 1) {
        best = NAN;
    } else if (q == 0.0 || steps == 0) {
        best = 0.0;
        best_order = orders[0];
    } else {
        for (int i = 0; i < n_orders; i++) {
            double eps = trainer_rdp_to_epsilon(
                (double)steps * trainer_rdp_sgm(q, sigma, orders[i]), orders[i], delta, conv);
            if (isnan(eps)) {
                best = NAN;
                best_order = NAN;
                break;
            }
            if (eps < best) {
                best = eps;
                best_order = orders[i];
            }
        }
    }
    if (order)
        *order = best_order;
    return best;
}

double trainer_rdp_epsilon(double q, double sigma, long steps, double delta, double *order)
{
    int n;
    const double *orders = trainer_rdp_orders(&n);
    return trainer_rdp_epsilon_orders(q, sigma, steps, delta, orders, n, TRAINER_RDP_BALLE, order);
}
