#!/usr/bin/env bash
# Planning time of the isometry path planner (src/transfer/plan/, issue 22's targets: full
# <= 20 us for 1-D and <= 50 us for 2-D transfers, simple <= 2 us, a cached plan <= 100 ns), on
# the paper's two-node Sapling model (src/transfer/plan/models/sapling2.toml): the ignored
# timing test in src/transfer/plan/tests/timing.rs, one process, 21 batches per point (median
# and the distribution-free 95% interval of the median). Warm: the full planner keeps the
# block-factor grid of a shape per thread; the first plan of a new 2-D shape costs 3-5 us more.
#
#   scripts/bench-plan.sh [OUTDIR]          (default bench-out/plan)
# Writes times.txt (raw), plan.md (table and verdict) and plan.png; copies the plot to
# docs/img/plan.png when OUTDIR is the default.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out/plan}
img=""
[ $# -eq 0 ] && img=docs/img/plan.png
mkdir -p "$out"
SLUICE_MPI=${SLUICE_MPI:-openmpi} cargo test --release --locked --target-dir "target/${SLUICE_MPI:-openmpi}" --lib \
  transfer::plan::tests::timing -- --ignored --nocapture --test-threads=1 >"$out/times.txt" 2>&1
grep -q '^plan ' "$out/times.txt" || { cat "$out/times.txt" >&2; echo "bench-plan: no timings" >&2; exit 1; }
/usr/bin/python3 scripts/plot_plan.py "$out" ${img:+--img "$img"}
