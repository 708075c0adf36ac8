#!/usr/bin/env bash
# scripts/device-run.sh - runs on the device machine (x86-64, Ubuntu-based, NVIDIA GPU, no
# network, no MPI, no Rust), from the repository root, what scripts/device-check.sh prepare
# staged into .device/:
#
#   1. facts        machine facts (nvidia-smi, nproc, lscpu, uname, glibc, CUDA libraries, ...)
#   2. install      unpacks .device/debs/*.deb with dpkg -x into a private root (/opt/mpiroot,
#                   never /) and points PATH, LD_LIBRARY_PATH and OPAL_PREFIX at it
#   3. selftest     ompi_info paths; `hostname` on 2 ranks under both launchers; the 2-rank hello
#                   (.device/selftest/<mpi>/mpi_hello) with the matching libsluice.so preloaded and
#                   SLUICE_STATS=1: passes if the ranks agree, sluice printed its report and every
#                   MPI library the ranks and their launcher mapped came from the private root
#   4. gpu-*        every program in .device/bin/<mpi>/ on 2 ranks under its MPI with libsluice.so
#                   preloaded, or the jobs listed in scripts/device-tests.txt when that file has any
#   5. rwcp-wN      sluice-rwcp-bench --samples 11 --workers N for N = 1 2 4 8 16
#
# Usage (remote-run tool: command `bash scripts/device-run.sh`, carry [".device"]):
#   bash scripts/device-run.sh
#   DEVICE_RUN_DRY=1 OUT=/tmp/devout bash scripts/device-run.sh     (dry run on the build machine:
#       private root in a temp dir, GPU steps skipped, rwcp with workers 1 2 and --samples 3;
#       scripts/device-check.sh dry-run does the same with the host's MPI files hidden)
#
# Environment: OUT (default ./device-out), DEVICE_RUN_DRY (0), DEVICE_MPIROOT (/opt/mpiroot; a
# temp dir in dry runs), DEVICE_RUN_BUDGET (seconds for all steps, default 420), DEVICE_RWCP_WORKERS,
# DEVICE_RWCP_SAMPLES (DEVICE_RWCP_WORKERS=none skips the rwcp steps), DEVICE_TESTS (the job
# list, default scripts/device-tests.txt), DEVICE_JOB_CAP (seconds one GPU job may run, default
# 120), DEVICE_SOAK_SECONDS (run the type-pair soak for that
# long after the GPU jobs, or what the budget leaves; DEVICE_SOAK_JOBS copies, DEVICE_SOAK_SEED,
# DEVICE_SOAK_CHUNK pairs per launch), DEVICE_MEMCHECK=1 (every GPU job's ranks run under
# compute-sanitizer --tool memcheck, which fails the job on any error; start no MPS daemon for
# it: the sanitizer does not serve MPS clients), DEVICE_RUN_DRY_GPU=1 (run the GPU steps in a dry run too; without a GPU the
# programs print SKIP), DEVICE_RUN_FORCE_FALLBACK=1 (use .device/debs/fallback even for sonames
# the system has).
#
# Never stops at a failed step: each step's exit code and seconds go to $OUT/summary.txt;
# everything printed goes to $OUT/device.log (step results also to stdout); all other outputs
# (facts, rwcp tables and CSVs, per-job outputs, loaded-library lists) go into
# $OUT/results.tar.gz, rewritten after every step so that a killed run still leaves results.
# $OUT holds only those three files. Exit code: 0 if every step passed, else 1.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEV=$ROOT/.device
DRY=${DEVICE_RUN_DRY:-0}
BUDGET=${DEVICE_RUN_BUDGET:-420}
RWCP_RESERVE=150 # seconds of the budget the GPU jobs leave to the rwcp steps
[ "${DEVICE_RWCP_WORKERS:-}" = none ] && RWCP_RESERVE=0
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/device.log
SUMMARY=$OUT/summary.txt
TARBALL=$OUT/results.tar.gz
TMPBASE=$(mktemp -d "${TMPDIR:-/tmp}/device-run.XXXXXX") || exit 1
WORK=$TMPBASE/results
mkdir -p "$WORK"
if [ "$DRY" = 1 ]; then
    MPIROOT=${DEVICE_MPIROOT:-$TMPBASE/mpiroot}
    DEVICE_RWCP_WORKERS=${DEVICE_RWCP_WORKERS:-1 2}
    DEVICE_RWCP_SAMPLES=${DEVICE_RWCP_SAMPLES:-3}
