/* What a run records beyond the engine's counters: the bytes each network link carried
 * (every received message added along its route, routes cached per host pair), the
 * timeline of the start of the run (who computes, who sends, who waits) and the messages
 * delivered within that window (who sent what to whom, when). All are kept in memory during
 * the simulation and written in one transaction at the end.
 *
 * run.timeline = sampled (a timing-only model's default) keeps what a planner reads within
 * about 700 KB a run, where a 128-GPU pipeline wrote 35 MB: the first step (until the
 * later of the first gradient and the mean step time: a pipeline's last stage counts its
 * step before its first stage has ended it), of at most 16
 * hosts of each role list spread over its ranks (the first and last among them) and the
 * messages between them; over the budget, each host's boxes shorter than a resolution are
 * merged into their neighbours (the state holding most of the time names the merged box,
 * the resolution the finest that fits), and every k-th message is kept. */
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
/* A message of sender's (NULL: from src) reached dst: its bytes on the route, and where
 * run->worker_twin has them stand for other workers, member k's share on member k's route
 * (run->twin_share of the bytes each). */
void sim_record_traffic_of(struct sim_run *run, const struct sim_node *sender,
                           const struct sim_node *dst, sim_host_t src, double bytes);
/* node spent [start, end) in state (kept until the first node has computed timeline_steps
 * gradients; clipped there). */
void sim_record_interval(struct sim_run *run, struct sim_node *node, sim_state_t state,
                         double start, double end);

/* dst received a message of bytes from sender (NULL: not recorded), posted at sent, whose
 * transfer dst spent [start, done) on; kept when it ended within the timeline's window. */
void sim_record_message(struct sim_run *run, const struct sim_node *sender,
                        const struct sim_node *dst, double sent, double start, double done,
                        double bytes);

/* The platform's links (0 before sim_record_init), for the live page's link utilisation:
 * link i's name, its bandwidth now (bytes/s) and the bytes it carried so far (received
 * messages on their routes). */
size_t sim_record_link_count(const struct sim_run *run);
const char *sim_record_link_name(const struct sim_run *run, size_t i);
double sim_record_link_bandwidth(const struct sim_run *run, size_t i);
double sim_record_link_bytes(const struct sim_run *run, size_t i);

/* The run stores a sampled timeline (run.timeline resolved to sampled). */
int sim_record_sampled(const struct sim_run *run);

/* Writes the links, timeline and messages rows of the run (inside the caller's transaction);
 * step_s, the run's simulated seconds per step, bounds a sampled timeline's first step. */
dt_status sim_record_store(struct sim_run *run, double step_s, dt_err_t *err);

#endif
