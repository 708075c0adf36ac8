//! Runtime tests on real files (in the system's temporary directory) and host memory.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use super::path::{Action, Buffer};
use super::*;
use crate::datatype::compiled::CompiledType;
use crate::datatype::DataLoop;

fn ty(dl: DataLoop) -> Arc<CompiledType> {
    Arc::new(CompiledType::new(&dl))
}

fn bytes() -> Arc<CompiledType> {
    ty(DataLoop::bytes(1))
}

/// A model like the built-in one with space threshold `th` (small: many blocks).
fn model_with(th: u64) -> Model {
    let text = DEFAULT_MODEL.replace("threshold = 16777216", &format!("threshold = {th}"));
    Model::from_toml_str(&text).unwrap()
}

fn host(buf: &mut [u8], t: &Arc<CompiledType>, count: usize, lb: i64) -> Place {
    Place::new(Memory::Host(buf.as_mut_ptr().wrapping_offset(lb as isize)), t.clone(), count)
}

fn file(f: &std::fs::File, t: &Arc<CompiledType>, count: usize, offset: i64) -> Place {
    Place::new(Memory::File { fd: f.as_raw_fd(), offset }, t.clone(), count)
}

fn temp(contents: &[u8]) -> std::fs::File {
    let dir = std::env::temp_dir();
    let name = dir.join(format!("sluice-rt-{}-{}", std::process::id(), rand_u64()));
    let mut f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&name).unwrap();
    std::fs::remove_file(&name).unwrap(); // lives until closed
    f.write_all(contents).unwrap();
    f
}

fn rand_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos() as u64)
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn read_all(f: &std::fs::File) -> Vec<u8> {
    use std::io::{Read, Seek};
    let mut f = f.try_clone().unwrap();
    f.rewind().unwrap();
    let mut v = Vec::new();
    f.read_to_end(&mut v).unwrap();
    v
}

/// Reference: what copying `count_s` of `s` into `count_d` of `d` does to `dst`.
fn reference(s: &CompiledType, src: &[u8], count_s: usize, d: &CompiledType, dst: &mut [u8], count_d: usize) {
    let mut packed = vec![0u8; s.size() * count_s];
    // SAFETY: buffers sized for the layouts by the callers.
    unsafe {
        s.pack(src.as_ptr(), count_s, &mut packed);
        d.unpack(&packed, count_d, dst.as_mut_ptr());
    }
}

/// Layouts used across the tests: (type, count, buffer bytes).
fn layouts() -> Vec<(Arc<CompiledType>, usize, usize)> {
    let vec = ty(DataLoop::vector(64, 12, 20, DataLoop::bytes(1))); // 768 B per element, extent 1272
    let col = ty(DataLoop::vector(16, 1, 64, DataLoop::bytes(4)).resized(0, 4)); // a column of 16 ints
    vec![(bytes(), 3 * 768 * 37, 3 * 768 * 37), (vec, 111, 111 * 1272), (col, 1332, 1332 * 4 + 16 * 64)]
}

#[test]
fn the_built_in_model_is_valid() {
    let m = default_model();
    assert!(m.memory_id("SYS0").is_some() && m.memory_id("DSK0").is_some());
    assert_eq!(m.channels().len(), 3);
}

#[test]
fn host_to_host_converts_any_pair() {
    let rt = Runtime::new(model_with(64 << 10), 1 << 20);
    for (s, cs, ns) in layouts() {
        for (d, cd, nd) in layouts() {
            if s.size() * cs != d.size() * cd {
                continue;
            }
            let mut src = pattern(ns, 7);
            let mut dst = vec![0xeeu8; nd];
            let mut expect = dst.clone();
            reference(&s, &src, cs, &d, &mut expect, cd);
            let ev = rt.copy(host(&mut src, &s, cs, 0), host(&mut dst, &d, cd, 0), 0).unwrap();
            ev.wait().unwrap();
            assert!(dst == expect, "host copy {:?} -> {:?}", s.kernel(), d.kernel());
        }
    }
}

