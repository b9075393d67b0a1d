/* tensor: every dense layer of the mlp (or logreg) split across T workers, as Megatron-LM
 * splits a transformer's MLP (Shoeybi et al. 2019). The dense layers go in pairs: the first
 * of a pair is split by output features (worker i holds rows [i o, (i+1) o) of W and of b,
 * o = out / T, and computes its slice of the output, then its ReLU, from the whole input);
 * the second by input features (worker i holds columns [i k, (i+1) k) of W, k = in / T,
 * and multiplies its slice of the activations), so each worker's product is a partial sum
 * of the output: an all-reduce of the activations (batch x out floats) completes it, and the
 * pair's bias (held by worker 0, added to its partial sum) and ReLU follow on every worker.
 * An unpaired last layer is split by output features and all-gathers its outputs (the
 * logits). Backward mirrors it: the gradient of a pair's input is a partial sum again, one
 * all-reduce per pair below the top. Every worker computes the loss on the whole logits.
 *
 * Each parameter has one owner, who computes its gradient and updates it: the workers share
 * one parameter buffer and each writes only its own slices, so one worker with the whole
 * batch and T workers train the same weights (up to float rounding; tested). Every worker
 * draws the same batch. Worker 0 evaluates at the first all-reduce of the next step (when
 * every update of the step is known to be done), recorded at the time its step ended; after
 * the last step an all-reduce of one float stands for the end-of-training barrier.
 * The real gpt's split (attention by heads, the MLP by columns then rows) is tensor_gpt.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "tensor_impl.h"

enum { ROLE_COL, ROLE_ROW, ROLE_GATHER };

typedef struct tp_layer {
    const trainer_layer_t *l;
    int role;
    int relu_after;  /* a ReLU follows this dense layer */
    int width;       /* COL, GATHER: output features per worker; ROW: input features */
    double fwd, bwd; /* this worker's FLOPs per sample */
} tp_layer_t;

typedef struct tp_worker {
    int L, T, B;
    tp_layer_t layer[TRAINER_MAX_HIDDEN + 1];
    float *x;                           /* (B, in0) dev: the batch */
    uint8_t *labels;                    /* (B) */
    float *in[TRAINER_MAX_HIDDEN + 2];  /* (B, in_j) replicated input of dense j */
    float *pre[TRAINER_MAX_HIDDEN + 1]; /* COL: (B, o) before its ReLU */
    float *act[TRAINER_MAX_HIDDEN + 1]; /* COL: (B, o) after it */
    float *z[TRAINER_MAX_HIDDEN + 1];   /* ROW: (B, out) partial, then whole sum */
    float *gath;                        /* GATHER: (T, B, o) */
    float *logits, *dlogits, *dtmp;     /* (B, C) */
    float *dx, *dloc;                   /* (B, widest) scratch */
    float *one;                         /* (1) the final barrier's payload */
    uint32_t *idx;
    long pending_step; /* worker 0: an evaluation of this step is due, or -1 */
    double pending_time;
} tp_worker_t;

static void tp_free(sim_node_t *node)
{
    const trainer_backend_t *be = sim_current->be;
    tp_worker_t *t = node->state;
    be->free(t->x);
    be->free(t->labels);
    for (int j = 0; j <= t->L; j++) {
        if (j > 0)
            be->free(t->in[j]);
        if (j < t->L) {
            be->free(t->pre[j]);
            be->free(t->act[j]);
            be->free(t->z[j]);
        }
    }
    be->free(t->gath);
    be->free(t->logits);
    be->free(t->dlogits);
    be->free(t->dtmp);
    be->free(t->dx);
    be->free(t->dloc);
    be->free(t->one);
    free(t->idx);
}

/* The dense layers of the model as worker `rank` of T holds them: roles, widths, FLOPs
 * per sample (the loss, computed whole on every worker, with the last). Returns them. */
