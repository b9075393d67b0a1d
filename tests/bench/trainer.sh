#!/bin/sh
# Trainer benchmarks: figures, not pass/fail tests.
#   1. speed: `dtsim bench trainer` (mlp 784-256-128-10, batch 64, 1 epoch, 1 thread) side by
#      side with the same MLP in PyTorch (peers/torch_mlp.py, Debian's python3-torch), best
#      of 3 runs each, and the ratio;
#   2. accuracy: mlp and cnn for 10 epochs against the targets 0.88 and 0.90.
# usage: tests/bench/trainer.sh [BUILD_DIR]   (env: PEERS=dir holding torch_mlp.py,
#        SKIP_ACCURACY=1 to run only the speed part)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
peers=${PEERS:-$here/../shared/peers}

best() { # prints the line with the highest samples_per_s among stdin's lines
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^samples_per_s=/) { split($i, a, "=");
           if (a[2] + 0 > b) { b = a[2] + 0; l = $0 } } } END { print l }'
}
rate() { echo "$1" | tr ' ' '\n' | sed -n 's/^samples_per_s=//p'; }

echo "== speed: mlp 784-256-128-10, batch 64, 1 epoch, 1 thread (best of 3)"
ours=$(for i in 1 2 3; do "$dtsim" bench trainer --model mlp --hidden 256,128 --batch 64 \
        --epochs 1 --threads 1; done | best)
echo "$ours"
if [ -f "$peers/torch_mlp.py" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    theirs=$(for i in 1 2 3; do /usr/bin/python3 "$peers/torch_mlp.py" --epochs 1 --batch 64 \
              --hidden 256,128 --threads 1; done | best)
    echo "$theirs"
    awk -v a="$(rate "$ours")" -v b="$(rate "$theirs")" \
        'BEGIN { printf "dtsim/torch samples_per_s ratio=%.2f (target >= 1.2)\n", a / b }'
else
    echo "torch peer skipped: need $peers/torch_mlp.py and Debian's python3-torch"
fi

[ "${SKIP_ACCURACY:-0}" = 1 ] && exit 0
echo "== accuracy: 10 epochs, momentum 0.9, cosine schedule, 2 threads"
for spec in "mlp 0.88 --lr 0.05" "cnn 0.90 --lr 0.05"; do
    set -- $spec
    model=$1 target=$2
    shift 2
    line=$("$dtsim" bench trainer --model "$model" --epochs 10 --momentum 0.9 \
           --schedule cosine --threads 2 "$@")
    echo "$line"
    acc=$(echo "$line" | tr ' ' '\n' | sed -n 's/^test_acc=//p')
    awk -v a="$acc" -v t="$target" -v m="$model" \
        'BEGIN { printf "%s test_acc=%s target=%s %s\n", m, a, t, (a >= t ? "met" : "NOT met") }'
done
