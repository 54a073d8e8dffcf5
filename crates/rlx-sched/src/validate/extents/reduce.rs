//! Reductions along a middle axis, arg-reductions, running sums and
//! products, and top-k.

use super::{product, Rules};
use crate::thunk::Thunk;
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

pub(super) fn reduce<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Reduce { src, dst, outer, axis_dim, inner, op: _ } = t else {
        unreachable!("reduce called on {:?}", t.kind())
    };
    r.read("src", src, F32, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
    r.write("dst", dst, F32, &[*outer, *inner], "outer*inner");
}

pub(super) fn arg_reduce<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::ArgReduce { src, dst, outer, axis_dim, inner, op: _, select_last: _, indices_i64 } = t else {
        unreachable!("arg_reduce called on {:?}", t.kind())
    };
    // The index of an extremum of nothing does not exist.
    let outputs = product(&[*outer, *inner]);
    r.require(*axis_dim > 0 || outputs == Some(0), "axis_dim", || messages::empty_axis("ArgReduce"));
    r.read("src", src, F32, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
    r.write("dst", dst, index_elem(*indices_i64), &[*outer, *inner], "outer*inner");
}

pub(super) fn cumsum<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Cumsum { src, dst, outer, axis_dim, inner, exclusive: _, reverse: _ } = t else {
        unreachable!("cumsum called on {:?}", t.kind())
    };
    r.read_alias(Alias::Exact, "src", src, F32, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
    r.write("dst", dst, F32, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
}

/// A running sum or product: `op` `add` or `mul`, elements f32 or i64
/// (`dtype`), in place allowed as for `Cumsum`.
pub(super) fn cumulative<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Cumulative { src, dst, outer, axis_dim, inner, op, dtype, exclusive: _, reverse: _ } = t else {
        unreachable!("cumulative called on {:?}", t.kind())
    };
    r.require(matches!(op, BinaryOp::Add | BinaryOp::Mul), "op", || messages::cumulative_op(*op));
    if !r.dtype_in("dtype", *dtype, &[DType::F32, DType::I64]) {
        return;
    }
    let elem = Elem::Exact(*dtype);
    r.read_alias(Alias::Exact, "src", src, elem, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
    r.write("dst", dst, elem, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
}

pub(super) fn top_k<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let (Thunk::TopK { src, dst, values, outer, axis_dim, k, largest: _, indices_i64 }
    | Thunk::TopKI64 { src, dst, values, outer, axis_dim, k, largest: _, indices_i64 }) = t
    else {
        unreachable!("top_k called on {:?}", t.kind())
    };
    let elem = if matches!(t, Thunk::TopKI64 { .. }) { I64 } else { F32 };
    r.require(k <= axis_dim, "k", || messages::top_k_too_large(*k, *axis_dim));
    r.read("src", src, elem, &[*outer, *axis_dim], "outer*axis_dim");
    r.write("dst", dst, index_elem(*indices_i64), &[*outer, *k], "outer*k");
    if let Some(values) = values {
        r.write("values", values, elem, &[*outer, *k], "outer*k");
    }
    // A copy of the row plus one flag byte per element.
    r.scratch("axis_dim", axis_dim.checked_mul(5), "axis_dim*5");
}
