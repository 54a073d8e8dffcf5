//! Casts: each named kind has its entry; `CastGeneric` takes the SIMD
//! entry for f32 <-> f16/bf16 and the generic element loop otherwise. The
//! casts around a quantized product (f32 to u8/i8, i32 to f32) split over
//! the pool: on two threads each then converts the half of the rows its
//! own core just wrote.

use super::not_in_family;
use crate::call::{CastElem, KernelCall as K};
use crate::dtype::DType;
use crate::operand::Operand;
use crate::plan::parallel;
use crate::thunk::Thunk;

pub(super) fn lower(t: &Thunk<Operand>) -> K {
    match *t {
        Thunk::CastF32ToI64 { src, dst, len } => K::CastF32ToI64 { src, dst, len },
        Thunk::CastF32ToF64 { src, dst, len } => K::CastF32ToF64 { src, dst, len },
        Thunk::CastF64ToF32 { src, dst, len } => K::CastF64ToF32 { src, dst, len },
        Thunk::CastF64ToI64 { src, dst, len } => K::CastF64ToI64 { src, dst, len },
        Thunk::CastF64ToI32 { src, dst, len } => K::CastF64ToI32 { src, dst, len },
        Thunk::CastF64ToBool { src, dst, len } => K::CastF64ToBool { src, dst, len },
        Thunk::CastI64ToI32 { src, dst, len } => K::CastI64ToI32 { src, dst, len },
        Thunk::CastI64ToF64 { src, dst, len } => K::CastI64ToF64 { src, dst, len },
        Thunk::CastI32ToF64 { src, dst, len } => K::CastI32ToF64 { src, dst, len },
        Thunk::CastF32ToF16 { src, dst, len } => K::CastF32ToF16 { src, dst, len },
        Thunk::CastF16ToF32 { src, dst, len } => K::CastF16ToF32 { src, dst, len },
        Thunk::CastF32ToBf16 { src, dst, len } => K::CastF32ToBf16 { src, dst, len },
        Thunk::CastBf16ToF32 { src, dst, len } => K::CastBf16ToF32 { src, dst, len },
        Thunk::CastF32ToI32 { src, dst, len } => K::CastF32ToI32 { src, dst, len },
        Thunk::CastI64ToF32 { src, dst, len } => K::CastI64ToF32 { src, dst, len },
        Thunk::CastBoolToI32 { src, dst, len } => K::CastBoolToI32 { src, dst, len },
        Thunk::CastI32ToF32 { src, dst, len } => K::CastI32ToF32 { src, dst, len, par: parallel(len) },
        Thunk::CastI32ToI64 { src, dst, len } => K::CastI32ToI64 { src, dst, len },
        Thunk::CastI32ToBool { src, dst, len } => K::CastI32ToBool { src, dst, len },
        Thunk::CastI64ToBool { src, dst, len } => K::CastI64ToBool { src, dst, len },
        Thunk::CastBoolToI64 { src, dst, len } => K::CastBoolToI64 { src, dst, len },
        Thunk::CastBoolToF32 { src, dst, len } => K::CastBoolToF32 { src, dst, len },
        Thunk::CastF32ToBool { src, dst, len } => K::CastF32ToBool { src, dst, len },
        Thunk::CastGeneric { src, dst, len, src_dtype, dst_dtype } => match (src_dtype, dst_dtype) {
            (DType::F32, DType::F16) => K::CastF32ToF16 { src, dst, len },
            (DType::F32, DType::U8) => K::CastF32ToU8 { src, dst, len, par: parallel(len) },
            (DType::F32, DType::I8) => K::CastF32ToI8 { src, dst, len, par: parallel(len) },
            (DType::F16, DType::F32) => K::CastF16ToF32 { src, dst, len },
            (DType::F32, DType::Bf16) => K::CastF32ToBf16 { src, dst, len },
            (DType::Bf16, DType::F32) => K::CastBf16ToF32 { src, dst, len },
            (from, to) => K::CastSlice { from: cast_elem(from), to: cast_elem(to), src, dst, len },
        },
        _ => not_in_family("cast", t),
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
