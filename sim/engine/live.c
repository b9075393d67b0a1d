/* The live view (see live.h). A frame is built in memory and written with one fwrite: the
 * cursor goes back up over the previous frame, each line ends by clearing the rest of the
 * terminal line, and a frame never has more lines than the terminal has rows (a frame
 * taller than the screen would scroll, and going back up would then land in the wrong
 * place). Only ASCII is written, so a byte is a column. */
#define _POSIX_C_SOURCE 200809L
#include "live.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "record.h"
#include "run.h"

/* Evaluations the sparkline keeps (the latest; older ones drop off the left). */
#define LIVE_EVALS 512
/* Nodes and links the published state lists at most (a projector shows a few). */
#define LIVE_NODES 64
#define LIVE_LINKS 8
#define LIVE_LINK_NAMES 512 /* the page's list of links to change */
#define LIVE_NODE_NAMES 512 /* and of nodes to crash or slow */

struct sim_live {
    double pace;       /* simulated seconds per wall second, 0: none */
    double wall0;      /* wall clock at the start */
    double next_frame; /* wall clock of the next frame */
    int lines;         /* lines of the frame on screen */
    double acc[LIVE_EVALS];
    long n_acc; /* evaluations seen (the latest LIVE_EVALS kept, in rotation) */
    int term;   /* draw on stderr */
    int tty_in; /* with term: stdin is a terminal, lines typed there change links */
    /* published state (base != NULL) */
    char *base; /* PATH.live-RUN: base.json, base.cmd */
    double next_publish;
    double pub_sim;     /* simulated time of the last write */
    double pub_flight;  /* the run's msg_flight_s then */
    double *node_cm;    /* (nodes, 2) compute_s, comm_s at the last write */
    double *link_bytes; /* (links) bytes carried at the last write */
    size_t n_links;
    char note[640]; /* what became of the last link change asked */
};

typedef struct frame {
    char *buf;
    size_t len;
    FILE *f;
    int cols, rows, lines;
} frame_t;

