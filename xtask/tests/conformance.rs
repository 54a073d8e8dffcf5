//! `cargo xtask conformance` end to end on a small node-test tree written
//! here (no download), and on the real tree when it is in the cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use prost::Message as _;
use rlx_onnx::proto::{
    data_type, Dimension, DimensionValue, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};

/// Every run writes its schedules under the same `target/conformance/`:
/// one at a time.
static SHARED_WORK_DIR: Mutex<()> = Mutex::new(());

fn exclusive() -> MutexGuard<'static, ()> {
    SHARED_WORK_DIR.lock().unwrap_or_else(|e| e.into_inner())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// A scratch directory of this test file, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = root().join("target").join("conformance-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn conformance(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).arg("conformance").args(args).output().expect("run xtask")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

fn value_info(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = dims.iter().map(|&d| Dimension { value: Some(DimensionValue::DimValue(d)), ..Default::default() });
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor { elem_type, shape: Some(TensorShapeProto { dim: dim.collect() }) }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn f32s(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..Default::default()
    }
}

fn i64s(name: &str, dims: &[i64], values: &[i64]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type: data_type::INT64,
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

/// ONNX `COMPLEX128` (15), a type the importer does not carry: `values`
/// as (re, im) pairs.
const COMPLEX128: i32 = 15;

fn c128s(name: &str, dims: &[i64], values: &[f64]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type: COMPLEX128,
        double_data: values.to_vec(),
        ..Default::default()
    }
}

/// A node test as the ONNX tree holds one: `DIR/NAME/model.onnx` and one
/// data set of `.pb` tensors.
struct NodeTest {
    name: &'static str,
    nodes: Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    input_data: Vec<TensorProto>,
    output_data: Vec<TensorProto>,
}

