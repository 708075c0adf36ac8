#!/usr/bin/env bash
# The MPICH test suite with libsluice.so preloaded, on Open MPI and on MPICH: a public suite of
# legal MPI programs that sluice must not break. Its source is `test/mpi` of Debian's own mpich
# source package (`apt-get source`, the version of the installed MPICH), fetched and built under
# target/; none of it is in this repository.
#
#   scripts/mpich-suite.sh                     (pt2pt datatype coll f77 f90, both MPIs;
#                                               SUITE_MPIS="openmpi" for one)
#   SUITE_DIRS="pt2pt datatype coll:testlist.dtp" scripts/mpich-suite.sh   (DIR: its testlist
#                                       and testlist.dtp; DIR:LIST: that list only; DIR
#                                       may be a subdirectory, as threads/pt2pt; a DIR whose
#                                       testlist names only subdirectories, as f77, f90 and
#                                       threads, stands for them)
#
# Every test line of the chosen directories' test lists (`testlist`, and the DTPools-generated
# `testlist.dtp` of derived-datatype point-to-point and collective tests) runs with sluice
# preloaded through the suite's own runner (`runtests`: its pass criteria, its time limits), one
# runner per directory; a line that fails runs again alone without sluice, and when it passes
# there, alone with sluice up to SUITE_RERUNS (3) times (passing then: flaky, reported); it
# counts as sluice's failure only when it passes without sluice and never alone with it (the
# suite also tests MPI-4 calls these MPIs lack, and MPICH-specific behaviour). Lines
# whose program did not build (MPI-4 functions missing from the MPI) are left out, as are lines
# of more than SUITE_MAXNP (4) ranks and the few in SKIP below, each with its reason.
#
# Exits 0 when no line fails with sluice that passes without it, 1 otherwise, 77 when the
# source cannot be fetched (no deb-src access: reported and skipped, like the emulated cluster).
# Writes target/mpich-suite/<mpi>/results.txt (one line per test line: pass, flaky (failed
# among the others, passed alone), fail-both, SLUICE-ONLY) and the output of every sluice-only
# failure next to it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${SUITE_OUT:-$ROOT/target/mpich-suite}
read -r -a DIRS <<<"${SUITE_DIRS:-pt2pt datatype coll f77 f90}"
read -r -a MPIS <<<"${SUITE_MPIS:-openmpi mpich}"
MAXNP=${SUITE_MAXNP:-4}
# Tries alone with sluice before a failing line is run without it.
RERUNS=${SUITE_RERUNS:-3}
SRC=$OUT/src/test/mpi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
# Two shared cores run up to 4 ranks: the suite's own limits, doubled.
export MPITEST_TIMEOUT_MULTIPLIER=${MPITEST_TIMEOUT_MULTIPLIER:-2}

