//! Dense rows of 8- and 16-byte blocks moved with 8-byte accesses on the strided side and
//! 16-byte ones on the packed side.
//!
//! A row of 16-byte blocks a few lines apart or less (two doubles, one complex double: vec-2 of
//! the suite) moves fastest, on the Zen 4 this project measures on, with two 8-byte accesses
//! per block on the strided side and one 16-byte access on the packed side, one block per loop
//! iteration. Paired rounds of `sluice-ddt-bench` (vec-2: 4 MiB packed, 8 MiB of blocks, all
//! in L3), sluice's ratio against other forms of the same loop:
//! - unpack (one 16-byte load, two 8-byte stores): 1.07-1.08 against the same loop with one
//!   16-byte store in quiet runs, 0.99 in a disturbed one; 1.01-1.04 against MPICH's loop (two
//!   8-byte loads and stores per block). Unrolling by four cost 0-2% (measured on the 16-byte
//!   store loop).
//! - pack (two 8-byte loads, one 16-byte store): 1.03-1.06 against the compiler's unrolled loop
//!   of 16-byte loads and stores. The unpack's form mirrored (one 16-byte load, two 8-byte
//!   stores to the packed side) was at parity with MPICH in quiet runs but fell to 0.67-0.80 of
//!   the compiler's loop in disturbed ones (another tenant loading the shared cache).
//! - 8-byte blocks 16 bytes apart (vec-1) pack the same way, two blocks per 16-byte store:
//!   1.05-1.07 against the AVX2 compaction it replaced (four 32-byte loads, `vpunpcklqdq` +
//!   `vpermq`, two 32-byte stores per 8 blocks), which had fallen to 0.96 of MPICH's loop in a
//!   quiet run; four blocks per 32-byte store measured 1.00-1.04 against two per 16-byte one,
//!   not worth declaring the upper vector halves to the compiler.
//!
//! The loops are assembly because the compiler merges adjacent 8-byte accesses into one
//! 16-byte one (an intrinsics version's two 8-byte stores became one in the disassembly) and
//! unrolls. Each comes in legacy SSE encodings for the portable build and VEX ones for AVX2,
//! whose kernels may leave upper vector halves dirty (mixing the two costs a transition on some
//! Intel cores). The A/B runs had the pointer updates of the unpack loop between the load and
//! the stores; the loops here update both pointers after the moves (measured as committed in
//! the full runs and single-case runs of docs/benchmarks.md, not against the other forms).

/// One row loop: `$a`, `$b`, `$c` move 16 bytes between `{mem}` (the strided side: one 16-byte
/// block, or two 8-byte blocks `{stride}` apart) and `{buf}` (the packed side) through `{x}`.
#[cfg(target_arch = "x86_64")]
macro_rules! split_loop {
    ($name:ident, $a:literal, $b:literal, $c:literal) => {
        /// Moves `n > 0` steps of 16 packed bytes between `mem`, `mem + stride`, ... and the
        /// contiguous `buf`, in order (the direction and the blocks per step are the
        /// function's).
        ///
        /// # Safety
        /// The blocks of each step `i < n` at `mem + i*stride` and `buf .. buf + 16 n` valid
        /// for the direction's access, the buffer not overlapping any block; `n > 0`; the CPU
        /// runs the encoding.
        #[inline(always)]
        pub(super) unsafe fn $name(mem: *mut u8, buf: *mut u8, stride: isize, n: usize) {
            let end = buf.wrapping_add(16 * n);
            // SAFETY: the loop accesses the step's blocks at `mem + i*stride` and the 16 bytes
            // at `buf + 16 i` for each of the `n` steps (caller's contract; `n > 0`, so the
            // loop's exit test `buf == end` is reached); it touches no stack and clobbers only
            // the named registers and the flags.
            unsafe {
                std::arch::asm!(
                    ".p2align 4",
                    "2:",
                    $a,
                    $b,
                    $c,
                    "add {mem}, {stride}",
                    "add {buf}, 16",
                    "cmp {buf}, {end}",
                    "jne 2b",
                    mem = inout(reg) mem => _,
                    buf = inout(reg) buf => _,
                    end = in(reg) end,
                    stride = in(reg) stride,
                    x = out(xmm_reg) _,
                    options(nostack),
                );
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
split_loop!(pack_16_sse, "movq {x}, qword ptr [{mem}]", "movhps {x}, qword ptr [{mem} + 8]", "movups xmmword ptr [{buf}], {x}");
#[cfg(target_arch = "x86_64")]
split_loop!(pack_16_vex, "vmovq {x}, qword ptr [{mem}]", "vmovhps {x}, {x}, qword ptr [{mem} + 8]", "vmovups xmmword ptr [{buf}], {x}");
#[cfg(target_arch = "x86_64")]
split_loop!(unpack_16_sse, "movups {x}, xmmword ptr [{buf}]", "movq qword ptr [{mem}], {x}", "movhps qword ptr [{mem} + 8], {x}");
#[cfg(target_arch = "x86_64")]
split_loop!(unpack_16_vex, "vmovups {x}, xmmword ptr [{buf}]", "vmovq qword ptr [{mem}], {x}", "vmovhps qword ptr [{mem} + 8], {x}");

// 8-byte blocks 16 bytes apart (a column of a two-column matrix, vec-1), packed two per step:
// the second block is `[{mem} + 16]` and the step's stride is 32.
#[cfg(target_arch = "x86_64")]
split_loop!(pack_alternate_8_sse, "movq {x}, qword ptr [{mem}]", "movhps {x}, qword ptr [{mem} + 16]", "movups xmmword ptr [{buf}], {x}");
#[cfg(target_arch = "x86_64")]
split_loop!(
    pack_alternate_8_vex,
    "vmovq {x}, qword ptr [{mem}]",
    "vmovhps {x}, {x}, qword ptr [{mem} + 16]",
    "vmovups xmmword ptr [{buf}], {x}"
);
