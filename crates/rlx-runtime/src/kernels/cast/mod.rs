//! Cast kernels: element type conversions.
//!
//! `scalar::CastTo` defines every (source, destination) pair once (the
//! rules are on `scalar`); [`cast_slice`] applies it and is what generated
//! code calls for `CastGeneric`. Each named `Cast*` thunk kind has its own
//! entry. Conversions between f32 and f16/bf16 have AVX2 (F16C) and NEON
//! forms, bit-exact with `half`, and f32 to 8-bit integers an AVX2 form;
//! each list of variants is declared once ([`HALF_KERNELS`],
//! [`KERNELS`]), the element-at-a-time [`cast_slice`] last.
//!
//! Bool data is one byte per element: entries take `*const u8` / `*mut u8`
//! for it, and [`cast_generic`] reads any non-zero byte as true.

mod scalar;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "aarch64")]
mod neon;

#[cfg(test)]
mod tests;

use half::{bf16, f16};
#[cfg(test)]
use rlx_core::DType;

use crate::kernels::elementwise::par::SyncPtr;
use crate::kernels::variants::variants;

pub use scalar::{cast_slice, Bool, CastTo};

/// Generates a named entry over [`cast_slice`].
macro_rules! named_cast {
    ($(#[$doc:meta])* $name:ident, bool => $d:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `src` readable for `len` bytes and `dst` writable for `len`
        /// elements, aligned; no overlap (in place when `dst` is one byte).
        pub unsafe fn $name(src: *const u8, dst: *mut $d, len: usize) {
            // SAFETY: the caller gives `len` readable bytes at `src`, which are `len`
            // `Bool` (a `repr(transparent)` byte for which every value is valid), and
            // `len` writable `$d` at `dst`; they overlap at most as the same-size exact
            // alias `cast_slice` allows.
            unsafe { cast_slice(src.cast::<Bool>(), dst, len) }
        }
    };
    ($(#[$doc:meta])* $name:ident, $s:ty => $d:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `src` readable and `dst` writable for `len` elements, aligned for
        /// their types; no overlap, except `dst == src` when both element
        /// types have the same size (in place).
        pub unsafe fn $name(src: *const $s, dst: *mut $d, len: usize) {
            // SAFETY: this entry's contract (extents, alignment, overlap only as an
            // exact alias of same-size types) is exactly `cast_slice`'s.
            unsafe { cast_slice(src, dst, len) }
        }
    };
}

/// Generates a named entry to bool (one byte, 1/0).
macro_rules! named_to_bool {
    ($(#[$doc:meta])* $name:ident, $s:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `src` readable for `len` elements and `dst` writable for `len`
        /// bytes; no overlap.
        pub unsafe fn $name(src: *const $s, dst: *mut u8, len: usize) {
            // SAFETY: `dst` is writable for `len` bytes, i.e. `len` `Bool` (a
            // `repr(transparent)` `u8`, align 1); `src` is readable for `len` `$s`;
            // they do not overlap, as `cast_slice` requires.
            unsafe { cast_slice::<$s, Bool>(src, dst.cast::<Bool>(), len) }
        }
    };
}

named_cast!(/// `CastF32ToI64`: truncates toward zero, saturating, NaN to 0.
    cast_f32_to_i64, f32 => i64);
named_cast!(/// `CastF32ToF64`: exact.
    cast_f32_to_f64, f32 => f64);
named_cast!(/// `CastF64ToF32`: rounds to nearest even.
    cast_f64_to_f32, f64 => f32);
named_cast!(/// `CastF64ToI64`: truncates toward zero, saturating, NaN to 0.
    cast_f64_to_i64, f64 => i64);
named_cast!(/// `CastF64ToI32`: truncates toward zero, saturating, NaN to 0.
    cast_f64_to_i32, f64 => i32);
named_to_bool!(/// `CastF64ToBool`: `!= 0.0` (NaN is true).
    cast_f64_to_bool, f64);
named_cast!(/// `CastI64ToI32`: keeps the low 32 bits (wraps).
    cast_i64_to_i32, i64 => i32);
named_cast!(/// `CastI64ToF64`: rounds to nearest even above 2^53.
    cast_i64_to_f64, i64 => f64);
named_cast!(/// `CastI32ToF64`: exact.
    cast_i32_to_f64, i32 => f64);
named_cast!(/// `CastF32ToI32`: truncates toward zero, saturating, NaN to 0.
    cast_f32_to_i32, f32 => i32);
named_cast!(/// `CastI64ToF32`: rounds to nearest even.
    cast_i64_to_f32, i64 => f32);
named_cast!(/// `CastBoolToI32`: 1 or 0.
    cast_bool_to_i32, bool => i32);
named_cast!(/// `CastI32ToI64`: sign-extends.
    cast_i32_to_i64, i32 => i64);
named_to_bool!(/// `CastI32ToBool`: `!= 0`.
    cast_i32_to_bool, i32);
named_to_bool!(/// `CastI64ToBool`: `!= 0`.
    cast_i64_to_bool, i64);
named_cast!(/// `CastBoolToI64`: 1 or 0.
    cast_bool_to_i64, bool => i64);
named_cast!(/// `CastBoolToF32`: 1.0 or 0.0.
    cast_bool_to_f32, bool => f32);
named_to_bool!(/// `CastF32ToBool`: `!= 0.0` (NaN is true).
    cast_f32_to_bool, f32);

/// The f32 <-> f16 conversions of one variant.
#[derive(Clone, Copy)]
pub(crate) struct HalfKernels {
    to_f16: unsafe fn(*const f32, *mut f16, usize),
    from_f16: unsafe fn(*const f16, *mut f32, usize),
}

variants! {
    /// The f16 conversions, best first: F16C's `vcvtps2ph` / `vcvtph2ps`
    /// on x86-64, `half`'s slice conversions on aarch64 (the FP16
    /// instructions where the CPU has them), the element-at-a-time cast.
    pub(crate) static HALF_KERNELS: HalfKernels = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_f16c() => HalfKernels { to_f16: avx2::avx2_f32_to_f16, from_f16: avx2::avx2_f16_to_f32 },
        #[cfg(target_arch = "aarch64")]
        "half" if cpu::neon() => HalfKernels { to_f16: half_slice_to_f16, from_f16: half_slice_from_f16 },
        "scalar" => HalfKernels { to_f16: cast_slice::<f32, f16>, from_f16: cast_slice::<f16, f32> },
    ];
}

/// The bf16 and 8-bit conversions of one variant.
#[derive(Clone, Copy)]
pub(crate) struct Kernels {
    to_bf16: unsafe fn(*const f32, *mut bf16, usize),
    from_bf16: unsafe fn(*const bf16, *mut f32, usize),
    to_u8: SerialCast<f32, u8>,
    to_i8: SerialCast<f32, i8>,
}

variants! {
    /// The bf16 and 8-bit conversions, best first (the AVX2 forms need no
    /// FMA; they are chosen with it, as the rest of the AVX2 kernels).
    pub(crate) static KERNELS: Kernels = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Kernels {
            to_bf16: avx2::avx2_f32_to_bf16,
            from_bf16: avx2::avx2_bf16_to_f32,
            to_u8: avx2::avx2_f32_to_8bit::<false>,
            to_i8: avx2::avx2_f32_to_i8,
        },
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => Kernels {
            to_bf16: neon::neon_f32_to_bf16,
            from_bf16: neon::neon_bf16_to_f32,
            to_u8: cast_slice::<f32, u8>,
            to_i8: cast_slice::<f32, i8>,
        },
        "scalar" => Kernels {
            to_bf16: cast_slice::<f32, bf16>,
            from_bf16: cast_slice::<bf16, f32>,
            to_u8: cast_slice::<f32, u8>,
            to_i8: cast_slice::<f32, i8>,
        },
    ];
}

/// `half`'s f32 to f16 slice conversion.
///
/// # Safety
/// As [`cast_f32_to_f16`].
#[cfg(target_arch = "aarch64")]
unsafe fn half_slice_to_f16(src: *const f32, dst: *mut f16, len: usize) {
    use half::slice::HalfFloatSliceExt;
    // SAFETY: the ranges do not overlap (as promised) and are valid.
    let (s, d) = unsafe { (std::slice::from_raw_parts(src, len), std::slice::from_raw_parts_mut(dst, len)) };
    d.convert_from_f32_slice(s);
}

/// `half`'s f16 to f32 slice conversion.
///
/// # Safety
/// As [`cast_f32_to_f16`].
#[cfg(target_arch = "aarch64")]
unsafe fn half_slice_from_f16(src: *const f16, dst: *mut f32, len: usize) {
    use half::slice::HalfFloatSliceExt;
    // SAFETY: the ranges do not overlap (as promised) and are valid.
    let (s, d) = unsafe { (std::slice::from_raw_parts(src, len), std::slice::from_raw_parts_mut(dst, len)) };
    s.convert_to_f32_slice(d);
}

/// `CastF32ToF16`: `half::f16::from_f32` (nearest even; NaN quietened).
///
/// # Safety
/// `src` readable and `dst` writable for `len` elements, aligned; no
/// overlap.
pub unsafe fn cast_f32_to_f16(src: *const f32, dst: *mut f16, len: usize) {
    // SAFETY: the variant runs on this CPU; extents and no overlap are the
    // caller's contract.
    unsafe { (HALF_KERNELS.best().to_f16)(src, dst, len) }
}

/// `CastF32ToU8`: `as u8` (toward zero, saturating, NaN to 0), the
/// quantizers' last step; `par` splits it over the pool.
///
/// # Safety
/// As [`cast_f32_to_f16`].
pub unsafe fn cast_f32_to_u8(src: *const f32, dst: *mut u8, len: usize, par: bool) {
    // SAFETY: forwarded contract; the variant runs on this CPU.
    unsafe { split_cast(src, dst, len, par, KERNELS.best().to_u8) }
}

/// `CastF32ToI8`: `as i8` (toward zero, saturating, NaN to 0); `par`
/// splits it over the pool.
///
/// # Safety
/// As [`cast_f32_to_f16`].
pub unsafe fn cast_f32_to_i8(src: *const f32, dst: *mut i8, len: usize, par: bool) {
    // SAFETY: forwarded contract; the variant runs on this CPU.
    unsafe { split_cast(src, dst, len, par, KERNELS.best().to_i8) }
}

/// `CastI32ToF32`: rounds to nearest even above 2^24, the dequantizers'
/// first step; `par` splits it over the pool.
///
/// # Safety
/// `src` readable and `dst` writable for `len` elements, aligned for
/// their types; no overlap, except `dst == src` (in place).
pub unsafe fn cast_i32_to_f32(src: *const i32, dst: *mut f32, len: usize, par: bool) {
    // SAFETY: forwarded contract; an exact alias stays one element for
    // element in every chunk.
    unsafe { split_cast(src, dst, len, par, cast_slice::<i32, f32>) }
}

/// One serial cast of `len` elements (see [`split_cast`]).
type SerialCast<S, D> = unsafe fn(*const S, *mut D, usize);

/// Runs `cast` on the whole range, or on chunks of it over the pool
/// when `par`.
///
/// # Safety
/// `cast`'s contract for `src`, `dst` and `len` (it then holds for every
/// chunk).
unsafe fn split_cast<S: Copy, D: Copy>(src: *const S, dst: *mut D, len: usize, par: bool, cast: SerialCast<S, D>) {
    let (src, dst) = (SyncPtr::new_const(src), SyncPtr(dst));
    // SAFETY: each chunk is a sub-range of the caller's extents.
    crate::kernels::elementwise::par::split(len, par, &|start, n| unsafe {
        cast(src.get().add(start), dst.get().add(start), n)
    });
}

/// `CastF16ToF32`: exact.
///
/// # Safety
/// As [`cast_f32_to_f16`].
pub unsafe fn cast_f16_to_f32(src: *const f16, dst: *mut f32, len: usize) {
    // SAFETY: the variant runs on this CPU; extents and no overlap are the
    // caller's contract.
    unsafe { (HALF_KERNELS.best().from_f16)(src, dst, len) }
}

/// `CastF32ToBf16`: `half::bf16::from_f32` (nearest even; NaN quietened).
///
/// # Safety
/// As [`cast_f32_to_f16`].
pub unsafe fn cast_f32_to_bf16(src: *const f32, dst: *mut bf16, len: usize) {
    // SAFETY: the variant runs on this CPU; extents and no overlap are the
    // caller's contract.
    unsafe { (KERNELS.best().to_bf16)(src, dst, len) }
}

/// `CastBf16ToF32`: exact (NaN quietened, as `half`).
///
/// # Safety
/// As [`cast_f32_to_f16`].
pub unsafe fn cast_bf16_to_f32(src: *const bf16, dst: *mut f32, len: usize) {
    // SAFETY: the variant runs on this CPU; extents and no overlap are the
    // caller's contract.
    unsafe { (KERNELS.best().from_bf16)(src, dst, len) }
}

/// Binds `$t` to the element type of a `DType` (`Bool` for bool).
#[cfg(test)]
macro_rules! with_dtype {
    ($dt:expr, $t:ident => $body:expr) => {
        match $dt {
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            DType::F16 => {
                type $t = f16;
                $body
            }
            DType::Bf16 => {
                type $t = bf16;
                $body
            }
            DType::I8 => {
                type $t = i8;
                $body
            }
            DType::U8 => {
                type $t = u8;
                $body
            }
            DType::I16 => {
                type $t = i16;
                $body
            }
            DType::U16 => {
                type $t = u16;
                $body
            }
            DType::U32 => {
                type $t = u32;
                $body
            }
            DType::U64 => {
                type $t = u64;
                $body
            }
            DType::I32 => {
                type $t = i32;
                $body
            }
            DType::I64 => {
                type $t = i64;
                $body
            }
            DType::Bool => {
                type $t = Bool;
                $body
            }
        }
    };
}

/// `CastGeneric`: converts `len` elements of `src_dtype` at `src` to
/// `dst_dtype` at `dst` by the rules on [`CastTo`]: a test helper over
/// every pair (executors call the entry `rlx_core::lower` chose).
///
/// # Safety
/// `src` readable for `len` source elements and `dst` writable for `len`
/// destination elements, each aligned for its type; no overlap, except
/// `dst == src` when both types have the same size.
#[cfg(test)]
pub(crate) unsafe fn cast_generic(src_dtype: DType, dst_dtype: DType, src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: each arm passes the caller's pointers, cast to the element types
    // `src_dtype` / `dst_dtype` name, and `len` to an entry whose contract is
    // this one's (extents, alignment, overlap only as a same-size exact alias).
    unsafe {
        match (src_dtype, dst_dtype) {
            (DType::F32, DType::F16) => cast_f32_to_f16(src.cast(), dst.cast(), len),
            (DType::F16, DType::F32) => cast_f16_to_f32(src.cast(), dst.cast(), len),
            (DType::F32, DType::Bf16) => cast_f32_to_bf16(src.cast(), dst.cast(), len),
            (DType::Bf16, DType::F32) => cast_bf16_to_f32(src.cast(), dst.cast(), len),
            _ => with_dtype!(src_dtype, S => with_dtype!(dst_dtype, D => {
                cast_slice::<S, D>(src.cast(), dst.cast(), len)
            })),
        }
    }
}

#[cfg(test)]
/// The Rust element type generated code uses for a `DType`, fully
/// qualified (`f32`, `::rlx_runtime::half::f16`,
/// `::rlx_runtime::kernels::cast::Bool`).
pub(crate) fn dtype_rust_type(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::F16 => "::rlx_runtime::half::f16",
        DType::Bf16 => "::rlx_runtime::half::bf16",
        DType::I8 => "i8",
        DType::U8 => "u8",
        DType::I16 => "i16",
        DType::U16 => "u16",
        DType::I32 => "i32",
        DType::U32 => "u32",
        DType::I64 => "i64",
        DType::U64 => "u64",
        DType::Bool => "::rlx_runtime::kernels::cast::Bool",
    }
}