static int tp_layers(const sim_run_t *run, int rank, tp_layer_t *layer)
{
    const trainer_model_t *m = &run->model;
    int L = 0, T = (int)scenario_own(run->sc, "tensor_parallel")->l, C = m->classes;
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i].kind == TRAINER_LAYER_DENSE) {
            tp_layer_t *d = &layer[L++];
            memset(d, 0, sizeof *d);
            d->l = &m->layers[i];
            d->relu_after = i + 1 < m->n_layers && m->layers[i + 1].kind == TRAINER_LAYER_RELU;
        }
    DT_CHECK(C % T == 0 || L % 2 == 0,
             "%s: tensor_parallel = %d does not divide the %d "
             "classes of the output layer",
             run->sc->path, T, C);
    for (int j = 0; j < L; j++) {
        tp_layer_t *d = &layer[j];
        int in = d->l->in_c, out = d->l->out_c;
        d->role = j % 2 ? ROLE_ROW : j == L - 1 ? ROLE_GATHER : ROLE_COL;
        if (d->role == ROLE_ROW) {
            int k = in / T;
            d->width = k;
            d->fwd = 2.0 * k * out + (rank == 0 ? out : 0) + (d->relu_after ? out : 0);
            d->bwd = 4.0 * out * k + k + (rank == 0 ? out : 0);
        } else {
            int o = out / T;
            d->width = o;
            d->fwd = 2.0 * in * o + o + (d->relu_after ? o : 0);
            d->bwd = 2.0 * o * in + o + (j > 0 ? 2.0 * o * in + in : 0);
        }
    }
    layer[L - 1].fwd += 5.0 * C;
    layer[L - 1].bwd += 2.0 * C;
    return L;
}

static tp_worker_t *tp_make(sim_run_t *run, sim_node_t *node)
{
    const trainer_backend_t *be = run->be;
    const trainer_model_t *m = &run->model;
    tp_worker_t *t = dt_calloc(1, sizeof *t);
    t->T = (int)scenario_own(run->sc, "tensor_parallel")->l;
    t->B = (int)run->sc->batch;
    t->L = tp_layers(run, node->rank, t->layer);
    size_t B = (size_t)t->B, widest = m->in_size;
    int C = m->classes;
    for (int j = 0; j < t->L; j++) {
        tp_layer_t *d = &t->layer[j];
        int in = d->l->in_c, out = d->l->out_c;
        if ((size_t)d->l->out_size > widest)
            widest = d->l->out_size;
        if (d->role == ROLE_ROW) {
            t->z[j] = be->alloc(sizeof(float) * B * (size_t)out);
        } else {
            t->pre[j] = be->alloc(sizeof(float) * B * (size_t)d->width);
            t->act[j] = be->alloc(sizeof(float) * B * (size_t)d->width);
        }
        if (j > 0)
            t->in[j] = be->alloc(sizeof(float) * B * (size_t)in);
    }
    t->x = be->alloc(sizeof(float) * B * m->in_size);
    t->in[0] = t->x;
    t->labels = be->alloc(B);
    t->gath = be->alloc(sizeof(float) * B * (size_t)C);
    t->logits = be->alloc(sizeof(float) * B * (size_t)C);
    t->dlogits = be->alloc(sizeof(float) * B * (size_t)C);
    t->dtmp = be->alloc(sizeof(float) * B * (size_t)C);
    t->dx = be->alloc(sizeof(float) * B * widest);
    t->dloc = be->alloc(sizeof(float) * B * widest);
    t->one = be->alloc(sizeof(float));
    t->idx = dt_malloc(sizeof(uint32_t) * B);
    t->pending_step = -1;
    node->state = t;
    node->state_free = tp_free;
    return t;
}

/* Runs the all-reduce (sum) over the T workers; failure ends the run. */
static int sum_all(sim_run_t *run, sim_node_t *node, float *buf, size_t n)
{
    sim_groups_t *g = run->shared;
    if (sim_allreduce(run, &g->all, node->rank, buf, n, SIM_ALLREDUCE_RING) != SIM_OK) {
        run->failed = 1;
        return -1;
    }
    return 0;
}

/* The forward pass of this worker's slices; logits whole in t->logits. Returns the mean
 * loss, or NAN when the run failed. eval: called after the step's first all-reduce. */
