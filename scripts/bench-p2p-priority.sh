#!/usr/bin/env bash
# Priorities of pipelined receives (bench/p2p_priority.c; the `sluice_priority` key): how much
# sooner an urgent message completes than under FIFO when 8 others of the same size are there
# before it, through the shared-memory arena and through the MPI (`sluice_p2p_path` arena /
# pipelined), Open MPI and MPICH, each round a pair of priority and FIFO runs in one process.
#
#   scripts/bench-p2p-priority.sh [OUTDIR]     (or PRIORITY_OUT=DIR; default bench-out/p2p-priority)
#
# PRIORITY_ROUNDS (20) pairs per point, PRIORITY_BYTES (1048576,4194304) packed bytes per
# message. Writes openmpi.txt, mpich.txt (raw), priority.csv, priority.md, priority.png and
# meta.txt into OUTDIR. Exits non-zero on any failure.
set -euo pipefail

BENCH=p2p-priority
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${PRIORITY_OUT:-$ROOT/bench-out/p2p-priority}}
ROUNDS=${PRIORITY_ROUNDS:-20}
SIZES=${PRIORITY_BYTES:-1048576,4194304}
PY=${PRIORITY_PYTHON:-/usr/bin/python3}
QUIET_CORES=${PRIORITY_QUIET_CORES:-0.5} QUIET_MAX=${PRIORITY_QUIET_MAX:-20} QUIET_TOTAL=${PRIORITY_QUIET_TOTAL:-60}
MPIS=(openmpi mpich)

bench_ab_begin "$PY" PRIORITY_PYTHON "${MPIS[@]}"
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/p2p_priority-$mpi" "$ROOT/bench/p2p_priority.c" -lm
    : >"$OUT/$mpi.txt"
    for path in arena pipelined; do
        for bytes in ${SIZES//,/ }; do
            wait_quiet "$mpi-$path-$bytes"
            log=$OUT/last-run.log
            bench_launch "$mpi" 2 sluice "$OUT/p2p_priority-$mpi" "$ROUNDS" "$path" "$bytes" >"$log" 2>&1 ||
                { cat "$log" >&2; die "$mpi $path $bytes: run failed"; }
            grep -q '^priority ' "$log" || { cat "$log" >&2; die "$mpi $path $bytes: no results"; }
            cat "$log" >>"$OUT/$mpi.txt"
            echo "   $mpi $path $bytes: $(grep '^priority ' "$log"), $(($(date +%s) - start)) s so far"
        done
    done
done
bench_ab_end "rounds=$ROUNDS"
"$PY" "$SCRIPT_DIR/plot_priority.py" "$OUT" || die "plot_priority.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
