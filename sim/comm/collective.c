/* Ring, binomial tree, recursive halving-doubling and hierarchical all-reduce as real
 * message exchanges (see collective.h). Each pair of members talks through the receiver's
 * mailbox named after the sender, so messages of different pairs never cross. */
#include "collective.h"
#include "wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The box of the pair (self, peer): where peer's messages to self arrive when inward, else
 * where self's messages to peer arrive. Each node keeps its peers' boxes: sim_mailbox
 * formats a name and hashes it on every call, a sixth of a ring message's cost. */
static sim_box_t peer_box(sim_node_t *self, const sim_node_t *peer, int inward)
{
    if (!self->peer_boxes)
        self->peer_boxes = dt_calloc(SIM_PEER_BOXES, sizeof(sim_peer_box_t));
    sim_peer_box_t *slot = &self->peer_boxes[(2 * (peer->rank & 7) + inward) % SIM_PEER_BOXES];
    if (slot->peer != peer || slot->inward != inward) {
        const sim_node_t *to = inward ? self : peer, *from = inward ? peer : self;
        *slot = (sim_peer_box_t){peer, inward, sim_mailbox(to->name, from->name)};
    }
    return slot->box;
}

/* Where self sends to peer; where self receives from peer. */
static sim_box_t box_to(sim_node_t *self, const sim_node_t *peer)
{
    return peer_box(self, peer, 0);
}

static sim_box_t box_from(sim_node_t *self, const sim_node_t *peer)
{
    return peer_box(self, peer, 1);
}

static void accumulate(sim_run_t *run, float *buf, const sim_msg_t *m)
{
    run->be->axpy(m->n, 1.0f, m->data, buf + m->offset);
}

static void overwrite(sim_run_t *run, float *buf, const sim_msg_t *m)
{
    run->be->copy(buf + m->offset, m->data, sizeof(float) * m->n);
}

/* (wire is below) */
static sim_msg_t *wire(sim_run_t *run, sim_node_t *self, float *buf, size_t off, size_t len,
                       long step);

/* Exchange with partner: send buf[off, off+len), receive into buf (added or copied). */
static sim_status_t exchange(sim_run_t *run, const sim_group_t *g, int me, int to, int from,
                             float *buf, size_t off, size_t len, int add)
{
    sim_node_t *self = g->members[me];
    sim_msg_t *out = wire(run, self, buf, off, len, 0);
    return sim_sendrecv(run, self, box_to(self, g->members[to]), out,
                        box_from(self, g->members[from]), buf, add, NULL);
}

/* An outgoing slice of buf, as the wire carries it (fp16 on a gradient all-reduce with
 * compression = fp16: sim_codec_wire). */
static sim_msg_t *wire(sim_run_t *run, sim_node_t *self, float *buf, size_t off, size_t len,
                       long step)
{
    sim_msg_t *m = sim_msg_slice(self, buf, off, len, step);
    if (self->wire_fp16)
        sim_codec_wire(run, self, buf, m);
    return m;
}

static size_t chunk_start(size_t n, int p, int c)
{
    return n * (size_t)c / (size_t)p;
}

/* What a lazy final phase receives, left where it lies: the message's slice and the parts
 * that came with it. */
static void keep_part(sim_node_t *self, const sim_msg_t *in)
{
    DT_ASSERT(self->n_parts + 1 + in->n_parts <= self->cap_parts);
    self->parts[self->n_parts++] = (sim_part_t){in->offset, in->n, in->data};
    for (int i = 0; i < in->n_parts; i++)
        self->parts[self->n_parts++] = in->parts[i];
}

/* A lazy message of `bytes` whose own slice is buf[lo, hi) (the sender's finished range) and
 * which carries the sender's parts. */
static void send_parts(sim_node_t *self, sim_msg_t *out, const float *buf, size_t lo, size_t hi)
{
    out->data = buf + lo;
    out->offset = lo;
    out->n = hi - lo;
    out->parts = self->parts;
    out->n_parts = self->n_parts;
}

