#!/usr/bin/env bash
# Datatype engine: pack/unpack throughput of sluice's CompiledType against Open MPI's and MPICH's
# own engines (PMPI_Pack / PMPI_Unpack) and memcpy, on every case of shared/bench/ddt-suite.md.
#
#   scripts/bench-ddt.sh [OUTDIR]          (or DDT_OUT=DIR; default bench-out/ddt)
#
# Builds sluice-ddt-bench for both MPIs (cargo does nothing when they are up to date), runs it
# once per MPI (single process, singleton MPI_Init, no launcher), then merges the two CSVs:
# prints the combined table with sluice/Open MPI and sluice/MPICH ratios paired by round (median
# and 95% interval), their geometric means over the suite, the verdict on every target of
# issue 3, and writes openmpi.csv, mpich.csv, summary.csv, ddt.md and ddt.png (plot needs
# /usr/bin/python3 with matplotlib) into OUTDIR.
#
# A case runs DDT_CASE_MS (default 2500) per MPI, then on until the intervals against the MPI are
# within DDT_TOL (default 0.02) of their medians, for at most DDT_MAX_MS (default 8000). The
# measuring takes 2-4 minutes on a quiet machine, more on a busy one: a case whose intervals are
# still wider than DDT_TOL after DDT_MAX_MS is measured once more (printed as "measured again"),
# and the second measurement is kept.
# Before each sample an operation runs untimed for DDT_WARM_US (default 5000), so every engine
# is timed warm (sluice-ddt-bench's header says why).
# DDT_RUNS=N (default 1) measures N full runs into OUTDIR/run1..runN and combines them
# (combine_ddt.py: the verdicts read each ratio as its median run; combined.md, combined.png).
set -euo pipefail

BENCH=ddt
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${DDT_OUT:-$ROOT/bench-out/ddt}}
CASE_MS=${DDT_CASE_MS:-2500}
MAX_MS=${DDT_MAX_MS:-8000}
TOL=${DDT_TOL:-0.02}
WARM_US=${DDT_WARM_US:-5000}
SAMPLE_US=${DDT_SAMPLE_US:-2000}
PY=${DDT_PYTHON:-/usr/bin/python3}
RUNS=${DDT_RUNS:-1}
RUN_TIMEOUT=$((16 * (2 * MAX_MS / 1000 + 10) + 120))

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

# One full measurement (both MPIs) into directory $1, merged and plotted there.
measure() {
    local RUN=$1 load0 load1
    mkdir -p "$RUN"
    read -r load0 _ </proc/loadavg
    for mpi in openmpi mpich; do
        echo "== $mpi: all 16 cases, ${CASE_MS}-${MAX_MS} ms each (until +-$TOL)"
        log=$RUN/$mpi.log
        timeout "$RUN_TIMEOUT" "$ROOT/target/$mpi/release/sluice-ddt-bench" --csv "$RUN/$mpi.csv" \
            --case-ms "$CASE_MS" --max-ms "$MAX_MS" --tol "$TOL" --warm-us "$WARM_US" --sample-us "$SAMPLE_US" 2>&1 | tee "$log" \
            || die "$mpi: sluice-ddt-bench failed (see $log)"
        [ -s "$RUN/$mpi.csv" ] || die "$mpi: no CSV written"
    done
    read -r load1 _ </proc/loadavg

    {
        bench_meta_common "$load0" "$load1"
        printf 'case_ms=%s\nmax_ms=%s\ntol=%s\nwarm_us=%s\nsample_us=%s\n' "$CASE_MS" "$MAX_MS" "$TOL" "$WARM_US" "$SAMPLE_US"
    } >"$RUN/meta.txt"
    "$PY" "$SCRIPT_DIR/plot_ddt.py" "$RUN" || die "plot_ddt.py failed"
}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
start=$(date +%s)
if [ "$RUNS" -le 1 ]; then
    measure "$OUT"
else
    # Several full runs, combined: one disturbed moment cannot decide a verdict (combine_ddt.py).
    dirs=()
    for k in $(seq 1 "$RUNS"); do
        echo "== run $k of $RUNS"
        measure "$OUT/run$k"
        dirs+=("$OUT/run$k")
    done
    "$PY" "$SCRIPT_DIR/combine_ddt.py" "$OUT" "${dirs[@]}" || die "combine_ddt.py failed"
fi
echo "== total $(($(date +%s) - start)) s; results in $OUT"
