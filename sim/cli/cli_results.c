/* `dtsim runs` and `dtsim export`: what the results database holds, as a list, and as CSV
 * files, a tidy table or a Chrome trace. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "export.h"
#include "query.h"

enum {
    OPT_DB = 1,
    OPT_WIDE,
    OPT_CSV,
    OPT_TIDY,
    OPT_TRACE,
    OPT_RUNS,
    OPT_SWEEP,
    OPT_OUT,
    OPT_ALL_PARAMS
};

static const cli_option runs_options[] = {
    {.id = OPT_DB,
     .name = "db",
     .kind = CLI_VALUE_PATH,
     .metavar = "PATH",
     .help = "results database [" DEFAULT_DB "]"},
    {.id = OPT_WIDE,
     .name = "wide",
     .help = "every column (loss, time to target, bytes, steps, start, sweep), names whole"},
    {0},
};

/* dtsim runs' width in columns, as text for its help */
#define RUNS_COLUMNS_TEXT CLI_STR(RESULTS_RUNS_COLUMNS)

const cli_spec cli_runs_spec = {
    .usage = "[--db PATH] [--wide]",
    .about = "Lists the runs of a results database [" DEFAULT_DB "], one line each: id,\n"
             "name, strategy, status, final accuracy, simulated time and wall time, "
             "in " RUNS_COLUMNS_TEXT "\n"
             "columns (long names shortened in the middle with ...), then each sweep's id\n"
             "and runs. dtsim show ID prints one run whole.\n",
    .options = runs_options,
};

