#!/bin/sh
# Check against a published result (figures, not a pass/fail test): Megatron-LM (Narayanan et
# al., SC'21, Table 1) trained GPT-3 175B on 1024 A100 80GB GPUs of Selene (DGX A100 servers:
# 8 GPUs on NVLink/NVSwitch, 8 x 200 Gbit/s InfiniBand each) with tensor 8 x pipeline 16 x
# data 8, a global batch of 1536 sequences of 2048 tokens, micro-batches of one, at 140
# TFLOP/s per GPU (45% of the 312 TFLOP/s BF16 peak; FLOPs counted with their formula,
# 96 B s l h^2 (1 + s/6h + V/16lh), which includes the recomputed forward pass).
#
# 1. `dtsim plan --no-run` on the same cluster: which layouts of 1024 GPUs fit 80 GB, the
#    paper's among them.
# 2. The paper's layout simulated, reduced: the 1024-GPU step with 192 micro-batches per
#    replica is too slow to simulate here (~30 minutes), so one replica (128 GPUs, 192
#    micro-batches, the whole pipeline schedule and every tensor all-reduce) is simulated,
#    plus the time the data-parallel all-reduce adds, measured as the difference of two short
#    runs of 8 micro-batches: data 8 (1024 GPUs) minus data 1.
# Assumptions (sim/docs/published.md: Checked against published and simulated references): the
# catalogue's a100-80gb at BF16, each layer timed by operation and shape (the profile's
# [shape] section; cluster.compute_model = shape: GEMMs by tiles and waves over 108 SMs at
# gemm_efficiency, whose factor 0.75 was fitted on this very figure, flash attention, memory-
# bound layers at the HBM bandwidth; sim/docs/capacity.md: Compute by operation and shape);
# --flat times every FLOP at 50% of the peak instead (tensor_efficiency, itself taken from
# this paper's 52% on 3072 GPUs), as dtsim did before; 2400 Gbit/s inside a server, 1600 Gbit/s per server uplink,
# 2 us links, CM02; 1F1B (Megatron used its interleaved schedule); full activation
# recomputation as in the paper (model.recompute = full: each stage re-runs its forward pass,
# tensor all-reduces included, before its backward pass), no sequence parallelism (not in the
# paper), Adam in mixed precision (16 bytes a parameter).
# usage: tests/bench/megatron.sh [--flat] [BUILD_DIR]   (about 5 minutes)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
model=shape
if [ "${1:-}" = --flat ]; then
    model=flat
    shift
fi
build=${1:-$here/build}
dtsim=$build/dtsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$dtsim" profile transformer --layers 96 --hidden 12288 --heads 96 --seq 2048 --vocab 51200 \
    --name gpt3-175b --out "$tmp/gpt3-175b.ini" > /dev/null

"$dtsim" plan --profile "$tmp/gpt3-175b.ini" --device a100-80gb --devices 1024 --heads 96 \
    --global-batch 1536 --no-run > "$tmp/plan.txt"
head -1 "$tmp/plan.txt"
grep ' fits: ' "$tmp/plan.txt"
echo

cat > "$tmp/megatron.ini" <<EOF
[run]
name = megatron-175b
steps = 1
eval_every = 0
[model]
arch = profile:gpt3-175b.ini
precision = bf16
optimizer = adam
recompute = full
[cluster]
platform = multi-rack
device = a100-80gb
bandwidth = 2400Gbps
uplink_bandwidth = 1600Gbps
latency = 2us
uplink_latency = 2us
network_model = CM02
[strategy]
kind = pipeline
algorithm = ring
pipeline_schedule = 1f1b
tensor = 8
stages = 16
EOF
run() { # DATA MICRO_BATCHES
    "$dtsim" run "$tmp/megatron.ini" --db "$tmp/m.db" --set strategy.data_parallel="$1" \
        --set cluster.workers=$((128 * $1)) --set cluster.racks=$((16 * $1)) \
        --set model.batch="$2" --set strategy.micro_batches="$2" \
        --set cluster.compute_model=$model > /dev/null
}
run 1 192
run 1 8
run 8 8
sqlite3 "$tmp/m.db" "SELECT group_concat(t, ' ') FROM (SELECT sim_time / steps AS t FROM run_summary ORDER BY run)" |
    awk -v model="$model" '{
        replica = $1; dp = $3 - $2; step = replica + dp
        # per sequence: Megatron-LM formula (with recomputation)
        s = 2048; l = 96; h = 12288; V = 51200
        megatron = 96 * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
        paper_step = megatron * 1536 / (140e12 * 1024)
        tflops = megatron * 1536 / step / 1024 / 1e12
        printf "GPT-3 175B, 1024 A100 80GB, tensor 8 x pipeline 16 x data 8, batch 1536 (compute: %s)\n", model
        printf "%-48s %12s %12s\n", "", "Megatron-LM", "dtsim"
        printf "%-48s %12.2f %12.2f\n", "s/step", paper_step, step
        printf "%-48s %12s %12.2f\n", "  one replica, 128 GPUs, 192 micro-batches", "", replica
        printf "%-48s %12s %12.3f\n", "  data-parallel all-reduce (8 replicas, exposed)", "", dp
        printf "%-48s %12.0f %12.1f\n", "TFLOP/s per GPU (Megatron-LM formula)", 140, tflops
        printf "%-48s %12s %12.2f\n", "dtsim / Megatron-LM", "", tflops / 140
        printf "(Megatron-LM formula: %.4g FLOP per sequence, the forward pass counted twice as it\n", megatron
        printf " recomputes it; dtsim simulates the recomputation too)\n"
    }'
