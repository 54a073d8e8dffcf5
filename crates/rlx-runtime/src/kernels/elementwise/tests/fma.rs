//! `Fma`: one rounding, every path bit-exact with `mul_add`.

use super::{random_values, LENGTHS};
use crate::kernels::elementwise::fma::{fma_f32_with, fma_f64_with};
use crate::kernels::elementwise::{fma_f32, fma_f64, BODIES};
use crate::kernels::test_support::check_variants;

#[test]
fn fma_rounds_once() {
    // (1 + 2^-12)(1 - 2^-12) - 1 = -2^-24 exactly; a multiply then an add
    // would round the product to 1 and give 0.
    let (a, b, c) = ([1.0 + 2f32.powi(-12)], [1.0 - 2f32.powi(-12)], [-1.0f32]);
    let mut d = [0f32];
    // SAFETY: every buffer holds 1 f32; `d` is distinct from the inputs.
    unsafe { fma_f32(a.as_ptr(), b.as_ptr(), c.as_ptr(), d.as_mut_ptr(), 1, false) };
    assert_eq!(d[0], -2f32.powi(-24));
    let (a, b, c) = ([1.0 + 2f64.powi(-27)], [1.0 - 2f64.powi(-27)], [-1.0f64]);
    let mut d = [0f64];
    // SAFETY: every buffer holds 1 f64; `d` is distinct from the inputs.
    unsafe { fma_f64(a.as_ptr(), b.as_ptr(), c.as_ptr(), d.as_mut_ptr(), 1, false) };
    assert_eq!(d[0], -2f64.powi(-54));
}

#[test]
fn fma_matches_mul_add_over_simd_tail_lengths() {
    for (k, &len) in LENGTHS.iter().chain([40_000usize].iter()).enumerate() {
        let (a, b, c) =
            (random_values(len, k as u64), random_values(len, 100 + k as u64), random_values(len, 200 + k as u64));
        for par in [false, true] {
            let mut d = vec![0f32; len];
            // SAFETY: `a`, `b`, `c` and `d` hold `len` f32 and are distinct.
            unsafe { fma_f32(a.as_ptr(), b.as_ptr(), c.as_ptr(), d.as_mut_ptr(), len, par) };
            for i in 0..len {
                let want = a[i].mul_add(b[i], c[i]);
                assert!(super::same(d[i], want), "f32 at {i}/{len}: {} vs {want}", d[i]);
            }
            let (a64, b64, c64): (Vec<f64>, Vec<f64>, Vec<f64>) = (
                a.iter().map(|&x| f64::from(x) * 1.000_000_1).collect(),
                b.iter().map(|&x| f64::from(x) / 3.0).collect(),
                c.iter().map(|&x| f64::from(x)).collect(),
            );
            let mut d64 = vec![0f64; len];
            // SAFETY: the four f64 buffers hold `len` elements and are distinct.
            unsafe { fma_f64(a64.as_ptr(), b64.as_ptr(), c64.as_ptr(), d64.as_mut_ptr(), len, par) };
            for i in 0..len {
                let want = a64[i].mul_add(b64[i], c64[i]);
                assert!(d64[i].to_bits() == want.to_bits() || (d64[i].is_nan() && want.is_nan()), "f64 at {i}/{len}");
            }
        }
    }
}

#[test]
fn every_body_matches_mul_add_over_simd_tail_lengths() {
    let bodies = BODIES.supported();
    for (k, &len) in LENGTHS.iter().enumerate() {
        let (a, b, c) =
            (random_values(len, k as u64), random_values(len, 100 + k as u64), random_values(len, 200 + k as u64));
        let want: Vec<f32> = (0..len).map(|i| a[i].mul_add(b[i], c[i])).collect();
        check_variants(&want, &bodies, super::same, &format!("f32 over {len}"), |body| {
            let mut d = vec![0f32; len];
            // SAFETY: `a`, `b`, `c` and `d` hold `len` f32 and are distinct;
            // the body runs on this CPU.
            unsafe { fma_f32_with(body, a.as_ptr(), b.as_ptr(), c.as_ptr(), d.as_mut_ptr(), len) };
            d
        });
        let (a64, b64, c64): (Vec<f64>, Vec<f64>, Vec<f64>) = (
            a.iter().map(|&x| f64::from(x) * 1.000_000_1).collect(),
            b.iter().map(|&x| f64::from(x) / 3.0).collect(),
            c.iter().map(|&x| f64::from(x)).collect(),
        );
        let want: Vec<f64> = (0..len).map(|i| a64[i].mul_add(b64[i], c64[i])).collect();
        let same64 = |g: f64, w: f64| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
        check_variants(&want, &bodies, same64, &format!("f64 over {len}"), |body| {
            let mut d = vec![0f64; len];
            // SAFETY: the four f64 buffers hold `len` elements and are
            // distinct; the body runs on this CPU.
            unsafe { fma_f64_with(body, a64.as_ptr(), b64.as_ptr(), c64.as_ptr(), d.as_mut_ptr(), len) };
            d
        });
    }
}

#[test]
fn fma_in_place_over_each_input() {
    let len = 45;
    let (a, b, c) = (random_values(len, 1), random_values(len, 2), random_values(len, 3));
    let want: Vec<f32> = (0..len).map(|i| a[i].mul_add(b[i], c[i])).collect();
    for which in 0..3 {
        let mut x = [&a, &b, &c][which].clone();
        let p = x.as_mut_ptr();
        let (pa, pb, pc) = match which {
            0 => (p.cast_const(), b.as_ptr(), c.as_ptr()),
            1 => (a.as_ptr(), p.cast_const(), c.as_ptr()),
            _ => (a.as_ptr(), b.as_ptr(), p.cast_const()),
        };
        // SAFETY: every buffer holds `len` f32; the output `p` equals exactly one
        // input (same offset), which `fma_f32` allows.
        unsafe { fma_f32(pa, pb, pc, p, len, false) };
        assert!(x.iter().zip(&want).all(|(g, w)| super::same(*g, *w)), "dst aliasing input {which}");
    }
}
