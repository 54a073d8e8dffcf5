//! Pooling the `Pool2D` kernel cannot do in one call — 3-D (and higher)
//! windows, dilated windows, `count_include_pad` with asymmetric padding —
//! as a sum of shifted strided reads: the input is padded once (with -inf
//! for max, 0 for average), then for every offset of the window one strided
//! `Transpose` reads the elements that offset contributes to each output
//! position, and a `BinaryFull` folds it into the accumulator (`max`, or
//! `add` followed by one division by the per-position element count, a
//! constant computed here).
//!
//! Exact for max. For the average the sum runs in a different order than a
//! window-at-a-time loop: results differ by float rounding only.

use rlx_sched::{BinaryOp, DType, ReduceOp};

use crate::budget::Grouped;
use crate::lower::build::{
    binary_thunk, broadcast_into_scratch, concat_along, copy_thunk, numel, slice_value, AxisSlice, Dest, R,
};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Compare, Where};

/// One spatial axis of the window.
pub(crate) struct Window {
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    /// Padding before and after, as the attributes give it.
    pub pads: (usize, usize),
    /// Output size (ceil mode already applied).
    pub output: usize,
}

impl Window {
    /// How many of the window's positions at output `o` land in `[lo, hi)`
    /// of the padded axis.
    fn count_in(&self, o: usize, lo: usize, hi: usize) -> usize {
        (0..self.kernel).filter(|&j| (lo..hi).contains(&(o * self.stride + j * self.dilation))).count()
    }
}

