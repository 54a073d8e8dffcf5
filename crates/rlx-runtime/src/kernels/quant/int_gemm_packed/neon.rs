//! `IntGemmPacked`'s NEON tiles with the dot-product extension (`sdot`,
//! Armv8.2's FEAT_DotProd: Cortex-A55/A76 and later, Neoverse N1, Apple
//! M1): up to 4 rows times one weight block (16 columns), 16 accumulators
//! of 4 i32 lanes. A block's quad is 4 vectors of 4 lanes by 4 k, the
//! layout `sdot` wants; 16 bytes of a row (4 quads) are loaded once and
//! each quad broadcast from its 32-bit lane by the indexed form, so per
//! 4 quads a tile makes 16 weight loads, 4 row loads and 64 `sdot`s.
//!
//! `sdot` multiplies i8 by i8, so this body runs `a` in the signed domain:
//! the entry hands it a [`Product`] whose `flip` turns a u8 `a` into i8
//! (`a - 128`) and leaves an i8 one as it is, with `a_zero` shifted alike;
//! the store's correction `a_zero * w_sums[j]` is shift-invariant in the
//! same way (`mod.rs`), so the sums are the other bodies' bit for bit.
//!
//! The `sdot` intrinsics are not stable Rust (`stdarch_neon_dotprod`), so
//! the instruction is written as inline assembly, one per multiply-add.
//!
//! Without the extension (Armv8.0: Cortex-A53/A72, the Raspberry Pi 4)
//! the same tiles run on plain NEON, 2 rows at a time: per quad and weight
//! vector, `smull` / `smull2` multiply its two halves (2 lanes by 4 k) by
//! the row's quad repeated, into 8 i16 (each product of two i8 fits), and
//! `sadalp` adds adjacent pairs into 4 i32; one `addp` per vector folds the
//! pairs into lane order at the end: four times the instructions of
//! `sdot` per product. Neither body was timed on hardware (QEMU emulates
//! the instructions, not their speed).

use std::arch::aarch64::*;
use std::arch::asm;
use std::ops::Range;

use super::{Product, Store, LANES, QUAD_BYTES};

/// Rows per tile.
const ROWS: usize = 4;
/// Vectors of 4 i32 lanes per weight block.
const VECTORS: usize = LANES / 4;

