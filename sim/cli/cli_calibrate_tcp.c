/* The tcp network model fitted to real TCP (cli_calibrate_tcp.h). A 2-host shaped-link
 * testbed (tests/testbed/testbed.sh) at one link setting; tcpxfer's transfers from host 0 to
 * host 1 timed: fresh connections of 10 kB to 10 MB (30 MB from 1 Gbit/s), and a kept
 * connection's 1 MB messages after a 10 MB one, back to back and after 1 s idle; each time
 * predicted by sim_tcp_message (sim/engine/tcp_model.h) under the cluster.tcp_* keys' defaults
 * and under every point of a small grid (tcp_initial_window, tcp_wmem_max, tcp_handshake);
 * the point with the smallest largest relative error printed as scenario lines.
 *
 * A measured time in the model's terms (L: the one-way latency, 2 x the link's, as a message
 * crosses two host links; B: the link's bandwidth on the wire, which tbf shapes):
 * - fresh: tcpxfer times connect() to the receiver's close, so the model's total on a new
 *   connection (its handshake included) plus L for the close travelling back;
 * - kept: tcpxfer times a message's first write to the receiver's 1-byte answer on a
 *   connection opened before (no handshake), so the model's total plus L for the answer; the
 *   window carried from message to message, the clock advanced by each predicted time and
 *   the idle gap (the restart after idle of cubic and reno).
 *
 * Every program starts without a shell. The testbed comes down on every way out; a SIGINT or
 * SIGTERM is held until the step under way ends, then stops the calibration. */
#define _POSIX_C_SOURCE 200809L
#include "cli_calibrate_tcp.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_exec.h"
#include "cli_util.h"
#include "scenario.h"
#include "tcp_model.h"

#define WHO "dtsim validate --calibrate"
#define REPS 3      /* runs of every measurement: the table gives their median */
#define MAX_MSGS 12 /* messages of one measured sequence */
#define MAX_SEQS 8
#define PORT "7077"           /* tcpxfer's, in the testbed's own namespaces */
#define RECEIVER "198.18.0.2" /* testbed host 1 */
#define GRID_STEPS 12         /* tcp_wmem_max: the machine's x 2^(k/4), k in [-12, 12] */

/* A measured sequence: one message on a fresh connection, or messages on one kept
 * connection. A message without a label only sets the connection up: neither printed nor
 * fitted. */
typedef struct cal_seq {
    int keep;
    double gap; /* idle before each message but the first, s */
    int n;
    long bytes[MAX_MSGS];
    const char *label[MAX_MSGS]; /* the table's mode column */
    double runs[MAX_MSGS][REPS]; /* measured, s */
    double measured[MAX_MSGS];   /* their median */
} cal_seq_t;

/* Every fresh size is a sequence of its own; the kept connections' follow. */
static const long FRESH[] = {10000, 100000, 1000000, 10000000, 30000000};
#define FRESH_BELOW_1G 4 /* those measured below 1 Gbit/s (30 MB: 2.5 s a run at 100 Mbit/s) */
static const cal_seq_t KEPT[] = {
    {.keep = 1,
     .n = 4,
     .bytes = {10000000, 1000000, 1000000, 1000000},
     .label = {"kept, 1st", "kept, 2nd", "kept, 3rd", "kept, 4th"}},
    {.keep = 1,
     .gap = 1.0,
     .n = 2,
     .bytes = {10000000, 1000000},
     .label = {NULL, "kept, 2nd, 1 s idle"}},
    /* a stream of messages each within a flight (a ring's or a parameter server's): bbr's
     * estimate from application-limited samples only, its pacing below the link's rate */
    {.keep = 1,
     .n = 12,
     .bytes = {300000, 300000, 300000, 300000, 300000, 300000, 300000, 300000, 300000, 300000,
               300000, 300000},
     .label = {"stream, 1st", NULL, NULL, "stream, 4th", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               "stream, 12th"}},
};

/* The programs and the testbed's names. */
typedef struct cal_ctx {
    char ip[4096];
    const char *tcpxfer;
    char host0[80], host1[80]; /* NAME-h0, NAME-h1 */
} cal_ctx_t;

