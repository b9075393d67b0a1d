/* `dtsim merge A.db B.db ... --into X.db`: the databases of a sweep's members, run as
 * separate jobs (`dtsim run SWEEP.ini --member I`), joined into one (results/merge.h). */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "merge.h"

static void merge_help(void)
{
    printf("usage: dtsim merge A.db B.db ... --into X.db\n"
           "\n"
           "Copies every run of the databases A, B, ... into X (made when missing), each with\n"
           "all its rows, under new run ids; sweep ids and member indexes are kept, so the\n"
           "members of a sweep run as separate jobs (dtsim run SWEEP.ini --member I, one\n"
           "database each) become one sweep that dtsim plot --sweep ID draws. A run already\n"
           "in X (the same sweep member, or the same run) is not copied twice, unless it did\n"
           "not finish and the incoming one did. Two different configurations claiming one\n"
           "member, a file of another schema version, or X among the sources: nothing is\n"
           "written, exit 2.\n"
           "\n"
           "options:\n"
           "  --into PATH   the database to merge into (required)\n"
           "  -h, --help    this text\n");
}

int cli_merge(int argc, char **argv)
{
    static const struct option longs[] = {
        {"into", required_argument, 0, 'i'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *into = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (!optarg[0])
                return cli_usage_error("merge", "--into needs a path");
            into = optarg;
            break;
        case 'h':
            merge_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("merge", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("merge", "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (!into)
        return cli_usage_error("merge", "say where: --into X.db");
    if (optind >= argc)
        return cli_usage_error("merge", "no database to merge (dtsim merge A.db B.db --into "
                                        "X.db)");
    results_merge_stats_t stats;
    dt_err_t err;
    char *sweeps = NULL;
    size_t len = 0;
    FILE *report = open_memstream(&sweeps, &len);
    DT_CHECK(report, "open_memstream failed");
    dt_status st = results_merge((const char *const *)argv + optind, argc - optind, into,
                                 &stats, report, &err);
    fclose(report);
    if (st) {
        free(sweeps);
        fprintf(stderr, "dtsim merge: %s\n", err.msg);
        return st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
    }
    printf("merged %d database%s into %s: %ld run%s added", argc - optind,
           argc - optind == 1 ? "" : "s", into, stats.copied, stats.copied == 1 ? "" : "s");
    if (stats.replaced)
        printf(", %ld replacing one that had not finished", stats.replaced);
    if (stats.skipped)
        printf(", %ld already there", stats.skipped);
    printf("\n%s", sweeps);
    free(sweeps);
    return CLI_EXIT_OK;
}
