/* Checks of relations between keys once all are read (scenario_validate): the generic
 * ones here, through the registry's flags and slots (strategy_def.h); a strategy's own
 * checks in its file (sim_strategy_t.check), called from here. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client_devices.h"
#include "gpt.h"
#include "keys_impl.h"
#include "scenario.h"

int scenario_has_client_devices(const scenario_t *sc)
{
    return strcmp(sc->client_speed, "same") || strcmp(sc->device_trace, "none") ||
           strcmp(sc->client_up, "platform") || strcmp(sc->client_down, "platform") ||
           strcmp(sc->client_latency, "platform");
}

int scenario_has_faults(const scenario_t *sc)
{
    return strcmp(sc->crash, "none") || strcmp(sc->link_down, "none") ||
           strcmp(sc->link_degrade, "none") || sc->live_links || sc->live_hosts ||
           strcmp(sc->straggler, "none") || strcmp(sc->slowdown, "none") || sc->mtbf > 0 ||
           sc->dropout > 0 || sc->deadline > 0 || sc->over_select > 1 ||
           strcmp(sc->availability, "always");
}

sim_net_model_t scenario_network_model(const scenario_t *sc)
{
    if (sc->network_model != SIM_NET_AUTO)
        return sc->network_model;
    /* links of a millisecond or more are where messages wait on TCP's window (dtsim
     * validate on the shaped-link testbed: CM02 runs 11-43% fast at 5-50 ms, LV08 and SMPI
     * 30-530% slow, tcp within 10%; at 0.1 ms LV08 and tcp are both within 5%) */
    int wide =
        sc->platform == SIM_PLATFORM_EDGE || sc->latency >= 1e-3 ||
        ((sc->platform == SIM_PLATFORM_MULTI_RACK || sc->platform == SIM_PLATFORM_FAT_TREE) &&
         sc->uplink_latency >= 1e-3);
    return wide ? SIM_NET_TCP : SIM_NET_LV08;
}

/* Every key at its default, made once: what "set to other than its default" compares with. */
static const scenario_t *defaults(void)
{
    static scenario_t d;
    static int have;
    if (!have) {
        scenario_defaults(&d);
        have = 1;
    }
    return &d;
}

/* Whether the value of key d (a typed field of scenario_t) differs from its default. */
static int key_differs(const scenario_t *sc, const key_desc_t *d)
{
    size_t size = d->store == ST_INT || d->store == ST_FLOAT ? 4 : 8;
    return memcmp((const char *)sc + d->off, (const char *)defaults() + d->off, size) != 0;
}

/* The cluster.tcp_* keys are the tcp model's: set to other than their defaults for another
 * model, refused (a written configuration holds every key). */
static int check_tcp_keys(const scenario_t *sc, dt_err_t *err)
{
    sim_net_model_t m = scenario_network_model(sc);
    if (m == SIM_NET_TCP)
        return 0;
    for (int i = 0; i < scn_key_count; i++) {
        char name[64], where[96];
        snprintf(name, sizeof name, "cluster.%s", scn_key_table[i].key);
        if (strcmp(scn_key_table[i].section, "cluster") ||
            strncmp(scn_key_table[i].key, "tcp_", 4) || !scenario_key_given(sc, name) ||
            !key_differs(sc, &scn_key_table[i]))
            continue;
        const char *k = scenario_blame(sc, name, "cluster.network_model", where, sizeof where);
        static const char *const names[] = {"LV08", "CM02", "SMPI"};
        scenario_fail(sc, err, k,
                      "%s is read by network_model = tcp only, and this run's model is %s%s "
                      "(%s)",
                      name, names[m], sc->network_model == SIM_NET_AUTO ? " (auto)" : "", where);
        return 1;
    }
    return 0;
}

int scenario_simulable(sim_quantity_t q, double v)
{
    switch (q) {
    case SIM_Q_LATENCY:
        return v == 0 || (v >= SIM_LATENCY_MIN && v <= SIM_LATENCY_MAX);
    case SIM_Q_BANDWIDTH:
        return v >= SIM_BANDWIDTH_MIN && v <= SIM_BANDWIDTH_MAX;
    case SIM_Q_SPEED:
        return v >= SIM_SPEED_MIN && v <= SIM_SPEED_MAX;
    }
    return 0;
}

const char *scenario_simulable_range(sim_quantity_t q)
{
    static const char *const text[] = {"0, or 1ns to 1000s", "1kbps to 1000TBps", "1f to 1e24f"};
    DT_ASSERT((int)q >= 0 && q <= SIM_Q_SPEED);
    return text[q];
}

