/* Faults during a run (see fault.h). */
#include "fault.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "platform.h"
#include "run.h"

enum { FAULT_STREAM = 201 };

/* Bandwidth of a link that is down: traffic stalls, timeouts notice. */
#define LINK_DOWN_BW 1.0

typedef enum ev_type { EV_CRASH, EV_RECOVER, EV_LINK } ev_type_t;

typedef struct event {
    double t;
    ev_type_t type;
    int host;              /* EV_CRASH, EV_RECOVER: index in hosts */
    size_t link0, n_links; /* EV_LINK: links[link0 .. link0 + n_links) */
    double bw;             /* EV_LINK: new bandwidth or latency, < 0: back to the platform's */
    int latency;           /* EV_LINK: bw is the links' latency */
    const char *kind;      /* for the faults table */
    char target[SIM_FAULT_TARGET];
} event_t;

typedef struct interval {
    int host;
    double at, until, factor;
} interval_t;

typedef struct fhost fhost_t;
struct fhost {
    sg_host_t host;
    double factor; /* permanent slowdown */
    int down;
    double recover_at;   /* while down: scheduled recovery, INFINITY: none */
    int random_down;     /* down by a random failure (recovery drawn, not an event) */
    double next_failure; /* mtbf: next random crash while up, INFINITY: none */
    size_t iv0, n_iv;    /* its straggler intervals */
};

/* A change asked while the run runs, played by an actor of its own on a host that stays on:
 * a crash (and the recovery after secs), a link's latency, or the end of a straggler's
 * slowdown after secs. */
typedef enum live_kind { LIVE_CRASH, LIVE_LATENCY, LIVE_SLOW_END } live_kind_t;
typedef struct live_act {
    sim_node_t node; /* the actor's data, as the injector's */
    live_kind_t kind;
    struct fhost *h;    /* LIVE_CRASH, LIVE_SLOW_END */
    sg_link_t links[8]; /* LIVE_LATENCY */
    size_t n_links;
    double at, secs, value; /* at: when a crash or a latency happens */
    char target[SIM_FAULT_TARGET];
    char replay[200]; /* "; replay: ITEM" */
} live_act_t;

/* Changes a run may ask live that take an actor, at most (each keeps its slot to the end). */
#define LIVE_ACTS 32

/* A live crash or latency happens this long after it is asked: at an instant of its own, as
 * its replay item's does (asked at a step's end, it would otherwise fall between the actors
 * woken at that instant in another order than the injector's: a crash that finds a node a
 * step further, a message sent before the latency changes instead of after) */
#define LIVE_DELAY 1e-6

typedef struct sim_faults {
    fhost_t *hosts; /* every host of the platform, in sg_host_list order */
    size_t n_hosts;
    event_t *ev;
    size_t n_ev, cap_ev, next_ev;
    interval_t *iv;
    size_t n_iv;
    sg_link_t *links; /* links named by events, grouped per event */
    double *link_bw;  /* their platform bandwidth */
    double *link_lat; /* and latency */
    size_t n_links;
    trainer_rng_t rng;
    double mtbf, mttr;
    sg_actor_t injector;
    int injector_running;
    int slows;
    live_act_t live[LIVE_ACTS];
    int n_live;
} sim_faults_t;

/* ---- helpers ---------------------------------------------------------------------------- */

static fhost_t *host_of(const sim_faults_t *f, const_sg_host_t h)
{
    size_t i = (size_t)(uintptr_t)sg_host_get_data(h);
    return i ? &f->hosts[i - 1] : NULL;
}

static double draw_exp(trainer_rng_t *r, double mean)
{
    return -mean * log(1.0 - trainer_rng_uniform(r));
}

static event_t *event_add(sim_faults_t *f, double t, ev_type_t type, const char *kind,
                          const char *target)
{
    if (f->n_ev == f->cap_ev) {
        f->cap_ev = f->cap_ev ? 2 * f->cap_ev : 16;
        f->ev = realloc(f->ev, sizeof(event_t) * f->cap_ev);
        DT_CHECK(f->ev, "out of memory");
    }
    event_t *e = &f->ev[f->n_ev++];
    memset(e, 0, sizeof *e);
    e->t = t;
    e->type = type;
    e->kind = kind;
    snprintf(e->target, sizeof e->target, "%s", target);
    return e;
}

