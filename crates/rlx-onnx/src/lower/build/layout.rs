//! Builders that move data: broadcasting into a buffer and concatenation
//! along an axis.

use rlx_sched::{DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::fold;
use crate::lower::arith::shape::broadcast_strides;
use crate::lower::build::{dest_storage, numel, Dest};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Concat, Transpose};

pub(crate) fn value_shape(v: &Value) -> Vec<usize> {
    match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    }
}

/// The element each output element of a strided read takes: output
/// coordinates over `out_dims`, source index `base + sum(c[d] * strides[d])`
/// (strides may be negative).
pub(crate) fn strided_indices(base: i64, out_dims: &[usize], strides: &[i64]) -> Vec<usize> {
    let total: usize = out_dims.iter().product();
    let mut idx = vec![0usize; out_dims.len()];
    let mut result = Vec::with_capacity(total);
    for _ in 0..total {
        let at: i64 = base + idx.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum::<i64>();
        result.push(at as usize);
        for d in (0..out_dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    result
}

/// Broadcasts storage `src` of `shape` to `out` into a new scratch storage
/// (one `Transpose` with stride-0 axes).
pub(crate) fn broadcast_into_scratch(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    out: &[usize],
) -> Result<usize, ImportError> {
    let dtype = lw.storages[src].dtype;
    let name = format!("{}.expanded", lw.storages[src].name);
    let dst = lw.scratch_storage(&name, out.to_vec(), dtype)?;
    lw.emit(ctx, broadcast_thunk(ctx, src, shape, dst, out, dtype)?);
    Ok(dst)
}

pub(crate) fn broadcast_thunk(
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    dst: usize,
    out: &[usize],
    dtype: DType,
) -> Result<Thunk<usize>, ImportError> {
    Ok(Thunk::Transpose(Transpose {
        src,
        dst,
        in_total: numel(ctx, shape)?,
        out_dims: out.to_vec(),
        in_strides: broadcast_strides(shape, out),
        elem_bytes: dtype.size(),
    }))
}

/// `pieces` (same shape but along `d`) back to back along axis `d`:
/// folded when all are constants, else one `Concat` into `dest`.
pub(crate) fn concat_along(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    pieces: &[Value],
    d: usize,
    dest: &Dest,
) -> Result<Value, ImportError> {
    let mut out_shape = value_shape(&pieces[0]);
    out_shape[d] = pieces.iter().map(|p| value_shape(p)[d]).sum();
    let outer = numel(ctx, &out_shape[..d])?;
    if out_shape.contains(&0) {
        let dtype = match &pieces[0] {
            Value::Const(c) => c.data.dtype(),
            Value::Data { storage, .. } => lw.storages[*storage].dtype,
        };
        return fold::empty(&out_shape, dtype)
            .map(Value::Const)
            .ok_or_else(|| ctx.err("empty tensors of this type are not supported"));
    }
    if pieces.iter().all(|p| matches!(p, Value::Const(_))) {
        let consts: Vec<&ConstTensor> = pieces
            .iter()
            .map(|p| match p {
                Value::Const(c) => c,
                Value::Data { .. } => unreachable!("all constant"),
            })
            .collect();
        let data = concat_consts(&consts, d, outer).ok_or_else(|| ctx.err("pieces differ in type"))?;
        return Ok(Value::Const(ConstTensor { shape: out_shape, data }));
    }
    let mut inputs = Vec::new();
    let mut inner = Vec::new();
    let mut dtype = None;
    let after_rows = numel(ctx, &out_shape[d + 1..])?;
    let name = ctx.node.output.first().cloned().unwrap_or_default();
    for (j, piece) in pieces.iter().enumerate() {
        // Pieces with no elements add nothing.
        let (id, shape) = match piece {
            Value::Const(c) if c.data.is_empty() => continue,
            Value::Const(c) => (lw.add_param(&format!("{name}.along{d}.{j}"), c)?, c.shape.clone()),
            Value::Data { shape, .. } if shape.contains(&0) => continue,
            Value::Data { storage, shape } => (*storage, shape.clone()),
        };
        let t = lw.storages[id].dtype;
        if *dtype.get_or_insert(t) != t {
            return Err(ctx.err("inputs differ in type"));
        }
        inputs.push(id);
        inner.push(shape[d] * after_rows);
    }
    let dtype = dtype.expect("a piece with elements, or the output would be empty");
    let dst = dest_storage(lw, ctx, dest, out_shape.clone(), dtype)?;
    lw.emit(ctx, Thunk::Concat(Concat { inputs, dst, outer, inner, elem_bytes: dtype.size() }));
    Ok(Value::Data { storage: dst, shape: out_shape })
}

/// The concatenation of constants along axis `a` (`outer` rows before
/// it); `None` when their types differ.
fn concat_consts(consts: &[&ConstTensor], a: usize, outer: usize) -> Option<ConstData> {
    let dtype = consts[0].data.dtype();
    if consts.iter().any(|c| c.data.dtype() != dtype) {
        return None;
    }
    let row = |c: &ConstTensor| c.shape[a..].iter().product::<usize>();
    if dtype == DType::F32 {
        let mut v = Vec::new();
        for o in 0..outer {
            for c in consts {
                let ConstData::F32(d) = &c.data else { return None };
                v.extend_from_slice(&d[o * row(c)..(o + 1) * row(c)]);
            }
        }
        return Some(ConstData::F32(v));
    }
    let ints: Vec<Vec<i64>> = consts.iter().map(|c| c.data.ints()).collect::<Option<_>>()?;
    let mut v = Vec::new();
    for o in 0..outer {
        for (c, d) in consts.iter().zip(&ints) {
            v.extend_from_slice(&d[o * row(c)..(o + 1) * row(c)]);
        }
    }
    ConstData::from_ints(dtype, v)
}
