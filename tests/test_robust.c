/* Robust aggregation: median and trimmed mean against a qsort of each coordinate and the
 * definition (bit for bit) and against counting on every 0-1 input, Krum and multi-Krum
 * against a naive second implementation (full distance matrix, each row sorted) and a case
 * where one coordinate alone decides, a planted attack (colluding far outliers, a NaN client)
 * that Krum and the median must reject and the mean cannot, ties to the lower index, the
 * weighted mean by hand, the rule checks' messages with their numbers, names, and FLOP counts
 * by hand. Every buffer is allocated at exactly the size the API asks for, so that ASan or
 * valgrind sees any overrun. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "robust.h"

/* k inputs of n floats; input i is N(0, s_i^2) with s_i in [0.5, 2.5) drawn too, so that the
 * inputs' spreads (and thus Krum's scores) differ. Freed with free_inputs. */
static float **random_inputs(int k, size_t n, uint64_t seed)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 91);
    float **x = malloc(sizeof(float *) * (size_t)k);
    for (int i = 0; i < k; i++) {
        double s = 0.5 + 2.0 * trainer_rng_uniform(&r);
        x[i] = malloc(sizeof(float) * (n ? n : 1));
        for (size_t j = 0; j < n; j++)
            x[i][j] = (float)(s * trainer_rng_normal(&r));
    }
    return x;
}

static void free_inputs(float **x, int k)
{
    for (int i = 0; i < k; i++)
        free(x[i]);
    free(x);
}

/* Runs rule a with scratch of exactly the advertised size; returns trainer_aggregate's count. */
static int aggregate(const trainer_agg_t *a, float *out, float **x, const float *w, int k, size_t n,
                     int *chosen)
{
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_agg_check(a, k, &err) == DT_OK, "%s", err.msg);
    size_t s = trainer_agg_scratch(a, k, n);
    float *scratch = malloc(sizeof(float) * (s ? s : 1));
    int got = trainer_aggregate(a, out, (const float *const *)x, w, k, n, scratch, chosen);
    free(scratch);
    return got;
}

/* |got - want| within a few float ulps of want (sums in another order, stored as float). */
static void assert_close(float got, double want, const char *what, size_t j)
{
    double tol = 3e-7 * fmax(1.0, fabs(want));
    ck_assert_msg(fabs(got - want) <= tol, "%s[%zu] = %.9g, want %.9g", what, j, got, want);
}

static int cmp_float(const void *p, const void *q)
{
    float a = *(const float *)p, b = *(const float *)q;
    return (a > b) - (a < b);
}

/* The definitions on a sorted copy of coordinate j. */
static double oracle_median(float **x, int k, size_t j, float *v)
{
    for (int i = 0; i < k; i++)
        v[i] = x[i][j];
    qsort(v, (size_t)k, sizeof *v, cmp_float);
    return k % 2 ? v[k / 2] : (float)(((double)v[k / 2 - 1] + v[k / 2]) / 2.0);
}

static double oracle_trimmed(float **x, int k, size_t j, int c, float *v)
{
    for (int i = 0; i < k; i++)
        v[i] = x[i][j];
    qsort(v, (size_t)k, sizeof *v, cmp_float);
    double s = 0.0;
    for (int i = c; i < k - c; i++)
        s += v[i];
    return s / (k - 2 * c);
}

START_TEST(median_matches_sorted_definition)
{
    /* k odd and even, small (insertion sort only) and large (the quickselect partitions);
     * the median's arithmetic is the definition's, so equality is exact. */
    static const int ks[] = {1, 2, 3, 4, 7, 10, 17, 32, 33, 64, 101};
    size_t n = 300;
    trainer_agg_t med = {TRAINER_AGG_MEDIAN, 0, 0, 0};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
        int k = ks[t];
        float **x = random_inputs(k, n, 100 + (uint64_t)k);
        /* ties: a few coordinates where several inputs agree exactly */
        for (int i = 0; i < k; i += 3)
            x[i][5] = x[i][6] = 0.25f;
        float *out = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * (size_t)k);
        int chosen[128];
        memset(chosen, 0, sizeof chosen);
        ck_assert_int_eq(aggregate(&med, out, x, NULL, k, n, chosen), k);
        for (int i = 0; i < k; i++)
            ck_assert_int_eq(chosen[i], 1);
        for (size_t j = 0; j < n; j++) {
            double want = oracle_median(x, k, j, v);
            ck_assert_msg(out[j] == (float)want, "k %d: median[%zu] = %.9g, want %.9g", k, j,
                          out[j], want);
        }
        free(out);
        free(v);
        free_inputs(x, k);
    }
}
END_TEST

