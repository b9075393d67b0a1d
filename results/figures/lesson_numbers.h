/* The numbers a lesson's text states, against the runs they come from (the ties are written
 * in scenarios/lessons/NAME.md; their format: scenarios/lessons/README.md, "Numbers in a
 * lesson"). Every number of the text's prose is tied by the annotation that follows it, an
 * HTML comment libcmark's safe mode leaves out of the page:
 *   <!-- run: METRIC KEY=VALUE ... -->  measured: METRIC of each run whose keys have those
 *                                       values, in the page's order, one per number (or
 *                                       every run the one number);
 *   <!-- key: KEY -->                   an input: each number is one of KEY's values;
 *   <!-- fixed: WHY -->                 neither (a formula, a citation, a fact of the world).
 * An annotation ties the numbers since the one before it in the same paragraph or heading;
 * code spans and blocks are not prose. A stated number matches when the measured value,
 * rounded as the text rounds it (87 s, 0.91 s, 46.2%), is that number. */
#ifndef DTSIM_RESULTS_LESSON_NUMBERS_H
#define DTSIM_RESULTS_LESSON_NUMBERS_H

#include <stddef.h>

#include "common.h"
#include "query.h"

typedef enum results_lesson_issue_kind {
    RESULTS_LESSON_DRIFT,  /* a number the runs contradict */
    RESULTS_LESSON_UNTIED, /* a number with no annotation after it */
    RESULTS_LESSON_BAD,    /* an annotation that does not parse or cannot be checked */
} results_lesson_issue_kind_t;

typedef struct results_lesson_issue {
    results_lesson_issue_kind_t kind;
    int line;        /* of the paragraph in the text, from 1 */
    char msg[384];   /* one line: the numbers, the annotation, what is wrong */
    char shown[192]; /* what the page shows beside the numbers (DRIFT, BAD with runs) */
} results_lesson_issue_t;

typedef struct results_lesson_check {
    size_t numbers;  /* in the text's prose */
    size_t measured; /* numbers compared with the runs */
    size_t inputs;   /* numbers compared with the runs' keys */
    size_t fixed;    /* numbers exempt */
    size_t n_issues;
    results_lesson_issue_t *issues; /* (n_issues) */
} results_lesson_check_t;

/* Checks text's numbers: their ties always; against runs when q is not NULL. */
dt_status results_lesson_check(const char *text, results_query_t *q, const results_runs_t *runs,
                               results_lesson_check_t *out, dt_err_t *err);
/* Frees what results_lesson_check filled and zeroes c; NULL is allowed. */
void results_lesson_check_free(results_lesson_check_t *c);

/* text as HTML (results_markdown_html's), its annotations left out and, beside each number
 * runs contradict, a <span class="drift"> saying what they measured; check (may be NULL)
 * gets what results_lesson_check would. q NULL: no comparison. malloc'ed. */
char *results_lesson_html(const char *text, int heading_shift, results_query_t *q,
                          const results_runs_t *runs, results_lesson_check_t *check, dt_err_t *err);

/* The name of metric i of a run: annotation (scenarios/lessons/README.md lists them), NULL
 * past the last. */
const char *results_lesson_metric(size_t i);

#endif
