/* `dtsim run --live`: a terminal view of a run while it runs, redrawn in place on stderr.
 * One header (run, strategy, simulated time, steps, accuracy and loss, bytes), one row per
 * node (host, role, steps, compute / communication / idle shares of the simulated time so
 * far, as figures and a bar) and the accuracy of every evaluation so far as a sparkline.
 * The engine calls sim_live_tick after each counted step and evaluation (it redraws at most
 * every SIM_LIVE_FRAME_S of wall time) and sim_live_end once the simulation is over (the
 * final frame, drawn whatever the time, stays on screen above the summary).
 *
 * With a pace (simulated seconds per wall second) a tick sleeps until the wall clock has
 * caught up with the simulated clock, so a classroom can watch a run that would otherwise
 * end in a second; the sleep is not counted as a stall (run.stall_after).
 *
 * Published (dtsim run --publish), the same state is written as JSON to a small file beside
 * the database, PATH.live-RUN.json (replaced by a rename, at most every SIM_LIVE_PUBLISH_S of
 * wall time), for dtsim serve's page: per node what it did since the last write (compute,
 * comm, idle, down), per link its utilisation over that interval, messages in flight. The
 * page asks for a change by creating PATH.live-RUN.cmd ("link TARGET BANDWIDTH", "latency
 * TARGET LATENCY", "crash TARGET [for D]", "straggler TARGET xF [for D]"); the run reads and
 * removes it at its next write and applies it when the scenario takes it (faults.live_links:
 * sim_fault_link_now; faults.live_hosts: sim_fault_crash_now, sim_fault_straggler_now). Both
 * files are removed when the run ends. */
#ifndef DTSIM_LIVE_H
#define DTSIM_LIVE_H

struct sim_run;

/* Wall seconds between two frames. */
#define SIM_LIVE_FRAME_S 0.2

/* Wall seconds between two writes of the published state. */
#define SIM_LIVE_PUBLISH_S 0.25

/* Starts the view of run: on stderr when term (a terminal: the caller checks), published to
 * base.json when base is not NULL (base: the database's path, ".live-" and the run's id);
 * pace 0: as fast as the simulation goes. */
void sim_live_start(struct sim_run *run, double pace, int term, const char *base);
/* A step or an evaluation happened: redraw when a frame is due, sleep to keep the pace. */
void sim_live_tick(struct sim_run *run);
/* The accuracy of an evaluation, for the sparkline. */
void sim_live_eval(struct sim_run *run, double accuracy);
/* The simulation is over: the final frame, then the view is freed. */
void sim_live_end(struct sim_run *run);

#endif
