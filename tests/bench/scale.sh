#!/bin/sh
# Scale benchmark (figures, not a pass/fail test): timing-only runs of thousands of workers
# and of a 100,000-client federation on one core, with the wall time and peak memory (RSS of
# the dtsim process, from /usr/bin/time) of each:
#   - scenarios/scale/ring-4096.ini: ResNet-50, 100 steps, ring and hierarchical all-reduce
#     on 1024 and 4096 workers of a fat-tree;
#   - scenarios/scale/fedavg-100k.ini: 100 rounds sampling 100 of 100,000 clients, and the
#     same with a population of 1,000 (memory must not follow the population).
# The baseline memory of any dtsim command is printed first (in a CUDA build the cuBLAS
# libraries alone map about 250 MB).
# usage: tests/bench/scale.sh [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
db=$(mktemp -d)/scale.db
trap 'rm -rf "$(dirname "$db")"' EXIT

measure() { # label, then dtsim arguments: prints the label, wall time, peak memory, sim time
    label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$db.time" "$dtsim" "$@" > "$db.out"
    set -- $(cat "$db.time")
    sim=$(awk 'NR == 2 { print $5 }' "$db.out")
    printf "%-50s wall %7.1f s  peak %6.0f MB  simulated %s\n" "$label" "$1" "$(($2 / 1024))" "$sim"
}

measure "baseline (dtsim keys)" keys
for algo in ring hierarchical; do
    for n in 1024 4096; do
        measure "resnet50 $algo, $n workers, 100 steps" run "$here/scenarios/scale/ring-4096.ini" \
            --db "$db" --set strategy.algorithm=$algo --set cluster.workers=$n
    done
done
for pop in 1000 100000; do
    measure "fedavg $pop clients, 100 per round, 100 rounds" run \
        "$here/scenarios/scale/fedavg-100k.ini" --db "$db" --set strategy.clients=$pop \
        --set strategy.fraction=$(awk -v p=$pop 'BEGIN { print 100 / p }')
done
