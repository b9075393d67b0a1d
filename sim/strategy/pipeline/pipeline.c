/* The pipeline strategy (strategy.kind = pipeline): its table (sim_strategy_pipeline) and
 * the slots that are its own: the deployment of the stages and their streams, what a stage
 * holds in memory, the hosts and replicas a scenario asks for. The rest of the strategy is
 * the folder's (README.md: what each file owns). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

/* A stream's all-reduce of a bucket of node's stage with the same member of the other
 * replicas' (plan_buckets in plan.c); under ZeRO its reduce-scatter, and with zero_prefetch
 * the step's next job, a pass's gather or a bucket's reduce-scatter (pipe_zero_jobs). */
static sim_status_t bucket_reduce(sim_run_t *run, sim_node_t *node, float *buf, size_t n)
{
    const pipe_plan_t *plan = run->shared;
    int member = node->rank % plan->T, stage = node->rank / plan->T % plan->S;
    int replica = node->rank / plan->T / plan->S;
    const sim_group_t *grp = &plan->group[stage * plan->T + member];
    if (plan->zero_prefetch) { /* the step's next job: a pass's gather or a bucket's */
        int job = ((pipe_stage_state_t *)node->state)->zjob++ % plan->zjobs[stage].n;
        if (plan->zkind[stage][job] == 'G')
            return pipe_dp_allgather(run, plan, grp, replica, buf, n);
    }
    if (plan->zero_overlap) /* ZeRO: chunk d of the bucket to replica d (zero.c) */
        return pipe_dp_reduce_scatter(run, plan, grp, replica, buf, n);
    return pipe_dp_allreduce(run, plan, grp, replica, buf, n, pipe_dp_algo(run));
}

/* bucket_reduce's collective in closed form (dp_comm = formula; sim_buckets_start_timed):
 * its seconds, its bytes counted. */
static double bucket_seconds(sim_run_t *run, sim_node_t *node, size_t lo, size_t n)
{
    (void)lo;
    const pipe_plan_t *plan = run->shared;
    /* ZeRO: a pass's gather or a bucket's reduce-scatter, one phase; else an all-reduce */
    double t = pipe_dp_phase_seconds(run, plan, node, n);
    return plan->zero ? t : t + pipe_dp_phase_seconds(run, plan, node, n);
}

static void free_twin(sim_run_t *run, void *ctx)
{
    (void)ctx;
    free((void *)run->worker_twin);
    run->worker_twin = NULL;
}

static void deploy(sim_run_t *run)
{
    pipe_plan_t *plan = pipe_plan_make(run);
    run->shared = plan;
    run->shared_free = pipe_plan_free;
    /* tensor_members = one: member 0 of each tensor group runs for all T (pipe_plan_members),
     * and the group's hosts' energy is its host's */
    int step = plan->one ? plan->T : 1;
    /* data_members = one: replica 0's workers run for all D (pipe_plan_replicas) */
    int live = plan->rep_one ? plan->S * plan->T : run->n_workers;
    /* live_workers' answer was this plan's (the platform and the message slots were made
     * for it), or every worker */
    DT_ASSERT(run->n_live == run->n_workers || run->n_live == live);
    if (plan->one || plan->rep_one) {
        int *twin = dt_malloc(sizeof(int) * (size_t)run->n_workers);
        for (int i = 0; i < run->n_workers; i++) {
            int stand = i % live; /* the worker that runs for it */
            twin[i] = plan->one ? stand - stand % plan->T : stand;
        }
        run->worker_twin = twin;
        run->twin_share = 1.0 / plan->fold;
        sim_run_on_free(run, free_twin, NULL);
        if (plan->widen)
            sim_platform_widen(&run->plat, plan->T);
    }
    if (plan->zero_prefetch) { /* each member's stream gathers and reduces (pipe_zero_jobs) */
        size_t n_max = 2 * (size_t)plan->M * (size_t)plan->V;
        char *op = dt_malloc(n_max);
        int *mb = dt_malloc(sizeof(int) * n_max), *ch = dt_malloc(sizeof(int) * n_max);
        for (int s = 0; s < plan->S; s++) {
            int n_ops = pipe_schedule(plan, pipe_schedule_of(run->sc), s, op, mb, ch);
            pipe_zero_jobs(plan, s, op, ch, n_ops);
        }
        free(op);
        free(mb);
        free(ch);
        const sim_bucket_list_t **list = dt_calloc((size_t)run->n_workers, sizeof *list);
        for (int i = 0; i < live; i += step)
            list[i] = &plan->zjobs[i / plan->T % plan->S];
        if (plan->dp_formula) /* in closed form: no stream actors */
            sim_buckets_start_timed(run, list, bucket_seconds, 1);
        else
            sim_buckets_start_each(run, list, bucket_reduce);
        free(list);
    } else if (plan->bucketed) { /* each member's stream reduces its stage's buckets */
        const sim_bucket_list_t **list = dt_calloc((size_t)run->n_workers, sizeof *list);
        for (int i = 0; i < live; i += step)
            list[i] = &plan->bk_stage[i / plan->T % plan->S];
        if (plan->dp_formula && (plan->zero || pipe_dp_algo(run) == SIM_ALLREDUCE_RING))
            sim_buckets_start_timed(run, list, bucket_seconds, 0);
        else
            sim_buckets_start_lists(run, list, bucket_reduce);
        free(list);
    }
    for (int i = 0; i < live; i += step)
        sim_spawn(run, &run->workers[i], pipe_stage);
}

