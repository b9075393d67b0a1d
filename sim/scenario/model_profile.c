/* Model profiles (see model_profile.h). */
#include "model_profile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "profiles.h" /* generated: builtin_profiles[] */

#define N_BUILTIN (sizeof builtin_profiles / sizeof builtin_profiles[0])

const char *sim_model_profile_builtin(size_t i)
{
    return i < N_BUILTIN ? builtin_profiles[i].name : NULL;
}

double sim_model_profile_tokens(const sim_model_profile_t *p)
{
    for (const char *c = p->sample; *c; c++) {
        if (!isdigit((unsigned char)*c) || (c > p->sample && isalnum((unsigned char)c[-1])))
            continue;
        char *end;
        long n = strtol(c, &end, 10);
        if (n > 0 && (!strncmp(end, " tokens", 7) || !strncmp(end, " token", 6)))
            return (double)n;
        c = end - 1;
    }
    return 0;
}

int sim_model_profile_is_file(const char *spec)
{
    size_t n = strlen(spec);
    return strchr(spec, '/') || (n > 4 && !strcmp(spec + n - 4, ".ini"));
}

typedef struct fwd_line {
    char name[64];
    double flops, outputs, cut;
    int line; /* in the file, for the whole-file checks' errors */
} fwd_line_t;

typedef struct tp_line {
    char name[64];
    sim_split_t split;
    double reduce;
    int line;
} tp_line_t;

typedef struct reader {
    sim_model_profile_t *p;
    int cap;
    fwd_line_t *fwd; /* [forward], file order; matched to [backward] by check() */
    int n_fwd, fwd_cap;
    tp_line_t *tp; /* [tensor], file order; matched by name by check_tensor() */
    int n_tp, tp_cap, has_tensor;
    int has_params, has_forward, has_backward;
    int *index, index_cap; /* the layers by name: open addressing, layer + 1 (0: empty),
                              at most half full (GPT-3's 1,000 layers: a scan each was
                              most of a load, and dtsim plan loads a profile per layout) */
    char bad[400];         /* the first error, without its line */
    const char *next;      /* the text not yet handed to inih (line_reader) */
    int line;              /* the line inih handles now, 1-based */
    int bad_line;          /* the line of the first error; 0: none yet */
} reader_t;

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

/* The layer named name, or -1. */
static int layer_find(const reader_t *r, const char *name)
{
    if (!r->index_cap)
        return -1;
    for (size_t h = name_hash(name);; h++) {
        int i = r->index[h & (size_t)(r->index_cap - 1)] - 1;
        if (i < 0 || !strcmp(r->p->layers[i].name, name))
            return i;
    }
}

/* Puts layer i (its name new) in the index, which grows to stay at most half full. */
static void layer_index(reader_t *r, int i)
{
    if (2 * (r->p->n_layers + 1) > r->index_cap) {
        free(r->index);
        r->index_cap = r->index_cap ? 2 * r->index_cap : 256;
        r->index = calloc((size_t)r->index_cap, sizeof *r->index);
        DT_CHECK(r->index, "out of memory reading a model profile");
        for (int k = 0; k < r->p->n_layers; k++)
            if (k != i)
                layer_index(r, k);
    }
    size_t h = name_hash(r->p->layers[i].name);
    while (r->index[h & (size_t)(r->index_cap - 1)])
        h++;
    r->index[h & (size_t)(r->index_cap - 1)] = i + 1;
}

/* A plain non-negative number ("8.2e9"); integers for element counts. */
static int number(const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    if (end == v || *end || errno || !isfinite(x) || x < 0)
        return -1;
    *out = x;
    return 0;
}

static int text(reader_t *r, char *dst, size_t cap, const char *key, const char *v)
{
    if (strlen(v) >= cap) {
        snprintf(r->bad, sizeof r->bad, "profile.%s: longer than %zu characters", key, cap - 1);
        return 0;
    }
    strcpy(dst, v);
    return 1;
}

