//! The fuzz targets and their seed inputs, taken from the repository's own
//! files (and, for `llama`, three tiny checkpoints written here). Used
//! (through `#[path]`) by `cargo xtask fuzz`, which copies the seeds into
//! `fuzz/corpus/TARGET/`, and by the CI mutation test
//! (`tests/tests/mutation.rs`), which mutates them. Standard library only.

use std::path::{Path, PathBuf};

/// Every fuzz target: one AFL binary in `fuzz/src/bin/` each, and one
/// stream of the mutation test.
pub const TARGETS: &[&str] = &["sched", "npy", "weights", "onnx", "gguf", "llama", "tokenizer", "sched_run"];

/// Seed files larger than this are skipped (AFL refuses inputs over 1 MB,
/// and large seeds only slow every execution down).
pub const MAX_SEED_BYTES: u64 = 1 << 20;

/// The byte that ends the `config.json` part of a `llama` input: the rest
/// is the `model.safetensors` file. JSON text never holds a raw NUL, and a
/// separator (unlike a length prefix) survives the fuzzers' inserts and
/// deletes in the config.
pub const LLAMA_SEPARATOR: u8 = 0;

/// One seed input: a name for the corpus file and its bytes.
pub type Seed = (String, Vec<u8>);

/// The seed inputs of `target`, below the workspace `root`: its seed files
/// ([`seed_files`]) read, and for `llama` each checkpoint directory
/// `models/*/hf/` as `config.json`, [`LLAMA_SEPARATOR`], `model.safetensors`
/// plus three tiny checkpoints ([`tiny_llama`]). Inputs over
/// [`MAX_SEED_BYTES`] are skipped. `None` for an unknown target.
pub fn seed_inputs(root: &Path, target: &str) -> Option<Vec<Seed>> {
    let mut out = Vec::new();
    if target == "llama" {
        for model in subdirs(&root.join("models")) {
            let hf = model.join("hf");
            let (Ok(config), Ok(tensors)) =
                (std::fs::read(hf.join("config.json")), std::fs::read(hf.join("model.safetensors")))
            else {
                continue;
            };
            out.push((name_of(root, &hf), llama_input(&config, &tensors)));
        }
        for kind in [TinyLlama::F32, TinyLlama::F16, TinyLlama::Bf16] {
            out.push((format!("tiny_llama_{kind:?}"), tiny_llama(kind)));
        }
    } else {
        for path in seed_files(root, target)? {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            out.push((name_of(root, &path), bytes));
        }
    }
    out.retain(|(_, bytes)| bytes.len() as u64 <= MAX_SEED_BYTES);
    Some(out)
}

/// `path` relative to `root`, as a file name (`/` and the like made `_`).
fn name_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect()
}

/// A `llama` input: the config text, the separator, the safetensors file.
pub fn llama_input(config_json: &[u8], safetensors: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(config_json.len() + 1 + safetensors.len());
    out.extend_from_slice(config_json);
    out.push(LLAMA_SEPARATOR);
    out.extend_from_slice(safetensors);
    out
}

/// The stored weight type of a [`tiny_llama`] checkpoint, which also picks
/// its other variations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TinyLlama {
    /// f32, one layer, tied embeddings, `rope_theta` at the top level.
    F32,
    /// f16, two layers, a separate `lm_head`.
    F16,
    /// bf16, one layer, tied embeddings, `head_dim` left to be derived,
    /// the rotary settings nested in `rope_parameters` (transformers 5).
    Bf16,
}

/// A Llama checkpoint small enough to mutate fast (a few kilobytes), as a
/// `llama` input: hidden size 8, two query heads sharing one key/value
/// head of 4, 16 tokens, 8 positions.
pub fn tiny_llama(kind: TinyLlama) -> Vec<u8> {
    let (vocab, hidden, inter, heads, kv_heads, head_dim) = (16, 8, 12, 2, 1, 4);
    let layers = if kind == TinyLlama::F16 { 2 } else { 1 };
    let tied = kind != TinyLlama::F16;
    let (head_dim_field, rope) = match kind {
        TinyLlama::Bf16 => {
            (String::new(), "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}".to_string())
        }
        _ => (format!("\"head_dim\": {head_dim}, "), "\"rope_theta\": 10000.0".to_string()),
    };
    let config = format!(
        "{{\"model_type\": \"llama\", \"hidden_act\": \"silu\", \"vocab_size\": {vocab}, \"hidden_size\": {hidden}, \
         \"intermediate_size\": {inter}, \"num_hidden_layers\": {layers}, \"num_attention_heads\": {heads}, \
         \"num_key_value_heads\": {kv_heads}, {head_dim_field}\"max_position_embeddings\": 8, \
         \"rms_norm_eps\": 1e-05, {rope}, \"tie_word_embeddings\": {tied}}}\n"
    );
    let (q_w, kv_w) = (heads * head_dim, kv_heads * head_dim);
    let mut tensors: Vec<(String, Vec<usize>)> = vec![("model.embed_tokens.weight".into(), vec![vocab, hidden])];
    for l in 0..layers {
        let p = format!("model.layers.{l}.");
        for (name, shape) in [
            ("input_layernorm.weight", vec![hidden]),
            ("self_attn.q_proj.weight", vec![q_w, hidden]),
            ("self_attn.k_proj.weight", vec![kv_w, hidden]),
            ("self_attn.v_proj.weight", vec![kv_w, hidden]),
            ("self_attn.o_proj.weight", vec![hidden, q_w]),
            ("post_attention_layernorm.weight", vec![hidden]),
            ("mlp.gate_proj.weight", vec![inter, hidden]),
            ("mlp.up_proj.weight", vec![inter, hidden]),
            ("mlp.down_proj.weight", vec![hidden, inter]),
        ] {
            tensors.push((format!("{p}{name}"), shape));
        }
    }
    tensors.push(("model.norm.weight".into(), vec![hidden]));
    if !tied {
        tensors.push(("lm_head.weight".into(), vec![vocab, hidden]));
    }
    llama_input(config.as_bytes(), &safetensors(&tensors, kind))
}

