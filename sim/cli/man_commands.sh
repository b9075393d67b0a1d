#!/bin/sh
# Writes the man page's COMMANDS section (an include file for help2man) from dtsim's own
# help: for each command `dtsim --help` lists, its usage and options as `dtsim CMD --help`
# prints them, so the page never lags behind the commands.
#   man_commands.sh DTSIM OUT.h2m
set -eu
dtsim=$1
out=$2
tmp=$out.tmp
# roff: a backslash is written \e, a dash \- (so that options copy as typed), and a line
# that starts with . or ' must be escaped
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"; }
{
    echo '[COMMANDS IN DETAIL]'
    printf '%s\n' "Each command's own help (\\fBdtsim\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR prints the same)."
    "$dtsim" --help | awk '/^commands:/ {on = 1; next} /^$/ {on = 0}
        on && /^  [a-z]/ {c = $1; if (c == "bench" || c == "profile") c = c " " $2;
                          if (!seen[c]++) print c}' |
        while read -r cmd; do
            echo '.SS "dtsim '"$cmd"'"'
            echo '.nf'
            # shellcheck disable=SC2086
            "$dtsim" $cmd --help 2>&1 | esc
            echo '.fi'
        done
} >"$tmp"
mv "$tmp" "$out"
