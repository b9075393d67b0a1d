/* `dtsim run` of a scenario with a [sweep] (cli_sweep.c). */
#ifndef DTSIM_CLI_SWEEP_H
#define DTSIM_CLI_SWEEP_H

#include "scenario.h"

#define CLI_SWEEP_MAX_JOBS 256

/* Runs every run of base's sweep (base loaded and validated by scenario_load, its database
 * path final), each in its own child process, at most jobs (1..CLI_SWEEP_MAX_JOBS) at once,
 * then prints the sweep's summary table. Returns the exit code: 0 every run finished, 1 some
 * did not (each one is named on stderr), 2 bad input (nothing ran). After SIGINT or SIGTERM,
 * forwarded to the children and waited for, the process ends on that signal. The sweep's id
 * goes to id (id_size bytes) unless id is NULL; "" when nothing ran. */
int cli_sweep_run(const scenario_t *base, int jobs, const char *argv0, char *id, size_t id_size);
/* The same for runs made by the caller (runs[0..n), each validated, all with runs[0]'s
 * database): one sweep whose id begins with name, run i its index i. */
int cli_sweep_run_list(const scenario_t *runs, long n, const char *name, int jobs,
                       const char *argv0, char *id, size_t id_size);

#endif