impl NodeTest {
    fn write(&self, dir: &Path) {
        let nodes = self.nodes.iter().enumerate().map(|(k, (op, inputs, outputs))| NodeProto {
            name: format!("n{k}"),
            op_type: op.to_string(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        });
        let model = ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
            graph: Some(GraphProto {
                name: self.name.to_string(),
                node: nodes.collect(),
                input: self.inputs.clone(),
                output: self.outputs.clone(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let test_dir = dir.join(self.name);
        let set = test_dir.join("test_data_set_0");
        std::fs::create_dir_all(&set).expect("create test dir");
        std::fs::write(test_dir.join("model.onnx"), model.encode_to_vec()).expect("write model");
        for (j, t) in self.input_data.iter().enumerate() {
            std::fs::write(set.join(format!("input_{j}.pb")), t.encode_to_vec()).expect("write input");
        }
        for (j, t) in self.output_data.iter().enumerate() {
            std::fs::write(set.join(format!("output_{j}.pb")), t.encode_to_vec()).expect("write output");
        }
    }
}

/// A relu whose expected output is right.
fn relu(name: &'static str, expected: &[f32]) -> NodeTest {
    NodeTest {
        name,
        nodes: vec![("Relu", vec!["x"], vec!["y"])],
        inputs: vec![value_info("x", data_type::FLOAT, &[2, 3])],
        outputs: vec![value_info("y", data_type::FLOAT, &[2, 3])],
        input_data: vec![f32s("x", &[2, 3], &[-1.0, 2.0, -3.0, 4.0, 0.5, -0.5])],
        output_data: vec![f32s("y", &[2, 3], expected)],
    }
}

/// The tree of the CI tests: one test per way a test can be counted.
fn write_tree(dir: &Path) {
    relu("test_relu", &[0.0, 2.0, 0.0, 4.0, 0.5, 0.0]).write(dir);
    // Expected 3.5 where 1 + 2 = 3: must fail with a value reason.
    NodeTest {
        name: "test_add",
        nodes: vec![("Add", vec!["a", "b"], vec!["c"])],
        inputs: vec![value_info("a", data_type::FLOAT, &[2]), value_info("b", data_type::FLOAT, &[2])],
        outputs: vec![value_info("c", data_type::FLOAT, &[2])],
        input_data: vec![f32s("a", &[2], &[1.0, 1.0]), f32s("b", &[2], &[2.0, 2.0])],
        output_data: vec![f32s("c", &[2], &[3.0, 3.5])],
    }
    .write(dir);
    // COMPLEX128: out of scope, never run (Sub has no other test).
    for (name, op) in [("test_add_complex", "Add"), ("test_sub_complex", "Sub")] {
        NodeTest {
            name,
            nodes: vec![(op, vec!["a", "b"], vec!["c"])],
            inputs: vec![value_info("a", COMPLEX128, &[1]), value_info("b", COMPLEX128, &[1])],
            outputs: vec![value_info("c", COMPLEX128, &[1])],
            input_data: vec![c128s("a", &[1], &[1.0, 0.0]), c128s("b", &[1], &[2.0, 0.0])],
            output_data: vec![c128s("c", &[1], &[3.0, 0.0])],
        }
        .write(dir);
    }
    // An `_expanded` test and a two-node graph are not single-node tests;
    // were they run, their wrong expected outputs would fail them.
    relu("test_relu_expanded", &[9.0; 6]).write(dir);
    NodeTest {
        name: "test_relu_twice",
        nodes: vec![("Relu", vec!["x"], vec!["h"]), ("Relu", vec!["h"], vec!["y"])],
        ..relu("test_relu_twice", &[9.0; 6])
    }
    .write(dir);
    // The target shape is a graph input: it must be bound at import time.
    NodeTest {
        name: "test_reshape_shape_input",
        nodes: vec![("Reshape", vec!["data", "shape"], vec!["reshaped"])],
        inputs: vec![value_info("data", data_type::FLOAT, &[2, 3]), value_info("shape", data_type::INT64, &[2])],
        outputs: vec![value_info("reshaped", data_type::FLOAT, &[3, 2])],
        input_data: vec![f32s("data", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), i64s("shape", &[2], &[3, 2])],
        output_data: vec![f32s("reshaped", &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
    }
    .write(dir);
    // An op no importer knows: the import error is the reason.
    NodeTest {
        name: "test_frobnicate",
        nodes: vec![("Frobnicate", vec!["x"], vec!["y"])],
        ..relu("test_frobnicate", &[0.0; 6])
    }
    .write(dir);
}

#[test]
fn a_small_tree_is_counted_test_by_test() {
    let _shared = exclusive();
    let dir = scratch("small_tree");
    write_tree(&dir);
    let out = conformance(&["--data", dir.to_str().expect("utf-8 path"), "--generated", "0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(
        stdout,
        "Add: 0/1 passed\n  \
         test_add: output 0: max abs err 5.0e-1 at index 1 (got 3, expected 3.5)\n\
         Relu: 1/1 passed\n\
         Reshape: 1/1 passed\n\
         only out-of-scope tests: Sub\n\
         out of scope: 2 tests with other element types (COMPLEX128 2)\n\
         generated code: not checked (--generated 0)\n\
         2 passed, 1 failed\n"
    );
}

#[test]
fn ops_select_tests_and_import_errors_are_reasons() {
    let _shared = exclusive();
    let dir = scratch("ops_flag");
    write_tree(&dir);
    let out = conformance(&[
        "--data",
        dir.to_str().expect("utf-8 path"),
        "--generated",
        "0",
        "--ops",
        "Frobnicate,Relu,Nonexistent",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(
        stdout,
        "Frobnicate: 0/1 passed\n  \
         test_frobnicate: unsupported ONNX op `Frobnicate` (node `n0`)\n\
         Relu: 1/1 passed\n\
         no single-node tests: Nonexistent\n\
         out of scope: 0 tests\n\
         generated code: not checked (--generated 0)\n\
         1 passed, 1 failed\n"
    );
    // Verbose lists passing tests too.
    let out = conformance(&["--data", dir.to_str().expect("utf-8 path"), "--generated", "0", "--ops", "Relu", "-v"]);
    assert!(text(&out.stdout).starts_with("Relu: 1/1 passed\n  test_relu: ok\n"), "{}", text(&out.stdout));
}

#[test]
fn a_missing_data_dir_is_one_error() {
    let out = conformance(&["--data", "/nonexistent/node-tests", "--generated", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "error: --data /nonexistent/node-tests: not a directory\n");
}

#[test]
fn the_real_tree_passes_relu_and_add() {
    let dir = root().join(".cache/onnx-node-tests/onnx/backend/test/data/node");
    if !dir.is_dir() {
        eprintln!("skipped: {} is missing (cargo xtask conformance fetches it)", dir.display());
        return;
    }
    let _shared = exclusive();
    let out = conformance(&["--ops", "Relu,Add", "--generated", "0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    // onnx 1.22.0 has test_relu, test_add, test_add_bcast and
    // test_add_{int8,int16,uint8,uint16,uint32,uint64}, all in scope.
    assert_eq!(
        stdout,
        "Add: 8/8 passed\n\
         Relu: 1/1 passed\n\
         out of scope: 0 tests\n\
         generated code: not checked (--generated 0)\n\
         9 passed, 0 failed\n"
    );
}
