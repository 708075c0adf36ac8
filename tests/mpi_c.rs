//! C applications under the real launcher with `libsluice.so` preloaded, at 2 and 4 ranks.

mod common;
use common::*;

const RINGS: u64 = 25; // tests/c/ring.c: ROUNDS

#[test]
fn ring_calls_are_intercepted_and_counted_exactly() {
    let exe = compile_c("ring");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("ring");
        assert_eq!(job.stat_calls("p2p"), Some(2 * RINGS * np as u64), "np={np}\n{}", job.all());
        assert_eq!(job.stat_calls("init"), Some(np as u64), "np={np}\n{}", job.all());
    }
}

#[test]
fn every_family_goes_through_sluice() {
    let exe = compile_c("families");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("families");
        for fam in ["init", "p2p", "persistent", "probe", "completion", "datatype", "pack", "comm"] {
            assert!(job.stat_calls(fam).unwrap_or(0) > 0, "np={np}: no {fam} calls counted\n{}", job.all());
        }
    }
}

#[test]
fn bare_mpi_runs_the_same_programs() {
    // The programs themselves are correct MPI: they pass without the shim too.
    for name in ["ring", "families"] {
        let exe = compile_c(name);
        launch(2, &exe, &[], None).assert_pass(name);
    }
}

#[test]
fn disable_is_pure_pass_through() {
    let exe = compile_c("families");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_DISABLE", "1"), ("SLUICE_STATS", "1"), ("SLUICE_LOG", "info")]);
        job.assert_pass("families");
        assert!(!job.stderr.contains("[sluice"), "disabled sluice printed something:\n{}", job.all());
    }
}

#[test]
fn bad_setting_stops_mpi_init_with_a_clear_message() {
    let exe = compile_c("ring");
    for (var, val, accepted) in
        [("SLUICE_STATS", "maybe", "yes"), ("SLUICE_LOG", "loud", "debug"), ("SLUICE_TEST_PANIC", "MPI_Bogus", "intercepted")]
    {
        // One rank: every rank stops in its own MPI_Init, and with two the first to stop can
        // take its shared memory away while the other's MPI is still connecting to it (MPICH's
        // UCX then fails inside MPI_Init and the launcher may cut the first rank's message).
        let job = launch_shim(1, &exe, &[(var, val)]);
        let all = job.all();
        assert!(!job.ok, "{var}={val} did not stop the job:\n{all}");
        assert!(!job.stdout.contains("PASS"), "{var}={val}: application ran past MPI_Init:\n{all}");
        assert!(all.contains(&format!("{var}=\"{val}\"")) && all.contains(accepted), "{var}: unclear message:\n{all}");
        assert!(all.contains("[MPI_ERR_ARG]"), "{var}: not reported as MPI_ERR_ARG:\n{all}");
    }
}

#[test]
fn disable_bypasses_a_broken_setting() {
    let exe = compile_c("ring");
    launch_shim(2, &exe, &[("SLUICE_DISABLE", "yes"), ("SLUICE_STATS", "maybe")]).assert_pass("ring");
}

#[test]
fn panic_inside_sluice_is_err_intern_through_the_error_handler() {
    let exe = compile_c("errors");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_TEST_PANIC", "MPI_Send")]);
        job.assert_pass("errors");
        assert!(job.stderr.contains("internal error in MPI_Send") && job.stderr.contains("[MPI_ERR_INTERN]"), "{}", job.all());
    }
}

