/* [sweep]: lists of values for some keys, crossed into runs (keys on one line move
 * together). Each value is parsed by its key's own parser on a scratch copy when its line
 * is read and kept as scn_key_format writes it, so that a run applies those texts again and
 * the [sweep] scenario_write prints loads back to the same bytes. A swept key keeps its
 * default in the base scenario; in a run, its key_line is the [sweep] line. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "keys_impl.h"

/* The position of key k in sc's [sweep], -1 if it is not swept. */
int scn_sweep_find(const scenario_t *sc, int k)
{
    for (int j = 0; j < sc->sweep.n_keys; j++)
        if (sc->sweep.keys[j].key == k)
            return j;
    return -1;
}

const char *scn_sweep_value(const scenario_t *sc, const scenario_sweep_key_t *sk, int v)
{
    return sc->sweep.text + sk->value[v];
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
    char section[64], hint[256], full[128];
    if (!dot) {
        /* a key name alone, when only one section has it ("bandwidth" = cluster.bandwidth) */
        int found = -1, count = 0;
        for (int k = 0; k < scn_key_count; k++)
            if (!strcmp(scn_key_table[k].key, name)) {
                found = k;
                count++;
            }
        if (count == 1) {
            snprintf(full, sizeof full, "%s.%s", scn_key_table[found].section,
                     scn_key_table[found].key);
            name = full;
            dot = strchr(name, '.');
        }
    }
    if (!dot) {
        scn_key_hint("", name, hint, sizeof hint);
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
    if (!scn_section_known(section) || !strcmp(section, "sweep")) {
        hint[0] = '\0';
        if (strcmp(section, "sweep"))
            scn_section_hint(section, hint, sizeof hint);
        sweep_error(
            err, sc, line, name, 0, NULL,
            "unknown section [%s] (expected run, model, data, cluster, strategy or faults%s)",
            section, hint);
        return -1;
    }
    int k = scn_key_find(section, key);
    if (k < 0) {
        scn_key_hint(section, key, hint, sizeof hint);
        sweep_error(err, sc, line, name, 0, NULL, "unknown key%s", hint);
        return -1;
    }
    if (k == scn_key_index("run", "name")) {
        sweep_error(err, sc, line, name, 0, NULL,
                    "cannot be swept (each run is named after its swept values)");
        return -1;
    }
    if (k == scn_key_index("run", "db")) {
        sweep_error(err, sc, line, name, 0, NULL,
                    "cannot be swept (the runs of a sweep share one database)");
        return -1;
    }
    int j = scn_sweep_find(sc, k), partner = scn_device_partner(k);
    if (j >= 0) {
        sweep_error(err, sc, line, name, 0, NULL, "given twice in [sweep] (lines %d and %d)",
                    sc->sweep.keys[j].line, line);
        return -1;
    }
    if (partner >= 0 && (j = scn_sweep_find(sc, partner)) >= 0) {
        sweep_error(err, sc, line, name, 0, NULL,
                    "cluster.%s is swept too, at line %d (each of the pair sets the other: "
                    "sweep one of them)",
                    scn_key_table[partner].key, sc->sweep.keys[j].line);
        return -1;
    }
    if (sc->sweep.n_keys == SCENARIO_SWEEP_KEYS) {
        sweep_error(err, sc, line, name, 0, NULL, "more than %d swept keys", SCENARIO_SWEEP_KEYS);
        return -1;
    }
    return k;
}

/* Checks one value of swept key k with the key's own parser (on a scratch copy) and appends
 * it, as scenario_write will write it, to sk. */
static dt_status sweep_value_add(scenario_t *sc, scenario_sweep_key_t *sk, const char *name,
                                 const char *v, int line, const parse_ctx_t *ctx, int allow_repeat,
                                 dt_err_t *err)
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
    dt_status st = scn_key_apply(scratch, &scn_key_table[k], v, ctx, &e);
    char canon[SCENARIO_STR + 64];
    if (!st)
        scn_key_format(scratch, &scn_key_table[k], canon, sizeof canon);
    free(scratch);
    if (st)
        return sweep_error(err, sc, line, name, n, v, "%s", e.msg);
    if (k == scn_key_index("cluster", "device") && !scn_profile_find(canon))
        return sweep_error(err, sc, line, name, n, v,
                           "custom needs a speed: sweep cluster.device_flops instead (it makes "
                           "the device custom)");
    if (strchr(canon, '"'))
        return sweep_error(err, sc, line, name, n, v,
                           "contains a double quote, which a [sweep] list cannot hold");
    for (int i = 0; i < sk->n_values; i++)
        if (!strcmp(scn_sweep_value(sc, sk, i), canon)) {
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
dt_status scn_sweep_add(scenario_t *sc, const char *name, const char *list, int line,
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
dt_status scn_sweep_add_linked(scenario_t *sc, const char *names, const char *list, int line,
                               const parse_ctx_t *ctx, dt_err_t *err)
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
        size_t len =
            (size_t)(close - p - 1) < sizeof inner ? (size_t)(close - p - 1) : sizeof inner - 1;
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
                st = sweep_error(err, sc, line, names, 0, NULL, "tuple %d: a quote out of place",
                                 tuples + 1);
                break;
            }
            char full[96];
            snprintf(full, sizeof full, "%s.%s",
                     scn_key_table[sc->sweep.keys[first + i].key].section,
                     scn_key_table[sc->sweep.keys[first + i].key].key);
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
                st = sweep_error(err, sc, line, names, 0, NULL, "tuple %d repeats tuple %d", b + 1,
                                 a + 1);
        }
    long runs = scenario_sweep_count(sc);
    if (st == DT_OK && runs > SCENARIO_SWEEP_RUNS)
        st = sweep_error(err, sc, line, names, 0, NULL, "%ld runs in all (expected at most %d)",
                         runs, SCENARIO_SWEEP_RUNS);
    if (st) {
        memset(sc->sweep.text + text_len, 0, sc->sweep.text_len - text_len);
        sc->sweep.text_len = text_len;
        memset(&sc->sweep.keys[first], 0,
               sizeof(scenario_sweep_key_t) * (size_t)(sc->sweep.n_keys - first));
        sc->sweep.n_keys = first;
    }
    return st;
}

