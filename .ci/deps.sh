#!/bin/sh
# Installs the Debian packages dtsim needs, and only those missing: running it again
# installs nothing. As root it runs apt-get; otherwise it prints the exact line to run.
set -eu

PACKAGES="gcc g++ libc6-dev make cmake pkg-config libsimgrid-dev libopenblas-dev libsqlite3-dev \
check zlib1g-dev libinih-dev gnuplot-nox dataset-fashion-mnist clang clang-format tmux libcjson-dev \
python3-pandas help2man python3-torch python3-torchvision chromium openmpi-bin \
libopenmpi-dev libmicrohttpd-dev libcmark-dev fortunes fortunes-de fortunes-es fortunes-it"

missing=""
for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        "install ok installed") ;;
        *) missing="$missing $p" ;;
    esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "dtsim: missing Debian packages. Install them with:" >&2
    echo "  sudo apt-get install -y --no-install-recommends$missing" >&2
    exit 2
fi

echo "dtsim: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
apt-get update -q && apt-get install -y -q --no-install-recommends $missing
