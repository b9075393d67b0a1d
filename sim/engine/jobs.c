/* Several jobs on one platform (see jobs.h). */
#define _POSIX_C_SOURCE 200809L
#include "jobs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOBS_MAX 256
#define JOB_SETS 32 /* platform keys a top file may give ([cluster] has fewer) */

int sim_jobs_given(const scenario_t *sc)
{
    return strcmp(sc->jobs_files, "none") != 0;
}

/* The platform keys: every [cluster] key but workers, which is a job's own (and the top
 * file's host count). */
static int platform_key(const char *key)
{
    return !strncmp(key, "cluster.", 8) && strcmp(key, "cluster.workers");
}

/* The platform keys the top file gives, as assignments: each job's defaults. */
typedef struct top_sets {
    const scenario_t *top;
    char text[JOB_SETS][SCENARIO_STR + 64];
    const char *sets[JOB_SETS];
    int n;
} top_sets_t;

static void add_set(void *ctx, const char *key, const char *text, double number)
{
    (void)number;
    top_sets_t *t = ctx;
    if (!platform_key(key) || !scenario_key_given(t->top, key))
        return;
    DT_ASSERT(t->n < JOB_SETS);
    snprintf(t->text[t->n], sizeof t->text[t->n], "%s=%s", key, text);
    t->sets[t->n] = t->text[t->n];
    t->n++;
}

/* A platform key a job gives otherwise than the top file: its first, in key order. */
typedef struct conflict {
    const scenario_t *top, *job;
    char key[64], top_text[SCENARIO_STR], job_text[SCENARIO_STR];
} conflict_t;

static void top_text(void *ctx, const char *key, const char *text, double number)
{
    (void)number;
    conflict_t *c = ctx;
    if (!strcmp(key, c->key))
        snprintf(c->top_text, sizeof c->top_text, "%s", text);
}

static void find_conflict(void *ctx, const char *key, const char *text, double number)
{
    (void)number;
    conflict_t *c = ctx;
    if (c->key[0] || !platform_key(key) || !scenario_key_given(c->job, key))
        return;
    snprintf(c->key, sizeof c->key, "%s", key);
    snprintf(c->job_text, sizeof c->job_text, "%s", text);
    scenario_foreach_key(c->top, top_text, c);
    if (!strcmp(c->top_text, c->job_text))
        c->key[0] = '\0'; /* the same value: no conflict */
}

/* What jobs do not support, in a job file or the top file: one line, or DT_OK. */
static dt_status unsupported(const scenario_t *sc, const char *what, dt_err_t *err)
{
    char where[SCENARIO_STR + 64];
    if (sc->sweep.n_keys)
        return dt_err_input(err,
                            "%s: a [sweep] in %s (jobs are one simulation: sweep a top "
                            "file's copies instead)",
                            sc->path, what);
    if (scenario_has_faults(sc))
        return dt_err_input(err, "%s: [faults] in %s (not simulated with several jobs)", sc->path,
                            what);
    if (sc->platform == SIM_PLATFORM_EDGE || sc->platform == SIM_PLATFORM_FILE) {
        scenario_key_location(sc, "cluster.platform", where, sizeof where);
        return dt_err_input(err,
                            "%s: jobs share a generated platform (star, fat-tree, "
                            "multi-rack, torus, dragonfly or rail), not %s",
                            where, sc->platform == SIM_PLATFORM_EDGE ? "edge" : "a file");
    }
    return DT_OK;
}

