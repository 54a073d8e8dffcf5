//! The reference casts: one `CastTo` impl per (source, destination) pair.
//!
//! Rules (ONNX `Cast` where it is defined, Rust `as` where it is not):
//! - float to int truncates toward zero, saturating at the type's bounds,
//!   NaN to 0 (Rust `as`);
//! - int to int wraps (keeps the low bits); int to float rounds to nearest
//!   even;
//! - f64 to f32 rounds to nearest even; f16/bf16 conversions use `half`
//!   (round to nearest even, NaN stays NaN with the quiet bit set); a
//!   source other than f32 reaches f16/bf16 through f32, which is exact
//!   for f16, bf16 and ints up to 2^24 in magnitude and otherwise rounds
//!   twice (as `half` itself does for f64 on x86);
//! - to bool is `!= 0` (so NaN is true), stored as one byte 1/0; from bool
//!   reads a byte as `!= 0`.

use half::{bf16, f16};

/// A bool element: one byte, true when non-zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bool(pub u8);

/// Conversion of one element to `D` under the rules above.
pub trait CastTo<D>: Copy {
    /// The converted element.
    fn cast(self) -> D;
}

/// Between Rust primitives: `as` is exactly the rule set.
macro_rules! prim_to_prim {
    ($s:ty => $($d:ty),*) => {
        $(impl CastTo<$d> for $s {
            #[inline(always)]
            fn cast(self) -> $d {
                self as $d
            }
        })*
    };
}
prim_to_prim!(f32 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(f64 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(i8 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(u8 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(i16 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(u16 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(i32 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(u32 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(i64 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
prim_to_prim!(u64 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);

/// Primitive to half precision, through f32.
macro_rules! prim_to_half {
    ($($s:ty),*) => {
        $(
            impl CastTo<f16> for $s {
                #[inline(always)]
                fn cast(self) -> f16 {
                    f16::from_f32(self as f32)
                }
            }
            impl CastTo<bf16> for $s {
                #[inline(always)]
                fn cast(self) -> bf16 {
                    bf16::from_f32(self as f32)
                }
            }
        )*
    };
}
prim_to_half!(f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);

/// Half precision to a primitive, through f32 (exact), then `as`.
macro_rules! half_to_prim {
    ($h:ty => $($d:ty),*) => {
        $(impl CastTo<$d> for $h {
            #[inline(always)]
            fn cast(self) -> $d {
                self.to_f32() as $d
            }
        })*
    };
}
half_to_prim!(f16 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
half_to_prim!(bf16 => f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);

impl CastTo<f16> for f16 {
    #[inline(always)]
    fn cast(self) -> f16 {
        self
    }
}
impl CastTo<bf16> for bf16 {
    #[inline(always)]
    fn cast(self) -> bf16 {
        self
    }
}
impl CastTo<bf16> for f16 {
    #[inline(always)]
    fn cast(self) -> bf16 {
        bf16::from_f32(self.to_f32())
    }
}
impl CastTo<f16> for bf16 {
    #[inline(always)]
    fn cast(self) -> f16 {
        f16::from_f32(self.to_f32())
    }
}

/// To bool: `!= 0`.
macro_rules! to_bool {
    ($($s:ty: |$x:ident| $nonzero:expr),*) => {
        $(impl CastTo<Bool> for $s {
            #[inline(always)]
            fn cast(self) -> Bool {
                let $x = self;
                Bool(u8::from($nonzero))
            }
        })*
    };
}
to_bool!(
    f32: |x| x != 0.0,
    f64: |x| x != 0.0,
    f16: |x| x.to_f32() != 0.0,
    bf16: |x| x.to_f32() != 0.0,
    i8: |x| x != 0,
    u8: |x| x != 0,
    i16: |x| x != 0,
    u16: |x| x != 0,
    i32: |x| x != 0,
    u32: |x| x != 0,
    i64: |x| x != 0,
    u64: |x| x != 0,
    Bool: |x| x.0 != 0
);

/// From bool: 1 or 0 of the destination type.
macro_rules! from_bool {
    ($($d:ty: $one:expr, $zero:expr);*) => {
        $(impl CastTo<$d> for Bool {
            #[inline(always)]
            fn cast(self) -> $d {
                if self.0 != 0 { $one } else { $zero }
            }
        })*
    };
}
from_bool!(
    f32: 1.0, 0.0;
    f64: 1.0, 0.0;
    f16: f16::ONE, f16::ZERO;
    bf16: bf16::ONE, bf16::ZERO;
    i8: 1, 0;
    u8: 1, 0;
    i16: 1, 0;
    u16: 1, 0;
    i32: 1, 0;
    u32: 1, 0;
    i64: 1, 0;
    u64: 1, 0
);

/// `dst[i] = src[i].cast()` for `i < len`.
///
/// # Safety
/// `src` readable and `dst` writable for `len` elements, aligned for their
/// types; either they do not overlap, or `S` and `D` have the same size and
/// `dst == src` (in place: element `i` is read before it is written).
#[inline]
pub unsafe fn cast_slice<S: CastTo<D>, D>(src: *const S, dst: *mut D, len: usize) {
    for i in 0..len {
        // SAFETY: `i < len`, inside both caller-promised extents; an exact in-place
        // alias (same-size types) reads element `i` before writing it.
        unsafe { *dst.add(i) = (*src.add(i)).cast() };
    }
}
