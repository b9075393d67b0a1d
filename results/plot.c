/* The figures (see plot.h): one gnuplot script per figure, built in memory, run once per
 * format by a gnuplot started without a shell.
 *
 * What keeps a hostile run name (scenario files are user input) from doing anything:
 *   - the only way text from the database enters a script is results_plot_gp_string, which
 *     writes a single-quoted literal: gnuplot expands neither backquotes nor @macros nor
 *     backslashes inside '...', and a ' inside is doubled, so the literal cannot end early;
 *     control characters are blanked, so a newline cannot start a new command;
 *   - such literals are titles, key entries and labels, never tic labels, which gnuplot
 *     reads as formats (a % would be a conversion, and the label is cut to 49 characters);
 *   - every terminal is non-enhanced, so ^ _ @ { } & in a name print as themselves;
 *   - data are numbers printed with %.10g into datablocks: no name is ever in a datablock,
 *     so no name can end one with "EOD";
 *   - gnuplot never sees a file name: its stdout is the image file, opened here. (`set output`
 *     would open a pipe to a shell for a name that starts with '|'.)
 * Skipped figures are not errors: a bandwidth figure of runs at one bandwidth says so. */
#define _POSIX_C_SOURCE 200809L
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *const figure_names[RESULTS_FIGURE_COUNT] = {
    [RESULTS_FIGURE_ACCURACY] = "accuracy",
    [RESULTS_FIGURE_ACCURACY_BYTES] = "accuracy_bytes",
    [RESULTS_FIGURE_BREAKDOWN] = "breakdown",
    [RESULTS_FIGURE_TIME_TO_TARGET] = "time_to_target",
    [RESULTS_FIGURE_SCALING] = "scaling",
    [RESULTS_FIGURE_TIMELINE] = "timeline",
    [RESULTS_FIGURE_FAULTS] = "faults",
    [RESULTS_FIGURE_PARALLELISM] = "parallelism",
};

/* Tableau 10: ten colours told apart on screen and on paper; runs beyond ten repeat a colour
 * with another dash pattern and point shape. */
#define N_COLORS 10
static const char *const palette[N_COLORS] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                              "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                              "#9c755f", "#bab0ac"};
static const int point_types[] = {7, 5, 9, 11, 13};

/* The same three colours in the breakdown and the timeline. */
static const char *const state_colors[RESULTS_STATE_COUNT] = {"#59a14f", "#4e79a7", "#cfcfcf"};
static const char *const state_titles[RESULTS_STATE_COUNT] = {"compute", "communication",
                                                              "idle"};

#define GNUPLOT "gnuplot"
#define NOT_INSTALLED "gnuplot is not installed (or not on PATH): install the package gnuplot-nox"

const char *results_figure_name(results_figure_t f)
{
    DT_ASSERT(f < RESULTS_FIGURE_COUNT);
    return figure_names[f];
}

void results_plot_out_free(results_plot_out_t *out)
{
    if (!out)
        return;
    for (int i = 0; i < out->n_files; i++)
        free(out->files[i]);
    memset(out, 0, sizeof *out);
}

/* --- strings into scripts --------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    int n;
    unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c < 0x80)
        return 1;
    else if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

char *results_plot_gp_string(const char *text)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    /* worst case: every character doubled, plus quotes, "..." and the terminator */
    size_t cap = 2 * strlen((const char *)s) + 8;
    char *out = dt_malloc(cap), *o = out;
    *o++ = '\'';
    for (int chars = 0; *s; chars++) {
        if (chars == RESULTS_PLOT_TEXT_MAX) {
            memcpy(o, "...", 3);
            o += 3;
            break;
        }
        int n = utf8_len(s);
        if (n == 0) {
            *o++ = '?';
            s++;
        } else if (n > 1) {
            memcpy(o, s, (size_t)n);
            o += n;
            s += n;
        } else {
            unsigned char c = *s++;
            if (c < 0x20 || c == 0x7f)
                *o++ = ' ';
            else if (c == '\'') {
                *o++ = '\'';
                *o++ = '\'';
            } else
                *o++ = (char)c;
        }
    }
    *o++ = '\'';
    *o = '\0';
    DT_ASSERT((size_t)(o - out) < cap);
    return out;
}

/* --- the script -------------------------------------------------------------------------- */

typedef struct gp {
    char *buf;
    size_t len;
    FILE *f;
} gp_t;

static void gp_init(gp_t *g)
{
    g->buf = NULL;
    g->len = 0;
    g->f = open_memstream(&g->buf, &g->len);
    DT_CHECK(g->f, "open_memstream: %s", strerror(errno));
}

static void gp_finish(gp_t *g)
{
    if (g->f)
        DT_CHECK(fclose(g->f) == 0, "building a gnuplot script: %s", strerror(errno));
    g->f = NULL;
}

static void gp_free(gp_t *g)
{
    gp_finish(g);
    free(g->buf);
    g->buf = NULL;
}