# Lines left out, by MPI and program, and why: each fails or runs for minutes without sluice on
# a 2-core machine (MPICH's ranks busy-poll, so 4 of them share 2 cores badly), so it cannot
# tell anything about sluice here. The suite's own expected failures (`xfail=`) are left out
# as its runner does by default.
declare -A SKIP=(
  [mpich/sendflood]="100,000 small round trips among 4 ranks: over 100 s without sluice"
  [mpich/allredmany]="many small allreduces among 4 ranks: 180 s without sluice"
  [mpich/allgatherv4]="a timing loop of allgathervs among 4 ranks: 74 s without sluice"
  [mpich/nonblocking3]="a stress loop of nonblocking collectives: 46 s without sluice at 4 ranks"
  [openmpi/idup_deadlock]="MPI_Comm_idup from several threads of 4 ranks (threads/comm): runs into the 360 s limit without sluice"
  [openmpi/idup_nb]="MPI_Comm_idup with pending nonblocking operations from several threads (threads/comm): without sluice it hangs (3 of 3 runs past 120 s) or fails in Open MPI's libnbc (MPI_ERR_TRUNCATE)"
  [mpich/ctxsplit]="100,000 MPI_Comm_splits among 4 ranks: about 13 ms each with or without sluice (1,000 took 13.4 s bare, 17.2 s with sluice; 4.5 us each at 2 ranks either way)"
)
# With SUITE_QUICK=1 (scripts/test.sh, to keep CI short) also these lines, by MPI (`*`: both)
# and a pattern of the line: the slowest of the run (mostly MPICH's busy-polling ranks at 4 on 2
# cores), which the full run keeps.
declare -A SLOW=(
  ["*/bcast 4 *-count=262144 *"]="DTPools bcast of 262,144-element types among 4 ranks: 100-140 s each with MPICH on 2 cores; 22 s and 138 s with Open MPI, slow bare too (2 of the 16 types: 16.5-17.1 s bare, 18.2-21.2 s with sluice)"
  ["*/* *-sendcnt=262144 *"]="DTPools point-to-point of 262,144-element types (pingping, sendrecv1, sendself: 12 lines, 155-165 s of each MPI's 360 s of pt2pt; the 65,530-element lines into receives of their size, pipelined too, stay)"
  ["*/* *-sendcnt=65530 *-recvcnt=131060 *"]="DTPools point-to-point of 65,530-element types into receives of twice as many (6 lines, about 45 s of each MPI's pt2pt; the same sends into receives of their size stay, and receives larger than the message at 512 and 1,018 elements (pingping: 512))"
  ["*/pingping 2 *-sendcnt=1018 *"]="DTPools pingping of 1,018-element types (4 lines, 27 s with Open MPI, 31 s with MPICH: the program's own loops, as slow without sluice; the 512-element lines stay, below the pipeline threshold like these, into receives of their size and of twice it, and the 1,018-element lines of sendrecv1 and sendself)"
  ["mpich/bcast 4 *-testsize=1024 *"]="DTPools bcast of 1,024 single-element types among 4 ranks: 85 s each with MPICH on 2 cores, 94 s without sluice (Open MPI: seconds)"
)

say() { echo "mpich-suite: $*"; }

# The source of the installed MPICH's Debian package (test/mpi only).
fetch() {
  [ -x "$SRC/configure" ] && return 0
  mkdir -p "$OUT/dl"
  if ! ls "$OUT"/dl/mpich_*.orig.tar.* >/dev/null 2>&1; then
    if ! (cd "$OUT/dl" && apt-get source --download-only -qq mpich >/dev/null 2>&1); then
      # No source lines yet: add them for the machine's own Debian archives (root only).
      [ "$(id -u)" -eq 0 ] || { say "cannot fetch mpich's source (apt-get source needs deb-src lines; not root)"; return 77; }
      local list=/etc/apt/sources.list.d/sluice-deb-src
      if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$list.sources"
      elif [ -f /etc/apt/sources.list ]; then
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$list.list"
      fi
      apt-get update -qq >/dev/null 2>&1 || true
      (cd "$OUT/dl" && apt-get source --download-only -qq mpich >/dev/null 2>&1) \
        || { say "cannot fetch mpich's source package (apt-get source mpich failed)"; return 77; }
    fi
  fi
  rm -rf "$OUT/src" && mkdir -p "$OUT/src"
  tar xf "$(ls "$OUT"/dl/mpich_*.orig.tar.* | head -1)" -C "$OUT/src" --strip-components=1 --wildcards '*/test/mpi'
  [ -x "$SRC/configure" ] || { say "no test/mpi/configure in the source package"; return 77; }
}

