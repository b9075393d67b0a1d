#!/bin/sh
# Regenerates the documentation tables that dtsim prints from its own registries (`make docs`):
#   - scenarios/keys.md from its line "### [run]" to the end: `dtsim keys` (the key
#     reference, strategies' own keys and the strategy.kind row included);
#   - the strategy table of sim/README.md (its "| kind | keys | ..." table): `dtsim strategies`.
# The cli suite checks that both are current. Usage: sim/cli/docs.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dtsim=${1:-$root/build}/dtsim
[ -x "$dtsim" ] || { echo "docs: no $dtsim (build first: make build)" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.keys" "$tmp.strategies"' EXIT

"$dtsim" keys >"$tmp.keys"
readme=$root/scenarios/keys.md
grep -q '^### \[run\]' "$readme" || { echo "docs: $readme has no line \"### [run]\"" >&2; exit 2; }
{ sed '/^### \[run\]/,$d' "$readme"; cat "$tmp.keys"; } >"$tmp"
cmp -s "$tmp" "$readme" || { cp "$tmp" "$readme"; echo "docs: rewrote $readme"; }

"$dtsim" strategies >"$tmp.strategies"
readme=$root/sim/README.md
grep -q '^| kind | keys | what happens each step |' "$readme" ||
    { echo "docs: $readme has no strategy table" >&2; exit 2; }
# the table: from its header to the first line that is not a table row
awk -v table="$tmp.strategies" '
    /^\| kind \| keys \| what happens each step \|/ && !done {
        while ((getline l < table) > 0) print l
        skip = 1; done = 1; next
    }
    skip && /^\|/ {next}
    {skip = 0; print}' "$readme" >"$tmp"
cmp -s "$tmp" "$readme" || { cp "$tmp" "$readme"; echo "docs: rewrote $readme"; }
echo "docs: the key reference and the strategy table are current"
