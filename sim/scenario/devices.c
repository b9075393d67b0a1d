/* Devices: the catalogue (scenarios/devices/catalogue.ini, compiled in as devices.h) and
 * device profile files (cluster.device = FILE.ini: dtsim calibrate's [device] with its
 * measured flops, or one section written like a catalogue entry), both read by one reader;
 * a device's sustained speed at a precision; the bytes a precision and an optimizer take.
 *
 * The files are read line by line here rather than with inih: a value's source (a datasheet
 * and the figures it gives) is longer than inih's 200-character line. A device file has no
 * inline comments, since a source may hold ';'. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices.h" /* generated: device_catalogue[] */
#include "keys_impl.h"

/* the keys of device files, in sim_device_field_t's order */
static const char *const field_names[SIM_DEV_FIELDS] = {
    "fp32",
    "tf32",
    "bf16",
    "fp8",
    "memory",
    "memory_bandwidth",
    "power_idle",
    "power_max",
    "efficiency",
    "tensor_efficiency",
    "sms",
    "gemm_efficiency",
    "attention_efficiency",
    "memory_efficiency",
    "nvlink_busbw",
    "nvls_busbw",
    "nic_efficiency",
    "fp8_block_gemm_efficiency",
};

/* The fields of the compute model by shape: they mean something only with sms. */
static int shape_field(int f)
{
    return f == SIM_DEV_GEMM_EFFICIENCY || f == SIM_DEV_ATTENTION_EFFICIENCY ||
           f == SIM_DEV_MEMORY_EFFICIENCY || f == SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY;
}

const char *scenario_device_field_name(sim_device_field_t f)
{
    DT_ASSERT((int)f >= 0 && f < SIM_DEV_FIELDS);
    return field_names[f];
}

const char *scenario_precision_name(sim_precision_t p)
{
    DT_ASSERT((int)p >= 0 && p < SIM_PRECISIONS);
    return scn_precision_names[p];
}

/* ---- the reader ----------------------------------------------------------------------- */

typedef struct dev_reader {
    const char *path; /* for messages */
    int user;         /* a user's file: one section, flops allowed, no [defaults] */
    const sim_device_profile_t *defaults; /* what an entry leaves out (NULL: none yet) */
    sim_device_profile_t *devs;           /* the sections read */
    size_t n, cap;
    sim_device_profile_t *cur; /* the section being read; NULL: none or [defaults] */
    sim_device_profile_t def;  /* [defaults], while the catalogue is read */
    int in_defaults;
    int section_line;
    int line_of[SIM_DEV_FIELDS]; /* where the current section gave each value */
    int flops_line, source_line[SIM_DEV_FIELDS];
    char general[400]; /* the section's `source` */
} dev_reader_t;

static void device_clear(sim_device_profile_t *d)
{
    memset(d, 0, sizeof *d);
    for (int f = 0; f < SIM_DEV_FIELDS; f++)
        d->value[f] = NAN;
}

static int copy_text(char *dst, size_t cap, const char *v)
{
    if (strlen(v) >= cap)
        return -1;
    strcpy(dst, v);
    return 0;
}

/* The end of a section: the sources each value takes (its own, then [defaults]'s, then the
 * section's `source`), the efficiencies it leaves out, and what every entry needs. */
