/* OpenBLAS's kernels (see blas.h). */
#define _POSIX_C_SOURCE 200809L
#include "blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OpenBLAS's core names whose sgemm kernels use AVX-512. */
static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};

static int is_avx512_core(const char *core)
{
    for (size_t i = 0; i < sizeof avx512_cores / sizeof avx512_cores[0]; i++)
        if (!strcmp(core, avx512_cores[i]))
            return 1;
    return 0;
}

trainer_cpu_t trainer_cpu_detect(void)
{
    trainer_cpu_t cpu = {0};
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    /* libgcc reports AVX-512 only when the OS saves the ZMM and mask registers (XCR0) */
    cpu.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    cpu.avx512_bf16 = cpu.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
    return cpu;
}

const char *trainer_blas_core_for(trainer_cpu_t cpu, const char *detected)
{
    if (!cpu.avx512 || !detected || is_avx512_core(detected))
        return NULL;
    return cpu.avx512_bf16 ? "COOPERLAKE" : "SKYLAKEX";
}

void trainer_blas_select(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE"))
        return; /* the user's, or ours after the new start */
    const char *detected = openblas_get_corename();
    const char *want = trainer_blas_core_for(trainer_cpu_detect(), detected);
    if (!want)
        return;
    if (setenv("OPENBLAS_CORETYPE", want, 1) || setenv("DTSIM_BLAS_DETECTED", detected, 1))
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* could not start again: OpenBLAS's choice stands, and the description says so */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("DTSIM_BLAS_DETECTED");
}

void trainer_blas_describe(char *buf, size_t size)
{
    const char *core = openblas_get_corename(), *config = openblas_get_config();
    const char *detected = getenv("DTSIM_BLAS_DETECTED");
    char version[64] = "OpenBLAS";
    /* openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." */
    if (config && !strncmp(config, "OpenBLAS ", 9))
        snprintf(version, sizeof version, "OpenBLAS %.*s", (int)strcspn(config + 9, " "),
                 config + 9);
    int dynamic = config && strstr(config, "DYNAMIC_ARCH") != NULL;
    trainer_cpu_t cpu = trainer_cpu_detect();
    char why[160];
    if (detected && getenv("OPENBLAS_CORETYPE"))
        snprintf(why, sizeof why, "chosen by dtsim: OpenBLAS took this CPU for %s", detected);
    else if (getenv("OPENBLAS_CORETYPE"))
        snprintf(why, sizeof why, "OPENBLAS_CORETYPE=%s", getenv("OPENBLAS_CORETYPE"));
    else if (!cpu.avx512)
        snprintf(why, sizeof why, "this CPU has no AVX-512");
    else
        snprintf(why, sizeof why, "OpenBLAS's own choice");
    snprintf(buf, size, "%s%s, kernels %s (%s)", version, dynamic ? " (DYNAMIC_ARCH)" : "",
             core ? core : "unknown", why);
}