/* Ring all-gather: at step s member me sends chunk (me + shift - s) mod p, its own first,
 * and receives the one its left neighbour sends. Lazy (sim_groups_allreduce_lazy): what it
 * receives is not copied into buf but kept as a part and forwarded from where it lies. */
static sim_status_t allgather(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                              int shift, int lazy)
{
    int p = g->size, right = (me + 1) % p, left = (me + p - 1) % p;
    sim_node_t *self = g->members[me];
    const float *carried = NULL; /* lazy: the chunk received last, in its owner's buffer */
    for (int s = 0; s < p - 1; s++) {
        int send_c = ((me + shift - s) % p + p) % p;
        size_t so = chunk_start(n, p, send_c), sl = chunk_start(n, p, send_c + 1) - so;
        sim_msg_t *out = wire(run, self, buf, so, sl, 0);
        if (carried)
            out->data = carried;
        sim_msg_t *in = NULL;
        sim_status_t e = sim_sendrecv(run, self, box_to(self, g->members[right]), out,
                                      box_from(self, g->members[left]), lazy ? NULL : buf, 0, &in);
        if (e != SIM_OK)
            return e;
        if (lazy) {
            keep_part(self, in);
            carried = in->data;
        }
    }
    return SIM_OK;
}

static sim_status_t ring(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                         int lazy)
{
    int p = g->size, right = (me + 1) % p, left = (me + p - 1) % p;
    /* reduce-scatter: after p-1 steps member me holds the sum of chunk (me + 1) mod p */
    for (int s = 0; s < p - 1; s++) {
        int send_c = ((me - s) % p + p) % p, recv_c = ((me - s - 1) % p + p) % p;
        sim_node_t *self = g->members[me];
        size_t so = chunk_start(n, p, send_c), sl = chunk_start(n, p, send_c + 1) - so;
        sim_msg_t *out = wire(run, self, buf, so, sl, s);
        sim_msg_t *in = NULL;
        sim_status_t e = sim_sendrecv(run, self, box_to(self, g->members[right]), out,
                                      box_from(self, g->members[left]), buf, 1, &in);
        if (e != SIM_OK)
            return e;
        DT_ASSERT(in->offset == chunk_start(n, p, recv_c));
    }
    return allgather(run, g, me, buf, n, 1, lazy);
}

sim_status_t sim_reduce_scatter(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n)
{
    int p = g->size, right = (me + 1) % p, left = (me + p - 1) % p;
    sim_node_t *self = g->members[me];
    /* the ring's first phase, shifted by one chunk so that member me ends with chunk me */
    for (int s = 0; s < p - 1; s++) {
        int send_c = ((me - s - 1) % p + p) % p;
        size_t so = chunk_start(n, p, send_c), sl = chunk_start(n, p, send_c + 1) - so;
        sim_msg_t *out = wire(run, self, buf, so, sl, s);
        sim_status_t e = sim_sendrecv(run, self, box_to(self, g->members[right]), out,
                                      box_from(self, g->members[left]), buf, 1, NULL);
        if (e != SIM_OK) {
            sim_exchange_done();
            return e;
        }
    }
    sim_exchange_done();
    return SIM_OK;
}

sim_status_t sim_allgather(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n)
{
    sim_status_t e = allgather(run, g, me, buf, n, 0, 0);
    sim_exchange_done();
    return e;
}

/* The ring with one message per phase (strategy.ring_messages = phases, timing-only runs):
 * a zero-byte message to the right neighbour measures the latency of one ring step, then the
 * member's p-1 chunks of the phase go as one message, and the phase's other p-3 latencies
 * are waited out. A step-by-step phase costs (p-1) (latency + chunk time); this one costs
 * the same when each step sees the same network, with 2 p messages per all-reduce instead
 * of 2 p (p-1). Nothing is summed: only a timing-only run may use it (checked at load). */
