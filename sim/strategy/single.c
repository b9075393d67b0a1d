/* single: one worker, the baseline every other strategy is compared with. */
#include "strategy.h"

static void worker(sim_node_t *node)
{
    sim_dp_loop(sim_current, node, NULL);
}

static void deploy(sim_run_t *run)
{
    sim_spawn(run, &run->workers[0], worker);
}

static void hosts(const scenario_t *sc, int *workers, int *servers)
{
    (void)sc;
    *workers = 1;
    *servers = 0;
}

static int replicas(const scenario_t *sc, int workers)
{
    (void)sc;
    (void)workers;
    return 1;
}

static long parts(const scenario_t *sc, long workers)
{
    (void)sc;
    (void)workers;
    return 1;
}

const sim_strategy_t sim_strategy_single = {
    .name = "single",
    .about = "one worker (on one host), SGD on its own batch: the baseline",
    .worker_role = "worker",
    .takes = SIM_TAKES_ACCUMULATE | SIM_SAME_AS_SINGLE | SIM_RUNS_REAL,
    .hosts = hosts,
    .replicas = replicas,
    .parts = parts,
    .deploy = deploy,
};