/* The links' and hosts' values the platform is built from, against what SimGrid's solver
 * computes with (scenario_simulable): a value the keys' own ranges take but the solver
 * does not is refused here, with the range, not met as a crash in the run. */
static dt_status check_simulable(const scenario_t *sc, dt_err_t *err)
{
    static const struct {
        const char *key;
        size_t off;
        sim_quantity_t q;
    } keys[] = {
        {"cluster.latency", offsetof(scenario_t, latency), SIM_Q_LATENCY},
        {"cluster.uplink_latency", offsetof(scenario_t, uplink_latency), SIM_Q_LATENCY},
        {"cluster.nvlink_latency", offsetof(scenario_t, nvlink_latency), SIM_Q_LATENCY},
        {"cluster.bandwidth", offsetof(scenario_t, bandwidth), SIM_Q_BANDWIDTH},
        {"cluster.uplink_bandwidth", offsetof(scenario_t, uplink_bandwidth), SIM_Q_BANDWIDTH},
        {"cluster.nvlink_bandwidth", offsetof(scenario_t, nvlink_bandwidth), SIM_Q_BANDWIDTH},
        {"cluster.device_flops", offsetof(scenario_t, device_flops), SIM_Q_SPEED},
    };
    static const unit_t *const units[] = {scn_time_units, scn_bandwidth_units, scn_flops_units};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        double v = *(const double *)((const char *)sc + keys[i].off);
        if (scenario_simulable(keys[i].q, v))
            continue;
        const char *k = keys[i].key;
        /* a speed from the device: the device is the key to name */
        if (keys[i].q == SIM_Q_SPEED && !scenario_key_given(sc, k))
            k = "cluster.device";
        char text[64];
        scn_format_unit(text, sizeof text, v, units[keys[i].q]);
        return scenario_fail(sc, err, k,
                             "%s is beyond what SimGrid's solver computes with (expected %s)", text,
                             scenario_simulable_range(keys[i].q));
    }
    return DT_OK;
}

/* The client device keys: the first given for a strategy without clients, a trace column
 * given twice, per-client links where the platform has none. */
static dt_status check_client_devices(const scenario_t *sc, dt_err_t *err)
{
    char names[256];
    static const struct {
        const char *key;
        size_t off;
        const char *unset;
        unsigned columns;
    } keys[] = {
        {"faults.client_speed", offsetof(scenario_t, client_speed), "same",
         SIM_DEVICE_SPEED | SIM_DEVICE_MS_PER_SAMPLE},
        {"faults.device_trace", offsetof(scenario_t, device_trace), "none", 0},
        {"faults.client_up", offsetof(scenario_t, client_up), "platform", SIM_DEVICE_UP},
        {"faults.client_down", offsetof(scenario_t, client_down), "platform", SIM_DEVICE_DOWN},
        {"faults.client_latency", offsetof(scenario_t, client_latency), "platform",
         SIM_DEVICE_LATENCY},
    };
    const sim_strategy_t *st = sc->strategy;
    char where[96];
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *v = (const char *)sc + keys[i].off;
        if (!strcmp(v, keys[i].unset))
            continue;
        if (strcmp(st->worker_role, "client")) {
            scenario_strategies_federated(0, " or ", names, sizeof names);
            return scenario_fail(sc, err, keys[i].key,
                                 "client devices describe federated clients: %s needs %s, "
                                 "not %s",
                                 keys[i].key + 7, names, st->name);
        }
        if (sc->device_trace_has & keys[i].columns)
            return scenario_fail(sc, err, keys[i].key,
                                 "faults.device_trace (%s) gives every client's %s already "
                                 "(expected %s = %s, or a trace without that column)",
                                 sc->device_trace, keys[i].key + 14, keys[i].key + 7,
                                 keys[i].unset);
    }
    unsigned links = sim_client_links_given(sc);
    if (!links)
        return DT_OK;
    const char *k = links & SIM_DEVICE_UP     ? "faults.client_up"
                    : links & SIM_DEVICE_DOWN ? "faults.client_down"
                                              : "faults.client_latency";
    if (!strcmp(sc->client_up, "platform") && !strcmp(sc->client_down, "platform") &&
        !strcmp(sc->client_latency, "platform"))
        k = "faults.device_trace";
    if (sc->platform != SIM_PLATFORM_EDGE) {
        k = scenario_blame(sc, k, "cluster.platform", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "per-client links need the edge platform, where each client "
                             "host has its own access link (expected cluster.platform = "
                             "edge; %s)",
                             where);
    }
    if (!(st->takes & SIM_TAKES_CLIENT_LINKS)) {
        scenario_strategies_taking(SIM_TAKES_CLIENT_LINKS, " or ", names, sizeof names);
        return scenario_fail(sc, err, k,
                             "per-client links need %s: %s's clients do not train on hosts "
                             "of their own, so a host's link is no client's own (expected "
                             "links of the platform, or another strategy.kind)",
                             names, st->name);
    }
    if (sc->workers < scenario_own(sc, "clients")->l) {
        k = scenario_blame(sc, "cluster.workers", k, where, sizeof where);
        return scenario_fail(sc, err, k,
                             "per-client links need a host per client (client c trains on "
                             "host c mod workers): %ld hosts for %ld clients (expected "
                             "workers >= clients; %s)",
                             sc->workers, scenario_own(sc, "clients")->l, where);
    }
    return DT_OK;
}

