//! Every `BinaryFull` path against a naive N-D broadcast: random shapes
//! with partial size-1 axes, scalars, rows and columns, through the plan
//! and through each path's own entry.

use proptest::prelude::*;

use super::same;
use crate::kernels::elementwise::ops::{self, BinOp};
use crate::kernels::elementwise::*;
use crate::math;
use rlx_core::plan::{binary_path, BinaryPath};

/// Two operand shapes broadcast to `out` (same rank; each operand dim is
/// `out`'s or 1).
#[derive(Clone, Debug)]
pub(super) struct Case {
    pub out: Vec<usize>,
    pub lhs: Vec<usize>,
    pub rhs: Vec<usize>,
}

impl Case {
    pub fn len(&self) -> usize {
        self.out.iter().product()
    }

    /// Row-major strides of `shape`, 0 on its size-1 axes.
    pub fn strides(shape: &[usize]) -> Vec<usize> {
        let mut s = vec![0; shape.len()];
        let mut acc = 1;
        for d in (0..shape.len()).rev() {
            s[d] = if shape[d] == 1 { 0 } else { acc };
            acc *= shape[d];
        }
        s
    }

    /// `(li, ri)` of every output element, walking output coordinates with
    /// an odometer (not by decomposing `i`, as the kernels do).
    pub fn naive_indices(&self) -> Vec<(usize, usize)> {
        let rank = self.out.len();
        let (ls, rs) = (Self::strides(&self.lhs), Self::strides(&self.rhs));
        let mut coord = vec![0usize; rank];
        let mut out = Vec::with_capacity(self.len());
        for _ in 0..self.len() {
            let li = (0..rank).map(|d| coord[d] * ls[d]).sum();
            let ri = (0..rank).map(|d| coord[d] * rs[d]).sum();
            out.push((li, ri));
            for d in (0..rank).rev() {
                coord[d] += 1;
                if coord[d] < self.out[d] {
                    break;
                }
                coord[d] = 0;
            }
        }
        out
    }
}

/// Random cases: rank 1 to 4, dims 1 to 6, each operand axis broadcast
/// with probability 1/3, sometimes a whole operand scalar.
pub(super) fn cases() -> impl Strategy<Value = Case> {
    (1usize..=4)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(1usize..=6, rank),
                prop::collection::vec(0u8..3, rank),
                prop::collection::vec(0u8..3, rank),
                0u8..8,
            )
        })
        .prop_map(|(out, lb, rb, scalar)| {
            let pick = |b: &[u8], whole: bool| -> Vec<usize> {
                out.iter().zip(b).map(|(&d, &k)| if whole || k == 0 { 1 } else { d }).collect()
            };
            Case { lhs: pick(&lb, scalar == 0), rhs: pick(&rb, scalar == 1), out }
        })
}

/// Calls the entry generated code emits for `path`, not the dispatcher.
///
/// # Safety
/// As the entry of `path`.
unsafe fn call_entry_f32<O: BinOp>(
    path: &BinaryPath,
    l: *const f32,
    r: *const f32,
    o: *mut f32,
    len: usize,
    par: bool,
) {
    // SAFETY: the caller meets the contract of the entry `path` names (see
    // `# Safety` above), and each arm calls that entry with the same arguments.
    unsafe {
        match path {
            BinaryPath::SameShape => binary_same_f32::<O>(l, r, o, len, par),
            BinaryPath::ScalarLhs => binary_scalar_lhs_f32::<O>(l, r, o, len, par),
            BinaryPath::ScalarRhs => binary_scalar_rhs_f32::<O>(l, r, o, len, par),
            BinaryPath::RowRhs { row } => binary_row_rhs_f32::<O>(l, r, o, len, *row, par),
            BinaryPath::RowLhs { row } => binary_row_lhs_f32::<O>(l, r, o, len, *row, par),
            BinaryPath::ColRhs { row } => binary_col_rhs_f32::<O>(l, r, o, len, *row, par),
            BinaryPath::ColLhs { row } => binary_col_lhs_f32::<O>(l, r, o, len, *row, par),
            BinaryPath::Modular { lhs_len, rhs_len } => binary_modular_f32::<O>(l, r, o, len, *lhs_len, *rhs_len, par),
            BinaryPath::Strided { dims, lhs_strides, rhs_strides } => {
                binary_strided_f32::<O>(l, r, o, len, dims, lhs_strides, rhs_strides, par)
            }
        }
    }
}