# Configures the suite for one MPI (once) and builds its libraries and the programs the chosen
# lists name.
build() {
  local f=$1 b=$OUT/$1 e
  mkdir -p "$b/prefix/bin" "$b/build"
  # Fortran 77/90/2008 too (the MPI's Fortran bindings are intercepted as well): gfortran 10+
  # refuses the suite's calls of one routine with buffers of different types without
  # -fallow-argument-mismatch; configure turns off the bindings the MPI lacks (Open MPI's f08).
  local extra=(--enable-fortran=all FFLAGS="-O2 -fallow-argument-mismatch" FCFLAGS="-O2 -fallow-argument-mismatch")
  if [ "$f" = openmpi ]; then
    # Open MPI 4.1's mpi.h turns the MPI-1 calls MPI-3 removed (still in its library, still
    # used by the suite's DTPools) into compile errors; MPICH-only behaviour is left out.
    extra+=(--enable-strictmpi "CFLAGS=-O2 -DOMPI_OMIT_MPI1_COMPAT_DECLS=0 -DOMPI_WANT_MPI_INTERFACE_WARNING=0")
  fi
  # The marker holds the options: a build configured otherwise is configured again.
  if [ "$(cat "$b/build/.configured" 2>/dev/null)" != "${extra[*]}" ]; then
    # --with-mpi takes a prefix whose bin/ holds the compiler wrappers: this MPI's, by name.
    for t in mpicc mpif77 mpifort mpiexec; do ln -sf "/usr/bin/$t.$f" "$b/prefix/bin/$t"; done
    rm -f "$b/build/.configured" "$b/build/.built-"*
    (cd "$b/build" && "$SRC/configure" --with-mpi="$b/prefix" --disable-cxx --disable-romio \
      --disable-spawn --disable-ft-tests --disable-perftest "${extra[@]}" MPIEXEC="$b/prefix/bin/mpiexec" \
      >"$b/configure.log" 2>&1) || { say "$f: configure failed (see $b/configure.log)"; return 1; }
    make -C "$b/build/util" -j2 >"$b/build-util.log" 2>&1 || { say "$f: util failed"; return 1; }
    make -C "$b/build/dtpools" -j2 >"$b/build-dtpools.log" 2>&1 || { say "$f: dtpools failed"; return 1; }
    echo "${extra[*]}" >"$b/build/.configured"
  fi
  expand_dirs "$f"
  for e in "${EDIRS[@]}"; do
    local d=${e%%:*} mark="$b/build/.built-${e//[:\/]/-}"
    [ -f "$mark" ] && continue
    local progs
    mapfile -t progs < <(lists_of "$e" | while read -r l; do
      p=$(list_path "$f" "$d" "$l") && awk '$1 !~ /^#/ && NF { print $1 }' "$p"; done | sort -u)
    # -k: programs of calls this MPI lacks fail to link; the rest build.
    make -C "$b/build/$d" -k -j2 "${progs[@]}" >"$b/build-${e//[:\/]/-}.log" 2>&1 || true
    touch "$mark"
  done
}

# EDIRS: the entries of SUITE_DIRS for MPI $1, a directory whose testlist names only
# subdirectories (f77, f90, threads: as configured for this MPI) replaced by them, recursively.
expand_dirs() {
  local f=$1 e
  EDIRS=()
  for e in "${DIRS[@]}"; do expand_one "$f" "$e"; done
}
expand_one() {
  local f=$1 e=$2 p subs=() w
  if [[ $e != *:* ]] && p=$(list_path "$f" "$e" testlist); then
    while read -r w _; do
      case $w in '' | '#'*) continue ;; esac
      [ -d "$SRC/$e/$w" ] || { subs=(); break; }
      subs+=("$w")
    done <"$p"
  fi
  if [ "${#subs[@]}" -eq 0 ]; then EDIRS+=("$e"); return; fi
  for w in "${subs[@]}"; do expand_one "$f" "$e/$w"; done
}

# The test lists of an entry of SUITE_DIRS: DIR (its testlist and testlist.dtp) or DIR:LIST.
lists_of() {
  case $1 in *:*) echo "${1#*:}" ;; *) printf '%s\n' testlist testlist.dtp ;; esac
}

