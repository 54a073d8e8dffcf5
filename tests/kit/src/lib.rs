//! Helpers for the tests of model crates (bundled or scaffolded): they
//! link the model's library and this crate, which needs only rlx-runtime,
//! so a model's tests never build the code generator.

mod alloc;
mod bandwidth;
pub mod batch;
pub mod models;

pub use alloc::{allocations, CountingAlloc};
pub use bandwidth::copy_bandwidth;