START_TEST(trimmed_mean_matches_sorted_definition)
{
    /* (k, trim, values kept): trim 0 keeps all, others cut to 1 or 2 values in the middle. */
    static const struct {
        int k;
        double trim;
        int kept;
    } cases[] = {
        {5, 0.0, 5},   {6, 0.0, 6},    {5, 0.2, 3},     {8, 0.25, 4},  {5, 0.4, 1},
        {6, 0.4, 2},   {7, 0.45, 1},   {40, 0.1, 32},   {40, 0.49, 2}, {41, 0.49, 1},
        {99, 0.3, 41}, {100, 0.3, 40}, {100, 0.29, 42}, /* 0.29 x 100 is 29 less an ulp */
    };
    size_t n = 257;
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        int k = cases[t].k;
        trainer_agg_t tm = {TRAINER_AGG_TRIMMED_MEAN, cases[t].trim, 0, 0};
        int c = (k - cases[t].kept) / 2;
        float **x = random_inputs(k, n, 200 + t);
        float *out = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * (size_t)k);
        char what[64];
        snprintf(what, sizeof what, "k %d trim %g: trimmed", k, cases[t].trim);
        ck_assert_int_eq(aggregate(&tm, out, x, NULL, k, n, NULL), k);
        for (size_t j = 0; j < n; j++) { /* sorted, then summed in ascending order: exact */
            float want = (float)oracle_trimmed(x, k, j, c, v);
            ck_assert_msg(out[j] == want, "%s[%zu] = %.9g, want %.9g", what, j, out[j], want);
        }
        if (cases[t].trim == 0.0) { /* the unweighted mean, from the mean rule itself */
            trainer_agg_t mean = {TRAINER_AGG_MEAN, 0, 0, 0};
            float *mo = malloc(sizeof(float) * n);
            aggregate(&mean, mo, x, NULL, k, n, NULL);
            for (size_t j = 0; j < n; j++)
                assert_close(out[j], mo[j], "trim 0 vs mean", j);
            free(mo);
        }
        if (cases[t].kept == 1) /* one value left: the median, exactly */
            for (size_t j = 0; j < n; j++)
                ck_assert_float_eq(out[j], (float)oracle_median(x, k, j, v));
        free(out);
        free(v);
        free_inputs(x, k);
    }
}
END_TEST

START_TEST(every_zero_one_input)
{
    /* Input i's coordinate j is bit i of j, for all 2^k coordinates: every 0-1 column once.
     * A column with s ones has 1 at rank r iff r >= k - s, so the median and the trimmed mean
     * for every cut c follow by counting, no sort involved. (The 0-1 principle, Knuth TAOCP
     * 3, 5.3.4: a comparator network sorting every 0-1 input sorts every input.) */
    for (int k = 1; k <= 14; k++) {
        size_t n = (size_t)1 << k;
        float **x = malloc(sizeof(float *) * k), *out = malloc(sizeof(float) * n);
        for (int i = 0; i < k; i++) {
            x[i] = malloc(sizeof(float) * n);
            for (size_t j = 0; j < n; j++)
                x[i][j] = (float)((j >> i) & 1);
        }
        for (int c = -1; 2 * c < k; c++) { /* c = -1: the median */
            trainer_agg_t a = {c < 0 ? TRAINER_AGG_MEDIAN : TRAINER_AGG_TRIMMED_MEAN,
                               c < 0 ? 0.0 : (c + 0.25) / k, 0, 0};
            aggregate(&a, out, x, NULL, k, n, NULL);
            for (size_t j = 0; j < n; j++) {
                int s = 0;
                for (int i = 0; i < k; i++)
                    s += (int)((j >> i) & 1);
                int lo = c < 0 ? (k - 1) / 2 : c, hi = c < 0 ? k / 2 + 1 : k - c;
                int ones = 0; /* ranks in [lo, hi) holding a 1 */
                for (int r = lo; r < hi; r++)
                    ones += r >= k - s;
                float want = (float)((double)ones / (hi - lo));
                ck_assert_msg(out[j] == want, "k %d c %d column %zu: %g, want %g", k, c, j, out[j],
                              want);
            }
        }
        free(out);
        free_inputs(x, k);
    }
}
END_TEST