/// Same for i64.
///
/// # Safety
/// As the entry of `path`.
unsafe fn call_entry_i64<O: BinOp>(
    path: &BinaryPath,
    l: *const i64,
    r: *const i64,
    o: *mut i64,
    len: usize,
    par: bool,
) {
    // SAFETY: as in `call_entry_f32`: each arm calls the entry `path` names,
    // whose contract the caller meets.
    unsafe {
        match path {
            BinaryPath::SameShape => binary_same_i64::<O>(l, r, o, len, par),
            BinaryPath::ScalarLhs => binary_scalar_lhs_i64::<O>(l, r, o, len, par),
            BinaryPath::ScalarRhs => binary_scalar_rhs_i64::<O>(l, r, o, len, par),
            BinaryPath::RowRhs { row } => binary_row_rhs_i64::<O>(l, r, o, len, *row, par),
            BinaryPath::RowLhs { row } => binary_row_lhs_i64::<O>(l, r, o, len, *row, par),
            BinaryPath::ColRhs { row } => binary_col_rhs_i64::<O>(l, r, o, len, *row, par),
            BinaryPath::ColLhs { row } => binary_col_lhs_i64::<O>(l, r, o, len, *row, par),
            BinaryPath::Modular { lhs_len, rhs_len } => binary_modular_i64::<O>(l, r, o, len, *lhs_len, *rhs_len, par),
            BinaryPath::Strided { dims, lhs_strides, rhs_strides } => {
                binary_strided_i64::<O>(l, r, o, len, dims, lhs_strides, rhs_strides, par)
            }
        }
    }
}

fn f32_data(n: usize, seed: u64) -> Vec<f32> {
    super::random_values(n, seed)
}

fn i64_data(n: usize, seed: u64) -> Vec<i64> {
    let pool = [0i64, 1, -1, 2, 3, -7, 64, 65, i64::MAX, i64::MIN, 1 << 40, 12345];
    (0..n).map(|i| pool[(i * 7 + seed as usize) % pool.len()].wrapping_add((i / pool.len()) as i64)).collect()
}

