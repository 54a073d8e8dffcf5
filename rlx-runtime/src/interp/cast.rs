//! Interpreter arms for the cast family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn cast_f32_to_i64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF32ToI64")
}

pub(super) fn cast_f32_to_f64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF32ToF64")
}

pub(super) fn cast_f64_to_f32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF64ToF32")
}

pub(super) fn cast_f64_to_i64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF64ToI64")
}

pub(super) fn cast_f64_to_i32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF64ToI32")
}

pub(super) fn cast_f64_to_bool(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF64ToBool")
}

pub(super) fn cast_i64_to_i32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI64ToI32")
}

pub(super) fn cast_i64_to_f64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI64ToF64")
}

pub(super) fn cast_i32_to_f64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI32ToF64")
}

pub(super) fn cast_f32_to_f16(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF32ToF16")
}

pub(super) fn cast_f16_to_f32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF16ToF32")
}

pub(super) fn cast_f32_to_bf16(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF32ToBf16")
}

pub(super) fn cast_bf16_to_f32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastBf16ToF32")
}

pub(super) fn cast_f32_to_i32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF32ToI32")
}

pub(super) fn cast_i64_to_f32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI64ToF32")
}

pub(super) fn cast_bool_to_i32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastBoolToI32")
}

pub(super) fn cast_i32_to_f32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI32ToF32")
}

pub(super) fn cast_i32_to_i64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI32ToI64")
}

pub(super) fn cast_i32_to_bool(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI32ToBool")
}

pub(super) fn cast_i64_to_bool(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastI64ToBool")
}

pub(super) fn cast_bool_to_i64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastBoolToI64")
}

pub(super) fn cast_bool_to_f32(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastBoolToF32")
}

pub(super) fn cast_f32_to_bool(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastF32ToBool")
}

pub(super) fn cast_generic(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CastGeneric")
}