/* Job i's file: read with the top file's platform keys, checked against them. */
static dt_status load_job(sim_jobs_t *j, int i, const char *file, const top_sets_t *sets,
                          dt_err_t *err)
{
    const scenario_t *top = j->top;
    char where[SCENARIO_STR + 64], path[2 * SCENARIO_STR + 2];
    scenario_key_location(top, "jobs.files", where, sizeof where);
    /* relative to the top file's folder */
    const char *slash = strrchr(top->path, '/');
    if (file[0] == '/' || !slash)
        snprintf(path, sizeof path, "%s", file);
    else
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - top->path), top->path, file);
    if (access(path, R_OK) != 0)
        return dt_err_input(err, "%s: %s: %s", where, path, strerror(errno));
    struct stat sb; /* a FIFO would block its reading for good */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return dt_err_input(err, "%s: %s: not a regular file", where, path);
    snprintf(j->path[i], sizeof j->path[i], "%s", file);

    /* the top file's platform keys as the job's defaults: a platform key the job gives
     * must have the top file's value */
    scenario_t *sc = &j->sc[i];
    if (scenario_load_under(sc, path, sets->sets, sets->n, err))
        return DT_ERR_INPUT;
    if (sim_jobs_given(sc)) {
        scenario_key_location(sc, "jobs.files", where, sizeof where);
        return dt_err_input(err, "%s: a job cannot have jobs of its own", where);
    }
    /* cluster.workers is the one key the top file does not hand down: a job without it
     * would silently get the default's 8 hosts */
    if (!scenario_key_given(sc, "cluster.workers"))
        return dt_err_input(err,
                            "%s: cluster.workers missing: a job states its own host "
                            "count (the platform has %ld, cluster.workers in %s)",
                            sc->path, top->workers, top->path);
    if (unsupported(sc, "a job", err))
        return DT_ERR_INPUT;
    conflict_t *c = dt_calloc(1, sizeof *c);
    c->top = top;
    c->job = sc;
    scenario_foreach_key(sc, find_conflict, c);
    if (c->key[0]) {
        scenario_key_location(sc, c->key, where, sizeof where);
        dt_err_input(err,
                     "%s: %s, but the platform is the top file's (%s = %s in %s): "
                     "jobs share it; leave it out of the job",
                     where, c->job_text, c->key, c->top_text, top->path);
        free(c);
        return DT_ERR_INPUT;
    }
    free(c);
    /* the hosts run at the top file's device speed: a job's own model.precision (which
     * picks the device's peak) would be silently ignored */
    if (sc->device_flops != top->device_flops) {
        scenario_key_location(sc, "model.precision", where, sizeof where);
        return dt_err_input(err,
                            "%s: %s makes the device's speed %g FLOP/s, but the "
                            "platform's hosts run at %g (%s's): give both files the same "
                            "model.precision",
                            where, scenario_precision_name(sc->precision), sc->device_flops,
                            top->device_flops, top->path);
    }
    snprintf(sc->db, sizeof sc->db, "%s", top->db);
    return DT_OK;
}

/* Run names TOP/JOB; jobs of one name (one file twice) get their numbers (TOP/JOB-2). */
static void name_jobs(sim_jobs_t *j)
{
    char(*own)[SCENARIO_STR] = dt_calloc((size_t)j->n, sizeof *own);
    for (int i = 0; i < j->n; i++)
        snprintf(own[i], sizeof own[i], "%s", j->sc[i].name);
    for (int i = 0; i < j->n; i++) {
        int twice = 0;
        for (int k = 0; k < j->n; k++)
            twice |= k != i && !strcmp(own[i], own[k]);
        char name[2 * SCENARIO_STR + 16];
        snprintf(name, sizeof name, "%s/%s", j->top->name, own[i]);
        if (twice)
            snprintf(name + strlen(name), sizeof name - strlen(name), "-%d", i + 1);
        snprintf(j->sc[i].name, sizeof j->sc[i].name, "%.*s", SCENARIO_STR - 1, name);
    }
    free(own);
}

/* Each job's hosts: packed (consecutive blocks) or interleaved (one each in turn). */
static dt_status place(sim_jobs_t *j, dt_err_t *err)
{
    int total = 0;
    for (int i = 0; i < j->n; i++) {
        int w, s;
        sim_platform_counts(&j->sc[i], &w, &s);
        j->n_hosts[i] = w + s;
        j->hosts[i] = dt_calloc((size_t)(w + s), sizeof(int));
        total += w + s;
    }
    if (total > j->top->workers) {
        char where[SCENARIO_STR + 64], need[512] = "";
        scenario_key_location(j->top, "cluster.workers", where, sizeof where);
        for (int i = 0; i < j->n; i++) {
            size_t len = strlen(need);
            snprintf(need + len, sizeof need - len, "%s%s %d", i ? ", " : "", j->path[i],
                     j->n_hosts[i]);
        }
        return dt_err_input(err, "%s: %ld hosts, but the jobs need %d (%s)", where, j->top->workers,
                            total, need);
    }
    if (j->top->jobs_placement == SIM_PLACEMENT_PACKED) {
        for (int i = 0, h = 0; i < j->n; i++)
            for (int k = 0; k < j->n_hosts[i]; k++)
                j->hosts[i][k] = h++;
        return DT_OK;
    }
    /* interleaved: one host to each job in turn, passing over jobs that have theirs */
    int *got = dt_calloc((size_t)j->n, sizeof(int));
    for (int h = 0; h < total;)
        for (int i = 0; i < j->n; i++)
            if (got[i] < j->n_hosts[i])
                j->hosts[i][got[i]++] = h++;
    free(got);
    return DT_OK;
}

