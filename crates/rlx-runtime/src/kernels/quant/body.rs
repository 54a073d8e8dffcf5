//! Which tile body the 8-bit kernels on the importer's packed layouts
//! (`IntGemmPacked`, `QLinearConv2D`) run: one order of preference for
//! both, chosen once per call from what the CPU reports (each probe is
//! cached).

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

impl Body {
    /// The best body this CPU runs.
    pub(super) fn detect() -> Body {
        #[cfg(target_arch = "x86_64")]
        {
            if super::x86::has_avx512_vnni() {
                return Body::Vnni;
            }
            if super::qgemm_x86::has_avx_vnni() {
                return Body::AvxVnni;
            }
            if crate::kernels::elementwise::par::has_avx2_fma() {
                return Body::Avx2;
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if super::qgemm_neon::has_dotprod() {
                return Body::Dot;
            }
            if std::arch::is_aarch64_feature_detected!("neon") {
                return Body::Neon;
            }
        }
        Body::Portable
    }

    /// Every body this CPU runs, the portable one first (the tests run
    /// them all).
    #[cfg(test)]
    pub(super) fn available() -> Vec<Body> {
        let mut bodies = vec![Body::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if crate::kernels::elementwise::par::has_avx2_fma() {
                bodies.push(Body::Avx2);
            }
            if super::qgemm_x86::has_avx_vnni() {
                bodies.push(Body::AvxVnni);
            }
            if super::x86::has_avx512_vnni() {
                bodies.push(Body::Vnni);
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if std::arch::is_aarch64_feature_detected!("neon") {
                bodies.push(Body::Neon);
            }
            if super::qgemm_neon::has_dotprod() {
                bodies.push(Body::Dot);
            }
        }
        bodies
    }
}

/// How many bodies this CPU runs (the `body` index of the kernels'
/// test-only entries).
#[cfg(test)]
pub(super) fn body_count() -> usize {
    Body::available().len()
}
