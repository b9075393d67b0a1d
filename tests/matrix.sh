#!/bin/sh
# Every strategy on every model on another backend than the CPU's, against the CPU's run.
# Each pair runs 2 steps (a round of the federated strategies) both ways.
#   guarded: on the guarded backend (trainer/guarded.c, DTSIM_GUARDED=1), the CPU backend
#            with each buffer readable only inside an op handed it, so host code that touches
#            a backend buffer directly (which breaks on a GPU) faults; the summary rows must
#            be the same (the guard changes where memory may be touched, nothing computed).
#   cuda:    on model.device = cuda; the status, simulated time and bytes must be the CPU's
#            and the accuracy within 0.05 (float sums in another order). Exits 77, skipped,
#            where dtsim has no CUDA backend or no GPU is usable.
# usage: matrix.sh DTSIM guarded|cuda
set -u
dtsim=$1 mode=$2
case $mode in
guarded | cuda) ;;
*) echo "usage: matrix.sh DTSIM guarded|cuda" >&2; exit 2 ;;
esac
dir=$(mktemp -d /tmp/dtsim-matrix-XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
i=0
while [ $i -lt 200 ]; do
    echo "line $i: the quick brown fox jumps over the lazy dog $((i * 7 % 13)) times."
    i=$((i + 1))
done > "$dir/text.txt"
cat > "$dir/g.ini" <<INI
[run]
name = g
steps = 2
eval_every = 1000
[model]
batch = 8
[data]
test_samples = 32
train_samples = 128
[cluster]
workers = 2
[strategy]
rounds = 1
clients = 4
INI
# (check accepts cuda on any machine; a run says where it cannot start)
if [ "$mode" = cuda ] && ! why=$("$dtsim" run "$dir/g.ini" --db "$dir/probe.db" \
    --set model.device=cuda --set data.source=synthetic --set model.arch=logreg 2>&1); then
    echo "cuda_matrix: SKIPPED: $(echo "$why" | tail -1)"
    exit 77
fi
kinds=$("$dtsim" strategies | sed -n 's/^| `\([a-z_-]*\)` |.*/\1/p')
[ -n "$kinds" ] || { echo "guarded: no strategies listed by dtsim strategies"; exit 1; }
failed=0 pairs=0
for arch in logreg mlp cnn gpt; do
    case $arch in
    gpt) data="--set data.source=text --set data.text=$dir/text.txt --set model.hidden=16
               --set model.layers=2 --set model.heads=2 --set model.seq=16" ;;
    cnn) data="" ;; # the default data set (Fashion-MNIST: 28 x 28)
    *) data="--set data.source=synthetic" ;;
    esac
    for kind in $kinds; do
        case $kind in
        fedavg) own="--set strategy.fraction=0.5" ;;
        fedbuff) own="--set strategy.concurrency=2 --set strategy.buffer=2" ;;
        hierfl) own="--set strategy.fraction=1 --set strategy.regions=1 --set strategy.edge_rounds=1" ;;
        *) own="" ;;
        esac
        # shellcheck disable=SC2086 # the --set lists split on purpose
        "$dtsim" check "$dir/g.ini" --set model.arch=$arch --set strategy.kind=$kind $data $own \
            >/dev/null 2>&1 || continue # a pair check refuses (tensor on the cnn, ...)
        pairs=$((pairs + 1))
        # shellcheck disable=SC2086
        plain=$("$dtsim" run "$dir/g.ini" --db "$dir/plain.db" --set model.arch=$arch \
            --set strategy.kind=$kind $data $own 2>&1 | grep '^g ')
        if [ "$mode" = guarded ]; then
            # shellcheck disable=SC2086
            out=$(DTSIM_GUARDED=1 "$dtsim" run "$dir/g.ini" --db "$dir/other.db" \
                --set model.arch=$arch --set strategy.kind=$kind $data $own 2>&1)
        else
            # shellcheck disable=SC2086
            out=$("$dtsim" run "$dir/g.ini" --db "$dir/other.db" --set model.device=cuda \
                --set model.arch=$arch --set strategy.kind=$kind $data $own 2>&1)
        fi
        rc=$?
        row=$(echo "$out" | grep '^g ')
        same=$(echo "$plain
$row" | awk -v mode="$mode" 'NR == 1 { for (i = 1; i <= NF; i++) a[i] = $i; n = NF }
            NR == 2 { ok = NF == n
                      for (i = 1; i <= NF && ok; i++)
                          if (mode == "guarded" || i == 3 || i == 5 || i == 7) ok = $i == a[i]
                          else if (i == 4) ok = ($i - a[i]) ^ 2 <= 0.0025
                      print ok ? "yes" : "no" }')
        if [ $rc -ne 0 ] || [ -z "$row" ] || [ "$same" != yes ]; then
            echo "$mode: $arch $kind: exit $rc"
            echo "$out" | tail -5
            echo "  cpu: $plain"
            failed=$((failed + 1))
        fi
    done
done
echo "$mode: $pairs strategy x model pairs run, $failed failed"
[ $pairs -ge 40 ] || { echo "$mode: expected at least 40 pairs"; exit 1; }
[ $failed -eq 0 ]
