/* Robust aggregation rules (see robust.h).
 *
 * Scratch, in floats (doubles take two, so scratch must be aligned for double: malloc's is):
 *   mean                 k doubles: the inputs' coefficients
 *   median, trimmed_mean k x 64 floats: 64 coordinates' values, gathered
 *   krum, multi_krum     k x k doubles (the distances), k (the scores), k (one row sorted,
 *                        then the coefficients)
 *
 * FLOP counts (trainer_agg_flops), for the simulated time only:
 *   mean          2 k n             (a multiply-add per input and coordinate)
 *   median        k log2(k) n       (a sort's comparisons, counted as flops; the sorting
 *                                    network used here does about (k/4) log2(k)^2 min-max
 *                                    pairs, but as vector instructions)
 *   trimmed_mean  (k log2(k) + k - 2c) n   (the sort, then the sum of the k - 2c kept)
 *   krum          3 n k(k-1)/2      (subtract, square, add for each pair's coordinates)
 *                 + k (k-1) log2(k-1)  (sorting each input's distances for its score)
 *                 + 2 m n           (the average of the m chosen; krum: m = 1) */
#include "robust.h"

#include <math.h>
#include <stdint.h>

/* Coordinates per block of the averaging and distance loops: k inputs x 2 KiB stay in the
 * L2 cache while every pair (or every input) uses them, so memory sees each input once. */
#define AGG_BLOCK 512
/* Coordinates the median and trimmed mean sort side by side (vector lanes of one comparator). */
#define AGG_LANES 64

const char *const trainer_agg_names[] = {"mean", "median",     "trimmed_mean",
                                         "krum", "multi_krum", NULL};

/* Values cut at each end: floor(trim k), with an allowance for trim's binary rounding. */
static int trim_count(double trim, int k)
{
    return (int)floor(trim * k + 1e-9);
}

/* multi_krum's m with 0 resolved; krum averages 1. */
static int krum_m(const trainer_agg_t *a, int k)
{
    if (a->kind == TRAINER_AGG_KRUM)
        return 1;
    return a->m == 0 ? k - a->f : a->m;
}

dt_status trainer_agg_check(const trainer_agg_t *a, int k, dt_err_t *err)
{
    DT_ASSERT(a);
    if ((unsigned)a->kind > TRAINER_AGG_MULTI_KRUM)
        return dt_err_input(err, "unknown aggregation rule %d", (int)a->kind);
    const char *name = trainer_agg_names[a->kind];
    if (k < 1)
        return dt_err_input(err, "%s needs at least 1 client per round, got %d", name, k);
    switch (a->kind) {
    case TRAINER_AGG_MEAN:
    case TRAINER_AGG_MEDIAN:
        return DT_OK;
    case TRAINER_AGG_TRIMMED_MEAN: {
        if (!(a->trim >= 0.0 && a->trim < 0.5))
            return dt_err_input(err,
                                "trimmed_mean trim = %g must lie in [0, 0.5): it is the "
                                "share cut at each end",
                                a->trim);
        int c = trim_count(a->trim, k);
        if (2 * c >= k)
            return dt_err_input(err,
                                "trimmed_mean with trim = %g cuts floor(trim k) = %d at "
                                "each end of %d clients per round, leaving none",
                                a->trim, c, k);
        return DT_OK;
    }
    case TRAINER_AGG_KRUM:
    case TRAINER_AGG_MULTI_KRUM: {
        if (a->f < 0)
            return dt_err_input(err, "%s f = %d must be at least 0", name, a->f);
        if ((long)k <= 2L * a->f + 2)
            return dt_err_input(err,
                                "%s with f = %d needs more than 2f + 2 = %ld clients per "
                                "round, got %d",
                                name, a->f, 2L * a->f + 2, k);
        if (a->kind == TRAINER_AGG_MULTI_KRUM && (a->m < 0 || a->m > k - a->f))
            return dt_err_input(err,
                                "multi_krum m = %d must lie in [1, k - f] = [1, %d] "
                                "(k = %d, f = %d; m = 0 means k - f)",
                                a->m, k - a->f, k, a->f);
        return DT_OK;
    }
    }
    return DT_OK;
}

