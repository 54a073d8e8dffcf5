//! `cargo xtask bench --decode-vs-llamacpp`: rlx's decoder against
//! llama.cpp (through `llama-cpp-python`, which builds it from source for
//! this CPU) on the same GGUF files, at 1 and 2 threads: prefill and
//! decode tokens/s, and the weight bytes each decode token reads as GB/s
//! next to this machine's copy bandwidth (docs/benchmarks.md).
//!
//! The checkpoint is `--decode-vs-ort`'s memory-bound Llama
//! (`xtask/decode_ort.py make-checkpoint`); `xtask/decode_llamacpp.py
//! make-gguf` writes it as f32 and f16 GGUF files and quantizes the f32
//! one with llama.cpp into Q8_0, Q4_0 and Q4_K (cached in
//! `target/bench-decode/gguf` while the checkpoint is unchanged). Each file
//! is imported as `cargo xtask import-llama FILE.gguf` does (f16 tensors
//! stay f16, Q8_0 ones stay 8-bit, Q4_0 and Q4_K ones are dequantized to
//! f32) and built as the
//! static decoder binary users ship. Both sides take the same prompt ids
//! (one prefill), then the same number of greedy decode steps; rlx and
//! llama.cpp alternate within each round so they see the same load.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use crate::bench::median;
use crate::bench_decode::{make_checkpoint, parse_rlx_phase, run_decoder, run_generate_script};
use crate::e2e::{self, Backend, Binary};
use crate::import::Checkpoint;
use crate::verify;
use rlx_onnx::llama::{LlamaOptions, WeightFormat};

/// The prompt both sides prefill: 64 ids of the checkpoint's vocabulary
/// (four of rlx's 16-token prefill chunks, one llama.cpp batch).
fn prompt() -> Vec<i64> {
    (0..64).map(|i| (i * 379 + 11) % 4096).collect()
}
/// Tokens generated: the first from the prompt's logits, then
/// `TOKENS - 1` timed decode steps (prompt and tokens fit the checkpoint's
/// 256 positions).
const TOKENS: usize = 128;
/// Interleaved rounds per thread count; the rows are their medians.
const ROUNDS: usize = 3;
const THREADS: [usize; 2] = [1, 2];
const SCRIPT: &str = "xtask/decode_llamacpp.py";

/// One GGUF file of `make-gguf`.
struct GgufFile {
    /// `f32`, `f16`, `q8_0`, `q4_0` or `q4_k`.
    ty: String,
    path: PathBuf,
    /// The bytes of its tensors: what llama.cpp reads per decode token.
    bytes: u64,
}

/// One run of either side.
#[derive(Debug)]
struct Run {
    prefill_tok_s: f64,
    decode_tok_s: f64,
    ids: Vec<i64>,
    /// llama.cpp's top-2 logit gap at each token (how close the greedy
    /// choices were).
    gaps: Vec<f64>,
}

