//! Casts. The pairs with an entry of their own keep it (f32 <-> f16/bf16
//! have SIMD forms; the casts around a quantized product, f32 to u8/i8 and
//! i32 to f32, split over the pool, so on two threads each converts the
//! half of the rows its own core just wrote); every other pair runs the
//! generic element loop. Every entry converts an element the same way
//! (`rlx_runtime::kernels::cast::CastTo`), so the choice changes speed,
//! never bits.

use super::Lower;
use crate::call::{CastElem, KernelCall as K};
use crate::dtype::DType;
use crate::operand::{Operand, Params};
use crate::plan::parallel;
use crate::thunk::Cast;

impl Lower for Cast<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        use DType::*;
        let Cast { src, dst, len, from, to } = *self;
        Some(match (from, to) {
            (F32, I64) => K::CastF32ToI64 { src, dst, len },
            (F32, F64) => K::CastF32ToF64 { src, dst, len },
            (F64, F32) => K::CastF64ToF32 { src, dst, len },
            (F64, I64) => K::CastF64ToI64 { src, dst, len },
            (F64, I32) => K::CastF64ToI32 { src, dst, len },
            (F64, Bool) => K::CastF64ToBool { src, dst, len },
            (I64, I32) => K::CastI64ToI32 { src, dst, len },
            (I64, F64) => K::CastI64ToF64 { src, dst, len },
            (I32, F64) => K::CastI32ToF64 { src, dst, len },
            (F32, F16) => K::CastF32ToF16 { src, dst, len },
            (F16, F32) => K::CastF16ToF32 { src, dst, len },
            (F32, Bf16) => K::CastF32ToBf16 { src, dst, len },
            (Bf16, F32) => K::CastBf16ToF32 { src, dst, len },
            (F32, I32) => K::CastF32ToI32 { src, dst, len },
            (I64, F32) => K::CastI64ToF32 { src, dst, len },
            (Bool, I32) => K::CastBoolToI32 { src, dst, len },
            (I32, F32) => K::CastI32ToF32 { src, dst, len, par: parallel(len) },
            (I32, I64) => K::CastI32ToI64 { src, dst, len },
            (I32, Bool) => K::CastI32ToBool { src, dst, len },
            (I64, Bool) => K::CastI64ToBool { src, dst, len },
            (Bool, I64) => K::CastBoolToI64 { src, dst, len },
            (Bool, F32) => K::CastBoolToF32 { src, dst, len },
            (F32, Bool) => K::CastF32ToBool { src, dst, len },
            (F32, U8) => K::CastF32ToU8 { src, dst, len, par: parallel(len) },
            (F32, I8) => K::CastF32ToI8 { src, dst, len, par: parallel(len) },
            (from, to) => K::CastSlice { from: cast_elem(from), to: cast_elem(to), src, dst, len },
        })
    }
}

fn cast_elem(d: DType) -> CastElem {
    match d {
        DType::F32 => CastElem::F32,
        DType::F64 => CastElem::F64,
        DType::F16 => CastElem::F16,
        DType::Bf16 => CastElem::Bf16,
        DType::I8 => CastElem::I8,
        DType::U8 => CastElem::U8,
        DType::I16 => CastElem::I16,
        DType::U16 => CastElem::U16,
        DType::I32 => CastElem::I32,
        DType::U32 => CastElem::U32,
        DType::I64 => CastElem::I64,
        DType::U64 => CastElem::U64,
        DType::Bool => CastElem::Bool,
    }
}