size_t trainer_agg_scratch(const trainer_agg_t *a, int k, size_t n)
{
    (void)n;
    size_t kk = k > 0 ? (size_t)k : 0;
    switch (a->kind) {
    case TRAINER_AGG_MEAN:
        return 2 * kk;
    case TRAINER_AGG_MEDIAN:
    case TRAINER_AGG_TRIMMED_MEAN:
        return kk * AGG_LANES;
    case TRAINER_AGG_KRUM:
    case TRAINER_AGG_MULTI_KRUM:
        return 2 * (kk * kk + 2 * kk);
    }
    return 0;
}

/* out[j] = sum_i c[i] x[i][j] in double; inputs with c[i] == 0 are not read at all. */
static void combine(float *out, const float *const *x, const double *c, int k, size_t n)
{
    double acc[AGG_BLOCK];
    for (size_t j0 = 0; j0 < n; j0 += AGG_BLOCK) {
        size_t b = n - j0 < AGG_BLOCK ? n - j0 : AGG_BLOCK;
        for (size_t t = 0; t < b; t++)
            acc[t] = 0.0;
        for (int i = 0; i < k; i++) {
            if (c[i] == 0.0)
                continue;
            const float *xi = x[i] + j0;
            double ci = c[i];
            for (size_t t = 0; t < b; t++)
                acc[t] += ci * xi[t];
        }
        for (size_t t = 0; t < b; t++)
            out[j0 + t] = (float)acc[t];
    }
}

/* c[i] = w[i] / sum of w over the i with c[i] != 0 on entry (1 marks an input that enters);
 * equal shares when w is NULL or those weights sum to 0. */
static void normalise(double *c, const float *w, int k)
{
    double total = 0.0;
    int count = 0;
    for (int i = 0; i < k; i++) {
        if (c[i] == 0.0)
            continue;
        DT_ASSERT(!w || w[i] >= 0.0f); /* sample counts: a negative or NaN weight is a bug */
        total += w ? w[i] : 1.0;
        count++;
    }
    for (int i = 0; i < k; i++) {
        if (c[i] == 0.0)
            continue;
        c[i] = total > 0.0 ? (w ? w[i] : 1.0) / total : 1.0 / count;
    }
    /* an entering input of weight 0 keeps c = 0 and is skipped by combine: nothing lost */
}

/* One comparator on AGG_LANES columns: a[t], b[t] = min, max. Written as one compare and two
 * selects, the form GCC vectorizes without -ffast-math. */
static inline void minmax_lanes(float *restrict a, float *restrict b)
{
    for (int t = 0; t < AGG_LANES; t++) {
        float u = a[t], w = b[t];
        float lo = u < w ? u : w, hi = u < w ? w : u;
        a[t] = lo;
        b[t] = hi;
    }
}

/* Sorts column t of v (k, AGG_LANES), for every t, with min/max only: the comparators of
 * Batcher's odd-even merge sort (1968; Knuth TAOCP 3, 5.3.4) in the form valid for any k,
 * about (k/4) log2(k)^2 of them (191 for k = 32, 1471 for 128). Each comparator is applied
 * to AGG_LANES coordinates at once and has no branch on the data, so it becomes vector
 * compares and selects: for k = 10 this measured 6 times faster per coordinate than a
 * quickselect with its unpredictable branches, for k = 100 twice. No NaN in v (the caller
 * maps it to +infinity), so < is a total order. */
