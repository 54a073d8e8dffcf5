//! `IntGemmPacked` against its reference: every body this CPU runs and the
//! entry (the detected body), serial and split, every tile shape's tails.

use rlx_core::qconv::{pack_qgemm_weight, qgemm_column_sums};

use super::{int_gemm_packed_body, Store};
use crate::kernels::quant::shared::{bytes, Body, BODIES};
use crate::kernels::quant::*;
use crate::kernels::test_support::{check_variants, identical};

/// The zero points of one case.
#[derive(Clone, Copy, Debug)]
enum Zeros {
    None,
    PerTensor,
    PerColumn,
}

/// Runs every body and split of one case and compares the i32 sums and
/// the dequantized f32 (per-tensor and per-column scale, with and without
/// bias) with the reference, bit for bit.
fn check<A: IntElem>(a_bytes: &[u8], [m, k, n]: [usize; 3], zeros: Zeros, seed: u32) {
    let a: Vec<A> =
        a_bytes.iter().map(|&v| A::from_i32(if A::SIGNED { i32::from(v as i8) } else { i32::from(v) })).collect();
    let w: Vec<i8> = bytes(k * n, seed + 1).into_iter().map(|v| v as i8).collect();
    let packed = pack_qgemm_weight(&w, k, n);
    let sums = qgemm_column_sums(&w, k, n);
    let za = A::from_i32(if A::SIGNED { -3 } else { 131 });
    let (za_ptr, w_zero): (*const A, Vec<i32>) = match zeros {
        Zeros::None => (std::ptr::null(), Vec::new()),
        Zeros::PerTensor => (&za, vec![-7]),
        Zeros::PerColumn => (&za, (0..n).map(|j| (j as i32 * 29) % 255 - 127).collect()),
    };
    let zw_ptr = if w_zero.is_empty() { std::ptr::null() } else { w_zero.as_ptr() };
    let zw_len = w_zero.len().max(1);
    let mut want = vec![0i32; m * n];
    let mut scratch = vec![0u64; rlx_core::plan::int_gemm_packed_scratch_bytes(m, k, true).div_ceil(8)];
    let s: *mut u8 = scratch.as_mut_ptr().cast();
    // SAFETY: the vectors hold exactly the extents the shapes name.
    unsafe {
        int_gemm_packed_reference(a.as_ptr(), packed.as_ptr(), za_ptr, zw_ptr, want.as_mut_ptr(), m, k, n, zw_len);
    }
    let what = format!("m {m}, k {k}, n {n}, {zeros:?}, signed a {}", A::SIGNED);
    // Every body this CPU runs, then the entry (the best one).
    let runs: Vec<(&'static str, Option<Body>)> =
        BODIES.supported().into_iter().map(|(name, b)| (name, Some(b))).chain([("the entry", None)]).collect();
    for par in [false, true] {
        check_variants(
            &want,
            &runs,
            |g, w| g == w,
            &format!("sums, {what}, par {par}"),
            |body| {
                let mut got = vec![0x5A5A_5A5Ai32; m * n];
                // SAFETY: as above; the body runs on this CPU.
                unsafe {
                    let (a, w, ws) = (a.as_ptr(), packed.as_ptr(), sums.as_ptr());
                    match body {
                        Some(body) => {
                            let store = Store::Sums(got.as_mut_ptr());
                            int_gemm_packed_body(body, s, a, w, ws, za_ptr, zw_ptr, zw_len, store, [m, k, n], par);
                        }
                        None => int_gemm_packed(s, a, w, ws, za_ptr, zw_ptr, got.as_mut_ptr(), m, k, n, zw_len, par),
                    }
                }
                got
            },
        );
    }
    let scales: Vec<f32> = (0..n).map(|j| 1.0 / (3.0 + j as f32)).collect();
    let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.37 - 2.0).collect();
    for (scale_len, with_bias) in [(1, false), (1, true), (n, true), (n, false)] {
        let expected: Vec<f32> = (0..m * n)
            .map(|i| {
                let j = i % n;
                let v = want[i] as f32 * scales[if scale_len == 1 { 0 } else { j }];
                if with_bias {
                    bias[j] + v
                } else {
                    v
                }
            })
            .collect();
        let bias_ptr = if with_bias { bias.as_ptr() } else { std::ptr::null() };
        let context = format!("f32, {what}, scale_len {scale_len}, bias {with_bias}");
        check_variants(&expected, &runs, identical, &context, |body| {
            let mut got = vec![f32::NAN; m * n];
            // SAFETY: as above; the body runs on this CPU.
            unsafe {
                let (a, w, ws) = (a.as_ptr(), packed.as_ptr(), sums.as_ptr());
                match body {
                    Some(body) => {
                        let store = Store::Dequant {
                            c: got.as_mut_ptr(),
                            scale: scales.as_ptr(),
                            scale_per_column: scale_len != 1,
                            bias: bias_ptr,
                        };
                        int_gemm_packed_body(body, s, a, w, ws, za_ptr, zw_ptr, zw_len, store, [m, k, n], true);
                    }
                    None => {
                        let c = got.as_mut_ptr();
                        let sc = scales.as_ptr();
                        int_gemm_packed_f32(
                            s, a, w, ws, za_ptr, zw_ptr, sc, bias_ptr, c, m, k, n, zw_len, scale_len, true,
                        );
                    }
                }
            }
            got
        });
    }
}