static double forward(sim_run_t *run, sim_node_t *node, tp_worker_t *t, const float *w,
                      void (*after_first)(sim_run_t *, sim_node_t *))
{
    const trainer_backend_t *be = run->be;
    int i = node->rank, T = t->T, B = t->B, first_done = 0;
    for (int j = 0; j < t->L; j++) {
        tp_layer_t *d = &t->layer[j];
        const trainer_layer_t *l = d->l;
        int in = l->in_c, out = l->out_c;
        double w0 = dt_wall_seconds();
        if (d->role == ROLE_ROW) {
            int k = d->width;
            be->gemm(0, 1, B, out, k, 1.0f, t->act[j - 1], k, w + l->w_off + (size_t)i * k, in,
                     0.0f, t->z[j], out);
            if (i == 0)
                be->bias_add(t->z[j], w + l->b_off, B, out, 1);
            /* (d->fwd counts the ReLU after the all-reduce too) */
            sim_charge(run, node, d->fwd * B, dt_wall_seconds() - w0);
            if (sum_all(run, node, t->z[j], (size_t)B * out))
                return NAN;
            if (!first_done++ && after_first)
                after_first(run, node);
            if (j + 1 < t->L)
                be->relu_forward(t->in[j + 1], t->z[j], (size_t)B * out);
            else
                be->copy(t->logits, t->z[j], sizeof(float) * (size_t)B * out);
        } else {
            int o = d->width;
            be->gemm(0, 1, B, o, in, 1.0f, t->in[j], in, w + l->w_off + (size_t)i * o * in, in,
                     0.0f, t->pre[j], o);
            be->bias_add(t->pre[j], w + l->b_off + (size_t)i * o, B, o, 1);
            if (d->role == ROLE_COL) {
                be->relu_forward(t->act[j], t->pre[j], (size_t)B * o);
                sim_charge(run, node, d->fwd * B, dt_wall_seconds() - w0);
                continue;
            }
            /* GATHER: the logits' column blocks, (T, B, o), then (B, T, o) = (B, C) */
            be->copy(t->gath + (size_t)i * B * o, t->pre[j], sizeof(float) * (size_t)B * o);
            sim_charge(run, node, d->fwd * B, dt_wall_seconds() - w0);
            sim_groups_t *g = run->shared;
            if (T > 1 && sim_allgather(run, &g->all, i, t->gath, (size_t)T * B * o) != SIM_OK) {
                run->failed = 1;
                return NAN;
            }
            if (!first_done++ && after_first)
                after_first(run, node);
            be->permute(t->logits, t->gath, T, B, o);
        }
    }
    if (!first_done && after_first) /* T = 1 or no collective: nothing to wait for */
        after_first(run, node);
    double loss;
    int correct;
    be->softmax_xent(t->dlogits, t->logits, t->labels, B, run->model.classes, 1.0f / (float)B,
                     &loss, &correct);
    return loss / B;
}

/* The backward pass: this worker's gradient slices into g. 0, or -1 when the run failed. */
static int backward(sim_run_t *run, sim_node_t *node, tp_worker_t *t, const float *w, float *g)
{
    const trainer_backend_t *be = run->be;
    int i = node->rank, T = t->T, B = t->B;
    const float *dy = t->dlogits; /* gradient of the current layer's whole output */
    for (int j = t->L - 1; j >= 0; j--) {
        tp_layer_t *d = &t->layer[j];
        const trainer_layer_t *l = d->l;
        int in = l->in_c, out = l->out_c;
        double w0 = dt_wall_seconds();
        const float *dpre; /* COL, GATHER: gradient of this worker's output slice */
        if (d->role == ROLE_ROW) {
            int k = d->width;
            if (i == 0)
                be->bias_grad(g + l->b_off, dy, B, out, 1);
            be->gemm(1, 0, out, k, B, 1.0f, dy, out, t->act[j - 1], k, 0.0f,
                     g + l->w_off + (size_t)i * k, in);
            /* the gradient of its activation slice, through the ReLU of the COL layer below */
            be->gemm(0, 0, B, k, out, 1.0f, dy, out, w + l->w_off + (size_t)i * k, in, 0.0f,
                     t->dloc, k);
            be->relu_backward(t->dloc, t->dloc, t->act[j - 1], (size_t)B * k);
            sim_charge(run, node, d->bwd * B, dt_wall_seconds() - w0);
            dy = t->dloc; /* the COL layer below takes its slice's gradient */
            continue;
        }
        int o = d->width;
        if (d->role == ROLE_GATHER) { /* its block of dlogits: (B, T, o) -> (T, B, o) */
            be->permute(t->dtmp, dy, B, T, o);
            dpre = t->dtmp + (size_t)i * B * o;
        } else {
            dpre = dy;
        }
        be->gemm(1, 0, o, in, B, 1.0f, dpre, o, t->in[j], in, 0.0f,
                 g + l->w_off + (size_t)i * o * in, in);
        be->bias_grad(g + l->b_off + (size_t)i * o, dpre, B, o, 1);
        if (j == 0) {
            sim_charge(run, node, d->bwd * B, dt_wall_seconds() - w0);
            break;
        }
        /* the input's gradient: a partial sum over the workers' slices */
        be->gemm(0, 0, B, in, o, 1.0f, dpre, o, w + l->w_off + (size_t)i * o * in, in, 0.0f, t->dx,
                 in);
        sim_charge(run, node, (d->bwd - in) * B, dt_wall_seconds() - w0);
        if (sum_all(run, node, t->dx, (size_t)B * in))
            return -1;
        w0 = dt_wall_seconds();
        be->relu_backward(t->dx, t->dx, t->in[j], (size_t)B * in); /* the ROW layer's ReLU */
        sim_charge(run, node, (double)in * B, dt_wall_seconds() - w0);
        dy = t->dx;
    }
    return 0;
}

