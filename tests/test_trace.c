/* Device and availability traces and per-client distributions (sim/scenario/trace.h):
 * the shipped samples against their own lines read back independently here; every class
 * of bad row with its exact "PATH:LINE: column KEY: " and what is wrong; availability
 * queries against a brute-force scan (every window of every repetition) on a fine time
 * grid; FedScale's semantics against FedScale's own unit test of is_active; the converter
 * fedscale_to_csv.py on pickles written here (skipped, saying so, without python3); and
 * distributions against their quantile functions and seeded sample statistics. Files are
 * written into a temporary directory removed at the end. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace.h"

#define TRACES DTSIM_SOURCE "/scenarios/traces/"
#define DAY 86400.0

static char tmpdir[PATH_MAX];

/* Writes text into tmpdir/name; returns the path (one of a few rotating buffers). */
static const char *tmp_file(const char *name, const char *text)
{
    static char paths[4][PATH_MAX + 64];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- the shipped samples ---- */

START_TEST(device_sample_matches_its_lines)
{
    sim_device_trace_t t;
    dt_err_t err = {""};
    ck_assert_msg(!sim_device_trace_load(TRACES "devices-sample.csv", &t, &err), "%s", err.msg);
    ck_assert_int_eq(t.layout, SIM_TRACE_DTSIM);
    ck_assert_uint_eq(t.has,
                      SIM_DEVICE_SPEED | SIM_DEVICE_UP | SIM_DEVICE_DOWN | SIM_DEVICE_LATENCY);
    ck_assert_uint_eq(t.n, 100);
    /* the first data row, by hand: 0,15.9Gf,4.33Mbps,63.5Mbps,95ms */
    const sim_device_row_t *r = sim_device_trace_find(&t, 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_double_eq_tol(r->speed, 15.9e9, 1e-3);
    ck_assert_double_eq_tol(r->up, 4.33e6 / 8, 1e-9);
    ck_assert_double_eq_tol(r->down, 63.5e6 / 8, 1e-9);
    ck_assert_double_eq_tol(r->latency, 0.095, 1e-15);
    ck_assert_int_eq(r->line, 4);
    /* every row, read again with sscanf */
    FILE *f = fopen(TRACES "devices-sample.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        long c;
        double speed, up, down, lat;
        if (sscanf(line, "%ld,%lfGf,%lfMbps,%lfMbps,%lfms", &c, &speed, &up, &down, &lat) != 5)
            continue; /* comments and the header */
        r = sim_device_trace_find(&t, c);
        ck_assert_ptr_nonnull(r);
        ck_assert_double_eq_tol(r->speed, speed * 1e9, speed * 1e9 * 1e-15);
        ck_assert_double_eq_tol(r->up, up * 1e6 / 8, up * 1e6 * 1e-15);
        ck_assert_double_eq_tol(r->down, down * 1e6 / 8, down * 1e6 * 1e-15);
        ck_assert_double_eq_tol(r->latency, lat / 1e3, 1e-15);
        ck_assert_double_eq(r->ms_per_sample, 0);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 100);
    /* client c takes row c mod n, in id order */
    ck_assert_ptr_eq(sim_device_trace_for(&t, 37), &t.rows[37]);
    ck_assert_ptr_eq(sim_device_trace_for(&t, 137), &t.rows[37]);
    ck_assert_int_eq(sim_device_trace_for(&t, 100)->client, 0);
    ck_assert_ptr_null(sim_device_trace_find(&t, 100));
    sim_device_trace_free(&t);
    ck_assert_ptr_null(t.rows);
    sim_device_trace_free(&t); /* twice is fine */
}
END_TEST

START_TEST(availability_sample_matches_its_lines)
{
    sim_avail_trace_t t;
    dt_err_t err = {""};
    ck_assert_msg(!sim_avail_trace_load(TRACES "availability-sample.csv", &t, &err), "%s", err.msg);
    ck_assert_int_eq(t.layout, SIM_TRACE_DTSIM);
    ck_assert_uint_eq(t.n_clients, 100);
    ck_assert_double_eq(t.span, DAY);
    FILE *f = fopen(TRACES "availability-sample.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    size_t rows = 0;
    while (fgets(line, sizeof line, f)) {
        long c, s, e;
        if (sscanf(line, "%ld,%lds,%lds", &c, &s, &e) != 3)
            continue;
        const sim_avail_client_t *cl = sim_avail_trace_find(&t, c);
        ck_assert_ptr_nonnull(cl);
        int found = 0;
        for (size_t i = 0; i < cl->n; i++)
            found += cl->windows[i].start == s && cl->windows[i].end == e;
        ck_assert_msg(found == 1, "client %ld [%ld, %ld) found %d times", c, s, e, found);
        rows++;
    }
    fclose(f);
    ck_assert_uint_eq(rows, t.n_windows);
    for (size_t i = 0; i < t.n_clients; i++) {
        ck_assert_int_eq(t.clients[i].client, (long)i);
        ck_assert_double_eq(t.clients[i].period, DAY);
    }
    /* client 2 by hand: 2,0s,23940s and 2,80760s,86400s (a night across midnight) */
    const sim_avail_client_t *c2 = sim_avail_trace_for(&t, 102);
    ck_assert_int_eq(c2->client, 2);
    ck_assert_uint_eq(c2->n, 2);
    ck_assert_double_eq(c2->windows[0].end, 23940);
    ck_assert_double_eq(c2->windows[1].start, 80760);
    ck_assert(sim_avail_trace_online(&t, 2, 3 * DAY + 23939));
    ck_assert(!sim_avail_trace_online(&t, 2, 3 * DAY + 23940));
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 2, 23940), 80760);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 2, DAY - 1), DAY - 1);
    sim_avail_trace_free(&t);
}
END_TEST

