//! Sliding windows: `Conv` and `MaxPool` / `AveragePool` /
//! `Global*Pool` in 2-D (one kernel call), 1-D (as 2-D over a height of 1)
//! and, through [`super::pool_nd`], N-d and dilated pooling.

use rlx_sched::{ActKind, ReduceOp, Thunk};

use super::nn::only_first_output;
use super::ops::R;
use super::pool_nd::Window;
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::ConstTensor;
use rlx_sched::thunk::{Conv2D, Pool2D};

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
pub(super) fn pair_attr(ctx: &NodeCtx<'_>, name: &str) -> Result<[usize; 2], ImportError> {
    match ctx.ints_attr(name)? {
        None => Ok([1, 1]),
        Some(&[a, b]) if a >= 1 && b >= 1 => Ok([a as usize, b as usize]),
        Some(v) => Err(ctx.bad_attr(name, format!("is {v:?}; expected two positive values (2-D only)"))),
    }
}

/// The window geometry of one spatial axis.
pub(super) struct Axis {
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
}

impl Axis {
    fn span(&self) -> usize {
        (self.kernel - 1).saturating_mul(self.dilation).saturating_add(1)
    }
}

/// Leading and trailing padding of each spatial axis from `pads` and
/// `auto_pad`: `[(begin_h, end_h), (begin_w, end_w), ...]`.
pub(super) fn pads(ctx: &NodeCtx<'_>, axes: &[Axis]) -> Result<Vec<(usize, usize)>, ImportError> {
    let k = axes.len();
    let auto = ctx.string_attr("auto_pad")?.unwrap_or_else(|| "NOTSET".to_string());
    match auto.as_str() {
        "NOTSET" => match ctx.ints_attr("pads")? {
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
pub(super) fn out_size(
    ctx: &NodeCtx<'_>,
    a: &Axis,
    (begin, end): (usize, usize),
    ceil: bool,
) -> Result<usize, ImportError> {
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

/// A 2-D convolution's sizes: `Conv2D`'s fields (`ph`/`pw` the leading
/// padding; the trailing one is implied by `h_out`/`w_out`).
pub(super) struct ConvGeometry {
    pub n: usize,
    pub c_in: usize,
    pub h: usize,
    pub w_in: usize,
    pub c_out: usize,
    pub h_out: usize,
    pub w_out: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
    pub groups: usize,
}

/// The geometry of a 2-D convolution node with NCHW input shape `xs` and
/// OIHW weight shape `ws` (named `names` in errors) from its attributes:
/// `group`, `kernel_shape`, `strides`, `dilations`, `pads` / `auto_pad`.
pub(super) fn conv_geometry(
    ctx: &NodeCtx<'_>,
    [x_name, w_name]: [&str; 2],
    xs: &[usize],
    ws: &[usize],
) -> Result<ConvGeometry, ImportError> {
    let [n, c_in, h, w_in] = nchw(ctx, x_name, xs)?;
    let [c_out, c_per_group, kh, kw] = nchw(ctx, w_name, ws)?;
    let groups = conv_groups(ctx, c_in, c_out, c_per_group)?;
    if let Some(k) = ctx.ints_attr("kernel_shape")? {
        if k != [kh as i64, kw as i64] {
            return Err(ctx.bad_attr("kernel_shape", format!("is {k:?}, but {w_name} has shape {ws:?}")));
        }
    }
    let [sh, sw] = pair_attr(ctx, "strides")?;
    let [dh, dw] = pair_attr(ctx, "dilations")?;
    let axes = [
        Axis { input: h, kernel: kh, stride: sh, dilation: dh },
        Axis { input: w_in, kernel: kw, stride: sw, dilation: dw },
    ];
    let p = pads(ctx, &axes)?;
    let (h_out, w_out) = (out_size(ctx, &axes[0], p[0], false)?, out_size(ctx, &axes[1], p[1], false)?);
    Ok(ConvGeometry { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph: p[0].0, pw: p[1].0, dh, dw, groups })
}

/// A per-axis spatial attribute (`kernel_shape`, `strides`, `dilations`)
/// of `k` positive values; `default` fills an absent one.
pub(super) fn axis_attr(
    ctx: &NodeCtx<'_>,
    name: &str,
    k: usize,
    default: Option<usize>,
) -> Result<Vec<usize>, ImportError> {
    match (ctx.ints_attr(name)?, default) {
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
    // The order `Indices` counts the spatial axes in; the values do not
    // depend on it.
    let column_major = match ctx.int_attr("storage_order", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("storage_order", format!("is {v}; must be 0 (row major) or 1 (column major)"))),
    };
    let count_include_pad = match (kind, ctx.int_attr("count_include_pad", 0)?) {
        (_, 0) => false,
        (ReduceOp::Mean, 1) => true,
        (_, v) => return Err(ctx.bad_attr("count_include_pad", format!("is {v}; must be 0 or 1 (AveragePool only)"))),
    };
    let windows = pool_windows(ctx, &xs)?;
    // The kernel counts padded positions as `[0, in + 2 * begin)`: right
    // only when the trailing padding equals the leading one.
    let symmetric = windows.iter().all(|w| w.pads.0 == w.pads.1);
    let dilated = windows.iter().any(|w| w.dilation != 1);
    if windows.len() != 2 || dilated || (count_include_pad && !symmetric) || indices {
        return super::pool_nd::pool_nd(lw, ctx, src, &xs, &windows, kind, count_include_pad, column_major);
    }
    let [n, c, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let [wh, ww] = [&windows[0], &windows[1]];
    let params = [wh.kernel, ww.kernel, wh.stride, ww.stride, wh.pads.0, ww.pads.0];
    pool_thunk(lw, ctx, src, [n, c, h, w], [wh.output, ww.output], params, kind, count_include_pad)
}

/// The windows of a pooling node over `xs` (`[N, C, spatial...]`, one
/// spatial axis or more): `kernel_shape`, `strides`, `dilations`, `pads`
/// / `auto_pad` and `ceil_mode`.
pub(super) fn pool_windows(ctx: &NodeCtx<'_>, xs: &[usize]) -> Result<Vec<Window>, ImportError> {
    let k = xs.len() - 2;
    let kernel = axis_attr(ctx, "kernel_shape", k, None)?;
    let strides = axis_attr(ctx, "strides", k, Some(1))?;
    let dilations = axis_attr(ctx, "dilations", k, Some(1))?;
    let ceil = match ctx.int_attr("ceil_mode", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("ceil_mode", format!("is {v}; must be 0 or 1"))),
    };
    let axes: Vec<Axis> = (0..k)
        .map(|d| Axis { input: xs[d + 2], kernel: kernel[d], stride: strides[d], dilation: dilations[d] })
        .collect();
    let p = pads(ctx, &axes)?;
    // A window entirely in the padding would have nothing to pool;
    // onnxruntime refuses such pads the same way.
    if let Some(d) = (0..k).find(|&d| p[d].0 >= kernel[d] || p[d].1 >= kernel[d]) {
        return Err(
            ctx.bad_attr("pads", format!("{:?} on axis {d} must be smaller than the kernel ({})", p[d], kernel[d]))
        );
    }
    (0..k)
        .map(|d| {
            Ok(Window {
                input: xs[d + 2],
                kernel: kernel[d],
                stride: strides[d],
                dilation: dilations[d],
                pads: p[d],
                output: out_size(ctx, &axes[d], p[d], ceil)?,
            })
        })
        .collect()
}

/// `GlobalAveragePool` / `GlobalMaxPool`: one window over each plane.
pub(super) fn global_pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: ReduceOp) -> R {
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
    kind: ReduceOp,
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

/// A convolution's `group` attribute, checked against `c_in` input
/// channels and `c_out` filters of `c_per_group` channels each.
pub(super) fn conv_groups(
    ctx: &NodeCtx<'_>,
    c_in: usize,
    c_out: usize,
    c_per_group: usize,
) -> Result<usize, ImportError> {
    let group = ctx.int_attr("group", 1)?;
    usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1 && c_in.is_multiple_of(g) && c_out.is_multiple_of(g) && c_in / g == c_per_group)
        .ok_or_else(|| {
            ctx.bad_attr(
                "group",
                format!("is {group}; X has {c_in} channels and W {c_out} filters of {c_per_group} channels"),
            )
        })
}

/// A convolution's optional bias (input 2), which must be `[c_out]`.
pub(super) fn conv_bias(lw: &mut Lowerer, ctx: &NodeCtx<'_>, c_out: usize) -> Result<Option<usize>, ImportError> {
    if ctx.input_name(2).is_none() {
        return Ok(None);
    }
    let (b, bs) = lw.data_input(ctx, 2)?;
    if bs != [c_out] {
        return Err(ctx.err(format!("B has shape {bs:?}; expected [{c_out}]")));
    }
    Ok(Some(b))
}
