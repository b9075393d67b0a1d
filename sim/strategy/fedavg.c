/* fedavg: federated averaging (McMahan et al. 2017). A population of clients, each with
 * its own partition of the training set (iid, dirichlet or shards), lives on the client
 * hosts (client c on host c mod hosts). Each round the server samples
 * floor(fraction * clients) clients (at least one, checked with the scenario) among those
 * holding data (a population larger than the training set leaves some clients empty: they
 * are never sampled), sends them the global model, each trains E
 * local epochs of batch B on its data and sends its model back, and the server replaces
 * the global model by the average weighted by client sample counts. prox_mu > 0 adds
 * FedProx's proximal term mu/2 |w - w_global|^2 to every local step (Li et al. 2020).
 * server_optimizer other than avg (or server_lr other than 1) takes the round's average
 * update as a pseudo-gradient for a server optimizer (trainer/fedopt.h: FedAvgM, FedAdagrad,
 * FedAdam, FedYogi). scaffold = yes adds SCAFFOLD's control variates (Karimireddy et al.
 * 2020, option II): the server keeps c, client i keeps c_i (both 0 at first), every local
 * step follows g + c - c_i, the client then sets c_i += dc with
 *   dc = (x - y) / (K lr) - c       (x the global model, y its own after K steps of lr)
 * and uploads dc with its model; the server adds (1/clients) sum dc to c. The model and c
 * travel together both ways: twice FedAvg's bytes. With the plain mean the server computes
 * each client's update itself as it averages (updates_at_server): the same weights, one
 * model in memory rather than one per sampled client. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "fedavg_impl.h"
#include "privacy.h"
#include "wire.h"

enum {
    FEDAVG_STREAM_SAMPLE = 101,
    FEDAVG_STREAM_DP = 107,
};

/* fedavg's own keys (sim_strategy_t.own_keys), read with scenario_own */
static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_CLIENTS,
    SIM_KEY_FRACTION,
    SIM_KEY_LOCAL_EPOCHS,
    SIM_KEY_ROUNDS,
    SIM_KEY_PROX_MU,
    {.key = "server_optimizer",
     .kind = SIM_KEY_ENUM,
     .def = "avg",
     .names = trainer_fedopt_names,
     .doc = "what the server does with the round's average update delta: avg adds "
            "server_lr x delta (FedAvg), avgm adds server_lr x m with m = server_momentum x m + "
            "delta (FedAvgM), adagrad, adam and yogi are Reddi et al. 2021's FedAdagrad, "
            "FedAdam and FedYogi (server_lr x m / (sqrt(v) + server_tau); they want a "
            "server_lr near 0.01 to 0.1)"},
    SIM_KEY_SERVER_LR,
    {.key = "server_momentum",
     .kind = SIM_KEY_REAL,
     .def = "0.9",
     .min = 0,
     .max = 1,
     .open = SIM_KEY_OPEN_MAX,
     .doc = "beta1 of avgm, adagrad, adam and yogi (their first moment)"},
    {.key = "server_beta2",
     .kind = SIM_KEY_REAL,
     .def = "0.99",
     .min = 0,
     .max = 1,
     .open = SIM_KEY_OPEN_MAX,
     .doc = "beta2 of adam and yogi (their second moment)"},
    {.key = "server_tau",
     .kind = SIM_KEY_REAL,
     .def = "0.001",
     .min = 0,
     .max = 1,
     .open = SIM_KEY_OPEN_MIN,
     .doc = "adaptivity of adagrad, adam and yogi: sqrt(v) + tau, v starting at tau^2"},
    {.key = "aggregator",
     .kind = SIM_KEY_ENUM,
     .def = "mean",
     .names = trainer_agg_names,
     .doc = "how the server combines the round's models: mean (weighted by samples), "
            "median or trimmed_mean (per coordinate), krum or multi_krum (Blanchard et al. "
            "2017: the model, or the mean of the multi_krum_m models, closest to their "
            "neighbours); the robust rules resist Byzantine clients (faults.byzantine)"},
    {.key = "trim",
     .kind = SIM_KEY_REAL,
     .def = "0.1",
     .min = 0,
     .max = 0.5,
     .open = SIM_KEY_OPEN_MAX,
     .doc = "trimmed_mean cuts floor(trim x updates) values at each end"},
    {.key = "krum_f",
     .kind = SIM_KEY_INT,
     .def = "0",
     .min = 0,
     .max = 1000000,
     .doc = "Byzantine updates krum and multi_krum tolerate in a round (they need "
            "more than 2 krum_f + 2 updates); 0 = ceil(faults.byzantine x sampled clients)"},
    {.key = "multi_krum_m",
     .kind = SIM_KEY_INT,
     .def = "0",
     .min = 0,
     .max = 1000000,
     .doc = "models multi_krum averages; 0 = updates - krum_f"},
    {.key = "dp_clip",
     .kind = SIM_KEY_REAL,
     .def = "0",
     .min = 0,
     .max = 1e9,
     .doc = "DP-FedAvg (McMahan et al. 2018): each update's L2 norm clipped to dp_clip, "
            "the sum given Gaussian noise of deviation dp_noise x dp_clip and divided by the "
            "expected count; clients sampled each with probability fraction (Poisson, as the "
            "RDP accountant assumes); epsilon after every round in the privacy table; 0 = off"},
    {.key = "dp_noise",
     .kind = SIM_KEY_REAL,
     .def = "1",
     .min = 0,
     .max = 1000,
     .doc = "DP-FedAvg's noise multiplier z (0: clipping only, epsilon infinite)"},
    {.key = "dp_delta",
     .kind = SIM_KEY_REAL,
     .def = "1e-5",
     .min = 0,
     .max = 1,
     .open = SIM_KEY_OPEN_MIN | SIM_KEY_OPEN_MAX,
     .doc = "the delta at which the RDP accountant states epsilon"},
    {.key = "scaffold",
     .kind = SIM_KEY_BOOL,
     .def = "no",
     .doc = "SCAFFOLD's control variates (Karimireddy et al. 2020, option II): local "
            "steps corrected by c - c_i, the model and the control variate sent both ways "
            "(twice the bytes)"},
    {.key = "secure_agg",
     .kind = SIM_KEY_BOOL,
     .def = "no",
     .doc = "secure aggregation's cost (Bonawitz et al. 2017): four steps a round "
            "(advertise keys, share keys, masked input, unmasking) as messages, their key "
            "agreements, secret shares and masks as compute, clients leaving between steps "
            "(faults.dropout); time and bytes only, the weights are those without it"},
    {.key = "secagg_threshold",
     .kind = SIM_KEY_REAL,
     .def = "0.5",
     .min = 0,
     .max = 1,
     .open = SIM_KEY_OPEN_MIN,
     .doc = "secure aggregation needs more than this fraction of the round's clients "
            "to answer each step (t = floor(fraction x n) + 1, at most n), else the round "
            "fails and the model stays (0.5: a majority, the least the paper allows against "
            "an honest-but-curious server)"},
    {.key = "secagg_bits",
     .kind = SIM_KEY_INT,
     .def = "32",
     .min = 1,
     .max = 62,
     .doc = "bits of each value a client masks; a masked value takes secagg_bits + "
            "ceil(log2 n) bits on the wire (n the round's clients), so the sum cannot wrap"},
    {0},
};

