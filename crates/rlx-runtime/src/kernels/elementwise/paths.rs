//! The indexing paths of two-operand elementwise kernels (see
//! `rlx_core::plan::BinaryPath`), generic over the element kernel.
//!
//! Every path is built from three contiguous inner loops (`same`,
//! `scalar_lhs`, `scalar_rhs`) that a kernel may override with SIMD, plus
//! a strided row loop. Each path splits its work over whole output ranges,
//! so serial and parallel runs compute every element the same way.

use super::par::{split, SyncPtr, PAR_CHUNK};
use super::scalar;
#[cfg(test)]
use rlx_core::plan::BinaryPath;

/// A two-input elementwise kernel: its element function and contiguous
/// inner loops.
pub(crate) trait Kernel2: 'static {
    type L: Copy + Send + Sync;
    type R: Copy + Send + Sync;
    type O: Copy + Send + Sync;

    /// The element function.
    fn f(l: Self::L, r: Self::R) -> Self::O;

    /// `o[j] = f(l[j], r[j])` for `j < n`.
    ///
    /// # Safety
    /// As `scalar::same`.
    #[inline(always)]
    unsafe fn same(l: *const Self::L, r: *const Self::R, o: *mut Self::O, n: usize) {
        // SAFETY: this method's contract is `scalar::same`'s, forwarded unchanged.
        unsafe { scalar::same(l, r, o, n, Self::f) }
    }

    /// `o[j] = f(a, r[j])` for `j < n`.
    ///
    /// # Safety
    /// As `scalar::scalar_lhs`.
    #[inline(always)]
    unsafe fn scalar_lhs(a: Self::L, r: *const Self::R, o: *mut Self::O, n: usize) {
        // SAFETY: this method's contract is `scalar::scalar_lhs`'s, forwarded
        // unchanged.
        unsafe { scalar::scalar_lhs(a, r, o, n, Self::f) }
    }

    /// `o[j] = f(l[j], b)` for `j < n`.
    ///
    /// # Safety
    /// As `scalar::scalar_rhs`.
    #[inline(always)]
    unsafe fn scalar_rhs(l: *const Self::L, b: Self::R, o: *mut Self::O, n: usize) {
        // SAFETY: this method's contract is `scalar::scalar_rhs`'s, forwarded
        // unchanged.
        unsafe { scalar::scalar_rhs(l, b, o, n, Self::f) }
    }
}

/// Pointers of one call, shareable with pool threads.
struct Ptrs<K: Kernel2> {
    l: SyncPtr<K::L>,
    r: SyncPtr<K::R>,
    o: SyncPtr<K::O>,
}

impl<K: Kernel2> Clone for Ptrs<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K: Kernel2> Copy for Ptrs<K> {}

impl<K: Kernel2> Ptrs<K> {
    fn new(l: *const K::L, r: *const K::R, o: *mut K::O) -> Self {
        Ptrs { l: SyncPtr::new_const(l), r: SyncPtr::new_const(r), o: SyncPtr(o) }
    }
}

/// Calls `f(first_row, rows)` over chunks of `0..rows`, parallel when `par`,
/// with about `PAR_CHUNK` elements per chunk.
fn split_rows(rows: usize, row: usize, par: bool, f: &(dyn Fn(usize, usize) + Sync)) {
    if rows == 0 {
        return;
    }
    if par {
        crate::threads::par_for(rows, (PAR_CHUNK / row.max(1)).max(1), f);
    } else {
        f(0, rows);
    }
}

/// `li = ri = i`.
///
/// # Safety
/// `l`, `r` readable and `o` writable for `len` elements; `o` equals an
/// input (same offset) or overlaps none.
pub(crate) unsafe fn same<K: Kernel2>(l: *const K::L, r: *const K::R, o: *mut K::O, len: usize, par: bool) {
    let p = Ptrs::<K>::new(l, r, o);
    // SAFETY: each chunk `s..s + n` lies in `0..len`, so the offset pointers
    // stay inside the caller's extents; chunks write disjoint ranges of `o`,
    // and an exact alias stays exact at the same offset.
    split(len, par, &|s, n| unsafe { K::same(p.l.get().add(s), p.r.get().add(s), p.o.get().add(s), n) });
}

