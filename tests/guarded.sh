#!/bin/sh
# Every strategy on every model on the guarded backend (trainer/guarded.c, DTSIM_GUARDED=1):
# the CPU backend with each buffer readable only inside an op handed it, so host code that
# touches a backend buffer directly (which breaks on a GPU) faults. Each pair runs 3 steps
# (2 rounds of the federated strategies) twice, guarded and plain, and must finish both ways
# with the same summary row: the guard changes where memory may be touched, nothing computed.
# usage: guarded.sh DTSIM
set -u
dtsim=$1
dir=$(mktemp -d /tmp/dtsim-guarded-XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
i=0
while [ $i -lt 200 ]; do
    echo "line $i: the quick brown fox jumps over the lazy dog $((i * 7 % 13)) times."
    i=$((i + 1))
done > "$dir/text.txt"
cat > "$dir/g.ini" <<INI
[run]
name = g
steps = 3
eval_every = 1000
[model]
batch = 8
[data]
test_samples = 64
train_samples = 512
[cluster]
workers = 2
[strategy]
rounds = 2
clients = 4
INI
kinds=$("$dtsim" strategies | sed -n 's/^| `\([a-z_-]*\)` |.*/\1/p')
[ -n "$kinds" ] || { echo "guarded: no strategies listed by dtsim strategies"; exit 1; }
failed=0 pairs=0
for arch in logreg mlp cnn gpt; do
    case $arch in
    gpt) data="--set data.source=text --set data.text=$dir/text.txt --set model.hidden=16
               --set model.layers=2 --set model.heads=2 --set model.seq=16" ;;
    cnn) data="--set strategy.rounds=1" ;; # the default data set (Fashion-MNIST: 28 x 28)
    *) data="--set data.source=synthetic" ;;
    esac
    for kind in $kinds; do
        case $kind in
        fedavg) own="--set strategy.fraction=0.5" ;;
        fedbuff) own="--set strategy.concurrency=2 --set strategy.buffer=2" ;;
        hierfl) own="--set strategy.fraction=1 --set strategy.regions=1" ;;
        *) own="" ;;
        esac
        # shellcheck disable=SC2086 # the --set lists split on purpose
        "$dtsim" check "$dir/g.ini" --set model.arch=$arch --set strategy.kind=$kind $data $own \
            >/dev/null 2>&1 || continue # a pair check refuses (tensor on the cnn, ...)
        pairs=$((pairs + 1))
        # shellcheck disable=SC2086
        plain=$("$dtsim" run "$dir/g.ini" --db "$dir/plain.db" --set model.arch=$arch \
            --set strategy.kind=$kind $data $own 2>&1 | grep '^g ')
        # shellcheck disable=SC2086
        out=$(DTSIM_GUARDED=1 "$dtsim" run "$dir/g.ini" --db "$dir/guarded.db" \
            --set model.arch=$arch --set strategy.kind=$kind $data $own 2>&1)
        rc=$?
        row=$(echo "$out" | grep '^g ')
        if [ $rc -ne 0 ] || [ -z "$row" ] || [ "$row" != "$plain" ]; then
            echo "guarded: $arch $kind: exit $rc"
            echo "$out" | tail -5
            echo "  plain:   $plain"
            failed=$((failed + 1))
        fi
    done
done
echo "guarded: $pairs strategy x model pairs run guarded, $failed failed"
[ $pairs -ge 40 ] || { echo "guarded: expected at least 40 pairs"; exit 1; }
[ $failed -eq 0 ]
