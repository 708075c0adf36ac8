#!/usr/bin/env bash
# Point-to-point A/B in one process: the bare MPI (PMPI_* entry points) and sluice (MPI_* entry
# points, libsluice.so preloaded) trial next to trial, Open MPI and MPICH. This is the measurement
# behind issue 6's "contiguous messages within 3% of the bare MPI at every size": separate bare and
# preloaded processes (scripts/bench-p2p.sh) see this machine drift by more than 3% between runs,
# while both halves of a pair see the same moment.
#
#   scripts/bench-p2p-ab.sh [OUTDIR]          (or P2P_AB_OUT=DIR; default bench-out/p2p-ab)
#
# bench/p2p.c -A (2 ranks), one job per MPI and group of P2P_AB_GROUPS ("TYPES@SIZES ...", default:
# contig at 1 B .. 16 MiB; vect:2:1, vect:8:4 and vect:128:64 at 1 B .. 1 KiB, the "small
# non-contiguous" messages; vect:128:64 at 4 KiB .. 16 MiB, the large blocks left to the MPI's own
# engine): for every (type, size), ping-pong latency and windowed bandwidth, pairs added until the
# distribution-free 95% confidence interval of the median time ratio (sluice / bare, > 1 = sluice
# slower) is within +-P2P_AB_TOL (0.01), with at least P2P_AB_MIN (16) and at most P2P_AB_MAX (400)
# pairs per point. P2P_AB_MS: milliseconds per trial (5). Trials with a descheduled rank are
# repeated (P2P_MIN_SHARE, P2P_RETRIES as in bench-p2p.sh). Verdict per point against issue 6's
# bound for it (scripts/plot_p2p_ab.py: contiguous 1.03, small non-contiguous latency 1.3,
# vect:128:64 1/0.95): pass when the interval's upper end is within it, fail when its lower end is
# above it, inconclusive otherwise.
# Writes openmpi.txt, mpich.txt (raw output), ab.csv (every pair), abci.csv, ab.md, ab.png and
# meta.txt into OUTDIR. Exits non-zero on any failure (not on a failed verdict).
set -euo pipefail

BENCH=p2p-ab
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${P2P_AB_OUT:-$ROOT/bench-out/p2p-ab}}
SMALL=1,2,4,8,16,32,64,128,256,512,1024
LARGE=2048,4096,8192,16384,32768,65536,262144,1048576,4194304,16777216
GROUPS_SPEC=${P2P_AB_GROUPS:-"contig@$SMALL,$LARGE vect:2:1,vect:8:4,vect:128:64@$SMALL vect:128:64@$LARGE"}
MIN_PAIRS=${P2P_AB_MIN:-16}
MAX_PAIRS=${P2P_AB_MAX:-400}
TOL=${P2P_AB_TOL:-0.01}
TRIAL_MS=${P2P_AB_MS:-5}
MIN_SHARE=${P2P_MIN_SHARE:-0.95}
RETRIES=${P2P_RETRIES:-2}
MPIS_SPEC=${P2P_MPIS:-"openmpi mpich"}
PY=${P2P_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=${P2P_RUN_TIMEOUT:-900}
QUIET_CORES=${P2P_QUIET_CORES:-0.3} QUIET_MAX=${P2P_QUIET_MAX:-20} QUIET_TOTAL=${P2P_QUIET_TOTAL:-40}
read -r -a MPIS <<<"$MPIS_SPEC"
read -r -a GROUPS_ARR <<<"$GROUPS_SPEC"

bench_ab_begin "$PY" P2P_PYTHON "${MPIS[@]}"
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/p2p-$mpi" "$ROOT/bench/p2p.c" -lm
    : >"$OUT/$mpi.txt"
    for group in "${GROUPS_ARR[@]}"; do
        types=${group%@*} sizes=${group##*@}
        [ "$types" != "$group" ] || die "P2P_AB_GROUPS: '$group' is not TYPES@SIZES"
        bench_ab_job "$mpi" "$group" "$OUT/p2p-$mpi" -A -t "$types" -s "$sizes" -n "$MIN_PAIRS" -N "$MAX_PAIRS" -e "$TOL" \
            -m "$TRIAL_MS" -r "$RETRIES" -q "$MIN_SHARE" -V
        echo "   $mpi $group: $(grep -c '^ab ' "$OUT/last-run.log") pairs, $(($(date +%s) - start)) s so far"
    done
done
bench_ab_end "groups=$GROUPS_SPEC" \
    "pairs=$MIN_PAIRS..$MAX_PAIRS tol=$TOL trial_ms=$TRIAL_MS min_share=$MIN_SHARE"
"$PY" "$SCRIPT_DIR/plot_p2p_ab.py" "$OUT" --min-share "$MIN_SHARE" || die "plot_p2p_ab.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