sim_status_t sim_ring_phase(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                            int phase)
{
    int p = g->size, right = (me + 1) % p, left = (me + p - 1) % p;
    sim_node_t *self = g->members[me];
    sim_box_t to = box_to(self, g->members[right]), from = box_from(self, g->members[left]);
    sim_status_t e =
        sim_sendrecv(run, self, to, wire(run, self, buf, 0, 0, -1), from, buf, 0, NULL);
    if (e != SIM_OK)
        return e;
    double step_latency = self->last_transfer_s; /* not the wait for a late neighbour */
    /* the chunks this member sends in the phase: all but one */
    int skip = (me + 1 + phase) % p;
    size_t len = n - (chunk_start(n, p, skip + 1) - chunk_start(n, p, skip));
    e = sim_sendrecv(run, self, to, wire(run, self, buf, 0, len, phase), from, buf, 0, NULL);
    if (e != SIM_OK)
        return e;
    sim_comm_wait(run, self, (p - 3) * step_latency);
    return SIM_OK;
}

static sim_status_t ring_phases(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n)
{
    sim_status_t e = sim_ring_phase(run, g, me, buf, n, 0);
    return e != SIM_OK ? e : sim_ring_phase(run, g, me, buf, n, 1);
}

sim_status_t sim_alltoall(sim_run_t *run, const sim_group_t *g, int me, const float *send,
                          float *recv, size_t per)
{
    int p = g->size;
    sim_node_t *self = g->members[me];
    if (!run->timing_only && send != recv)
        run->be->copy(recv + (size_t)me * per, send + (size_t)me * per, sizeof(float) * per);
    for (int s = 1; s < p; s++) {
        int to = (me + s) % p, from = (me + p - s) % p;
        /* activations, not gradients: no wire encoding */
        sim_msg_t *out = sim_msg_slice(self, send, (size_t)to * per, per, s);
        sim_msg_t *in = NULL;
        sim_status_t e = sim_sendrecv(run, self, box_to(self, g->members[to]), out,
                                      box_from(self, g->members[from]), NULL, 0, &in);
        if (e != SIM_OK) {
            sim_exchange_done();
            return e;
        }
        if (!run->timing_only) /* read before the next SimGrid call (sim_sendrecv) */
            run->be->copy(recv + (size_t)from * per, in->data, sizeof(float) * in->n);
    }
    sim_exchange_done();
    return SIM_OK;
}

double sim_alltoall_seconds(int p, double step_a, double step_c, double bytes)
{
    return (p - 1) * (step_a + step_c * bytes);
}

sim_status_t sim_reduce(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n)
{
    int p = g->size;
    sim_node_t *self = g->members[me];
    for (int k = 1; k < p; k <<= 1) {
        if (me % (2 * k) == k) {
            sim_msg_t *out = wire(run, self, buf, 0, n, k);
            return sim_send(run, self, box_to(self, g->members[me - k]), out);
        }
        if (me % (2 * k) == 0 && me + k < p) {
            sim_msg_t *in = NULL;
            sim_status_t e = sim_recv(run, self, box_from(self, g->members[me + k]), &in);
            if (e != SIM_OK)
                return e;
            accumulate(run, buf, in);
        }
    }
    return SIM_OK;
}

/* Binomial broadcast from member 0. Lazy (sim_groups_allreduce_lazy): what a member
 * receives is kept as a part, not copied, and forwarded from member 0's buffer. */
static sim_status_t broadcast(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                              int lazy)
{
    int p = g->size, top = 1;
    sim_node_t *self = g->members[me];
    const float *from = buf; /* what this member forwards */
    while (top < p)
        top <<= 1;
    for (int k = top / 2; k >= 1; k >>= 1) {
        if (me % (2 * k) == k) {
            sim_msg_t *in = NULL;
            sim_status_t e = sim_recv(run, self, box_from(self, g->members[me - k]), &in);
            if (e != SIM_OK)
                return e;
            if (lazy) {
                keep_part(self, in);
                from = in->data;
            } else {
                overwrite(run, buf, in);
            }
        } else if (me % (2 * k) == 0 && me + k < p) {
            sim_msg_t *out = wire(run, self, buf, 0, n, k);
            out->data = from;
            sim_status_t e = sim_send(run, self, box_to(self, g->members[me + k]), out);
            if (e != SIM_OK)
                return e;
        }
    }
    return SIM_OK;
}

sim_status_t sim_broadcast(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n)
{
    return broadcast(run, g, me, buf, n, 0);
}

