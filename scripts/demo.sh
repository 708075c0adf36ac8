#!/usr/bin/env bash
# Installs what is missing, builds sluice for both MPIs, and shows what sluice is for: a halo
# exchange and an FFT transpose with derived datatypes (bench/coll_halo.c, bench/coll_fft.c),
# the bare MPI and sluice timed pair by pair in one process (the A/B mode of the collective
# benchmarks), with the speed-up and the plan sluice chose, on Open MPI and MPICH; then a small
# application (tests/c/families.c: every intercepted call family) under each launcher with
# statistics on, and sluice_copy's out-of-core transpose.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/demo
mkdir -p "$out"
for f in openmpi mpich; do
  mpicc.$f -O2 -Wno-stringop-overflow -Itests/c tests/c/families.c -o "$out/families_$f"
done
so_o=$PWD/target/openmpi/release/libsluice.so
so_m=$PWD/target/mpich/release/libsluice.so

# The speed-up lines: "abci CASE SIZE PAIRS MEDIAN LO HI" (bare time / sluice time).
speedups() {
  awk -v mpi="$1" '$1 == "abci" {
      what = ($2 ~ /^halo/ ? "halo exchange, n=" $3 "^3 per rank" : "FFT transpose, " $3 "x" $3)
      kind = ($2 ~ /-dt$/ ? "derived datatypes" : "contiguous buffers (control)")
      printf "   %-8s %-34s %-30s sluice %.2fx as fast as the bare MPI [95%%: %.2f, %.2f], %d pairs\n", mpi, what, kind, $5, $6, $7, $4 }'
}
echo; echo "== What sluice is for: halo exchange and transpose, bare MPI vs sluice (2 ranks, A/B in one process) =="
echo "   halo: MPI_Neighbor_alltoallw of subarray faces on a periodic 3-D grid; transpose: MPI_Alltoall of"
echo "   vector types (the FFT's global transpose). Each pair times the bare MPI (PMPI_*) and sluice (MPI_*)."
for f in openmpi mpich; do
  for b in coll_halo coll_fft; do
    mpicc.$f -O2 -Ibench bench/$b.c bench/coll_common.c -o "$out/${b}_$f" -lm
  done
done
for f in openmpi mpich; do
  so=$([ $f = openmpi ] && echo "$so_o" || echo "$so_m")
  for run in "coll_halo -s 64" "coll_fft -s 512"; do
    set -- $run
    log=$out/$1_$f.log
    if [ $f = openmpi ]; then
      mpirun.openmpi --oversubscribe -np 2 -x LD_PRELOAD="$so" -x SLUICE_LOG=plan "$out/$1_$f" "$2" "$3" -A -N 40 >"$log" 2>&1
    else
      mpiexec.mpich -np 2 -env LD_PRELOAD "$so" -env SLUICE_LOG plan "$out/$1_$f" "$2" "$3" -A -N 40 >"$log" 2>&1
    fi
    speedups "$([ $f = openmpi ] && echo "Open MPI" || echo MPICH)" <"$log"
    grep -m1 '^\[sluice r0\] plan:' "$log" | sed 's/^\[sluice r0\] plan: /            plan: /'
  done
done

echo; echo "== sluice-info (Open MPI build) =="
target/openmpi/release/sluice-info --config || true

echo; echo "== Open MPI: mpirun -np 4 -x LD_PRELOAD=$so_o -x SLUICE_STATS=1 $out/families_openmpi =="
mpirun.openmpi --oversubscribe -np 4 -x LD_PRELOAD="$so_o" -x SLUICE_STATS=1 -x SLUICE_LOG=info "$out/families_openmpi"

echo; echo "== MPICH: mpiexec.mpich -np 4 -env LD_PRELOAD $so_m -env SLUICE_STATS 1 $out/families_mpich =="
mpiexec.mpich -np 4 -env LD_PRELOAD "$so_m" -env SLUICE_STATS 1 -env SLUICE_LOG info "$out/families_mpich"

echo; echo "== sluice_copy: out-of-core transpose (examples/transpose.c, linked with -lsluice) =="
lib=$PWD/target/openmpi/release
mpicc.openmpi -O2 -Iinclude examples/transpose.c -L"$lib" -lsluice -Wl,-rpath,"$lib" -o "$out/transpose_openmpi"
mpirun.openmpi --oversubscribe -np 1 "$out/transpose_openmpi" 2048 2048