static void sort_lanes(float *v, int k)
{
    for (int p = 1; p < k; p *= 2)
        for (int d = p; d >= 1; d /= 2)
            for (int j = d % p; j + d < k; j += 2 * d)
                for (int i = 0; i < d && i + j + d < k; i++)
                    if ((i + j) / (2 * p) == (i + j + d) / (2 * p))
                        minmax_lanes(v + (size_t)(i + j) * AGG_LANES,
                                     v + (size_t)(i + j + d) * AGG_LANES);
}

/* Median or trimmed mean, coordinate by coordinate, AGG_LANES coordinates at a time: their
 * k values gathered (transposed) into v (k, AGG_LANES), each column sorted, then the middle
 * rows read: the median's one or two, the trimmed mean's k - 2c summed in ascending order. */
static void coordinatewise(const trainer_agg_t *a, float *out, const float *const *x, int k,
                           size_t n, float *v)
{
    int median = a->kind == TRAINER_AGG_MEDIAN;
    int c = median ? 0 : trim_count(a->trim, k), h = k / 2;
    for (size_t j0 = 0; j0 < n; j0 += AGG_LANES) {
        size_t b = n - j0 < AGG_LANES ? n - j0 : AGG_LANES;
        for (int i = 0; i < k; i++) {
            float *row = v + (size_t)i * AGG_LANES;
            const float *xi = x[i] + j0;
            for (size_t t = 0; t < b; t++)
                row[t] = isnan(xi[t]) ? INFINITY : xi[t]; /* a NaN is an outlier like +inf */
            for (size_t t = b; t < AGG_LANES; t++)
                row[t] = 0.0f; /* the last block's unused lanes */
        }
        sort_lanes(v, k);
        const float *mid = v + (size_t)h * AGG_LANES;
        if (median && k % 2) {
            for (size_t t = 0; t < b; t++)
                out[j0 + t] = mid[t];
        } else if (median) {
            const float *below = mid - AGG_LANES;
            for (size_t t = 0; t < b; t++)
                out[j0 + t] = (float)(((double)below[t] + mid[t]) * 0.5);
        } else {
            double acc[AGG_LANES] = {0};
            for (int i = c; i < k - c; i++) {
                const float *row = v + (size_t)i * AGG_LANES;
                for (int t = 0; t < AGG_LANES; t++)
                    acc[t] += row[t];
            }
            for (size_t t = 0; t < b; t++)
                out[j0 + t] = (float)(acc[t] / (k - 2 * c));
        }
    }
}

/* sum_t (a[t] - b[t])^2 in double, in 8 partial sums (one per t mod 8) that the compiler
 * keeps in vector registers; their order is fixed, so the result is too. */
