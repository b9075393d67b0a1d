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
 *   - a message is two slices of its own, with its real times: "send" on a track of the
 *     sender's from when it was posted to when it was received, and "receive" on a track of
 *     the receiver's from when its transfer began to when it was received (from when it was
 *     posted, for a message that arrived while its receiver was busy with another transfer:
 *     its start equals its done). Messages overlap one another, and slices on one track must
 *     nest, so each host's node gets as many send and receive tracks as it has messages at
 *     once (the first track free at the message's start), beside its compute / comm / idle
 *     track;
 *     - its flow arrow goes from the send slice's start to the receive slice's end: a flow
 *     event binds to the slice that encloses its time, and viewers differ on a time equal to
 *     a slice's end, so both events sit a nanosecond inside (half the slice when shorter). */
#define _POSIX_C_SOURCE 200809L
#include "trace_json.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

/* One side of a message: a slice on track `track` (0, 1, ...) of lane's sends (dir 0) or
 * receives (dir 1). */
typedef struct msg_slice {
    size_t lane, msg, track;
    int dir;
    double begin, end; /* simulated seconds */
} msg_slice_t;

struct results_trace {
    results_run_view_t run;
    results_timeline_t tl;
    results_messages_t msgs;
    int *pid; /* (n_lanes) the process of each lane's host: 1 + its first lane */
    const results_lane_t **by_key; /* (n_lanes) the lanes by host, role, rank: a message's */
    size_t *first;   /* (n_lanes + 1) lane l's intervals are iv[first[l] .. first[l + 1]) */
    msg_slice_t *ms; /* (2 per message with both lanes) the send and receive slices */
    size_t n_ms;
    size_t *tracks;   /* (2 n_lanes) send and receive tracks of each lane */
    char covers[320]; /* what of the run the timeline holds, for otherData */
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

static int ms_cmp(const void *x, const void *y)
{
    const msg_slice_t *a = x, *b = y;
    if (a->lane != b->lane)
        return (a->lane > b->lane) - (a->lane < b->lane);
    if (a->dir != b->dir)
        return a->dir - b->dir;
    if (a->begin != b->begin)
        return (a->begin > b->begin) - (a->begin < b->begin);
    return (a->msg > b->msg) - (a->msg < b->msg);
}

/* The send and receive slices of every message whose two ends have lanes, each on the first
 * track of its lane and side that is free at its begin (greedy by begin: the fewest tracks
 * that keep a track's slices apart). */
static void layout_messages(results_trace_t *t)
{
    t->ms = dt_calloc(2 * t->msgs.n + 1, sizeof *t->ms);
    t->tracks = dt_calloc(2 * t->tl.n_lanes + 1, sizeof *t->tracks);
    for (size_t i = 0; i < t->msgs.n; i++) {
        const results_message_t *m = &t->msgs.m[i];
        size_t src = find_lane(t, m->src_host, m->src_role, m->src_rank);
        size_t dst = find_lane(t, m->dst_host, m->dst_role, m->dst_rank);
        if (src == SIZE_MAX || dst == SIZE_MAX)
            continue;
        t->ms[t->n_ms++] = (msg_slice_t){src, i, 0, 0, m->sent, m->done};
        t->ms[t->n_ms++] =
            (msg_slice_t){dst, i, 0, 1, m->start < m->done ? m->start : m->sent, m->done};
    }
    qsort(t->ms, t->n_ms, sizeof *t->ms, ms_cmp);
    double *free_at = NULL; /* end of the last slice on each track of the current side */
    size_t cap = 0;
    for (size_t g = 0; g < t->n_ms;) {
        size_t e = g, n = 0;
        while (e < t->n_ms && t->ms[e].lane == t->ms[g].lane && t->ms[e].dir == t->ms[g].dir)
            e++;
        for (size_t k = g; k < e; k++) {
            /* in microseconds as written, so that a viewer sees the tracks apart too */
            double ts = t->ms[k].begin * 1e6, end = ts + (t->ms[k].end - t->ms[k].begin) * 1e6;
            size_t tr = 0;
            while (tr < n && free_at[tr] > ts)
                tr++;
            if (tr == n) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 8;
                    free_at = realloc(free_at, cap * sizeof *free_at);
                    DT_CHECK(free_at, "out of memory");
                }
                n++;
            }
            free_at[tr] = end;
            t->ms[k].track = tr;
        }
        t->tracks[2 * t->ms[g].lane + (size_t)t->ms[g].dir] = n;
        g = e;
    }
    free(free_at);
}

