#!/bin/sh
# What `check` accepts, `run` starts: every shipped scenario (scenarios/*.ini and
# scenarios/*/*.ini, the device catalogue and profiles aside) checked with `dtsim check` on
# each device, and where check accepts it, its first run (a sweep's member 0, a jobs file
# whole) run for 2 steps: it must end 0 (finished) or 1 (a run's own failure, as diverged),
# never 2 (refused after check accepted it), a signal or a hang (LIMIT seconds, 300 by
# default). The cuda device is tried only where a GPU is present (nvidia-smi lists one).
# Prints a line per scenario and device; exits 1 on any finding.
# usage: tests/check_runs.sh [BUILD_DIR] [LIMIT_S]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
limit=${2:-300}
dtsim=$build/dtsim
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-runs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
devices=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
    devices="cpu cuda"
else
    echo "check_runs: cuda skipped (no GPU: nvidia-smi lists none)"
fi
findings=0
for ini in "$here"/scenarios/*.ini "$here"/scenarios/*/*.ini; do
    case $ini in */devices/*|*/profiles/*|*/jobs/team-*) continue ;; esac
    name=${ini#"$here"/}
    for dev in $devices; do
        set_dev=""
        [ "$dev" = cpu ] || set_dev="--set model.device=$dev"
        # shellcheck disable=SC2086 # set_dev is empty or one option pair
        if ! "$dtsim" check "$ini" $set_dev >"$tmp/check.txt" 2>&1; then
            printf '%-48s %-4s refused by check: %s\n' "$name" "$dev" "$(tail -1 "$tmp/check.txt")"
            continue
        fi
        member=""
        grep -q '^# run 1:' "$tmp/check.txt" && member="--member 0"
        rm -f "$tmp/run.db"
        # shellcheck disable=SC2086
        timeout -k 5 "$limit" "$dtsim" run "$ini" $set_dev $member --set run.steps=2 \
            --db "$tmp/run.db" >"$tmp/run.txt" 2>&1
        rc=$?
        case $rc in
        0|1) printf '%-48s %-4s ok (exit %d)\n' "$name" "$dev" "$rc" ;;
        124|137) printf '%-48s %-4s FINDING: still running after %s s\n' "$name" "$dev" "$limit"
                 findings=$((findings + 1)) ;;
        *) printf '%-48s %-4s FINDING: exit %d after check accepted it: %s\n' "$name" "$dev" "$rc" \
               "$(tail -1 "$tmp/run.txt")"
           findings=$((findings + 1)) ;;
        esac
    done
done
echo "check_runs: $findings finding(s)"
[ "$findings" -eq 0 ]
