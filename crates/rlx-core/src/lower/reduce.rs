//! Reductions along the middle axis of `[outer, axis_dim, inner]`, running
//! sums and products, and top-k.

use super::Lower;
use crate::call::{CumElem, KernelCall as K};
use crate::operand::{Operand, Params};
use crate::plan::{parallel, top_k_scratch_bytes};
use crate::thunk::{ArgReduce, Cumulative, Reduce, TopK, TopKI64};
use crate::DType;

impl Lower for Reduce<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Reduce { src, dst, outer, axis_dim, inner, op } = *self;
        Some(K::ReduceF32 { src, dst, outer, axis_dim, inner, op, par: parallel(outer * axis_dim * inner) })
    }
}

impl Lower for ArgReduce<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let ArgReduce { src, dst, outer, axis_dim, inner, op, select_last, indices_i64 } = *self;
        Some(K::ArgReduceF32 {
            src,
            dst,
            outer,
            axis_dim,
            inner,
            op,
            select_last,
            indices_i64,
            par: parallel(outer * axis_dim * inner),
        })
    }
}

impl Lower for Cumulative<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Cumulative { src, dst, outer, axis_dim, inner, op, dtype, exclusive, reverse } = *self;
        Some(K::Cumulative {
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
        })
    }
}

impl Lower for TopK<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let TopK { src, dst, values, outer, axis_dim, k, largest, indices_i64 } = *self;
        Some(K::TopKF32 {
            src,
            dst,
            values,
            outer,
            axis_dim,
            k,
            largest,
            indices_i64,
            scratch: top_k_scratch_bytes(axis_dim),
        })
    }
}

impl Lower for TopKI64<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let TopKI64 { src, dst, values, outer, axis_dim, k, largest, indices_i64 } = *self;
        Some(K::TopKI64 {
            src,
            dst,
            values,
            outer,
            axis_dim,
            k,
            largest,
            indices_i64,
            scratch: top_k_scratch_bytes(axis_dim),
        })
    }
}
