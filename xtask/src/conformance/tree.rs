//! The node-test tree: where it lives (fetched from the onnx 1.22.0 wheel
//! when missing), which single-node tests of the selected ops it holds, and
//! which of those are in scope.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use prost::Message as _;
use rlx_onnx::proto::{ModelProto, TensorProto, ValueInfoProto};
use rlx_onnx::tensor::{data_type_name, dtype_of};

/// The node tests' path inside the onnx wheel (and inside the cache dir).
const NODE_DIR: &str = "onnx/backend/test/data/node";

/// Where the wheel is downloaded and where its node tests are unpacked,
/// relative to the workspace root (`.cache/` is git-ignored).
const WHEEL_DIR: &str = ".cache/onnx-1.22";
const CACHE_DIR: &str = ".cache/onnx-node-tests";

/// The newest onnx release whose wheel still ships the node tests.
const ONNX_RELEASE: &str = "1.22.0";

/// One single-node test: its directory and decoded model.
pub(crate) struct NodeTest {
    /// The directory name, `test_relu`.
    pub name: String,
    pub dir: PathBuf,
    /// The only node's `op_type`.
    pub op: String,
    pub model: ModelProto,
}

impl NodeTest {
    /// The graph inputs that are not initializers, in graph order: the
    /// values `input_J.pb` hold.
    pub fn data_inputs(&self) -> Vec<&ValueInfoProto> {
        let Some(graph) = &self.model.graph else { return Vec::new() };
        graph.input.iter().filter(|i| !graph.initializer.iter().any(|t| t.name == i.name)).collect()
    }
}

/// A selected test that uses an element type the runtime does not compute in.
pub(crate) struct OutOfScope {
    pub op: String,
    pub test: String,
    /// The first such type among the inputs, then the outputs (`DOUBLE`,
    /// `non-tensor` for sequences, optionals and maps).
    pub dtype: String,
}

/// The selected tests of a tree, sorted by name.
pub(crate) struct Listing {
    pub in_scope: Vec<NodeTest>,
    pub out_of_scope: Vec<OutOfScope>,
    /// Test directories whose `model.onnx` could not be read: `(test, reason)`.
    pub unreadable: Vec<(String, String)>,
}

/// The node-test directory: `data` when given, else the cache dir under
/// `root`, fetched first when it is missing.
pub(crate) fn locate(root: &Path, data: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = data {
        if !dir.is_dir() {
            bail!("--data {}: not a directory", dir.display());
        }
        return Ok(dir.to_path_buf());
    }
    let dir = root.join(CACHE_DIR).join(NODE_DIR);
    if !dir.is_dir() {
        fetch(root).map_err(|e| {
            anyhow!(
                "cannot fetch the ONNX node tests ({e:#}); fetch them by hand from the workspace root:\n  \
                 python3 -m pip download --no-deps onnx=={ONNX_RELEASE} -d {WHEEL_DIR}\n  \
                 unzip -q {WHEEL_DIR}/onnx-{ONNX_RELEASE}-*.whl '{NODE_DIR}/*' -d {CACHE_DIR}"
            )
        })?;
    }
    Ok(dir)
}

/// Downloads the onnx wheel with pip (unless it is already there) and
/// unpacks its node tests into the cache dir. They go to a temporary dir
/// renamed at the end, so an interrupted run never leaves half a tree that
/// a later run would take for the whole one.
fn fetch(root: &Path) -> Result<()> {
    let wheels = root.join(WHEEL_DIR);
    let wheel = match find_wheel(&wheels) {
        Some(w) => w,
        None => {
            println!("downloading onnx {ONNX_RELEASE} (the last release that ships the node tests) into {WHEEL_DIR}");
            let status = Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", &format!("onnx=={ONNX_RELEASE}"), "-d"])
                .arg(&wheels)
                .status()
                .context("running python3 -m pip")?;
            if !status.success() {
                bail!("pip download failed ({status})");
            }
            find_wheel(&wheels).ok_or_else(|| anyhow!("pip left no onnx-{ONNX_RELEASE} wheel in {WHEEL_DIR}"))?
        }
    };
    let partial = root.join(format!("{CACHE_DIR}.partial"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).with_context(|| format!("removing {}", partial.display()))?;
    }
    println!("unpacking {NODE_DIR} from {} into {CACHE_DIR}", wheel.display());
    // A wheel is a zip file; python's zipfile is on every machine that has pip.
    let script = "import sys, zipfile\n\
                  z = zipfile.ZipFile(sys.argv[1])\n\
                  names = [n for n in z.namelist() if n.startswith(sys.argv[3] + '/')]\n\
                  if not names: sys.exit('the wheel holds no ' + sys.argv[3])\n\
                  z.extractall(sys.argv[2], names)\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&wheel)
        .arg(&partial)
        .arg(NODE_DIR)
        .status()
        .context("running python3 to unzip the wheel")?;
    if !status.success() {
        bail!("unpacking {} failed ({status})", wheel.display());
    }
    let dest = root.join(CACHE_DIR);
    if dest.exists() {
        // A cache dir without the node tests (they are what was missing).
        std::fs::remove_dir_all(&dest).with_context(|| format!("removing {}", dest.display()))?;
    }
    std::fs::rename(&partial, &dest).with_context(|| format!("renaming {} to {}", partial.display(), dest.display()))
}

