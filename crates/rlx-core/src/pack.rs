//! The prepacked weight layout of `PackedGemm`.
//!
//! A GEMM microkernel reads `B` one strip of [`PANEL`] columns at a time,
//! all `k` rows of it, as one contiguous run. Packing `B` into that order
//! is work a BLAS library does on every call; a weight is a constant, so
//! the importer does it once and writes the packed bytes to the weights
//! file, and `run()` never packs.
//!
//! Layout of a `k x n` matrix: `ceil(n / PANEL)` panels one after another;
//! panel `p` holds rows `0..k` of columns `p*PANEL .. p*PANEL + PANEL`, row
//! after row (`PANEL` values each). Columns past `n` in the last panel are
//! zero, so a kernel may read whole panels. The layout does not depend on
//! the CPU: every instruction set's kernel reads the same bytes.

/// Columns per panel: two AVX2 vectors, one AVX-512 vector, four NEON ones.
pub const PANEL: usize = 16;

/// Elements of the packed form of a `k x n` matrix (`None` on overflow).
pub fn packed_len(k: usize, n: usize) -> Option<usize> {
    n.div_ceil(PANEL).checked_mul(PANEL)?.checked_mul(k)
}

/// Packs `b`, stored row-major as `[k, n]`, or as `[n, k]` when
/// `transposed` (a `Gemm` with `transB`, a PyTorch `Linear` weight).
///
/// # Panics
///
/// When `b.len() != k * n`.
pub fn pack_b<T: Copy + Default>(b: &[T], k: usize, n: usize, transposed: bool) -> Vec<T> {
    assert_eq!(b.len(), k * n, "pack_b: {} elements for a {k} x {n} matrix", b.len());
    let len = packed_len(k, n).expect("a matrix that exists has a packed size");
    let mut out = vec![T::default(); len];
    for (p, panel) in out.chunks_exact_mut(PANEL * k.max(1)).enumerate().take(n.div_ceil(PANEL)) {
        for (row, dst) in panel.chunks_exact_mut(PANEL).enumerate() {
            for (c, slot) in dst.iter_mut().enumerate() {
                let col = p * PANEL + c;
                if col < n {
                    *slot = if transposed { b[col * k + row] } else { b[row * n + col] };
                }
            }
        }
    }
    out
}

/// The inverse of [`pack_b`] (row-major `[k, n]`), for tests and tools.
pub fn unpack_b<T: Copy + Default>(packed: &[T], k: usize, n: usize) -> Vec<T> {
    let mut out = vec![T::default(); k * n];
    for row in 0..k {
        for col in 0..n {
            out[row * n + col] = packed[(col / PANEL) * PANEL * k + row * PANEL + col % PANEL];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_is_panel_major_and_zero_padded() {
        // k = 2, n = 3: one panel, rows of 16 with 13 zeros each.
        let b = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let p = pack_b(&b, 2, 3, false);
        assert_eq!(p.len(), 32);
        assert_eq!(&p[..3], &[1.0, 2.0, 3.0]);
        assert!(p[3..16].iter().all(|&x| x == 0.0));
        assert_eq!(&p[16..19], &[4.0, 5.0, 6.0]);
        // The transposed storage of the same matrix packs the same.
        let bt = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0];
        assert_eq!(pack_b(&bt, 2, 3, true), p);
    }

    #[test]
    fn unpack_inverts_pack_over_awkward_shapes() {
        for (k, n) in [(1, 1), (3, 16), (5, 17), (7, 33), (0, 5), (4, 0)] {
            let b: Vec<f32> = (0..k * n).map(|i| i as f32 + 0.5).collect();
            let p = pack_b(&b, k, n, false);
            assert_eq!(Some(p.len()), packed_len(k, n));
            assert_eq!(unpack_b(&p, k, n), b, "k={k} n={n}");
        }
        assert_eq!(packed_len(usize::MAX, 2), None);
    }
}