/* Each federated client's speed and link as the run will draw them (the same seeded
 * streams), against what SimGrid's solver computes with: a distribution's tail or a
 * constant can give what no trace row may (a downlink of 1e-300 B/s aborted SimGrid). */
static dt_status check_client_values(const scenario_t *sc, dt_err_t *err)
{
    if (!scenario_has_client_devices(sc) || strcmp(sc->strategy->worker_role, "client"))
        return DT_OK;
    sim_client_devices_t d;
    if (sim_client_devices_open(&d, sc, 0, err))
        return DT_ERR_INPUT;
    static const struct {
        unsigned bit;
        const char *key;
        sim_quantity_t q;
    } what[] = {
        {SIM_DEVICE_UP, "faults.client_up", SIM_Q_BANDWIDTH},
        {SIM_DEVICE_DOWN, "faults.client_down", SIM_Q_BANDWIDTH},
        {SIM_DEVICE_LATENCY, "faults.client_latency", SIM_Q_LATENCY},
    };
    /* FedScale's times become speeds through the model's FLOPs: bounded as they are read */
    int speeds = !(d.trace.n && (d.trace.has & SIM_DEVICE_MS_PER_SAMPLE));
    dt_status st = DT_OK;
    for (long c = 0; c < scenario_own(sc, "clients")->l && !st; c++) {
        double v[3], speed = speeds ? sim_client_speed(&d, c) : 1;
        unsigned given = sim_client_link(&d, c, &v[0], &v[1], &v[2]);
        const char *key = NULL;
        sim_quantity_t q = SIM_Q_SPEED;
        double x = speed;
        if (!scenario_simulable(SIM_Q_SPEED, speed))
            key = d.trace.n && (d.trace.has & SIM_DEVICE_SPEED) ? "faults.device_trace"
                                                                : "faults.client_speed";
        for (int i = 0; i < 3 && !key; i++)
            if ((given & what[i].bit) && !scenario_simulable(what[i].q, v[i])) {
                key = (d.dists & what[i].bit) ? what[i].key : "faults.device_trace";
                q = what[i].q;
                x = v[i];
            }
        if (key)
            st = scenario_fail(sc, err, key,
                               "client %ld's %s is %.4g %s, beyond what SimGrid's solver "
                               "computes with (expected %s)",
                               c,
                               q == SIM_Q_SPEED     ? "speed"
                               : q == SIM_Q_LATENCY ? "latency"
                                                    : "bandwidth",
                               x,
                               q == SIM_Q_SPEED     ? "flop/s"
                               : q == SIM_Q_LATENCY ? "s"
                                                    : "B/s",
                               scenario_simulable_range(q));
    }
    sim_client_devices_close(&d);
    return st;
}

long scenario_fedavg_sampled(const scenario_t *sc)
{
    double clients = (double)scenario_own(sc, "clients")->l;
    return (long)floor(clients * scenario_own(sc, "fraction")->d + 1e-9);
}

/* Whether own key k of sc holds other than its default. */
static int own_differs(const scenario_t *sc, const sim_strategy_key_t *k)
{
    const sim_own_value_t *a = scenario_own(sc, k->key), *b = scenario_own(defaults(), k->key);
    switch (k->kind) {
    case SIM_KEY_INT:
        return a->l != b->l;
    case SIM_KEY_REAL:
        return a->d != b->d;
    default:
        return a->i != b->i;
    }
}

/* A strategy's own key given, in the file, with --set or in a sweep, for a strategy that
 * does not read it (unless the key says it is ignored elsewhere): an error, not silence; in
 * a resolved configuration (scenario_write's, which holds every key) only a value other
 * than the default (hierfl's check names fedavg's keys it refuses more precisely, before
 * this), except in a sweep over strategy.kind, whose keys are each for some runs. */