/// Runs the benchmark; one `skipped: ...` line (and success) when a Python
/// module it needs is missing.
pub fn decode_vs_llamacpp(root: &Path) -> Result<()> {
    let modules = ["numpy", "torch", "transformers", "safetensors", "gguf", "llama_cpp"];
    let missing = e2e::missing_python_modules(&modules);
    if !missing.is_empty() {
        println!(
            "skipped: decode vs llama.cpp: python modules missing: {} ({} gguf llama-cpp-python)",
            missing.join(", "),
            e2e::INSTALL
        );
        return Ok(());
    }
    let work = root.join("target").join("bench-decode");
    let hf = work.join("hf");
    make_checkpoint(root, &hf)?;
    let tokenizer = root.join("models/llama_tiny/tokenizer.json");
    let files = make_gguf(root, &hf, &tokenizer, &work.join("gguf"))?;

    println!("building {} static decoders (one per GGUF file)", files.len());
    let mut binaries = Vec::new();
    for file in &files {
        let name = format!("llama_gguf_{}", file.ty);
        let dir = work.join(&name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let opts = LlamaOptions { prefill: 16, weights: WeightFormat::AsStored, max_len: None };
        let imported = Checkpoint::open(&file.path)?.import(&name, &opts)?;
        // Rewritten only when the bytes change: a new mtime would rebuild
        // the crate, which embeds the weights.
        verify::write_bytes_if_changed(&dir.join("weights.safetensors"), &imported.weights)?;
        verify::write_bytes_if_changed(&dir.join("model.sched"), imported.sched_text.as_bytes())?;
        let binary = Binary::Decoder { tokenizer: &tokenizer };
        let (exe, _) = e2e::build_generated(root, &dir, &name, Backend::Static { target_cpu: None }, binary)?;
        binaries.push((exe, bytes_per_token(&imported.sched_text, imported.weights.len() as u64)));
    }

    // Greedy tokens must agree, or the two sides are not running the same model.
    for (file, (exe, _)) in files.iter().zip(&binaries) {
        let ours = run_rlx(exe, 1)?;
        let theirs = run_llamacpp(root, &file.path, 1)?;
        let same = ours.ids.iter().zip(&theirs.ids).take_while(|(a, b)| a == b).count();
        // Where they part, how close llama.cpp's top two logits were: its
        // f16 KV cache (and on quantized files its 8-bit activations) move
        // its logits, which parts two correct runs at a near tie.
        let parted = match theirs.gaps.get(same) {
            Some(gap) if same < theirs.ids.len() => format!(" (llama.cpp's top-2 logit gap at token {same}: {gap:.4})"),
            _ => String::new(),
        };
        println!(
            "{}: rlx and llama.cpp agree on the first {same} of {} greedy tokens{parted}",
            file.ty,
            theirs.ids.len()
        );
    }

    println!(
        "| GGUF | threads | rlx prefill tok/s | llama.cpp prefill tok/s | prefill rlx / llama.cpp \
         | rlx decode tok/s | llama.cpp decode tok/s | decode rlx / llama.cpp | rlx weights / token \
         | llama.cpp weights / token | rlx GB/s | llama.cpp GB/s | copy GB/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for threads in THREADS {
        let copy = rlx_testkit::copy_bandwidth(threads);
        for (file, (exe, rlx_bytes)) in files.iter().zip(&binaries) {
            let (mut rp, mut rd, mut lp, mut ld) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let ours = run_rlx(exe, threads)?;
                let theirs = run_llamacpp(root, &file.path, threads)?;
                rp.push(ours.prefill_tok_s);
                rd.push(ours.decode_tok_s);
                lp.push(theirs.prefill_tok_s);
                ld.push(theirs.decode_tok_s);
            }
            let (rp, rd, lp, ld) = (median(&mut rp), median(&mut rd), median(&mut lp), median(&mut ld));
            let (rlx_mb, cpp_mb) = (*rlx_bytes as f64 / 1e6, file.bytes as f64 / 1e6);
            println!(
                "| {} | {threads} | {rp:.0} | {lp:.0} | {:.2} | {rd:.1} | {ld:.1} | {:.2} | {rlx_mb:.1} MB | \
                 {cpp_mb:.1} MB | {:.1} | {:.1} | {copy:.1} |",
                file.ty,
                rp / lp,
                rd / ld,
                rd * rlx_mb / 1e3,
                ld * cpp_mb / 1e3
            );
        }
    }
    println!(
        "(prompt of {} ids in one prefill, then {} greedy decode steps; median of {ROUNDS} interleaved rounds; \
         ratios are tok/s, higher is rlx faster; GB/s = weight bytes per token x decode tok/s; copy: 256 MiB \
         copied by that many threads, read + written, best of 5)",
        prompt().len(),
        TOKENS - 1
    );
    Ok(())
}

