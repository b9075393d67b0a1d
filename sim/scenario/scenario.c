/* Scenario files (see scenario.h). ONE table of key descriptors (section, key, type,
 * default text, field, range, doc) drives everything: defaults are applied by parsing each
 * default text (so they pass the same checks as a user's value), the file handler and
 * --set look keys up in it, scenario_write prints it back, and the Markdown key reference
 * is generated from it.
 *
 * Line numbers: Debian's libinih is built without INI_HANDLER_LINENO, so the handler is
 * not told the line. The file is read into memory and handed to ini_parse_stream one line
 * per reader call; inih handles a line right after reading it, so the reader's count is
 * the line of the key being handled. The reader also strips leading blanks (an indented
 * key is then a key, never inih's "continuation of the previous value"), checks section
 * headers (inih reports nothing for a section without keys), and refuses lines longer
 * than inih's buffer instead of letting inih split them.
 *
 * device and device_flops (cluster): device names a profile (its speed becomes
 * device_flops) or "custom"; device_flops sets the speed directly and, given without
 * device, makes the device "custom". In one file both may appear only if they agree
 * (device = custom, or the profile's own speed), so nothing is silently overridden; a
 * --set of either one replaces the pair.
 *
 * [sweep]: each value is parsed by its key's own parser on a scratch copy when the line is
 * read, and kept as key_format writes it (units normalised, paths absolute), so a run is
 * made by applying those texts again and the [sweep] that scenario_write prints loads back
 * to the same bytes. A swept key keeps its default in the base scenario (giving it in its
 * section too is an error); in run i it gets its value and, as its key_line, the [sweep]
 * line, so that messages and scenario_key_given treat it as given there. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */
#include "scenario.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <ini.h>

#include "fault_spec.h"
#include "model_profile.h"

/* ---- units ----------------------------------------------------------------------------- */

/* value = number * mul / div: dividing by an exact power of ten (5us = 5 / 1e6) gives the
 * correctly rounded double, which multiplying by 1e-6 would not. */
typedef struct unit {
    const char *name;
    double mul, div;
    int alias; /* accepted, never written */
    int bytes; /* written only when shorter than bits: links are quoted in bits */
} unit_t;

static const unit_t bandwidth_units[] = {
    {"bps", 1, 8, 0, 0},     {"kbps", 1e3, 8, 0, 0}, {"Mbps", 1e6, 8, 0, 0},
    {"Gbps", 1e9, 8, 0, 0},  {"Tbps", 1e12, 8, 0, 0}, {"Bps", 1, 1, 0, 1},
    {"kBps", 1e3, 1, 0, 1},  {"MBps", 1e6, 1, 0, 1}, {"GBps", 1e9, 1, 0, 1},
    {"TBps", 1e12, 1, 0, 1}, {NULL, 0, 0, 0, 0},
};
static const unit_t time_units[] = {
    {"ns", 1, 1e9, 0, 0}, {"us", 1, 1e6, 0, 0}, {"ms", 1, 1e3, 0, 0},
    {"s", 1, 1, 0, 0},    {"min", 60, 1, 0, 0}, {"h", 3600, 1, 0, 0},
    {NULL, 0, 0, 0, 0},
};
static const unit_t flops_units[] = {
    {"f", 1, 1, 0, 0},        {"kf", 1e3, 1, 0, 0},      {"Mf", 1e6, 1, 0, 0},
    {"Gf", 1e9, 1, 0, 0},     {"Tf", 1e12, 1, 0, 0},     {"Pf", 1e15, 1, 0, 0},
    {"flops", 1, 1, 1, 0},    {"kflops", 1e3, 1, 1, 0},  {"Mflops", 1e6, 1, 1, 0},
    {"Gflops", 1e9, 1, 1, 0}, {"Tflops", 1e12, 1, 1, 0}, {"Pflops", 1e15, 1, 1, 0},
    {NULL, 0, 0, 0, 0},
};

static double unit_value(double number, const unit_t *u) { return number * u->mul / u->div; }

static void unit_list(const unit_t *units, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const unit_t *u = units; u->name && len < n; u++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", u->name);
}

/* Scans a decimal number at the start of s (optional '-', digits, optional fraction,
 * optional exponent) and returns its length, 0 if there is none. Narrower than strtod on
 * purpose: no hex, inf, nan, '+' or leading blanks in a scenario. */
static size_t scan_number(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '-')
        i++;
    for (; isdigit((unsigned char)s[i]); i++)
        digits++;
    if (s[i] == '.')
        for (i++; isdigit((unsigned char)s[i]); i++)
            digits++;
    if (!digits)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

/* The number at the start of text: its length in *len (0: none), its value in *out. */
static int number_prefix(const char *text, size_t *len, double *out)
{
    char buf[64];
    *len = scan_number(text);
    if (!*len || *len >= sizeof buf)
        return -1;
    memcpy(buf, text, *len);
    buf[*len] = '\0';
    *out = strtod(buf, NULL);
    return 0;
}

static dt_status parse_with_unit(const char *text, const unit_t *units, const char *what,
                                 int bare_zero_ok, double *out, dt_err_t *err)
{
    char list[160];
    unit_list(units, list, sizeof list);
    size_t len;
    double number;
    if (number_prefix(text, &len, &number))
        return dt_err_input(err, "bad %s \"%s\" (expected a number and a unit: %s)", what, text,
                            list);
    if (!isfinite(number))
        return dt_err_input(err, "%s \"%s\" is not a finite number", what, text);
    const char *u = text + len;
    while (*u == ' ' || *u == '\t')
        u++;
    if (!*u) {
        if (bare_zero_ok && number == 0.0) {
            *out = 0.0;
            return DT_OK;
        }
        return dt_err_input(err, "missing unit in %s \"%s\" (expected one of %s)", what, text,
                            list);
    }
    for (const unit_t *p = units; p->name; p++)
        if (!strcmp(u, p->name)) {
            if (number < 0)
                return dt_err_input(err, "negative %s \"%s\"", what, text);
            double v = unit_value(number, p);
            if (!isfinite(v))
                return dt_err_input(err, "%s \"%s\" is too large", what, text);
            *out = v;
            return DT_OK;
        }
    return dt_err_input(err, "unknown unit \"%s\" in %s \"%s\" (expected one of %s)", u, what,
                        text, list);
}

dt_status scenario_parse_bandwidth(const char *text, double *bytes_per_s, dt_err_t *err)
{
    return parse_with_unit(text, bandwidth_units, "bandwidth", 0, bytes_per_s, err);
}

dt_status scenario_parse_time(const char *text, double *seconds, dt_err_t *err)
{
    return parse_with_unit(text, time_units, "time", 1, seconds, err);
}

dt_status scenario_parse_flops(const char *text, double *flops, dt_err_t *err)
{
    return parse_with_unit(text, flops_units, "speed", 0, flops, err);
}

static void format_unit(char *buf, size_t n, double v, const unit_t *units);

void scenario_format_bandwidth(double bytes_per_s, char *buf, size_t n)
{
    format_unit(buf, n, bytes_per_s, bandwidth_units);
}

/* The shortest "%.*g" spelling of x (any precision: "10" is shorter than "1e+01") for
 * which back(spelling) == want; 0 if none. */
static int shortest_number(char *buf, size_t n, double x, double want,
                           double (*back)(const char *num, const void *arg), const void *arg)
{
    char num[40];
    buf[0] = '\0';
    for (int p = 1; p <= 17; p++) {
        snprintf(num, sizeof num, "%.*g", p, x);
        if (back(num, arg) == want && (!buf[0] || strlen(num) < strlen(buf)))
            snprintf(buf, n, "%s", num);
    }
    return buf[0] != '\0';
}

static double back_double(const char *num, const void *arg)
{
    (void)arg;
    return strtod(num, NULL);
}

static double back_float(const char *num, const void *arg)
{
    (void)arg;
    return (double)(float)strtod(num, NULL);
}

static double back_unit(const char *num, const void *arg)
{
    return unit_value(strtod(num, NULL), arg);
}

static void format_double(char *buf, size_t n, double v)
{
    int found = shortest_number(buf, n, v, v, back_double, NULL);
    DT_ASSERT(found); /* "%.17g" always reads back */
}

static void format_float(char *buf, size_t n, float v)
{
    int found = shortest_number(buf, n, (double)v, (double)v, back_float, NULL);
    DT_ASSERT(found);
}

/* The shortest "NUMBERunit" that parses back to exactly v (exactness first: the written
 * scenario must load to the same struct), with one character of handicap for a number
 * outside [1, 1000) and for bytes, so that ties go to 13.65Tf over 13650Gf and to 40Gbps
 * over 5GBps. The unit with mul = div = 1 always succeeds. */
static void format_unit(char *buf, size_t n, double v, const unit_t *units)
{
    char best[64] = "", num[40];
    size_t best_score = 0;
    for (const unit_t *u = units; u->name; u++) {
        double x = v * u->div / u->mul;
        if (u->alias || !shortest_number(num, sizeof num, x, v, back_unit, u))
            continue;
        size_t score = strlen(num) + strlen(u->name) + (size_t)(x < 1 || x >= 1000) +
                       (size_t)u->bytes;
        if (!best[0] || score < best_score) {
            snprintf(best, sizeof best, "%s%s", num, u->name);
            best_score = score;
        }
    }
    DT_ASSERT(best[0]);
    snprintf(buf, n, "%s", best);
}

/* ---- device profiles ------------------------------------------------------------------- */

static const sim_device_profile_t device_profiles[] = {
    {"cpu", 90e9,
     "measured: dtsim bench trainer, 1 thread, OpenBLAS sgemm on a 2-core AMD EPYC (Zen 5) "
     "VM, 2026-11-22"},
    {"v100", 10.99e12,
     "NVIDIA V100 SXM2 datasheet FP32 peak 15.7 TFLOP/s x 0.7 (assumed sustained fraction "
     "for GEMM-bound training)"},
    {"a100", 13.65e12,
     "NVIDIA A100 datasheet FP32 peak 19.5 TFLOP/s (without tensor cores) x 0.7 (assumed "
     "sustained fraction for GEMM-bound training)"},
    {"h100", 46.9e12,
     "NVIDIA H100 SXM datasheet FP32 peak 67 TFLOP/s x 0.7 (assumed sustained fraction for "
     "GEMM-bound training)"},
};
#define N_PROFILES (sizeof device_profiles / sizeof device_profiles[0])

const sim_device_profile_t *scenario_device_profiles(size_t *count)
{
    if (count)
        *count = N_PROFILES;
    return device_profiles;
}

static const sim_device_profile_t *builtin_profile(const char *name)
{
    for (size_t i = 0; i < N_PROFILES; i++)
        if (!strcmp(device_profiles[i].name, name))
            return &device_profiles[i];
    return NULL;
}

/* A device profile file, as dtsim calibrate writes it: a [device] section with name and
 * flops (a speed with its unit). */
typedef struct profile_file {
    double flops;
    int has_flops;
    char bad[600]; /* the first error, without its line */
} profile_file_t;

static int profile_handler(void *user, const char *section, const char *name, const char *value)
{
    profile_file_t *pf = user;
    dt_err_t e;
    if (strcmp(section, "device")) {
        snprintf(pf->bad, sizeof pf->bad, "[%s]: unknown section (expected [device])", section);
        return 0;
    }
    if (!strcmp(name, "name"))
        return 1;
    if (strcmp(name, "flops")) {
        snprintf(pf->bad, sizeof pf->bad, "device.%s: unknown key (expected name, flops)", name);
        return 0;
    }
    if (scenario_parse_flops(value, &pf->flops, &e)) {
        snprintf(pf->bad, sizeof pf->bad, "device.flops: %s", e.msg);
        return 0;
    }
    if (!(pf->flops > 0)) {
        snprintf(pf->bad, sizeof pf->bad, "device.flops: must be > 0");
        return 0;
    }
    pf->has_flops = 1;
    return 1;
}

static dt_status profile_read(const char *path, double *flops, dt_err_t *err)
{
    profile_file_t pf = {0};
    int rc = ini_parse(path, profile_handler, &pf);
    if (rc < 0)
        return dt_err_input(err, "cannot read device profile %s", path);
    if (rc > 0)
        return dt_err_input(err, "%s:%d: %s", path, rc,
                            pf.bad[0] ? pf.bad : "syntax error (expected key = value)");
    if (!pf.has_flops)
        return dt_err_input(err, "%s: device.flops missing (the speed, e.g. 60Gf)", path);
    *flops = pf.flops;
    return DT_OK;
}

/* The speed of a device: a built-in profile or a profile file. NULL when the name is
 * neither (custom), or the file no longer reads. */
static const sim_device_profile_t *profile_find(const char *name)
{
    static sim_device_profile_t file_profile;
    const sim_device_profile_t *p = builtin_profile(name);
    if (p || name[0] != '/')
        return p;
    dt_err_t e;
    if (profile_read(name, &file_profile.flops, &e))
        return NULL;
    file_profile.name = name;
    file_profile.source = "profile file";
    return &file_profile;
}

/* ---- the key table --------------------------------------------------------------------- */

typedef enum key_type {
    KEY_INT,
    KEY_REAL,
    KEY_BOOL,
    KEY_STRING,
    KEY_ENUM,
    KEY_BANDWIDTH,
    KEY_TIME,
    KEY_FLOPS,
    KEY_CUSTOM, /* parse and format functions of its own */
} key_type_t;

typedef enum key_store { ST_INT, ST_LONG, ST_U64, ST_FLOAT, ST_DOUBLE } key_store_t;

#define OPEN_MIN 1u /* range excludes min */
#define OPEN_MAX 2u /* range excludes max */
#define NOCASE 4u   /* enum names match in any case */
#define DERIVED 8u  /* no default text: the value comes from another key (see defdoc) */

typedef struct parse_ctx {
    const char *base_dir; /* relative paths resolve here; NULL: the current directory */
} parse_ctx_t;

typedef struct key_desc {
    const char *section, *key;
    key_type_t type;
    const char *def; /* default, parsed like a user's value */
    size_t off;      /* field in scenario_t */
    key_store_t store;
    size_t size; /* strings: capacity */
    double min, max;
    unsigned flags;
    const char *const *names; /* enums, indexed by value */
    dt_status (*parse)(scenario_t *sc, const char *value, const parse_ctx_t *ctx,
                       dt_err_t *err);
    void (*format)(const scenario_t *sc, char *buf, size_t n);
    const char *accepted; /* for the docs; NULL: from the type and range */
    const char *defdoc;   /* for the docs when the default is not def */
    const char *doc;
} key_desc_t;

