//! What several quant kernels share: which tile body the 8-bit kernels on
//! the importer's packed layouts (`IntGemmPacked`, `QLinearConv2D`) run,
//! one order of preference for both, chosen once per process from what
//! the CPU reports; and, for their tests, deterministic 8-bit data.

use crate::kernels::variants::variants;

/// A tile body, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Body {
    /// AVX-512 VNNI: `vpdpbusd` on zmm.
    #[cfg(target_arch = "x86_64")]
    Vnni,
    /// AVX-VNNI: `vpdpbusd` on ymm, without AVX-512.
    #[cfg(target_arch = "x86_64")]
    AvxVnni,
    /// AVX2: `vpmaddwd` on widened operands.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// NEON with the dot-product extension (`sdot`).
    #[cfg(target_arch = "aarch64")]
    Dot,
    /// Plain NEON (`smull`, `sadalp`).
    #[cfg(target_arch = "aarch64")]
    Neon,
    /// Scalar Rust.
    Portable,
}

variants! {
    /// The bodies, best first.
    pub(super) static BODIES: Body = [
        #[cfg(target_arch = "x86_64")]
        "vnni" if cpu::avx512_vnni() => Body::Vnni,
        #[cfg(target_arch = "x86_64")]
        "avx_vnni" if cpu::avx_vnni() => Body::AvxVnni,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Body::Avx2,
        #[cfg(target_arch = "aarch64")]
        "dot" if cpu::dotprod() => Body::Dot,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => Body::Neon,
        "portable" => Body::Portable,
    ];
}

impl Body {
    /// The best body this CPU runs, chosen once.
    #[inline]
    pub(super) fn detect() -> Body {
        *BODIES.best()
    }
}

/// Deterministic bytes covering the whole 8-bit range.
#[cfg(test)]
pub(super) fn bytes(len: usize, seed: u32) -> Vec<u8> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 11) as u8
        })
        .collect()
}
