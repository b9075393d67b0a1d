#!/bin/bash
# The shaped-link testbed (tests/testbed/README.md): one network namespace per host, each
# host's link to its switch shaped to a bandwidth (tc tbf) and a latency (delayline, since this
# kernel has no netem), a star or a two-level tree of Linux bridges, and mpirun starting one
# rank in each host's namespace. Needs root. Everything it makes lives inside namespaces named
# dttbPID-* (never a link or a route in the machine's own namespace), addresses in
# 198.18.0.0/15; `down`, `cleanup` and a trap on exit, failure and Ctrl-C remove them.
#
# usage:
#   testbed.sh up --hosts N --bandwidth 100Mbps --latency 5ms [--topology star|tree]
#                 [--per-switch K] [--uplink-bandwidth 40Gbps] [--uplink-latency 5us]
#                 [--congestion cubic|bbr|reno] [--host I:DOWN:UP:LATENCY ...]
#                                        brings one up, prints its name (dttbPID)
#   testbed.sh run [--name NAME] [--np P] -- CMD...   mpirun CMD, one rank per host namespace
#   testbed.sh mpirun-args [--name NAME]              the mpirun options `run` uses, one a line
#   testbed.sh down [NAME]                 removes it (the only one up when NAME is left out)
#   testbed.sh with UP-OPTIONS -- CMD...   up, run CMD, down; down also on failure and Ctrl-C
#   testbed.sh list                        the testbeds up and what they model
#   testbed.sh cleanup [--all]             removes what killed runs left (--all: every testbed)
#   testbed.sh shape NAME HOST --bandwidth B   reshapes host HOST's link (both directions) to B,
#                                        its latency kept (dtsim's real mode plays
#                                        faults.link_degrade with it)
# The ranks `run` and `with` start see DTSIM_TESTBED=NAME and DTSIM_TESTBED_SCRIPT=this file,
# and DTSIM_HOST=the machine's hostname (theirs is the namespace's).
# DTSIM_TESTBED_BIN: the folder with delayline (default: build/testbed of this checkout).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state_dir=/run/dtsim-testbed
bin_dir=${DTSIM_TESTBED_BIN:-$(cd "$here/../.." && pwd)/build/testbed}

die() {
    echo "testbed: $*" >&2
    exit 2
}

# --- units, as dtsim writes them -------------------------------------------------------
# bits per second from 10Mbps, 1Gbps, 12.5MBps (bytes), 1e9bps
parse_bandwidth() {
    awk -v s="$1" 'BEGIN {
        if (match(s, /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?/) == 0) exit 1
        v = substr(s, 1, RLENGTH); u = substr(s, RLENGTH + 1)
        m["bps"] = 1; m["kbps"] = 1e3; m["Mbps"] = 1e6; m["Gbps"] = 1e9; m["Tbps"] = 1e12
        m["Bps"] = 8; m["kBps"] = 8e3; m["MBps"] = 8e6; m["GBps"] = 8e9; m["TBps"] = 8e12
        if (!(u in m) || v * m[u] <= 0) exit 1
        printf "%.0f\n", v * m[u] }' || die "bad bandwidth \"$1\" (expected e.g. 10Mbps, 1Gbps, 12.5MBps)"
}

# microseconds from 0.1ms, 5ms, 5us, 1s
parse_latency() {
    awk -v s="$1" 'BEGIN {
        if (match(s, /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?/) == 0) exit 1
        v = substr(s, 1, RLENGTH); u = substr(s, RLENGTH + 1)
        m["s"] = 1e6; m["ms"] = 1e3; m["us"] = 1; m["ns"] = 1e-3
        if (!(u in m) || v * m[u] > 6e7) exit 1
        printf "%.3f\n", v * m[u] }' || die "bad latency \"$1\" (expected e.g. 0.1ms, 5ms, 5us)"
}