static int by_time(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* same instant: recoveries and restores before new faults, then file order */
    return (x->type == EV_CRASH) - (y->type == EV_CRASH);
}

static int by_host(const void *a, const void *b)
{
    const interval_t *x = a, *y = b;
    if (x->host != y->host)
        return x->host - y->host;
    return (x->at > y->at) - (x->at < y->at);
}

/* A node named by role and rank (worker-3, server-0, client-2) in this run. */
static sim_node_t *node_by_name(sim_run_t *run, const char *name)
{
    for (int i = 0; i < run->n_workers; i++)
        if (!strcmp(run->workers[i].name, name))
            return &run->workers[i];
    for (int i = 0; i < run->n_servers; i++)
        if (!strcmp(run->servers[i].name, name))
            return &run->servers[i];
    return NULL;
}

static sg_host_t target_host(sim_run_t *run, const char *name)
{
    sim_node_t *n = node_by_name(run, name);
    return n ? (sg_host_t)n->host : sg_host_by_name(name);
}

static void hosts_hint(sim_run_t *run, char *buf, size_t n)
{
    const char *role = run->n_workers ? run->workers[0].role : "worker";
    snprintf(buf, n, "%s-0..%s-%d%s, or a host of the platform such as %s", role, role,
             run->n_workers - 1, run->n_servers ? ", server-0.." : "",
             sim_host_name(run->n_workers ? run->workers[0].host : run->servers[0].host));
}

