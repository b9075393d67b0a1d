/* Server optimizers of federated learning (fedopt.h). Sums in double per coordinate, stored
 * as float, so the result does not depend on the BLAS. */
#include "fedopt.h"

#include <math.h>

const char *const trainer_fedopt_names[] = {"avg", "avgm", "adagrad", "adam", "yogi", NULL};

int trainer_fedopt_slots(trainer_fedopt_kind_t kind)
{
    return kind == TRAINER_FEDOPT_AVG ? 0 : kind == TRAINER_FEDOPT_AVGM ? 1 : 2;
}

void trainer_fedopt_init(const trainer_fedopt_t *o, float *m, float *v, size_t n)
{
    for (size_t i = 0; m && i < n; i++)
        m[i] = 0.0f;
    for (size_t i = 0; v && i < n; i++)
        v[i] = o->tau * o->tau;
}

void trainer_fedopt_step(const trainer_fedopt_t *o, float *w, const float *delta, float *m,
                         float *v, size_t n)
{
    double lr = o->lr, b1 = o->beta1, b2 = o->beta2, tau = o->tau;
    switch (o->kind) {
    case TRAINER_FEDOPT_AVG:
        for (size_t i = 0; i < n; i++)
            w[i] = (float)(w[i] + lr * delta[i]);
        return;
    case TRAINER_FEDOPT_AVGM:
        for (size_t i = 0; i < n; i++) {
            m[i] = (float)(b1 * m[i] + delta[i]);
            w[i] = (float)(w[i] + lr * m[i]);
        }
        return;
    case TRAINER_FEDOPT_ADAGRAD:
    case TRAINER_FEDOPT_ADAM:
    case TRAINER_FEDOPT_YOGI:
        for (size_t i = 0; i < n; i++) {
            double d = delta[i], d2 = d * d, vi = v[i];
            m[i] = (float)(b1 * m[i] + (1.0 - b1) * d);
            if (o->kind == TRAINER_FEDOPT_ADAGRAD)
                vi += d2;
            else if (o->kind == TRAINER_FEDOPT_ADAM)
                vi = b2 * vi + (1.0 - b2) * d2;
            else /* yogi: v moves toward delta^2 by (1 - beta2) delta^2 at most */
                vi -= (1.0 - b2) * d2 * (vi > d2 ? 1.0 : vi < d2 ? -1.0 : 0.0);
            v[i] = (float)vi;
            w[i] = (float)(w[i] + lr * m[i] / (sqrt(v[i]) + tau));
        }
        return;
    }
}

double trainer_fedopt_flops(trainer_fedopt_kind_t kind, size_t n)
{
    static const double per[] = {2, 4, 10, 11, 12}; /* multiply-adds, square root, divide */
    return per[kind] * (double)n;
}
