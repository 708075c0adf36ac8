//! The full planner against brute force on generated machines and transfers (seeded, so every
//! run checks the same 1,000 scenarios): random memories, channels (self-loops and parallel
//! channels included) and curves (2-5 points, dips included), 1-D, 2-D and (few, short-pathed:
//! 630 candidate layouts) 3-D transfers with random layouts, field sizes and extents, random
//! thresholds. Scenarios whose brute force would
//! evaluate more than `LIMIT` plans are skipped, which bounds paths and grids, not the kinds of
//! cases.

use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};

use crate::transfer::plan::baselines::{simple, spdl, spsl};
use crate::transfer::plan::brute::{brute_force, cost, evaluate};
use crate::transfer::plan::curve::Curve;
use crate::transfer::plan::full::full;
use crate::transfer::plan::layout::{Component, Layout, MAX_DIMS};
use crate::transfer::plan::model::{Channel, ChannelKind, Memory, MemoryId, MemoryKind, Model};
use crate::transfer::plan::planner::{Plan, Transfer};

const SCENARIOS: usize = 1000;
const LIMIT: u64 = 200_000;

/// The scenarios' generator: proptest's seeded ChaCha (the same 1,000 scenarios in every run).
struct Rng(TestRng);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

const MEMORY_KINDS: [MemoryKind; 7] =
    [MemoryKind::Sys, MemoryKind::Reg, MemoryKind::Zcm, MemoryKind::Fbm, MemoryKind::Dsk, MemoryKind::Peer, MemoryKind::Remote];
const CHANNEL_KINDS: [ChannelKind; 9] = [
    ChannelKind::Memcpy,
    ChannelKind::Shm,
    ChannelKind::Network,
    ChannelKind::DiskRead,
    ChannelKind::DiskWrite,
    ChannelKind::GpuRead,
    ChannelKind::GpuWrite,
    ChannelKind::GpuCopy,
    ChannelKind::RemoteMemcpy,
];

fn curve(rng: &mut Rng) -> Curve {
    let points: Vec<(f64, f64)> = (0..2 + rng.below(4))
        .map(|_| {
            let e = rng.unit() * 16.0;
            // Half the sizes at powers of two, where PREFIXes land exactly on a sample.
            let r = if rng.chance(0.5) { e.round().exp2() } else { e.exp2() };
            (r, 1e8 * 100f64.powf(rng.unit()))
        })
        .collect();
    Curve::new(&points).unwrap()
}

/// A machine of 2-7 memories and a transfer on it. Half the machines get a chain of channels
/// from the source to the destination through up to three other memories, so that multi-hop
/// paths are common rather than lucky.
fn scenario(rng: &mut Rng) -> (Model, Transfer) {
    let n = 2 + rng.below(6) as usize;
    let memories =
        (0..n).map(|i| Memory { name: format!("M{i}"), kind: MEMORY_KINDS[rng.below(7) as usize], node: rng.below(2) as u32 }).collect();
    let src = rng.below(n as u64) as usize;
    let dst = if rng.chance(0.1) { src } else { rng.below(n as u64) as usize };
    let p = if n <= 4 { 0.3 + 0.5 * rng.unit() } else { 0.15 + 0.3 * rng.unit() };
    let mut edges = Vec::new();
    for a in 0..n {
        for b in 0..n {
            let copies = if rng.chance(if a == b { 0.35 } else { p }) { 1 + rng.chance(0.05) as usize } else { 0 };
            edges.extend(std::iter::repeat_n((a, b), copies));
        }
    }
    if src != dst && rng.chance(0.5) {
        let mut chain = vec![src];
        chain.extend((0..n).filter(|&m| m != src && m != dst && rng.chance(0.4)).take(3));
        chain.push(dst);
        edges.extend(chain.windows(2).map(|w| (w[0], w[1])));
    }
    let channels = edges
        .into_iter()
        .map(|(a, b)| {
            let kind = if rng.chance(0.4) { ChannelKind::Memcpy } else { CHANNEL_KINDS[rng.below(9) as usize] };
            Channel { kind, src: MemoryId(a as u32), dst: MemoryId(b as u32), curve: curve(rng) }
        })
        .collect();
    let threshold = (rng.unit() * 14.0).exp2().round().max(1.0) as u64;
    let m = Model::new(memories, channels, threshold).unwrap();
    let dims = match rng.below(20) {
        0..=11 => 1,
        12..=17 => 2,
        _ => 3,
    };
    let extents: Vec<u64> = (0..dims).map(|_| 1 << rng.below([9, 5, 3][dims - 1])).collect();
    let src_layout = layout(rng, dims);
    let dst_layout = if rng.chance(0.25) { src_layout } else { layout(rng, dims) };
    let t = Transfer::new(MemoryId(src as u32), src_layout, MemoryId(dst as u32), dst_layout, &extents, 1 + rng.below(24)).unwrap();
    (m, t)
}

