/* The dtsim command line: one function per command, found by main.c in the command table
 * (commands.c), which `dtsim --help`, the bash completion and the man page are written from;
 * how the commands read options and report usage errors is cli_util.h's, how they run a
 * scenario cli_exec.h's. */
#ifndef DTSIM_CLI_H
#define DTSIM_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "cli_util.h"

/* One row of the command table: a command, or a sub-command ("bench sim") of a group whose
 * rows share the first word and its handler. */
typedef struct {
    const char *name;    /* "run", "bench sim" */
    const char *args;    /* its arguments beside the name in dtsim --help: "SCENARIO" */
    const char *summary; /* its line in dtsim --help, wrapped by the code */
    int (*handler)(int argc, char **argv); /* argv[0] is the first word of the name */
    const cli_spec *spec;                  /* its options and help; NULL: it reads its own (plan) */
} cli_command;

/* The command table (commands.c), in the order dtsim --help lists it. */
extern const cli_command cli_commands[];
extern const size_t cli_n_commands;

/** Prints `dtsim --help` from the table. */
void cli_commands_usage(FILE *out);
/** Prints the usage of a group of sub-commands (dtsim bench) from the table. */
void cli_group_usage(FILE *out, const char *word);
/** The row of `dtsim WORD [SUB]` (a group's row for SUB when SUB names one, else its first);
 * NULL when no command is named WORD. */
const cli_command *cli_command_find(const char *word, const char *sub);
/** dtsim __complete WHAT [CMD [SUB]]: the table as the bash completion and the man page read
 * it (sim/cli/README.md). */
int cli_complete(int argc, char **argv);

/* The option tables of the commands that read theirs through cli_parse_next. */
extern const cli_spec cli_runs_spec, cli_show_spec, cli_export_spec, cli_merge_spec, cli_keys_spec,
    cli_strategies_spec, cli_run_spec, cli_check_spec, cli_platform_spec, cli_bench_sim_spec,
    cli_report_spec, cli_plot_spec, cli_serve_spec, cli_devices_spec, cli_goodput_spec,
    cli_train_spec, cli_bench_trainer_spec, cli_calibrate_spec, cli_profile_transformer_spec,
    cli_profile_time_spec, cli_validate_spec;

/** dtsim train: trains a model in one process (no simulation), accuracy after each epoch. */
int cli_train(int argc, char **argv);
/** dtsim bench: `trainer` (speed and accuracy here), or `sim`, handed to cli_bench_sim. */
int cli_bench(int argc, char **argv);
/** dtsim calibrate: measures this machine's step time as a device profile. */
int cli_calibrate(int argc, char **argv);
/** dtsim run: runs a scenario (each run of its sweep), stores each run, prints a summary. */
int cli_run(int argc, char **argv);
/** dtsim validate: real seconds per step on the shaped-link testbed against CM02, LV08 and
 * SMPI's (cli_validate.c). */
int cli_validate(int argc, char **argv);
/** dtsim check: validates a scenario and prints its resolved configuration. */
int cli_check(int argc, char **argv);
/** dtsim platform: prints the platform XML a scenario generates (--links: hosts, links). */
int cli_platform(int argc, char **argv);
/** dtsim bench sim: the simulation's own cost against plain training (argv[0] is "sim"). */
int cli_bench_sim(int argc, char **argv);
/** dtsim keys: every scenario key with its default and meaning (Markdown). */
int cli_keys(int argc, char **argv);
/** dtsim strategies: every strategy, the keys it reads, what it does (Markdown). */
int cli_strategies(int argc, char **argv);
/** dtsim devices: the device catalogue, or one device value by value with its sources. */
int cli_devices(int argc, char **argv);
/** dtsim plot: draws figures of stored runs with gnuplot. */
int cli_plot(int argc, char **argv);
/** dtsim report: one self-contained HTML page about stored runs (results/figures/report.h). */
int cli_report(int argc, char **argv);
/** dtsim serve: a live web page about a results database, on 127.0.0.1 (libmicrohttpd). */
int cli_serve(int argc, char **argv);
/** dtsim runs: lists the runs of a results database. */
int cli_runs(int argc, char **argv);
/** dtsim show: prints one run of a results database whole. */
int cli_show(int argc, char **argv);
/** dtsim export: runs as CSV files (every table, the tidy table) or a run as a Chrome trace. */
int cli_export(int argc, char **argv);
/** dtsim merge: joins results databases (a sweep's members run as separate jobs). */
int cli_merge(int argc, char **argv);
/** dtsim plan: enumerates, fits and simulates the parallel layouts of a model on N devices. */
int cli_plan(int argc, char **argv);
/** dtsim goodput: the checkpoint interval and the time failures cost (scenario/goodput.h). */
int cli_goodput(int argc, char **argv);
/** dtsim profile: writes the model profile of a transformer of the user's shape. */
int cli_profile(int argc, char **argv);

#endif
