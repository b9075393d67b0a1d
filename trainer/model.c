/* Model layout, initialisation, FLOP counts, and the forward and backward passes over the
 * flat parameter buffer (see model.h). */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

void trainer_model_config_default(trainer_model_config_t *cfg, trainer_arch_t arch)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->arch = arch;
    cfg->in_channels = 1;
    cfg->in_h = 28;
    cfg->in_w = 28;
    cfg->classes = 10;
    cfg->n_hidden = 2;
    cfg->hidden[0] = 256;
    cfg->hidden[1] = 128;
    cfg->conv[0] = 16;
    cfg->conv[1] = 32;
    cfg->kernel = 5;
    cfg->fc = 128;
    cfg->layers = 2;
    cfg->heads = 4;
    cfg->seq = 64;
}

static const char *arch_names[] = {"logreg", "mlp", "cnn", "gpt"};

const char *trainer_arch_name(trainer_arch_t arch)
{
    return arch_names[arch];
}

dt_status trainer_arch_parse(trainer_arch_t *arch, const char *text, dt_err_t *err)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(text, arch_names[i]) == 0) {
            *arch = (trainer_arch_t)i;
            return DT_OK;
        }
    return dt_err_input(err, "unknown model \"%s\" (expected logreg, mlp, cnn or gpt)", text);
}

dt_status trainer_hidden_parse(trainer_model_config_t *cfg, const char *text, dt_err_t *err)
{
    int n = 0, sizes[TRAINER_MAX_HIDDEN];
    if (!*text)
        return dt_err_input(err, "empty hidden sizes (expected e.g. 256,128)");
    const char *p = text;
    while (*p) {
        if (n == TRAINER_MAX_HIDDEN)
            return dt_err_input(err, "too many hidden layers in \"%s\" (at most %d)", text,
                                TRAINER_MAX_HIDDEN);
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > (1L << 20) || (*end && *end != ','))
            return dt_err_input(err,
                                "bad hidden sizes \"%s\" (expected comma-separated integers "
                                "in [1, 1048576], e.g. 256,128)",
                                text);
        sizes[n++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p)
            return dt_err_input(err, "bad hidden sizes \"%s\" (trailing comma)", text);
    }
    memcpy(cfg->hidden, sizes, sizeof(int) * (size_t)n);
    cfg->n_hidden = n;
    return DT_OK;
}

/* Appends a layer whose input is the previous layer's output (or the model input). */
static trainer_layer_t *push_layer(trainer_model_t *m, trainer_layer_kind_t kind)
{
    DT_ASSERT(m->n_layers < TRAINER_MAX_LAYERS);
    trainer_layer_t *l = &m->layers[m->n_layers];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    if (m->n_layers == 0) {
        l->in_c = m->cfg.in_channels;
        l->in_h = m->cfg.in_h;
        l->in_w = m->cfg.in_w;
    } else {
        const trainer_layer_t *p = &m->layers[m->n_layers - 1];
        l->in_c = p->out_c;
        l->in_h = p->out_h;
        l->in_w = p->out_w;
    }
    l->out_c = l->in_c;
    l->out_h = l->in_h;
    l->out_w = l->in_w;
    m->n_layers++;
    return l;
}

static void finish_layer(trainer_model_t *m, trainer_layer_t *l, size_t w_len, size_t b_len)
{
    l->in_size = (size_t)l->in_c * l->in_h * l->in_w;
    l->out_size = (size_t)l->out_c * l->out_h * l->out_w;
    l->w_off = m->n_params;
    l->w_len = w_len;
    l->b_off = l->w_off + w_len;
    l->b_len = b_len;
    m->n_params += w_len + b_len;
}

static void add_dense(trainer_model_t *m, int out)
{
    trainer_layer_t *l = push_layer(m, TRAINER_LAYER_DENSE);
    int in = l->in_c * l->in_h * l->in_w;
    l->in_c = in;
    l->in_h = l->in_w = 1;
    l->out_c = out;
    l->out_h = l->out_w = 1;
    finish_layer(m, l, (size_t)out * in, (size_t)out);
}

static void add_simple(trainer_model_t *m, trainer_layer_kind_t kind, int k)
{
    trainer_layer_t *l = push_layer(m, kind);
    l->k = k;
    if (kind == TRAINER_LAYER_MAXPOOL) {
        l->out_h = l->in_h / k;
        l->out_w = l->in_w / k;
    } else if (kind == TRAINER_LAYER_FLATTEN) {
        l->out_c = l->in_c * l->in_h * l->in_w;
        l->out_h = l->out_w = 1;
    }
    finish_layer(m, l, 0, 0);
}