# --- one shaped link ------------------------------------------------------------------
# tbf for a rate in bit/s: a bucket of 1 ms of traffic (at least two full frames), the
# shaping's granularity; a queue of the bucket plus 2 ms and 8 latencies of traffic, and at
# least 256 KB, a switch port's share of buffer: shallower (47 KB at 100 Mbit/s and 0.1 ms),
# two workers' pushes meeting on a server's link lost packets and waited out TCP's 200 ms
# retransmission timeout (sync-ps 0.40 s a step real against 0.32 s with the deeper queue).
tbf_args() {
    local rate=$1 lat_us=$2
    awk -v r="$rate" -v l="$lat_us" 'BEGIN {
        Bps = r / 8; burst = Bps * 1e-3; if (burst < 3028) burst = 3028
        limit = burst + Bps * (2e-3 + 8 * l * 1e-6); if (limit < 262144) limit = 262144
        printf "rate %.0fbit burst %.0f limit %.0f\n", r, burst, limit }'
}

# The largest offload frame that fits one bucket: a frame larger than the bucket would be cut
# into MTU frames by tbf, each then crossing the delay line on its own (CPU at 1 Gbps).
gso_size() {
    awk -v r="$1" 'BEGIN { b = r / 8 * 1e-3; if (b > 65536) b = 65536; if (b < 1514) b = 1514
                           printf "%.0f\n", b }'
}

# link NAME TAG NS1 IF1 MASTER1 IF2 MASTER2 RATE LAT_US: IF1 (in NS1, under bridge MASTER1 in
# the fabric when NS1 is the fabric) joined to IF2 (under bridge MASTER2 in the fabric) by a
# wire of RATE bit/s and LAT_US each way: IF1 <-> TAGa ~delayline~ TAGc <-> IF2, tbf on the
# egress of IF1 (towards the switch) and of IF2 (towards IF1).
add_link() {
    local name=$1 tag=$2 ns1=$3 if1=$4 master1=$5 if2=$6 master2=$7 rate=$8 lat=$9
    local back=${10:-$8} # the other direction's rate (toward NS1), when it differs
    local fab=$name-fab
    ip link add name "$if1" netns "$ns1" type veth peer name "${tag}a" netns "$fab"
    ip link add name "${tag}c" netns "$fab" type veth peer name "$if2" netns "$fab"
    [ -n "$master1" ] && ip -n "$ns1" link set dev "$if1" master "$master1"
    ip -n "$fab" link set dev "$if2" master "$master2"
    local gso i
    gso=$(gso_size "$(awk -v a="$rate" -v b="$back" 'BEGIN { print (a < b ? a : b) }')")
    for i in "${tag}a" "${tag}c" "$if2"; do
        ip -n "$fab" link set dev "$i" gso_max_size "$gso" up
    done
    ip -n "$ns1" link set dev "$if1" gso_max_size "$gso" up
    # shellcheck disable=SC2046
    tc -n "$ns1" qdisc add dev "$if1" root tbf $(tbf_args "$rate" "$lat")
    # shellcheck disable=SC2046
    tc -n "$fab" qdisc add dev "$if2" root tbf $(tbf_args "$back" "$lat")
    delay_pairs+=("${tag}a" "${tag}c" "$lat")
}

host_address() { echo "198.18.$(($1 / 250)).$(($1 % 250 + 1))"; }

# Settings of a host's namespace: no IPv6 chatter; TCP as Linux runs it by default (the
# socket buffers' caps are the machine's, which a new namespace copies; slow start after idle
# on), with --congestion's congestion control where given (else the machine's default).
ns_settings() {
    ip netns exec "$1" sh -c 'sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null; true'
    if [ -n "${congestion:-}" ]; then
        ip netns exec "$1" sysctl -qw net.ipv4.tcp_congestion_control="$congestion" 2>/dev/null ||
            die "cannot set the congestion control to $congestion: a namespace may pick only those of net.ipv4.tcp_allowed_congestion_control ($(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)), which only the machine's own namespace sets (available: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control); to allow it: sysctl -w net.ipv4.tcp_allowed_congestion_control=\"$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control) $congestion\")"
    fi
    ip -n "$1" link set dev lo up
}