int cli_runs(int argc, char **argv)
{
    const char *db = DEFAULT_DB;
    int wide = 0, id;
    cli_parser p;
    cli_parse_init(&p, "runs", &cli_runs_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        if (id == OPT_DB)
            db = p.value;
        else
            wide = 1;
    }
    if (id < 0)
        return p.status;
    if (p.n_args)
        return cli_usage_error("runs", "unexpected argument \"%s\"", p.args[0]);
    dt_err_t err;
    results_query_t *q;
    if (results_query_open_current(&q, db, &err) || results_runs_print(q, stdout, wide, &err)) {
        results_query_close(q);
        fprintf(stderr, "dtsim runs: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    results_query_close(q);
    return CLI_EXIT_OK;
}

/* The files --csv writes, from the exporter's list of tables. */
static void export_files(FILE *out)
{
    fprintf(out, "\nFiles of --csv, one row per:\n");
    for (size_t t = 0; t < results_export_n_tables; t++) {
        char file[64];
        snprintf(file, sizeof file, "%s.csv", results_export_tables[t].name);
        fprintf(out, "  %-20s %s\n", file, results_export_tables[t].row);
    }
    fprintf(out,
            "  %-20s run: its identity, each scenario key that differs between\n"
            "  %-20s the runs (--all-params: every key), its run_summary metrics\n",
            RESULTS_TIDY_CSV, "");
}

static const cli_option export_options[] = {
    {.id = OPT_CSV,
     .name = "csv",
     .help =
         "every table and view to DIR/NAME.csv, and the tidy table, with the rows of those runs; "
         "DIR [results/csv] (the files: below)"},
    {.id = OPT_TIDY,
     .name = "tidy",
     .help =
         "the tidy table alone, to FILE [results/csv/" RESULTS_TIDY_CSV "] ('-': stdout); a key "
         "as the scenario wrote it (10Gbps), and one written with a unit also in base units, in a "
         "column \"KEY (UNIT)\" beside it (cluster.bandwidth (B/s): 1250000000)"},
    {.id = OPT_TRACE,
     .name = "trace",
     .kind = CLI_VALUE_INT,
     .metavar = "RUN",
     .help =
         "the run's timeline as Chrome trace JSON (ui.perfetto.dev, chrome://tracing) to FILE "
         "[results/trace-RUN.json] ('-': stdout): a process per host, a track per node with its "
         "compute / comm / idle slices, each message a send slice on its sender (posted to "
         "received) and a receive slice on its receiver (transfer to received), a flow arrow from "
         "one to the other. It covers what the run recorded: the whole run by default "
         "(run.timeline_steps = all; at most 200,000 intervals and as many messages), the first N "
         "gradients' worth with run.timeline_steps = N, the first step of 16 hosts per role with "
         "run.timeline = sampled (a timing-only model's default); otherData.covers says which",
     .lo = 1,
     .hi = (double)LONG_MAX},
    {.id = OPT_DB,
     .name = "db",
     .kind = CLI_VALUE_PATH,
     .metavar = "PATH",
     .help = "results database [" DEFAULT_DB "]"},
    {.id = OPT_RUNS,
     .name = "runs",
     .kind = CLI_VALUE_TEXT,
     .metavar = "SPEC",
     .help = "these runs: ids and ranges, e.g. 3,5-9"},
    {.id = OPT_SWEEP,
     .name = "sweep",
     .kind = CLI_VALUE_TEXT,
     .metavar = "ID|NAME",
     .help =
         "every run of that sweep, whatever its status: its id, or its name (run.name: the newest "
         "sweep of it with more than one run)"},
    {.id = OPT_ALL_PARAMS,
     .name = "all-params",
     .help = "every scenario key in the tidy table, not only those that differ between the runs"},
    {.id = OPT_OUT,
     .name = "out",
     .kind = CLI_VALUE_PATH,
     .metavar = "DIR|FILE",
     .help = "where to write (DIR for --csv)"},
    {0},
};

const cli_spec cli_export_spec = {
    .usage = "--csv [--db PATH] [--runs 3,5-9 | --sweep ID|NAME] [--all-params] [--out DIR]\n"
             "dtsim export --tidy [--db PATH] [--runs 3,5-9 | --sweep ID|NAME] [--all-params]"
             " [--out FILE]\n"
             "dtsim export --trace RUN [--db PATH] [--out FILE]",
    .about = "Writes runs of a results database [" DEFAULT_DB "] for other tools and prints\n"
             "the path of every file written. Runs: --runs (ids and ranges), --sweep (every\n"
             "run of that sweep, whatever its status: its id, or its name, run.name, for the\n"
             "newest sweep of it with more than one run), or all.\n",
    .options = export_options,
    .more = export_files,
    .footer = "CSV is RFC 4180, NULL an empty field, reals in their shortest round-trip form.\n"
              "A column with a unit says it in its header, as results/schema.sql gives it:\n"
              "\"sim_time (s)\", \"bytes (B)\", \"host_joules (J)\", \"dollars (USD)\",\n"
              "\"bandwidth (B/s)\", \"throughput (samples/s)\"; ids, counts, names, losses and\n"
              "fractions (accuracies, shares) keep their bare names.\n",
};

int cli_export(int argc, char **argv)
{
    const char *db = DEFAULT_DB, *out = NULL, *spec = NULL, *sweep = NULL, *trace = NULL;
    int csv = 0, tidy = 0, all_params = 0, id;
    long run = 0;
    cli_parser p;
    cli_parse_init(&p, "export", &cli_export_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case OPT_CSV:
            csv = 1;
            break;
        case OPT_TIDY:
            tidy = 1;
            break;
        case OPT_TRACE:
            trace = p.value;
            run = p.integer;
            break;
        case OPT_DB:
            db = p.value;
            break;
        case OPT_RUNS:
            spec = p.value;
            break;
        case OPT_SWEEP:
            sweep = p.value;
            break;
        case OPT_OUT:
            out = p.value;
            break;
        case OPT_ALL_PARAMS:
            all_params = 1;
            break;
        }
    }
    if (id < 0)
        return p.status;
    if (p.n_args)
        return cli_usage_error("export", "unexpected argument \"%s\"", p.args[0]);
    if (csv + tidy + !!trace != 1)
        return cli_usage_error("export", "say which one: --csv, --tidy or --trace RUN");
    if (spec && sweep)
        return cli_usage_error("export", "--runs and --sweep both choose runs: give one");
    if (trace && (spec || sweep || all_params))
        return cli_usage_error("export", "--trace RUN takes one run: no --runs, --sweep or "
                                         "--all-params");
    if (csv && out && !strcmp(out, "-"))
        return cli_usage_error("export", "--csv writes a file per table: --out takes a "
                                         "directory, not -");
    dt_err_t err;
    dt_status st;
    if (trace) {
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
