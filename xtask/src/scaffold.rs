//! `cargo xtask import model.onnx --new-model NAME`: a model crate
//! `models/NAME` laid out as the bundled ones (`models/mlp`): `Cargo.toml`
//! with the same features, `src/lib.rs` over the generated code, a one-line
//! `src/main.rs` over `rlx_runtime::cli`, `model.sched` +
//! `weights.safetensors`, and `src/generated.rs` written by the code
//! `cargo xtask gen` runs; the crate is added to the root workspace's
//! `members`. See docs/onnx.md, "Scaffolding".
//!
//! `cargo xtask import-llama DIR --new-model NAME` scaffolds a decoder
//! crate the same way (`models/llama_tiny` is one): `rlx-decode` for the
//! binary, which embeds the checkpoint's `tokenizer.json` and the
//! `generation.json` written from it (docs/decoding.md).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rlx_codegen::project;

/// Weights above this size should not be committed (git hosts warn at
/// 50 MiB and refuse files of 100 MiB): the crate gets a `.gitignore` for
/// them and the user a warning.
pub const LARGE_WEIGHTS: usize = 50 << 20;

/// A crate to create: `models/NAME` under a workspace root, checked to be
/// free before the (possibly slow) import runs.
#[derive(Debug)]
pub struct Target {
    root: PathBuf,
    name: String,
    dir: PathBuf,
}

impl Target {
    /// Checks that `name` is a usable package name, that `models/NAME`
    /// does not exist and that the root manifest can take the new member.
    pub fn check(root: &Path, name: &str) -> Result<Target> {
        check_name(name)?;
        let dir = root.join("models").join(name);
        if dir.exists() {
            bail!("--new-model: {} already exists; choose another name or remove it first", dir.display());
        }
        let manifest = root.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
        add_member(&text, &member(name)).map_err(|e| anyhow!("--new-model: {}: {e}", manifest.display()))?;
        Ok(Target { root: root.to_path_buf(), name: name.to_string(), dir })
    }

    /// Writes the crate of an ONNX model, generates its code and adds it
    /// to the workspace; on any failure the half-written crate directory
    /// is removed again.
    pub fn create(self, onnx: &Path, imported: &rlx_onnx::Imported, weights_file: &str) -> Result<()> {
        let regenerate = format!("cargo xtask import {} --out-dir models/{1} --name {1}", onnx.display(), self.name);
        let files =
            self.finish(imported, weights_file, &regenerate, |t| t.write_model_crate(imported, weights_file))?;
        let shown = rlx_codegen::display_path(&self.dir, &self.root);
        let c_files = files.contains("capi.rs");
        self.print_next(&shown, c_files);
        Ok(())
    }

    /// Writes the crate of a decoder imported from a Hugging Face
    /// checkpoint: as `create`, with `rlx-decode` for the binary, which
    /// embeds the checkpoint's `tokenizer.json` and the `generation.json`
    /// written from it (docs/decoding.md).
    pub fn create_decoder(
        self,
        checkpoint: &Path,
        imported: &rlx_onnx::Imported,
        tokenizer: &[u8],
        generation_json: &str,
    ) -> Result<()> {
        let regenerate = format!(
            "cargo xtask import-llama {} --out-dir models/{1} --name {1}   # then copy tokenizer.json",
            checkpoint.display(),
            self.name
        );
        let weights_file = "weights.safetensors";
        self.finish(imported, weights_file, &regenerate, |t| {
            t.write_decoder_crate(imported, weights_file, tokenizer, generation_json)
        })?;
        let shown = rlx_codegen::display_path(&self.dir, &self.root);
        self.print_next(&shown, false);
        println!(
            "  target/x86_64-unknown-linux-gnu/release/{} --chat \"hello\"   # or --prompt, --interactive",
            self.name
        );
        Ok(())
    }