/// The onnx wheel in `dir`, if one was downloaded.
fn find_wheel(dir: &Path) -> Option<PathBuf> {
    let prefix = format!("onnx-{ONNX_RELEASE}-");
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .collect();
    wheels.sort();
    wheels.pop()
}

/// The single-node tests of `ops` in `dir` (`_expanded` variants, which
/// spell an op out as a function body, are not single-node tests), split by
/// scope. Sorted by name.
pub(crate) fn list(dir: &Path, ops: &[String]) -> Result<Listing> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.onnx").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("test_") && !n.ends_with("_expanded"))
        .collect();
    names.sort();
    let mut listing = Listing { in_scope: Vec::new(), out_of_scope: Vec::new(), unreadable: Vec::new() };
    for name in names {
        let test_dir = dir.join(&name);
        let model = match read_model(&test_dir.join("model.onnx")) {
            Ok(m) => m,
            Err(e) => {
                listing.unreadable.push((name, format!("{e:#}")));
                continue;
            }
        };
        let Some(op) = single_op(&model) else { continue };
        if !ops.contains(&op) {
            continue;
        }
        match foreign_type(&model) {
            Some(dtype) => listing.out_of_scope.push(OutOfScope { op, test: name, dtype }),
            None => listing.in_scope.push(NodeTest { name, dir: test_dir, op, model }),
        }
    }
    Ok(listing)
}

/// Every test of `dir` (`--all`): single-node, multi-node and `_expanded`,
/// whatever the op. A test is out of scope only when a data input or
/// output has a type a `.npy` file cannot hold ([`inexpressible_type`]);
/// the others run, and an element type the importer does not carry is
/// that test's failure. A test's `op` is its label in the report: the
/// single node's op, `Op (expanded)` for the function-body twin of a
/// single-node test, else `multi-node`. Sorted by name.
pub(crate) fn list_all(dir: &Path) -> Result<Listing> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.onnx").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("test_"))
        .collect();
    names.sort();
    let mut listing = Listing { in_scope: Vec::new(), out_of_scope: Vec::new(), unreadable: Vec::new() };
    let mut models = Vec::new();
    for name in names {
        match read_model(&dir.join(&name).join("model.onnx")) {
            Ok(m) => models.push((name, m)),
            Err(e) => listing.unreadable.push((name, format!("{e:#}"))),
        }
    }
    let op_of = |name: &str| models.iter().find(|(n, _)| n == name).and_then(|(_, m)| single_op(m));
    let mut labelled = Vec::new();
    for (name, model) in &models {
        let label = match (single_op(model), name.strip_suffix("_expanded").and_then(op_of)) {
            (Some(op), _) => op,
            (None, Some(op)) => format!("{op} (expanded)"),
            (None, None) => "multi-node".to_string(),
        };
        labelled.push(label);
    }
    for ((name, model), op) in models.into_iter().zip(labelled) {
        match inexpressible_type(&model) {
            Some(dtype) => listing.out_of_scope.push(OutOfScope { op, test: name, dtype }),
            None => listing.in_scope.push(NodeTest { dir: dir.join(&name), name, op, model }),
        }
    }
    Ok(listing)
}

fn read_model(path: &Path) -> Result<ModelProto> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    ModelProto::decode(bytes.as_slice()).map_err(|e| anyhow!("{}: not a valid ONNX model: {e}", path.display()))
}

/// The op of a graph with exactly one node of the default domain.
fn single_op(model: &ModelProto) -> Option<String> {
    match model.graph.as_ref()?.node.as_slice() {
        [node] if node.domain.is_empty() || node.domain == "ai.onnx" => Some(node.op_type.clone()),
        _ => None,
    }
}