dt_status sim_jobs_load(sim_jobs_t *j, const scenario_t *top, dt_err_t *err)
{
    memset(j, 0, sizeof *j);
    j->top = top;
    if (unsupported(top, "a file of jobs", err))
        return DT_ERR_INPUT;
    char *files = dt_malloc(sizeof top->jobs_files);
    snprintf(files, sizeof top->jobs_files, "%s", top->jobs_files);
    char *names[JOBS_MAX];
    /* every comma separates two names: "a.ini,,b.ini" and a trailing comma are refused, not
     * read as two jobs */
    for (char *f = files, *next; f; f = next) {
        next = strchr(f, ',');
        if (next)
            *next++ = '\0';
        while (*f == ' ' || *f == '\t')
            f++;
        size_t len = strlen(f);
        while (len && (f[len - 1] == ' ' || f[len - 1] == '\t'))
            f[--len] = '\0';
        char where[SCENARIO_STR + 64];
        scenario_key_location(top, "jobs.files", where, sizeof where);
        if (!len || j->n == JOBS_MAX) {
            free(files);
            return dt_err_input(err, "%s: %s", where,
                                len ? "more than 256 jobs"
                                    : "an empty file name (between two commas, or after the "
                                      "last)");
        }
        names[j->n++] = f;
    }
    j->sc = dt_calloc((size_t)j->n, sizeof *j->sc);
    j->path = dt_calloc((size_t)j->n, sizeof *j->path);
    j->n_hosts = dt_calloc((size_t)j->n, sizeof(int));
    j->hosts = dt_calloc((size_t)j->n, sizeof(int *));
    top_sets_t *sets = dt_calloc(1, sizeof *sets);
    sets->top = top;
    scenario_foreach_key(top, add_set, sets);
    dt_status st = DT_OK;
    for (int i = 0; i < j->n && !st; i++)
        st = load_job(j, i, names[i], sets, err);
    free(sets);
    free(files); /* names[] pointed into it; each job keeps its own path */
    if (st)
        return st;
    name_jobs(j);
    return place(j, err);
}

dt_status sim_jobs_init(sim_jobs_t *j, const char *argv0, dt_err_t *err)
{
    /* the platform of the file of jobs: cluster.workers hosts, all listed as workers
     * (sim_platform_counts), node-0 .. node-(workers - 1) */
    sim_platform_t all;
    if (sim_platform_check(j->top, err))
        return DT_ERR_INPUT;
    sim_transport_init(argv0);
    if (sim_platform_load(&all, j->top, err))
        return DT_ERR_INPUT;
    j->runs = dt_calloc((size_t)j->n, sizeof *j->runs);
    dt_status st = DT_OK;
    for (int i = 0; i < j->n && !st; i++) {
        sim_platform_t p = {.energy = all.energy};
        sim_platform_counts(&j->sc[i], &p.n_workers, &p.n_servers);
        p.built = p.n_workers; /* each its own host of the whole platform */
        p.workers = dt_calloc((size_t)p.n_workers, sizeof(sim_host_t));
        p.servers = dt_calloc((size_t)(p.n_servers ? p.n_servers : 1), sizeof(sim_host_t));
        p.group = dt_calloc((size_t)p.n_workers, sizeof(int));
        for (int k = 0; k < p.n_workers + p.n_servers; k++) {
            int h = j->hosts[i][k];
            if (k < p.n_workers)
                p.workers[k] = all.workers[h];
            else
                p.servers[k - p.n_workers] = all.workers[h];
        }
        /* the platform's groups (racks) of its workers, numbered from 0 in order */
        for (int k = 0; k < p.n_workers; k++) {
            int g = all.group[j->hosts[i][k]], same = -1;
            for (int m = 0; m < k && same < 0; m++)
                if (all.group[j->hosts[i][m]] == g)
                    same = p.group[m];
            p.group[k] = same >= 0 ? same : p.n_groups++;
        }
        p.ports = 2 * (p.n_workers + p.n_servers); /* its own host links */
        st = sim_run_init_job(&j->runs[i], &j->sc[i], i + 1, &p, err);
        sim_platform_free(&p); /* what the run did not take over */
        j->inited = i + 1;
    }
    sim_platform_free(&all);
    return st;
}

void sim_jobs_free(sim_jobs_t *j)
{
    for (int i = 0; i < j->inited; i++)
        sim_run_free(&j->runs[i]);
    for (int i = 0; j->hosts && i < j->n; i++)
        free(j->hosts[i]);
    free(j->hosts);
    free(j->n_hosts);
    free(j->runs);
    free(j->path);
    free(j->sc);
    memset(j, 0, sizeof *j);
}
