/* Secure aggregation's cost in a fedavg round (secagg.h says what each step moves and
 * computes). The server side runs the four steps as exchanges with the client hosts; the
 * client side answers one message at a time, so a host serving several clients of a round
 * interleaves their steps as they come. */
#include <math.h>
#include <stdlib.h>

#include "secagg.h"

#define KEY_BYTES 32.0   /* an X25519 public key */
#define SHARE_BYTES 32.0 /* a Shamir share of a 256-bit secret */

static const char *const step_names[SIM_SECAGG_STEPS] = {"advertise keys", "share keys",
                                                         "masked input", "unmasking"};

/* Values a client masks: the model, and SCAFFOLD's control variate with it. */
static double masked_values(const sim_run_t *run)
{
    return (double)run->n_params * (scenario_own(run->sc, "scaffold")->i ? 2.0 : 1.0);
}

/* Expanding one mask of vec values of R bits from AES-CTR and adding it. */
static double mask_flops(double vec, int R)
{
    return vec * (SIM_SECAGG_BYTE_FLOPS * R / 8.0 + 1.0);
}

/* Cryptography as compute on node's host, the same time whatever the time model. */
static void charge(sim_run_t *run, sim_node_t *node, double flops)
{
    sim_charge(run, node, flops, flops / sim_host_speed(node->host));
}

void sim_secagg_init(sim_secagg_t *sa, const sim_run_t *run, int cap)
{
    const scenario_t *sc = run->sc;
    sa->on = scenario_own(sc, "secure_agg")->i;
    sa->threshold = scenario_own(sc, "secagg_threshold")->d;
    sa->bits = (int)scenario_own(sc, "secagg_bits")->l;
    sa->vec = masked_values(run);
    sa->cap = cap;
    if (!sa->on)
        return;
    sa->members = dt_calloc((size_t)cap, sizeof(int));
    sa->to = dt_calloc((size_t)cap, sizeof(sim_box_t));
    sa->out = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    sa->in = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
    sa->posted = dt_calloc((size_t)cap, sizeof(sim_comm_t));
    sa->drained = dt_calloc((size_t)cap, sizeof(sim_msg_t *));
}

void sim_secagg_free(sim_secagg_t *sa)
{
    free(sa->members);
    free(sa->to);
    free(sa->out);
    free(sa->in);
    free(sa->posted);
    free(sa->drained);
}

int sim_secagg_threshold(double threshold, int n)
{
    int t = (int)floor(threshold * n + 1e-9) + 1;
    return t < n ? t : n;
}

int sim_secagg_element_bits(int bits, long n)
{
    int extra = 0;
    while ((1L << extra) < n)
        extra++;
    return bits + extra;
}

static double masked_bytes(double m, int element_bits)
{
    return ceil(m * element_bits / 8.0);
}

double sim_secagg_client_bytes(long n, double m, int bits)
{
    double peers = (double)(n - 1);
    return 2 * KEY_BYTES             /* ADVERTISE: up */
           + peers * 2 * KEY_BYTES   /* SHARE: the others' keys down */
           + peers * 2 * SHARE_BYTES /* SHARE: ciphertexts up */
           + peers * 2 * SHARE_BYTES /* MASKED: the others' ciphertexts down */
           + masked_bytes(m, sim_secagg_element_bits(bits, n)) /* MASKED: up */
           + ceil((double)n / 8)                               /* UNMASK: the survivors down */
           + peers * SHARE_BYTES;                              /* UNMASK: shares up */
}

/* What an exchange of one step keeps (sim_fl_accept_fn). */
typedef struct step_ctx {
    int tag;
    long round;
} step_ctx_t;

/* An answer of this step of this round, while fewer than need came; else a `late` row. */
static int accept_answer(sim_run_t *run, const sim_msg_t *m, int full, void *ctx)
{
    const step_ctx_t *c = ctx;
    if (m->step == c->round && m->tag == c->tag && !full)
        return 1;
    sim_fault_log(run, "late", run->workers[m->from].name,
                  "%s of client %d for round %ld dropped in round %ld's %s",
                  m->tag >= 1 && m->tag <= SIM_SECAGG_STEPS ? step_names[m->tag - 1] : "update",
                  m->flag, m->step, c->round, step_names[c->tag - 1]);
    return 0;
}

