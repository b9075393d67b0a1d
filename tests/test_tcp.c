/* The tcp network model (cluster.network_model = tcp: sim/engine/tcp_model.h, net_tcp.cc)
 * against slow start worked out by hand, in closed form (flights of IW x 2^k until the pipe
 * is open, the rest at the rate), not by the model's loop:
 *   - the model alone: a fresh connection's message of 10 KB to 100 MB at round trips of
 *     0.2, 10 and 100 ms, at 100 Mbit/s and 1 Gbit/s, the window capped or not, and under
 *     bbr (its last flight paced);
 *   - the idle restart's timeout: Linux's estimator (rttvar from twice the round trip down
 *     to tcp.rto_min, srtt with a shared link's queueing), just inside and just past it;
 *   - bbr on a stream of small messages: the estimate and the time each takes at the fixed
 *     point in closed form (and the testbed's measured figure), then a long message ending
 *     STARTUP;
 *   - a two-host transfer simulated on SimGrid under tcp takes that time;
 *   - the window carries over between back-to-back messages (the second one at the rate)
 *     and, after an idle longer than the retransmission timeout, restarts under cubic (the
 *     window halved per timeout, down to the initial window, slow start to 3/4 of the old
 *     window, then half the window a round trip) and not under bbr;
 *   - two flows on one link: the later one waits its ramp out while the earlier runs alone,
 *     then they share the link half and half;
 *   - two messages sent at once on one connection go one after the other (one byte stream),
 *     from two hosts they share the link.
 * SimGrid runs once per process: every simulation runs in a forked child that writes back
 * its times through a pipe. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "net_tcp.h"
#include "scenario.h"
#include "strategy.h"
#include "tcp_model.h"

/* Linux's defaults, as the scenario's keys give them */
static sim_tcp_t linux_tcp(void)
{
    scenario_t *sc = malloc(sizeof *sc);
    ck_assert_ptr_nonnull(sc);
    scenario_defaults(sc);
    sim_tcp_t t = sc->tcp;
    free(sc);
    ck_assert_int_eq(t.initial_window, 10);
    ck_assert_int_eq(t.mss, 1448);
    ck_assert_int_eq(t.header, 66);
    ck_assert_int_eq(t.wmem_max, 4194304);
    ck_assert_int_eq(t.rmem_max, 6291456);
    ck_assert_int_eq(t.congestion, SIM_TCP_CUBIC);
    return t;
}

/* Slow start from window w0 on a fresh path, in closed form: flight k holds w0 x 2^k; the
 * flight that reaches the full window (bandwidth-delay product, or the buffers' cap below
 * it) opens the pipe and the rest flows at the rate; a message that ends before it ends
 * with its last flight's serialization. Then the one-way latency. */
static double by_hand(const sim_tcp_t *p, double bytes, double latency, double bandwidth, double w0,
                      int handshake)
{
    double rtt = 2 * latency, wire = bandwidth * 1448.0 / 1514.0;
    double cap = fmin(0.68 * (double)p->wmem_max, 0.5 * (double)p->rmem_max);
    double full = fmin(wire * rtt, cap);
    int m = 0; /* the first flight with the pipe open */
    while (w0 * pow(2, m) < full)
        m++;
    int n = 1; /* flights that carry the message if the pipe never opened */
    while (w0 * (pow(2, n) - 1) < bytes)
        n++;
    double t = handshake * rtt, rest = bytes - w0 * (pow(2, m) - 1);
    if (n <= m) {
        t += (n - 1) * rtt + (bytes - w0 * (pow(2, n - 1) - 1)) / wire;
    } else if (full >= wire * rtt) {
        t += m * rtt + rest / wire;
    } else { /* capped: k flights of the cap, a round trip each but the last */
        double k = ceil(rest / cap);
        t += (m + k - 1) * rtt + (rest - (k - 1) * cap) / wire;
    }
    return t + latency;
}

/* bbr's STARTUP (tcp_bbr.c) on a fresh path, in closed form: the same flights (the window
 * grown by what was acknowledged, each flight paced at 2/ln 2 the delivery rate of the one
 * before, which leaves the window the limit), but the last flight leaves at that pace, not
 * at the link's rate: the first one at 2/ln 2 the initial window per round trip, flight k at
 * 2/ln 2 flight k-1 per round trip, the link's rate at most. Uncapped paths only. Linux's
 * 2/ln 2 is 739/256 (bbr_high_gain; `ss -ti` prints pacing_gain:2.88672). */
