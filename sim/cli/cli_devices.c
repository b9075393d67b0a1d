/* dtsim devices: the device catalogue as a table, or one device (a catalogue entry or a
 * profile file) value by value with the source of each. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "nccl.h"
#include "scenario.h"

enum { OPT_NIC = 1 };

static const cli_option devices_options[] = {
    {.id = OPT_NIC,
     .name = "nic",
     .kind = CLI_VALUE_BANDWIDTH,
     .metavar = "BANDWIDTH",
     .help =
         "also time an all-reduce as NCCL runs it between servers of 8 such GPUs, each GPU with a "
         "NIC of BANDWIDTH (400Gbps: NDR InfiniBand) carrying nic_efficiency of it "
         "(strategy.dp_comm = nccl), on 2 to 32 servers, in nccl-tests' columns"},
    {0},
};

const cli_spec cli_devices_spec = {
    .usage = "[NAME | FILE.ini [--nic BANDWIDTH]]",
    .about = "Without an argument, lists the device catalogue (what cluster.device names): peak\n"
             "FLOP/s per precision (dense, TFLOP/s), memory (GB) and its bandwidth (GB/s), power\n"
             "idle and at full load (W), the achieved fractions of the FP32 and the tensor\n"
             "peaks, the multiprocessors and the large-GEMM fraction of the compute model by\n"
             "shape. With NAME (a catalogue entry) or FILE.ini (a device profile file), prints\n"
             "that device's every value with its source, and its sustained speed at each\n"
             "precision (what cluster.device_flops becomes).\n",
    .options = devices_options,
};

/* The table: a row per device. */
static void devices_table(void)
{
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n);
    printf("%-10s %7s %7s %7s %7s %6s %5s %5s %5s %4s %6s %4s %7s  %s\n", "device", "fp32", "tf32",
           "bf16", "fp8", "memory", "GB/s", "idle", "max", "eff", "tensor", "sms", "gemm", "what");
    for (size_t i = 0; i < n; i++) {
        char cell[SIM_DEV_FIELDS][32];
        for (int f = 0; f < SIM_DEV_FIELDS; f++)
            scenario_device_cell(&cat[i], (sim_device_field_t)f, cell[f], sizeof cell[f]);
        printf("%-10s %7s %7s %7s %7s %6s %5s %5s %5s %4s %6s %4s %7s  %s\n", cat[i].name, cell[0],
               cell[1], cell[2], cell[3], cell[4], cell[5], cell[6], cell[7], cell[8], cell[9],
               cell[SIM_DEV_SMS], cell[SIM_DEV_GEMM_EFFICIENCY], cat[i].title);
    }
    printf("peaks in TFLOP/s, dense; memory in GB (10^9 bytes); power in W; - where the device "
           "has none\n(dtsim devices NAME: every value with its source)\n");
}

/* One row of an all-reduce table of n bytes on T GPUs: the tuner's choice, its time,
 * nccl-tests' algbw and busbw, and the busbw of the fastest ring protocol. */
static void nccl_row(const sim_nccl_t *m, int T, double n)
{
    sim_nccl_algo_t a;
    sim_nccl_proto_t p;
    double t = sim_nccl_best(m, SIM_NCCL_ALLREDUCE, -1, -1, n, &a, &p);
    double ring = sim_nccl_best(m, SIM_NCCL_ALLREDUCE, SIM_NCCL_RING, -1, n, NULL, NULL);
    char what[32];
    snprintf(what, sizeof what, "%s/%s", sim_nccl_algo_name(a), sim_nccl_proto_name(p));
    double bus = 2.0 * (T - 1) / T;
    printf("%12.0f  %-13s %10.1f %8.1f %8.1f %8.1f\n", n, what, t * 1e6, n / t / 1e9,
           n / t / 1e9 * bus, n / ring / 1e9 * bus);
}

/* A device with NVLink figures: what strategy.tensor_comm = nccl makes of an all-reduce on
 * a server's 8 GPUs, size by size, in nccl-tests' columns (algbw = bytes / time, busbw =
 * algbw x 2 (T-1) / T), to hold against published all_reduce_perf runs. */
static void nccl_table(const sim_device_profile_t *d)
{
    if (!(d->value[SIM_DEV_NVLINK_BUSBW] > 0))
        return;
    int T = 8;
    sim_nccl_t m;
    double nvls = d->value[SIM_DEV_NVLS_BUSBW];
    sim_nccl_nvlink(&m, T, d->value[SIM_DEV_NVLINK_BUSBW], nvls > 0 ? nvls : 0);
    printf("  all-reduce on %d GPUs as NCCL runs it (strategy.tensor_comm = nccl; NCCL's tuner "
           "chooses):\n  %12s  %-13s %10s %8s %8s %8s\n",
           T, "bytes", "algorithm", "time us", "algbw", "busbw", "ring");
    for (double n = 1024; n <= 4.3e9; n *= 8) {
        printf("  ");
        nccl_row(&m, T, n);
    }
    printf("  (GB/s; ring: the busbw of the fastest ring protocol, NCCL_ALGO=Ring)\n");
}