#[test]
fn panic_with_fatal_handler_aborts_the_job() {
    let exe = compile_c("errors");
    let so = shim();
    let job = {
        // errors.c takes "fatal" as argv[1]: pass it through a tiny wrapper script.
        let dir = std::env::temp_dir().join(format!("sluice-fatal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("fatal.sh");
        std::fs::write(&script, format!("#!/bin/sh\nexec {} fatal\n", exe.display())).unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
        let job = launch(2, &script, &[("SLUICE_TEST_PANIC", "MPI_Send")], Some(so.to_str().unwrap()));
        let _ = std::fs::remove_dir_all(&dir);
        job
    };
    assert!(!job.ok && !job.stdout.contains("PASS"), "fatal handler did not abort:\n{}", job.all());
    assert!(job.stderr.contains("internal error in MPI_Send") && job.stderr.contains("[MPI_ERR_INTERN]"), "{}", job.all());
}

#[test]
fn log_lines_are_rank_prefixed() {
    let exe = compile_c("ring");
    let job = launch_shim(2, &exe, &[("SLUICE_LOG", "info")]);
    job.assert_pass("ring");
    for r in 0..2 {
        assert!(job.stderr.contains(&format!("[sluice r{r}] info: sluice ")), "rank {r}:\n{}", job.all());
    }
}

#[test]
fn sluice_stacks_in_front_of_another_pmpi_tool() {
    let exe = compile_c("ring");
    let tool = compile_c_tool("countertool");
    let preload = format!("{}:{}", shim().display(), tool.display());
    for np in [2u32, 4] {
        let job = launch(np, &exe, &[("SLUICE_STATS", "1")], Some(&preload));
        job.assert_pass("ring");
        for r in 0..np {
            assert!(job.stdout.contains(&format!("countertool: rank {r} saw {RINGS} MPI_Send")), "{}", job.all());
        }
        assert_eq!(job.stat_calls("p2p"), Some(2 * RINGS * np as u64), "{}", job.all());
    }
}

#[test]
fn sluice_linked_in_front_of_the_mpi_works_alone_and_preloaded_too() {
    // `-lsluice` before the MPI's libraries (mpicc appends them): sluice's MPI_Send is the one
    // the program binds to, and its next definition is the MPI's. Preloading the same library
    // as well must not make sluice forward a call to itself.
    let exe = compile_linked("tests/c", "ring");
    let so = shim();
    for preload in [None, Some(so.to_str().unwrap())] {
        let job = launch(2, &exe, &[("SLUICE_STATS", "1")], preload);
        job.assert_pass("ring");
        assert_eq!(job.stat_calls("p2p"), Some(2 * RINGS * 2), "preload {preload:?}\n{}", job.all());
    }
}

#[test]
fn processes_without_mpi_are_untouched() {
    let so = shim();
    let out = std::process::Command::new("sh")
        .args(["-c", "echo hello; ls / >/dev/null"])
        .env("LD_PRELOAD", &so)
        .env("SLUICE_STATS", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn globally_exported_preload_reaches_launcher_and_ranks() {
    // An admin exporting LD_PRELOAD for the whole job loads sluice into the launcher and its
    // daemons too; they never call MPI_Init, so sluice must stay inert there.
    let exe = compile_c("ring");
    let _g = serial();
    let mut cmd = std::process::Command::new("timeout");
    cmd.arg("180").env("LD_PRELOAD", shim()).env("SLUICE_STATS", "1");
    if FLAVOR == "openmpi" {
        cmd.args(["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root", "-np", "2"]);
    } else {
        cmd.args(["mpiexec.mpich", "-np", "2"]);
    }
    let job = collect(cmd.arg(&exe).output().unwrap());
    job.assert_pass("ring");
    assert_eq!(job.stat_calls("p2p"), Some(2 * RINGS * 2), "{}", job.all());
}

#[test]
fn extension_api_disables_and_reenables_at_run_time() {
    let exe = compile_c("extension_api");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("extension_api");
        // 3 + 2 Sendrecv per rank went through sluice; the 5 made while disabled did not.
        // The table is printed twice (sluice_stats_dump, then MPI_Finalize): both show 5 per rank.
        assert_eq!(job.stat_calls("p2p"), Some(5 * np as u64), "{}", job.all());
        assert_eq!(job.stderr.matches("[sluice] statistics").count(), 2, "{}", job.all());
    }
}

#[test]
fn thread_multiple_calls_are_all_intercepted() {
    let exe = compile_c("threads");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("threads");
        // Per rank: 4 threads x 50 rounds x (Irecv + Isend) p2p calls and one Waitall each.
        assert_eq!(job.stat_calls("p2p"), Some(4 * 50 * 2 * np as u64), "{}", job.all());
        assert_eq!(job.stat_calls("completion"), Some(4 * 50 * np as u64), "{}", job.all());
    }
}

#[test]
fn a_type_per_message_on_every_thread_lands_exactly() {
    // Fresh types of repeating constructions on 4 threads per rank share compiled forms
    // (datatype::form_cache); at the minimum pipeline threshold every kind but the smallest is
    // pipelined.
    let exe = compile_c("type_per_message");
    for (np, env) in [(2u32, vec![]), (4, vec![]), (2, vec![("SLUICE_PIPELINE_THRESHOLD", "128")])] {
        launch_shim(np, &exe, &env).assert_pass("type_per_message");
    }
}

#[test]
fn pack_and_unpack_run_on_sluices_engine_and_match_the_mpi() {
    let exe = compile_c("pack");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), ("PACK_EXPECT_ENGINE", "1")]);
        job.assert_pass("pack");
        assert!(job.stat_calls("ddt-engine").unwrap_or(0) > 0, "engine not used:\n{}", job.all());
    }
    // The same checks hold with the engine switched off (everything left to the MPI).
    let job = launch_shim(2, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_DATATYPE", "0")]);
    job.assert_pass("pack");
    assert_eq!(job.stat_calls("ddt-engine"), Some(0), "{}", job.all());
}