#[test]
fn files_to_host_and_back_keep_every_other_byte() {
    let rt = Runtime::new(model_with(64 << 10), 1 << 20);
    for (s, cs, ns) in layouts() {
        for (d, cd, nd) in layouts() {
            if s.size() * cs != d.size() * cd {
                continue;
            }
            // file (layout s, at offset 100) -> host (layout d)
            let image = pattern(ns + 100, 3);
            let f = temp(&image);
            let mut dst = vec![0x55u8; nd];
            let mut expect = dst.clone();
            reference(&s, &image[100..], cs, &d, &mut expect, cd);
            rt.copy(file(&f, &s, cs, 100), host(&mut dst, &d, cd, 0), 1).unwrap().wait().unwrap();
            assert!(dst == expect, "file -> host {:?} -> {:?}", s.kernel(), d.kernel());

            // host (layout s) -> file (layout d, at offset 50): bytes outside the layout stay
            let mut src = pattern(ns, 9);
            let before = pattern(nd + 50, 200);
            let g = temp(&before);
            let mut expect = before.clone();
            reference(&s, &src, cs, &d, &mut expect[50..], cd);
            rt.copy(host(&mut src, &s, cs, 0), file(&g, &d, cd, 50), 0).unwrap().wait().unwrap();
            assert!(read_all(&g) == expect, "host -> file {:?} -> {:?}", s.kernel(), d.kernel());

            // file -> file
            let h = temp(&before);
            rt.copy(file(&f, &s, cs, 100), file(&h, &d, cd, 50), 0).unwrap().wait().unwrap();
            let mut expect = before.clone();
            reference(&s, &image[100..], cs, &d, &mut expect[50..], cd);
            assert!(read_all(&h) == expect, "file -> file {:?} -> {:?}", s.kernel(), d.kernel());
        }
    }
}

#[test]
fn interleaved_destination_windows_are_written_one_block_at_a_time() {
    // Elements of two bytes 8 apart with extent 1 interleave: a read-modify-write of neighbouring
    // blocks touches the same bytes.
    let d = ty(DataLoop::vector(2, 1, 8, DataLoop::bytes(1)).resized(0, 1));
    let n = 100_000; // 200,000 bytes of data; windows fit the 16 KiB threshold in blocks of at most 32 KiB
    let rt = Runtime::new(model_with(16 << 10), 1 << 20);
    let mut src = pattern(2 * n, 1);
    let before = pattern(n + 8, 77);
    let f = temp(&before);
    let (sp, dp) = (host(&mut src, &bytes(), 2 * n, 0), file(&f, &d, n, 0));
    let path = rt.plan(&sp, &dp).unwrap();
    assert!(path.serial && path.depth == 1, "{path:?}");
    assert!(src.len() / path.block > 4, "several blocks");
    rt.copy(sp, dp, 0).unwrap().wait().unwrap();
    let mut expect = before.clone();
    reference(&bytes(), &src, 2 * n, &d, &mut expect, n);
    assert!(read_all(&f) == expect);
}

#[test]
fn paths_follow_the_places() {
    let rt = Runtime::new(default_model(), 1 << 20);
    let v = ty(DataLoop::vector(64, 12, 20, DataLoop::bytes(1)));
    let f = temp(&[0u8; 8]);
    let mut a = vec![0u8; 1 << 20];
    let n = 1 << 20;
    let kinds = |p: &Path| p.hops.iter().map(|h| rt.model().channel(h.channel).kind).collect::<Vec<_>>();
    use crate::transfer::plan::ChannelKind::*;
    let p = rt.plan(&file(&f, &bytes(), n, 0), &host(&mut a, &bytes(), n, 0)).unwrap();
    assert_eq!(kinds(&p), [DiskRead]);
    let p = rt.plan(&file(&f, &v, n / 1024, 0), &host(&mut a, &bytes(), n * 3 / 4, 0)).unwrap();
    assert_eq!(kinds(&p), [DiskRead, Memcpy]);
    assert_eq!(p.buffers, [Buffer::Window(path::Side::Src)]);
    // Two channels on fewer CPUs than that take turns: the plan says so.
    assert_eq!(p.channels().len(), 2);
    assert!(p.sharing_note(1).is_some_and(|n| n.contains("1 CPU(s)") && n.contains("--bind-to none")));
    assert_eq!(p.sharing_note(2), None);
    let p = rt.plan(&host(&mut a, &bytes(), n * 3 / 4, 0), &file(&f, &v, n / 1024, 0)).unwrap();
    assert_eq!(kinds(&p), [DiskRead, Memcpy, DiskWrite]);
    assert_eq!((p.channels().len(), p.sharing_note(2).is_some(), p.sharing_note(3)), (3, true, None));
    assert!(matches!(p.hops[0].action, Action::Read { file: path::Side::Dst, .. }));
    let by = bytes();
    let p = rt.plan(&host(&mut a, &v, n / 1024, 0), &file(&f, &by, n * 3 / 4, 0)).unwrap();
    assert_eq!(kinds(&p), [Memcpy, DiskWrite]);
    let text = p.explain(rt.model(), n * 3 / 4);
    assert!(text.contains("Memcpy") && text.contains("DiskWrite") && text.contains("GB/s"), "{text}");
    // Every intermediate buffer fits the model's space threshold.
    assert!(p.slot.iter().sum::<usize>() * p.depth <= rt.model().threshold() as usize);
    // The same shape of copy again: the cached path, whatever the addresses.
    let mut b = vec![0u8; 1 << 20];
    let again = rt.plan(&host(&mut b, &v, n / 1024, 0), &file(&f, &by, n * 3 / 4, 64)).unwrap();
    assert!(Arc::ptr_eq(&p, &again));
    let other = rt.plan(&host(&mut b, &v, n / 2048, 0), &file(&f, &by, n * 3 / 8, 64)).unwrap();
    assert!(!Arc::ptr_eq(&p, &other));
}