static int check_own_keys(const scenario_t *sc, const sim_strategy_t *st, dt_err_t *err)
{
    /* a sweep over strategies: each key is for some of its runs */
    if (sc->sweep.is_run && scn_sweep_find(sc, scn_key_named("strategy.kind")) >= 0)
        return 0;
    for (const sim_strategy_t *const *o = scenario_strategies(); *o; o++) {
        if (*o == st)
            continue;
        for (const sim_strategy_key_t *k = (*o)->own_keys; k && k->key; k++) {
            int mine = 0;
            for (const sim_strategy_key_t *q = st->own_keys; q && q->key && !mine; q++)
                mine = !strcmp(q->key, k->key);
            char name[64];
            snprintf(name, sizeof name, "strategy.%s", k->key);
            /* given at its default: refused too, unless in a resolved configuration */
            if (mine || k->ignored_elsewhere || !scenario_key_given(sc, name) ||
                (sc->resolved && !own_differs(sc, k)))
                continue;
            char who[160] = "", where[96];
            size_t len = 0;
            for (const sim_strategy_t *const *w = scenario_strategies(); *w; w++)
                for (const sim_strategy_key_t *q = (*w)->own_keys; q && q->key; q++)
                    if (!strcmp(q->key, k->key) && len < sizeof who)
                        len += (size_t)snprintf(who + len, sizeof who - len, "%s%s",
                                                len ? " and " : "", (*w)->name);
            const char *blamed = scenario_blame(sc, name, "strategy.kind", where, sizeof where);
            scenario_fail(sc, err, blamed, "%s is a key of %s, which %s does not read (%s)", k->key,
                          who, st->name, where);
            return 1;
        }
    }
    return 0;
}

/* A technique's [strategy] key (algorithm, ring_messages, bucket_mb, group_size,
 * error_feedback, momentum_correction; compression and accumulate have their own words
 * above) that st does not take, set to other than its default in the file, with --set or in
 * a sweep: an error, not silence (a written configuration holds every key at its default),
 * except in a sweep over strategy.kind, whose keys are each for some of its runs. */
static int check_technique_keys(const scenario_t *sc, const sim_strategy_t *st, dt_err_t *err)
{
    if (sc->sweep.is_run && scn_sweep_find(sc, scn_key_named("strategy.kind")) >= 0)
        return 0;
    for (int k = 0; k < scn_key_count; k++) {
        const key_desc_t *d = &scn_key_table[k];
        if (strcmp(d->section, "strategy") || !scn_keys_technique(d->key) ||
            scenario_strategy_reads(st, d->key))
            continue;
        char name[64], have[256], def[256];
        snprintf(name, sizeof name, "strategy.%s", d->key);
        if (!scenario_key_given(sc, name))
            continue;
        scn_key_format(sc, d, have, sizeof have);
        scn_key_format(defaults(), d, def, sizeof def);
        if (!strcmp(have, def))
            continue;
        char who[256], where[96];
        scenario_key_readers(d->key, " and ", who, sizeof who);
        const char *blamed = scenario_blame(sc, name, "strategy.kind", where, sizeof where);
        scenario_fail(sc, err, blamed, "%s is a key of %s, which %s does not read (%s)", d->key,
                      who, st->name, where);
        return 1;
    }
    return 0;
}

/* Text data against the model and the partition: byte tokens need a model that reads tokens
 * (logreg, mlp and cnn read images), and by-source needs a corpus' sources. 1 on an error. */
static int check_text(const scenario_t *sc, dt_err_t *err)
{
    int text = !strcmp(sc->data_source, "text");
    char where[96];
    if (sc->partition.kind == TRAINER_PARTITION_BY_SOURCE && !text) {
        const char *k = scenario_blame(sc, "data.partition", "data.source", where, sizeof where);
        scenario_fail(sc, err, k,
                      "by-source gives a client per source file of a text corpus; "
                      "data.source = %s is not text and has none (%s; expected "
                      "data.source = text, or iid, dirichlet:ALPHA or shards:K)",
                      sc->data_source, where);
        return 1;
    }
    trainer_arch_t a = sc->model.arch;
    if (text && !sc->profile[0] &&
        (a == TRAINER_ARCH_LOGREG || a == TRAINER_ARCH_MLP || a == TRAINER_ARCH_CNN)) {
        const char *k = scenario_blame(sc, "model.arch", "data.source", where, sizeof where);
        scenario_fail(sc, err, k,
                      "data.source = text is byte tokens, which model.arch = %s does not read "
                      "(%s; expected a token model, model.arch = gpt)",
                      trainer_arch_name(a), where);
        return 1;
    }
    return 0;
}

double scenario_memory_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    double kb = -1;
    while (f && kb < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) != 1)
            kb = -1;
    if (f)
        fclose(f);
    if (kb >= 0)
        return kb * 1024.0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
}