/* Sends sa->out[i] to the hosts of sa->members[i] (i < n) and gathers their answers of
 * `tag` into sa->in[], sorted by client: every one on a healthy run; with faults, until
 * `need` came, or `until` if finite, or faults.timeout of silence. Returns how many came,
 * -1 when a healthy run's exchange failed. */
static int exchange(sim_run_t *run, sim_node_t *node, sim_secagg_t *sa, int n, int tag, int need,
                    double until, long round)
{
    int hosts = run->n_workers;
    for (int i = 0; i < n; i++) {
        sa->to[i] = run->workers[sa->members[i] % hosts].inbox;
        sa->out[i]->tag = tag;
        sa->out[i]->flag = sa->members[i];
        sa->out[i]->step = round;
    }
    int got = n;
    if (!run->has_faults) {
        if (n > 0 &&
            sim_sendv_recvv(run, node, n, sa->to, sa->out, node->inbox, n, sa->in) != SIM_OK)
            return -1;
    } else {
        step_ctx_t ctx = {.tag = tag, .round = round};
        got = sim_fl_gather(run, node, n, sa->to, sa->out, sa->posted, sa->in, need, until,
                            sa->drained, sa->cap, accept_answer, &ctx);
    }
    qsort(sa->in, (size_t)got, sizeof(sim_msg_t *), sim_fl_by_client);
    return got;
}

/* The clients that answered become the members; a header each for the next step. */
static void next_step(sim_node_t *node, sim_secagg_t *sa, int got)
{
    for (int i = 0; i < got; i++) {
        sa->members[i] = sa->in[i]->flag;
        sa->out[i] = sim_msg_next(node);
    }
}

/* Fewer than t answers: the round fails. */
static int too_few(sim_run_t *run, sim_node_t *node, int got, int had, int t, int step, long round)
{
    if (got >= t)
        return 0;
    sim_fault_log(run, "secagg", node->name,
                  "round %ld failed at %s: %d of %d client%s answered, threshold %d", round,
                  step_names[step], got, had, had == 1 ? "" : "s", t);
    return 1;
}

int sim_secagg_round(sim_run_t *run, sim_node_t *node, sim_secagg_t *sa, int n, sim_msg_t **tasks,
                     int need, double until, long round, sim_msg_t **updates)
{
    if (n < 1)
        return 0;
    int t = sim_secagg_threshold(sa->threshold, n);
    int R = sim_secagg_element_bits(sa->bits, n);
    const sim_msg_t model = *tasks[0]; /* what MASKED carries again (not counted) */
    for (int i = 0; i < n; i++) {
        sa->members[i] = tasks[i]->flag;
        sa->out[i] = tasks[i];
    }
    int n1 = exchange(run, node, sa, n, SIM_SECAGG_ADVERTISE, n, INFINITY, round);
    if (n1 < 0 || too_few(run, node, n1, n, t, 0, round))
        return n1 < 0 ? -1 : 0;
    next_step(node, sa, n1);
    for (int i = 0; i < n1; i++) {
        sa->out[i]->bytes = (n1 - 1) * 2 * KEY_BYTES;
        sa->out[i]->count = n1;
        sa->out[i]->count2 = t;
    }
    int n2 = exchange(run, node, sa, n1, SIM_SECAGG_SHARE, n1, INFINITY, round);
    if (n2 < 0 || too_few(run, node, n2, n1, t, 1, round))
        return n2 < 0 ? -1 : 0;
    next_step(node, sa, n2);
    for (int i = 0; i < n2; i++) {
        sim_msg_t *m = sa->out[i];
        m->data = model.data;
        m->n = model.n;
        m->aux = model.aux;
        m->bytes = (n2 - 1) * 2 * SHARE_BYTES;
        m->count = n2;
        m->count2 = R;
    }
    int want = need < n2 ? need : n2;
    int n3 = exchange(run, node, sa, n2, SIM_SECAGG_MASKED, want, until, round);
    if (n3 < 0)
        return -1;
    if (n3 < want)
        sim_fault_log(run, "deadline", node->name,
                      "round %ld: %d of %d masked input%s (%d sampled) by %s", round, n3, want,
                      want == 1 ? "" : "s", n, isfinite(until) ? "the deadline" : "the timeout");
    if (too_few(run, node, n3, n2, t, 2, round))
        return 0;
    for (int i = 0; i < n3; i++)
        updates[i] = sa->in[i];
    next_step(node, sa, n3);
    for (int i = 0; i < n3; i++) {
        sa->out[i]->bytes = ceil(n2 / 8.0);
        sa->out[i]->count = n2;
    }
    int n5 = exchange(run, node, sa, n3, SIM_SECAGG_UNMASK, n3, INFINITY, round);
    if (n5 < 0 || too_few(run, node, n5, n3, t, 3, round))
        return n5 < 0 ? -1 : 0;
    /* rebuild n2 secrets from t shares each (Lagrange weights once), then remove every
     * survivor's own mask and, for each client that left after SHARE, its pairwise mask
     * with every survivor (a key agreement and a stream each) */
    double left = n2 - n3;
    charge(run, node,
           SIM_SECAGG_FIELD_FLOPS * ((double)t * t + (double)n2 * t) +
               left * n3 * SIM_SECAGG_KA_FLOPS + (n3 + left * n3) * mask_flops(sa->vec, R));
    return n3;
}

