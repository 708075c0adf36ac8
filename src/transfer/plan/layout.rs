//! Isometry layouts (Section 2 of the paper) and the two quantities the planner derives from a
//! pair of them (Section 4.2): PREFIX, the request size a channel can be sent (the longest
//! common prefix, linearized identically), and the shuffle size TOTAL / SUFFIX, the least data
//! an intermediate buffer must hold before its layout's order can be emitted (everything before
//! the longest common suffix).
//!
//! A layout lists components innermost (densest) first: the field space `F` (|F| bytes per
//! entry), a whole dimension `d`, or a blocked dimension as `d_in` (block factor `b_d`) and
//! `d_out` (`|d| / b_d`). Block factors are the planner's variables: one per dimension, shared
//! by every buffer of a path (Table 3), powers of two `1 <= b_d <= |d|`, handled as integers
//! `u_d = log2 b_d`. Extents are powers of two too, so every size here is
//! `|F|^f * 2^(c + sum_d a_d u_d)` with `f` in {0, 1} and `a_d` in {-1, 0, 1}: PREFIX and shuffle
//! size are [`Affine`] in `u`, which keeps the planner's constraints linear in the log domain.
//!
//! For planning, `d` is expanded into `d_in, d_out` (the same linearization for any `b_d`), so
//! common prefixes and suffixes are found on expanded layouts. A source or destination layout
//! that names `d_in` uses the path's `b_d`: a fixed block size of the user's is not modelled.

use std::fmt;
use std::sync::OnceLock;

/// Most dimensions an index space may have.
pub const MAX_DIMS: usize = 3;
/// Most components a layout may have (every dimension blocked, plus F).
pub const MAX_COMPONENTS: usize = 2 * MAX_DIMS + 1;

/// One element of a layout; dimensions are numbered from 0 (printed x, y, z).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    Field,
    Dim(u8),
    In(u8),
    Out(u8),
}

/// A layout: a linearization order of an instance's entries, innermost component first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Layout {
    comps: [Component; MAX_COMPONENTS],
    len: u8,
}

/// Why a layout or a shape was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// An index space has 1 to 3 dimensions.
    Dims(usize),
    /// Extents must be powers of two (the block factors are).
    Extent(u64),
    /// |F| must be at least one byte.
    Field,
    /// The instance has 2^63 bytes or more.
    TooLarge,
    /// Not a layout of the index space: `F` once, each dimension whole or as in + out.
    Components(String),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Dims(n) => write!(f, "an index space has 1 to {MAX_DIMS} dimensions, not {n}"),
            LayoutError::Extent(e) => write!(f, "extent {e} is not a power of two"),
            LayoutError::Field => write!(f, "the field space must have at least one byte"),
            LayoutError::TooLarge => write!(f, "the instance is too large (2^63 bytes or more)"),
            LayoutError::Components(why) => write!(f, "not a layout: {why}"),
        }
    }
}

impl std::error::Error for LayoutError {}

impl Layout {
    /// A layout of a `dims`-dimensional index space.
    pub fn new(comps: &[Component], dims: usize) -> Result<Layout, LayoutError> {
        if dims == 0 || dims > MAX_DIMS {
            return Err(LayoutError::Dims(dims));
        }
        let bad = |why: String| Err(LayoutError::Components(why));
        if comps.len() > MAX_COMPONENTS {
            return bad(format!("{} components", comps.len()));
        }
        let count = |c: Component| comps.iter().filter(|&&x| x == c).count();
        if count(Component::Field) != 1 {
            return bad("F must appear exactly once".into());
        }
        for d in 0..dims as u8 {
            let (whole, inner, outer) = (count(Component::Dim(d)), count(Component::In(d)), count(Component::Out(d)));
            if !((whole, inner, outer) == (1, 0, 0) || (whole, inner, outer) == (0, 1, 1)) {
                return bad(format!("dimension {} must appear whole once or as in and out once", dim_name(d)));
            }
        }
        if let Some(c) = comps.iter().find(|c| matches!(c, Component::Dim(d) | Component::In(d) | Component::Out(d) if *d as usize >= dims))
        {
            return bad(format!("{c:?} is past the {dims} dimensions"));
        }
        let mut layout = Layout { comps: [Component::Field; MAX_COMPONENTS], len: comps.len() as u8 };
        layout.comps[..comps.len()].copy_from_slice(comps);
        Ok(layout)
    }