/* The server optimizer of sc; 1 if the server steps with it rather than taking the average. */
static int server_optimizer(const scenario_t *sc, trainer_fedopt_t *o)
{
    o->kind = (trainer_fedopt_kind_t)scenario_own(sc, "server_optimizer")->i;
    o->lr = (float)scenario_own(sc, "server_lr")->d;
    o->beta1 = (float)scenario_own(sc, "server_momentum")->d;
    o->beta2 = (float)scenario_own(sc, "server_beta2")->d;
    o->tau = (float)scenario_own(sc, "server_tau")->d;
    return o->kind != TRAINER_FEDOPT_AVG || o->lr != 1.0f;
}

/* The aggregation rule of sc; its f from faults.byzantine when krum_f is 0. */
static trainer_agg_t aggregator(const scenario_t *sc)
{
    trainer_agg_t a = {0};
    a.kind = (trainer_agg_kind_t)scenario_own(sc, "aggregator")->i;
    a.trim = scenario_own(sc, "trim")->d;
    a.f = (int)scenario_own(sc, "krum_f")->l;
    a.m = (int)scenario_own(sc, "multi_krum_m")->l;
    if (a.f == 0)
        a.f = (int)ceil(sc->byzantine * (double)scenario_fedavg_sampled(sc) - 1e-9);
    return a;
}

/* The host buffer of the round's i-th model, made on first use. */
static float *host_model(const sim_run_t *run, server_state_t *st, int i)
{
    if (!st->hx[i])
        st->hx[i] = dt_malloc(sizeof(float) * (run->n_params ? run->n_params : 1));
    return st->hx[i];
}

/* A rule other than the mean: the round's got models to the host, the rule, the result back
 * into params. 0 when the rule cannot take this few updates (a round cut short by faults):
 * the model then stays as it was. */
static int robust_aggregate(sim_run_t *run, sim_node_t *node, server_state_t *st, int got,
                            double *flops)
{
    size_t n = run->n_params;
    dt_err_t e;
    if (trainer_agg_check(&st->agg, got, &e) != DT_OK) {
        sim_fault_log(run, "aggregation", node->name, "round %ld kept the model: %s", node->steps,
                      e.msg);
        return 0;
    }
    *flops = trainer_agg_flops(&st->agg, got, n);
    if (run->timing_only)
        return 1;
    for (int i = 0; i < got; i++)
        run->be->download(host_model(run, st, i), st->msgs[i]->data, sizeof(float) * n);
    trainer_aggregate(&st->agg, st->hout, (const float *const *)st->hx, st->weights, got, n,
                      st->agg_scratch, st->chosen);
    run->be->upload(node->params, st->hout, sizeof(float) * n);
    return 1;
}