/* A grid point's errors over the labelled messages. */
typedef struct cal_score {
    double max;      /* the largest |predicted - measured| / measured */
    double sum_sq;   /* their squares' sum: ties of max */
    double distance; /* from the defaults: ties of both */
} cal_score_t;

static volatile sig_atomic_t calibrate_signal;

static void on_signal(int sig)
{
    calibrate_signal = sig;
}

/* ---- the machine and its programs -------------------------------------------------------- */

/* name's path along $PATH, then /usr/sbin and /sbin (root's tools, absent from some PATHs). */
static int find_program(const char *name, char *out, size_t n)
{
    const char *env = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin", env ? env : "/usr/bin:/bin");
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if ((size_t)snprintf(out, n, "%s/%s", d, name) < n && access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

typedef struct exec_args {
    const char *const *args; /* args[0] the program's path, NULL at the end */
} exec_args_t;

static int exec_body(void *ctx, int fd)
{
    (void)fd;
    const exec_args_t *e = ctx;
    execv(e->args[0], (char *const *)e->args);
    fprintf(stderr, WHO ": cannot start %s: %s\n", e->args[0], strerror(errno));
    return 127;
}

/* Runs args (tied to dtsim; quiet: its stderr dropped) with its stdout kept in text (n
 * bytes, NUL-terminated); returns its exit code. A temporary file, not a pipe: no output
 * size can block the child, and a grandchild holding the stream (the testbed's delay line)
 * cannot hold the read. */
static int run_capture(const char *const *args, int quiet, char *text, size_t n)
{
    text[0] = '\0';
    FILE *f = tmpfile();
    if (!f)
        return 127;
    cli_child_t c;
    exec_args_t e = {args};
    int rc = 127;
    if (cli_child_start(&c, CLI_CHILD_TIED | (quiet ? CLI_CHILD_QUIET : 0), fileno(f), exec_body,
                        &e) == 0) {
        rc = cli_child_finish(&c, NULL, 0);
        rewind(f);
        size_t got = fread(text, 1, n - 1, f);
        text[got] = '\0';
    }
    fclose(f);
    return rc;
}

static void pause_for(double seconds)
{
    struct timespec t = {.tv_sec = (time_t)seconds};
    t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
    while (nanosleep(&t, &t) && errno == EINTR && !calibrate_signal)
        ;
}

/* ---- measuring ----------------------------------------------------------------------------- */

/* `tcpxfer send` in host 0 to host 1: the messages' seconds, in order, into seconds[0..n)
 * (their sizes checked against bytes[i % n_bytes]); -1 when it failed. */
static int tcpxfer_send(const cal_ctx_t *x, const long *bytes, int n_bytes, int reps, int keep,
                        double gap, double *seconds, int n)
{
    char sizes[512] = "", reps_text[16], gap_text[32], text[8192];
    for (int i = 0; i < n_bytes; i++)
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%ld", i ? "," : "",
                 bytes[i]);
    snprintf(reps_text, sizeof reps_text, "%d", reps);
    snprintf(gap_text, sizeof gap_text, "%g", gap);
    const char *args[16] = {x->ip,  "netns",  "exec", x->host0, x->tcpxfer,
                            "send", RECEIVER, PORT,   sizes,    reps_text};
    int k = 10;
    if (keep)
        args[k++] = "--keep";
    if (gap > 0) {
        args[k++] = "--gap";
        args[k++] = gap_text;
    }
    args[k] = NULL;
    if (run_capture(args, 0, text, sizeof text) != 0)
        return -1;
    int got = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        long i, b;
        double s;
        if (sscanf(line, "transfer %ld bytes %ld seconds %lf", &i, &b, &s) != 3 || i != got ||
            got == n || b != bytes[got % n_bytes] || !(s > 0))
            return -1;
        seconds[got++] = s;
    }
    return got == n ? 0 : -1;
}

/* Every sequence's runs and medians: the fresh ones (seqs[0..n_fresh)) in one tcpxfer run,
 * sizes interleaved, REPS times; each kept one REPS times, a connection each. */