static dt_status target_error(sim_run_t *run, dt_err_t *err, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static dt_status target_error(sim_run_t *run, dt_err_t *err, const char *key, const char *fmt, ...)
{
    char where[SCENARIO_STR + 64], msg[400];
    scenario_key_location(run->sc, key, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_err_input(err, "%s: %s", where, msg);
}

/* sg_link_by_name throws (and aborts the process) on an unknown name: look it up. */
static sg_link_t find_link(const char *name)
{
    sg_link_t *all = sg_link_list(), found = NULL;
    for (size_t i = 0; i < sg_link_count() && !found; i++)
        if (!strcmp(sg_link_get_name(all[i]), name))
            found = all[i];
    free(all);
    return found;
}

/* The error of a crash or straggler item naming no node or host. */
static dt_status no_host(sim_run_t *run, dt_err_t *err, const char *key, size_t item,
                         const char *name)
{
    char hint[160];
    hosts_hint(run, hint, sizeof hint);
    return target_error(run, err, key, "item %zu: no node or host named \"%s\" (expected %s)",
                        item + 1, name, hint);
}

/* The links a LINK target names: a link, NAME_UP and NAME_DOWN, or a node's or host's own
 * links (the first link of its route to another host, the last of the route back). */
static size_t resolve_links(sim_run_t *run, const char *name, sg_link_t *out)
{
    sg_link_t l = find_link(name);
    if (l) {
        out[0] = l;
        return 1;
    }
    char buf[SIM_FAULT_TARGET + 8];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s_UP", name);
    if ((l = find_link(buf)))
        out[n++] = l;
    snprintf(buf, sizeof buf, "%s_DOWN", name);
    if ((l = find_link(buf)))
        out[n++] = l;
    if (n)
        return n;
    sg_host_t h = target_host(run, name);
    if (!h)
        return 0;
    /* another host of the run: those are connected to each other */
    sg_host_t other = NULL;
    for (int l = 0; l < 2 && !other; l++)
        for (int i = 0; i < (l ? run->n_servers : run->n_workers) && !other; i++) {
            sg_host_t x = (sg_host_t)(l ? run->servers[i].host : run->workers[i].host);
            if (x != h)
                other = x;
        }
    if (!other)
        return 0;
    xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(h, other, route);
    out[n++] = xbt_dynar_get_as(route, 0, sg_link_t);
    xbt_dynar_free(&route);
    route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(other, h, route);
    sg_link_t last = xbt_dynar_get_as(route, xbt_dynar_length(route) - 1, sg_link_t);
    if (last != out[0])
        out[n++] = last;
    xbt_dynar_free(&route);
    return n;
}

static live_act_t *live_slot(sim_faults_t *f, live_kind_t kind, const char *target, dt_err_t *err);
static dt_status live_start(sim_run_t *run, live_act_t *a, dt_err_t *err);

dt_status sim_fault_link_now(sim_run_t *run, const char *target, double value, int latency,
                             const char *text, dt_err_t *err)
{
    sg_link_t found[2 * 4];
    size_t k = resolve_links(run, target, found);
    if (!k)
        return dt_err_input(err,
                            "no link, node or host named \"%s\" (dtsim platform --links "
                            "lists the links)",
                            target);
    if (latency) { /* at an instant of its own (LIVE_DELAY) */
        live_act_t *a = live_slot(run->faults, LIVE_LATENCY, target, err);
        if (!a)
            return DT_ERR_INPUT;
        memcpy(a->links, found, k * sizeof *found);
        a->n_links = k;
        a->value = value;
        a->at = sim_now() + LIVE_DELAY;
        snprintf(a->replay, sizeof a->replay, "; replay: link_degrade = %s at %.17gs to %s", target,
                 a->at, text);
        if (live_start(run, a, err))
            return DT_ERR_INPUT;
        run->faults->n_live++;
        return DT_OK;
    }
    for (size_t j = 0; j < k; j++)
        sg_link_set_bandwidth(found[j], value);
    /* %.17g: the item's time reads back as the same double */
    sim_fault_log(run, "link-degrade", target,
                  "%zu link%s at %s, asked live; replay: "
                  "link_degrade = %s at %.17gs to %s",
                  k, k == 1 ? "" : "s", text, target, sim_now(), text);
    return DT_OK;
}

static dt_status add_link_events(sim_run_t *run, sim_faults_t *f, sim_fault_kind_t kind,
                                 const char *text, const char *key, dt_err_t *err)
{
    sim_fault_spec_t specs[SIM_FAULT_MAX];
    size_t n;
    dt_err_t e;
    DT_ASSERT(sim_fault_spec_parse(kind, text, specs, SIM_FAULT_MAX, &n, &e) == DT_OK);
    for (size_t i = 0; i < n; i++) {
        sg_link_t found[2 * 4];
        size_t k = resolve_links(run, specs[i].target, found);
        if (!k)
            return target_error(run, err, key,
                                "item %zu: the platform has no link, node or host named \"%s\" "
                                "(dtsim platform --links SCENARIO lists the links)",
                                i + 1, specs[i].target);
        f->links = realloc(f->links, sizeof(sg_link_t) * (f->n_links + k));
        f->link_bw = realloc(f->link_bw, sizeof(double) * (f->n_links + k));
        f->link_lat = realloc(f->link_lat, sizeof(double) * (f->n_links + k));
        DT_CHECK(f->links && f->link_bw && f->link_lat, "out of memory");
        size_t first = f->n_links;
        for (size_t j = 0; j < k; j++) {
            f->links[first + j] = found[j];
            f->link_bw[first + j] = sg_link_get_bandwidth(found[j]);
            f->link_lat[first + j] = sg_link_get_latency(found[j]);
        }
        f->n_links += k;
        int down = kind == SIM_FAULT_LINK_DOWN;
        event_t *ev = event_add(f, specs[i].at, EV_LINK, down ? "link-down" : "link-degrade",
                                specs[i].target);
        ev->link0 = first;
        ev->n_links = k;
        ev->bw = down ? LINK_DOWN_BW : specs[i].value;
        ev->latency = specs[i].latency;
        if (isfinite(specs[i].until)) {
            ev = event_add(f, specs[i].until, EV_LINK, down ? "link-up" : "link-restore",
                           specs[i].target);
            ev->link0 = first;
            ev->n_links = k;
            ev->bw = -1;
            ev->latency = specs[i].latency;
        }
    }
    return DT_OK;
}

/* ---- set-up ----------------------------------------------------------------------------- */

dt_status sim_faults_init(sim_run_t *run, dt_err_t *err)
{
    const scenario_t *sc = run->sc;
    run->has_faults = scenario_has_faults(sc);
    if (!run->has_faults)
        return DT_OK;
    sim_faults_t *f = dt_calloc(1, sizeof *f);
    run->faults = f;
    trainer_rng_seed(&f->rng, sc->seed, FAULT_STREAM);
    f->mtbf = sc->mtbf;
    f->mttr = sc->mttr;

    sg_host_t *all = sg_host_list();
    f->n_hosts = sg_host_count();
    f->hosts = dt_calloc(f->n_hosts, sizeof(fhost_t));
    for (size_t i = 0; i < f->n_hosts; i++) {
        f->hosts[i].host = all[i];
        f->hosts[i].factor = 1.0;
        f->hosts[i].recover_at = INFINITY;
        f->hosts[i].next_failure = INFINITY;
        sg_host_set_data(all[i], (void *)(uintptr_t)(i + 1));
    }
    free(all);

    /* a straggler asked live changes a host's factor: compute goes through it from the start */
    f->slows = sc->live_hosts;
    /* per-host slowdown drawn for each worker host, in rank order */
    sim_slowdown_t sd;
    dt_err_t e;
    DT_ASSERT(sim_slowdown_parse(sc->slowdown, &sd, &e) == DT_OK);
    for (int i = 0; i < run->n_workers && sd.kind != SIM_SLOWDOWN_NONE; i++) {
        fhost_t *h = host_of(f, (sg_host_t)run->workers[i].host);
        double x = sd.kind == SIM_SLOWDOWN_UNIFORM
                       ? sd.a + (sd.b - sd.a) * trainer_rng_uniform(&f->rng)
                       : exp(sd.a * trainer_rng_normal(&f->rng));
        h->factor *= x;
        f->slows = 1;
    }

    /* stragglers: permanent factors and intervals */
    sim_fault_spec_t specs[SIM_FAULT_MAX];
    size_t n;
    DT_ASSERT(sim_fault_spec_parse(SIM_FAULT_STRAGGLER, sc->straggler, specs, SIM_FAULT_MAX, &n,
                                   &e) == DT_OK);
    f->iv = dt_calloc(n ? n : 1, sizeof(interval_t));
    for (size_t i = 0; i < n; i++) {
        sg_host_t h = target_host(run, specs[i].target);
        if (!h)
            return no_host(run, err, "faults.straggler", i, specs[i].target);
        f->slows = 1;
        if (specs[i].at == 0 && isinf(specs[i].until)) {
            host_of(f, h)->factor *= specs[i].value;
            continue;
        }
        f->iv[f->n_iv++] = (interval_t){(int)(host_of(f, h) - f->hosts), specs[i].at,
                                        specs[i].until, specs[i].value};
    }
    if (f->n_iv)
        qsort(f->iv, f->n_iv, sizeof(interval_t), by_host);
    for (size_t i = 0; i < f->n_iv; i++) {
        fhost_t *h = &f->hosts[f->iv[i].host];
        if (!h->n_iv)
            h->iv0 = i;
        h->n_iv++;
    }

    /* crashes */
    DT_ASSERT(sim_fault_spec_parse(SIM_FAULT_CRASH, sc->crash, specs, SIM_FAULT_MAX, &n, &e) ==
              DT_OK);
    for (size_t i = 0; i < n; i++) {
        sg_host_t h = target_host(run, specs[i].target);
        if (!h)
            return no_host(run, err, "faults.crash", i, specs[i].target);
        int idx = (int)(host_of(f, h) - f->hosts);
        event_add(f, specs[i].at, EV_CRASH, "host-crash", sg_host_get_name(h))->host = idx;
        if (isfinite(specs[i].until))
            event_add(f, specs[i].until, EV_RECOVER, "host-recover", sg_host_get_name(h))->host =
                idx;
    }
    if (add_link_events(run, f, SIM_FAULT_LINK_DOWN, sc->link_down, "faults.link_down", err) ||
        add_link_events(run, f, SIM_FAULT_LINK_DEGRADE, sc->link_degrade, "faults.link_degrade",
                        err))
        return DT_ERR_INPUT;
    if (f->n_ev)
        qsort(f->ev, f->n_ev, sizeof(event_t), by_time);

    /* random failures of the worker hosts */
    if (f->mtbf > 0)
        for (int i = 0; i < run->n_workers; i++) {
            fhost_t *h = host_of(f, (sg_host_t)run->workers[i].host);
            if (isinf(h->next_failure))
                h->next_failure = draw_exp(&f->rng, f->mtbf);
        }

    if (run->dry) /* checked, never run: no checkpoint buffers */
        return DT_OK;
    /* checkpoints (sync-ps, single) and last commits (elastic all-reduce, local-sgd) */
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < (l ? run->n_servers : run->n_workers); i++) {
            sim_node_t *node = l ? &run->servers[i] : &run->workers[i];
            node->ckpt = run->be->alloc(sizeof(float) * (run->n_params ? run->n_params : 1));
            node->ckpt_step = -1;
        }
    run->init_params = run->be->alloc(sizeof(float) * run->n_params);
    run->be->copy(run->init_params, run->engine.params, sizeof(float) * run->n_params);
    return DT_OK;
}

void sim_faults_free(sim_run_t *run)
{
    sim_faults_t *f = run->faults;
    if (run->init_params)
        run->be->free(run->init_params);
    run->init_params = NULL;
    if (!f)
        return;
    free(f->hosts);
    free(f->ev);
    free(f->iv);
    free(f->links);
    free(f->link_bw);
    free(f->link_lat);
    free(f);
    run->faults = NULL;
}

double sim_fault_timeout(const sim_run_t *run)
{
    /* real mode plays no fault a peer must detect (no crash, no lost link): a slow peer or
     * link only makes a wait longer, and a recovery's protocol would read other processes'
     * memory */
    return run->has_faults && !run->real ? run->sc->fault_timeout : SIM_COMM_TIMEOUT;
}

void sim_fault_log(sim_run_t *run, const char *kind, const char *target, const char *fmt, ...)
{
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    run->fault_rows++;
    char word[40];
    snprintf(word, sizeof word, " %s ", kind);
    char have[sizeof run->fault_kinds + 2];
    snprintf(have, sizeof have, " %s ", run->fault_kinds);
    size_t len = strlen(run->fault_kinds);
    if (!strstr(have, word) && len + strlen(kind) + 2 < sizeof run->fault_kinds)
        snprintf(run->fault_kinds + len, sizeof run->fault_kinds - len, "%s%s", len ? " " : "",
                 kind);
    if (run->db && !run->db_failed &&
        results_fault_add(run->db, run->run_id, sim_now(), kind, target, detail, &run->db_err))
        run->db_failed = 1;
    sim_watchdog(run);
}

/* ---- compute slowdowns ------------------------------------------------------------------- */

int sim_fault_slows(const sim_run_t *run)
{
    return run->faults && run->faults->slows;
}

static double factor_at(const sim_faults_t *f, const fhost_t *h, double t, double *next)
{
    double x = h->factor;
    *next = INFINITY;
    for (size_t i = h->iv0; i < h->iv0 + h->n_iv; i++) {
        const interval_t *v = &f->iv[i];
        if (v->at <= t && t < v->until) {
            x *= v->factor;
            if (v->until < *next)
                *next = v->until;
        } else if (v->at > t && v->at < *next) {
            *next = v->at;
        }
    }
    return x;
}

double sim_fault_compute_time(sim_run_t *run, sim_node_t *node, double t0, double seconds)
{
    const sim_faults_t *f = run->faults;
    double slow = node->slow > 0 ? node->slow : 1.0;
    const fhost_t *h = f ? host_of(f, (sg_host_t)node->host) : NULL;
    if (!h)
        return seconds * slow;
    /* walk the piecewise-constant speed from t0 until the work is done */
    double t = t0, left = seconds * slow, next;
    for (;;) {
        double x = factor_at(f, h, t, &next);
        if (isinf(next) || left * x <= next - t)
            return t + left * x - t0;
        left -= (next - t) / x;
        t = next;
    }
}

/* ---- crashes and recoveries --------------------------------------------------------------- */

int sim_fault_will_return(const sim_run_t *run, const sim_node_t *node)
{
    const sim_faults_t *f = run->faults;
    if (!f || node->alive || node->finished)
        return 0;
    const fhost_t *h = host_of(f, (sg_host_t)node->host);
    return h && h->down && (isfinite(h->recover_at) || (h->random_down && f->mttr > 0));
}

int sim_fault_workers_left(const sim_run_t *run)
{
    for (int i = 0; i < run->n_workers; i++) {
        const sim_node_t *n = &run->workers[i];
        if ((n->alive && !n->finished) || sim_fault_will_return(run, n))
            return 1;
    }
    return 0;
}

/* No node runs and none will come back: nothing can happen any more. */
static int all_over(const sim_run_t *run)
{
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < (l ? run->n_servers : run->n_workers); i++) {
            const sim_node_t *n = l ? &run->servers[i] : &run->workers[i];
            if ((n->alive && !n->finished) || sim_fault_will_return(run, n))
                return 0;
        }
    return 1;
}

