/* The pipeline's checks of a scenario (pipe_check, its strategy's check slot): the layers
 * enough for the stages and chunks, the interleaved schedule's rules, tensor groups and
 * NCCL, ZeRO, the hosts and the batch; expert parallelism's are experts.c's
 * (pipe_expert_check), context parallelism's context.c's (pipe_context_check). An error
 * names its key. */
#include <stdio.h>

#include "pipeline_impl.h"

/* virtual_stages: chunks a stage under the interleaved schedule; 1f1b or gpipe, 1 (checked
 * unless a sweep over schedules gives it to every run). An error names its key. */
static dt_status check_interleaved(const scenario_t *sc, dt_err_t *err, int weighted)
{
    char where[96];
    const char *k;
    long V = scenario_own(sc, "virtual_stages")->l, S = pipe_stages(sc);
    if (pipe_schedule_of(sc) != SIM_PIPE_INTERLEAVED) {
        if (V == 1 || scenario_key_swept(sc, "strategy.pipeline_schedule"))
            return DT_OK;
        k = scenario_blame(sc, "strategy.virtual_stages", "strategy.pipeline_schedule", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "virtual_stages = %ld chunks a stage need pipeline_schedule = "
                             "interleaved, not %s (%s)",
                             V, pipe_schedule_of(sc) == SIM_PIPE_GPIPE ? "gpipe" : "1f1b", where);
    }
    if (V == 1) /* 1f1b's schedule */
        return DT_OK;
    if (S == 1) {
        k = scenario_blame(sc, "strategy.virtual_stages", "strategy.stages", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "virtual_stages = %ld interleaves the chunks of 2 or more stages; "
                             "one stage has no pipeline to interleave (%s)",
                             V, where);
    }
    if (pipe_micro_batches(sc) % S) { /* Megatron-LM asserts it: its chunk order goes S at a time */
        k = scenario_blame(sc, "strategy.micro_batches", "strategy.stages", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "the interleaved schedule takes micro-batches S at a time through "
                             "each chunk: micro_batches = %ld must be a multiple of stages = %ld "
                             "(%s)",
                             pipe_micro_batches(sc), S, where);
    }
    int pieces = sc->profile[0] ? sc->profile_pieces : weighted;
    if (S * V > pieces || S * V > PIPE_MAX_CHUNKS) {
        k = scenario_blame(sc, "strategy.virtual_stages", "strategy.stages", where, sizeof where);
        char what[640];
        if (S * V > PIPE_MAX_CHUNKS)
            snprintf(what, sizeof what, "at most %d", PIPE_MAX_CHUNKS);
        else if (sc->profile[0])
            snprintf(what, sizeof what,
                     "the profile %s can be cut into at most %d (its [forward] cuts + 1)",
                     sc->profile, pieces);
        else
            snprintf(what, sizeof what, "the %s has %d %s, and a chunk needs at least one",
                     trainer_arch_name(sc->model.arch), pieces,
                     sc->model.arch == TRAINER_ARCH_GPT ? "blocks (model.layers)"
                     : pieces == 1                      ? "layer with weights"
                                                        : "layers with weights");
        return scenario_fail(sc, err, k,
                             "stages x virtual_stages = %ld x %ld = %ld chunks, but %s (%s)", S, V,
                             S * V, what, where);
    }
    return DT_OK;
}

/* tensor_comm = nccl: what NCCL can run. The device's NVLink needs its figures and holds an
 * HGX server's 8 GPUs; NVLS needs the switch's SHARP (nvls_busbw) and runs Simple only;
 * NCCL's trees all-reduce only, so sequence parallelism's reduce-scatters cannot take one. */