static int measure(const cal_ctx_t *x, cal_seq_t *seqs, int n_fresh, int n_seqs)
{
    long sizes[MAX_SEQS];
    double t[REPS * MAX_SEQS];
    for (int i = 0; i < n_fresh; i++)
        sizes[i] = seqs[i].bytes[0];
    if (calibrate_signal || tcpxfer_send(x, sizes, n_fresh, REPS, 0, 0, t, REPS * n_fresh))
        return -1;
    for (int i = 0; i < REPS * n_fresh; i++)
        seqs[i % n_fresh].runs[0][i / n_fresh] = t[i];
    for (int s = n_fresh; s < n_seqs; s++)
        for (int r = 0; r < REPS; r++) {
            if (calibrate_signal ||
                tcpxfer_send(x, seqs[s].bytes, seqs[s].n, 1, 1, seqs[s].gap, t, seqs[s].n))
                return -1;
            for (int k = 0; k < seqs[s].n; k++)
                seqs[s].runs[k][r] = t[k];
        }
    for (int s = 0; s < n_seqs; s++)
        for (int k = 0; k < seqs[s].n; k++) {
            double v[REPS];
            memcpy(v, seqs[s].runs[k], sizeof v);
            seqs[s].measured[k] = cli_median(v, REPS);
        }
    return 0;
}

/* ---- the model ----------------------------------------------------------------------------- */

/* A sequence's times under p as tcpxfer measures them: the model's total plus one latency
 * (the receiver's close, or its answer). */
static void seq_predict(const sim_tcp_t *p, const cal_seq_t *s, double latency, double bandwidth,
                        double *pred)
{
    sim_tcp_conn_t c = {0};
    if (s->keep) /* opened before its first message's timing starts */
        sim_tcp_open(p, &c);
    double now = 0;
    for (int i = 0; i < s->n; i++) {
        now += i ? s->gap : 0;
        pred[i] =
            sim_tcp_message(p, &c, now, (double)s->bytes[i], latency, bandwidth).total + latency;
        now += pred[i];
    }
}

static cal_score_t score(const sim_tcp_t *p, const cal_seq_t *seqs, int n_seqs, double latency,
                         double bandwidth)
{
    cal_score_t sc = {0, 0, 0};
    double pred[MAX_MSGS];
    for (int s = 0; s < n_seqs; s++) {
        seq_predict(p, &seqs[s], latency, bandwidth, pred);
        for (int k = 0; k < seqs[s].n; k++) {
            if (!seqs[s].label[k])
                continue;
            double e = fabs(pred[k] - seqs[s].measured[k]) / seqs[s].measured[k];
            sc.max = e > sc.max ? e : sc.max;
            sc.sum_sq += e * e;
        }
    }
    return sc;
}

/* a better than b: the largest error, then the squares, then nearer the defaults */
static int better(const cal_score_t *a, const cal_score_t *b)
{
    const double tie = 1e-9;
    if (fabs(a->max - b->max) > tie)
        return a->max < b->max;
    if (fabs(a->sum_sq - b->sum_sq) > tie)
        return a->sum_sq < b->sum_sq;
    return a->distance < b->distance;
}

/* The grid point of base's keys with the best score: tcp_initial_window 1..40, tcp_wmem_max
 * the machine's (base's) x 2^(k/4) for |k| <= GRID_STEPS (4 KiB multiples), tcp_handshake 1
 * or 2. */
static sim_tcp_t fit(const sim_tcp_t *base, const cal_seq_t *seqs, int n_seqs, double latency,
                     double bandwidth, cal_score_t *best_score)
{
    sim_tcp_t best = *base, p = *base;
    *best_score = (cal_score_t){INFINITY, INFINITY, INFINITY};
    for (long hs = 1; hs <= 2; hs++)
        for (long iw = 1; iw <= 40; iw++)
            for (int k = -GRID_STEPS; k <= GRID_STEPS; k++) {
                long wmem = 4096 * lround((double)base->wmem_max * pow(2, k / 4.0) / 4096);
                p.handshake = hs;
                p.initial_window = iw;
                p.wmem_max = wmem < 4096 ? 4096 : wmem;
                cal_score_t s = score(&p, seqs, n_seqs, latency, bandwidth);
                s.distance = fabs(log((double)iw / 10)) + fabs(k / 4.0) + (double)(hs - 1);
                if (better(&s, best_score)) {
                    *best_score = s;
                    best = p;
                }
            }
    return best;
}

