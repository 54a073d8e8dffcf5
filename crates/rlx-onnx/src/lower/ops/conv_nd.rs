//! `Conv` (and `ConvTranspose`, as the convolution it equals, see
//! [`conv_transpose_nd`]) over three spatial axes or more (NCDHW...), on
//! existing kinds:
//! the input padded with zeros where a window reaches past it
//! ([`crate::lower::build::pool_nd::pad_for_windows`]), unfolded into columns by one
//! strided `Transpose` (im2col is an affine gather: output `[n, c, taps...,
//! positions...]` reads padded element `n, c, o * stride + j * dilation`
//! per axis), and one product per image and group (`Sgemm` /
//! `BatchedSgemm`: `W [c_out, c_in/g * taps]` times the image's columns
//! `[c_in * taps, positions]`, whose rows are grouped by channel, so each
//! group's rows are consecutive). A bias is one broadcast `BinaryFull`
//! `add` in place. `docs/kernels/conv.md` has the choice and its cost.

use rlx_sched::{BinaryOp, DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::row_major_strides;
use crate::lower::build::pool_nd::{pad_for_windows, Window};
use crate::lower::build::transposed::{geometry, Axis as TAxis};
use crate::lower::build::window::{axis_attr, conv_bias, conv_groups, out_size, pads, Axis};
use crate::lower::build::{binary_thunk, broadcast_into_scratch, concat_along, numel, permute_thunk, Dest, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{BatchedSgemm, GatherAxis, Sgemm, Transpose};

/// Whether input 0 has three spatial axes or more.
pub(crate) fn is_nd(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    let (_, v) = lw.input(ctx, 0)?;
    Ok(match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.len() >= 5,
    })
}

pub(crate) fn conv_nd(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
    let (c_in, c_out, c_per_group) = (xs[1], ws[0], ws[1]);
    let groups = conv_groups(ctx, c_in, c_out, c_per_group)?;
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
    let bias = conv_bias(lw, ctx, c_out)?;

    conv_core(lw, ctx, (x, &xs), w, [c_out, c_per_group, groups], &windows, bias)
}

/// The convolution of `x` (`[n, c_in, spatial...]`) with `w` (`[c_out,
/// c_per_group, window...]`, the windows' kernels) over `windows`, plus
/// `bias`, into output 0.
fn conv_core(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    (x, xs): (usize, &[usize]),
    w: usize,
    [c_out, c_per_group, groups]: [usize; 3],
    windows: &[Window],
    bias: Option<usize>,
) -> R {
    let (n, c_in, k) = (xs[0], xs[1], windows.len());
    let kernel: Vec<usize> = windows.iter().map(|w| w.kernel).collect();
    let name = ctx.node.output[0].clone();
    let taps = numel(ctx, &kernel)?;
    let positions = numel(ctx, &windows.iter().map(|w| w.output).collect::<Vec<_>>())?;
    let rows = c_in.checked_mul(taps).ok_or_else(|| ctx.err("the columns have too many rows"))?;
    let cols_shape = vec![n, rows, positions];
    // A 1x1x1 window at stride 1 without padding reads the input as it is.
    let pointwise = taps == 1 && windows.iter().all(|w| w.stride == 1 && w.pads == (0, 0));
    let cols = if pointwise {
        x
    } else {
        let Value::Data { storage: padded, shape: ps } = pad_for_windows(lw, ctx, x, xs, windows, 0.0)? else {
            return Err(ctx.err("the padded input folded to a constant"));
        };
        let st = row_major_strides(&ps);
        let mut out_dims = vec![n, c_in];
        let mut in_strides = vec![st[0], st[1]];
        out_dims.extend(&kernel);
        // A dilation or stride can exceed the tensor only on an axis
        // read once (a window of 1, an output of 1), where it is unused.
        in_strides.extend((0..k).map(|d| windows[d].dilation.saturating_mul(st[d + 2])));
        out_dims.extend(windows.iter().map(|w| w.output));
        in_strides.extend((0..k).map(|d| windows[d].stride.saturating_mul(st[d + 2])));
        let cols = lw.scratch_storage(&format!("{name}.cols"), cols_shape, DType::F32)?;
        let in_total = numel(ctx, &ps)?;
        lw.emit(
            ctx,
            Thunk::Transpose(Transpose { src: padded, dst: cols, in_total, out_dims, in_strides, elem_bytes: 4 }),
        );
        cols
    };

    let mut shape = vec![n, c_out];
    shape.extend(windows.iter().map(|w| w.output));
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    let (m, kk) = (c_out / groups, c_per_group * taps);
    if groups == 1 && n == 1 {
        lw.emit(ctx, Thunk::Sgemm(Sgemm { a: w, b: cols, c: out, m, k: kk, n: positions }));
    } else if groups == 1 {
        lw.emit(
            ctx,
            Thunk::BatchedSgemm(BatchedSgemm {
                a: w,
                b: cols,
                c: out,
                batch: n,
                m,
                k: kk,
                n: positions,
                a_bcast: true,
                b_bcast: false,
            }),
        );
    } else {
        // Per image, one product per group over consecutive matrices.
        for i in 0..n {
            let ci = lw.add_view(cols, i * rows * positions * 4, vec![groups, kk, positions]);
            let oi = lw.add_view(out, i * c_out * positions * 4, vec![groups, m, positions]);
            lw.emit(
                ctx,
                Thunk::BatchedSgemm(BatchedSgemm {
                    a: w,
                    b: ci,
                    c: oi,
                    batch: groups,
                    m,
                    k: kk,
                    n: positions,
                    a_bcast: false,
                    b_bcast: false,
                }),
            );
        }
    }
    if let Some(b) = bias {
        let full = [n, c_out, positions];
        lw.emit(ctx, binary_thunk(ctx, (out, &full), (b, &[c_out, 1]), out, &full, BinaryOp::Add, 4)?);
    }
    lw.define(ctx, 0, Value::Data { storage: out, shape })
}

/// `ConvTranspose` over three spatial axes or more, as the convolution it
/// equals: the input spread by the strides (`stride - 1` zeros after each
/// element along each axis: one `Concat` per strided axis with a block of
/// zeros), padded by `(kernel - 1) * dilation - pad` before, convolved at
/// stride 1 with the filter flipped along every window axis and its
/// channel axes swapped (`W'[g, m, c, t] = W[g, c, m, taps - 1 - t]`; at
/// import for a constant filter, by a `GatherAxis` and a `Transpose` for
/// one given at run time). Output pixel `i * stride - pad + t * dilation`
/// of the definition receives `x[i] * W[t]` exactly there. Simple and
/// exact, not fast: the spread input has `stride^k` times the elements.
pub(crate) fn conv_transpose_nd(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (x, xs) = lw.data_input(ctx, 0)?;
    // A constant filter is flipped at import (its own storage never made),
    // one given at run time by thunks.
    let filter = lw.const_input(ctx, 1)?;
    let ws = match &filter {
        Some(f) => f.shape.clone(),
        None => lw.data_input(ctx, 1)?.1,
    };
    let k = xs.len() - 2;
    let group = ctx.int_attr("group", 1)?;
    let c_in = xs[1];
    let groups = usize::try_from(group).ok().filter(|&g| g >= 1 && c_in % g == 0);
    let (Some(g), true) = (groups, ws.len() == xs.len() && ws[0] == c_in) else {
        return Err(ctx.err(format!(
            "W has shape {ws:?} for X {xs:?} and group {group}; expected [C_in, C_out / group, {k} window dims]"
        )));
    };
    if xs.contains(&0) || ws.contains(&0) {
        return Err(ctx.err(format!("empty shapes X {xs:?}, W {ws:?} are not supported")));
    }
    let (c_in_g, c_out_g, kernel) = (c_in / g, ws[1], &ws[2..]);
    let c_out = c_out_g * g;
    if let Some(ks) = ctx.ints_attr("kernel_shape")? {
        if !ks.iter().map(|&v| usize::try_from(v).ok()).eq(kernel.iter().map(|&v| Some(v))) {
            return Err(ctx.bad_attr("kernel_shape", format!("is {ks:?}; W's window is {kernel:?}")));
        }
    }
    let strides = axis_attr(ctx, "strides", k, Some(1))?;
    let dilations = axis_attr(ctx, "dilations", k, Some(1))?;
    let output_padding = match ctx.ints_attr("output_padding")? {
        None => vec![0; k],
        Some(v) if v.len() == k && (0..k).all(|d| v[d] >= 0 && (v[d] as usize) < strides[d].max(dilations[d])) => {
            v.iter().map(|&p| p as usize).collect()
        }
        Some(v) => {
            return Err(
                ctx.bad_attr("output_padding", format!("is {v:?}; expected {k} values below stride or dilation"))
            )
        }
    };
    let axes: Vec<TAxis> = (0..k)
        .map(|d| TAxis {
            input: xs[d + 2],
            kernel: kernel[d],
            stride: strides[d],
            dilation: dilations[d],
            output_padding: output_padding[d],
        })
        .collect();
    let geo = geometry(ctx, &axes)?;
    let bias = conv_bias(lw, ctx, c_out)?;
    let mut windows = Vec::with_capacity(k);
    for (d, a) in axes.iter().enumerate() {
        let (begin, output) = geo[d];
        let reach = (a.kernel - 1)
            .checked_mul(a.dilation)
            .ok_or_else(|| ctx.err(format!("the dilated window of axis {d} overflows")))?;
        let lead = reach.checked_sub(begin).ok_or_else(|| {
            ctx.bad_attr(
                "pads",
                format!(
                    "leading padding {begin} on axis {d} exceeds the dilated window ({reach}); not supported in 3-D"
                ),
            )
        })?;
        let spread =
            a.input.checked_mul(a.stride).ok_or_else(|| ctx.err(format!("the spread input of axis {d} overflows")))?;
        windows.push(Window {
            input: spread,
            kernel: a.kernel,
            stride: 1,
            dilation: a.dilation,
            pads: (lead, output.saturating_add(reach).saturating_sub(lead.saturating_add(spread))),
            output,
        });
    }
    let name = ctx.node.output[0].clone();
    let taps = numel(ctx, kernel)?;
    let flipped = match &filter {
        Some(ConstTensor { data: ConstData::F32(wv), .. }) => {
            let mut f = vec![0.0f32; wv.len()];
            for gi in 0..g {
                for m in 0..c_out_g {
                    for c in 0..c_in_g {
                        for t in 0..taps {
                            f[((gi * c_out_g + m) * c_in_g + c) * taps + t] =
                                wv[((gi * c_in_g + c) * c_out_g + m) * taps + taps - 1 - t];
                        }
                    }
                }
            }
            let shape: Vec<usize> = [c_out, c_in_g].iter().chain(kernel).copied().collect();
            lw.add_param(&format!("{name}.filter_t"), &ConstTensor { shape, data: ConstData::F32(f) })?
        }
        Some(_) => return Err(ctx.err("W must be f32")),
        None => {
            let (w, _) = lw.data_input(ctx, 1)?;
            let rows = c_in * c_out_g;
            lw.count_table(ctx, "the reversed taps", &[taps], 8)?;
            let order = ConstTensor { shape: vec![taps], data: ConstData::I64((0..taps as i64).rev().collect()) };
            let order = lw.add_param(&format!("{name}.taps_reversed"), &order)?;
            let rev = lw.scratch_storage(&format!("{name}.filter_rev"), vec![rows, taps], DType::F32)?;
            lw.emit(
                ctx,
                Thunk::GatherAxis(GatherAxis {
                    src: w,
                    indices: order,
                    dst: rev,
                    outer: rows,
                    axis_dim: taps,
                    inner: 1,
                    num_indices: taps,
                    elem_bytes: 4,
                    index_dtype: DType::I64,
                }),
            );
            let t = lw.scratch_storage(&format!("{name}.filter_t"), vec![g, c_out_g, c_in_g, taps], DType::F32)?;
            lw.emit(ctx, permute_thunk(ctx, rev, &[g, c_in_g, c_out_g, taps], &[0, 2, 1, 3], t)?);
            t
        }
    };
    let (z, zs) = spread_input(lw, ctx, x, &xs, &strides)?;
    conv_core(lw, ctx, (z, &zs), flipped, [c_out, c_in_g, g], &windows, bias)
}

/// `x` with `stride - 1` zeros after each element along each strided
/// spatial axis (`[.., in, ..]` → `[.., in * stride, ..]`): per such axis,
/// the tensor seen with a unit axis after it, and one `Concat` with a block
/// of zeros along that unit axis.
fn spread_input(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    x: usize,
    xs: &[usize],
    strides: &[usize],
) -> Result<(usize, Vec<usize>), ImportError> {
    let name = ctx.node.output[0].clone();
    let (mut cur, mut shape) = (x, xs.to_vec());
    let mut zero = None;
    for (d, &s) in strides.iter().enumerate() {
        if s == 1 {
            continue;
        }
        let ax = d + 2;
        let zero = match zero {
            Some(z) => z,
            None => {
                let c = ConstTensor { shape: vec![], data: ConstData::F32(vec![0.0]) };
                *zero.insert(lw.add_param(&format!("{name}.zero"), &c)?)
            }
        };
        let mut lifted = shape.clone();
        lifted.insert(ax + 1, 1);
        let mut gap = shape.clone();
        gap.insert(ax + 1, s - 1);
        let zeros = broadcast_into_scratch(lw, ctx, zero, &[], &gap)?;
        let pieces = [Value::Data { storage: cur, shape: lifted }, Value::Data { storage: zeros, shape: gap }];
        let Value::Data { storage, .. } =
            concat_along(lw, ctx, &pieces, ax + 1, &Dest::Scratch(format!("{name}.spread{ax}")))?
        else {
            return Err(ctx.err("the spread input folded to a constant"));
        };
        shape[ax] *= s;
        cur = storage;
    }
    Ok((cur, shape))
}
