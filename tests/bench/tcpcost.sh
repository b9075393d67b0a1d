#!/bin/sh
# What the tcp network model costs the simulation: `dtsim bench sim` of the scenarios that
# `dtsim validate` checks (the ring of two and sync-ps of tests' allreduce-4.ini with 2
# workers, fedavg-2.ini; at 100 Mbit/s and 20 ms links) and of a 64-worker ring
# (tests/bench/simcost.ini at 5 ms links), each under CM02 and under tcp, RUNS runs each
# (the best wall time kept). Each also runs as its floor (a model of 4 hidden units at batch
# 1: the same messages with next to no training), where the network model's own cost is
# most of the wall time. Prints each run's line, then a table: simulated seconds, wall
# seconds, wall seconds per simulated second, and tcp's wall time over CM02's.
# usage: tests/bench/tcpcost.sh [BUILD_DIR]   (env: RUNS=N, default 3; CONGESTION=NAME, the
# tcp runs' cluster.tcp_congestion, default cubic: bbr samples its delivery rate per message)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
runs=${RUNS:-3}
congestion=${CONGESTION:-cubic}

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | tr -d s; }
min() { awk -v a="$1" -v b="${2:-$1}" 'BEGIN { print (a < b ? a : b) }'; }

# name|scenario|sets
cases="ring-2|scenarios/real/allreduce-4.ini|--set cluster.workers=2 --set run.steps=100 --set cluster.bandwidth=100Mbps --set cluster.latency=20ms
sync-ps-2|scenarios/real/allreduce-4.ini|--set cluster.workers=2 --set strategy.kind=sync-ps --set run.steps=100 --set cluster.bandwidth=100Mbps --set cluster.latency=20ms
fedavg-2|scenarios/real/fedavg-2.ini|--set run.steps=50 --set strategy.rounds=50 --set cluster.bandwidth=100Mbps --set cluster.latency=20ms
ring-64|tests/bench/simcost.ini|--set cluster.workers=64 --set run.steps=50 --set cluster.latency=5ms"

table=""
IFS_SAVE=$IFS
echo "$cases" > "${TMPDIR:-/tmp}/tcpcost.$$"
while IFS='|' read -r name scenario sets; do
    for floor in "" "--set model.hidden=4 --set model.batch=1"; do
        row="$name${floor:+ (floor)}"
        for model in CM02 tcp; do
            best=""
            i=0
            while [ "$i" -lt "$runs" ]; do
                IFS=$IFS_SAVE
                # shellcheck disable=SC2086 # sets and floor are lists of options
                cc=""
                [ "$model" = CM02 ] || cc="--set cluster.tcp_congestion=$congestion"
                # shellcheck disable=SC2086 # cc is a list of options
                line=$("$dtsim" bench sim "$here/$scenario" $sets $floor --set run.eval_every=0 \
                       --set cluster.network_model=$model $cc)
                echo "$row $model: $line"
                best=$(min "$(field "$line" sim_wall_s)" "$best")
                simtime=$(field "$line" sim_time)
                i=$((i + 1))
            done
            eval "wall_$model=$best sim_$model=$simtime"
        done
        # shellcheck disable=SC2154 # set by the eval above
        table="$table$(awk -v r="$row" -v sc="$sim_CM02" -v st="$sim_tcp" -v wc="$wall_CM02" \
            -v wt="$wall_tcp" 'BEGIN { printf "| %s | %.4g s | %.4g s | %.3f s | %.3f s | %.4f | %.4f | %.2fx |", r, sc, st, wc, wt, wc / sc, wt / st, wt / wc }')
"
    done
done < "${TMPDIR:-/tmp}/tcpcost.$$"
rm -f "${TMPDIR:-/tmp}/tcpcost.$$"
echo
echo "| case | simulated, CM02 | simulated, tcp | wall, CM02 | wall, tcp | wall / simulated s, CM02 | wall / simulated s, tcp | tcp's wall / CM02's |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s' "$table"