/* One piece of the parameters a worker owns, [at, at + n), for each pass over them. */
typedef struct piece_ctx {
    sim_run_t *run;
    float *w, *m, *v, *g; /* v NULL for sgd */
    long step;
    double sq; /* PIECE_SUMSQ: the squares of g's pieces so far */
    float f;   /* PIECE_SCALE: the factor */
    enum { PIECE_SUMSQ, PIECE_SCALE, PIECE_UPDATE } op;
} piece_ctx_t;

static void piece(piece_ctx_t *c, size_t at, size_t n)
{
    const trainer_backend_t *be = c->run->be;
    if (c->op == PIECE_SUMSQ)
        c->sq += be->sumsq(c->g + at, n);
    else if (c->op == PIECE_SCALE)
        be->scale(n, c->f, c->g + at);
    else
        sim_update(c->run, c->w + at, c->g + at, c->m + at, c->v ? c->v + at : NULL, n, c->step,
                   c->step + 1);
}

/* c's pass over the slices worker i owns: they partition the model (a row-split layer's
 * biases are worker 0's). */
static void owned_pieces(const tp_worker_t *t, int i, piece_ctx_t *c)
{
    for (int j = 0; j < t->L; j++) {
        const trainer_layer_t *l = t->layer[j].l;
        int in = l->in_c, out = l->out_c, k = t->layer[j].width;
        if (t->layer[j].role == ROLE_ROW) {
            for (int r = 0; r < out; r++)
                piece(c, l->w_off + (size_t)r * in + (size_t)i * k, (size_t)k);
            if (i == 0)
                piece(c, l->b_off, (size_t)out);
        } else {
            piece(c, l->w_off + (size_t)i * k * in, (size_t)k * in);
            piece(c, l->b_off + (size_t)i * k, (size_t)k);
        }
    }
}

/* The optimizer on the slices this worker owns; with model.clip_norm, after scaling them by
 * the norm the workers' squares sum (a tree all-reduce of one float: Megatron-LM's norm
 * over tensor shards). Returns -1 when the run failed. */
static int update(sim_run_t *run, sim_node_t *node, tp_worker_t *t, float *w, float *m, float *v,
                  float *g, long step)
{
    piece_ctx_t c = {run, w, m, v, g, step, 0, 1.0f, PIECE_SUMSQ};
    float clip = run->sc->sgd.clip_norm;
    if (clip > 0.0f) {
        owned_pieces(t, node->rank, &c);
        sim_groups_t *gr = run->shared;
        if ((c.f = sim_clip_factor_sum(run, node, &gr->all, node->rank, c.sq)) < 0.0f) {
            run->failed = 1;
            return -1;
        }
        c.op = PIECE_SCALE;
        if (c.f != 1.0f)
            owned_pieces(t, node->rank, &c);
    }
    c.op = PIECE_UPDATE;
    owned_pieces(t, node->rank, &c);
    return 0;
}

