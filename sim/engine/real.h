/* Real mode: `mpirun -n P dtsim run SCENARIO --real` runs the same strategy code as real
 * processes, one per host of the scenario, over MPI (transport_mpi.c); the clock is the wall
 * clock and charging compute does nothing (the real gradients took their time already).
 *
 * Every process builds the whole run (platform, nodes, data) but starts only the nodes of
 * its own host. Rank 0 holds the database: at the end every rank sends it what its nodes
 * measured (real.c) and rank 0 writes the run, marked real, like a simulated one.
 *
 * These are real.c's, the run's side of real mode; the MPI primitives they stand on are
 * transport_mpi.h's. */
#ifndef DTSIM_REAL_H
#define DTSIM_REAL_H

#include "run.h"

/* sim_real_setup refuses what cannot run real (one line naming the key, or the process count
 * against the hosts) and binds this process to its host; the evaluations and counters each
 * process keeps go to rank 0 in sim_real_collect, after the nodes are done, and rank 0
 * records them as one run. */
dt_status sim_real_setup(sim_run_t *run, dt_err_t *err);
/* What real mode cannot run (a strategy that does not run real, a model profile, the cuda
 * backend, faults it cannot play, bucket_mb ...), said in one line with the key that asks
 * for it: the check stage `dtsim check --real` and sim_real_setup share. */
dt_status sim_real_check(const scenario_t *sc, dt_err_t *err);
void sim_real_free(sim_run_t *run);
void sim_real_eval(sim_run_t *run, double t, long step, double loss, double acc);
void sim_real_mark(sim_run_t *run);
void sim_real_collect(sim_run_t *run);
/* Real mode's faults: on the testbed, rank 0 reshapes host links (faults.link_degrade). */
void sim_real_faults_start(sim_run_t *run);
/* The latest process's end (rank 0, after sim_real_collect; 0 before). */
double sim_real_end(const sim_run_t *run);

#endif
