//! What unrolling a control-flow body will count against the import
//! budget, known before it is unrolled: so `Loop`s nested three deep, or
//! a `Scan` inside a `Scan`, are refused at the outermost node instead of
//! after the budget's worth of work.
//!
//! [`min_nodes`] is a lower bound on the nodes one inlining of a body
//! counts (`crate::budget`): one per node, and for a nested `Loop` whose
//! trip count and start condition the model fixes, or a nested `Scan`
//! whose sequence length follows from shapes known here, its steps times
//! its own body's bound. What is not known counts as nothing (a nested
//! `Scan` of unknown length as one step, since it needs one), so the
//! bound never exceeds what the lowering counts: when it does not fit,
//! the unrolled import could not have fit either.

use std::collections::{BTreeMap, BTreeSet};

use crate::lower::arith::shape::normalize_axis;
use crate::lower::{Lowerer, Value};
use crate::proto::{AttributeType, GraphProto, NodeProto, TensorProto};
use crate::tensor::ConstTensor;

/// What is known about the values a graph reads.
pub(crate) struct Known<'a> {
    /// The graph's own integer scalars: initializers and `Constant` nodes.
    ints: BTreeMap<&'a str, i64>,
    /// Shapes of the graph's inputs, where known.
    shapes: BTreeMap<&'a str, Vec<usize>>,
    /// Every name the graph defines (inputs, initializers, node outputs):
    /// these hide the enclosing scope's.
    defined: BTreeSet<&'a str>,
    outer: Outer<'a>,
}

/// Where names a graph does not define are looked up.
enum Outer<'a> {
    /// The values lowered so far.
    Lowerer(&'a Lowerer),
    /// The body the graph is nested in.
    Body(&'a Known<'a>),
}

impl<'a> Known<'a> {
    /// The facts of `graph`, with `shapes` for its inputs, inside `outer`.
    fn new(graph: &'a GraphProto, shapes: BTreeMap<&'a str, Vec<usize>>, outer: Outer<'a>) -> Self {
        let mut ints = BTreeMap::new();
        for t in &graph.initializer {
            if let Some(v) = int_scalar(t) {
                ints.insert(t.name.as_str(), v);
            }
        }
        for n in graph.node.iter().filter(|n| n.op_type == "Constant" && is_default_domain(n)) {
            if let (Some(out), Some(v)) = (n.output.first(), constant_int(n)) {
                ints.insert(out.as_str(), v);
            }
        }
        let defined = graph
            .input
            .iter()
            .map(|i| i.name.as_str())
            .chain(graph.initializer.iter().map(|t| t.name.as_str()))
            .chain(graph.node.iter().flat_map(|n| n.output.iter().map(String::as_str)))
            .collect();
        Known { ints, shapes, defined, outer }
    }

    /// The facts of a body about to be inlined by the lowering, its inputs
    /// of `shapes`.
    pub(crate) fn body(lw: &'a Lowerer, graph: &'a GraphProto, shapes: BTreeMap<&'a str, Vec<usize>>) -> Self {
        Known::new(graph, shapes, Outer::Lowerer(lw))
    }

    fn int(&self, name: &str) -> Option<i64> {
        if let Some(&v) = self.ints.get(name) {
            return Some(v);
        }
        if self.defined.contains(name) {
            return None;
        }
        match &self.outer {
            Outer::Body(k) => k.int(name),
            Outer::Lowerer(lw) => match lw.values.get(name)? {
                Value::Const(ConstTensor { data, .. }) => match data.ints()?[..] {
                    [v] => Some(v),
                    _ => None,
                },
                Value::Data { .. } => None,
            },
        }
    }

    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        if let Some(s) = self.shapes.get(name) {
            return Some(s.clone());
        }
        if self.defined.contains(name) {
            return None;
        }
        match &self.outer {
            Outer::Body(k) => k.shape(name),
            Outer::Lowerer(lw) => match lw.values.get(name)? {
                Value::Const(ConstTensor { shape, .. }) | Value::Data { shape, .. } => Some(shape.clone()),
            },
        }
    }
}