static dt_status section_finish(dev_reader_t *r, dt_err_t *err)
{
    sim_device_profile_t *d = r->cur;
    if (!d)
        return DT_OK;
    const sim_device_profile_t *def = r->defaults;
    for (int f = 0; f < SIM_DEV_FIELDS; f++) {
        if (isnan(d->value[f]) && r->source_line[f])
            return dt_err_input(err,
                                "%s:%d: device.source.%s: a source for %s, which the "
                                "device does not give",
                                r->path, r->source_line[f], field_names[f], field_names[f]);
        int tensor = !isnan(d->value[SIM_DEV_TF32]) || !isnan(d->value[SIM_DEV_BF16]) ||
                     !isnan(d->value[SIM_DEV_FP8]);
        /* [defaults]'s shape fractions go to the devices that give sms, the only ones the
         * shape model times */
        if (isnan(d->value[f]) && def && !isnan(def->value[f]) &&
            (f != SIM_DEV_TENSOR_EFFICIENCY || tensor) &&
            (!shape_field(f) || !isnan(d->value[SIM_DEV_SMS]))) {
            d->value[f] = def->value[f];
            memcpy(d->source[f], def->source[f], sizeof d->source[f]);
            continue;
        }
        if (isnan(d->value[f]))
            continue;
        if (d->source[f][0])
            continue;
        if (def && def->source[f][0])
            memcpy(d->source[f], def->source[f], sizeof d->source[f]);
        else if (r->general[0])
            memcpy(d->source[f], r->general, sizeof d->source[f]);
        else if (r->user)
            snprintf(d->source[f], sizeof d->source[f], "given in %.300s", r->path);
    }
    if (isnan(d->value[SIM_DEV_FP32]))
        return dt_err_input(err,
                            "%s:%d: device.fp32: missing (every device needs its FP32 "
                            "peak, e.g. fp32 = 19.5Tf, or flops: a measured speed)",
                            r->path, r->section_line);
    /* the shape model needs all of its figures, or none */
    static const sim_device_field_t needs[] = {SIM_DEV_MEMORY_BANDWIDTH, SIM_DEV_GEMM_EFFICIENCY,
                                               SIM_DEV_ATTENTION_EFFICIENCY,
                                               SIM_DEV_MEMORY_EFFICIENCY};
    for (size_t k = 0; k < sizeof needs / sizeof needs[0]; k++) {
        int sms = !isnan(d->value[SIM_DEV_SMS]), f = needs[k];
        if (sms && isnan(d->value[f]))
            return dt_err_input(err,
                                "%s:%d: device.%s: missing (sms at line %d times GEMMs "
                                "by shape, which needs memory_bandwidth and the "
                                "gemm, attention and memory efficiencies)",
                                r->path, r->section_line, field_names[f], r->line_of[SIM_DEV_SMS]);
        if (!sms && shape_field(f) && r->line_of[f])
            return dt_err_input(err,
                                "%s:%d: device.%s: given without sms (the compute model "
                                "by shape needs the device's multiprocessors)",
                                r->path, r->line_of[f], field_names[f]);
    }
    /* a device idles at or below its full power: the energy model interpolates between */
    double idle = d->value[SIM_DEV_POWER_IDLE], max = d->value[SIM_DEV_POWER_MAX];
    if (!isnan(idle) && !isnan(max) && idle > max) {
        int li = r->line_of[SIM_DEV_POWER_IDLE], lm = r->line_of[SIM_DEV_POWER_MAX];
        return dt_err_input(err,
                            "%s:%d: device.%s: power_idle %g W above power_max %g W "
                            "(expected power_idle <= power_max)",
                            r->path,
                            li   ? li
                            : lm ? lm
                                 : r->section_line,
                            li || !lm ? "power_idle" : "power_max", idle, max);
    }
    /* NVLink SHARP reduces in the switch of a server whose GPUs also ring over NVLink: the
     * NCCL model compares the two, so NVLS alone has nothing to be chosen against */
    if (!isnan(d->value[SIM_DEV_NVLS_BUSBW]) && isnan(d->value[SIM_DEV_NVLINK_BUSBW]))
        return dt_err_input(err,
                            "%s:%d: device.nvls_busbw: given without nvlink_busbw (a "
                            "server with NVLink SHARP also rings over NVLink)",
                            r->path, r->line_of[SIM_DEV_NVLS_BUSBW]);
    r->cur = NULL;
    return DT_OK;
}

/* "[defaults]", "[device]" or "[device NAME]". */
static dt_status section_start(dev_reader_t *r, const char *name, int line, dt_err_t *err)
{
    if (section_finish(r, err))
        return DT_ERR_INPUT;
    memset(r->line_of, 0, sizeof r->line_of);
    memset(r->source_line, 0, sizeof r->source_line);
    r->flops_line = 0;
    r->general[0] = '\0';
    r->in_defaults = 0;
    if (!r->user && !strcmp(name, "defaults")) {
        if (r->n)
            return dt_err_input(err, "%s:%d: [defaults] comes before the devices", r->path, line);
        r->in_defaults = 1;
        r->section_line = line;
        return DT_OK;
    }
    const char *dev = NULL;
    if (!strcmp(name, "device"))
        dev = "";
    else if (!strncmp(name, "device ", 7))
        dev = name + 7;
    if (!dev || (!r->user && !*dev))
        return dt_err_input(err, "%s:%d: [%s]: unknown section (expected [device%s])", r->path,
                            line, name, r->user ? "] or [device NAME" : " NAME] or [defaults");
    for (const char *c = dev; *c; c++)
        if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && !strchr("._-", *c))
            return dt_err_input(err,
                                "%s:%d: [device %s]: a device name is lower-case "
                                "letters, digits, '.', '_' and '-'",
                                r->path, line, dev);
    if (r->user && r->n)
        return dt_err_input(err,
                            "%s:%d: [%s]: a device file holds one device (its first "
                            "section is at line %d)",
                            r->path, line, name, r->section_line);
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->devs[i].name, dev))
            return dt_err_input(err, "%s:%d: [device %s]: given twice", r->path, line, dev);
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->devs = realloc(r->devs, r->cap * sizeof *r->devs);
        DT_CHECK(r->devs, "out of memory");
    }
    r->section_line = line;
    r->cur = &r->devs[r->n++];
    device_clear(r->cur);
    snprintf(r->cur->name, sizeof r->cur->name, "%s", dev);
    return DT_OK;
}

