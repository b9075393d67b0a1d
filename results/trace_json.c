/* A run's timeline as a Chrome trace (see trace_json.h).
 *
 * Why this shape:
 *   - a process per host and a thread per role and rank on it: Perfetto draws a track per
 *     thread under its process, so a host that holds several nodes (federated clients on one
 *     edge host) shows each of them;
 *   - every event is a cJSON object printed on its own and written at once: a timeline of
 *     200,000 intervals never becomes a tree of a million JSON nodes in memory; only the
 *     enclosing array and object are fixed text;
 *   - numbers go in as raw JSON in their shortest round-trip form (csv.h): cJSON's own
 *     printing keeps 15 digits when they read back within an epsilon, which can move a slice
 *     by a unit in the last place;
 *   - a flow event binds to the slice that encloses its time, so a message's two ends are
 *     put at one time strictly inside the receiver's slice that the transfer ended in: the
 *     middle of [max(that slice's start, sent), done). A blocking sender spends all of
 *     [sent, done) in its send, which holds that time too; a sender that posted the message
 *     and went on is bound to whatever it was doing then. The receiver's slice, not the
 *     message's own start, because a message that arrived while its receiver was still busy
 *     with another transfer has a start equal to its done. Strictly inside: viewers differ
 *     in which of two events of equal time comes first. */
#define _POSIX_C_SOURCE 200809L
#include "trace_json.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

struct results_trace {
    results_run_view_t run;
    results_timeline_t tl;
    results_messages_t msgs;
    int *pid;       /* (n_lanes) the process of each lane's host: 1 + its first lane */
    const results_lane_t **by_key; /* (n_lanes) the lanes by host, role, rank: a message's */
    size_t *first;  /* (n_lanes + 1) lane l's intervals are iv[first[l] .. first[l + 1]) */
};

static int lane_cmp(const results_lane_t *a, const char *host, const char *role, int rank)
{
    int c = strcmp(a->host, host);
    if (!c)
        c = strcmp(a->role, role);
    return c ? c : (a->rank > rank) - (a->rank < rank);
}

static int by_key_cmp(const void *x, const void *y)
{
    const results_lane_t *a = *(const results_lane_t *const *)x;
    const results_lane_t *b = *(const results_lane_t *const *)y;
    int c = lane_cmp(a, b->host, b->role, b->rank);
    return c ? c : (a > b) - (a < b); /* the same lane twice: by position, one array */
}

