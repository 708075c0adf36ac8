#!/usr/bin/env bash
# Across nodes (issue 23): the paired A/B benchmarks run between two emulated nodes
# (scripts/cluster.sh: network namespaces joined by a bridge, each link shaped by tc), one rank
# per node, at each link setting of CLUSTER_LINKS. Per setting:
#   - scripts/bench-p2p-ab.sh: ping-pong latency and windowed bandwidth, bare MPI vs sluice in
#     one process, for contiguous and vect:8:4 messages of CLUSTER_P2P_SIZES;
#   - scripts/bench-coll-ab.sh: the FFT transpose and the halo exchange (datatype cases and their
#     contiguous baselines).
# Verdicts against issue 23's targets (AB_TARGETS=cluster in the plot scripts): no point slower
# than 0.97x the bare MPI, vect:8:4 bandwidth at >= 1 MiB at least 1.5x the bare MPI's.
#
#   scripts/bench-cluster.sh [OUTDIR]          (default bench-out/cluster)
# Environment:
#   CLUSTER_LINKS      link settings, RATE or RATE/DELAY (default "10gbit 1gbit/50us"; "none":
#                      the unshaped veth, as fast as this machine's TCP stack; a delay is
#                      netem's, or scripts/delayline.c's where the kernel has no netem)
#   CLUSTER_P2P_SIZES  message sizes (default 1024,65536,1048576,4194304)
#   CLUSTER_PARTS      "p2p coll" (default both)
#   P2P_AB_*, COLL_AB_*, COLL_*_SIZES as for those scripts (defaults here: P2P_AB_MAX=60,
#   P2P_AB_TOL=0.02, COLL_AB_MAX=40, COLL_AB_MAX_CONTIG=60, COLL_FFT_SIZES=1024,2048,
#   COLL_HALO_SIZES=64,128)
# Writes OUTDIR/<link>/{p2p,coll}/ (each script's own files), OUTDIR/cluster.md (every table) and
# copies the plots to docs/img/cluster-<link>-{p2p,coll}.png.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$root/bench-out/cluster}
links=${CLUSTER_LINKS:-10gbit 1gbit/50us}
sizes=${CLUSTER_P2P_SIZES:-1024,65536,1048576,4194304}
parts=${CLUSTER_PARTS:-p2p coll}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export AB_TARGETS=cluster BENCH_CLUSTER=1
export P2P_AB_MAX=${P2P_AB_MAX:-60} P2P_AB_TOL=${P2P_AB_TOL:-0.02}
export COLL_AB_MAX=${COLL_AB_MAX:-40} COLL_AB_MAX_CONTIG=${COLL_AB_MAX_CONTIG:-60}
# Smaller than bench-coll-ab.sh's defaults: a 4096^2 complex transpose moves 128 MiB each way,
# a second per operation on a 1 Gbit/s link.
export COLL_FFT_SIZES=${COLL_FFT_SIZES:-1024,2048} COLL_HALO_SIZES=${COLL_HALO_SIZES:-64,128}
export P2P_AB_GROUPS="contig,vect:8:4@$sizes"

"$here/cluster.sh" down >/dev/null 2>&1 || true
trap '"$here/cluster.sh" down >/dev/null 2>&1' EXIT
summary=$out/cluster.md
echo "# Across two emulated nodes ($(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD))" >"$summary"
for link in $links; do
  rate=${link%%/*} delay=""
  [ "$link" != "$rate" ] && delay=${link#*/}
  name=${link//\//-}
  # Separate boot ids: MPICH's UCX must cross the link as TCP, not as shared memory.
  shaping=(--rate "$rate")
  [ "$rate" = none ] && shaping=() # the bare veth: bounded by this machine's CPUs, not by tc
  "$here/cluster.sh" up 2 --boot-ids "${shaping[@]}" ${delay:+--delay "$delay"}
  # The shaped rate in GB/s, for the plot's "link-bound" verdict (plot_p2p_ab.py).
  AB_LINK_GBS=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
    f = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 0; if (f) printf "%g", n * f / 8e9 }')
  export AB_LINK_GBS
  for part in $parts; do
    dir=$out/$name/$part
    echo "== $link: $part"
    if [ "$part" = p2p ]; then
      "$here/bench-p2p-ab.sh" "$dir"
    else
      COLL_AB_IMG="" "$here/bench-coll-ab.sh" "$dir"
    fi
    cp "$dir/ab.png" "$root/docs/img/cluster-$name-$part.png"
    { echo; echo "## $link, $part"; echo; cat "$dir/ab.md"; } >>"$summary"
  done
  "$here/cluster.sh" down
done
echo "== results: $summary"