/* Script text; fmt and its arguments come from this file, never from the database. */
static void gp_printf(gp_t *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gp_printf(gp_t *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(g->f, fmt, ap);
    va_end(ap);
}

/* A string from the database (or built from one), as a literal. */
static void gp_text(gp_t *g, const char *text)
{
    char *s = results_plot_gp_string(text);
    fputs(s, g->f);
    free(s);
}

/* Characters text takes once quoted (what results_plot_gp_string keeps of it). */
static size_t text_width(const char *text)
{
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        n += (*s & 0xc0) != 0x80;
    return n > RESULTS_PLOT_TEXT_MAX ? RESULTS_PLOT_TEXT_MAX + 3 : n;
}

/* The terminal and the look shared by every figure. */
static void gp_header(gp_t *g, int svg, int height)
{
    gp_printf(g, "set encoding utf8\n");
    if (svg)
        gp_printf(g, "set terminal svg size 1000,%d font 'Sans,12' noenhanced "
                     "background rgb 'white'\n", height);
    else
        gp_printf(g, "set terminal pngcairo size 1000,%d font 'Sans,11' noenhanced "
                     "background rgb 'white'\n", height);
    gp_printf(g, "set termoption noenhanced\n");
    for (int i = 0; i < N_COLORS; i++)
        gp_printf(g, "set linetype %d lc rgb '%s' lw 2 pt 7 ps 0.8\n", i + 1, palette[i]);
    gp_printf(g, "set linetype cycle %d\n"
                 "set grid back lc rgb '#e4e4e4' lw 1\n"
                 "set border 3 back lc rgb '#555555'\n"
                 "set tics nomirror\n"
                 "set key outside right top Left reverse spacing 1.2 samplen 2.5 width 1\n"
                 "set title font ',13'\n",
              N_COLORS);
}

/* Line style of the i-th curve: colour, dash and point shape. */
static void gp_curve_style(gp_t *g, size_t i)
{
    size_t round = i / N_COLORS;
    gp_printf(g, "lt %zu dt %zu pt %d", i % N_COLORS + 1, round % 5 + 1,
              point_types[round % (sizeof point_types / sizeof point_types[0])]);
}

/* --- running gnuplot ------------------------------------------------------------------------ */

static dt_status spawn_error(int rc, dt_err_t *err)
{
    if (rc == ENOENT)
        return dt_err_input(err, NOT_INSTALLED);
    return dt_err_input(err, "cannot start gnuplot: %s", strerror(rc));
}

dt_status results_plot_gnuplot_check(dt_err_t *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {GNUPLOT, "--version", NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, GNUPLOT, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return spawn_error(rc, err);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        DT_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return dt_err_input(err, "gnuplot --version failed (exit status %d): reinstall the "
                                 "package gnuplot-nox",
                            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return DT_OK;
}

/* Writes all of buf to fd; a reader that went away (EPIPE) is reported, not a SIGPIPE that
 * would kill this process: the signal is blocked while writing and a pending one consumed. */
static int write_all_nosigpipe(int fd, const char *buf, size_t len)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    int rc = 0;
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = errno;
            break;
        }
        buf += w;
        len -= (size_t)w;
    }
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* The first line of what gnuplot wrote on stderr, blanks for control characters. */
static void first_error_line(FILE *f, char *buf, size_t n)
{
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    char *p = buf;
    while (*p == '\n' || *p == ' ' || *p == '\t')
        p++;
    memmove(buf, p, strlen(p) + 1);
    char *nl = strchr(buf, '\n');
    if (nl) {
        /* gnuplot puts the offending line first and the message on the next one */
        char *second = strchr(nl + 1, '\n');
        if (second)
            *second = '\0';
    }
    for (p = buf; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
}

/* Runs gnuplot on script; its stdout becomes path (through a temporary name in the same
 * directory, renamed on success). */
static dt_status gp_run(const char *script, size_t len, const char *path, dt_err_t *err)
{
    size_t pl = strlen(path);
    char *tmp = dt_malloc(pl + 64);
    int out_fd = -1;
    for (int attempt = 0; out_fd < 0; attempt++) {
        snprintf(tmp, pl + 64, "%s.tmp-%ld-%d", path, (long)getpid(), attempt);
        out_fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (out_fd < 0 && (errno != EEXIST || attempt == 100)) {
            dt_status st = dt_err_input(err, "%s: %s", tmp, strerror(errno));
            free(tmp);
            return st;
        }
    }
    FILE *errf = tmpfile();
    DT_CHECK(errf, "tmpfile: %s", strerror(errno));
    int p[2];
    DT_CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
    DT_CHECK(fcntl(p[1], F_SETFD, FD_CLOEXEC) == 0, "fcntl: %s", strerror(errno));

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fileno(errf), 2);
    char *argv[] = {GNUPLOT, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, GNUPLOT, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[0]);
    close(out_fd);

    dt_status st = DT_OK;
    if (rc != 0) {
        close(p[1]);
        st = spawn_error(rc, err);
        goto done;
    }
    int werr = write_all_nosigpipe(p[1], script, len);
    close(p[1]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        DT_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    struct stat sb;
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && werr == 0 &&
             stat(tmp, &sb) == 0 && sb.st_size > 0;
    if (!ok) {
        char msg[320];
        first_error_line(errf, msg, sizeof msg);
        if (!msg[0])
            snprintf(msg, sizeof msg, "exit status %d, no message",
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (err)
            snprintf(err->msg, sizeof err->msg, "gnuplot failed drawing %s: %s", path, msg);
        st = DT_ERR_RUN;
    } else if (rename(tmp, path) != 0) {
        st = dt_err_input(err, "%s: %s", path, strerror(errno));
    }
done:
    if (st != DT_OK)
        unlink(tmp);
    fclose(errf);
    free(tmp);
    return st;
}

/* --- what the figures share ------------------------------------------------------------- */

typedef struct fig {
    results_query_t *q;
    const results_runs_t *runs;
    const results_plot_opts_t *o;
    char *prefix;  /* the name prefix every run shares, or NULL (common_prefix) */
    char **labels; /* a legend label per run (run_labels) */
    gp_t body;     /* everything after the header */
    int drawn;     /* 0: skipped, the reason in note */
    int size_h;    /* image height when not the default */
    char *note;
    size_t note_size;
} fig_t;

static void fig_note(fig_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fig_note(fig_t *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->note, f->note_size, fmt, ap);
    va_end(ap);
}

/* The "NAME/" that every run name starts with (a sweep names its runs NAME/key=value,...),
 * malloc'ed without the '/', or NULL. */
static char *common_prefix(const results_runs_t *runs)
{
    if (runs->n < 2)
        return NULL;
    const char *slash = strchr(runs->v[0].name, '/');
    if (!slash || slash == runs->v[0].name)
        return NULL;
    size_t len = (size_t)(slash - runs->v[0].name);
    for (size_t i = 1; i < runs->n; i++)
        if (strncmp(runs->v[i].name, runs->v[0].name, len + 1) != 0)
            return NULL;
    char *p = dt_malloc(len + 1);
    memcpy(p, runs->v[0].name, len);
    p[len] = '\0';
    return p;
}

/* Splits "k=v,k=v,..." (a sweep run's name without its prefix) into at most max parts at
 * the commas that start a "key=" (a value may hold commas: hidden=256,128). Returns the
 * count, 0 when the text is not of that form. parts[i] point into buf. */
static int split_kv(char *buf, char **parts, int max)
{
    int n = 0;
    char *p = buf;
    while (*p && n < max) {
        char *eq = p;
        while ((*eq >= 'a' && *eq <= 'z') || *eq == '_' || *eq == '.')
            eq++;
        if (eq == p || *eq != '=')
            return 0;
        parts[n++] = p;
        char *next = NULL;
        for (char *c = strchr(eq, ','); c && !next; c = strchr(c + 1, ',')) {
            char *k = c + 1;
            while ((*k >= 'a' && *k <= 'z') || *k == '_' || *k == '.')
                k++;
            if (k > c + 1 && *k == '=')
                next = c;
        }
        if (!next)
            return *p ? n : 0;
        *next = '\0';
        p = next + 1;
    }
    return *p ? 0 : n;
}

#define LABEL_KEYS 16

/* Sweep run names list every swept key (NAME/kind=sync-ps,platform=star,...,bandwidth=1Gbps).
 * For a legend, keep the values of as few keys as still tell the runs apart: each key in
 * turn is dropped when the runs stay distinct without it (keys that only follow others,
 * like a platform tied to a strategy, go), and the values are joined by blanks:
 * "sync-ps iid 1Gbps". Returns 0 (labels untouched) when the names are not of that form. */
static int shorten_labels(char **labels, size_t n)
{
    if (n < 2)
        return 0;
    char **bufs = dt_calloc(n, sizeof *bufs);
    char *(*parts)[LABEL_KEYS] = dt_calloc(n, sizeof *parts);
    int k = -1, ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        bufs[i] = dt_malloc(strlen(labels[i]) + 1);
        strcpy(bufs[i], labels[i]);
        int c = split_kv(bufs[i], parts[i], LABEL_KEYS);
        ok = c > 0 && (k < 0 || c == k);
        k = c;
        for (int j = 0; ok && j < c; j++) /* the same keys in the same order */
            ok = strncmp(parts[i][j], parts[0][j], strcspn(parts[0][j], "=") + 1) == 0;
    }
    int keep[LABEL_KEYS];
    if (ok) {
        for (int j = 0; j < k; j++)
            keep[j] = 1;
        for (int j = 0; j < k; j++) {
            keep[j] = 0;
            int distinct = 1;
            for (size_t a = 0; a < n && distinct; a++)
                for (size_t b = a + 1; b < n && distinct; b++) {
                    int same = 1;
                    for (int m = 0; m < k && same; m++)
                        same = !keep[m] || !strcmp(parts[a][m], parts[b][m]);
                    distinct = !same;
                }
            keep[j] = !distinct;
        }
        for (size_t i = 0; i < n; i++) {
            size_t len = 0, cap = strlen(labels[i]) + 1;
            char *out = dt_malloc(cap);
            out[0] = '\0';
            for (int j = 0; j < k; j++)
                if (keep[j])
                    len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? " " : "",
                                            strchr(parts[i][j], '=') + 1);
            free(labels[i]);
            labels[i] = out;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(parts);
    return ok;
}

/* A legend label per run: its name less the common prefix (shortened as above for sweep
 * runs), with its id where names repeat (or "run ID" for a run without a name). */
static char **run_labels(const results_runs_t *runs, const char *prefix)
{
    size_t skip = prefix ? strlen(prefix) + 1 : 0;
    char **labels = dt_calloc(runs->n ? runs->n : 1, sizeof *labels);
    int repeats = 0;
    for (size_t i = 0; i < runs->n; i++)
        for (size_t j = i + 1; j < runs->n; j++)
            repeats |= strcmp(runs->v[j].name, runs->v[i].name) == 0;
    for (size_t i = 0; i < runs->n; i++) {
        const char *name = runs->v[i].name + skip;
        labels[i] = dt_malloc(strlen(name) + 1);
        strcpy(labels[i], name);
    }
    if (prefix && !repeats)
        shorten_labels(labels, runs->n);
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        int repeated = 0;
        for (size_t j = 0; j < runs->n && !repeated; j++)
            repeated = j != i && strcmp(runs->v[j].name, r->name) == 0;
        size_t n = strlen(labels[i]) + 32;
        char *l = dt_malloc(n);
        if (labels[i][0] == '\0')
            snprintf(l, n, "run %lld", (long long)r->id);
        else if (repeated)
            snprintf(l, n, "%s (run %lld)", labels[i], (long long)r->id);
        else
            snprintf(l, n, "%s", labels[i]);
        free(labels[i]);
        labels[i] = l;
    }
    return labels;
}

/* set title: fixed text (from this file: in double quotes, so \n starts a line), then, when
 * the runs share a name prefix, that prefix as a literal. */
static void gp_title(fig_t *f, const char *fixed)
{
    gp_printf(&f->body, "set title \"%s\"", fixed);
    if (f->prefix) {
        char *runs_of = dt_malloc(strlen(f->prefix) + 16);
        sprintf(runs_of, ": %s/...", f->prefix);
        gp_printf(&f->body, " . ");
        gp_text(&f->body, runs_of);
        free(runs_of);
    }
    gp_printf(&f->body, "\n");
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v and keeps one of each value (equal to 1e-9 relative); returns how many remain. */
static size_t distinct(double *v, size_t n)
{
    qsort(v, n, sizeof *v, dbl_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || fabs(v[i] - v[k - 1]) > 1e-9 * fabs(v[i]))
            v[k++] = v[i];
    return k;
}

static double gbps(double bytes_per_s)
{
    return bytes_per_s * 8 / 1e9;
}

/* A curve per group of runs (time to target, scaling): the runs whose key text is equal. */
typedef struct group {
    char *key;
    size_t *members; /* indices into runs, sorted by x */
    size_t n;
} group_t;

typedef struct groups {
    group_t *v;
    size_t n;
} groups_t;

static void groups_add(groups_t *g, const char *key, size_t member)
{
    size_t i = 0;
    while (i < g->n && strcmp(g->v[i].key, key) != 0)
        i++;
    if (i == g->n) {
        g->v = realloc(g->v, (g->n + 1) * sizeof *g->v);
        DT_CHECK(g->v, "out of memory");
        size_t kl = strlen(key) + 1;
        g->v[i].key = dt_malloc(kl);
        memcpy(g->v[i].key, key, kl);
        g->v[i].members = NULL;
        g->v[i].n = 0;
        g->n++;
    }
    group_t *gr = &g->v[i];
    gr->members = realloc(gr->members, (gr->n + 1) * sizeof *gr->members);
    DT_CHECK(gr->members, "out of memory");
    gr->members[gr->n++] = member;
}

static void groups_free(groups_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->v[i].key);
        free(g->v[i].members);
    }
    free(g->v);
    g->v = NULL;
    g->n = 0;
}

/* Sorts each group's members by xs[member]. */
static void groups_sort(groups_t *g, const double *xs)
{
    for (size_t i = 0; i < g->n; i++) {
        size_t *m = g->v[i].members;
        for (size_t a = 1; a < g->v[i].n; a++)
            for (size_t b = a; b > 0 && xs[m[b - 1]] > xs[m[b]]; b--) {
                size_t t = m[b];
                m[b] = m[b - 1];
                m[b - 1] = t;
            }
    }
}

/* "set xtics (1, 10, 100)" at the values themselves. */
static void gp_tics_at(gp_t *g, const char *axis, const double *v, size_t n)
{
    gp_printf(g, "set %stics (", axis);
    for (size_t i = 0; i < n; i++)
        gp_printf(g, "%s%.10g", i ? ", " : "", v[i]);
    gp_printf(g, ")\nset format %s '%%g'\n", axis);
}

/* --- 1, 2: accuracy vs simulated time, vs bytes --------------------------------------------- */

static dt_status fig_accuracy(fig_t *f, int by_bytes, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    results_evals_t *ev = dt_calloc(runs->n ? runs->n : 1, sizeof *ev);
    dt_status st = DT_OK;
    int *has_points = dt_calloc(runs->n ? runs->n : 1, sizeof *has_points);
    size_t with_points = 0, left_out = 0;
    double xmax = 0, end_min = INFINITY, end_max = 0, xpos_min = INFINITY;
    for (size_t i = 0; i < runs->n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &ev[i], err)) != DT_OK)
            goto done;
        double end = -1;
        for (size_t k = 0; k < ev[i].n; k++) {
            double x = by_bytes ? ev[i].bytes[k] : ev[i].sim_time[k];
            if (isfinite(x) && isfinite(ev[i].test_acc[k]))
                end = x > end ? x : end;
        }
        if (end < 0) {
            left_out++;
            continue;
        }
        with_points++;
        has_points[i] = 1;
        xmax = end > xmax ? end : xmax;
        if (end > 0) {
            end_min = end < end_min ? end : end_min;
            end_max = end > end_max ? end : end_max;
        }
        for (size_t k = 0; k < ev[i].n; k++) {
            double x = by_bytes ? ev[i].bytes[k] : ev[i].sim_time[k];
            if (isfinite(x) && isfinite(ev[i].test_acc[k]) && x > 0)
                xpos_min = x < xpos_min ? x : xpos_min;
        }
    }
    if (with_points == 0) {
        fig_note(f, "none of the selected runs has an evaluation with a test accuracy");
        goto done;
    }
    /* Runs ten times faster than others are lost against a linear time axis. */
    int logx = !by_bytes && end_max > 30 * end_min;
    double div = 1;
    const char *unit = "s";
    if (by_bytes) {
        div = xmax >= 1e9 ? 1e9 : 1e6;
        unit = xmax >= 1e9 ? "GB, 10^9 bytes" : "MB, 10^6 bytes";
    }
    gp_t *g = &f->body;
    for (size_t i = 0; i < runs->n; i++) {
        if (!has_points[i])
            continue;
        gp_printf(g, "$run%zu << EOD\n", i);
        for (size_t k = 0; k < ev[i].n; k++) {
            double x = by_bytes ? ev[i].bytes[k] : ev[i].sim_time[k];
            if (isfinite(x) && isfinite(ev[i].test_acc[k]) && (!logx || x > 0))
                gp_printf(g, "%.10g %.10g\n", x / div, 100 * ev[i].test_acc[k]);
        }
        gp_printf(g, "EOD\n");
    }
    if (by_bytes) {
        gp_title(f, "Test accuracy vs data sent");
        gp_printf(g, "set xlabel 'data sent by all hosts (%s)'\n", unit);
    } else {
        gp_title(f, "Test accuracy vs simulated time");
        gp_printf(g, "set xlabel 'simulated time (s%s)'\n", logx ? ", log scale" : "");
        if (logx)
            gp_printf(g, "set logscale x\n");
    }
    if (logx) /* the decades the data span, not the whole decades around them */
        gp_printf(g, "set xrange [%.10g:%.10g]\n", xpos_min / 1.25, xmax * 1.25);
    else
        gp_printf(g, "set xrange [0:*]\n");
    /* Long names would squeeze the plot from the right: their key goes under it. */
    size_t longest = 0;
    for (size_t i = 0; i < runs->n; i++) {
        size_t w = has_points[i] ? text_width(f->labels[i]) : 0;
        longest = w > longest ? w : longest;
    }
    size_t curves = with_points;
    if (longest > 36 && curves <= 8)
        gp_printf(g, "set key outside bottom center Left reverse\n");
    if (curves > 12)
        gp_printf(g, "set key font ',9' spacing 1\n");
    gp_printf(g, "set ylabel 'test accuracy (%%)'\nplot ");
    int first = 1;
    for (size_t i = 0; i < runs->n; i++) {
        if (!has_points[i])
            continue;
        gp_printf(g, "%s$run%zu using 1:2 with linespoints ", first ? "" : ", \\\n     ", i);
        gp_curve_style(g, i);
        gp_printf(g, " ps 0.6 title ");
        gp_text(g, f->labels[i]);
        first = 0;
    }
    gp_printf(g, "\n");
    f->drawn = 1;
    if (left_out)
        fig_note(f, "leaves out %zu run%s without evaluations", left_out,
                 left_out == 1 ? "" : "s");