else
    MPIROOT=${DEVICE_MPIROOT:-/opt/mpiroot}
    DEVICE_RWCP_WORKERS=${DEVICE_RWCP_WORKERS:-1 2 4 8 16}
    DEVICE_RWCP_SAMPLES=${DEVICE_RWCP_SAMPLES:-11}
fi
U=$MPIROOT/usr
LIBDIR=$U/lib/x86_64-linux-gnu
MPIS=(openmpi mpich)
T0=$SECONDS
DEADLINE=$((T0 + BUDGET))
PHASE_END=$DEADLINE
FAILED=0
CHILD=

exec 3>&1 >"$LOG" 2>&1
printf '# %-30s %8s %6s\n' step exit_code seconds >"$SUMMARY"

say() {
    echo "$*"
    echo "$*" >&3
}

# tmo CAP CMD...: CMD with a timeout of CAP seconds, or less where the step phase ends sooner.
# Run in the background and waited for, so that a TERM to this script is handled at once.
tmo() {
    local cap=$1 left rc
    shift
    left=$((PHASE_END - SECONDS))
    ((left < cap)) && cap=$left
    if ((cap < 3)); then
        echo "not run (time budget spent): $*"
        return 124
    fi
    timeout -k 5 "$cap" "$@" </dev/null &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    CHILD=
    return $rc
}

record() { # record NAME RC SECONDS
    printf '%-32s %8s %6d\n' "$1" "$2" "$3" >>"$SUMMARY"
    say "   $1: exit $2, $3 s"
    case $2 in 0 | skipped-dry) ;; *) FAILED=$((FAILED + 1)) ;; esac
}

checkpoint() {
    cp -f "$SUMMARY" "$WORK/summary.txt"
    tar -czf "$TMPBASE/results.tar.gz" -C "$TMPBASE" results && cp -f "$TMPBASE/results.tar.gz" "$TARBALL.part" &&
        mv -f "$TARBALL.part" "$TARBALL"
}

# step NAME CMD...: runs CMD (a function, in this shell) and records its exit code and seconds.
step() {
    local name=$1 t0=$SECONDS rc
    shift
    say "== $name ($((SECONDS - T0)) s into the run)"
    echo "----- $(date -u +%T)"
    if ((PHASE_END - SECONDS < 5)); then
        echo "skipped: time budget spent"
        rc=skipped-budget
    else
        "$@"
        rc=$?
    fi
    record "$name" "$rc" $((SECONDS - t0))
    checkpoint
}

finish() {
    local why=${1:-}
    [ -n "$why" ] && record "$why" 143 0
    cp -f "$LOG" "$WORK/device.log" 2>/dev/null
    checkpoint
    rm -f "$TARBALL.part"
    say "== done in $((SECONDS - T0)) s: $FAILED failed step(s); results in $OUT (summary.txt, device.log, results.tar.gz)"
    cat "$SUMMARY" >&3
}

