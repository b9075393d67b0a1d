#!/bin/sh
# How fast dtsim answers a capacity planner (figures, not a pass/fail test): the wall time,
# best of REPEAT (default 3), of
#   1. one step of GPT-3 175B on 1024 A100s (tensor 8 x pipeline 16 x data 8, batch 1536 in
#      micro-batches of one: 192 per replica), simulated whole, one actor per tensor group;
#   2. one step of the 1T-parameter GPT of Narayanan et al. 2021 on 3072 A100s (128 layers,
#      hidden 25600, 160 heads; tensor 8 x pipeline 64 x data 6, batch 3072: 512
#      micro-batches per replica);
#   3. `dtsim plan` of Llama-2 70B on 64 H100s (global batch 512, -j 2): every fitting
#      layout simulated and ranked;
#   4. Llama 3 405B on 16,384 H100s (tensor 8 x pipeline 16 x data 128, 2048 sequences of
#      8192 tokens, micro-batches of one: 16 per replica), one step simulated whole;
#   5. `dtsim plan` of that 405B on 16,384 H100s (global batch 2048, --tensor 8 --stages 16,
#      -j 2): its layouts of micro-batch size, schedule, sequence parallelism,
#      recomputation and ZeRO checked, simulated in order of their bound and ranked (16
#      stages of 126 layers: the pipeline cuts them unevenly);
#   6. the whole search of that plan: item 5 without --tensor and --stages, every tensor x
#      pipeline x data layout of the 16,384 H100s (-j 2) checked, simulated in order of
#      their bound and ranked.
# The user CPU time of the best run is printed beside it: on a shared machine it is the
# steadier figure (a simulation is one thread; plan -j 2 runs two).
# Tensor all-reduces in closed form (strategy.tensor_comm = formula, as dtsim plan runs them),
# one member of each tensor group simulated for the 8 (strategy.tensor_members = one) and the
# replicas' ring all-reduces a message per phase (strategy.ring_messages = phases); the same
# simulated times as step-by-step messages and every member within 0.5% (the sim suite's
# tensor_formula_matches_messages, tensor_members_one_matches_all and
# ring_phases_match_ring_steps). REPEAT=1 MEMBERS=all reruns items 1, 2 and 4 with every
# member an actor.
# usage: tests/bench/planspeed.sh [BUILD_DIR] [ITEM ...]   (items 1-6; default all)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
[ $# -gt 0 ] && shift
items=${*:-1 2 3 4 5 6}
dtsim=$build/dtsim
repeat=${REPEAT:-3}
members=${MEMBERS:-one}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# best: label, then a command; runs it REPEAT times, prints the best wall time and the
# command's last line of interest (its simulated step)
best() {
    label=$1
    shift
    b=""
    for k in $(seq "$repeat"); do
        rm -f "$tmp"/*.db
        /usr/bin/time -f "%e %M %U" -o "$tmp/time" "$@" > "$tmp/out" 2> "$tmp/err" || {
            echo "$label: failed"; tail -3 "$tmp/err"; return 0; }
        w=$(cut -d' ' -f1 "$tmp/time")
        if [ -z "$b" ] || awk -v w="$w" -v b="$b" 'BEGIN { exit !(w < b) }'; then
            b=$w
            m=$(cut -d' ' -f2 "$tmp/time")
            u=$(cut -d' ' -f3 "$tmp/time")
        fi
    done
    sim=$(awk '$2 == "pipeline" && $3 == "finished" { print $5; exit }' "$tmp/out")
    # a plan: how many layouts it simulated and pruned, and its best step
    plan=$(awk '/layouts, .* fit, / { fit = $0; sub(/.*: /, "", fit); sub(/, at most.*/, "", fit) }
        /^1 / { for (k = 2; $k !~ /^[0-9]+$/; k++) best = best (k > 2 ? " " : "") $k
                best = best ", " $(k + 1) " s a step" }
        /^pruned / { pruned = $2 }
        END { if (fit != "") printf "%s, %s pruned; best %s", fit, pruned + 0, best }' "$tmp/out")
    printf "%-56s wall %6.1f s (best of %d; user %6.1f s)  peak %5d MB  %s%s\n" "$label" "$b" \
        "$repeat" "$u" $((m / 1024)) "${sim:+simulated $sim a step}" "$plan"
}

. "$here/tests/bench/frontier.sh" # scenario NAME PROFILE DEVICE UPLINK

