//! Elementwise kernels: `BinaryFull`, `Compare`, `Where`, `Fma` and the
//! interpreter's `ElementwiseRegion` loop.
//!
//! Binary and comparison kernels are generic over an operator marker type
//! (`ops::Add`, `ops::Lt`, ...) and come as one entry per indexing path
//! (`rlx_core::plan::BinaryPath`), so generated code names both the
//! operator and the path at gen time. All paths are built from the same
//! inner loops, whose AVX2/NEON forms are bit-exact with `crate::math`.

mod binary;
mod compare;
mod fma;
pub mod ops;
pub(crate) mod par;
mod paths;
mod region;
mod scalar;
mod select;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "aarch64")]
mod neon;

#[cfg(test)]
mod tests;

pub use binary::*;
pub use compare::*;
pub use fma::{fma_f32, fma_f64};
pub use region::region_f32;
pub use select::{select, Cond};

use crate::kernels::variants::variants;

/// The instruction set the f32 (and f64 `Fma`) inner loops run on; an
/// operator without a bit-exact vector form runs the scalar loop on every
/// body.
// aarch64's entries run NEON without a lookup: there the list serves the
// tests.
#[cfg_attr(target_arch = "aarch64", allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "aarch64")]
    Neon,
    Scalar,
}

variants! {
    /// The inner loops' bodies, best first.
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    pub(crate) static BODIES: Body = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Body::Avx2,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => Body::Neon,
        "scalar" => Body::Scalar,
    ];
}

/// The body the entries run, looked up only when an operator has a
/// vector form (the callers pass this function, not its value): the best
/// of [`BODIES`], NEON on aarch64 without a lookup (every aarch64 CPU has
/// it).
#[inline(always)]
fn entry_body() -> Body {
    #[cfg(target_arch = "aarch64")]
    {
        Body::Neon
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        *BODIES.best()
    }
}
