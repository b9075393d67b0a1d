/* Fuzz target: the platform file check (sim/engine/platform_check.c), which loads a platform
 * in a child process as SimGrid reads it and turns what SimGrid refuses (or aborts on) into
 * one line. The input is the XML file. The oracle: the check returns (a SimGrid crash or
 * hang in the child is the child's), and when it refuses the file its error is one line
 * naming cluster.platform and the file. Slow (a process per input): seeds and short runs. */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "platform.h"
#include "scenario.h"
#include "strategy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int registered;
    if (!registered) {
        sim_strategies_register();
        registered = 1;
    }
    if (size > 1 << 14)
        return 0;
    const char *path = fuzz_file(0, "platform.xml", data, size);
    static scenario_t sc;
    char set[400];
    snprintf(set, sizeof set, "cluster.platform=%s", path);
    const char *sets[] = {set, "cluster.workers=2", "strategy.kind=allreduce"};
    dt_err_t err = {""};
    if (scenario_load(&sc, NULL, sets, 3, &err) != DT_OK)
        __builtin_trap(); /* the file exists and is regular: the key must take it */
    if (sim_platform_check(&sc, &err) != DT_OK &&
        (!strstr(err.msg, "cluster.platform") || !strstr(err.msg, "platform.xml") ||
         strchr(err.msg, '\n')))
        __builtin_trap();
    return 0;
}