/* The lane of host, role and rank; SIZE_MAX when the timeline has none. */
static size_t find_lane(const results_trace_t *t, const char *host, const char *role, int rank)
{
    size_t lo = 0, hi = t->tl.n_lanes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = lane_cmp(t->by_key[mid], host, role, rank);
        if (c == 0)
            return (size_t)(t->by_key[mid] - t->tl.lanes);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* The time of a message's flow: strictly inside the receiver's slice (on lane dst) that
 * ends the transfer, [s, e) with s < done <= e; done itself when there is none. */
static double flow_time(const results_trace_t *t, size_t dst, const results_message_t *m)
{
    size_t lo = t->first[dst], hi = t->first[dst + 1];
    while (lo < hi) { /* the first interval starting at or after done */
        size_t mid = lo + (hi - lo) / 2;
        if (t->tl.iv[mid].start < m->done)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->first[dst] || t->tl.iv[lo - 1].end < m->done)
        return m->done;
    double from = t->tl.iv[lo - 1].start > m->sent ? t->tl.iv[lo - 1].start : m->sent;
    return (from + m->done) / 2;
}

/* by_key, and each lane's process: the lanes of one host, adjacent in by_key, share the
 * process numbered after the first of them in lane order. */
static void index_lanes(results_trace_t *t)
{
    size_t n = t->tl.n_lanes;
    t->by_key = dt_malloc(n * sizeof *t->by_key);
    t->pid = dt_malloc(n * sizeof *t->pid);
    t->first = dt_calloc(n + 1, sizeof *t->first);
    for (size_t i = 0; i < n; i++)
        t->by_key[i] = &t->tl.lanes[i];
    for (size_t i = 0; i < t->tl.n; i++) /* the intervals come lane by lane, in start order */
        t->first[t->tl.iv[i].lane + 1] = i + 1;
    for (size_t l = 1; l <= n; l++)
        if (t->first[l] < t->first[l - 1])
            t->first[l] = t->first[l - 1];
    qsort(t->by_key, n, sizeof *t->by_key, by_key_cmp);
    for (size_t g = 0; g < n;) {
        size_t e = g, first = (size_t)(t->by_key[g] - t->tl.lanes);
        while (e < n && !strcmp(t->by_key[e]->host, t->by_key[g]->host)) {
            size_t lane = (size_t)(t->by_key[e] - t->tl.lanes);
            if (lane < first)
                first = lane;
            e++;
        }
        for (size_t k = g; k < e; k++)
            t->pid[t->by_key[k] - t->tl.lanes] = (int)first + 1;
        g = e;
    }
}

dt_status results_trace_build(results_query_t *q, int64_t run, results_trace_t **out,
                              dt_err_t *err)
{
    *out = NULL;
    results_trace_t *t = dt_calloc(1, sizeof *t);
    dt_status st = results_query_run(q, run, &t->run, err);
    if (st == DT_OK)
        st = results_query_timeline(q, run, &t->tl, err);
    if (st == DT_OK && t->tl.n == 0)
        st = dt_err_input(err,
                          "%s: run %lld has no timeline rows (run.timeline_steps = 0, or it "
                          "stopped before its first step)",
                          results_query_path(q), (long long)run);
    if (st == DT_OK)
        st = results_query_messages(q, run, &t->msgs, err);
    if (st != DT_OK) {
        results_trace_free(t);
        return st;
    }
    index_lanes(t);
    *out = t;
    return DT_OK;
}

void results_trace_free(results_trace_t *t)
{
    if (!t)
        return;
    results_run_view_free(&t->run);
    results_timeline_free(&t->tl);
    results_messages_free(&t->msgs);
    free(t->pid);
    free(t->by_key);
    free(t->first);
    free(t);
}

/* --- writing --------------------------------------------------------------------------- */

/* JSON has no inf or nan: such a value is written null (the events whose times are not
 * finite are left out before, and counted in otherData.skipped). */
static void add_number(cJSON *o, const char *key, double v)
{
    char num[RESULTS_DOUBLE_LEN];
    DT_CHECK(cJSON_AddRawToObject(o, key, isfinite(v) ? results_csv_double(num, v) : "null"),
             "out of memory");
}

static void add_string(cJSON *o, const char *key, const char *v)
{
    DT_CHECK(cJSON_AddStringToObject(o, key, v), "out of memory");
}

/* An event of phase ph on the track of pid and tid. */
static cJSON *event(const char *ph, const char *name, int pid, size_t tid)
{
    cJSON *e = cJSON_CreateObject();
    DT_CHECK(e, "out of memory");
    add_string(e, "name", name);
    add_string(e, "ph", ph);
    add_number(e, "pid", pid);
    add_number(e, "tid", (double)tid);
    return e;
}

/* Writes e (then frees it) as the next element of traceEvents. */
static void emit(FILE *f, cJSON *e, size_t *count)
{
    char *text = cJSON_PrintUnformatted(e);
    DT_CHECK(text, "out of memory");
    fputs(*count ? ",\n" : "", f);
    fputs(text, f);
    (*count)++;
    cJSON_free(text);
    cJSON_Delete(e);
}

/* A metadata event: a process's or thread's name or sort index. */
static void emit_meta(FILE *f, size_t *count, const char *what, int pid, size_t tid,
                      const char *name, double sort_index)
{
    cJSON *e = event("M", what, pid, tid);
    cJSON *args = cJSON_AddObjectToObject(e, "args");
    DT_CHECK(args, "out of memory");
    if (name)
        add_string(args, "name", name);
    else
        add_number(args, "sort_index", sort_index);
    emit(f, e, count);
}

/* The names of the processes (hosts) and threads (role and rank), in lane order. */
static void emit_tracks(const results_trace_t *t, FILE *f, size_t *count)
{
    for (size_t i = 0; i < t->tl.n_lanes; i++) {
        const results_lane_t *l = &t->tl.lanes[i];
        int pid = t->pid[i];
        if ((size_t)pid == i + 1) { /* the host's first lane */
            emit_meta(f, count, "process_name", pid, 0, l->host, 0);
            emit_meta(f, count, "process_sort_index", pid, 0, NULL, pid);
        }
        char name[96];
        snprintf(name, sizeof name, "%s %d", l->role, l->rank);
        emit_meta(f, count, "thread_name", pid, i + 1, name, 0);
        emit_meta(f, count, "thread_sort_index", pid, i + 1, NULL, (double)i);
    }
}

/* A slice whose start or length in microseconds is not a finite number (a row that ends
 * at 1e308 s) has no place on a viewer's axis: it is left out and counted in *skipped. */
static void emit_slices(const results_trace_t *t, FILE *f, size_t *count, size_t *skipped)
{
    for (size_t i = 0; i < t->tl.n; i++) {
        const results_interval_t *v = &t->tl.iv[i];
        if (!isfinite(v->start * 1e6) || !isfinite((v->end - v->start) * 1e6)) {
            (*skipped)++;
            continue;
        }
        const char *state = results_state_name(v->state);
        cJSON *e = event("X", state, t->pid[v->lane], v->lane + 1);
        add_string(e, "cat", state);
        add_number(e, "ts", v->start * 1e6);
        add_number(e, "dur", (v->end - v->start) * 1e6);
        emit(f, e, count);
    }
}

/* A flow per message whose sender and receiver both have a lane: "s" on the sender's, "f"
 * on the receiver's, both at flow_time. */
static void emit_flows(const results_trace_t *t, FILE *f, size_t *count, size_t *skipped)
{
    for (size_t i = 0; i < t->msgs.n; i++) {
        const results_message_t *m = &t->msgs.m[i];
        size_t src = find_lane(t, m->src_host, m->src_role, m->src_rank);
        size_t dst = find_lane(t, m->dst_host, m->dst_role, m->dst_rank);
        if (src == SIZE_MAX || dst == SIZE_MAX)
            continue;
        double mid = flow_time(t, dst, m) * 1e6;
        if (!isfinite(mid)) {
            (*skipped)++;
            continue;
        }
        cJSON *s = event("s", "message", t->pid[src], src + 1);
        add_string(s, "cat", "message");
        add_number(s, "id", (double)(i + 1));
        add_number(s, "ts", mid);
        cJSON *args = cJSON_AddObjectToObject(s, "args");
        DT_CHECK(args, "out of memory");
        add_number(args, "bytes", m->bytes);
        add_number(args, "sent_s", m->sent);
        add_number(args, "start_s", m->start);
        add_number(args, "done_s", m->done);
        emit(f, s, count);
        cJSON *e = event("f", "message", t->pid[dst], dst + 1);
        add_string(e, "cat", "message");
        add_number(e, "id", (double)(i + 1));
        add_number(e, "ts", mid);
        add_string(e, "bp", "e");
        emit(f, e, count);
    }
}

dt_status results_trace_write(const results_trace_t *t, FILE *f, dt_err_t *err)
{
    (void)err; /* write errors are the caller's: it checks the stream */
    size_t count = 0, skipped = 0;
    fputs("{\"traceEvents\":[\n", f);
    emit_tracks(t, f, &count);
    emit_slices(t, f, &count, &skipped);
    emit_flows(t, f, &count, &skipped);
    fputs("\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":", f);
    cJSON *o = cJSON_CreateObject();
    DT_CHECK(o, "out of memory");
    add_number(o, "run", (double)t->run.id);
    add_string(o, "name", t->run.name);
    add_string(o, "strategy", t->run.strategy);
    add_string(o, "status", t->run.status);
    add_string(o, "clock", "simulated time, microseconds");
    if (skipped) {
        char note[128];
        snprintf(note, sizeof note,
                 "%zu slices or messages left out: their times are not finite numbers",
                 skipped);
        add_string(o, "skipped", note);
    }
    char *text = cJSON_PrintUnformatted(o);
    DT_CHECK(text, "out of memory");
    fputs(text, f);
    fputs("}\n", f);
    cJSON_free(text);
    cJSON_Delete(o);
    return DT_OK;
}