done:
    for (size_t i = 0; i < runs->n; i++)
        results_evals_free(&ev[i]);
    free(ev);
    free(has_points);
    return st;
}

/* --- 3: compute / communication / idle shares --------------------------------------------- */

static void fig_breakdown(fig_t *f)
{
    const results_runs_t *runs = f->runs;
    size_t *shown = dt_calloc(runs->n ? runs->n : 1, sizeof *shown);
    size_t n = 0, longest = 0;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (r->has_summary && isfinite(r->compute_share) && isfinite(r->comm_share) &&
            isfinite(r->idle_share)) {
            shown[n++] = i;
            size_t l = text_width(f->labels[i]);
            longest = l > longest ? l : longest;
        }
    }
    if (n == 0) {
        fig_note(f, "none of the selected runs has a summary with time shares");
        free(shown);
        return;
    }
    gp_t *g = &f->body;
    /* Segment k of bar b spans [sum of shares before k, + share k], in percent. */
    for (int s = 0; s < RESULTS_STATE_COUNT; s++) {
        gp_printf(g, "$state%d << EOD\n", s);
        for (size_t b = 0; b < n; b++) {
            const results_run_view_t *r = &runs->v[shown[b]];
            double sh[3] = {r->compute_share, r->comm_share, r->idle_share};
            double lo = 0;
            for (int k = 0; k < s; k++)
                lo += 100 * sh[k];
            double hi = lo + 100 * sh[s];
            /* x y xlow xhigh ylow yhigh share */
            gp_printf(g, "%zu %.10g %.10g %.10g %.10g %.10g %.10g\n", b, (lo + hi) / 2,
                      b - 0.35, b + 0.35, lo, hi, 100 * sh[s]);
        }
        gp_printf(g, "EOD\n");
    }
    gp_title(f, "Where the time goes: compute, communication and idle share of each run");
    gp_printf(g, "set ylabel 'share of the summed time of all hosts (%%)'\n"
                 "set yrange [0:100]\nset xrange [-0.6:%.1f]\n"
                 "set grid noxtics\n",
              n - 0.4);
    /* Run names are labels under the bars, not tic labels: gnuplot reads a tic label as a
     * format, and cuts one that holds a % to 49 characters. Long names are slanted; the
     * first one then needs room on the left. */
    int slant = n > 6 || longest > 14;
    if (slant)
        gp_printf(g, "set lmargin %d\nset bmargin %d\n", 6 + (int)(0.5 * (double)longest),
                  3 + (int)longest / 5);
    else
        gp_printf(g, "set bmargin 3\n");
    gp_printf(g, "set format x ''\nset xtics (");
    for (size_t b = 0; b < n; b++)
        gp_printf(g, "%s%zu", b ? ", " : "", b);
    gp_printf(g, ")\n");
    for (size_t b = 0; b < n; b++) {
        gp_printf(g, "set label %zu ", b + 1);
        gp_text(g, f->labels[shown[b]]);
        gp_printf(g, " at first %zu, graph 0 %s tc rgb '#333333'\n", b,
                  slant ? "right rotate by 25 offset 1,-1" : "center offset 0,-1");
    }
    gp_printf(g, "plot ");
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, "%s$state%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                     "lc rgb 'white' lc rgb '%s' title '%s'",
                  s ? ", \\\n     " : "", s, state_colors[s], state_titles[s]);
    /* The percentages inside segments big enough to hold them. */
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, ", \\\n     $state%d using 1:2:($7 >= 6 ? sprintf('%%.0f%%%%', $7) : '') "
                     "with labels tc rgb '%s' notitle",
                  s, s == RESULTS_STATE_IDLE ? "#333333" : "white");
    gp_printf(g, "\n");
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f, "leaves out %zu run%s without a summary", runs->n - n,
                 runs->n - n == 1 ? "" : "s");
    free(shown);
}

