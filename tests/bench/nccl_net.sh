#!/bin/sh
# NCCL between servers as dtsim models it (strategy.dp_comm = nccl; sim/docs/scale.md,
# "Collectives between servers") beside published nccl-tests all_reduce_perf figures: the
# bus bandwidth of a large all-reduce (2 GB) by ring (NCCL_ALGO=Ring, as NVIDIA asks such
# figures to be measured) on 2 to 32 servers of 8 GPUs, each GPU's share of the servers'
# NICs as published. Figures, not a pass/fail test; the one fitted value (the catalogue's
# nic_efficiency, 0.96) was fitted on rows 1 and 4's per-NIC figures, so those rows check
# the rest of the model (the aggregation over 8 rails, NVLink's cap), not the fit.
#
# No published figure at more servers was at hand: there the model's ring pays NCCL's
# latency for each of its 2 (T-1) steps (at 32 servers of H100s, 2.4 ms of a 2 GB
# all-reduce's 13.3 ms, a busbw of 313 GB/s), which only a measurement can check.
#
# usage: tests/bench/nccl_net.sh [BUILD_DIR]   (5 s of CPU)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
[ -x "$dtsim" ] || { echo "nccl_net.sh: no $dtsim (build first)" >&2; exit 2; }

# ring DEVICE NIC SERVERS [BYTES]: dtsim's ring busbw (GB/s) of BYTES (2 GB) on SERVERS
ring() {
    "$dtsim" devices "$1" --nic "$2" |
        awk -v s="$3" -v b="${4:-2147483648}" '/between servers/ { on = 1 }
            on && $1 == s && $2 == b { print $7; exit }'
}
# auto DEVICE NIC SERVERS: NCCL's tuner's choice and busbw at 2 GB
auto() {
    "$dtsim" devices "$1" --nic "$2" |
        awk -v s="$3" '/between servers/ { on = 1 }
            on && $1 == s && $2 == 2147483648 { print $3 " " $6; exit }'
}

printf '%-58s %-9s %-22s %s\n' "system (a GPU's NIC share)" "servers" "published busbw GB/s" \
    "dtsim ring busbw GB/s (2 GB), ratio"
row() { # LABEL DEVICE NIC SERVERS PUBLISHED_LOW PUBLISHED_HIGH SOURCE
    d=$(ring "$2" "$3" "$4")
    awk -v l="$1" -v s="$4" -v lo="$5" -v hi="$6" -v d="$d" -v src="$7" 'BEGIN {
        pub = lo == hi ? lo : lo "-" hi; mid = (lo + hi) / 2
        printf "%-58s %-9s %-22s %.1f, %.2f\n       %s\n", l, s, pub, d, d / mid, src }'
}
row "1. DGX A100, 8 x HDR 200 Gb/s (200Gbps)" a100 200Gbps 2 192 192 \
    "A. Ladd (NVIDIA), NVIDIA/nccl issue #812, quoted in #1576: 192 GB/s AllReduce BusBW"
row "2. 2 HGX A100, 4 x HDR 200 Gb/s (100Gbps)" a100 100Gbps 2 91 96 \
    "NVIDIA/nccl-tests #119 (S. Jeaugey: 96 the target, measured 95.7-96.7); #100: 91 at 1-8 GB"
row "3. 12 A800 servers, 1 x HDR 200 Gb/s (25Gbps), as 8 and 16" a100 25Gbps 8 24 24 \
    "NVIDIA/nccl issue #412 (S. Jeaugey: 24 GB/s inter-node at 8 GB)"
row "   the same, 16 servers" a100 25Gbps 16 24 24 "(as above)"
row "4. H100, 8 x NDR 400 Gb/s (400Gbps)" h100 400Gbps 2 368 384 \
    "NVIDIA/nccl-tests #290 (A. Ladd: 46-48 GB/s a NIC at NDR; x 8 NICs), capped by NVLink's 370"
echo
echo "Ring busbw by size and server count, and what NCCL's tuner chooses at 2 GB (auto):"
for dev in "a100 200Gbps" "h100 400Gbps"; do
    set -- $dev
    printf '%s, %s a GPU:\n  %-12s' "$1" "$2" "bytes"
    for s in 2 4 8 16 32; do printf ' %12s' "${s} srv"; done
    echo
    for b in 65536 4194304 33554432 268435456 2147483648; do
        printf '  %-12s' "$b"
        for s in 2 4 8 16 32; do printf ' %12s' "$(ring "$1" "$2" "$s" "$b")"; done
        echo
    done
    printf '  %-12s' "auto at 2 GB"
    for s in 2 4 8 16 32; do printf ' %12s' "$(auto "$1" "$2" "$s" | cut -d' ' -f1)"; done
    echo
done
