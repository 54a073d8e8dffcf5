//! Control flow, unrolled at import time: every shape is static, so a
//! `Scan` runs its body once per step of its (static) sequence length, a
//! `Loop` once per iteration of a trip count known at import time, and an
//! `If` either inlines the branch its constant condition picks or, when
//! the condition is only known at run time, computes both branches and
//! selects per output (`Where`). The body's nodes are lowered as the
//! parent's, under fresh names, so the schedule is the straight-line code
//! the interpreter would have run; nothing is decided at run time.
//!
//! A body may hold control flow itself: its subgraphs read the body's
//! values under their new names ([`crate::lower::build::subgraph`]) and unroll in turn.
//!
//! Limits (each refused with its reason): a `Loop` whose condition is computed at run time or whose
//! trip count is not a constant or is negative, an `If` on a run-time
//! condition whose branches' outputs differ in shape or type, and unrolls
//! past the import budget (`crate::budget`). Before it unrolls, a `Scan`
//! or `Loop` checks that its steps fit: each step counts one node, plus
//! at least [`min_nodes`] for its body (nested unrolls the model fixes
//! included), and its copy of the body counts its encoded bytes. A `Loop`
//! counts its whole trip count, even when its condition would end it
//! sooner (which is known only while unrolling).

use std::collections::BTreeMap;

use prost::Message as _;
use rlx_sched::DType;

use crate::budget::Grouped;
use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::subgraph::inline_graph;
use crate::lower::build::unroll::{min_nodes, Known};
use crate::lower::build::{numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType, GraphProto};
use crate::tensor::{ConstData, ConstTensor};