/* ---- output -------------------------------------------------------------------------------- */

static void format_bytes(long bytes, char *buf, size_t n)
{
    if (bytes >= 1000000)
        snprintf(buf, n, "%g MB", (double)bytes / 1e6);
    else
        snprintf(buf, n, "%g kB", (double)bytes / 1e3);
}

static void print_table(FILE *out, const cal_seq_t *seqs, int n_seqs, const sim_tcp_t *def,
                        const sim_tcp_t *fitted, double latency, double bandwidth)
{
    fprintf(out, "%-7s %-20s %10s %7s %10s %8s %10s %8s\n", "size", "mode", "measured s", "spread",
            "default s", "error", "fitted s", "error");
    double pd[MAX_MSGS], pf[MAX_MSGS];
    for (int s = 0; s < n_seqs; s++) {
        seq_predict(def, &seqs[s], latency, bandwidth, pd);
        seq_predict(fitted, &seqs[s], latency, bandwidth, pf);
        for (int k = 0; k < seqs[s].n; k++) {
            if (!seqs[s].label[k])
                continue;
            double m = seqs[s].measured[k], lo = INFINITY, hi = 0;
            for (int r = 0; r < REPS; r++) {
                lo = seqs[s].runs[k][r] < lo ? seqs[s].runs[k][r] : lo;
                hi = seqs[s].runs[k][r] > hi ? seqs[s].runs[k][r] : hi;
            }
            char size[32];
            format_bytes(seqs[s].bytes[k], size, sizeof size);
            fprintf(out, "%-7s %-20s %10.4f %6.1f%% %10.4f %+7.1f%% %10.4f %+7.1f%%\n", size,
                    seqs[s].label[k], m, 100 * (hi - lo) / m, pd[k], 100 * (pd[k] - m) / m, pf[k],
                    100 * (pf[k] - m) / m);
        }
    }
}

/* ---- the calibration ----------------------------------------------------------------------- */

/* The testbed's name from `testbed.sh up`'s output: its last line, dttbPID. */
static int testbed_name(const char *text, char *name, size_t n)
{
    const char *last = text, *nl;
    while ((nl = strchr(last, '\n')) && nl[1])
        last = nl + 1;
    size_t len = strcspn(last, "\n");
    if (len == 0 || len >= n || strncmp(last, "dttb", 4) ||
        strspn(last + 4, "0123456789") != len - 4)
        return -1;
    memcpy(name, last, len);
    name[len] = '\0';
    return 0;
}

/* The server up: a 1-byte transfer that succeeds, tried for up to 5 s (this also settles
 * ARP, which would otherwise add to the first measured connection). */
static int wait_for_server(const cal_ctx_t *x)
{
    const char *args[] = {x->ip,    "netns", "exec", x->host0, x->tcpxfer, "send",
                          RECEIVER, PORT,    "1",    "1",      NULL};
    char text[256];
    for (int i = 0; i < 50 && !calibrate_signal; i++) {
        if (run_capture(args, 1, text, sizeof text) == 0)
            return 0;
        pause_for(0.1);
    }
    return -1;
}

/* The congestion controls the tcp model follows, by sim_tcp_cc_t. */
static const char *const CC_NAMES[] = {
    [SIM_TCP_CUBIC] = "cubic", [SIM_TCP_BBR] = "bbr", [SIM_TCP_RENO] = "reno"};

