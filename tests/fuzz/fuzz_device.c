/* Fuzz target: the device profile reader (sim/scenario/devices.c). The input is a device
 * file. The oracle: no crash or sanitizer report, an error is one line naming the file, and
 * a loaded device has its FP32 peak, every value positive or unknown (fractions in (0, 1]),
 * a source for every value it has, and a finite sustained speed. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(0, "device.ini", data, size);
    static sim_device_profile_t d;
    dt_err_t err;
    if (scenario_device_read(path, &d, &err) != DT_OK) {
        if (!strstr(err.msg, "device.ini") || strchr(err.msg, '\n'))
            __builtin_trap();
        return 0;
    }
    if (!(d.value[SIM_DEV_FP32] > 0))
        __builtin_trap();
    for (int f = 0; f < SIM_DEV_FIELDS; f++) {
        double v = d.value[f];
        if (!isnan(v) && (!(v >= 0) || !isfinite(v) || !d.source[f][0]))
            __builtin_trap();
        if ((f == SIM_DEV_EFFICIENCY || f == SIM_DEV_TENSOR_EFFICIENCY) && !isnan(v) &&
            !(v > 0 && v <= 1))
            __builtin_trap();
    }
    static scenario_t sc; /* fp32 at the device's own fraction */
    memset(&sc, 0, sizeof sc);
    double speed = scenario_device_speed(&d, &sc);
    if (!isfinite(speed) || !(speed > 0))
        __builtin_trap();
    return 0;
}