const char *sim_secagg_step_name(int step)
{
    return step >= 0 && step < SIM_SECAGG_STEPS ? step_names[step] : "?";
}

int sim_secagg_step(const sim_msg_t *m)
{
    return m->tag >= SIM_SECAGG_ADVERTISE && m->tag <= SIM_SECAGG_UNMASK ? m->tag - 1 : -1;
}

static sim_msg_t *answer(sim_node_t *node, const sim_msg_t *m, double bytes)
{
    sim_msg_t *a = sim_msg_next(node);
    a->tag = m->tag;
    a->flag = m->flag;
    a->step = m->step;
    a->bytes = bytes;
    return a;
}

sim_msg_t *sim_secagg_answer(sim_run_t *run, sim_node_t *node, const sim_msg_t *m)
{
    double peers = (double)(m->count - 1);
    switch (m->tag) {
    case SIM_SECAGG_ADVERTISE: /* two key pairs: one to encrypt shares, one to mask */
        charge(run, node, 2 * SIM_SECAGG_KA_FLOPS);
        return answer(node, m, 2 * KEY_BYTES);
    case SIM_SECAGG_SHARE: /* an encryption key with each peer; its two secrets split into
                            * m->count shares by polynomials of degree t - 1; encryption */
        charge(run, node,
               peers * SIM_SECAGG_KA_FLOPS +
                   2.0 * (double)m->count * (double)m->count2 * SIM_SECAGG_FIELD_FLOPS +
                   peers * 2 * SHARE_BYTES * SIM_SECAGG_BYTE_FLOPS);
        return answer(node, m, peers * 2 * SHARE_BYTES);
    case SIM_SECAGG_UNMASK: /* the shares were decrypted with MASKED */
        return answer(node, m, peers * SHARE_BYTES);
    default:
        return NULL;
    }
}

void sim_secagg_mask(sim_run_t *run, sim_node_t *node, const sim_msg_t *m, sim_msg_t *up)
{
    double peers = (double)(m->count - 1);
    int R = (int)m->count2;
    double vec = masked_values(run);
    /* decrypt the peers' shares, agree a masking key with each, expand and add the n2 masks
     * (one per peer and its own) */
    charge(run, node,
           peers * 2 * SHARE_BYTES * SIM_SECAGG_BYTE_FLOPS + peers * SIM_SECAGG_KA_FLOPS +
               mask_flops((double)m->count * vec, R));
    up->tag = SIM_SECAGG_MASKED;
    up->bytes = masked_bytes(vec, R);
}
