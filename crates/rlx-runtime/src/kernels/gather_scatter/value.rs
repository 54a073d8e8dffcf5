//! The element types a scatter combines, and their reductions.

use crate::kernels::cast::Bool;

/// An element a scatter writes: its reductions, exact for its type.
///
/// Floats round once per combine (`add`, `mul`); `max`/`min` return NaN
/// when either side is NaN (numpy's `maximum`/`minimum`, which the ONNX
/// reference uses). Integers wrap, as ONNX's reference does. Bools are
/// 0/1: `add` and `max` are or, `mul` and `min` are and. The unsigned
/// words stand for any type of their width under reduction `none`, which
/// only moves bits; their reductions wrap and are never selected by the
/// lowering.
pub trait ScatterValue: Copy + Send + Sync + 'static {
    fn add(self, u: Self) -> Self;
    fn mul(self, u: Self) -> Self;
    fn max(self, u: Self) -> Self;
    fn min(self, u: Self) -> Self;
}

macro_rules! float_value {
    ($t:ty) => {
        impl ScatterValue for $t {
            fn add(self, u: Self) -> Self {
                self + u
            }
            fn mul(self, u: Self) -> Self {
                self * u
            }
            fn max(self, u: Self) -> Self {
                if self.is_nan() || !(u.is_nan() || u > self) {
                    self
                } else {
                    u
                }
            }
            fn min(self, u: Self) -> Self {
                if self.is_nan() || !(u.is_nan() || u < self) {
                    self
                } else {
                    u
                }
            }
        }
    };
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl ScatterValue for $t {
            fn add(self, u: Self) -> Self {
                self.wrapping_add(u)
            }
            fn mul(self, u: Self) -> Self {
                self.wrapping_mul(u)
            }
            fn max(self, u: Self) -> Self {
                Ord::max(self, u)
            }
            fn min(self, u: Self) -> Self {
                Ord::min(self, u)
            }
        }
    )*};
}

float_value!(f32);
float_value!(f64);
int_value!(i32, i64, u8, u16, u32, u64);

impl ScatterValue for Bool {
    fn add(self, u: Self) -> Self {
        Bool(u8::from(self.0 != 0 || u.0 != 0))
    }
    fn mul(self, u: Self) -> Self {
        Bool(u8::from(self.0 != 0 && u.0 != 0))
    }
    fn max(self, u: Self) -> Self {
        self.add(u)
    }
    fn min(self, u: Self) -> Self {
        self.mul(u)
    }
}
