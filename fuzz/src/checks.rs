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
//! - `llama`: `config.json`, a NUL byte, `model.safetensors`, through
//!   `import_llama_with` (a prefill chunk of 4); as `onnx`, an imported
//!   schedule is canonical and validates against its weights.
//! - `tokenizer`: the bytes as a `tokenizer.json` (`Tokenizer::from_bytes`),
//!   as a `generation.json` (`GenerationConfig::from_json`) and as a
//!   checkpoint's `tokenizer_config.json` and `config.json`
//!   (`GenerationConfig::from_checkpoint`). An accepted tokenizer encodes a
//!   fixed text and decodes the ids back, and streaming decode gives the
//!   same text; an accepted config survives `to_json` then `from_json`;
//!   a chat template that compiles renders a fixed conversation or
//!   returns an error, in a child process under [`RENDER_LIMITS`] as the
//!   decoder CLI renders (`Workdir::with_chat_renderer`).
//! - `sched_run`: `.sched` text that validates, has an arena of at most
//!   [`RUN_MAX_BYTES`] and at most [`RUN_MAX_WORK`] work, run by the
//!   interpreter: every entry twice from the reset state with zero inputs,
//!   twice with patterned ones; both runs of a pair leave the same arena
//!   bits.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rlx_decode::{ChatTemplate, ChildRenderer, GenerationConfig, Message, RenderLimits, TextStream, Tokenizer};
use rlx_interp::Interpreter;
use rlx_onnx::llama::{import_llama_with, LlamaOptions, WeightFormat};
use rlx_onnx::{import_bytes, ImportOptions, Imported};
use rlx_runtime::npy::{read_npy, write_npy};
use rlx_runtime::weights::Weights;
use rlx_sched::thunk::Thunk;
use rlx_sched::value::{Value, ValueKind};
use rlx_sched::{
    check_source, parse, print, scratch_bound, sha256_hex, validate, DType, FieldSyntax, Schedule, Segment,
    ValidateOptions,
};

/// What a target made of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Rejected,
}

/// The weights file the validator's fixtures (`tests/sched/ok/validate_weights_*.sched`)
/// name, so seeds that use it validate.
const FIXTURE_WEIGHTS: &[u8] = include_bytes!("../../tests/sched/ok/validate_weights.safetensors");
/// The weights files of the run cases that name one in their own folder,
/// so that those seeds validate (and `sched_run` runs them) too.
const RUN_CASE_WEIGHTS: &[(&str, &[u8])] = &[
    (
        "bias_add_keyword_names_weights.safetensors",
        include_bytes!("../../tests/sched/run/bias_add_keyword_names_weights.safetensors"),
    ),
    ("reserved_names_weights.safetensors", include_bytes!("../../tests/sched/run/reserved_names_weights.safetensors")),
];
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
/// importer read (the weights fixtures, external ONNX data) and the files
/// the targets write (the input itself when the API reads a path).
/// Removed on drop.
#[derive(Debug)]
pub struct Workdir {
    dir: PathBuf,
    /// The process `tokenizer` renders chat templates in, kept across
    /// inputs ([`Workdir::with_chat_renderer`]).
    renderer: Option<Mutex<ChildRenderer>>,
}

/// What one chat-template rendering of `tokenizer` may spend: the CLI's
/// memory, and well under the targets' one-second limit.
pub const RENDER_LIMITS: RenderLimits = RenderLimits { memory: 64 << 20, time: Duration::from_millis(400) };

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
        for (name, bytes) in RUN_CASE_WEIGHTS {
            std::fs::write(ok.join(name), bytes).expect("write a run case's weights");
        }
        std::fs::write(dir.join("mlp_external.bin"), MLP_EXTERNAL).expect("write the external data");
        std::fs::create_dir_all(dir.join("import")).expect("create the import directory");
        Workdir { dir, renderer: None }
    }

    /// Chat templates render in a child process running `program` (a
    /// binary that calls `rlx_decode::chat::serve_render_request` first),
    /// as a decoder binary renders them: `tokenizer` needs one.
    pub fn with_chat_renderer(mut self, program: PathBuf) -> Workdir {
        self.renderer = Some(Mutex::new(ChildRenderer::new(program, RENDER_LIMITS)));
        self
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Where `sched` and `sched_run` resolve weights paths: `ok/`, which
    /// holds the fixtures, so both `validate_weights.safetensors` and
    /// `../ok/validate_weights.safetensors` (the run cases' spelling) exist,
    /// and the two run cases' own files.
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
        "llama" => llama(work, data),
        "tokenizer" => tokenizer(work, data),
        "sched_run" => sched_run(work, data),
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
    match import_bytes(data, work.path(), &opts) {
        Ok(imported) => check_imported(work, &imported),
        Err(e) => {
            let _ = e.to_string();
            Outcome::Rejected
        }
    }
}