fn prompt_arg() -> String {
    prompt().iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// Writes (or reuses) the GGUF files of the checkpoint in `hf`.
fn make_gguf(root: &Path, hf: &Path, tokenizer: &Path, out: &Path) -> Result<Vec<GgufFile>> {
    let run = Command::new("python3")
        .current_dir(root)
        .arg(SCRIPT)
        .arg("make-gguf")
        .args([hf, tokenizer, out])
        .output()
        .with_context(|| format!("running python3 {SCRIPT}"))?;
    if !run.status.success() {
        bail!("{SCRIPT} make-gguf failed: {}", String::from_utf8_lossy(&run.stderr).trim());
    }
    let text = String::from_utf8_lossy(&run.stdout);
    text.lines().filter(|l| !l.starts_with("gguf ")).for_each(|l| println!("{l}"));
    let files: Vec<GgufFile> = text.lines().filter_map(parse_gguf_line).collect();
    if files.is_empty() {
        bail!("{SCRIPT} make-gguf printed no `gguf` lines");
    }
    Ok(files)
}

/// `gguf TYPE PATH weights_bytes N`.
fn parse_gguf_line(line: &str) -> Option<GgufFile> {
    let w: Vec<&str> = line.split_whitespace().collect();
    match w.as_slice() {
        ["gguf", ty, path, "weights_bytes", n] => {
            Some(GgufFile { ty: ty.to_string(), path: PathBuf::from(path), bytes: n.parse().ok()? })
        }
        _ => None,
    }
}

/// The decoder binary on the prompt ids: `TOKENS` greedy tokens, never
/// stopping early.
fn run_rlx(exe: &Path, threads: usize) -> Result<Run> {
    let (stderr, ids) = run_decoder(exe, &prompt_arg(), TOKENS, threads)?;
    let line = |phase| parse_rlx_phase(&stderr, phase).ok_or_else(|| anyhow!("no {phase} line in `{}`", stderr.trim()));
    let (prompt_tokens, prefill_ms) = line("prefill")?;
    let (steps, decode_ms) = line("decode")?;
    check_counts("rlx", prompt_tokens, steps)?;
    Ok(Run {
        prefill_tok_s: prompt_tokens as f64 / prefill_ms * 1e3,
        decode_tok_s: steps as f64 / decode_ms * 1e3,
        ids,
        gaps: Vec::new(),
    })
}

/// `xtask/decode_llamacpp.py generate` on the prompt ids at `threads`.
fn run_llamacpp(root: &Path, gguf: &Path, threads: usize) -> Result<Run> {
    let (text, ids) = run_generate_script(root, SCRIPT, "llama.cpp", gguf, &prompt_arg(), TOKENS, threads)?;
    let timing = parse_llamacpp_timing(&text, threads)
        .ok_or_else(|| anyhow!("{SCRIPT} printed no timing line for {threads} thread(s)"))?;
    check_counts("llama.cpp", timing.prompt_tokens, timing.steps)?;
    let gaps = text
        .lines()
        .find_map(|l| l.strip_prefix("top2_gaps "))
        .map(|g| g.split_whitespace().filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    Ok(Run {
        prefill_tok_s: timing.prompt_tokens as f64 / timing.prefill_ms * 1e3,
        decode_tok_s: timing.steps as f64 / timing.decode_ms * 1e3,
        ids,
        gaps,
    })
}

/// The weight bytes a decode step of the schedule reads: the weights file
/// less the tables only a `Gather` reads (the embedding, of which a token
/// reads one row; its logits use a packed copy). Parameters are the lines
/// `param   NAME: DTYPE[DIMS] @ weights+OFFSET`.
fn bytes_per_token(sched: &str, weights_len: u64) -> u64 {
    let words = |line: &str| -> Vec<String> {
        line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')).map(str::to_string).collect()
    };
    let thunks: Vec<&str> = sched.lines().filter(|l| l.contains(" { ") && l.trim_end().ends_with('}')).collect();
    let mut lookup_only = 0;
    for line in sched.lines() {
        let Some(rest) = line.strip_prefix("param") else { continue };
        let Some((name, ty)) = rest.trim().split_once(": ") else { continue };
        let (Some((dtype, dims)), true) = (ty.split_once('['), ty.contains(" @ weights+")) else { continue };
        let as_table = format!("table: {name}");
        let tables: usize = thunks
            .iter()
            .map(|t| t.matches(&format!("{as_table},")).count() + t.matches(&format!("{as_table} ")).count())
            .sum();
        let mentions: usize = thunks.iter().map(|t| words(t).iter().filter(|w| *w == name).count()).sum();
        if tables == 0 || tables != mentions {
            continue;
        }
        let elems: u64 =
            dims.split(']').next().unwrap_or("").split(", ").filter_map(|d| d.trim().parse::<u64>().ok()).product();
        let size = match dtype {
            "f16" | "bf16" | "i16" | "u16" => 2,
            "f64" | "i64" | "u64" => 8,
            "i8" | "u8" | "bool" => 1,
            _ => 4,
        };
        lookup_only += elems * size;
    }
    weights_len - lookup_only.min(weights_len)
}

fn check_counts(who: &str, prompt_tokens: usize, steps: usize) -> Result<()> {
    if prompt_tokens != prompt().len() || steps != TOKENS - 1 {
        bail!(
            "{who} prefilled {prompt_tokens} ids and ran {steps} decode steps, expected {} and {}",
            prompt().len(),
            TOKENS - 1
        );
    }
    Ok(())
}

#[derive(Debug, PartialEq)]
struct Timing {
    prompt_tokens: usize,
    prefill_ms: f64,
    steps: usize,
    decode_ms: f64,
}

/// The line `threads T prefill_tokens P prefill_ms X decode_tokens N decode_ms Y`.
fn parse_llamacpp_timing(text: &str, threads: usize) -> Option<Timing> {
    text.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["threads", t, "prefill_tokens", p, "prefill_ms", pm, "decode_tokens", n, "decode_ms", dm]
                if t.parse() == Ok(threads) =>
            {
                Some(Timing {
                    prompt_tokens: p.parse().ok()?,
                    prefill_ms: pm.parse().ok()?,
                    steps: n.parse().ok()?,
                    decode_ms: dm.parse().ok()?,
                })
            }
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_llamacpp_line_gives_both_phases_per_thread_count() {
        let out = "threads 2 prefill_tokens 64 prefill_ms 12.5 decode_tokens 127 decode_ms 800.25\ntokens 1 2\n";
        let want = Timing { prompt_tokens: 64, prefill_ms: 12.5, steps: 127, decode_ms: 800.25 };
        assert_eq!(parse_llamacpp_timing(out, 2), Some(want));
        assert_eq!(parse_llamacpp_timing(out, 1), None);
        assert_eq!(
            parse_llamacpp_timing("threads 1 prefill_tokens x prefill_ms 1 decode_tokens 1 decode_ms 1", 1),
            None
        );
    }

    #[test]
    fn gguf_lines_name_the_type_path_and_bytes() {
        let f = parse_gguf_line("gguf q4_k /t/bench.q4_k.gguf weights_bytes 24576000").expect("a gguf line");
        assert_eq!((f.ty.as_str(), f.path.as_path(), f.bytes), ("q4_k", Path::new("/t/bench.q4_k.gguf"), 24_576_000));
        assert!(parse_gguf_line("wrote bench.f32.gguf").is_none());
        assert!(parse_gguf_line("gguf f32 x weights_bytes many").is_none());
    }

    #[test]
    fn a_table_only_gathered_is_not_read_per_token() {
        let sched = "param   embed: f32[10, 4] @ weights+0\n\
                     param   embed.packed_t: f16[40] @ weights+160\n\
                     Gather { table: embed, indices: t, dst: h, num_indices: 1, row_len: 4, vocab: 10, index_dtype: i64 }\n\
                     PackedGemmHalf { a: h, b: embed.packed_t, c: y, m: 1, k: 4, n: 10 }\n";
        assert_eq!(bytes_per_token(sched, 300), 300 - 160);
        // A table also read by a product counts whole.
        let tied = format!("{sched}Sgemm {{ a: h, b: embed, c: z, m: 1, k: 4, n: 10 }}\n");
        assert_eq!(bytes_per_token(&tied, 300), 300);
    }

    #[test]
    fn the_prompt_and_tokens_fit_the_checkpoint() {
        let p = prompt();
        assert!(p.len() + TOKENS <= 256);
        assert!(p.iter().all(|&id| (0..4096).contains(&id)));
    }
}
