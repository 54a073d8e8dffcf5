//! `IntGemmPacked`: the 8-bit product on a weight the importer packed
//! (`rlx_core::qconv::pack_qgemm_weight`), the zero points applied at
//! the store and, for a dynamically quantized product, its dequantization
//! (`f32(sum) * scale + bias`) fused.
//!
//! The weight is the 1x1 `QLinearConv2D` filter of its transpose: per
//! block of 16 columns and quad of 4 k, 16 lanes of 4 i8. The inner step
//! broadcasts one quad of a row of `a` (4 u8, one 32-bit word) and
//! multiplies it by a block's 64 weight bytes into 16 i32 lanes
//! (`vpdpbusd`, u8 times i8; `x86.rs`). An i8 `a` is shifted into u8
//! (`a + 128`: one xor of the word), and its zero point with it. On
//! aarch64 with the dot-product extension the same step is one `sdot` by
//! element (i8 times i8; `neon.rs`), with `a` shifted into i8.
//!
//! The zero points come in once per output, at the store:
//! `sum (a - za)(w - zw[j]) = sum a w - za * w_sums[j] - zw[j] * (row_sum
//! - k * za)`, with `row_sum` the sum of the (shifted) row, computed into
//! the scratch only when the weight has a zero point. Everything is
//! wrapping i32, so the tiles, the portable body, every thread count and
//! the reference agree bit for bit; the f32 steps are the composed ones'
//! (`CastI32ToF32`, the scale's `Mul`, the bias' `Add`), lane by lane.

use rlx_core::qconv::{QCONV_IN_QUAD, QCONV_OUT_BLOCK};

#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use scalar::int_gemm_packed_reference;

use super::shared::Body;
use super::IntElem;
use crate::kernels::reduce::SendPtr;

/// Columns per weight block: one vector of i32 lanes.
pub(super) const LANES: usize = QCONV_OUT_BLOCK;
/// Bytes of one quad of one block.
pub(super) const QUAD_BYTES: usize = QCONV_OUT_BLOCK * QCONV_IN_QUAD;

/// Where a tile's sums go.
#[derive(Clone, Copy)]
pub(super) enum Store {
    /// The i32 sums.
    Sums(*mut i32),
    /// `f32(sum) * scale[j] + bias[j]` (`bias` null adds nothing).
    Dequant { c: *mut f32, scale: *const f32, scale_per_column: bool, bias: *const f32 },
}

/// What every tile of one call reads.
#[derive(Clone, Copy)]
pub(super) struct Product {
    /// `[m, k]` u8 (an i8 `a` is read through `flip`).
    pub a: *const u8,
    pub w: *const i8,
    pub w_sums: *const i32,
    /// The weight's zero point, null when 0.
    pub w_zero: *const i32,
    pub w_zero_per_column: bool,
    /// Per row, `row_sum - k * za` (wrapping); null when `w_zero` is.
    pub row_terms: *const i32,
    /// Per row and quad, the quad's 4 bytes (shifted) as 4 u16: the AVX2
    /// body's broadcast operand; null for the other bodies.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub widened: *const u64,
    /// `a`'s zero point, shifted as `a` is.
    pub a_zero: i32,
    /// `0x8080_8080` for an i8 `a` (the xor that adds 128 to each byte), else 0.
    pub flip: u32,
    pub k: usize,
    pub n: usize,
    pub store: Store,
}

// SAFETY: the pointers are the caller's extents; tiles write disjoint
// rows and columns of the output and only read the rest.
unsafe impl Send for Product {}
// SAFETY: as above.
unsafe impl Sync for Product {}

impl Product {
    /// Quads of k, the last one partial when `k % 4 != 0`.
    pub fn quads(&self) -> usize {
        self.k.div_ceil(QCONV_IN_QUAD)
    }

    /// Quad `q` of row `r` as one word, shifted into u8; bytes past `k`
    /// are 0 before the shift (they meet the packing's zero weights).
    ///
    /// # Safety
    /// `r < m`, `q < quads()`.
    #[inline(always)]
    pub unsafe fn quad(&self, r: usize, q: usize) -> u32 {
        let at = r * self.k + q * QCONV_IN_QUAD;
        // SAFETY: a whole quad lies inside row `r`; a partial one is read
        // byte by byte up to the row's end.
        let word = unsafe {
            if at + QCONV_IN_QUAD <= (r + 1) * self.k {
                self.a.add(at).cast::<u32>().read_unaligned()
            } else {
                (0..self.k - q * QCONV_IN_QUAD).fold(0u32, |word, t| word | u32::from(*self.a.add(at + t)) << (8 * t))
            }
        };
        word ^ self.flip
    }

