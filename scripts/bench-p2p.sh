#!/usr/bin/env bash
# Point-to-point latency and bandwidth, contiguous and derived datatypes, Open MPI and MPICH,
# bare vs libsluice.so preloaded, interleaved in one run.
#
#   scripts/bench-p2p.sh [OUTDIR]          (or P2P_OUT=DIR; default bench-out/p2p)
#   P2P_QUICK=1 scripts/bench-p2p.sh       (fewer sizes, reps and shorter trials: about 2-3 minutes)
#
# bench/p2p.c (2 ranks, both using the same datatype: the sender packs, the receiver unpacks):
#   - latency: MPI_Send/MPI_Recv ping-pong, half round trip
#   - bandwidth: window of up to P2P_WINDOW (64) MPI_Isend / MPI_Irecv (distinct receive buffers,
#     at most P2P_CAP_MIB of them in flight), MPI_Waitall on both sides, then a 4-byte ack
# for message sizes P2P_SIZES (packed bytes) and types (P2P_GROUPS, one job per group):
#   contig (MPI_CHAR), vect:8:4, vect:2:1, vect:128:64 (MPI_Type_vector of MPI_CHAR: blocks of B
#   bytes at a stride of S bytes, count = size / B), and the suite cases face-x, lammps,
#   struct-mix of shared/bench/ddt-suite.md at their natural sizes.
# Other work on the machine (2 shared cores) descheduling a busy-polling rank spoils a trial by
# up to 1000x: every trial also reports both ranks' CPU share (thread CPU time / wall time), trials
# below P2P_MIN_SHARE are repeated (P2P_RETRIES) and left out of the statistics, and each
# bare/sluice pair waits (up to P2P_QUIET_MAX s, P2P_QUIET_TOTAL s in all) until other processes
# use < P2P_QUIET_CORES cores.
# Every job first checks the payload of every (type, size) (data bytes, gap bytes untouched,
# MPI_Get_count); the first rep of each configuration also checks every message of the window.
# Jobs are interleaved: P2P_REPS reps, each running every (group, MPI) pair bare and with sluice
# back to back, the order alternating (ABBA...), P2P_TRIALS trials per point and job.
# Writes openmpi.csv, mpich.csv (raw trials), points.csv (iterations, windows), quiet.csv, summary.csv,
# verdict.csv, p2p.md, p2p.png (plot needs /usr/bin/python3 with matplotlib), the two benchmark
# binaries and job logs of failures into OUTDIR. Exits non-zero on any failure.
set -euo pipefail

BENCH=p2p
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${P2P_OUT:-$ROOT/bench-out/p2p}}
QUICK=${P2P_QUICK:-0}
if [ "$QUICK" = 1 ]; then
    DEF_SIZES=1,4,16,64,128,256,1024,4096,16384,65536,262144,1048576,4194304,16777216
    DEF_REPS=3 DEF_TRIALS=2 DEF_TARGET_MS=10
else
    DEF_SIZES=1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,262144,1048576,4194304,16777216
    DEF_REPS=5 DEF_TRIALS=3 DEF_TARGET_MS=12
