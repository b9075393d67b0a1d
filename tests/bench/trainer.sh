#!/bin/sh
# Trainer benchmarks: figures, not pass/fail tests.
#   1. speed: `dtsim bench trainer` side by side with the same network in PyTorch
#      (peers/torch_mlp.py and torch_cnn.py, Debian's python3-torch), batch 64, 1 epoch, one
#      thread (OPENBLAS_NUM_THREADS=1 for both), for the mlp 784-256-128-10 and the cnn (conv
#      16,32, fc 128): three runs each, ours and theirs interleaved so that both see the same
#      load, the best of each, and the ratio against its target (mlp 1.2, cnn 1.5);
#      and the transformer (gpt: 2 layers, hidden 64, 4 heads, seq 64, byte tokens of
#      base-files' GPL-3, its first 3,200 windows, 1 epoch = 50 steps) against
#      tests/bench/torch_gpt.py (target 1.5): the same wall-clock table, then, as the machine
#      may be shared, the same ratio in user CPU time: per side, the user time of a 3-epoch run
#      less that of a 1-epoch run on the first 1,920 windows (`dtsim train`, which has no
#      sgemm-only pass, and the peer with --eval-every-epoch: both evaluate the 3,450
#      validation windows after each epoch), best of 3 interleaved;
#   2. accuracy: mlp and cnn for 10 epochs against the targets 0.88 and 0.90.
# The CPU is named first (lscpu's model name).
# usage: tests/bench/trainer.sh [BUILD_DIR]   (env: PEERS=dir holding torch_mlp.py and
#        torch_cnn.py, SKIP_ACCURACY=1 to run only the speed part, ONLY="MODEL ..." for the
#        speed rows of those models alone: mlp, cnn, gpt)
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

# speed MODEL TARGET DTSIM_ARGS PEER_ARGS: three interleaved runs of each side, best of each.
speed() {
    model=$1 target=$2 ours_args=$3 peer_args=$4 epochs=${5:-1}
    echo "== speed: $model, batch 64, $epochs epoch(s), 1 thread (best of 3, interleaved with torch)"
    peer=$peers/torch_$model.py
    [ "$model" != gpt ] || peer=$here/tests/bench/torch_gpt.py
    have_peer=0
    if [ -f "$peer" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then have_peer=1; fi
    runs=$(for i in 1 2 3; do
        # shellcheck disable=SC2086 # the argument lists are meant to split
        "$dtsim" bench trainer --model "$model" $ours_args --batch 64 --epochs "$epochs" --threads 1
        [ $have_peer = 0 ] || /usr/bin/python3 "$peer" --epochs "$epochs" --batch 64 --threads 1 $peer_args
    done)
    ours=$(echo "$runs" | grep '^bench=' | best)
    echo "$ours"
    if [ $have_peer = 0 ]; then
        echo "torch peer skipped: need $peer and Debian's python3-torch"
        return
    fi
    theirs=$(echo "$runs" | grep '^peer=' | best)
    echo "$theirs"
    awk -v a="$(rate "$ours")" -v b="$(rate "$theirs")" -v m="$model" -v t="$target" \
        'BEGIN { printf "%s dtsim/torch samples_per_s ratio=%.2f (target >= %s)\n", m, a / b, t }'
}

# usertime CMD...: the user CPU seconds CMD takes (its output discarded).
usertime() {
    t=$(mktemp)
    /usr/bin/time -f %U -o "$t" "$@" >/dev/null
    cat "$t"
    rm -f "$t"
}

# gpt_user: tokens per user CPU second, from 5-epoch less 1-epoch runs, best of 3 interleaved.
gpt_user() {
    peer=$here/tests/bench/torch_gpt.py
    echo "== speed: gpt in user CPU time (3 epochs less 1 epoch, 1,920 windows, 2 evaluations), best of 3 interleaved"
    if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
        echo "torch peer skipped: need Debian's python3-torch"
        return
    fi
    tokens=$((1920 * 2 * 64)) # the 2 extra epochs' windows, 64 tokens each
    ours=999999 theirs=999999
    for i in 1 2 3; do
        a=$(usertime "$dtsim" train --model gpt --limit 1920 --epochs 3 --threads 1)
        b=$(usertime "$dtsim" train --model gpt --limit 1920 --epochs 1 --threads 1)
        c=$(usertime /usr/bin/python3 "$peer" --limit 1920 --eval-every-epoch --epochs 3)
        d=$(usertime /usr/bin/python3 "$peer" --limit 1920 --eval-every-epoch --epochs 1)
        echo "run $i: dtsim ${a}s - ${b}s user, torch ${c}s - ${d}s user"
        ours=$(awk -v x="$a" -v y="$b" -v m="$ours" 'BEGIN { d = x - y; print (d < m ? d : m) }')
        theirs=$(awk -v x="$c" -v y="$d" -v m="$theirs" 'BEGIN { d = x - y; print (d < m ? d : m) }')
    done
    awk -v a="$ours" -v b="$theirs" -v n="$tokens" 'BEGIN {
        printf "gpt dtsim tokens_per_user_s=%.0f torch tokens_per_user_s=%.0f ratio=%.2f (target >= 1.5)\n",
               n / a, n / b, b / a }'
}

# wanted MODEL: whether ONLY (unset: every model) names it
wanted() { [ -z "${ONLY:-}" ] || case " $ONLY " in *" $1 "*) true ;; *) false ;; esac; }

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the start"
export OPENBLAS_NUM_THREADS=1
if wanted mlp; then speed mlp 1.2 "--hidden 256,128" "--hidden 256,128"; fi
if wanted cnn; then speed cnn 1.5 "--conv 16,32 --fc 128" "--conv 16,32 --fc 128"; fi
if wanted gpt; then
    speed gpt 1.5 "--layers 2 --hidden 64 --heads 4 --seq 64 --limit 3200" \
        "--layers 2 --hidden 64 --heads 4 --seq 64 --limit 3200"
    gpt_user
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the end"
unset OPENBLAS_NUM_THREADS
[ -z "${ONLY:-}" ] || exit 0

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
