/* What platform.c and platform_topo.c (the torus, dragonfly and rail platforms) share. */
#ifndef DTSIM_PLATFORM_IMPL_H
#define DTSIM_PLATFORM_IMPL_H

#include <stdio.h>

#include "platform.h"

/* wattage_per_state of the fault injector's host, which draws nothing */
#define CONTROL_POWER "<prop id=\"wattage_per_state\" value=\"0:0\"/>"

/* Writes the torus or dragonfly <cluster> for hosts (power: each host's power property);
 * DT_ERR_INPUT where the scenario's shape cannot hold them. */
dt_status sim_platform_write_topology(const scenario_t *sc, FILE *out, int hosts,
                                      const char *power, dt_err_t *err);
/* Writes the rail platform's zone for hosts, with the fault injector's host when faults. */
void sim_platform_write_rail(const scenario_t *sc, FILE *out, int hosts, const char *power);
/* Physical links of a torus, dragonfly or rail platform of hosts (see platform_links). */
long sim_platform_topology_links(const scenario_t *sc, int hosts);

#endif
