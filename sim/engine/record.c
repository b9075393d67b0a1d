/* Per-link bytes, the timeline and its messages, and the sampling of run.timeline = sampled
 * (see record.h). */
#include "record.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "rows_alike.h"
#include "run.h"

typedef struct route {
    sg_host_t src, dst; /* NULL src: empty slot */
    int n;
    int *links; /* indices into the run's link list */
} route_t;

typedef struct interval {
    const sim_node_t *node;
    sim_state_t state;
    double start, end;
} interval_t;

typedef struct message {
    const sim_node_t *src, *dst;
    double sent, start, done, bytes;
} message_t;

struct sim_record {
    sg_link_t *links; /* every link of the platform */
    size_t n_links;
    double *bytes;   /* (n_links) */
    route_t *routes; /* open addressing on (src, dst) */
    size_t cap, used;
    interval_t *iv;
    size_t n_iv, cap_iv;
    message_t *msg;
    size_t n_msg, cap_msg;
    int sampled; /* run.timeline = sampled: only the lanes lane_kept keeps */
};

/* Rows of the timeline, and of its messages, at most, whatever the window: a guard for very
 * large runs. */
#define TIMELINE_MAX_ROWS 200000

/* run.timeline = sampled: hosts kept of each role list, and the estimated bytes their rows
 * may take in the file (iv_bytes, msg_bytes), messages at most a quarter of them. 700 KB,
 * so that with its other tables (params, workers, memory, links: 100-200 KB at 128 hosts) a
 * run stays within 1 MB. */
#define SAMPLED_LANES 16
#define SAMPLED_BYTES (700.0 * 1024)

void sim_record_init(sim_run_t *run)
{
    struct sim_record *r = dt_calloc(1, sizeof *r);
    r->n_links = sg_link_count();
    r->links = sg_link_list();
    r->bytes = dt_calloc(r->n_links ? r->n_links : 1, sizeof(double));
    for (size_t i = 0; i < r->n_links; i++)
        sg_link_set_data(r->links[i], (void *)(intptr_t)(i + 1));
    r->cap = 64;
    r->routes = dt_calloc(r->cap, sizeof(route_t));
    r->sampled = sim_record_sampled(run);
    run->record = r;
}

int sim_record_sampled(const sim_run_t *run)
{
    sim_timeline_mode_t m = run->sc->timeline;
    return m == SIM_TIMELINE_SAMPLED || (m == SIM_TIMELINE_AUTO && run->timing_only);
}

/* A sampled timeline keeps SAMPLED_LANES ranks of each role list, spread evenly from the
 * first to the last: rank r is kept when it is the rank nearest to some lane's position. */
static int lane_kept(const sim_run_t *run, const sim_node_t *node)
{
    long n = strcmp(node->role, "server") ? run->n_workers : run->n_servers;
    if (n <= SAMPLED_LANES)
        return 1;
    long lane = lround((double)node->rank * (SAMPLED_LANES - 1) / (double)(n - 1));
    return lround((double)lane * (double)(n - 1) / (SAMPLED_LANES - 1)) == node->rank;
}

void sim_record_free(sim_run_t *run)
{
    struct sim_record *r = run->record;
    if (!r)
        return;
    for (size_t i = 0; i < r->cap; i++)
        free(r->routes[i].links);
    free(r->routes);
    free(r->links);
    free(r->bytes);
    free(r->iv);
    free(r->msg);
    free(r);
    run->record = NULL;
}

static size_t slot_of(const struct sim_record *r, sg_host_t src, sg_host_t dst)
{
    uintptr_t h = (uintptr_t)src * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)dst * 0xc2b2ae3d27d4eb4fULL;
    size_t i = (size_t)(h >> 7) & (r->cap - 1);
    while (r->routes[i].src && (r->routes[i].src != src || r->routes[i].dst != dst))
        i = (i + 1) & (r->cap - 1);
    return i;
}

static void grow(struct sim_record *r)
{
    route_t *old = r->routes;
    size_t old_cap = r->cap;
    r->cap *= 2;
    r->routes = dt_calloc(r->cap, sizeof(route_t));
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].src)
            r->routes[slot_of(r, old[i].src, old[i].dst)] = old[i];
    free(old);
}