/* Lazy: the doubling phase copies nothing; each message is the sender's finished range and
 * the parts it has received so far, of the same size on the wire. */
static sim_status_t halving_doubling(sim_run_t *run, const sim_group_t *g, int me, float *buf,
                                     size_t n, int lazy)
{
    int p = g->size, pow2 = 1;
    while (pow2 * 2 <= p)
        pow2 *= 2;
    int extra = p - pow2;
    sim_node_t *self = g->members[me];
    sim_status_t e;
    /* fold the members beyond the largest power of two into the first ones */
    if (me >= pow2) {
        sim_msg_t *out = wire(run, self, buf, 0, n, -1);
        if ((e = sim_send(run, self, box_to(self, g->members[me - pow2]), out)) != SIM_OK)
            return e;
        sim_msg_t *in = NULL;
        if ((e = sim_recv(run, self, box_from(self, g->members[me - pow2]), &in)) != SIM_OK)
            return e;
        if (lazy)
            keep_part(self, in);
        else
            overwrite(run, buf, in);
        return SIM_OK;
    }
    if (me < extra) {
        sim_msg_t *in = NULL;
        if ((e = sim_recv(run, self, box_from(self, g->members[me + pow2]), &in)) != SIM_OK)
            return e;
        accumulate(run, buf, in);
    }
    /* recursive halving: keep half of the current range, send the other half */
    size_t lo[32], hi[32];
    int depth = 0;
    size_t cur_lo = 0, cur_hi = n;
    for (int mask = pow2 / 2; mask >= 1; mask >>= 1) {
        int partner = me ^ mask;
        size_t mid = cur_lo + (cur_hi - cur_lo) / 2;
        size_t keep_lo = (me & mask) ? mid : cur_lo, keep_hi = (me & mask) ? cur_hi : mid;
        size_t send_lo = (me & mask) ? cur_lo : mid, send_hi = (me & mask) ? mid : cur_hi;
        lo[depth] = cur_lo;
        hi[depth] = cur_hi;
        depth++;
        sim_msg_t *out = wire(run, self, buf, send_lo, send_hi - send_lo, mask);
        sim_msg_t *in = NULL;
        e = sim_sendrecv(run, self, box_to(self, g->members[partner]), out,
                         box_from(self, g->members[partner]), buf, 1, &in);
        if (e != SIM_OK)
            return e;
        DT_ASSERT(in->offset == keep_lo && in->n == keep_hi - keep_lo);
        cur_lo = keep_lo;
        cur_hi = keep_hi;
    }
    /* recursive doubling: exchange owned ranges back up the same tree */
    size_t own_lo = cur_lo, own_hi = cur_hi; /* the range this member finished */
    for (int mask = 1; mask < pow2; mask <<= 1) {
        int partner = me ^ mask;
        depth--;
        if (lazy) {
            sim_msg_t *out = wire(run, self, buf, cur_lo, cur_hi - cur_lo, 0), *in = NULL;
            send_parts(self, out, buf, own_lo, own_hi);
            e = sim_sendrecv(run, self, box_to(self, g->members[partner]), out,
                             box_from(self, g->members[partner]), NULL, 0, &in);
            if (e == SIM_OK)
                keep_part(self, in);
        } else {
            e = exchange(run, g, me, partner, partner, buf, cur_lo, cur_hi - cur_lo, 0);
        }
        if (e != SIM_OK)
            return e;
        cur_lo = lo[depth];
        cur_hi = hi[depth];
    }
    if (me < extra) {
        sim_msg_t *out = wire(run, self, buf, 0, n, -2);
        if (lazy)
            send_parts(self, out, buf, own_lo, own_hi);
        if ((e = sim_send(run, self, box_to(self, g->members[me + pow2]), out)) != SIM_OK)
            return e;
    }
    return SIM_OK;
}

