/* A run's timeline as a Chrome trace (the JSON that Perfetto, ui.perfetto.dev, and
 * chrome://tracing open): a process per host, a thread (track) per role and rank on it,
 * a slice per timeline interval (compute, comm, idle) and a flow arrow per message of the
 * messages table. */
#ifndef DTSIM_RESULTS_TRACE_JSON_H
#define DTSIM_RESULTS_TRACE_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "query.h"

typedef struct results_trace results_trace_t;

/* Reads run's timeline and messages into *out. DT_ERR_INPUT when there is no such run or it
 * has no timeline rows. Free with results_trace_free. */
dt_status results_trace_build(results_query_t *q, int64_t run, results_trace_t **out,
                              dt_err_t *err);
/* Writes t as one JSON object: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData":
 * {...}}; times in microseconds of simulated time, in their shortest round-trip form. */
dt_status results_trace_write(const results_trace_t *t, FILE *f, dt_err_t *err);
/* Frees t; NULL is allowed. */
void results_trace_free(results_trace_t *t);

#endif
