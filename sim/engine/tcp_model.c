/* TCP's window per message (tcp_model.h): the kernel's rules as a loop over round trips. */
#include "tcp_model.h"

#include <math.h>

double sim_tcp_efficiency(const sim_tcp_t *p)
{
    return (double)p->mss / (double)(p->mss + p->header);
}

double sim_tcp_window_cap(const sim_tcp_t *p)
{
    double snd = SIM_TCP_SNDBUF_SHARE * (double)p->wmem_max, rcv = 0.5 * (double)p->rmem_max;
    return snd < rcv ? snd : rcv;
}

/* The retransmission timeout, Linux's srtt + max(rttvar, rto_min): rttvar settles at its
 * floor on a steady path. */
static double rto(const sim_tcp_t *p, double rtt) { return rtt + p->rto_min; }

void sim_tcp_open(const sim_tcp_t *p, sim_tcp_conn_t *c)
{
    c->open = 1;
    c->cwnd = (double)(p->initial_window * p->mss);
    c->ssthresh = INFINITY;
}

/* The window a connection starts a message at `now` with: its own, or what the idle
 * restart leaves of it (ssthresh updated with it). */
static void restart(const sim_tcp_t *p, sim_tcp_conn_t *c, double now, double rtt)
{
    if (p->congestion == SIM_TCP_BBR || !p->slow_start_after_idle)
        return;
    double timeout = rto(p, rtt), idle = now - c->last_send;
    if (idle <= timeout)
        return;
    double initial = (double)(p->initial_window * p->mss);
    double restart_cwnd = c->cwnd < initial ? c->cwnd : initial;
    /* tcp_cwnd_restart: ssthresh = tcp_current_ssthresh (at least 3/4 of the window), then
     * the window halved once per timeout of idle, not below the initial one (restart_cwnd) */
    if (c->ssthresh < 0.75 * c->cwnd)
        c->ssthresh = 0.75 * c->cwnd;
    double cwnd = c->cwnd;
    while ((idle -= timeout) > 0 && cwnd > restart_cwnd)
        cwnd /= 2;
    c->cwnd = cwnd > restart_cwnd ? cwnd : restart_cwnd;
}

/* The window after a round trip that acknowledged `acked` bytes, the largest flight of the
 * message so far `flight_max` and the window it was sent with `w`. */
static void grow(const sim_tcp_t *p, sim_tcp_conn_t *c, double acked, double flight_max, double w)
{
    if (c->cwnd < c->ssthresh) {
        /* slow start: every acknowledged byte, while window-limited (below twice the largest
         * flight), and not past ssthresh */
        double limit = 2 * flight_max;
        if (c->cwnd < limit)
            c->cwnd = c->cwnd + acked < limit ? c->cwnd + acked : limit;
        if (c->cwnd > c->ssthresh)
            c->cwnd = c->ssthresh;
        return;
    }
    if (acked < w) /* not window-limited: congestion avoidance does not grow */
        return;
    switch (p->congestion) {
    case SIM_TCP_CUBIC: /* bictcp_update's cnt >= 2: at most one segment per two acked */
        c->cwnd += c->cwnd / 2;
        break;
    case SIM_TCP_BBR: /* startup's gain: as slow start */
        c->cwnd += acked;
        break;
    case SIM_TCP_RENO:
        c->cwnd += (double)p->mss;
        break;
    }
}

sim_tcp_time_t sim_tcp_message(const sim_tcp_t *p, sim_tcp_conn_t *c, double now, double bytes,
                               double latency, double bandwidth)
{
    sim_tcp_time_t out = {0, 0};
    double rtt = 2 * latency, wire = bandwidth * sim_tcp_efficiency(p);
    double cap = sim_tcp_window_cap(p);
    out.rate = rtt > 0 && cap / rtt < wire ? cap / rtt : wire;
    double t = 0;
    if (!c->open) {
        t = (double)p->handshake * rtt;
        sim_tcp_open(p, c);
    } else if (now < c->last_send) {
        /* one byte stream: behind the message still leaving, with the window it leaves */
        t = c->last_send - now;
    } else {
        restart(p, c, now, rtt);
    }
    /* the window that keeps the path busy: the bandwidth-delay product, or the cap below it */
    double full = wire * rtt < cap ? wire * rtt : cap;
    double left = bytes, flight_max = 0;
    while (left > 0) {
        double w = c->cwnd < cap ? c->cwnd : cap;
        if (w >= full) {
            if (full >= wire * rtt) { /* the pipe is open: the rest at the link's rate */
                t += left / wire;
            } else {
                /* the buffers' cap, below the pipe: a window a round trip, the last flight
                 * leaving at the link's rate (a message within the cap leaves in one) */
                double n = ceil(left / w);
                t += (n - 1) * rtt + (left - (n - 1) * w) / wire;
            }
            flight_max = w;
            break;
        }
        double f = w < left ? w : left;
        left -= f;
        if (f > flight_max)
            flight_max = f;
        /* a round trip until the acknowledgements release the next flight; the last one's
         * serialization */
        t += left > 0 ? rtt : f / wire;
        grow(p, c, f, flight_max, w);
    }
    if (flight_max >= full && c->cwnd < full) {
        /* the window grew as far as the pipe during the open flow */
        c->cwnd = full;
    }
    if (flight_max >= full && isinf(c->ssthresh) && p->congestion != SIM_TCP_BBR)
        c->ssthresh = c->cwnd; /* HyStart leaves slow start where the pipe fills */
    out.total = t + latency;
    c->last_send = now + t;
    return out;
}