/* Naive Krum: full matrix in double, each row sorted with qsort, scores summed ascending;
 * the m smallest (score, index) marked in pick; returns them averaged with renormalised w. */
static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;
    return (a > b) - (a < b);
}

static void oracle_krum(float **x, const float *w, int k, size_t n, int f, int m, int *pick,
                        double *avg)
{
    double *d = malloc(sizeof(double) * (size_t)k * k), *row = malloc(sizeof(double) * k);
    double *score = malloc(sizeof(double) * k);
    for (int i = 0; i < k; i++)
        for (int l = 0; l < k; l++) {
            double s = 0.0;
            for (size_t j = 0; j < n; j++)
                s += ((double)x[i][j] - x[l][j]) * ((double)x[i][j] - x[l][j]);
            d[i * k + l] = s;
        }
    for (int i = 0; i < k; i++) {
        int c = 0;
        for (int l = 0; l < k; l++)
            if (l != i)
                row[c++] = d[i * k + l];
        qsort(row, (size_t)c, sizeof *row, cmp_double);
        score[i] = 0.0;
        for (int l = 0; l < k - f - 2; l++)
            score[i] += row[l];
    }
    for (int i = 0; i < k; i++)
        pick[i] = 0;
    for (int r = 0; r < m; r++) { /* the lowest score not yet picked, lowest index first */
        int best = -1;
        for (int i = 0; i < k; i++)
            if (!pick[i] && (best < 0 || score[i] < score[best]))
                best = i;
        pick[best] = 1;
    }
    double total = 0.0;
    for (int i = 0; i < k; i++)
        total += pick[i] ? w[i] : 0.0;
    for (size_t j = 0; j < n; j++) {
        avg[j] = 0.0;
        for (int i = 0; i < k; i++)
            if (pick[i])
                avg[j] += (double)w[i] / total * x[i][j];
    }
    free(d);
    free(row);
    free(score);
}

