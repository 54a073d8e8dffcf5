//! What each fuzz target does with one input, and the properties it
//! asserts. Shared, through `#[path]`, by the AFL binaries
//! (`fuzz/src/bin/*.rs`) and the CI mutation test
//! (`tests/tests/mutation.rs`), so both check exactly the same thing.
//!
//! Every function takes arbitrary bytes and either accepts or rejects
//! them; anything else (a panic, an abort, an endless loop) is a bug. On
//! top of "no panic" each target asserts a property of what it accepts:
//!
//! - `sched`: the text validates (`check_source`), its diagnostics render;
//!   an accepted schedule prints canonically, the printed text is a fixed
//!   point of print∘parse and re-validates to the same schedule.
//! - `npy`: `read_npy`; an accepted array has `elems * size` bytes and
//!   survives `write_npy` then `read_npy` unchanged.
//! - `weights`: the bytes as the safetensors file of four schedules (two
//!   validator fixtures, the mlp and cnn models) with the sha256 line
//!   fixed up; an accepted file maps (`Weights::open`) at the validator's
//!   data section, matches its sha256, and holds every `param` buffer.
//! - `onnx`: `import_bytes` with default options; an imported model's
//!   schedule is canonical and validates against the weights it came with.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rlx_onnx::{import_bytes, ImportOptions};
use rlx_runtime::npy::{read_npy, write_npy};
use rlx_runtime::weights::Weights;
use rlx_sched::{check_source, parse, print, sha256_hex, validate, DType, Schedule, Segment, ValidateOptions};

/// What a target made of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Rejected,
}

/// The weights file the validator's fixtures (`tests/sched/ok/validate_weights_*.sched`)
/// name, so seeds that use it validate.
const FIXTURE_WEIGHTS: &[u8] = include_bytes!("../../tests/sched/ok/validate_weights.safetensors");
/// The external data of `crates/rlx-onnx/tests/data/mlp_external.onnx`.
const MLP_EXTERNAL: &[u8] = include_bytes!("../../crates/rlx-onnx/tests/data/mlp_external.bin");

/// Schedules whose weights line the `weights` target points at the input.
const WEIGHTS_TEMPLATES: &[(&str, &str)] = &[
    ("validate_weights_mlp", include_str!("../../tests/sched/ok/validate_weights_mlp.sched")),
    ("validate_weights_embed", include_str!("../../tests/sched/ok/validate_weights_embed.sched")),
    ("mlp", include_str!("../../models/mlp/model.sched")),
    ("cnn", include_str!("../../models/cnn/model.sched")),
];

/// A scratch directory for one target: the files the validator and the
/// importer read (the weights fixture, external ONNX data) and the files
/// the targets write (the input itself when the API reads a path).
/// Removed on drop.
#[derive(Debug)]
pub struct Workdir {
    dir: PathBuf,
}

