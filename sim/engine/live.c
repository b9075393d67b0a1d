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
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* Evaluations the sparkline keeps (the latest; older ones drop off the left). */
#define LIVE_EVALS 512

struct sim_live {
    double pace;       /* simulated seconds per wall second, 0: none */
    double wall0;      /* wall clock at the start */
    double next_frame; /* wall clock of the next frame */
    int lines;         /* lines of the frame on screen */
    double acc[LIVE_EVALS];
    long n_acc;        /* evaluations seen (the latest LIVE_EVALS kept, in rotation) */
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
    line(fr, "%-16.16s %-7s %7ld %6.1f%% %6.1f%% %6.1f%%  %s", sim_host_name(n->host),
         n->alive ? n->role : "down", n->steps, 100 * c, 100 * m, 100 * i, b);
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
                                         : run->n_workers ? run->workers[0].steps : 0;
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
    int room = fr.rows - 5;
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
    if (lv->lines > fr.lines)
        fputs("\033[J", fr.f); /* the previous frame was taller */
    fclose(fr.f);
    fwrite(fr.buf, 1, fr.len, stderr);
    fflush(stderr);
    free(fr.buf);
    lv->lines = fr.lines;
}

void sim_live_start(sim_run_t *run, double pace)
{
    struct sim_live *lv = dt_calloc(1, sizeof *lv);
    lv->pace = pace > 0 ? pace : 0;
    lv->wall0 = dt_wall_seconds();
    run->live = lv;
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
        draw(run, sim_now(), 0);
        lv->next_frame = dt_wall_seconds() + SIM_LIVE_FRAME_S;
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
    if (now < lv->next_frame)
        return;
    lv->next_frame = now + SIM_LIVE_FRAME_S;
    draw(run, sim_now(), 0);
}

void sim_live_end(sim_run_t *run)
{
    if (!run->live)
        return;
    draw(run, sim_run_end_time(run), 1);
    free(run->live);
    run->live = NULL;
}
