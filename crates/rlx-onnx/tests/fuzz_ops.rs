//! Robustness: one-node graphs of every supported op with random shapes,
//! element types, constant inputs and attributes. The importer must either
//! return an error or a schedule that validates — never panic, never emit
//! an invalid schedule.

use crate::common::*;
use rlx_onnx::proto::*;
use rlx_onnx::{ImportOptions, SUPPORTED_OPS};

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn int(&mut self) -> i64 {
        self.below(9) as i64 - 3
    }
}

const TYPES: [i32; 4] = [data_type::FLOAT, data_type::INT64, data_type::INT32, data_type::BOOL];

fn shape(rng: &mut Rng) -> Vec<i64> {
    (0..rng.below(5)).map(|_| rng.below(4) as i64).collect()
}

/// A constant of `dims` and type `elem`, with small values.
fn constant(rng: &mut Rng, name: &str, dims: &[i64], elem: i32) -> TensorProto {
    let n: i64 = dims.iter().product();
    let mut t = TensorProto { name: name.to_string(), dims: dims.to_vec(), data_type: elem, ..Default::default() };
    for _ in 0..n {
        let v = rng.int();
        match elem {
            data_type::FLOAT => t.float_data.push(v as f32 * 0.5),
            data_type::INT64 => t.int64_data.push(v),
            _ => t.int32_data.push(if elem == data_type::BOOL { (v > 0) as i32 } else { v as i32 }),
        }
    }
    t
}

/// Random attributes for `op` at `opset`: mostly ones its schema defines,
/// now and then one it does not (which must be refused).
fn attrs(rng: &mut Rng, op: &str, opset: i64) -> Vec<AttributeProto> {
    let defined = rlx_onnx::op_attributes(op, opset).map_or(&[][..], |(_, names)| names);
    let mut out = random_attrs(rng);
    out.retain(|a| defined.contains(&a.name.as_str()) || rng.below(20) == 0);
    out
}

fn random_attrs(rng: &mut Rng) -> Vec<AttributeProto> {
    let mut out = Vec::new();
    for name in [
        "axis",
        "keepdims",
        "transA",
        "transB",
        "group",
        "largest",
        "exclusive",
        "reverse",
        "to",
        "select_last_index",
        "batch_dims",
        "align_corners",
    ] {
        if rng.below(4) == 0 {
            let v = if name == "to" { [1, 6, 7, 9, 11][rng.below(5) as usize] } else { rng.int() };
            out.push(attr_i(name, v));
        }
    }
    for name in ["axes", "perm", "kernel_shape", "strides", "pads", "dilations", "split"] {
        if rng.below(5) == 0 {
            let v: Vec<i64> = (0..rng.below(5)).map(|_| rng.int()).collect();
            out.push(attr_ints(name, &v));
        }
    }
    if rng.below(6) == 0 {
        let eq =
            ["ij,jk->ik", "bhqd,bhkd->bhqk", "ij->ji", "ii->i", "i,i", "...ij->ij", "ij->k"][rng.below(7) as usize];
        out.push(AttributeProto {
            name: "equation".into(),
            s: eq.as_bytes().to_vec(),
            r#type: AttributeType::String as i32,
            ..Default::default()
        });
    }
    if rng.below(6) == 0 {
        let reduction = ["none", "add", "mul", "max", "min", "bogus"][rng.below(6) as usize];
        out.push(AttributeProto {
            name: "reduction".into(),
            s: reduction.as_bytes().to_vec(),
            r#type: AttributeType::String as i32,
            ..Default::default()
        });
    }
    if rng.below(6) == 0 {
        let mode = ["constant", "edge", "reflect", "wrap", "bogus", "linear", "nearest", "cubic", "bilinear"]
            [rng.below(9) as usize];
        out.push(AttributeProto {
            name: "mode".into(),
            s: mode.as_bytes().to_vec(),
            r#type: AttributeType::String as i32,
            ..Default::default()
        });
    }
    if rng.below(6) == 0 {
        let padding = ["zeros", "border", "reflection", "bogus"][rng.below(4) as usize];
        out.push(AttributeProto {
            name: "padding_mode".into(),
            s: padding.as_bytes().to_vec(),
            r#type: AttributeType::String as i32,
            ..Default::default()
        });
    }
    out
}

