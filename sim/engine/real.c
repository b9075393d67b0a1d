/* Real mode's part of the engine (real.h): which scenarios can run real, which process runs
 * which host, what each process keeps (its evaluations, its counters over time) and how
 * rank 0 puts every process's share together into one run like a simulated one. */
#define _POSIX_C_SOURCE 200809L
#include "real.h"

#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run.h"
#include "transport_mpi.h"

extern const sim_payload_codec_t sim_msg_codec; /* msg_wire.c */
extern char **environ;

typedef struct real_eval {
    double t;
    int64_t step;
    double loss, acc;
} real_eval_t;

typedef struct real_mark { /* this process's counters at a moment */
    double t, samples, bytes;
} real_mark_t;

typedef struct real_shape { /* a host link reshaped on the testbed at a moment */
    double at;
    int host;         /* its rank: the testbed's host index */
    double bandwidth; /* bytes/s */
    char target[SIM_FAULT_TARGET];
    int restore;
} real_shape_t;

struct sim_real {
    real_eval_t *evals;
    size_t n_evals, cap_evals;
    real_mark_t *marks;
    size_t n_marks, cap_marks;
    double end;        /* the latest process's end (rank 0, after sim_real_collect) */
    sim_host_t *hosts; /* rank -> host */
    int n_hosts;
    real_shape_t *shapes; /* faults.link_degrade on the testbed, in time order */
    size_t n_shapes;
};

static dt_status refuse(const scenario_t *sc, dt_err_t *err, const char *key, const char *why)
{
    return scenario_fail(sc, err, key, "%s", why);
}

/* The first [faults] key the scenario gives from `first` on in the list, NULL: none. */
static const char *fault_key(const scenario_t *sc, int first)
{
    static const char *const keys[] = {
        "faults.client_speed", "faults.device_trace",   "faults.client_up",
        "faults.client_down",  "faults.client_latency", "faults.crash",
        "faults.link_down",    "faults.link_degrade",   "faults.straggler",
        "faults.slowdown",     "faults.mtbf",           "faults.dropout",
        "faults.deadline",     "faults.over_select",    "faults.availability",
        "faults.live_hosts"};
    for (size_t i = (size_t)first; i < sizeof keys / sizeof *keys; i++)
        if (scenario_key_given(sc, keys[i]))
            return keys[i];
    return NULL;
}

dt_status sim_real_check(const scenario_t *sc, dt_err_t *err)
{
    if (!(sc->strategy->takes & SIM_RUNS_REAL)) {
        char real[256];
        scenario_strategies_taking(SIM_RUNS_REAL, " and ", real, sizeof real);
        return scenario_fail(sc, err, "strategy.kind", "%s does not run real (--real runs %s)",
                             sc->strategy->name, real);
    }
    if (sc->profile[0])
        return refuse(sc, err, "model.arch",
                      "a model profile does not run real: it has no weights to train");
    if (sc->backend == SIM_BACKEND_CUDA)
        return refuse(sc, err, "model.device", "real mode trains on the cpu backend");
    if (scenario_has_client_devices(sc) && fault_key(sc, 0))
        return refuse(sc, err, fault_key(sc, 0),
                      "real mode's clients compute and send at their hosts' own speed: "
                      "client_speed, device_trace and client links do not apply");
    /* stragglers and slowdowns are compute that takes longer: real sleeps (sim_charge);
     * link degradation reshapes a host link of the testbed (real_degrader) */
    const char *fk = fault_key(sc, 5);
    int degrade = fk && !strcmp(fk, "faults.link_degrade");
    if (degrade && !getenv("DTSIM_TESTBED"))
        return refuse(sc, err, fk,
                      "real mode degrades links on the shaped-link testbed only "
                      "(tests/testbed/testbed.sh with ... -- dtsim run ... --real)");
    if (degrade)
        fk = fault_key(sc, 8);
    int slow_only = fk && (!strcmp(fk, "faults.straggler") || !strcmp(fk, "faults.slowdown"));
    const char *other = slow_only ? fault_key(sc, 10) : fk;
    if (scenario_has_faults(sc) && other)
        return refuse(sc, err, other,
                      "real mode plays stragglers, slowdowns and (on the testbed) link "
                      "degradation only; Open MPI 4.1 does not survive a lost process: "
                      "simulate the other faults");
    if (sc->max_time > 0)
        return refuse(sc, err, "run.max_time",
                      "real mode stops after run.steps (every process must agree on the "
                      "last step without a clock they share)");
    if (sc->side_by_side == SIM_SIDE_YES)
        return refuse(sc, err, "strategy.side_by_side",
                      "real mode trains every client on its own host (side_by_side = no)");
    if (sc->bucket_mb > 0)
        return refuse(sc, err, "strategy.bucket_mb",
                      "real mode exchanges whole gradients (bucket_mb = 0)");
    return sc->strategy->real_check ? sc->strategy->real_check(sc, err) : DT_OK;
}

