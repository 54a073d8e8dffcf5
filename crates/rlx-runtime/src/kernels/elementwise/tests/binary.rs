//! Binary operators: element semantics, SIMD inner loops against naive
//! loops, aliasing and parallel runs.

use super::{random_values, same, LENGTHS};
use crate::kernels::elementwise::binary::{same_f32_with, scalar_lhs_f32_with, scalar_rhs_f32_with};
use crate::kernels::elementwise::ops::{self, BinOp};
use crate::kernels::elementwise::BODIES;
use crate::kernels::elementwise::*;
use crate::kernels::test_support::check_variants;
use crate::math;
use rlx_core::BinaryOp;

/// Checks the three contiguous entries of `O` against naive loops.
fn check_contiguous<O: BinOp>(len: usize, seed: u64) {
    let l = random_values(len, seed);
    let r = random_values(len, seed + 1000);
    let op = O::OP;
    let mut o = vec![0f32; len];
    // SAFETY: `l`, `r` and `o` hold `len` f32 and are distinct.
    unsafe { binary_same_f32::<O>(l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), len, false) };
    for i in 0..len {
        let want = math::binary_f32(op, l[i], r[i]);
        assert!(same(o[i], want), "{} same {i}/{len}: {}, {} -> {} want {want}", op.name(), l[i], r[i], o[i]);
    }
    if len == 0 {
        return;
    }
    for (k, &b) in [r[0], f32::NAN, -0.0, f32::INFINITY].iter().enumerate() {
        // SAFETY: `l` and `o` hold `len` f32; `b` is one f32 on the stack.
        unsafe { binary_scalar_rhs_f32::<O>(l.as_ptr(), &b, o.as_mut_ptr(), len, false) };
        for i in 0..len {
            let want = math::binary_f32(op, l[i], b);
            assert!(same(o[i], want), "{} scalar rhs #{k} at {i}/{len}: {} vs {want}", op.name(), o[i]);
        }
        // SAFETY: `r` and `o` hold `len` f32; `b` is one f32 on the stack.
        unsafe { binary_scalar_lhs_f32::<O>(&b, r.as_ptr(), o.as_mut_ptr(), len, false) };
        for i in 0..len {
            let want = math::binary_f32(op, b, r[i]);
            assert!(same(o[i], want), "{} scalar lhs #{k} at {i}/{len}: {} vs {want}", op.name(), o[i]);
        }
    }
}

/// Instantiates a test body for every operator marker.
macro_rules! for_each_op {
    ($f:ident $(, $arg:expr)*) => {{
        $f::<ops::Add>($($arg),*);
        $f::<ops::Sub>($($arg),*);
        $f::<ops::Mul>($($arg),*);
        $f::<ops::Div>($($arg),*);
        $f::<ops::Max>($($arg),*);
        $f::<ops::Min>($($arg),*);
        $f::<ops::Pow>($($arg),*);
        $f::<ops::Mod>($($arg),*);
        $f::<ops::Atan2>($($arg),*);
        $f::<ops::BitAnd>($($arg),*);
        $f::<ops::BitOr>($($arg),*);
        $f::<ops::BitXor>($($arg),*);
        $f::<ops::Shl>($($arg),*);
        $f::<ops::Shr>($($arg),*);
        $f::<ops::FloorMod>($($arg),*);
    }};
}

