#!/usr/bin/env bash
# The per-call cost of MPI_Pack / MPI_Unpack on small messages (8 B - 4 KiB), and of a type's life
# (construct + MPI_Type_commit + MPI_Type_free): sluice (MPI_Pack,
# libsluice.so preloaded) against the MPI's own engine (PMPI_Pack) in one process, paired round by
# round, Open MPI and MPICH (bench/pack_small.c). The ddt suite (scripts/bench-ddt.sh) covers
# 100 KiB - 32 MiB, where this cost vanishes.
#
#   scripts/bench-pack-small.sh [OUTDIR]     (or PACK_SMALL_OUT=DIR; default bench-out/pack-small)
#
# PACK_SMALL_ROUNDS (300) rounds of PACK_SMALL_CALLS (2000) calls per operation. Writes
# openmpi.txt, mpich.txt (raw output), pack_small.csv, pack_small.md, pack_small.png and meta.txt
# into OUTDIR. Exits non-zero on any failure.
set -euo pipefail

BENCH=pack-small
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${PACK_SMALL_OUT:-$ROOT/bench-out/pack-small}}
ROUNDS=${PACK_SMALL_ROUNDS:-300}
CALLS=${PACK_SMALL_CALLS:-2000}
PY=${PACK_SMALL_PYTHON:-/usr/bin/python3}
QUIET_CORES=${PACK_SMALL_QUIET_CORES:-0.5} QUIET_MAX=${PACK_SMALL_QUIET_MAX:-20} QUIET_TOTAL=${PACK_SMALL_QUIET_TOTAL:-40}
MPIS=(openmpi mpich)

bench_ab_begin "$PY" PACK_SMALL_PYTHON "${MPIS[@]}"
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/pack_small-$mpi" -I"$ROOT/bench" "$ROOT/bench/pack_small.c" -lm
    wait_quiet "$mpi"
    log=$OUT/$mpi.txt
    bench_launch "$mpi" 1 sluice "$OUT/pack_small-$mpi" "$ROUNDS" "$CALLS" >"$log" 2>&1 || { cat "$log" >&2; die "$mpi: run failed"; }
    grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded"; }
    grep -q '^abci ' "$log" || { cat "$log" >&2; die "$mpi: no results"; }
    echo "   $mpi: $(grep -c '^abci ' "$log") cases, $(($(date +%s) - start)) s so far"
done
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    echo "seconds=$(($(date +%s) - start))"
    echo "waited_s=$waited_total"
    echo "rounds=$ROUNDS calls=$CALLS"
} >"$OUT/meta.txt"
"$PY" "$SCRIPT_DIR/plot_pack_small.py" "$OUT" || die "plot_pack_small.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
