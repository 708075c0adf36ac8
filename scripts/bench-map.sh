#!/usr/bin/env bash
# Topology-aware mapping (issue 25's targets): `sluice-map --bench` on the MAGC paper's setting.
# Every CPU-GPU combination of the micro-benchmark patterns (2d, 2d-w, 3d, 3d-w, col), 64
# processes, 1 MiB messages, on the built-in models of the paper's Cluster A and B: maximum link
# congestion of the default mapping, Strategy 1, Strategy 2 and MAGC, and MAGC's mapping time
# (median of 21), MAGC with greedy, Scotch and both in phases 2 and 3 side by side; then 1,024
# processes on 64 nodes. One process, no MPI.
#
#   scripts/bench-map.sh [OUTDIR]          (default bench-out/map)
# Writes map.md (verdicts and tables), map.csv and map.png; copies them to docs/data/map/ and
# docs/img/map.png when OUTDIR is the default.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out/map}
f=${SLUICE_MPI:-openmpi}
SLUICE_MPI=$f cargo build --release --locked --target-dir "target/$f" --bin sluice-map >&2
mkdir -p "$out"
"target/$f/release/sluice-map" --bench "$out"
if [ $# -eq 0 ]; then
  mkdir -p docs/data/map docs/img
  cp "$out/map.md" "$out/map.csv" docs/data/map/
  cp "$out/map.png" docs/img/map.png
fi
