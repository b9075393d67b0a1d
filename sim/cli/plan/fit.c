/* Whether each layout fits the device's memory with --memory-margin left free, as `dtsim
 * check` finds it: in this process where the first layout's answer equals its child's check,
 * else each in a child (plan_fit); ZeRO-2 and 3 tried where the stage below does not fit, in
 * the per-micro-batch form where the overlapped one holds whole gradients (plan_zero_more). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
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
 * every layout of a plan shares: plan_fit asks it once and compares (plan_fit_same).
 * *free_bytes: the device's memory less the fullest host's, for the margin (NAN: the device
 * states none). */
static dt_status plan_memory(const scenario_t *sc, const sim_model_profile_t *prof, char *memory,
                             size_t n, double *free_bytes, dt_err_t *err)
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
    for (long stage = 0; stage < scenario_own(sc, "stages")->l; stage++) {
        memset(&node, 0, sizeof node);
        node.rank = (int)(stage * scenario_own(sc, "tensor")->l);
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
    const sim_device_profile_t *dev = scenario_device(sc);
    *free_bytes = (dev ? dev->value[SIM_DEV_MEMORY] : NAN) -
                  (best.mem.params + best.mem.grads + best.mem.optimizer +
                   (isnan(best.mem.activations) ? 0 : best.mem.activations));
    char over[512];
    dt_status st = sim_memory_verdict(sc, &best.mem, best.role, best.rank, over, sizeof over, err);
    if (st == DT_OK)
        sim_memory_line(sc, &best.mem, best.role, best.rank, memory, n);
    return st;
}

double plan_margin(const plan_opts_t *opts, double capacity)
{
    if (!(capacity > 0))
        return 0;
    if (!opts->margin_text)
        return fmax(PLAN_MARGIN_BYTES, PLAN_MARGIN_SHARE * capacity);
    return opts->margin_share >= 0 ? opts->margin_share * capacity : opts->margin_bytes;
}

void plan_margin_print(double margin, const plan_opts_t *opts)
{
    char text[32];
    scenario_format_gb(margin, text, sizeof text);
    if (opts->margin_text)
        printf("fit: at least %s left free on every device (--memory-margin %s)\n", text,
               opts->margin_text);
    else
        printf("fit: at least %s left free on every device (--memory-margin default: the "
               "larger of %.3g GB and %.3g%%)\n",
               text, PLAN_MARGIN_BYTES / 1e9, 100 * PLAN_MARGIN_SHARE);
}

/* The margin of sc's device; none where the user allows oversubscribed memory (--set
 * run.allow_oversubscribed_memory=yes: times the layouts that do not fit, margin or not). */
static double fit_margin(const scenario_t *sc, const plan_opts_t *opts)
{
    const sim_device_profile_t *dev = scenario_device(sc);
    if (sc->allow_oversubscribed_memory || !dev)
        return -INFINITY;
    return plan_margin(opts, dev->value[SIM_DEV_MEMORY]);
}

/* The check's answer and the margin: into layout->fits, and layout->memory says how full,
 * or what does not fit ("does not fit", as the check says it, where the layout leaves less
 * than margin bytes free). free_bytes: what the layout leaves free (NAN: unknown). */
static void fit_answer(plan_layout_t *layout, dt_status st, const char *memory, double free_bytes,
                       double margin, const dt_err_t *err, const char *base)
{
    layout->fits = st == DT_OK;
    if (layout->fits && free_bytes < margin) {
        char left[32], want[32];
        scenario_format_gb(free_bytes, left, sizeof left);
        scenario_format_gb(margin, want, sizeof want);
        snprintf(layout->memory, sizeof layout->memory,
                 "does not fit the margin: %s free, under %s (--memory-margin); %s", left, want,
                 memory);
        layout->fits = 0;
        return;
    }
    if (layout->fits) {
        snprintf(layout->memory, sizeof layout->memory, "%s", memory);
        return;
    }
    /* "cluster.device: does not fit: ...; set run.allow_oversubscribed_memory = yes to
     * time it anyway": the plan says what does not fit, and drops it */
    const char *why = plan_without_path(err->msg, base);
    if (!strncmp(why, "cluster.device: ", 16))
        why += 16;
    if (plan_layout_key_error(why)) /* the layout's own key: no --set of the user's */
        why = plan_layout_key_error(why);
    snprintf(layout->memory, sizeof layout->memory, "%s", why);
    char *hint = strstr(layout->memory, "; set run.allow_oversubscribed_memory");
    if (hint)
        *hint = '\0';
}

