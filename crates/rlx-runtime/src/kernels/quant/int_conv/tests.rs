//! `int_conv2d` (the direct path and both im2col forms: 8-bit quads
//! where the CPU has AVX-512 VNNI, 16-bit pairs everywhere; serial and
//! split) against
//! `int_conv2d_reference`, bit for bit.

use rlx_core::plan::{int_conv2d_direct, int_conv2d_scratch_bytes};

use super::{run_paths, BODIES};
use crate::kernels::conv::Conv2dShape;
use crate::kernels::quant::shared::bytes;
use crate::kernels::quant::*;
use crate::kernels::test_support::check_variants;

/// A shape from `[n, c_in, h, w_in, c_out, kh, kw, sh, sw, ph, pw, dh, dw,
/// groups]`, the output sizes by ONNX's rule with trailing padding
/// `trail` (per axis).
pub(crate) fn shape(d: [usize; 14], trail: [usize; 2]) -> Conv2dShape {
    let [n, c_in, h, w_in, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups] = d;
    let out = |len: usize, k: usize, s: usize, p: usize, t: usize, dil: usize| {
        let ext = (k - 1) * dil + 1;
        if len + p + t < ext {
            0
        } else {
            (len + p + t - ext) / s + 1
        }
    };
    Conv2dShape {
        n,
        c_in,
        h,
        w_in,
        c_out,
        h_out: out(h, kh, sh, ph, trail[0], dh),
        w_out: out(w_in, kw, sw, pw, trail[1], dw),
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        groups,
    }
}

/// The entry (serial and split) and every body this CPU runs (serial and
/// split) against the reference, bit for bit.
fn check<X: IntElem, W: IntElem>(s: &Conv2dShape, x: &[X], w: &[W], zx: Option<X>, zw: &[W]) {
    let zx_ptr = zx.as_ref().map_or(std::ptr::null(), |z| z as *const X);
    let zw_ptr = if zw.is_empty() { std::ptr::null() } else { zw.as_ptr() };
    let len = s.n * s.c_out * s.out_plane();
    let (mut want, mut got, mut split) = (vec![0i32; len], vec![7i32; len], vec![-7i32; len]);
    let mut scratch = vec![[0u64; 8]; int_conv2d_scratch_bytes(s).div_ceil(64)];
    let sp: *mut u8 = scratch.as_mut_ptr().cast();
    // SAFETY: the slices hold exactly the extents the shape names.
    unsafe {
        int_conv2d_reference(x.as_ptr(), w.as_ptr(), zx_ptr, zw_ptr, want.as_mut_ptr(), s, zw.len());
        int_conv2d(sp, x.as_ptr(), w.as_ptr(), zx_ptr, zw_ptr, got.as_mut_ptr(), s, zw.len(), false);
        int_conv2d(sp, x.as_ptr(), w.as_ptr(), zx_ptr, zw_ptr, split.as_mut_ptr(), s, zw.len(), true);
    }
    assert_eq!(got, want, "serial, {s:?}, direct {}", int_conv2d_direct(s));
    assert_eq!(split, want, "split, {s:?}");
    for par in [false, true] {
        let what = format!("par {par}, {s:?}, direct {}", int_conv2d_direct(s));
        check_variants(
            &want,
            &BODIES.supported(),
            |g, w| g == w,
            &what,
            |body| {
                let mut out = vec![3i32; len];
                // SAFETY: as above; the body runs on this CPU.
                unsafe {
                    run_paths(body, sp, x.as_ptr(), w.as_ptr(), zx_ptr, zw_ptr, out.as_mut_ptr(), s, zw.len(), par)
                };
                out
            },
        );
    }
}

/// Runs one shape with every type pairing and zero-point form.
fn check_all_types(s: &Conv2dShape, seed: u32) {
    let x = bytes(s.n * s.c_in * s.h * s.w_in, seed);
    let w = bytes(s.c_out * s.c_in_g() * s.kh * s.kw, seed + 1);
    let zw = bytes(s.c_out.max(1), seed + 2);
    let signed = |v: &[u8]| v.iter().map(|&b| b as i8).collect::<Vec<i8>>();
    check::<u8, i8>(s, &x, &signed(&w), Some(131), &[]);
    check::<u8, i8>(s, &x, &signed(&w), None, &signed(&zw[..s.c_out]));
    check::<u8, u8>(s, &x, &w, Some(7), &zw[..1]);
    check::<i8, i8>(s, &signed(&x), &signed(&w), Some(-3), &signed(&zw[..s.c_out]));
    check::<i8, u8>(s, &signed(&x), &w, None, &[]);
}

#[test]
fn matches_the_reference_over_awkward_shapes() {
    let cases: &[([usize; 14], [usize; 2])] = &[
        // n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups
        ([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1], [0, 0]),
        ([1, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1], [1, 1]),
        // Odd patch (3*3*3 = 27), 64-wide tiles and a tail (plane 130).
        ([2, 3, 10, 13, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1], [1, 1]),
        // Strided, asymmetric padding, dilated.
        ([1, 4, 15, 17, 8, 3, 5, 2, 3, 2, 0, 2, 1, 1], [0, 3]),
        // 1x1 over 9 output rows (4-row tiles and single rows).
        ([1, 16, 8, 8, 9, 1, 1, 1, 1, 0, 0, 1, 1, 1], [0, 0]),
        // Grouped (2 channels per group), and depthwise with a multiplier.
        ([1, 6, 7, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3], [1, 1]),
        ([2, 5, 9, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5], [1, 0]),
        ([1, 4, 6, 9, 8, 5, 5, 1, 1, 2, 2, 1, 1, 4], [2, 2]),
        ([1, 3, 5, 5, 6, 3, 3, 1, 2, 0, 1, 2, 1, 3], [0, 1]),
        // Windows larger than the image (all padding in places).
        ([1, 2, 2, 3, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1], [2, 2]),
        // Many output channels over few pixels (row blocks split).
        ([1, 32, 3, 3, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1], [1, 1]),
        // Rows wide enough for the 16-column interleave: stride 2, and
        // stride 1 dilated with padding on both sides.
        ([1, 5, 9, 80, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1], [1, 1]),
        ([1, 3, 6, 50, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1], [2, 2]),
        ([1, 2, 5, 37, 3, 1, 5, 1, 2, 0, 0, 1, 1, 1], [0, 0]),
        // Empty: no output channels.
        ([1, 2, 4, 4, 0, 3, 3, 1, 1, 1, 1, 1, 1, 1], [1, 1]),
    ];
    for (i, &(d, trail)) in cases.iter().enumerate() {
        check_all_types(&shape(d, trail), 40 + 3 * i as u32);
    }
}

#[test]
fn a_wide_plane_splits_into_strips() {
    // 70x70 = 4900 pixels with a 300-long patch: several L2 strips.
    check_all_types(&shape([1, 12, 70, 70, 20, 5, 5, 1, 1, 2, 2, 1, 1, 1], [2, 2]), 7);
}
