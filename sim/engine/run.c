/* The run engine shared by every strategy (see run.h). */
#define _POSIX_C_SOURCE 200809L
#include "run.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compute_model.h"
#include "live.h"
#include "profile_memory.h"
#include "real.h"
#include "rows_alike.h"

/* The run being set up, executed or freed; inside actors of several jobs, their nodes say
 * whose (by_node: a simulation of several runs is under way). */
static sim_run_t *active;
static int by_node;

sim_run_t *sim_run_current(void)
{
    if (by_node) {
        const sim_node_t *node = sim_self_data();
        if (node)
            return node->run;
    }
    return active;
}

/* Set by SIGINT / SIGTERM during a run: the simulation ends at once (sim_transport_halt:
 * wherever the nodes are, a step can take minutes) and the run is recorded as interrupted;
 * real processes stop at their next step. A second signal ends the process. */
static volatile sig_atomic_t interrupted; /* the signal, 0 none */

static void on_signal(int sig)
{
    interrupted = sig;
    sim_transport_halt();
    signal(sig, SIG_DFL);
}

static dt_status load_data(sim_run_t *run, dt_err_t *err)
{
    const scenario_t *sc = run->sc;
    if (!strcmp(sc->data_source, "synthetic")) {
        size_t n = sc->train_samples ? (size_t)sc->train_samples : 60000;
        size_t nt = sc->test_samples ? (size_t)sc->test_samples : 10000;
        /* one draw of n + nt samples split in two, so both share the class means */
        trainer_dataset_t all;
        trainer_dataset_synthetic(&all, n + nt, (size_t)sc->synthetic_dim,
                                  (int)sc->synthetic_classes, (float)sc->synthetic_noise, sc->seed);
        run->train = all;
        run->train.n = n;
        run->test = all;
        run->test.n = nt;
        run->test.x = dt_malloc(sizeof(float) * nt * all.dim);
        run->test.y = dt_malloc(nt);
        memcpy(run->test.x, all.x + n * all.dim, sizeof(float) * nt * all.dim);
        memcpy(run->test.y, all.y + n, nt);
        return DT_OK;
    }
    if (!strcmp(sc->data_source, "text")) { /* windows of model.seq + 1 byte tokens */
        if (trainer_dataset_load_text(&run->train, &run->test, sc->data_text, sc->model.seq, err))
            return DT_ERR_INPUT;
        if (sc->train_samples && (size_t)sc->train_samples < run->train.n)
            run->train.n = (size_t)sc->train_samples;
        /* the first test_samples windows would be the first sources' only (fortunes: 3 of
         * 43): a sample stratified by source instead */
        if (sc->test_samples && (size_t)sc->test_samples < run->test.n)
            trainer_text_subsample(&run->test, (size_t)sc->test_samples, sc->seed);
        return DT_OK;
    }
    const char *dir =
        !strcmp(sc->data_source, "fashion-mnist") ? TRAINER_FASHION_MNIST_DIR : sc->data_source;
    if (trainer_dataset_load_dir(&run->train, dir, "train", 10, err) ||
        trainer_dataset_load_dir(&run->test, dir, "t10k", 10, err))
        return DT_ERR_INPUT;
    if (run->train.rows != run->test.rows || run->train.cols != run->test.cols ||
        run->train.channels != run->test.channels)
        return scenario_fail(sc, err, "data.source",
                             "%s: the training images are %zux%zux%zu, the test images "
                             "%zux%zux%zu (expected one shape)",
                             dir, (size_t)run->train.channels, (size_t)run->train.rows,
                             (size_t)run->train.cols, (size_t)run->test.channels,
                             (size_t)run->test.rows, (size_t)run->test.cols);
    if (sc->train_samples && (size_t)sc->train_samples < run->train.n)
        run->train.n = (size_t)sc->train_samples;
    if (sc->test_samples && (size_t)sc->test_samples < run->test.n)
        run->test.n = (size_t)sc->test_samples;
    return DT_OK;
}

static void node_init(sim_run_t *run, sim_node_t *node, const char *role, int rank, sim_host_t host,
                      size_t len)
{
    const trainer_backend_t *be = run->be;
    memset(node, 0, sizeof *node);
    node->run = run;
    node->rank = rank;
    node->role = role;
    node->host = host;
    /* every box is named after its node's name: jobs' nodes never share one */
    if (run->job)
        snprintf(node->name, sizeof node->name, "j%d.%s-%d", run->job, role, rank);
    else
        snprintf(node->name, sizeof node->name, "%s-%d", role, rank);
    node->inbox = sim_mailbox(node->name, "in");
    size_t bytes = sizeof(float) * (len ? len : 1);
    if (!run->dry) {
        node->params = be->alloc(bytes);
        node->grads = be->alloc(bytes);
        node->velocity = be->alloc(bytes);
        if (run->sc->sgd.kind != TRAINER_OPT_SGD)
            node->moment2 = be->alloc(bytes);
        node->scratch = be->alloc(bytes);
    }
    /* a server talks to every worker at once; a worker to every server, or to one peer at a
     * time in a collective (so thousands of workers do not cost a square of headers) */
    int server = !strcmp(role, "server");
    int peers = server ? run->n_workers + run->n_servers : run->n_servers;
    node->n_msgs = 2 * (size_t)(peers + 8);
    if (run->sc->strategy->msg_slots)
        node->n_msgs = run->sc->strategy->msg_slots(run, node, node->n_msgs);
    if (!server && rank >= run->n_live) /* a stand-in sends and receives nothing (16,384
                                         * workers' slots were 2.5 GB to zero) */
        node->n_msgs = 0;
    node->msgs = dt_calloc(node->n_msgs, sizeof(sim_msg_t));
    node->comms = dt_calloc(node->n_msgs, sizeof(sim_comm_t));
    node->recv_data = dt_calloc(node->n_msgs, sizeof(void *));
    trainer_rng_seed(&node->rng, run->sc->seed ^ ((uint64_t)(rank + 1) << 32),
                     TRAINER_STREAM_SHUFFLE);
    node->slow = 1.0;
    node->ckpt_step = -1;
}

/* The model a run trains: a profile's parameters and FLOPs (timed by shape), or the data
 * loaded and the network built on the backend, its learner made (not for a dry run). */
