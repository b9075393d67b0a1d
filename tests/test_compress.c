/* Gradient codecs: the spec parser, fp16 against the compiler's own _Float16 conversion
 * (and every half read back to itself), top-k against a sort, qsgd8's bound and its
 * unbiasedness, the encoded sizes against their formulas, and error feedback's residual. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"

static trainer_codec_t codec_of(const char *text)
{
    trainer_codec_t c;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_codec_parse(&c, text, &err) == DT_OK, "%s: %s", text, err.msg);
    return c;
}

static float *random_vector(size_t n, uint64_t seed, float scale)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 77);
    float *x = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(trainer_rng_normal(&r) * scale);
    return x;
}

/* decode(encode(x)) into a zeroed vector */
static float *round_trip(const trainer_codec_t *c, const float *x, size_t n, uint64_t seed,
                         size_t *bytes)
{
    uint8_t *enc = malloc(trainer_codec_bytes(c, n) + 1);
    float *work = malloc(sizeof(float) * (n ? n : 1));
    float *y = calloc(n ? n : 1, sizeof(float));
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, 78);
    *bytes = trainer_codec_encode(c, x, n, enc, &r, work);
    trainer_codec_decode_add(c, enc, n, 1.0f, y);
    free(enc);
    free(work);
    return y;
}

START_TEST(parse_and_format)
{
    static const char *const ok[] = {"none", "fp16", "qsgd8", "topk:0.01", "topk:1", "topk:0.125"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        trainer_codec_t c = codec_of(ok[i]);
        char buf[64];
        trainer_codec_format(&c, buf, sizeof buf);
        ck_assert_str_eq(buf, ok[i]);
    }
    static const char *const bad[] = {"topk:0", "topk:1.5", "topk:", "topk: 0.1",
                                      "topk:x", "int8",     "FP16",  "topk:nan"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        trainer_codec_t c;
        dt_err_t err = {{0}};
        ck_assert_msg(trainer_codec_parse(&c, bad[i], &err) == DT_ERR_INPUT, "%s", bad[i]);
        ck_assert_msg(strstr(err.msg, "none, fp16, qsgd8 or topk:F with 0 < F <= 1"), "%s",
                      err.msg);
    }
    ck_assert(!trainer_codec_lossy(&(trainer_codec_t){TRAINER_CODEC_TOPK, 1.0}));
    ck_assert(trainer_codec_lossy(&(trainer_codec_t){TRAINER_CODEC_TOPK, 0.5}));
    ck_assert(!trainer_codec_lossy(&(trainer_codec_t){TRAINER_CODEC_NONE, 0}));
}
END_TEST

/* The sizes sim/docs/parallelism.md promises: fp16 half, qsgd8 a quarter plus a scale per 512,
 * top-k 1% as index + value pairs = 2% of fp32. */
START_TEST(sizes)
{
    size_t n = 235146; /* the mlp's parameters */
    trainer_codec_t none = codec_of("none"), fp16 = codec_of("fp16"), q8 = codec_of("qsgd8"),
                    top = codec_of("topk:0.01"), all = codec_of("topk:1");
    ck_assert_uint_eq(trainer_codec_bytes(&none, n), 4 * n);
    ck_assert_uint_eq(trainer_codec_bytes(&fp16, n), 2 * n);
    ck_assert_uint_eq(trainer_codec_bytes(&q8, n), n + 4 * 460);
    ck_assert_uint_eq(trainer_codec_topk_count(&top, n), 2352);
    ck_assert_uint_eq(trainer_codec_bytes(&top, n), 8 * 2352);
    ck_assert_uint_eq(trainer_codec_topk_count(&top, 100), 1);
    ck_assert_uint_eq(trainer_codec_topk_count(&top, 10), 1);
    ck_assert_uint_eq(trainer_codec_topk_count(&all, 10), 10);
    /* what encode writes is what bytes says */
    float *x = random_vector(n, 1, 1.0f);
    static const char *const specs[] = {"none", "fp16", "qsgd8", "topk:0.01"};
    for (size_t i = 0; i < 4; i++) {
        trainer_codec_t c = codec_of(specs[i]);
        size_t b;
        free(round_trip(&c, x, n, 2, &b));
        ck_assert_uint_eq(b, trainer_codec_bytes(&c, n));
    }
    free(x);
}
END_TEST

