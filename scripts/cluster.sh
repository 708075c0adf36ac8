#!/usr/bin/env bash
# An emulated cluster on this machine: N nodes, each a network namespace with its own host name
# (a UTS namespace entered by every process launched on it) and its own /etc/hosts, joined by a
# bridge; the links can be shaped with tc (rate and one-way delay). MPI launchers run inside
# node 1 and start the other nodes' daemons through scripts/cluster-agent.sh, which enters the
# target node as ssh would log into it. Traffic goes only to the addresses given here to the
# nodes; the bridge has no address and no link to any other interface.
#
# Usage:
#   scripts/cluster.sh up N [--rate RATE] [--delay DELAY] [--boot-ids]
#                                                           nodes sl-node1..sl-nodeN
#   scripts/cluster.sh down                                 removes everything `up` made
#   scripts/cluster.sh status                               nodes, addresses and link shaping
#   scripts/cluster.sh run -- mpirun|mpiexec ARGS...        a launcher, inside node 1, with the
#                                                           cluster's hosts and transport options
#   scripts/cluster.sh exec NODE -- COMMAND...              a command on one node
# RATE is a tc rate (10gbit, 1gbit, 500mbit), DELAY a tc time (50us, 1ms), applied to each node's
# link in both directions (the delay once per direction: one-way latency between two nodes is
# DELAY). The delay is netem's where the kernel has that qdisc; where it does not (some VMs, this
# project's), each node's link is a pair of TAP devices joined by scripts/delayline.c, a user-space
# relay that holds the node's outgoing frames for DELAY (built with cc at `up`), with an MTU of
# 65,000 so that the relay forwards few, large frames.
# --boot-ids gives every node a boot id of its own. Without it the nodes share this machine's,
# and UCX (MPICH's transport here) joins ranks of different nodes with shared memory; with it,
# with TCP over the cluster's links, as between real machines. MPICH 4.0.2 with UCX 1.13.1 then
# hangs in MPI_Finalize in about 1 of 10 jobs of 4 ranks here, bare MPICH as well (one rank in
# ucp_worker_progress, the others in the PMI barrier): the benchmarks (2 ranks) use it, the
# tests do not. Open MPI uses its own TCP transport between nodes either way. `run` places ranks round-robin over the nodes (rank r on node r mod N); a launcher
# argument --map-by (Open MPI) or -ppn (MPICH) takes precedence, and a placement of the user's
# own (Open MPI --rankfile/-rf/--hostfile/--host, MPICH -f/-hostfile/-machinefile/-hosts: e.g.
# sluice-map's files) replaces the cluster's host list.
# Environment:
#   SLUICE_CLUSTER_PREFIX  names of namespaces, hosts and links (default "sl-"; at most 5 chars)
#   SLUICE_CLUSTER_NET     the nodes' /24 (default 10.211.0; node i is .(10+i)); it must not be
#                          a network this machine already routes
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2 and util-linux; without them `up` says so
# and exits 77 (what the cluster tests take as "skip").
set -Eeuo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${SLUICE_CLUSTER_PREFIX:-sl-}
net=${SLUICE_CLUSTER_NET:-10.211.0}
state=/run/sluice-cluster/${prefix%-}
bridge=${prefix}br0
iface=${prefix}eth0

die() { echo "cluster.sh: $*" >&2; exit 1; }
node_name() { echo "${prefix}node$1"; }
node_addr() { echo "$net.$((10 + $1))"; }
nodes() { cat "$state/nodes" 2>/dev/null || echo 0; }

