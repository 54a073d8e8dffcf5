//! Matrix products: `MatMul` (batched, broadcasting) and `Gemm`.

use rlx_sched::{ActKind, BinaryOp, DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::{broadcast, broadcast_strides};
use crate::lower::build::{binary_thunk, broadcast_into_scratch, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{BatchedSgemm, BiasAdd, BinaryFull, FusedMmBiasAct, Sgemm, SgemmT};

pub(crate) fn matmul(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (a, a_shape) = lw.data_input(ctx, 0)?;
    let (b, b_shape) = lw.data_input(ctx, 1)?;
    if a_shape.is_empty() || b_shape.is_empty() {
        return Err(ctx.err("scalar operands are not allowed"));
    }
    // A 1-D operand is promoted to a matrix and its axis dropped after.
    let a2: Vec<usize> = if a_shape.len() == 1 { vec![1, a_shape[0]] } else { a_shape.clone() };
    let b2: Vec<usize> = if b_shape.len() == 1 { vec![b_shape[0], 1] } else { b_shape.clone() };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (kb, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != kb {
        return Err(ctx.err(format!("inner dims differ: {a_shape:?} @ {b_shape:?}")));
    }
    let (a_batch, b_batch) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let batch_shape = broadcast(a_batch, b_batch)
        .ok_or_else(|| ctx.err(format!("batch dims of {a_shape:?} and {b_shape:?} do not broadcast")))?;
    let (a_count, b_count, batch) = (numel(ctx, a_batch)?, numel(ctx, b_batch)?, numel(ctx, &batch_shape)?);
    let mut out_shape = batch_shape.clone();
    if a_shape.len() > 1 {
        out_shape.push(m);
    }
    if b_shape.len() > 1 {
        out_shape.push(n);
    }
    let c = lw.output_storage(ctx, 0, out_shape.clone())?;
    let thunk = if b_count == 1 {
        // Every batch uses the one matrix b: fold the batch into the rows
        // of one product (a is contiguous).
        let rows = a_count.checked_mul(m).ok_or_else(|| ctx.err("too many rows"))?;
        Thunk::Sgemm(Sgemm { a, b, c, m: rows, k, n })
    } else if a_count == 1 {
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: true, b_bcast: false })
    } else if a_count == batch && b_count == batch {
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: false, b_bcast: false })
    } else {
        // Batch dims that broadcast both ways: each operand is expanded to
        // the full batch first (one stride-0 `Transpose` each).
        let full =
            |rows: usize, cols: usize| -> Vec<usize> { batch_shape.iter().copied().chain([rows, cols]).collect() };
        let (a_full, b_full) = (full(m, k), full(k, n));
        let a = if a_count == batch { a } else { broadcast_into_scratch(lw, ctx, a, &a2, &a_full)? };
        let b = if b_count == batch { b } else { broadcast_into_scratch(lw, ctx, b, &b2, &b_full)? };
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: false, b_bcast: false })
    };
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: c, shape: out_shape })
}