/* --- 4: time to target accuracy vs bandwidth ---------------------------------------------- */

static int reached_target(const results_run_view_t *r)
{
    return r->has_summary && isfinite(r->time_to_target) && r->time_to_target > 0;
}

static void fig_time_to_target(fig_t *f)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1;
    double *x = dt_calloc(n, sizeof *x);    /* Gb/s of each run, NAN: not drawn */
    double *bws = dt_calloc(n, sizeof *bws); /* the candidates' bandwidths, then distinct */
    double *ws = dt_calloc(n, sizeof *ws);   /* worker counts of the runs drawn, distinct */
    size_t nc = 0, reached = 0;
    groups_t groups = {0};
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        x[i] = gbps(r->bandwidth);
        if (!r->has_summary || !(isfinite(x[i]) && x[i] > 0)) {
            x[i] = NAN;
            continue;
        }
        bws[nc++] = x[i];
        if (reached_target(r))
            ws[reached++] = results_run_view_workers(r);
    }
    size_t nbw = distinct(bws, nc);
    if (nbw < 2) {
        if (nc == 0)
            fig_note(f, "none of the selected runs has a summary and a cluster.bandwidth");
        else
            fig_note(f, "the selected runs do not vary cluster.bandwidth (all at %g Gb/s)",
                     bws[0]);
        goto done;
    }
    if (reached == 0) {
        fig_note(f, "none of the selected runs reached its target accuracy");
        goto done;
    }
    /* Runs at several worker counts make several curves per strategy. */
    size_t nw = distinct(ws, reached);
    double target = NAN;
    int one_target = 1;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (isnan(x[i]) || !reached_target(r))
            continue;
        if (isnan(target))
            target = r->target_accuracy;
        else if (!(r->target_accuracy == target))
            one_target = 0;
        char key[300];
        if (nw > 1)
            snprintf(key, sizeof key, "%.200s, %g worker%s", r->strategy,
                     results_run_view_workers(r), results_run_view_workers(r) == 1 ? "" : "s");
        else
            snprintf(key, sizeof key, "%.200s", r->strategy);
        groups_add(&groups, key, i);
    }
    groups_sort(&groups, x);

    gp_t *g = &f->body;
    double tmin = INFINITY, tmax = 0;
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "$group%zu << EOD\n", gi);
        for (size_t m = 0; m < groups.v[gi].n; m++) {
            size_t i = groups.v[gi].members[m];
            double t = runs->v[i].time_to_target;
            gp_printf(g, "%.10g %.10g\n", x[i], t);
            tmin = t < tmin ? t : tmin;
            tmax = t > tmax ? t : tmax;
        }
        gp_printf(g, "EOD\n");
    }
    /* Fixed text and numbers only: a double-quoted title may hold a \n. */
    char what[64];
    if (one_target && isfinite(target))
        snprintf(what, sizeof what, "%g%% test accuracy", 100 * target);
    else
        snprintf(what, sizeof what, "each run's target accuracy");
    size_t never = nc - reached;
    gp_printf(g, "set title \"Simulated time to reach %s vs link bandwidth", what);
    if (never)
        gp_printf(g, "\\n(%zu run%s that never reached it left out)", never,
                  never == 1 ? "" : "s");
    gp_printf(g, "\"\n");
    int logy = tmax > 30 * tmin;
    gp_printf(g, "set logscale x\nset xrange [%.10g:%.10g]\n", bws[0] / 1.5,
              bws[nbw - 1] * 1.5);
    gp_tics_at(g, "x", bws, nbw);
    gp_printf(g, "set xlabel 'link bandwidth (Gb/s, log scale)'\n"
                 "set ylabel 'simulated time to target (s%s)'\n%s",
              logy ? ", log scale" : "", logy ? "set logscale y\n" : "set yrange [0:*]\n");
    if (logy)
        gp_printf(g, "set yrange [%.10g:%.10g]\n", tmin / 1.5, tmax * 1.5);
    gp_printf(g, "plot ");
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, "\n");
    f->drawn = 1;
    if (never)
        fig_note(f, "leaves out %zu run%s that never reached the target accuracy", never,
                 never == 1 ? "" : "s");