/* Worker 0's evaluation of the previous step, deferred to the first all-reduce of this one
 * (or to the end-of-training barrier). */
static void evaluate_pending(sim_run_t *run, sim_node_t *node)
{
    tp_worker_t *t = node->state;
    if (node->rank != 0 || t->pending_step < 0)
        return;
    sim_evaluate_at(run, t->pending_step, run->workers[0].params, t->pending_time);
    t->pending_step = -1;
}

static void worker(sim_node_t *node)
{
    sim_run_t *run = sim_current;
    tp_worker_t *t = tp_make(run, node);
    sim_breakdown_comm(node, RESULTS_PART_TENSOR); /* every collective is the group's */
    float *w = run->workers[0].params, *v = run->workers[0].velocity;
    float *v2 = run->workers[0].moment2;
    long step;
    for (step = 0; !sim_should_stop(run, step) && !run->ended; step++) {
        sim_batch_global(run, step, 0, t->B, t->idx);
        double w0 = dt_wall_seconds();
        run->be->gather(t->x, t->labels, run->train.x, run->train.y, t->idx, t->B, run->train.dim);
        sim_charge(run, node, 0, dt_wall_seconds() - w0);
        double loss = forward(run, node, t, w, evaluate_pending);
        if (run->failed || backward(run, node, t, w, node->grads))
            return;
        if (update(run, node, t, w, v, v2, node->grads, step))
            return;
        if (node->rank == 0) {
            sim_count_step(run, node, t->B, loss);
            if (sim_eval_due(run, step + 1)) {
                t->pending_step = step + 1;
                t->pending_time = sim_now();
            }
        } else {
            node->steps++;
        }
    }
    /* every update done before the final evaluation */
    if (t->T > 1 && sum_all(run, node, t->one, 1))
        return;
    if (node->rank == 0) {
        evaluate_pending(run, node);
        if (!run->failed)
            sim_eval_final(run, step, w);
    }
}

static void deploy(sim_run_t *run)
{
    sim_groups_make(run);
    int gpt = run->model.cfg.arch == TRAINER_ARCH_GPT;
    for (int i = 0; i < run->n_workers; i++)
        sim_spawn(run, &run->workers[i], gpt ? sim_tensor_gpt_worker : worker);
}

/* What a worker holds: its slices (with worker 0's row-split biases), their gradients and
 * optimizer state; the activations kept for the backward pass (as the other strategies
 * count them, without the input batch): every split layer's replicated input and output
 * slices, the all-reduced sums, the gathered blocks and the logits. */
static void memory(const sim_run_t *run, sim_node_t *node)
{
    if (run->model.cfg.arch == TRAINER_ARCH_GPT) {
        sim_tensor_gpt_memory(run, node);
        return;
    }
    tp_layer_t layer[TRAINER_MAX_HIDDEN + 1];
    int L = tp_layers(run, node->rank, layer);
    double own = 0, act = 0, vb = run->value_bytes;
    for (int j = 0; j < L; j++) {
        const tp_layer_t *d = &layer[j];
        int in = d->l->in_c, out = d->l->out_c;
        if (d->role == ROLE_ROW) {
            own += (double)out * d->width + (node->rank == 0 ? out : 0);
            act += out;
        } else {
            own += (double)d->width * in + d->width;
            act += (j > 0 ? in : 0) + 2.0 * d->width;
        }
    }
    act += 2.0 * run->model.classes; /* the gathered blocks and the logits */
    node->mem.params = node->mem.grads = own * vb;
    node->mem.optimizer = own * scenario_optimizer_bytes(run->sc);
    node->mem.activations = act * (double)run->sc->batch * vb;
}

static void hosts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)scenario_own(sc, "tensor_parallel")->l;
    *servers = 0;
}

/* the workers of a split share one batch */
static int replicas(const scenario_t *sc, int workers)
{
    (void)sc;
    (void)workers;
    return 1;
}

/* Dense layers only, one host per slice, widths the slices divide, one model on the global
 * batch, no faults. */
