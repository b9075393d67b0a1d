/* Parsing of the [faults] event lists and distributions (see fault_spec.h). */
#include "fault_spec.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

#define MAX_WORDS 8
#define ITEM_LEN 256

static const char *const scn_kind_names[] = {"crash", "link_down", "link_degrade", "straggler"};
static const char *const kind_syntax[] = {
    "TARGET at TIME [for DURATION | until TIME]",
    "LINK at TIME [for DURATION | until TIME]",
    "LINK at TIME to BANDWIDTH|LATENCY [for DURATION | until TIME]",
    "TARGET xFACTOR [at TIME] [for DURATION | until TIME]",
};

static int is_none(const char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    return !*text || !strcmp(text, "none");
}

/* Splits item (modified in place) into blank-separated words. */
static int split_words(char *item, char **words)
{
    int n = 0;
    for (char *p = strtok(item, " \t"); p; p = strtok(NULL, " \t")) {
        if (n == MAX_WORDS)
            return MAX_WORDS + 1;
        words[n++] = p;
    }
    return n;
}

static dt_status parse_factor(const char *w, double *out, dt_err_t *err)
{
    if (w[0] != 'x' || !w[1])
        return dt_err_input(err, "\"%s\" is not a slowdown factor (expected xFACTOR, e.g. x4)", w);
    char *end;
    double f = strtod(w + 1, &end);
    if (*end || !isfinite(f) || f <= 0 || f > 1e6 || !isdigit((unsigned char)w[1]))
        return dt_err_input(err,
                            "\"%s\" is not a slowdown factor (expected xFACTOR with FACTOR "
                            "in (0, 1e6], e.g. x4 or x0.5)",
                            w);
    *out = f;
    return DT_OK;
}

/* link_degrade's "to VALUE": a bandwidth (100Mbps), or a latency (50ms) the links take
 * instead of the platform's. */
static dt_status degrade_value(const char *w, sim_fault_spec_t *s, dt_err_t *err)
{
    dt_err_t e;
    if (scenario_parse_bandwidth(w, &s->value, &e) == DT_OK) {
        if (s->value <= 0)
            return dt_err_input(err, "bandwidth %s must be > 0 (use link_down for a dead link)", w);
        if (!scenario_simulable(SIM_Q_BANDWIDTH, s->value))
            return dt_err_input(err,
                                "bandwidth %s is beyond what SimGrid's solver computes "
                                "with (expected %s)",
                                w, scenario_simulable_range(SIM_Q_BANDWIDTH));
        return DT_OK;
    }
    dt_err_t te;
    if (scenario_parse_time(w, &s->value, &te) != DT_OK)
        return dt_err_input(err,
                            "\"%s\" is neither a bandwidth such as 100Mbps nor a latency "
                            "such as 50ms",
                            w);
    s->latency = 1;
    if (!scenario_simulable(SIM_Q_LATENCY, s->value))
        return dt_err_input(err,
                            "latency %s is beyond what SimGrid's solver computes with "
                            "(expected %s)",
                            w, scenario_simulable_range(SIM_Q_LATENCY));
    return DT_OK;
}

