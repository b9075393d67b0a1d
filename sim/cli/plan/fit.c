/* Whether each layout fits the device's memory, as `dtsim check` finds it: in this process
 * where the first layout's answer equals its child's check, else each in a child
 * (plan_fit); ZeRO-2 and 3 tried where the stage below does not fit (plan_zero_more). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_exec.h"
#include "compute_model.h"
#include "plan_impl.h"
#include "run.h"

/* A layout's memory against the device's as `dtsim check` finds it, in this process: the
 * pipeline's memory slot, which needs the layout (sc loaded with it) and the profile, not
 * the platform or SimGrid, asked for one host of each stage (the first of its tensor
 * group: the members of a stage hold the same, and the check names the first fullest
 * host), then the check's own line or error (sim_memory_line, sim_memory_verdict). The
 * child's check (cli_exec_check) meets the rest too, the platform and fault targets, which
 * every layout of a plan shares: plan_fit asks it once and compares (plan_fit_same). */
static dt_status plan_memory(const scenario_t *sc, const sim_model_profile_t *prof,
                             char *memory, size_t n, dt_err_t *err)
{
    sim_run_t *run = dt_calloc(1, sizeof *run);
    run->sc = sc;
    run->timing_only = 1;
    /* the layers as the run charges them (timed by shape: the FLOPs that take the shape
     * model's time), for the pipeline cuts them by these, and the cut sets the memory */
    size_t layers = sizeof *prof->layers * (size_t)prof->n_layers;
    run->profile = *prof;
    run->profile.layers = dt_malloc(layers ? layers : 1);
    memcpy(run->profile.layers, prof->layers, layers);
    sim_compute_charge_run(&run->profile, sc);
    run->n_params = prof->params;
    run->value_bytes = scenario_value_bytes(sc);
    /* the hosts as the pipeline counts them: its context groups among the replicas */
    run->n_workers = (int)(scenario_own(sc, "stages")->l * scenario_own(sc, "data_parallel")->l *
                           scenario_own(sc, "tensor")->l * scenario_own(sc, "context")->l);
    sim_node_t node, best;
    int have = 0;
    for (long s = 0; s < scenario_own(sc, "stages")->l; s++) {
        memset(&node, 0, sizeof node);
        node.rank = (int)(s * scenario_own(sc, "tensor")->l);
        node.role = "worker";
        sim_node_memory(run, &node);
        double total = node.mem.params + node.mem.grads + node.mem.optimizer +
                       (isnan(node.mem.activations) ? 0 : node.mem.activations);
        double top = have ? best.mem.params + best.mem.grads + best.mem.optimizer +
                                (isnan(best.mem.activations) ? 0 : best.mem.activations)
                          : 0;
        if (!have || total > top) /* the first fullest, as the check takes it */
            best = node;
        have = 1;
    }
    free(run->profile.layers);
    free(run);
    char over[512];
    dt_status st = sim_memory_verdict(sc, &best.mem, best.role, best.rank, over, sizeof over,
                                      err);
    if (st == DT_OK)
        sim_memory_line(sc, &best.mem, best.role, best.rank, memory, n);
    return st;
}

/* The check's answer: into l->fits, and l->memory says how full or what does not fit. */
static void fit_answer(plan_layout_t *l, dt_status st, const char *memory, const dt_err_t *err,
                       const char *base)
{
    l->fits = st == DT_OK;
    if (l->fits) {
        snprintf(l->memory, sizeof l->memory, "%s", memory);
        return;
    }
    /* "cluster.device: does not fit: ...; set run.allow_oversubscribed_memory = yes to
     * time it anyway": the plan says what does not fit, and drops it */
    const char *why = plan_without_path(err->msg, base);
    if (!strncmp(why, "cluster.device: ", 16))
        why += 16;
    if (plan_layout_key_error(why)) /* the layout's own key: no --set of the user's */
        why = plan_layout_key_error(why);
    snprintf(l->memory, sizeof l->memory, "%s", why);
    char *hint = strstr(l->memory, "; set run.allow_oversubscribed_memory");
    if (hint)
        *hint = '\0';
}

/* A layout's check under way in a child (cli_exec.h), or the error its scenario gave when
 * it did not load. */
typedef struct fit_check {
    cli_exec_check_t dry;
    dt_err_t err;
    int loaded;
} fit_check_t;

/* Starts the check of a layout's memory in a child, as `dtsim check` makes it. sc: a
 * scenario's room, free again when this returns. */