static void add_conv(trainer_model_t *m, int out_c, int k)
{
    trainer_layer_t *l = push_layer(m, TRAINER_LAYER_CONV);
    l->k = k;
    l->out_c = out_c;
    l->out_h = l->in_h - k + 1;
    l->out_w = l->in_w - k + 1;
    finish_layer(m, l, (size_t)out_c * l->in_c * k * k, (size_t)out_c);
}

dt_status trainer_model_build(trainer_model_t *m, const trainer_model_config_t *cfg, dt_err_t *err)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    if (cfg->arch == TRAINER_ARCH_GPT) { /* its input is a window of tokens, not a shape */
        if (cfg->classes < 2 || cfg->classes > 256)
            return dt_err_input(err, "gpt: vocabulary must be in [2, 256], got %d", cfg->classes);
        return trainer_gpt_build(m, err);
    }
    if (cfg->in_channels < 1 || cfg->in_h < 1 || cfg->in_w < 1)
        return dt_err_input(err, "bad input shape %dx%dx%d", cfg->in_channels, cfg->in_h,
                            cfg->in_w);
    if (cfg->classes < 2 || cfg->classes > 256)
        return dt_err_input(err, "classes must be in [2, 256], got %d", cfg->classes);
    m->in_size = (size_t)cfg->in_channels * cfg->in_h * cfg->in_w;
    m->classes = cfg->classes;

    switch (cfg->arch) {
    case TRAINER_ARCH_LOGREG:
        add_dense(m, cfg->classes);
        break;
    case TRAINER_ARCH_MLP:
        if (cfg->n_hidden < 0 || cfg->n_hidden > TRAINER_MAX_HIDDEN)
            return dt_err_input(err, "mlp: %d hidden layers (expected 0 to %d)", cfg->n_hidden,
                                TRAINER_MAX_HIDDEN);
        for (int i = 0; i < cfg->n_hidden; i++)
            if (cfg->hidden[i] < 1 || cfg->hidden[i] > (1 << 20))
                return dt_err_input(err, "mlp: hidden size %d out of range [1, 1048576]",
                                    cfg->hidden[i]);
        for (int i = 0; i < cfg->n_hidden; i++) {
            add_dense(m, cfg->hidden[i]);
            add_simple(m, TRAINER_LAYER_RELU, 0);
        }
        add_dense(m, cfg->classes);
        break;
    case TRAINER_ARCH_CNN: {
        int k = cfg->kernel;
        if (k < 1 || cfg->conv[0] < 1 || cfg->conv[1] < 1 || cfg->fc < 1)
            return dt_err_input(err, "cnn sizes must be positive (conv %d,%d kernel %d fc %d)",
                                cfg->conv[0], cfg->conv[1], k, cfg->fc);
        /* Each stage: conv (size - k + 1) then pool 2 (must divide evenly). */
        int h = cfg->in_h, w = cfg->in_w;
        for (int s = 0; s < 2; s++) {
            h = h - k + 1;
            w = w - k + 1;
            if (h < 2 || w < 2 || h % 2 || w % 2)
                return dt_err_input(err,
                                    "cnn: input %dx%d does not fit two %dx%d conv + 2x2 pool "
                                    "stages (each conv output must be even and >= 2)",
                                    cfg->in_h, cfg->in_w, k, k);
            h /= 2;
            w /= 2;
        }
        for (int s = 0; s < 2; s++) {
            add_conv(m, cfg->conv[s], k);
            add_simple(m, TRAINER_LAYER_RELU, 0);
            add_simple(m, TRAINER_LAYER_MAXPOOL, 2);
        }
        add_simple(m, TRAINER_LAYER_FLATTEN, 0);
        add_dense(m, cfg->fc);
        add_simple(m, TRAINER_LAYER_RELU, 0);
        add_dense(m, cfg->classes);
        break;
    }
    default:
        return dt_err_input(err, "unknown model architecture %d", (int)cfg->arch);
    }
    return DT_OK;
}

