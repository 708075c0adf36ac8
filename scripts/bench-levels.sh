#!/usr/bin/env bash
# The multi-level runtime (include/sluice_levels.h, docs/levels.md; issue 26) on this host, for
# both MPIs (the examples built with each MPI's wrapper against its own libsluice.so):
#   - examples: examples/levels/{saxpy,sgemv,sgemm,conv2d}.c on every composition of LEVELS_COMPS
#     (default smp:2, disk/smp:2@16M, smp:2/smp:1, cluster/smp:1 and cluster; "cluster..." on
#     LEVELS_RANKS = 2 ranks): time of the COMPUTE phase, GFLOP/s and how busy each level pair's
#     channel was (the examples' one-line report), LEVELS_RUNS runs each, interleaved;
#   - sgemm: issue 26's "SGEMM on the SMP runtime reaches >= 80% of the same blocked kernel called
#     directly": SLUICE_LEVELS=smp:1 ./sgemm N against ./sgemm N direct (one thread each), plus
#     smp:2 for information, LEVELS_PAIRS rounds of the three, the order rotated each round; the
#     ratio time(direct) / time(runtime) per round;
#   - out of core: "the disk channel busy >= 80% of the run for SAXPY and SGEMV": both on
#     disk/smp:2@LEVELS_OOC_BOUND with data many times the bound, LEVELS_OOC_RUNS runs. The files
#     (SLUICE_LEVELS_DIR = LEVELS_DIR, default $TMPDIR or /tmp) are unlinked at creation and fit
#     in memory: the "disk" is the page cache;
#   - overhead: bench/levels_overhead.c on smp:1, smp:2, disk and cluster (2 ranks): an empty
#     task call + wait, a transfer list of 1 run of 8 bytes and of 64 runs x 8 bytes (get and put;
#     cluster: every piece remote), transfer-list creation of 1 and 1024 runs, per call; and the
#     cost of a 1-run transfer as a runtime's transfers accumulate ("aged").
#
#   scripts/bench-levels.sh [OUTDIR]     (or LEVELS_OUT=DIR; default bench-out/levels)
#
# Medians with 95% intervals (order statistics, scripts/plotlib.py) over the runs. Ranks are not
# bound (--bind-to none: a level's children are threads of the rank); Open MPI yields while idle
# (OMPI_MCA_mpi_yield_when_idle=1: ranks and worker threads share the cores), MPICH polls.
# Before each round the script waits (at most LEVELS_QUIET_MAX s, LEVELS_QUIET_TOTAL s in all)
# for other work to use < LEVELS_QUIET_CORES cores. A failed or timed-out run (LEVELS_TIMEOUT s)
# is recorded in failures.txt and left out. LEVELS_NO_BUILD=1 uses target/<mpi>/release as it
# is (no cargo). Writes examples-<mpi>.txt, ooc-<mpi>.txt, sgemm-<mpi>.txt,
# overhead-<mpi>-<composition>.txt (raw), runs.csv, levels.csv, levels.md, levels.png, meta.txt
# (needs /usr/bin/python3 with matplotlib, LEVELS_PYTHON).
set -euo pipefail

BENCH=levels
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${LEVELS_OUT:-$ROOT/bench-out/levels}}
read -r -a MPIS <<<"${LEVELS_MPIS:-openmpi mpich}"
PY=${LEVELS_PYTHON:-/usr/bin/python3}
RUNS=${LEVELS_RUNS:-5}
OOC_RUNS=${LEVELS_OOC_RUNS:-7}
PAIRS=${LEVELS_PAIRS:-11}
RANKS=${LEVELS_RANKS:-2}
read -r -a COMPS <<<"${LEVELS_COMPS:-smp:2 disk/smp:2@16M smp:2/smp:1 cluster/smp:1 cluster}"
# Example sizes for the table: every array larger than the disk composition's bound.
SAXPY=${LEVELS_SAXPY:-32M}
SGEMV=${LEVELS_SGEMV:-"8K 4K"}
SGEMM=${LEVELS_SGEMM:-1536}
CONV2D=${LEVELS_CONV2D:-"2K 2K"}
# Out of core: 512 MiB of data for each (32x the bound).
OOC_BOUND=${LEVELS_OOC_BOUND:-16M}
OOC_SAXPY=${LEVELS_OOC_SAXPY:-64M}
OOC_SGEMV=${LEVELS_OOC_SGEMV:-"16K 8K"}
OVH_ARGS=${LEVELS_OVH_ARGS:-"11 500 100 200 10000"} # trials, task calls, xfers, creates, aged
read -r -a OVH_COMPS <<<"${LEVELS_OVH_COMPS:-smp:1 smp:2 disk cluster}"
CFLAGS=${LEVELS_CFLAGS:-"-O3 -march=native"}
DISK_DIR=${LEVELS_DIR:-${TMPDIR:-/tmp}}
RUN_TIMEOUT=${LEVELS_TIMEOUT:-180}
QUIET_CORES=${LEVELS_QUIET_CORES:-0.5} QUIET_MAX=${LEVELS_QUIET_MAX:-10} QUIET_TOTAL=${LEVELS_QUIET_TOTAL:-90}

