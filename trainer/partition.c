/* Partitioners: iid, dirichlet:ALPHA, shards:K and by-source (see partition.h). All randomness
 * comes from one stream (seed, TRAINER_STREAM_PARTITION), and each client's indices are stored in
 * ascending order, so a partition is a pure function of (data labels, clients, spec, seed) and two
 * partitions compare with memcmp. */
#include "partition.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define PARTITION_FORMS "expected iid, dirichlet:ALPHA, shards:K or by-source"
#define DIRICHLET_ATTEMPTS 100

dt_status trainer_partition_parse(trainer_partition_spec_t *spec, const char *text, dt_err_t *err)
{
    DT_ASSERT(spec && text);
    memset(spec, 0, sizeof *spec);
    if (strcmp(text, "iid") == 0) {
        spec->kind = TRAINER_PARTITION_IID;
        return DT_OK;
    }
    if (strcmp(text, "by-source") == 0) {
        spec->kind = TRAINER_PARTITION_BY_SOURCE;
        return DT_OK;
    }
    if (strncmp(text, "dirichlet:", 10) == 0) {
        const char *num = text + 10;
        char *end = NULL;
        double alpha = 0.0;
        if (*num && !isspace((unsigned char)*num)) /* strtod would skip spaces */
            alpha = strtod(num, &end);
        if (!end || *end || !isfinite(alpha) || !(alpha > 0.0))
            return dt_err_input(err, "bad partition \"%s\": ALPHA must be a finite number > 0 (%s)",
                                text, PARTITION_FORMS);
        spec->kind = TRAINER_PARTITION_DIRICHLET;
        spec->alpha = alpha;
        return DT_OK;
    }
    if (strncmp(text, "shards:", 7) == 0) {
        const char *num = text + 7;
        char *end = NULL;
        long k = isdigit((unsigned char)*num) ? strtol(num, &end, 10) : 0;
        if (!end || *end || k < 1 || k > INT_MAX)
            return dt_err_input(err, "bad partition \"%s\": K must be an integer >= 1 (%s)", text,
                                PARTITION_FORMS);
        spec->kind = TRAINER_PARTITION_SHARDS;
        spec->shards = (int)k;
        return DT_OK;
    }
    return dt_err_input(err, "unknown partition \"%s\" (%s)", text, PARTITION_FORMS);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Sample indices sorted by label, ties by index (a counting sort, so stable); class k
 * occupies sorted[start[k] .. start[k+1]). start has classes + 1 entries. */
static void sort_by_label(const trainer_dataset_t *ds, uint32_t *sorted, size_t *start)
{
    int classes = ds->classes;
    memset(start, 0, (size_t)(classes + 1) * sizeof *start);
    for (size_t i = 0; i < ds->n; i++) {
        DT_ASSERT(ds->y[i] < classes);
        start[ds->y[i] + 1]++;
    }
    for (int k = 0; k < classes; k++)
        start[k + 1] += start[k];
    size_t *next = dt_malloc((size_t)classes * sizeof *next);
    memcpy(next, start, (size_t)classes * sizeof *next);
    for (size_t i = 0; i < ds->n; i++)
        sorted[next[ds->y[i]]++] = (uint32_t)i;
    free(next);
}

/* log of a Gamma(shape, 1) draw. Below shape 1 the boost Gamma(a) = Gamma(a+1) * U^(1/a)
 * underflows to 0 for small a (U^(1/0.01) = U^100), so it is kept in log space. */
static double log_gamma_draw(trainer_rng_t *rng, double shape)
{
    if (shape >= 1.0)
        return log(trainer_rng_gamma(rng, shape));
    double u = 1.0 - trainer_rng_uniform(rng); /* (0, 1] */
    return log(trainer_rng_gamma(rng, shape + 1.0)) + log(u) / shape;
}

/* Fills client_of[j] (j indexes `sorted`) for one Dirichlet draw per class. Returns the
 * number of clients left empty. */
static int dirichlet_draw(trainer_rng_t *rng, const trainer_dataset_t *ds, int clients,
                          double alpha, uint32_t *sorted, const size_t *start, int *client_of,
                          size_t *sizes, double *prop)
{
    memset(sizes, 0, (size_t)clients * sizeof *sizes);
    for (int k = 0; k < ds->classes; k++) {
        size_t m = start[k + 1] - start[k];
        trainer_rng_shuffle_u32(rng, sorted + start[k], m);
        double top = -INFINITY, sum = 0.0;
        for (int c = 0; c < clients; c++) {
            prop[c] = log_gamma_draw(rng, alpha);
            if (prop[c] > top)
                top = prop[c];
        }
        for (int c = 0; c < clients; c++) {
            prop[c] = exp(prop[c] - top);
            sum += prop[c];
        }
        /* Cut the shuffled class at the cumulative proportions (floor), last cut at m. */
        double cum = 0.0;
        size_t from = 0;
        for (int c = 0; c < clients; c++) {
            cum += prop[c];
            size_t to = c == clients - 1 ? m : (size_t)floor(cum / sum * (double)m);
            if (to > m)
                to = m;
            if (to < from)
                to = from;
            for (size_t j = from; j < to; j++)
                client_of[start[k] + j] = c;
            sizes[c] += to - from;
            from = to;
        }
    }
    int empty = 0;
    for (int c = 0; c < clients; c++)
        empty += sizes[c] == 0;
    return empty;
}

/* What any kind asks of the data and the client count, before anything is drawn. */
static dt_status partition_check(const trainer_dataset_t *ds, int clients,
                                 const trainer_partition_spec_t *spec, dt_err_t *err)
{
    size_t n = ds->n;
    if (clients < 1)
        return dt_err_input(err, "partition: need at least 1 client (got %d)", clients);
    if (spec->kind == TRAINER_PARTITION_BY_SOURCE) {
        if (!ds->source)
            return dt_err_input(err, "partition by-source: image data has no sources "
                                     "(expected a text set, data.source = text)");
        if (clients != ds->sources)
            return dt_err_input(err,
                                "partition by-source: one client per source (expected %d "
                                "clients for %d sources, got %d)",
                                ds->sources, ds->sources, clients);
    } else if (ds->tokens && spec->kind != TRAINER_PARTITION_IID) {
        return dt_err_input(err,
                            "partition %s: text windows have no labels (expected iid or "
                            "by-source)",
                            spec->kind == TRAINER_PARTITION_DIRICHLET ? "dirichlet" : "shards");
    }
    if (spec->kind != TRAINER_PARTITION_BY_SOURCE && (size_t)clients > n && !spec->empty_ok)
        return dt_err_input(err,
                            "partition: more clients than samples (expected at most %zu "
                            "clients, got %d)",
                            n, clients);
    if (n > UINT32_MAX)
        return dt_err_input(err, "partition: too many samples (expected at most %lu, got %zu)",
                            (unsigned long)UINT32_MAX, n);
    return DT_OK;
}

/* Each kind below fills idx (n sample indices, client by client) and offsets (clients + 1
 * cuts into idx), or returns an input error leaving them to the caller to free. */

static void part_iid(const trainer_dataset_t *ds, int clients, trainer_rng_t *rng, size_t *offsets,
                     uint32_t *idx)
{
    size_t n = ds->n;
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t)i;
    trainer_rng_shuffle_u32(rng, idx, n);
    for (int c = 0; c <= clients; c++)
        offsets[c] = (size_t)((uint64_t)c * n / (uint64_t)clients);
}

