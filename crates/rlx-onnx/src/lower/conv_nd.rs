//! `Conv` over three spatial axes or more (NCDHW...), on existing kinds:
//! the input padded with zeros where a window reaches past it
//! ([`super::pool_nd::pad_for_windows`]), unfolded into columns by one
//! strided `Transpose` (im2col is an affine gather: output `[n, c, taps...,
//! positions...]` reads padded element `n, c, o * stride + j * dilation`
//! per axis), and one product per image and group (`Sgemm` /
//! `BatchedSgemm`: `W [c_out, c_in/g * taps]` times the image's columns
//! `[c_in * taps, positions]`, whose rows are grouped by channel, so each
//! group's rows are consecutive). A bias is one broadcast `BinaryFull`
//! `add` in place. `docs/kernels/conv.md` has the choice and its cost.

use rlx_sched::{BinaryOp, DType, Thunk};

use super::logic::binary_thunk;
use super::ops::{numel, R};
use super::pool_nd::{pad_for_windows, Window};
use super::shape::row_major_strides;
use super::window::{axis_attr, out_size, pads, Axis};
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::ConstTensor;

/// Whether input 0 has three spatial axes or more.
pub(super) fn is_nd(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    let (_, v) = lw.input(ctx, 0)?;
    Ok(match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.len() >= 5,
    })
}

pub(super) fn conv_nd(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (x, xs) = lw.data_input(ctx, 0)?;
    let (w, ws) = lw.data_input(ctx, 1)?;
    let k = xs.len() - 2;
    if ws.len() != xs.len() {
        return Err(ctx.err(format!("W has shape {ws:?}; X {xs:?} needs [C_out, C_in / group, {k} window dims]")));
    }
    if xs.contains(&0) || ws.contains(&0) {
        return Err(ctx.err(format!("empty shapes X {xs:?}, W {ws:?} are not supported")));
    }
    let (n, c_in, c_out, c_per_group) = (xs[0], xs[1], ws[0], ws[1]);
    let group = ctx.int_attr("group", 1)?;
    let groups = usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1 && c_in % g == 0 && c_out % g == 0 && c_in / g == c_per_group)
        .ok_or_else(|| {
            ctx.bad_attr(
                "group",
                format!("is {group}; X has {c_in} channels and W {c_out} filters of {c_per_group} channels"),
            )
        })?;
    let kernel = &ws[2..];
    if let Some(ks) = ctx.ints_attr("kernel_shape")? {
        if !ks.iter().map(|&v| usize::try_from(v).ok()).eq(kernel.iter().map(|&v| Some(v))) {
            return Err(ctx.bad_attr("kernel_shape", format!("is {ks:?}, but W has shape {ws:?}")));
        }
    }
    let strides = axis_attr(ctx, "strides", k, Some(1))?;
    let dilations = axis_attr(ctx, "dilations", k, Some(1))?;
    let axes: Vec<Axis> = (0..k)
        .map(|d| Axis { input: xs[d + 2], kernel: kernel[d], stride: strides[d], dilation: dilations[d] })
        .collect();
    let p = pads(ctx, &axes)?;
    let windows: Vec<Window> = (0..k)
        .map(|d| {
            Ok(Window {
                input: xs[d + 2],
                kernel: kernel[d],
                stride: strides[d],
                dilation: dilations[d],
                pads: p[d],
                output: out_size(ctx, &axes[d], p[d], false)?,
            })
        })
        .collect::<Result<_, ImportError>>()?;
    let bias = match ctx.input_name(2) {
        Some(_) => {
            let (b, bs) = lw.data_input(ctx, 2)?;
            if bs != [c_out] {
                return Err(ctx.err(format!("B has shape {bs:?}; expected [{c_out}]")));
            }
            Some(b)
        }
        None => None,
    };

    let name = ctx.node.output[0].clone();
    let taps = numel(ctx, kernel)?;
    let positions = numel(ctx, &windows.iter().map(|w| w.output).collect::<Vec<_>>())?;
    let rows = c_in.checked_mul(taps).ok_or_else(|| ctx.err("the columns have too many rows"))?;
    let cols_shape = vec![n, rows, positions];
    // A 1x1x1 window at stride 1 without padding reads the input as it is.
    let pointwise = taps == 1 && windows.iter().all(|w| w.stride == 1 && w.pads == (0, 0));
    let cols = if pointwise {
        x
    } else {
        let Value::Data { storage: padded, shape: ps } = pad_for_windows(lw, ctx, x, &xs, &windows, 0.0)? else {
            return Err(ctx.err("the padded input folded to a constant"));
        };
        let st = row_major_strides(&ps);
        let mut out_dims = vec![n, c_in];
        let mut in_strides = vec![st[0], st[1]];
        out_dims.extend(kernel);
        in_strides.extend((0..k).map(|d| dilations[d] * st[d + 2]));
        out_dims.extend(windows.iter().map(|w| w.output));
        in_strides.extend((0..k).map(|d| strides[d] * st[d + 2]));
        let cols = lw.scratch_storage(&format!("{name}.cols"), cols_shape, DType::F32)?;
        let in_total = numel(ctx, &ps)?;
        lw.emit(ctx, Thunk::Transpose { src: padded, dst: cols, in_total, out_dims, in_strides, elem_bytes: 4 });
        cols
    };

    let mut shape = vec![n, c_out];
    shape.extend(windows.iter().map(|w| w.output));
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    let (m, kk) = (c_out / groups, c_per_group * taps);
    if groups == 1 && n == 1 {
        lw.emit(ctx, Thunk::Sgemm { a: w, b: cols, c: out, m, k: kk, n: positions });
    } else if groups == 1 {
        lw.emit(
            ctx,
            Thunk::BatchedSgemm {
                a: w,
                b: cols,
                c: out,
                batch: n,
                m,
                k: kk,
                n: positions,
                a_bcast: true,
                b_bcast: false,
            },
        );
    } else {
        // Per image, one product per group over consecutive matrices.
        for i in 0..n {
            let ci = lw.add_view(cols, i * rows * positions * 4, vec![groups, kk, positions]);
            let oi = lw.add_view(out, i * c_out * positions * 4, vec![groups, m, positions]);
            lw.emit(
                ctx,
                Thunk::BatchedSgemm {
                    a: w,
                    b: ci,
                    c: oi,
                    batch: groups,
                    m,
                    k: kk,
                    n: positions,
                    a_bcast: false,
                    b_bcast: false,
                },
            );
        }
    }
    if let Some(b) = bias {
        let full = [n, c_out, positions];
        lw.emit(ctx, binary_thunk(ctx, (out, &full), (b, &[c_out, 1]), out, &full, BinaryOp::Add, 4)?);
    }
    lw.define(ctx, 0, Value::Data { storage: out, shape })
}