    /// Runs `write` (which returns the files it wrote, for the summary),
    /// adds the crate to the workspace, and reports; removes the crate
    /// directory again when anything fails.
    fn finish(
        &self,
        imported: &rlx_onnx::Imported,
        weights_file: &str,
        regenerate: &str,
        write: impl FnOnce(&Self) -> Result<String>,
    ) -> Result<String> {
        if self.dir.exists() {
            bail!("--new-model: {} already exists; choose another name or remove it first", self.dir.display());
        }
        let written = write(self).and_then(|files| {
            if imported.weights.len() > LARGE_WEIGHTS {
                let path = self.dir.join(".gitignore");
                std::fs::write(&path, gitignore(regenerate, weights_file))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            self.add_to_workspace().map(|()| files)
        });
        let files = match written {
            Ok(files) => files,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&self.dir);
                return Err(e);
            }
        };
        let shown = rlx_codegen::display_path(&self.dir, &self.root);
        println!("created {shown}: {files}");
        println!("{}", imported.report);
        if imported.weights.len() > LARGE_WEIGHTS {
            eprintln!(
                "warning: {shown}/{weights_file} is {:.1} MiB: do not commit it (listed in {shown}/.gitignore); \
                 the crate builds only where the weights exist",
                imported.weights.len() as f64 / (1024.0 * 1024.0)
            );
        }
        if imported.weights.len() > rlx_codegen::DEFAULT_MMAP_THRESHOLD {
            eprintln!(
                "note: weights over {} MiB are memory-mapped at run time: copy {weights_file} next to the binary",
                rlx_codegen::DEFAULT_MMAP_THRESHOLD >> 20
            );
        }
        Ok(files)
    }

    fn print_next(&self, shown: &str, c_files: bool) {
        let name = &self.name;
        println!("next:");
        println!("  cargo xtask gen {shown}/model.sched    # again after editing model.sched");
        println!("  cargo build --release -p {name}");
        println!("  cargo xtask build {name} --static");
        if c_files {
            let krate = name.replace('-', "_");
            println!("  cargo xtask build {name} --lib       # lib{krate}.a and its header (docs/shipping.md)");
        }
    }

    fn write(&self, path: PathBuf, bytes: &[u8]) -> Result<()> {
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
    }

    /// The files both kinds of crate have: the manifest, `src/lib.rs`,
    /// `src/main.rs`, the schedule and weights, and `src/generated.rs`.
    /// Returns the schedule's path.
    fn write_common(
        &self,
        imported: &rlx_onnx::Imported,
        weights_file: &str,
        manifest: &str,
        lib: &str,
        main: &str,
    ) -> Result<PathBuf> {
        let src = self.dir.join("src");
        std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
        self.write(self.dir.join("Cargo.toml"), manifest.as_bytes())?;
        self.write(src.join("lib.rs"), lib.as_bytes())?;
        self.write(src.join("main.rs"), main.as_bytes())?;
        self.write(self.dir.join(weights_file), &imported.weights)?;
        let sched = self.dir.join("model.sched");
        self.write(sched.clone(), imported.sched_text.as_bytes())?;
        let out = src.join("generated.rs");
        let text = project::generate_file(&sched, &self.root, &out).map_err(|e| anyhow!("{e}"))?;
        self.write(out, text.as_bytes())?;
        Ok(sched)
    }

    fn write_model_crate(&self, imported: &rlx_onnx::Imported, weights_file: &str) -> Result<String> {
        let (manifest, lib, main) = (cargo_toml(&self.name), lib_rs(&self.name), main_rs(&self.name));
        let sched = self.write_common(imported, weights_file, &manifest, &lib, &main)?;
        let mut files = format!("model.sched, {weights_file}, src/generated.rs");
        // The C header and functions, as `cargo xtask gen` writes them for a
        // model without entry points (docs/shipping.md).
        if let Some(c) = project::c_api_files(&sched, &self.root).map_err(|e| anyhow!("{e}"))? {
            for (path, text) in [c.header, c.bindings] {
                std::fs::create_dir_all(path.parent().unwrap_or(&self.dir))?;
                self.write(path, text.as_bytes())?;
            }
            files.push_str(", include/*.h, src/capi.rs");
        }
        files.push_str(", src/lib.rs, src/main.rs, Cargo.toml");
        Ok(files)
    }

    fn write_decoder_crate(
        &self,
        imported: &rlx_onnx::Imported,
        weights_file: &str,
        tokenizer: &[u8],
        generation_json: &str,
    ) -> Result<String> {
        let main = decoder_main_rs(&self.name, Path::new("../tokenizer.json"), Path::new("../generation.json"));
        let (manifest, lib) = (decoder_cargo_toml(&self.name), decoder_lib_rs(&self.name));
        self.write_common(imported, weights_file, &manifest, &lib, &main)?;
        self.write(self.dir.join("tokenizer.json"), tokenizer)?;
        self.write(self.dir.join(rlx_decode::generation::FILE_NAME), generation_json.as_bytes())?;
        Ok(format!(
            "model.sched, {weights_file}, tokenizer.json, generation.json, src/generated.rs, src/lib.rs, src/main.rs, \
             Cargo.toml"
        ))
    }

    /// Re-reads the root manifest (it may have changed during the import)
    /// and adds the member.
    fn add_to_workspace(&self) -> Result<()> {
        let manifest = self.root.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
        let updated = add_member(&text, &member(&self.name)).map_err(|e| anyhow!("{}: {e}", manifest.display()))?;
        std::fs::write(&manifest, updated).with_context(|| format!("writing {}", manifest.display()))
    }
}