static dt_status run_model(sim_run_t *run, const scenario_t *sc, dt_err_t *err)
{
    if (run->timing_only) {
        run->n_params = run->profile.params;
        run->model_flops =
            run->profile.forward_flops + run->profile.backward_flops +
            sim_profile_recompute_flops(&run->profile, 0, run->profile.n_layers, sc->recompute);
        /* timed by shape: the profile's FLOPs become those that take the shape model's time
         * at the host's speed, so every strategy charges them as it charges FLOPs */
        run->shape_speed = sim_compute_charge_run(&run->profile, sc);
        run->step_flops =
            run->profile.forward_flops + run->profile.backward_flops +
            sim_profile_recompute_flops(&run->profile, 0, run->profile.n_layers, sc->recompute);
        run->train.n = sc->train_samples ? (size_t)sc->train_samples : 60000;
    } else {
        if (load_data(run, err))
            return DT_ERR_INPUT;
        trainer_model_config_t mc = sc->model;
        mc.in_channels = run->train.channels;
        mc.in_h = run->train.rows;
        mc.in_w = run->train.cols;
        mc.classes = run->train.classes;
        dt_err_t why_model;
        if (trainer_model_build(&run->model, &mc, &why_model))
            return scenario_fail(sc, err, "model.arch", "%s, the inputs of data.source = %s",
                                 why_model.msg, sc->data_source);
        if (trainer_model_check_backend(&run->model, run->be, &why_model))
            return scenario_fail(sc, err, "model.device", "%s", why_model.msg);
        run->n_params = run->model.n_params;
        trainer_flops_t f = trainer_model_flops(&run->model);
        run->step_flops = f.forward + f.backward;
        trainer_backend_cpu_set_threads((int)sc->threads);
        int eval_batch = (int)(sc->batch > 256 ? sc->batch : 256);
        if (!run->dry)
            trainer_learner_init(&run->engine, run->be, &run->model, &sc->sgd, eval_batch,
                                 sc->seed);
    }
    return DT_OK;
}

/* Partition: per worker, or per fedavg client of the population. A timing-only run has no
 * data: its clients hold equal shares of data.train_samples (sim_client_samples). */
static dt_status run_partition(sim_run_t *run, const scenario_t *sc, dt_err_t *err)
{
    const sim_strategy_t *st = sc->strategy;
    int parts = st->parts ? (int)st->parts(sc, run->n_workers) : run->n_workers;
    trainer_partition_spec_t spec = sc->partition;
    spec.empty_ok = (st->takes & SIM_TAKES_EMPTY_CLIENTS) != 0;
    if (!run->timing_only &&
        trainer_partition_make(&run->part, &run->train, parts, &spec, sc->seed, err))
        return DT_ERR_INPUT;
    if (!run->timing_only && sc->client_holdout > 0) {
        /* each client's samples in a seeded order, its last share held out */
        run->held_out = dt_calloc((size_t)parts, sizeof(size_t));
        for (int c = 0; c < parts; c++) {
            size_t n = trainer_partition_size(&run->part, c);
            trainer_rng_t r;
            trainer_rng_seed(&r, sc->seed ^ ((uint64_t)(c + 1) << 24), 108 /* holdout stream */);
            trainer_rng_shuffle_u32(&r, run->part.idx + run->part.offsets[c], n);
            run->held_out[c] = (size_t)floor(sc->client_holdout * (double)n + 1e-9);
        }
    }
    return DT_OK;
}

/* sim_run_init, or sim_run_init_job with plat (its hosts) and job */
static dt_status run_init(sim_run_t *run, const scenario_t *sc, const char *argv0, int job,
                          sim_platform_t *plat, int dry, dt_err_t *err)
{
    memset(run, 0, sizeof *run);
    run->dry = dry;
    run->sc = sc;
    run->job = job;
    /* a platform file SimGrid would end the process on: one line, before anything else (a
     * job's platform was checked and loaded for all jobs) */
    dt_status pst = plat ? DT_OK : sim_platform_check(sc, err);
    if (pst)
        return pst;
    dt_err_t why;
    run->timing_only = sc->profile[0] != '\0';
    if (run->timing_only) {
        if (sim_model_profile_load(&run->profile, sc->profile, &why))
            return dt_err_input(err, "%s: model.arch = profile:%s: %s", sc->path, sc->profile,
                                why.msg);
        DT_ASSERT(sc->time_model == SIM_TIME_FLOPS); /* scenario_validate refuses measured */
        run->be = trainer_backend_timing(sizeof(float) * (run->profile.params + 1));
    } else {
        run->be = trainer_backend_by_name(scenario_backend_name(sc->backend), &why);
    }
    if (!run->be)
        return dt_err_input(err, "%s: model.device = %s: %s", sc->path,
                            scenario_backend_name(sc->backend), why.msg);
    const sim_strategy_t *st = sc->strategy;
    run->total_steps = st->horizon ? st->horizon(sc) : sc->steps;
    run->momentum_correction = sc->momentum_correction && sc->error_feedback &&
                               sc->compression.kind == TRAINER_CODEC_TOPK &&
                               trainer_codec_lossy(&sc->compression) && sc->sgd.momentum != 0.0f &&
                               (st->takes & SIM_TAKES_MOMENTUM_CORRECTION);
    run->stop_before = run->total_steps;
    run->value_bytes = scenario_value_bytes(sc);
    run->time_to_target = NAN;
    run->next_time_mark = sc->eval_interval;
    run->last_loss = NAN;
    run->last_acc = NAN;
    active = run;

    if (run_model(run, sc, err))
        return DT_ERR_INPUT;

    if (plat) {
        run->plat = *plat;
        memset(plat, 0, sizeof *plat);
    } else {
        sim_transport_init(argv0);
        /* the workers that run, asked of the strategy before the platform holds them */
        int workers, servers;
        sim_platform_counts(sc, &workers, &servers);
        run->n_workers = workers;
        run->n_servers = servers;
        run->n_live = st->live_workers ? st->live_workers(run) : workers;
        if (sim_platform_load_live(&run->plat, sc, run->n_live, err))
            return DT_ERR_INPUT;
    }
    run->n_workers = run->plat.n_workers;
    run->n_servers = run->plat.n_servers;
    if (plat || run->n_live <= 0 || run->n_live > run->n_workers)
        run->n_live = run->n_workers;
    sim_record_init(run);
    run->timeline_steps = sc->timeline_steps;
    /* a sampled timeline keeps the first step, every host's: recorded until the second
     * (a pipeline's last stage counts its step before the first stage ends it), cut at
     * the store */
    if (sim_record_sampled(run) && run->timeline_steps > 0)
        run->timeline_steps = 2;
    run->timeline_end = sc->timeline_steps > 0 ? INFINITY : 0.0;
    /* a pipeline's stages or a tensor split's workers share one batch */
    int replicas = st->replicas ? st->replicas(sc, run->n_workers) : run->n_workers;
    run->global_batch = sc->batch * sc->accumulate * replicas;
    if (!run->timing_only && run->global_batch > (long)run->train.n)
        return dt_err_input(err,
                            "%s: a global batch of %ld samples is larger than the %zu "
                            "training samples",
                            sc->path, run->global_batch, run->train.n);

    if (run_partition(run, sc, err))
        return DT_ERR_INPUT;

    const char *worker_role = st->worker_role;
    run->workers = dt_calloc((size_t)run->n_workers, sizeof(sim_node_t));
    run->servers = dt_calloc((size_t)(run->n_servers ? run->n_servers : 1), sizeof(sim_node_t));
    for (int i = 0; i < run->n_workers; i++)
        node_init(run, &run->workers[i], worker_role, i, run->plat.workers[i], run->n_params);
    for (int i = 0; i < run->n_servers; i++)
        node_init(run, &run->servers[i], "server", i, run->plat.servers[i], run->n_params);

    /* Every replica starts from the same initial weights. */
    size_t bytes = sizeof(float) * run->n_params;
    for (int i = 0; i < run->n_workers && !run->dry; i++)
        run->be->copy(run->workers[i].params, run->engine.params, bytes);
    for (int i = 0; i < run->n_servers && !run->dry; i++)
        run->be->copy(run->servers[i].params, run->engine.params, bytes);

    if (sim_faults_init(run, err))
        return DT_ERR_INPUT;
    if (!run->timing_only)
        run->global_order = dt_malloc(sizeof(uint32_t) * run->train.n);
    run->global_epoch = -1;
    run->progress = isatty(STDERR_FILENO) ? SIM_PROGRESS_TERMINAL : SIM_PROGRESS_NONE;
    if (sim_transport_is_real() && sim_real_setup(run, err))
        return DT_ERR_INPUT;
    return DT_OK;
}

