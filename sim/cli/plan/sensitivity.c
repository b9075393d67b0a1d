/* dtsim plan --sensitivity: the top ranked layouts re-simulated with each constant their
 * timing rests on at each end of a range, one constant at a time (plan_sensitivity). The
 * constants are the device's efficiencies the runs read (the compute model's, and NCCL's
 * where a --set makes the collectives NCCL's), given through a device file written with the
 * one value changed, and the links' bandwidths (the network's achieved share), given as
 * scenario keys; each changed layout is a run of its own, in a sweep of its own (no plan.*
 * params: --show and --resume do not take it for a plan). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli_sweep.h"
#include "cli_util.h"
#include "compute_model.h"
#include "plan_impl.h"
#include "profile_memory.h"
#include "strategy.h"

/* A constant varied: a device field (field >= 0) or a scenario key (field < 0). */
typedef struct sens_const {
    const char *name;
    int field;      /* sim_device_field_t; -1: the links' bandwidths; -2 device_efficiency */
    double nominal; /* its value in the runs (bandwidths: 1, the factor) */
    double end[2];  /* its value at each end (a fraction at most 1) */
} sens_const_t;

#define SENS_MAX_CONSTS 8

/* The device's fields written as a device file at path, field f at value (f < 0: none
 * changed); 0, or -1 when it cannot be written. */
static int device_file_write(const char *path, const sim_device_profile_t *dev, int f, double value)
{
    FILE *file = fopen(path, "w");
    if (!file)
        return -1;
    fprintf(file, "[device]\nname = %s with %s x%.6g\n", dev->title,
            f >= 0 ? scenario_device_field_name((sim_device_field_t)f) : "nothing",
            f >= 0 ? value / dev->value[f] : 1.0);
    for (int k = 0; k < SIM_DEV_FIELDS; k++) {
        double v = k == f ? value : dev->value[k];
        if (isnan(v))
            continue;
        const char *unit =
            k <= SIM_DEV_FP8      ? "f"
            : k == SIM_DEV_MEMORY ? "B"
            : k == SIM_DEV_MEMORY_BANDWIDTH || k == SIM_DEV_NVLINK_BUSBW || k == SIM_DEV_NVLS_BUSBW
                ? "Bps"
            : k == SIM_DEV_POWER_IDLE || k == SIM_DEV_POWER_MAX ? "W"
                                                                : "";
        fprintf(file, "%s = %.17g%s\n", scenario_device_field_name((sim_device_field_t)k), v, unit);
    }
    return fclose(file) ? -1 : 0;
}