/// `li = 0`, `ri = i`.
///
/// # Safety
/// `l` readable for 1 element, `r` readable and `o` writable for `len`;
/// `o == r` or no overlap; `l` does not overlap `o`.
pub(crate) unsafe fn scalar_lhs<K: Kernel2>(l: *const K::L, r: *const K::R, o: *mut K::O, len: usize, par: bool) {
    if len == 0 {
        return;
    }
    // SAFETY: `len > 0`, and the caller makes `l` readable for 1 element.
    let a = unsafe { *l };
    let p = Ptrs::<K>::new(l, r, o);
    // SAFETY: each chunk `s..s + n` lies in `0..len`, inside the extents of `r`
    // and `o`; chunks write disjoint ranges of `o`; `o == r` stays an exact
    // alias, and `l` (read once above) does not overlap `o`.
    split(len, par, &|s, n| unsafe { K::scalar_lhs(a, p.r.get().add(s), p.o.get().add(s), n) });
}

/// `li = i`, `ri = 0`.
///
/// # Safety
/// As [`scalar_lhs`] with the operands' roles swapped.
pub(crate) unsafe fn scalar_rhs<K: Kernel2>(l: *const K::L, r: *const K::R, o: *mut K::O, len: usize, par: bool) {
    if len == 0 {
        return;
    }
    // SAFETY: `len > 0`, and the caller makes `r` readable for 1 element.
    let b = unsafe { *r };
    let p = Ptrs::<K>::new(l, r, o);
    // SAFETY: each chunk `s..s + n` lies in `0..len`, inside the extents of `l`
    // and `o`; chunks write disjoint ranges of `o`; `o == l` stays an exact
    // alias, and `r` (read once above) does not overlap `o`.
    split(len, par, &|s, n| unsafe { K::scalar_rhs(p.l.get().add(s), b, p.o.get().add(s), n) });
}

/// Which operand a row or column path broadcasts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Lhs,
    Rhs,
}

/// `ri = i % row` (`Side::Rhs`) or `li = i % row` (`Side::Lhs`); the other
/// operand is indexed by `i`.
///
/// # Safety
/// The full operand and `o` valid for `len` elements, the row operand for
/// `min(row, len)`; `o` equals the full operand or overlaps nothing.
pub(crate) unsafe fn row<K: Kernel2>(
    side: Side,
    l: *const K::L,
    r: *const K::R,
    o: *mut K::O,
    len: usize,
    row: usize,
    par: bool,
) {
    if row == 0 {
        return;
    }
    let p = Ptrs::<K>::new(l, r, o);
    split_rows(len.div_ceil(row), row, par, &|first, rows| {
        for k in first..first + rows {
            let start = k * row;
            let n = row.min(len - start);
            // SAFETY: `k < ceil(len / row)`, so `start + n <= len` keeps the full
            // operand and `o` inside their `len` elements, and `n <= min(row, len)`
            // elements of the row operand are read from its start; chunks write
            // disjoint rows of `o`, which equals the full operand (same offset) or
            // overlaps nothing.
            unsafe {
                match side {
                    Side::Rhs => K::same(p.l.get().add(start), p.r.get(), p.o.get().add(start), n),
                    Side::Lhs => K::same(p.l.get(), p.r.get().add(start), p.o.get().add(start), n),
                }
            }
        }
    });
}

/// `ri = i / row` (`Side::Rhs`) or `li = i / row` (`Side::Lhs`); the other
/// operand is indexed by `i`.
///
/// # Safety
/// The full operand and `o` valid for `len` elements, the column operand
/// for `ceil(len / row)`; `o` equals the full operand or overlaps nothing.
pub(crate) unsafe fn col<K: Kernel2>(
    side: Side,
    l: *const K::L,
    r: *const K::R,
    o: *mut K::O,
    len: usize,
    row: usize,
    par: bool,
) {
    if row == 0 {
        return;
    }
    let p = Ptrs::<K>::new(l, r, o);
    split_rows(len.div_ceil(row), row, par, &|first, rows| {
        for k in first..first + rows {
            let start = k * row;
            let n = row.min(len - start);
            // SAFETY: `k < ceil(len / row)` indexes the column operand inside its
            // extent, and `start + n <= len` keeps the full operand and `o` inside
            // theirs; the column element is read before the row is written; chunks
            // write disjoint rows of `o`, which equals the full operand (same offset)
            // or overlaps nothing.
            unsafe {
                match side {
                    Side::Rhs => K::scalar_rhs(p.l.get().add(start), *p.r.get().add(k), p.o.get().add(start), n),
                    Side::Lhs => K::scalar_lhs(*p.l.get().add(k), p.r.get().add(start), p.o.get().add(start), n),
                }
            }
        }
    });
}