static void nodes_on(sim_run_t *run, sg_host_t host, void (*fn)(sim_run_t *, sim_node_t *))
{
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < (l ? run->n_servers : run->n_workers); i++) {
            sim_node_t *n = l ? &run->servers[i] : &run->workers[i];
            if ((sg_host_t)n->host == host)
                fn(run, n);
        }
}

static void node_down(sim_run_t *run, sim_node_t *n)
{
    (void)run;
    if (n->alive && !n->finished)
        n->alive = 0;
}

static void node_restart(sim_run_t *run, sim_node_t *n)
{
    if (n->alive || n->finished || run->ended)
        return;
    n->incarnation++;
    sim_spawn(run, n, n->entry);
}

/* Turns h off; the faults row says why, when it comes back and (asked live) the item that
 * replays it, "; replay: crash = ..." (or ""). */
static void crash(sim_run_t *run, sim_faults_t *f, fhost_t *h, const char *why, const char *replay)
{
    if (h->down || !sg_host_is_on(h->host))
        return;
    /* the injector leaves a host before turning it off */
    if (sg_actor_get_host(sg_actor_self()) == h->host)
        for (size_t i = 0; i < f->n_hosts; i++)
            if (&f->hosts[i] != h && sg_host_is_on(f->hosts[i].host)) {
                sg_actor_set_host(sg_actor_self(), f->hosts[i].host);
                break;
            }
    h->down = 1;
    nodes_on(run, h->host, node_down);
    if (isfinite(h->recover_at))
        sim_fault_log(run, "host-crash", sg_host_get_name(h->host), "%s; back at %.6gs%s", why,
                      h->recover_at, replay);
    else if (h->random_down && f->mttr > 0)
        sim_fault_log(run, "host-crash", sg_host_get_name(h->host), "%s; repair drawn%s", why,
                      replay);
    else
        sim_fault_log(run, "host-crash", sg_host_get_name(h->host), "%s; never back%s", why,
                      replay);
    sg_host_turn_off(h->host);
}

