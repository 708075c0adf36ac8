#!/usr/bin/env bash
# Collectives with derived datatypes, sluice vs bare MPI, Open MPI and MPICH, interleaved in one run:
# the transpose of a distributed 2-D FFT (MPI_Alltoall with a resized column type) and the halo
# exchange of a 3-D 7-point stencil (MPI_Neighbor_alltoallw with subarray faces), each next to a
# contiguous baseline moving the same bytes.
#
#   scripts/bench-coll.sh [OUTDIR]          (or COLL_OUT=DIR; default bench-out/coll)
#   COLL_QUICK=1 scripts/bench-coll.sh      (2 reps x 5 samples: about 1.5-2 minutes when idle)
#
# bench/coll_fft.c: N x N complex doubles, N/P rows per rank, N in COLL_FFT_SIZES (2048,4096);
#   cases fft-dt (the zero-copy transpose of Hoefler & Gottlieb) and fft-contig.
# bench/coll_halo.c: (n+2)^3 doubles per rank on a periodic 3-D Cartesian grid, n in
#   COLL_HALO_SIZES (64,128,256); cases halo-dt and halo-contig.
# Both check every element of their result once before timing (a failure aborts the run).
# Each job (one benchmark, one MPI, bare or sluice, COLL_RANKS ranks) calibrates every case to
# COLL_SAMPLE_MS per sample (at least one operation; the calibration runs are the warm-up), then
# takes COLL_SAMPLES samples in passes over the cases; a sample is the slowest rank's time per
# operation. Jobs are interleaved: COLL_REPS reps, each running every (benchmark, MPI) pair bare and
# with sluice back to back, the order alternating (ABBA...). The noise controls are bench-p2p.sh's:
# samples during which a rank had less than COLL_MIN_SHARE of its core are repeated
# (COLL_RETRIES) and left out, and each pair waits (COLL_QUIET_*) for other work to stop.
# COLL_RANKS (default 2) may list several counts ("2 4"); above the machine's cores the ranks
# share cores, every sample is kept (no CPU-share filter) and the numbers measure the scheduler.
# Writes openmpi.csv, mpich.csv (every sample), cases.csv (bytes, operations per sample),
# pairing.csv (which block landed where in the halo exchange, bare vs sluice), quiet.csv,
# meta.txt, summary.csv, verdict.csv, coll.md, coll.png and the benchmark binaries into OUTDIR;
# a full run also copies the plot to COLL_IMG (default docs/img/coll.png; empty: no copy).
# Exits non-zero on any failure.
set -euo pipefail

BENCH=coll
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${COLL_OUT:-$ROOT/bench-out/coll}}
QUICK=${COLL_QUICK:-0}
if [ "$QUICK" = 1 ]; then DEF_REPS=2 DEF_SAMPLES=5 DEF_IMG=""; else DEF_REPS=5 DEF_SAMPLES=9 DEF_IMG=$ROOT/docs/img/coll.png; fi
REPS=${COLL_REPS:-$DEF_REPS}
SAMPLES=${COLL_SAMPLES:-$DEF_SAMPLES}
SAMPLE_MS=${COLL_SAMPLE_MS:-30}
FFT_SIZES=${COLL_FFT_SIZES:-2048,4096}
HALO_SIZES=${COLL_HALO_SIZES:-64,128,256}
RANKS_SPEC=${COLL_RANKS:-2}
MPIS_SPEC=${COLL_MPIS:-"openmpi mpich"}
IMG=${COLL_IMG-$DEF_IMG}
PY=${COLL_PYTHON:-/usr/bin/python3}
RUN_TIMEOUT=${COLL_RUN_TIMEOUT:-300}
MIN_SHARE=${COLL_MIN_SHARE:-0.95}  # a sample is clean when every rank ran >= this share of it
RETRIES=${COLL_RETRIES:-2}         # an unclean sample is repeated up to this many times
QUIET_CORES=${COLL_QUIET_CORES:-0.3}
QUIET_MAX=${COLL_QUIET_MAX:-20}
QUIET_TOTAL=${COLL_QUIET_TOTAL:-$([ "$QUICK" = 1 ] && echo 30 || echo 120)}
read -r -a MPIS <<<"$MPIS_SPEC"
read -r -a RANKS <<<"$RANKS_SPEC"
BENCHES=(fft halo)

bench_require_mpis "${MPIS[@]}"
bench_require_python "$PY" COLL_PYTHON
((REPS >= 1 && SAMPLES >= 1)) || die "COLL_REPS and COLL_SAMPLES must be >= 1"
bench_clean_env
# Busy-poll while waiting, as bench-p2p.sh (docs/benchmarks.md): Open MPI's default for 2 ranks
# on 2 cores, made explicit; MPICH's ch4:ucx busy-polls anyway.
export OMPI_MCA_mpi_yield_when_idle=0

bench_build_sluice "${MPIS[@]}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for mpi in "${MPIS[@]}"; do
    for b in "${BENCHES[@]}"; do
        bench_mpicc "$mpi" "$OUT/coll_$b-$mpi" "$ROOT/bench/coll_$b.c" "$ROOT/bench/coll_common.c" -lm
    done
done

sizes_of() { if [ "$1" = fft ]; then echo "$FFT_SIZES"; else echo "$HALO_SIZES"; fi; }

