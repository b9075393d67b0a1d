/* The cost of secure aggregation (Bonawitz et al. 2017, "Practical Secure Aggregation for
 * Privacy-Preserving Machine Learning", the honest-but-curious protocol) in a fedavg round:
 * its four steps as real messages between the server and the client hosts, their bytes,
 * the clients' and the server's cryptography as compute, and clients leaving between steps.
 * It changes time and bytes, not weights: the server still averages the models it received
 * in floating point (the masks would cancel in the sum).
 *
 * The steps, each a message from the server and an answer from each client still in:
 *   ADVERTISE  server: the task (the global model)     client: its two public keys (2 x 32 B)
 *   SHARE      server: the n1 - 1 other clients' keys  client: n1 - 1 ciphertexts, each a
 *              (2 x 32 B each)                         Shamir share of its two secrets (64 B)
 *   MASKED     server: the n2 - 1 ciphertexts for it   client: trains, agrees a key with each
 *              (64 B each)                             peer, adds n2 masks (AES-CTR streams),
 *                                                      sends the masked model: m x R bits
 *   UNMASK     server: who sent a masked model         client: a share of each peer's secret
 *              (a bitmap of n2 bits)                   (32 B each)
 * with n1, n2 the clients that answered the step before and R = secagg_bits + ceil(log2 n)
 * bits an element, so that the sum of n values cannot wrap. A step needs t answers, t =
 * floor(secagg_threshold x n) + 1 (at most n) for the n clients the round began with: fewer
 * and the round fails (a `secagg` fault row, the global model unchanged). The server then
 * rebuilds each secret from t shares and removes every mask, the pairwise masks of the
 * clients that left after SHARE included (a key agreement and a stream per survivor each).
 * Public keys and shares are 256 bits as in the paper's accounting (encryption overhead
 * left out), so each client moves 2n keys, 5(n - 1) shares and n bits besides its masked
 * model: the paper's 1.73x expansion for 2^10 clients and 2^20 16-bit values, 1.98x for
 * 2^14 and 2^24 (tests/test_sim.c checks both). */
#ifndef DTSIM_SECAGG_H
#define DTSIM_SECAGG_H

#include "strategy.h"

enum {
    SIM_SECAGG_ADVERTISE = 1, /* message tags (sim_msg_t.tag); tag - 1 is the step */
    SIM_SECAGG_SHARE,
    SIM_SECAGG_MASKED,
    SIM_SECAGG_UNMASK,
    SIM_SECAGG_STEPS = 4,
};

/* What the cryptography costs, in FLOP-equivalents of the host that does it (so a slow
 * device takes longer), from one core of the development machine: OpenSSL 3.0's
 * `openssl speed` gives 27,280 X25519 agreements/s and 8.4 GB/s of AES-128-CTR, OpenBLAS
 * sgemm 75 GFLOP/s (dtsim bench trainer). */
#define SIM_SECAGG_KA_FLOPS 2.75e6 /* one X25519 key agreement or key pair */
#define SIM_SECAGG_BYTE_FLOPS 9.0  /* one byte of AES-CTR keystream (masks, encryption) */
#define SIM_SECAGG_FIELD_FLOPS 4e3 /* one multiply-add modulo a 256-bit prime (Shamir) */

typedef struct sim_secagg {
    int on;           /* strategy.secure_agg */
    double threshold; /* strategy.secagg_threshold */
    int bits;         /* strategy.secagg_bits */
    double vec;       /* elements masked: n_params, twice with SCAFFOLD's control variate */
    int cap;          /* clients a round can begin with */
    int *members;     /* (cap) the clients still in, in order */
    sim_box_t *to;    /* (cap) */
    sim_msg_t **out, **in, **drained;
    sim_comm_t *posted;
} sim_secagg_t;

/** Reads fedavg's secure_agg keys; cap: the most clients a round begins with. */
void sim_secagg_init(sim_secagg_t *sa, const sim_run_t *run, int cap);
void sim_secagg_free(sim_secagg_t *sa);
/** t for a round that begins with n clients. */
int sim_secagg_threshold(double threshold, int n);
/** Bits of a masked element for n clients' sums of `bits`-bit values. */
int sim_secagg_element_bits(int bits, long n);
/** Bytes one client moves in a round of n clients where none leaves, its masked vector of m
 * elements included and the task (the model) not. */
double sim_secagg_client_bytes(long n, double m, int bits);

/** The server's round: tasks[0..n) (flag the client, data the global model) go out as
 * ADVERTISE, then SHARE, MASKED and UNMASK to the clients still in. MASKED waits for `need`
 * models (with faults, until `until` when finite, else faults.timeout of silence). Returns
 * the masked models (updates[0..), sorted by client), 0 when the round failed, -1 when the
 * run did (healthy runs only). */
int sim_secagg_round(sim_run_t *run, sim_node_t *node, sim_secagg_t *sa, int n, sim_msg_t **tasks,
                     int need, double until, long round, sim_msg_t **updates);

/** A client host: the step (0..3) a message asks of it, -1 if it is no secure aggregation's. */
int sim_secagg_step(const sim_msg_t *m);
/** "advertise keys", "share keys", "masked input", "unmasking". */
const char *sim_secagg_step_name(int step);
/** A client host's answer to ADVERTISE, SHARE or UNMASK (its cryptography charged). */
sim_msg_t *sim_secagg_answer(sim_run_t *run, sim_node_t *node, const sim_msg_t *m);
/** A client host after training on MASKED: charges the masks and makes `up` (the model) the
 * masked input. */
void sim_secagg_mask(sim_run_t *run, sim_node_t *node, const sim_msg_t *m, sim_msg_t *up);

#endif
