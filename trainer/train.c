/* The learner: one replica's buffers, its gradient step, its update and epoch loop, and
 * evaluation (see train.h). */
#include "train.h"

#include <math.h>
#include <string.h>

float trainer_lr_at(trainer_lr_schedule_t schedule, float base, double progress)
{
    if (schedule == TRAINER_LR_CONSTANT)
        return base;
    if (progress < 0.0)
        progress = 0.0;
    if (progress > 1.0)
        progress = 1.0;
    return (float)(0.5 * base * (1.0 + cos(3.14159265358979323846 * progress)));
}

dt_status trainer_lr_schedule_parse(trainer_lr_schedule_t *s, const char *text, dt_err_t *err)
{
    if (!strcmp(text, "constant"))
        *s = TRAINER_LR_CONSTANT;
    else if (!strcmp(text, "cosine"))
        *s = TRAINER_LR_COSINE;
    else
        return dt_err_input(err, "unknown learning-rate schedule \"%s\" (expected constant or "
                                 "cosine)",
                            text);
    return DT_OK;
}

void trainer_learner_init(trainer_learner_t *l, const trainer_backend_t *be,
                          const trainer_model_t *m, const trainer_sgd_t *sgd, int max_batch,
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
    free(l->batch_idx);
    free(l->order);
    memset(l, 0, sizeof *l);
}

void trainer_learner_load(trainer_learner_t *l, const trainer_dataset_t *ds,
                          const uint32_t *idx, int batch)
{
    DT_ASSERT(ds->dim == l->m->in_size && batch >= 1 && batch <= l->ws.max_batch);
    l->be->gather(l->ws.x, l->ws.labels, ds->x, ds->y, idx, batch, ds->dim);
}

double trainer_learner_grad(trainer_learner_t *l, const trainer_dataset_t *ds,
                            const uint32_t *idx, int batch)
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
    l->be->sgd_update(l->params, l->grads, l->velocity, l->m->n_params, l->sgd.lr,
                      l->sgd.momentum, l->sgd.weight_decay);
}

double trainer_learner_step(trainer_learner_t *l, const trainer_dataset_t *ds,
                            const uint32_t *idx, int batch)
{
    if (l->sgd.momentum != 0.0f) {
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
                                       const trainer_dataset_t *ds, const uint32_t *idx,
                                       size_t n)
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