static const route_t *route_of(struct sim_record *r, sg_host_t src, sg_host_t dst)
{
    size_t i = slot_of(r, src, dst);
    if (r->routes[i].src)
        return &r->routes[i];
    if (2 * (r->used + 1) > r->cap) {
        grow(r);
        i = slot_of(r, src, dst);
    }
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(src, dst, d);
    route_t *rt = &r->routes[i];
    rt->src = src;
    rt->dst = dst;
    rt->n = (int)xbt_dynar_length(d);
    rt->links = dt_malloc(sizeof(int) * (size_t)(rt->n ? rt->n : 1));
    for (int k = 0; k < rt->n; k++) {
        sg_link_t l = xbt_dynar_get_as(d, (unsigned long)k, sg_link_t);
        intptr_t idx = (intptr_t)sg_link_get_data(l);
        DT_ASSERT(idx >= 1 && (size_t)idx <= r->n_links);
        rt->links[k] = (int)(idx - 1);
    }
    xbt_dynar_free(&d);
    r->used++;
    return rt;
}

size_t sim_record_link_count(const sim_run_t *run)
{
    return run->record ? run->record->n_links : 0;
}

const char *sim_record_link_name(const sim_run_t *run, size_t i)
{
    return sg_link_get_name(run->record->links[i]);
}

double sim_record_link_bandwidth(const sim_run_t *run, size_t i)
{
    return sg_link_get_bandwidth(run->record->links[i]);
}

double sim_record_link_bytes(const sim_run_t *run, size_t i)
{
    return run->record->bytes[i];
}

void sim_record_traffic(sim_run_t *run, sim_host_t src_, sim_host_t dst_, double bytes)
{
    sg_host_t src = (sg_host_t)src_, dst = (sg_host_t)dst_;
    struct sim_record *r = run->record;
    if (!r || !src || !dst || src == dst || bytes <= 0)
        return;
    const route_t *rt = route_of(r, src, dst);
    for (int k = 0; k < rt->n; k++)
        r->bytes[rt->links[k]] += bytes;
}

static void record_interval(sim_run_t *run, sim_node_t *node, sim_state_t state, double start,
                            double end);

/* The workers that run->worker_twin says node stands for: the ranks after its own whose
 * twin it is. */
static int twins_of(const sim_run_t *run, const sim_node_t *node)
{
    int n = 0;
    if (run->worker_twin && node >= run->workers && node < run->workers + run->n_workers)
        while (node->rank + n + 1 < run->n_workers &&
               run->worker_twin[node->rank + n + 1] == node->rank)
            n++;
    return n;
}

void sim_record_traffic_of(sim_run_t *run, const sim_node_t *sender, const sim_node_t *dst,
                           sim_host_t src, double bytes)
{
    int n = sender ? twins_of(run, sender) : 0;
    if (n == 0 || twins_of(run, dst) < n) {
        sim_record_traffic(run, src, dst->host, bytes);
        return;
    }
    for (int k = 0; k <= n; k++)
        sim_record_traffic(run, sender[k].host, dst[k].host, bytes * run->twin_share);
}

void sim_record_interval(sim_run_t *run, sim_node_t *node, sim_state_t state, double start,
                         double end)
{
    int n = twins_of(run, node); /* the same interval on each worker it stands for */
    sim_breakdown_interval(node, state, start, end);
    record_interval(run, node, state, start, end);
    for (int k = 1; k <= n; k++)
        record_interval(run, node + k, state, start, end);
}

static void record_interval(sim_run_t *run, sim_node_t *node, sim_state_t state, double start,
                            double end)
{
    struct sim_record *r = run->record;
    if (end > run->timeline_end)
        end = run->timeline_end; /* the window closes for every host at once */
    if (!r || end <= start || r->n_iv >= TIMELINE_MAX_ROWS || (r->sampled && !lane_kept(run, node)))
        return;
    /* extend the node's latest interval when this one continues it */
    if (node->timeline_last) {
        interval_t *last = &r->iv[node->timeline_last - 1];
        if (last->state == state && last->end == start) {
            last->end = end;
            return;
        }
    }
    if (r->n_iv == r->cap_iv) {
        r->cap_iv = r->cap_iv ? 2 * r->cap_iv : 1024;
        r->iv = realloc(r->iv, sizeof(interval_t) * r->cap_iv);
        DT_CHECK(r->iv, "out of memory");
    }
    r->iv[r->n_iv++] = (interval_t){node, state, start, end};
    node->timeline_last = r->n_iv;
}

static void record_message(sim_run_t *run, const sim_node_t *sender, const sim_node_t *dst,
                           double sent, double start, double done, double bytes);

void sim_record_message(sim_run_t *run, const sim_node_t *sender, const sim_node_t *dst,
                        double sent, double start, double done, double bytes)
{
    /* between workers that stand for others, member k's message to member k, its share of
     * the bytes each */
    int n = sender ? twins_of(run, sender) : 0;
    if (n == 0 || twins_of(run, dst) < n) {
        record_message(run, sender, dst, sent, start, done, bytes);
        return;
    }
    for (int k = 0; k <= n; k++)
        record_message(run, sender + k, dst + k, sent, start, done, bytes * run->twin_share);
}