static double bbr_by_hand(const sim_tcp_t *p, double bytes, double latency, double bandwidth,
                          double w0, int handshake)
{
    double rtt = 2 * latency, wire = bandwidth * 1448.0 / 1514.0, gain = 739.0 / 256;
    double full = wire * rtt;
    if (full > fmin(0.68 * (double)p->wmem_max, 0.5 * (double)p->rmem_max))
        return NAN; /* capped */
    int m = 0, n = 1;
    while (w0 * pow(2, m) < full)
        m++;
    while (w0 * (pow(2, n) - 1) < bytes)
        n++;
    double t = handshake * rtt;
    if (n <= m) {
        double before = n > 1 ? w0 * pow(2, n - 2) : w0; /* the flight paced from */
        double pace = fmin(wire, gain * before / rtt);
        t += (n - 1) * rtt + (bytes - w0 * (pow(2, n - 1) - 1)) / pace;
    } else {
        t += m * rtt + (bytes - w0 * (pow(2, m) - 1)) / wire;
    }
    return t + latency;
}

static const double SIZES[] = {1e4, 1e5, 1e6, 1e7, 1e8};
static const double RTTS[] = {0.2e-3, 10e-3, 100e-3};

START_TEST(model_is_slow_start_by_hand)
{
    sim_tcp_t p = linux_tcp();
    for (int caps = 0; caps < 3; caps++) {
        /* buffers too small for the pipe: the window stops at the cap; then bbr */
        p.wmem_max = caps == 1 ? 262144 : 4194304;
        p.congestion = caps == 2 ? SIM_TCP_BBR : SIM_TCP_CUBIC;
        for (int b = 0; b < 2; b++)
            for (size_t r = 0; r < sizeof RTTS / sizeof *RTTS; r++)
                for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++) {
                    double bw = b ? 125e6 : 12.5e6, lat = RTTS[r] / 2;
                    sim_tcp_conn_t c = {0};
                    sim_tcp_time_t t = sim_tcp_message(&p, &c, 0, SIZES[s], lat, bw);
                    double want = caps == 2 ? bbr_by_hand(&p, SIZES[s], lat, bw, 14480, 1)
                                            : by_hand(&p, SIZES[s], lat, bw, 14480, 1);
                    if (isnan(want))
                        continue; /* bbr on a capped path: not in closed form */
                    ck_assert_msg(fabs(t.total - want) <= 1e-9 * want,
                                  "%g bytes, rtt %g, %g B/s, cap %d: model %.9g s, by hand "
                                  "%.9g s",
                                  SIZES[s], RTTS[r], bw, caps, t.total, want);
                    ck_assert(c.open && c.last_send > 0);
                }
    }
}
END_TEST

/* A window-based flow that shares a host link with n others (two workers' pushes into a
 * server's link) fills its fair share of that link, not the wire: its flights open the pipe
 * at the share's bandwidth-delay product and the rest leaves at the share, so its time is
 * slow start's by hand on a path of the share's bandwidth, and the rate it leaves SimGrid
 * to share is the share (SimGrid then adds size / rate, the share when the flows do share).
 * A share above the route's bottleneck (a fast server link) leaves it as if alone. */
START_TEST(shared_flow_fills_its_share)
{
    sim_tcp_t p = linux_tcp();
    for (size_t r = 0; r < sizeof RTTS / sizeof *RTTS; r++)
        for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++)
            for (int others = 1; others <= 3; others++) {
                double bw = 12.5e6, lat = RTTS[r] / 2, share = bw / (others + 1);
                sim_tcp_conn_t c = {0};
                c.sharing = others;
                c.share = share;
                sim_tcp_time_t t = sim_tcp_message(&p, &c, 0, SIZES[s], lat, bw);
                double want = by_hand(&p, SIZES[s], lat, share, 14480, 1);
                ck_assert_msg(fabs(t.total - want) <= 1e-9 * want,
                              "%g bytes, rtt %g, a share of 1/%d: model %.9g s, by hand %.9g s",
                              SIZES[s], RTTS[r], others + 1, t.total, want);
                ck_assert_double_eq_tol(t.rate, share * 1448.0 / 1514.0, 1e-6 * share);
                sim_tcp_conn_t alone = {0}, fast = {0};
                fast.sharing = others;
                fast.share = 4 * bw; /* the shared link is not the bottleneck */
                ck_assert_double_eq(sim_tcp_message(&p, &fast, 0, SIZES[s], lat, bw).total,
                                    sim_tcp_message(&p, &alone, 0, SIZES[s], lat, bw).total);
            }
}
END_TEST