/// The three contiguous inner loops of `O` on every body this CPU runs
/// against `math`, bit for bit.
fn check_bodies<O: BinOp>(len: usize, seed: u64) {
    let l = random_values(len, seed);
    let r = random_values(len, seed + 1000);
    let op = O::OP;
    let bodies = BODIES.supported();
    let want: Vec<f32> = l.iter().zip(&r).map(|(&a, &b)| math::binary_f32(op, a, b)).collect();
    check_variants(&want, &bodies, same, &format!("{} same over {len}", op.name()), |body| {
        let mut o = vec![0f32; len];
        // SAFETY: `l`, `r` and `o` hold `len` f32 and are distinct; the body
        // runs on this CPU.
        unsafe { same_f32_with::<O>(|| body, l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), len) };
        o
    });
    for (k, &b) in [r.first().copied().unwrap_or(1.5), f32::NAN, -0.0, f32::INFINITY].iter().enumerate() {
        let want: Vec<f32> = l.iter().map(|&a| math::binary_f32(op, a, b)).collect();
        check_variants(&want, &bodies, same, &format!("{} scalar rhs #{k} over {len}", op.name()), |body| {
            let mut o = vec![0f32; len];
            // SAFETY: `l` and `o` hold `len` f32 and are distinct; the body
            // runs on this CPU.
            unsafe { scalar_rhs_f32_with::<O>(|| body, l.as_ptr(), b, o.as_mut_ptr(), len) };
            o
        });
        let want: Vec<f32> = r.iter().map(|&x| math::binary_f32(op, b, x)).collect();
        check_variants(&want, &bodies, same, &format!("{} scalar lhs #{k} over {len}", op.name()), |body| {
            let mut o = vec![0f32; len];
            // SAFETY: `r` and `o` hold `len` f32 and are distinct; the body
            // runs on this CPU.
            unsafe { scalar_lhs_f32_with::<O>(|| body, b, r.as_ptr(), o.as_mut_ptr(), len) };
            o
        });
    }
}

#[test]
fn contiguous_entries_match_naive_loops_over_simd_tail_lengths() {
    for (k, &len) in LENGTHS.iter().enumerate() {
        for_each_op!(check_contiguous, len, k as u64);
        for_each_op!(check_bodies, len, k as u64);
    }
}

#[test]
fn markers_name_their_operator_and_apply_math() {
    fn check<O: BinOp>() {
        let (a, b) = (7.25f32, -2.5f32);
        assert!(same(O::f32(a, b), math::binary_f32(O::OP, a, b)));
        assert_eq!(O::i64(-7, 3), math::binary_i64(O::OP, -7, 3));
        assert_eq!(
            rlx_core::TypeArg::rust_type(O::OP).rsplit("::").next().unwrap().trim(),
            std::any::type_name::<O>().rsplit("::").next().unwrap()
        );
    }
    for_each_op!(check);
    assert_eq!(BinaryOp::ALL.len(), 15, "a new operator needs a marker type");
}

