/* Seeded random streams (xoshiro256**, seeded through splitmix64). Every random choice in
 * dtsim draws from its own stream, named by (seed, stream id), so that adding a draw in one
 * place never shifts the numbers another place sees. */
#ifndef DTSIM_RNG_H
#define DTSIM_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct trainer_rng {
    uint64_t s[4];
} trainer_rng_t;

/* Stream ids used by the trainer; later modules add their own. */
enum {
    TRAINER_STREAM_INIT = 1,       /* model initialisation */
    TRAINER_STREAM_PARTITION = 2,  /* data split across clients */
    TRAINER_STREAM_SHUFFLE = 3,    /* batch order */
    TRAINER_STREAM_SYNTHETIC = 4,  /* synthetic data set */
    TRAINER_STREAM_TEST_SPLIT = 5, /* a text set's test windows (trainer_text_subsample) */
};

void trainer_rng_seed(trainer_rng_t *r, uint64_t seed, uint64_t stream);
uint64_t trainer_rng_next(trainer_rng_t *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t trainer_rng_below(trainer_rng_t *r, uint64_t n);
/* Uniform double in [0, 1). */
double trainer_rng_uniform(trainer_rng_t *r);
/* Standard normal (Box-Muller, both values used in turn is not worth the state: one per call). */
double trainer_rng_normal(trainer_rng_t *r);
/* Gamma(shape, 1), shape > 0 (Marsaglia and Tsang 2000). */
double trainer_rng_gamma(trainer_rng_t *r, double shape);
/* Fisher-Yates shuffle. */
void trainer_rng_shuffle_u32(trainer_rng_t *r, uint32_t *a, size_t n);

#endif
