//! The kernel library every generated model links, and the reference
//! interpreter (`interp`, behind the `interp` feature).
//!
//! Kernels live in `kernels/<family>/`, each with a scalar reference and
//! SIMD variants selected once per process. Thunk-level entry points take
//! raw pointers into the arena or the weights, because in-place kernels
//! must not hold a `&mut` and a `&` to the same bytes.

pub mod arena;
pub mod blas;
pub mod kernels;
pub mod math;
pub mod model;
pub mod profile;
pub mod npy;
pub mod threads;
pub mod weights;

#[cfg(feature = "interp")]
pub mod interp;

#[cfg(feature = "cli")]
pub mod cli;

// Re-exported so generated code names one crate.
pub use half;
pub use rlx_sched::{ActKind, ArgOp, BinaryOp, CmpOp, DType, MaskKind, ReduceOp};
