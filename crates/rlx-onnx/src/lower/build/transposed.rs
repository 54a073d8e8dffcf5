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
    /// + (kernel - 1) * dilation + 1`; `None` past `usize`.
    pub(crate) fn full(&self) -> Option<usize> {
        let reach = (self.kernel.checked_sub(1)?).checked_mul(self.dilation)?;
        self.stride
            .checked_mul(self.input.checked_sub(1)?)?
            .checked_add(self.output_padding)?
            .checked_add(reach)?
            .checked_add(1)
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
    let full: Vec<usize> = axes
        .iter()
        .enumerate()
        .map(|(d, a)| a.full().ok_or_else(|| ctx.err(format!("the output size along axis {d} is out of range"))))
        .collect::<Result<_, _>>()?;
    // The leading part of `total` padding, split as the spec's SAME_UPPER
    // (more at the end) or otherwise (more at the start), halving with
    // floor division as its reference does: a negative total (an
    // `output_shape` past the full size) leaves the extra pixels at the end.
    let split = |total: i64, upper: bool| if upper { total.div_euclid(2) } else { total - total.div_euclid(2) };
    let from_out = |out: &[usize], upper: bool| -> Result<Vec<(usize, usize)>, ImportError> {
        let mut g = Vec::with_capacity(k);
        for d in 0..k {
            // Both sizes fit `usize`, so their difference fits `i128`.
            let total = i64::try_from(full[d] as i128 - out[d] as i128)
                .map_err(|_| ctx.err(format!("the padding along axis {d} overflows")))?;
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
            (0..k)
                .map(|d| {
                    let (begin, end) = (pads[d], pads[d + k]);
                    let out =
                        begin.checked_add(end).and_then(|p| full[d].checked_sub(p)).filter(|&o| o > 0).ok_or_else(
                            || {
                                ctx.bad_attr(
                                    "pads",
                                    format!("{pads:?} leave no output along axis {d} (full size {})", full[d]),
                                )
                            },
                        )?;
                    Ok((begin, out))
                })
                .collect()
        }
        "VALID" => Ok(full.iter().map(|&f| (0, f)).collect()),
        "SAME_UPPER" | "SAME_LOWER" => {
            let out: Vec<usize> = axes
                .iter()
                .map(|a| a.input.checked_mul(a.stride).ok_or_else(|| ctx.err("the output size overflows")))
                .collect::<Result<_, _>>()?;
            from_out(&out, auto == "SAME_UPPER")
        }
        other => {
            Err(ctx.bad_attr("auto_pad", format!("is `{other}`; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")))
        }
    }
}
