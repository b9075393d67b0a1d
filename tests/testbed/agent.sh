#!/bin/sh
# Open MPI's launch agent for the testbed (plm_rsh_agent, in place of ssh): mpirun calls
# "agent.sh HOST COMMAND..." and this runs COMMAND, as ssh would on HOST, inside the network
# namespace HOST, with HOST as its host name (a UTS namespace of its own: Open MPI tells its
# daemons apart by host name, and names its session folders after it).
host=$1
shift
case $host in
dttb[0-9]*-h[0-9]*) ;;
*)
    echo "testbed agent: \"$host\" is not a testbed host (dttbPID-hN)" >&2
    exit 2
    ;;
esac
exec ip netns exec "$host" unshare --uts /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$*"' "$host" "$@"
