//! Lowering of the neural-network ops beyond matrix products: activations
//! with parameters, normalisations, convolution, pooling and reductions.

use rlx_sched::{ActKind, ArgOp, DType, ReduceOp, Thunk};

use super::ops::{activation, numel, R};
use super::shape::normalize_axis;
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::{ConstData, ConstTensor};

/// Errors when the node asks for an output beyond the first (`Mean`,
/// `InvStdDev`, `Indices`, ...), which no thunk writes.
fn only_first_output(ctx: &NodeCtx<'_>) -> R {
    if let Some(extra) = ctx.node.output.iter().skip(1).find(|o| !o.is_empty()) {
        return Err(ctx.err(format!("output `{extra}` is not supported; only the first output is")));
    }
    Ok(())
}

/// A scale or shift of `LayerNormalization`: exactly the normalised dims
/// (leading 1s allowed); broadcasting inside them is not supported.
fn normalized_operand(ctx: &NodeCtx<'_>, what: &str, shape: &[usize], dims: &[usize]) -> R {
    let core = &shape[shape.iter().take_while(|&&d| d == 1).count()..];
    let want = &dims[dims.iter().take_while(|&&d| d == 1).count()..];
    if core != want {
        return Err(ctx.err(format!("{what} has shape {shape:?}; expected {dims:?}")));
    }
    Ok(())
}

/// The optional `Mean` and `InvStdDev` outputs of `LayerNormalization`,
/// computed as the spec's reference does: `mean(x)`, then
/// `1 / sqrt(mean((x - mean)^2) + eps)`, each of shape `[rows]` seen with
/// 1s for the normalised axes.
fn layer_norm_statistics(lw: &mut Lowerer, ctx: &NodeCtx<'_>, x: usize, shape: &[usize], a: usize, eps: f32) -> R {
    let rows = numel(ctx, &shape[..a])?;
    let h = numel(ctx, &shape[a..])?;
    let stat_shape: Vec<usize> = shape[..a].iter().copied().chain(std::iter::repeat_n(1, shape.len() - a)).collect();
    let name = ctx.node.output[0].clone();
    let wanted = |i: usize| ctx.node.output.get(i).is_some_and(|o| !o.is_empty());
    let stat = |lw: &mut Lowerer, i: usize, what: &str| {
        if wanted(i) {
            lw.output_storage(ctx, i, stat_shape.clone())
        } else {
            lw.scratch_storage(&format!("{name}.{what}"), stat_shape.clone(), DType::F32)
        }
    };
    let mean = stat(lw, 1, "mean")?;
    lw.emit(ctx, Thunk::Reduce { src: x, dst: mean, outer: rows, axis_dim: h, inner: 1, op: ReduceOp::Mean });
    let centered = lw.scratch_storage(&format!("{name}.centered"), vec![rows, h], DType::F32)?;
    let sub = super::logic::binary_thunk(
        ctx,
        (x, &[rows, h]),
        (mean, &[rows, 1]),
        centered,
        &[rows, h],
        rlx_sched::BinaryOp::Sub,
        4,
    )?;
    lw.emit(ctx, sub);
    let square = super::logic::binary_thunk(
        ctx,
        (centered, &[rows, h]),
        (centered, &[rows, h]),
        centered,
        &[rows, h],
        rlx_sched::BinaryOp::Mul,
        4,
    )?;
    lw.emit(ctx, square);
    let inv = stat(lw, 2, "inv_std_dev")?;
    lw.emit(ctx, Thunk::Reduce { src: centered, dst: inv, outer: rows, axis_dim: h, inner: 1, op: ReduceOp::Mean });
    let eps_param =
        lw.add_param(&format!("{name}.epsilon"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![eps]) })?;
    let add =
        super::logic::binary_thunk(ctx, (inv, &[rows]), (eps_param, &[]), inv, &[rows], rlx_sched::BinaryOp::Add, 4)?;
    lw.emit(ctx, add);
    lw.emit(ctx, Thunk::Activation { src: inv, dst: inv, len: rows, act: ActKind::Sqrt });
    lw.emit(ctx, Thunk::Activation { src: inv, dst: inv, len: rows, act: ActKind::Recip });
    if wanted(1) {
        lw.define(ctx, 1, Value::Data { storage: mean, shape: stat_shape.clone() })?;
    }
    if wanted(2) {
        lw.define(ctx, 2, Value::Data { storage: inv, shape: stat_shape })?;
    }
    Ok(())
}

