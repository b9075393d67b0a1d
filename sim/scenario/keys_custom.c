/* The keys of [run], [model], [data] and [cluster] with a syntax of their own (their rows
 * are in keys.c's table): what of the timeline is stored, the model's architecture or
 * profile, hidden sizes, convolutions, the learning-rate schedule, the data source, the
 * partition, compression, the platform and its torus or dragonfly shape, the device; and the
 * scenario-relative paths they take. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "keys_impl.h"
#include "model_profile.h"
#include "profile_memory.h"

static const char *const platform_names[] = {"star",  "fat-tree",  "multi-rack", "edge",
                                             "torus", "dragonfly", "rail",       NULL};
static const char *const schedule_names[] = {"constant", "cosine", "linear", NULL};
static const char *const timeline_names[] = {"auto", "sampled", "whole", NULL};

/* run.timeline: auto is resolved against model.arch once the scenario is final (after the
 * file, the --set and a sweep run's values: scn_timeline_resolve), so that the stored
 * configuration and params say which the run did (a figure reads it). */
dt_status scn_parse_timeline(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    for (int i = 0; timeline_names[i]; i++)
        if (!strcmp(v, timeline_names[i])) {
            sc->timeline = (sim_timeline_mode_t)i;
            return DT_OK;
        }
    return dt_err_input(err, "unknown value \"%s\" (expected one of auto, sampled, whole)", v);
}

void scn_timeline_resolve(scenario_t *sc)
{
    if (sc->timeline == SIM_TIMELINE_AUTO)
        sc->timeline = sc->profile[0] ? SIM_TIMELINE_SAMPLED : SIM_TIMELINE_WHOLE;
}

void scn_format_timeline(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", timeline_names[sc->timeline]);
}

/* run.timeline_steps: all (the whole run) or how many gradients the first node computes
 * before the window closes (0: no timeline). */
dt_status scn_parse_timeline_steps(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                   dt_err_t *err)
{
    (void)ctx;
    if (!strcmp(v, "all")) {
        sc->timeline_steps = SCENARIO_TIMELINE_ALL;
        return DT_OK;
    }
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < 0 || n > 1000000)
        return dt_err_input(err, "\"%s\": expected all or an integer in [0, 1000000]", v);
    sc->timeline_steps = n;
    return DT_OK;
}

void scn_format_timeline_steps(const scenario_t *sc, char *buf, size_t n)
{
    if (sc->timeline_steps == SCENARIO_TIMELINE_ALL)
        snprintf(buf, n, "all");
    else
        snprintf(buf, n, "%ld", sc->timeline_steps);
}

/* What a scenario keeps of a profile it checked (scn_parse_arch), for the spec it was loaded
 * from and, a file, its text: a plan loads one profile with each of its thousands of
 * layouts, and Llama 3 405B's takes 3.5 ms to parse (7 s of the 2,100 loads of its whole
 * plan's fit), its 20 kB a few microseconds to read and compare. */
typedef struct arch_memo {
    char spec[SCENARIO_STR]; /* "": nothing kept */
    char *text;              /* the file's text (len bytes); NULL: a built-in profile */
    size_t len;
    int attention, splits, experts, pieces;
} arch_memo_t;
static arch_memo_t arch_memo;

/* The whole of a file, malloc'd (*len bytes), or NULL where it does not read. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        text = dt_malloc((size_t)size + 1);
        if (fread(text, 1, (size_t)size, f) != (size_t)size) {
            free(text);
            text = NULL;
        }
    }
    if (f)
        fclose(f);
    *len = text ? (size_t)size : 0;
    return text;
}

/* "profile:NAME" or "profile:FILE.ini" makes the run timing-only: the profile is checked
 * now and kept (a file as an absolute path). */
