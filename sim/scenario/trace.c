/* Device and availability traces and per-client distributions (see trace.h; formats in
 * scenarios/traces/README.md). Both trace kinds share one CSV reader and one table of
 * columns per layout, so that every bad value is reported the same way:
 * "PATH:LINE: column KEY: what is wrong (expected ...)". */
#define _XOPEN_SOURCE 700 /* getline */
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "keys_impl.h"

/* ---- the CSV reader ---- */

#define CSV_FIELDS 16

typedef struct csv_reader {
    FILE *f;
    const char *path;
    int line;
    char *buf;
    size_t cap;
    char *field[CSV_FIELDS];
    int n; /* fields in the row; CSV_FIELDS + 1: more than CSV_FIELDS */
} csv_reader_t;

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = '\0';
    return s;
}

/* Reads the next row that is neither blank nor a '#' comment: 1 a row, 0 the end, -1 a
 * read error (errno). Fields are split at commas and trimmed; quoting is not supported. */
static int csv_next(csv_reader_t *c)
{
    while (getline(&c->buf, &c->cap, c->f) >= 0) {
        c->line++;
        char *s = c->buf;
        if (c->line == 1 && !strncmp(s, "\xef\xbb\xbf", 3))
            s += 3; /* a UTF-8 byte order mark, as spreadsheets write */
        s[strcspn(s, "\r\n")] = '\0';
        s = trim(s);
        if (!*s || *s == '#')
            continue;
        c->n = 0;
        for (char *p = s;; p++) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            if (c->n == CSV_FIELDS) {
                c->n = CSV_FIELDS + 1;
                break;
            }
            c->field[c->n++] = trim(p);
            if (!comma)
                break;
            p = comma;
        }
        return 1;
    }
    return ferror(c->f) ? -1 : 0;
}

/* ---- columns and layouts ---- */

typedef enum col_kind { COL_CLIENT, COL_FLOPS, COL_BANDWIDTH, COL_TIME, COL_NUMBER } col_kind_t;

typedef struct column {
    const char *name;
    col_kind_t kind;
    int required;
    double min;       /* values >= min, or > min with open */
    int open;         /* 1: value > min */
    const char *what; /* the "(expected ...)" text */
    int simulable;    /* a sim_quantity_t the value (times scale) is checked as; -1: none */
    double scale;     /* to the quantity's unit (FedScale's kbit/s: SIM_FEDSCALE_KBPS B/s) */
    double max;       /* without simulable: values <= max (0: no bound) */
} column_t;

typedef struct layout {
    const char *name;
    const column_t *cols; /* cols[0] is the client id */
    int n;
} layout_t;

/* Column indices below follow these tables' order. */
enum { DEV_CLIENT, DEV_SPEED, DEV_UP, DEV_DOWN, DEV_LATENCY };
static const column_t dtsim_device_cols[] = {
    {"client", COL_CLIENT, 1, 0, 0, "an integer id >= 0", -1, 1, 0},
    {"speed", COL_FLOPS, 0, 0, 1, "a speed with its unit from 1f to 1e24f, e.g. 2.5Gf", SIM_Q_SPEED,
     1, 0},
    {"up", COL_BANDWIDTH, 0, 0, 1,
     "a bandwidth with its unit from 1kbps to 1000TBps, e.g. "
     "10Mbps",
     SIM_Q_BANDWIDTH, 1, 0},
    {"down", COL_BANDWIDTH, 0, 0, 1,
     "a bandwidth with its unit from 1kbps to 1000TBps, e.g. "
     "10Mbps",
     SIM_Q_BANDWIDTH, 1, 0},
    {"latency", COL_TIME, 0, 0, 0, "a time with its unit, 0 or 1ns to 1000s, e.g. 40ms",
     SIM_Q_LATENCY, 1, 0},
};
enum { FSD_CLIENT, FSD_COMPUTATION, FSD_COMMUNICATION };
static const column_t fedscale_device_cols[] = {
    {"client_id", COL_CLIENT, 1, 0, 0, "an integer id >= 0", -1, 1, 0},
    {"computation", COL_NUMBER, 0, 1e-6, 0,
     "milliseconds per sample, a number from 1e-6 to "
     "1e9",
     -1, 1, 1e9},
    /* 1kbps to 1000TBps, in kbit/s of 128 B/s */
    {"communication", COL_NUMBER, 0, 0, 1, "kbit/s, a number from 0.9765625 to 7.8125e12",
     SIM_Q_BANDWIDTH, SIM_FEDSCALE_KBPS, 0},
};
static const layout_t device_layouts[] = {
    {"dtsim", dtsim_device_cols, 5},
    {"FedScale", fedscale_device_cols, 3},
};