fn member(name: &str) -> String {
    format!("models/{name}")
}

/// A package (and binary) name: lower-case ASCII letters, digits, `_` and
/// `-`, starting with a letter; cargo's reserved names are refused.
fn check_name(name: &str) -> Result<()> {
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !valid {
        bail!(
            "--new-model: `{name}` is not a valid model name; use lower-case letters, digits, `_` and `-`, \
             starting with a letter"
        );
    }
    if matches!(name, "test" | "build" | "deps" | "examples" | "incremental" | "std" | "core" | "alloc" | "proc_macro")
    {
        bail!("--new-model: `{name}` is reserved by cargo; choose another name");
    }
    Ok(())
}

/// `manifest` (a root `Cargo.toml`) with `"member"` added to
/// `[workspace] members`, changing nothing else: after the last
/// `"models/..."` entry of a multi-line list (or at its end), with the
/// indentation and trailing comma of its entries; at the end of a one-line
/// list.
pub fn add_member(manifest: &str, member: &str) -> Result<String, String> {
    let lines: Vec<&str> = manifest.split_inclusive('\n').collect();
    let mut table = "";
    let mut start = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with('[') && !t.starts_with("[[") && t.ends_with(']') && !t.contains('=') {
            table = t;
        } else if table == "[workspace]" && t.starts_with("members") && t.contains('=') {
            start = Some(i);
            break;
        }
    }
    let start = start.ok_or("no `members` list in its [workspace] table")?;
    let quoted = format!("\"{member}\"");
    let open = lines[start].find('[').ok_or("the `members` list does not open with `[` on its first line")?;
    let first = &lines[start][open + 1..];
    if let Some(close) = first.find(']') {
        // A one-line list: `members = ["a", "b"]`.
        let inner = first[..close].trim();
        if inner.split(',').any(|e| e.trim() == quoted) {
            return Err(format!("`{member}` is already a workspace member"));
        }
        let sep = if inner.is_empty() {
            ""
        } else if inner.ends_with(',') {
            " "
        } else {
            ", "
        };
        let cut = open + 1 + first[..close].trim_end().len();
        let mut out = lines[..start].concat();
        out.push_str(&lines[start][..cut]);
        out.push_str(sep);
        out.push_str(&quoted);
        out.push_str(&lines[start][open + 1 + close..]);
        out.push_str(&lines[start + 1..].concat());
        return Ok(out);
    }
    let end = (start + 1..lines.len())
        .find(|&i| lines[i].trim_start().starts_with(']'))
        .ok_or("the `members` list is not closed")?;
    let entries: Vec<usize> = (start + 1..end).filter(|&i| lines[i].trim_start().starts_with('"')).collect();
    if entries.iter().any(|&i| lines[i].trim().trim_end_matches(',').trim() == quoted) {
        return Err(format!("`{member}` is already a workspace member"));
    }
    let after = entries.iter().rev().find(|&&i| lines[i].trim_start().starts_with("\"models/")).or(entries.last());
    let indent = entries.first().map_or("    ", |&i| {
        let l = lines[i];
        &l[..l.len() - l.trim_start().len()]
    });
    let mut out = String::with_capacity(manifest.len() + quoted.len() + 8);
    let insert_at = after.map_or(end, |&i| i + 1);
    for (i, line) in lines.iter().enumerate() {
        if i == insert_at {
            out.push_str(&format!("{indent}{quoted},\n"));
        }
        if Some(&i) == after && !line.trim_end().ends_with(',') {
            // The entry before the new one needs its separating comma.
            let body = line.trim_end();
            out.push_str(body);
            out.push(',');
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    Ok(out)
}

fn cargo_toml(name: &str) -> String {
    let capi = format!(
        "# The C ABI of `include/{name}.h` (`src/capi.rs`), for `cargo xtask build {name} --lib`.\ncapi = []\n"
    );
    manifest(name, "model, imported from ONNX", "", &capi)
}

/// The manifest of a decoder crate: a model crate's, with the generation
/// loop of `rlx-decode` for its binary and without the C library (a
/// decoder's schedule has entry points).
fn decoder_cargo_toml(name: &str) -> String {
    let decode = "# The generation loop, sampling and tokenizer of the binary.\n\
                  rlx-decode = { path = \"../../crates/rlx-decode\" }\n";
    manifest(name, "decoder, imported from a Hugging Face checkpoint", decode, "")
}

/// A scaffolded crate's `Cargo.toml`: `what` describes it, `dependencies`
/// and `features` are lines added to those tables.
fn manifest(name: &str, what: &str, dependencies: &str, features: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
description = "The `{name}` {what} and compiled ahead of time by rlx"
version.workspace = true
edition.workspace = true
publish = false

[dependencies]
rlx-runtime = {{ workspace = true, features = ["cli"] }}
{dependencies}
[features]
# Per-thunk timing for `--profile`; off, the generated code carries none.
profile = []
{features}default = ["openblas"]
# GEMM backend: static OpenBLAS (default) or the pure-Rust `gemm` crate
# (`--no-default-features --features pure-rust`).
openblas = ["rlx-runtime/openblas"]
pure-rust = ["rlx-runtime/pure-rust"]

[lints]
workspace = true
"#
    )
}

