//! `--prompts FILE`: one generation per prompt of FILE, in one process,
//! over one model and tokenizer.
//!
//! FILE holds one prompt per line (a prompt cannot hold a newline; empty
//! lines are skipped), or, when its name ends in `.jsonl`, one JSON object
//! per line with a string field `"prompt"` (other fields are ignored;
//! blank lines are skipped). Every prompt that succeeds is one JSON line
//! on stdout or `--output FILE`, in file order, with its fields in a fixed
//! order:
//!
//! `{"line": 3, "prompt": "...", "completion": "...", "ids": [..], "tokens": 8, "prompt_tokens": 5, "stopped_at_end": false}`
//!
//! (`"completion"` is left out with `--ids`, which never decodes). A
//! prompt that fails (empty, too long, a bad JSON line) is one line on
//! stderr naming `FILE:LINE`, and the batch goes on unless `--fail-fast`.
//! The model's KV cache is reset before every prompt (`generate_ids`
//! does) and each prompt's sampler starts from `--seed`, so a prompt gets
//! what a run of its own would.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::{exit_code, new_sampler, setup, usage, Args, Fail, Setup};
use crate::generate::{generate_from_ids, generate_ids, Stats, Token};
use crate::StepModel;

/// One prompt of the file, or why its line is not one.
struct PromptLine {
    /// 1-based line number in the file.
    line: usize,
    text: Result<String, String>,
}

/// What one prompt produced.
struct Completion {
    ids: Vec<u32>,
    /// `None` with `--ids`.
    text: Option<String>,
    prompt_tokens: usize,
    stats: Stats,
}

/// What a batch did, for the summary line and the exit code.
struct Summary {
    run: usize,
    failed: usize,
    not_run: usize,
    tokens: usize,
    elapsed: Duration,
    /// The exit code of the failures: 1 when any was the model's, else 2.
    code: u8,
}

impl Summary {
    /// `2 prompts, 0 failed, 0.031 s, 64.5 prompts/s, 16 tokens, 516 tok/s`.
    fn line(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        let per_sec = |n: usize| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let mut line = format!(
            "{} prompts, {} failed, {secs:.3} s, {:.1} prompts/s, {} tokens, {:.0} tok/s",
            self.run,
            self.failed,
            per_sec(self.run),
            self.tokens,
            per_sec(self.tokens)
        );
        if self.not_run > 0 {
            let _ = write!(line, ", stopped at the first failure ({} not run)", self.not_run);
        }
        line
    }
}

pub(super) fn run_prompts<M: StepModel>(
    make: impl FnOnce() -> Result<M, String>,
    files: super::Embedded<'_>,
    args: &Args,
    path: &Path,
    prog: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<ExitCode, Fail> {
    let prompts = read_prompts(path)?;
    if prompts.is_empty() {
        return Err(usage(format!("{}: no prompts in the file", path.display())));
    }
    let mut file_out;
    let (sink, sink_name): (&mut dyn Write, String) = match &args.output {
        Some(p) => {
            let f = File::create(p).map_err(|e| usage(format!("cannot create {}: {e}", p.display())))?;
            file_out = BufWriter::new(f);
            (&mut file_out, p.display().to_string())
        }
        None => (out, "stdout".into()),
    };
    let mut setup = setup(make, files, args)?;

    let bar = ProgressBar::new(prompts.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} [{elapsed}] eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let mut summary = Summary { run: 0, failed: 0, not_run: 0, tokens: 0, elapsed: Duration::ZERO, code: 0 };
    let mut closed = false;
    for (i, p) in prompts.iter().enumerate() {
        summary.run += 1;
        let result = p.text.as_deref().map_err(|e| usage(e.clone())).and_then(|text| {
            let done = complete(&mut setup, args, text)?;
            Ok((text, done))
        });
        match result {
            Ok((text, done)) => {
                summary.tokens += done.stats.generated;
                match sink.write_all(record(p.line, text, &done).as_bytes()).and_then(|()| sink.flush()) {
                    Ok(()) => {}
                    // A closed pipe (`| head`) is the reader's choice: stop quietly.
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => closed = true,
                    Err(e) => return Err(Fail { code: 1, msg: format!("cannot write to {sink_name}: {e}") }),
                }
            }
            Err(f) => {
                summary.failed += 1;
                summary.code = if f.code == 1 || summary.code == 1 { 1 } else { 2 };
                bar.suspend(|| {
                    let _ = writeln!(err, "{prog}: error: {}:{}: {}", path.display(), p.line, f.msg);
                });
                if args.fail_fast {
                    summary.not_run = prompts.len() - i - 1;
                    break;
                }
            }
        }
        bar.inc(1);
        if closed {
            break;
        }
    }
    summary.elapsed = start.elapsed();
    bar.finish_and_clear();
    let _ = writeln!(err, "{prog}: {}", summary.line());
    Ok(if summary.failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(summary.code) })
}

