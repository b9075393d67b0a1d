/* The learner: one replica's buffers, its gradient step, its update and epoch loop, and
 * evaluation (see train.h). */
#include "train.h"

#include <math.h>
#include <string.h>

const char *trainer_optimizer_name(trainer_optimizer_t kind)
{
    static const char *const names[] = {"sgd", "adam", "adamw"};
    return names[kind];
}

int trainer_optim_state_floats(const trainer_optim_t *o)
{
    return o->kind != TRAINER_OPT_SGD ? 2 : o->momentum != 0.0f ? 1 : 0;
}

double trainer_optim_flops(const trainer_optim_t *o, size_t n)
{
    if (o->kind == TRAINER_OPT_SGD)
        return trainer_sgd_flops(n, o->momentum, o->weight_decay);
    double per = 13.0;
    if (o->weight_decay != 0.0f)
        per += o->kind == TRAINER_OPT_ADAMW ? 1.0 : 2.0;
    return per * (double)n;
}

double trainer_clip_flops(const trainer_optim_t *o, size_t n)
{
    return o->clip_norm > 0.0f ? 3.0 * (double)n : 0.0;
}

void trainer_optim_update(const trainer_backend_t *be, const trainer_optim_t *o, float lr, long t,
                          float *w, const float *g, float *m, float *v, size_t n)
{
    if (o->kind == TRAINER_OPT_SGD) {
        be->sgd_update(w, g, o->momentum != 0.0f ? m : NULL, n, lr, o->momentum, o->weight_decay);
        return;
    }
    DT_ASSERT(t >= 1 && m && v);
    /* PyTorch computes these in double and rounds each to the tensor's float */
    double b1 = o->beta1, b2 = o->beta2, wd = o->weight_decay;
    int decoupled = o->kind == TRAINER_OPT_ADAMW;
    trainer_adam_step_t a = {
        .decay = decoupled ? (float)(1.0 - (double)lr * wd) : 1.0f,
        .l2 = decoupled ? 0.0f : (float)wd,
        .one_minus_beta1 = (float)(1.0 - b1),
        .beta2 = (float)b2,
        .one_minus_beta2 = (float)(1.0 - b2),
        .eps = (float)o->eps,
        .step_size = (float)((double)lr / (1.0 - pow(b1, (double)t))),
        .bias2_sqrt = (float)sqrt(1.0 - pow(b2, (double)t)),
    };
    be->adam_update(w, g, m, v, n, &a);
}

float trainer_clip_factor(float clip, double norm)
{
    if (clip <= 0.0f)
        return 1.0f;
    double f = (double)clip / (norm + 1e-6);
    return f < 1.0 ? (float)f : 1.0f;
}

double trainer_clip(const trainer_backend_t *be, const trainer_optim_t *o, float *g, size_t n)
{
    if (o->clip_norm <= 0.0f)
        return 0.0;
    double norm = sqrt(be->sumsq(g, n));
    float f = trainer_clip_factor(o->clip_norm, norm);
    if (f != 1.0f)
        be->scale(n, f, g);
    return norm;
}

float trainer_lr_at(const trainer_lr_t *p, long step, long total)
{
    float base = p->base;
    if (step < p->warmup)
        return (float)((double)base * (double)(step + 1) / (double)p->warmup);
    if (p->schedule == TRAINER_LR_CONSTANT)
        return base;
    double progress =
        total > p->warmup ? (double)(step - p->warmup) / (double)(total - p->warmup) : 1.0;
    if (progress < 0.0)
        progress = 0.0;
    if (progress > 1.0)
        progress = 1.0;
    double min = p->min;
    if (p->schedule == TRAINER_LR_LINEAR)
        return (float)(base - (base - min) * progress);
    /* with min 0 this is 0.5 base (1 + cos(pi p)) to the bit, the schedule before floors */
    return (float)(min + 0.5 * (base - min) * (1.0 + cos(3.14159265358979323846 * progress)));
}

dt_status trainer_lr_schedule_parse(trainer_lr_schedule_t *s, const char *text, dt_err_t *err)
{
    if (!strcmp(text, "constant"))
        *s = TRAINER_LR_CONSTANT;
    else if (!strcmp(text, "cosine"))
        *s = TRAINER_LR_COSINE;
    else if (!strcmp(text, "linear"))
        *s = TRAINER_LR_LINEAR;
    else
        return dt_err_input(err,
                            "unknown learning-rate schedule \"%s\" (expected constant, "
                            "cosine or linear)",
                            text);
    return DT_OK;
}

void trainer_learner_init(trainer_learner_t *l, const trainer_backend_t *be,
                          const trainer_model_t *m, const trainer_optim_t *sgd, int max_batch,
                          uint64_t seed)
{
    memset(l, 0, sizeof *l);
    l->be = be;
    l->m = m;
    l->sgd = *sgd;
    trainer_workspace_init(&l->ws, be, m, max_batch);
    size_t bytes = sizeof(float) * m->n_params;
    l->params = be->alloc(bytes);
    l->grads = be->alloc(bytes);
    l->velocity = be->alloc(bytes);
    if (sgd->kind != TRAINER_OPT_SGD)
        l->moment2 = be->alloc(bytes);
    l->batch_idx = dt_malloc(sizeof(uint32_t) * (size_t)max_batch);
    float *init = dt_malloc(bytes);
    trainer_model_init_params(m, init, seed);
    be->upload(l->params, init, bytes);
    free(init);
    trainer_rng_seed(&l->shuffle, seed, TRAINER_STREAM_SHUFFLE);
}