static void record_message(sim_run_t *run, const sim_node_t *sender, const sim_node_t *dst,
                           double sent, double start, double done, double bytes)
{
    struct sim_record *r = run->record;
    if (!r || !sender || run->timeline_steps <= 0 || done > run->timeline_end ||
        r->n_msg >= TIMELINE_MAX_ROWS ||
        (r->sampled && (!lane_kept(run, sender) || !lane_kept(run, dst))))
        return;
    if (r->n_msg == r->cap_msg) {
        r->cap_msg = r->cap_msg ? 2 * r->cap_msg : 1024;
        r->msg = realloc(r->msg, sizeof(message_t) * r->cap_msg);
        DT_CHECK(r->msg, "out of memory");
    }
    r->msg[r->n_msg++] = (message_t){sender, dst, sent, start, done, bytes};
}

/* --- sampling at the store ------------------------------------------------------------- */

static const char *const state_names[] = {"compute", "comm", "idle"};

/* Estimated bytes of a row in the file, its index entry included (the timeline's index
 * repeats role and rank, the messages' holds the time): close enough to hold the budget
 * (the results suite measures the file). */
static double iv_bytes(const interval_t *v)
{
    return 48.0 + (double)strlen(sim_host_name(v->node->host)) + 2.0 * strlen(v->node->role) +
           strlen(state_names[v->state]);
}

static double msg_bytes(const message_t *m)
{
    return 64.0 + (double)strlen(sim_host_name(m->src->host)) + strlen(m->src->role) +
           (double)strlen(sim_host_name(m->dst->host)) + strlen(m->dst->role);
}