#[test]
fn a_model_sets_the_request_cost_that_sizes_blocks() {
    // 16 MiB of 8-byte runs in a file (columns of a row-major matrix) into packed memory, a
    // buffered path (no cap on a request's time): cheap requests let blocks stay small, dear
    // ones make them larger.
    let column = ty(DataLoop::contig(8, DataLoop::bytes(1)).resized(0, 64));
    let f = temp(&[0u8; 8]);
    let mut b = vec![0u8; 64];
    let mut block = |cost: Option<&str>| {
        let text = match cost {
            Some(c) => DEFAULT_MODEL.replace("threshold = 16777216", &format!("threshold = 16777216\nrequest_cost = {c}")),
            None => DEFAULT_MODEL.to_string(),
        };
        let m = Model::from_toml_str(&text).unwrap();
        assert_eq!(m.request_cost(), cost.map(|c| c.parse().unwrap()));
        path::plan(&m, &file(&f, &column, 2 << 20, 0), &host(&mut b, &bytes(), 16 << 20, 0)).unwrap().block
    };
    let (cheap, default, dear) = (block(Some("0.0")), block(None), block(Some("2e-5")));
    assert!(cheap < default && default < dear, "blocks {cheap}, {default}, {dear}");
    assert_eq!(block(Some("5e-6")), default, "the built-in model's cost is 5 us");
}

#[test]
fn a_path_without_buffers_holds_its_channel_briefly() {
    // 64 MiB host to host: nothing bounds the blocks' space, so the request time does (an urgent
    // copy waits behind at most one request).
    let rt = Runtime::new(default_model(), 1 << 20);
    let v = ty(DataLoop::vector(1 << 16, 512, 1024, DataLoop::bytes(1)));
    let (mut a, mut b) = (vec![0u8; 64 << 20], vec![0u8; 32 << 20]);
    let p = rt.plan(&host(&mut a, &v, 1, 0), &host(&mut b, &bytes(), 32 << 20, 0)).unwrap();
    assert!(p.buffers.is_empty() && p.hops.len() == 1);
    assert!(p.block < 32 << 20, "one block for the whole copy");
    assert!(p.block as f64 / p.throughput <= path::MAX_REQUEST_TIME, "{} bytes at {} B/s", p.block, p.throughput);
}

#[test]
fn many_concurrent_copies_share_a_tiny_buffer_budget() {
    // Each copy needs 2 slots of 4 KiB; the budget holds one copy's buffers: copies wait for
    // each other, none deadlocks, every byte arrives.
    let rt = Runtime::new(model_with(8 << 10), 8 << 10);
    let v = ty(DataLoop::vector(8, 4, 8, DataLoop::bytes(1)));
    let n = 1000;
    let mut files = Vec::new();
    let mut events = Vec::new();
    let mut dsts: Vec<Vec<u8>> = (0..48).map(|_| vec![0u8; 32 * n]).collect();
    for (i, d) in dsts.iter_mut().enumerate() {
        let f = temp(&pattern(60 * n, i as u8));
        events.push(rt.copy(file(&f, &v, n, 0), host(d, &bytes(), 32 * n, 0), (i % 3) as i32).unwrap());
        files.push(f);
    }
    for e in &events {
        e.wait().unwrap();
    }
    for (i, d) in dsts.iter().enumerate() {
        let mut expect = vec![0u8; 32 * n];
        reference(&v, &pattern(60 * n, i as u8), n, &bytes(), &mut expect, 32 * n);
        assert!(*d == expect, "copy {i}");
    }
}