/* A layout's check under way in a child (cli_exec.h), or the error its scenario gave when
 * it did not load. */
typedef struct fit_check {
    cli_exec_check_t dry;
    dt_err_t err;
    int loaded;
    double free_bytes, margin; /* as this process finds them: the child answers a line */
} fit_check_t;

/* Starts the check of a layout's memory in a child, as `dtsim check` makes it. sc: a
 * scenario's room, free again when this returns. */
static void fit_start(plan_layout_t *layout, scenario_t *sc, const char *base,
                      const plan_opts_t *opts, const sim_model_profile_t *prof, const char *name,
                      const char *argv0, fit_check_t *check)
{
    check->err.msg[0] = '\0';
    check->loaded = plan_layout_load(sc, base, opts, layout, name, &check->err) == DT_OK;
    check->free_bytes = NAN;
    check->margin = -INFINITY;
    if (check->loaded) {
        layout->bound = plan_bound(layout, sc, prof);
        char memory[512];
        dt_err_t err;
        plan_memory(sc, prof, memory, sizeof memory, &check->free_bytes, &err);
        check->margin = fit_margin(sc, opts);
        cli_exec_check_start(sc, argv0, &check->dry);
    }
}

static void fit_finish(plan_layout_t *layout, fit_check_t *check, const char *base)
{
    char memory[512] = "";
    dt_status st = DT_ERR_INPUT;
    if (check->loaded)
        st = cli_exec_check_finish(&check->dry, memory, sizeof memory, &check->err);
    fit_answer(layout, st, memory, check->free_bytes, check->margin, &check->err, base);
}

/* The layouts' fit in this process (plan_memory), each loaded once for it and its bound.
 * sc: a scenario's room. */
static void fit_here(plan_layout_t *layouts, long n, scenario_t *sc, const char *base,
                     const plan_opts_t *opts, const sim_model_profile_t *prof, const char *name)
{
    for (long i = 0; i < n; i++) {
        dt_err_t err = {""};
        char memory[512] = "";
        double free_bytes = NAN, margin = -INFINITY;
        dt_status st = plan_layout_load(sc, base, opts, &layouts[i], name, &err);
        if (st == DT_OK) {
            layouts[i].bound = plan_bound(&layouts[i], sc, prof);
            st = plan_memory(sc, prof, memory, sizeof memory, &free_bytes, &err);
            margin = fit_margin(sc, opts);
        }
        fit_answer(&layouts[i], st, memory, free_bytes, margin, &err, base);
    }
}

/* 1 when a loadable layout of layouts (n) gets the same answer in this process as from the
 * child's check, which meets the platform and fault targets too: then those are sound for
 * every layout (they share them) and the rest is checked here. The layout of the widest
 * tensor groups first (the first listed of them): the child builds the platform as its run
 * would, and where a rack holds one tensor group one replica's racks stand for all
 * (data_members = one), 1 rack of 16,384 hosts' 2048 for t8 p1 (the first listed, t1 p8,
 * builds every rack: 20 s of CPU). */
static int plan_fit_same(plan_layout_t *layouts, long n, scenario_t *sc, const char *base,
                         const plan_opts_t *opts, const sim_model_profile_t *prof, const char *name,
                         const char *argv0)
{
    long widest = 0;
    for (long i = 0; i < n; i++)
        widest = layouts[i].t > widest ? layouts[i].t : widest;
    for (long k = 0; k < 2 * n; k++) { /* the widest ones, then the rest */
        long i = k % n;
        if ((k < n) != (layouts[i].t == widest))
            continue;
        fit_check_t check;
        fit_start(&layouts[i], sc, base, opts, prof, name, argv0, &check);
        if (!check.loaded)
            continue; /* its keys' own error: the same either way */
        fit_finish(&layouts[i], &check, base);
        plan_layout_t here = layouts[i];
        fit_here(&here, 1, sc, base, opts, prof, name);
        return here.fits == layouts[i].fits && !strcmp(here.memory, layouts[i].memory);
    }
    return 1;
}

/* Each layout's fit: in this process where the first one's answer equals its child's
 * (plan_fit_same; once a plan, plan_fit asks), else each in a child, opts->jobs at once.
 * *same: -1 not asked yet, then plan_fit_same's answer. */
