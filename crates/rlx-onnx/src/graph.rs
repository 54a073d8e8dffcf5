//! Reading the graph's interface: opset, inputs with static shapes,
//! initializers.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::ImportError;
use crate::lower::GraphInput;
use crate::proto::{DimensionValue, ModelProto, ValueInfoProto};
use crate::tensor::{data_type_name, dtype_of, interface_dtype_of, read_tensor, ConstTensor, CARRIED_TYPES};

/// The model's `ai.onnx` opset version (1 when it imports none, as the
/// spec's default).
pub(crate) fn default_opset(model: &ModelProto) -> i64 {
    model.opset_import.iter().find(|o| o.domain.is_empty() || o.domain == "ai.onnx").map_or(1, |o| o.version)
}

/// The declared dims of a value when they are all fixed numbers.
pub(crate) fn static_dims(info: &ValueInfoProto) -> Option<Vec<usize>> {
    let shape = info.r#type.as_ref()?.tensor_type.as_ref()?.shape.as_ref()?;
    shape
        .dim
        .iter()
        .map(|d| match d.value {
            Some(DimensionValue::DimValue(v)) => usize::try_from(v).ok(),
            _ => None,
        })
        .collect()
}

/// Why a graph input has no static shape, for the message.
fn describe_dims(info: &ValueInfoProto) -> String {
    let Some(shape) = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref()) else {
        return "no shape".to_string();
    };
    let dims: Vec<String> = shape
        .dim
        .iter()
        .map(|d| match &d.value {
            Some(DimensionValue::DimValue(v)) => v.to_string(),
            Some(DimensionValue::DimParam(p)) => p.clone(),
            None => "?".to_string(),
        })
        .collect();
    format!("shape [{}]", dims.join(", "))
}

/// Initializers by name, read (external data relative to `base_dir`).
pub(crate) fn initializers(model: &ModelProto, base_dir: &Path) -> Result<Vec<(String, ConstTensor)>, ImportError> {
    let graph = model.graph.as_ref().ok_or(ImportError::NoGraph)?;
    graph.initializer.iter().map(|t| Ok((t.name.clone(), read_tensor(t, base_dir)?))).collect()
}

/// Adds the `--const` bindings to the constants (replacing an
/// initializer's default value); each must name a graph input and match its
/// declared type and, where static, shape.
pub(crate) fn bind_consts(
    model: &ModelProto,
    constants: &mut Vec<(String, ConstTensor)>,
    bindings: &[(String, ConstTensor)],
) -> Result<(), ImportError> {
    let graph = model.graph.as_ref().ok_or(ImportError::NoGraph)?;
    for (name, value) in bindings {
        let info = graph.input.iter().find(|i| &i.name == name).ok_or_else(|| {
            let names: Vec<&str> = graph.input.iter().map(|i| i.name.as_str()).collect();
            ImportError::tensor(name, format!("--const: no graph input has this name; inputs: {}", names.join(", ")))
        })?;
        let elem = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).map_or(0, |t| t.elem_type);
        if dtype_of(elem) != Some(value.data.dtype()) {
            return Err(ImportError::tensor(
                name,
                format!(
                    "--const: the input is {}, the value given is {}",
                    data_type_name(elem),
                    value.data.dtype().name()
                ),
            ));
        }
        if let Some(dims) = static_dims(info) {
            if dims != value.shape {
                return Err(ImportError::tensor(
                    name,
                    format!("--const: the input has shape {dims:?}, the value given has {:?}", value.shape),
                ));
            }
        }
        constants.retain(|(n, _)| n != name);
        constants.push((name.clone(), value.clone()));
    }
    Ok(())
}

