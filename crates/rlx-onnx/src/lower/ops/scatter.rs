//! Indexing by run-time indices: `GatherElements`, `GatherND`,
//! `ScatterElements` (and the deprecated `Scatter`, the same op without a
//! reduction) and `ScatterND`, each one thunk of the kind of that name.
//! Data of any carried type; indices i64 or i32. Out-of-range indices at
//! run time give zeros (gathers) or skip their update (scatters): see
//! `docs/kernels/gather-scatter.md`.

use rlx_sched::{DType, ScatterReduction, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{define_if_empty, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use rlx_sched::thunk::{GatherElements, GatherNd, ScatterElements, ScatterNd};

/// Input `i` as indices: its storage, shape and type (i64 or i32).
fn indices_input(lw: &mut Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Typed, ImportError> {
    let (id, shape, dtype) = lw.typed_input(ctx, i)?;
    if !matches!(dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("indices are {}; i64 or i32 are supported", dtype.name())));
    }
    Ok((id, shape, dtype))
}

/// The `axis` attribute of the elements ops, normalised for `rank`.
fn axis_attr(ctx: &NodeCtx<'_>, rank: usize) -> Result<usize, ImportError> {
    let axis = ctx.int_attr("axis", 0)?;
    normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))
}

/// Indices of the elements ops have the data's rank (at least 1) and no
/// dim longer than the data's but on `axis`.
fn check_elements_shapes(ctx: &NodeCtx<'_>, data: &[usize], indices: &[usize], axis: usize) -> R {
    if data.is_empty() {
        return Err(ctx.err("data is a scalar; it needs a rank of at least 1"));
    }
    if indices.len() != data.len() {
        return Err(ctx.err(format!("indices of shape {indices:?} do not have the rank of data {data:?}")));
    }
    if let Some(d) = (0..data.len()).find(|&d| d != axis && indices[d] > data[d]) {
        return Err(ctx.err(format!(
            "indices of shape {indices:?} are longer than data {data:?} on axis {d}, which is not the gather axis"
        )));
    }
    Ok(())
}

/// The `reduction` attribute of the scatter ops.
fn reduction_attr(ctx: &NodeCtx<'_>, dtype: DType) -> Result<ScatterReduction, ImportError> {
    let name = ctx.string_attr("reduction")?.unwrap_or_else(|| "none".to_string());
    let reduction = ScatterReduction::from_name(&name)
        .ok_or_else(|| ctx.bad_attr("reduction", format!("is `{name}`; expected none, add, mul, max or min")))?;
    let computes = matches!(dtype, DType::F32 | DType::F64 | DType::I32 | DType::I64 | DType::Bool);
    if reduction != ScatterReduction::None && !computes {
        return Err(ctx.bad_attr(
            "reduction",
            format!("is `{name}` on {} data; reductions compute in f32, f64, i32, i64 or bool", dtype.name()),
        ));
    }
    Ok(reduction)
}

/// A storage with its shape and element type.
type Typed = (usize, Vec<usize>, DType);

