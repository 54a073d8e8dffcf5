//! Reductions along a middle axis, arg-reductions, running sums and
//! products, and top-k.

use rlx_core::plan::top_k_scratch_bytes_checked;

use super::{product, Extents, Rules};
use crate::thunk::{ArgReduce, Cumulative, Reduce, TopK, TopKI64};
use crate::validate::access::{Alias, Elem, F32, I64};
use crate::validate::messages;
use crate::{BinaryOp, DType};

/// The element type of an index output: i64, or f32 holding integers.
fn index_elem(indices_i64: bool) -> Elem {
    if indices_i64 {
        I64
    } else {
        F32
    }
}

impl<O> Extents<O> for Reduce<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Reduce { src, dst, outer, axis_dim, inner, op: _ } = self;
        r.read("src", src, F32, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
        r.write("dst", dst, F32, &[*outer, *inner], "outer*inner");
    }
}

impl<O> Extents<O> for ArgReduce<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let ArgReduce { src, dst, outer, axis_dim, inner, op: _, select_last: _, indices_i64 } = self;
        // The index of an extremum of nothing does not exist.
        let outputs = product(&[*outer, *inner]);
        r.require(*axis_dim > 0 || outputs == Some(0), "axis_dim", || messages::empty_axis("ArgReduce"));
        r.read("src", src, F32, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
        r.write("dst", dst, index_elem(*indices_i64), &[*outer, *inner], "outer*inner");
    }
}

/// A running sum or product: `op` `add` or `mul`, elements f32 or i64
/// (`dtype`), in place allowed (`dst == src`).
impl<O> Extents<O> for Cumulative<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Cumulative { src, dst, outer, axis_dim, inner, op, dtype, exclusive: _, reverse: _ } = self;
        r.require(matches!(op, BinaryOp::Add | BinaryOp::Mul), "op", || messages::cumulative_op(*op));
        if !r.dtype_in("dtype", *dtype, &[DType::F32, DType::I64]) {
            return;
        }
        let elem = Elem::Exact(*dtype);
        r.read_alias(Alias::Exact, "src", src, elem, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
        r.write("dst", dst, elem, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
    }
}

/// Top-k over rows of `elem`: indices to `dst`, values to `values`.
#[allow(clippy::too_many_arguments)]
fn top_k<'a, O>(
    r: &mut Rules<'a, O>,
    [src, dst]: [&'a O; 2],
    values: &'a Option<O>,
    [outer, axis_dim, k]: [usize; 3],
    indices_i64: bool,
    elem: Elem,
) {
    r.require(k <= axis_dim, "k", || messages::top_k_too_large(k, axis_dim));
    r.read("src", src, elem, &[outer, axis_dim], "outer*axis_dim");
    r.write("dst", dst, index_elem(indices_i64), &[outer, k], "outer*k");
    if let Some(values) = values {
        r.write("values", values, elem, &[outer, k], "outer*k");
    }
    // One u32 index per row element.
    r.scratch("axis_dim", top_k_scratch_bytes_checked(axis_dim), "axis_dim*4");
}

impl<O> Extents<O> for TopK<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let TopK { src, dst, values, outer, axis_dim, k, largest: _, indices_i64 } = self;
        top_k(r, [src, dst], values, [*outer, *axis_dim, *k], *indices_i64, F32);
    }
}

impl<O> Extents<O> for TopKI64<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let TopKI64 { src, dst, values, outer, axis_dim, k, largest: _, indices_i64 } = self;
        top_k(r, [src, dst], values, [*outer, *axis_dim, *k], *indices_i64, I64);
    }
}
