//! `Compare` kernels: `o[i] = (lhs[li] op rhs[ri])` as 1/0, with the same
//! indexing paths as `BinaryFull`.

use std::marker::PhantomData;

use super::ops::Cmp;
use super::paths::{self, Kernel2, Side};
#[cfg(test)]
use rlx_core::plan::BinaryPath;

/// An element type `Compare` reads: `u8` (bool bytes, compared unsigned),
/// `i32`, `i64`, `f32`, `f64` (IEEE comparisons).
pub trait CmpElem: Copy + PartialOrd + Send + Sync + 'static {}
impl CmpElem for u8 {}
impl CmpElem for i32 {}
impl CmpElem for i64 {}
impl CmpElem for f32 {}
impl CmpElem for f64 {}

/// An element type `Compare` writes: `u8` (bool, 1/0) or `f32` (1.0/0.0).
pub trait CmpDst: Copy + Send + Sync + 'static {
    /// The encoding of a truth value.
    fn from_bool(b: bool) -> Self;
}

impl CmpDst for u8 {
    #[inline(always)]
    fn from_bool(b: bool) -> u8 {
        u8::from(b)
    }
}

impl CmpDst for f32 {
    #[inline(always)]
    fn from_bool(b: bool) -> f32 {
        if b {
            1.0
        } else {
            0.0
        }
    }
}

pub(crate) struct CmpKernel<C, T, D>(PhantomData<(C, T, D)>);

impl<C: Cmp, T: CmpElem, D: CmpDst> Kernel2 for CmpKernel<C, T, D> {
    type L = T;
    type R = T;
    type O = D;

    #[inline(always)]
    fn f(l: T, r: T) -> D {
        D::from_bool(C::cmp(l, r))
    }
}

/// `o[i] = l[i] op r[i]` (path `SameShape`).
///
/// # Safety
/// `l`, `r` readable and `o` writable for `len` elements; `o` equals an
/// input of the same element size (same offset) or overlaps neither.
pub unsafe fn compare_same<C: Cmp, T: CmpElem, D: CmpDst>(l: *const T, r: *const T, o: *mut D, len: usize, par: bool) {
    // SAFETY: this entry's contract is `paths::same`'s; an aliased input has
    // the output's element size, so the alias is exact.
    unsafe { paths::same::<CmpKernel<C, T, D>>(l, r, o, len, par) }
}

/// `o[i] = l[0] op r[i]` (path `ScalarLhs`).
///
/// # Safety
/// `l` readable for 1 element, `r` readable and `o` writable for `len`;
/// `o` equals `r` (same element size) or overlaps nothing.
pub unsafe fn compare_scalar_lhs<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::scalar_lhs`'s; `o` aliases `r`
    // only with equal element sizes, so the alias is exact.
    unsafe { paths::scalar_lhs::<CmpKernel<C, T, D>>(l, r, o, len, par) }
}

/// `o[i] = l[i] op r[0]` (path `ScalarRhs`).
///
/// # Safety
/// As [`compare_scalar_lhs`] with the operands' roles swapped.
pub unsafe fn compare_scalar_rhs<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::scalar_rhs`'s (roles swapped as
    // documented); an alias of `l` is exact.
    unsafe { paths::scalar_rhs::<CmpKernel<C, T, D>>(l, r, o, len, par) }
}

/// `o[i] = l[i] op r[i % row]` (path `RowRhs`).
///
/// # Safety
/// `l` readable and `o` writable for `len`, `r` readable for `min(row,
/// len)`; `o` equals `l` (same element size) or overlaps nothing.
pub unsafe fn compare_row_rhs<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    row: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::row`'s for `Side::Rhs`; `o`
    // aliases `l` only with equal element sizes, so the alias is exact.
    unsafe { paths::row::<CmpKernel<C, T, D>>(Side::Rhs, l, r, o, len, row, par) }
}

/// `o[i] = l[i % row] op r[i]` (path `RowLhs`).
///
/// # Safety
/// As [`compare_row_rhs`] with the operands' roles swapped.
pub unsafe fn compare_row_lhs<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    row: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::row`'s for `Side::Lhs`; `o`
    // aliases `r` only with equal element sizes, so the alias is exact.
    unsafe { paths::row::<CmpKernel<C, T, D>>(Side::Lhs, l, r, o, len, row, par) }
}

/// `o[i] = l[i] op r[i / row]` (path `ColRhs`).
///
/// # Safety
/// `l` readable and `o` writable for `len`, `r` readable for `ceil(len /
/// row)`; `o` equals `l` (same element size) or overlaps nothing.
pub unsafe fn compare_col_rhs<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    row: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::col`'s for `Side::Rhs`; `o`
    // aliases `l` only with equal element sizes, so the alias is exact.
    unsafe { paths::col::<CmpKernel<C, T, D>>(Side::Rhs, l, r, o, len, row, par) }
}

/// `o[i] = l[i / row] op r[i]` (path `ColLhs`).
///
/// # Safety
/// As [`compare_col_rhs`] with the operands' roles swapped.
pub unsafe fn compare_col_lhs<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    row: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::col`'s for `Side::Lhs`; `o`
    // aliases `r` only with equal element sizes, so the alias is exact.
    unsafe { paths::col::<CmpKernel<C, T, D>>(Side::Lhs, l, r, o, len, row, par) }
}

/// `o[i] = l[i % lhs_len] op r[i % rhs_len]` (path `Modular`).
///
/// # Safety
/// `l` readable for `min(lhs_len, len)`, `r` for `min(rhs_len, len)`, `o`
/// writable for `len`; an input overlapping `o` is `o` itself (same
/// element size, at least `len` long).
pub unsafe fn compare_modular<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    lhs_len: usize,
    rhs_len: usize,
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::modular`'s; an aliased input
    // has the output's element size.
    unsafe { paths::modular::<CmpKernel<C, T, D>>(l, r, o, len, lhs_len, rhs_len, par) }
}

/// The general broadcast (path `Strided`), indexed as
/// `binary_strided_f32`.
///
/// # Safety
/// Every index produced for `i < len` is inside its operand; `o` writable
/// for `len`; an input overlapping `o` is `o` itself (same element size)
/// read at index `i` for every `i`.
pub unsafe fn compare_strided<C: Cmp, T: CmpElem, D: CmpDst>(
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    out_dims: &[usize],
    lhs_strides: &[usize],
    rhs_strides: &[usize],
    par: bool,
) {
    // SAFETY: this entry's contract is `paths::strided`'s; an aliased input
    // has the output's element size.
    unsafe { paths::strided::<CmpKernel<C, T, D>>(l, r, o, len, out_dims, lhs_strides, rhs_strides, par) }
}

/// Runs any [`BinaryPath`]: a test helper (executors call the path's own
/// entry, chosen by `rlx_core::lower`).
///
/// # Safety
/// As the entry of `path`.
#[cfg(test)]
pub(crate) unsafe fn compare_path<C: Cmp, T: CmpElem, D: CmpDst>(
    path: &BinaryPath,
    l: *const T,
    r: *const T,
    o: *mut D,
    len: usize,
    par: bool,
) {
    // SAFETY: the caller guarantees the contract of `path`'s entry, which is
    // what `paths::run_path` requires.
    unsafe { paths::run_path::<CmpKernel<C, T, D>>(path, l, r, o, len, par) }
}
