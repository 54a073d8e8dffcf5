//! QDQ convolutions → `QLinearConv`, before lowering.
//!
//! onnxruntime's `quantize_static` writes a quantized CNN in the QDQ form:
//! every `Conv` reads `DequantizeLinear` outputs (the uint8 activation, the
//! int8 weight, the int32 bias) and feeds one `QuantizeLinear`. Lowered as
//! written, that is an f32 convolution of dequantized values between an f32
//! quantize and dequantize. This pass rewrites each such group into the
//! one `QLinearConv` it means, as onnxruntime's own graph optimizer does,
//! so the convolution runs on the 8-bit values with exact i32 sums
//! (`IntConv2D`), the weights stay int8 in the weights file, and the
//! result is requantized straight from the sums.
//!
//! A group is rewritten only when everything but the activation is a
//! constant of the expected form: scalar activation scale and zero point
//! (8-bit), an 8-bit 4-D weight with a scale and zero point per tensor or
//! per output channel (`axis` 0), a bias (if any) that is an int32
//! constant with zero point 0 and the scale `x_scale * w_scale` (each
//! channel's within an f32 rounding of that product), and a
//! `QuantizeLinear` with scalar scale and 8-bit zero point as the `Conv`
//! output's only reader. Anything else imports as written.

use std::collections::{BTreeMap, BTreeSet};

use rlx_sched::DType;

use crate::proto::{AttributeType, GraphProto, NodeProto};
use crate::tensor::{ConstData, ConstTensor};

/// The graph with every QDQ convolution rewritten, or `None` when it has
/// none.
pub(crate) fn fuse_conv(graph: &GraphProto, constants: &[(String, ConstTensor)]) -> Option<GraphProto> {
    let consts: BTreeMap<&str, &ConstTensor> = constants.iter().map(|(n, c)| (n.as_str(), c)).collect();
    let producer: BTreeMap<&str, usize> =
        graph.node.iter().enumerate().flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i))).collect();
    let mut readers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, n) in graph.node.iter().enumerate() {
        for input in n.input.iter().filter(|s| !s.is_empty()) {
            readers.entry(input.as_str()).or_default().push(i);
        }
    }
    let outputs: BTreeSet<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    let g = Graph { graph, consts, producer, readers, outputs };
    // Conv index -> its replacement; the QuantizeLinear nodes it absorbs.
    let mut replaced: BTreeMap<usize, NodeProto> = BTreeMap::new();
    let mut absorbed = BTreeSet::new();
    for (i, node) in graph.node.iter().enumerate() {
        if let Some((fused, q)) = g.match_conv(node) {
            replaced.insert(i, fused);
            absorbed.insert(q);
        }
    }
    if replaced.is_empty() {
        return None;
    }
    let mut nodes: Vec<NodeProto> = graph
        .node
        .iter()
        .enumerate()
        .filter(|(i, _)| !absorbed.contains(i))
        .map(|(i, n)| replaced.remove(&i).unwrap_or_else(|| n.clone()))
        .collect();
    drop_unread_dequantize(&mut nodes, &g.outputs);
    Some(GraphProto { node: nodes, ..graph.clone() })
}

struct Graph<'a> {
    graph: &'a GraphProto,
    consts: BTreeMap<&'a str, &'a ConstTensor>,
    producer: BTreeMap<&'a str, usize>,
    readers: BTreeMap<&'a str, Vec<usize>>,
    outputs: BTreeSet<&'a str>,
}

/// A `DequantizeLinear`'s inputs.
struct Dq<'a> {
    x: &'a str,
    scale: &'a str,
    zero: Option<&'a str>,
    axis: i64,
}

