#!/usr/bin/env bash
# Long soak of the randomized type-pair generator (tests/c/p2p_typepairs.c, issue 21): many
# seeds, both MPIs, 2 and 4 ranks; each chunk of pairs runs on the bare MPI, then under sluice at
# default settings, at minimum thresholds, and at minimum thresholds without the shared-memory
# arena; the digest lines must be identical. Stops at the first difference (unless --keep-going)
# and prints the seed, the pair index, both digests, the pair's description and the replay command.
#
# Usage: scripts/soak-typepairs.sh [--pairs N] [--time SECONDS] [--flavors "openmpi mpich"]
#          [--ranks "2 4"] [--chunk N] [--seed S] [--nodes N] [--keep-going]
#   --pairs N      pairs per MPI (default 100000); a pair counts once per rank count it ran at
#   --time S       stop starting new chunks after S seconds (default: no limit)
#   --chunk N      pairs per launch (default 400)
#   --seed S       first seed (default 1); each chunk uses the next seed
#   --nodes N      across N emulated nodes (scripts/cluster.sh up N, round-robin placement: the
#                  pairs rank ^ 1 exchange between nodes; brought down at the end), where the
#                  messages to another node take their own paths (split chunks and receives, at
#                  most SLUICE_PIPELINE_REMOTE_CHUNKS chunks)
# Needs scripts/build.sh to have built target/<flavor>/release/libsluice.so. SOAK_ROOT: run in
# that directory instead of the repository (its target/<flavor>/...; scripts/device-run.sh).
# Prints a line per seed done; ends with "N pairs, M differences" (M counts differing pairs; exit status 1 when M > 0).
set -uo pipefail
cd "${SOAK_ROOT:-$(dirname "$0")/..}" || exit 2
pairs=100000 limit=0 flavors="openmpi mpich" ranks="2 4" chunk=400 seed=1 keep=0 nodes=0
while (($#)); do
  case $1 in
    --pairs) pairs=$2; shift 2 ;;
    --time) limit=$2; shift 2 ;;
    --flavors) flavors=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --chunk) chunk=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --keep-going) keep=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wrap=()
if ((nodes > 1)); then
  scripts/cluster.sh down >/dev/null 2>&1 || true
  scripts/cluster.sh up "$nodes" || exit 2
  trap 'scripts/cluster.sh down >/dev/null 2>&1; rm -rf "$work"' EXIT
  wrap=(scripts/cluster.sh run --)
fi
configs=("default" "min" "min-noarena")
config_env() { # config -> KEY=VALUE words
  case $1 in
    default) ;;
    min) echo SLUICE_PIPELINE_THRESHOLD=128 SLUICE_PIPELINE_CHUNK=64 SLUICE_PIPELINE_DEPTH=2 ;;
    min-noarena) echo SLUICE_PIPELINE_THRESHOLD=128 SLUICE_PIPELINE_CHUNK=64 SLUICE_PIPELINE_DEPTH=2 SLUICE_SHM_ARENA=off ;;
  esac
}
# launch FLAVOR NP PRELOAD(or -) ENV-WORDS... -- ARGS...
launch() {
  local f=$1 np=$2 so=$3; shift 3
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  local cmd=()
  if [[ $f == openmpi ]]; then
    cmd=(mpirun.openmpi --oversubscribe --allow-run-as-root -np "$np")
    [[ $so != - ]] && cmd+=(-x "LD_PRELOAD=$so")
    for e in "${envs[@]}"; do cmd+=(-x "$e"); done
  else
    cmd=(mpiexec.mpich -np "$np")
    [[ $so != - ]] && cmd+=(-env LD_PRELOAD "$so")
    for e in "${envs[@]}"; do cmd+=(-env "${e%%=*}" "${e#*=}"); done
  fi
  echo "${wrap[*]:+${wrap[*]} }${cmd[*]} $*"
  timeout 900 "${wrap[@]}" "${cmd[@]}" "$@"
}
declare -A done_pairs
total=0 differences=0 start=$SECONDS
for f in $flavors; do
  so=$PWD/target/$f/release/libsluice.so
  [[ -f $so ]] || { echo "missing $so: run scripts/build.sh $f" >&2; exit 2; }
  mkdir -p "target/$f/typepairs"
  exe=$PWD/target/$f/typepairs/p2p_typepairs
  "mpicc.$f" -O1 -Wall -Wno-stringop-overflow -pthread tests/c/p2p_typepairs.c -o "$exe" || exit 2
  done_pairs[$f]=0