/// Pools `x` (`[N, C, spatial...]`, f32 data) over `windows` into output 0.
pub(crate) fn pool_nd(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    x: usize,
    shape: &[usize],
    windows: &[Window],
    kind: ReduceOp,
    count_include_pad: bool,
    column_major: bool,
) -> R {
    let name = ctx.node.output[0].clone();
    let fill = match kind {
        ReduceOp::Max => f32::NEG_INFINITY,
        _ => 0.0,
    };
    let cur = pad_for_windows(lw, ctx, x, shape, windows, fill)?;
    let out_shape: Vec<usize> = shape[..2].iter().copied().chain(windows.iter().map(|w| w.output)).collect();
    let padded_shape = match &cur {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    // Every window offset: one strided read, folded into the output; each
    // counts as a node of the import budget.
    let offsets = numel(ctx, &windows.iter().map(|w| w.kernel).collect::<Vec<_>>())?;
    let needs = format!("pooling needs {} window offsets of one strided read each", Grouped(offsets as u128));
    lw.budget.reserve_nodes(ctx, &needs, Some(offsets))?;
    let acc = lw.output_storage(ctx, 0, out_shape.clone())?;
    let mut indices = match ctx.node.output.get(1) {
        Some(o) if !o.is_empty() && kind == ReduceOp::Max => Some((
            lw.output_storage_typed(ctx, 1, out_shape.clone(), DType::I64)?,
            lw.scratch_storage(&format!("{name}.better"), out_shape.clone(), DType::Bool)?,
        )),
        _ => None,
    };
    let op = if kind == ReduceOp::Max { BinaryOp::Max } else { BinaryOp::Add };
    for flat in 0..offsets {
        lw.budget.node(ctx)?;
        let mut rem = flat;
        let mut parts: Vec<AxisSlice> =
            padded_shape.iter().map(|&n| AxisSlice { start: 0, count: n, step: 1 }).collect();
        for (i, w) in windows.iter().enumerate().rev() {
            let j = rem % w.kernel;
            rem /= w.kernel;
            parts[i + 2] = AxisSlice { start: (j * w.dilation) as i64, count: w.output, step: w.stride as i64 };
        }
        let dest = if flat == 0 { Dest::Output(0) } else { Dest::Scratch(format!("{name}.tap{flat}")) };
        let tap = slice_value(lw, ctx, &cur, &parts, &dest)?;
        let Value::Data { storage: tap, .. } = tap else {
            return Err(ctx.err("the pooled input folded to a constant"));
        };
        if flat == 0 {
            if tap != acc {
                lw.emit(ctx, copy_thunk(tap, acc, &out_shape, DType::F32));
            }
            if let Some(ix) = &mut indices {
                let first = tap_indices(lw, ctx, (shape, windows, column_major), flat, &out_shape)?;
                lw.emit(ctx, copy_thunk(first, ix.0, &out_shape, DType::I64));
            }
            continue;
        }
        if let Some((ix, better)) = indices {
            // Where this tap beats the maximum so far (strictly: the first
            // maximum in window order wins ties), it supplies the index.
            let len = numel(ctx, &out_shape)?;
            lw.emit(
                ctx,
                rlx_sched::Thunk::Compare(Compare {
                    lhs: tap,
                    rhs: acc,
                    dst: better,
                    len,
                    op: rlx_sched::CmpOp::Gt,
                    inputs_i64: false,
                    inputs_elem_bytes: 4,
                    dst_elem_bytes: 1,
                    lhs_scalar: false,
                    rhs_scalar: false,
                    lhs_len: len,
                    rhs_len: len,
                    out_dims_bcast: vec![],
                    bcast_lhs_strides: vec![],
                    bcast_rhs_strides: vec![],
                }),
            );
            let here = tap_indices(lw, ctx, (shape, windows, column_major), flat, &out_shape)?;
            lw.emit(
                ctx,
                rlx_sched::Thunk::Where(Where {
                    cond: better,
                    on_true: here,
                    on_false: ix,
                    dst: ix,
                    len,
                    elem_bytes: 8,
                    cond_elem_bytes: 1,
                    cond_scalar: false,
                    true_scalar: false,
                    false_scalar: false,
                }),
            );
        }
        lw.emit(ctx, binary_thunk(ctx, (acc, &out_shape), (tap, &out_shape), acc, &out_shape, op, 4)?);
    }
    if kind == ReduceOp::Mean {
        // Elements per output position: a product over the axes, counted in
        // the input (or in the input plus its padding).
        let positions = numel(ctx, &out_shape[2..])?;
        lw.count_table(ctx, "the window sizes", &[positions], 4)?;
        let counts: Vec<f32> = (0..positions)
            .map(|flat| {
                let mut rem = flat;
                let mut n = 1usize;
                for w in windows.iter().rev() {
                    let o = rem % w.output;
                    rem /= w.output;
                    let (lo, hi) = if count_include_pad {
                        (0, w.pads.0 + w.input + w.pads.1)
                    } else {
                        (w.pads.0, w.pads.0 + w.input)
                    };
                    n *= w.count_in(o, lo, hi);
                }
                n as f32
            })
            .collect();
        let count_shape: Vec<usize> = out_shape[2..].to_vec();
        let c = lw.add_param(
            &format!("{name}.counts"),
            &ConstTensor { shape: count_shape.clone(), data: ConstData::F32(counts) },
        )?;
        lw.emit(ctx, binary_thunk(ctx, (acc, &out_shape), (c, &count_shape), acc, &out_shape, BinaryOp::Div, 4)?);
    }
    if let Some((ix, _)) = indices {
        lw.define(ctx, 1, Value::Data { storage: ix, shape: out_shape.clone() })?;
    }
    lw.define(ctx, 0, Value::Data { storage: acc, shape: out_shape })
}

/// `x` (`[N, C, spatial...]`, f32 data) padded with `fill` so that every
/// window position of every output lies inside: the leading padding of
/// each axis, and at the end what its last window reaches. Per padded
/// axis, the blocks of `fill` are splatted at run time from one scalar
/// param (a block as a param would put the input's surface into the
/// weights file) and one `Concat` joins them with the tensor; `x` itself
/// when nothing is padded.
pub(crate) fn pad_for_windows(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    x: usize,
    shape: &[usize],
    windows: &[Window],
    fill: f32,
) -> Result<Value, crate::error::ImportError> {
    let name = ctx.node.output[0].clone();
    let mut cur = Value::Data { storage: x, shape: shape.to_vec() };
    let mut scalar = None;
    for (i, w) in windows.iter().enumerate() {
        let d = i + 2;
        let reach = (w.kernel - 1).saturating_mul(w.dilation);
        let needed = (w.output - 1).saturating_mul(w.stride).saturating_add(reach).saturating_add(1);
        let after = needed.saturating_sub(w.pads.0.saturating_add(w.input));
        if w.pads.0 == 0 && after == 0 {
            continue;
        }
        let cur_shape = match &cur {
            Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
        };
        let fill_param = match scalar {
            Some(p) => p,
            None => {
                let c = ConstTensor { shape: vec![], data: ConstData::F32(vec![fill]) };
                *scalar.insert(lw.add_param(&format!("{name}.fill"), &c)?)
            }
        };
        // One block per distinct length (both sides share it when equal).
        let mut blocks: Vec<(usize, Value)> = Vec::new();
        let mut pieces = Vec::new();
        for (len, is_after) in [(w.pads.0, false), (after, true)] {
            if is_after {
                pieces.push(cur.clone());
            }
            if len == 0 {
                continue;
            }
            if let Some((_, v)) = blocks.iter().find(|(l, _)| *l == len) {
                pieces.push(v.clone());
                continue;
            }
            let mut s = cur_shape.clone();
            s[d] = len;
            let block = broadcast_into_scratch(lw, ctx, fill_param, &[], &s)?;
            let v = Value::Data { storage: block, shape: s };
            blocks.push((len, v.clone()));
            pieces.push(v);
        }
        cur = concat_along(lw, ctx, &pieces, d, &Dest::Scratch(format!("{name}.padded{d}")))?;
    }
    Ok(cur)
}

/// For window offset `flat`, the flat index into the unpadded input of the
/// element each output position reads: a constant param, as `MaxPool`'s
/// `Indices` output names elements (N and C outermost, then the spatial
/// axes in row-major order, or reversed with `column_major`). A position in
/// the padding gets -1 (it never holds the maximum: padding reads -inf).
fn tap_indices(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    (shape, windows, column_major): (&[usize], &[Window], bool),
    flat: usize,
    out_shape: &[usize],
) -> Result<usize, crate::error::ImportError> {
    let k = windows.len();
    let mut offset = vec![0usize; k];
    let mut rem = flat;
    for i in (0..k).rev() {
        offset[i] = rem % windows[i].kernel;
        rem /= windows[i].kernel;
    }
    let total = numel(ctx, out_shape)?;
    lw.count_table(ctx, "the indices of a window offset", &[total], 8)?;
    let mut values = Vec::with_capacity(total);
    for o in 0..total {
        let mut rem = o;
        let mut coords = vec![0usize; out_shape.len()];
        for d in (0..out_shape.len()).rev() {
            coords[d] = rem % out_shape[d];
            rem /= out_shape[d];
        }
        let mut index = (coords[0] * shape[1] + coords[1]) as i64;
        let mut inside = true;
        let order: Vec<usize> = if column_major { (0..k).rev().collect() } else { (0..k).collect() };
        for i in order {
            let w = &windows[i];
            let pos = (coords[i + 2] * w.stride + offset[i] * w.dilation) as i64 - w.pads.0 as i64;
            inside &= (0..w.input as i64).contains(&pos);
            index = index * w.input as i64 + pos;
        }
        values.push(if inside { index } else { -1 });
    }
    let name = format!("{}.tap{flat}.index", ctx.node.output[0]);
    lw.add_param(&name, &ConstTensor { shape: out_shape.to_vec(), data: ConstData::I64(values) })
}