    /// Array of structs: `<F, x, y, ...>`, all fields of an entry together, x fastest (for 2-D
    /// the paper's row-major). `dims` is clamped to 1..=3.
    pub fn aos(dims: usize) -> Layout {
        let dims = dims.clamp(1, MAX_DIMS);
        let mut layout = Layout { comps: [Component::Field; MAX_COMPONENTS], len: dims as u8 + 1 };
        for d in 0..dims {
            layout.comps[d + 1] = Component::Dim(d as u8);
        }
        layout
    }

    /// Struct of arrays: `<x, y, ..., F>`, one field's entries together. `dims` is clamped to
    /// 1..=3.
    pub fn soa(dims: usize) -> Layout {
        let dims = dims.clamp(1, MAX_DIMS);
        let mut layout = Layout { comps: [Component::Field; MAX_COMPONENTS], len: dims as u8 + 1 };
        for d in 0..dims {
            layout.comps[d] = Component::Dim(d as u8);
        }
        layout
    }

    pub fn components(&self) -> &[Component] {
        &self.comps[..self.len as usize]
    }

    /// Every whole dimension `d` replaced by `d_in, d_out`.
    pub fn expand(&self) -> Layout {
        let mut out = Layout { comps: [Component::Field; MAX_COMPONENTS], len: 0 };
        for &c in self.components() {
            let parts: &[Component] = match c {
                Component::Dim(d) => &[Component::In(d), Component::Out(d)],
                _ => std::slice::from_ref(&c),
            };
            for &p in parts {
                out.comps[out.len as usize] = p;
                out.len += 1;
            }
        }
        out
    }

    /// The same linearization for every choice of block factors.
    pub fn same_as(&self, other: &Layout) -> bool {
        self.expand() == other.expand()
    }

    /// Moving data from `self` to `other` changes its order (the hop converts the layout).
    pub fn converts_to(&self, other: &Layout) -> bool {
        !self.same_as(other)
    }

    /// The layout with block factors `block` (one per dimension) written out, e.g.
    /// `<F, x_in=2048, x_out, y>`.
    pub fn show(&self, block: &[u64]) -> String {
        let parts: Vec<String> = self
            .components()
            .iter()
            .map(|&c| match c {
                Component::In(d) => match block.get(d as usize) {
                    Some(b) => format!("{}_in={b}", dim_name(d)),
                    None => format!("{}_in", dim_name(d)),
                },
                _ => format!("{c}"),
            })
            .collect();
        format!("<{}>", parts.join(", "))
    }
}

impl Component {
    /// This component's bits in a component-set mask: F is bit 0, `d_in` bit `1 + 2d`, `d_out`
    /// bit `2 + 2d`, a whole `d` both. A prefix's size depends only on its set of components.
    pub fn mask(self) -> u8 {
        match self {
            Component::Field => 1,
            Component::In(d) => 1 << (1 + 2 * d),
            Component::Out(d) => 1 << (2 + 2 * d),
            Component::Dim(d) => 3 << (1 + 2 * d),
        }
    }
}

fn dim_name(d: u8) -> char {
    ['x', 'y', 'z'].get(d as usize).copied().unwrap_or('?')
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Component::Field => write!(f, "F"),
            Component::Dim(d) => write!(f, "{}", dim_name(d)),
            Component::In(d) => write!(f, "{}_in", dim_name(d)),
            Component::Out(d) => write!(f, "{}_out", dim_name(d)),
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.show(&[]))
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An instance's sizes: log2 of each extent and |F|.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    log2: [u32; MAX_DIMS],
    dims: usize,
    field: u64,
    log2_field: f64,
}