on_signal() {
    [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null
    finish interrupted
    rm -rf "$TMPBASE"
    exit 143
}
trap on_signal TERM INT HUP

# ---- 1. facts ------------------------------------------------------------------------------------

fact() { # fact CMDLINE: runs it with bash, output into the facts file and the log
    echo "\$ $1"
    tmo 30 bash -c "$1" 2>&1
    echo
}

facts() {
    local f=$WORK/facts.txt
    {
        echo "dry run: $DRY; private root: $MPIROOT; budget: $BUDGET s"
        fact 'date -u; uname -a'
        fact 'cat /etc/os-release'
        fact 'getconf GNU_LIBC_VERSION; ldd --version | head -n1'
        fact 'nproc; lscpu | head -20'
        fact 'free -m; df -h /dev/shm /tmp . 2>&1'
        fact 'ulimit -a'
        fact 'grep -E "^(Cap|Seccomp)" /proc/self/status; cat /proc/sys/kernel/yama/ptrace_scope 2>&1'
        fact 'ldconfig -p | grep -E "libcuda|nvrtc|libnvidia-ml" || echo "no libcuda/nvrtc in the ldconfig cache"'
        fact 'ls -d /usr/local/cuda* 2>&1; command -v nvcc && nvcc --version | tail -n2'
        # shellcheck disable=SC2016 # expanded by fact's bash
        fact 'for t in dpkg dpkg-deb tar gzip ssh rsh python3 timeout; do printf "%s: %s\n" "$t" "$(command -v "$t" || echo -)"; done'
        fact 'ls /sys/class/infiniband /dev/infiniband 2>&1; cat /proc/loadavg'
        if [ "$DRY" = 1 ]; then
            echo "nvidia-smi: skipped (dry run)"
        else
            fact 'nvidia-smi'
            fact 'nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current,clocks.max.sm --format=csv'
            fact 'nvidia-smi topo -m'
        fi
        [ -f "$DEV/manifest.txt" ] && { echo "\$ head .device/manifest.txt"; head -n 5 "$DEV/manifest.txt"; }
    } >"$f" 2>&1
    cat "$f"
    [ -d "$DEV/debs" ] && [ -d "$DEV/lib" ] && return 0
    { echo "no .device/ staging: run scripts/device-check.sh prepare first"; return 1; }
}

# ---- 2. install -----------------------------------------------------------------------------------

# unpack DEB DIR: dpkg -x, or without dpkg-deb a reader of the ar archive in shell + GNU tar.
unpack() {
    local deb=$1 dest=$2 size total off=8 hdr name flag
    if command -v dpkg-deb >/dev/null && [ -z "${DEVICE_RUN_NO_DPKG:-}" ]; then
        dpkg -x "$deb" "$dest"
        return
    fi
    total=$(stat -c %s "$deb")
    while ((off + 60 <= total)); do
        hdr=$(tail -c +$((off + 1)) "$deb" | head -c 60)
        name=${hdr:0:16}
        name=${name%% *}
        name=${name%/}
        size=${hdr:48:10}
        size=${size%% *}
        if [[ $name == data.tar* ]]; then
            case $name in *.xz) flag=-J ;; *.gz) flag=-z ;; *.zst) flag=--zstd ;; *.bz2) flag=-j ;; *) flag= ;; esac
            tail -c +$((off + 61)) "$deb" | head -c "$size" | tar -x ${flag:+"$flag"} -C "$dest"
            return
        fi
        off=$((off + 60 + size + size % 2))
    done
    echo "no data.tar member in $deb"
    return 1
}

mpi_env() { # the private root's environment, for everything after the install step
    local fb=$1
    export PATH="$U/bin:$PATH"
    export LD_LIBRARY_PATH="$LIBDIR:$MPIROOT/lib/x86_64-linux-gnu:$LIBDIR/pmix2/lib$fb${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # Open MPI relocated: every path it was configured with under /usr now under $U.
    export OPAL_PREFIX=$U
    # PMIx (Debian's prefix /usr/lib/x86_64-linux-gnu/pmix2) relocated too. Its components are
    # looked for in PMIX_PKGLIBDIR (PMIX_PREFIX alone leaves them at the absolute build path).
    export PMIX_PREFIX=$LIBDIR/pmix2 PMIX_EXEC_PREFIX=$LIBDIR/pmix2 PMIX_LIBDIR=$LIBDIR/pmix2/lib
    export PMIX_PKGLIBDIR=$LIBDIR/pmix2/lib/pmix PMIX_DATADIR=$LIBDIR/pmix2/share
    export PMIX_PKGDATADIR=$LIBDIR/pmix2/share/pmix PMIX_SYSCONFDIR=$LIBDIR/pmix2/share
    # Its sysconfdir is /etc/openmpi (not under the prefix): use the private root's copies, which
    # carry Debian's defaults (pml ^ucx, btl ^uct,openib,ofi, ...), as on the build machine.
    export OMPI_MCA_mca_base_param_files=$MPIROOT/etc/openmpi/openmpi-mca-params.conf
    export OMPI_MCA_orte_default_hostfile=$MPIROOT/etc/openmpi/openmpi-default-hostfile
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    # One node only: the isolated launcher, since plm rsh aborts every job where neither ssh
    # nor rsh is installed (images without an ssh client).
    export OMPI_MCA_plm=isolated
    # Plugins that would otherwise be looked for at the build's absolute paths (host copies).
    export HWLOC_PLUGINS_PATH=$LIBDIR/hwloc FI_PROVIDER_PATH=$LIBDIR/libfabric
}

