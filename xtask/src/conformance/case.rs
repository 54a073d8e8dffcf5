//! Running one node test in the reference interpreter: per data set, bind
//! the import-time inputs, import, validate, run, compare.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rlx_interp::Interpreter;
use rlx_onnx::proto::data_type;
use rlx_onnx::tensor::{self, data_type_name, read_tensor, ConstData, ConstTensor};
use rlx_onnx::{ImportError, ImportOptions};
use rlx_sched::{DType, Schedule};

use super::compare;
use super::tree::{self, NodeTest};
use crate::verify::{sanitize, write_bytes_if_changed};

/// A data set that passed: what the generated path needs to run it again.
pub(crate) struct PassedSet {
    /// The `.sched` file written for this data set (its weights beside it).
    pub sched: PathBuf,
    pub schedule: Schedule,
    /// Schedule input name and little-endian bytes, in schedule order.
    pub inputs: Vec<(String, Vec<u8>)>,
    /// Per graph output: the schedule output's name, dtype and shape, the
    /// interpreter's bytes, and the expected tensor.
    pub outputs: Vec<PassedOutput>,
}

/// One output of a passed data set.
pub(crate) struct PassedOutput {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub interpreted: Vec<u8>,
    pub expected: ConstTensor,
}

/// The result of one test: every data set passed, or the first failure.
pub(crate) enum Outcome {
    Pass(Vec<PassedSet>),
    /// A one-line reason.
    Fail(String),
}

/// Runs every data set of `test`, writing schedules under
/// `work/<test>/set<K>/`. A panic anywhere is caught and reported as the
/// test's failure, so one bad test never ends the run.
pub(crate) fn run_test(test: &NodeTest, work: &Path, verbose: bool) -> Outcome {
    let sets = match tree::data_sets(&test.dir) {
        Ok(s) if s.is_empty() => return Outcome::Fail("no test_data_set_* directory".to_string()),
        Ok(s) => s,
        Err(e) => return Outcome::Fail(format!("{e:#}")),
    };
    let several = sets.len() > 1;
    let mut passed = Vec::new();
    for (k, set) in sets.iter().enumerate() {
        let dir = work.join(&test.name).join(format!("set{k}"));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_set(test, set, &dir, verbose)))
            .unwrap_or_else(|payload| Err(panic_reason(payload.as_ref())));
        match result {
            Ok(p) => passed.push(p),
            Err(reason) if several => return Outcome::Fail(format!("data set {k}: {reason}")),
            Err(reason) => return Outcome::Fail(reason),
        }
    }
    Outcome::Pass(passed)
}

/// The message the last panic hook call recorded (with its location), set
/// by [`quiet_panics`].
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Runs `f` with a panic hook that records the message instead of printing
/// it: a caught panic becomes a test's one-line reason, not a backtrace
/// note in the middle of the report.
pub(crate) fn quiet_panics<T>(f: impl FnOnce() -> T) -> T {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string().replace('\n', " ");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
    }));
    let out = f();
    std::panic::set_hook(previous);
    out
}

fn panic_reason(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return format!("panic: {text}");
    }
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string());
    format!("panic: {}", message.replace('\n', " "))
}

/// An import error as one line; the list of supported ops that follows an
/// unsupported op is left out unless `verbose` (it is the same every time).
fn import_reason(e: &ImportError, verbose: bool) -> String {
    match e {
        ImportError::UnsupportedOp { op, node, .. } if !verbose => {
            format!("unsupported ONNX op `{op}` (node `{node}`)")
        }
        _ => e.to_string().replace('\n', " "),
    }
}

/// The names whose values some node needs at import time: its const
/// inputs (`rlx_onnx::const_inputs`), and, transitively, every input of a
/// node computing one of those (but `Shape` and `Size`, which read only
/// their input's static shape). An `_expanded` body computes a `Range`'s
/// or a `Loop`'s count from the graph's inputs this way. A control-flow
/// node's subgraphs are followed too (they are inlined at import time): a
/// needed output of an `If` needs its branches' outputs.
fn import_time_names(graph: &rlx_onnx::proto::GraphProto) -> std::collections::BTreeSet<String> {
    // Every node, each subgraph's nodes before the node that holds them,
    // which reads the subgraphs' outputs as extra inputs.
    fn flatten(graph: &rlx_onnx::proto::GraphProto, out: &mut Vec<(String, Vec<String>, Vec<String>)>) {
        for node in &graph.node {
            let mut inputs = node.input.clone();
            for g in node.attribute.iter().filter_map(|a| a.g.as_ref()) {
                flatten(g, out);
                inputs.extend(g.output.iter().map(|o| o.name.clone()));
            }
            out.push((node.op_type.clone(), inputs, node.output.clone()));
        }
    }
    let mut nodes = Vec::new();
    flatten(graph, &mut nodes);
    let mut needed = std::collections::BTreeSet::new();
    for (op, inputs, _) in &nodes {
        let positions = rlx_onnx::const_inputs(op);
        for (p, name) in inputs.iter().enumerate() {
            if positions.contains(&p) && !name.is_empty() {
                needed.insert(name.clone());
            }
        }
    }
    for (op, inputs, outputs) in nodes.iter().rev() {
        if matches!(op.as_str(), "Shape" | "Size") || !outputs.iter().any(|o| needed.contains(o)) {
            continue;
        }
        needed.extend(inputs.iter().filter(|i| !i.is_empty()).cloned());
    }
    needed
}