/* After the file: a swept key may not also be given in its section (for the device pair:
 * device_flops swept goes with no device or device = custom; device swept with no
 * device_flops). */
dt_status scn_sweep_finish(scenario_t *sc, dt_err_t *err)
{
    for (int j = 0; j < sc->sweep.n_keys; j++) {
        const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
        int k = sk->key, partner = scn_device_partner(k);
        char name[96];
        snprintf(name, sizeof name, "%s.%s", scn_key_table[k].section, scn_key_table[k].key);
        if (sc->key_line[k] > 0)
            return sweep_error(err, sc, sk->line, name, 0, NULL,
                               "also given at line %d (a swept key takes its values from "
                               "[sweep] only: drop one of the two)",
                               sc->key_line[k]);
        if (partner < 0 || sc->key_line[partner] <= 0)
            continue;
        if (!strcmp(scn_key_table[k].key, "device"))
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
        const key_desc_t *d = &scn_key_table[sk->key];
        int shared = 0;
        for (int i = 0; i < sc->sweep.n_keys; i++)
            shared |= i != j && !strcmp(scn_key_table[sc->sweep.keys[i].key].key, d->key);
        const char *v = scn_sweep_value(sc, sk, sk->chosen), *slash = strrchr(v, '/');
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
    if (!sc->sweep.n_keys) {
        scn_timeline_resolve(run);
        return scenario_validate(run, err);
    }
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
    scn_set_string(run->name, sizeof run->name, name, NULL);
    int kd = scn_key_index("cluster", "device"), kf = scn_key_index("cluster", "device_flops");
    parse_ctx_t ctx = {NULL}; /* values were made absolute when the file was read */
    for (int j = 0; j < run->sweep.n_keys; j++) {
        const scenario_sweep_key_t *sk = &run->sweep.keys[j];
        dt_err_t e;
        run->key_line[sk->key] = sk->line;
        if (scn_key_apply(run, &scn_key_table[sk->key], scn_sweep_value(run, sk, sk->chosen), &ctx,
                          &e))
            return scn_key_error(err, run, sk->line, sk->key, "%s", e.msg);
        if (sk->key == kf)
            scn_set_string(run->device, sizeof run->device, "custom", NULL);
        else if (sk->key == kd)
            DT_ASSERT(scn_profile_find(run->device)); /* custom was refused with the file */
    }
    /* the device's speed at this run's device, precision and fraction */
    const sim_device_profile_t *p = scn_profile_find(run->device);
    if (p)
        run->device_flops = scenario_device_speed(p, run);
    scn_timeline_resolve(run);
    return scenario_validate(run, err);
}
