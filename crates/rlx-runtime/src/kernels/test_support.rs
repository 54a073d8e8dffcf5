//! What every family's tests share: the awkward lengths and the check of
//! every variant against a reference.

/// Lengths that hit every tail of every vector width the kernels use
/// (4, 8 and 16 lanes): empty, one, `W - 1`, `W`, `W + 1` around 8 and
/// 16, `2W - 1` and `2W + 1` around 16, and two long ones with tails
/// (`1023 = 64 * 16 - 1`, `4097 = 256 * 16 + 1`) that also cross the
/// parallel split.
pub(crate) const LENGTHS: [usize; 12] = [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1023, 4097];

/// Equal bits, or both NaN (the NaN payload chosen when an operation sees
/// two NaNs is not part of any contract).
pub(crate) fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Equal bits, NaN payloads included: for kernels whose every variant
/// takes the same operations on the same lanes.
pub(crate) fn identical(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits()
}

/// Checks every `(name, variant)` against `reference`: `run(variant)`
/// must give `reference`'s length and `within(got, want)` for each value
/// ([`same`] for bit identity of f32, `==` for integers). `what` names
/// the case in a failure.
pub(crate) fn check_variants<T: Copy + std::fmt::Debug, K: Copy>(
    reference: &[T],
    variants: &[(&'static str, K)],
    within: impl Fn(T, T) -> bool,
    what: &str,
    run: impl Fn(K) -> Vec<T>,
) {
    for &(name, variant) in variants {
        let got = run(variant);
        assert_eq!(got.len(), reference.len(), "{name}: {what}: length");
        for (i, (&g, &w)) in got.iter().zip(reference).enumerate() {
            assert!(within(g, w), "{name}: {what}: at {i} got {g:?} want {w:?}");
        }
    }
}

/// Inputs that pin a vector function's bits: every 4099th f32 bit pattern
/// (both signs, every exponent, infinities and NaNs) and a dense ramp over
/// `[-100, 100)`, padded with zeros to a multiple of 16.
pub(crate) fn pinning_inputs() -> Vec<f32> {
    let mut v: Vec<f32> = (0..=u32::MAX / 4099).map(|i| f32::from_bits(i.wrapping_mul(4099))).collect();
    v.extend((0..200_000).map(|i| -100.0 + 200.0 * i as f32 / 200_000.0));
    v.resize(v.len().next_multiple_of(16), 0.0);
    v
}

/// FNV-1a over the bits of `out`, every NaN counted as one (payloads are
/// not part of any contract): a checksum that pins a function's results.
pub(crate) fn bits_checksum(out: &[f32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in out {
        let b = if x.is_nan() { 0x7fc0_0000u32 } else { x.to_bits() };
        for byte in b.to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