/// A lower bound on the nodes one inlining of `graph` counts, saturating.
pub(crate) fn min_nodes(graph: &GraphProto, known: &Known<'_>, opset: i64) -> u128 {
    graph.node.iter().fold(0u128, |sum, n| sum.saturating_add(1).saturating_add(nested(n, known, opset)))
}

/// The nodes a control-flow node's bodies count, at least.
fn nested(n: &NodeProto, known: &Known<'_>, opset: i64) -> u128 {
    if !is_default_domain(n) {
        return 0;
    }
    let graph = |name: &str| n.attribute.iter().find(|a| a.name == name).and_then(|a| a.g.as_ref());
    match n.op_type.as_str() {
        "Loop" => {
            let Some(body) = graph("body") else { return 0 };
            let trip = n.input.first().filter(|s| !s.is_empty()).and_then(|m| known.int(m));
            let starts = match n.input.get(1).filter(|s| !s.is_empty()) {
                None => true,
                Some(c) => known.int(c).is_some_and(|v| v != 0),
            };
            match trip {
                Some(t) if t > 0 && starts => {
                    let inner = Known::new(body, BTreeMap::new(), Outer::Body(known));
                    (t as u128).saturating_mul(1 + min_nodes(body, &inner, opset))
                }
                _ => 0,
            }
        }
        "Scan" if opset >= 9 => {
            let Some(body) = graph("body") else { return 0 };
            let (steps, shapes) = scan_steps(n, body, known).unwrap_or((1, BTreeMap::new()));
            let inner = Known::new(body, shapes, Outer::Body(known));
            (steps as u128).saturating_mul(1 + min_nodes(body, &inner, opset))
        }
        "If" => {
            let cost = |name| {
                graph(name).map_or(0, |g| min_nodes(g, &Known::new(g, BTreeMap::new(), Outer::Body(known)), opset))
            };
            cost("then_branch").min(cost("else_branch"))
        }
        _ => 0,
    }
}

/// An opset-9 `Scan`'s sequence length and its body inputs' shapes, when
/// the scan inputs' shapes are known.
fn scan_steps<'g>(
    n: &NodeProto,
    body: &'g GraphProto,
    known: &Known<'_>,
) -> Option<(usize, BTreeMap<&'g str, Vec<usize>>)> {
    let attr = |name: &str| n.attribute.iter().find(|a| a.name == name);
    let m = usize::try_from(attr("num_scan_inputs")?.i).ok().filter(|&m| m > 0)?;
    let states = n.input.len().checked_sub(m)?;
    let axes = attr("scan_input_axes").map(|a| a.ints.clone());
    let mut shapes = BTreeMap::new();
    let mut steps = None;
    for (i, (input, body_input)) in n.input.iter().zip(&body.input).enumerate() {
        let mut shape = known.shape(input)?;
        if i >= states {
            let a = axes.as_ref().map_or(Some(0), |a| a.get(i - states).copied())?;
            let axis = normalize_axis(a, shape.len(), 0)?;
            steps = Some(shape.remove(axis));
        }
        shapes.insert(body_input.name.as_str(), shape);
    }
    Some((steps?, shapes))
}

fn is_default_domain(n: &NodeProto) -> bool {
    n.domain.is_empty() || n.domain == "ai.onnx"
}

/// A one-element integer initializer's value.
fn int_scalar(t: &TensorProto) -> Option<i64> {
    match (&t.int64_data[..], &t.int32_data[..], t.raw_data.len(), t.data_type) {
        ([v], [], 0, _) => Some(*v),
        ([], [v], 0, _) => Some(i64::from(*v)),
        ([], [], 8, crate::proto::data_type::INT64) => Some(i64::from_le_bytes(t.raw_data[..].try_into().ok()?)),
        _ => None,
    }
}

/// The value of a `Constant` node holding one integer.
fn constant_int(n: &NodeProto) -> Option<i64> {
    let a = n.attribute.iter().find(|a| a.name == "value" || a.name == "value_int")?;
    match (a.name.as_str(), a.r#type) {
        ("value_int", t) if t == AttributeType::Int as i32 => Some(a.i),
        ("value", _) => int_scalar(a.t.as_ref()?),
        _ => None,
    }
}
