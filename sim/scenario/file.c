/* Defaults, scenario files and --set, and scenario_load, which applies them in that order
 * and validates; a key that a --set replaces is not parsed from the file at all, so that
 * --set repairs a bad value there (seed = banana, a data.text that is missing). device and
 * device_flops are a pair: device names a profile (its speed becomes device_flops) or "custom"; in
 * one file both may appear only if they agree, so nothing is silently overridden; a --set of either
 * one replaces the pair. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "keys_impl.h"

void scenario_defaults(scenario_t *sc)
{
    memset(sc, 0, sizeof *sc);
    trainer_model_config_default(&sc->model, TRAINER_ARCH_MLP); /* sample shape, classes */
    parse_ctx_t ctx = {NULL};
    for (int k = 0; k < scn_key_count; k++) {
        if (scn_key_table[k].flags & DERIVED)
            continue;
        dt_err_t e;
        dt_status st = scn_key_apply(sc, &scn_key_table[k], scn_key_table[k].def, &ctx, &e);
        if (st)
            fprintf(stderr, "dtsim: default of %s.%s: %s\n", scn_key_table[k].section,
                    scn_key_table[k].key, e.msg);
        DT_ASSERT(st == DT_OK);
    }
    const sim_device_profile_t *p = scn_profile_find(sc->device);
    DT_ASSERT(p);
    sc->device_flops = scenario_device_speed(p, sc);
}

typedef struct file_state {
    scenario_t *sc;
    parse_ctx_t ctx;
    const char *next; /* unread text, NULL at the end */
    int line;         /* the line last handed to inih */
    int err_line;     /* the first error's line; 0 none */
    dt_err_t *err;
    const char *by_set;          /* (scn_key_count): 1 where a --set replaces the file's value */
    int seen[SCENARIO_MAX_KEYS]; /* the line of each such key in the file: given twice? */
} file_state_t;

