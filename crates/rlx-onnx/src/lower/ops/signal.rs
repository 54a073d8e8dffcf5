//! `DFT` and `STFT` as products with constant matrices: every length is
//! static, so the transform along an axis is one `MatMul` of the signal
//! (its `[..., length, 1 or 2]` real or interleaved complex values
//! flattened) by a `[length * channels, bins * channels_out]` matrix of
//! twiddles computed in f64 at import time and rounded once. An O(n^2)
//! product, not an FFT: the signals of ONNX models (spectrogram front
//! ends, frames of a few hundred samples) are short, and the product runs
//! on the tuned GEMM. `STFT` gathers its frames with one `Gather`,
//! multiplies by the window, and transforms the frames the same way.

use std::f64::consts::PI;

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::R;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType};
use crate::tensor::{ConstData, ConstTensor};

/// What a transform computes.
#[derive(Clone, Copy, Debug)]
struct Transform {
    /// Samples along the axis in the input (`channels` values each).
    len_in: usize,
    channels: usize,
    /// The DFT length `N` (the input is cut or zero-padded to it).
    n: usize,
    inverse: bool,
    onesided: bool,
}

impl Transform {
    /// Bins out and values per bin: a forward one-sided transform keeps
    /// `N / 2 + 1` bins; an inverse one-sided one (irfft) gives `N` real
    /// samples.
    fn output(&self) -> (usize, usize) {
        match (self.inverse, self.onesided) {
            (false, true) => (self.n / 2 + 1, 2),
            (true, true) => (self.n, 1),
            _ => (self.n, 2),
        }
    }

    /// The matrix's `[rows, columns]`; checked against the import budget
    /// before anything else is sized by `N`.
    fn matrix_dims(&self) -> [usize; 2] {
        let (bins, out_ch) = self.output();
        [self.len_in * self.channels, bins.saturating_mul(out_ch)]
    }

    /// The `[len_in * channels, bins * out_channels]` matrix, row `k *
    /// channels + c` (input sample `k`, real or imaginary part `c`),
    /// column `j * out_channels + d`.
    fn matrix(&self) -> Vec<f32> {
        let (bins, out_ch) = self.output();
        let cols = bins * out_ch;
        let mut w = vec![0.0f32; self.len_in * self.channels * cols];
        let n = self.n as f64;
        // Samples past N are cut; an irfft reads the first N / 2 + 1 bins.
        let used =
            if self.inverse && self.onesided { self.len_in.min(self.n / 2 + 1) } else { self.len_in.min(self.n) };
        for k in 0..used {
            for j in 0..bins {
                // k * j mod N keeps the angle small, so it is exact in f64.
                let theta = 2.0 * PI * ((k * j) % self.n) as f64 / n;
                let (s, c) = theta.sin_cos();
                let row = |part: usize| (k * self.channels + part) * cols + j * out_ch;
                let entries: [(usize, usize, f64); 4] = match (self.inverse, self.onesided) {
                    // X[j] = sum x[k] e^{-i theta}
                    (false, _) => [(0, 0, c), (0, 1, -s), (1, 0, s), (1, 1, c)],
                    // x[j] = (1/N) sum X[k] e^{+i theta}
                    (true, false) => [(0, 0, c / n), (0, 1, s / n), (1, 0, -s / n), (1, 1, c / n)],
                    // Hermitian symmetry: the bins between 0 and N/2 count
                    // twice; only the real output remains.
                    (true, true) => {
                        let weight = if k == 0 || 2 * k == self.n { 1.0 } else { 2.0 };
                        [(0, 0, weight * c / n), (1, 0, -weight * s / n), (0, 1, 0.0), (1, 1, 0.0)]
                    }
                };
                for (part, d, v) in entries {
                    if part < self.channels && d < out_ch {
                        w[row(part) + d] = v as f32;
                    }
                }
            }
        }
        w
    }
}

fn ints(v: Vec<i64>) -> ConstTensor {
    ConstTensor { shape: vec![v.len()], data: ConstData::I64(v) }
}

