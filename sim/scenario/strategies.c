/* The strategies scenarios may name (strategy_def.h): given once by the layer that defines
 * them (sim/strategy/registry.c), asked by the key table, the checks and the engine. */
#include "strategy_def.h"

#include <stdio.h>
#include <string.h>

static const sim_strategy_t *const *in_use;

void scenario_strategies_use(const sim_strategy_t *const *list) { in_use = list; }

const sim_strategy_t *const *scenario_strategies(void)
{
    DT_ASSERT(in_use); /* sim_strategies_register() was not called */
    return in_use;
}

const sim_strategy_t *scenario_strategy_find(const char *name)
{
    for (const sim_strategy_t *const *s = scenario_strategies(); *s; s++)
        if (!strcmp((*s)->name, name))
            return *s;
    return NULL;
}

void scenario_strategies_taking(unsigned mask, const char *last, char *buf, size_t n)
{
    const sim_strategy_t *const *s = scenario_strategies();
    int total = 0, i = 0;
    for (int j = 0; s[j]; j++)
        total += (s[j]->takes & mask) == mask;
    size_t len = 0;
    buf[0] = '\0';
    for (int j = 0; s[j] && len < n; j++) {
        if ((s[j]->takes & mask) != mask)
            continue;
        const char *sep = i == 0 ? "" : i == total - 1 ? last : ", ";
        len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, s[j]->name);
        i++;
    }
}