/// `LayerNormalization` over the axes from `axis` on → `LayerNorm`.
pub(super) fn layer_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", -1);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let stash = ctx.int_attr("stash_type", 1);
    if stash != 1 {
        return Err(ctx.bad_attr("stash_type", format!("is {stash}; only 1 (float) is supported")));
    }
    let eps = ctx.float_attr("epsilon", 1e-5);
    // The axes from `axis` on are normalised together: rows of `h`.
    let h = numel(ctx, &shape[a..])?;
    let rows = numel(ctx, &shape[..a])?;
    if h == 0 || rows == 0 {
        return Err(ctx.err(format!("input shape {shape:?} is empty")));
    }
    let (g, gs) = lw.data_input(ctx, 1)?;
    normalized_operand(ctx, "Scale", &gs, &shape[a..])?;
    let b = match ctx.input_name(2) {
        Some(_) => {
            let (b, bs) = lw.data_input(ctx, 2)?;
            normalized_operand(ctx, "B", &bs, &shape[a..])?;
            Some(b)
        }
        None => None,
    };
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::LayerNorm { x, g, b, out, rows, h, eps });
    lw.define(ctx, 0, Value::Data { storage: out, shape: shape.clone() })?;
    let wanted = |i: usize| ctx.node.output.get(i).is_some_and(|o| !o.is_empty());
    if wanted(1) || wanted(2) {
        layer_norm_statistics(lw, ctx, x, &shape, a, eps)?;
    }
    Ok(())
}

/// Input `i`, when present, as an f32 scalar constant.
fn const_scalar(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Option<f32>, ImportError> {
    if ctx.input_name(i).is_none() {
        return Ok(None);
    }
    let (name, value) = lw.input(ctx, i)?;
    match value {
        Value::Const(ConstTensor { data: ConstData::F32(v), .. }) if v.len() == 1 => Ok(Some(v[0])),
        _ => Err(ctx.err(format!("input `{name}` must be an f32 scalar constant known at import time"))),
    }
}

/// `Clip`: bounds from constant inputs (opset 11+) or attributes (before);
/// a missing bound is the f32 limit, as the spec's `numeric_limits`.
pub(super) fn clip(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let (min, max) = if lw.opset >= 11 {
        ctx.expect_arity(1, 3)?;
        for attr in ["min", "max"] {
            if ctx.has_attr(attr) {
                return Err(ctx.bad_attr(attr, "is an input since opset 11, not an attribute"));
            }
        }
        (const_scalar(lw, ctx, 1)?.unwrap_or(f32::MIN), const_scalar(lw, ctx, 2)?.unwrap_or(f32::MAX))
    } else {
        ctx.expect_arity(1, 1)?;
        (ctx.float_attr("min", f32::MIN), ctx.float_attr("max", f32::MAX))
    };
    activation(lw, ctx, ActKind::Clip { min, max })
}

/// `LeakyRelu` (alpha 0.01 by default).
pub(super) fn leaky_relu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    activation(lw, ctx, ActKind::LeakyRelu { alpha: ctx.float_attr("alpha", 0.01) })
}

/// `HardSigmoid` (alpha 0.2, beta 0.5 by default).
pub(super) fn hard_sigmoid(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (alpha, beta) = (ctx.float_attr("alpha", 0.2), ctx.float_attr("beta", 0.5));
    activation(lw, ctx, ActKind::HardSigmoid { alpha, beta })
}

/// `Gelu` (opset 20): exact, or the tanh approximation.
pub(super) fn gelu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let act = match ctx.string_attr("approximate").as_deref() {
        None | Some("none") => ActKind::Gelu,
        Some("tanh") => ActKind::GeluTanh,
        Some(other) => return Err(ctx.bad_attr("approximate", format!("is `{other}`; expected `none` or `tanh`"))),
    };
    activation(lw, ctx, act)
}

/// Whether the node's input 0 is `[N, C, L]`: a 1-D convolution or pooling.
pub(super) fn is_1d(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    let (_, v) = lw.input(ctx, 0)?;
    Ok(match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.len() == 3,
    })
}

