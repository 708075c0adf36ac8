#!/usr/bin/env bash
# scripts/device-check.sh - stages everything the GPU/benchmark run on the device machine needs
# into .device/ (ignored by git through .git/info/exclude), so that one call of the remote-run
# tool, command `bash scripts/device-run.sh` with carry [".device"], runs the GPU tests and the
# RW-CP scaling benchmark there. The device machine (x86-64, Ubuntu-based, glibc >= 2.36, CUDA
# driver, no network, no MPI, no Rust) gets binaries built here and Debian's MPI runtimes as
# .deb files, which scripts/device-run.sh unpacks into a private root (/opt/mpiroot).
#
#   scripts/device-check.sh prepare    build both libsluice.so flavors and sluice-rwcp-bench,
#                                      compile tests/c/gpu_*.c and bench/gpu/*.c (and the
#                                      selftest hello) with both MPIs' wrappers, download the
#                                      MPI runtime .debs, write .device/manifest.txt, check size
#   scripts/device-check.sh dry-run [OUT]
#                                      DEVICE_RUN_DRY=1 run of scripts/device-run.sh here, inside
#                                      a private mount namespace in which the host's copies of
#                                      every shipped package (and ssh/rsh) are hidden, so that it
#                                      only passes if the private root is self-sufficient
#                                      (OUT: default /tmp/device-dry-out)
#   scripts/device-check.sh size       the traveling size (.device + the git working tree)
#   scripts/device-check.sh command    the remote-run tool call to use
#
# Layout of .device/:
#   lib/{openmpi,mpich}/libsluice.so          debug info stripped
#   bin/{openmpi,mpich}/<name>                tests/c/gpu_*.c, bench/gpu/*.c (mpicc.<mpi> -O2)
#   selftest/{openmpi,mpich}/mpi_hello        device-run.sh's MPI/sluice check (src/mpi_hello.c)
#   soak/{openmpi,mpich}/p2p_typepairs        the type-pair generator (tests/c/p2p_typepairs.c,
#                                             -O1 as scripts/soak-typepairs.sh builds it), for
#                                             device-run.sh's DEVICE_SOAK_SECONDS step
#   tools/sluice-rwcp-bench                   the RW-CP benchmark (Open MPI flavor; no MPI calls
#                                             but links libmpi.so.40)
#   debs/*.deb                                MPI runtime packages, unpacked into the private root
#   debs/fallback/*.deb                       packages an Ubuntu base image normally has; used
#                                             there only for sonames the system lacks
#   manifest.txt                              commit, versions, package list, sizes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
DEV=$ROOT/.device
MPIS=(openmpi mpich)
MAX_MIB=60
ARCHLIB=/usr/lib/x86_64-linux-gnu
# Surely in any Ubuntu base image (glibc, the GCC runtime, zlib): never shipped.
BASE_PKGS=(libc6 libgcc-s1 libstdc++6 zlib1g)
# Normally in an Ubuntu base image too, but not guaranteed: shipped, used only where missing.
FALLBACK_PKGS=(libudev1 libuuid1)
REMOTE_CMD='bash scripts/device-run.sh'
REMOTE_CARRY='[".device"]'
REMOTE_TIMEOUT=540

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1

die() {
    echo "device-check: error: $*" >&2
    exit 1
}
note() { echo "== $*"; }

in_list() {
    local x=$1
    shift
    local y
    for y in "$@"; do [ "$x" = "$y" ] && return 0; done
    return 1
}

# Sets REPLY to the package (name without architecture) that owns a file, or to nothing. Debian 12 registers
# some libraries under /lib and others under /usr/lib (merged /usr): both spellings are tried,
# for the resolved target first (a -dev package's unversioned symlink must not count), then for
# the path as given.
declare -A PKG_CACHE=()
pkg_of() {
    local f cand out
    REPLY=
    if [ -n "${PKG_CACHE[$1]+x}" ]; then
        REPLY=${PKG_CACHE[$1]}
        return
    fi
    for f in "$(readlink -f "$1")" "$1"; do
        for cand in "$f" "${f#/usr}" "/usr$f"; do
            out=$(dpkg -S "$cand" 2>/dev/null | grep -v '^diversion' | head -n1 || true)
            if [ -n "$out" ]; then
                REPLY=${out%%:*}
                break 2
            fi
        done
    done
    PKG_CACHE[$1]=$REPLY
}