# --- state: /run/dtsim-testbed/NAME, a file of shell assignments -------------------------
write_state() {
    mkdir -p "$state_dir"
    cat > "$state_dir/$name.tmp" <<EOF
owner=$owner
persistent=$persistent
hosts=$hosts
topology=$topology
per_switch=$per_switch
bandwidth=$bandwidth_arg
latency=$latency_arg
uplink_bandwidth=$uplink_bandwidth_arg
uplink_latency=$uplink_latency_arg
congestion=${congestion:-default}
EOF
    mv "$state_dir/$name.tmp" "$state_dir/$name"
}

# The testbeds that exist, from the namespaces (a killed run may have left no state file)
# and the state files.
testbed_names() {
    {
        ip netns list | awk '{print $1}' | sed -n 's/^\(dttb[0-9][0-9]*\)-.*/\1/p'
        local f
        for f in "$state_dir"/dttb*; do
            if [[ ${f##*/} =~ ^dttb[0-9]+$ ]]; then echo "${f##*/}"; fi
        done
    } | sort -u
}

# Removes testbed $1: stops every process inside its namespaces (ranks, orted, mpirun,
# delayline: all started by this script), then deletes the namespaces, which takes their
# veths, bridges and qdiscs with them.
teardown() {
    local tb=$1 ns pids
    for sig in TERM KILL; do
        pids=""
        for ns in $(ip netns list | awk '{print $1}' | grep -E "^$tb-" || true); do
            pids="$pids $(ip netns pids "$ns" 2>/dev/null || true)"
        done
        [ -z "${pids// /}" ] && break
        # shellcheck disable=SC2086
        kill -s "$sig" $pids 2>/dev/null || true
        [ "$sig" = KILL ] && break
        for _ in $(seq 20); do # up to 2 s for mpirun to stop its daemons
            # shellcheck disable=SC2086
            kill -0 $pids 2>/dev/null || break
            sleep 0.1
        done
    done
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$tb-" || true); do
        ip netns delete "$ns" 2>/dev/null || true
    done
    rm -f "$state_dir/$tb" "$state_dir/$tb".* # .tmp, .hosts, .delayline.log
    rmdir "$state_dir" 2>/dev/null || true
}

# True when the testbed's owner still runs (a testbed.sh with that pid).
owner_alive() {
    local pid=${1#dttb}
    [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep testbed.sh >/dev/null
}

cmd_cleanup() {
    local all=0 tb persistent
    [ "${1:-}" = --all ] && all=1
    for tb in $(testbed_names); do
        persistent=0
        [ -r "$state_dir/$tb" ] && persistent=$(sed -n 's/^persistent=//p' "$state_dir/$tb")
        if [ "$all" = 1 ] || { [ "$persistent" != 1 ] && ! owner_alive "$tb"; }; then
            echo "testbed: removing $tb" >&2
            teardown "$tb"
        fi
    done
}

# --- up ---------------------------------------------------------------------------------
parse_up() {
    hosts="" bandwidth_arg="" latency_arg="" topology=star per_switch=0 congestion=""
    host_specs=()
    uplink_bandwidth_arg=40Gbps uplink_latency_arg=5us
    while [ $# -gt 0 ]; do
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in
        --hosts) hosts=$2 ;;
        --bandwidth) bandwidth_arg=$2 ;;
        --latency) latency_arg=$2 ;;
        --topology) topology=$2 ;;
        --per-switch) per_switch=$2 ;;
        --uplink-bandwidth) uplink_bandwidth_arg=$2 ;;
        --uplink-latency) uplink_latency_arg=$2 ;;
        --congestion) congestion=$2 ;;
        --host) host_specs+=("$2") ;;
        *) die "unknown option $1 of up (see the usage at the top of $0)" ;;
        esac
        shift 2
    done
    [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 500 ] ||
        die "--hosts needs a number from 1 to 500 (got \"$hosts\")"
    [ -n "$bandwidth_arg" ] || die "up needs --bandwidth (e.g. 100Mbps)"
    [ -n "$latency_arg" ] || die "up needs --latency (e.g. 5ms)"
    [ -z "$congestion" ] || [[ $congestion =~ ^[a-z0-9_]+$ ]] || die "bad --congestion \"$congestion\""
    case $topology in
    star) per_switch=$hosts ;;
    tree) [[ $per_switch =~ ^[0-9]+$ ]] && [ "$per_switch" -ge 1 ] ||
        die "--topology tree needs --per-switch K (hosts under each leaf switch)" ;;
    *) die "unknown topology \"$topology\" (expected star or tree)" ;;
    esac
    rate=$(parse_bandwidth "$bandwidth_arg")
    lat=$(parse_latency "$latency_arg")
    # --host I:DOWN:UP:LATENCY: host I's own link (down: toward it), as dtsim's edge platform
    # gives a client its access link
    host_down=() host_up=() host_lat=()
    local spec h
    for spec in "${host_specs[@]}"; do
        IFS=: read -r h d u l <<< "$spec"
        [[ $h =~ ^[0-9]+$ ]] && [ "$h" -lt "$hosts" ] && [ -n "$l" ] ||
            die "bad --host \"$spec\" (expected I:DOWN:UP:LATENCY with I a host below $hosts, e.g. 1:20Mbps:5Mbps:15ms)"
        host_down[h]=$(parse_bandwidth "$d")
        host_up[h]=$(parse_bandwidth "$u")
        host_lat[h]=$(parse_latency "$l")
    done
    uplink_rate=$(parse_bandwidth "$uplink_bandwidth_arg")
    uplink_lat=$(parse_latency "$uplink_latency_arg")
}