static dt_status check(const scenario_t *sc, dt_err_t *err)
{
    char where[96];
    const char *k;
    long T = scenario_own(sc, "tensor_parallel")->l;
    if (sc->profile[0] || sc->model.arch == TRAINER_ARCH_CNN)
        return scenario_fail(sc, err, "model.arch",
                             "tensor parallelism splits fully connected layers and attention: "
                             "the model must be mlp, logreg or gpt (a model profile with a "
                             "[tensor] section: strategy.kind = pipeline with strategy.tensor)");
    int gpt = sc->model.arch == TRAINER_ARCH_GPT;
    if (gpt && sim_tensor_gpt_check(sc, err) != DT_OK)
        return DT_ERR_INPUT;
    if (!gpt && scenario_own(sc, "sequence_parallel")->i &&
        !scenario_key_swept(sc, "strategy.kind"))
        return scenario_fail(sc, err, "strategy.sequence_parallel",
                             "sequence_parallel divides a transformer's token rows between its "
                             "split layers: the tensor strategy does it for the gpt, not the %s",
                             trainer_arch_name(sc->model.arch));
    if (sc->workers != T && scenario_key_given(sc, "cluster.workers")) {
        k = scenario_blame(sc, "cluster.workers", "strategy.tensor_parallel", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "tensor parallelism over %ld workers runs on %ld hosts, not %ld "
                             "(workers must equal tensor_parallel; %s)",
                             T, T, sc->workers, where);
    }
    /* the widths it splits: the outputs of the first layer of each pair (dense layers 1,
     * 3, ...: the second splits that as its input), and the classes when the dense layers
     * are odd in number (the last one is column-split) */
    int L = gpt ? 0 : sc->model.arch == TRAINER_ARCH_MLP ? sc->model.n_hidden + 1 : 1;
    for (int j = 0; j < L - 1; j += 2)
        if (sc->model.hidden[j] % T) {
            k = scenario_blame(sc, "strategy.tensor_parallel", "model.hidden", where, sizeof where);
            return scenario_fail(sc, err, k,
                                 "tensor_parallel = %ld does not divide hidden layer %d's width "
                                 "%d, which it splits (%s)",
                                 T, j + 1, sc->model.hidden[j], where);
        }
    /* a directory's classes are known once it is read (checked then) */
    long classes = !strcmp(sc->data_source, "synthetic")       ? sc->synthetic_classes
                   : !strcmp(sc->data_source, "fashion-mnist") ? 10
                                                               : 0;
    if (!gpt && L % 2 && classes > 0 && classes % T)
        return scenario_fail(sc, err, "strategy.tensor_parallel",
                             "tensor_parallel = %ld does not divide the %ld classes of the "
                             "output layer, which it splits by columns (an odd number of dense "
                             "layers leaves it unpaired)",
                             T, classes);
    if (sc->partition.kind != TRAINER_PARTITION_IID)
        return scenario_fail(sc, err, "data.partition",
                             "tensor parallelism trains one model on the global batch: "
                             "partition must be iid");
    if (scenario_has_faults(sc))
        return scenario_fail(sc, err, "strategy.kind", "tensor with [faults] is not supported");
    return DT_OK;
}

static const sim_strategy_key_t own_keys[] = {
    {.key = "tensor_parallel",
     .kind = SIM_KEY_INT,
     .def = "2",
     .min = 1,
     .max = 1024,
     .doc = "workers every dense layer is split across (Megatron-LM: column split, then row "
            "split, an all-reduce of activations per pair; an unpaired last layer "
            "column-split with an all-gather); must divide the widths it splits; "
            "cluster.workers, if given, must equal it"},
    SIM_KEY_SEQUENCE_PARALLEL,
    {0},
};

const sim_strategy_t sim_strategy_tensor = {
    .own_keys = own_keys,
    .name = "tensor",
    .about = "every dense layer split across `tensor_parallel` workers (Megatron-LM column "
             "then row split, an all-reduce of activations per pair; gpt: attention by heads, "
             "the MLP by columns then rows)",
    .worker_role = "worker",
    .takes = SIM_NEEDS_PEER_LINKS | SIM_SAME_AS_SINGLE,
    .check = check,
    .hosts = hosts,
    .replicas = replicas,
    .deploy = deploy,
    .memory = memory,
};