fi
SIZES=${P2P_SIZES:-$DEF_SIZES}
REPS=${P2P_REPS:-$DEF_REPS}
TRIALS=${P2P_TRIALS:-$DEF_TRIALS}
TARGET_MS=${P2P_TARGET_MS:-$DEF_TARGET_MS}
WINDOW=${P2P_WINDOW:-64}
CAP_MIB=${P2P_CAP_MIB:-64}
GROUPS_SPEC=${P2P_GROUPS:-"contig vect:8:4 vect:2:1 vect:128:64 face-x,lammps,struct-mix"}
MPIS_SPEC=${P2P_MPIS:-"openmpi mpich"}
PY=${P2P_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=${P2P_RUN_TIMEOUT:-300}
MIN_SHARE=${P2P_MIN_SHARE:-0.95}    # a trial is clean when both ranks ran >= this share of its wall time
RETRIES=${P2P_RETRIES:-2}           # an unclean trial is repeated up to this many times
QUIET_CORES=${P2P_QUIET_CORES:-0.3} # before each bare/sluice pair, wait until other work uses < this
QUIET_MAX=${P2P_QUIET_MAX:-20}      # ... but at most this many seconds per pair
QUIET_TOTAL=${P2P_QUIET_TOTAL:-$([ "$QUICK" = 1 ] && echo 45 || echo 150)}  # and this many in all
read -r -a GROUPS_ARR <<<"$GROUPS_SPEC"
read -r -a MPIS <<<"$MPIS_SPEC"

bench_require_mpis "${MPIS[@]}"
bench_require_python "$PY" P2P_PYTHON
((REPS >= 1 && TRIALS >= 1)) || die "P2P_REPS and P2P_TRIALS must be >= 1"

# The measured configuration must be sluice's default one: no user SLUICE_* settings, no preload.
bench_clean_env
# Busy-poll while waiting (Open MPI's default for 2 ranks on 2 cores, made explicit so that an
# oversubscription guess never turns it on): yielding made 1-4 KiB latency 2-4x slower and much
# noisier here (docs/benchmarks.md). MPICH's ch4:ucx busy-polls anyway.
export OMPI_MCA_mpi_yield_when_idle=0

bench_build_sluice "${MPIS[@]}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for mpi in "${MPIS[@]}"; do bench_mpicc "$mpi" "$OUT/p2p-$mpi" "$ROOT/bench/p2p.c" -lm; done

# launch MPI CONFIG ARGS...  (CONFIG: bare | sluice | stats); always 2 ranks
launch() {
    local mpi=$1 cfg=$2
    shift 2
    bench_launch "$mpi" 2 "$cfg" "$OUT/p2p-$mpi" "$@"
}

echo "== checking that the preloaded runs go through sluice"
for mpi in "${MPIS[@]}"; do
    log=$OUT/check-$mpi.log
    launch "$mpi" stats -t contig,vect:8:4 -s 128 -n 1 -m 1 -V >"$log" 2>&1 \
        || { cat "$log" >&2; die "$mpi: stats run failed"; }
    grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded in the preloaded run"; }
    calls=$(bench_stats_calls "$log" p2p)
    [ -n "$calls" ] && [ "$calls" -gt 0 ] 2>/dev/null \
        || { cat "$log" >&2; die "$mpi: no nonzero '[sluice] p2p' count in SLUICE_STATS output"; }
    echo "   $mpi: sluice intercepted $calls p2p calls (SLUICE_STATS=1 check run)"
    rm -f "$log"
done

for mpi in "${MPIS[@]}"; do echo "mpi,config,rep,type,bytes,metric,trial,value,cpu_share" >"$OUT/$mpi.csv"; done
echo "rep,group,mpi,waited_s,busy_cores" >"$OUT/quiet.csv"
QUIET_CSV=$OUT/quiet.csv
echo "mpi,config,rep,type,bytes,count,span,window,lat_iters,bw_windows" >"$OUT/points.csv"
read -r load0 _ </proc/loadavg
start=$(date +%s)

# run_one MPI CONFIG REP GROUP: one job, appended to MPI.csv and points.csv
run_one() {
    local mpi=$1 cfg=$2 rep=$3 group=$4 want=0 log=$OUT/last-run.log vflag=()
    [ "$cfg" = sluice ] && want=1
    [ "$rep" = 0 ] && vflag=(-V)
    launch "$mpi" "$cfg" -t "$group" -s "$SIZES" -n "$TRIALS" -m "$TARGET_MS" -w "$WINDOW" -c "$CAP_MIB" \
        -r "$RETRIES" -q "$MIN_SHARE" \
        "${vflag[@]}" >"$log" 2>&1 || {
        cp "$log" "$OUT/failed-$mpi-$cfg-rep$rep.log"
        cat "$log" >&2
        die "$mpi/$cfg rep $rep ($group): run failed (log in $OUT/failed-$mpi-$cfg-rep$rep.log)"
    }
    grep -q "^shim $want\$" "$log" || { cat "$log" >&2; die "$mpi/$cfg: expected 'shim $want'"; }
    grep -q '^verify .* ok' "$log" || { cat "$log" >&2; die "$mpi/$cfg: no payload check in the output"; }
    awk -v m="$mpi" -v c="$cfg" -v r="$rep" '
        $1 == "lat" || $1 == "bw" { print m "," c "," r "," $2 "," $3 "," $1 "," $4 "," $5 "," $6; n++ }
        END { if (n == 0) exit 1 }' "$log" >>"$OUT/$mpi.csv" || { cat "$log" >&2; die "$mpi/$cfg: no results"; }
    awk -v m="$mpi" -v c="$cfg" -v r="$rep" '
        $1 == "point" { print m "," c "," r "," $2 "," $3 "," $4 "," $5 "," $6 "," $7 "," $8 }' "$log" >>"$OUT/points.csv"
}

njobs=$((REPS * ${#GROUPS_ARR[@]} * ${#MPIS[@]} * 2))
echo "== $REPS reps x ${#GROUPS_ARR[@]} type groups x ${#MPIS[@]} MPIs x (bare, sluice) = $njobs jobs," \
    "$TRIALS trials per point and job, ${TARGET_MS} ms per trial"
job=0
for ((rep = 0; rep < REPS; rep++)); do
    for gi in "${!GROUPS_ARR[@]}"; do
        group=${GROUPS_ARR[$gi]}
        if (((rep + gi) % 2 == 0)); then order=(bare sluice); else order=(sluice bare); fi
        for mpi in "${MPIS[@]}"; do
            wait_quiet "$rep,${group//,/+},$mpi"
            for cfg in "${order[@]}"; do
                run_one "$mpi" "$cfg" "$rep" "$group"
                job=$((job + 1))
            done
        done
    done
    echo "   rep $((rep + 1))/$REPS done ($job/$njobs jobs, $(($(date +%s) - start)) s, of which ${waited_total} s" \
        "waiting for a quiet machine; load $(cut -d' ' -f1 /proc/loadavg))"
done
read -r load1 _ </proc/loadavg
rm -f "$OUT/last-run.log"

{
    bench_meta_common "$load0" "$load1"
    cat <<META
seconds=$(($(date +%s) - start))
waited_s=$waited_total
min_share=$MIN_SHARE
retries=$RETRIES
quiet_cores=$QUIET_CORES
quiet_max=$QUIET_MAX
quiet_total=$QUIET_TOTAL
quick=$QUICK
reps=$REPS
trials=$TRIALS
target_ms=$TARGET_MS
window=$WINDOW
cap_mib=$CAP_MIB
sizes=$SIZES
groups=$GROUPS_SPEC
mpis=$MPIS_SPEC
META
} >"$OUT/meta.txt"

"$PY" "$SCRIPT_DIR/plot_p2p.py" "$OUT" --min-share "$MIN_SHARE" || die "plot_p2p.py failed"
echo "== total $(($(date +%s) - start)) s; results in $OUT"