/* Field offsets checked against the field's type at compile time: _Generic has no match,
 * and the build fails, when the table says long and the field is an int. */
#define OFF(field, type) _Generic(((scenario_t *)0)->field, type: offsetof(scenario_t, field))

#define K_NUM(sec_, key_, type_, def_, off_, st_, lo_, hi_, fl_, doc_)                       \
    {.section = sec_, .key = key_, .type = type_, .def = def_, .off = off_, .store = st_,    \
     .min = lo_, .max = hi_, .flags = fl_, .doc = doc_}
#define K_LONG(sec_, key_, def_, field, lo_, hi_, doc_)                                     \
    K_NUM(sec_, key_, KEY_INT, def_, OFF(field, long), ST_LONG, lo_, hi_, 0, doc_)
#define K_INTF(sec_, key_, def_, field, lo_, hi_, doc_)                                     \
    K_NUM(sec_, key_, KEY_INT, def_, OFF(field, int), ST_INT, lo_, hi_, 0, doc_)
#define K_DOUBLE(sec_, key_, def_, field, lo_, hi_, fl_, doc_)                              \
    K_NUM(sec_, key_, KEY_REAL, def_, OFF(field, double), ST_DOUBLE, lo_, hi_, fl_, doc_)
#define K_FLOAT(sec_, key_, def_, field, lo_, hi_, fl_, doc_)                               \
    K_NUM(sec_, key_, KEY_REAL, def_, OFF(field, float), ST_FLOAT, lo_, hi_, fl_, doc_)
#define K_UNIT(sec_, key_, type_, def_, field, lo_, fl_, doc_)                              \
    K_NUM(sec_, key_, type_, def_, OFF(field, double), ST_DOUBLE, lo_, INFINITY, fl_, doc_)
#define K_BOOL(sec_, key_, def_, field, doc_)                                               \
    K_NUM(sec_, key_, KEY_BOOL, def_, OFF(field, int), ST_INT, 0, 1, 0, doc_)
#define K_ENUM(sec_, key_, def_, field, etype, names_, fl_, doc_)                           \
    {.section = sec_, .key = key_, .type = KEY_ENUM, .def = def_, .off = OFF(field, etype),  \
     .store = ST_INT, .flags = fl_, .names = names_, .doc = doc_}
#define K_STRING(sec_, key_, def_, field, accepted_, defdoc_, doc_)                         \
    {.section = sec_, .key = key_, .type = KEY_STRING, .def = def_,                          \
     .off = offsetof(scenario_t, field), .size = sizeof(((scenario_t *)0)->field),           \
     .accepted = accepted_, .defdoc = defdoc_, .doc = doc_}
#define K_CUSTOM(sec_, key_, def_, parse_, format_, accepted_, doc_)                         \
    {.section = sec_, .key = key_, .type = KEY_CUSTOM, .def = def_, .parse = parse_,         \
     .format = format_, .accepted = accepted_, .doc = doc_}

/* Enums are stored through an int: they must be int-sized. */
_Static_assert(sizeof(sim_allreduce_algo_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_time_model_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_net_model_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_backend_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_pipeline_schedule_t) == sizeof(int), "enum size");

static const char *const pipe_schedule_names[] = {"gpipe", "1f1b", NULL};
static const char *const ring_message_names[] = {"steps", "phases", NULL};
static const char *const algorithm_names[] = {"ring", "tree", "halving-doubling",
                                              "hierarchical", NULL};
static const char *const time_model_names[] = {"flops", "measured", NULL};
static const char *const backend_names[] = {"cpu", "cuda", "auto", NULL};
static const char *const side_names[] = {"auto", "yes", "no", NULL};
static const char *const net_model_names[] = {"LV08", "CM02", "SMPI", NULL};
static const char *const platform_names[] = {"star", "fat-tree", "multi-rack", "edge", NULL};
static const char *const schedule_names[] = {"constant", "cosine", NULL};
static const char *const section_names[] = {"run",      "model",  "data",  "cluster",
                                            "strategy", "faults", "sweep", NULL};
#define SECTION_LIST "run, model, data, cluster, strategy, faults, sweep"