impl Shape {
    /// Extents (powers of two), innermost dimension (x) first, and |F| in bytes.
    pub fn new(extents: &[u64], field_bytes: u64) -> Result<Shape, LayoutError> {
        if extents.is_empty() || extents.len() > MAX_DIMS {
            return Err(LayoutError::Dims(extents.len()));
        }
        if field_bytes == 0 {
            return Err(LayoutError::Field);
        }
        let mut log2 = [0; MAX_DIMS];
        for (l, &e) in log2.iter_mut().zip(extents) {
            if !e.is_power_of_two() {
                return Err(LayoutError::Extent(e));
            }
            *l = e.trailing_zeros();
        }
        let shape = Shape { log2, dims: extents.len(), field: field_bytes, log2_field: (field_bytes as f64).log2() };
        if shape.total_bytes() >= 1 << 63 {
            return Err(LayoutError::TooLarge);
        }
        Ok(shape)
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// log2 of each extent (zero past `dims()`).
    pub fn log2_extents(&self) -> [u32; MAX_DIMS] {
        self.log2
    }

    pub fn field_bytes(&self) -> u64 {
        self.field
    }

    /// TOTAL: the instance's bytes.
    pub fn total_bytes(&self) -> u128 {
        (self.field as u128) << self.log2.iter().sum::<u32>()
    }

    /// log2 of `|F|^field * 2^int`: the one place sizes become floating point, so that every
    /// caller evaluates a curve at bit-identical request sizes.
    pub fn lambda(&self, field: bool, int: i64) -> f64 {
        int as f64 + if field { self.log2_field } else { 0.0 }
    }

    /// The [`Affine`] size of TOTAL.
    pub fn total(&self) -> Affine {
        Affine { field: true, int: self.log2.iter().sum::<u32>() as i32, coef: [0; MAX_DIMS] }
    }
}

/// A size `|F|^field * 2^(int + sum_d coef[d] * u_d)` for block factors `b_d = 2^u_d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Affine {
    pub field: bool,
    pub int: i32,
    pub coef: [i8; MAX_DIMS],
}

impl Affine {
    /// The exponent of 2 at `u`.
    pub fn int_at(&self, u: &[u32; MAX_DIMS]) -> i64 {
        self.int as i64 + self.coef.iter().zip(u).map(|(&a, &x)| a as i64 * x as i64).sum::<i64>()
    }

    /// log2 of the size at `u`.
    pub fn log2_at(&self, shape: &Shape, u: &[u32; MAX_DIMS]) -> f64 {
        shape.lambda(self.field, self.int_at(u))
    }

    /// The size of a set of components (a [`Component::mask`] union).
    pub fn of_mask(mask: u8, shape: &Shape) -> Affine {
        let mut a = Affine { field: mask & 1 != 0, int: 0, coef: [0; MAX_DIMS] };
        for d in 0..MAX_DIMS {
            if mask >> (1 + 2 * d) & 1 != 0 {
                a.coef[d] += 1;
            }
            if mask >> (2 + 2 * d) & 1 != 0 {
                a.int += shape.log2[d] as i32;
                a.coef[d] -= 1;
            }
        }
        a
    }

    /// The size of the first `len` components of an expanded layout.
    pub fn of_prefix(layout: &Layout, len: usize, shape: &Shape) -> Affine {
        let mut a = Affine { field: false, int: 0, coef: [0; MAX_DIMS] };
        for &c in &layout.components()[..len] {
            match c {
                Component::Field => a.field = true,
                Component::Dim(d) => a.int += shape.log2[d as usize] as i32,
                Component::In(d) => a.coef[d as usize] += 1,
                Component::Out(d) => {
                    a.int += shape.log2[d as usize] as i32;
                    a.coef[d as usize] -= 1;
                }
            }
        }
        a
    }
}

/// Lengths of the longest common prefix and suffix of two expanded layouts.
pub fn common(a: &Layout, b: &Layout) -> (usize, usize) {
    let (a, b) = (a.components(), b.components());
    let cp = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let cs = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    (cp, cs)
}

/// PREFIX(a, b): the largest request a channel moving `a` into `b` can be sent.
pub fn prefix(a: &Layout, b: &Layout, shape: &Shape) -> Affine {
    let (a, b) = (a.expand(), b.expand());
    Affine::of_prefix(&a, common(&a, &b).0, shape)
}

