#!/usr/bin/env bash
# Builds one libsluice.so per MPI ABI:
#   target/openmpi/release/libsluice.so   (Open MPI)
#   target/mpich/release/libsluice.so     (MPICH)
# Usage: scripts/build.sh [openmpi|mpich ...]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
flavors=("$@")
((${#flavors[@]})) || flavors=(openmpi mpich)
for f in "${flavors[@]}"; do
  SLUICE_MPI=$f cargo build --release --locked --target-dir "target/$f"
  echo "built target/$f/release/libsluice.so"
done