is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' \n')" = '177ELF' ]; }

# Regular ELF files a package installed.
pkg_elfs() {
    local f
    dpkg -L "$1" 2>/dev/null | while IFS= read -r f; do
        [ -L "$f" ] && continue
        is_elf "$f" && echo "$f"
    done
    return 0
}

traveling_bytes() {
    local dev=0 tree du
    [ -d "$DEV" ] && dev=$(du -sb "$DEV" | cut -f1)
    # What the remote-run tool copies besides the carry: tracked + untracked-not-ignored files.
    tree=$(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
    # The coarser upper bound: everything but target/, .git and .device.
    du=$(du -sb --exclude=./target --exclude=./.git --exclude=./.device "$ROOT/." | cut -f1)
    echo "$dev $tree $du"
}

cmd_size() {
    local dev tree du total
    read -r dev tree du < <(traveling_bytes)
    ((du > tree)) && tree=$du
    total=$((dev + tree))
    awk -v d="$dev" -v t="$tree" -v s="$total" -v m="$MAX_MIB" 'BEGIN {
        printf "traveling size: .device %.1f MiB + working tree %.1f MiB = %.1f MiB (limit %d MiB; the tool takes 64)\n",
            d / 1048576, t / 1048576, s / 1048576, m }'
    ((total <= MAX_MIB * 1048576)) || die "traveling size above $MAX_MIB MiB"
}

cmd_command() {
    cat <<EOF
remote-run tool call (one call does everything; the script stops its steps after 420 s):
  command:   $REMOTE_CMD
  carry:     $REMOTE_CARRY
  timeout_s: $REMOTE_TIMEOUT
results come back under \$OUT: summary.txt (step, exit code, seconds), device.log, results.tar.gz
EOF
}