/// The shape and element type of a named value.
fn value_info(lw: &Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<(Vec<usize>, DType), ImportError> {
    Ok(match lw.value(ctx, name)? {
        Value::Data { storage, shape } => (shape.clone(), lw.storages[*storage].dtype),
        Value::Const(c) => (c.shape.clone(), c.data.dtype()),
    })
}

fn int_const(shape: Vec<usize>, values: Vec<i64>) -> ConstTensor {
    ConstTensor { shape, data: ConstData::I64(values) }
}

/// Defines `out` as element `index` of `x` along `axis` (the axis
/// dropped): a view when nothing lies before the axis, else a `Gather`.
fn take(lw: &mut Lowerer, ctx: &NodeCtx<'_>, x: &str, axis: usize, index: usize, out: &str) -> R {
    let (shape, dtype) = value_info(lw, ctx, x)?;
    let mut sliced = shape.clone();
    sliced.remove(axis);
    if let Value::Data { storage, .. } = lw.value(ctx, x)? {
        if numel(ctx, &shape[..axis])? == 1 {
            let offset = index * numel(ctx, &sliced)? * dtype.size();
            let view = lw.add_view(*storage, offset, sliced.clone());
            lw.values.insert(out.to_string(), Value::Data { storage: view, shape: sliced });
            return Ok(());
        }
    }
    let idx = lw.constant(out, "index", int_const(vec![], vec![index as i64]));
    lw.lower_part(ctx, "Gather", &[x, &idx], &[out], vec![int_attr("axis", axis as i64)])
}

/// Defines `out` as `pieces` (one shape) stacked along a new `axis`.
fn stack(lw: &mut Lowerer, ctx: &NodeCtx<'_>, pieces: &[String], axis: usize, out: &str) -> R {
    let (shape, _) = value_info(lw, ctx, &pieces[0])?;
    let mut one = shape.clone();
    one.insert(axis, 1);
    let one_shape =
        lw.constant(out, "piece_shape", int_const(vec![one.len()], one.iter().map(|&d| d as i64).collect()));
    if let [piece] = pieces {
        return lw.lower_part(ctx, "Reshape", &[piece, &one_shape], &[out], Vec::new());
    }
    let mut parts = Vec::with_capacity(pieces.len());
    for (t, piece) in pieces.iter().enumerate() {
        let part = lw.internal_name(out, &format!("step{t}"));
        lw.lower_part(ctx, "Reshape", &[piece, &one_shape], &[&part], Vec::new())?;
        parts.push(part);
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    lw.lower_part(ctx, "Concat", &parts, &[out], vec![int_attr("axis", axis as i64)])
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

fn alias(lw: &mut Lowerer, ctx: &NodeCtx<'_>, from: &str, to: &str) -> R {
    lw.lower_part(ctx, "Identity", &[from], &[to], Vec::new())
}

fn body<'a>(ctx: &'a NodeCtx<'_>, name: &str) -> Result<&'a GraphProto, ImportError> {
    ctx.graph_attr(name)?.ok_or_else(|| ctx.bad_attr(name, "is missing"))
}

/// Checks that `steps` unrolled steps of `body` fit the import budget,
/// before any is unrolled: each step counts one node and at least
/// [`min_nodes`] of the body (its inputs of `shapes`), and the step's copy
/// of the body its encoded bytes, which are counted here.
fn reserve_unroll(lw: &mut Lowerer, ctx: &NodeCtx<'_>, body: &GraphProto, steps: usize, shapes: Shapes<'_>) -> R {
    let per_step = min_nodes(body, &Known::body(lw, body, shapes), lw.opset).saturating_add(1);
    let nodes = (steps as u128).checked_mul(per_step).and_then(|n| usize::try_from(n).ok());
    let each = if per_step == 1 { "node" } else { "nodes" };
    let needs =
        format!("unrolling needs {} steps of at least {} {each} each", Grouped(steps as u128), Grouped(per_step));
    lw.budget.reserve_nodes(ctx, &needs, nodes)?;
    let bytes = body.encoded_len().checked_mul(steps);
    lw.budget.reserve_bytes(
        ctx,
        &format!("copying its {}-byte body for {} steps", Grouped(body.encoded_len() as u128), Grouped(steps as u128)),
        bytes,
    )?;
    lw.budget.add_bytes(bytes.unwrap_or(usize::MAX));
    Ok(())
}

/// The shapes of a body's inputs, by name, where known.
type Shapes<'a> = BTreeMap<&'a str, Vec<usize>>;

/// `body`'s inputs bound to `values`, with their shapes where known.
fn bound_shapes<'g>(lw: &Lowerer, ctx: &NodeCtx<'_>, body: &'g GraphProto, values: &[String]) -> Shapes<'g> {
    body.input.iter().zip(values).filter_map(|(i, v)| Some((i.name.as_str(), value_info(lw, ctx, v).ok()?.0))).collect()
}

/// A per-input list attribute (`scan_input_axes`, ...): `count` zeros when
/// absent.
fn per_input(ctx: &NodeCtx<'_>, name: &str, count: usize) -> Result<Vec<i64>, ImportError> {
    match ctx.ints_attr(name)? {
        None => Ok(vec![0; count]),
        Some(v) if v.len() == count => Ok(v.to_vec()),
        Some(v) => Err(ctx.bad_attr(name, format!("has {} entries for {count} values", v.len()))),
    }
}

/// `Scan`: states threaded through the steps, scan inputs sliced per step
/// (forward or reverse along their axis), scan outputs stacked. Opset 8's
/// form (a leading batch axis and optional `sequence_lens`) runs the same
/// per batch element, without `sequence_lens`.
pub(crate) fn scan(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let graph = body(ctx, "body")?;
    let m = usize::try_from(ctx.int_attr("num_scan_inputs", 0)?)
        .ok()
        .filter(|&m| m > 0)
        .ok_or_else(|| ctx.bad_attr("num_scan_inputs", "must be positive"))?;
    let (inputs, outputs): (Vec<&str>, Vec<&str>) =
        (ctx.node.input.iter().map(String::as_str).collect(), ctx.node.output.iter().map(String::as_str).collect());
    if lw.opset < 9 {
        if inputs.first().is_some_and(|s| !s.is_empty()) {
            return Err(ctx.err("`sequence_lens` (opset 8) is not supported: every sequence runs its full length"));
        }
        if ctx.has_attr("directions") {
            return Err(ctx.bad_attr("directions", "is not supported (opset 8 Scan runs forward only here)"));
        }
        return scan_batched(lw, ctx, graph, m, &inputs[1..], &outputs);
    }
    let n =
        inputs.len().checked_sub(m).ok_or_else(|| ctx.err(format!("has {} inputs, fewer than {m}", inputs.len())))?;
    let plan = ScanPlan::read(ctx, graph, n, m)?;
    let names: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
    let out_names: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    scan_steps(lw, ctx, graph, &plan, &names, &out_names)
}

/// A `Scan`'s attributes, checked against its body.
struct ScanPlan {
    states: usize,
    input_axes: Vec<i64>,
    input_reverse: Vec<bool>,
    output_axes: Vec<i64>,
    output_reverse: Vec<bool>,
}

impl ScanPlan {
    fn read(ctx: &NodeCtx<'_>, graph: &GraphProto, n: usize, m: usize) -> Result<Self, ImportError> {
        let k = graph.output.len().checked_sub(n).ok_or_else(|| {
            ctx.err(format!("the body has {} outputs, fewer than its {n} states", graph.output.len()))
        })?;
        if ctx.node.output.len() != n + k {
            return Err(ctx.err(format!(
                "has {} outputs; the body gives {n} states and {k} scan outputs",
                ctx.node.output.len()
            )));
        }
        let reverse = |name: &str, count: usize| -> Result<Vec<bool>, ImportError> {
            per_input(ctx, name, count)?
                .into_iter()
                .map(|d| match d {
                    0 => Ok(false),
                    1 => Ok(true),
                    other => Err(ctx.bad_attr(name, format!("has direction {other}; 0 (forward) or 1 (reverse)"))),
                })
                .collect()
        };
        Ok(ScanPlan {
            states: n,
            input_axes: per_input(ctx, "scan_input_axes", m)?,
            input_reverse: reverse("scan_input_directions", m)?,
            output_axes: per_input(ctx, "scan_output_axes", k)?,
            output_reverse: reverse("scan_output_directions", k)?,
        })
    }
}

/// Runs the steps of a `Scan` over `inputs` (states, then scan inputs),
/// defining `outputs` (final states, then stacked scan outputs).
fn scan_steps(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    graph: &GraphProto,
    plan: &ScanPlan,
    inputs: &[String],
    outputs: &[String],
) -> R {
    let n = plan.states;
    let mut axes = Vec::new();
    let mut steps = None;
    for (j, x) in inputs[n..].iter().enumerate() {
        let (shape, _) = value_info(lw, ctx, x)?;
        let a = plan.input_axes[j];
        let axis = normalize_axis(a, shape.len(), 0).ok_or_else(|| {
            ctx.bad_attr("scan_input_axes", format!("{a} is out of range for `{x}` of shape {shape:?}"))
        })?;
        match steps {
            None => steps = Some(shape[axis]),
            Some(t) if t != shape[axis] => {
                return Err(
                    ctx.err(format!("scan input `{x}` has {} steps along axis {axis}; the first has {t}", shape[axis]))
                )
            }
            Some(_) => {}
        }
        axes.push(axis);
    }
    let steps = steps.ok_or_else(|| ctx.err("has no scan input"))?;
    if steps == 0 {
        return Err(ctx.err("a scan of 0 steps (its outputs' shapes come from the body) is not supported"));
    }
    let mut shapes = bound_shapes(lw, ctx, graph, &inputs[..n]);
    for ((j, x), body_input) in inputs[n..].iter().enumerate().zip(graph.input.iter().skip(n)) {
        let mut shape = value_info(lw, ctx, x)?.0;
        shape.remove(axes[j]);
        shapes.insert(body_input.name.as_str(), shape);
    }
    reserve_unroll(lw, ctx, graph, steps, shapes)?;
    let base = outputs.iter().find(|o| !o.is_empty()).cloned().unwrap_or_else(|| ctx.label.clone());
    let mut states: Vec<String> = inputs[..n].to_vec();
    let mut pieces: Vec<Vec<String>> = vec![Vec::with_capacity(steps); graph.output.len() - n];
    for t in 0..steps {
        lw.budget.node(ctx)?;
        let prefix = lw.internal_name(&base, &format!("step{t}"));
        let mut bound = states.clone();
        for (j, x) in inputs[n..].iter().enumerate() {
            let index = if plan.input_reverse[j] { steps - 1 - t } else { t };
            let slice = lw.internal_name(&prefix, &format!("in{j}"));
            take(lw, ctx, x, axes[j], index, &slice)?;
            bound.push(slice);
        }
        let outs = inline_graph(lw, ctx, graph, &prefix, &bound)?;
        states = outs[..n].to_vec();
        for (k, o) in outs[n..].iter().enumerate() {
            pieces[k].push(o.clone());
        }
    }
    for (state, out) in states.iter().zip(outputs) {
        if !out.is_empty() {
            alias(lw, ctx, state, out)?;
        }
    }
    for (k, (mut list, out)) in pieces.into_iter().zip(&outputs[n..]).enumerate() {
        if out.is_empty() {
            continue;
        }
        if plan.output_reverse[k] {
            list.reverse();
        }
        let (shape, _) = value_info(lw, ctx, &list[0])?;
        let a = plan.output_axes[k];
        let axis = normalize_axis(a, shape.len(), 1).ok_or_else(|| {
            ctx.bad_attr("scan_output_axes", format!("{a} is out of range for rank {}", shape.len() + 1))
        })?;
        stack(lw, ctx, &list, axis, out)?;
    }
    Ok(())
}

/// Opset 8's `Scan`: axis 0 of every input and output is a batch axis,
/// axis 1 of the scan inputs the sequence. Each batch element runs as an
/// opset-9 scan; the results are stacked back along the batch axis.
fn scan_batched(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    graph: &GraphProto,
    m: usize,
    inputs: &[&str],
    outputs: &[&str],
) -> R {
    let n =
        inputs.len().checked_sub(m).ok_or_else(|| ctx.err(format!("has {} inputs, fewer than {m}", inputs.len())))?;
    let k = graph.output.len().saturating_sub(n);
    let plan = ScanPlan {
        states: n,
        input_axes: vec![0; m],
        input_reverse: vec![false; m],
        output_axes: vec![0; k],
        output_reverse: vec![false; k],
    };
    if outputs.len() != n + k {
        return Err(ctx.err(format!("has {} outputs; the body gives {n} states and {k} scan outputs", outputs.len())));
    }
    let (shape, _) = value_info(lw, ctx, inputs[0])?;
    let batch = *shape.first().ok_or_else(|| ctx.err(format!("input `{}` has no batch axis", inputs[0])))?;
    let base = outputs.iter().find(|o| !o.is_empty()).map_or(ctx.label.clone(), |o| o.to_string());
    // Each batch element counts a node, and its scan the rest.
    let needs = format!("unrolling needs {} batch elements of at least 1 node each", Grouped(batch as u128));
    lw.budget.reserve_nodes(ctx, &needs, Some(batch))?;
    let mut per_output: Vec<Vec<String>> = vec![Vec::with_capacity(batch); n + k];
    for b in 0..batch {
        lw.budget.node(ctx)?;
        let prefix = lw.internal_name(&base, &format!("batch{b}"));
        let mut row_inputs = Vec::with_capacity(inputs.len());
        for (i, x) in inputs.iter().enumerate() {
            let row = lw.internal_name(&prefix, &format!("in{i}"));
            take(lw, ctx, x, 0, b, &row)?;
            row_inputs.push(row);
        }
        let row_outputs: Vec<String> = (0..n + k).map(|i| lw.internal_name(&prefix, &format!("out{i}"))).collect();
        for name in &row_outputs {
            lw.graph_names.insert(name.clone());
        }
        scan_steps(lw, ctx, graph, &plan, &row_inputs, &row_outputs)?;
        for (list, name) in per_output.iter_mut().zip(row_outputs) {
            list.push(name);
        }
    }
    for (list, out) in per_output.iter().zip(outputs) {
        if !out.is_empty() {
            stack(lw, ctx, list, 0, out)?;
        }
    }
    Ok(())
}

/// `If`: a constant condition inlines its branch; a run-time one computes
/// both and selects each output with `Where` (both branches are pure, and
/// every shape must agree for the result to have one static shape).
pub(crate) fn if_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (then_branch, else_branch) = (body(ctx, "then_branch")?, body(ctx, "else_branch")?);
    let (cond, _) = lw.input(ctx, 0)?;
    let base = ctx.node.output.iter().find(|o| !o.is_empty()).cloned().unwrap_or_else(|| ctx.label.clone());
    let outputs = ctx.node.output.clone();
    for branch in [then_branch, else_branch] {
        if branch.output.len() != outputs.len() {
            return Err(ctx.err(format!(
                "has {} outputs; branch `{}` gives {}",
                outputs.len(),
                branch.name,
                branch.output.len()
            )));
        }
    }
    if let Some(c) = lw.const_input(ctx, 0)? {
        let flags = c.data.ints().unwrap_or_default();
        let [flag] = flags[..] else {
            return Err(ctx.err(format!("the condition has shape {:?}; one element is expected", c.shape)));
        };
        let taken = flag != 0;
        let branch = if taken { then_branch } else { else_branch };
        let prefix = lw.internal_name(&base, if taken { "then" } else { "else" });
        let results = inline_graph(lw, ctx, branch, &prefix, &[])?;
        for (r, out) in results.iter().zip(&outputs) {
            if !out.is_empty() {
                alias(lw, ctx, r, out)?;
            }
        }
        return Ok(());
    }
    let (cond_shape, cond_type) = value_info(lw, ctx, &cond)?;
    if cond_type != DType::Bool || numel(ctx, &cond_shape)? != 1 {
        return Err(ctx.err(format!("the condition is {cond_type} of shape {cond_shape:?}; one bool is expected")));
    }
    let then_prefix = lw.internal_name(&base, "then");
    let then_results = inline_graph(lw, ctx, then_branch, &then_prefix, &[])?;
    let else_prefix = lw.internal_name(&base, "else");
    let else_results = inline_graph(lw, ctx, else_branch, &else_prefix, &[])?;
    for ((a, b), out) in then_results.iter().zip(&else_results).zip(&outputs) {
        if out.is_empty() {
            continue;
        }
        let (ia, ib) = (value_info(lw, ctx, a)?, value_info(lw, ctx, b)?);
        if ia != ib {
            return Err(ctx.err(format!(
                "output `{out}`: the branches give {} {:?} and {} {:?}, and the condition is only known at run time",
                ia.1, ia.0, ib.1, ib.0
            )));
        }
        lw.lower_part(ctx, "Where", &[&cond, a, b], &[out], Vec::new())?;
    }
    Ok(())
}

/// `Loop` with a trip count known at import time and a condition that the
/// body leaves constant: the iterations unrolled, loop-carried values
/// threaded through, scan outputs stacked along a new axis 0.
pub(crate) fn loop_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let graph = body(ctx, "body")?;
    if ctx.node.input.len() < 2 {
        return Err(ctx.err(format!("expects at least 2 inputs (trip count, condition), has {}", ctx.node.input.len())));
    }
    let trip = match ctx.input_name(0) {
        None => None,
        Some(_) => {
            let (_, v) = lw.const_ints(ctx, 0)?;
            match v[..] {
                [t] if t < 0 => {
                    return Err(ctx.err(format!(
                        "the trip count is {t}; a negative count is refused (ONNX's `for (i = 0; i < M; ++i)` \
                         would run no iteration, where an exporter may have meant no limit): give 0 or more"
                    )))
                }
                [t] => Some(usize::try_from(t).map_err(|_| ctx.err(format!("the trip count {t} is too large")))?),
                _ => return Err(ctx.err(format!("the trip count {v:?} must be one integer"))),
            }
        }
    };
    let mut running = match ctx.input_name(1) {
        None => true,
        Some(_) => match lw.const_input(ctx, 1)? {
            Some(c) => c.data.ints().is_some_and(|v| v.len() == 1 && v[0] != 0),
            None => {
                return Err(
                    ctx.err("the loop condition is computed at run time; it must be a constant known at import time")
                )
            }
        },
    };
    let trip =
        trip.ok_or_else(|| ctx.err("a Loop without a trip count ends on a run-time condition: not supported"))?;
    let carried = ctx.node.input.len() - 2;
    let scans = graph.output.len().checked_sub(1 + carried).ok_or_else(|| {
        ctx.err(format!("the body has {} outputs for {carried} loop-carried values", graph.output.len()))
    })?;
    if ctx.node.output.len() != carried + scans {
        return Err(ctx.err(format!(
            "has {} outputs; the body gives {carried} loop-carried values and {scans} scan outputs",
            ctx.node.output.len()
        )));
    }
    if running {
        let mut shapes = bound_shapes(lw, ctx, graph, &ctx.node.input);
        // The iteration number and the condition: scalars.
        for i in graph.input.iter().take(2) {
            shapes.insert(i.name.as_str(), Vec::new());
        }
        reserve_unroll(lw, ctx, graph, trip, shapes)?;
    }
    let base = ctx.node.output.iter().find(|o| !o.is_empty()).cloned().unwrap_or_else(|| ctx.label.clone());
    let mut values: Vec<String> = ctx.node.input[2..].to_vec();
    let mut pieces: Vec<Vec<String>> = vec![Vec::new(); scans];
    let mut i = 0;
    while running && i < trip {
        lw.budget.node(ctx)?;
        let prefix = lw.internal_name(&base, &format!("iter{i}"));
        let iteration = lw.constant(&prefix, "iteration", int_const(vec![], vec![i as i64]));
        let cond = lw.constant(&prefix, "cond", ConstTensor { shape: vec![], data: ConstData::Bool(vec![true]) });
        let mut bound = vec![iteration, cond];
        bound.extend(values.iter().cloned());
        let outs = inline_graph(lw, ctx, graph, &prefix, &bound)?;
        running = match lw.value(ctx, &outs[0])? {
            Value::Const(c) => c.data.ints().is_some_and(|v| v.len() == 1 && v[0] != 0),
            Value::Data { .. } => {
                return Err(
                    ctx.err("the body computes its condition at run time (a data-dependent trip count): not supported")
                )
            }
        };
        values = outs[1..=carried].to_vec();
        for (k, o) in outs[1 + carried..].iter().enumerate() {
            pieces[k].push(o.clone());
        }
        i += 1;
    }
    for (v, out) in values.iter().zip(&ctx.node.output) {
        if !out.is_empty() {
            alias(lw, ctx, v, out)?;
        }
    }
    for (list, out) in pieces.iter().zip(&ctx.node.output[carried..]) {
        if out.is_empty() {
            continue;
        }
        if list.is_empty() {
            return Err(ctx.err(format!("scan output `{out}` of a loop that runs no iteration has no static shape")));
        }
        stack(lw, ctx, list, 0, out)?;
    }
    Ok(())
}