/* What of the run the timeline holds, in words: the whole run, or how far it goes and why
 * it stopped there. */
static void describe_cover(results_trace_t *t, int sampled, const char *steps)
{
    double end = 0;
    for (size_t i = 0; i < t->tl.n; i++)
        if (isfinite(t->tl.iv[i].end) && t->tl.iv[i].end > end)
            end = t->tl.iv[i].end;
    const results_run_view_t *r = &t->run;
    if (sampled)
        snprintf(t->covers, sizeof t->covers,
                 "sampled (run.timeline = sampled): the first step of %zu hosts spread over "
                 "the ranks, 0 to %.6g s%s%.6g s",
                 t->tl.n_lanes, end, r->has_summary ? " of the run's " : "",
                 r->has_summary ? r->sim_time : end);
    else if (r->has_summary && isfinite(r->sim_time) && end >= r->sim_time * (1 - 1e-6))
        snprintf(t->covers, sizeof t->covers, "the whole run: 0 to %.6g s", end);
    else if (r->has_summary && isfinite(r->sim_time))
        snprintf(t->covers, sizeof t->covers,
                 "0 to %.6g s of the run's %.6g s: run.timeline_steps = %s, or the 200,000-row "
                 "cap (dtsim run --set run.timeline_steps=all records a run whole)",
                 end, r->sim_time, steps);
    else
        snprintf(t->covers, sizeof t->covers, "0 to %.6g s (the run has not ended)", end);
}

dt_status results_trace_build(results_query_t *q, int64_t run, results_trace_t **out, dt_err_t *err)
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
    layout_messages(t);
    char mode[32] = "", steps[32] = "";
    int has_mode = 0, has_steps = 0;
    if ((st = results_query_param(q, run, "run.timeline", mode, sizeof mode, &has_mode, err)) !=
            DT_OK ||
        (st = results_query_param(q, run, "run.timeline_steps", steps, sizeof steps, &has_steps,
                                  err)) != DT_OK) {
        results_trace_free(t);
        return st;
    }
    describe_cover(t, has_mode && !strcmp(mode, "sampled"), has_steps ? steps : "?");
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
    free(t->ms);
    free(t->tracks);
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

/* An integer as digits: the shortest round-trip form of 10 is 1e+01, which a viewer reading
 * a thread id as an integer may refuse. */