done:
    groups_free(&groups);
    free(x);
    free(bws);
    free(ws);
}

/* --- 5: scaling efficiency vs workers ------------------------------------------------------- */

static void fig_scaling(fig_t *f)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n ? runs->n : 1;
    double *x = dt_calloc(n, sizeof *x);    /* workers of each run, NAN: not drawn */
    double *ws = dt_calloc(n, sizeof *ws);   /* the candidates' worker counts, distinct */
    double *bws = dt_calloc(n, sizeof *bws); /* bandwidths of the runs drawn, distinct */
    size_t nc = 0, with_eff = 0;
    groups_t groups = {0};
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        x[i] = results_run_view_workers(r);
        if (!r->has_summary || !(isfinite(x[i]) && x[i] > 0)) {
            x[i] = NAN;
            continue;
        }
        ws[nc++] = x[i];
        with_eff += isfinite(r->scaling_efficiency);
    }
    size_t nw = distinct(ws, nc);
    if (nw < 2) {
        if (nc == 0)
            fig_note(f, "none of the selected runs has a summary and a worker count");
        else
            fig_note(f, "the selected runs do not vary cluster.workers (all at %g)", ws[0]);
        goto done;
    }
    if (with_eff == 0) {
        fig_note(f, "no scaling efficiency to draw: the sweep of the selected runs has no "
                    "finished single-worker run (strategy single) to compare with");
        goto done;
    }
    size_t nbw = 0;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (!isnan(x[i]) && isfinite(r->scaling_efficiency) && isfinite(r->bandwidth) &&
            strcmp(r->strategy, "single") != 0)
            bws[nbw++] = r->bandwidth;
    }
    nbw = distinct(bws, nbw);
    double emax = 1;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (isnan(x[i]) || !isfinite(r->scaling_efficiency))
            continue;
        char key[300];
        if (strcmp(r->strategy, "single") == 0)
            snprintf(key, sizeof key, "single (the baseline)");
        else if (nbw > 1 && isfinite(r->bandwidth))
            snprintf(key, sizeof key, "%.200s, %g Gb/s", r->strategy, gbps(r->bandwidth));
        else
            snprintf(key, sizeof key, "%.200s", r->strategy);
        groups_add(&groups, key, i);
        emax = r->scaling_efficiency > emax ? r->scaling_efficiency : emax;
    }
    groups_sort(&groups, x);

    gp_t *g = &f->body;
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "$group%zu << EOD\n", gi);
        for (size_t m = 0; m < groups.v[gi].n; m++) {
            size_t i = groups.v[gi].members[m];
            gp_printf(g, "%.10g %.10g\n", x[i], runs->v[i].scaling_efficiency);
        }
        gp_printf(g, "EOD\n");
    }
    /* two panels, one above the other: speedup (efficiency x workers) against the ideal
     * speedup = workers, then the efficiency against the ideal 1 */
    double smax = 1;
    for (size_t i = 0; i < runs->n; i++)
        if (!isnan(x[i]) && isfinite(runs->v[i].scaling_efficiency) &&
            runs->v[i].scaling_efficiency * x[i] > smax)
            smax = runs->v[i].scaling_efficiency * x[i];
    if (ws[nw - 1] > smax)
        smax = ws[nw - 1];
    gp_printf(g, "set multiplot layout 2,1\n"
                 "set logscale x 2\nset xrange [%.10g:%.10g]\n",
              ws[0] / 1.3, ws[nw - 1] * 1.3);
    gp_tics_at(g, "x", ws, nw);
    gp_printf(g, "set title 'Speedup vs number of workers (throughput / single-worker "
                 "throughput)'\n"
                 "set xlabel 'workers (log scale)'\n"
                 "set ylabel 'speedup (log scale)'\n"
                 "set logscale y 2\nset yrange [%.10g:%.10g]\nplot ",
              ws[0] / 1.3 < 1 ? ws[0] / 1.3 : 0.5, smax * 1.3);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:($1*$2) with linespoints ", gi ? ", \\\n     " : "",
                  gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     x with lines lc rgb '#333333' dt 2 lw 1.5 title "
                 "'ideal (speedup = workers)'\n");
    gp_printf(g, "unset logscale y\n"
                 "set title 'Scaling efficiency vs number of workers (speedup / workers)'\n"
                 "set ylabel 'scaling efficiency'\n"
                 "set yrange [0:%.10g]\nplot ",
              emax * 1.15);
    for (size_t gi = 0; gi < groups.n; gi++) {
        gp_printf(g, "%s$group%zu using 1:2 with linespoints ", gi ? ", \\\n     " : "", gi);
        gp_curve_style(g, gi);
        gp_printf(g, " ps 1.1 title ");
        gp_text(g, groups.v[gi].key);
    }
    gp_printf(g, ", \\\n     1 with lines lc rgb '#333333' dt 2 lw 1.5 title 'ideal (1)'\n"
                 "unset multiplot\n");
    f->size_h = 1000;
    f->drawn = 1;
    if (with_eff < nc)
        fig_note(f, "leaves out %zu run%s without a scaling efficiency (not in a sweep with a "
                    "finished single run)",
                 nc - with_eff, nc - with_eff == 1 ? "" : "s");
