/* Gradient codecs (see compress.h). Encodings are written in host byte order with memcpy,
 * so no alignment is assumed. */
#include "compress.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODEC_FORMS "none, fp16, qsgd8 or topk:F with 0 < F <= 1"

dt_status trainer_codec_parse(trainer_codec_t *c, const char *text, dt_err_t *err)
{
    DT_ASSERT(c && text);
    memset(c, 0, sizeof *c);
    if (!strcmp(text, "none"))
        return DT_OK;
    if (!strcmp(text, "fp16")) {
        c->kind = TRAINER_CODEC_FP16;
        return DT_OK;
    }
    if (!strcmp(text, "qsgd8")) {
        c->kind = TRAINER_CODEC_QSGD8;
        return DT_OK;
    }
    if (!strncmp(text, "topk:", 5)) {
        const char *num = text + 5;
        char *end = NULL;
        double f = 0.0;
        if (*num && !isspace((unsigned char)*num))
            f = strtod(num, &end);
        if (!end || *end || !isfinite(f) || !(f > 0.0) || f > 1.0)
            return dt_err_input(err, "bad compression \"%s\": F must be a number in (0, 1] (%s)",
                                text, CODEC_FORMS);
        c->kind = TRAINER_CODEC_TOPK;
        c->fraction = f;
        return DT_OK;
    }
    return dt_err_input(err, "unknown compression \"%s\" (%s)", text, CODEC_FORMS);
}

void trainer_codec_format(const trainer_codec_t *c, char *buf, size_t n)
{
    switch (c->kind) {
    case TRAINER_CODEC_NONE:
        snprintf(buf, n, "none");
        return;
    case TRAINER_CODEC_FP16:
        snprintf(buf, n, "fp16");
        return;
    case TRAINER_CODEC_QSGD8:
        snprintf(buf, n, "qsgd8");
        return;
    case TRAINER_CODEC_TOPK:
        snprintf(buf, n, "topk:%.17g", c->fraction);
        /* the shortest text that reads back to the same number */
        for (int p = 1; p <= 17; p++) {
            char t[40];
            snprintf(t, sizeof t, "%.*g", p, c->fraction);
            if (strtod(t, NULL) == c->fraction) {
                snprintf(buf, n, "topk:%s", t);
                break;
            }
        }
        return;
    }
    DT_ASSERT(0);
}

int trainer_codec_lossy(const trainer_codec_t *c)
{
    return c->kind != TRAINER_CODEC_NONE && !(c->kind == TRAINER_CODEC_TOPK && c->fraction >= 1.0);
}

size_t trainer_codec_topk_count(const trainer_codec_t *c, size_t n)
{
    if (n == 0)
        return 0;
    /* the small slack keeps 0.01 x 100 at 1, not 2, after rounding in the product */
    double k = ceil(c->fraction * (double)n - 1e-9);
    if (k < 1)
        k = 1;
    return k > (double)n ? n : (size_t)k;
}

size_t trainer_codec_bytes(const trainer_codec_t *c, size_t n)
{
    switch (c->kind) {
    case TRAINER_CODEC_NONE:
        return 4 * n;
    case TRAINER_CODEC_FP16:
        return 2 * n;
    case TRAINER_CODEC_QSGD8:
        return n + 4 * ((n + TRAINER_QSGD_BUCKET - 1) / TRAINER_QSGD_BUCKET);
    case TRAINER_CODEC_TOPK:
        return 8 * trainer_codec_topk_count(c, n);
    }
    DT_ASSERT(0);
    return 0;
}

/* ---- fp16 -------------------------------------------------------------------------------- */

uint16_t trainer_f32_to_f16(float x)
{
    uint32_t f;
    memcpy(&f, &x, sizeof f);
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    uint32_t exp = (f >> 23) & 0xffu, mant = f & 0x7fffffu;
    if (exp == 0xff) /* infinity, or NaN kept quiet and non-zero */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        /* a half subnormal m 2^-24: m = M >> (14 - e), M the 24-bit significand (float
         * subnormals, exp 0, are far below half's range and round to zero) */
        int shift = 14 - e;
        if (exp == 0 || shift > 24)
            return sign;
        uint32_t M = mant | 0x800000u, m = M >> shift, rem = M & ((1u << shift) - 1u),
                 half = 1u << (shift - 1);
        if (rem > half || (rem == half && (m & 1u)))
            m++; /* may carry into the smallest normal: the same bit pattern */
        return (uint16_t)(sign | m);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is right, up to infinity */
    return (uint16_t)(sign | h);
}

float trainer_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t f;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        f = sign | 0x7f800000u | (mant << 13);
    else
        f = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float x;
    memcpy(&x, &f, sizeof x);
    return x;
}

/* ---- top-k ------------------------------------------------------------------------------- */

static float magnitude(float x)
{
    return isnan(x) ? INFINITY : fabsf(x);
}