bench_require_mpis "${MPIS[@]}"
bench_require_python "$PY" LEVELS_PYTHON
"$PY" -c 'import matplotlib' 2>/dev/null || die "$PY cannot import matplotlib (LEVELS_PYTHON)"
bench_clean_env
export OMPI_MCA_mpi_yield_when_idle=1
[ -d "$DISK_DIR" ] || die "$DISK_DIR is not a directory (LEVELS_DIR)"
# The largest out-of-core run keeps 512 MiB of files (plus the bound) at once.
avail_kb=$(df -Pk "$DISK_DIR" | awk 'NR == 2 { print $4 }')
((avail_kb > 2 * 1024 * 1024)) || die "less than 2 GiB free in $DISK_DIR (LEVELS_DIR)"
if [ "${LEVELS_NO_BUILD:-0}" = 1 ]; then
    for mpi in "${MPIS[@]}"; do [ -f "$(bench_sluice_so "$mpi")" ] || die "$(bench_sluice_so "$mpi") missing (LEVELS_NO_BUILD=1)"; done
else
    bench_build_sluice "${MPIS[@]}"
fi
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/examples-*.txt "$OUT"/ooc-*.txt "$OUT"/sgemm-*.txt "$OUT"/overhead-*.txt "$OUT/failures.txt" "$OUT/quiet.csv"
QUIET_CSV=$OUT/quiet.csv
for mpi in "${MPIS[@]}"; do
    lib=$ROOT/target/$mpi/release
    for ex in saxpy sgemv sgemm conv2d; do
        # shellcheck disable=SC2086 # CFLAGS: several flags
        bench_mpicc "$mpi" "$OUT/bin/$ex-$mpi" $CFLAGS -I"$ROOT/include" "$ROOT/examples/levels/$ex.c" \
            -L"$lib" -lsluice -lm -Wl,-rpath,"$lib"
    done
    bench_mpicc "$mpi" "$OUT/bin/levels_overhead-$mpi" -I"$ROOT/include" "$ROOT/bench/levels_overhead.c" \
        -L"$lib" -lsluice -Wl,-rpath,"$lib"
done

# launch MPI SPEC BIN ARGS...: SPEC "" for none; "cluster..." on RANKS ranks, else one.
launch() {
    local mpi=$1 spec=$2 bin=$3 np=1 env=()
    shift 3
    [[ $spec == cluster* ]] && np=$RANKS
    if [ "$mpi" = openmpi ]; then
        [ -n "$spec" ] && env=(-x "SLUICE_LEVELS=$spec")
        timeout "$RUN_TIMEOUT" mpirun.openmpi --oversubscribe --bind-to none -np "$np" -x "SLUICE_LEVELS_DIR=$DISK_DIR" \
            -x OMPI_MCA_mpi_yield_when_idle "${env[@]}" "$bin" "$@"
    else
        [ -n "$spec" ] && env=(-env SLUICE_LEVELS "$spec")
        timeout "$RUN_TIMEOUT" mpiexec.mpich -np "$np" -bind-to none -env SLUICE_LEVELS_DIR "$DISK_DIR" "${env[@]}" "$bin" "$@"
    fi
}

# run_ex MPI FILE TAG SPEC EX ARGS...: one example run; its result line goes to FILE as
# "TAG <line>", a failure (exit status, no OK line, timeout) to failures.txt.
run_ex() {
    local mpi=$1 file=$2 tag=$3 spec=$4 ex=$5 log=$OUT/last-run.log rc=0
    shift 5
    launch "$mpi" "$spec" "$OUT/bin/$ex-$mpi" "$@" >"$log" 2>&1 || rc=$?
    if ((rc == 0)) && grep -q "^$ex: OK " "$log"; then
        echo "$tag $(grep "^$ex: OK " "$log")" >>"$file"
    else
        {
            echo "== $mpi $ex $* SLUICE_LEVELS=$spec ($tag): exit status $rc$( ((rc == 124)) && echo ' (timeout)')"
            tail -n 20 "$log"
        } >>"$OUT/failures.txt"
        echo "bench-levels: $mpi $ex $* on '$spec' failed (status $rc), see failures.txt" >&2
    fi
}

lib_stamp() { local mpi; for mpi in "${MPIS[@]}"; do echo "$mpi:$(date -u -r "$(bench_sluice_so "$mpi")" +%Y-%m-%dT%H:%M:%SZ)"; done; }
libs0=$(lib_stamp)
read -r load0 _ </proc/loadavg
start=$(date +%s)