#[test]
fn p2p_of_noncontiguous_types_runs_on_sluices_engine() {
    let exe = compile_c("p2p_engine");
    launch(2, &exe, &[], None).assert_pass("p2p_engine"); // the checks hold for the bare MPI
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("p2p_engine");
        assert!(job.stat_calls("ddt-engine").unwrap_or(0) > 0, "engine not used:\n{}", job.all());
    }
    // The large-block 4 MiB message (section 8) goes to the MPI's engine under the plain rule
    // (SLUICE_P2P_MPI_ABOVE=4M, both MPIs): turning the rule off adds exactly one pack and one
    // unpack per rank (each rank sends and receives it) to the engine's calls. By default Open
    // MPI applies that rule at every size; MPICH's automatic rule keeps it with sluice when the
    // peer shares the node (the arena pipeline is faster there) and leaves it to the MPI across
    // nodes. (Engine choice pinned to sluice's: a message whose direction learned the MPI's
    // engine would leave sluice's path after a timing-dependent number of calls.)
    const PINNED: (&str, &str) = ("SLUICE_PACK_ENGINE", "sluice");
    for np in [2u32, 4] {
        let calls = |j: &Job| j.stat_calls("ddt-engine").unwrap_or(0);
        let plain = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_P2P_MPI_ABOVE", "4M"), PINNED]);
        let rule_off = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_P2P_MPI_ABOVE", "off"), PINNED]);
        // (The per-type path contest off: the counts compare the rules.)
        let by_default = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), PINNED, ("SLUICE_P2P_LEARN", "0")]);
        for j in [&plain, &rule_off, &by_default] {
            j.assert_pass("p2p_engine");
        }
        assert_eq!(calls(&rule_off), calls(&plain) + 2 * np as u64, "{}\n{}", plain.all(), rule_off.all());
        let like = if FLAVOR == "mpich" && cluster_nodes() <= 1 { &rule_off } else { &plain };
        assert_eq!(calls(&by_default), calls(like), "{}\n{}", by_default.all(), like.all());
    }
    // Protocol off: everything left to the MPI, same results.
    let job = launch_shim(2, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_P2P", "0")]);
    job.assert_pass("p2p_engine");
    assert_eq!(job.stat_calls("ddt-engine"), Some(0), "{}", job.all());
}

#[test]
fn p2p_of_interpreted_types_is_exact_and_left_to_open_mpis_engine() {
    let exe = compile_c("p2p_interp");
    launch(2, &exe, &[], None).assert_pass("p2p_interp");
    for np in [2u32, 4] {
        let calls = |j: &Job| j.stat_calls("ddt-engine").unwrap_or(0);
        // Engine choice pinned to sluice's, as in `p2p_engine`, and no learning of the path per
        // type: the counts compare the rules.
        let pinned = ("SLUICE_PACK_ENGINE", "sluice");
        let rules = ("SLUICE_P2P_LEARN", "0");
        let by_default = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), pinned, rules]);
        let rule_off = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_P2P_MPI_ABOVE", "off"), pinned, rules]);
        for j in [&by_default, &rule_off] {
            j.assert_pass("p2p_interp");
        }
        // The kernel-served type U is sluice's on both MPIs; the interpreted T is Open MPI's
        // engine's by default (faster than sluice's interpreter there) and sluice's with the
        // automatic rule off, and sluice's on MPICH either way (faster than MPICH's engine).
        assert!(calls(&by_default) > 0, "{}", by_default.all());
        if FLAVOR == "openmpi" {
            assert!(calls(&rule_off) > calls(&by_default), "{}\n{}", by_default.all(), rule_off.all());
        } else {
            assert_eq!(calls(&rule_off), calls(&by_default), "{}\n{}", by_default.all(), rule_off.all());
        }
    }
}

