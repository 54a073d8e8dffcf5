//! The geometry of transposed convolutions: per-axis output sizes and the
//! leading padding, from `output_shape`, `auto_pad` or `pads`.

use crate::error::ImportError;
use crate::lower::NodeCtx;

/// One spatial axis: input size, window, stride, dilation, output padding.
#[derive(Clone, Copy)]
pub(crate) struct Axis {
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    pub output_padding: usize,
}

impl Axis {
    /// The output size with no padding: `stride * (in - 1) + output_padding
    /// + (kernel - 1) * dilation + 1`.
    pub(crate) fn full(&self) -> usize {
        self.stride * (self.input - 1) + self.output_padding + (self.kernel - 1) * self.dilation + 1
    }
}

/// `pads` of a `k`-D window as `[begin..., end...]`, zeros when absent.
fn pads_n(ctx: &NodeCtx<'_>, k: usize) -> Result<Vec<usize>, ImportError> {
    match ctx.ints_attr("pads")? {
        None => Ok(vec![0; 2 * k]),
        Some(v) if v.len() == 2 * k && v.iter().all(|&p| p >= 0) => Ok(v.iter().map(|&p| p as usize).collect()),
        Some(v) => Err(ctx.bad_attr("pads", format!("is {v:?}; expected {} non-negative values", 2 * k))),
    }
}

/// `pads` of a 2-D window as `[hb, wb, he, we]`, zeros when absent.
pub(crate) fn pads4(ctx: &NodeCtx<'_>) -> Result<[usize; 4], ImportError> {
    let p = pads_n(ctx, 2)?;
    Ok([p[0], p[1], p[2], p[3]])
}

/// `(leading pad, output size)` per axis, from `output_shape`, `auto_pad`
/// or `pads` as the spec orders them.
pub(crate) fn geometry(ctx: &NodeCtx<'_>, axes: &[Axis]) -> Result<Vec<(usize, usize)>, ImportError> {
    let k = axes.len();
    let auto = ctx.string_attr("auto_pad")?.unwrap_or_else(|| "NOTSET".to_string());
    // The leading part of `total` padding, split as the spec's SAME_UPPER
    // (more at the end) or otherwise (more at the start), halving with
    // floor division as its reference does: a negative total (an
    // `output_shape` past the full size) leaves the extra pixels at the end.
    let split = |total: i64, upper: bool| if upper { total.div_euclid(2) } else { total - total.div_euclid(2) };
    let from_out = |out: &[usize], upper: bool| -> Result<Vec<(usize, usize)>, ImportError> {
        let mut g = Vec::with_capacity(k);
        for (d, a) in axes.iter().enumerate() {
            let total = a.full() as i64 - out[d] as i64;
            let begin = split(total, upper);
            if begin < 0 {
                return Err(ctx.err(format!(
                    "output size {} along axis {d} needs negative padding ({total} in total), which is not supported",
                    out[d]
                )));
            }
            g.push((begin as usize, out[d]));
        }
        Ok(g)
    };
    if let Some(shape) = ctx.ints_attr("output_shape")? {
        let spatial = &shape[shape.len().saturating_sub(k)..];
        if spatial.len() != k || spatial.iter().any(|&v| v < 1) {
            return Err(ctx.bad_attr("output_shape", format!("is {shape:?}; expected {k} positive spatial sizes")));
        }
        let out: Vec<usize> = spatial.iter().map(|&v| v as usize).collect();
        return from_out(&out, auto == "SAME_UPPER");
    }
    match auto.as_str() {
        "NOTSET" => {
            let pads = pads_n(ctx, k)?;
            axes.iter()
                .enumerate()
                .map(|(d, a)| {
                    let (begin, end) = (pads[d], pads[d + k]);
                    let out = a.full().checked_sub(begin + end).filter(|&o| o > 0).ok_or_else(|| {
                        ctx.bad_attr(
                            "pads",
                            format!("{pads:?} leave no output along axis {d} (full size {})", a.full()),
                        )
                    })?;
                    Ok((begin, out))
                })
                .collect()
        }
        "VALID" => Ok(axes.iter().map(|a| (0, a.full())).collect()),
        "SAME_UPPER" | "SAME_LOWER" => {
            let out: Vec<usize> = axes.iter().map(|a| a.input * a.stride).collect();
            from_out(&out, auto == "SAME_UPPER")
        }
        other => {
            Err(ctx.bad_attr("auto_pad", format!("is `{other}`; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")))
        }
    }
}
