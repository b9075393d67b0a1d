/* The strategies scenarios may name (strategy_def.h): given once by the layer that defines
 * them (sim/strategy/registry.c), asked by the key table, the checks and the engine. */
#include "strategy_def.h"

#include "keys_impl.h"

#include <stdio.h>
#include <string.h>

static const sim_strategy_t *const *in_use;

void scenario_strategies_use(const sim_strategy_t *const *list)
{
    in_use = list;
    scn_keys_use_strategies(list);
}

const sim_own_value_t *scenario_own(const scenario_t *sc, const char *key)
{
    /* Callers name keys with literals, read in loops: the row of each is remembered by the
     * name's address (a table of SEEN, replaced in turn when full), and its name compared. */
    enum { SEEN = 64 };
    static struct {
        const char *key;
        const key_desc_t *row;
    } seen[SEEN];
    static unsigned next;
    static const key_desc_t *table;
    if (table != scn_key_table) { /* the key table was made again */
        memset(seen, 0, sizeof seen);
        table = scn_key_table;
    }
    int k = -1;
    for (unsigned i = 0; i < SEEN && seen[i].key && k < 0; i++)
        if (seen[i].key == key && !strcmp(seen[i].row->key, key)) /* a buffer reused */
            k = (int)(seen[i].row - scn_key_table);
    if (k < 0) {
        k = scn_key_find("strategy", key);
        DT_ASSERT(k >= 0); /* not a key: its strategy was not registered */
        seen[next % SEEN].key = key;
        seen[next % SEEN].row = &scn_key_table[k];
        next++;
    }
    size_t off = scn_key_table[k].off, base = offsetof(scenario_t, own);
    DT_ASSERT(off >= base && off < base + sizeof sc->own); /* a built-in key, not an own one */
    return &sc->own[(off - base) / sizeof(sim_own_value_t)];
}

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

int scenario_strategy_reads(const sim_strategy_t *st, const char *key)
{
    if (!strcmp(key, "kind"))
        return 1;
    for (const sim_strategy_key_t *k = st->own_keys; k && k->key; k++)
        if (!strcmp(k->key, key))
            return 1;
    unsigned bit = scn_keys_technique(key);
    return bit && (st->takes & bit);
}

void scenario_strategy_keys(const sim_strategy_t *st, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < scn_key_count && len < n; k++)
        if (!strcmp(scn_key_table[k].section, "strategy") && strcmp(scn_key_table[k].key, "kind") &&
            scenario_strategy_reads(st, scn_key_table[k].key))
            len += (size_t)snprintf(buf + len, n - len, "%s`%s`", len ? ", " : "",
                                    scn_key_table[k].key);
}

/* "a, b and c" (last before the final name) of the strategies `pick` keeps. */
static void join_names(int (*pick)(const sim_strategy_t *st, const void *arg), const void *arg,
                       const char *last, char *buf, size_t n)
{
    const sim_strategy_t *const *s = scenario_strategies();
    int total = 0, i = 0;
    for (int j = 0; s[j]; j++)
        total += pick(s[j], arg);
    size_t len = 0;
    buf[0] = '\0';
    for (int j = 0; s[j] && len < n; j++) {
        if (!pick(s[j], arg))
            continue;
        const char *sep = i == 0 ? "" : i == total - 1 ? last : ", ";
        len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, s[j]->name);
        i++;
    }
}

/* What list_names keeps: takes, masked, equal to want, and (federated) trainers that are
 * clients. */
typedef struct {
    unsigned mask, want;
    int federated;
} takes_pick_t;

static int takes_pick(const sim_strategy_t *st, const void *arg)
{
    const takes_pick_t *p = arg;
    return (st->takes & p->mask) == p->want &&
           (!p->federated || !strcmp(st->worker_role, "client"));
}

static void list_names(unsigned mask, unsigned want, int federated, const char *last, char *buf,
                       size_t n)
{
    join_names(takes_pick, &(takes_pick_t){mask, want, federated}, last, buf, n);
}

static int reads_pick(const sim_strategy_t *st, const void *key)
{
    return scenario_strategy_reads(st, key);
}

void scenario_key_readers(const char *key, const char *last, char *buf, size_t n)
{
    join_names(reads_pick, key, last, buf, n);
}

void scenario_strategies_taking(unsigned mask, const char *last, char *buf, size_t n)
{
    list_names(mask, mask, 0, last, buf, n);
}

void scenario_strategies_lacking(unsigned mask, const char *last, char *buf, size_t n)
{
    list_names(mask, 0, 0, last, buf, n);
}

void scenario_strategies_federated(unsigned mask, const char *last, char *buf, size_t n)
{
    list_names(mask, mask, 1, last, buf, n);
}
