/* `dtsim runs` and `dtsim export`: what the results database holds, as a list, and as CSV
 * files, a tidy table or a Chrome trace. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "export.h"
#include "query.h"

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

static void export_help(void)
{
    printf("usage: dtsim export --csv [--db PATH] [--runs 3,5-9 | --sweep ID|NAME] [--all-params]"
           " [--out DIR]\n"
           "       dtsim export --tidy [--db PATH] [--runs 3,5-9 | --sweep ID|NAME] [--all-params]"
           " [--out FILE]\n"
           "       dtsim export --trace RUN [--db PATH] [--out FILE]\n\n"
           "Writes runs of a results database [" DEFAULT_DB "] for other tools and prints\n"
           "the path of every file written. Runs: --runs (ids and ranges), --sweep (every\n"
           "run of that sweep, whatever its status: its id, or its name, run.name, for the\n"
           "newest sweep of it with more than one run), or all.\n\n"
           "--csv          every table and view to DIR/NAME.csv, and the tidy table, with\n"
           "               the rows of those runs; DIR [results/csv]. Files, one row per:\n");
    for (size_t t = 0; t < results_export_n_tables; t++) {
        char file[64];
        snprintf(file, sizeof file, "%s.csv", results_export_tables[t].name);
        printf("  %-20s %s\n", file, results_export_tables[t].row);
    }
    printf("  %-20s run: its identity, each scenario key that differs between\n"
           "  %-20s the runs (--all-params: every key), its run_summary metrics\n"
           "--tidy         the tidy table alone, to FILE [results/csv/" RESULTS_TIDY_CSV "]\n"
           "               ('-': stdout); a key as the scenario wrote it (10Gbps), and\n"
           "               one written with a unit also in base units, in a column\n"
           "               \"KEY (UNIT)\" beside it (cluster.bandwidth (B/s): 1250000000)\n"
           "--trace RUN    the run's timeline as Chrome trace JSON (ui.perfetto.dev,\n"
           "               chrome://tracing) to FILE [results/trace-RUN.json] ('-': stdout):\n"
           "               a process per host, a track per node with its compute / comm /\n"
           "               idle slices, each message a send slice on its sender (posted to\n"
           "               received) and a receive slice on its receiver (transfer to\n"
           "               received), a flow arrow from one to the other. It covers what the\n"
           "               run recorded: the whole run by default (run.timeline_steps = all;\n"
           "               at most 200,000 intervals and as many messages), the first N\n"
           "               gradients' worth with run.timeline_steps = N, the first step of\n"
           "               16 hosts per role with run.timeline = sampled (a timing-only\n"
           "               model's default); otherData.covers says which\n\n"
           "CSV is RFC 4180, NULL an empty field, reals in their shortest round-trip form.\n"
           "A column with a unit says it in its header, as results/schema.sql gives it:\n"
           "\"sim_time (s)\", \"bytes (B)\", \"host_joules (J)\", \"dollars (USD)\",\n"
           "\"bandwidth (B/s)\", \"throughput (samples/s)\"; ids, counts, names, losses and\n"
           "fractions (accuracies, shares) keep their bare names.\n",
           RESULTS_TIDY_CSV, "");
}

int cli_export(int argc, char **argv)
{
    static const struct option longs[] = {
        {"csv", no_argument, 0, 'c'},          {"tidy", no_argument, 0, 'T'},
        {"trace", required_argument, 0, 't'},  {"db", required_argument, 0, 'd'},
        {"runs", required_argument, 0, 'r'},   {"sweep", required_argument, 0, 's'},
        {"out", required_argument, 0, 'o'},    {"all-params", no_argument, 0, 'a'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *db = DEFAULT_DB, *out = NULL, *spec = NULL, *sweep = NULL, *trace = NULL;
    int csv = 0, tidy = 0, all_params = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            csv = 1;
            break;
        case 'T':
            tidy = 1;
            break;
        case 't':
            trace = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'r':
            spec = optarg;
            break;
        case 's':
            sweep = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'a':
            all_params = 1;
            break;
        case 'h':
            export_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("export", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("export", "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("export", "unexpected argument \"%s\"", argv[optind]);
    if (csv + tidy + !!trace != 1)
        return cli_usage_error("export", "say which one: --csv, --tidy or --trace RUN");
    if (spec && sweep)
        return cli_usage_error("export", "--runs and --sweep both choose runs: give one");
    if (trace && (spec || sweep || all_params))
        return cli_usage_error("export", "--trace RUN takes one run: no --runs, --sweep or "
                                         "--all-params");
    if (out && !*out)
        return cli_usage_error("export", "--out needs a path");
    if (csv && out && !strcmp(out, "-"))
        return cli_usage_error("export", "--csv writes a file per table: --out takes a "
                                         "directory, not -");
    dt_err_t err;
    dt_status st;
    if (trace) {
        long run;
        if (cli_parse_long(trace, 1, LONG_MAX, &run))
            return cli_usage_error("export", "--trace \"%s\": expected a run id", trace);
        char path[64];
        snprintf(path, sizeof path, "results/trace-%ld.json", run);
        st = results_export_trace(db, run, out ? out : path, stdout, &err);
    } else {
        int64_t *runs;
        size_t n;
        st = results_export_select(db, spec, sweep, &runs, &n, &err);
        if (st == DT_OK && csv)
            st = results_export_csv(db, runs, n, all_params, out ? out : "results/csv", stdout,
                                    &err);
        else if (st == DT_OK)
            st = results_export_tidy(db, runs, n, all_params,
                                     out ? out : "results/csv/" RESULTS_TIDY_CSV, stdout, &err);
        free(runs);
    }
    if (st != DT_OK) {
        fprintf(stderr, "dtsim export: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}