/* DP-FedAvg: each of the got models minus the global model x (st->w), clipped to norm S,
 * summed, the noise added and the sum divided by the sampled count m; params = x + that. The
 * accountant's epsilon after this round goes to the privacy table. */
static void dp_aggregate(sim_run_t *run, sim_node_t *node, server_state_t *st, int got, long m,
                         long round, double *flops)
{
    size_t n = run->n_params;
    *flops = (4.0 * got + 3.0) * (double)n; /* differences, norms, scaling, sum; noise */
    if (!run->timing_only) {
        memset(st->hout, 0, sizeof(float) * n);
        for (int i = 0; i < got; i++) {
            float *u = host_model(run, st, i);
            run->be->download(u, st->msgs[i]->data, sizeof(float) * n);
            for (size_t j = 0; j < n; j++)
                u[j] -= st->w[j];
            trainer_dp_clip(u, n, st->dp_clip);
            for (size_t j = 0; j < n; j++)
                st->hout[j] += u[j];
        }
        trainer_dp_fedavg_finish(st->hout, n, st->dp_clip, st->dp_noise, (double)m, &st->dp_rng);
        for (size_t j = 0; j < n; j++)
            st->hout[j] += st->w[j];
        run->be->upload(node->params, st->hout, sizeof(float) * n);
    }
    if (run->db) {
        const scenario_t *sc = run->sc;
        const sim_fl_t *fl = run->shared;
        double q = (double)m / (double)fl->n_holders, delta = scenario_own(sc, "dp_delta")->d;
        double eps = trainer_rdp_epsilon(q, st->dp_noise, round + 1, delta, NULL);
        dt_err_t e;
        if (results_privacy_add(run->db, run->run_id, round + 1, eps, delta, &e) != DT_OK)
            sim_fault_log(run, "record", node->name, "%s", e.msg);
    }
}

/* After the aggregation put the round's average into params: delta = params - st->w, and
 * the server optimizer moves st->w with it into params. */
static void server_opt_step(sim_run_t *run, server_state_t *st, float *params)
{
    size_t n = run->n_params, bytes = sizeof(float) * n;
    run->be->download(st->delta, params, bytes);
    for (size_t i = 0; i < n; i++)
        st->delta[i] -= st->w[i];
    trainer_fedopt_step(&st->opt, st->w, st->delta, st->m, st->v, n);
    run->be->upload(params, st->w, bytes);
}

/* Client c's task for `round`: the global model, and with SCAFFOLD the server's control
 * variate (read by the client from the server's state, counted in the bytes). */
static sim_msg_t *task_msg(sim_run_t *run, sim_node_t *node, const server_state_t *st, int c,
                           long round)
{
    sim_msg_t *task = sim_msg_slice(node, node->params, 0, run->n_params, round);
    task->flag = c;
    if (st->scaffold) {
        task->aux = st->c;
        task->bytes += run->value_bytes * (double)run->n_params;
    }
    return task;
}

/* SCAFFOLD's server step after the round: c += (1/clients) sum of the got updates' dc. */
static void scaffold_server(sim_run_t *run, server_state_t *st, int got)
{
    if (!st->c)
        return;
    const sim_fl_t *fl = run->shared;
    float a = 1.0f / (float)fl->n_holders; /* the population that can take part */
    for (int i = 0; i < got; i++)
        if (st->msgs[i]->aux)
            run->be->axpy(run->n_params, a, st->msgs[i]->aux, st->c);
}

/* With clients side by side: trains the sampled clients[0..count) that will not drop out
 * of the round, before their tasks go out (no simulated time passes: each client charges its
 * own steps when it takes its task). */
static void train_side_by_side(sim_run_t *run, sim_node_t *node, server_state_t *st,
                               const uint32_t *clients, int count, long round)
{
    if (!st->side)
        return;
    uint32_t *train = st->side_clients;
    int n = 0;
    for (int i = 0; i < count; i++)
        if (st->sa.on ? sim_fl_drop_step(run->sc, (int)clients[i], round, SIM_SECAGG_STEPS) >
                            SIM_SECAGG_MASKED - 1
                      : !sim_fl_client_drops(run, (int)clients[i], round)) {
            sim_fl_local_rng(run, (int)clients[i], round, &st->rngs[n]);
            train[n++] = clients[i];
        }
    sim_side_train(st->side, run, train, st->rngs, n, round, node->params);
}

/* An update that came in a round with faults: this round's, while fewer than need came;
 * else a `late` row (sim_fl_accept_fn; ctx the round). */
static int accept_update(sim_run_t *run, const sim_msg_t *up, int full, void *ctx)
{
    long round = *(const long *)ctx;
    if (up->step == round && !full)
        return 1;
    sim_fault_log(run, "late", run->workers[up->from].name,
                  "update of client %d for round %ld dropped in round %ld%s", up->flag, up->step,
                  round, up->step == round ? " (enough came before it)" : "");
    return 0;
}