impl Workdir {
    /// Creates `NAME` below `/dev/shm` when that exists (no disk traffic
    /// per execution), else below the temporary directory.
    pub fn new(name: &str) -> Workdir {
        let shm = Path::new("/dev/shm");
        let root = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let dir = root.join(name);
        let ok = dir.join("ok");
        std::fs::create_dir_all(&ok).expect("create the fuzz work directory");
        std::fs::write(ok.join("validate_weights.safetensors"), FIXTURE_WEIGHTS).expect("write the weights fixture");
        std::fs::write(dir.join("mlp_external.bin"), MLP_EXTERNAL).expect("write the external data");
        std::fs::create_dir_all(dir.join("import")).expect("create the import directory");
        Workdir { dir }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Where `sched` resolves weights paths: `ok/`, which holds the
    /// fixture, so both `validate_weights.safetensors` and
    /// `../ok/validate_weights.safetensors` (the run cases' spelling) exist.
    fn sched_base(&self) -> PathBuf {
        self.dir.join("ok")
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).expect("write a fuzz input");
        path
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `target` on `data`; `None` for an unknown target.
pub fn run(target: &str, work: &Workdir, data: &[u8]) -> Option<Outcome> {
    Some(match target {
        "sched" => sched(work, data),
        "npy" => npy(work, data),
        "weights" => weights(work, data),
        "onnx" => onnx(work, data),
        "gguf" => gguf(work, data),
        _ => return None,
    })
}

/// Everything a schedule holds except where its nodes came from (line
/// numbers move when the text is reprinted) and the source hash, as text:
/// `Debug` prints every f32 exactly and NaN equal to itself.
fn summary(s: &Schedule) -> String {
    let mut out = format!(
        "{} arena {} align {} {:?} {:?}\n",
        s.model(),
        s.arena_size(),
        s.arena_align(),
        s.weights(),
        s.params()
    );
    for b in s.buffers() {
        let _ = writeln!(out, "{b:?}");
    }
    for n in s.nodes() {
        let _ = writeln!(out, "{:?}", n.thunk);
    }
    out
}

/// `.sched` text through the front end, as `cargo xtask check-sched` runs it.
pub fn sched(work: &Workdir, data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else { return Outcome::Rejected };
    let base = work.sched_base();
    let checked = match check_source(text, &base) {
        Ok(c) => c,
        Err(d) => {
            assert!(!d.is_empty(), "rejected without a diagnostic");
            let _ = d.render("fuzz.sched", text);
            return Outcome::Rejected;
        }
    };
    let _ = checked.warnings.render("fuzz.sched", text);
    let ast = parse(text).expect("a validated text parses");
    let printed = print(&ast);
    let again = parse(&printed).unwrap_or_else(|d| {
        panic!("the printed schedule does not parse:\n{}\n{printed}", d.render("printed", &printed))
    });
    assert_eq!(print(&again), printed, "printing is not a fixed point");
    let opts = ValidateOptions::new(checked.schedule.source_sha256().to_owned(), &base);
    let re = validate(&again, &opts).unwrap_or_else(|d| {
        panic!("the printed schedule does not validate:\n{}\n{printed}", d.render("printed", &printed))
    });
    assert_eq!(
        summary(&re.schedule),
        summary(&checked.schedule),
        "re-validating the printed text changes the schedule"
    );
    Outcome::Accepted
}

/// A `.npy` file through the model CLIs' reader.
pub fn npy(work: &Workdir, data: &[u8]) -> Outcome {
    let path = work.write("input.npy", data);
    let Ok(a) = read_npy(&path) else { return Outcome::Rejected };
    let expected = a.shape.iter().try_fold(a.dtype.size(), |acc, &d| acc.checked_mul(d));
    assert_eq!(expected, Some(a.bytes.len()), "{} holds {} bytes", a.describe(), a.bytes.len());
    assert_eq!(a.elems() * a.dtype.size(), a.bytes.len());
    let _ = a.describe();
    let back_path = work.path().join("written.npy");
    write_npy(&back_path, a.dtype, &a.shape, &a.bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", a.describe()));
    let back = read_npy(&back_path).unwrap_or_else(|e| panic!("cannot read back {}: {e}", a.describe()));
    let mut want = a.clone();
    if want.dtype == DType::Bool {
        // .npy stores a bool as one byte; any non-zero byte reads as true.
        want.bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    assert_eq!(back, want, "write_npy then read_npy changes the array");
    Outcome::Accepted
}

/// `text` with its `weights` line naming `w.safetensors` with `sha`.
fn with_weights_line(text: &str, sha: &str) -> String {
    let mut out = String::with_capacity(text.len() + 80);
    for line in text.lines() {
        if line.starts_with("weights ") {
            let _ = writeln!(out, "weights \"w.safetensors\" sha256 \"{sha}\"");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A safetensors file as the validator checks it (header, tensors against
/// the `param` buffers), then as a model binary maps it.
pub fn weights(work: &Workdir, data: &[u8]) -> Outcome {
    let path = work.write("w.safetensors", data);
    let sha = sha256_hex(data);
    let mut outcome = Outcome::Rejected;
    for (name, template) in WEIGHTS_TEMPLATES {
        let text = with_weights_line(template, &sha);
        let checked = match check_source(&text, work.path()) {
            Ok(c) => c,
            Err(d) => {
                assert!(!d.is_empty(), "rejected without a diagnostic");
                let _ = d.render(name, &text);
                continue;
            }
        };
        outcome = Outcome::Accepted;
        let s = &checked.schedule;
        let w = s.weights().expect("a schedule with a weights line records its file");
        assert_eq!(w.sha256, sha);
        assert_eq!(
            w.data_offset.checked_add(w.data_len),
            Some(data.len()),
            "{name}: the data section is not the rest of the file"
        );
        let mapped = Weights::open(&path, w.data_offset, w.data_len)
            .unwrap_or_else(|e| panic!("{name}: a validated weights file does not map: {e}"));
        mapped.verify_sha256(&sha).unwrap_or_else(|e| panic!("{name}: {e}"));
        let section = mapped.data();
        assert_eq!(section.len(), w.data_len);
        for b in s.buffers().iter().filter(|b| b.segment == Segment::Weights) {
            let end = b.offset.checked_add(b.bytes());
            assert!(end.is_some_and(|e| e <= section.len()), "{name}: {b:?} lies outside the data section");
            let _ = &section[b.offset..b.offset + b.bytes()];
        }
    }
    outcome
}

/// An ONNX model through the importer, with default options.
pub fn onnx(work: &Workdir, data: &[u8]) -> Outcome {
    let opts = ImportOptions::new("weights.safetensors");
    let imported = match import_bytes(data, work.path(), &opts) {
        Ok(i) => i,
        Err(e) => {
            let _ = e.to_string();
            return Outcome::Rejected;
        }
    };
    let text = &imported.sched_text;
    let ast =
        parse(text).unwrap_or_else(|d| panic!("the imported schedule does not parse:\n{}", d.render("imported", text)));
    assert_eq!(&print(&ast), text, "the imported schedule is not canonical");
    let out = work.path().join("import");
    std::fs::write(out.join("weights.safetensors"), &imported.weights).expect("write the imported weights");
    if let Err(d) = check_source(text, &out) {
        panic!("the imported schedule does not validate:\n{}\n{text}", d.render("imported.sched", text));
    }
    Outcome::Accepted
}

/// `gguf`: a GGUF file through `rlx_gguf`'s reader; every tensor of an
/// accepted file dequantizes to exactly its element count, and a Llama
/// GGUF maps to a Hugging Face checkpoint that the Llama importer either
/// imports or refuses with an error, and to a tokenizer that is JSON.
pub fn gguf(_work: &Workdir, data: &[u8]) -> Outcome {
    let file = match rlx_gguf::Gguf::parse(data) {
        Ok(f) => f,
        Err(e) => {
            let _ = e.to_string();
            return Outcome::Rejected;
        }
    };
    for t in file.tensors() {
        assert_eq!(file.raw(t).len(), t.bytes, "tensor `{}`: raw bytes", t.name);
        assert_eq!(file.dequantize(t).len(), t.elements(), "tensor `{}`: values", t.name);
    }
    if let Ok(json) = rlx_gguf::tokenizer::tokenizer_json(&file) {
        serde_json::from_slice::<serde_json::Value>(&json).expect("the tokenizer.json written is JSON");
    }
    let _ = rlx_gguf::tokenizer::tokenizer_config_json(&file);
    if let Ok(hf) = rlx_gguf::llama_checkpoint(&file) {
        if let Err(e) =
            rlx_onnx::llama::import_llama(&hf.config_json, &hf.safetensors, 4, "gguf", "weights.safetensors")
        {
            let _ = e.to_string();
        }
    }
    Outcome::Accepted
}
