/* Per-link bytes, the timeline and its messages (see record.h). */
#include "record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "run.h"

typedef struct route {
    sg_host_t src, dst; /* NULL src: empty slot */
    int n;
    int *links;         /* indices into the run's link list */
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
    sg_link_t *links;   /* every link of the platform */
    size_t n_links;
    double *bytes;      /* (n_links) */
    route_t *routes;    /* open addressing on (src, dst) */
    size_t cap, used;
    interval_t *iv;
    size_t n_iv, cap_iv;
    message_t *msg;
    size_t n_msg, cap_msg;
};

/* Rows of the timeline, and of its messages, at most, whatever the window: a guard for very
 * large runs. */
#define TIMELINE_MAX_ROWS 200000

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
    run->record = r;
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

void sim_record_interval(sim_run_t *run, sim_node_t *node, sim_state_t state, double start,
                         double end)
{
    struct sim_record *r = run->record;
    if (end > run->timeline_end)
        end = run->timeline_end; /* the window closes for every host at once */
    if (!r || end <= start || r->n_iv >= TIMELINE_MAX_ROWS)
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

void sim_record_message(sim_run_t *run, const sim_node_t *sender, const sim_node_t *dst,
                        double sent, double start, double done, double bytes)
{
    struct sim_record *r = run->record;
    if (!r || !sender || run->timeline_steps <= 0 || done > run->timeline_end ||
        r->n_msg >= TIMELINE_MAX_ROWS)
        return;
    if (r->n_msg == r->cap_msg) {
        r->cap_msg = r->cap_msg ? 2 * r->cap_msg : 1024;
        r->msg = realloc(r->msg, sizeof(message_t) * r->cap_msg);
        DT_CHECK(r->msg, "out of memory");
    }
    r->msg[r->n_msg++] = (message_t){sender, dst, sent, start, done, bytes};
}

dt_status sim_record_store(sim_run_t *run, dt_err_t *err)
{
    static const char *states[] = {"compute", "comm", "idle"};
    struct sim_record *r = run->record;
    if (!r)
        return DT_OK;
    for (size_t i = 0; i < r->n_links; i++)
        if (r->bytes[i] > 0 &&
            results_link_add(run->db, run->run_id, sg_link_get_name(r->links[i]), r->bytes[i],
                             err))
            return DT_ERR_RUN;
    for (size_t i = 0; i < r->n_iv; i++) {
        const interval_t *v = &r->iv[i];
        if (results_timeline_add(run->db, run->run_id, sim_host_name(v->node->host),
                                 v->node->role, v->node->rank, states[v->state], v->start,
                                 v->end, err))
            return DT_ERR_RUN;
    }
    for (size_t i = 0; i < r->n_msg; i++) {
        const message_t *m = &r->msg[i];
        results_msg_end_t src = {sim_host_name(m->src->host), m->src->role, m->src->rank};
        results_msg_end_t dst = {sim_host_name(m->dst->host), m->dst->role, m->dst->rank};
        if (results_message_add(run->db, run->run_id, &src, &dst, m->sent, m->start, m->done,
                                m->bytes, err))
            return DT_ERR_RUN;
    }
    return DT_OK;
}
