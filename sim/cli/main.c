/* dtsim: entry point; the command named is found in the command table (commands.c). */
#include <stdio.h>
#include <string.h>

#include "blas.h"
#include "cli.h"
#include "cli_util.h"
#include "strategy.h"
#include "transport.h"
#include "transport_mpi.h"

int main(int argc, char **argv)
{
    trainer_blas_select(argv); /* may start dtsim again, with OpenBLAS's AVX-512 kernels */
    sim_strategies_register();
    if (argc < 2) {
        cli_commands_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        cli_commands_usage(stdout);
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
    if (!strcmp(cmd, "__complete")) /* the table, for the completion and the man page */
        return cli_complete(argc - 1, argv + 1);
    const cli_command *c = cli_command_find(cmd, argc > 2 ? argv[2] : NULL);
    if (c)
        return c->handler(argc - 1, argv + 1);
    fprintf(stderr, "dtsim: unknown command \"%s\" (try dtsim --help)\n", cmd);
    return CLI_EXIT_USAGE;
}