/* The value that would sit at index `rank` of a[0..n) sorted ascending (a is reordered). */
static float select_rank(float *a, size_t n, size_t rank)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        /* median of three as pivot, then a three-way partition (many equal values are
         * common: zero gradients of dead ReLUs) */
        size_t mid = lo + (hi - lo) / 2;
        float x = a[lo], y = a[mid], z = a[hi];
        float pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        size_t lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            if (a[i] < pivot) {
                float t = a[lt];
                a[lt++] = a[i];
                a[i++] = t;
            } else if (a[i] > pivot) {
                float t = a[gt];
                a[gt] = a[i];
                a[i] = t;
                if (gt == 0)
                    break;
                gt--;
            } else {
                i++;
            }
        }
        if (rank < lt)
            hi = lt - 1;
        else if (rank > gt)
            lo = gt + 1;
        else
            return pivot;
    }
    return a[lo];
}

static size_t topk_encode(const trainer_codec_t *c, const float *x, size_t n, uint8_t *out,
                          float *work)
{
    size_t k = trainer_codec_topk_count(c, n);
    if (k == 0)
        return 0;
    DT_ASSERT(work);
    for (size_t i = 0; i < n; i++)
        work[i] = magnitude(x[i]);
    float t = select_rank(work, n, n - k); /* the k-th largest magnitude */
    size_t above = 0;
    for (size_t i = 0; i < n; i++)
        above += magnitude(x[i]) > t;
    size_t ties = k - above, w = 0;
    for (size_t i = 0; i < n && w < k; i++) {
        float m = magnitude(x[i]);
        if (m > t || (m == t && ties > 0)) {
            if (m == t)
                ties--;
            uint32_t index = (uint32_t)i;
            memcpy(out + 8 * w, &index, 4);
            memcpy(out + 8 * w + 4, &x[i], 4);
            w++;
        }
    }
    DT_ASSERT(w == k);
    return 8 * k;
}

/* ---- encode and decode ------------------------------------------------------------------- */

size_t trainer_codec_encode(const trainer_codec_t *c, const float *x, size_t n, uint8_t *out,
                            trainer_rng_t *rng, float *work)
{
    DT_ASSERT(n <= UINT32_MAX);
    switch (c->kind) {
    case TRAINER_CODEC_NONE:
        memcpy(out, x, 4 * n);
        return 4 * n;
    case TRAINER_CODEC_FP16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = trainer_f32_to_f16(x[i]);
            memcpy(out + 2 * i, &h, 2);
        }
        return 2 * n;
    case TRAINER_CODEC_QSGD8: {
        DT_ASSERT(rng);
        uint8_t *p = out;
        for (size_t b = 0; b < n; b += TRAINER_QSGD_BUCKET) {
            size_t len = n - b < TRAINER_QSGD_BUCKET ? n - b : TRAINER_QSGD_BUCKET;
            float s = 0.0f;
            for (size_t i = 0; i < len; i++)
                if (fabsf(x[b + i]) > s)
                    s = fabsf(x[b + i]);
            memcpy(p, &s, 4);
            p += 4;
            for (size_t i = 0; i < len; i++) {
                int q = 0;
                if (s > 0.0f) {
                    float level = fabsf(x[b + i]) / s * 127.0f;
                    float low = floorf(level);
                    q = (int)low + (trainer_rng_uniform(rng) < (double)(level - low));
                    if (q > 127)
                        q = 127;
                    if (x[b + i] < 0.0f)
                        q = -q;
                }
                int8_t code = (int8_t)q;
                memcpy(p++, &code, 1);
            }
        }
        DT_ASSERT((size_t)(p - out) == trainer_codec_bytes(c, n));
        return (size_t)(p - out);
    }
    case TRAINER_CODEC_TOPK:
        return topk_encode(c, x, n, out, work);
    }
    DT_ASSERT(0);
    return 0;
}

void trainer_codec_decode_add(const trainer_codec_t *c, const uint8_t *in, size_t n, float alpha,
                              float *y)
{
    switch (c->kind) {
    case TRAINER_CODEC_NONE:
        for (size_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, in + 4 * i, 4);
            y[i] += alpha * v;
        }
        return;
    case TRAINER_CODEC_FP16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, in + 2 * i, 2);
            y[i] += alpha * trainer_f16_to_f32(h);
        }
        return;
    case TRAINER_CODEC_QSGD8: {
        const uint8_t *p = in;
        for (size_t b = 0; b < n; b += TRAINER_QSGD_BUCKET) {
            size_t len = n - b < TRAINER_QSGD_BUCKET ? n - b : TRAINER_QSGD_BUCKET;
            float s;
            memcpy(&s, p, 4);
            p += 4;
            float unit = s / 127.0f;
            for (size_t i = 0; i < len; i++) {
                int8_t code;
                memcpy(&code, p++, 1);
                y[b + i] += alpha * ((float)code * unit);
            }
        }
        return;
    }
    case TRAINER_CODEC_TOPK: {
        size_t k = trainer_codec_topk_count(c, n);
        for (size_t j = 0; j < k; j++) {
            uint32_t index;
            float v;
            memcpy(&index, in + 8 * j, 4);
            memcpy(&v, in + 8 * j + 4, 4);
            DT_ASSERT(index < n);
            y[index] += alpha * v;
        }
        return;
    }
    }
    DT_ASSERT(0);
}