/// A 1-D `Conv`/`MaxPool`/`AveragePool` as the 2-D one over a height of 1:
/// the input (and weights) are viewed with a unit axis before the last,
/// the spatial attributes lifted (`[k]` → `[1, k]`, pads `[b, e]` →
/// `[0, b, 0, e]`), and the output viewed back. Views cost nothing.
pub(super) fn as_2d(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let lift = |name: &str, values: &[i64]| -> Vec<i64> {
        match name {
            "pads" => match values {
                [b, e] => vec![0, *b, 0, *e],
                other => other.to_vec(),
            },
            "kernel_shape" | "strides" | "dilations" => [1].iter().chain(values).copied().collect(),
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
    super::ops::lower_node(lw, &inner)?;
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

/// A 2-D spatial attribute (`strides`, `dilations`): `[1, 1]` when absent.
fn pair_attr(ctx: &NodeCtx<'_>, name: &str) -> Result<[usize; 2], ImportError> {
    match ctx.ints_attr(name) {
        None => Ok([1, 1]),
        Some(&[a, b]) if a >= 1 && b >= 1 => Ok([a as usize, b as usize]),
        Some(v) => Err(ctx.bad_attr(name, format!("is {v:?}; expected two positive values (2-D only)"))),
    }
}

/// The window geometry of one spatial axis.
struct Axis {
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
}

impl Axis {
    fn span(&self) -> usize {
        (self.kernel - 1).saturating_mul(self.dilation).saturating_add(1)
    }
}

/// Leading and trailing padding of each spatial axis from `pads` and
/// `auto_pad`: `[(begin_h, end_h), (begin_w, end_w), ...]`.
fn pads(ctx: &NodeCtx<'_>, axes: &[Axis]) -> Result<Vec<(usize, usize)>, ImportError> {
    let k = axes.len();
    let auto = ctx.string_attr("auto_pad").unwrap_or_else(|| "NOTSET".to_string());
    match auto.as_str() {
        "NOTSET" => match ctx.ints_attr("pads") {
            None => Ok(vec![(0, 0); k]),
            Some(v) if v.len() == 2 * k && v.iter().all(|&p| p >= 0) => {
                Ok((0..k).map(|d| (v[d] as usize, v[d + k] as usize)).collect())
            }
            Some(v) => Err(ctx.bad_attr("pads", format!("is {v:?}; expected {} non-negative values", 2 * k))),
        },
        "VALID" => Ok(vec![(0, 0); k]),
        "SAME_UPPER" | "SAME_LOWER" => {
            if ctx.has_attr("pads") {
                return Err(ctx.bad_attr("pads", format!("is given with auto_pad {auto}")));
            }
            Ok(axes
                .iter()
                .map(|a| {
                    let out = a.input.div_ceil(a.stride);
                    let total = ((out.max(1) - 1) * a.stride + a.span()).saturating_sub(a.input);
                    let small = total / 2;
                    if auto == "SAME_UPPER" {
                        (small, total - small)
                    } else {
                        (total - small, small)
                    }
                })
                .collect())
        }
        other => {
            Err(ctx.bad_attr("auto_pad", format!("is `{other}`; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")))
        }
    }
}

/// Output size of one axis (floor, or ceil for pooling's `ceil_mode`, where
/// a window must still start inside the input or its leading padding).
fn out_size(ctx: &NodeCtx<'_>, a: &Axis, (begin, end): (usize, usize), ceil: bool) -> Result<usize, ImportError> {
    let padded = a.input.saturating_add(begin).saturating_add(end);
    if padded < a.span() {
        return Err(ctx.err(format!(
            "the window ({} with dilation {}) is larger than the padded input ({padded})",
            a.kernel, a.dilation
        )));
    }
    let room = padded - a.span();
    let mut out = if ceil { room.div_ceil(a.stride) + 1 } else { room / a.stride + 1 };
    if ceil && (out - 1) * a.stride >= a.input.saturating_add(begin) {
        out -= 1;
    }
    Ok(out)
}

/// The 4-D NCHW shape of input `i`.
fn nchw(ctx: &NodeCtx<'_>, what: &str, shape: &[usize]) -> Result<[usize; 4], ImportError> {
    match *shape {
        [n, c, h, w] if n * c * h * w > 0 => Ok([n, c, h, w]),
        _ => Err(ctx.err(format!("{what} has shape {shape:?}; only non-empty 4-D NCHW tensors are supported"))),
    }
}

/// `Conv` (2-D NCHW, OIHW weights, optional bias) → `Conv2D`.
pub(super) fn conv(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (x, xs) = lw.data_input(ctx, 0)?;
    let (w, ws) = lw.data_input(ctx, 1)?;
    let [n, c_in, h, w_in] = nchw(ctx, "X", &xs)?;
    let [c_out, c_per_group, kh, kw] = nchw(ctx, "W", &ws)?;
    let group = ctx.int_attr("group", 1);
    let groups = usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1 && c_in % g == 0 && c_out % g == 0 && c_in / g == c_per_group)
        .ok_or_else(|| {
            ctx.bad_attr(
                "group",
                format!("is {group}; X has {c_in} channels and W {c_out} filters of {c_per_group} channels"),
            )
        })?;
    if let Some(k) = ctx.ints_attr("kernel_shape") {
        if k != [kh as i64, kw as i64] {
            return Err(ctx.bad_attr("kernel_shape", format!("is {k:?}, but W has shape {ws:?}")));
        }
    }
    let [sh, sw] = pair_attr(ctx, "strides")?;
    let [dh, dw] = pair_attr(ctx, "dilations")?;
    let axes = [
        Axis { input: h, kernel: kh, stride: sh, dilation: dh },
        Axis { input: w_in, kernel: kw, stride: sw, dilation: dw },
    ];
    let p = pads(ctx, &axes)?;
    let (ph, pw) = (p[0], p[1]);
    let h_out = out_size(ctx, &axes[0], ph, false)?;
    let w_out = out_size(ctx, &axes[1], pw, false)?;
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
    let shape = vec![n, c_out, h_out, w_out];
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(
        ctx,
        Thunk::Conv2D {
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
            ph: ph.0,
            pw: pw.0,
            dh,
            dw,
            groups,
        },
    );
    lw.define(ctx, 0, Value::Data { storage: out, shape })
}

/// A per-axis spatial attribute (`kernel_shape`, `strides`, `dilations`)
/// of `k` positive values; `default` fills an absent one.
fn axis_attr(ctx: &NodeCtx<'_>, name: &str, k: usize, default: Option<usize>) -> Result<Vec<usize>, ImportError> {
    match (ctx.ints_attr(name), default) {
        (None, Some(d)) => Ok(vec![d; k]),
        (None, None) => Err(ctx.err(format!("needs the attribute `{name}`"))),
        (Some(v), _) if v.len() == k && v.iter().all(|&x| x >= 1) => Ok(v.iter().map(|&x| x as usize).collect()),
        (Some(v), _) => Err(ctx.bad_attr(name, format!("is {v:?}; expected {k} positive values"))),
    }
}

/// `MaxPool` / `AveragePool`: 2-D windows without dilation → one
/// `Pool2D`; 3-D, dilated, or `count_include_pad` with asymmetric padding
/// → shifted strided reads (`pool_nd`).
pub(super) fn pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: ReduceOp) -> R {
    ctx.expect_arity(1, 1)?;
    // MaxPool's `Indices` output is tracked by the shifted-read form.
    let indices = kind == ReduceOp::Max && ctx.node.output.get(1).is_some_and(|o| !o.is_empty());
    if !indices {
        only_first_output(ctx)?;
    }
    let (src, xs) = lw.data_input(ctx, 0)?;
    if xs.len() < 4 || xs.contains(&0) {
        return Err(ctx.err(format!("X has shape {xs:?}; only non-empty NCHW (or NCDHW...) tensors are supported")));
    }
    let k = xs.len() - 2;
    let kernel = axis_attr(ctx, "kernel_shape", k, None)?;
    let strides = axis_attr(ctx, "strides", k, Some(1))?;
    let dilations = axis_attr(ctx, "dilations", k, Some(1))?;
    // The order `Indices` counts the spatial axes in; the values do not
    // depend on it.
    let column_major = match ctx.int_attr("storage_order", 0) {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("storage_order", format!("is {v}; must be 0 (row major) or 1 (column major)"))),
    };
    let ceil = match ctx.int_attr("ceil_mode", 0) {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("ceil_mode", format!("is {v}; must be 0 or 1"))),
    };
    let count_include_pad = match (kind, ctx.int_attr("count_include_pad", 0)) {
        (_, 0) => false,
        (ReduceOp::Mean, 1) => true,
        (_, v) => return Err(ctx.bad_attr("count_include_pad", format!("is {v}; must be 0 or 1 (AveragePool only)"))),
    };
    let axes: Vec<Axis> = (0..k)
        .map(|d| Axis { input: xs[d + 2], kernel: kernel[d], stride: strides[d], dilation: dilations[d] })
        .collect();
    let p = pads(ctx, &axes)?;
    let outs: Vec<usize> = (0..k).map(|d| out_size(ctx, &axes[d], p[d], ceil)).collect::<Result<_, _>>()?;
    // The kernel counts padded positions as `[0, in + 2 * begin)`: right
    // only when the trailing padding equals the leading one.
    let symmetric = p.iter().all(|&(b, e)| b == e);
    if k != 2 || dilations != [1, 1] || (count_include_pad && !symmetric) || indices {
        let windows: Vec<super::pool_nd::Window> = (0..k)
            .map(|d| super::pool_nd::Window {
                input: xs[d + 2],
                kernel: kernel[d],
                stride: strides[d],
                dilation: dilations[d],
                pads: p[d],
                output: outs[d],
            })
            .collect();
        return super::pool_nd::pool_nd(lw, ctx, src, &xs, &windows, kind, count_include_pad, column_major);
    }
    let [n, c, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let params = [kernel[0], kernel[1], strides[0], strides[1], p[0].0, p[1].0];
    pool_thunk(lw, ctx, src, [n, c, h, w], [outs[0], outs[1]], params, kind, count_include_pad)
}

