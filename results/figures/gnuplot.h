/* Writing a gnuplot script in memory and running gnuplot on it: what every figure shares
 * and nothing of any one figure (plot.c, figures.c). It knows neither SQLite nor the runs.
 *
 * gnuplot is started without a shell (posix_spawnp of "gnuplot" on PATH) and reads the
 * script on its stdin through a pipe; the data travel inside the script as datablocks of
 * numbers, and the image comes back on gnuplot's stdout into a file this code opened, so no
 * path and no user string ever reaches gnuplot as a command. Strings from the database (run
 * names, strategies, host names) appear only as single-quoted gnuplot string literals
 * (gp_text), in which gnuplot performs no substitution at all, with every terminal in
 * non-enhanced text mode so that ^ _ @ { } print as themselves. */
#ifndef DTSIM_RESULTS_GNUPLOT_H
#define DTSIM_RESULTS_GNUPLOT_H

#include <stddef.h>
#include <stdio.h>

#include "common.h"

/** How a figure looks: for a screen or paper, or for a projector read from the back of a
 *  room (a darker palette, black ink, thicker lines: gp_header says why). */
typedef enum gp_theme { GP_THEME_PAPER, GP_THEME_PROJECTOR } gp_theme_t;

/** A script being written: buf holds len bytes once flushed (open_memstream). */
typedef struct gp {
    char *buf;
    size_t len;
    FILE *f;
    gp_theme_t theme; /* the palette of its styles, and of its header (gp_script) */
} gp_t;

/** An empty script, GP_THEME_PAPER. */
void gp_init(gp_t *g);
/** Frees the script; g is empty afterwards. */
void gp_free(gp_t *g);

/** Script text; fmt and its arguments come from dtsim's code, never from the database. */
void gp_printf(gp_t *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Any string (from the database, or built from one) as a literal: results_plot_gp_string. */
void gp_text(gp_t *g, const char *text);
/** Characters text takes once quoted (what results_plot_gp_string keeps of it). */
size_t gp_text_width(const char *text);

/** Starts the datablock $NAME (name printf-formatted from dtsim's own text: "run%zu"). */
void gp_block_begin(gp_t *g, const char *name_fmt, ...) __attribute__((format(printf, 2, 3)));
/** One row of numbers, each %.10g, blank-separated; rows never hold text. */
void gp_block_row(gp_t *g, const double *v, size_t n);
#define GP_ROW(g, ...)                                                                             \
    gp_block_row((g), (const double[]){__VA_ARGS__},                                               \
                 sizeof((const double[]){__VA_ARGS__}) / sizeof(double))
/** Ends the datablock. */
void gp_block_end(gp_t *g);

/** The image formats, each a gnuplot terminal: pngcairo, svg, pdfcairo. */
typedef enum gp_format { GP_PNG, GP_SVG, GP_PDF, GP_FORMAT_COUNT } gp_format_t;
/** The file extension of a format, which is also its name on the command line. */
extern const char *const gp_format_ext[GP_FORMAT_COUNT];
/** PDF pages measure W x H pixels as W/96 x H/96 inches: the fonts and lines of a PNG (whose
 *  fonts pngcairo draws at 96 dpi) take the same share of the picture in every format. */
#define GP_PDF_DPI 96.0

/** The palette every figure draws with (Tableau 10; a darker one of the same hues in the same
 *  order on a projector); line type i + 1 is colour i. */
#define GP_COLORS 10
/** Colour i % GP_COLORS of g's theme, "#RRGGBB". */
const char *gp_colour(const gp_t *g, size_t i);
/** Dash patterns of the curves, each in turn as unlike those before it as can be: solid,
 *  long dashes, dash-dot, dots, ...; and as many point shapes, curve i's the i-th. The header
 *  defines pattern i as dash type GP_DASH_TYPE + i, its lengths in line widths in every
 *  format. */
#define GP_DASHES 8
#define GP_DASH_TYPE 11
/** The length of a key's line sample, in characters: two periods of the longest dash
 *  pattern (13 line widths) and more, so that every key shows its curve's dash. */
#define GP_KEY_SAMPLEN 6
/** Style of the i-th curve: colour i % GP_COLORS, dash pattern and point shape i % GP_DASHES,
 *  written as "lc rgb '#RRGGBB' dt DASH pt N": the first GP_DASHES curves differ in colour, in
 *  dash and in marker (told apart in grayscale), and the first 40 in the (colour, dash) pair. */
void gp_curve_style(gp_t *g, size_t i);
/** The same for `with lines` (colour and dash) and `with points` (colour and point shape). */
void gp_line_style(gp_t *g, size_t i);
void gp_point_style(gp_t *g, size_t i);
/** A look of two independent parts: colour `colour`, dash pattern and point shape `dash`, for
 *  figures whose curves vary in two things (a colour per strategy, a dash per bandwidth):
 *  two curves of one colour differ in dash and in marker, both seen from afar; the same three
 *  forms as above. */
void gp_curve_look(gp_t *g, size_t colour, size_t dash);
void gp_line_look(gp_t *g, size_t colour, size_t dash);
void gp_point_look(gp_t *g, size_t colour, size_t dash);
/** "set xtics (1, 10, 100)" at the values themselves, with a plain %g format. */
void gp_tics_at(gp_t *g, const char *axis, const double *v, size_t n);

/** The shared header (terminal of format, width x height pixels, every font and line scale
 *  times its size; colours, grid, key of body's theme; the function plain(x), a number as
 *  text without an exponent) followed by body: the script gnuplot reads, malloc'ed into
 *  *script (*len bytes, NUL-terminated). */
void gp_script(gp_t *body, gp_format_t format, int width, int height, double scale, char **script,
               size_t *len);
/** Runs gnuplot on gp_script(body, ...); gnuplot's stdout becomes path, through a temporary
 *  name in the same directory renamed on success, so a failure leaves no half image.
 *  DT_ERR_INPUT: gnuplot missing, path not writable; DT_ERR_RUN: gnuplot failed. */
dt_status gp_render(gp_t *body, gp_format_t format, int width, int height, double scale,
                    const char *path, dt_err_t *err);

/** DT_OK when gnuplot has the terminal of format; otherwise DT_ERR_INPUT naming it (a gnuplot
 *  built without cairo has no pngcairo or pdfcairo). */
dt_status gp_format_check(gp_format_t format, dt_err_t *err);

/** DT_OK when gnuplot can be started; otherwise DT_ERR_INPUT saying to install gnuplot-nox. */
dt_status results_plot_gnuplot_check(dt_err_t *err);

/** text as a single-quoted gnuplot string literal, malloc'ed: ' doubled, control characters
 *  (newlines included) turned into blanks, bytes that are not UTF-8 into '?', cut after
 *  RESULTS_PLOT_TEXT_MAX characters with "...". Such a literal is only ever used as a title,
 *  a key entry or a label, never as a tic label: gnuplot reads tic labels as formats. */
#define RESULTS_PLOT_TEXT_MAX 80
/** The literal of text (NULL reads as ""), malloc'ed: the caller frees it. */
char *results_plot_gp_string(const char *text);

#endif
