#!/usr/bin/env bash
# mpi4py's own test suite with libsluice.so preloaded, on Open MPI and on MPICH: 1,358 tests of
# MPI semantics written by another project (datatypes and their envelopes/contents, packing,
# every point-to-point and collective call with buffers, vectors and derived types, statuses,
# requests, probes, RMA, errors, attributes, topologies), run by Python programs, so sluice is
# preloaded under an interpreter rather than a C program.
#
#   scripts/mpi4py-suite.sh              (2 and 4 ranks, both MPIs)
#   M4P_MPIS=mpich M4P_RANKS=2 scripts/mpi4py-suite.sh
#
# Open MPI: Debian's python3-mpi4py (installed when missing) with the tests of its version's
# source; MPICH: the same source built against MPICH under target/mpi4py/ (about a minute).
# The source comes from PyPI (`pip download`; Debian's orig tarball is not on every mirror);
# where it cannot be fetched the script says so and exits 77; an MPI it does not build against
# is reported and skipped. Spawn tests are left
# out (`MPI_Comm_spawn` of new processes as root under a launcher that was not told to allow
# it fails without sluice too). A run that reports failures runs again without sluice; the
# script fails when a test fails only with sluice, or a run fails (crash, hang past 600 s) with
# sluice and not without.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/mpi4py
read -r -a MPIS <<<"${M4P_MPIS:-openmpi mpich}"
read -r -a RANKS <<<"${M4P_RANKS:-2 4}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
say() { echo "mpi4py-suite: $*"; }

if ! dpkg-query -W -f='${Status}' python3-mpi4py 2>/dev/null | grep -q "install ok installed"; then
  [ "$(id -u)" -eq 0 ] || { say "python3-mpi4py is not installed (apt-get install python3-mpi4py)"; exit 77; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-mpi4py >/dev/null 2>&1 \
    || { say "cannot install python3-mpi4py"; exit 77; }
fi
VER=$(dpkg-query -W -f='${Version}' python3-mpi4py | sed 's/-.*//')
SRC=$OUT/mpi4py-$VER
if [ ! -f "$SRC/test/runtests.py" ]; then
  mkdir -p "$OUT/dl"
  if ! ls "$OUT/dl/mpi4py-$VER.tar.gz" >/dev/null 2>&1; then
    (cd "$OUT/dl" && timeout 300 python3 -m pip download -q "mpi4py==$VER" --no-binary :all: --no-deps -d . >/dev/null 2>&1) \
      || { say "cannot fetch mpi4py $VER's source (pip download)"; exit 77; }
  fi
  tar xzf "$OUT/dl/mpi4py-$VER.tar.gz" -C "$OUT"
fi

# The interpreter that imports mpi4py built for MPI $1, then the runner's options that find it
# (nothing: not available).
python_for() {
  if [ "$1" = openmpi ]; then
    printf '%s\n' /usr/bin/python3 --no-builddir
    return
  fi
  local b=$OUT/build-$1 lib
  if [ ! -f "$b/.built" ]; then
    rm -rf "$b" && cp -r "$SRC" "$b"
    (cd "$b" && python3 setup.py build --mpicc="/usr/bin/mpicc.$1" >"$OUT/build-$1.log" 2>&1) || return 0
    touch "$b/.built"
  fi
  lib=$(ls -d "$b"/build/lib.* | head -1)
  printf '%s\n' "$(python3 -c 'import sys; print(sys.executable)')" "--no-builddir --path=$lib"
}

# Runs the suite at $3 ranks on MPI $1 ($2: sluice or bare); prints the failing tests, one per
# line, and a last line "rc N".
run() {
  local f=$1 mode=$2 np=$3 pre=() log=$OUT/$1-$3-$2.log
  if [ "$mode" = sluice ]; then
    local so=$ROOT/target/$f/release/libsluice.so
    if [ "$f" = openmpi ]; then pre=(-x "LD_PRELOAD=$so"); else pre=(-genv LD_PRELOAD "$so"); fi
  fi
  local launch=("/usr/bin/mpiexec.$f" -n "$np")
  [ "$f" = openmpi ] && launch+=(--oversubscribe)
  local rc=0
  # shellcheck disable=SC2086 # $opts: the runner's options, words
  (cd "$SRC" && timeout 600 "${launch[@]}" "${pre[@]}" "$py" test/runtests.py $opts -e spawn -e dynproc </dev/null >"$log" 2>&1) || rc=$?
  sed -n 's/^\(FAIL\|ERROR\): \([^ ]*\) (\([^)]*\)).*/\3 \2/p' "$log" | sort -u
  echo "rc $rc"
}

passed=0 failed=0
for f in "${MPIS[@]}"; do
  [ -f "$ROOT/target/$f/release/libsluice.so" ] || { say "$f: build libsluice.so first (scripts/build.sh $f)"; exit 1; }
  mapfile -t pyopts < <(python_for "$f")
  [ "${#pyopts[@]}" -eq 2 ] || { say "$f: mpi4py did not build against it (see $OUT/build-$f.log): skipped"; continue; }
  py=${pyopts[0]} opts=${pyopts[1]}
  for np in "${RANKS[@]}"; do
    mapfile -t got < <(run "$f" sluice "$np")
    rc=${got[-1]#rc } && unset 'got[-1]'
    ran=$(grep -m1 -o '^Ran [0-9]* tests' "$OUT/$f-$np-sluice.log" || echo "no tests ran")
    if [ "$rc" = 0 ] && [ "${#got[@]}" -eq 0 ]; then
      passed=$((passed + 1)); say "$f, $np ranks: ok ($ran on each rank)"
      continue
    fi
    mapfile -t bare < <(run "$f" bare "$np")
    brc=${bare[-1]#rc } && unset 'bare[-1]'
    mapfile -t only < <(comm -23 <(printf '%s\n' "${got[@]}" | sed '/^$/d') <(printf '%s\n' "${bare[@]}" | sed '/^$/d'))
    bare_ran=$(grep -c '^Ran [0-9]* tests' "$OUT/$f-$np-bare.log" || true)
    sluice_ran=$(grep -c '^Ran [0-9]* tests' "$OUT/$f-$np-sluice.log" || true)
    if [ "$bare_ran" -eq 0 ]; then
      failed=$((failed + 1))
      say "$f, $np ranks: no result with or without sluice (exit $rc / $brc; 124: past 600 s; $OUT/$f-$np-bare.log)"
    elif [ "${#only[@]}" -gt 0 ] || { [ "$rc" != 0 ] && [ "$brc" = 0 ]; } || [ "$sluice_ran" -lt "$bare_ran" ]; then
      # (fewer ranks finishing with sluice: a crash or hang that the failures alone would hide)
      failed=$((failed + 1))
      say "$f, $np ranks: FAILS with sluice only (exit $rc, without sluice $brc; $OUT/$f-$np-sluice.log): ${only[*]:-the run}"
    else
      passed=$((passed + 1))
      say "$f, $np ranks: ok; ${#got[@]} tests fail without sluice too (exit $rc / $brc)"
    fi
  done
done
echo "test result: $([ "$failed" -eq 0 ] && echo ok || echo FAILED). $passed passed; $failed failed; (mpi4py)"
[ "$failed" -eq 0 ]
