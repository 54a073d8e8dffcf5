//! A constant `Pad` in front of a sliding window is the window's own
//! padding. TF-style "same" padding and `F.pad` before a convolution export
//! as an explicit `Pad` node; lowered as it stands that is a copy of the
//! whole tensor (one `Pad` thunk). When every reader of the padded tensor
//! is a window op whose implicit padding has the pad's value, the `Pad` is not
//! lowered at all: each reader reads the unpadded tensor with the pad added
//! to its `pads` attribute, so the fold reaches every path that reader
//! takes (NCHW, blocked, Winograd, depthwise, 1-D and N-d).
//!
//! Which readers take which pads:
//! - `Conv`: a zero pad (its implicit padding is zero);
//! - `MaxPool`: a `-inf` pad, without the `Indices` output (indices count
//!   positions of the padded tensor, which no longer exists);
//! - `AveragePool` with `count_include_pad = 1`: a zero pad (padded zeros
//!   count in the average either way).
//!
//! The reader must take the tensor as its input 0 and have `auto_pad`
//! NOTSET or VALID; every merged pad must stay smaller than the window
//! (each window keeps an element of the tensor, which the kernels require);
//! a pool must be one `Pool2D` runs (two spatial axes, no dilation,
//! `ceil_mode = 0`, and for the average the same pad on both sides), so the
//! fold never changes an output size, never turns a valid model into an
//! import error and never sends a pool to the slower shifted-read form. A pad on the batch or channel axes, a negative pad,
//! a pad another op reads, a graph output or a pad read inside a control-flow
//! body is lowered as before.

use std::collections::{BTreeMap, BTreeSet};

use rlx_sched::DType;

use crate::error::ImportError;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType, GraphProto, NodeProto};
use crate::tensor::{ConstData, ConstTensor};

/// A `Pad` left to its readers: the unpadded value and the pads of every
/// axis (all zero on the batch and channel axes).
#[derive(Clone, Debug)]
pub(crate) struct FoldedPad {
    source: String,
    before: Vec<usize>,
    after: Vec<usize>,
}

/// The readers of every top-level `Pad` output, for the fold to check:
/// `None` where some reader is out of sight (a control-flow body).
#[derive(Default)]
pub(crate) struct PadReaders {
    /// Pad output name -> (the `Pad` node's index, the nodes reading it).
    readers: BTreeMap<String, (usize, Option<Vec<NodeProto>>)>,
}

impl PadReaders {
    /// Collects the readers of the `Pad` outputs of `graph`'s own nodes.
    pub(crate) fn of(graph: &GraphProto) -> Self {
        let mut readers: BTreeMap<String, (usize, Option<Vec<NodeProto>>)> = graph
            .node
            .iter()
            .enumerate()
            .filter(|(_, n)| n.op_type == "Pad" && n.domain.is_empty())
            .filter_map(|(i, n)| n.output.first().filter(|o| !o.is_empty()).map(|o| (o.clone(), (i, Some(Vec::new())))))
            .collect();
        if readers.is_empty() {
            return PadReaders { readers };
        }
        for node in &graph.node {
            let mut hidden = BTreeSet::new();
            for a in &node.attribute {
                if let Some(g) = &a.g {
                    names_read_in(g, &mut hidden);
                }
            }
            for name in &hidden {
                if let Some(entry) = readers.get_mut(name) {
                    entry.1 = None;
                }
            }
            for name in node.input.iter().collect::<BTreeSet<_>>() {
                if let Some((_, Some(list))) = readers.get_mut(name) {
                    list.push(node.clone());
                }
            }
        }
        PadReaders { readers }
    }
}

/// Every value name a node of `g` (or of a graph nested in it) reads.
fn names_read_in(g: &GraphProto, out: &mut BTreeSet<String>) {
    for node in &g.node {
        out.extend(node.input.iter().cloned());
        for a in &node.attribute {
            if let Some(inner) = &a.g {
                names_read_in(inner, out);
            }
        }
    }
}

/// Leaves the `Pad` of `ctx` to its readers when they can all take it:
/// records the fold and returns `true`; else returns `false` and the caller
/// lowers the pad. `before`/`after` are the pads of every axis of `input`
/// (named `source`); `value` is the pad's constant.
pub(crate) fn defer(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    source: &str,
    input: &Value,
    (before, after): (&[i64], &[i64]),
    value: &ConstTensor,
) -> bool {
    let Some(output) = ctx.node.output.first() else { return false };
    let Some((pad_index, Some(readers))) = lw.pad_readers.readers.get(output) else { return false };
    // The node being lowered is the top-level `Pad` itself, not a node of
    // an inlined body that happens to reuse the name.
    if ctx.label != node_label(*pad_index, &ctx.node.name) || readers.is_empty() || lw.graph_outputs.contains(output) {
        return false;
    }
    let Value::Data { storage, shape } = input else { return false };
    if lw.storages[*storage].dtype != DType::F32 || shape.len() < 3 {
        return false;
    }
    let spatial_only = (0..2).all(|d| before[d] == 0 && after[d] == 0);
    if !spatial_only || before.iter().chain(after).any(|&p| p < 0) {
        return false;
    }
    let ConstData::F32(v) = &value.data else { return false };
    // `-0.0` is not the readers' implicit `+0.0`: a window over padding
    // only would sum to a different zero.
    let &[fill] = v.as_slice() else { return false };
    let before: Vec<usize> = before.iter().map(|&p| p as usize).collect();
    let after: Vec<usize> = after.iter().map(|&p| p as usize).collect();
    let fold = FoldedPad { source: source.to_string(), before, after };
    // A convolution's window size is its weights' spatial dims.
    let conv_kernel = |reader: &NodeProto| -> Option<Vec<i64>> {
        let w = lw.values.get(reader.input.get(1)?)?;
        let (Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. })) = w;
        shape.get(2..).map(|k| k.iter().map(|&d| d as i64).collect())
    };
    if !readers.iter().all(|r| takes(r, output, fill, &fold, conv_kernel(r))) {
        return false;
    }
    lw.folded_pads.insert(output.clone(), fold);
    true
}