/// The library of model crate `name`: the generated code, compiled once
/// for the binary, the tests and other crates, and its API.
pub(crate) fn lib_rs(name: &str) -> String {
    format!(
        "//! The `{name}` model, compiled ahead of time by rlx: the generated code\n\
         //! (`src/generated.rs`, written by `cargo xtask gen`), compiled once for the\n\
         //! binary, the tests and any crate that links the model.\n\n\
         #[rustfmt::skip]\n\
         #[allow(clippy::all, clippy::pedantic, unused, missing_docs)]\n\
         mod generated;\n\n\
         /// The C library's functions (`include/{name}.h`), generated from the same\n\
         /// schedule; built by `cargo xtask build {name} --lib`.\n\
         #[cfg(feature = \"capi\")]\n\
         #[rustfmt::skip]\n\
         #[allow(clippy::all, clippy::pedantic, missing_docs)]\n\
         pub mod capi;\n\n\
         pub use generated::*;\n\
         pub use rlx_runtime::model::GeneratedModel;\n"
    )
}

/// The library of decoder crate `name` (as `models/llama_tiny`'s): the
/// generated decoder step and its API; no C library (a decoder's schedule
/// has entry points, which the C header does not describe).
pub(crate) fn decoder_lib_rs(name: &str) -> String {
    format!(
        "//! The `{name}` decoder, compiled ahead of time by rlx: one decoder step\n\
         //! (the generated code in `src/generated.rs`, written by `cargo xtask gen`)\n\
         //! over a KV cache held in `state` buffers of the arena, with a `decode`\n\
         //! entry (`run`) and a `prefill` entry (`run_prefill`); see `docs/decoding.md`.\n\n\
         #[rustfmt::skip]\n\
         #[allow(clippy::all, clippy::pedantic, unused, missing_docs)]\n\
         mod generated;\n\n\
         pub use generated::*;\n\
         pub use rlx_runtime::model::GeneratedModel;\n"
    )
}

/// The binary of model crate `name`, over its library.
pub(crate) fn main_rs(name: &str) -> String {
    let krate = name.replace('-', "_");
    format!(
        "//! The `{name}` model binary: `{name} --input NAME=PATH.npy ... [--output NAME=PATH.npy]`.\n\n\
         fn main() -> std::process::ExitCode {{\n    rlx_runtime::cli::main::<{krate}::Model>()\n}}\n"
    )
}

