/* single: one worker, the baseline every other strategy is compared with. */
#include "strategy.h"

static void worker(sim_node_t *node) { sim_dp_loop(sim_current, node, NULL); }

static void deploy(sim_run_t *run) { sim_spawn(run, &run->workers[0], worker); }

const sim_strategy_t sim_strategy_single = {SIM_STRATEGY_SINGLE, "single", deploy};
