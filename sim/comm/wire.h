/* Less communication on the wire (strategy.compression, strategy.error_feedback): what a
 * sender's gradient or update becomes before it travels, and how a receiver adds it in.
 *
 * - sync-ps: each worker encodes each shard's slice of its gradient; the shard decodes
 *   and averages (replies stay fp32).
 * - allreduce, topk and qsgd8: each worker encodes its whole gradient once and the encodings
 *   go round a ring all-gather (a sum of sparse or quantized vectors is neither, so they are
 *   not reduced on the way, as in QSGD's and top-k's all-gather implementations); every
 *   worker then decodes all of them in rank order, so the replicas stay identical.
 * - allreduce, fp16: the all-reduce itself moves halves: every slice a collective sends is
 *   rounded to fp16 in place (the sender keeps what it sent) and travels at 2 bytes per
 *   element, partial sums included, as NCCL's fp16 all-reduce does.
 * - fedavg: each client encodes its update (local model - global model); the server adds
 *   the decoded updates, weighted, to the global model.
 *
 * A message carries the real encoding (msg->packed, msg->bytes of it), owned by the sender
 * like every payload. Error feedback keeps, per sender (fedavg: per client), the part of
 * each encoded vector the encoding lost and adds it to the next one. Encoding and decoding
 * run on the host: on the cuda device the vectors go through host memory. A timing-only
 * run encodes nothing: its messages have the encoding's size and no payload. */
#ifndef DTSIM_SIM_CODEC_H
#define DTSIM_SIM_CODEC_H

#include "compress.h"
#include "run.h"

/* A node's encoding state, created on first use, freed with the run. */
typedef struct sim_codec_node {
    float *x;        /* (n_params) host: the vector being encoded */
    float *work;     /* (n_params) host: top-k selection scratch */
    float *residual; /* (n_params) host: error feedback of this sender, or NULL */
    float *u;        /* (n_params) host: local momentum (momentum correction), or NULL */
    float *dev;      /* (n_params) dev: a decoded vector on its way to the device, or NULL
                        (host-memory backend) */
    uint8_t *packed; /* encodings this node has sent or gathered */
    size_t packed_cap;
    size_t *lens;      /* (n_workers) all-gather: bytes of each member's encoding */
    trainer_rng_t rng; /* qsgd8 rounding */
} sim_codec_node_t;

/* The run compresses what its workers (clients) send. */
int sim_codec_on(const sim_run_t *run);
/* fp16 moves inside the all-reduce's own messages (allreduce with compression = fp16). */
int sim_codec_wire_fp16(const sim_run_t *run);
/* The strategy's gradient all-reduces carry its compression in their own messages (the
 * allreduce strategy says so as it deploys): sim_codec_wire_fp16 then holds for fp16. */
void sim_codec_in_allreduce(sim_run_t *run);

/* The node's state (made on first use, freed with the run); its packed buffer holds at
 * least `bytes`. */
sim_codec_node_t *sim_codec_node(sim_run_t *run, sim_node_t *node, size_t bytes);

/* Encodes v[off .. off+len) (dev) into out and returns the bytes (trainer_codec_bytes).
 * With residual (host, indexed like v: the sender's error feedback) the encoded vector is
 * v + residual, and residual becomes what the encoding lost of it. */
size_t sim_codec_encode(sim_run_t *run, sim_node_t *node, const float *v, size_t off, size_t len,
                        float *residual, uint8_t *out);
/* A message of v's slice [off, off+len) encoded into out (see sim_codec_encode): packed,
 * no float payload. */
sim_msg_t *sim_codec_msg(sim_run_t *run, sim_node_t *node, const float *v, size_t off, size_t len,
                         float *residual, uint8_t *out, long step);
/* dst[m->offset ..] (dev) += alpha * the payload of m, packed or plain floats. */
void sim_msg_add(sim_run_t *run, sim_node_t *self, const sim_msg_t *m, float *dst, float alpha);

/* A collective's outgoing slice under fp16 on the wire: buf[m->offset, + m->n) is rounded to
 * fp16 in place and m travels at 2 bytes per element (no-op otherwise). */
void sim_codec_wire(sim_run_t *run, sim_node_t *self, float *buf, sim_msg_t *m);

#endif