static void file_fail(file_state_t *st, int line)
{
    st->err_line = line;
}

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
    if (!scn_section_known(name)) {
        char hint[64];
        scn_section_hint(name, hint, sizeof hint);
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

/* Hands inih the file one line per call: Debian's libinih has no INI_HANDLER_LINENO, and
 * inih handles a line right after reading it, so st->line is the line of the key being
 * handled. Also strips leading blanks (an indented key is a key, not a continuation),
 * checks section headers (inih says nothing of a section without keys) and refuses lines
 * longer than inih's buffer, which it would split. */
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
        dt_err_input(st->err,
                     "%s:%d: %s: key outside any section (put it under [run], "
                     "[model], [data], [cluster], [strategy] or [faults])",
                     sc->path, line, name);
        goto fail;
    }
    if (!strcmp(section, "sweep")) {
        if (strchr(name, ',') ? scn_sweep_add_linked(sc, name, value, line, &st->ctx, st->err)
                              : scn_sweep_add(sc, name, value, line, &st->ctx, st->err))
            goto fail;
        return 1;
    }
    int k = scn_key_find(section, name);
    if (k < 0) {
        char hint[256];
        scn_key_hint(section, name, hint, sizeof hint);
        dt_err_input(st->err, "%s:%d: %s.%s: unknown key%s", sc->path, line, section, name, hint);
        goto fail;
    }
    if (st->by_set && st->by_set[k]) { /* replaced: its value is never read */
        if (st->seen[k]) {
            scn_key_error(st->err, sc, line, k, "given twice (lines %d and %d)", st->seen[k], line);
            goto fail;
        }
        st->seen[k] = line;
        return 1;
    }
    dt_err_t e;
    /* jobs.files again: the line's names go after the earlier ones (a hundred jobs do not
     * fit one line: inih's lines end at INI_MAX_LINE) */
    if (sc->key_line[k] > 0 && k == scn_key_index("jobs", "files")) {
        char *before = dt_malloc(sizeof sc->jobs_files);
        memcpy(before, sc->jobs_files, sizeof sc->jobs_files);
        int bad = scn_key_apply(sc, &scn_key_table[k], value, &st->ctx, &e) != DT_OK;
        if (!bad && strlen(before) + 2 + strlen(sc->jobs_files) >= sizeof sc->jobs_files) {
            snprintf(e.msg, sizeof e.msg, "the list of files is longer than %zu characters",
                     sizeof sc->jobs_files - 1);
            bad = 1;
        }
        if (!bad) {
            size_t len = strlen(before);
            snprintf(before + len, sizeof sc->jobs_files - len, ", %s", sc->jobs_files);
            memcpy(sc->jobs_files, before, sizeof sc->jobs_files);
        }
        free(before);
        if (bad) {
            scn_key_error(st->err, sc, line, k, "%s", e.msg);
            goto fail;
        }
        return 1;
    }
    if (sc->key_line[k] > 0) {
        scn_key_error(st->err, sc, line, k, "given twice (lines %d and %d)", sc->key_line[k], line);
        goto fail;
    }
    if (scn_key_apply(sc, &scn_key_table[k], value, &st->ctx, &e)) {
        scn_key_error(st->err, sc, line, k, "%s", e.msg);
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

/* Opens path for reading if it is a regular file: a FIFO or a device would block the open
 * or the reads for good, so it is opened without blocking and looked at before any read. */
static dt_status open_regular(const char *path, FILE **out, dt_err_t *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return dt_err_input(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        close(fd);
        if (!e && S_ISDIR(sb.st_mode))
            e = EISDIR;
        return e ? dt_err_input(err, "%s: cannot read: %s", path, strerror(e))
                 : dt_err_input(err,
                                "%s: not a regular file (a FIFO or a device would never "
                                "end)",
                                path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *out = fdopen(fd, "rb");
    DT_CHECK(*out, "fdopen %s: %s", path, strerror(errno));
    return DT_OK;
}

static dt_status read_all(const char *path, char **out, dt_err_t *err)
{
    FILE *f = NULL;
    if (open_regular(path, &f, err))
        return DT_ERR_INPUT;
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
 * file) and the run name (the file's base name unless given). */
static dt_status file_finish(scenario_t *sc, dt_err_t *err)
{
    int kd = scn_key_index("cluster", "device"), kf = scn_key_index("cluster", "device_flops");
    int kn = scn_key_index("run", "name");
    if (scn_sweep_finish(sc, err))
        return DT_ERR_INPUT;
    const sim_device_profile_t *p = scn_profile_find(sc->device);
    /* NAN without a peak at this precision: scenario_validate says so */
    double speed = p ? scenario_device_speed(p, sc) : NAN;
    if (sc->key_line[kf] > 0) {
        if (sc->key_line[kd] == 0) {
            scn_set_string(sc->device, sizeof sc->device, "custom", NULL);
        } else if (p) {
            if (!isnan(speed) && fabs(sc->device_flops - speed) > 1e-12 * speed) {
                char have[64], want[64];
                scn_format_unit(have, sizeof have, sc->device_flops, scn_flops_units);
                scn_format_unit(want, sizeof want, speed, scn_flops_units);
                return scn_key_error(err, sc, sc->key_line[kf], kf,
                                     "%s disagrees with device = %s at line %d (%s at "
                                     "model.precision = %s); write device = custom to use your own "
                                     "speed, or drop one of the two",
                                     have, p->name, sc->key_line[kd], want,
                                     scenario_precision_name(sc->precision));
            }
            sc->device_flops = speed;
        }
    } else if (p) {
        sc->device_flops = speed;
    } else if (scn_sweep_find(sc, kf) < 0) {
        return scn_key_error(err, sc, sc->key_line[kd], kd,
                             "custom needs cluster.device_flops (the simulated speed, e.g. 20Tf)");
    }
    if (sc->key_line[kn] == 0) {
        const char *base = strrchr(sc->path, '/');
        base = base ? base + 1 : sc->path;
        char name[SCENARIO_STR];
        snprintf(name, sizeof name, "%s", base);
        if (scn_ends_with(name, ".ini") && strlen(name) > 4)
            name[strlen(name) - 4] = '\0';
        if (name[0])
            scn_set_string(sc->name, sizeof sc->name, name, NULL);
    }
    return DT_OK;
}

/* Whether text is a resolved configuration: SCENARIO_RESOLVED_MARK opens one of the
 * comment lines before its first key or section (dtsim check prints its runs above it). */
static int resolved_text(const char *text)
{
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!strncmp(p, SCENARIO_RESOLVED_MARK, strlen(SCENARIO_RESOLVED_MARK)))
            return 1;
        if (*p != '#' && *p != ';' && *p != '\n' && *p != '\r')
            return 0;
        p = strchr(p, '\n');
        if (!p)
            return 0;
        p++;
    }
    return 0;
}

static dt_status load_file(scenario_t *sc, const char *path, const char *by_set, dt_err_t *err)
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
    sc->resolved = resolved_text(text);
    file_state_t st = {.sc = sc, .ctx = {dir}, .next = text, .err = err, .by_set = by_set};
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
            dt_err_input(err,
                         "%s:%d: syntax error: \"%s\" (expected key = value, [section] or "
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

/* A --set's section, key and value, trimmed; DT_ERR_INPUT when it is not section.key=value
 * or a part is too long. */
static dt_status set_split(const char *assignment, char section[64], char key[64],
                           char value[SCENARIO_STR * 2], dt_err_t *err)
{
    const char *eq = strchr(assignment, '=');
    const char *dot = eq ? memchr(assignment, '.', (size_t)(eq - assignment)) : NULL;
    if (!eq || !dot)
        return dt_err_input(err, "--set %s: expected section.key=value (e.g. run.steps=100)",
                            assignment);
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
    if (slen >= 64 || klen >= 64 || vlen >= SCENARIO_STR * 2)
        return dt_err_input(err, "--set %s: too long", assignment);
    memcpy(section, s0, slen);
    section[slen] = '\0';
    memcpy(key, k0, klen);
    key[klen] = '\0';
    memcpy(value, v0, vlen);
    value[vlen] = '\0';
    return DT_OK;
}

dt_status scenario_set(scenario_t *sc, const char *assignment, dt_err_t *err)
{
    char section[64], key[64], value[SCENARIO_STR * 2];
    if (set_split(assignment, section, key, value, err))
        return DT_ERR_INPUT;
    if (!scn_section_known(section)) {
        char hint[64];
        scn_section_hint(section, hint, sizeof hint);
        return dt_err_input(err, "--set %s.%s: unknown section [%s] (expected " SECTION_LIST "%s)",
                            section, key, section, hint);
    }
    if (!strcmp(section, "sweep"))
        return dt_err_input(err,
                            "--set sweep.%s: [sweep] lists are written in the scenario "
                            "file, not given with --set",
                            key);
    int k = scn_key_find(section, key);
    if (k < 0) {
        char hint[256];
        scn_key_hint(section, key, hint, sizeof hint);
        return dt_err_input(err, "--set %s.%s: unknown key%s", section, key, hint);
    }
    int j = scn_sweep_find(sc, k), partner = scn_device_partner(k);
    if (j >= 0)
        return scn_key_error(err, sc, -1, k,
                             "swept in [sweep] at line %d (a swept key takes its values from "
                             "[sweep] only)",
                             sc->sweep.keys[j].line);
    if (partner >= 0 && (j = scn_sweep_find(sc, partner)) >= 0)
        return scn_key_error(err, sc, -1, k,
                             "would replace cluster.%s, swept in [sweep] at line %d (each of the "
                             "pair sets the other)",
                             scn_key_table[partner].key, sc->sweep.keys[j].line);
    int kd = scn_key_index("cluster", "device"), kf = scn_key_index("cluster", "device_flops");
    scenario_t before = *sc;
    parse_ctx_t ctx = {NULL};
    dt_err_t e;
    if (scn_key_apply(sc, &scn_key_table[k], value, &ctx, &e)) {
        *sc = before; /* a failed --set leaves the scenario as it was */
        return scn_key_error(err, sc, -1, k, "%s", e.msg);
    }
    sc->key_line[k] = -1;
    const sim_device_profile_t *p = scn_profile_find(sc->device);
    if (k == scn_key_index("model", "precision") ||
        k == scn_key_index("cluster", "device_efficiency")) {
        if (p) /* the device's speed at the new precision or fraction */
            sc->device_flops = scenario_device_speed(p, sc);
    } else if (k == kd) {
        if (p) {
            sc->device_flops = scenario_device_speed(p, sc);
            sc->key_line[kf] = 0;
        } else if (before.key_line[kf] == 0) {
            *sc = before;
            return scn_key_error(err, sc, -1, k,
                                 "custom needs a speed: give --set cluster.device_flops=SPEED "
                                 "instead (it makes the device custom)");
        }
    } else if (k == kf) {
        scn_set_string(sc->device, sizeof sc->device, "custom", NULL);
        sc->key_line[kd] = -1;
    }
    return DT_OK;
}

/* scenario_load and scenario_load_under: defaults, under's assignments as defaults, the
 * file, sets, validation */
static dt_status load(scenario_t *sc, const char *path, const char *const *under, int n_under,
                      const char *const *sets, int n_sets, dt_err_t *err)
{
    scenario_defaults(sc);
    for (int i = 0; i < n_under; i++)
        if (scenario_set(sc, under[i], err))
            return DT_ERR_INPUT;
    memset(sc->key_line, 0, sizeof sc->key_line); /* defaults: the file may give them */
    if (path) {
        dt_err_t why;
        if (scn_set_string(sc->path, sizeof sc->path, path, &why))
            return dt_err_input(err, "\"%s\": the path %s", path, why.msg);
        /* the keys the sets replace (a malformed set is reported below, after the file) */
        char *by_set = dt_calloc((size_t)scn_key_count, 1);
        for (int i = 0; i < n_sets; i++) {
            char section[64], key[64], value[SCENARIO_STR * 2];
            int k = set_split(sets[i], section, key, value, &why) ? -1 : scn_key_find(section, key);
            if (k >= 0)
                by_set[k] = 1;
        }
        dt_status st = load_file(sc, path, by_set, err);
        free(by_set);
        if (st)
            return DT_ERR_INPUT;
    }
    for (int i = 0; i < n_sets; i++)
        if (scenario_set(sc, sets[i], err))
            return DT_ERR_INPUT;
    if (!sc->sweep.n_keys) {
        scn_timeline_resolve(sc);
        return scenario_validate(sc, err);
    }
    /* every run, so that no combination fails once a sweep has started */
    scenario_t *run = dt_malloc(sizeof *run);
    dt_status st = DT_OK;
    for (long i = 0, n = scenario_sweep_count(sc); st == DT_OK && i < n; i++)
        st = scenario_sweep_run(sc, i, run, err);
    free(run);
    return st;
}

dt_status scenario_load(scenario_t *sc, const char *path, const char *const *sets, int n_sets,
                        dt_err_t *err)
{
    return load(sc, path, NULL, 0, sets, n_sets, err);
}

dt_status scenario_load_under(scenario_t *sc, const char *path, const char *const *under,
                              int n_under, dt_err_t *err)
{
    return load(sc, path, under, n_under, NULL, 0, err);
}
