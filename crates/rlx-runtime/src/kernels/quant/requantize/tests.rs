//! `requantize` (serial and split) against `requantize_reference`, bit
//! for bit.

use super::{requantize_with, ROW_BODIES};
use crate::kernels::quant::shared::bytes;
use crate::kernels::quant::*;
use crate::kernels::test_support::check_variants;

/// `requantize` (serial, split) against its reference over both types,
/// with and without bias and zero point, per-tensor and per-channel
/// scales; the sums reach past 2^24 (rounded on conversion) and wrap.
#[test]
fn requantize_matches_the_reference() {
    fn case<Q: IntElem + PartialEq + std::fmt::Debug>(zero: Option<Q>, with_bias: bool, per_channel: bool) {
        for &(outer, channels, inner) in &[(1usize, 1usize, 1usize), (2, 3, 37), (1, 64, 300), (5, 17, 1), (1, 2, 0)] {
            let len = outer * channels * inner;
            let acc: Vec<i32> = bytes(len * 4, 11)
                .chunks_exact(4)
                .enumerate()
                .map(|(i, b)| {
                    let v = i32::from_le_bytes(b.try_into().unwrap());
                    // Mostly moderate sums, some huge ones.
                    match i % 7 {
                        0 => v,
                        1 => (v >> 24) | 1,
                        _ => v >> 12,
                    }
                })
                .collect();
            let bias: Vec<i32> = (0..channels).map(|c| (c as i32 - 3) * 100_003 + i32::MAX * (c == 1) as i32).collect();
            // Channel 0's 0.5 puts every odd sum exactly halfway between two
            // integers (ties to even).
            let scale: Vec<f32> =
                (0..channels).map(|c| if c == 0 { 0.5 } else { 0.000_7 * (c + 1) as f32 + 1e-6 }).collect();
            let scale_len = if per_channel { channels } else { 1 };
            let (bias_ptr, zero_ptr) = (
                if with_bias { bias.as_ptr() } else { std::ptr::null() },
                zero.as_ref().map_or(std::ptr::null(), |z| z as *const Q),
            );
            let mut want = vec![Q::from_i32(0); len];
            let (mut got, mut split) = (vec![Q::from_i32(1); len], vec![Q::from_i32(2); len]);
            let args = (acc.as_ptr(), bias_ptr, scale.as_ptr(), zero_ptr);
            // SAFETY: the vectors hold the extents the sizes name.
            unsafe {
                requantize_reference(
                    args.0,
                    args.1,
                    args.2,
                    args.3,
                    want.as_mut_ptr(),
                    outer,
                    channels,
                    inner,
                    scale_len,
                );
                requantize(args.0, args.1, args.2, args.3, got.as_mut_ptr(), outer, channels, inner, scale_len, false);
                requantize(args.0, args.1, args.2, args.3, split.as_mut_ptr(), outer, channels, inner, scale_len, true);
            }
            let what = format!("{:?}", (outer, channels, inner, with_bias, per_channel));
            assert_eq!(got, want, "{what}");
            assert_eq!(split, want, "{what} split");
            for par in [false, true] {
                check_variants(
                    &want,
                    &ROW_BODIES.supported(),
                    |g, w| g == w,
                    &format!("{what} par {par}"),
                    |body| {
                        let mut out = vec![Q::from_i32(3); len];
                        // SAFETY: as above; the body runs on this CPU.
                        unsafe {
                            let (a, b, s, z) = args;
                            requantize_with(body, a, b, s, z, out.as_mut_ptr(), outer, channels, inner, scale_len, par)
                        };
                        out
                    },
                );
            }
        }
    }
    for (with_bias, per_channel) in [(false, false), (true, false), (true, true), (false, true)] {
        case::<u8>(Some(131), with_bias, per_channel);
        case::<u8>(None, with_bias, per_channel);
        case::<i8>(Some(-5), with_bias, per_channel);
        case::<i8>(None, with_bias, per_channel);
    }
}