fn perm_attr(perm: &[usize]) -> AttributeProto {
    AttributeProto {
        name: "perm".to_string(),
        r#type: AttributeType::Ints as i32,
        ints: perm.iter().map(|&p| p as i64).collect(),
        ..Default::default()
    }
}

fn shape_of(lw: &Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<Vec<usize>, ImportError> {
    Ok(match lw.value(ctx, name)? {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    })
}

/// An optional scalar integer input known at import time.
fn const_scalar(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Option<i64>, ImportError> {
    if ctx.input_name(i).is_none() {
        return Ok(None);
    }
    match lw.const_ints(ctx, i)?.1[..] {
        [v] => Ok(Some(v)),
        ref v => Err(ctx.err(format!("input {i} is {v:?}; one integer is expected"))),
    }
}

/// Applies `t` along the second-to-last axis of `x` (`[..., len_in,
/// channels]`), defining `out` as `[..., bins, out_channels]`.
fn transform_last(lw: &mut Lowerer, ctx: &NodeCtx<'_>, x: &str, t: Transform, out: &str) -> R {
    let shape = shape_of(lw, ctx, x)?;
    let lead = &shape[..shape.len() - 2];
    let [rows, cols] = t.matrix_dims();
    lw.reserve_table(ctx, "its twiddle matrix", &[rows, cols], 4)?;
    let (bins, out_ch) = t.output();
    let flat_shape = lead.iter().map(|&d| d as i64).chain([rows as i64]).collect();
    let flat_shape = lw.constant(out, "flat_shape", ints(flat_shape));
    let flat = lw.internal_name(out, "flat");
    lw.lower_part(ctx, "Reshape", &[x, &flat_shape], &[&flat], Vec::new())?;
    let matrix = ConstTensor { shape: vec![rows, cols], data: ConstData::F32(t.matrix()) };
    let matrix = lw.constant(out, "twiddles", matrix);
    let product = lw.internal_name(out, "product");
    lw.lower_part(ctx, "MatMul", &[&flat, &matrix], &[&product], Vec::new())?;
    let out_shape = lead.iter().map(|&d| d as i64).chain([bins as i64, out_ch as i64]).collect();
    let out_shape = lw.constant(out, "bins_shape", ints(out_shape));
    lw.lower_part(ctx, "Reshape", &[&product, &out_shape], &[out], Vec::new())
}

pub(crate) fn dft(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 3)?;
    let (x, _) = lw.input(ctx, 0)?;
    let shape = shape_of(lw, ctx, &x)?;
    let rank = shape.len();
    let channels = *shape.last().unwrap_or(&0);
    if rank < 3 || !(channels == 1 || channels == 2) {
        return Err(ctx.err(format!("the input has shape {shape:?}; [batch, signal..., 1 or 2] is expected")));
    }
    let axis = if lw.opset >= 20 { const_scalar(lw, ctx, 2)?.unwrap_or(-2) } else { ctx.int_attr("axis", 1)? };
    // The last axis holds the real and imaginary parts, never a signal axis.
    let a = normalize_axis(axis, rank, 0)
        .filter(|&a| a < rank - 1)
        .ok_or_else(|| ctx.err(format!("axis {axis} is out of range for a signal of rank {}", rank - 1)))?;
    let inverse = ctx.int_attr("inverse", 0)? != 0;
    let onesided = ctx.int_attr("onesided", 0)? != 0;
    if onesided && !inverse && channels == 2 {
        return Err(ctx.bad_attr("onesided", "is 1 on a complex input; a one-sided forward transform takes a real one"));
    }
    let len_in = shape[a];
    let n = match const_scalar(lw, ctx, 1)? {
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| ctx.err(format!("dft_length {n} is not positive")))?,
        None if inverse && onesided => len_in.saturating_sub(1).saturating_mul(2),
        None => len_in,
    };
    if n == 0 {
        return Err(ctx.err(format!("a transform of length 0 (axis {a} of {shape:?})")));
    }
    let t = Transform { len_in, channels, n, inverse, onesided };
    let out = ctx.node.output[0].clone();
    // The axis moved next to the channels, transformed, moved back.
    let mut perm: Vec<usize> = (0..rank - 1).filter(|&d| d != a).collect();
    perm.extend([a, rank - 1]);
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return transform_last(lw, ctx, &x, t, &out);
    }
    let moved = lw.internal_name(&out, "moved");
    lw.lower_part(ctx, "Transpose", &[&x], &[&moved], vec![perm_attr(&perm)])?;
    let done = lw.internal_name(&out, "transformed");
    transform_last(lw, ctx, &moved, t, &done)?;
    let mut back = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        back[p] = i;
    }
    lw.lower_part(ctx, "Transpose", &[&done], &[&out], vec![perm_attr(&back)])
}

