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

/* The round-trip variation Linux's timeout adds to the round trip (tcp_rtt_estimator): its
 * first sample sets it to twice the round trip (a timeout of 3 RTT); on a steady path each
 * round trip of acknowledged data brings it a quarter of the way down to its floor,
 * tcp.rto_min. The model's round trips do not vary, so it only decays. */
static double rttvar(const sim_tcp_t *p, const sim_tcp_conn_t *c, double rtt)
{
    double v = c->rttvar > 0 ? c->rttvar : 2 * rtt;
    return v > p->rto_min ? v : p->rto_min;
}

/* The retransmission timeout, Linux's srtt + rttvar: srtt the path's round trip and the
 * queueing the connection's last message met. */
static double rto(const sim_tcp_t *p, const sim_tcp_conn_t *c, double rtt)
{
    return rtt + c->queue + rttvar(p, c, rtt);
}

/* rttvar after `rounds` round trips of acknowledged data (mdev_max at its floor each one). */
static void rttvar_decay(const sim_tcp_t *p, sim_tcp_conn_t *c, double rtt, double rounds)
{
    c->rttvar = p->rto_min + (rttvar(p, c, rtt) - p->rto_min) * pow(0.75, rounds);
}

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
    double timeout = rto(p, c, rtt), idle = now - c->last_send;
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
    case SIM_TCP_BBR: /* bbr_flights: no window rule */
        break;
    case SIM_TCP_RENO:
        c->cwnd += (double)p->mss;
        break;
    }
}

/* BBR (Linux's tcp_bbr.c, v1): the rate it paces at is its gain times its bandwidth estimate,
 * the largest delivery rate it has sampled. In STARTUP the gain is 2/ln 2 and stays so while
 * every sample is application-limited (bbr_check_full_bw_reached skips those): a message that
 * leaves in one flight, before its first acknowledgement, is such a sample, its rate
 * bytes / (RTT + bytes / pace), and raises the estimate only when above it. A stream of
 * messages of one size so settles where pace = gain x estimate gives back the estimate:
 * estimate = bytes x (1 - 1/gain) / RTT, far below the link when a message is less than the
 * path holds (470 kB on 1 Gbit/s at 80 ms: 3.8 MB/s, paced at 11 MB/s, as measured). A
 * message longer than a flight samples the link (no longer application-limited); three round
 * trips without a quarter's growth end STARTUP, after which the gain is 1 (PROBE_BW's cycle,
 * on average) at an estimate that application-limited samples never lower. */
#define BBR_HIGH_GAIN (739.0 / 256) /* bbr_high_gain: 2 / ln 2 in 1/256ths, rounded up */
#define BBR_FULL_BW_ROUNDS 3        /* rounds without 25% growth that end STARTUP */

static void bbr_sample(sim_tcp_conn_t *c, double rate, int app_limited)
{
    if (rate > c->bw)
        c->bw = rate;
    if (app_limited || c->bbr_full)
        return;
    if (rate >= 1.25 * c->bbr_full_bw) {
        c->bbr_full_bw = rate;
        c->bbr_full_rounds = 0;
    } else if (++c->bbr_full_rounds >= BBR_FULL_BW_ROUNDS) {
        c->bbr_full = 1;
    }
}

/* The connection's sends since it last went busy (nothing in flight before), as segments
 * each sent evenly: the older messages, the previous one, the flight now leaving. */
typedef struct bbr_sends {
    double from[3], to[3], bytes[3];
    double busy_since; /* when the connection went busy: the rate samples' first base */
} bbr_sends_t;

/* Bytes sent in [a, b]. */
static double sent_between(const bbr_sends_t *h, double a, double b)
{
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        double lo = h->from[i] > a ? h->from[i] : a, hi = h->to[i] < b ? h->to[i] : b;
        if (!(h->bytes[i] > 0) || hi < lo)
            continue;
        double span = h->to[i] - h->from[i];
        sum += span > 0 ? h->bytes[i] * (hi - lo) / span : h->bytes[i];
    }
    return sum;
}