void trainer_learner_free(trainer_learner_t *l)
{
    if (!l->be)
        return;
    trainer_workspace_free(&l->ws);
    l->be->free(l->params);
    l->be->free(l->grads);
    l->be->free(l->velocity);
    if (l->moment2)
        l->be->free(l->moment2);
    free(l->batch_idx);
    free(l->order);
    memset(l, 0, sizeof *l);
}

void trainer_learner_load(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                          int batch)
{
    DT_ASSERT(ds->dim == l->m->in_size && batch >= 1 && batch <= l->ws.max_batch);
    l->be->gather(l->ws.x, l->ws.labels, ds->x, ds->y, idx, batch, ds->dim);
}

double trainer_learner_grad(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                            int batch)
{
    double loss;
    int correct;
    trainer_learner_load(l, ds, idx, batch);
    trainer_model_forward(&l->ws, l->params, batch);
    trainer_model_loss(&l->ws, batch, &loss, &correct);
    trainer_model_backward(&l->ws, l->params, l->grads, batch);
    return loss / batch;
}

void trainer_learner_update(trainer_learner_t *l)
{
    trainer_clip(l->be, &l->sgd, l->grads, l->m->n_params);
    l->updates++;
    trainer_optim_update(l->be, &l->sgd, l->sgd.lr, l->updates, l->params, l->grads, l->velocity,
                         l->moment2, l->m->n_params);
}

double trainer_learner_step(trainer_learner_t *l, const trainer_dataset_t *ds, const uint32_t *idx,
                            int batch)
{
    if (l->lr_total > 0)
        l->sgd.lr = trainer_lr_at(&l->lr, l->lr_steps++, l->lr_total);
    if (l->sgd.momentum != 0.0f || l->sgd.kind != TRAINER_OPT_SGD || l->sgd.clip_norm > 0.0f) {
        double loss = trainer_learner_grad(l, ds, idx, batch);
        if (isfinite(loss))
            trainer_learner_update(l);
        return loss;
    }
    double loss;
    int correct;
    trainer_learner_load(l, ds, idx, batch);
    trainer_model_forward(&l->ws, l->params, batch);
    trainer_model_loss(&l->ws, batch, &loss, &correct);
    loss /= batch;
    if (isfinite(loss))
        trainer_model_backward_sgd(&l->ws, l->params, batch, l->sgd.lr, l->sgd.weight_decay);
    return loss;
}

/* Asks the memory system for the rows of the coming batch, so that they arrive while the
 * current step computes: an epoch visits rows in random order across a set far larger
 * than the caches, and waiting for them costs as much as all non-GEMM work together. */
static void prefetch_rows(const trainer_dataset_t *ds, const uint32_t *idx, size_t count)
{
    size_t bytes = sizeof(float) * ds->dim;
    for (size_t i = 0; i < count; i++) {
        const char *row = (const char *)(ds->x + (size_t)idx[i] * ds->dim);
        for (size_t off = 0; off < bytes; off += 64)
            __builtin_prefetch(row + off, 0, 1);
    }
}

trainer_epoch_stats_t trainer_learner_epoch(trainer_learner_t *l, const trainer_dataset_t *ds,
                                            const uint32_t *subset, size_t n, int batch)
{
    trainer_epoch_stats_t st = {0};
    if (n > l->order_cap) {
        free(l->order);
        l->order = dt_malloc(sizeof(uint32_t) * n);
        l->order_cap = n;
    }
    for (size_t i = 0; i < n; i++)
        l->order[i] = subset ? subset[i] : (uint32_t)i;
    trainer_rng_shuffle_u32(&l->shuffle, l->order, n);
    double loss_sum = 0.0;
    for (size_t off = 0; off < n; off += (size_t)batch) {
        int b = (int)(n - off < (size_t)batch ? n - off : (size_t)batch);
        size_t next = off + (size_t)b;
        if (next < n)
            prefetch_rows(ds, l->order + next, n - next < (size_t)batch ? n - next : (size_t)batch);
        double loss = trainer_learner_step(l, ds, l->order + off, b);
        st.steps++;
        st.samples += (size_t)b;
        loss_sum += loss;
        if (!isfinite(loss)) {
            st.diverged = 1;
            st.mean_loss = loss;
            return st;
        }
    }
    st.mean_loss = st.steps ? loss_sum / (double)st.steps : 0.0;
    return st;
}

trainer_eval_t trainer_evaluate(trainer_learner_t *l, const float *params,
                                const trainer_dataset_t *ds)
{
    return trainer_evaluate_subset(l, params, ds, NULL, ds->n);
}

trainer_eval_t trainer_evaluate_subset(trainer_learner_t *l, const float *params,
                                       const trainer_dataset_t *ds, const uint32_t *idx, size_t n)
{
    trainer_eval_t ev = {0.0, 0.0};
    int max = l->ws.max_batch;
    uint32_t *use = l->batch_idx;
    double loss_sum = 0.0;
    double right = 0.0; /* gpt: next tokens right / seq */
    for (size_t off = 0; off < n; off += (size_t)max) {
        int b = (int)(n - off < (size_t)max ? n - off : (size_t)max);
        for (int i = 0; i < b; i++)
            use[i] = idx ? idx[off + (size_t)i] : (uint32_t)(off + (size_t)i);
        double loss, correct;
        trainer_learner_load(l, ds, use, b);
        trainer_model_forward(&l->ws, params, b);
        trainer_model_score(&l->ws, b, &loss, &correct);
        loss_sum += loss;
        right += correct;
    }
    if (n) {
        ev.loss = loss_sum / (double)n;
        ev.accuracy = right / (double)n;
    }
    return ev;
}
