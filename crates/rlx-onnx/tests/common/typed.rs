//! Typed test tensors (f32, i64, i32, bool) and one-node graphs over
//! them: built, imported, validated with no warnings and run in the
//! interpreter.

use rlx_interp::Interpreter;
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;
use rlx_sched::DType;

use super::*;

/// A test tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum T {
    F32(Vec<usize>, Vec<f32>),
    I64(Vec<usize>, Vec<i64>),
    I32(Vec<usize>, Vec<i32>),
    Bool(Vec<usize>, Vec<bool>),
    /// An integer type held in i64 (`UINT64` as its bits).
    Int(DType, Vec<usize>, Vec<i64>),
    /// ONNX `DOUBLE`.
    F64(Vec<usize>, Vec<f64>),
}

impl T {
    pub fn shape(&self) -> &[usize] {
        match self {
            T::F32(s, _) | T::I64(s, _) | T::I32(s, _) | T::Bool(s, _) | T::Int(_, s, _) | T::F64(s, _) => s,
        }
    }

    pub fn onnx_type(&self) -> i32 {
        match self {
            T::F32(..) => data_type::FLOAT,
            T::I64(..) => data_type::INT64,
            T::I32(..) => data_type::INT32,
            T::Bool(..) => data_type::BOOL,
            T::F64(..) => data_type::DOUBLE,
            T::Int(d, ..) => match d {
                DType::I8 => data_type::INT8,
                DType::U8 => data_type::UINT8,
                DType::I16 => data_type::INT16,
                DType::U16 => data_type::UINT16,
                DType::U32 => data_type::UINT32,
                DType::U64 => data_type::UINT64,
                other => panic!("no ONNX integer type for {other}"),
            },
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        match self {
            T::F32(_, v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            T::I64(_, v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            T::I32(_, v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            T::Bool(_, v) => v.iter().map(|&x| u8::from(x)).collect(),
            T::Int(d, _, v) => v.iter().flat_map(|x| x.to_le_bytes().into_iter().take(d.size())).collect(),
            T::F64(_, v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    pub fn from_bytes(dtype: DType, shape: Vec<usize>, b: &[u8]) -> T {
        match dtype {
            DType::F32 => T::F32(shape, b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I64 => T::I64(shape, b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I32 => T::I32(shape, b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::Bool => T::Bool(shape, b.iter().map(|&x| x != 0).collect()),
            DType::F64 => T::F64(shape, b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()),
            d => match rlx_onnx::tensor::ConstData::from_le_bytes(d, b) {
                Some(rlx_onnx::tensor::ConstData::Int(d, v)) => T::Int(d, shape, v),
                _ => panic!("no {d:?} outputs in these tests"),
            },
        }
    }

    pub fn proto(&self, name: &str) -> TensorProto {
        TensorProto {
            name: name.to_string(),
            dims: self.shape().iter().map(|&d| d as i64).collect(),
            data_type: self.onnx_type(),
            raw_data: self.bytes(),
            ..Default::default()
        }
    }

    pub fn info(&self, name: &str) -> ValueInfoProto {
        vi_typed(name, self.onnx_type(), self.shape().iter().map(|&d| DimensionValue::DimValue(d as i64)).collect())
    }
}

pub fn f(shape: &[usize], v: Vec<f32>) -> T {
    T::F32(shape.to_vec(), v)
}
pub fn i64s(shape: &[usize], v: Vec<i64>) -> T {
    T::I64(shape.to_vec(), v)
}
pub fn i32s(shape: &[usize], v: Vec<i32>) -> T {
    T::I32(shape.to_vec(), v)
}
pub fn bools(shape: &[usize], v: Vec<bool>) -> T {
    T::Bool(shape.to_vec(), v)
}
/// Integers of type `d` (values in its range; `UINT64` as its bits).
pub fn ints(d: DType, shape: &[usize], v: Vec<i64>) -> T {
    T::Int(d, shape.to_vec(), v)
}

/// An input of a case: fed at run time, or an initializer.
pub enum In {
    Data(&'static str, T),
    Init(&'static str, T),
}

/// Imports and runs a graph; returns the outputs in the order named.
pub fn run_graph(test: &str, nodes: Vec<NodeProto>, inputs: Vec<In>, outputs: &[&str]) -> Vec<T> {
    run_graph_opset(test, nodes, inputs, outputs, 18)
}

/// As [`run_graph`], at default-domain opset `opset`.
pub fn run_graph_opset(test: &str, nodes: Vec<NodeProto>, inputs: Vec<In>, outputs: &[&str], opset: i64) -> Vec<T> {
    let mut infos = Vec::new();
    let mut inits = Vec::new();
    let mut feeds = Vec::new();
    for i in &inputs {
        match i {
            In::Data(n, t) => {
                infos.push(t.info(n));
                feeds.push((*n, t.bytes()));
            }
            In::Init(n, t) => inits.push(t.proto(n)),
        }
    }
    // Outputs without a declared shape: inference decides it.
    let outs = outputs.iter().map(|n| ValueInfoProto { name: n.to_string(), ..Default::default() }).collect::<Vec<_>>();
    let m = model(nodes, inits, infos, outs, opset);
    run_model(test, &m, &feeds, outputs)
}

/// Imports `m`, validates it (no warnings), feeds the named inputs' bytes,
/// runs it in the interpreter and returns the outputs named.
pub fn run_model(test: &str, m: &ModelProto, feeds: &[(&str, Vec<u8>)], outputs: &[&str]) -> Vec<T> {
    let imported = import_model(m, &ImportOptions::new(WEIGHTS)).unwrap_or_else(|e| panic!("{test}: import: {e}"));
    let dir = temp_dir(test);
    std::fs::write(dir.join(WEIGHTS), &imported.weights).unwrap();
    let checked = rlx_sched::check_source(&imported.sched_text, &dir)
        .unwrap_or_else(|d| panic!("{}\n{}", d.render("model.sched", &imported.sched_text), imported.sched_text));
    assert!(checked.warnings.0.is_empty(), "{}", checked.warnings.render("model.sched", &imported.sched_text));
    let shapes: Vec<(DType, Vec<usize>)> = outputs
        .iter()
        .map(|n| {
            let b = checked.schedule.outputs().find(|b| b.name == *n).unwrap_or_else(|| panic!("output {n}"));
            (b.dtype, b.shape.clone())
        })
        .collect();
    let off = checked.schedule.weights().as_ref().map_or(0, |w| w.data_offset);
    let mut interp = Interpreter::new(checked.schedule, &imported.weights[off..]).unwrap();
    for (n, b) in feeds {
        interp.set_bytes(n, b).unwrap();
    }
    interp.run();
    let _ = std::fs::remove_dir_all(&dir);
    outputs.iter().zip(shapes).map(|(n, (dt, s))| T::from_bytes(dt, s, interp.bytes(n).unwrap())).collect()
}

/// One node `op` over `inputs` (named in order), output `out`.
pub fn one(test: &str, op: &str, inputs: Vec<In>, attrs: Vec<AttributeProto>) -> T {
    one_at(test, op, inputs, attrs, 18)
}

/// As [`one`], at default-domain opset `opset`.
pub fn one_at(test: &str, op: &str, inputs: Vec<In>, attrs: Vec<AttributeProto>, opset: i64) -> T {
    let names: Vec<&str> = inputs
        .iter()
        .map(|i| match i {
            In::Data(n, _) | In::Init(n, _) => *n,
        })
        .collect();
    run_graph_opset(test, vec![node(op, "n", &names, &["out"], attrs)], inputs, &["out"], opset).remove(0)
}

/// The numpy broadcast index of output element `i` into an operand.
pub fn bidx(i: usize, out: &[usize], shape: &[usize]) -> usize {
    let lead = out.len() - shape.len();
    let mut rem = i;
    let mut coords = vec![0; out.len()];
    for d in (0..out.len()).rev() {
        coords[d] = rem % out[d];
        rem /= out[d];
    }
    let mut idx = 0;
    for d in 0..shape.len() {
        let c = if shape[d] == 1 { 0 } else { coords[d + lead] };
        idx = idx * shape[d] + c;
    }
    idx
}