/* The link setting and the machine's TCP: 0, or why not in why (n bytes). */
static int check_input(const char *script, const char *tcpxfer, const char *bandwidth,
                       const char *latency, double *bw, double *lat, char *cc, size_t n_cc,
                       sim_tcp_cc_t *c, long *wmem, long *rmem, char *why, size_t n)
{
    dt_err_t err = {""};
    char w[32], r[32];
    int given = cc[0] != '\0';
    if (!given && cli_proc_word("/proc/sys/net/ipv4/tcp_congestion_control", 0, cc, n_cc))
        snprintf(cc, n_cc, "?");
    int k = 0;
    while (k < 3 && strcmp(cc, CC_NAMES[k]))
        k++;
    *c = (sim_tcp_cc_t)k;
    if (!script || access(script, X_OK))
        snprintf(why, n, "cannot run the testbed script %s", script ? script : "(none)");
    else if (!tcpxfer || access(tcpxfer, X_OK))
        snprintf(why, n, "cannot run tcpxfer at %s (cmake --build build)",
                 tcpxfer ? tcpxfer : "(none)");
    else if (!bandwidth || scenario_parse_bandwidth(bandwidth, bw, &err) || !(*bw > 0))
        snprintf(why, n, "bandwidth %s: %s", bandwidth ? bandwidth : "(none)",
                 err.msg[0] ? err.msg : "expected a bandwidth such as 100Mbps");
    else if (!latency || scenario_parse_time(latency, lat, &err))
        snprintf(why, n, "latency %s: %s", latency ? latency : "(none)",
                 err.msg[0] ? err.msg : "expected a time such as 10ms");
    else if (k == 3)
        snprintf(why, n, "congestion control %s%s: the tcp model follows cubic, bbr and reno", cc,
                 given ? "" : " (net.ipv4.tcp_congestion_control)");
    else if (cli_proc_word("/proc/sys/net/ipv4/tcp_wmem", 2, w, sizeof w) ||
             cli_proc_word("/proc/sys/net/ipv4/tcp_rmem", 2, r, sizeof r) ||
             (*wmem = atol(w)) < 4096 || (*rmem = atol(r)) < 4096)
        snprintf(why, n, "cannot read this machine's net.ipv4.tcp_wmem and tcp_rmem");
    else if (geteuid() != 0)
        snprintf(why, n, "needs root: the testbed makes network namespaces");
    else
        return 0;
    return -1;
}

/* The table and the fitted lines: def (the keys' defaults) against the best grid point
 * around base (the defaults with this machine's buffers). */
static void report(FILE *out, const cal_seq_t *seqs, int n_seqs, const sim_tcp_t *def,
                   const sim_tcp_t *base, double latency, double bandwidth)
{
    cal_score_t d = score(def, seqs, n_seqs, latency, bandwidth), f;
    sim_tcp_t fitted = fit(base, seqs, n_seqs, latency, bandwidth, &f);
    print_table(out, seqs, n_seqs, def, &fitted, latency, bandwidth);
    fprintf(out,
            "# fitted over tcp_initial_window 1..40, tcp_wmem_max %ld..%ld, "
            "tcp_handshake 1..2 (the largest error the least), tcp_rmem_max this "
            "machine's:\n",
            base->wmem_max / 8, base->wmem_max * 8);
    fprintf(out,
            "[cluster]\nnetwork_model = tcp\ntcp_congestion = %s\n"
            "tcp_initial_window = %ld\ntcp_wmem_max = %ld\n",
            CC_NAMES[fitted.congestion], fitted.initial_window, fitted.wmem_max);
    if (fitted.rmem_max != def->rmem_max)
        fprintf(out, "tcp_rmem_max = %ld\n", fitted.rmem_max);
    fprintf(out, "tcp_handshake = %ld\n", fitted.handshake);
    fprintf(out, "# largest error: defaults %.1f%%, fitted %.1f%%\n", 100 * d.max, 100 * f.max);
}

