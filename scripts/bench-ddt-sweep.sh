#!/usr/bin/env bash
# Datatype engine shape sweep (issue 28): seeded random shapes (sluice-ddt-bench --sweep: 1-4
# constructor levels, blocks of 1 B-8 KiB, gaps, start offsets, elements of 1-16 bytes and
# struct mixes, 4 KiB-64 MiB packed), each packed and unpacked by sluice as MPI_Pack/MPI_Unpack
# serve it (--chooser: sluice's kernel or the MPI's engine, as learned for the type) against
# the MPI's own engine, paired by round in one process, for Open MPI and MPICH.
#
#   scripts/bench-ddt-sweep.sh [OUTDIR]      (or SWEEP_OUT=DIR; default bench-out/ddt-sweep)
#
# SWEEP_SEED (default 1) and SWEEP_SHAPES (default 300) choose the shapes; a shape is a pure
# function of (seed, index), so `sluice-ddt-bench --cases s1:17` measures one again. The two
# shapes issue 28 reported (milc-192, face-x3) are measured first, in the same run.
# SWEEP_CASE_MS (default 300) / SWEEP_MAX_MS (default 1500) / SWEEP_TOL (default 0.03) bound
# each shape's measurement as in bench-ddt.sh (a shape still unsettled after SWEEP_MAX_MS is
# measured once more). SWEEP_ENGINE=1 times sluice's kernel alone instead (no --chooser).
# Writes openmpi.csv, mpich.csv (+ .shapes.tsv), sweep.md (verdicts, geometric means, the
# worst shapes) and sweep.png (ratio against block size and against packed size) into OUTDIR;
# the plot needs /usr/bin/python3 with matplotlib.
set -euo pipefail

BENCH=ddt-sweep
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${SWEEP_OUT:-$ROOT/bench-out/ddt-sweep}}
SEED=${SWEEP_SEED:-1}
SHAPES=${SWEEP_SHAPES:-300}
CASE_MS=${SWEEP_CASE_MS:-300}
MAX_MS=${SWEEP_MAX_MS:-1500}
TOL=${SWEEP_TOL:-0.03}
PY=${DDT_PYTHON:-/usr/bin/python3}
CHOOSER=--chooser
[ "${SWEEP_ENGINE:-0}" = 1 ] && CHOOSER=

command -v timeout >/dev/null || die "timeout not found"
bench_require_python "$PY" DDT_PYTHON
bench_clean_env

for mpi in openmpi mpich; do
    echo "== building sluice-ddt-bench for $mpi (target/$mpi)"
    (cd "$ROOT" && SLUICE_MPI=$mpi cargo build --release --locked --target-dir "target/$mpi" --bin sluice-ddt-bench) \
        || die "cargo build ($mpi) failed"
done

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
start=$(date +%s)
read -r load0 _ </proc/loadavg
for mpi in openmpi mpich; do
    echo "== $mpi: $SHAPES shapes of seed $SEED, ${CASE_MS}-${MAX_MS} ms each"
    timeout $((SHAPES * (2 * MAX_MS / 1000 + 5) + 300)) "$ROOT/target/$mpi/release/sluice-ddt-bench" \
        --cases milc-192,face-x3 --sweep "$SEED" --shapes "$SHAPES" $CHOOSER --csv "$OUT/$mpi.csv" \
        --case-ms "$CASE_MS" --max-ms "$MAX_MS" --tol "$TOL" --warm-us 2000 --sample-us 1000 >"$OUT/$mpi.log" 2>&1 \
        || die "$mpi: sluice-ddt-bench failed (see $OUT/$mpi.log)"
done
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    printf 'seed=%s\nshapes=%s\ncase_ms=%s\nmax_ms=%s\ntol=%s\nchooser=%s\nseconds=%s\n' \
        "$SEED" "$SHAPES" "$CASE_MS" "$MAX_MS" "$TOL" "${CHOOSER:+1}" "$(($(date +%s) - start))"
} >"$OUT/meta.txt"
"$PY" "$SCRIPT_DIR/plot_ddt_sweep.py" "$OUT" || die "plot_ddt_sweep.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
