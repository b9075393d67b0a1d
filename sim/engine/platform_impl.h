/* What platform.c and platform_topo.c (the torus, dragonfly and rail platforms) share. */
#ifndef DTSIM_PLATFORM_IMPL_H
#define DTSIM_PLATFORM_IMPL_H

#include <stdio.h>

#include "platform.h"

/* wattage_per_state of the fault injector's host, which draws nothing */
#define CONTROL_POWER "<prop id=\"wattage_per_state\" value=\"0:0\"/>"

/* The torus's, dragonfly's or rail platform's part of a plan: its shape and the hosts it
 * holds; DT_ERR_INPUT where the scenario's shape cannot hold the run's hosts. */
dt_status sim_platform_plan_topology(sim_platform_plan_t *p, const scenario_t *sc, dt_err_t *err);
/* Writes the torus or dragonfly <cluster> of a plan. */
void sim_platform_write_topology(const sim_platform_plan_t *p, FILE *out);
/* Writes the rail platform's zone of a plan, with the fault injector's host when faults. */
void sim_platform_write_rail(const sim_platform_plan_t *p, FILE *out);
/* Physical links of a torus, dragonfly or rail platform of hosts (see platform_links). */
long sim_platform_topology_links(const scenario_t *sc, int hosts);

#endif