#[test]
fn packed_products_match_the_reference_over_every_tail() {
    let mut seed = 0;
    // Rows: one, tile tails (2, 4 and 1 after 8), several bands; k: empty,
    // partial quads, whole ones; n: one lane, block tails, 1-3 blocks.
    for m in [1, 3, 7, 8, 13, 17] {
        for k in [0, 1, 3, 4, 5, 38] {
            for n in [1, 15, 16, 17, 33, 48, 50, 100] {
                seed += 1;
                let zeros = [Zeros::None, Zeros::PerTensor, Zeros::PerColumn][seed as usize % 3];
                let a = bytes(m * k, seed);
                check::<u8>(&a, [m, k, n], zeros, seed);
                check::<i8>(&a, [m, k, n], zeros, seed);
            }
        }
    }
}

#[test]
fn extreme_values_wrap_exactly() {
    // Every a 255 (or -128) against every weight -128 over a long k: the
    // sums reach 2^24 and beyond, where f32 rounds (the dequantized store
    // rounds as the composed cast does).
    let (m, k, n) = (9, 1030, 35);
    for zeros in [Zeros::None, Zeros::PerTensor, Zeros::PerColumn] {
        check::<u8>(&vec![255; m * k], [m, k, n], zeros, 90);
        check::<i8>(&vec![0x80; m * k], [m, k, n], zeros, 91);
    }
}

#[test]
fn an_empty_product_writes_nothing_and_reads_nothing() {
    let mut c = [5i32; 4];
    // SAFETY: m = 0: no element is read or written.
    unsafe {
        let null = std::ptr::null();
        int_gemm_packed::<u8>(
            std::ptr::null_mut(),
            null,
            std::ptr::null(),
            std::ptr::null(),
            null,
            std::ptr::null(),
            c.as_mut_ptr(),
            0,
            3,
            4,
            1,
            true,
        );
    }
    assert_eq!(c, [5; 4]);
}

/// Best of 20 single-thread calls per body on MiniLM's FFN product (m 128,
/// k 384, n 1536, u8 `a`, a weight zero point; `cargo test --release -p
/// rlx-runtime int_gemm_packed_timing -- --ignored --nocapture`); prints
/// only.
#[test]
#[ignore = "timing; run by hand"]
fn int_gemm_packed_timing() {
    let (m, k, n) = (128, 384, 1536);
    let a = bytes(m * k, 3);
    let w: Vec<i8> = bytes(k * n, 4).into_iter().map(|v| v as i8).collect();
    let (packed, sums) = (pack_qgemm_weight(&w, k, n), qgemm_column_sums(&w, k, n));
    let (za, zw) = (128u8, [3i32]);
    let mut scratch = vec![0u64; rlx_core::plan::int_gemm_packed_scratch_bytes(m, k, true).div_ceil(8)];
    let mut c = vec![0i32; m * n];
    for (name, body) in BODIES.supported() {
        let mut best = f64::MAX;
        for _ in 0..20 {
            let t = std::time::Instant::now();
            // SAFETY: buffers sized for the shape.
            unsafe {
                let (a, w, s) = (a.as_ptr(), packed.as_ptr(), scratch.as_mut_ptr().cast());
                let store = Store::Sums(c.as_mut_ptr());
                int_gemm_packed_body(body, s, a, w, sums.as_ptr(), &za, zw.as_ptr(), 1, store, [m, k, n], false);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{name}: {:8.3} ms", best * 1e3);
    }
}
