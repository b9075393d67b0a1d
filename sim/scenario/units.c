/* Values with units (10Gbps or 10Gb/s, 5us, 19.5Tf, 80GB, 700W): parsed into base units (bytes/s,
 * seconds, FLOP/s, bytes, watts), and written back as the shortest spelling that reads back to the
 * same double, so that a written scenario loads to the same struct. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "keys_impl.h"

const unit_t scn_bandwidth_units[] = {
    {"bps", 1, 8, 0, 0},     {"kbps", 1e3, 8, 0, 0},  {"Mbps", 1e6, 8, 0, 0},
    {"Gbps", 1e9, 8, 0, 0},  {"Tbps", 1e12, 8, 0, 0}, {"Bps", 1, 1, 0, 1},
    {"kBps", 1e3, 1, 0, 1},  {"MBps", 1e6, 1, 0, 1},  {"GBps", 1e9, 1, 0, 1},
    {"TBps", 1e12, 1, 0, 1}, {NULL, 0, 0, 0, 0},
};
const unit_t scn_time_units[] = {
    {"ns", 1, 1e9, 0, 0}, {"us", 1, 1e6, 0, 0}, {"ms", 1, 1e3, 0, 0}, {"s", 1, 1, 0, 0},
    {"min", 60, 1, 0, 0}, {"h", 3600, 1, 0, 0}, {NULL, 0, 0, 0, 0},
};
const unit_t scn_flops_units[] = {
    {"f", 1, 1, 0, 0},        {"kf", 1e3, 1, 0, 0},      {"Mf", 1e6, 1, 0, 0},
    {"Gf", 1e9, 1, 0, 0},     {"Tf", 1e12, 1, 0, 0},     {"Pf", 1e15, 1, 0, 0},
    {"flops", 1, 1, 1, 0},    {"kflops", 1e3, 1, 1, 0},  {"Mflops", 1e6, 1, 1, 0},
    {"Gflops", 1e9, 1, 1, 0}, {"Tflops", 1e12, 1, 1, 0}, {"Pflops", 1e15, 1, 1, 0},
    {NULL, 0, 0, 0, 0},
};
/* memory sizes: SI as datasheets print them (80 GB), and binary (80 GiB) */
const unit_t scn_size_units[] = {
    {"B", 1, 1, 0, 0},           {"kB", 1e3, 1, 0, 0},           {"MB", 1e6, 1, 0, 0},
    {"GB", 1e9, 1, 0, 0},        {"TB", 1e12, 1, 0, 0},          {"KiB", 1024.0, 1, 0, 0},
    {"MiB", 1048576.0, 1, 0, 0}, {"GiB", 1073741824.0, 1, 0, 0}, {"TiB", 1099511627776.0, 1, 0, 0},
    {NULL, 0, 0, 0, 0},
};
const unit_t scn_power_units[] = {
    {"W", 1, 1, 0, 0},
    {"kW", 1e3, 1, 0, 0},
    {NULL, 0, 0, 0, 0},
};

static double unit_value(double number, const unit_t *u)
{
    return number * u->mul / u->div;
}

void scn_unit_list(const unit_t *units, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const unit_t *u = units; u->name && len < n; u++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", u->name);
}

/* Scans a decimal number at the start of s (optional '-', digits, optional fraction,
 * optional exponent) and returns its length, 0 if there is none. Narrower than strtod on
 * purpose: no hex, inf, nan, '+' or leading blanks in a scenario. */
size_t scn_scan_number(const char *s)
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
int scn_number_prefix(const char *text, size_t *len, double *out)
{
    char buf[64];
    *len = scn_scan_number(text);
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
    scn_unit_list(units, list, sizeof list);
    size_t len;
    double number;
    if (scn_number_prefix(text, &len, &number))
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
    /* a bandwidth spelled with a slash, as documents write it: Gb/s is Gbps, GB/s is GBps */
    char slashed[16];
    size_t ulen = strlen(u);
    if (units == scn_bandwidth_units && ulen >= 3 && ulen < sizeof slashed - 1 &&
        !strcmp(u + ulen - 2, "/s")) {
        snprintf(slashed, sizeof slashed, "%.*sps", (int)(ulen - 2), u);
        u = slashed;
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
    return dt_err_input(err, "unknown unit \"%s\" in %s \"%s\" (expected one of %s)",
                        text + len + strspn(text + len, " \t"), what, text, list);
}

dt_status scenario_parse_bandwidth(const char *text, double *bytes_per_s, dt_err_t *err)
{
    return parse_with_unit(text, scn_bandwidth_units, "bandwidth", 0, bytes_per_s, err);
}

dt_status scenario_parse_time(const char *text, double *seconds, dt_err_t *err)
{
    return parse_with_unit(text, scn_time_units, "time", 1, seconds, err);
}

dt_status scenario_parse_flops(const char *text, double *flops, dt_err_t *err)
{
    return parse_with_unit(text, scn_flops_units, "speed", 0, flops, err);
}

dt_status scenario_parse_size(const char *text, double *bytes, dt_err_t *err)
{
    return parse_with_unit(text, scn_size_units, "size", 1, bytes, err);
}

dt_status scenario_parse_power(const char *text, double *watts, dt_err_t *err)
{
    return parse_with_unit(text, scn_power_units, "power", 1, watts, err);
}

void scenario_format_bandwidth(double bytes_per_s, char *buf, size_t n)
{
    scn_format_unit(buf, n, bytes_per_s, scn_bandwidth_units);
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

void scn_format_double(char *buf, size_t n, double v)
{
    int found = shortest_number(buf, n, v, v, back_double, NULL);
    DT_ASSERT(found); /* "%.17g" always reads back */
}

void scn_format_float(char *buf, size_t n, float v)
{
    int found = shortest_number(buf, n, (double)v, (double)v, back_float, NULL);
    DT_ASSERT(found);
}

/* The shortest "NUMBERunit" that parses back to exactly v (exactness first: the written
 * scenario must load to the same struct), with one character of handicap for a number
 * outside [1, 1000) and for bytes, so that ties go to 13.65Tf over 13650Gf and to 40Gbps
 * over 5GBps. The unit with mul = div = 1 always succeeds. */
void scn_format_unit(char *buf, size_t n, double v, const unit_t *units)
{
    char best[64] = "", num[40];
    size_t best_score = 0;
    for (const unit_t *u = units; u->name; u++) {
        double x = v * u->div / u->mul;
        if (u->alias || !shortest_number(num, sizeof num, x, v, back_unit, u))
            continue;
        size_t score =
            strlen(num) + strlen(u->name) + (size_t)(x < 1 || x >= 1000) + (size_t)u->bytes;
        if (!best[0] || score < best_score) {
            snprintf(best, sizeof best, "%s%s", num, u->name);
            best_score = score;
        }
    }
    DT_ASSERT(best[0]);
    snprintf(buf, n, "%s", best);
}
