//! Ops the importer composes from others or computes at import time:
//! `Tile` (a view, an `Expand`, a view), `BitCast` (a byte copy into a
//! buffer of the new type), the window functions `HannWindow`,
//! `HammingWindow` and `BlackmanWindow` (constants: their only input is a
//! size known at import time), and `CenterCropPad` (a `Slice` and a `Pad`).

use rlx_sched::{DType, Thunk};

use crate::proto::{AttributeProto, AttributeType};

use crate::lower::arith::fold;
use crate::lower::arith::shape::{normalize_axis, row_major_strides};
use crate::lower::build::{define_if_empty, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{dtype_of, interface_dtype_of, ConstData, ConstTensor};
use rlx_sched::thunk::Narrow;

/// `Tile`: `x` of shape `[d0, d1, ...]` viewed as `[1, d0, 1, d1, ...]`,
/// expanded to `[r0, d0, r1, d1, ...]` (the one copy), viewed as
/// `[r0 * d0, r1 * d1, ...]`. A constant folds.
pub(crate) fn tile(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (x, input) = lw.input(ctx, 0)?;
    let shape = match &input {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let (_, repeats) = lw.const_ints(ctx, 1)?;
    if repeats.len() != shape.len() {
        return Err(ctx.err(format!("repeats {repeats:?} must have one entry per axis of the input {shape:?}")));
    }
    let repeats: Vec<usize> = repeats
        .iter()
        .map(|&r| usize::try_from(r).map_err(|_| ctx.err(format!("repeats {repeats:?} has a negative entry"))))
        .collect::<Result<_, _>>()?;
    let out: Vec<usize> = shape
        .iter()
        .zip(&repeats)
        .map(|(&d, &r)| {
            d.checked_mul(r).ok_or_else(|| ctx.err(format!("repeating {shape:?} by {repeats:?} overflows")))
        })
        .collect::<Result<_, _>>()?;
    let dtype = match &input {
        Value::Data { storage, .. } => lw.storages[*storage].dtype,
        Value::Const(c) => c.data.dtype(),
    };
    if define_if_empty(lw, ctx, &out, dtype)? {
        return Ok(());
    }
    let ints = |v: Vec<usize>| ConstTensor {
        shape: vec![v.len()],
        data: ConstData::I64(v.into_iter().map(|d| d as i64).collect()),
    };
    let output = ctx.node.output[0].clone();
    let spread = lw.constant(&output, "spread_shape", ints(shape.iter().flat_map(|&d| [1, d]).collect()));
    let repeated =
        lw.constant(&output, "repeated_shape", ints(repeats.iter().zip(&shape).flat_map(|(&r, &d)| [r, d]).collect()));
    let out_shape = lw.constant(&output, "shape", ints(out));
    let (a, b) = (lw.internal_name(&output, "spread"), lw.internal_name(&output, "repeated"));
    lw.lower_part(ctx, "Reshape", &[&x, &spread], &[&a], Vec::new())?;
    lw.lower_part(ctx, "Expand", &[&a, &repeated], &[&b], Vec::new())?;
    lw.lower_part(ctx, "Reshape", &[&b, &out_shape], &[&output], Vec::new())
}

/// `BitCast`: the bits of each element read as type `to`, of the same
/// size. Only between types held as themselves: FLOAT16, BFLOAT16 and
/// DOUBLE are computed in f32 here, so their bits are not at hand.
pub(crate) fn bit_cast(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let to_attr = ctx.int_attr("to", 0)?;
    let onnx_to = i32::try_from(to_attr).unwrap_or(0);
    let to = match (dtype_of(onnx_to), interface_dtype_of(onnx_to)) {
        (Some(d), Some(i)) if d == i => d,
        _ => {
            return Err(ctx.bad_attr(
                "to",
                format!(
                    "is {} ({to_attr}); BitCast reaches the types held as themselves \
                     (not FLOAT16, BFLOAT16 or DOUBLE, computed in f32 here)",
                    crate::tensor::data_type_name(onnx_to)
                ),
            ))
        }
    };
    let (_, input) = lw.input(ctx, 0)?;
    let (from, shape) = match &input {
        Value::Data { storage, shape } => (lw.storages[*storage].dtype, shape.clone()),
        Value::Const(c) => (c.data.dtype(), c.shape.clone()),
    };
    // A bool's byte is 0 or 1, a valid value of any 1-byte type; the other
    // way, a byte of 2 would be no bool.
    if from.size() != to.size() || to == DType::Bool {
        return Err(ctx.err(format!(
            "the input is held as {from} ({} bytes), `to` is {to} ({} bytes): BitCast needs one size and \
             a type other than bool to reach (a FLOAT16, BFLOAT16 or DOUBLE input is held as f32)",
            from.size(),
            to.size()
        )));
    }
    if let Value::Const(c) = input {
        let data = ConstData::from_le_bytes(to, &c.data.to_le_bytes()).expect("sizes checked");
        return lw.define(ctx, 0, Value::Const(ConstTensor { shape, data }));
    }
    if define_if_empty(lw, ctx, &shape, to)? {
        return Ok(());
    }
    let (src, _, _) = lw.typed_input(ctx, 0)?;
    let len = numel(ctx, &shape)?;
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), to)?;
    let elem_bytes = to.size();
    lw.emit(
        ctx,
        Thunk::Narrow(Narrow { src, dst, outer: 1, src_stride: len, dst_stride: len, inner: len, elem_bytes }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// The window functions: `w[n] = sum_i a_i cos(2 pi i n / N)` with `N` the
/// size (`periodic`, the default) or the size minus 1 (symmetric),
/// evaluated in f64 at import time and rounded once.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Window {
    Hann,
    Hamming,
    Blackman,
}

pub(crate) fn window(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: Window) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, size) = lw.const_ints(ctx, 0)?;
    let [size] = size[..] else { return Err(ctx.err(format!("size {size:?} must be one integer"))) };
    let size = usize::try_from(size).map_err(|_| ctx.err(format!("size {size} is negative")))?;
    let periodic = ctx.int_attr("periodic", 1)? != 0;
    let coefficients: &[f64] = match kind {
        Window::Hann => &[0.5, -0.5],
        Window::Hamming => &[25.0 / 46.0, -21.0 / 46.0],
        Window::Blackman => &[0.42, -0.5, 0.08],
    };
    lw.reserve_table(ctx, "the window", &[size], 4)?;
    let period = if periodic { size as f64 } else { size as f64 - 1.0 };
    let values: Vec<f32> = (0..size)
        .map(|n| {
            let x = 2.0 * std::f64::consts::PI * n as f64 / period;
            coefficients.iter().enumerate().map(|(i, a)| a * (i as f64 * x).cos()).sum::<f64>() as f32
        })
        .collect();
    let window = ConstTensor { shape: vec![size], data: ConstData::F32(values) };
    let out_attr = ctx.int_attr("output_datatype", 1)?;
    let to = i32::try_from(out_attr)
        .ok()
        .and_then(dtype_of)
        .ok_or_else(|| ctx.bad_attr("output_datatype", format!("is {out_attr}, not a carried type")))?;
    let value = fold::cast(&window, to).ok_or_else(|| ctx.bad_attr("output_datatype", format!("cannot be {to}")))?;
    lw.define(ctx, 0, Value::Const(value))
}

