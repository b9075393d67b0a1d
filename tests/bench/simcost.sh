#!/bin/sh
# The simulation's own cost for every all-reduce algorithm: `dtsim bench sim` of
# tests/bench/simcost.ini (16 workers, mlp, 200 steps of batch 64) with each algorithm,
# RUNS runs each; prints each run's line, then a table with each algorithm's simulated time
# (the same in every run), the best simulation and plain-trainer wall times and the overhead
# (simulation - trainer) / simulation they give, the same from the best CPU times (a
# machine shared with other work disturbs those less), and the floor: the same simulation
# with a model of 4 hidden units at batch 1, whose training costs next to nothing (same
# messages, same count: what is left is SimGrid's and dtsim's cost per message), as a share
# of the simulation's wall time. An algorithm whose floor is above 5% cannot reach 5% while
# each of its chunks is one simulated message.
# usage: tests/bench/simcost.sh [BUILD_DIR [--set KEY=VALUE ...]]   (env: RUNS=N, default 3;
#        ALGORITHMS="ring tree", default every all-reduce)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
[ $# -gt 0 ] && shift
dtsim=$build/dtsim
runs=${RUNS:-3}
algorithms=${ALGORITHMS:-ring tree halving-doubling hierarchical 2d}

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | tr -d s; }
min() { awk -v a="$1" -v b="${2:-$1}" 'BEGIN { print (a < b ? a : b) }'; }

table=""
for a in $algorithms; do
    sw="" tw="" sc="" tc="" fw=""
    i=0
    while [ "$i" -lt "$runs" ]; do
        line=$("$dtsim" bench sim "$here/tests/bench/simcost.ini" \
               --set strategy.algorithm="$a" "$@")
        echo "$line"
        sw=$(min "$(field "$line" sim_wall_s)" "$sw")
        tw=$(min "$(field "$line" trainer_wall_s)" "$tw")
        sc=$(min "$(field "$line" sim_cpu_s)" "$sc")
        tc=$(min "$(field "$line" trainer_cpu_s)" "$tc")
        simtime=$(field "$line" sim_time)
        line=$("$dtsim" bench sim "$here/tests/bench/simcost.ini" \
               --set strategy.algorithm="$a" "$@" --set model.hidden=4 --set model.batch=1)
        echo "floor: $line"
        fw=$(min "$(field "$line" sim_wall_s)" "$fw")
        i=$((i + 1))
    done
    table="$table$(awk -v a="$a" -v st="$simtime" -v sw="$sw" -v tw="$tw" -v sc="$sc" \
        -v tc="$tc" -v fw="$fw" 'BEGIN { printf "| %s | %s s | %.3f s | %.3f s | %.1f%% | %.3f s | %.3f s | %.1f%% | %.3f s (%.1f%%) |",
                     a, st, sw, tw, 100 * (sw - tw) / sw, sc, tc, 100 * (sc - tc) / sc, fw, 100 * fw / sw }')
"
done
echo
echo "| all-reduce | simulated | simulation wall | trainer wall | overhead | simulation CPU | trainer CPU | CPU overhead | floor (share) |"
echo "|---|---|---|---|---|---|---|---|---|"
printf "%s" "$table"