#[test]
fn max_and_min_ignore_a_nan_operand_like_std() {
    let nan = f32::NAN;
    assert_eq!(math::max_f32(nan, 1.0), 1.0);
    assert_eq!(math::max_f32(1.0, nan), 1.0);
    assert_eq!(math::min_f32(nan, -1.0), -1.0);
    assert_eq!(math::min_f32(-1.0, nan), -1.0);
    assert!(math::max_f32(nan, nan).is_nan());
    // Equal operands give the second one (signed zeros included).
    assert_eq!(math::max_f32(-0.0, 0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(math::max_f32(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(math::min_f32(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
    for a in random_values(300, 3) {
        for b in random_values(30, 4) {
            if !(a == 0.0 && b == 0.0) {
                assert!(same(math::max_f32(a, b), a.max(b)), "max({a}, {b})");
                assert!(same(math::min_f32(a, b), a.min(b)), "min({a}, {b})");
            }
        }
    }
}

#[test]
fn f32_bit_operators_go_through_truncated_i64() {
    assert_eq!(math::bit_and_f32(6.7, 3.2), 2.0);
    assert_eq!(math::bit_or_f32(4.9, 1.0), 5.0);
    assert_eq!(math::bit_xor_f32(-1.0, 1.0), -2.0);
    assert_eq!(math::shl_f32(1.0, 3.0), 8.0);
    assert_eq!(math::shr_f32(-8.0, 1.0), -4.0);
    // NaN truncates to 0; a negative shift count saturates to 0.
    assert_eq!(math::bit_or_f32(f32::NAN, 3.0), 3.0);
    assert_eq!(math::shl_f32(5.0, -3.0), 5.0);
    assert_eq!(math::mod_f32(-7.0, 3.0), -1.0);
    assert_eq!(math::pow_f32(2.0, 10.0), 1024.0);
    assert_eq!(math::atan2_f32(1.0, 1.0), std::f32::consts::FRAC_PI_4);
}

#[test]
fn i64_operators_wrap_and_never_trap() {
    use math::*;
    assert_eq!(add_i64(i64::MAX, 1), i64::MIN);
    assert_eq!(sub_i64(i64::MIN, 1), i64::MAX);
    assert_eq!(mul_i64(i64::MAX, 2), -2);
    assert_eq!(div_i64(7, 0), 0);
    assert_eq!(div_i64(-7, 2), -3);
    assert_eq!(div_i64(i64::MIN, -1), i64::MIN);
    assert_eq!(mod_i64(7, 0), 0);
    assert_eq!(mod_i64(-7, 3), -1);
    assert_eq!(mod_i64(i64::MIN, -1), 0);
    assert_eq!(pow_i64(3, 4), 81);
    assert_eq!(pow_i64(5, -2), 1);
    assert_eq!(pow_i64(0, 0), 1);
    assert_eq!(pow_i64(2, 63), i64::MIN);
    assert_eq!(pow_i64(2, 64), 0);
    assert_eq!(pow_i64(-1, (1 << 40) + 1), -1);
    // 3^(2^32) mod 2^64 by 32 squarings, independent of the kernel's loop.
    let mut sq = 3i64;
    for _ in 0..32 {
        sq = sq.wrapping_mul(sq);
    }
    assert_eq!(pow_i64(3, 1 << 32), sq);
    assert_eq!(shl_i64(1, 65), 2);
    assert_eq!(shr_i64(-8, 1), -4);
    assert_eq!(max_i64(-3, 2), 2);
    assert_eq!(min_i64(-3, 2), -3);
    assert_eq!(atan2_i64(10, 1), 1);
    assert_eq!(bit_xor_i64(0b1100, 0b1010), 0b0110);
}

/// Floored remainder against an independent reference: Euclid's remainder
/// in i128 moved to the divisor's sign (i64), and `a - b * floor(a / b)`
/// in f64 (exact for these small operands).
#[test]
fn floor_mod_takes_the_sign_of_the_divisor() {
    let ints = [0i64, 1, -1, 2, -2, 3, -3, 7, -7, 13, -13, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
    for &a in &ints {
        for &b in &ints {
            let want = if b == 0 {
                0
            } else {
                let r = i128::from(a).rem_euclid(i128::from(b));
                (if r != 0 && b < 0 { r + i128::from(b) } else { r }) as i64
            };
            assert_eq!(math::floor_mod_i64(a, b), want, "{a} mod {b}");
        }
    }
    let floats = [0.0f32, -0.0, 0.5, -0.5, 1.25, -1.25, 3.0, -3.0, 5.75, -5.75, 10.0, -10.0];
    for &a in &floats {
        for &b in &floats {
            let got = math::floor_mod_f32(a, b);
            if b == 0.0 {
                assert!(got.is_nan(), "{a} mod {b} = {got}");
                continue;
            }
            let want = (f64::from(a) - f64::from(b) * (f64::from(a) / f64::from(b)).floor()) as f32;
            assert_eq!(got, want, "{a} mod {b}");
            // A result takes the divisor's sign, zeros included.
            assert!(got == 0.0 || (got < 0.0) == (b < 0.0), "{a} mod {b} = {got}");
            if got == 0.0 {
                assert_eq!(got.is_sign_negative(), b.is_sign_negative(), "{a} mod {b} = {got}");
            }
        }
    }
    assert!(math::floor_mod_f32(f32::NAN, 2.0).is_nan());
    assert!(math::floor_mod_f32(f32::INFINITY, 2.0).is_nan());
    assert_eq!(math::floor_mod_f32(-1.0, f32::INFINITY), f32::INFINITY);
    assert_eq!(math::floor_mod_f32(1.0, f32::INFINITY), 1.0);
}

#[test]
fn i64_entries_apply_the_i64_definitions() {
    let l: Vec<i64> = vec![i64::MAX, i64::MIN, -7, 0, 5, 1 << 40, -1, 3, 12, 99];
    let r: Vec<i64> = vec![1, -1, 0, 0, 3, 2, 64, -2, 5, 7];
    fn check<O: BinOp>(l: &[i64], r: &[i64]) {
        let mut o = vec![0i64; l.len()];
        // SAFETY: `l`, `r` and `o` hold `l.len()` i64 (`r` as many) and are
        // distinct.
        unsafe { binary_same_i64::<O>(l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), l.len(), false) };
        for i in 0..l.len() {
            assert_eq!(o[i], math::binary_i64(O::OP, l[i], r[i]), "{} at {i}", O::OP.name());
        }
    }
    for_each_op!(check, &l, &r);
}

#[test]
fn outputs_may_alias_an_input_exactly() {
    fn check<O: BinOp>(len: usize) {
        let l = random_values(len, 11);
        let r = random_values(len, 12);
        let want: Vec<f32> = l.iter().zip(&r).map(|(a, b)| O::f32(*a, *b)).collect();
        let mut x = l.clone();
        // SAFETY: `x` and `r` hold `len` f32; the output is `x` exactly (allowed).
        unsafe { binary_same_f32::<O>(x.as_ptr(), r.as_ptr(), x.as_mut_ptr(), len, false) };
        assert!(x.iter().zip(&want).all(|(a, b)| same(*a, *b)), "{} dst == lhs", O::OP.name());
        let mut y = r.clone();
        // SAFETY: `l` and `y` hold `len` f32; the output is `y` exactly (allowed).
        unsafe { binary_same_f32::<O>(l.as_ptr(), y.as_ptr(), y.as_mut_ptr(), len, false) };
        assert!(y.iter().zip(&want).all(|(a, b)| same(*a, *b)), "{} dst == rhs", O::OP.name());
        // Row broadcast in place over the full operand.
        let row = 7;
        let mut z = l.clone();
        // SAFETY: `z` and `r` hold `len >= min(row, len)` f32; the output is the
        // full operand `z` exactly (allowed).
        unsafe { binary_row_rhs_f32::<O>(z.as_ptr(), r.as_ptr(), z.as_mut_ptr(), len, row, false) };
        for i in 0..len {
            assert!(same(z[i], O::f32(l[i], r[i % row])), "{} row in place at {i}", O::OP.name());
        }
        let mut w = r.clone();
        // SAFETY: `l` and `w` hold `len >= ceil(len / row)` f32; the output is the
        // full operand `w` exactly (allowed).
        unsafe { binary_col_lhs_f32::<O>(l.as_ptr(), w.as_ptr(), w.as_mut_ptr(), len, row, false) };
        for i in 0..len {
            assert!(same(w[i], O::f32(l[i / row], r[i])), "{} col in place at {i}", O::OP.name());
        }
    }
    for_each_op!(check, 70);
    for_each_op!(check, 1023);
}

#[test]
fn parallel_runs_equal_serial_runs() {
    let len = 3 * crate::kernels::elementwise::par::PAR_CHUNK + 17;
    let l = random_values(len, 21);
    let r = random_values(len, 22);
    let (mut a, mut b) = (vec![0f32; len], vec![0f32; len]);
    // SAFETY: `l`, `r`, `a` and `b` hold `len` f32 and are distinct.
    unsafe {
        binary_same_f32::<ops::Max>(l.as_ptr(), r.as_ptr(), a.as_mut_ptr(), len, false);
        binary_same_f32::<ops::Max>(l.as_ptr(), r.as_ptr(), b.as_mut_ptr(), len, true);
    }
    assert!(a.iter().zip(&b).all(|(x, y)| same(*x, *y)));
    let dims = [len / 7 + 1, 7];
    // SAFETY: with these dims and strides, output `i` reads `l[i]` and
    // `r[i / 7]`, both below `len`; `a` and `b` hold `len` f32, distinct from
    // the inputs.
    unsafe {
        binary_strided_f32::<ops::Sub>(l.as_ptr(), r.as_ptr(), a.as_mut_ptr(), len, &dims, &[7, 1], &[1, 0], false);
        binary_strided_f32::<ops::Sub>(l.as_ptr(), r.as_ptr(), b.as_mut_ptr(), len, &dims, &[7, 1], &[1, 0], true);
    }
    assert!(a.iter().zip(&b).all(|(x, y)| same(*x, *y)));
    // SAFETY: `l`, `a`, `b` hold `len` f32 and `r` holds `len >= ceil(len / 5)`;
    // all distinct.
    unsafe {
        binary_col_rhs_f32::<ops::Div>(l.as_ptr(), r.as_ptr(), a.as_mut_ptr(), len, 5, false);
        binary_col_rhs_f32::<ops::Div>(l.as_ptr(), r.as_ptr(), b.as_mut_ptr(), len, 5, true);
    }
    assert!(a.iter().zip(&b).all(|(x, y)| same(*x, *y)));
}