START_TEST(krum_matches_naive_implementation)
{
    static const struct {
        int k, f, m; /* m: multi_krum's (0 = k - f); krum is run for every case too */
    } cases[] = {
        {3, 0, 0},  {4, 0, 2},  {5, 1, 1},  {7, 2, 0},    {10, 3, 2},
        {12, 1, 5}, {20, 4, 0}, {20, 8, 3}, {33, 10, 23}, {50, 15, 0},
    };
    size_t n = 1000; /* two full blocks of 512 less a tail, and 4-wide sums with a remainder */
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        int k = cases[t].k, f = cases[t].f;
        float **x = random_inputs(k, n - t, 300 + t);
        size_t nt = n - t;
        trainer_rng_t r;
        trainer_rng_seed(&r, 400 + t, 92);
        float *w = malloc(sizeof(float) * k);
        double wsum = 0.0;
        for (int i = 0; i < k; i++)
            wsum += w[i] = (float)(0.1 + trainer_rng_uniform(&r));
        for (int i = 0; i < k; i++)
            w[i] = (float)(w[i] / wsum);
        float *out = malloc(sizeof(float) * nt);
        double *want = malloc(sizeof(double) * nt);
        int *pick = malloc(sizeof(int) * k), *chosen = malloc(sizeof(int) * k);
        for (int multi = 0; multi < 2; multi++) {
            trainer_agg_t a = {multi ? TRAINER_AGG_MULTI_KRUM : TRAINER_AGG_KRUM, 0, f,
                               multi ? cases[t].m : 0};
            int m = multi ? (cases[t].m ? cases[t].m : k - f) : 1;
            oracle_krum(x, w, k, nt, f, m, pick, want);
            ck_assert_int_eq(aggregate(&a, out, x, w, k, nt, chosen), m);
            for (int i = 0; i < k; i++)
                ck_assert_msg(chosen[i] == pick[i], "k %d f %d m %d: input %d chosen %d, naive %d",
                              k, f, m, i, chosen[i], pick[i]);
            for (size_t j = 0; j < nt; j++)
                assert_close(out[j], want[j], multi ? "multi_krum" : "krum", j);
            if (!multi) /* krum returns the chosen input itself, bit for bit */
                for (int i = 0; i < k; i++)
                    if (pick[i])
                        ck_assert_int_eq(memcmp(out, x[i], sizeof(float) * nt), 0);
        }
        free(out);
        free(want);
        free(pick);
        free(chosen);
        free(w);
        free_inputs(x, k);
    }
}
END_TEST

START_TEST(krum_rejects_planted_outliers)
{
    /* k - f honest inputs within 0.01 of one point, f colluding Byzantine inputs all at the
     * same far point (each other's nearest neighbours, score 0 among themselves for f - 1
     * of their k - f - 2 neighbours): Krum picks an honest input, multi-Krum (m = k - f)
     * exactly the honest ones, the mean lands far from the honest point. Then one Byzantine
     * input sends NaNs: still rejected, and the median stays in the honest range. */
    int k = 10, f = 3;
    size_t n = 600;
    trainer_rng_t r;
    trainer_rng_seed(&r, 5, 93);
    float **x = malloc(sizeof(float *) * k);
    int byz[10] = {0, 1, 0, 0, 0, 1, 0, 0, 0, 1}; /* inputs 1, 5, 9 */
    for (int i = 0; i < k; i++) {
        x[i] = malloc(sizeof(float) * n);
        for (size_t j = 0; j < n; j++)
            x[i][j] = byz[i] ? 50.0f : (float)(1.0 + 0.01 * (2.0 * trainer_rng_uniform(&r) - 1.0));
    }
    float w[10];
    for (int i = 0; i < k; i++)
        w[i] = 0.1f;
    float *out = malloc(sizeof(float) * n);
    int chosen[10];

    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) /* input 5 sends NaN instead, the other two keep colluding */
            for (size_t j = 0; j < n; j++)
                x[5][j] = NAN;
        trainer_agg_t krum = {TRAINER_AGG_KRUM, 0, f, 0};
        ck_assert_int_eq(aggregate(&krum, out, x, w, k, n, chosen), 1);
        for (int i = 0; i < k; i++)
            if (chosen[i])
                ck_assert_msg(!byz[i], "pass %d: krum chose Byzantine input %d", pass, i);
        for (size_t j = 0; j < n; j++)
            ck_assert(out[j] >= 0.99f && out[j] <= 1.01f);

        trainer_agg_t multi = {TRAINER_AGG_MULTI_KRUM, 0, f, 0};
        ck_assert_int_eq(aggregate(&multi, out, x, w, k, n, chosen), k - f);
        for (int i = 0; i < k; i++)
            ck_assert_msg(chosen[i] == !byz[i], "pass %d: input %d chosen %d", pass, i, chosen[i]);
        for (size_t j = 0; j < n; j++)
            ck_assert(out[j] >= 0.99f && out[j] <= 1.01f);

        trainer_agg_t med = {TRAINER_AGG_MEDIAN, 0, 0, 0};
        trainer_agg_t tm = {TRAINER_AGG_TRIMMED_MEAN, 0.3, 0, 0};
        for (int rule = 0; rule < 2; rule++) {
            aggregate(rule ? &tm : &med, out, x, NULL, k, n, NULL);
            for (size_t j = 0; j < n; j++)
                ck_assert_msg(out[j] >= 0.99f && out[j] <= 1.01f, "pass %d %s[%zu] = %g", pass,
                              rule ? "trimmed" : "median", j, out[j]);
        }
    }
    /* the mean cannot: 3 x 0.1 of (50 - 1) away with the finite attack; NaN with the NaN */
    trainer_agg_t mean = {TRAINER_AGG_MEAN, 0, 0, 0};
    aggregate(&mean, out, x, w, k, n, NULL);
    ck_assert(isnan(out[0]));
    for (size_t j = 0; j < n; j++)
        x[5][j] = 50.0f;
    aggregate(&mean, out, x, w, k, n, NULL);
    ck_assert_float_eq_tol(out[0], 0.7f * 1.0f + 0.3f * 50.0f, 0.01f);
    free(out);
    free_inputs(x, k);
}
END_TEST