static void fit_start(plan_layout_t *l, scenario_t *sc, const char *base, const plan_opts_t *o,
                      const sim_model_profile_t *prof, const char *name, const char *argv0,
                      fit_check_t *c)
{
    c->err.msg[0] = '\0';
    c->loaded = plan_layout_load(sc, base, o, l, name, &c->err) == DT_OK;
    if (c->loaded) {
        l->bound = plan_bound(l, sc, prof);
        cli_exec_check_start(sc, argv0, &c->dry);
    }
}

static void fit_finish(plan_layout_t *l, fit_check_t *c, const char *base)
{
    char memory[512] = "";
    dt_status st = DT_ERR_INPUT;
    if (c->loaded)
        st = cli_exec_check_finish(&c->dry, memory, sizeof memory, &c->err);
    fit_answer(l, st, memory, &c->err, base);
}

/* The layouts' fit in this process (plan_memory), each loaded once for it and its bound.
 * sc: a scenario's room. */
static void fit_here(plan_layout_t *l, long n, scenario_t *sc, const char *base,
                     const plan_opts_t *o, const sim_model_profile_t *prof, const char *name)
{
    for (long i = 0; i < n; i++) {
        dt_err_t err = {""};
        char memory[512] = "";
        dt_status st = plan_layout_load(sc, base, o, &l[i], name, &err);
        if (st == DT_OK) {
            l[i].bound = plan_bound(&l[i], sc, prof);
            st = plan_memory(sc, prof, memory, sizeof memory, &err);
        }
        fit_answer(&l[i], st, memory, &err, base);
    }
}

/* 1 when the first loadable layout of l (n) gets the same answer in this process as from
 * the child's check, which meets the platform and fault targets too: then those are sound
 * for every layout (they share them) and the rest is checked here. */
static int plan_fit_same(plan_layout_t *l, long n, scenario_t *sc, const char *base,
                         const plan_opts_t *o, const sim_model_profile_t *prof,
                         const char *name, const char *argv0)
{
    for (long i = 0; i < n; i++) {
        fit_check_t c;
        fit_start(&l[i], sc, base, o, prof, name, argv0, &c);
        if (!c.loaded)
            continue; /* its keys' own error: the same either way */
        fit_finish(&l[i], &c, base);
        plan_layout_t here = l[i];
        fit_here(&here, 1, sc, base, o, prof, name);
        return here.fits == l[i].fits && !strcmp(here.memory, l[i].memory);
    }
    return 1;
}

/* Each layout's fit: in this process where the first one's answer equals its child's
 * (plan_fit_same; once a plan, plan_fit asks), else each in a child, o->jobs at once.
 * *same: -1 not asked yet, then plan_fit_same's answer. */
void plan_fit(plan_layout_t *l, long n, const char *base, const plan_opts_t *o,
                     const sim_model_profile_t *prof, const char *name, const char *argv0,
                     int *same)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    if (*same < 0 && n > 0)
        *same = plan_fit_same(l, n, sc, base, o, prof, name, argv0);
    if (*same > 0) {
        fit_here(l, n, sc, base, o, prof, name);
        free(sc);
        return;
    }
    int slots = o->jobs > 1 ? o->jobs : 1;
    fit_check_t *c = dt_malloc(sizeof *c * (size_t)slots);
    for (long i = 0; i < n + slots; i++) {
        if (i >= slots && i - slots < n) /* the oldest first: answers in the listed order */
            fit_finish(&l[i - slots], &c[(i - slots) % slots], base);
        if (i < n)
            fit_start(&l[i], sc, base, o, prof, name, argv0, &c[i % slots]);
    }
    free(c);
    free(sc);
}

/* ZeRO-2 over the replicas where ZeRO-1 does not fit, then ZeRO-3 where ZeRO-2 does not: a
 * stage more only adds messages (at best, one micro-batch, ZeRO-2 ties), so it is tried only
 * where the one below does not fit. Appends to l (n rows, fitted; room for max) a row of
 * stage z for each row of stage z - 1 that does not fit, checks them, and returns the rows
 * there are then. */
long plan_zero_more(plan_layout_t *l, long n, int z, const char *base,
                           const plan_opts_t *o, const sim_model_profile_t *prof,
                           const char *name, const char *argv0, int *same, long max)
{
    long k = n;
    for (long i = 0; i < n && k < max; i++)
        if (l[i].zero == z - 1 && l[i].d * l[i].cp > 1 && !l[i].fits) {
            l[k] = l[i];
            l[k].zero = z;
            l[k++].order = l[i].order + 1; /* right after the row it retries */
        }
    plan_fit(l + n, k - n, base, o, prof, name, argv0, same);
    return k;
}