static dt_status check_nccl(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    if (pipe_tensor(sc) < 2 || scenario_own(sc, "tensor_comm")->i != PIPE_TP_NCCL)
        return DT_OK;
    int device = scenario_own(sc, "nccl_links")->i == PIPE_LINKS_DEVICE;
    int algo = pipe_nccl_algo(sc), proto = pipe_nccl_proto(sc);
    const sim_device_profile_t *d = scenario_device(sc);
    int nvlink = d && d->value[SIM_DEV_NVLINK_BUSBW] > 0;
    int nvls = nvlink && d->value[SIM_DEV_NVLS_BUSBW] > 0;
    if (device && !nvlink) {
        k = scenario_blame(sc, "strategy.tensor_comm", "cluster.device", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor_comm = nccl runs on the server's NVLink, but the device %s "
                             "has no nvlink_busbw (the catalogue gives it for a100, a100-80gb, "
                             "h100, h200, b200); or use nccl_links = platform (%s)",
                             sc->device[0] ? sc->device : "custom", where);
    }
    if (device && pipe_tensor(sc) > 8) {
        k = scenario_blame(sc, "strategy.tensor", "strategy.tensor_comm", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor = %ld with tensor_comm = nccl on NVLink: a server's NVLink "
                             "joins 8 GPUs (HGX); use nccl_links = platform (%s)",
                             pipe_tensor(sc), where);
    }
    if (algo == SIM_NCCL_NVLS && !(device && nvls)) {
        k = scenario_blame(sc, "strategy.nccl_algorithm",
                           device ? "cluster.device" : "strategy.nccl_links", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "nccl_algorithm = nvls needs NVLink SHARP in the server's switch: %s "
                             "(%s)",
                             device ? "the device has no nvls_busbw (h100, h200 and b200 do)"
                                    : "nccl_links = platform has none",
                             where);
    }
    if (algo == SIM_NCCL_NVLS && proto >= 0 && proto != SIM_NCCL_SIMPLE) {
        k = scenario_blame(sc, "strategy.nccl_protocol", "strategy.nccl_algorithm", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "nccl_algorithm = nvls runs the simple protocol only, not %s (%s)",
                             sim_nccl_proto_name((sim_nccl_proto_t)proto), where);
    }
    if (algo == SIM_NCCL_TREE && scenario_own(sc, "sequence_parallel")->i) {
        k = scenario_blame(sc, "strategy.nccl_algorithm", "strategy.sequence_parallel", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "nccl_algorithm = tree all-reduces only; sequence_parallel's "
                             "reduce-scatters and all-gathers need ring or nvls (%s)",
                             where);
    }
    return DT_OK;
}

/* The model must have a stage's worth of layers for every stage: its weighted layers
 * (weighted; the real gpt's blocks) or a profile's pieces between its cuts; the real gpt's
 * stages reduce over their replicas without buckets. An error names its key. */
static dt_status check_layers(const scenario_t *sc, dt_err_t *err, int weighted)
{
    char where[96];
    const char *k;
    int gpt = !sc->profile[0] && sc->model.arch == TRAINER_ARCH_GPT;
    if (gpt && sc->bucket_mb > 0 && pipe_replicas(sc) > 1) {
        k = scenario_blame(sc, "strategy.bucket_mb", "model.arch", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "a pipeline of the real gpt reduces each stage's gradients over "
                             "its replicas after the step's last backward pass (its tied wte "
                             "is summed first): bucket_mb must be 0 (%s)",
                             where);
    }
    if (sc->profile[0]) { /* a profile's stages end at its cuts */
        int pieces = sc->profile_pieces;
        if (pieces == 0)
            return scenario_fail(sc, err, "model.arch",
                                 "a pipeline of the profile %s needs its [forward] section "
                                 "(each layer's forward FLOPs, outputs and the places a stage "
                                 "may end)",
                                 sc->profile);
        if (pipe_stages(sc) > pieces) {
            k = scenario_blame(sc, "strategy.stages", "model.arch", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "%ld stages but the profile %s can be cut into at most %d "
                                 "(its [forward] cuts + 1; %s)",
                                 pipe_stages(sc), sc->profile, pieces, where);
        }
    } else if (pipe_stages(sc) > weighted) {
        k = scenario_blame(sc, "strategy.stages", gpt ? "model.layers" : "model.arch", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "%ld stages but the %s has %d %s%s%s, and a stage needs at least "
                             "one (%s)",
                             pipe_stages(sc), trainer_arch_name(sc->model.arch), weighted,
                             gpt ? "block" : "layer", weighted == 1 ? "" : "s",
                             gpt ? " (model.layers)" : " with weights", where);
    }
    return DT_OK;
}

