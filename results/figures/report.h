/* The report: one self-contained HTML page about some runs of a results database (the
 * runs query.h chooses): the summary table, every figure (plot.h) inlined as SVG with a
 * caption saying what to look at, the configuration keys that differ between the runs and
 * those they share, each run's details and, for a lesson's runs, the lesson's text.
 *
 * The page fetches nothing (a Content-Security-Policy forbids it, scripts included), and
 * every text that comes from the database goes through results_report_escape.
 *
 * Errors: DT_ERR_INPUT for what the user can fix (an output file that cannot be written),
 * DT_ERR_RUN when the machine fails (I/O reading the database). A figure gnuplot fails on
 * is not an error of the page: its place says why and out->failed counts it. */
#ifndef DTSIM_RESULTS_REPORT_H
#define DTSIM_RESULTS_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "query.h"

typedef struct results_report_opts {
    const char *db_path;  /* shown in the page */
    const char *made_by;  /* "dtsim 0.1.0", shown in the page */
    int figures;          /* 0: no figures (gnuplot missing), each place saying so */
    int64_t timeline_run; /* the timeline's run as in results_plot_opts_t; 0: its default */
    const char *lesson;   /* a lesson's text (results_report_lesson's format), or NULL */
} results_report_opts_t;

typedef struct results_report_out {
    int drawn, skipped, failed; /* figures */
    size_t lesson_drift;        /* numbers of the lesson's text these runs contradict */
    dt_err_t failure;           /* the first figure gnuplot failed on, when failed > 0 */
} results_report_out_t;

/* Writes the page about runs to path: through a temporary file in path's directory,
 * renamed into place, so a failure leaves any earlier page as it was. */
dt_status results_report_write(results_query_t *q, const results_runs_t *runs,
                               const results_report_opts_t *o, const char *path,
                               results_report_out_t *out, dt_err_t *err);

/* Writes text as HTML text or a quoted attribute value: & < > " ' as character references,
 * control characters other than tab and newline as U+FFFD. NULL writes nothing. */
void results_report_escape(FILE *f, const char *text);

/* The configuration keys of some runs: every key any of them has, sorted, with each run's
 * value (as written in the resolved configuration). */
typedef struct results_params {
    size_t n_keys, n_runs;
    char **keys;   /* (n_keys) */
    char **values; /* (n_keys, n_runs): values[k * n_runs + r]; NULL: run r lacks key k */
    int *differs;  /* (n_keys) 1: not every run has the same value (or has the key) */
} results_params_t;

/* The params rows of runs into out; free with results_params_free. */
dt_status results_report_params(results_query_t *q, const results_runs_t *runs,
                                results_params_t *out, dt_err_t *err);
/* Frees what results_report_params filled and zeroes p; NULL is allowed. */
void results_params_free(results_params_t *p);

/* Markdown (CommonMark: scenarios/lessons/NAME.md) as HTML, malloc'ed, every heading
 * heading_shift levels down (1: a lesson's "# " title an h2 under the report's h1); libcmark's
 * safe mode: raw HTML left out, links to javascript: and the like without a target. */
char *results_markdown_html(const char *text, int heading_shift);
/* Writes a lesson's text as HTML into the report: results_markdown_html(text, 1), each number
 * runs (q NULL: none) contradict marked with what they measured (results/lesson_numbers.h),
 * their count into *contradicted (may be NULL). DT_ERR_RUN when reading the runs fails. */
dt_status results_report_lesson(FILE *f, const char *text, results_query_t *q,
                                const results_runs_t *runs, size_t *contradicted, dt_err_t *err);

#endif
