//! `BinaryFull` kernels: one public entry per indexing path and element
//! type, generic over the operator's marker type.

use std::marker::PhantomData;

use super::ops::BinOp;
use super::paths::{self, Kernel2, Side};
use super::{entry_body, Body};
#[cfg(test)]
use rlx_core::plan::BinaryPath;

/// f32 operands: SIMD inner loops where the operator has a bit-exact
/// vector form and the CPU has it, else the scalar reference.
pub(crate) struct BinF32<O>(PhantomData<O>);

impl<O: BinOp> Kernel2 for BinF32<O> {
    type L = f32;
    type R = f32;
    type O = f32;

    #[inline(always)]
    fn f(l: f32, r: f32) -> f32 {
        O::f32(l, r)
    }

    #[inline(always)]
    unsafe fn same(l: *const f32, r: *const f32, o: *mut f32, n: usize) {
        // SAFETY: `Kernel2::same`'s contract, forwarded; the entry's body
        // runs on this CPU.
        unsafe { same_f32_with::<O>(entry_body, l, r, o, n) }
    }

    #[inline(always)]
    unsafe fn scalar_lhs(a: f32, r: *const f32, o: *mut f32, n: usize) {
        // SAFETY: `Kernel2::scalar_lhs`'s contract, forwarded; the entry's
        // body runs on this CPU.
        unsafe { scalar_lhs_f32_with::<O>(entry_body, a, r, o, n) }
    }

    #[inline(always)]
    unsafe fn scalar_rhs(l: *const f32, b: f32, o: *mut f32, n: usize) {
        // SAFETY: `Kernel2::scalar_rhs`'s contract, forwarded; the entry's
        // body runs on this CPU.
        unsafe { scalar_rhs_f32_with::<O>(entry_body, l, b, o, n) }
    }
}

/// [`Kernel2::same`] of `BinF32<O>` on the body `body()`, which is called
/// only when `O` has a vector form (so the others never look it up).
///
/// # Safety
/// As [`Kernel2::same`]; the body runs on this CPU.
#[inline(always)]
pub(crate) unsafe fn same_f32_with<O: BinOp>(
    body: impl Fn() -> Body,
    l: *const f32,
    r: *const f32,
    o: *mut f32,
    n: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if O::AVX2 && body() == Body::Avx2 {
        // SAFETY: the AVX2 body runs on this CPU; extents as the caller promised.
        return unsafe { super::avx2::avx2_same_f32::<O>(l, r, o, n) };
    }
    #[cfg(target_arch = "aarch64")]
    if O::NEON && body() == Body::Neon {
        // SAFETY: NEON is baseline on aarch64; extents and aliasing are the
        // caller's (`Kernel2::same`'s contract).
        return unsafe { super::neon::neon_same_f32::<O>(l, r, o, n) };
    }
    let _ = &body;
    // SAFETY: this function's contract is `scalar::same`'s, forwarded unchanged.
    unsafe { super::scalar::same(l, r, o, n, O::f32) }
}

/// [`Kernel2::scalar_lhs`] of `BinF32<O>` on the body `body()` (as
/// [`same_f32_with`]).
///
/// # Safety
/// As [`Kernel2::scalar_lhs`]; the body runs on this CPU.
#[inline(always)]
pub(crate) unsafe fn scalar_lhs_f32_with<O: BinOp>(
    body: impl Fn() -> Body,
    a: f32,
    r: *const f32,
    o: *mut f32,
    n: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if O::AVX2 && body() == Body::Avx2 {
        // SAFETY: the AVX2 body runs on this CPU; extents and aliasing are the
        // caller's (`Kernel2::scalar_lhs`'s contract).
        return unsafe { super::avx2::avx2_scalar_lhs_f32::<O>(a, r, o, n) };
    }
    #[cfg(target_arch = "aarch64")]
    if O::NEON && body() == Body::Neon {
        // SAFETY: NEON is baseline on aarch64; extents and aliasing are the
        // caller's (`Kernel2::scalar_lhs`'s contract).
        return unsafe { super::neon::neon_scalar_lhs_f32::<O>(a, r, o, n) };
    }
    let _ = &body;
    // SAFETY: this function's contract is `scalar::scalar_lhs`'s, forwarded
    // unchanged.
    unsafe { super::scalar::scalar_lhs(a, r, o, n, O::f32) }
}