static void add_int(cJSON *o, const char *key, long long v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", v);
    DT_CHECK(cJSON_AddRawToObject(o, key, num), "out of memory");
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
    add_int(e, "pid", pid);
    add_int(e, "tid", (long long)tid);
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

/* The thread of track k of lane's sends (dir 0) or receives (dir 1): after the lanes' own
 * threads (1 .. n_lanes), lane by lane. */
static size_t msg_tid(const results_trace_t *t, size_t lane, int dir, size_t k)
{
    size_t tid = t->tl.n_lanes + 1;
    for (size_t i = 0; i < 2 * lane + (size_t)dir; i++)
        tid += t->tracks[i];
    return tid + k;
}

/* The names of the processes (hosts) and threads (role and rank, then its message tracks
 * beneath it: "worker 3 sends", "worker 3 sends 2", "worker 3 receives"), in lane order. */
static void emit_tracks(const results_trace_t *t, FILE *f, size_t *count)
{
    for (size_t i = 0; i < t->tl.n_lanes; i++) {
        const results_lane_t *l = &t->tl.lanes[i];
        int pid = t->pid[i];
        if ((size_t)pid == i + 1) { /* the host's first lane */
            emit_meta(f, count, "process_name", pid, 0, l->host, 0);
            emit_meta(f, count, "process_sort_index", pid, 0, NULL, pid);
        }
        char name[128];
        snprintf(name, sizeof name, "%s %d", l->role, l->rank);
        emit_meta(f, count, "thread_name", pid, i + 1, name, 0);
        emit_meta(f, count, "thread_sort_index", pid, i + 1, NULL, (double)i * 1e6);
        for (int dir = 0; dir < 2; dir++)
            for (size_t k = 0; k < t->tracks[2 * i + (size_t)dir]; k++) {
                size_t tid = msg_tid(t, i, dir, k);
                if (k)
                    snprintf(name, sizeof name, "%s %d %s %zu", l->role, l->rank,
                             dir ? "receives" : "sends", k + 1);
                else
                    snprintf(name, sizeof name, "%s %d %s", l->role, l->rank,
                             dir ? "receives" : "sends");
                emit_meta(f, count, "thread_name", pid, tid, name, 0);
                emit_meta(f, count, "thread_sort_index", pid, tid, NULL,
                          (double)i * 1e6 + 1 + (double)dir * 5e5 + (double)k);
            }
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

/* The other end of a message, for its slice's args: "worker 5 on node-5". */
static void peer_name(char *buf, size_t n, const char *role, int rank, const char *host)
{
    snprintf(buf, n, "%s %d on %s", role, rank, host);
}

/* Each message's send and receive slices, and a flow from the send's start to the
 * receive's end (a nanosecond inside each, or half the slice when it is shorter). */
static void emit_messages(const results_trace_t *t, FILE *f, size_t *count, size_t *skipped)
{
    for (size_t k = 0; k < t->n_ms; k++) {
        const msg_slice_t *s = &t->ms[k];
        const results_message_t *m = &t->msgs.m[s->msg];
        double ts = s->begin * 1e6, dur = (s->end - s->begin) * 1e6;
        if (!isfinite(ts) || !isfinite(dur)) {
            (*skipped)++;
            continue;
        }
        int pid = t->pid[s->lane];
        size_t tid = msg_tid(t, s->lane, s->dir, s->track);
        cJSON *e = event("X", s->dir ? "receive" : "send", pid, tid);
        add_string(e, "cat", "message");
        add_number(e, "ts", ts);
        add_number(e, "dur", dur);
        cJSON *args = cJSON_AddObjectToObject(e, "args");
        DT_CHECK(args, "out of memory");
        char peer[256];
        if (s->dir)
            peer_name(peer, sizeof peer, m->src_role, m->src_rank, m->src_host);
        else
            peer_name(peer, sizeof peer, m->dst_role, m->dst_rank, m->dst_host);
        add_string(args, s->dir ? "from" : "to", peer);
        add_number(args, "bytes", m->bytes);
        add_number(args, "sent_s", m->sent);
        add_number(args, "start_s", m->start);
        add_number(args, "done_s", m->done);
        emit(f, e, count);
        double in = dur > 2e-3 ? 1e-3 : dur / 2; /* a nanosecond, in microseconds */
        cJSON *fl = event(s->dir ? "f" : "s", "message", pid, tid);
        add_string(fl, "cat", "message");
        add_int(fl, "id", (long long)(s->msg + 1));
        add_number(fl, "ts", s->dir ? ts + dur - in : ts + in);
        if (s->dir)
            add_string(fl, "bp", "e");
        emit(f, fl, count);
    }
}

dt_status results_trace_write(const results_trace_t *t, FILE *f, dt_err_t *err)
{
    (void)err; /* write errors are the caller's: it checks the stream */
    size_t count = 0, skipped = 0;
    fputs("{\"traceEvents\":[\n", f);
    emit_tracks(t, f, &count);
    emit_slices(t, f, &count, &skipped);
    emit_messages(t, f, &count, &skipped);
    fputs("\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":", f);
    cJSON *o = cJSON_CreateObject();
    DT_CHECK(o, "out of memory");
    add_number(o, "run", (double)t->run.id);
    add_string(o, "name", t->run.name);
    add_string(o, "strategy", t->run.strategy);
    add_string(o, "status", t->run.status);
    add_string(o, "clock", "simulated time, microseconds");
    add_string(o, "covers", t->covers);
    if (skipped) {
        char note[128];
        snprintf(note, sizeof note,
                 "%zu slices or messages left out: their times are not finite numbers", skipped);
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
