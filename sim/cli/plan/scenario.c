/* The scenarios a plan runs: its base written to a temporary file (every layout's keys but
 * the layout's own), a layout's keys on it (plan_layout_load), and the --set keys a plan
 * refuses (plan_set_refused) or set itself (plan_layout_key_error). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_impl.h"

/* The base scenario: every layout's keys but the layout's own. */
static void write_scenario(FILE *file, const plan_opts_t *opts, const char *profile,
                           const char *name)
{
    long per_server = opts->devices < opts->per_server ? opts->devices : opts->per_server;
    fprintf(file,
            "[run]\nname = %s\nsteps = %ld\neval_every = 0\ndb = %s\n"
            "[model]\narch = profile:%s\nprecision = %s\noptimizer = adam\n"
            "[cluster]\nplatform = multi-rack\nracks = %ld\nworkers = %ld\ndevice = %s\n"
            "bandwidth = 2400Gbps\nuplink_bandwidth = 1600Gbps\nlatency = 2us\n"
            "uplink_latency = 2us\nnetwork_model = CM02\n"
            "[strategy]\nkind = pipeline\nalgorithm = ring\npipeline_schedule = 1f1b\n"
            "tensor_comm = formula\ntensor_members = one\ndp_comm = formula\n"
            "data_members = one\n",
            name, opts->steps, opts->db, profile, opts->precision, opts->devices / per_server,
            opts->devices, opts->device);
}

/* Writes a scenario to a new temporary file; its path into path (PATH_MAX). */
dt_status plan_scenario_write(char *path, const plan_opts_t *opts, const char *profile,
                              const char *name, dt_err_t *err)
{
    const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    snprintf(path, PATH_MAX, "%s/dtsim-plan-XXXXXX.ini", dir);
    int fd = mkstemps(path, 4);
    FILE *file = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!file)
        return dt_err_input(err, "cannot write a scenario in %s: %s", dir, strerror(errno));
    write_scenario(file, opts, profile, name);
    if (fclose(file) != 0)
        return dt_err_input(err, "cannot write %s: %s", path, strerror(errno));
    return DT_OK;
}

/* Loads the base scenario at path with the user's --set options, then the layout's, and
 * names the run after the profile (name) and the layout. */
dt_status plan_layout_load(scenario_t *sc, const char *path, const plan_opts_t *opts,
                           const plan_layout_t *layout, const char *name, dt_err_t *err)
{
    char keys[12][SCENARIO_STR], more[64];
    const char *sets[PLAN_MAX_SETS + 16];
    for (int i = 0; i < opts->n_sets; i++)
        sets[i] = opts->sets[i];
    snprintf(keys[0], sizeof keys[0], "strategy.tensor=%ld", layout->t);
    snprintf(keys[1], sizeof keys[1], "strategy.stages=%ld", layout->p);
    snprintf(keys[2], sizeof keys[2], "strategy.data_parallel=%ld", layout->d);
    snprintf(keys[3], sizeof keys[3], "model.batch=%ld", layout->m * layout->mbs);
    snprintf(keys[4], sizeof keys[4], "strategy.micro_batches=%ld", layout->m);
    plan_layout_more(layout, '-', more, sizeof more);
    snprintf(keys[5], sizeof keys[5], "run.name=%.200s-t%ldp%ldd%ld-mb%ldx%ld-z%d%s", name,
             layout->t, layout->p, layout->d, layout->mbs, layout->m, layout->zero, more);
    snprintf(keys[6], sizeof keys[6], "strategy.zero_stage=%d", layout->zero ? layout->zero : 1);
    snprintf(keys[7], sizeof keys[7], "model.recompute=%s",
             layout->rc ? plan_recompute_name(layout->rc) : "none");
    int n = opts->n_sets;
    for (int i = 0; i < 6; i++)
        sets[n++] = keys[i];
    if (layout->zero) {
        sets[n++] = "strategy.shard_optimizer=yes";
        sets[n++] = keys[6];
    }
    if (layout->rs)
        sets[n++] = "strategy.zero_grad_overlap=no";
    if (layout->rc)
        sets[n++] = keys[7];
    if (layout->bucket_mb) {
        snprintf(keys[8], sizeof keys[8], "strategy.bucket_mb=%d", layout->bucket_mb);
        sets[n++] = keys[8];
    }
    if (layout->sp)
        sets[n++] = "strategy.sequence_parallel=yes";
    if (layout->cp > 1) {
        snprintf(keys[11], sizeof keys[11], "strategy.context=%ld", layout->cp);
        sets[n++] = keys[11];
    }
    if (layout->v > 1) {
        sets[n++] = "strategy.pipeline_schedule=interleaved";
        snprintf(keys[9], sizeof keys[9], "strategy.virtual_stages=%ld", layout->v);
        sets[n++] = keys[9];
    }
    if (layout->e > 1) {
        snprintf(keys[10], sizeof keys[10], "strategy.expert=%ld", layout->e);
        sets[n++] = keys[10];
    }
    return scenario_load(sc, path, sets, n, err);
}

