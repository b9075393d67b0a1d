/* allreduce: synchronous data parallelism without a server. After each step every worker
 * all-reduces its gradient (ring, binomial tree, recursive halving-doubling, or
 * hierarchical: inside groups, then across group leaders), divides by the worker count and
 * applies the same SGD step to its own replica, so the replicas stay identical. With
 * strategy.bucket_mb the all-reduce goes bucket by bucket during the backward pass
 * (bucket.h). */
#include <stdlib.h>

#include "bucket.h"
#include "collective.h"
#include "nccl_group.h"
#include "strategy.h"
#include "wire.h"

/* With shared replicas only the first worker through the step reads its sum (sim_dp_loop
 * settles it): the others need not copy it in. */
/* strategy.dp_comm = nccl's group in closed form, kept with the run where it holds */
static const char nccl_key;

static sim_status_t exchange(sim_run_t *run, sim_node_t *node, float *buf, size_t n)
{
    sim_nccl_group_t *ng = sim_run_kept(run, &nccl_key);
    if (ng) { /* strategy.dp_comm = nccl: every worker, in rank order */
        sim_nccl_group_allreduce(run, ng, node, node->rank, buf, n, sim_nccl_algo_key(run->sc),
                                 sim_nccl_proto_key(run->sc));
        return SIM_OK;
    }
    if (run->sc->shared_replicas && !run->has_faults && !run->real) /* as sim_dp_loop */
        return sim_groups_allreduce_lazy(run, sim_elastic_groups(run), node, buf, n);
    return sim_groups_allreduce(run, sim_elastic_groups(run), node, buf, n);
}

static void worker(sim_node_t *node)
{
    sim_dp_loop(sim_current, node, exchange);
}

static void nccl_free(sim_run_t *run, void *ctx)
{
    (void)run;
    sim_nccl_group_free(ctx);
    free(ctx);
}

/* strategy.dp_comm = nccl: the workers' group in NCCL's closed form (nccl_group.h), where it
 * holds; else messages, and the run's note says why */
static void nccl_make(sim_run_t *run)
{
    const scenario_t *sc = run->sc;
    /* dp_comm = auto: NCCL where it would run, silently messages elsewhere */
    int asked = scenario_own(sc, "dp_comm")->i == SIM_DP_NCCL;
    if (!sim_dp_comm_nccl(sc, run->timing_only) || run->n_workers < 2)
        return;
    const char *why = NULL;
    if (run->has_faults || run->real)
        why = run->real ? "real mode exchanges real messages" : "faults are detected by messages";
    else if (sc->compression.kind != TRAINER_CODEC_NONE)
        why = "compression travels in the messages";
    else if (sc->bucket_mb > 0)
        why = "bucket_mb's streams exchange messages";
    sim_nccl_group_t *ng = dt_calloc(1, sizeof *ng);
    if (!why)
        why = sim_nccl_group_init(ng, sc, &sim_elastic_groups(run)->all);
    if (why) {
        sim_nccl_group_free(ng);
        free(ng);
        if (asked)
            snprintf(run->note, sizeof run->note,
                     "all-reduces as messages (dp_comm = nccl, but %s)", why);
        return;
    }
    sim_run_keep(run, &nccl_key, ng, nccl_free);
    snprintf(run->note, sizeof run->note,
             "all-reduces as NCCL runs them (%d servers of %d, algorithm %s, protocol %s; the "
             "gradients summed in rank order; contention left out)",
             ng->model.nodes, ng->model.ranks / ng->model.nodes,
             sim_nccl_algo_key(sc) < 0 ? "by size"
             : sim_nccl_algo_key(sc) == SIM_NCCL_NVLS && ng->model.nodes > 1
                 ? "ring (nvls runs inside a server only)"
                 : sim_nccl_algo_name(sim_nccl_algo_key(sc)),
             sim_nccl_proto_key(sc) < 0 ? "by size" : sim_nccl_proto_name(sim_nccl_proto_key(sc)));
}

static void deploy(sim_run_t *run)
{
    sim_codec_in_allreduce(run);
    sim_elastic_make(run);
    nccl_make(run);
    if (run->sc->bucket_mb > 0 && run->n_workers > 1)
        sim_buckets_start(run);
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], worker);
}

/* Buckets overlap plain all-reduces with one backward pass; encodings that are all-gathered
 * (topk, qsgd8) have no recovery from faults; hierarchical groups divide the workers. */
static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    if (scenario_own(sc, "dp_comm")->i == SIM_DP_FORMULA)
        return scenario_fail(sc, err, "strategy.dp_comm",
                             "formula times a pipeline's replicas (strategy.kind = pipeline); "
                             "allreduce takes messages or nccl");
    int gathered =
        sc->compression.kind == TRAINER_CODEC_TOPK || sc->compression.kind == TRAINER_CODEC_QSGD8;
    if (sc->bucket_mb > 0 && (sc->accumulate > 1 || gathered)) {
        char where[96];
        const char *k =
            scenario_blame(sc, sc->accumulate > 1 ? "strategy.accumulate" : "strategy.compression",
                           "strategy.bucket_mb", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "bucket_mb overlaps one backward pass with plain all-reduces; it "
                             "does not combine with %s (use bucket_mb = 0; %s)",
                             sc->accumulate > 1 ? "accumulate > 1" : "topk or qsgd8 compression",
                             where);
    }
    if (gathered && scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.compression",
                             "allreduce with topk or qsgd8 compression (an all-gather of encoded "
                             "gradients) is not supported with [faults]; fp16 is");
    return sim_hierarchical_check(sc, err);
}

static const sim_strategy_key_t own_keys[] = {
    SIM_KEY_DP_COMM,
    SIM_KEY_NCCL_ALGORITHM,
    SIM_KEY_NCCL_PROTOCOL,
    {0},
};

const sim_strategy_t sim_strategy_allreduce = {
    .name = "allreduce",
    .about = "every worker all-reduces its gradient with `algorithm` = `ring` (reduce-scatter "
             "+ all-gather), `tree` (binomial reduce + broadcast), `halving-doubling` "
             "(recursive halving reduce-scatter + recursive doubling all-gather; extra workers "
             "beyond a power of two fold in first), `hierarchical` (binomial reduce inside "
             "groups of `group_size` consecutive workers, racks on a multi-rack platform, "
             "servers on the rail platform; ring among group leaders; broadcast back) or `2d` "
             "(the fast domain first, as NCCL's hierarchical rings: ring reduce-scatter inside "
             "each group, a ring per position across the groups, one per rail, ring "
             "all-gather inside); all as real exchanges of chunks of the buffer; then the "
             "same SGD step on every replica",
    .worker_role = "worker",
    .takes = SIM_TAKES_COMPRESSION | SIM_TAKES_ACCUMULATE | SIM_TAKES_MOMENTUM_CORRECTION |
             SIM_TAKES_ALLREDUCE | SIM_TAKES_GROUPS | SIM_TAKES_BUCKETS | SIM_NEEDS_PEER_LINKS |
             SIM_SAME_AS_SINGLE | SIM_RUNS_REAL,
    .check = check,
    .deploy = deploy,
    .own_keys = own_keys,
};