static void recover(sim_run_t *run, sim_faults_t *f, fhost_t *h)
{
    if (!h->down)
        return;
    h->down = 0;
    h->random_down = 0;
    h->recover_at = INFINITY;
    sg_host_turn_on(h->host);
    sim_fault_log(run, "host-recover", sg_host_get_name(h->host), "host back on");
    if (f->mtbf > 0 && !isinf(h->next_failure))
        h->next_failure = simgrid_get_clock() + draw_exp(&f->rng, f->mtbf);
    nodes_on(run, h->host, node_restart);
}

static void link_event(sim_run_t *run, sim_faults_t *f, const event_t *e)
{
    const double *platform = e->latency ? f->link_lat : f->link_bw;
    for (size_t i = e->link0; i < e->link0 + e->n_links; i++)
        (e->latency ? sg_link_set_latency : sg_link_set_bandwidth)(f->links[i],
                                                                   e->bw < 0 ? platform[i] : e->bw);
    char v[32];
    double now = e->bw < 0 ? platform[e->link0] : e->bw;
    if (e->latency)
        snprintf(v, sizeof v, "%.6gs latency", now);
    else
        scenario_format_bandwidth(now, v, sizeof v);
    sim_fault_log(run, e->kind, e->target, "%zu link%s at %s", e->n_links,
                  e->n_links == 1 ? "" : "s", v);
}

