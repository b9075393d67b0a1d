/* Backend registry: the one place that knows which backends this build has. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* The cpu device: the CPU backend, or with DTSIM_GUARDED=1 its guarded twin (guarded.c). */
static const trainer_backend_t *cpu_device(void)
{
    const char *g = getenv("DTSIM_GUARDED");
    return g && !strcmp(g, "1") ? trainer_backend_guarded() : trainer_backend_cpu();
}

const trainer_backend_t *trainer_backend_by_name(const char *name, dt_err_t *err)
{
    if (!strcmp(name, "cpu"))
        return cpu_device();
    if (strcmp(name, "cuda") && strcmp(name, "auto")) {
        dt_err_input(err, "unknown device \"%s\" (expected cpu, cuda or auto)", name);
        return NULL;
    }
#ifdef DTSIM_HAVE_CUDA
    dt_err_t why;
    const trainer_backend_t *be = trainer_backend_cuda(&why);
    if (be)
        return be;
    if (!strcmp(name, "auto"))
        return cpu_device();
    dt_err_input(err, "%s", why.msg);
    return NULL;
#else
    if (!strcmp(name, "auto"))
        return cpu_device();
    dt_err_input(err, "this dtsim was built without CUDA (configure with "
                      "-DDTSIM_CUDA=ON where nvcc is installed)");
    return NULL;
#endif
}