impl<'a> Graph<'a> {
    /// The `QLinearConv` a QDQ `Conv` means, and the index of the
    /// `QuantizeLinear` it absorbs.
    fn match_conv(&self, conv: &'a NodeProto) -> Option<(NodeProto, usize)> {
        if conv.op_type != "Conv" || !is_default_domain(&conv.domain) || !(2..=3).contains(&conv.input.len()) {
            return None;
        }
        let out = conv.output.first()?.as_str();
        let x = self.dequantize(&conv.input[0])?;
        let x_scale = self.f32s(x.scale, &[1])?;
        self.int8s(x.zero?, 1)?;
        let w = self.dequantize(&conv.input[1])?;
        let weight = self.consts.get(w.x)?;
        let w_dtype = int8_dtype(weight)?;
        if weight.shape.len() != 4 {
            return None;
        }
        let c_out = weight.shape[0];
        let w_scale = self.f32s(w.scale, &[1, c_out])?;
        if w_scale.len() > 1 && w.axis != 0 {
            return None;
        }
        let w_zero = self.int8s(w.zero?, w_scale.len())?;
        if w_zero.0 != w_dtype {
            return None;
        }
        let bias = match conv.input.get(2).filter(|b| !b.is_empty()) {
            None => None,
            Some(b) => {
                let b = self.dequantize(b)?;
                let values = self.consts.get(b.x)?;
                let ConstData::I32(_) = values.data else { return None };
                if values.shape != [c_out] || b.zero.is_some_and(|z| !self.all_zero(z)) {
                    return None;
                }
                let b_scale = self.f32s(b.scale, &[1, c_out])?;
                let in_scale = |oc: usize| x_scale[0] * w_scale[if w_scale.len() == 1 { 0 } else { oc }];
                let ok = (0..c_out).all(|oc| {
                    let got = b_scale[if b_scale.len() == 1 { 0 } else { oc }];
                    (got - in_scale(oc)).abs() <= f32::EPSILON * in_scale(oc).abs()
                });
                if !ok {
                    return None;
                }
                Some(b.x)
            }
        };
        let [q_index] = self.readers.get(out)?.as_slice() else { return None };
        let q = &self.graph.node[*q_index];
        if q.op_type != "QuantizeLinear" || !is_default_domain(&q.domain) || self.outputs.contains(out) {
            return None;
        }
        if q.input.first().map(String::as_str) != Some(out) || q.attribute.iter().any(|a| a.name == "output_dtype") {
            return None;
        }
        self.f32s(q.input.get(1)?, &[1])?;
        self.int8s(q.input.get(2)?, 1)?;
        let mut inputs: Vec<String> = [x.x, x.scale, x.zero?, w.x, w.scale, w.zero?, &q.input[1], &q.input[2]]
            .iter()
            .map(|s| s.to_string())
            .collect();
        inputs.extend(bias.map(str::to_string));
        let fused = NodeProto {
            input: inputs,
            output: vec![q.output.first()?.clone()],
            name: conv.name.clone(),
            op_type: "QLinearConv".to_string(),
            domain: String::new(),
            attribute: conv.attribute.clone(),
            doc_string: String::new(),
        };
        Some((fused, *q_index))
    }

    /// The inputs of the `DequantizeLinear` producing `name` (per tensor or
    /// per axis: a `block_size` does not match).
    fn dequantize(&self, name: &str) -> Option<Dq<'a>> {
        let node = &self.graph.node[*self.producer.get(name)?];
        if node.op_type != "DequantizeLinear" || !is_default_domain(&node.domain) {
            return None;
        }
        let mut axis = 1;
        for a in &node.attribute {
            match a.name.as_str() {
                "axis" if a.r#type == AttributeType::Int as i32 => axis = a.i,
                "block_size" if a.i == 0 => {}
                _ => return None,
            }
        }
        Some(Dq {
            x: node.input.first()?,
            scale: node.input.get(1)?,
            zero: node.input.get(2).map(String::as_str).filter(|z| !z.is_empty()),
            axis,
        })
    }

    /// The f32 values of constant `name` when it has one of `lens`
    /// elements (and at most one dim).
    fn f32s(&self, name: &str, lens: &[usize]) -> Option<&'a [f32]> {
        let c = self.consts.get(name)?;
        match &c.data {
            ConstData::F32(v) if lens.contains(&v.len()) && c.shape.len() <= 1 => Some(v),
            _ => None,
        }
    }

    /// The 8-bit type and values of constant `name` of `len` elements (at
    /// most one dim).
    fn int8s(&self, name: &str, len: usize) -> Option<(DType, &'a [i64])> {
        let c = self.consts.get(name)?;
        let dtype = int8_dtype(c)?;
        match &c.data {
            ConstData::Int(_, v) if v.len() == len && c.shape.len() <= 1 => Some((dtype, v)),
            _ => None,
        }
    }

    fn all_zero(&self, name: &str) -> bool {
        self.consts.get(name).is_some_and(|c| match &c.data {
            ConstData::I32(v) => v.iter().all(|&z| z == 0),
            ConstData::Int(_, v) | ConstData::I64(v) => v.iter().all(|&z| z == 0),
            _ => false,
        })
    }
}

fn int8_dtype(c: &ConstTensor) -> Option<DType> {
    match c.data {
        ConstData::Int(d @ (DType::U8 | DType::I8), _) => Some(d),
        _ => None,
    }
}

fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// Drops the `DequantizeLinear` nodes nothing reads any more (the weight
/// and bias halves of rewritten groups), so they leave no thunks.
fn drop_unread_dequantize(nodes: &mut Vec<NodeProto>, outputs: &BTreeSet<&str>) {
    let read: BTreeSet<String> = nodes.iter().flat_map(|n| n.input.iter().cloned()).collect();
    nodes.retain(|n| {
        n.op_type != "DequantizeLinear" || n.output.iter().any(|o| read.contains(o) || outputs.contains(o.as_str()))
    });
}
