/* The gnuplot script writer and runner (see gnuplot.h): what every figure shares.
 *
 * What keeps a hostile run name (scenario files are user input) from doing anything:
 *   - the only way text from the database enters a script is results_plot_gp_string, which
 *     writes a single-quoted literal: gnuplot expands neither backquotes nor @macros nor
 *     backslashes inside '...', and a ' inside is doubled, so the literal cannot end early;
 *     control characters are blanked, so a newline cannot start a new command;
 *   - such literals are titles, key entries and labels, never tic labels, which gnuplot
 *     reads as formats (a % would be a conversion, and the label is cut to 49 characters);
 *   - every terminal is non-enhanced, so ^ _ @ { } & in a name print as themselves;
 *   - data are numbers printed with %.10g into datablocks (gp_block_row takes doubles
 *     only): no name is ever in a datablock, so no name can end one with "EOD";
 *   - gnuplot never sees a file name: its stdout is the image file, opened here. (`set output`
 *     would open a pipe to a shell for a name that starts with '|'.) */
#define _POSIX_C_SOURCE 200809L
#include "gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Tableau 10: ten colours told apart on screen and on paper. */
static const char *const paper_palette[GP_COLORS] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                     "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                     "#9c755f", "#bab0ac"};
/* The same hues in the same order (red third: the faults figure's runs with faults), darker
 * and more saturated: a projector in a lit room washes light colours out, and Tableau's
 * yellow, pink and gray nearly vanish against its white. */
static const char *const projector_palette[GP_COLORS] = {"#1f5aa6", "#e07000", "#c8102e", "#00807a",
                                                         "#2e8b2e", "#b08800", "#7b3294", "#d6338a",
                                                         "#7f4f24", "#505050"};
/* Eight dash patterns, on and off lengths in line widths (none: solid), ordered so that each
 * is as unlike those before it as can be: solid, long dashes, dash-dot, dots (as long as the
 * line is wide), short dashes, dash-dot-dot, long-short dashes, sparse dots; the longest
 * period (13) is what GP_KEY_SAMPLEN lets a key show twice. Dashes that differed only in
 * length (6,3 and 12,4) read alike from a few metres, and in a key shorter than one period
 * not at all. Eight point shapes in the same order (filled circle, square, triangle, diamond,
 * inverted triangle, then the open circle, square and triangle): what tells curves apart once
 * printed in gray, or seen from the back of a room. */
#define DASH_PARTS 6
static const double dashes[GP_DASHES][DASH_PARTS] = {
    {0}, {5, 2.5}, {5, 2, 1, 2}, {1, 1.5}, {2.5, 2}, {5, 2, 1, 2, 1, 2}, {5, 2, 2.5, 2}, {1, 4}};
static const int point_types[GP_DASHES] = {7, 5, 9, 13, 11, 6, 4, 8};

const char *const gp_format_ext[GP_FORMAT_COUNT] = {"png", "svg", "pdf"};

#define GNUPLOT "gnuplot"
#define NOT_INSTALLED "gnuplot is not installed (or not on PATH): install the package gnuplot-nox"

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

void gp_init(gp_t *g)
{
    g->buf = NULL;
    g->len = 0;
    g->theme = GP_THEME_PAPER;
    g->f = open_memstream(&g->buf, &g->len);
    DT_CHECK(g->f, "open_memstream: %s", strerror(errno));
}

void gp_free(gp_t *g)
{
    if (g->f)
        fclose(g->f);
    free(g->buf);
    memset(g, 0, sizeof *g);
}

/* buf and len as written so far. */
static void gp_flush(gp_t *g)
{
    DT_CHECK(fflush(g->f) == 0, "building a gnuplot script: %s", strerror(errno));
}

void gp_printf(gp_t *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(g->f, fmt, ap);
    va_end(ap);
}

void gp_text(gp_t *g, const char *text)
{
    char *s = results_plot_gp_string(text);
    fputs(s, g->f);
    free(s);
}

size_t gp_text_width(const char *text)
{
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        n += (*s & 0xc0) != 0x80;
    return n > RESULTS_PLOT_TEXT_MAX ? RESULTS_PLOT_TEXT_MAX + 3 : n;
}

void gp_block_begin(gp_t *g, const char *name_fmt, ...)
{
    va_list ap;
    va_start(ap, name_fmt);
    fputc('$', g->f);
    vfprintf(g->f, name_fmt, ap);
    fputs(" << EOD\n", g->f);
    va_end(ap);
}

void gp_block_row(gp_t *g, const double *v, size_t n)
{
    /* gnuplot reads "inf" as an undefined variable; NaN is its missing point */
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(' ', g->f);
        if (isfinite(v[i]))
            fprintf(g->f, "%.10g", v[i]);
        else
            fputs("NaN", g->f);
    }
    fputc('\n', g->f);
}

