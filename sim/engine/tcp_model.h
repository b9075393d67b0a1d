/* TCP's window as the Linux kernel runs it, reduced to what a message-level simulation needs:
 * how long a message of S bytes takes alone on a path of one-way latency L and bottleneck
 * bandwidth B, given what its connection carried from the messages before it (the
 * congestion window, when it last sent). No SimGrid here: net_tcp.cc charges these times to
 * SimGrid's flows, `dtsim validate --calibrate` fits the parameters to measured transfers,
 * and the suite checks the formula by hand.
 *
 * The model, per message (sim/README.md#the-tcp-network-model says why each part):
 * - a connection's first message waits tcp.handshake round trips (SYN, SYN-ACK);
 * - a connection is one byte stream: a message sent while the previous one is still leaving
 *   (as this model times it alone) starts when that one's last byte has left;
 * - the window starts at tcp.initial_window segments and, in slow start, grows by every byte
 *   acknowledged while the sender is window-limited (Linux's tcp_is_cwnd_limited: up to twice
 *   the largest flight), so it doubles every round trip of a long message;
 * - a round trip moves one window; once the window holds the path's bandwidth-delay product
 *   the rest flows at the payload rate B x mss / (mss + header);
 * - the window is capped by the socket buffers: SIM_TCP_SNDBUF_SHARE of tcp.wmem_max (what
 *   Linux's send buffer leaves in flight) and half of tcp.rmem_max (tcp_adv_win_scale = 1);
 *   capped below the pipe, a round trip moves one window, so a message within the cap leaves
 *   in one flight at the link's rate;
 * - past slow start (ssthresh, set where the window filled the pipe or by an idle restart)
 *   CUBIC grows at most half the window a round trip, Reno one segment;
 * - after an idle longer than the retransmission timeout (Linux's srtt + rttvar: rttvar
 *   twice the RTT at the first sample and a quarter of the way down to tcp.rto_min per
 *   round trip of acknowledged data; srtt the RTT plus the queueing of a flight whose link
 *   carries `sharing` other flows), CUBIC and Reno halve the window once per timeout elapsed, down
 * to the initial window, and keep ssthresh at 3/4 of the old window (tcp_cwnd_restart, RFC 2861);
 * BBR keeps its window (Linux skips the restart for congestion controls with their own
 * cong_control);
 * - BBR paces each flight at its gain times its bandwidth estimate, the largest delivery
 *   rate sampled (Linux's tcp_rate.c, from the last acknowledgement before a packet to its
 *   own): STARTUP's 2/ln 2 while every sample is application-limited, as a message that
 *   leaves in one flight is, so a stream of such messages settles at an estimate of
 *   bytes x (1 - 1/gain) / RTT and each leaves in RTT / (gain - 1) however fast the link;
 *   a message longer than a flight samples the link, three rounds without a quarter's
 *   growth end STARTUP, and from then on the gain is 1 at the link's rate. */
#ifndef DTSIM_ENGINE_TCP_MODEL_H
#define DTSIM_ENGINE_TCP_MODEL_H

#include "scenario.h"

/* What Linux's send buffer leaves in flight of tcp_wmem's maximum: 2.86 MB of 4 MiB measured
 * on the testbed (1 Gbit/s, 50 ms links, 10 and 40 MB transfers), since the buffer also holds
 * the bytes not yet sent and is charged each segment's overhead. */
#define SIM_TCP_SNDBUF_SHARE 0.68

/* One direction of a connection between two hosts. All zero: not connected yet. */
typedef struct sim_tcp_conn {
    double cwnd;         /* congestion window, payload bytes */
    double ssthresh;     /* slow start threshold, bytes (INFINITY: slow start until the pipe) */
    double last_send;    /* when its last message's last byte leaves the sender, s */
    int open;            /* 1 once the connection exists */
    double rttvar;       /* its round-trip variation for the timeout, s (0: no sample yet) */
    double queue;        /* the queueing its last message's round trips carried, s */
    int sharing;         /* set by the caller before each message: the other messages leaving
                            or arriving on its hosts' links meanwhile, whose flights queue with
                            its own (0 alone) */
    double share;        /* set with sharing: its fair share of the host link they share, in
                            the links' bytes/s (0: the route's bottleneck, alone) */
    double bw;           /* BBR: its bandwidth estimate, payload bytes/s (0: none yet) */
    double bbr_full_bw;  /* BBR STARTUP: the estimate it last grew 25% past */
    int bbr_full_rounds; /* BBR STARTUP: rounds since, not application-limited */
    int bbr_full;        /* BBR: STARTUP over (the pipe was found full) */
    double busy_since;   /* BBR: its rate samples' start: the last acknowledgement, s */
    double busy_bytes;   /* BBR: bytes sent since busy_since */
    double msg_start;    /* BBR: when its last message started leaving, s */
    double msg_bytes;    /* BBR: that message's bytes */
} sim_tcp_conn_t;

/* One message's times, alone on its path. */
typedef struct sim_tcp_time {
    double total; /* from its start until its last byte arrives, s */
    double rate;  /* the payload rate of a long message once its window is open:
                     min(B x mss/(mss+header), window cap / RTT), bytes/s */
} sim_tcp_time_t;

/** The payload share of the wire: mss / (mss + header). */
double sim_tcp_efficiency(const sim_tcp_t *p);
/** The largest window the socket buffers allow, payload bytes. */
double sim_tcp_window_cap(const sim_tcp_t *p);
/** Opens c without a handshake (the connection's other direction paid it): the initial
 * window, no ssthresh. */
void sim_tcp_open(const sim_tcp_t *p, sim_tcp_conn_t *c);
/** A message of `bytes` sent at `now` on connection c over a path of one-way `latency` (s)
 * and bottleneck `bandwidth` (wire bytes/s): its times, and c updated as the message leaves
 * it (window grown, last send, open). */
sim_tcp_time_t sim_tcp_message(const sim_tcp_t *p, sim_tcp_conn_t *c, double now, double bytes,
                               double latency, double bandwidth);

#endif