#[test]
fn a_high_priority_copy_overtakes_queued_ones() {
    let rt = Runtime::new(model_with(8 << 10), 1 << 30);
    let n = 4 << 20;
    let mut srcs: Vec<Vec<u8>> = (0..9).map(|i| pattern(n, i)).collect();
    let mut dsts: Vec<Vec<u8>> = (0..9).map(|_| vec![0u8; n]).collect();
    let col = ty(DataLoop::vector(2, 1, 2, DataLoop::bytes(1)).resized(0, 1)); // forces conversion blocks
    let _ = &col;
    let mut low = Vec::new();
    let (hs, ls) = srcs.split_at_mut(1);
    let (hd, ld) = dsts.split_at_mut(1);
    for (s, d) in ls.iter_mut().zip(ld.iter_mut()) {
        low.push(rt.copy(host(s, &bytes(), n, 0), host(d, &bytes(), n, 0), 0).unwrap());
    }
    let high = rt.copy(host(&mut hs[0], &bytes(), n, 0), host(&mut hd[0], &bytes(), n, 0), 10).unwrap();
    high.wait().unwrap();
    // Every low copy's blocks were queued before the high one's; with priorities the high copy
    // finishes while most low copies still wait (FIFO would finish all of them first).
    let done_low = low.iter().filter(|e| e.test().is_some()).count();
    assert!(done_low < 8, "the high-priority copy finished after all {done_low} low ones");
    for e in &low {
        e.wait().unwrap();
    }
    assert!(srcs == dsts);
}

#[test]
fn errors_are_reported_not_raised() {
    let rt = Runtime::new(default_model(), 1 << 20);
    let mut a = vec![0u8; 100];
    let mut b = vec![0u8; 100];
    assert_eq!(rt.copy(host(&mut a, &bytes(), 100, 0), host(&mut b, &bytes(), 99, 0), 0).unwrap_err(), CopyError::Size(100, 99));
    let f = temp(&[1u8; 10]);
    assert_eq!(rt.copy(file(&f, &bytes(), 100, -5), host(&mut b, &bytes(), 100, 0), 0).unwrap_err(), CopyError::Offset);
    // Reading past the end of the file fails the copy's event.
    let e = rt.copy(file(&f, &bytes(), 100, 0), host(&mut b, &bytes(), 100, 0), 0).unwrap().wait().unwrap_err();
    assert!(e.contains("end of file"), "{e}");
    // A model without disk channels cannot copy files.
    let m = Model::from_toml_str(
        "threshold = 4096\n[[memory]]\nname = \"SYS0\"\nkind = \"sys\"\nnode = 0\n[[channel]]\nkind = \"memcpy\"\nsrc = \"SYS0\"\ndst = \"SYS0\"\ncurve = [[8, 1e9]]\n",
    )
    .unwrap();
    let rt = Runtime::new(m, 1 << 20);
    assert!(matches!(rt.copy(file(&f, &bytes(), 10, 0), host(&mut b, &bytes(), 10, 0), 0), Err(CopyError::Path(_))));
    // Zero bytes: complete at once.
    assert_eq!(rt.copy(host(&mut a, &bytes(), 0, 0), host(&mut b, &bytes(), 0, 0), 0).unwrap().test(), Some(Ok(())));
}

#[test]
fn a_missing_or_corrupt_model_file_falls_back_to_the_built_in_one() {
    let (m, from) = load_model(Some("/nonexistent/sluice-model.toml"));
    assert!(from.starts_with("built-in") && m.channels().len() == 3);
    let dir = std::env::temp_dir().join(format!("sluice-model-{}.toml", std::process::id()));
    std::fs::write(&dir, "threshold = [").unwrap();
    let (m, from) = load_model(dir.to_str());
    assert!(from.starts_with("built-in") && m.channels().len() == 3);
    std::fs::write(&dir, DEFAULT_MODEL.replace("16777216", "4096")).unwrap();
    let (m, from) = load_model(dir.to_str());
    assert_eq!((m.threshold(), from), (4096, dir.display().to_string()));
    std::fs::remove_file(&dir).unwrap();
}
