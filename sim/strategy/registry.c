/* The strategy registry: one line per strategy in STRATEGIES (its file, NAME.c, fills
 * sim_strategy_NAME). The order is that of `dtsim keys` and the strategy table. */
#include "strategy.h"

#define STRATEGIES(X)                                                                              \
    X(single)                                                                                      \
    X(sync_ps)                                                                                     \
    X(async_ps)                                                                                    \
    X(allreduce)                                                                                   \
    X(local_sgd)                                                                                   \
    X(fedavg)                                                                                      \
    X(fedbuff)                                                                                     \
    X(hierfl)                                                                                      \
    X(pipeline)                                                                                    \
    X(tensor)                                                                                      \
    X(zero)

#define DECLARE(name) extern const sim_strategy_t sim_strategy_##name;
STRATEGIES(DECLARE)
#define ENTRY(name) &sim_strategy_##name,
const sim_strategy_t *const sim_strategies[] = {STRATEGIES(ENTRY) NULL};

void sim_strategies_register(void)
{
    scenario_strategies_use(sim_strategies);
}

void sim_strategies_write_markdown(FILE *out)
{
    fprintf(out, "| kind | keys | what happens each step |\n|---|---|---|\n");
    char keys[2048];
    for (const sim_strategy_t *const *s = sim_strategies; *s; s++) {
        scenario_strategy_keys(*s, keys, sizeof keys);
        fprintf(out, "| `%s` | %s | %s |\n", (*s)->name, keys, (*s)->about);
    }
}
