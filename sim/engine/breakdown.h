/* The breakdown of a simulated step into its parts (results_part_t: compute, recompute,
 * optimizer, exposed tensor / context / expert / pipeline / data communication, the
 * pipeline's bubble, waiting), the breakdown table of results/schema.sql.
 *
 * Every interval a node's own activity spends computing, communicating or waiting (those the
 * timeline records: sim_record_interval) goes to one part, chosen by what its strategy said
 * the node does now: its communication and waits go to the part sim_breakdown_comm set last
 * (data unless told; a wait while it is pipeline is the bubble, any other wait is wait), its
 * compute to the part sim_breakdown_work set (compute unless told). Intervals another activity
 * records for the node (a gradient bucket's stream, which runs behind its compute) are not
 * its own time and are left out; the time it then waits for them is recorded by whoever
 * waits. What no interval covers until the run's end is wait. So a node's parts sum to the
 * run's simulated time by construction, and the run's, a mean over its trainers divided by
 * its steps, to its step. */
#ifndef DTSIM_BREAKDOWN_H
#define DTSIM_BREAKDOWN_H

#include "db.h"
#include "record.h"

struct sim_run;
struct sim_node;

/* node's communication and waits go to part `comm` (a results_part_t) from now on; returns
 * the part they went to, to be set back. */
int sim_breakdown_comm(struct sim_node *node, int comm);
/* node's compute goes to part `work` from now on; returns the part it went to. */
int sim_breakdown_work(struct sim_node *node, int work);
/* node spent [start, end) in state: counted in its current part when its own activity is
 * the caller (sim_record_interval calls it for every interval). */
void sim_breakdown_interval(struct sim_node *node, sim_state_t state, double start, double end);
/* node's own activity: its intervals count from now (sim_actor_main, at each start). */
void sim_breakdown_start(struct sim_node *node);
/* The run's step, broken down: out[k] the mean over its workers of their seconds in part k
 * until end, divided by steps; recompute, model.recompute's share of the compute FLOPs of a
 * timing-only model's step. The parts sum to end / steps. */
void sim_breakdown_of(const struct sim_run *run, double end, long steps,
                      double out[RESULTS_PART_COUNT]);

#endif