/* sim_real_check, and the backend model.device = auto chose. */
static dt_status check(const sim_run_t *run, dt_err_t *err)
{
    if (sim_real_check(run->sc, err))
        return DT_ERR_INPUT;
    if (strcmp(run->be->name, "cpu"))
        return refuse(run->sc, err, "model.device", "real mode trains on the cpu backend");
    return DT_OK;
}

/* The hosts of the run's nodes, each once: servers first, so rank 0 is the server of a
 * parameter-server or federated run. */
static int run_hosts(const sim_run_t *run, sim_host_t *out)
{
    int n = 0;
    const sim_node_t *lists[2] = {run->servers, run->workers};
    int counts[2] = {run->n_servers, run->n_workers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            sim_host_t h = lists[l][i].host;
            int seen = 0;
            for (int k = 0; k < n && !seen; k++)
                seen = out[k] == h;
            if (!seen)
                out[n++] = h;
        }
    return n;
}

static int by_at(const void *a, const void *b)
{
    const real_shape_t *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* faults.link_degrade as reshapes of the testbed's host links: each target a node or a
 * host of the run (its host's link), restored to cluster.bandwidth at its end. */
static dt_status shapes_make(sim_run_t *run, dt_err_t *err)
{
    const scenario_t *sc = run->sc;
    if (!strcmp(sc->link_degrade, "none"))
        return DT_OK;
    sim_fault_spec_t specs[SIM_FAULT_MAX];
    size_t n;
    dt_err_t why;
    if (sim_fault_spec_parse(SIM_FAULT_LINK_DEGRADE, sc->link_degrade, specs, SIM_FAULT_MAX, &n,
                             &why))
        return scenario_fail(sc, err, "faults.link_degrade", "%s", why.msg);
    struct sim_real *r = run->real;
    r->shapes = dt_calloc(2 * n + 1, sizeof *r->shapes);
    for (size_t i = 0; i < n; i++) {
        int host = -1;
        for (int k = 0; k < r->n_hosts && host < 0; k++) {
            if (!strcmp(sim_host_name(r->hosts[k]), specs[i].target))
                host = k;
            const sim_node_t *lists[2] = {run->workers, run->servers};
            int counts[2] = {run->n_workers, run->n_servers};
            for (int l = 0; l < 2 && host < 0; l++)
                for (int j = 0; j < counts[l] && host < 0; j++)
                    if (lists[l][j].host == r->hosts[k] &&
                        !strcmp(lists[l][j].name, specs[i].target))
                        host = k;
        }
        if (host < 0)
            return scenario_fail(sc, err, "faults.link_degrade",
                                 "item %zu: real mode degrades a host's link: name a node or "
                                 "a host (\"%s\" is neither)",
                                 i + 1, specs[i].target);
        if (specs[i].latency)
            return scenario_fail(sc, err, "faults.link_degrade",
                                 "item %zu: real mode reshapes a link's bandwidth only (\"to\" "
                                 "a latency is simulated)",
                                 i + 1);
        real_shape_t *x = &r->shapes[r->n_shapes++];
        *x = (real_shape_t){specs[i].at, host, specs[i].value, "", 0};
        snprintf(x->target, sizeof x->target, "%s", specs[i].target);
        if (isfinite(specs[i].until)) {
            real_shape_t *y = &r->shapes[r->n_shapes++];
            *y = *x;
            y->at = specs[i].until;
            y->bandwidth = sc->bandwidth;
            y->restore = 1;
        }
    }
    qsort(r->shapes, r->n_shapes, sizeof *r->shapes, by_at);
    return DT_OK;
}

/* Rank 0's daemon: at each moment, the testbed's script reshapes the host link. */
static void real_degrader(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    sim_run_t *run = sim_self_data();
    const struct sim_real *r = run->real;
    const char *script = getenv("DTSIM_TESTBED_SCRIPT"), *tb = getenv("DTSIM_TESTBED");
    for (size_t i = 0; i < r->n_shapes && !run->ended; i++) {
        const real_shape_t *x = &r->shapes[i];
        sim_sleep_until(x->at);
        char host[16], rate[48];
        snprintf(host, sizeof host, "%d", x->host);
        snprintf(rate, sizeof rate, "%.0fbps", 8 * x->bandwidth);
        const char *args[] = {
            script ? script : "testbed.sh", "shape", tb, host, "--bandwidth", rate, NULL};
        pid_t pid;
        int st = -1;
        if (!script || posix_spawn(&pid, script, NULL, NULL, (char *const *)args, environ) ||
            waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            sim_fault_log(run, "link-degrade", x->target,
                          "the testbed could not reshape the "
                          "link (DTSIM_TESTBED_SCRIPT %s)",
                          script ? script : "unset");
        else
            sim_fault_log(run, x->restore ? "link-restore" : "link-degrade", x->target,
                          "testbed host %d's link at %s", x->host, rate);
    }
}

void sim_real_faults_start(sim_run_t *run)
{
    if (run->real->n_shapes && sim_real_rank() == 0)
        sim_start("link-degrader", run->real->hosts[0], real_degrader, run, 1);
}

dt_status sim_real_setup(sim_run_t *run, dt_err_t *err)
{
    if (check(run, err))
        return DT_ERR_INPUT;
    sim_host_t *hosts = dt_malloc(sizeof(sim_host_t) * (size_t)(run->n_workers + run->n_servers));
    int n = run_hosts(run, hosts);
    if (n != sim_real_size()) {
        dt_err_input(err,
                     "%s: %d process%s for %d hosts (%s ... %s): real mode runs one process "
                     "per host, start it with mpirun -n %d",
                     run->sc->path, sim_real_size(), sim_real_size() == 1 ? "" : "es", n,
                     sim_host_name(hosts[0]), sim_host_name(hosts[n - 1]), n);
        free(hosts);
        return DT_ERR_INPUT;
    }
    sim_real_bind(hosts, n);
    run->real = dt_calloc(1, sizeof *run->real);
    run->real->hosts = hosts;
    run->real->n_hosts = n;
    if (shapes_make(run, err))
        return DT_ERR_INPUT;
    sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++)
            sim_transport_place(lists[l][i].name, lists[l][i].host);
    sim_transport_set_codec(&sim_msg_codec);
    /* the timeline, its messages and the links' bytes would be rank 0's share alone */
    sim_record_free(run);
    run->timeline_steps = 0;
    run->timeline_end = 0;
    return DT_OK;
}

void sim_real_free(sim_run_t *run)
{
    if (!run->real)
        return;
    free(run->real->hosts);
    free(run->real->shapes);
    free(run->real->evals);
    free(run->real->marks);
    free(run->real);
    run->real = NULL;
}

#define GROW(arr, n, cap)                                                                          \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            (cap) = (cap) ? 2 * (cap) : 64;                                                        \
            (arr) = realloc((arr), sizeof *(arr) * (cap));                                         \
            DT_CHECK((arr), "out of memory");                                                      \
        }                                                                                          \
    } while (0)