/* tensor > 1 on the real gpt (tensor_gpt.h): the heads split evenly, the all-reduces real
 * messages (they sum real activations), sequence parallelism's rows whole. */
static dt_status check_tensor_gpt(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    long T = pipe_tensor(sc);
    if (sc->model.heads % T) {
        k = scenario_blame(sc, "strategy.tensor", "model.heads", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor = %ld does not divide the gpt's %d heads, which it splits "
                             "(%s)",
                             T, sc->model.heads, where);
    }
    if (scenario_own(sc, "tensor_comm")->i != PIPE_TP_MESSAGES)
        return scenario_fail(sc, err, "strategy.tensor_comm",
                             "tensor_comm = %s times a model profile's all-reduces in closed "
                             "form; the real gpt's sum its activations: expected messages",
                             pipe_tensor_comm_names[scenario_own(sc, "tensor_comm")->i]);
    long micro = sc->batch / pipe_micro_batches(sc); /* (check_hosts: without a remainder) */
    if (scenario_own(sc, "sequence_parallel")->i && sc->batch % pipe_micro_batches(sc) == 0 &&
        (micro * sc->model.seq) % T) {
        k = scenario_blame(sc, "strategy.sequence_parallel", "strategy.micro_batches", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "sequence_parallel divides a micro-batch's %ld x %d token rows "
                             "among the %ld members: tensor must divide micro-batch x seq (%s)",
                             micro, sc->model.seq, T, where);
    }
    return DT_OK;
}

/* tensor > 1 splits a profile's layers (its [tensor] section) or the real gpt's blocks;
 * tensor_overlap needs the all-reduces in closed form. */
static dt_status check_tensor(const scenario_t *sc, dt_err_t *err)
{
    int gpt = !sc->profile[0] && sc->model.arch == TRAINER_ARCH_GPT;
    if (pipe_tensor(sc) > 1 && gpt)
        return check_tensor_gpt(sc, err);
    if (pipe_tensor(sc) > 1 && !sc->profile_splits && sc->profile[0])
        return scenario_fail(sc, err, "strategy.tensor",
                             "tensor = %ld splits the layers of a model profile with a [tensor] "
                             "section (this one has none) or the real gpt's blocks",
                             pipe_tensor(sc));
    if (pipe_tensor(sc) > 1 && !sc->profile_splits)
        return scenario_fail(sc, err, "strategy.tensor",
                             "tensor = %ld splits the real gpt's blocks or a model profile's "
                             "layers, not the %s's; the tensor strategy splits a real mlp",
                             pipe_tensor(sc), trainer_arch_name(sc->model.arch));
    if (scenario_own(sc, "tensor_overlap")->i &&
        (pipe_tensor(sc) < 2 || scenario_own(sc, "tensor_comm")->i == PIPE_TP_MESSAGES)) {
        char where[96];
        const char *k = scenario_blame(sc, "strategy.tensor_overlap", "strategy.tensor_comm", where,
                                       sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor_overlap needs tensor > 1 and tensor_comm = formula or "
                             "nccl (tensor = %ld, tensor_comm = %s; %s)",
                             pipe_tensor(sc),
                             pipe_tensor_comm_names[scenario_own(sc, "tensor_comm")->i], where);
    }
    return DT_OK;
}

/* ZeRO over the replicas: zero_stage with shard_optimizer only, stage 3 of a profile only,
 * and buckets only for stages 2 and 3 with zero_grad_overlap. */
