/* Fuzz target: the model profile loader (sim/scenario/model_profile.c). The input is a profile
 * file. The oracle: no crash or sanitizer report, an error is one line naming the file, and
 * a loaded profile's totals, and its layers' all-reduces, are finite and non-negative. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "model_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(0, "profile.ini", data, size);
    sim_model_profile_t p;
    memset(&p, 0, sizeof p);
    dt_err_t err;
    if (sim_model_profile_load(&p, path, &err) == DT_OK) {
        if (!isfinite(p.forward_flops) || !isfinite(p.backward_flops) || p.forward_flops < 0 ||
            p.backward_flops < 0 || p.n_layers < 0)
            __builtin_trap();
        for (int i = 0; i < p.n_layers; i++) /* [tensor]: a known split, a count */
            if (p.layers[i].split > SIM_SPLIT_VOCAB || !isfinite(p.layers[i].reduce) ||
                p.layers[i].reduce < 0 || (!p.layers[i].split && p.layers[i].reduce))
                __builtin_trap();
    } else if (!strstr(err.msg, "profile.ini") || strchr(err.msg, '\n')) {
        __builtin_trap();
    }
    sim_model_profile_free(&p);
    return 0;
}