hello_source() {
    cat <<'EOF'
/* device-check selftest (written by scripts/device-check.sh): MPI_Init, a strided
 * MPI_Type_vector exchange between ranks 0 and 1 small and large (sluice's packing and, at
 * 1.2 MB, its pipelined protocol through the shared-memory arena), a contiguous 4 MiB exchange
 * (the MPI's own large-message path: single-copy CMA with Open MPI), an allreduce, and the files
 * mapped by each rank and by rank 0's launcher ancestors whose executable lies under
 * $HELLO_ROOT, written to $HELLO_MAPS/rank<r>.txt. Prints "HELLO OK <n> ranks" on success. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void dump_maps(FILE *out, const char *who, int pid) {
    char path[64], exe[4096] = "?", line[8192];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n > 0) exe[n] = 0;
    fprintf(out, "EXE %s %d %s\n", who, pid, exe);
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(out, "NOMAPS %s %d\n", who, pid);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (!p) continue;
        p[strcspn(p, "\n")] = 0;
        fprintf(out, "MAP %s %s\n", who, p);
    }
    fclose(f);
}

static int parent_of(int pid) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    int ppid = 0;
    if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1) return 0;
    return ppid;
}

static const char *exe_of(int pid, char *exe, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, exe, len - 1);
    exe[n > 0 ? n : 0] = 0;
    return exe;
}

static int exchange(int rank, int blocks, MPI_Datatype vec) {
    int bad = 0, n = blocks * 3;
    int *buf = calloc((size_t)blocks * 5, sizeof(int));
    int *flat = calloc((size_t)n, sizeof(int));
    if (rank == 0) {
        for (int i = 0; i < blocks * 5; i++) buf[i] = (i % 5 < 3) ? i : -1;
        MPI_Send(buf, 1, vec, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(buf, 1, vec, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < blocks * 5; i++)
            if (buf[i] != ((i % 5 < 3) ? 2 * i : -1)) bad++;
    } else if (rank == 1) {
        MPI_Recv(flat, n, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int b = 0; b < blocks; b++)
            for (int j = 0; j < 3; j++) {
                if (flat[b * 3 + j] != b * 5 + j) bad++;
                flat[b * 3 + j] *= 2;
            }
        MPI_Send(flat, n, MPI_INT, 0, 8, MPI_COMM_WORLD);
    }
    free(buf);
    free(flat);
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0, total = 0, len = 0;
    char host[256] = "?", version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host - 1);
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n,")] = 0;
    printf("hello: rank %d of %d on %s (%s)\n", rank, size, host, version);
    fflush(stdout);
    if (size >= 2) {
        int sizes[2] = {64, 100000};
        for (int k = 0; k < 2; k++) {
            MPI_Datatype vec;
            MPI_Type_vector(sizes[k], 3, 5, MPI_INT, &vec);
            MPI_Type_commit(&vec);
            int b = exchange(rank, sizes[k], vec);
            if (b) fprintf(stderr, "hello: rank %d: %d wrong ints at %d blocks\n", rank, b, sizes[k]);
            bad += b;
            MPI_Type_free(&vec);
        }
    }
    if (size >= 2 && rank < 2) {
        size_t n = (size_t)4 << 20;
        unsigned char *big = malloc(n);
        for (size_t i = 0; i < n; i++) big[i] = (unsigned char)(rank == 0 ? i * 7 : 0);
        if (rank == 0) MPI_Send(big, (int)n, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
        else MPI_Recv(big, (int)n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++) wrong += big[i] != (unsigned char)(i * 7);
        if (wrong) fprintf(stderr, "hello: rank %d: %zu wrong bytes of 4 MiB\n", rank, wrong);
        bad += wrong != 0;
        free(big);
    }
    int one = 1, ranks = 0;
    MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (ranks != size) bad++;
    const char *dir = getenv("HELLO_MAPS"), *root = getenv("HELLO_ROOT");
    if (dir && *dir) {
        char path[4096], exe[4096];
        snprintf(path, sizeof path, "%s/rank%d.txt", dir, rank);
        FILE *out = fopen(path, "w");
        if (out) {
            dump_maps(out, "self", getpid());
            int pid = getpid();
            for (int up = 0; rank == 0 && root && *root && up < 4; up++) {
                pid = parent_of(pid);
                if (pid <= 1 || strncmp(exe_of(pid, exe, sizeof exe), root, strlen(root)) != 0) break;
                dump_maps(out, "launcher", pid);
            }
            fclose(out);
        }
    }
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "HELLO FAILED %d errors\n" : "HELLO OK %d ranks\n", total ? total : size);
    fflush(stdout);
    MPI_Finalize();
    return total != 0;
}
EOF
}

# Adds /.device/ and /device-out/ to .git/info/exclude (not .gitignore: untracked either way).
exclude_device() {
    local ex
    ex=$(cd "$ROOT" && git rev-parse --git-path info/exclude)
    case $ex in /*) ;; *) ex=$ROOT/$ex ;; esac
    mkdir -p "$(dirname "$ex")"
    touch "$ex"
    grep -qxF '/.device/' "$ex" || echo '/.device/' >>"$ex"
    grep -qxF '/device-out/' "$ex" || echo '/device-out/' >>"$ex"
    (cd "$ROOT" && git check-ignore -q .device/x) || die ".device/ is not ignored by git after editing $ex"
}

build_all() {
    note "building libsluice.so (both flavors) and sluice-rwcp-bench"
    (cd "$ROOT" && scripts/build.sh) || die "scripts/build.sh failed"
    (cd "$ROOT" && SLUICE_MPI=openmpi cargo build --release --target-dir target/openmpi --bin sluice-rwcp-bench) ||
        die "cargo build of sluice-rwcp-bench failed"
}

stage_binaries() {
    local mpi src name f sources=() seen=()
    for mpi in "${MPIS[@]}"; do
        mkdir -p "$DEV/lib/$mpi" "$DEV/bin/$mpi" "$DEV/selftest/$mpi" "$DEV/soak/$mpi"
        strip --strip-debug -o "$DEV/lib/$mpi/libsluice.so" "$ROOT/target/$mpi/release/libsluice.so"
    done
    mkdir -p "$DEV/tools" "$DEV/src"
    strip --strip-debug -o "$DEV/tools/sluice-rwcp-bench" "$ROOT/target/openmpi/release/sluice-rwcp-bench"
    note "sluice-rwcp-bench links: $(ldd "$DEV/tools/sluice-rwcp-bench" | awk '/=>/ { printf "%s ", $1 }')"

    hello_source >"$DEV/src/mpi_hello.c"
    shopt -s nullglob
    # overhead.c: the host-only cost of an armed GPU layer (8-byte ping-pong, SLUICE_GPU=auto vs off).
    for src in "$ROOT"/tests/c/gpu_*.c "$ROOT"/bench/gpu/*.c "$ROOT"/bench/overhead.c; do sources+=("$src"); done
    shopt -u nullglob
    note "GPU programs: ${#sources[@]} (${sources[*]##*/})"
    for mpi in "${MPIS[@]}"; do
        mpicc."$mpi" -O2 -Wall -Wno-stringop-overflow -o "$DEV/selftest/$mpi/mpi_hello" "$DEV/src/mpi_hello.c" ||
            die "mpicc.$mpi failed for the selftest hello"
        mpicc."$mpi" -O1 -Wall -Wno-stringop-overflow -pthread -o "$DEV/soak/$mpi/p2p_typepairs" "$ROOT/tests/c/p2p_typepairs.c" ||
            die "mpicc.$mpi failed for the type-pair generator"
        seen=()
        for src in "${sources[@]}"; do
            name=$(basename "$src" .c)
            in_list "$name" "${seen[@]}" && die "two GPU programs named $name"
            seen+=("$name")
            # -ldl: the programs dlopen libcuda.so.1 (tests/c/gpu_cuda.h); -lm for the benchmarks.
            mpicc."$mpi" -O2 -Wall -Wno-stringop-overflow -pthread -I"$ROOT/tests/c" -I"$ROOT/include" \
                -o "$DEV/bin/$mpi/$name" "$src" -ldl -lm || die "mpicc.$mpi failed for $src"
            echo "compiled .device/bin/$mpi/$name"
        done
    done
    for f in "$DEV"/bin/*/* "$DEV"/selftest/*/* "$DEV"/soak/*/*; do strip --strip-debug "$f"; done
}

# The MPI runtime's package set: every package owning a file that the launchers, libmpi.so.40,
# libmpich.so.12, Open MPI's and PMIx's components, UCX's transport modules or the staged
# binaries load (ldd, which is transitive), then again over every ELF file of the packages found,
# until nothing new comes; minus BASE_PKGS. Prints "pkg" lines.
runtime_packages() {
    local -a seeds=() queue=()
    local -A pkgs=() done_pkgs=()
    local f lib p missing deps
    seeds=(/usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy
        "$ARCHLIB/libmpi.so.40" "$ARCHLIB/libmpich.so.12")
    shopt -s nullglob
    seeds+=("$ARCHLIB"/openmpi/lib/openmpi3/*.so "$ARCHLIB"/ucx/*.so* "$ARCHLIB"/pmix2/lib/pmix/*.so)
    seeds+=("$DEV"/lib/*/libsluice.so "$DEV"/bin/*/* "$DEV"/selftest/*/* "$DEV"/soak/*/* "$DEV"/tools/*)
    shopt -u nullglob
    pkgs[openmpi-common]=1 # help texts and data files, no ELF
    for f in "${seeds[@]}"; do
        [ -e "$f" ] || die "missing $f (is the MPI runtime installed?)"
        case $f in "$DEV"/*) ;; *) pkg_of "$f" && [ -n "$REPLY" ] && pkgs[$REPLY]=1 ;; esac
    done
    queue=("${seeds[@]}")
    while ((${#queue[@]})); do
        deps=$(printf '%s\0' "${queue[@]}" | xargs -0 ldd 2>/dev/null || true)
        missing=$(grep 'not found' <<<"$deps" | sort -u || true)
        [ -z "$missing" ] || die "unresolved libraries:"$'\n'"$missing"
        while IFS= read -r lib; do
            pkg_of "$lib"
            [ -n "$REPLY" ] || die "no package owns $lib"
            pkgs[$REPLY]=1
        done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$deps" | sort -u)
        queue=()
        for p in "${!pkgs[@]}"; do
            [ -n "${done_pkgs[$p]+x}" ] && continue
            done_pkgs[$p]=1
            in_list "$p" "${BASE_PKGS[@]}" && continue
            while IFS= read -r f; do queue+=("$f"); done < <(pkg_elfs "$p")
        done
    done
    for p in "${!pkgs[@]}"; do
        in_list "$p" "${BASE_PKGS[@]}" && continue
        case $p in *-doc | *-dev) echo "device-check: warning: skipping $p" >&2 && continue ;; esac
        echo "$p"
    done | sort
}

download_debs() {
    local p spec ver arch dir want=()
    mkdir -p "$DEV/debs/fallback"
    for p in "$@"; do
        ver=$(dpkg-query -W -f '${Version}' "$p") || die "$p is not installed"
        arch=$(dpkg-query -W -f '${Architecture}' "$p")
        dir=$DEV/debs
        in_list "$p" "${FALLBACK_PKGS[@]}" && dir=$DEV/debs/fallback
        # The installed version exactly: the binaries here were built and tested against it.
        spec="$p=$ver"
        [ "$arch" != all ] && spec="$p:$arch=$ver"
        want+=("$dir/${p}_${ver#*:}_$arch.deb")
        if [ -f "${want[-1]}" ]; then continue; fi
        (cd "$dir" && apt-get download "$spec" 2>&1 | grep -v '^W: Download is performed unsandboxed') ||
            true
        [ -f "${want[-1]}" ] || die "apt-get download $spec did not produce ${want[-1]##*/}"
    done
    # Stale .debs from an earlier prepare.
    local deb
    for deb in "$DEV"/debs/*.deb "$DEV"/debs/fallback/*.deb; do
        [ -f "$deb" ] || continue
        in_list "$deb" "${want[@]}" || { echo "removing stale ${deb#"$ROOT"/}"; rm -f "$deb"; }
    done
}

write_manifest() {
    local p deb
    {
        echo "prepared: $(date -u +%FT%TZ) on $(hostname)"
        echo "commit: $(cd "$ROOT" && git rev-parse HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- src tests bench Cargo.toml Cargo.lock build.rs || echo ' (+ uncommitted changes)')"
        echo "openmpi: $(dpkg-query -W -f '${Version}' libopenmpi3)  mpich: $(dpkg-query -W -f '${Version}' libmpich12)"
        echo "gpu programs: $(find "$DEV/bin/openmpi" -type f -printf "%f " | sort)"
        echo
        echo "packages (unpacked into the private root):"
        for deb in "$DEV"/debs/*.deb; do printf '  %-60s %8d\n' "${deb##*/}" "$(stat -c %s "$deb")"; done
        echo "fallback packages (used only for sonames the device's system lacks):"
        for deb in "$DEV"/debs/fallback/*.deb; do printf '  %-60s %8d\n' "${deb##*/}" "$(stat -c %s "$deb")"; done
        echo "not shipped (in every Ubuntu base image): ${BASE_PKGS[*]}"
        echo
        echo "files:"
        (cd "$DEV" && find . -type f ! -name '*.deb' ! -name manifest.txt -printf '  %P %s\n' | sort)
    } >"$DEV/manifest.txt"
}