pub(crate) fn gemm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (alpha, beta) = (ctx.float_attr("alpha", 1.0)?, ctx.float_attr("beta", 1.0)?);
    let flag = |name: &str| -> Result<bool, ImportError> {
        match ctx.int_attr(name, 0)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ctx.bad_attr(name, format!("is {v}; must be 0 or 1"))),
        }
    };
    let (ta, tb) = (flag("transA")?, flag("transB")?);
    let (a, a_shape) = lw.data_input(ctx, 0)?;
    let (b, b_shape) = lw.data_input(ctx, 1)?;
    if a_shape.len() != 2 || b_shape.len() != 2 {
        return Err(ctx.err(format!("A and B must be matrices, got {a_shape:?} and {b_shape:?}")));
    }
    let (m, k) = if ta { (a_shape[1], a_shape[0]) } else { (a_shape[0], a_shape[1]) };
    let (kb, n) = if tb { (b_shape[1], b_shape[0]) } else { (b_shape[0], b_shape[1]) };
    if k != kb {
        return Err(ctx.err(format!("inner dims differ: {a_shape:?} (transA={ta}) and {b_shape:?} (transB={tb})")));
    }
    let out = vec![m, n];
    let bias = match ctx.input_name(2) {
        // `beta = 0` drops C, as the spec's formula does.
        Some(_) if beta != 0.0 => {
            let (c_id, c_shape) = scaled_input(lw, ctx, 2, beta)?;
            if broadcast(&c_shape, &out).as_deref() != Some(out.as_slice()) {
                return Err(ctx.err(format!("C of shape {c_shape:?} does not broadcast to {out:?}")));
            }
            Some((c_id, c_shape))
        }
        _ => None,
    };
    let y = lw.output_storage(ctx, 0, out.clone())?;
    let row_bias = |s: &[usize]| s == [n] || s == [1, n];
    match bias {
        Some((c_id, c_shape)) if !ta && !tb && alpha == 1.0 && row_bias(&c_shape) => {
            lw.emit(
                ctx,
                Thunk::FusedMmBiasAct(FusedMmBiasAct { a, w: b, bias: c_id, c: y, m, k, n, act: ActKind::Identity }),
            );
        }
        bias => {
            let product = if ta || tb {
                Thunk::SgemmT(SgemmT { a, b, c: y, m, k, n, ta, tb })
            } else {
                Thunk::Sgemm(Sgemm { a, b, c: y, m, k, n })
            };
            lw.emit(ctx, product);
            if alpha != 1.0 {
                let scale = lw.add_param(
                    &format!("{}.alpha", ctx.node.output[0]),
                    &ConstTensor { shape: vec![], data: ConstData::F32(vec![alpha]) },
                )?;
                lw.emit(ctx, binary_thunk(ctx, (y, &out), (scale, &[]), y, &out, BinaryOp::Mul, 4)?);
            }
            match bias {
                None => {}
                Some((c_id, c_shape)) if row_bias(&c_shape) => {
                    lw.emit(ctx, Thunk::BiasAdd(BiasAdd { src: y, bias: c_id, dst: y, rows: m, cols: n }));
                }
                Some((c_id, c_shape)) => {
                    let len = numel(ctx, &out)?;
                    let c_len = numel(ctx, &c_shape)?;
                    // y is read element for element, so the in-place
                    // add is an exact alias the validator allows.
                    lw.emit(
                        ctx,
                        Thunk::BinaryFull(BinaryFull {
                            lhs: y,
                            rhs: c_id,
                            dst: y,
                            len,
                            lhs_len: len,
                            rhs_len: c_len,
                            op: BinaryOp::Add,
                            out_dims_bcast: out.clone(),
                            bcast_lhs_strides: broadcast_strides(&out, &out),
                            bcast_rhs_strides: broadcast_strides(&c_shape, &out),
                            elem_bytes: 4,
                        }),
                    );
                }
            }
        }
    }
    lw.define(ctx, 0, Value::Data { storage: y, shape: out })
}

/// Input `i` (f32) times `factor`: the input itself when `factor` is 1,
/// a folded constant for a constant, else one `BinaryFull` into scratch.
fn scaled_input(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    i: usize,
    factor: f32,
) -> Result<(usize, Vec<usize>), ImportError> {
    if factor == 1.0 {
        return lw.data_input(ctx, i);
    }
    if let Some(c) = lw.const_input(ctx, i)? {
        if let ConstData::F32(v) = &c.data {
            let scaled =
                ConstTensor { shape: c.shape.clone(), data: ConstData::F32(v.iter().map(|x| x * factor).collect()) };
            let name = format!("{}.scaled", ctx.input_name(i).unwrap_or_default());
            return Ok((lw.add_param(&name, &scaled)?, c.shape));
        }
    }
    let (id, shape) = lw.data_input(ctx, i)?;
    let f = lw.add_param(
        &format!("{}.factor", ctx.node.output[0]),
        &ConstTensor { shape: vec![], data: ConstData::F32(vec![factor]) },
    )?;
    let dst = lw.scratch_storage(&format!("{}.scaled", ctx.node.output[0]), shape.clone(), DType::F32)?;
    lw.emit(ctx, binary_thunk(ctx, (id, &shape), (f, &[]), dst, &shape, BinaryOp::Mul, 4)?);
    Ok((dst, shape))
}
