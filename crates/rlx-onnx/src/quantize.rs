//! ggml's reference Q8_0 quantizer (`quantize_row_q8_0_ref`), which fills
//! the 8-bit weight layout of `rlx_sched::q8` for `import-llama --weights
//! q8_0` (and for a Q8_0 GGUF, whose blocks it reproduces bit for bit from
//! the values they dequantize to).

use half::f16;
use rlx_sched::q8::{pack_q8_blocks, BLOCK};

/// One block: `d = max|x| / 127` rounded to f16, `q = round(x / d)` (half
/// away from zero) computed with the unrounded `d`, as ggml does. Returns
/// the scale as stored (the f16 value, widened exactly) and the values.
pub fn quantize_block(x: &[f32; BLOCK]) -> (f32, [i8; BLOCK]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    // In range by construction: |v * id| <= 127 up to one rounding, and
    // `as` saturates.
    let q = std::array::from_fn(|i| (x[i] * id).round() as i8);
    (f16::from_f32(d).to_f32(), q)
}

/// Quantizes `b` (row-major `[k, n]`, or `[n, k]` when `transposed`)
/// block by block into the Q8 form.
///
/// # Panics
///
/// When `k` is not a multiple of [`BLOCK`], the size overflows (callers
/// check `rlx_sched::q8::q8_len` first), or `b.len() != k * n`.
pub fn quantize_q8(b: &[f32], k: usize, n: usize, transposed: bool) -> Vec<u8> {
    assert_eq!(b.len(), k * n, "quantize_q8: {} values for a {k} x {n} matrix", b.len());
    pack_q8_blocks(k, n, |j, blk| {
        let x: [f32; BLOCK] = std::array::from_fn(|i| {
            let p = blk * BLOCK + i;
            if transposed {
                b[j * k + p]
            } else {
                b[p * n + j]
            }
        });
        quantize_block(&x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_sched::q8::{dequantize_q8, q8_len};

    #[test]
    fn quantization_keeps_the_extreme_value_at_127() {
        let x: [f32; BLOCK] = std::array::from_fn(|i| 1.0 - i as f32 * 0.05);
        let (d, q) = quantize_block(&x);
        assert_eq!(q[0], 127);
        assert_eq!(d, f16::from_f32(1.0 / 127.0).to_f32());
        let (d, q) = quantize_block(&[0.0; BLOCK]);
        assert_eq!((d, q), (0.0, [0; BLOCK]));
    }

    #[test]
    fn quantized_values_are_within_half_a_step_and_the_scale_rounding() {
        for (k, n) in [(32, 1), (64, 17), (96, 33), (0, 5)] {
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0).collect();
            let packed = quantize_q8(&b, k, n, false);
            assert_eq!(Some(packed.len()), q8_len(k, n));
            let back = dequantize_q8(&packed, k, n);
            for (x, y) in b.iter().zip(&back) {
                // Half a step of a block scale of at most 50/8/127, plus
                // the f16 rounding of the scale (relative 2^-11) times
                // |q| <= 127.
                let d = 6.25 / 127.0;
                assert!((x - y).abs() <= d * (0.5 + 127.0 / 2048.0), "{x} {y}");
            }
            // The transposed storage of the same matrix packs the same.
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            assert_eq!(quantize_q8(&bt, k, n, true), packed);
        }
    }
}