void sim_real_eval(sim_run_t *run, double t, long step, double loss, double acc)
{
    struct sim_real *r = run->real;
    GROW(r->evals, r->n_evals, r->cap_evals);
    r->evals[r->n_evals++] = (real_eval_t){t, step, loss, acc};
}

void sim_real_mark(sim_run_t *run)
{
    struct sim_real *r = run->real;
    GROW(r->marks, r->n_marks, r->cap_marks);
    r->marks[r->n_marks++] = (real_mark_t){sim_now(), run->samples, run->bytes_total};
}

/* ---- the end: every process's share to rank 0 ---------------------------------------- */

typedef struct blob_head {
    int64_t nodes, evals, marks, staleness;
    int32_t diverged, failed, halt, pad;
    double end, samples, bytes;
} blob_head_t;

typedef struct blob_node {
    int32_t server, rank, finished, pad;
    int64_t steps;
    double compute_s, comm_s, idle_s, bytes_sent, bytes_recv, end_time;
    double part[RESULTS_PART_COUNT]; /* its breakdown (breakdown.h) */
} blob_node_t;

static void put(char **p, const void *src, size_t n)
{
    if (!n)
        return; /* src may be NULL then */
    memcpy(*p, src, n);
    *p += n;
}

static char *pack(sim_run_t *run, double end, size_t *len)
{
    struct sim_real *r = run->real;
    blob_head_t h = {.evals = (int64_t)r->n_evals,
                     .marks = (int64_t)r->n_marks,
                     .staleness = run->staleness_cap,
                     .diverged = run->diverged,
                     .failed = run->failed,
                     .halt = run->halt,
                     .end = end,
                     .samples = run->samples,
                     .bytes = run->bytes_total};
    sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++)
            h.nodes += sim_real_local(lists[l][i].host);
    *len = sizeof h + sizeof(blob_node_t) * (size_t)h.nodes + sizeof(real_eval_t) * r->n_evals +
           sizeof(real_mark_t) * r->n_marks + sizeof(long) * (size_t)run->staleness_cap;
    char *blob = dt_malloc(*len + 1), *p = blob;
    put(&p, &h, sizeof h);
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            sim_node_t *n = &lists[l][i];
            if (!sim_real_local(n->host))
                continue;
            blob_node_t b = {l == 1,        n->rank,       n->finished, 0,
                             n->steps,      n->compute_s,  n->comm_s,   n->idle_s,
                             n->bytes_sent, n->bytes_recv, n->end_time, {0}};
            memcpy(b.part, n->part, sizeof b.part);
            put(&p, &b, sizeof b);
        }
    put(&p, r->evals, sizeof(real_eval_t) * r->n_evals);
    put(&p, r->marks, sizeof(real_mark_t) * r->n_marks);
    if (run->staleness_cap)
        put(&p, run->staleness, sizeof(long) * (size_t)run->staleness_cap);
    return blob;
}

