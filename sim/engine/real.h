/* Real mode: `mpirun -n P dtsim run SCENARIO --real` runs the same strategy code as real
 * processes, one per host of the scenario, over MPI (transport_mpi.c); the clock is the wall
 * clock and charging compute does nothing (the real gradients took their time already).
 *
 * Every process builds the whole run (platform, nodes, data) but starts only the nodes of
 * its own host. Rank 0 holds the database: at the end every rank sends it what its nodes
 * measured (real.c) and rank 0 writes the run, marked real, like a simulated one.
 *
 * The primitives here are transport_mpi.c's (MPI stays inside engine/); in a build
 * without MPI, sim_real_init says so and nothing else is reached. */
#ifndef DTSIM_REAL_H
#define DTSIM_REAL_H

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