/* msg without the temporary scenario's "PATH:LINE: " at its start: the user never saw it. */
const char *plan_without_path(const char *msg, const char *base)
{
    if (strncmp(msg, base, strlen(base)))
        return msg;
    msg += strlen(base);
    return msg + strspn(msg, ": 0123456789");
}

/* The key of a --set ("KEY=VALUE") that each layout sets itself, or NULL: such a key would
 * be overridden on some layouts and not others, their names then saying what did not run. */
static const char *plan_searched_key(const char *set)
{
    static const char *const searched[] = {"strategy.tensor",
                                           "strategy.stages",
                                           "strategy.data_parallel",
                                           "model.batch",
                                           "strategy.micro_batches",
                                           "strategy.zero_stage",
                                           "strategy.shard_optimizer",
                                           "model.recompute",
                                           "strategy.bucket_mb",
                                           "strategy.sequence_parallel",
                                           "strategy.pipeline_schedule",
                                           "strategy.virtual_stages",
                                           "strategy.expert",
                                           "strategy.context",
                                           "strategy.zero_grad_overlap"};
    for (size_t k = 0; k < sizeof searched / sizeof *searched; k++) {
        size_t len = strlen(searched[k]);
        if (!strncmp(set, searched[k], len) && set[len] == '=')
            return searched[k];
    }
    return NULL;
}

/* A --set ("KEY=VALUE") a plan cannot take, its reason into why: a key each layout sets
 * itself (plan_searched_key), or strategy.kind, which is pipeline in every layout (a
 * federated or data-parallel kind would plan a layout it does not run). Returns 1 when
 * refused. */
int plan_set_refused(const char *set, char *why, size_t n)
{
    const char *key = plan_searched_key(set);
    if (key) {
        snprintf(why, n, "--set %s: the plan searches %s itself (each layout sets it)", set, key);
        return 1;
    }
    if (!strncmp(set, "strategy.kind=", 14) && strcmp(set + 14, "pipeline")) {
        snprintf(why, n,
                 "--set %s: a plan lays out tensor x pipeline x data parallel runs "
                 "(strategy.kind = pipeline in every layout); plan another strategy with "
                 "dtsim run and a [sweep]",
                 set);
        return 1;
    }
    return 0;
}

/* A layout's key in an error ("--set strategy.data_parallel: 65536 is out of range"): the
 * user never gave it; msg without the "--set " then names the key the layout set. */
const char *plan_layout_key_error(const char *msg)
{
    if (strncmp(msg, "--set ", 6))
        return NULL;
    char set[96];
    size_t len = strcspn(msg + 6, ": =");
    if (len + 2 > sizeof set)
        return NULL;
    snprintf(set, sizeof set, "%.*s=", (int)len, msg + 6);
    return plan_searched_key(set) ? msg + 6 : NULL;
}
