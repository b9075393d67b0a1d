/* Fuzz target: the scenario parser, its checks and sweeps (sim/scenario/). The input is a
 * scenario file; its lines that start with "#set " (comments to the parser) are also given
 * as --set overrides. The oracles: no crash or sanitizer report; an error is one line; a
 * scenario that loads and validates writes a configuration that loads back and validates
 * (`dtsim check` output is a scenario `dtsim run` takes); every run of a sweep of at most 64
 * runs expands or fails with one line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "scenario.h"
#include "strategy.h"

static int one_line(const dt_err_t *e)
{
    return e->msg[0] && !strchr(e->msg, '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int registered;
    if (!registered) {
        sim_strategies_register();
        registered = 1;
    }
    if (size > 1 << 16)
        return 0;
    /* the --set lines, copied out of the input (at most 4, each at most 200 bytes) */
    static char sets[4][201];
    const char *set_list[4];
    int n_sets = 0;
    for (size_t i = 0; i + 5 <= size && n_sets < 4; i++) {
        if ((i == 0 || data[i - 1] == '\n') && !memcmp(data + i, "#set ", 5)) {
            size_t j = i + 5, k = 0;
            while (j < size && data[j] != '\n' && k < 200)
                sets[n_sets][k++] = data[j] == '\0' ? ' ' : (char)data[j], j++;
            sets[n_sets][k] = '\0';
            set_list[n_sets] = sets[n_sets];
            n_sets++;
        }
    }
    const char *path = fuzz_file(0, "scenario.ini", data, size);
    static scenario_t sc, back, run;
    dt_err_t err;
    if (scenario_load(&sc, path, set_list, n_sets, &err) != DT_OK) {
        if (!one_line(&err))
            __builtin_trap();
        return 0;
    }
    if (scenario_validate(&sc, &err) != DT_OK) {
        if (!one_line(&err))
            __builtin_trap();
        return 0;
    }
    /* the resolved configuration loads back */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    scenario_write(&sc, f);
    fclose(f);
    const char *again = fuzz_file(1, "written.ini", (const uint8_t *)text, len);
    free(text);
    if (scenario_load(&back, again, NULL, 0, &err) != DT_OK ||
        scenario_validate(&back, &err) != DT_OK) {
        fprintf(stderr, "written configuration does not load back: %s\n", err.msg);
        __builtin_trap();
    }
    long n = scenario_sweep_count(&sc);
    for (long i = 0; i < n && n <= 64; i++)
        if (scenario_sweep_run(&sc, i, &run, &err) != DT_OK && !one_line(&err))
            __builtin_trap();
    return 0;
}
