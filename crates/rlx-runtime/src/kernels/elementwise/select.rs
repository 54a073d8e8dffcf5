//! `Where` kernels: `dst[i] = cond[i] != 0 ? on_true[i] : on_false[i]`.
//!
//! Values are copied as bits (`u32` for 4-byte elements, `u64` for 8), so
//! f32 NaN payloads and i64 values pass through unchanged.

use super::par::{split, SyncPtr};

/// A condition element: `u8` (bool), `f32` (`!= 0.0`, so NaN is true),
/// `i64` (`!= 0`), plus `i32` and `f64` likewise.
pub trait Cond: Copy + Send + Sync + 'static {
    /// Whether the element selects `on_true`.
    fn truthy(self) -> bool;
}

impl Cond for u8 {
    #[inline(always)]
    fn truthy(self) -> bool {
        self != 0
    }
}
impl Cond for i32 {
    #[inline(always)]
    fn truthy(self) -> bool {
        self != 0
    }
}
impl Cond for i64 {
    #[inline(always)]
    fn truthy(self) -> bool {
        self != 0
    }
}
impl Cond for f32 {
    #[inline(always)]
    fn truthy(self) -> bool {
        self != 0.0
    }
}
impl Cond for f64 {
    #[inline(always)]
    fn truthy(self) -> bool {
        self != 0.0
    }
}

/// One chunk with the scalar flags as constants: a scalar operand's value
/// (`c0`, `t0`, `f0`, read once by the caller) is used, the others are read
/// per element, so no flag is tested per element.
///
/// # Safety
/// As [`select`], for `s .. s + n`.
#[inline(always)]
unsafe fn select_chunk<C: Cond, T: Copy, const CS: bool, const TS: bool, const FS: bool>(
    (c, c0): (*const C, C),
    (t, t0): (*const T, T),
    (f, f0): (*const T, T),
    d: *mut T,
    s: usize,
    n: usize,
) {
    // SAFETY: `s <= i < s + n <= len`: non-scalar operands are readable and
    // `d` writable at `i` (the `select` contract); scalar operands are not
    // read here; `d` aliases only a non-scalar operand of its size at the same
    // offset, read at `i` before `d[i]` is written.
    unsafe {
        for i in s..s + n {
            let ci = if CS { c0 } else { *c.add(i) };
            let ti = if TS { t0 } else { *t.add(i) };
            let fi = if FS { f0 } else { *f.add(i) };
            *d.add(i) = if ci.truthy() { ti } else { fi };
        }
    }
}

/// `dst[i] = cond[ci].truthy() ? on_true[ti] : on_false[fi]` for `i <
/// len`, where a `*_scalar` operand is read at index 0 and the others at
/// `i`. `T` is `u32` for 4-byte values, `u64` for 8-byte ones.
///
/// # Safety
/// Scalar operands readable for 1 element, the others for `len`; `dst`
/// writable for `len`; `dst` equals a non-scalar operand of its element
/// size (same offset) or overlaps none; scalar operands never overlap
/// `dst`. Pointers aligned for their types.
pub unsafe fn select<C: Cond, T: Copy + Send + Sync + 'static>(
    cond: *const C,
    on_true: *const T,
    on_false: *const T,
    dst: *mut T,
    len: usize,
    cond_scalar: bool,
    true_scalar: bool,
    false_scalar: bool,
    par: bool,
) {
    if len == 0 {
        return;
    }
    // Element 0 of every operand, read before any thread writes `dst` (which
    // may alias a non-scalar operand); only scalar operands' values are used.
    // SAFETY: `len > 0`, so every operand, scalar or not, is readable at
    // index 0.
    let (c0, t0, f0) = unsafe { (*cond, *on_true, *on_false) };
    let (c, t, f, d) =
        (SyncPtr::new_const(cond), SyncPtr::new_const(on_true), SyncPtr::new_const(on_false), SyncPtr(dst));
    macro_rules! go {
        ($cs:literal, $ts:literal, $fs:literal) => {
            // SAFETY: chunks `s..s + n` are disjoint parts of `0..len`, and
            // `select_chunk` needs exactly `select`'s contract on that range.
            split(len, par, &|s, n| unsafe {
                select_chunk::<C, T, $cs, $ts, $fs>((c.get(), c0), (t.get(), t0), (f.get(), f0), d.get(), s, n)
            })
        };
    }
    match (cond_scalar, true_scalar, false_scalar) {
        (false, false, false) => go!(false, false, false),
        (false, false, true) => go!(false, false, true),
        (false, true, false) => go!(false, true, false),
        (false, true, true) => go!(false, true, true),
        (true, false, false) => go!(true, false, false),
        (true, false, true) => go!(true, false, true),
        (true, true, false) => go!(true, true, false),
        (true, true, true) => go!(true, true, true),
    }
}
