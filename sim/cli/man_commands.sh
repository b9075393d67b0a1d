#!/bin/sh
# Writes the man page's COMMANDS section (an include file for help2man) from dtsim's command
# table: for each command and sub-command of it (`dtsim __complete names`), its usage and
# options as `dtsim CMD --help` prints them from its option table, so the page never lags
# behind the commands.
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
    "$dtsim" __complete names |
        while read -r cmd; do
            echo '.SS "dtsim '"$cmd"'"'
            echo '.nf'
            # shellcheck disable=SC2086
            "$dtsim" $cmd --help 2>&1 | esc
            echo '.fi'
        done
} >"$tmp"
mv "$tmp" "$out"
