//! `cargo xtask bench --decode-vs-ort` (also the last part of `cargo xtask
//! bench`): decode tokens/s of a memory-bound Llama, rlx's decoder binary
//! against onnxruntime's generate loop on the same checkpoint, at 1 and 2
//! threads, with the weight bytes each token reads as GB/s next to this
//! machine's copy bandwidth (docs/benchmarks.md).
//!
//! `xtask/decode_ort.py make-checkpoint` writes the checkpoint and the
//! onnxruntime step graph into `target/bench-decode/hf` (reused while the
//! script's config is unchanged); the checkpoint is imported as
//! `cargo xtask import-llama` does and built as a decoder crate
//! (`rlx_decode::cli`): the default release build and the static one, and
//! the default build of the import with f16 product weights.
//! Both sides run the same prompt ids, then the same number of greedy
//! decode steps, which are what is timed; rlx and onnxruntime alternate
//! within each round so they see the same machine load.

use std::path::Path;
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use crate::bench::median;
use crate::e2e::{self, Backend, Binary};
use crate::{import, verify};
use rlx_onnx::llama::{LlamaOptions, WeightFormat};

/// The prompt both sides start from (ids of the checkpoint's vocabulary).
const PROMPT: [i64; 8] = [1, 17, 93, 211, 5, 400, 64, 3000];
/// Tokens generated: the first from the prompt's logits, then
/// `TOKENS - 1` timed decode steps (the context is 256 positions).
const TOKENS: usize = 128;
/// Interleaved rounds per thread count; the rows are their medians.
const ROUNDS: usize = 3;
const THREADS: [usize; 2] = [1, 2];
/// The decoder's model and package name.
const NAME: &str = "llama_bench";
/// The same checkpoint imported with f16 product weights.
const NAME_F16: &str = "llama_bench_f16";
const SCRIPT: &str = "xtask/decode_ort.py";

/// Runs the benchmark; one `skipped: ...` line (and success) when a Python
/// module it needs is missing.
pub fn decode_vs_ort(root: &Path) -> Result<()> {
    let missing = e2e::missing_python_modules(&["numpy", "torch", "transformers", "onnx", "onnxruntime"]);
    if !missing.is_empty() {
        println!("skipped: decode vs onnxruntime: python modules missing: {} ({})", missing.join(", "), e2e::INSTALL);
        return Ok(());
    }
    let work = root.join("target").join("bench-decode");
    let hf = work.join("hf");
    let weights_bytes = make_checkpoint(root, &hf)?;
    // As `cargo xtask import-llama` does by default (a 16-token prefill
    // entry), with the checkpoint's f32 weights, and again with the
    // products' weights in f16 (`--weights f16`).
    let import = |dir: &Path, name: &str, weights: WeightFormat| -> Result<()> {
        let imported = import::read_llama(&hf, name, &LlamaOptions { prefill: 16, weights, max_len: None })?;
        // Rewritten only when the bytes change: a new mtime would rebuild
        // the crates, which embed the weights.
        verify::write_bytes_if_changed(&dir.join("weights.safetensors"), &imported.weights)?;
        verify::write_bytes_if_changed(&dir.join("model.sched"), imported.sched_text.as_bytes())
    };
    let work_f16 = work.join("f16");
    std::fs::create_dir_all(&work_f16).with_context(|| format!("creating {}", work_f16.display()))?;
    import(&work, NAME, WeightFormat::F32)?;
    import(&work_f16, NAME_F16, WeightFormat::F16)?;
    let tokenizer = root.join("models/llama_tiny/tokenizer.json");
    let binary = Binary::Decoder { tokenizer: &tokenizer };
    println!("building the {NAME} decoder (default and static release builds, and the default build with f16 weights)");
    let (native, _) = e2e::build_generated(root, &work, NAME, Backend::Native, binary)?;
    let (stat, _) = e2e::build_generated(root, &work, NAME, Backend::Static { target_cpu: None }, binary)?;
    let (half, _) = e2e::build_generated(root, &work_f16, NAME_F16, Backend::Native, binary)?;

    // Greedy tokens must agree, or the two sides are not running the same model.
    let ours = run_rlx(&native, 1)?;
    let theirs = run_ort(root, &hf, 1)?;
    if ours.ids != theirs.ids {
        let at = ours.ids.iter().zip(&theirs.ids).position(|(a, b)| a != b).unwrap_or(0);
        println!(
            "warning: rlx and onnxruntime disagree on the greedy tokens from token {at} on \
             (rlx {:?}, onnxruntime {:?}; smallest top-2 logit gap in onnxruntime's run {})",
            &ours.ids[at..(at + 4).min(ours.ids.len())],
            &theirs.ids[at..(at + 4).min(theirs.ids.len())],
            theirs.min_gap.map_or("?".to_string(), |g| format!("{g:.4}"))
        );
    } else {
        println!(
            "greedy tokens: rlx and onnxruntime agree on all {} (smallest top-2 logit gap {})",
            ours.ids.len(),
            theirs.min_gap.map_or("?".to_string(), |g| format!("{g:.4}"))
        );
    }

    // The f16 decoder rounds every product weight, so its greedy tokens
    // may part from the f32 model's where two logits are close.
    let half_ids = run_rlx(&half, 1)?.ids;
    let same = half_ids.iter().zip(&theirs.ids).take_while(|(a, b)| a == b).count();
    println!("f16 weights: the first {same} of {} greedy tokens equal the f32 model's", theirs.ids.len());

    let gb = weights_bytes as f64 / 1e9;
    // Every product weight in 2 bytes (the norm gains, a few kB, stay f32).
    let gb_f16 = gb / 2.0;
    println!(
        "| decoder | threads | rlx default tok/s | rlx static tok/s | rlx f16 weights tok/s | onnxruntime tok/s \
         | default / ort | static / ort | f16 / ort | weights / token (f32) | default GB/s | f16 GB/s | ort GB/s | copy GB/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for threads in THREADS {
        let (mut nat, mut st, mut hf16, mut ort) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            nat.push(run_rlx(&native, threads)?.tok_s);
            st.push(run_rlx(&stat, threads)?.tok_s);
            hf16.push(run_rlx(&half, threads)?.tok_s);
            ort.push(run_ort(root, &hf, threads)?.tok_s);
        }
        let copy = rlx_testkit::copy_bandwidth(threads);
        let (nat, st, hf16, ort) = (median(&mut nat), median(&mut st), median(&mut hf16), median(&mut ort));
        println!(
            "| {NAME} | {threads} | {nat:.1} | {st:.1} | {hf16:.1} | {ort:.1} | {:.2} | {:.2} | {:.2} | {:.1} MB | {:.1} | {:.1} | {:.1} | {copy:.1} |",
            nat / ort,
            st / ort,
            hf16 / ort,
            weights_bytes as f64 / 1e6,
            nat * gb,
            hf16 * gb_f16,
            ort * gb
        );
    }
    println!(
        "(prompt of {} ids, then {} greedy decode steps; median of {ROUNDS} interleaved rounds; ratios are tok/s, \
         higher is rlx faster; GB/s = weight bytes per token x tok/s; copy: 256 MiB copied by that many threads, \
         read + written, best of 5)",
        PROMPT.len(),
        TOKENS - 1
    );
    Ok(())
}

