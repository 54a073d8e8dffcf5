//! Decisions shared by the interpreter and the code generator.
//!
//! Everything the interpreter would otherwise decide per call (which
//! kernel path, whether a temporary is needed, serial or parallel) is a
//! pure function of a thunk's fields. `crate::lower` calls these once per
//! thunk to build its `KernelCall`, which the emitter prints at gen time
//! and the interpreter executes; the validator uses the same predicates
//! for its aliasing rules.

mod binary;
mod gemm;
mod pad;
mod paths;
mod resize;
mod transpose;

pub use binary::*;
pub use gemm::{
    gemm_needs_temp, gemm_temp_bytes, half_gemm_scratch_bytes, half_weight_scratch_elems, int_gemm_packed_b_bytes,
    int_gemm_packed_row_terms_bytes, int_gemm_packed_scratch_bytes, int_gemm_packed_scratch_bytes_checked,
    int_gemm_scratch_bytes, int_gemm_scratch_bytes_checked, HALF_WEIGHT_DIRECT_MAX_M,
};
pub use pad::*;
pub use paths::*;
pub use resize::*;
pub use transpose::*;

/// Below this many elements of work a kernel runs on the calling thread:
/// a rayon fork-join costs a few microseconds, more than the work saves.
pub const PAR_MIN_ELEMS: usize = 32 * 1024;

/// Whether work of `elems` elements is worth splitting across threads.
pub fn parallel(elems: usize) -> bool {
    elems >= PAR_MIN_ELEMS
}

/// Below this many multiply-adds a `PackedGemm` runs on one thread
/// (measured on the bench machine: a fork-join costs about as much as
/// 2^20 multiply-adds at one core's speed).
pub const PACKED_GEMM_PAR_MIN_MACS: usize = 1 << 20;

/// Whether a packed GEMM of `m x k x n` is worth splitting across threads.
pub fn packed_gemm_parallel(m: usize, k: usize, n: usize) -> bool {
    m.saturating_mul(k).saturating_mul(n) >= PACKED_GEMM_PAR_MIN_MACS
}

/// Whether the byte ranges `[a, a + a_len)` and `[b, b + b_len)` share a
/// byte. BLAS aliasing must compare ranges, not start pointers, because
/// a planner may place an operand strictly inside the output.
pub fn ranges_overlap(a: usize, a_len: usize, b: usize, b_len: usize) -> bool {
    a_len > 0 && b_len > 0 && a < b + b_len && b < a + a_len
}