/* An all-reduce on N servers of 8 GPUs, each GPU with a NIC of nic bytes/s: what
 * strategy.dp_comm = nccl makes of it, size by size, in nccl-tests' columns, to hold
 * against published multi-server all_reduce_perf runs (tests/bench/nccl_net.sh). */
static void nic_table(const sim_device_profile_t *d, double nic)
{
    double eff = d->value[SIM_DEV_NIC_EFFICIENCY];
    if (isnan(eff))
        eff = scenario_device_defaults()->value[SIM_DEV_NIC_EFFICIENCY];
    double nvlink = d->value[SIM_DEV_NVLINK_BUSBW];
    if (!(nvlink > 0)) {
        printf("  between servers: the device has no nvlink_busbw for a server of 8\n");
        return;
    }
    int G = 8;
    printf("  all-reduce between servers of %d GPUs, a %.6g Gbit/s NIC each x nic_efficiency "
           "%.3g (strategy.dp_comm = nccl; NCCL's tuner chooses):\n  %7s %12s  %-13s %10s "
           "%8s %8s %8s\n",
           G, nic * 8 / 1e9, eff, "servers", "bytes", "algorithm", "time us", "algbw", "busbw",
           "ring");
    for (int N = 2; N <= 32; N *= 2) {
        int T = N * G;
        sim_nccl_t m;
        sim_nccl_net(&m, T, N, nvlink, G * nic * eff);
        for (double n = 1024; n <= 4.3e9; n *= 8) {
            printf("  %7d ", N);
            nccl_row(&m, T, n);
        }
    }
    printf("  (GB/s; ring: the busbw of the fastest ring protocol, NCCL_ALGO=Ring)\n");
}

/* One device, value by value, each with the number of its source, the sources below. */
static void device_detail(const sim_device_profile_t *d, double nic)
{
    static const char *const units[SIM_DEV_FIELDS] = {
        "TFLOP/s", "TFLOP/s", "TFLOP/s", "TFLOP/s", "GB", "GB/s", "W",    "W", "",
        "",        "",        "",        "",        "",   "GB/s", "GB/s", "",  ""};
    const char *sources[SIM_DEV_FIELDS];
    int n_sources = 0;
    printf("%s: %s\n", d->name, d->title);
    for (int f = 0; f < SIM_DEV_FIELDS; f++) {
        if (isnan(d->value[f]))
            continue;
        int k = 0;
        while (k < n_sources && strcmp(sources[k], d->source[f]))
            k++;
        if (k == n_sources)
            sources[n_sources++] = d->source[f];
        char cell[32], value[48];
        scenario_device_cell(d, (sim_device_field_t)f, cell, sizeof cell);
        snprintf(value, sizeof value, "%s%s%s", cell, units[f][0] ? " " : "", units[f]);
        printf("  %-20s %-15s [%d]\n", scenario_device_field_name((sim_device_field_t)f), value,
               k + 1);
    }
    scenario_t sc;
    scenario_defaults(&sc);
    printf("  sustained (peak x fraction, cluster.device_flops):");
    for (int q = 0, first = 1; q < SIM_PRECISIONS; q++) {
        sc.precision = (sim_precision_t)q;
        double v = scenario_device_speed(d, &sc);
        if (isnan(v))
            continue;
        printf("%s %s %.6g TFLOP/s", first ? "" : ",", scenario_precision_name(sc.precision),
               v / 1e12);
        first = 0;
    }
    printf("\n");
    nccl_table(d);
    if (nic > 0)
        nic_table(d, nic);
    for (int k = 0; k < n_sources; k++)
        printf("  [%d] %s\n", k + 1, sources[k]);
}

int cli_devices(int argc, char **argv)
{
    double nic = 0;
    int id;
    cli_parser p;
    cli_parse_init(&p, "devices", &cli_devices_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0)
        nic = p.number;
    if (id < 0)
        return p.status;
    if (p.n_args > 1)
        return cli_usage_error("devices", "unexpected argument \"%s\"", p.args[1]);
    if (p.value && !(nic > 0))
        return cli_usage_error("devices", "--nic %s: expected a bandwidth > 0 (400Gbps)", p.value);
    if (p.value && !p.n_args)
        return cli_usage_error("devices", "--nic times one device: dtsim devices NAME --nic "
                                          "BANDWIDTH");
    if (!p.n_args) {
        devices_table();
        return CLI_EXIT_OK;
    }
    const char *name = p.args[0];
    size_t n;
    const sim_device_profile_t *cat = scenario_device_profiles(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cat[i].name, name)) {
            device_detail(&cat[i], nic);
            return CLI_EXIT_OK;
        }
    size_t len = strlen(name);
    if (len > 4 && !strcmp(name + len - 4, ".ini")) {
        static sim_device_profile_t d;
        dt_err_t err;
        if (scenario_device_read(name, &d, &err)) {
            fprintf(stderr, "dtsim devices: %s\n", err.msg);
            return CLI_EXIT_USAGE;
        }
        device_detail(&d, nic);
        return CLI_EXIT_OK;
    }
    char names[256] = "";
    for (size_t i = 0, l = 0; i < n && l < sizeof names; i++)
        l += (size_t)snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", cat[i].name);
    return cli_usage_error("devices",
                           "unknown device \"%s\" (expected one of %s, or a profile "
                           "file FILE.ini)",
                           name, names);
}