START_TEST(fedscale_device_sample_keeps_fedscale_numbers)
{
    sim_device_trace_t t;
    dt_err_t err = {""};
    ck_assert_msg(!sim_device_trace_load(TRACES "fedscale-devices-sample.csv", &t, &err), "%s",
                  err.msg);
    ck_assert_int_eq(t.layout, SIM_TRACE_FEDSCALE);
    ck_assert_uint_eq(t.has, SIM_DEVICE_MS_PER_SAMPLE | SIM_DEVICE_UP | SIM_DEVICE_DOWN);
    ck_assert_uint_eq(t.n, 20);
    FILE *f = fopen(TRACES "fedscale-devices-sample.csv", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        long c;
        double ms, kbps;
        if (sscanf(line, "%ld,%lf,%lf", &c, &ms, &kbps) != 3)
            continue;
        const sim_device_row_t *r = sim_device_trace_find(&t, c);
        ck_assert_ptr_nonnull(r);
        ck_assert_double_eq(r->ms_per_sample, ms); /* strtod both ways: exact */
        ck_assert_double_eq(r->up, kbps * 128);
        ck_assert_double_eq(r->down, kbps * 128);
        ck_assert_double_eq(r->speed, 0);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 20);
    for (size_t i = 1; i < t.n; i++)
        ck_assert_int_lt(t.rows[i - 1].client, t.rows[i].client);
    sim_device_trace_free(&t);
    /* 162 ms per sample of a 1 GFLOP forward pass: 1e9 / 0.162 FLOP/s, so that a training
     * sample (3 GFLOP) takes FedScale's 3 x 162 ms */
    double speed = sim_device_fedscale_speed(162.0, 1e9);
    ck_assert_double_eq_tol(speed, 1e9 / 0.162, 1e-3);
    ck_assert_double_eq_tol(3e9 / speed, 3 * 0.162, 1e-15);
}
END_TEST

/* ---- availability queries against a brute force ---- */

/* Online by trying every window of every repetition up to time's. */
static int brute_online(const sim_avail_client_t *c, double t)
{
    for (double m = 0; m * c->period <= t; m++)
        for (size_t i = 0; i < c->n; i++)
            if (m * c->period + c->windows[i].start <= t && t < m * c->period + c->windows[i].end)
                return 1;
    return 0;
}

static double brute_next(const sim_avail_client_t *c, double t)
{
    if (brute_online(c, t))
        return t;
    double best = INFINITY;
    for (double m = 0; m * c->period <= t + c->period; m++)
        for (size_t i = 0; i < c->n; i++)
            if (m * c->period + c->windows[i].start >= t)
                best = fmin(best, m * c->period + c->windows[i].start);
    return best;
}

/* Every client and any client on a grid of step over [0, until): the grid's times and
 * the windows' ends are multiples of 0.5 s, so all the sums are exact. Plain ifs, not a
 * ck_assert per point: each of those costs a message to the parent process. */
static void check_against_brute_force(const sim_avail_trace_t *t, double step, double until)
{
    long checked = 0, online = 0;
    for (double x = 0; x < until; x += step) {
        double any = INFINITY;
        for (size_t i = 0; i < t->n_clients; i++) {
            const sim_avail_client_t *c = &t->clients[i];
            int on = brute_online(c, x), got_on = sim_avail_trace_online(t, (long)i, x);
            double next = brute_next(c, x), got_next = sim_avail_trace_next_online(t, (long)i, x);
            if (got_on != on || got_next != next)
                ck_abort_msg("client %ld at %.1f: online %d next %.1f, brute force %d and %.1f",
                             c->client, x, got_on, got_next, on, next);
            any = fmin(any, next);
            online += on;
            checked++;
        }
        double got_any = sim_avail_trace_next_online(t, -1, x);
        if (got_any != any)
            ck_abort_msg("any client at %.1f: %.1f, brute force %.1f", x, got_any, any);
    }
    ck_assert_int_gt(online, 0); /* the grid sees both states */
    ck_assert_int_gt(checked - online, 0);
}