/* A stream of messages each within a flight, each sent when the previous one's answer came
 * (the connection idle a round trip: tcpxfer --keep, a ring's step): every bbr sample is
 * application-limited, STARTUP never ends, and the estimate settles where the pace it sets
 * gives it back, estimate = bytes x (1 - 1/gain) / RTT, each message leaving in
 * RTT / (gain - 1) whatever its size. On the testbed (1 Gbit/s, 80 ms round trip, 470 kB
 * messages, 2026-11-29) `ss -ti` showed bw 30.8 Mbit/s and pacing_gain 2.88672, and each
 * message took 0.1222 s from its first write to the answer: the formula's 3.84 MB/s, and
 * 40 + 42.4 + 40 ms. A message longer than the pipe then ends STARTUP: the next one leaves
 * at the link's rate. */
START_TEST(bbr_paces_a_stream_of_small_messages)
{
    sim_tcp_t p = linux_tcp();
    p.congestion = SIM_TCP_BBR;
    p.rmem_max = p.wmem_max = 33554432; /* no cap below the pipe */
    const double gain = 739.0 / 256, bw = 125e6, wire = bw * 1448.0 / 1514.0;
    const double sizes[] = {100e3, 470e3, 1e6}, lats[] = {10e-3, 40e-3};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++) {
            double bytes = sizes[i], lat = lats[j], rtt = 2 * lat;
            if (bytes > wire * rtt / (gain - 1))
                continue; /* paced at the link's rate: no stream effect */
            sim_tcp_conn_t c = {0};
            sim_tcp_open(&p, &c);
            double now = 0, leave = 0;
            for (int k = 0; k < 200; k++) {
                double total = sim_tcp_message(&p, &c, now, bytes, lat, bw).total;
                leave = total - lat;
                now += total + lat; /* the answer */
            }
            double want_bw = bytes * (1 - 1 / gain) / rtt, want_leave = rtt / (gain - 1);
            ck_assert_msg(fabs(c.bw - want_bw) <= 1e-3 * want_bw && !c.bbr_full,
                          "%g B at rtt %g: estimate %.6g B/s, want %.6g", bytes, rtt, c.bw,
                          want_bw);
            ck_assert_msg(fabs(leave - want_leave) <= 1e-3 * want_leave,
                          "%g B at rtt %g: leaves in %.6g s, want %.6g", bytes, rtt, leave,
                          want_leave);
            if (bytes == 470e3 && lat == 40e-3) /* the testbed's figure, within 1% */
                ck_assert(fabs(lat + leave + lat - 0.1222) <= 0.01 * 0.1222);
            /* a long message: samples not application-limited, the pipe found, STARTUP over */
            now += sim_tcp_message(&p, &c, now, 50e6, lat, bw).total + lat;
            ck_assert_msg(c.bbr_full && fabs(c.bw - wire) <= 1e-9 * wire,
                          "long: full %d, estimate %.9g B/s", c.bbr_full, c.bw);
            leave = sim_tcp_message(&p, &c, now, bytes, lat, bw).total - lat;
            ck_assert_msg(fabs(leave - bytes / wire) <= 1e-9 * leave, "after: %.9g s", leave);
        }
}
END_TEST

/* The timeout that decides an idle restart, as Linux's estimator gives it: srtt + rttvar,
 * rttvar twice the round trip at the first sample and a quarter of the way down to
 * tcp.rto_min per round trip of acknowledged data; srtt the round trip plus the queueing of
 * a flight that shares its link with another flow (its whole extra drain: the last packets'
 * wait, which srtt's average of 1/8 per acknowledgement ends the flight on). Checked through
 * the restart: a window kept just inside the timeout, halved just past it (10 ms either
 * side; the queueing is 39 ms, half of it 19). */