/* The constants the runs of sc (a layout of the plan loaded) read, into c (the count). */
static int sens_constants(const scenario_t *sc, const sim_model_profile_t *prof,
                          const plan_opts_t *opts, double share, sens_const_t *c)
{
    const sim_device_profile_t *dev = scenario_device(sc);
    int n = 0, nccl_tensor = 0;
    for (int i = 0; i < opts->n_sets; i++)
        nccl_tensor |= !strcmp(opts->sets[i], "strategy.tensor_comm=nccl");
    /* the replicas' collectives as the runs resolve dp_comm (a plan's runs are timing-only) */
    int nccl_dp = sim_dp_comm_nccl(sc, 1);
    sim_compute_t model;
    int fields[6], n_fields = 0;
    if (sc->device_efficiency > 0) {
        c[n++] = (sens_const_t){
            .name = "cluster.device_efficiency", .field = -2, .nominal = sc->device_efficiency};
    } else if (dev && sim_compute_by_shape(sc, prof, &model)) {
        fields[n_fields++] = SIM_DEV_GEMM_EFFICIENCY;
        if (sim_profile_has_attention(prof))
            fields[n_fields++] = SIM_DEV_ATTENTION_EFFICIENCY;
        fields[n_fields++] = SIM_DEV_MEMORY_EFFICIENCY;
        if (sc->precision == SIM_PREC_FP8 && sc->fp8_scaling == SIM_FP8_BLOCK)
            fields[n_fields++] = SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY;
    } else if (dev) {
        fields[n_fields++] =
            sc->precision == SIM_PREC_FP32 ? SIM_DEV_EFFICIENCY : SIM_DEV_TENSOR_EFFICIENCY;
    }
    if (dev && nccl_tensor)
        fields[n_fields++] = SIM_DEV_NVLINK_BUSBW;
    if (dev && nccl_dp)
        fields[n_fields++] = SIM_DEV_NIC_EFFICIENCY;
    for (int i = 0; i < n_fields; i++)
        if (!isnan(dev->value[fields[i]]))
            c[n++] = (sens_const_t){.name = scenario_device_field_name(fields[i]),
                                    .field = fields[i],
                                    .nominal = dev->value[fields[i]]};
    c[n++] = (sens_const_t){.name = "link bandwidths", .field = -1, .nominal = 1};
    for (int i = 0; i < n; i++)
        for (int e = 0; e < 2; e++) {
            double v = c[i].nominal * (e ? 1 + share : 1 - share);
            /* a fraction stays a fraction: an end past 1 is 1 */
            int fraction = c[i].field == -2 || c[i].field == SIM_DEV_EFFICIENCY ||
                           c[i].field == SIM_DEV_TENSOR_EFFICIENCY ||
                           (c[i].field >= SIM_DEV_GEMM_EFFICIENCY &&
                            c[i].field <= SIM_DEV_MEMORY_EFFICIENCY) ||
                           c[i].field == SIM_DEV_NIC_EFFICIENCY ||
                           c[i].field == SIM_DEV_FP8_BLOCK_GEMM_EFFICIENCY;
            c[i].end[e] = fraction && v > 1 ? 1 : v;
        }
    return n;
}