dt_status sim_run_init(sim_run_t *run, const scenario_t *sc, const char *argv0, dt_err_t *err)
{
    return run_init(run, sc, argv0, 0, NULL, 0, err);
}

dt_status sim_run_init_dry(sim_run_t *run, const scenario_t *sc, const char *argv0, dt_err_t *err)
{
    return run_init(run, sc, argv0, 0, NULL, 1, err);
}

dt_status sim_run_init_job(sim_run_t *run, const scenario_t *sc, int job, sim_platform_t *plat,
                           dt_err_t *err)
{
    DT_ASSERT(job > 0 && plat);
    return run_init(run, sc, NULL, job, plat, 0, err);
}

void sim_run_on_free(sim_run_t *run, void (*fn)(sim_run_t *run, void *ctx), void *ctx)
{
    sim_cleanup_t *c = dt_malloc(sizeof *c);
    *c = (sim_cleanup_t){fn, ctx, NULL, run->cleanups};
    run->cleanups = c;
}

void sim_run_keep(sim_run_t *run, const void *key, void *state,
                  void (*free_fn)(sim_run_t *run, void *state))
{
    DT_ASSERT(key);
    sim_cleanup_t *c = dt_malloc(sizeof *c);
    *c = (sim_cleanup_t){free_fn, state, key, run->kept};
    run->kept = c;
}

void *sim_run_kept(const sim_run_t *run, const void *key)
{
    for (const sim_cleanup_t *c = run->kept; c; c = c->next)
        if (c->key == key)
            return c->ctx;
    return NULL;
}

/* Runs and frees a list of cleanups (or kept states), the last registered first. */
static void run_cleanups(sim_run_t *run, sim_cleanup_t **list)
{
    while (*list) {
        sim_cleanup_t *c = *list;
        *list = c->next;
        if (c->fn)
            c->fn(run, c->ctx);
        free(c);
    }
}

void sim_run_free(sim_run_t *run)
{
    active = run; /* strategies' state_free and cleanups read sim_current */
    const trainer_backend_t *be = run->be;
    sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l] && i < counts[l]; i++) {
            sim_node_t *n = &lists[l][i];
            be->free(n->params);
            be->free(n->grads);
            be->free(n->velocity);
            if (n->moment2)
                be->free(n->moment2);
            be->free(n->scratch);
            free(n->order);
            free(n->msgs);
            free(n->comms);
            free(n->recv_data);
            free(n->peer_boxes);
            free(n->parts);
            free(n->win);
            free(n->win_data);
            free(n->win_live);
            free(n->win_seen);
            free(n->win_wait);
            free(n->win_at);
            if (n->state_free)
                n->state_free(n);
            free(n->state);
            if (n->ckpt)
                be->free(n->ckpt);
            if (n->norm_sum)
                be->free(n->norm_sum);
        }
    sim_faults_free(run);
    run_cleanups(run, &run->kept);
    run_cleanups(run, &run->cleanups);
    free(run->workers);
    free(run->servers);
    free(run->global_order);
    free(run->staleness);
    free(run->live);
    if (!run->timing_only) {
        trainer_learner_free(&run->engine);
        trainer_partition_free(&run->part);
        free(run->held_out);
        trainer_dataset_free(&run->train);
        trainer_dataset_free(&run->test);
    }
    sim_model_profile_free(&run->profile);
    sim_real_free(run);
    sim_record_free(run);
    sim_platform_free(&run->plat);
    active = NULL;
}

/* ---- actors ---------------------------------------------------------------------- */

void sim_actor_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    sim_node_t *node = sim_self_data();
    sim_breakdown_start(node);
    node->entry(node);
    node->end_time = sim_now();
    if (!node->finished) {
        node->finished = 1;
        sim_fault_node_finished(sim_current);
    }
}

void sim_spawn(sim_run_t *run, sim_node_t *node, void (*fn)(sim_node_t *node))
{
    (void)run;
    char name[48];
    snprintf(name, sizeof name, "%s", node->name);
    node->entry = fn;
    node->alive = 1;
    sim_start(name, node->host, sim_actor_main, node, 0);
}

/* ---- compute ---------------------------------------------------------------------- */

void sim_run_end(sim_run_t *run)
{
    if (run->ended)
        return;
    run->ended = 1;
    run->end_time = sim_now();
    sim_faults_stop(run);
}

void sim_charge(sim_run_t *run, sim_node_t *node, double flops, double wall)
{
    double t0 = sim_now();
    if (run->real) { /* the real compute has taken its time; a straggler sleeps the rest */
        double extra = 0;
        if (sim_fault_slows(run) || node->slow != 1.0)
            extra = sim_fault_compute_time(run, node, t0 - wall, wall) - wall;
        if (extra > 0)
            sim_sleep(extra);
        node->compute_s += wall + (extra > 0 ? extra : 0);
        sim_record_interval(run, node, SIM_STATE_COMPUTE, t0 - wall, sim_now());
        return;
    }
    double speed = sim_host_speed(node->host);
    double seconds = run->sc->time_model == SIM_TIME_MEASURED ? wall : flops / speed;
    if (sim_fault_slows(run) || node->slow != 1.0)
        sim_execute(sim_fault_compute_time(run, node, t0, seconds) * speed);
    else if (run->sc->time_model == SIM_TIME_MEASURED)
        sim_execute(wall * speed);
    else
        sim_execute(flops);
    double t1 = sim_now();
    node->compute_s += t1 - t0;
    sim_record_interval(run, node, SIM_STATE_COMPUTE, t0, t1);
}