    /// The first byte of block `block`'s packed weight.
    ///
    /// # Safety
    /// `block < ceil(n / 16)`.
    #[inline(always)]
    pub unsafe fn block(&self, block: usize) -> *const i8 {
        // SAFETY: inside the packed weight (caller).
        unsafe { self.w.add(block * self.quads() * QUAD_BYTES) }
    }

    /// Stores lanes `0..lanes` of row `r`'s sums for columns `j..`,
    /// corrected for the zero points, one lane at a time (the portable
    /// body's store; the vector tiles do the same in registers).
    ///
    /// # Safety
    /// `r < m`, `j + lanes <= n`.
    pub unsafe fn finish(&self, r: usize, j: usize, lanes: usize, acc: &[i32; LANES]) {
        for (l, &acc) in acc.iter().enumerate().take(lanes) {
            let col = j + l;
            // SAFETY: `col < n`, `r < m`: inside every per-column and
            // per-row operand and the output (caller).
            unsafe {
                let mut sum = acc.wrapping_sub(self.a_zero.wrapping_mul(*self.w_sums.add(col)));
                if !self.w_zero.is_null() {
                    let zw = *self.w_zero.add(if self.w_zero_per_column { col } else { 0 });
                    sum = sum.wrapping_sub(zw.wrapping_mul(*self.row_terms.add(r)));
                }
                match self.store {
                    Store::Sums(c) => *c.add(r * self.n + col) = sum,
                    Store::Dequant { c, scale, scale_per_column, bias } => {
                        let mut v = sum as f32 * *scale.add(if scale_per_column { col } else { 0 });
                        if !bias.is_null() {
                            v += *bias.add(col);
                        }
                        *c.add(r * self.n + col) = v;
                    }
                }
            }
        }
    }
}

/// `IntGemmPacked` without a scale: `c[r, j] = sum over k of (a[r, k] -
/// a_zero) * (w[k, j] - w_zero[j])` in wrapping i32, `w` packed by
/// `rlx_core::qconv::pack_qgemm_weight`, `w_sums[j]` its column sums.
/// `a_zero` null is 0, `w_zero` null is 0 (else `w_zero_len` 1 or `n`
/// elements). `par` splits the tiles over the pool.
///
/// # Safety
///
/// `a` readable for `m * k` elements, `w` for
/// `qconv::qgemm_weight_len(k, n)` bytes, `w_sums` for `n` i32, `a_zero`
/// (unless null) for one element, `w_zero` (unless null) for
/// `w_zero_len` i32; `c` writable for `m * n` i32, overlapping no input;
/// `scratch` writable for `plan::int_gemm_packed_scratch_bytes(m, k,
/// !w_zero.is_null())` bytes, 8-byte aligned, overlapping nothing.
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_gemm_packed<A: IntElem>(
    scratch: *mut u8,
    a: *const A,
    w: *const i8,
    w_sums: *const i32,
    a_zero: *const A,
    w_zero: *const i32,
    c: *mut i32,
    m: usize,
    k: usize,
    n: usize,
    w_zero_len: usize,
    par: bool,
) {
    // SAFETY: the caller's contract.
    unsafe {
        product(scratch, a, w, w_sums, a_zero, w_zero, w_zero_len, Store::Sums(c), [m, k, n], par, Body::detect())
    }
}