static dt_status parse_item(sim_fault_kind_t kind, char *item, sim_fault_spec_t *s, dt_err_t *err)
{
    char *w[MAX_WORDS + 1];
    int n = split_words(item, w);
    dt_err_t e;
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->at = 0.0;
    s->until = INFINITY;
    s->value = 1.0;
    if (n == 0)
        return dt_err_input(err, "empty item (expected %s)", kind_syntax[kind]);
    if (n > MAX_WORDS)
        return dt_err_input(err, "too many words (expected %s)", kind_syntax[kind]);
    if (strlen(w[0]) >= SIM_FAULT_TARGET)
        return dt_err_input(err, "name \"%s\" is longer than %d characters", w[0],
                            SIM_FAULT_TARGET - 1);
    strcpy(s->target, w[0]);
    int i = 1, have_at = 0;
    if (kind == SIM_FAULT_STRAGGLER) {
        if (i >= n)
            return dt_err_input(err, "\"%s\" lacks its factor (expected %s)", w[0],
                                kind_syntax[kind]);
        if (parse_factor(w[i], &s->value, err))
            return DT_ERR_INPUT;
        i++;
    }
    if (i < n && !strcmp(w[i], "at")) {
        if (i + 1 >= n)
            return dt_err_input(err, "\"at\" needs a time (expected %s)", kind_syntax[kind]);
        if (scenario_parse_time(w[i + 1], &s->at, &e))
            return dt_err_input(err, "%s", e.msg);
        have_at = 1;
        i += 2;
    }
    if (!have_at && kind != SIM_FAULT_STRAGGLER)
        return dt_err_input(err, "\"%s\" lacks \"at TIME\" (expected %s)", w[0], kind_syntax[kind]);
    if (kind == SIM_FAULT_LINK_DEGRADE) {
        if (i + 1 >= n || strcmp(w[i], "to"))
            return dt_err_input(err,
                                "\"%s\" lacks \"to BANDWIDTH\" or \"to LATENCY\" "
                                "(expected %s)",
                                w[0], kind_syntax[kind]);
        if (degrade_value(w[i + 1], s, err))
            return DT_ERR_INPUT;
        i += 2;
    }
    if (i < n && (!strcmp(w[i], "for") || !strcmp(w[i], "until"))) {
        if (i + 1 >= n)
            return dt_err_input(err, "\"%s\" needs a time (expected %s)", w[i], kind_syntax[kind]);
        double t;
        if (scenario_parse_time(w[i + 1], &t, &e))
            return dt_err_input(err, "%s", e.msg);
        if (!strcmp(w[i], "for")) {
            if (t <= 0)
                return dt_err_input(err, "\"for %s\": the interval must last more than 0 s",
                                    w[i + 1]);
            s->until = s->at + t;
        } else {
            if (t <= s->at)
                return dt_err_input(err, "\"until %s\": the interval ends %s it starts (at %gs)",
                                    w[i + 1], t < s->at ? "before" : "when", s->at);
            s->until = t;
        }
        i += 2;
    }
    if (i < n)
        return dt_err_input(err, "unexpected \"%s\" (expected %s)", w[i], kind_syntax[kind]);
    return DT_OK;
}

dt_status sim_fault_spec_parse(sim_fault_kind_t kind, const char *text, sim_fault_spec_t *out,
                               size_t cap, size_t *count, dt_err_t *err)
{
    *count = 0;
    if (is_none(text))
        return DT_OK;
    const char *p = text;
    for (int item = 1;; item++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[ITEM_LEN];
        if (len >= sizeof buf)
            return dt_err_input(err, "item %d is longer than %zu characters", item, sizeof buf - 1);
        memcpy(buf, p, len);
        buf[len] = '\0';
        char copy[ITEM_LEN];
        memcpy(copy, buf, len + 1);
        if (*count == cap)
            return dt_err_input(err, "more than %zu items", cap);
        dt_err_t e;
        if (parse_item(kind, buf, &out[*count], &e)) {
            char *t = copy;
            while (isspace((unsigned char)*t))
                t++;
            size_t l = strlen(t);
            while (l && isspace((unsigned char)t[l - 1]))
                t[--l] = '\0';
            return dt_err_input(err, "%s item %d \"%s\": %s", scn_kind_names[kind], item, t, e.msg);
        }
        (*count)++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return DT_OK;
}

/* "NAME:A[:B]" with numbers A, B; returns how many numbers were read (-1: not numbers). */
static int name_numbers(const char *text, const char *name, double *a, double *b)
{
    size_t len = strlen(name);
    if (strncmp(text, name, len) || text[len] != ':')
        return 0;
    char *end;
    *a = strtod(text + len + 1, &end);
    if (end == text + len + 1 || !isfinite(*a))
        return -1;
    if (!*end)
        return 1;
    if (*end != ':')
        return -1;
    const char *q = end + 1;
    *b = strtod(q, &end);
    if (end == q || *end || !isfinite(*b))
        return -1;
    return 2;
}

dt_status sim_slowdown_parse(const char *text, sim_slowdown_t *out, dt_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "none"))
        return DT_OK;
    double a = 0, b = 0;
    if (name_numbers(text, "uniform", &a, &b) == 2) {
        if (a <= 0 || b < a)
            return dt_err_input(err, "uniform:%g:%g needs 0 < LO <= HI", a, b);
        *out = (sim_slowdown_t){SIM_SLOWDOWN_UNIFORM, a, b};
        return DT_OK;
    }
    if (name_numbers(text, "lognormal", &a, &b) == 1) {
        if (a <= 0 || a > 5)
            return dt_err_input(err, "lognormal:%g needs 0 < SIGMA <= 5", a);
        *out = (sim_slowdown_t){SIM_SLOWDOWN_LOGNORMAL, a, 0};
        return DT_OK;
    }
    return dt_err_input(err,
                        "\"%s\" is not a slowdown distribution (expected none, "
                        "uniform:LO:HI or lognormal:SIGMA)",
                        text);
}

