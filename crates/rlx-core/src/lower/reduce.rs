//! Reductions along the middle axis of `[outer, axis_dim, inner]`, and
//! top-k.

use super::not_in_family;
use crate::call::{CumElem, KernelCall as K};
use crate::operand::Operand;
use crate::plan::{parallel, top_k_scratch_bytes};
use crate::thunk::Thunk;
use crate::DType;

pub(super) fn lower(t: &Thunk<Operand>) -> K {
    match *t {
        Thunk::Reduce { src, dst, outer, axis_dim, inner, op } => {
            K::ReduceF32 { src, dst, outer, axis_dim, inner, op, par: parallel(outer * axis_dim * inner) }
        }
        Thunk::ArgReduce { src, dst, outer, axis_dim, inner, op, select_last, indices_i64 } => K::ArgReduceF32 {
            src,
            dst,
            outer,
            axis_dim,
            inner,
            op,
            select_last,
            indices_i64,
            par: parallel(outer * axis_dim * inner),
        },
        Thunk::Cumulative { src, dst, outer, axis_dim, inner, op, dtype, exclusive, reverse } => K::Cumulative {
            elem: match dtype {
                DType::I64 => CumElem::I64,
                _ => CumElem::F32,
            },
            op,
            src,
            dst,
            outer,
            axis_dim,
            inner,
            exclusive,
            reverse,
            par: parallel(outer * axis_dim * inner),
        },
        Thunk::Cumsum { src, dst, outer, axis_dim, inner, exclusive, reverse } => K::CumsumF32 {
            src,
            dst,
            outer,
            axis_dim,
            inner,
            exclusive,
            reverse,
            par: parallel(outer * axis_dim * inner),
        },
        Thunk::TopK { src, dst, values, outer, axis_dim, k, largest, indices_i64 } => K::TopKF32 {
            src,
            dst,
            values,
            outer,
            axis_dim,
            k,
            largest,
            indices_i64,
            scratch: top_k_scratch_bytes(axis_dim),
        },
        Thunk::TopKI64 { src, dst, values, outer, axis_dim, k, largest, indices_i64 } => K::TopKI64 {
            src,
            dst,
            values,
            outer,
            axis_dim,
            k,
            largest,
            indices_i64,
            scratch: top_k_scratch_bytes(axis_dim),
        },
        _ => not_in_family("reduce", t),
    }
}