/// `IntGemmPacked` with a scale: [`int_gemm_packed`]'s sums as
/// `c[r, j] = f32(sum) * scale[j] + bias[j]` (`scale` one element when
/// `scale_len` is 1, else `n`; `bias` null adds nothing).
///
/// # Safety
///
/// As [`int_gemm_packed`]; `scale` readable for `scale_len` f32, `bias`
/// (unless null) for `n`; `c` writable for `m * n` f32, overlapping no
/// input.
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_gemm_packed_f32<A: IntElem>(
    scratch: *mut u8,
    a: *const A,
    w: *const i8,
    w_sums: *const i32,
    a_zero: *const A,
    w_zero: *const i32,
    scale: *const f32,
    bias: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    w_zero_len: usize,
    scale_len: usize,
    par: bool,
) {
    let store = Store::Dequant { c, scale, scale_per_column: scale_len != 1, bias };
    // SAFETY: the caller's contract.
    unsafe { product(scratch, a, w, w_sums, a_zero, w_zero, w_zero_len, store, [m, k, n], par, Body::detect()) }
}

/// [`int_gemm_packed`] or [`int_gemm_packed_f32`] (by `store`) on the
/// body `body`: the tests compare every body this CPU runs.
///
/// # Safety
/// As the entry of `store`'s kind; `body` runs on this CPU.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn int_gemm_packed_body<A: IntElem>(
    body: Body,
    scratch: *mut u8,
    a: *const A,
    w: *const i8,
    w_sums: *const i32,
    a_zero: *const A,
    w_zero: *const i32,
    w_zero_len: usize,
    store: Store,
    mkn: [usize; 3],
    par: bool,
) {
    // SAFETY: the caller's contract.
    unsafe { product(scratch, a, w, w_sums, a_zero, w_zero, w_zero_len, store, mkn, par, body) }
}

/// Rows and weight blocks per task of `body`.
fn task_shape(body: Body) -> (usize, usize) {
    match body {
        #[cfg(target_arch = "x86_64")]
        Body::Vnni => (x86::ROWS, x86::BLOCKS),
        #[cfg(target_arch = "x86_64")]
        Body::AvxVnni => (2 * x86::AVX_VNNI_ROWS, 1),
        #[cfg(target_arch = "x86_64")]
        Body::Avx2 => (4, 1),
        #[cfg(target_arch = "aarch64")]
        Body::Dot | Body::Neon => (8, 1),
        Body::Portable => (4, 1),
    }
}
/// The shared body of both entries.
///
/// # Safety
/// As the entry of `store`'s kind; `body` runs on this CPU.
#[allow(clippy::too_many_arguments)]
unsafe fn product<A: IntElem>(
    scratch: *mut u8,
    a: *const A,
    w: *const i8,
    w_sums: *const i32,
    a_zero: *const A,
    w_zero: *const i32,
    w_zero_len: usize,
    store: Store,
    [m, k, n]: [usize; 3],
    par: bool,
    body: Body,
) {
    if m == 0 || n == 0 {
        return;
    }
    let shift = if A::SIGNED { 128 } else { 0 };
    // SAFETY: a non-null zero point is readable for one element (caller).
    let a_zero = shift + if a_zero.is_null() { 0 } else { unsafe { (*a_zero).to_i32() } };
    let flip = if A::SIGNED { 0x8080_8080 } else { 0 };
    let row_terms = if w_zero.is_null() { std::ptr::null_mut() } else { scratch.cast::<i32>() };
    let quads = k.div_ceil(QCONV_IN_QUAD);
    #[cfg(target_arch = "x86_64")]
    let widen = matches!(body, Body::Avx2);
    #[cfg(not(target_arch = "x86_64"))]
    let widen = false;
    let widened = if widen {
        // SAFETY: the widened quads follow the row terms in the scratch.
        unsafe { scratch.add(rlx_core::plan::int_gemm_packed_row_terms_bytes(m, !w_zero.is_null())) }.cast::<u64>()
    } else {
        std::ptr::null_mut()
    };
    // `sdot` multiplies i8 by i8: that body sees `a` and its zero point
    // shifted back by 128 (the row terms, `sum (a - za)`, are the same in
    // either domain).
    #[cfg(target_arch = "aarch64")]
    let signed = matches!(body, Body::Dot | Body::Neon);
    #[cfg(not(target_arch = "aarch64"))]
    let signed = false;
    let (body_flip, body_a_zero) = if signed { (flip ^ 0x8080_8080, a_zero - 128) } else { (flip, a_zero) };
    let p = Product {
        a: a.cast(),
        w,
        w_sums,
        w_zero,
        w_zero_per_column: w_zero_len != 1,
        row_terms,
        widened,
        a_zero: body_a_zero,
        flip: body_flip,
        k,
        n,
        store,
    };
    let split = |units: usize, min: usize, f: &(dyn Fn(usize, usize) + Sync)| {
        if par {
            crate::threads::par_for(units, min, f);
        } else {
            f(0, units);
        }
    };
    if !row_terms.is_null() {
        let (terms, p) = (SendPtr(row_terms), &p);
        split(m, 16, &|start, len| {
            for r in start..start + len {
                // SAFETY: row `r < m` of `a` and of the scratch's terms.
                unsafe {
                    let row = std::slice::from_raw_parts(p.a.add(r * k), k);
                    let sum = row.iter().fold(0i32, |s, &v| s.wrapping_add(i32::from(v ^ flip as u8)));
                    *terms.get().add(r) = sum.wrapping_sub((k as i32).wrapping_mul(a_zero));
                }
            }
        });
    }
    if widen {
        let (out, p) = (SendPtr(widened), &p);
        split(m, 16, &|start, len| {
            for r in start..start + len {
                for q in 0..quads {
                    // SAFETY: row `r < m`, quad `q`: inside `a` and the
                    // widened copy, each task writing its own rows.
                    unsafe {
                        let bytes = p.quad(r, q).to_le_bytes();
                        let wide = bytes.iter().rev().fold(0u64, |acc, &b| acc << 16 | u64::from(b));
                        *out.get().add(r * quads + q) = wide;
                    }
                }
            }
        });
    }
    let (rows, blocks) = task_shape(body);
    let (bands, groups) = (m.div_ceil(rows), n.div_ceil(LANES).div_ceil(blocks));
    let all_blocks = n.div_ceil(LANES);
    // Tasks by column group, then row band: a worker's contiguous share
    // keeps its groups' weight blocks in its cache while `a` streams.
    split(bands * groups, 1, &|start, len| {
        for t in start..start + len {
            let (group, band) = (t / bands, t % bands);
            let rows = band * rows..((band + 1) * rows).min(m);
            let blocks = group * blocks..((group + 1) * blocks).min(all_blocks);
            // SAFETY: the rows and blocks are inside the product; each task
            // writes only its own.
            unsafe {
                match body {
                    #[cfg(target_arch = "x86_64")]
                    Body::Vnni => x86::task_vnni(&p, rows, blocks),
                    #[cfg(target_arch = "x86_64")]
                    Body::AvxVnni => x86::task_avx_vnni(&p, rows, blocks),
                    #[cfg(target_arch = "x86_64")]
                    Body::Avx2 => x86::task_avx2(&p, rows, blocks),
                    #[cfg(target_arch = "aarch64")]
                    Body::Dot => neon::task_dot(&p, rows, blocks),
                    #[cfg(target_arch = "aarch64")]
                    Body::Neon => neon::task_neon(&p, rows, blocks),
                    Body::Portable => task_portable(&p, rows, blocks),
                }
            }
        }
    });
}