/// [`Kernel2::scalar_rhs`] of `BinF32<O>` on the body `body()` (as
/// [`same_f32_with`]).
///
/// # Safety
/// As [`Kernel2::scalar_rhs`]; the body runs on this CPU.
#[inline(always)]
pub(crate) unsafe fn scalar_rhs_f32_with<O: BinOp>(
    body: impl Fn() -> Body,
    l: *const f32,
    b: f32,
    o: *mut f32,
    n: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if O::AVX2 && body() == Body::Avx2 {
        // SAFETY: the AVX2 body runs on this CPU; extents and aliasing are the
        // caller's (`Kernel2::scalar_rhs`'s contract).
        return unsafe { super::avx2::avx2_scalar_rhs_f32::<O>(l, b, o, n) };
    }
    #[cfg(target_arch = "aarch64")]
    if O::NEON && body() == Body::Neon {
        // SAFETY: NEON is baseline on aarch64; extents and aliasing are the
        // caller's (`Kernel2::scalar_rhs`'s contract).
        return unsafe { super::neon::neon_scalar_rhs_f32::<O>(l, b, o, n) };
    }
    let _ = &body;
    // SAFETY: this function's contract is `scalar::scalar_rhs`'s, forwarded
    // unchanged.
    unsafe { super::scalar::scalar_rhs(l, b, o, n, O::f32) }
}

/// i64 operands: the scalar loops (the compiler vectorises the cheap ones).
pub(crate) struct BinI64<O>(PhantomData<O>);

impl<O: BinOp> Kernel2 for BinI64<O> {
    type L = i64;
    type R = i64;
    type O = i64;

    #[inline(always)]
    fn f(l: i64, r: i64) -> i64 {
        O::i64(l, r)
    }
}

