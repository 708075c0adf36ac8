#!/usr/bin/env bash
# Soaks the MPI_THREAD_MULTIPLE stress program under sluice: runs it RUNS times (default 1000)
# per MPI and per configuration, one MPI job at a time, 2 ranks. A configuration stops at its
# first failure (a non-zero exit, no "OK" line, a line logged by sluice at error level, or a
# hang past SOAK_TIMEOUT s) and keeps that run's output; the next configuration then starts.
#
# Usage: scripts/soak-threads.sh [RUNS]
# Environment:
#   SOAK_MPIS      MPIs to soak (default "openmpi mpich")
#   SOAK_CONFIGS   configurations (default "default min min-noshm"):
#                    default     sluice's defaults (messages of 300 and 600 KiB are pipelined)
#                    min         SLUICE_PIPELINE_THRESHOLD=128 CHUNK=64 DEPTH=2
#                    min-noshm   the same with SLUICE_SHM_ARENA=off (chunks through the MPI)
#                    nocache     SLUICE_STAGING_CACHE=0
#                    thread      SLUICE_PROGRESS_THREAD=1 (a progress thread in every rank)
#                    min-thread  min, with the progress thread
#   SOAK_PROGRAM   tests/c program to run (default p2p_thread_stress; p2p_conf_threads works too)
#   SOAK_ROUNDS    STRESS_ROUNDS for p2p_thread_stress (default: the program's, 38 per thread)
#   SOAK_OUT       where failing runs' output goes (default target/soak)
#   SOAK_TIMEOUT   seconds one run may take (default 120)
#   SLUICE_SO_<mpi> the libsluice.so to preload (default target/<mpi>/release/libsluice.so,
#                  built with scripts/build.sh when missing)
# Prints one line per MPI and configuration, "<mpi> <config>: N runs, M failures", then the
# totals; exits 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${1:-1000}
mpis=${SOAK_MPIS:-openmpi mpich}
configs=${SOAK_CONFIGS:-default min min-noshm}
prog=${SOAK_PROGRAM:-p2p_thread_stress}
out=${SOAK_OUT:-$root/target/soak}
limit=${SOAK_TIMEOUT:-120}
mkdir -p "$out"

declare -A so_of
for mpi in $mpis; do so_var=SLUICE_SO_$mpi; so_of[$mpi]=${!so_var:-$root/target/$mpi/release/libsluice.so}; done
# Every SLUICE_* variable goes, SLUICE_SO_* included (read above): the launchers pass the
# environment on, and sluice warns about variables it does not know.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^SLUICE_' || true)
unset LD_PRELOAD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Oversubscribed ranks must yield the core instead of spinning (2-core machines).
export OMPI_MCA_mpi_yield_when_idle=1

config_env() { # config -> "NAME=VALUE ..."
    case $1 in
    default) echo "" ;;
    min) echo "SLUICE_PIPELINE_THRESHOLD=128 SLUICE_PIPELINE_CHUNK=64 SLUICE_PIPELINE_DEPTH=2" ;;
    min-noshm) echo "SLUICE_PIPELINE_THRESHOLD=128 SLUICE_PIPELINE_CHUNK=64 SLUICE_PIPELINE_DEPTH=2 SLUICE_SHM_ARENA=off" ;;
    nocache) echo "SLUICE_STAGING_CACHE=0" ;;
    thread) echo "SLUICE_PROGRESS_THREAD=1" ;;
    min-thread) echo "SLUICE_PIPELINE_THRESHOLD=128 SLUICE_PIPELINE_CHUNK=64 SLUICE_PIPELINE_DEPTH=2 SLUICE_PROGRESS_THREAD=1" ;;
    *) echo "soak-threads: unknown configuration $1" >&2; exit 2 ;;
    esac
}

total_runs=0 total_fail=0
summary=()
for mpi in $mpis; do
    so=${so_of[$mpi]}
    [ -f "$so" ] || scripts/build.sh "$mpi"
    exe=$out/${prog}_$mpi
    "mpicc.$mpi" -O1 -Wall -Wno-stringop-overflow -pthread -I tests/c "tests/c/$prog.c" -o "$exe"
    for cfg in $configs; do
        env_list=$(config_env "$cfg")
        args=()
        for kv in $env_list LD_PRELOAD=$so ${SOAK_ROUNDS:+STRESS_ROUNDS=$SOAK_ROUNDS}; do
            if [ "$mpi" = openmpi ]; then args+=(-x "$kv"); else args+=(-env "${kv%%=*}" "${kv#*=}"); fi
        done
        if [ "$mpi" = openmpi ]; then
            launch=(mpirun.openmpi --oversubscribe -np 2 "${args[@]}")
        else
            launch=(mpiexec.mpich -np 2 "${args[@]}")
        fi
        log=$out/last-$mpi-$cfg.log
        n=0 fail=0 t0=$SECONDS
        while [ "$n" -lt "$runs" ]; do
            n=$((n + 1))
            rc=0
            timeout "$limit" "${launch[@]}" "$exe" >"$log" 2>&1 || rc=$?
            if [ "$rc" -ne 0 ] || ! grep -q "^$prog: OK (" "$log" || grep -q '^\[sluice[^]]*\] error: ' "$log"; then
                fail=1
                keep=$out/fail-$mpi-$cfg-$(date +%Y%m%d-%H%M%S).log
                { echo "# soak-threads: $mpi $cfg run $n: exit $rc; env: $env_list"; cat "$log"; } >"$keep"
                echo "soak-threads: $mpi $cfg: run $n failed (exit $rc), output kept in $keep" >&2
                grep -m 20 -E 'check failed|FATAL|error' "$log" >&2 || true
                break
            fi
            if [ $((n % 50)) -eq 0 ]; then
                echo "soak-threads: $mpi $cfg: $n runs, $((SECONDS - t0)) s" >&2
            fi
        done
        line="$mpi $cfg: $n runs, $fail failures ($((SECONDS - t0)) s)"
        echo "$line"
        summary+=("$line")
        total_runs=$((total_runs + n))
        total_fail=$((total_fail + fail))
    done
done
echo "soak-threads: $prog"
printf '  %s\n' "${summary[@]}"
echo "$total_runs runs, $total_fail failures"
[ "$total_fail" -eq 0 ]
