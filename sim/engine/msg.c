/* Messages between nodes, over the transport (transport.h): the rotation of each node's
 * message headers, posted and blocking sends and receives with their accounting (bytes per
 * node and link, time in communication), inboxes that keep a receive posted, exchanges and
 * the vector forms every collective uses. Ownership of a message: run.h. */
#include "run.h"

#include <math.h>
#include <string.h>

sim_msg_t *sim_msg_next(sim_node_t *self)
{
    sim_msg_t *m = &self->msgs[self->next_msg];
    self->next_msg = (self->next_msg + 1) % self->n_msgs;
    sim_msg_init(self, m);
    return m;
}

void sim_msg_init(sim_node_t *self, sim_msg_t *m)
{
    memset(m, 0, sizeof *m);
    m->from = self->rank;
    m->src = self->host;
    m->sender = self;
}

sim_msg_t *sim_msg_slice(sim_node_t *self, const float *buf, size_t offset, size_t n, long step)
{
    sim_msg_t *m = sim_msg_next(self);
    m->data = buf + offset;
    m->offset = offset;
    m->n = n;
    m->bytes = sim_current->value_bytes * (double)n; /* model.precision's values */
    m->step = step;
    return m;
}

static void account_send(sim_run_t *run, sim_node_t *self, const sim_msg_t *msg)
{
    self->bytes_sent += msg->bytes;
    run->bytes_total += msg->bytes;
}

/* A send and its receive complete at the same simulated instant and both actors wake in
 * the same scheduling round, in no fixed order. Yielding after a completed send lets the
 * receiver read the payload (which it does before its next SimGrid call) before the
 * sender goes on and rewrites its buffer. Costs no simulated time. */
static void let_receivers_read(void)
{
    sim_yield();
}

void sim_exchange_done(void)
{
    let_receivers_read();
}

/* Splits the time a receive took into waiting for the sender (idle) and transfer (comm). */
static void account_recv(sim_run_t *run, sim_node_t *self, const sim_msg_t *msg, double posted,
                         double done)
{
    double start = msg->sent_at > posted ? msg->sent_at : posted;
    if (start > done)
        start = done;
    self->idle_s += start - posted;
    self->comm_s += done - start;
    self->last_transfer_s = done - start;
    self->bytes_recv += msg->bytes;
    run->msgs_recv++;
    run->msg_flight_s += done - start; /* on the wire: from the transfer's start */
    sim_record_interval(run, self, SIM_STATE_IDLE, posted, start);
    sim_record_interval(run, self, SIM_STATE_COMM, start, done);
    sim_record_traffic_of(run, msg->sender, self, msg->src, msg->bytes);
    sim_record_message(run, msg->sender, self, msg->sent_at, start, done, msg->bytes);
}

sim_status_t sim_send(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *msg)
{
    return sim_send_for(run, self, to, msg, sim_fault_timeout(run));
}

sim_status_t sim_send_for(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *msg,
                          double timeout)
{
    double t0 = sim_now();
    msg->sent_at = t0;
    sim_comm_t c = sim_post_send(to, msg, (long)msg->bytes);
    sim_status_t e = sim_wait_for(c, timeout);
    self->comm_s += sim_now() - t0;
    sim_record_interval(run, self, SIM_STATE_COMM, t0, sim_now());
    if (e == SIM_OK)
        account_send(run, self, msg);
    let_receivers_read();
    return e;
}

sim_comm_t sim_send_post(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *msg)
{
    (void)run;
    (void)self;
    msg->sent_at = sim_now();
    return sim_post_send(to, msg, (long)msg->bytes);
}

sim_status_t sim_send_finish(sim_run_t *run, sim_node_t *self, sim_comm_t comm,
                             const sim_msg_t *msg)
{
    double t0 = sim_now();
    sim_status_t e = sim_wait_for(comm, sim_fault_timeout(run));
    self->comm_s += sim_now() - t0;
    sim_record_interval(run, self, SIM_STATE_COMM, t0, sim_now());
    if (e == SIM_OK)
        account_send(run, self, msg);
    return e;
}

sim_status_t sim_recv_for(sim_run_t *run, sim_node_t *self, sim_box_t from, sim_msg_t **msg,
                          double timeout)
{
    double t0 = sim_now();
    void *data = NULL;
    sim_comm_t c = sim_post_recv(from, &data);
    sim_status_t e = sim_wait_for(c, timeout);
    if (e != SIM_OK) {
        self->idle_s += sim_now() - t0;
        return e;
    }
    *msg = data;
    account_recv(run, self, *msg, t0, sim_now());
    return SIM_OK;
}

