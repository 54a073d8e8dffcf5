//! `cargo xtask`: the project's developer commands. Thin: every verb parses
//! its arguments here and calls library code; errors print as one line and
//! exit with status 1.

mod check_sched;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Developer commands of the rlx workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// One variant per verb; each arm of `main` calls the verb's module.
#[derive(Debug, Subcommand)]
enum Command {
    /// Parse and validate a .sched file, printing every diagnostic.
    CheckSched {
        /// The .sched file.
        path: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::CheckSched { path } => check_sched::check_sched(path),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
