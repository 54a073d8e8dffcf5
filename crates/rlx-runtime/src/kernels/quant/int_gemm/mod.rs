//! `IntGemm`: the matrix product of 8-bit integers with i32 accumulation
//! (ONNX `MatMulInteger`, and the core of `QLinearMatMul`).
//!
//! The product runs on 16-bit operands: `b - b_zero` is packed (per call,
//! into the call's scratch) as interleaved pairs of k rows, `a - a_zero`
//! as pairs of k columns, so one `vpmaddwd` multiplies two k steps of 8
//! columns and adds them in i32 (`x86.rs`, AVX2). Every value is at most
//! 255 in magnitude, so each pair sum is exact and the i32 accumulation
//! wraps exactly as the reference's: integer sums give the same bits in
//! any order, so tails, threads and the portable body all agree with
//! `scalar.rs` (the element-at-a-time reference) bit for bit.

mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use scalar::int_gemm_reference;

use super::{int_gemm_packed_b_bytes, IntElem};
use crate::kernels::reduce::SendPtr;
use crate::kernels::variants::variants;

/// `IntGemm`: for each of `batch` products, `c[m,n] = sum over k of
/// (a[m,k] - a_zero) * (b[k,n] - b_zero[j])`, accumulated in i32 with
/// wrapping (exact while the sum fits: `k` up to 33,000 for any 8-bit
/// values). `a_zero` is one element (0 when null); `b_zero` is one element
/// (`b_zero_len` 1) or one per column (`n`), 0 when null. `b` is
/// `[batch, k, n]`, or one `[k, n]` shared by every batch when `b_bcast`.
/// `par` splits the output rows over the pool.
///
/// # Safety
///
/// `a` readable for `batch * m * k` elements, `b` for `k * n` (`b_bcast`)
/// or `batch * k * n`, `a_zero` for one element and `b_zero` for
/// `b_zero_len` elements unless null; `c` writable for `batch * m * n`
/// i32 and not overlapping any input; `scratch` writable for
/// [`super::int_gemm_scratch_bytes`] bytes, 64-byte aligned, overlapping nothing.
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_gemm<A: IntElem, B: IntElem>(
    scratch: *mut u8,
    a: *const A,
    b: *const B,
    a_zero: *const A,
    b_zero: *const B,
    c: *mut i32,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    b_zero_len: usize,
    b_bcast: bool,
    par: bool,
) {
    if batch == 0 || m == 0 || n == 0 {
        return;
    }
    let kp = k.div_ceil(2);
    // SAFETY: a non-null zero point is readable for one element (caller).
    let za = if a_zero.is_null() { 0 } else { unsafe { (*a_zero).to_i32() } };
    let packed_b = scratch.cast::<i16>();
    // SAFETY: the packed `b` comes first in the scratch, `a`'s pairs after.
    let a_pairs = unsafe { scratch.add(int_gemm_packed_b_bytes(k, n)) }.cast::<i32>();
    // Packing reads each input once; with `par` it is split as the
    // product is (rows of `a`, pairs of rows of `b`).
    let split = |units: usize, f: &(dyn Fn(usize, usize) + Sync)| {
        if par {
            crate::threads::par_for(units, 16, f);
        } else {
            f(0, units);
        }
    };
    let (a_in, ap_out) = (SendPtr(a.cast_mut()), SendPtr(a_pairs));
    split(batch * m, &|start, len| {
        // SAFETY: rows `start..start + len` of `a` (rows of `k`) and of
        // `a_pairs` (rows of `kp`) are inside the extents above; each task
        // writes only its own rows.
        unsafe { pack_a(a_in.get().add(start * k), za, ap_out.get().add(start * kp), len, k) }
    });
    // `b`'s zero point per tensor, or null with `b_zero` per column.
    let (zb_scalar, zb_columns) = match (b_zero.is_null(), b_zero_len == n && n > 1) {
        (true, _) => (0, std::ptr::null()),
        (false, true) => (0, b_zero),
        // SAFETY: a non-null `b_zero` is readable for one element.
        (false, false) => (unsafe { (*b_zero).to_i32() }, std::ptr::null()),
    };
    for bt in 0..batch {
        if bt == 0 || !b_bcast {
            // SAFETY: the matrix of batch `bt` (or the shared one) is inside
            // `b`; `packed_b` has room for `kp * n * 2` i16.
            let (b_in, zb_in, pb_out) = (
                SendPtr(unsafe { b.add(if b_bcast { 0 } else { bt * k * n }) }.cast_mut()),
                SendPtr(zb_columns.cast_mut()),
                SendPtr(packed_b),
            );
            split(kp, &|start, len| {
                // SAFETY: pairs `start..start + len` of the matrix and of
                // `packed_b` are inside the extents above; each task writes
                // only its own pairs.
                unsafe { pack_b(b_in.get(), zb_scalar, zb_in.get(), pb_out.get(), k, n, start..start + len) }
            });
        }
        let (ap, bp, cp) = (SendPtr(a_pairs), SendPtr(packed_b), SendPtr(c));
        let run = |start: usize, len: usize| {
            // SAFETY: blocks `start..start + len` of `ROWS` rows of batch
            // `bt` are inside `a_pairs` and `c`; each task writes only its
            // own rows of `c`; `packed_b` is only read here.
            unsafe {
                let rows = (start * ROWS)..((start + len) * ROWS).min(m);
                let row0 = bt * m + rows.start;
                rows_product(ap.get().add(row0 * kp), bp.get(), cp.get().add(row0 * n), rows.len(), kp, n, n);
            }
        };
        let blocks = m.div_ceil(ROWS);
        if par {
            crate::threads::par_for(blocks, (64 * 1024 / (kp * n).max(1)).max(1), &run);
        } else {
            run(0, blocks);
        }
    }
}