/// `acc[l] += sum over t of w[4 l + t] * a[4 I + t]`, as i8 times i8 in
/// i32 (`sdot` by element: lane `I` of `a` broadcast).
///
/// # Safety
/// The CPU has the dot-product extension (only called from functions
/// that enable it).
#[inline(always)]
unsafe fn sdot<const I: i32>(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: a register-only instruction the caller's CPU has.
    unsafe {
        asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {a:v}.4b[{lane}]",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            a = in(vreg) a,
            lane = const I,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// Rows `rows` times blocks `blocks` on plain NEON, tiles of up to 2 rows
/// by one block.
///
/// # Safety
/// NEON available; as [`task_dot`] otherwise.
#[target_feature(enable = "neon")]
pub(super) unsafe fn task_neon(p: &Product, rows: Range<usize>, blocks: Range<usize>) {
    for block in blocks {
        let mut r = rows.start;
        while r < rows.end {
            let take = (rows.end - r).min(2);
            // SAFETY: rows `r..r + take` and `block` are the caller's.
            unsafe {
                match take {
                    2 => tile_neon::<2>(p, r, block),
                    _ => tile_neon::<1>(p, r, block),
                }
            }
            r += take;
        }
    }
}

/// `R` rows from `row0` times block `block`, without `sdot`.
///
/// # Safety
/// As [`task_neon`], for these rows and this block.
#[target_feature(enable = "neon")]
unsafe fn tile_neon<const R: usize>(p: &Product, row0: usize, block: usize) {
    // SAFETY: the block is inside the packed weight (caller).
    let w = unsafe { p.block(block) };
    // Per row and weight vector, the pair sums of its low and high lanes.
    let mut acc = [[[vdupq_n_s32(0); 2]; VECTORS]; R];
    for q in 0..p.quads() {
        // SAFETY: quad `q < quads` of each row and of the block (caller).
        unsafe {
            let wq = w.add(q * QUAD_BYTES);
            let rows: [int8x16_t; R] = std::array::from_fn(|r| vreinterpretq_s8_u32(vdupq_n_u32(p.quad(row0 + r, q))));
            for v in 0..VECTORS {
                let wv = vld1q_s8(wq.add(16 * v));
                for (acc, &x) in acc.iter_mut().zip(&rows) {
                    acc[v][0] = vpadalq_s16(acc[v][0], vmull_s8(vget_low_s8(wv), vget_low_s8(x)));
                    acc[v][1] = vpadalq_s16(acc[v][1], vmull_high_s8(wv, x));
                }
            }
        }
    }
    let j = block * LANES;
    for (r, acc) in acc.iter().enumerate() {
        // Lane order: `addp` of the low and high halves' pair sums.
        let sums: [int32x4_t; VECTORS] = std::array::from_fn(|v| vpaddq_s32(acc[v][0], acc[v][1]));
        // SAFETY: row `row0 + r`, columns `j..` below `n` (caller).
        unsafe { store(p, row0 + r, j, &sums) };
    }
}

/// Rows `rows` times blocks `blocks`, tiles of up to 4 rows by one block.
///
/// # Safety
/// NEON and the dot-product extension available; `rows` inside `0..m`,
/// `blocks` inside `0..ceil(n / 16)`; `p`'s extents, `p` in the signed
/// domain (the module's comment).
#[target_feature(enable = "neon,dotprod")]
pub(super) unsafe fn task_dot(p: &Product, rows: Range<usize>, blocks: Range<usize>) {
    for block in blocks {
        let mut r = rows.start;
        while r < rows.end {
            let take = (rows.end - r).min(ROWS);
            // SAFETY: rows `r..r + take` and `block` are the caller's.
            unsafe {
                match take {
                    4 => tile::<4>(p, r, block),
                    3 => tile::<3>(p, r, block),
                    2 => tile::<2>(p, r, block),
                    _ => tile::<1>(p, r, block),
                }
            }
            r += take;
        }
    }
}

/// One quad step of the weight block: the quad's 4 vectors times lane `I`
/// of each row's 16 bytes.
///
/// # Safety
/// As [`tile`]; `wq` points at a whole quad of the block.
#[inline(always)]
unsafe fn step<const R: usize, const I: i32>(
    acc: &mut [[int32x4_t; VECTORS]; R],
    wq: *const i8,
    rows: &[int8x16_t; R],
) {
    // SAFETY: the quad's 64 bytes are inside the packed weight (caller).
    let wv: [int8x16_t; VECTORS] = std::array::from_fn(|v| unsafe { vld1q_s8(wq.add(16 * v)) });
    for (acc, &row) in acc.iter_mut().zip(rows) {
        for (acc, &w) in acc.iter_mut().zip(&wv) {
            // SAFETY: the caller enables the dot-product extension.
            *acc = unsafe { sdot::<I>(*acc, w, row) };
        }
    }
}

/// `R` rows from `row0` times block `block`.
///
/// # Safety
/// As [`task_dot`], for these rows and this block.
#[target_feature(enable = "neon,dotprod")]
unsafe fn tile<const R: usize>(p: &Product, row0: usize, block: usize) {
    let quads = p.quads();
    // SAFETY: the block is inside the packed weight (caller).
    let w = unsafe { p.block(block) };
    let mut acc = [[vdupq_n_s32(0); VECTORS]; R];
    let flip = vreinterpretq_s8_u32(vdupq_n_u32(p.flip));
    // Groups of 4 whole quads: 16 bytes of each row, loaded once.
    let groups = p.k / 16;
    for g in 0..groups {
        // SAFETY: bytes `16 g..16 g + 16` of each row are inside `a`, and
        // quads `4 g..4 g + 4` of the block inside the weight (caller).
        unsafe {
            let rows: [int8x16_t; R] =
                std::array::from_fn(|r| veorq_s8(vld1q_s8(p.a.add((row0 + r) * p.k + 16 * g).cast()), flip));
            let wq = w.add(4 * g * QUAD_BYTES);
            step::<R, 0>(&mut acc, wq, &rows);
            step::<R, 1>(&mut acc, wq.add(QUAD_BYTES), &rows);
            step::<R, 2>(&mut acc, wq.add(2 * QUAD_BYTES), &rows);
            step::<R, 3>(&mut acc, wq.add(3 * QUAD_BYTES), &rows);
        }
    }
    // The last quads, one word each (`Product::quad`: flipped, a partial
    // quad padded).
    for q in 4 * groups..quads {
        // SAFETY: quad `q < quads` of each row and of the block (caller).
        unsafe {
            let rows: [int8x16_t; R] = std::array::from_fn(|r| vreinterpretq_s8_u32(vdupq_n_u32(p.quad(row0 + r, q))));
            step::<R, 0>(&mut acc, w.add(q * QUAD_BYTES), &rows);
        }
    }
    let j = block * LANES;
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `row0 + r`, columns `j..` below `n` (caller).
        unsafe { store(p, row0 + r, j, acc) };
    }
}

/// Corrects row `r`'s sums for columns `j..j + 16` for the zero points and
/// stores them as `p.store` says: on vectors for a whole block, through
/// [`Product::finish`] for the last, partial one.
///
/// # Safety
/// As [`tile`]; `r < m`, `j < n`.
#[target_feature(enable = "neon")]
unsafe fn store(p: &Product, r: usize, j: usize, acc: &[int32x4_t; VECTORS]) {
    if p.n - j < LANES {
        let mut sums = [0i32; LANES];
        for (v, &acc) in acc.iter().enumerate() {
            // SAFETY: 4 i32 of a local buffer.
            unsafe { vst1q_s32(sums.as_mut_ptr().add(4 * v), acc) };
        }
        // SAFETY: row `r`, columns `j..n` (caller).
        unsafe { p.finish(r, j, p.n - j, &sums) };
        return;
    }
    // SAFETY: columns `j..j + 16` are below `n`, row `r < m`: inside every
    // per-column and per-row operand and the output (caller).
    unsafe {
        let a_zero = vdupq_n_s32(p.a_zero);
        let row_term = if p.w_zero.is_null() { vdupq_n_s32(0) } else { vdupq_n_s32(*p.row_terms.add(r)) };
        for (v, &acc) in acc.iter().enumerate() {
            let col = j + 4 * v;
            let mut sum = vsubq_s32(acc, vmulq_s32(a_zero, vld1q_s32(p.w_sums.add(col))));
            if !p.w_zero.is_null() {
                let zw = if p.w_zero_per_column { vld1q_s32(p.w_zero.add(col)) } else { vdupq_n_s32(*p.w_zero) };
                sum = vsubq_s32(sum, vmulq_s32(zw, row_term));
            }
            match p.store {
                Store::Sums(c) => vst1q_s32(c.add(r * p.n + col), sum),
                Store::Dequant { c, scale, scale_per_column, bias } => {
                    let scale = if scale_per_column { vld1q_f32(scale.add(col)) } else { vdupq_n_f32(*scale) };
                    // A product then a sum, as the scalar steps (no fused
                    // multiply-add).
                    let mut out = vmulq_f32(vcvtq_f32_s32(sum), scale);
                    if !bias.is_null() {
                        out = vaddq_f32(out, vld1q_f32(bias.add(col)));
                    }
                    vst1q_f32(c.add(r * p.n + col), out);
                }
            }
        }
    }
}