enum { AV_CLIENT, AV_START, AV_END, AV_PERIOD };
static const column_t dtsim_avail_cols[] = {
    {"client", COL_CLIENT, 1, 0, 0, "an integer id >= 0", -1, 1, 0},
    {"start", COL_TIME, 1, 0, 0, "a time >= 0 with its unit, e.g. 0s or 7h", -1, 1, 0},
    {"end", COL_TIME, 1, 0, 1, "a time > 0 with its unit, e.g. 3600s or 9h", -1, 1, 0},
    {"period", COL_TIME, 0, 0, 1, "a time > 0 with its unit, e.g. 24h", -1, 1, 0},
};
static const column_t fedscale_avail_cols[] = {
    {"client_id", COL_CLIENT, 1, 0, 0, "an integer id >= 0", -1, 1, 0},
    {"active", COL_NUMBER, 1, 0, 0, "seconds, a number >= 0", -1, 1, 0},
    {"inactive", COL_NUMBER, 1, 0, 0, "seconds, a number >= 0", -1, 1, 0},
    {"finish_time", COL_NUMBER, 0, 0, 1, "seconds, a number > 0", -1, 1, 0},
};
static const layout_t avail_layouts[] = {
    {"dtsim", dtsim_avail_cols, 4},
    {"FedScale", fedscale_avail_cols, 4},
};

/* "a, b, c" of a layout's column names. */
static void col_names(const layout_t *l, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < l->n && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "", l->cols[i].name);
}

/* "client,speed,... or FedScale's client_id,..." for header errors. */
static void layouts_text(const layout_t layouts[2], char *buf, size_t n)
{
    char a[128], b[128];
    col_names(&layouts[0], a, sizeof a);
    col_names(&layouts[1], b, sizeof b);
    snprintf(buf, n, "%s, or FedScale's %s", a, b);
}

/* A table being read: the reader, the layout found from the header, and where each
 * column sits in a row. */
typedef struct table {
    csv_reader_t csv;
    const layout_t *layouts; /* [2]: dtsim's, FedScale's */
    int which;               /* index into layouts */
    const layout_t *l;
    int header_n;             /* fields in the header */
    int col_of[CSV_FIELDS];   /* field -> column */
    int field_of[CSV_FIELDS]; /* column -> field, -1 absent */
    dt_err_t *err;
} table_t;