/// Rows per register tile.
const ROWS: usize = 4;

/// `a - za` of each of `rows` rows of `k`, as pairs of k columns packed
/// into one i32 each (low half the even column; an odd `k`'s last pair
/// ends in 0).
///
/// # Safety
/// `a` readable for `rows * k` elements, `out` writable for
/// `rows * ceil(k/2)` i32.
pub(in crate::kernels::quant) unsafe fn pack_a<A: IntElem>(a: *const A, za: i32, out: *mut i32, rows: usize, k: usize) {
    let kp = k.div_ceil(2);
    for r in 0..rows {
        for q in 0..kp {
            // SAFETY: indices inside the extents above.
            unsafe {
                let lo = (*a.add(r * k + 2 * q)).to_i32() - za;
                let hi = if 2 * q + 1 < k { (*a.add(r * k + 2 * q + 1)).to_i32() - za } else { 0 };
                *out.add(r * kp + q) = (lo as u16 as u32 | ((hi as u16 as u32) << 16)) as i32;
            }
        }
    }
}

/// `b[p, j] - zb` as i16 (`zb` the scalar, or `zb_columns[j]` when that
/// is not null), pairs of k rows interleaved per column: element `(q * n
/// + j) * 2 + h` is row `2q + h` (0 past `k`).
///
/// Packs the pairs `pairs` (a range of `0..ceil(k/2)`).
///
/// # Safety
/// `b` readable for `k * n` elements, `zb_columns` (unless null) for `n`,
/// `out` writable for `ceil(k/2) * n * 2` i16; `pairs` inside `0..ceil(k/2)`.
unsafe fn pack_b<B: IntElem>(
    b: *const B,
    zb: i32,
    zb_columns: *const B,
    out: *mut i16,
    k: usize,
    n: usize,
    pairs: std::ops::Range<usize>,
) {
    // SAFETY: every slice below lies inside the extents above.
    unsafe {
        let zero_row = |j: usize| if zb_columns.is_null() { zb } else { (*zb_columns.add(j)).to_i32() };
        for q in pairs {
            let even = std::slice::from_raw_parts(b.add(2 * q * n), n);
            let pairs = std::slice::from_raw_parts_mut(out.add(q * n * 2), n * 2);
            if 2 * q + 1 < k {
                let odd = std::slice::from_raw_parts(b.add((2 * q + 1) * n), n);
                if zb_columns.is_null() {
                    for ((p, &e), &o) in pairs.chunks_exact_mut(2).zip(even).zip(odd) {
                        p[0] = (e.to_i32() - zb) as i16;
                        p[1] = (o.to_i32() - zb) as i16;
                    }
                } else {
                    for (j, ((p, &e), &o)) in pairs.chunks_exact_mut(2).zip(even).zip(odd).enumerate() {
                        let z = zero_row(j);
                        p[0] = (e.to_i32() - z) as i16;
                        p[1] = (o.to_i32() - z) as i16;
                    }
                }
            } else {
                for (j, (p, &e)) in pairs.chunks_exact_mut(2).zip(even).enumerate() {
                    p[0] = (e.to_i32() - zero_row(j)) as i16;
                    p[1] = 0;
                }
            }
        }
    }
}

