/* `dtsim runs` and `dtsim export --csv`: what the results database holds, as a list and as
 * CSV files. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "query.h"

#define MAX_RUNS 100000

int cli_runs(int argc, char **argv)
{
    static const struct option longs[] = {{"db", required_argument, 0, 'd'},
                                          {"wide", no_argument, 0, 'w'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *db = DEFAULT_DB;
    int wide = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'w':
            wide = 1;
            break;
        case 'h':
            printf("usage: dtsim runs [--db PATH] [--wide]\n\n"
                   "Lists the runs of a results database [" DEFAULT_DB "], one line each: id,\n"
                   "name, strategy, status, final accuracy, simulated time and wall time, in %d\n"
                   "columns (long names shortened in the middle with ...), then each sweep's id\n"
                   "and runs. dtsim show ID prints one run whole.\n\n"
                   "  --wide   every column (loss, time to target, bytes, steps, start, sweep),\n"
                   "           names whole\n",
                   RESULTS_RUNS_COLUMNS);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("runs", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("runs", "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("runs", "unexpected argument \"%s\"", argv[optind]);
    dt_err_t err;
    results_query_t *q;
    if (results_query_open_current(&q, db, &err) ||
        results_runs_print(q, stdout, wide, &err)) {
        results_query_close(q);
        fprintf(stderr, "dtsim runs: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    results_query_close(q);
    return CLI_EXIT_OK;
}

int cli_export(int argc, char **argv)
{
    static const struct option longs[] = {
        {"csv", no_argument, 0, 'c'},          {"db", required_argument, 0, 'd'},
        {"runs", required_argument, 0, 'r'},   {"out", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *db = DEFAULT_DB, *out = "results/csv", *spec = NULL;
    int csv = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            csv = 1;
            break;
        case 'd':
            db = optarg;
            break;
        case 'r':
            spec = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            printf("usage: dtsim export --csv [--db PATH] [--runs 3,5-9] [--out DIR]\n\n"
                   "Writes DIR/TABLE.csv for every table of the database (runs, params, evals,\n"
                   "workers, summary, staleness, label_hist, timeline, links, faults), with the\n"
                   "rows of the given runs [all], to DIR [results/csv]; database [" DEFAULT_DB
                   "].\n");
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("export", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("export", "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("export", "unexpected argument \"%s\"", argv[optind]);
    if (!csv)
        return cli_usage_error("export", "say which format: --csv (the only one so far)");
    static int64_t runs[MAX_RUNS];
    size_t n = 0;
    dt_err_t err;
    if (spec) {
        results_id_range_t *ranges;
        size_t n_ranges;
        if (results_runs_spec_parse(spec, &ranges, &n_ranges, &err))
            return cli_usage_error("export", "--runs: %s", err.msg);
        for (size_t r = 0; r < n_ranges; r++)
            for (int64_t id = ranges[r].lo; id <= ranges[r].hi; id++) {
                if (n == MAX_RUNS) {
                    free(ranges);
                    return cli_usage_error("export", "--runs: more than %d runs", MAX_RUNS);
                }
                runs[n++] = id;
            }
        free(ranges);
    }
    if (results_export_csv(db, runs, n, out, stdout, &err)) {
        fprintf(stderr, "dtsim export: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}
