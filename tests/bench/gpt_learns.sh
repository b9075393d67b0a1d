#!/bin/sh
# A 2-block gpt learning text: its training and validation loss per epoch against the
# unigram baseline (the loss of a model that knows only the bytes' frequencies), printed and
# drawn to results/readme/gpt-learns.png (the figure in README.md and trainer/README.md).
#   tests/bench/gpt_learns.sh [BUILD_DIR] [EPOCHS] [LIMIT]
# Defaults: 8 epochs of 6,400 windows of 64 bytes (100 steps of batch 64 each) of the
# default text, one OpenBLAS thread: about a minute of CPU.
set -eu
build=${1:-build}
epochs=${2:-8}
limit=${3:-6400}
out=${OUT:-results/readme/gpt-learns.png}
log=$(mktemp)
trap 'rm -f "$log" "$log.dat"' EXIT
OPENBLAS_NUM_THREADS=1 "$build/dtsim" train --model gpt --limit "$limit" --epochs "$epochs" \
    --lr 0.1 --threads 1 | tee "$log"
steps=$((limit / 64))
unigram=$(sed -n 's/^unigram val_loss=\([0-9.]*\).*/\1/p' "$log")
sed -n 's/^epoch \([0-9]*\) train_loss=\([0-9.]*\) val_loss=\([0-9.]*\).*/\1 \2 \3/p' "$log" |
    awk -v s="$steps" '{print $1 * s, $2, $3}' >"$log.dat"
first=$(awk -v u="$unigram" '$3 < u {print $1; exit}' "$log.dat")
echo "unigram baseline $unigram nats; validation loss below it from step ${first:-never}"
command -v gnuplot >/dev/null 2>&1 || { echo "gpt_learns: no gnuplot: no figure" >&2; exit 0; }
mkdir -p "$(dirname "$out")"
gnuplot <<GP
set terminal pngcairo size 720,420 font "DejaVu Sans,11"
set output "$out"
set title "A 2-block gpt (120,576 parameters) learning byte-level text, one CPU thread"
set xlabel "training steps (batch 64 windows of 64 bytes)"
set ylabel "next-byte cross-entropy (nats)"
set key bottom left
set yrange [2.2:3.7]
set grid
plot "$log.dat" using 1:2 with linespoints lw 2 pt 7 title "training loss (epoch mean)", \
     "$log.dat" using 1:3 with linespoints lw 2 pt 5 title "validation loss", \
     $unigram with lines dt 2 lw 2 lc rgb "#555555" title "unigram baseline ($unigram)"
GP
echo "gpt_learns: wrote $out"