done:
    groups_free(&groups);
    free(x);
    free(ws);
    free(bws);
}

/* --- 6: per-host timeline of one run ----------------------------------------------------- */

static dt_status fig_timeline(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    results_timeline_t t = {0};
    results_run_view_t own = {0};
    const char *name = NULL;
    int64_t id = f->o->timeline_run;
    dt_status st = DT_OK;
    if (id > 0) {
        if ((st = results_query_run(f->q, id, &own, err)) != DT_OK)
            return st;
        name = own.name;
        if ((st = results_query_timeline(f->q, id, &t, err)) != DT_OK)
            goto done;
        if (t.n == 0) {
            fig_note(f, "run %lld has no timeline rows", (long long)id);
            goto done;
        }
    } else {
        /* the run whose hosts compute the largest share of the time: where computing,
         * sending and waiting all show (in a run that only communicates, the compute boxes
         * are too thin to see) */
        size_t n = runs->n;
        char *tried = dt_calloc(n ? n : 1, 1);
        for (size_t round = 0; round < n && t.n == 0; round++) {
            size_t best = n;
            for (size_t i = 0; i < n; i++)
                if (!tried[i] && (best == n || runs->v[i].compute_share > runs->v[best].compute_share ||
                                  (isnan(runs->v[best].compute_share) &&
                                   !isnan(runs->v[i].compute_share))))
                    best = i;
            tried[best] = 1;
            results_timeline_free(&t);
            if ((st = results_query_timeline(f->q, runs->v[best].id, &t, err)) != DT_OK) {
                free(tried);
                goto done;
            }
            id = runs->v[best].id;
            name = runs->v[best].name;
        }
        free(tried);
        if (t.n == 0) {
            fig_note(f, "none of the selected runs has timeline rows");
            goto done;
        }
    }
    double t0 = INFINITY, t1 = -INFINITY;
    for (size_t k = 0; k < t.n; k++) {
        t0 = t.iv[k].start < t0 ? t.iv[k].start : t0;
        t1 = t.iv[k].end > t1 ? t.iv[k].end : t1;
    }
    double span = t1 > 0 ? t1 : 1;
    double div = span >= 1 ? 1 : span >= 1e-3 ? 1e-3 : 1e-6;
    const char *unit = span >= 1 ? "s" : span >= 1e-3 ? "ms" : "us";

    gp_t *g = &f->body;
    /* One box per stretch of a state: intervals of a lane (which come in start order) that
     * touch, or are apart by less than a quarter of a pixel, are merged. A gap that narrow
     * cannot be seen, but would leave an anti-aliased seam in a long box. */
    double bridge = (t1 - (t0 < 0 ? t0 : 0)) / 4000;
    for (int s = 0; s < RESULTS_STATE_COUNT; s++) {
        gp_printf(g, "$state%d << EOD\n", s);
        size_t lane = 0;
        double lo = 0, hi = -1; /* the pending box; none while hi < lo */
        for (size_t k = 0; k <= t.n; k++) {
            const results_interval_t *iv = k < t.n ? &t.iv[k] : NULL;
            if (iv && ((int)iv->state != s || !(iv->end >= iv->start)))
                continue;
            if (iv && hi >= lo && iv->lane == lane && iv->start <= hi + bridge) {
                hi = iv->end > hi ? iv->end : hi;
                continue;
            }
            if (hi >= lo) /* x y xlow xhigh ylow yhigh */
                gp_printf(g, "%.10g %zu %.10g %.10g %.10g %.10g\n", (lo + hi) / 2 / div, lane,
                          lo / div, hi / div, lane - 0.38, lane + 0.38);
            if (iv) {
                lane = iv->lane;
                lo = iv->start;
                hi = iv->end;
            }
        }
        gp_printf(g, "EOD\n");
    }
    gp_printf(g, "set title 'Timeline of ' . ");
    gp_text(g, name);
    /* fixed text in double quotes, for its \n */
    gp_printf(g, " . \" (run %lld)\\nwhen each host computes, communicates and waits\"\n",
              (long long)id);
    /* Lane names are labels left of the lanes, not tic labels (see fig_breakdown). */
    size_t every = (t.n_lanes + 39) / 40; /* at most 40 names */
    char **lane = dt_calloc(t.n_lanes, sizeof *lane);
    size_t widest = 0;
    for (size_t l = 0; l < t.n_lanes; l += every) {
        lane[l] = dt_malloc(300);
        snprintf(lane[l], 300, "%.100s %d (%.100s)", t.lanes[l].role, t.lanes[l].rank,
                 t.lanes[l].host);
        size_t w = text_width(lane[l]);
        widest = w > widest ? w : widest;
    }
    gp_printf(g, "set xlabel 'simulated time (%s)'\nset xrange [%.10g:%.10g]\n"
                 "set yrange [%.1f:-0.5]\nset grid xtics noytics\nset lmargin %d\n"
                 "set format y ''\nset ytics (",
              unit, (t0 < 0 ? t0 : 0) / div, t1 / div, t.n_lanes - 0.5,
              4 + (int)widest);
    for (size_t l = 0; l < t.n_lanes; l += every)
        gp_printf(g, "%s%zu", l ? ", " : "", l);
    gp_printf(g, ")\n");
    for (size_t l = 0; l < t.n_lanes; l += every) {
        gp_printf(g, "set label %zu ", l + 1);
        gp_text(g, lane[l]);
        gp_printf(g, " at graph 0, first %zu right offset -1,0 tc rgb '#333333'\n", l);
        free(lane[l]);
    }
    free(lane);
    /* Idle at the bottom, compute on top: the thinnest, most telling boxes stay visible.
     * The key lists the states in their usual order. */
    gp_printf(g, "plot ");
    for (int s = RESULTS_STATE_COUNT - 1; s >= 0; s--)
        gp_printf(g, "$state%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 noborder "
                     "lc rgb '%s' notitle, \\\n     ",
                  s, state_colors[s]);
    for (int s = 0; s < RESULTS_STATE_COUNT; s++)
        gp_printf(g, "%skeyentry with boxxyerror fs solid 1.0 lc rgb '%s' title '%s'",
                  s ? ", " : "", state_colors[s], state_titles[s]);
    gp_printf(g, "\n");
    f->drawn = 1;
    fig_note(f, "timeline of run %lld", (long long)id);
done:
    results_timeline_free(&t);
    results_run_view_free(&own);
    return st;
}