START_TEST(online_and_next_online_match_brute_force)
{
    sim_avail_trace_t t;
    dt_err_t err = {""};
    ck_assert(!sim_avail_trace_load(TRACES "availability-sample.csv", &t, &err));
    check_against_brute_force(&t, 137.5, 2.5 * DAY);
    sim_avail_trace_free(&t);
    ck_assert_msg(!sim_avail_trace_load(TRACES "fedscale-availability-sample.csv", &t, &err), "%s",
                  err.msg);
    check_against_brute_force(&t, 1234.5, 2 * 518400.0);
    sim_avail_trace_free(&t);
    /* own periods, windows touching across the period's end, a client never online
     * besides clients that are, rows out of order */
    const char *path = tmp_file("periods.csv", "client,start,end,period\n"
                                               "5,50s,100s,100s\n"
                                               "3,10s,20s,40s\n"
                                               "5,0s,10s,100s\n"
                                               "3,25s,26s,40s\n"
                                               "9,0s,1s,3s\n");
    ck_assert_msg(!sim_avail_trace_load(path, &t, &err), "%s", err.msg);
    ck_assert_double_eq(t.span, 100);
    ck_assert_double_eq(sim_avail_trace_find(&t, 3)->period, 40);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 2, 2.5), 3); /* client 9 */
    ck_assert_double_eq(sim_avail_trace_next_online(&t, -1, 27), 27);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 0, 26), 50);
    check_against_brute_force(&t, 0.5, 400);
    sim_avail_trace_free(&t);
}
END_TEST

/* FedScale's own test of ClientMetadata.is_active (fedscale/tests/cloud/internal/
 * test_client_metadata.py): active [1, 3, 6, 9], inactive [1, 4, 7, 10], finish_time 10;
 * online at 6 and 9, not at 2, 8, 10 or 15. */
START_TEST(fedscale_is_active_test_holds)
{
    const char *path = tmp_file("fedscale.csv", "client_id,active,inactive,finish_time\n"
                                                "1,1,1,10\n1,3,4,10\n1,6,7,10\n1,9,10,10\n");
    sim_avail_trace_t t;
    dt_err_t err = {""};
    ck_assert_msg(!sim_avail_trace_load(path, &t, &err), "%s", err.msg);
    ck_assert_int_eq(t.layout, SIM_TRACE_FEDSCALE);
    ck_assert_uint_eq(t.n_windows, 3); /* [1, 1] holds no time */
    ck_assert(!sim_avail_trace_online(&t, 0, 2));
    ck_assert(sim_avail_trace_online(&t, 0, 6));
    ck_assert(!sim_avail_trace_online(&t, 0, 8));
    ck_assert(sim_avail_trace_online(&t, 0, 9));
    ck_assert(!sim_avail_trace_online(&t, 0, 10));
    ck_assert(!sim_avail_trace_online(&t, 0, 15));
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 0, 0), 3);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 0, 7), 9);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 0, 10), 13);
    sim_avail_trace_free(&t);
    /* without finish_time the period is the latest inactive; a client of empty windows
     * is kept and never online */
    path = tmp_file("fedscale2.csv", "client_id,active,inactive\n4,0,0\n2,5,8\n");
    ck_assert_msg(!sim_avail_trace_load(path, &t, &err), "%s", err.msg);
    ck_assert_uint_eq(t.n_clients, 2);
    ck_assert_double_eq(t.span, 8);
    ck_assert_uint_eq(sim_avail_trace_find(&t, 4)->n, 0);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 1, 3), INFINITY);
    ck_assert(!sim_avail_trace_online(&t, 1, 6));
    ck_assert_double_eq(sim_avail_trace_next_online(&t, 0, 9), 13);
    ck_assert_double_eq(sim_avail_trace_next_online(&t, -1, 9), 13);
    sim_avail_trace_free(&t);
}
END_TEST

/* ---- bad files ---- */

typedef struct bad_case {
    int avail; /* 1: availability trace, 0: device trace */
    const char *text;
    const char *where; /* the message after the path, exactly: ":LINE: column KEY: " */
    const char *what;  /* a part of the rest */
} bad_case_t;