static int profile_key(reader_t *r, const char *name, const char *v)
{
    sim_model_profile_t *p = r->p;
    double x;
    if (!strcmp(name, "name"))
        return text(r, p->name, sizeof p->name, name, v);
    if (!strcmp(name, "sample"))
        return text(r, p->sample, sizeof p->sample, name, v);
    if (!strcmp(name, "source"))
        return text(r, p->source, sizeof p->source, name, v);
    int which = !strcmp(name, "params")           ? 0
                : !strcmp(name, "forward_flops")  ? 1
                : !strcmp(name, "backward_flops") ? 2
                                                  : -1;
    if (which < 0) {
        snprintf(r->bad, sizeof r->bad,
                 "profile.%s: unknown key (expected name, sample, "
                 "source, params, forward_flops, backward_flops)",
                 name);
        return 0;
    }
    if (number(v, &x) || (which == 0 && (x != floor(x) || x < 1 || x > 1e13))) {
        snprintf(r->bad, sizeof r->bad, "profile.%s: \"%s\" is not a %s", name, v,
                 which == 0 ? "parameter count (a whole number >= 1)"
                            : "FLOP count (a plain number >= 0, e.g. 8.2e9)");
        return 0;
    }
    if (which == 0) {
        p->params = (size_t)x;
        r->has_params = 1;
    } else if (which == 1) {
        p->forward_flops = x;
        r->has_forward = 1;
    } else {
        p->backward_flops = x;
        r->has_backward = 1;
    }
    return 1;
}

static int layer_line(reader_t *r, const char *name, const char *v)
{
    sim_model_profile_t *p = r->p;
    char a[64], b[64], extra[2];
    double params, flops;
    if (sscanf(v, "%63s %63s %1s", a, b, extra) != 2 || number(a, &params) || number(b, &flops) ||
        params != floor(params) || params > 1e13) {
        snprintf(r->bad, sizeof r->bad,
                 "backward.%s: \"%s\" is not GRADIENT_ELEMENTS "
                 "BACKWARD_FLOPS (two plain numbers)",
                 name, v);
        return 0;
    }
    if (strlen(name) >= sizeof p->layers[0].name) {
        snprintf(r->bad, sizeof r->bad, "backward.%s: layer name longer than %zu characters", name,
                 sizeof p->layers[0].name - 1);
        return 0;
    }
    if (layer_find(r, name) >= 0) {
        snprintf(r->bad, sizeof r->bad, "backward.%s: layer listed twice", name);
        return 0;
    }
    if (p->n_layers == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        p->layers = realloc(p->layers, sizeof *p->layers * (size_t)r->cap);
        DT_CHECK(p->layers, "out of memory reading a model profile");
    }
    sim_profile_layer_t *l = &p->layers[p->n_layers++];
    memset(l, 0, sizeof *l);
    strcpy(l->name, name);
    l->params = (size_t)params;
    l->backward_flops = flops;
    layer_index(r, p->n_layers - 1);
    return 1;
}

static int forward_line(reader_t *r, const char *name, const char *v)
{
    char a[64], b[64], c[64], extra[2];
    double flops, outputs, cut = 0;
    int n = sscanf(v, "%63s %63s %63s %1s", a, b, c, extra);
    if ((n != 2 && n != 3) || number(a, &flops) || number(b, &outputs) ||
        (n == 3 && (number(c, &cut) || cut < 1))) {
        snprintf(r->bad, sizeof r->bad,
                 "forward.%s: \"%s\" is not FORWARD_FLOPS "
                 "OUTPUT_ELEMENTS [CUT_ELEMENTS] (two or three plain numbers, a cut >= 1)",
                 name, v);
        return 0;
    }
    if (strlen(name) >= sizeof r->fwd[0].name) {
        snprintf(r->bad, sizeof r->bad, "forward.%s: layer name longer than %zu characters", name,
                 sizeof r->fwd[0].name - 1);
        return 0;
    }
    if (r->n_fwd == r->fwd_cap) {
        r->fwd_cap = r->fwd_cap ? 2 * r->fwd_cap : 64;
        r->fwd = realloc(r->fwd, sizeof *r->fwd * (size_t)r->fwd_cap);
        DT_CHECK(r->fwd, "out of memory reading a model profile");
    }
    fwd_line_t *l = &r->fwd[r->n_fwd++];
    strcpy(l->name, name);
    l->line = r->line;
    l->flops = flops;
    l->outputs = outputs;
    l->cut = cut;
    return 1;
}