echo "== checking that the preloaded runs load sluice (SLUICE_STATS=1, datatype cases, one sample)"
engine_meta=""
for mpi in "${MPIS[@]}"; do
    for b in "${BENCHES[@]}"; do
        log=$OUT/check-$mpi-$b.log
        bench_launch "$mpi" "${RANKS[0]}" stats "$OUT/coll_$b-$mpi" -s "$(sizes_of "$b")" -k dt -n 1 -m 1 -r 0 \
            >"$log" 2>&1 \
            || { cat "$log" >&2; die "$mpi: $b stats run failed"; }
        grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded in the preloaded run"; }
        engine=$(bench_stats_calls "$log" ddt-engine)
        echo "   $mpi $b: sluice loaded; calls it counted: $(bench_stats_nonzero "$log")"
        [ "${engine:-0}" -gt 0 ] 2>/dev/null ||
            echo "   $mpi $b: NOTE: no ddt-engine operation: the collectives passed through sluice untouched"
        engine_meta+="engine_ops_${mpi}_$b=${engine:-0}"$'\n'
    done
done

for mpi in "${MPIS[@]}"; do echo "mpi,config,ranks,rep,case,size,sample,seconds,cpu_share" >"$OUT/$mpi.csv"; done
echo "mpi,config,ranks,rep,case,size,bytes,iters" >"$OUT/cases.csv"
echo "mpi,config,ranks,case,size,pairing" >"$OUT/pairing.csv"
echo "rep,bench,ranks,mpi,waited_s,busy_cores" >"$OUT/quiet.csv"
QUIET_CSV=$OUT/quiet.csv
read -r load0 _ </proc/loadavg
start=$(date +%s)

# run_one MPI CONFIG RANKS REP BENCH: one job, appended to MPI.csv, cases.csv (and pairing.csv)
run_one() {
    local mpi=$1 cfg=$2 np=$3 rep=$4 b=$5 want=0 log=$OUT/last-run.log share=$MIN_SHARE retries=$RETRIES
    [ "$cfg" = sluice ] && want=1
    ((np > $(nproc))) && share=0 retries=0 # ranks share cores: no sample could be clean
    bench_launch "$mpi" "$np" "$cfg" "$OUT/coll_$b-$mpi" -s "$(sizes_of "$b")" -n "$SAMPLES" -m "$SAMPLE_MS" \
        -r "$retries" -q "$share" >"$log" 2>&1 || {
        cp "$log" "$OUT/failed-$mpi-$cfg-$b-np$np-rep$rep.log"
        cat "$log" >&2
        die "$mpi/$cfg $b, $np ranks, rep $rep: run failed (log in $OUT/failed-$mpi-$cfg-$b-np$np-rep$rep.log)"
    }
    grep -q "^shim $want\$" "$log" || { cat "$log" >&2; die "$mpi/$cfg: expected 'shim $want'"; }
    local ncases nverified
    ncases=$(grep -c '^case ' "$log" || true)
    nverified=$(grep -c '^verify .* ok' "$log" || true)
    ((ncases > 0 && ncases == nverified)) || { cat "$log" >&2; die "$mpi/$cfg $b: $nverified of $ncases cases verified"; }
    awk -v m="$mpi" -v c="$cfg" -v p="$np" -v r="$rep" '
        $1 == "sample" { print m "," c "," p "," r "," $2 "," $3 "," $4 "," $5 "," $6; n++ }
        END { if (n == 0) exit 1 }' "$log" >>"$OUT/$mpi.csv" || { cat "$log" >&2; die "$mpi/$cfg $b: no samples"; }
    awk -v m="$mpi" -v c="$cfg" -v p="$np" -v r="$rep" '
        $1 == "case" { print m "," c "," p "," r "," $2 "," $3 "," $4 "," $5 }' "$log" >>"$OUT/cases.csv"
    if [ "$rep" = 0 ]; then
        awk -v m="$mpi" -v c="$cfg" -v p="$np" '
            $1 == "verify" { pr = "-"; for (i = 5; i <= NF; i++) if ($i ~ /^pairing=/) pr = substr($i, 9)
                             print m "," c "," p "," $2 "," $3 ",\"" pr "\"" }' "$log" >>"$OUT/pairing.csv"
    fi
}

njobs=$((REPS * ${#BENCHES[@]} * ${#RANKS[@]} * ${#MPIS[@]} * 2))
echo "== $REPS reps x ${#BENCHES[@]} benchmarks x ${#RANKS[@]} rank counts x ${#MPIS[@]} MPIs x (bare, sluice)" \
    "= $njobs jobs, $SAMPLES samples per case and job, ${SAMPLE_MS} ms per sample"
job=0
for ((rep = 0; rep < REPS; rep++)); do
    k=0
    for np in "${RANKS[@]}"; do
        for b in "${BENCHES[@]}"; do
            if (((rep + k) % 2 == 0)); then order=(bare sluice); else order=(sluice bare); fi
            k=$((k + 1))
            for mpi in "${MPIS[@]}"; do
                wait_quiet "$rep,$b,$np,$mpi"
                for cfg in "${order[@]}"; do
                    run_one "$mpi" "$cfg" "$np" "$rep" "$b"
                    job=$((job + 1))
                done
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
quick=$QUICK
reps=$REPS
samples=$SAMPLES
sample_ms=$SAMPLE_MS
min_share=$MIN_SHARE
retries=$RETRIES
quiet_cores=$QUIET_CORES
quiet_max=$QUIET_MAX
quiet_total=$QUIET_TOTAL
fft_sizes=$FFT_SIZES
halo_sizes=$HALO_SIZES
ranks=$RANKS_SPEC
mpis=$MPIS_SPEC
META
    printf '%s' "$engine_meta"
} >"$OUT/meta.txt"

"$PY" "$SCRIPT_DIR/plot_coll.py" "$OUT" --min-share "$MIN_SHARE" || die "plot_coll.py failed"
if [ -n "$IMG" ]; then
    cp "$OUT/coll.png" "$IMG" && echo "copied the plot to $IMG"
fi
echo "== total $(($(date +%s) - start)) s; results in $OUT"
