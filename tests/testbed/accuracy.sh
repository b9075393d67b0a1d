#!/bin/bash
# The testbed's accuracy table (tests/testbed/README.md): a 2-host star at 10, 100 and 1000
# Mbit/s with 0.1 ms and 5 ms links, pingpong's figures against the configured ones. Figures,
# not a test: it never fails on a slow machine. Needs root, like the testbed.
# usage: tests/testbed/accuracy.sh [BUILD/testbed]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export DTSIM_TESTBED_BIN=${1:-$here/../../build/testbed}
echo "| link | one-way latency: configured path | median | fastest | bandwidth: configured | payload share | measured |"
echo "|---|---|---|---|---|---|---|"
for bw in 10 100 1000; do
    # about 0.3 s of data per burst of 4 messages
    large=$((bw * 1000000 / 8 * 3 / 40))
    for lat in 0.1 5; do
        out=$("$here/testbed.sh" with --hosts 2 --bandwidth "${bw}Mbps" --latency "${lat}ms" -- \
            "$DTSIM_TESTBED_BIN/pingpong" --large "$large" --count 4 --reps 30 2> /dev/null | grep '^pair 0 1 ')
        awk -v bw="$bw" -v lat="$lat" -v line="$out" 'BEGIN {
            split(line, f, " ")
            printf "| %g Mbit/s, %g ms | %.2f ms | %.3f ms | %.3f ms | %g Mbit/s | %.1f Mbit/s | %.1f Mbit/s |\n",
                bw, lat, 2 * lat, f[5], f[9], bw, bw * 1448 / 1514, f[7] }'
    done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