static const bad_case_t bad_cases[] = {
    {0, "client,speed,color\n0,1Gf,red\n", ":1: column color: ", "unknown column"},
    {0, "client,speed,speed\n0,1Gf,2Gf\n", ":1: column speed: ", "appears twice in the header"},
    {0, "speed,up\n1Gf,1Mbps\n", ":1: column client: ", "missing from the header"},
    {0, "client,speed\n0,1Gf\n1,2Gf\n0,3Gf\n",
     ":4: column client: ", "client 0 appears twice, on lines 2 and 4"},
    {0, "client,speed,up\n0,,1Mbps\n", ":2: column speed: ", "missing value (expected a speed"},
    {0, "client,speed\n# a comment\n\n0,1Gbps\n",
     ":4: column speed: ", "unknown unit \"Gbps\" in speed"},
    {0, "client,up\n0,fast\n", ":2: column up: ", "bad bandwidth \"fast\""},
    {0, "client,down\n0,10\n", ":2: column down: ", "missing unit"},
    {0, "client,speed\n0,0Gf\n", ":2: column speed: ",
     "\"0Gf\" is out of range (expected a "
     "speed with its unit from 1f to 1e24f"},
    {0, "client,latency\n0,-4ms\n", ":2: column latency: ", "negative time"},
    {0, "client,speed,up,down,latency\n0,1Gf,1Mbps\n",
     ":2: column down: ", "missing value: the row has 3 fields, the header 5"},
    {0, "client,speed\n0,1Gf,2\n", ":2: field 3: ", "the row has 3 fields, the header 2"},
    {0, "client,speed\n-1,1Gf\n", ":2: column client: ", "\"-1\" is not a client id"},
    {0, "client,speed\nfour,1Gf\n", ":2: column client: ", "\"four\" is not a client id"},
    {0, "client\n0\n", ":1: ", "the header names no column besides client"},
    {0, "client_id,computation,communication\n5,abc,100\n",
     ":2: column computation: ", "\"abc\" is not a number (expected milliseconds per sample"},
    {0, "client_id,computation,communication\n5,10,0\n", ":2: column communication: ",
     "out of range (expected kbit/s, a number from 0.9765625 to 7.8125e12)"},
    {0, "client_id,speed\n5,1Gf\n", ":1: column speed: ", "unknown column in FedScale's layout"},
    {1, "client,start,end\n0,0s,10s\n1,0s,5s\n0,5s,20s\n",
     ":4: column start: ", "client 0's window [5s, 20s) overlaps its window [0s, 10s) on line 2"},
    {1, "client,start,end\n0,5s,20s\n0,0s,10s\n",
     ":3: column start: ", "client 0's window [0s, 10s) overlaps its window [5s, 20s) on line 2"},
    {1, "client,start,end\n0,10s,10s\n",
     ":2: column end: ", "the window ends at 10s, at its start 10s (expected start < end)"},
    {1, "client,start,end\n0,1h,30min\n",
     ":2: column end: ", "the window ends at 30min, before its start 1h"},
    {1, "client,start,end\n0,0,3600\n", ":2: column end: ", "missing unit"},
    {1, "client,start,end,period\n0,0s,1h,24h\n0,2h,3h,12h\n", ":3: column period: ",
     "client 0 has period 12h here and 24h on line 2 (expected one period per client)"},
    {1, "client,start,end,period\n0,0s,2h,1h\n",
     ":2: column end: ", "client 0's window ends at 2h, after its period 1h"},
    {1, "client,start\n0,0s\n", ":1: column end: ", "missing from the header"},
    {1, "client_id,active,inactive\n1,10,5\n", ":2: column inactive: ",
     "the window ends at 5, before its active 10 (expected active <= inactive)"},
    {1, "client_id,active,inactive,finish_time\n1,0,10,100\n1,5,20,100\n",
     ":3: column active: ", "client 1's window [5, 20) overlaps its window [0, 10) on line 2"},
    {1, "client_id,active,inactive,finish_time\n1,0,10,5\n",
     ":2: column inactive: ", "client 1's window ends at 10, after its finish_time 5"},
};

START_TEST(bad_rows_name_file_line_and_column)
{
    const bad_case_t *b = &bad_cases[_i];
    const char *path = tmp_file("bad.csv", b->text);
    dt_err_t err = {""};
    dt_status st;
    if (b->avail) {
        sim_avail_trace_t t;
        st = sim_avail_trace_load(path, &t, &err);
    } else {
        sim_device_trace_t t;
        st = sim_device_trace_load(path, &t, &err);
    }
    ck_assert_int_eq(st, DT_ERR_INPUT);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "%s%s", path, b->where);
    ck_assert_msg(!strncmp(err.msg, want, strlen(want)), "case %d: got: %s", _i, err.msg);
    ck_assert_msg(strstr(err.msg + strlen(want), b->what), "case %d: got: %s", _i, err.msg);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
}
END_TEST