START_TEST(krum_ties_go_to_lower_index)
{
    /* Inputs 1..4 identical, input 0 elsewhere: inputs 1..4 all score 0, so krum picks 1 and
     * multi_krum with m = 2 picks 1 and 2. */
    int k = 5;
    size_t n = 8;
    float **x = random_inputs(k, n, 17);
    for (int i = 2; i < k; i++)
        memcpy(x[i], x[1], sizeof(float) * n);
    for (size_t j = 0; j < n; j++)
        x[0][j] = x[1][j] + 3.0f;
    float out[8];
    int chosen[5];
    trainer_agg_t krum = {TRAINER_AGG_KRUM, 0, 1, 0}, multi = {TRAINER_AGG_MULTI_KRUM, 0, 1, 2};
    aggregate(&krum, out, x, NULL, k, n, chosen);
    ck_assert(!chosen[0] && chosen[1] && !chosen[2] && !chosen[3] && !chosen[4]);
    aggregate(&multi, out, x, NULL, k, n, chosen);
    ck_assert(!chosen[0] && chosen[1] && chosen[2] && !chosen[3] && !chosen[4]);
    ck_assert_int_eq(memcmp(out, x[1], sizeof out), 0);
    free_inputs(x, k);
}
END_TEST

START_TEST(krum_sees_every_coordinate)
{
    /* Five inputs equal everywhere but at coordinate p, where they are a rotation of
     * (0, 10, 10.5, 11, 30). With f = 1 each score sums the 2 nearest squared distances:
     * 210.25, 1.25, 0.5, 1.25, 741.25, so krum must pick the input holding 10.5; a distance
     * that skipped p would see five equal inputs and pick input 0. Every p of n = 1027 (two
     * blocks of 512 and a tail of 3) is tried. */
    static const float at_p[5] = {0, 10, 10.5f, 11, 30};
    int k = 5;
    size_t n = 1027;
    float **x = malloc(sizeof(float *) * k), *out = malloc(sizeof(float) * n);
    for (int i = 0; i < k; i++)
        x[i] = calloc(n, sizeof(float));
    trainer_agg_t krum = {TRAINER_AGG_KRUM, 0, 1, 0};
    for (size_t p = 0; p < n; p++) {
        int rot = (int)(p % 5), chosen[5];
        for (int i = 0; i < k; i++)
            x[i][p] = at_p[(i + rot) % 5];
        aggregate(&krum, out, x, NULL, k, n, chosen);
        int want = (2 - rot + 5) % 5; /* the input holding at_p[2] */
        for (int i = 0; i < k; i++)
            ck_assert_msg(chosen[i] == (i == want), "p %zu: input %d chosen %d", p, i, chosen[i]);
        ck_assert_float_eq(out[p], 10.5f);
        for (int i = 0; i < k; i++)
            x[i][p] = 0.0f;
    }
    free(out);
    free_inputs(x, k);
}
END_TEST