echo "planspeed: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), load $(cut -d' ' -f1-3 /proc/loadavg)"
for item in $items; do
    case $item in
    1)
        "$dtsim" profile transformer --layers 96 --hidden 12288 --heads 96 --seq 2048 \
            --vocab 51200 --name gpt3-175b --out "$tmp/gpt3-175b.ini" > /dev/null
        scenario gpt3 gpt3-175b.ini a100-80gb 1600Gbps
        best "GPT-3 175B, 1024 A100s, t8 p16 d8, 192 micro-batches" \
            "$dtsim" run "$tmp/gpt3.ini" --db "$tmp/a.db" --set strategy.stages=16 \
            --set strategy.data_parallel=8 --set cluster.workers=1024 --set cluster.racks=128 \
            --set model.batch=192 --set strategy.micro_batches=192 \
            --set strategy.tensor_members="$members"
        ;;
    2)
        "$dtsim" profile transformer --layers 128 --hidden 25600 --heads 160 --seq 2048 \
            --vocab 51200 --name gpt-1t --out "$tmp/gpt-1t.ini" > /dev/null
        scenario gpt1t gpt-1t.ini a100-80gb 1600Gbps
        best "GPT 1T, 3072 A100s, t8 p64 d6, 512 micro-batches" \
            "$dtsim" run "$tmp/gpt1t.ini" --db "$tmp/a.db" --set strategy.stages=64 \
            --set strategy.data_parallel=6 --set cluster.workers=3072 --set cluster.racks=384 \
            --set model.batch=512 --set strategy.micro_batches=512 \
            --set strategy.tensor_members="$members"
        ;;
    3)
        "$dtsim" profile transformer --family llama --layers 80 --hidden 8192 --heads 64 \
            --kv-heads 8 --seq 4096 --vocab 32000 --ffn 28672 --name llama2-70b \
            --out "$tmp/llama2-70b.ini" > /dev/null
        best "dtsim plan Llama-2 70B, 64 H100s, batch 512, -j 2" \
            "$dtsim" plan --profile "$tmp/llama2-70b.ini" --device h100 --devices 64 \
            --heads 64 --global-batch 512 -j 2 --set cluster.price_per_device_hour=4 \
            --db "$tmp/a.db"
        ;;
    4)
        "$dtsim" profile transformer --family llama --layers 126 --hidden 16384 --heads 128 \
            --kv-heads 8 --seq 8192 --vocab 128256 --ffn 53248 --name llama3-405b \
            --out "$tmp/llama3-405b.ini" > /dev/null
        scenario llama3 llama3-405b.ini h100 3200Gbps
        best "Llama 3 405B, 16384 H100s, t8 p16 d128, 16 micro-batches" \
            "$dtsim" run "$tmp/llama3.ini" --db "$tmp/a.db" --set strategy.stages=16 \
            --set strategy.data_parallel=128 --set cluster.workers=16384 \
            --set cluster.racks=2048 --set model.batch=16 --set strategy.micro_batches=16 \
            --set strategy.sequence_parallel=yes --set strategy.tensor_members="$members"
        ;;
    5)
        "$dtsim" profile transformer --family llama --layers 126 --hidden 16384 --heads 128 \
            --kv-heads 8 --seq 8192 --vocab 128256 --ffn 53248 --name llama3-405b \
            --out "$tmp/llama3-405b.ini" > /dev/null
        best "dtsim plan Llama 3 405B, 16384 H100s, t8 p16, -j 2" \
            "$dtsim" plan --profile "$tmp/llama3-405b.ini" --device h100 --devices 16384 \
            --heads 128 --global-batch 2048 --tensor 8 --stages 16 -j 2 \
            --set cluster.price_per_device_hour=4 --db "$tmp/a.db"
        ;;
    6)
        "$dtsim" profile transformer --family llama --layers 126 --hidden 16384 --heads 128 \
            --kv-heads 8 --seq 8192 --vocab 128256 --ffn 53248 --name llama3-405b \
            --out "$tmp/llama3-405b.ini" > /dev/null
        best "dtsim plan Llama 3 405B, 16384 H100s, every layout, -j 2" \
            "$dtsim" plan --profile "$tmp/llama3-405b.ini" --device h100 --devices 16384 \
            --heads 128 --global-batch 2048 -j 2 --set cluster.price_per_device_hour=4 \
            --db "$tmp/a.db"
        ;;
    *) echo "planspeed: no item $item (1-6)" >&2; exit 2 ;;
    esac
done
