//! The kernel library every generated model links, and [`exec`], which
//! runs a lowered kernel call the way generated code does (the reference
//! interpreter, `rlx-interp`, is built on it).
//!
//! Kernels live in `kernels/<family>/`, each with a scalar reference and
//! SIMD variants selected once per process. Thunk-level entry points take
//! raw pointers into the arena or the weights, because in-place kernels
//! must not hold a `&mut` and a `&` to the same bytes.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod arena;
pub mod blas;
pub mod capi;
pub mod isa;
pub mod kernels;
pub mod math;
pub mod model;
pub mod npy;
pub mod profile;
pub mod threads;
pub mod weights;

pub mod exec;

#[cfg(feature = "cli")]
pub mod cli;

// Kernel-call tables name types as `::rlx_runtime::...`, the path generated
// code uses; this makes the same path resolve inside the crate.
extern crate self as rlx_runtime;

// Re-exported so generated code names one crate.
pub use half;
pub use rlx_core::{ActKind, DType, MaskKind, Step, StepArg};

/// Every enum of `rlx_core::field_enum_table!`, re-exported without a list
/// to keep (generated code names them through this crate).
macro_rules! reexport_field_enums {
    ($( $(#[$m:meta])* $name:ident as $what:literal { $($body:tt)* } )*) => {
        pub use rlx_core::{$($name),*};
    };
}

rlx_core::field_enum_table!(reexport_field_enums);
