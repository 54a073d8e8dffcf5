//! `DynamicQuantize` against its reference (serial and split) and the
//! spec's formulas written out, over awkward lengths and values.

use super::{dynamic_quantize_with, PASS_BODIES};
use crate::kernels::quant::*;
use crate::kernels::test_support::check_variants;

/// Runs the kernel serial and split, with every body this CPU runs, and
/// the reference; asserts all agree on every output byte, the scale's
/// bits and the zero point; returns them.
fn check(x: &[f32]) -> (Vec<u8>, f32, u8) {
    let len = x.len();
    let run = |f: &dyn Fn(*mut u8, *mut f32, *mut u8)| {
        let (mut y, mut scale, mut zero) = (vec![0xA5u8; len], f32::NAN, 0x5Au8);
        f(y.as_mut_ptr(), &mut scale, &mut zero);
        (y, scale.to_bits(), zero)
    };
    // SAFETY: each buffer holds exactly the extents named.
    let want = run(&|y, s, z| unsafe { dynamic_quantize_reference(x.as_ptr(), y, s, z, len) });
    // The bytes, then the scale's bits and the zero point.
    let flat =
        |(y, s, z): (Vec<u8>, u32, u8)| -> Vec<u32> { y.into_iter().map(u32::from).chain([s, u32::from(z)]).collect() };
    let want_flat = flat(want.clone());
    for par in [false, true] {
        // SAFETY: as above.
        let got = run(&|y, s, z| unsafe { dynamic_quantize(x.as_ptr(), y, s, z, len, par) });
        assert_eq!(got, want, "len {len}, par {par}");
        check_variants(
            &want_flat,
            &PASS_BODIES.supported(),
            |g, w| g == w,
            &format!("len {len}, par {par}"),
            |b| {
                // SAFETY: as above; the body runs on this CPU.
                flat(run(&|y, s, z| unsafe { dynamic_quantize_with(b, x.as_ptr(), y, s, z, len, par) }))
            },
        );
    }
    (want.0, f32::from_bits(want.1), want.2)
}

fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(7);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1 << 24) as f32 * 9.0 - 3.0
        })
        .collect()
}

#[test]
fn the_range_scale_and_values_follow_the_spec() {
    for (i, len) in [1usize, 2, 15, 16, 17, 33, 1000, 49_152, 100_003].into_iter().enumerate() {
        let x = values(len, i as u32);
        let (y, scale, zero) = check(&x);
        let lo = x.iter().copied().fold(0.0f32, f32::min);
        let hi = x.iter().copied().fold(0.0f32, f32::max);
        assert_eq!(scale, (hi - lo) / 255.0, "len {len}");
        assert_eq!(zero, (0.0 - lo / scale).clamp(0.0, 255.0).round_ties_even() as u8, "len {len}");
        for (&v, &q) in x.iter().zip(&y) {
            assert_eq!(q, ((v / scale).round_ties_even() + f32::from(zero)).clamp(0.0, 255.0) as u8, "{v}");
        }
    }
}

#[test]
fn degenerate_inputs_agree_with_the_reference() {
    check(&[]);
    check(&[0.0; 40]);
    check(&[-0.0; 40]);
    check(&vec![-2.5; 1000]);
    check(&[7.25; 33]);
    let mut x = values(5000, 9);
    x[4321] = f32::NAN;
    check(&x);
    x[17] = f32::INFINITY;
    check(&x);
    let mut y = values(70, 3);
    y[69] = f32::NEG_INFINITY;
    check(&y);
    // Only positive values: the zero point is 0 and 0 maps to 0.
    let (_, _, zero) = check(&values(300, 4).into_iter().map(f32::abs).collect::<Vec<_>>());
    assert_eq!(zero, 0);
}