/* One round with faults: sample among the clients online now (over-selected), post the
 * tasks without waiting for hosts to take them, and aggregate what arrives before the
 * deadline (or before faults.timeout of silence without one); updates of earlier rounds
 * are dropped as late, uploads still under way when the round closes are cut. Returns the
 * number of updates in st->msgs. */
static int round_with_faults(sim_run_t *run, sim_node_t *node, server_state_t *st,
                             trainer_rng_t *rng, long round, int m)
{
    const scenario_t *sc = run->sc;
    const sim_fl_t *fl = run->shared;
    int hosts = run->n_workers;
    int n = 0;
    for (long i = 0; i < fl->n_holders; i++)
        if (sim_fl_client_available(run, (int)fl->holders[i], sim_now()))
            st->population[n++] = fl->holders[i];
    if (n == 0) {
        sim_fault_log(run, "unavailable", node->name, "round %ld: no client online", round);
        sim_sleep_until(sim_fl_next_online(run, sim_now()));
        return -1;
    }
    int want = (int)ceil(m * sc->over_select - 1e-9);
    int sel = want < n ? want : n;
    for (int i = 0; i < sel; i++) {
        int j = i + (int)trainer_rng_below(rng, (uint64_t)(n - i));
        uint32_t t = st->population[i];
        st->population[i] = st->population[j];
        st->population[j] = t;
    }
    train_side_by_side(run, node, st, st->population, sel, round);
    double t0 = sim_now();
    int need = m < sel ? m : sel, got = 0;
    double until = sc->deadline > 0 ? t0 + sc->deadline : INFINITY;
    if (st->sa.on) {
        for (int i = 0; i < sel; i++)
            st->task_msgs[i] = task_msg(run, node, st, (int)st->population[i], round);
        return sim_secagg_round(run, node, &st->sa, sel, st->task_msgs, need, until, round,
                                st->msgs);
    }
    for (int i = 0; i < sel; i++) {
        int c = (int)st->population[i];
        st->task_msgs[i] = task_msg(run, node, st, c, round);
        st->to[i] = run->workers[c % hosts].inbox;
    }
    got = sim_fl_gather(run, node, sel, st->to, st->task_msgs, st->tasks, st->msgs, need, until,
                        st->drained, st->cap, accept_update, &round);
    if (got < need)
        sim_fault_log(run, "deadline", node->name,
                      "round %ld: %d of %d update%s (%d sampled) by %s", round, got, need,
                      need == 1 ? "" : "s", sel, sc->deadline > 0 ? "the deadline" : "the timeout");
    return got;
}

/* Whether the server computes each update as it averages, rather than each client on its
 * host: a client's local training depends only on the global model, its samples and its
 * seeded order, so its host only charges the steps and the server computes the models one
 * after the other, in the order it averages them, into one buffer. The same weights (the
 * same operations in the same order), but one model in memory instead of one per sampled
 * client, and that one warm in the cache. For the plain mean only: the flops time model
 * (the host charges before anything is computed), a real model, and none of what reads or
 * changes a client's model on its own (robust rules, DP-FedAvg, compression, SCAFFOLD,
 * secure aggregation, Byzantine clients, clients side by side). Never in real mode: there
 * each client's host trains it, on its own machine. */
static int updates_at_server(const sim_run_t *run, const server_state_t *st)
{
    const scenario_t *sc = run->sc;
    return !run->real && !run->timing_only && sc->time_model == SIM_TIME_FLOPS &&
           st->agg.kind == TRAINER_AGG_MEAN && st->dp_clip <= 0 && !sim_codec_on(run) &&
           !st->scaffold && !st->sa.on && sc->byzantine == 0 && !st->side;
}

/* The mean of the round's got updates into params, weighted by st->weights (in client
 * order), each computed here (at_server) as its client would have: the backend's average,
 * a scaled copy of the first and an axpy of each next, one update at a time. A loss that is
 * not finite marks the run diverged and ends it after this round. */
static void average_at_server(sim_run_t *run, sim_node_t *node, server_state_t *st, int got,
                              long round)
{
    size_t n = run->n_params;
    float *sum = st->sum; /* not params: every update starts from it */
    for (int i = 0; i < got; i++) {
        if (!sim_fl_local_compute(run, node, &st->order, &st->order_cap, st->msgs[i]->flag, round,
                                  node->params, st->local))
            sim_diverge(run, round, "training", NAN, NAN);
        if (i == 0)
            run->be->average(sum, (const float *const *)&st->local, st->weights, 1, n);
        else
            run->be->axpy(n, st->weights[i], st->local, sum);
    }
    run->be->copy(node->params, sum, sizeof(float) * n);
}

