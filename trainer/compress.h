/* Gradient compression: what a worker sends instead of its fp32 gradient, as bytes.
 *
 *   fp16    IEEE half precision, round to nearest even: 2 bytes per element.
 *   qsgd8   8-bit stochastic quantization (QSGD, Alistarh et al. 2017, with a max-norm
 *           scale): per bucket of TRAINER_QSGD_BUCKET elements one fp32 scale s = max |x|,
 *           then one signed byte per element, q = sign(x) * floor(127 |x| / s + u), u
 *           uniform in [0, 1), so that E[q s / 127] = x: n + 4 ceil(n / bucket) bytes.
 *   topk:F  the k = ceil(F n) elements of largest magnitude (ties: lower index first) as
 *           k (uint32 index, fp32 value) pairs in index order: 8 k bytes; the rest is zero.
 *
 * The encodings are real byte strings of exactly trainer_codec_bytes(c, n) bytes; decoding
 * needs only them and n. Error feedback (the residual x - decode(encode(x)) added to the next
 * gradient, Seide et al. 2014, Karimireddy et al. 2019) is the caller's, with
 * trainer_codec_decode_add. Host memory only. */
#ifndef DTSIM_COMPRESS_H
#define DTSIM_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "rng.h"

#define TRAINER_QSGD_BUCKET 512

typedef enum trainer_codec_kind {
    TRAINER_CODEC_NONE, /* fp32 as it is */
    TRAINER_CODEC_FP16,
    TRAINER_CODEC_QSGD8,
    TRAINER_CODEC_TOPK,
} trainer_codec_kind_t;

typedef struct trainer_codec {
    trainer_codec_kind_t kind;
    double fraction; /* topk: share of the elements kept, in (0, 1] */
} trainer_codec_t;

/* "none" | "fp16" | "qsgd8" | "topk:F" (0 < F <= 1). */
dt_status trainer_codec_parse(trainer_codec_t *c, const char *text, dt_err_t *err);
/* c as text into buf (n bytes), which trainer_codec_parse reads back to the same codec. */
void trainer_codec_format(const trainer_codec_t *c, char *buf, size_t n);
/* True when decode(encode(x)) may differ from x. */
int trainer_codec_lossy(const trainer_codec_t *c);
/* topk: elements kept out of n (at least 1 when n > 0). */
size_t trainer_codec_topk_count(const trainer_codec_t *c, size_t n);
/* Size of the encoding of n elements (none: 4 n). */
size_t trainer_codec_bytes(const trainer_codec_t *c, size_t n);

/* Encodes x[0..n) into out (trainer_codec_bytes(c, n) bytes) and returns that size. qsgd8
 * draws its rounding from rng; topk needs work (n floats of scratch), the others ignore it. */
size_t trainer_codec_encode(const trainer_codec_t *c, const float *x, size_t n, uint8_t *out,
                            trainer_rng_t *rng, float *work);
/* y[0..n) += alpha * decode(in). */
void trainer_codec_decode_add(const trainer_codec_t *c, const uint8_t *in, size_t n, float alpha,
                              float *y);

/* IEEE 754 binary16 <-> binary32, round to nearest even, overflow to infinity, subnormals
 * kept, NaN stays NaN. */
uint16_t trainer_f32_to_f16(float x);
/* Exact: every binary16 value is a binary32 value. */
float trainer_f16_to_f32(uint16_t h);

#endif