install_mpi() {
    local deb pkg dir so fb="" n=0
    ls "$DEV"/debs/*.deb >/dev/null 2>&1 || { echo "no .debs in $DEV/debs (carry .device?)"; return 1; }
    # In case the copy lost the executable bits.
    chmod -f +x "$DEV"/bin/*/* "$DEV"/selftest/*/* "$DEV"/tools/* 2>/dev/null
    rm -rf "$MPIROOT" && mkdir -p "$MPIROOT" || return 1
    for deb in "$DEV"/debs/*.deb; do
        unpack "$deb" "$MPIROOT" || { echo "unpacking $deb failed"; return 1; }
        n=$((n + 1))
    done
    echo "unpacked $n packages into $MPIROOT"
    # Fallback packages: only for sonames the system does not provide.
    for deb in "$DEV"/debs/fallback/*.deb; do
        [ -f "$deb" ] || continue
        pkg=${deb##*/}
        pkg=${pkg%%_*}
        dir=$MPIROOT/fallback/$pkg
        mkdir -p "$dir" && unpack "$deb" "$dir" || return 1
        for so in "$dir"/usr/lib/x86_64-linux-gnu/*.so.* "$dir"/lib/x86_64-linux-gnu/*.so.*; do
            [[ -e $so && ${so##*/} =~ \.so\.[0-9]+$ ]] || continue # sonames only
            if [ -n "${DEVICE_RUN_FORCE_FALLBACK:-}" ] || ! /sbin/ldconfig -p 2>/dev/null | grep -qF "${so##*/} ("; then
                echo "fallback: ${so##*/} from $pkg (not in the system's ldconfig cache or forced)"
                fb="$fb:${so%/*}"
                break
            fi
        done
        [[ $fb == *"$dir"* ]] || echo "fallback: $pkg not needed (the system has its libraries)"
    done
    mpi_env "$fb"
    {
        echo "PATH=$PATH"
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        env | grep -E '^(OPAL_|PMIX_|OMPI_|HWLOC_|FI_|UCX_)' | sort
    } | tee "$WORK/env.txt"
    local f
    for f in "$U/bin/orterun" "$U/bin/mpiexec.hydra" "$U/bin/hydra_pmi_proxy" "$LIBDIR/libmpi.so.40" "$LIBDIR/libmpich.so.12"; do
        [ -e "$f" ] || { echo "missing after unpacking: $f"; return 1; }
    done
    du -sh "$MPIROOT"
}

# ---- 3. selftest ----------------------------------------------------------------------------------

ompi_paths() {
    local f=$WORK/ompi_info.txt rc
    tmo 30 "$U/bin/ompi_info" --path all >"$f" 2>&1
    rc=$?
    tmo 30 "$U/bin/ompi_info" >>"$f" 2>&1 || rc=$?
    cat "$f"
    ((rc == 0)) || return "$rc"
    grep -E '^ *Pkglibdir: '"$LIBDIR"'/openmpi/lib/openmpi3$' "$f" >/dev/null ||
        { echo "Pkglibdir is not the private root's"; return 1; }
    local n
    n=$(grep -c ' MCA [a-z0-9_]*: ' "$f")
    echo "components listed: $n"
    ((n >= 50)) || { echo "too few components: Open MPI did not find its components in the private root"; return 1; }
}

# launch MPI NP CAP PROGRAM ARGS...: NP ranks under MPI's launcher (by its real path in the private
# root), libsluice.so of MPI preloaded in the ranks only, plus RANK_ENV (NAME=VALUE words).
RANK_ENV=()
launch() {
    local mpi=$1 np=$2 cap=$3 so kv pre=()
    shift 3
    so=$DEV/lib/$mpi/libsluice.so
    if [ "$mpi" = openmpi ]; then
        pre=(-x "LD_PRELOAD=$so")
        for kv in "${RANK_ENV[@]}"; do pre+=(-x "$kv"); done
        tmo "$cap" "$U/bin/orterun" -np "$np" "${pre[@]}" "$@"
    else
        pre=(-env LD_PRELOAD "$so")
        for kv in "${RANK_ENV[@]}"; do pre+=(-env "${kv%%=*}" "${kv#*=}"); done
        tmo "$cap" "$U/bin/mpiexec.hydra" -np "$np" "${pre[@]}" "$@"
    fi
}

