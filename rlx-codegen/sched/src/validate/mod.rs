//! The gen-time validator (helper B replaces this placeholder).

use std::path::Path;

use crate::ast::Ast;
use crate::diag::{Diagnostic, Diagnostics};
use crate::schedule::Schedule;

/// What the validator needs besides the AST.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ValidateOptions<'a> {
    /// Lower-case hex sha256 of the `.sched` text, recorded in the schedule.
    pub source_sha256: String,
    /// Directory the weights path is relative to (the `.sched` file's).
    pub base_dir: &'a Path,
}

impl<'a> ValidateOptions<'a> {
    pub fn new(source_sha256: String, base_dir: &'a Path) -> Self {
        ValidateOptions { source_sha256, base_dir }
    }
}

/// A validated schedule and the warnings found on the way.
#[derive(Clone, Debug)]
pub struct Checked {
    pub schedule: Schedule,
    pub warnings: Diagnostics,
}

/// Checks an [`Ast`] and builds the [`Schedule`], reporting every error.
pub fn validate(ast: &Ast, opts: &ValidateOptions<'_>) -> Result<Checked, Diagnostics> {
    let _ = (ast, opts);
    Err(Diagnostics(vec![Diagnostic::error(None, "the validator is not written yet")]))
}
