//! AVX2 / F16C conversions between f32 and the 16-bit float formats,
//! bit-exact with `half` (round to nearest even; a NaN keeps its sign and
//! top payload bits and gets the quiet bit), and from f32 to 8-bit
//! integers as Rust's `as` does. 8 elements per step, the last `n % 8`
//! through the scalar conversion itself. Source and destination never
//! overlap (their element sizes differ).

use std::arch::x86_64::*;

use half::{bf16, f16};

/// `dst[i] = f16::from_f32(src[i])` with `vcvtps2ph` (nearest even).
///
/// # Safety
/// AVX2 and F16C available; `src` readable and `dst` writable for `n`
/// elements; no overlap.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn avx2_f32_to_f16(src: *const f32, dst: *mut f16, n: usize) {
    let mut i = 0;
    // SAFETY: the caller guarantees AVX2 and F16C (enabled for this function);
    // every access is at `i..i + 8 <= n` or `i < n`, inside the caller's
    // `n`-element extents; loads and stores are unaligned; no overlap.
    unsafe {
        while i + 8 <= n {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.add(i)));
            _mm_storeu_si128(dst.add(i).cast(), h);
            i += 8;
        }
        while i < n {
            *dst.add(i) = f16::from_f32(*src.add(i));
            i += 1;
        }
    }
}

/// `dst[i] = src[i].to_f32()` with `vcvtph2ps` (exact).
///
/// # Safety
/// As [`avx2_f32_to_f16`].
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn avx2_f16_to_f32(src: *const f16, dst: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: as in `avx2_f32_to_f16`: AVX2 and F16C guaranteed by the caller,
    // every access below `n`, unaligned loads and stores, no overlap.
    unsafe {
        while i + 8 <= n {
            let h = _mm_loadu_si128(src.add(i).cast());
            _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
            i += 8;
        }
        while i < n {
            *dst.add(i) = (*src.add(i)).to_f32();
            i += 1;
        }
    }
}

/// `dst[i] = bf16::from_f32(src[i])`: NaN keeps its top bits with the quiet
/// bit set; otherwise `(x + 0x7fff + ((x >> 16) & 1)) >> 16`, which is
/// round-to-nearest-even on the bit pattern (a carry into the exponent
/// correctly rounds up to the next binade or to infinity).
///
/// # Safety
/// AVX2 available; `src` readable and `dst` writable for `n` elements; no
/// overlap.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_f32_to_bf16(src: *const f32, dst: *mut bf16, n: usize) {
    let mut i = 0;
    // SAFETY: the caller guarantees AVX2 (enabled for this function); every
    // access is at `i..i + 8 <= n` or `i < n`, inside the caller's `n`-element
    // extents; loads and stores are unaligned; no overlap.
    unsafe {
        let abs_mask = _mm256_set1_epi32(0x7fff_ffff);
        let inf = _mm256_set1_epi32(0x7f80_0000);
        let quiet = _mm256_set1_epi32(0x0040);
        let one = _mm256_set1_epi32(1);
        let bias = _mm256_set1_epi32(0x7fff);
        while i + 8 <= n {
            let x = _mm256_loadu_si256(src.add(i).cast());
            // Both sides are non-negative as i32, so a signed compare works.
            let nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
            let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), one);
            let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(x, _mm256_add_epi32(bias, lsb)));
            let nan_bits = _mm256_or_si256(_mm256_srli_epi32::<16>(x), quiet);
            let r = _mm256_blendv_epi8(rounded, nan_bits, nan);
            // Every lane is in 0..=0xffff, so the saturating pack is exact.
            let packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r));
            _mm_storeu_si128(dst.add(i).cast(), packed);
            i += 8;
        }
        while i < n {
            *dst.add(i) = bf16::from_f32(*src.add(i));
            i += 1;
        }
    }
}

/// `dst[i] = src[i].to_f32()`: the bits shifted up by 16, NaN with the
/// quiet bit set (as `half`).
///
/// # Safety
/// As [`avx2_f32_to_bf16`].
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_bf16_to_f32(src: *const bf16, dst: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: as in `avx2_f32_to_bf16`: AVX2 guaranteed by the caller, every
    // access below `n`, unaligned loads and stores, no overlap.
    unsafe {
        let abs_mask = _mm256_set1_epi32(0x7fff_ffff);
        let inf = _mm256_set1_epi32(0x7f80_0000);
        let quiet = _mm256_set1_epi32(0x0040_0000);
        while i + 8 <= n {
            let h = _mm_loadu_si128(src.add(i).cast());
            let x = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h));
            let nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
            let r = _mm256_or_si256(x, _mm256_and_si256(nan, quiet));
            _mm256_storeu_si256(dst.add(i).cast(), r);
            i += 8;
        }
        while i < n {
            *dst.add(i) = (*src.add(i)).to_f32();
            i += 1;
        }
    }
}

/// `dst[i] = src[i] as u8` (`SIGNED` false) or `as i8` (`SIGNED` true):
/// NaN to 0 (masked to +0 first), then clamped to the type's range and
/// truncated toward zero (`vcvttps2dq`, exact in range), packed to bytes
/// with saturating packs that never saturate.
///
/// # Safety
/// AVX2 available; `src` readable and `dst` writable for `n` elements; no
/// overlap.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_f32_to_8bit<const SIGNED: bool>(src: *const f32, dst: *mut u8, n: usize) {
    let (lo, hi) = if SIGNED { (-128.0, 127.0) } else { (0.0, 255.0) };
    let mut i = 0;
    // SAFETY: the caller guarantees AVX2 (enabled for this function); every
    // access is at `i..i + 8 <= n` or `i < n`, inside the caller's
    // `n`-element extents; loads and stores are unaligned; no overlap.
    unsafe {
        let (vlo, vhi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
        while i + 8 <= n {
            let x = _mm256_loadu_ps(src.add(i));
            let x = _mm256_and_ps(x, _mm256_cmp_ps::<_CMP_ORD_Q>(x, x));
            let ints = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(x, vlo), vhi));
            let words = _mm_packs_epi32(_mm256_castsi256_si128(ints), _mm256_extracti128_si256::<1>(ints));
            let bytes = if SIGNED { _mm_packs_epi16(words, words) } else { _mm_packus_epi16(words, words) };
            _mm_storel_epi64(dst.add(i).cast(), bytes);
            i += 8;
        }
        while i < n {
            let x = *src.add(i);
            *dst.add(i) = if SIGNED { x as i8 as u8 } else { x as u8 };
            i += 1;
        }
    }
}

/// [`avx2_f32_to_8bit`] to i8.
///
/// # Safety
/// As [`avx2_f32_to_8bit`].
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_f32_to_i8(src: *const f32, dst: *mut i8, n: usize) {
    // SAFETY: forwarded contract; AVX2 is enabled here.
    unsafe { avx2_f32_to_8bit::<true>(src, dst.cast(), n) }
}