# Can this process make namespaces and links? Exit 77 with the reason if not.
check_privileges() {
  local why=""
  if [ "$(id -u)" -ne 0 ]; then
    why="not root"
  elif ! command -v ip >/dev/null || ! command -v tc >/dev/null || ! command -v unshare >/dev/null; then
    why="iproute2 (ip, tc) or util-linux (unshare) missing"
  elif ! ip netns add "${prefix}probe" 2>/dev/null; then
    why="cannot create network namespaces (ip netns add failed)"
  else
    ip netns del "${prefix}probe"
    if ! ip link add "${prefix}probe" type bridge 2>/dev/null; then
      why="cannot create a bridge (ip link add type bridge failed)"
    else
      ip link del "${prefix}probe"
      if ! ip link add "${prefix}probe" type veth peer name "${prefix}probe1" 2>/dev/null; then
        why="cannot create veth pairs (ip link add type veth failed)"
      else
        ip link del "${prefix}probe"
      fi
    fi
    if [ -z "$why" ] && ! unshare --uts --mount true 2>/dev/null; then
      why="cannot create UTS and mount namespaces (unshare failed)"
    fi
  fi
  if [ -n "$why" ]; then
    echo "cluster.sh: cannot emulate a cluster here: $why" >&2
    exit 77
  fi
}

# Bytes per second of a tc rate (10gbit, 500mbit, 100kbit, 1000000bit).
rate_bytes() {
  local r=${1,,} n unit
  [[ $r =~ ^([0-9]+)([kmg]?)(bit|bps)$ ]] || die "cannot read rate '$1' (use e.g. 10gbit, 500mbit)"
  n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in k) n=$((n * 1000)) ;; m) n=$((n * 1000000)) ;; g) n=$((n * 1000000000)) ;; esac
  [ "${BASH_REMATCH[3]}" = bit ] && n=$((n / 8))
  echo "$n"
}

# Shapes egress of one link end. Rate alone: a token bucket (tbf) with a 2 ms burst and a queue
# of 100 ms (a 1 MiB message must queue, not drop, or TCP falls back to its retransmit timer).
# A delay here is netem's; `up` uses the user-space delay line instead where netem is missing.
shape() { # netns-or-"" dev rate delay
  local ns=$1 dev=$2 rate=$3 delay=$4 run=() qdisc=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  if [ -n "$delay" ]; then
    qdisc=(netem delay "$delay" ${rate:+rate "$rate"} limit 100000)
  elif [ -n "$rate" ]; then
    local burst
    burst=$(($(rate_bytes "$rate") / 500))
    ((burst >= 65536)) || burst=65536
    qdisc=(tbf rate "$rate" burst "$burst" latency 100ms)
  else
    return 0
  fi
  "${run[@]}" ip link set "$dev" txqueuelen 10000
  if ! "${run[@]}" tc qdisc replace dev "$dev" root "${qdisc[@]}" 2>"$state/tc.err"; then
    if grep -q "qdisc kind is unknown" "$state/tc.err" && [ "${qdisc[0]}" = netem ]; then
      echo "cluster.sh: this kernel has no netem qdisc (sch_netem): links cannot be given a delay here; use --rate alone" >&2
    else
      cat "$state/tc.err" >&2
    fi
    return 1
  fi
}

# Whether this kernel has the netem qdisc (tried on a veth pair of a scratch namespace).
netem_available() {
  local ns=${prefix}probe ok=1
  ip netns add "$ns" 2>/dev/null || return 1
  ip -n "$ns" link add p0 type veth peer name p1 2>/dev/null &&
    ip netns exec "$ns" tc qdisc add dev p0 root netem delay 1ms 2>/dev/null || ok=0
  ip netns del "$ns" 2>/dev/null || true
  ((ok))
}

# Nanoseconds of a tc time (50us, 1ms, 100ns, 0.5ms, 2s).
time_ns() {
  local t=${1,,}
  [[ $t =~ ^([0-9]+)(\.[0-9]+)?(ns|us|usec|ms|msec|s|sec)$ ]] || die "cannot read delay '$1' (use e.g. 50us, 1ms)"
  local scale
  case ${BASH_REMATCH[3]} in ns) scale=1 ;; us | usec) scale=1000 ;; ms | msec) scale=1000000 ;; *) scale=1000000000 ;; esac
  awk -v v="${BASH_REMATCH[1]}${BASH_REMATCH[2]}" -v s="$scale" 'BEGIN { printf "%d\n", v * s }'
}