void trainer_model_init_params(const trainer_model_t *m, float *params, uint64_t seed)
{
    if (m->cfg.arch == TRAINER_ARCH_GPT) {
        trainer_gpt_init_params(m, params, seed);
        return;
    }
    trainer_rng_t rng;
    trainer_rng_seed(&rng, seed, TRAINER_STREAM_INIT);
    memset(params, 0, sizeof(float) * m->n_params);
    for (int i = 0; i < m->n_layers; i++) {
        const trainer_layer_t *l = &m->layers[i];
        if (!l->w_len)
            continue;
        size_t fan_in = l->w_len / (size_t)l->out_c;
        double bound = 1.0 / sqrt((double)fan_in);
        for (size_t j = 0; j < l->w_len + l->b_len; j++)
            params[l->w_off + j] = (float)((2.0 * trainer_rng_uniform(&rng) - 1.0) * bound);
    }
}

trainer_flops_t trainer_model_layer_flops(const trainer_model_t *m, int i)
{
    trainer_flops_t f = {0.0, 0.0};
    const trainer_layer_t *l = &m->layers[i];
    double out = (double)l->out_size, in = (double)l->in_size;
    switch (l->kind) {
    case TRAINER_LAYER_DENSE:
    case TRAINER_LAYER_CONV: {
        /* per sample: a GEMM of (out_c) x (positions) x (fan_in) */
        double positions = (double)l->out_h * l->out_w;
        double fan_in = (double)(l->w_len / (size_t)l->out_c);
        double gemm = 2.0 * l->out_c * positions * fan_in;
        f.forward = gemm + out;  /* product, bias */
        f.backward = gemm + out; /* weight gradient, bias gradient */
        if (i > 0)               /* input gradient (+ col2im accumulation for conv) */
            f.backward += gemm + (l->kind == TRAINER_LAYER_CONV ? fan_in * positions : 0);
        break;
    }
    case TRAINER_LAYER_RELU:
        f.forward = out;
        f.backward = out;
        break;
    case TRAINER_LAYER_MAXPOOL:
        f.forward = in;
        f.backward = out;
        break;
    case TRAINER_LAYER_FLATTEN:
        break;
    }
    return f;
}

trainer_flops_t trainer_model_flops(const trainer_model_t *m)
{
    trainer_flops_t f = {5.0 * m->classes, 2.0 * m->classes}; /* the loss */
    if (m->cfg.arch == TRAINER_ARCH_GPT) {
        trainer_gpt_flops(m, &f.forward, &f.backward);
        return f;
    }
    for (int i = 0; i < m->n_layers; i++) {
        trainer_flops_t l = trainer_model_layer_flops(m, i);
        f.forward += l.forward;
        f.backward += l.backward;
    }
    return f;
}

size_t trainer_model_activation_floats(const trainer_model_t *m, int first, int last)
{
    size_t n = 0;
    if (m->cfg.arch == TRAINER_ARCH_GPT)
        return trainer_gpt_activation_floats(m); /* no layers: the whole model */
    for (int i = first; i < last; i++) {
        const trainer_layer_t *l = &m->layers[i];
        n += l->out_size;
        if (l->kind == TRAINER_LAYER_CONV)
            n += (size_t)l->in_c * l->k * l->k * l->out_h * l->out_w;
        if (l->kind == TRAINER_LAYER_MAXPOOL)
            n += l->out_size;
    }
    return n;
}

double trainer_sgd_flops(size_t n, float momentum, float weight_decay)
{
    double per = 2.0; /* w -= lr * g */
    if (weight_decay != 0.0f)
        per += 2.0;
    if (momentum != 0.0f)
        per += 2.0;
    return per * (double)n;
}

/* Samples per slice of a conv layer on a backend with conv_slice_bytes (backend.h): as many as
 * keep a slice's col within the budget, at least 1. */
static int conv_slice(const trainer_backend_t *be, const trainer_layer_t *l, int batch)
{
    size_t per = sizeof(float) * (size_t)l->in_c * l->k * l->k * l->out_h * l->out_w;
    size_t s = be->conv_slice_bytes / per;
    return s < 1 ? 1 : s > (size_t)batch ? batch : (int)s;
}

void trainer_workspace_init(trainer_workspace_t *ws, const trainer_backend_t *be,
                            const trainer_model_t *m, int max_batch)
{
    trainer_workspace_init_group(ws, be, m, max_batch, 1);
}