/* Each finished run's step time of sweep into steps (by sweep index, n; NAN where none). */
static void sens_read(const char *db, const char *sweep, double *steps, long n)
{
    for (long i = 0; i < n; i++)
        steps[i] = NAN;
    sqlite3 *handle = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(db, &handle, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_busy_timeout(handle, 10000) == SQLITE_OK &&
        sqlite3_prepare_v2(handle,
                           "SELECT r.sweep_index, s.sim_time / s.steps FROM runs r JOIN summary "
                           "s ON s.run = r.id WHERE r.sweep = ?1 AND r.status = 'finished' AND "
                           "s.steps > 0",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            long i = sqlite3_column_int64(st, 0);
            if (i >= 0 && i < n)
                steps[i] = sqlite3_column_double(st, 1);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(handle);
}

/* The layouts' order at one end against the ranking's: each pair that swaps, printed after
 * what (the constant and end); returns how many. */
static int sens_swaps(const double *step, const double *nominal, char (*names)[64], long k,
                      const char *what)
{
    int swaps = 0;
    for (long a = 0; a < k; a++)
        for (long b = a + 1; b < k; b++)
            if (step[b] < step[a] && nominal[a] <= nominal[b]) {
                printf("  %s: %s (rank %ld) before %s (rank %ld)\n", what, names[b], b + 1,
                       names[a], a + 1);
                swaps++;
            }
    return swaps;
}

/* The table: each constant's ends, each layout's step at each, each layout's range and
 * the pairs that swap. */
static void sens_print(const plan_opts_t *opts, const sens_const_t *c, int n_c, char (*names)[64],
                       const double *nominal, long k, const double *steps, const char *sweep)
{
    printf("\nsensitivity (--sensitivity %.6g%%): the top %ld layouts re-simulated with each "
           "constant their timing rests on at x%.6g and x%.6g, one at a time (sweep %s):\n",
           opts->sensitivity * 100, k, 1 - opts->sensitivity, 1 + opts->sensitivity, sweep);
    printf("%-26s %10s %10s %10s %-40s %12s %12s %12s\n", "constant", "nominal", "low", "high",
           "layout", "s/step", "at low", "at high");
    double *lo = dt_malloc(sizeof *lo * (size_t)k), *hi = dt_malloc(sizeof *hi * (size_t)k);
    for (long j = 0; j < k; j++)
        lo[j] = hi[j] = nominal[j];
    for (int i = 0; i < n_c; i++)
        for (long j = 0; j < k; j++) {
            const double *at = &steps[((long)i * 2) * k + j];
            printf("%-26s %10.4g %10.4g %10.4g %-40s %12.6g %12.6g %12.6g\n", j ? "" : c[i].name,
                   c[i].nominal, c[i].end[0], c[i].end[1], names[j], nominal[j], at[0], at[k]);
            for (int e = 0; e < 2; e++) {
                lo[j] = fmin(lo[j], at[e * k]);
                hi[j] = fmax(hi[j], at[e * k]);
            }
        }
    printf("each layout's step over every end (the nominal within):\n");
    printf("%-40s %12s %12s %12s %8s\n", "layout", "s/step", "lowest", "highest", "spread");
    for (long j = 0; j < k; j++)
        printf("%-40s %12.6g %12.6g %12.6g %7.3g%%\n", names[j], nominal[j], lo[j], hi[j],
               100 * (hi[j] - lo[j]) / nominal[j]);
    printf("ranking of these %ld at each end:\n", k);
    int swaps = 0;
    for (int i = 0; i < n_c; i++)
        for (int e = 0; e < 2; e++) {
            char what[96];
            snprintf(what, sizeof what, "%s at %.4g", c[i].name, c[i].end[e]);
            swaps += sens_swaps(&steps[((long)i * 2 + e) * k], nominal, names, k, what);
        }
    if (!swaps)
        printf("  the same at every end\n");
    free(lo);
    free(hi);
}

int plan_sensitivity(const plan_opts_t *opts, const plan_layout_t *rows, long n,
                     const plan_layout_t *cand, const char *base, const char *name,
                     const sim_model_profile_t *prof, const char *argv0, double deadline)
{
    long k = 0, top = opts->sensitivity_top ? opts->sensitivity_top : PLAN_SENSITIVITY_TOP;
    while (k < n && k < top && rows[k].run)
        k++;
    if (!k)
        return CLI_EXIT_OK;
    dt_err_t err;
    scenario_t *sc = dt_malloc(sizeof *sc);
    if (plan_layout_load(sc, base, opts, &cand[rows[0].index], name, &err)) {
        fprintf(stderr, "dtsim plan: --sensitivity: %s\n", err.msg);
        free(sc);
        return CLI_EXIT_RUN;
    }
    sens_const_t c[SENS_MAX_CONSTS];
    int n_c = sens_constants(sc, prof, opts, opts->sensitivity, c);
    sim_device_profile_t dev = {0};
    if (scenario_device(sc))
        dev = *scenario_device(sc);
    double bandwidth = sc->bandwidth, uplink = sc->uplink_bandwidth;
    /* each constant at each end: its extra --set (a device file, or the keys) */
    const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    char files[SENS_MAX_CONSTS * 2][PATH_MAX], sets[SENS_MAX_CONSTS * 2][2][PATH_MAX + 32];
    long runs = (long)n_c * 2 * k;
    scenario_t *list = dt_malloc(sizeof *list * (size_t)runs);
    char(*names)[64] = dt_calloc((size_t)k, sizeof *names);
    double *nominal = dt_malloc(sizeof *nominal * (size_t)k);
    double *steps = dt_malloc(sizeof *steps * (size_t)runs);
    int rc = CLI_EXIT_OK, n_files = 0;
    plan_opts_t *more = dt_malloc(sizeof *more);
    char run_name[SCENARIO_STR];
    for (long j = 0; j < k; j++) {
        plan_layout_name(&rows[j], names[j], sizeof names[j]);
        nominal[j] = rows[j].step_s;
    }
    for (int i = 0; i < n_c && !rc; i++)
        for (int e = 0; e < 2 && !rc; e++) {
            int at = i * 2 + e, extra = 1;
            double factor = c[i].end[e] / c[i].nominal;
            if (c[i].field >= 0) {
                snprintf(files[at], sizeof files[at], "%s/dtsim-sens-XXXXXX.ini", dir);
                int fd = mkstemps(files[at], 4);
                if (fd < 0 || close(fd) ||
                    device_file_write(files[at], &dev, c[i].field, c[i].end[e])) {
                    fprintf(stderr,
                            "dtsim plan: --sensitivity: cannot write a device file in "
                            "%s: %s\n",
                            dir, strerror(errno));
                    rc = CLI_EXIT_RUN;
                    break;
                }
                n_files = at + 1;
                snprintf(sets[at][0], sizeof sets[at][0], "cluster.device=%.4000s", files[at]);
            } else if (c[i].field == -2) {
                snprintf(sets[at][0], sizeof sets[at][0], "cluster.device_efficiency=%.17g",
                         c[i].end[e]);
            } else {
                snprintf(sets[at][0], sizeof sets[at][0], "cluster.bandwidth=%.17gBps",
                         bandwidth * factor);
                snprintf(sets[at][1], sizeof sets[at][1], "cluster.uplink_bandwidth=%.17gBps",
                         uplink * factor);
                extra = 2;
            }
            *more = *opts;
            for (int s = 0; s < extra && more->n_sets < PLAN_MAX_SETS; s++)
                more->sets[more->n_sets++] = sets[at][s];
            snprintf(run_name, sizeof run_name, "%.200s-sens%d%s", name, i, e ? "hi" : "lo");
            for (long j = 0; j < k && !rc; j++)
                if (plan_layout_load(&list[at * k + j], base, more, &cand[rows[j].index], run_name,
                                     &err)) {
                    fprintf(stderr, "dtsim plan: --sensitivity: %s at %.6g: %s\n", c[i].name,
                            c[i].end[e], plan_without_path(err.msg, base));
                    rc = CLI_EXIT_RUN;
                }
        }
    if (!rc) {
        char id[SCENARIO_STR + 64] = "", sweep[SCENARIO_STR + 64] = "";
        snprintf(run_name, sizeof run_name, "%.200s-sensitivity", name);
        cli_sweep_opts_t so = {
            .id = id, .label = "sensitivity", .quiet = 1, .checked = 1, .deadline = deadline};
        rc = cli_sweep_run_opts(list, runs, run_name, opts->jobs, argv0, sweep, sizeof sweep, &so);
        if (so.stopped && !rc)
            rc = so.stopped > 0 ? 128 + so.stopped : CLI_EXIT_OK;
        if (so.stopped)
            fprintf(stderr,
                    "dtsim plan: --sensitivity: %s: its runs stopped, nothing to "
                    "print\n",
                    so.stopped > 0 ? "a signal came" : "--time-limit passed");
        if (sweep[0] && !so.stopped) {
            sens_read(opts->db, sweep, steps, runs);
            long missing = 0;
            for (long r = 0; r < runs; r++)
                missing += isnan(steps[r]);
            if (missing)
                fprintf(stderr,
                        "dtsim plan: --sensitivity: %ld of %ld runs did not finish "
                        "(sweep %s)\n",
                        missing, runs, sweep);
            sens_print(opts, c, n_c, names, nominal, k, steps, sweep);
            fflush(stdout);
        }
    }
    for (int f = 0; f < n_files; f++)
        if (c[f / 2].field >= 0)
            unlink(files[f]);
    free(more);
    free(steps);
    free(nominal);
    free(names);
    free(list);
    free(sc);
    return rc;
}
