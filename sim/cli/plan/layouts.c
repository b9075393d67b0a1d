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

/* The variants of one shape (its t, p, d, cp, mbs and m set) appended to out (n rows, room
 * for max), in the order printed: virtual stages (1 first: 1F1B), sequence parallelism (off
 * first), recomputation (none, selective, full) and ZeRO (0, then 1 with replicas). Returns
 * the rows there are then. */
static long enumerate_variants(plan_layout_t shape, long pieces, int attention, plan_layout_t *out,
                               long n, long max)
{
    for (long virt = 1; virt <= PLAN_MAX_VIRTUAL; virt *= 2) {
        /* the schedule's own rules (strategy/pipeline/check.c): 2 or more stages,
         * micro-batches S at a time, a piece of the profile for every chunk */
        if (virt > 1 && (shape.p < 2 || shape.m % shape.p || shape.p * virt > pieces))
            continue;
        for (int sp = 0; sp <= (shape.t > 1); sp++)
            for (int rc = SIM_RECOMPUTE_NONE; rc <= SIM_RECOMPUTE_FULL; rc++) {
                if (rc == SIM_RECOMPUTE_SELECTIVE && !attention)
                    continue;
                for (int zero = 0; zero <= (shape.d * shape.cp > 1); zero++) {
                    if (n == max)
                        return n;
                    out[n] = shape;
                    out[n].v = virt;
                    out[n].sp = sp;
                    out[n].rc = (sim_recompute_t)rc;
                    out[n].zero = zero;
                    out[n].order = 16 * n;
                    n++;
                }
            }
    }
    return n;
}

/* Every layout of opts's devices and batch, in the order printed: tensor, then stages, from
 * small to large, then context groups, micro-batch size, then each shape's variants
 * (enumerate_variants; plan_zero_more adds ZeRO 2 and 3). Tensor 1, 2, 4, 8 and stages 1 to
 * 64, or those of --tensor and --stages. Stages need not divide the layers: the pipeline
 * cuts them where the largest stage is smallest (Llama 3 405B ran 126 layers in 16 stages).
 * Selective only with attention cores, sequence parallelism only with tensor > 1, where it
 * changes something; Megatron-LM turns it on with every tensor split, but off it is what a
 * layout without it costs, so both run. Returns how many went to out. */
long plan_enumerate(const plan_opts_t *opts, long blocks, long pieces, int splits, int attention,
                    long seq, plan_layout_t *out, long max)
{
    static const long all_tensors[] = {1, 2, 4, 8}, sizes[] = {1, 2, 4};
    const long *tensors = opts->n_tensor ? opts->tensor : all_tensors;
    int n_tensors = opts->n_tensor ? opts->n_tensor : 4;
    int n_stages = opts->n_stages ? opts->n_stages : 64;
    long most_context = seq >= PLAN_LONG_SEQUENCE ? PLAN_MAX_CONTEXT : 1;
    long devices = opts->devices, n = 0;
    for (int ti = 0; ti < n_tensors; ti++) {
        long tensor = tensors[ti];
        if (tensor > opts->per_server || devices % tensor ||
            (opts->heads && opts->heads % tensor) || (tensor > 1 && !splits))
            continue;
        for (int si = 0; si < n_stages; si++)
            for (long context = 1; context <= most_context; context *= 2) {
                long stages = opts->n_stages ? opts->stages[si] : si + 1;
                if (stages > blocks || (devices / tensor) % stages ||
                    (devices / tensor / stages) % context || seq % (2 * context))
                    continue;
                long replicas = devices / (tensor * stages * context);
                if (opts->global_batch % replicas)
                    continue;
                long batch = opts->global_batch / replicas; /* a replica's */
                for (size_t mi = 0; mi < sizeof sizes / sizeof *sizes; mi++) {
                    long mbs = sizes[mi], micro_batches = batch / mbs;
                    if (batch % mbs || micro_batches > 4096)
                        continue;
                    plan_layout_t shape = {.t = tensor,
                                           .p = stages,
                                           .d = replicas,
                                           .cp = context,
                                           .mbs = mbs,
                                           .m = micro_batches};
                    n = enumerate_variants(shape, pieces, attention, out, n, max);
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

/* What a layout adds to tT pP dD mbSxC zZ, each word after sep: "rs", "b25", "sp", "v2",
 * the recomputation. */
void plan_layout_more(const plan_layout_t *layout, char sep, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    if (layout->rs)
        len += (size_t)snprintf(buf + len, n - len, "%crs", sep);
    if (layout->bucket_mb && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%cb%d", sep, layout->bucket_mb);
    if (layout->cp > 1 && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%ccp%ld", sep, layout->cp);
    if (layout->sp && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%csp", sep);
    if (layout->v > 1 && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%cv%ld", sep, layout->v);
    if (layout->e > 1 && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%ce%ld", sep, layout->e);
    if (layout->rc && len < n)
        snprintf(buf + len, n - len, "%c%s", sep, plan_recompute_name(layout->rc));
}

void plan_layout_name(const plan_layout_t *layout, char *buf, size_t n)
{
    char more[40]; /* " rs cp16 sp v8 selective", " b25 cp16 sp v8 e4096 selective" at most */
    plan_layout_more(layout, ' ', more, sizeof more);
    snprintf(buf, n, "t%ld p%ld d%ld mb%ldx%ld z%d%s", layout->t, layout->p, layout->d, layout->mbs,
             layout->m, layout->zero, more);
}

/* A MoE profile's expert parallelism (strategy/pipeline/experts.c: expert groups of E
 * replicas, E dividing the replicas and the routed experts, no ZeRO): appends to layouts (n
 * rows, not yet fitted; room for max) a row of each E = 2, 4, ... for each row with
 * replicas and without ZeRO, right after it, and returns the rows there are then. */
long plan_expert_more(plan_layout_t *layouts, long n, int experts, long max)
{
    long rows = n;
    for (long i = 0; i < n; i++) {
        const plan_layout_t *layout = &layouts[i];
        long slot = 1; /* orders are 16 apart (plan_enumerate) */
        for (long group = 2;
             group <= layout->d && layout->zero == 0 && layout->cp < 2 && rows < max && slot < 16;
             group *= 2)
            if (layout->d % group == 0 && experts % group == 0) {
                layouts[rows] = *layout;
                layouts[rows].e = group;
                layouts[rows++].order = layout->order + slot++;
            }
    }
    return rows;
}

int plan_layout_by_order(const void *a, const void *b)
{
    const plan_layout_t *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

/* The layouts (n) into out (at most max), each fitting one with replicas and without ZeRO
 * followed by the same with gradient buckets of PLAN_BUCKET_MB all-reduced during the last
 * backward pass (the pipeline takes buckets without ZeRO only); they hold the same memory.
 * Returns how many went to out. */
long plan_buckets(const plan_layout_t *layouts, long n, plan_layout_t *out, long max)
{
    long rows = 0;
    for (long i = 0; i < n && rows < max; i++) {
        const plan_layout_t *layout = &layouts[i];
        out[rows++] = *layout;
        if (layout->d * layout->cp > 1 && !layout->zero && layout->e < 2 && layout->fits &&
            rows < max) {
            out[rows] = *layout;
            out[rows++].bucket_mb = PLAN_BUCKET_MB;
        }
    }
    return rows;
}