# 1. The examples on every composition.
for run in $(seq 1 "$RUNS"); do
    for mpi in "${MPIS[@]}"; do
        wait_quiet "examples-$mpi-$run"
        for spec in "${COMPS[@]}"; do
            # shellcheck disable=SC2086 # sizes: one or two arguments
            {
                run_ex "$mpi" "$OUT/examples-$mpi.txt" "$run" "$spec" saxpy $SAXPY
                run_ex "$mpi" "$OUT/examples-$mpi.txt" "$run" "$spec" sgemv $SGEMV
                run_ex "$mpi" "$OUT/examples-$mpi.txt" "$run" "$spec" sgemm $SGEMM
                run_ex "$mpi" "$OUT/examples-$mpi.txt" "$run" "$spec" conv2d $CONV2D
            }
        done
    done
    echo "examples: run $run of $RUNS done ($(($(date +%s) - start)) s)"
done

# 2. SGEMM on the runtime against the kernel called directly, paired rounds, order rotated.
specs=(smp:1 direct smp:2)
for p in $(seq 1 "$PAIRS"); do
    for mpi in "${MPIS[@]}"; do
        wait_quiet "sgemm-$mpi-$p"
        for i in 0 1 2; do
            s=${specs[$(((i + p) % 3))]}
            if [ "$s" = direct ]; then
                run_ex "$mpi" "$OUT/sgemm-$mpi.txt" "$p" "" sgemm "$SGEMM" direct
            else
                run_ex "$mpi" "$OUT/sgemm-$mpi.txt" "$p" "$s" sgemm "$SGEMM"
            fi
        done
    done
done
echo "sgemm: $PAIRS rounds done ($(($(date +%s) - start)) s)"

# 3. Out of core: SAXPY and SGEMV with data many times the bound.
for run in $(seq 1 "$OOC_RUNS"); do
    for mpi in "${MPIS[@]}"; do
        wait_quiet "ooc-$mpi-$run"
        run_ex "$mpi" "$OUT/ooc-$mpi.txt" "$run" "disk/smp:2@$OOC_BOUND" saxpy "$OOC_SAXPY"
        # shellcheck disable=SC2086
        run_ex "$mpi" "$OUT/ooc-$mpi.txt" "$run" "disk/smp:2@$OOC_BOUND" sgemv $OOC_SGEMV
    done
done
echo "out of core: $OOC_RUNS runs done ($(($(date +%s) - start)) s)"

# 4. The runtime's own overhead.
for mpi in "${MPIS[@]}"; do
    for spec in "${OVH_COMPS[@]}"; do
        wait_quiet "overhead-$mpi-$spec"
        f=$OUT/overhead-$mpi-$(tr ':/@' '___' <<<"$spec").txt
        rc=0
        # shellcheck disable=SC2086 # OVH_ARGS: five numbers
        launch "$mpi" "$spec" "$OUT/bin/levels_overhead-$mpi" $OVH_ARGS >"$f" 2>"$OUT/last-run.log" || rc=$?
        if ((rc != 0)) || ! grep -q '^levels_overhead: OK' "$f"; then
            { echo "== $mpi levels_overhead SLUICE_LEVELS=$spec: exit status $rc"; tail -n 20 "$OUT/last-run.log"; } >>"$OUT/failures.txt"
            echo "bench-levels: $mpi levels_overhead on '$spec' failed (status $rc)" >&2
        fi
    done
done
echo "overhead done ($(($(date +%s) - start)) s)"
rm -f "$OUT/last-run.log"

read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    echo "seconds=$(($(date +%s) - start))"
    echo "waited_s=$waited_total"
    echo "mpis=${MPIS[*]}"
    echo "runs=$RUNS"
    echo "ooc_runs=$OOC_RUNS"
    echo "pairs=$PAIRS"
    echo "ranks=$RANKS"
    echo "comps=${COMPS[*]}"
    echo "sizes=saxpy $SAXPY; sgemv $SGEMV; sgemm $SGEMM; conv2d $CONV2D"
    echo "ooc=disk/smp:2@$OOC_BOUND; saxpy $OOC_SAXPY; sgemv $OOC_SGEMV"
    echo "overhead_args=$OVH_ARGS"
    echo "cflags=$CFLAGS"
    echo "disk_dir=$DISK_DIR ($(df -PT "$DISK_DIR" | awk 'NR == 2 { print $2 }'); files unlinked at creation)"
    echo "mem_total_gib=$(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)"
    echo "built=$([ "${LEVELS_NO_BUILD:-0}" = 1 ] && echo "no (LEVELS_NO_BUILD=1)" || echo yes)"
    echo "libs=$(echo $libs0)" # the libraries' modification times when the runs started
    [ "$(lib_stamp)" = "$libs0" ] || echo "libs_changed_during_run=$(echo $(lib_stamp))"
    nfail=0
    [ -f "$OUT/failures.txt" ] && nfail=$(grep -c '^== ' "$OUT/failures.txt")
    echo "failures=$nfail"
} >"$OUT/meta.txt"
"$PY" "$ROOT/scripts/plot_levels.py" "$OUT"
echo "wrote $OUT/levels.md, levels.csv and levels.png"