/// The label `lower_graph` gives the top-level node at `index`.
pub(crate) fn node_label(index: usize, name: &str) -> String {
    if name.is_empty() {
        format!("#{index}")
    } else {
        name.to_string()
    }
}

/// Whether `reader` can take `fold` of value `name`, padded with `fill`,
/// into its own padding; `conv_kernel` is a convolution's window size.
fn takes(reader: &NodeProto, name: &str, fill: f32, fold: &FoldedPad, conv_kernel: Option<Vec<i64>>) -> bool {
    let only_input_0 = reader.input.iter().enumerate().all(|(i, n)| (n == name) == (i == 0));
    if !only_input_0 || !reader.domain.is_empty() {
        return false;
    }
    let attr = |n: &str| reader.attribute.iter().find(|a| a.name == n);
    let int = |n: &str, default: i64| attr(n).map_or(default, |a| a.i);
    let auto_pad = attr("auto_pad").map_or(&b"NOTSET"[..], |a| a.s.as_slice());
    if !matches!(auto_pad, b"NOTSET" | b"VALID") {
        return false;
    }
    let k = fold.before.len() - 2;
    let dilations = attr("dilations").map_or(vec![1; k], |a| a.ints.clone());
    let Some(merged) = merged_pads(reader, fold) else { return false };
    let kernel = match reader.op_type.as_str() {
        "Conv" if fill.to_bits() == 0 => conv_kernel,
        // The readers `Pool2D` runs: two spatial axes, no dilation, and
        // (average) the same padding on both sides.
        _ if k != 2 || dilations.iter().any(|&d| d != 1) || int("ceil_mode", 0) != 0 => return false,
        "MaxPool" if fill == f32::NEG_INFINITY && reader.output.iter().skip(1).all(|o| o.is_empty()) => {
            attr("kernel_shape").map(|a| a.ints.clone())
        }
        "AveragePool"
            if fill.to_bits() == 0
                && int("count_include_pad", 0) == 1
                && (0..k).all(|d| merged[d] == merged[d + k]) =>
        {
            attr("kernel_shape").map(|a| a.ints.clone())
        }
        _ => return false,
    };
    // Every window keeps at least one element of the tensor, as the kernels
    // (and, for pools, onnxruntime) require of padding.
    let Some(kernel) = kernel.filter(|kr| kr.len() == k && dilations.len() == k) else { return false };
    (0..k).all(|d| {
        let span = dilations[d].saturating_mul(kernel[d] - 1).saturating_add(1);
        merged[d] < span && merged[d + k] < span
    })
}

/// The reader's `pads` (`[begin..., end...]` over the spatial axes) plus
/// the folded pad's; `None` if the reader's own are malformed (left for its
/// lowering to report).
fn merged_pads(reader: &NodeProto, fold: &FoldedPad) -> Option<Vec<i64>> {
    let k = fold.before.len() - 2;
    let own = match reader.attribute.iter().find(|a| a.name == "pads") {
        None => vec![0; 2 * k],
        Some(a) if a.ints.len() == 2 * k && a.ints.iter().all(|&p| p >= 0) => a.ints.clone(),
        Some(_) => return None,
    };
    let auto_valid = reader.attribute.iter().any(|a| a.name == "auto_pad" && a.s == b"VALID");
    let own = if auto_valid { vec![0; 2 * k] } else { own };
    (0..2 * k)
        .map(|i| {
            let extra = if i < k { fold.before[i + 2] } else { fold.after[i - k + 2] };
            own[i].checked_add(i64::try_from(extra).ok()?)
        })
        .collect()
}

/// The node of `ctx` reading a folded pad's unpadded value with the pad in
/// its own `pads`, if its input 0 is a folded pad.
pub(crate) fn absorb(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<Option<NodeProto>, ImportError> {
    let Some(fold) = ctx.node.input.first().and_then(|n| lw.folded_pads.get(n)) else { return Ok(None) };
    let merged = merged_pads(ctx.node, fold).ok_or_else(|| ctx.bad_attr("pads", "is malformed"))?;
    let mut node = ctx.node.clone();
    node.input[0] = fold.source.clone();
    node.attribute.retain(|a| a.name != "pads" && a.name != "auto_pad");
    node.attribute.push(AttributeProto {
        name: "pads".to_string(),
        r#type: AttributeType::Ints as i32,
        ints: merged,
        ..Default::default()
    });
    Ok(Some(node))
}