/* The value of field f in base units. */
static dt_status field_value(sim_device_field_t f, const char *v, double *out, dt_err_t *err)
{
    dt_status st;
    switch (f) {
    case SIM_DEV_MEMORY:
        st = scenario_parse_size(v, out, err);
        break;
    case SIM_DEV_MEMORY_BANDWIDTH:
    case SIM_DEV_NVLINK_BUSBW:
    case SIM_DEV_NVLS_BUSBW:
        st = scenario_parse_bandwidth(v, out, err);
        break;
    case SIM_DEV_POWER_IDLE:
    case SIM_DEV_POWER_MAX:
        return scenario_parse_power(v, out, err);
    case SIM_DEV_SMS: {
        char *end;
        size_t len = scn_scan_number(v);
        *out = len ? strtod(v, &end) : NAN;
        if (!len || v[len] || !(*out >= 1 && *out <= 100000) || *out != floor(*out))
            return dt_err_input(err,
                                "bad count \"%s\" (expected a whole number of "
                                "multiprocessors, 1 to 100000)",
                                v);
        return DT_OK;
    }
    case SIM_DEV_EFFICIENCY:
    case SIM_DEV_TENSOR_EFFICIENCY:
    case SIM_DEV_GEMM_EFFICIENCY:
    case SIM_DEV_ATTENTION_EFFICIENCY:
    case SIM_DEV_MEMORY_EFFICIENCY:
    case SIM_DEV_NIC_EFFICIENCY:
    case SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY: {
        char *end;
        size_t len = scn_scan_number(v);
        *out = len ? strtod(v, &end) : NAN;
        if (!len || v[len] || !(*out > 0 && *out <= 1))
            return dt_err_input(err, "bad fraction \"%s\" (expected a number in (0, 1])", v);
        return DT_OK;
    }
    default:
        st = scenario_parse_flops(v, out, err);
        if (!st && *out > 0 && !scenario_simulable(SIM_Q_SPEED, *out))
            return dt_err_input(err,
                                "\"%s\" is beyond what SimGrid's solver computes with "
                                "(expected %s)",
                                v, scenario_simulable_range(SIM_Q_SPEED));
        break;
    }
    if (!st && !(*out > 0))
        return dt_err_input(err, "\"%s\" must be > 0", v);
    return st;
}