/* sim_allreduce, its final phase lazy when asked. */
static sim_status_t allreduce(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                              sim_allreduce_algo_t algo, int lazy)
{
    if (g->size <= 1)
        return SIM_OK;
    sim_status_t e;
    switch (algo) {
    case SIM_ALLREDUCE_RING:
        e = run->sc->ring_messages == SIM_RING_PHASES && g->size > 2
                ? ring_phases(run, g, me, buf, n)
                : ring(run, g, me, buf, n, lazy);
        sim_exchange_done();
        return e;
    case SIM_ALLREDUCE_TREE:
        e = sim_reduce(run, g, me, buf, n);
        return e != SIM_OK ? e : broadcast(run, g, me, buf, n, lazy);
    case SIM_ALLREDUCE_HALVING_DOUBLING:
        e = halving_doubling(run, g, me, buf, n, lazy);
        sim_exchange_done();
        return e;
    case SIM_ALLREDUCE_HIERARCHICAL:
    case SIM_ALLREDUCE_2D:
        break;
    }
    DT_ASSERT(!"hierarchical all-reduce needs its groups: use sim_allreduce_hierarchical");
    return SIM_OK;
}

float sim_clip_factor_sum(sim_run_t *run, sim_node_t *self, const sim_group_t *g, int me, double sq)
{
    float sum = (float)sq;
    if (g->size > 1) {
        if (!self->norm_sum)
            self->norm_sum = run->be->alloc(sizeof(float));
        run->be->upload(self->norm_sum, &sum, sizeof sum);
        if (sim_allreduce(run, g, me, self->norm_sum, 1, SIM_ALLREDUCE_TREE) != SIM_OK)
            return -1.0f;
        run->be->download(&sum, self->norm_sum, sizeof sum);
    }
    return trainer_clip_factor(run->sc->sgd.clip_norm, sqrt((double)sum));
}

sim_status_t sim_allreduce(sim_run_t *run, const sim_group_t *g, int me, float *buf, size_t n,
                           sim_allreduce_algo_t algo)
{
    return allreduce(run, g, me, buf, n, algo, 0);
}

/* The leaders' ring is eager: the broadcast sends what it leaves in their buffers. */
static sim_status_t hierarchical(sim_run_t *run, const sim_group_t *local, int me_local,
                                 const sim_group_t *leaders, int me_leader, float *buf, size_t n,
                                 int lazy)
{
    sim_status_t e = sim_reduce(run, local, me_local, buf, n);
    if (e != SIM_OK)
        return e;
    if (me_local == 0 &&
        (e = sim_allreduce(run, leaders, me_leader, buf, n, SIM_ALLREDUCE_RING)) != SIM_OK)
        return e;
    return broadcast(run, local, me_local, buf, n, lazy);
}

sim_status_t sim_allreduce_hierarchical(sim_run_t *run, const sim_group_t *local, int me_local,
                                        const sim_group_t *leaders, int me_leader, float *buf,
                                        size_t n)
{
    return hierarchical(run, local, me_local, leaders, me_leader, buf, n, 0);
}

/* The rails' rings are eager: the all-gather sends what they leave in the buffers. */
static sim_status_t two_level(sim_run_t *run, const sim_group_t *local, int me_local,
                              const sim_group_t *rail, int me_rail, float *buf, size_t n, int lazy)
{
    int p = local->size;
    size_t off = chunk_start(n, p, me_local), len = chunk_start(n, p, me_local + 1) - off;
    sim_status_t e = sim_reduce_scatter(run, local, me_local, buf, n);
    if (e == SIM_OK && rail->size > 1)
        e = sim_allreduce(run, rail, me_rail, buf + off, len, SIM_ALLREDUCE_RING);
    if (e != SIM_OK)
        return e;
    e = allgather(run, local, me_local, buf, n, 0, lazy);
    sim_exchange_done();
    return e;
}

sim_status_t sim_allreduce_2d(sim_run_t *run, const sim_group_t *local, int me_local,
                              const sim_group_t *rail, int me_rail, float *buf, size_t n)
{
    return two_level(run, local, me_local, rail, me_rail, buf, n, 0);
}

void sim_groups_free(sim_groups_t *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_groups; i++)
        free(g->local[i].members);
    free(g->local);
    free(g->leaders.members);
    for (int i = 0; i < g->n_rails; i++)
        free(g->rails[i].members);
    free(g->rails);
    free(g->rail_index);
    free(g->local_index);
    free(g->index);
    free(g->all.members);
    free(g);
}

