/* The [faults] keys with a syntax of their own (their rows are in keys.c's table): event
 * lists and distributions checked by their fault_spec.h parser and stored as written
 * (trimmed); the client devices' traces loaded now (a bad row: its file, line and column)
 * and kept as absolute paths; the client links' distributions. */
#include <ctype.h>
#include <string.h>

#include "fault_spec.h"
#include "keys_impl.h"

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
        return dt_err_input(err, "longer than %d characters (one scenario line)", FAULT_TEXT_MAX);
    memcpy(buf, v, len);
    buf[len] = '\0';
    if (!buf[0])
        strcpy(buf, "none");
    return scn_set_string(dst, cap, buf, err);
}

/* [faults] texts: checked by their fault_spec parser, stored as written (trimmed). */
#define FAULT_FORMAT(field)                                                                        \
    void scn_format_##field(const scenario_t *sc, char *buf, size_t n)                             \
    {                                                                                              \
        snprintf(buf, n, "%s", sc->field);                                                         \
    }
#define FAULT_LIST(field, kind)                                                                    \
    dt_status scn_parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,             \
                                dt_err_t *err)                                                     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        sim_fault_spec_t specs[SIM_FAULT_MAX];                                                     \
        size_t n;                                                                                  \
        if (sim_fault_spec_parse(kind, v, specs, SIM_FAULT_MAX, &n, err))                          \
            return DT_ERR_INPUT;                                                                   \
        return fault_text(sc->field, sizeof sc->field, v, err);                                    \
    }                                                                                              \
    FAULT_FORMAT(field)
FAULT_LIST(crash, SIM_FAULT_CRASH)
FAULT_LIST(link_down, SIM_FAULT_LINK_DOWN)
FAULT_LIST(link_degrade, SIM_FAULT_LINK_DEGRADE)
FAULT_LIST(straggler, SIM_FAULT_STRAGGLER)
#define FAULT_DIST(field, type, parser)                                                            \
    dt_status scn_parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,             \
                                dt_err_t *err)                                                     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        type t;                                                                                    \
        dt_err_t e;                                                                                \
        if (parser(v, &t, &e))                                                                     \
            return dt_err_input(err, "%s", e.msg);                                                 \
        return fault_text(sc->field, sizeof sc->field, v, err);                                    \
    }                                                                                              \
    FAULT_FORMAT(field)
FAULT_DIST(slowdown, sim_slowdown_t, sim_slowdown_parse)
FAULT_DIST(client_speed, sim_client_classes_t, sim_client_classes_parse)

/* trace:PATH loads the availability trace now (a bad row: its file, line and column) and
 * keeps the path absolute, as device profile files are. */
dt_status scn_parse_availability(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                 dt_err_t *err)
{
    sim_availability_t av;
    dt_err_t e;
    if (sim_availability_parse(v, &av, &e))
        return dt_err_input(err, "%s", e.msg);
    if (!av.trace)
        return fault_text(sc->availability, sizeof sc->availability, v, err);
    char path[SCENARIO_STR], text[SCENARIO_STR + 8];
    if (scn_resolve_path(av.trace, ctx, 0, path, sizeof path, err))
        return DT_ERR_INPUT;
    sim_avail_trace_t t;
    if (sim_avail_trace_load(path, &t, err))
        return DT_ERR_INPUT;
    sim_avail_trace_free(&t);
    snprintf(text, sizeof text, "trace:%s", path);
    return fault_text(sc->availability, sizeof sc->availability, text, err);
}
FAULT_FORMAT(availability)

dt_status scn_parse_device_trace(scenario_t *sc, const char *v, const parse_ctx_t *ctx,
                                 dt_err_t *err)
{
    sc->device_trace_has = 0;
    if (!strcmp(v, "none"))
        return scn_set_string(sc->device_trace, sizeof sc->device_trace, v, err);
    char path[SCENARIO_STR];
    if (scn_resolve_path(v, ctx, 0, path, sizeof path, err))
        return DT_ERR_INPUT;
    sim_device_trace_t t;
    if (sim_device_trace_load(path, &t, err))
        return DT_ERR_INPUT;
    sc->device_trace_has = t.has;
    sim_device_trace_free(&t);
    return scn_set_string(sc->device_trace, sizeof sc->device_trace, path, err);
}
FAULT_FORMAT(device_trace)

/* platform, or a distribution of the unit */
#define CLIENT_LINK(field, unit)                                                                   \
    dt_status scn_parse_##field(scenario_t *sc, const char *v, const parse_ctx_t *ctx,             \
                                dt_err_t *err)                                                     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        sim_dist_t d;                                                                              \
        if (strcmp(v, "platform") && sim_dist_parse(v, unit, &d, err))                             \
            return DT_ERR_INPUT;                                                                   \
        return fault_text(sc->field, sizeof sc->field, v, err);                                    \
    }                                                                                              \
    FAULT_FORMAT(field)
CLIENT_LINK(client_up, SIM_DIST_UNIT_BANDWIDTH)
CLIENT_LINK(client_down, SIM_DIST_UNIT_BANDWIDTH)
CLIENT_LINK(client_latency, SIM_DIST_UNIT_TIME)