check_tools() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc)"
    command -v ip > /dev/null && command -v tc > /dev/null || die "needs ip and tc (Debian: iproute2)"
    command -v unshare > /dev/null || die "needs unshare (Debian: util-linux)"
    [ -x "$bin_dir/delayline" ] ||
        die "no $bin_dir/delayline: build it (cmake --build build) or set DTSIM_TESTBED_BIN"
}

# Builds the testbed $name from parse_up's variables.
build_testbed() {
    local fab=$name-fab head=$name-head racks r i first last
    delay_pairs=()
    ip netns add "$fab"
    ns_settings "$fab"
    # the head: mpirun's namespace, on the top switch by an unshaped link (launch and output
    # only; the ranks' traffic never crosses it)
    ip netns add "$head"
    ns_settings "$head"
    local top=br0
    ip -n "$fab" link add name "$top" type bridge stp_state 0 forward_delay 0
    ip -n "$fab" link set dev "$top" up
    ip link add name eth0 netns "$head" type veth peer name head netns "$fab"
    ip -n "$fab" link set dev head master "$top" up
    ip -n "$head" addr add 198.19.255.254/15 dev eth0
    ip -n "$head" link set dev eth0 up
    racks=$(((hosts + per_switch - 1) / per_switch))
    for ((r = 0; r < racks; r++)); do
        local sw=$top
        if [ "$topology" = tree ]; then
            sw=leaf$r
            ip -n "$fab" link add name "$sw" type bridge stp_state 0 forward_delay 0
            ip -n "$fab" link set dev "$sw" up
            add_link "$name" "u$r" "$fab" "u${r}b" "$sw" "u${r}r" "$top" "$uplink_rate" "$uplink_lat"
        fi
        first=$((r * per_switch))
        last=$((first + per_switch - 1 < hosts - 1 ? first + per_switch - 1 : hosts - 1))
        for ((i = first; i <= last; i++)); do
            ip netns add "$name-h$i"
            ns_settings "$name-h$i"
            add_link "$name" "h$i" "$name-h$i" eth0 "" "h${i}b" "$sw" "${host_up[i]:-$rate}" \
                "${host_lat[i]:-$lat}" "${host_down[i]:-$rate}"
            ip -n "$name-h$i" addr add "$(host_address "$i")/15" dev eth0
        done
    done
    for ((i = 0; i < hosts; i++)); do echo "$name-h$i slots=1"; done > "$state_dir/$name.hosts"
    # the delay line lives in the fabric, in its own session (it outlives `up`)
    ip netns exec "$fab" setsid "$bin_dir/delayline" "${delay_pairs[@]}" \
        < /dev/null > /dev/null 2> "$state_dir/$name.delayline.log" &
    sleep 0.1
    [ -n "$(ip netns pids "$fab")" ] || die "delayline did not start: $(cat "$state_dir/$name.delayline.log")"
    rm -f "$state_dir/$name.delayline.log"
}

