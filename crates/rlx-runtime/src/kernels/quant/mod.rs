//! Integer kernels of quantized models, one folder per kernel:
//! `int_gemm` (`IntGemm`, the 8-bit product with i32 accumulation),
//! `int_gemm_packed` (`IntGemmPacked`, the same on a weight the importer
//! packed, its dequantization fused), `int_conv` (`IntConv2D`, on
//! `int_gemm`'s packed product), `qlinear_conv` (`QLinearConv2D`, the
//! requantization fused), `requantize` (`Requantize`) and `dynamic`
//! (`DynamicQuantize`); each has its reference in its `scalar.rs`.
//! `shared.rs` holds what several of them use: the tile body of the
//! kernels on the importer's packed layouts.

mod dynamic;
mod int_conv;
mod int_gemm;
mod int_gemm_packed;
mod qlinear_conv;
mod requantize;
mod shared;

pub use dynamic::{dynamic_quantize, dynamic_quantize_reference};
pub use int_conv::{int_conv2d, int_conv2d_reference};
pub use int_gemm::{int_gemm, int_gemm_reference};
pub use int_gemm_packed::{int_gemm_packed, int_gemm_packed_f32, int_gemm_packed_reference};
pub use qlinear_conv::{qlinear_conv2d, qlinear_conv2d_reference};
pub use requantize::{requantize, requantize_reference};

/// An 8-bit integer element of a quantized tensor.
pub trait IntElem: Copy + Send + Sync + 'static {
    /// Whether the type is signed (`i8`).
    const SIGNED: bool;
    /// The type's range, as f32 (exact).
    const MIN: f32;
    const MAX: f32;
    /// The value, exactly.
    fn to_i32(self) -> i32;
    /// `v` as this type; `v` must be in range.
    fn from_i32(v: i32) -> Self;
}

impl IntElem for u8 {
    const SIGNED: bool = false;
    const MIN: f32 = 0.0;
    const MAX: f32 = 255.0;
    #[inline(always)]
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u8 {
        v as u8
    }
}

impl IntElem for i8 {
    const SIGNED: bool = true;
    const MIN: f32 = -128.0;
    const MAX: f32 = 127.0;
    #[inline(always)]
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    #[inline(always)]
    fn from_i32(v: i32) -> i8 {
        v as i8
    }
}

/// Re-exported so the kernel and the planner share one layout.
pub use rlx_core::plan::{int_gemm_packed_b_bytes, int_gemm_scratch_bytes};