static dt_status parse_arch(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_arch(const scenario_t *, char *, size_t);
static dt_status parse_hidden(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_hidden(const scenario_t *, char *, size_t);
static dt_status parse_conv(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_conv(const scenario_t *, char *, size_t);
static dt_status parse_schedule(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_schedule(const scenario_t *, char *, size_t);
static dt_status parse_source(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_source(const scenario_t *, char *, size_t);
static dt_status parse_partition(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static dt_status parse_compression(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_compression(const scenario_t *, char *, size_t);
static void format_partition(const scenario_t *, char *, size_t);
static dt_status parse_platform(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_platform(const scenario_t *, char *, size_t);
static dt_status parse_kind(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_kind(const scenario_t *, char *, size_t);
static dt_status parse_device(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_device(const scenario_t *, char *, size_t);

/* [faults] texts: checked by their fault_spec parser, stored as written (trimmed). */
static dt_status fault_text(char *dst, size_t cap, const char *v, dt_err_t *err);
#define FAULT_FORMAT(field)                                                                 \
    static void format_##field(const scenario_t *sc, char *buf, size_t n)                    \
    {                                                                                       \
        snprintf(buf, n, "%s", sc->field);                                                  \
    }
#define FAULT_LIST(field, kind)                                                             \
    static dt_status parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,   \
                                   dt_err_t *err)                                           \
    {                                                                                       \
        (void)ctx;                                                                          \
        sim_fault_spec_t specs[SIM_FAULT_MAX];                                              \
        size_t n;                                                                           \
        if (sim_fault_spec_parse(kind, v, specs, SIM_FAULT_MAX, &n, err))                   \
            return DT_ERR_INPUT;                                                            \
        return fault_text(sc->field, sizeof sc->field, v, err);                             \
    }                                                                                       \
    FAULT_FORMAT(field)
FAULT_LIST(crash, SIM_FAULT_CRASH)
FAULT_LIST(link_down, SIM_FAULT_LINK_DOWN)
FAULT_LIST(link_degrade, SIM_FAULT_LINK_DEGRADE)
FAULT_LIST(straggler, SIM_FAULT_STRAGGLER)
#define FAULT_DIST(field, type, parser)                                                     \
    static dt_status parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,   \
                                   dt_err_t *err)                                           \
    {                                                                                       \
        (void)ctx;                                                                          \
        type t;                                                                             \
        dt_err_t e;                                                                         \
        if (parser(v, &t, &e))                                                              \
            return dt_err_input(err, "%s", e.msg);                                          \
        return fault_text(sc->field, sizeof sc->field, v, err);                             \
    }                                                                                       \
    FAULT_FORMAT(field)
FAULT_DIST(slowdown, sim_slowdown_t, sim_slowdown_parse)
FAULT_DIST(availability, sim_availability_t, sim_availability_parse)
FAULT_DIST(client_speed, sim_client_classes_t, sim_client_classes_parse)

static const key_desc_t keys[] = {
    /* [run] */
    K_STRING("run", "name", "scenario", name, "text",
             "the file's base name without .ini (\"scenario\" without a file)",
             "run name in the results"),
    K_NUM("run", "seed", KEY_INT, "1", OFF(seed, uint64_t), ST_U64, 0, 2147483647, 0,
          "seed of every random stream (data split, initialisation, sampling)"),
    K_LONG("run", "steps", "200", steps, 1, 1e9,
           "synchronous steps (per worker for async-ps and local-sgd; fedavg uses rounds)"),
    K_UNIT("run", "max_time", KEY_TIME, "0s", max_time, 0, 0,
           "simulated-time limit; 0 = none"),
    K_LONG("run", "eval_every", "50", eval_every, 0, 1e9,
           "evaluate on the test set every N steps (rounds for fedavg); 0 = no step marks"),
    K_UNIT("run", "eval_interval", KEY_TIME, "0s", eval_interval, 0, 0,
           "also evaluate at the first step boundary after every multiple of this simulated "
           "time; 0 = no time marks"),
    K_DOUBLE("run", "target_accuracy", "0.85", target_accuracy, 0, 1, 0,
             "test accuracy for \"time to target\""),
    K_ENUM("run", "time_model", "flops", time_model, sim_time_model_t, time_model_names, 0,
           "compute time: counted FLOPs / device speed (deterministic) or measured wall time "
           "of the real kernels"),
    K_BOOL("run", "shared_replicas", "yes", shared_replicas,
           "all-reduce workers keep one shared parameter and momentum copy, updated once per "
           "step, since their replicas are identical by construction (no for one copy each: "
           "same results, N times the memory and update work)"),
    K_LONG("run", "timeline_steps", "5", timeline_steps, 0, 1e6,
           "record who computes, sends and waits until the first node has computed this many "
           "gradients (the timeline figure); 0 = none"),
    K_STRING("run", "db", "results/dtsim.db", db, "path", NULL,
             "results database (relative to the current directory)"),

    /* [model] */
    K_CUSTOM("model", "arch", "mlp", parse_arch, format_arch,
             "logreg, mlp, cnn, profile:NAME, profile:FILE.ini",
             "model architecture; a profile (resnet50, resnet101, inception_v3, vgg16, "
             "bert_large, gpt2_xl) is timed, not trained"),
    K_CUSTOM("model", "hidden", "256,128", parse_hidden, format_hidden,
             "comma-separated sizes in [1, 1048576], at most 8", "mlp hidden layer sizes"),
    K_CUSTOM("model", "conv", "16,32", parse_conv, format_conv,
             "C1,C2: two integers in [1, 4096]", "cnn output channels of the two convolutions"),
    K_INTF("model", "kernel", "5", model.kernel, 1, 15, "cnn convolution kernel size"),
    K_INTF("model", "fc", "128", model.fc, 1, 1048576, "cnn dense hidden size"),
    K_LONG("model", "batch", "64", batch, 1, 65536,
           "batch size per worker (per client for fedavg)"),
    K_FLOAT("model", "lr", "0.05", sgd.lr, 0, 100, OPEN_MIN, "learning rate"),
    K_FLOAT("model", "momentum", "0", sgd.momentum, 0, 1, OPEN_MAX, "SGD momentum"),
    K_FLOAT("model", "weight_decay", "0", sgd.weight_decay, 0, 1, 0, "L2 weight decay"),
    K_CUSTOM("model", "schedule", "constant", parse_schedule, format_schedule,
             "constant, cosine", "learning-rate schedule over the run"),
    K_LONG("model", "threads", "1", threads, 1, 1024, "OpenBLAS threads of the real kernels"),
    K_ENUM("model", "device", "cpu", backend, sim_backend_t, backend_names, 0,
           "where the real kernels run: cpu (OpenBLAS), cuda (cuBLAS and CUDA kernels; an "
           "error without a usable GPU) or auto (cuda when usable, else cpu)"),
    K_ENUM("model", "side_by_side", "auto", side_by_side, sim_side_by_side_t, side_names, 0,
           "fedavg and local-sgd: train a round's clients (a period's workers) side by side "
           "as replicas, one launch per op for all of them (same results up to float "
           "rounding; auto: on the cuda device only)"),

    /* [data] */
    K_CUSTOM("data", "source", "fashion-mnist", parse_source, format_source,
             "fashion-mnist, synthetic, or a directory of MNIST-format IDX files (relative "
             "to the scenario file)",
             "data set"),
    K_LONG("data", "train_samples", "0", train_samples, 0, 1e9,
           "training samples used; 0 = all (synthetic: 60000 are made)"),
    K_LONG("data", "test_samples", "0", test_samples, 0, 1e9, "test samples used; 0 = all"),
    K_LONG("data", "synthetic_dim", "784", synthetic_dim, 1, 1048576,
           "synthetic: features per sample"),
    K_LONG("data", "synthetic_classes", "10", synthetic_classes, 2, 256,
           "synthetic: number of classes"),
    K_DOUBLE("data", "synthetic_noise", "1", synthetic_noise, 0, 100, OPEN_MIN,
             "synthetic: standard deviation of the noise around each class centre"),
    K_CUSTOM("data", "partition", "iid", parse_partition, format_partition,
             "iid, dirichlet:ALPHA (ALPHA > 0), shards:K (K >= 1)",
             "how the training set is split across workers or clients"),

    /* [cluster] */
    K_CUSTOM("cluster", "platform", "star", parse_platform, format_platform,
             "star, fat-tree, multi-rack, edge, or a path to a SimGrid .xml file (relative to "
             "the scenario file)",
             "simulated cluster"),
    K_LONG("cluster", "workers", "8", workers, 1, 100000,
           "trainer hosts (fedavg: client hosts; single ignores it and uses one; pipeline uses "
           "one per stage)"),
    K_UNIT("cluster", "bandwidth", KEY_BANDWIDTH, "10Gbps", bandwidth, 0, OPEN_MIN,
           "bandwidth of each host's link"),
    K_UNIT("cluster", "latency", KEY_TIME, "5us", latency, 0, 0, "latency of each host's link"),
    K_UNIT("cluster", "uplink_bandwidth", KEY_BANDWIDTH, "40Gbps", uplink_bandwidth, 0,
           OPEN_MIN, "bandwidth of rack and fat-tree uplinks"),
    K_UNIT("cluster", "uplink_latency", KEY_TIME, "5us", uplink_latency, 0, 0,
           "latency of rack and fat-tree uplinks"),
    K_LONG("cluster", "racks", "2", racks, 1, 100000, "multi-rack: number of racks"),
    K_ENUM("cluster", "network_model", "LV08", network_model, sim_net_model_t, net_model_names,
           NOCASE,
           "SimGrid network model: LV08 (calibrated TCP), CM02 (max-min sharing; with "
           "crosstraffic = no, pure latency + size/bandwidth), SMPI"),
    K_BOOL("cluster", "crosstraffic", "yes", crosstraffic,
           "model the acknowledgement traffic flowing back on each link"),
    K_CUSTOM("cluster", "device", "cpu", parse_device, format_device,
             "cpu, v100, a100, h100 (profiles below), FILE.ini (a profile dtsim calibrate "
             "wrote, relative to the scenario file) or custom",
             "simulated device of every host; its speed becomes device_flops"),
    {.section = "cluster", .key = "device_flops", .type = KEY_FLOPS, .def = NULL,
     .off = OFF(device_flops, double), .store = ST_DOUBLE, .min = 0, .max = INFINITY,
     .flags = OPEN_MIN | DERIVED, .defdoc = "the device's speed",
     .doc = "simulated device speed; given without device it makes the device custom"},

    /* [strategy] */
    K_CUSTOM("strategy", "kind", "sync-ps", parse_kind, format_kind, NULL, "training strategy"),
    K_LONG("strategy", "servers", "1", servers, 1, 1024,
           "parameter-server shards (sync-ps, async-ps); at most workers"),
    K_LONG("strategy", "staleness", "0", staleness, 0, 1000000,
           "async-ps: largest gradient staleness accepted; 0 = unbounded"),
    K_ENUM("strategy", "algorithm", "ring", algorithm, sim_allreduce_algo_t, algorithm_names,
           0, "all-reduce algorithm (allreduce)"),
    K_ENUM("strategy", "ring_messages", "steps", ring_messages, sim_ring_messages_t,
           ring_message_names, 0,
           "ring all-reduce: steps = one message per step, 2 (p-1) per member; phases = one "
           "per phase after a zero-byte latency probe, the other latencies waited out "
           "(timing-only runs of thousands of workers; same time when the ring has its links "
           "to itself)"),
    K_DOUBLE("strategy", "bucket_mb", "0", bucket_mb, 0, 1e6, 0,
             "allreduce: gradient buckets of this many MB (1e6 bytes), all-reduced while the "
             "backward pass goes on (PyTorch DDP's bucket_cap_mb, Horovod's fusion buffer); "
             "0 = one all-reduce after the backward pass; other strategies ignore it"),
    K_LONG("strategy", "group_size", "4", group_size, 1, 100000,
           "hierarchical all-reduce: workers per group (consecutive ranks); must divide "
           "workers; on a multi-rack platform the racks are the groups"),
    K_LONG("strategy", "local_steps", "8", local_steps, 1, 1000000,
           "local-sgd: local steps between averagings (H)"),
    K_LONG("strategy", "clients", "100", clients, 1, 10000000, "fedavg: client population"),
    K_DOUBLE("strategy", "fraction", "0.1", fraction, 0, 1, OPEN_MIN,
             "fedavg: fraction of clients sampled per round; floor(clients x fraction) >= 1"),
    K_LONG("strategy", "local_epochs", "1", local_epochs, 1, 1000,
           "fedavg: local epochs per round (E)"),
    K_LONG("strategy", "rounds", "20", rounds, 1, 10000000, "fedavg: rounds"),
    K_DOUBLE("strategy", "prox_mu", "0", prox_mu, 0, 1000, 0,
             "FedProx proximal term; 0 = plain FedAvg"),
    K_LONG("strategy", "stages", "2", stages, 1, 64,
           "pipeline: stages, each a run of consecutive layers on its own host (cut where the "
           "FLOPs balance best, at layers with weights; a model profile: at its [forward] "
           "cuts); cluster.workers, if given, must equal it"),
    K_LONG("strategy", "micro_batches", "4", micro_batches, 1, 4096,
           "pipeline: micro-batches each step's model.batch is cut into (must divide it)"),
    K_ENUM("strategy", "pipeline_schedule", "1f1b", pipeline_schedule, sim_pipeline_schedule_t,
           pipe_schedule_names, 0,
           "pipeline: gpipe (all forwards, then all backwards; every micro-batch's activations "
           "held at once) or 1f1b (PipeDream-Flush: one forward, one backward; at most stages "
           "micro-batches in flight); both flush and update once per step"),
    K_LONG("strategy", "data_parallel", "1", data_parallel, 1, 4096,
           "pipeline: replicas of the whole pipeline (hybrid data + pipeline parallelism: "
           "data_parallel x stages workers, each replica on its own batch of model.batch, each "
           "stage's gradients all-reduced with `algorithm` across the replicas before its "
           "update); cluster.workers, if given, must equal data_parallel x stages"),
    K_LONG("strategy", "tensor_parallel", "2", tensor_parallel, 1, 1024,
           "tensor: workers every dense layer is split across (Megatron-LM: column split, "
           "then row split, an all-reduce of activations per pair; an unpaired last layer "
           "column-split with an all-gather); must divide the widths it splits; "
           "cluster.workers, if given, must equal it"),
    K_LONG("strategy", "zero_stage", "1", zero_stage, 1, 3,
           "zero (sharded data parallelism, ZeRO): 1 shards the optimizer state, 2 also the "
           "gradients, 3 also the parameters (all-gathered for the forward and again for the "
           "backward pass); every stage reduce-scatters the gradients, updates its shard and "
           "all-gathers the parameters"),
    K_LONG("strategy", "accumulate", "1", accumulate, 1, 100000,
           "single, sync-ps, allreduce, zero, fedavg: gradient accumulation, micro-batches of "
           "model.batch summed before each exchange and update (a step then takes accumulate "
           "x batch samples per worker; a fedavg client's local step likewise)"),
    K_CUSTOM("strategy", "compression", "none", parse_compression, format_compression,
             "none, fp16, qsgd8, topk:F (0 < F <= 1)",
             "sync-ps, allreduce, fedavg: what gradients (fedavg: model updates) travel as: "
             "fp16 halves, qsgd8 8-bit stochastic quantization with a scale per 512, topk:F "
             "the largest F of them as index + value pairs; bytes on the wire are the "
             "encoding's (Compression below)"),
    K_BOOL("strategy", "error_feedback", "yes", error_feedback,
           "with a lossy compression: each sender keeps what its encoding left out and adds "
           "it to its next gradient (fedavg: per client)"),
    K_BOOL("strategy", "momentum_correction", "yes", momentum_correction,
           "sync-ps and allreduce with topk, error feedback and model.momentum > 0: each worker "
           "keeps the momentum of its own gradients, accumulates that, and clears what it sent "
           "(DGC, Lin et al. 2018); the update is then plain SGD"),

    /* [faults] */
    K_UNIT("faults", "timeout", KEY_TIME, "1s", fault_timeout, 0, OPEN_MIN,
           "with any fault below: a node waits this long for a peer before it presumes it "
           "dead (must exceed the longest healthy wait)"),
    K_CUSTOM("faults", "crash", "none", parse_crash, format_crash,
             "none, or TARGET at TIME [for DURATION | until TIME], ... (TARGET: worker-N, "
             "server-N, client-N or a host)",
             "host crashes (SimGrid host off); with for/until the host comes back and its node "
             "rejoins"),
    K_CUSTOM("faults", "link_down", "none", parse_link_down, format_link_down,
             "none, or LINK at TIME [for DURATION | until TIME], ... (LINK: a link name, with "
             "or without _UP/_DOWN, or a node or host for its own links)",
             "links that carry nothing for an interval (traffic stalls as TCP's does; peers "
             "notice by timeout)"),
    K_CUSTOM("faults", "link_degrade", "none", parse_link_degrade, format_link_degrade,
             "none, or LINK at TIME to BANDWIDTH [for DURATION | until TIME], ...",
             "links whose bandwidth drops for an interval"),
    K_CUSTOM("faults", "straggler", "none", parse_straggler, format_straggler,
             "none, or TARGET xFACTOR [at TIME] [for DURATION | until TIME], ...",
             "compute slowdown of a node or host (x4: four times slower), always or for an "
             "interval"),
    K_CUSTOM("faults", "slowdown", "none", parse_slowdown, format_slowdown,
             "none, uniform:LO:HI, lognormal:SIGMA",
             "slowdown factor drawn once per worker host (seeded)"),
    K_UNIT("faults", "mtbf", KEY_TIME, "0s", mtbf, 0, 0,
           "mean time between failures of each worker host (exponential, seeded); 0 = none"),
    K_UNIT("faults", "mttr", KEY_TIME, "0s", mttr, 0, 0,
           "mean time to repair after a random failure (exponential); 0 = never back"),
    K_LONG("faults", "checkpoint_every", "0", checkpoint_every, 0, 1000000000,
           "sync-ps servers and the single worker checkpoint every N steps and restart from "
           "it after a crash; 0 = restart from the initial weights"),
    K_DOUBLE("faults", "dropout", "0", dropout, 0, 1, 0,
             "fedavg: probability that a sampled client drops out of its round"),
    K_UNIT("faults", "deadline", KEY_TIME, "0s", deadline, 0, 0,
           "fedavg: the server aggregates what arrived this long after the round started; "
           "0 = waits for every client (at most faults.timeout of silence)"),
    K_DOUBLE("faults", "over_select", "1", over_select, 1, 10, 0,
             "fedavg: sample this many times the clients needed and keep the first to answer"),
    K_CUSTOM("faults", "availability", "always", parse_availability, format_availability,
             "always, PERIOD:FRACTION (e.g. 24h:0.3)",
             "fedavg: each client is online FRACTION of every PERIOD (phase drawn per client); "
             "only online clients are sampled"),
    K_CUSTOM("faults", "client_speed", "same", parse_client_speed, format_client_speed,
             "same, or SPEED:SHARE, ... (shares sum to 1)",
             "fedavg: device classes of the clients (each client draws one; same = "
             "cluster.device)"),
};
#define N_KEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(sizeof keys / sizeof keys[0] <= SCENARIO_MAX_KEYS, "grow SCENARIO_MAX_KEYS");

static int key_find(const char *section, const char *key)
{
    for (int k = 0; k < N_KEYS; k++)
        if (!strcmp(keys[k].section, section) && !strcmp(keys[k].key, key))
            return k;
    return -1;
}

static int key_index(const char *section, const char *key)
{
    int k = key_find(section, key);
    DT_ASSERT(k >= 0);
    return k;
}

static int section_known(const char *name)
{
    for (int i = 0; section_names[i]; i++)
        if (!strcmp(section_names[i], name))
            return 1;
    return 0;
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions), for
 * "did you mean". */
static int edit_distance(const char *a, const char *b)
{
    enum { MAX = 48 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAX || m >= MAX)
        return MAX;
    int d[MAX][MAX];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* " (did you mean X?)" or " (X is a [cluster] key)" or "". */
static void key_hint(const char *section, const char *key, char *buf, size_t n)
{
    buf[0] = '\0';
    int best = 3;
    const char *best_key = NULL;
    for (int k = 0; k < N_KEYS; k++) {
        if (strcmp(keys[k].section, section))
            continue;
        int dist = edit_distance(key, keys[k].key);
        if (dist < best) {
            best = dist;
            best_key = keys[k].key;
        }
    }
    if (best_key) {
        snprintf(buf, n, " (did you mean %s?)", best_key);
        return;
    }
    for (int k = 0; k < N_KEYS; k++)
        if (!strcmp(keys[k].key, key)) {
            snprintf(buf, n, " (%s is a [%s] key)", key, keys[k].section);
            return;
        }
}

static void section_hint(const char *section, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; section_names[i]; i++)
        if (edit_distance(section, section_names[i]) <= 2) {
            snprintf(buf, n, "; did you mean [%s]?", section_names[i]);
            return;
        }
}

/* ---- [sweep] lookups --------------------------------------------------------------------- */

/* The position of key k in sc's [sweep], -1 if it is not swept. */
static int sweep_find(const scenario_t *sc, int k)
{
    for (int j = 0; j < sc->sweep.n_keys; j++)
        if (sc->sweep.keys[j].key == k)
            return j;
    return -1;
}

static const char *sweep_value(const scenario_t *sc, const scenario_sweep_key_t *sk, int v)
{
    return sc->sweep.text + sk->value[v];
}

/* The other key of the device / device_flops pair, -1 for any other key. */
static int device_partner(int k);

/* ---- errors with a location ------------------------------------------------------------ */

/* "PATH:LINE: section.key: msg" (a file line), "--set section.key: msg" (line < 0),
 * "PATH: section.key: msg" (line 0, a default or derived value). In a run of a sweep, a
 * swept key reads "PATH:LINE: sweep section.key: value N \"V\": msg" and any other key's
 * message ends with the run it happened in. */
static dt_status key_error(dt_err_t *err, const scenario_t *sc, int line, int k,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static dt_status key_error(dt_err_t *err, const scenario_t *sc, int line, int k,
                           const char *fmt, ...)
{
    char msg[512 + SCENARIO_STR + 32]; /* room for the run's name */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, 512, fmt, ap);
    va_end(ap);
    const char *s = keys[k].section, *key = keys[k].key;
    if (sc->sweep.is_run) {
        int j = sweep_find(sc, k);
        if (j >= 0 && line == sc->sweep.keys[j].line) {
            const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
            return dt_err_input(err, "%s:%d: sweep %s.%s: value %d \"%s\": %s", sc->path, line, s,
                                key, sk->chosen + 1, sweep_value(sc, sk, sk->chosen), msg);
        }
        size_t len = strlen(msg);
        snprintf(msg + len, sizeof msg - len, " (in run %ld: %s)", sc->sweep.run, sc->name);
    }
    if (line > 0)
        return dt_err_input(err, "%s:%d: %s.%s: %s", sc->path, line, s, key, msg);
    if (line < 0)
        return dt_err_input(err, "--set %s.%s: %s", s, key, msg);
    if (sc->path[0])
        return dt_err_input(err, "%s: %s.%s: %s", sc->path, s, key, msg);
    return dt_err_input(err, "%s.%s: %s", s, key, msg);
}

/* "section.key at line N" / "from --set" / "by default": the second key of a cross-key
 * message. */
static void key_where(const scenario_t *sc, int k, char *buf, size_t n)
{
    int line = sc->key_line[k], j = sc->sweep.is_run ? sweep_find(sc, k) : -1;
    if (j >= 0) {
        const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
        snprintf(buf, n, "%s.%s = %s from [sweep] at line %d", keys[k].section, keys[k].key,
                 sweep_value(sc, sk, sk->chosen), sk->line);
    } else if (line > 0)
        snprintf(buf, n, "%s.%s at line %d", keys[k].section, keys[k].key, line);
    else
        snprintf(buf, n, "%s.%s %s", keys[k].section, keys[k].key,
                 line < 0 ? "from --set" : "by default");
}

/* ---- values ---------------------------------------------------------------------------- */

static void *field_ptr(scenario_t *sc, const key_desc_t *d) { return (char *)sc + d->off; }
static const void *field_cptr(const scenario_t *sc, const key_desc_t *d)
{
    return (const char *)sc + d->off;
}

/* A string field is zero-filled past its text, so that structs built by different
 * sequences of assignments compare equal byte for byte. */
static dt_status set_string(char *dst, size_t cap, const char *v, dt_err_t *err)
{
    size_t len = strlen(v);
    if (len >= cap)
        return dt_err_input(err, "longer than %zu characters", cap - 1);
    for (const char *p = v; *p; p++) {
        if (iscntrl((unsigned char)*p))
            return dt_err_input(err, "contains a control character");
        if (p > v && *p == ';' && isspace((unsigned char)p[-1]))
            return dt_err_input(err, "\"%s\" contains \" ;\", which starts a comment in a "
                                     "scenario file",
                                v);
    }
    memset(dst, 0, cap);
    memcpy(dst, v, len);
    return DT_OK;
}

static void range_text(const key_desc_t *d, int integer, char *buf, size_t n)
{
    if (isinf(d->max)) {
        snprintf(buf, n, "%s %g", (d->flags & OPEN_MIN) ? ">" : ">=", d->min);
    } else if (integer) {
        snprintf(buf, n, "an integer in [%.0f, %.0f]", d->min, d->max);
    } else {
        snprintf(buf, n, "a number in %c%g, %g%c", (d->flags & OPEN_MIN) ? '(' : '[', d->min,
                 d->max, (d->flags & OPEN_MAX) ? ')' : ']');
    }
}

static int in_range(const key_desc_t *d, double v)
{
    if ((d->flags & OPEN_MIN) ? !(v > d->min) : !(v >= d->min))
        return 0;
    if ((d->flags & OPEN_MAX) ? !(v < d->max) : !(v <= d->max))
        return 0;
    return 1;
}

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false",
                                                                                "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(v, no[i])) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static void names_text(const char *const *names, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", names[i]);
}

/* Parses v into key d's field; the message in err has no location (the caller adds it). */
static dt_status key_apply(scenario_t *sc, const key_desc_t *d, const char *v,
                           const parse_ctx_t *ctx, dt_err_t *err)
{
    void *p = field_ptr(sc, d);
    char range[96];
    switch (d->type) {
    case KEY_INT: {
        range_text(d, 1, range, sizeof range);
        size_t len = scan_number(v);
        if (!len || v[len] || strpbrk(v, ".eE"))
            return dt_err_input(err, "\"%s\" is not an integer (expected %s)", v, range);
        errno = 0;
        long x = strtol(v, NULL, 10);
        if (errno || !in_range(d, (double)x))
            return dt_err_input(err, "%s is out of range (expected %s)", v, range);
        if (d->store == ST_INT)
            *(int *)p = (int)x;
        else if (d->store == ST_LONG)
            *(long *)p = x;
        else
            *(uint64_t *)p = (uint64_t)x;
        return DT_OK;
    }
    case KEY_REAL: {
        range_text(d, 0, range, sizeof range);
        size_t len;
        double x;
        if (number_prefix(v, &len, &x) || v[len] || !isfinite(x))
            return dt_err_input(err, "\"%s\" is not a number (expected %s)", v, range);
        if (!in_range(d, x))
            return dt_err_input(err, "%s is out of range (expected %s)", v, range);
        if (d->store == ST_FLOAT)
            *(float *)p = (float)x;
        else
            *(double *)p = x;
        return DT_OK;
    }
    case KEY_BOOL: {
        int b;
        if (parse_bool(v, &b))
            return dt_err_input(err, "\"%s\" is not a yes/no value (expected yes, no, true, "
                                     "false, on, off, 1 or 0)",
                                v);
        *(int *)p = b;
        return DT_OK;
    }
    case KEY_STRING:
        if (!*v)
            return dt_err_input(err, "empty value (expected %s)", d->accepted);
        return set_string(p, d->size, v, err);
    case KEY_ENUM: {
        for (int i = 0; d->names[i]; i++)
            if ((d->flags & NOCASE) ? !strcasecmp(v, d->names[i]) : !strcmp(v, d->names[i])) {
                *(int *)p = i;
                return DT_OK;
            }
        char list[256];
        names_text(d->names, list, sizeof list);
        return dt_err_input(err, "unknown value \"%s\" (expected one of %s%s)", v, list,
                            (d->flags & NOCASE) ? ", in any case" : "");
    }
    case KEY_BANDWIDTH:
    case KEY_TIME:
    case KEY_FLOPS: {
        double x;
        dt_status st = d->type == KEY_BANDWIDTH ? scenario_parse_bandwidth(v, &x, err)
                       : d->type == KEY_TIME    ? scenario_parse_time(v, &x, err)
                                                    : scenario_parse_flops(v, &x, err);
        if (st)
            return st;
        range_text(d, 0, range, sizeof range);
        if (!in_range(d, x))
            return dt_err_input(err, "\"%s\" is out of range (expected %s)", v, range);
        *(double *)p = x;
        return DT_OK;
    }
    case KEY_CUSTOM:
        return d->parse(sc, v, ctx, err);
    }
    DT_ASSERT(0);
    return DT_ERR_INPUT;
}

static void key_format(const scenario_t *sc, const key_desc_t *d, char *buf, size_t n)
{
    const void *p = field_cptr(sc, d);
    switch (d->type) {
    case KEY_INT:
        if (d->store == ST_INT)
            snprintf(buf, n, "%d", *(const int *)p);
        else if (d->store == ST_LONG)
            snprintf(buf, n, "%ld", *(const long *)p);
        else
            snprintf(buf, n, "%" PRIu64, *(const uint64_t *)p);
        return;
    case KEY_REAL:
        if (d->store == ST_FLOAT)
            format_float(buf, n, *(const float *)p);
        else
            format_double(buf, n, *(const double *)p);
        return;
    case KEY_BOOL:
        snprintf(buf, n, "%s", *(const int *)p ? "yes" : "no");
        return;
    case KEY_STRING:
        snprintf(buf, n, "%s", (const char *)p);
        return;
    case KEY_ENUM:
        snprintf(buf, n, "%s", d->names[*(const int *)p]);
        return;
    case KEY_BANDWIDTH:
        format_unit(buf, n, *(const double *)p, bandwidth_units);
        return;
    case KEY_TIME:
        format_unit(buf, n, *(const double *)p, time_units);
        return;
    case KEY_FLOPS:
        format_unit(buf, n, *(const double *)p, flops_units);
        return;
    case KEY_CUSTOM:
        d->format(sc, buf, n);
        return;
    }
}

/* ---- custom keys ----------------------------------------------------------------------- */

#define FAULT_TEXT_MAX 180
static dt_status fault_text(char *dst, size_t cap, const char *v, dt_err_t *err)
{
    while (isspace((unsigned char)*v))
        v++;
    char buf[SCENARIO_STR];
    size_t len = strlen(v);
    while (len && isspace((unsigned char)v[len - 1]))
        len--;
    /* written back as "link_degrade = VALUE" on one line, which must stay under the
     * reader's line limit */
    if (len > FAULT_TEXT_MAX || len >= cap)
        return dt_err_input(err, "longer than %d characters (one scenario line)",
                            FAULT_TEXT_MAX);
    memcpy(buf, v, len);
    buf[len] = '\0';
    if (!buf[0])
        strcpy(buf, "none");
    return set_string(dst, cap, buf, err);
}

static dt_status resolve_path(const char *v, const parse_ctx_t *ctx, int want_dir, char *out,
                              size_t cap, dt_err_t *err);

/* "profile:NAME" or "profile:FILE.ini" makes the run timing-only: the profile is checked
 * now and kept (a file as an absolute path). */
static dt_status parse_arch(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                            dt_err_t *err)
{
    if (strncmp(v, "profile:", 8)) {
        sc->profile[0] = '\0';
        sc->profile_pieces = 0;
        return trainer_arch_parse(&sc->model.arch, v, err);
    }
    char spec[SCENARIO_STR];
    if (sim_model_profile_is_file(v + 8)) {
        if (resolve_path(v + 8, ctx, 0, spec, sizeof spec, err))
            return DT_ERR_INPUT;
    } else if (set_string(spec, sizeof spec, v + 8, err)) {
        return DT_ERR_INPUT;
    }
    sim_model_profile_t prof;
    if (sim_model_profile_load(&prof, spec, err))
        return DT_ERR_INPUT;
    sc->profile_pieces = prof.has_forward_layers;
    for (int i = 0; prof.has_forward_layers && i < prof.n_layers; i++)
        sc->profile_pieces += prof.layers[i].cut > 0;
    sim_model_profile_free(&prof);
    return set_string(sc->profile, sizeof sc->profile, spec, err);
}

static void format_arch(const scenario_t *sc, char *buf, size_t n)
{
    if (sc->profile[0])
        snprintf(buf, n, "profile:%s", sc->profile);
    else
        snprintf(buf, n, "%s", trainer_arch_name(sc->model.arch));
}

static dt_status parse_hidden(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                              dt_err_t *err)
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

static void format_hidden(const scenario_t *sc, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < sc->model.n_hidden && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? "," : "", sc->model.hidden[i]);
}

static dt_status parse_conv(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                            dt_err_t *err)
{
    (void)ctx;
    long c[2];
    const char *p = v;
    for (int i = 0; i < 2; i++) {
        while (*p == ' ')
            p++;
        size_t len = scan_number(p);
        errno = 0;
        c[i] = len && p[0] != '-' && !strpbrk(p, ".eE") ? strtol(p, NULL, 10) : -1;
        p += len;
        while (*p == ' ')
            p++;
        if (!len || errno || c[i] < 1 || c[i] > 4096 || *p != (i == 0 ? ',' : '\0'))
            return dt_err_input(err, "bad channel counts \"%s\" (expected C1,C2: two integers "
                                     "in [1, 4096], e.g. 16,32)",
                                v);
        if (i == 0)
            p++;
    }
    sc->model.conv[0] = (int)c[0];
    sc->model.conv[1] = (int)c[1];
    return DT_OK;
}

static void format_conv(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%d,%d", sc->model.conv[0], sc->model.conv[1]);
}

static dt_status parse_schedule(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                dt_err_t *err)
{
    (void)ctx;
    return trainer_lr_schedule_parse(&sc->schedule, v, err);
}

static void format_schedule(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", schedule_names[sc->schedule]);
}

static dt_status parse_partition(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                 dt_err_t *err)
{
    (void)ctx;
    trainer_partition_spec_t spec; /* the parser clears its output even on error */
    if (trainer_partition_parse(&spec, v, err))
        return DT_ERR_INPUT;
    sc->partition = spec;
    return DT_OK;
}

static dt_status parse_compression(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                   dt_err_t *err)
{
    (void)ctx;
    trainer_codec_t c;
    if (trainer_codec_parse(&c, v, err))
        return DT_ERR_INPUT;
    sc->compression = c;
    return DT_OK;
}

static void format_compression(const scenario_t *sc, char *buf, size_t n)
{
    trainer_codec_format(&sc->compression, buf, n);
}

static void format_partition(const scenario_t *sc, char *buf, size_t n)
{
    char num[40];
    switch (sc->partition.kind) {
    case TRAINER_PARTITION_IID:
        snprintf(buf, n, "iid");
        return;
    case TRAINER_PARTITION_DIRICHLET:
        format_double(num, sizeof num, sc->partition.alpha);
        snprintf(buf, n, "dirichlet:%s", num);
        return;
    case TRAINER_PARTITION_SHARDS:
        snprintf(buf, n, "shards:%d", sc->partition.shards);
        return;
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Resolves a path written in a scenario against its directory and makes it absolute, so
 * the resolved scenario reads the same from anywhere. want_dir: 1 directory, 0 file. */
static dt_status resolve_path(const char *v, const parse_ctx_t *ctx, int want_dir, char *out,
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

static dt_status parse_source(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                              dt_err_t *err)
{
    if (!strcmp(v, "fashion-mnist") || !strcmp(v, "synthetic"))
        return set_string(sc->data_source, sizeof sc->data_source, v, err);
    if (!*v)
        return dt_err_input(err, "empty value (expected fashion-mnist, synthetic or a "
                                 "directory)");
    dt_err_t e;
    if (resolve_path(v, ctx, 1, sc->data_source, sizeof sc->data_source, &e))
        return dt_err_input(err, "%s (expected fashion-mnist, synthetic or a directory of "
                                 "MNIST-format files)",
                            e.msg);
    return DT_OK;
}

static void format_source(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->data_source);
}

/* strategy.kind: a name from the registry (strategy_def.h), listed in its order */
static void kind_names(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    const sim_strategy_t *const *s = scenario_strategies();
    for (int i = 0; s[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", s[i]->name);
}

static dt_status parse_kind(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                            dt_err_t *err)
{
    (void)ctx;
    const sim_strategy_t *st = scenario_strategy_find(v);
    if (st) {
        sc->strategy = st;
        return DT_OK;
    }
    char list[256];
    kind_names(list, sizeof list);
    return dt_err_input(err, "unknown value \"%s\" (expected one of %s)", v, list);
}

static void format_kind(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->strategy->name);
}

static dt_status parse_platform(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                dt_err_t *err)
{
    for (int i = 0; platform_names[i]; i++)
        if (!strcmp(v, platform_names[i])) {
            sc->platform = (sim_platform_kind_t)i;
            memset(sc->platform_file, 0, sizeof sc->platform_file);
            return DT_OK;
        }
    if (ends_with(v, ".so") || strstr(v, ".so."))
        return dt_err_input(err, "\"%s\" refused: a .so platform is compiled code that SimGrid "
                                 "would load and run; give a SimGrid .xml file",
                            v);
    if (!ends_with(v, ".xml"))
        return dt_err_input(err, "unknown platform \"%s\" (expected star, fat-tree, multi-rack, "
                                 "edge or a path to a SimGrid .xml file)",
                            v);
    if (resolve_path(v, ctx, 0, sc->platform_file, sizeof sc->platform_file, err))
        return DT_ERR_INPUT;
    sc->platform = SIM_PLATFORM_FILE;
    return DT_OK;
}

static void format_platform(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s",
             sc->platform == SIM_PLATFORM_FILE ? sc->platform_file : platform_names[sc->platform]);
}

static dt_status parse_device(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                              dt_err_t *err)
{
    if (ends_with(v, ".ini")) { /* a profile file: checked now, kept as an absolute path */
        char path[SCENARIO_STR];
        double flops;
        if (resolve_path(v, ctx, 0, path, sizeof path, err) || profile_read(path, &flops, err))
            return DT_ERR_INPUT;
        return set_string(sc->device, sizeof sc->device, path, err);
    }
    if (!builtin_profile(v) && strcmp(v, "custom"))
        return dt_err_input(err, "unknown device \"%s\" (expected cpu, v100, a100, h100, a "
                                 "profile file FILE.ini from dtsim calibrate, or custom with "
                                 "device_flops)",
                            v);
    return set_string(sc->device, sizeof sc->device, v, err);
}

static void format_device(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->device);
}

/* ---- [sweep] ---------------------------------------------------------------------------- */

static int device_partner(int k)
{
    int kd = key_index("cluster", "device"), kf = key_index("cluster", "device_flops");
    return k == kd ? kf : k == kf ? kd : -1;
}

/* "PATH:LINE: sweep NAME: msg" for a [sweep] line; value > 0 adds "value N \"V\": ". */
static dt_status sweep_error(dt_err_t *err, const scenario_t *sc, int line, const char *name,
                             int value, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static dt_status sweep_error(dt_err_t *err, const scenario_t *sc, int line, const char *name,
                             int value, const char *text, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (value > 0)
        return dt_err_input(err, "%s:%d: sweep %s: value %d \"%s\": %s", sc->path, line, name,
                            value, text, msg);
    return dt_err_input(err, "%s:%d: sweep %s: %s", sc->path, line, name, msg);
}

/* The swept key named "section.key" on a [sweep] line: its index, or -1 with the error. */
static int sweep_key(const scenario_t *sc, const char *name, int line, dt_err_t *err)
{
    const char *dot = strchr(name, '.');
    char section[64], hint[96], full[128];
    if (!dot) {
        /* a key name alone, when only one section has it ("bandwidth" = cluster.bandwidth) */
        int found = -1, count = 0;
        for (int k = 0; k < N_KEYS; k++)
            if (!strcmp(keys[k].key, name)) {
                found = k;
                count++;
            }
        if (count == 1) {
            snprintf(full, sizeof full, "%s.%s", keys[found].section, keys[found].key);
            name = full;
            dot = strchr(name, '.');
        }
    }
    if (!dot) {
        key_hint("", name, hint, sizeof hint);
        sweep_error(err, sc, line, name, 0, NULL,
                    "expected section.key = value, value, ... (e.g. cluster.bandwidth = "
                    "1Gbps, 10Gbps)%s",
                    hint);
        return -1;
    }
    size_t slen = (size_t)(dot - name);
    if (slen >= sizeof section)
        slen = sizeof section - 1;
    memcpy(section, name, slen);
    section[slen] = '\0';
    const char *key = dot + 1;
    if (!section_known(section) || !strcmp(section, "sweep")) {
        hint[0] = '\0';
        if (strcmp(section, "sweep"))
            section_hint(section, hint, sizeof hint);
        sweep_error(err, sc, line, name, 0, NULL,
                    "unknown section [%s] (expected run, model, data, cluster, strategy or faults%s)",
                    section, hint);
        return -1;
    }
    int k = key_find(section, key);
    if (k < 0) {
        key_hint(section, key, hint, sizeof hint);
        sweep_error(err, sc, line, name, 0, NULL, "unknown key%s", hint);
        return -1;
    }
    if (k == key_index("run", "name")) {
        sweep_error(err, sc, line, name, 0, NULL,
                    "cannot be swept (each run is named after its swept values)");
        return -1;
    }
    if (k == key_index("run", "db")) {
        sweep_error(err, sc, line, name, 0, NULL,
                    "cannot be swept (the runs of a sweep share one database)");
        return -1;
    }
    int j = sweep_find(sc, k), partner = device_partner(k);
    if (j >= 0) {
        sweep_error(err, sc, line, name, 0, NULL, "given twice in [sweep] (lines %d and %d)",
                    sc->sweep.keys[j].line, line);
        return -1;
    }
    if (partner >= 0 && (j = sweep_find(sc, partner)) >= 0) {
        sweep_error(err, sc, line, name, 0, NULL,
                    "cluster.%s is swept too, at line %d (each of the pair sets the other: "
                    "sweep one of them)",
                    keys[partner].key, sc->sweep.keys[j].line);
        return -1;
    }
    if (sc->sweep.n_keys == SCENARIO_SWEEP_KEYS) {
        sweep_error(err, sc, line, name, 0, NULL, "more than %d swept keys",
                    SCENARIO_SWEEP_KEYS);
        return -1;
    }
    return k;
}

/* Checks one value of swept key k with the key's own parser (on a scratch copy) and appends
 * it, as scenario_write will write it, to sk. */
static dt_status sweep_value_add(scenario_t *sc, scenario_sweep_key_t *sk, const char *name,
                                 const char *v, int line, const parse_ctx_t *ctx,
                                 int allow_repeat, dt_err_t *err)
{
    int k = sk->key, n = sk->n_values + 1;
    if (!*v)
        return sweep_error(err, sc, line, name, 0, NULL,
                           "value %d is empty (expected values separated by commas; quote a "
                           "value that contains one: \"256,128\")",
                           n);
    if (sk->n_values == SCENARIO_SWEEP_VALUES)
        return sweep_error(err, sc, line, name, 0, NULL, "more than %d values",
                           SCENARIO_SWEEP_VALUES);
    scenario_t *scratch = dt_malloc(sizeof *scratch);
    *scratch = *sc;
    dt_err_t e;
    dt_status st = key_apply(scratch, &keys[k], v, ctx, &e);
    char canon[SCENARIO_STR + 64];
    if (!st)
        key_format(scratch, &keys[k], canon, sizeof canon);
    free(scratch);
    if (st)
        return sweep_error(err, sc, line, name, n, v, "%s", e.msg);
    if (k == key_index("cluster", "device") && !profile_find(canon))
        return sweep_error(err, sc, line, name, n, v,
                           "custom needs a speed: sweep cluster.device_flops instead (it makes "
                           "the device custom)");
    if (strchr(canon, '"'))
        return sweep_error(err, sc, line, name, n, v,
                           "contains a double quote, which a [sweep] list cannot hold");
    for (int i = 0; i < sk->n_values; i++)
        if (!strcmp(sweep_value(sc, sk, i), canon)) {
            if (!allow_repeat)
                return sweep_error(err, sc, line, name, n, v, "repeats value %d (both are %s)",
                                   i + 1, canon);
            sk->value[sk->n_values++] = sk->value[i]; /* the same text, stored once */
            return DT_OK;
        }
    size_t len = strlen(canon) + 1;
    if (sc->sweep.text_len + len > SCENARIO_SWEEP_TEXT)
        return sweep_error(err, sc, line, name, n, v,
                           "the values of [sweep] are longer than %d characters in all",
                           SCENARIO_SWEEP_TEXT);
    memcpy(sc->sweep.text + sc->sweep.text_len, canon, len);
    sk->value[sk->n_values++] = (uint16_t)sc->sweep.text_len;
    sc->sweep.text_len += len;
    return DT_OK;
}

/* One [sweep] line: "section.key = v1, v2, ..." with "..." around a value holding a comma. */
static dt_status sweep_add(scenario_t *sc, const char *name, const char *list, int line,
                           const parse_ctx_t *ctx, dt_err_t *err)
{
    int k = sweep_key(sc, name, line, err);
    if (k < 0)
        return DT_ERR_INPUT;
    if (!*list)
        return sweep_error(err, sc, line, name, 0, NULL,
                           "empty list (expected values separated by commas, e.g. "
                           "cluster.bandwidth = 1Gbps, 10Gbps)");
    scenario_sweep_key_t *sk = &sc->sweep.keys[sc->sweep.n_keys];
    memset(sk, 0, sizeof *sk);
    sk->key = k;
    sk->line = line;
    sk->group = sc->sweep.n_keys ? sc->sweep.keys[sc->sweep.n_keys - 1].group + 1 : 0;
    size_t text_len = sc->sweep.text_len;
    char v[SCENARIO_STR];
    dt_status st = DT_OK;
    for (const char *p = list; st == DT_OK;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *start = p, *end;
        if (*p == '"') {
            start = p + 1;
            end = strchr(start, '"');
            if (!end) {
                st = sweep_error(err, sc, line, name, 0, NULL, "value %d: no closing quote",
                                 sk->n_values + 1);
                break;
            }
            for (p = end + 1; *p == ' ' || *p == '\t'; p++)
                ;
            if (*p && *p != ',') {
                st = sweep_error(err, sc, line, name, 0, NULL,
                                 "value %d: text after the closing quote", sk->n_values + 1);
                break;
            }
        } else {
            p += strcspn(p, ",");
            for (end = p; end > start && (end[-1] == ' ' || end[-1] == '\t'); end--)
                ;
            if (memchr(start, '"', (size_t)(end - start))) {
                st = sweep_error(err, sc, line, name, 0, NULL,
                                 "value %d: a quote inside a value (quote whole values: "
                                 "\"256,128\")",
                                 sk->n_values + 1);
                break;
            }
        }
        size_t len = (size_t)(end - start);
        if (len >= sizeof v)
            len = sizeof v - 1; /* lines are shorter than this */
        memcpy(v, start, len);
        v[len] = '\0';
        st = sweep_value_add(sc, sk, name, v, line, ctx, 0, err);
        if (*p != ',')
            break;
        p++;
    }
    long runs = scenario_sweep_count(sc) * sk->n_values;
    if (st == DT_OK && runs > SCENARIO_SWEEP_RUNS)
        st = sweep_error(err, sc, line, name, 0, NULL, "%ld runs in all (expected at most %d)",
                         runs, SCENARIO_SWEEP_RUNS);
    if (st) {
        /* leave the sweep as it was */
        memset(sc->sweep.text + text_len, 0, sc->sweep.text_len - text_len);
        sc->sweep.text_len = text_len;
        memset(sk, 0, sizeof *sk);
        return st;
    }
    sc->sweep.n_keys++;
    return DT_OK;
}

/* Splits the next comma-separated item of p (a "quoted" item may hold commas) into v;
 * returns the text after the item's comma, or NULL at the end of the list. */
static const char *next_item(const char *p, char *v, size_t n, int *bad)
{
    while (*p == ' ' || *p == '\t')
        p++;
    const char *start = p, *end;
    if (*p == '"') {
        start = p + 1;
        end = strchr(start, '"');
        if (!end) {
            *bad = 1;
            return NULL;
        }
        p = end + 1;
        while (*p == ' ' || *p == '\t')
            p++;
    } else {
        p += strcspn(p, ",");
        for (end = p; end > start && (end[-1] == ' ' || end[-1] == '\t'); end--)
            ;
    }
    size_t len = (size_t)(end - start) < n ? (size_t)(end - start) : n - 1;
    memcpy(v, start, len);
    v[len] = '\0';
    if (*p && *p != ',') {
        *bad = 1;
        return NULL;
    }
    return *p == ',' ? p + 1 : NULL;
}

/* A linked [sweep] line: "a.x, b.y = (1, p), (2, q)": the keys move together, one tuple per
 * run position. */
static dt_status sweep_add_linked(scenario_t *sc, const char *names, const char *list,
                                  int line, const parse_ctx_t *ctx, dt_err_t *err)
{
    char name[8][96], item[SCENARIO_STR];
    int n = 0, bad = 0;
    for (const char *p = names; p && n < 8;) {
        p = next_item(p, name[n], sizeof name[n], &bad);
        n++;
        if (p && n == 8)
            return sweep_error(err, sc, line, names, 0, NULL,
                               "more than 8 keys linked on one line");
    }
    int first = sc->sweep.n_keys;
    int group = first ? sc->sweep.keys[first - 1].group + 1 : 0;
    size_t text_len = sc->sweep.text_len;
    dt_status st = DT_OK;
    for (int i = 0; i < n && st == DT_OK; i++) {
        int k = sweep_key(sc, name[i], line, err);
        if (k < 0) {
            st = DT_ERR_INPUT;
            break;
        }
        scenario_sweep_key_t *sk = &sc->sweep.keys[sc->sweep.n_keys++];
        memset(sk, 0, sizeof *sk);
        sk->key = k;
        sk->line = line;
        sk->group = group;
    }
    const char *p = list;
    int tuples = 0;
    while (st == DT_OK) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '(') {
            st = sweep_error(err, sc, line, names, 0, NULL,
                             "tuple %d: expected \"(\" (linked keys take tuples: (v1, v2), "
                             "(v3, v4))",
                             tuples + 1);
            break;
        }
        const char *close = strchr(p, ')');
        if (!close) {
            st = sweep_error(err, sc, line, names, 0, NULL, "tuple %d: no closing \")\"",
                             tuples + 1);
            break;
        }
        char inner[SCENARIO_STR];
        size_t len = (size_t)(close - p - 1) < sizeof inner ? (size_t)(close - p - 1)
                                                              : sizeof inner - 1;
        memcpy(inner, p + 1, len);
        inner[len] = '\0';
        const char *q = inner;
        for (int i = 0; i < n && st == DT_OK; i++) {
            if (!q) {
                st = sweep_error(err, sc, line, names, 0, NULL,
                                 "tuple %d has %d values for %d keys", tuples + 1, i, n);
                break;
            }
            q = next_item(q, item, sizeof item, &bad);
            if (bad) {
                st = sweep_error(err, sc, line, names, 0, NULL,
                                 "tuple %d: a quote out of place", tuples + 1);
                break;
            }
            char full[96];
            snprintf(full, sizeof full, "%s.%s", keys[sc->sweep.keys[first + i].key].section,
                     keys[sc->sweep.keys[first + i].key].key);
            /* a linked key may repeat a value: the tuples differ elsewhere (checked below) */
            st = sweep_value_add(sc, &sc->sweep.keys[first + i], full, item, line, ctx, 1, err);
        }
        if (st == DT_OK && q)
            st = sweep_error(err, sc, line, names, 0, NULL, "tuple %d has more than %d values",
                             tuples + 1, n);
        tuples++;
        for (p = close + 1; *p == ' ' || *p == '\t'; p++)
            ;
        if (!*p)
            break;
        if (*p != ',') {
            st = sweep_error(err, sc, line, names, 0, NULL, "text after tuple %d", tuples);
            break;
        }
        p++;
    }
    /* two equal tuples would be two identical runs */
    for (int a = 0; st == DT_OK && a < tuples; a++)
        for (int b = a + 1; st == DT_OK && b < tuples; b++) {
            int same = 1;
            for (int i = 0; i < n; i++)
                same &= sc->sweep.keys[first + i].value[a] == sc->sweep.keys[first + i].value[b];
            if (same)
                st = sweep_error(err, sc, line, names, 0, NULL, "tuple %d repeats tuple %d",
                                 b + 1, a + 1);
        }
    long runs = scenario_sweep_count(sc);
    if (st == DT_OK && runs > SCENARIO_SWEEP_RUNS)
        st = sweep_error(err, sc, line, names, 0, NULL, "%ld runs in all (expected at most %d)",
                         runs, SCENARIO_SWEEP_RUNS);
    if (st) {
        memset(sc->sweep.text + text_len, 0, sc->sweep.text_len - text_len);
        sc->sweep.text_len = text_len;
        memset(&sc->sweep.keys[first], 0, sizeof(scenario_sweep_key_t) * (size_t)(sc->sweep.n_keys - first));
        sc->sweep.n_keys = first;
    }
    return st;
}

/* After the file: a swept key may not also be given in its section (for the device pair:
 * device_flops swept goes with no device or device = custom; device swept with no
 * device_flops). */
static dt_status sweep_finish(scenario_t *sc, dt_err_t *err)
{
    for (int j = 0; j < sc->sweep.n_keys; j++) {
        const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
        int k = sk->key, partner = device_partner(k);
        char name[96];
        snprintf(name, sizeof name, "%s.%s", keys[k].section, keys[k].key);
        if (sc->key_line[k] > 0)
            return sweep_error(err, sc, sk->line, name, 0, NULL,
                               "also given at line %d (a swept key takes its values from "
                               "[sweep] only: drop one of the two)",
                               sc->key_line[k]);
        if (partner < 0 || sc->key_line[partner] <= 0)
            continue;
        if (!strcmp(keys[k].key, "device"))
            return sweep_error(err, sc, sk->line, name, 0, NULL,
                               "each value sets cluster.device_flops, which is given at line "
                               "%d: drop device_flops (or sweep device_flops with device = "
                               "custom)",
                               sc->key_line[partner]);
        if (strcmp(sc->device, "custom"))
            return sweep_error(err, sc, sk->line, name, 0, NULL,
                               "each value makes the device custom, but device = %s at line "
                               "%d: write device = custom or drop device",
                               sc->device, sc->key_line[partner]);
    }
    return DT_OK;
}

long scenario_sweep_count(const scenario_t *sc)
{
    long n = 1;
    for (int j = 0; j < sc->sweep.n_keys; j++)
        if (j == 0 || sc->sweep.keys[j].group != sc->sweep.keys[j - 1].group)
            n *= sc->sweep.keys[j].n_values;
    return n;
}

/* "key=value,key=value" of a run: short key names unless two swept keys share one; a
 * path's last component. */
static void sweep_label(const scenario_t *sc, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int j = 0; j < sc->sweep.n_keys && len < n; j++) {
        const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
        const key_desc_t *d = &keys[sk->key];
        int shared = 0;
        for (int i = 0; i < sc->sweep.n_keys; i++)
            shared |= i != j && !strcmp(keys[sc->sweep.keys[i].key].key, d->key);
        const char *v = sweep_value(sc, sk, sk->chosen), *slash = strrchr(v, '/');
        if (slash && slash[1])
            v = slash + 1;
        len += (size_t)snprintf(buf + len, n - len, "%s%s%s%s=%s", j ? "," : "",
                                shared ? d->section : "", shared ? "." : "", d->key, v);
    }
}

dt_status scenario_sweep_run(const scenario_t *sc, long i, scenario_t *run, dt_err_t *err)
{
    DT_ASSERT(!sc->sweep.is_run && i >= 0 && i < scenario_sweep_count(sc));
    *run = *sc;
    if (!sc->sweep.n_keys)
        return scenario_validate(run, err);
    run->sweep.is_run = 1;
    run->sweep.run = i;
    long rest = i;
    for (int j = run->sweep.n_keys - 1; j >= 0; j--) {
        scenario_sweep_key_t *sk = &run->sweep.keys[j];
        sk->chosen = (int)(rest % sk->n_values);
        /* the keys of one group take the same position; the group moves on once */
        if (j == 0 || run->sweep.keys[j - 1].group != sk->group)
            rest /= sk->n_values;
    }
    char label[SCENARIO_STR * 2], name[SCENARIO_STR * 3];
    sweep_label(run, label, sizeof label);
    snprintf(name, sizeof name, "%s/%s", sc->name, label);
    if (strlen(name) >= sizeof run->name)
        return dt_err_input(err, "%s: run %ld: name \"%.60s...\" is longer than %zu characters",
                            sc->path, i, name, sizeof run->name - 1);
    set_string(run->name, sizeof run->name, name, NULL);
    int kd = key_index("cluster", "device"), kf = key_index("cluster", "device_flops");
    parse_ctx_t ctx = {NULL}; /* values were made absolute when the file was read */
    for (int j = 0; j < run->sweep.n_keys; j++) {
        const scenario_sweep_key_t *sk = &run->sweep.keys[j];
        dt_err_t e;
        run->key_line[sk->key] = sk->line;
        if (key_apply(run, &keys[sk->key], sweep_value(run, sk, sk->chosen), &ctx, &e))
            return key_error(err, run, sk->line, sk->key, "%s", e.msg);
        if (sk->key == kd) {
            const sim_device_profile_t *p = profile_find(run->device);
            DT_ASSERT(p); /* custom was refused when the file was read */
            run->device_flops = p->flops;
        } else if (sk->key == kf) {
            set_string(run->device, sizeof run->device, "custom", NULL);
        }
    }
    return scenario_validate(run, err);
}

/* A [sweep] value as a list item: quoted when it holds a comma or starts or ends blank. */
static void sweep_write_value(FILE *out, const char *v)
{
    size_t len = strlen(v);
    int quote = strchr(v, ',') || isspace((unsigned char)v[0]) ||
                (len && isspace((unsigned char)v[len - 1]));
    fprintf(out, quote ? "\"%s\"" : "%s", v);
}

/* ---- defaults, file, --set ------------------------------------------------------------- */

void scenario_defaults(scenario_t *sc)
{
    memset(sc, 0, sizeof *sc);
    trainer_model_config_default(&sc->model, TRAINER_ARCH_MLP); /* sample shape, classes */
    parse_ctx_t ctx = {NULL};
    for (int k = 0; k < N_KEYS; k++) {
        if (keys[k].flags & DERIVED)
            continue;
        dt_err_t e;
        dt_status st = key_apply(sc, &keys[k], keys[k].def, &ctx, &e);
        if (st)
            fprintf(stderr, "dtsim: default of %s.%s: %s\n", keys[k].section, keys[k].key,
                    e.msg);
        DT_ASSERT(st == DT_OK);
    }
    const sim_device_profile_t *p = profile_find(sc->device);
    DT_ASSERT(p);
    sc->device_flops = p->flops;
}

typedef struct file_state {
    scenario_t *sc;
    parse_ctx_t ctx;
    const char *next; /* unread text, NULL at the end */
    int line;         /* the line last handed to inih */
    int err_line;     /* the first error's line; 0 none */
    dt_err_t *err;
} file_state_t;

static void file_fail(file_state_t *st, int line) { st->err_line = line; }

/* A "[name]" line: inih takes the name up to ']' (or an inline comment) and ignores the
 * rest; here the name must be known and nothing but a comment may follow. */
static void check_section(file_state_t *st, const char *line, size_t len)
{
    size_t i = 1;
    while (i < len && line[i] != ']' && !(line[i] == ';' && isspace((unsigned char)line[i - 1])))
        i++;
    if (i >= len || line[i] != ']')
        return; /* inih reports the missing ']' */
    char name[64];
    size_t nlen = i - 1 < sizeof name - 1 ? i - 1 : sizeof name - 1;
    memcpy(name, line + 1, nlen);
    name[nlen] = '\0';
    if (!section_known(name)) {
        char hint[64];
        section_hint(name, hint, sizeof hint);
        dt_err_input(st->err, "%s:%d: [%s]: unknown section (expected " SECTION_LIST "%s)",
                     st->sc->path, st->line, name, hint);
        file_fail(st, st->line);
        return;
    }
    size_t j = i + 1;
    while (j < len && isspace((unsigned char)line[j]))
        j++;
    if (j < len && line[j] != ';' && line[j] != '#') {
        dt_err_input(st->err, "%s:%d: [%s]: unexpected text after ']'", st->sc->path, st->line,
                     name);
        file_fail(st, st->line);
    }
}

static char *file_reader(char *buf, int num, void *stream)
{
    file_state_t *st = stream;
    if (st->err_line || !st->next || !*st->next)
        return NULL; /* stop at the first error: later ones would only be noise */
    const char *line = st->next, *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    st->next = eol ? eol + 1 : NULL;
    st->line++;
    if (st->line == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) {
        line += 3;
        len -= 3;
    }
    while (len && isspace((unsigned char)*line)) {
        line++;
        len--;
    }
    /* The line and its '\n' must fit, else inih would split it into two "lines". */
    if (len + 2 > (size_t)num) {
        dt_err_input(st->err, "%s:%d: line longer than %d characters", st->sc->path, st->line,
                     num - 2);
        file_fail(st, st->line);
        len = 0;
    }
    memcpy(buf, line, len);
    buf[len] = '\n';
    buf[len + 1] = '\0';
    if (len && line[0] == '[' && !st->err_line)
        check_section(st, line, len);
    return buf;
}

static int file_handler(void *user, const char *section, const char *name, const char *value)
{
    file_state_t *st = user;
    scenario_t *sc = st->sc;
    int line = st->line;
    if (st->err_line)
        return 1;
    if (!*name) {
        dt_err_input(st->err, "%s:%d: missing key name before '='", sc->path, line);
        goto fail;
    }
    if (!*section) {
        dt_err_input(st->err, "%s:%d: %s: key outside any section (put it under [run], "
                              "[model], [data], [cluster], [strategy] or [faults])",
                     sc->path, line, name);
        goto fail;
    }
    if (!strcmp(section, "sweep")) {
        if (strchr(name, ',') ? sweep_add_linked(sc, name, value, line, &st->ctx, st->err)
                              : sweep_add(sc, name, value, line, &st->ctx, st->err))
            goto fail;
        return 1;
    }
    int k = key_find(section, name);
    if (k < 0) {
        char hint[96];
        key_hint(section, name, hint, sizeof hint);
        dt_err_input(st->err, "%s:%d: %s.%s: unknown key%s", sc->path, line, section, name, hint);
        goto fail;
    }
    if (sc->key_line[k] > 0) {
        key_error(st->err, sc, line, k, "given twice (lines %d and %d)", sc->key_line[k], line);
        goto fail;
    }
    dt_err_t e;
    if (key_apply(sc, &keys[k], value, &st->ctx, &e)) {
        key_error(st->err, sc, line, k, "%s", e.msg);
        goto fail;
    }
    sc->key_line[k] = line;
    return 1;
fail:
    file_fail(st, line);
    return 0;
}

/* The line'th line of text (1-based), trimmed, into buf. */
static void text_line(const char *text, int line, char *buf, size_t n)
{
    for (int i = 1; i < line && text; i++) {
        text = strchr(text, '\n');
        if (text)
            text++;
    }
    buf[0] = '\0';
    if (!text)
        return;
    while (*text == ' ' || *text == '\t')
        text++;
    size_t len = strcspn(text, "\r\n");
    if (len >= n)
        len = n - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
}

static dt_status read_all(const char *path, char **out, dt_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return dt_err_input(err, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *text = dt_malloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= (size_t)16 << 20) {
                free(text);
                fclose(f);
                return dt_err_input(err, "%s: larger than 16 MiB: not a scenario file", path);
            }
            cap *= 2;
            char *grown = realloc(text, cap);
            DT_CHECK(grown, "out of memory reading %s", path);
            text = grown;
        }
        size_t got = fread(text + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0) {
            int bad = ferror(f), e = errno;
            fclose(f);
            if (bad) {
                free(text);
                return dt_err_input(err, "%s: cannot read: %s", path, strerror(e));
            }
            break;
        }
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        return dt_err_input(err, "%s: contains a NUL byte: not a text file", path);
    }
    *out = text;
    return DT_OK;
}

/* After the file: [sweep] against the sections, the device pair (see the top of this
 * file) and the run name. */
static dt_status file_finish(scenario_t *sc, dt_err_t *err)
{
    int kd = key_index("cluster", "device"), kf = key_index("cluster", "device_flops");
    int kn = key_index("run", "name");
    if (sweep_finish(sc, err))
        return DT_ERR_INPUT;
    const sim_device_profile_t *p = profile_find(sc->device);
    if (sc->key_line[kf] > 0) {
        if (sc->key_line[kd] == 0) {
            set_string(sc->device, sizeof sc->device, "custom", NULL);
        } else if (p) {
            if (fabs(sc->device_flops - p->flops) > 1e-12 * p->flops) {
                char have[64], want[64];
                format_unit(have, sizeof have, sc->device_flops, flops_units);
                format_unit(want, sizeof want, p->flops, flops_units);
                return key_error(err, sc, sc->key_line[kf], kf,
                                 "%s disagrees with device = %s at line %d (%s); write device = "
                                 "custom to use your own speed, or drop one of the two",
                                 have, p->name, sc->key_line[kd], want);
            }
            sc->device_flops = p->flops;
        }
    } else if (p) {
        sc->device_flops = p->flops;
    } else if (sweep_find(sc, kf) < 0) {
        return key_error(err, sc, sc->key_line[kd], kd,
                         "custom needs cluster.device_flops (the simulated speed, e.g. 20Tf)");
    }
    if (sc->key_line[kn] == 0) {
        const char *base = strrchr(sc->path, '/');
        base = base ? base + 1 : sc->path;
        char name[SCENARIO_STR];
        snprintf(name, sizeof name, "%s", base);
        if (ends_with(name, ".ini") && strlen(name) > 4)
            name[strlen(name) - 4] = '\0';
        if (name[0])
            set_string(sc->name, sizeof sc->name, name, NULL);
    }
    return DT_OK;
}

static dt_status load_file(scenario_t *sc, const char *path, dt_err_t *err)
{
    char *text = NULL;
    if (read_all(path, &text, err))
        return DT_ERR_INPUT;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) < sizeof dir) {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, n);
        dir[n] = '\0';
    } else {
        strcpy(dir, ".");
    }
    file_state_t st = {.sc = sc, .ctx = {dir}, .next = text, .line = 0, .err_line = 0,
                       .err = err};
    int rc = ini_parse_stream(file_reader, &st, file_handler, &st);
    DT_CHECK(rc != -2, "out of memory in inih while reading %s", path);
    dt_status status = DT_OK;
    if (rc > 0 && (!st.err_line || rc < st.err_line)) {
        /* inih's own syntax error: say what the line should have been */
        char line[72];
        text_line(text, rc, line, sizeof line);
        if (line[0] == '[')
            dt_err_input(err, "%s:%d: missing ']' in section header \"%s\"", path, rc, line);
        else
            dt_err_input(err, "%s:%d: syntax error: \"%s\" (expected key = value, [section] or "
                              "a comment starting with ; or #)",
                         path, rc, line);
        status = DT_ERR_INPUT;
    } else if (st.err_line) {
        status = DT_ERR_INPUT;
    }
    free(text);
    if (status)
        return status;
    return file_finish(sc, err);
}