/* sim_compute_grad_only with these labels (run->train.y, or a node's own) */
static double grad_of(sim_run_t *run, const uint8_t *labels, const float *params, float *grads,
                      const uint32_t *idx, int batch, double *wall)
{
    *wall = 0.0;
    if (run->timing_only)
        return NAN;
    trainer_learner_t *e = &run->engine;
    double w0 = dt_wall_seconds();
    e->be->gather(e->ws.x, e->ws.labels, run->train.x, labels, idx, batch, run->train.dim);
    double loss;
    int correct;
    trainer_model_forward(&e->ws, params, batch);
    trainer_model_loss(&e->ws, batch, &loss, &correct);
    trainer_model_backward(&e->ws, params, grads, batch);
    *wall = dt_wall_seconds() - w0;
    return loss / batch;
}

double sim_compute_grad_only(sim_run_t *run, const float *params, float *grads, const uint32_t *idx,
                             int batch, double *wall)
{
    return grad_of(run, run->train.y, params, grads, idx, batch, wall);
}

void sim_count_step(sim_run_t *run, sim_node_t *node, int batch, double loss)
{
    node->steps++;
    if (node->steps == run->timeline_steps && isinf(run->timeline_end))
        run->timeline_end = sim_now();
    if (node->steps == 1 && run->timeline_first == 0)
        run->timeline_first = sim_now();
    run->samples += batch;
    if (run->real)
        sim_real_mark(run);
    if (!run->timing_only && !isfinite(loss))
        sim_diverge(run, node->steps, "training", loss, NAN); /* steps counts this one */
    sim_live_tick(run);
}

double sim_compute_grad(sim_run_t *run, sim_node_t *node, const float *params, float *grads,
                        const uint32_t *idx, int batch)
{
    double wall, loss = grad_of(run, node->labels ? node->labels : run->train.y, params, grads, idx,
                                batch, &wall);
    sim_charge(run, node, run->step_flops * batch, wall);
    sim_count_step(run, node, batch, loss);
    return loss;
}

float sim_lr(const sim_run_t *run, long step)
{
    const scenario_t *sc = run->sc;
    trainer_lr_t plan = {sc->schedule, sc->sgd.lr, sc->lr_min, sc->warmup};
    return trainer_lr_at(&plan, step, run->total_steps);
}

int sim_optim_floats(const sim_run_t *run)
{
    return run->momentum_correction ? 0 : trainer_optim_state_floats(&run->sc->sgd);
}

void sim_update(sim_run_t *run, float *w, const float *g, float *m, float *v, size_t n, long step,
                long t)
{
    trainer_optim_t o = run->sc->sgd;
    /* with momentum correction the momentum lives with the senders (comm/wire.h) */
    if (run->momentum_correction)
        o.momentum = 0.0f;
    trainer_optim_update(run->be, &o, sim_lr(run, step), t, w, g, m, v, n);
}

void sim_sgd(sim_run_t *run, float *w, const float *g, float *v, size_t n, long step)
{
    /* its callers refuse adam for real models; a timing-only one computes nothing */
    DT_ASSERT(run->sc->sgd.kind == TRAINER_OPT_SGD || run->timing_only);
    trainer_optim_t o = run->sc->sgd;
    o.kind = TRAINER_OPT_SGD;
    if (run->momentum_correction)
        o.momentum = 0.0f;
    trainer_optim_update(run->be, &o, sim_lr(run, step), step + 1, w, g, v, NULL, n);
}

void sim_clip(sim_run_t *run, float *g, size_t n)
{
    trainer_clip(run->be, &run->sc->sgd, g, n);
}

void sim_optim_clear(sim_run_t *run, sim_node_t *node, size_t off, size_t len)
{
    run->be->scale(len, 0.0f, node->velocity + off);
    if (node->moment2)
        run->be->scale(len, 0.0f, node->moment2 + off);
}

/* ---- sampling ----------------------------------------------------------------------- */

void sim_batch_global(sim_run_t *run, long step, int rank, int batch, uint32_t *idx)
{
    if (run->timing_only)
        return;
    size_t n = run->train.n, g = (size_t)run->global_batch;
    DT_ASSERT(g >= 1 && g <= n);
    long per_epoch = (long)(n / g);
    long epoch = step / per_epoch;
    if (epoch != run->global_epoch) {
        trainer_rng_t r;
        trainer_rng_seed(&r, run->sc->seed + (uint64_t)epoch * 0x9e3779b97f4a7c15ULL,
                         TRAINER_STREAM_SHUFFLE);
        for (size_t i = 0; i < n; i++)
            run->global_order[i] = (uint32_t)i;
        trainer_rng_shuffle_u32(&r, run->global_order, n);
        run->global_epoch = epoch;
    }
    size_t off = (size_t)(step % per_epoch) * g + (size_t)rank * (size_t)batch;
    DT_ASSERT(off + (size_t)batch <= n);
    memcpy(idx, run->global_order + off, sizeof(uint32_t) * (size_t)batch);
}

void sim_batch_own(sim_run_t *run, sim_node_t *node, int batch, uint32_t *idx)
{
    if (run->timing_only)
        return;
    const trainer_partition_t *p = &run->part;
    int part = node->rank % p->clients;
    size_t n = trainer_partition_size(p, part);
    DT_ASSERT(n > 0);
    if (!node->order) {
        node->order = dt_malloc(sizeof(uint32_t) * n);
        memcpy(node->order, p->idx + p->offsets[part], sizeof(uint32_t) * n);
        node->order_n = n;
        node->order_pos = n; /* shuffle on first use */
    }
    for (int b = 0; b < batch; b++) {
        if (node->order_pos == node->order_n) {
            trainer_rng_shuffle_u32(&node->rng, node->order, node->order_n);
            node->order_pos = 0;
        }
        idx[b] = node->order[node->order_pos++];
    }
}

size_t sim_client_samples(const sim_run_t *run, int c)
{
    if (!run->timing_only)
        return trainer_partition_size(&run->part, c) - (run->held_out ? run->held_out[c] : 0);
    size_t k = (size_t)scenario_own(run->sc, "clients")->l, n = run->train.n;
    return n / k + ((size_t)c < n % k);
}

