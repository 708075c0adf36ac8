#!/usr/bin/env bash
# Datatype engine: pack/unpack throughput of sluice's CompiledType against Open MPI's and MPICH's
# own engines (PMPI_Pack / PMPI_Unpack) and memcpy, on every case of shared/bench/ddt-suite.md.
#
#   scripts/bench-ddt.sh [OUTDIR]          (or DDT_OUT=DIR; default bench-out/ddt)
#
# Builds sluice-ddt-bench for both MPIs (cargo does nothing when they are up to date), runs it
# once per MPI (single process, singleton MPI_Init, no launcher), then merges the two CSVs:
# prints the combined table with sluice/Open MPI and sluice/MPICH ratios, their geometric means
# over the suite and the cases where sluice is slower than the faster MPI engine, and writes
# openmpi.csv, mpich.csv, summary.csv, ddt.md and ddt.png (plot needs /usr/bin/python3 with
# matplotlib) into OUTDIR. DDT_CASE_MS (default 2500) is the timed time per case and MPI; the
# whole run takes about 16 x 2 x DDT_CASE_MS plus setup (under 2 minutes by default).
set -euo pipefail

BENCH=ddt
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${DDT_OUT:-$ROOT/bench-out/ddt}}
CASE_MS=${DDT_CASE_MS:-2500}
SAMPLE_US=${DDT_SAMPLE_US:-2000}
PY=${DDT_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=300

command -v timeout >/dev/null || die "timeout not found"
bench_require_python "$PY" DDT_PYTHON

# The measured configuration is sluice's default one: no user SLUICE_* settings, no preload.
bench_clean_env

# Each flavor is always built with its own SLUICE_MPI and its own target dir (mixing them
# corrupts the build).
for mpi in openmpi mpich; do
    echo "== building sluice-ddt-bench for $mpi (target/$mpi)"
    (cd "$ROOT" && SLUICE_MPI=$mpi cargo build --release --target-dir "target/$mpi" --bin sluice-ddt-bench) \
        || die "cargo build ($mpi) failed"
    [ -x "$ROOT/target/$mpi/release/sluice-ddt-bench" ] || die "target/$mpi/release/sluice-ddt-bench missing after build"
done

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
read -r load0 _ </proc/loadavg
start=$(date +%s)
for mpi in openmpi mpich; do
    echo "== $mpi: all 16 cases, ${CASE_MS} ms each"
    log=$OUT/$mpi.log
    timeout "$RUN_TIMEOUT" "$ROOT/target/$mpi/release/sluice-ddt-bench" --csv "$OUT/$mpi.csv" \
        --case-ms "$CASE_MS" --sample-us "$SAMPLE_US" 2>&1 | tee "$log" \
        || die "$mpi: sluice-ddt-bench failed (see $log)"
    [ -s "$OUT/$mpi.csv" ] || die "$mpi: no CSV written"
done
read -r load1 _ </proc/loadavg

{
    bench_meta_common "$load0" "$load1"
    cat <<META
case_ms=$CASE_MS
sample_us=$SAMPLE_US
META
} >"$OUT/meta.txt"

"$PY" "$SCRIPT_DIR/plot_ddt.py" "$OUT" || die "plot_ddt.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
