//! `Compare`: every operator on every input and output type, flat and
//! broadcast indexing, against naive loops.

use proptest::prelude::*;

use super::broadcast::{cases, Case};
use super::random_values;
use crate::kernels::elementwise::ops::{self, Cmp};
use crate::kernels::elementwise::*;
use rlx_core::plan::{binary_path, compare_path as plan_compare_path, BinaryPath};
use rlx_core::CmpOp;

/// The comparison written out, independent of the marker types.
fn naive<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

/// Flat paths (the `*_scalar` flags) for one operator, input and output type.
fn check_flat<C: Cmp, T: CmpElem + std::fmt::Debug, D: CmpDst + PartialEq + std::fmt::Debug>(l: &[T], r: &[T]) {
    let len = l.len();
    for (ls, rs) in [(false, false), (true, false), (false, true), (true, true)] {
        let path = plan_compare_path(len, ls, rs, &[], &[], &[]);
        for par in [false, true] {
            let mut o = vec![D::from_bool(false); len];
            // SAFETY: `l`, `r` and `o` hold `len` elements (the flat paths read at
            // most that) and are distinct.
            unsafe { compare_path::<C, T, D>(&path, l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), len, par) };
            for i in 0..len {
                let (a, b) = (l[if ls { 0 } else { i }], r[if rs { 0 } else { i }]);
                let want = D::from_bool(naive(C::OP, a, b));
                assert_eq!(o[i], want, "{:?} {path:?} at {i}: {a:?} {b:?}", C::OP);
            }
        }
    }
}

fn check_all_ops<T: CmpElem + std::fmt::Debug, D: CmpDst + PartialEq + std::fmt::Debug>(l: &[T], r: &[T]) {
    check_flat::<ops::Eq, T, D>(l, r);
    check_flat::<ops::Ne, T, D>(l, r);
    check_flat::<ops::Lt, T, D>(l, r);
    check_flat::<ops::Le, T, D>(l, r);
    check_flat::<ops::Gt, T, D>(l, r);
    check_flat::<ops::Ge, T, D>(l, r);
}

#[test]
fn flat_compare_matches_naive_for_every_type() {
    for len in [1usize, 9, 33] {
        let lf = random_values(len, 1);
        // Equal elements are common, so Eq/Le/Ge see both outcomes.
        let rf: Vec<f32> = random_values(len, 2)
            .iter()
            .zip(&lf)
            .enumerate()
            .map(|(i, (r, l))| if i % 3 == 0 { *l } else { *r })
            .collect();
        check_all_ops::<f32, u8>(&lf, &rf);
        check_all_ops::<f32, f32>(&lf, &rf);
        let li: Vec<i64> = (0..len as i64).map(|i| (i * 7919) % 13 - 6).collect();
        let ri: Vec<i64> = (0..len as i64).map(|i| (i * 104_729) % 11 - 5).collect();
        check_all_ops::<i64, u8>(&li, &ri);
        check_all_ops::<i64, f32>(&li, &ri);
        let lb: Vec<u8> = (0..len).map(|i| (i * 37 % 5) as u8 * 60).collect();
        let rb: Vec<u8> = (0..len).map(|i| (i * 11 % 4) as u8 * 80).collect();
        check_all_ops::<u8, u8>(&lb, &rb);
        check_all_ops::<u8, f32>(&lb, &rb);
    }
}

#[test]
fn nan_compares_unequal_and_unordered() {
    let l = [f32::NAN, 1.0, f32::NAN];
    let r = [1.0, f32::NAN, f32::NAN];
    let mut o = [9u8; 3];
    let path = BinaryPath::SameShape;
    // SAFETY: `l`, `r` and `o` hold 3 elements and are distinct.
    unsafe { compare_path::<ops::Ne, f32, u8>(&path, l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), 3, false) };
    assert_eq!(o, [1, 1, 1]);
    for f in [
        compare_path::<ops::Eq, f32, u8> as unsafe fn(&BinaryPath, *const f32, *const f32, *mut u8, usize, bool),
        compare_path::<ops::Lt, f32, u8>,
        compare_path::<ops::Le, f32, u8>,
        compare_path::<ops::Gt, f32, u8>,
        compare_path::<ops::Ge, f32, u8>,
    ] {
        // SAFETY: `l`, `r` and `o` hold 3 elements and are distinct.
        unsafe { f(&path, l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), 3, false) };
        assert_eq!(o, [0, 0, 0]);
    }
}

#[test]
fn f32_output_may_alias_an_f32_input() {
    let l = random_values(100, 5);
    let r = random_values(100, 6);
    let mut x = l.clone();
    // SAFETY: `x` and `r` hold 100 f32; the output is `x` exactly, with the
    // same element size (allowed).
    unsafe { compare_same::<ops::Lt, f32, f32>(x.as_ptr(), r.as_ptr(), x.as_mut_ptr(), 100, false) };
    for i in 0..100 {
        assert_eq!(x[i], if l[i] < r[i] { 1.0 } else { 0.0 });
    }
    let mut y = r.clone();
    // SAFETY: `&l[0]` is one f32 not in `y`; `y` holds 100 f32 and is the
    // exact, same-size alias of the output.
    unsafe { compare_scalar_lhs::<ops::Ge, f32, f32>(&l[0], y.as_ptr(), y.as_mut_ptr(), 100, false) };
    for i in 0..100 {
        assert_eq!(y[i], if l[0] >= r[i] { 1.0 } else { 0.0 });
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn broadcast_compare_matches_naive(case in cases(), seed in 0u64..1000) {
        let len = case.len();
        let (ln, rn): (usize, usize) = (case.lhs.iter().product(), case.rhs.iter().product());
        let (ls, rs) = (Case::strides(&case.lhs), Case::strides(&case.rhs));
        // The scalar flags are ignored when dims are given.
        let path = plan_compare_path(len, true, false, &case.out, &ls, &rs);
        prop_assert_eq!(&path, &binary_path(len, ln, rn, &case.out, &ls, &rs));
        let l: Vec<i64> = (0..ln as i64).map(|i| (i + seed as i64) % 5).collect();
        let r: Vec<i64> = (0..rn as i64).map(|i| (i * 3) % 4).collect();
        let mut o = vec![7u8; len];
        // SAFETY: `path` is `binary_path` of this case, so its reads stay inside
        // `l` (`ln` elements) and `r` (`rn`); `o` holds `len` bytes and overlaps
        // neither.
        unsafe { compare_path::<ops::Le, i64, u8>(&path, l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), len, false) };
        for (i, (li, ri)) in case.naive_indices().into_iter().enumerate() {
            prop_assert_eq!(o[i], u8::from(l[li] <= r[ri]), "{:?} at {}", path, i);
        }
    }
}