/// The shuffle size TOTAL / SUFFIX(a, b): the least an intermediate buffer on either side of a
/// hop from `a` to `b` must hold.
pub fn shuffle(a: &Layout, b: &Layout, shape: &Shape) -> Affine {
    let (a, b) = (a.expand(), b.expand());
    let (_, cs) = common(&a, &b);
    Affine::of_prefix(&a, a.components().len() - cs, shape)
}

/// Layouts and what the full planner needs of every pair of them, computed once (per process
/// for the candidates of each dimensionality: 630 layouts for 3-D).
#[derive(Clone, Debug)]
pub struct Candidates {
    pub layouts: Vec<Layout>,
    /// Components per layout.
    pub len: usize,
    /// `cp[a * k + b]`: length of the common prefix of layouts `a` and `b` (`k` layouts).
    pub cp: Vec<u8>,
    /// `prefix_mask[a * (len + 1) + j]`: the component set of the first `j` components of `a`.
    pub prefix_mask: Vec<u8>,
    /// `rest_mask[a * k + b]`: the component set of `a` before its common suffix with `b` (what
    /// the shuffle size multiplies).
    pub rest_mask: Vec<u8>,
}

impl Candidates {
    /// The tables of `layouts` (expanded, all of one index space).
    pub fn new(layouts: Vec<Layout>) -> Candidates {
        let k = layouts.len();
        let len = layouts.first().map_or(0, |l| l.components().len());
        let mut prefix_mask = Vec::with_capacity(k * (len + 1));
        for l in &layouts {
            let mut m = 0;
            prefix_mask.push(0);
            for c in l.components() {
                m |= c.mask();
                prefix_mask.push(m);
            }
        }
        let (mut cp, mut rest_mask) = (Vec::with_capacity(k * k), Vec::with_capacity(k * k));
        for (i, a) in layouts.iter().enumerate() {
            for b in &layouts {
                let (p, s) = common(a, b);
                cp.push(p as u8);
                rest_mask.push(prefix_mask[i * (len + 1) + len - s]);
            }
        }
        Candidates { layouts, len, cp, prefix_mask, rest_mask }
    }
}

/// Every ordering of `F, x_in, x_out, ...` with each `d_in` before its `d_out` (3 for 1-D, 30
/// for 2-D, 630 for 3-D), in lexicographic order of [`Component`].
pub fn candidates(dims: usize) -> &'static Candidates {
    static TABLES: [OnceLock<Candidates>; MAX_DIMS] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let dims = dims.clamp(1, MAX_DIMS);
    TABLES[dims - 1].get_or_init(|| {
        let mut pool = vec![Component::Field];
        for d in 0..dims as u8 {
            pool.extend([Component::In(d), Component::Out(d)]);
        }
        pool.sort();
        let mut layouts = Vec::new();
        permute(&mut Vec::new(), &mut pool, dims, &mut layouts);
        Candidates::new(layouts)
    })
}

fn permute(prefix: &mut Vec<Component>, rest: &mut Vec<Component>, dims: usize, out: &mut Vec<Layout>) {
    if rest.is_empty() {
        if let Ok(l) = Layout::new(prefix, dims) {
            out.push(l);
        }
        return;
    }
    for i in 0..rest.len() {
        let c = rest[i];
        if matches!(c, Component::Out(d) if !prefix.contains(&Component::In(d))) {
            continue;
        }
        rest.remove(i);
        prefix.push(c);
        permute(prefix, rest, dims, out);
        prefix.pop();
        rest.insert(i, c);
    }
}

#[cfg(test)]
mod tests {
    use super::Component::*;
    use super::*;

    fn l(c: &[Component]) -> Layout {
        Layout::new(c, 2).unwrap()
    }