/* A rank's counters at time t: its latest mark at or before t. */
static real_mark_t counters_at(const real_mark_t *m, size_t n, double t)
{
    real_mark_t out = {t, 0, 0};
    for (size_t i = 0; i < n && m[i].t <= t; i++)
        out = m[i];
    return out;
}

static int by_time(const void *a, const void *b)
{
    const real_eval_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->step > y->step) - (x->step < y->step);
}

/* Rank 0: every rank's nodes, counters and evaluations into run; the evaluations recorded
 * in time order, with the samples and bytes every rank had reached by then. */
static void merge(sim_run_t *run, void **blobs, int size)
{
    struct sim_real *r = run->real;
    const blob_head_t **heads = dt_calloc((size_t)size, sizeof *heads);
    const real_mark_t **marks = dt_calloc((size_t)size, sizeof *marks);
    real_eval_t *evals = NULL;
    size_t n_evals = 0, cap = 0;
    run->samples = run->bytes_total = 0;
    double end = 0;
    for (int k = 0; k < size; k++) {
        const char *p = blobs[k];
        const blob_head_t *h = heads[k] = (const blob_head_t *)p;
        p += sizeof *h;
        const blob_node_t *nodes = (const blob_node_t *)p;
        for (int64_t i = 0; i < h->nodes; i++) {
            const blob_node_t *b = &nodes[i];
            sim_node_t *n = b->server ? &run->servers[b->rank] : &run->workers[b->rank];
            n->finished = b->finished;
            n->steps = b->steps;
            n->compute_s = b->compute_s;
            n->comm_s = b->comm_s;
            n->idle_s = b->idle_s;
            n->bytes_sent = b->bytes_sent;
            n->bytes_recv = b->bytes_recv;
            n->end_time = b->end_time;
            memcpy(n->part, b->part, sizeof n->part);
        }
        p += sizeof(blob_node_t) * (size_t)h->nodes;
        const real_eval_t *ev = (const real_eval_t *)p;
        for (int64_t i = 0; i < h->evals; i++) {
            GROW(evals, n_evals, cap);
            evals[n_evals++] = ev[i];
        }
        p += sizeof(real_eval_t) * (size_t)h->evals;
        marks[k] = (const real_mark_t *)p;
        p += sizeof(real_mark_t) * (size_t)h->marks;
        const long *stale = (const long *)p;
        for (int64_t s = 0; k > 0 && s < h->staleness; s++) /* rank k's histogram, added */
            if (stale[s]) {
                sim_staleness_add(run, s);
                run->staleness[s] += stale[s] - 1;
            }
        run->samples += h->samples;
        run->bytes_total += h->bytes;
        run->diverged |= h->diverged;
        run->failed |= h->failed;
        if (h->end > end)
            end = h->end;
    }
    r->end = end;
    qsort(evals, n_evals, sizeof *evals, by_time);
    run->evals = 0;
    for (size_t i = 0; i < n_evals; i++) {
        const real_eval_t *e = &evals[i];
        double samples = 0, bytes = 0;
        for (int k = 0; k < size; k++) {
            real_mark_t m = counters_at(marks[k], (size_t)heads[k]->marks, e->t);
            samples += m.samples;
            bytes += m.bytes;
        }
        run->last_loss = e->loss;
        run->last_acc = e->acc;
        run->last_eval_step = e->step;
        run->evals++;
        if (isnan(run->time_to_target) && e->acc >= run->sc->target_accuracy)
            run->time_to_target = e->t;
        if (run->db && !run->db_failed &&
            results_eval_add_text(run->db, run->run_id, e->t, e->step, samples, bytes, e->loss,
                                  e->acc, run->test.tokens ? trainer_text_perplexity(e->loss) : NAN,
                                  &run->db_err))
            run->db_failed = 1;
    }
    free(evals);
    free(heads);
    free(marks);
}