/* ---- evaluation, stopping, recording -------------------------------------------------- */

void sim_evaluate(sim_run_t *run, long step, const float *params)
{
    sim_evaluate_at(run, step, params, sim_now());
}

double sim_cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void sim_evaluate_at(sim_run_t *run, long step, const float *params, double now)
{
    double w0 = dt_wall_seconds(), c0 = sim_cpu_seconds();
    /* timing-only: a progress row without loss and accuracy (stored as NULL) */
    trainer_eval_t ev = {.loss = NAN, .accuracy = NAN};
    if (!run->timing_only)
        ev = trainer_evaluate(&run->engine, params, &run->test);
    run->eval_wall += dt_wall_seconds() - w0;
    run->eval_cpu += sim_cpu_seconds() - c0;
    run->last_loss = ev.loss;
    run->last_acc = ev.accuracy;
    run->last_eval_step = step;
    run->evals++;
    if (isnan(run->time_to_target) && ev.accuracy >= run->sc->target_accuracy)
        run->time_to_target = now;
    if (!run->timing_only && run->train.classes > 1)
        run->chance_streak = ev.accuracy <= 1.5 / run->train.classes ? run->chance_streak + 1 : 0;
    if (!run->timing_only) {
        double bound = sim_divergence_bound(run);
        if (!isfinite(ev.loss) || ev.loss > bound)
            sim_diverge(run, step, "test", ev.loss, isfinite(ev.loss) ? bound : NAN);
    }
    if (run->real) /* recorded by rank 0 with every process's samples and bytes */
        sim_real_eval(run, now, step, ev.loss, ev.accuracy);
    else if (run->db && !run->db_failed &&
             results_eval_add_text(run->db, run->run_id, now, step, run->samples, run->bytes_total,
                                   ev.loss, ev.accuracy,
                                   /* a language model's: the loss is per next token */
                                   run->test.tokens ? trainer_text_perplexity(ev.loss) : NAN,
                                   &run->db_err))
        run->db_failed = 1;
    if (run->live) {
        sim_live_eval(run, ev.accuracy);
        sim_live_tick(run);
    }
    if (run->progress == SIM_PROGRESS_TERMINAL && run->timing_only)
        fprintf(stderr, "\r%s: step %ld/%ld  t=%.3fs  (timing only)   ", run->sc->name, step,
                run->total_steps, now);
    else if (run->progress == SIM_PROGRESS_TERMINAL)
        fprintf(stderr, "\r%s: step %ld/%ld  t=%.3fs  acc=%.4f  loss=%.4f   ", run->sc->name, step,
                run->total_steps, now, ev.accuracy, ev.loss);
}

/* A plain progress line (stderr a pipe or a file) when SIM_PROGRESS_EVERY seconds of wall
 * time have passed since the last one: steps (or rounds) done of the run's, the simulated
 * clock, the wall time so far and an estimate of what is left, from the pace so far. */
static void progress_plain(sim_run_t *run, long steps_done)
{
    static double every = -1;
    if (every < 0) { /* DTSIM_PROGRESS_EVERY=S: another interval (the tests use 0) */
        const char *e = getenv("DTSIM_PROGRESS_EVERY");
        char *end;
        every = e ? strtod(e, &end) : SIM_PROGRESS_EVERY;
        if (!e || end == e || *end || !(every >= 0))
            every = SIM_PROGRESS_EVERY;
    }
    double wall = dt_wall_seconds();
    if (wall - run->progress_shown < every)
        return;
    run->progress_shown = wall;
    double spent = wall - run->started_wall;
    char so_far[32], left[48] = "";
    dt_duration_words(spent, so_far, sizeof so_far);
    if (steps_done > 0 && run->total_steps > steps_done) {
        char t[32];
        dt_duration_words(spent * (double)(run->total_steps - steps_done) / (double)steps_done, t,
                          sizeof t);
        snprintf(left, sizeof left, ", about %s left", t);
    }
    fprintf(stderr, "%s: %s %ld/%ld, simulated %.4g s in %s of wall time%s\n", run->sc->name,
            run->sc->strategy->horizon ? "round" : "step", steps_done, run->total_steps, sim_now(),
            so_far, left);
}

void sim_watchdog(sim_run_t *run)
{
    if (run->halt)
        return;
    if (interrupted) { /* a signal: stopping at a step boundary may never come */
        run->halt = 1;
        return;
    }
    double idle = dt_wall_seconds() - run->progress_wall;
    if (run->sc->stall_after > 0 && idle > run->sc->stall_after) {
        run->halt = run->stalled = 1;
        sim_fault_log(run, "stalled", "run",
                      "no step finished for %.0f s of wall-clock time while faults were "
                      "handled (run.stall_after = %g s): the run ends",
                      idle, run->sc->stall_after);
    }
}

int sim_eval_due(sim_run_t *run, long steps_done)
{
    const scenario_t *sc = run->sc;
    if (steps_done > run->progress_step) {
        run->progress_step = steps_done;
        run->progress_wall = dt_wall_seconds();
        if (run->progress == SIM_PROGRESS_PLAIN)
            progress_plain(run, steps_done);
    }
    int due = 0;
    if (sc->eval_every > 0 && steps_done / sc->eval_every > run->last_step_mark) {
        run->last_step_mark = steps_done / sc->eval_every;
        due = 1;
    }
    if (sc->eval_samples > 0 &&
        (long)(run->samples / (double)sc->eval_samples) > run->last_sample_mark) {
        run->last_sample_mark = (long)(run->samples / (double)sc->eval_samples);
        due = 1;
    }
    double now = sim_now();
    if (sc->eval_interval > 0 && now >= run->next_time_mark) {
        /* the first mark after now, by formula: stepping mark by mark took one iteration per
         * interval passed (1e-15 s: hours per step boundary; below now's ulp: forever) */
        double next = sc->eval_interval * (floor(now / sc->eval_interval) + 1.0);
        run->next_time_mark = next > now ? next : nextafter(now, INFINITY);
        due = 1;
    }
    return due;
}

double sim_divergence_bound(const sim_run_t *run)
{
    /* ln classes is the loss of uniform guesses, where an untrained model starts; a loss k
     * times it puts the right class at classes^-k on average: confidently wrong. Not k x the
     * first evaluation's loss: that comes after eval_every steps, when a run may be far gone
     * (async-ps at lr 0.05, momentum 0.9: 9301 nats at step 25 of a 256-token model) */
    double k = run->sc->divergence_factor;
    if (run->timing_only || !(k > 0) || run->train.classes < 2)
        return INFINITY;
    return k * log((double)run->train.classes);
}