/* The model against the data's shape, as the run will build it, and the run's model
 * buffers (parameters, gradients, velocity and scratch on every node) against this
 * machine's memory. Timing-only profiles allocate neither; a data folder of the user's is
 * read when the run loads it, which checks the shape then (sim_run_init). 1 on an error. */
static int check_model(const scenario_t *sc, dt_err_t *err)
{
    if (sc->profile[0])
        return 0;
    trainer_model_config_t mc = sc->model;
    const char *data = sc->data_source;
    if (mc.arch == TRAINER_ARCH_GPT && sc->side_by_side == SIM_SIDE_YES) {
        scenario_fail(sc, err, "model.side_by_side",
                      "gpt trains its replicas one after the other: side_by_side = yes is not "
                      "built for it (expected auto or no)");
        return 1;
    }
    if (!strcmp(data, "synthetic")) {
        mc.in_channels = mc.in_h = 1;
        mc.in_w = (int)sc->synthetic_dim;
        mc.classes = (int)sc->synthetic_classes;
    } else if (!strcmp(data, "fashion-mnist")) {
        mc.in_channels = 1;
        mc.in_h = mc.in_w = 28;
        mc.classes = 10;
    } else if (mc.arch == TRAINER_ARCH_GPT && !strcmp(data, "text")) {
        /* byte tokens in windows of seq + 1: the layout is offsets only, built in
         * microseconds, so what the run will allocate is known before it allocates */
        mc.in_channels = mc.in_h = 1;
        mc.in_w = mc.seq + 1;
        mc.classes = 256;
    } else {
        return 0;
    }
    const char *model_key = mc.arch == TRAINER_ARCH_MLP ? "model.hidden" : "model.arch";
    if (mc.arch == TRAINER_ARCH_CNN && scenario_key_given(sc, "model.kernel") &&
        !scenario_key_given(sc, "model.arch"))
        model_key = "model.kernel";
    trainer_model_t m;
    dt_err_t e;
    char where[96];
    if (trainer_model_build(&m, &mc, &e)) {
        const char *k = scenario_blame(sc, model_key, "data.source", where, sizeof where);
        scenario_fail(sc, err, k, "%s, the inputs of data.source = %s (%s)", e.msg, data, where);
        return 1;
    }
    /* random failures more often than a step ends: no step would ever finish */
    trainer_flops_t fl = trainer_model_flops(&m);
    double step_s = (double)sc->batch * (fl.forward + fl.backward) / sc->device_flops;
    if (sc->mtbf > 0 && sc->device_flops > 0 && sc->mtbf < step_s) {
        scenario_fail(sc, err, "faults.mtbf",
                      "%g s between failures is shorter than one step (%g s: batch x FLOPs per "
                      "sample / device speed), so no step would finish (expected faults.mtbf "
                      ">= %g s)",
                      sc->mtbf, step_s, step_s);
        return 1;
    }
    int workers = (int)sc->workers, servers = 0;
    if (sc->strategy->hosts)
        sc->strategy->hosts(sc, &workers, &servers);
    /* a gpt's activations for a batch on each node (float32): a workspace each */
    double acts = mc.arch == TRAINER_ARCH_GPT
                      ? 4.0 * (double)trainer_gpt_activation_floats(&m) * (double)sc->batch
                      : 0.0;
    double nodes = (double)workers + servers, per_node = 16.0 * (double)m.n_params + acts + 65536.0;
    double ram = scenario_memory_available();
    if (mc.arch == TRAINER_ARCH_GPT) /* the size the user gave */
        model_key = scenario_key_given(sc, "model.layers")   ? "model.layers"
                    : scenario_key_given(sc, "model.hidden") ? "model.hidden"
                                                             : "model.arch";
    if (nodes * per_node > ram) {
        const char *k = per_node * 4 > ram ? model_key : "cluster.workers";
        if (acts > per_node / 2 && scenario_key_given(sc, "model.batch"))
            k = "model.batch";
        scenario_fail(sc, err, k,
                      "%.3g parameters in 4 buffers on each of %.0f nodes%s need %.3g GB; this "
                      "machine has %.3g GB available (MemAvailable; expected a smaller model%s "
                      "or fewer workers)",
                      (double)m.n_params, nodes,
                      acts > 0 ? ", and a batch's activations on each," : "",
                      nodes * per_node / 1e9, ram / 1e9, acts > 0 ? ", batch" : "");
        return 1;
    }
    return 0;
}

/* The device at model.precision, and what only a timing-only model may ask: a precision
 * other than fp32 (real training here is FP32: its simulated time and bytes would not be
 * those of the numbers it trains), Adam's memory, recomputation. 1 on an error. */
