#!/usr/bin/env bash
# Sanitizers and memory checkers over sluice (docs/sanitizers.md):
#
#   asan-build  libsluice.so built with AddressSanitizer (nightly, -Zsanitizer=address, plus
#               -Zub-checks=yes: the standard library's debug checks of unsafe preconditions),
#               one per MPI, in target/asan-<mpi>/x86_64-unknown-linux-gnu/release/
#   asan-mpi    the C test programs (tests/c) under each MPI's launcher at 2 ranks with that
#               library preloaded after GCC's ASan runtime (libasan.so.8: the MPIs and the
#               programs are not instrumented, but every malloc gets redzones and sluice's own
#               loads, stores and memcpy calls are checked), at the defaults and, for the
#               point-to-point programs, with pipeline thresholds at their minimum
#   asan-unit   the Rust unit tests (cargo test --lib) built with ASan
#   miri        Miri over the unit tests of the pure-Rust datatype modules (IR, normalizer,
#               interpreter, checkpoints, segments, test generator)
#
# Usage: scripts/sanitize.sh [STEP...]   (default: all four; MPIs from SANITIZE_MPIS,
#        default "openmpi mpich")
# Environment: SANITIZE_OUT (reports, default target/sanitize), SANITIZE_TIMEOUT (s per MPI job,
#              default 300), MIRI_TIMEOUT (s for the Miri run, default 3600), SANITIZE_PROGRAMS
#              (only these C programs, space-separated names), SANITIZE_SO_<mpi> (an ASan
#              libsluice.so built elsewhere, e.g. with a patch applied, for asan-mpi).
#
# Sanitizer reports whose stack goes through libsluice.so (or sluice's Rust code) fail the
# script, and so do runs that fail without a report (a program's own checks, a crash); ASan and
# LeakSanitizer reports entirely inside the MPIs' libraries are suppressed by
# scripts/sanitize/{asan,lsan}.supp, and any that still appear are listed in the summary.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
steps=("$@")
((${#steps[@]})) || steps=(asan-build asan-mpi asan-unit miri)
mpis=${SANITIZE_MPIS:-openmpi mpich}
out=${SANITIZE_OUT:-$root/target/sanitize}
limit=${SANITIZE_TIMEOUT:-300}
miri_limit=${MIRI_TIMEOUT:-3600}
triple=x86_64-unknown-linux-gnu
libasan=$(gcc -print-file-name=libasan.so)
asan_flags="-Zsanitizer=address -Zub-checks=yes -Cforce-frame-pointers=yes"
mkdir -p "$out"
rm -rf "${out:?}/reports"
mkdir -p "$out/reports"

while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^SLUICE_' || true)
unset LD_PRELOAD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1

summary=()
sluice_findings=0 # sanitizer reports naming sluice
failed_runs=0     # runs that failed without a sanitizer report (wrong results, crashes)
note() { summary+=("$*"); echo "sanitize: $*"; }

has_step() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

asan_so() { echo "$root/target/asan-$1/$triple/release/libsluice.so"; }

# ---- ASan build --------------------------------------------------------------------------------
if has_step asan-build; then
    for mpi in $mpis; do
        t0=$SECONDS
        if RUSTFLAGS="$asan_flags" SLUICE_MPI=$mpi cargo +nightly build --release --locked --target $triple \
            --target-dir "target/asan-$mpi" --lib >"$out/build-$mpi.log" 2>&1; then
            note "asan-build $mpi: ok ($((SECONDS - t0)) s)"
        else
            tail -20 "$out/build-$mpi.log"
            note "asan-build $mpi: FAILED (see $out/build-$mpi.log)"
            exit 2
        fi
    done
fi

# Classifies the ASan/LSan report files in $1 (one per process: asan.<pid>): a report that names
# sluice (libsluice.so, or a Rust path under src/) is a finding in sluice; others are the MPIs'.
classify() {
    local dir=$1 label=$2 f
    for f in "$dir"/asan.*; do
        [ -e "$f" ] || continue
        local kind
        kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer): [a-zA-Z-]+|runtime error: .*|unsafe precondition\(s\) violated: .*' "$f" || echo "report")
        if grep -qE 'libsluice\.so|/src/(datatype|protocol|transfer|intercept|ffi)/|sluice::' "$f"; then
            sluice_findings=$((sluice_findings + 1))
            cp "$f" "$out/reports/sluice-$label-$(basename "$f")"
            note "FINDING in sluice: $label: $kind ($out/reports/sluice-$label-$(basename "$f"))"
        else
            cp "$f" "$out/reports/mpi-$label-$(basename "$f")"
            note "report outside sluice (the MPI's): $label: $kind ($out/reports/mpi-$label-$(basename "$f"))"
        fi
    done
}

# ---- the C programs under ASan -----------------------------------------------------------------
# name|success pattern|extra environment (NAME=VALUE ...)|p2p (1: also at minimum thresholds)
programs=(
    "ring|PASS ring||0"
    "families|PASS families||0"
    "threads|PASS threads||0"
    "extension_api|PASS extension_api||0"
    "pack|PASS pack|PACK_EXPECT_ENGINE=1|0"
    "pack_parallel|PASS pack_parallel|SLUICE_PARALLEL_MIN=0 SLUICE_THREADS=2 SLUICE_CKPT_EPSILON=10|0"
    "hints|PASS hints||0"
    "coll_check|PASS coll_check||0"
    "coll_transpose|PASS coll_transpose||0"
    "p2p_engine|PASS p2p_engine||1"
    "p2p_conf_basic|p2p_conf_basic: OK (||1"
    "p2p_conf_match|p2p_conf_match: OK (||1"
    "p2p_conf_requests|p2p_conf_requests: OK (||1"
    "p2p_conf_probe|p2p_conf_probe: OK (||1"
    "p2p_conf_threads|p2p_conf_threads: OK (||1"
    "p2p_pipeline|p2p_pipeline: OK (||1"
    "p2p_thread_stress|p2p_thread_stress: OK (||1"
)
min_env="SLUICE_PIPELINE_THRESHOLD=128 SLUICE_PIPELINE_CHUNK=64 SLUICE_PIPELINE_DEPTH=2"

if has_step asan-mpi; then
    asan_opts="log_path=@DIR@/asan:detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86"
    asan_opts+=":suppressions=$root/scripts/sanitize/asan.supp:detect_odr_violation=0:handle_segv=0"
    asan_opts+=":allow_user_segv_handler=1:detect_stack_use_after_return=0:print_suppressions=0"
    # Full (DWARF) unwinding at malloc: the MPIs are built without frame pointers, and the fast
    # unwinder stops in their first frame, so suppressions could not see who allocated.
    asan_opts+=":fast_unwind_on_malloc=0:malloc_context_size=40"
    lsan_opts="suppressions=$root/scripts/sanitize/lsan.supp:print_suppressions=0"
    for mpi in $mpis; do
        so_var=SANITIZE_SO_$mpi
        so=${!so_var:-$(asan_so "$mpi")}
        [ -f "$so" ] || { note "asan-mpi $mpi: $so missing (run the asan-build step)"; exit 2; }
        bin=$out/bin-$mpi
        mkdir -p "$bin"
        pass=0 fail=0 t0=$SECONDS
        for p in "${programs[@]}"; do
            IFS='|' read -r name ok extra p2p <<<"$p"
            if [ -n "${SANITIZE_PROGRAMS:-}" ] && [[ " $SANITIZE_PROGRAMS " != *" $name "* ]]; then continue; fi
            "mpicc.$mpi" -O1 -g -pthread -I tests/c "tests/c/$name.c" -o "$bin/$name" 2>"$bin/$name.cc.log" ||
                { note "asan-mpi $mpi $name: does not compile"; fail=$((fail + 1)); continue; }
            cfgs=(default)
            [ "$p2p" = 1 ] && cfgs+=(min)
            for cfg in "${cfgs[@]}"; do
                label=$mpi-$name-$cfg
                dir=$out/run-$label
                rm -rf "$dir" && mkdir -p "$dir"
                env_list="$extra"
                [ "$cfg" = min ] && env_list="$env_list $min_env"
                vars=("LD_PRELOAD=$libasan:$so" "ASAN_OPTIONS=${asan_opts//@DIR@/$dir}" "LSAN_OPTIONS=$lsan_opts")
                # Open MPI unloads its components in MPI_Finalize: LeakSanitizer, which reports at
                # exit, could then not name their frames (or named the module mapped there since).
                [ "$mpi" = openmpi ] && vars+=(OMPI_MCA_mca_base_component_disable_dlclose=1)
                for kv in $env_list; do vars+=("$kv"); done
                args=()
                for kv in "${vars[@]}"; do
                    if [ "$mpi" = openmpi ]; then args+=(-x "$kv"); else args+=(-env "${kv%%=*}" "${kv#*=}"); fi
                done
                if [ "$mpi" = openmpi ]; then
                    launch=(mpirun.openmpi --oversubscribe -np 2 "${args[@]}")
                else
                    launch=(mpiexec.mpich -np 2 "${args[@]}")
                fi
                rc=0
                timeout "$limit" "${launch[@]}" "$bin/$name" >"$dir/output.log" 2>&1 || rc=$?
                classify "$dir" "$label"
                if [ "$rc" -eq 0 ] && grep -qF "$ok" "$dir/output.log"; then
                    pass=$((pass + 1))
                else
                    fail=$((fail + 1))
                    if ls "$dir"/asan.* >/dev/null 2>&1; then
                        note "asan-mpi $label: FAILED with a sanitizer report (exit $rc; output in $dir/output.log)"
                    else
                        failed_runs=$((failed_runs + 1)) # the program's own checks failed (or it crashed)
                        note "asan-mpi $label: FAILED without a sanitizer report: the program's checks (exit $rc; output in $dir/output.log)"
                        grep -m3 -E 'check failed|FATAL|Segmentation' "$dir/output.log" | cut -c1-240 | sed 's/^/    /'
                    fi
                fi
            done
        done
        note "asan-mpi $mpi: $pass runs passed, $fail failed ($((SECONDS - t0)) s)"
    done
fi

# ---- unit tests under ASan ---------------------------------------------------------------------
if has_step asan-unit; then
    mpi=${mpis%% *}
    t0=$SECONDS
    log=$out/asan-unit.log
    # LeakSanitizer: the unit tests' leaks (statics, thread pools) are not interesting here; the
    # leak counters of the C programs cover the protocol's resources.
    if RUSTFLAGS="$asan_flags" ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0 SLUICE_MPI=$mpi \
        cargo +nightly test --release --locked --target $triple --target-dir "target/asan-$mpi" --lib \
        -- --test-threads=2 >"$log" 2>&1; then
        note "asan-unit ($mpi build): $(grep -E '^test result' "$log" | tail -1) ($((SECONDS - t0)) s)"
    else
        if grep -qE 'ERROR: AddressSanitizer|unsafe precondition' "$log"; then
            sluice_findings=$((sluice_findings + 1))
            note "FINDING in sluice: asan-unit: $(grep -m1 -E 'ERROR: AddressSanitizer|unsafe precondition' "$log") ($log)"
        else
            note "asan-unit: FAILED without a sanitizer report ($log)"
            failed_runs=$((failed_runs + 1))
        fi
    fi
fi

# ---- Miri over the pure-Rust datatype modules --------------------------------------------------
# Module filters; tests that cannot run under Miri (FFI: none in these modules) or take too long
# there are skipped by name (docs/sanitizers.md lists them and why).
miri_modules=(datatype::ir:: datatype::normalize:: datatype::interp:: datatype::checkpoint:: datatype::segment:: datatype::testgen:: datatype::pool::)
miri_skip=(
    # proptest: 256-512 random cases each, each case a full pack/unpack walk: hours under Miri.
    datatype::interp::tests::pieces_match_whole
    datatype::interp::tests::seek_matches_linear_scan
    datatype::interp::tests::ranges_match_whole_walk
    datatype::checkpoint::tests::budget_never_exceeded
    datatype::segment::tests::resumes_like_the_interpreter
    datatype::segment::tests::catch_up_matches_seek
    # 2000 generated types normalized (a statistics test of the generator): over 15 min.
    datatype::testgen::tests::arb_dl_reaches_depth_4
    # A 100 000-block indexed type normalized and searched: about 15 min (passed once).
    datatype::interp::tests::seek_in_wide_indexed
)
if has_step miri; then
    t0=$SECONDS
    log=$out/miri.log
    skip_args=()
    for s in "${miri_skip[@]}"; do skip_args+=(--skip "$s"); done
    if rustup +nightly component list --installed 2>/dev/null | grep -q '^miri'; then
        # Isolation off: proptest reads its regression files (proptest-regressions/).
        if SLUICE_MPI=${mpis%% *} MIRIFLAGS="-Zmiri-disable-isolation" timeout "$miri_limit" \
            cargo +nightly miri test --locked --target-dir target/miri --lib -- "${miri_modules[@]}" "${skip_args[@]}" \
            >"$log" 2>&1; then
            note "miri: $(grep -E '^test result' "$log" | tail -1) ($((SECONDS - t0)) s; skipped: ${miri_skip[*]##*::})"
        else
            if grep -qE 'Undefined Behavior|error: unsupported operation' "$log"; then
                sluice_findings=$((sluice_findings + 1))
                note "FINDING in sluice: miri: $(grep -m1 -E 'Undefined Behavior|unsupported operation' "$log") ($log)"
            else
                note "miri: FAILED or timed out after $((SECONDS - t0)) s ($log)"
                failed_runs=$((failed_runs + 1))
            fi
        fi
    else
        note "miri: not installed (rustup +nightly component add miri rust-src)"
    fi
fi

echo
echo "sanitize.sh summary:"
printf '  %s\n' "${summary[@]}"
echo "sanitizer findings in sluice: $sluice_findings"
echo "runs failed without a sanitizer report: $failed_runs"
[ "$sluice_findings" -eq 0 ] && [ "$failed_runs" -eq 0 ]