sim_groups_t *sim_groups_new(sim_run_t *run, const int *member, int first)
{
    sim_groups_t *g = dt_calloc(1, sizeof *g);
    int n = run->n_workers;
    g->all.members = dt_calloc((size_t)n, sizeof(sim_node_t *));
    g->index = dt_calloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++)
        g->index[i] = -1;
    if (first >= 0) {
        g->index[first] = g->all.size;
        g->all.members[g->all.size++] = &run->workers[first];
    }
    for (int i = 0; i < n; i++)
        if ((!member || member[i]) && i != first) {
            g->index[i] = g->all.size;
            g->all.members[g->all.size++] = &run->workers[i];
        }
    g->n_groups = run->plat.n_groups;
    g->local = dt_calloc((size_t)g->n_groups, sizeof(sim_group_t));
    g->local_index = dt_calloc((size_t)n, sizeof(int));
    for (int i = 0; i < g->n_groups; i++)
        g->local[i].members = dt_calloc((size_t)n, sizeof(sim_node_t *));
    g->leaders.members = dt_calloc((size_t)g->n_groups, sizeof(sim_node_t *));
    for (int k = 0; k < g->all.size; k++) {
        int i = g->all.members[k]->rank;
        sim_group_t *l = &g->local[run->plat.group[i]];
        g->local_index[i] = l->size;
        l->members[l->size++] = &run->workers[i];
    }
    for (int i = 0; i < g->n_groups; i++)
        if (g->local[i].size)
            g->leaders.members[g->leaders.size++] = g->local[i].members[0];
    /* rails (2d): the members at one position of every group, when the groups are equal */
    g->rail_index = dt_calloc((size_t)n, sizeof(int));
    int size = g->leaders.size ? g->local[run->plat.group[g->leaders.members[0]->rank]].size : 0;
    for (int i = 0; i < g->n_groups; i++)
        if (g->local[i].size && g->local[i].size != size)
            size = 0;
    if (size > 0) {
        g->n_rails = size;
        g->rails = dt_calloc((size_t)size, sizeof(sim_group_t));
        for (int r = 0; r < size; r++)
            g->rails[r].members = dt_calloc((size_t)g->leaders.size, sizeof(sim_node_t *));
        for (int i = 0; i < g->n_groups; i++)
            for (int r = 0; r < g->local[i].size; r++) {
                sim_node_t *m = g->local[i].members[r];
                g->rail_index[m->rank] = g->rails[r].size;
                g->rails[r].members[g->rails[r].size++] = m;
            }
    }
    return g;
}

static void groups_free(void *p)
{
    sim_groups_free(p);
}

sim_groups_t *sim_groups_make(sim_run_t *run)
{
    sim_groups_t *g = sim_groups_new(run, NULL, -1);
    run->shared = g;
    run->shared_free = groups_free;
    return g;
}

static sim_status_t groups_allreduce(sim_run_t *run, sim_groups_t *g, sim_node_t *node, float *buf,
                                     size_t n, int lazy)
{
    sim_status_t e;
    const trainer_codec_t *codec = &run->sc->compression;
    if (codec->kind == TRAINER_CODEC_TOPK || codec->kind == TRAINER_CODEC_QSGD8)
        return sim_codec_allgather(run, &g->all, g->index[node->rank], buf, n);
    node->wire_fp16 = sim_codec_wire_fp16(run); /* this gradient's messages, not a rendezvous */
    lazy = lazy && !node->wire_fp16; /* fp16 messages are decoded into buf as they come */
    int li = g->local_index[node->rank];
    if (run->sc->algorithm == SIM_ALLREDUCE_2D && g->n_rails) {
        e = two_level(run, &g->local[run->plat.group[node->rank]], li, &g->rails[li],
                      g->rail_index[node->rank], buf, n, lazy);
    } else if (run->sc->algorithm >= SIM_ALLREDUCE_HIERARCHICAL) {
        int grp = run->plat.group[node->rank];
        int leader = 0;
        for (int i = 0; i < g->leaders.size; i++)
            if (g->leaders.members[i] == node)
                leader = i;
        e = hierarchical(run, &g->local[grp], li, &g->leaders, leader, buf, n, lazy);
    } else {
        e = allreduce(run, &g->all, g->index[node->rank], buf, n, run->sc->algorithm, lazy);
    }
    node->wire_fp16 = 0;
    return e;
}