void trainer_workspace_init_group(trainer_workspace_t *ws, const trainer_backend_t *be,
                                  const trainer_model_t *m, int max_batch, int max_replicas)
{
    DT_ASSERT(max_batch >= 1 && max_replicas >= 1);
    memset(ws, 0, sizeof *ws);
    ws->be = be;
    ws->m = m;
    ws->max_batch = max_batch;
    ws->max_replicas = max_replicas;
    /* every activation buffer holds max_replicas blocks of max_batch samples */
    size_t B = (size_t)max_batch * (size_t)max_replicas;
    ws->x = be->alloc(sizeof(float) * B * m->in_size * 2); /* room for a permuted copy */
    ws->labels = be->alloc(B);
    if (m->cfg.arch == TRAINER_ARCH_GPT) {
        DT_ASSERT(max_replicas == 1); /* replicas side by side: not for gpt yet */
        DT_ASSERT(!trainer_gpt_check_backend(be, &(dt_err_t){{0}}));
        trainer_gpt_workspace_init(ws, max_batch);
        return;
    }
    size_t dcol = 0, dbias = 1, dwt = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const trainer_layer_t *l = &m->layers[i];
        if (l->b_len > dbias)
            dbias = l->b_len;
        ws->act[i] = be->alloc(sizeof(float) * B * l->out_size);
        ws->dact[i] = be->alloc(sizeof(float) * B * l->out_size);
        if (l->kind == TRAINER_LAYER_CONV) {
            /* sliced, col holds one slice of one replica at a time */
            size_t samples = be->conv_slice_bytes ? (size_t)conv_slice(be, l, max_batch) : B;
            size_t cols = (size_t)l->in_c * l->k * l->k * samples * l->out_h * l->out_w;
            ws->col[i] = be->alloc(sizeof(float) * cols);
            if (i > 0 && cols > dcol)
                dcol = cols;
            if (l->w_len > dwt)
                dwt = l->w_len;
        }
        if (l->kind == TRAINER_LAYER_MAXPOOL)
            ws->argmax[i] = be->alloc(sizeof(int32_t) * B * l->out_size);
    }
    if (dcol)
        ws->dcol = be->alloc(sizeof(float) * dcol);
    ws->dbias = be->alloc(sizeof(float) * dbias);
    if (dwt && be->conv_slice_bytes) /* g^T, then g */
        ws->dwt = be->alloc(sizeof(float) * 2 * dwt);
}

void trainer_workspace_free(trainer_workspace_t *ws)
{
    const trainer_backend_t *be = ws->be;
    if (!be)
        return;
    be->free(ws->x);
    be->free(ws->labels);
    trainer_gpt_workspace_free(ws);
    for (int i = 0; i < ws->m->n_layers; i++) {
        be->free(ws->act[i]);
        be->free(ws->dact[i]);
        be->free(ws->col[i]);
        be->free(ws->argmax[i]);
    }
    be->free(ws->dcol);
    be->free(ws->dbias);
    be->free(ws->dwt);
    memset(ws, 0, sizeof *ws);
}

void trainer_workspace_load(trainer_workspace_t *ws, const float *x, const uint8_t *labels,
                            int batch)
{
    DT_ASSERT(batch >= 1 && batch <= ws->max_batch * ws->max_replicas);
    ws->be->upload(ws->x, x, sizeof(float) * (size_t)batch * ws->m->in_size);
    ws->be->upload(ws->labels, labels, (size_t)batch);
}

/* The input of layer i for the current batch. */
static const float *layer_input(const trainer_workspace_t *ws, int i)
{
    return i == 0 ? ws->x : ws->act[i - 1];
}

/* The input of conv layer i as its forward pass read it: for a first layer of several
 * channels, the permuted copy of the batch (channels, batch, h, w) that forward_layers made
 * behind x. */
static const float *conv_input(const trainer_workspace_t *ws, int i)
{
    if (i == 0 && ws->m->layers[0].in_c > 1)
        return ws->x + (size_t)ws->max_batch * ws->max_replicas * ws->m->in_size;
    return layer_input(ws, i);
}

/* A ReLU followed by a max-pool, both in [first, last), runs in the other order: max-pool of
 * the ReLU's input, then the ReLU on the pooled values (a quarter as many with 2 x 2 windows),
 * and backward the ReLU's mask on the pooled gradient, then the pool's scatter straight into
 * the ReLU input's gradient. For finite values the two orders give the same bits: a ReLU
 * keeps the order of positive values, a window whose maximum is not positive gives 0 and a
 * zero gradient either way, and the pool's gradient is nonzero only at winners, where its
 * mask is the pooled value's (a NaN, which the ReLU would have zeroed, may now win a window).
 * The ReLU's own act and dact are left unwritten: nothing reads them. */
static int relu_then_pool(const trainer_model_t *m, int i, int first, int last)
{
    return i >= first && i + 1 < last && m->layers[i].kind == TRAINER_LAYER_RELU &&
           m->layers[i + 1].kind == TRAINER_LAYER_MAXPOOL;
}

