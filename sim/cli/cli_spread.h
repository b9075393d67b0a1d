/* `mpirun -n P dtsim run SWEEP.ini --mpi` (cli_spread.c), which `dtsim run` hands over to. */
#ifndef DTSIM_CLI_SPREAD_H
#define DTSIM_CLI_SPREAD_H

#include "scenario.h"

/** The sweep's members spread over the P processes, rank 0 merging them into sc->db; every
 * process returns the worst exit code. */
int cli_sweep_spread(const scenario_t *sc, const char *path, const char *const *sets, int n_sets,
                     int jobs, const char *argv0);

#endif
