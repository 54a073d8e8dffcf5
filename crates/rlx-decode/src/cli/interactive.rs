//! `--interactive`: a conversation on stdin. Every non-empty line is a user
//! message; the reply is streamed to stdout, followed by a newline, and
//! one stats line per turn goes to stderr. End of input ends the session.
//!
//! The KV cache keeps the conversation: each turn renders the whole
//! conversation with the chat template, and only the tokens after the
//! longest prefix the cache already holds are prefilled (a template that
//! rewrites earlier turns just shortens that prefix). A conversation that
//! outgrows the cache ends the session with the usual length error,
//! exit code 2.

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow;

use super::{chat_template, exit_code, new_sampler, opening, report, setup, usage, Args, Embedded, Fail, Setup};
use crate::chat::Message;
use crate::generate::{generate_from_ids, Token};
use crate::StepModel;

pub(super) fn run<M: StepModel>(
    make: impl FnOnce() -> Result<M, String>,
    files: Embedded<'_>,
    args: &Args,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Fail> {
    let Setup { mut model, tokenizer, config, end_of_text, generation } = setup(make, files, args)?;
    let mut template = chat_template(&generation, args)?;
    let mut messages = opening(args);
    // The tokens whose keys and values the cache holds, at positions 0..
    let mut cached: Vec<i64> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).map_err(|e| usage(format!("cannot read stdin: {e}")))? == 0 {
            return Ok(());
        }
        let message = line.trim_end_matches(['\n', '\r']);
        if message.trim().is_empty() {
            continue;
        }
        messages.push(Message::user(message));
        let text = template.render(&messages)?;
        let prompt: Vec<i64> =
            tokenizer.encode(&text).map_err(|e| usage(e.to_string()))?.into_iter().map(i64::from).collect();
        let reuse = cached.iter().zip(&prompt).take_while(|(a, b)| a == b).count();

        let mut sampler = new_sampler(&config, model.vocab())?;
        let mut reply = String::new();
        let mut ids = Vec::new();
        let mut write_error = None;
        let stats = generate_from_ids(
            &mut model,
            &tokenizer,
            &mut sampler,
            &prompt,
            reuse,
            args.max_tokens,
            &end_of_text,
            |t: Token<'_>| {
                ids.extend(t.id);
                reply.push_str(t.text);
                match out.write_all(t.text.as_bytes()).and_then(|()| out.flush()) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        write_error = Some(e);
                        ControlFlow::Break(())
                    }
                }
            },
        )
        .map_err(|e| Fail { code: exit_code(&e), msg: e.to_string() })?;
        if let Some(e) = write_error {
            return match e.kind() {
                io::ErrorKind::BrokenPipe => Ok(()),
                _ => Err(Fail { code: 1, msg: format!("cannot write to stdout: {e}") }),
            };
        }
        let _ = writeln!(out).and_then(|()| out.flush());
        let _ = err.write_all(report(&stats).as_bytes());

        // What the cache now holds: the prompt and every reply token that
        // was fed back (all of them when the reply ended at end-of-text;
        // the last one is never fed otherwise).
        let fed = if stats.stopped_at_end { ids.len() } else { ids.len().saturating_sub(1) };
        cached = prompt;
        cached.extend(ids[..fed].iter().map(|&id| i64::from(id)));
        messages.push(Message::assistant(reply));
    }
}