/// The prompts of `path`, in file order.
fn read_prompts(path: &Path) -> Result<Vec<PromptLine>, Fail> {
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let jsonl = path.extension().is_some_and(|e| e == "jsonl");
    let lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    Ok(if jsonl {
        lines.filter(|(_, l)| !l.trim().is_empty()).map(|(line, l)| PromptLine { line, text: json_prompt(l) }).collect()
    } else {
        lines.filter(|(_, l)| !l.is_empty()).map(|(line, l)| PromptLine { line, text: Ok(l.to_owned()) }).collect()
    })
}

/// The `"prompt"` of one JSON line.
fn json_prompt(line: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    match value.get("prompt") {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(_) => Err("the \"prompt\" field is not a string".into()),
        None if value.is_object() => Err("the object has no \"prompt\" field".into()),
        None => Err("not a JSON object with a \"prompt\" field".into()),
    }
}

/// Generates for one prompt.
fn complete<M: StepModel>(setup: &mut Setup<M>, args: &Args, text: &str) -> Result<Completion, Fail> {
    let Setup { model, tokenizer, config, end_of_text, .. } = setup;
    let prompt: Vec<i64> =
        tokenizer.encode(text).map_err(|e| usage(e.to_string()))?.into_iter().map(i64::from).collect();
    let mut sampler = new_sampler(config, model.vocab())?;
    let mut ids = Vec::new();
    let fail = |e| Fail { code: exit_code(&e), msg: e.to_string() };
    let (stats, text) = if args.ids {
        let stats = generate_ids(model, &mut sampler, &prompt, 0, args.max_tokens, end_of_text, |id| {
            ids.push(id);
            ControlFlow::Continue(())
        })
        .map_err(fail)?;
        (stats, None)
    } else {
        let mut completion = String::new();
        let stats = generate_from_ids(
            model,
            tokenizer,
            &mut sampler,
            &prompt,
            0,
            args.max_tokens,
            end_of_text,
            |t: Token<'_>| {
                ids.extend(t.id);
                completion.push_str(t.text);
                ControlFlow::Continue(())
            },
        )
        .map_err(fail)?;
        (stats, Some(completion))
    };
    Ok(Completion { ids, text, prompt_tokens: prompt.len(), stats })
}

/// One JSON line, its fields in a fixed order whatever serde_json's map
/// type.
fn record(line: usize, prompt: &str, done: &Completion) -> String {
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let mut r = format!("{{\"line\": {line}, \"prompt\": {}", quote(prompt));
    if let Some(text) = &done.text {
        let _ = write!(r, ", \"completion\": {}", quote(text));
    }
    let ids: Vec<String> = done.ids.iter().map(u32::to_string).collect();
    let _ = writeln!(
        r,
        ", \"ids\": [{}], \"tokens\": {}, \"prompt_tokens\": {}, \"stopped_at_end\": {}}}",
        ids.join(", "),
        done.stats.generated,
        done.prompt_tokens,
        done.stats.stopped_at_end
    );
    r
}
