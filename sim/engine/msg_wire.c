/* The engine's message header on a real wire (real mode, transport.h's codec): the fields of
 * a sim_msg_t, then its floats (data, aux) and its encoded bytes (packed), each present or
 * not. Pointers do not travel: the sending node and its host are named by role and rank and
 * found again among the receiving process's copies of every node (each process builds the
 * whole run, real.c); the payload pointers point into the received buffer. */
#include "run.h"

#include <string.h>

typedef struct wire {
    int32_t from, sender_role, sender_rank, src_role, src_rank; /* role: 0 none, 1 worker,
                                                                   2 server */
    int32_t flag, tag, has_data, has_aux;
    int64_t step, count, count2;
    uint64_t offset, n, packed;
    double sent_at, bytes, weight;
} wire_t;

/* The header region: room for the wire header now and the sim_msg_t built over it later,
 * keeping the floats behind it aligned. */
#define HEAD                                                                                       \
    (((sizeof(wire_t) > sizeof(sim_msg_t) ? sizeof(wire_t) : sizeof(sim_msg_t)) + 15) / 16 * 16)

static void role_of(const sim_node_t *n, int32_t *role, int32_t *rank)
{
    *role = !n ? 0 : strcmp(n->role, "server") ? 1 : 2;
    *rank = n ? n->rank : 0;
}

static const sim_node_t *node_of(int32_t role, int32_t rank)
{
    const sim_run_t *run = sim_current;
    if (role == 1 && rank >= 0 && rank < run->n_workers)
        return &run->workers[rank];
    if (role == 2 && rank >= 0 && rank < run->n_servers)
        return &run->servers[rank];
    return NULL;
}

/* The node that runs on host h (a message's src when it names no sender). */
static const sim_node_t *node_on(sim_host_t h)
{
    const sim_run_t *run = sim_current;
    for (int i = 0; i < run->n_workers; i++)
        if (run->workers[i].host == h)
            return &run->workers[i];
    for (int i = 0; i < run->n_servers; i++)
        if (run->servers[i].host == h)
            return &run->servers[i];
    return NULL;
}

static size_t packed_bytes(const sim_msg_t *m)
{
    return m->packed ? (size_t)m->bytes : 0;
}

static size_t wire_size(const void *payload)
{
    const sim_msg_t *m = payload;
    size_t floats = (m->data && !m->packed ? m->n : 0) + (m->aux ? m->n : 0);
    return HEAD + sizeof(float) * floats + packed_bytes(m);
}

static void wire_pack(const void *payload, void *buf)
{
    const sim_msg_t *m = payload;
    /* a lazy all-reduce's parts point into the sender's memory: real mode never makes one */
    DT_CHECK(!m->n_parts, "real mode: a message with all-reduce parts cannot travel");
    wire_t w = {
        .from = m->from,
        .flag = m->flag,
        .tag = m->tag,
        .has_data = !m->data    ? 0
                    : m->packed ? 2
                                : 1, /* 2: set but unused */
        .has_aux = m->aux != NULL,
        .step = m->step,
        .count = m->count,
        .count2 = m->count2,
        .offset = m->offset,
        .n = m->n,
        .packed = packed_bytes(m),
        .sent_at = m->sent_at,
        .bytes = m->bytes,
        .weight = m->weight,
    };
    role_of(m->sender, &w.sender_role, &w.sender_rank);
    role_of(m->src ? node_on(m->src) : NULL, &w.src_role, &w.src_rank);
    memset(buf, 0, HEAD);
    memcpy(buf, &w, sizeof w);
    char *p = (char *)buf + HEAD;
    if (w.has_data == 1) {
        memcpy(p, m->data, sizeof(float) * m->n);
        p += sizeof(float) * m->n;
    }
    if (w.has_aux) {
        memcpy(p, m->aux, sizeof(float) * m->n);
        p += sizeof(float) * m->n;
    }
    if (w.packed)
        memcpy(p, m->packed, w.packed);
}

static void *wire_unpack(void *buf, size_t n)
{
    wire_t w;
    DT_ASSERT(n >= HEAD);
    memcpy(&w, buf, sizeof w);
    sim_msg_t *m = buf;
    memset(m, 0, sizeof *m);
    m->from = w.from;
    m->flag = w.flag;
    m->tag = w.tag;
    m->step = w.step;
    m->count = w.count;
    m->count2 = w.count2;
    m->offset = (size_t)w.offset;
    m->n = (size_t)w.n;
    m->sent_at = w.sent_at;
    m->bytes = w.bytes;
    m->weight = w.weight;
    m->sender = node_of(w.sender_role, w.sender_rank);
    const sim_node_t *src = node_of(w.src_role, w.src_rank);
    m->src = src ? src->host : NULL;
    char *p = (char *)buf + HEAD;
    if (w.has_data)
        m->data = (const float *)p; /* 2: a pointer the receiver does not read */
    if (w.has_data == 1)
        p += sizeof(float) * m->n;
    if (w.has_aux) {
        m->aux = (const float *)p;
        p += sizeof(float) * m->n;
    }
    if (w.packed)
        m->packed = (const uint8_t *)p;
    DT_ASSERT((size_t)(p - (char *)buf) + w.packed <= n);
    return m;
}

const sim_payload_codec_t sim_msg_codec = {wire_size, wire_pack, wire_unpack};