/* What a stage holds: its layers' parameters, gradients and optimizer state (ZeRO shards
 * the optimizer state, from stage 2 the gradients, at stage 3 the parameters: the ZeRO
 * paper's accounting, without the buffers of a gather or a reduction in flight), and the
 * activations of the micro-batches in flight at the schedule's peak (gpipe: all M; 1f1b:
 * at most S - s; interleaved: its warm-up's virtual micro-batches + 1, each a chunk's),
 * with the largest piece that model.recompute recomputes at once. */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    pipe_plan_t *plan = dt_calloc(1, sizeof *plan); /* before deploy: the layout alone */
    pipe_plan_layout(plan, run);
    int stages = plan->S, chunks = plan->V, stage = node->rank / plan->T % stages;
    int split_gpt = !run->timing_only && plan->T > 1; /* a member holds its pieces */
    double slice = 0, shard = 0, piece = 0, vb = run->value_bytes;
    for (int u = 0; u < chunks; u++) {
        int c = u * stages + stage; /* the stage's chunk u */
        double params = split_gpt
                            ? (double)pipe_gpt_tensor_floats(plan, run, node->rank % plan->T, c)
                            : (double)(plan->p1[c] - plan->p0[c]);
        slice += params;
        shard += ceil(params / plan->D); /* ZeRO: the largest chunk of each slice */
        piece = fmax(piece, plan->act_piece[c]);
    }
    double tied = pipe_gpt_tied_copy(run, stages, stage); /* the real gpt's last stage: wte */
    slice += tied;
    shard += ceil(tied / plan->D);
    /* the schedule walked: a forward keeps its chunk's activations until its backward */
    size_t n_max = 2 * (size_t)plan->M * (size_t)chunks;
    char *op = dt_malloc(n_max);
    int *mb = dt_malloc(sizeof(int) * n_max), *ch = dt_malloc(sizeof(int) * n_max);
    int n_ops = pipe_schedule(plan, pipe_schedule_of(run->sc), stage, op, mb, ch);
    int *live = dt_calloc((size_t)chunks, sizeof(int)); /* micro-batches held, per chunk */
    double peak = 0;
    for (int k = 0; k < n_ops; k++) {
        live[ch[k]] += op[k] == 'F' ? 1 : -1;
        double held = 0; /* (counts times sizes: 1f1b's S - s times its size, exactly) */
        for (int u = 0; u < chunks; u++)
            held += live[u] * plan->act[u * stages + stage];
        peak = fmax(peak, held);
    }
    free(live);
    free(op);
    free(mb);
    free(ch);
    node->mem.params = (plan->zero >= 3 ? shard : slice) * vb;
    /* zero_grad_overlap: whole gradients add up over the micro-batches (zero.c) */
    int whole_grads = plan->zero_overlap && plan->M * chunks > 1;
    node->mem.grads = (plan->zero >= 2 && !whole_grads ? shard : slice) * vb;
    node->mem.optimizer = (plan->zero >= 1 ? shard : slice) * scenario_optimizer_bytes(run->sc);
    node->mem.activations = (peak + piece) * plan->micro * vb;
    pipe_plan_free(plan);
}

