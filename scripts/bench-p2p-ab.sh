#!/usr/bin/env bash
# Point-to-point A/B in one process: the bare MPI (PMPI_* entry points) and sluice (MPI_* entry
# points, libsluice.so preloaded) trial next to trial, Open MPI and MPICH. This is the measurement
# behind issue 6's "contiguous messages within 3% of the bare MPI at every size": separate bare and
# preloaded processes (scripts/bench-p2p.sh) see this machine drift by more than 3% between runs,
# while both halves of a pair see the same moment.
#
#   scripts/bench-p2p-ab.sh [OUTDIR]          (or P2P_AB_OUT=DIR; default bench-out/p2p-ab)
#
# bench/p2p.c -A (2 ranks): for every type in P2P_AB_TYPES (default contig) and size in
# P2P_AB_SIZES (1 B .. 16 MiB), ping-pong latency and windowed bandwidth, pairs added until the
# distribution-free 95% confidence interval of the median time ratio (sluice / bare, > 1 = sluice
# slower) is within +-P2P_AB_TOL (0.01), with at least P2P_AB_MIN (16) and at most P2P_AB_MAX (400)
# pairs per point. P2P_AB_MS: milliseconds per trial (5). Trials with a descheduled rank are
# repeated (P2P_MIN_SHARE, P2P_RETRIES as in bench-p2p.sh). Verdict per point against P2P_AB_BOUND
# (1.03): pass when the interval's upper end is within it, fail when its lower end is above it,
# inconclusive otherwise.
# Writes openmpi.txt, mpich.txt (raw output), ab.csv (every pair), abci.csv, ab.md, ab.png and
# meta.txt into OUTDIR. Exits non-zero on any failure (not on a failed verdict).
set -euo pipefail

BENCH=p2p-ab
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${P2P_AB_OUT:-$ROOT/bench-out/p2p-ab}}
TYPES=${P2P_AB_TYPES:-contig}
SIZES=${P2P_AB_SIZES:-1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,262144,1048576,4194304,16777216}
MIN_PAIRS=${P2P_AB_MIN:-16}
MAX_PAIRS=${P2P_AB_MAX:-400}
TOL=${P2P_AB_TOL:-0.01}
TRIAL_MS=${P2P_AB_MS:-5}
BOUND=${P2P_AB_BOUND:-1.03}
MIN_SHARE=${P2P_MIN_SHARE:-0.95}
RETRIES=${P2P_RETRIES:-2}
MPIS_SPEC=${P2P_MPIS:-"openmpi mpich"}
PY=${P2P_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=${P2P_RUN_TIMEOUT:-900}
QUIET_CORES=${P2P_QUIET_CORES:-0.3} QUIET_MAX=${P2P_QUIET_MAX:-20} QUIET_TOTAL=${P2P_QUIET_TOTAL:-40}
read -r -a MPIS <<<"$MPIS_SPEC"

bench_require_mpis "${MPIS[@]}"
bench_require_python "$PY" P2P_PYTHON
bench_clean_env
export OMPI_MCA_mpi_yield_when_idle=0 # busy-poll, as in bench-p2p.sh
bench_build_sluice "${MPIS[@]}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
read -r load0 _ </proc/loadavg
start=$(date +%s)
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/p2p-$mpi" "$ROOT/bench/p2p.c" -lm
    wait_quiet "$mpi"
    echo "== $mpi: A/B of $TYPES, $(tr ',' '\n' <<<"$SIZES" | wc -l) sizes"
    log=$OUT/$mpi.txt
    bench_launch "$mpi" 2 sluice "$OUT/p2p-$mpi" -A -t "$TYPES" -s "$SIZES" -n "$MIN_PAIRS" -N "$MAX_PAIRS" -e "$TOL" \
        -m "$TRIAL_MS" -r "$RETRIES" -q "$MIN_SHARE" -V >"$log" 2>&1 || { cat "$log" >&2; die "$mpi: run failed"; }
    grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded"; }
    grep -q '^abci ' "$log" || { cat "$log" >&2; die "$mpi: no results"; }
    echo "   $(grep -c '^ab ' "$log") pairs, $(($(date +%s) - start)) s so far"
done
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    echo "seconds=$(($(date +%s) - start))"
    echo "waited_s=$waited_total"
    echo "types=$TYPES"
    echo "sizes=$SIZES"
    echo "pairs=$MIN_PAIRS..$MAX_PAIRS tol=$TOL trial_ms=$TRIAL_MS bound=$BOUND min_share=$MIN_SHARE"
} >"$OUT/meta.txt"
"$PY" "$SCRIPT_DIR/plot_p2p_ab.py" "$OUT" --bound "$BOUND" || die "plot_p2p_ab.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