/// Writes (or reuses) the checkpoint and step graph in `dir`; the weight
/// bytes a token reads.
pub(crate) fn make_checkpoint(root: &Path, dir: &Path) -> Result<u64> {
    let out = Command::new("python3")
        .current_dir(root)
        .arg(SCRIPT)
        .arg("make-checkpoint")
        .arg(dir)
        .output()
        .with_context(|| format!("running python3 {SCRIPT}"))?;
    if !out.status.success() {
        bail!("{SCRIPT} make-checkpoint failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().filter(|l| !l.starts_with("weights_bytes")).for_each(|l| println!("{l}"));
    parse_weights_bytes(&text).ok_or_else(|| anyhow!("{SCRIPT} printed no weights_bytes line"))
}

/// One generation: decode tokens/s and the generated ids.
#[derive(Debug)]
struct Generation {
    tok_s: f64,
    ids: Vec<i64>,
    /// onnxruntime's smallest top-2 logit gap over the run (how close the
    /// greedy choices were).
    min_gap: Option<f64>,
}

fn prompt_arg() -> String {
    PROMPT.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// The decoder binary on the prompt ids: `TOKENS` greedy tokens, never
/// stopping early.
fn run_rlx(exe: &Path, threads: usize) -> Result<Generation> {
    let (stderr, ids) = run_decoder(exe, &prompt_arg(), TOKENS, threads)?;
    let (steps, ms) = parse_rlx_decode(&stderr).ok_or_else(|| anyhow!("no decode line in `{}`", stderr.trim()))?;
    check_steps("rlx", steps)?;
    Ok(Generation { tok_s: steps as f64 / ms * 1e3, ids, min_gap: None })
}

/// A decoder binary on the prompt ids, `tokens` greedy tokens, never
/// stopping early: its standard error (the `prefill:` and `decode:` lines)
/// and the ids it printed.
pub(crate) fn run_decoder(exe: &Path, prompt: &str, tokens: usize, threads: usize) -> Result<(String, Vec<i64>)> {
    let out = Command::new(exe)
        .args(["--prompt-ids", prompt, "--max-tokens", &tokens.to_string(), "--ids", "--ignore-eos"])
        .args(["--threads", &threads.to_string()])
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        bail!("{} failed: {}", exe.display(), stderr.trim());
    }
    let ids =
        parse_ids(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| anyhow!("{} printed no ids", exe.display()))?;
    Ok((stderr, ids))
}

/// `python3 SCRIPT generate MODEL --prompt IDS --tokens N --threads T`,
/// the generate loop of another runtime (`who`): its standard output and
/// the ids of its `tokens ...` line.
pub(crate) fn run_generate_script(
    root: &Path,
    script: &str,
    who: &str,
    model: &Path,
    prompt: &str,
    tokens: usize,
    threads: usize,
) -> Result<(String, Vec<i64>)> {
    let out = Command::new("python3")
        .current_dir(root)
        .arg(script)
        .arg("generate")
        .arg(model)
        .args(["--prompt", prompt, "--tokens", &tokens.to_string(), "--threads", &threads.to_string()])
        .output()
        .with_context(|| format!("running python3 {script}"))?;
    if !out.status.success() {
        bail!("{who}'s generate loop failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ids = text
        .lines()
        .find_map(|l| l.strip_prefix("tokens "))
        .and_then(parse_ids)
        .ok_or_else(|| anyhow!("{script} printed no tokens line"))?;
    Ok((text, ids))
}

/// `xtask/decode_ort.py generate` on the prompt ids at `threads`.
fn run_ort(root: &Path, hf: &Path, threads: usize) -> Result<Generation> {
    let (text, ids) = run_generate_script(root, SCRIPT, "onnxruntime", hf, &prompt_arg(), TOKENS, threads)?;
    let (steps, ms) =
        parse_ort_decode(&text, threads).ok_or_else(|| anyhow!("{SCRIPT} printed no decode line for {threads}"))?;
    check_steps("onnxruntime", steps)?;
    let min_gap = text.lines().find_map(|l| l.strip_prefix("min_top2_gap ")?.trim().parse().ok());
    Ok(Generation { tok_s: steps as f64 / ms * 1e3, ids, min_gap })
}

fn check_steps(who: &str, steps: usize) -> Result<()> {
    if steps != TOKENS - 1 {
        bail!("{who} ran {steps} decode steps, expected {}", TOKENS - 1);
    }
    Ok(())
}

/// `N` of the line `weights_bytes N`.
fn parse_weights_bytes(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("weights_bytes ")?.trim().parse().ok())
}

/// (steps, ms) of the decoder CLI's `decode: N tokens, X ms, R tok/s` line
/// (the rate is rounded to an integer; the time has a tenth of a ms).
fn parse_rlx_decode(stderr: &str) -> Option<(usize, f64)> {
    parse_rlx_phase(stderr, "decode")
}

/// (tokens, ms) of the decoder CLI's `PHASE: N tokens, X ms, ...` line
/// (`prefill` or `decode`).
pub(crate) fn parse_rlx_phase(stderr: &str, phase: &str) -> Option<(usize, f64)> {
    let rest = stderr.lines().find_map(|l| l.strip_prefix(phase)?.strip_prefix(": "))?;
    let mut parts = rest.split(", ");
    let steps = parts.next()?.strip_suffix(" tokens")?.parse().ok()?;
    let ms = parts.next()?.strip_suffix(" ms")?.parse().ok()?;
    Some((steps, ms))
}

/// (steps, ms) of the line `threads T decode_tokens N decode_ms X`.
fn parse_ort_decode(text: &str, threads: usize) -> Option<(usize, f64)> {
    text.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["threads", t, "decode_tokens", n, "decode_ms", ms] if t.parse() == Ok(threads) => {
                Some((n.parse().ok()?, ms.parse().ok()?))
            }
            _ => None,
        }
    })
}

