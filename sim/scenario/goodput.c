/* Goodput of a job that checkpoints and restarts (goodput.h): the job's MTBF, a
 * checkpoint's write time, Young's and Daly's intervals, and the expected shares of wall
 * time under Daly's model. Arithmetic only; sim/engine/goodput_sim.c is the simulation that
 * checks it. */
#include "goodput.h"

#include <math.h>

void sim_goodput_defaults(sim_goodput_in_t *in)
{
    *in = (sim_goodput_in_t){
        .devices = 1,
        .mtbf_device_s = SIM_GOODPUT_MTBF_DEVICE_H * 3600.0,
        .ckpt_bytes = 0,
        .ckpt_bw_device = SIM_GOODPUT_CKPT_BW_DEVICE,
        .ckpt_bw_total = 0,
        .restart_s = SIM_GOODPUT_RESTART_S,
        .step_s = 0,
        .train_s = 0,
    };
}

double sim_goodput_young(double ckpt_s, double mtbf_s)
{
    return sqrt(2.0 * ckpt_s * mtbf_s);
}

/* Daly 2006's higher-order estimate of the optimum of his complete model: sqrt(2 delta M)
 * [1 + x/3 + x^2/9] - delta with x = sqrt(delta / 2M), for delta < 2M; M beyond (Daly's
 * choice there: a checkpoint that long fails about as often as it completes). */
double sim_goodput_daly(double ckpt_s, double mtbf_s)
{
    if (ckpt_s >= 2.0 * mtbf_s)
        return mtbf_s;
    double x = sqrt(ckpt_s / (2.0 * mtbf_s));
    return sqrt(2.0 * ckpt_s * mtbf_s) * (1.0 + x / 3.0 + x * x / 9.0) - ckpt_s;
}

/* Expected wall time of one segment (tau of work, then a checkpoint), failures and restarts
 * included: M e^(R/M) (e^(s/M) - 1), s = tau + delta (goodput.h); expm1 keeps its digits
 * when s is small against M. */
static double segment_wall(double interval_s, double ckpt_s, double restart_s, double mtbf_s)
{
    return mtbf_s * exp(restart_s / mtbf_s) * expm1((interval_s + ckpt_s) / mtbf_s);
}

double sim_goodput_fraction(double interval_s, double ckpt_s, double restart_s, double mtbf_s)
{
    return interval_s / segment_wall(interval_s, ckpt_s, restart_s, mtbf_s);
}

double sim_goodput_ckpt_bytes(const scenario_t *sc, double params)
{
    return params * (scenario_value_bytes(sc) + scenario_optimizer_bytes(sc));
}

/* A positive finite number (zero too when zero_ok). */
static int bad(double v, int zero_ok)
{
    return !isfinite(v) || v < 0 || (!zero_ok && v == 0);
}

dt_status sim_goodput_compute(const sim_goodput_in_t *in, sim_goodput_t *out, dt_err_t *err)
{
    if (bad(in->devices, 0) || in->devices < 1)
        return dt_err_input(err, "devices: %g is not a count of at least 1", in->devices);
    if (bad(in->mtbf_device_s, 0))
        return dt_err_input(err, "mtbf: %g s is not a positive time", in->mtbf_device_s);
    if (bad(in->ckpt_bytes, 0))
        return dt_err_input(err, "checkpoint size: %g bytes is not a positive size",
                            in->ckpt_bytes);
    if (bad(in->ckpt_bw_device, 0) || bad(in->ckpt_bw_total, 1))
        return dt_err_input(err, "checkpoint bandwidth: not a positive rate");
    if (bad(in->restart_s, 1))
        return dt_err_input(err, "restart: %g s is not a time", in->restart_s);
    if (bad(in->step_s, 1))
        return dt_err_input(err, "step time: %g s is not a time", in->step_s);
    if (bad(in->train_s, 1))
        return dt_err_input(err, "training time: %g s is not a time", in->train_s);

    sim_goodput_t g = {0};
    g.mtbf_s = in->mtbf_device_s / in->devices;
    double bw = in->ckpt_bw_total > 0 ? in->ckpt_bw_total : in->ckpt_bw_device * in->devices;
    g.ckpt_s = in->ckpt_bytes / bw;
    g.young_s = sim_goodput_young(g.ckpt_s, g.mtbf_s);
    g.daly_s = sim_goodput_daly(g.ckpt_s, g.mtbf_s);
    g.interval_s = g.daly_s;
    if (in->step_s > 0) {
        /* a checkpoint can only be taken between steps */
        double steps = round(g.daly_s / in->step_s);
        if (steps > 1e15)
            return dt_err_input(err, "step time: %g s makes an interval of %g steps", in->step_s,
                                steps);
        g.interval_steps = steps < 1 ? 1 : (long)steps;
        g.interval_s = (double)g.interval_steps * in->step_s;
    }
    double M = g.mtbf_s, s = g.interval_s + g.ckpt_s, R = in->restart_s;
    double wall = segment_wall(g.interval_s, g.ckpt_s, R, M);
    if (!isfinite(wall) || wall <= 0)
        return dt_err_input(err,
                            "mtbf: %g s for the job is far too short for a checkpoint of "
                            "%g s and a restart of %g s",
                            M, g.ckpt_s, R);
    g.goodput = g.interval_s / wall;
    g.ckpt_share = g.ckpt_s / wall;
    g.rework_share = (M * expm1(s / M) - s) / wall;
    g.restart_share = expm1(s / M) * M * expm1(R / M) / wall;
    if (in->step_s > 0)
        g.step_wall_s = in->step_s / g.goodput;
    if (in->train_s > 0) {
        g.wall_s = in->train_s / g.goodput;
        g.lost_s = g.wall_s - in->train_s;
        g.failures = g.wall_s / M;
    }
    *out = g;
    return DT_OK;
}

/* bytes_per_param: sim_goodput_ckpt_bytes(sc, 1) of the layout's scenario; train_s 0 leaves
 * the totals out. */
dt_status sim_goodput_layout(double devices, double step_s, double params, double bytes_per_param,
                             double train_s, sim_goodput_t *out, dt_err_t *err)
{
    sim_goodput_in_t in;
    sim_goodput_defaults(&in);
    in.devices = devices;
    in.step_s = step_s;
    in.ckpt_bytes = params * bytes_per_param;
    in.train_s = train_s;
    return sim_goodput_compute(&in, out, err);
}