/* Healthy runs in the simulation: the permanent receiver starts every push at once, and
 * the window's receives, each matched to one of them, are watched together so that the
 * first to arrive is the first taken (a single receive would take the earliest posted,
 * waiting behind a slow transfer while faster ones sit done, which no server does). Real
 * mode's transport delivers in order of arrival by itself. */
static int first_arrived(const sim_run_t *run)
{
    return !run->has_faults && !run->real;
}

void sim_inbox_open(sim_run_t *run, sim_node_t *self, int window)
{
    if (!run->has_faults) {
        sim_box_set_receiver(self->inbox);
        if (run->real)
            return;
    }
    if (self->win_n < window) {
        free(self->win);
        free(self->win_data);
        free(self->win_live);
        free(self->win_seen);
        free(self->win_wait);
        free(self->win_at);
        self->win = dt_calloc((size_t)window, sizeof(sim_comm_t));
        self->win_data = dt_calloc((size_t)window, sizeof(void *));
        self->win_live = dt_calloc((size_t)window, 1);
        self->win_seen = dt_calloc((size_t)window, sizeof(double));
        self->win_wait = dt_calloc((size_t)window, sizeof(sim_comm_t));
        self->win_at = dt_calloc((size_t)window, sizeof(int));
    }
    /* a new actor (after a restart): the receives of the killed one died with it */
    self->win_n = window;
    self->win_head = 0;
    for (int i = 0; i < window; i++) {
        self->win_data[i] = NULL;
        self->win[i] = sim_post_recv(self->inbox, &self->win_data[i]);
        self->win_live[i] = 1;
    }
}

/* Moves every posted receive whose message has arrived to held, seen now. */
static int inbox_sweep(sim_node_t *self)
{
    int held = 0;
    double now = sim_now();
    for (int i = 0; i < self->win_n; i++) {
        if (self->win_live[i] && sim_test(self->win[i])) {
            self->win_live[i] = 0;
            self->win_seen[i] = now;
        }
        held += !self->win_live[i];
    }
    return held;
}

/* The held message to take first: the first seen; among those seen at once (transfers that
 * ended at the same instant, or while the receiver was busy) the first sent, then the lowest
 * sender rank, so that the order does not hang on the network model's bookkeeping. */
static int inbox_first_held(const sim_node_t *self)
{
    int best = -1;
    for (int i = 0; i < self->win_n; i++) {
        if (self->win_live[i])
            continue;
        if (best < 0) {
            best = i;
            continue;
        }
        const sim_msg_t *a = self->win_data[i], *b = self->win_data[best];
        double sa = self->win_seen[i], sb = self->win_seen[best];
        if (sa < sb || (sa == sb && (a->sent_at < b->sent_at ||
                                     (a->sent_at == b->sent_at && a->from < b->from))))
            best = i;
    }
    return best;
}

/* sim_inbox_recv of a healthy simulated run: no timeout can fire there (callers pass
 * SIM_COMM_TIMEOUT's 1e7 s), so it waits for the first arrival, however long. */
static sim_status_t inbox_recv_first(sim_run_t *run, sim_node_t *self, sim_msg_t **msg)
{
    double t0 = sim_now();
    while (inbox_sweep(self) == 0) {
        int n = 0;
        for (int i = 0; i < self->win_n; i++)
            if (self->win_live[i]) {
                self->win_at[n] = i;
                self->win_wait[n++] = self->win[i];
            }
        int k = sim_wait_any(self->win_wait, n);
        if (k < 0) {
            self->idle_s += sim_now() - t0;
            return SIM_ERR_OTHER;
        }
        self->win_live[self->win_at[k]] = 0;
        self->win_seen[self->win_at[k]] = sim_now();
    }
    int h = inbox_first_held(self);
    *msg = self->win_data[h];
    self->win_data[h] = NULL;
    self->win[h] = sim_post_recv(self->inbox, &self->win_data[h]);
    self->win_live[h] = 1;
    account_recv(run, self, *msg, t0, sim_now());
    return SIM_OK;
}