/* ---- convolutions slice by slice (backends with conv_slice_bytes, backend.h) ----------- */

/* col (in_c k k, m oh ow) of samples [b0, b0 + m) of x (in_c, batch, h, w): one im2col per
 * input channel, whose planes for those samples lie side by side. */
static void conv_slice_im2col(const trainer_backend_t *be, const trainer_layer_t *l, float *col,
                              const float *x, int batch, int b0, int m)
{
    size_t rows = (size_t)l->k * l->k * m * l->out_h * l->out_w;
    size_t plane = (size_t)l->in_h * l->in_w;
    for (int c = 0; c < l->in_c; c++)
        be->im2col(col + c * rows, x + ((size_t)c * batch + b0) * plane, 1, m, l->in_h, l->in_w,
                   l->k);
}

/* y (out_c, batch oh ow) = w (out_c, kk) col, slice by slice; col is scratch. */
static void conv_forward_sliced(const trainer_backend_t *be, const trainer_layer_t *l, float *col,
                                const float *x, const float *w, float *y, int batch)
{
    int P = l->out_h * l->out_w, n = batch * P, kk = l->in_c * l->k * l->k;
    int s = conv_slice(be, l, batch);
    for (int b0 = 0; b0 < batch; b0 += s) {
        int m = batch - b0 < s ? batch - b0 : s;
        conv_slice_im2col(be, l, col, x, batch, b0, m);
        be->gemm(0, 0, l->out_c, m * P, kk, 1.0f, w, kk, col, m * P, 0.0f, y + (size_t)b0 * P, n);
    }
}

/* dwt (kk, out_c) = col dy^T, the weight gradient transposed, summed over the slices, and
 * when dx is not NULL dx = col2im(w^T dy), slice by slice, each slice's col computed again;
 * col and dcol are scratch. */
static void conv_backward_sliced(const trainer_backend_t *be, const trainer_layer_t *l, float *col,
                                 float *dcol, const float *x, const float *w, const float *dy,
                                 float *dx, float *dwt, int batch)
{
    int P = l->out_h * l->out_w, n = batch * P, kk = l->in_c * l->k * l->k;
    size_t rows = (size_t)l->k * l->k, plane = (size_t)l->in_h * l->in_w;
    int s = conv_slice(be, l, batch);
    for (int b0 = 0; b0 < batch; b0 += s) {
        int m = batch - b0 < s ? batch - b0 : s;
        const float *dys = dy + (size_t)b0 * P;
        conv_slice_im2col(be, l, col, x, batch, b0, m);
        be->gemm(0, 1, kk, l->out_c, m * P, 1.0f, col, m * P, dys, n, b0 ? 1.0f : 0.0f, dwt,
                 l->out_c);
        if (!dx)
            continue;
        be->gemm(1, 0, kk, m * P, l->out_c, 1.0f, w, kk, dys, n, 0.0f, dcol, m * P);
        for (int c = 0; c < l->in_c; c++)
            be->col2im(dx + ((size_t)c * batch + b0) * plane, dcol + c * rows * m * P, 1, m,
                       l->in_h, l->in_w, l->k);
    }
}

/* The passes below run R = count replicas at once: every activation buffer holds R
 * consecutive blocks (the block of one replica is exactly its single-model layout), replica
 * r's parameters start at params + r * stride, and every op is the backend's batched form
 * (R launches become one). R = 1 is the single model. */
/* Layers [first, last) of R replicas; layer first's input is act[first - 1] (the input
 * batch for first = 0). */