void plan_fit(plan_layout_t *layouts, long n, const char *base, const plan_opts_t *opts,
              const sim_model_profile_t *prof, const char *name, const char *argv0, int *same)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    if (*same < 0 && n > 0)
        *same = plan_fit_same(layouts, n, sc, base, opts, prof, name, argv0);
    if (*same > 0) {
        fit_here(layouts, n, sc, base, opts, prof, name);
        free(sc);
        return;
    }
    int slots = opts->jobs > 1 ? opts->jobs : 1;
    fit_check_t *checks = dt_malloc(sizeof *checks * (size_t)slots);
    for (long i = 0; i < n + slots; i++) {
        if (i >= slots && i - slots < n) /* the oldest first: answers in the listed order */
            fit_finish(&layouts[i - slots], &checks[(i - slots) % slots], base);
        if (i < n)
            fit_start(&layouts[i], sc, base, opts, prof, name, argv0, &checks[i % slots]);
    }
    free(checks);
    free(sc);
}

/* A row's place in the list among its shape's ZeRO rows: plan_enumerate's orders are 16
 * apart, z1 at the shape's, then z2 +1, z2 rs +2, z3 +3, z3 rs +4. */
static long zero_order(const plan_layout_t *row, int zero, int rs)
{
    return row->order / 16 * 16 + 2 * zero - 3 + rs;
}

/* Whether the row at order (a shape's ZeRO row) is listed among layouts (n) and fits. */
static int zero_fits(const plan_layout_t *layouts, long n, long order)
{
    for (long i = 0; i < n; i++)
        if (layouts[i].order == order)
            return layouts[i].fits;
    return 0;
}

/* Appends to layouts (rows of them, room for max) the row of stage zero's form rs for
 * layouts[from], and returns the rows there are then. */
static long zero_append(plan_layout_t *layouts, long from, long rows, int zero, int rs)
{
    layouts[rows] = layouts[from];
    layouts[rows].zero = zero;
    layouts[rows].rs = rs;
    layouts[rows].order = zero_order(&layouts[from], zero, rs);
    return rows + 1;
}

/* ZeRO-2 over the replicas where ZeRO-1 does not fit, then ZeRO-3 where ZeRO-2 does not: a
 * stage more only adds messages (at best, one micro-batch, ZeRO-2 ties), so it is tried only
 * where the one below does not fit. Each stage first in its overlapped form (the gradients
 * reduce-scattered behind the last backward pass, held whole over the micro-batches: with
 * more than one micro-batch or chunk it holds what the stage below holds, less the
 * parameters at ZeRO-3), then, where that does not fit and holds whole gradients, in its
 * per-micro-batch form (rs: reduce-scattered after every micro-batch's backward pass, only
 * the shard held; M - 1 reduce-scatters more a step); ZeRO-3 rs only where ZeRO-2 rs does
 * not fit either (it adds the gathers to it). Neither of z2 rs and z3 (the same memory where
 * the parameters and gradients are the same size) is sure to be faster, so both are tried.
 * Appends the rows to layouts (n rows, fitted; room for max), checks them, and returns the
 * rows there are then. */
long plan_zero_more(plan_layout_t *layouts, long n, int zero, const char *base,
                    const plan_opts_t *opts, const sim_model_profile_t *prof, const char *name,
                    const char *argv0, int *same, long max)
{
    long rows = n;
    for (long i = 0; i < n && rows < max; i++) {
        const plan_layout_t *row = &layouts[i];
        if (row->zero == zero - 1 && !row->rs && row->d * row->cp > 1 && !row->fits)
            rows = zero_append(layouts, i, rows, zero, 0);
    }
    plan_fit(layouts + n, rows - n, base, opts, prof, name, argv0, same);
    long more = rows;
    for (long i = n; i < rows && more < max; i++) {
        const plan_layout_t *row = &layouts[i];
        int whole = row->m * row->v > 1; /* strategy/pipeline/pipeline.c: whole_grads */
        if (!row->fits && whole && (zero < 3 || !zero_fits(layouts, n, zero_order(row, 2, 1))))
            more = zero_append(layouts, i, more, zero, 1);
    }
    plan_fit(layouts + rows, more - rows, base, opts, prof, name, argv0, same);
    return more;
}
