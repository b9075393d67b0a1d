/* Device profiles: the built-in ones (name, sustained FP32 FLOP/s, source) and profile
 * files as dtsim calibrate writes them. */
#include <string.h>

#include <ini.h>

#include "keys_impl.h"

static const sim_device_profile_t device_profiles[] = {
    {"cpu", 90e9,
     "measured: dtsim bench trainer, 1 thread, OpenBLAS sgemm on a 2-core AMD EPYC (Zen 5) "
     "VM, 2026-11-22"},
    {"v100", 10.99e12,
     "NVIDIA V100 SXM2 datasheet FP32 peak 15.7 TFLOP/s x 0.7 (assumed sustained fraction "
     "for GEMM-bound training)"},
    {"a100", 13.65e12,
     "NVIDIA A100 datasheet FP32 peak 19.5 TFLOP/s (without tensor cores) x 0.7 (assumed "
     "sustained fraction for GEMM-bound training)"},
    {"h100", 46.9e12,
     "NVIDIA H100 SXM datasheet FP32 peak 67 TFLOP/s x 0.7 (assumed sustained fraction for "
     "GEMM-bound training)"},
};
#define N_PROFILES (sizeof device_profiles / sizeof device_profiles[0])

const sim_device_profile_t *scenario_device_profiles(size_t *count)
{
    if (count)
        *count = N_PROFILES;
    return device_profiles;
}

const sim_device_profile_t *builtin_profile(const char *name)
{
    for (size_t i = 0; i < N_PROFILES; i++)
        if (!strcmp(device_profiles[i].name, name))
            return &device_profiles[i];
    return NULL;
}

/* A device profile file, as dtsim calibrate writes it: a [device] section with name and
 * flops (a speed with its unit). */
typedef struct profile_file {
    double flops;
    int has_flops;
    char bad[600]; /* the first error, without its line */
} profile_file_t;

static int profile_handler(void *user, const char *section, const char *name, const char *value)
{
    profile_file_t *pf = user;
    dt_err_t e;
    if (strcmp(section, "device")) {
        snprintf(pf->bad, sizeof pf->bad, "[%s]: unknown section (expected [device])", section);
        return 0;
    }
    if (!strcmp(name, "name"))
        return 1;
    if (strcmp(name, "flops")) {
        snprintf(pf->bad, sizeof pf->bad, "device.%s: unknown key (expected name, flops)", name);
        return 0;
    }
    if (scenario_parse_flops(value, &pf->flops, &e)) {
        snprintf(pf->bad, sizeof pf->bad, "device.flops: %s", e.msg);
        return 0;
    }
    if (!(pf->flops > 0)) {
        snprintf(pf->bad, sizeof pf->bad, "device.flops: must be > 0");
        return 0;
    }
    pf->has_flops = 1;
    return 1;
}

dt_status profile_read(const char *path, double *flops, dt_err_t *err)
{
    profile_file_t pf = {0};
    int rc = ini_parse(path, profile_handler, &pf);
    if (rc < 0)
        return dt_err_input(err, "cannot read device profile %s", path);
    if (rc > 0)
        return dt_err_input(err, "%s:%d: %s", path, rc,
                            pf.bad[0] ? pf.bad : "syntax error (expected key = value)");
    if (!pf.has_flops)
        return dt_err_input(err, "%s: device.flops missing (the speed, e.g. 60Gf)", path);
    *flops = pf.flops;
    return DT_OK;
}

/* The speed of a device: a built-in profile or a profile file. NULL when the name is
 * neither (custom), or the file no longer reads. */
const sim_device_profile_t *profile_find(const char *name)
{
    static sim_device_profile_t file_profile;
    const sim_device_profile_t *p = builtin_profile(name);
    if (p || name[0] != '/')
        return p;
    dt_err_t e;
    if (profile_read(name, &file_profile.flops, &e))
        return NULL;
    file_profile.name = name;
    file_profile.source = "profile file";
    return &file_profile;
}