/* Intervals by node, each node's in time order. */
static int iv_cmp(const void *a, const void *b)
{
    const interval_t *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* Merges each node's boxes shorter than res into the box being built until it is res long
 * (named by the state holding most of its time; a box following one of its state extends
 * it; each starts where the last ended): at most about window / res boxes a node. Writes
 * them to out (NULL: only counts) and returns their estimated bytes; *n their count. */
static double coarsen(const interval_t *iv, size_t n_iv, double res, interval_t *out, size_t *n)
{
    double bytes = 0;
    size_t k = 0;
    for (size_t i = 0; i < n_iv;) {
        const sim_node_t *node = iv[i].node;
        int have_prev = 0; /* the node's latest box, for extending it */
        sim_state_t prev_state = SIM_STATE_IDLE;
        double prev_end = 0;
        while (i < n_iv && iv[i].node == node) {
            /* a box starts where the last ended: a node's intervals overlap where it
             * computes while its buckets are sent, and boxes drawn over each other hide
             * what the merged one says */
            double start = have_prev && prev_end > iv[i].start ? prev_end : iv[i].start;
            double end = start, in[3] = {0, 0, 0};
            do {
                in[iv[i].state] += iv[i].end - iv[i].start;
                end = iv[i].end > end ? iv[i].end : end;
                i++;
            } while (i < n_iv && iv[i].node == node && end - start < res);
            if (end <= start)
                continue; /* within the last box */
            sim_state_t s =
                in[SIM_STATE_COMPUTE] >= in[SIM_STATE_COMM] ? SIM_STATE_COMPUTE : SIM_STATE_COMM;
            s = in[SIM_STATE_IDLE] > in[s] ? SIM_STATE_IDLE : s;
            if (have_prev && prev_state == s && prev_end >= start) {
                if (out)
                    out[k - 1].end = end;
                prev_end = end;
                continue;
            }
            interval_t box = {node, s, start, end};
            if (out)
                out[k] = box;
            bytes += iv_bytes(&box);
            k++;
            have_prev = 1;
            prev_state = s;
            prev_end = end;
        }
    }
    *n = k;
    return bytes;
}

/* The rows a sampled run keeps, within [0, window]: every k-th message within a quarter of
 * the budget, then the timeline at the finest resolution that fits the rest (none when all
 * fit). The kept
 * messages are moved to the front of r->msg (*n_msg of them); the boxes are malloc'ed. */
static interval_t *sample(struct sim_record *r, double window, size_t *n_iv, size_t *n_msg)
{
    double msg_total = 0, budget = SAMPLED_BYTES;
    size_t m = 0;
    for (size_t i = 0; i < r->n_msg; i++)
        if (r->msg[i].done <= window) {
            msg_total += msg_bytes(&r->msg[i]);
            r->msg[m++] = r->msg[i];
        }
    size_t stride = 1;
    if (msg_total > budget / 4)
        stride = (size_t)ceil(msg_total / (budget / 4));
    size_t kept = 0;
    double msg_kept = 0;
    for (size_t i = 0; i < m; i += stride) {
        msg_kept += msg_bytes(&r->msg[i]);
        r->msg[kept++] = r->msg[i];
    }
    *n_msg = kept;
    budget -= msg_kept;

    /* the first step's intervals, by node */
    interval_t *iv = dt_malloc(sizeof *iv * (r->n_iv ? r->n_iv : 1));
    size_t n_in = 0;
    for (size_t i = 0; i < r->n_iv; i++)
        if (r->iv[i].start < window) {
            iv[n_in] = r->iv[i];
            iv[n_in].end = iv[n_in].end < window ? iv[n_in].end : window;
            n_in++;
        }
    qsort(iv, n_in, sizeof *iv, iv_cmp);
    double lo = 0, hi = 0;
    for (size_t i = 0; i < n_in; i++)
        hi = iv[i].end > hi ? iv[i].end : hi;
    size_t n;
    if (coarsen(iv, n_in, 0, NULL, &n) > budget) {
        /* the bytes shrink as res grows (fewer, longer boxes): bisect to 0.1% of the
         * window; hi, the whole window, is one box a host */
        while (hi - lo > 1e-3 * hi) {
            double mid = (lo + hi) / 2;
            if (coarsen(iv, n_in, mid, NULL, &n) > budget)
                lo = mid;
            else
                hi = mid;
        }
        lo = hi;
    }
    interval_t *out = dt_malloc(sizeof *out * (n_in ? n_in : 1));
    coarsen(iv, n_in, lo, out, n_iv);
    free(iv);
    return out;
}

/* The links that carried bytes, in name order: those that carried the same bytes as one
 * row, named by the first of them (rows_alike.h). */
typedef struct link_row {
    const char *name;
    double bytes;
} link_row_t;

static int by_link_name(const void *a, const void *b)
{
    return strcmp(((const link_row_t *)a)->name, ((const link_row_t *)b)->name);
}

static dt_status store_links(sim_run_t *run, dt_err_t *err)
{
    struct sim_record *r = run->record;
    link_row_t *row = dt_malloc(sizeof *row * (r->n_links ? r->n_links : 1));
    double *bytes = dt_malloc(sizeof *bytes * (r->n_links ? r->n_links : 1));
    size_t n = 0;
    for (size_t i = 0; i < r->n_links; i++)
        if (r->bytes[i] > 0)
            row[n++] = (link_row_t){sg_link_get_name(r->links[i]), r->bytes[i]};
    qsort(row, n, sizeof *row, by_link_name);
    for (size_t i = 0; i < n; i++)
        bytes[i] = row[i].bytes;
    long *weight = sim_rows_alike(bytes, 1, NULL, n, sim_rows_grouped(run));
    dt_status st = DT_OK;
    for (size_t i = 0; i < n && st == DT_OK; i++)
        if (weight[i])
            st = results_link_add(run->db, run->run_id, row[i].name, bytes[i], weight[i], err);
    free(weight);
    free(bytes);
    free(row);
    return st;
}

dt_status sim_record_store(sim_run_t *run, double step_s, dt_err_t *err)
{
    struct sim_record *r = run->record;
    if (!r)
        return DT_OK;
    if (store_links(run, err))
        return DT_ERR_RUN;
    size_t n_iv = r->n_iv, n_msg = r->n_msg;
    /* the first step: until the later of the first gradient and the mean step */
    double window = run->timeline_first > step_s ? run->timeline_first : step_s;
    interval_t *iv = r->sampled ? sample(r, window > 0 ? window : INFINITY, &n_iv, &n_msg) : r->iv;
    dt_status st = DT_OK;
    for (size_t i = 0; st == DT_OK && i < n_iv; i++) {
        const interval_t *v = &iv[i];
        if (results_timeline_add(run->db, run->run_id, sim_host_name(v->node->host), v->node->role,
                                 v->node->rank, state_names[v->state], v->start, v->end, err))
            st = DT_ERR_RUN;
    }
    if (iv != r->iv)
        free(iv);
    for (size_t i = 0; st == DT_OK && i < n_msg; i++) {
        const message_t *m = &r->msg[i];
        results_msg_end_t src = {sim_host_name(m->src->host), m->src->role, m->src->rank};
        results_msg_end_t dst = {sim_host_name(m->dst->host), m->dst->role, m->dst->rank};
        if (results_message_add(run->db, run->run_id, &src, &dst, m->sent, m->start, m->done,
                                m->bytes, err))
            st = DT_ERR_RUN;
    }
    return st;
}
