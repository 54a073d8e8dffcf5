//! Subgraphs lowered inline, as the enclosing graph's own nodes, through
//! the dispatcher: control-flow bodies and attention's score modifiers.

use std::collections::BTreeMap;

use crate::error::ImportError;
use crate::lower::{dispatch, Lowerer, NodeCtx};
use crate::proto::{AttributeProto, GraphProto, NodeProto};

/// Lowers the nodes of `body` inline, as the enclosing graph's own.
/// `bound` gives, in order, the value name each body input takes; each
/// value the body defines gets a fresh name under `prefix`, and a name the
/// body reads without defining it is the enclosing scope's. Returns the
/// value names of the body's outputs.
pub(crate) fn inline_graph(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    body: &GraphProto,
    prefix: &str,
    bound: &[String],
) -> Result<Vec<String>, ImportError> {
    if body.input.len() != bound.len() {
        return Err(ctx.err(format!(
            "the body `{}` has {} inputs; {} are bound to it",
            body.name,
            body.input.len(),
            bound.len()
        )));
    }
    lw.depth += 1;
    let outputs = inline_nodes(lw, ctx, body, prefix, bound);
    lw.depth -= 1;
    outputs
}

/// [`inline_graph`] past its checks.
fn inline_nodes(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    body: &GraphProto,
    prefix: &str,
    bound: &[String],
) -> Result<Vec<String>, ImportError> {
    let mut renamed: BTreeMap<String, String> =
        body.input.iter().zip(bound).map(|(i, b)| (i.name.clone(), b.clone())).collect();
    for init in &body.initializer {
        let c = crate::tensor::read_tensor(init, std::path::Path::new("."))
            .map_err(|e| ctx.err(format!("initializer `{}` of the body: {e}", init.name)))?;
        let name = lw.constant(prefix, &init.name, c);
        renamed.insert(init.name.clone(), name);
    }
    for (index, node) in body.node.iter().enumerate() {
        let input = node.input.iter().map(|i| renamed.get(i).cloned().unwrap_or_else(|| i.clone())).collect();
        // A nested subgraph reads this body's values under their new names.
        let attribute = node
            .attribute
            .iter()
            .map(|a| match &a.g {
                Some(g) => AttributeProto { g: Some(rename_free(g, &renamed)), ..a.clone() },
                None => a.clone(),
            })
            .collect();
        let mut output = Vec::with_capacity(node.output.len());
        for o in &node.output {
            if o.is_empty() {
                output.push(String::new());
                continue;
            }
            let fresh = lw.internal_name(prefix, o);
            // Reserved now: two outputs of one node must not get one name.
            lw.graph_names.insert(fresh.clone());
            renamed.insert(o.clone(), fresh.clone());
            output.push(fresh);
        }
        let inner = NodeProto { input, output, attribute, ..node.clone() };
        let label =
            if node.name.is_empty() { format!("{}/#{index}", prefix) } else { format!("{prefix}/{}", node.name) };
        dispatch::lower_node(lw, &NodeCtx { node: &inner, label })?;
    }
    Ok(body.output.iter().map(|o| renamed.get(&o.name).cloned().unwrap_or_else(|| o.name.clone())).collect())
}

/// `graph` with every name it reads from enclosing scopes (not defined in
/// it: an input, initializer or node output, at any depth) renamed by
/// `renamed`.
fn rename_free(graph: &GraphProto, renamed: &BTreeMap<String, String>) -> GraphProto {
    let mut local: BTreeMap<String, String> = renamed.clone();
    let defined = graph
        .input
        .iter()
        .map(|i| &i.name)
        .chain(graph.initializer.iter().map(|t| &t.name))
        .chain(graph.node.iter().flat_map(|n| n.output.iter()));
    for name in defined {
        local.remove(name);
    }
    let rename = |n: &String| local.get(n).cloned().unwrap_or_else(|| n.clone());
    let node = graph
        .node
        .iter()
        .map(|n| NodeProto {
            input: n.input.iter().map(rename).collect(),
            attribute: n
                .attribute
                .iter()
                .map(|a| match &a.g {
                    Some(g) => AttributeProto { g: Some(rename_free(g, &local)), ..a.clone() },
                    None => a.clone(),
                })
                .collect(),
            ..n.clone()
        })
        .collect();
    let output =
        graph.output.iter().map(|o| crate::proto::ValueInfoProto { name: rename(&o.name), ..o.clone() }).collect();
    GraphProto { node, output, ..graph.clone() }
}
