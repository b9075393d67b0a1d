/* `dtsim calibrate --gemm`: the GEMM curve of this machine's backend (OpenBLAS's sgemm on
 * the CPU, cuBLAS on a GPU): square products of growing size, each timed (best of several
 * calls, the backend synchronised), its result checked against a double-precision
 * reference, and with --like NAME the fraction of that catalogue device's FP32 peak the
 * largest reaches and the gemm_efficiency it implies (the measured large-GEMM fraction times
 * the factor 0.75 the catalogue fits once for every device), which the compute model by
 * operation and shape reads. */
#define _DEFAULT_SOURCE /* gethostname */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_gemm.h"
#include "cli_util.h"
#include "rng.h"
#include "scenario.h"
#include "train.h"

/* The factor the catalogue applies to every device's measured large-GEMM fraction
 * (scenarios/devices/catalogue.ini, gemm_efficiency: fitted once on GPT-3 175B). */
#define GEMM_FITTED_FACTOR 0.75

static const sim_device_profile_t *catalogue_device(const char *name)
{
    size_t n;
    const sim_device_profile_t *d = scenario_device_profiles(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(d[i].name, name))
            return &d[i];
    return NULL;
}

/* Largest relative error of c = a b (n x n, row-major) over a sample of entries, against a
 * double-precision sum, relative to the sum of |terms| (the bound of a float sum). */
static double gemm_error(const float *a, const float *b, const float *c, int n)
{
    double worst = 0;
    for (int s = 0; s < 64; s++) {
        int i = (s * 7919) % n, j = (s * 104729 + 13) % n;
        double sum = 0, mag = 1e-30;
        for (int k = 0; k < n; k++) {
            double t = (double)a[(size_t)i * n + k] * (double)b[(size_t)k * n + j];
            sum += t;
            mag += fabs(t);
        }
        double e = fabs(c[(size_t)i * n + j] - sum) / mag;
        if (e > worst)
            worst = e;
    }
    return worst;
}

/* The gemm_efficiency lines for a device file like ref's, from the best TFLOP/s measured. */
static void print_efficiency(const sim_device_profile_t *ref, sim_device_field_t field,
                             const char *precision, long max, double best_tflops)
{
    double frac = best_tflops * 1e12 / ref->value[field];
    char host[256] = "this machine", date[32];
    gethostname(host, sizeof host);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("; for a device file written like %s's catalogue entry (dtsim devices %s):\n"
           "gemm_efficiency = %.4g\n"
           "source.gemm_efficiency = measured %.3f (dtsim calibrate --gemm on %s, %s: %s GEMM "
           "up to %ld, %.4g TFLOP/s of %.4g) x %.2f, the factor the catalogue fits once for "
           "every device\n",
           ref->name, ref->name, frac * GEMM_FITTED_FACTOR, frac, host, date, precision, max,
           best_tflops, ref->value[field] * 1e-12, GEMM_FITTED_FACTOR);
    if (frac > 1)
        printf("; above %s's %s figure: that is not this machine's peak (a measured training "
               "speed, or another device): compare with the device you have\n",
               ref->name, precision);
}

/* TF32 or BF16 on tensor cores: cuBLAS's GemmEx, sizes 256 ... max. */
static int tensor_curve(const trainer_backend_t *be, int prec, const char *precision, long max,
                        const sim_device_profile_t *ref, sim_device_field_t field)
{
#ifdef DTSIM_HAVE_CUDA
    if (!strcmp(be->name, "cuda")) {
        printf("gemm device=cuda precision=%s%s%s\n", precision, ref ? " like=" : "",
               ref ? ref->name : "");
        double best_tflops = 0;
        for (long n = 256; n <= max; n *= 2) {
            double e, sec = trainer_backend_cuda_gemm_seconds(prec, (int)n, 5, &e);
            double tflops = 2.0 * (double)n * (double)n * (double)n / sec * 1e-12;
            if (tflops > best_tflops)
                best_tflops = tflops;
            printf("gemm m=n=k=%ld seconds=%.6g tflops=%.4g max_rel_error=%.2g", n, sec, tflops, e);
            if (ref)
                printf(" of_peak=%.4f", tflops * 1e12 / ref->value[field]);
            printf("\n");
            /* BF16 inputs are exact as rounded; TF32 rounds them again (10-bit mantissa) */
            if (!(e <= (prec == 1 ? 2e-3 : 1e-4))) {
                fprintf(stderr,
                        "dtsim calibrate: the %s %ld x %ld GEMM differs from the "
                        "double-precision reference by %.2g\n",
                        precision, n, n, e);
                return CLI_EXIT_RUN;
            }
        }
        if (ref)
            print_efficiency(ref, field, prec == 1 ? "TF32" : "BF16", max, best_tflops);
        return CLI_EXIT_OK;
    }
#endif
    (void)prec, (void)max, (void)ref, (void)field;
    return cli_usage_error("calibrate",
                           "--precision %s: tensor-core GEMMs are timed with cuBLAS "
                           "(--device cuda), not on the %s backend",
                           precision, be->name);
}