/// `GlobalAveragePool` / `GlobalMaxPool`: one window over each plane.
pub(super) fn global_pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: ReduceOp) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, xs) = lw.data_input(ctx, 0)?;
    let [n, c, h, w] = nchw(ctx, "X", &xs)?;
    pool_thunk(lw, ctx, src, [n, c, h, w], [1, 1], [h, w, 1, 1, 0, 0], kind, false)
}

#[allow(clippy::too_many_arguments)]
fn pool_thunk(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    src: usize,
    [n, c, h, w]: [usize; 4],
    [h_out, w_out]: [usize; 2],
    [kh, kw, sh, sw, ph, pw]: [usize; 6],
    kind: ReduceOp,
    count_include_pad: bool,
) -> R {
    let shape = vec![n, c, h_out, w_out];
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad });
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// `BatchNormalization` in inference mode → `BatchNormInference`.
pub(super) fn batch_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(5, 5)?;
    let training = match ctx.int_attr("training_mode", 0) {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("training_mode", format!("is {v}; must be 0 or 1"))),
    };
    if !training {
        only_first_output(ctx)?;
    }
    if lw.opset < 7 && ctx.int_attr("is_test", 0) == 0 {
        return Err(ctx.bad_attr("is_test", "must be 1 before opset 7; only inference is supported"));
    }
    if lw.opset < 9 && ctx.int_attr("spatial", 1) != 1 {
        return Err(ctx.bad_attr("spatial", "must be 1; per-activation statistics are not supported"));
    }
    let eps = ctx.float_attr("epsilon", 1e-5);
    let (x, shape) = lw.data_input(ctx, 0)?;
    if shape.len() < 2 {
        return Err(ctx.err(format!("X has shape {shape:?}; expected [N, C, ...]")));
    }
    let (n, c) = (shape[0], shape[1]);
    let hw = numel(ctx, &shape[2..])?;
    if n * c * hw == 0 {
        return Err(ctx.err(format!("X has the empty shape {shape:?}")));
    }
    let mut per = [0usize; 4];
    for (k, what) in ["scale", "B", "input_mean", "input_var"].iter().enumerate() {
        let (id, s) = lw.data_input(ctx, k + 1)?;
        if s != [c] {
            return Err(ctx.err(format!("{what} has shape {s:?}; expected [{c}]")));
        }
        per[k] = id;
    }
    let [scale, bias, mut mean, mut var] = per;
    let running = if training {
        let (batch_mean, batch_var) = batch_statistics(lw, ctx, x, [n, c, hw])?;
        let old = (mean, var);
        (mean, var) = (batch_mean, batch_var);
        Some((old, (batch_mean, batch_var)))
    } else {
        None
    };
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps });
    lw.define(ctx, 0, Value::Data { storage: out, shape })?;
    if let Some(((old_mean, old_var), (batch_mean, batch_var))) = running {
        // running = old * momentum + batch * (1 - momentum), per channel.
        let momentum = ctx.float_attr("momentum", 0.9);
        for (i, old, batch) in [(1, old_mean, batch_mean), (2, old_var, batch_var)] {
            if ctx.node.output.get(i).is_none_or(|o| o.is_empty()) {
                continue;
            }
            let name = &ctx.node.output[i];
            let m = lw.add_param(
                &format!("{name}.momentum"),
                &ConstTensor { shape: vec![], data: ConstData::F32(vec![momentum]) },
            )?;
            let rest = lw.add_param(
                &format!("{name}.rest"),
                &ConstTensor { shape: vec![], data: ConstData::F32(vec![1.0 - momentum]) },
            )?;
            let dst = lw.output_storage(ctx, i, vec![c])?;
            let scaled = lw.scratch_storage(&format!("{name}.scaled"), vec![c], DType::F32)?;
            let mul = |a: usize, b: usize, d: usize| {
                super::logic::binary_thunk(ctx, (a, &[c]), (b, &[]), d, &[c], rlx_sched::BinaryOp::Mul, 4)
            };
            lw.emit(ctx, mul(old, m, dst)?);
            lw.emit(ctx, mul(batch, rest, scaled)?);
            lw.emit(
                ctx,
                super::logic::binary_thunk(ctx, (dst, &[c]), (scaled, &[c]), dst, &[c], rlx_sched::BinaryOp::Add, 4)?,
            );
            lw.define(ctx, i, Value::Data { storage: dst, shape: vec![c] })?;
        }
    }
    Ok(())
}