done
s=$seed
stop=0
while ((!stop)); do
  for f in $flavors; do
    ((done_pairs[$f] >= pairs)) && continue
    so=$PWD/target/$f/release/libsluice.so exe=$PWD/target/$f/typepairs/p2p_typepairs
    for np in $ranks; do
      n=$chunk
      ((done_pairs[$f] + n > pairs)) && n=$((pairs - done_pairs[$f]))
      ((n <= 0)) && break
      launch "$f" "$np" - -- "$exe" "$s" "$n" > "$work/bare.out" 2> "$work/bare.err"
      if ! grep -q "pairs $n failures 0" "$work/bare.out"; then
        echo "bare $f at $np ranks failed its own checks (seed $s):"; grep -v '^  ' "$work/bare.err" | head -20
        differences=$((differences + 1)); ((keep)) || { stop=1; break 3; }
      fi
      grep -E '^[DSA] ' "$work/bare.out" > "$work/bare.d"
      for c in "${configs[@]}"; do
        # shellcheck disable=SC2046
        cmdline=$(launch "$f" "$np" "$so" $(config_env "$c") -- "$exe" "$s" "$n" 2> "$work/sl.err" > "$work/sl.out"; head -1 "$work/sl.out")
        grep -E '^[DSA] ' "$work/sl.out" > "$work/sl.d"
        if ! cmp -s "$work/bare.d" "$work/sl.d" || ! grep -q "pairs $n failures 0" "$work/sl.out"; then
          # differing pairs: the indices of lines only one side has
          bad=$(diff "$work/bare.d" "$work/sl.d" | grep -E '^[<>] ' | grep -oE ' i=[0-9]+' | sort -u -t= -k2 -n | cut -d= -f2)
          [[ -z $bad ]] && bad=$(grep -oE 'pair [0-9]+' "$work/sl.err" | head -1 | cut -d' ' -f2)
          cnt=$(echo "$bad" | grep -c .)
          ((cnt == 0)) && cnt=1
          differences=$((differences + cnt))
          first=$(echo "$bad" | head -1)
          echo "DIFFERENCE: $f, $np ranks, config $c, seed $s: $cnt pair(s): $(echo $bad | head -c 300)"
          if [[ -n $first ]]; then
            echo "  pair $first, bare:"; grep -E " i=$first " "$work/bare.d" | sed 's/^/    /'
            echo "  pair $first, sluice:"; grep -E " i=$first " "$work/sl.d" | sed 's/^/    /'
            echo "  description:"; "$exe" "$s" 1 "$first" -d 2>/dev/null | grep '^#' | sed 's/^/    /'
          fi
          grep -v '^  ' "$work/sl.err" | grep -v '^\[WARNING\] yaksa' | head -8 | sed 's/^/  stderr: /'
          env_words=$(config_env "$c")
          echo "  replay: $(echo "$cmdline" | sed -E "s# $exe $s $n\$##") $exe $s 1 ${first:-0}   (env: ${env_words:-defaults})"
          ((keep)) || { stop=1; done_pairs[$f]=$((done_pairs[$f] + n)); total=$((total + n)); break 3; }
        fi
      done
      done_pairs[$f]=$((done_pairs[$f] + n))
      total=$((total + n))
    done
  done
  echo "seed $s done: $total pairs, $differences differences ($((SECONDS - start)) s)"
  s=$((s + 1))
  alldone=1
  for f in $flavors; do ((done_pairs[$f] < pairs)) && alldone=0; done
  ((alldone)) && stop=1
  ((limit > 0 && SECONDS - start >= limit)) && stop=1
done
for f in $flavors; do echo "$f: ${done_pairs[$f]} pairs"; done
echo "$total pairs, $differences differences ($((SECONDS - start)) s, seeds $seed..$((s - 1)))"
((differences == 0))
