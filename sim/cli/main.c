/* dtsim: entry point and command dispatch. */
#include <stdio.h>
#include <string.h>


#include "blas.h"
#include "cli.h"
#include "cli_util.h"
#include "strategy.h"
#include "transport.h"
#include "transport_mpi.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: dtsim COMMAND [OPTIONS]\n"
            "\n"
            "Real neural-network training inside a simulated cluster.\n"
            "\n"
            "commands:\n"
            "  run SCENARIO       run a scenario in the simulated cluster, store it in the\n"
            "                     results database, print a summary\n"
            "  check SCENARIO     validate a scenario, print its resolved configuration\n"
            "  platform SCENARIO  print the SimGrid platform XML a scenario generates\n"
            "  plot               draw figures of stored runs (accuracy, time breakdown,\n"
            "                     scaling, timeline) with gnuplot\n"
            "  report             one HTML page about stored runs: summary, figures,\n"
            "                     configurations, lessons\n"
            "  serve              a live web page of stored and running runs, on 127.0.0.1\n"
            "  keys               every scenario key with its default and meaning\n"
            "  strategies         every strategy, the keys it reads, what it does\n"
            "  devices [NAME]     the device catalogue (cluster.device): peaks per precision,\n"
            "                     memory, power; NAME: one device with each value's source\n"
            "  runs               list the runs of a results database\n"
            "  show RUN           print one run whole: summary, rows, every parameter\n"
            "  export             write runs as CSV (--csv: every table, --tidy: a row per\n"
            "                     run) or a run's timeline as a Chrome trace (--trace RUN)\n"
            "  merge              join results databases (a sweep's members run apart)\n"
            "  validate SCENARIO  real time against simulated: the scenario run real on a\n"
            "                     testbed of shaped links and simulated under CM02, LV08,\n"
            "                     SMPI and tcp; --calibrate fits tcp to your network (root,\n"
            "                     Open MPI)\n"
            "  train              train a model in one process (no simulation), printing\n"
            "                     test accuracy after each epoch\n"
            "  bench trainer      training speed and accuracy on this machine\n"
            "  bench sim SCENARIO\n"
            "                     the simulation's own cost against plain training\n"
            "  calibrate          measure this machine's step time: a device profile\n"
            "  plan               capacity planning: every tensor x pipeline x data layout of\n"
            "                     a model profile on N devices that fits, simulated, best\n"
            "                     first (memory, TFLOP/s per device, energy, cost);\n"
            "                     --time-limit, --resume, --show\n"
            "  goodput            what failures cost: the checkpoint interval (Young, Daly)\n"
            "                     and the share of time lost to checkpoints, rework and\n"
            "                     restarts at a device MTBF, checked by simulation\n"
            "  profile transformer\n"
            "                     write the model profile of a GPT, Llama or BERT of any\n"
            "                     shape, for timing-only runs (model.arch = profile:FILE)\n"
            "  profile time       a profile's layers timed by operation and shape on a\n"
            "                     device: GEMMs, attention, memory-bound, TFLOP/s\n"
            "\n"
            "options:\n"
            "  -h, --help         this text (COMMAND --help for a command's options)\n"
            "  --version          dtsim and SimGrid versions, and which OpenBLAS kernels run\n");
}

int main(int argc, char **argv)
{
    trainer_blas_select(argv); /* may start dtsim again, with OpenBLAS's AVX-512 kernels */
    sim_strategies_register();
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        char version[32];
        sim_transport_version(version, sizeof version);
        char blas[256];
        trainer_blas_describe(blas, sizeof blas);
        char mpi[128];
        sim_real_library(mpi, sizeof mpi);
        printf("dtsim %s (SimGrid %s)\n%s\nreal mode: %s\n", DTSIM_VERSION, version, blas,
               sim_real_built() ? mpi : "not built (no MPI found at configure time)");
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "run"))
        return cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check"))
        return cli_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "runs"))
        return cli_runs(argc - 1, argv + 1);
    if (!strcmp(cmd, "show"))
        return cli_show(argc - 1, argv + 1);
    if (!strcmp(cmd, "export"))
        return cli_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "merge"))
        return cli_merge(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot"))
        return cli_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "report"))
        return cli_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve"))
        return cli_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "keys"))
        return cli_keys(argc - 1, argv + 1);
    if (!strcmp(cmd, "strategies"))
        return cli_strategies(argc - 1, argv + 1);
    if (!strcmp(cmd, "devices"))
        return cli_devices(argc - 1, argv + 1);
    if (!strcmp(cmd, "platform"))
        return cli_platform(argc - 1, argv + 1);
    if (!strcmp(cmd, "train"))
        return cli_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "calibrate"))
        return cli_calibrate(argc - 1, argv + 1);
    if (!strcmp(cmd, "validate"))
        return cli_validate(argc - 1, argv + 1);
    if (!strcmp(cmd, "plan"))
        return cli_plan(argc - 1, argv + 1);
    if (!strcmp(cmd, "goodput"))
        return cli_goodput(argc - 1, argv + 1);
    if (!strcmp(cmd, "profile"))
        return cli_profile(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return cli_bench(argc - 1, argv + 1);
    fprintf(stderr, "dtsim: unknown command \"%s\" (try dtsim --help)\n", cmd);
    return CLI_EXIT_USAGE;
}