/* When this process's part of the run ended: its nodes' latest end, less the final
 * evaluation's wall time (a simulated evaluation takes no simulated time, and the one at the
 * end would otherwise count as training: 15 ms of the mlp's 2000 test samples, a third of a
 * short run's step); not the time it reached here, which waits for the others. */
static double process_end(const sim_run_t *run)
{
    const sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    double end = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++)
            if (sim_real_local(lists[l][i].host) && lists[l][i].finished &&
                lists[l][i].end_time > end)
                end = lists[l][i].end_time;
    if (!(end > 0))
        end = sim_now();
    end -= run->final_eval_wall;
    return end > 0 ? end : 0;
}

void sim_real_collect(sim_run_t *run)
{
    double end = process_end(run);
    sim_real_mark(run); /* the final counters */
    size_t len;
    char *mine = pack(run, end, &len);
    size_t *lens = dt_calloc((size_t)sim_real_size(), sizeof(size_t));
    void **blobs = sim_real_gather(mine, len, lens);
    free(mine);
    if (blobs) {
        merge(run, blobs, sim_real_size());
        for (int k = 0; k < sim_real_size(); k++)
            free(blobs[k]);
        free(blobs);
    }
    free(lens);
    long failed = run->failed;
    sim_real_bcast_long(&failed);
    run->failed = (int)failed;
}

double sim_real_end(const sim_run_t *run)
{
    return run->real->end;
}