mpi_hostname() {
    local mpi=$1 f rc
    f=$WORK/hostname-$mpi.txt
    local cmd=(hostname)
    command -v hostname >/dev/null || cmd=(uname -n)
    if [ "$mpi" = openmpi ]; then
        tmo 60 "$U/bin/orterun" -np 2 "${cmd[@]}" >"$f" 2>&1
    else
        tmo 60 "$U/bin/mpiexec.hydra" -np 2 "${cmd[@]}" >"$f" 2>&1
    fi
    rc=$?
    cat "$f"
    ((rc == 0)) || return $rc
    (($(grep -cxF "$(cat /proc/sys/kernel/hostname)" "$f") == 2)) || { echo "expected the host name twice"; return 1; }
}

# Checks the files the hello's ranks and launchers mapped (HELLO_MAPS): every shared library must
# be in the private root or .device/, except glibc's, the GCC runtime's, zlib's, the fallbacks',
# libcap (libudev's, from the host) and the machine's CUDA driver (libcuda: sluice loads it
# itself to look for device buffers, docs/gpu.md).
check_maps() {
    local dir=$1 libs=$1/libs.txt bad
    cat "$dir"/rank*.txt 2>/dev/null | awk '$1 == "EXE" { print "exe:", $2, $4 } $1 == "MAP" { print $3 }' |
        grep -E '^exe:|\.so' | sort -u >"$libs"
    echo "processes and libraries mapped ($(grep -vc '^exe:' "$libs") libraries, $(grep -c "^$MPIROOT/" "$libs") from the private root):"
    sed 's/^/  /' "$libs"
    grep -q '^exe: launcher' "$libs" || { echo "no launcher process was inspected"; return 1; }
    bad=$(grep -v '^exe:' "$libs" | grep -v -e "^$MPIROOT/" -e "^$DEV/" |
        grep -vE '/(ld-linux-x86-64\.so\.2|lib(c|m|dl|rt|pthread|resolv|util|gcc_s|stdc\+\+|z|udev|uuid|cap|cuda|nss_[a-z]+)\.so[.0-9]*|libz\.so\.1[.0-9]*)$' || true)
    if [ -n "$bad" ]; then
        echo "libraries loaded from outside the private root:"
        echo "$bad"
        return 1
    fi
    grep -E '/lib(mpi|mpich)\.so' "$libs" | sed 's/^/MPI library in use: /'
    grep -qE "^$MPIROOT/.*/lib(mpi\.so\.40|mpich\.so\.12)" "$libs" || { echo "libmpi/libmpich not mapped from the private root"; return 1; }
}

hello() {
    local mpi=$1 dir rc
    dir=$WORK/hello-$mpi
    mkdir -p "$dir/maps"
    RANK_ENV=(SLUICE_STATS=1 "HELLO_MAPS=$dir/maps" "HELLO_ROOT=$MPIROOT")
    launch "$mpi" 2 90 "$DEV/selftest/$mpi/mpi_hello" >"$dir/output.txt" 2>&1
    rc=$?
    RANK_ENV=()
    cat "$dir/output.txt"
    ((rc == 0)) || return $rc
    grep -q '^HELLO OK 2 ranks' "$dir/output.txt" || { echo "no 'HELLO OK 2 ranks'"; return 1; }
    grep -qF "[sluice] statistics: 2 ranks, built for $mpi" "$dir/output.txt" ||
        { echo "sluice's SLUICE_STATS report missing: libsluice.so not loaded?"; return 1; }
    echo "sluice loaded: $(grep -F '[sluice] statistics:' "$dir/output.txt")"
    mv "$dir/maps"/rank*.txt "$dir/" && rmdir "$dir/maps"
    check_maps "$dir"
}

# The hello again where the first try failed, with the MPI's single-copy path off (containers
# often forbid process_vm_readv, CMA, between sibling processes) and, for MPICH, UCX on shared
# memory only (visible but unusable InfiniBand devices). Kept for the later steps if it passes.
hello_retry() {
    local mpi=$1 rc
    if [ "$mpi" = openmpi ]; then
        export OMPI_MCA_btl_vader_single_copy_mechanism=none
    else
        export UCX_TLS=self,posix,sysv # shared memory without CMA, no network transports
    fi
    hello "$mpi"
    rc=$?
    if ((rc != 0)); then
        unset OMPI_MCA_btl_vader_single_copy_mechanism UCX_TLS
        echo "retry failed too; single-copy setting dropped again"
    else
        echo "kept for the later $mpi steps: $(env | grep -E '^(OMPI_MCA_btl_vader_single_copy_mechanism|UCX_TLS)=')"
    fi
    return $rc
}

# ---- 4. GPU jobs ----------------------------------------------------------------------------------