void sim_diverge(sim_run_t *run, long step, const char *which, double loss, double bound)
{
    /* every call asks to stop: a federated client's steps are its own, not rounds, so the
     * evaluation's call after its may be the one that stops the run */
    sim_request_stop(run, step + 1);
    if (run->diverged)
        return;
    run->diverged = 1;
    if (isnan(bound))
        snprintf(run->diverged_why, sizeof run->diverged_why, "%s loss %g at step %ld", which, loss,
                 step);
    else
        snprintf(run->diverged_why, sizeof run->diverged_why,
                 "%s loss %.4g at step %ld, above %.4g (run.divergence_factor %g x ln %d "
                 "classes)",
                 which, loss, step, bound, run->sc->divergence_factor, run->train.classes);
    sim_fault_log(run, "diverged", "run", "%s", run->diverged_why);
}

void sim_request_stop(sim_run_t *run, long step)
{
    /* real mode: the processes would not stop at one step; each stops after run.steps
     * (a diverged run goes on to its end, marked diverged) */
    if (run->real)
        return;
    if (step < run->stop_before)
        run->stop_before = step;
}

int sim_should_stop(sim_run_t *run, long step)
{
    if (run->halt)
        return 1;
    /* +2: a node that sees the limit first may be one step behind a synchronous peer that
     * has already started this step; every node then stops at the same boundary */
    if ((run->sc->max_time > 0 && sim_now() >= run->sc->max_time) || interrupted)
        sim_request_stop(run, step + 2);
    return step >= run->stop_before || run->failed;
}

void sim_staleness_add(sim_run_t *run, long staleness)
{
    if (staleness >= run->staleness_cap) {
        long cap = staleness + 16;
        run->staleness = realloc(run->staleness, sizeof(long) * (size_t)cap);
        DT_CHECK(run->staleness, "out of memory");
        memset(run->staleness + run->staleness_cap, 0,
               sizeof(long) * (size_t)(cap - run->staleness_cap));
        run->staleness_cap = cap;
    }
    run->staleness[staleness]++;
}

/* A node's idle seconds: whatever is not compute or transfer until the run ends. */
static double node_idle(const sim_node_t *n, double end)
{
    double idle = end - n->compute_s - n->comm_s;
    return idle > 0 ? idle : 0;
}

/* A job's end: its latest node's, or the clock while one still runs (nodes never
 * started do not count). */
static double job_end(const sim_run_t *run)
{
    const sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    double end = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l] && i < counts[l]; i++) {
            const sim_node_t *n = &lists[l][i];
            if (n->alive && !n->finished)
                return sim_now();
            if (n->finished && n->end_time > end)
                end = n->end_time;
        }
    return end;
}

double sim_run_end_time(const sim_run_t *run)
{
    if (run->real && sim_real_end(run) > 0)
        return sim_real_end(run);
    if (run->job)
        return job_end(run);
    return run->has_faults && run->ended ? run->end_time : sim_now();
}

void sim_run_shares(const sim_run_t *run, double *compute, double *comm, double *idle)
{
    double end = sim_run_end_time(run);
    *compute = *comm = *idle = 0;
    for (int i = 0; i < run->n_workers; i++) {
        *compute += run->workers[i].compute_s;
        *comm += run->workers[i].comm_s;
        *idle += node_idle(&run->workers[i], end);
    }
}

double sim_activation_values(const sim_run_t *run)
{
    if (!run->timing_only)
        return (double)trainer_model_activation_floats(&run->model, 0, run->model.n_layers);
    if (!run->profile.has_forward_layers)
        return NAN; /* a profile without [forward] does not say */
    double transient;
    double kept = sim_profile_activations(&run->profile, 0, run->profile.n_layers,
                                          run->sc->recompute, &transient);
    return kept + transient;
}

void sim_memory_default(const sim_run_t *run, sim_node_t *node)
{
    const scenario_t *sc = run->sc;
    double n = (double)run->n_params, vb = run->value_bytes, ob = scenario_optimizer_bytes(sc);
    node->mem_set = 1;
    if (!strcmp(node->role, "server")) {
        size_t S = (size_t)run->n_servers, r = (size_t)node->rank;
        double slice = (double)(run->n_params * (r + 1) / S - run->n_params * r / S);
        node->mem.params = node->mem.grads = slice * vb;
        node->mem.optimizer = slice * ob;
        node->mem.activations = 0;
        return;
    }
    node->mem.params = node->mem.grads = n * vb;
    node->mem.optimizer = n * ob;
    node->mem.activations = sim_activation_values(run) * (double)sc->batch * vb;
}

void sim_node_memory(const sim_run_t *run, sim_node_t *node)
{
    if (node->mem_set)
        return;
    sim_node_t *w = run->workers;
    long i = w && node >= w && node < w + run->n_workers ? node - w : -1;
    if (i >= run->n_live) { /* a stand-in holds what the worker it stands for holds */
        sim_node_memory(run, &w[i % run->n_live]);
        node->mem = w[i % run->n_live].mem;
    } else if (run->sc->strategy->memory)
        run->sc->strategy->memory(run, node);
    else
        sim_memory_default(run, node);
    node->mem_set = 1;
}

static double mem_total(const sim_memory_t *m)
{
    return m->params + m->grads + m->optimizer + (isnan(m->activations) ? 0 : m->activations);
}

/* The trainers' hosts (workers, client hosts) hold the model on the device: the fullest
 * one. Servers are hosts of their own (a parameter server's, a federated server's memory
 * is not the trainers' device). */
static const sim_node_t *fullest(const sim_run_t *run)
{
    const sim_node_t *max = NULL;
    for (int i = 0; i < run->n_workers; i++)
        if (!max || mem_total(&run->workers[i].mem) > mem_total(&max->mem))
            max = &run->workers[i];
    return max;
}

void sim_memory_line(const scenario_t *sc, const sim_memory_t *m, const char *role, int rank,
                     char *buf, size_t n)
{
    const sim_device_profile_t *p = scenario_device(sc);
    double cap = p ? p->value[SIM_DEV_MEMORY] : NAN;
    buf[0] = '\0';
    if (isnan(cap))
        return;
    char have[32], of[32];
    scenario_format_gb(mem_total(m), have, sizeof have);
    scenario_format_gb(cap, of, sizeof of);
    snprintf(buf, n, "%s %d holds %s of %s (%s)%s", role, rank, have, of, sc->device,
             isnan(m->activations) ? " without activations" : "");
}

void sim_run_memory_line(const sim_run_t *run, char *buf, size_t n)
{
    const sim_node_t *w = fullest(run);
    buf[0] = '\0';
    if (w)
        sim_memory_line(run->sc, &w->mem, w->role, w->rank, buf, n);
}