static dt_status key_line(dev_reader_t *r, const char *key, const char *v, int line, dt_err_t *err)
{
    sim_device_profile_t *d = r->in_defaults ? &r->def : r->cur;
    const char *sect = r->in_defaults ? "defaults" : "device";
    dt_err_t e;
    if (!d)
        return dt_err_input(err,
                            "%s:%d: %s: a key before any section (expected [device%s] "
                            "first)",
                            r->path, line, key, r->user ? "" : " NAME");
    if (!strcmp(key, "name") && !r->in_defaults) {
        if (copy_text(d->title, sizeof d->title, v))
            return dt_err_input(err, "%s:%d: device.name: longer than %zu characters", r->path,
                                line, sizeof d->title - 1);
        return DT_OK;
    }
    if (!strcmp(key, "source") && !r->in_defaults) {
        if (copy_text(r->general, sizeof r->general, v))
            return dt_err_input(err, "%s:%d: device.source: longer than %zu characters", r->path,
                                line, sizeof r->general - 1);
        return DT_OK;
    }
    if (!strcmp(key, "flops") && r->user) { /* dtsim calibrate's: a measured speed */
        int other = r->line_of[SIM_DEV_FP32];
        if (r->flops_line || other)
            return dt_err_input(err,
                                "%s:%d: device.flops: %s at line %d (flops is a measured "
                                "speed, fp32 a peak: give one of them)",
                                r->path, line, r->flops_line ? "flops given" : "fp32 given",
                                r->flops_line ? r->flops_line : other);
        double x;
        if (field_value(SIM_DEV_FP32, v, &x, &e))
            return dt_err_input(err, "%s:%d: device.flops: %s", r->path, line, e.msg);
        r->flops_line = line;
        d->value[SIM_DEV_FP32] = x;
        d->value[SIM_DEV_EFFICIENCY] = 1;
        snprintf(d->source[SIM_DEV_FP32], sizeof d->source[0], "measured (flops in %.300s)",
                 r->path);
        snprintf(d->source[SIM_DEV_EFFICIENCY], sizeof d->source[0],
                 "a measured sustained speed: its fraction is 1");
        return DT_OK;
    }
    int is_source = !strncmp(key, "source.", 7);
    const char *fname = is_source ? key + 7 : key;
    int f = 0;
    while (f < SIM_DEV_FIELDS && strcmp(field_names[f], fname))
        f++;
    if (f == SIM_DEV_FIELDS)
        return dt_err_input(err,
                            "%s:%d: %s.%s: unknown key (expected %sfp32, tf32, bf16, fp8, "
                            "memory, memory_bandwidth, power_idle, power_max, efficiency, "
                            "tensor_efficiency, sms, gemm_efficiency, "
                            "attention_efficiency, memory_efficiency, nvlink_busbw, "
                            "nvls_busbw, nic_efficiency, fp8_block_gemm_efficiency%s or "
                            "source.KEY)",
                            r->path, line, sect, key,
                            r->in_defaults ? ""
                            : r->user      ? "name, flops, "
                                           : "name, ",
                            r->in_defaults ? "" : ", source");
    if (is_source) {
        if (r->source_line[f])
            return dt_err_input(err, "%s:%d: %s.%s: given twice (line %d)", r->path, line, sect,
                                key, r->source_line[f]);
        if (copy_text(d->source[f], sizeof d->source[f], v))
            return dt_err_input(err, "%s:%d: %s.%s: longer than %zu characters", r->path, line,
                                sect, key, sizeof d->source[f] - 1);
        r->source_line[f] = line;
        return DT_OK;
    }
    if (r->line_of[f] || (f == SIM_DEV_FP32 && r->flops_line))
        return dt_err_input(err, "%s:%d: %s.%s: %s at line %d", r->path, line, sect, key,
                            r->line_of[f] ? "given twice, first" : "flops (a measured speed) given",
                            r->line_of[f] ? r->line_of[f] : r->flops_line);
    if (field_value((sim_device_field_t)f, v, &d->value[f], &e))
        return dt_err_input(err, "%s:%d: %s.%s: %s", r->path, line, sect, key, e.msg);
    r->line_of[f] = line;
    return DT_OK;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Reads text (NUL-terminated) into r->devs. */
static dt_status read_text(dev_reader_t *r, const char *text, dt_err_t *err)
{
    int line = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *buf = dt_malloc(len + 1);
        memcpy(buf, p, len);
        buf[len] = '\0';
        p += len + (nl ? 1 : 0);
        line++;
        char *s = trim(buf), *eq;
        dt_status st = DT_OK;
        if (!*s || *s == ';' || *s == '#') {
            /* a comment or a blank line */
        } else if (*s == '[') {
            size_t n = strlen(s);
            if (s[n - 1] != ']') {
                st = dt_err_input(err, "%s:%d: a section header without its ']'", r->path, line);
            } else {
                s[n - 1] = '\0';
                st = section_start(r, trim(s + 1), line, err);
            }
        } else if ((eq = strchr(s, '=')) != NULL) {
            *eq = '\0';
            st = key_line(r, trim(s), trim(eq + 1), line, err);
        } else {
            st = dt_err_input(err, "%s:%d: expected key = value or [device NAME]", r->path, line);
        }
        free(buf);
        if (st)
            return st;
    }
    if (section_finish(r, err))
        return DT_ERR_INPUT;
    if (!r->n)
        return dt_err_input(err, "%s: no [device] section", r->path);
    return DT_OK;
}

/* ---- the catalogue and files ---------------------------------------------------------- */

static sim_device_profile_t *catalogue, catalogue_defaults; /* [defaults], for files too */
static size_t catalogue_n;