static dt_status part_shards(const trainer_dataset_t *ds, int clients, int shards,
                             trainer_rng_t *rng, size_t *offsets, uint32_t *idx, dt_err_t *err)
{
    DT_ASSERT(shards >= 1);
    size_t n = ds->n;
    uint64_t nshards = (uint64_t)clients * (uint64_t)shards;
    if (nshards > n)
        return dt_err_input(err,
                            "partition shards:%d: %d clients x %d shards need at least "
                            "%llu samples (got %zu)",
                            shards, clients, shards, (unsigned long long)nshards, n);
    uint32_t *sorted = dt_malloc(n * sizeof *sorted);
    size_t *start = dt_malloc(((size_t)ds->classes + 1) * sizeof *start);
    sort_by_label(ds, sorted, start);
    /* Shard s is sorted[s*n/S .. (s+1)*n/S): sizes differ by at most one. */
    uint32_t *shard = dt_malloc((size_t)nshards * sizeof *shard);
    for (uint64_t s = 0; s < nshards; s++)
        shard[s] = (uint32_t)s;
    trainer_rng_shuffle_u32(rng, shard, (size_t)nshards);
    size_t out = 0;
    for (int c = 0; c < clients; c++) {
        offsets[c] = out;
        for (int j = 0; j < shards; j++) {
            uint64_t s = shard[(uint64_t)c * (uint64_t)shards + (uint64_t)j];
            size_t lo = (size_t)(s * n / nshards), hi = (size_t)((s + 1) * n / nshards);
            memcpy(idx + out, sorted + lo, (hi - lo) * sizeof *idx);
            out += hi - lo;
        }
    }
    offsets[clients] = out;
    DT_ASSERT(out == n);
    free(shard);
    free(start);
    free(sorted);
    return DT_OK;
}

