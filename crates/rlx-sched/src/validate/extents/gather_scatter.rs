//! Gathers and scatters by run-time indices. The indices' values are not
//! known here: the kernels keep every access in bounds whatever they hold
//! (`docs/kernels/gather-scatter.md`), so these rules fix the extents and
//! the shapes the kernels' bounds rest on.

use super::{Extents, Rules};
use crate::dtype::DType;
use crate::ops::ScatterReduction;
use crate::thunk::{GatherElements, GatherNd, ScatterElements, ScatterNd};
use crate::validate::access::{Alias, Elem};
use crate::validate::messages;

/// Index types ONNX allows for these ops.
const INDEX_DTYPES: &[DType] = &[DType::I64, DType::I32];

/// Data types a scatter reduction computes in.
const REDUCE_DTYPES: &[DType] = &[DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool];

/// Whether the kernels' index arithmetic over `dims` fits: the product of
/// the non-zero dims (a zero dim makes the extent 0, but strides are still
/// computed from the others).
fn dims_fit(dims: &[usize]) -> bool {
    dims.iter().filter(|&&d| d > 0).try_fold(1usize, |acc, &d| acc.checked_mul(d)).is_some()
}

/// The shape rules shared by the elements kinds; true when they hold.
fn elements_shapes<O>(r: &mut Rules<'_, O>, data_dims: &[usize], index_dims: &[usize], axis: usize) -> bool {
    let rank = data_dims.len();
    if rank == 0 {
        r.issue("data_dims", messages::empty_rank("data_dims"), None);
        return false;
    }
    if index_dims.len() != rank {
        let m = messages::rank_mismatch("index_dims", index_dims.len(), "data_dims", rank);
        r.issue("index_dims", m, None);
        return false;
    }
    if axis >= rank {
        r.issue("axis", messages::axis_past_rank(axis, rank), None);
        return false;
    }
    let mut ok = true;
    for (d, (&i, &n)) in index_dims.iter().zip(data_dims).enumerate() {
        if d != axis && i > n {
            r.issue("index_dims", messages::index_dim_past_data(d, i, n), None);
            ok = false;
        }
    }
    for (field, dims) in [("data_dims", data_dims), ("index_dims", index_dims)] {
        if !dims_fit(dims) {
            r.issue(field, messages::field_overflow(field), Some(messages::overflow_hint()));
            ok = false;
        }
    }
    ok
}

/// The element of a scatter's data, or `None` after reporting why not.
fn scatter_elem<O>(r: &mut Rules<'_, O>, dtype: DType, reduction: ScatterReduction) -> Option<Elem> {
    if !matches!(dtype.size(), 1 | 2 | 4 | 8) {
        r.issue("dtype", messages::scatter_dtype_size(dtype), None);
        return None;
    }
    if reduction != ScatterReduction::None && !REDUCE_DTYPES.contains(&dtype) {
        r.issue("reduction", messages::reduction_dtype(dtype), None);
        return None;
    }
    Some(Elem::Exact(dtype))
}

impl<O> Extents<O> for GatherElements<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let GatherElements { data, indices, dst, data_dims, index_dims, axis, elem_bytes, index_dtype } = self;
        let index_ok = r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES);
        let elem = r.byte_elem("elem_bytes", *elem_bytes);
        if !elements_shapes(r, data_dims, index_dims, *axis) {
            return;
        }
        let Some(elem) = elem else { return };
        // Any element may be looked up, so the whole of `data` is read.
        r.read("data", data, elem, data_dims, "product(data_dims)");
        if index_ok {
            r.read("indices", indices, Elem::Exact(*index_dtype), index_dims, "product(index_dims)");
        }
        r.write("dst", dst, elem, index_dims, "product(index_dims)");
    }
}

impl<O> Extents<O> for GatherNd<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let GatherNd { data, indices, dst, batch, lookups, data_dims, slice_len, elem_bytes, index_dtype } = self;
        let index_ok = r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES);
        let elem = r.byte_elem("elem_bytes", *elem_bytes);
        if !dims_fit(data_dims) {
            return r.issue("data_dims", messages::field_overflow("data_dims"), Some(messages::overflow_hint()));
        }
        let Some(elem) = elem else { return };
        let block: usize = data_dims.iter().product();
        r.read("data", data, elem, &[*batch, block, *slice_len], "batch*product(data_dims)*slice_len");
        if index_ok {
            let depth = data_dims.len();
            r.read("indices", indices, Elem::Exact(*index_dtype), &[*batch, *lookups, depth], "batch*lookups*depth");
        }
        r.write("dst", dst, elem, &[*batch, *lookups, *slice_len], "batch*lookups*slice_len");
    }
}

impl<O> Extents<O> for ScatterElements<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let ScatterElements { data, indices, updates, dst, data_dims, index_dims, axis, reduction, dtype, index_dtype } =
            self;
        let index_ok = r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES);
        let elem = scatter_elem(r, *dtype, *reduction);
        if !elements_shapes(r, data_dims, index_dims, *axis) {
            return;
        }
        let Some(elem) = elem else { return };
        // In place when `dst` is `data` itself: the kernel skips the copy.
        r.read_alias(Alias::Exact, "data", data, elem, data_dims, "product(data_dims)");
        if index_ok {
            r.read("indices", indices, Elem::Exact(*index_dtype), index_dims, "product(index_dims)");
        }
        r.read("updates", updates, elem, index_dims, "product(index_dims)");
        r.write("dst", dst, elem, data_dims, "product(data_dims)");
    }
}

impl<O> Extents<O> for ScatterNd<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let ScatterNd { data, indices, updates, dst, lookups, data_dims, slice_len, reduction, dtype, index_dtype } =
            self;
        let index_ok = r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES);
        let elem = scatter_elem(r, *dtype, *reduction);
        if !dims_fit(data_dims) {
            return r.issue("data_dims", messages::field_overflow("data_dims"), Some(messages::overflow_hint()));
        }
        let Some(elem) = elem else { return };
        let block: usize = data_dims.iter().product();
        r.read_alias(Alias::Exact, "data", data, elem, &[block, *slice_len], "product(data_dims)*slice_len");
        if index_ok {
            let depth = data_dims.len();
            r.read("indices", indices, Elem::Exact(*index_dtype), &[*lookups, depth], "lookups*depth");
        }
        r.read("updates", updates, elem, &[*lookups, *slice_len], "lookups*slice_len");
        r.write("dst", dst, elem, &[block, *slice_len], "product(data_dims)*slice_len");
    }
}