# A node's link through the user-space delay line: TAP `bridge_end` on the bridge, TAP `iface`
# in the node, and the relay between them, its pid in the state directory.
delayed_link() { # i ns bridge_end delay_ns
  local i=$1 ns=$2 end=$3 d=$4
  ip tuntap add dev "$end" mode tap
  ip link set "$end" mtu 65000
  ip link set "$end" master "$bridge" up
  ip -n "$ns" tuntap add dev "$iface" mode tap
  ip -n "$ns" link set "$iface" mtu 65000
  setsid "$state/delayline" "$end" "/run/netns/$ns" "$iface" "$d" </dev/null >>"$state/delayline.log" 2>&1 &
  echo $! >"$state/delayline.$i.pid"
  # Attached when both TAP devices have a carrier; frames sent before would be lost.
  local tries=0
  while ip -o link show "$end" | grep -q NO-CARRIER || ip -n "$ns" -o link show "$iface" | grep -q NO-CARRIER; do
    ((++tries <= 200)) || die "the delay line of $ns did not start (see $state/delayline.log)"
    sleep 0.01
  done
}

cmd_up() {
  local n=${1:-}; shift || true
  local rate="" delay="" boot_ids=0
  while (($#)); do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --delay) delay=$2; shift 2 ;;
      --boot-ids) boot_ids=1; shift ;;
      *) die "unknown argument $1" ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || die "up needs a node count (1..200)"
  ((${#prefix} <= 5)) || die "SLUICE_CLUSTER_PREFIX is longer than 5 characters (link names are at most 15)"
  check_privileges
  [ -e "$state" ] && die "a cluster is already up ($state); run 'scripts/cluster.sh down' first"
  if ip route show | grep -q "^$net\.0/"; then
    die "$net.0/24 is already routed on this machine; pick another with SLUICE_CLUSTER_NET"
  fi
  mkdir -p "$state"
  echo 0 >"$state/nodes"
  trap 'echo "cluster.sh: up failed; removing what it made" >&2; cmd_down >/dev/null 2>&1' ERR
  echo "$rate" >"$state/rate"
  echo "$delay" >"$state/delay"
  local line_ns=""
  if [ -n "$delay" ] && ! netem_available; then
    line_ns=$(time_ns "$delay")
    command -v cc >/dev/null || die "this kernel has no netem qdisc and there is no C compiler to build the user-space delay line"
    cc -O2 -Wall -o "$state/delayline" "$here/delayline.c"
    echo "user-space delay line (no netem)" >"$state/delay-how"
  fi
  ip link add "$bridge" type bridge
  [ -n "$line_ns" ] && ip link set "$bridge" mtu 65000
  ip link set "$bridge" up
  local hosts="127.0.0.1 localhost"$'\n'
  for ((i = 1; i <= n; i++)); do hosts+="$(node_addr "$i") $(node_name "$i")"$'\n'; done
  for ((i = 1; i <= n; i++)); do
    local ns host peer
    ns=$(node_name "$i") host=$ns peer=${prefix}v$i
    ip netns add "$ns"
    echo "$i" >"$state/nodes"
    mkdir -p "/etc/netns/$ns"
    printf '%s' "$hosts" >"/etc/netns/$ns/hosts"
    echo "$host" >"/etc/netns/$ns/hostname"
    if ((boot_ids)); then
      # A boot id of its own (cluster-agent.sh mounts it over /proc/sys/kernel/random/boot_id):
      # UCX takes processes with the same boot id for one machine and joins them with shared
      # memory, whatever their network namespace.
      mkdir -p /run/sluice-cluster/boot_id
      cat /proc/sys/kernel/random/uuid >"/run/sluice-cluster/boot_id/$ns"
    fi
    if [ -n "$line_ns" ]; then
      delayed_link "$i" "$ns" "$peer" "$line_ns"
    else
      ip link add "$peer" type veth peer name "$iface" netns "$ns"
      ip link set "$peer" master "$bridge" up
    fi
    ip -n "$ns" addr add "$(node_addr "$i")/24" dev "$iface"
    ip -n "$ns" link set "$iface" up
    ip -n "$ns" link set lo up
    # With the delay line, the delay is its business and tc only shapes the rate.
    if [ -n "$line_ns" ]; then shape "$ns" "$iface" "$rate" ""; else shape "$ns" "$iface" "$rate" "$delay"; fi
    shape "" "$peer" "$rate" ""
  done
  trap - ERR
  echo "cluster up: $n nodes ($(node_name 1)..$(node_name "$n")) on $net.0/24${rate:+, rate $rate}${delay:+, delay $delay}"
}

cmd_down() {
  local n i ns
  n=$(nodes)
  # The delay lines (they hold their nodes' TAP devices), then whatever still runs on a node (a
  # launcher that hung).
  local pid
  for pid in "$state"/delayline.*.pid; do
    [ -e "$pid" ] && kill -9 "$(cat "$pid")" 2>/dev/null || true
  done
  for ((i = 1; i <= n + 1; i++)); do
    ns=$(node_name "$i")
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  for ((i = 1; i <= n + 1; i++)); do
    ns=$(node_name "$i")
    ip link del "${prefix}v$i" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns" "/run/sluice-cluster/boot_id/$ns"
  done
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$state"
  echo "cluster down"
}

cmd_status() {
  local n i ns
  n=$(nodes)
  ((n > 0)) || { echo "no cluster up"; return 1; }
  echo "$n nodes on $net.0/24, rate $(cat "$state/rate"), delay $(cat "$state/delay")$(sed 's/^/ by /' "$state/delay-how" 2>/dev/null)"
  for ((i = 1; i <= n; i++)); do
    ns=$(node_name "$i")
    echo "$ns $(node_addr "$i") $(ip netns exec "$ns" tc qdisc show dev "$iface" | head -1)"
  done
}

cmd_exec() {
  local node=$1; shift
  [ "${1:-}" = "--" ] && shift
  exec "$here/cluster-agent.sh" "$node" "$(printf '%q ' "$@")"
}

# `run -- LAUNCHER ARGS...`: the launcher with the cluster's hosts and transport options inserted
# after its name, started inside node 1 (where its host name is that node's).
cmd_run() {
  [ "${1:-}" = "--" ] && shift
  (($#)) || die "run needs a launcher command after --"
  local n launcher flavor hosts="" i args=()
  n=$(nodes)
  ((n > 0)) || die "no cluster up (scripts/cluster.sh up N)"
  launcher=$1; shift
  case "$(readlink -f "$(command -v "$launcher")")" in
    *openmpi* | *orterun*) flavor=openmpi ;;
    *mpich* | *hydra*) flavor=mpich ;;
    *) die "cannot tell the MPI of $launcher (use mpirun.openmpi or mpiexec.mpich)" ;;
  esac
  local user=" $* "
  # A placement of the user's own (a rankfile or host file, e.g. from sluice-map) replaces the
  # cluster's host list and round-robin mapping.
  local own=0
  if [ $flavor = openmpi ]; then
    [[ $user == *" --rankfile "* || $user == *" -rf "* || $user == *" --hostfile "* || $user == *" --host "* ]] && own=1
    for ((i = 1; i <= n; i++)); do hosts+="${hosts:+,}$(node_name "$i"):64"; done
    ((own)) || args=(--host "$hosts")
    args+=(--mca plm_rsh_agent "$here/cluster-agent.sh"
      --mca oob_tcp_if_include "$net.0/24" --mca btl_tcp_if_include "$net.0/24" --mca btl tcp,self,vader)
    ((own)) || [[ $user == *" --map-by "* || $user == *" -npernode "* || $user == *" --npernode "* ]] || args+=(--map-by node)
  else
    [[ $user == *" -f "* || $user == *" -hostfile "* || $user == *" -machinefile "* || $user == *" -hosts "* ]] && own=1
    for ((i = 1; i <= n; i++)); do hosts+="${hosts:+,}$(node_name "$i")"; done
    ((own)) || args=(-hosts "$hosts")
    # MPICH here is ch4:ucx: its network transport between nodes is UCX's TCP on the cluster's
    # interface (not the loopback, which every node has).
    args+=(-launcher ssh -launcher-exec "$here/cluster-agent.sh" -iface "$iface"
      -genv UCX_NET_DEVICES "$iface")
  fi
  exec "$here/cluster-agent.sh" "$(node_name 1)" "$(printf '%q ' "$launcher" "${args[@]}" "$@")"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  run) shift; cmd_run "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