dt_status scn_parse_arch(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    if (strncmp(v, "profile:", 8)) {
        sc->profile[0] = '\0';
        sc->profile_pieces = 0;
        sc->profile_attention = 0;
        sc->profile_splits = 0;
        sc->profile_experts = 0;
        return trainer_arch_parse(&sc->model.arch, v, err);
    }
    char spec[SCENARIO_STR];
    if (sim_model_profile_is_file(v + 8)) {
        if (scn_resolve_path(v + 8, ctx, 0, spec, sizeof spec, err))
            return DT_ERR_INPUT;
    } else if (scn_set_string(spec, sizeof spec, v + 8, err)) {
        return DT_ERR_INPUT;
    }
    size_t len = 0;
    int file = sim_model_profile_is_file(spec);
    char *text = file ? read_all(spec, &len) : NULL;
    arch_memo_t *m = &arch_memo;
    int same = m->spec[0] && !strcmp(m->spec, spec) &&
               (file ? text && m->text && len == m->len && !memcmp(text, m->text, len) : !m->text);
    if (!same) {
        sim_model_profile_t prof;
        m->spec[0] = '\0';
        free(m->text);
        m->text = NULL;
        if (sim_model_profile_load(&prof, spec, err)) {
            free(text);
            return DT_ERR_INPUT;
        }
        m->attention = sim_profile_has_attention(&prof);
        m->splits = prof.has_tensor_splits;
        m->experts = 0;
        for (int i = 0; i < prof.n_layers; i++)
            if (prof.layers[i].experts && (!m->experts || prof.layers[i].experts < m->experts))
                m->experts = prof.layers[i].experts;
        m->pieces = prof.has_forward_layers;
        for (int i = 0; prof.has_forward_layers && i < prof.n_layers; i++)
            m->pieces += prof.layers[i].cut > 0;
        sim_model_profile_free(&prof);
        if (!file || text) { /* else the next load reads it again */
            snprintf(m->spec, sizeof m->spec, "%s", spec);
            m->text = text;
            m->len = len;
            text = NULL;
        }
    }
    free(text);
    sc->profile_attention = m->attention;
    sc->profile_splits = m->splits;
    sc->profile_experts = m->experts;
    sc->profile_pieces = m->pieces;
    return scn_set_string(sc->profile, sizeof sc->profile, spec, err);
}

void scn_format_arch(const scenario_t *sc, char *buf, size_t n)
{
    if (sc->profile[0])
        snprintf(buf, n, "profile:%s", sc->profile);
    else
        snprintf(buf, n, "%s", trainer_arch_name(sc->model.arch));
}

dt_status scn_parse_hidden(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    trainer_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    if (trainer_hidden_parse(&cfg, v, err))
        return DT_ERR_INPUT;
    memcpy(sc->model.hidden, cfg.hidden, sizeof cfg.hidden); /* unused entries zeroed */
    sc->model.n_hidden = cfg.n_hidden;
    return DT_OK;
}

void scn_format_hidden(const scenario_t *sc, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < sc->model.n_hidden && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? "," : "", sc->model.hidden[i]);
}

dt_status scn_parse_conv(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    long c[2];
    const char *p = v;
    for (int i = 0; i < 2; i++) {
        while (*p == ' ')
            p++;
        size_t len = scn_scan_number(p);
        errno = 0;
        c[i] = len && p[0] != '-' && !strpbrk(p, ".eE") ? strtol(p, NULL, 10) : -1;
        p += len;
        while (*p == ' ')
            p++;
        if (!len || errno || c[i] < 1 || c[i] > 4096 || *p != (i == 0 ? ',' : '\0'))
            return dt_err_input(err,
                                "bad channel counts \"%s\" (expected C1,C2: two integers "
                                "in [1, 4096], e.g. 16,32)",
                                v);
        if (i == 0)
            p++;
    }
    sc->model.conv[0] = (int)c[0];
    sc->model.conv[1] = (int)c[1];
    return DT_OK;
}

void scn_format_conv(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%d,%d", sc->model.conv[0], sc->model.conv[1]);
}

dt_status scn_parse_schedule(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    return trainer_lr_schedule_parse(&sc->schedule, v, err);
}

void scn_format_schedule(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", schedule_names[sc->schedule]);
}

dt_status scn_parse_partition(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    trainer_partition_spec_t spec; /* the parser clears its output even on error */
    if (trainer_partition_parse(&spec, v, err))
        return DT_ERR_INPUT;
    sc->partition = spec;
    return DT_OK;
}

dt_status scn_parse_compression(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                dt_err_t *err)
{
    (void)ctx;
    trainer_codec_t c;
    if (trainer_codec_parse(&c, v, err))
        return DT_ERR_INPUT;
    sc->compression = c;
    return DT_OK;
}

void scn_format_compression(const scenario_t *sc, char *buf, size_t n)
{
    trainer_codec_format(&sc->compression, buf, n);
}

