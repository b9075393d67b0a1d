#!/bin/sh
# dtsim's ring all-reduce against SimGrid's own MPI (figures, not a pass/fail test): one
# all-reduce of a float gradient on the same platform XML (what `dtsim platform` writes for
# the scenario), under the same network model, timed by dtsim (a timing-only run of one
# step whose model is that one gradient, compute made negligible) and by SMPI
# (tests/bench/smpi_allreduce.c built with smpicc, run by smpirun with MPI_Allreduce's
# "lr" algorithm: the logical ring, reduce-scatter then all-gather, chunks of N/p).
# Sizes divide by the ranks (lr all-reduces a remainder separately, with another algorithm).
# SMPI is told not to time the program's own computation (smpi/simulate-computation:no).
# Each SMPI rank holds its input and output for real (sizes kept to about 1 GB in all).
# usage: tests/bench/smpi.sh [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

smpicc -O2 -o "$tmp/smpi_allreduce" "$here/tests/bench/smpi_allreduce.c"

# case: label, floats, workers, network model, then [cluster] lines
case_run() {
    label=$1 n=$2 workers=$3 net=$4
    shift 4
    cat > "$tmp/grad.ini" <<PROFILE
[profile]
name = one-gradient
sample = none (the model is one gradient, for timing one all-reduce)
source = tests/bench/smpi.sh
params = $n
forward_flops = 1
backward_flops = 1
[backward]
gradient = $n 1
PROFILE
    {
        printf '[run]\nname = smpi-check\nsteps = 1\neval_every = 0\n'
        printf '[model]\narch = profile:grad.ini\nbatch = 1\n'
        printf '[cluster]\nworkers = %s\nnetwork_model = %s\ndevice_flops = 1Pf\n' "$workers" "$net"
        for line in "$@"; do printf '%s\n' "$line"; done
        printf '[strategy]\nkind = allreduce\nalgorithm = ring\nring_messages = steps\n'
    } > "$tmp/check.ini"
    rm -f "$tmp/check.db"
    "$dtsim" run "$tmp/check.ini" --db "$tmp/check.db" > /dev/null
    rm -rf "$tmp/csv"
    "$dtsim" export --csv --db "$tmp/check.db" --out "$tmp/csv" > /dev/null
    # the run's simulated time, full precision from the database: its compute (2 FLOPs at
    # 1 PFLOP/s and the update) is below 1e-13 s, the rest is the all-reduce
    ours=$(awk -F, 'NR == 2 { printf "%.9f", $4 }' "$tmp/csv/summary.csv")
    "$dtsim" platform "$tmp/check.ini" > "$tmp/platform.xml"
    seq 0 $((workers - 1)) | sed 's/^/node-/' > "$tmp/hosts"
    # SMPI as it comes, then with every send a rendezvous (no eager, "detached" sends
    # below smpi/send-is-detached-thresh, 64 KiB by default: dtsim's ring, like NCCL's,
    # has no eager protocol)
    for thresh in 65536 0; do
        smpirun -np "$workers" -platform "$tmp/platform.xml" -hostfile "$tmp/hosts" \
            --cfg=network/model:"$net" --cfg=smpi/allreduce:lr \
            --cfg=smpi/simulate-computation:no --cfg=smpi/send-is-detached-thresh:$thresh \
            "$tmp/smpi_allreduce" "$n" > "$tmp/smpi.$thresh" 2> "$tmp/smpi.err" || {
            cat "$tmp/smpi.err" >&2
            exit 1
        }
    done
    awk -v l="$label" -v net="$net" -v a="$ours" -v b="$(cat "$tmp/smpi.65536")" \
        -v c="$(cat "$tmp/smpi.0")" -v chunk="$((4 * n / workers / 1024))" 'BEGIN {
        printf "%-38s %5s %-5s %10.6f %10.6f %+7.2f%% %10.6f %+7.2f%%\n", l, chunk, net, a,
               b, 100 * (a - b) / b, c, 100 * (a - c) / c }'
}

printf "%-38s %5s %-5s %10s %10s %8s %10s %8s\n" "platform, all-reduce" "chunk" "model" \
    "dtsim s" "SMPI s" "diff" "SMPI rdv s" "diff"
for net in CM02 SMPI LV08; do
    case_run "star 16 x 10Gbps, 25 MB" 6250000 16 $net "platform = star" "bandwidth = 10Gbps"
    case_run "multi-rack 4 x 8, 10/25Gbps, 8 MB" 2000000 32 $net "platform = multi-rack" \
        "racks = 4" "bandwidth = 10Gbps" "uplink_bandwidth = 25Gbps"
    case_run "fat-tree 64 x 25/100Gbps, 4 MB" 1000000 64 $net "platform = fat-tree" \
        "bandwidth = 25Gbps" "uplink_bandwidth = 100Gbps" "latency = 2us"
done
echo "(chunk: KiB per ring message; SMPI rdv: SMPI with smpi/send-is-detached-thresh:0, every"
echo " message a rendezvous as in dtsim; diff: dtsim minus SMPI, relative to SMPI)"
