#!/bin/sh
# The simulation's own cost for every all-reduce algorithm: `dtsim bench sim` of
# tests/bench/simcost.ini (16 workers, mlp, 200 steps of batch 64) with each algorithm,
# 3 runs each; prints each run's line, then a table of the best simulation wall time, the
# best plain-trainer wall time and the overhead (simulation - trainer) / simulation they
# give, with the simulated time (equal in every run of one algorithm).
# usage: tests/bench/simcost.sh [BUILD_DIR] [--set KEY=VALUE ...]   (env: RUNS=N, default 3;
#        ALGORITHMS="ring tree", default every all-reduce)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
[ $# -gt 0 ] && shift
dtsim=$build/dtsim
runs=${RUNS:-3}
algorithms=${ALGORITHMS:-ring tree halving-doubling hierarchical 2d}

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | tr -d s; }

table=""
for a in $algorithms; do
    sim="" trainer="" simtime=""
    i=0
    while [ $i -lt "$runs" ]; do
        line=$("$dtsim" bench sim "$here/tests/bench/simcost.ini" \
               --set strategy.algorithm="$a" "$@")
        echo "$line"
        s=$(field "$line" sim_wall_s) t=$(field "$line" trainer_wall_s)
        simtime=$(field "$line" sim_time)
        sim=$(awk -v a="$s" -v b="${sim:-$s}" 'BEGIN { print (a < b ? a : b) }')
        trainer=$(awk -v a="$t" -v b="${trainer:-$t}" 'BEGIN { print (a < b ? a : b) }')
        i=$((i + 1))
    done
    table="$table$(awk -v a="$a" -v s="$sim" -v t="$trainer" -v st="$simtime" \
        'BEGIN { printf "| %s | %s s | %.3f s | %.3f s | %.1f%% |", a, st, s, t,
                 100 * (s - t) / s }')
"
done
echo
echo "| algorithm | simulated time | simulation wall (best of $runs) | plain trainer (best of $runs) | overhead |"
echo "|---|---|---|---|---|"
printf "%s" "$table"