static dt_status part_dirichlet(const trainer_dataset_t *ds, int clients,
                                const trainer_partition_spec_t *spec, trainer_rng_t *rng,
                                size_t *offsets, uint32_t *idx, dt_err_t *err)
{
    DT_ASSERT(spec->alpha > 0.0 && isfinite(spec->alpha));
    size_t n = ds->n;
    uint32_t *sorted = dt_malloc(n * sizeof *sorted);
    size_t *start = dt_malloc(((size_t)ds->classes + 1) * sizeof *start);
    int *client_of = dt_malloc(n * sizeof *client_of); // (n) aligned with sorted
    size_t *sizes = dt_malloc((size_t)clients * sizeof *sizes);
    double *prop = dt_malloc((size_t)clients * sizeof *prop);
    sort_by_label(ds, sorted, start);
    int empty = 0;
    /* more clients than samples leave some empty whatever the draw: one draw */
    int attempts = (size_t)clients > n ? 1 : DIRICHLET_ATTEMPTS;
    for (int attempt = 0; attempt < attempts; attempt++) {
        empty =
            dirichlet_draw(rng, ds, clients, spec->alpha, sorted, start, client_of, sizes, prop);
        if (empty == 0)
            break;
    }
    if (spec->empty_ok)
        empty = 0;
    if (empty == 0) {
        for (int c = 0; c < clients; c++)
            offsets[c + 1] = offsets[c] + sizes[c];
        memset(sizes, 0, (size_t)clients * sizeof *sizes); /* reused as fill cursors */
        for (size_t j = 0; j < n; j++) {
            int c = client_of[j];
            idx[offsets[c] + sizes[c]++] = sorted[j];
        }
    }
    free(prop);
    free(sizes);
    free(client_of);
    free(start);
    free(sorted);
    if (empty != 0)
        return dt_err_input(err,
                            "partition dirichlet:%g: a client got no sample in %d draws "
                            "(%d clients, %zu samples; expected a larger ALPHA or fewer "
                            "clients)",
                            spec->alpha, DIRICHLET_ATTEMPTS, clients, n);
    return DT_OK;
}

static dt_status part_by_source(const trainer_dataset_t *ds, int clients, int empty_ok,
                                size_t *offsets, uint32_t *idx, dt_err_t *err)
{
    /* windows are grouped by source in source order (data.h): a counting pass */
    size_t n = ds->n;
    for (size_t i = 0; i < n; i++) {
        DT_ASSERT(ds->source[i] < (uint32_t)clients);
        offsets[ds->source[i] + 1]++;
        idx[i] = (uint32_t)i;
    }
    for (int c = 0; c < clients; c++)
        offsets[c + 1] += offsets[c];
    for (size_t i = 0; i + 1 < n; i++)
        DT_ASSERT(ds->source[i] <= ds->source[i + 1]);
    for (int c = 0; c < clients && !empty_ok; c++) {
        if (offsets[c + 1] == offsets[c]) {
            const char *name = ds->source_names ? ds->source_names[c] : "?";
            size_t bytes = ds->source_bytes ? ds->source_bytes[c] : 0;
            return dt_err_input(err,
                                "partition by-source: source \"%s\" has no window (%zu "
                                "bytes, windows of %d + 1; expected a shorter model.seq "
                                "or more text in it)",
                                name, bytes, ds->seq);
        }
    }
    return DT_OK;
}

dt_status trainer_partition_make(trainer_partition_t *p, const trainer_dataset_t *ds, int clients,
                                 const trainer_partition_spec_t *spec, uint64_t seed, dt_err_t *err)
{
    DT_ASSERT(p && ds && spec);
    memset(p, 0, sizeof *p);
    dt_status st = partition_check(ds, clients, spec, err);
    if (st != DT_OK)
        return st;
    size_t n = ds->n;
    trainer_rng_t rng;
    trainer_rng_seed(&rng, seed, TRAINER_STREAM_PARTITION);
    size_t *offsets = dt_calloc((size_t)clients + 1, sizeof *offsets); // (clients + 1)
    uint32_t *idx = dt_malloc(n * sizeof *idx);                        // (n)
    switch (spec->kind) {
    case TRAINER_PARTITION_IID:
        part_iid(ds, clients, &rng, offsets, idx);
        break;
    case TRAINER_PARTITION_SHARDS:
        st = part_shards(ds, clients, spec->shards, &rng, offsets, idx, err);
        break;
    case TRAINER_PARTITION_DIRICHLET:
        st = part_dirichlet(ds, clients, spec, &rng, offsets, idx, err);
        break;
    case TRAINER_PARTITION_BY_SOURCE:
        st = part_by_source(ds, clients, spec->empty_ok, offsets, idx, err);
        break;
    default:
        DT_ASSERT(!"unknown partition kind");
    }
    if (st != DT_OK) {
        free(offsets);
        free(idx);
        return st;
    }
    for (int c = 0; c < clients; c++)
        qsort(idx + offsets[c], offsets[c + 1] - offsets[c], sizeof *idx, cmp_u32);
    p->clients = clients;
    p->offsets = offsets;
    p->idx = idx;
    return DT_OK;
}

void trainer_partition_histogram(const trainer_partition_t *p, const trainer_dataset_t *ds,
                                 int client, size_t *counts)
{
    DT_ASSERT(p && ds && counts && client >= 0 && client < p->clients);
    memset(counts, 0, (size_t)ds->classes * sizeof *counts);
    for (size_t j = p->offsets[client]; j < p->offsets[client + 1]; j++) {
        uint32_t i = p->idx[j];
        DT_ASSERT(i < ds->n);
        counts[ds->y[i]]++;
    }
}

void trainer_partition_free(trainer_partition_t *p)
{
    if (!p)
        return;
    free(p->offsets);
    free(p->idx);
    memset(p, 0, sizeof *p);
}
