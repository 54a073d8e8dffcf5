//! The command line of a decoder binary:
//! `NAME (--prompt TEXT | --prompt-ids ID,... | --chat TEXT [--system TEXT])
//! [--max-tokens N] [--temperature F] [--top-k N] [--top-p F] [--seed N]
//! [--ids] [--ignore-eos] [--threads N]`, a batch of prompts in one
//! process: `NAME --prompts FILE [--output FILE] [--fail-fast] ...`
//! ([`batch`]), or a conversation on stdin: `NAME --interactive
//! [--system TEXT] ...` ([`interactive`]).
//!
//! `--chat` formats the message with the checkpoint's chat template
//! ([`crate::chat`]); generation stops at the checkpoint's end-of-reply
//! ids ([`crate::generation`]), else at the tokenizer's end-of-text token.
//!
//! A decoder's `main.rs` is one line over [`main`]. Generated text goes to
//! stdout as it is produced (flushed per token, then a final newline);
//! stderr gets one line per phase, e.g.
//! `prefill: 12 tokens, 3.1 ms, 3870 tok/s`. Every user error (bad
//! argument, empty or too long prompt) is one line on stderr and exit code
//! 2, as in `rlx_runtime::cli`; a failure of the model itself (a NaN
//! logit, a wrong logits length) is one line and exit code 1.

mod batch;
mod interactive;

use std::ffi::OsString;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::chat::{ChatTemplate, ChildRenderer, Message, RenderLimits};
use crate::generate::{generate_from_ids, generate_ids, GenerateError, Stats, Token};
use crate::generation::GenerationConfig;
use crate::sampler::{Sampler, SamplerConfig};
use crate::tokenizer::Tokenizer;
use crate::StepModel;

// Numbers accept a leading `-` so that `--max-tokens -1` is reported as a
// bad value of that flag, not as an unknown flag `-1`.
#[derive(Parser, Debug)]
#[command(about = "Generates text with a decoder compiled by rlx AOT", disable_version_flag = true)]
struct Args {
    /// The text to continue.
    #[arg(long, value_name = "TEXT", conflicts_with = "prompt_ids")]
    prompt: Option<String>,
    /// The prompt as token ids, comma-separated, instead of --prompt (not
    /// tokenized: benchmarks and tests feed the same ids to other runtimes).
    #[arg(long, value_name = "ID,...", value_delimiter = ',', allow_negative_numbers = true)]
    prompt_ids: Option<Vec<i64>>,
    /// Generate for every prompt of FILE in one process: one prompt per
    /// line, or JSON objects with a "prompt" field when FILE ends in
    /// `.jsonl`; writes one JSON line per prompt.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["prompt", "prompt_ids"])]
    prompts: Option<PathBuf>,
    /// A user message, formatted with the model's chat template (the
    /// reply to it is generated).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["prompt", "prompt_ids", "prompts"])]
    chat: Option<String>,
    /// With --chat or --interactive: the system message opening the
    /// conversation.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// A conversation: every line of stdin is a user message, answered in
    /// turn; the KV cache keeps the conversation between turns.
    #[arg(long, conflicts_with_all = ["prompt", "prompt_ids", "prompts", "chat", "ids"])]
    interactive: bool,
    /// With --prompts: write the JSON lines to FILE instead of stdout.
    #[arg(long, value_name = "FILE", requires = "prompts")]
    output: Option<PathBuf>,
    /// With --prompts: stop at the first prompt that fails.
    #[arg(long, requires = "prompts")]
    fail_fast: bool,
    /// Tokens to generate at most (fewer if the end-of-text token comes).
    #[arg(long, value_name = "N", default_value_t = 32, allow_negative_numbers = true)]
    max_tokens: usize,
    /// Sampling temperature; 0 is greedy (argmax).
    #[arg(long, value_name = "F", default_value_t = 0.0, allow_negative_numbers = true)]
    temperature: f32,
    /// Sample only among the N most likely tokens.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    top_k: Option<usize>,
    /// Sample only among the most likely tokens that together reach probability F.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    top_p: Option<f32>,
    /// Seed of the sampler's random stream.
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true)]
    seed: u64,
    /// Print the generated token ids (space-separated) instead of text.
    #[arg(long)]
    ids: bool,
    /// Do not stop at the end-of-text token: generate exactly --max-tokens
    /// tokens (for benchmarks).
    #[arg(long)]
    ignore_eos: bool,
    /// Worker threads, 1 to 1024 (default: RLX_NUM_THREADS, else all cores).
    #[arg(long, value_name = "N")]
    threads: Option<String>,
    /// Not a flag: the executable chat templates render in (`main_with`
    /// sets it to this one), else this process.
    #[arg(skip)]
    renderer: Option<PathBuf>,
}

/// An error line and the exit code it ends with.
#[derive(Debug)]
struct Fail {
    code: u8,
    msg: String,
}

fn usage(msg: impl Into<String>) -> Fail {
    Fail { code: 2, msg: msg.into() }
}

