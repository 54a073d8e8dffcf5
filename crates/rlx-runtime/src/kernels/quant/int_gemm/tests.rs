//! `int_gemm` (serial and split) against `int_gemm_reference`, and each
//! vector tile body against the portable one, bit for bit.

use super::*;
use crate::kernels::quant::int_gemm_scratch_bytes;
use crate::kernels::quant::shared::bytes;
use crate::kernels::test_support::check_variants;

/// Runs the kernel (serial and split) and the reference on one case and
/// asserts all three agree bit for bit.
#[allow(clippy::too_many_arguments)]
fn check<A: IntElem, B: IntElem>(
    a: &[A],
    b: &[B],
    za: Option<A>,
    zb: &[B],
    [batch, m, k, n]: [usize; 4],
    b_bcast: bool,
) {
    let za_ptr = za.as_ref().map_or(std::ptr::null(), |z| z as *const A);
    let zb_ptr = if zb.is_empty() { std::ptr::null() } else { zb.as_ptr() };
    let mut want = vec![0i32; batch * m * n];
    let mut got = vec![7i32; batch * m * n];
    let mut split = vec![-7i32; batch * m * n];
    let mut scratch = scratch_for(batch, m, k, n);
    // SAFETY: the slices hold exactly the extents the shapes name.
    unsafe {
        int_gemm_reference(
            a.as_ptr(),
            b.as_ptr(),
            za_ptr,
            zb_ptr,
            want.as_mut_ptr(),
            batch,
            m,
            k,
            n,
            zb.len(),
            b_bcast,
        );
        let s: *mut u8 = scratch.as_mut_ptr().cast();
        int_gemm(s, a.as_ptr(), b.as_ptr(), za_ptr, zb_ptr, got.as_mut_ptr(), batch, m, k, n, zb.len(), b_bcast, false);
        int_gemm(
            s,
            a.as_ptr(),
            b.as_ptr(),
            za_ptr,
            zb_ptr,
            split.as_mut_ptr(),
            batch,
            m,
            k,
            n,
            zb.len(),
            b_bcast,
            true,
        );
    }
    assert_eq!(got, want, "serial, shape {:?} b_bcast {b_bcast}", [batch, m, k, n]);
    assert_eq!(split, want, "split, shape {:?}", [batch, m, k, n]);
}

/// 64-byte aligned scratch of the size the planner gives the call.
fn scratch_for(batch: usize, m: usize, k: usize, n: usize) -> Vec<[u64; 8]> {
    vec![[0u64; 8]; int_gemm_scratch_bytes(batch, m, k, n).div_ceil(64)]
}

fn signed(v: Vec<u8>) -> Vec<i8> {
    v.into_iter().map(|x| x as i8).collect()
}

#[test]
fn matches_the_reference_over_awkward_shapes_and_types() {
    for (i, &[batch, m, k, n]) in [
        [1, 1, 1, 1],
        [1, 3, 5, 17],
        [2, 4, 33, 9],
        [1, 1, 64, 1],
        [3, 2, 7, 31],
        [1, 5, 0, 3],
        [1, 0, 4, 4],
        [1, 9, 40, 48],
        [2, 5, 1, 32],
        [1, 6, 9, 83],
        [2, 4, 130, 64],
    ]
    .iter()
    .enumerate()
    {
        let seed = i as u32 * 10;
        for b_bcast in [true, false] {
            let b_len = if b_bcast { k * n } else { batch * k * n };
            let (a8, b8) = (bytes(batch * m * k, seed), bytes(b_len, seed + 1));
            let zb_col = bytes(n, seed + 2);
            // u8 x u8 with per-tensor and per-column zero points.
            check(&a8, &b8, Some(131u8), &[7u8], [batch, m, k, n], b_bcast);
            check(&a8, &b8, Some(0u8), &zb_col, [batch, m, k, n], b_bcast);
            // u8 x i8 (onnxruntime's usual pairing), i8 x u8, i8 x i8.
            check(&a8, &signed(b8.clone()), Some(128u8), &[], [batch, m, k, n], b_bcast);
            check(&signed(a8.clone()), &b8, None, &[255u8], [batch, m, k, n], b_bcast);
            check(
                &signed(a8.clone()),
                &signed(b8.clone()),
                Some(-128i8),
                &signed(zb_col.clone()),
                [batch, m, k, n],
                b_bcast,
            );
        }
    }
}

#[test]
fn sums_past_i32_wrap_as_i32_accumulation_does() {
    // 255 * 255 * 40_000 = 2.6e9 > i32::MAX.
    let k = 40_000;
    let a = vec![255u8; k];
    // 17 columns: one AVX2 tile and the scalar tail.
    let n = 17;
    let b = vec![255u8; k * n];
    let mut c = vec![0i32; n];
    let mut scratch = scratch_for(1, 1, k, n);
    let null = std::ptr::null::<u8>();
    // SAFETY: one row of `k`, `n` columns; scratch as the planner sizes it.
    unsafe {
        let s: *mut u8 = scratch.as_mut_ptr().cast();
        int_gemm(s, a.as_ptr(), b.as_ptr(), null, null, c.as_mut_ptr(), 1, 1, k, n, 0, true, false)
    };
    assert_eq!(c, vec![(255i64 * 255 * k as i64) as i32; n]);
}

/// Every body this CPU runs against the portable column loop, over the
/// same packed operands (the dispatch above reaches only the widest).
#[test]
fn every_vector_body_matches_the_portable_one() {
    let (rows, kp, n) = (7, 21, 83);
    let a_pairs: Vec<i32> = bytes(rows * kp * 4, 5)
        .chunks_exact(4)
        .map(|c| {
            // Pairs of values within ±255, as packing makes them.
            let lo = i32::from(c[0]) - i32::from(c[1]);
            let hi = i32::from(c[2]) - i32::from(c[3]);
            (lo as u16 as u32 | ((hi as u16 as u32) << 16)) as i32
        })
        .collect();
    let packed_b: Vec<i16> = bytes(kp * n * 2, 6).iter().map(|&b| i16::from(b) - 128).collect();
    let mut want = vec![0i32; rows * n];
    // SAFETY: the vectors hold `rows * kp` pairs, `kp * n * 2` halves, `rows * n` outputs.
    unsafe { columns_product(a_pairs.as_ptr(), packed_b.as_ptr(), want.as_mut_ptr(), rows, kp, n, 0..n) };
    check_variants(
        &want,
        &ROWS_PRODUCT.supported(),
        |g, w| g == w,
        "rows product",
        |body| {
            let mut got = vec![1i32; rows * n];
            // SAFETY: as above; the body runs on this CPU.
            unsafe { body(a_pairs.as_ptr(), packed_b.as_ptr(), got.as_mut_ptr(), rows, kp, n, n) };
            got
        },
    );
}
