#!/usr/bin/env bash
# Installs what is missing, builds sluice for both MPIs, and runs a small MPI application
# (tests/c/families.c: every intercepted call family) under each launcher with sluice
# preloaded and statistics on.
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