sim_status_t sim_groups_allreduce(sim_run_t *run, sim_groups_t *g, sim_node_t *node, float *buf,
                                  size_t n)
{
    return groups_allreduce(run, g, node, buf, n, 0);
}

sim_status_t sim_groups_allreduce_lazy(sim_run_t *run, sim_groups_t *g, sim_node_t *node,
                                       float *buf, size_t n)
{
    node->n_parts = 0;
    if (run->timing_only) /* no data moves: no parts to keep (thousands of workers) */
        return groups_allreduce(run, g, node, buf, n, 0);
    if (node->cap_parts < g->all.size) {
        free(node->parts);
        node->cap_parts = g->all.size;
        node->parts = dt_calloc((size_t)node->cap_parts, sizeof(sim_part_t));
    }
    return groups_allreduce(run, g, node, buf, n, 1);
}

void sim_allreduce_settle(sim_run_t *run, sim_node_t *node, float *buf)
{
    for (int i = 0; i < node->n_parts; i++) {
        const sim_part_t *part = &node->parts[i];
        run->be->copy(buf + part->offset, part->data, sizeof(float) * part->n);
    }
    node->n_parts = 0;
}

/* The ring all-gather of encodings: at step s member me forwards the encoding of member
 * (me - s) mod p (its own first) to its right neighbour and keeps a copy of what its left
 * neighbour sends, the encoding of member (me - s - 1) mod p. */
sim_status_t sim_codec_allgather(sim_run_t *run, const sim_group_t *grp, int me, float *g, size_t n)
{
    DT_ASSERT(n == run->n_params); /* error feedback is indexed like the whole model */
    int p = grp->size;
    sim_node_t *self = grp->members[me];
    size_t slot = trainer_codec_bytes(&run->sc->compression, n);
    sim_codec_node_t *c = sim_codec_node(run, self, slot * (size_t)p);
    if (run->sc->error_feedback && !c->residual && !run->timing_only)
        c->residual = dt_calloc(n ? n : 1, sizeof(float));
    c->lens[me] = sim_codec_encode(run, self, g, 0, n, c->residual,
                                   run->timing_only ? NULL : c->packed + slot * me);
    int right = (me + 1) % p, left = (me + p - 1) % p;
    sim_box_t to = box_to(self, grp->members[right]);
    sim_box_t from = box_from(self, grp->members[left]);
    for (int s = 0; s < p - 1; s++) {
        int send_o = ((me - s) % p + p) % p;
        sim_msg_t *out = sim_msg_next(self);
        out->n = n;
        out->packed = run->timing_only ? NULL : c->packed + slot * send_o;
        out->bytes = (double)c->lens[send_o];
        out->flag = send_o;
        out->step = s;
        sim_msg_t *in = NULL;
        sim_status_t e = sim_sendrecv(run, self, to, out, from, NULL, 0, &in);
        if (e != SIM_OK) {
            sim_exchange_done();
            return e;
        }
        /* the sender's copy may change after our next SimGrid call: take it now */
        int o = in->flag;
        DT_ASSERT(o == ((me - s - 1) % p + p) % p);
        c->lens[o] = (size_t)in->bytes;
        if (!run->timing_only)
            memcpy(c->packed + slot * o, in->packed, c->lens[o]);
    }
    sim_exchange_done();
    if (run->timing_only)
        return SIM_OK;
    /* the same sum, in the same order, on every member */
    double w0 = dt_wall_seconds();
    run->be->scale(n, 0.0f, g);
    for (int o = 0; o < p; o++) {
        sim_msg_t m = {.packed = c->packed + slot * o, .n = n, .offset = 0};
        sim_msg_add(run, self, &m, g, 1.0f);
    }
    sim_charge(run, self, (double)p * (double)n, dt_wall_seconds() - w0);
    return SIM_OK;
}
