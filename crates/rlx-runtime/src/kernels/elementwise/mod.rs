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