static void term_size(int *cols, int *rows)
{
    struct winsize ws;
    *cols = 80;
    *rows = 24;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

/* One line of the frame, cut to the terminal's width less one column (a line that fills
 * the last column would wrap on some terminals); bytes outside printable ASCII become '?'. */
static void line(frame_t *fr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(frame_t *fr, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t width = fr->cols > 1 ? (size_t)fr->cols - 1 : 1;
    if (strlen(text) > width)
        text[width] = '\0';
    for (char *p = text; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            *p = '?';
    fprintf(fr->f, "%s\033[K\n", text);
    fr->lines++;
}

/* A node's shares of the simulated time until now, as the workers table stores them: idle
 * is whatever is not compute or transfer. */
static void shares(const sim_node_t *n, double now, double *c, double *m, double *i)
{
    double idle = now - n->compute_s - n->comm_s;
    if (idle < 0)
        idle = 0;
    double total = n->compute_s + n->comm_s + idle;
    *c = total > 0 ? n->compute_s / total : 0;
    *m = total > 0 ? n->comm_s / total : 0;
    *i = total > 0 ? idle / total : 0;
}

/* A bar of width characters: '#' compute, '~' communication, '.' idle. */
static void bar(char *out, int width, double c, double m)
{
    int nc = (int)lround(c * width), nm = (int)lround(m * width);
    if (nc > width)
        nc = width;
    if (nc + nm > width)
        nm = width - nc;
    for (int k = 0; k < width; k++)
        out[k] = k < nc ? '#' : k < nc + nm ? '~' : '.';
    out[width] = '\0';
}

static void node_row(frame_t *fr, const sim_node_t *n, double now)
{
    double c, m, i;
    shares(n, now, &c, &m, &i);
    int width = fr->cols - 1 - 58; /* after the figures */
    char b[256] = "";
    if (width >= 8)
        bar(b, width < 200 ? width : 200, c, m);
    char host[32];
    line(fr, "%-16.16s %-7s %7ld %6.1f%% %6.1f%% %6.1f%%  %s",
         sim_node_host_name(n, host, sizeof host), n->alive ? n->role : "down", n->steps, 100 * c,
         100 * m, 100 * i, b);
}

/* The mean shares of nodes[from..n) (the rows that did not fit). */
static void rest_row(frame_t *fr, const sim_node_t *nodes, int from, int n, double now)
{
    double sc = 0, sm = 0, si = 0;
    for (int k = from; k < n; k++) {
        double c, m, i;
        shares(&nodes[k], now, &c, &m, &i);
        sc += c, sm += m, si += i;
    }
    int rest = n - from;
    line(fr, "... %d more %s%s  (mean) %6.1f%% %6.1f%% %6.1f%%", rest, nodes[from].role,
         rest == 1 ? "" : "s", 100 * sc / rest, 100 * sm / rest, 100 * si / rest);
}

/* The accuracy of every evaluation so far, scaled between the lowest and the highest. */
static void sparkline(frame_t *fr, const struct sim_live *lv, const sim_run_t *run)
{
    static const char levels[] = "_.,-=+*#";
    if (run->timing_only) {
        line(fr, "accuracy: none (timing only: a model profile, nothing is trained)");
        return;
    }
    if (lv->n_acc == 0) {
        line(fr, "accuracy: no evaluation yet");
        return;
    }
    int width = fr->cols - 1 - 40;
    if (width < 8)
        width = 8;
    long kept = lv->n_acc < LIVE_EVALS ? lv->n_acc : LIVE_EVALS;
    long shown = kept < width ? kept : width;
    double lo = INFINITY, hi = -INFINITY;
    for (long k = lv->n_acc - shown; k < lv->n_acc; k++) {
        double a = lv->acc[k % LIVE_EVALS];
        if (isfinite(a))
            lo = fmin(lo, a), hi = fmax(hi, a);
    }
    char s[512];
    long j = 0;
    for (long k = lv->n_acc - shown; k < lv->n_acc; k++) {
        double a = lv->acc[k % LIVE_EVALS];
        int lev = !isfinite(a) ? -1 : hi > lo ? (int)((a - lo) / (hi - lo) * 7 + 0.5) : 7;
        s[j++] = lev < 0 ? '?' : levels[lev];
    }
    s[j] = '\0';
    if (isfinite(lo))
        line(fr, "accuracy %.4f..%.4f |%s| %.4f", lo, hi, s, run->last_acc);
    else
        line(fr, "accuracy |%s| (not finite)", s);
}

static void draw(sim_run_t *run, double now, int final)
{
    struct sim_live *lv = run->live;
    const scenario_t *sc = run->sc;
    frame_t fr = {0};
    term_size(&fr.cols, &fr.rows);
    fr.f = open_memstream(&fr.buf, &fr.len);
    DT_CHECK(fr.f, "open_memstream failed");
    if (lv->lines > 0)
        fprintf(fr.f, "\r\033[%dA", lv->lines);

    long step = sc->strategy->steps_done ? sc->strategy->steps_done(run)
                : run->n_workers         ? run->workers[0].steps
                                         : 0;
    char pace[48] = "";
    if (lv->pace > 0)
        snprintf(pace, sizeof pace, "  (pace %g s/s)", lv->pace);
    line(&fr, "%s  %s  simulated %.3f s  wall %.1f s%s%s", sc->name, sc->strategy->name, now,
         dt_wall_seconds() - lv->wall0, pace, final ? "  [done]" : "");
    char acc[64] = "";
    if (!run->timing_only && run->evals)
        snprintf(acc, sizeof acc, "  accuracy %.4f  loss %.4f", run->last_acc, run->last_loss);
    line(&fr, "%s %ld of %ld%s  sent %.4g MB", sc->strategy->steps_done ? "round" : "step", step,
         run->total_steps, acc, run->bytes_total / 1e6);
    line(&fr, "%-16s %-7s %7s %7s %7s %7s  # compute ~ comm . idle", "host", "role", "steps",
         "compute", "comm", "idle");

    /* rows left for nodes: the screen less the 3 lines above, the sparkline and one spare */
    int typed = (sc->live_links || sc->live_hosts) && lv->tty_in;
    int room = fr.rows - 5 - typed; /* and the hint line */
    if (room < 2)
        room = 2;
    int n_nodes = run->n_servers + run->n_workers;
    if (n_nodes <= room) {
        for (int k = 0; k < run->n_servers; k++)
            node_row(&fr, &run->servers[k], now);
        for (int k = 0; k < run->n_workers; k++)
            node_row(&fr, &run->workers[k], now);
    } else {
        int s_rows = run->n_servers < room / 2 ? run->n_servers : room / 2;
        for (int k = 0; k < s_rows; k++)
            node_row(&fr, &run->servers[k], now);
        if (s_rows < run->n_servers) {
            rest_row(&fr, run->servers, s_rows, run->n_servers, now);
            s_rows++;
        }
        int w_rows = room - s_rows - 1; /* one for the rest */
        for (int k = 0; k < w_rows && k < run->n_workers; k++)
            node_row(&fr, &run->workers[k], now);
        if (w_rows < run->n_workers)
            rest_row(&fr, run->workers, w_rows, run->n_workers, now);
    }
    sparkline(&fr, lv, run);
    if (sc->live_links && lv->tty_in)
        line(&fr, "change a link: type LINK BANDWIDTH and Enter (e.g. %s 100Mbps)%s%s%s",
             sim_record_link_count(run) ? sim_record_link_name(run, 0) : "LINK",
             sc->live_hosts ? ", or crash NODE, straggler NODE x4" : "", lv->note[0] ? ": " : "",
             lv->note);
    else if (typed)
        line(&fr, "crash or slow a node: type crash NODE or straggler NODE x4 and Enter%s%s",
             lv->note[0] ? ": " : "", lv->note);
    if (lv->lines > fr.lines)
        fputs("\033[J", fr.f); /* the previous frame was taller */
    fclose(fr.f);
    fwrite(fr.buf, 1, fr.len, stderr);
    fflush(stderr);
    free(fr.buf);
    lv->lines = fr.lines;
}

void sim_live_start(sim_run_t *run, double pace, int term, const char *base)
{
    struct sim_live *lv = dt_calloc(1, sizeof *lv);
    lv->pace = pace > 0 ? pace : 0;
    lv->wall0 = dt_wall_seconds();
    lv->term = term;
    lv->tty_in = term && isatty(STDIN_FILENO);
    if (base) {
        lv->base = dt_malloc(strlen(base) + 1);
        strcpy(lv->base, base);
        lv->node_cm = dt_calloc(2 * (size_t)(run->n_servers + run->n_workers) + 1, sizeof(double));
    }
    run->live = lv;
}

/* ---- the published state ---------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number, or null when it is not finite (JSON has no NaN). */
static void json_num(FILE *f, const char *key, double v)
{
    fprintf(f, isfinite(v) ? ",\"%s\":%.9g" : ",\"%s\":null", key, isfinite(v) ? v : 0.0);
}

/* A link change, "link TARGET BANDWIDTH" or "latency TARGET LATENCY" (TARGET BANDWIDTH typed
 * under the terminal view), applied when the scenario takes link changes. */
static void link_command(sim_run_t *run, struct sim_live *lv, int latency, const char *target,
                         const char *text)
{
    double v;
    dt_err_t err;
    if (!run->sc->live_links)
        snprintf(lv->note, sizeof lv->note,
                 "refused: this run's scenario does not take link "
                 "changes (faults.live_links = no)");
    else if (!latency &&
             (scenario_parse_bandwidth(text, &v, &err) || !scenario_simulable(SIM_Q_BANDWIDTH, v)))
        snprintf(lv->note, sizeof lv->note, "refused: \"%s\" is not a bandwidth such as 100Mbps",
                 text);
    else if (latency &&
             (scenario_parse_time(text, &v, &err) || !scenario_simulable(SIM_Q_LATENCY, v)))
        snprintf(lv->note, sizeof lv->note, "refused: \"%s\" is not a latency such as 20ms", text);
    else if (sim_fault_link_now(run, target, v, latency, text, &err))
        snprintf(lv->note, sizeof lv->note, "refused: %s", err.msg);
    else
        snprintf(lv->note, sizeof lv->note, "%s at %s from %.6g s (a faults row)", target, text,
                 sim_now());
}

/* A host change, "crash TARGET [for DURATION]" or "straggler TARGET xFACTOR [for DURATION]",
 * checked as the scenario's crash and straggler items are, applied when the scenario takes
 * host changes. */
static void host_command(sim_run_t *run, struct sim_live *lv, int crash, const char *rest)
{
    char item[200];
    sim_fault_spec_t spec;
    size_t n;
    dt_err_t err;
    /* the item as a scenario writes it, a crash at 0 s: checked by the same parser */
    size_t name = strcspn(rest, " ");
    if (crash)
        snprintf(item, sizeof item, "%.*s at 0s%s", (int)name, rest, rest + name);
    else
        snprintf(item, sizeof item, "%s", rest);
    if (sim_fault_spec_parse(crash ? SIM_FAULT_CRASH : SIM_FAULT_STRAGGLER, item, &spec, 1, &n,
                             &err)) {
        snprintf(lv->note, sizeof lv->note, "refused: %s", err.msg);
        return;
    }
    if (n != 1 || spec.at != 0) { /* "at" is now */
        snprintf(lv->note, sizeof lv->note,
                 "refused: expected crash TARGET [for DURATION] or "
                 "straggler TARGET xFACTOR [for DURATION]");
        return;
    }
    dt_status st = crash ? sim_fault_crash_now(run, spec.target, spec.until, &err)
                         : sim_fault_straggler_now(run, spec.target, spec.value, spec.until, &err);
    if (st)
        snprintf(lv->note, sizeof lv->note, "refused: %s", err.msg);
    else
        snprintf(lv->note, sizeof lv->note, "%s %s from %.6g s (a faults row)",
                 crash ? "crash of" : "straggler", spec.target, sim_now());
}

/* A change asked from the page or typed under the terminal view; lv->note says what became
 * of it. */
static void apply_command(sim_run_t *run, struct sim_live *lv, const char *line)
{
    char verb[16] = "", target[SIM_FAULT_TARGET], text[32];
    char rest[200];
    line += strspn(line, " \t");
    sscanf(line, "%15s", verb);
    int is_link = !strcmp(verb, "link"), is_latency = !strcmp(verb, "latency");
    int is_crash = !strcmp(verb, "crash"), is_straggler = !strcmp(verb, "straggler");
    if (is_link || is_latency || is_crash || is_straggler) /* the verb, then its blanks */
        line += strlen(verb) + strspn(line + strlen(verb), " \t");
    if (is_crash || is_straggler) {
        snprintf(rest, sizeof rest, "%s", line);
        rest[strcspn(rest, "\r\n")] = 0;
        host_command(run, lv, is_crash, rest);
    } else if (sscanf(line, "%63s %31s", target, text) == 2) {
        link_command(run, lv, is_latency, target, text);
    } else {
        snprintf(lv->note, sizeof lv->note,
                 "not a change: expected LINK BANDWIDTH, latency LINK "
                 "LATENCY, crash HOST or straggler HOST xFACTOR");
    }
}

/* The link change the page asked for, if any: base.cmd read, removed and applied. */
static void take_command(sim_run_t *run, struct sim_live *lv)
{
    char path[4096], line[256] = "";
    snprintf(path, sizeof path, "%s.cmd", lv->base);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    fclose(f);
    unlink(path);
    apply_command(run, lv, line);
}

/* A line typed under the terminal view (the terminal hands it over at Enter, echoed: the
 * frame is one line lower). Only when stdin is a terminal and the scenario takes changes. */
static void take_typed(sim_run_t *run, struct sim_live *lv)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    if (!(run->sc->live_links || run->sc->live_hosts) || !lv->tty_in || poll(&p, 1, 0) != 1 ||
        !(p.revents & POLLIN))
        return;
    char line[256];
    ssize_t got = read(STDIN_FILENO, line, sizeof line - 1);
    if (got <= 0) {
        lv->tty_in = 0; /* end of input: stop asking */
        return;
    }
    line[got] = '\0';
    lv->lines++;
    apply_command(run, lv, line);
}

/* What node did since the last write: the larger of its compute and comm time, idle when
 * neither took half of it. */
static const char *node_now(const sim_node_t *n, const double *cm, double dt)
{
    if (!n->alive && !n->finished)
        return "down";
    if (n->finished)
        return "done";
    double c = n->compute_s - cm[0], m = n->comm_s - cm[1];
    if (dt <= 0 || (c < 0.5 * dt && m < 0.5 * dt))
        return c > m && c > 0 ? "compute" : m > 0 ? "comm" : "idle";
    return c >= m ? "compute" : "comm";
}

static void node_json(FILE *f, const sim_node_t *n, double *cm, double now, double dt, int first)
{
    double c, m, i;
    shares(n, now, &c, &m, &i);
    fprintf(f, "%s{\"host\":", first ? "" : ",");
    char host[32];
    json_str(f, sim_node_host_name(n, host, sizeof host));
    fprintf(f, ",\"name\":");
    json_str(f, n->name);
    fprintf(f, ",\"now\":\"%s\",\"steps\":%ld", node_now(n, cm, dt), n->steps);
    json_num(f, "compute", c);
    json_num(f, "comm", m);
    json_num(f, "idle", i);
    fputc('}', f);
    cm[0] = n->compute_s;
    cm[1] = n->comm_s;
}

/* The busiest LIVE_LINKS links over the last interval, as indices, busiest first. */
static size_t busiest(const sim_run_t *run, const struct sim_live *lv, double dt, size_t *out,
                      double *use)
{
    size_t n = 0;
    for (size_t i = 0; i < lv->n_links; i++) {
        double bw = sim_record_link_bandwidth(run, i);
        double u =
            dt > 0 && bw > 0 ? (sim_record_link_bytes(run, i) - lv->link_bytes[i]) / (bw * dt) : 0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        size_t k = n < LIVE_LINKS ? n++ : LIVE_LINKS;
        if (k == LIVE_LINKS && u <= use[LIVE_LINKS - 1])
            continue;
        if (k == LIVE_LINKS)
            k = LIVE_LINKS - 1;
        while (k > 0 && use[k - 1] < u) {
            use[k] = use[k - 1];
            out[k] = out[k - 1];
            k--;
        }
        use[k] = u;
        out[k] = i;
    }
    return n;
}

static void publish(sim_run_t *run, double now, int final)
{
    struct sim_live *lv = run->live;
    const scenario_t *sc = run->sc;
    if (!final)
        take_command(run, lv);
    if (!lv->link_bytes) {
        lv->n_links = sim_record_link_count(run);
        lv->link_bytes = dt_calloc(lv->n_links + 1, sizeof(double));
    }
    double dt = now - lv->pub_sim;
    char path[4096], tmp[4096];
    snprintf(path, sizeof path, "%s.json", lv->base);
    snprintf(tmp, sizeof tmp, "%s.json.tmp", lv->base);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return; /* the page shows nothing new; the run goes on */
    long step = sc->strategy->steps_done ? sc->strategy->steps_done(run)
                : run->n_workers         ? run->workers[0].steps
                                         : 0;
    fprintf(f, "{\"run\":%lld,\"name\":", (long long)run->run_id);
    json_str(f, sc->name);
    fprintf(f, ",\"strategy\":");
    json_str(f, sc->strategy->name);
    fprintf(f,
            ",\"done\":%d,\"live_links\":%d,\"live_hosts\":%d,\"step\":%ld,\"steps\":%ld,"
            "\"evals\":%ld,\"msgs_posted\":%ld,\"msgs_recv\":%ld",
            final, sc->live_links, sc->live_hosts, step, run->total_steps, run->evals,
            sim_posted_sends(), run->msgs_recv);
    /* messages in flight on average since the last write and since the start (the count at
     * this instant says little: the view is written between steps, when a synchronous
     * strategy has none) */
    json_num(f, "in_flight", dt > 0 ? (run->msg_flight_s - lv->pub_flight) / dt : NAN);
    json_num(f, "in_flight_run", now > 0 ? run->msg_flight_s / now : NAN);
    json_num(f, "sim_time", now);
    json_num(f, "wall", dt_wall_seconds() - lv->wall0);
    json_num(f, "pace", lv->pace);
    json_num(f, "accuracy", run->timing_only || !run->evals ? NAN : run->last_acc);
    json_num(f, "loss", run->timing_only || !run->evals ? NAN : run->last_loss);
    json_num(f, "bytes", run->bytes_total);
    fprintf(f, ",\"note\":");
    json_str(f, lv->note);
    fprintf(f, ",\"nodes\":[");
    int shown = 0, n_nodes = run->n_servers + run->n_workers;
    for (int k = 0; k < n_nodes && shown < LIVE_NODES; k++, shown++) {
        sim_node_t *n = k < run->n_servers ? &run->servers[k] : &run->workers[k - run->n_servers];
        node_json(f, n, &lv->node_cm[2 * k], now, dt, k == 0);
    }
    fprintf(f, "],\"more_nodes\":%d,\"links\":[", n_nodes - shown);
    size_t top[LIVE_LINKS];
    double use[LIVE_LINKS];
    size_t n_top = busiest(run, lv, dt, top, use);
    for (size_t k = 0; k < n_top; k++) {
        fprintf(f, "%s{\"name\":", k ? "," : "");
        json_str(f, sim_record_link_name(run, top[k]));
        json_num(f, "bandwidth", sim_record_link_bandwidth(run, top[k]));
        json_num(f, "use", use[k]);
        fputc('}', f);
    }
    /* every link a teacher may change, in the platform's order (SimGrid's own loopback
     * left out) */
    fprintf(f, "],\"link_names\":[");
    for (size_t i = 0, k = 0; sc->live_links && i < lv->n_links && k < LIVE_LINK_NAMES; i++) {
        const char *name = sim_record_link_name(run, i);
        if (strncmp(name, "__", 2)) {
            fputs(k++ ? "," : "", f);
            json_str(f, name);
        }
    }
    /* every node a teacher may crash or slow */
    fprintf(f, "],\"node_names\":[");
    for (int k = 0; sc->live_hosts && k < n_nodes && k < LIVE_NODE_NAMES; k++) {
        fputs(k ? "," : "", f);
        json_str(f,
                 k < run->n_servers ? run->servers[k].name : run->workers[k - run->n_servers].name);
    }
    fprintf(f, "]}\n");
    for (size_t i = 0; i < lv->n_links; i++)
        lv->link_bytes[i] = sim_record_link_bytes(run, i);
    lv->pub_sim = now;
    lv->pub_flight = run->msg_flight_s;
    if (fclose(f) == 0)
        rename(tmp, path);
    else
        unlink(tmp);
}

void sim_live_eval(sim_run_t *run, double accuracy)
{
    struct sim_live *lv = run->live;
    if (!lv)
        return;
    lv->acc[lv->n_acc % LIVE_EVALS] = accuracy;
    lv->n_acc++;
}

/* Sleeps until the wall clock is pace behind the simulated clock, a frame at a time; a
 * signal (SIGINT) ends the pacing so that the run can stop at once. */
static void keep_pace(sim_run_t *run, struct sim_live *lv)
{
    double due = lv->wall0 + sim_now() / lv->pace;
    for (double now = dt_wall_seconds(); lv->pace > 0 && now < due; now = dt_wall_seconds()) {
        double s = fmin(due - now, SIM_LIVE_FRAME_S);
        struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
        if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
            lv->pace = 0;
        run->progress_wall += dt_wall_seconds() - now; /* waiting is not stalling */
        if (lv->term) {
            take_typed(run, lv);
            draw(run, sim_now(), 0);
        }
        lv->next_frame = dt_wall_seconds() + SIM_LIVE_FRAME_S;
        if (lv->base && dt_wall_seconds() >= lv->next_publish) {
            publish(run, sim_now(), 0);
            lv->next_publish = dt_wall_seconds() + SIM_LIVE_PUBLISH_S;
        }
    }
}

void sim_live_tick(sim_run_t *run)
{
    struct sim_live *lv = run->live;
    if (!lv)
        return;
    if (lv->pace > 0)
        keep_pace(run, lv);
    double now = dt_wall_seconds();
    if (lv->base && now >= lv->next_publish) {
        lv->next_publish = now + SIM_LIVE_PUBLISH_S;
        publish(run, sim_now(), 0);
    }
    if (!lv->term || now < lv->next_frame)
        return;
    lv->next_frame = now + SIM_LIVE_FRAME_S;
    take_typed(run, lv);
    draw(run, sim_now(), 0);
}

void sim_live_end(sim_run_t *run)
{
    struct sim_live *lv = run->live;
    if (!lv)
        return;
    if (lv->term)
        draw(run, sim_run_end_time(run), 1);
    if (lv->base) {
        /* the run's rows tell the rest: the files go */
        char path[4096];
        snprintf(path, sizeof path, "%s.json", lv->base);
        unlink(path);
        snprintf(path, sizeof path, "%s.cmd", lv->base);
        unlink(path);
    }
    free(lv->base);
    free(lv->node_cm);
    free(lv->link_bytes);
    free(lv);
    run->live = NULL;
}
