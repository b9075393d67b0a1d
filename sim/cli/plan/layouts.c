/* The layouts a plan searches: every tensor x pipeline x context x data layout of the
 * devices with its micro-batches, schedule, sequence parallelism, recomputation and ZeRO
 * (plan_enumerate), a MoE profile's expert groups (plan_expert_more), gradient buckets
 * (plan_buckets), and a layout's name. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"

/* Pipeline stages must divide this: the profile's transformer layers (its attention cores,
 * layers named *.scores), or its pipeline pieces when it has none. */
long plan_profile_blocks(const sim_model_profile_t *prof)
{
    long blocks = 0, pieces = 1;
    for (int i = 0; i < prof->n_layers; i++) {
        const char *name = prof->layers[i].name;
        size_t len = strlen(name);
        blocks += len >= 7 && !strcmp(name + len - 7, ".scores");
        pieces += prof->layers[i].cut > 0;
    }
    return blocks ? blocks : pieces;
}

/* The pieces the profile can be cut into (its [forward] cuts + 1): the interleaved schedule
 * needs a piece for each of its stages x virtual stages chunks. */
long plan_profile_pieces(const sim_model_profile_t *prof)
{
    long pieces = 1;
    for (int i = 0; i < prof->n_layers; i++)
        pieces += prof->layers[i].cut > 0;
    return pieces;
}

/* Every layout of o's devices and batch, in the order printed: tensor, then stages, from
 * small to large, then micro-batch size, virtual stages (1 first: 1F1B), sequence
 * parallelism (off first), recomputation (none, selective, full) and ZeRO (0, then 1 with
 * replicas; plan_zero_more adds 2 and 3). Tensor 1, 2, 4, 8 and stages 1 to 64, or those of
 * --tensor and --stages. Stages need not divide the layers: the pipeline cuts them where
 * the largest stage is smallest (Llama 3 405B ran 126 layers in 16 stages). Selective only
 * with attention cores, sequence parallelism only with tensor > 1, where it changes
 * something; Megatron-LM turns it on with every tensor split, but off it is what a layout
 * without it costs, so both run. Returns how many went to out. */
long plan_enumerate(const plan_opts_t *o, long blocks, long pieces, int splits,
                           int attention, long seq, plan_layout_t *out, long max)
{
    static const long all_tensors[] = {1, 2, 4, 8}, sizes[] = {1, 2, 4};
    const long *tensors = o->n_tensor ? o->tensor : all_tensors;
    int n_tensors = o->n_tensor ? o->n_tensor : 4;
    long n = 0;
    for (int ti = 0; ti < n_tensors; ti++) {
        long t = tensors[ti];
        if (t > o->per_server || o->devices % t || (o->heads && o->heads % t) || (t > 1 && !splits))
            continue;
        for (int pi = 0; pi < (o->n_stages ? o->n_stages : 64); pi++)
        for (long cp = 1; cp <= (seq >= PLAN_LONG_SEQUENCE ? PLAN_MAX_CONTEXT : 1); cp *= 2) {
            long p = o->n_stages ? o->stages[pi] : pi + 1;
            if (p > blocks || (o->devices / t) % p || (o->devices / t / p) % cp ||
                seq % (2 * cp))
                continue;
            long d = o->devices / (t * p * cp);
            if (o->global_batch % d)
                continue;
            long b = o->global_batch / d;
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                long mbs = sizes[si], m = b / mbs;
                if (b % mbs || m > 4096)
                    continue;
                for (long v = 1; v <= PLAN_MAX_VIRTUAL; v *= 2) {
                    /* the schedule's own rules (strategy/pipeline/check.c): 2 or more stages, micro-batches
                     * S at a time, a piece of the profile for every chunk */
                    if (v > 1 && (p < 2 || m % p || p * v > pieces))
                        continue;
                    for (int sp = 0; sp <= (t > 1); sp++)
                        for (int rc = SIM_RECOMPUTE_NONE; rc <= SIM_RECOMPUTE_FULL; rc++) {
                            if (rc == SIM_RECOMPUTE_SELECTIVE && !attention)
                                continue;
                            for (int zero = 0; zero <= (d * cp > 1); zero++) {
                                if (n == max)
                                    return n;
                                out[n] = (plan_layout_t){.t = t, .p = p, .d = d, .cp = cp,
                                                         .mbs = mbs,
                                                         .m = m, .v = v, .sp = sp,
                                                         .rc = (sim_recompute_t)rc,
                                                         .zero = zero, .order = 16 * n};
                                n++;
                            }
                        }
                }
            }
        }
    }
    return n;
}

const char *plan_recompute_name(sim_recompute_t rc)
{
    static const char *const names[] = {"", "selective", "full"}; /* sim_recompute_t */
    return names[rc];
}

/* What a layout adds to tT pP dD mbSxC zZ, each word after sep: "b25", "sp", "v2", the
 * recomputation. */
void plan_layout_more(const plan_layout_t *l, char sep, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    if (l->bucket_mb)
        k += (size_t)snprintf(buf + k, n - k, "%cb%d", sep, l->bucket_mb);
    if (l->cp > 1 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%ccp%ld", sep, l->cp);
    if (l->sp && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%csp", sep);
    if (l->v > 1 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%cv%ld", sep, l->v);
    if (l->e > 1 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%ce%ld", sep, l->e);
    if (l->rc && k < n)
        snprintf(buf + k, n - k, "%c%s", sep, plan_recompute_name(l->rc));
}

void plan_layout_name(const plan_layout_t *l, char *buf, size_t n)
{
    char more[40]; /* " b25 cp16 sp v8 e4096 selective" at most */
    plan_layout_more(l, ' ', more, sizeof more);
    snprintf(buf, n, "t%ld p%ld d%ld mb%ldx%ld z%d%s", l->t, l->p, l->d, l->mbs, l->m, l->zero,
             more);
}

/* A MoE profile's expert parallelism (strategy/pipeline/experts.c: expert groups of E replicas, E dividing
 * the replicas and the routed experts, no ZeRO): appends to l (n rows, not yet fitted;
 * room for max) a row of each E = 2, 4, ... for each row with replicas and without ZeRO,
 * right after it, and returns the rows there are then. */
long plan_expert_more(plan_layout_t *l, long n, int experts, long max)
{
    long k = n;
    for (long i = 0; i < n; i++) {
        long slot = 1; /* orders are 16 apart (plan_enumerate) */
        for (long e = 2; e <= l[i].d && l[i].zero == 0 && l[i].cp < 2 && k < max && slot < 16;
             e *= 2)
            if (l[i].d % e == 0 && experts % e == 0) {
                l[k] = l[i];
                l[k].e = e;
                l[k++].order = l[i].order + slot++;
            }
    }
    return k;
}

int plan_layout_by_order(const void *a, const void *b)
{
    const plan_layout_t *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

/* The layouts of l (n) into out (at most max), each fitting one with replicas and without
 * ZeRO followed by the same with gradient buckets of PLAN_BUCKET_MB all-reduced during the
 * last backward pass (the pipeline takes buckets without ZeRO only); they hold the same
 * memory. Returns how many went to out. */
long plan_buckets(const plan_layout_t *l, long n, plan_layout_t *out, long max)
{
    long k = 0;
    for (long i = 0; i < n && k < max; i++) {
        out[k++] = l[i];
        if (l[i].d * l[i].cp > 1 && !l[i].zero && l[i].e < 2 && l[i].fits && k < max) {
            out[k] = l[i];
            out[k++].bucket_mb = PLAN_BUCKET_MB;
        }
    }
    return k;
}