dt_status scenario_set(scenario_t *sc, const char *assignment, dt_err_t *err)
{
    const char *eq = strchr(assignment, '=');
    const char *dot = eq ? memchr(assignment, '.', (size_t)(eq - assignment)) : NULL;
    if (!eq || !dot)
        return dt_err_input(err, "--set %s: expected section.key=value (e.g. run.steps=100)",
                            assignment);
    char section[64], key[64], value[SCENARIO_STR * 2];
    const char *s0 = assignment, *k0 = dot + 1, *v0 = eq + 1;
    while (isspace((unsigned char)*s0))
        s0++;
    size_t slen = (size_t)(dot - s0), klen = (size_t)(eq - k0);
    while (klen && isspace((unsigned char)k0[klen - 1]))
        klen--;
    while (isspace((unsigned char)*v0))
        v0++;
    size_t vlen = strlen(v0);
    while (vlen && isspace((unsigned char)v0[vlen - 1]))
        vlen--;
    if (slen >= sizeof section || klen >= sizeof key || vlen >= sizeof value)
        return dt_err_input(err, "--set %s: too long", assignment);
    memcpy(section, s0, slen);
    section[slen] = '\0';
    memcpy(key, k0, klen);
    key[klen] = '\0';
    memcpy(value, v0, vlen);
    value[vlen] = '\0';
    if (!section_known(section)) {
        char hint[64];
        section_hint(section, hint, sizeof hint);
        return dt_err_input(err, "--set %s.%s: unknown section [%s] (expected " SECTION_LIST "%s)",
                            section, key, section, hint);
    }
    if (!strcmp(section, "sweep"))
        return dt_err_input(err, "--set sweep.%s: [sweep] lists are written in the scenario "
                                 "file, not given with --set",
                            key);
    int k = key_find(section, key);
    if (k < 0) {
        char hint[96];
        key_hint(section, key, hint, sizeof hint);
        return dt_err_input(err, "--set %s.%s: unknown key%s", section, key, hint);
    }
    int j = sweep_find(sc, k), partner = device_partner(k);
    if (j >= 0)
        return key_error(err, sc, -1, k,
                         "swept in [sweep] at line %d (a swept key takes its values from "
                         "[sweep] only)",
                         sc->sweep.keys[j].line);
    if (partner >= 0 && (j = sweep_find(sc, partner)) >= 0)
        return key_error(err, sc, -1, k,
                         "would replace cluster.%s, swept in [sweep] at line %d (each of the "
                         "pair sets the other)",
                         keys[partner].key, sc->sweep.keys[j].line);
    int kd = key_index("cluster", "device"), kf = key_index("cluster", "device_flops");
    scenario_t before = *sc;
    parse_ctx_t ctx = {NULL};
    dt_err_t e;
    if (key_apply(sc, &keys[k], value, &ctx, &e)) {
        *sc = before; /* a failed --set leaves the scenario as it was */
        return key_error(err, sc, -1, k, "%s", e.msg);
    }
    sc->key_line[k] = -1;
    if (k == kd) {
        const sim_device_profile_t *p = profile_find(sc->device);
        if (p) {
            sc->device_flops = p->flops;
            sc->key_line[kf] = 0;
        } else if (before.key_line[kf] == 0) {
            *sc = before;
            return key_error(err, sc, -1, k,
                             "custom needs a speed: give --set cluster.device_flops=SPEED "
                             "instead (it makes the device custom)");
        }
    } else if (k == kf) {
        set_string(sc->device, sizeof sc->device, "custom", NULL);
        sc->key_line[kd] = -1;
    }
    return DT_OK;
}