/// The input counts an op takes (so most cases get past the arity check).
fn arity(op: &str) -> (usize, usize) {
    match op {
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "MatMul" | "Equal" | "Less" | "LessOrEqual"
        | "Greater" | "GreaterOrEqual" | "And" | "Or" | "Reshape" | "Expand" | "Gather" | "TopK" | "CumSum" => (2, 2),
        "GatherElements" | "GatherND" | "GridSample" | "AffineGrid" => (2, 2),
        "Scatter" | "ScatterElements" | "ScatterND" => (3, 3),
        "Squeeze" | "Unsqueeze" | "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceL2" | "Einsum" | "Split" => (1, 2),
        "Gemm" | "Conv" | "LayerNormalization" | "NegativeLogLikelihoodLoss" | "SoftmaxCrossEntropyLoss" => (2, 3),
        "Clip" => (1, 3),
        "Pad" => (2, 4),
        "Slice" => (3, 5),
        "Where" | "Range" | "OneHot" => (3, 3),
        "BatchNormalization" => (5, 5),
        "LSTM" => (3, 8),
        "GRU" | "RNN" => (3, 6),
        "Concat" => (1, 4),
        "Constant" => (0, 0),
        _ => (1, 1),
    }
}

#[test]
fn random_single_node_graphs_import_or_fail_cleanly() {
    let mut rng = Rng(0x005e_ed0f_0a11);
    let (mut imported, mut refused) = (0, 0);
    for case in 0..4000 {
        let op = SUPPORTED_OPS[rng.below(SUPPORTED_OPS.len() as u64) as usize];
        let (lo, hi) = arity(op);
        let arity = lo + rng.below((hi - lo + 1) as u64) as usize;
        let mut inputs = Vec::new();
        let mut inits = Vec::new();
        let mut names = Vec::new();
        let first_dims = shape(&mut rng);
        let first_elem = if rng.below(2) == 0 { data_type::FLOAT } else { TYPES[rng.below(4) as usize] };
        for i in 0..arity {
            let name = format!("in{}_", i);
            // Mostly inputs that fit together: the first input's shape and
            // type, or (after the first) a short int64 list such as axes,
            // shapes or pads.
            let (dims, elem) = match rng.below(3) {
                0 if i > 0 => (vec![rng.below(5) as i64], data_type::INT64),
                1 => (shape(&mut rng), TYPES[rng.below(4) as usize]),
                _ => (first_dims.clone(), first_elem),
            };
            if rng.below(2) == 0 || elem == data_type::INT64 && i > 0 {
                inits.push(constant(&mut rng, &name, &dims, elem));
            } else {
                let d = dims.iter().map(|&d| DimensionValue::DimValue(d)).collect();
                inputs.push(vi_typed(&name, elem, d));
            }
            names.push(name);
        }
        let extra = matches!(
            op,
            "TopK"
                | "Split"
                | "MaxPool"
                | "LayerNormalization"
                | "BatchNormalization"
                | "SoftmaxCrossEntropyLoss"
                | "LSTM"
                | "GRU"
        );
        let outs: Vec<String> = (0..1 + if extra { rng.below(3) } else { 0 }).map(|o| format!("out{o}_")).collect();
        let out_refs: Vec<&str> = outs.iter().map(String::as_str).collect();
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let opset = [11, 13, 17, 18][rng.below(4) as usize];
        let m = model(
            vec![node(op, "n", &name_refs, &out_refs, attrs(&mut rng, op, opset))],
            inits,
            inputs,
            outs.iter().map(|o| ValueInfoProto { name: o.clone(), ..Default::default() }).collect(),
            opset,
        );
        let result = std::panic::catch_unwind(|| import_model(&m, &ImportOptions::new(WEIGHTS)));
        let Ok(result) = result else { panic!("case {case}: {op} panicked on {m:?}") };
        match result {
            Err(e) => {
                refused += 1;
                if std::env::var("FUZZ_DEBUG").is_ok() {
                    eprintln!("REFUSED {}", e);
                }
            }
            Ok(i) => {
                // Without the weights file only the weights checks can fail:
                // validate against a directory holding it.
                let dir = temp_dir(&format!("fuzz-{case}"));
                std::fs::write(dir.join(WEIGHTS), &i.weights).expect("write weights");
                if let Err(d) = rlx_sched::check_source(&i.sched_text, &dir) {
                    panic!(
                        "case {case}: {op} emitted an invalid schedule:\n{}\n{}",
                        d.render("model.sched", &i.sched_text),
                        i.sched_text
                    );
                }
                let _ = std::fs::remove_dir_all(&dir);
                imported += 1;
            }
        }
    }
    // Enough of both outcomes that the test exercises the lowering.
    eprintln!("imported {imported}, refused {refused}");
    assert!(imported > 600 && refused > 600, "imported {imported}, refused {refused}");
}
