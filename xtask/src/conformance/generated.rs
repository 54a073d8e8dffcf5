//! The generated path on a sample of passing tests: one crate with a module
//! per (test, data set) schedule and a `main` that runs them all, built once;
//! its outputs must equal the interpreter's bit for bit.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::case::{PassedOutput, PassedSet};
use super::compare;
use crate::verify::{build_crate, write_bytes_if_changed};

/// The crate's package (and binary) name, distinct from every `verify-*`
/// crate sharing the target dir.
const PACKAGE: &str = "conformance-generated";

/// `count` items spread evenly over `len` (all of them when `count >= len`):
/// indices `i * len / count`, so the first and the spacing are fixed by the
/// sorted list alone.
pub(crate) fn sample(len: usize, count: usize) -> Vec<usize> {
    if count >= len {
        return (0..len).collect();
    }
    (0..count).map(|i| i * len / count).collect()
}

/// Per sampled test, `Ok` when the generated code reproduced every data
/// set's outputs bit for bit (and so within tolerance of the expected), else
/// the first difference. `tests` are `(test name, passed data sets)`.
pub(crate) fn check(root: &Path, tests: &[(&str, &[PassedSet])]) -> Result<Vec<Result<(), String>>> {
    let base = root.join("target").join("conformance");
    let dir = base.join("crate");
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
    let sets: Vec<&PassedSet> = tests.iter().flat_map(|(_, sets)| sets.iter()).collect();
    for (m, set) in sets.iter().enumerate() {
        let out = src.join(format!("m{m}.rs"));
        // Always embedded: the modules would otherwise all map side files
        // of the same name next to the one binary.
        let opts = rlx_codegen::options_for_file_with(&set.schedule, &set.sched, root, &out, usize::MAX);
        rlx_codegen::write_if_changed(&out, &rlx_codegen::generate(&set.schedule, &opts))?;
    }
    let exe = build_crate(root, &dir, PACKAGE, &main_rs(sets.len()))?;

    // Inputs in, outputs out, as raw little-endian bytes in `run/<m>/`.
    let run = base.join("run");
    if run.exists() {
        // Outputs of an earlier run must not be read back as this one's.
        std::fs::remove_dir_all(&run).with_context(|| format!("removing {}", run.display()))?;
    }
    for (m, set) in sets.iter().enumerate() {
        let d = run.join(m.to_string());
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        for (name, bytes) in &set.inputs {
            write_bytes_if_changed(&d.join(format!("in.{name}")), bytes)?;
        }
    }
    let result = Command::new(&exe).arg(&run).output().with_context(|| format!("running {}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    let module_errors = module_errors(&stderr);
    if !result.status.success() && module_errors.is_empty() {
        bail!("{} failed: {}", exe.display(), stderr.trim().replace('\n', "; "));
    }

    let mut m = 0;
    let mut verdicts = Vec::new();
    for (_, test_sets) in tests {
        let mut verdict = Ok(());
        for set in test_sets.iter() {
            if verdict.is_ok() {
                verdict = match module_errors.get(&m) {
                    Some(e) => Err(format!("the generated code failed: {e}")),
                    None => compare_outputs(&run.join(m.to_string()), &set.outputs),
                };
            }
            m += 1;
        }
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

/// The `module mM: ERROR` lines the binary prints for models that failed.
fn module_errors(stderr: &str) -> BTreeMap<usize, String> {
    stderr
        .lines()
        .filter_map(|line| {
            let (m, error) = line.strip_prefix("module m")?.split_once(": ")?;
            Some((m.parse().ok()?, error.to_string()))
        })
        .collect()
}

/// The generated outputs of one data set (`DIR/out.NAME`) against the
/// interpreter's bytes and the expected values.
fn compare_outputs(dir: &Path, outputs: &[PassedOutput]) -> Result<(), String> {
    for (index, o) in outputs.iter().enumerate() {
        let path = dir.join(format!("out.{}", o.name));
        let got = std::fs::read(&path).map_err(|e| format!("output {index}: cannot read {}: {e}", path.display()))?;
        if got.len() != o.interpreted.len() {
            return Err(format!("output {index}: {} bytes, the interpreter's has {}", got.len(), o.interpreted.len()));
        }
        let size = o.dtype.size().max(1);
        let differing = got.chunks(size).zip(o.interpreted.chunks(size)).filter(|(g, i)| g != i).count();
        if differing > 0 {
            return Err(format!(
                "output {index}: {differing} of {} elements differ from the interpreter",
                o.interpreted.len() / size
            ));
        }
        compare::check(index, o.dtype, &o.shape, &got, &o.expected)?;
    }
    Ok(())
}

/// The crate's `main.rs`: runs module `m` on `RUN_DIR/<m>/in.NAME` files
/// and writes `RUN_DIR/<m>/out.NAME`, a fresh model per data set; a panic
/// in one model is reported and the others still run.
fn main_rs(modules: usize) -> String {
    let mut s = String::from(
        "//! Runs every sampled conformance schedule: `conformance-generated RUN_DIR`\n\
         //! reads `RUN_DIR/<m>/in.NAME` and writes `RUN_DIR/<m>/out.NAME` (raw bytes).\n\n",
    );
    for m in 0..modules {
        let _ = writeln!(s, "#[rustfmt::skip]\n#[allow(clippy::all, unused, missing_docs)]\nmod m{m};");
    }
    s.push_str(
        r#"
use std::path::Path;

use rlx_runtime::model::GeneratedModel;

fn run<M: GeneratedModel>(dir: &Path) -> Result<(), String> {
    let mut model = M::try_new().map_err(|e| e.to_string())?;
    for t in M::INFO.inputs {
        let path = dir.join(format!("in.{}", t.name));
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if bytes.len() != t.bytes {
            return Err(format!("{}: {} bytes, input `{}` holds {}", path.display(), bytes.len(), t.name, t.bytes));
        }
        model.arena_mut()[t.offset..t.offset + t.bytes].copy_from_slice(&bytes);
    }
    model.run();
    for t in M::INFO.outputs {
        let path = dir.join(format!("out.{}", t.name));
        std::fs::write(&path, &model.arena()[t.offset..t.offset + t.bytes])
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let Some(run_dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: conformance-generated RUN_DIR");
        return std::process::ExitCode::from(2);
    };
    let run_dir = Path::new(&run_dir);
    let models: &[fn(&Path) -> Result<(), String>] = &[
"#,
    );
    for m in 0..modules {
        let _ = writeln!(s, "        run::<m{m}::Model>,");
    }
    s.push_str(
        r#"    ];
    let mut failed = false;
    for (m, model) in models.iter().enumerate() {
        let result = std::panic::catch_unwind(|| model(&run_dir.join(m.to_string())));
        let error = match result {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                format!("panicked: {}", message.replace('\n', " "))
            }
        };
        eprintln!("module m{m}: {error}");
        failed = true;
    }
    if failed { std::process::ExitCode::FAILURE } else { std::process::ExitCode::SUCCESS }
}
"#,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_evenly_and_take_all_when_few() {
        assert_eq!(sample(10, 4), vec![0, 2, 5, 7]);
        assert_eq!(sample(3, 16), vec![0, 1, 2]);
        assert_eq!(sample(5, 0), Vec::<usize>::new());
        assert_eq!(sample(100, 1), vec![0]);
    }

    #[test]
    fn module_errors_are_read_from_stderr() {
        let errors = module_errors("module m3: panicked\nsomething else\nmodule m10: in.x: 4 bytes\n");
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[&3], "panicked");
        assert_eq!(errors[&10], "in.x: 4 bytes");
    }

    #[test]
    fn one_differing_bit_is_a_difference() {
        use rlx_onnx::tensor::{ConstData, ConstTensor};
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/conformance-tests/compare_outputs");
        std::fs::create_dir_all(&dir).unwrap();
        let values = [1.0f32, 2.0];
        let interpreted: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let output = PassedOutput {
            name: "y".to_string(),
            dtype: rlx_sched::DType::F32,
            shape: vec![2],
            interpreted: interpreted.clone(),
            expected: ConstTensor { shape: vec![2], data: ConstData::F32(values.to_vec()) },
        };
        std::fs::write(dir.join("out.y"), &interpreted).unwrap();
        assert_eq!(compare_outputs(&dir, std::slice::from_ref(&output)), Ok(()));
        // The next f32 after 2.0: well within tolerance, but not the same bits.
        let mut nudged = interpreted.clone();
        nudged[4] ^= 1;
        std::fs::write(dir.join("out.y"), &nudged).unwrap();
        assert_eq!(
            compare_outputs(&dir, &[output]),
            Err("output 0: 1 of 2 elements differ from the interpreter".to_string())
        );
    }

    #[test]
    fn main_lists_every_module() {
        let text = main_rs(2);
        assert!(text.contains("mod m0;") && text.contains("mod m1;") && !text.contains("mod m2;"));
        assert!(text.contains("run::<m1::Model>,"));
    }
}