#[test]
fn parallel_pack_and_unpack_match_the_mpi() {
    // SLUICE_PARALLEL_MIN=0 and epsilon 10 put every large operation of pack_parallel.c on the
    // workers (the small appends stay serial: waking the pool costs more than epsilon allows).
    let exe = compile_c("pack_parallel");
    launch(2, &exe, &[], None).assert_pass("pack_parallel");
    const LARGE_OPS: u64 = 2 * 15; // per rank: one pack, one unpack per type (pack_types.h)
    for (np, threads) in [(2u32, "2"), (4, "2"), (2, "4")] {
        let env = [("SLUICE_STATS", "1"), ("SLUICE_PARALLEL_MIN", "0"), ("SLUICE_THREADS", threads), ("SLUICE_CKPT_EPSILON", "10")];
        let job = launch_shim(np, &exe, &env);
        job.assert_pass("pack_parallel");
        assert_eq!(job.stat_calls("ddt-parallel"), Some(LARGE_OPS * np as u64), "np={np} threads={threads}\n{}", job.all());
    }
    // Two application threads at once (MPI_THREAD_MULTIPLE): one finds the pool busy and runs
    // serially; the data is right either way.
    let env = [
        ("SLUICE_STATS", "1"),
        ("SLUICE_PARALLEL_MIN", "0"),
        ("SLUICE_THREADS", "2"),
        ("SLUICE_CKPT_EPSILON", "10"),
        ("PACKPAR_THREADS", "1"),
    ];
    let job = launch_shim(2, &exe, &env);
    job.assert_pass("pack_parallel");
    assert!(job.stat_calls("ddt-parallel").unwrap_or(0) >= LARGE_OPS * 2, "{}", job.all());
    // One worker: never parallel.
    let job = launch_shim(2, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_PARALLEL_MIN", "0"), ("SLUICE_THREADS", "1")]);
    job.assert_pass("pack_parallel");
    assert_eq!(job.stat_calls("ddt-parallel"), Some(0), "{}", job.all());
    // pack.c's small operations with the threshold at 0 (epsilon keeps most serial).
    let job = launch_shim(2, &compile_c("pack"), &[("SLUICE_PARALLEL_MIN", "0"), ("SLUICE_THREADS", "2"), ("SLUICE_CKPT_EPSILON", "10")]);
    job.assert_pass("pack");
}

#[test]
fn datatype_hints_are_honoured() {
    let exe = compile_c("hints");
    launch(2, &exe, &[], None).assert_pass("hints"); // no sluice: no hints, same data
    let base = [("SLUICE_STATS", "1"), ("SLUICE_THREADS", "2"), ("SLUICE_PARALLEL_MIN", "1M")];
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &base);
        job.assert_pass("hints");
        assert!(!job.stdout.contains("keyval not freed"), "{}", job.all());
        // hints.c: 5 of its 11 operations per rank may go parallel under their hints.
        assert_eq!(job.stat_calls("ddt-parallel"), Some(5 * np as u64), "np={np}\n{}", job.all());
    }
    // A 300-byte budget holds one table of 2 checkpoints (SLUICE_THREADS=2) of hints.c's
    // interpreter types (types with a kernel run ranges without checkpoints).
    for (case, tables) in [("priority", 4u64), ("lru", 6)] {
        let mut env = base.to_vec();
        env.extend([("SLUICE_CKPT_MEMORY", "300"), ("HINTS_CASE", case)]);
        let job = launch_shim(2, &exe, &env);
        job.assert_pass("hints");
        assert_eq!(job.stat_calls("ddt-parallel"), Some(6 * 2), "{case}\n{}", job.all());
        assert_eq!(job.stat_calls("ddt-ckpt"), Some(tables * 2), "{case}\n{}", job.all());
    }
    // Disabled: no keyvals (MPI_KEYVAL_INVALID), the program runs without hints.
    let job = launch_shim(2, &exe, &[("SLUICE_DISABLE", "1")]);
    job.assert_pass("hints");
    assert!(job.stdout.contains("hints unavailable"), "{}", job.all());
}

