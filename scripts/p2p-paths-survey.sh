#!/usr/bin/env bash
# Why did the automatic point-to-point path choose what it chose? One job per case and size of
# bench/p2p_paths.c (so no contest sees another type's messages), with SLUICE_LOG=plan: per job
# the ratio of the automatic path to the best forced one and its interval, then each rank's
# decision line shortened to the pairing it chose and every pairing's median GB/s (samples).
# scripts/bench-p2p-paths.sh is the benchmark; this is its diagnosis.
#
#   scripts/p2p-paths-survey.sh [OUTDIR]      (default bench-out/p2p-paths-survey)
#
# SURVEY_MPIS (openmpi mpich), SURVEY_CASES (all), SURVEY_SIZES (65536,1048576,16777216),
# SURVEY_ROUNDS (min,max rounds: 9,21). Writes MPI.txt (the raw logs) and prints the summary.
set -euo pipefail
BENCH=p2p-paths-survey
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUT=${1:-$ROOT/bench-out/p2p-paths-survey}
CASES=${SURVEY_CASES:-vec-1,vec-2,vec-8,vec-64,vec-256,face-x,face-y,face-z,lu-5,milc,wrf,fft-t,lammps,specfem,struct-mix}
SIZES=${SURVEY_SIZES:-65536,1048576,16777216}
IFS=, read -r MIN MAX <<<"${SURVEY_ROUNDS:-9,21}"
read -r -a MPIS <<<"${SURVEY_MPIS:-openmpi mpich}"
bench_require_mpis "${MPIS[@]}"
bench_clean_env
bench_build_sluice "${MPIS[@]}"
mkdir -p "$OUT"
for mpi in "${MPIS[@]}"; do
    bench_mpicc "$mpi" "$OUT/p2p_paths-$mpi" "$ROOT/bench/p2p_paths.c" -lm
    : >"$OUT/$mpi.txt"
    echo "== $mpi: case bytes ratio [lo, hi] best; then per rank: chosen pairing (MM MS SM SS GB/s)"
    for c in ${CASES//,/ }; do
        for s in ${SIZES//,/ }; do
            log=$(SLUICE_LOG=plan bench_launch "$mpi" 2 sluice "$OUT/p2p_paths-$mpi" -c "$c" -s "$s" -n "$MIN" -N "$MAX" 2>&1) ||
                die "$mpi $c $s: run failed: $log"
            printf '%s\n' "$log" >>"$OUT/$mpi.txt"
            printf '%s\n' "$log" | awk '$1 == "path" { printf "%-10s %9s %s [%s, %s] %s\n", $2, $3, $10, $11, $12, $9 }'
            printf '%s\n' "$log" | grep 'learned from blocking sends' | sed -E \
                -e 's/^\[sluice (r[0-9]+)\].*to this node: /  \1 /' \
                -e "s/the MPI's datatype engine/MPI/; s/sluice's engine \(staged, or pipelined through the arena\)/sluice/" \
                -e "s/into the MPI's typed receive/into MPI/; s/into sluice's receive/into sluice/" \
                -e 's/ from now on(.*), learned.*by send into receive: (.*)\)$/\1: \2/' || true
        done
    done
done
