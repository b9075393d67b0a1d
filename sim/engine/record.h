/* What a run records beyond the engine's counters: the bytes each network link carried
 * (every received message added along its route, routes cached per host pair), the
 * timeline of the start of the run (who computes, who sends, who waits) and the messages
 * delivered within that window (who sent what to whom, when). All are kept in memory during
 * the simulation and written in one transaction at the end. */
#ifndef DTSIM_RECORD_H
#define DTSIM_RECORD_H


#include "common.h"
#include "transport.h"

struct sim_run;
struct sim_node;

typedef enum sim_state { SIM_STATE_COMPUTE, SIM_STATE_COMM, SIM_STATE_IDLE } sim_state_t;

/* Sets up run->record over the loaded platform's links (after sim_platform_load). */
void sim_record_init(struct sim_run *run);
/* Frees run->record (none is fine) and sets it to NULL. */
void sim_record_free(struct sim_run *run);

/* bytes went from src to dst: added to every link of the route. */
void sim_record_traffic(struct sim_run *run, sim_host_t src, sim_host_t dst, double bytes);
/* node spent [start, end) in state (kept until the first node has computed timeline_steps
 * gradients; clipped there). */
void sim_record_interval(struct sim_run *run, struct sim_node *node, sim_state_t state,
                         double start, double end);

/* dst received a message of bytes from sender (NULL: not recorded), posted at sent, whose
 * transfer dst spent [start, done) on; kept when it ended within the timeline's window. */
void sim_record_message(struct sim_run *run, const struct sim_node *sender,
                        const struct sim_node *dst, double sent, double start, double done,
                        double bytes);

/* Writes the links, timeline and messages rows of the run (inside the caller's transaction). */
dt_status sim_record_store(struct sim_run *run, dt_err_t *err);

#endif