static void server_state_free(sim_node_t *node)
{
    server_state_t *st = node->state;
    if (st->local) {
        sim_current->be->free(st->local);
        sim_current->be->free(st->sum);
    }
    free(st->order);
    free(st->rngs);
    free(st->side_clients);
    free(st->population);
    free(st->to);
    free(st->msgs);
    free(st->srcs);
    free(st->weights);
    free(st->tasks);
    free(st->task_msgs);
    free(st->drained);
    if (st->residual)
        for (long c = 0; c < sim_fl_clients(sim_current->sc); c++)
            free(st->residual[c]);
    free(st->residual);
    if (st->ci)
        for (long c = 0; c < sim_fl_clients(sim_current->sc); c++)
            if (st->ci[c])
                sim_current->be->free(st->ci[c]);
    free(st->ci);
    if (st->c)
        sim_current->be->free(st->c);
    if (st->hx)
        for (int i = 0; i < st->cap; i++)
            free(st->hx[i]);
    free(st->hx);
    free(st->hout);
    free(st->agg_scratch);
    free(st->chosen);
    free(st->w);
    free(st->delta);
    free(st->m);
    free(st->v);
    sim_secagg_free(&st->sa);
}

/* The most clients a round can begin with (over-selected; any number under DP-FedAvg's
 * Poisson sampling), and at least one per host (the stop tasks at the end). */
static int round_cap(const sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    int clients = (int)sim_fl_clients(sc), hosts = run->n_workers;
    int most = clients > hosts ? clients : hosts;
    if (scenario_own(sc, "dp_clip")->d > 0)
        return most;
    int cap = (int)ceil((double)scenario_fedavg_sampled(sc) * sc->over_select - 1e-9);
    if (cap < hosts)
        cap = hosts;
    return cap > clients && cap > hosts ? most : cap;
}

/* The server's state for a run: its per-round arrays sized for `cap` clients and what the
 * aggregator, DP, SCAFFOLD, server-side updates and the server optimizer need. */
static server_state_t *server_state_new(sim_run_t *run, int cap)
{
    const scenario_t *sc = run->sc;
    int clients = (int)sim_fl_clients(sc);
    size_t n = run->n_params ? run->n_params : 1;
    server_state_t *st = dt_calloc(1, sizeof *st);
    st->cap = cap;
    st->population = dt_malloc(sizeof(uint32_t) * (size_t)clients);
    st->to = dt_calloc((size_t)cap, sizeof(sim_box_t));
    st->msgs = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    st->srcs = dt_calloc((size_t)cap, sizeof(float *));
    st->weights = dt_calloc((size_t)cap, sizeof(float));
    st->tasks = dt_calloc((size_t)cap, sizeof(sim_comm_t));
    st->task_msgs = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    st->drained = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    if (sim_codec_on(run) && sc->error_feedback && trainer_codec_lossy(&sc->compression))
        st->residual = dt_calloc((size_t)clients, sizeof(float *));
    st->agg = aggregator(sc);
    st->dp_clip = scenario_own(sc, "dp_clip")->d;
    st->dp_noise = scenario_own(sc, "dp_noise")->d;
    trainer_rng_seed(&st->dp_rng, sc->seed, FEDAVG_STREAM_DP);
    if (st->dp_clip > 0 && !run->timing_only && !st->w)
        st->w = dt_malloc(sizeof(float) * n);
    if ((st->agg.kind != TRAINER_AGG_MEAN || st->dp_clip > 0) && !run->timing_only) {
        st->hx = dt_calloc((size_t)cap, sizeof(float *)); /* each made when first used */
        st->hout = dt_malloc(sizeof(float) * n);
        st->agg_scratch = dt_malloc(sizeof(float) * trainer_agg_scratch(&st->agg, cap, n));
        st->chosen = dt_calloc((size_t)cap, sizeof(int));
    }
    sim_secagg_init(&st->sa, run, cap);
    st->scaffold = scenario_own(sc, "scaffold")->i;
    if (st->scaffold && !run->timing_only) {
        st->c = run->be->alloc(sizeof(float) * n);
        st->ci = dt_calloc((size_t)clients, sizeof(float *));
    }
    /* SCAFFOLD corrects each client's steps, Byzantine clients train apart */
    if (sim_side_enabled(run) && !st->scaffold && sc->byzantine == 0) {
        st->side = sim_side_new(run);
        st->rngs = dt_calloc((size_t)cap, sizeof(trainer_rng_t));
        st->side_clients = dt_calloc((size_t)cap, sizeof(uint32_t));
    }
    st->at_server = updates_at_server(run, st);
    if (st->at_server) {
        st->local = run->be->alloc(sizeof(float) * n);
        st->sum = run->be->alloc(sizeof(float) * n);
    }
    st->opt_on = server_optimizer(sc, &st->opt);
    st->server_step = st->opt_on && !run->timing_only;
    if (st->server_step) {
        int slots = trainer_fedopt_slots(st->opt.kind);
        if (!st->w)
            st->w = dt_malloc(sizeof(float) * n);
        st->delta = dt_malloc(sizeof(float) * n);
        st->m = slots >= 1 ? dt_malloc(sizeof(float) * n) : NULL;
        st->v = slots >= 2 ? dt_malloc(sizeof(float) * n) : NULL;
        trainer_fedopt_init(&st->opt, st->m, st->v, run->n_params);
    }
    return st;
}