dt_status scenario_load(scenario_t *sc, const char *path, const char *const *sets, int n_sets,
                        dt_err_t *err)
{
    scenario_defaults(sc);
    if (path) {
        if (set_string(sc->path, sizeof sc->path, path, NULL))
            return dt_err_input(err, "%s: path too long", path);
        if (load_file(sc, path, err))
            return DT_ERR_INPUT;
    }
    for (int i = 0; i < n_sets; i++)
        if (scenario_set(sc, sets[i], err))
            return DT_ERR_INPUT;
    if (!sc->sweep.n_keys)
        return scenario_validate(sc, err);
    /* every run, so that no combination fails once a sweep has started */
    scenario_t *run = dt_malloc(sizeof *run);
    dt_status st = DT_OK;
    for (long i = 0, n = scenario_sweep_count(sc); st == DT_OK && i < n; i++)
        st = scenario_sweep_run(sc, i, run, err);
    free(run);
    return st;
}

int scenario_has_faults(const scenario_t *sc)
{
    return strcmp(sc->crash, "none") || strcmp(sc->link_down, "none") ||
           strcmp(sc->link_degrade, "none") || strcmp(sc->straggler, "none") ||
           strcmp(sc->slowdown, "none") || sc->mtbf > 0 || sc->dropout > 0 ||
           sc->deadline > 0 || sc->over_select > 1 || strcmp(sc->availability, "always") ||
           strcmp(sc->client_speed, "same");
}

