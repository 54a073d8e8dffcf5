//! `DepthToSpace` and `SpaceToDepth`: a reshape of the 4-D input to 6-D,
//! one `Transpose`, and a reshape back, for every carried type. The
//! reshapes are free (row-major views), so each op is one strided copy.

use rlx_sched::{DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::row_major_strides;
use crate::lower::build::{define_if_empty, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use rlx_sched::thunk::Transpose;

/// The `blocksize` attribute (required, at least 1).
fn block_size(ctx: &NodeCtx<'_>) -> Result<usize, ImportError> {
    if !ctx.has_attr("blocksize") {
        return Err(ctx.bad_attr("blocksize", "is required"));
    }
    let b = ctx.int_attr("blocksize", 0)?;
    usize::try_from(b)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| ctx.bad_attr("blocksize", format!("is {b}; must be >= 1")))
}

/// The `[N, C, H, W]` input with its storage and type.
fn nchw(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> Result<(usize, [usize; 4], DType), ImportError> {
    ctx.expect_arity(1, 1)?;
    let (src, shape, dtype) = lw.typed_input(ctx, 0)?;
    match shape.as_slice() {
        &[n, c, h, w] => Ok((src, [n, c, h, w], dtype)),
        _ => Err(ctx.err(format!("input must be 4-D [N, C, H, W], got {shape:?}"))),
    }
}

/// Output 0 as `src` seen as `view` and permuted by `perm`, with shape `out`.
fn permuted(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    (src, dtype): (usize, DType),
    view: &[usize],
    perm: &[usize],
    out: Vec<usize>,
) -> R {
    if define_if_empty(lw, ctx, &out, dtype)? {
        return Ok(());
    }
    let strides = row_major_strides(view);
    let dst = lw.output_storage_typed(ctx, 0, out.clone(), dtype)?;
    let thunk = Thunk::Transpose(Transpose {
        src,
        dst,
        in_total: numel(ctx, view)?,
        out_dims: perm.iter().map(|&p| view[p]).collect(),
        in_strides: perm.iter().map(|&p| strides[p]).collect(),
        elem_bytes: dtype.size(),
    });
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `DepthToSpace`: channel blocks become `b x b` spatial blocks. `DCR`
/// (the default) takes the block offset from the outer channel bits,
/// `CRD` from the inner ones.
pub(crate) fn depth_to_space(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let (src, [n, c, h, w], dtype) = nchw(lw, ctx)?;
    let b = block_size(ctx)?;
    let bb = b.checked_mul(b).filter(|&bb| c % bb == 0).ok_or_else(|| {
        ctx.err(format!("channels {c} are not a multiple of blocksize^2 = {}", b as u128 * b as u128))
    })?;
    let cb = c / bb;
    let (view, perm) = match ctx.string_attr("mode")?.as_deref() {
        None | Some("DCR") => (vec![n, b, b, cb, h, w], [0, 3, 4, 1, 5, 2]),
        Some("CRD") => (vec![n, cb, b, b, h, w], [0, 1, 4, 2, 5, 3]),
        Some(other) => return Err(ctx.bad_attr("mode", format!("is `{other}`; expected `DCR` or `CRD`"))),
    };
    permuted(lw, ctx, (src, dtype), &view, &perm, vec![n, cb, h * b, w * b])
}

/// `SpaceToDepth`: the inverse of `DepthToSpace` in `DCR` mode.
pub(crate) fn space_to_depth(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let (src, [n, c, h, w], dtype) = nchw(lw, ctx)?;
    let b = block_size(ctx)?;
    if h % b != 0 || w % b != 0 {
        return Err(ctx.err(format!("spatial dims {h}x{w} are not multiples of blocksize {b}")));
    }
    let (hb, wb) = (h / b, w / b);
    permuted(lw, ctx, (src, dtype), &[n, c, hb, b, wb, b], &[0, 3, 5, 1, 2, 4], vec![n, c * b * b, hb, wb])
}