/// `CenterCropPad`: per listed axis, a centred crop (start `floor((dim -
/// size) / 2)`) or a centred zero pad (`floor((size - dim) / 2)` before,
/// the rest after), as one `Slice` and one `Pad` over all axes.
pub(crate) fn center_crop_pad(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (x, input) = lw.input(ctx, 0)?;
    let shape = match &input {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let rank = shape.len();
    let (_, sizes) = lw.const_ints(ctx, 1)?;
    let axes: Vec<usize> = match ctx.ints_attr("axes")? {
        None => (0..rank).collect(),
        Some(list) => list
            .iter()
            .map(|&a| {
                normalize_axis(a, rank, 0)
                    .ok_or_else(|| ctx.bad_attr("axes", format!("{a} is out of range for rank {rank}")))
            })
            .collect::<Result<_, _>>()?,
    };
    if sizes.len() != axes.len() {
        return Err(ctx.err(format!("shape {sizes:?} must have one entry per axis {axes:?}")));
    }
    let (mut starts, mut ends) = (vec![0i64; rank], shape.iter().map(|&d| d as i64).collect::<Vec<_>>());
    let mut pads = vec![0i64; 2 * rank];
    for (&a, &size) in axes.iter().zip(&sizes) {
        let dim = shape[a] as i64;
        if size < 0 {
            return Err(ctx.err(format!("size {size} of axis {a} is negative")));
        }
        if size < dim {
            starts[a] = (dim - size) / 2;
            ends[a] = starts[a] + size;
        } else {
            pads[a] = (size - dim) / 2;
            pads[rank + a] = size - dim - pads[a];
        }
    }
    let output = ctx.node.output[0].clone();
    let ints = |v: Vec<i64>| ConstTensor { shape: vec![v.len()], data: ConstData::I64(v) };
    let starts = lw.constant(&output, "starts", ints(starts));
    let ends = lw.constant(&output, "ends", ints(ends));
    let pads = lw.constant(&output, "pads", ints(pads));
    let cropped = lw.internal_name(&output, "cropped");
    lw.lower_part(ctx, "Slice", &[&x, &starts, &ends], &[&cropped], Vec::new())?;
    lw.lower_part(ctx, "Pad", &[&cropped, &pads], &[&output], Vec::new())
}

/// `CausalConvWithState` (a Mamba / Gated DeltaNet block's convolution):
/// `[batch, channels, length]` with the past state (or `k - 1` zeros)
/// prepended along time, a depthwise `Conv` of `[channels, 1, k]` without
/// padding (plus the optional bias), optionally SiLU; the present state is
/// the last `k - 1` positions of the padded input.
pub(crate) fn causal_conv_with_state(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 4)?;
    let (x, input) = lw.input(ctx, 0)?;
    let (w, weight) = lw.input(ctx, 1)?;
    let shape_of = |v: &Value| match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let (xs, ws) = (shape_of(&input), shape_of(&weight));
    let (&[_, channels, length], &[wc, 1, k]) = (&xs[..], &ws[..]) else {
        return Err(ctx.err(format!(
            "input {xs:?} and weight {ws:?}: [batch, channels, length] and [channels, 1, k] are expected"
        )));
    };
    if wc != channels || k == 0 {
        return Err(ctx.err(format!("weight {ws:?} does not match {channels} channels with a kernel of at least 1")));
    }
    let silu = match ctx.string_attr("activation")?.as_deref().unwrap_or("none") {
        "none" => false,
        "silu" | "swish" => true,
        other => return Err(ctx.bad_attr("activation", format!("is `{other}`; none, silu or swish"))),
    };
    let out = ctx.node.output[0].clone();
    let ints = |v: Vec<i64>| ConstTensor { shape: vec![v.len()], data: ConstData::I64(v) };
    let padded = lw.internal_name(&out, "padded");
    match ctx.input_name(3) {
        Some(past) => {
            let axis =
                AttributeProto { name: "axis".into(), r#type: AttributeType::Int as i32, i: 2, ..Default::default() };
            lw.lower_part(ctx, "Concat", &[past, &x], &[&padded], vec![axis])?;
        }
        None => {
            let pads = lw.constant(&out, "causal_pads", ints(vec![0, 0, k as i64 - 1, 0, 0, 0]));
            lw.lower_part(ctx, "Pad", &[&x, &pads], &[&padded], Vec::new())?;
        }
    }
    let total = length + k - 1;
    let conv_out = if silu { lw.internal_name(&out, "conv") } else { out.clone() };
    let mut conv_inputs = vec![padded.as_str(), w.as_str()];
    if let Some(bias) = ctx.input_name(2) {
        conv_inputs.push(bias);
    }
    let group = AttributeProto {
        name: "group".into(),
        r#type: AttributeType::Int as i32,
        i: channels as i64,
        ..Default::default()
    };
    lw.lower_part(ctx, "Conv", &conv_inputs, &[&conv_out], vec![group])?;
    if silu {
        let gate = lw.internal_name(&out, "gate");
        lw.lower_part(ctx, "Sigmoid", &[&conv_out], &[&gate], Vec::new())?;
        lw.lower_part(ctx, "Mul", &[&conv_out, &gate], &[&out], Vec::new())?;
    }
    if let Some(present) = ctx.node.output.get(1).filter(|o| !o.is_empty()) {
        let starts = lw.constant(&out, "state_start", ints(vec![(total - (k - 1)) as i64]));
        let ends = lw.constant(&out, "state_end", ints(vec![total as i64]));
        let axes = lw.constant(&out, "state_axis", ints(vec![2]));
        lw.lower_part(ctx, "Slice", &[&padded, &starts, &ends, &axes], &[present], Vec::new())?;
    }
    Ok(())
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

/// `Swish` (opset 24): `x * sigmoid(alpha * x)`; `alpha = 1` is `Silu`.
pub(crate) fn swish(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let alpha = ctx.float_attr("alpha", 1.0)?;
    let x = ctx.node.input[0].clone();
    let out = ctx.node.output[0].clone();
    let gate_in = if alpha == 1.0 {
        x.clone()
    } else {
        let a = lw.constant(&out, "alpha", ConstTensor { shape: vec![], data: ConstData::F32(vec![alpha]) });
        let scaled = lw.internal_name(&out, "scaled");
        lw.lower_part(ctx, "Mul", &[&x, &a], &[&scaled], Vec::new())?;
        scaled
    };
    let gate = lw.internal_name(&out, "gate");
    lw.lower_part(ctx, "Sigmoid", &[&gate_in], &[&gate], Vec::new())?;
    lw.lower_part(ctx, "Mul", &[&x, &gate], &[&out], Vec::new())
}

/// `MeanVarianceNormalization`: the spec's function body, `(x - mean) /
/// (sqrt(mean(x^2) - mean^2) + 1e-9)` over `axes` (default `[0, 2, 3]`).
pub(crate) fn mean_variance_normalization(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let axes: Vec<i64> = ctx.ints_attr("axes")?.map_or(vec![0, 2, 3], <[i64]>::to_vec);
    let x = ctx.node.input[0].clone();
    let out = ctx.node.output[0].clone();
    let scalar = |v: f32| ConstTensor { shape: vec![], data: ConstData::F32(vec![v]) };
    let axes_c = lw.constant(&out, "axes", ConstTensor { shape: vec![axes.len()], data: ConstData::I64(axes.clone()) });
    let [mean, sq, mean_sq, mean2, var, std, centred, den] =
        ["mean", "square", "mean_square", "mean_squared", "variance", "std", "centred", "denominator"]
            .map(|w| lw.internal_name(&out, w));
    let two = lw.constant(&out, "two", scalar(2.0));
    let eps = lw.constant(&out, "eps", scalar(1e-9));
    // `ReduceMean` takes its axes as an input from opset 18, before as an
    // attribute.
    let by_input = lw.opset >= 18;
    let reduce_attrs = || {
        let mut attrs = vec![int_attr("keepdims", 1)];
        if !by_input {
            attrs.push(AttributeProto {
                name: "axes".to_string(),
                r#type: AttributeType::Ints as i32,
                ints: axes.clone(),
                ..Default::default()
            });
        }
        attrs
    };
    let reduce_inputs = |v: &str| if by_input { vec![v.to_string(), axes_c.clone()] } else { vec![v.to_string()] };
    let mean_in = reduce_inputs(&x);
    let mean_in: Vec<&str> = mean_in.iter().map(String::as_str).collect();
    lw.lower_part(ctx, "ReduceMean", &mean_in, &[&mean], reduce_attrs())?;
    lw.lower_part(ctx, "Pow", &[&x, &two], &[&sq], Vec::new())?;
    let sq_in = reduce_inputs(&sq);
    let sq_in: Vec<&str> = sq_in.iter().map(String::as_str).collect();
    lw.lower_part(ctx, "ReduceMean", &sq_in, &[&mean_sq], reduce_attrs())?;
    lw.lower_part(ctx, "Pow", &[&mean, &two], &[&mean2], Vec::new())?;
    lw.lower_part(ctx, "Sub", &[&mean_sq, &mean2], &[&var], Vec::new())?;
    lw.lower_part(ctx, "Sqrt", &[&var], &[&std], Vec::new())?;
    lw.lower_part(ctx, "Sub", &[&x, &mean], &[&centred], Vec::new())?;
    lw.lower_part(ctx, "Add", &[&std, &eps], &[&den], Vec::new())?;
    lw.lower_part(ctx, "Div", &[&centred, &den], &[&out], Vec::new())
}

/// `Compress` with a condition known at import time (it decides the
/// output's shape): a `Gather` of the selected positions along `axis`, or
/// of the flattened input without one.
pub(crate) fn compress(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (x, input) = lw.input(ctx, 0)?;
    let shape = match &input {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let (_, condition) = lw.const_ints(ctx, 1)?;
    let out = ctx.node.output[0].clone();
    let (source, axis, dim) = if ctx.has_attr("axis") {
        let a = ctx.int_attr("axis", 0)?;
        let axis = normalize_axis(a, shape.len(), 0)
            .ok_or_else(|| ctx.bad_attr("axis", format!("{a} is out of range for rank {}", shape.len())))?;
        (x, axis, shape[axis])
    } else {
        let total = numel(ctx, &shape)?;
        let flat = lw.internal_name(&out, "flat");
        let flat_shape =
            lw.constant(&out, "flat_shape", ConstTensor { shape: vec![1], data: ConstData::I64(vec![total as i64]) });
        lw.lower_part(ctx, "Reshape", &[&x, &flat_shape], &[&flat], Vec::new())?;
        (flat, 0, total)
    };
    if condition.len() > dim {
        return Err(ctx.err(format!("the condition has {} entries for an axis of {dim}", condition.len())));
    }
    let picks: Vec<i64> = condition.iter().enumerate().filter(|(_, &c)| c != 0).map(|(i, _)| i as i64).collect();
    let picks = lw.constant(&out, "picks", ConstTensor { shape: vec![picks.len()], data: ConstData::I64(picks) });
    lw.lower_part(ctx, "Gather", &[&source, &picks], &[&out], vec![int_attr("axis", axis as i64)])
}

/// `NonZero` of a value known at import time (its output's shape is the
/// count of non-zeros): the `[rank, count]` indices, a constant.
pub(crate) fn non_zero(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let Some(c) = lw.const_input(ctx, 0)? else {
        return Err(ctx.err("the input must be known at import time: the output's shape is its count of non-zeros"));
    };
    let nonzero: Vec<bool> = match c.data.ints() {
        Some(v) => v.iter().map(|&x| x != 0).collect(),
        None => c.data.to_f64().iter().map(|&x| x != 0.0).collect(),
    };
    let rank = c.shape.len();
    let strides = row_major_strides(&c.shape);
    let hits: Vec<usize> = (0..nonzero.len()).filter(|&i| nonzero[i]).collect();
    let mut indices = vec![0i64; rank * hits.len()];
    for (n, &flat) in hits.iter().enumerate() {
        for (d, &s) in strides.iter().enumerate() {
            indices[d * hits.len() + n] = ((flat / s) % c.shape[d]) as i64;
        }
    }
    let value = ConstTensor { shape: vec![rank, hits.len()], data: ConstData::I64(indices) };
    lw.define(ctx, 0, Value::Const(value))
}

/// `LRN`: `x / (bias + alpha / size * sum of x^2 over the channel window)^beta`,
/// the window `[c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]`: the
/// squares zero-padded along the channels (`Pad`) and `size` shifted
/// `Slice`s summed.
pub(crate) fn lrn(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (x, input) = lw.input(ctx, 0)?;
    let shape = match &input {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let rank = shape.len();
    let size = usize::try_from(ctx.int_attr("size", 0)?)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| ctx.bad_attr("size", "must be positive"))?;
    if rank < 3 {
        return Err(ctx.err(format!("the input has shape {shape:?}; [N, C, D1, ...] is expected")));
    }
    let (alpha, beta, bias) =
        (ctx.float_attr("alpha", 1e-4)?, ctx.float_attr("beta", 0.75)?, ctx.float_attr("bias", 1.0)?);
    let out = ctx.node.output[0].clone();
    let (before, after) = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let ints = |v: Vec<i64>| ConstTensor { shape: vec![v.len()], data: ConstData::I64(v) };
    let scalar = |v: f32| ConstTensor { shape: vec![], data: ConstData::F32(vec![v]) };
    let mut pads = vec![0i64; 2 * rank];
    pads[1] = before as i64;
    pads[rank + 1] = after as i64;
    let pads = lw.constant(&out, "pads", ints(pads));
    let [sq, padded] = ["square", "padded"].map(|w| lw.internal_name(&out, w));
    lw.lower_part(ctx, "Mul", &[&x, &x], &[&sq], Vec::new())?;
    lw.lower_part(ctx, "Pad", &[&sq, &pads], &[&padded], Vec::new())?;
    let channels = shape[1] as i64;
    let axis = lw.constant(&out, "channel_axis", ints(vec![1]));
    let mut sum = String::new();
    for j in 0..size as i64 {
        let (starts, ends) =
            (lw.constant(&out, "start", ints(vec![j])), lw.constant(&out, "end", ints(vec![j + channels])));
        let window = lw.internal_name(&out, &format!("shift{j}"));
        lw.lower_part(ctx, "Slice", &[&padded, &starts, &ends, &axis], &[&window], Vec::new())?;
        sum = if j == 0 {
            window
        } else {
            let next = lw.internal_name(&out, &format!("sum{j}"));
            lw.lower_part(ctx, "Add", &[&sum, &window], &[&next], Vec::new())?;
            next
        };
    }
    let (coef, bias_c, beta_c) = (
        lw.constant(&out, "alpha_over_size", scalar(alpha / size as f32)),
        lw.constant(&out, "bias", scalar(bias)),
        lw.constant(&out, "beta", scalar(beta)),
    );
    let [scaled, shifted, den] = ["scaled", "shifted", "denominator"].map(|w| lw.internal_name(&out, w));
    lw.lower_part(ctx, "Mul", &[&sum, &coef], &[&scaled], Vec::new())?;
    lw.lower_part(ctx, "Add", &[&scaled, &bias_c], &[&shifted], Vec::new())?;
    lw.lower_part(ctx, "Pow", &[&shifted, &beta_c], &[&den], Vec::new())?;
    lw.lower_part(ctx, "Div", &[&x, &den], &[&out], Vec::new())
}

/// The largest matrix `Det` expands (5! = 120 products of 5 factors).
const DET_MAX_N: usize = 5;

/// `Det` of `[..., n, n]` by the Leibniz formula, `n <= 5`: one `Gather`
/// of the `n!` permutations' entries (`[..., n!, n]`), `ReduceProd`, the
/// signs (`Mul`), `ReduceSum`. No pivoting and no division, so a singular
/// matrix gives its determinant (0 up to rounding), never NaN.
pub(crate) fn det(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (x, input) = lw.input(ctx, 0)?;
    let shape = match &input {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let rank = shape.len();
    let n = match shape[..] {
        [.., r, c] if r == c && (1..=DET_MAX_N).contains(&r) => r,
        _ => {
            return Err(ctx.err(format!(
            "the input has shape {shape:?}; square matrices of 1 to {DET_MAX_N} rows are supported (Leibniz expansion)"
        )))
        }
    };
    let mut perms: Vec<Vec<usize>> = vec![vec![]];
    for _ in 0..n {
        let mut longer = Vec::with_capacity(perms.len() * n);
        for p in &perms {
            for c in (0..n).filter(|c| !p.contains(c)) {
                let mut q = p.clone();
                q.push(c);
                longer.push(q);
            }
        }
        perms = longer;
    }
    let sign = |p: &[usize]| {
        let inversions = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).filter(|&(i, j)| p[i] > p[j]).count();
        if inversions % 2 == 0 {
            1.0
        } else {
            -1.0
        }
    };
    let out = ctx.node.output[0].clone();
    let ints = |shape: Vec<usize>, v: Vec<i64>| ConstTensor { shape, data: ConstData::I64(v) };
    let lead: Vec<i64> = shape[..rank - 2].iter().map(|&d| d as i64).collect();
    let flat_shape =
        lw.constant(&out, "flat_shape", ints(vec![rank - 1], [lead.clone(), vec![(n * n) as i64]].concat()));
    let picks: Vec<i64> = perms.iter().flat_map(|p| p.iter().enumerate().map(|(i, &c)| (i * n + c) as i64)).collect();
    let picks = lw.constant(&out, "entries", ints(vec![perms.len(), n], picks));
    let signs: Vec<f32> = perms.iter().map(|p| sign(p)).collect();
    let signs = lw.constant(&out, "signs", ConstTensor { shape: vec![perms.len()], data: ConstData::F32(signs) });
    let last = lw.constant(&out, "last_axis", ints(vec![1], vec![-1]));
    let [flat, terms, products, signed] = ["flat", "terms", "products", "signed"].map(|w| lw.internal_name(&out, w));
    let axis = rank as i64 - 2;
    let attr = |name: &str, i: i64| AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i,
        ..Default::default()
    };
    lw.lower_part(ctx, "Reshape", &[&x, &flat_shape], &[&flat], Vec::new())?;
    lw.lower_part(ctx, "Gather", &[&flat, &picks], &[&terms], vec![attr("axis", axis)])?;
    lw.lower_part(ctx, "ReduceProd", &[&terms, &last], &[&products], vec![attr("keepdims", 0)])?;
    lw.lower_part(ctx, "Mul", &[&products, &signs], &[&signed], Vec::new())?;
    lw.lower_part(ctx, "ReduceSum", &[&signed, &last], &[&out], vec![attr("keepdims", 0)])
}
