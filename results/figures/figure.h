/* What a figure is, between plot.c (which draws any figure) and figures.c (the figures):
 * one function that reads what it needs through query.h, reduces it, and writes the body of
 * a gnuplot script through gnuplot.h, and one row of the table results_figures.
 *
 * Every figure is a frame: a short fixed title on top, caption lines at the bottom (names,
 * what the figure leaves out, how to read it), and between them one or more panels that the
 * figure places with fig_panel. Names never go into a title, where a long one would be cut:
 * they go into the key or the caption. */
#ifndef DTSIM_RESULTS_FIGURE_H
#define DTSIM_RESULTS_FIGURE_H

#include <stddef.h>

#include "gnuplot.h"
#include "plot.h"
#include "query.h"

#define FIG_WIDTH 1000 /* pixels of a one-panel figure, unless --size says otherwise */
#define FIG_HEIGHT 600
#define FIG_MIN_SCALE 0.6 /* fonts no smaller than 0.6 of their size in a small --size */
#define FIG_PROJECTOR_TYPE                                                                         \
    1.4                     /* a projector's fonts and lines past its size's scale: 2.52           \
                             * at 1920 x 1080, 11 points 37 pixels high (1/29 of it) */
#define FIG_TITLE_MAX 40    /* characters of a fixed title: 400 pixels at 13 points */
#define FIG_CAPTION_LINES 4 /* caption lines at most; the last one ends "..." if cut */
#define FIG_MAX_CURVES 8    /* curves a panel holds before a figure splits into panels */
/* Pixels a key's line sample takes: GP_KEY_SAMPLEN characters of the 11-point font. */
#define FIG_KEY_SAMPLE_PX (GP_KEY_SAMPLEN * 8.8)

/** What a figure is given, and what it fills in. */
typedef struct fig {
    results_query_t *q;
    const results_runs_t *runs; /* the runs drawn: of a figure that summarises (max_runs),
                                 * the fastest max_runs of the selection */
    results_runs_t fastest;     /* those, when it does (views shared with the selection) */
    size_t selected;            /* runs selected, drawn or not */
    const results_plot_opts_t *o;
    const char *prefix; /* the "NAME" of "NAME/..." that every run's name starts with, or NULL */
    char **labels;      /* a legend label per run: its name less the prefix, shortened */
    gp_t body;          /* the script after the header and the frame (plot.c writes those) */
    int drawn;          /* set by a figure that drew; 0: skipped, the reason in the note */
    int height;         /* the image height it asks for at FIG_WIDTH: FIG_HEIGHT unless it sets
                         * it for panels (--size scales it) */
    const char *title;  /* the figure's title: fixed text, at most FIG_TITLE_MAX characters */
    char own_title[64]; /* where a title with numbers in it is written */
    char *caption[FIG_CAPTION_LINES]; /* lines under the panels (fig_caption), malloc'ed */
    size_t n_caption;
    size_t panels;    /* panels begun (fig_panel) */
    size_t *panel_at; /* where each panel's text begins in body: a projector's screens */
    char *note;       /* why it was skipped, or what it leaves out (fig_note) */
    size_t note_size;
} fig_t;

/** One figure: its file name, its help, its function. */
typedef struct figure {
    const char *name; /* the file name without extension */
    const char *help; /* for `dtsim plot --help`: lines of at most 57 characters */
    dt_status (*draw)(fig_t *f, dt_err_t *err); /* DT_OK also when skipped */
    size_t max_runs; /* runs it can show apart (a bar, a key entry each); past them it shows
                      * the fastest (seconds per step) and says so; 0: no limit */
} figure_t;

/** The Pareto chart (figure_pareto.c). */
dt_status fig_pareto(fig_t *f, dt_err_t *err);
/** The Pareto front of points (x[i], y[i], z[i]), each to minimise (z NULL: two objectives):
 *  the points no other is at least as good as in all and better in one (equal points all
 *  stay). Writes their indices to front, by ascending x (then y, z), and returns how many.
 *  Points with a NAN x or y are left out; a NAN z counts as the worst. */
size_t fig_pareto_front(const double *x, const double *y, const double *z, size_t n, size_t *front);

/** The accuracy figures (figure_accuracy.c): against simulated time, against bytes sent. */
dt_status fig_accuracy(fig_t *f, dt_err_t *err);
dt_status fig_accuracy_bytes(fig_t *f, dt_err_t *err);
/** The accuracy axis of runs of which `text` of `all` are language models, and the caption
 *  line that says what a language model's accuracy is (the faults figure's too). */