/* The workers that run: replica 0's where data_members = one holds before the platform
 * loads (pipe_plan_replicas, the replicas' collectives in closed form by dp_comm = formula;
 * NCCL's closed form needs the nodes, so under dp_comm = nccl every worker's hosts are
 * built), else every worker. deploy asserts that its plan agrees. */
static int live_workers(const sim_run_t *run)
{
    pipe_plan_t *plan = dt_calloc(1, sizeof *plan);
    pipe_plan_layout(plan, run);
    pipe_plan_dp_formula(plan, run);
    pipe_plan_replicas(plan, run);
    int live = plan->rep_one ? plan->S * plan->T : run->n_workers;
    pipe_plan_free(plan);
    return live;
}

/* A compute call: a micro-batch, a member's share of its context group's tokens, a tensor
 * group member's share (sequence parallel or not), the expert group its routed experts take
 * tokens from. */
static void compute_call(const scenario_t *sc, double *samples, int *T, int *sp, int *E)
{
    *E = (int)scenario_own(sc, "expert")->l;
    *samples = (double)sc->batch / (double)pipe_micro_batches(sc);
    *T = (int)pipe_tensor(sc);
    *sp = *T > 1 && scenario_own(sc, "sequence_parallel")->i;
    *samples /= (double)scenario_own(sc, "context")->l;
}

static void hosts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)(pipe_stages(sc) * pipe_replicas(sc) * pipe_tensor(sc)) * pipe_context(sc);
    *servers = 0;
}

/* a pipeline trains one model on model.batch: its stages share the batch */
static int replicas(const scenario_t *sc, int workers)
{
    (void)workers;
    return (int)pipe_replicas(sc);
}

/* a step's activations and gradients in flight (interleaved: of every chunk) */
static size_t msg_slots(const sim_run_t *run, const sim_node_t *node, size_t n)
{
    (void)node;
    (void)n;
    const scenario_t *sc = run->sc;
    long V =
        pipe_schedule_of(sc) == SIM_PIPE_INTERLEAVED ? scenario_own(sc, "virtual_stages")->l : 1;
    return 2 * (size_t)(2 * (pipe_micro_batches(sc) * V + pipe_replicas(sc) * pipe_context(sc) +
                             pipe_tensor(sc)) +
                        8);
}

const sim_strategy_t sim_strategy_pipeline = {
    .name = "pipeline",
    .about =
        "the model's layers in `stages` consecutive runs, one per host; `micro_batches` "
        "micro-batches of `batch` flow through them (GPipe, 1F1B or Megatron-LM's "
        "interleaved 1F1B over `virtual_stages` chunks a stage, `pipeline_schedule`), "
        "activations forward and their gradients back as messages; one update per step "
        "(`optimizer`) on each stage's layers; `data_parallel` > 1 replicates the whole pipeline "
        "(hybrid), each stage all-reducing its gradients across the replicas (in buckets of "
        "`bucket_mb` during the step's last backward pass; ZeRO stage `zero_stage` with "
        "`shard_optimizer`); `tensor` > 1 splits each stage of the real gpt or a model "
        "profile across a tensor group (Megatron-LM's 3-D parallelism with the two above); "
        "`expert` > 1 splits a MoE profile's routed experts "
        "over groups of replicas, tokens dispatched and combined by all-to-all",
    .own_keys = pipe_own_keys,
    .worker_role = "worker",
    .takes = SIM_TAKES_ALLREDUCE | SIM_TAKES_BUCKETS | SIM_NEEDS_PEER_LINKS | SIM_SAME_AS_SINGLE,
    .check = pipe_check,
    .compute_call = compute_call,
    .hosts = hosts,
    .replicas = replicas,
    .live_workers = live_workers,
    .msg_slots = msg_slots,
    .deploy = deploy,
    .memory = memory,
    .summary = pipe_summary,
};