/* A round without faults: its clients sampled from the population (m distinct ones, or each
 * with probability m / pop under DP-FedAvg), trained, their updates received into st->msgs.
 * Returns how many answered, -1 when the exchange failed. */
static int round_plain(sim_run_t *run, sim_node_t *node, server_state_t *st, trainer_rng_t *rng,
                       long round, int m)
{
    const sim_fl_t *fl = run->shared;
    int pop = (int)fl->n_holders, hosts = run->n_workers;
    int got = m;
    if (st->dp_clip > 0) {
        /* DP-FedAvg samples each client with probability q = m / pop (Poisson
         * sampling, which its accountant assumes): m clients a round on average */
        got = 0;
        double q = (double)m / (double)pop;
        for (int i = 0; i < pop; i++)
            if (trainer_rng_uniform(rng) < q)
                st->population[got++] = fl->holders[i];
    } else {
        /* sample m distinct clients: a partial Fisher-Yates over the population */
        memcpy(st->population, fl->holders, sizeof(uint32_t) * (size_t)pop);
        for (int i = 0; i < m; i++) {
            int j = i + (int)trainer_rng_below(rng, (uint64_t)(pop - i));
            uint32_t t = st->population[i];
            st->population[i] = st->population[j];
            st->population[j] = t;
        }
    }
    train_side_by_side(run, node, st, st->population, got, round);
    for (int i = 0; i < got; i++) {
        int c = (int)st->population[i];
        st->to[i] = run->workers[c % hosts].inbox;
        st->msgs[i] = task_msg(run, node, st, c, round);
    }
    /* a host serving several sampled clients answers the first before it takes the
     * second task: the receives must be posted before the tasks go out */
    if (st->sa.on)
        return sim_secagg_round(run, node, &st->sa, got, st->msgs, got, INFINITY, round, st->msgs);
    if (got > 0 &&
        sim_sendv_recvv(run, node, got, st->to, st->msgs, node->inbox, got, st->msgs) != SIM_OK)
        return -1;
    return got;
}

/* The `got` updates received (st->msgs) folded into the global model, by the aggregator the
 * run asked for, then the server optimizer's step; the server's compute charged. */
static void aggregate(sim_run_t *run, sim_node_t *node, server_state_t *st, int got, int m,
                      long round)
{
    double w0 = dt_wall_seconds();
    if (st->server_step || (st->dp_clip > 0 && !run->timing_only))
        run->be->download(st->w, node->params, sizeof(float) * run->n_params);
    qsort(st->msgs, (size_t)got, sizeof(sim_msg_t *), sim_fl_by_client);
    double total = 0.0;
    for (int i = 0; i < got; i++) {
        total += st->msgs[i]->weight;
        sim_fl_took_part(run, st->msgs[i]->flag);
    }
    for (int i = 0; i < got; i++) {
        st->srcs[i] = st->msgs[i]->data;
        st->weights[i] = (float)(st->msgs[i]->weight / total);
    }
    double flops = 2.0 * got * (double)run->n_params;
    int moved = 1;
    if (st->dp_clip > 0)
        dp_aggregate(run, node, st, got, m, round, &flops);
    else if (st->agg.kind != TRAINER_AGG_MEAN)
        moved = robust_aggregate(run, node, st, got, &flops);
    else if (sim_codec_on(run)) /* global += the weighted sum of the decoded updates */
        for (int i = 0; i < got; i++)
            sim_msg_add(run, node, st->msgs[i], node->params, st->weights[i]);
    else if (st->at_server)
        average_at_server(run, node, st, got, round);
    else
        run->be->average(node->params, st->srcs, st->weights, got, run->n_params);
    if (st->scaffold) {
        scaffold_server(run, st, got);
        flops *= 2.0;
    }
    if (st->opt_on) { /* charged in timing-only runs too */
        flops += trainer_fedopt_flops(st->opt.kind, run->n_params);
        if (st->server_step && moved)
            server_opt_step(run, st, node->params);
    }
    sim_charge(run, node, flops, dt_wall_seconds() - w0);
}

static void server(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    const scenario_t *sc = run->sc;
    /* the population a round samples from: the clients holding data (all of them unless
     * data.partition left some empty); m of them, or all when fewer hold data */
    const sim_fl_t *fl = run->shared;
    int pop = (int)fl->n_holders;
    int m = (int)scenario_fedavg_sampled(sc);
    if (m > pop)
        m = pop;
    int cap = round_cap(run);
    server_state_t *st = server_state_new(run, cap);
    node->state = st;
    node->state_free = server_state_free;
    trainer_rng_t rng;
    trainer_rng_seed(&rng, sc->seed, FEDAVG_STREAM_SAMPLE);
    if (run->has_faults)
        sim_inbox_open(run, node, cap);
    long round;
    for (round = 0; !sim_should_stop(run, round); round++) {
        int got;
        if (run->has_faults) {
            got = round_with_faults(run, node, st, &rng, round, m);
            if (got < 0) { /* nobody online: the round did not happen */
                round--;
                continue;
            }
        } else if ((got = round_plain(run, node, st, &rng, round, m)) < 0) {
            run->failed = 1;
            break;
        }
        if (got > 0 || st->dp_clip > 0) /* DP's noise goes on an empty round too */
            aggregate(run, node, st, got, m, round);
        node->steps++;
        sim_eval_mark(run, round, node->params);
    }
    sim_fl_finish(run, round, node->params);
    sim_inbox_close(run, node);
    sim_fl_release_hosts(run, node, st->to, st->msgs);
}