/// Rows `rows` times blocks `blocks`, one row and block at a time (LLVM
/// vectorises the 16 lanes).
///
/// # Safety
/// `rows` inside `0..m`, `blocks` inside `0..ceil(n / 16)`; the caller's
/// extents.
unsafe fn task_portable(p: &Product, rows: std::ops::Range<usize>, blocks: std::ops::Range<usize>) {
    for block in blocks {
        let j = block * LANES;
        // SAFETY: `block` is a block of the weight (caller).
        let w = unsafe { p.block(block) };
        for r in rows.clone() {
            let mut acc = [0i32; LANES];
            for q in 0..p.quads() {
                // SAFETY: `r < m`, `q < quads`; quad `q` of the block is inside
                // the packed weight.
                let (word, wq) =
                    unsafe { (p.quad(r, q).to_le_bytes(), &*w.add(q * QUAD_BYTES).cast::<[i8; QUAD_BYTES]>()) };
                for (l, acc) in acc.iter_mut().enumerate() {
                    for (t, &x) in word.iter().enumerate() {
                        *acc = acc.wrapping_add(i32::from(x) * i32::from(wq[l * QCONV_IN_QUAD + t]));
                    }
                }
            }
            // SAFETY: row `r`, columns `j..j + lanes` inside the output.
            unsafe { p.finish(r, j, LANES.min(p.n - j), &acc) };
        }
    }
}