static int usage(void)
{
    printf("usage: dtsim calibrate --gemm [--device cpu|cuda|auto] [--max N] [--like NAME]\n"
           "                           [--precision fp32|tf32|bf16] [--threads N]\n\n"
           "Times the backend's GEMM (OpenBLAS sgemm on the CPU, cuBLAS on a GPU; TF32 and\n"
           "BF16 on a GPU's tensor cores with --precision) on\n"
           "square products of 256, 512, ... up to N (best of several calls, each result\n"
           "checked against a double-precision reference) and prints seconds and TFLOP/s by\n"
           "size. With --like NAME (a catalogue device: dtsim devices), the largest\n"
           "product's fraction of NAME's FP32 peak and the gemm_efficiency it implies\n"
           "(that fraction x 0.75, the factor the catalogue fits once for every device),\n"
           "to put in a device file written like NAME's entry.\n\n"
           "  --device D   cpu, cuda or auto [cpu]\n"
           "  --precision P fp32, or tf32 / bf16 with --device cuda [fp32]\n"
           "  --max N      the largest size, 256 to 16384 [cpu 2048, cuda 8192]\n"
           "  --like NAME  compare with a catalogue device's peak at that precision\n"
           "  --threads N  OpenBLAS threads [1]\n");
    return CLI_EXIT_OK;
}