static dt_status check_zero(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    long zero = scenario_own(sc, "zero_stage")->l;
    if (!pipe_sharded(sc) && zero != 1 && scenario_key_given(sc, "strategy.zero_stage") &&
        !scenario_key_swept(sc, "strategy.kind")) /* a sweep over kinds: it is zero's */
        return scenario_fail(sc, err, "strategy.zero_stage",
                             "zero_stage = %ld shards a pipeline's replicas only with "
                             "shard_optimizer = yes",
                             zero);
    if (pipe_sharded(sc) && zero == 3 && !sc->profile[0])
        return scenario_fail(sc, err, "strategy.zero_stage",
                             "zero_stage = 3 on a pipeline shards a model profile's parameters "
                             "(timing only); a real model's stages evaluate whole weights: "
                             "expected 1 or 2");
    if (sc->bucket_mb > 0 && pipe_sharded(sc) && pipe_replicas(sc) > 1 &&
        !(zero >= 2 && scenario_own(sc, "zero_grad_overlap")->i)) {
        k = scenario_blame(sc, "strategy.bucket_mb", "strategy.shard_optimizer", where,
                           sizeof where);
        return scenario_fail(sc, err, k,
                             "bucket_mb overlaps a pipeline's all-reduces over its replicas with "
                             "the last backward pass; with shard_optimizer (ZeRO) it buckets "
                             "only zero_stage 2 or 3 with zero_grad_overlap = yes: use "
                             "bucket_mb = 0 (%s)",
                             where);
    }
    return DT_OK;
}

/* The hosts must be stages x data_parallel (x tensor x context), at most 100000, and the
 * micro-batches must divide the batch. */
static dt_status check_hosts(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    long hosts = pipe_stages(sc) * pipe_replicas(sc) * pipe_tensor(sc) * pipe_context(sc);
    if (sc->workers != hosts && scenario_key_given(sc, "cluster.workers")) {
        k = scenario_blame(sc, "cluster.workers", "strategy.stages", where, sizeof where);
        char tp[96] = "";
        int n = 0;
        if (pipe_tensor(sc) > 1)
            n = snprintf(tp, sizeof tp, " x tensor groups of %ld", pipe_tensor(sc));
        if (pipe_context(sc) > 1)
            snprintf(tp + n, sizeof tp - (size_t)n, " x context groups of %d", pipe_context(sc));
        return scenario_fail(sc, err, k,
                             "a pipeline of %ld stages x %ld replicas%s runs on %ld hosts, not %ld "
                             "(workers must equal stages x data_parallel%s%s; %s)",
                             pipe_stages(sc), pipe_replicas(sc), tp, hosts, sc->workers,
                             pipe_tensor(sc) > 1 ? " x tensor" : "",
                             pipe_context(sc) > 1 ? " x context" : "", where);
    }
    if (hosts > 100000)
        return scenario_fail(sc, err, "strategy.data_parallel",
                             "stages x data_parallel x tensor = %ld hosts (at most 100000)", hosts);
    if (sc->batch % pipe_micro_batches(sc)) {
        k = scenario_blame(sc, "strategy.micro_batches", "model.batch", where, sizeof where);
        return scenario_fail(sc, err, k, "%ld micro-batches do not divide a batch of %ld (%s)",
                             pipe_micro_batches(sc), sc->batch, where);
    }
    return DT_OK;
}

dt_status pipe_check(const scenario_t *sc, dt_err_t *err)
{
    int weighted = sc->model.arch == TRAINER_ARCH_LOGREG ? 1
                   : sc->model.arch == TRAINER_ARCH_MLP  ? sc->model.n_hidden + 1
                   : sc->model.arch == TRAINER_ARCH_GPT  ? sc->model.layers
                                                         : 4;
    dt_status st;
    if ((st = check_layers(sc, err, weighted)) != DT_OK)
        return st;
    if (check_interleaved(sc, err, weighted) != DT_OK)
        return DT_ERR_INPUT;
    if ((st = check_tensor(sc, err)) != DT_OK)
        return st;
    if (check_nccl(sc, err) != DT_OK || pipe_expert_check(sc, err) != DT_OK ||
        pipe_context_check(sc, err) != DT_OK)
        return DT_ERR_INPUT;
    if ((st = check_zero(sc, err)) != DT_OK || (st = check_hosts(sc, err)) != DT_OK)
        return st;
    if (sc->partition.kind != TRAINER_PARTITION_IID)
        return scenario_fail(sc, err, "data.partition",
                             "a pipeline trains one model on the global batch: partition must "
                             "be iid");
    if (scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.kind", "pipeline with [faults] is not supported");
    return DT_OK;
}
