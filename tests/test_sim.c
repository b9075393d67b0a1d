/* The simulated cluster against things that could disagree with it:
 *   - synchronous strategies (sync-ps with 1 and several shards, every all-reduce
 *     algorithm) land on the same weights as one worker with the whole global batch;
 *   - under CM02 without cross-traffic, one all-reduce and one sync-ps exchange take the
 *     time the alpha-beta formulas give, within 1%, for several worker counts and sizes;
 *   - async-ps staleness is non-zero and grows with the worker count;
 *   - fedavg on shards:2 is measurably worse than on iid after the same rounds;
 *   - the same scenario and seed give identical results twice;
 *   - every fault kind on every strategy: the run finishes, logs the fault and the
 *     reaction, and keeps its evaluations; a crash of the single worker costs exactly the
 *     downtime plus the step it lost, a dead sync-ps worker about the detection timeout;
 *   - timing-only runs (model profiles) cost exactly their FLOPs; a ring of one message per
 *     phase takes the step-by-step ring's time; gradient buckets overlap the backward pass
 *     exactly as the alpha-beta timeline says;
 *   - the interleaved pipeline schedule idles (S-1)/(V M+S-1) of a step of equal chunks,
 *     trains single's weights, and with one chunk a stage is 1f1b;
 *   - the breakdown of a step sums to the step on every strategy, and its parts match the
 *     FLOPs over the rate, the alpha-beta ring, the buckets' timeline and the interleaved
 *     pipeline's bubble (S-1)/(V M+S-1) and recomputation;
 *   - secure aggregation leaves the weights, moves the bytes its four steps add up to
 *     (the paper's published expansion for the per-client count), charges the documented
 *     cryptography, and fails exactly the rounds where its clients' dropouts leave a step
 *     below the threshold.
 * SimGrid runs once per process, so every simulation runs in a forked child that sends
 * back what it measured through a pipe. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "compress.h"
#include "nccl.h"
#include "pipeline_impl.h"
#include "platform.h"
#include "replicas.h"
#include "run.h"
#include "scenario.h"
#include "secagg.h"
#include "strategy.h"

typedef struct outcome {
    int ok;
    char err[512];
    double end_time, acc, loss, bytes, samples;
    long evals;
    double mean_staleness;
    long stale_count, max_staleness;
    int replicas_identical;
    size_t n_params;
    double compute_s;  /* worker 0 */
    double step_flops; /* forward + backward per sample */
    double device_flops;
    int diverged;
    char diverged_why[200];
    long fault_rows;
    char fault_kinds[256];
    int timing_only;       /* no weights follow */
    double idle_share;     /* the workers' idle / (compute + comm + idle) */
    double mem0[4];        /* worker 0's memory: params, grads, optimizer, activations */
    double mem_params;     /* parameter bytes over every worker */
    double mem_server[4];  /* the first server's memory, as mem0 (0 without servers) */
    double server_compute; /* the first server's compute seconds (0 without servers) */
    char summary[1024];    /* the strategy's summary line (run.note), where it has one */
    /* the first 64 workers' rows as the database gets them, and the hosts' energy */
    double w_compute[64], w_comm[64], w_idle[64], w_sent[64], w_recv[64];
    long w_steps[64];
    double host_joules;
    double msg_flight_s; /* the messages' seconds on the wire, summed */
    long msgs_recv;
    long steps;                       /* global steps (rounds), as the summary counts them */
    double parts[RESULTS_PART_COUNT]; /* the breakdown of a step (sim_breakdown_of) */
    double part_over;                 /* the most a worker's counted intervals passed the end
                                         by (0: none did; they must never) */
    int built; /* the workers whose hosts the platform built (sim_platform_load_live) */
} outcome_t;

/* Small and fast: 4 classes of 32-dimensional Gaussians, an mlp with one hidden layer. */
static const char *const base[] = {
    "data.source=synthetic",
    "data.train_samples=4096",
    "data.test_samples=512",
    "data.synthetic_dim=32",
    "data.synthetic_classes=4",
    "model.arch=mlp",
    "model.hidden=16",
    "model.batch=8",
    "run.eval_every=1000",
    "run.steps=20",
    "model.lr=0.05",
    "model.momentum=0.9",
    "model.weight_decay=0.0001",
};

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static void child(int fd, const char *const *sets, int n_sets)
{
    static scenario_t sc;
    static sim_run_t run;
    outcome_t o;
    memset(&o, 0, sizeof o);
    dt_err_t err = {{0}};
    scenario_defaults(&sc);
    snprintf(sc.name, sizeof sc.name, "test");
    int n_base = (int)(sizeof base / sizeof base[0]);
    for (int i = 0; i < n_base + n_sets; i++)
        if (scenario_set(&sc, i < n_base ? base[i] : sets[i - n_base], &err)) {
            snprintf(o.err, sizeof o.err, "%s", err.msg);
            write_all(fd, &o, sizeof o);
            _exit(0);
        }
    if (scenario_validate(&sc, &err) || sim_run_init(&run, &sc, "test_sim", &err) ||
        sim_run_execute(&run, &err)) {
        snprintf(o.err, sizeof o.err, "%s", err.msg[0] ? err.msg : "run failed");
        write_all(fd, &o, sizeof o);
        _exit(0);
    }
    o.ok = !run.failed;
    o.end_time = sim_run_end_time(&run);
    o.msg_flight_s = run.msg_flight_s;
    o.msgs_recv = run.msgs_recv;
    o.fault_rows = run.fault_rows;
    o.diverged = run.diverged;
    memcpy(o.diverged_why, run.diverged_why, sizeof o.diverged_why);
    memcpy(o.fault_kinds, run.fault_kinds, sizeof o.fault_kinds);
    o.acc = run.last_acc;
    o.loss = run.last_loss;
    o.bytes = run.bytes_total;
    o.samples = run.samples;
    o.evals = run.evals;
    o.n_params = run.n_params;
    o.compute_s = run.workers[0].compute_s;
    double sc_c, sc_m, sc_i;
    sim_run_shares(&run, &sc_c, &sc_m, &sc_i);
    o.idle_share = sc_i / (sc_c + sc_m + sc_i);
    for (int i = 0; i < run.n_workers; i++) {
        sim_node_memory(&run, &run.workers[i]);
        o.mem_params += run.workers[i].mem.params;
    }
    memcpy(o.mem0, &run.workers[0].mem, sizeof o.mem0);
    if (run.n_servers > 0) {
        sim_node_memory(&run, &run.servers[0]);
        memcpy(o.mem_server, &run.servers[0].mem, sizeof o.mem_server);
        o.server_compute = run.servers[0].compute_s;
    }
    for (int i = 0; i < run.n_workers && i < 64; i++) {
        const sim_node_t *n = &run.workers[i];
        o.w_compute[i] = n->compute_s;
        o.w_comm[i] = n->comm_s;
        o.w_idle[i] = o.end_time - n->compute_s - n->comm_s;
        o.w_sent[i] = n->bytes_sent;
        o.w_recv[i] = n->bytes_recv;
        o.w_steps[i] = n->steps;
    }
    results_energy_t energy;
    sim_run_energy(&run, &energy);
    o.host_joules = energy.host_joules;
    o.steps = sim_run_steps(&run);
    sim_breakdown_of(&run, o.end_time, o.steps, o.parts);
    for (int i = 0; i < run.n_workers; i++) {
        double counted = 0;
        for (int k = 0; k < RESULTS_PART_COUNT; k++)
            counted += run.workers[i].part[k];
        o.part_over = fmax(o.part_over, counted - o.end_time);
    }
    o.built = run.plat.built;
    o.step_flops = run.step_flops;
    o.device_flops = sc.device_flops;
    snprintf(o.summary, sizeof o.summary, "%s", run.note); /* the strategy's summary */
    double sum = 0;
    for (long s = 0; s < run.staleness_cap; s++) {
        sum += (double)s * run.staleness[s];
        o.stale_count += run.staleness[s];
        if (run.staleness[s])
            o.max_staleness = s;
    }
    o.mean_staleness = o.stale_count ? sum / o.stale_count : 0;
    o.replicas_identical = 1;
    o.timing_only = run.timing_only;
    for (int i = 1; i < run.n_workers && !run.timing_only; i++)
        if (memcmp(run.workers[i].params, run.workers[0].params, sizeof(float) * run.n_params))
            o.replicas_identical = 0;
    /* federated strategies: the server's global model */
    const float *params =
        !strcmp(sc.strategy->worker_role, "client") ? run.servers[0].params : run.workers[0].params;
    write_all(fd, &o, sizeof o);
    if (!run.timing_only) /* a timing-only run's buffers are inaccessible on purpose */
        write_all(fd, params, sizeof(float) * run.n_params);
    _exit(0);
}

/* Runs base + sets in a child; returns the outcome and (if params) the final weights. */
static outcome_t simulate(const char *const *sets, int n_sets, float **params)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], sets, n_sets);
    }
    close(fds[1]);
    outcome_t o;
    memset(&o, 0, sizeof o);
    int got = read_all(fds[0], &o, sizeof o);
    float *w = NULL;
    if (got == 0 && o.ok && !o.timing_only) {
        w = malloc(sizeof(float) * o.n_params);
        ck_assert(read_all(fds[0], w, sizeof(float) * o.n_params) == 0);
    }
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    ck_assert_msg(got == 0, "the simulation process died (status %d)", status);
    ck_assert_msg(o.ok, "simulation failed: %s", o.err);
    if (params)
        *params = w;
    else
        free(w);
    return o;
}

/* ---- same weights as one worker with the global batch --------------------------------- */

static double max_rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

static void check_equivalent(const char *const *sets, int n_sets, int workers)
{
    char single_batch[64];
    snprintf(single_batch, sizeof single_batch, "model.batch=%d", 8 * workers);
    const char *single[] = {"strategy.kind=single", single_batch};
    float *ref = NULL, *got = NULL;
    outcome_t a = simulate(single, 2, &ref);
    outcome_t b = simulate(sets, n_sets, &got);
    ck_assert_uint_eq(a.n_params, b.n_params);
    int shared = n_sets > 4 && !strcmp(sets[4], "run.shared_replicas=yes");
    ck_assert_msg(shared || b.replicas_identical, "%s %s %s: worker replicas differ", sets[0],
                  n_sets > 1 ? sets[1] : "", n_sets > 2 ? sets[2] : "");
    double d = max_rel_diff(got, ref, a.n_params);
    /* float32 sums in another order over 20 steps with momentum: a few 1e-6 */
    ck_assert_msg(d < 2e-5, "%s: max relative difference %g", sets[0], d);
    /* and training moved the weights, so agreement is not trivially the initial values */
    ck_assert(a.samples == 20.0 * 8 * workers && b.samples == a.samples);
    free(ref);
    free(got);
}

/* The real transformer on text windows: allreduce (ring, private replicas) and sync-ps of 2
 * workers of 4 sequences take the weights single takes with 8, to float rounding; the text
 * is a small file of our own (the byte windows of data.text), so the test needs no corpus. */
START_TEST(gpt_text_equals_single)
{
    char path[256], text[300];
    snprintf(path, sizeof path, "/tmp/dtsim-gpt-%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 400; i++)
        fprintf(f, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i,
                i * 7 % 13);
    fclose(f);
    snprintf(text, sizeof text, "data.text=%s", path);
    const char *gpt[] = {"data.source=text", text,
                         "model.arch=gpt",   "model.hidden=16",
                         "model.layers=2",   "model.heads=2",
                         "model.seq=16",     "data.test_samples=64"};
    const char *kinds[][2] = {{"strategy.kind=allreduce", "run.shared_replicas=no"},
                              {"strategy.kind=sync-ps", "strategy.servers=1"}};
    float *ref = NULL;
    const char *single[] = {gpt[0],         gpt[1], gpt[2],
                            gpt[3],         gpt[4], gpt[5],
                            gpt[6],         gpt[7], "strategy.kind=single",
                            "model.batch=8"};
    outcome_t a = simulate(single, 10, &ref);
    ck_assert(a.loss > 0 && a.loss < 5.6); /* below log 256 = 5.55 + noise: it learned */
    for (int k = 0; k < 2; k++) {
        float *got = NULL;
        const char *sets[] = {gpt[0],
                              gpt[1],
                              gpt[2],
                              gpt[3],
                              gpt[4],
                              gpt[5],
                              gpt[6],
                              gpt[7],
                              kinds[k][0],
                              kinds[k][1],
                              "cluster.workers=2",
                              "model.batch=4"};
        outcome_t b = simulate(sets, 12, &got);
        ck_assert_uint_eq(a.n_params, b.n_params);
        double d = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(d < 1e-4, "%s: max relative difference %g", kinds[k][0], d);
        ck_assert(b.samples == a.samples && a.samples == 20.0 * 8);
        free(got);
    }
    free(ref);
    unlink(path);
}
END_TEST

START_TEST(sync_ps_equals_single)
{
    const char *s1[] = {"strategy.kind=sync-ps", "cluster.workers=4", "strategy.servers=1"};
    check_equivalent(s1, 3, 4);
    const char *s3[] = {"strategy.kind=sync-ps", "cluster.workers=4", "strategy.servers=3"};
    check_equivalent(s3, 3, 4);
}
END_TEST

START_TEST(allreduce_equals_single)
{
    static const char *algos[] = {"ring", "tree", "halving-doubling", "hierarchical", "2d"};
    static const int workers[] = {4, 6};
    for (int a = 0; a < 5; a++)
        for (int w = 0; w < 2; w++) {
            char algo[64], nw[64];
            snprintf(algo, sizeof algo, "strategy.algorithm=%s", algos[a]);
            snprintf(nw, sizeof nw, "cluster.workers=%d", workers[w]);
            /* private replicas: every worker's copy must come out identical */
            const char *sets[] = {"strategy.kind=allreduce", algo, nw, "strategy.group_size=2",
                                  "run.shared_replicas=no"};
            check_equivalent(sets, 5, workers[w]);
            sets[4] = "run.shared_replicas=yes";
            check_equivalent(sets, 5, workers[w]);
        }
}
END_TEST

/* Shared replicas take the lazy all-reduce (only the updating worker copies the finished
 * sums in, comm/collective.h); private ones the eager one, every worker copying them. Both
 * must give the same weights bit for bit, at the same simulated time with the same bytes:
 * every algorithm, odd worker counts (uneven ring chunks, halving-doubling's folded
 * members) and groups. */
START_TEST(lazy_allreduce_equals_eager)
{
    static const char *algos[] = {"ring", "tree", "halving-doubling", "hierarchical", "2d"};
    static const char *workers[] = {"cluster.workers=5", "cluster.workers=6"};
    for (int a = 0; a < 5; a++)
        for (int w = 0; w < 2; w++) {
            char algo[64];
            snprintf(algo, sizeof algo, "strategy.algorithm=%s", algos[a]);
            const char *sets[] = {"strategy.kind=allreduce", algo, workers[w],
                                  w ? "strategy.group_size=3" : "strategy.group_size=5",
                                  "run.shared_replicas=no"};
            float *eager = NULL, *lazy = NULL;
            outcome_t e = simulate(sets, 5, &eager);
            sets[4] = "run.shared_replicas=yes";
            outcome_t l = simulate(sets, 5, &lazy);
            ck_assert_msg(!memcmp(eager, lazy, sizeof(float) * e.n_params),
                          "%s %s: lazy all-reduce's weights differ", algo, workers[w]);
            ck_assert_msg(e.end_time == l.end_time && e.bytes == l.bytes && e.acc == l.acc,
                          "%s %s: time %.17g / %.17g, bytes %.17g / %.17g", algo, workers[w],
                          e.end_time, l.end_time, e.bytes, l.bytes);
            free(eager);
            free(lazy);
        }
}
END_TEST

/* ---- every registered strategy -------------------------------------------------------- */

/* Each strategy of the registry runs the base model with its own defaults (8 workers;
 * fedavg 3 rounds): run twice it gives the same figures and the same weights, and where its
 * sim_strategy_t says it trains single's model (SIM_SAME_AS_SINGLE) it lands on the weights
 * of single with the global batch (model.batch x its replicas, the replicas slot). */
START_TEST(every_strategy_repeats_and_matches_single)
{
    int same_as_single = 0;
    for (const sim_strategy_t *const *s = sim_strategies; *s; s++) {
        char kind[64];
        snprintf(kind, sizeof kind, "strategy.kind=%s", (*s)->name);
        const char *sets[] = {kind, "strategy.rounds=3"};
        float *w1 = NULL, *w2 = NULL;
        outcome_t a = simulate(sets, 2, &w1);
        outcome_t b = simulate(sets, 2, &w2);
        ck_assert_msg(a.samples > 0, "%s: no sample trained", (*s)->name);
        ck_assert_msg(a.end_time == b.end_time && a.bytes == b.bytes && a.samples == b.samples &&
                          a.evals == b.evals && a.acc == b.acc && a.loss == b.loss,
                      "%s: two runs of one scenario differ (time %.17g / %.17g, bytes %.17g / "
                      "%.17g, accuracy %.17g / %.17g)",
                      (*s)->name, a.end_time, b.end_time, a.bytes, b.bytes, a.acc, b.acc);
        ck_assert(!memcmp(w1, w2, sizeof(float) * a.n_params));
        if ((*s)->takes & SIM_SAME_AS_SINGLE) {
            static scenario_t sc;
            dt_err_t err;
            scenario_defaults(&sc);
            for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
                ck_assert(scenario_set(&sc, base[i], &err) == DT_OK);
            ck_assert(scenario_set(&sc, kind, &err) == DT_OK);
            int workers = (int)sc.workers, servers = 0;
            if ((*s)->hosts)
                (*s)->hosts(&sc, &workers, &servers);
            int replicas = (*s)->replicas ? (*s)->replicas(&sc, workers) : workers;
            char batch[64];
            snprintf(batch, sizeof batch, "model.batch=%d", 8 * replicas);
            const char *single[] = {"strategy.kind=single", batch};
            float *ref = NULL;
            outcome_t r = simulate(single, 2, &ref);
            ck_assert_uint_eq(r.n_params, a.n_params);
            double d = max_rel_diff(w1, ref, a.n_params);
            ck_assert_msg(d < 2e-5, "%s: max relative difference %g from single", (*s)->name, d);
            ck_assert(r.samples == a.samples);
            free(ref);
            same_as_single++;
        }
        free(w1);
        free(w2);
    }
    ck_assert_int_ge(same_as_single, 5); /* single, sync-ps, allreduce, pipeline, tensor, zero */
}
END_TEST

/* The edge platform links each client to the server only: a strategy that exchanges
 * between workers (SIM_NEEDS_PEER_LINKS) is refused when the scenario is read, naming the
 * key; every other one runs there (SimGrid aborts the process on a host pair without a
 * route, which a wrong flag would show here). */
START_TEST(every_strategy_runs_on_the_edge_or_is_refused)
{
    int refused = 0, ran = 0;
    for (const sim_strategy_t *const *s = sim_strategies; *s; s++) {
        char kind[64];
        snprintf(kind, sizeof kind, "strategy.kind=%s", (*s)->name);
        const char *sets[] = {kind, "cluster.platform=edge", "strategy.rounds=2", "run.steps=4"};
        static scenario_t sc;
        dt_err_t err = {""};
        scenario_defaults(&sc);
        for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
            ck_assert(scenario_set(&sc, base[i], &err) == DT_OK);
        for (size_t i = 0; i < 4; i++)
            ck_assert(scenario_set(&sc, sets[i], &err) == DT_OK);
        dt_status st = scenario_validate(&sc, &err);
        if ((*s)->takes & SIM_NEEDS_PEER_LINKS) {
            char want[160];
            snprintf(want, sizeof want,
                     "--set cluster.platform: the edge platform connects "
                     "clients only to the server, so %s ",
                     (*s)->name);
            ck_assert_msg(st == DT_ERR_INPUT && strstr(err.msg, want), "%s: %s", (*s)->name,
                          err.msg);
            refused++;
        } else {
            ck_assert_msg(st == DT_OK, "%s: %s", (*s)->name, err.msg);
            outcome_t o = simulate(sets, 4, NULL);
            ck_assert_msg(o.samples > 0, "%s: no sample trained on the edge", (*s)->name);
            ran++;
        }
    }
    ck_assert_int_ge(refused, 5); /* allreduce, local-sgd, pipeline, tensor, zero */
    ck_assert_int_ge(ran, 4);     /* single, sync-ps, async-ps, fedavg */
}
END_TEST

/* ---- alpha-beta timing --------------------------------------------------------------- */

/* 1 Gbps links, 10 us each way: a = 2 x 10 us (host link up, host link down), compute
 * made negligible by a very fast device. */
#define BW 1.25e8
#define ALPHA 20e-6

static double timed(const char *kind, const char *algo, int p, int hidden, int servers,
                    size_t *n_bytes)
{
    char a[64], w[64], h[64], s[64];
    snprintf(a, sizeof a, "strategy.algorithm=%s", algo);
    snprintf(w, sizeof w, "cluster.workers=%d", p);
    snprintf(h, sizeof h, "model.hidden=%d", hidden);
    snprintf(s, sizeof s, "strategy.servers=%d", servers);
    const char *sets[] = {kind,
                          a,
                          w,
                          h,
                          s,
                          "run.steps=1",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=1Gbps",
                          "cluster.latency=10us",
                          "cluster.device_flops=1000000Pf"};
    outcome_t o = simulate(sets, 11, NULL);
    *n_bytes = o.n_params * sizeof(float);
    return o.end_time;
}

static void expect_close(const char *what, int p, size_t n, double got, double want)
{
    ck_assert_msg(fabs(got - want) <= 0.01 * want,
                  "%s p=%d n=%zu: simulated %.9g s, formula %.9g s", what, p, n, got, want);
}

START_TEST(ring_tree_hd_match_alpha_beta)
{
    static const int ps[] = {2, 4, 5, 8};
    static const int hidden[] = {16, 2048};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
            int p = ps[i];
            size_t n;
            double t = timed("strategy.kind=allreduce", "ring", p, hidden[j], 1, &n);
            expect_close("ring", p, n, t, 2.0 * (p - 1) * ALPHA + 2.0 * (p - 1) / p * n / BW);
            t = timed("strategy.kind=allreduce", "tree", p, hidden[j], 1, &n);
            double levels = ceil(log2(p));
            expect_close("tree", p, n, t, 2.0 * levels * (ALPHA + n / BW));
            t = timed("strategy.kind=allreduce", "halving-doubling", p, hidden[j], 1, &n);
            int pow2 = 1;
            while (pow2 * 2 <= p)
                pow2 *= 2;
            double hd = 2.0 * log2(pow2) * ALPHA + 2.0 * (pow2 - 1) / pow2 * n / BW;
            if (pow2 != p)
                hd += 2.0 * (ALPHA + n / BW);
            expect_close("halving-doubling", p, n, t, hd);
        }
}
END_TEST

/* The live view's messages in flight (Little's law: their seconds on the wire summed over a
 * span, over the span): a ring all-reduce of p workers with compute that takes no time keeps
 * one message on every worker's way in at all times, 2 (p - 1) steps of a chunk of n / p
 * bytes each, ALPHA + n / p / BW on the wire: p in flight on average. */
START_TEST(messages_in_flight_follow_littles_law)
{
    static const int ps[] = {2, 4, 5};
    for (int i = 0; i < 3; i++) {
        int p = ps[i];
        char a[64], w[64];
        snprintf(a, sizeof a, "strategy.algorithm=ring");
        snprintf(w, sizeof w, "cluster.workers=%d", p);
        const char *sets[] = {"strategy.kind=allreduce",
                              a,
                              w,
                              "model.hidden=2048",
                              "run.steps=1",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "cluster.device_flops=1000000Pf"};
        outcome_t o = simulate(sets, 10, NULL);
        ck_assert_msg(o.ok, "%s", o.err);
        double n = (double)o.n_params * sizeof(float);
        double each = ALPHA + n / p / BW, want = p * 2.0 * (p - 1) * each;
        ck_assert_int_eq(o.msgs_recv, (long)p * 2 * (p - 1));
        ck_assert_msg(fabs(o.msg_flight_s - want) <= 0.01 * want,
                      "p=%d: %.9g s on the wire, formula %.9g s", p, o.msg_flight_s, want);
        ck_assert_double_eq_tol(o.msg_flight_s / o.end_time, p, 0.02 * p);
    }
}
END_TEST

START_TEST(sync_ps_matches_alpha_beta)
{
    /* push then pull: every worker's flow shares the shard's link, so each phase moves
     * max(1, N/S) x n bytes through one link */
    static const int ps[] = {2, 4, 8};
    static const int servers[] = {1, 2};
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < 2; s++) {
            size_t n;
            int p = ps[i], S = servers[s];
            double t = timed("strategy.kind=sync-ps", "ring", p, 2048, S, &n);
            double share = (double)p / S > 1.0 ? (double)p / S : 1.0;
            expect_close(S == 1 ? "sync-ps S=1" : "sync-ps S=2", p, n, t,
                         2.0 * (ALPHA + share * n / BW));
        }
}
END_TEST

/* A parameter server's compute is its optimizer's, counted by hand per parameter (the
 * base's weight decay 1e-4 and momentum 0.9): sync-ps averages 2 gradients (2 n) and
 * updates, SGD with both 6 n, Adam with its L2 term 15 n, AdamW with its decay 14 n,
 * clipping 3 n more; async-ps updates on each of its 2 x 20 pushes. */
START_TEST(ps_server_charges_its_optimizer)
{
    static const struct {
        const char *opt, *clip;
        double sync_per, async_per;
    } cases[] = {
        {"model.optimizer=sgd", "model.clip_norm=0", 2 + 6, 6},
        {"model.optimizer=adam", "model.clip_norm=0", 2 + 15, 15},
        {"model.optimizer=adamw", "model.clip_norm=0", 2 + 14, 14},
        {"model.optimizer=adamw", "model.clip_norm=1", 2 + 3 + 14, 14},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int async = 0; async < 2; async++) {
            int sgd = !strcmp(cases[i].opt, "model.optimizer=sgd");
            const char *sets[] = {async ? "strategy.kind=async-ps" : "strategy.kind=sync-ps",
                                  "cluster.workers=2",
                                  cases[i].opt,
                                  cases[i].clip,
                                  "model.lr=0.001",
                                  sgd ? "model.momentum=0.9" : "model.momentum=0"};
            outcome_t o = simulate(sets, 6, NULL);
            ck_assert_msg(o.ok, "%s: %s", cases[i].opt, o.err);
            double updates = async ? 2 * 20 : 20;
            double per = async ? cases[i].async_per : cases[i].sync_per;
            double want = updates * per * (double)o.n_params / o.device_flops;
            ck_assert_msg(fabs(o.server_compute - want) <= 1e-9 * want,
                          "%s %s %s: server computed %.12g s, by hand %.12g s", sets[0],
                          cases[i].opt, cases[i].clip, o.server_compute, want);
        }
}
END_TEST

/* ---- async-ps staleness ------------------------------------------------------------ */

START_TEST(async_staleness_grows_with_workers)
{
    const char *two[] = {"strategy.kind=async-ps", "cluster.workers=2"};
    const char *eight[] = {"strategy.kind=async-ps", "cluster.workers=8"};
    outcome_t a = simulate(two, 2, NULL);
    outcome_t b = simulate(eight, 2, NULL);
    ck_assert_int_eq(a.stale_count, 2 * 20);
    ck_assert_int_eq(b.stale_count, 8 * 20);
    ck_assert_msg(a.mean_staleness > 0.0, "staleness with 2 workers: %g", a.mean_staleness);
    ck_assert_msg(b.mean_staleness > 2.0 * a.mean_staleness, "staleness 2 workers %g, 8 workers %g",
                  a.mean_staleness, b.mean_staleness);
}
END_TEST

START_TEST(staleness_bound_holds_back_fast_workers)
{
    /* On the edge platform fibre clients push far more often than 4G ones; a bound of 1
     * (stale-synchronous) must cut the largest and the mean staleness. */
    const char *free_run[] = {"strategy.kind=async-ps", "cluster.platform=edge",
                              "cluster.workers=10", "model.momentum=0", "strategy.max_lead=0"};
    outcome_t a = simulate(free_run, 5, NULL);
    free_run[4] = "strategy.max_lead=1";
    outcome_t b = simulate(free_run, 5, NULL);
    ck_assert_int_eq(a.stale_count, b.stale_count);
    ck_assert_msg(b.max_staleness < a.max_staleness && b.mean_staleness < a.mean_staleness,
                  "unbounded: max %ld mean %g; bound 1: max %ld mean %g", a.max_staleness,
                  a.mean_staleness, b.max_staleness, b.mean_staleness);
}
END_TEST

/* Divergence by loss, for every strategy: run.divergence_factor = 0.1 puts the bound at
 * 0.1 ln 4 = 0.1386 nats, below any test loss the small mlp reaches in 20 steps (or a
 * round at a slow lr), so the first evaluation (step 5, local-sgd's 6 at the end of its period;
 * round 1) ends the run `diverged` with a fault row that gives the loss and the bound, and nothing
 * runs past the next step; at the default (3 ln 4 = 4.159 nats) the same runs finish. */
START_TEST(divergence_by_loss_stops_every_strategy)
{
    static const char *const kinds[][3] = {
        {"strategy.kind=single", "cluster.workers=1", NULL},
        {"strategy.kind=sync-ps", "cluster.workers=2", NULL},
        {"strategy.kind=async-ps", "cluster.workers=2", NULL},
        {"strategy.kind=allreduce", "cluster.workers=2", NULL},
        {"strategy.kind=local-sgd", "cluster.workers=2", "strategy.local_steps=2"},
        {"strategy.kind=fedavg", "strategy.clients=4", "strategy.rounds=10"},
        {"strategy.kind=fedbuff", "strategy.clients=4", "strategy.concurrency=2"},
        {"strategy.kind=hierfl", "strategy.clients=8", "strategy.rounds=10"},
        {"strategy.kind=pipeline", "strategy.stages=2", NULL},
        {"strategy.kind=tensor", "cluster.workers=2", NULL},
        {"strategy.kind=zero", "cluster.workers=2", NULL},
    };
    size_t n = sizeof kinds / sizeof *kinds, tested = 0;
    for (const sim_strategy_t *const *st = scenario_strategies(); *st; st++)
        tested++;
    ck_assert_uint_eq(tested, n); /* a new strategy joins this list */
    for (size_t i = 0; i < n; i++) {
        int fed = !strncmp(kinds[i][1], "strategy.clients", 16);
        /* federated: a local epoch of 1,024 samples a round learns the task at lr 0.05 (loss
         * 2e-4), so a slower lr and the first round's evaluation */
        const char *sets[7] = {kinds[i][0],
                               kinds[i][1],
                               fed ? "run.eval_every=1" : "run.eval_every=5",
                               "run.divergence_factor=0.1",
                               "strategy.fraction=0.5",
                               "model.lr=0.0005",
                               kinds[i][2]};
        int n_sets = (fed ? 6 : 4) + (kinds[i][2] != NULL);
        if (!fed)
            sets[4] = kinds[i][2];
        outcome_t o = simulate(sets, n_sets, NULL);
        ck_assert_msg(o.diverged, "%s: not diverged (loss %g)", kinds[i][0], o.loss);
        ck_assert_msg(o.fault_rows == 1 && !strcmp(o.fault_kinds, "diverged"),
                      "%s: fault rows %ld (%s)", kinds[i][0], o.fault_rows, o.fault_kinds);
        const char *at = strstr(o.diverged_why, " at step ");
        long step = -1;
        ck_assert_msg(!strncmp(o.diverged_why, "test loss ", 10) && at &&
                          sscanf(at, " at step %ld", &step) == 1 &&
                          step == (fed ? 1 : 5) + !strcmp(kinds[i][0], "strategy.kind=local-sgd") &&
                          strstr(o.diverged_why, ", above 0.1386 (run.divergence_factor 0.1 x "
                                                 "ln 4 classes)"),
                      "%s: %s", kinds[i][0], o.diverged_why);
        ck_assert_msg(o.evals <= 2, "%s: %ld evaluations after diverging", kinds[i][0], o.evals);
        sets[3] = "run.divergence_factor=3";
        o = simulate(sets, n_sets, NULL);
        ck_assert_msg(!o.diverged && o.fault_rows == 0, "%s at the default: %s", kinds[i][0],
                      o.diverged_why);
    }
}
END_TEST

START_TEST(fedprox_term_changes_training)
{
    /* mu = 0 is plain FedAvg; a strong proximal term keeps local models near the global
     * one, so after the same rounds the model has moved less and is less accurate */
    const char *sets[] = {"strategy.kind=fedavg",  "cluster.workers=4", "strategy.clients=8",
                          "strategy.fraction=0.5", "strategy.rounds=3", "model.momentum=0",
                          "strategy.prox_mu=0"};
    outcome_t a = simulate(sets, 7, NULL);
    sets[6] = "strategy.prox_mu=15";
    outcome_t b = simulate(sets, 7, NULL);
    ck_assert_msg(b.acc < a.acc - 0.02, "fedavg %.4f, fedprox mu=15 %.4f", a.acc, b.acc);
    ck_assert(a.end_time == b.end_time); /* same messages, same FLOP charges */
}
END_TEST

/* Server optimizers end to end. One round from the same start: with server_lr 1e-30 the
 * global model stays w0, plain FedAvg gives w1 = w0 + delta; avg at server_lr 0.5 must give
 * w0 + delta / 2, FedAdam one step w0 + lr (1 - beta1) delta / (sqrt((1 - beta2) delta^2 +
 * beta2 tau^2) + tau), and FedAvgM with momentum 0 FedAvg itself, over more rounds. The
 * messages (bytes) are the same; the server holds the optimizer's state. */
START_TEST(server_optimizers_step_the_global_model)
{
    const char *sets[] = {
        "strategy.kind=fedavg",          "cluster.workers=2",   "strategy.clients=8",
        "strategy.fraction=0.5",         "strategy.rounds=1",   "model.momentum=0",
        "strategy.server_optimizer=avg", "strategy.server_lr=1"};
    float *w1 = NULL, *w0 = NULL, *wh = NULL, *wa = NULL;
    outcome_t a = simulate(sets, 8, &w1);
    sets[7] = "strategy.server_lr=1e-30";
    simulate(sets, 8, &w0);
    sets[7] = "strategy.server_lr=0.5";
    outcome_t h = simulate(sets, 8, &wh);
    const char *adam[] = {sets[0],
                          sets[1],
                          sets[2],
                          sets[3],
                          sets[4],
                          sets[5],
                          "strategy.server_optimizer=adam",
                          "strategy.server_lr=0.05",
                          "strategy.server_momentum=0.9",
                          "strategy.server_beta2=0.99",
                          "strategy.server_tau=0.001"};
    outcome_t d = simulate(adam, 11, &wa);
    ck_assert(a.bytes == h.bytes && a.bytes == d.bytes);
    double moved = 0, err_h = 0, err_a = 0;
    for (size_t i = 0; i < a.n_params; i++) {
        double delta = (double)w1[i] - w0[i];
        moved = fmax(moved, fabs(delta));
        err_h = fmax(err_h, fabs(wh[i] - (w0[i] + 0.5 * delta)));
        double want =
            w0[i] + 0.05 * 0.1 * delta / (sqrt(0.01 * delta * delta + 0.99 * 1e-6) + 1e-3);
        err_a = fmax(err_a, fabs(wa[i] - want));
    }
    ck_assert_msg(moved > 1e-3, "one round moved the model by at most %g", moved);
    ck_assert_msg(err_h < 1e-6, "avg at server_lr 0.5 is off by %g", err_h);
    ck_assert_msg(err_a < 1e-6, "FedAdam's step is off by %g", err_a);
    ck_assert(a.mem_server[2] == 0);
    ck_assert(d.mem_server[2] == 2.0 * sizeof(float) * (double)a.n_params);
    free(w0);
    free(wh);
    free(wa);
    free(w1);

    /* FedAvgM with momentum 0 and server_lr 1 is FedAvg, up to float rounding */
    const char *many[] = {sets[0],
                          sets[1],
                          sets[2],
                          sets[3],
                          "strategy.rounds=4",
                          sets[5],
                          "strategy.server_optimizer=avg"};
    float *p = NULL, *q = NULL;
    simulate(many, 7, &p);
    many[6] = "strategy.server_optimizer=avgm";
    const char *m0[] = {many[0], many[1], many[2], many[3],
                        many[4], many[5], many[6], "strategy.server_momentum=0"};
    outcome_t o = simulate(m0, 8, &q);
    ck_assert_msg(max_rel_diff(q, p, o.n_params) < 1e-5, "avgm(0) differs from avg by %g",
                  max_rel_diff(q, p, o.n_params));
    free(p);
    free(q);
}
END_TEST

/* FedBuff with one client in flight and a buffer of one is FedAvg with one client a round:
 * the same client draws, the same local training, and global + (w - global) = w up to float
 * rounding. With more clients in flight, every applied update's staleness is recorded and
 * some are stale; weighting them by 1 / sqrt(1 + s) changes the model. */
START_TEST(scaffold_is_fedavg_where_the_corrections_cancel)
{
    /* SCAFFOLD (strategy.scaffold) against FedAvg, a second implementation wherever the
     * control variates cancel: (1) one client: c = c_1 always, every correction is 0, the
     * weights are FedAvg's exactly; (2) one local step a round, every client every round,
     * equal sample counts: the average of x - lr (g_i + c - c_i) is x - lr mean g_i since c
     * is the mean of the c_i (up to float rounding). With 8 local steps the corrections do not
     * cancel and SCAFFOLD must move away from FedAvg. Bytes: twice FedAvg's, both ways. */
    const char *one[] = {"strategy.kind=fedavg", "cluster.workers=2", "strategy.clients=1",
                         "strategy.fraction=1",  "strategy.rounds=4", "model.momentum=0",
                         "strategy.scaffold=no"};
    float *wa = NULL, *ws = NULL;
    outcome_t a = simulate(one, 7, &wa);
    one[6] = "strategy.scaffold=yes";
    outcome_t s = simulate(one, 7, &ws);
    ck_assert_msg(memcmp(wa, ws, sizeof(float) * a.n_params) == 0,
                  "scaffold with one client differs from fedavg by %g",
                  max_rel_diff(ws, wa, a.n_params));
    ck_assert_msg(s.bytes == 2.0 * a.bytes, "bytes %g, fedavg's %g", s.bytes, a.bytes);
    ck_assert(s.end_time > a.end_time);
    free(wa);
    free(ws);

    const char *all[] = {"strategy.kind=fedavg", "cluster.workers=4", "strategy.clients=8",
                         "strategy.fraction=1",  "strategy.rounds=5", "model.momentum=0",
                         "data.partition=iid",   "model.batch=512",   "strategy.scaffold=no"};
    float *fa = NULL, *fs = NULL, *ka = NULL, *ks = NULL;
    simulate(all, 9, &fa);
    all[8] = "strategy.scaffold=yes";
    simulate(all, 9, &fs);
    double d1 = max_rel_diff(fs, fa, a.n_params);
    ck_assert_msg(d1 < 1e-4, "one local step: scaffold differs from fedavg by %g", d1);
    all[7] = "model.batch=64";
    simulate(all, 9, &ks);
    all[8] = "strategy.scaffold=no";
    simulate(all, 9, &ka);
    double d8 = max_rel_diff(ks, ka, a.n_params);
    ck_assert_msg(d8 > 1e-3, "eight local steps: scaffold is fedavg (difference %g)", d8);
    free(fa);
    free(fs);
    free(ka);
    free(ks);
}
END_TEST

START_TEST(robust_rules_and_attacks_against_the_mean)
{
    /* The robust aggregators where they must equal the mean (a second implementation: the
     * backend's weighted average): the median and a trimmed mean that cuts nothing of two
     * equal-sized updates, multi-Krum keeping every update (f = 0, m = k). */
    const char *sets[] = {"strategy.kind=fedavg",    "cluster.workers=2", "strategy.clients=8",
                          "strategy.fraction=0.25",  "strategy.rounds=3", "data.partition=iid",
                          "strategy.aggregator=mean"};
    float *mean = NULL, *w = NULL;
    outcome_t a = simulate(sets, 7, &mean);
    const char *same[] = {"strategy.aggregator=median", "strategy.aggregator=trimmed_mean"};
    for (int i = 0; i < 2; i++) {
        sets[6] = same[i];
        simulate(sets, 7, &w);
        ck_assert_msg(max_rel_diff(w, mean, a.n_params) < 1e-5,
                      "%s of two differs from the "
                      "mean by %g",
                      same[i], max_rel_diff(w, mean, a.n_params));
        free(w);
    }
    sets[3] = "strategy.fraction=0.5";
    sets[6] = "strategy.aggregator=mean";
    float *mean4 = NULL;
    simulate(sets, 7, &mean4);
    sets[6] = "strategy.aggregator=multi_krum";
    simulate(sets, 7, &w);
    ck_assert_msg(max_rel_diff(w, mean4, a.n_params) < 1e-5,
                  "multi_krum keeping all differs "
                  "from the mean by %g",
                  max_rel_diff(w, mean4, a.n_params));
    free(w);
    sets[6] = "strategy.aggregator=krum"; /* one client's model: not the mean */
    simulate(sets, 7, &w);
    ck_assert(max_rel_diff(w, mean4, a.n_params) > 1e-3);
    free(w);
    free(mean);
    free(mean4);

    /* Attacks: two equal clients, one Byzantine, one round. With y_b the Byzantine client's
     * trained model and x the global one, sign_flip at scale s sends x - s (y_b - x), so
     * w(s) = w(0) - s (w_clean - w(0)) whichever client it is; noise at scale 0 sends x,
     * as sign_flip at scale 0 does. */
    const char *two[] = {
        "strategy.kind=fedavg", "cluster.workers=2",       "strategy.clients=2",
        "strategy.fraction=1",  "strategy.rounds=1",       "data.partition=iid",
        "faults.byzantine=0",   "faults.attack=sign_flip", "faults.attack_scale=0"};
    float *clean = NULL, *w0 = NULL, *w4 = NULL, *n0 = NULL, *lf = NULL;
    simulate(two, 9, &clean);
    two[6] = "faults.byzantine=0.5";
    simulate(two, 9, &w0);
    two[8] = "faults.attack_scale=4";
    simulate(two, 9, &w4);
    two[7] = "faults.attack=noise";
    two[8] = "faults.attack_scale=0";
    simulate(two, 9, &n0);
    two[7] = "faults.attack=label_flip";
    simulate(two, 9, &lf);
    double err = 0, moved = 0;
    for (size_t i = 0; i < a.n_params; i++) {
        double want = w0[i] - 4.0 * ((double)clean[i] - w0[i]);
        err = fmax(err, fabs(w4[i] - want));
        moved = fmax(moved, fabs((double)clean[i] - w0[i]));
    }
    ck_assert_msg(moved > 1e-3, "the Byzantine client's update is %g", moved);
    ck_assert_msg(err < 1e-5, "sign_flip at scale 4 is off the formula by %g", err);
    ck_assert(memcmp(n0, w0, sizeof(float) * a.n_params) == 0);
    ck_assert(max_rel_diff(lf, clean, a.n_params) > 1e-3);
    free(clean);
    free(w0);
    free(w4);
    free(n0);
    free(lf);
}
END_TEST

START_TEST(dp_fedavg_clips_and_adds_noise)
{
    /* DP-FedAvg against FedAvg: with every client every round (q = 1: Poisson sampling
     * takes all), a clip no update reaches and no noise is FedAvg with equal client sizes
     * (the fixed denominator m = the weighted mean's); a clip below the update norm of one
     * client alone moves the global model by exactly the clip (up to float rounding); noise
     * moves it more. */
    const char *sets[] = {"strategy.kind=fedavg", "cluster.workers=2",  "strategy.clients=8",
                          "strategy.fraction=1",  "strategy.rounds=3",  "data.partition=iid",
                          "strategy.dp_clip=0",   "strategy.dp_noise=0"};
    float *plain = NULL, *w = NULL;
    outcome_t a = simulate(sets, 8, &plain);
    sets[6] = "strategy.dp_clip=1e6";
    simulate(sets, 8, &w);
    ck_assert_msg(max_rel_diff(w, plain, a.n_params) < 1e-5,
                  "a clip of 1e6 without noise "
                  "differs from fedavg by %g",
                  max_rel_diff(w, plain, a.n_params));
    free(w);
    free(plain);

    const char *one[] = {"strategy.kind=fedavg",     "cluster.workers=2",  "strategy.clients=1",
                         "strategy.fraction=1",      "strategy.rounds=1",  "data.partition=iid",
                         "strategy.server_lr=1e-30", "strategy.dp_clip=0", "strategy.dp_noise=0"};
    float *w0 = NULL, *wc = NULL, *wn = NULL;
    simulate(one, 9, &w0); /* the initial model: the server does not move */
    one[6] = "strategy.server_lr=1";
    one[7] = "strategy.dp_clip=0.05";
    simulate(one, 9, &wc);
    one[8] = "strategy.dp_noise=1";
    simulate(one, 9, &wn);
    double moved = 0, noisy = 0;
    for (size_t i = 0; i < a.n_params; i++) {
        moved += ((double)wc[i] - w0[i]) * ((double)wc[i] - w0[i]);
        noisy += ((double)wn[i] - w0[i]) * ((double)wn[i] - w0[i]);
    }
    ck_assert_msg(fabs(sqrt(moved) - 0.05) < 1e-5,
                  "the clipped update's norm is %.9g, "
                  "expected the clip 0.05",
                  sqrt(moved));
    /* noise of deviation z S / m = 0.05 per parameter: the norm grows to about
     * 0.05 sqrt(n_params + 1) */
    double want = 0.05 * sqrt((double)a.n_params + 1.0);
    ck_assert_msg(sqrt(noisy) > 0.8 * want && sqrt(noisy) < 1.2 * want,
                  "noisy norm %g, "
                  "expected about %g",
                  sqrt(noisy), want);
    free(w0);
    free(wc);
    free(wn);
}
END_TEST

/* Writes text to a new temporary file; its path into path (the caller unlinks it). */
static void temp_text(char *path, size_t n, const char *text)
{
    snprintf(path, n, "/tmp/dtsim-test-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert(write_all(fd, text, strlen(text)) == 0);
    close(fd);
}

START_TEST(client_devices_set_speeds_links_and_availability)
{
    /* One client alone on the edge platform under pure alpha-beta (CM02, no cross-traffic),
     * a datacenter link far faster than the access links: a device trace that quarters its
     * speed, doubles its downlink and adds 20 ms of latency each way changes a round by
     * exactly 3 x its compute time, B / 4 MB/s - B / 2 MB/s and 3 x 20 ms: the task down,
     * the update up, the server's stop down at the end (B: the model's bytes, half of those
     * the round moved). */
    char fast[64], slow[64], speed[2][96], avail[2][96];
    double flops = 90e9; /* cluster.device = cpu */
    char text[256];
    snprintf(text, sizeof text, "client,speed,up,down,latency\n0,%.17gGf,1MBps,2MBps,10ms\n",
             flops / 1e9);
    temp_text(fast, sizeof fast, text);
    snprintf(text, sizeof text, "client,speed,up,down,latency\n0,%.17gGf,1MBps,4MBps,30ms\n",
             flops / 4e9);
    temp_text(slow, sizeof slow, text);
    snprintf(speed[0], sizeof speed[0], "faults.device_trace=%s", fast);
    snprintf(speed[1], sizeof speed[1], "faults.device_trace=%s", slow);
    const char *sets[] = {"strategy.kind=fedavg",
                          "cluster.platform=edge",
                          "cluster.workers=1",
                          "strategy.clients=1",
                          "strategy.fraction=1",
                          "strategy.rounds=1",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.uplink_bandwidth=100GBps",
                          "cluster.device=cpu",
                          speed[0]};
    outcome_t a = simulate(sets, 11, NULL);
    sets[10] = speed[1];
    outcome_t b = simulate(sets, 11, NULL);
    ck_assert(a.device_flops == flops);
    ck_assert_msg(fabs(b.compute_s - 4 * a.compute_s) < 1e-9 * b.compute_s,
                  "compute %.9g s at a quarter of the speed, %.9g s at full", b.compute_s,
                  a.compute_s);
    double B = a.bytes / 2;
    double want = 3 * a.compute_s + B / 4e6 - B / 2e6 + 3 * 0.02;
    ck_assert_msg(fabs((b.end_time - a.end_time) - want) < 1e-6,
                  "the slow device's round is %.9g s longer, expected %.9g s",
                  b.end_time - a.end_time, want);

    /* an availability trace: the client online from 100 s rather than from 0 starts the
     * round 100 s later, with an `unavailable` row */
    char av[2][64];
    temp_text(av[0], sizeof av[0], "client,start,end,period\n0,0s,1000s,2000s\n");
    temp_text(av[1], sizeof av[1], "client,start,end,period\n0,100s,1100s,2000s\n");
    for (int i = 0; i < 2; i++)
        snprintf(avail[i], sizeof avail[i], "faults.availability=trace:%s", av[i]);
    const char *on[] = {"strategy.kind=fedavg", "cluster.workers=1", "strategy.clients=1",
                        "strategy.fraction=1",  "strategy.rounds=1", avail[0]};
    outcome_t c = simulate(on, 6, NULL);
    on[5] = avail[1];
    outcome_t d = simulate(on, 6, NULL);
    ck_assert_msg(fabs(d.end_time - c.end_time - 100) < 1e-9, "%.9g s later",
                  d.end_time - c.end_time);
    ck_assert_msg(strstr(d.fault_kinds, "unavailable") && !strstr(c.fault_kinds, "unavailable"),
                  "%s / %s", c.fault_kinds, d.fault_kinds);
    unlink(fast);
    unlink(slow);
    unlink(av[0]);
    unlink(av[1]);
}
END_TEST

START_TEST(updates_at_the_server_are_the_clients_own)
{
    /* fedavg's plain mean computes each update on the server as it averages (flops time
     * model); with time_model = measured each client trains on its host, and side by side the
     * server trains them all at the start of the round. The same clients, order and
     * operations: the weights are equal to the bit, with base's momentum and weight decay, a
     * prox term, accumulated micro-batches, and clients without data (200 clients, 128
     * samples); side by side the hosts replay the charges the at-server hosts make before
     * anything is computed: the same simulated time, samples and compute. */
    const char *sets[] = {"strategy.kind=fedavg",
                          "strategy.clients=200",
                          "strategy.fraction=0.1",
                          "strategy.rounds=3",
                          "cluster.workers=3",
                          "data.train_samples=128",
                          "data.partition=dirichlet:0.3",
                          "strategy.prox_mu=0.1",
                          "model.batch=2",
                          "strategy.accumulate=2",
                          "run.time_model=flops"};
    float *at = NULL, *host = NULL;
    outcome_t a = simulate(sets, 11, &at);
    sets[10] = "run.time_model=measured";
    simulate(sets, 11, &host);
    ck_assert_msg(memcmp(at, host, sizeof(float) * a.n_params) == 0,
                  "at the server and on the hosts differ by %g",
                  max_rel_diff(at, host, a.n_params));
    free(at);
    free(host);
    sets[9] = "strategy.accumulate=1";
    sets[10] = "model.side_by_side=no";
    a = simulate(sets, 11, &at);
    sets[10] = "model.side_by_side=yes";
    outcome_t s = simulate(sets, 11, &host);
    ck_assert_msg(memcmp(at, host, sizeof(float) * a.n_params) == 0,
                  "at the server and side by side differ by %g",
                  max_rel_diff(at, host, a.n_params));
    ck_assert_msg(a.end_time == s.end_time && a.samples == s.samples &&
                      a.compute_s == s.compute_s && a.samples > 0,
                  "charged differently: %.17g s, %g samples, %.17g s compute against %.17g, "
                  "%g, %.17g",
                  a.end_time, a.samples, a.compute_s, s.end_time, s.samples, s.compute_s);
    free(at);
    free(host);
}
END_TEST

START_TEST(many_clients_a_host_keep_their_updates)
{
    /* 40 clients a round on 1 host or on 40 (fedavg), 2 hosts or 20 (hierfl, 2 regions: a
     * client's region is the same either way): where a client trains does not change its
     * update, so the weights are equal. A host used to reuse its message headers after 18
     * sends, overwriting updates the server had not read yet. */
    const char *avg[] = {"strategy.kind=fedavg", "strategy.clients=40", "strategy.fraction=1",
                         "strategy.rounds=2", "cluster.workers=1"};
    float *w1 = NULL, *w2 = NULL;
    outcome_t a = simulate(avg, 5, &w1);
    avg[4] = "cluster.workers=40";
    simulate(avg, 5, &w2);
    ck_assert_msg(memcmp(w1, w2, sizeof(float) * a.n_params) == 0,
                  "fedavg: 1 host and 40 differ by %g", max_rel_diff(w1, w2, a.n_params));
    free(w1);
    free(w2);
    const char *hier[] = {"strategy.kind=hierfl", "strategy.clients=40", "strategy.fraction=1",
                          "strategy.rounds=2",    "strategy.regions=2",  "cluster.platform=edge",
                          "cluster.workers=2"};
    outcome_t h = simulate(hier, 7, &w1);
    hier[6] = "cluster.workers=20";
    simulate(hier, 7, &w2);
    ck_assert_msg(memcmp(w1, w2, sizeof(float) * h.n_params) == 0,
                  "hierfl: 2 hosts and 20 differ by %g", max_rel_diff(w1, w2, h.n_params));
    free(w1);
    free(w2);
}
END_TEST

START_TEST(a_closed_round_does_not_wait_behind_its_late_uploads)
{
    /* Two clients a round, each on its own host of the edge platform, a 1 s deadline that
     * client 1 misses every round. (a) client 1's uplink needs 2.4 s for the model: when a
     * round closes its upload is still under way, and the next round must not wait behind
     * it (it used to: the server waited on the oldest receive of its inbox, matched to
     * that upload, until the deadline cut it, and lost client 0's update that had come in
     * meanwhile). (b) client 1's device needs about 3.6 s to train, its link is fast: no
     * upload of it is ever under way when a round closes. Both rounds aggregate client 0's
     * update alone, every round: the same weights. */
    char trace[2][64], set[2][96];
    temp_text(trace[0], sizeof trace[0],
              "client,speed,up,down,latency\n0,90Gf,1GBps,1GBps,1ms\n1,90Gf,1kBps,1GBps,1ms\n");
    temp_text(trace[1], sizeof trace[1],
              "client,speed,up,down,latency\n0,90Gf,1GBps,1GBps,1ms\n1,2Mf,1GBps,1GBps,1ms\n");
    float *w[2] = {NULL, NULL};
    outcome_t o[2];
    for (int i = 0; i < 2; i++) {
        snprintf(set[i], sizeof set[i], "faults.device_trace=%s", trace[i]);
        const char *sets[] = {"strategy.kind=fedavg", "cluster.platform=edge", "cluster.workers=2",
                              "strategy.clients=2",   "strategy.fraction=1",   "strategy.rounds=4",
                              "faults.deadline=1s",   "cluster.device=cpu",    set[i]};
        o[i] = simulate(sets, 9, &w[i]);
        unlink(trace[i]);
    }
    ck_assert_msg(memcmp(w[0], w[1], sizeof(float) * o[0].n_params) == 0,
                  "a slow upload changed which updates the rounds aggregated (max relative "
                  "difference %g; faults %s / %s)",
                  max_rel_diff(w[0], w[1], o[0].n_params), o[0].fault_kinds, o[1].fault_kinds);
    free(w[0]);
    free(w[1]);
}
END_TEST

START_TEST(fedbuff_is_fedavg_with_one_client_and_records_staleness)
{
    const char *avg[] = {"strategy.kind=fedavg", "cluster.workers=2", "strategy.clients=8",
                         "strategy.fraction=0.125", "strategy.rounds=6"};
    const char *buf[] = {"strategy.kind=fedbuff",  "cluster.workers=2", "strategy.clients=8",
                         "strategy.concurrency=1", "strategy.buffer=1", "strategy.rounds=6"};
    float *wa = NULL, *wb = NULL;
    outcome_t a = simulate(avg, 5, &wa);
    outcome_t b = simulate(buf, 6, &wb);
    ck_assert_msg(max_rel_diff(wb, wa, a.n_params) < 1e-5,
                  "fedbuff(1, 1) differs from fedavg "
                  "with one client a round by %g",
                  max_rel_diff(wb, wa, a.n_params));
    ck_assert(a.bytes == b.bytes && a.samples == b.samples);
    ck_assert_int_eq(b.stale_count, 6);
    ck_assert_int_eq(b.max_staleness, 0);
    free(wa);
    free(wb);

    const char *many[] = {
        "strategy.kind=fedbuff",         "cluster.workers=4", "strategy.clients=16",
        "strategy.concurrency=8",        "strategy.buffer=2", "strategy.rounds=5",
        "strategy.staleness_weight=sqrt"};
    float *ws = NULL, *wn = NULL;
    outcome_t s = simulate(many, 7, &ws);
    ck_assert_int_eq(s.stale_count, 5 * 2); /* every applied update, none of the drained */
    ck_assert_msg(s.max_staleness >= 1 && s.mean_staleness > 0, "max %ld mean %g", s.max_staleness,
                  s.mean_staleness);
    many[6] = "strategy.staleness_weight=none";
    outcome_t n = simulate(many, 7, &wn);
    ck_assert(n.bytes == s.bytes && n.stale_count == s.stale_count);
    ck_assert(max_rel_diff(ws, wn, s.n_params) > 1e-4);
    free(ws);
    free(wn);
}
END_TEST

/* A slow server between fast links takes a burst of updates one after the other while their
 * hosts go on to tasks queued behind them (8 clients a host, 16 in flight): it must read the
 * updates they sent, which the hosts keep until it has taken them. Against the same run on
 * a device 100 x faster: every compute time divided by 100, the network negligible beside
 * either, the same events in the same order, so the same weights bit for bit. With one
 * buffer a host, the server read updates their host had already overwritten with its next
 * training: 8 of the 47 on the fast device, 24 on the slow one (accuracy 1 against 0.85),
 * and 1 in one of the runs of 8 in flight on 4 hosts above, on the default device. */
START_TEST(fedbuff_server_reads_what_hosts_sent)
{
    const char *sets[] = {
        "strategy.kind=fedbuff",      "cluster.workers=4",     "strategy.clients=32",
        "strategy.concurrency=16",    "strategy.buffer=4",     "strategy.rounds=8",
        "cluster.bandwidth=1000Gbps", "cluster.latency=0.1us", "cluster.device_flops=1Gflops"};
    float *fast = NULL, *slow = NULL;
    outcome_t a = simulate(sets, 9, &fast);
    sets[8] = "cluster.device_flops=10Mflops";
    outcome_t b = simulate(sets, 9, &slow);
    ck_assert_msg(b.end_time > 90 * a.end_time, "%g s against %g s", b.end_time, a.end_time);
    ck_assert_msg(a.max_staleness >= 1, "no update waited behind another");
    ck_assert_msg(memcmp(fast, slow, sizeof(float) * a.n_params) == 0 && a.acc == b.acc,
                  "a 100 x slower device changed the model by %g (accuracy %g against %g)",
                  max_rel_diff(slow, fast, a.n_params), b.acc, a.acc);
    free(fast);
    free(slow);
}
END_TEST

/* The server takes updates in the order they arrive: on the edge platform the fibre host's
 * updates (a 500 Mbit/s uplink) come back many times while the cable host's (2 Mbit/s) is
 * on its way, and each is applied at once, so the cable host's update is many versions
 * stale. A server that took them in the order the uploads began would wait behind the
 * cable host's transfer and alternate the two (found on the testbed: the simulated
 * FedBuff server drew other clients than the real one). */
START_TEST(fedbuff_server_takes_updates_as_they_arrive)
{
    /* 176 kB updates, compute at 1 Tflop/s: the links set the pace (cable: 2 Mbit/s up) */
    const char *sets[] = {"strategy.kind=fedbuff",  "cluster.platform=edge",
                          "cluster.workers=2",      "strategy.clients=2",
                          "strategy.concurrency=2", "strategy.buffer=1",
                          "strategy.rounds=30",     "run.steps=30",
                          "model.hidden=1024",      "cluster.device_flops=1Tflops"};
    outcome_t o = simulate(sets, 10, NULL);
    ck_assert_msg(o.ok, "%s", o.err);
    /* taken as they began: 3.4 times the bytes, staleness at most 5 */
    ck_assert_msg(o.w_sent[0] >= 5 * o.w_sent[1],
                  "fibre host sent %g bytes, cable host %g: not many updates each while the "
                  "cable one travels",
                  o.w_sent[0], o.w_sent[1]);
    ck_assert_msg(o.max_staleness >= 10, "largest staleness %ld", o.max_staleness);
}
END_TEST

/* ---- hierfl: hierarchical federated learning ------------------------------------------ */

/* One region with one edge round a cloud round is FedAvg: region 0 samples from fedavg's
 * stream, its clients train in fedavg's rounds and its aggregator takes fedavg's weighted
 * mean, which the cloud takes with weight 1: the same weights bit for bit, the same
 * samples, and the bytes of FedAvg plus the one aggregator's model to and from the cloud
 * each round. */
START_TEST(hierfl_one_region_one_edge_round_is_fedavg)
{
    const char *avg[] = {"strategy.kind=fedavg", "cluster.workers=4",
                         "strategy.clients=12",  "strategy.fraction=0.25",
                         "strategy.rounds=4",    "data.partition=dirichlet:0.5",
                         "strategy.prox_mu=0.01"};
    const char *hier[] = {
        "strategy.kind=hierfl",   "cluster.workers=4",  "strategy.clients=12",
        "strategy.fraction=0.25", "strategy.rounds=4",  "data.partition=dirichlet:0.5",
        "strategy.prox_mu=0.01",  "strategy.regions=1", "strategy.edge_rounds=1"};
    float *wa = NULL, *wh = NULL;
    outcome_t a = simulate(avg, 7, &wa);
    outcome_t h = simulate(hier, 9, &wh);
    ck_assert_msg(memcmp(wa, wh, sizeof(float) * a.n_params) == 0,
                  "hierfl(1 region, 1 edge round) differs from fedavg by %g",
                  max_rel_diff(wh, wa, a.n_params));
    ck_assert_msg(a.acc == h.acc && a.loss == h.loss && a.samples == h.samples &&
                      a.evals == h.evals,
                  "accuracy %.17g / %.17g, samples %g / %g", a.acc, h.acc, a.samples, h.samples);
    double model = sizeof(float) * (double)a.n_params;
    ck_assert_msg(h.bytes == a.bytes + 4 * 2 * model, "bytes %.17g, fedavg's %.17g + %.17g",
                  h.bytes, a.bytes, 4 * 2 * model);
    ck_assert(h.end_time > a.end_time); /* the extra hop to the cloud */
    free(wa);
    free(wh);
}
END_TEST

/* Two regions on the edge platform (each client host routed to its region's aggregator only:
 * SimGrid aborts on a missing route): 12 clients on 4 hosts, host h in region h mod 2, so 6
 * clients a region and fraction 0.5 samples 3 of them per edge round. K cloud rounds of E edge
 * rounds move K x model x (2 R + E x 2 x (3 + 3)) bytes; with E = 1 and E = 2 the two terms
 * come apart: the WAN's, 2 x b(1) - b(2), is exactly R models each way per cloud round. The
 * model differs from FedAvg's with the same 6 clients a round. */
START_TEST(hierfl_regions_move_two_models_each_over_the_wan)
{
    const char *sets[] = {"strategy.kind=hierfl",  "cluster.workers=4",     "strategy.clients=12",
                          "strategy.fraction=0.5", "strategy.rounds=3",     "strategy.regions=2",
                          "cluster.platform=edge", "strategy.edge_rounds=1"};
    float *w1 = NULL, *w2 = NULL, *wa = NULL;
    outcome_t b1 = simulate(sets, 8, &w1);
    sets[7] = "strategy.edge_rounds=2";
    outcome_t b2 = simulate(sets, 8, &w2);
    double model = sizeof(float) * (double)b1.n_params, K = 3, R = 2;
    ck_assert_msg(b1.bytes == K * model * (2 * R + 1 * 2 * 6), "E = 1: bytes %.17g, formula %.17g",
                  b1.bytes, K * model * (2 * R + 2 * 6));
    ck_assert_msg(b2.bytes == K * model * (2 * R + 2 * 2 * 6), "E = 2: bytes %.17g, formula %.17g",
                  b2.bytes, K * model * (2 * R + 4 * 6));
    ck_assert_msg(2 * b1.bytes - b2.bytes == 2 * R * K * model, "WAN bytes %.17g, formula %.17g",
                  2 * b1.bytes - b2.bytes, 2 * R * K * model);
    /* clients of 341 or 342 samples (4096 iid over 12): twice the local work, near enough */
    ck_assert(fabs(b2.samples / b1.samples - 2) < 0.01 && b2.end_time > b1.end_time);
    const char *avg[] = {"strategy.kind=fedavg",  "cluster.workers=4", "strategy.clients=12",
                         "strategy.fraction=0.5", "strategy.rounds=3", "cluster.platform=edge"};
    outcome_t a = simulate(avg, 6, &wa);
    ck_assert(fabs(a.samples / b1.samples - 1) < 0.01);
    ck_assert_msg(max_rel_diff(w1, wa, a.n_params) > 1e-3, "two regions are fedavg");
    ck_assert_msg(max_rel_diff(w2, w1, a.n_params) > 1e-3, "a second edge round moved nothing");
    free(w1);
    free(w2);
    free(wa);
}
END_TEST

/* ---- secure aggregation's cost ------------------------------------------------------- */

/* A client's bytes in a round of n clients and m masked values of `bits`, from the protocol
 * written out step by step (secagg.h): keys, shares, the masked vector, the survivors. */
static double secagg_bytes_by_step(long n, double m, int bits)
{
    int extra = 0;
    while ((1L << extra) < n)
        extra++;
    double peers = (double)(n - 1);
    double advertise = 64, share = peers * 64 + peers * 64, masked = peers * 64;
    masked += ceil(m * (bits + extra) / 8.0);
    double unmask = ceil(n / 8.0) + peers * 32;
    return advertise + share + masked + unmask;
}

START_TEST(secure_aggregation_costs_bytes_and_time_not_weights)
{
    /* Bonawitz et al. 2017's abstract: for 16-bit inputs, 1.73x communication expansion
     * with 2^10 clients and 2^20 values, 1.98x with 2^14 and 2^24 (two decimals) */
    double e10 = sim_secagg_client_bytes(1 << 10, 1 << 20, 16) / (2.0 * (1 << 20));
    double e14 = sim_secagg_client_bytes(1 << 14, 1 << 24, 16) / (2.0 * (1 << 24));
    ck_assert_msg(fabs(e10 - 1.73) < 0.005 && fabs(e14 - 1.98) < 0.005,
                  "expansion %.4f and %.4f, published 1.73 and 1.98", e10, e14);
    ck_assert(sim_secagg_client_bytes(37, 1000, 20) == secagg_bytes_by_step(37, 1000, 20));

    /* 4 of 8 clients a round on 3 hosts: the same weights, more bytes and time */
    const char *sets[] = {"strategy.kind=fedavg",   "cluster.workers=3", "strategy.clients=8",
                          "strategy.fraction=0.5",  "strategy.rounds=3", "strategy.secure_agg=no",
                          "strategy.secagg_bits=32"};
    float *wa = NULL, *wb = NULL, *wc = NULL;
    outcome_t a = simulate(sets, 7, &wa);
    sets[5] = "strategy.secure_agg=yes";
    outcome_t b = simulate(sets, 7, &wb);
    sets[6] = "strategy.secagg_bits=16";
    outcome_t c = simulate(sets, 7, &wc);
    double m = (double)a.n_params, n = 4, K = 3;
    ck_assert_msg(memcmp(wa, wb, sizeof(float) * a.n_params) == 0 &&
                      memcmp(wa, wc, sizeof(float) * a.n_params) == 0,
                  "secure aggregation moved the weights (max relative difference %g)",
                  max_rel_diff(wb, wa, a.n_params));
    ck_assert(a.acc == b.acc && a.loss == b.loss && a.samples == b.samples);
    double want = K * n * (secagg_bytes_by_step(4, m, 32) - 4 * m);
    ck_assert_msg(b.bytes - a.bytes == want,
                  "secure aggregation added %.17g bytes, the steps "
                  "%.17g",
                  b.bytes - a.bytes, want);
    want = K * n * (secagg_bytes_by_step(4, m, 16) - 4 * m);
    ck_assert_msg(c.bytes - a.bytes == want, "16 bits: %.17g bytes, the steps %.17g",
                  c.bytes - a.bytes, want);
    ck_assert_msg(b.end_time > a.end_time && b.fault_rows == 0, "%.9g s against %.9g s", b.end_time,
                  a.end_time);
    free(wa);
    free(wb);
    free(wc);

    /* the clients' cryptography on one host serving all 4 clients of one round (t = 3):
     * two key pairs; a key agreement and 64 encrypted bytes per peer and its two secrets
     * in 4 shares of degree t - 1; 64 decrypted bytes and a key agreement per peer, then 4
     * masks of m values of 34 bits from AES-CTR, each added */
    const char *one[] = {"strategy.kind=fedavg", "cluster.workers=1", "strategy.clients=4",
                         "strategy.fraction=1",  "strategy.rounds=1", "strategy.secure_agg=no"};
    outcome_t p = simulate(one, 6, NULL);
    one[5] = "strategy.secure_agg=yes";
    outcome_t q = simulate(one, 6, NULL);
    double ka = SIM_SECAGG_KA_FLOPS, byte = SIM_SECAGG_BYTE_FLOPS, fe = SIM_SECAGG_FIELD_FLOPS;
    double per_client = 2 * ka + (3 * ka + 2 * 4 * 3 * fe + 3 * 64 * byte) +
                        (3 * 64 * byte + 3 * ka + 4 * m * (byte * 34 / 8 + 1));
    double crypto = 4 * per_client / p.device_flops;
    ck_assert_msg(fabs((q.compute_s - p.compute_s) - crypto) < 1e-9 * q.compute_s + 1e-12,
                  "the clients computed %.9g s more, the cryptography costs %.9g s",
                  q.compute_s - p.compute_s, crypto);
}
END_TEST

START_TEST(secure_aggregation_fails_the_rounds_dropouts_leave_below_threshold)
{
    /* Every client sampled (fraction 1), each leaving a round with probability 0.3 at a
     * step drawn from the same stream (sim_fl_drop_step): the steps' answers, the bytes,
     * the dropout rows (a client leaves only at a step it reaches), the `deadline` rows
     * (masked inputs missing) and the `secagg` rows (rounds that fail) all follow from the
     * draws. The threshold 0.5 (t = 5 of 8) lets some rounds through and fails others
     * (checked below, so the seed keeps both cases). */
    const char *sets[] = {
        "strategy.kind=fedavg", "cluster.workers=3", "strategy.clients=8",
        "strategy.fraction=1",  "strategy.rounds=6", "strategy.secure_agg=yes",
        "faults.dropout=0.3",   "run.seed=3",        "strategy.secagg_threshold=0.5"};
    int n_sets = (int)(sizeof sets / sizeof sets[0]);
    static scenario_t sc;
    dt_err_t err = {{0}};
    scenario_defaults(&sc);
    for (int i = 0; i < n_sets; i++)
        ck_assert_msg(scenario_set(&sc, sets[i], &err) == DT_OK, "%s", err.msg);
    float *w = NULL;
    outcome_t o = simulate(sets, n_sets, &w);
    double m = (double)o.n_params, bytes = 0;
    int n = 8, t = 5, R = 35, failed = 0, passed = 0;
    long rows = 0;
    for (long r = 0; r < 6; r++) {
        int at[SIM_SECAGG_STEPS + 1] = {0}; /* clients reaching step k (k = 4: all done) */
        for (int c = 0; c < n; c++) {
            int s = sim_fl_drop_step(&sc, c, r, SIM_SECAGG_STEPS);
            for (int k = 0; k <= s; k++)
                at[k]++;
        }
        /* at[k] take step k's message; at[k + 1] of them answer it */
        double down[4] = {4 * m, 64.0 * (at[1] - 1), 64.0 * (at[2] - 1), ceil(at[2] / 8.0)};
        double up[4] = {64, 64.0 * (at[1] - 1), ceil(m * R / 8.0), 32.0 * (at[2] - 1)};
        int k;
        for (k = 0; k < SIM_SECAGG_STEPS; k++) {
            bytes += at[k] * down[k] + at[k + 1] * up[k];
            rows += at[k] - at[k + 1]; /* dropout rows */
            if (k == 2 && at[3] < at[2])
                rows++; /* masked inputs missing */
            if (at[k + 1] < t)
                break;
        }
        if (k < SIM_SECAGG_STEPS) {
            rows++;
            failed++;
        } else {
            passed++;
        }
    }
    ck_assert_msg(failed > 0 && passed > 0, "seed 3: %d rounds failed, %d passed", failed, passed);
    ck_assert_msg(o.bytes == bytes, "bytes %.17g, the steps %.17g", o.bytes, bytes);
    ck_assert_msg(o.fault_rows == rows, "%ld fault rows (%s), the draws give %ld", o.fault_rows,
                  o.fault_kinds, rows);
    ck_assert_msg(strstr(o.fault_kinds, "secagg") && strstr(o.fault_kinds, "dropout"), "%s",
                  o.fault_kinds);
    free(w);
}
END_TEST

/* ---- fedavg clients side by side ----------------------------------------------------- */

/* side_by_side = auto trains a round's clients as replicas on a GPU, but not the gpt's
 * (its workspace holds one replica: the CUDA fedavg of a gpt aborted on it), nor with Adam
 * or clipping; a backend named cuda stands for the GPU. */
START_TEST(side_by_side_auto_skips_the_gpt)
{
    static scenario_t sc;
    static sim_run_t run;
    scenario_defaults(&sc);
    trainer_backend_t gpu = *trainer_backend_cpu();
    gpu.name = "cuda";
    memset(&run, 0, sizeof run);
    run.sc = &sc;
    run.be = &gpu;
    run.model.cfg.arch = TRAINER_ARCH_MLP;
    ck_assert_int_eq(sim_side_enabled(&run), 1);
    run.model.cfg.arch = TRAINER_ARCH_GPT;
    ck_assert_int_eq(sim_side_enabled(&run), 0);
    run.model.cfg.arch = TRAINER_ARCH_MLP;
    sc.sgd.kind = TRAINER_OPT_ADAM;
    ck_assert_int_eq(sim_side_enabled(&run), 0);
    run.be = trainer_backend_cpu(); /* the CPU: one after the other unless asked */
    sc.sgd.kind = TRAINER_OPT_SGD;
    ck_assert_int_eq(sim_side_enabled(&run), 0);
}
END_TEST

START_TEST(fedavg_side_by_side_is_exact_on_cpu)
{
    /* A round's clients trained as replicas (model.side_by_side) give exactly the run of
     * clients trained one after the other on the CPU: the same weights, accuracy, loss,
     * simulated time and samples. Dirichlet partitions give the clients different sample
     * counts, batch 24 leaves different tails, two local epochs, momentum, FedProx and
     * dropouts (clients that leave are not trained) all go through the replica schedule. */
    const char *sets[] = {
        "strategy.kind=fedavg",         "cluster.workers=3",    "strategy.clients=12",
        "strategy.fraction=0.5",        "strategy.rounds=4",    "strategy.local_epochs=2",
        "data.partition=dirichlet:0.3", "model.batch=24",       "strategy.prox_mu=0.01",
        "faults.dropout=0.2",           "model.side_by_side=no"};
    int n = (int)(sizeof sets / sizeof sets[0]);
    float *w1 = NULL, *w2 = NULL;
    outcome_t a = simulate(sets, n, &w1);
    sets[n - 1] = "model.side_by_side=yes";
    outcome_t b = simulate(sets, n, &w2);
    ck_assert_msg(a.samples > 0 && a.samples == b.samples, "samples %g and %g", a.samples,
                  b.samples);
    ck_assert_msg(a.end_time == b.end_time, "simulated time %.17g and %.17g", a.end_time,
                  b.end_time);
    ck_assert_msg(a.acc == b.acc && a.loss == b.loss,
                  "accuracy %.17g / %.17g, loss %.17g / "
                  "%.17g",
                  a.acc, b.acc, a.loss, b.loss);
    ck_assert_msg(memcmp(w1, w2, sizeof(float) * a.n_params) == 0,
                  "side by side changed the weights (max relative difference %g)",
                  max_rel_diff(w2, w1, a.n_params));
    /* and the rounds trained: not two copies of the initial weights */
    sets[4] = "strategy.rounds=1";
    float *w0 = NULL;
    simulate(sets, n, &w0);
    ck_assert_msg(max_rel_diff(w0, w2, a.n_params) > 1e-3, "rounds 2-4 moved nothing");
    free(w0);
    free(w1);
    free(w2);
}
END_TEST

START_TEST(local_sgd_side_by_side_is_exact_on_cpu)
{
    /* local-sgd workers trained side by side at each average give exactly the run of
     * workers trained one after the other: 6 workers on a fat-tree (tree all-reduce, so
     * workers reach the averages at different times), periods of 4 steps and a last period
     * of 2 (22 steps), momentum. */
    const char *sets[] = {"strategy.kind=local-sgd",   "cluster.workers=6",
                          "cluster.platform=fat-tree", "strategy.algorithm=tree",
                          "strategy.local_steps=4",    "run.steps=22",
                          "model.side_by_side=no"};
    int n = (int)(sizeof sets / sizeof sets[0]);
    float *w1 = NULL, *w2 = NULL;
    outcome_t a = simulate(sets, n, &w1);
    sets[n - 1] = "model.side_by_side=yes";
    outcome_t b = simulate(sets, n, &w2);
    ck_assert_msg(a.samples == 22.0 * 6 * 8 && a.samples == b.samples, "samples %g and %g",
                  a.samples, b.samples);
    ck_assert_msg(a.end_time == b.end_time && a.acc == b.acc && a.loss == b.loss,
                  "time %.17g / %.17g, accuracy %.17g / %.17g", a.end_time, b.end_time, a.acc,
                  b.acc);
    ck_assert_msg(memcmp(w1, w2, sizeof(float) * a.n_params) == 0,
                  "side by side changed the weights (max relative difference %g)",
                  max_rel_diff(w2, w1, a.n_params));
    free(w1);
    free(w2);
}
END_TEST

/* ---- fedavg: non-iid hurts -------------------------------------------------------- */

START_TEST(fedavg_shards_worse_than_iid)
{
    const char *common[] = {"strategy.kind=fedavg",    "data.source=fashion-mnist",
                            "data.train_samples=6000", "data.test_samples=2000",
                            "model.arch=logreg",       "model.batch=32",
                            "model.momentum=0",        "model.lr=0.05",
                            "cluster.workers=10",      "strategy.clients=20",
                            "strategy.fraction=0.5",   "strategy.rounds=10",
                            "strategy.local_epochs=1", "data.partition=iid"};
    outcome_t iid = simulate(common, 14, NULL);
    common[13] = "data.partition=shards:2";
    outcome_t shards = simulate(common, 14, NULL);
    ck_assert_msg(iid.acc > shards.acc + 0.03, "iid %.4f, shards:2 %.4f", iid.acc, shards.acc);
    ck_assert(iid.acc > 0.6);
}
END_TEST

/* ---- every strategy runs; same seed, same results -------------------------------- */

START_TEST(every_strategy_runs_and_repeats)
{
    static const char *kinds[][3] = {
        {"strategy.kind=single", "cluster.workers=1", "run.steps=20"},
        {"strategy.kind=sync-ps", "cluster.workers=3", "strategy.servers=2"},
        {"strategy.kind=async-ps", "cluster.workers=3", "strategy.max_lead=1"},
        {"strategy.kind=allreduce", "cluster.workers=3", "strategy.algorithm=ring"},
        {"strategy.kind=local-sgd", "cluster.workers=3", "strategy.local_steps=4"},
        {"strategy.kind=fedavg", "cluster.workers=3", "strategy.fraction=0.5"},
    };
    for (int k = 0; k < 6; k++) {
        const char *sets[4] = {kinds[k][0], kinds[k][1], kinds[k][2], "run.eval_every=5"};
        float *w1 = NULL, *w2 = NULL;
        outcome_t a = simulate(sets, 4, &w1);
        outcome_t b = simulate(sets, 4, &w2);
        ck_assert_msg(isfinite(a.acc) && a.acc > 0.5, "%s: accuracy %g", kinds[k][0], a.acc);
        ck_assert_msg(a.end_time > 0, "%s: no simulated time passed", kinds[k][0]);
        if (k > 0)
            ck_assert_msg(a.bytes > 0, "%s: nothing sent", kinds[k][0]);
        ck_assert_msg(a.evals >= 2, "%s: %ld evaluations", kinds[k][0], a.evals);
        ck_assert_msg(a.end_time == b.end_time && a.acc == b.acc && a.loss == b.loss &&
                          a.bytes == b.bytes,
                      "%s: two runs differ", kinds[k][0]);
        ck_assert(memcmp(w1, w2, sizeof(float) * a.n_params) == 0);
        free(w1);
        free(w2);
    }
}
END_TEST

/* ---- time model, evaluation marks, platforms --------------------------------------- */

START_TEST(flops_time_model_is_exact)
{
    /* single worker, 20 steps of batch 8: compute time = 20 x 8 x FLOPs per sample / speed */
    const char *sets[] = {"strategy.kind=single", "cluster.device=v100"};
    outcome_t o = simulate(sets, 2, NULL);
    double want = 20.0 * 8 * o.step_flops / o.device_flops;
    ck_assert_msg(fabs(o.compute_s - want) <= 1e-9 * want, "compute %.12g s, expected %.12g s",
                  o.compute_s, want);
    ck_assert_double_eq_tol(o.device_flops, 15.7e12 * 0.7, 1e3);
    /* measured: the real kernels' wall time, which is neither zero nor the FLOP model */
    const char *measured[] = {"strategy.kind=single", "cluster.device=v100",
                              "run.time_model=measured"};
    outcome_t m = simulate(measured, 3, NULL);
    ck_assert(m.compute_s > 0 && m.compute_s != o.compute_s);
    ck_assert_msg(m.compute_s < 10.0, "measured %g s of compute for 20 tiny steps", m.compute_s);
}
END_TEST

START_TEST(time_marks_evaluate)
{
    const char *plain[] = {"strategy.kind=allreduce", "cluster.workers=2", "run.eval_every=0"};
    outcome_t a = simulate(plain, 3, NULL);
    ck_assert_int_eq(a.evals, 1); /* only the final one */
    char interval[64];
    snprintf(interval, sizeof interval, "run.eval_interval=%.9gs", a.end_time / 4.5);
    const char *timed_marks[] = {"strategy.kind=allreduce", "cluster.workers=2", "run.eval_every=0",
                                 interval};
    outcome_t b = simulate(timed_marks, 4, NULL);
    ck_assert_int_eq(b.evals, 5); /* 4 marks + the final evaluation */
    ck_assert(b.end_time == a.end_time);
}
END_TEST

START_TEST(platforms_run)
{
    static const char *cases[][3] = {
        {"cluster.platform=fat-tree", "strategy.kind=allreduce", "cluster.workers=12"},
        {"cluster.platform=multi-rack", "strategy.kind=allreduce",
         "strategy.algorithm=hierarchical"},
        {"cluster.platform=edge", "strategy.kind=fedavg", "strategy.fraction=0.5"},
        {"cluster.platform=edge", "strategy.kind=sync-ps", "cluster.workers=4"},
        {"cluster.platform=" DTSIM_SOURCE "/topologies/star-8.xml", "strategy.kind=allreduce",
         "cluster.workers=8"},
        {"cluster.platform=" DTSIM_SOURCE "/topologies/fat-tree-16.xml", "strategy.kind=allreduce",
         "cluster.workers=16"},
        {"cluster.platform=" DTSIM_SOURCE "/topologies/multi-rack-16.xml",
         "strategy.kind=allreduce", "cluster.workers=16"},
        {"cluster.platform=" DTSIM_SOURCE "/topologies/edge-20.xml", "strategy.kind=fedavg",
         "cluster.workers=20"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[5] = {cases[i][0], cases[i][1], cases[i][2], "run.steps=4",
                               "strategy.rounds=2"};
        outcome_t o = simulate(sets, 5, NULL);
        ck_assert_msg(o.end_time > 0 && o.bytes > 0, "%s: nothing happened", cases[i][0]);
    }
    /* a slower inter-rack uplink makes the same ring slower than on one switch */
    const char *star[] = {"strategy.kind=allreduce", "cluster.workers=8", "run.steps=4"};
    const char *racks[] = {"strategy.kind=allreduce", "cluster.workers=8", "run.steps=4",
                           "cluster.platform=multi-rack", "cluster.uplink_bandwidth=100Mbps"};
    outcome_t s1 = simulate(star, 3, NULL), s2 = simulate(racks, 5, NULL);
    ck_assert_msg(s2.end_time > 2 * s1.end_time, "star %g s, racks %g s", s1.end_time, s2.end_time);
}
END_TEST

/* ---- topologies: routes and the two-level all-reduce ------------------------------------ */

#define MAX_PAIRS 8

/* In a child: loads the platform of base + sets and writes, for each pair of hosts "node-A
 * node-B", the links of its route separated by spaces (or "error: ..."). */
static void routes_child(int fd, const char *const *sets, int n_sets, const int (*pairs)[2],
                         int n_pairs)
{
    static scenario_t sc;
    static char out[MAX_PAIRS][512];
    dt_err_t err = {{0}};
    scenario_defaults(&sc);
    for (int i = 0; i < n_sets; i++)
        if (scenario_set(&sc, sets[i], &err)) {
            snprintf(out[0], sizeof out[0], "error: %.400s", err.msg);
            write_all(fd, out, sizeof out);
            _exit(0);
        }
    int argc = 1;
    char *argv[] = {"test_sim", NULL};
    simgrid_init(&argc, argv);
    sim_platform_t p;
    if (sim_platform_load(&p, &sc, &err)) {
        snprintf(out[0], sizeof out[0], "error: %.400s", err.msg);
        write_all(fd, out, sizeof out);
        _exit(0);
    }
    for (int k = 0; k < n_pairs; k++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "node-%d", pairs[k][0]);
        snprintf(b, sizeof b, "node-%d", pairs[k][1]);
        xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
        sg_host_get_route(sg_host_by_name(a), sg_host_by_name(b), links);
        size_t len = 0;
        for (unsigned long i = 0; i < xbt_dynar_length(links) && len < sizeof out[k]; i++)
            len += (size_t)snprintf(out[k] + len, sizeof out[k] - len, "%s%s", i ? " " : "",
                                    sg_link_get_name(xbt_dynar_get_as(links, i, sg_link_t)));
        xbt_dynar_free(&links);
    }
    write_all(fd, out, sizeof out);
    _exit(0);
}

static void routes(const char *const *sets, int n_sets, const int (*pairs)[2], int n_pairs,
                   char (*out)[512])
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        routes_child(fds[1], sets, n_sets, pairs, n_pairs);
    }
    close(fds[1]);
    int got = read_all(fds[0], out, sizeof(char[MAX_PAIRS][512]));
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    ck_assert_msg(got == 0, "the platform process died (status %d)", status);
    ck_assert_msg(strncmp(out[0], "error", 5), "%s", out[0]);
}

static int hops(const char *route)
{
    int n = *route != 0;
    for (const char *c = route; *c; c++)
        n += *c == ' ';
    return n;
}

/* A 4x4x4 torus routes neighbours (also across the wrap) in one link and the farthest
 * position, (2,2,2), in the Manhattan distance 6; the rail platform keeps a server's GPUs on
 * NVLink, a rail's GPUs on their leaf, and only other rails through the spines. */
START_TEST(topologies_route_as_drawn)
{
    char out[MAX_PAIRS][512];
    const char *torus[] = {"cluster.platform=torus", "cluster.torus=4x4x4", "cluster.workers=64",
                           "strategy.kind=allreduce"};
    static const int tp[][2] = {{0, 1}, {0, 3}, {0, 4}, {0, 16}, {0, 42}, {5, 58}};
    routes(torus, 4, tp, 6, out);
    static const int want[] = {1, 1, 1, 1, 6, 3}; /* 5 = (1,1,0), 58 = (2,2,3): 1+1+1 */
    for (int k = 0; k < 6; k++)
        ck_assert_msg(hops(out[k]) == want[k], "node-%d to node-%d: %d links (%s), expected %d",
                      tp[k][0], tp[k][1], hops(out[k]), out[k], want[k]);

    const char *rail[] = {"cluster.platform=rail", "cluster.gpus_per_server=4", "cluster.workers=8",
                          "strategy.kind=allreduce"};
    static const int rp[][2] = {{1, 5}, {5, 1}, {1, 2}, {1, 6}, {6, 1}};
    routes(rail, 4, rp, 5, out);
    ck_assert_str_eq(out[0], "nic-1_UP nic-5_DOWN");
    ck_assert_str_eq(out[1], "nic-5_UP nic-1_DOWN");
    ck_assert_str_eq(out[2], "nvlink-1_UP nvlink-2_DOWN");
    ck_assert_str_eq(out[3], "nic-1_UP rail-1_UP rail-2_DOWN nic-6_DOWN");
    ck_assert_str_eq(out[4], "nic-6_UP rail-2_UP rail-1_DOWN nic-1_DOWN");
}
END_TEST

/* On the rail platform (S servers of G GPUs, NVLink a_nv = 2 x 1 us, B_nv = 10 GB/s; NICs
 * a = 2 x 10 us, B = 1 Gbps), CM02 without cross traffic:
 *   2d:           2 (G-1) (a_nv + n/G / B_nv) + 2 (S-1) (a + n/(G S) / B)
 *   hierarchical: 2 log2(G) (a_nv + n / B_nv) + 2 (S-1) a + 2 (S-1)/S n / B */
START_TEST(rail_allreduce_matches_alpha_beta)
{
    const double a_nv = 2e-6, b_nv = 1e10;
    const int G = 4;
    static const int servers[] = {2, 3};
    for (int i = 0; i < 2; i++) {
        int S = servers[i];
        char w[64];
        snprintf(w, sizeof w, "cluster.workers=%d", G * S);
        for (int h = 0; h < 2; h++) {
            const char *sets[] = {"strategy.kind=allreduce",
                                  h ? "strategy.algorithm=hierarchical" : "strategy.algorithm=2d",
                                  w,
                                  "model.hidden=2048",
                                  "run.steps=1",
                                  "cluster.platform=rail",
                                  "cluster.gpus_per_server=4",
                                  "cluster.nvlink_bandwidth=10GBps",
                                  "cluster.nvlink_latency=1us",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1000000Pf"};
            outcome_t o = simulate(sets, 14, NULL);
            double n = (double)(o.n_params * sizeof(float));
            double want =
                h ? 2 * log2(G) * (a_nv + n / b_nv) + 2 * (S - 1) * ALPHA +
                        2.0 * (S - 1) / S * n / BW
                  : 2 * (G - 1) * (a_nv + n / G / b_nv) + 2 * (S - 1) * (ALPHA + n / (G * S) / BW);
            expect_close(h ? "rail hierarchical" : "rail 2d", G * S, (size_t)n, o.end_time, want);
        }
    }
}
END_TEST

/* ---- faults ------------------------------------------------------------------------------ */

static int has_kind(const outcome_t *o, const char *kind)
{
    char have[300], want[64];
    snprintf(have, sizeof have, " %s ", o->fault_kinds);
    snprintf(want, sizeof want, " %s ", kind);
    return strstr(have, want) != NULL;
}

/* Runs `strategy` healthy, then with one fault at 30% of the healthy run lasting 40% of it
 * (`fault` formats the start and the duration in seconds); the timeout is the healthy
 * run's length, so no healthy wait is mistaken for a death. */
static void fault_case(const char *const *strategy, int n_strategy, const char *fault,
                       const char *want_kinds, int same_evals)
{
    const char *sets[16];
    int n = 0;
    for (int i = 0; i < n_strategy; i++)
        sets[n++] = strategy[i];
    sets[n++] = "run.eval_every=5";
    outcome_t healthy = simulate(sets, n, NULL);
    ck_assert_msg(healthy.ok, "%s: %s", strategy[0], healthy.err);
    double E = healthy.end_time;
    char timeout[64], spec[160];
    snprintf(timeout, sizeof timeout, "faults.timeout=%.9gs", E);
    snprintf(spec, sizeof spec, fault, 0.3 * E, 0.4 * E);
    sets[n++] = timeout;
    sets[n++] = spec;
    outcome_t o = simulate(sets, n, NULL);
    ck_assert_msg(o.ok, "%s with %s: %s", strategy[0], spec, o.err);
    ck_assert_msg(o.fault_rows > 0, "%s with %s: no fault logged", strategy[0], spec);
    char kinds[128];
    snprintf(kinds, sizeof kinds, "%s", want_kinds);
    for (char *k = strtok(kinds, " "); k; k = strtok(NULL, " "))
        ck_assert_msg(has_kind(&o, k), "%s with %s: no %s row (got: %s)", strategy[0], spec, k,
                      o.fault_kinds);
    ck_assert_msg(isfinite(o.acc) && o.evals >= 1, "%s with %s: no evaluation", strategy[0], spec);
    if (same_evals)
        ck_assert_msg(o.evals == healthy.evals, "%s with %s: %ld evaluations, healthy %ld",
                      strategy[0], spec, o.evals, healthy.evals);
}

static const char *const s_sync[] = {"strategy.kind=sync-ps", "cluster.workers=4"};
static const char *const s_async[] = {"strategy.kind=async-ps", "cluster.workers=4"};
static const char *const s_ring[] = {"strategy.kind=allreduce", "cluster.workers=4",
                                     "strategy.algorithm=ring"};
static const char *const s_tree[] = {"strategy.kind=allreduce", "cluster.workers=4",
                                     "strategy.algorithm=tree"};
static const char *const s_local[] = {"strategy.kind=local-sgd", "cluster.workers=4",
                                      "strategy.local_steps=4"};
static const char *const s_fed[] = {"strategy.kind=fedavg", "cluster.workers=4",
                                    "strategy.clients=8", "strategy.fraction=0.5",
                                    "strategy.rounds=10"};

START_TEST(host_crashes_every_strategy)
{
    const char *back = "faults.crash=worker-1 at %.9gs for %.9gs";
    const char *gone = "faults.crash=worker-1 at %.9gs";
    /* back before the timeout: the shard waits, nobody is presumed dead */
    fault_case(s_sync, 2, back, "host-crash host-recover rejoin", 1);
    fault_case(s_sync, 2, gone, "host-crash timeout", 1);
    fault_case(s_async, 2, back, "host-crash host-recover rejoin", 0);
    fault_case(s_ring, 3, back, "host-crash abort reform host-recover", 1);
    fault_case(s_ring, 3, gone, "host-crash abort reform", 1);
    fault_case(s_tree, 3, gone, "host-crash reform", 1);
    fault_case(s_local, 3, back, "host-crash abort reform", 0);
    fault_case(s_fed, 5, "faults.crash=client-1 at %.9gs for %.9gs", "host-crash host-recover", 1);
    /* servers: a sync-ps shard restarts from its checkpoint, an async-ps shard from the
     * initial weights; the workers rejoin */
    const char *sync_ck[] = {"strategy.kind=sync-ps", "cluster.workers=4",
                             "faults.checkpoint_every=4"};
    fault_case(sync_ck, 3, "faults.crash=server-0 at %.9gs for %.9gs",
               "host-crash host-recover restore", 0);
    fault_case(s_async, 2, "faults.crash=server-0 at %.9gs for %.9gs",
               "host-crash host-recover restore", 0);
}
END_TEST

START_TEST(link_faults_and_stragglers_every_strategy)
{
    const char *down = "faults.link_down=worker-2 at %.9gs for %.9gs";
    const char *slow = "faults.link_degrade=worker-2 at %.9gs to 1Mbps for %.9gs";
    const char *const *all[] = {s_sync, s_async, s_ring, s_local};
    int n[] = {2, 2, 3, 3};
    for (int i = 0; i < 4; i++) {
        fault_case(all[i], n[i], down, "link-down link-up", 0);
        fault_case(all[i], n[i], slow, "link-degrade link-restore", 0);
    }
    fault_case(s_fed, 5, "faults.link_down=client-2 at %.9gs for %.9gs", "link-down link-up", 1);
    /* random failures: the mean time between failures a fifth of the run, repairs quick */
    const char *sets_r[] = {"strategy.kind=allreduce", "cluster.workers=4"};
    outcome_t hr = simulate(sets_r, 2, NULL);
    char mtbf[64], mttr[64], to[64];
    snprintf(mtbf, sizeof mtbf, "faults.mtbf=%.9gs", hr.end_time / 5);
    snprintf(mttr, sizeof mttr, "faults.mttr=%.9gs", hr.end_time / 20);
    snprintf(to, sizeof to, "faults.timeout=%.9gs", hr.end_time / 10);
    const char *rnd[] = {"strategy.kind=allreduce", "cluster.workers=4", mtbf, mttr, to};
    outcome_t r1 = simulate(rnd, 5, NULL), r2 = simulate(rnd, 5, NULL);
    ck_assert_msg(r1.ok && has_kind(&r1, "host-crash") && has_kind(&r1, "reform"), "mtbf: %s (%s)",
                  r1.err, r1.fault_kinds);
    /* seeded: the same failures twice */
    ck_assert(r1.end_time == r2.end_time && r1.acc == r2.acc && r1.fault_rows == r2.fault_rows);

    /* a straggler logs nothing: every sync-ps step waits for it, its compute takes 3x */
    const char *sets[] = {"strategy.kind=sync-ps", "cluster.workers=4"};
    outcome_t h = simulate(sets, 2, NULL);
    const char *slowed[] = {"strategy.kind=sync-ps", "cluster.workers=4",
                            "faults.straggler=worker-2 x3"};
    outcome_t o = simulate(slowed, 3, NULL);
    ck_assert_msg(h.ok && o.ok, "%s %s", h.err, o.err);
    ck_assert_msg(fabs(o.end_time - (h.end_time + 2 * h.compute_s)) < 0.02 * h.end_time,
                  "straggler: %.9g, healthy %.9g + 2 x compute %.9g", o.end_time, h.end_time,
                  h.compute_s);
    const char *fed_sets[] = {"strategy.kind=fedavg",   "cluster.workers=4",
                              "strategy.clients=8",     "strategy.fraction=0.5",
                              "strategy.rounds=10",     "faults.dropout=0.5",
                              "faults.over_select=1.5", "faults.client_speed=1Gf:0.5, 90Gf:0.5",
                              "run.eval_every=2"};
    o = simulate(fed_sets, 9, NULL);
    /* every round still happens and is evaluated, whatever dropped out */
    ck_assert_msg(o.ok && has_kind(&o, "dropout") && o.evals == 5 && isfinite(o.acc),
                  "fedavg dropouts: %s (%s), %ld evaluations", o.err, o.fault_kinds, o.evals);
    /* clients online a tenth of every second: rounds wait for someone to come online */
    fed_sets[5] = "faults.availability=1s:0.1";
    o = simulate(fed_sets, 9, NULL);
    ck_assert_msg(o.ok && o.evals == 5 && isfinite(o.acc), "fedavg availability: %s, %ld", o.err,
                  o.evals);
}
END_TEST

/* The single worker, crashed at t for D and restarted from a checkpoint taken every step,
 * redoes the step it was in: end = healthy end + D + (t - start of that step). */
START_TEST(single_crash_costs_downtime_and_lost_step)
{
    const char *sets[] = {"strategy.kind=single", "run.eval_every=0", "run.steps=40"};
    outcome_t h = simulate(sets, 3, NULL);
    ck_assert_msg(h.ok, "%s", h.err);
    double step = h.end_time / 40, t = 10.5 * step, D = 7.25 * step;
    char crash[128], timeout[64];
    snprintf(crash, sizeof crash, "faults.crash=worker-0 at %.17gs for %.17gs", t, D);
    snprintf(timeout, sizeof timeout, "faults.timeout=%.9gs", h.end_time);
    const char *f[] = {"strategy.kind=single",
                       "run.eval_every=0",
                       "run.steps=40",
                       "faults.checkpoint_every=1",
                       crash,
                       timeout};
    outcome_t o = simulate(f, 6, NULL);
    ck_assert_msg(o.ok, "%s", o.err);
    double want = h.end_time + D + 0.5 * step;
    ck_assert_msg(fabs(o.end_time - want) < 1e-9 * want, "end %.12g, want %.12g", o.end_time, want);
    ck_assert(has_kind(&o, "restore"));
}
END_TEST

/* A straggler interval on the single worker: during [a, b) it does a third of the work,
 * so the run ends 2/3 (b - a) later. */
START_TEST(straggler_interval_is_integrated)
{
    const char *sets[] = {"strategy.kind=single", "run.eval_every=0", "run.steps=40"};
    outcome_t h = simulate(sets, 3, NULL);
    ck_assert_msg(h.ok, "%s", h.err);
    double a = 0.25 * h.end_time, b = 0.5 * h.end_time;
    char spec[128];
    snprintf(spec, sizeof spec, "faults.straggler=worker-0 x3 at %.17gs until %.17gs", a, b);
    const char *f[] = {"strategy.kind=single", "run.eval_every=0", "run.steps=40", spec};
    outcome_t o = simulate(f, 4, NULL);
    ck_assert_msg(o.ok, "%s", o.err);
    double want = h.end_time + 2 * (b - a) / 3;
    ck_assert_msg(fabs(o.end_time - want) < 1e-9 * want, "end %.12g, want %.12g", o.end_time, want);
}
END_TEST

/* ---- timing-only runs: model profiles, rings of one message per phase, buckets ---------- */

START_TEST(timing_only_single_is_exact)
{
    /* no data, no kernels: 3 steps of batch 8 cost 3 x 8 x the profile's FLOPs / speed */
    const char *sets[] = {"strategy.kind=single", "model.arch=profile:resnet50", "run.steps=3",
                          "run.eval_every=1", "cluster.device=v100"};
    outcome_t o = simulate(sets, 5, NULL);
    ck_assert_msg(o.ok, "%s", o.err);
    ck_assert_double_eq(o.step_flops, 8222824448.0 + 16209620992.0);
    ck_assert_uint_eq(o.n_params, 25557032);
    double want = 3.0 * 8 * o.step_flops / o.device_flops;
    ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want, "%.12g s, want %.12g s", o.end_time,
                  want);
    ck_assert_int_eq(o.evals, 3); /* progress rows, without accuracy */
    ck_assert(isnan(o.acc) && isnan(o.loss));
}
END_TEST

START_TEST(ring_phases_match_ring_steps)
{
    /* on a star every ring step sees the same network: one message per phase after a
     * latency probe takes the time of 2 (p - 1) messages, in both network models */
    static const char *const nets[][2] = {
        {"cluster.network_model=LV08", "cluster.crosstraffic=yes"},
        {"cluster.network_model=CM02", "cluster.crosstraffic=no"}};
    for (int k = 0; k < 2; k++) {
        double t[2];
        for (int m = 0; m < 2; m++) {
            const char *sets[] = {"strategy.kind=allreduce",
                                  "model.arch=profile:resnet50",
                                  "cluster.workers=12",
                                  "run.steps=2",
                                  nets[k][0],
                                  nets[k][1],
                                  m ? "strategy.ring_messages=phases"
                                    : "strategy.ring_messages=steps"};
            outcome_t o = simulate(sets, 7, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            t[m] = o.end_time;
        }
        ck_assert_msg(fabs(t[1] - t[0]) <= 1e-6 * t[0], "%s: steps %.9g s, phases %.9g s",
                      nets[k][0], t[0], t[1]);
    }
}
END_TEST

/* Two workers, a profile of two 1 MB gradients (forward F = 1 ms, backward 2 + 2 ms at
 * 1 TFLOP/s), alpha-beta network: with a bucket per layer the top layer's all-reduce
 * (2 alpha + 1 MB / BW) runs during the bottom layer's backward. */
START_TEST(buckets_overlap_backward_exactly)
{
    static const char *const bws[] = {"cluster.bandwidth=1Gbps", "cluster.bandwidth=10Gbps"};
    static const double bw[] = {1.25e8, 1.25e9};
    for (int k = 0; k < 2; k++)
        for (int b = 0; b < 2; b++) {
            const char *sets[] = {"strategy.kind=allreduce",
                                  "model.arch=profile:" DTSIM_SOURCE
                                  "/tests/fixtures/profile-two-layers.ini",
                                  "model.batch=1",
                                  "cluster.workers=2",
                                  "run.steps=2",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1Tf",
                                  bws[k],
                                  b ? "strategy.bucket_mb=1" : "strategy.bucket_mb=0"};
            outcome_t o = simulate(sets, 11, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            double F = 1e-3, f = 2e-3, layer = ALPHA * 2 + 1e6 / bw[k];
            double step = b ? F + f + fmax(layer, f) + layer /* top overlaps bottom */
                            : F + 2 * f + ALPHA * 2 + 2e6 / bw[k];
            ck_assert_msg(fabs(o.end_time - 2 * step) <= 1e-6 * step,
                          "%s bucket %d: %.9g s, want %.9g s", bws[k], b, o.end_time, 2 * step);
        }
}
END_TEST

/* Momentum correction (DGC): with top-k keeping every element, each worker's momentum is
 * cleared as soon as it is sent, so momentum 0.9 trains exactly as plain SGD; without the
 * correction the same run keeps the updater's momentum, as uncompressed training does. */
START_TEST(momentum_correction_moves_the_momentum)
{
    const char *plain[] = {"strategy.kind=single", "model.batch=32", "model.momentum=0"};
    const char *heavy[] = {"strategy.kind=single", "model.batch=32", "model.momentum=0.9"};
    float *p = NULL, *h = NULL, *a = NULL, *b = NULL;
    outcome_t o = simulate(plain, 3, &p);
    simulate(heavy, 3, &h);
    const char *mc[] = {"strategy.kind=allreduce", "cluster.workers=4", "model.momentum=0.9",
                        "strategy.compression=topk:0.999", "strategy.momentum_correction=yes"};
    simulate(mc, 5, &a);
    mc[4] = "strategy.momentum_correction=no";
    simulate(mc, 5, &b);
    ck_assert_uint_eq(
        trainer_codec_topk_count(&(trainer_codec_t){TRAINER_CODEC_TOPK, 0.999}, o.n_params),
        o.n_params);
    ck_assert_msg(max_rel_diff(a, p, o.n_params) < 2e-5, "corrected: %g from plain SGD",
                  max_rel_diff(a, p, o.n_params));
    ck_assert_msg(max_rel_diff(b, h, o.n_params) < 2e-5, "uncorrected: %g from momentum SGD",
                  max_rel_diff(b, h, o.n_params));
    ck_assert(max_rel_diff(p, h, o.n_params) > 1e-2); /* the two references differ */
    free(p);
    free(h);
    free(a);
    free(b);
}
END_TEST

/* ---- model parallelism ------------------------------------------------------------------ */

/* A pipeline of S stages and M micro-batches, either schedule, lands on the weights of one
 * worker with the whole batch: mlp and cnn, every possible stage count. */
START_TEST(pipeline_equals_single)
{
    static const char *const models[][3] = {
        {"model.arch=mlp", "model.hidden=16,12", "model.batch=24"},
        {"model.arch=cnn", "data.source=fashion-mnist", "model.batch=24"}};
    static const int max_stages[] = {3, 4};
    for (int k = 0; k < 2; k++) {
        /* the cnn on Fashion-MNIST's 28 x 28 images, with few channels */
        const char *single[] = {
            "strategy.kind=single", models[k][0],     models[k][1], models[k][2],
            "model.conv=3,4",       "model.kernel=5", "model.fc=8"};
        float *ref = NULL;
        outcome_t a = simulate(single, 7, &ref);
        for (int S = 1; S <= max_stages[k]; S++)
            for (int sched = 0; sched < 2; sched++) {
                char st[64];
                snprintf(st, sizeof st, "strategy.stages=%d", S);
                const char *sets[] = {"strategy.kind=pipeline",
                                      models[k][0],
                                      models[k][1],
                                      models[k][2],
                                      "model.conv=3,4",
                                      "model.kernel=5",
                                      "model.fc=8",
                                      st,
                                      "strategy.micro_batches=4",
                                      sched ? "strategy.pipeline_schedule=1f1b"
                                            : "strategy.pipeline_schedule=gpipe"};
                float *got = NULL;
                outcome_t b = simulate(sets, 10, &got);
                ck_assert_msg(b.samples == a.samples, "samples %g and %g", b.samples, a.samples);
                double d = max_rel_diff(got, ref, a.n_params);
                ck_assert_msg(d < 2e-5, "%s, %d stages, %s: max relative difference %g",
                              models[k][0], S, sched ? "1f1b" : "gpipe", d);
                ck_assert_msg(S == 1 || b.bytes > 0, "no activations moved");
                free(got);
            }
        free(ref);
    }
}
END_TEST

/* The pipeline bubble: with stages of (nearly) equal FLOPs and messages that take no time,
 * the stages idle (S-1)/(M+S-1) of the run, under both schedules. A wide mlp on narrow
 * inputs: 7 dense layers 8-256-...-256 in 3 stages of 2 x 256 x 256 each (the first one's
 * 8 x 256 layer and the loss leave them within 2% of each other): within half a point. */
START_TEST(pipeline_bubble_matches_formula)
{
    static const int Ms[] = {2, 6, 12};
    for (int k = 0; k < 3; k++)
        for (int sched = 0; sched < 2; sched++) {
            char mb[64], batch[64];
            snprintf(mb, sizeof mb, "strategy.micro_batches=%d", Ms[k]);
            snprintf(batch, sizeof batch, "model.batch=%d", 8 * Ms[k]);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=3",
                                  mb,
                                  batch,
                                  "data.synthetic_dim=8",
                                  "data.synthetic_classes=256",
                                  "model.hidden=256,256,256,256,256,256",
                                  "run.steps=4",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=100000Gbps",
                                  "cluster.latency=0",
                                  "cluster.device_flops=1Gf",
                                  sched ? "strategy.pipeline_schedule=1f1b"
                                        : "strategy.pipeline_schedule=gpipe"};
            outcome_t o = simulate(sets, 14, NULL);
            double want = 2.0 / (Ms[k] + 2.0);
            /* seen: within 0.0004 at M = 2, 0.0022 at 6, 0.0035 at 12 (the 2% imbalance
             * of the stages idles the faster ones a little more with every micro-batch) */
            ck_assert_msg(fabs(o.idle_share - want) <= 0.005,
                          "M=%d %s: idle share %.5f, (S-1)/(M+S-1) = %.5f", Ms[k],
                          sched ? "1f1b" : "gpipe", o.idle_share, want);
        }
}
END_TEST

/* Writes a model profile to a file of this process and the --set that selects it. */
static void profile_file(char *path, size_t path_n, char *arch, size_t arch_n, const char *text)
{
    static int n;
    snprintf(path, path_n, "/tmp/dtsim-test-profile-%d-%d.ini", (int)getpid(), n++);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(arch, arch_n, "model.arch=profile:%s", path);
}

/* Expert parallelism on a star (1 Gbps, 10 us links, CM02 without cross traffic: a step of
 * b bytes between two hosts takes ALPHA + b / BW): one stage, D replicas, one micro-batch of
 * 2 samples, a profile of a dense layer, a routed layer of 4 experts (4000 parameters, each
 * of its all-to-alls 1000 elements a sample) and a dense layer, FLOPs negligible. A step is
 * the MoE block's 2 all-to-alls forward and 2 backward, E - 1 steps of one block of 2000 / E
 * floats each, then the ring all-reduce of the dense parameters over the D replicas and of
 * the member's 4000 / E expert parameters over the D / E replicas holding them; the same as
 * messages and in closed form (tensor_comm = formula), and the bytes by hand. With tensor
 * groups of 2 (the first layer split by columns, no all-reduce of its own) each member
 * runs its all-to-alls in its own expert group at once, on its own link. */
START_TEST(expert_alltoall_matches_hand_count)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 4200\nforward_flops = 3\n"
                 "[backward]\ntop = 100 2\nmoe = 4000 2\nbottom = 100 2\n"
                 "[forward]\nbottom = 1 10\nmoe = 1 10\ntop = 1 10\n"
                 "[tensor]\nbottom = column\n[experts]\nmoe = 4 2 1000\n");
    const double vb = 4, per_sample = 1000, b = 2;
    static const int cases[][3] = {{2, 4, 1}, {4, 4, 1}, {2, 2, 2}}; /* E, D, T */
    for (int c = 0; c < 3; c++)
        for (int formula = 0; formula < 2; formula++) {
            int E = cases[c][0], T = cases[c][2];
            double D = cases[c][1];
            char ex[64], dp[64], tp[64], workers[64];
            snprintf(ex, sizeof ex, "strategy.expert=%d", E);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%d", cases[c][1]);
            snprintf(tp, sizeof tp, "strategy.tensor=%d", T);
            snprintf(workers, sizeof workers, "cluster.workers=%d", cases[c][1] * T);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=1",
                                  "model.batch=2",
                                  arch,
                                  "run.steps=1",
                                  workers,
                                  dp,
                                  ex,
                                  tp,
                                  formula ? "strategy.tensor_comm=formula"
                                          : "strategy.tensor_comm=messages",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1000000Pf"};
            outcome_t o = simulate(sets, 16, NULL);
            ck_assert(o.timing_only);
            double block = per_sample * b / E * vb; /* bytes a member sends each peer */
            double a2a = 4 * (E - 1) * (ALPHA + block / BW);
            double dense = 100 + 100 / T, experts = 4000 / E, Dx = D / E;
            double ring = 2 * (D - 1) * ALPHA + 2 * (D - 1) / D * dense * vb / BW;
            if (Dx > 1)
                ring += 2 * (Dx - 1) * ALPHA + 2 * (Dx - 1) / Dx * experts * vb / BW;
            expect_close(formula ? "all-to-all by formula" : "all-to-all as messages", E,
                         (size_t)block, o.end_time, a2a + ring);
            double bytes = D * T *
                           (4 * (E - 1) * block + 2 * (D - 1) / D * dense * vb +
                            (Dx > 1 ? 2 * (Dx - 1) / Dx * experts * vb : 0));
            ck_assert_msg(fabs(o.bytes - bytes) <= 1e-9 * bytes, "E=%d: %.0f bytes, want %.0f", E,
                          o.bytes, bytes);
            ck_assert_msg(o.mem0[0] == (dense + experts) * vb, "E=%d: parameters %g", E, o.mem0[0]);
            ck_assert_msg(
                strstr(o.summary, formula ? "all-to-alls by formula" : "all-to-alls as messages"),
                "%s", o.summary);
        }
    /* strategy.expert_imbalance: the routed layer's FLOPs (3e6 a sample forward and
     * backward, 2 samples at 1 GFLOP/s: 6 ms) times the factor, on every member */
    char path2[256], arch2[300];
    profile_file(path2, sizeof path2, arch2, sizeof arch2,
                 "[profile]\nparams = 4200\nforward_flops = 1000002\n"
                 "[backward]\ntop = 100 2\nmoe = 4000 2e6\nbottom = 100 2\n"
                 "[forward]\nbottom = 1 10\nmoe = 1e6 10\ntop = 1 10\n"
                 "[experts]\nmoe = 4 2 1000\n");
    double step[2];
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              "strategy.micro_batches=1",
                              "model.batch=2",
                              arch2,
                              "run.steps=1",
                              "cluster.workers=4",
                              "strategy.data_parallel=4",
                              "strategy.expert=2",
                              "strategy.tensor_comm=formula",
                              k ? "strategy.expert_imbalance=2.5" : "strategy.expert_imbalance=1",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "cluster.device_flops=1Gf"};
        step[k] = simulate(sets, 16, NULL).end_time;
    }
    ck_assert_msg(fabs(step[1] - step[0] - 1.5 * 6e-3) <= 1e-9, "imbalance adds %.9g s, want %g",
                  step[1] - step[0], 1.5 * 6e-3);
    unlink(path2);
    /* its errors name the key */
    static const struct {
        const char *set, *needle;
    } bad[] = {
        {"strategy.expert=3", "strategy.expert: expert = 3 groups the replicas: it must divide "
                              "data_parallel = 4"},
        {"strategy.expert=8", "expert = 8 groups the replicas"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *sets[] = {"strategy.kind=pipeline", "strategy.stages=1",        arch,
                              "cluster.workers=4",      "strategy.data_parallel=4", bad[i].set};
        scenario_t sc;
        dt_err_t err = {{0}};
        scenario_defaults(&sc);
        int failed = 0;
        for (int k = 0; k < 6 && !failed; k++)
            failed = scenario_set(&sc, sets[k], &err) != DT_OK;
        if (!failed)
            failed = scenario_validate(&sc, &err) != DT_OK;
        ck_assert_msg(failed && strstr(err.msg, bad[i].needle), "%s: got %s", bad[i].set, err.msg);
    }
    const char *dense[] = {"strategy.kind=pipeline",   "model.arch=profile:gpt2_xl",
                           "strategy.stages=1",        "cluster.workers=2",
                           "strategy.data_parallel=2", "strategy.expert=2"};
    scenario_t sc;
    dt_err_t err = {{0}};
    scenario_defaults(&sc);
    for (int k = 0; k < 6; k++)
        ck_assert_int_eq(scenario_set(&sc, dense[k], &err), DT_OK);
    ck_assert_int_eq(scenario_validate(&sc, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "strategy.expert: expert = 2 splits the routed experts of a "
                                  "model profile with an [experts] section"),
                  "%s", err.msg);
    unlink(path);
}
END_TEST

/* DeepSeek-V3's all-to-alls (expert_overlap, expert_nodes, expert_dispatch), by hand on the
 * star of expert_alltoall_matches_hand_count: one stage, 4 replicas in one expert group of
 * E = 4, 2 micro-batches of one sample, the routed layer 1e6 FLOPs a sample forward and 2e6
 * backward, top 2 of 4 experts, 1000 elements an all-to-all. An all-to-all takes
 * 3 (ALPHA + 1000 B / BW), its dispatch half in FP8 3 (ALPHA + 250 B / BW); with each token to
 * at most n of 2 servers of 2 members, one shift of 1000 / 2 x n / 2 values. Against the run
 * without them (the rest of the step, the all-reduce and the update, is the same):
 * - overlap, 1F1B: each micro-batch's forward pass pairs with its backward pass, the pair
 *   taking max(c, m) for compute c = cF + cB and all-to-alls m = mF + mB: the step is
 *   2 (c + m - max(c, m)) = 2 min(c, m) shorter, at three device speeds (compute-bound, between,
 *   all-to-all-bound);
 * - overlap, GPipe (F1 F2 B2 B1): only F2 and B2 pair, min(c, m) once;
 * - nodes and FP8: the step shorter by the all-to-alls' difference, the bytes by theirs. */
static outcome_t deepseek_run(const char *arch, const char *speed, const char *schedule,
                              const char *extra)
{
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=1",
                          "strategy.micro_batches=2",
                          "model.batch=2",
                          arch,
                          "run.steps=1",
                          "cluster.workers=4",
                          "strategy.data_parallel=4",
                          "strategy.expert=4",
                          "strategy.tensor_comm=formula",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=1Gbps",
                          "cluster.latency=10us",
                          "strategy.expert_node_size=2",
                          speed,
                          schedule,
                          extra};
    return simulate(sets, 18, NULL);
}

START_TEST(expert_overlap_nodes_and_fp8_by_hand)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 4200\nforward_flops = 1000002\n"
                 "[backward]\ntop = 100 2\nmoe = 4000 2e6\nbottom = 100 2\n"
                 "[forward]\nbottom = 1 10\nmoe = 1e6 10\ntop = 1 10\n"
                 "[tensor]\nbottom = column\n[experts]\nmoe = 4 2 1000\n");
    const double vb = 4, a2a = 3 * (ALPHA + 250 * vb / BW);
    const double m = 4 * a2a; /* dispatch and combine, forward and backward */
    static const struct {
        const char *speed;
        double flops_per_s;
    } speeds[] = {{"cluster.device_flops=1Gf", 1e9},
                  {"cluster.device_flops=10Gf", 1e10},
                  {"cluster.device_flops=1000000Pf", 1e21}};
    for (int k = 0; k < 3; k++) {
        double c = (1000002.0 + 2000004.0) / speeds[k].flops_per_s, hidden = c < m ? c : m;
        for (int gpipe = 0; gpipe < 2; gpipe++) {
            const char *sched =
                gpipe ? "strategy.pipeline_schedule=gpipe" : "strategy.pipeline_schedule=1f1b";
            outcome_t off =
                deepseek_run(arch, speeds[k].speed, sched, "strategy.expert_overlap=no");
            outcome_t on =
                deepseek_run(arch, speeds[k].speed, sched, "strategy.expert_overlap=yes");
            double want = (gpipe ? 1 : 2) * hidden;
            ck_assert_msg(fabs(off.end_time - on.end_time - want) <= 1e-9,
                          "%s, %s: overlap saves %.9g s, want %.9g (c %g, m %g)", speeds[k].speed,
                          sched, off.end_time - on.end_time, want, c, m);
            ck_assert_msg(on.bytes == off.bytes, "overlap moved other bytes");
            ck_assert_msg(strstr(on.summary, "expert_overlap, DualPipe"), "%s", on.summary);
        }
    }
    /* node-limited routing and FP8 dispatch, all-to-alls in series */
    const char *fast = "cluster.device_flops=1000000Pf", *sched = "strategy.pipeline_schedule=1f1b";
    outcome_t plain = deepseek_run(arch, fast, sched, "strategy.expert_nodes=0");
    const struct { /* not static: a2a is computed above */
        const char *set;
        double a2a_d, a2a_c, sent_d, sent_c; /* each all-to-all's seconds and bytes sent */
    } cases[] = {
        {"strategy.expert_dispatch=fp8", 3 * (ALPHA + 250 / BW), a2a, 750, 3000},
        {"strategy.expert_nodes=1", ALPHA + 1000 / BW, ALPHA + 1000 / BW, 1000, 1000},
        {"strategy.expert_nodes=2", ALPHA + 2000 / BW, ALPHA + 2000 / BW, 2000, 2000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        outcome_t o = deepseek_run(arch, fast, sched, cases[i].set);
        /* 2 micro-batches x (forward + backward): 4 dispatches and 4 combines */
        double saved = 4 * (2 * a2a - cases[i].a2a_d - cases[i].a2a_c);
        ck_assert_msg(fabs(plain.end_time - o.end_time - saved) <= 1e-9,
                      "%s: %.9g s shorter, want %.9g", cases[i].set, plain.end_time - o.end_time,
                      saved);
        double fewer = 4 * 4 * (2 * 3000 - cases[i].sent_d - cases[i].sent_c);
        ck_assert_msg(fabs(plain.bytes - o.bytes - fewer) <= 1e-6,
                      "%s: %.0f bytes fewer, want %.0f", cases[i].set, plain.bytes - o.bytes,
                      fewer);
    }
    /* errors name their key */
    static const struct {
        const char *set[2], *needle;
    } bad[] = {
        {{"strategy.expert_overlap=yes", "strategy.tensor_comm=messages"},
         "expert_overlap changes expert parallelism's all-to-alls in closed form"},
        {{"strategy.expert_nodes=3", "strategy.expert_node_size=2"},
         "strategy.expert_nodes: expert_nodes = 3: a token can reach at most the 2 servers"},
        {{"strategy.expert_nodes=1", "strategy.expert_node_size=3"},
         "expert_node_size = 3 does not divide expert = 4"},
        {{"strategy.expert_overlap=yes", "strategy.tensor=2"},
         "expert_overlap with tensor = 2 is not modelled"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              arch,
                              "cluster.workers=4",
                              "strategy.data_parallel=4",
                              "strategy.expert=4",
                              "strategy.tensor_comm=formula",
                              bad[i].set[0],
                              bad[i].set[1]};
        scenario_t sc;
        dt_err_t err = {{0}};
        scenario_defaults(&sc);
        int failed = 0;
        for (int k = 0; k < 9 && !failed; k++)
            failed = scenario_set(&sc, sets[k], &err) != DT_OK;
        if (!failed)
            failed = scenario_validate(&sc, &err) != DT_OK;
        ck_assert_msg(failed && strstr(err.msg, bad[i].needle), "%s: got %s", bad[i].set[0],
                      err.msg);
    }
    unlink(path);
}
END_TEST

/* expert_comm_sms: the all-to-alls of an overlapped pair hold that share phi of the
 * device's multiprocessors while they run, the pair taking max(m, c + phi m). On the run of
 * expert_overlap_nodes_and_fp8_by_hand with a device file of 100 multiprocessors at fp32
 * (its speed the device_flops): 1F1B's 2 pairs save 2 (c + m - max(m, c + phi m)) against
 * no overlap; with phi = 20 / 100, compute-bound (10 GFLOP/s: c = 300 us over m = 216 us)
 * that is less than 2 min(c, m), all-to-all-bound (100 GFLOP/s: c + phi m < m) the same. */
START_TEST(expert_comm_sms_by_hand)
{
    char path[256], arch[300], dev[256], device[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 4200\nforward_flops = 1000002\n"
                 "[backward]\ntop = 100 2\nmoe = 4000 2e6\nbottom = 100 2\n"
                 "[forward]\nbottom = 1 10\nmoe = 1e6 10\ntop = 1 10\n"
                 "[tensor]\nbottom = column\n[experts]\nmoe = 4 2 1000\n");
    const double m = 4 * 3 * (ALPHA + 250 * 4 / BW), phi = 20.0 / 100;
    static const double speeds[] = {1e10, 1e11};
    for (int k = 0; k < 2; k++) {
        snprintf(dev, sizeof dev, "/tmp/dtsim-test-device-%d-%d.ini", (int)getpid(), k);
        FILE *f = fopen(dev, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f,
                "[device]\nname = hundred SMs\nfp32 = %gf\nefficiency = 1\nsms = 100\n"
                "memory_bandwidth = 1TBps\ngemm_efficiency = 1\nattention_efficiency = 1\n"
                "memory_efficiency = 1\n",
                speeds[k]);
        ck_assert_int_eq(fclose(f), 0);
        snprintf(device, sizeof device, "cluster.device=%s", dev);
        double c = (1000002.0 + 2000004.0) / speeds[k];
        double pair = m > c + phi * m ? m : c + phi * m;
        outcome_t off = deepseek_run(arch, device, "strategy.pipeline_schedule=1f1b",
                                     "strategy.expert_overlap=no");
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              "strategy.micro_batches=2",
                              "model.batch=2",
                              arch,
                              "run.steps=1",
                              "cluster.workers=4",
                              "strategy.data_parallel=4",
                              "strategy.expert=4",
                              "strategy.tensor_comm=formula",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "strategy.expert_node_size=2",
                              device,
                              "strategy.pipeline_schedule=1f1b",
                              "strategy.expert_overlap=yes",
                              "strategy.expert_comm_sms=20"};
        outcome_t on = simulate(sets, 19, NULL);
        double want = 2 * (c + m - pair);
        ck_assert_msg(fabs(off.end_time - on.end_time - want) <= 1e-9,
                      "%g FLOP/s: overlap with 20 of 100 SMs saves %.9g s, want %.9g (c %g, "
                      "m %g)",
                      speeds[k], off.end_time - on.end_time, want, c, m);
        ck_assert(k == 1 ? want == 2 * c : want < 2 * (c < m ? c : m) - 1e-6);
        ck_assert_msg(strstr(on.summary, "80% of the multiprocessors"), "%s", on.summary);
        unlink(dev);
    }
    /* errors name their key: without the overlap, on a device without sms */
    static const struct {
        const char *set[2], *needle;
    } bad[] = {
        {{"strategy.expert_comm_sms=20", "strategy.expert_overlap=no"},
         "strategy.expert_comm_sms: expert_comm_sms = 20: the SMs all-to-alls hold beside "
         "compute, which needs expert_overlap = yes"},
        {{"strategy.expert_comm_sms=20", "strategy.expert_overlap=yes"},
         "expert_comm_sms = 20 must be fewer than the device's sms (custom: none given"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              arch,
                              "cluster.workers=4",
                              "strategy.data_parallel=4",
                              "strategy.expert=4",
                              "strategy.tensor_comm=formula",
                              "cluster.device_flops=1Gf",
                              bad[i].set[0],
                              bad[i].set[1]};
        scenario_t sc;
        dt_err_t err = {{0}};
        scenario_defaults(&sc);
        int failed = 0;
        for (int k = 0; k < 10 && !failed; k++)
            failed = scenario_set(&sc, sets[k], &err) != DT_OK;
        if (!failed)
            failed = scenario_validate(&sc, &err) != DT_OK;
        ck_assert_msg(failed && strstr(err.msg, bad[i].needle), "%s: got %s", bad[i].set[0],
                      err.msg);
    }
    unlink(path);
}
END_TEST

/* A timing-only pipeline (a model profile with a [forward] section): 4 equal layers, each a
 * place to cut, in 4 stages, 3 micro-batches of 2, free messages. Each stage's forward
 * takes 2 x 1e6 FLOPs / 1 GFLOP/s = 2 ms, its backward 4 ms, so a step takes
 * (M+S-1)(2 + 4) ms under both schedules and the stages idle (S-1)/(M+S-1) = 1/2 of it,
 * exactly; every micro-batch sends 20 floats per sample across each of the 3 cuts and
 * back; stage 0 keeps 50 floats per sample of its 3 micro-batches in flight. With 2
 * replicas (hybrid) the stages add a ring all-reduce of their 100 parameters per step. */
START_TEST(timing_only_pipeline_is_exact)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 400\nforward_flops = 4e6\n"
                 "[backward]\nd = 100 2e6\nc = 100 2e6\nb = 100 2e6\na = 100 2e6\n"
                 "[forward]\na = 1e6 50 20\nb = 1e6 50 20\nc = 1e6 50 20\nd = 1e6 50\n");
    for (int sched = 0; sched < 2; sched++)
        for (int D = 1; D <= 2; D++) {
            char workers[64], dp[64];
            snprintf(workers, sizeof workers, "cluster.workers=%d", 4 * D);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%d", D);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=4",
                                  "strategy.micro_batches=3",
                                  "model.batch=6",
                                  arch,
                                  "run.steps=3",
                                  workers,
                                  dp,
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=100000Gbps",
                                  "cluster.latency=0",
                                  "cluster.device_flops=1Gf",
                                  sched ? "strategy.pipeline_schedule=1f1b"
                                        : "strategy.pipeline_schedule=gpipe"};
            outcome_t o = simulate(sets, 14, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            ck_assert(o.timing_only);
            double sends = 3.0 * D * 3 * 3 * 2 * 2 * 20 * 4; /* steps, D, M, cuts, ways */
            double reduce = 3.0 * 2 * (D - 1) * 400 * 4;     /* ring: 2 (D-1)/D n per member */
            double bytes = o.bytes - sends - reduce;         /* what the STOPs add */
            ck_assert_msg(bytes >= 0 && bytes <= 64.0 * 3 * D, "bytes %.0f, want %.0f + STOPs",
                          o.bytes, sends + reduce);
            ck_assert_msg(o.mem0[3] == 3 * 2 * 50 * 4, "stage 0 activations %g", o.mem0[3]);
            ck_assert_msg(o.mem0[0] == 100 * 4, "stage 0 parameters %g", o.mem0[0]);
            if (D > 1)
                continue; /* the all-reduce takes a little time */
            /* the 6 messages on a step's critical path take 160 B / 12.5 TB/s each */
            double want = 3 * (3 + 4 - 1) * 6e-3;
            ck_assert_msg(fabs(o.end_time - want) <= 1e-8 * want, "%s: %.12g s, want %.12g s",
                          sched ? "1f1b" : "gpipe", o.end_time, want);
            ck_assert_msg(fabs(o.idle_share - 0.5) <= 1e-8, "idle %.12f", o.idle_share);
        }
    unlink(path);
}
END_TEST

/* ---- Megatron-LM's interleaved 1F1B (pipeline_schedule = interleaved, virtual_stages) ---- */

/* A profile of 24 equal layers (1 MFLOP forward, 2 backward per sample, 50 outputs kept),
 * each a place to cut (20 elements), into path. */
static void equal_layers_profile(char *path, size_t path_n, char *arch, size_t arch_n)
{
    char text[4096];
    int n =
        snprintf(text, sizeof text, "[profile]\nparams = 2400\nforward_flops = 24e6\n[backward]\n");
    for (int i = 23; i >= 0; i--)
        n += snprintf(text + n, sizeof text - (size_t)n, "l%d = 100 2e6\n", i);
    n += snprintf(text + n, sizeof text - (size_t)n, "[forward]\n");
    for (int i = 0; i < 24; i++)
        n +=
            snprintf(text + n, sizeof text - (size_t)n, "l%d = 1e6 50%s\n", i, i < 23 ? " 20" : "");
    profile_file(path, path_n, arch, arch_n, text);
}

/* The interleaved bubble: S stages of V equal chunks each (24 equal layers), free
 * messages, micro-batches of 2. A chunk's forward and backward take f = 24 / (S V) x 3e6 x
 * 2 FLOPs at 1 GFLOP/s, a step (V M + S - 1) f where the ideal is V M f, so the stages idle
 * (S-1)/(V M + S - 1): smaller than 1f1b's (S-1)/(M + S - 1) at the same S and M. Stage 0
 * holds its warm-up's (S-1) 2 + (V-1) S virtual micro-batches and the next one, at most the
 * M V of the step, each a chunk's 24 / (S V) x 50 values per sample. Under full
 * recomputation each backward pass re-runs its chunk's forward pass first: f grows by a
 * third. */
START_TEST(interleaved_bubble_matches_formula)
{
    char path[256], arch[300];
    equal_layers_profile(path, sizeof path, arch, sizeof arch);
    for (int S = 2; S <= 4; S += 2)
        for (int Mf = 1; Mf <= 2; Mf++) {
            int M = S * Mf;
            char st[64], mb[64], batch[64], sched[64], vs[64];
            snprintf(st, sizeof st, "strategy.stages=%d", S);
            snprintf(mb, sizeof mb, "strategy.micro_batches=%d", M);
            snprintf(batch, sizeof batch, "model.batch=%d", 2 * M);
            snprintf(sched, sizeof sched, "strategy.pipeline_schedule=1f1b");
            snprintf(vs, sizeof vs, "strategy.virtual_stages=1");
            const char *sets[] = {"strategy.kind=pipeline",
                                  st,
                                  mb,
                                  batch,
                                  arch,
                                  "run.steps=3",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=100000Gbps",
                                  "cluster.latency=0",
                                  "cluster.device_flops=1Gf",
                                  sched,
                                  vs,
                                  "model.recompute=none"};
            outcome_t plain = simulate(sets, 14, NULL);
            snprintf(sched, sizeof sched, "strategy.pipeline_schedule=interleaved");
            /* interleaved with one chunk a stage is 1f1b, to the digit */
            outcome_t one = simulate(sets, 14, NULL);
            ck_assert_msg(one.end_time == plain.end_time && one.bytes == plain.bytes,
                          "S=%d M=%d: V=1 %.12g s, 1f1b %.12g s", S, M, one.end_time,
                          plain.end_time);
            for (int V = 2; V <= 3; V++) {
                snprintf(vs, sizeof vs, "strategy.virtual_stages=%d", V);
                sets[13] = "model.recompute=none";
                outcome_t o = simulate(sets, 14, NULL);
                double want = (S - 1.0) / (V * M + S - 1.0);
                ck_assert_msg(fabs(o.idle_share - want) <= 1e-6,
                              "S=%d V=%d M=%d: idle share %.6f, (S-1)/(V M+S-1) = %.6f", S, V, M,
                              o.idle_share, want);
                ck_assert_msg(o.idle_share < plain.idle_share, "S=%d V=%d M=%d: %.4f, 1f1b %.4f", S,
                              V, M, o.idle_share, plain.idle_share);
                double f = 24.0 / (S * V) * 3e6 * 2 / 1e9;
                double step = (V * M + S - 1) * f;
                ck_assert_msg(fabs(o.end_time - 3 * step) <= 1e-6 * step,
                              "S=%d V=%d M=%d: "
                              "%.9g s, want %.9g s",
                              S, V, M, o.end_time, 3 * step);
                int held = (S - 1) * 2 + (V - 1) * S + 1;
                held = held < M * V ? held : M * V;
                ck_assert_msg(o.mem0[3] == held * 24.0 / (S * V) * 50 * 2 * 4,
                              "S=%d V=%d M=%d: stage 0 activations %g, want %d chunks'", S, V, M,
                              o.mem0[3], held);
                ck_assert_msg(o.mem0[0] == 2400.0 / S * 4, "stage 0 parameters %g", o.mem0[0]);
                /* every micro-batch crosses S V - 1 cuts each way, not S - 1 */
                double cuts = 3.0 * M * (S * V - 1) * 2 * 2 * 20 * 4;
                ck_assert_msg(o.bytes >= cuts && o.bytes <= cuts + 64.0 * 3,
                              "bytes %.0f, want "
                              "%.0f + STOPs",
                              o.bytes, cuts);
                sets[13] = "model.recompute=full";
                o = simulate(sets, 14, NULL);
                step = (V * M + S - 1) * f * 4 / 3;
                ck_assert_msg(fabs(o.end_time - 3 * step) <= 1e-6 * step,
                              "S=%d V=%d M=%d "
                              "recompute: %.9g s, want %.9g s",
                              S, V, M, o.end_time, 3 * step);
            }
        }
    unlink(path);
}
END_TEST

/* On real models the interleaved pipeline trains what one worker with the whole batch
 * trains: an mlp of 6 dense layers in 2 x 2, 2 x 3 and 3 x 2 chunks, the cnn's 4 weight
 * layers in 2 x 2; 2 replicas of 2 x 2 with a plain all-reduce, buckets of a layer or so
 * (the same weights to the bit), ZeRO-1 and ZeRO-2. With the cnn on a 10 Gb/s star,
 * interleaved with V = 1 is 1f1b's run, time and weights. */
START_TEST(interleaved_equals_single)
{
    static const int SV[][2] = {{2, 2}, {2, 3}, {3, 2}};
    const char *single[] = {"strategy.kind=single", "model.hidden=16,12,12,8,8", "model.batch=24"};
    float *ref = NULL;
    outcome_t a = simulate(single, 3, &ref);
    for (int k = 0; k < 3; k++) {
        char st[64], vs[64];
        snprintf(st, sizeof st, "strategy.stages=%d", SV[k][0]);
        snprintf(vs, sizeof vs, "strategy.virtual_stages=%d", SV[k][1]);
        const char *sets[] = {"strategy.kind=pipeline",
                              "model.hidden=16,12,12,8,8",
                              "model.batch=24",
                              st,
                              vs,
                              "strategy.micro_batches=6",
                              "strategy.pipeline_schedule=interleaved"};
        float *got = NULL;
        outcome_t b = simulate(sets, 7, &got);
        ck_assert_msg(b.samples == a.samples, "samples %g and %g", b.samples, a.samples);
        double d = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(d < 2e-5, "S=%d V=%d: max relative difference %g", SV[k][0], SV[k][1], d);
        free(got);
    }
    free(ref);

    const char *cnn_single[] = {"strategy.kind=single",
                                "model.arch=cnn",
                                "data.source=fashion-mnist",
                                "model.batch=24",
                                "model.conv=3,4",
                                "model.kernel=5",
                                "model.fc=8"};
    a = simulate(cnn_single, 7, &ref);
    const char *cnn[] = {"strategy.kind=pipeline",
                         "model.arch=cnn",
                         "data.source=fashion-mnist",
                         "model.batch=24",
                         "model.conv=3,4",
                         "model.kernel=5",
                         "model.fc=8",
                         "strategy.stages=2",
                         "strategy.micro_batches=4",
                         "strategy.pipeline_schedule=interleaved",
                         "strategy.virtual_stages=2",
                         "cluster.bandwidth=10Gbps"};
    float *got = NULL;
    outcome_t b = simulate(cnn, 12, &got);
    double d = max_rel_diff(got, ref, a.n_params);
    ck_assert_msg(d < 2e-5, "cnn 2 x 2: max relative difference %g", d);
    free(got);
    free(ref);
    cnn[10] = "strategy.virtual_stages=1";
    float *one_w = NULL, *f1b_w = NULL;
    outcome_t one = simulate(cnn, 12, &one_w);
    cnn[9] = "strategy.pipeline_schedule=1f1b";
    outcome_t f1b = simulate(cnn, 12, &f1b_w);
    ck_assert_msg(one.end_time == f1b.end_time && !memcmp(one_w, f1b_w, sizeof(float) * a.n_params),
                  "cnn: interleaved V=1 %.12g s, 1f1b %.12g s", one.end_time, f1b.end_time);
    ck_assert_msg(b.bytes > f1b.bytes, "cnn: interleaved %.0f bytes, 1f1b %.0f", b.bytes,
                  f1b.bytes);
    free(one_w);
    free(f1b_w);

    /* 2 replicas of 2 stages of 2 chunks: the mlp's 4 dense layers, one a chunk */
    const char *hsingle[] = {"strategy.kind=single", "model.hidden=16,12,12", "model.batch=48"};
    a = simulate(hsingle, 3, &ref);
    const char *hy[] = {"strategy.kind=pipeline",
                        "model.hidden=16,12,12",
                        "model.batch=24",
                        "strategy.stages=2",
                        "strategy.virtual_stages=2",
                        "strategy.micro_batches=4",
                        "strategy.pipeline_schedule=interleaved",
                        "strategy.data_parallel=2",
                        "strategy.algorithm=ring",
                        "strategy.bucket_mb=0",
                        "strategy.shard_optimizer=no",
                        "strategy.zero_stage=1"};
    static const char *const variants[][3] = {
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=no", "strategy.zero_stage=1"},
        {"strategy.bucket_mb=0.0003", "strategy.shard_optimizer=no", "strategy.zero_stage=1"},
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=yes", "strategy.zero_stage=1"},
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=yes", "strategy.zero_stage=2"}};
    float *plain = NULL;
    for (int k = 0; k < 4; k++) {
        memcpy(&hy[9], variants[k], sizeof variants[k]);
        b = simulate(hy, 12, &got);
        ck_assert_msg(b.samples == a.samples, "samples %g and %g", b.samples, a.samples);
        d = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(d < 2e-5, "2 replicas, %s %s %s: max relative difference %g", hy[9], hy[10],
                      hy[11], d);
        if (k == 1)
            ck_assert_msg(!memcmp(got, plain, sizeof(float) * a.n_params),
                          "buckets change the weights");
        if (k == 0)
            plain = got;
        else
            free(got);
    }
    free(plain);
    free(ref);
}
END_TEST

/* Two transformer blocks (tp_block twice), cut after each attention and each MLP (64
 * elements a sample): 4 pieces. */
static const char *const tp_two_blocks =
    "[profile]\nparams = 2416\nforward_flops = 30e6\n"
    "[backward]\nb.mlp.c_proj = 400 8e6\nb.mlp.c_fc = 400 8e6\nb.ln = 8 2e6\n"
    "b.attn.c_proj = 100 2e6\nb.attn.scores = 0 4e6\nb.attn.c_attn = 300 6e6\n"
    "a.mlp.c_proj = 400 8e6\na.mlp.c_fc = 400 8e6\na.ln = 8 2e6\n"
    "a.attn.c_proj = 100 2e6\na.attn.scores = 0 4e6\na.attn.c_attn = 300 6e6\n"
    "[forward]\na.attn.c_attn = 3e6 192\na.attn.scores = 2e6 64\n"
    "a.attn.c_proj = 1e6 64 64\na.ln = 1e6 64\na.mlp.c_fc = 4e6 256\n"
    "a.mlp.c_proj = 4e6 64 64\n"
    "b.attn.c_attn = 3e6 192\nb.attn.scores = 2e6 64\n"
    "b.attn.c_proj = 1e6 64 64\nb.ln = 1e6 64\nb.mlp.c_fc = 4e6 256\n"
    "b.mlp.c_proj = 4e6 64\n"
    "[tensor]\na.attn.c_attn = column 64\na.attn.scores = heads\n"
    "a.attn.c_proj = row 64\na.mlp.c_fc = column 64\na.mlp.c_proj = row 64\n"
    "b.attn.c_attn = column 64\nb.attn.scores = heads\n"
    "b.attn.c_proj = row 64\nb.mlp.c_fc = column 64\nb.mlp.c_proj = row 64\n";

/* Tensor groups of 2 in an interleaved pipeline of 2 x 2 chunks: two transformer blocks (the
 * tensor test's block twice), cut after each attention and each MLP (64 elements a sample).
 * The tensor all-reduces are the same as 1f1b's on 2 stages; the messages between stages
 * cross 3 cuts per micro-batch instead of 1, each way, from each member. (Not faster here:
 * its chunks, an attention and an MLP, are 6 and 9 MFLOP, where 1f1b's stages are a block
 * each.) */
START_TEST(interleaved_tensor_groups_move_their_cuts)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_two_blocks);
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=2",
                          "strategy.tensor=2",
                          "cluster.workers=4",
                          "strategy.micro_batches=4",
                          "model.batch=8",
                          arch,
                          "run.steps=2",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=100000Gbps",
                          "cluster.latency=0",
                          "cluster.device_flops=1Gf",
                          "strategy.pipeline_schedule=1f1b",
                          "strategy.virtual_stages=1"};
    outcome_t f1b = simulate(sets, 15, NULL);
    sets[13] = "strategy.pipeline_schedule=interleaved";
    sets[14] = "strategy.virtual_stages=2";
    outcome_t il = simulate(sets, 15, NULL);
    unlink(path);
    ck_assert(il.timing_only);
    /* steps x micro-batches x 2 more cuts x 2 ways x 2 members x 2 samples x 64 x 4 bytes */
    double extra = 2.0 * 4 * 2 * 2 * 2 * 2 * 64 * 4;
    ck_assert_msg(il.bytes == f1b.bytes + extra, "interleaved %.0f bytes, want 1f1b's %.0f + %.0f",
                  il.bytes, f1b.bytes, extra);
}
END_TEST

/* Hybrid: a stage all-reduces its gradients while the stages below go on with their
 * backward passes. A profile of 4 equal stages (2 ms forward, 4 ms backward per
 * micro-batch, GPipe, M = 3) whose parameters all sit on the last stage, 2 replicas on a
 * 2.5 Mb/s star: the last stage's all-reduce (about 5 ms, 2 x 800 bytes each way) hides
 * behind the 12 ms of backward passes below it, so a step takes (M+S-1)(2 + 4) = 36 ms plus
 * the one-float activation messages (25.6 us each, 6 on the path) and what the all-reduce
 * takes from their links: seen 36.5 ms; without the overlap 41.5 ms. */
START_TEST(hybrid_overlaps_the_gradient_all_reduce)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 400\nforward_flops = 4e6\n"
                 "[backward]\nd = 400 2e6\nc = 0 2e6\nb = 0 2e6\na = 0 2e6\n"
                 "[forward]\na = 1e6 50 1\nb = 1e6 50 1\nc = 1e6 50 1\nd = 1e6 50\n");
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=4",
                          "strategy.micro_batches=3",
                          "model.batch=6",
                          arch,
                          "run.steps=3",
                          "cluster.workers=8",
                          "strategy.data_parallel=2",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=2.5Mbps",
                          "cluster.latency=0",
                          "cluster.device_flops=1Gf",
                          "strategy.pipeline_schedule=gpipe"};
    outcome_t o = simulate(sets, 14, NULL);
    unlink(path);
    ck_assert_msg(o.ok, "%s", o.err);
    double step = o.end_time / 3;
    ck_assert_msg(step > 36e-3 && step < 37.5e-3,
                  "%.6f s per step (36 ms + messages; 41.5 ms "
                  "without the overlap)",
                  step);
}
END_TEST

/* Gradient buckets in a hybrid (strategy.bucket_mb): 2 replicas of a one-stage pipeline of 4
 * equal layers (400-byte gradients, forward 1 ms and backward 2 ms per layer and sample at 1
 * GFLOP/s), 2 micro-batches of 1, alpha-beta network. Only the step's last backward pass
 * reduces: bucket k (of 1 or 2 layers) is ready after its layers' backward at t_k, and the
 * stream all-reduces in order, ending at e_k = max(t_k, e_(k-1)) + 2 alpha + bytes/BW (a
 * ring of 2); the step ends with the last bucket. At 10 Mb/s every bucket but the last hides
 * behind the backward pass; at 1 Mb/s (3.24 ms a layer) they queue. Without buckets: one
 * all-reduce of 1600 bytes after the backward pass. */
START_TEST(hybrid_buckets_overlap_the_last_backward)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 400\nforward_flops = 4e6\n"
                 "[backward]\nd = 100 2e6\nc = 100 2e6\nb = 100 2e6\na = 100 2e6\n"
                 "[forward]\na = 1e6 50 20\nb = 1e6 50 20\nc = 1e6 50 20\nd = 1e6 50\n");
    static const char *const bws[] = {"cluster.bandwidth=10Mbps", "cluster.bandwidth=1Mbps"};
    static const double bw[] = {1.25e6, 1.25e5};
    static const char *const caps[] = {"strategy.bucket_mb=0", "strategy.bucket_mb=0.0004",
                                       "strategy.bucket_mb=0.0008"};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 3; c++) {
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.data_parallel=2",
                                  "cluster.workers=2",
                                  "strategy.micro_batches=2",
                                  "model.batch=2",
                                  arch,
                                  "run.steps=2",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1Gf",
                                  bws[k],
                                  caps[c]};
            outcome_t o = simulate(sets, 14, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            double F = 4e-3, f = 2e-3, t = 2 * F + 4 * f; /* the last backward's start */
            double end = t + 4 * f + ALPHA * 2 + 1600 / bw[k];
            if (c > 0) { /* layers per bucket */
                double e = 0;
                for (int b = 0; b < 4 / c; b++)
                    e = fmax(t + (b + 1) * c * f, e) + ALPHA * 2 + c * 400 / bw[k];
                end = e;
            }
            ck_assert_msg(fabs(o.end_time - 2 * end) <= 1e-6 * end, "%s %s: %.9g s, want %.9g s",
                          bws[k], caps[c], o.end_time, 2 * end);
        }
    unlink(path);
}
END_TEST

/* Tensor parallelism of a timing-only profile (strategy.tensor): one transformer block as
 * Megatron-LM splits it, 64 elements per sample between the layers (T x H), on T = 2 and 4
 * hosts with a free network. Each micro-batch moves 4 ring all-reduces of b x 64 floats
 * (after attn.c_proj and mlp.c_proj forward, after mlp.c_fc and attn.c_attn backward), 2
 * (T-1) b 64 x 4 bytes each over the group, and sequence parallelism's reduce-scatter +
 * all-gather the same; a member computes 1/T of the split layers and the whole of ln
 * (1/T of it too with sequence parallelism), holds 1/T of the split layers' parameters
 * and keeps 1/T of the split layers' outputs (row layers' whole, all-reduced, outputs
 * and ln's unless sequence parallelism splits them). */
static const char *const tp_block =
    "[profile]\nparams = 1208\nforward_flops = 15e6\n"
    "[backward]\nmlp.c_proj = 400 8e6\nmlp.c_fc = 400 8e6\nln = 8 2e6\n"
    "attn.c_proj = 100 2e6\nattn.scores = 0 4e6\nattn.c_attn = 300 6e6\n"
    "[forward]\nattn.c_attn = 3e6 192\nattn.scores = 2e6 64\nattn.c_proj = 1e6 64 1\n"
    "ln = 1e6 64\nmlp.c_fc = 4e6 256\nmlp.c_proj = 4e6 64\n"
    "[tensor]\nattn.c_attn = column 64\nattn.scores = heads\nattn.c_proj = row 64\n"
    "mlp.c_fc = column 64\nmlp.c_proj = row 64\n";

START_TEST(tensor_profile_bytes_flops_memory_exact)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    for (int T = 2; T <= 4; T += 2)
        for (int sp = 0; sp < 2; sp++) {
            char workers[64], tensor[64];
            snprintf(workers, sizeof workers, "cluster.workers=%d", T);
            snprintf(tensor, sizeof tensor, "strategy.tensor=%d", T);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=2",
                                  "model.batch=4",
                                  arch,
                                  "run.steps=3",
                                  workers,
                                  tensor,
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=100000Gbps",
                                  "cluster.latency=0",
                                  "cluster.device_flops=1Gf",
                                  sp ? "strategy.sequence_parallel=yes"
                                     : "strategy.sequence_parallel=no"};
            outcome_t o = simulate(sets, 14, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            ck_assert(o.timing_only);
            int b = 2, M = 2, steps = 3;
            double bytes = (double)steps * M * 4 * 2 * (T - 1) * b * 64 * 4;
            ck_assert_msg(o.bytes == bytes, "T=%d sp=%d: %.0f bytes, want %.0f", T, sp, o.bytes,
                          bytes);
            double ln = sp ? 1.0 / T : 1.0;              /* the replicated layer's share */
            double flops = (14e6 + 28e6) / T + 3e6 * ln; /* per sample, forward + backward */
            double want = steps * M * b * flops / 1e9;
            ck_assert_msg(fabs(o.end_time - want) <= 1e-6 * want,
                          "T=%d sp=%d: %.12g s, want "
                          "%.12g s",
                          T, sp, o.end_time, want);
            ck_assert_msg(o.mem0[0] == (1200.0 / T + 8) * 4, "T=%d params %g", T, o.mem0[0]);
            ck_assert(o.mem_params == T * o.mem0[0]);
            /* 1f1b, one stage: one micro-batch of 2 in flight */
            double kept = sp ? 704.0 / T : 512.0 / T + 192;
            ck_assert_msg(o.mem0[3] == kept * b * 4, "T=%d sp=%d activations %g, want %g", T, sp,
                          o.mem0[3], kept * b * 4);
        }
    unlink(path);
}
END_TEST

/* A stage's activations stay in flight while its tensor group's all-reduces cycle through
 * many message headers (GPipe: the first stage runs its forwards 10 times faster than the
 * second takes them): 2 stages of 4 row layers on tensor groups of 4, 16 micro-batches.
 * Every activation and gradient arrives as sent, and the bytes are the all-reduces' (8
 * layers x 16 micro-batches x 2 (T-1) x 16 floats per group) and the cut's (16 x 2 ways x
 * 4 members x 8 floats). */
START_TEST(tensor_stage_keeps_its_messages_in_flight)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 800\nforward_flops = 4.4e7\n"
                 "[backward]\nh = 100 2e7\ng = 100 2e7\nf = 100 2e7\ne = 100 2e7\n"
                 "d = 100 2e6\nc = 100 2e6\nb = 100 2e6\na = 100 2e6\n"
                 "[forward]\na = 1e6 16\nb = 1e6 16\nc = 1e6 16\nd = 1e6 16 8\ne = 1e7 16\n"
                 "f = 1e7 16\ng = 1e7 16\nh = 1e7 16\n"
                 "[tensor]\na = row 16\nb = row 16\nc = row 16\nd = row 16\ne = row 16\n"
                 "f = row 16\ng = row 16\nh = row 16\n");
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=2",
                          "strategy.micro_batches=16",
                          "model.batch=16",
                          arch,
                          "run.steps=2",
                          "cluster.workers=8",
                          "strategy.tensor=4",
                          "strategy.pipeline_schedule=gpipe",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=10Gbps",
                          "cluster.latency=10us",
                          "cluster.device_flops=1Gf"};
    outcome_t o = simulate(sets, 14, NULL);
    unlink(path);
    ck_assert_msg(o.ok, "%s", o.err);
    double reduce = 2.0 * 8 * 16 * 2 * 3 * 16 * 4; /* steps, layers, M, 2 (T-1), floats */
    double cut = 2.0 * 16 * 2 * 4 * 8 * 4;         /* steps, M, ways, members, floats */
    double stops = o.bytes - reduce - cut;
    ck_assert_msg(stops >= 0 && stops <= 64.0 * 4 * 2, "bytes %.0f, want %.0f + STOPs", o.bytes,
                  reduce + cut);
}
END_TEST

/* Tensor x pipeline x data, 2 x 2 x 2 on 8 hosts under alpha-beta (CM02 without cross
 * traffic, 1 Gb/s, 10 us a link): two equal stages, each a column layer and a row layer
 * of 100,000 parameters, 2e6 FLOPs forward and 4e6 backward per sample each, all-reducing
 * 65,536 elements per sample (forward after the row layer, backward after the column
 * layer), one element per sample crossing the cut. GPipe, M micro-batches of b: a stage's
 * forward of a micro-batch takes F = b 4e6 / T / 1 GFLOP/s + AR(T, b 65536 x 4 bytes), its
 * backward B = b 8e6 / T / 1 GFLOP/s + the same all-reduce, so a step takes
 * (M + 1)(F + B) + 2 x (the activation and its gradient crossing the cut), then stage 0's
 * gradient all-reduce with its replica (stage 1's hides behind stage 0's last backward):
 * AR(2, 2 x 50,000 x 4 bytes: each member holds half of each layer); ZeRO-1's ring
 * reduce-scatter and all-gather take what the ring all-reduce takes. Ring all-reduce of
 * n bytes over p: 2 (p-1) a + 2 (p-1)/p n / BW. */
START_TEST(tensor_pipeline_data_matches_composition)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 400000\nforward_flops = 8e6\n"
                 "[backward]\nb2 = 100000 4e6\nb1 = 100000 4e6\na2 = 100000 4e6\n"
                 "a1 = 100000 4e6\n"
                 "[forward]\na1 = 2e6 256\na2 = 2e6 64 1\nb1 = 2e6 256\nb2 = 2e6 64\n"
                 "[tensor]\na1 = column 65536\na2 = row 65536\nb1 = column 65536\n"
                 "b2 = row 65536\n");
    for (int k = 0; k < 3; k++) { /* plain, sequence parallel, and also ZeRO-1 */
        int sp = k > 0;
        const char *sets[] = {
            "strategy.kind=pipeline",
            "strategy.stages=2",
            "strategy.micro_batches=3",
            "model.batch=12",
            arch,
            "run.steps=2",
            "cluster.workers=8",
            "strategy.tensor=2",
            "strategy.data_parallel=2",
            "strategy.pipeline_schedule=gpipe",
            "cluster.network_model=CM02",
            "cluster.crosstraffic=no",
            "cluster.bandwidth=1Gbps",
            "cluster.latency=10us",
            "cluster.device_flops=1Gf",
            sp ? "strategy.sequence_parallel=yes" : "strategy.sequence_parallel=no",
            k == 2 ? "strategy.shard_optimizer=yes" : "strategy.shard_optimizer=no"};
        outcome_t o = simulate(sets, 17, NULL);
        ck_assert_msg(o.ok, "%s", o.err);
        int M = 3, b = 4, T = 2;
        double tp_ar = 2.0 * (T - 1) * ALPHA + 2.0 * (T - 1) / T * b * 65536 * 4 / BW;
        double F = b * 4e6 / T / 1e9 + tp_ar, B = b * 8e6 / T / 1e9 + tp_ar;
        double cut = ALPHA + b * 4 / BW; /* sequence parallelism: half of it */
        double dp_ar = 2.0 * ALPHA + 100000.0 * 4 / BW;
        double want = 2 * ((M + 1) * (F + B) + 2 * cut + dp_ar);
        static const char *const what[] = {"tensor x pipeline x data",
                                           "tensor x pipeline x data, sequence parallel",
                                           "tensor x pipeline x data, sequence parallel, ZeRO-1"};
        expect_close(what[k], T, 400000, o.end_time, want);
    }
    /* ZeRO-2 and 3 on the same 2 x 2 x 2: each member's slice (2 layers' halves, 100,000
     * parameters) is reduce-scattered after each of the M = 3 backward passes instead of
     * once, and at stage 3 also all-gathered before each forward and backward pass instead
     * of once after the update: (M + 1) and 3 M collectives instead of 2, (D-1) x 100,000 x
     * 4 bytes each, for each of the 4 members' groups and the 2 steps; stage 3 holds half
     * of the member's parameters (zero_grad_overlap off: with it, below, stage 2 moves
     * stage 1's bytes) */
    double bytes[4] = {0}, held[4] = {0};
    for (int z = 1; z <= 3; z++) {
        char zs[64];
        snprintf(zs, sizeof zs, "strategy.zero_stage=%d", z);
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=2",
                              "strategy.micro_batches=3",
                              "model.batch=12",
                              arch,
                              "run.steps=2",
                              "cluster.workers=8",
                              "strategy.tensor=2",
                              "strategy.data_parallel=2",
                              "strategy.pipeline_schedule=gpipe",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "cluster.device_flops=1Gf",
                              "strategy.shard_optimizer=yes",
                              zs,
                              "strategy.zero_grad_overlap=no"};
        outcome_t o = simulate(sets, 18, NULL);
        ck_assert_msg(o.ok, "%s", o.err);
        bytes[z] = o.bytes;
        held[z] = o.mem0[0];
        if (z == 2) { /* the buckets reduce-scattered during the last backward pass */
            sets[17] = "strategy.zero_grad_overlap=yes";
            o = simulate(sets, 18, NULL);
            bytes[0] = o.bytes;
        }
    }
    ck_assert_msg(bytes[0] == bytes[1], "ZeRO-2 with overlap: %.0f bytes, ZeRO-1 %.0f", bytes[0],
                  bytes[1]);
    double one = 2.0 * 4 * 1 * 100000 * 4; /* steps, groups, D-1, floats, bytes */
    ck_assert_msg(bytes[2] - bytes[1] == (4 - 2) * one, "ZeRO-2: %.0f bytes more, want %.0f",
                  bytes[2] - bytes[1], 2 * one);
    ck_assert_msg(bytes[3] - bytes[1] == (9 - 2) * one, "ZeRO-3: %.0f bytes more, want %.0f",
                  bytes[3] - bytes[1], 7 * one);
    ck_assert_msg(held[1] == 100000 * 4 && held[3] == 50000 * 4, "parameters %g and %g", held[1],
                  held[3]);
    unlink(path);
}
END_TEST

/* Megatron-LM's scatter/gather between stages (Narayanan et al. 2021, section 4.1): 2
 * stages of one heads-split layer each (no tensor all-reduce) on tensor groups of 2, the cut
 * N = 1000 elements a sample, one micro-batch of b = 4, under alpha-beta (a star, 1 Gb/s, 10
 * us a link). Member r sends its b N / T elements to member r of the next stage (the stage's
 * bytes over the link between them: the activation / T each), then the receiving group
 * all-gathers the whole b N in closed form, (T - 1) ring steps of b N / T (tensor_comm =
 * formula): a step is F + cut + AG + F, then B + cut + AG + B, with cut = ALPHA + 4 b N / T
 * / BW and AG = (T - 1) (ALPHA + 4 b N / T / BW). Under sequence parallelism the
 * activation is already 1/T a member and nothing is gathered: 2 (F + B + cut). The run ends
 * with stage 0's STOP of 64 bytes down the pipe. The bytes:
 * each way T messages of b N / T floats, and T (T - 1) chunks of b N / T for the gather. */
START_TEST(tensor_scatter_gather_between_stages)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 200\nforward_flops = 4e6\n"
                 "[backward]\nb = 100 4e6\na = 100 4e6\n"
                 "[forward]\na = 2e6 1000 1000\nb = 2e6 1000\n"
                 "[tensor]\na = heads\nb = heads\n");
    for (int sp = 0; sp < 2; sp++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=2",
                              "strategy.micro_batches=1",
                              "model.batch=4",
                              arch,
                              "run.steps=2",
                              "cluster.workers=4",
                              "strategy.tensor=2",
                              "strategy.tensor_comm=formula",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "cluster.device_flops=1Gf",
                              sp ? "strategy.sequence_parallel=yes"
                                 : "strategy.sequence_parallel=no"};
        outcome_t o = simulate(sets, 15, NULL);
        ck_assert_msg(o.ok, "%s", o.err);
        int T = 2, steps = 2;
        double b = 4, N = 1000;
        double F = b * 2e6 / T / 1e9, B = b * 4e6 / T / 1e9;
        double cut = ALPHA + 4 * b * N / T / BW;
        double AG = sp ? 0 : (T - 1) * (ALPHA + 4 * b * N / T / BW);
        double stop = ALPHA + 64 / BW; /* the STOP down the pipe that ends the run */
        double want = steps * (2 * (F + B) + 2 * (cut + AG)) + stop;
        ck_assert_msg(fabs(o.end_time - want) <= 1e-6 * want, "sp=%d: %.9g s, want %.9g s", sp,
                      o.end_time, want);
        double bytes = steps * 2 * (T * b * N / T * 4 + (sp ? 0 : T * (T - 1) * b * N / T * 4));
        double stops = o.bytes - bytes;
        ck_assert_msg(stops >= 0 && stops <= 64.0 * T, "sp=%d: %.0f bytes, want %.0f + STOPs", sp,
                      o.bytes, bytes);
    }
    unlink(path);
}
END_TEST

/* Full recomputation re-runs the numbered blocks' forward pass alone, as Megatron-LM
 * checkpoints its transformer layers: the embedding before them and the output layer after
 * them are not recomputed. One stage, 2 micro-batches of 2, the layers heads-split on a
 * tensor group of T (no all-reduce) or T = 1: a sample costs (forward + backward + the
 * blocks' forward) / T at 1 GFLOP/s; a profile whose layers have no block number recomputes
 * them all (the whole forward pass again). */
START_TEST(full_recompute_reruns_the_blocks_alone)
{
    for (int numbered = 0; numbered < 2; numbered++) {
        char path[256], arch[300], text[1024];
        const char *h0 = numbered ? "h.0.mlp" : "h0mlp", *h1 = numbered ? "h.1.mlp" : "h1mlp";
        snprintf(text, sizeof text,
                 "[profile]\nparams = 400\nforward_flops = 10e6\n"
                 "[backward]\nlm_head = 100 6e6\n%s = 100 4e6\n%s = 100 4e6\nwte = 100 0\n"
                 "[forward]\nwte = 1e6 64 64\n%s = 2e6 64 64\n%s = 2e6 64 64\n"
                 "lm_head = 5e6 64\n"
                 "[tensor]\nwte = heads\n%s = heads\n%s = heads\nlm_head = heads\n",
                 h1, h0, h0, h1, h0, h1);
        profile_file(path, sizeof path, arch, sizeof arch, text);
        for (int T = 1; T <= 2; T++) {
            char workers[64], tensor[64];
            snprintf(workers, sizeof workers, "cluster.workers=%d", T);
            snprintf(tensor, sizeof tensor, "strategy.tensor=%d", T);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=2",
                                  "model.batch=4",
                                  arch,
                                  "run.steps=2",
                                  workers,
                                  tensor,
                                  "cluster.device_flops=1Gf",
                                  "strategy.tensor_comm=formula",
                                  "model.recompute=full"};
            outcome_t o = simulate(sets, 11, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            double again = numbered ? 4e6 : 10e6;
            double want = 2 * 4 * (10e6 + 14e6 + again) / T / 1e9;
            ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want,
                          "numbered=%d T=%d: %.12g s, want %.12g s", numbered, T, o.end_time, want);
        }
        unlink(path);
    }
}
END_TEST

/* ---- context parallelism (strategy.context) ------------------------------------------- */

/* Two transformer blocks a and b on sequences of 1024 tokens: each a norm (no FLOPs), a
 * query/key/value projection (4 heads of 16 and one key/value head: 64 + 16 + 16 outputs a
 * token), an attention core and an output projection, 8 MFLOP forward and 18 backward a
 * sample (2 and 6 of them the attention's); a stage may end after block a (1024 elements a
 * sample); Megatron-LM's tensor split of each (a 1024-element all-reduce a sample after
 * each projection). */
static void context_profile(char *path, size_t path_n, char *arch, size_t arch_n)
{
    profile_file(path, path_n, arch, arch_n,
                 "[profile]\nparams = 32\nforward_flops = 16e6\n"
                 "[backward]\nb.proj = 8 6e6\nb.scores = 0 6e6\nb.qkv = 8 6e6\nb.ln = 0 0\n"
                 "a.proj = 8 6e6\na.scores = 0 6e6\na.qkv = 8 6e6\na.ln = 0 0\n"
                 "[forward]\na.ln = 0 0\na.qkv = 3e6 2048\na.scores = 2e6 1024\n"
                 "a.proj = 3e6 1024 1024\nb.ln = 0 0\nb.qkv = 3e6 2048\nb.scores = 2e6 1024\n"
                 "b.proj = 3e6 1024\n"
                 "[shape]\na.ln = memory 0 0\na.qkv = gemm 1024 96 64\n"
                 "a.scores = attention 4 1024 1024 16\na.proj = gemm 1024 64 64\n"
                 "b.ln = memory 0 0\nb.qkv = gemm 1024 96 64\n"
                 "b.scores = attention 4 1024 1024 16\nb.proj = gemm 1024 64 64\n"
                 "[tensor]\na.qkv = column 1024\na.scores = heads\na.proj = row 1024\n"
                 "b.qkv = column 1024\nb.scores = heads\nb.proj = row 1024\n");
}

/* Free messages: a context group of C divides every pass by C, so a 1f1b step of 2 stages
 * and 4 micro-batches of 2 takes (M+S-1)(16 + 36) ms / C at 1 GFLOP/s (the key/value
 * exchange hides behind the attention), the bubble stays (S-1)/(M+S-1), and stage 0 holds
 * S micro-batches' 4096 values a sample / C. Two replicas of context groups of 2 all-reduce
 * their gradients in groups of 4, as 4 replicas do: the bytes differ by the activations
 * (per stage boundary, micro-batch and way: a replica's 2 x 1024 values whatever C) and
 * ring attention's (a member's 3 chunks of 2 x 512 x 16 x 2 values per attention core and
 * micro-batch: forward K, V once, backward K, V and dK, dV). */
START_TEST(context_divides_step_and_memory)
{
    char path[256], arch[300];
    context_profile(path, sizeof path, arch, sizeof arch);
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=2",
                          "strategy.micro_batches=4",
                          "model.batch=8",
                          arch,
                          "run.steps=2",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=100000Gbps",
                          "cluster.latency=0",
                          "cluster.device_flops=1Gf",
                          "model.recompute=none",
                          "strategy.context=1",
                          "strategy.data_parallel=1"};
    static const char *cps[] = {"strategy.context=1", "strategy.context=2", "strategy.context=4"};
    for (int k = 0; k < 3; k++) {
        int C = 1 << k;
        sets[12] = cps[k];
        outcome_t o = simulate(sets, 14, NULL);
        ck_assert(o.timing_only);
        double step = 5 * (16e6 + 36e6) / C / 1e9;
        ck_assert_msg(fabs(o.end_time - 2 * step) <= 1e-6 * step, "C=%d: %.9g s, want %.9g s", C,
                      o.end_time, 2 * step);
        ck_assert_msg(fabs(o.idle_share - 0.2) <= 1e-6, "C=%d: idle %.6f", C, o.idle_share);
        ck_assert_msg(o.mem0[3] == 2.0 * 4096 * 2 * 4 / C, "C=%d: activations %g B", C, o.mem0[3]);
        ck_assert_msg(o.mem0[0] == 16 * 4, "C=%d: parameters %g B", C, o.mem0[0]);
        ck_assert_msg(o.samples == 2 * 8, "C=%d: %g samples", C, o.samples);
    }
    sets[12] = "strategy.context=2";
    sets[13] = "strategy.data_parallel=2";
    outcome_t dc = simulate(sets, 14, NULL);
    sets[12] = "strategy.context=1";
    sets[13] = "strategy.data_parallel=4";
    outcome_t d4 = simulate(sets, 14, NULL);
    double act2 = 2.0 * 4 * 2 * 2 * 2 * 1024 * 4, act4 = 2 * act2;
    double kv = 2.0 * 4 * 8 * 3 * (2.0 * 512 * 16 * 2 * 4);
    ck_assert_msg(dc.bytes - act2 - kv == d4.bytes - act4,
                  "data 2 x context 2: %.0f bytes less %.0f activations and %.0f keys/values; "
                  "data 4: %.0f less %.0f activations",
                  dc.bytes, act2, kv, d4.bytes, act4);
    ck_assert_msg(dc.samples == 2 * 8 * 2, "data 2 x context 2: %g samples", dc.samples);
    /* tensor groups of 2 in context groups of 2: every layer's FLOPs split both ways, / 4;
     * a member keeps 1/T of the column and heads layers' outputs and the row layer's whole
     * (all-reduced) output, each / C */
    const char *tc[] = {sets[0],
                        sets[1],
                        sets[2],
                        sets[3],
                        sets[4],
                        sets[5],
                        sets[6],
                        sets[7],
                        sets[8],
                        sets[9],
                        sets[10],
                        sets[11],
                        "strategy.context=2",
                        "strategy.data_parallel=1",
                        "strategy.tensor=2"};
    outcome_t o = simulate(tc, 15, NULL);
    double step = 5 * (16e6 + 36e6) / 4 / 1e9;
    ck_assert_msg(fabs(o.end_time - 2 * step) <= 1e-6 * step, "t2 x c2: %.9g s, want %.9g s",
                  o.end_time, 2 * step);
    ck_assert_msg(o.mem0[3] == 2.0 * (2048 / 2 + 1024 / 2 + 1024) / 2 * 2 * 4,
                  "t2 x c2: activations %g B", o.mem0[3]);
    unlink(path);
}
END_TEST

/* Slow links (1 Gbit/s, 5 us, alpha-beta): one stage, one sample, context groups of 4. A
 * ring step of b bytes takes t(b) = 2 x 5 us + b / 1.25e8 s; each attention core passes
 * chunks of x = 2 x 256 x 16 values (4 bytes), and a step of its attention takes a =
 * 2 MFLOP / 16 forward, a_b = 6 MFLOP / 16 backward at 1 GFLOP/s: the forward exposes
 * 3 (t(x) - a), the backward's first and last steps (x) hide behind a_b and its 2 middle
 * ones (2 x) expose 2 (t(2x) - a_b). Selective recomputation repeats the attention's
 * forward pass and its exchange in the backward pass. The step ends with the gradients'
 * ring all-reduce over the group, 6 steps of 8 values. */
START_TEST(context_exchange_matches_closed_form)
{
    char path[256], arch[300];
    context_profile(path, sizeof path, arch, sizeof arch);
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=1",
                          "strategy.micro_batches=1",
                          "model.batch=1",
                          arch,
                          "run.steps=1",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=1Gbps",
                          "cluster.latency=5us",
                          "cluster.device_flops=1Gf",
                          "model.recompute=none",
                          "strategy.context=4"};
    double B = 1.25e8, lat = 2 * 5e-6, x = 2.0 * 256 * 16 * 4;
    double t1 = lat + x / B, t2 = lat + 2 * x / B, a = 2e6 / 16 / 1e9, ab = 6e6 / 16 / 1e9;
    double fwd = 3 * (t1 - a), bwd = 2 * (t2 - ab); /* t1 < ab: hidden */
    ck_assert(t1 > a && t1 < ab && t2 > ab);
    double reduce = 6 * (lat + 8 * 4 / B), compute = (16e6 + 36e6) / 4 / 1e9;
    outcome_t o = simulate(sets, 13, NULL);
    double want = compute + 2 * (fwd + bwd) + reduce;
    ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want, "%.12g s, want %.12g s (exchange %.9g s)",
                  o.end_time, want, 2 * (fwd + bwd));
    sets[11] = "model.recompute=selective";
    o = simulate(sets, 13, NULL);
    want += 2 * (fwd + 2e6 / 4 / 1e9);
    ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want, "selective: %.12g s, want %.12g s",
                  o.end_time, want);
    /* each member in a rack of its own behind a 0.5 Gbit/s, 1 us uplink: a step crosses two
     * host links and two uplinks, at the uplink's rate (the ring all-reduce's messages too,
     * as SimGrid routes them) */
    const char *racks[] = {sets[0],
                           sets[1],
                           sets[2],
                           sets[3],
                           sets[4],
                           sets[5],
                           sets[6],
                           sets[7],
                           sets[8],
                           sets[9],
                           sets[10],
                           "model.recompute=none",
                           sets[12],
                           "cluster.platform=multi-rack",
                           "cluster.racks=4",
                           "cluster.uplink_bandwidth=0.5Gbps",
                           "cluster.uplink_latency=1us"};
    o = simulate(racks, 17, NULL);
    double U = 0.0625e9, lat2 = 2 * 5e-6 + 2 * 1e-6;
    t1 = lat2 + x / U;
    t2 = lat2 + 2 * x / U;
    fwd = 3 * (t1 - a);
    bwd = 2 * (t1 - ab) + 2 * (t2 - ab);
    ck_assert(t1 > ab);
    want = compute + 2 * (fwd + bwd) + 6 * (lat2 + 8 * 4 / U);
    ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want, "racks: %.12g s, want %.12g s",
                  o.end_time, want);
    unlink(path);
}
END_TEST

/* What context parallelism cannot time is refused when the scenario is read, naming the
 * key: a real model, a profile without attention shapes, a sequence of 1024 tokens in 2 x 3
 * chunks, a fat-tree (no closed form for the exchange). */
START_TEST(context_refusals_name_the_key)
{
    char path[256], arch[300], plain[256], plain_arch[300];
    context_profile(path, sizeof path, arch, sizeof arch);
    equal_layers_profile(plain, sizeof plain, plain_arch, sizeof plain_arch);
    const char *cases[][3] = {
        {"model.arch=mlp", "strategy.context=2", "a real model has none"},
        {plain_arch, "strategy.context=2", "no attention layer in a [shape]"},
        {arch, "strategy.context=3", "sequence is 1024 tokens"},
        {arch, "cluster.platform=fat-tree", "on a star or multi-rack platform"},
    };
    for (int i = 0; i < 4; i++) {
        static scenario_t sc;
        dt_err_t err = {""};
        scenario_defaults(&sc);
        for (size_t j = 0; j < sizeof base / sizeof base[0]; j++)
            ck_assert(scenario_set(&sc, base[j], &err) == DT_OK);
        const char *sets[] = {"strategy.kind=pipeline", cases[i][0], cases[i][1],
                              "strategy.context=2"};
        for (int j = 0; j < 4 && (j < 3 || i == 3); j++)
            ck_assert_msg(scenario_set(&sc, sets[j], &err) == DT_OK, "%s: %s", sets[j], err.msg);
        dt_status st = scenario_validate(&sc, &err);
        ck_assert_msg(st == DT_ERR_INPUT && strstr(err.msg, cases[i][2]) &&
                          (strstr(err.msg, "strategy.context") || strstr(err.msg, "platform")),
                      "case %d: %s", i, err.msg);
    }
    unlink(path);
    unlink(plain);
}
END_TEST

/* ZeRO stages over a pipeline's replicas (strategy.shard_optimizer, zero_stage), one stage
 * of a timing-only profile (2 layers of 100,000 parameters, 4e6 FLOPs forward and 8e6
 * backward per sample in all) on D = 2 and 4 replicas under alpha-beta, GPipe, M = 4
 * micro-batches of b = 2: a forward pass takes F = b 4e6 / 1 GFLOP/s, a backward pass
 * B = b 8e6 / 1 GFLOP/s, and a ring reduce-scatter or all-gather of the n = 200,000
 * parameters RS = (D-1) (a + n/D x 4 bytes / BW), moving (D-1) n x 4 bytes over the group.
 * A step takes M (F + B) + 2 RS with stage 0 (all-reduce) and 1 (reduce-scatter and
 * all-gather), M (F + B + RS) + RS with stage 2 (each micro-batch's gradients
 * reduce-scattered, the weights all-gathered once) and M (F + B + RS + 2 RS) with stage 3
 * (the parameters all-gathered before each forward and each backward pass, kept sharded);
 * a stage holds n/D of what it shards (optimizer state from 1, gradients from 2,
 * parameters at 3). With zero_grad_overlap and zero_prefetch off: the times of before
 * those keys, to the digit (pipeline_zero_overlap_timeline: with them). */
START_TEST(pipeline_zero_stages_bytes_time_memory)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 200000\nforward_flops = 4e6\n"
                 "[backward]\nb = 100000 4e6\na = 100000 4e6\n"
                 "[forward]\na = 2e6 256\nb = 2e6 64\n");
    for (int D = 2; D <= 4; D += 2)
        for (int z = 0; z <= 3; z++) {
            char workers[64], dp[64], batch[64], stage[64];
            snprintf(workers, sizeof workers, "cluster.workers=%d", D);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%d", D);
            snprintf(batch, sizeof batch, "model.batch=%d", 8);
            snprintf(stage, sizeof stage, "strategy.zero_stage=%d", z ? z : 1);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=4",
                                  batch,
                                  arch,
                                  "run.steps=2",
                                  workers,
                                  dp,
                                  "strategy.pipeline_schedule=gpipe",
                                  "cluster.network_model=CM02",
                                  "cluster.crosstraffic=no",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1Gf",
                                  "model.momentum=0.9",
                                  stage,
                                  z ? "strategy.shard_optimizer=yes"
                                    : "strategy.shard_optimizer=no",
                                  "strategy.zero_grad_overlap=no",
                                  "strategy.zero_prefetch=no"};
            outcome_t o = simulate(sets, 19, NULL);
            ck_assert_msg(o.ok, "%s", o.err);
            int M = 4, b = 2, steps = 2;
            double n = 200000, F = b * 4e6 / 1e9, B = b * 8e6 / 1e9;
            double rs = (D - 1) * (ALPHA + n / D * 4 / BW);
            double step = z <= 1   ? M * (F + B) + 2 * rs
                          : z == 2 ? M * (F + B + rs) + rs
                                   : M * (F + B + 3 * rs);
            ck_assert_msg(fabs(o.end_time - steps * step) <= 1e-6 * steps * step,
                          "D=%d ZeRO-%d: %.9g s, want %.9g s", D, z, o.end_time, steps * step);
            double per = z <= 1 ? 2 : z == 2 ? M + 1 : 3 * M; /* collectives of n per step */
            double bytes = steps * per * (D - 1) * n * 4;
            ck_assert_msg(o.bytes == bytes, "D=%d ZeRO-%d: %.0f bytes, want %.0f", D, z, o.bytes,
                          bytes);
            double shard = n / D * 4;
            ck_assert_msg(o.mem0[0] == (z >= 3 ? shard : n * 4), "D=%d ZeRO-%d params %g", D, z,
                          o.mem0[0]);
            ck_assert_msg(o.mem0[1] == (z >= 2 ? shard : n * 4), "D=%d ZeRO-%d grads %g", D, z,
                          o.mem0[1]);
            ck_assert_msg(o.mem0[2] == (z >= 1 ? shard : n * 4), "D=%d ZeRO-%d momentum %g", D, z,
                          o.mem0[2]);
        }
    unlink(path);
}
END_TEST

/* strategy.zero_grad_overlap (the default) on the profile of
 * pipeline_zero_stages_bytes_time_memory, a bucket per layer (bucket_mb = 100 bytes): the
 * M - 1 first backward passes add up whole gradients; during the last one the top layer's
 * bucket (its B/2 of compute done) goes to the stream, whose reduce-scatter X = (D-1) (a +
 * n/D x 4 bytes / BW) of its n = 100,000 parameters runs while the bottom layer computes its
 * B/2; the bottom bucket's follows: B/2 + max(X, B/2) + X, the first bucket exposing max(0,
 * X - B/2), the last all of X. ZeRO-2 then all-gathers each bucket (2 X): a step is M F +
 * (M-1) B + B/2 + max(X, B/2) + 3 X. ZeRO-3 gathers the slice, Y = (D-1) (a + 2n/D x 4 / BW),
 * before each of the 2 M passes: in turn (zero_prefetch = no), 2 M Y more than ZeRO-2 less
 * its 2 X; prefetched, the first pass waits Y and each gather runs while the pass before
 * computes, so pass k + 1 starts max(c_k, Y) after pass k: Y + M max(F, Y) + (M-1) max(B, Y)
 * + B/2 + max(X, B/2) + X. At 1 Gbit/s X and Y hide, at 100 Mbit/s they do not. */
START_TEST(pipeline_zero_overlap_timeline)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 200000\nforward_flops = 4e6\n"
                 "[backward]\nb = 100000 4e6\na = 100000 4e6\n"
                 "[forward]\na = 2e6 256\nb = 2e6 64\n");
    for (int D = 2; D <= 4; D += 2)
        for (int fast = 0; fast < 2; fast++)
            for (int z = 2; z <= 4; z++) { /* 4: ZeRO-3 with zero_prefetch */
                char workers[64], dp[64];
                snprintf(workers, sizeof workers, "cluster.workers=%d", D);
                snprintf(dp, sizeof dp, "strategy.data_parallel=%d", D);
                const char *sets[] = {
                    "strategy.kind=pipeline",
                    "strategy.stages=1",
                    "strategy.micro_batches=4",
                    "model.batch=8",
                    arch,
                    "run.steps=2",
                    workers,
                    dp,
                    "strategy.pipeline_schedule=gpipe",
                    "cluster.network_model=CM02",
                    "cluster.crosstraffic=no",
                    fast ? "cluster.bandwidth=1Gbps" : "cluster.bandwidth=100Mbps",
                    "cluster.latency=10us",
                    "cluster.device_flops=1Gf",
                    "strategy.shard_optimizer=yes",
                    z == 2 ? "strategy.zero_stage=2" : "strategy.zero_stage=3",
                    "strategy.bucket_mb=0.0001",
                    z == 4 ? "strategy.zero_prefetch=yes" : "strategy.zero_prefetch=no"};
                outcome_t o = simulate(sets, 18, NULL);
                ck_assert_msg(o.ok, "%s", o.err);
                int M = 4, b = 2, steps = 2;
                double bw = fast ? BW : BW / 10, n = 100000;
                double F = b * 4e6 / 1e9, B = b * 8e6 / 1e9, X = (D - 1) * (ALPHA + n / D * 4 / bw);
                double Y = (D - 1) * (ALPHA + 2 * n / D * 4 / bw);
                ck_assert(fast ? X < B / 2 && Y < F : X > B / 2 && Y > B);
                double last = B / 2 + fmax(X, B / 2) + X, step;
                if (z == 2)
                    step = M * F + (M - 1) * B + last + 2 * X;
                else if (z == 3)
                    step = M * F + (M - 1) * B + last + 2 * M * Y;
                else
                    step = Y + M * fmax(F, Y) + (M - 1) * fmax(B, Y) + last;
                ck_assert_msg(fabs(o.end_time - steps * step) <= 1e-9 * steps * step,
                              "D=%d %s ZeRO-%d%s: %.12g s, want %.12g s", D,
                              fast ? "1 Gb/s" : "100 Mb/s", z == 2 ? 2 : 3,
                              z == 4 ? " prefetched" : "", o.end_time, steps * step);
                /* 2 buckets reduced; ZeRO-2: gathered after the update, ZeRO-3: the slice
                 * gathered before each pass */
                double per = z == 2 ? 4 : 2 + 2 * M * 2, bytes = steps * per * (D - 1) * n * 4;
                ck_assert_msg(o.bytes == bytes, "D=%d ZeRO-%d: %.0f bytes, want %.0f", D, z,
                              o.bytes, bytes);
                ck_assert_msg(o.mem0[1] == 2 * n * 4, "D=%d: gradients %g held, want whole", D,
                              o.mem0[1]);
            }
    unlink(path);
}
END_TEST

/* strategy.dp_comm = formula against the same run with messages: the collectives over a
 * stage's replicas (ZeRO-2's buckets behind the backward pass, ZeRO-1's reduce-scatter and
 * all-gather, ZeRO-3's prefetched gathers, the ring all-reduce with and without buckets) as
 * waits of their ring steps in closed form. Alone on the network (one stage on a star:
 * CM02 with and without cross traffic, LV08) to 1e-9; on a multi-rack platform with 2
 * stages, the replicas' rings across racks sharing the uplinks (a rack per replica, or a
 * host per rack, where the stages' messages cross the same uplinks) within 0.5%; the bytes
 * the same. A fat-tree has no closed form, nor a rack holding two stages (which reduce at
 * other times than the closed form's rings): messages, to the digit. */
START_TEST(data_formula_matches_messages)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 200000\nforward_flops = 4e6\n"
                 "[backward]\nb = 100000 4e6\na = 100000 4e6\n"
                 "[forward]\na = 2e6 256 64\nb = 2e6 64\n");
    static const struct {
        const char *net, *xt, *platform, *racks, *stages, *workers, *zero, *extra;
        double tol;
    } c[] = {
        {"CM02", "no", "star", "1", "1", "4", "strategy.zero_stage=2", "strategy.bucket_mb=0.0001",
         1e-9},
        {"CM02", "yes", "star", "1", "1", "4", "strategy.zero_stage=1",
         "strategy.shard_optimizer=yes", 1e-9},
        {"LV08", "yes", "star", "1", "1", "4", "strategy.zero_stage=1",
         "strategy.shard_optimizer=no", 1e-9},
        {"CM02", "yes", "multi-rack", "8", "2", "8", "strategy.zero_stage=2",
         "strategy.bucket_mb=0.0001", 5e-3},
        {"CM02", "no", "multi-rack", "8", "2", "8", "strategy.zero_stage=3",
         "strategy.bucket_mb=0.0001", 5e-3},
        {"LV08", "yes", "multi-rack", "8", "2", "8", "strategy.zero_stage=1",
         "strategy.shard_optimizer=no", 5e-3},
        {"CM02", "yes", "fat-tree", "1", "2", "8", "strategy.zero_stage=2",
         "strategy.bucket_mb=0.0001", 0},
        {"CM02", "yes", "multi-rack", "4", "2", "8", "strategy.zero_stage=2",
         "strategy.bucket_mb=0.0001", 0},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        outcome_t o[2];
        for (int formula = 0; formula < 2; formula++) {
            char net[64], xt[64], platform[64], racks[64], stages[64], w[64];
            snprintf(net, sizeof net, "cluster.network_model=%s", c[k].net);
            snprintf(xt, sizeof xt, "cluster.crosstraffic=%s", c[k].xt);
            snprintf(platform, sizeof platform, "cluster.platform=%s", c[k].platform);
            snprintf(racks, sizeof racks, "cluster.racks=%s", c[k].racks);
            snprintf(stages, sizeof stages, "strategy.stages=%s", c[k].stages);
            snprintf(w, sizeof w, "cluster.workers=%s", c[k].workers);
            int plain = strstr(c[k].extra, "shard_optimizer") != NULL;
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.micro_batches=4",
                                  "model.batch=8",
                                  arch,
                                  "run.steps=2",
                                  "strategy.data_parallel=4",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.uplink_bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1Gf",
                                  "strategy.pipeline_schedule=1f1b",
                                  formula ? "strategy.dp_comm=formula"
                                          : "strategy.dp_comm=messages",
                                  net,
                                  xt,
                                  platform,
                                  racks,
                                  stages,
                                  w,
                                  c[k].zero,
                                  c[k].extra,
                                  plain ? "strategy.bucket_mb=0" : "strategy.shard_optimizer=yes"};
            o[formula] = simulate(sets, 21, NULL);
            ck_assert_msg(o[formula].ok, "case %zu: %s", k, o[formula].err);
        }
        const char *said = c[k].tol > 0 ? "replicas' collectives in closed form"
                                        : "replicas' collectives as messages";
        ck_assert_msg(strstr(o[1].summary, said), "case %zu: %s", k, o[1].summary);
        double err = fabs(o[1].end_time - o[0].end_time) / o[0].end_time;
        ck_assert_msg(err <= c[k].tol,
                      "case %zu (%s %s, %s stages, %s, %s): formula %.12g s, messages %.12g s "
                      "(%.3g)",
                      k, c[k].net, c[k].platform, c[k].stages, c[k].zero, c[k].extra, o[1].end_time,
                      o[0].end_time, err);
        ck_assert_msg(fabs(o[1].bytes - o[0].bytes) <= 1e-9 * o[0].bytes,
                      "case %zu: %.0f bytes by formula, %.0f by messages", k, o[1].bytes,
                      o[0].bytes);
    }
    unlink(path);
}
END_TEST

/* The zero strategy with overlap on the same two layers (a bucket each; a worker's forward
 * FLOPs shared as the backward's: F/2 a bucket), b = 2 samples a worker, every collective X =
 * (D-1) (a + n/D x 4 bytes / BW). ZeRO-2: F + B/2 + max(X, B/2) + X (the reduce-scatters
 * behind the backward pass) + 2 X (the buckets' gathers after the update). ZeRO-3 with
 * zero_prefetch: the stream gathers the first bucket (X), then the second while the first
 * computes, the backward pass's first while the forward's last computes, and so on: t1 =
 * max(2 X, X + F/2) starts the second bucket's forward, t2 = t1 + max(X, F/2) the backward,
 * t3 = t2 + max(X, B/2) its second bucket, and the step ends at t3 + max(X, B/2) + X (the
 * reduce-scatters queued behind the gathers); the run ends with the whole model gathered
 * (2 X). With both keys off, the times of before: F + B + 2 X' (ZeRO-2) and F + B + 3 X'
 * a step + X' (ZeRO-3), X' the whole model's collective. */
START_TEST(zero_overlap_timeline)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 200000\nforward_flops = 4e6\n"
                 "[backward]\nb = 100000 4e6\na = 100000 4e6\n"
                 "[forward]\na = 2e6 256\nb = 2e6 64\n");
    for (int D = 2; D <= 4; D += 2)
        for (int fast = 0; fast < 2; fast++)
            for (int z = 2; z <= 3; z++)
                for (int on = 0; on < 2; on++) {
                    char workers[64], zs[64];
                    snprintf(workers, sizeof workers, "cluster.workers=%d", D);
                    snprintf(zs, sizeof zs, "strategy.zero_stage=%d", z);
                    const char *sets[] = {
                        "strategy.kind=zero",
                        "model.batch=2",
                        arch,
                        "run.steps=2",
                        workers,
                        "cluster.network_model=CM02",
                        "cluster.crosstraffic=no",
                        fast ? "cluster.bandwidth=1Gbps" : "cluster.bandwidth=100Mbps",
                        "cluster.latency=10us",
                        "cluster.device_flops=1Gf",
                        zs,
                        "strategy.bucket_mb=0.0001",
                        on ? "strategy.zero_grad_overlap=yes" : "strategy.zero_grad_overlap=no",
                        on ? "strategy.zero_prefetch=yes" : "strategy.zero_prefetch=no"};
                    outcome_t o = simulate(sets, 14, NULL);
                    ck_assert_msg(o.ok, "%s", o.err);
                    int b = 2, steps = 2;
                    double bw = fast ? BW : BW / 10, n = 100000;
                    double F = b * 4e6 / 1e9, B = b * 8e6 / 1e9;
                    double X = (D - 1) * (ALPHA + n / D * 4 / bw);
                    double Xw = (D - 1) * (ALPHA + 2 * n / D * 4 / bw), want;
                    if (!on)
                        want = z == 2 ? steps * (F + B + 2 * Xw) : steps * (F + B + 3 * Xw) + Xw;
                    else if (z == 2)
                        want = steps * (F + B / 2 + fmax(X, B / 2) + X + 2 * X);
                    else {
                        double t1 = fmax(2 * X, X + F / 2), t2 = t1 + fmax(X, F / 2);
                        double t3 = t2 + fmax(X, B / 2);
                        want = steps * (t3 + fmax(X, B / 2) + X) + 2 * X;
                    }
                    ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want,
                                  "D=%d %s ZeRO-%d overlap %s: %.12g s, want %.12g s", D,
                                  fast ? "1 Gb/s" : "100 Mb/s", z, on ? "on" : "off", o.end_time,
                                  want);
                    double per = z == 2 ? 2 : 3,
                           bytes = (steps * per + (z == 3)) * (D - 1) * 2 * n * 4;
                    ck_assert_msg(o.bytes == bytes, "D=%d ZeRO-%d: %.0f bytes, want %.0f", D, z,
                                  o.bytes, bytes);
                }
    unlink(path);
}
END_TEST

/* Recomputation with tensor parallelism, the block of tensor_profile_bytes_flops_memory_exact
 * on T = 2 and 4, GPipe (both micro-batches of 2 in flight). A member's forward pass costs
 * Fm = 14e6 / T + 1e6 ln FLOPs per sample (ln: the replicated layer's share, 1 or 1/T under
 * sequence parallelism), its backward pass Bm = 28e6 / T + 2e6 ln; selective recomputes its
 * 1/T of the attention core (2e6 / T more, no communication), full its whole forward pass
 * (Fm more) with the forward pass's 2 all-reduces (6 per micro-batch instead of 4). A member
 * keeps (none) 512/T + 192 elements per sample (704/T with sequence parallelism); selective
 * frees the core's 64/T and holds it again while it recomputes it; full keeps the checkpoint
 * at the cut (1 element, 1/T with sequence parallelism) and holds the larger of the two
 * pieces while it recomputes it: 192/T + 64/T + 64 (the whole attention output) and
 * 64 + 256/T + 64 (every 64 divided by T with sequence parallelism). */
START_TEST(tensor_recompute_flops_bytes_memory_exact)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    for (int T = 2; T <= 4; T += 2)
        for (int sp = 0; sp < 2; sp++)
            for (int rc = 1; rc <= 2; rc++) {
                char workers[64], tensor[64];
                snprintf(workers, sizeof workers, "cluster.workers=%d", T);
                snprintf(tensor, sizeof tensor, "strategy.tensor=%d", T);
                const char *sets[] = {
                    "strategy.kind=pipeline",
                    "strategy.stages=1",
                    "strategy.micro_batches=2",
                    "model.batch=4",
                    arch,
                    "run.steps=3",
                    workers,
                    tensor,
                    "cluster.network_model=CM02",
                    "cluster.crosstraffic=no",
                    "cluster.bandwidth=100000Gbps",
                    "cluster.latency=0",
                    "cluster.device_flops=1Gf",
                    "strategy.pipeline_schedule=gpipe",
                    rc == 1 ? "model.recompute=selective" : "model.recompute=full",
                    sp ? "strategy.sequence_parallel=yes" : "strategy.sequence_parallel=no"};
                outcome_t o = simulate(sets, 16, NULL);
                ck_assert_msg(o.ok, "%s", o.err);
                int b = 2, M = 2, steps = 3;
                double ln = sp ? 1.0 / T : 1.0, fm = 14e6 / T + 1e6 * ln;
                double flops = fm + 28e6 / T + 2e6 * ln + (rc == 1 ? 2e6 / T : fm);
                double want = steps * M * b * flops / 1e9;
                ck_assert_msg(fabs(o.end_time - want) <= 1e-6 * want,
                              "T=%d sp=%d rc=%d: %.12g s, want %.12g s", T, sp, rc, o.end_time,
                              want);
                double bytes = (double)steps * M * (rc == 1 ? 4 : 6) * 2 * (T - 1) * b * 64 * 4;
                ck_assert_msg(o.bytes == bytes, "T=%d sp=%d rc=%d: %.0f bytes, want %.0f", T, sp,
                              rc, o.bytes, bytes);
                double whole = sp ? 64.0 / T : 64, kept, piece;
                if (rc == 1) {
                    kept = (sp ? 704.0 / T : 512.0 / T + 192) - 64.0 / T;
                    piece = 64.0 / T;
                } else {
                    kept = sp ? 1.0 / T : 1;
                    double a = 256.0 / T + whole, m = whole + 256.0 / T + whole;
                    piece = a > m ? a : m;
                }
                double act = (M * kept + piece) * b * 4;
                ck_assert_msg(fabs(o.mem0[3] - act) <= 1e-9 * act,
                              "T=%d sp=%d rc=%d activations %g, want %g", T, sp, rc, o.mem0[3],
                              act);
            }
    unlink(path);
}
END_TEST

/* strategy.tensor_comm = formula against the same run with messages: a tensor group's ring
 * all-reduces in closed form, each member's pass one charge and one wait. Where nothing else
 * uses the group's links (one stage, one replica) the step times agree to 1e-9, on a star
 * and on a multi-rack platform, CM02 with and without cross traffic and LV08; with stages
 * and replicas (activations and gradient all-reduces crossing the same links, buckets,
 * full recomputation, sequence parallelism) within 0.5%; the bytes are the same. Where no
 * closed form holds (a fat-tree; LV08 at 1 ms, where the TCP window binds) it falls back to
 * messages: the same time to the digit. */
START_TEST(tensor_formula_matches_messages)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    static const struct {
        const char *net, *xt, *platform, *racks, *lat, *stages, *dp, *workers, *extra;
        double tol;
    } c[] = {
        {"CM02", "no", "star", "1", "10us", "1", "1", "4", "model.recompute=none", 1e-9},
        {"CM02", "yes", "star", "1", "10us", "1", "1", "4", "model.recompute=none", 1e-9},
        {"LV08", "yes", "star", "1", "10us", "1", "1", "4", "model.recompute=none", 1e-9},
        {"CM02", "yes", "multi-rack", "2", "1ms", "1", "2", "8", "model.recompute=none", 5e-3},
        {"CM02", "yes", "multi-rack", "4", "10us", "2", "2", "16", "model.recompute=full", 5e-3},
        {"LV08", "yes", "multi-rack", "4", "10us", "2", "2", "16", "strategy.bucket_mb=0.001",
         5e-3},
        {"LV08", "yes", "multi-rack", "4", "10us", "2", "2", "16", "strategy.sequence_parallel=yes",
         5e-3},
        {"CM02", "yes", "fat-tree", "1", "10us", "2", "1", "8", "model.recompute=none", 0},
        {"LV08", "yes", "star", "1", "1ms", "1", "1", "4", "cluster.bandwidth=100Gbps", 0},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        outcome_t o[2];
        for (int formula = 0; formula < 2; formula++) {
            char net[64], xt[64], platform[64], racks[64], lat[64], stages[64], dp[64], w[64];
            snprintf(net, sizeof net, "cluster.network_model=%s", c[k].net);
            snprintf(xt, sizeof xt, "cluster.crosstraffic=%s", c[k].xt);
            snprintf(platform, sizeof platform, "cluster.platform=%s", c[k].platform);
            snprintf(racks, sizeof racks, "cluster.racks=%s", c[k].racks);
            snprintf(lat, sizeof lat, "cluster.latency=%s", c[k].lat);
            snprintf(stages, sizeof stages, "strategy.stages=%s", c[k].stages);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%s", c[k].dp);
            snprintf(w, sizeof w, "cluster.workers=%s", c[k].workers);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.micro_batches=3",
                                  "model.batch=6",
                                  arch,
                                  "run.steps=2",
                                  "strategy.tensor=4",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.device_flops=1Gf",
                                  formula ? "strategy.tensor_comm=formula"
                                          : "strategy.tensor_comm=messages",
                                  net,
                                  xt,
                                  platform,
                                  racks,
                                  lat,
                                  stages,
                                  dp,
                                  w,
                                  c[k].extra};
            o[formula] = simulate(sets, 18, NULL);
            ck_assert_msg(o[formula].ok, "case %zu: %s", k, o[formula].err);
        }
        const char *said =
            c[k].tol > 0 ? "tensor all-reduces by formula" : "tensor all-reduces as messages";
        ck_assert_msg(strstr(o[1].summary, said), "case %zu: %s", k, o[1].summary);
        double err = fabs(o[1].end_time - o[0].end_time) / o[0].end_time;
        ck_assert_msg(err <= c[k].tol,
                      "case %zu (%s %s, %s stages x %s replicas, %s, %s): formula %.12g s, "
                      "messages %.12g s (%.3g)",
                      k, c[k].net, c[k].platform, c[k].stages, c[k].dp, c[k].lat, c[k].extra,
                      o[1].end_time, o[0].end_time, err);
        ck_assert_msg(fabs(o[1].bytes - o[0].bytes) <= 1e-9 * o[0].bytes,
                      "case %zu: %.0f bytes by formula, %.0f by messages", k, o[1].bytes,
                      o[0].bytes);
    }
    unlink(path);
}
END_TEST

/* strategy.tensor_members = one against all: member 0 of each tensor group of 4 simulated
 * for the group, its messages and replica all-reduces carrying the group's bytes over the
 * rack's uplink (multi-rack, a rack per group, hosts' links faster than the uplinks) or its
 * own (star). The step time within 0.5% of the whole simulation on layouts with stages,
 * replicas, buckets, the interleaved schedule, sequence parallelism, ZeRO 3, LV08 and NCCL's
 * time; every worker's row (compute, communication, idle within 0.5% of the step; steps;
 * bytes within 0.1%: a ring's chunks of T n elements round apart from T chunks of n) and the
 * hosts' energy too, the run's bytes the same; the summary says so. Under CM02 also where
 * a rack holds two groups or a host's link is slower than the uplink, member 0's links and
 * the TCP window widened 4 times (interleaved, ZeRO-1, a ring over replicas in a rack and
 * across racks among them). Where the
 * group is not symmetric on the network (those two under LV08, whose flows' weights depend
 * on their links' bandwidth; a fat-tree where the all-reduces are messages) every member
 * runs: the same time to the digit, and the summary says why. */
START_TEST(tensor_members_one_matches_all)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_two_blocks);
    static const struct {
        const char *platform, *net, *stages, *dp, *workers, *racks, *bw, *extra, *extra2;
        int one; /* 1: tensor_members = one holds; 2: with member 0's links widened; 0:
                  * every member, and why */
    } c[] = {
        {"multi-rack", "CM02", "2", "2", "16", "4", "20Mbps", "model.recompute=full",
         "strategy.pipeline_schedule=1f1b", 1},
        {"multi-rack", "CM02", "4", "1", "16", "4", "20Mbps", "strategy.pipeline_schedule=gpipe",
         "model.recompute=none", 1},
        {"multi-rack", "LV08", "2", "2", "16", "4", "20Mbps", "strategy.bucket_mb=0.0005",
         "model.recompute=none", 1},
        {"multi-rack", "CM02", "2", "2", "16", "4", "20Mbps",
         "strategy.pipeline_schedule=interleaved", "strategy.virtual_stages=2", 1},
        {"multi-rack", "CM02", "2", "3", "24", "6", "20Mbps", "strategy.sequence_parallel=yes",
         "strategy.ring_messages=phases", 1},
        {"multi-rack", "CM02", "2", "2", "16", "4", "20Mbps", "strategy.shard_optimizer=yes",
         "strategy.zero_stage=3", 1},
        {"multi-rack", "CM02", "2", "2", "16", "4", "20Mbps", "strategy.tensor_comm=nccl",
         "strategy.nccl_links=platform", 1},
        {"star", "CM02", "2", "2", "16", "1", "20Mbps", "strategy.bucket_mb=0.0005",
         "model.recompute=none", 1},
        {"multi-rack", "CM02", "2", "2", "16", "2", "20Mbps", "model.recompute=none",
         "model.recompute=none", 2},
        {"multi-rack", "CM02", "2", "2", "16", "4", "5Mbps", "model.recompute=none",
         "model.recompute=none", 2},
        {"multi-rack", "CM02", "2", "2", "16", "2", "5Mbps",
         "strategy.pipeline_schedule=interleaved", "strategy.virtual_stages=2", 2},
        {"multi-rack", "CM02", "2", "2", "16", "2", "20Mbps", "strategy.shard_optimizer=yes",
         "strategy.ring_messages=phases", 2},
        {"multi-rack", "CM02", "1", "4", "16", "2", "20Mbps", "model.recompute=none",
         "model.recompute=none", 2},
        {"multi-rack", "LV08", "2", "2", "16", "2", "20Mbps", "model.recompute=none",
         "model.recompute=none", 0},
        {"multi-rack", "LV08", "2", "2", "16", "4", "5Mbps", "model.recompute=none",
         "model.recompute=none", 0},
        {"fat-tree", "CM02", "2", "1", "8", "1", "20Mbps", "model.recompute=none",
         "model.recompute=none", 0},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        outcome_t o[2];
        int W = atoi(c[k].workers);
        for (int one = 0; one < 2; one++) {
            char platform[64], net[64], stages[64], dp[64], w[64], racks[64], bw[64];
            snprintf(platform, sizeof platform, "cluster.platform=%s", c[k].platform);
            snprintf(net, sizeof net, "cluster.network_model=%s", c[k].net);
            snprintf(stages, sizeof stages, "strategy.stages=%s", c[k].stages);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%s", c[k].dp);
            snprintf(w, sizeof w, "cluster.workers=%s", c[k].workers);
            snprintf(racks, sizeof racks, "cluster.racks=%s", c[k].racks);
            snprintf(bw, sizeof bw, "cluster.bandwidth=%s", c[k].bw);
            const char *sets[] = {
                "strategy.kind=pipeline", "strategy.micro_batches=4", "model.batch=8", arch,
                "run.steps=2", "strategy.tensor=4", "strategy.tensor_comm=formula", c[k].extra,
                c[k].extra2, "cluster.uplink_bandwidth=10Mbps", "cluster.latency=10us",
                "cluster.uplink_latency=10us", "cluster.device_flops=1Gf", "cluster.device=a100",
                one ? "strategy.tensor_members=one" : "strategy.tensor_members=all", platform, net,
                stages, dp, w, racks, bw,
                /* the replicas' collectives as messages too (on the
                 * a100, dp_comm = auto would take NCCL's form) */
                "strategy.dp_comm=messages"};
            o[one] = simulate(sets, 23, NULL);
            ck_assert_msg(o[one].ok, "case %zu: %s", k, o[one].err);
        }
        const char *said = c[k].one ? "one member of each tensor group simulated"
                                    : "every member of the tensor groups simulated";
        ck_assert_msg(strstr(o[1].summary, said), "case %zu: %s", k, o[1].summary);
        ck_assert_msg(!strstr(o[1].summary, "TCP window made 4 times as wide") == (c[k].one != 2),
                      "case %zu: %s", k, o[1].summary);
        ck_assert_msg(!strstr(o[0].summary, "member"), "case %zu: %s", k, o[0].summary);
        double end = o[0].end_time, err = fabs(o[1].end_time - end) / end;
        ck_assert_msg(err <= (c[k].one ? 5e-3 : 0),
                      "case %zu (%s %s, %s stages x %s replicas, %s, %s): one %.12g s, all "
                      "%.12g s (%.3g)",
                      k, c[k].platform, c[k].net, c[k].stages, c[k].dp, c[k].extra, c[k].extra2,
                      o[1].end_time, end, err);
        ck_assert_msg(fabs(o[1].bytes - o[0].bytes) <= 1e-9 * o[0].bytes,
                      "case %zu: %.0f bytes with one, %.0f with all", k, o[1].bytes, o[0].bytes);
        ck_assert_msg(fabs(o[1].host_joules - o[0].host_joules) <= 5e-3 * o[0].host_joules,
                      "case %zu: %.6g J with one, %.6g J with all", k, o[1].host_joules,
                      o[0].host_joules);
        for (int i = 0; i < W; i++) {
            ck_assert_msg(fabs(o[1].w_compute[i] - o[0].w_compute[i]) <= 5e-3 * end &&
                              fabs(o[1].w_comm[i] - o[0].w_comm[i]) <= 5e-3 * end &&
                              fabs(o[1].w_idle[i] - o[0].w_idle[i]) <= 5e-3 * end,
                          "case %zu worker %d: compute %g comm %g idle %g with one, %g %g %g "
                          "with all",
                          k, i, o[1].w_compute[i], o[1].w_comm[i], o[1].w_idle[i],
                          o[0].w_compute[i], o[0].w_comm[i], o[0].w_idle[i]);
            ck_assert_msg(o[1].w_steps[i] == o[0].w_steps[i] &&
                              fabs(o[1].w_sent[i] - o[0].w_sent[i]) <= 1e-3 * o[0].w_sent[i] &&
                              fabs(o[1].w_recv[i] - o[0].w_recv[i]) <= 1e-3 * o[0].w_recv[i],
                          "case %zu worker %d: %ld steps, %.0f bytes sent, %.0f received with "
                          "one; %ld, %.0f, %.0f with all",
                          k, i, o[1].w_steps[i], o[1].w_sent[i], o[1].w_recv[i], o[0].w_steps[i],
                          o[0].w_sent[i], o[0].w_recv[i]);
        }
    }
    unlink(path);
}
END_TEST

/* strategy.data_members = one against all: replica 0 of the pipeline simulated for the D,
 * where the replicas' collectives are in closed form (dp_comm = formula or nccl) and no
 * link carries two replicas' flows (multi-rack with a rack per tensor group, or a star).
 * The same step time to the digit (1e-9) on layouts with tensor groups (tensor_members one
 * and all), the interleaved schedule, ZeRO 1, 2 and 3 with prefetch, gradient buckets and
 * NCCL's time; the run's bytes and energy the same; every worker's
 * row (compute, communication, idle, steps, bytes) equal to the whole simulation's; the
 * summary says so; on multi-rack with dp_comm = formula the platform holds replica 0's
 * racks alone (the whole run's: every rack). Where replicas exchange messages (dp_comm =
 * messages), a rack holds two replicas or the platform is a fat-tree, every replica runs,
 * to the digit, and the summary says why. */
START_TEST(data_members_one_matches_all)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_two_blocks);
    static const struct {
        const char *platform, *dp_comm, *tensor, *stages, *dp, *workers, *racks, *extra, *extra2;
        int one; /* 1: data_members = one holds; 0: every replica, and why */
    } c[] = {
        {"multi-rack", "formula", "4", "2", "3", "24", "6", "strategy.tensor_members=one",
         "model.recompute=full", 1},
        {"multi-rack", "formula", "4", "2", "2", "16", "4", "strategy.tensor_members=all",
         "strategy.pipeline_schedule=1f1b", 1},
        {"multi-rack", "formula", "2", "2", "4", "16", "8",
         "strategy.pipeline_schedule=interleaved", "strategy.virtual_stages=2", 1},
        {"multi-rack", "formula", "2", "2", "2", "8", "4", "strategy.shard_optimizer=yes",
         "strategy.zero_stage=1", 1},
        {"multi-rack", "formula", "2", "2", "2", "8", "4", "strategy.shard_optimizer=yes",
         "strategy.zero_stage=3", 1},
        {"multi-rack", "formula", "2", "2", "2", "8", "4", "strategy.bucket_mb=0.0005",
         "model.recompute=none", 1},
        {"multi-rack", "nccl", "4", "2", "2", "16", "2", "strategy.tensor_comm=nccl",
         "model.recompute=none", 1},
        {"star", "formula", "2", "2", "4", "16", "1", "strategy.shard_optimizer=yes",
         "strategy.zero_stage=2", 1},
        {"multi-rack", "messages", "2", "2", "2", "8", "4", "model.recompute=none",
         "model.recompute=none", 0},
        {"multi-rack", "formula", "2", "1", "4", "8", "2", "model.recompute=none",
         "model.recompute=none", 0},
        {"fat-tree", "formula", "2", "2", "2", "8", "1", "model.recompute=none",
         "model.recompute=none", 0},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        outcome_t o[2];
        int W = atoi(c[k].workers);
        for (int one = 0; one < 2; one++) {
            char platform[64], dpc[64], tensor[64], stages[64], dp[64], w[64], racks[64];
            snprintf(platform, sizeof platform, "cluster.platform=%s", c[k].platform);
            snprintf(dpc, sizeof dpc, "strategy.dp_comm=%s", c[k].dp_comm);
            snprintf(tensor, sizeof tensor, "strategy.tensor=%s", c[k].tensor);
            snprintf(stages, sizeof stages, "strategy.stages=%s", c[k].stages);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%s", c[k].dp);
            snprintf(w, sizeof w, "cluster.workers=%s", c[k].workers);
            snprintf(racks, sizeof racks, "cluster.racks=%s", c[k].racks);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.micro_batches=4",
                                  "model.batch=8",
                                  arch,
                                  "run.steps=2",
                                  "strategy.tensor_comm=formula",
                                  c[k].extra,
                                  c[k].extra2,
                                  "cluster.bandwidth=20Mbps",
                                  "cluster.uplink_bandwidth=10Mbps",
                                  "cluster.latency=10us",
                                  "cluster.uplink_latency=10us",
                                  "cluster.device_flops=1Gf",
                                  "cluster.device=a100",
                                  one ? "strategy.data_members=one" : "strategy.data_members=all",
                                  platform,
                                  dpc,
                                  tensor,
                                  stages,
                                  dp,
                                  w,
                                  racks};
            o[one] = simulate(sets, 22, NULL);
            ck_assert_msg(o[one].ok, "case %zu: %s", k, o[one].err);
        }
        const char *said = c[k].one ? "replica 0 simulated for all" : "every replica simulated";
        ck_assert_msg(strstr(o[1].summary, said), "case %zu: %s", k, o[1].summary);
        int racks =
            c[k].one && !strcmp(c[k].platform, "multi-rack") && !strcmp(c[k].dp_comm, "formula");
        int replica = atoi(c[k].stages) * atoi(c[k].tensor);
        ck_assert_msg(o[0].built == W && o[1].built == (racks ? replica : W),
                      "case %zu: hosts of %d and %d workers built of %d", k, o[0].built, o[1].built,
                      W);
        ck_assert_msg(!strstr(o[0].summary, "data_members"), "case %zu: %s", k, o[0].summary);
        double end = o[0].end_time;
        ck_assert_msg(fabs(o[1].end_time - end) <= 1e-9 * end,
                      "case %zu (%s, dp_comm %s, t%s p%s d%s, %s, %s): one %.12g s, all %.12g s", k,
                      c[k].platform, c[k].dp_comm, c[k].tensor, c[k].stages, c[k].dp, c[k].extra,
                      c[k].extra2, o[1].end_time, end);
        ck_assert_msg(fabs(o[1].bytes - o[0].bytes) <= 1e-9 * o[0].bytes,
                      "case %zu: %.0f bytes with one, %.0f with all", k, o[1].bytes, o[0].bytes);
        ck_assert_msg(fabs(o[1].host_joules - o[0].host_joules) <= 1e-9 * o[0].host_joules,
                      "case %zu: %.9g J with one, %.9g J with all", k, o[1].host_joules,
                      o[0].host_joules);
        for (int i = 0; i < W; i++)
            ck_assert_msg(fabs(o[1].w_compute[i] - o[0].w_compute[i]) <= 1e-9 * end &&
                              fabs(o[1].w_comm[i] - o[0].w_comm[i]) <= 1e-9 * end &&
                              fabs(o[1].w_idle[i] - o[0].w_idle[i]) <= 1e-9 * end &&
                              o[1].w_steps[i] == o[0].w_steps[i] &&
                              fabs(o[1].w_sent[i] - o[0].w_sent[i]) <= 1e-9 * o[0].w_sent[i] &&
                              fabs(o[1].w_recv[i] - o[0].w_recv[i]) <= 1e-9 * o[0].w_recv[i],
                          "case %zu worker %d: compute %g comm %g idle %g, %.0f bytes sent with "
                          "one; %g %g %g, %.0f with all",
                          k, i, o[1].w_compute[i], o[1].w_comm[i], o[1].w_idle[i], o[1].w_sent[i],
                          o[0].w_compute[i], o[0].w_comm[i], o[0].w_idle[i], o[0].w_sent[i]);
    }
    unlink(path);
}
END_TEST

/* strategy.tensor_overlap, against the same run without it: where every layer's compute
 * outlasts its all-reduce, the collectives add M / T instead of M (M: their whole time,
 * found from two device speeds, A(F) = C / F + M and A(2F) = C / 2F + M, so M = 2 A(2F) -
 * A(F)); where compute is all but free nothing hides and the times agree; the bytes are the
 * same. Then pipe_overlap_exposed by hand (the cli suite has its refusal). */
START_TEST(tensor_overlap_hides_what_compute_covers)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    const int T = 4;
    static const char *const flops[] = {"cluster.device_flops=10Mf", "cluster.device_flops=20Mf",
                                        "cluster.device_flops=1000000Gf"};
    outcome_t o[3][2];
    for (int f = 0; f < 3; f++)
        for (int ov = 0; ov < 2; ov++) {
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=3",
                                  "model.batch=6",
                                  arch,
                                  "run.steps=2",
                                  "cluster.workers=4",
                                  "strategy.tensor=4",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "strategy.tensor_comm=formula",
                                  flops[f],
                                  ov ? "strategy.tensor_overlap=yes"
                                     : "strategy.tensor_overlap=no"};
            o[f][ov] = simulate(sets, 13, NULL);
            ck_assert_msg(o[f][ov].ok, "%s", o[f][ov].err);
        }
    ck_assert_msg(strstr(o[0][1].summary, "overlapped with its layer's compute in 4 chunks"), "%s",
                  o[0][1].summary);
    double M = 2 * o[1][0].end_time - o[0][0].end_time;
    ck_assert_msg(M > 0 && M < 0.1 * o[0][0].end_time, "collectives %.9g s of %.9g s", M,
                  o[0][0].end_time);
    /* one stage: no message between stages takes time that compute does not scale */
    double want = o[0][0].end_time - (T - 1.0) / T * M;
    ck_assert_msg(fabs(o[0][1].end_time - want) <= 1e-9 * want,
                  "overlap %.12g s, want %.12g s (no overlap %.12g s, collectives %.9g s)",
                  o[0][1].end_time, want, o[0][0].end_time, M);
    ck_assert_msg(fabs(o[2][1].end_time - o[2][0].end_time) <= 1e-5 * o[2][0].end_time,
                  "free compute: overlap %.12g s, without %.12g s", o[2][1].end_time,
                  o[2][0].end_time);
    for (int f = 0; f < 3; f++)
        ck_assert(o[f][1].bytes == o[f][0].bytes);
    unlink(path);
    /* by hand: T = 4, compute 3 s, collective 2 s: 2/4 exposed; collective 5 s: 5/4 + 3/4 2 */
    ck_assert(fabs(pipe_overlap_exposed(3, 2, 4) - 0.5) < 1e-15);
    ck_assert(fabs(pipe_overlap_exposed(3, 5, 4) - 2.75) < 1e-15);
    ck_assert(fabs(pipe_overlap_exposed(0, 5, 4) - 5) < 1e-15);
}
END_TEST

/* The layout's cut (pipe_cut_stages): the lowest largest stage, and among such cuts the most
 * even one. Against a brute force over every cut of small random profiles, and by hand:
 * 79 equal layers and a last one of 3 (a block and its head) in 40 chunks give a largest
 * of 3 and 38 chunks of 2 (the largest alone would allow 1, 1, 1, 3, 3 ...). */
static void cut_measure(const pipe_plan_t *plan, const double *cost, double *largest,
                        double *squares)
{
    *largest = *squares = 0;
    for (int c = 0; c < plan->C; c++) {
        double sum = 0;
        for (int g = plan->first[c]; g < plan->first[c + 1]; g++)
            sum += cost[g];
        *largest = fmax(*largest, sum);
        *squares += sum * sum;
    }
}

static uint32_t cut_rand(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*x >> 33);
}

START_TEST(pipeline_cut_even)
{
    pipe_plan_t *plan = dt_calloc(1, sizeof *plan);
    plan->first = dt_calloc(81, sizeof(int)); /* (C + 1) as pipe_plan_layout sizes it */
    int start[80];
    double cost[80];
    for (int g = 0; g < 80; g++)
        start[g] = g, cost[g] = g < 79 ? 1 : 3;
    plan->C = 40;
    pipe_cut_stages(plan, cost, start, 80, 80);
    int twos = 0;
    for (int c = 0; c < 40; c++) {
        int n = plan->first[c + 1] - plan->first[c];
        ck_assert_msg(n >= 1 && n <= 3, "chunk %d of %d layers", c, n);
        twos += n == 2;
    }
    ck_assert_int_eq(plan->first[39], 79); /* the heavy one alone */
    ck_assert_int_eq(twos, 38);
    /* brute force: every cut of G groups into k, as a bit mask of where stages start */
    uint64_t rng = 7;
    for (int trial = 0; trial < 200; trial++) {
        int G = 2 + (int)(cut_rand(&rng) % 11), k = 1 + (int)(cut_rand(&rng) % (uint32_t)G);
        for (int g = 0; g < G; g++)
            start[g] = g, cost[g] = 1 + (double)(cut_rand(&rng) % 4);
        plan->C = k;
        pipe_cut_stages(plan, cost, start, G, G);
        double largest, squares, best_l = INFINITY, best_s = INFINITY;
        cut_measure(plan, cost, &largest, &squares);
        for (unsigned mask = 0; mask < 1u << (G - 1); mask++) {
            if (__builtin_popcount(mask) != k - 1)
                continue;
            pipe_plan_t *t = dt_calloc(1, sizeof *t);
            t->first = dt_calloc((size_t)G + 1, sizeof(int));
            t->C = 0;
            t->first[t->C++] = 0;
            for (int g = 1; g < G; g++)
                if (mask & 1u << (g - 1))
                    t->first[t->C++] = g;
            t->first[t->C] = G;
            double l, q;
            cut_measure(t, cost, &l, &q);
            free(t->first);
            free(t);
            if (l < best_l - 1e-12 || (l <= best_l + 1e-12 && q < best_s))
                best_l = l, best_s = q;
        }
        ck_assert_msg(fabs(largest - best_l) < 1e-9 && fabs(squares - best_s) < 1e-9,
                      "G %d k %d: largest %g squares %g, best %g %g", G, k, largest, squares,
                      best_l, best_s);
    }
    free(plan->first);
    free(plan);
}
END_TEST

/* The platform writer reads a plan alone (sim_platform_plan_t, no scenario): a star of two
 * hosts with the fault injector's host and an edge platform of one server and two clients
 * (one of its own links), written by hand. */
START_TEST(platform_xml_from_a_plan)
{
    sim_platform_plan_t p = {.kind = SIM_PLATFORM_STAR,
                             .workers = 2,
                             .speed = 1e9,
                             .power = "<P/>",
                             .control = 1,
                             .bandwidth = 100,
                             .latency = 1e-3};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sim_platform_write_xml(&p, f);
    fclose(f);
    const char *head = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                       "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n";
    char want[2048];
    snprintf(want, sizeof want,
             "%s<zone id=\"world\" routing=\"Full\">\n"
             "  <cluster id=\"star\" prefix=\"node-\" suffix=\"\" radical=\"0-1\" "
             "speed=\"1000000000f\" bw=\"100Bps\" lat=\"0.001s\" sharing_policy=\"SPLITDUPLEX\" "
             "bb_bw=\"200Bps\" bb_lat=\"0s\" bb_sharing_policy=\"FATPIPE\"><P/></cluster>\n"
             "  <zone id=\"dtsim-control\" routing=\"None\"><host id=\"dtsim-faults\" "
             "speed=\"1f\"><prop id=\"wattage_per_state\" value=\"0:0\"/></host></zone>\n"
             "</zone>\n</platform>\n",
             head);
    ck_assert_str_eq(text, want);
    free(text);
    sim_platform_client_link_t c[2] = {{10, 20, 0.5, "fibre"}, {1, 2, 0.25, "client"}};
    sim_platform_plan_t e = {.kind = SIM_PLATFORM_EDGE,
                             .workers = 2,
                             .servers = 1,
                             .speed = 5,
                             .power = "",
                             .uplink_bandwidth = 1000,
                             .uplink_latency = 0.125,
                             .client = c};
    f = open_memstream(&text, &len);
    sim_platform_write_xml(&e, f);
    fclose(f);
    snprintf(want, sizeof want,
             "%s<zone id=\"world\" routing=\"Full\">\n"
             "  <link id=\"dc\" bandwidth=\"1000Bps\" latency=\"0.125s\" "
             "sharing_policy=\"SPLITDUPLEX\"/>\n"
             "  <host id=\"server-0\" speed=\"5f\"></host>\n"
             "  <host id=\"client-0\" speed=\"5f\"><prop id=\"access\" value=\"fibre\"/></host>\n"
             "  <link id=\"up-0\" bandwidth=\"10Bps\" latency=\"0.5s\"/>\n"
             "  <link id=\"down-0\" bandwidth=\"20Bps\" latency=\"0.5s\"/>\n"
             "  <host id=\"client-1\" speed=\"5f\"><prop id=\"access\" value=\"client\"/></host>\n"
             "  <link id=\"up-1\" bandwidth=\"1Bps\" latency=\"0.25s\"/>\n"
             "  <link id=\"down-1\" bandwidth=\"2Bps\" latency=\"0.25s\"/>\n"
             "  <route src=\"client-0\" dst=\"server-0\" symmetrical=\"NO\"><link_ctn id=\"up-0\"/>"
             "<link_ctn id=\"dc\" direction=\"DOWN\"/></route>\n"
             "  <route src=\"server-0\" dst=\"client-0\" symmetrical=\"NO\"><link_ctn id=\"dc\" "
             "direction=\"UP\"/><link_ctn id=\"down-0\"/></route>\n"
             "  <route src=\"client-1\" dst=\"server-0\" symmetrical=\"NO\"><link_ctn id=\"up-1\"/>"
             "<link_ctn id=\"dc\" direction=\"DOWN\"/></route>\n"
             "  <route src=\"server-0\" dst=\"client-1\" symmetrical=\"NO\"><link_ctn id=\"dc\" "
             "direction=\"UP\"/><link_ctn id=\"down-1\"/></route>\n"
             "</zone>\n</platform>\n",
             head);
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

/* The catalogue's value of field f for device name. */
static double catalogue_value(const char *name, sim_device_field_t f)
{
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cat[i].name, name))
            return cat[i].value[f];
    ck_abort_msg("no device %s", name);
    return 0;
}

/* NCCL's time of an all-reduce on 8 GPUs against its formula worked by hand from NCCL's
 * tuning figures (base latency + steps x hop latency + bytes / (bus bandwidth x protocol
 * efficiency x the algorithm's ratio)): 1 KB is latency-bound, ring with LL (15 us: 6.6 +
 * 14 x 0.6) on both devices; 4 MiB on the A100 takes LL128 (40.6 us + n / (0.92 B x 8/14));
 * 1 GB takes NVLS on the H100 (23 us + n / (480 GB/s x 8/14)) and the ring with Simple on
 * the A100 (8.4 + 14 x 3.4 us + n / (B x 8/14)). The bus bandwidth of 1 GB (algbw x
 * 2 (T-1) / T) is within 5% of nccl-tests' 480 GB/s on the H100 and of the catalogue's
 * figure on the A100. */
START_TEST(nccl_time_matches_its_formula)
{
    double h100 = catalogue_value("h100", SIM_DEV_NVLINK_BUSBW);
    double h100_nvls = catalogue_value("h100", SIM_DEV_NVLS_BUSBW);
    double a100 = catalogue_value("a100", SIM_DEV_NVLINK_BUSBW);
    ck_assert(h100 == 370e9 && h100_nvls == 480e9 && a100 == 235e9);
    ck_assert(isnan(catalogue_value("a100", SIM_DEV_NVLS_BUSBW)));
    sim_nccl_t h, a;
    sim_nccl_nvlink(&h, 8, h100, h100_nvls);
    sim_nccl_nvlink(&a, 8, a100, 0);
    double share = 2.0 * 7 / 8; /* a GPU's bytes of a ring all-reduce, over n */
    static const struct {
        int h100;
        double n;
        sim_nccl_algo_t algo;
        sim_nccl_proto_t proto;
        double base_us, hop_us, steps, bw;
    } c[] = {
        {1, 1024, SIM_NCCL_RING, SIM_NCCL_LL, 6.6, 0.6, 14, 370e9 * 0.25},
        {0, 1024, SIM_NCCL_RING, SIM_NCCL_LL, 6.6, 0.6, 14, 235e9 * 0.25},
        {0, 4194304, SIM_NCCL_RING, SIM_NCCL_LL128, 14.0, 1.9, 14, 235e9 * 0.92},
        {1, 1e9, SIM_NCCL_NVLS, SIM_NCCL_SIMPLE, 0, 23.0, 1, 480e9},
        {0, 1e9, SIM_NCCL_RING, SIM_NCCL_SIMPLE, 8.4, 3.4, 14, 235e9},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        sim_nccl_algo_t algo;
        sim_nccl_proto_t proto;
        double t =
            sim_nccl_best(c[k].h100 ? &h : &a, SIM_NCCL_ALLREDUCE, -1, -1, c[k].n, &algo, &proto);
        double want = (c[k].base_us + c[k].steps * c[k].hop_us) * 1e-6 + c[k].n * share / c[k].bw;
        ck_assert_msg(algo == c[k].algo && proto == c[k].proto, "case %zu: %s/%s", k,
                      sim_nccl_algo_name(algo), sim_nccl_proto_name(proto));
        ck_assert_msg(fabs(t - want) <= 1e-12 * want, "case %zu: %.15g s, want %.15g s", k, t,
                      want);
    }
    double t = sim_nccl_best(&h, SIM_NCCL_ALLREDUCE, -1, -1, 1e9, NULL, NULL);
    double busbw = 1e9 / t * share;
    ck_assert_msg(fabs(busbw - 480e9) <= 0.05 * 480e9, "h100 busbw %g", busbw);
    t = sim_nccl_best(&a, SIM_NCCL_ALLREDUCE, -1, -1, 1e9, NULL, NULL);
    busbw = 1e9 / t * share;
    ck_assert_msg(fabs(busbw - a100) <= 0.05 * a100, "a100 busbw %g", busbw);
    /* the ring alone on the H100 (NCCL_ALGO=Ring) reaches its 370 GB/s within 5% */
    t = sim_nccl_best(&h, SIM_NCCL_ALLREDUCE, SIM_NCCL_RING, -1, 1e9, NULL, NULL);
    ck_assert_msg(fabs(1e9 / t * share - 370e9) <= 0.05 * 370e9, "h100 ring %g", 1e9 / t * share);
    /* what NCCL has no pairing for */
    ck_assert(sim_nccl_time(&h, SIM_NCCL_REDUCE_SCATTER, SIM_NCCL_TREE, SIM_NCCL_SIMPLE, 1e6) < 0);
    ck_assert(sim_nccl_time(&h, SIM_NCCL_ALLREDUCE, SIM_NCCL_NVLS, SIM_NCCL_LL, 1e6) < 0);
    ck_assert(sim_nccl_time(&a, SIM_NCCL_ALLREDUCE, SIM_NCCL_NVLS, SIM_NCCL_SIMPLE, 1e6) < 0);
    ck_assert(sim_nccl_best(&a, SIM_NCCL_ALLREDUCE, SIM_NCCL_NVLS, -1, 1e6, NULL, NULL) < 0);
}
END_TEST

/* NCCL's tuner's choice is the fastest of the fixed choices, every collective, size (1 B to
 * 4 GiB) and group (2, 4, 8 GPUs of either device): the minimum over every (algorithm,
 * protocol) pairing, and over the protocols of a fixed algorithm; the three regimes all
 * occur on the H100 (LL, then NVLS) and the A100 (LL, LL128, Simple). */
START_TEST(nccl_auto_is_the_fastest_fixed_choice)
{
    int seen[2][SIM_NCCL_ALGOS][SIM_NCCL_PROTOS] = {{{0}}};
    for (int dev = 0; dev < 2; dev++)
        for (int T = 2; T <= 8; T *= 2) {
            sim_nccl_t m;
            if (dev)
                sim_nccl_nvlink(&m, T, 370e9, 480e9);
            else
                sim_nccl_nvlink(&m, T, 235e9, 0);
            for (int c = 0; c < 3; c++)
                for (double n = 1; n <= 4294967296.0; n *= 2) {
                    sim_nccl_algo_t a;
                    sim_nccl_proto_t p;
                    double best = sim_nccl_best(&m, (sim_nccl_coll_t)c, -1, -1, n, &a, &p);
                    double low = -1;
                    for (int i = 0; i < SIM_NCCL_ALGOS; i++) {
                        double low_i = -1;
                        for (int j = 0; j < SIM_NCCL_PROTOS; j++) {
                            double f = sim_nccl_best(&m, (sim_nccl_coll_t)c, i, j, n, NULL, NULL);
                            ck_assert(f == sim_nccl_time(&m, (sim_nccl_coll_t)c, (sim_nccl_algo_t)i,
                                                         (sim_nccl_proto_t)j, n));
                            if (f >= 0 && (low_i < 0 || f < low_i))
                                low_i = f;
                        }
                        ck_assert(sim_nccl_best(&m, (sim_nccl_coll_t)c, i, -1, n, NULL, NULL) ==
                                  low_i);
                        if (low_i >= 0 && (low < 0 || low_i < low))
                            low = low_i;
                    }
                    ck_assert_msg(best == low && best > 0,
                                  "dev %d T=%d coll %d n=%.0f: %g, "
                                  "fastest fixed %g",
                                  dev, T, c, n, best, low);
                    ck_assert(best == sim_nccl_time(&m, (sim_nccl_coll_t)c, a, p, n));
                    if (T == 8 && c == SIM_NCCL_ALLREDUCE)
                        seen[dev][a][p] = 1;
                }
        }
    ck_assert(seen[1][SIM_NCCL_RING][SIM_NCCL_LL] && seen[1][SIM_NCCL_NVLS][SIM_NCCL_SIMPLE]);
    ck_assert(seen[0][SIM_NCCL_RING][SIM_NCCL_LL] && seen[0][SIM_NCCL_RING][SIM_NCCL_LL128] &&
              seen[0][SIM_NCCL_RING][SIM_NCCL_SIMPLE]);
}
END_TEST

/* strategy.tensor_comm = nccl in a pipeline. On the platform's links (nccl_links =
 * platform) with the ring and Simple fixed, NCCL's model is the ring formula: the same step
 * time as tensor_comm = formula to 1e-9, with and without sequence parallelism, and NCCL's
 * tuner, free to choose, is never slower. On the H100's NVLink, one stage of 4 members
 * and its 24 all-reduces of 512 bytes (3 steps x 2 micro-batches x 4 split layers), each
 * ring/LL's 6.6 + 6 x 0.6 us + 512 x 1.5 / (370 GB/s / 4): the run takes their sum longer
 * than with the formula on 100000 Gbps links without latency (to 1e-4: what those cost). */
START_TEST(tensor_nccl_matches_formula)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    for (int sp = 0; sp < 2; sp++) {
        outcome_t o[3];
        for (int k = 0; k < 3; k++) {
            const char *sets[] = {
                "strategy.kind=pipeline",
                "strategy.micro_batches=3",
                "model.batch=6",
                arch,
                "run.steps=2",
                "strategy.tensor=4",
                "cluster.workers=4",
                "strategy.stages=1",
                "cluster.bandwidth=1Gbps",
                "cluster.latency=10us",
                "cluster.device_flops=1Gf",
                "cluster.network_model=CM02",
                sp ? "strategy.sequence_parallel=yes" : "strategy.sequence_parallel=no",
                k == 0 ? "strategy.tensor_comm=formula" : "strategy.tensor_comm=nccl",
                "strategy.nccl_links=platform",
                k == 1 ? "strategy.nccl_algorithm=ring" : "strategy.nccl_algorithm=auto",
                k == 1 ? "strategy.nccl_protocol=simple" : "strategy.nccl_protocol=auto"};
            o[k] = simulate(sets, 17, NULL);
            ck_assert_msg(o[k].ok, "%s", o[k].err);
        }
        ck_assert_msg(strstr(o[1].summary, "tensor all-reduces as NCCL runs them (algorithm "
                                           "ring, protocol simple, on the platform's links"),
                      "%s", o[1].summary);
        ck_assert_msg(fabs(o[1].end_time - o[0].end_time) <= 1e-9 * o[0].end_time,
                      "sp=%d: nccl ring/simple %.12g s, formula %.12g s", sp, o[1].end_time,
                      o[0].end_time);
        ck_assert(o[1].bytes == o[0].bytes);
        ck_assert_msg(o[2].end_time <= o[0].end_time * (1 + 1e-12),
                      "sp=%d: nccl auto %.12g s, formula %.12g s", sp, o[2].end_time,
                      o[0].end_time);
    }
    outcome_t o[2];
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              "strategy.micro_batches=2",
                              "model.batch=4",
                              arch,
                              "run.steps=3",
                              "cluster.workers=4",
                              "strategy.tensor=4",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=100000Gbps",
                              "cluster.latency=0",
                              "cluster.device=h100",
                              k ? "strategy.tensor_comm=nccl" : "strategy.tensor_comm=formula"};
        o[k] = simulate(sets, 14, NULL);
        ck_assert_msg(o[k].ok, "%s", o[k].err);
    }
    ck_assert_msg(strstr(o[1].summary, "on the device's NVLink with NVLS"), "%s", o[1].summary);
    double ar = (6.6 + 6 * 0.6) * 1e-6 + 512 * 1.5 / (370e9 * 0.25);
    double want = 24 * ar, got = o[1].end_time - o[0].end_time;
    /* less the formula's own all-reduces at 100000 Gbps, about 1e-8 s in all */
    ck_assert_msg(fabs(got - want) <= 1e-4 * want, "nccl adds %.12g s, want %.12g s", got, want);
    unlink(path);
}
END_TEST

/* NCCL between servers (sim_nccl_net) against its formulas worked by hand from NCCL's
 * tuning figures: 4 servers of 8 A100s, a 200 Gbit/s NIC a GPU at 0.96 of it (192 GB/s a
 * server), T = 32. Ring: 2 (T-1) = 62 steps of which 2 N = 8 cross the network (14, 4.0,
 * 2.7 us by protocol), the other 54 NVLink's at least the network's overhead (3, 1, 1 us);
 * the bus bandwidth the NICs' 192 GB/s (below NVLink's 235), x 0.92 for LL128, LL's a
 * quarter capped at 20.4 GB/s. Tree: 2 (7 NVLink + log2 4 network) steps and half the bus
 * bandwidth x 0.92 (x 120/128 for LL128). The tuner's switch points are where the hand
 * formulas of its successive choices cross; with one GPU a server (64 servers, a DP group
 * of a t8 layout) every step crosses the network and the ring's LL128 keeps 0.7; on 2
 * servers the tree's NICs carry twice the bus bandwidth; one server is the NVLink model. */
START_TEST(nccl_net_matches_its_formula)
{
    sim_nccl_t m;
    sim_nccl_net(&m, 32, 4, 235e9, 8 * 25e9 * 0.96);
    const double B = 192e9, n = 1e9, ring_share = 2.0 * 31 / 32;
    static const struct {
        sim_nccl_algo_t a;
        sim_nccl_proto_t p;
        double lat_us, bw; /* the algorithm's bandwidth: bytes of n a second */
    } c[] = {
        {SIM_NCCL_RING, SIM_NCCL_SIMPLE, 8.4 + 54 * 3.4 + 8 * 14.0, B / ring_share},
        {SIM_NCCL_RING, SIM_NCCL_LL128, 14.0 + 54 * 1.9 + 8 * 4.0, 0.92 * B / ring_share},
        {SIM_NCCL_RING, SIM_NCCL_LL, 6.6 + 54 * 1.0 + 8 * 2.7, 20.4e9 / ring_share},
        {SIM_NCCL_TREE, SIM_NCCL_SIMPLE, 0 + 2 * (7 * 28.0 + 2 * 28.0), 0.5 * 0.92 * B},
        {SIM_NCCL_TREE, SIM_NCCL_LL128, 14.0 + 2 * (7 * 1.25 + 2 * 8.5),
         0.5 * 0.92 * 120.0 / 128.0 * B},
        {SIM_NCCL_TREE, SIM_NCCL_LL, 6.8 + 2 * (7 * 0.6 + 2 * 5.0), 0.5 * 20.4e9},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        double t = sim_nccl_time(&m, SIM_NCCL_ALLREDUCE, c[k].a, c[k].p, n);
        double want = c[k].lat_us * 1e-6 + n / c[k].bw;
        ck_assert_msg(fabs(t - want) <= 1e-12 * want, "case %zu: %.15g s, want %.15g", k, t, want);
    }
    /* reduce-scatter: T-1 = 31 steps, N-1 = 3 across servers, half the ring's bytes */
    double rs = sim_nccl_time(&m, SIM_NCCL_REDUCE_SCATTER, SIM_NCCL_RING, SIM_NCCL_SIMPLE, n);
    double want = (8.4 + 28 * 3.4 + 3 * 14.0) * 1e-6 + n * 31.0 / 32 / B;
    ck_assert_msg(fabs(rs - want) <= 1e-12 * want, "reduce-scatter %.15g, want %.15g", rs, want);
    ck_assert(sim_nccl_time(&m, SIM_NCCL_ALLGATHER, SIM_NCCL_TREE, SIM_NCCL_SIMPLE, n) < 0);
    ck_assert(sim_nccl_time(&m, SIM_NCCL_ALLREDUCE, SIM_NCCL_NVLS, SIM_NCCL_SIMPLE, n) < 0);
    /* the tuner: tree/LL, then tree/LL128, ring/LL128, ring/Simple, each switch where the
     * two hand formulas cross */
    for (size_t k = 0; k < 3; k++) {
        static const int order[4] = {5, 4, 1, 0};
        int i = order[k], j = order[k + 1];
        double x = (c[j].lat_us - c[i].lat_us) * 1e-6 / (1 / c[i].bw - 1 / c[j].bw);
        sim_nccl_algo_t a;
        sim_nccl_proto_t p;
        sim_nccl_best(&m, SIM_NCCL_ALLREDUCE, -1, -1, x * (1 - 1e-9), &a, &p);
        ck_assert_msg(a == c[i].a && p == c[i].p, "below %.0f: %s/%s", x, sim_nccl_algo_name(a),
                      sim_nccl_proto_name(p));
        sim_nccl_best(&m, SIM_NCCL_ALLREDUCE, -1, -1, x * (1 + 1e-9), &a, &p);
        ck_assert_msg(a == c[j].a && p == c[j].p, "above %.0f: %s/%s", x, sim_nccl_algo_name(a),
                      sim_nccl_proto_name(p));
    }
    /* one GPU a server on each of 64, a 400 Gbit/s NIC at 0.96 (48 GB/s): 126 steps, all on
     * the network (NCCL's 2 N = 128, as many as there are) */
    sim_nccl_net(&m, 64, 64, 0, 48e9);
    double t = sim_nccl_time(&m, SIM_NCCL_ALLREDUCE, SIM_NCCL_RING, SIM_NCCL_LL128, n);
    want = (14.0 + 126 * 4.0) * 1e-6 + n * 2 * 63.0 / 64 / (0.7 * 48e9);
    ck_assert_msg(fabs(t - want) <= 1e-12 * want, "64 x 1: %.15g, want %.15g", t, want);
    /* 2 servers: the tree's bus bandwidth is NVLink's 235 where the NICs would carry 384 */
    sim_nccl_net(&m, 16, 2, 235e9, 8 * 25e9 * 0.96);
    t = sim_nccl_time(&m, SIM_NCCL_ALLREDUCE, SIM_NCCL_TREE, SIM_NCCL_SIMPLE, n);
    want = 2 * (7 * 28.0 + 1 * 28.0) * 1e-6 + n / (0.5 * 0.92 * 235e9);
    ck_assert_msg(fabs(t - want) <= 1e-12 * want, "2 x 8 tree: %.15g, want %.15g", t, want);
    /* one server: the NVLink model without NVLS, to the bit */
    sim_nccl_t one, nv;
    sim_nccl_net(&one, 8, 1, 235e9, 192e9);
    sim_nccl_nvlink(&nv, 8, 235e9, 0);
    for (int cl = 0; cl < 3; cl++)
        for (int a = 0; a < SIM_NCCL_ALGOS; a++)
            for (int p = 0; p < SIM_NCCL_PROTOS; p++)
                for (double b = 1; b < 5e9; b *= 7)
                    ck_assert(sim_nccl_time(&one, (sim_nccl_coll_t)cl, (sim_nccl_algo_t)a,
                                            (sim_nccl_proto_t)p, b) ==
                              sim_nccl_time(&nv, (sim_nccl_coll_t)cl, (sim_nccl_algo_t)a,
                                            (sim_nccl_proto_t)p, b));
    /* the tuner is the fastest fixed pairing between servers too */
    for (int N = 2; N <= 16; N *= 4)
        for (int local = 1; local <= 8; local *= 8) {
            sim_nccl_net(&m, N * local, N, 370e9, local * 48e9);
            for (int cl = 0; cl < 3; cl++)
                for (double b = 1; b < 5e9; b *= 3) {
                    double best = sim_nccl_best(&m, (sim_nccl_coll_t)cl, -1, -1, b, NULL, NULL),
                           low = -1;
                    for (int a = 0; a < SIM_NCCL_ALGOS; a++)
                        for (int p = 0; p < SIM_NCCL_PROTOS; p++) {
                            double f = sim_nccl_time(&m, (sim_nccl_coll_t)cl, (sim_nccl_algo_t)a,
                                                     (sim_nccl_proto_t)p, b);
                            if (f >= 0 && (low < 0 || f < low))
                                low = f;
                        }
                    ck_assert(best == low && best > 0);
                }
        }
}
END_TEST

/* allreduce with strategy.dp_comm = nccl: the gradients summed at once in rank order train
 * the weights single takes (to float rounding, replicas identical, shared or not), and each
 * of the 20 steps adds NCCL's all-reduce time by hand to worker 0's compute (a star of
 * 1 Gbps links: 4 servers of one GPU, ring and Simple fixed: 8.4 + 6 x 14 us + 2 x 3/4 of
 * the gradient's bytes / (0.96 x 125 MB/s)), the same run twice to the bit. */
START_TEST(allreduce_nccl_trains_and_times_by_hand)
{
    for (int shared = 0; shared < 2; shared++) {
        const char *sets[] = {"strategy.kind=allreduce", "strategy.dp_comm=nccl",
                              "cluster.workers=4", "cluster.bandwidth=1Gbps",
                              shared ? "run.shared_replicas=yes" : "run.shared_replicas=no"};
        check_equivalent(sets, 5, 4);
    }
    const char *sets[] = {
        "strategy.kind=allreduce",      "strategy.dp_comm=nccl",  "cluster.workers=4",
        "cluster.bandwidth=1Gbps",      "run.shared_replicas=no", "strategy.nccl_algorithm=ring",
        "strategy.nccl_protocol=simple"};
    float *w1 = NULL, *w2 = NULL;
    outcome_t o = simulate(sets, 7, &w1), again = simulate(sets, 7, &w2);
    ck_assert_msg(strstr(o.summary, "all-reduces as NCCL runs them (4 servers of 1, algorithm "
                                    "ring, protocol simple"),
                  "%s", o.summary);
    double t = (8.4 + 6 * 14.0) * 1e-6 + 1.5 * 4.0 * (double)o.n_params / (0.96 * 1e9 / 8);
    double got = (o.end_time - o.w_compute[0]) / 20;
    ck_assert_msg(fabs(got - t) <= 1e-9 * t, "%.12g s a step, want %.12g", got, t);
    ck_assert(again.end_time == o.end_time && !memcmp(w1, w2, sizeof(float) * o.n_params));
    free(w1);
    free(w2);
}
END_TEST

/* strategy.dp_comm = auto, the default: NCCL's form on a GPU with an NVLink figure, messages
 * elsewhere. 8 replicas of one stage (tp_block, 4832 bytes of gradients) in one server (a
 * multi-rack platform of one rack, an h100: NVLink at 370 GB/s, NVLS at 480): each of 3
 * steps adds NCCL's all-reduce on NVLink over the 1-replica run's time, NVLink SHARP's
 * when nccl_algorithm = nvls (one server has it: it had none, and ran the ring while the
 * summary said nvls), the same under auto as under nccl; without a device (no NVLink
 * figure) auto is messages to the digit. */
START_TEST(dp_comm_auto_is_nccl_on_gpus_with_nvls_in_a_server)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    const double bytes = 1208 * 4.0;
    sim_nccl_t nv;
    sim_nccl_nvlink(&nv, 8, 370e9, 480e9);
    static const char *const comm[] = {"strategy.dp_comm=auto", "strategy.dp_comm=nccl",
                                       "strategy.dp_comm=messages"};
    for (int algo = 0; algo < 2; algo++) {
        outcome_t o[4];
        for (int k = 0; k < 4; k++) { /* k = 3: one replica */
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=2",
                                  "model.batch=2",
                                  arch,
                                  "run.steps=3",
                                  k < 3 ? "cluster.workers=8" : "cluster.workers=1",
                                  k < 3 ? "strategy.data_parallel=8" : "strategy.data_parallel=1",
                                  "cluster.platform=multi-rack",
                                  "cluster.racks=1",
                                  "cluster.network_model=CM02",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1Gf",
                                  "cluster.device=h100",
                                  comm[k < 3 ? k : 0],
                                  algo ? "strategy.nccl_algorithm=nvls"
                                       : "strategy.nccl_algorithm=ring",
                                  "strategy.nccl_protocol=simple"};
            o[k] = simulate(sets, 18, NULL);
            ck_assert_msg(o[k].ok, "%s", o[k].err);
        }
        ck_assert_msg(o[0].end_time == o[1].end_time && o[0].bytes == o[1].bytes,
                      "algo %d: auto %.12g s, nccl %.12g s", algo, o[0].end_time, o[1].end_time);
        ck_assert_msg(strstr(o[0].summary, "replicas' collectives as NCCL runs them (1 servers "
                                           "of 8"),
                      "%s", o[0].summary);
        double t = sim_nccl_time(&nv, SIM_NCCL_ALLREDUCE, algo ? SIM_NCCL_NVLS : SIM_NCCL_RING,
                                 SIM_NCCL_SIMPLE, bytes);
        double got = (o[0].end_time - o[3].end_time) / 3;
        ck_assert_msg(t > 0 && fabs(got - t) <= 1e-9 * t, "algo %d: %.12g s a step, want %.12g",
                      algo, got, t);
        ck_assert(o[2].end_time != o[0].end_time); /* messages on the 1 Gbps links */
    }
    /* no device: auto is messages */
    outcome_t m[2];
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              "strategy.micro_batches=2",
                              "model.batch=2",
                              arch,
                              "run.steps=3",
                              "cluster.workers=4",
                              "strategy.data_parallel=4",
                              "cluster.network_model=CM02",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "cluster.device_flops=1Gf",
                              comm[k ? 2 : 0]};
        m[k] = simulate(sets, 13, NULL);
        ck_assert_msg(m[k].ok, "%s", m[k].err);
    }
    ck_assert_msg(m[0].end_time == m[1].end_time && m[0].bytes == m[1].bytes &&
                      !strstr(m[0].summary, "NCCL"),
                  "auto %.12g s, messages %.12g s: %s", m[0].end_time, m[1].end_time, m[0].summary);
    unlink(path);
}
END_TEST

/* strategy.dp_comm = nccl in a pipeline: D replicas of one stage (the tp_block profile,
 * 1208 parameters of 4 bytes) add to each of 3 steps NCCL's time of the replicas' all-reduce
 * over the D - 1 = 0 replica run's time, by hand: on a star of 1 Gbps links each replica is
 * a server of one GPU with its NIC at 0.96 x 125 MB/s, ring and Simple fixed: 8.4 us + 2 (D-1)
 * steps across the network of 14 us + 2 (D-1)/D x 4832 bytes / 120 MB/s; under ZeRO-1 a
 * reduce-scatter and an all-gather of D-1 steps and half the bytes each. On a multi-rack
 * platform of 4 racks of 2 replicas (H100: NVLink inside), the NICs' share of a 100 Gbps
 * uplink is 2 x 6.25 GB/s x 0.96 = 12 GB/s a server, 14 - 8 NVLink steps of 3.4 us and 8 of
 * 14. The bytes are the ring's, as messages count them. */
START_TEST(dp_nccl_matches_hand_count)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_block);
    const double bytes = 1208 * 4.0;
    for (int zero = 0; zero < 2; zero++) {
        outcome_t o[3];
        for (int k = 0; k < 3; k++) {
            const char *sets[] = {"strategy.kind=pipeline",
                                  "strategy.stages=1",
                                  "strategy.micro_batches=2",
                                  "model.batch=2",
                                  arch,
                                  "run.steps=3",
                                  k ? "cluster.workers=4" : "cluster.workers=1",
                                  k ? "strategy.data_parallel=4" : "strategy.data_parallel=1",
                                  "cluster.network_model=CM02",
                                  "cluster.bandwidth=1Gbps",
                                  "cluster.latency=10us",
                                  "cluster.device_flops=1Gf",
                                  k == 2 ? "strategy.dp_comm=messages" : "strategy.dp_comm=nccl",
                                  "strategy.nccl_algorithm=ring",
                                  "strategy.nccl_protocol=simple",
                                  zero ? "strategy.shard_optimizer=yes"
                                       : "strategy.shard_optimizer=no"};
            o[k] = simulate(sets, 16, NULL);
            ck_assert_msg(o[k].ok, "%s", o[k].err);
        }
        ck_assert_msg(strstr(o[1].summary, "replicas' collectives as NCCL runs them (4 servers "
                                           "of 1, algorithm ring, protocol simple"),
                      "%s", o[1].summary);
        double bw = 0.96 * 1e9 / 8, t;
        if (zero)
            t = 2 * ((8.4 + 3 * 14.0) * 1e-6 + 0.75 * bytes / bw);
        else
            t = (8.4 + 6 * 14.0) * 1e-6 + 1.5 * bytes / bw;
        double got = (o[1].end_time - o[0].end_time) / 3;
        ck_assert_msg(fabs(got - t) <= 1e-9 * t, "zero=%d: %.12g s a step, want %.12g", zero, got,
                      t);
        ck_assert_msg(fabs(o[1].bytes - o[2].bytes) <= 1e-9 * o[2].bytes,
                      "zero=%d: bytes %.0f, messages %.0f", zero, o[1].bytes, o[2].bytes);
    }
    outcome_t o[2];
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=1",
                              "strategy.micro_batches=2",
                              "model.batch=2",
                              arch,
                              "run.steps=3",
                              k ? "cluster.workers=8" : "cluster.workers=1",
                              k ? "strategy.data_parallel=8" : "strategy.data_parallel=1",
                              "cluster.platform=multi-rack",
                              "cluster.racks=4",
                              "cluster.uplink_bandwidth=100Gbps",
                              "cluster.bandwidth=400Gbps",
                              "cluster.network_model=CM02",
                              "cluster.device=h100",
                              "strategy.dp_comm=nccl",
                              "strategy.nccl_algorithm=ring",
                              "strategy.nccl_protocol=simple"};
        o[k] = simulate(sets, 17, NULL);
        ck_assert_msg(o[k].ok, "%s", o[k].err);
    }
    double t = (8.4 + 6 * 3.4 + 8 * 14.0) * 1e-6 + bytes * 14 / 8 / 12e9;
    double got = (o[1].end_time - o[0].end_time) / 3;
    ck_assert_msg(strstr(o[1].summary, "(4 servers of 2,"), "%s", o[1].summary);
    ck_assert_msg(fabs(got - t) <= 1e-9 * t, "4 x 2: %.12g s a step, want %.12g", got, t);
}
END_TEST

/* Adam and AdamW (with warmup, a cosine decay to a floor and, where one node holds the
 * whole gradient, clipping by global norm): every split that is equal to single with SGD is
 * equal to it with Adam, to float rounding; Adam's memory is its two moments; and the
 * weights are not SGD's (else equality would say nothing about Adam). */
static outcome_t adam_run(const char *const *extra, int n_extra, int clip, int batch,
                          float **params)
{
    char b[64];
    snprintf(b, sizeof b, "model.batch=%d", batch);
    const char *sets[24] = {"model.optimizer=adamw",
                            "model.momentum=0",
                            "model.lr=0.01",
                            "model.weight_decay=0.01",
                            "model.warmup=5",
                            "model.schedule=cosine",
                            "model.lr_min=0.001",
                            b,
                            clip ? "model.clip_norm=0.5" : "model.clip_norm=0"};
    int n = 9;
    for (int i = 0; i < n_extra; i++)
        sets[n++] = extra[i];
    outcome_t o = simulate(sets, n, params);
    ck_assert_msg(o.ok, "%s: %s", n_extra ? extra[0] : "single", o.err);
    return o;
}

START_TEST(adam_splits_equal_single)
{
    static const char *const cases[][4] = {
        {"strategy.kind=allreduce", "cluster.workers=4", "run.shared_replicas=no", "1"},
        {"strategy.kind=allreduce", "cluster.workers=4", "run.shared_replicas=yes", "1"},
        {"strategy.kind=sync-ps", "cluster.workers=4", "strategy.servers=1", "1"},
        {"strategy.kind=sync-ps", "cluster.workers=4", "strategy.servers=3", "0"},
        {"strategy.kind=sync-ps", "cluster.workers=4", "strategy.servers=3", "1"},
        {"strategy.kind=zero", "cluster.workers=4", "strategy.zero_stage=1", "0"},
        {"strategy.kind=zero", "cluster.workers=4", "strategy.zero_stage=3", "0"},
        /* clipped by the norm the shards sum: the plain step, and the buckets' */
        {"strategy.kind=zero", "cluster.workers=4", "strategy.zero_stage=1", "1"},
        {"strategy.kind=zero", "cluster.workers=4", "strategy.zero_stage=2", "1"},
        {"strategy.kind=zero", "cluster.workers=4", "strategy.zero_stage=3", "1"},
        {"strategy.kind=tensor", "strategy.tensor_parallel=2", "model.hidden=16,12", "0"},
        {"strategy.kind=tensor", "strategy.tensor_parallel=2", "model.hidden=16,12", "1"},
        {"strategy.kind=tensor", "strategy.tensor_parallel=4", "model.hidden=16,12", "1"},
    };
    const char *single = "strategy.kind=single";
    const char *wide[] = {single, "model.hidden=16,12"};
    float *ref[2][2] = {{NULL}}; /* [clip][tensor's model] */
    outcome_t r = adam_run(&single, 1, 0, 32, &ref[0][0]);
    adam_run(&single, 1, 1, 32, &ref[1][0]);
    adam_run(wide, 2, 0, 8, &ref[0][1]);
    adam_run(wide, 2, 1, 8, &ref[1][1]);
    ck_assert_msg(r.mem0[2] == 8.0 * r.n_params, "optimizer memory %g for %zu parameters",
                  r.mem0[2], (size_t)r.n_params);
    /* SGD from the same start lands elsewhere; so does Adam unclipped vs clipped */
    float *sgd = NULL;
    const char *sgd_sets[] = {single, "model.batch=32"};
    simulate(sgd_sets, 2, &sgd);
    ck_assert_double_gt(max_rel_diff(sgd, ref[0][0], r.n_params), 1e-2);
    ck_assert_double_gt(max_rel_diff(ref[1][0], ref[0][0], r.n_params), 1e-4);
    free(sgd);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int clip = cases[c][3][0] == '1', tensor = strstr(cases[c][0], "tensor") != NULL;
        float *got = NULL;
        outcome_t o = adam_run(cases[c], 3, clip, 8, &got);
        float *want = ref[clip][tensor];
        ck_assert(o.samples == (tensor ? 20.0 * 8 : r.samples));
        double d = max_rel_diff(got, want, o.n_params);
        printf("adamw %s %s %s%s: max relative difference to single %.2e\n", cases[c][0],
               cases[c][1], cases[c][2], clip ? " clip_norm=0.5" : "", d);
        ck_assert_msg(d < 2e-5, "%s %s: max relative difference %g", cases[c][0], cases[c][2], d);
        free(got);
    }
    free(ref[0][0]);
    free(ref[1][0]);
    free(ref[0][1]);
    free(ref[1][1]);
}
END_TEST

/* The pipeline with AdamW (adam_run's schedule), unclipped and clipped by the norm its stages
 * (and ZeRO shards) sum: single's weights, to float rounding (the sgd tests' 2e-5), for 2 and
 * 4 stages of an mlp of 6 dense layers under gpipe and 1f1b, 2 x 3 chunks interleaved, and 2
 * replicas of 2 x 2 chunks with a plain all-reduce, buckets, ZeRO-1 and ZeRO-2 (with and
 * without zero_grad_overlap). A stage's optimizer memory is 8 bytes a parameter, twice
 * sgd's momentum at the same split. */
START_TEST(adam_pipeline_equals_single)
{
    static const char *const deep[][6] = {
        {"strategy.stages=2", "strategy.pipeline_schedule=gpipe", "strategy.micro_batches=4"},
        {"strategy.stages=4", "strategy.pipeline_schedule=1f1b", "strategy.micro_batches=4"},
        {"strategy.stages=2", "strategy.pipeline_schedule=interleaved", "strategy.micro_batches=6",
         "strategy.virtual_stages=3"},
    };
    static const char *const hybrid[][4] = {
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=no", "strategy.zero_stage=1",
         "strategy.zero_grad_overlap=no"},
        {"strategy.bucket_mb=0.0003", "strategy.shard_optimizer=no", "strategy.zero_stage=1",
         "strategy.zero_grad_overlap=no"},
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=yes", "strategy.zero_stage=1",
         "strategy.zero_grad_overlap=no"},
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=yes", "strategy.zero_stage=2",
         "strategy.zero_grad_overlap=no"},
        {"strategy.bucket_mb=0", "strategy.shard_optimizer=yes", "strategy.zero_stage=2",
         "strategy.zero_grad_overlap=yes"},
    };
    const char *six[] = {"strategy.kind=single", "model.hidden=16,12,12,8,8"};
    const char *four[] = {"strategy.kind=single", "model.hidden=16,12,12"};
    float *ref[2][2] = {{NULL}}; /* [clip][hybrid's model] */
    outcome_t r[2];
    for (int clip = 0; clip < 2; clip++) {
        r[0] = adam_run(six, 2, clip, 24, &ref[clip][0]);
        r[1] = adam_run(four, 2, clip, 48, &ref[clip][1]);
    }
    /* clipping moves single's weights: a clipped split equal to it clipped */
    ck_assert_double_gt(max_rel_diff(ref[1][0], ref[0][0], r[0].n_params), 1e-4);
    ck_assert_double_gt(max_rel_diff(ref[1][1], ref[0][1], r[1].n_params), 1e-4);
    for (int clip = 0; clip < 2; clip++) {
        for (size_t c = 0; c < sizeof deep / sizeof deep[0]; c++) {
            const char *sets[8] = {"strategy.kind=pipeline", "model.hidden=16,12,12,8,8"};
            int n = 2;
            for (int i = 0; i < 6 && deep[c][i]; i++)
                sets[n++] = deep[c][i];
            float *got = NULL;
            outcome_t o = adam_run(sets, n, clip, 24, &got);
            ck_assert(o.samples == r[0].samples);
            double d = max_rel_diff(got, ref[clip][0], o.n_params);
            printf("adamw pipeline %s %s%s: max relative difference to single %.2e\n", deep[c][0],
                   deep[c][1], clip ? " clip_norm=0.5" : "", d);
            ck_assert_msg(d < 2e-5, "%s %s clip %d: max relative difference %g", deep[c][0],
                          deep[c][1], clip, d);
            if (c == 1 && !clip) { /* Adam's two moments against sgd's momentum, 4 stages */
                const char *sgd[] = {"strategy.kind=pipeline", "model.hidden=16,12,12,8,8",
                                     deep[c][0], deep[c][1], deep[c][2]};
                outcome_t m = simulate(sgd, 5, NULL);
                ck_assert_msg(o.mem0[2] == 2 * m.mem0[2] && o.mem0[2] == 2 * o.mem0[0],
                              "optimizer memory %g, sgd's %g, parameters %g", o.mem0[2], m.mem0[2],
                              o.mem0[0]);
            }
            free(got);
        }
        for (size_t c = 0; c < sizeof hybrid / sizeof hybrid[0]; c++) {
            const char *sets[12] = {
                "strategy.kind=pipeline",   "model.hidden=16,12,12",
                "strategy.stages=2",        "strategy.virtual_stages=2",
                "strategy.micro_batches=4", "strategy.pipeline_schedule=interleaved",
                "strategy.data_parallel=2", "strategy.algorithm=ring"};
            memcpy(&sets[8], hybrid[c], sizeof hybrid[c]);
            float *got = NULL;
            outcome_t o = adam_run(sets, 12, clip, 24, &got);
            ck_assert(o.samples == r[1].samples);
            double d = max_rel_diff(got, ref[clip][1], o.n_params);
            printf("adamw pipeline 2 replicas %s %s %s %s%s: max relative difference to single "
                   "%.2e\n",
                   hybrid[c][0], hybrid[c][1], hybrid[c][2], hybrid[c][3],
                   clip ? " clip_norm=0.5" : "", d);
            ck_assert_msg(d < 2e-5, "2 replicas %s %s %s %s clip %d: max relative difference %g",
                          hybrid[c][0], hybrid[c][1], hybrid[c][2], hybrid[c][3], clip, d);
            free(got);
        }
    }
    for (int k = 0; k < 4; k++)
        free(ref[k / 2][k % 2]);
}
END_TEST

/* Tensor parallelism (Megatron column + row splits) trains the weights of one worker with
 * the whole batch: odd and even numbers of dense layers (an unpaired output layer is
 * column-split and all-gathered), logreg, T = 1, 2, 4; private slices, shared buffer. */
START_TEST(tensor_equals_single)
{
    static const char *const hidden[] = {"model.hidden=16,12", "model.hidden=16,12,8"};
    for (int h = 0; h < 3; h++) {
        const char *arch = h == 2 ? "model.arch=logreg" : "model.arch=mlp";
        const char *hid = h == 2 ? "model.hidden=16" : hidden[h];
        const char *single[] = {"strategy.kind=single", arch, hid};
        float *ref = NULL;
        outcome_t a = simulate(single, 3, &ref);
        for (int T = 1; T <= 4; T *= 2) {
            char tp[64];
            snprintf(tp, sizeof tp, "strategy.tensor_parallel=%d", T);
            const char *sets[] = {"strategy.kind=tensor", arch, hid, tp};
            float *got = NULL;
            outcome_t b = simulate(sets, 4, &got);
            ck_assert(b.samples == a.samples);
            double d = max_rel_diff(got, ref, a.n_params);
            ck_assert_msg(d < 2e-5, "%s %s T=%d: max relative difference %g", arch, hid, T, d);
            if (h == 0) {
                /* per step: two ring all-reduces of (8, 12) activations, 2 (T-1) n floats
                 * each, and the ring all-gather of the (8, 4) logits, (T-1) n; then the
                 * end-of-training barrier, one float */
                double want =
                    20 * (2 * 2.0 * (T - 1) * 96 * 4 + (T - 1) * 32 * 4) + 2.0 * (T - 1) * 4;
                ck_assert_msg(b.bytes == want, "T=%d: %.17g bytes, want %.17g", T, b.bytes, want);
            }
            ck_assert_msg(fabs(b.acc - a.acc) < 0.02, "accuracy %g, single %g", b.acc, a.acc);
            free(got);
        }
        free(ref);
    }
}
END_TEST

/* Hybrid: D replicas of an S-stage pipeline, each stage's gradients all-reduced across the
 * replicas, train what one worker with the D x batch global batch trains; so do they with
 * gradient buckets of 300 bytes (strategy.bucket_mb: a bucket per layer, all-reduced during
 * the step's last backward pass), and with 2 replicas (a sum of two, in either order) to
 * the bit what they train without. */
START_TEST(hybrid_equals_single)
{
    static const int DS[][2] = {{2, 2}, {3, 3}, {2, 3}};
    for (int k = 0; k < 3; k++)
        for (int sched = 0; sched < 2; sched++) {
            int D = DS[k][0], S = DS[k][1];
            char sb[64], st[64], dp[64];
            snprintf(sb, sizeof sb, "model.batch=%d", 24 * D);
            const char *single[] = {"strategy.kind=single", "model.hidden=16,12", sb};
            float *ref = NULL;
            outcome_t a = simulate(single, 3, &ref);
            snprintf(st, sizeof st, "strategy.stages=%d", S);
            snprintf(dp, sizeof dp, "strategy.data_parallel=%d", D);
            const char *sets[] = {"strategy.kind=pipeline",
                                  "model.hidden=16,12",
                                  "model.batch=24",
                                  st,
                                  dp,
                                  "strategy.micro_batches=4",
                                  sched ? "strategy.pipeline_schedule=1f1b"
                                        : "strategy.pipeline_schedule=gpipe",
                                  "strategy.bucket_mb=0"};
            float *plain = NULL;
            for (int bk = 0; bk < 2; bk++) {
                sets[7] = bk ? "strategy.bucket_mb=0.0003" : "strategy.bucket_mb=0";
                float *got = NULL;
                outcome_t b = simulate(sets, 8, &got);
                ck_assert_msg(b.ok, "%s", b.err);
                ck_assert_msg(b.samples == a.samples, "samples %g and %g", b.samples, a.samples);
                double d = max_rel_diff(got, ref, a.n_params);
                ck_assert_msg(d < 2e-5, "D=%d S=%d %s bucket_mb %s: max relative difference %g", D,
                              S, sched ? "1f1b" : "gpipe", sets[7] + 19, d);
                if (!bk)
                    plain = got;
                else {
                    ck_assert_msg(D > 2 || !memcmp(got, plain, sizeof(float) * a.n_params),
                                  "D=%d S=%d: buckets change the weights", D, S);
                    free(got);
                }
            }
            free(plain);
            free(ref);
        }
    /* The evaluation sees every stage's update however long the all-reduces take: a stage
     * sends its gradient down before it all-reduces and updates, so with a last stage of
     * many more parameters than its input activations (a cnn: the dense layers) on a slow
     * network stage 0 updates first, and its evaluation alone would miss stage 1's update
     * (the final one too, every 2 steps of 4). */
    for (int sched = 0; sched < 2; sched++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "model.arch=cnn",
                              "data.source=fashion-mnist",
                              "model.batch=24",
                              "model.conv=3,4",
                              "model.kernel=5",
                              "model.fc=128",
                              "strategy.stages=2",
                              "strategy.data_parallel=2",
                              "run.steps=4",
                              "run.eval_every=2",
                              sched ? "strategy.pipeline_schedule=1f1b"
                                    : "strategy.pipeline_schedule=gpipe",
                              "cluster.bandwidth=100000Gbps"};
        outcome_t fast = simulate(sets, 13, NULL);
        sets[12] = "cluster.bandwidth=10Mbps";
        outcome_t slow = simulate(sets, 13, NULL);
        ck_assert_msg(slow.loss == fast.loss && slow.acc == fast.acc,
                      "%s: final loss %.9g at 10 Mb/s, %.9g with a fast network",
                      sched ? "1f1b" : "gpipe", slow.loss, fast.loss);
    }
}
END_TEST

/* ZeRO stage 1 over a hybrid's replicas (strategy.shard_optimizer): each replica updates
 * its chunk of a stage's slice with that chunk's momentum, so the weights are still those
 * of one worker with the global batch, with momentum; the bytes are the ring all-reduce's
 * (a reduce-scatter and an all-gather) and a stage holds 1/D of its momentum. Stage 2
 * likewise, below. */
START_TEST(hybrid_sharded_optimizer_equals_single)
{
    static const int DS[][2] = {{2, 2}, {3, 2}};
    for (int k = 0; k < 2; k++) {
        int D = DS[k][0], S = DS[k][1];
        char sb[64], st[64], dp[64];
        snprintf(sb, sizeof sb, "model.batch=%d", 24 * D);
        const char *single[] = {"strategy.kind=single", "model.hidden=16,12", sb,
                                "model.momentum=0.9"};
        float *ref = NULL;
        outcome_t a = simulate(single, 4, &ref);
        snprintf(st, sizeof st, "strategy.stages=%d", S);
        snprintf(dp, sizeof dp, "strategy.data_parallel=%d", D);
        const char *sets[] = {"strategy.kind=pipeline",
                              "model.hidden=16,12",
                              "model.batch=24",
                              st,
                              dp,
                              "strategy.micro_batches=4",
                              "model.momentum=0.9",
                              "strategy.algorithm=ring",
                              "strategy.shard_optimizer=yes"};
        float *got = NULL;
        outcome_t z = simulate(sets, 9, &got);
        double diff = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(diff < 2e-5, "D=%d S=%d: max relative difference %g", D, S, diff);
        sets[8] = "strategy.shard_optimizer=no";
        outcome_t plain = simulate(sets, 9, NULL);
        ck_assert_msg(z.bytes == plain.bytes, "D=%d: %.0f bytes sharded, %.0f not", D, z.bytes,
                      plain.bytes);
        ck_assert(plain.mem0[2] > 0);
        double slice = plain.mem0[2] / 4; /* stage 0's momentum, one float per parameter */
        ck_assert_msg(z.mem0[2] == ceil(slice / D) * 4, "D=%d: optimizer %g of %g", D, z.mem0[2],
                      plain.mem0[2]);
        free(got);
        /* stage 2: each micro-batch's gradients reduce-scattered, the shards summed: the same
         * weights, M + 1 collectives of each slice per step instead of 2, (D-1) n floats
         * each over the replicas, and 1/D of the gradients held */
        sets[8] = "strategy.shard_optimizer=yes";
        const char *z2sets[11];
        memcpy(z2sets, sets, sizeof sets);
        z2sets[9] = "strategy.zero_stage=2";
        z2sets[10] = "strategy.zero_grad_overlap=no";
        outcome_t z2 = simulate(z2sets, 11, &got);
        diff = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(diff < 2e-5, "D=%d S=%d ZeRO-2: max relative difference %g", D, S, diff);
        double steps = z2.samples / (24.0 * D), M = 4;
        double extra = steps * (M - 1) * (D - 1) * (double)a.n_params * 4;
        ck_assert_msg(z2.bytes == plain.bytes + extra, "D=%d ZeRO-2: %.0f bytes, want %.0f", D,
                      z2.bytes, plain.bytes + extra);
        ck_assert_msg(z2.mem0[1] == ceil(slice / D) * 4 && z2.mem0[2] == z.mem0[2],
                      "D=%d ZeRO-2: gradients %g of %g", D, z2.mem0[1], plain.mem0[1]);
        free(got);
        /* zero_grad_overlap: each layer's bucket reduce-scattered during the last backward
         * pass, chunk d of every bucket updated by replica d, each bucket all-gathered: the
         * same weights, the ring all-reduce's bytes, the gradients held whole while the
         * micro-batches add up */
        z2sets[10] = "strategy.zero_grad_overlap=yes";
        const char *z2b[12];
        memcpy(z2b, z2sets, sizeof z2sets);
        z2b[11] = "strategy.bucket_mb=0.0001";
        outcome_t ov = simulate(z2b, 12, &got);
        diff = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(diff < 2e-5, "D=%d S=%d ZeRO-2 overlapped: max relative difference %g", D, S,
                      diff);
        ck_assert_msg(ov.bytes == plain.bytes, "D=%d ZeRO-2 overlapped: %.0f bytes, want %.0f", D,
                      ov.bytes, plain.bytes);
        ck_assert_msg(ov.mem0[1] == plain.mem0[1] && ov.mem0[2] == z.mem0[2],
                      "D=%d ZeRO-2 overlapped: gradients %g of %g", D, ov.mem0[1], plain.mem0[1]);
        free(got);
        free(ref);
    }
}
END_TEST

/* What each worker holds, against hand counts for the mlp 32-16-12-4 (784 parameters; 60
 * activation floats per sample: 16 + 16 + 12 + 12 + 4): the whole model on a data-parallel
 * worker, a stage's layers and its micro-batches in flight in a pipeline, every parameter
 * exactly once across tensor-parallel workers and pipeline stages. */
START_TEST(memory_per_worker)
{
    const char *single[] = {"strategy.kind=single", "model.hidden=16,12"};
    outcome_t o = simulate(single, 2, NULL);
    ck_assert_uint_eq(o.n_params, 784);
    ck_assert(o.mem0[0] == 784 * 4 && o.mem0[1] == 784 * 4 && o.mem0[2] == 784 * 4);
    ck_assert_msg(o.mem0[3] == 8 * 60 * 4, "activations %g", o.mem0[3]);
    const char *ps[] = {"strategy.kind=sync-ps", "cluster.workers=4", "model.hidden=16,12"};
    o = simulate(ps, 3, NULL);
    ck_assert(o.mem0[2] == 0); /* the server holds the momentum */
    ck_assert(o.mem_params == 4 * 784 * 4);
    /* pipeline, 3 stages of 6-sample micro-batches: stage 0 is dense 32x16 + ReLU, 1f1b keeps
     * 3 micro-batches in flight there, gpipe all 4 */
    const char *pipe[] = {"strategy.kind=pipeline",   "strategy.stages=3",
                          "model.hidden=16,12",       "model.batch=24",
                          "strategy.micro_batches=4", "strategy.pipeline_schedule=1f1b"};
    o = simulate(pipe, 6, NULL);
    ck_assert_msg(o.mem0[0] == (32 * 16 + 16) * 4, "stage 0 params %g", o.mem0[0]);
    ck_assert_msg(o.mem0[3] == 3 * 6 * 32 * 4, "stage 0 activations %g", o.mem0[3]);
    ck_assert(o.mem_params == 784 * 4);
    pipe[5] = "strategy.pipeline_schedule=gpipe";
    o = simulate(pipe, 6, NULL);
    ck_assert_msg(o.mem0[3] == 4 * 6 * 32 * 4, "gpipe activations %g", o.mem0[3]);
    const char *tp[] = {"strategy.kind=tensor", "strategy.tensor_parallel=2", "model.hidden=16,12"};
    o = simulate(tp, 3, NULL);
    ck_assert_msg(o.mem_params == 784 * 4, "tensor: %g parameter bytes in all", o.mem_params);
    /* worker 0: 8 x 32 rows + 8 biases, 12 x 8 columns + 12 biases, 2 x 12 + 2 */
    ck_assert_msg(o.mem0[0] == (8 * 32 + 8 + 12 * 8 + 12 + 2 * 12 + 2) * 4, "tensor worker 0 %g",
                  o.mem0[0]);
}
END_TEST

/* ZeRO stages 1-3: the weights of one worker with the global batch, identical replicas, the
 * bytes of a ring reduce-scatter + all-gather per step (stage 3: one more all-gather per step
 * and one at the end), and the shards in the memory table. */
START_TEST(zero_equals_single)
{
    const char *single[] = {"strategy.kind=single", "model.batch=32"};
    float *ref = NULL;
    outcome_t a = simulate(single, 2, &ref);
    for (int v = 0; v < 5; v++) {
        /* v = 3, 4: stages 2 and 3 with their collectives by layer (zero_grad_overlap,
         * zero_prefetch: chunk r of each bucket is worker r's); else one bucket */
        int stage = v < 3 ? v + 1 : v - 1;
        char zs[64];
        snprintf(zs, sizeof zs, "strategy.zero_stage=%d", stage);
        const char *sets[] = {"strategy.kind=zero", "cluster.workers=4", zs,
                              v >= 3 ? "strategy.bucket_mb=0.0001" : "strategy.bucket_mb=0"};
        float *got = NULL;
        outcome_t b = simulate(sets, 4, &got);
        ck_assert(b.samples == a.samples && b.replicas_identical);
        double d = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(d < 2e-5, "stage %d: max relative difference %g", stage, d);
        double n = (double)a.n_params, per_step = (stage == 3 ? 3.0 : 2.0) * 3 * n * 4;
        double want = 20 * per_step + (stage == 3 ? 3 * n * 4 : 0);
        ck_assert_msg(b.bytes == want, "stage %d: %.17g bytes, want %.17g", stage, b.bytes, want);
        double shard = (double)(a.n_params / 4) * 4; /* chunk 0 of 4 */
        ck_assert_msg(b.mem0[2] == shard && b.mem0[1] == (stage >= 2 ? shard : n * 4) &&
                          b.mem0[0] == (stage >= 3 ? shard : n * 4),
                      "stage %d memory %g %g %g", stage, b.mem0[0], b.mem0[1], b.mem0[2]);
        free(got);
    }
    free(ref);
}
END_TEST

/* ---- precision, recompute and memory ------------------------------------------------- */

/* model.precision on a timing-only ring all-reduce: bf16 and fp8 move exactly half the bytes
 * of fp32 and tf32; compute takes exactly the ratio of the device's sustained speeds (peak x
 * fraction: h100 FP32 67 x 0.7, TF32 494.7, BF16 989.4 and FP8 1978.9 x 0.5). */
START_TEST(precision_sets_bytes_and_compute_time)
{
    static const struct {
        const char *set;
        double speed, bytes_per_value;
    } prec[] = {{"model.precision=fp32", 67e12 * 0.7, 4},
                {"model.precision=tf32", 494.7e12 * 0.5, 4},
                {"model.precision=bf16", 989.4e12 * 0.5, 2},
                {"model.precision=fp8", 1978.9e12 * 0.5, 2}};
    outcome_t o[4];
    for (int i = 0; i < 4; i++) {
        const char *sets[] = {"strategy.kind=allreduce", "model.arch=profile:resnet50",
                              "cluster.workers=4",       "run.steps=2",
                              "cluster.device=h100",     prec[i].set};
        o[i] = simulate(sets, 6, NULL);
        ck_assert(o[i].device_flops == prec[i].speed);
    }
    for (int i = 1; i < 4; i++) {
        double want = o[0].bytes * prec[i].bytes_per_value / 4;
        ck_assert_msg(o[i].bytes == want, "%s: %.17g bytes, want %.17g", prec[i].set, o[i].bytes,
                      want);
        double ratio = o[0].compute_s / o[i].compute_s, want_ratio = prec[i].speed / prec[0].speed;
        ck_assert_msg(fabs(ratio - want_ratio) <= 1e-9 * want_ratio,
                      "%s: compute x%.12g, want "
                      "x%.12g",
                      prec[i].set, ratio, want_ratio);
    }
}
END_TEST

/* Two attention blocks, forward order: a (50 values a sample kept, a cut of 20), x.scores
 * (200), c (30, a cut of 10), y.scores (100), d (40); 1 MFLOP forward and 2 backward each,
 * 100 parameters in a, c and d. */
static const char *const blocks_profile =
    "[profile]\nparams = 300\nforward_flops = 5e6\nbackward_flops = 10e6\n"
    "[backward]\nd = 100 2e6\ny.scores = 0 2e6\nc = 100 2e6\nx.scores = 0 2e6\na = 100 2e6\n"
    "[forward]\na = 1e6 50 20\nx.scores = 1e6 200\nc = 1e6 30 10\ny.scores = 1e6 100\n"
    "d = 1e6 40\n";

/* What a single worker holds and computes against hand counts (batch 8, momentum 0.9):
 *   fp32, SGD: 4 + 4 + 4 bytes a parameter; activations 50 + 200 + 30 + 100 + 40 = 420;
 *   bf16, Adam: 2 + 2 + (4 master + 4 + 4 moments): 16 bytes a parameter (ZeRO's 2 + 2 + 12);
 *   selective: the scores recomputed, 50 + 30 + 40 kept and the larger score (200) at once:
 *              320, and their 2 MFLOP forward again;
 *   full: the cuts' 20 + 10 kept and the largest piece (x.scores + c: 230) at once: 260, and
 *         exactly one more forward pass (5 MFLOP). */
START_TEST(memory_and_flops_follow_precision_optimizer_and_recompute)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, blocks_profile);
    static const struct {
        const char *precision, *optimizer, *recompute;
        double vb, ob, act, extra_flops;
    } cases[] = {
        {"model.precision=fp32", "model.optimizer=sgd", "model.recompute=none", 4, 4, 420, 0},
        {"model.precision=bf16", "model.optimizer=adam", "model.recompute=none", 2, 12, 420, 0},
        {"model.precision=bf16", "model.optimizer=sgd", "model.recompute=selective", 2, 8, 320,
         2e6},
        {"model.precision=fp8", "model.optimizer=adam", "model.recompute=full", 2, 12, 260, 5e6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = {
            "strategy.kind=single", arch, "run.steps=3", "model.batch=8",
            "cluster.device_flops=1Gf", cases[i].precision, cases[i].optimizer, cases[i].recompute,
            /* adam reads no momentum: it is refused with it */
            strstr(cases[i].optimizer, "adam") ? "model.momentum=0" : "model.momentum=0.9"};
        outcome_t o = simulate(sets, 9, NULL);
        ck_assert_msg(o.mem0[0] == 300 * cases[i].vb && o.mem0[1] == 300 * cases[i].vb &&
                          o.mem0[2] == 300 * cases[i].ob,
                      "%zu: %g %g %g", i, o.mem0[0], o.mem0[1], o.mem0[2]);
        ck_assert_msg(o.mem0[3] == cases[i].act * 8 * cases[i].vb, "%zu: activations %g", i,
                      o.mem0[3]);
        ck_assert(o.step_flops == 15e6 + cases[i].extra_flops);
        double want = 3.0 * 8 * (15e6 + cases[i].extra_flops) / 1e9;
        ck_assert_msg(fabs(o.end_time - want) <= 1e-9 * want, "%zu: %.12g s, want %.12g s", i,
                      o.end_time, want);
    }
    unlink(path);
}
END_TEST

/* A pipeline stage under full recompute keeps its micro-batches' checkpoints (stage 0 of the
 * 4-layer profile: none, its one layer being its last) and one piece at once: 50 values of
 * one micro-batch of 2, not the 3 x 2 x 50 of every micro-batch in flight; its backward pass
 * runs its 1 MFLOP forward again, so a step takes (M+S-1)(2 + 4 + 2) ms. */
START_TEST(pipeline_stage_under_full_recompute)
{
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 400\nforward_flops = 4e6\n"
                 "[backward]\nd = 100 2e6\nc = 100 2e6\nb = 100 2e6\na = 100 2e6\n"
                 "[forward]\na = 1e6 50 20\nb = 1e6 50 20\nc = 1e6 50 20\nd = 1e6 50\n");
    const char *sets[] = {"strategy.kind=pipeline",
                          "strategy.stages=4",
                          "strategy.micro_batches=3",
                          "model.batch=6",
                          arch,
                          "run.steps=3",
                          "cluster.workers=4",
                          "cluster.network_model=CM02",
                          "cluster.crosstraffic=no",
                          "cluster.bandwidth=100000Gbps",
                          "cluster.latency=0",
                          "cluster.device_flops=1Gf",
                          "strategy.pipeline_schedule=gpipe",
                          "model.recompute=full"};
    outcome_t o = simulate(sets, 14, NULL);
    unlink(path);
    ck_assert_msg(o.mem0[3] == 50 * 2 * 4, "stage 0 activations %g", o.mem0[3]);
    double want = 3 * (3 + 4 - 1) * 8e-3;
    ck_assert_msg(fabs(o.end_time - want) <= 1e-8 * want, "%.12g s, want %.12g s", o.end_time,
                  want);
}
END_TEST

/* ---- less communication: accumulation and compression ------------------------------- */

/* k micro-batches accumulated = one batch k times larger: sync-ps and allreduce with
 * accumulate = 3 land on the weights of one worker with the whole 4 x 3 x 8 batch. */
START_TEST(accumulate_equals_a_larger_batch)
{
    const char *single[] = {"strategy.kind=single", "model.batch=96"};
    float *ref = NULL;
    outcome_t a = simulate(single, 2, &ref);
    static const char *const kinds[] = {"strategy.kind=sync-ps", "strategy.kind=allreduce"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {kinds[k], "cluster.workers=4", "strategy.accumulate=3"};
        float *got = NULL;
        outcome_t b = simulate(sets, 3, &got);
        ck_assert_msg(b.samples == a.samples && a.samples == 20.0 * 96, "samples %g, %g", b.samples,
                      a.samples);
        double d = max_rel_diff(got, ref, a.n_params);
        ck_assert_msg(d < 2e-5, "%s: max relative difference %g", kinds[k], d);
        free(got);
    }
    /* fedavg clients: local steps of 2 micro-batches of 8 = local steps of 16 (tails too) */
    const char *f16[] = {"strategy.kind=fedavg",         "strategy.clients=8",
                         "strategy.fraction=0.5",        "strategy.rounds=3",
                         "data.partition=dirichlet:0.5", "model.batch=16"};
    const char *f8[] = {"strategy.kind=fedavg",         "strategy.clients=8",
                        "strategy.fraction=0.5",        "strategy.rounds=3",
                        "data.partition=dirichlet:0.5", "model.batch=8",
                        "strategy.accumulate=2"};
    float *fa = NULL, *fb = NULL;
    outcome_t oa = simulate(f16, 6, &fa), ob = simulate(f8, 7, &fb);
    ck_assert(oa.samples == ob.samples);
    ck_assert_msg(max_rel_diff(fb, fa, oa.n_params) < 2e-5, "fedavg accumulate: %g",
                  max_rel_diff(fb, fa, oa.n_params));
    free(fa);
    free(fb);
    /* and a single worker accumulating 3 x 32 the same */
    const char *acc[] = {"strategy.kind=single", "model.batch=32", "strategy.accumulate=3"};
    float *got = NULL;
    simulate(acc, 3, &got);
    ck_assert_msg(max_rel_diff(got, ref, a.n_params) < 2e-5, "single accumulate");
    free(got);
    free(ref);
}
END_TEST

/* topk:1 keeps everything: the same weights as no compression (sync-ps bit for bit: the
 * shard adds the decoded floats in the same order; the all-gather and fedavg's update sum
 * round differently), at 8 bytes per element instead of 4. */
START_TEST(lossless_compression_changes_nothing)
{
    static const char *const kinds[][3] = {
        {"strategy.kind=sync-ps", "strategy.servers=2", "cluster.workers=4"},
        {"strategy.kind=allreduce", "run.shared_replicas=no", "cluster.workers=4"},
        {"strategy.kind=fedavg", "strategy.clients=8", "strategy.fraction=0.5"}};
    for (int k = 0; k < 3; k++) {
        const char *sets[] = {kinds[k][0], kinds[k][1], kinds[k][2], "strategy.rounds=3",
                              "strategy.compression=none"};
        float *w0 = NULL, *w1 = NULL;
        outcome_t a = simulate(sets, 5, &w0);
        sets[4] = "strategy.compression=topk:1";
        outcome_t b = simulate(sets, 5, &w1);
        double d = max_rel_diff(w1, w0, a.n_params);
        if (k == 0)
            ck_assert_msg(memcmp(w0, w1, sizeof(float) * a.n_params) == 0, "sync-ps: %g", d);
        else
            ck_assert_msg(d < 2e-5, "%s: max relative difference %g", kinds[k][0], d);
        ck_assert_msg(b.replicas_identical, "%s: replicas differ", kinds[k][0]);
        ck_assert_msg(b.bytes > a.bytes, "%s: %g bytes, uncompressed %g", kinds[k][0], b.bytes,
                      a.bytes);
        free(w0);
        free(w1);
    }
}
END_TEST

/* Bytes on the wire are the encodings' sizes, against formulas: sync-ps (1 shard, 4
 * workers, 20 steps) pushes an encoding and pulls fp32; allreduce's fp16 ring moves
 * 2 (p-1) n halves per step; the all-gather of top-k moves p (p-1) encodings; fedavg
 * sends m fp32 models down and m encoded updates up; a timing-only ResNet-50 the same. */
START_TEST(compressed_bytes_match_the_encodings)
{
    static const char *const codecs[] = {"fp16", "qsgd8", "topk:0.01", "topk:0.5"};
    for (int c = 0; c < 4; c++) {
        trainer_codec_t codec;
        dt_err_t err;
        ck_assert(trainer_codec_parse(&codec, codecs[c], &err) == DT_OK);
        char spec[64];
        snprintf(spec, sizeof spec, "strategy.compression=%s", codecs[c]);
        const char *ps[] = {"strategy.kind=sync-ps", "cluster.workers=4", spec};
        outcome_t o = simulate(ps, 3, NULL);
        double n = (double)o.n_params, enc = (double)trainer_codec_bytes(&codec, o.n_params);
        ck_assert_msg(o.bytes == 20 * 4 * (enc + 4 * n), "sync-ps %s: %.17g bytes", codecs[c],
                      o.bytes);
        const char *ar[] = {"strategy.kind=allreduce", "cluster.workers=4", spec};
        o = simulate(ar, 3, NULL);
        double want = codec.kind == TRAINER_CODEC_FP16 ? 20 * 2.0 * 3 * n * 2 : 20 * 4 * 3 * enc;
        ck_assert_msg(o.bytes == want, "allreduce %s: %.17g bytes, want %.17g", codecs[c], o.bytes,
                      want);
        const char *fa[] = {"strategy.kind=fedavg", "strategy.clients=8", "strategy.fraction=0.5",
                            "strategy.rounds=3", spec};
        o = simulate(fa, 5, NULL);
        ck_assert_msg(o.bytes == 3 * 4 * (enc + 4 * n), "fedavg %s: %.17g bytes", codecs[c],
                      o.bytes);
        const char *to[] = {"strategy.kind=allreduce", "cluster.workers=4",
                            "model.arch=profile:resnet50", "run.steps=2", spec};
        o = simulate(to, 5, NULL);
        enc = (double)trainer_codec_bytes(&codec, 25557032);
        want = codec.kind == TRAINER_CODEC_FP16 ? 2 * 2.0 * 3 * 25557032 * 2 : 2 * 4 * 3 * enc;
        ck_assert_msg(o.bytes == want, "timing-only %s: %.17g bytes, want %.17g", codecs[c],
                      o.bytes, want);
    }
}
END_TEST

/* Lossy codecs change training, the replicas stay identical, and error feedback gives
 * back most of what top-k 1% loses: its weights end nearer the uncompressed run's. */
START_TEST(error_feedback_recovers_topk)
{
    const char *sets[] = {
        "strategy.kind=allreduce", "cluster.workers=4",         "run.steps=150",
        "run.shared_replicas=no",  "strategy.compression=none", "strategy.error_feedback=yes"};
    float *ref = NULL, *ef = NULL, *plain = NULL, *half = NULL;
    simulate(sets, 6, &ref);
    sets[4] = "strategy.compression=topk:0.01";
    outcome_t a = simulate(sets, 6, &ef);
    sets[5] = "strategy.error_feedback=no";
    outcome_t b = simulate(sets, 6, &plain);
    sets[4] = "strategy.compression=fp16";
    outcome_t h = simulate(sets, 6, &half);
    ck_assert(a.replicas_identical && b.replicas_identical && h.replicas_identical);
    size_t n = a.n_params;
    double d_ef = max_rel_diff(ef, ref, n), d_plain = max_rel_diff(plain, ref, n),
           d_half = max_rel_diff(half, ref, n);
    ck_assert_msg(d_ef < 0.5 * d_plain, "top-k: with feedback %g from fp32, without %g", d_ef,
                  d_plain);
    /* fp16 rounds every hop of the ring: a small difference, not none */
    ck_assert_msg(d_half > 0 && d_half < 0.1 * d_ef, "fp16 %g, top-k %g", d_half, d_ef);
    free(ref);
    free(ef);
    free(plain);
    free(half);
}
END_TEST

/* A sync-ps worker that dies for good: the step it dies in waits the detection timeout,
 * later steps go on with the others. */
START_TEST(sync_ps_dead_worker_costs_the_timeout)
{
    const char *sets[] = {
        "strategy.kind=sync-ps", "cluster.workers=8",          "run.steps=40",
        "run.eval_every=0",      "cluster.network_model=CM02", "cluster.crosstraffic=no"};
    outcome_t h = simulate(sets, 6, NULL);
    ck_assert_msg(h.ok, "%s", h.err);
    double E = h.end_time, T = 2 * E;
    char crash[128], timeout[64];
    snprintf(crash, sizeof crash, "faults.crash=worker-5 at %.17gs", 0.5 * E);
    snprintf(timeout, sizeof timeout, "faults.timeout=%.17gs", T);
    const char *f[] = {
        "strategy.kind=sync-ps",      "cluster.workers=8",       "run.steps=40", "run.eval_every=0",
        "cluster.network_model=CM02", "cluster.crosstraffic=no", crash,          timeout};
    outcome_t o = simulate(f, 8, NULL);
    ck_assert_msg(o.ok, "%s", o.err);
    /* + T, less what 7 workers save on the server link over the second half */
    ck_assert_msg(o.end_time <= E + T + 1e-9 && o.end_time >= E + T - 0.5 * E / 8,
                  "end %.9g, healthy %.9g, timeout %.9g", o.end_time, E, T);
}
END_TEST

/* ---- the breakdown of a step ------------------------------------------------------------ */

/* o's breakdown: every part >= 0, the parts sum to its step (end / steps) within 1e-12 of
 * it, no worker's counted intervals past the end (the parts come from intervals, not from a
 * rescaling), and part `must` (-1: none) above 0. */
static void check_breakdown(const char *what, const outcome_t *o, int must)
{
    ck_assert_msg(o->steps > 0, "%s: no steps", what);
    double step = o->end_time / (double)o->steps, sum = 0;
    for (int k = 0; k < RESULTS_PART_COUNT; k++) {
        ck_assert_msg(o->parts[k] >= 0, "%s: %s %g s", what, results_part_names[k], o->parts[k]);
        sum += o->parts[k];
    }
    ck_assert_msg(fabs(sum - step) <= 1e-12 * step, "%s: parts sum to %.15g s, step %.15g s", what,
                  sum, step);
    ck_assert_msg(o->part_over <= 1e-12 * o->end_time,
                  "%s: a worker's intervals pass the end by %g s", what, o->part_over);
    if (must >= 0)
        ck_assert_msg(o->parts[must] > 0, "%s: no %s", what, results_part_names[must]);
}

/* Every strategy (the registry's count is checked, as a new strategy must join), federated
 * ones by the round, and the pipeline's variants (interleaved, replicas with and without
 * gradient buckets, ZeRO, tensor groups, context groups, experts, recomputation): the parts
 * of a step sum to the step and the part that the strategy's communication is shows. */
START_TEST(breakdown_sums_to_step_every_strategy)
{
    static const struct {
        const char *sets[4];
        int must; /* a part that must be above 0 */
    } kinds[] = {
        {{"strategy.kind=single", "cluster.workers=1"}, RESULTS_PART_COMPUTE},
        {{"strategy.kind=sync-ps", "cluster.workers=2"}, RESULTS_PART_DATA},
        {{"strategy.kind=async-ps", "cluster.workers=2"}, RESULTS_PART_DATA},
        {{"strategy.kind=allreduce", "cluster.workers=2"}, RESULTS_PART_DATA},
        {{"strategy.kind=local-sgd", "cluster.workers=2", "strategy.local_steps=2"},
         RESULTS_PART_DATA},
        {{"strategy.kind=fedavg", "strategy.clients=4", "strategy.rounds=3",
          "strategy.fraction=0.5"},
         RESULTS_PART_DATA},
        {{"strategy.kind=fedbuff", "strategy.clients=4", "strategy.concurrency=2",
          "strategy.fraction=0.5"},
         RESULTS_PART_DATA},
        {{"strategy.kind=hierfl", "strategy.clients=8", "strategy.rounds=3",
          "strategy.fraction=0.5"},
         RESULTS_PART_DATA},
        {{"strategy.kind=pipeline", "strategy.stages=2"}, RESULTS_PART_BUBBLE},
        {{"strategy.kind=tensor", "cluster.workers=2"}, RESULTS_PART_TENSOR},
        {{"strategy.kind=zero", "cluster.workers=2"}, RESULTS_PART_DATA},
    };
    size_t n = sizeof kinds / sizeof *kinds, registered = 0;
    for (const sim_strategy_t *const *st = scenario_strategies(); *st; st++)
        registered++;
    ck_assert_uint_eq(registered, n); /* a new strategy joins this list */
    for (size_t i = 0; i < n; i++) {
        int m = 0;
        while (m < 4 && kinds[i].sets[m])
            m++;
        outcome_t o = simulate(kinds[i].sets, m, NULL);
        check_breakdown(kinds[i].sets[0], &o, kinds[i].must);
        ck_assert_msg(o.parts[RESULTS_PART_COMPUTE] > 0, "%s: no compute", kinds[i].sets[0]);
    }
    /* SCAFFOLD's control variates are the optimizer's */
    const char *scaffold[] = {"strategy.kind=fedavg",  "strategy.clients=4",    "strategy.rounds=3",
                              "strategy.fraction=0.5", "strategy.scaffold=yes", "model.momentum=0"};
    outcome_t sc = simulate(scaffold, 6, NULL);
    check_breakdown("scaffold", &sc, RESULTS_PART_OPTIMIZER);
    /* a hybrid pipeline: replicas' collectives, behind the backward passes with buckets */
    const char *hybrid[] = {"strategy.kind=pipeline",   "strategy.stages=2",
                            "cluster.workers=4",        "strategy.data_parallel=2",
                            "strategy.micro_batches=4", "model.batch=16",
                            "strategy.bucket_mb=0"};
    outcome_t h = simulate(hybrid, 7, NULL);
    check_breakdown("pipeline x 2 replicas", &h, RESULTS_PART_DATA);
    ck_assert(h.parts[RESULTS_PART_BUBBLE] > 0 && h.parts[RESULTS_PART_PIPELINE] > 0);
    hybrid[6] = "strategy.bucket_mb=1";
    h = simulate(hybrid, 7, NULL);
    check_breakdown("pipeline x 2 replicas, buckets", &h, RESULTS_PART_BUBBLE);
    hybrid[6] = "strategy.shard_optimizer=yes";
    h = simulate(hybrid, 7, NULL);
    check_breakdown("pipeline x 2 replicas, ZeRO-1", &h, RESULTS_PART_DATA);
    /* timing-only profiles: tensor groups, interleaved; context groups; experts */
    char path[256], arch[300];
    profile_file(path, sizeof path, arch, sizeof arch, tp_two_blocks);
    const char *tp[] = {"strategy.kind=pipeline",
                        "strategy.stages=2",
                        "strategy.tensor=2",
                        "cluster.workers=4",
                        "strategy.micro_batches=4",
                        "model.batch=8",
                        arch,
                        "run.steps=2",
                        "strategy.pipeline_schedule=interleaved",
                        "strategy.virtual_stages=2",
                        "model.recompute=full"};
    outcome_t t = simulate(tp, 11, NULL);
    check_breakdown("pipeline x tensor, interleaved", &t, RESULTS_PART_TENSOR);
    ck_assert(t.parts[RESULTS_PART_RECOMPUTE] > 0 && t.parts[RESULTS_PART_BUBBLE] > 0);
    unlink(path);
    context_profile(path, sizeof path, arch, sizeof arch);
    const char *cp[] = {"strategy.kind=pipeline",
                        "strategy.stages=2",
                        "strategy.micro_batches=4",
                        "model.batch=8",
                        arch,
                        "run.steps=2",
                        "strategy.context=2",
                        "cluster.workers=4",
                        "model.recompute=none"};
    outcome_t c = simulate(cp, 9, NULL);
    check_breakdown("pipeline x context", &c, RESULTS_PART_CONTEXT);
    unlink(path);
    profile_file(path, sizeof path, arch, sizeof arch,
                 "[profile]\nparams = 4200\nforward_flops = 3e6\n"
                 "[backward]\ntop = 100 2e6\nmoe = 4000 2e6\nbottom = 100 2e6\n"
                 "[forward]\nbottom = 1e6 10\nmoe = 1e6 10\ntop = 1e6 10\n"
                 "[tensor]\nbottom = column\n[experts]\nmoe = 4 2 1000\n");
    const char *ep[] = {"strategy.kind=pipeline",
                        "strategy.stages=1",
                        "strategy.micro_batches=2",
                        "model.batch=4",
                        arch,
                        "run.steps=2",
                        "cluster.workers=4",
                        "strategy.data_parallel=4",
                        "strategy.expert=4"};
    outcome_t e = simulate(ep, 9, NULL);
    check_breakdown("experts", &e, RESULTS_PART_EXPERT);
    /* in tensor groups (of a column layer: no all-reduce): the all-to-alls inside a tensor
     * pass are still the experts' */
    const char *tep[] = {"strategy.kind=pipeline",
                         "strategy.stages=1",
                         "strategy.micro_batches=2",
                         "model.batch=4",
                         arch,
                         "run.steps=2",
                         "cluster.workers=4",
                         "strategy.data_parallel=2",
                         "strategy.expert=2",
                         "strategy.tensor=2",
                         "strategy.tensor_comm=messages"};
    e = simulate(tep, 11, NULL);
    check_breakdown("experts x tensor", &e, RESULTS_PART_EXPERT);
    unlink(path);
}
END_TEST

/* Each part against a figure worked out apart from the run:
 *   - single, flops model: compute is the step's FLOPs over the device's speed (forward and
 *     backward of the batch of 8), and nothing waits;
 *   - a ring all-reduce of p workers whose compute takes no time: the data part is the
 *     alpha-beta time 2 (p-1) a + 2 (p-1)/p n / B, within 1% (as the engine's own test);
 *   - gradient buckets (the two-layer profile): the all-reduce of the top layer that runs
 *     behind the bottom layer's backward pass is not in the step's data part, which is the
 *     step less its compute, F + 2 f, to the digit;
 *   - the interleaved pipeline of equal chunks and free messages: the bubble is
 *     (S-1)/(V M+S-1) of the step and the compute V M f a stage; under full recomputation
 *     the recompute part is the forward passes again, a third of f, V M f / 3. */
START_TEST(breakdown_matches_independent_figures)
{
    const char *single[] = {"strategy.kind=single", "cluster.device_flops=1Gf"};
    outcome_t o = simulate(single, 2, NULL);
    check_breakdown("single", &o, RESULTS_PART_COMPUTE);
    double want = o.step_flops * 8 / 1e9;
    ck_assert_msg(fabs(o.parts[RESULTS_PART_COMPUTE] - want) <= 1e-9 * want,
                  "single: compute %.12g s, FLOPs / rate %.12g s", o.parts[RESULTS_PART_COMPUTE],
                  want);
    ck_assert_msg(o.parts[RESULTS_PART_WAIT] <= 1e-9 * want, "single: waits %g s",
                  o.parts[RESULTS_PART_WAIT]);

    static const int ps[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int p = ps[i];
        char w[64];
        snprintf(w, sizeof w, "cluster.workers=%d", p);
        const char *sets[] = {"strategy.kind=allreduce",
                              "strategy.algorithm=ring",
                              w,
                              "model.hidden=2048",
                              "run.steps=3",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.bandwidth=1Gbps",
                              "cluster.latency=10us",
                              "cluster.device_flops=1000000Pf"};
        o = simulate(sets, 10, NULL);
        check_breakdown("ring", &o, RESULTS_PART_DATA);
        double n = (double)o.n_params * sizeof(float);
        want = 2.0 * (p - 1) * ALPHA + 2.0 * (p - 1) / p * n / BW;
        expect_close("ring's data part", p, (size_t)n, o.parts[RESULTS_PART_DATA], want);
    }

    for (int b = 0; b < 2; b++) {
        const char *sets[] = {"strategy.kind=allreduce",
                              "model.arch=profile:" DTSIM_SOURCE
                              "/tests/fixtures/profile-two-layers.ini",
                              "model.batch=1",
                              "cluster.workers=2",
                              "run.steps=2",
                              "cluster.network_model=CM02",
                              "cluster.crosstraffic=no",
                              "cluster.latency=10us",
                              "cluster.device_flops=1Tf",
                              "cluster.bandwidth=1Gbps",
                              b ? "strategy.bucket_mb=1" : "strategy.bucket_mb=0"};
        o = simulate(sets, 11, NULL);
        check_breakdown("buckets", &o, RESULTS_PART_DATA);
        double F = 1e-3, f = 2e-3, layer = ALPHA * 2 + 1e6 / BW;
        double step = b ? F + f + fmax(layer, f) + layer : F + 2 * f + ALPHA * 2 + 2e6 / BW;
        ck_assert_msg(fabs(o.parts[RESULTS_PART_COMPUTE] - (F + 2 * f)) <= 1e-9,
                      "bucket %d: compute %.9g s, want %.9g s", b, o.parts[RESULTS_PART_COMPUTE],
                      F + 2 * f);
        ck_assert_msg(fabs(o.parts[RESULTS_PART_DATA] - (step - F - 2 * f)) <= 1e-6 * step,
                      "bucket %d: data %.9g s, want the step less compute, %.9g s", b,
                      o.parts[RESULTS_PART_DATA], step - F - 2 * f);
    }

    char path[256], arch[300];
    equal_layers_profile(path, sizeof path, arch, sizeof arch);
    for (int S = 2; S <= 4; S += 2)
        for (int V = 1; V <= 2; V++)
            for (int rc = 0; rc < 2; rc++) {
                int M = 2 * S;
                char st[64], mb[64], batch[64], vs[64];
                snprintf(st, sizeof st, "strategy.stages=%d", S);
                snprintf(mb, sizeof mb, "strategy.micro_batches=%d", M);
                snprintf(batch, sizeof batch, "model.batch=%d", 2 * M);
                snprintf(vs, sizeof vs, "strategy.virtual_stages=%d", V);
                const char *sets[] = {"strategy.kind=pipeline",
                                      st,
                                      mb,
                                      batch,
                                      arch,
                                      "run.steps=3",
                                      "cluster.network_model=CM02",
                                      "cluster.crosstraffic=no",
                                      "cluster.bandwidth=100000Gbps",
                                      "cluster.latency=0",
                                      "cluster.device_flops=1Gf",
                                      "strategy.pipeline_schedule=interleaved",
                                      vs,
                                      rc ? "model.recompute=full" : "model.recompute=none"};
                o = simulate(sets, 14, NULL);
                check_breakdown("interleaved", &o, RESULTS_PART_BUBBLE);
                double f = 24.0 / (S * V) * 3e6 * 2 / 1e9, r = rc ? f / 3 : 0;
                double step = o.end_time / (double)o.steps;
                double bubble = (S - 1.0) / (V * M + S - 1.0) * step;
                ck_assert_msg(fabs(o.parts[RESULTS_PART_BUBBLE] - bubble) <= 1e-6 * step,
                              "S=%d V=%d M=%d rc %d: bubble %.9g s, (S-1)/(V M+S-1) of the step "
                              "%.9g s",
                              S, V, M, rc, o.parts[RESULTS_PART_BUBBLE], bubble);
                ck_assert_msg(fabs(o.parts[RESULTS_PART_COMPUTE] - V * M * f) <= 1e-6 * step,
                              "S=%d V=%d M=%d rc %d: compute %.9g s, V M f %.9g s", S, V, M, rc,
                              o.parts[RESULTS_PART_COMPUTE], V * M * f);
                ck_assert_msg(fabs(o.parts[RESULTS_PART_RECOMPUTE] - V * M * r) <= 1e-6 * step,
                              "S=%d V=%d M=%d rc %d: recompute %.9g s, V M f/3 %.9g s", S, V, M, rc,
                              o.parts[RESULTS_PART_RECOMPUTE], V * M * r);
            }
    unlink(path);
}
END_TEST

int main(void)
{
    sim_strategies_register();
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sync_ps_equals_single);
    tcase_add_test(tc, allreduce_equals_single);
    tcase_add_test(tc, lazy_allreduce_equals_eager);
    tcase_add_test(tc, every_strategy_repeats_and_matches_single);
    tcase_add_test(tc, every_strategy_runs_on_the_edge_or_is_refused);
    tcase_add_test(tc, ring_tree_hd_match_alpha_beta);
    tcase_add_test(tc, messages_in_flight_follow_littles_law);
    tcase_add_test(tc, sync_ps_matches_alpha_beta);
    tcase_add_test(tc, async_staleness_grows_with_workers);
    tcase_add_test(tc, staleness_bound_holds_back_fast_workers);
    tcase_add_test(tc, fedprox_term_changes_training);
    tcase_add_test(tc, server_optimizers_step_the_global_model);
    tcase_add_test(tc, fedbuff_is_fedavg_with_one_client_and_records_staleness);
    tcase_add_test(tc, fedbuff_server_reads_what_hosts_sent);
    tcase_add_test(tc, fedbuff_server_takes_updates_as_they_arrive);
    tcase_add_test(tc, ps_server_charges_its_optimizer);
    tcase_add_test(tc, hierfl_one_region_one_edge_round_is_fedavg);
    tcase_add_test(tc, hierfl_regions_move_two_models_each_over_the_wan);
    tcase_add_test(tc, scaffold_is_fedavg_where_the_corrections_cancel);
    tcase_add_test(tc, robust_rules_and_attacks_against_the_mean);
    tcase_add_test(tc, dp_fedavg_clips_and_adds_noise);
    tcase_add_test(tc, many_clients_a_host_keep_their_updates);
    tcase_add_test(tc, updates_at_the_server_are_the_clients_own);
    tcase_add_test(tc, a_closed_round_does_not_wait_behind_its_late_uploads);
    tcase_add_test(tc, secure_aggregation_costs_bytes_and_time_not_weights);
    tcase_add_test(tc, secure_aggregation_fails_the_rounds_dropouts_leave_below_threshold);
    tcase_add_test(tc, client_devices_set_speeds_links_and_availability);
    tcase_add_test(tc, fedavg_shards_worse_than_iid);
    tcase_add_test(tc, fedavg_side_by_side_is_exact_on_cpu);
    tcase_add_test(tc, side_by_side_auto_skips_the_gpt);
    tcase_add_test(tc, local_sgd_side_by_side_is_exact_on_cpu);
    tcase_add_test(tc, every_strategy_runs_and_repeats);
    tcase_add_test(tc, flops_time_model_is_exact);
    tcase_add_test(tc, time_marks_evaluate);
    tcase_add_test(tc, platforms_run);
    tcase_add_test(tc, host_crashes_every_strategy);
    tcase_add_test(tc, link_faults_and_stragglers_every_strategy);
    tcase_add_test(tc, single_crash_costs_downtime_and_lost_step);
    tcase_add_test(tc, straggler_interval_is_integrated);
    tcase_add_test(tc, sync_ps_dead_worker_costs_the_timeout);
    tcase_add_test(tc, accumulate_equals_a_larger_batch);
    tcase_add_test(tc, lossless_compression_changes_nothing);
    tcase_add_test(tc, compressed_bytes_match_the_encodings);
    tcase_add_test(tc, error_feedback_recovers_topk);
    tcase_add_test(tc, pipeline_equals_single);
    tcase_add_test(tc, pipeline_bubble_matches_formula);
    tcase_add_test(tc, pipeline_cut_even);
    tcase_add_test(tc, platform_xml_from_a_plan);
    tcase_add_test(tc, timing_only_pipeline_is_exact);
    tcase_add_test(tc, interleaved_bubble_matches_formula);
    tcase_add_test(tc, interleaved_equals_single);
    tcase_add_test(tc, interleaved_tensor_groups_move_their_cuts);
    tcase_add_test(tc, tensor_profile_bytes_flops_memory_exact);
    tcase_add_test(tc, tensor_pipeline_data_matches_composition);
    tcase_add_test(tc, tensor_scatter_gather_between_stages);
    tcase_add_test(tc, full_recompute_reruns_the_blocks_alone);
    tcase_add_test(tc, dp_comm_auto_is_nccl_on_gpus_with_nvls_in_a_server);
    tcase_add_test(tc, pipeline_zero_stages_bytes_time_memory);
    tcase_add_test(tc, pipeline_zero_overlap_timeline);
    tcase_add_test(tc, zero_overlap_timeline);
    tcase_add_test(tc, data_formula_matches_messages);
    tcase_add_test(tc, context_divides_step_and_memory);
    tcase_add_test(tc, context_exchange_matches_closed_form);
    tcase_add_test(tc, context_refusals_name_the_key);
    tcase_add_test(tc, tensor_recompute_flops_bytes_memory_exact);
    tcase_add_test(tc, tensor_formula_matches_messages);
    tcase_add_test(tc, tensor_members_one_matches_all);
    tcase_add_test(tc, tensor_overlap_hides_what_compute_covers);
    tcase_add_test(tc, gpt_text_equals_single);
    tcase_add_test(tc, nccl_time_matches_its_formula);
    tcase_add_test(tc, nccl_auto_is_the_fastest_fixed_choice);
    tcase_add_test(tc, tensor_nccl_matches_formula);
    tcase_add_test(tc, tensor_stage_keeps_its_messages_in_flight);
    tcase_add_test(tc, hybrid_overlaps_the_gradient_all_reduce);
    tcase_add_test(tc, hybrid_buckets_overlap_the_last_backward);
    tcase_add_test(tc, tensor_equals_single);
    tcase_add_test(tc, adam_splits_equal_single);
    tcase_add_test(tc, adam_pipeline_equals_single);
    tcase_add_test(tc, hybrid_equals_single);
    tcase_add_test(tc, hybrid_sharded_optimizer_equals_single);
    tcase_add_test(tc, memory_per_worker);
    tcase_add_test(tc, precision_sets_bytes_and_compute_time);
    tcase_add_test(tc, memory_and_flops_follow_precision_optimizer_and_recompute);
    tcase_add_test(tc, pipeline_stage_under_full_recompute);
    tcase_add_test(tc, zero_equals_single);
    tcase_add_test(tc, momentum_correction_moves_the_momentum);
    tcase_add_test(tc, timing_only_single_is_exact);
    tcase_add_test(tc, ring_phases_match_ring_steps);
    tcase_add_test(tc, topologies_route_as_drawn);
    tcase_add_test(tc, rail_allreduce_matches_alpha_beta);
    tcase_add_test(tc, buckets_overlap_backward_exactly);
    tcase_add_test(tc, expert_alltoall_matches_hand_count);
    tcase_add_test(tc, expert_overlap_nodes_and_fp8_by_hand);
    tcase_add_test(tc, expert_comm_sms_by_hand);
    suite_add_tcase(s, tc);
    /* NCCL between servers: a case of its own, to be run alone (CK_RUN_CASE=nccl_net) */
    TCase *tn = tcase_create("nccl_net");
    tcase_set_timeout(tn, 300);
    tcase_add_test(tn, nccl_net_matches_its_formula);
    tcase_add_test(tn, dp_nccl_matches_hand_count);
    tcase_add_test(tn, allreduce_nccl_trains_and_times_by_hand);
    suite_add_tcase(s, tn);
    /* divergence by loss, every strategy: a case of its own (CK_RUN_CASE=divergence) */
    TCase *tv = tcase_create("divergence");
    tcase_set_timeout(tv, 300);
    tcase_add_test(tv, divergence_by_loss_stops_every_strategy);
    suite_add_tcase(s, tv);
    /* the breakdown of a step, every strategy: a case of its own (CK_RUN_CASE=breakdown) */
    TCase *tb = tcase_create("breakdown");
    tcase_set_timeout(tb, 300);
    tcase_add_test(tb, breakdown_sums_to_step_every_strategy);
    tcase_add_test(tb, breakdown_matches_independent_figures);
    suite_add_tcase(s, tb);
    /* frontier scale's exact shortcut: a case of its own (CK_RUN_CASE=data_members) */
    TCase *td = tcase_create("data_members");
    tcase_set_timeout(td, 300);
    tcase_add_test(td, data_members_one_matches_all);
    suite_add_tcase(s, td);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
