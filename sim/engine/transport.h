/* The transport: how nodes exchange messages, keep time and compute, whatever runs them.
 * Strategies, collectives and the engine's message layer (run.h) speak only to this and
 * to the trainer. It has two implementations (transport_impl.h): SimGrid (transport_simgrid.c:
 * simulated time, the default) and real processes over MPI (transport_mpi.c, real mode:
 * one process per host, a box reached through its owner's host's rank, the clock the wall
 * clock, compute charging nothing; sim_real_init switches to it).
 *
 * Every wait that can fail has a timeout and returns a status, never aborts: a dead peer is
 * data (SIM_ERR_TIMEOUT, SIM_ERR_NETWORK). A posted communication is consumed by its wait,
 * whatever the status: never wait on it twice. A payload is a pointer the receiver reads in
 * place (the sender keeps it: run.h says who owns what); `bytes` is its size on the wire. */
#ifndef DTSIM_TRANSPORT_H
#define DTSIM_TRANSPORT_H

#include <stddef.h>

typedef enum sim_status {
    SIM_OK = 0,
    SIM_ERR_TIMEOUT, /* nothing came (or went) within the timeout */
    SIM_ERR_NETWORK, /* the peer or a link on the way failed */
    SIM_ERR_OTHER,   /* canceled, or a host failure seen by the communication */
} sim_status_t;

typedef struct sim_box *sim_box_t;   /* where one node's messages of one channel arrive */
typedef struct sim_comm *sim_comm_t; /* a posted send or receive */
typedef struct sim_host *sim_host_t; /* a machine nodes run on */
typedef struct sim_sem *sim_sem_t;   /* a counting semaphore between a node's activities */

/** Starts the transport (argv0 for its messages); once per process, before a platform. */
void sim_transport_init(const char *argv0);
/** Runs every started activity until all are done. */
void sim_transport_run(void);
/** Ends the simulation at once: every activity ends at its next call into the transport
 * and sim_transport_run returns (async-signal-safe: a SIGINT / SIGTERM handler calls it).
 * Nothing on real processes, which stop at their next step. */
void sim_transport_halt(void);
/** "3.32.0": the transport's own version, for the runs table. */
void sim_transport_version(char *buf, size_t n);

/** 1 in real mode: the nodes run as real processes over MPI (real.h, transport_mpi.h). */
int sim_transport_is_real(void);
/** Says on which host the node `owner` (the first half of its boxes' names) runs: real
 * mode sends its messages to that host's process. Nothing on SimGrid. */
void sim_transport_place(const char *owner, sim_host_t host);

/* How real mode puts a payload on the wire (the engine's message headers, run.h): its size
 * in bytes, its bytes written into buf, and the payload read back in place from a received
 * buf (the payload points into buf, which the transport keeps as long as the receiver may
 * read it: see transport_mpi.c). */
typedef struct sim_payload_codec {
    size_t (*size)(const void *payload);
    void (*pack)(const void *payload, void *buf);
    void *(*unpack)(void *buf, size_t n);
} sim_payload_codec_t;
/** Sets the codec real mode uses (the engine's, before a run). */
void sim_transport_set_codec(const sim_payload_codec_t *codec);

/** The clock: simulated seconds since the start (wall seconds on real processes). */
double sim_now(void);
/** Lets `seconds` pass for the calling activity. */
void sim_sleep(double seconds);
/** Lets time pass until `t`. */
void sim_sleep_until(double t);
/** Lets the activities ready at this instant run before the caller (no time passes). */
void sim_yield(void);

/** The box of (owner, channel), the same for every caller. */
sim_box_t sim_mailbox(const char *owner, const char *channel);
/** Makes the box's owner its permanent receiver: sends complete as soon as posted. */
void sim_box_set_receiver(sim_box_t box);
/** Posts a send of payload (bytes on the wire) to a box; returns at once. */
sim_comm_t sim_post_send(sim_box_t to, void *payload, long bytes);
/* Sends posted so far in this process (all runs of it): the live view's messages in flight. */
long sim_posted_sends(void);
/** Posts a receive from a box; *payload is set when it completes. */
sim_comm_t sim_post_recv(sim_box_t from, void **payload);
/** Waits at most `timeout` seconds for c (0: tests it); consumes c in every case. A timeout
 * on a transfer already under way cancels it on both sides. */
sim_status_t sim_wait_for(sim_comm_t c, double timeout);
/** Waits for whichever of c[0..n) completes first and returns its index, consuming that one
 * only (the others stay posted); -1 when the transport gives up (real mode's peers failing).
 * No timeout, and only where no peer or link can fail: SimGrid 3.32's wait-any aborts the
 * process on a network failure and drops every handle on a timeout. */
int sim_wait_any(sim_comm_t *c, int n);
/** 1 when c has completed (consumed, its payload set), 0 while it has not (still posted).
 * Takes no time. Only where no peer or link can fail, as sim_wait_any. */
int sim_test(sim_comm_t c);

/** Starts an activity on host running fn(argc, argv) with `data` as its own (sim_self_data);
 * a daemon ends with the last activity that is not one. */
void sim_start(const char *name, sim_host_t host, void (*fn)(int argc, char **argv), void *data,
               int daemon);
/** The calling activity's data. */
void *sim_self_data(void);
/** The calling activity itself: tells two activities with the same data apart. */
const void *sim_self_id(void);
/** Computes `flops` on the caller's host at its speed (charges the time it takes). */
void sim_execute(double flops);
/** A host's speed, FLOP/s; its name. */
double sim_host_speed(sim_host_t host);
/** Joules a host has drawn so far: its wattage_per_state (platform.c) at max while it
 * computes, at idle otherwise; 0 for a host without one. */
double sim_host_energy(sim_host_t host);
/** A host's name, owned by the transport (not to free). */
const char *sim_host_name(sim_host_t host);

/** Semaphores between activities of one node (a worker and its bucket stream). */
sim_sem_t sim_sem_new(int value);
/** Takes one unit, blocking the calling activity while there is none. */
void sim_sem_acquire(sim_sem_t s);
/** Gives one unit back, waking an activity blocked in sim_sem_acquire if there is one. */
void sim_sem_release(sim_sem_t s);
/** Destroys a semaphore made by sim_sem_new. */
void sim_sem_free(sim_sem_t s);

#endif