/// Per-channel mean and (population) variance of `x` seen as
/// `[n, c, hw]`: channels moved first, then `Reduce` mean of the values and
/// of the squared deviations.
fn batch_statistics(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    x: usize,
    [n, c, hw]: [usize; 3],
) -> Result<(usize, usize), ImportError> {
    let name = ctx.node.output[0].clone();
    let per_channel = lw.scratch_storage(&format!("{name}.by_channel"), vec![c, n, hw], DType::F32)?;
    let t = permute_thunk(ctx, x, &[n, c, hw], &[1, 0, 2], per_channel)?;
    lw.emit(ctx, t);
    let mean = lw.scratch_storage(&format!("{name}.batch_mean"), vec![c], DType::F32)?;
    lw.emit(
        ctx,
        Thunk::Reduce { src: per_channel, dst: mean, outer: c, axis_dim: n * hw, inner: 1, op: ReduceOp::Mean },
    );
    let dev = lw.scratch_storage(&format!("{name}.deviation"), vec![c, n * hw], DType::F32)?;
    let sub = super::logic::binary_thunk(
        ctx,
        (per_channel, &[c, n * hw]),
        (mean, &[c, 1]),
        dev,
        &[c, n * hw],
        rlx_sched::BinaryOp::Sub,
        4,
    )?;
    lw.emit(ctx, sub);
    let sq = super::logic::binary_thunk(
        ctx,
        (dev, &[c, n * hw]),
        (dev, &[c, n * hw]),
        dev,
        &[c, n * hw],
        rlx_sched::BinaryOp::Mul,
        4,
    )?;
    lw.emit(ctx, sq);
    let var = lw.scratch_storage(&format!("{name}.batch_var"), vec![c], DType::F32)?;
    lw.emit(ctx, Thunk::Reduce { src: dev, dst: var, outer: c, axis_dim: n * hw, inner: 1, op: ReduceOp::Mean });
    Ok((mean, var))
}