sim_status_t sim_inbox_recv(sim_run_t *run, sim_node_t *self, sim_msg_t **msg, double timeout)
{
    if (!run->has_faults && run->real)
        return sim_recv_for(run, self, self->inbox, msg, timeout);
    if (first_arrived(run))
        return inbox_recv_first(run, self, msg);
    int h = self->win_head;
    double t0 = sim_now();
    sim_status_t e = sim_wait_for(self->win[h], timeout);
    double done = sim_now();
    void *data = self->win_data[h];
    /* the handle is consumed whatever happened: post a new receive in its place */
    self->win_data[h] = NULL;
    self->win[h] = sim_post_recv(self->inbox, &self->win_data[h]);
    self->win_head = (h + 1) % self->win_n;
    if (e != SIM_OK) {
        self->idle_s += done - t0;
        return e;
    }
    *msg = data;
    account_recv(run, self, *msg, t0, done);
    return SIM_OK;
}

int sim_inbox_drain(sim_run_t *run, sim_node_t *self, sim_msg_t **msgs, int max)
{
    if (!run->has_faults)
        return 0;
    int n = 0;
    for (int k = 0; k < self->win_n; k++) {
        int h = (self->win_head + k) % self->win_n;
        double t0 = sim_now();
        /* done: its message; under way: cut; not matched: nothing lost */
        sim_status_t e = sim_wait_for(self->win[h], 0);
        void *data = self->win_data[h];
        self->win_data[h] = NULL;
        self->win[h] = sim_post_recv(self->inbox, &self->win_data[h]);
        if (e == SIM_OK && data && n < max) {
            msgs[n] = data;
            account_recv(run, self, msgs[n++], t0, t0);
        }
    }
    return n;
}

void sim_inbox_close(sim_run_t *run, sim_node_t *self)
{
    if (!run->has_faults && run->real)
        return;
    for (int i = 0; i < self->win_n; i++)
        if (self->win_live[i])             /* not held (a message arrived that nobody takes) */
            sim_wait_for(self->win[i], 0); /* cancels a receive nobody matched */
    self->win_n = 0;
}

sim_status_t sim_recv(sim_run_t *run, sim_node_t *self, sim_box_t from, sim_msg_t **msg)
{
    return sim_recv_for(run, self, from, msg, sim_fault_timeout(run));
}

sim_status_t sim_sendrecv(sim_run_t *run, sim_node_t *self, sim_box_t to, sim_msg_t *out,
                          sim_box_t from, float *dst, int add, sim_msg_t **in)
{
    double t0 = sim_now();
    out->sent_at = t0;
    void *data = NULL;
    sim_comm_t recv = sim_post_recv(from, &data);
    sim_comm_t send = sim_post_send(to, out, (long)out->bytes);
    /* the receive first, and its payload read at once: its sender may go on as soon as
     * it is woken, and it is woken at the same instant as this wait returns */
    sim_status_t er = sim_wait_for(recv, sim_fault_timeout(run));
    double got = sim_now();
    if (er == SIM_OK) {
        sim_msg_t *m = data;
        if (dst && add)
            run->be->axpy(m->n, 1.0f, m->data, dst + m->offset);
        else if (dst)
            run->be->copy(dst + m->offset, m->data, sizeof(float) * m->n);
        if (in)
            *in = m;
        account_recv(run, self, m, t0, got);
    } else {
        self->idle_s += got - t0;
    }
    double t1 = sim_now();
    sim_status_t es = sim_wait_for(send, sim_fault_timeout(run));
    self->comm_s += sim_now() - t1;
    sim_record_interval(run, self, SIM_STATE_COMM, t1, sim_now());
    if (es == SIM_OK)
        account_send(run, self, out);
    /* no yield: within a collective the next exchange protects what was sent; the
     * collective yields once at its end (sim_exchange_done) */
    return er != SIM_OK ? er : es;
}

void sim_comm_wait(sim_run_t *run, sim_node_t *self, double seconds)
{
    if (!(seconds > 0))
        return;
    double t0 = sim_now();
    sim_sleep(seconds);
    double t1 = sim_now();
    self->comm_s += t1 - t0;
    sim_record_interval(run, self, SIM_STATE_COMM, t0, t1);
}

/* Posts count receives on one mailbox. */
static void recv_post(sim_box_t from, int count, sim_comm_t *comms, void **data)
{
    for (int i = 0; i < count; i++) {
        data[i] = NULL;
        comms[i] = sim_post_recv(from, &data[i]);
    }
}

/* Waits for posted receives and accounts for them: waiting until the last sender started
 * is idle, the rest is transfer. */