static const char *const split_names[] = {"none", "column", "row", "heads", "vocab"};

static int tensor_line(reader_t *r, const char *name, const char *v)
{
    char a[64], b[64], extra[2];
    double reduce = 0;
    int n = sscanf(v, "%63s %63s %1s", a, b, extra), split = 0;
    for (int k = 1; k < 5 && n >= 1; k++)
        if (!strcmp(a, split_names[k]))
            split = k;
    if (n < 1 || n > 2 || !split ||
        (n == 2 && (number(b, &reduce) || reduce != floor(reduce) || split == SIM_SPLIT_HEADS))) {
        snprintf(r->bad, sizeof r->bad,
                 "tensor.%s: \"%s\" is not SPLIT [REDUCE_ELEMENTS] "
                 "(column, row, heads or vocab, then for all but heads an optional whole "
                 "number)",
                 name, v);
        return 0;
    }
    if (strlen(name) >= sizeof r->tp[0].name) {
        snprintf(r->bad, sizeof r->bad, "tensor.%s: layer name longer than %zu characters", name,
                 sizeof r->tp[0].name - 1);
        return 0;
    }
    if (r->n_tp == r->tp_cap) {
        r->tp_cap = r->tp_cap ? 2 * r->tp_cap : 64;
        r->tp = realloc(r->tp, sizeof *r->tp * (size_t)r->tp_cap);
        DT_CHECK(r->tp, "out of memory reading a model profile");
    }
    tp_line_t *l = &r->tp[r->n_tp++];
    strcpy(l->name, name);
    l->line = r->line;
    l->split = (sim_split_t)split;
    l->reduce = reduce;
    return 1;
}

/* A [shape] line: its layer, listed by [backward] above, gets its operation and sizes. */
static int shape_line(reader_t *r, const char *name, const char *v)
{
    static const char *const ops[] = {"", "gemm", "attention", "memory"};
    static const int need[] = {0, 3, 4, 2}; /* numbers each takes (gemm: 3 or 5) */
    char op[16], a[5][64], extra[2];
    int n =
        sscanf(v, "%15s %63s %63s %63s %63s %63s %1s", op, a[0], a[1], a[2], a[3], a[4], extra) - 1;
    int k = 1;
    while (k < 4 && (n < 0 || strcmp(op, ops[k])))
        k++;
    int ok = k < 4 && (n == need[k] || (k == SIM_OP_GEMM && n == 5));
    double dim[5] = {0};
    for (int i = 0; ok && i < n; i++) /* sizes >= 1, element counts >= 0 */
        ok = !number(a[i], &dim[i]) && dim[i] == floor(dim[i]) && dim[i] <= 1e15 &&
             (k == SIM_OP_MEMORY || i >= 3 || dim[i] >= 1);
    if (!ok) {
        snprintf(r->bad, sizeof r->bad,
                 "shape.%s: \"%s\" is not gemm M N K [FORWARD_ELEMENTS "
                 "BACKWARD_ELEMENTS], attention HEADS QUERIES KEYS HEAD_DIM or memory "
                 "FORWARD_ELEMENTS BACKWARD_ELEMENTS (whole numbers; sizes >= 1)",
                 name, v);
        return 0;
    }
    int i = layer_find(r, name);
    if (i < 0) {
        snprintf(r->bad, sizeof r->bad,
                 "shape.%s: no such layer in [backward] (the layers "
                 "come first, [shape] after them)",
                 name);
        return 0;
    }
    sim_profile_layer_t *l = &r->p->layers[i];
    if (l->op != SIM_OP_NONE) {
        snprintf(r->bad, sizeof r->bad, "shape.%s: layer listed twice", name);
        return 0;
    }
    l->op = (sim_op_t)k;
    memcpy(l->dim, dim, sizeof dim);
    r->p->has_shapes = 1;
    return 1;
}