/* Linux's delivery rate (tcp_rate.c) of a packet sent at x: the bytes acknowledged from the
 * last acknowledgement before x (delivered_mstamp; when the connection went busy, if none
 * came since) until x's own, over that time. An acknowledgement returns a round trip after
 * its byte left. */
static double delivery_rate(const bbr_sends_t *h, double x, double rtt)
{
    double sent_last = -INFINITY; /* the last send a round trip or more before x */
    for (int i = 0; i < 3; i++)
        if (h->bytes[i] > 0 && h->from[i] <= x - rtt) {
            double e = h->to[i] < x - rtt ? h->to[i] : x - rtt;
            if (e > sent_last)
                sent_last = e;
        }
    double base = sent_last > -INFINITY ? sent_last + rtt : h->busy_since;
    double from = sent_last > -INFINITY ? sent_last : h->busy_since;
    return sent_between(h, from, x) / (x + rtt - base);
}

/* A message's first flight, application-limited (it leaves before its first
 * acknowledgement): its largest delivery rate, over points along the flight. */
static double bbr_first_sample(bbr_sends_t *h, double start, double flight, double pace, double rtt)
{
    h->from[2] = start;
    h->to[2] = start + flight / pace;
    h->bytes[2] = flight;
    double best = 0;
    for (int i = 1; i <= 16; i++) {
        double r = delivery_rate(h, start + i / 16.0 * (h->to[2] - start), rtt);
        if (r > best)
            best = r;
    }
    return best;
}

/* The seconds `bytes` take to leave under BBR, c's estimate and window updated. Its first
 * flight is application-limited; its rate sample counts from the connection's last
 * acknowledgement before it (tcp_rate.c): `before` bytes sent `since` seconds before the
 * message starts and not yet acknowledged then count with it, as a message that starts while
 * the previous one is in flight counts both. */
static double bbr_flights(const sim_tcp_t *p, sim_tcp_conn_t *c, double bytes, double rtt,
                          double wire, double cap, double start)
{
    bbr_sends_t h = {{c->busy_since, c->msg_start, 0},
                     {c->msg_start, c->last_send, 0},
                     {c->busy_bytes, c->msg_bytes, 0},
                     c->busy_since};
    if (!(c->msg_bytes > 0) || start >= c->last_send + rtt) { /* all acknowledged: idle */
        h.bytes[0] = h.bytes[1] = 0;
        h.busy_since = start;
    }
    double mss = (double)p->mss, t = 0, left = bytes;
    if (!(c->bw > 0)) /* bbr_init_pacing_rate_from_rtt: the initial window per round trip */
        c->bw = (double)p->initial_window * mss / rtt;
    for (int round = 0; left > 0; round++) {
        double gain = c->bbr_full ? 1.0 : BBR_HIGH_GAIN;
        double pace = gain * c->bw < wire ? gain * c->bw : wire;
        double window = c->cwnd < cap ? c->cwnd : cap;
        if (pace >= wire && window >= wire * rtt) { /* the link's rate from here on */
            t += left / wire;
            for (double r = left / (wire * rtt); r > 0 && !c->bbr_full; r--)
                bbr_sample(c, wire, 0);
            break;
        }
        double flight = left;
        if (flight > window)
            flight = window;
        if (flight > pace * rtt)
            flight = pace * rtt;
        left -= flight;
        t += left > 0 ? rtt : flight / pace;
        if (round == 0)
            bbr_sample(c, bbr_first_sample(&h, start, flight, pace, rtt), 1);
        else
            bbr_sample(c, flight / rtt, 0);
        /* bbr_set_cwnd: STARTUP grows by what was acknowledged up to its target, PROBE_BW
         * holds at twice the estimated pipe */
        double target = (c->bbr_full ? 2.0 : BBR_HIGH_GAIN) * c->bw * rtt;
        if (target < 4 * mss)
            target = 4 * mss;
        if (!c->bbr_full) {
            if (c->cwnd < target)
                c->cwnd += flight;
        } else {
            c->cwnd = c->cwnd + flight < target ? c->cwnd + flight : target;
        }
    }
    /* the history the next message's sample reads: this message the previous one, the
     * older ones since the connection went busy one segment */
    c->busy_since = h.busy_since;
    c->busy_bytes = h.bytes[0] + h.bytes[1];
    c->msg_start = start;
    c->msg_bytes = bytes;
    return t;
}