# up [OPTIONS]: the caller's trap removes a half-built testbed
do_up() {
    parse_up "$@"
    check_tools
    cmd_cleanup # leftovers of killed runs
    name=dttb$$ owner=$$ persistent=0
    write_state # first, so that a testbed killed while being built is known to cleanup
    build_testbed
}

# --- run --------------------------------------------------------------------------------
# The testbed named $1, or the only one up.
pick_testbed() {
    local tb=${1:-}
    if [ -z "$tb" ]; then
        local all
        all=$(testbed_names)
        [ -n "$all" ] || die "no testbed is up (testbed.sh up ...)"
        [ "$(echo "$all" | wc -l)" = 1 ] || die "several testbeds are up ($(echo $all)): name one with --name"
        tb=$all
    fi
    [ -r "$state_dir/$tb" ] && [ -r "$state_dir/$tb.hosts" ] || die "no testbed $tb (testbed.sh list)"
    echo "$tb"
}

# mpirun's options for testbed $1, one a line: ranks go to the hosts' namespaces through the
# launch agent, their TCP (and Open MPI's own) on the testbed's addresses only, no shared
# memory between ranks (they share this machine, not a host). The ranks share its cores too:
# an idle rank yields its core instead of spinning, or a rank that a message has reached
# waits for a time slice (milliseconds) before it sees it.
mpirun_args() {
    local tb=$1
    printf '%s\n' --hostfile "$state_dir/$tb.hosts" --map-by node \
        --mca plm_rsh_agent "$here/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca pml ob1 --mca btl tcp,self --mca mpi_yield_when_idle 1 \
        --mca btl_tcp_if_include 198.18.0.0/15 --mca oob_tcp_if_include 198.18.0.0/15
}

# run_in TB NP CMD...: mpirun in the head namespace (hostname TB-head in a UTS namespace of
# its own, so that Open MPI tells it from the hosts)
run_in() {
    local tb=$1 np=$2
    shift 2
    # the machine's name, which the ranks' UTS namespaces hide: dtsim records it with each run
    # (DTSIM_HOST), so that a later open here marks the runs of killed ranks interrupted
    local real_host=${DTSIM_HOST:-$(hostname)}
    local -a args
    mapfile -t args < <(mpirun_args "$tb")
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        ip netns exec "$tb-head" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$tb-head" \
        mpirun -n "$np" "${args[@]}" -x DTSIM_TESTBED="$tb" -x DTSIM_TESTBED_SCRIPT="$here/testbed.sh" -x DTSIM_HOST="$real_host" \
        "$@"
}

