//! Which indexing path a two-operand elementwise thunk (`BinaryFull`, and
//! `Compare`) takes.
//!
//! A thunk's definition is the general one: output element `i` reads
//! `lhs[li]` and `rhs[ri]`, where in the flat form `li = i % lhs_len` and in
//! the shaped form `i` is decomposed over `out_dims` (row-major; the top
//! coordinate wraps) and dotted with the strides. [`binary_path`] finds the
//! cheapest kernel path that computes exactly the same indices, so the
//! code generator can name that kernel at gen time and the interpreter runs
//! the same one.

/// How output element `i` finds its operands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryPath {
    /// `li = ri = i`.
    SameShape,
    /// `li = 0`, `ri = i`.
    ScalarLhs,
    /// `li = i`, `ri = 0`.
    ScalarRhs,
    /// `li = i`, `ri = i % row`: the rhs is one row tiled over the output
    /// (a bias along the last axis).
    RowRhs { row: usize },
    /// `li = i % row`, `ri = i`.
    RowLhs { row: usize },
    /// `li = i`, `ri = i / row`: the rhs holds one value per output row of
    /// `row` elements (a `[m, 1]` operand against `[m, row]`).
    ColRhs { row: usize },
    /// `li = i / row`, `ri = i`.
    ColLhs { row: usize },
    /// `li = i % lhs_len`, `ri = i % rhs_len`: the flat form when neither
    /// operand fits a path above (including both operands scalar).
    Modular { lhs_len: usize, rhs_len: usize },
    /// The general shaped form, after dropping size-1 axes and merging axes
    /// that are contiguous for both operands. `dims` is never empty.
    Strided { dims: Vec<usize>, lhs_strides: Vec<usize>, rhs_strides: Vec<usize> },
}

/// The path of a `BinaryFull` thunk from its fields (`lhs_len`/`rhs_len`
/// of 0 count as 1, so a schedule that leaves them 0 still broadcasts). With `out_dims` empty the flat form
/// applies, else the shaped form; missing strides count as 0.
pub fn binary_path(
    len: usize,
    lhs_len: usize,
    rhs_len: usize,
    out_dims: &[usize],
    lhs_strides: &[usize],
    rhs_strides: &[usize],
) -> BinaryPath {
    if out_dims.is_empty() {
        flat_path(len, lhs_len.max(1), rhs_len.max(1))
    } else {
        shaped_path(len, out_dims, lhs_strides, rhs_strides)
    }
}

/// The path of a `Compare` thunk: the shaped form when `out_dims` is given,
/// else the `*_scalar` flags (a scalar operand is element 0 throughout, any
/// other is indexed by `i`).
pub fn compare_path(
    len: usize,
    lhs_scalar: bool,
    rhs_scalar: bool,
    out_dims: &[usize],
    lhs_strides: &[usize],
    rhs_strides: &[usize],
) -> BinaryPath {
    if !out_dims.is_empty() {
        return shaped_path(len, out_dims, lhs_strides, rhs_strides);
    }
    match (lhs_scalar, rhs_scalar) {
        _ if len <= 1 => BinaryPath::SameShape,
        (false, false) => BinaryPath::SameShape,
        (true, false) => BinaryPath::ScalarLhs,
        (false, true) => BinaryPath::ScalarRhs,
        (true, true) => BinaryPath::Modular { lhs_len: 1, rhs_len: 1 },
    }
}

/// Whether an operand is read at index `i` for every output index `i <
/// len`, so the output may alias it exactly (same offset) and still be
/// computed in one pass. The validator allows in-place `BinaryFull` and
/// `Compare` only for such operands.
pub fn reads_identically(len: usize, operand_len: usize, out_dims: &[usize], strides: &[usize]) -> bool {
    if out_dims.is_empty() {
        return len <= 1 || operand_len >= len;
    }
    // Walk axes from the innermost: each non-trivial axis must have the
    // contiguous stride, and the product must cover `len` without wrapping.
    let mut expect = 1usize;
    for (ax, &d) in out_dims.iter().enumerate().rev() {
        if d == 1 {
            continue;
        }
        if strides.get(ax).copied().unwrap_or(0) != expect {
            return false;
        }
        expect = expect.saturating_mul(d);
    }
    len <= expect
}

fn flat_path(len: usize, ll: usize, rl: usize) -> BinaryPath {
    // `i % n == i` for every `i < len` once `n >= len`.
    let (l_full, r_full) = (ll >= len, rl >= len);
    if len <= 1 || (l_full && r_full) {
        BinaryPath::SameShape
    } else if l_full && rl == 1 {
        BinaryPath::ScalarRhs
    } else if r_full && ll == 1 {
        BinaryPath::ScalarLhs
    } else if l_full && len.is_multiple_of(rl) {
        BinaryPath::RowRhs { row: rl }
    } else if r_full && len.is_multiple_of(ll) {
        BinaryPath::RowLhs { row: ll }
    } else {
        BinaryPath::Modular { lhs_len: ll, rhs_len: rl }
    }
}