static double sq_dist(const float *restrict a, const float *restrict b, size_t n)
{
    double s[8] = {0};
    size_t t = 0;
    for (; t + 8 <= n; t += 8)
        for (int l = 0; l < 8; l++) {
            double d = (double)a[t + l] - b[t + l];
            s[l] += d * d;
        }
    for (; t < n; t++) {
        double d = (double)a[t] - b[t];
        s[0] += d * d;
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* d (k, k) = squared L2 distances, each pair computed once over blocks of coordinates and
 * mirrored; NaN (from NaN or opposite infinities) becomes +infinity. */
static void krum_distances(double *d, const float *const *x, int k, size_t n)
{
    for (size_t i = 0; i < (size_t)k * k; i++)
        d[i] = 0.0;
    for (size_t j0 = 0; j0 < n; j0 += AGG_BLOCK) {
        size_t b = n - j0 < AGG_BLOCK ? n - j0 : AGG_BLOCK;
        for (int i = 0; i < k; i++)
            for (int l = i + 1; l < k; l++)
                d[(size_t)i * k + l] += sq_dist(x[i] + j0, x[l] + j0, b);
    }
    for (int i = 0; i < k; i++)
        for (int l = i + 1; l < k; l++) {
            double v = d[(size_t)i * k + l];
            d[(size_t)i * k + l] = d[(size_t)l * k + i] = isnan(v) ? INFINITY : v;
        }
}

/* score[i] = sum of the q smallest distances from input i to the others, added in
 * ascending order; row is k doubles of room. */
static void krum_scores(double *score, const double *d, int k, int q, double *row)
{
    for (int i = 0; i < k; i++) {
        int c = 0;
        for (int l = 0; l < k; l++) {
            if (l == i)
                continue;
            double t = d[(size_t)i * k + l];
            int j = c++ - 1;
            for (; j >= 0 && t < row[j]; j--)
                row[j + 1] = row[j];
            row[j + 1] = t;
        }
        double s = 0.0;
        for (int j = 0; j < q; j++)
            s += row[j];
        score[i] = s;
    }
}

/* (score, index) order: the lower score first, the lower index among equal scores. */
static int ranks_before(const double *score, int i, int j)
{
    return score[i] < score[j] || (score[i] == score[j] && i < j);
}

int trainer_aggregate(const trainer_agg_t *a, float *out, const float *const *x, const float *w,
                      int k, size_t n, float *scratch, int *chosen)
{
    DT_ASSERT(trainer_agg_check(a, k, NULL) == DT_OK);
    DT_ASSERT(out && x && scratch);
    DT_ASSERT((uintptr_t)scratch % _Alignof(double) == 0);
    for (int i = 0; i < k; i++)
        DT_ASSERT(x[i] && x[i] != out);
    double *c = (double *)scratch; /* mean's coefficients */
    switch (a->kind) {
    case TRAINER_AGG_MEAN:
        for (int i = 0; i < k; i++)
            c[i] = 1.0;
        normalise(c, w, k);
        combine(out, x, c, k, n);
        break;
    case TRAINER_AGG_MEDIAN:
    case TRAINER_AGG_TRIMMED_MEAN:
        coordinatewise(a, out, x, k, n, scratch);
        break;
    case TRAINER_AGG_KRUM:
    case TRAINER_AGG_MULTI_KRUM: {
        double *d = (double *)scratch;     /* (k, k) */
        double *score = d + (size_t)k * k; /* (k) */
        double *row = score + k;           /* (k): a sorted row, then coefficients */
        int m = krum_m(a, k);
        krum_distances(d, x, k, n);
        krum_scores(score, d, k, k - a->f - 2, row);
        for (int i = 0; i < k; i++)
            row[i] = 0.0;
        /* the m first in (score, index) order: each pick is the first after the last */
        for (int r = 0, last = -1; r < m; r++) {
            int best = -1;
            for (int i = 0; i < k; i++)
                if ((last < 0 || ranks_before(score, last, i)) &&
                    (best < 0 || ranks_before(score, i, best)))
                    best = i;
            row[best] = 1.0;
            last = best;
        }
        if (chosen)
            for (int i = 0; i < k; i++)
                chosen[i] = row[i] != 0.0;
        normalise(row, w, k);
        combine(out, x, row, k, n);
        return m;
    }
    }
    if (chosen)
        for (int i = 0; i < k; i++)
            chosen[i] = 1;
    return k;
}

double trainer_agg_flops(const trainer_agg_t *a, int k, size_t n)
{
    double kd = k, nd = (double)n;
    double sort = k > 1 ? kd * log2(kd) : 0.0;
    switch (a->kind) {
    case TRAINER_AGG_MEAN:
        return 2.0 * kd * nd;
    case TRAINER_AGG_MEDIAN:
        return sort * nd;
    case TRAINER_AGG_TRIMMED_MEAN:
        return (sort + kd - 2.0 * trim_count(a->trim, k)) * nd;
    case TRAINER_AGG_KRUM:
    case TRAINER_AGG_MULTI_KRUM: {
        double rows = k > 2 ? kd * (kd - 1.0) * log2(kd - 1.0) : 0.0;
        return 3.0 * nd * kd * (kd - 1.0) / 2.0 + rows + 2.0 * krum_m(a, k) * nd;
    }
    }
    return 0.0;
}