/// `STFT`: frames `t * frame_step .. + frame_length` of `[batch, length,
/// 1 or 2]` gathered (`[batch, frames, frame_length, channels]`), times
/// the window, transformed along the frame (one-sided by default).
pub(crate) fn stft(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 4)?;
    let (signal, _) = lw.input(ctx, 0)?;
    let shape = shape_of(lw, ctx, &signal)?;
    let [_, length, channels] = shape[..] else {
        return Err(ctx.err(format!("the signal has shape {shape:?}; [batch, length, 1 or 2] is expected")));
    };
    if !(channels == 1 || channels == 2) {
        return Err(ctx.err(format!("the signal has shape {shape:?}; [batch, length, 1 or 2] is expected")));
    }
    let step = const_scalar(lw, ctx, 1)?.ok_or_else(|| ctx.err("frame_step is missing"))?;
    let step = usize::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| ctx.err(format!("frame_step {step} is not positive")))?;
    let window = ctx.input_name(2).map(str::to_string);
    let window_len = match &window {
        Some(w) => match shape_of(lw, ctx, w)?[..] {
            [l] => Some(l),
            ref s => return Err(ctx.err(format!("the window has shape {s:?}; one axis is expected"))),
        },
        None => None,
    };
    let frame_len = match (const_scalar(lw, ctx, 3)?, window_len) {
        (Some(f), Some(l)) if f != l as i64 => {
            return Err(ctx.err(format!("frame_length {f} differs from the window's length {l}")))
        }
        (Some(f), _) => usize::try_from(f)
            .ok()
            .filter(|&f| f > 0)
            .ok_or_else(|| ctx.err(format!("frame_length {f} is not positive")))?,
        (None, Some(l)) => l,
        (None, None) => return Err(ctx.err("neither frame_length nor a window gives the frame length")),
    };
    if frame_len > length {
        return Err(ctx.err(format!("frame_length {frame_len} exceeds the signal's {length} samples")));
    }
    let onesided = ctx.int_attr("onesided", 1)? != 0;
    if onesided && channels == 2 {
        return Err(ctx.bad_attr("onesided", "is 1 on a complex signal; a one-sided transform takes a real one"));
    }
    let frames = (length - frame_len) / step + 1;
    lw.reserve_table(ctx, "its table of frame samples", &[frames, frame_len], 8)?;
    let out = ctx.node.output[0].clone();
    let picks: Vec<i64> = (0..frames).flat_map(|t| (0..frame_len).map(move |k| (t * step + k) as i64)).collect();
    let picks =
        lw.constant(&out, "frame_samples", ConstTensor { shape: vec![frames, frame_len], data: ConstData::I64(picks) });
    let framed = lw.internal_name(&out, "frames");
    let axis =
        AttributeProto { name: "axis".to_string(), r#type: AttributeType::Int as i32, i: 1, ..Default::default() };
    lw.lower_part(ctx, "Gather", &[&signal, &picks], &[&framed], vec![axis])?;
    let windowed = match &window {
        Some(w) => {
            let column = lw.constant(&out, "window_shape", ints(vec![frame_len as i64, 1]));
            let (wc, wd) = (lw.internal_name(&out, "window_column"), lw.internal_name(&out, "windowed"));
            lw.lower_part(ctx, "Reshape", &[w, &column], &[&wc], Vec::new())?;
            lw.lower_part(ctx, "Mul", &[&framed, &wc], &[&wd], Vec::new())?;
            wd
        }
        None => framed,
    };
    let t = Transform { len_in: frame_len, channels, n: frame_len, inverse: false, onesided };
    transform_last(lw, ctx, &windowed, t, &out)
}