static void forward_layers(trainer_workspace_t *ws, const float *params, size_t stride, int count,
                           int batch, int first, int last)
{
    const trainer_backend_t *be = ws->be;
    const trainer_model_t *m = ws->m;
    DT_ASSERT(count >= 1 && count <= ws->max_replicas && batch >= 1 && batch <= ws->max_batch);
    DT_ASSERT(first >= 0 && first < last && last <= m->n_layers);
    size_t R = (size_t)count, B = (size_t)batch;
    const float *in_first = ws->x;
    if (first == 0 && m->layers[0].kind == TRAINER_LAYER_CONV && m->layers[0].in_c > 1) {
        /* (batch, c, hw) -> (c, batch, hw): the conv part's layout */
        float *xc = ws->x + (size_t)ws->max_batch * ws->max_replicas * m->in_size;
        be->permute_batched(xc, ws->x, count, batch, m->layers[0].in_c,
                            m->layers[0].in_h * m->layers[0].in_w);
        in_first = xc;
    }
    for (int i = first; i < last; i++) {
        const trainer_layer_t *l = &m->layers[i];
        const float *x = i == 0 ? in_first : ws->act[i - 1];
        float *y = ws->act[i];
        const float *w = params + l->w_off, *b = params + l->b_off;
        switch (l->kind) {
        case TRAINER_LAYER_DENSE: /* y (B, out) = x (B, in) w^T + b */
            be->gemm_batched(0, 1, batch, l->out_c, l->in_c, 1.0f, x, l->in_c, B * l->in_c, w,
                             l->in_c, stride, 0.0f, y, l->out_c, B * l->out_c, count);
            be->bias_add_batched(y, b, stride, count, batch, l->out_c, 1);
            break;
        case TRAINER_LAYER_CONV: { /* y (out_c, B*oh*ow) = w (out_c, in_c*k*k) col */
            int n = batch * l->out_h * l->out_w, kk = l->in_c * l->k * l->k;
            if (be->conv_slice_bytes) {
                size_t xs = (size_t)l->in_c * batch * l->in_h * l->in_w;
                for (int r = 0; r < count; r++)
                    conv_forward_sliced(be, l, ws->col[i], x + r * xs, w + r * stride,
                                        y + (size_t)r * l->out_c * n, batch);
            } else {
                /* the R input blocks (in_c, B, h, w) are one (R*in_c, B, h, w) */
                be->im2col(ws->col[i], x, l->in_c * count, batch, l->in_h, l->in_w, l->k);
                be->gemm_batched(0, 0, l->out_c, n, kk, 1.0f, w, kk, stride, ws->col[i], n,
                                 (size_t)kk * n, 0.0f, y, n, (size_t)l->out_c * n, count);
            }
            be->bias_add_batched(y, b, stride, count, 1, l->out_c, n);
            break;
        }
        case TRAINER_LAYER_RELU:
            if (relu_then_pool(m, i, first, last)) {
                const trainer_layer_t *p = &m->layers[i + 1];
                be->maxpool_forward(ws->act[i + 1], ws->argmax[i + 1], x, p->in_c * batch * count,
                                    p->in_h, p->in_w, p->k);
                be->relu_forward(ws->act[i + 1], ws->act[i + 1], R * B * p->out_size);
                i++; /* the pool is done */
                break;
            }
            be->relu_forward(y, x, R * B * l->out_size);
            break;
        case TRAINER_LAYER_MAXPOOL:
            be->maxpool_forward(y, ws->argmax[i], x, l->in_c * batch * count, l->in_h, l->in_w,
                                l->k);
            break;
        case TRAINER_LAYER_FLATTEN: /* (c, B, hw) -> (B, c*hw) */
            be->permute_batched(y, x, count, l->in_c, batch, l->in_h * l->in_w);
            break;
        }
    }
}

void trainer_model_forward_group(trainer_workspace_t *ws, const float *params, size_t stride,
                                 int count, int batch)
{
    if (ws->gpt) {
        DT_ASSERT(count == 1);
        trainer_gpt_forward(ws, params, batch);
        return;
    }
    forward_layers(ws, params, stride, count, batch, 0, ws->m->n_layers);
}

void trainer_model_forward(trainer_workspace_t *ws, const float *params, int batch)
{
    if (ws->gpt) {
        trainer_gpt_forward(ws, params, batch);
        return;
    }
    forward_layers(ws, params, 0, 1, batch, 0, ws->m->n_layers);
}

void trainer_model_forward_range(trainer_workspace_t *ws, const float *params, int batch, int first,
                                 int last)
{
    if (ws->gpt) {
        trainer_gpt_forward_range(ws, params, batch, first, last);
        return;
    }
    forward_layers(ws, params, 0, 1, batch, first, last);
}

void trainer_model_loss_group(trainer_workspace_t *ws, int count, int batch, double *loss_sum,
                              int *correct)
{
    if (ws->gpt) {
        double right;
        DT_ASSERT(count == 1);
        trainer_gpt_loss(ws, batch, 1, loss_sum, &right);
        *correct = (int)right; /* whole samples' worth of right tokens */
        return;
    }
    int last = ws->m->n_layers - 1;
    ws->be->softmax_xent_batched(ws->dact[last], ws->act[last], ws->labels, count, batch,
                                 ws->m->classes, 1.0f / (float)batch, loss_sum, correct);
}

void trainer_model_loss(trainer_workspace_t *ws, int batch, double *loss_sum, int *correct)
{
    trainer_model_loss_group(ws, 1, batch, loss_sum, correct);
}