cmd_prepare() {
    local p list pkglist=()
    command -v apt-get >/dev/null || die "apt-get not found"
    for p in mpicc.openmpi mpicc.mpich strip dpkg ldd; do command -v "$p" >/dev/null || die "$p not found"; done
    exclude_device
    build_all
    note "staging binaries into .device/"
    # Everything but the downloaded .debs is rebuilt from scratch.
    rm -rf "${DEV:?}/lib" "${DEV:?}/bin" "$DEV/selftest" "$DEV/soak" "$DEV/tools" "$DEV/src" "$DEV/manifest.txt"
    mkdir -p "$DEV"
    stage_binaries
    note "computing the MPI runtime package set (ldd + dpkg -S)"
    list=$(mktemp)
    runtime_packages >"$list" || die "could not compute the package set"
    while IFS= read -r p; do pkglist+=("$p"); done <"$list"
    rm -f "$list"
    ((${#pkglist[@]})) || die "empty package set"
    echo "packages (${#pkglist[@]}): ${pkglist[*]}"
    note "downloading .debs (apt-get download, installed versions)"
    download_debs "${pkglist[@]}"
    write_manifest
    note ".device contents"
    (cd "$DEV" && du -sh lib bin selftest soak tools debs | sed 's/^/  /')
    cmd_size
    echo
    cmd_command
}

# Runs device-run.sh in dry mode with the host's copies of the shipped packages hidden.
cmd_dry_run() {
    local out=${1:-/tmp/device-dry-out} list rc=0
    [ -d "$DEV/debs" ] || die "run '$0 prepare' first"
    command -v unshare >/dev/null || die "unshare not found (run DEVICE_RUN_DRY=1 bash scripts/device-run.sh instead)"
    list=$(mktemp)
    # Every package shipped (main and fallback): dpkg -L of the installed copy.
    local deb p
    for deb in "$DEV"/debs/*.deb "$DEV"/debs/fallback/*.deb; do
        p=${deb##*/}
        dpkg -L "${p%%_*}" 2>/dev/null
    done | sort -u >"$list"
    rm -rf "$out"
    mkdir -p "$out"
    note "dry run: hiding $(wc -l <"$list") host paths of the shipped packages, ssh and rsh; OUT=$out"
    # shellcheck disable=SC2016 # the script is expanded by the inner shell
    env DEVICE_RUN_DRY=1 DEVICE_RUN_FORCE_FALLBACK=1 OUT="$out" HIDE_LIST="$list" \
        unshare -m --propagation private bash -c '
        set -e
        n=0
        # Whole directories that belong to the MPI stack only.
        for d in /etc/openmpi /usr/share/openmpi /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \
                 /usr/lib/x86_64-linux-gnu/ucx /usr/lib/x86_64-linux-gnu/libfabric /usr/lib/x86_64-linux-gnu/hwloc; do
            [ -d "$d" ] && mount -t tmpfs -o size=1m none "$d" && n=$((n + 1))
        done
        while IFS= read -r f; do
            [ -f "$f" ] && [ ! -L "$f" ] || continue
            case $f in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) continue ;; esac
            mount --bind /dev/null "$f" 2>/dev/null && n=$((n + 1))
        done <"$HIDE_LIST"
        for f in /usr/bin/ssh /usr/bin/rsh /usr/bin/slogin; do [ -f "$f" ] && mount --bind /dev/null "$f" && n=$((n + 1)); done
        echo "hidden: $n mounts"
        exec bash scripts/device-run.sh' || rc=$?
    rm -f "$list"
    echo "dry run exit code: $rc"
    return $rc
}

cd "$ROOT"
case ${1:-} in
prepare) cmd_prepare ;;
dry-run) cmd_dry_run "${2:-}" ;;
size) cmd_size ;;
command) cmd_command ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d'
    exit 2
    ;;
esac