static void injector(sim_node_t *unused)
{
    (void)unused;
    sim_run_t *run = sim_current;
    sim_faults_t *f = run->faults;
    while (!run->ended && !all_over(run)) {
        /* the next thing to happen: an event, a random failure or a random repair */
        double t = f->next_ev < f->n_ev ? f->ev[f->next_ev].t : INFINITY;
        fhost_t *rh = NULL;
        for (size_t i = 0; i < f->n_hosts; i++) {
            fhost_t *h = &f->hosts[i];
            double ti = h->down ? (h->random_down ? h->recover_at : INFINITY) : h->next_failure;
            if (ti < t) {
                t = ti;
                rh = h;
            }
        }
        if (isinf(t))
            break;
        if (t > simgrid_get_clock())
            sg_actor_sleep_until(t);
        if (run->ended)
            break;
        if (rh && rh->down) {
            recover(run, f, rh);
        } else if (rh) {
            rh->random_down = 1;
            rh->next_failure = 0; /* redrawn at recovery */
            rh->recover_at = f->mttr > 0 ? t + draw_exp(&f->rng, f->mttr) : INFINITY;
            crash(run, f, rh, "random failure (mtbf)", "");
        } else {
            const event_t *e = &f->ev[f->next_ev++];
            fhost_t *h = e->type == EV_LINK ? NULL : &f->hosts[e->host];
            if (e->type == EV_CRASH) {
                /* the scheduled recovery, if any, is the next EV_RECOVER of this host */
                h->recover_at = INFINITY;
                for (size_t j = f->next_ev; j < f->n_ev; j++)
                    if (f->ev[j].type == EV_RECOVER && f->ev[j].host == e->host) {
                        h->recover_at = f->ev[j].t;
                        break;
                    }
                crash(run, f, h, "scheduled crash", "");
            } else if (e->type == EV_RECOVER) {
                recover(run, f, h);
            } else {
                link_event(run, f, e);
            }
        }
    }
    f->injector_running = 0;
}