/// The binary of decoder crate `name` (as `models/llama_tiny`'s): its
/// decoder step under `rlx_decode`'s generation loop and CLI, with the
/// `tokenizer.json` at `tokenizer` and the `generation.json` at
/// `generation` embedded.
pub(crate) fn decoder_main_rs(name: &str, tokenizer: &Path, generation: &Path) -> String {
    let krate = name.replace('-', "_");
    format!(
        "//! The `{name}` decoder binary: `{name} --prompt TEXT [--max-tokens N] ...` (rlx_decode::cli).\n\n\
         fn main() -> std::process::ExitCode {{\n    \
         use {krate}::GeneratedModel;\n    \
         // Built once the arguments are good: `--help` needs no weights, and\n    \
         // missing weights are one line, exit code 2.\n    \
         let make = || {{\n        \
         let model = {krate}::Model::try_new().map_err(|e| e.to_string())?;\n        \
         rlx_decode::GeneratedStep::new(model).map_err(|e| e.to_string())\n    \
         }};\n    \
         let files = rlx_decode::cli::Embedded {{\n        \
         tokenizer_json: include_bytes!({:?}),\n        \
         generation_json: include_str!({:?}),\n    \
         }};\n    \
         rlx_decode::cli::main_with(make, files)\n}}\n",
        tokenizer.display().to_string(),
        generation.display().to_string()
    )
}