#[test]
fn one_sided_and_file_calls_pass_through_unchanged() {
    // sluice intercepts them only to refuse device buffers (docs/gpu.md): host buffers must
    // behave exactly as with the bare MPI, and the calls are counted.
    let exe = compile_c("rma_io");
    launch(2, &exe, &[], None).assert_pass("rma_io");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("rma_io");
        assert!(job.stat_calls("rma-io").unwrap_or(0) >= 8 * np as u64, "np={np}: one-sided/file calls not counted\n{}", job.all());
    }
}

#[test]
fn point_to_point_messages_teach_the_engine_choice_and_stay_exact_on_either_engine() {
    let exe = compile_c("p2p_choice");
    launch(2, &exe, &[], None).assert_pass("p2p_choice");
    for np in [2u32, 4] {
        // The path contest off: a send it gives the MPI's engine teaches no packing, and this
        // counts the decisions of the rules' staged sends.
        let job = launch_shim(np, &exe, &[("SLUICE_LOG", "debug"), ("SLUICE_P2P_LEARN", "0")]);
        job.assert_pass("p2p_choice");
        let all = job.all();
        let count = |what: &str| all.lines().filter(|l| l.contains(what)).count();
        // 19 types per sending pair, each sent in 12 rounds of at least 20 KB: senders decide
        // the packing, receivers (6 blocking receives) the unpacking of every type that takes
        // sluice's path: all but the contiguous one and, on Open MPI, the 192-byte blocks
        // (large blocks are the MPI's there).
        let pairs = np as usize / 2;
        assert!(count("Pack by ") >= 17 * pairs && count("Unpack by ") >= 17 * pairs, "np={np}: too few decisions:\n{all}");
    }
    for policy in ["mpi", "sluice"] {
        let job = launch_shim(2, &exe, &[("SLUICE_PACK_ENGINE", policy), ("SLUICE_LOG", "debug")]);
        job.assert_pass("p2p_choice");
        assert!(!job.all().contains(" by Mpi ") && !job.all().contains(" by Sluice "), "{policy}: nothing is learned:\n{}", job.all());
    }
}

#[test]
fn pack_engine_choice_learns_per_type_and_every_call_matches_the_mpi() {
    let exe = compile_c("pack_choice");
    // auto: each type's first large calls are split between the two engines, then one serves.
    let job = launch_shim(2, &exe, &[("SLUICE_LOG", "debug")]);
    job.assert_pass("pack_choice");
    let all = job.all();
    let decisions = all.lines().filter(|l| l.contains("Pack by ") || l.contains("Unpack by ")).count();
    // 19 types, both directions, both ranks: the ones whose calls reach 2 KiB decide.
    assert!(decisions >= 2 * 2 * 15, "too few engine decisions logged ({decisions}):\n{all}");
    // The seven types of one element of 256 KiB or more learn from prefixes of it: at least one
    // such call per type, direction and rank.
    let prefixes: std::collections::HashSet<&str> = all.lines().filter(|l| l.contains("learns from a prefix")).collect();
    assert!(prefixes.len() >= 7 * 2 * 2, "too few types learned from prefixes:\n{all}");
    // Forced engines: under `mpi` the calls below SLUICE_PARALLEL_MIN go to the MPI unchanged
    // (the route a learned MPI decision takes, which timing decides and no test can force), so
    // sluice's engine serves fewer operations than under `sluice`; every call's bytes, positions
    // and error classes are still checked against the bare MPI by the program.
    let mut engine_calls = Vec::new();
    for policy in ["mpi", "sluice"] {
        let job = launch_shim(2, &exe, &[("SLUICE_PACK_ENGINE", policy), ("SLUICE_LOG", "debug"), ("SLUICE_STATS", "1")]);
        job.assert_pass("pack_choice");
        assert!(!job.all().contains(" by Mpi ") && !job.all().contains(" by Sluice "), "{policy}: nothing is learned:\n{}", job.all());
        assert!(!job.all().contains("+mpi"), "{policy}: no decision to show:\n{}", job.all());
        engine_calls.push(job.stat_calls("ddt-engine").unwrap_or(0));
    }
    assert!(engine_calls[0] < engine_calls[1], "`mpi` forwards no call: engine operations {engine_calls:?}");
}
