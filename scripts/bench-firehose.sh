#!/usr/bin/env bash
# The registration manager (docs/firehose.md) against the firehose paper's baselines, Figures 3
# and 4 on this machine, for both MPIs: bench/firehose.c puts from rank 0 into rank 1 at uniform
# random places of a working set that grows past M + MAXVICTIM, with firehoses, rendezvous with
# unpin and rendezvous without unpin alternating in rounds (the same places for each in a round):
#   - latency: 8-byte puts (Figure 3), mean microseconds per put and wait;
#   - bandwidth: 64 KiB puts (Figure 4), MB/s;
# with the firehose hit rate per working set and rank 1's pinned amount sampled all along (never
# above M + MAXVICTIM). Plus sluice-pin-bench: a cache hit's cost and the munmap hook's.
#   scripts/bench-firehose.sh [OUTDIR]     (or FH_OUT=DIR; default bench-out/firehose)
# FH_M / FH_V (bytes; default 32 MiB / 8 MiB), FH_WS (MiB list), FH_ROUNDS (5), FH_OPS (300,
# 64 KiB: a third), FH_MPIS ("openmpi mpich"). Writes <mpi>.txt, micro.txt, firehose.csv,
# firehose.md, firehose.png and meta.txt.
set -euo pipefail

BENCH=firehose
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=${1:-${FH_OUT:-$ROOT/bench-out/firehose}}
M=${FH_M:-33554432}
V=${FH_V:-8388608}
WS=${FH_WS:-"2,4,8,16,24,32,40,48,64,80,120,160"}
ROUNDS=${FH_ROUNDS:-5}
OPS=${FH_OPS:-300}
MPIS=${FH_MPIS:-"openmpi mpich"}
PY=${FH_PYTHON:-/usr/bin/python3}

# Two ranks with the shim and the firehose limits (Open MPI forwards only what -x names).
launch() {
    local mpi=$1 so
    shift
    so=$(bench_sluice_so "$mpi")
    if [ "$mpi" = openmpi ]; then
        timeout "$RUN_TIMEOUT" mpirun.openmpi --oversubscribe --bind-to none -np 2 -x "LD_PRELOAD=$so" \
            -x "SLUICE_FIREHOSE_M=$M" -x "SLUICE_FIREHOSE_MAXVICTIM=$V" -x OMPI_MCA_osc_rdma_max_attach "$@"
    else
        timeout "$RUN_TIMEOUT" mpiexec.mpich -np 2 -bind-to none -env LD_PRELOAD "$so" \
            -env SLUICE_FIREHOSE_M "$M" -env SLUICE_FIREHOSE_MAXVICTIM "$V" "$@"
    fi
}

bench_require_python "$PY" FH_PYTHON
bench_clean_env
read -r load0 _ </proc/loadavg
start=$(date +%s)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for mpi in $MPIS; do
    bench_build_sluice "$mpi"
    lib=$ROOT/target/$mpi/release
    bench_mpicc "$mpi" "$OUT/firehose-$mpi" -I"$ROOT/include" "$ROOT/bench/firehose.c" -L"$lib" -lsluice -Wl,-rpath,"$lib"
    : >"$OUT/$mpi.txt"
    # The baseline without unpin attaches every page it ever touched: Open MPI's RMA component
    # must allow that many regions (sluice raises the limit only to what firehoses need).
    export OMPI_MCA_osc_rdma_max_attach=1048576
    for size in 8 65536; do
        ops=$OPS
        ((size > 8)) && ops=$((OPS / 3))
        launch "$mpi" "$OUT/firehose-$mpi" "$size" "$WS" "$ROUNDS" "$ops" >>"$OUT/$mpi.txt" 2>"$OUT/$mpi-$size.err" ||
            { cat "$OUT/$mpi-$size.err" >&2; die "$mpi: firehose $size failed"; }
    done
done
"$ROOT/target/openmpi/release/sluice-pin-bench" 9 20000 >"$OUT/micro.txt"
read -r load1 _ </proc/loadavg
{
    bench_meta_common "$load0" "$load1"
    echo "seconds=$(($(date +%s) - start))"
    echo "m=$M"
    echo "maxvictim=$V"
    echo "rounds=$ROUNDS"
    echo "ops=$OPS"
} >"$OUT/meta.txt"
"$PY" "$ROOT/scripts/plot_firehose.py" "$OUT"
echo "wrote $OUT/firehose.md and $OUT/firehose.png"