/// `c` rows of the packed product: `rows` rows of `a_pairs` (each `kp`
/// long) against the packed `b`, into `rows` rows of `c`. Both the packed
/// `b`'s pair rows and `c`'s rows are `n` columns apart; columns
/// `0..width` are computed (`width <= n`: a strip of a wider product).
///
/// # Safety
/// The extents named above are readable (`a_pairs`, `packed_b`: `kp` pair
/// rows of `n` columns, the last `width`) and writable (`c`: `rows` rows
/// of `n`, the last `width`).
#[allow(clippy::too_many_arguments)]
pub(in crate::kernels::quant) unsafe fn rows_product(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    rows: usize,
    kp: usize,
    n: usize,
    width: usize,
) {
    // SAFETY: the best body runs on this CPU; the extents are the caller's.
    unsafe { (ROWS_PRODUCT.best())(a_pairs, packed_b, c, rows, kp, n, width) }
}

/// A body of [`rows_product`], with its arguments.
type RowsProductFn = unsafe fn(*const i32, *const i16, *mut i32, usize, usize, usize, usize);

variants! {
    /// The bodies of [`rows_product`], best first: AVX-512 VNNI's
    /// `vpdpwssd` tiles, AVX2's `vpmaddwd` tiles, one element at a time.
    static ROWS_PRODUCT: RowsProductFn = [
        #[cfg(target_arch = "x86_64")]
        "avx512_vnni" if cpu::avx512_vnni() => x86::rows_product_avx512,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => x86::rows_product_avx2,
        "portable" => rows_product_portable,
    ];
}

/// [`rows_product`] one element at a time.
///
/// # Safety
/// As [`rows_product`].
unsafe fn rows_product_portable(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    rows: usize,
    kp: usize,
    n: usize,
    width: usize,
) {
    // SAFETY: the caller's extents.
    unsafe { columns_product(a_pairs, packed_b, c, rows, kp, n, 0..width) }
}

/// Columns `cols` of [`rows_product`], one element at a time: the
/// portable body and the vector kernels' column tail.
///
/// # Safety
/// As [`rows_product`], `cols` inside its `0..width`.
pub(super) unsafe fn columns_product(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    rows: usize,
    kp: usize,
    n: usize,
    cols: std::ops::Range<usize>,
) {
    for r in 0..rows {
        for j in cols.clone() {
            let mut acc = 0i32;
            for q in 0..kp {
                // SAFETY: `r < rows`, `q < kp`, `j < n`: inside the extents.
                unsafe {
                    let pair = *a_pairs.add(r * kp + q);
                    let (lo, hi) = (i32::from(pair as i16), i32::from((pair >> 16) as i16));
                    let b = packed_b.add((q * n + j) * 2);
                    acc = acc.wrapping_add(lo * i32::from(*b) + hi * i32::from(*b.add(1)));
                }
            }
            // SAFETY: as above.
            unsafe { *c.add(r * n + j) = acc };
        }
    }
}
