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
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod lanes;
pub mod movement;
pub mod norm;
pub mod pool;
mod prefetch;
pub mod quant;
pub mod recurrent;
pub mod reduce;
pub mod rope;
pub mod sample;
pub mod softmax;
#[cfg(test)]
pub(crate) mod test_support;
pub(crate) mod variants;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod vexp;

/// The first position of a decoder step, read from its `pos` buffer: `Some(p)`
/// when `0 <= p` and `p + len <= max_len` (the step's rows fit in the
/// cache), else `None`, and the kernels that take a position then compute
/// nothing (outputs zero, caches untouched; see `docs/decoding.md`).
///
/// # Safety
/// `pos` is readable for one `i64` (aligned or not).
pub(crate) unsafe fn step_position(pos: *const i64, len: usize, max_len: usize) -> Option<usize> {
    // SAFETY: the caller's contract.
    let p = usize::try_from(unsafe { pos.read_unaligned() }).ok()?;
    (p.checked_add(len)? <= max_len).then_some(p)
}
