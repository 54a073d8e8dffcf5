use rlx_core::q8::{pack_q8_blocks, BLOCK, BLOCK_BYTES};
use rlx_core::ActKind;

use super::*;
use crate::kernels::test_support::{check_variants, identical};

fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
    }
}

/// A `k x n` matrix in the Q8 layout, of random blocks: scales within
/// 1/64, every `i8` value.
fn random_q8(next: &mut impl FnMut() -> f32, k: usize, n: usize) -> Vec<u8> {
    let per_column = k / BLOCK;
    let blocks: Vec<(f32, [i8; BLOCK])> =
        (0..n * per_column).map(|_| (next() / 64.0, std::array::from_fn(|_| (next() * 128.0) as i8))).collect();
    pack_q8_blocks(k, n, |j, b| blocks[j * per_column + b])
}

/// The order of `mod.rs`, written out over the packed bytes: per element
/// its bias, then per block `fma(s, d, acc)` with `s` the ordered FMA
/// chain of the block from 0.
fn reference(a: &[f32], w: &[u8], bias: Option<&[f32]>, (m, k, n): (usize, usize, usize)) -> Vec<f32> {
    let blocks = k / BLOCK;
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let (p, col) = (j / PANEL, j % PANEL);
            let mut acc = bias.map_or(0.0, |b| b[j]);
            for blk in 0..blocks {
                let at = (p * blocks + blk) * BLOCK_BYTES;
                let d = f32::from_le_bytes(w[at + col * 4..at + col * 4 + 4].try_into().unwrap());
                let mut s = 0.0f32;
                for r in 0..BLOCK {
                    let q = w[at + PANEL * 4 + r * PANEL + col] as i8 as f32;
                    s = a[i * k + blk * BLOCK + r].mul_add(q, s);
                }
                acc = s.mul_add(d, acc);
            }
            out[i * n + j] = acc;
        }
    }
    out
}

/// Every variant this CPU runs gives the reference's bits: rows 1, 2,
/// 16, 17 (a task's chunk and one past), `k` one block, several, and
/// across a pass, `n` 1, a panel tail and a group tail, bias or none,
/// serial and split.
#[test]
fn variants_are_the_reference_order_bit_for_bit() {
    let mut next = lcg(11);
    let shapes = [
        (1, 32, 1, true),
        (1, 32, 20, false),
        (2, 96, 33, true),
        (16, 64, 17, true),
        (17, 320, 100, true),
        (1, 512, 64, false),
        (3, 288, 130, true),
        (1, 0, 5, true),
    ];
    for (m, k, n, with_bias) in shapes {
        let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
        let w = random_q8(&mut next, k, n);
        let bias: Vec<f32> = (0..n).map(|_| next()).collect();
        let bias = with_bias.then_some(bias.as_slice());
        let want = reference(&a, &w, bias, (m, k, n));
        for par in [false, true] {
            let what = format!("m={m} k={k} n={n} bias={with_bias} par={par}");
            check_variants(&want, &KERNELS.supported(), identical, &what, |v| {
                let mut got = vec![f32::NAN; m * n];
                // SAFETY: the buffers hold the product's extents; `k` is
                // a multiple of 32; the variant runs on this CPU.
                unsafe {
                    run(
                        v,
                        a.as_ptr(),
                        w.as_ptr(),
                        bias.map(|b| b.as_ptr()),
                        got.as_mut_ptr(),
                        (m, k, n),
                        ActKind::Identity,
                        par,
                    )
                };
                got
            });
        }
    }
}

/// The entry applies the activation after the sum, and through the
/// temporary gives the same bits.
#[test]
fn entry_applies_the_activation_and_via_matches() {
    let mut next = lcg(5);
    let (m, k, n) = (3, 64, 40);
    let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
    let w = random_q8(&mut next, k, n);
    let plain = reference(&a, &w, None, (m, k, n));
    let mut got = vec![0.0f32; m * n];
    let mut via = vec![0.0f32; m * n];
    let mut scratch = vec![0.0f32; m * n];
    // SAFETY: the buffers hold the product's extents.
    unsafe {
        packed_gemm_q8(a.as_ptr(), w.as_ptr(), None, got.as_mut_ptr(), m, k, n, ActKind::Relu, false);
        packed_gemm_q8_via(
            scratch.as_mut_ptr(),
            a.as_ptr(),
            w.as_ptr(),
            None,
            via.as_mut_ptr(),
            m,
            k,
            n,
            ActKind::Relu,
            true,
        );
    }
    for (i, &x) in plain.iter().enumerate() {
        assert_eq!(got[i].to_bits(), x.max(0.0).to_bits(), "at {i}");
    }
    assert_eq!(got, via);
}
