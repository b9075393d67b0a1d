/* The dtsim command line: one function per command, sharing how options are read and how
 * usage errors are reported (one line, exit code 2). */
#ifndef DTSIM_CLI_H
#define DTSIM_CLI_H

/* The results database when neither --db nor run.db names one (run.db's default). */
#define DEFAULT_DB "results/dtsim.db"

#include <stdint.h>
#include <sys/types.h>

#include "common.h"

#ifndef DTSIM_VERSION
#define DTSIM_VERSION "unknown"
#endif

enum { CLI_EXIT_OK = 0, CLI_EXIT_RUN = 1, CLI_EXIT_USAGE = 2 };

/** dtsim train: trains a model in one process (no simulation), accuracy after each epoch. */
int cli_train(int argc, char **argv);
/** dtsim bench: `trainer` (speed and accuracy here), or `sim`, handed to cli_bench_sim. */
int cli_bench(int argc, char **argv);
/** dtsim calibrate: measures this machine's step time as a device profile. */
int cli_calibrate(int argc, char **argv);
/* `dtsim calibrate --gemm` (cli_gemm.c): the backend's GEMM curve. */
int cli_calibrate_gemm(int argc, char **argv);
/** dtsim run: runs a scenario (each run of its sweep), stores each run, prints a summary. */
int cli_run(int argc, char **argv);
/* Runs one resolved scenario in this process (SimGrid runs once per process) and stores it
 * in sc->db with the sweep id and index (NULL, 0: none); prints the summary table when
 * summary is set; draws the live view on stderr and/or publishes it (live), at pace simulated
 * seconds per wall second (0: as fast as it goes). Returns the exit code. */
struct scenario;
/* live: the terminal view (--live) and the published state (--publish), or'd */
enum { CLI_LIVE_TERM = 1, CLI_LIVE_PUBLISH = 2 };
int cli_run_scenario(const struct scenario *sc, const char *argv0, const char *sweep,
                     long index, int summary, int live, double pace);
/* A row of a run's params table besides its scenario keys ("plan.options": dtsim plan's
 * own, for --show and --resume); number NAN when it is text only. */
typedef struct cli_param {
    const char *key, *text;
    double number;
} cli_param_t;
/* cli_run_scenario with no summary, no live view, and params[0..n) stored with the run's
 * scenario keys (one transaction: a run row never lacks them). */
int cli_run_scenario_with(const struct scenario *sc, const char *argv0, const char *sweep,
                          long index, const cli_param_t *params, int n);
/* What a run of sc meets before its first step (data, platform, fault targets, every host's
 * memory against its device's), met in a child process as `run` would meet it; DT_ERR_INPUT
 * with the run's one-line error. On success memory gets "worker 3 holds 61.2 GB of 80 GB
 * (h100)", or "" when the device states no capacity. */
dt_status cli_dry_run(const struct scenario *sc, const char *argv0, char *memory, size_t n,
                      dt_err_t *err);
/* cli_dry_run in two halves, so that several children check at once (dtsim plan -j): start
 * forks the child (sc may be reused as soon as it returns), finish waits for it and answers
 * as cli_dry_run does. A start with nothing to check, or that cannot fork, leaves no child
 * and its finish says DT_OK with memory "" (a run would then meet what there is). */
typedef struct cli_dry {
    int pid; /* 0: no child */
    int fd;
    char path[512]; /* the scenario's, for a child that dies without a word */
} cli_dry_t;
void cli_dry_run_start(const struct scenario *sc, const char *argv0, cli_dry_t *d);
dt_status cli_dry_run_finish(cli_dry_t *d, char *memory, size_t n, dt_err_t *err);
/** dtsim check: validates a scenario and prints its resolved configuration. */
/* `mpirun -n P dtsim run SWEEP.ini --mpi` (cli_spread.c): the sweep's members spread over
 * the P processes, rank 0 merging them into sc->db; every process returns the worst exit
 * code. */
int cli_sweep_spread(const struct scenario *sc, const char *path, const char *const *sets,
                     int n_sets, int jobs, const char *argv0);
/* `dtsim validate SCENARIO` (cli_validate.c): real seconds per step on the shaped-link
 * testbed against CM02, LV08 and SMPI's. */
int cli_validate(int argc, char **argv);
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
/** dtsim report: one self-contained HTML page about stored runs (results/report.h). */
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

/* Prints "dtsim CMD: MESSAGE" and a hint to --help on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict number parsing for option values: the whole text must be a number in [lo, hi]. */
int cli_parse_long(const char *text, long lo, long hi, long *out);
/** The same for a finite double: 0 with *out set, or -1 with *out untouched. */
int cli_parse_double(const char *text, double lo, double hi, double *out);
/* A time of at least 0 in scenario units (ns to h) or days (54d): 0, or -1 (cli_goodput.c). */
int cli_parse_duration(const char *text, double *out);
/* Child processes, started without a shell: path run with args (args[0] its name, NULL at
 * the end), its stdout to `out` (-1: /dev/null), stderr shared. cli_spawn_start returns the
 * pid (or -1), cli_spawn_wait its exit code (127 when it could not start, 128 killed),
 * cli_spawn both. */
pid_t cli_spawn_start(const char *path, const char *const *args, int out);
int cli_spawn_wait(pid_t pid);
int cli_spawn(const char *path, const char *const *args, int out);

#endif
