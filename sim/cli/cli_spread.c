/* `mpirun -n P dtsim run SWEEP.ini --mpi`: a sweep's members spread over MPI processes, on
 * one machine or many. Process r runs members r, r + P, r + 2P, ... one after the other, each
 * as `dtsim run SWEEP.ini --member I` into a database of its own (a simulation per process,
 * as SimGrid wants); then every process sends its database's bytes to rank 0, which merges
 * them into the run's database (results/merge.h) under the sweep's one id. No process needs
 * a file system the others see. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_exec.h"
#include "cli_spread.h"
#include "cli_util.h"
#include "merge.h"
#include "scenario.h"
#include "transport_mpi.h"

/* Runs this dtsim as `argv0 run PATH --member m --db DB --set ...`; its exit code (or 1). */
static int run_member_process(const char *argv0, const char *path, long m, const char *db,
                              const char *const *sets, int n_sets)
{
    char member[32];
    snprintf(member, sizeof member, "%ld", m);
    const char **args = dt_calloc((size_t)(8 + 2 * n_sets), sizeof(char *));
    int k = 0;
    args[k++] = argv0;
    args[k++] = "run";
    args[k++] = path;
    args[k++] = "--member";
    args[k++] = member;
    args[k++] = "--db";
    args[k++] = db;
    for (int i = 0; i < n_sets; i++) {
        args[k++] = "--set";
        args[k++] = sets[i];
    }
    int rc = cli_spawn("/proc/self/exe", args, STDOUT_FILENO); /* its summary shown */
    free(args);
    return rc == 127 ? CLI_EXIT_RUN : rc;
}

/* A file's bytes (NULL, *n = 0 when it does not exist). */
static char *slurp(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20;
    char *buf = dt_malloc(cap);
    size_t got;
    while ((got = fread(buf + *n, 1, cap - *n, f)) > 0) {
        *n += got;
        if (*n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            DT_CHECK(buf, "out of memory");
        }
    }
    fclose(f);
    return buf;
}

/* Rank 0: the processes' databases written out and merged into sc->db. */
static int merge_blobs(const scenario_t *sc, const char *dir, void **blobs, const size_t *lens,
                       int size)
{
    char **paths = dt_calloc((size_t)size, sizeof(char *));
    int n = 0, rc = CLI_EXIT_OK;
    for (int r = 0; r < size && rc == CLI_EXIT_OK; r++) {
        if (!lens[r])
            continue;
        paths[n] = dt_malloc(strlen(dir) + 32);
        sprintf(paths[n], "%s/from-%d.db", dir, r);
        FILE *f = fopen(paths[n], "wb");
        if (!f || fwrite(blobs[r], 1, lens[r], f) != lens[r] || fclose(f)) {
            fprintf(stderr, "dtsim run: cannot write %s: %s\n", paths[n], strerror(errno));
            rc = CLI_EXIT_RUN;
        }
        n++;
    }
    results_merge_stats_t stats;
    dt_err_t err;
    if (rc == CLI_EXIT_OK && n > 0 &&
        results_merge((const char *const *)paths, n, sc->db, &stats, stdout, &err)) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = CLI_EXIT_RUN;
    } else if (rc == CLI_EXIT_OK) {
        printf("%ld runs from %d processes merged into %s\n", n ? stats.copied : 0, size, sc->db);
    }
    for (int i = 0; i < n; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    free(paths);
    return rc;
}

int cli_sweep_spread(const scenario_t *sc, const char *path, const char *const *sets, int n_sets,
                     int jobs, const char *argv0)
{
    if (!sc->sweep.n_keys)
        return cli_usage_error("run",
                               "--mpi spreads a sweep's members over processes and %s "
                               "is one run (--real runs it on real processes)",
                               path);
    if (jobs > 1)
        return cli_usage_error("run", "--mpi runs one member at a time per process: start "
                                      "more processes instead of -j");
    dt_err_t err;
    if (sim_real_init(NULL, NULL, &err)) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    int rank = sim_real_rank(), size = sim_real_size();
    char dir[] = "/tmp/dtsim-spread-XXXXXX";
    long rc = mkdtemp(dir) ? CLI_EXIT_OK : CLI_EXIT_RUN;
    char db[64];
    snprintf(db, sizeof db, "%s/members.db", dir);
    long n = scenario_sweep_count(sc);
    for (long m = rank; rc != CLI_EXIT_USAGE && m < n; m += size) {
        int r = run_member_process(argv0, path, m, db, sets, n_sets);
        if (r > rc)
            rc = r;
    }
    size_t len;
    char *mine = slurp(db, &len);
    size_t *lens = dt_calloc((size_t)size, sizeof(size_t));
    void **blobs = sim_real_gather(mine ? mine : "", len, lens);
    free(mine);
    unlink(db);
    if (blobs) {
        int m = merge_blobs(sc, dir, blobs, lens, size);
        if (m > rc)
            rc = m;
        for (int r = 0; r < size; r++)
            free(blobs[r]);
        free(blobs);
    }
    free(lens);
    rmdir(dir);
    long worst = -sim_real_min_long(-rc); /* every process exits with the worst code */
    sim_real_finalize();
    return (int)worst;
}