static int check_precision(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    const sim_device_profile_t *p = scenario_device(sc);
    const char *prec = scenario_precision_name(sc->precision);
    if (!p && sc->device_efficiency > 0) {
        k = scenario_blame(sc, "cluster.device_efficiency", "cluster.device_flops", where,
                           sizeof where);
        scenario_fail(sc, err, k,
                      "device_efficiency scales a device's peak, but device = custom gives "
                      "device_flops, a sustained speed, itself (expected a device of the "
                      "catalogue or a profile file, or no device_efficiency; %s)",
                      where);
        return 1;
    }
    if (p && isnan(p->value[sc->precision])) {
        char have[64] = "";
        size_t len = 0;
        for (int q = 0; q < SIM_PRECISIONS; q++)
            if (!isnan(p->value[q]))
                len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", len ? ", " : "",
                                        scenario_precision_name((sim_precision_t)q));
        k = scenario_blame(sc, "model.precision", "cluster.device", where, sizeof where);
        scenario_fail(sc, err, k, "device %s has no %s peak (it has %s; %s)", p->name, prec, have,
                      where);
        return 1;
    }
    if (sc->fp8_scaling == SIM_FP8_BLOCK && sc->precision != SIM_PREC_FP8) {
        k = scenario_blame(sc, "model.fp8_scaling", "model.precision", where, sizeof where);
        scenario_fail(sc, err, k,
                      "fp8_scaling = block scales FP8 GEMMs, and precision = %s "
                      "has none (expected precision = fp8; %s)",
                      prec, where);
        return 1;
    }
    if (sc->fp8_scaling == SIM_FP8_BLOCK &&
        (!p || isnan(p->value[SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY]))) {
        k = scenario_blame(sc, "model.fp8_scaling", "cluster.device", where, sizeof where);
        scenario_fail(sc, err, k,
                      "fp8_scaling = block needs the device's fp8_block_gemm_efficiency, which "
                      "%s does not give (expected a device with it, e.g. h100; %s)",
                      p ? p->name : "device = custom", where);
        return 1;
    }
    if (sc->profile[0]) {
        if (sc->recompute != SIM_RECOMPUTE_NONE && !sc->profile_pieces) {
            k = scenario_blame(sc, "model.recompute", "model.arch", where, sizeof where);
            scenario_fail(sc, err, k,
                          "recompute needs the profile's [forward] section (what each layer "
                          "keeps, where it may be cut), which %s lacks (%s)",
                          sc->profile, where);
            return 1;
        }
        if (sc->recompute == SIM_RECOMPUTE_SELECTIVE && !sc->profile_attention) {
            k = scenario_blame(sc, "model.recompute", "model.arch", where, sizeof where);
            scenario_fail(sc, err, k,
                          "selective recomputes attention cores, layers named *.scores, and "
                          "%s has none (expected recompute = full or none; %s)",
                          sc->profile, where);
            return 1;
        }
        if (sc->precision >= SIM_PREC_BF16 && sc->compression.kind != TRAINER_CODEC_NONE) {
            k = scenario_blame(sc, "strategy.compression", "model.precision", where, sizeof where);
            scenario_fail(sc, err, k,
                          "the codecs encode FP32 values; with precision = %s the values are "
                          "16-bit already (expected compression = none, or precision = fp32 "
                          "or tf32; %s)",
                          prec, where);
            return 1;
        }
        return 0;
    }
    static const struct {
        const char *key, *what;
    } timing_only[] = {
        {"model.precision", "real training here is FP32: another precision would change the "
                            "simulated time and bytes, not the numbers trained"},
        {"model.recompute", "real training keeps every activation"},
    };
    int asked[] = {sc->precision != SIM_PREC_FP32, sc->recompute != SIM_RECOMPUTE_NONE};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++)
        if (asked[i]) {
            k = scenario_blame(sc, timing_only[i].key, "model.arch", where, sizeof where);
            scenario_fail(sc, err, k,
                          "%s needs a timing-only model (model.arch = profile:NAME): %s (%s)",
                          timing_only[i].key, timing_only[i].what, where);
            return 1;
        }
    return 0;
}

/* The optimizer's keys against the optimizer, the schedule and the strategy: Adam's keys
 * are not SGD's and momentum is not Adam's; lr_min is a decay's; where the gradient is
 * sharded (zero, tensor, sync-ps over several shards) the norm summed across shards is not
 * built yet (the pipeline sums its stages' and shards' squares). 1 on an error. */
