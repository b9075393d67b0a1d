/* Less communication on the wire (see compress.h). */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

enum { CODEC_STREAM = 105 };

int sim_codec_on(const sim_run_t *run)
{
    return run->sc->compression.kind != TRAINER_CODEC_NONE;
}

/* Kept (as a mark, nothing to free) where the strategy's all-reduces carry the codec. */
static const char in_allreduce_key;

void sim_codec_in_allreduce(sim_run_t *run)
{
    if (!sim_run_kept(run, &in_allreduce_key))
        sim_run_keep(run, &in_allreduce_key, (void *)&in_allreduce_key, NULL);
}

int sim_codec_wire_fp16(const sim_run_t *run)
{
    return run->sc->compression.kind == TRAINER_CODEC_FP16 &&
           sim_run_kept(run, &in_allreduce_key) != NULL;
}

/* The CPU backend's dev pointers are host memory: codecs work on them directly. */
static int host_backend(const sim_run_t *run)
{
    return !strcmp(run->be->name, "cpu");
}

static void codec_node_free(sim_run_t *run, void *ctx);

sim_codec_node_t *sim_codec_node(sim_run_t *run, sim_node_t *node, size_t bytes)
{
    sim_codec_node_t *c = node->codec;
    if (!c) {
        size_t n = run->n_params ? run->n_params : 1;
        c = dt_calloc(1, sizeof *c);
        if (!run->timing_only) { /* a timing-only run moves sizes, not vectors */
            c->x = dt_malloc(sizeof(float) * n);
            c->work = dt_malloc(sizeof(float) * n);
            if (!host_backend(run))
                c->dev = run->be->alloc(sizeof(float) * n);
        }
        c->lens = dt_calloc((size_t)run->n_workers, sizeof(size_t));
        trainer_rng_seed(
            &c->rng, run->sc->seed ^ ((uint64_t)(node->rank + 1) << 40) ^ (uint64_t)(node->role[0]),
            CODEC_STREAM);
        node->codec = c;
        sim_run_on_free(run, codec_node_free, node);
    }
    if (bytes > c->packed_cap && !run->timing_only) {
        free(c->packed);
        c->packed = dt_malloc(bytes);
        c->packed_cap = bytes;
    }
    return c;
}

static void codec_node_free(sim_run_t *run, void *ctx)
{
    sim_node_t *node = ctx;
    sim_codec_node_t *c = node->codec;
    if (!c)
        return;
    free(c->x);
    free(c->work);
    free(c->residual);
    free(c->u);
    if (c->dev)
        run->be->free(c->dev);
    free(c->packed);
    free(c->lens);
    free(c);
    node->codec = NULL;
}

size_t sim_codec_encode(sim_run_t *run, sim_node_t *node, const float *v, size_t off, size_t len,
                        float *residual, uint8_t *out)
{
    const trainer_codec_t *codec = &run->sc->compression;
    if (run->timing_only)
        return trainer_codec_bytes(codec, len);
    double w0 = dt_wall_seconds();
    sim_codec_node_t *c = sim_codec_node(run, node, 0);
    float *x = c->x + off;
    run->be->download(x, v + off, sizeof(float) * len);
    float m = run->sc->sgd.momentum;
    int mc = residual && run->momentum_correction;
    if (mc) { /* the sender's own momentum: u = m u + g, and u is what it accumulates */
        if (!c->u)
            c->u = dt_calloc(run->n_params ? run->n_params : 1, sizeof(float));
        for (size_t i = 0; i < len; i++) {
            c->u[off + i] = m * c->u[off + i] + x[i];
            x[i] = c->u[off + i];
        }
    }
    if (residual)
        for (size_t i = 0; i < len; i++)
            x[i] += residual[off + i];
    size_t bytes = trainer_codec_encode(codec, x, len, out, &c->rng, c->work);
    if (residual) { /* what was lost: x - decode(out) */
        memcpy(residual + off, x, sizeof(float) * len);
        trainer_codec_decode_add(codec, out, len, -1.0f, residual + off);
    }
    if (mc) { /* momentum factor masking: what was sent leaves the local momentum */
        memset(c->work + off, 0, sizeof(float) * len);
        trainer_codec_decode_add(codec, out, len, 1.0f, c->work + off);
        for (size_t i = 0; i < len; i++)
            if (c->work[off + i] != 0.0f)
                c->u[off + i] = 0.0f;
    }
    /* encoding is real work of the sender: a pass over the vector (two with feedback) */
    sim_charge(run, node, (residual ? 3.0 : 1.0) * (double)len, dt_wall_seconds() - w0);
    return bytes;
}

sim_msg_t *sim_codec_msg(sim_run_t *run, sim_node_t *node, const float *v, size_t off, size_t len,
                         float *residual, uint8_t *out, long step)
{
    size_t bytes = sim_codec_encode(run, node, v, off, len, residual, out);
    sim_msg_t *m = sim_msg_next(node);
    m->offset = off;
    m->n = len;
    m->packed = out;
    m->bytes = (double)bytes;
    m->step = step;
    return m;
}

void sim_msg_add(sim_run_t *run, sim_node_t *self, const sim_msg_t *m, float *dst, float alpha)
{
    if (!m->packed) {
        run->be->axpy(m->n, alpha, m->data, dst + m->offset);
        return;
    }
    if (run->timing_only)
        return;
    const trainer_codec_t *codec = &run->sc->compression;
    if (host_backend(run)) {
        trainer_codec_decode_add(codec, m->packed, m->n, alpha, dst + m->offset);
        return;
    }
    sim_codec_node_t *c = sim_codec_node(run, self, 0);
    memset(c->x, 0, sizeof(float) * m->n);
    trainer_codec_decode_add(codec, m->packed, m->n, 1.0f, c->x);
    run->be->upload(c->dev, c->x, sizeof(float) * m->n);
    run->be->axpy(m->n, alpha, c->dev, dst + m->offset);
}

void sim_codec_wire(sim_run_t *run, sim_node_t *self, float *buf, sim_msg_t *m)
{
    if (!sim_codec_wire_fp16(run))
        return;
    m->bytes = 2.0 * (double)m->n;
    if (run->timing_only || m->n == 0)
        return;
    float *x = buf + m->offset;
    if (host_backend(run)) {
        for (size_t i = 0; i < m->n; i++)
            x[i] = trainer_f16_to_f32(trainer_f32_to_f16(x[i]));
        return;
    }
    sim_codec_node_t *c = sim_codec_node(run, self, 0);
    run->be->download(c->x, x, sizeof(float) * m->n);
    for (size_t i = 0; i < m->n; i++)
        c->x[i] = trainer_f16_to_f32(trainer_f32_to_f16(c->x[i]));
    run->be->upload(x, c->x, sizeof(float) * m->n);
}