# shape NAME HOST --bandwidth B: both tbf of host HOST's link replaced, at B, the testbed's
# latency kept (the delay line is untouched)
cmd_shape() {
    [ $# -eq 4 ] && [ "$3" = --bandwidth ] || die "usage: testbed.sh shape NAME HOST --bandwidth B"
    local tb=$1 h=$2 rate lat
    [[ $tb =~ ^dttb[0-9]+$ ]] && [ -r "$state_dir/$tb" ] || die "no testbed $tb"
    [[ $h =~ ^[0-9]+$ ]] && ip netns list | grep "^$tb-h$h\b" >/dev/null || die "$tb has no host $h"
    rate=$(parse_bandwidth "$4")
    lat=$(sed -n 's/^latency=//p' "$state_dir/$tb")
    lat=$(parse_latency "$lat")
    # shellcheck disable=SC2046
    tc -n "$tb-h$h" qdisc replace dev eth0 root tbf $(tbf_args "$rate" "$lat")
    # shellcheck disable=SC2046
    tc -n "$tb-fab" qdisc replace dev "h${h}b" root tbf $(tbf_args "$rate" "$lat")
}

cmd_run() {
    local tb="" np=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in
        --name) tb=$2 ;;
        --np) np=$2 ;;
        *) die "unknown option $1 of run (testbed.sh run [--name NAME] [--np P] -- CMD...)" ;;
        esac
        shift 2
    done
    [ "${1:-}" = -- ] && [ $# -ge 2 ] || die "run needs -- CMD..."
    shift
    tb=$(pick_testbed "$tb")
    [ -n "$np" ] || np=$(sed -n 's/^hosts=//p' "$state_dir/$tb")
    run_in "$tb" "$np" "$@"
}

cmd_with() {
    local -a up=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        up+=("$1")
        shift
    done
    [ "${1:-}" = -- ] && [ $# -ge 2 ] || die "with needs UP-OPTIONS -- CMD..."
    shift
    name=""
    trap '[ -n "$name" ] && teardown "$name"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    do_up "${up[@]}"
    echo "testbed: $name up: $hosts hosts, $topology, $bandwidth_arg, $latency_arg" >&2
    # mpirun in the background and a `wait`, which a signal interrupts: bash runs a trap only
    # once the foreground command has ended (stdin passed on, not the background's /dev/null)
    local rc=0
    run_in "$name" "$hosts" "$@" <&0 &
    wait $! || rc=$?
    exit "$rc"
}

cmd_up() {
    name=""
    trap '[ -n "$name" ] && [ "$persistent" != 1 ] && teardown "$name"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    do_up "$@"
    persistent=1
    write_state
    echo "$name"
}

cmd_list() {
    local tb
    for tb in $(testbed_names); do
        if [ -r "$state_dir/$tb" ]; then
            (
                # shellcheck disable=SC1090 # the state file of write_state
                . "$state_dir/$tb"
                # shellcheck disable=SC2154 # assigned by the state file
                echo "$tb: $hosts hosts, $topology (per switch $per_switch), $bandwidth, $latency," \
                    "uplinks $uplink_bandwidth, $uplink_latency$([ "$persistent" = 1 ] || echo ", owner $owner")"
            )
        else
            echo "$tb: no state (a killed run; testbed.sh cleanup removes it)"
        fi
    done
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
run) shift; cmd_run "$@" ;;
mpirun-args) shift; [ "${1:-}" = --name ] && tb=${2:-} || tb=""; mpirun_args "$(pick_testbed "$tb")" ;;
down) shift; [ "$(id -u)" = 0 ] || die "needs root"
    if [[ ${1:-} =~ ^dttb[0-9]+$ ]]; then teardown "$1"; else teardown "$(pick_testbed "${1:-}")"; fi ;;
with) shift; cmd_with "$@" ;;
list) cmd_list ;;
shape) shift; [ "$(id -u)" = 0 ] || die "needs root"; cmd_shape "$@" ;;
cleanup) shift; [ "$(id -u)" = 0 ] || die "needs root"; cmd_cleanup "$@" ;;
*) sed -n '/^# usage:/,/^# DTSIM_TESTBED_BIN/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