/// The graph inputs that are not initializers, with static shapes from
/// `overrides` (by name) or from the model.
pub(crate) fn graph_inputs(
    model: &ModelProto,
    overrides: &[(String, Vec<usize>)],
    initializer_names: &[&str],
) -> Result<Vec<GraphInput>, ImportError> {
    let graph = model.graph.as_ref().ok_or(ImportError::NoGraph)?;
    let mut remaining: BTreeMap<&str, &Vec<usize>> = BTreeMap::new();
    for (name, dims) in overrides {
        if let Some(first) = remaining.insert(name, dims) {
            return Err(ImportError::BadShapeOverride {
                text: override_text(name, dims),
                message: format!("input `{name}` already has a shape ({})", override_text(name, first)),
            });
        }
    }
    // Symbolic dims bound so far: name -> (value, the override binding it).
    let mut symbols: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for info in &graph.input {
        // Two inputs of one name would be renamed apart and the wrong one
        // fed: the graph is not SSA, which the ONNX checker refuses too.
        if !seen.insert(info.name.as_str()) {
            return Err(ImportError::tensor(&info.name, "is declared twice among the graph inputs"));
        }
        if initializer_names.contains(&info.name.as_str()) {
            continue;
        }
        let elem = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).map_or(0, |t| t.elem_type);
        let dtype = interface_dtype_of(elem).ok_or_else(|| {
            ImportError::tensor(
                &info.name,
                format!(
                    "is a graph input of type {} ({elem}); supported input types: {CARRIED_TYPES}",
                    data_type_name(elem)
                ),
            )
        })?;
        let shape = match remaining.remove(info.name.as_str()) {
            Some(s) => {
                check_override(info, s, &mut symbols)?;
                s.clone()
            }
            None => static_dims(info).ok_or_else(|| {
                ImportError::tensor(
                    &info.name,
                    format!(
                        "is a graph input with {}; give a static shape with --shape {}=D1,D2,...",
                        describe_dims(info),
                        info.name
                    ),
                )
            })?,
        };
        out.push(GraphInput { name: info.name.clone(), shape, dtype });
    }
    if let Some((name, _)) = remaining.into_iter().next() {
        return Err(ImportError::UnknownShapeOverride(name.to_string()));
    }
    Ok(out)
}

/// `x=1,128`, as the override was written.
fn override_text(name: &str, dims: &[usize]) -> String {
    let dims: Vec<String> = dims.iter().map(usize::to_string).collect();
    format!("{name}={}", dims.join(","))
}

/// An override may only bind the symbolic dims of an input's declared
/// shape: the rank must match, each static dim must be given as declared,
/// and a symbol used by several inputs must get one value. An input
/// declared without a shape takes any.
fn check_override(
    info: &ValueInfoProto,
    dims: &[usize],
    symbols: &mut BTreeMap<String, (usize, String)>,
) -> Result<(), ImportError> {
    let name = &info.name;
    let Some(shape) = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref()) else {
        return Ok(());
    };
    let fail = |message: String| Err(ImportError::BadShapeOverride { text: override_text(name, dims), message });
    if shape.dim.len() != dims.len() {
        return fail(format!(
            "input `{name}` has rank {} ({}), the override has rank {}",
            shape.dim.len(),
            describe_dims(info),
            dims.len()
        ));
    }
    for (i, (d, &given)) in shape.dim.iter().zip(dims).enumerate() {
        match &d.value {
            Some(DimensionValue::DimValue(v)) if usize::try_from(*v).ok() != Some(given) => {
                return fail(format!(
                    "dim {i} of input `{name}` is {v} in the model ({}), the override gives {given}; \
                     only symbolic dims can be bound",
                    describe_dims(info)
                ));
            }
            Some(DimensionValue::DimParam(p)) if !p.is_empty() => {
                let this = override_text(name, dims);
                match symbols.get(p) {
                    Some((v, by)) if *v != given => {
                        return fail(format!("dim `{p}` is {v} by --shape {by}, the override gives {given}"));
                    }
                    Some(_) => {}
                    None => {
                        symbols.insert(p.clone(), (given, this));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Parses a `--shape` flag value, `name=1,128`.
pub fn parse_shape_override(text: &str) -> Result<(String, Vec<usize>), String> {
    let (name, dims) = text.split_once('=').ok_or_else(|| format!("`{text}` is not NAME=D1,D2,..."))?;
    if name.is_empty() {
        return Err(format!("`{text}` has no input name"));
    }
    let dims = if dims.trim().is_empty() {
        Vec::new()
    } else {
        dims.split(',')
            .map(|d| d.trim().parse::<usize>().map_err(|_| format!("`{d}` in `{text}` is not a dimension")))
            .collect::<Result<_, _>>()?
    };
    Ok((name.to_string(), dims))
}