void scenario_key_location(const scenario_t *sc, const char *section_key, char *buf, size_t n)
{
    const char *dot = strchr(section_key, '.');
    DT_ASSERT(dot);
    char section[32];
    snprintf(section, sizeof section, "%.*s", (int)(dot - section_key), section_key);
    int k = key_index(section, dot + 1);
    int line = sc->key_line[k], j = sc->sweep.is_run ? sweep_find(sc, k) : -1;
    if (j >= 0)
        snprintf(buf, n, "%s:%d: sweep %s (value \"%s\")", sc->path, sc->sweep.keys[j].line,
                 section_key, sweep_value(sc, &sc->sweep.keys[j], sc->sweep.keys[j].chosen));
    else if (line > 0)
        snprintf(buf, n, "%s:%d: %s", sc->path, line, section_key);
    else if (line < 0)
        snprintf(buf, n, "--set %s", section_key);
    else
        snprintf(buf, n, "%s: %s", sc->path, section_key);
}

int scenario_key_given(const scenario_t *sc, const char *section_key)
{
    const char *dot = strchr(section_key, '.');
    DT_ASSERT(dot && (size_t)(dot - section_key) < 32);
    char section[32];
    memcpy(section, section_key, (size_t)(dot - section_key));
    section[dot - section_key] = '\0';
    return sc->key_line[key_index(section, dot + 1)] != 0;
}

