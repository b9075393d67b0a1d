/* Private to sim/scenario: what its files share. The key table (keys.c) and its
 * descriptors, the typed values (keys_values.c), lookups (keys_lookup.c), units
 * (units.c), device profiles (devices.c), [sweep] lookups (sweep.c) and errors at a key's
 * location (check.c). Nothing outside sim/scenario includes it. */
#ifndef DTSIM_SCENARIO_KEYS_IMPL_H
#define DTSIM_SCENARIO_KEYS_IMPL_H

#include <stddef.h>

#include "scenario.h"

#include <ini.h>

/* The longest line a scenario file may have: inih reads a line and its newline into
 * INI_MAX_LINE bytes (file.c refuses longer ones; output.c writes none longer). */
#define SCENARIO_LINE_MAX (INI_MAX_LINE - 2)

/* ---- units (units.c) ---- */

/* value = number * mul / div: dividing by an exact power of ten (5us = 5 / 1e6) gives the
 * correctly rounded double, which multiplying by 1e-6 would not. */
typedef struct unit {
    const char *name;
    double mul, div;
    int alias; /* accepted, never written */
    int bytes; /* written only when shorter than bits: links are quoted in bits */
} unit_t;

extern const unit_t scn_bandwidth_units[], scn_time_units[], scn_flops_units[], scn_size_units[],
    scn_power_units[]; /* {NULL}-terminated */

/** "a, b, c": the names of units. */
void scn_unit_list(const unit_t *units, char *buf, size_t n);
/** The length of the decimal number at the start of s, 0 if none (no hex, inf, nan, '+'). */
size_t scn_scan_number(const char *s);
/** The number at the start of text: its length in *len, its value in *out; -1 if none. */
int scn_number_prefix(const char *text, size_t *len, double *out);
/** The shortest "NUMBERunit" that parses back to exactly v. */
void scn_format_unit(char *buf, size_t n, double v, const unit_t *units);
/** The shortest "%g" spelling that reads back to v. */
void scn_format_double(char *buf, size_t n, double v);
/** The shortest "%g" spelling that reads back to v as a float. */
void scn_format_float(char *buf, size_t n, float v);

/* ---- device profiles (devices.c) ---- */

/** The catalogue entry called name, or NULL. */
const sim_device_profile_t *scn_builtin_profile(const char *name);
/** A catalogue entry or a profile file (absolute path); NULL for custom or a bad file. */
const sim_device_profile_t *scn_profile_find(const char *name);
/** model.precision's names, in sim_precision_t's order (keys.c). */
extern const char *const scn_precision_names[];
/** "cpu, v100, ...": the catalogue's names. */
void scn_device_names(char *buf, size_t n);

/* ---- the key table (keys.c) ---- */

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
    dt_status (*parse)(scenario_t *sc, const char *value, const parse_ctx_t *ctx, dt_err_t *err);
    void (*format)(const scenario_t *sc, char *buf, size_t n);
    const char *accepted; /* for the docs; NULL: from the type and range */
    const char *defdoc;   /* for the docs when the default is not def */
    const char *doc;
} key_desc_t;

extern const key_desc_t *scn_key_table; /* (scn_key_count): sections in file order */
extern int scn_key_count;

/** Makes the key table the built-in keys with the own keys of list's strategies inserted
 * before strategy.accumulate (scenario_strategies_use). */
void scn_keys_use_strategies(const sim_strategy_t *const *list);

/** The SIM_TAKES_* bit of a [strategy] key the engine reads for the strategies that take
 * its technique (strategy.compression: SIM_TAKES_COMPRESSION); 0 for the others. */
unsigned scn_keys_technique(const char *key);
/** "a, b and c" of the registry's strategies, for strategy.kind's messages and docs. */
void scn_kind_names(char *buf, size_t n);
/** Resolves a path written in a scenario against ctx->base_dir and makes it absolute;
 * want_dir: 1 a directory, 0 a readable file. */
dt_status scn_resolve_path(const char *v, const parse_ctx_t *ctx, int want_dir, char *out,
                           size_t cap, dt_err_t *err);
/** 1 if s ends with suffix. */
int scn_ends_with(const char *s, const char *suffix);

/* ---- lookups (keys_lookup.c) ---- */

#define SECTION_LIST "run, model, data, cluster, strategy, faults, jobs, sweep"

/** The index of section.key in scn_key_table, -1 if there is none. */
int scn_key_find(const char *section, const char *key);
/** The index of section.key, which must exist. */
int scn_key_index(const char *section, const char *key);
/** The index of the key called "section.key", which must exist. */
int scn_key_named(const char *section_key);
/** 1 for a section scenario files may have ([sweep] included). */
int scn_section_known(const char *name);
/** " (did you mean X?)", " (X is a [cluster] key)" or "". */
void scn_key_hint(const char *section, const char *key, char *buf, size_t n);
/* "; did you mean X?" for an unknown value v of names (NULL-terminated): the name equal to v
 * but for '-', '_' and case, else the nearest by edit distance (below 3), else "". */