/* --- drawing ------------------------------------------------------------------------------- */


/* --- 7: accuracy with and without faults ---------------------------------------------------- */

#define FAULT_PANELS 6

/* A panel per strategy (the runs with faults in red next to those without), host and link
 * faults drawn as vertical lines: red when a host or link goes down, green when it is back. */
static dt_status fig_faults(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t n = runs->n;
    results_evals_t *ev = dt_calloc(n ? n : 1, sizeof *ev);
    results_faults_t *fl = dt_calloc(n ? n : 1, sizeof *fl);
    dt_status st = DT_OK;
    size_t with_faults = 0;
    for (size_t i = 0; i < n; i++) {
        if ((st = results_query_evals(f->q, runs->v[i].id, &ev[i], err)) != DT_OK ||
            (st = results_query_faults(f->q, runs->v[i].id, &fl[i], err)) != DT_OK)
            goto done;
        with_faults += fl[i].rows > 0;
    }
    if (!with_faults) {
        fig_note(f, "none of the selected runs has a fault");
        goto done;
    }
    /* panels: the strategies in order of first appearance */
    const char *panel[FAULT_PANELS];
    size_t n_panels = 0, left_out = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = 0;
        while (p < n_panels && strcmp(panel[p], runs->v[i].strategy))
            p++;
        if (p == n_panels) {
            if (n_panels == FAULT_PANELS) {
                left_out++;
                continue;
            }
            panel[n_panels++] = runs->v[i].strategy;
        }
    }
    gp_t *g = &f->body;
    for (size_t i = 0; i < n; i++) {
        gp_printf(g, "$run%zu << EOD\n", i);
        for (size_t k = 0; k < ev[i].n; k++)
            if (isfinite(ev[i].sim_time[k]) && isfinite(ev[i].test_acc[k]))
                gp_printf(g, "%.10g %.10g\n", ev[i].sim_time[k], 100 * ev[i].test_acc[k]);
        gp_printf(g, "EOD\n");
    }
    size_t cols = n_panels > 1 ? 2 : 1, rows = (n_panels + cols - 1) / cols;
    gp_printf(g, "set multiplot layout %zu,%zu title \"Test accuracy vs simulated time, with "
                 "and without faults (red: a host or link goes down, green: back)\"",
              rows, cols);
    if (f->prefix) {
        gp_printf(g, " . ");
        char *runs_of = dt_malloc(strlen(f->prefix) + 16);
        sprintf(runs_of, ": %s/...", f->prefix);
        gp_text(g, runs_of);
        free(runs_of);
    }
    gp_printf(g, "\nset key inside bottom right Left reverse font ',9' spacing 1 samplen 2\n"
                 "set xlabel 'simulated time (s)'\nset ylabel 'test accuracy (%%)'\n"
                 "set xrange [0:*]\n");
    for (size_t p = 0; p < n_panels; p++) {
        gp_printf(g, "unset arrow\nset title ");
        gp_text(g, panel[p]);
        gp_printf(g, "\n");
        for (size_t i = 0; i < n; i++)
            if (!strcmp(runs->v[i].strategy, panel[p]))
                for (size_t k = 0; k < fl[i].n; k++)
                    gp_printf(g, "set arrow from %.10g, graph 0 to %.10g, graph 1 nohead "
                                 "lc rgb '%s' lw 1.5 dt 2 back\n",
                              fl[i].sim_time[k], fl[i].sim_time[k],
                              fl[i].down[k] ? "#e15759" : "#59a14f");
        gp_printf(g, "plot ");
        int first = 1;
        size_t c = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(runs->v[i].strategy, panel[p]))
                continue;
            gp_printf(g, "%s$run%zu using 1:2 with linespoints lt %d ps 0.5 title ",
                      first ? "" : ", ", i, fl[i].rows ? 3 : 1 + (int)(c % 2) * 3);
            /* in a panel the scenario's name is clear: the swept values tell the runs apart */
            const char *name = runs->v[i].name, *slash = strchr(name, '/');
            char label[64];
            snprintf(label, sizeof label, "%s", slash && slash[1] ? slash + 1 : f->labels[i]);
            if (strlen(label) > 48) /* a longer key does not fit in a panel */
                strcpy(label + 45, "...");
            gp_text(g, label);
            first = 0;
            c++;
        }
        gp_printf(g, "\n");
    }
    gp_printf(g, "unset multiplot\n");
    f->drawn = 1;
    f->size_h = rows > 1 ? 420 * (int)rows : 600;
    if (left_out)
        fig_note(f, "leaves out %zu run%s beyond %d strategies", left_out,
                 left_out == 1 ? "" : "s", FAULT_PANELS);
done:
    for (size_t i = 0; i < n; i++) {
        results_evals_free(&ev[i]);
        results_faults_free(&fl[i]);
    }
    free(ev);
    free(fl);
    return st;
}

/* --- 8: time per step and memory per host ----------------------------------------------- */

static const char *const mem_titles[4] = {"parameters", "gradients", "optimizer state",
                                          "activations"};
static const char *const mem_colors[4] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f"};