# Where list $3 of directory $2 is for MPI $1: configured into the build directory, or, for the
# directories whose list is not generated, in the source.
list_path() {
  local p
  for p in "$OUT/$1/build/$2/$3" "$SRC/$2/$3"; do
    [ -f "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}

# Runs the test lines in file $4 of directory $2 of MPI $1 through the suite's runner, with
# sluice preloaded when $3 = sluice; prints one word per line, in order: pass (or skipped by the
# runner) or fail. The runner reports exactly one result per line of a list without directories.
run_lines() {
  local f=$1 d=$2 mode=$3 list=$4 b=$OUT/$1/build/$2
  # The launcher itself, not the prefix's link: hydra finds its proxy next to its own path.
  local mpiexec="/usr/bin/mpiexec.$f" preload=""
  [ "$f" = openmpi ] && mpiexec+=" --oversubscribe"
  if [ "$mode" = sluice ]; then
    local so=$ROOT/target/$f/release/libsluice.so
    if [ "$f" = openmpi ]; then preload="-x LD_PRELOAD=$so"; else preload="-genv LD_PRELOAD $so"; fi
  fi
  rm -f "$b/$mode.tap"
  # stdin from /dev/null: the launcher would read it.
  (cd "$b" && MPITEST_MPIEXECARG="$preload" "$OUT/$f/build/runtests" -srcdir="$SRC/$d" -tests="$list" -mpiexec="$mpiexec" \
    -maxnp="$MAXNP" -tapfile="$b/$mode.tap" </dev/null >"$b/$mode.out" 2>&1) || true
  sed -n 's/^\(not ok\|ok\) .*/\1/p' "$b/$mode.tap" | sed 's/^ok$/pass/; s/^not ok$/fail/'
}

# The test lines of entry $2 of SUITE_DIRS (MPI $1) whose program was built.
lines_of() {
  local d=${2%%:*} l p
  local b=$OUT/$1/build/$d
  for l in $(lists_of "$2"); do
    p=$(list_path "$1" "$d" "$l") || continue
    while read -r prog rest; do
      case $prog in '' | '#'*) continue ;; esac
      [ -f "$b/$prog" ] && [ -x "$b/$prog" ] || continue
      [ -z "${SKIP[$1/$prog]:-}" ] || continue
      [[ " $rest " != *" xfail="* ]] || continue
      if [ "${SUITE_QUICK:-0}" = 1 ]; then
        local k slow=0
        for k in "${!SLOW[@]}"; do
          # shellcheck disable=SC2053
          [[ $1 == ${k%%/*} ]] && [[ "$prog $rest " == ${k#*/} ]] && slow=1
        done
        [ "$slow" = 0 ] || continue
      fi
      # The runner would run a line of more ranks at MAXNP, where programs written for their
      # count abort: left out instead.
      np=${rest%% *}
      [[ $np =~ ^[0-9]+$ ]] && [ "$np" -gt "$MAXNP" ] && continue
      printf '%s %s\n' "$prog" "$rest"
    done <"$p"
  done
}

rc=0
fetch || exit $?
total_pass=0 total_both=0 total_only=0
for f in "${MPIS[@]}"; do
  mpi_pass=0
  [ -f "$ROOT/target/$f/release/libsluice.so" ] || { say "$f: build libsluice.so first (scripts/build.sh $f)"; exit 1; }
  build "$f" || exit 1
  res=$OUT/$f/results.txt
  : >"$res"
  rm -rf "$OUT/$f/failures" && mkdir -p "$OUT/$f/failures"
  for e in "${EDIRS[@]}"; do
    d=${e%%:*}
    pass=0 both=0 only=0 flaky=0 start=$(date +%s) b=$OUT/$f/build/$d
    lines_of "$f" "$e" >"$b/sluice.testlist"
    mapfile -t lines <"$b/sluice.testlist"
    if [ "${#lines[@]}" -eq 0 ]; then
      say "$f $e: no test line (no list, or nothing built)"
      continue
    fi
    mapfile -t got < <(run_lines "$f" "$d" sluice sluice.testlist)
    [ "${#got[@]}" -eq "${#lines[@]}" ] || { say "$f $d: the runner reported ${#got[@]} results for ${#lines[@]} lines (see $b/sluice.out)"; exit 1; }
    failed=()
    for i in "${!lines[@]}"; do
      if [ "${got[$i]}" = pass ]; then
        pass=$((pass + 1)); echo "pass        $d ${lines[$i]}" >>"$res"
      else
        failed+=("${lines[$i]}")
      fi
    done
    # Each failure once alone without sluice: a line that fails there too is the MPI's or the
    # suite's (MPI-4 calls these MPIs lack, MPICH-specific behaviour), not sluice's. One that
    # passes there runs again alone with sluice, up to RERUNS times: passing then, it is
    # reported as flaky, not counted as failing. Why several tries: some of the suite's
    # programs race in the MPI itself (f77/pt2pt irsendf checks the status of whichever of a
    # receive and a send MPI_Waitany returns last, which depends on whether the reply arrived
    # before the first progress; the same program in C hit it in 14 of 20 runs on bare Open
    # MPI), and a few hundred nanoseconds more per call in either rank change how often they
    # lose. (Without sluice first: the lines that fail on both cost one run each, not RERUNS.)
    for line in "${failed[@]}"; do
      printf '%s\n' "$line" >"$b/one.testlist"
      if [ "$(run_lines "$f" "$d" bare one.testlist)" != pass ]; then
        both=$((both + 1)); echo "fail-both   $d $line" >>"$res"
        continue
      fi
      try=0 alone=fail
      while [ "$try" -lt "$RERUNS" ] && [ "$alone" != pass ]; do
        try=$((try + 1))
        alone=$(run_lines "$f" "$d" sluice one.testlist)
      done
      if [ "$alone" = pass ]; then
        flaky=$((flaky + 1)); echo "flaky       $d $line" >>"$res"
        say "$f $d: failed among the others, passed alone on try $try of $RERUNS (flaky): $line"
        continue
      fi
      only=$((only + 1)); echo "SLUICE-ONLY $d $line" >>"$res"
      n=$(ls "$OUT/$f/failures" | wc -l)
      keep="$OUT/$f/failures/$n-${d//\//-}-${line%% *}.tap"
      cp "$b/sluice.tap" "$keep"
      say "$f $d: fails with sluice, passes without: $line (output: $keep)"
      sed -n 's/^## /    /p' "$keep" | head -20
    done
    [ "$pass" -gt 0 ] || say "$f $e: no line passed (see $b/sluice.out)"
    mpi_pass=$((mpi_pass + pass))
    say "$f $e: $pass passed, $flaky flaky, $both fail without sluice too, $only fail only with sluice ($(($(date +%s) - start)) s)"
    total_pass=$((total_pass + pass)) total_both=$((total_both + both)) total_only=$((total_only + only))
  done
  # Nothing passing on an MPI means the harness, not sluice, is broken (a launcher that cannot
  # start); a directory alone may fail whole without sluice (Open MPI's f90types).
  [ "$mpi_pass" -gt 0 ] || { say "$f: no line passed, with or without sluice"; exit 1; }
done
for p in "${!SKIP[@]}"; do [[ " ${MPIS[*]} " == *" ${p%%/*} "* ]] && say "left out on ${p%%/*}: ${p#*/} (${SKIP[$p]})"; done
if [ "${SUITE_QUICK:-0}" = 1 ]; then
  for p in "${!SLOW[@]}"; do
    m=${p%%/*}
    [ "$m" = "*" ] && m=${MPIS[*]}
    [[ " ${MPIS[*]} " == *" ${p%%/*} "* || ${p%%/*} == "*" ]] && say "left out on $m (SUITE_QUICK): ${p#*/} (${SLOW[$p]})"
  done
fi
say "$total_pass passed, $total_both fail without sluice too, $total_only fail only with sluice"
# In the form scripts/test.sh counts.
[ "$total_only" -eq 0 ] || rc=1
echo "test result: $([ $rc -eq 0 ] && echo ok || echo FAILED). $total_pass passed; $total_only failed; (mpich-suite)"
exit $rc
