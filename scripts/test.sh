#!/usr/bin/env bash
# Installs what is missing, builds both flavors, and runs every test: unit tests, sluice-info,
# and the C/Fortran applications under mpirun (Open MPI) and mpiexec (MPICH) at 2 and 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Oversubscribed ranks must yield the core instead of spinning (2-core machines).
export OMPI_MCA_mpi_yield_when_idle=1
for f in openmpi mpich; do
  echo "=== $f ==="
  # The cdylib must be built explicitly: `cargo test` only rebuilds the rlib.
  scripts/build.sh "$f"
  SLUICE_MPI=$f cargo test --release --locked --target-dir "target/$f" -- --test-threads=2
done
echo "test.sh: all tests passed for openmpi and mpich"