/// What both importers promise of a model they accept: its schedule is
/// canonical (`print(parse(s)) == s`) and validates against its weights.
fn check_imported(work: &Workdir, imported: &Imported) -> Outcome {
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

/// A Llama checkpoint through `import_llama_with`: the input is
/// `config.json`, [`LLAMA_SEPARATOR`](crate::seeds::LLAMA_SEPARATOR) (a
/// NUL byte), then `model.safetensors`.
pub fn llama(work: &Workdir, data: &[u8]) -> Outcome {
    let Some(split) = data.iter().position(|&b| b == crate::seeds::LLAMA_SEPARATOR) else { return Outcome::Rejected };
    let Ok(config) = std::str::from_utf8(&data[..split]) else { return Outcome::Rejected };
    let tensors = &data[split + 1..];
    let opts = LlamaOptions { prefill: 4, weights: WeightFormat::AsStored, max_len: None };
    match import_llama_with(config, tensors, &opts, "fuzz", "weights.safetensors") {
        Ok(imported) => check_imported(work, &imported),
        Err(e) => {
            let _ = e.to_string();
            Outcome::Rejected
        }
    }
}

/// What an accepted tokenizer encodes and decodes: ASCII, punctuation,
/// accented letters, CJK, an emoji, digits, newlines and runs of spaces.
const TOKENIZER_TEXT: &str = "Hello, world! \u{e9}t\u{e9} \u{4f60}\u{597d} \u{1f642}\n  42\tend";

/// Ids of the vocabulary decoded one by one by the `tokenizer` target: the
/// first few hundred hold the byte tokens and the specials of real files.
const TOKENIZER_IDS: u32 = 512;

/// The bytes as each JSON file of the decoding front end.
pub fn tokenizer(work: &Workdir, data: &[u8]) -> Outcome {
    let mut outcome = Outcome::Rejected;
    if let Ok(t) = Tokenizer::from_bytes(data) {
        check_tokenizer(&t);
        outcome = Outcome::Accepted;
    }
    let Ok(text) = std::str::from_utf8(data) else { return outcome };
    let configs = [
        GenerationConfig::from_json(text),
        GenerationConfig::from_checkpoint("{}", None, Some(text)),
        GenerationConfig::from_checkpoint(text, None, None),
    ];
    for config in configs {
        match config {
            Ok(g) => {
                check_generation(work, &g);
                outcome = Outcome::Accepted;
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    outcome
}

/// Encodes [`TOKENIZER_TEXT`], decodes the ids at once and streamed, and
/// the first [`TOKENIZER_IDS`] ids of the vocabulary the same way.
fn check_tokenizer(t: &Tokenizer) {
    let _ = (t.vocab(), t.end_of_text(), t.max_token_bytes(), format!("{t:?}"));
    match t.encode(TOKENIZER_TEXT) {
        Ok(ids) => check_decode(t, &ids),
        Err(e) => {
            let _ = e.to_string();
        }
    }
    let vocab = u32::try_from(t.vocab()).unwrap_or(u32::MAX);
    let ids: Vec<u32> = (0..vocab.min(TOKENIZER_IDS)).collect();
    check_decode(t, &ids);
    assert!(t.decode(&[vocab]).is_err(), "id {vocab} decodes in a vocabulary of {vocab}");
}

/// `ids` decode, and streamed one by one they give the same text.
fn check_decode(t: &Tokenizer, ids: &[u32]) {
    let whole = t.decode(ids).unwrap_or_else(|e| panic!("ids {ids:?} of the tokenizer do not decode: {e}"));
    let mut stream = TextStream::for_tokenizer(t);
    let mut streamed = String::new();
    for &id in ids {
        streamed.push_str(stream.push(t, id).unwrap_or_else(|e| panic!("id {id} does not stream: {e}")));
    }
    streamed.push_str(stream.finish());
    assert_eq!(streamed, whole, "streaming {ids:?} gives other text than decoding them at once");
}

/// A generation config survives its file, and its chat template, if it
/// compiles, renders a system and a user message or refuses them, in a
/// child process as the decoder CLI renders (a template may build strings
/// of any size: [`RENDER_LIMITS`] bound it there).
fn check_generation(work: &Workdir, g: &GenerationConfig) {
    let json = g.to_json();
    let back = GenerationConfig::from_json(&json)
        .unwrap_or_else(|e| panic!("the written generation.json does not read back: {e}\n{json}"));
    assert_eq!(&back, g, "generation.json does not round-trip:\n{json}");
    match ChatTemplate::new(g) {
        Ok(template) => {
            let messages = [Message::system("Be brief."), Message::user("Hi!")];
            let renderer = work
                .renderer
                .as_ref()
                .expect("the tokenizer target renders in a child process: Workdir::with_chat_renderer");
            let mut renderer = renderer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Err(e) = renderer.render(&template, &messages, true) {
                let _ = e.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// The largest arena (and kernel scratch) `sched_run` runs: larger
/// schedules are refused by the target, not by the library, so that an
/// input cannot spend its second allocating.
pub const RUN_MAX_BYTES: usize = 16 << 20;

/// The most work `sched_run` runs per input, in elements: each thunk
/// counts the product of its numeric fields (sizes, lengths, dims; each at
/// least 1, a list as the product of its items or its length), which
/// bounds the elements its kernel touches; summed over the thunks and
/// multiplied by the runs (four per entry). About 2^24 elements run in
/// well under a second, so the target's time limit means a real hang.
pub const RUN_MAX_WORK: u64 = 1 << 24;

/// The work of one thunk, as [`RUN_MAX_WORK`] counts it.
fn thunk_work<O>(t: &Thunk<O>) -> u64
where
    Thunk<O>: FieldSyntax,
{
    t.to_fields().iter().map(|(_, v)| value_size(v)).fold(1u64, u64::saturating_mul)
}

fn value_size(v: &Value) -> u64 {
    match &v.kind {
        ValueKind::Num(s) => s.parse::<u64>().map_or(1, |n| n.max(1)),
        ValueKind::List(items) => {
            let product = items.iter().map(value_size).fold(1u64, u64::saturating_mul);
            product.max(items.len() as u64)
        }
        ValueKind::Ident(_) | ValueKind::Call(..) | ValueKind::View(..) | ValueKind::Raw(_) => 1,
    }
}

/// What the inputs of a `sched_run` run hold.
#[derive(Clone, Copy, Debug)]
enum Fill {
    Zeros,
    /// A fixed byte pattern: as floats, values of every magnitude (NaN and
    /// infinities included); as integers, indices far out of range.
    Pattern,
}

impl Fill {
    fn bytes(self, len: usize) -> Vec<u8> {
        match self {
            Fill::Zeros => vec![0; len],
            Fill::Pattern => (0..len).map(|i| (i.wrapping_mul(73).wrapping_add(41) % 251) as u8).collect(),
        }
    }
}

/// A schedule with entries and state run by the interpreter, each entry
/// twice from the same state per input fill.
pub fn sched_run(work: &Workdir, data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else { return Outcome::Rejected };
    let base = work.sched_base();
    let Ok(checked) = check_source(text, &base) else { return Outcome::Rejected };
    let schedule = checked.schedule;
    let ast = parse(text).expect("a validated text parses");
    let runs = 4 * schedule.entries().len() as u64;
    let work_units = ast.thunks.iter().map(|t| thunk_work(&t.thunk)).fold(0u64, u64::saturating_add);
    let scratch = ast.thunks.iter().map(|t| scratch_bound(&t.thunk)).max().unwrap_or(0);
    if schedule.arena_size() > RUN_MAX_BYTES
        || scratch > RUN_MAX_BYTES
        || work_units.saturating_mul(runs) > RUN_MAX_WORK
    {
        return Outcome::Rejected;
    }
    let weights = schedule.weights().map(|w| {
        Weights::open(&base.join(&w.path), w.data_offset, w.data_len)
            .unwrap_or_else(|e| panic!("the validated weights file {} does not map: {e}", w.path))
    });
    let section = weights.as_ref().map_or(&[][..], Weights::data);
    let mut interp = Interpreter::new(schedule.clone(), section)
        .unwrap_or_else(|e| panic!("the interpreter refuses a validated schedule: {e}"));
    for (index, entry) in schedule.entries().iter().enumerate() {
        for fill in [Fill::Zeros, Fill::Pattern] {
            let first = run_entry(&mut interp, index, fill);
            let second = run_entry(&mut interp, index, fill);
            if first != second {
                let at = first.iter().zip(&second).position(|(a, b)| a != b).unwrap_or(0);
                panic!(
                    "entry {:?} run twice from the reset state with {fill:?} inputs leaves different arena bytes (first at offset {at})",
                    entry.name
                );
            }
        }
    }
    Outcome::Accepted
}

/// Resets the state, fills the entry's inputs, runs it; returns the arena.
fn run_entry(interp: &mut Interpreter<'_>, index: usize, fill: Fill) -> Vec<u8> {
    interp.reset_state();
    let inputs: Vec<(String, usize)> = interp.schedule().entries()[index]
        .inputs
        .iter()
        .map(|&b| {
            let buffer = &interp.schedule().buffers()[b];
            (buffer.name.clone(), buffer.bytes())
        })
        .collect();
    for (name, len) in inputs {
        interp.set_bytes(&name, &fill.bytes(len)).unwrap_or_else(|e| panic!("input `{name}`: {e}"));
    }
    interp.run_entry(index);
    interp.arena().to_vec()
}