void trainer_model_score(trainer_workspace_t *ws, int batch, double *loss_sum, double *correct)
{
    if (ws->gpt) {
        trainer_gpt_loss(ws, batch, 0, loss_sum, correct);
        return;
    }
    int right;
    ws->be->softmax_xent(NULL, ws->act[ws->m->n_layers - 1], ws->labels, batch, ws->m->classes,
                         1.0f, loss_sum, &right);
    *correct = right;
}

dt_status trainer_model_check_backend(const trainer_model_t *m, const trainer_backend_t *be,
                                      dt_err_t *err)
{
    return m->cfg.arch == TRAINER_ARCH_GPT ? trainer_gpt_check_backend(be, err) : DT_OK;
}

/* w' (out_c, kk) = beta w' + alpha g, from g^T (kk, out_c) in gt; g is scratch for g when it
 * cannot be written straight into w. */
static void weight_grad_transposed(const trainer_backend_t *be, float *w, const float *gt, float *g,
                                   int out_c, int kk, float alpha, float beta)
{
    size_t n = (size_t)out_c * kk;
    if (alpha == 1.0f && beta == 0.0f) {
        be->permute(w, gt, kk, out_c, 1);
        return;
    }
    /* the fused update, in the order OpenBLAS applies it: w = beta w, then w += alpha g */
    be->permute(g, gt, kk, out_c, 1);
    if (beta != 1.0f)
        be->scale(n, beta, w);
    be->axpy(n, alpha, g, w);
}

/* Backward over all layers. Each parameter tensor p gets out[p] = beta * out[p] + alpha * grad:
 * (alpha 1, beta 0, out = grads) is the plain gradient; (alpha -lr, beta 1 - lr*wd,
 * out = params) is the fused SGD step. Input gradients are computed before a layer's
 * weights are written, so they always use the weights of the forward pass. */
static void backward(trainer_workspace_t *ws, const float *params, float *out, size_t stride,
                     int count, int batch, float alpha, float beta, int first, int last)
{
    const trainer_backend_t *be = ws->be;
    const trainer_model_t *m = ws->m;
    int plain = alpha == 1.0f && beta == 0.0f;
    DT_ASSERT(count >= 1 && count <= ws->max_replicas && batch >= 1 && batch <= ws->max_batch);
    DT_ASSERT(plain || count == 1); /* the fused update's bias scratch holds one replica */
    size_t R = (size_t)count, B = (size_t)batch;
    DT_ASSERT(first >= 0 && first < last && last <= m->n_layers);
    for (int i = last - 1; i >= first; i--) {
        const trainer_layer_t *l = &m->layers[i];
        const float *dy = ws->dact[i];
        float *dx = i > 0 ? ws->dact[i - 1] : NULL;
        const float *w = params + l->w_off;
        float *ow = out + l->w_off, *ob = out + l->b_off;
        switch (l->kind) {
        case TRAINER_LAYER_DENSE: {
            const float *x = layer_input(ws, i);
            if (dx) /* dx (B, in) = dy (B, out) w (out, in) */
                be->gemm_batched(0, 0, batch, l->in_c, l->out_c, 1.0f, dy, l->out_c, B * l->out_c,
                                 w, l->in_c, stride, 0.0f, dx, l->in_c, B * l->in_c, count);
            /* w' (out, in) = beta w' + alpha dy^T (out, B) x (B, in) */
            be->gemm_batched(1, 0, l->out_c, l->in_c, batch, alpha, dy, l->out_c, B * l->out_c, x,
                             l->in_c, B * l->in_c, beta, ow, l->in_c, stride, count);
            be->bias_grad_batched(plain ? ob : ws->dbias, stride, dy, count, batch, l->out_c, 1);
            break;
        }
        case TRAINER_LAYER_CONV: {
            int n = batch * l->out_h * l->out_w, kk = l->in_c * l->k * l->k;
            size_t cols = (size_t)kk * n, outs = (size_t)l->out_c * n, wl = (size_t)l->w_len;
            if (be->conv_slice_bytes) {
                /* The weight gradient is computed transposed, (kk, out_c) = col (kk, n) dy^T
                 * (n, out_c), then turned into w's layout: OpenBLAS runs this shape 1.1 to 1.4
                 * times faster than w (out_c, kk) = dy col^T (the cnn's conv2: 1,020 against
                 * 1,390 us). */
                size_t xs = (size_t)l->in_c * batch * l->in_h * l->in_w;
                const float *x = conv_input(ws, i);
                for (int r = 0; r < count; r++) {
                    conv_backward_sliced(be, l, ws->col[i], ws->dcol, x + r * xs, w + r * stride,
                                         dy + r * outs, dx ? dx + r * xs : NULL, ws->dwt, batch);
                    weight_grad_transposed(be, ow + r * stride, ws->dwt, ws->dwt + wl, l->out_c, kk,
                                           alpha, beta);
                }
            } else {
                if (dx) { /* dcol (kk, n) = w^T (kk, out_c) dy (out_c, n), then col2im */
                    be->gemm_batched(1, 0, kk, n, l->out_c, 1.0f, w, kk, stride, dy, n, outs, 0.0f,
                                     ws->dcol, n, cols, count);
                    be->col2im(dx, ws->dcol, l->in_c * count, batch, l->in_h, l->in_w, l->k);
                }
                /* w' (out_c, kk) = beta w' + alpha dy (out_c, n) col^T (n, kk) */
                be->gemm_batched(0, 1, l->out_c, kk, n, alpha, dy, n, outs, ws->col[i], n, cols,
                                 beta, ow, kk, stride, count);
            }
            be->bias_grad_batched(plain ? ob : ws->dbias, stride, dy, count, 1, l->out_c, n);
            break;
        }
        case TRAINER_LAYER_RELU:
            if (dx)
                be->relu_backward(dx, dy, ws->act[i], R * B * l->out_size);
            break;
        case TRAINER_LAYER_MAXPOOL:
            if (i > 1 && relu_then_pool(m, i - 1, first, last)) {
                /* dact[i - 1], the ReLU's unused gradient, holds the masked pooled one */
                be->relu_backward(ws->dact[i - 1], dy, ws->act[i], R * B * l->out_size);
                be->maxpool_backward(ws->dact[i - 2], ws->dact[i - 1], ws->argmax[i],
                                     l->in_c * batch * count, l->in_h, l->in_w, l->k);
                i--; /* the ReLU is done */
                break;
            }
            if (dx)
                be->maxpool_backward(dx, dy, ws->argmax[i], l->in_c * batch * count, l->in_h,
                                     l->in_w, l->k);
            break;
        case TRAINER_LAYER_FLATTEN: /* (B, c*hw) -> (c, B, hw) */
            if (dx)
                be->permute_batched(dx, dy, count, batch, l->in_c, l->in_h * l->in_w);
            break;
        }
        if (l->b_len && !plain) {
            if (beta != 1.0f)
                be->scale(l->b_len, beta, ob);
            be->axpy(l->b_len, alpha, ws->dbias, ob);
        }
    }
}