START_TEST(weighted_mean_by_hand)
{
    /* x0 (1, 2), x1 (3, -4), x2 (10, 0), w (0.5, 0.25, 0.25): (0.5 + 0.75 + 2.5, 1 - 1 + 0) */
    float a[] = {1, 2}, b[] = {3, -4}, c[] = {10, 0}, d[] = {NAN, NAN};
    float *x[] = {a, b, c, d};
    float out[2];
    int chosen[4] = {0};
    trainer_agg_t mean = {TRAINER_AGG_MEAN, 0, 0, 0};
    ck_assert_int_eq(aggregate(&mean, out, x, (const float[]){0.5f, 0.25f, 0.25f}, 3, 2, chosen),
                     3);
    ck_assert_float_eq(out[0], 3.75f);
    ck_assert_float_eq(out[1], 0.0f);
    ck_assert(chosen[0] && chosen[1] && chosen[2]);
    /* unnormalised sample counts (2, 1, 1) give the same; a fourth input of weight 0 sending
     * NaN is not read */
    aggregate(&mean, out, x, (const float[]){2, 1, 1, 0}, 4, 2, NULL);
    ck_assert_float_eq(out[0], 3.75f);
    ck_assert_float_eq(out[1], 0.0f);
    /* w NULL: the plain mean (14 / 3, -2 / 3) */
    aggregate(&mean, out, x, NULL, 3, 2, NULL);
    ck_assert_float_eq_tol(out[0], 14.0f / 3.0f, 1e-6f);
    ck_assert_float_eq_tol(out[1], -2.0f / 3.0f, 1e-6f);
    /* median (3, 0), unweighted whatever w says */
    trainer_agg_t med = {TRAINER_AGG_MEDIAN, 0, 0, 0};
    aggregate(&med, out, x, (const float[]){0.9f, 0.05f, 0.05f}, 3, 2, NULL);
    ck_assert_float_eq(out[0], 3.0f);
    ck_assert_float_eq(out[1], 0.0f);
}
END_TEST

START_TEST(median_resists_one_huge_outlier)
{
    /* 6 honest inputs in [-1, 1], one at 1e30: median and trimmed mean stay within the
     * honest range per coordinate; the mean is pulled past 1e28. */
    int k = 7;
    size_t n = 1000;
    trainer_rng_t r;
    trainer_rng_seed(&r, 9, 94);
    float **x = malloc(sizeof(float *) * k);
    for (int i = 0; i < k; i++) {
        x[i] = malloc(sizeof(float) * n);
        for (size_t j = 0; j < n; j++)
            x[i][j] = i == 3 ? 1e30f : (float)(2.0 * trainer_rng_uniform(&r) - 1.0);
    }
    float *out = malloc(sizeof(float) * n);
    trainer_agg_t med = {TRAINER_AGG_MEDIAN, 0, 0, 0}, tm = {TRAINER_AGG_TRIMMED_MEAN, 0.15, 0, 0};
    for (int rule = 0; rule < 2; rule++) {
        aggregate(rule ? &tm : &med, out, x, NULL, k, n, NULL);
        for (size_t j = 0; j < n; j++) {
            float lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < k; i++)
                if (i != 3) {
                    lo = fminf(lo, x[i][j]);
                    hi = fmaxf(hi, x[i][j]);
                }
            ck_assert_msg(out[j] >= lo && out[j] <= hi, "%s[%zu] = %g outside [%g, %g]",
                          rule ? "trimmed" : "median", j, out[j], lo, hi);
        }
    }
    trainer_agg_t mean = {TRAINER_AGG_MEAN, 0, 0, 0};
    aggregate(&mean, out, x, NULL, k, n, NULL);
    for (size_t j = 0; j < n; j++)
        ck_assert(out[j] > 1e28f);
    free(out);
    free_inputs(x, k);
}
END_TEST