void scn_format_partition(const scenario_t *sc, char *buf, size_t n)
{
    char num[40];
    switch (sc->partition.kind) {
    case TRAINER_PARTITION_IID:
        snprintf(buf, n, "iid");
        return;
    case TRAINER_PARTITION_DIRICHLET:
        scn_format_double(num, sizeof num, sc->partition.alpha);
        snprintf(buf, n, "dirichlet:%s", num);
        return;
    case TRAINER_PARTITION_SHARDS:
        snprintf(buf, n, "shards:%d", sc->partition.shards);
        return;
    case TRAINER_PARTITION_BY_SOURCE:
        snprintf(buf, n, "by-source");
        return;
    }
}

int scn_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Resolves a path written in a scenario against its directory and makes it absolute, so
 * the resolved scenario reads the same from anywhere. want_dir: 1 directory, 0 file. */
dt_status scn_resolve_path(const char *v, const parse_ctx_t *ctx, int want_dir, char *out,
                           size_t cap, dt_err_t *err)
{
    char joined[PATH_MAX], real[PATH_MAX];
    if (v[0] != '/' && ctx->base_dir) {
        if ((size_t)snprintf(joined, sizeof joined, "%s/%s", ctx->base_dir, v) >= sizeof joined)
            return dt_err_input(err, "path \"%s\" is too long", v);
    } else {
        if (strlen(v) >= sizeof joined)
            return dt_err_input(err, "path \"%s\" is too long", v);
        strcpy(joined, v);
    }
    const char *shown = strcmp(joined, v) ? joined : NULL;
    struct stat stbuf;
    if (stat(joined, &stbuf))
        return dt_err_input(err, "cannot read \"%s\"%s%s%s: %s", v, shown ? " (" : "",
                            shown ? shown : "", shown ? ")" : "", strerror(errno));
    if (want_dir && !S_ISDIR(stbuf.st_mode))
        return dt_err_input(err, "\"%s\" is not a directory", v);
    if (!want_dir) {
        if (S_ISDIR(stbuf.st_mode))
            return dt_err_input(err, "\"%s\" is a directory, not a file", v);
        if (!S_ISREG(stbuf.st_mode)) /* a FIFO or a device would block or never end */
            return dt_err_input(err, "\"%s\" is not a regular file", v);
        FILE *f = fopen(joined, "r");
        if (!f)
            return dt_err_input(err, "cannot read \"%s\"%s%s%s: %s", v, shown ? " (" : "",
                                shown ? shown : "", shown ? ")" : "", strerror(errno));
        fclose(f);
    }
    if (!realpath(joined, real))
        return dt_err_input(err, "cannot resolve \"%s\": %s", v, strerror(errno));
    if (strlen(real) >= cap)
        return dt_err_input(err, "path \"%s\" is longer than %zu characters", real, cap - 1);
    memset(out, 0, cap);
    memcpy(out, real, strlen(real));
    return DT_OK;
}

dt_status scn_parse_source(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    if (!strcmp(v, "fashion-mnist") || !strcmp(v, "synthetic") || !strcmp(v, "text"))
        return scn_set_string(sc->data_source, sizeof sc->data_source, v, err);
    if (!*v)
        return dt_err_input(err, "empty value (expected fashion-mnist, synthetic, text or a "
                                 "directory)");
    dt_err_t e;
    if (scn_resolve_path(v, ctx, 1, sc->data_source, sizeof sc->data_source, &e))
        return dt_err_input(err,
                            "%s (expected fashion-mnist, synthetic, text or a directory "
                            "of MNIST-format files)",
                            e.msg);
    return DT_OK;
}

dt_status scn_parse_text(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    if (!strcmp(v, "fortunes") || !strcmp(v, "fortunes-languages"))
        return scn_set_string(sc->data_text, sizeof sc->data_text, v, err);
    if (!*v)
        return dt_err_input(err, "empty value (expected fortunes, fortunes-languages, or a "
                                 "text file or folder)");
    dt_err_t as_file, as_dir;
    if (!scn_resolve_path(v, ctx, 0, sc->data_text, sizeof sc->data_text, &as_file) ||
        !scn_resolve_path(v, ctx, 1, sc->data_text, sizeof sc->data_text, &as_dir))
        return DT_OK;
    return dt_err_input(err,
                        "%s (expected fortunes, fortunes-languages, or a text file or "
                        "folder)",
                        as_file.msg);
}

void scn_format_text(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->data_text);
}

void scn_format_source(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->data_source);
}