/* ---- host changes asked while the run runs (dtsim serve's page, faults.live_hosts) ------- */

static void live_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    live_act_t *a = sg_actor_get_data(sg_actor_self());
    sim_run_t *run = a->node.run;
    sim_faults_t *f = run->faults;
    if (a->kind != LIVE_SLOW_END) {
        sg_actor_sleep_until(a->at);
        if (run->ended)
            return;
    }
    if (a->kind == LIVE_LATENCY) {
        for (size_t i = 0; i < a->n_links; i++)
            sg_link_set_latency(a->links[i], a->value);
        sim_fault_log(run, "link-degrade", a->target,
                      "%zu link%s at %.6gs latency, asked "
                      "live%s",
                      a->n_links, a->n_links == 1 ? "" : "s", a->value, a->replay);
        return;
    }
    if (a->kind == LIVE_CRASH) {
        a->h->recover_at = isfinite(a->secs) ? a->at + a->secs : INFINITY;
        crash(run, f, a->h, "asked live", a->replay);
    }
    if (!isfinite(a->secs))
        return;
    sg_actor_sleep_for(a->secs);
    if (run->ended)
        return;
    if (a->kind == LIVE_CRASH) {
        recover(run, f, a->h);
    } else {
        a->h->factor /= a->value;
        sim_fault_log(run, "straggler-end", sg_host_get_name(a->h->host),
                      "compute at x%g "
                      "again",
                      a->h->factor);
    }
}

/* Starts the actor of a live change on a host that stays on (the control host of a generated
 * platform, else another host of the run). */
static dt_status live_start(sim_run_t *run, live_act_t *a, dt_err_t *err)
{
    sim_faults_t *f = run->faults;
    sg_host_t on = NULL;
    for (size_t i = 0; i < f->n_hosts && !on; i++)
        if (!strcmp(sg_host_get_name(f->hosts[i].host), SIM_PLATFORM_CONTROL_HOST))
            on = f->hosts[i].host;
    for (size_t i = 0; i < f->n_hosts && !on; i++)
        if (&f->hosts[i] != a->h && sg_host_is_on(f->hosts[i].host))
            on = f->hosts[i].host;
    if (!on)
        return dt_err_input(err, "no other host is on to play the change from");
    snprintf(a->node.name, sizeof a->node.name, "live-change-%d", f->n_live);
    a->node.run = run;
    a->node.host = (sim_host_t)on;
    a->node.role = "injector";
    a->node.finished = 1; /* not a node of the run */
    sg_actor_t actor = sg_actor_init(a->node.name, on);
    sg_actor_set_data(actor, &a->node);
    sg_actor_daemonize(actor);
    sg_actor_start(actor, live_main, 0, NULL);
    return DT_OK;
}

/* A free slot for a live change's actor. */
static live_act_t *live_slot(sim_faults_t *f, live_kind_t kind, const char *target, dt_err_t *err)
{
    if (f->n_live == LIVE_ACTS) {
        dt_err_input(err, "a run takes at most %d changes of this kind", LIVE_ACTS);
        return NULL;
    }
    live_act_t *a = &f->live[f->n_live];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    snprintf(a->target, sizeof a->target, "%s", target);
    return a;
}