const sim_device_profile_t *scenario_device_profiles(size_t *count)
{
    if (!catalogue) {
        dev_reader_t r = {.path = "scenarios/devices/catalogue.ini"};
        device_clear(&r.def);
        r.defaults = &r.def;
        dt_err_t e;
        dt_status st = read_text(&r, (const char *)device_catalogue, &e);
        if (st)
            fprintf(stderr, "dtsim: the device catalogue: %s\n", e.msg);
        DT_ASSERT(st == DT_OK);
        catalogue = r.devs;
        catalogue_n = r.n;
        catalogue_defaults = r.def;
    }
    if (count)
        *count = catalogue_n;
    return catalogue;
}

dt_status scenario_device_read(const char *path, sim_device_profile_t *out, dt_err_t *err)
{
    scenario_device_profiles(NULL); /* the defaults an entry leaves out */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) /* a FIFO would block */
        return dt_err_input(err, "%s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return dt_err_input(err, "cannot read device profile %s", path);
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = 2 * (len + got + 1);
            text = realloc(text, cap);
            DT_CHECK(text, "out of memory");
        }
        memcpy(text + len, chunk, got);
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || len > (1u << 20) || (text && memchr(text, '\0', len))) {
        free(text);
        return dt_err_input(err, "%s: %s", path,
                            bad ? "cannot read it" : "not a device profile (binary or over 1 MB)");
    }
    if (!text)
        text = dt_calloc(1, 1);
    text[len] = '\0';
    dev_reader_t r = {.path = path, .user = 1, .defaults = &catalogue_defaults};
    dt_status st = read_text(&r, text, err);
    free(text);
    if (!st) {
        *out = r.devs[0];
        snprintf(out->name, sizeof out->name, "%s", path);
        if (!out->title[0])
            snprintf(out->title, sizeof out->title, "%s", "profile file");
    }
    free(r.devs);
    return st;
}

const sim_device_profile_t *scenario_device_defaults(void)
{
    scenario_device_profiles(NULL);
    return &catalogue_defaults;
}

const sim_device_profile_t *scn_builtin_profile(const char *name)
{
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cat[i].name, name))
            return &cat[i];
    return NULL;
}

const sim_device_profile_t *scn_profile_find(const char *name)
{
    static sim_device_profile_t file_profile;
    const sim_device_profile_t *p = scn_builtin_profile(name);
    if (p || name[0] != '/')
        return p;
    dt_err_t e;
    return scenario_device_read(name, &file_profile, &e) ? NULL : &file_profile;
}

const sim_device_profile_t *scenario_device(const scenario_t *sc)
{
    return scn_profile_find(sc->device);
}

double scenario_device_speed(const sim_device_profile_t *p, const scenario_t *sc)
{
    double peak = p->value[sc->precision];
    double fraction = sc->device_efficiency > 0        ? sc->device_efficiency
                      : sc->precision == SIM_PREC_FP32 ? p->value[SIM_DEV_EFFICIENCY]
                                                       : p->value[SIM_DEV_TENSOR_EFFICIENCY];
    return peak * fraction; /* NAN without that peak */
}

void scn_device_names(char *buf, size_t n)
{
    size_t count, len = 0;
    const sim_device_profile_t *cat = scenario_device_profiles(&count);
    buf[0] = '\0';
    for (size_t i = 0; i < count && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", cat[i].name);
}

void scenario_device_cell(const sim_device_profile_t *p, sim_device_field_t f, char *buf, size_t n)
{
    static const double scale[SIM_DEV_FIELDS] = {1e12, 1e12, 1e12, 1e12, 1e9, 1e9, 1,   1, 1,
                                                 1,    1,    1,    1,    1,   1e9, 1e9, 1, 1};
    double v = p->value[f];
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.6g", v / scale[f]);
}

/* ---- bytes ---------------------------------------------------------------------------- */

double scenario_value_bytes(const scenario_t *sc)
{
    return sc->precision == SIM_PREC_BF16 || sc->precision == SIM_PREC_FP8 ? 2.0 : 4.0;
}

double scenario_optimizer_bytes(const scenario_t *sc)
{
    double master = scenario_value_bytes(sc) < 4 ? 4.0 : 0.0;
    double state = 4.0 * trainer_optim_state_floats(&sc->sgd);
    return master + state;
}

void scenario_format_gb(double bytes, char *buf, size_t n)
{
    snprintf(buf, n, "%.3g GB", bytes / 1e9);
}
