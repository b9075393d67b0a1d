/* The figures: gnuplot scripts built from what query.h reads, one image file each, drawn by
 * gnuplot without a shell and with no user string as a command (gnuplot.h says how). The
 * figures themselves are a table (figures.c): a figure is one function and one row there,
 * plus its value below.
 *
 * Errors: DT_ERR_INPUT for what the user can fix (gnuplot not installed, an output directory
 * that cannot be written, an unknown --timeline-run), DT_ERR_RUN when gnuplot fails. */
#ifndef DTSIM_RESULTS_PLOT_H
#define DTSIM_RESULTS_PLOT_H

#include <stdint.h>

#include "common.h"
#include "gnuplot.h" /* gp_format_t, results_plot_gnuplot_check, results_plot_gp_string */
#include "query.h"

typedef enum results_figure {
    RESULTS_FIGURE_ACCURACY,       /* test accuracy vs simulated time, a curve per run */
    RESULTS_FIGURE_ACCURACY_BYTES, /* test accuracy vs bytes sent, a curve per run */
    RESULTS_FIGURE_BREAKDOWN,      /* compute / communication / idle shares, a bar per run */
    RESULTS_FIGURE_TIME_TO_TARGET, /* time to target accuracy vs bandwidth, per strategy */
    RESULTS_FIGURE_SCALING,        /* scaling efficiency vs workers, per strategy */
    RESULTS_FIGURE_TIMELINE,       /* what each host does over simulated time, one run */
    RESULTS_FIGURE_FAULTS,         /* accuracy vs time per strategy, with and without faults */
    RESULTS_FIGURE_PARALLELISM,    /* time per step and memory of the most loaded host, per run */
    RESULTS_FIGURE_CLIENTS,        /* federated clients' held-out accuracy, sorted and vs rounds */
    RESULTS_FIGURE_COST,           /* $ and J per sample vs seconds per step, a point per run */
    RESULTS_FIGURE_STEP,           /* a step's parts (the breakdown table), a stacked bar per run */
    RESULTS_FIGURE_PARETO,         /* cost vs seconds per step, memory as colour, the front
                                      named: readable with hundreds of runs (a plan's) */
    RESULTS_FIGURE_COUNT
} results_figure_t;

/* The file name without extension: "accuracy", "accuracy_bytes", ... */
const char *results_figure_name(results_figure_t f);
/* What the figure shows, for `dtsim plot --help`: lines of at most 57 characters (they
 * follow a 22-column name, within 79). */
const char *results_figure_help(results_figure_t f);

/* The runs are a plan's (`dtsim plan`): more than one, one sweep, every name
 * "plan-PROFILE-tTpPdD-mb...". The report then ranks them and puts the Pareto chart first. */
int results_runs_plan(const results_runs_t *runs);

/* The formats to write, or-ed into results_plot_opts_t.formats (0 reads as PNG only); a
 * figure's files come in this order. SVG only: .formats = RESULTS_PLOT_SVG. */
#define RESULTS_PLOT_PNG (1u << GP_PNG)
#define RESULTS_PLOT_SVG (1u << GP_SVG)
#define RESULTS_PLOT_PDF (1u << GP_PDF)

/* The sizes --size takes, in pixels (a PDF page: pixels / GP_PDF_DPI inches). */
#define RESULTS_PLOT_MIN_WIDTH 400
#define RESULTS_PLOT_MIN_HEIGHT 300
#define RESULTS_PLOT_MAX_SIZE 10000

/* The size of a projector's figures without --size: a 1080p projector's screen. */
#define RESULTS_PLOT_PROJECTOR_WIDTH 1920
#define RESULTS_PLOT_PROJECTOR_HEIGHT 1080

typedef struct results_plot_opts {
    const char *out_dir;  /* an existing directory */
    unsigned formats;     /* RESULTS_PLOT_PNG | RESULTS_PLOT_SVG | RESULTS_PLOT_PDF; 0: PNG */
    int64_t timeline_run; /* the timeline's run; 0: of the selected runs with a timeline, the
                           * one whose hosts compute the largest share of the time */
    int width, height;    /* pixels of every figure; 0: the figure's own (1000 wide, 600 high,
                           * more for panels), or the projector's */
    int projector;        /* 1: for a projector, read from the back of a room: larger type,
                           * a darker palette, every panel a screen (an image) of its own */
} results_plot_opts_t;

typedef struct results_plot_out {
    int n_files;
    char **files;   /* the paths written, malloc'ed: per screen, PNG, SVG, PDF of those asked */
    size_t screens; /* images per format: 1, or on a projector the figure's panels */
    char note[512]; /* why the figure was skipped (n_files = 0), or what it leaves out */
} results_plot_out_t;
/* Frees the paths in out->files and zeroes out (note included); NULL is allowed. */
void results_plot_out_free(results_plot_out_t *out);

/* Draws one figure of runs into o->out_dir, a file NAME.png, .svg or .pdf per format asked
 * (each written under a temporary name and renamed when gnuplot succeeded, so a failure
 * leaves no half image); on a projector, a figure of several panels as NAME-1.png,
 * NAME-2.png, ..., a panel each, in the order they read. A figure the runs
 * cannot make (no bandwidth sweep, no timeline rows, ...) is skipped: DT_OK, no file, the
 * reason in out->note. */
dt_status results_plot_draw(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                            const results_plot_opts_t *o, results_plot_out_t *out, dt_err_t *err);

/* The script results_plot_draw feeds gnuplot for screen `screen` (0 unless on a projector)
 * of the figure in format (GP_PNG, ...), without running gnuplot: malloc'ed into *script, or
 * NULL when the figure is skipped (the reason in out->note; out->n_files stays 0) or has no
 * such screen (out->screens says how many it has). For tests, and for reading what a figure
 * draws. */
dt_status results_plot_script(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                              const results_plot_opts_t *o, gp_format_t format, size_t screen,
                              char **script, results_plot_out_t *out, dt_err_t *err);

#endif
