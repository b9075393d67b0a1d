/* A ranked row's figures (cli_plan_row_compute): throughput, memory, energy, cost and
 * goodput under failures, from a run's step time and the plan's basis; the goodput
 * options (cli_plan_goodput_option). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_goodput.h"
#include "cli_util.h"
#include "goodput.h"
#include "plan_impl.h"
#include "scenario.h"

void cli_plan_goodput_defaults(cli_plan_goodput_t *g)
{
    sim_goodput_in_t in;
    sim_goodput_defaults(&in);
    *g = (cli_plan_goodput_t){.mtbf_device_s = in.mtbf_device_s,
                              .ckpt_bw_device = in.ckpt_bw_device,
                              .restart_s = in.restart_s};
}

/* The same parsing and ranges as dtsim goodput's options of these names. */
int cli_plan_goodput_option(cli_plan_goodput_t *g, const char *option, const char *value)
{
    double v;
    dt_err_t err;
    if (!strcmp(option, "ckpt-bandwidth")) {
        if (scenario_parse_bandwidth(value, &v, &err) || !(v > 0) || !isfinite(v))
            return cli_usage_error("plan", "--ckpt-bandwidth %s: expected a positive rate "
                                           "(122MBps, 1Gbps)", value);
        g->ckpt_bw_device = v;
        return 0;
    }
    int mtbf = !strcmp(option, "mtbf");
    if (cli_parse_duration(value, &v) || (mtbf && !(v > 0)))
        return cli_usage_error("plan", "--%s %s: expected %s", option, value,
                               mtbf ? "a positive time (50677h)" : "a time (10min, 600s)");
    *(mtbf ? &g->mtbf_device_s : &g->restart_s) = v;
    return 0;
}

void cli_plan_row_compute(const cli_plan_basis_t *b, double step_s, double samples_s,
                          double mem_bytes, double joules, double dollars_per_sample,
                          cli_plan_row_t *r)
{
    double tps = b->tokens_per_sample > 0 ? b->tokens_per_sample : NAN;
    double steps = b->tokens > 0 ? b->tokens / (tps * b->global_batch) : NAN;
    r->step_s = step_s;
    r->samples_s = samples_s;
    r->tokens_s = samples_s * tps;
    r->mem_gb = mem_bytes / 1e9;
    r->headroom_gb = (b->capacity - mem_bytes) / 1e9;
    r->tflops_dev = b->flops_per_sample * b->global_batch / step_s / b->devices / 1e12;
    r->peak_pct = 100 * r->tflops_dev * 1e12 / b->peak_flops;
    r->kj_step = joules / 1e3;
    r->per_1k_samples = 1000 * dollars_per_sample;
    r->per_m_tokens = 1e6 * dollars_per_sample / tps;
    r->days = steps * step_s / 86400;
    r->mwh = steps * joules / 3.6e9;
    r->dollars = b->tokens / tps * dollars_per_sample;
    /* goodput: Daly's interval for this layout's step time and the whole model's checkpoint,
     * written by all devices at once (scenario/goodput.h) */
    sim_goodput_in_t in;
    sim_goodput_defaults(&in);
    in.devices = b->devices;
    in.mtbf_device_s = b->goodput.mtbf_device_s;
    in.ckpt_bw_device = b->goodput.ckpt_bw_device;
    in.restart_s = b->goodput.restart_s;
    in.ckpt_bytes = b->ckpt_bytes;
    in.step_s = step_s;
    in.train_s = isnan(r->days) ? 0 : steps * step_s;
    sim_goodput_t g;
    dt_err_t err;
    r->ckpt_steps = 0;
    r->goodput = r->days_fail = r->dollars_fail = NAN;
    if (!(b->ckpt_bytes > 0) || sim_goodput_compute(&in, &g, &err) != DT_OK)
        return; /* a plan stored before plan.ckpt_bytes was: no goodput */
    r->ckpt_steps = g.interval_steps;
    r->goodput = g.goodput;
    /* the lost time is paid for as the useful time is: every device is held throughout */
    r->days_fail = steps * g.step_wall_s / 86400;
    r->dollars_fail = r->dollars / g.goodput;
}

/* x with printf's format into buf; "-" when x is NAN. */
const char *plan_cell(char *buf, size_t n, const char *format, double x)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, format, x);
    return buf;
}
