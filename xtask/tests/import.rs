//! `cargo xtask import`: `--const` bindings (a Reshape whose shape is a
//! graph input), their errors, and `--new-model` scaffolding into a
//! temporary workspace (`--root`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use prost::Message as _;
use rlx_onnx::proto::*;
use rlx_runtime::npy;
use rlx_sched::DType;

/// A fresh directory for one test under the system temp dir.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-xtask-import-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

fn value_info(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension { value: Some(DimensionValue::DimValue(d)), denotation: String::new() })
                        .collect(),
                }),
            }),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        name: format!("{op}_{output}"),
        op_type: op.to_string(),
        ..Default::default()
    }
}

/// The bias row the model adds after its reshape.
const BIAS: [f32; 4] = [0.5, -1.0, 2.0, 0.25];

/// `y = Reshape(x, shape) + bias`, with `shape` an int64 graph input: the
/// model cannot be imported until `--const` binds `shape`.
fn write_reshape_model(dir: &Path) -> PathBuf {
    let bias = TensorProto {
        name: "bias".to_string(),
        dims: vec![4],
        data_type: data_type::FLOAT,
        raw_data: BIAS.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
        producer_name: "xtask import tests".to_string(),
        graph: Some(GraphProto {
            node: vec![node("Reshape", &["x", "shape"], "r"), node("Add", &["r", "bias"], "y")],
            name: "reshape_add".to_string(),
            initializer: vec![bias],
            input: vec![value_info("x", data_type::FLOAT, &[2, 6]), value_info("shape", data_type::INT64, &[2])],
            output: vec![value_info("y", data_type::FLOAT, &[3, 4])],
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = dir.join("reshape.onnx");
    std::fs::write(&path, m.encode_to_vec()).expect("write model");
    path
}

fn write_i64(path: &Path, shape: &[usize], values: &[i64]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    npy::write_npy(path, DType::I64, shape, &bytes).expect("write npy");
}

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().expect("run xtask")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `xtask import` expecting failure: exit 1 and exactly one line
/// `error: ...` on stderr, which is returned without the prefix.
fn import_error(args: &[&str]) -> String {
    let out = xtask(&[&["import"], args].concat());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{}\nstderr:\n{stderr}", text(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "one line expected:\n{stderr}");
    stderr.strip_prefix("error: ").unwrap_or_else(|| panic!("no `error: ` prefix: {stderr}")).trim_end().to_string()
}

#[test]
fn const_binds_the_shape_of_a_reshape() {
    let dir = temp_dir("const");
    let model = write_reshape_model(&dir);
    let shape = dir.join("shape.npy");
    write_i64(&shape, &[2], &[3, 4]);
    let out_dir = dir.join("out");
    let out = xtask(&["import", s(&model), "--out-dir", s(&out_dir), "--const", &format!("shape={}", s(&shape))]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));

    let sched = std::fs::read_to_string(out_dir.join("model.sched")).expect("model.sched written");
    let inputs: Vec<&str> = sched.lines().filter(|l| l.starts_with("input ")).collect();
    assert_eq!(inputs.len(), 1, "only x stays an input:\n{sched}");
    assert!(inputs[0].starts_with("input   x: f32[2, 6]"), "{sched}");
    assert!(sched.lines().any(|l| l.starts_with("output  y: f32[3, 4]")), "{sched}");

    // The schedule computes reshape(x) + bias in the interpreter.
    let x: Vec<f32> = (0..12).map(|i| i as f32 - 5.5).collect();
    let x_path = dir.join("x.npy");
    npy::write_npy(&x_path, DType::F32, &[2, 6], &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())
        .expect("write x");
    let y_path = dir.join("y.npy");
    let run = xtask(&[
        "run",
        s(&out_dir.join("model.sched")),
        "--input",
        &format!("x={}", s(&x_path)),
        "--output",
        &format!("y={}", s(&y_path)),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}\n{}", text(&run.stdout), text(&run.stderr));
    let y = npy::read_npy(&y_path).expect("read y");
    assert_eq!((y.dtype, y.shape.as_slice()), (DType::F32, &[3usize, 4][..]));
    let got: Vec<f32> = y.bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    // One f32 addition per element, the same in both computations: exact.
    let want: Vec<f32> = x.iter().enumerate().map(|(i, v)| v + BIAS[i % 4]).collect();
    assert_eq!(got, want);
}

#[test]
fn const_errors_are_one_line() {
    let dir = temp_dir("const_errors");
    let model = write_reshape_model(&dir);
    let m = s(&model);
    let out_dir = dir.join("out");
    let o = s(&out_dir);

    let good = dir.join("shape.npy");
    write_i64(&good, &[2], &[3, 4]);
    let e = import_error(&[m, "--out-dir", o, "--const", &format!("nope={}", s(&good))]);
    assert!(e.contains("`nope`") && e.contains("no graph input") && e.contains("x, shape"), "{e}");

    let floats = dir.join("floats.npy");
    npy::write_npy(&floats, DType::F32, &[2], &[0u8; 8]).expect("write npy");
    let e = import_error(&[m, "--out-dir", o, "--const", &format!("shape={}", s(&floats))]);
    assert!(e.contains("`shape`") && e.contains("f32"), "{e}");

    let long = dir.join("long.npy");
    write_i64(&long, &[3], &[3, 4, 1]);
    let e = import_error(&[m, "--out-dir", o, "--const", &format!("shape={}", s(&long))]);
    assert!(e.contains("`shape`") && e.contains("[2]") && e.contains("[3]"), "{e}");

    let doubles = dir.join("doubles.npy");
    npy::write_npy(&doubles, DType::F64, &[2], &[0u8; 16]).expect("write npy");
    let e = import_error(&[m, "--out-dir", o, "--const", &format!("shape={}", s(&doubles))]);
    // Doubles read as f32 (the type they are computed in): not the INT64 input's type.
    assert_eq!(e, "tensor `shape`: --const: the input is INT64, the value given is f32");

    let e = import_error(&[m, "--out-dir", o, "--const", "shape"]);
    assert_eq!(e, "--const: expected NAME=PATH.npy, found `shape`");
    let g = format!("shape={}", s(&good));
    let e = import_error(&[m, "--out-dir", o, "--const", &g, "--const", &g]);
    assert_eq!(e, "--const: input `shape` is given twice");
    let missing = dir.join("missing.npy");
    let e = import_error(&[m, "--out-dir", o, "--const", &format!("shape={}", s(&missing))]);
    assert!(e.starts_with(&format!("cannot read {}", s(&missing))), "{e}");

    // Without the binding the shape is not known at import time.
    import_error(&[m, "--out-dir", o]);
    assert!(!out_dir.join("model.sched").exists(), "no failed import writes a schedule");
}

const WORKSPACE: &str = "[workspace]\nresolver = \"2\"\nmembers = [\n    \"rlx-runtime\",\n    \"models/mlp\",\n    \
                         \"xtask\",\n]\n\n[workspace.package]\nversion = \"0.1.0\"\n";

/// A temporary workspace: a root manifest with a members list and an
/// existing `models/mlp`.
fn temp_workspace(test: &str) -> PathBuf {
    let root = temp_dir(test);
    std::fs::write(root.join("Cargo.toml"), WORKSPACE).expect("write manifest");
    std::fs::create_dir_all(root.join("models/mlp")).expect("create models/mlp");
    root
}

#[test]
fn new_model_scaffolds_a_crate_and_adds_it_to_the_workspace() {
    let root = temp_workspace("new_model");
    let model = write_reshape_model(&root);
    let shape = root.join("shape.npy");
    write_i64(&shape, &[2], &[3, 4]);
    let c = format!("shape={}", s(&shape));
    let args = ["import", s(&model), "--const", &c, "--new-model", "tiny", "--root", s(&root)];
    let out = xtask(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));

    let dir = root.join("models/tiny");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert_eq!(manifest, WORKSPACE.replace("\"models/mlp\",\n", "\"models/mlp\",\n    \"models/tiny\",\n"));
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    assert!(cargo.contains("name = \"tiny\"") && cargo.contains("default = [\"openblas\"]"), "{cargo}");
    let main = std::fs::read_to_string(dir.join("src/main.rs")).expect("src/main.rs");
    assert!(main.contains("rlx_runtime::cli::main::<tiny::Model>()"), "{main}");
    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).expect("src/lib.rs");
    assert!(lib.contains("mod generated;") && lib.contains("pub use generated::*;"), "{lib}");
    let sched = std::fs::read_to_string(dir.join("model.sched")).expect("model.sched");
    assert!(sched.lines().any(|l| l == "model tiny"), "the crate's name names the schedule:\n{sched}");
    assert!(sched.contains("weights \"weights.safetensors\" sha256"), "{sched}");
    assert!(std::fs::metadata(dir.join("weights.safetensors")).expect("weights").len() > 0);
    let generated = std::fs::read_to_string(dir.join("src/generated.rs")).expect("src/generated.rs");
    assert!(generated.starts_with("// @generated by `cargo xtask gen models/tiny/model.sched`"), "{generated}");
    assert!(generated.contains("include_bytes!(\"../weights.safetensors\")"), "embedded weights: {generated}");
    assert!(!dir.join(".gitignore").exists(), "small weights may be committed");
    for next in
        ["cargo xtask gen models/tiny/model.sched", "cargo build --release -p tiny", "cargo xtask build tiny --static"]
    {
        assert!(stdout.contains(next), "`{next}` not printed:\n{stdout}");
    }

    // A second run refuses to overwrite, and leaves the manifest alone.
    let e = import_error(&args[1..]);
    assert!(e.contains("models/tiny already exists"), "{e}");
    assert_eq!(std::fs::read_to_string(root.join("Cargo.toml")).unwrap(), manifest);
}

#[test]
fn new_model_refuses_bad_names_and_taken_places_before_importing() {
    let root = temp_workspace("new_model_refusals");
    let model = write_reshape_model(&root);
    let r = s(&root);
    // The model is not importable without --const: the name checks come first.
    let e = import_error(&[s(&model), "--new-model", "mlp", "--root", r]);
    assert!(e.contains("models/mlp already exists"), "{e}");
    let e = import_error(&[s(&model), "--new-model", "Bad Name", "--root", r]);
    assert!(e.contains("`Bad Name` is not a valid model name"), "{e}");
    std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = [\"models/fresh\"]\n").unwrap();
    let e = import_error(&[s(&model), "--new-model", "fresh", "--root", r]);
    assert!(e.ends_with("`models/fresh` is already a workspace member"), "{e}");
    // A failed import after the checks leaves nothing behind.
    std::fs::write(root.join("Cargo.toml"), WORKSPACE).unwrap();
    import_error(&[s(&model), "--new-model", "other", "--root", r]);
    assert!(!root.join("models/other").exists());
    assert_eq!(std::fs::read_to_string(root.join("Cargo.toml")).unwrap(), WORKSPACE);

    let out = xtask(&["import", s(&model), "--new-model", "x", "--out-dir", r, "--root", r]);
    assert_eq!(out.status.code(), Some(2), "clap refuses --out-dir with --new-model");
    assert!(text(&out.stderr).contains("cannot be used with"), "{}", text(&out.stderr));
}

#[test]
fn shape_overrides_bind_only_symbolic_dims() {
    let dir = temp_dir("shape");
    let model = write_reshape_model(&dir);
    let (m, o) = (s(&model), s(&dir));
    let e = import_error(&[m, "--out-dir", o, "--shape", "x=3,4"]);
    assert_eq!(
        e,
        "--shape `x=3,4`: dim 0 of input `x` is 2 in the model (shape [2, 6]), the override gives 3; \
         only symbolic dims can be bound"
    );
    let e = import_error(&[m, "--out-dir", o, "--shape", "x=2,6,1"]);
    assert_eq!(e, "--shape `x=2,6,1`: input `x` has rank 2 (shape [2, 6]), the override has rank 3");
    let e = import_error(&[m, "--out-dir", o, "--shape", "x="]);
    assert_eq!(e, "--shape `x=`: input `x` has rank 2 (shape [2, 6]), the override has rank 0");
    let e = import_error(&[m, "--out-dir", o, "--shape", "x=2,6", "--shape", "x=2,6"]);
    assert_eq!(e, "--shape `x=2,6`: input `x` already has a shape (x=2,6)");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unusual_graphs_import_with_warnings() {
    let dir = temp_dir("warnings");
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 999 }],
        graph: Some(GraphProto {
            node: vec![node("Relu", &["x"], "y")],
            name: "no_outputs".to_string(),
            input: vec![value_info("x", data_type::FLOAT, &[4])],
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = dir.join("odd.onnx");
    std::fs::write(&path, m.encode_to_vec()).expect("write model");
    let out = xtask(&["import", s(&path), "--out-dir", s(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let warnings: Vec<String> = text(&out.stderr).lines().map(str::to_string).collect();
    assert_eq!(
        warnings,
        [
            "warning: the model imports opset 999; the importer knows opsets 1 to 21 and reads its ops as of opset \
             21: compare the results with `cargo xtask verify`",
            "warning: the graph has no outputs: the schedule computes nothing a caller can read",
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_limits_refuse_a_model_past_them_and_can_be_raised() {
    let dir = temp_dir("import_limit");
    let model = write_reshape_model(&dir);
    let m = s(&model);
    let shape = dir.join("shape.npy");
    write_i64(&shape, &[2], &[3, 4]);
    let c = format!("shape={}", s(&shape));
    let out_dir = dir.join("out");
    let o = s(&out_dir);

    // Reshape and Add: the Add is the second node.
    let e = import_error(&[m, "--out-dir", o, "--const", &c, "--import-limit", "nodes=1"]);
    assert_eq!(
        e,
        "node `Add_y` (Add): it is node 2 of the import; the import budget allows 1 node in all, 0 left \
         (raise it with --import-limit nodes=N)"
    );
    let e = import_error(&[m, "--out-dir", o, "--const", &c, "--import-limit", "nodes=1,steps=9"]);
    assert_eq!(e, "--import-limit `nodes=1,steps=9`: unknown limit `steps`; the limits are `nodes` and `bytes`");
    let out = xtask(&["import", m, "--out-dir", o, "--const", &c, "--import-limit", "nodes=2,bytes=0"]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
}

/// A checkpoint directory as a user holds one: llama_tiny's Hugging Face
/// files and, unless `tokenizer` is false, its `tokenizer.json`.
fn llama_checkpoint(root: &Path, tokenizer: bool) -> PathBuf {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny");
    let dir = root.join("checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["config.json", "generation_config.json", "tokenizer_config.json", "model.safetensors"] {
        std::fs::copy(model.join("hf").join(file), dir.join(file)).unwrap();
    }
    if tokenizer {
        std::fs::copy(model.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
    }
    dir
}

/// `import-llama --new-model` writes a decoder crate as `models/llama_tiny`
/// is laid out: its schedule, weights and generation config are what
/// `import-llama --out-dir` writes, the tokenizer is the checkpoint's, the
/// binary is the scaffolded decoder `main.rs`.
#[test]
fn import_llama_new_model_scaffolds_a_decoder_crate() {
    let root = temp_workspace("llama_new_model");
    let checkpoint = llama_checkpoint(&root, true);
    let out = xtask(&["import-llama", s(&checkpoint), "--new-model", "chat_tiny", "--root", s(&root)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    let dir = root.join("models/chat_tiny");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\"models/chat_tiny\""), "{manifest}");
    let read = |file: &str| std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny");
    assert_eq!(read("tokenizer.json"), std::fs::read(bundled.join("tokenizer.json")).unwrap());
    assert_eq!(read("generation.json"), std::fs::read(bundled.join("generation.json")).unwrap());
    assert_eq!(read("weights.safetensors"), std::fs::read(bundled.join("weights.safetensors")).unwrap());
    let sched = text(&read("model.sched"));
    let bundled_sched = std::fs::read_to_string(bundled.join("model.sched")).unwrap();
    assert_eq!(sched, bundled_sched.replace("model llama_tiny", "model chat_tiny"));
    let main = text(&read("src/main.rs"));
    assert!(main.contains("chat_tiny::Model::try_new()"), "{main}");
    assert!(
        main.contains("include_bytes!(\"../tokenizer.json\")") && main.contains("include_str!(\"../generation.json\")")
    );
    let cargo = text(&read("Cargo.toml"));
    assert!(
        cargo.contains("name = \"chat_tiny\"") && cargo.contains("rlx-decode = { path = \"../../crates/rlx-decode\" }"),
        "{cargo}"
    );
    assert!(
        text(&read("src/generated.rs")).starts_with("// @generated by `cargo xtask gen models/chat_tiny/model.sched`")
    );
    assert!(!dir.join("include").exists(), "a decoder (entry points) has no C library");
    let lib = text(&read("src/lib.rs"));
    assert!(lib.contains("mod generated;") && !lib.contains("capi"), "no C module without the feature:\n{lib}");
    assert!(stdout.contains("cargo xtask build chat_tiny --static"), "{stdout}");
}

/// Another family through `--new-model`: the Mistral checkpoint of
/// `crates/rlx-onnx/tests/data/families` (its sliding window shorter than
/// the cache, so the generated code runs `SlidingCachedAttention`) with
/// the bundled tokenizer makes a decoder crate.
#[test]
fn import_llama_new_model_scaffolds_another_family() {
    let root = temp_workspace("llama_new_model_mistral");
    let family = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/rlx-onnx/tests/data/families/mistral");
    let checkpoint = root.join("checkpoint");
    std::fs::create_dir_all(&checkpoint).unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(family.join(file), checkpoint.join(file)).unwrap();
    }
    let tokenizer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny/tokenizer.json");
    std::fs::copy(tokenizer, checkpoint.join("tokenizer.json")).unwrap();
    let out = xtask(&["import-llama", s(&checkpoint), "--new-model", "mistral_tiny", "--root", s(&root)]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let dir = root.join("models/mistral_tiny");
    let sched = std::fs::read_to_string(dir.join("model.sched")).unwrap();
    assert!(sched.contains("imported from a Mistral checkpoint") && sched.contains("SlidingCachedAttention {"));
    let generated = std::fs::read_to_string(dir.join("src/generated.rs")).unwrap();
    assert!(generated.contains("MaskKind::SlidingWindow(7"), "the window in the generated call");
    assert!(std::fs::read_to_string(dir.join("src/main.rs")).unwrap().contains("mistral_tiny::Model::try_new()"));
}

/// Without `tokenizer.json` the checkpoint makes no crate: refused before
/// anything is written or imported.
#[test]
fn import_llama_new_model_needs_the_tokenizer() {
    let root = temp_workspace("llama_new_model_no_tokenizer");
    let checkpoint = llama_checkpoint(&root, false);
    let out = xtask(&["import-llama", s(&checkpoint), "--new-model", "chat_tiny", "--root", s(&root)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tokenizer.json") && stderr.contains("a decoder crate embeds its tokenizer"), "{stderr}");
    assert!(!root.join("models/chat_tiny").exists());
    assert_eq!(std::fs::read_to_string(root.join("Cargo.toml")).unwrap(), WORKSPACE);
}

/// `import-llama model.gguf --new-model` makes the crate the checkpoint
/// the GGUF was converted from makes: the same schedule, weights and
/// generation config, and a tokenizer.json made from the GGUF's
/// vocabulary and merges that the binary loads.
#[test]
fn import_llama_new_model_from_a_gguf() {
    let root = temp_workspace("llama_new_model_gguf");
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny");
    let gguf = bundled.join("gguf/llama_tiny.f32.gguf");
    let out = xtask(&["import-llama", s(&gguf), "--new-model", "chat_tiny", "--root", s(&root)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    let dir = root.join("models/chat_tiny");
    let read = |file: &str| std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(read("generation.json"), std::fs::read(bundled.join("generation.json")).unwrap());
    assert_eq!(read("weights.safetensors"), std::fs::read(bundled.join("weights.safetensors")).unwrap());
    let bundled_sched = std::fs::read_to_string(bundled.join("model.sched")).unwrap();
    assert_eq!(text(&read("model.sched")), bundled_sched.replace("model llama_tiny", "model chat_tiny"));
    let ours = rlx_decode::Tokenizer::from_bytes(&read("tokenizer.json")).unwrap();
    let theirs = rlx_decode::Tokenizer::from_bytes(&std::fs::read(bundled.join("tokenizer.json")).unwrap()).unwrap();
    let prompt = "The quick brown fox, 12345 times!";
    assert_eq!(ours.encode(prompt).unwrap(), theirs.encode(prompt).unwrap());
    assert!(stdout.contains("cargo xtask build chat_tiny --static"), "{stdout}");
}

/// A bad GGUF is one line naming the file and what was wrong; nothing is
/// written.
#[test]
fn import_llama_refuses_a_bad_gguf_in_one_line() {
    let root = temp_dir("llama_bad_gguf");
    let good =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny/gguf/llama_tiny.q8_0.gguf"))
            .unwrap();
    let file = root.join("cut.gguf");
    std::fs::write(&file, &good[..good.len() - 100]).unwrap();
    let out_dir = root.join("out");
    let out = xtask(&["import-llama", s(&file), "--out-dir", s(&out_dir), "--name", "m"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cut.gguf: tensor `output_norm.weight`: its 256 bytes at offset")
            && stderr.contains("truncated"),
        "{stderr}"
    );
    assert!(!out_dir.exists());
}

/// `--weights` picks the products' storage: `q8_0` makes a checkpoint's
/// products with whole blocks `PackedGemmQ8`; a Q8_0 GGUF keeps them so
/// by default (`stored`), its f16 rows f16, and `--weights f32` undoes
/// both.
#[test]
fn import_llama_keeps_or_makes_8_bit_weights() {
    let root = temp_dir("llama_q8");
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny");
    let sched = |source: &Path, out: &str, extra: &[&str]| -> String {
        let out_dir = root.join(out);
        let mut args = vec!["import-llama", s(source), "--out-dir", s(&out_dir), "--name", "m"];
        args.extend_from_slice(extra);
        let run = xtask(&args);
        assert_eq!(run.status.code(), Some(0), "{out}: {}", text(&run.stderr));
        std::fs::read_to_string(out_dir.join("model.sched")).unwrap()
    };
    let count = |text: &str, kind: &str| text.matches(&format!("{kind} {{")).count();
    let from_hf = sched(&bundled.join("hf"), "hf", &["--weights", "q8_0"]);
    assert_eq!((count(&from_hf, "PackedGemmQ8"), count(&from_hf, "PackedGemm")), (26, 4));
    let gguf = bundled.join("gguf/llama_tiny.q8_0.gguf");
    let stored = sched(&gguf, "stored", &[]);
    assert_eq!((count(&stored, "PackedGemmQ8"), count(&stored, "PackedGemmHalf")), (26, 4));
    let f32 = sched(&gguf, "f32", &["--weights", "f32"]);
    assert_eq!((count(&f32, "PackedGemmQ8"), count(&f32, "PackedGemm")), (0, 30));
}