/// Any layout of the index space: each dimension whole or split, components in any order.
fn layout(rng: &mut Rng, dims: usize) -> Layout {
    let mut comps = vec![Component::Field];
    for d in 0..dims as u8 {
        if rng.chance(0.5) {
            comps.push(Component::Dim(d));
        } else {
            comps.extend([Component::In(d), Component::Out(d)]);
        }
    }
    for i in (1..comps.len()).rev() {
        comps.swap(i, rng.below(i as u64 + 1) as usize);
    }
    Layout::new(&comps, dims).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// The plan's own numbers agree with the definitions, and it fits the threshold.
fn check_plan(m: &Model, t: &Transfer, p: &Plan) {
    let mut u = [0; MAX_DIMS];
    let ext = t.shape().log2_extents();
    for (d, b) in p.block.iter().enumerate() {
        assert!(b.is_power_of_two() && b.trailing_zeros() <= ext[d]);
        u[d] = b.trailing_zeros();
    }
    let layouts: Vec<Layout> = p.buffers.iter().map(|b| b.1).collect();
    assert_eq!(p.buffers.first().map(|b| b.0), Some(t.src()));
    assert_eq!(p.buffers.last().map(|b| b.0), Some(t.dst()));
    let v = evaluate(m, t, &p.channels(), &layouts, &u).expect("plan exceeds the threshold");
    assert!(close(v, p.throughput), "plan says {} the definitions {v}", p.throughput);
}

#[test]
fn full_equals_brute_force_and_beats_the_cheap_planners() {
    let mut rng = Rng::seeded(0x150_4e7e);
    let (mut done, mut tries) = (0, 0);
    let (mut feasible, mut converting, mut two_d, mut three_d, mut long) = (0, 0, 0, 0, 0);
    while done < SCENARIOS {
        tries += 1;
        assert!(tries < 100 * SCENARIOS, "the generator rarely fits the brute-force limit");
        let (m, t) = scenario(&mut rng);
        if cost(&m, &t) > LIMIT {
            continue;
        }
        done += 1;
        let brute = brute_force(&m, &t);
        let plan = full(&m, &t);
        let ctx = || format!("scenario {done}: {t:?}\nthreshold {}\n{m:#?}", m.threshold());
        match (brute, &plan) {
            (None, None) => {}
            (Some((b, path)), Some(p)) => {
                assert!(close(b, p.throughput), "brute {b} full {}\n{}\n{}", p.throughput, p.explain(&m), ctx());
                assert_eq!(p.channels(), path, "tie-break: full\n{}\n{}", p.explain(&m), ctx());
                check_plan(&m, &t, p);
                feasible += 1;
                converting += t.converts() as usize;
                two_d += (t.shape().dims() == 2) as usize;
                three_d += (t.shape().dims() == 3) as usize;
                long += (p.hops.len() >= 3) as usize;
            }
            (b, p) => panic!("brute {b:?} full {:?}\n{}", p.as_ref().map(|p| p.throughput), ctx()),
        }
        // Determinism: the same plan every time.
        assert_eq!(full(&m, &t), plan);
        for (name, cheap) in [("simple", simple(&m, &t)), ("spsl", spsl(&m, &t)), ("spdl", spdl(&m, &t))] {
            if let Some(c) = cheap {
                check_plan(&m, &t, &c);
                let f = plan.as_ref().map_or(0.0, |p| p.throughput);
                assert!(f >= c.throughput * (1.0 - 1e-12), "{name} {} > full {f}\n{}", c.throughput, ctx());
            }
        }
    }
    println!(
        "{done} scenarios ({tries} generated): {feasible} feasible, {converting} of them converting, {two_d} 2-D, {three_d} 3-D, {long} with 3+ hops"
    );
    assert!(feasible > SCENARIOS / 2 && converting > SCENARIOS / 4 && two_d > SCENARIOS / 10 && three_d > 10 && long > SCENARIOS / 20);
}
