#!/usr/bin/env bash
# Overlap of communication and computation for a pipelined message (bench/p2p_overlap.c):
# 2 ranks, a strided vector of doubles of 1, 4 and 16 MiB packed, sent while both ranks compute
# for as long as the transfer alone takes; the bare MPI, sluice, and sluice with its progress
# thread (SLUICE_PROGRESS_THREAD=1), Open MPI and MPICH, one after the other in one run.
#
#   scripts/bench-overlap.sh [OUTDIR]      (or OVERLAP_OUT=DIR; default bench-out/overlap)
#
# OVERLAP_ROUNDS (30) rounds per size and configuration. Writes openmpi.txt, mpich.txt (raw),
# overlap.csv, overlap.md, overlap.png and meta.txt into OUTDIR. Exits non-zero on any failure.
set -euo pipefail

BENCH=overlap
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${OVERLAP_OUT:-$ROOT/bench-out/overlap}}
ROUNDS=${OVERLAP_ROUNDS:-30}
PY=${OVERLAP_PYTHON:-/usr/bin/python3}
QUIET_CORES=${OVERLAP_QUIET_CORES:-0.5} QUIET_MAX=${OVERLAP_QUIET_MAX:-20} QUIET_TOTAL=${OVERLAP_QUIET_TOTAL:-60}
MPIS=(openmpi mpich)

bench_ab_begin "$PY" OVERLAP_PYTHON "${MPIS[@]}"
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/p2p_overlap-$mpi" "$ROOT/bench/p2p_overlap.c"
    : >"$OUT/$mpi.txt"
    for cfg in bare sluice sluice-thread; do
        wait_quiet "$mpi-$cfg"
        log=$OUT/last-run.log
        # Each rank computes on its own core; the progress thread shares it (2 cores here).
        bench_launch "$mpi" 2 "$cfg" "$OUT/p2p_overlap-$mpi" "$ROUNDS" >"$log" 2>&1 || { cat "$log" >&2; die "$mpi $cfg: run failed"; }
        grep -q '^overlap ' "$log" || { cat "$log" >&2; die "$mpi $cfg: no results"; }
        want=$([ "$cfg" = bare ] && echo bare || ([ "$cfg" = sluice ] && echo sluice || echo sluice+thread))
        grep -q "^config $want\$" "$log" || { cat "$log" >&2; die "$mpi $cfg: ran as $(grep '^config' "$log")"; }
        cat "$log" >>"$OUT/$mpi.txt"
        echo "   $mpi $cfg: $(($(date +%s) - start)) s so far"
    done
done
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    echo "seconds=$(($(date +%s) - start))"
    echo "waited_s=$waited_total"
    echo "rounds=$ROUNDS"
} >"$OUT/meta.txt"
"$PY" "$SCRIPT_DIR/plot_overlap.py" "$OUT" || die "plot_overlap.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