dt_status sim_availability_parse(const char *text, sim_availability_t *out, dt_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "always"))
        return DT_OK;
    if (!strncmp(text, "trace:", 6)) {
        if (!text[6])
            return dt_err_input(err, "trace: needs the path of an availability trace (e.g. "
                                     "trace:traces/availability.csv)");
        out->trace = text + 6;
        return DT_OK;
    }
    const char *colon = strrchr(text, ':');
    char period[64];
    if (!colon || (size_t)(colon - text) >= sizeof period)
        return dt_err_input(err,
                            "\"%s\" is not an availability (expected always, "
                            "PERIOD:FRACTION, e.g. 24h:0.3, or trace:PATH)",
                            text);
    memcpy(period, text, (size_t)(colon - text));
    period[colon - text] = '\0';
    dt_err_t e;
    if (scenario_parse_time(period, &out->period, &e))
        return dt_err_input(err, "availability period: %s", e.msg);
    char *end;
    out->fraction = strtod(colon + 1, &end);
    if (end == colon + 1 || *end || !(out->fraction > 0 && out->fraction <= 1))
        return dt_err_input(err, "availability fraction \"%s\" is not in (0, 1]", colon + 1);
    if (out->period <= 0)
        return dt_err_input(err, "availability period must be > 0");
    return DT_OK;
}

dt_status sim_client_classes_parse(const char *text, sim_client_classes_t *out, dt_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "same"))
        return DT_OK;
    static const char *const dists[] = {"const:", "uniform:", "lognormal:", "choice:"};
    for (size_t i = 0; i < sizeof dists / sizeof *dists; i++)
        if (!strncmp(text, dists[i], strlen(dists[i]))) {
            out->is_dist = 1;
            return sim_dist_parse(text, SIM_DIST_UNIT_FLOPS, &out->dist, err);
        }
    const char *p = text;
    double total = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[96];
        if (len >= sizeof item)
            return dt_err_input(err, "class \"%.*s\" is too long", (int)len, p);
        memcpy(item, p, len);
        item[len] = '\0';
        char *t = item;
        while (isspace((unsigned char)*t))
            t++;
        for (size_t l = strlen(t); l && isspace((unsigned char)t[l - 1]); l--)
            t[l - 1] = '\0';
        char *colon = strrchr(t, ':');
        if (!colon)
            return dt_err_input(err, "class \"%s\" is not SPEED:SHARE (e.g. 20Gf:0.5)", t);
        *colon = '\0';
        if (out->n == SIM_CLIENT_CLASSES)
            return dt_err_input(err, "more than %d classes", SIM_CLIENT_CLASSES);
        dt_err_t e;
        if (scenario_parse_flops(t, &out->speed[out->n], &e))
            return dt_err_input(err, "class %d: %s", out->n + 1, e.msg);
        if (out->speed[out->n] <= 0)
            return dt_err_input(err, "class %d: speed must be > 0", out->n + 1);
        char *end;
        double share = strtod(colon + 1, &end);
        if (end == colon + 1 || *end || !(share > 0 && share <= 1))
            return dt_err_input(err, "class %d: share \"%s\" is not in (0, 1]", out->n + 1,
                                colon + 1);
        out->share[out->n++] = share;
        total += share;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (fabs(total - 1.0) > 1e-6)
        return dt_err_input(err, "shares sum to %g, not 1", total);
    return DT_OK;
}
