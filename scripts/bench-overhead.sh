#!/usr/bin/env bash
# Interception overhead of sluice's pass-through path, Open MPI and MPICH, bare vs preloaded.
#
#   scripts/bench-overhead.sh [OUTDIR]          (or OVERHEAD_OUT=DIR; default bench-out/overhead)
#
# Measures, for each MPI, bare and with libsluice.so in LD_PRELOAD:
#   - 8-byte MPI_Send/MPI_Recv ping-pong, half round-trip latency (2 ranks)
#   - 4 MiB bandwidth: rank 0 posts a window of OVERHEAD_WINDOW (16) MPI_Isend of 4 MiB, rank 1
#     the matching MPI_Irecv into distinct buffers, MPI_Waitall on both, then a 4-byte ack
#   - ns per call of cheap local intercepted calls in a single process (MPI_Test on
#     MPI_REQUEST_NULL, MPI_Get_count, MPI_Iprobe on MPI_COMM_SELF with nothing pending)
#   - the same calls, and an 8-byte MPI_Sendrecv to self, from Fortran (`use mpi`,
#     bench/overhead_f.f90: on Open MPI sluice's own Fortran entry points serve them)
# Trials are interleaved: OVERHEAD_BLOCKS blocks, each running every (MPI, bare|sluice) pair with
# OVERHEAD_TRIALS trials per process; the bare/sluice order alternates between blocks (ABBA...).
# Writes raw.csv, summary.csv, overhead.md, overhead.png (plot needs /usr/bin/python3 with
# matplotlib) and the two benchmark binaries into OUTDIR. Exits non-zero on any failure.
set -euo pipefail

BENCH=overhead
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${OVERHEAD_OUT:-$ROOT/bench-out/overhead}}
BLOCKS=${OVERHEAD_BLOCKS:-16}       # interleaved blocks
TRIALS=${OVERHEAD_TRIALS:-3}       # trials per process run -> BLOCKS*TRIALS trials per config
LAT_ITERS=${OVERHEAD_LAT_ITERS:-10000}
BW_WINDOWS=${OVERHEAD_BW_WINDOWS:-4}
WINDOW=${OVERHEAD_WINDOW:-16}
CALLS=${OVERHEAD_CALLS:-2000000}   # per trial (MPI_Iprobe: a quarter of that)
NOISE_PCT=${OVERHEAD_NOISE_PCT:-10}
TARGET_NS=${OVERHEAD_TARGET_NS:-20}
PY=${OVERHEAD_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=120

bench_require_mpis openmpi mpich
bench_require_python "$PY" OVERHEAD_PYTHON

# The measured configuration must be sluice's default one: no user SLUICE_* settings, no preload.
bench_clean_env

bench_build_sluice openmpi mpich
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for mpi in openmpi mpich; do
    bench_mpicc "$mpi" "$OUT/overhead-$mpi" "$ROOT/bench/overhead.c"
    mpif90."$mpi" -O2 -o "$OUT/overhead_f-$mpi" "$ROOT/bench/overhead_f.f90" || die "mpif90.$mpi failed"
done

# launch MPI NP CONFIG ARGS...  (CONFIG: bare | sluice | stats)
launch() {
    local mpi=$1 np=$2 cfg=$3
    shift 3
    bench_launch "$mpi" "$np" "$cfg" "$OUT/overhead-$mpi" "$@"
}

echo "== checking that the preloaded runs go through sluice"
for mpi in openmpi mpich; do
    log=$OUT/check-$mpi.log
    launch "$mpi" 2 stats p2p 1 1000 1 4 >"$log" 2>&1 || { cat "$log" >&2; die "$mpi: stats run failed"; }
    grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded in the preloaded run"; }
    calls=$(bench_stats_calls "$log" p2p)
    [ -n "$calls" ] && [ "$calls" -gt 0 ] 2>/dev/null \
        || { cat "$log" >&2; die "$mpi: no nonzero '[sluice] p2p' count in SLUICE_STATS output"; }
    echo "   $mpi: sluice intercepted $calls p2p calls (SLUICE_STATS=1 check run)"
done

RAW=$OUT/raw.csv
echo "mpi,config,block,metric,trial,value" >"$RAW"
read -r load0 _ </proc/loadavg
start=$(date +%s)

# run_one MPI CONFIG BLOCK: one p2p process run and one call process run, appended to raw.csv
run_one() {
    local mpi=$1 cfg=$2 blk=$3 want=0 log
    [ "$cfg" = sluice ] && want=1
    for kind in p2p call fcall; do
        log=$OUT/last-run.log
        if [ "$kind" = p2p ]; then
            launch "$mpi" 2 "$cfg" p2p "$TRIALS" "$LAT_ITERS" "$BW_WINDOWS" "$WINDOW" >"$log" 2>&1 \
                || { cat "$log" >&2; die "$mpi/$cfg: p2p run failed"; }
        elif [ "$kind" = fcall ]; then
            bench_launch "$mpi" 1 "$cfg" "$OUT/overhead_f-$mpi" "$TRIALS" "$CALLS" >"$log" 2>&1 \
                || { cat "$log" >&2; die "$mpi/$cfg: Fortran call run failed"; }
        else
            launch "$mpi" 1 "$cfg" call "$TRIALS" "$CALLS" >"$log" 2>&1 \
                || { cat "$log" >&2; die "$mpi/$cfg: call run failed"; }
        fi
        grep -q "^shim $want\$" "$log" || { cat "$log" >&2; die "$mpi/$cfg: expected 'shim $want'"; }
        awk -v m="$mpi" -v c="$cfg" -v b="$blk" '
            $1 == "lat" || $1 == "bw" { print m "," c "," b "," $1 "," $2 "," $3; n++ }
            $1 == "call"              { print m "," c "," b "," $2 "," $3 "," $4; n++ }
            END { if (n == 0) exit 1 }' "$log" >>"$RAW" || { cat "$log" >&2; die "$mpi/$cfg: no results"; }
    done
}

echo "== $BLOCKS interleaved blocks x $TRIALS trials per configuration"
for ((blk = 0; blk < BLOCKS; blk++)); do
    if ((blk % 2 == 0)); then order=(bare sluice); else order=(sluice bare); fi
    for mpi in openmpi mpich; do
        for cfg in "${order[@]}"; do run_one "$mpi" "$cfg" "$blk"; done
    done
    echo "   block $((blk + 1))/$BLOCKS done ($(($(date +%s) - start)) s)"
done
read -r load1 _ </proc/loadavg
rm -f "$OUT/last-run.log"

{
    bench_meta_common "$load0" "$load1"
    cat <<META
blocks=$BLOCKS
trials_per_block=$TRIALS
lat_iters=$LAT_ITERS
bw_windows=$BW_WINDOWS
window=$WINDOW
calls=$CALLS
META
} >"$OUT/meta.txt"

"$PY" "$SCRIPT_DIR/plot_overhead.py" "$OUT" --noise-pct "$NOISE_PCT" --target-ns "$TARGET_NS" \
    || die "plot_overhead.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