START_TEST(bad_files_name_the_file)
{
    dt_err_t err = {""};
    sim_device_trace_t d;
    sim_avail_trace_t a;
    char want[PATH_MAX + 128];
    const char *path = tmp_file("empty.csv", "# only a comment\n\n");
    ck_assert_int_eq(sim_device_trace_load(path, &d, &err), DT_ERR_INPUT);
    snprintf(want, sizeof want,
             "%s: no header line (expected client,speed,up,down,latency, "
             "or FedScale's client_id,computation,communication)",
             path);
    ck_assert_str_eq(err.msg, want);
    path = tmp_file("header.csv", "client,start,end\n# nothing\n");
    ck_assert_int_eq(sim_avail_trace_load(path, &a, &err), DT_ERR_INPUT);
    snprintf(want, sizeof want, "%s: no rows after the header on line 2", path);
    ck_assert_msg(!strncmp(err.msg, want, strlen(want)), "got: %s", err.msg);
    path = tmp_file("allempty.csv", "client_id,active,inactive\n1,0,0\n");
    ck_assert_int_eq(sim_avail_trace_load(path, &a, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "every window is empty"), "got: %s", err.msg);
    ck_assert_int_eq(sim_device_trace_load(DTSIM_SOURCE "/no/such.csv", &d, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, DTSIM_SOURCE "/no/such.csv: cannot open: No such file or "
                                           "directory");
    /* spreadsheet habits that are fine: a byte order mark, CRLF, blanks around fields */
    path = tmp_file("crlf.csv", "\xef\xbb\xbf client , speed \r\n 3 , 2Gf \r\n");
    ck_assert_msg(!sim_device_trace_load(path, &d, &err), "%s", err.msg);
    ck_assert_int_eq(d.rows[0].client, 3);
    ck_assert_double_eq(d.rows[0].speed, 2e9);
    sim_device_trace_free(&d);
}
END_TEST

/* ---- the converter ---- */

/* Runs python3 -B PROGRAM ARG (no __pycache__ left in the source tree); its exit status,
 * 127 when there is no python3. */
static int python(const char *program, const char *arg)
{
    char cmd[2 * PATH_MAX + 256];
    snprintf(cmd, sizeof cmd, "python3 -B %.*s %.*s >%.*s/stdout.txt 2>&1", PATH_MAX, program,
             PATH_MAX, arg, 64, tmpdir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The whole of tmpdir/name (to free). */
static char *read_tmp(const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *text = calloc(1, 4096);
    ck_assert_ptr_nonnull(text);
    size_t n = fread(text, 1, 4095, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

START_TEST(converter_writes_what_the_loader_reads)
{
    /* One python3 run (its start costs a third of a second): pickles of one entry of each
     * FedScale trace as a FedScale-derived code base (REFL) quotes them, plus string ids,
     * ints and a client without windows; then the converter's main on each, and on a
     * pickle that names a class, which it must refuse. */
    const char *prog = tmp_file(
        "convert.py",
        "import pickle, sys, fractions\n"
        "d = sys.argv[1]\n"
        "sys.path.insert(0, '" TRACES "')\n"
        "import fedscale_to_csv as fc\n"
        "dev = {432802: {'computation': 162.0, 'communication': 5648.109619499134},\n"
        "       '17': {'computation': 3, 'communication': 1.5}}\n"
        "beh = {3834: {'duration': 211625, 'inactive': [65881, 133574, 208292, 276575, 295006,"
        " 356236, 400906, 475099], 'finish_time': 518400, 'active': [12788, 100044, 188992,"
        " 271372, 276663, 352625, 356267, 441193], 'model': 'CPH1801'},\n"
        "       12: {'duration': 0, 'inactive': [], 'finish_time': 100, 'active': [],"
        " 'model': 'x'}}\n"
        "pickle.dump(dev, open(d + '/dev.pkl', 'wb'))\n"
        "pickle.dump(beh, open(d + '/beh.pkl', 'wb'))\n"
        "pickle.dump({1: fractions.Fraction(1, 3)}, open(d + '/evil.pkl', 'wb'))\n"
        "codes = [fc.main(['x', 'devices', d + '/dev.pkl', d + '/dev.csv']),\n"
        "         fc.main(['x', 'availability', d + '/beh.pkl', d + '/beh.csv']),\n"
        "         fc.main(['x', 'devices', d + '/evil.pkl', d + '/evil.csv'])]\n"
        "open(d + '/codes.txt', 'w').write(' '.join(map(str, codes)))\n");
    int st = python(prog, tmpdir);
    if (st == 127) {
        fprintf(stderr, "trace: skipping the fedscale_to_csv.py checks: no python3\n");
        return;
    }
    char *out = read_tmp("stdout.txt");
    ck_assert_msg(st == 0, "python3 exited with %d: %s", st, out);
    ck_assert_msg(strstr(out, "evil.pkl: the pickle names fractions.Fraction"), "got: %s", out);
    free(out);
    char *codes = read_tmp("codes.txt");
    ck_assert_str_eq(codes, "0 0 2");
    free(codes);

    char path[PATH_MAX + 16];
    dt_err_t err = {""};
    sim_device_trace_t d;
    snprintf(path, sizeof path, "%s/dev.csv", tmpdir);
    ck_assert_msg(!sim_device_trace_load(path, &d, &err), "%s", err.msg);
    ck_assert_int_eq(d.layout, SIM_TRACE_FEDSCALE);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_int_eq(d.rows[0].client, 17);
    ck_assert_double_eq(d.rows[0].ms_per_sample, 3);
    ck_assert_double_eq(d.rows[0].up, 1.5 * 128);
    ck_assert_int_eq(d.rows[1].client, 432802);
    ck_assert_double_eq(d.rows[1].ms_per_sample, 162.0);
    ck_assert_double_eq(d.rows[1].up, 5648.109619499134 * 128);
    ck_assert_double_eq(d.rows[1].down, 5648.109619499134 * 128);
    sim_device_trace_free(&d);

    sim_avail_trace_t a;
    snprintf(path, sizeof path, "%s/beh.csv", tmpdir);
    ck_assert_msg(!sim_avail_trace_load(path, &a, &err), "%s", err.msg);
    ck_assert_uint_eq(a.n_clients, 2);
    const sim_avail_client_t *c = sim_avail_trace_find(&a, 3834);
    ck_assert_uint_eq(c->n, 8);
    ck_assert_double_eq(c->period, 518400);
    ck_assert_double_eq(c->windows[0].start, 12788);
    ck_assert_double_eq(c->windows[7].end, 475099);
    double online = 0; /* FedScale's 'duration' is the windows' total */
    for (size_t i = 0; i < c->n; i++)
        online += c->windows[i].end - c->windows[i].start;
    ck_assert_double_eq(online, 211625);
    c = sim_avail_trace_find(&a, 12);
    ck_assert_uint_eq(c->n, 0);
    ck_assert_double_eq(c->period, 100);
    ck_assert_double_eq(sim_avail_client_next_online(c, 0), INFINITY);
    sim_avail_trace_free(&a);
}
END_TEST

/* ---- distributions ---- */

START_TEST(distributions_parse_their_fields)
{
    sim_dist_t d;
    dt_err_t err = {""};
    ck_assert(!sim_dist_parse("2.5Gf", SIM_DIST_UNIT_FLOPS, &d, &err));
    ck_assert_int_eq(d.kind, SIM_DIST_CONST);
    ck_assert_double_eq(d.a, 2.5e9);
    ck_assert(!sim_dist_parse(" const:40ms ", SIM_DIST_UNIT_TIME, &d, &err));
    ck_assert_int_eq(d.kind, SIM_DIST_CONST);
    ck_assert_double_eq(d.a, 40 / 1e3);
    ck_assert(!sim_dist_parse("uniform:1Gf:4Gf", SIM_DIST_UNIT_FLOPS, &d, &err));
    ck_assert_int_eq(d.kind, SIM_DIST_UNIFORM);
    ck_assert_double_eq(d.a, 1e9);
    ck_assert_double_eq(d.b, 4e9);
    ck_assert(!sim_dist_parse("lognormal:20Mbps:0.8", SIM_DIST_UNIT_BANDWIDTH, &d, &err));
    ck_assert_int_eq(d.kind, SIM_DIST_LOGNORMAL);
    ck_assert_double_eq(d.a, 20e6 / 8);
    ck_assert_double_eq(d.b, 0.8);
    ck_assert(
        !sim_dist_parse("choice:10Mbps@0.25, 100Mbps@0.75", SIM_DIST_UNIT_BANDWIDTH, &d, &err));
    ck_assert_int_eq(d.kind, SIM_DIST_CHOICE);
    ck_assert_int_eq(d.n, 2);
    ck_assert_double_eq(d.value[1], 100e6 / 8);
    ck_assert_double_eq(d.prob[0], 0.25);
    ck_assert(!sim_dist_parse("uniform:-1:2", SIM_DIST_UNIT_NUMBER, &d, &err));
    ck_assert_double_eq(d.a, -1);

    /* the quantile functions */
    ck_assert(!sim_dist_parse("uniform:1Gf:3Gf", SIM_DIST_UNIT_FLOPS, &d, &err));
    ck_assert_double_eq(sim_dist_value(&d, 0.25, 9), 1.5e9);
    ck_assert(!sim_dist_parse("lognormal:2Gf:0.5", SIM_DIST_UNIT_FLOPS, &d, &err));
    ck_assert_double_eq_tol(sim_dist_value(&d, 0.9, 1), 2e9 * exp(0.5), 1e-3);
    ck_assert_double_eq(sim_dist_value(&d, 0.9, 0), 2e9);
    ck_assert(!sim_dist_parse("choice:1Gf@0.25,2Gf@0.5,4Gf@0.25", SIM_DIST_UNIT_FLOPS, &d, &err));
    ck_assert_double_eq(sim_dist_value(&d, 0.2499, 0), 1e9);
    ck_assert_double_eq(sim_dist_value(&d, 0.25, 0), 2e9);
    ck_assert_double_eq(sim_dist_value(&d, 0.7499, 0), 2e9);
    ck_assert_double_eq(sim_dist_value(&d, 0.75, 0), 4e9);
    ck_assert_double_eq(sim_dist_value(&d, 0.999999, 0), 4e9);
}
END_TEST

typedef struct bad_dist {
    const char *text;
    sim_dist_unit_t unit;
    const char *what; /* a part of the message */
} bad_dist_t;

static const bad_dist_t bad_dists[] = {
    {"uniform:4Gf:1Gf", SIM_DIST_UNIT_FLOPS, "has HI < LO (expected LO <= HI)"},
    {"uniform:1Gf", SIM_DIST_UNIT_FLOPS, "uniform needs two values (expected uniform:LO:HI"},
    {"lognormal:2Gf:-1", SIM_DIST_UNIT_FLOPS, "SIGMA \"-1\" is not a number in [0, 5]"},
    {"lognormal:0Gf:1", SIM_DIST_UNIT_FLOPS, "speed \"0Gf\" is not > 0"},
    {"choice:1Gf@0.5,2Gf@0.4", SIM_DIST_UNIT_FLOPS, "sum to 0.9 (expected 1)"},
    {"choice:1Gf", SIM_DIST_UNIT_FLOPS, "lacks its probability (expected VALUE@P"},
    {"choice:1Gf@1.5", SIM_DIST_UNIT_FLOPS, "probability \"1.5\" is not in (0, 1]"},
    {"choice:", SIM_DIST_UNIT_FLOPS, "choice has no items"},
    {"gamma:1:2", SIM_DIST_UNIT_NUMBER, "unknown distribution \"gamma\" (expected X, const:X"},
    {"2.5", SIM_DIST_UNIT_FLOPS, "missing unit in speed \"2.5\""},
    {"fast", SIM_DIST_UNIT_BANDWIDTH, "with bandwidths such as 10Mbps"},
    {"const:5Mf", SIM_DIST_UNIT_TIME, "unknown unit \"Mf\" in time"},
    {"uniform:a:1", SIM_DIST_UNIT_NUMBER, "\"a\" is not a number"},
    {"uniform:1Gf:2Gf:3Gf", SIM_DIST_UNIT_FLOPS, "uniform takes two values, not more"},
    {"-3Gf", SIM_DIST_UNIT_FLOPS, "negative speed \"-3Gf\""},
};

START_TEST(bad_distributions_say_what_is_expected)
{
    sim_dist_t d;
    dt_err_t err = {""};
    ck_assert_int_eq(sim_dist_parse(bad_dists[_i].text, bad_dists[_i].unit, &d, &err),
                     DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, bad_dists[_i].what), "%s: got: %s", bad_dists[_i].text, err.msg);
}
END_TEST

START_TEST(distributions_format_and_read_back)
{
    static const struct {
        const char *text, *written;
        sim_dist_unit_t unit;
    } cases[] = {
        {"const:2500Mf", "2.5Gf", SIM_DIST_UNIT_FLOPS},
        {"uniform:1Mbps:0.01Gbps", "uniform:1Mbps:10Mbps", SIM_DIST_UNIT_BANDWIDTH},
        {"lognormal:40ms:0.5", "lognormal:40ms:0.5", SIM_DIST_UNIT_TIME},
        {"choice:1Gf@0.3, 10Gf@0.7", "choice:1Gf@0.3,10Gf@0.7", SIM_DIST_UNIT_FLOPS},
        {"uniform:0.1:0.7", "uniform:0.1:0.7", SIM_DIST_UNIT_NUMBER},
        {"lognormal:1.2345678901234Tf:0.123456789", "lognormal:1.2345678901234Tf:0.123456789",
         SIM_DIST_UNIT_FLOPS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_dist_t d, back;
        dt_err_t err = {""};
        char buf[256];
        ck_assert_msg(!sim_dist_parse(cases[i].text, cases[i].unit, &d, &err), "%s", err.msg);
        sim_dist_format(&d, buf, sizeof buf);
        ck_assert_str_eq(buf, cases[i].written);
        ck_assert_msg(!sim_dist_parse(buf, cases[i].unit, &back, &err), "%s", err.msg);
        ck_assert_int_eq(back.kind, d.kind);
        ck_assert_double_eq(back.a, d.a);
        ck_assert_double_eq(back.b, d.b);
        ck_assert_int_eq(back.n, d.n);
        for (int k = 0; k < d.n; k++) {
            ck_assert_double_eq(back.value[k], d.value[k]);
            ck_assert_double_eq(back.prob[k], d.prob[k]);
        }
    }
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define DRAWS 20000

START_TEST(draws_follow_the_distributions)
{
    static double v[DRAWS];
    sim_dist_t d;
    dt_err_t err = {""};
    trainer_rng_t r, copy;
    trainer_rng_seed(&r, 7, 99);

    /* uniform:1Gf:3Gf: mean 2e9, sd of the mean 0.58e9 / sqrt(20000) = 0.2% */
    ck_assert(!sim_dist_parse("uniform:1Gf:3Gf", SIM_DIST_UNIT_FLOPS, &d, &err));
    double sum = 0, lo = INFINITY, hi = 0;
    for (int i = 0; i < DRAWS; i++) {
        double x = sim_dist_draw(&d, &r);
        sum += x;
        lo = fmin(lo, x);
        hi = fmax(hi, x);
    }
    ck_assert_double_eq_tol(sum / DRAWS / 2e9, 1, 0.01);
    ck_assert(lo >= 1e9 && hi < 3e9);

    /* lognormal:2Gf:0.5: median 2e9 (sd 0.44%), mean 2e9 exp(0.125) (sd 0.38%) */
    ck_assert(!sim_dist_parse("lognormal:2Gf:0.5", SIM_DIST_UNIT_FLOPS, &d, &err));
    sum = 0;
    for (int i = 0; i < DRAWS; i++)
        sum += v[i] = sim_dist_draw(&d, &r);
    qsort(v, DRAWS, sizeof v[0], cmp_double);
    ck_assert_double_eq_tol(v[DRAWS / 2] / 2e9, 1, 0.02);
    ck_assert_double_eq_tol(sum / DRAWS / (2e9 * exp(0.125)), 1, 0.02);

    /* choice: frequencies within 5 sd (0.3%) of the probabilities */
    ck_assert(!sim_dist_parse("choice:1Gf@0.25,2Gf@0.5,4Gf@0.25", SIM_DIST_UNIT_FLOPS, &d, &err));
    int count[3] = {0};
    for (int i = 0; i < DRAWS; i++) {
        double x = sim_dist_draw(&d, &r);
        count[x == 1e9 ? 0 : x == 2e9 ? 1 : 2]++;
        ck_assert(x == 1e9 || x == 2e9 || x == 4e9);
    }
    ck_assert_double_eq_tol(count[0] / (double)DRAWS, 0.25, 0.015);
    ck_assert_double_eq_tol(count[1] / (double)DRAWS, 0.5, 0.015);

    /* the variates each kind takes: const none, uniform one uniform, lognormal one normal */
    ck_assert(!sim_dist_parse("5Gf", SIM_DIST_UNIT_FLOPS, &d, &err));
    copy = r;
    ck_assert_double_eq(sim_dist_draw(&d, &r), 5e9);
    ck_assert_mem_eq(&copy, &r, sizeof r);
    ck_assert(!sim_dist_parse("uniform:1Gf:3Gf", SIM_DIST_UNIT_FLOPS, &d, &err));
    double u = trainer_rng_uniform(&copy);
    ck_assert_double_eq(sim_dist_draw(&d, &r), sim_dist_value(&d, u, 0));
    ck_assert_mem_eq(&copy, &r, sizeof r);
    ck_assert(!sim_dist_parse("lognormal:2Gf:0.5", SIM_DIST_UNIT_FLOPS, &d, &err));
    double z = trainer_rng_normal(&copy);
    ck_assert_double_eq(sim_dist_draw(&d, &r), sim_dist_value(&d, 0, z));
    ck_assert_mem_eq(&copy, &r, sizeof r);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_add_test(tc, device_sample_matches_its_lines);
    tcase_add_test(tc, availability_sample_matches_its_lines);
    tcase_add_test(tc, fedscale_device_sample_keeps_fedscale_numbers);
    tcase_add_test(tc, online_and_next_online_match_brute_force);
    tcase_add_test(tc, fedscale_is_active_test_holds);
    tcase_add_loop_test(tc, bad_rows_name_file_line_and_column, 0,
                        (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(tc, bad_files_name_the_file);
    tcase_add_test(tc, converter_writes_what_the_loader_reads);
    tcase_add_test(tc, distributions_parse_their_fields);
    tcase_add_loop_test(tc, bad_distributions_say_what_is_expected, 0,
                        (int)(sizeof bad_dists / sizeof bad_dists[0]));
    tcase_add_test(tc, distributions_format_and_read_back);
    tcase_add_test(tc, draws_follow_the_distributions);
    suite_add_tcase(s, tc);
    return s;
}

/* Removes the files the tests left in tmpdir. */
static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[PATH_MAX * 2];
        snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(p);
    }
    closedir(d);
    rmdir(tmpdir);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dtsim-trace-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    SRunner *sr = srunner_create(trace_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tmpdir();
    return failed == 0 ? 0 : 1;
}
