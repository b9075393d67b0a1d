/* `dtsim merge A.db B.db ... --into X.db`: the databases of a sweep's members, run as
 * separate jobs (`dtsim run SWEEP.ini --member I`), joined into one (results/merge.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "merge.h"

enum { OPT_INTO = 1 };

static const cli_option merge_options[] = {
    {.id = OPT_INTO,
     .name = "into",
     .kind = CLI_VALUE_PATH,
     .metavar = "PATH",
     .help = "the database to merge into (required)"},
    {0},
};

const cli_spec cli_merge_spec = {
    .usage = "A.db B.db ... --into X.db",
    .about = "Copies every run of the databases A, B, ... into X (made when missing), each with\n"
             "all its rows, under new run ids; sweep ids and member indexes are kept, so the\n"
             "members of a sweep run as separate jobs (dtsim run SWEEP.ini --member I, one\n"
             "database each) become one sweep that dtsim plot --sweep ID draws. A run already\n"
             "in X (the same sweep member, or the same run) is not copied twice, unless it did\n"
             "not finish and the incoming one did. Two different configurations claiming one\n"
             "member, a file of another schema version, or X among the sources: nothing is\n"
             "written, exit 2.\n",
    .options = merge_options,
};

int cli_merge(int argc, char **argv)
{
    const char *into = NULL;
    int id;
    cli_parser p;
    cli_parse_init(&p, "merge", &cli_merge_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0)
        into = p.value;
    if (id < 0)
        return p.status;
    if (!into)
        return cli_usage_error("merge", "say where: --into X.db");
    if (!p.n_args)
        return cli_usage_error("merge", "no database to merge (dtsim merge A.db B.db --into "
                                        "X.db)");
    results_merge_stats_t stats;
    dt_err_t err;
    char *sweeps = NULL;
    size_t len = 0;
    FILE *report = open_memstream(&sweeps, &len);
    DT_CHECK(report, "open_memstream failed");
    dt_status st = results_merge((const char *const *)p.args, p.n_args, into, &stats, report, &err);
    fclose(report);
    if (st) {
        free(sweeps);
        fprintf(stderr, "dtsim merge: %s\n", err.msg);
        return st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
    }
    printf("merged %d database%s into %s: %ld run%s added", p.n_args, p.n_args == 1 ? "" : "s",
           into, stats.copied, stats.copied == 1 ? "" : "s");
    if (stats.replaced)
        printf(", %ld replacing one that had not finished", stats.replaced);
    if (stats.skipped)
        printf(", %ld already there", stats.skipped);
    printf("\n%s", sweeps);
    free(sweeps);
    return CLI_EXIT_OK;
}