int cli_calibrate_gemm(int argc, char **argv)
{
    const char *device = "cpu", *like = NULL, *precision = "fp32";
    long max = 0, threads = 1;
    for (int i = 1; i < argc; i++) { /* argv[0]: the command's name */
        const char *a = argv[i];
        if (!strcmp(a, "--gemm"))
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage();
        if (i + 1 >= argc)
            return cli_usage_error("calibrate", "--gemm: unknown option or missing value \"%s\"",
                                   a);
        const char *v = argv[++i];
        if (!strcmp(a, "--device"))
            device = v;
        else if (!strcmp(a, "--precision"))
            precision = v;
        else if (!strcmp(a, "--like"))
            like = v;
        else if (!strcmp(a, "--max")) {
            if (cli_parse_long(v, 256, 16384, &max))
                return cli_usage_error("calibrate",
                                       "--max: expected an integer in [256, "
                                       "16384], got \"%s\"",
                                       v);
        } else if (!strcmp(a, "--threads")) {
            if (cli_parse_long(v, 1, 1024, &threads))
                return cli_usage_error("calibrate",
                                       "--threads: expected an integer in [1, "
                                       "1024], got \"%s\"",
                                       v);
        } else
            return cli_usage_error("calibrate", "--gemm: unknown option \"%s\"", a);
    }
    /* fp32 through the backend's gemm; tf32 and bf16 on tensor cores (cuBLAS only) */
    int prec = !strcmp(precision, "fp32")   ? 0
               : !strcmp(precision, "tf32") ? 1
               : !strcmp(precision, "bf16") ? 2
                                            : -1;
    if (prec < 0)
        return cli_usage_error("calibrate",
                               "--precision: expected fp32, tf32 or bf16, got "
                               "\"%s\"",
                               precision);
    sim_device_field_t peak_field = prec == 0   ? SIM_DEV_FP32
                                    : prec == 1 ? SIM_DEV_TF32
                                                : SIM_DEV_BF16;
    const sim_device_profile_t *ref = NULL;
    if (like && !(ref = catalogue_device(like)))
        return cli_usage_error("calibrate",
                               "--like: unknown device \"%s\" (dtsim devices lists "
                               "the catalogue)",
                               like);
    if (ref && !(ref->value[peak_field] > 0))
        return cli_usage_error("calibrate", "--like %s: the catalogue gives no %s peak", like,
                               precision);
    dt_err_t err;
    const trainer_backend_t *be = trainer_backend_by_name(device, &err);
    if (!be)
        return cli_usage_error("calibrate", "--device: %s", err.msg);
    trainer_backend_cpu_set_threads((int)threads);
    if (!max)
        max = strcmp(be->name, "cpu") ? 8192 : 2048;
    if (prec > 0)
        return tensor_curve(be, prec, precision, max, ref, peak_field);

    size_t big = (size_t)max * (size_t)max;
    float *ha = malloc(sizeof(float) * big), *hb = malloc(sizeof(float) * big);
    float *hc = malloc(sizeof(float) * big);
    if (!ha || !hb || !hc) {
        free(ha), free(hb), free(hc);
        return cli_usage_error("calibrate", "--max %ld: not enough host memory", max);
    }
    trainer_rng_t rng;
    trainer_rng_seed(&rng, 1, 0);
    for (size_t i = 0; i < big; i++) {
        ha[i] = (float)(trainer_rng_uniform(&rng) * 2 - 1);
        hb[i] = (float)(trainer_rng_uniform(&rng) * 2 - 1);
    }
    float *a = be->alloc(sizeof(float) * big), *b = be->alloc(sizeof(float) * big);
    float *c = be->alloc(sizeof(float) * big);
    printf("gemm device=%s precision=fp32 threads=%ld%s%s\n", be->name, threads,
           ref ? " like=" : "", ref ? ref->name : "");
    double best_tflops = 0;
    int rc = CLI_EXIT_OK;
    for (long n = 256; n <= max && rc == CLI_EXIT_OK; n *= 2) {
        size_t nn = (size_t)n * (size_t)n;
        /* the first n x n of the host matrices, row-major */
        float *han = dt_malloc(sizeof(float) * nn), *hbn = dt_malloc(sizeof(float) * nn);
        for (long r = 0; r < n; r++) {
            memcpy(han + r * n, ha + r * max, sizeof(float) * (size_t)n);
            memcpy(hbn + r * n, hb + r * max, sizeof(float) * (size_t)n);
        }
        be->upload(a, han, sizeof(float) * nn);
        be->upload(b, hbn, sizeof(float) * nn);
        int N = (int)n;
        be->gemm(0, 0, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N); /* warm-up */
        be->sync();
        double best = INFINITY, spent = 0;
        for (int rep = 0; rep < 20 && (rep < 3 || spent < 0.5); rep++) {
            double t0 = dt_wall_seconds();
            be->gemm(0, 0, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
            be->sync();
            double dt = dt_wall_seconds() - t0;
            spent += dt;
            if (dt < best)
                best = dt;
        }
        be->download(hc, c, sizeof(float) * nn);
        double e = gemm_error(han, hbn, hc, N);
        free(hbn);
        free(han);
        double tflops = 2.0 * (double)n * (double)n * (double)n / best * 1e-12;
        if (tflops > best_tflops)
            best_tflops = tflops;
        printf("gemm m=n=k=%ld seconds=%.6g tflops=%.4g max_rel_error=%.2g", n, best, tflops, e);
        if (ref)
            printf(" of_peak=%.4f", tflops * 1e12 / ref->value[peak_field]);
        printf("\n");
        if (!(e <= 1e-4)) {
            fprintf(stderr,
                    "dtsim calibrate: the %s backend's %ld x %ld GEMM differs from the "
                    "double-precision reference by %.2g (of the sum of |terms|)\n",
                    be->name, n, n, e);
            rc = CLI_EXIT_RUN;
        }
    }
    if (rc == CLI_EXIT_OK && ref)
        print_efficiency(ref, peak_field, "FP32", max, best_tflops);
    be->free(a);
    be->free(b);
    be->free(c);
    free(ha);
    free(hb);
    free(hc);
    return rc;
}