/// The first element type among the graph's data inputs and outputs that
/// the runtime does not compute in, by its ONNX name.
fn foreign_type(model: &ModelProto) -> Option<String> {
    let graph = model.graph.as_ref()?;
    let data_inputs = graph.input.iter().filter(|i| !graph.initializer.iter().any(|t| t.name == i.name));
    data_inputs.chain(&graph.output).find_map(|info| {
        // The decoder keeps only `tensor_type`: a sequence, optional or map
        // type arrives without one.
        let Some(tensor) = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()) else {
            return Some("non-tensor".to_string());
        };
        match dtype_of(tensor.elem_type) {
            Some(_) => None,
            None => Some(type_name(tensor.elem_type)),
        }
    })
}

/// The first data input or output type no `.npy` file can hold: a
/// sequence, optional or map, a string, bfloat16, an 8-, 4- or 2-bit float
/// or integer below a byte, complex numbers.
fn inexpressible_type(model: &ModelProto) -> Option<String> {
    let graph = model.graph.as_ref()?;
    let data_inputs = graph.input.iter().filter(|i| !graph.initializer.iter().any(|t| t.name == i.name));
    data_inputs.chain(&graph.output).find_map(|info| {
        let Some(tensor) = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()) else {
            return Some("non-tensor".to_string());
        };
        // FLOAT .. DOUBLE, UINT32, UINT64 except STRING (8) and the complex
        // types (14, 15): numpy's own dtypes.
        let npy = matches!(tensor.elem_type, 1..=7 | 9..=13);
        (!npy).then(|| type_name(tensor.elem_type))
    })
}

/// An ONNX data type's name for the summary (the importer's table names
/// the common ones; the newest small types it does not know by name).
fn type_name(dt: i32) -> String {
    match (data_type_name(dt), dt) {
        (_, 24) => "FLOAT8E8M0".to_string(),
        (_, 25) => "UINT2".to_string(),
        (_, 26) => "INT2".to_string(),
        ("other", _) => format!("data type {dt}"),
        (name, _) => name.to_string(),
    }
}

/// The data-set directories of a test (`test_data_set_K`), in order of K.
pub(crate) fn data_sets(test_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut sets: Vec<(u64, PathBuf)> = std::fs::read_dir(test_dir)
        .with_context(|| format!("reading {}", test_dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let k = e.file_name().to_str()?.strip_prefix("test_data_set_")?.parse::<u64>().ok()?;
            e.path().is_dir().then(|| (k, e.path()))
        })
        .collect();
    sets.sort();
    Ok(sets.into_iter().map(|(_, p)| p).collect())
}

/// `PREFIX_0.pb`, `PREFIX_1.pb`, ... of a data set, up to the first gap.
pub(crate) fn read_tensors(set_dir: &Path, prefix: &str) -> Result<Vec<TensorProto>> {
    let mut out = Vec::new();
    loop {
        let path = set_dir.join(format!("{prefix}_{}.pb", out.len()));
        if !path.is_file() {
            return Ok(out);
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let t =
            TensorProto::decode(bytes.as_slice()).map_err(|e| anyhow!("{}: not a TensorProto: {e}", path.display()))?;
        out.push(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace root of its own under `target/`, emptied first.
    fn fake_root(name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/conformance-tests").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_downloaded_wheel_is_unpacked_into_the_cache() {
        let root = fake_root("fetch");
        let wheels = root.join(WHEEL_DIR);
        std::fs::create_dir_all(&wheels).unwrap();
        let wheel = wheels.join(format!("onnx-{ONNX_RELEASE}-cp312-cp312-linux_x86_64.whl"));
        // A wheel is a zip: one node test and one file outside the tree.
        let made = Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile\n\
                 z = zipfile.ZipFile(sys.argv[1], 'w')\n\
                 z.writestr('onnx/backend/test/data/node/test_relu/model.onnx', b'm')\n\
                 z.writestr('onnx/__init__.py', b'')\n\
                 z.close()\n",
            ])
            .arg(&wheel)
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: python3 cannot write a zip file here");
            return;
        }
        let dir = locate(&root, None).expect("unpacked");
        assert_eq!(dir, root.join(CACHE_DIR).join(NODE_DIR));
        assert_eq!(std::fs::read(dir.join("test_relu/model.onnx")).unwrap(), b"m");
        assert!(!root.join(CACHE_DIR).join("onnx/__init__.py").exists());
        assert!(!root.join(format!("{CACHE_DIR}.partial")).exists());
        // Present now: found without unpacking again.
        std::fs::remove_file(&wheel).unwrap();
        assert_eq!(locate(&root, None).expect("cached"), dir);
    }

    #[test]
    fn type_names_cover_the_newest_types() {
        assert_eq!(type_name(11), "DOUBLE");
        assert_eq!(type_name(26), "INT2");
        assert_eq!(type_name(99), "data type 99");
    }
}