static sim_status_t recv_finish(sim_run_t *run, sim_node_t *self, int count, sim_comm_t *comms,
                                void **data, sim_msg_t **msgs, double t0, double timeout)
{
    sim_status_t worst = SIM_OK;
    for (int i = 0; i < count; i++) {
        double left = t0 + timeout - sim_now();
        sim_status_t e = sim_wait_for(comms[i], left > 0 ? left : 0);
        if (e != SIM_OK)
            worst = e;
    }
    double done = sim_now(), last_sent = t0, bytes = 0.0;
    for (int i = 0; i < count; i++) {
        msgs[i] = data[i];
        if (!msgs[i])
            continue;
        if (msgs[i]->sent_at > last_sent)
            last_sent = msgs[i]->sent_at;
        bytes += msgs[i]->bytes;
        run->msgs_recv++;
        /* on the wire from its send or the receive's post, whichever came later */
        double on = msgs[i]->sent_at > t0 ? msgs[i]->sent_at : t0;
        run->msg_flight_s += done > on ? done - on : 0;
        sim_record_traffic_of(run, msgs[i]->sender, self, msgs[i]->src, msgs[i]->bytes);
    }
    if (last_sent > done)
        last_sent = done;
    self->idle_s += last_sent - t0;
    self->comm_s += done - last_sent;
    self->bytes_recv += bytes;
    sim_record_interval(run, self, SIM_STATE_IDLE, t0, last_sent);
    sim_record_interval(run, self, SIM_STATE_COMM, last_sent, done);
    for (int i = 0; i < count; i++)
        if (msgs[i])
            sim_record_message(run, msgs[i]->sender, self, msgs[i]->sent_at, last_sent, done,
                               msgs[i]->bytes);
    return worst;
}

static sim_status_t send_all(sim_run_t *run, sim_node_t *self, int count, sim_box_t *boxes,
                             sim_msg_t **msgs, sim_comm_t *comms)
{
    double t0 = sim_now();
    for (int i = 0; i < count; i++) {
        msgs[i]->sent_at = t0;
        comms[i] = sim_post_send(boxes[i], msgs[i], (long)msgs[i]->bytes);
    }
    sim_status_t worst = SIM_OK;
    for (int i = 0; i < count; i++) {
        sim_status_t e = sim_wait_for(comms[i], sim_fault_timeout(run));
        if (e == SIM_OK)
            account_send(run, self, msgs[i]);
        else
            worst = e;
    }
    self->comm_s += sim_now() - t0;
    sim_record_interval(run, self, SIM_STATE_COMM, t0, sim_now());
    let_receivers_read();
    return worst;
}

/* Scratch arrays of a node for up to n_msgs concurrent communications. */
static sim_comm_t *node_comms(sim_node_t *self, int count)
{
    DT_ASSERT((size_t)count <= self->n_msgs);
    return self->comms;
}

sim_status_t sim_sendv(sim_run_t *run, sim_node_t *self, int count, sim_box_t *boxes,
                       sim_msg_t **msgs)
{
    return send_all(run, self, count, boxes, msgs, node_comms(self, count));
}

sim_status_t sim_recvv_for(sim_run_t *run, sim_node_t *self, sim_box_t from, int count,
                           sim_msg_t **msgs, double timeout)
{
    double t0 = sim_now();
    sim_comm_t *comms = node_comms(self, count);
    recv_post(from, count, comms, self->recv_data);
    return recv_finish(run, self, count, comms, self->recv_data, msgs, t0, timeout);
}

sim_status_t sim_recvv(sim_run_t *run, sim_node_t *self, sim_box_t from, int count,
                       sim_msg_t **msgs)
{
    return sim_recvv_for(run, self, from, count, msgs, sim_fault_timeout(run));
}

sim_status_t sim_sendv_recvv(sim_run_t *run, sim_node_t *self, int n_send, sim_box_t *boxes,
                             sim_msg_t **out, sim_box_t from, int n_recv, sim_msg_t **in)
{
    DT_ASSERT((size_t)(n_send + n_recv) <= self->n_msgs);
    double t0 = sim_now();
    sim_comm_t *recvs = self->comms + n_send;
    recv_post(from, n_recv, recvs, self->recv_data);
    double comm_before = self->comm_s;
    sim_status_t es = send_all(run, self, n_send, boxes, out, self->comms);
    /* the receive accounting below covers the whole wait: do not count the sends twice */
    self->comm_s = comm_before;
    sim_status_t er =
        recv_finish(run, self, n_recv, recvs, self->recv_data, in, t0, sim_fault_timeout(run));
    return es != SIM_OK ? es : er;
}