dt_status sim_memory_verdict(const scenario_t *sc, const sim_memory_t *m, const char *role,
                             int rank, char *over, size_t over_n, dt_err_t *err)
{
    const sim_device_profile_t *p = scenario_device(sc);
    double cap = p ? p->value[SIM_DEV_MEMORY] : NAN;
    over[0] = '\0';
    if (isnan(cap) || mem_total(m) <= cap)
        return DT_OK;
    char have[32], of[32], parts[4][32], where[SCENARIO_STR + 64];
    scenario_format_gb(mem_total(m), have, sizeof have);
    scenario_format_gb(cap, of, sizeof of);
    const double v[4] = {m->params, m->grads, m->optimizer, m->activations};
    for (int i = 0; i < 4; i++)
        if (isnan(v[i]))
            snprintf(parts[i], sizeof parts[i], "not known");
        else
            scenario_format_gb(v[i], parts[i], sizeof parts[i]);
    snprintf(over, over_n,
             "does not fit: %s > %s on %s %d (parameters %s, gradients %s, optimizer %s, "
             "activations %s; cluster.device = %.100s)",
             have, of, role, rank, parts[0], parts[1], parts[2], parts[3], sc->device);
    if (sc->allow_oversubscribed_memory)
        return DT_OK;
    scenario_key_location(sc, "cluster.device", where, sizeof where);
    return dt_err_input(err,
                        "%s: %s; set run.allow_oversubscribed_memory = yes to time it "
                        "anyway",
                        where, over);
}

dt_status sim_run_prepare(sim_run_t *run, dt_err_t *err)
{
    if (run->prepared)
        return DT_OK;
    run->prepared = 1;
    const scenario_t *sc = run->sc;
    sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++)
            sim_node_memory(run, &lists[l][i]);
    const sim_node_t *w = fullest(run);
    if (!w)
        return DT_OK;
    dt_status st = sim_memory_verdict(sc, &w->mem, w->role, w->rank, run->oversubscribed,
                                      sizeof run->oversubscribed, err);
    char host[32];
    if (run->oversubscribed[0])
        snprintf(run->oversubscribed_host, sizeof run->oversubscribed_host, "%s",
                 sim_node_host_name(w, host, sizeof host));
    return st;
}

/* Global steps (rounds for fedavg). */
static long global_steps(const sim_run_t *run)
{
    return run->sc->strategy->steps_done ? run->sc->strategy->steps_done(run)
                                         : run->workers[0].steps;
}

long sim_run_steps(const sim_run_t *run)
{
    return global_steps(run);
}

const char *sim_node_host_name(const sim_node_t *node, char *buf, size_t n)
{
    const sim_run_t *run = node->run;
    if (run && node >= run->workers && node < run->workers + run->n_workers)
        return sim_platform_worker_host(&run->plat, (int)(node - run->workers), buf, n);
    return sim_host_name(node->host);
}

void sim_run_energy(const sim_run_t *run, results_energy_t *e)
{
    const scenario_t *sc = run->sc;
    double end = sim_run_end_time(run), idle, max;
    int hosts = run->n_workers + run->n_servers;
    *e = (results_energy_t){.hosts = hosts, .host_joules = NAN, .link_ports = run->plat.ports};
    if (run->plat.energy && sim_platform_device_power(sc, &idle, &max) == DT_OK) {
        sim_host_t *lists[2] = {run->plat.workers, run->plat.servers};
        int counts[2] = {run->n_workers, run->n_servers};
        e->host_joules = 0;
        for (int l = 0; l < 2; l++)
            for (int i = 0; i < counts[l]; i++)
                e->host_joules +=
                    sim_host_energy(lists[l][l == 0 && run->worker_twin ? run->worker_twin[i] : i]);
    }
    e->link_joules = run->plat.ports * sc->link_power * end;
    long steps = global_steps(run);
    double joules = e->host_joules + e->link_joules;
    e->joules_per_step = steps > 0 ? joules / (double)steps : NAN;
    e->joules_per_sample = run->samples > 0 ? joules / run->samples : NAN;
    /* the devices' hours and, priced apart, the network ports' (what a faster fabric
     * costs); the devices' term as it always was, so that a run without a port price costs
     * the same to the bit; NAN when neither has a price */
    double dev = sc->price_per_device_hour, port = sc->price_per_port_hour;
    double priced = dev > 0 || port > 0 ? 1 : NAN;
    e->dollars = (hosts * end / 3600 * dev + run->plat.ports * end / 3600 * port) * priced;
    e->dollars_per_sample = run->samples > 0 ? e->dollars / run->samples : NAN;
    e->dollars_to_target = (hosts * run->time_to_target / 3600 * dev +
                            run->plat.ports * run->time_to_target / 3600 * port) *
                           priced;
}

/* The workers and memory rows, those alike as one (rows_alike.h): a node's figures as its
 * workers row stores them (compute, comm, idle, bytes sent and received, steps) and as its
 * memory row does (parameters, gradients, optimizer state, activations). */
enum { WORKER_FIGS = 6, MEMORY_FIGS = 4 };
static dt_status record_hosts(sim_run_t *run, double end, dt_err_t *err)
{
    sim_node_t *lists[2] = {run->workers, run->servers};
    int counts[2] = {run->n_workers, run->n_servers};
    size_t n = (size_t)(run->n_workers + run->n_servers), k = 0;
    double *fw = dt_malloc(sizeof(double) * WORKER_FIGS * (n ? n : 1)); /* (n, WORKER_FIGS) */
    double *fm = dt_malloc(sizeof(double) * MEMORY_FIGS * (n ? n : 1)); /* (n, MEMORY_FIGS) */
    const char **role = dt_malloc(sizeof(char *) * (n ? n : 1));
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++, k++) {
            sim_node_t *nd = &lists[l][i];
            sim_node_memory(run, nd);
            double *w = fw + k * WORKER_FIGS, *m = fm + k * MEMORY_FIGS;
            w[0] = nd->compute_s, w[1] = nd->comm_s, w[2] = node_idle(nd, end);
            w[3] = nd->bytes_sent, w[4] = nd->bytes_recv, w[5] = (double)nd->steps;
            m[0] = nd->mem.params, m[1] = nd->mem.grads, m[2] = nd->mem.optimizer;
            m[3] = nd->mem.activations;
            role[k] = nd->role;
        }
    int grouped = sim_rows_grouped(run);
    long *w = sim_rows_alike(fw, WORKER_FIGS, role, n, grouped);
    long *m = sim_rows_alike(fm, MEMORY_FIGS, role, n, grouped);
    dt_status st = DT_OK;
    k = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l] && st == DT_OK; i++, k++) {
            sim_node_t *nd = &lists[l][i];
            char host[32];
            if (w[k])
                st = results_worker_add(run->db, run->run_id, nd->rank,
                                        sim_node_host_name(nd, host, sizeof host), nd->role,
                                        nd->compute_s, nd->comm_s, node_idle(nd, end),
                                        nd->bytes_sent, nd->bytes_recv, nd->steps, w[k], err);
            if (m[k] && st == DT_OK)
                st = results_memory_add(run->db, run->run_id, nd->rank, nd->role, nd->mem.params,
                                        nd->mem.grads, nd->mem.optimizer, nd->mem.activations, m[k],
                                        err);
        }
    free(w);
    free(m);
    free(fw);
    free(fm);
    free(role);
    return st;
}

