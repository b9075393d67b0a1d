/* Server optimizers of federated learning: the server takes the round's average client
 * update, delta = sum_k p_k w_k - w, as a pseudo-gradient and moves the global model w with
 * it. avg is FedAvg (w += lr delta), avgm FedAvgM (Hsu et al. 2019: m = beta1 m + delta,
 * w += lr m), and adagrad, adam, yogi are FedAdagrad, FedAdam and FedYogi (Reddi et al.
 * 2021, "Adaptive Federated Optimization", Algorithm 2, no bias correction):
 *   m = beta1 m + (1 - beta1) delta
 *   v = v + delta^2                                  (adagrad)
 *   v = beta2 v + (1 - beta2) delta^2                (adam)
 *   v = v - (1 - beta2) delta^2 sign(v - delta^2)    (yogi)
 *   w += lr m / (sqrt(v) + tau),   v starting at tau^2.
 * Host arrays; the server runs it once a round. */
#ifndef DTSIM_FEDOPT_H
#define DTSIM_FEDOPT_H

#include <stddef.h>

typedef enum trainer_fedopt_kind {
    TRAINER_FEDOPT_AVG,
    TRAINER_FEDOPT_AVGM,
    TRAINER_FEDOPT_ADAGRAD,
    TRAINER_FEDOPT_ADAM,
    TRAINER_FEDOPT_YOGI,
} trainer_fedopt_kind_t;

typedef struct trainer_fedopt {
    trainer_fedopt_kind_t kind;
    float lr;    /* server learning rate (eta) */
    float beta1; /* momentum of avgm and of the adaptive kinds' first moment */
    float beta2; /* decay of adam's and yogi's second moment */
    float tau;   /* adaptivity: the second moment's floor, sqrt(v) + tau */
} trainer_fedopt_t;

/* "avg", "avgm", "adagrad", "adam", "yogi", NULL: the kinds' names in enum order. */
extern const char *const trainer_fedopt_names[];

/* Buffers of n floats of state the kind keeps: 0 (avg), 1 (avgm: m), 2 (m and v). */
int trainer_fedopt_slots(trainer_fedopt_kind_t kind);
/* Sets the state before the first round: m (n floats, or NULL) to 0, v (or NULL) to tau^2. */
void trainer_fedopt_init(const trainer_fedopt_t *o, float *m, float *v, size_t n);
/* One server step: w (n) moves with delta (n); m and v (n each; NULL when the kind keeps
 * fewer slots) are the state carried between rounds. */
void trainer_fedopt_step(const trainer_fedopt_t *o, float *w, const float *delta, float *m,
                         float *v, size_t n);
/* FLOPs of one step of n parameters, for the server's simulated time. */
double trainer_fedopt_flops(trainer_fedopt_kind_t kind, size_t n);

#endif
