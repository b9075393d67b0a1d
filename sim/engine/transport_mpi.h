/* Real mode's MPI primitives (transport_mpi.c): MPI stays inside engine/. In a build without
 * MPI, sim_real_init says so and the rest answers as one process would (rank 0 of 1). Real
 * mode itself, its set-up and what rank 0 collects, is real.h's. */
#ifndef DTSIM_TRANSPORT_MPI_H
#define DTSIM_TRANSPORT_MPI_H

#include <stddef.h>

#include "common.h"
#include "transport.h"

/** 1 when this dtsim was built with MPI. */
int sim_real_built(void);
/** "Open MPI 4.1.4" (or "none"). */
void sim_real_library(char *buf, size_t n);
/** Starts MPI and makes it the transport (once per process, before sim_run_init). */
dt_status sim_real_init(int *argc, char ***argv, dt_err_t *err);
/** This process's rank and the number of processes (0 and 1 outside real mode). */
int sim_real_rank(void);
int sim_real_size(void);
/** Rank i runs the nodes of hosts[i] (i < sim_real_size()). */
void sim_real_bind(const sim_host_t *hosts, int n);
/** Whether this process runs the nodes of host (always 1 outside real mode). */
int sim_real_local(sim_host_t host);
/** Every rank's blob to rank 0: returns there a malloc'd array of the ranks' blobs (each
 * malloc'd, lens[r] its size; blobs[0] a copy of mine), NULL elsewhere. Collective. */
void **sim_real_gather(const void *mine, size_t n, size_t *lens);
/** Rank 0's value of *v on every rank. Collective. */
void sim_real_bcast_long(long *v);
/** The smallest / largest of every rank's value. Collective. */
long sim_real_min_long(long v);
/** Ends MPI (after the last collective). */
void sim_real_finalize(void);

#endif
