/* Which OpenBLAS kernels run the matrix products, and choosing better ones than OpenBLAS
 * does on its own. Debian's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels from a table
 * of known CPUs when the library loads; a CPU newer than the table (AMD Zen 5, say) gets the
 * kernels of an older family (Zen, Haswell: AVX2) even when it has AVX-512, and runs the mlp
 * about 1.7x slower than with the AVX-512 kernels. OPENBLAS_CORETYPE overrides the choice,
 * but only when set before the library loads, so dtsim sets it and starts itself again
 * (trainer_blas_select), once, before anything else happens; a user's own
 * OPENBLAS_CORETYPE is left alone. */
#ifndef DTSIM_BLAS_H
#define DTSIM_BLAS_H

#include <stddef.h>

/* What this CPU offers, as the choice needs it. */
typedef struct trainer_cpu {
    int avx512;      /* AVX-512 F, BW, DQ and VL, enabled by the OS: SkylakeX's kernels */
    int avx512_bf16; /* AVX-512 BF16 as well: Cooperlake's */
} trainer_cpu_t;

/* This CPU (cpuid and the OS's saved state, through the compiler's runtime). */
trainer_cpu_t trainer_cpu_detect(void);

/* The OPENBLAS_CORETYPE to ask for, or NULL to keep OpenBLAS's choice `detected` (its core
 * name, e.g. "Zen"): the AVX-512 kernels when the CPU has AVX-512 and the detected core's
 * kernels do not use it. */
const char *trainer_blas_core_for(trainer_cpu_t cpu, const char *detected);

/* Called first thing in main: when trainer_blas_core_for asks for other kernels and
 * OPENBLAS_CORETYPE is not set, sets it (and DTSIM_BLAS_DETECTED to OpenBLAS's own choice)
 * and executes this program again with the same arguments; returns when there is nothing to
 * do or the new start failed (then OpenBLAS's choice stands). */
void trainer_blas_select(char **argv);

/* "OpenBLAS 0.3.21 (DYNAMIC_ARCH), kernels SkylakeX (chosen by dtsim: OpenBLAS took this
 * CPU for Zen)" or "... kernels Zen (this CPU has no AVX-512)". */
void trainer_blas_describe(char *buf, size_t size);

#endif