void gp_block_end(gp_t *g)
{
    fputs("EOD\n", g->f);
}

/* The curves' dash patterns as dash types GP_DASH_TYPE + i. gnuplot draws a unit of a dash
 * pattern as half a line width in an svg and a quarter in the cairo terminals (measured:
 * dt (6,3) at lw 2 is 6 pixels on, 3 off in an svg, 3 on and 1.5 off in a png): lengths in
 * line widths are those times 2, or 4. Not the terminals' dashlength, which would stretch
 * every other dash too (the grid's dots, the ideal lines). */
static void gp_dash_types(gp_t *g, gp_format_t format)
{
    double unit = format == GP_SVG ? 2 : 4;
    for (int d = 0; d < GP_DASHES; d++) {
        gp_printf(g, "set dashtype %d %s", GP_DASH_TYPE + d, dashes[d][0] > 0 ? "(" : "solid");
        for (int k = 0; k < DASH_PARTS && dashes[d][k] > 0; k++)
            gp_printf(g, "%s%.6g", k ? "," : "", unit * dashes[d][k]);
        gp_printf(g, "%s\n", dashes[d][0] > 0 ? ")" : "");
    }
}

/* The terminal and the look shared by every figure. Fonts are sized as pngcairo draws them
 * (points at 96 dpi); the svg and pdfcairo terminals are scaled to match, so that a figure
 * has the same layout in every format. scale multiplies every font and line (a figure drawn
 * larger than its own size, laid out at its own size). The curves' dash types (dashes) are
 * in line widths in every format (gp_dash_types).
 *
 * On a projector the ink is black on white, not white on black: projectors have a poor
 * black, which a lit room turns gray, while a white screen stays the brightest thing in it,
 * so dark lines on white keep the most contrast; the palette is darker (projector_palette),
 * markers larger, the grid and the border darker (lines and type grow with the projector's
 * scale: fig_scale). */
static void gp_header(gp_t *g, gp_format_t format, int width, int height, double scale)
{
    int projector = g->theme == GP_THEME_PROJECTOR;
    /* markers grow with the type: the terminals grow only their outlines (a ps 1 circle is 7
     * pixels wide at fontscale 1 and 9 at 2.52), and svg has no pointscale */
    gp_printf(g, "set encoding utf8\nmarker = %.6g\n", scale);
    if (format == GP_SVG)
        gp_printf(g,
                  "set terminal svg size %d,%d fontscale %.6g linewidth %.6g font 'Sans,11' "
                  "noenhanced background rgb 'white'\n",
                  width, height, 1.3333 * scale, scale);
    else if (format == GP_PDF)
        /* pdfcairo draws a font at 4/3 x fontscale its size, a line at half its width */
        gp_printf(g,
                  "set terminal pdfcairo size %.4gin,%.4gin fontscale %.6g linewidth %.6g "
                  "font 'Sans,11' noenhanced background rgb 'white'\n",
                  width / GP_PDF_DPI, height / GP_PDF_DPI, 0.75 * scale, 1.5 * scale);
    else
        gp_printf(g,
                  "set terminal pngcairo size %d,%d fontscale %.6g linewidth %.6g "
                  "font 'Sans,11' noenhanced background rgb 'white'\n",
                  width, height, scale, scale);
    gp_printf(g, "set termoption noenhanced\n");
    gp_dash_types(g, format);
    for (int i = 0; i < GP_COLORS; i++)
        gp_printf(g, "set linetype %d lc rgb '%s' lw 2 pt 7 ps %s*marker\n", i + 1, gp_colour(g, i),
                  projector ? "1.2" : "0.8");
    gp_printf(g,
              "set linetype cycle %d\n"
              "set grid back lc rgb '%s' lw 1\n"
              "set border 3 back lc rgb '%s'\n"
              "set tics nomirror\n"
              "set key outside right top Left reverse spacing 1.2 samplen %d width 1\n"
              "set title font ',13'\n"
              /* three significant digits without an exponent below 10^6 */
              "plain(x) = sprintf(abs(x) >= 100 ? '%%.0f' : abs(x) >= 1 ? '%%.3g' : "
              "'%%.2g', x)\n",
              GP_COLORS, projector ? "#b8b8b8" : "#e4e4e4", projector ? "#000000" : "#555555",
              GP_KEY_SAMPLEN);
}

const char *gp_colour(const gp_t *g, size_t i)
{
    const char *const *palette = g->theme == GP_THEME_PROJECTOR ? projector_palette : paper_palette;
    return palette[i % GP_COLORS];
}