static void deploy(sim_run_t *run)
{
    sim_fl_setup(run);
    sim_spawn(run, &run->servers[0], server);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], fedavg_client_host);
}

/* The server talks to every sampled client of a round at once; a client host answers each
 * of its clients of a round (four times with secure aggregation) before the server reads
 * the answers: headers for two rounds of either. */
static size_t msg_slots(const sim_run_t *run, const sim_node_t *node, size_t n)
{
    const scenario_t *sc = run->sc;
    size_t steps = scenario_own(sc, "secure_agg")->i ? SIM_SECAGG_STEPS : 1;
    double cap = round_cap(run);
    if (strcmp(node->role, "server")) {
        double per_host = ceil((double)sim_fl_clients(sc) / run->n_workers);
        cap = per_host < cap ? per_host : cap;
    }
    size_t need = (size_t)cap * 2 * steps + 8;
    return need > n ? need : n;
}

/* the server holds the global model, the round's updates and its optimizer's state */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    sim_memory_default(run, node);
    if (!strcmp(node->role, "server")) {
        double m = (double)scenario_fedavg_sampled(run->sc);
        trainer_fedopt_t opt;
        int slots = server_optimizer(run->sc, &opt) ? trainer_fedopt_slots(opt.kind) : 0;
        node->mem.params = (1 + m) * (double)run->n_params * run->value_bytes;
        node->mem.grads = node->mem.activations = 0;
        node->mem.optimizer = slots * (double)run->n_params * sizeof(float); /* FP32 state */
    }
    if (scenario_own(run->sc, "scaffold")->i) {
        /* the server's c and its round's dc; each client host the c_i of its clients */
        double n = (double)run->n_params * run->value_bytes,
               clients = (double)sim_fl_clients(run->sc);
        double per_host = ceil(clients / run->n_workers);
        if (!strcmp(node->role, "server"))
            node->mem.optimizer += n * (1.0 + (double)scenario_fedavg_sampled(run->sc));
        else
            node->mem.optimizer += n * per_host;
    }
}

