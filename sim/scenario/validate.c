/* Checks of relations between keys once all are read (scenario_validate). */
#include <math.h>
#include <string.h>

#include "keys_impl.h"

int scenario_has_faults(const scenario_t *sc)
{
    return strcmp(sc->crash, "none") || strcmp(sc->link_down, "none") ||
           strcmp(sc->link_degrade, "none") || strcmp(sc->straggler, "none") ||
           strcmp(sc->slowdown, "none") || sc->mtbf > 0 || sc->dropout > 0 ||
           sc->deadline > 0 || sc->over_select > 1 || strcmp(sc->availability, "always") ||
           strcmp(sc->client_speed, "same");
}

long scenario_fedavg_sampled(const scenario_t *sc)
{
    return (long)floor((double)sc->clients * sc->fraction + 1e-9);
}

static int kind_is(const scenario_t *sc, const char *name)
{
    return !strcmp(sc->strategy->name, name);
}

dt_status scenario_validate(const scenario_t *sc, dt_err_t *err)
{
    int kw = key_index("cluster", "workers");
    char where[96];
    if (kind_is(sc, "sync-ps") || kind_is(sc, "async-ps")) {
        if (sc->servers > sc->workers) {
            int ks = key_index("strategy", "servers"), k = blame(sc, ks, kw);
            key_where(sc, k == ks ? kw : ks, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld servers for %ld workers (expected servers <= workers for %s; "
                             "%s)",
                             sc->servers, sc->workers, sc->strategy->name, where);
        }
    }
    if (kind_is(sc, "fedavg") && scenario_fedavg_sampled(sc) < 1) {
        int kfr = key_index("strategy", "fraction"), kc = key_index("strategy", "clients");
        int k = blame(sc, kfr, kc);
        key_where(sc, k == kfr ? kc : kfr, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "%ld clients x fraction %g samples no client per round (expected "
                         "clients x fraction >= 1; %s)",
                         sc->clients, sc->fraction, where);
    }
    if (sc->platform == SIM_PLATFORM_EDGE && (sc->strategy->takes & SIM_NEEDS_PEER_LINKS)) {
        int kp = key_index("cluster", "platform"), kk = key_index("strategy", "kind");
        int k = blame(sc, kp, kk);
        key_where(sc, k == kp ? kk : kp, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "the edge platform connects clients only to the server, so %s (which "
                         "exchanges between workers) cannot run on it (expected fedavg, "
                         "sync-ps, async-ps or single; %s)",
                         sc->strategy->name, where);
    }
    if (sc->ring_messages == SIM_RING_PHASES && !sc->profile[0]) {
        int kr = key_index("strategy", "ring_messages"), ka = key_index("model", "arch");
        int k = blame(sc, kr, ka);
        key_where(sc, k == kr ? ka : kr, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "ring_messages = phases moves each phase in one message, which "
                         "cannot carry real partial sums: it needs a timing-only model "
                         "(model.arch = profile:NAME; %s)", where);
    }
    if (sc->profile[0] && sc->time_model == SIM_TIME_MEASURED) {
        int kt = key_index("run", "time_model"), ka = key_index("model", "arch");
        int k = blame(sc, kt, ka);
        key_where(sc, k == kt ? ka : kt, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "time_model = measured needs real kernels; a model profile is timed "
                         "by its FLOPs (time_model = flops; %s)", where);
    }
    if (sc->bucket_mb > 0 && scenario_has_faults(sc)) {
        int k = key_index("strategy", "bucket_mb");
        return key_error(err, sc, sc->key_line[k], k,
                         "bucket_mb with [faults] is not supported (a failed bucket would "
                         "need its own re-formation); use bucket_mb = 0 with faults");
    }
    if (kind_is(sc, "pipeline")) {
        int kst = key_index("strategy", "stages"), kmb = key_index("strategy", "micro_batches");
        int ka = key_index("model", "arch"), kb = key_index("model", "batch");
        int weighted = sc->model.arch == TRAINER_ARCH_LOGREG ? 1
                       : sc->model.arch == TRAINER_ARCH_MLP  ? sc->model.n_hidden + 1
                                                             : 4;
        if (sc->profile[0]) { /* a profile's stages end at its cuts */
            int pieces = sc->profile_pieces;
            if (pieces == 0)
                return key_error(err, sc, sc->key_line[ka], ka,
                                 "a pipeline of the profile %s needs its [forward] section "
                                 "(each layer's forward FLOPs, outputs and the places a stage "
                                 "may end)", sc->profile);
            if (sc->stages > pieces) {
                int k = blame(sc, kst, ka);
                key_where(sc, k == kst ? ka : kst, where, sizeof where);
                return key_error(err, sc, sc->key_line[k], k,
                                 "%ld stages but the profile %s can be cut into at most %d "
                                 "(its [forward] cuts + 1; %s)",
                                 sc->stages, sc->profile, pieces, where);
            }
        } else if (sc->stages > weighted) {
            int k = blame(sc, kst, ka);
            key_where(sc, k == kst ? ka : kst, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld stages but the %s has %d layer%s with weights, and a stage "
                             "needs at least one (%s)",
                             sc->stages, trainer_arch_name(sc->model.arch), weighted,
                             weighted == 1 ? "" : "s", where);
        }
        long hosts = sc->stages * sc->data_parallel;
        if (sc->workers != hosts && sc->key_line[kw] != 0) {
            int k = blame(sc, kw, kst);
            key_where(sc, k == kw ? kst : kw, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "a pipeline of %ld stages x %ld replicas runs on %ld hosts, not %ld "
                             "(workers must equal stages x data_parallel; %s)",
                             sc->stages, sc->data_parallel, hosts, sc->workers, where);
        }
        if (hosts > 100000) {
            int k = key_index("strategy", "data_parallel");
            return key_error(err, sc, sc->key_line[k], k,
                             "stages x data_parallel = %ld hosts (at most 100000)", hosts);
        }
        if (sc->batch % sc->micro_batches) {
            int k = blame(sc, kmb, kb);
            key_where(sc, k == kmb ? kb : kmb, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld micro-batches do not divide a batch of %ld (%s)",
                             sc->micro_batches, sc->batch, where);
        }
        if (sc->partition.kind != TRAINER_PARTITION_IID) {
            int k = key_index("data", "partition");
            return key_error(err, sc, sc->key_line[k], k,
                             "a pipeline trains one model on the global batch: partition must "
                             "be iid");
        }
        if (scenario_has_faults(sc)) {
            int k = key_index("strategy", "kind");
            return key_error(err, sc, sc->key_line[k], k,
                             "pipeline with [faults] is not supported");
        }
    }
    if (kind_is(sc, "tensor")) {
        int kt = key_index("strategy", "tensor_parallel"), ka = key_index("model", "arch");
        long T = sc->tensor_parallel;
        if (sc->profile[0] || sc->model.arch == TRAINER_ARCH_CNN) {
            return key_error(err, sc, sc->key_line[ka], ka,
                             "tensor parallelism splits fully connected layers: the model must "
                             "be mlp or logreg");
        }
        if (sc->workers != T && sc->key_line[kw] != 0) {
            int k = blame(sc, kw, kt);
            key_where(sc, k == kw ? kt : kw, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "tensor parallelism over %ld workers runs on %ld hosts, not %ld "
                             "(workers must equal tensor_parallel; %s)",
                             T, T, sc->workers, where);
        }
        /* the widths it splits: the outputs of the first layer of each pair (dense layers 1,
         * 3, ...: the second splits that as its input), and the classes when the dense
         * layers are odd in number (the last one is column-split) */
        int L = sc->model.arch == TRAINER_ARCH_MLP ? sc->model.n_hidden + 1 : 1;
        for (int j = 0; j < L - 1; j += 2)
            if (sc->model.hidden[j] % T) {
                int kh = key_index("model", "hidden"), k = blame(sc, kt, kh);
                key_where(sc, k == kt ? kh : kt, where, sizeof where);
                return key_error(err, sc, sc->key_line[k], k,
                                 "tensor_parallel = %ld does not divide hidden layer %d's width "
                                 "%d, which it splits (%s)", T, j + 1, sc->model.hidden[j], where);
            }
        /* a directory's classes are known once it is read (checked then) */
        long classes = !strcmp(sc->data_source, "synthetic")       ? sc->synthetic_classes
                       : !strcmp(sc->data_source, "fashion-mnist") ? 10
                                                                   : 0;
        if (L % 2 && classes > 0 && classes % T) {
            return key_error(err, sc, sc->key_line[kt], kt,
                             "tensor_parallel = %ld does not divide the %ld classes of the "
                             "output layer, which it splits by columns (an odd number of dense "
                             "layers leaves it unpaired)", T, classes);
        }
        if (sc->partition.kind != TRAINER_PARTITION_IID) {
            int k = key_index("data", "partition");
            return key_error(err, sc, sc->key_line[k], k,
                             "tensor parallelism trains one model on the global batch: "
                             "partition must be iid");
        }
        if (scenario_has_faults(sc)) {
            int k = key_index("strategy", "kind");
            return key_error(err, sc, sc->key_line[k], k, "tensor with [faults] is not supported");
        }
    }
    if (kind_is(sc, "zero") && scenario_has_faults(sc)) {
        int k = key_index("strategy", "kind");
        return key_error(err, sc, sc->key_line[k], k, "zero with [faults] is not supported");
    }
    /* less communication: which strategies take which technique */
    int kind_k = key_index("strategy", "kind");
    char takers[256];
    if (sc->compression.kind != TRAINER_CODEC_NONE &&
        !(sc->strategy->takes & SIM_TAKES_COMPRESSION)) {
        int kc = key_index("strategy", "compression"), k = blame(sc, kc, kind_k);
        key_where(sc, k == kc ? kind_k : kc, where, sizeof where);
        scenario_strategies_taking(SIM_TAKES_COMPRESSION, " and ", takers, sizeof takers);
        return key_error(err, sc, sc->key_line[k], k, "compression applies to %s, not %s (%s)",
                         takers, sc->strategy->name, where);
    }
    if (sc->accumulate > 1 && !(sc->strategy->takes & SIM_TAKES_ACCUMULATE)) {
        int ka = key_index("strategy", "accumulate"), k = blame(sc, ka, kind_k);
        key_where(sc, k == ka ? kind_k : ka, where, sizeof where);
        scenario_strategies_taking(SIM_TAKES_ACCUMULATE, " and ", takers, sizeof takers);
        return key_error(err, sc, sc->key_line[k], k, "accumulate applies to %s, not %s (%s)",
                         takers, sc->strategy->name, where);
    }
    if (sc->accumulate > 1 && sc->side_by_side == SIM_SIDE_YES &&
        kind_is(sc, "fedavg")) {
        int ka = key_index("strategy", "accumulate"), ks = key_index("model", "side_by_side");
        int k = blame(sc, ka, ks);
        key_where(sc, k == ka ? ks : ka, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "clients side by side take one batch per step: side_by_side = yes "
                         "does not combine with accumulate > 1 (%s)", where);
    }
    if (kind_is(sc, "allreduce") && sc->bucket_mb > 0 &&
        (sc->accumulate > 1 || sc->compression.kind == TRAINER_CODEC_TOPK ||
         sc->compression.kind == TRAINER_CODEC_QSGD8)) {
        int kb = key_index("strategy", "bucket_mb");
        int ko = key_index("strategy", sc->accumulate > 1 ? "accumulate" : "compression");
        int k = blame(sc, ko, kb);
        key_where(sc, k == ko ? kb : ko, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "bucket_mb overlaps one backward pass with plain all-reduces; it does "
                         "not combine with %s (use bucket_mb = 0; %s)",
                         sc->accumulate > 1 ? "accumulate > 1" : "topk or qsgd8 compression",
                         where);
    }
    if (kind_is(sc, "allreduce") && scenario_has_faults(sc) &&
        (sc->compression.kind == TRAINER_CODEC_TOPK ||
         sc->compression.kind == TRAINER_CODEC_QSGD8)) {
        int k = key_index("strategy", "compression");
        return key_error(err, sc, sc->key_line[k], k,
                         "allreduce with topk or qsgd8 compression (an all-gather of encoded "
                         "gradients) is not supported with [faults]; fp16 is");
    }
    /* groups are racks on a multi-rack platform, blocks of group_size elsewhere */
    if ((kind_is(sc, "allreduce") || kind_is(sc, "local-sgd")) &&
        sc->algorithm == SIM_ALLREDUCE_HIERARCHICAL && sc->platform != SIM_PLATFORM_MULTI_RACK &&
        (sc->group_size > sc->workers || sc->workers % sc->group_size)) {
        int kg = key_index("strategy", "group_size"), k = blame(sc, kg, kw);
        key_where(sc, k == kg ? kw : kg, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "group_size %ld does not divide %ld workers (hierarchical all-reduce "
                         "needs equal groups; %s)",
                         sc->group_size, sc->workers, where);
    }
    if (sc->train_samples > 0) {
        /* one partition per worker or client (strategy_def.h: parts) */
        const sim_strategy_t *st = sc->strategy;
        long need = st->parts ? st->parts(sc, sc->workers) : sc->workers;
        if (sc->train_samples < need) {
            int clients = !strcmp(st->worker_role, "client");
            int kt = key_index("data", "train_samples");
            int k = blame(sc, kt, key_index(clients ? "strategy" : "cluster",
                                            clients ? "clients" : "workers"));
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld samples for %ld %ss (expected at least one sample each)",
                             sc->train_samples, need, st->worker_role);
        }
    }
    return DT_OK;
}