/* trainer_agg_check's verdict on (a, k), and its message containing want (NULL: DT_OK). */
static void expect_check(trainer_agg_t a, int k, const char *want)
{
    dt_err_t err = {{0}};
    dt_status st = trainer_agg_check(&a, k, &err);
    if (!want) {
        ck_assert_msg(st == DT_OK, "%s k %d: %s", trainer_agg_names[a.kind], k, err.msg);
        return;
    }
    ck_assert_int_eq(st, DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
}

START_TEST(check_errors_name_the_numbers)
{
    trainer_agg_t krum = {TRAINER_AGG_KRUM, 0, 3, 0};
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_agg_check(&krum, 6, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg,
                     "krum with f = 3 needs more than 2f + 2 = 8 clients per round, got 6");
    expect_check(krum, 8, "got 8");
    expect_check(krum, 9, NULL);
    expect_check((trainer_agg_t){TRAINER_AGG_KRUM, 0, 0, 0}, 2,
                 "2f + 2 = 2 clients per round, got 2");
    expect_check((trainer_agg_t){TRAINER_AGG_KRUM, 0, 0, 0}, 3, NULL);
    expect_check((trainer_agg_t){TRAINER_AGG_KRUM, 0, -1, 0}, 10, "f = -1 must be at least 0");

    /* multi_krum: k = 10, f = 2: m in [1, 8], 0 meaning 8 */
    expect_check((trainer_agg_t){TRAINER_AGG_MULTI_KRUM, 0, 2, 0}, 10, NULL);
    expect_check((trainer_agg_t){TRAINER_AGG_MULTI_KRUM, 0, 2, 1}, 10, NULL);
    expect_check((trainer_agg_t){TRAINER_AGG_MULTI_KRUM, 0, 2, 8}, 10, NULL);
    expect_check((trainer_agg_t){TRAINER_AGG_MULTI_KRUM, 0, 2, 9}, 10,
                 "multi_krum m = 9 must lie in [1, k - f] = [1, 8] (k = 10, f = 2");
    expect_check((trainer_agg_t){TRAINER_AGG_MULTI_KRUM, 0, 2, -1}, 10, "m = -1");
    expect_check((trainer_agg_t){TRAINER_AGG_MULTI_KRUM, 0, 2, 1}, 6,
                 "multi_krum with f = 2 needs more than 2f + 2 = 6 clients per round, got 6");

    /* trimmed_mean: trim in [0, 0.5) and something left */
    expect_check((trainer_agg_t){TRAINER_AGG_TRIMMED_MEAN, 0.5, 0, 0}, 10,
                 "trim = 0.5 must lie in [0, 0.5)");
    expect_check((trainer_agg_t){TRAINER_AGG_TRIMMED_MEAN, -0.1, 0, 0}, 10, "trim = -0.1");
    expect_check((trainer_agg_t){TRAINER_AGG_TRIMMED_MEAN, NAN, 0, 0}, 10, "trim = nan");
    expect_check((trainer_agg_t){TRAINER_AGG_TRIMMED_MEAN, 0.5 - 1e-12, 0, 0}, 2,
                 "= 1 at each end of 2 clients per round, leaving none");
    expect_check((trainer_agg_t){TRAINER_AGG_TRIMMED_MEAN, 0.49, 0, 0}, 3, NULL);
    expect_check((trainer_agg_t){TRAINER_AGG_TRIMMED_MEAN, 0.0, 0, 0}, 1, NULL);

    /* every rule needs a client */
    for (int kind = TRAINER_AGG_MEAN; kind <= TRAINER_AGG_MULTI_KRUM; kind++)
        expect_check((trainer_agg_t){(trainer_agg_kind_t)kind, 0, 0, 0}, 0,
                     "needs at least 1 client per round, got 0");
    expect_check((trainer_agg_t){TRAINER_AGG_MEDIAN, 0, 0, 0}, 1, NULL);
    expect_check((trainer_agg_t){(trainer_agg_kind_t)7, 0, 0, 0}, 5, "unknown aggregation rule 7");
}
END_TEST

START_TEST(names_round_trip)
{
    static const char *const want[] = {"mean", "median", "trimmed_mean", "krum", "multi_krum"};
    int count = 0;
    while (trainer_agg_names[count])
        count++;
    ck_assert_int_eq(count, 5);
    ck_assert_int_eq(TRAINER_AGG_MULTI_KRUM + 1, 5);
    for (int kind = 0; kind < count; kind++) {
        ck_assert_str_eq(trainer_agg_names[kind], want[kind]);
        int found = -1; /* name -> kind by scanning, as a scenario parser would */
        for (int i = 0; trainer_agg_names[i]; i++)
            if (!strcmp(trainer_agg_names[i], want[kind]))
                found = i;
        ck_assert_int_eq(found, kind);
    }
}
END_TEST

START_TEST(flops_and_scratch_by_hand)
{
    size_t n = 1000;
    trainer_agg_t mean = {TRAINER_AGG_MEAN, 0, 0, 0}, med = {TRAINER_AGG_MEDIAN, 0, 0, 0};
    trainer_agg_t tm = {TRAINER_AGG_TRIMMED_MEAN, 0.25, 0, 0};
    trainer_agg_t krum = {TRAINER_AGG_KRUM, 0, 2, 0}, multi = {TRAINER_AGG_MULTI_KRUM, 0, 2, 0};
    ck_assert_double_eq(trainer_agg_flops(&mean, 10, n), 20000.0);
    ck_assert_double_eq(trainer_agg_flops(&med, 8, n), 24000.0); /* 8 x 3 x n */
    ck_assert_double_eq(trainer_agg_flops(&tm, 8, n), 28000.0);  /* (24 + 8 - 4) n */
    ck_assert_double_eq(trainer_agg_flops(&med, 1, n), 0.0);
    /* k 9, f 2: 3 n 36 distances + 9 x 8 x 3 comparisons + 2 n m (m 1; multi 7) */
    ck_assert_double_eq(trainer_agg_flops(&krum, 9, n), 108000.0 + 216.0 + 2000.0);
    ck_assert_double_eq(trainer_agg_flops(&multi, 9, n), 108000.0 + 216.0 + 14000.0);
    ck_assert_uint_eq(trainer_agg_scratch(&mean, 10, n), 20);
    ck_assert_uint_eq(trainer_agg_scratch(&med, 10, n), 640); /* 64 coordinates at once */
    ck_assert_uint_eq(trainer_agg_scratch(&krum, 10, n), 2 * (100 + 20));
}
END_TEST

START_TEST(zero_length_inputs)
{
    /* n = 0: nothing written, Krum's distances all 0 so it picks input 0 */
    float a[1] = {7}, b[1] = {8}, c[1] = {9}, out[1] = {-1};
    float *x[] = {a, b, c};
    int chosen[3];
    trainer_agg_t krum = {TRAINER_AGG_KRUM, 0, 0, 0};
    ck_assert_int_eq(aggregate(&krum, out, x, NULL, 3, 0, chosen), 1);
    ck_assert(chosen[0] && !chosen[1] && !chosen[2]);
    ck_assert_float_eq(out[0], -1.0f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("robust");
    TCase *tc = tcase_create("aggregation");
    tcase_add_test(tc, median_matches_sorted_definition);
    tcase_add_test(tc, trimmed_mean_matches_sorted_definition);
    tcase_add_test(tc, every_zero_one_input);
    tcase_add_test(tc, krum_matches_naive_implementation);
    tcase_add_test(tc, krum_rejects_planted_outliers);
    tcase_add_test(tc, krum_ties_go_to_lower_index);
    tcase_add_test(tc, krum_sees_every_coordinate);
    tcase_add_test(tc, weighted_mean_by_hand);
    tcase_add_test(tc, median_resists_one_huge_outlier);
    tcase_add_test(tc, check_errors_name_the_numbers);
    tcase_add_test(tc, names_round_trip);
    tcase_add_test(tc, flops_and_scratch_by_hand);
    tcase_add_test(tc, zero_length_inputs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
