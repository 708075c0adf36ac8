# scripts/lib.sh - what the bench-*.sh scripts share. Source it (bash, set -euo pipefail) after
# setting BENCH to the script's short name (used in messages):
#
#   BENCH=coll
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# It sets SCRIPT_DIR (scripts/) and ROOT (the repository), and defines:
#   die MSG...                       print "bench-$BENCH: error: MSG" and exit 1
#   bench_clean_env                  measure sluice's default configuration: no SLUICE_* variable,
#                                    no LD_PRELOAD; lets Open MPI run as root and oversubscribe
#   bench_require_mpis MPI...        the MPIs' compiler wrappers and launchers (and timeout) exist
#   bench_require_python PY VAR      PY is executable (VAR: the variable that overrides it)
#   bench_build_sluice MPI...        builds target/MPI/release/libsluice.so, each flavor with its
#                                    own SLUICE_MPI and target dir (cargo: nothing to do when fresh)
#   bench_sluice_so MPI              path of that libsluice.so
#   bench_mpicc MPI OUT SRC...       compiles a C benchmark with MPI's wrapper
#   bench_launch MPI NP CONFIG BIN ARGS...
#                                    runs BIN on NP ranks under MPI's launcher, CONFIG bare, sluice
#                                    (libsluice.so preloaded), stats (and SLUICE_STATS=1) or
#                                    sluice-thread (and SLUICE_PROGRESS_THREAD=1); binds
#                                    ranks to cores unless NP exceeds the cores (BENCH_BIND: the
#                                    --bind-to value instead); RUN_TIMEOUT s (300);
#                                    with BENCH_CLUSTER set, across the emulated cluster's nodes
#                                    (scripts/cluster.sh up must have made them), unbound
#   bench_stats_calls LOG FAMILY     calls counted for FAMILY in a SLUICE_STATS=1 report (or "")
#   bench_stats_nonzero LOG          "family calls, ..." of every family with calls in the report
#   busy_cores                       cores used by everything on the machine over 0.5 s
#   wait_quiet LABEL                 waits until other work uses < QUIET_CORES cores, at most
#                                    QUIET_MAX s per call and QUIET_TOTAL s in all (waited_total);
#                                    appends "LABEL,waited_s,busy_cores" to QUIET_CSV if set
#   bench_meta_common LOAD0 LOAD1    the meta.txt lines every benchmark writes (date, machine,
#                                    load averages, MPI versions, commit)
#   bench_ab_begin PY VAR MPI...     the start of a paired A/B script: the checks above, the clean
#                                    environment with busy-polling, the builds, OUT made (absolute);
#                                    sets load0 and start
#   bench_ab_job MPI WHAT BIN ARGS...
#                                    one A/B job (2 ranks, libsluice.so preloaded) once the machine
#                                    is quiet; fails unless sluice was loaded and "abci" results came;
#                                    appends the output to OUT/MPI.txt (also in OUT/last-run.log)
#   bench_ab_end KEY=VALUE...        the end of a paired A/B script: OUT/meta.txt (the common lines,
#                                    seconds, waited_s and the KEY=VALUE lines given)
# shellcheck shell=bash

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel 2>/dev/null || (cd "$SCRIPT_DIR/.." && pwd))
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
waited_total=0

die() {
    echo "bench-${BENCH:-?}: error: $*" >&2
    exit 1
}

bench_clean_env() {
    local v
    while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^SLUICE_' || true)
    unset LD_PRELOAD
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}

bench_require_mpis() {
    local mpi t
    command -v timeout >/dev/null || die "timeout not found"
    for mpi in "$@"; do
        case $mpi in
        openmpi) for t in mpicc.openmpi mpirun.openmpi; do command -v $t >/dev/null || die "$t not found"; done ;;
        mpich) for t in mpicc.mpich mpiexec.mpich; do command -v $t >/dev/null || die "$t not found"; done ;;
        *) die "unknown MPI '$mpi' (openmpi, mpich)" ;;
        esac
    done
}

bench_require_python() {
    [ -x "$1" ] || die "$1 not found (set $2 to a python3 with matplotlib)"
}

bench_sluice_so() { echo "$ROOT/target/$1/release/libsluice.so"; }

bench_build_sluice() {
    local mpi
    for mpi in "$@"; do
        # One target dir per flavor: the two ABIs must never share build outputs.
        (cd "$ROOT" && SLUICE_MPI=$mpi cargo build --release --locked --target-dir "target/$mpi" --lib) \
            || die "cargo build ($mpi) failed"
        [ -f "$(bench_sluice_so "$mpi")" ] || die "$(bench_sluice_so "$mpi") missing after build"
    done
}

bench_mpicc() {
    local mpi=$1 out=$2
    shift 2
    # -Wno-stringop-overflow: MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which GCC 12 flags.
    mpicc."$mpi" -O2 -Wall -Wno-stringop-overflow -o "$out" "$@" || die "mpicc.$mpi failed for $*"
}