static dt_status fig_parallelism(fig_t *f, dt_err_t *err)
{
    const results_runs_t *runs = f->runs;
    size_t cap = runs->n ? runs->n : 1, n = 0, longest = 0;
    size_t *shown = dt_calloc(cap, sizeof *shown);
    double(*mem)[4] = dt_calloc(cap, sizeof *mem);
    dt_status st = DT_OK;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        int found = 0;
        if ((st = results_query_memory(f->q, r->id, mem[n], &found, err)) != DT_OK)
            goto done;
        if (!found || !r->has_summary || r->steps <= 0 || !isfinite(r->sim_time))
            continue;
        shown[n++] = i;
        size_t l = text_width(f->labels[i]);
        longest = l > longest ? l : longest;
    }
    if (n == 0) {
        fig_note(f, "none of the selected runs has memory rows and a summary with steps "
                    "(memory is recorded since schema version 2)");
        goto done;
    }
    gp_t *g = &f->body;
    double tmax = 0, mmax = 0;
    gp_printf(g, "$time << EOD\n");
    for (size_t b = 0; b < n; b++) {
        const results_run_view_t *r = &runs->v[shown[b]];
        double ms = 1e3 * r->sim_time / (double)r->steps;
        tmax = ms > tmax ? ms : tmax;
        gp_printf(g, "%zu %.10g\n", b, ms);
    }
    gp_printf(g, "EOD\n");
    /* segment k of bar b: [sum of the kinds before k, + kind k], in MB (NULL as 0) */
    for (int k = 0; k < 4; k++) {
        gp_printf(g, "$mem%d << EOD\n", k);
        for (size_t b = 0; b < n; b++) {
            double lo = 0;
            for (int j = 0; j < k; j++)
                lo += isfinite(mem[b][j]) ? mem[b][j] / 1e6 : 0;
            double hi = lo + (isfinite(mem[b][k]) ? mem[b][k] / 1e6 : 0);
            mmax = hi > mmax ? hi : mmax;
            gp_printf(g, "%zu %.10g %.10g %.10g %.10g %.10g\n", b, (lo + hi) / 2, b - 0.35,
                      b + 0.35, lo, hi);
        }
        gp_printf(g, "EOD\n");
    }
    int slant = n > 6 || longest > 14;
    gp_printf(g, "set multiplot layout 2,1\nset xrange [-0.6:%.1f]\nset grid noxtics\n"
                 "set format x ''\nset xtics (",
              n - 0.4);
    for (size_t b = 0; b < n; b++)
        gp_printf(g, "%s%zu", b ? ", " : "", b);
    gp_printf(g, ")\n");
    if (slant)
        gp_printf(g, "set lmargin %d\nset bmargin %d\n", 6 + (int)(0.5 * (double)longest),
                  3 + (int)longest / 5);
    else
        gp_printf(g, "set bmargin 3\n");
    for (size_t b = 0; b < n; b++) {
        gp_printf(g, "set label %zu ", b + 1);
        gp_text(g, f->labels[shown[b]]);
        gp_printf(g, " at first %zu, graph 0 %s tc rgb '#333333'\n", b,
                  slant ? "right rotate by 25 offset 1,-1" : "center offset 0,-1");
    }
    gp_printf(g, "set title 'Time per step (simulated milliseconds: simulated time / steps)'\n"
                 "set ylabel 'ms per step'\nset yrange [0:%.10g]\n"
                 "plot $time using 1:2:(0.7) with boxes fs solid 0.8 lc rgb '%s' notitle, \\\n"
                 "     $time using 1:2:(sprintf('%%.3g', $2)) with labels offset 0,0.7 "
                 "tc rgb '#333333' notitle\n",
              tmax * 1.2, palette[0]);
    gp_printf(g, "set title 'Memory of the most loaded host (MB), by kind'\n"
                 "set ylabel 'MB'\nset yrange [0:%.10g]\nset key top right\nplot ",
              mmax * 1.25 > 0 ? mmax * 1.25 : 1);
    for (int k = 0; k < 4; k++)
        gp_printf(g, "%s$mem%d using 1:2:3:4:5:6 with boxxyerror fs solid 1.0 border "
                     "lc rgb 'white' lc rgb '%s' title '%s'",
                  k ? ", \\\n     " : "", k, mem_colors[k], mem_titles[k]);
    gp_printf(g, "\nunset multiplot\n");
    f->size_h = 1000;
    f->drawn = 1;
    if (n < runs->n)
        fig_note(f, "leaves out %zu run%s without memory rows or steps", runs->n - n,
                 runs->n - n == 1 ? "" : "s");
done:
    free(shown);
    free(mem);
    return st;
}

static char *path_join(const char *dir, const char *name, const char *ext)
{
    size_t n = strlen(dir) + strlen(name) + strlen(ext) + 3;
    char *p = dt_malloc(n);
    size_t dl = strlen(dir);
    snprintf(p, n, "%s%s%s.%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name, ext);
    return p;
}

dt_status results_plot_draw(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                            const results_plot_opts_t *o, results_plot_out_t *out,
                            dt_err_t *err)
{
    DT_ASSERT(q && runs && o && o->out_dir && out && fig < RESULTS_FIGURE_COUNT);
    memset(out, 0, sizeof *out);
    char *prefix = common_prefix(runs);
    fig_t f = {q, runs, o, prefix, run_labels(runs, prefix), {0}, 0, 0, out->note,
               sizeof out->note};
    gp_init(&f.body);
    dt_status st = DT_OK;
    switch (fig) {
    case RESULTS_FIGURE_ACCURACY:
        st = fig_accuracy(&f, 0, err);
        break;
    case RESULTS_FIGURE_ACCURACY_BYTES:
        st = fig_accuracy(&f, 1, err);
        break;
    case RESULTS_FIGURE_BREAKDOWN:
        fig_breakdown(&f);
        break;
    case RESULTS_FIGURE_TIME_TO_TARGET:
        fig_time_to_target(&f);
        break;
    case RESULTS_FIGURE_SCALING:
        fig_scaling(&f);
        break;
    case RESULTS_FIGURE_TIMELINE:
        st = fig_timeline(&f, err);
        break;
    case RESULTS_FIGURE_FAULTS:
        st = fig_faults(&f, err);
        break;
    case RESULTS_FIGURE_PARALLELISM:
        st = fig_parallelism(&f, err);
        break;
    case RESULTS_FIGURE_COUNT:
        DT_ASSERT(0);
    }
    gp_finish(&f.body);
    for (int svg = 0; st == DT_OK && f.drawn && svg <= (o->svg != 0); svg++) {
        char *path = path_join(o->out_dir, figure_names[fig], svg ? "svg" : "png");
        gp_t script;
        gp_init(&script);
        gp_header(&script, svg, f.size_h ? f.size_h : 600);
        fwrite(f.body.buf, 1, f.body.len, script.f);
        gp_finish(&script);
        st = gp_run(script.buf, script.len, path, err);
        gp_free(&script);
        if (st == DT_OK)
            out->files[out->n_files++] = path;
        else
            free(path);
    }
    gp_free(&f.body);
    for (size_t i = 0; i < runs->n; i++)
        free(f.labels[i]);
    free(f.labels);
    free(prefix);
    return st;
}