static dt_status row_error(table_t *t, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "PATH:LINE: column COL: ..." */
static dt_status row_error(table_t *t, const char *col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_err_input(t->err, "%s:%d: column %s: %s", t->csv.path, t->csv.line, col, msg);
}

static dt_status table_open(table_t *t, const char *path, const layout_t layouts[2], dt_err_t *err)
{
    memset(t, 0, sizeof *t);
    t->csv.path = path;
    t->layouts = layouts;
    t->err = err;
    t->csv.f = fopen(path, "r");
    if (!t->csv.f)
        return dt_err_input(err, "%s: cannot open: %s", path, strerror(errno));
    return DT_OK;
}

static void table_close(table_t *t)
{
    if (t->csv.f)
        fclose(t->csv.f);
    free(t->csv.buf);
    t->csv.f = NULL;
    t->csv.buf = NULL;
}

/* Reads the header: the layout is FedScale's if a field is FedScale's client column. */
static dt_status table_header(table_t *t)
{
    char expect[300];
    layouts_text(t->layouts, expect, sizeof expect);
    int r = csv_next(&t->csv);
    if (r < 0)
        return dt_err_input(t->err, "%s: cannot read: %s", t->csv.path, strerror(errno));
    if (r == 0)
        return dt_err_input(t->err, "%s: no header line (expected %s)", t->csv.path, expect);
    if (t->csv.n > CSV_FIELDS)
        return dt_err_input(t->err, "%s:%d: more than %d columns in the header (expected %s)",
                            t->csv.path, t->csv.line, CSV_FIELDS, expect);
    t->which = 0;
    for (int i = 0; i < t->csv.n; i++)
        if (!strcmp(t->csv.field[i], t->layouts[1].cols[0].name))
            t->which = 1;
    t->l = &t->layouts[t->which];
    t->header_n = t->csv.n;
    for (int j = 0; j < CSV_FIELDS; j++)
        t->field_of[j] = -1;
    char names[128];
    col_names(t->l, names, sizeof names);
    for (int i = 0; i < t->csv.n; i++) {
        const char *name = t->csv.field[i];
        int j = 0;
        while (j < t->l->n && strcmp(name, t->l->cols[j].name))
            j++;
        if (!*name)
            return dt_err_input(t->err, "%s:%d: header field %d is empty (expected %s)",
                                t->csv.path, t->csv.line, i + 1, expect);
        if (j == t->l->n)
            return row_error(t, name, "unknown column in %s's layout (expected %s)", t->l->name,
                             t->which ? names : expect);
        if (t->field_of[j] >= 0)
            return row_error(t, name,
                             "appears twice in the header, fields %d and %d "
                             "(expected each column once)",
                             t->field_of[j] + 1, i + 1);
        t->field_of[j] = i;
        t->col_of[i] = j;
    }
    int values = 0;
    for (int j = 0; j < t->l->n; j++) {
        if (t->l->cols[j].required && t->field_of[j] < 0)
            return row_error(t, t->l->cols[j].name, "missing from the header (expected %s)",
                             t->which ? names : expect);
        values += j > 0 && t->field_of[j] >= 0;
    }
    if (!values)
        return dt_err_input(t->err, "%s:%d: the header names no column besides %s (expected %s)",
                            t->csv.path, t->csv.line, t->l->cols[0].name, names);
    return DT_OK;
}

/* A plain decimal number, all of text. */
static int plain_number(const char *text, double *out)
{
    size_t len;
    return !scn_number_prefix(text, &len, out) && !text[len] && isfinite(*out);
}

/* Parses field text of column j into *v (the client id into *client). */
static dt_status parse_field(table_t *t, int j, const char *text, long *client, double *v)
{
    const column_t *c = &t->l->cols[j];
    if (!*text)
        return row_error(t, c->name, "missing value (expected %s)", c->what);
    dt_err_t e;
    dt_status st = DT_OK;
    switch (c->kind) {
    case COL_CLIENT: {
        errno = 0;
        char *end;
        long id = strtol(text, &end, 10);
        if (!isdigit((unsigned char)text[0]) || *end || errno)
            return row_error(t, c->name, "\"%s\" is not a client id (expected %s)", text, c->what);
        *client = id;
        return DT_OK;
    }
    case COL_FLOPS:
        st = scenario_parse_flops(text, v, &e);
        break;
    case COL_BANDWIDTH:
        st = scenario_parse_bandwidth(text, v, &e);
        break;
    case COL_TIME:
        st = scenario_parse_time(text, v, &e);
        break;
    case COL_NUMBER:
        if (!plain_number(text, v))
            return row_error(t, c->name, "\"%s\" is not a number (expected %s)", text, c->what);
        break;
    }
    if (st) /* the unit parser's message says what it expected, or lacks only the range */
        return strstr(e.msg, "(expected")
                   ? row_error(t, c->name, "%s", e.msg)
                   : row_error(t, c->name, "%s (expected %s)", e.msg, c->what);
    if (c->open ? !(*v > c->min) : !(*v >= c->min))
        return row_error(t, c->name, "\"%s\" is out of range (expected %s)", text, c->what);
    if (c->max > 0 && !(*v <= c->max))
        return row_error(t, c->name, "\"%s\" is out of range (expected %s)", text, c->what);
    /* legal, but beyond what the simulator computes with: refused as it is read */
    if (c->simulable >= 0 && !scenario_simulable((sim_quantity_t)c->simulable, *v * c->scale))
        return row_error(t, c->name,
                         "\"%s\" is beyond what SimGrid's solver computes with "
                         "(expected %s)",
                         text, c->what);
    return DT_OK;
}

/* Reads the next data row into *client and v[column]: 1 a row, 0 the end. */
static int table_row(table_t *t, long *client, double *v, dt_status *st)
{
    int r = csv_next(&t->csv);
    if (r <= 0) {
        *st = r < 0 ? dt_err_input(t->err, "%s: cannot read: %s", t->csv.path, strerror(errno))
                    : DT_OK;
        return 0;
    }
    if (t->csv.n > t->header_n) {
        *st = dt_err_input(t->err,
                           "%s:%d: field %d: the row has %s%d fields, the header %d "
                           "(expected one value per header column)",
                           t->csv.path, t->csv.line, t->header_n + 1,
                           t->csv.n > CSV_FIELDS ? "more than " : "",
                           t->csv.n > CSV_FIELDS ? CSV_FIELDS : t->csv.n, t->header_n);
        return 0;
    }
    for (int i = 0; i < t->header_n; i++) {
        int j = t->col_of[i];
        if (i >= t->csv.n) {
            *st = row_error(t, t->l->cols[j].name,
                            "missing value: the row has %d fields, the header %d (expected %s)",
                            t->csv.n, t->header_n, t->l->cols[j].what);
            return 0;
        }
        if ((*st = parse_field(t, j, t->csv.field[i], client, &v[j])))
            return 0;
    }
    return 1;
}

static void *grow(void *p, size_t *cap, size_t size)
{
    *cap = *cap ? 2 * *cap : 64;
    void *q = realloc(p, *cap * size);
    DT_CHECK(q, "out of memory for a trace of %zu rows", *cap);
    return q;
}

/* ---- device traces ---- */

static int cmp_device(const void *a, const void *b)
{
    const sim_device_row_t *x = a, *y = b;
    if (x->client != y->client)
        return x->client < y->client ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

dt_status sim_device_trace_load(const char *path, sim_device_trace_t *out, dt_err_t *err)
{
    memset(out, 0, sizeof *out);
    table_t t;
    dt_status st = table_open(&t, path, device_layouts, err);
    if (st)
        return st;
    sim_device_row_t *rows = NULL;
    size_t n = 0, cap = 0;
    if ((st = table_header(&t)))
        goto fail;
    int fedscale = t.which == 1;
    unsigned has = 0;
    if (fedscale) {
        has |= t.field_of[FSD_COMPUTATION] >= 0 ? SIM_DEVICE_MS_PER_SAMPLE : 0;
        has |= t.field_of[FSD_COMMUNICATION] >= 0 ? SIM_DEVICE_UP | SIM_DEVICE_DOWN : 0;
    } else {
        static const unsigned bit[] = {0, SIM_DEVICE_SPEED, SIM_DEVICE_UP, SIM_DEVICE_DOWN,
                                       SIM_DEVICE_LATENCY};
        for (int j = 1; j < 5; j++)
            has |= t.field_of[j] >= 0 ? bit[j] : 0;
    }
    long client;
    double v[CSV_FIELDS] = {0};
    while (table_row(&t, &client, v, &st)) {
        if (n == cap)
            rows = grow(rows, &cap, sizeof *rows);
        sim_device_row_t *r = &rows[n++];
        memset(r, 0, sizeof *r);
        r->client = client;
        r->line = t.csv.line;
        if (fedscale) {
            r->ms_per_sample = v[FSD_COMPUTATION];
            r->up = r->down = v[FSD_COMMUNICATION] * SIM_FEDSCALE_KBPS;
        } else {
            r->speed = v[DEV_SPEED];
            r->up = v[DEV_UP];
            r->down = v[DEV_DOWN];
            r->latency = v[DEV_LATENCY];
        }
        memset(v, 0, sizeof v);
    }
    if (st)
        goto fail;
    if (!n) {
        st = dt_err_input(err,
                          "%s: no rows after the header on line %d (expected one row per "
                          "client)",
                          path, t.csv.line);
        goto fail;
    }
    qsort(rows, n, sizeof *rows, cmp_device);
    for (size_t i = 1; i < n; i++)
        if (rows[i].client == rows[i - 1].client) {
            t.csv.line = rows[i].line;
            st = row_error(&t, t.l->cols[0].name,
                           "client %ld appears twice, on lines %d and %d (expected one row per "
                           "client)",
                           rows[i].client, rows[i - 1].line, rows[i].line);
            goto fail;
        }
    table_close(&t);
    out->rows = rows;
    out->n = n;
    out->has = has;
    out->layout = fedscale ? SIM_TRACE_FEDSCALE : SIM_TRACE_DTSIM;
    snprintf(out->path, sizeof out->path, "%s", path);
    return DT_OK;
fail:
    table_close(&t);
    free(rows);
    return st;
}

const sim_device_row_t *sim_device_trace_for(const sim_device_trace_t *t, long c)
{
    DT_ASSERT(c >= 0 && t->n > 0);
    return &t->rows[(size_t)c % t->n];
}

/* bsearch's comparison of an id with a row or a client: both start with their long id */
static int id_cmp(const void *key, const void *elem)
{
    long id = *(const long *)key, have = *(const long *)elem;
    return (id > have) - (id < have);
}
_Static_assert(offsetof(sim_device_row_t, client) == 0, "id first");
_Static_assert(offsetof(sim_avail_client_t, client) == 0, "id first");

const sim_device_row_t *sim_device_trace_find(const sim_device_trace_t *t, long id)
{
    return bsearch(&id, t->rows, t->n, sizeof *t->rows, id_cmp);
}

double sim_device_fedscale_speed(double ms_per_sample, double forward_flops)
{
    return forward_flops / (ms_per_sample / 1000.0);
}

void sim_device_trace_free(sim_device_trace_t *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}

/* ---- availability traces ---- */

/* A window as read, before it is grouped by client. */
typedef struct raw_window {
    long client;
    double start, end, period; /* period: NAN when the row gives none */
    int line;
} raw_window_t;

static int cmp_raw(const void *a, const void *b)
{
    const raw_window_t *x = a, *y = b;
    if (x->client != y->client)
        return x->client < y->client ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* "3600s" for messages, or FedScale's plain seconds. */
static void time_text(const table_t *t, double s, char *buf, size_t n)
{
    if (t->which)
        scn_format_double(buf, n, s);
    else
        scn_format_unit(buf, n, s, scn_time_units);
}

/* Checks the windows of one client, raw[0..n) sorted by start; the error goes on the
 * later line of the two rows it names. */
static dt_status check_client(table_t *t, const raw_window_t *raw, size_t n)
{
    const column_t *cols = t->l->cols;
    char a[48], b[48], c[48], d[48];
    const raw_window_t *with_period = NULL, *last = NULL; /* last non-empty window */
    for (size_t i = 0; i < n; i++) {
        const raw_window_t *w = &raw[i];
        if (!isnan(w->period)) {
            if (with_period && w->period != with_period->period) {
                const raw_window_t *late = w->line > with_period->line ? w : with_period;
                const raw_window_t *early = late == w ? with_period : w;
                time_text(t, late->period, a, sizeof a);
                time_text(t, early->period, b, sizeof b);
                t->csv.line = late->line;
                return row_error(t, cols[AV_PERIOD].name,
                                 "client %ld has %s %s here and %s on line %d (expected one "
                                 "%s per client)",
                                 w->client, cols[AV_PERIOD].name, a, b, early->line,
                                 cols[AV_PERIOD].name);
            }
            with_period = w;
        }
        if (w->end == w->start)
            continue; /* FedScale's empty windows: never online */
        if (last && w->start < last->end) {
            const raw_window_t *late = w->line > last->line ? w : last;
            const raw_window_t *early = late == w ? last : w;
            time_text(t, late->start, a, sizeof a);
            time_text(t, late->end, b, sizeof b);
            time_text(t, early->start, c, sizeof c);
            time_text(t, early->end, d, sizeof d);
            t->csv.line = late->line;
            return row_error(t, cols[AV_START].name,
                             "client %ld's window [%s, %s) overlaps its window [%s, %s) on "
                             "line %d (expected the windows of a client not to overlap)",
                             w->client, a, b, c, d, early->line);
        }
        last = w;
    }
    if (with_period)
        for (size_t i = 0; i < n; i++)
            if (raw[i].end > with_period->period) {
                time_text(t, raw[i].end, a, sizeof a);
                time_text(t, with_period->period, b, sizeof b);
                t->csv.line = raw[i].line;
                return row_error(t, cols[AV_END].name,
                                 "client %ld's window ends at %s, after its %s %s (expected "
                                 "%s <= %s)",
                                 raw[i].client, a, cols[AV_PERIOD].name, b, cols[AV_END].name,
                                 cols[AV_PERIOD].name);
            }
    return DT_OK;
}

dt_status sim_avail_trace_load(const char *path, sim_avail_trace_t *out, dt_err_t *err)
{
    memset(out, 0, sizeof *out);
    table_t t;
    dt_status st = table_open(&t, path, avail_layouts, err);
    if (st)
        return st;
    raw_window_t *raw = NULL;
    size_t n = 0, cap = 0;
    sim_avail_client_t *clients = NULL;
    sim_avail_window_t *windows = NULL;
    if ((st = table_header(&t)))
        goto fail;
    int fedscale = t.which == 1, has_period = t.field_of[AV_PERIOD] >= 0;
    long client;
    double v[CSV_FIELDS] = {0}, span = 0;
    while (table_row(&t, &client, v, &st)) {
        const column_t *cols = t.l->cols;
        /* dtsim's windows are half-open and not empty; FedScale's [active, inactive] may be
         * a single instant, which is kept as a client never online. */
        if (fedscale ? v[AV_END] < v[AV_START] : v[AV_END] <= v[AV_START]) {
            char a[48], b[48];
            time_text(&t, v[AV_END], a, sizeof a);
            time_text(&t, v[AV_START], b, sizeof b);
            st = row_error(&t, cols[AV_END].name,
                           "the window ends at %s, %s its %s %s "
                           "(expected %s %s %s)",
                           a, v[AV_END] < v[AV_START] ? "before" : "at", cols[AV_START].name, b,
                           cols[AV_START].name, fedscale ? "<=" : "<", cols[AV_END].name);
            goto fail;
        }
        if (n == cap)
            raw = grow(raw, &cap, sizeof *raw);
        raw[n++] = (raw_window_t){client, v[AV_START], v[AV_END], has_period ? v[AV_PERIOD] : NAN,
                                  t.csv.line};
        span = fmax(span, v[AV_END]);
    }
    if (st)
        goto fail;
    if (!n) {
        st = dt_err_input(err,
                          "%s: no rows after the header on line %d (expected one window "
                          "per row)",
                          path, t.csv.line);
        goto fail;
    }
    if (!has_period && span <= 0) {
        st = dt_err_input(err,
                          "%s: every window is empty, so the trace has no length "
                          "(expected a window with %s < %s, or a %s column)",
                          path, t.l->cols[AV_START].name, t.l->cols[AV_END].name,
                          t.l->cols[AV_PERIOD].name);
        goto fail;
    }
    qsort(raw, n, sizeof *raw, cmp_raw);
    size_t n_clients = 0, n_windows = 0;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && raw[k].client == raw[i].client)
            k++;
        if ((st = check_client(&t, raw + i, k - i)))
            goto fail;
        n_clients++;
        for (size_t j = i; j < k; j++)
            n_windows += raw[j].end > raw[j].start;
        i = k;
    }
    clients = dt_calloc(n_clients, sizeof *clients);
    windows = dt_calloc(n_windows, sizeof *windows);
    size_t ci = 0, wi = 0;
    for (size_t i = 0; i < n;) {
        sim_avail_client_t *c = &clients[ci++];
        c->client = raw[i].client;
        c->period = span;
        c->windows = windows + wi;
        for (; i < n && raw[i].client == c->client; i++) {
            if (!isnan(raw[i].period))
                c->period = raw[i].period;
            if (raw[i].end > raw[i].start)
                windows[wi++] = (sim_avail_window_t){raw[i].start, raw[i].end};
        }
        c->n = (size_t)(windows + wi - c->windows);
    }
    table_close(&t);
    free(raw);
    out->clients = clients;
    out->n_clients = n_clients;
    out->windows = windows;
    out->n_windows = n_windows;
    out->span = span;
    out->layout = fedscale ? SIM_TRACE_FEDSCALE : SIM_TRACE_DTSIM;
    snprintf(out->path, sizeof out->path, "%s", path);
    return DT_OK;
fail:
    table_close(&t);
    free(raw);
    free(clients);
    free(windows);
    return st;
}

const sim_avail_client_t *sim_avail_trace_for(const sim_avail_trace_t *t, long c)
{
    DT_ASSERT(c >= 0 && t->n_clients > 0);
    return &t->clients[(size_t)c % t->n_clients];
}

const sim_avail_client_t *sim_avail_trace_find(const sim_avail_trace_t *t, long id)
{
    return bsearch(&id, t->clients, t->n_clients, sizeof *t->clients, id_cmp);
}

/* Splits time into k periods and x in [0, period); returns how many windows start at or
 * before x. */
static size_t locate(const sim_avail_client_t *c, double time, double *k, double *x)
{
    *k = floor(time / c->period);
    *x = time - *k * c->period;
    if (*x >= c->period) { /* time / period rounded down past an integer */
        *x -= c->period;
        *k += 1;
    } else if (*x < 0) {
        *x += c->period;
        *k -= 1;
    }
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->windows[mid].start <= *x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int sim_avail_client_online(const sim_avail_client_t *c, double time)
{
    if (!c->n)
        return 0;
    double k, x;
    size_t i = locate(c, time, &k, &x);
    return i > 0 && x < c->windows[i - 1].end;
}

double sim_avail_client_next_online(const sim_avail_client_t *c, double time)
{
    if (!c->n)
        return INFINITY;
    double k, x;
    size_t i = locate(c, time, &k, &x);
    if (i > 0 && x < c->windows[i - 1].end)
        return time;
    double next =
        i < c->n ? k * c->period + c->windows[i].start : (k + 1) * c->period + c->windows[0].start;
    return next < time ? time : next; /* never before time, whatever the rounding */
}

int sim_avail_trace_online(const sim_avail_trace_t *t, long c, double time)
{
    return sim_avail_client_online(sim_avail_trace_for(t, c), time);
}

double sim_avail_trace_next_online(const sim_avail_trace_t *t, long c, double time)
{
    if (c >= 0)
        return sim_avail_client_next_online(sim_avail_trace_for(t, c), time);
    DT_ASSERT(c == -1);
    double best = INFINITY;
    for (size_t i = 0; i < t->n_clients && best > time; i++)
        best = fmin(best, sim_avail_client_next_online(&t->clients[i], time));
    return best;
}

void sim_avail_trace_free(sim_avail_trace_t *t)
{
    free(t->clients);
    free(t->windows);
    t->clients = NULL;
    t->windows = NULL;
    t->n_clients = t->n_windows = 0;
}

/* ---- distributions ---- */

static const char *const dist_example[] = {"1.5", "2.5Gf", "10Mbps", "40ms"};
static const char *const dist_what[] = {"number", "speed", "bandwidth", "time"};

#define DIST_SYNTAX "X, const:X, uniform:LO:HI, lognormal:MEDIAN:SIGMA or choice:V1@P1,V2@P2,..."

/* Parses one value of the unit (trimmed text). */
static dt_status dist_number(const char *text, sim_dist_unit_t unit, double *out, dt_err_t *err)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    char *s = trim(buf);
    dt_status st = DT_OK;
    switch (unit) {
    case SIM_DIST_UNIT_NUMBER:
        if (!plain_number(s, out))
            return dt_err_input(err, "\"%s\" is not a number (expected e.g. %s)", s,
                                dist_example[unit]);
        return DT_OK;
    case SIM_DIST_UNIT_FLOPS:
        st = scenario_parse_flops(s, out, err);
        break;
    case SIM_DIST_UNIT_BANDWIDTH:
        st = scenario_parse_bandwidth(s, out, err);
        break;
    case SIM_DIST_UNIT_TIME:
        return scenario_parse_time(s, out, err);
    }
    if (!st && !(*out > 0)) /* a client of no speed or bandwidth never finishes */
        return dt_err_input(err, "%s \"%s\" is not > 0", dist_what[unit], s);
    return st;
}

/* Splits "A:B" at the first ':' into a (NUL-terminated in buf) and the rest; -1 if none. */
static int split_colon(char *buf, char **rest)
{
    char *colon = strchr(buf, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    *rest = colon + 1;
    return 0;
}

static dt_status dist_choice(char *items, sim_dist_t *out, dt_err_t *err)
{
    double sum = 0;
    char *save = NULL;
    int n = 0;
    for (char *item = strtok_r(items, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        item = trim(item);
        if (n == SIM_DIST_CHOICES)
            return dt_err_input(err, "choice has more than %d items", SIM_DIST_CHOICES);
        char *at = strrchr(item, '@');
        if (!at)
            return dt_err_input(err,
                                "choice item \"%s\" lacks its probability (expected "
                                "VALUE@P, e.g. %s@0.25)",
                                item, dist_example[out->unit]);
        *at = '\0';
        dt_err_t e;
        if (dist_number(item, out->unit, &out->value[n], &e))
            return dt_err_input(err, "choice item %d: %s", n + 1, e.msg);
        char *p = trim(at + 1);
        if (!plain_number(p, &out->prob[n]) || out->prob[n] <= 0 || out->prob[n] > 1)
            return dt_err_input(err, "choice item %d: probability \"%s\" is not in (0, 1]", n + 1,
                                p);
        sum += out->prob[n];
        n++;
    }
    if (!n)
        return dt_err_input(err, "choice has no items (expected choice:V1@P1,V2@P2,...)");
    if (fabs(sum - 1) > 1e-6)
        return dt_err_input(err, "choice probabilities sum to %g (expected 1)", sum);
    out->n = n;
    return DT_OK;
}

dt_status sim_dist_parse(const char *text, sim_dist_unit_t unit, sim_dist_t *out, dt_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->unit = unit;
    char buf[1024], *rest = NULL;
    if (strlen(text) >= sizeof buf)
        return dt_err_input(err, "distribution is longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", text);
    char *s = trim(buf);
    dt_err_t e;
    if (split_colon(s, &rest)) {
        out->kind = SIM_DIST_CONST;
        if (!dist_number(s, unit, &out->a, &e))
            return DT_OK;
        size_t len;
        double x;
        if (!scn_number_prefix(s, &len, &x)) /* a value after all: its own message says more */
            return dt_err_input(err, "%s", e.msg);
        return dt_err_input(err,
                            "\"%s\" is neither a %s nor a distribution (expected " DIST_SYNTAX
                            ", with %ss such as %s)",
                            s, dist_what[unit], dist_what[unit], dist_example[unit]);
    }
    char *name = trim(s);
    if (!strcmp(name, "const")) {
        out->kind = SIM_DIST_CONST;
        if (dist_number(rest, unit, &out->a, &e))
            return dt_err_input(err, "const: %s", e.msg);
        return DT_OK;
    }
    if (!strcmp(name, "uniform") || !strcmp(name, "lognormal")) {
        int uniform = name[0] == 'u';
        const char *syntax = uniform ? "uniform:LO:HI" : "lognormal:MEDIAN:SIGMA";
        char *second;
        if (split_colon(rest, &second))
            return dt_err_input(err, "%s needs two values (expected %s, e.g. %s)", name, syntax,
                                uniform ? "uniform:1Gf:4Gf" : "lognormal:2Gf:0.5");
        if (strchr(second, ':'))
            return dt_err_input(err, "%s takes two values, not more (expected %s)", name, syntax);
        out->kind = uniform ? SIM_DIST_UNIFORM : SIM_DIST_LOGNORMAL;
        if (dist_number(rest, unit, &out->a, &e))
            return dt_err_input(err, "%s %s: %s", name, uniform ? "LO" : "MEDIAN", e.msg);
        if (uniform) {
            if (dist_number(second, unit, &out->b, &e))
                return dt_err_input(err, "uniform HI: %s", e.msg);
            if (out->b < out->a)
                return dt_err_input(err, "uniform:%s:%s has HI < LO (expected LO <= HI)",
                                    trim(rest), trim(second));
            return DT_OK;
        }
        char *sigma = trim(second);
        if (!plain_number(sigma, &out->b) || out->b < 0 || out->b > 5)
            return dt_err_input(err, "lognormal SIGMA \"%s\" is not a number in [0, 5]", sigma);
        if (!(out->a > 0))
            return dt_err_input(err, "lognormal MEDIAN %s is not > 0", trim(rest));
        return DT_OK;
    }
    if (!strcmp(name, "choice")) {
        out->kind = SIM_DIST_CHOICE;
        return dist_choice(rest, out, err);
    }
    return dt_err_input(err, "unknown distribution \"%s\" (expected " DIST_SYNTAX ")", name);
}

double sim_dist_value(const sim_dist_t *d, double u, double z)
{
    switch (d->kind) {
    case SIM_DIST_CONST:
        return d->a;
    case SIM_DIST_UNIFORM:
        return d->a + (d->b - d->a) * u;
    case SIM_DIST_LOGNORMAL:
        return d->a * exp(d->b * z);
    case SIM_DIST_CHOICE: {
        double cum = 0;
        for (int i = 0; i < d->n - 1; i++) {
            cum += d->prob[i];
            if (u < cum)
                return d->value[i];
        }
        return d->value[d->n - 1]; /* also when the sum rounds below u */
    }
    }
    DT_ASSERT(0);
    return 0;
}

double sim_dist_draw(const sim_dist_t *d, trainer_rng_t *r)
{
    switch (d->kind) {
    case SIM_DIST_CONST:
        return d->a;
    case SIM_DIST_UNIFORM:
    case SIM_DIST_CHOICE:
        return sim_dist_value(d, trainer_rng_uniform(r), 0);
    case SIM_DIST_LOGNORMAL:
        return sim_dist_value(d, 0, trainer_rng_normal(r));
    }
    DT_ASSERT(0);
    return 0;
}

static void dist_value_text(const sim_dist_t *d, double v, char *buf, size_t n)
{
    static const unit_t *const units[] = {NULL, scn_flops_units, scn_bandwidth_units,
                                          scn_time_units};
    if (d->unit == SIM_DIST_UNIT_NUMBER)
        scn_format_double(buf, n, v);
    else
        scn_format_unit(buf, n, v, units[d->unit]);
}

void sim_dist_format(const sim_dist_t *d, char *buf, size_t n)
{
    char a[64], b[64];
    switch (d->kind) {
    case SIM_DIST_CONST:
        dist_value_text(d, d->a, buf, n);
        return;
    case SIM_DIST_UNIFORM:
        dist_value_text(d, d->a, a, sizeof a);
        dist_value_text(d, d->b, b, sizeof b);
        snprintf(buf, n, "uniform:%s:%s", a, b);
        return;
    case SIM_DIST_LOGNORMAL:
        dist_value_text(d, d->a, a, sizeof a);
        scn_format_double(b, sizeof b, d->b);
        snprintf(buf, n, "lognormal:%s:%s", a, b);
        return;
    case SIM_DIST_CHOICE: {
        size_t len = (size_t)snprintf(buf, n, "choice:");
        for (int i = 0; i < d->n && len < n; i++) {
            dist_value_text(d, d->value[i], a, sizeof a);
            scn_format_double(b, sizeof b, d->prob[i]);
            len += (size_t)snprintf(buf + len, n - len, "%s%s@%s", i ? "," : "", a, b);
        }
        return;
    }
    }
    DT_ASSERT(0);
}