void gp_curve_style(gp_t *g, size_t i)
{
    gp_curve_look(g, i, i);
}

void gp_line_style(gp_t *g, size_t i)
{
    gp_line_look(g, i, i);
}

void gp_point_style(gp_t *g, size_t i)
{
    gp_point_look(g, i, i);
}

void gp_curve_look(gp_t *g, size_t colour, size_t dash)
{
    gp_printf(g, "lc rgb '%s' dt %d pt %d", gp_colour(g, colour),
              GP_DASH_TYPE + (int)(dash % GP_DASHES), point_types[dash % GP_DASHES]);
}

void gp_line_look(gp_t *g, size_t colour, size_t dash)
{
    gp_printf(g, "lc rgb '%s' dt %d", gp_colour(g, colour), GP_DASH_TYPE + (int)(dash % GP_DASHES));
}

void gp_point_look(gp_t *g, size_t colour, size_t dash)
{
    gp_printf(g, "lc rgb '%s' pt %d", gp_colour(g, colour), point_types[dash % GP_DASHES]);
}

void gp_tics_at(gp_t *g, const char *axis, const double *v, size_t n)
{
    gp_printf(g, "set %stics (", axis);
    for (size_t i = 0; i < n; i++)
        gp_printf(g, "%s%.10g", i ? ", " : "", v[i]);
    gp_printf(g, ")\nset format %s '%%g'\n", axis);
}

/* --- running gnuplot ------------------------------------------------------------------------ */

static dt_status spawn_error(int rc, dt_err_t *err)
{
    if (rc == ENOENT)
        return dt_err_input(err, NOT_INSTALLED);
    return dt_err_input(err, "cannot start gnuplot: %s", strerror(rc));
}

/* Runs gnuplot with argv, its standard streams on /dev/null; *status as waitpid gives it. */
static dt_status gp_spawn_wait(char *const argv[], int *status, dt_err_t *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, GNUPLOT, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return spawn_error(rc, err);
    while (waitpid(pid, status, 0) < 0)
        DT_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    return DT_OK;
}

static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

dt_status results_plot_gnuplot_check(dt_err_t *err)
{
    char *argv[] = {GNUPLOT, "--version", NULL};
    int status;
    dt_status st = gp_spawn_wait(argv, &status, err);
    if (st == DT_OK && exit_code(status) != 0)
        return dt_err_input(err,
                            "gnuplot --version failed (exit status %d): reinstall the "
                            "package gnuplot-nox",
                            exit_code(status));
    return st;
}

/* The terminal of each format. */
static const char *const terminals[GP_FORMAT_COUNT] = {"pngcairo", "svg", "pdfcairo"};

dt_status gp_format_check(gp_format_t format, dt_err_t *err)
{
    DT_ASSERT(format < GP_FORMAT_COUNT);
    char command[64];
    snprintf(command, sizeof command, "set terminal %s", terminals[format]);
    char *argv[] = {GNUPLOT, "-e", command, NULL};
    int status;
    dt_status st = gp_spawn_wait(argv, &status, err);
    if (st == DT_OK && exit_code(status) != 0)
        return dt_err_input(err,
                            "this gnuplot has no %s terminal, so it cannot write %s files: "
                            "install the package gnuplot-nox (built with cairo)",
                            terminals[format], gp_format_ext[format]);
    return st;
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
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && werr == 0 && stat(tmp, &sb) == 0 &&
             sb.st_size > 0;
    if (!ok) {
        char msg[320];
        first_error_line(errf, msg, sizeof msg);
        if (!msg[0])
            snprintf(msg, sizeof msg, "exit status %d, no message",
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (err) {
            snprintf(err->msg, sizeof err->msg, "gnuplot failed drawing %s: %s", path, msg);
            dt_err_clean(err);
        }
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

void gp_script(gp_t *body, gp_format_t format, int width, int height, double scale, char **script,
               size_t *len)
{
    DT_ASSERT(format < GP_FORMAT_COUNT && width > 0 && height > 0 && scale > 0);
    gp_t s;
    gp_init(&s);
    s.theme = body->theme;
    gp_header(&s, format, width, height, scale);
    gp_flush(body);
    fwrite(body->buf, 1, body->len, s.f);
    gp_flush(&s);
    fclose(s.f);
    *script = s.buf;
    *len = s.len;
}

dt_status gp_render(gp_t *body, gp_format_t format, int width, int height, double scale,
                    const char *path, dt_err_t *err)
{
    char *script;
    size_t len;
    gp_script(body, format, width, height, scale, &script, &len);
    dt_status st = gp_run(script, len, path, err);
    free(script);
    return st;
}