dt_status scn_parse_platform(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    for (int i = 0; platform_names[i]; i++)
        if (!strcmp(v, platform_names[i])) {
            sc->platform = (sim_platform_kind_t)i;
            memset(sc->platform_file, 0, sizeof sc->platform_file);
            return DT_OK;
        }
    if (scn_ends_with(v, ".so") || strstr(v, ".so."))
        return dt_err_input(err,
                            "\"%s\" refused: a .so platform is compiled code that SimGrid "
                            "would load and run; give a SimGrid .xml file",
                            v);
    if (!scn_ends_with(v, ".xml"))
        return dt_err_input(err,
                            "unknown platform \"%s\" (expected star, fat-tree, multi-rack, "
                            "edge, torus, dragonfly, rail or a path to a SimGrid .xml "
                            "file)",
                            v);
    if (scn_resolve_path(v, ctx, 0, sc->platform_file, sizeof sc->platform_file, err))
        return DT_ERR_INPUT;
    sc->platform = SIM_PLATFORM_FILE;
    return DT_OK;
}

void scn_format_platform(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s",
             sc->platform == SIM_PLATFORM_FILE ? sc->platform_file : platform_names[sc->platform]);
}

/* "auto" (all zero) or up to max positive numbers joined by sep, each 1..1024. */
static dt_status parse_shape(long *dims, int max, char sep, const char *v, const char *what,
                             dt_err_t *err)
{
    memset(dims, 0, sizeof(long) * (size_t)max);
    if (!strcmp(v, "auto"))
        return DT_OK;
    const char *p = v;
    for (int i = 0;; i++) {
        char *end;
        errno = 0;
        long d = strtol(p, &end, 10);
        if (i == max || end == p || errno || d < 1 || d > 1024 || (*end && *end != sep))
            return dt_err_input(err, "bad %s \"%s\" (expected auto or %s)", what, v,
                                sep == 'x' ? "1 to 4 dimensions AxBxC, each 1 to 1024"
                                           : "G,C,R,N, each 1 to 1024");
        dims[i] = d;
        if (!*end) {
            if (sep == ',' && i != 3)
                return dt_err_input(err,
                                    "bad %s \"%s\" (expected auto or G,C,R,N: groups, "
                                    "chassis, routers, hosts per router)",
                                    what, v);
            return DT_OK;
        }
        p = end + 1;
    }
}

static void format_shape(const long *dims, int max, char sep, char *buf, size_t n)
{
    if (!dims[0]) {
        snprintf(buf, n, "auto");
        return;
    }
    size_t len = 0;
    for (int i = 0; i < max && dims[i] && len < n; i++)
        len += (size_t)(i ? snprintf(buf + len, n - len, "%c%ld", sep, dims[i])
                          : snprintf(buf + len, n - len, "%ld", dims[i]));
}

dt_status scn_parse_torus(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    return parse_shape(sc->torus, 4, 'x', v, "torus shape", err);
}

void scn_format_torus(const scenario_t *sc, char *buf, size_t n)
{
    format_shape(sc->torus, 4, 'x', buf, n);
}

dt_status scn_parse_dragonfly(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    return parse_shape(sc->dragonfly, 4, ',', v, "dragonfly shape", err);
}

void scn_format_dragonfly(const scenario_t *sc, char *buf, size_t n)
{
    format_shape(sc->dragonfly, 4, ',', buf, n);
}

dt_status scn_parse_device(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    if (scn_ends_with(v, ".ini")) { /* a profile file: checked now, kept as an absolute path */
        char path[SCENARIO_STR];
        sim_device_profile_t *prof = dt_malloc(sizeof *prof);
        dt_status st = scn_resolve_path(v, ctx, 0, path, sizeof path, err);
        if (!st)
            st = scenario_device_read(path, prof, err);
        free(prof);
        return st ? st : scn_set_string(sc->device, sizeof sc->device, path, err);
    }
    if (!scn_builtin_profile(v) && strcmp(v, "custom")) {
        char names[256];
        scn_device_names(names, sizeof names);
        return dt_err_input(err,
                            "unknown device \"%s\" (expected one of %s, a profile file "
                            "FILE.ini, or custom with device_flops; dtsim devices lists "
                            "them)",
                            v, names);
    }
    return scn_set_string(sc->device, sizeof sc->device, v, err);
}

void scn_format_device(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->device);
}
