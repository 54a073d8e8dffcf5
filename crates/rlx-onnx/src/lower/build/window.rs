//! Window geometry shared by convolutions and pooling: spatial attributes,
//! padding, output sizes, groups and the optional bias.

use crate::error::ImportError;
use crate::lower::build::pool_nd::Window;
use crate::lower::{Lowerer, NodeCtx};

/// A 2-D spatial attribute (`strides`, `dilations`): `[1, 1]` when absent.
pub(crate) fn pair_attr(ctx: &NodeCtx<'_>, name: &str) -> Result<[usize; 2], ImportError> {
    match ctx.ints_attr(name)? {
        None => Ok([1, 1]),
        Some(&[a, b]) if a >= 1 && b >= 1 => Ok([a as usize, b as usize]),
        Some(v) => Err(ctx.bad_attr(name, format!("is {v:?}; expected two positive values (2-D only)"))),
    }
}

/// The window geometry of one spatial axis.
pub(crate) struct Axis {
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
}

impl Axis {
    pub(crate) fn span(&self) -> usize {
        (self.kernel - 1).saturating_mul(self.dilation).saturating_add(1)
    }
}

/// Leading and trailing padding of each spatial axis from `pads` and
/// `auto_pad`: `[(begin_h, end_h), (begin_w, end_w), ...]`.
pub(crate) fn pads(ctx: &NodeCtx<'_>, axes: &[Axis]) -> Result<Vec<(usize, usize)>, ImportError> {
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
                    // At most `input + stride`: the window can reach past it.
                    let total = ((out.max(1) - 1) * a.stride).saturating_add(a.span()).saturating_sub(a.input);
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
pub(crate) fn out_size(
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
    if ceil && (out - 1).saturating_mul(a.stride) >= a.input.saturating_add(begin) {
        out -= 1;
    }
    Ok(out)
}

/// The 4-D NCHW shape of input `i`.
pub(crate) fn nchw(ctx: &NodeCtx<'_>, what: &str, shape: &[usize]) -> Result<[usize; 4], ImportError> {
    match *shape {
        [n, c, h, w] if n * c * h * w > 0 => Ok([n, c, h, w]),
        _ => Err(ctx.err(format!("{what} has shape {shape:?}; only non-empty 4-D NCHW tensors are supported"))),
    }
}

/// A 2-D convolution's sizes: `Conv2D`'s fields (`ph`/`pw` the leading
/// padding; the trailing one is implied by `h_out`/`w_out`).
pub(crate) struct ConvGeometry {
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
pub(crate) fn conv_geometry(
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
pub(crate) fn axis_attr(
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

/// The windows of a pooling node over `xs` (`[N, C, spatial...]`, one
/// spatial axis or more): `kernel_shape`, `strides`, `dilations`, `pads`
/// / `auto_pad` and `ceil_mode`.
pub(crate) fn pool_windows(ctx: &NodeCtx<'_>, xs: &[usize]) -> Result<Vec<Window>, ImportError> {
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

/// A convolution's `group` attribute, checked against `c_in` input
/// channels and `c_out` filters of `c_per_group` channels each.
pub(crate) fn conv_groups(
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
pub(crate) fn conv_bias(lw: &mut Lowerer, ctx: &NodeCtx<'_>, c_out: usize) -> Result<Option<usize>, ImportError> {
    if ctx.input_name(2).is_none() {
        return Ok(None);
    }
    let (b, bs) = lw.data_input(ctx, 2)?;
    if bs != [c_out] {
        return Err(ctx.err(format!("B has shape {bs:?}; expected [{c_out}]")));
    }
    Ok(Some(b))
}