/// The `.gitignore` of a crate whose weights are too large for git:
/// `regenerate` is the command that writes them again.
fn gitignore(regenerate: &str, weights_file: &str) -> String {
    format!(
        "# Over 50 MiB: not for git (docs/onnx.md, \"Scaffolding\"). Rewrite it with\n\
         #   {regenerate}\n\
         /{weights_file}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKSPACE: &str =
        "[workspace]\nresolver = \"2\"\nmembers = [\n    \"rlx-runtime\",\n    \"models/mlp\",\n    \
                             \"models/cnn\",\n    \"tests\",\n]\n\n[workspace.package]\nversion = \"0.1.0\"\n";

    #[test]
    fn a_member_goes_after_the_last_model() {
        let got = add_member(WORKSPACE, "models/lenet").unwrap();
        assert_eq!(got, WORKSPACE.replace("\"models/cnn\",\n", "\"models/cnn\",\n    \"models/lenet\",\n"));
    }

    #[test]
    fn without_models_it_goes_last_and_keeps_commas() {
        let text = "[package]\nname = \"x\"\n[workspace]\nmembers = [\n  \"a\",\n  \"b\"\n]\n";
        assert_eq!(add_member(text, "models/m").unwrap(), text.replace("  \"b\"\n", "  \"b\",\n  \"models/m\",\n"));
        let empty = "[workspace]\nmembers = [\n]\n";
        assert_eq!(add_member(empty, "models/m").unwrap(), "[workspace]\nmembers = [\n    \"models/m\",\n]\n");
    }

    #[test]
    fn one_line_lists_grow_in_place() {
        let text = "[workspace]\nmembers = [\"a\", \"b\"] # two\nresolver = \"2\"\n";
        assert_eq!(
            add_member(text, "models/m").unwrap(),
            "[workspace]\nmembers = [\"a\", \"b\", \"models/m\"] # two\nresolver = \"2\"\n"
        );
        assert_eq!(
            add_member("[workspace]\nmembers = []\n", "models/m").unwrap(),
            "[workspace]\nmembers = [\"models/m\"]\n"
        );
    }

    #[test]
    fn duplicates_and_missing_lists_are_errors() {
        assert_eq!(add_member(WORKSPACE, "models/mlp").unwrap_err(), "`models/mlp` is already a workspace member");
        assert_eq!(
            add_member("[workspace]\nmembers = [\"models/m\"]\n", "models/m").unwrap_err(),
            "`models/m` is already a workspace member"
        );
        assert_eq!(
            add_member("[package]\nmembers = []\n", "m").unwrap_err(),
            "no `members` list in its [workspace] table"
        );
        assert_eq!(
            add_member("[workspace]\nmembers = [\n  \"a\",\n", "m").unwrap_err(),
            "the `members` list is not closed"
        );
    }

    #[test]
    fn names_are_package_names() {
        for good in ["lenet", "mini_lm6", "bert-base"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "LeNet", "6net", "a b", "_x", "../x", "a/b"] {
            let e = check_name(bad).unwrap_err().to_string();
            assert!(e.contains("is not a valid model name"), "{bad}: {e}");
        }
        assert!(check_name("test").unwrap_err().to_string().contains("reserved by cargo"));
    }

    /// `y = x @ w` with `w` of `k * k` f32 values.
    fn matmul_model(k: i64) -> rlx_onnx::proto::ModelProto {
        use rlx_onnx::proto::*;
        let vi = |name: &str, dims: &[i64]| ValueInfoProto {
            name: name.to_string(),
            r#type: Some(TypeProto {
                tensor_type: Some(TypeProtoTensor {
                    elem_type: data_type::FLOAT,
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
        };
        let w = TensorProto {
            name: "w".to_string(),
            dims: vec![k, k],
            data_type: data_type::FLOAT,
            raw_data: vec![0; (k * k * 4) as usize],
            ..Default::default()
        };
        ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
            graph: Some(GraphProto {
                node: vec![NodeProto {
                    input: vec!["x".to_string(), "w".to_string()],
                    output: vec!["y".to_string()],
                    name: "mm".to_string(),
                    op_type: "MatMul".to_string(),
                    ..Default::default()
                }],
                name: "big".to_string(),
                initializer: vec![w],
                input: vec![vi("x", &[1, k])],
                output: vec![vi("y", &[1, k])],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn large_weights_get_a_gitignore() {
        let root = std::env::temp_dir().join(format!("rlx-xtask-scaffold-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = [\n    \"xtask\",\n]\n").unwrap();
        // 3,700^2 f32 weights: 52.2 MiB, just over the limit.
        let k = 3700;
        let mut opts = rlx_onnx::ImportOptions::new("weights.safetensors");
        opts.model_name = Some("big".to_string());
        let imported = rlx_onnx::import_model(&matmul_model(k), &root, &opts).unwrap();
        assert!(imported.weights.len() > LARGE_WEIGHTS && imported.weights.len() < LARGE_WEIGHTS + (4 << 20));
        Target::check(&root, "big").unwrap().create(Path::new("big.onnx"), &imported, "weights.safetensors").unwrap();
        let ignore = std::fs::read_to_string(root.join("models/big/.gitignore")).unwrap();
        assert!(ignore.lines().any(|l| l == "/weights.safetensors"), "{ignore}");
        assert!(ignore.contains("cargo xtask import big.onnx --out-dir models/big --name big"), "{ignore}");
        assert!(root.join("models/big/src/generated.rs").is_file());
        assert!(root.join("models/big/include/big.h").is_file() && root.join("models/big/src/capi.rs").is_file());
        assert_eq!(std::fs::read_to_string(root.join("models/big/src/lib.rs")).unwrap(), lib_rs("big"));
        assert_eq!(std::fs::read_to_string(root.join("models/big/src/main.rs")).unwrap(), main_rs("big"));
        assert_eq!(
            std::fs::read_to_string(root.join("Cargo.toml")).unwrap(),
            "[workspace]\nmembers = [\n    \"xtask\",\n    \"models/big\",\n]\n"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_crate_files_follow_the_bundled_models() {
        let toml = cargo_toml("lenet");
        for line in
            ["name = \"lenet\"", "default = [\"openblas\"]", "pure-rust = [\"rlx-runtime/pure-rust\"]", "profile = []"]
        {
            assert!(toml.contains(line), "{line} missing from\n{toml}");
        }
        assert!(main_rs("lenet").contains("rlx_runtime::cli::main::<lenet::Model>()"));
        assert!(main_rs("mini-lm").contains("rlx_runtime::cli::main::<mini_lm::Model>()"));
        assert!(lib_rs("lenet").contains("mod generated;\n\n"));
        assert!(lib_rs("lenet").contains("pub mod capi;\n\npub use generated::*;\n"));
        // The bundled models' library and binary are exactly what it writes.
        let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
        for name in ["mlp", "cnn", "bert_tiny"] {
            let read = |file: &str| std::fs::read_to_string(models.join(name).join("src").join(file)).unwrap();
            assert_eq!(read("lib.rs"), lib_rs(name), "models/{name}/src/lib.rs");
            assert_eq!(read("main.rs"), main_rs(name), "models/{name}/src/main.rs");
        }
        // llama_tiny's binary is a decoder's (below its doc comment), over its own tokenizer.
        let llama = std::fs::read_to_string(models.join("llama_tiny/src/main.rs")).unwrap();
        let code = |text: &str| -> String {
            text.lines().skip_while(|l| l.starts_with("//!") || l.is_empty()).collect::<Vec<_>>().join("\n")
        };
        let main = decoder_main_rs("llama_tiny", Path::new("../tokenizer.json"), Path::new("../generation.json"));
        assert_eq!(code(&main), code(&llama));
        let lib = std::fs::read_to_string(models.join("llama_tiny/src/lib.rs")).unwrap();
        assert_eq!(lib, decoder_lib_rs("llama_tiny"), "models/llama_tiny/src/lib.rs");
    }
}
