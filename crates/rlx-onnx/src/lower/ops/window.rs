//! Sliding windows: `Conv` and `MaxPool` / `AveragePool` /
//! `Global*Pool` in 2-D (one kernel call), 1-D (as 2-D over a height of 1)
//! and, through [`crate::lower::build::pool_nd`], N-d and dilated pooling.

use rlx_sched::{ActKind, PoolKind, ReduceOp, Thunk};

use crate::error::ImportError;
use crate::lower::build::pool_nd::pool_nd;
use crate::lower::build::window::{conv_bias, conv_geometry, nchw, pool_windows, ConvGeometry};
use crate::lower::build::{only_first_output, R};
use crate::lower::dispatch;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::ConstTensor;
use rlx_sched::thunk::{Conv2D, Pool2D};

/// Whether the node's input 0 is `[N, C, L]`: a 1-D convolution or pooling.
pub(crate) fn is_1d(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    let (_, v) = lw.input(ctx, 0)?;
    Ok(match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.len() == 3,
    })
}

/// A 1-D `Conv`/`MaxPool`/`AveragePool` as the 2-D one over a height of 1:
/// the input (and weights) are viewed with a unit axis before the last,
/// the spatial attributes lifted (`[k]` → `[1, k]`, pads `[b, e]` →
/// `[0, b, 0, e]`), and the output viewed back. Views cost nothing.
pub(crate) fn as_2d(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let lift = |name: &str, values: &[i64]| -> Vec<i64> {
        match name {
            "pads" => match values {
                [b, e] => vec![0, *b, 0, *e],
                other => other.to_vec(),
            },
            "kernel_shape" | "strides" | "dilations" | "output_shape" => [1].iter().chain(values).copied().collect(),
            "output_padding" => [0].iter().chain(values).copied().collect(),
            _ => values.to_vec(),
        }
    };
    let mut node = ctx.node.clone();
    for a in &mut node.attribute {
        a.ints = lift(&a.name, &a.ints);
    }
    let lifted_name = |n: &str| format!("{n}.2d");
    for (i, input) in node.input.iter_mut().enumerate() {
        // X and W gain the unit axis; a bias stays as it is.
        if input.is_empty() || i > 1 {
            continue;
        }
        let (_, v) = lw.input(ctx, i)?;
        let rank = match &v {
            Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.len(),
        };
        if rank != 3 {
            return Err(
                ctx.err(format!("input {i} has rank {rank}; a 1-D window needs rank 3 ([N, C, L] or [M, C, K])"))
            );
        }
        let lifted = match v {
            Value::Data { storage, mut shape } => {
                shape.insert(2, 1);
                Value::Data { storage, shape }
            }
            Value::Const(mut c) => {
                c.shape.insert(2, 1);
                Value::Const(c)
            }
        };
        *input = lifted_name(input);
        lw.values.insert(input.clone(), lifted);
    }
    let real_outputs = std::mem::take(&mut node.output);
    node.output = real_outputs.iter().map(|o| if o.is_empty() { o.clone() } else { lifted_name(o) }).collect();
    let inner = NodeCtx { node: &node, label: ctx.label.clone() };
    dispatch::lower_node(lw, &inner)?;
    for (i, o) in real_outputs.iter().enumerate() {
        if o.is_empty() {
            continue;
        }
        let v = lw.values.get(&node.output[i]).cloned().ok_or_else(|| ctx.err("the 2-D form produced no output"))?;
        let Value::Data { storage, mut shape } = v else { return Err(ctx.err("a 1-D output folded to a constant")) };
        shape.remove(shape.len() - 2);
        lw.define(ctx, i, Value::Data { storage, shape })?;
    }
    Ok(())
}

/// `Conv` (2-D NCHW, OIHW weights, optional bias) → `Conv2D`.
pub(crate) fn conv(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (x, xs) = lw.data_input(ctx, 0)?;
    let (w, ws) = lw.data_input(ctx, 1)?;
    let ConvGeometry { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups } =
        conv_geometry(ctx, ["X", "W"], &xs, &ws)?;
    let bias = conv_bias(lw, ctx, c_out)?;
    let shape = vec![n, c_out, h_out, w_out];
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(
        ctx,
        Thunk::Conv2D(Conv2D {
            x,
            w,
            bias,
            out,
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            groups,
            act: ActKind::Identity,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: out, shape })
}

/// `MaxPool` / `AveragePool`: 2-D windows without dilation → one
/// `Pool2D`; 3-D, dilated, or `count_include_pad` with asymmetric padding
/// → shifted strided reads (`pool_nd`).
pub(crate) fn pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: PoolKind) -> R {
    ctx.expect_arity(1, 1)?;
    // MaxPool's `Indices` output is tracked by the shifted-read form.
    let indices = kind == PoolKind::Max && ctx.node.output.get(1).is_some_and(|o| !o.is_empty());
    if !indices {
        only_first_output(ctx)?;
    }
    let (src, xs) = lw.data_input(ctx, 0)?;
    if xs.len() < 4 || xs.contains(&0) {
        return Err(ctx.err(format!("X has shape {xs:?}; only non-empty NCHW (or NCDHW...) tensors are supported")));
    }
    // The order `Indices` counts the spatial axes in; the values do not
    // depend on it.
    let column_major = match ctx.int_attr("storage_order", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("storage_order", format!("is {v}; must be 0 (row major) or 1 (column major)"))),
    };
    let count_include_pad = match (kind, ctx.int_attr("count_include_pad", 0)?) {
        (_, 0) => false,
        (PoolKind::Mean, 1) => true,
        (_, v) => return Err(ctx.bad_attr("count_include_pad", format!("is {v}; must be 0 or 1 (AveragePool only)"))),
    };
    let windows = pool_windows(ctx, &xs)?;
    // The kernel counts padded positions as `[0, in + 2 * begin)`: right
    // only when the trailing padding equals the leading one.
    let symmetric = windows.iter().all(|w| w.pads.0 == w.pads.1);
    let dilated = windows.iter().any(|w| w.dilation != 1);
    if windows.len() != 2 || dilated || (count_include_pad && !symmetric) || indices {
        return pool_nd(lw, ctx, src, &xs, &windows, reduction(kind), count_include_pad, column_major);
    }
    let [n, c, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let [wh, ww] = [&windows[0], &windows[1]];
    let params = [wh.kernel, ww.kernel, wh.stride, ww.stride, wh.pads.0, ww.pads.0];
    pool_thunk(lw, ctx, src, [n, c, h, w], [wh.output, ww.output], params, kind, count_include_pad)
}

/// `GlobalAveragePool` / `GlobalMaxPool`: one window over each plane.
pub(crate) fn global_pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: PoolKind) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, xs) = lw.data_input(ctx, 0)?;
    let [n, c, h, w] = nchw(ctx, "X", &xs)?;
    pool_thunk(lw, ctx, src, [n, c, h, w], [1, 1], [h, w, 1, 1, 0, 0], kind, false)
}

fn pool_thunk(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    src: usize,
    [n, c, h, w]: [usize; 4],
    [h_out, w_out]: [usize; 2],
    [kh, kw, sh, sw, ph, pw]: [usize; 6],
    kind: PoolKind,
    count_include_pad: bool,
) -> R {
    let shape = vec![n, c, h_out, w_out];
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(
        ctx,
        Thunk::Pool2D(Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// The reduction of the general N-d pooling path that computes `kind`.
fn reduction(kind: PoolKind) -> ReduceOp {
    match kind {
        PoolKind::Max => ReduceOp::Max,
        PoolKind::Mean => ReduceOp::Mean,
    }
}