/* A round samples at least one client, and clients side by side take one batch a step. */
static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    if (scenario_fedavg_sampled(sc) < 1) {
        k = scenario_blame(sc, "strategy.fraction", "strategy.clients", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "%ld clients x fraction %g samples no client per round (expected "
                             "clients x fraction >= 1; %s)",
                             sim_fl_clients(sc), scenario_own(sc, "fraction")->d, where);
    }
    if (sc->accumulate > 1 && sc->side_by_side == SIM_SIDE_YES) {
        k = scenario_blame(sc, "strategy.accumulate", "model.side_by_side", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "clients side by side take one batch per step: side_by_side = yes "
                             "does not combine with accumulate > 1 (%s)",
                             where);
    }
    trainer_agg_t agg = aggregator(sc);
    if (agg.kind != TRAINER_AGG_MEAN) {
        dt_err_t e;
        long m = scenario_fedavg_sampled(sc);
        if (trainer_agg_check(&agg, (int)(m < 1000000 ? m : 1000000), &e) != DT_OK) {
            const char *own = agg.kind == TRAINER_AGG_TRIMMED_MEAN ? "strategy.trim"
                              : scenario_own(sc, "krum_f")->l      ? "strategy.krum_f"
                              : sc->byzantine > 0                  ? "faults.byzantine"
                                                                   : "strategy.aggregator";
            if (agg.kind == TRAINER_AGG_MULTI_KRUM && scenario_own(sc, "multi_krum_m")->l &&
                agg.m > m - agg.f)
                own = "strategy.multi_krum_m";
            k = scenario_blame(sc, own, "strategy.fraction", where, sizeof where);
            return scenario_fail(sc, err, k, "%s (%s)", e.msg, where);
        }
        if (sc->compression.kind != TRAINER_CODEC_NONE) {
            k = scenario_blame(sc, "strategy.compression", "strategy.aggregator", where,
                               sizeof where);
            return scenario_fail(sc, err, k,
                                 "aggregator = %s reads whole models: it does not combine with "
                                 "compression (%s)",
                                 trainer_agg_names[agg.kind], where);
        }
    }
    if (scenario_own(sc, "dp_clip")->d > 0) {
        if (scenario_has_faults(sc))
            return scenario_fail(sc, err, "strategy.dp_clip",
                                 "DP-FedAvg's accountant assumes every sampled client answers: "
                                 "dp_clip > 0 does not combine with [faults]");
        if (agg.kind != TRAINER_AGG_MEAN) {
            k = scenario_blame(sc, "strategy.aggregator", "strategy.dp_clip", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "DP-FedAvg sums clipped updates: dp_clip > 0 takes aggregator "
                                 "= mean, not %s (%s)",
                                 trainer_agg_names[agg.kind], where);
        }
        if (sc->compression.kind != TRAINER_CODEC_NONE) {
            k = scenario_blame(sc, "strategy.compression", "strategy.dp_clip", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "DP-FedAvg clips whole updates: dp_clip > 0 does not combine "
                                 "with compression (%s)",
                                 where);
        }
    }
    if (scenario_own(sc, "secure_agg")->i) {
        const char *other = sc->compression.kind != TRAINER_CODEC_NONE ? "strategy.compression"
                            : agg.kind != TRAINER_AGG_MEAN             ? "strategy.aggregator"
                            : scenario_own(sc, "dp_clip")->d > 0       ? "strategy.dp_clip"
                                                                       : NULL;
        if (other) {
            k = scenario_blame(sc, other, "strategy.secure_agg", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "secure aggregation hands the server only the sum of the "
                                 "updates: secure_agg = yes does not combine with %s, which "
                                 "reads each update (%s)",
                                 other + strlen("strategy."), where);
        }
    }
    if (scenario_own(sc, "scaffold")->i && sc->compression.kind != TRAINER_CODEC_NONE) {
        k = scenario_blame(sc, "strategy.compression", "strategy.scaffold", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "scaffold sends the control variates uncompressed: it does not "
                             "combine with compression (%s)",
                             where);
    }
    /* Karimireddy et al. 2020 (Algorithm 1) define SCAFFOLD's client step as plain SGD on the
     * corrected gradient y -= lr (g - c_i + c); momentum or Adam on top of it is no variant
     * the paper defines, and one measured here diverged (text-noniid, momentum 0.9: 3.41,
     * 5.83, 20.3, 447.6 nats in 4 rounds) */
    if (scenario_own(sc, "scaffold")->i &&
        (sc->sgd.momentum != 0.0f || sc->sgd.kind != TRAINER_OPT_SGD)) {
        int mom = sc->sgd.momentum != 0.0f;
        k = scenario_blame(sc, mom ? "model.momentum" : "model.optimizer", "strategy.scaffold",
                           where, sizeof where);
        return scenario_fail(sc, err, k,
                             "scaffold's client steps are plain SGD with the control-variate "
                             "correction (Karimireddy et al. 2020); %s is no variant it defines "
                             "(%s; expected momentum = 0 and optimizer = sgd)",
                             mom ? "client momentum" : "an adaptive client optimizer", where);
    }
    if (scenario_own(sc, "scaffold")->i && sc->side_by_side == SIM_SIDE_YES) {
        k = scenario_blame(sc, "model.side_by_side", "strategy.scaffold", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "scaffold corrects each client's steps apart: side_by_side = yes "
                             "does not combine with it (%s)",
                             where);
    }
    return DT_OK;
}

/* What of fedavg does not run real: the server-side state real mode has no place for. */
static dt_status real_check(const scenario_t *sc, dt_err_t *err)
{
    if (scenario_own(sc, "scaffold")->i)
        return scenario_fail(sc, err, "strategy.scaffold",
                             "SCAFFOLD's control variates live with the server's state; they "
                             "do not run real yet");
    if (sc->error_feedback && trainer_codec_lossy(&sc->compression))
        return scenario_fail(sc, err, "strategy.error_feedback",
                             "federated error feedback lives with the server's state; it does "
                             "not run real yet");
    return DT_OK;
}

const sim_strategy_t sim_strategy_fedavg = {
    .name = "fedavg",
    .about = "`clients` clients, each with its own partition, live on the worker hosts "
             "(client c on host c mod workers); each round the server samples floor(`fraction` "
             "x `clients`) of them, sends the global model, each trains `local_epochs` epochs "
             "of `batch` with a fresh optimizer, sends its model back, and the server averages "
             "them weighted by sample counts; `prox_mu` > 0 adds FedProx's proximal term; "
             "`server_optimizer` (avgm, adagrad, adam, yogi) steps the global model with the "
             "average update instead (FedAvgM, FedAdagrad, FedAdam, FedYogi); `scaffold` adds "
             "SCAFFOLD's control variates; `aggregator` takes a robust rule (median, "
             "trimmed mean, Krum), `dp_clip` makes it DP-FedAvg, `secure_agg` adds secure "
             "aggregation's steps, bytes and compute",
    .own_keys = own_keys,
    .worker_role = "client",
    .takes = SIM_TAKES_COMPRESSION | SIM_TAKES_ACCUMULATE | SIM_TAKES_EMPTY_CLIENTS |
             SIM_TAKES_CLIENT_LINKS | SIM_RUNS_REAL,
    .check = check,
    .real_check = real_check,
    .hosts = sim_fl_hosts,
    .parts = sim_fl_parts,
    .horizon = sim_fl_horizon,
    .steps_done = sim_fl_steps_done,
    .msg_slots = msg_slots,
    .memory = memory,
    .deploy = deploy,
};