void trainer_model_backward_group(trainer_workspace_t *ws, const float *params, float *grads,
                                  size_t stride, int count, int batch)
{
    if (ws->gpt) {
        DT_ASSERT(count == 1);
        trainer_gpt_backward(ws, params, grads, batch);
        return;
    }
    backward(ws, params, grads, stride, count, batch, 1.0f, 0.0f, 0, ws->m->n_layers);
}

void trainer_model_backward(trainer_workspace_t *ws, const float *params, float *grads, int batch)
{
    if (ws->gpt) {
        trainer_gpt_backward(ws, params, grads, batch);
        return;
    }
    backward(ws, params, grads, 0, 1, batch, 1.0f, 0.0f, 0, ws->m->n_layers);
}

void trainer_model_backward_range(trainer_workspace_t *ws, const float *params, float *grads,
                                  int batch, int first, int last, int accumulate)
{
    if (ws->gpt) {
        trainer_gpt_backward_range(ws, params, grads, batch, first, last, accumulate);
        return;
    }
    backward(ws, params, grads, 0, 1, batch, 1.0f, accumulate ? 1.0f : 0.0f, first, last);
}

const float *trainer_model_range_output(const trainer_workspace_t *ws, int i)
{
    return ws->gpt ? trainer_gpt_layer_output(ws, i) : ws->act[i];
}

const float *trainer_model_range_grad(const trainer_workspace_t *ws, int i)
{
    return ws->gpt ? trainer_gpt_layer_grad(ws, i) : ws->dact[i];
}

void trainer_model_backward_sgd(trainer_workspace_t *ws, float *params, int batch, float lr,
                                float weight_decay)
{
    if (ws->gpt) {
        trainer_gpt_backward_sgd(ws, params, batch, lr, weight_decay);
        return;
    }
    backward(ws, params, params, 0, 1, batch, -lr, 1.0f - lr * weight_decay, 0, ws->m->n_layers);
}
