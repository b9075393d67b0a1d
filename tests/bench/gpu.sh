#!/bin/sh
# GPU benchmarks: figures, not pass/fail tests (tests/README.md holds the last ones).
#   1. training speed: mlp and cnn, batch 64, one epoch of Fashion-MNIST, on the CPU backend
#      (THREADS OpenBLAS threads, default all cores) and on the CUDA backend;
#   2. the matrix products at large batch: sgemm_gflops of the mlp 4096,4096 at batch 4096
#      and of the cnn at batch 1024 (cuBLAS FP32, no TF32), and their fraction of PEAK_TFLOPS
#      (default 66.9: the H100 SXM's FP32 peak at its 1980 MHz boost clock);
#   3. a fedavg round of 100 clients (scenarios/gpu/fedavg-100.ini, mlp and cnn): wall seconds
#      per round with the clients side by side and one after the other; and local-sgd with
#      64 workers (scenarios/mlp8/local-sgd.ini, 200 steps, periods of 8): wall seconds per
#      step of all workers, side by side and one after the other.
# usage: tests/bench/gpu.sh [BUILD_DIR]   (needs a CUDA build and a GPU)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
threads=${THREADS:-$(nproc)}
peak=${PEAK_TFLOPS:-66.9}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo "== 1. training speed: batch 64, 1 epoch (CPU: $threads threads)"
for model in mlp cnn; do
    for device in cpu cuda; do
        "$dtsim" bench trainer --model "$model" --device "$device" --threads "$threads" \
            --batch 64 --epochs 1
    done
done

echo "== 2. matrix products at large batch (FP32 peak taken as $peak TFLOP/s)"
for spec in "mlp --hidden 4096,4096 --batch 4096" "cnn --batch 1024"; do
    set -- $spec
    line=$("$dtsim" bench trainer --device cuda --epochs 1 --model "$@")
    echo "$line"
    g=$(field "$line" sgemm_gflops)
    awk -v g="$g" -v p="$peak" -v m="$1" \
        'BEGIN { printf "%s: matrix products %.1f TFLOP/s = %.0f%% of FP32 peak\n", m, g / 1000, 100 * g / 1000 / p }'
done

echo "== 3. fedavg, 100 clients per round, 5 rounds (scenarios/gpu/fedavg-100.ini)"
for model in mlp cnn; do
    for side in yes no; do
        line=$("$dtsim" bench sim "$here/scenarios/gpu/fedavg-100.ini" --set model.device=cuda \
               --set model.arch=$model --set model.side_by_side=$side)
        echo "$line"
        awk -v w="$(field "$line" sim_wall_s)" -v m="$model" -v s="$side" \
            'BEGIN { printf "fedavg %s side_by_side=%s: %.3f s per round\n", m, s, w / 5 }'
    done
done

echo "== 3b. local-sgd, 64 workers, 200 steps (scenarios/mlp8/local-sgd.ini)"
for model in mlp cnn; do
    for side in yes no; do
        line=$("$dtsim" bench sim "$here/scenarios/mlp8/local-sgd.ini" --set model.device=cuda \
               --set model.arch=$model --set model.side_by_side=$side --set cluster.workers=64 \
               --set run.steps=200 --set run.eval_every=0)
        echo "$line"
        awk -v w="$(field "$line" sim_wall_s)" -v m="$model" -v s="$side" \
            'BEGIN { printf "local-sgd %s side_by_side=%s: %.2f ms per step of 64 workers\n", m, s, 1000 * w / 200 }'
    done
done