/// `li = i % lhs_len`, `ri = i % rhs_len`.
///
/// # Safety
/// `l` readable for `min(lhs_len, len)` elements, `r` for `min(rhs_len,
/// len)`, `o` writable for `len`; an input overlapping `o` is `o` itself
/// with a length of at least `len`.
pub(crate) unsafe fn modular<K: Kernel2>(
    l: *const K::L,
    r: *const K::R,
    o: *mut K::O,
    len: usize,
    lhs_len: usize,
    rhs_len: usize,
    par: bool,
) {
    let (ll, rl) = (lhs_len.max(1), rhs_len.max(1));
    let p = Ptrs::<K>::new(l, r, o);
    split(len, par, &|s, n| {
        // Running indices instead of a division per element.
        let (mut li, mut ri) = (s % ll, s % rl);
        for i in s..s + n {
            // SAFETY: `i < len`; `li = i % max(lhs_len, 1)` is at most `i`, so it is
            // below `min(lhs_len, len)` (likewise `ri`); chunks write disjoint `o[i]`,
            // and an input overlapping `o` is `o` itself of length `>= len`, so it is
            // read at `li == i` before `o[i]` is written.
            unsafe { *p.o.get().add(i) = K::f(*p.l.get().add(li), *p.r.get().add(ri)) };
            li += 1;
            if li == ll {
                li = 0;
            }
            ri += 1;
            if ri == rl {
                ri = 0;
            }
        }
    });
}

/// The general shaped form: `i` decomposed over `dims` (row-major; the top
/// coordinate wraps) and dotted with `lhs_strides` / `rhs_strides`
/// (missing strides count as 0). Work goes row by row along the last axis,
/// each row through the contiguous inner loop its two strides allow.
///
/// # Safety
/// Every index the definition produces for `i < len` is inside its
/// operand; `o` writable for `len`; an input overlapping `o` is `o` itself
/// read at index `i` for every `i` (`rlx_core::plan::reads_identically`).
pub(crate) unsafe fn strided<K: Kernel2>(
    l: *const K::L,
    r: *const K::R,
    o: *mut K::O,
    len: usize,
    dims: &[usize],
    lhs_strides: &[usize],
    rhs_strides: &[usize],
    par: bool,
) {
    let Some((&inner, outer_dims)) = dims.split_last() else {
        // No axes: every element reads element 0 of both operands.
        // SAFETY: with no axes every index is 0, which the caller guarantees is
        // inside each operand (one readable element, as `modular` with lengths 1
        // needs); an input overlapping `o` is read at index `i` for every `i`, so
        // that only happens with `len <= 1`.
        return unsafe { modular::<K>(l, r, o, len, 1, 1, par) };
    };
    if dims.contains(&0) {
        // No element exists; a validated thunk then has `len == 0`.
        debug_assert_eq!(len, 0, "strided elementwise with a zero dim and len {len}");
        return;
    }
    let stride = |s: &[usize], ax: usize| s.get(ax).copied().unwrap_or(0);
    let last = dims.len() - 1;
    let (lsi, rsi) = (stride(lhs_strides, last), stride(rhs_strides, last));
    let p = Ptrs::<K>::new(l, r, o);
    // One row: `m` elements from output `pos`, operands at `li` / `ri`.
    let row = |pos: usize, li: usize, ri: usize, m: usize| {
        // SAFETY: both callers pass the definition's indices `li` / `ri` for
        // output `pos`, and the next `m` elements of the row (stride `lsi` /
        // `rsi`) are the definition's indices for `pos..pos + m`, inside the
        // operands by the caller's contract; `pos + m <= len`; chunks write
        // disjoint ranges of `o`; an input overlapping `o` is read at index
        // `i` for every `i`, i.e. with stride 1 at the same offset.
        unsafe {
            let (lp, rp, op) = (p.l.get().add(li), p.r.get().add(ri), p.o.get().add(pos));
            match (lsi, rsi) {
                (1, 1) => K::same(lp, rp, op, m),
                (1, 0) => K::scalar_rhs(lp, *rp, op, m),
                (0, 1) => K::scalar_lhs(*lp, rp, op, m),
                _ => scalar::strided_row(lp, lsi, rp, rsi, op, m, K::f),
            }
        }
    };
    if outer_dims.len() <= MAX_ODOMETER_AXES {
        // The row's coordinates are decomposed once per chunk, then stepped
        // like an odometer: short rows (a blocked tensor's 16 lanes) would
        // otherwise spend more on divisions than on the operation.
        let mut ls = [0usize; MAX_ODOMETER_AXES];
        let mut rs = [0usize; MAX_ODOMETER_AXES];
        for ax in 0..outer_dims.len() {
            (ls[ax], rs[ax]) = (stride(lhs_strides, ax), stride(rhs_strides, ax));
        }
        split(len, par, &|s, n| {
            let mut coord = [0usize; MAX_ODOMETER_AXES];
            let (mut q, mut j) = (s / inner, s % inner);
            let (mut lrow, mut rrow) = (0, 0);
            for (ax, &d) in outer_dims.iter().enumerate().rev() {
                coord[ax] = q % d;
                q /= d;
                lrow += coord[ax] * ls[ax];
                rrow += coord[ax] * rs[ax];
            }
            let mut pos = s;
            while pos < s + n {
                let m = (inner - j).min(s + n - pos);
                row(pos, lrow + j * lsi, rrow + j * rsi, m);
                pos += m;
                j = 0;
                // Next row; the top coordinate wraps like the others.
                for ax in (0..outer_dims.len()).rev() {
                    coord[ax] += 1;
                    lrow += ls[ax];
                    rrow += rs[ax];
                    if coord[ax] < outer_dims[ax] {
                        break;
                    }
                    coord[ax] = 0;
                    lrow -= outer_dims[ax] * ls[ax];
                    rrow -= outer_dims[ax] * rs[ax];
                }
            }
        });
        return;
    }
    split(len, par, &|s, n| {
        let mut pos = s;
        while pos < s + n {
            // Decompose the row index once per row, not per element.
            let j = pos % inner;
            let (mut q, mut li, mut ri) = (pos / inner, j * lsi, j * rsi);
            for (ax, &d) in outer_dims.iter().enumerate().rev() {
                let c = q % d;
                q /= d;
                li += c * stride(lhs_strides, ax);
                ri += c * stride(rhs_strides, ax);
            }
            let m = (inner - j).min(s + n - pos);
            row(pos, li, ri, m);
            pos += m;
        }
    });
}