long scenario_fedavg_sampled(const scenario_t *sc)
{
    return (long)floor((double)sc->clients * sc->fraction + 1e-9);
}

/* The key to blame for a relation between a and b: in a run of a sweep, a swept one (it
 * makes this combination), else the one the user gave (a first). */
static int blame(const scenario_t *sc, int a, int b)
{
    if (sc->sweep.is_run && sweep_find(sc, a) < 0 && sweep_find(sc, b) >= 0)
        return b;
    if (sc->sweep.is_run && sweep_find(sc, a) >= 0)
        return a;
    return sc->key_line[a] == 0 && sc->key_line[b] != 0 ? b : a;
}

static int kind_is(const scenario_t *sc, const char *name)
{
    return !strcmp(sc->strategy->name, name);
}

dt_status scenario_validate(const scenario_t *sc, dt_err_t *err)
{
    int kw = key_index("cluster", "workers");
    char where[96];
    if (kind_is(sc, "sync-ps") || kind_is(sc, "async-ps")) {
        if (sc->servers > sc->workers) {
            int ks = key_index("strategy", "servers"), k = blame(sc, ks, kw);
            key_where(sc, k == ks ? kw : ks, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld servers for %ld workers (expected servers <= workers for %s; "
                             "%s)",
                             sc->servers, sc->workers, sc->strategy->name, where);
        }
    }
    if (kind_is(sc, "fedavg") && scenario_fedavg_sampled(sc) < 1) {
        int kfr = key_index("strategy", "fraction"), kc = key_index("strategy", "clients");
        int k = blame(sc, kfr, kc);
        key_where(sc, k == kfr ? kc : kfr, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "%ld clients x fraction %g samples no client per round (expected "
                         "clients x fraction >= 1; %s)",
                         sc->clients, sc->fraction, where);
    }
    if (sc->platform == SIM_PLATFORM_EDGE && (sc->strategy->takes & SIM_NEEDS_PEER_LINKS)) {
        int kp = key_index("cluster", "platform"), kk = key_index("strategy", "kind");
        int k = blame(sc, kp, kk);
        key_where(sc, k == kp ? kk : kp, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "the edge platform connects clients only to the server, so %s (which "
                         "exchanges between workers) cannot run on it (expected fedavg, "
                         "sync-ps, async-ps or single; %s)",
                         sc->strategy->name, where);
    }
    if (sc->ring_messages == SIM_RING_PHASES && !sc->profile[0]) {
        int kr = key_index("strategy", "ring_messages"), ka = key_index("model", "arch");
        int k = blame(sc, kr, ka);
        key_where(sc, k == kr ? ka : kr, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "ring_messages = phases moves each phase in one message, which "
                         "cannot carry real partial sums: it needs a timing-only model "
                         "(model.arch = profile:NAME; %s)", where);
    }
    if (sc->profile[0] && sc->time_model == SIM_TIME_MEASURED) {
        int kt = key_index("run", "time_model"), ka = key_index("model", "arch");
        int k = blame(sc, kt, ka);
        key_where(sc, k == kt ? ka : kt, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "time_model = measured needs real kernels; a model profile is timed "
                         "by its FLOPs (time_model = flops; %s)", where);
    }
    if (sc->bucket_mb > 0 && scenario_has_faults(sc)) {
        int k = key_index("strategy", "bucket_mb");
        return key_error(err, sc, sc->key_line[k], k,
                         "bucket_mb with [faults] is not supported (a failed bucket would "
                         "need its own re-formation); use bucket_mb = 0 with faults");
    }
    if (kind_is(sc, "pipeline")) {
        int kst = key_index("strategy", "stages"), kmb = key_index("strategy", "micro_batches");
        int ka = key_index("model", "arch"), kb = key_index("model", "batch");
        int weighted = sc->model.arch == TRAINER_ARCH_LOGREG ? 1
                       : sc->model.arch == TRAINER_ARCH_MLP  ? sc->model.n_hidden + 1
                                                             : 4;
        if (sc->profile[0]) { /* a profile's stages end at its cuts */
            int pieces = sc->profile_pieces;
            if (pieces == 0)
                return key_error(err, sc, sc->key_line[ka], ka,
                                 "a pipeline of the profile %s needs its [forward] section "
                                 "(each layer's forward FLOPs, outputs and the places a stage "
                                 "may end)", sc->profile);
            if (sc->stages > pieces) {
                int k = blame(sc, kst, ka);
                key_where(sc, k == kst ? ka : kst, where, sizeof where);
                return key_error(err, sc, sc->key_line[k], k,
                                 "%ld stages but the profile %s can be cut into at most %d "
                                 "(its [forward] cuts + 1; %s)",
                                 sc->stages, sc->profile, pieces, where);
            }
        } else if (sc->stages > weighted) {
            int k = blame(sc, kst, ka);
            key_where(sc, k == kst ? ka : kst, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld stages but the %s has %d layer%s with weights, and a stage "
                             "needs at least one (%s)",
                             sc->stages, trainer_arch_name(sc->model.arch), weighted,
                             weighted == 1 ? "" : "s", where);
        }
        long hosts = sc->stages * sc->data_parallel;
        if (sc->workers != hosts && sc->key_line[kw] != 0) {
            int k = blame(sc, kw, kst);
            key_where(sc, k == kw ? kst : kw, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "a pipeline of %ld stages x %ld replicas runs on %ld hosts, not %ld "
                             "(workers must equal stages x data_parallel; %s)",
                             sc->stages, sc->data_parallel, hosts, sc->workers, where);
        }
        if (hosts > 100000) {
            int k = key_index("strategy", "data_parallel");
            return key_error(err, sc, sc->key_line[k], k,
                             "stages x data_parallel = %ld hosts (at most 100000)", hosts);
        }
        if (sc->batch % sc->micro_batches) {
            int k = blame(sc, kmb, kb);
            key_where(sc, k == kmb ? kb : kmb, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld micro-batches do not divide a batch of %ld (%s)",
                             sc->micro_batches, sc->batch, where);
        }
        if (sc->partition.kind != TRAINER_PARTITION_IID) {
            int k = key_index("data", "partition");
            return key_error(err, sc, sc->key_line[k], k,
                             "a pipeline trains one model on the global batch: partition must "
                             "be iid");
        }
        if (scenario_has_faults(sc)) {
            int k = key_index("strategy", "kind");
            return key_error(err, sc, sc->key_line[k], k,
                             "pipeline with [faults] is not supported");
        }
    }
    if (kind_is(sc, "tensor")) {
        int kt = key_index("strategy", "tensor_parallel"), ka = key_index("model", "arch");
        long T = sc->tensor_parallel;
        if (sc->profile[0] || sc->model.arch == TRAINER_ARCH_CNN) {
            return key_error(err, sc, sc->key_line[ka], ka,
                             "tensor parallelism splits fully connected layers: the model must "
                             "be mlp or logreg");
        }
        if (sc->workers != T && sc->key_line[kw] != 0) {
            int k = blame(sc, kw, kt);
            key_where(sc, k == kw ? kt : kw, where, sizeof where);
            return key_error(err, sc, sc->key_line[k], k,
                             "tensor parallelism over %ld workers runs on %ld hosts, not %ld "
                             "(workers must equal tensor_parallel; %s)",
                             T, T, sc->workers, where);
        }
        /* the widths it splits: the outputs of the first layer of each pair (dense layers 1,
         * 3, ...: the second splits that as its input), and the classes when the dense
         * layers are odd in number (the last one is column-split) */
        int L = sc->model.arch == TRAINER_ARCH_MLP ? sc->model.n_hidden + 1 : 1;
        for (int j = 0; j < L - 1; j += 2)
            if (sc->model.hidden[j] % T) {
                int kh = key_index("model", "hidden"), k = blame(sc, kt, kh);
                key_where(sc, k == kt ? kh : kt, where, sizeof where);
                return key_error(err, sc, sc->key_line[k], k,
                                 "tensor_parallel = %ld does not divide hidden layer %d's width "
                                 "%d, which it splits (%s)", T, j + 1, sc->model.hidden[j], where);
            }
        /* a directory's classes are known once it is read (checked then) */
        long classes = !strcmp(sc->data_source, "synthetic")       ? sc->synthetic_classes
                       : !strcmp(sc->data_source, "fashion-mnist") ? 10
                                                                   : 0;
        if (L % 2 && classes > 0 && classes % T) {
            return key_error(err, sc, sc->key_line[kt], kt,
                             "tensor_parallel = %ld does not divide the %ld classes of the "
                             "output layer, which it splits by columns (an odd number of dense "
                             "layers leaves it unpaired)", T, classes);
        }
        if (sc->partition.kind != TRAINER_PARTITION_IID) {
            int k = key_index("data", "partition");
            return key_error(err, sc, sc->key_line[k], k,
                             "tensor parallelism trains one model on the global batch: "
                             "partition must be iid");
        }
        if (scenario_has_faults(sc)) {
            int k = key_index("strategy", "kind");
            return key_error(err, sc, sc->key_line[k], k, "tensor with [faults] is not supported");
        }
    }
    if (kind_is(sc, "zero") && scenario_has_faults(sc)) {
        int k = key_index("strategy", "kind");
        return key_error(err, sc, sc->key_line[k], k, "zero with [faults] is not supported");
    }
    /* less communication: which strategies take which technique */
    int kind_k = key_index("strategy", "kind");
    char takers[256];
    if (sc->compression.kind != TRAINER_CODEC_NONE &&
        !(sc->strategy->takes & SIM_TAKES_COMPRESSION)) {
        int kc = key_index("strategy", "compression"), k = blame(sc, kc, kind_k);
        key_where(sc, k == kc ? kind_k : kc, where, sizeof where);
        scenario_strategies_taking(SIM_TAKES_COMPRESSION, " and ", takers, sizeof takers);
        return key_error(err, sc, sc->key_line[k], k, "compression applies to %s, not %s (%s)",
                         takers, sc->strategy->name, where);
    }
    if (sc->accumulate > 1 && !(sc->strategy->takes & SIM_TAKES_ACCUMULATE)) {
        int ka = key_index("strategy", "accumulate"), k = blame(sc, ka, kind_k);
        key_where(sc, k == ka ? kind_k : ka, where, sizeof where);
        scenario_strategies_taking(SIM_TAKES_ACCUMULATE, " and ", takers, sizeof takers);
        return key_error(err, sc, sc->key_line[k], k, "accumulate applies to %s, not %s (%s)",
                         takers, sc->strategy->name, where);
    }
    if (sc->accumulate > 1 && sc->side_by_side == SIM_SIDE_YES &&
        kind_is(sc, "fedavg")) {
        int ka = key_index("strategy", "accumulate"), ks = key_index("model", "side_by_side");
        int k = blame(sc, ka, ks);
        key_where(sc, k == ka ? ks : ka, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "clients side by side take one batch per step: side_by_side = yes "
                         "does not combine with accumulate > 1 (%s)", where);
    }
    if (kind_is(sc, "allreduce") && sc->bucket_mb > 0 &&
        (sc->accumulate > 1 || sc->compression.kind == TRAINER_CODEC_TOPK ||
         sc->compression.kind == TRAINER_CODEC_QSGD8)) {
        int kb = key_index("strategy", "bucket_mb");
        int ko = key_index("strategy", sc->accumulate > 1 ? "accumulate" : "compression");
        int k = blame(sc, ko, kb);
        key_where(sc, k == ko ? kb : ko, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "bucket_mb overlaps one backward pass with plain all-reduces; it does "
                         "not combine with %s (use bucket_mb = 0; %s)",
                         sc->accumulate > 1 ? "accumulate > 1" : "topk or qsgd8 compression",
                         where);
    }
    if (kind_is(sc, "allreduce") && scenario_has_faults(sc) &&
        (sc->compression.kind == TRAINER_CODEC_TOPK ||
         sc->compression.kind == TRAINER_CODEC_QSGD8)) {
        int k = key_index("strategy", "compression");
        return key_error(err, sc, sc->key_line[k], k,
                         "allreduce with topk or qsgd8 compression (an all-gather of encoded "
                         "gradients) is not supported with [faults]; fp16 is");
    }
    /* groups are racks on a multi-rack platform, blocks of group_size elsewhere */
    if ((kind_is(sc, "allreduce") || kind_is(sc, "local-sgd")) &&
        sc->algorithm == SIM_ALLREDUCE_HIERARCHICAL && sc->platform != SIM_PLATFORM_MULTI_RACK &&
        (sc->group_size > sc->workers || sc->workers % sc->group_size)) {
        int kg = key_index("strategy", "group_size"), k = blame(sc, kg, kw);
        key_where(sc, k == kg ? kw : kg, where, sizeof where);
        return key_error(err, sc, sc->key_line[k], k,
                         "group_size %ld does not divide %ld workers (hierarchical all-reduce "
                         "needs equal groups; %s)",
                         sc->group_size, sc->workers, where);
    }
    if (sc->train_samples > 0) {
        /* one partition per worker or client (strategy_def.h: parts) */
        const sim_strategy_t *st = sc->strategy;
        long need = st->parts ? st->parts(sc, sc->workers) : sc->workers;
        if (sc->train_samples < need) {
            int clients = !strcmp(st->worker_role, "client");
            int kt = key_index("data", "train_samples");
            int k = blame(sc, kt, key_index(clients ? "strategy" : "cluster",
                                            clients ? "clients" : "workers"));
            return key_error(err, sc, sc->key_line[k], k,
                             "%ld samples for %ld %ss (expected at least one sample each)",
                             sc->train_samples, need, st->worker_role);
        }
    }
    return DT_OK;
}

/* ---- output ---------------------------------------------------------------------------- */

void scenario_write(const scenario_t *sc, FILE *out)
{
    const char *section = NULL;
    char value[SCENARIO_STR + 64];
    int sweep = sc->sweep.n_keys && !sc->sweep.is_run;
    int kd = key_index("cluster", "device");
    fprintf(out, "; dtsim scenario, resolved: every key with its value, defaults included\n");
    for (int k = 0; k < N_KEYS; k++) {
        if (!section || strcmp(section, keys[k].section)) {
            section = keys[k].section;
            fprintf(out, "\n[%s]\n", section);
        }
        /* a swept key is not written here: its values are in [sweep]; nor the other of
         * the device pair, which each value sets (device stays when it is custom) */
        int j = sweep ? sweep_find(sc, k) : -1, partner = device_partner(k);
        if (j < 0 && sweep && partner >= 0 && sweep_find(sc, partner) >= 0 &&
            !(k == kd && !strcmp(sc->device, "custom")))
            j = sweep_find(sc, partner);
        if (j >= 0) {
            const key_desc_t *d = &keys[sc->sweep.keys[j].key];
            fprintf(out, "; %s: from [sweep] %s.%s\n", keys[k].key, d->section, d->key);
            continue;
        }
        key_format(sc, &keys[k], value, sizeof value);
        fprintf(out, "%s = %s\n", keys[k].key, value);
    }
    if (!sweep)
        return;
    fprintf(out, "\n[sweep]\n");
    for (int j = 0; j < sc->sweep.n_keys;) {
        int end = j + 1;
        while (end < sc->sweep.n_keys && sc->sweep.keys[end].group == sc->sweep.keys[j].group)
            end++;
        for (int g = j; g < end; g++)
            fprintf(out, "%s%s.%s", g > j ? ", " : "", keys[sc->sweep.keys[g].key].section,
                    keys[sc->sweep.keys[g].key].key);
        fputs(" = ", out);
        const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
        for (int v = 0; v < sk->n_values; v++) {
            fputs(v ? ", " : "", out);
            if (end - j > 1)
                fputc('(', out);
            for (int g = j; g < end; g++) {
                fputs(g > j ? ", " : "", out);
                sweep_write_value(out, sweep_value(sc, &sc->sweep.keys[g], v));
            }
            if (end - j > 1)
                fputc(')', out);
        }
        fputc('\n', out);
        j = end;
    }
}

void scenario_foreach_key(const scenario_t *sc,
                          void (*fn)(void *ctx, const char *key, const char *text,
                                     double number),
                          void *ctx)
{
    char value[SCENARIO_STR + 64], name[96];
    for (int k = 0; k < N_KEYS; k++) {
        const key_desc_t *d = &keys[k];
        const void *p = field_cptr(sc, d);
        double number = NAN;
        switch (d->type) {
        case KEY_INT:
            number = d->store == ST_INT    ? *(const int *)p
                     : d->store == ST_LONG ? (double)*(const long *)p
                                           : (double)*(const uint64_t *)p;
            break;
        case KEY_REAL:
            number = d->store == ST_FLOAT ? *(const float *)p : *(const double *)p;
            break;
        case KEY_BOOL:
            number = *(const int *)p;
            break;
        case KEY_BANDWIDTH:
        case KEY_TIME:
        case KEY_FLOPS:
            number = *(const double *)p;
            break;
        default:
            break;
        }
        key_format(sc, d, value, sizeof value);
        snprintf(name, sizeof name, "%s.%s", d->section, d->key);
        fn(ctx, name, value, number);
    }
}

const char *scenario_backend_name(sim_backend_t b)
{
    DT_ASSERT((int)b >= 0 && (int)b <= SIM_BACKEND_AUTO);
    return backend_names[b];
}


const char *scenario_algorithm_name(sim_allreduce_algo_t a)
{
    DT_ASSERT((int)a >= 0 && (int)a <= SIM_ALLREDUCE_HIERARCHICAL);
    return algorithm_names[a];
}

void scenario_write_keys_markdown(FILE *out)
{
    const char *section = NULL;
    char buf[512];
    for (int k = 0; k < N_KEYS; k++) {
        const key_desc_t *d = &keys[k];
        if (!section || strcmp(section, d->section)) {
            section = d->section;
            fprintf(out, "%s### [%s]\n\n| key | default | accepted values | meaning |\n"
                         "|---|---|---|---|\n",
                    k ? "\n" : "", section);
        }
        const char *accepted = d->accepted;
        switch (d->type) {
        case KEY_INT:
            range_text(d, 1, buf, sizeof buf);
            accepted = buf;
            break;
        case KEY_REAL:
            range_text(d, 0, buf, sizeof buf);
            accepted = buf;
            break;
        case KEY_BOOL:
            accepted = "yes, no, true, false, on, off, 1, 0";
            break;
        case KEY_ENUM: {
            names_text(d->names, buf, sizeof buf);
            if (d->flags & NOCASE)
                strcat(buf, " (any case)");
            accepted = buf;
            break;
        }
        case KEY_BANDWIDTH:
            accepted = "bandwidth > 0 with a unit";
            break;
        case KEY_TIME:
            accepted = "time >= 0 with a unit (0 needs none)";
            break;
        case KEY_FLOPS:
            accepted = "speed > 0 with a unit";
            break;
        case KEY_STRING:
            break;
        case KEY_CUSTOM:
            if (!accepted) { /* strategy.kind: the registry's names */
                kind_names(buf, sizeof buf);
                accepted = buf;
            }
            break;
        }
        char def[80];
        if (d->defdoc)
            snprintf(def, sizeof def, "%s", d->defdoc);
        else
            snprintf(def, sizeof def, "`%s`", d->def);
        fprintf(out, "| `%s` | %s | %s | %s |\n", d->key, def, accepted, d->doc);
    }

    fprintf(out, "\n### Units\n\nA unit is required (a time of 0 may omit it); spaces between the "
                 "number and the unit are allowed; units are case-sensitive.\n\n"
                 "| quantity | units | stored as |\n|---|---|---|\n");
    unit_list(bandwidth_units, buf, sizeof buf);
    fprintf(out, "| bandwidth | %s (bits/s and bytes/s, SI: k = 1000) | bytes per second "
                 "(10Gbps = 1.25e9) |\n",
            buf);
    unit_list(time_units, buf, sizeof buf);
    fprintf(out, "| time | %s | seconds |\n", buf);
    unit_list(flops_units, buf, sizeof buf);
    fprintf(out, "| speed | %s (FLOP/s, SI, as in SimGrid) | FLOP/s |\n", buf);

    fprintf(out, "\n### Device profiles\n\n`cluster.device` sets `cluster.device_flops`; "
                 "`device_flops` given without `device` makes the device `custom`; both in one "
                 "file must agree (`device = custom`, or the profile's own speed); a `--set` of "
                 "either one replaces the pair.\n\n| device | FP32 FLOP/s | source |\n"
                 "|---|---|---|\n");
    for (size_t i = 0; i < N_PROFILES; i++) {
        format_unit(buf, sizeof buf, device_profiles[i].flops, flops_units);
        fprintf(out, "| `%s` | %s | %s |\n", device_profiles[i].name, buf,
                device_profiles[i].source);
    }
}
