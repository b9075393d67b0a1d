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

void cli_plan_goodput_defaults(cli_plan_goodput_t *goodput)
{
    sim_goodput_in_t in;
    sim_goodput_defaults(&in);
    *goodput = (cli_plan_goodput_t){.mtbf_device_s = in.mtbf_device_s,
                                    .ckpt_bw_device = in.ckpt_bw_device,
                                    .restart_s = in.restart_s};
}

/* The same parsing and ranges as dtsim goodput's options of these names. */
int cli_plan_goodput_option(cli_plan_goodput_t *goodput, const char *option, const char *value)
{
    double parsed;
    dt_err_t err;
    if (!strcmp(option, "ckpt-bandwidth")) {
        if (scenario_parse_bandwidth(value, &parsed, &err) || !(parsed > 0) || !isfinite(parsed))
            return cli_usage_error("plan",
                                   "--ckpt-bandwidth %s: expected a positive rate "
                                   "(122MBps, 1Gbps)",
                                   value);
        goodput->ckpt_bw_device = parsed;
        return 0;
    }
    int mtbf = !strcmp(option, "mtbf");
    if (cli_parse_duration(value, &parsed) || (mtbf && !(parsed > 0)))
        return cli_usage_error("plan", "--%s %s: expected %s", option, value,
                               mtbf ? "a positive time (50677h)" : "a time (10min, 600s)");
    *(mtbf ? &goodput->mtbf_device_s : &goodput->restart_s) = parsed;
    return 0;
}

void cli_plan_row_compute(const cli_plan_basis_t *basis, double step_s, double samples_s,
                          double mem_bytes, double joules, double dollars_per_sample,
                          cli_plan_row_t *row)
{
    double tps = basis->tokens_per_sample > 0 ? basis->tokens_per_sample : NAN;
    double steps = basis->tokens > 0 ? basis->tokens / (tps * basis->global_batch) : NAN;
    row->step_s = step_s;
    row->samples_s = samples_s;
    row->tokens_s = samples_s * tps;
    row->mem_gb = mem_bytes / 1e9;
    row->headroom_gb = (basis->capacity - mem_bytes) / 1e9;
    row->tflops_dev =
        basis->flops_per_sample * basis->global_batch / step_s / basis->devices / 1e12;
    row->peak_pct = 100 * row->tflops_dev * 1e12 / basis->peak_flops;
    row->kj_step = joules / 1e3;
    row->per_1k_samples = 1000 * dollars_per_sample;
    row->per_m_tokens = 1e6 * dollars_per_sample / tps;
    row->days = steps * step_s / 86400;
    row->mwh = steps * joules / 3.6e9;
    row->dollars = basis->tokens / tps * dollars_per_sample;
    /* goodput: Daly's interval for this layout's step time and the whole model's checkpoint,
     * written by all devices at once (scenario/goodput.h) */
    sim_goodput_in_t in;
    sim_goodput_defaults(&in);
    in.devices = basis->devices;
    in.mtbf_device_s = basis->goodput.mtbf_device_s;
    in.ckpt_bw_device = basis->goodput.ckpt_bw_device;
    in.restart_s = basis->goodput.restart_s;
    in.ckpt_bytes = basis->ckpt_bytes;
    in.step_s = step_s;
    in.train_s = isnan(row->days) ? 0 : steps * step_s;
    sim_goodput_t result;
    dt_err_t err;
    row->ckpt_steps = 0;
    row->goodput = row->days_fail = row->dollars_fail = NAN;
    if (!(basis->ckpt_bytes > 0) || sim_goodput_compute(&in, &result, &err) != DT_OK)
        return; /* a plan stored before plan.ckpt_bytes was: no goodput */
    row->ckpt_steps = result.interval_steps;
    row->goodput = result.goodput;
    /* the lost time is paid for as the useful time is: every device is held throughout */
    row->days_fail = steps * result.step_wall_s / 86400;
    row->dollars_fail = row->dollars / result.goodput;
}

/* value with printf's format into buf; "-" when it is NAN. */
const char *plan_cell(char *buf, size_t n, const char *format, double value)
{
    if (isnan(value))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, format, value);
    return buf;
}

/* ---- ownership ---------------------------------------------------------------------------
 * The defaults, each an option (help.txt and sim/docs/planning.md give their sources): five
 * years of amortisation; a PUE of 1.2; 575 W of host a device (a DGX H100's 10.2 kW at most
 * less its 8 x 700 W GPUs, over 8); $0.08 a kWh. No purchase price: none is published. */
void cli_plan_capex_defaults(cli_plan_capex_t *capex)
{
    *capex = (cli_plan_capex_t){.purchase = NAN,
                                .amortize_s = 5 * 365.25 * 86400,
                                .pue = 1.2,
                                .host_w = 575,
                                .kwh_price = 0.08};
}

void cli_plan_capex_compute(const cli_plan_capex_t *capex, long devices, double purchase,
                            double tokens, cli_plan_row_t *row)
{
    double n = (double)devices, step = row->step_s;
    row->devices = devices;
    /* at the wall: what the run's devices and links drew, the hosts beside them, x PUE */
    double it_w = row->kj_step * 1e3 / step;
    double site_w = (it_w + n * capex->host_w) * capex->pue;
    row->site_kj = site_w * step / 1e3;
    /* an hour of the cluster: the devices written off, and the power */
    row->own_hour = n * purchase / (capex->amortize_s / 3600) + site_w / 1e3 * capex->kwh_price;
    double own_step = row->own_hour * step / 3600;
    double samples = row->samples_s * step, tokens_step = row->tokens_s * step;
    row->own_per_1k = 1000 * own_step / samples;
    row->own_per_m = 1e6 * own_step / tokens_step;
    double steps = tokens > 0 ? tokens / tokens_step : NAN;
    row->own_dollars = steps * own_step;
    row->site_mwh = steps * row->site_kj / 3.6e6;
}
