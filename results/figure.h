/* What a figure is, between plot.c (which draws any figure) and figures.c (the figures):
 * one function that reads what it needs through query.h, reduces it, and writes the body of
 * a gnuplot script through gnuplot.h, and one row of the table results_figures. */
#ifndef DTSIM_RESULTS_FIGURE_H
#define DTSIM_RESULTS_FIGURE_H

#include <stddef.h>

#include "gnuplot.h"
#include "plot.h"
#include "query.h"

/** What a figure is given, and what it fills in. */
typedef struct fig {
    results_query_t *q;
    const results_runs_t *runs;
    const results_plot_opts_t *o;
    const char *prefix; /* the "NAME" of "NAME/..." that every run's name starts with, or NULL */
    char **labels;      /* a legend label per run: its name less the prefix, shortened */
    gp_t body;          /* the script after the shared header (gp_render writes that) */
    int drawn;          /* set by a figure that drew; 0: skipped, the reason in the note */
    int height;         /* image height in pixels: 600 unless the figure sets it */
    char *note;         /* why it was skipped, or what it leaves out (fig_note) */
    size_t note_size;
} fig_t;

/** One figure: its file name, its help, its function. */
typedef struct figure {
    const char *name; /* the file name without extension */
    const char *help; /* for `dtsim plot --help`: lines of at most 57 characters */
    dt_status (*draw)(fig_t *f, dt_err_t *err); /* DT_OK also when skipped */
} figure_t;

/** The clients figure (figure_clients.c). */
dt_status fig_clients(fig_t *f, dt_err_t *err);

/** Every figure, indexed by results_figure_t (figures.c). */
extern const figure_t results_figures[RESULTS_FIGURE_COUNT];

/** The figure's note, printf-style (replaces any earlier one). */
void fig_note(fig_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Appends to a string expression the runs' common name prefix, if any, as ` . ': NAME/...'`. */
void fig_runs_of(fig_t *f);
/** "set title" of fixed text (dtsim's own, in double quotes: \n starts a line), then the runs'
 *  common name prefix, if any, as a literal ": NAME/...". */
void fig_title(fig_t *f, const char *fixed);

#endif
