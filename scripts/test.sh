#!/usr/bin/env bash
# Installs what is missing, builds both flavors, and runs every test: unit tests, sluice-info,
# and the C/Fortran applications under mpirun (Open MPI) and mpiexec (MPICH) at 2 and 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Oversubscribed ranks must yield the core instead of spinning (2-core machines).
export OMPI_MCA_mpi_yield_when_idle=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for f in openmpi mpich; do
  echo "=== $f ==="
  # The cdylib must be built explicitly: `cargo test` only rebuilds the rlib.
  scripts/build.sh "$f"
  SLUICE_MPI=$f cargo test --release --locked --target-dir "target/$f" --lib --bins --tests \
    -- --test-threads=2 2>&1 | tee -a "$log"
done
# One closing line over both flavors (every test binary prints its own `test result:` line).
passed=$(grep -o 'test result: [a-zA-Z]*\. [0-9]* passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -o '[0-9]* failed;' "$log" | awk '{s+=$1} END {print s+0}')
echo "test.sh: openmpi and mpich"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
