#!/usr/bin/env bash
# Collectives A/B in one process: the bare MPI's collective (PMPI_* entry points) and sluice's
# (MPI_* entry points, libsluice.so preloaded) trial next to trial, Open MPI and MPICH, for the
# cases of scripts/bench-coll.sh: the FFT transpose (fft-dt) and the halo exchange (halo-dt) with
# their contiguous baselines (fft-contig, halo-contig). This is the measurement behind issue 5's
# targets (fft-dt and halo-dt >= 1.5x bare Open MPI and >= 1x bare MPICH, contiguous collectives
# within 3%): separate bare and preloaded jobs see this machine, and bare Open MPI's halo time,
# change by 1.5-2.8x from one job to the next, while both halves of a pair see the same moment.
#
#   scripts/bench-coll-ab.sh [OUTDIR]          (or COLL_AB_OUT=DIR; default bench-out/coll-ab)
#
# bench/coll_fft.c and bench/coll_halo.c with -A (2 ranks, one per core), one job per MPI and
# benchmark and kind (dt: the datatype cases, contig: their baselines), sizes COLL_FFT_SIZES
# (2048,4096) and COLL_HALO_SIZES (64,128,256): every case is checked element by element,
# calibrated to COLL_SAMPLE_MS (60) per trial (at least one operation; the longer the trial, the
# less one disturbed operation weighs), then pairs are added until the distribution-free 95%
# confidence interval of the median speed-up (bare time / sluice time, > 1 = sluice faster) is
# within +-COLL_AB_TOL (0.02) of it for the datatype cases, +-COLL_AB_TOL_CONTIG (0.01) for the
# contiguous ones (their bound, 0.97, is 3% away from parity), with at least COLL_AB_MIN (16) and
# at most COLL_AB_MAX (100) or COLL_AB_MAX_CONTIG (200) pairs. Trials with a descheduled rank are repeated and left out
# (COLL_MIN_SHARE, COLL_RETRIES as in bench-coll.sh). Verdict per case (scripts/plot_coll_ab.py):
# pass when the interval's lower end is at or above the case's bound, FAIL when its upper end is
# below it, inconclusive otherwise.
# Writes openmpi.txt, mpich.txt (raw output), ab.csv (every pair), abci.csv, ab.md, ab.png and
# meta.txt into OUTDIR; COLL_AB_IMG (default docs/img/coll-ab.png when OUTDIR is the default;
# empty: none) gets a copy of the plot. Exits non-zero on any failure (not on a failed verdict).
set -euo pipefail

BENCH=coll-ab
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${COLL_AB_OUT:-}}
DEF_IMG=""
[ -z "$OUT" ] && OUT=$ROOT/bench-out/coll-ab DEF_IMG=$ROOT/docs/img/coll-ab.png
IMG=${COLL_AB_IMG-$DEF_IMG}
FFT_SIZES=${COLL_FFT_SIZES:-2048,4096}
HALO_SIZES=${COLL_HALO_SIZES:-64,128,256}
MIN_PAIRS=${COLL_AB_MIN:-16}
MAX_PAIRS=${COLL_AB_MAX:-100}
TOL=${COLL_AB_TOL:-0.02}
TOL_CONTIG=${COLL_AB_TOL_CONTIG:-0.01}
MAX_CONTIG=${COLL_AB_MAX_CONTIG:-200}
SAMPLE_MS=${COLL_SAMPLE_MS:-60}
MIN_SHARE=${COLL_MIN_SHARE:-0.95}
RETRIES=${COLL_RETRIES:-2}
MPIS_SPEC=${COLL_MPIS:-"openmpi mpich"}
PY=${COLL_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=${COLL_RUN_TIMEOUT:-900}
QUIET_CORES=${COLL_QUIET_CORES:-0.3} QUIET_MAX=${COLL_QUIET_MAX:-20} QUIET_TOTAL=${COLL_QUIET_TOTAL:-40}
read -r -a MPIS <<<"$MPIS_SPEC"

bench_ab_begin "$PY" COLL_PYTHON "${MPIS[@]}"
for mpi in "${MPIS[@]}"; do
    : >"$OUT/$mpi.txt"
    for b in fft halo; do
        bench_mpicc "$mpi" "$OUT/coll_$b-$mpi" "$ROOT/bench/coll_$b.c" "$ROOT/bench/coll_common.c" -lm
        sizes=$FFT_SIZES
        [ "$b" = halo ] && sizes=$HALO_SIZES
        for kind in dt contig; do
            tol=$TOL max=$MAX_PAIRS
            [ "$kind" = contig ] && tol=$TOL_CONTIG max=$MAX_CONTIG
            bench_ab_job "$mpi" "$b $kind" "$OUT/coll_$b-$mpi" -A -k "$kind" -s "$sizes" -n "$MIN_PAIRS" -N "$max" -e "$tol" \
                -m "$SAMPLE_MS" -r "$RETRIES" -q "$MIN_SHARE"
            log=$OUT/last-run.log
            ncases=$(grep -c '^case ' "$log" || true)
            nverified=$(grep -c '^verify .* ok' "$log" || true)
            ((ncases > 0 && ncases == nverified)) || { cat "$log" >&2; die "$mpi $b $kind: $nverified of $ncases cases verified"; }
            echo "   $mpi $b $kind: $(grep -c '^ab ' "$log") pairs, $(($(date +%s) - start)) s so far"
        done
    done
done
bench_ab_end "fft_sizes=$FFT_SIZES" \
    "halo_sizes=$HALO_SIZES" \
    "pairs=$MIN_PAIRS..$MAX_PAIRS (contiguous ..$MAX_CONTIG) tol=$TOL (contiguous $TOL_CONTIG) sample_ms=$SAMPLE_MS min_share=$MIN_SHARE"
"$PY" "$SCRIPT_DIR/plot_coll_ab.py" "$OUT" --min-share "$MIN_SHARE" || die "plot_coll_ab.py failed"
if [ -n "$IMG" ]; then
    cp "$OUT/ab.png" "$IMG" && echo "copied the plot to $IMG"
fi
echo "== total $(($(date +%s) - start)) s; results in $OUT"