void scn_value_hint(const char *v, const char *const *names, char *buf, size_t n);
/** "; did you mean [X]?" or "". */
void scn_section_hint(const char *section, char *buf, size_t n);
/** The other key of the device / device_flops pair, -1 for any other key. */
int scn_device_partner(int k);

/* ---- values (keys_values.c) ---- */

/** The field of key d in sc. */
const void *scn_field_cptr(const scenario_t *sc, const key_desc_t *d);
/** Copies v into a string field of capacity cap, zero-filled past its text (structs built
 * by different assignments then compare equal byte for byte). */
dt_status scn_set_string(char *dst, size_t cap, const char *v, dt_err_t *err);
/** "an integer in [a, b]", "a number in (a, b]", "> a": key d's range. */
void scn_range_text(const key_desc_t *d, int integer, char *buf, size_t n);
/** "a, b, c": a NULL-terminated list of names. */
void scn_names_text(const char *const *names, char *buf, size_t n);
/** Parses v into key d's field; the message in err has no location (the caller adds it). */
dt_status scn_key_apply(scenario_t *sc, const key_desc_t *d, const char *v, const parse_ctx_t *ctx,
                        dt_err_t *err);
/** Key d's value as scenario files write it. */
void scn_key_format(const scenario_t *sc, const key_desc_t *d, char *buf, size_t n);

/* ---- [sweep] (sweep.c) ---- */

/** The position of key k in sc's [sweep], -1 if it is not swept. */
int scn_sweep_find(const scenario_t *sc, int k);
/** Value v of swept key sk, as scn_key_format writes it. */
const char *scn_sweep_value(const scenario_t *sc, const scenario_sweep_key_t *sk, int v);
/** One [sweep] line "section.key = v1, v2, ..." (read at line). */
dt_status scn_sweep_add(scenario_t *sc, const char *name, const char *list, int line,
                        const parse_ctx_t *ctx, dt_err_t *err);
/** One linked [sweep] line "a.x, b.y = (1, p), (2, q)". */
dt_status scn_sweep_add_linked(scenario_t *sc, const char *names, const char *list, int line,
                               const parse_ctx_t *ctx, dt_err_t *err);
/** After the file: no swept key also given in its section (nor the device pair's other). */
dt_status scn_sweep_finish(scenario_t *sc, dt_err_t *err);

/* ---- errors with a location (check.c) ---- */

/** DT_ERR_INPUT with "PATH:LINE: section.key: msg" for key k read at line (see check.c). */
dt_status scn_key_error(dt_err_t *err, const scenario_t *sc, int line, int k, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/** "section.key at line N" / "from --set" / "by default" / "= V from [sweep] at line N". */
void scn_key_where(const scenario_t *sc, int k, char *buf, size_t n);
/** Of keys a and b in a failed relation, the one to name: a swept one in a run of a
 * sweep, else the one the user gave (a first). */
int scn_blame(const scenario_t *sc, int a, int b);

/* ---- the [model], [data] and [cluster] keys of their own syntax (keys_custom.c) ---- */

/* an X-macro list, a few names a line (clang-format would stair-step it) */
// clang-format off
#define CUSTOM_KEYS(X)                                                      \
    X(arch) X(hidden) X(conv) X(schedule) X(source) X(text)                 \
    X(partition) X(compression) X(platform) X(torus) X(dragonfly) X(device) \
    X(timeline) X(timeline_steps)
// clang-format on
#define DECLARE_CUSTOM_KEY(field)                                                                  \
    dt_status scn_parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,             \
                                dt_err_t *err);                                                    \
    void scn_format_##field(const scenario_t *sc, char *buf, size_t n);
CUSTOM_KEYS(DECLARE_CUSTOM_KEY)
/** run.timeline = auto made sampled (a timing-only model) or whole: once sc is final. */
void scn_timeline_resolve(scenario_t *sc);

/* ---- the [faults] keys of their own syntax (keys_faults.c) ---- */

/* an X-macro list, a few names a line (clang-format would stair-step it) */
// clang-format off
#define FAULT_KEYS(X)                                                              \
    X(crash) X(link_down) X(link_degrade) X(straggler) X(slowdown) X(availability) \
    X(client_speed) X(device_trace) X(client_up) X(client_down) X(client_latency)
// clang-format on
#define DECLARE_FAULT_KEY(field)                                                                   \
    dt_status scn_parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,             \
                                dt_err_t *err);                                                    \
    void scn_format_##field(const scenario_t *sc, char *buf, size_t n);
FAULT_KEYS(DECLARE_FAULT_KEY)

#endif
