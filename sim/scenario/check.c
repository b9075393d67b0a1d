/* Errors at a key's location: every message that names a key is worded here
 * ("PATH:LINE: section.key: ...", "--set section.key: ...", a [sweep] value), with the
 * location of the other key of a relation and the choice of which of two keys to blame;
 * scenario_fail and scenario_blame give the same to the strategies' checks. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "keys_impl.h"

/* "PATH:LINE: section.key: msg" (a file line), "--set section.key: msg" (line < 0),
 * "PATH: section.key: msg" (line 0, a default or derived value). In a run of a sweep, a
 * swept key reads "PATH:LINE: sweep section.key: value N \"V\": msg" and any other key's
 * message ends with the run it happened in. */
dt_status scn_key_error(dt_err_t *err, const scenario_t *sc, int line, int k, const char *fmt, ...)
{
    char msg[512 + SCENARIO_STR + 32]; /* room for the run's name */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, 512, fmt, ap);
    va_end(ap);
    const char *s = scn_key_table[k].section, *key = scn_key_table[k].key;
    if (sc->sweep.is_run) {
        int j = scn_sweep_find(sc, k);
        if (j >= 0 && line == sc->sweep.keys[j].line) {
            const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
            return dt_err_input(err, "%s:%d: sweep %s.%s: value %d \"%s\": %s", sc->path, line, s,
                                key, sk->chosen + 1, scn_sweep_value(sc, sk, sk->chosen), msg);
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
void scn_key_where(const scenario_t *sc, int k, char *buf, size_t n)
{
    int line = sc->key_line[k], j = sc->sweep.is_run ? scn_sweep_find(sc, k) : -1;
    const char *s = scn_key_table[k].section, *key = scn_key_table[k].key;
    if (j >= 0) {
        const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
        snprintf(buf, n, "%s.%s = %s from [sweep] at line %d", s, key,
                 scn_sweep_value(sc, sk, sk->chosen), sk->line);
    } else if (line > 0)
        snprintf(buf, n, "%s.%s at line %d", s, key, line);
    else
        snprintf(buf, n, "%s.%s %s", s, key, line < 0 ? "from --set" : "by default");
}

void scenario_key_location(const scenario_t *sc, const char *section_key, char *buf, size_t n)
{
    int k = scn_key_named(section_key);
    int line = sc->key_line[k], j = sc->sweep.is_run ? scn_sweep_find(sc, k) : -1;
    if (j >= 0)
        snprintf(buf, n, "%s:%d: sweep %s (value \"%s\")", sc->path, sc->sweep.keys[j].line,
                 section_key, scn_sweep_value(sc, &sc->sweep.keys[j], sc->sweep.keys[j].chosen));
    else if (line > 0)
        snprintf(buf, n, "%s:%d: %s", sc->path, line, section_key);
    else if (line < 0)
        snprintf(buf, n, "--set %s", section_key);
    else
        snprintf(buf, n, "%s: %s", sc->path, section_key);
}

int scenario_key_given(const scenario_t *sc, const char *section_key)
{
    return sc->key_line[scn_key_named(section_key)] != 0;
}

int scenario_key_swept(const scenario_t *sc, const char *section_key)
{
    return sc->sweep.is_run && scn_sweep_find(sc, scn_key_named(section_key)) >= 0;
}

/* The key to blame for a relation between a and b: in a run of a sweep, a swept one (it
 * makes this combination), else the one the user gave (a first). */
int scn_blame(const scenario_t *sc, int a, int b)
{
    if (sc->sweep.is_run && scn_sweep_find(sc, a) < 0 && scn_sweep_find(sc, b) >= 0)
        return b;
    if (sc->sweep.is_run && scn_sweep_find(sc, a) >= 0)
        return a;
    return sc->key_line[a] == 0 && sc->key_line[b] != 0 ? b : a;
}

dt_status scenario_fail(const scenario_t *sc, dt_err_t *err, const char *section_key,
                        const char *fmt, ...)
{
    char msg[512]; /* scn_key_error keeps as much */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int k = scn_key_named(section_key);
    return scn_key_error(err, sc, sc->key_line[k], k, "%s", msg);
}

const char *scenario_blame(const scenario_t *sc, const char *a, const char *b, char *where,
                           size_t n)
{
    int ka = scn_key_named(a), kb = scn_key_named(b), k = scn_blame(sc, ka, kb);
    if (where)
        scn_key_where(sc, k == ka ? kb : ka, where, n);
    return k == ka ? a : b;
}