/// Outer axes up to which [`strided`] steps its rows without divisions
/// (the coalesced shapes of real graphs have at most 5 axes).
const MAX_ODOMETER_AXES: usize = 8;

/// Runs `path` (from `rlx_core::plan::binary_path` / `compare_path`): the
/// interpreter's dispatch; generated code calls the path's entry directly.
///
/// # Safety
/// As the entry of `path`.
#[cfg(test)]
pub(crate) unsafe fn run_path<K: Kernel2>(
    path: &BinaryPath,
    l: *const K::L,
    r: *const K::R,
    o: *mut K::O,
    len: usize,
    par: bool,
) {
    // SAFETY: each arm calls the entry of `path` with the caller's arguments,
    // which the caller guarantees meet that entry's contract.
    unsafe {
        match path {
            BinaryPath::SameShape => same::<K>(l, r, o, len, par),
            BinaryPath::ScalarLhs => scalar_lhs::<K>(l, r, o, len, par),
            BinaryPath::ScalarRhs => scalar_rhs::<K>(l, r, o, len, par),
            BinaryPath::RowRhs { row: n } => row::<K>(Side::Rhs, l, r, o, len, *n, par),
            BinaryPath::RowLhs { row: n } => row::<K>(Side::Lhs, l, r, o, len, *n, par),
            BinaryPath::ColRhs { row: n } => col::<K>(Side::Rhs, l, r, o, len, *n, par),
            BinaryPath::ColLhs { row: n } => col::<K>(Side::Lhs, l, r, o, len, *n, par),
            BinaryPath::Modular { lhs_len, rhs_len } => modular::<K>(l, r, o, len, *lhs_len, *rhs_len, par),
            BinaryPath::Strided { dims, lhs_strides, rhs_strides } => {
                strided::<K>(l, r, o, len, dims, lhs_strides, rhs_strides, par)
            }
        }
    }
}
