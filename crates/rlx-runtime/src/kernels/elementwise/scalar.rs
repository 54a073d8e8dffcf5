//! The reference inner loops every elementwise path is built from. Each
//! reads element `j` of its inputs before writing element `j` of the
//! output, so an output that exactly aliases an input indexed like it is
//! fine; they never build slices.

/// `o[j] = f(l[j], r[j])` for `j < n`.
///
/// # Safety
/// `l`, `r` readable and `o` writable for `n` elements; `o` equals an
/// input or overlaps none.
#[inline(always)]
pub(crate) unsafe fn same<L: Copy, R: Copy, O>(l: *const L, r: *const R, o: *mut O, n: usize, f: impl Fn(L, R) -> O) {
    for j in 0..n {
        // SAFETY: `j < n`, inside the caller's extents; both inputs at `j` are read
        // before `o[j]` is written, so the allowed exact alias is fine.
        unsafe { *o.add(j) = f(*l.add(j), *r.add(j)) };
    }
}

/// `o[j] = f(a, r[j])` for `j < n`.
///
/// # Safety
/// `r` readable and `o` writable for `n` elements; `o == r` or no overlap.
#[inline(always)]
pub(crate) unsafe fn scalar_lhs<L: Copy, R: Copy, O>(a: L, r: *const R, o: *mut O, n: usize, f: impl Fn(L, R) -> O) {
    for j in 0..n {
        // SAFETY: `j < n`, inside the caller's extents; `r[j]` is read before
        // `o[j]` is written, so `o == r` is fine.
        unsafe { *o.add(j) = f(a, *r.add(j)) };
    }
}

/// `o[j] = f(l[j], b)` for `j < n`.
///
/// # Safety
/// `l` readable and `o` writable for `n` elements; `o == l` or no overlap.
#[inline(always)]
pub(crate) unsafe fn scalar_rhs<L: Copy, R: Copy, O>(l: *const L, b: R, o: *mut O, n: usize, f: impl Fn(L, R) -> O) {
    for j in 0..n {
        // SAFETY: `j < n`, inside the caller's extents; `l[j]` is read before
        // `o[j]` is written, so `o == l` is fine.
        unsafe { *o.add(j) = f(*l.add(j), b) };
    }
}

/// `o[j] = f(l[j * ls], r[j * rs])` for `j < n`.
///
/// # Safety
/// Every index read is inside its operand; `o` writable for `n`; an input
/// overlapping `o` is `o` itself with stride 1.
#[inline(always)]
pub(crate) unsafe fn strided_row<L: Copy, R: Copy, O>(
    l: *const L,
    ls: usize,
    r: *const R,
    rs: usize,
    o: *mut O,
    n: usize,
    f: impl Fn(L, R) -> O,
) {
    for j in 0..n {
        // SAFETY: `j < n`; the caller guarantees `j * ls` and `j * rs` are inside
        // their operands and `o` is writable for `n`; an input overlapping `o` is
        // `o` with stride 1, read at `j` before `o[j]` is written.
        unsafe { *o.add(j) = f(*l.add(j * ls), *r.add(j * rs)) };
    }
}
