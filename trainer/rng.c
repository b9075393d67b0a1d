/* xoshiro256** and the few distributions dtsim needs (see rng.h). */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void trainer_rng_seed(trainer_rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t trainer_rng_next(trainer_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t trainer_rng_below(trainer_rng_t *r, uint64_t n)
{
    /* Rejection of the top partial range keeps every value equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do {
        v = trainer_rng_next(r);
    } while (v >= limit);
    return v % n;
}

double trainer_rng_uniform(trainer_rng_t *r)
{
    return (double)(trainer_rng_next(r) >> 11) * 0x1.0p-53;
}

double trainer_rng_normal(trainer_rng_t *r)
{
    double u1 = 1.0 - trainer_rng_uniform(r); /* (0, 1]: log stays finite */
    double u2 = trainer_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double trainer_rng_gamma(trainer_rng_t *r, double shape)
{
    if (shape < 1.0) {
        /* Boost: Gamma(a) = Gamma(a + 1) * U^(1/a). */
        double u = 1.0 - trainer_rng_uniform(r);
        return trainer_rng_gamma(r, shape + 1.0) * pow(u, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = trainer_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = 1.0 - trainer_rng_uniform(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

void trainer_rng_shuffle_u32(trainer_rng_t *r, uint32_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)trainer_rng_below(r, i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