    #[test]
    fn candidate_counts() {
        assert_eq!(candidates(1).layouts.len(), 3);
        assert_eq!(candidates(2).layouts.len(), 30);
        assert_eq!(candidates(3).layouts.len(), 630);
        assert!(candidates(2).layouts.contains(&Layout::aos(2).expand()));
        // Sizes from component sets agree with sizes from prefixes.
        let shape = Shape::new(&[1 << 5, 1 << 3], 12).unwrap();
        let c = candidates(2);
        for (i, l) in c.layouts.iter().enumerate() {
            for j in 0..=c.len {
                assert_eq!(Affine::of_mask(c.prefix_mask[i * (c.len + 1) + j], &shape), Affine::of_prefix(l, j, &shape));
            }
            for (b, m) in c.layouts.iter().zip(&c.rest_mask[i * c.layouts.len()..]) {
                assert_eq!(Affine::of_mask(*m, &shape), shuffle(l, b, &shape));
            }
        }
    }

    #[test]
    fn table3_prefix_and_shuffle() {
        // Section 4.3, |F| = 16, 16K x 16K: sizes as functions of u = (log2 x_in, log2 y_in).
        let shape = Shape::new(&[1 << 14, 1 << 14], 16).unwrap();
        let l0 = l(&[Field, Dim(0), Dim(1)]);
        let l1 = l(&[Field, In(0), In(1), Out(0), Out(1)]);
        let l2 = l(&[Field, In(1), In(0), Out(0), Out(1)]);
        let l4 = l(&[Field, Dim(1), Dim(0)]);
        let u = [11, 10, 0];
        // |F| x_in = 32 KiB; shuffle TOTAL / |y_out|.
        assert_eq!(prefix(&l0, &l1, &shape), Affine { field: true, int: 0, coef: [1, 0, 0] });
        assert_eq!(prefix(&l0, &l1, &shape).log2_at(&shape, &u), 15.0);
        assert_eq!(shuffle(&l0, &l1, &shape).log2_at(&shape, &u), 4.0 + 14.0 + 10.0);
        // |F|, shuffle |F| x_in y_in = 32 MiB at the paper's block factors.
        assert_eq!(prefix(&l1, &l2, &shape).log2_at(&shape, &u), 4.0);
        assert_eq!(shuffle(&l1, &l2, &shape), Affine { field: true, int: 0, coef: [1, 1, 0] });
        assert_eq!(shuffle(&l1, &l2, &shape).log2_at(&shape, &u), 25.0);
        // Same layout: all of it in one request, nothing to shuffle.
        assert_eq!(prefix(&l2, &l2, &shape), shape.total());
        assert_eq!(shuffle(&l2, &l2, &shape).log2_at(&shape, &u), 0.0);
        // |F| y_in.
        assert_eq!(prefix(&l2, &l4, &shape).log2_at(&shape, &u), 14.0);
        assert!(l0.same_as(&l(&[Field, In(0), Out(0), In(1), Out(1)])));
        assert!(l0.converts_to(&l4));
        assert_eq!(l1.show(&[2048, 1024]), "<F, x_in=2048, y_in=1024, x_out, y_out>");
    }

    #[test]
    fn in_and_out_cancel() {
        let shape = Shape::new(&[1 << 10], 12).unwrap();
        let a = Layout::new(&[In(0), Out(0), Field], 1).unwrap();
        let f = Affine::of_prefix(&a, 2, &shape);
        assert_eq!(f, Affine { field: false, int: 10, coef: [0; 3] });
        assert_eq!(f.log2_at(&shape, &[3, 0, 0]), 10.0);
        assert_eq!(shape.total_bytes(), 12 << 10);
    }

    #[test]
    fn bad_layouts_and_shapes() {
        assert!(Layout::new(&[Field, Dim(0), Dim(0)], 1).is_err());
        assert!(Layout::new(&[Dim(0)], 1).is_err());
        assert!(Layout::new(&[Field, In(0)], 1).is_err());
        assert!(Layout::new(&[Field, Dim(0), Dim(1)], 1).is_err());
        assert!(Layout::new(&[Field], 0).is_err());
        assert_eq!(Shape::new(&[3], 1), Err(LayoutError::Extent(3)));
        assert_eq!(Shape::new(&[], 1), Err(LayoutError::Dims(0)));
        assert_eq!(Shape::new(&[4], 0), Err(LayoutError::Field));
        assert_eq!(Shape::new(&[1 << 40, 1 << 30], 8), Err(LayoutError::TooLarge));
    }
}