/// `ReduceMean` / `ReduceSum` / `ReduceMax` / `ReduceL2` over one
/// contiguous range of axes → `Reduce` over `[outer, axis_dim, inner]`.
pub(super) fn reduce(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: ReduceOp) -> R {
    ctx.expect_arity(1, 2)?;
    // Max and min of bools are any/all: exact through f32 0/1.
    let (orig, shape, dtype) = lw.typed_input(ctx, 0)?;
    let src = orig;
    let bools = dtype == DType::Bool && matches!(op, ReduceOp::Max | ReduceOp::Min) && !shape.contains(&0);
    let src = if bools {
        let t = lw.scratch_storage(&format!("{}.f32", ctx.node.output[0]), shape.clone(), DType::F32)?;
        lw.emit(ctx, Thunk::CastBoolToF32 { src, dst: t, len: numel(ctx, &shape)? });
        t
    } else if dtype != DType::F32 {
        return Err(
            ctx.err(format!("input is {} data; this reduction supports f32 (and bool for max/min)", dtype.name()))
        );
    } else {
        src
    };
    let rank = shape.len();
    // `ReduceSum` took its axes as an input from opset 13, the others
    // from opset 18.
    let input_since = if op == ReduceOp::Sum { 13 } else { 18 };
    let listed: Option<Vec<i64>> = if lw.opset >= input_since {
        if ctx.has_attr("axes") {
            return Err(ctx.bad_attr("axes", format!("is an input since opset {input_since}, not an attribute")));
        }
        match ctx.input_name(1) {
            Some(_) => Some(lw.const_ints(ctx, 1)?.1),
            None => None,
        }
    } else {
        if ctx.input_name(1).is_some() {
            return Err(ctx.err(format!("axes are an attribute before opset {input_since}, not an input")));
        }
        ctx.ints_attr("axes").map(<[i64]>::to_vec)
    };
    let keepdims = ctx.int_attr("keepdims", 1) != 0;
    let noop = ctx.int_attr("noop_with_empty_axes", 0) != 0;
    let mut axes: Vec<usize> = match listed {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|&ax| {
                normalize_axis(ax, rank, 0).ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {rank}")))
            })
            .collect::<Result<_, _>>()?,
        // No axes with `noop_with_empty_axes`: the identity, a view.
        _ if noop => return lw.define(ctx, 0, Value::Data { storage: orig, shape }),
        _ => (0..rank).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    let out_shape: Vec<usize> = (0..rank)
        .filter_map(|d| match (axes.contains(&d), keepdims) {
            (false, _) => Some(shape[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    if rank == 0 {
        return lw.define(ctx, 0, Value::Data { storage: orig, shape });
    }
    if shape.contains(&0) {
        // Nothing to read: the output is known. A reduction over no
        // elements is its identity (0 for sums, -inf for max, NaN for the
        // mean's 0/0); no output elements is an empty tensor.
        let fill = match op {
            ReduceOp::Sum | ReduceOp::L1 | ReduceOp::L2 | ReduceOp::SumSquare => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max => f32::NEG_INFINITY,
            ReduceOp::Min => f32::INFINITY,
            ReduceOp::Mean => f32::NAN,
            ReduceOp::LogSumExp => f32::NEG_INFINITY,
        };
        super::fold::check_size(ctx, &out_shape)?;
        let c = super::fold::fill(&out_shape, &ConstData::F32(vec![fill]));
        return lw.define(ctx, 0, Value::Const(c));
    }
    let (first, last) = (axes[0], axes[axes.len() - 1]);
    let (src, outer, axis_dim, inner) = if last - first + 1 == axes.len() {
        (src, numel(ctx, &shape[..first])?, numel(ctx, &shape[first..=last])?, numel(ctx, &shape[last + 1..])?)
    } else {
        // Scattered axes: move them last (in order), then one reduction.
        let perm: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).chain(axes.iter().copied()).collect();
        let moved: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let t = lw.scratch_storage(&format!("{}.moved", ctx.node.output[0]), moved, DType::F32)?;
        let thunk = permute_thunk(ctx, src, &shape, &perm, t)?;
        lw.emit(ctx, thunk);
        let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).map(|d| shape[d]).collect();
        let reduced: Vec<usize> = axes.iter().map(|&d| shape[d]).collect();
        (t, numel(ctx, &kept)?, numel(ctx, &reduced)?, 1)
    };
    if bools {
        let t = lw.scratch_storage(&format!("{}.f32max", ctx.node.output[0]), out_shape.clone(), DType::F32)?;
        lw.emit(ctx, Thunk::Reduce { src, dst: t, outer, axis_dim, inner, op });
        let dst = lw.output_storage_typed(ctx, 0, out_shape.clone(), DType::Bool)?;
        lw.emit(ctx, Thunk::CastF32ToBool { src: t, dst, len: outer * inner });
        return lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape });
    }
    let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
    lw.emit(ctx, Thunk::Reduce { src, dst, outer, axis_dim, inner, op });
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// `ArgMax` / `ArgMin` along one axis → `ArgReduce` writing int64 indices.
pub(super) fn arg_reduce(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: ArgOp) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", 0);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let keepdims = ctx.int_attr("keepdims", 1) != 0;
    let select_last = match ctx.int_attr("select_last_index", 0) {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("select_last_index", format!("is {v}; must be 0 or 1"))),
    };
    let outer = numel(ctx, &shape[..a])?;
    let inner = numel(ctx, &shape[a + 1..])?;
    let axis_dim = shape[a];
    if outer * axis_dim * inner == 0 {
        return Err(ctx.err(format!("input shape {shape:?} is empty")));
    }
    let mut out_shape = shape.clone();
    if keepdims {
        out_shape[a] = 1;
    } else {
        out_shape.remove(a);
    }
    let dst = lw.output_storage_typed(ctx, 0, out_shape.clone(), DType::I64)?;
    lw.emit(ctx, Thunk::ArgReduce { src, dst, outer, axis_dim, inner, op, select_last, indices_i64: true });
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// A `Transpose` of f32 `src` by `perm` into `dst`.
pub(super) fn permute_thunk(
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    perm: &[usize],
    dst: usize,
) -> Result<Thunk<usize>, ImportError> {
    let strides = super::shape::row_major_strides(shape);
    Ok(Thunk::Transpose {
        src,
        dst,
        in_total: numel(ctx, shape)?,
        out_dims: perm.iter().map(|&p| shape[p]).collect(),
        in_strides: perm.iter().map(|&p| strides[p]).collect(),
        elem_bytes: 4,
    })
}