/// A safetensors file of `tensors` (name, shape) holding small
/// deterministic values, stored as `kind` says.
fn safetensors(tensors: &[(String, Vec<usize>)], kind: TinyLlama) -> Vec<u8> {
    let (dtype, width) = match kind {
        TinyLlama::F32 => ("F32", 4),
        TinyLlama::F16 => ("F16", 2),
        TinyLlama::Bf16 => ("BF16", 2),
    };
    let mut header = String::from("{");
    let mut data = Vec::new();
    for (i, (name, shape)) in tensors.iter().enumerate() {
        let n: usize = shape.iter().product();
        let start = data.len();
        for k in 0..n {
            // Values in [-0.375, 0.375] in steps of 1/16: exact in f16 and bf16.
            let x = ((k * 7 + i * 3) % 13) as f32 / 16.0 - 0.375;
            match kind {
                TinyLlama::F32 => data.extend_from_slice(&x.to_le_bytes()),
                TinyLlama::F16 => data.extend_from_slice(&f16_bits(x).to_le_bytes()),
                // bf16 is the high half of the f32 bits.
                TinyLlama::Bf16 => data.extend_from_slice(&((x.to_bits() >> 16) as u16).to_le_bytes()),
            }
        }
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let sep = if i == 0 { "" } else { "," };
        header.push_str(&format!(
            "{sep}\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{start},{}]}}",
            dims.join(","),
            start + n * width
        ));
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    out
}

/// The f16 bits of `x`, a multiple of 1/16 below 1 in magnitude (exact).
fn f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let sign = if x < 0.0 { 0x8000 } else { 0 };
    let a = x.abs();
    let exp = a.log2().floor() as i32;
    let mantissa = ((a / 2f32.powi(exp) - 1.0) * 1024.0).round() as u16;
    sign | (((exp + 15) as u16) << 10) | mantissa
}

/// The seed files of `target`, sorted, below the workspace `root`; `None`
/// for an unknown target.
///
/// - `sched`: `tests/sched/**/*.sched`
/// - `npy`: `models/*/samples/*.npy`
/// - `weights`: `models/*/weights.safetensors`, `tests/sched/ok/*.safetensors`
/// - `onnx`: `crates/rlx-onnx/tests/data/*.onnx`
/// - `gguf`: `crates/rlx-gguf/tests/data/*.gguf` (a micro Llama and the
///   dequantization fixture: every execution imports the Llama, so the
///   seeds stay a few kilobytes)
/// - `llama`: none (see [`seed_inputs`])
/// - `tokenizer`: `models/*/tokenizer.json`, `models/*/generation.json`,
///   `models/*/hf/tokenizer_config.json`
/// - `sched_run`: the `tests/sched/**/*.sched` with an `entry` or a
///   `state` line
pub fn seed_files(root: &Path, target: &str) -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    match target {
        "sched" => walk(&root.join("tests/sched"), &mut |p| has_ext(p, "sched"), &mut files),
        "sched_run" => {
            walk(&root.join("tests/sched"), &mut |p| has_ext(p, "sched") && has_entry_or_state(p), &mut files)
        }
        "llama" => {}
        "tokenizer" => {
            for model in subdirs(&root.join("models")) {
                for file in ["tokenizer.json", "generation.json", "hf/tokenizer_config.json"] {
                    let path = model.join(file);
                    if path.is_file() {
                        files.push(path);
                    }
                }
            }
        }
        "npy" => {
            for model in subdirs(&root.join("models")) {
                files.extend(in_dir(&model.join("samples"), |p| has_ext(p, "npy")));
            }
        }
        "weights" => {
            for model in subdirs(&root.join("models")) {
                let w = model.join("weights.safetensors");
                if w.is_file() {
                    files.push(w);
                }
            }
            files.extend(in_dir(&root.join("tests/sched/ok"), |p| has_ext(p, "safetensors")));
        }
        "onnx" => files.extend(in_dir(&root.join("crates/rlx-onnx/tests/data"), |p| has_ext(p, "onnx"))),
        "gguf" => files.extend(in_dir(&root.join("crates/rlx-gguf/tests/data"), |p| has_ext(p, "gguf"))),
        _ => return None,
    }
    files.retain(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_SEED_BYTES));
    files.sort();
    Some(files)
}

/// Whether the schedule at `p` declares an entry point or a state buffer.
fn has_entry_or_state(p: &Path) -> bool {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    text.lines().any(|l| l.starts_with("entry ") || l.starts_with("state "))
}

fn has_ext(p: &Path, ext: &str) -> bool {
    p.extension().is_some_and(|x| x == ext)
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
    out.sort();
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_dir()).collect()
}

fn in_dir(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_file() && keep(p)).collect()
}

fn walk(dir: &Path, keep: &mut dyn FnMut(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for p in entries(dir) {
        if p.is_dir() {
            walk(&p, keep, out);
        } else if p.is_file() && keep(&p) {
            out.push(p);
        }
    }
}