/* An [experts] line: its layer, listed by [backward] above, gets its experts. */
static int experts_line(reader_t *r, const char *name, const char *v)
{
    char a[3][64], extra[2];
    double x[3] = {0};
    int n = sscanf(v, "%63s %63s %63s %1s", a[0], a[1], a[2], extra), ok = n == 2 || n == 3;
    for (int i = 0; ok && i < n; i++)
        ok = !number(a[i], &x[i]) && x[i] == floor(x[i]) && x[i] <= (i < 2 ? 1e6 : 1e15);
    if (!ok || x[0] < 1 || x[1] < 1 || x[1] > x[0] || (n == 3 && x[2] < 1)) {
        snprintf(r->bad, sizeof r->bad,
                 "experts.%s: \"%s\" is not ROUTED TOP_K "
                 "[ALL_TO_ALL_ELEMENTS] (whole numbers, 1 <= TOP_K <= ROUTED, elements >= 1)",
                 name, v);
        return 0;
    }
    int i = layer_find(r, name);
    if (i < 0) {
        snprintf(r->bad, sizeof r->bad,
                 "experts.%s: no such layer in [backward] (the layers "
                 "come first, [experts] after them)",
                 name);
        return 0;
    }
    sim_profile_layer_t *l = &r->p->layers[i];
    if (l->experts) {
        snprintf(r->bad, sizeof r->bad, "experts.%s: layer listed twice", name);
        return 0;
    }
    l->experts = (int)x[0];
    l->top_k = (int)x[1];
    l->a2a = x[2];
    r->p->has_experts = 1;
    return 1;
}

static int section_handler(reader_t *r, const char *section, const char *name, const char *value)
{
    if (!strcmp(section, "profile"))
        return profile_key(r, name, value);
    if (!strcmp(section, "backward"))
        return layer_line(r, name, value);
    if (!strcmp(section, "forward"))
        return forward_line(r, name, value);
    if (!strcmp(section, "tensor")) {
        r->has_tensor = 1;
        return tensor_line(r, name, value);
    }
    if (!strcmp(section, "shape"))
        return shape_line(r, name, value);
    if (!strcmp(section, "experts"))
        return experts_line(r, name, value);
    snprintf(r->bad, sizeof r->bad,
             "[%s]: unknown section (expected [profile], [backward], "
             "[forward], [tensor], [shape] and [experts])",
             section);
    return 0;
}

/* Only the first error counts, with its own line: inih goes on after an error, and a later
 * line's message must not stand beside the first one's line number. */
static int handler(void *user, const char *section, const char *name, const char *value)
{
    reader_t *r = user;
    if (r->bad_line)
        return 1;
    if (section_handler(r, section, name, value))
        return 1;
    r->bad_line = r->line;
    return 0;
}

/* Hands inih the text one line per call, counting lines (Debian's libinih has no
 * INI_HANDLER_LINENO); stops at the first error, and refuses a line longer than inih's
 * buffer, which it would split into two lines and miscount. */
static char *line_reader(char *buf, int num, void *stream)
{
    reader_t *r = stream;
    if (r->bad_line || !r->next || !*r->next)
        return NULL;
    const char *line = r->next, *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    r->next = eol ? eol + 1 : NULL;
    r->line++;
    if (len + 2 > (size_t)num) {
        snprintf(r->bad, sizeof r->bad, "line longer than %d characters", num - 2);
        r->bad_line = r->line;
        len = 0;
    }
    memcpy(buf, line, len);
    buf[len] = '\n';
    buf[len + 1] = '\0';
    return buf;
}

