#!/usr/bin/env bash
# The "remote shell" of the emulated cluster (scripts/cluster.sh): called as ssh would be,
# `cluster-agent.sh [-options] NODE COMMAND...`, it runs COMMAND on NODE: inside the node's
# network namespace (whose /etc/hosts `ip netns exec` puts in place), a new UTS namespace
# carrying the node's host name, and a mount namespace showing the node's own boot id. Like ssh, it joins COMMAND's words with spaces and hands the
# line to a shell. Open MPI's plm_rsh_agent and MPICH hydra's -launcher-exec call it.
set -eu
while [ $# -gt 0 ]; do
  case $1 in
    -*) shift ;; # ssh options the launchers add (-x: no X11 forwarding)
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: cluster-agent.sh NODE COMMAND..." >&2; exit 2; }
node=$1
shift
# The node's own boot id (made by `cluster.sh up`) over the machine's, in a mount namespace of
# the command's own: UCX tells machines apart by boot id.
exec ip netns exec "$node" unshare --uts --mount --propagation private bash -c '
  hostname "$1" || exit 1
  id=/run/sluice-cluster/boot_id/$1
  if [ -f "$id" ]; then mount --bind "$id" /proc/sys/kernel/random/boot_id || exit 1; fi
  shift
  eval "$*"' agent "$node" "$@"