/// Drops size-1 axes and merges each axis into the next inner one when
/// both operands step through them contiguously. Both are exact for the
/// wrapping decomposition: `(i / p) % (a * b)` splits into `(i / p / b) %
/// a` and `(i / p) % b`.
fn coalesce(out_dims: &[usize], lstr: &[usize], rstr: &[usize]) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let (mut dims, mut ls, mut rs) = (Vec::new(), Vec::new(), Vec::new());
    for (ax, &d) in out_dims.iter().enumerate() {
        let (l, r) = (lstr.get(ax).copied().unwrap_or(0), rstr.get(ax).copied().unwrap_or(0));
        if d == 1 {
            continue;
        }
        let n = dims.len();
        if n > 0 && ls[n - 1] == l.saturating_mul(d) && rs[n - 1] == r.saturating_mul(d) {
            dims[n - 1] *= d;
            ls[n - 1] = l;
            rs[n - 1] = r;
        } else {
            dims.push(d);
            ls.push(l);
            rs.push(r);
        }
    }
    (dims, ls, rs)
}

fn shaped_path(len: usize, out_dims: &[usize], lstr: &[usize], rstr: &[usize]) -> BinaryPath {
    let (dims, ls, rs) = coalesce(out_dims, lstr, rstr);
    let product = dims.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
    if dims.is_empty() {
        // Every axis has size 1: both operands are read at element 0.
        return if len <= 1 { BinaryPath::SameShape } else { BinaryPath::Modular { lhs_len: 1, rhs_len: 1 } };
    }
    // The fast paths assume the dims cover exactly `len` (no wrapping).
    if product == Some(len) {
        match (dims.as_slice(), ls.as_slice(), rs.as_slice()) {
            ([_], [1], [1]) => return BinaryPath::SameShape,
            ([_], [1], [0]) => return BinaryPath::ScalarRhs,
            ([_], [0], [1]) => return BinaryPath::ScalarLhs,
            ([_], [0], [0]) => return BinaryPath::Modular { lhs_len: 1, rhs_len: 1 },
            (&[_, b], &[lo, 1], &[0, 1]) if lo == b => return BinaryPath::RowRhs { row: b },
            (&[_, b], &[0, 1], &[ro, 1]) if ro == b => return BinaryPath::RowLhs { row: b },
            (&[_, b], &[lo, 1], &[1, 0]) if lo == b => return BinaryPath::ColRhs { row: b },
            (&[_, b], &[1, 0], &[ro, 1]) if ro == b => return BinaryPath::ColLhs { row: b },
            _ => {}
        }
    }
    BinaryPath::Strided { dims, lhs_strides: ls, rhs_strides: rs }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, for checking that a path computes the same indices.
    fn reference(i: usize, ll: usize, rl: usize, dims: &[usize], ls: &[usize], rs: &[usize]) -> (usize, usize) {
        if dims.is_empty() {
            let (ll, rl) = (ll.max(1), rl.max(1));
            return (i % ll, i % rl);
        }
        let (mut rem, mut li, mut ri) = (i, 0, 0);
        for ax in (0..dims.len()).rev() {
            let c = rem % dims[ax];
            rem /= dims[ax];
            li += c * ls.get(ax).copied().unwrap_or(0);
            ri += c * rs.get(ax).copied().unwrap_or(0);
        }
        (li, ri)
    }

    fn path_index(p: &BinaryPath, i: usize) -> (usize, usize) {
        match p {
            BinaryPath::SameShape => (i, i),
            BinaryPath::ScalarLhs => (0, i),
            BinaryPath::ScalarRhs => (i, 0),
            BinaryPath::RowRhs { row } => (i, i % row),
            BinaryPath::RowLhs { row } => (i % row, i),
            BinaryPath::ColRhs { row } => (i, i / row),
            BinaryPath::ColLhs { row } => (i / row, i),
            BinaryPath::Modular { lhs_len, rhs_len } => (i % lhs_len, i % rhs_len),
            BinaryPath::Strided { dims, lhs_strides, rhs_strides } => {
                reference(i, 0, 0, dims, lhs_strides, rhs_strides)
            }
        }
    }

    fn check(len: usize, ll: usize, rl: usize, dims: &[usize], ls: &[usize], rs: &[usize]) -> BinaryPath {
        let p = binary_path(len, ll, rl, dims, ls, rs);
        for i in 0..len {
            assert_eq!(path_index(&p, i), reference(i, ll, rl, dims, ls, rs), "{p:?} at {i}");
        }
        p
    }

    #[test]
    fn flat_forms_pick_the_fast_paths() {
        assert_eq!(check(12, 12, 12, &[], &[], &[]), BinaryPath::SameShape);
        assert_eq!(check(12, 12, 1, &[], &[], &[]), BinaryPath::ScalarRhs);
        assert_eq!(check(12, 0, 12, &[], &[], &[]), BinaryPath::ScalarLhs);
        assert_eq!(check(12, 12, 4, &[], &[], &[]), BinaryPath::RowRhs { row: 4 });
        assert_eq!(check(12, 3, 12, &[], &[], &[]), BinaryPath::RowLhs { row: 3 });
        assert_eq!(check(12, 12, 5, &[], &[], &[]), BinaryPath::Modular { lhs_len: 12, rhs_len: 5 });
        assert_eq!(check(12, 1, 1, &[], &[], &[]), BinaryPath::Modular { lhs_len: 1, rhs_len: 1 });
        assert_eq!(check(1, 1, 1, &[], &[], &[]), BinaryPath::SameShape);
        assert_eq!(check(0, 3, 1, &[], &[], &[]), BinaryPath::SameShape);
    }

    #[test]
    fn shaped_forms_coalesce_to_the_fast_paths() {
        assert_eq!(check(24, 24, 24, &[2, 3, 4], &[12, 4, 1], &[12, 4, 1]), BinaryPath::SameShape);
        assert_eq!(check(24, 24, 4, &[2, 3, 4], &[12, 4, 1], &[0, 0, 1]), BinaryPath::RowRhs { row: 4 });
        assert_eq!(check(24, 4, 24, &[2, 3, 4], &[0, 0, 1], &[12, 4, 1]), BinaryPath::RowLhs { row: 4 });
        assert_eq!(check(24, 24, 6, &[2, 3, 4], &[12, 4, 1], &[3, 1, 0]), BinaryPath::ColRhs { row: 4 });
        assert_eq!(check(24, 6, 24, &[2, 3, 4, 1], &[3, 1, 0, 0], &[12, 4, 1, 1]), BinaryPath::ColLhs { row: 4 });
        assert_eq!(check(24, 24, 1, &[1, 24], &[0, 1], &[0, 0]), BinaryPath::ScalarRhs);
        assert_eq!(check(24, 1, 24, &[24], &[0], &[1]), BinaryPath::ScalarLhs);
        assert_eq!(check(4, 1, 1, &[1, 1], &[0, 0], &[0, 0]), BinaryPath::Modular { lhs_len: 1, rhs_len: 1 });
        assert_eq!(check(4, 1, 1, &[4], &[0], &[0]), BinaryPath::Modular { lhs_len: 1, rhs_len: 1 });
    }

    #[test]
    fn irregular_shapes_stay_strided_and_exact() {
        // A middle-axis broadcast: [2, 3, 4] against [2, 1, 4].
        let p = check(24, 24, 8, &[2, 3, 4], &[12, 4, 1], &[4, 0, 1]);
        assert!(matches!(p, BinaryPath::Strided { ref dims, .. } if dims == &[2, 3, 4]));
        // A transposed read merges nothing.
        let p = check(6, 6, 6, &[2, 3], &[1, 2], &[3, 1]);
        assert!(matches!(p, BinaryPath::Strided { .. }));
        // Dims covering less than `len` wrap, like the definition.
        let p = check(12, 6, 6, &[2, 3], &[3, 1], &[3, 1]);
        assert!(matches!(p, BinaryPath::Strided { ref dims, .. } if dims == &[6]));
    }

    #[test]
    fn compare_flags_map_to_paths() {
        assert_eq!(compare_path(5, false, false, &[], &[], &[]), BinaryPath::SameShape);
        assert_eq!(compare_path(5, true, false, &[], &[], &[]), BinaryPath::ScalarLhs);
        assert_eq!(compare_path(5, false, true, &[], &[], &[]), BinaryPath::ScalarRhs);
        assert_eq!(compare_path(5, true, true, &[], &[], &[]), BinaryPath::Modular { lhs_len: 1, rhs_len: 1 });
        assert_eq!(compare_path(6, true, true, &[2, 3], &[3, 1], &[0, 1]), BinaryPath::RowRhs { row: 3 });
    }

    #[test]
    fn identical_reads_allow_aliasing() {
        assert!(reads_identically(6, 6, &[], &[]));
        assert!(!reads_identically(6, 3, &[], &[]));
        assert!(reads_identically(6, 6, &[2, 1, 3], &[3, 0, 1]));
        assert!(!reads_identically(6, 6, &[2, 3], &[1, 2]));
        assert!(!reads_identically(6, 3, &[2, 3], &[0, 1]));
        assert!(!reads_identically(12, 6, &[2, 3], &[3, 1]));
    }
}
