#!/bin/sh
# Real-training federation at scale (figures, not a pass/fail test): fedavg over 100,000
# Fashion-MNIST clients split by dirichlet:0.3, 1,000 sampled a round, one local epoch each
# (scenarios/federated/population-100k.ini), against the plainest PyTorch loop over the same
# work (tests/bench/torch_fedavg.py: same mlp, batch, lr, split and sampling, on Debian's
# torch), both on one thread. Prints:
#   - client steps per second and per CPU second of each (the process's user and system
#     time: equal on an idle core), the best of REPEAT measurements taken in turn (other
#     work on a shared machine only slows a measurement down), and their ratios (goal:
#     dtsim >= 2x). dtsim's rate is that of the rounds alone: two runs of LO and LO + ROUNDS
#     rounds, the difference of their wall times and of their client steps (from the
#     clients table: per client, rounds x ceil(samples / batch)), so reading the data, the
#     split and the final evaluation count in neither; the peer times its rounds itself;
#   - the peak memory (RSS, /usr/bin/time) of the run at 10,000 and 100,000 clients with
#     1,000 sampled a round: it follows the sampled clients, not the population.
# About 3 minutes on an idle core.
# usage: tests/bench/fedscale.sh [BUILD_DIR]   (env: ROUNDS=N timed rounds, default 10;
#        REPEAT=N measurements of each, default 3; needs the sqlite3 shell and Debian's
#        python3-torch)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
dtsim=$build/dtsim
scenario=$here/scenarios/federated/population-100k.ini
rounds=${ROUNDS:-10}
repeat=${REPEAT:-3}
lo=2
if ! /usr/bin/python3 -c "import torch" 2> /dev/null; then
    echo "fedscale.sh: the PyTorch peer needs Debian's python3-torch (/usr/bin/python3)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

timed() { # name, rounds, clients: runs the scenario; sets wall, cpu (s) and rss (KB)
    fraction=$(awk -v p="$3" 'BEGIN { print 1000 / p }')
    if ! /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$dtsim" run "$scenario" --db "$tmp/$1.db" \
        --set strategy.rounds="$2" --set strategy.clients="$3" \
        --set strategy.fraction="$fraction" --set run.eval_every=0 > "$tmp/log" 2>&1; then
        cat "$tmp/log" >&2
        echo "fedscale.sh: dtsim run $scenario failed" >&2
        exit 1
    fi
    read -r wall user sys rss < "$tmp/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
}

steps() { # database: the client steps of its run
    sqlite3 "$tmp/$1.db" "SELECT sum(c.rounds * ((c.samples + b.value - 1) / b.value))
        * e.value FROM clients c
        JOIN params b ON b.run = c.run AND b.key = 'model.batch'
        JOIN params e ON e.run = c.run AND e.key = 'strategy.local_epochs'"
}

best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0 ? a : b) }'; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
field() { echo "$peer" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
ours=0
ours_cpu=0
torch=0
torch_cpu=0
for i in $(seq "$repeat"); do
    rm -f "$tmp/lo.db" "$tmp/hi.db" # one run each: steps() sums a database's runs
    timed lo "$lo" 100000
    wall_lo=$wall
    cpu_lo=$cpu
    timed hi $((lo + rounds)) 100000
    rss_100k=$rss
    n=$(($(steps hi) - $(steps lo)))
    ours=$(best "$ours" "$(rate "$n" "$wall_lo" "$wall")")
    ours_cpu=$(best "$ours_cpu" "$(rate "$n" "$cpu_lo" "$cpu")")
    peer=$(/usr/bin/python3 "$here/tests/bench/torch_fedavg.py" --rounds "$rounds" \
        --clients 100000 --sampled 1000 --alpha 0.3 --batch 10 --lr 0.05)
    torch=$(best "$torch" "$(field client_steps_per_s)")
    torch_cpu=$(best "$torch_cpu" "$(field client_steps_per_cpu_s)")
done
holders=$(sqlite3 "$tmp/hi.db" "SELECT count(*) FROM clients WHERE samples > 0")
timed small $((lo + rounds)) 10000
rss_10k=$rss

echo "== fedavg, 100000 clients (dirichlet:0.3; $holders hold data), 1000 a round, 1 local epoch"
echo "dtsim:   $ours client steps/s, $ours_cpu per CPU second (best of $repeat; $n client steps in rounds $((lo + 1))-$((lo + rounds)))"
echo "pytorch: $torch client steps/s, $torch_cpu per CPU second (best of $repeat; the last: $peer)"
awk -v a="$ours" -v b="$torch" -v c="$ours_cpu" -v d="$torch_cpu" 'BEGIN {
    printf "ratio:   %.2fx per second, %.2fx per CPU second (goal >= 2x): %s\n", a / b, c / d,
    (a >= 2 * b && c >= 2 * d ? "holds" : "does not hold") }'
awk -v s="$rss_10k" -v l="$rss_100k" 'BEGIN { printf "peak RSS, 1000 sampled a round: %.0f MB at 10000 clients, %.0f MB at 100000 (%.2fx for 10x the population): %s\n",
    s / 1024, l / 1024, l / s,
    (l < 1.5 * s ? "follows the sampled clients" : "grows with the population") }'
