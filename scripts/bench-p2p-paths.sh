#!/usr/bin/env bash
# Is sluice's automatic point-to-point path right in reality? (bench/p2p_paths.c; issue 22's
# target "the planned path runs at >= 0.95x of the best of the forced alternatives".) Every
# ddt-suite case at 64 KiB, 1 MiB and 16 MiB, 2 ranks on one node, ping-pong on five
# communicators that differ only in the `sluice_p2p_path` info key (none = automatic, mpi,
# staged, pipelined, arena), trial next to trial in one process; Open MPI and MPICH.
#
#   scripts/bench-p2p-paths.sh [OUTDIR]      (or PATHS_OUT=DIR; default bench-out/p2p-paths)
#
# PATHS_CASES, PATHS_SIZES: the program's -c and -s (default: all cases, 64K,1M,16M);
# PATHS_MIN/PATHS_MAX rounds (9/61), PATHS_TOL (0.02: half-width of the ratio's interval),
# PATHS_MS (10: milliseconds per trial). Writes openmpi.txt, mpich.txt (raw),
# MPI-decisions.txt (each contest's decision), paths.csv, paths.md, paths.png and meta.txt
# into OUTDIR. Exits non-zero on any failure (not on a failed verdict).
set -euo pipefail

BENCH=p2p-paths
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${PATHS_OUT:-$ROOT/bench-out/p2p-paths}}
CASES=${PATHS_CASES:-vec-1,vec-2,vec-8,vec-64,vec-256,face-x,face-y,face-z,lu-5,milc,wrf,fft-t,lammps,specfem,struct-mix}
SIZES=${PATHS_SIZES:-65536,1048576,16777216}
PY=${PATHS_PYTHON:-/usr/bin/python3}
QUIET_CORES=${PATHS_QUIET_CORES:-0.5} QUIET_MAX=${PATHS_QUIET_MAX:-20} QUIET_TOTAL=${PATHS_QUIET_TOTAL:-60}
RUN_TIMEOUT=${PATHS_RUN_TIMEOUT:-1800}
read -r -a MPIS <<<"${PATHS_MPIS:-openmpi mpich}"

bench_ab_begin "$PY" PATHS_PYTHON "${MPIS[@]}"
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/p2p_paths-$mpi" "$ROOT/bench/p2p_paths.c" -lm
    wait_quiet "$mpi"
    log=$OUT/last-run.log
    # SLUICE_LOG=plan: each contest's decision (every pairing's median) goes to
    # MPI-decisions.txt (stderr, apart from the points: MPICH interleaves the two streams
    # within lines), so a failing point says what was chosen and on what samples.
    SLUICE_LOG=plan bench_launch "$mpi" 2 sluice "$OUT/p2p_paths-$mpi" -c "$CASES" -s "$SIZES" -n "${PATHS_MIN:-9}" -N "${PATHS_MAX:-61}" \
        -e "${PATHS_TOL:-0.02}" -m "${PATHS_MS:-10}" >"$log" 2>"$OUT/$mpi-decisions.txt" ||
        { cat "$log" "$OUT/$mpi-decisions.txt" >&2; die "$mpi: run failed"; }
    grep -q '^path ' "$log" || { cat "$log" >&2; die "$mpi: no results"; }
    cp "$log" "$OUT/$mpi.txt"
    echo "   $mpi: $(grep -c '^path ' "$log") points, $(($(date +%s) - start)) s so far"
done
bench_ab_end "cases=$CASES" \
    "sizes=$SIZES"
"$PY" "$SCRIPT_DIR/plot_paths.py" "$OUT" || die "plot_paths.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