static int check_optimizer(const scenario_t *sc, dt_err_t *err)
{
    const trainer_optim_t *o = &sc->sgd;
    const char *st = sc->strategy->name, *k;
    char where[96];
    static const char *const adam_keys[] = {"model.beta1", "model.beta2", "model.eps"};
    for (size_t i = 0; i < sizeof adam_keys / sizeof adam_keys[0]; i++)
        if (o->kind == TRAINER_OPT_SGD && scenario_key_given(sc, adam_keys[i]) &&
            key_differs(sc, &scn_key_table[scn_key_named(adam_keys[i])])) {
            k = scenario_blame(sc, adam_keys[i], "model.optimizer", where, sizeof where);
            scenario_fail(sc, err, k,
                          "%s is read by model.optimizer = adam or adamw only, and this run's "
                          "is sgd (%s)",
                          adam_keys[i], where);
            return 1;
        }
    if (o->kind != TRAINER_OPT_SGD && o->momentum != 0.0f) {
        k = scenario_blame(sc, "model.momentum", "model.optimizer", where, sizeof where);
        scenario_fail(sc, err, k,
                      "model.momentum is sgd's; %s reads model.beta1 instead (%s; expected "
                      "momentum = 0)",
                      trainer_optimizer_name(o->kind), where);
        return 1;
    }
    if (sc->lr_min != 0.0f && sc->schedule == TRAINER_LR_CONSTANT) {
        k = scenario_blame(sc, "model.lr_min", "model.schedule", where, sizeof where);
        scenario_fail(sc, err, k,
                      "model.lr_min is the floor of a decay, which schedule = constant does not "
                      "have (%s; expected schedule = cosine or linear)",
                      where);
        return 1;
    }
    /* a timing-only model trains nothing: its optimizer only counts memory */
    if (sc->profile[0])
        return 0;
    if (sc->side_by_side == SIM_SIDE_YES && (o->kind != TRAINER_OPT_SGD || o->clip_norm > 0.0f)) {
        k = scenario_blame(sc, "model.side_by_side",
                           o->kind != TRAINER_OPT_SGD ? "model.optimizer" : "model.clip_norm",
                           where, sizeof where);
        scenario_fail(sc, err, k,
                      "replicas side by side train with sgd, unclipped (%s; expected "
                      "side_by_side = auto or no)",
                      where);
        return 1;
    }
    if (!strcmp(st, "sync-ps") && scenario_own(sc, "servers")->l > 1 && o->clip_norm > 0.0f &&
        scenario_has_faults(sc)) {
        k = scenario_blame(sc, "model.clip_norm", "strategy.servers", where, sizeof where);
        scenario_fail(sc, err, k,
                      "sync-ps's shards sum their squares for the norm in an all-reduce among "
                      "them, which a shard down would stall: with [faults] (%s; expected "
                      "clip_norm = 0, or servers = 1)",
                      where);
        return 1;
    }
    return 0;
}