int cli_calibrate_tcp(const char *testbed_script, const char *tcpxfer_path, const char *bandwidth,
                      const char *latency, const char *congestion, FILE *out)
{
    cal_ctx_t x = {.tcpxfer = tcpxfer_path};
    double bw = 0, lat = 0;
    long wmem = 0, rmem = 0;
    char cc[32], why[600] = "";
    sim_tcp_cc_t c = SIM_TCP_CUBIC;
    snprintf(cc, sizeof cc, "%s", congestion ? congestion : "");
    int given = cc[0] != '\0';
    if (check_input(testbed_script, tcpxfer_path, bandwidth, latency, &bw, &lat, cc, sizeof cc, &c,
                    &wmem, &rmem, why, sizeof why) == 0 &&
        find_program("ip", x.ip, sizeof x.ip))
        snprintf(why, sizeof why, "no ip command (Debian: iproute2)");
    if (why[0]) {
        fprintf(stderr, WHO ": %s\n", why);
        return 2;
    }
    /* defaults: the keys' (Linux's), with the testbed's congestion control; the fit's grid
     * around this machine's buffers, which the testbed's namespaces copy */
    scenario_t *sc = dt_malloc(sizeof *sc);
    scenario_defaults(sc);
    sim_tcp_t def = sc->tcp;
    free(sc);
    def.congestion = c;
    sim_tcp_t base = def;
    base.wmem_max = wmem;
    base.rmem_max = rmem;
    double one_way = 2 * lat; /* a message crosses two host links */

    cal_seq_t seqs[MAX_SEQS];
    int n_fresh = bw >= 125e6 ? FRESH_BELOW_1G + 1 : FRESH_BELOW_1G, n_seqs = 0;
    for (int i = 0; i < n_fresh; i++)
        seqs[n_seqs++] = (cal_seq_t){.n = 1, .bytes = {FRESH[i]}, .label = {"fresh"}};
    for (size_t i = 0; i < sizeof KEPT / sizeof *KEPT; i++)
        seqs[n_seqs++] = KEPT[i];

    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    calibrate_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = 1;
    pid_t server = -1;
    char text[4096], name[64];
    const char *up[12] = {testbed_script, "up",      "--hosts",   "2",
                          "--bandwidth",  bandwidth, "--latency", latency};
    int k = 8;
    if (given) {
        up[k++] = "--congestion";
        up[k++] = cc;
    }
    up[k] = NULL;
    if (run_capture(up, 0, text, sizeof text) != 0 || testbed_name(text, name, sizeof name)) {
        fprintf(stderr, WHO ": the testbed did not come up (%s x %s)\n", bandwidth, latency);
        goto done; /* a failed `up` removes what it made */
    }
    snprintf(x.host0, sizeof x.host0, "%s-h0", name);
    snprintf(x.host1, sizeof x.host1, "%s-h1", name);
    fprintf(out,
            "# tcp calibration on testbed %s: 2 hosts, links of %s and %s: one-way "
            "latency %g ms, round trip %g ms; %s (%s); buffers up to %ld and %ld bytes "
            "(net.ipv4.tcp_wmem, tcp_rmem)\n"
            "# measured: the median of %d runs, their spread (max - min over it); "
            "default: the cluster.tcp_* keys' defaults with tcp_congestion = %s\n",
            name, bandwidth, latency, 1e3 * one_way, 2e3 * one_way, cc,
            given ? "given" : "this machine's default", wmem, rmem, REPS, cc);
    fflush(out);
    const char *serve[] = {x.ip, "netns", "exec", x.host1, tcpxfer_path, "serve", PORT, NULL};
    server = cli_spawn_start(x.ip, serve, -1);
    if (server < 0 || wait_for_server(&x)) {
        fprintf(stderr, WHO ": tcpxfer serve did not answer in %s\n", x.host1);
        goto down;
    }
    if (measure(&x, seqs, n_fresh, n_seqs)) {
        fprintf(stderr, WHO ": %s\n",
                calibrate_signal ? "stopped by a signal" : "a transfer failed (see above)");
        goto down;
    }
    report(out, seqs, n_seqs, &def, &base, one_way, bw);
    rc = 0;
down:
    if (server > 0) {
        kill(server, SIGTERM);
        cli_spawn_wait(server);
    }
    const char *down_args[] = {testbed_script, "down", name, NULL};
    if (cli_spawn(testbed_script, down_args, -1) != 0) {
        fprintf(stderr, WHO ": %s down %s failed: run it again\n", testbed_script, name);
        rc = 1;
    }
done:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc;
}