fn run_set(test: &NodeTest, set: &Path, dir: &Path, verbose: bool) -> Result<PassedSet, String> {
    let graph = test.model.graph.as_ref().ok_or("the model has no graph")?;
    if graph.node.is_empty() {
        return Err("the graph has no node".to_string());
    }
    let inputs = tree::read_tensors(set, "input").map_err(|e| format!("{e:#}"))?;
    let expected = tree::read_tensors(set, "output").map_err(|e| format!("{e:#}"))?;
    let data_inputs = test.data_inputs();
    if inputs.len() != data_inputs.len() || expected.len() != graph.output.len() {
        return Err(format!(
            "the data set has {} inputs and {} outputs, the graph {} and {}",
            inputs.len(),
            expected.len(),
            data_inputs.len(),
            graph.output.len()
        ));
    }

    // Inputs a node needs at import time (shapes, axes, k, ...) are bound
    // to this data set's values; the rest stay inputs with static shapes.
    let needed = import_time_names(graph);
    let is_const = |name: &str| needed.contains(name);
    let mut opts = ImportOptions::new("weights.safetensors");
    opts.model_name = Some(test.name.clone());
    let mut feeds = Vec::new();
    for (info, proto) in data_inputs.iter().zip(&inputs) {
        let value = read_tensor(proto, set).map_err(|e| format!("input `{}`: {e}", info.name))?;
        if is_const(&info.name) {
            opts.consts.push((info.name.clone(), value));
        } else {
            opts.shapes.push((info.name.clone(), value.shape.clone()));
            feeds.push((sanitize(&info.name), interface_bytes(proto.data_type, &value)));
        }
    }

    let imported = rlx_onnx::import_model(&test.model, &test.dir, &opts).map_err(|e| import_reason(&e, verbose))?;
    let sched = dir.join("model.sched");
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    write_bytes_if_changed(&dir.join(&opts.weights_file), &imported.weights).map_err(|e| format!("{e:#}"))?;
    write_bytes_if_changed(&sched, imported.sched_text.as_bytes()).map_err(|e| format!("{e:#}"))?;
    let schedule = match rlx_sched::check_source(&imported.sched_text, dir) {
        Ok(checked) => checked.schedule,
        Err(diags) => {
            let errors: Vec<&str> = diags.0.iter().filter(|d| d.is_error()).map(|d| d.message.as_str()).collect();
            let more = if errors.len() > 1 { format!(" (+{} more)", errors.len() - 1) } else { String::new() };
            return Err(format!("invalid schedule: {}{more}", errors.first().copied().unwrap_or("no message")));
        }
    };

    let weights = match &schedule.weights() {
        None => &[][..],
        Some(w) => imported.weights.get(w.data_offset..).ok_or("the weights file is shorter than its header")?,
    };
    let mut interp = Interpreter::new(schedule.clone(), weights).map_err(|e| e.to_string())?;
    for b in schedule.inputs() {
        let (_, bytes) = feeds
            .iter()
            .find(|(name, _)| *name == b.name)
            .ok_or_else(|| format!("schedule input `{}` matches no graph input", b.name))?;
        interp.set_bytes(&b.name, bytes).map_err(|e| e.to_string())?;
    }
    interp.run();

    let mut outputs = Vec::new();
    for (index, (info, proto)) in graph.output.iter().zip(&expected).enumerate() {
        let name = sanitize(&info.name);
        let b = schedule
            .outputs()
            .find(|b| b.name == name)
            .ok_or_else(|| format!("output {index}: the schedule has no output `{name}`"))?;
        let want = read_tensor(proto, set).map_err(|e| format!("output {index}: {e}"))?;
        let got = interp.bytes(&b.name).map_err(|e| e.to_string())?;
        let declared = tensor::interface_dtype_of(proto.data_type);
        if matches!(declared, Some(DType::F16 | DType::Bf16 | DType::F64)) && declared != Some(b.dtype) {
            return Err(format!("output {index}: dtype {} != expected {}", b.dtype, data_type_name(proto.data_type)));
        }
        compare::check(index, b.dtype, &b.shape, got, &want)?;
        outputs.push(PassedOutput {
            name,
            dtype: b.dtype,
            shape: b.shape.clone(),
            interpreted: got.to_vec(),
            expected: want,
        });
    }
    Ok(PassedSet { sched, schedule, inputs: feeds, outputs })
}

/// An input's bytes in the type of the model's interface: 2-byte floats
/// (read widened to f32) go back to their 2-byte bits, exactly; `DOUBLE`
/// (read as f32, the precision the model computes in) as f64.
fn interface_bytes(onnx_type: i32, value: &ConstTensor) -> Vec<u8> {
    match (onnx_type, &value.data) {
        (data_type::FLOAT16, ConstData::F32(v)) => {
            v.iter().flat_map(|&x| rlx_runtime::half::f16::from_f32(x).to_le_bytes()).collect()
        }
        (data_type::BFLOAT16, ConstData::F32(v)) => {
            v.iter().flat_map(|&x| rlx_runtime::half::bf16::from_f32(x).to_le_bytes()).collect()
        }
        (data_type::DOUBLE, ConstData::F32(v)) => v.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect(),
        _ => value.data.to_le_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_becomes_a_one_line_reason() {
        let reason = quiet_panics(|| {
            std::panic::catch_unwind(|| panic!("kernel\nfailed")).map_err(|payload| panic_reason(payload.as_ref()))
        });
        let reason = reason.expect_err("it panicked");
        assert!(reason.starts_with("panic: panicked at xtask/src/conformance/case.rs:"), "{reason}");
        assert!(reason.ends_with("kernel failed"), "{reason}");
    }
}
