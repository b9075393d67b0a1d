#!/bin/sh
# Check against a published result (figures, not a pass/fail test): the Horovod paper's
# 512-GPU scaling efficiency (Sergeev and Del Balso 2018: Inception V3 90%, ResNet-101 90%,
# VGG-16 68% on 128 servers x 4 Pascal GPUs, 25 Gbit/s RoCE) next to dtsim's, from the
# timing-only sweep scenarios/scale/horovod-512.ini (its comments state the device speeds
# and the platform assumed). Efficiency = one GPU's time per step / 512 GPUs' time per step
# (each GPU keeps its batch of 64).
# usage: tests/bench/horovod.sh [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The scenario's network model (CM02, RDMA-like) first, then SimGrid's two calibrated ones
# to show how much the answer leans on that choice.
for net in CM02 SMPI LV08; do
    "$dtsim" run "$here/scenarios/scale/horovod-512.ini" --db "$tmp/$net.db" \
        --set cluster.network_model=$net > /dev/null
    "$dtsim" runs --db "$tmp/$net.db" | sed "s/^/$net /" >> "$tmp/runs"
done
awk '
    BEGIN {
        published["inception_v3"] = 0.90; label["inception_v3"] = "Inception V3"
        published["resnet101"] = 0.90; label["resnet101"] = "ResNet-101"
        published["vgg16"] = 0.68; label["vgg16"] = "VGG-16"
        steps = 10; batch = 64
    }
    $3 ~ /^horovod-512\// {
        split($3, kv, /[=,:]/)
        model = kv[3]
        t = $7; sub(/s$/, "", t)
        if ($3 ~ /workers=1$/) one[$1, model] = t; else many[$1, model] = t
    }
    END {
        printf "%-13s %12s %15s %8s %13s %8s %8s\n", "model", "1 GPU img/s",
               "512 GPUs img/s", "Horovod", "dtsim CM02", "SMPI", "LV08"
        n = split("inception_v3 resnet101 vgg16", order, " ")
        for (i = 1; i <= n; i++) {
            m = order[i]
            split("CM02 SMPI LV08", nets, " ")
            for (j = 1; j <= 3; j++)
                if (!((nets[j], m) in one) || !((nets[j], m) in many)) {
                    print "horovod.sh: missing run for " m " under " nets[j] > "/dev/stderr"
                    exit 1
                }
            e = one["CM02", m] / many["CM02", m]
            printf "%-13s %12.1f %15.0f %7.0f%% %6.1f%% %+4.1f %7.1f%% %7.1f%%\n", label[m],
                   steps * batch / one["CM02", m], 512 * steps * batch / many["CM02", m],
                   100 * published[m], 100 * e, 100 * (e - published[m]),
                   100 * one["SMPI", m] / many["SMPI", m], 100 * one["LV08", m] / many["LV08", m]
        }
        print "(efficiency = time per step on one GPU / on 512; the +/- is dtsim CM02 minus Horovod, in points)"
    }' "$tmp/runs"