/// What a decoder binary embeds besides its model: the tokenizer and the
/// checkpoint's `generation.json` (end-of-reply ids, chat template;
/// [`GenerationConfig`]).
#[derive(Clone, Copy, Debug)]
pub struct Embedded<'a> {
    pub tokenizer_json: &'a [u8],
    pub generation_json: &'a str,
}

/// Runs the CLI over the process arguments, stdout and stderr.
pub fn main<M: StepModel>(model: M, files: Embedded<'static>) -> ExitCode {
    main_with(|| Ok(model), files)
}

/// [`main`] with the model built by `make` only once the arguments are
/// good: `--help` and a usage error never need the weights, and a model
/// that cannot be built (its weights file missing, say) is one error line
/// and exit code 2, never a panic. What a generated decoder's `main` calls.
pub fn main_with<M, F>(make: F, files: Embedded<'static>) -> ExitCode
where
    M: StepModel,
    F: FnOnce() -> Result<M, String>,
{
    // Started as the chat-template renderer of another run of this binary.
    crate::chat::serve_render_request();
    let (mut out, mut err) = (io::stdout().lock(), io::stderr().lock());
    // Templates render in a child process of this executable, under
    // memory and time limits; without processes (wasm), in this one.
    let renderer = if cfg!(target_family = "wasm") { None } else { std::env::current_exe().ok() };
    main_impl(make, files, std::env::args_os(), &mut out, &mut err, renderer)
}

/// [`main_with`] over the given arguments (the first is the program name)
/// and writers (`--interactive` reads the process's stdin). Chat
/// templates render in this process ([`ChatTemplate::render`]).
pub fn main_from<M, F, I, T>(
    make: F,
    files: Embedded<'_>,
    argv: I,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> ExitCode
where
    M: StepModel,
    F: FnOnce() -> Result<M, String>,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    main_impl(make, files, argv, out, err, None)
}

/// The CLI; chat templates render in a child process running `renderer`
/// when it is given.
fn main_impl<M, F, I, T>(
    make: F,
    files: Embedded<'_>,
    argv: I,
    out: &mut dyn Write,
    err: &mut dyn Write,
    renderer: Option<PathBuf>,
) -> ExitCode
where
    M: StepModel,
    F: FnOnce() -> Result<M, String>,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let prog = argv
        .first()
        .and_then(|p| std::path::Path::new(p).file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "decoder".into());
    let mut args = match Args::try_parse_from(&argv) {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            // --help: the full text, success.
            let _ = write!(out, "{e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap's first line names the problem; the rest is a usage hint.
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("error: bad arguments");
            let _ = writeln!(err, "{prog}: {line}");
            return ExitCode::from(2);
        }
    };
    args.renderer = renderer;
    let result = if let Some(path) = &args.prompts {
        batch::run_prompts(make, files, &args, path, &prog, out, err)
    } else if args.interactive {
        interactive::run(make, files, &args, &mut io::stdin().lock(), out, err).map(|()| ExitCode::SUCCESS)
    } else {
        run(make, files, &args, out, err).map(|()| ExitCode::SUCCESS)
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            let _ = writeln!(err, "{prog}: error: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}

fn sampler_config(args: &Args) -> Result<SamplerConfig, Fail> {
    let t = args.temperature;
    if !(t.is_finite() && t >= 0.0) {
        return Err(usage(format!("--temperature `{t}` is not allowed: give a finite value >= 0 (0 is greedy)")));
    }
    if args.top_k == Some(0) {
        return Err(usage("--top-k `0` is not allowed: give at least 1"));
    }
    if let Some(p) = args.top_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
        return Err(usage(format!("--top-p `{p}` is not allowed: give a value in (0, 1]")));
    }
    let mut config = SamplerConfig::with_temperature(t, args.seed);
    config.top_k = args.top_k;
    config.top_p = args.top_p;
    Ok(config)
}

/// What every generation of a run shares, set up once the arguments are
/// good.
struct Setup<M> {
    model: M,
    tokenizer: Tokenizer,
    config: SamplerConfig,
    /// The ids that end a reply (empty with `--ignore-eos`).
    end_of_text: Vec<u32>,
    generation: GenerationConfig,
}

fn setup<M: StepModel>(
    make: impl FnOnce() -> Result<M, String>,
    files: Embedded<'_>,
    args: &Args,
) -> Result<Setup<M>, Fail> {
    let config = sampler_config(args)?;
    if args.system.is_some() && args.chat.is_none() && !args.interactive {
        return Err(usage("--system goes with --chat or --interactive"));
    }
    rlx_runtime::threads::configure_threads(args.threads.as_deref()).map_err(|e| usage(e.to_string()))?;
    // The embedded files are the model's: one that does not load is the
    // model's failure (exit 1), found before the weights are opened.
    let model_fail = |msg: String| Fail { code: 1, msg };
    let generation = GenerationConfig::from_json(files.generation_json).map_err(|e| model_fail(e.to_string()))?;
    let tokenizer = Tokenizer::from_bytes(files.tokenizer_json).map_err(|e| model_fail(e.to_string()))?;
    let model = make().map_err(|msg| Fail { code: 2, msg })?;
    let end_of_text = if args.ignore_eos {
        Vec::new()
    } else if generation.eos_token_ids.is_empty() {
        tokenizer.end_of_text().into_iter().collect()
    } else {
        generation.eos_token_ids.clone()
    };
    Ok(Setup { model, tokenizer, config, end_of_text, generation })
}

/// The conversation `--chat` and `--interactive` open with.
fn opening(args: &Args) -> Vec<Message> {
    args.system.iter().map(Message::system).collect()
}

/// The model's chat template as the CLI renders it.
struct Chat {
    template: ChatTemplate,
    /// The renderer process; `None`: this process renders.
    renderer: Option<ChildRenderer>,
}

impl Chat {
    /// The prompt text of `messages`, opening the assistant's turn.
    fn render(&mut self, messages: &[Message]) -> Result<String, Fail> {
        match &mut self.renderer {
            Some(renderer) => renderer.render(&self.template, messages, true),
            None => self.template.render(messages, true),
        }
        .map_err(|e| usage(e.to_string()))
    }
}

/// The model's chat template, or the error `--chat` gives without one.
fn chat_template(generation: &GenerationConfig, args: &Args) -> Result<Chat, Fail> {
    let template = ChatTemplate::new(generation).map_err(|e| usage(e.to_string()))?;
    let renderer = args.renderer.as_ref().map(|program| ChildRenderer::new(program, RenderLimits::default()));
    Ok(Chat { template, renderer })
}

/// A sampler for one generation: each starts from `--seed`, so a prompt of
/// a batch gets what a run of its own would.
fn new_sampler(config: &SamplerConfig, vocab: usize) -> Result<Sampler, Fail> {
    Sampler::new(config.clone(), vocab).map_err(|e| Fail { code: 1, msg: e.to_string() })
}

fn run<M: StepModel>(
    make: impl FnOnce() -> Result<M, String>,
    files: Embedded<'_>,
    args: &Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Fail> {
    if args.prompt.is_none() && args.prompt_ids.is_none() && args.chat.is_none() {
        return Err(usage("missing --prompt TEXT (or --prompt-ids ID,...)"));
    }
    let Setup { mut model, tokenizer, config, end_of_text, generation } = setup(make, files, args)?;
    let model = &mut model;
    let encode = |text: &str| -> Result<Vec<i64>, Fail> {
        Ok(tokenizer.encode(text).map_err(|e| usage(e.to_string()))?.into_iter().map(i64::from).collect())
    };
    let prompt: Vec<i64> = match (&args.prompt, &args.prompt_ids, &args.chat) {
        (Some(text), _, _) => encode(text)?,
        (None, None, Some(message)) => {
            let mut messages = opening(args);
            messages.push(Message::user(message.as_str()));
            encode(&chat_template(&generation, args)?.render(&messages)?)?
        }
        (None, ids, _) => ids.clone().unwrap_or_default(),
    };
    let mut sampler = new_sampler(&config, model.vocab())?;

    let mut write_error = None;
    let mut first = true;
    let mut emit = |piece: std::fmt::Arguments<'_>| match out.write_fmt(piece).and_then(|()| out.flush()) {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            write_error = Some(e);
            ControlFlow::Break(())
        }
    };
    let result = if args.ids {
        // Ids are printed as they are: the tokenizer never sees them, so a
        // model vocabulary larger than the tokenizer's is fine here.
        generate_ids(model, &mut sampler, &prompt, 0, args.max_tokens, &end_of_text, |id| {
            let sep = if first { "" } else { " " };
            first = false;
            emit(format_args!("{sep}{id}"))
        })
    } else {
        generate_from_ids(model, &tokenizer, &mut sampler, &prompt, 0, args.max_tokens, &end_of_text, |t: Token<'_>| {
            emit(format_args!("{}", t.text))
        })
    };
    let stats = result.map_err(|e| Fail { code: exit_code(&e), msg: e.to_string() })?;
    match write_error {
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Some(e) => return Err(Fail { code: 1, msg: format!("cannot write to stdout: {e}") }),
        None => {
            let _ = writeln!(out).and_then(|()| out.flush());
        }
    }
    let _ = err.write_all(report(&stats).as_bytes());
    Ok(())
}

/// 2 for what the user can fix (the prompt, the length), 1 for the model.
fn exit_code(e: &GenerateError) -> u8 {
    match e {
        GenerateError::EmptyPrompt
        | GenerateError::TooLong { .. }
        | GenerateError::PromptToken { .. }
        | GenerateError::Tokenizer(_) => 2,
        _ => 1,
    }
}

/// The two stderr lines, one per phase.
pub fn report(stats: &Stats) -> String {
    let end = if stats.stopped_at_end { ", stopped at end-of-text" } else { "" };
    format!(
        "prefill: {} tokens, {:.1} ms, {:.0} tok/s\ndecode: {} tokens, {:.1} ms, {:.0} tok/s{end}\n",
        stats.prefill_tokens,
        stats.prefill_time.as_secs_f64() * 1e3,
        stats.prefill_rate(),
        stats.decode_tokens,
        stats.decode_time.as_secs_f64() * 1e3,
        stats.decode_rate(),
    )
}