dt_status scenario_validate(const scenario_t *sc, dt_err_t *err)
{
    const sim_strategy_t *st = sc->strategy;
    const char *k;
    char where[96], takers[256];
    if (check_precision(sc, err))
        return DT_ERR_INPUT;
    if (check_simulable(sc, err) || check_tcp_keys(sc, err) || check_optimizer(sc, err))
        return DT_ERR_INPUT;
    if (sc->platform == SIM_PLATFORM_EDGE && (st->takes & SIM_NEEDS_PEER_LINKS)) {
        k = scenario_blame(sc, "cluster.platform", "strategy.kind", where, sizeof where);
        scenario_strategies_lacking(SIM_NEEDS_PEER_LINKS, " or ", takers, sizeof takers);
        return scenario_fail(sc, err, k,
                             "the edge platform connects clients only to the server, so %s "
                             "(which exchanges between workers) cannot run on it (expected "
                             "%s; %s)",
                             st->name, takers, where);
    }
    if (sc->ring_messages == SIM_RING_PHASES && !sc->profile[0]) {
        k = scenario_blame(sc, "strategy.ring_messages", "model.arch", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "ring_messages = phases moves each phase in one message, which "
                             "cannot carry real partial sums: it needs a timing-only model "
                             "(model.arch = profile:NAME; %s)",
                             where);
    }
    if (sc->profile[0] && sc->time_model == SIM_TIME_MEASURED) {
        k = scenario_blame(sc, "run.time_model", "model.arch", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "time_model = measured needs real kernels; a model profile is "
                             "timed by its FLOPs (time_model = flops; %s)",
                             where);
    }
    if (sc->bucket_mb > 0 && scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.bucket_mb",
                             "bucket_mb with [faults] is not supported (a failed bucket would "
                             "need its own re-formation); use bucket_mb = 0 with faults");
    char names[256];
    if (sc->client_holdout > 0 && strcmp(st->worker_role, "client")) {
        scenario_strategies_federated(0, " or ", names, sizeof names);
        return scenario_fail(sc, err, "data.client_holdout",
                             "client_holdout holds out federated clients' samples: it needs "
                             "%s, not %s",
                             names, st->name);
    }
    if (check_client_devices(sc, err) || check_client_values(sc, err))
        return DT_ERR_INPUT;
    if (sc->byzantine > 0) {
        if (strcmp(st->worker_role, "client")) {
            scenario_strategies_federated(0, " or ", names, sizeof names);
            return scenario_fail(sc, err, "faults.byzantine",
                                 "Byzantine clients need a federated strategy (%s), not %s", names,
                                 st->name);
        }
        if ((long)floor(sc->byzantine * (double)scenario_own(sc, "clients")->l + 1e-9) < 1) {
            k = scenario_blame(sc, "faults.byzantine", "strategy.clients", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "byzantine %g of %ld clients makes no client Byzantine "
                                 "(expected at least 1 / clients; %s)",
                                 sc->byzantine, scenario_own(sc, "clients")->l, where);
        }
        if (sc->side_by_side == SIM_SIDE_YES) {
            k = scenario_blame(sc, "model.side_by_side", "faults.byzantine", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "Byzantine clients train apart: side_by_side = yes does not "
                                 "combine with faults.byzantine (%s)",
                                 where);
        }
    }
    /* the strategy's own checks, between those of what the model and faults allow and
     * those of the techniques only some strategies take: where two errors apply, this
     * order decides which one is told */
    if (st->check) {
        dt_status s = st->check(sc, err);
        if (s)
            return s;
    }
    if (check_own_keys(sc, st, err))
        return DT_ERR_INPUT;
    /* less communication: which strategies take which technique */
    if (sc->compression.kind != TRAINER_CODEC_NONE && !(st->takes & SIM_TAKES_COMPRESSION)) {
        k = scenario_blame(sc, "strategy.compression", "strategy.kind", where, sizeof where);
        scenario_strategies_taking(SIM_TAKES_COMPRESSION, " and ", takers, sizeof takers);
        return scenario_fail(sc, err, k, "compression applies to %s, not %s (%s)", takers, st->name,
                             where);
    }
    if (sc->accumulate > 1 && !(st->takes & SIM_TAKES_ACCUMULATE)) {
        k = scenario_blame(sc, "strategy.accumulate", "strategy.kind", where, sizeof where);
        scenario_strategies_taking(SIM_TAKES_ACCUMULATE, " and ", takers, sizeof takers);
        return scenario_fail(sc, err, k, "accumulate applies to %s, not %s (%s)", takers, st->name,
                             where);
    }
    if (check_technique_keys(sc, st, err))
        return DT_ERR_INPUT;
    /* sequence parallelism splits a tensor group's work: with no tensor split it is read by
     * nothing (pipeline's tensor, tensor's tensor_parallel; keyed on the name here while the
     * pipeline's files move) */
    if (scenario_strategy_reads(st, "sequence_parallel") &&
        scenario_own(sc, "sequence_parallel")->i) {
        const char *split = !strcmp(st->name, "pipeline") ? "tensor" : "tensor_parallel";
        if (scenario_strategy_reads(st, split) && scenario_own(sc, split)->l <= 1) {
            char name[48];
            snprintf(name, sizeof name, "strategy.%s", split);
            k = scenario_blame(sc, "strategy.sequence_parallel", name, where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "sequence_parallel divides a tensor group's work, and %s = 1 "
                                 "makes no group: %s does not read it (%s; expected %s > 1, or "
                                 "sequence_parallel = no)",
                                 split, st->name, where, split);
        }
    }
    if (sc->train_samples > 0 && !(st->takes & SIM_TAKES_EMPTY_CLIENTS)) {
        /* one partition per worker or client (strategy_def.h: parts); a population that
         * takes empty clients samples among those holding data */
        long need = st->parts ? st->parts(sc, sc->workers) : sc->workers;
        if (sc->train_samples < need) {
            int clients = !strcmp(st->worker_role, "client");
            k = scenario_blame(sc, "data.train_samples",
                               clients ? "strategy.clients" : "cluster.workers", NULL, 0);
            return scenario_fail(sc, err, k,
                                 "%ld samples for %ld %ss (expected at least one sample each)",
                                 sc->train_samples, need, st->worker_role);
        }
    }
    if (check_text(sc, err) || check_model(sc, err))
        return DT_ERR_INPUT;
    return DT_OK;
}