const char *fig_acc_ylabel(size_t text, size_t all);
void fig_acc_caption(fig_t *f, size_t text, size_t all);
/** Runs grouped by a key text (a curve of time to target or scaling, a panel of accuracy). */
typedef struct group {
    char *key;
    size_t *members; /* indices into runs, sorted by x */
    size_t n;
} group_t;

typedef struct groups {
    group_t *v;
    size_t n;
} groups_t;

/** Adds run `member` to the group of key (made when new); fig_groups_free frees them all. */
void fig_groups_add(groups_t *g, const char *key, size_t member);
void fig_groups_free(groups_t *g);
/** Gb/s of a bandwidth in bytes per second. */
double fig_gbps(double bytes_per_s);
/** label cut to fits characters, "..." at its end, when longer. malloc'ed. */
char *fig_fit_label(const char *label, size_t fits);
/** The clients figure (figure_clients.c). */
dt_status fig_clients(fig_t *f, dt_err_t *err);
/** The timeline figure (figure_timeline.c). */
dt_status fig_timeline(fig_t *f, dt_err_t *err);
/** The cost figure (figure_cost.c). */
dt_status fig_cost(fig_t *f, dt_err_t *err);
/** The bar figures (figure_bars.c): time shares, and time per step with memory. */
dt_status fig_breakdown(fig_t *f, dt_err_t *err);
dt_status fig_parallelism(fig_t *f, dt_err_t *err);
/** A step's parts (the breakdown table), a stacked bar per run (figure_bars.c). */
dt_status fig_step(fig_t *f, dt_err_t *err);
/** The colours and key titles of compute, communication and idle (breakdown, timeline). */
extern const char *const fig_state_colors[RESULTS_STATE_COUNT];
extern const char *const fig_state_titles[RESULTS_STATE_COUNT];

/** Every figure, indexed by results_figure_t (figures.c). */
extern const figure_t results_figures[RESULTS_FIGURE_COUNT];

/** The figure's note, printf-style (replaces any earlier one). */
void fig_note(fig_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Adds caption lines, printf-style (the text may hold names: it is written with gp_text),
 *  wrapped at blanks, commas or slashes to the image's width. */
void fig_caption(fig_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** The caption line "runs of NAME (...)" when the runs share a name prefix. */
void fig_caption_runs(fig_t *f);
/** The image's width and height in the units a figure lays itself out in: pixels of a figure
 *  at its own size (FIG_WIDTH and f->height). --size draws it larger or smaller, every font
 *  and line fig_scale times its size (the smaller of the two sizes' ratios to FIG_WIDTH and
 *  FIG_HEIGHT, at least FIG_MIN_SCALE): the layout is the same and the text grows with the
 *  image, where 1920 x 1080 had made it smaller. The image is --size in pixels (the height
 *  scaled by f->height / FIG_HEIGHT: a figure of stacked panels stays taller), so these
 *  are its pixels over fig_scale. On a projector the image is the screen (--size, or
 *  1920 x 1080) whatever the panels, and fig_scale FIG_PROJECTOR_TYPE times larger. */
int fig_width(const fig_t *f);
int fig_height(const fig_t *f);
double fig_scale(const fig_t *f);
/** Whether the figure is drawn for a projector (results_plot_opts_t.projector). */
int fig_projector(const fig_t *f);
/** Starts a panel at (x, y), w wide and h high, in fractions of the frame between the title
 *  and the caption (y from the bottom). Every plot command follows one, on a line that
 *  starts with "plot " (plot.c finds a projector's screens by them). */
void fig_panel(fig_t *f, double x, double y, double w, double h);
/** Starts panel p of a grid of rows x cols, filled row by row from the top left; on a
 *  projector, the whole frame: each panel is a screen of its own. */
void fig_grid_panel(fig_t *f, size_t p, size_t rows, size_t cols);
/** Columns of a grid of n panels: 2 when there are several and the image is wide enough;
 *  1 on a projector. */
size_t fig_grid_cols(const fig_t *f, size_t n);
/** Legend labels for runs idx[0..n) alone, as the figure's own labels are for every run: the
 *  values that tell these runs apart (a panel's runs share the panel's value). malloc'ed, as
 *  is each label; free with fig_labels_free. */
char **fig_labels_of(const fig_t *f, const size_t *idx, size_t n);
void fig_labels_free(char **labels, size_t n);

#endif