/* The host a live change names, and a free slot for its actor. */
static dt_status live_target(sim_run_t *run, live_kind_t kind, const char *target, fhost_t **h,
                             live_act_t **a, dt_err_t *err)
{
    sim_faults_t *f = run->faults;
    sg_host_t host = f && run->sc->live_hosts ? target_host(run, target) : NULL;
    if (!f || !run->sc->live_hosts)
        return dt_err_input(err, "this run's scenario does not take host changes "
                                 "(faults.live_hosts = no)");
    if (!host || !(*h = host_of(f, host))) {
        char hint[160];
        hosts_hint(run, hint, sizeof hint);
        return dt_err_input(err, "no node or host named \"%s\" (expected %s)", target, hint);
    }
    if (!(*a = live_slot(f, kind, target, err)))
        return DT_ERR_INPUT;
    (*a)->h = *h;
    return DT_OK;
}

/* " for D" of a replay item, or nothing for a change that lasts. */
static void for_text(char *buf, size_t n, double secs)
{
    if (isfinite(secs))
        snprintf(buf, n, " for %.17gs", secs);
    else
        buf[0] = 0;
}

dt_status sim_fault_crash_now(sim_run_t *run, const char *target, double secs, dt_err_t *err)
{
    fhost_t *h;
    live_act_t *a;
    if (live_target(run, LIVE_CRASH, target, &h, &a, err))
        return DT_ERR_INPUT;
    if (h->down)
        return dt_err_input(err, "%s is down already", target);
    char dur[48];
    for_text(dur, sizeof dur, secs);
    a->at = sim_now() + LIVE_DELAY;
    snprintf(a->replay, sizeof a->replay, "; replay: crash = %s at %.17gs%s", target, a->at, dur);
    a->secs = secs;
    if (live_start(run, a, err))
        return DT_ERR_INPUT;
    run->faults->n_live++;
    return DT_OK;
}

dt_status sim_fault_straggler_now(sim_run_t *run, const char *target, double factor, double secs,
                                  dt_err_t *err)
{
    fhost_t *h;
    live_act_t *a;
    if (live_target(run, LIVE_SLOW_END, target, &h, &a, err))
        return DT_ERR_INPUT;
    if (isfinite(secs)) {
        a->value = factor;
        a->secs = secs;
        if (live_start(run, a, err))
            return DT_ERR_INPUT;
        run->faults->n_live++;
    }
    h->factor *= factor;
    char dur[48];
    for_text(dur, sizeof dur, secs);
    sim_fault_log(run, "straggler", target,
                  "compute x%g from its next step, asked live; "
                  "replay: straggler = %s x%g at %.17gs%s",
                  factor, target, factor, sim_now(), dur);
    return DT_OK;
}

static sim_node_t injector_node;

static void injector_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    injector(&injector_node);
}

void sim_faults_start(sim_run_t *run)
{
    sim_faults_t *f = run->faults;
    if (!f || (f->n_ev == 0 && f->mtbf <= 0))
        return;
    memset(&injector_node, 0, sizeof injector_node);
    snprintf(injector_node.name, sizeof injector_node.name, "fault-injector");
    injector_node.run = run;
    /* generated platforms give it a host of its own; on a file platform it starts on the
     * first host and moves away from any host it turns off */
    injector_node.host = NULL;
    for (size_t i = 0; i < f->n_hosts && !injector_node.host; i++)
        if (!strcmp(sg_host_get_name(f->hosts[i].host), SIM_PLATFORM_CONTROL_HOST))
            injector_node.host = (sim_host_t)f->hosts[i].host;
    if (!injector_node.host)
        injector_node.host = run->n_servers ? run->servers[0].host : run->workers[0].host;
    injector_node.role = "injector";
    injector_node.finished = 1; /* not a node of the run */
    f->injector = sg_actor_init(injector_node.name, (sg_host_t)injector_node.host);
    sg_actor_set_data(f->injector, &injector_node);
    f->injector_running = 1;
    sg_actor_start(f->injector, injector_main, 0, NULL);
}

void sim_fault_node_finished(sim_run_t *run)
{
    if (run->faults && all_over(run))
        sim_run_end(run);
}

void sim_faults_stop(sim_run_t *run)
{
    sim_faults_t *f = run->faults;
    if (f && f->injector_running && sg_actor_self() != f->injector) {
        f->injector_running = 0;
        sg_actor_kill(f->injector);
    }
}