static dt_status record_end(sim_run_t *run, const char *status, dt_err_t *err)
{
    results_db_t *db = run->db;
    if (results_tx_begin(db, err))
        return DT_ERR_RUN;
    double end = sim_run_end_time(run);
    if (record_hosts(run, end, err))
        return DT_ERR_RUN;
    for (long s = 0; s < run->staleness_cap; s++)
        if (run->staleness[s] && results_staleness_add(db, run->run_id, s, run->staleness[s], err))
            return DT_ERR_RUN;
    long steps = global_steps(run);
    if (sim_record_store(run, steps > 0 ? end / (double)steps : end, err))
        return DT_ERR_RUN;
    results_energy_t energy;
    sim_run_energy(run, &energy);
    if (results_energy_add(db, run->run_id, &energy, err))
        return DT_ERR_RUN;
    double parts[RESULTS_PART_COUNT];
    sim_breakdown_of(run, end, steps, parts);
    if (steps > 0 && end > 0 && results_breakdown_add(db, run->run_id, parts, err))
        return DT_ERR_RUN;
    if (results_tx_commit(db, err))
        return DT_ERR_RUN;
    double compute, comm, idle;
    sim_run_shares(run, &compute, &comm, &idle);
    double total = compute + comm + idle;
    results_summary_t sum = {
        .final_accuracy = run->last_acc,
        .final_loss = run->last_loss,
        .sim_time = end,
        .time_to_target = run->time_to_target,
        .target_accuracy = run->sc->target_accuracy,
        .total_bytes = run->bytes_total,
        .compute_share = total > 0 ? compute / total : NAN,
        .comm_share = total > 0 ? comm / total : NAN,
        .idle_share = total > 0 ? idle / total : NAN,
        .steps = global_steps(run),
    };
    if (results_run_end(db, run->run_id, status, &sum, err))
        return DT_ERR_RUN;
    return DT_OK;
}

/* Before the simulation: prepares (sim_run_prepare) and deploys the strategy. */
static dt_status run_start(sim_run_t *run, dt_err_t *err)
{
    active = run;
    run->progress_wall = run->progress_shown = run->started_wall = dt_wall_seconds();
    dt_status prep = sim_run_prepare(run, err);
    if (prep)
        return prep;
    if (run->oversubscribed[0]) /* timed anyway (run.allow_oversubscribed_memory) */
        sim_fault_log(run, "memory", run->oversubscribed_host, "%s", run->oversubscribed);
    run->sc->strategy->deploy(run);
    if (run->real)
        sim_real_faults_start(run);
    else
        sim_faults_start(run);
    return DT_OK;
}

/* After the simulation: the run's status, summary and rows. */
static dt_status run_finish(sim_run_t *run, double wall, double cpu, dt_err_t *err)
{
    const scenario_t *sc = run->sc;
    const sim_strategy_t *st = sc->strategy;
    active = run;
    run->interrupted = interrupted;
    run->execute_wall = wall;
    run->execute_cpu = cpu;
    sim_live_end(run); /* before shared_free: a strategy's steps_done may read it */
    if (st->summary)
        st->summary(run, run->note, sizeof run->note);
    if (run->shared_free)
        run->shared_free(run->shared);
    run->shared = NULL;
    if (run->progress == SIM_PROGRESS_TERMINAL)
        fputc('\n', stderr);
    /* a slowdown or fault value so large that the clock ran off to infinity (or NaN): the
     * run cannot have finished, whatever its nodes believe */
    int clock_lost = !isfinite(sim_run_end_time(run));
    if (clock_lost || run->stalled)
        run->failed = 1;
    run->collapsed = !run->failed && !run->diverged && !run->interrupted &&
                     sc->collapse_after > 0 && run->chance_streak >= sc->collapse_after;
    const char *status = run->stalled       ? "stalled"
                         : run->failed      ? "failed"
                         : run->diverged    ? "diverged"
                         : run->interrupted ? "interrupted"
                         : run->collapsed   ? "collapsed"
                                            : "finished";
    if (clock_lost)
        dt_err_input(err,
                     "the simulated time became %g (a slowdown or a fault value too large "
                     "for the clock)",
                     sim_run_end_time(run));
    else if (run->stalled)
        dt_err_input(err,
                     "stalled: no step finished for run.stall_after = %g s of wall-clock "
                     "time while faults were handled (a livelock of recoveries; see the "
                     "faults table)",
                     sc->stall_after);
    else if (run->failed)
        dt_err_input(err, "a simulated transfer failed or timed out");
    if (run->db) {
        if (run->db_failed) {
            *err = run->db_err;
            return DT_ERR_RUN;
        }
        if (record_end(run, status, err))
            return DT_ERR_RUN;
    }
    return run->failed ? DT_ERR_RUN : DT_OK;
}

int sim_run_stop_signal(void)
{
    return interrupted;
}

dt_status sim_run_execute_all(sim_run_t *const *runs, int n, dt_err_t *err)
{
    double w0 = dt_wall_seconds(), c0 = sim_cpu_seconds();
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    dt_status st = DT_OK;
    for (int i = 0; i < n && !st; i++)
        st = run_start(runs[i], err);
    if (st) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return st;
    }
    by_node = n > 1;
    sim_transport_run();
    by_node = 0;
    for (int i = 0; i < n; i++)
        if (runs[i]->real)
            sim_real_collect(runs[i]);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    double wall = dt_wall_seconds() - w0, cpu = sim_cpu_seconds() - c0;
    for (int i = 0; i < n; i++) {
        dt_err_t e = {""};
        dt_status r = run_finish(runs[i], wall, cpu, &e);
        if (r && !st) {
            st = r;
            *err = e;
        }
    }
    return st;
}

dt_status sim_run_execute(sim_run_t *run, dt_err_t *err)
{
    return sim_run_execute_all(&run, 1, err);
}