bench_launch() {
    local mpi=$1 np=$2 cfg=$3 bin=$4 so pre=() bind=${BENCH_BIND:-core} via=()
    shift 4
    so=$(bench_sluice_so "$mpi")
    ((np > $(nproc))) && bind=none # more ranks than cores: nothing to bind them to
    if [ -n "${BENCH_CLUSTER:-}" ]; then
        # Across the emulated cluster's nodes (scripts/cluster.sh, ranks round-robin); the nodes
        # share this machine's cores, so binding would put every node's first rank on core 0.
        via=("$ROOT/scripts/cluster.sh" run --) bind=none
    fi
    if [ "$mpi" = openmpi ]; then
        [ "$cfg" != bare ] && pre=(-x "LD_PRELOAD=$so")
        [ "$cfg" = stats ] && pre+=(-x SLUICE_STATS=1)
        [ "$cfg" = sluice-thread ] && pre+=(-x SLUICE_PROGRESS_THREAD=1)
        timeout "$RUN_TIMEOUT" "${via[@]}" mpirun.openmpi --oversubscribe --bind-to "$bind" -np "$np" "${pre[@]}" "$bin" "$@"
    else
        [ "$cfg" != bare ] && pre=(-env LD_PRELOAD "$so")
        [ "$cfg" = stats ] && pre+=(-env SLUICE_STATS 1)
        [ "$cfg" = sluice-thread ] && pre+=(-env SLUICE_PROGRESS_THREAD 1)
        timeout "$RUN_TIMEOUT" "${via[@]}" mpiexec.mpich -np "$np" -bind-to "$bind" "${pre[@]}" "$bin" "$@"
    fi
}

bench_stats_calls() {
    awk -v f="$2" '$1 == "[sluice]" && $2 == f { print $3; exit }' "$1"
}

bench_stats_nonzero() {
    awk '$1 == "[sluice]" && $2 != "statistics:" && $3 ~ /^[0-9]+$/ && $3 > 0 { s = s (s ? ", " : "") $2 " " $3 } END { print s }' "$1"
}

busy_cores() {
    local a b
    read -r -a a < <(head -n1 /proc/stat)
    sleep 0.5
    read -r -a b < <(head -n1 /proc/stat)
    awk -v u0="${a[1]}" -v n0="${a[2]}" -v s0="${a[3]}" -v i0="${a[4]}" -v w0="${a[5]}" -v q0="${a[6]}" -v o0="${a[7]}" -v t0="${a[8]}" \
        -v u1="${b[1]}" -v n1="${b[2]}" -v s1="${b[3]}" -v i1="${b[4]}" -v w1="${b[5]}" -v q1="${b[6]}" -v o1="${b[7]}" -v t1="${b[8]}" \
        -v ncpu="$(nproc)" 'BEGIN {
            busy = (u1 + n1 + s1 + q1 + o1 + t1) - (u0 + n0 + s0 + q0 + o0 + t0)
            idle = (i1 + w1) - (i0 + w0)
            printf "%.2f\n", (busy + idle > 0) ? ncpu * busy / (busy + idle) : 0 }'
}

wait_quiet() {
    local t0=$SECONDS busy
    while :; do
        busy=$(busy_cores)
        awk -v b="$busy" -v q="$QUIET_CORES" 'BEGIN { exit !(b < q) }' && break
        ((SECONDS - t0 >= QUIET_MAX || waited_total + SECONDS - t0 >= QUIET_TOTAL)) && break
        sleep 1
    done
    [ -n "${QUIET_CSV:-}" ] && echo "$1,$((SECONDS - t0)),$busy" >>"$QUIET_CSV"
    waited_total=$((waited_total + SECONDS - t0))
}

bench_meta_common() {
    cat <<META
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
host_cpus=$(nproc)
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
loadavg_start=$1
loadavg_end=$2
openmpi=$(mpirun.openmpi --version 2>/dev/null | awk 'NR == 1 {print $NF}')
mpich=$(mpichversion 2>/dev/null | awk '/Version:/ {print $NF; exit}')
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
META
}

bench_ab_begin() {
    local py=$1 var=$2
    shift 2
    bench_require_mpis "$@"
    bench_require_python "$py" "$var"
    bench_clean_env
    export OMPI_MCA_mpi_yield_when_idle=0 # busy-poll while waiting, as the separate-job scripts
    bench_build_sluice "$@"
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    read -r load0 _ </proc/loadavg
    start=$(date +%s)
}

bench_ab_job() {
    local mpi=$1 what=$2 bin=$3 log=$OUT/last-run.log
    shift 3
    wait_quiet "$mpi"
    bench_launch "$mpi" 2 sluice "$bin" "$@" >"$log" 2>&1 || { cat "$log" >&2; die "$mpi: run failed ($what)"; }
    grep -q '^shim 1$' "$log" || { cat "$log" >&2; die "$mpi: libsluice.so not loaded"; }
    grep -q '^abci ' "$log" || { cat "$log" >&2; die "$mpi: no results ($what)"; }
    cat "$log" >>"$OUT/$mpi.txt"
}

bench_ab_end() {
    local load1
    rm -f "$OUT/last-run.log"
    read -r load1 _ </proc/loadavg
    {
        bench_meta_common "$load0" "$load1"
        echo "seconds=$(($(date +%s) - start))"
        echo "waited_s=$waited_total"
        printf '%s\n' "$@"
    } >"$OUT/meta.txt"
}