/// Generates the public entries of one element type.
macro_rules! binary_entries {
    ($t:ty, $k:ident, $tn:literal,
     $same:ident, $slhs:ident, $srhs:ident, $rrhs:ident, $rlhs:ident, $crhs:ident, $clhs:ident,
     $modular:ident, $strided:ident, $path:ident) => {
        #[doc = concat!("`o[i] = op(l[i], r[i])` on ", $tn, " (path `SameShape`).")]
        ///
        /// # Safety
        /// `l`, `r` readable and `o` writable for `len` elements; `o` equals
        /// an input (same offset) or overlaps neither.
        pub unsafe fn $same<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, par: bool) {
            // SAFETY: this entry's contract (`# Safety` above) is `paths::same`'s.
            unsafe { paths::same::<$k<O>>(l, r, o, len, par) }
        }

        #[doc = concat!("`o[i] = op(l[0], r[i])` on ", $tn, " (path `ScalarLhs`).")]
        ///
        /// # Safety
        /// `l` readable for 1 element, `r` readable and `o` writable for
        /// `len`; `o == r` or no overlap; `l` does not overlap `o`.
        pub unsafe fn $slhs<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, par: bool) {
            // SAFETY: this entry's contract is `paths::scalar_lhs`'s.
            unsafe { paths::scalar_lhs::<$k<O>>(l, r, o, len, par) }
        }

        #[doc = concat!("`o[i] = op(l[i], r[0])` on ", $tn, " (path `ScalarRhs`).")]
        ///
        /// # Safety
        /// `l` readable and `o` writable for `len`, `r` readable for 1
        /// element; `o == l` or no overlap; `r` does not overlap `o`.
        pub unsafe fn $srhs<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, par: bool) {
            // SAFETY: this entry's contract is `paths::scalar_rhs`'s with the roles
            // of `l` and `r` as stated there.
            unsafe { paths::scalar_rhs::<$k<O>>(l, r, o, len, par) }
        }

        #[doc = concat!("`o[i] = op(l[i], r[i % row])` on ", $tn, " (path `RowRhs`).")]
        ///
        /// # Safety
        /// `l` readable and `o` writable for `len`, `r` readable for
        /// `min(row, len)`; `o == l` or no overlap; `r` does not overlap `o`.
        pub unsafe fn $rrhs<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, row: usize, par: bool) {
            // SAFETY: `paths::row` with `Side::Rhs` needs `l` and `o` for `len`, `r`
            // for `min(row, len)` and `o == l` or no overlap: this entry's contract.
            unsafe { paths::row::<$k<O>>(Side::Rhs, l, r, o, len, row, par) }
        }

        #[doc = concat!("`o[i] = op(l[i % row], r[i])` on ", $tn, " (path `RowLhs`).")]
        ///
        /// # Safety
        /// As the `RowRhs` entry with the operands' roles swapped.
        pub unsafe fn $rlhs<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, row: usize, par: bool) {
            // SAFETY: `paths::row` with `Side::Lhs` needs `r` and `o` for `len`, `l`
            // for `min(row, len)` and `o == r` or no overlap: this entry's contract.
            unsafe { paths::row::<$k<O>>(Side::Lhs, l, r, o, len, row, par) }
        }

        #[doc = concat!("`o[i] = op(l[i], r[i / row])` on ", $tn, " (path `ColRhs`).")]
        ///
        /// # Safety
        /// `l` readable and `o` writable for `len`, `r` readable for
        /// `ceil(len / row)`; `o == l` or no overlap; `r` does not overlap `o`.
        pub unsafe fn $crhs<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, row: usize, par: bool) {
            // SAFETY: `paths::col` with `Side::Rhs` needs `l` and `o` for `len`, `r`
            // for `ceil(len / row)` and `o == l` or no overlap: this entry's contract.
            unsafe { paths::col::<$k<O>>(Side::Rhs, l, r, o, len, row, par) }
        }

        #[doc = concat!("`o[i] = op(l[i / row], r[i])` on ", $tn, " (path `ColLhs`).")]
        ///
        /// # Safety
        /// As the `ColRhs` entry with the operands' roles swapped.
        pub unsafe fn $clhs<O: BinOp>(l: *const $t, r: *const $t, o: *mut $t, len: usize, row: usize, par: bool) {
            // SAFETY: `paths::col` with `Side::Lhs` needs `r` and `o` for `len`, `l`
            // for `ceil(len / row)` and `o == r` or no overlap: this entry's contract.
            unsafe { paths::col::<$k<O>>(Side::Lhs, l, r, o, len, row, par) }
        }

        #[doc = concat!("`o[i] = op(l[i % lhs_len], r[i % rhs_len])` on ", $tn, " (path `Modular`).")]
        ///
        /// # Safety
        /// `l` readable for `min(lhs_len, len)` elements, `r` for
        /// `min(rhs_len, len)`, `o` writable for `len`; an input overlapping
        /// `o` is `o` itself with a length of at least `len`.
        pub unsafe fn $modular<O: BinOp>(
            l: *const $t,
            r: *const $t,
            o: *mut $t,
            len: usize,
            lhs_len: usize,
            rhs_len: usize,
            par: bool,
        ) {
            // SAFETY: this entry's contract is `paths::modular`'s.
            unsafe { paths::modular::<$k<O>>(l, r, o, len, lhs_len, rhs_len, par) }
        }

        #[doc = concat!("The general broadcast on ", $tn, " (path `Strided`): `i` decomposed over")]
        /// `out_dims` (row-major; the top coordinate wraps) and dotted with
        /// `lhs_strides` / `rhs_strides` (missing strides count as 0).
        ///
        /// # Safety
        /// Every index this produces for `i < len` is inside its operand;
        /// `o` writable for `len`; an input overlapping `o` is `o` itself
        /// read at index `i` for every `i`.
        pub unsafe fn $strided<O: BinOp>(
            l: *const $t,
            r: *const $t,
            o: *mut $t,
            len: usize,
            out_dims: &[usize],
            lhs_strides: &[usize],
            rhs_strides: &[usize],
            par: bool,
        ) {
            // SAFETY: this entry's contract is `paths::strided`'s.
            unsafe { paths::strided::<$k<O>>(l, r, o, len, out_dims, lhs_strides, rhs_strides, par) }
        }

        #[doc = concat!("Runs any [`BinaryPath`] on ", $tn, ": a test helper that runs each path")]
        /// over the same cases. Executors call the path's own entry, chosen
        /// by `rlx_core::lower`.
        ///
        /// # Safety
        /// As the entry of `path`.
        #[cfg(test)]
        pub(crate) unsafe fn $path<O: BinOp>(
            path: &BinaryPath,
            l: *const $t,
            r: *const $t,
            o: *mut $t,
            len: usize,
            par: bool,
        ) {
            // SAFETY: the caller guarantees the contract of `path`'s entry, which is
            // what `paths::run_path` requires.
            unsafe { paths::run_path::<$k<O>>(path, l, r, o, len, par) }
        }
    };
}

binary_entries!(
    f32,
    BinF32,
    "f32",
    binary_same_f32,
    binary_scalar_lhs_f32,
    binary_scalar_rhs_f32,
    binary_row_rhs_f32,
    binary_row_lhs_f32,
    binary_col_rhs_f32,
    binary_col_lhs_f32,
    binary_modular_f32,
    binary_strided_f32,
    binary_path_f32
);

binary_entries!(
    i64,
    BinI64,
    "i64 (wrapping; division and remainder by 0 give 0)",
    binary_same_i64,
    binary_scalar_lhs_i64,
    binary_scalar_rhs_i64,
    binary_row_rhs_i64,
    binary_row_lhs_i64,
    binary_col_rhs_i64,
    binary_col_lhs_i64,
    binary_modular_i64,
    binary_strided_i64,
    binary_path_i64
);
