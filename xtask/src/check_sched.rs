//! `cargo xtask check-sched PATH`: parses and validates a `.sched` file,
//! printing every diagnostic, as the code generator would see it.
//! `cargo xtask fmt-sched PATH...`: rewrites files in canonical form.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use rlx_sched::{Diagnostics, LoadError, Policy};

/// Prints the diagnostics (errors and warnings) to stderr, in colour on a
/// terminal, then one summary line to stdout when the schedule is valid.
/// Exit code 1 when there is an error.
pub fn check_sched(path: &Path, policy: Policy) -> Result<ExitCode> {
    let shown = path.display().to_string();
    match rlx_sched::load_with(path, policy) {
        Ok(checked) => {
            if !checked.warnings.is_empty() {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                print_diagnostics(&checked.warnings, &shown, &text);
            }
            let s = &checked.schedule;
            let weights = s.weights().as_ref().map_or(0, |w| w.data_len);
            let line = format!(
                "ok: {}: {} thunks, {} buffers, arena {} bytes, weights {} bytes",
                s.model(),
                s.nodes().len(),
                s.buffers().len(),
                s.arena_size(),
                weights
            );
            // A closed stdout is not worth a panic.
            let _ = writeln!(std::io::stdout(), "{line}");
            Ok(ExitCode::SUCCESS)
        }
        Err(LoadError::Invalid { text, diagnostics, .. }) => {
            print_diagnostics(&diagnostics, &shown, &text);
            Ok(ExitCode::FAILURE)
        }
        // The error's own text already names the cause; no chain to add.
        Err(LoadError::Io { path, source }) => Err(anyhow!("cannot read {}: {source}", path.display())),
    }
}

fn print_diagnostics(diagnostics: &Diagnostics, shown: &str, text: &str) {
    let choice = if std::io::stderr().is_terminal() { ColorChoice::Auto } else { ColorChoice::Never };
    let mut stderr = StandardStream::stderr(choice);
    let _ = diagnostics.render_colored(shown, text, &mut stderr);
}

/// Parses each file and writes its canonical form (`rlx_sched::print`)
/// when that differs; with `check`, only names the files that differ.
/// Comments and blank lines between items are kept by the printer; kind
/// aliases come out in their general spelling.
pub fn fmt_sched(paths: &[std::path::PathBuf], check: bool) -> Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    for path in paths {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| anyhow!("cannot read {shown}: {e}"))?;
        let ast = match rlx_sched::parse(&text) {
            Ok(ast) => ast,
            Err(d) => {
                print_diagnostics(&d, &shown, &text);
                code = ExitCode::FAILURE;
                continue;
            }
        };
        let printed = rlx_sched::print(&ast);
        if printed == text {
            continue;
        }
        if check {
            let _ = writeln!(std::io::stdout(), "{shown}: not in canonical form");
            code = ExitCode::FAILURE;
        } else {
            std::fs::write(path, printed).map_err(|e| anyhow!("cannot write {shown}: {e}"))?;
            let _ = writeln!(std::io::stdout(), "{shown}: rewritten");
        }
    }
    Ok(code)
}