START_TEST(restart_timeout_follows_linux_estimator)
{
    sim_tcp_t p = linux_tcp();
    p.rmem_max = p.wmem_max = 33554432;
    const double bw = 12.5e6, wire = bw * 1448.0 / 1514.0, lat = 0.1, rtt = 2 * lat;
    for (int shared = 0; shared < 2; shared++)
        for (int past = 0; past < 2; past++) {
            sim_tcp_conn_t c = {0};
            sim_tcp_open(&p, &c);
            c.sharing = shared;
            double first = sim_tcp_message(&p, &c, 0, 1e6, lat, bw).total - lat;
            /* 1 MB from 10 segments: 7 flights (10, 20, ... 320 segments and the rest), the
             * largest 32 x 14480 bytes */
            double rounds = floor(first / rtt) + 1, flight = 32 * 14480.0;
            double rttvar = 0.2 + (2 * rtt - 0.2) * pow(0.75, rounds);
            double timeout = rtt + (shared ? flight / wire : 0) + rttvar;
            double cwnd = c.cwnd, at = c.last_send + timeout + (past ? 0.01 : -0.01);
            c.sharing = 0;
            sim_tcp_message(&p, &c, at, 1e3, lat, bw);
            double want = past ? cwnd / 2 : cwnd; /* idle past one timeout: halved once */
            ck_assert_msg(fabs(c.cwnd - want) <= 1e-6 * want + 1e3,
                          "shared %d, %s the timeout %.6g s: window %.0f, want %.0f", shared,
                          past ? "past" : "inside", timeout, c.cwnd, want);
        }
}
END_TEST

/* ---- on SimGrid --------------------------------------------------------------------- */

typedef struct xfer {
    int src, dst;
    double start, bytes; /* start: when the sender starts (after its previous message) */
    double done;         /* when the receiver had it */
    int alone;           /* sent by an actor of its own, not after its host's previous one */
} xfer_t;

#define MAX_XFERS 8
static xfer_t xfers[MAX_XFERS];
static int n_xfers;

static void receiver(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    xfer_t *x = sg_actor_self_get_data();
    char box[32];
    snprintf(box, sizeof box, "box-%d", (int)(x - xfers));
    sg_mailbox_get(sg_mailbox_by_name(box));
    x->done = simgrid_get_clock();
}

/* the messages of one host, one after the other: each at its start or when the one
 * before it arrived, whichever is later */
static void sender(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int src = *(int *)sg_actor_self_get_data();
    static char token[] = "payload";
    for (int i = 0; i < n_xfers; i++) {
        if (xfers[i].src != src || xfers[i].alone)
            continue;
        if (simgrid_get_clock() < xfers[i].start)
            sg_actor_sleep_until(xfers[i].start);
        char box[32];
        snprintf(box, sizeof box, "box-%d", i);
        sg_mailbox_put(sg_mailbox_by_name(box), token, (long)xfers[i].bytes);
    }
}

/* one message, by an actor of its own */
static void sender_alone(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    xfer_t *x = sg_actor_self_get_data();
    static char token[] = "payload";
    sg_actor_sleep_until(x->start);
    char box[32];
    snprintf(box, sizeof box, "box-%d", (int)(x - xfers));
    sg_mailbox_put(sg_mailbox_by_name(box), token, (long)x->bytes);
}

/* Three hosts, each on its own link (a direction each way) of bandwidth bw and latency lat:
 * a route crosses the sender's up link and the receiver's down link. */
static void write_platform(const char *path, double bw, double lat)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
               "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
               "<zone id=\"z\" routing=\"Full\">\n");
    for (int h = 0; h < 3; h++)
        fprintf(f, "<host id=\"h%d\" speed=\"1Gf\"/>\n", h);
    for (int h = 0; h < 3; h++)
        fprintf(f,
                "<link id=\"up%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"/>\n"
                "<link id=\"down%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"/>\n",
                h, bw, lat, h, bw, lat);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (a != b)
                fprintf(f,
                        "<route src=\"h%d\" dst=\"h%d\" symmetrical=\"NO\"><link_ctn "
                        "id=\"up%d\"/><link_ctn id=\"down%d\"/></route>\n",
                        a, b, a, b);
    fprintf(f, "</zone>\n</platform>\n");
    ck_assert_int_eq(fclose(f), 0);
}

/* Simulates xfers[] under the tcp model (tcp), in a child; their arrival times come back
 * into xfers[].done. */
