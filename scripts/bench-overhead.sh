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
# Trials are interleaved: OVERHEAD_BLOCKS blocks, each running every (MPI, bare|sluice) pair with
# OVERHEAD_TRIALS trials per process; the bare/sluice order alternates between blocks (ABBA...).
# Writes raw.csv, summary.csv, overhead.md, overhead.png (plot needs /usr/bin/python3 with
# matplotlib) and the two benchmark binaries into OUTDIR. Exits non-zero on any failure.
set -euo pipefail

die() { echo "bench-overhead: error: $*" >&2; exit 1; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel 2>/dev/null || (cd "$SCRIPT_DIR/.." && pwd))
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

for tool in mpicc.openmpi mpirun.openmpi mpicc.mpich mpiexec.mpich timeout; do
    command -v "$tool" >/dev/null || die "$tool not found (Open MPI and MPICH must both be installed)"
done
[ -x "$PY" ] || die "$PY not found (set OVERHEAD_PYTHON to a python3 with matplotlib)"

# The measured configuration must be sluice's default one: no user SLUICE_* settings, no preload.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^SLUICE_' || true)
unset LD_PRELOAD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

SO_openmpi=$ROOT/target/openmpi/release/libsluice.so
SO_mpich=$ROOT/target/mpich/release/libsluice.so
if [ ! -f "$SO_openmpi" ]; then
    echo "== building $SO_openmpi"
    (cd "$ROOT" && cargo build --release --target-dir target/openmpi) || die "cargo build (openmpi) failed"
fi
if [ ! -f "$SO_mpich" ]; then
    echo "== building $SO_mpich"
    (cd "$ROOT" && SLUICE_MPI=mpich cargo build --release --target-dir target/mpich) || die "cargo build (mpich) failed"
fi
[ -f "$SO_openmpi" ] && [ -f "$SO_mpich" ] || die "libsluice.so missing after build"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN_openmpi=$OUT/overhead-openmpi
BIN_mpich=$OUT/overhead-mpich
# -Wno-stringop-overflow: MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which GCC 12 flags.
CFLAGS="-O2 -Wall -Wno-stringop-overflow"
mpicc.openmpi $CFLAGS -o "$BIN_openmpi" "$ROOT/bench/overhead.c" || die "mpicc.openmpi failed"
mpicc.mpich $CFLAGS -o "$BIN_mpich" "$ROOT/bench/overhead.c" || die "mpicc.mpich failed"

# launch MPI NP CONFIG ARGS...  (CONFIG: bare | sluice | stats)
launch() {
    local mpi=$1 np=$2 cfg=$3; shift 3
    local so bin pre=()
    if [ "$mpi" = openmpi ]; then so=$SO_openmpi; bin=$BIN_openmpi; else so=$SO_mpich; bin=$BIN_mpich; fi
    if [ "$mpi" = openmpi ]; then
        [ "$cfg" != bare ] && pre=(-x "LD_PRELOAD=$so")
        [ "$cfg" = stats ] && pre+=(-x SLUICE_STATS=1)
        timeout "$RUN_TIMEOUT" mpirun.openmpi --oversubscribe --bind-to core -np "$np" "${pre[@]}" "$bin" "$@"
    else
        [ "$cfg" != bare ] && pre=(-env LD_PRELOAD "$so")
        [ "$cfg" = stats ] && pre+=(-env SLUICE_STATS 1)
        timeout "$RUN_TIMEOUT" mpiexec.mpich -np "$np" -bind-to core "${pre[@]}" "$bin" "$@"
    fi
}

echo "== checking that the preloaded runs go through sluice"
for mpi in openmpi mpich; do
    log=$OUT/check-$mpi.log
    launch "$mpi" 2 stats p2p 1 1000 1 4 >"$log" 2>&1 || { cat "$log" >&2; die "$mpi: stats run failed"; }
    grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded in the preloaded run"; }
    calls=$(awk '$1 == "[sluice]" && $2 == "p2p" { print $3 }' "$log" | head -n1)
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
    for kind in p2p call; do
        log=$OUT/last-run.log
        if [ "$kind" = p2p ]; then
            launch "$mpi" 2 "$cfg" p2p "$TRIALS" "$LAT_ITERS" "$BW_WINDOWS" "$WINDOW" >"$log" 2>&1 \
                || { cat "$log" >&2; die "$mpi/$cfg: p2p run failed"; }
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

cat >"$OUT/meta.txt" <<META
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
host_cpus=$(nproc)
loadavg_start=$load0
loadavg_end=$load1
blocks=$BLOCKS
trials_per_block=$TRIALS
lat_iters=$LAT_ITERS
bw_windows=$BW_WINDOWS
window=$WINDOW
calls=$CALLS
openmpi=$(mpirun.openmpi --version 2>/dev/null | awk 'NR == 1 {print $NF}')
mpich=$(mpichversion 2>/dev/null | awk '/Version:/ {print $NF; exit}')
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
META

"$PY" "$SCRIPT_DIR/plot_overhead.py" "$OUT" --noise-pct "$NOISE_PCT" --target-ns "$TARGET_NS" \
    || die "plot_overhead.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