fn check_case<O: BinOp>(case: &Case, seed: u64) {
    let len = case.len();
    let (ln, rn): (usize, usize) = (case.lhs.iter().product(), case.rhs.iter().product());
    let (ls, rs) = (Case::strides(&case.lhs), Case::strides(&case.rhs));
    let path = binary_path(len, ln, rn, &case.out, &ls, &rs);
    let idx = case.naive_indices();

    let (l, r) = (f32_data(ln, seed), f32_data(rn, seed + 1));
    for par in [false, true] {
        let (mut a, mut b) = (vec![0f32; len], vec![0f32; len]);
        // SAFETY: `path` is `binary_path` of this case, so its reads stay inside
        // `l` (`ln` elements) and `r` (`rn`); `a` and `b` hold `len` f32 and
        // overlap no input.
        unsafe {
            binary_path_f32::<O>(&path, l.as_ptr(), r.as_ptr(), a.as_mut_ptr(), len, par);
            call_entry_f32::<O>(&path, l.as_ptr(), r.as_ptr(), b.as_mut_ptr(), len, par);
        }
        for (i, &(li, ri)) in idx.iter().enumerate() {
            let want = math::binary_f32(O::OP, l[li], r[ri]);
            assert!(same(a[i], want), "{case:?} {path:?} {} f32 at {i}: {} want {want}", O::OP.name(), a[i]);
            assert!(same(b[i], want), "{case:?} {path:?} entry at {i}");
        }
    }

    let (l, r) = (i64_data(ln, seed), i64_data(rn, seed + 3));
    let (mut a, mut b) = (vec![0i64; len], vec![0i64; len]);
    // SAFETY: as above, with i64 buffers of the same lengths.
    unsafe {
        binary_path_i64::<O>(&path, l.as_ptr(), r.as_ptr(), a.as_mut_ptr(), len, false);
        call_entry_i64::<O>(&path, l.as_ptr(), r.as_ptr(), b.as_mut_ptr(), len, true);
    }
    for (i, &(li, ri)) in idx.iter().enumerate() {
        let want = math::binary_i64(O::OP, l[li], r[ri]);
        assert_eq!(a[i], want, "{case:?} {path:?} {} i64 at {i}", O::OP.name());
        assert_eq!(b[i], want, "{case:?} {path:?} entry at {i}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_path_matches_naive_broadcast(case in cases(), op in 0usize..15, seed in 0u64..1000) {
        macro_rules! dispatch {
            ($($i:literal => $t:ty),*) => {
                match op { $($i => check_case::<$t>(&case, seed),)* _ => unreachable!() }
            };
        }
        dispatch!(0 => ops::Add, 1 => ops::Sub, 2 => ops::Mul, 3 => ops::Div, 4 => ops::Max, 5 => ops::Min,
                  6 => ops::Pow, 7 => ops::Mod, 8 => ops::Atan2, 9 => ops::BitAnd, 10 => ops::BitOr,
                  11 => ops::BitXor, 12 => ops::Shl, 13 => ops::Shr, 14 => ops::FloorMod);
    }

    #[test]
    fn flat_form_matches_modular_indexing(len in 0usize..200, ll in 0usize..40, rl in 0usize..40, seed in 0u64..1000) {
        let path = binary_path(len, ll, rl, &[], &[], &[]);
        let (lr, rr) = (ll.max(1).min(len.max(1)), rl.max(1).min(len.max(1)));
        let (l, r) = (f32_data(lr, seed), f32_data(rr, seed + 1));
        let mut o = vec![0f32; len];
        // SAFETY: the flat path reads `l` at `i % max(ll, 1)` and `r` at
        // `i % max(rl, 1)` for `i < len`, inside `lr` / `rr` elements; `o` holds
        // `len` f32 and overlaps neither.
        unsafe { call_entry_f32::<ops::Sub>(&path, l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), len, false) };
        for i in 0..len {
            let want = l[i % ll.max(1)] - r[i % rl.max(1)];
            prop_assert!(same(o[i], want), "{path:?} at {i}");
        }
    }
}

#[test]
fn the_common_shapes_take_their_fast_paths() {
    // Guard that the broadcast test exercises the fast paths, not only the
    // strided fallback.
    let case = |out: &[usize], lhs: &[usize], rhs: &[usize]| {
        let len = out.iter().product();
        let (ln, rn) = (lhs.iter().product(), rhs.iter().product());
        binary_path(len, ln, rn, out, &Case::strides(lhs), &Case::strides(rhs))
    };
    assert_eq!(case(&[4, 5], &[4, 5], &[1, 5]), BinaryPath::RowRhs { row: 5 });
    assert_eq!(case(&[4, 5], &[4, 5], &[4, 1]), BinaryPath::ColRhs { row: 5 });
    assert_eq!(case(&[4, 5], &[1, 1], &[4, 5]), BinaryPath::ScalarLhs);
    assert!(matches!(case(&[2, 3, 4], &[2, 3, 4], &[2, 1, 4]), BinaryPath::Strided { .. }));
}

#[test]
fn strided_in_place_over_an_identically_read_lhs() {
    let case = Case { out: vec![3, 4, 5], lhs: vec![3, 4, 5], rhs: vec![3, 1, 5] };
    let len = case.len();
    let (ls, rs) = (Case::strides(&case.lhs), Case::strides(&case.rhs));
    let l = f32_data(len, 5);
    let r = f32_data(15, 6);
    let mut x = l.clone();
    // SAFETY: `x` holds `len` f32 and is read at index `i` for output `i`
    // (same shape), the allowed alias; `r` holds the 15 elements its strides
    // reach.
    unsafe { binary_strided_f32::<ops::Mul>(x.as_ptr(), r.as_ptr(), x.as_mut_ptr(), len, &case.out, &ls, &rs, false) };
    for (i, (li, ri)) in case.naive_indices().into_iter().enumerate() {
        assert!(same(x[i], l[li] * r[ri]), "at {i}");
    }
}
