//! Kernel families. Each has `mod.rs` (public entries and the one-time
//! SIMD selection), `scalar.rs` (the reference), `avx2.rs` / `neon.rs`
//! where the family is hot, and `tests.rs`.

pub mod activation;
pub mod attention;
pub mod cast;
pub mod conv;
pub mod elementwise;
pub mod gather_scatter;
pub mod gemm;
pub mod movement;
pub mod norm;
pub mod pool;
pub mod recurrent;
pub mod reduce;
pub mod rope;
pub mod softmax;
#[cfg(target_arch = "x86_64")]
mod vexp;