/* The seconds `bytes` take to leave under a window-based congestion control (CUBIC, Reno):
 * a window a round trip, grown as slow start and congestion avoidance grow it, until it
 * holds the pipe or the buffers' cap; c's window updated. The pipe is the flow's share of
 * the wire, `share` (the wire over the flows leaving with it): a window that fills its share
 * leaves the rest to the others, and its flights leave at that rate. */
static double window_flights(const sim_tcp_t *p, sim_tcp_conn_t *c, double bytes, double rtt,
                             double wire, double share, double cap)
{
    /* the window that keeps the path busy: the bandwidth-delay product, or the cap below it */
    double full = share * rtt < cap ? share * rtt : cap;
    double t = 0, left = bytes, flight_max = 0;
    while (left > 0) {
        double w = c->cwnd < cap ? c->cwnd : cap;
        if (w >= full) {
            if (full >= share * rtt) { /* the pipe is open: the rest at its share's rate */
                t += left / share;
            } else {
                /* the buffers' cap, below the pipe: a window a round trip, the last flight
                 * leaving at the link's rate (a message within the cap leaves in one) */
                double n = ceil(left / w);
                t += (n - 1) * rtt + (left - (n - 1) * w) / share;
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
        t += left > 0 ? rtt : f / share;
        grow(p, c, f, flight_max, w);
    }
    if (flight_max >= full && c->cwnd < full) {
        /* the window grew as far as the pipe during the open flow */
        c->cwnd = full;
    }
    if (flight_max >= full && isinf(c->ssthresh))
        c->ssthresh = c->cwnd; /* HyStart leaves slow start where the pipe fills */
    /* a flight sent at the link's rate into a link it shares with `sharing` other flows
     * drains at 1/(sharing + 1) of it: its packets wait behind one another, the last ones
     * the flight's whole extra drain, and the round trips Linux samples carry that wait:
     * srtt, an average of 1/8 per acknowledgement over hundreds of them, ends the flight at
     * the last packets' wait, and so does the timeout that decides an idle restart (sync-ps
     * at 10 Mbit/s and 50 ms under cubic: +11.8% with half the drain, -4.1% with all) */
    c->queue = c->sharing > 0 ? flight_max * c->sharing / wire : 0;
    return t;
}

sim_tcp_time_t sim_tcp_message(const sim_tcp_t *p, sim_tcp_conn_t *c, double now, double bytes,
                               double latency, double bandwidth)
{
    sim_tcp_time_t out = {0, 0};
    double rtt = 2 * latency, wire = bandwidth * sim_tcp_efficiency(p);
    double cap = sim_tcp_window_cap(p);
    out.rate = rtt > 0 && cap / rtt < wire ? cap / rtt : wire;
    /* a window-based flow's share of the wire: of the host link it shares with the flows
     * leaving with it, where that is below the route's bottleneck (bbr paces to its own
     * estimate: bbr_flights) */
    double share = c->share > 0 && c->share < bandwidth ? c->share * sim_tcp_efficiency(p) : wire;
    if (p->congestion != SIM_TCP_BBR && out.rate > share)
        out.rate = share;
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
    double sending = p->congestion == SIM_TCP_BBR
                         ? bbr_flights(p, c, bytes, rtt, wire, cap, now + t)
                         : window_flights(p, c, bytes, rtt, wire, share, cap);
    t += sending;
    if (rtt > 0) /* the round trips its acknowledgements took, the last flight's included */
        rttvar_decay(p, c, rtt, floor(sending / rtt) + 1);
    out.total = t + latency;
    c->last_send = now + t;
    return out;
}