static void simulate(const sim_tcp_t *tcp, double bw, double lat)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        char path[] = "/tmp/dtsim-test-tcp-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
            _exit(3);
        close(fd);
        write_platform(path, bw, lat);
        int argc = 1;
        char *argv[] = {"test_tcp", NULL};
        simgrid_init(&argc, argv);
        xbt_log_control_set("root.thresh:critical");
        sg_cfg_set_string("network/model", "CM02");
        sg_cfg_set_boolean("network/crosstraffic", "no");
        simgrid_load_platform(path);
        unlink(path);
        sim_net_tcp_install(tcp);
        static int ids[3] = {0, 1, 2};
        char name[32];
        for (int h = 0; h < 3; h++) {
            snprintf(name, sizeof name, "h%d", h);
            sg_actor_t a = sg_actor_init("sender", sg_host_by_name(name));
            sg_actor_set_data(a, &ids[h]);
            sg_actor_start(a, sender, 0, NULL);
        }
        for (int i = 0; i < n_xfers; i++) {
            if (!xfers[i].alone)
                continue;
            snprintf(name, sizeof name, "h%d", xfers[i].src);
            sg_actor_t a = sg_actor_init("sender", sg_host_by_name(name));
            sg_actor_set_data(a, &xfers[i]);
            sg_actor_start(a, sender_alone, 0, NULL);
        }
        for (int i = 0; i < n_xfers; i++) {
            snprintf(name, sizeof name, "h%d", xfers[i].dst);
            sg_actor_t a = sg_actor_init("receiver", sg_host_by_name(name));
            sg_actor_set_data(a, &xfers[i]);
            sg_actor_start(a, receiver, 0, NULL);
        }
        simgrid_run();
        for (int i = 0; i < n_xfers; i++)
            if (write(fds[1], &xfers[i].done, sizeof(double)) != sizeof(double))
                _exit(4);
        _exit(0);
    }
    close(fds[1]);
    for (int i = 0; i < n_xfers; i++)
        ck_assert_int_eq(read(fds[0], &xfers[i].done, sizeof(double)), sizeof(double));
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void one(int src, int dst, double start, double bytes)
{
    xfers[n_xfers++] = (xfer_t){src, dst, start, bytes, NAN, 0};
}

/* loop test: i = size x round trip */
START_TEST(simgrid_transfer_is_slow_start_by_hand)
{
    sim_tcp_t p = linux_tcp();
    double bytes = SIZES[_i % 5], rtt = RTTS[_i / 5];
    double bw = 12.5e6, lat = rtt / 4; /* a route of two links: one-way rtt / 2 */
    n_xfers = 0;
    one(0, 1, 0, bytes);
    simulate(&p, bw, lat);
    double want = by_hand(&p, bytes, rtt / 2, bw, 14480, 1);
    ck_assert_msg(fabs(xfers[0].done - want) <= 1e-6 * want,
                  "%g bytes at rtt %g: simulated %.9g s, by hand %.9g s", bytes, rtt, xfers[0].done,
                  want);
}
END_TEST

START_TEST(window_carries_over_and_restarts_after_idle)
{
    sim_tcp_t p = linux_tcp();
    double bw = 12.5e6, L = 5e-3, rtt = 2 * L; /* links of 2.5 ms */
    double wire = bw * 1448.0 / 1514.0;
    for (int cc = 0; cc < 2; cc++) {
        p.congestion = cc ? SIM_TCP_BBR : SIM_TCP_CUBIC;
        n_xfers = 0;
        one(0, 1, 0, 1e7); /* opens the window to the pipe */
        one(0, 1, 0, 1e6); /* back to back */
        simulate(&p, bw, L / 2);
        double first = xfers[0].done, second = xfers[1].done - xfers[0].done;
        ck_assert_msg(fabs(first - by_hand(&p, 1e7, L, bw, 14480, 1)) <= 1e-6 * first,
                      "first message %.9g s", first);
        /* back to back: the window is the pipe's, no handshake: latency + size / rate */
        double want = L + 1e6 / wire;
        ck_assert_msg(fabs(second - want) <= 1e-6 * want, "second message %.9g s, want %.9g",
                      second, want);
        /* again, and a third message 1 s after the second arrived */
        double idle_start = xfers[1].done + 1.0;
        n_xfers = 0;
        one(0, 1, 0, 1e7);
        one(0, 1, 0, 1e6);
        one(0, 1, idle_start, 1e6);
        simulate(&p, bw, L / 2);
        double third = xfers[2].done - idle_start;
        if (p.congestion == SIM_TCP_BBR) {
            want = L + 1e6 / wire; /* bbr keeps its window through the idle */
        } else {
            /* idle 1 s + L since the last byte left, the timeout rtt + 200 ms: the window
             * halved 4 times, below the initial window, so back at it; ssthresh stays where
             * HyStart left slow start, at the pipe (the restart keeps the larger of it and
             * 3/4 of the window): slow start as on a new connection, without its handshake */
            want = by_hand(&p, 1e6, L, bw, 14480, 0);
        }
        ck_assert_msg(fabs(third - want) <= 1e-6 * want, "%s: after 1 s idle %.9g s, want %.9g",
                      cc ? "bbr" : "cubic", third, want);
        if (!cc)
            ck_assert(third > second + 2 * rtt); /* the restart cost round trips */
    }
}
END_TEST

