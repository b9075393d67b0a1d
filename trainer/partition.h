/* Splitting a data set across workers or federated clients, deterministically from a seed.
 *   iid          shuffle, then equal contiguous slices (sizes differ by at most one);
 *   dirichlet:A  per class, proportions over clients drawn from Dirichlet(A); small A gives
 *                strong label skew (Hsu et al. 2019);
 *   shards:K     sort by label, cut into clients*K equal shards, give each client K random
 *                shards (McMahan et al. 2017);
 *   by-source    text sets: client c holds exactly the windows of source c (a topic or a
 *                language file), a natural non-IID split as LEAF's Shakespeare gives a
 *                client per speaking role (Caldas et al. 2018). */
#ifndef DTSIM_PARTITION_H
#define DTSIM_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "data.h"

typedef enum trainer_partition_kind {
    TRAINER_PARTITION_IID,
    TRAINER_PARTITION_DIRICHLET,
    TRAINER_PARTITION_SHARDS,
    TRAINER_PARTITION_BY_SOURCE,
} trainer_partition_kind_t;

typedef struct trainer_partition_spec {
    trainer_partition_kind_t kind;
    double alpha; /* dirichlet concentration, > 0 */
    int shards;   /* shards per client, >= 1 */
    int empty_ok; /* a federated population: clients may hold no sample (set by the caller,
                     not parsed) */
} trainer_partition_spec_t;

typedef struct trainer_partition {
    int clients;
    size_t *offsets; /* (clients + 1): client c owns idx[offsets[c] .. offsets[c+1]) */
    uint32_t *idx;   /* (n) sample indices grouped by client */
} trainer_partition_t;

/* Parses "iid", "dirichlet:0.5", "shards:2" or "by-source". Returns DT_ERR_INPUT with a message
 * that names the accepted forms. */
dt_status trainer_partition_parse(trainer_partition_spec_t *spec, const char *text, dt_err_t *err);

/* Splits ds across `clients` clients. Errors (DT_ERR_INPUT): clients < 1 or more clients
 * than samples; shards: clients*K > n; dirichlet: a client left with no sample after
 * 100 redraws; dirichlet and shards on a text set (no labels); by-source on a set without
 * sources (image data), with clients != ds->sources, or (without empty_ok) with a source
 * that has no window. With spec->empty_ok more clients than samples is no error (iid then gives
 * each client one sample or none) and dirichlet keeps its last draw with the clients it left
 * empty (its only draw when clients > n, where no redraw could fill them all). */
dt_status trainer_partition_make(trainer_partition_t *p, const trainer_dataset_t *ds, int clients,
                                 const trainer_partition_spec_t *spec, uint64_t seed,
                                 dt_err_t *err);

static inline size_t trainer_partition_size(const trainer_partition_t *p, int client)
{
    return p->offsets[client + 1] - p->offsets[client];
}

/* counts[k] = samples of class k held by the client; counts has ds->classes entries. */
void trainer_partition_histogram(const trainer_partition_t *p, const trainer_dataset_t *ds,
                                 int client, size_t *counts);

void trainer_partition_free(trainer_partition_t *p);

#endif