/// `TopK` along one axis: values (f32) and int64 indices, largest first
/// (or smallest with `largest = 0`), always sorted (which `sorted = 0`
/// permits). A non-last axis is moved last and back with transposes.
pub(super) fn top_k(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    let (_, k) = lw.const_ints(ctx, 1)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", -1);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let k = match k.as_slice() {
        [k] => usize::try_from(*k).ok().filter(|&k| k <= shape[a]),
        _ => None,
    }
    .ok_or_else(|| ctx.err(format!("K {k:?} must be one value in 0..={}", shape[a])))?;
    let largest = ctx.int_attr("largest", 1) != 0;
    let mut out_shape = shape.clone();
    out_shape[a] = k;
    if out_shape.contains(&0) {
        for (i, dtype) in [(0, DType::F32), (1, DType::I64)] {
            let c = super::fold::empty(&out_shape, dtype).expect("f32 and i64 are carried");
            if ctx.node.output.get(i).is_some_and(|o| !o.is_empty()) {
                lw.define(ctx, i, Value::Const(c))?;
            }
        }
        return Ok(());
    }
    // Move the axis last.
    let perm: Vec<usize> = (0..rank).filter(|&d| d != a).chain([a]).collect();
    let last = a + 1 == rank;
    let moved_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let src = if last {
        x
    } else {
        let t = lw.scratch_storage(&format!("{}.moved", ctx.node.output[0]), moved_shape.clone(), DType::F32)?;
        let thunk = permute_thunk(ctx, x, &shape, &perm, t)?;
        lw.emit(ctx, thunk);
        t
    };
    let mut k_shape = moved_shape.clone();
    k_shape[rank - 1] = k;
    let outer = numel(ctx, &moved_shape[..rank - 1])?;
    let (values, indices) = if last {
        (lw.output_storage(ctx, 0, out_shape.clone())?, lw.output_storage_typed(ctx, 1, out_shape.clone(), DType::I64)?)
    } else {
        let name = &ctx.node.output[0];
        (
            lw.scratch_storage(&format!("{name}.values"), k_shape.clone(), DType::F32)?,
            lw.scratch_storage(&format!("{name}.indices"), k_shape.clone(), DType::I64)?,
        )
    };
    lw.emit(
        ctx,
        Thunk::TopK {
            src,
            dst: indices,
            values: Some(values),
            outer,
            axis_dim: shape[a],
            k,
            largest,
            indices_i64: true,
        },
    );
    if last {
        lw.define(ctx, 0, Value::Data { storage: values, shape: out_shape.clone() })?;
        return lw.define(ctx, 1, Value::Data { storage: indices, shape: out_shape });
    }
    // And back: the inverse permutation.
    let mut inverse = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let v_out = lw.output_storage(ctx, 0, out_shape.clone())?;
    let thunk = permute_thunk(ctx, values, &k_shape, &inverse, v_out)?;
    lw.emit(ctx, thunk);
    let i_out = lw.output_storage_typed(ctx, 1, out_shape.clone(), DType::I64)?;
    let mut thunk = permute_thunk(ctx, indices, &k_shape, &inverse, i_out)?;
    if let Thunk::Transpose { elem_bytes, .. } = &mut thunk {
        *elem_bytes = 8;
    }
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: v_out, shape: out_shape.clone() })?;
    lw.define(ctx, 1, Value::Data { storage: i_out, shape: out_shape })
}

/// `CumSum` of f32 along the axis given as a constant input.
pub(super) fn cum_sum(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (src, shape) = lw.data_input(ctx, 0)?;
    let (_, axis) = lw.const_ints(ctx, 1)?;
    let rank = shape.len();
    let axis = match axis.as_slice() {
        [a] => *a,
        _ => return Err(ctx.err(format!("axis {axis:?} must be one value"))),
    };
    let a =
        normalize_axis(axis, rank, 0).ok_or_else(|| ctx.err(format!("axis {axis} is out of range for rank {rank}")))?;
    if super::logic::define_if_empty(lw, ctx, &shape, DType::F32)? {
        return Ok(());
    }
    let (outer, axis_dim, inner) = (numel(ctx, &shape[..a])?, shape[a], numel(ctx, &shape[a + 1..])?);
    let exclusive = ctx.int_attr("exclusive", 0) != 0;
    let reverse = ctx.int_attr("reverse", 0) != 0;
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Cumsum { src, dst, outer, axis_dim, inner, exclusive, reverse });
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}