START_TEST(later_flow_ramps_while_the_earlier_holds_the_link)
{
    sim_tcp_t p = linux_tcp();
    double bw = 12.5e6, L = 50e-3, S = 1e7; /* links of 25 ms: a round trip of 100 ms */
    double wire = bw * 1448.0 / 1514.0;
    /* A's first message opens its window to the pipe; its second starts as B's first does,
     * on the same receiver's link */
    double a0 = by_hand(&p, S, L, bw, 14480, 1);
    n_xfers = 0;
    one(0, 2, 0, S);
    one(0, 2, 0, S);  /* A, back to back: starts at a0 with the pipe open */
    one(1, 2, a0, S); /* B: a new connection */
    simulate(&p, bw, L / 2);
    ck_assert_msg(fabs(xfers[0].done - a0) <= 1e-6 * a0, "A's first %.9g s, want %.9g",
                  xfers[0].done, a0);
    /* each flow waits its ramp (what it takes alone, less its bytes at the rate), then
     * shares the receiver's link max-min: A's ramp is its latency, B's the handshake and
     * slow start, during which A runs alone */
    double ramp_b = by_hand(&p, S, L, bw, 14480, 1) - S / wire;
    double alone = (ramp_b - L) * wire; /* A's bytes before B's ramp ends */
    double end_a = a0 + ramp_b + 2 * (S - alone) / wire;
    double end_b = end_a + alone / wire;
    ck_assert_msg(fabs(xfers[1].done - end_a) <= 1e-6 * end_a, "A %.9g s, want %.9g", xfers[1].done,
                  end_a);
    ck_assert_msg(fabs(xfers[2].done - end_b) <= 1e-6 * end_b, "B %.9g s, want %.9g", xfers[2].done,
                  end_b);
    /* sharing fairly from the start (a flow model without windows) they would end within a
     * latency of each other; here A ends more than half a second before B */
    ck_assert(xfers[2].done - xfers[1].done > 0.5);
}
END_TEST

/* Two messages sent at once to one host: one connection, one byte stream. The second
 * follows the first's last byte with the window the first opened; sent from two hosts they
 * would share the receiver's link and end together. */
START_TEST(one_connection_carries_its_messages_in_turn)
{
    sim_tcp_t p = linux_tcp();
    double bw = 12.5e6, L = 0.2e-3, S = 940584; /* fedavg's mlp, links of 0.1 ms */
    double wire = bw * 1448.0 / 1514.0;
    n_xfers = 0;
    one(0, 1, 0, S);
    one(0, 1, 0, S);
    xfers[0].alone = xfers[1].alone = 1;
    simulate(&p, bw, L / 2);
    double first = fmin(xfers[0].done, xfers[1].done), second = fmax(xfers[0].done, xfers[1].done);
    double want = by_hand(&p, S, L, bw, 14480, 1);
    ck_assert_msg(fabs(first - want) <= 1e-6 * want, "first %.9g s, want %.9g", first, want);
    /* the second: behind the first's last byte (first - L), then at the rate (the first
     * opened the window to the pipe) */
    double then = first - L + S / wire + L;
    ck_assert_msg(fabs(second - then) <= 1e-6 * then, "second %.9g s, want %.9g", second, then);
    n_xfers = 0;
    one(0, 2, 0, S);
    one(1, 2, 0, S);
    simulate(&p, bw, L / 2);
    ck_assert_msg(fabs(xfers[0].done - xfers[1].done) <= 1e-9, "%.9g and %.9g", xfers[0].done,
                  xfers[1].done);
    ck_assert(xfers[0].done > first + 0.5 * S / wire);
}
END_TEST

int main(void)
{
    sim_strategies_register(); /* the key table: the tcp_* keys' defaults */
    Suite *s = suite_create("tcp");
    TCase *tc = tcase_create("tcp");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, model_is_slow_start_by_hand);
    tcase_add_test(tc, shared_flow_fills_its_share);
    tcase_add_test(tc, bbr_paces_a_stream_of_small_messages);
    tcase_add_test(tc, restart_timeout_follows_linux_estimator);
    tcase_add_loop_test(tc, simgrid_transfer_is_slow_start_by_hand, 0, 15);
    tcase_add_test(tc, window_carries_over_and_restarts_after_idle);
    tcase_add_test(tc, later_flow_ramps_while_the_earlier_holds_the_link);
    tcase_add_test(tc, one_connection_carries_its_messages_in_turn);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