/* (Check records every assertion it passes: loops count their failures and assert once.) */

/* Every one of the 65,536 halves converts to a float and back to itself (NaNs stay NaN). */
START_TEST(fp16_every_half_round_trips)
{
    long bad = 0, first = -1;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = trainer_f16_to_f32((uint16_t)h);
        uint16_t back = trainer_f32_to_f16(f);
        int ok = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff)
                     ? isnan(f) && ((back >> 10) & 0x1f) == 0x1f && (back & 0x3ff)
                     : back == h;
        if (!ok && bad++ == 0)
            first = h;
    }
    ck_assert_msg(bad == 0, "%ld halves do not round-trip, the first %04lx", bad, first);
    ck_assert(trainer_f16_to_f32(0x3c00) == 1.0f);
    ck_assert(trainer_f16_to_f32(0x7bff) == 65504.0f);
    ck_assert(trainer_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    ck_assert_uint_eq(trainer_f32_to_f16(65520.0f), 0x7c00); /* halfway to 2^16: inf */
    ck_assert_uint_eq(trainer_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie: even */
    ck_assert_uint_eq(trainer_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
    ck_assert_uint_eq(trainer_f32_to_f16(ldexpf(1.0f, -25)), 0x0000); /* tie with 0: even */
    ck_assert_uint_eq(trainer_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
}
END_TEST

/* Random floats of every magnitude against the compiler's conversion (a second
 * implementation, where the compiler has _Float16), else against the error bound. */
START_TEST(fp16_matches_reference)
{
    trainer_rng_t r;
    trainer_rng_seed(&r, 5, 6);
    long bad = 0;
    float first = 0.0f;
    for (int i = 0; i < 200000; i++) {
        uint32_t bits = (uint32_t)trainer_rng_next(&r);
        float x;
        memcpy(&x, &bits, 4);
        if (isnan(x))
            continue;
        /* bias the exponents towards half's range half of the time */
        if (i & 1)
            x = ldexpf(frexpf(x, &(int){0}), (int)trainer_rng_below(&r, 50) - 30);
        uint16_t h = trainer_f32_to_f16(x);
#ifdef __FLT16_MAX__
        _Float16 ref = (_Float16)x;
        uint16_t hr;
        memcpy(&hr, &ref, 2);
        int ok = h == hr;
#else
        float back = trainer_f16_to_f32(h);
        int ok = !(fabsf(x) >= ldexpf(1.0f, -14) && fabsf(x) < 65504.0f) ||
                 fabsf(back - x) <= fabsf(x) * ldexpf(1.0f, -11);
#endif
        if (!ok && bad++ == 0)
            first = x;
    }
    ck_assert_msg(bad == 0, "%ld conversions differ, the first of %a", bad, (double)first);
}
END_TEST

/* top-k keeps exactly the k largest magnitudes (checked against a full sort), with their
 * exact values, and zero elsewhere; ties go to the lower index. */
static int by_magnitude_desc(const void *a, const void *b)
{
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return (x < y) - (x > y);
}

START_TEST(topk_keeps_the_largest)
{
    size_t n = 10007;
    float *x = random_vector(n, 3, 1.0f);
    for (size_t i = 0; i < n; i += 7)
        x[i] = 0.0f; /* many equal values */
    trainer_codec_t c = codec_of("topk:0.03");
    size_t k = trainer_codec_topk_count(&c, n), bytes;
    float *y = round_trip(&c, x, n, 0, &bytes);
    float *sorted = malloc(sizeof(float) * n);
    memcpy(sorted, x, sizeof(float) * n);
    qsort(sorted, n, sizeof(float), by_magnitude_desc);
    float t = fabsf(sorted[k - 1]);
    size_t kept = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (y[i] != 0.0f) {
            bad += y[i] != x[i] || fabsf(x[i]) < t;
            kept++;
        } else {
            bad += fabsf(x[i]) > t;
        }
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_eq(kept, k);

    /* ties: 10 equal magnitudes, keep 4 -> the first four */
    float tie[10] = {1, -1, 1, -1, 1, -1, 1, -1, 1, -1};
    trainer_codec_t c4 = {TRAINER_CODEC_TOPK, 0.4};
    float *yt = round_trip(&c4, tie, 10, 0, &bytes);
    for (int i = 0; i < 10; i++)
        ck_assert(yt[i] == (i < 4 ? tie[i] : 0.0f));
    free(yt);
    free(sorted);
    free(y);
    free(x);
}
END_TEST

/* qsgd8: every element within one level (scale / 127) of its value, zero buckets stay
 * zero, and the mean of many independent encodings converges to x (unbiased). */
START_TEST(qsgd8_bounded_and_unbiased)
{
    size_t n = 1500; /* three buckets, the last one short */
    float *x = random_vector(n, 4, 0.01f);
    for (size_t i = 1024; i < n; i++)
        x[i] = 0.0f;
    trainer_codec_t c = codec_of("qsgd8");
    double *mean = calloc(n, sizeof(double));
    int reps = 2000;
    long bad = 0;
    for (int r = 0; r < reps; r++) {
        size_t bytes;
        float *y = round_trip(&c, x, n, (uint64_t)r + 10, &bytes);
        for (size_t b = 0; b < n; b += TRAINER_QSGD_BUCKET) {
            float s = 0.0f;
            for (size_t i = b; i < n && i < b + TRAINER_QSGD_BUCKET; i++)
                s = fmaxf(s, fabsf(x[i]));
            for (size_t i = b; i < n && i < b + TRAINER_QSGD_BUCKET; i++)
                bad += !(fabsf(y[i] - x[i]) <= s / 127.0f * 1.0001f);
        }
        for (size_t i = 0; i < n; i++)
            mean[i] += y[i] / reps;
        free(y);
    }
    double worst = 0.0;
    for (size_t i = 0; i < 1024; i++) {
        /* the rounding noise of one draw is at most one level: its mean's sd is below
         * level / (2 sqrt(reps)); 6 of those is a bound no unbiased coder misses */
        float s = 0.0f;
        for (size_t j = i / 512 * 512; j < i / 512 * 512 + 512; j++)
            s = fmaxf(s, fabsf(x[j]));
        double err = fabs(mean[i] - x[i]) / (s / 127.0 / (2.0 * sqrt(reps)));
        worst = err > worst ? err : worst;
    }
    ck_assert_msg(bad == 0, "%ld elements off by more than a level", bad);
    ck_assert_msg(worst < 6.0, "bias of %.2f standard errors", worst);
    for (size_t i = 1024; i < n; i++)
        bad += mean[i] != 0.0;
    ck_assert_msg(bad == 0, "a zero bucket decoded to non-zero");
    free(mean);
    free(x);
}
END_TEST

/* Error feedback as the simulation does it: e += g; send encode(e); e -= decode. The sum of
 * what was sent plus the final residual equals the sum of the gradients (nothing is lost,
 * only delayed), where plain top-k loses most of the mass. */
START_TEST(error_feedback_loses_nothing)
{
    size_t n = 4096;
    trainer_codec_t c = codec_of("topk:0.01");
    float *e = calloc(n, sizeof(float)), *sent = calloc(n, sizeof(float));
    double *truth = calloc(n, sizeof(double));
    uint8_t *enc = malloc(trainer_codec_bytes(&c, n));
    float *work = malloc(sizeof(float) * n);
    for (int step = 0; step < 50; step++) {
        float *g = random_vector(n, 100 + (uint64_t)step, 1.0f);
        for (size_t i = 0; i < n; i++) {
            e[i] += g[i];
            truth[i] += g[i];
        }
        trainer_codec_encode(&c, e, n, enc, NULL, work);
        trainer_codec_decode_add(&c, enc, n, 1.0f, sent);
        trainer_codec_decode_add(&c, enc, n, -1.0f, e);
        free(g);
    }
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(sent[i] + e[i] - truth[i]));
    ck_assert_msg(worst < 1e-3, "lost %g", worst);
    free(e);
    free(sent);
    free(truth);
    free(enc);
    free(work);
}
END_TEST

static Suite *compress_suite(void)
{
    Suite *s = suite_create("compress");
    TCase *tc = tcase_create("codecs");
    tcase_add_test(tc, parse_and_format);
    tcase_add_test(tc, sizes);
    tcase_add_test(tc, fp16_every_half_round_trips);
    tcase_add_test(tc, fp16_matches_reference);
    tcase_add_test(tc, topk_keeps_the_largest);
    tcase_add_test(tc, qsgd8_bounded_and_unbiased);
    tcase_add_test(tc, error_feedback_loses_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(compress_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