/// The data input of a scatter and its updates (storage and shape), which
/// must be of the data's type.
fn scatter_operands(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> Result<(Typed, (usize, Vec<usize>)), ImportError> {
    let data = lw.typed_input(ctx, 0)?;
    let (updates, upd_shape, upd_dtype) = lw.typed_input(ctx, 2)?;
    if upd_dtype != data.2 {
        return Err(ctx.err(format!("updates are {} but data is {}", upd_dtype.name(), data.2.name())));
    }
    Ok((data, (updates, upd_shape)))
}

/// `GatherElements`: one `GatherElements` thunk.
pub(crate) fn gather_elements(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (data, data_shape, dtype) = lw.typed_input(ctx, 0)?;
    let (indices, idx_shape, index_dtype) = indices_input(lw, ctx, 1)?;
    let axis = axis_attr(ctx, data_shape.len())?;
    check_elements_shapes(ctx, &data_shape, &idx_shape, axis)?;
    if define_if_empty(lw, ctx, &idx_shape, dtype)? {
        return Ok(());
    }
    let dst = lw.output_storage_typed(ctx, 0, idx_shape.clone(), dtype)?;
    lw.emit(
        ctx,
        Thunk::GatherElements(GatherElements {
            data,
            indices,
            dst,
            data_dims: data_shape,
            index_dims: idx_shape.clone(),
            axis,
            elem_bytes: dtype.size(),
            index_dtype,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: idx_shape })
}

/// `GatherND` with `batch_dims`: one `GatherNd` thunk.
pub(crate) fn gather_nd(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (data, d, dtype) = lw.typed_input(ctx, 0)?;
    let (indices, ix, index_dtype) = indices_input(lw, ctx, 1)?;
    let (r, q) = (d.len(), ix.len());
    let b = ctx.int_attr("batch_dims", 0)?;
    let b = usize::try_from(b).ok().filter(|&b| b < r.min(q)).ok_or_else(|| {
        ctx.bad_attr("batch_dims", format!("is {b}; it must lie in 0..{} for ranks {r} and {q}", r.min(q)))
    })?;
    let k = ix[q - 1];
    if b + k > r {
        return Err(ctx.err(format!("index tuples of {k} entries over {b} batch dims exceed the data's rank {r}")));
    }
    if d[..b] != ix[..b] {
        return Err(ctx.err(format!("the batch dims of data {d:?} and indices {ix:?} differ")));
    }
    let out: Vec<usize> = ix[..q - 1].iter().chain(&d[b + k..]).copied().collect();
    if define_if_empty(lw, ctx, &out, dtype)? {
        return Ok(());
    }
    let dst = lw.output_storage_typed(ctx, 0, out.clone(), dtype)?;
    let thunk = Thunk::GatherNd(GatherNd {
        data,
        indices,
        dst,
        batch: numel(ctx, &d[..b])?,
        lookups: numel(ctx, &ix[b..q - 1])?,
        data_dims: d[b..b + k].to_vec(),
        slice_len: numel(ctx, &d[b + k..])?,
        elem_bytes: dtype.size(),
        index_dtype,
    });
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `ScatterElements`, and `Scatter` (opset 9-10: the same without a
/// reduction): one `ScatterElements` thunk.
pub(crate) fn scatter_elements(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    let ((data, data_shape, dtype), (updates, upd_shape)) = scatter_operands(lw, ctx)?;
    let (indices, idx_shape, index_dtype) = indices_input(lw, ctx, 1)?;
    let axis = axis_attr(ctx, data_shape.len())?;
    check_elements_shapes(ctx, &data_shape, &idx_shape, axis)?;
    if upd_shape != idx_shape {
        return Err(ctx.err(format!("updates of shape {upd_shape:?} differ from indices of shape {idx_shape:?}")));
    }
    let reduction = reduction_attr(ctx, dtype)?;
    if define_if_empty(lw, ctx, &data_shape, dtype)? {
        return Ok(());
    }
    let dst = lw.output_storage_typed(ctx, 0, data_shape.clone(), dtype)?;
    lw.emit(
        ctx,
        Thunk::ScatterElements(ScatterElements {
            data,
            indices,
            updates,
            dst,
            data_dims: data_shape.clone(),
            index_dims: idx_shape,
            axis,
            reduction,
            dtype,
            index_dtype,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: data_shape })
}

/// `ScatterND`: one `ScatterNd` thunk.
pub(crate) fn scatter_nd(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    let ((data, d, dtype), (updates, upd_shape)) = scatter_operands(lw, ctx)?;
    let (indices, ix, index_dtype) = indices_input(lw, ctx, 1)?;
    let Some(&k) = ix.last() else {
        return Err(ctx.err("indices are a scalar; they need a rank of at least 1"));
    };
    if k > d.len() {
        return Err(ctx.err(format!("index tuples of {k} entries exceed the data's rank {}", d.len())));
    }
    let want: Vec<usize> = ix[..ix.len() - 1].iter().chain(&d[k..]).copied().collect();
    if upd_shape != want {
        return Err(
            ctx.err(format!("updates of shape {upd_shape:?} should be {want:?} for data {d:?} and indices {ix:?}"))
        );
    }
    let reduction = reduction_attr(ctx, dtype)?;
    if define_if_empty(lw, ctx, &d, dtype)? {
        return Ok(());
    }
    let dst = lw.output_storage_typed(ctx, 0, d.clone(), dtype)?;
    let thunk = Thunk::ScatterNd(ScatterNd {
        data,
        indices,
        updates,
        dst,
        lookups: numel(ctx, &ix[..ix.len() - 1])?,
        data_dims: d[..k].to_vec(),
        slice_len: numel(ctx, &d[k..])?,
        reduction,
        dtype,
        index_dtype,
    });
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape: d })
}