# gpu_job MPI NP [NAME=VALUE ...] PROGRAM ARGS...: PROGRAM is a name in .device/bin/MPI/ or a path.
gpu_job() {
    local mpi=$1 np=$2 prog f rc
    shift 2
    RANK_ENV=()
    while (($#)) && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
        RANK_ENV+=("$1")
        shift
    done
    prog=$1
    shift
    [[ $prog == */* ]] || prog=$DEV/bin/$mpi/$prog
    f=$WORK/gpu/$mpi-${prog##*/}-np$np-$(date +%s%N).txt
    mkdir -p "$WORK/gpu"
    [ -x "$prog" ] || { echo "no program $prog"; return 1; }
    echo "job: $mpi np=$np env=(${RANK_ENV[*]}) $prog $*" >"$f"
    local wrap=()
    if [ "${DEVICE_MEMCHECK:-0}" = 1 ]; then
        local cs
        cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n1)
        [ -n "$cs" ] || { echo "no compute-sanitizer on this machine" | tee -a "$f"; return 1; }
        wrap=("$cs" --tool memcheck --error-exitcode 9)
    fi
    launch "$mpi" "$np" "${DEVICE_JOB_CAP:-120}" "${wrap[@]}" "$prog" "$@" >>"$f" 2>&1
    rc=$?
    RANK_ENV=()
    cat "$f"
    # On the device machine a program that found no usable GPU (it prints SKIP) has failed.
    if ((rc == 0)) && [ "$DRY" != 1 ] && grep -q '^SKIP' "$f"; then
        echo "the program found no usable GPU"
        rc=3
    fi
    return $rc
}

gpu_jobs() {
    local list=${DEVICE_TESTS:-$ROOT/scripts/device-tests.txt} line lines=() mpi np words prog jobs=0 p
    [ -f "$list" ] && mapfile -t lines < <(grep -vE '^[[:space:]]*(#|$)' "$list")
    if ((${#lines[@]})); then
        say "   GPU jobs from ${list#"$ROOT"/}"
        for line in "${lines[@]}"; do
            read -r -a words <<<"$line"
            mpi=${words[0]}
            np=${words[1]:-2}
            prog=
            for p in "${words[@]:2}"; do
                [[ -z $prog && $p =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] && continue # rank env
                prog+="${prog:+_}${p##*/}"
            done
            jobs=$((jobs + 1))
            step "gpu$jobs-$mpi-np$np-${prog:0:40}" gpu_job "${words[@]}"
        done
    else
        for mpi in "${MPIS[@]}"; do
            for p in "$DEV/bin/$mpi"/*; do
                [ -x "$p" ] || continue
                step "gpu-$mpi-${p##*/}" gpu_job "$mpi" 2 "${p##*/}"
                jobs=$((jobs + 1))
            done
        done
    fi
    ((jobs)) || say "   no GPU programs in .device/bin/ and no jobs in scripts/device-tests.txt"
}

# ---- 4b. type-pair soak ---------------------------------------------------------------------------

# soak SECONDS: DEVICE_SOAK_JOBS (default 6) copies of scripts/soak-typepairs.sh at once, seeds
# DEVICE_SOAK_SEED (default 6000) + 1000 k, each with --time SECONDS --keep-going, on the
# private root's launchers (wrappers named as the build machine's) and the staged generator and
# libraries: the many cores of this machine run the issue-21 soak several times as fast as the
# build machine's two. Passes when every copy ends with "0 differences".
soak() {
    local secs=$1 jobs=${DEVICE_SOAK_JOBS:-6} seed0=${DEVICE_SOAK_SEED:-6000} k d=$WORK/soak tree mpi rc=0 pids=()
    tree=$TMPBASE/soak-tree
    mkdir -p "$d" "$tree/bin" || return 1
    for mpi in "${MPIS[@]}"; do
        [ -x "$DEV/soak/$mpi/p2p_typepairs" ] || { echo "no $DEV/soak/$mpi/p2p_typepairs"; return 1; }
        mkdir -p "$tree/target/$mpi/release" "$tree/target/$mpi/typepairs"
        ln -sf "$DEV/lib/$mpi/libsluice.so" "$tree/target/$mpi/release/libsluice.so"
        # The script compiles the generator with mpicc.<mpi> -o target/<mpi>/typepairs/...: the
        # staged binary is copied there by this stand-in instead.
        printf '#!/bin/sh\nexec cp -f "%s" "%s"\n' "$DEV/soak/$mpi/p2p_typepairs" "$tree/target/$mpi/typepairs/p2p_typepairs" >"$tree/bin/mpicc.$mpi"
    done
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$U/bin/orterun" >"$tree/bin/mpirun.openmpi"
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$U/bin/mpiexec.hydra" >"$tree/bin/mpiexec.mpich"
    chmod +x "$tree/bin"/*
    for ((k = 0; k < jobs; k++)); do
        # --time stops new rounds (a seed at 2 and 4 ranks on both MPIs) after 60% of the time,
        # so the last round ends within it and each copy prints its totals.
        (SOAK_ROOT=$tree PATH="$tree/bin:$PATH" tmo "$secs" bash "$ROOT/scripts/soak-typepairs.sh" --keep-going \
            --seed $((seed0 + 1000 * k)) --time $((secs * 6 / 10)) --chunk "${DEVICE_SOAK_CHUNK:-400}" >"$d/soak-$k.log" 2>&1) &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do wait "${pids[$k]}" || rc=1; done
    for ((k = 0; k < jobs; k++)); do
        echo "copy $k (seed $((seed0 + 1000 * k))): $(tail -n 1 "$d/soak-$k.log")"
        echo "  last seed done: $(grep -E '^seed [0-9]+ done' "$d/soak-$k.log" | tail -n 1)"
        grep -E '^DIFFERENCE' -A12 "$d/soak-$k.log" | head -40
        tail -n 1 "$d/soak-$k.log" | grep -qE ' 0 differences' || rc=1
    done
    return $rc
}

# ---- 5. RW-CP scaling -----------------------------------------------------------------------------

rwcp() {
    local n=$1 dir=$WORK/rwcp-w$1 rc
    mkdir -p "$dir"
    echo "load before: $(cat /proc/loadavg)" >"$dir/meta.txt"
    tmo 120 "$DEV/tools/sluice-rwcp-bench" --out "$dir" --samples "$DEVICE_RWCP_SAMPLES" --workers "$n" >"$dir/stdout.md" 2>"$dir/stderr.txt"
    rc=$?
    echo "load after: $(cat /proc/loadavg); exit $rc; samples $DEVICE_RWCP_SAMPLES; workers $n" >>"$dir/meta.txt"
    cat "$dir/stdout.md" "$dir/stderr.txt"
    return $rc
}

# ---- main -----------------------------------------------------------------------------------------

say "device-run: $(date -u +%FT%TZ) on $(hostname 2>/dev/null || cat /proc/sys/kernel/hostname); dry=$DRY; OUT=$OUT; private root $MPIROOT"
step facts facts
step install install_mpi
if grep -qE '^install +0 ' "$SUMMARY"; then
    step ompi-info ompi_paths
    for mpi in "${MPIS[@]}"; do step "hostname-$mpi" mpi_hostname "$mpi"; done
    for mpi in "${MPIS[@]}"; do
        step "hello-$mpi" hello "$mpi"
        grep -qE "^hello-$mpi +0 " "$SUMMARY" || step "hello-$mpi-nocma" hello_retry "$mpi"
    done
    if [ "$DRY" = 1 ] && [ -z "${DEVICE_RUN_DRY_GPU:-}" ]; then
        record gpu-jobs skipped-dry 0
    else
        PHASE_END=$((DEADLINE - RWCP_RESERVE))
        gpu_jobs
        PHASE_END=$DEADLINE
    fi
    # The soak takes what the budget has left, less the rwcp reserve and time to finish.
    if [ "${DEVICE_SOAK_SECONDS:-0}" != 0 ]; then
        left=$((DEADLINE - RWCP_RESERVE - SECONDS - 60))
        secs=$DEVICE_SOAK_SECONDS
        ((secs > left)) && secs=$left
        if ((secs >= 30)); then step soak-typepairs soak "$secs"; else record soak-typepairs skipped-budget 0; fi
    fi
else
    say "   install failed: MPI steps skipped"
fi
# The benchmark only needs libmpi.so.40 to load (no MPI call): private root or not.
if [ "$DEVICE_RWCP_WORKERS" != none ]; then
    for n in $DEVICE_RWCP_WORKERS; do step "rwcp-w$n" rwcp "$n"; done
fi
finish
rm -rf "$TMPBASE" # the dry run's private root included
((FAILED == 0))
