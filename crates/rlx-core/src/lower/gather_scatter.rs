//! Gather and scatter family: `GatherElements`, `GatherNd`,
//! `ScatterElements`, `ScatterNd`. Gathers split their output over threads
//! from [`parallel`]'s threshold; a scatter copies `data` with that rule and
//! scatters serially (duplicate indices must land in index order).

use super::Lower;
use crate::call::{IndexElem, KernelCall as K, ScatterElem};
use crate::dtype::DType;
use crate::operand::{Operand, Params};
use crate::ops::ScatterReduction;
use crate::plan::parallel;
use crate::thunk::{GatherElements, GatherNd, ScatterElements, ScatterNd};

impl Lower for GatherElements<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let GatherElements { data, indices, dst, data_dims, index_dims, axis, elem_bytes, index_dtype } = self;
        Some(K::GatherElements {
            index: index_elem(*index_dtype),
            data: *data,
            indices: *indices,
            dst: *dst,
            data_dims: data_dims.clone(),
            index_dims: index_dims.clone(),
            axis: *axis,
            elem_bytes: *elem_bytes,
            par: parallel(index_dims.iter().product()),
        })
    }
}

impl Lower for GatherNd<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let GatherNd { data, indices, dst, batch, lookups, data_dims, slice_len, elem_bytes, index_dtype } = self;
        Some(K::GatherNd {
            index: index_elem(*index_dtype),
            data: *data,
            indices: *indices,
            dst: *dst,
            batch: *batch,
            lookups: *lookups,
            data_dims: data_dims.clone(),
            slice_len: *slice_len,
            elem_bytes: *elem_bytes,
            par: parallel(batch * lookups * slice_len),
        })
    }
}

impl Lower for ScatterElements<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let ScatterElements { data, indices, updates, dst, data_dims, index_dims, axis, reduction, dtype, index_dtype } =
            self;
        Some(K::ScatterElements {
            elem: scatter_elem(*dtype, *reduction),
            index: index_elem(*index_dtype),
            data: *data,
            indices: *indices,
            updates: *updates,
            dst: *dst,
            data_dims: data_dims.clone(),
            index_dims: index_dims.clone(),
            axis: *axis,
            reduction: *reduction,
            par: parallel(data_dims.iter().product()),
        })
    }
}

impl Lower for ScatterNd<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let ScatterNd { data, indices, updates, dst, lookups, data_dims, slice_len, reduction, dtype, index_dtype } =
            self;
        Some(K::ScatterNd {
            elem: scatter_elem(*dtype, *reduction),
            index: index_elem(*index_dtype),
            data: *data,
            indices: *indices,
            updates: *updates,
            dst: *dst,
            lookups: *lookups,
            data_dims: data_dims.clone(),
            slice_len: *slice_len,
            reduction: *reduction,
            par: parallel(data_dims.iter().product::<usize>() * slice_len),
        })
    }
}

/// The validator admits i64 and i32 indices only.
fn index_elem(d: DType) -> IndexElem {
    match d {
        DType::I32 => IndexElem::I32,
        _ => IndexElem::I64,
    }
}

/// The element a scatter combines: its own type when it reduces (the
/// validator admits f32, f64, i32, i64 and bool there), a word of its
/// width when it only replaces.
fn scatter_elem(d: DType, reduction: ScatterReduction) -> ScatterElem {
    if reduction == ScatterReduction::None {
        return match d.size() {
            1 => ScatterElem::U8,
            2 => ScatterElem::U16,
            4 => ScatterElem::U32,
            _ => ScatterElem::U64,
        };
    }
    match d {
        DType::F32 => ScatterElem::F32,
        DType::F64 => ScatterElem::F64,
        DType::I32 => ScatterElem::I32,
        DType::Bool => ScatterElem::Bool,
        _ => ScatterElem::I64,
    }
}