/* The whole of a profile file, malloc'ed; NULL when it cannot be read (errno) or is larger
 * than 64 MiB (EFBIG). */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *t = dt_malloc(cap);
    size_t got;
    while ((got = fread(t + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            if (cap >= (size_t)64 << 20) {
                free(t);
                fclose(f);
                errno = EFBIG;
                return NULL;
            }
            cap *= 2;
            char *g = realloc(t, cap);
            DT_CHECK(g, "out of memory reading %s", path);
            t = g;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(t);
        errno = EIO;
        return NULL;
    }
    t[len] = '\0';
    return t;
}

/* [forward] names the [backward] layers in the opposite order; its FLOPs add up to
 * forward_flops. Fills the layers' forward fields. */
static dt_status check_forward(sim_model_profile_t *p, const reader_t *r, const char *where,
                               dt_err_t *err)
{
    int L = p->n_layers;
    double flops = 0;
    for (int i = 0; i < r->n_fwd; i++) {
        if (i >= L || strcmp(r->fwd[i].name, p->layers[L - 1 - i].name))
            return dt_err_input(err,
                                "%s:%d: forward.%s: [forward]'s layer %d, but [backward] "
                                "read from its end gives %s there (the same layers, "
                                "first layer first)",
                                where, r->fwd[i].line, r->fwd[i].name, i + 1,
                                i < L ? p->layers[L - 1 - i].name : "no more layers");
        sim_profile_layer_t *l = &p->layers[L - 1 - i];
        l->forward_flops = r->fwd[i].flops;
        l->outputs = r->fwd[i].outputs;
        l->cut = i + 1 < L ? r->fwd[i].cut : 0; /* nothing follows the last layer */
        flops += r->fwd[i].flops;
    }
    if (r->n_fwd != L)
        return dt_err_input(err, "%s: [forward] lists %d layers, [backward] %d", where, r->n_fwd,
                            L);
    if (fabs(flops - p->forward_flops) > 1e-6 * p->forward_flops)
        return dt_err_input(err,
                            "%s: the [forward] layers add up to %.6g FLOPs, "
                            "profile.forward_flops says %.6g",
                            where, flops, p->forward_flops);
    p->has_forward_layers = 1;
    return DT_OK;
}

/* [tensor] names layers of [backward], each once, and needs [forward] (a tensor-parallel
 * run cuts its stages and places its all-reduces by the forward order). */
static dt_status check_tensor(sim_model_profile_t *p, const reader_t *r, const char *where,
                              dt_err_t *err)
{
    if (!p->has_forward_layers)
        return dt_err_input(err, "%s: a [tensor] section needs a [forward] section", where);
    for (int k = 0; k < r->n_tp; k++) {
        int i = layer_find(r, r->tp[k].name);
        if (i < 0)
            return dt_err_input(err, "%s:%d: tensor.%s: no such layer in [backward]", where,
                                r->tp[k].line, r->tp[k].name);
        if (p->layers[i].split)
            return dt_err_input(err, "%s:%d: tensor.%s: layer listed twice", where, r->tp[k].line,
                                r->tp[k].name);
        p->layers[i].split = r->tp[k].split;
        p->layers[i].reduce = r->tp[k].reduce;
    }
    p->has_tensor_splits = 1;
    return DT_OK;
}

/* The whole-file checks: what the lines must add up to. */
static dt_status check(sim_model_profile_t *p, const reader_t *r, const char *where, dt_err_t *err)
{
    if (!r->has_params || !r->has_forward)
        return dt_err_input(err, "%s: profile.%s missing", where,
                            r->has_params ? "forward_flops" : "params");
    if (p->n_layers == 0)
        return dt_err_input(err,
                            "%s: [backward] lists no layer (one line per layer: LAYER = "
                            "GRADIENT_ELEMENTS BACKWARD_FLOPS)",
                            where);
    size_t sum = 0;
    double flops = 0;
    for (int i = 0; i < p->n_layers; i++) {
        sum += p->layers[i].params;
        flops += p->layers[i].backward_flops;
    }
    if (sum != p->params)
        return dt_err_input(err,
                            "%s: the [backward] layers hold %zu gradient elements, "
                            "profile.params says %zu",
                            where, sum, p->params);
    if (r->has_backward && fabs(flops - p->backward_flops) > 1e-6 * p->backward_flops)
        return dt_err_input(err,
                            "%s: the [backward] layers add up to %.6g FLOPs, "
                            "profile.backward_flops says %.6g",
                            where, flops, p->backward_flops);
    if (!(p->forward_flops + flops > 0))
        return dt_err_input(err,
                            "%s: a profile needs some FLOPs (forward_flops and the "
                            "layers' backward FLOPs are all 0)",
                            where);
    if (r->n_fwd && check_forward(p, r, where, err))
        return DT_ERR_INPUT;
    return r->has_tensor ? check_tensor(p, r, where, err) : DT_OK;
}

/* The GEMMs FP8 recipes keep in 16 bits (DeepSeek-V3 report, section 3.3.1: the embedding,
 * the output head, the MoE gating, normalisation and attention; Megatron-LM's output layer
 * is not a Transformer Engine module, and Transformer Engine advises the last layer in
 * higher precision): the last layer when it is a GEMM (the output head), and a router, the
 * GEMM with one output per expert just before (in forward order) a routed layer. layers[]
 * is in backward order: the last layer is its first, and a router follows its routed
 * layers there. */
static void mark_wide(sim_model_profile_t *p)
{
    if (p->n_layers && p->layers[0].op == SIM_OP_GEMM)
        p->layers[0].wide = 1;
    for (int i = 0; i < p->n_layers; i++) {
        sim_profile_layer_t *l = &p->layers[i], *next = i + 1 < p->n_layers ? l + 1 : NULL;
        if (l->experts && next && !next->experts && next->op == SIM_OP_GEMM &&
            next->dim[1] == l->experts)
            next->wide = 1;
    }
}

dt_status sim_model_profile_load(sim_model_profile_t *p, const char *spec, dt_err_t *err)
{
    memset(p, 0, sizeof *p);
    reader_t r = {.p = p};
    int rc;
    const char *where = spec;
    char *file_text = NULL;
    if (sim_model_profile_is_file(spec)) {
        file_text = read_text(spec);
        if (!file_text) {
            sim_model_profile_free(p);
            return dt_err_input(err, "cannot read model profile %s: %s", spec, strerror(errno));
        }
        r.next = file_text;
        rc = ini_parse_stream(line_reader, &r, handler, &r);
        free(file_text);
    } else {
        size_t i = 0;
        while (i < N_BUILTIN && strcmp(builtin_profiles[i].name, spec))
            i++;
        if (i == N_BUILTIN) {
            char names[256] = "";
            for (size_t k = 0; k < N_BUILTIN; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                         builtin_profiles[k].name);
            return dt_err_input(err,
                                "unknown model profile \"%s\" (built in: %s; or a "
                                "profile file FILE.ini)",
                                spec, names);
        }
        r.next = (const char *)builtin_profiles[i].text;
        rc = ini_parse_stream(line_reader, &r, handler, &r);
        where = builtin_profiles[i].name;
    }
    if (rc > 0 || r.bad_line) {
        /* the first error: inih's syntax error or a handler's, whichever came first */
        int line = r.bad_line && (rc <= 0 || r.bad_line <= rc) ? r.bad_line : rc;
        dt_err_input(err, "%s:%d: %s", where, line,
                     line == r.bad_line ? r.bad : "syntax error (expected key = value)");
        free(r.fwd);
        free(r.tp);
        free(r.index);
        sim_model_profile_free(p);
        return DT_ERR_INPUT;
    }
    if (!r.has_backward) {
        for (int i = 0; i < p->n_layers; i++)
            p->backward_flops += p->layers[i].backward_flops;
    }
    dt_status st = check(p, &r, where, err);
    free(r.fwd);
    free(r.tp);
    free(r.index);
    if (st) {
        sim_model_profile_free(p);
        return DT_ERR_INPUT;
    }
    if (!p->name[0])
        snprintf(p->name, sizeof p->name, "%.63s", where);
    mark_wide(p);
    return DT_OK;
}

double sim_model_profile_active_params(const sim_model_profile_t *p)
{
    double n = 0;
    for (int i = 0; i < p->n_layers; i++) {
        const sim_profile_layer_t *l = &p->layers[i];
        n += l->experts ? (double)l->params * l->top_k / l->experts : (double)l->params;
    }
    return n;
}

void sim_model_profile_free(sim_model_profile_t *p)
{
    free(p->layers);
    p->layers = NULL;
    p->n_layers = 0;
}
