#!/usr/bin/env bash
# The transfer runtime (sluice_copy, docs/runtime.md) on this host:
#   - transpose: examples/transpose.c, a row-major file of doubles copied into column-major
#     memory, sluice_copy against the same program's by-hand way (pread of the whole file, then
#     a transposing loop), both in one run, at three sizes;
#   - priority: examples/priority.c, a copy started while eight others occupy the same
#     channels, timed under FIFO order (same priority) and with a higher priority, on a direct
#     (Memcpy) and a multi-hop (DiskRead + Memcpy) path, the others of equal size and 4x larger
#     (COPY_BACKGROUND);
#   - stages: bench/runtime/copy_stages.c, the multi-hop copy (file -> converted memory) against
#     its two stages alone (DiskRead, Memcpy) in the same run: issue 22's pipelining target
#     (>= 90% of the slowest channel), with the rank bound to one core and unbound.
#
# The runtime's channel workers are threads of the rank: bound to one core (Open MPI's default
# for 1-2 ranks) they take turns. So the rank runs unbound here (COPY_BIND, default none), and
# the stages are measured both ways.
#   scripts/bench-copy.sh [OUTDIR]     (or COPY_OUT=DIR; default bench-out/copy)
#
# COPY_RUNS (default 7) runs of each program per point, interleaved; medians and 95% intervals
# over the runs. Writes transpose.csv, priority.csv, copy.md, meta.txt and copy.png (needs
# /usr/bin/python3 with matplotlib). The library is the Open MPI build (the runtime calls no MPI).
set -euo pipefail

BENCH=copy
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${COPY_OUT:-$ROOT/bench-out/copy}}
RUNS=${COPY_RUNS:-7}
PY=${COPY_PYTHON:-/usr/bin/python3}
SIZES=${COPY_SIZES:-"1024x768 2048x2048 4096x2048"}
# Background copies' size as a multiple of the timed ninth copy's (8 MiB): 1 = nine equal
# copies (no scheduler can do better than 89% sooner there), 4 = 32 MiB bulk copies (bound 97%).
BACKGROUND=${COPY_BACKGROUND:-"1 4"}

bench_require_python "$PY" COPY_PYTHON
bench_clean_env
bench_build_sluice openmpi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
lib=$ROOT/target/openmpi/release
for ex in transpose priority; do
    bench_mpicc openmpi "$OUT/$ex" -I"$ROOT/include" "$ROOT/examples/$ex.c" -L"$lib" -lsluice -Wl,-rpath,"$lib"
done
bench_mpicc openmpi "$OUT/copy_stages" -I"$ROOT/include" "$ROOT/bench/runtime/copy_stages.c" -L"$lib" -lsluice -Wl,-rpath,"$lib"
export BENCH_BIND=${COPY_BIND:-none}
read -r load0 _ </proc/loadavg
echo "size,run,hand_ms,sluice_ms" >"$OUT/transpose.csv"
echo "path,run,fifo_ms,priority_ms,alone_ms" >"$OUT/priority.csv"
echo "bind,run,multi_ms,read_ms,convert_ms" >"$OUT/stages.csv"
for run in $(seq 1 "$RUNS"); do
    for s in $SIZES; do
        line=$(bench_launch openmpi 1 bare "$OUT/transpose" "${s%x*}" "${s#*x}" | grep '^transpose .* ms$') || die "transpose $s failed"
        hand=$(sed -E 's/.*loop\) ([0-9.]+) ms.*/\1/' <<<"$line")
        slu=$(sed -E 's/.*sluice_copy ([0-9.]+) ms.*/\1/' <<<"$line")
        echo "$s,$run,$hand,$slu" >>"$OUT/transpose.csv"
    done
    for bg in $BACKGROUND; do
        txt=$OUT/priority-bg$bg-$run.txt
        bench_launch openmpi 1 bare "$OUT/priority" 8 5 "$bg" >"$txt" || die "priority failed"
        grep -q '^priority: OK' "$txt" || die "priority: wrong data"
        label=""
        [ "$bg" = 1 ] || label=" (${bg}x background)"
        awk -v r="$run" -v l="$label" '/^direct \(/ { print "direct" l "," r "," $(NF-3) "," $(NF-2) "," $NF }
            /^multi-hop \(/ { print "multi-hop" l "," r "," $(NF-3) "," $(NF-2) "," $NF }' "$txt" >>"$OUT/priority.csv"
    done
    for b in core none; do
        BENCH_BIND=$b bench_launch openmpi 1 bare "$OUT/copy_stages" 8 11 >"$OUT/stages-$b-$run.txt" || die "copy_stages failed"
        grep -q '^stages: OK' "$OUT/stages-$b-$run.txt" || die "copy_stages: wrong data"
        sed -nE "s/^stages: .*multi-hop ([0-9.]+) ms, read alone ([0-9.]+) ms, convert alone ([0-9.]+) ms/$b,$run,\1,\2,\3/p" \
            "$OUT/stages-$b-$run.txt" >>"$OUT/stages.csv"
    done
    echo "run $run of $RUNS done"
done
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    echo "runs=$RUNS"
    echo "bind=$BENCH_BIND (stages: core and none)"
} >"$OUT/meta.txt"
"$PY" "$ROOT/scripts/plot_copy.py" "$OUT" | tee "$OUT/copy.md"
