#!/usr/bin/env bash
# Checkpointed parallel datatype processing (RW-CP, RO-CP, HPU-local) against the serial
# specialized kernel: the paper's Fig. 8, 13a, 13b and 18, and the ddt suite on 1 vs P workers.
#
#   scripts/bench-rwcp.sh [OUTDIR]          (or RWCP_OUT=DIR; default bench-out/rwcp)
#
# Builds sluice-rwcp-bench (Open MPI flavor; the bench makes no MPI call), runs it, and writes
# fig8.csv, fig13a.csv, fig13b.csv, suite.csv, fig18.csv, rwcp.md (the tables), meta.txt and
# rwcp.png (plot needs /usr/bin/python3 with matplotlib) into OUTDIR. RWCP_SAMPLES (default 21)
# samples per engine and case, interleaved; RWCP_WORKERS (default 2) workers.
set -euo pipefail

BENCH=rwcp
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${RWCP_OUT:-$ROOT/bench-out/rwcp}}
SAMPLES=${RWCP_SAMPLES:-21}
WORKERS=${RWCP_WORKERS:-2}
PY=${RWCP_PYTHON:-/usr/bin/python3}

bench_require_python "$PY" RWCP_PYTHON
bench_clean_env

echo "== building sluice-rwcp-bench (target/openmpi)"
(cd "$ROOT" && SLUICE_MPI=openmpi cargo build --release --target-dir target/openmpi --bin sluice-rwcp-bench) \
    || die "cargo build failed"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
read -r load0 _ </proc/loadavg
start=$(date +%s)
timeout 900 "$ROOT/target/openmpi/release/sluice-rwcp-bench" --out "$OUT" --samples "$SAMPLES" --workers "$WORKERS" \
    | tee "$OUT/rwcp.md" || die "sluice-rwcp-bench failed"
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    cat <<META
samples=$SAMPLES
workers=$WORKERS
META
} >"$OUT/meta.txt"
"$PY" "$SCRIPT_DIR/plot_rwcp.py" "$OUT" || die "plot_rwcp.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
