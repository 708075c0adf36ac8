//! Unit tests of the levels engine without MPI: specs, the registry's error cases, transfer-list
//! checks, smp and disk runtimes moving data, task calls, barriers, composition, and the interval
//! map of distributed arrays.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;

use super::array::{pieces, Part, MAX_DIMS};
use super::*;

fn spec(s: &str) -> Spec {
    Spec::parse(s).unwrap()
}

fn no_tasks() -> Arc<Vec<Task>> {
    Arc::new(Vec::new())
}

fn open_top(s: &str, tasks: Arc<Vec<Task>>) -> Arc<Runtime> {
    open(spec(s), tasks).unwrap().expect("a local top")
}

fn shape(n: usize) -> Shape {
    Shape::new(8, &[n]).unwrap()
}

#[test]
fn specs_parse_and_refuse_with_reasons() {
    let s = spec("disk/smp:2@64M");
    assert_eq!(s.levels.len(), 2);
    assert_eq!(s.levels[0], LevelSpec { kind: Kind::Disk, children: None, memory: None });
    assert_eq!(s.levels[1], LevelSpec { kind: Kind::Smp, children: Some(2), memory: Some(64 << 20) });
    assert_eq!(spec("cluster/smp:3@1K").text(), "cluster/smp:3@1024");
    for (bad, why) in [
        ("", "empty"),
        ("tape", "unknown level kind"),
        ("smp:0", "not a number"),
        ("smp:x", "not a number"),
        ("disk:2", "one child"),
        ("cluster:4", "ranks"),
        ("smp/cluster", "must be the top"),
        ("smp@0", "byte count"),
        ("smp@12Q", "byte count"),
    ] {
        match Spec::parse(bad) {
            Err(Error::Spec(m)) => assert!(m.contains(why), "{bad}: {m}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn shapes_check_their_extents() {
    assert!(Shape::new(0, &[4]).is_err());
    assert!(Shape::new(4, &[]).is_err());
    assert!(Shape::new(4, &[1; MAX_DIMS + 1]).is_err());
    assert!(Shape::new(4, &[3, 0]).is_err());
    assert!(Shape::new(8, &[usize::MAX / 4, 4]).is_err());
    let s = Shape::new(4, &[3, 5, 2]).unwrap();
    assert_eq!((s.elements(), s.bytes()), (30, 120));
}

#[test]
fn registry_reports_each_misuse_with_its_code() {
    let rt = open_top("smp:1", no_tasks());
    let a = rt.alloc(shape(10), 1, 0).unwrap();
    assert_eq!(rt.alloc(shape(10), 1, 0).unwrap_err().code(), -20, "descriptor in use");
    assert_eq!(rt.alloc(shape(10), -3, 0).unwrap_err().code(), -20, "negative descriptor");
    assert_eq!(rt.alloc(shape(10), 2, 48).unwrap_err().code(), -2, "alignment");
    assert_eq!(rt.get(1).unwrap_err().code(), -20, "not registered yet");
    rt.add(&a).unwrap();
    assert_eq!(rt.add(&a).unwrap_err().code(), -20, "registered twice");
    assert_eq!(rt.get(1).unwrap(), a);
    assert_eq!(rt.home(1, 9), Ok(None), "one memory: no child holds it");
    assert_eq!(rt.home(1, 10).unwrap_err().code(), -21, "past the end");
    assert_eq!(rt.home(2, 0).unwrap_err().code(), -20, "unknown descriptor");
    rt.remove(1).unwrap();
    assert_eq!(rt.remove(1).unwrap_err().code(), -20);
    rt.free(&a).unwrap();
    assert_eq!(rt.free(&a).unwrap_err().code(), -27, "double free");
    assert_eq!(rt.add(&a).unwrap_err().code(), -27);
    let again = rt.alloc(shape(4), 1, 4096).unwrap();
    assert_eq!(again.data.unwrap() as usize % 4096, 0);
    rt.free(&again).unwrap();
    rt.close();
}

#[test]
fn a_memory_bound_refuses_what_does_not_fit() {
    let rt = open_top("smp:1@1K", no_tasks());
    let a = rt.alloc(shape(100), 1, 0).unwrap();
    assert_eq!(rt.memory_left(), 1024 - 800);
    assert_eq!(rt.alloc(shape(100), 2, 0).unwrap_err().code(), -23);
    rt.free(&a).unwrap();
    rt.alloc(shape(100), 2, 0).unwrap();
    assert_eq!(rt.stats().peak_bytes, 800);
}

/// Runs `f` as child 0 of a one-child runtime of `s` and waits.
fn as_child(rt: &Arc<Runtime>, f: impl Fn(&Child) + Send + Sync + 'static) {
    let out = Arc::new(Mutex::new(()));
    let task: Task = Arc::new(move |c: &Child, _: &[u8]| {
        let _g = out.lock().unwrap();
        f(c)
    });
    // The runtime's table is fixed at open: run through a runtime made for the task.
    let (s, d) = rt.spec();
    let own = Runtime::open(Arc::new(s.clone()), d, Arc::new(vec![task])).unwrap().unwrap();
    let a = own.alloc(shape(64), 7, 0).unwrap();
    own.add(&a).unwrap();
    own.call(0, 0, 1, &[]).unwrap().wait();
    own.close();
}

#[test]
fn transfer_lists_check_both_arrays() {
    let rt = open_top("smp:1", no_tasks());
    as_child(&rt, |c| {
        let top = c.rt.get(7).unwrap();
        let mut buf = [0f64; 8];
        let local = ArrayInfo { desc: LOCAL, shape: shape(8), data: Some(buf.as_mut_ptr().cast()) };
        let err = |d: &ArrayInfo, s: &ArrayInfo, di: usize, si: usize, n: usize| c.xfer_list(d, s, &[di], &[si], &[n]).unwrap_err().code();
        assert_eq!(err(&local, &top, 0, 60, 5), -21, "past the top array");
        assert_eq!(err(&local, &top, 4, 0, 5), -21, "past the local array");
        assert_eq!(err(&local, &top, 0, usize::MAX, 2), -21, "index overflow");
        assert_eq!(err(&local, &local, 0, 0, 1), -20, "both local");
        assert_eq!(err(&top, &top, 0, 0, 1), -20, "neither local");
        let bytes = ArrayInfo { desc: LOCAL, shape: Shape::new(1, &[64]).unwrap(), data: Some(buf.as_mut_ptr().cast()) };
        assert_eq!(err(&bytes, &top, 0, 0, 1), -2, "element sizes differ");
        let unknown = ArrayInfo { desc: 99, ..top };
        assert_eq!(err(&local, &unknown, 0, 0, 1), -20, "unknown descriptor");
        // Adjacent runs merge; empty runs vanish.
        let l = c.xfer_list(&local, &top, &[0, 2, 4, 5], &[10, 12, 0, 30], &[2, 2, 0, 3]).unwrap();
        assert_eq!(l.runs, vec![(80, 0, 32), (240, 40, 24)]);
        assert_eq!((l.bytes, l.dir), (56, Dir::Get));
    });
}

/// Data through an smp top: a put, a gather into a dense buffer (the datatype engine's indexed
/// kernel), a scatter run by run, and elision where the local side is the top's own memory.
#[test]
fn smp_transfers_copy_gather_scatter_and_elide() {
    let rt = open_top("smp:1", no_tasks());
    as_child(&rt, |c| {
        let top = c.rt.get(7).unwrap();
        let mut src: Vec<f64> = (0..64).map(|i| i as f64).collect();
        let whole = ArrayInfo { desc: LOCAL, shape: shape(64), data: Some(src.as_mut_ptr().cast()) };
        let put = c.xfer_list(&top, &whole, &[0], &[0], &[64]).unwrap();
        c.wait(c.xfer(&put).unwrap()).unwrap();
        let mut dense = [0f64; 8];
        let d = ArrayInfo { desc: LOCAL, shape: shape(8), data: Some(dense.as_mut_ptr().cast()) };
        let idx: Vec<usize> = (0..8).map(|i| 7 * i).collect();
        let gather = c.xfer_list(&d, &top, &(0..8).collect::<Vec<_>>(), &idx, &[1; 8]).unwrap();
        c.wait(c.xfer(&gather).unwrap()).unwrap();
        assert_eq!(dense, [0., 7., 14., 21., 28., 35., 42., 49.]);
        let mut sparse = [0f64; 16];
        let sp = ArrayInfo { desc: LOCAL, shape: shape(16), data: Some(sparse.as_mut_ptr().cast()) };
        let scatter = c.xfer_list(&sp, &top, &(0..8).map(|i| 2 * i).collect::<Vec<_>>(), &idx, &[1; 8]).unwrap();
        c.wait(c.xfer(&scatter).unwrap()).unwrap();
        assert!((0..8).all(|i| sparse[2 * i] == (7 * i) as f64 && sparse[2 * i + 1] == 0.));
        // A dense local buffer inside the top array itself (shared namespace): gathered run by
        // run, elements 0, 2, .. 14 into elements 32 .. 40.
        let inside = ArrayInfo { desc: LOCAL, shape: shape(8), data: top.data.map(|p| p.wrapping_add(32 * 8)) };
        let shift = c.xfer_list(&inside, &top, &(0..8).collect::<Vec<_>>(), &(0..8).map(|i| 2 * i).collect::<Vec<_>>(), &[1; 8]).unwrap();
        c.wait(c.xfer(&shift).unwrap()).unwrap();
        let mut now = [0f64; 64];
        let all = ArrayInfo { desc: LOCAL, shape: shape(64), data: Some(now.as_mut_ptr().cast()) };
        c.wait(c.xfer(&c.xfer_list(&all, &top, &[0], &[0], &[64]).unwrap()).unwrap()).unwrap();
        assert!((0..8).all(|i| now[32 + i] == (2 * i) as f64) && now[31] == 31. && now[40] == 40.);
        let before = c.rt.stats().elided_bytes;
        let own = ArrayInfo { desc: LOCAL, shape: shape(64), data: top.data };
        let same = c.xfer_list(&own, &top, &[3], &[3], &[10]).unwrap();
        c.wait(c.xfer(&same).unwrap()).unwrap();
        assert_eq!(c.rt.stats().elided_bytes - before, 80);
    });
}

#[test]
fn disk_arrays_are_files_that_round_trip_runs() {
    let rt = open_top("disk", no_tasks());
    as_child(&rt, |c| {
        let top = c.rt.get(7).unwrap();
        assert_eq!(top.data, None, "a file is not addressable");
        let mut src: Vec<f64> = (0..64).map(|i| i as f64 * 1.5).collect();
        let whole = ArrayInfo { desc: LOCAL, shape: shape(64), data: Some(src.as_mut_ptr().cast()) };
        // Two puts of interleaved runs (no read-modify-write between them), then one get.
        let even = c.xfer_list(&top, &whole, &[0, 16, 32, 48], &[0, 16, 32, 48], &[8; 4]).unwrap();
        let odd = c.xfer_list(&top, &whole, &[8, 24, 40, 56], &[8, 24, 40, 56], &[8; 4]).unwrap();
        let (a, b) = (c.xfer(&even).unwrap(), c.xfer(&odd).unwrap());
        c.wait(a).unwrap();
        c.wait(b).unwrap();
        let mut back = vec![0f64; 64];
        let bk = ArrayInfo { desc: LOCAL, shape: shape(64), data: Some(back.as_mut_ptr().cast()) };
        let get = c.xfer_list(&bk, &top, &[0], &[0], &[64]).unwrap();
        c.wait(c.xfer(&get).unwrap()).unwrap();
        assert_eq!(back, src);
        assert!(c.rt.stats().busy_ns > 0);
    });
}

#[test]
fn task_calls_reach_each_child_once_and_barriers_hold_them() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let arrived = Arc::new(AtomicUsize::new(0));
    let (s2, a2) = (seen.clone(), arrived.clone());
    let task: Task = Arc::new(move |c: &Child, arg: &[u8]| {
        s2.lock().unwrap().push((c.id, arg.to_vec()));
        a2.fetch_add(1, Ordering::SeqCst);
        c.barrier(0, c.rt.children()).unwrap();
        assert_eq!(a2.load(Ordering::SeqCst) % 4, 0, "released before every child arrived");
        assert_eq!(c.barrier(0, 9).unwrap_err().code(), -22);
    });
    let rt = open_top("smp:4", Arc::new(vec![task]));
    for _ in 0..3 {
        rt.call(0, 0, 4, b"xy").unwrap().wait();
    }
    let mut ids: Vec<usize> = seen.lock().unwrap().iter().map(|s| s.0).collect();
    ids.sort();
    assert_eq!(ids, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
    assert!(seen.lock().unwrap().iter().all(|s| s.1 == b"xy"));
    assert_eq!(rt.call(1, 0, 4, &[]).err().map(|e| e.code()), Some(-26), "unknown task");
    assert_eq!(rt.call(0, 2, 2, &[]).err().map(|e| e.code()), Some(-22), "empty range");
    assert_eq!(rt.call(0, 0, 5, &[]).err().map(|e| e.code()), Some(-22), "past the children");
    assert_eq!(rt.call(0, 0, 1, &[0; runtime::TASK_ARG_MAX + 1]).err().map(|e| e.code()), Some(-26));
    assert_eq!(rt.stats().tasks, 12);
    rt.close();
}

/// A child opens the level below: a second smp runtime whose top is the child's memory.
#[test]
fn children_open_the_next_level_below() {
    let leaves = Arc::new(AtomicUsize::new(0));
    let l2 = leaves.clone();
    let task: Task = Arc::new(move |c: &Child, _: &[u8]| match c.below().unwrap() {
        Some(below) => {
            assert_eq!((below.kind(), below.children()), (Kind::Smp, 3));
            below.call(0, 0, 3, &[]).unwrap().wait();
            below.close();
        }
        None => {
            l2.fetch_add(1, Ordering::SeqCst);
        }
    });
    let rt = open_top("smp:2/smp:3", Arc::new(vec![task]));
    rt.call(0, 0, 2, &[]).unwrap().wait();
    assert_eq!(leaves.load(Ordering::SeqCst), 6);
    rt.close();
}

/// An empty range inside a part touches nothing (proptest found `pieces` yielding that part
/// with length 0: len 1260, block 2, at 545, n 0).
#[test]
fn an_empty_range_has_no_pieces() {
    let parts: Vec<Part> = (0..4).map(|k| Part { start: 2 * k, len: 2, rank: 0, addr: 2 * k as u64 }).collect();
    for at in 0..=8 {
        assert_eq!(pieces(&parts, at, 0).count(), 0, "at {at}");
    }
}

proptest! {
    /// The interval map returns exactly the parts a byte range touches, in order, and their
    /// pieces tile the range.
    #[test]
    fn pieces_tile_any_range(len in 1usize..5000, block in 1usize..700, ranks in 1usize..6, at in 0usize..5000, n in 0usize..5000) {
        let bases: Vec<u64> = (0..ranks).map(|r| (r as u64 + 1) << 32).collect();
        let parts: Vec<Part> = (0..len.div_ceil(block)).map(|k| {
            let start = k * block;
            Part { start, len: block.min(len - start), rank: k % ranks, addr: bases[k % ranks] + ((k / ranks) * block) as u64 }
        }).collect();
        let (at, n) = (at.min(len), n.min(len - at.min(len)));
        let mut next = at;
        for (p, off, l) in pieces(&parts, at, n) {
            prop_assert_eq!(p.start + off, next);
            prop_assert!(l > 0 && off + l <= p.len);
            next += l;
        }
        prop_assert_eq!(next, at + n);
    }
}

/// Busy time is the union of the periods with a transfer in flight: children copying at once
/// count once (it never exceeds the runtime's lifetime), and it grows with their copies.
#[test]
fn busy_time_counts_overlapping_transfers_once() {
    let task: Task = Arc::new(|c: &Child, _: &[u8]| {
        let top = c.rt.get(7).unwrap();
        let mut buf = vec![0u8; top.shape.bytes()];
        let local = ArrayInfo { desc: LOCAL, shape: top.shape, data: Some(buf.as_mut_ptr()) };
        let list = c.xfer_list(&local, &top, &[0], &[0], &[top.shape.elements()]).unwrap();
        for _ in 0..20 {
            c.wait(c.xfer(&list).unwrap()).unwrap();
        }
    });
    let rt = open_top("smp:4", Arc::new(vec![task]));
    let a = rt.alloc(Shape::new(1, &[4 << 20]).unwrap(), 7, 0).unwrap();
    rt.add(&a).unwrap();
    rt.call(0, 0, 4, &[]).unwrap().wait();
    let s = rt.stats();
    assert!(s.busy_ns > 0 && s.busy_ns <= s.alive_ns, "busy {} of {} ns", s.busy_ns, s.alive_ns);
    assert_eq!((s.xfers, s.bytes), (80, 80 * (4 << 20)));
    rt.close();
}
