/* Which stored runs a read command shows (see cli_select.h). */
#include "cli_select.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli_util.h"

int cli_select_check(const char *cmd, const char *runs_spec, const char *sweep)
{
    if (runs_spec && sweep)
        return cli_usage_error(cmd, "--runs and --sweep cannot be combined");
    if (runs_spec) {
        results_id_range_t *ranges;
        size_t n;
        dt_err_t err;
        if (results_runs_spec_parse(runs_spec, &ranges, &n, &err) != DT_OK)
            return cli_usage_error(cmd, "%s", err.msg);
        free(ranges);
    }
    return CLI_EXIT_OK;
}

int cli_select_runs(const char *cmd, const char *db_path, const char *runs_spec, const char *sweep,
                    int64_t timeline_run, results_query_t **q, results_runs_t *runs)
{
    dt_err_t err;
    dt_status st;
    *q = NULL;
    if ((st = results_query_open(q, db_path, &err)) != DT_OK ||
        (st = results_query_select(*q, runs_spec, sweep, runs, &err)) != DT_OK) {
        fprintf(stderr, "dtsim %s: %s\n", cmd, err.msg);
        return st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
    }
    if (timeline_run) {
        results_run_view_t r;
        if ((st = results_query_run(*q, timeline_run, &r, &err)) != DT_OK) {
            fprintf(stderr, "dtsim %s: --timeline-run: %s\n", cmd, err.msg);
            return st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
        }
        results_run_view_free(&r);
    }
    return CLI_EXIT_OK;
}
