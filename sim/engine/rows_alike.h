/* Rows alike: the workers, memory and links rows whose figures are all the same, stored once
 * with a weight, their number (run.group_rows; results/schema.sql). A frontier-scale
 * pipeline's 16,384 hosts are a few hundred such rows (tensor groups and replicas simulated
 * as one, symmetric replicas), its tens of thousands of links a dozen. */
#ifndef DTSIM_ROWS_ALIKE_H
#define DTSIM_ROWS_ALIKE_H

#include <stddef.h>

struct sim_run;

/* Whether the run stores rows alike as one (run.group_rows resolved: auto is yes for a run
 * of more than SIM_GROUP_ROWS_HOSTS workers and servers). */
int sim_rows_grouped(const struct sim_run *run);

/* n items, item i's figures fig[i k .. i k + k) and its class cls[i] (NULL: none): a malloc'd
 * weight per item, the number of items alike (the same class, the same figures to the bit)
 * for the first of them in index order, 0 for the others; every weight 1 when !grouped. */
long *sim_rows_alike(const double *fig, int k, const char *const *cls, size_t n, int grouped);

#endif
