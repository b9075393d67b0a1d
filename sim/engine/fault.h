/* Faults during a run: what the [faults] section describes, made to happen in SimGrid, and
 * the helpers strategies use to react the way real systems do.
 *
 * - Host crashes (explicit, or drawn from faults.mtbf / mttr per worker host) turn the
 *   host off: SimGrid kills the actors on it, and every transfer with them fails or
 *   times out for their peers. At recovery the host is turned back on and the nodes that
 *   lived on it are started again (node->incarnation > 0): each strategy's node code
 *   rejoins in its own way. A node's buffers are kept in sim_node_t, off the killed
 *   actor's stack; what a crashed process would lose (a server's parameters, a single
 *   worker's model) is restored by the strategy from a checkpoint or the initial weights.
 * - Link faults change the bandwidth of links at run time: down (1 B/s: traffic stalls,
 *   as a TCP flow on a dead link does, and peers notice by timeout), degraded (the given
 *   bandwidth), then back to the platform's value.
 * - Stragglers: compute takes longer on slow hosts (fixed factors, a per-host factor
 *   drawn from faults.slowdown, and intervals), integrated exactly over the intervals.
 *
 * The faults are played by one injector actor, which moves to a live host before it turns
 * its own host off, and is killed when the run ends so the clock stops there. Every
 * fault and every reaction is a row of the run's faults table. */
#ifndef DTSIM_FAULT_H
#define DTSIM_FAULT_H

#include "fault_spec.h"

struct sim_run;
struct sim_node;

/* Resolves the scenario's fault targets against the loaded platform, draws the per-host
 * slowdowns and random crash times (faults stream of the seed), and builds the event
 * list. A target the platform lacks is DT_ERR_INPUT naming the scenario line and key. */
dt_status sim_faults_init(struct sim_run *run, dt_err_t *err);
/* Starts the injector (when there are host or link events). Before simgrid_run. */
void sim_faults_start(struct sim_run *run);
/* Frees run->faults and run->init_params (either may be absent); sim_run_free calls it. */
void sim_faults_free(struct sim_run *run);

/* How long a node waits for a peer: faults.timeout when the scenario has faults, else
 * long enough never to cut a healthy run short. */
double sim_fault_timeout(const struct sim_run *run);

/* One row of the faults table at the current simulated time (kind: host-crash,
 * host-recover, link-down, link-up, link-degrade, link-restore, timeout, rejoin, reform,
 * restore, lost-push, late, dropout, deadline, ...). */
void sim_fault_log(struct sim_run *run, const char *kind, const char *target, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Simulated seconds that `seconds` of compute at full speed take on node's host from
 * time t0, with its slowdowns (and node->slow) applied. */
double sim_fault_compute_time(struct sim_run *run, struct sim_node *node, double t0,
                              double seconds);
/* 1 when a stragglers or slowdown makes compute time differ from full speed anywhere. */
int sim_fault_slows(const struct sim_run *run);

/* The node will come back: it is down now and a recovery of its host is scheduled (or
 * may still be drawn, with mttr > 0). */
int sim_fault_will_return(const struct sim_run *run, const struct sim_node *node);
/* Some worker (client host for fedavg) is up, or will come back. */
int sim_fault_workers_left(const struct sim_run *run);

/* Called when a node's code returns: ends the run when no node runs or will come back. */
void sim_fault_node_finished(struct sim_run *run);

/* A link change asked while the run runs (dtsim serve's page, faults.live_links): the links
 * target names (as a link_degrade LINK does) carry value bytes/s from now on (latency: take
 * value seconds of latency); a link-degrade row of the faults table gives the link_degrade
 * item that replays it (text: the value as written).
 * DT_ERR_INPUT, the run unchanged, when no link matches. */
dt_status sim_fault_link_now(struct sim_run *run, const char *target, double value, int latency,
                             const char *text, dt_err_t *err);

/* Host changes asked while the run runs (faults.live_hosts). A crash of target's host now,
 * back after secs (INFINITY: never), played by an actor on another host; its host-crash row
 * names the crash item that replays it. A straggler: target's host computes factor times
 * slower from its next compute on, for secs (INFINITY: to the end); its straggler row names
 * the straggler item (which also slows a compute under way at that moment). DT_ERR_INPUT,
 * the run unchanged, when the scenario does not take host changes or no host matches. */
dt_status sim_fault_crash_now(struct sim_run *run, const char *target, double secs, dt_err_t *err);
dt_status sim_fault_straggler_now(struct sim_run *run, const char *target, double factor,
                                  double secs, dt_err_t *err);

/* Stops the fault injector (the run has ended; not from the injector itself). */
void sim_faults_stop(struct sim_run *run);

#endif