/// Space-separated ids (at least one).
pub(crate) fn parse_ids(text: &str) -> Option<Vec<i64>> {
    let ids: Option<Vec<i64>> = text.split_whitespace().map(|t| t.parse().ok()).collect();
    ids.filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decoder_cli_line_gives_steps_and_time() {
        let err = "prefill: 8 tokens, 101.3 ms, 79 tok/s\ndecode: 127 tokens, 1543.2 ms, 82 tok/s\n";
        assert_eq!(parse_rlx_decode(err), Some((127, 1543.2)));
        let end = "decode: 3 tokens, 0.4 ms, 7500 tok/s, stopped at end-of-text\n";
        assert_eq!(parse_rlx_decode(end), Some((3, 0.4)));
        assert_eq!(parse_rlx_decode("prefill: 8 tokens, 1.0 ms, 8000 tok/s\n"), None);
        assert_eq!(parse_rlx_decode("decode: many tokens, 1 ms, 1 tok/s\n"), None);
        assert_eq!(parse_rlx_phase(err, "prefill"), Some((8, 101.3)));
    }

    #[test]
    fn the_ort_line_gives_steps_and_time_per_thread_count() {
        let out = "threads 1 decode_tokens 127 decode_ms 1332.292\ntokens 3 4\nmin_top2_gap 0.0172\n";
        assert_eq!(parse_ort_decode(out, 1), Some((127, 1332.292)));
        assert_eq!(parse_ort_decode(out, 2), None);
        assert_eq!(parse_ort_decode("threads 1 decode_tokens x decode_ms 1\n", 1), None);
    }

    #[test]
    fn ids_and_weight_bytes_are_read() {
        assert_eq!(parse_ids("3000 3000 304\n"), Some(vec![3000, 3000, 304]));
        assert_eq!(parse_ids("\n"), None);
        assert_eq!(parse_ids("1 two"), None);
        assert_eq!(parse_weights_bytes("wrote x\nweights_bytes 163617792\n"), Some(163_617_792));
        assert_eq!(parse_weights_bytes("reusing x\n"), None);
    }
}
