/* Typed values: a key's text parsed into its field by type, range and enum names, and
 * written back. Messages carry no location: the callers add it (check.c). */
#define _XOPEN_SOURCE 700 /* strcasecmp */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys_impl.h"

static void *field_ptr(scenario_t *sc, const key_desc_t *d)
{
    return (char *)sc + d->off;
}
const void *scn_field_cptr(const scenario_t *sc, const key_desc_t *d)
{
    return (const char *)sc + d->off;
}

/* A string field is zero-filled past its text, so that structs built by different
 * sequences of assignments compare equal byte for byte. */
dt_status scn_set_string(char *dst, size_t cap, const char *v, dt_err_t *err)
{
    size_t len = strlen(v);
    if (len >= cap)
        return dt_err_input(err, "longer than %zu characters", cap - 1);
    if (*v == ';') /* written back as "key = ;...", it would read as a comment */
        return dt_err_input(err,
                            "\"%s\" starts with ';', which starts a comment in a scenario "
                            "file",
                            v);
    for (const char *p = v; *p; p++) {
        if (iscntrl((unsigned char)*p))
            return dt_err_input(err, "contains a control character");
        if (p > v && *p == ';' && isspace((unsigned char)p[-1]))
            return dt_err_input(err,
                                "\"%s\" contains \" ;\", which starts a comment in a "
                                "scenario file",
                                v);
    }
    memset(dst, 0, cap);
    memcpy(dst, v, len);
    return DT_OK;
}

void scn_range_text(const key_desc_t *d, int integer, char *buf, size_t n)
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

void scn_names_text(const char *const *names, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", names[i]);
}

/* Parses v into key d's field; the message in err has no location (the caller adds it). */
dt_status scn_key_apply(scenario_t *sc, const key_desc_t *d, const char *v, const parse_ctx_t *ctx,
                        dt_err_t *err)
{
    void *p = field_ptr(sc, d);
    char range[96];
    switch (d->type) {
    case KEY_INT: {
        scn_range_text(d, 1, range, sizeof range);
        size_t len = scn_scan_number(v);
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
        scn_range_text(d, 0, range, sizeof range);
        size_t len;
        double x;
        if (scn_number_prefix(v, &len, &x) || v[len] || !isfinite(x))
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
            return dt_err_input(err,
                                "\"%s\" is not a yes/no value (expected yes, no, true, "
                                "false, on, off, 1 or 0)",
                                v);
        *(int *)p = b;
        return DT_OK;
    }
    case KEY_STRING:
        if (!*v)
            return dt_err_input(err, "empty value (expected %s)", d->accepted);
        /* the resolved configuration writes it as "key = value": a line the reader takes */
        if (strlen(d->key) + 3 + strlen(v) > SCENARIO_LINE_MAX)
            return dt_err_input(err,
                                "a value of %zu characters (\"%s = VALUE\" must fit in "
                                "a line of %d)",
                                strlen(v), d->key, SCENARIO_LINE_MAX);
        return scn_set_string(p, d->size, v, err);
    case KEY_ENUM: {
        for (int i = 0; d->names[i]; i++)
            if ((d->flags & NOCASE) ? !strcasecmp(v, d->names[i]) : !strcmp(v, d->names[i])) {
                *(int *)p = i;
                return DT_OK;
            }
        char list[256], hint[96];
        scn_names_text(d->names, list, sizeof list);
        scn_value_hint(v, d->names, hint, sizeof hint);
        return dt_err_input(err, "unknown value \"%s\" (expected one of %s%s)%s", v, list,
                            (d->flags & NOCASE) ? ", in any case" : "", hint);
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
        scn_range_text(d, 0, range, sizeof range);
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

void scn_key_format(const scenario_t *sc, const key_desc_t *d, char *buf, size_t n)
{
    const void *p = scn_field_cptr(sc, d);
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
            scn_format_float(buf, n, *(const float *)p);
        else
            scn_format_double(buf, n, *(const double *)p);
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
        scn_format_unit(buf, n, *(const double *)p, scn_bandwidth_units);
        return;
    case KEY_TIME:
        scn_format_unit(buf, n, *(const double *)p, scn_time_units);
        return;
    case KEY_FLOPS:
        scn_format_unit(buf, n, *(const double *)p, scn_flops_units);
        return;
    case KEY_CUSTOM:
        d->format(sc, buf, n);
        return;
    }
}
