//! The gen-time validator: checks an [`Ast`] and builds the sealed
//! [`Schedule`], so the interpreter and the generated code never check
//! anything at run time.
//!
//! Passes, each reporting every problem it finds:
//! 1. the header ([`table::check_header`]);
//! 2. the buffer table: unique names, sizes, segments, placement,
//!    alignment, overlaps ([`table`]);
//! 3. the weights file: readable, sha256, safetensors header, and each
//!    `param` buffer against its tensor ([`weights`]);
//! 4. each thunk: operands resolve, fields are consistent, every access is
//!    in bounds, aligned, of the right dtype, not a write to the weights,
//!    and overlaps follow the in-place policy ([`thunks`], with the
//!    per-kind rules in [`extents`]);
//! 5. the entry points ([`entries`]): names, their inputs and outputs, and
//!    that a thunk touches only its own entry's;
//! 6. the dataflow over the arena, per entry ([`dataflow`]), once every
//!    access is known and in bounds.
//!
//! The rules and the decisions behind them are written down in
//! `docs/validation.md`.

mod access;
mod dataflow;
mod entries;
mod extents;
mod intervals;
mod messages;
mod suggest;
mod table;
mod thunks;
mod weights;

#[cfg(test)]
mod tests;

pub use entries::RESERVED_ENTRY_NAMES;
pub(crate) use weights::file_kind;
pub use weights::WeightsSource;

use std::path::Path;

use crate::ast::Ast;
use crate::diag::{Diagnostic, Diagnostics};
use crate::schedule::{Node, Params, Schedule};

/// What the validator needs besides the AST.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ValidateOptions<'a> {
    /// Lower-case hex sha256 of the `.sched` text, recorded in the schedule.
    pub source_sha256: String,
    /// Where the weights are: a directory the weights path is relative
    /// to (the `.sched` file's), or the bytes a front end is about to write.
    pub weights: WeightsSource<'a>,
    /// The choices front ends expose as flags.
    pub policy: Policy,
}

impl<'a> ValidateOptions<'a> {
    pub fn new(source_sha256: String, base_dir: &'a Path) -> Self {
        ValidateOptions { source_sha256, weights: WeightsSource::Dir(base_dir), policy: Policy::default() }
    }

    /// Validates against these weights bytes instead of the file the
    /// schedule names: what a front end writes is checked before it is
    /// written.
    pub fn with_weights_bytes(mut self, bytes: &'a [u8]) -> Self {
        self.weights = WeightsSource::Bytes(bytes);
        self
    }

    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }
}

/// Validation choices a user may change (`cargo xtask` flags); the
/// defaults are what `docs/reliability.md` describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// An arena larger than this many bytes is a warning: the interpreter
    /// and model binaries would need that much memory at start-up
    /// (`--max-arena BYTES`; default [`Policy::DEFAULT_MAX_ARENA`]).
    pub max_arena: usize,
    /// Whether a weights path may leave the schedule's directory through
    /// `..` (`--allow-outside-weights`; default no).
    pub allow_parent_weights: bool,
}

impl Policy {
    /// 4 GiB.
    pub const DEFAULT_MAX_ARENA: usize = 4 << 30;

    pub fn with_max_arena(mut self, bytes: usize) -> Self {
        self.max_arena = bytes;
        self
    }

    pub fn with_allow_parent_weights(mut self, allow: bool) -> Self {
        self.allow_parent_weights = allow;
        self
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy { max_arena: Self::DEFAULT_MAX_ARENA, allow_parent_weights: false }
    }
}

/// A validated schedule and the warnings found on the way.
#[derive(Clone, Debug)]
pub struct Checked {
    pub schedule: Schedule,
    pub warnings: Diagnostics,
}

/// The most scratch bytes the validator lets `t`'s kernel call ask for,
/// computed by the same `rlx_core` size functions the lowering calls
/// (0 for a kind without scratch, or when a size overflows, which
/// validation reports). A call that goes through an output temporary only
/// when its operands overlap is sized here with the temporary.
pub fn scratch_bound<O>(t: &crate::thunk::Thunk<O>) -> usize {
    extents::rules(t).scratch
}

/// Checks an [`Ast`] and builds the [`Schedule`], reporting every error
/// (and warning) in source order.
pub fn validate(ast: &Ast, opts: &ValidateOptions<'_>) -> Result<Checked, Diagnostics> {
    let mut diags = Vec::new();
    let header = &ast.header;
    table::check_header(header, &opts.policy, &mut diags);
    let table = table::build(ast, &mut diags);
    table::check_weights_line(ast, &mut diags);
    let weights = header
        .weights
        .as_ref()
        .and_then(|w| weights::read(w, opts.weights, opts.policy.allow_parent_weights, &mut diags));
    if let Some(w) = &weights {
        weights::check_params(ast, w, &table.suggest, &mut diags);
    }
    table::check_placement(ast, &table, weights.as_ref().map(|w| &w.file), &mut diags);

    let segments = thunks::Segments {
        arena: header.arena_size.value,
        weights: weights.as_ref().map(|w| (w.file.data_offset, w.file.data_len)),
    };
    let mut nodes = Vec::with_capacity(ast.thunks.len());
    let mut flows = Vec::with_capacity(ast.thunks.len());
    let mut flows_complete = true;
    for decl in &ast.thunks {
        match thunks::check(decl, &table, &segments, &mut diags) {
            Some(checked) => {
                nodes.push(Node { thunk: checked.thunk, line: decl.line });
                match checked.arena {
                    Some(accesses) => flows.push(dataflow::Flow { line: decl.line, accesses }),
                    None => flows_complete = false,
                }
            }
            None => flows_complete = false,
        }
    }
    let before = diags.len();
    let entries = entries::check(ast, &table, &mut diags);
    let entries_ok = !diags[before..].iter().any(Diagnostic::is_error);
    // With an access unknown the dataflow would report noise: a skipped
    // writer makes every later reader look unwritten; so would an entry
    // that lacks an input its thunks read.
    if flows_complete && entries_ok {
        dataflow::check(ast, &table.bytes, &flows, &entries, &mut diags);
    }
    // Thunks whose results nobody can read, said at the first of them once
    // the schedule is otherwise valid (next to errors it is noise).
    let has_output = ast.buffers.iter().any(|b| b.role == crate::schedule::Role::Output);
    if let Some(first) = ast.thunks.first().filter(|_| !has_output && !diags.iter().any(Diagnostic::is_error)) {
        diags.push(Diagnostic::warning(first.kind_span, messages::NO_OUTPUTS).with_hint(messages::NO_OUTPUTS_HINT));
    }

    // Source order; file-level problems (no span) first. The sort is
    // stable, so problems at one place keep the order they were found in.
    diags.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    let diags = Diagnostics(diags);
    if diags.has_errors() {
        return Err(diags);
    }
    let schedule = Schedule {
        model: header.model.value.clone(),
        source_sha256: opts.source_sha256.clone(),
        arena_size: header.arena_size.value,
        arena_align: header.arena_align.value,
        weights: weights.map(|w| w.file),
        params: Params {
            mask_threshold: header.mask_threshold.value,
            mask_neg_inf: header.mask_neg_inf.value,
            score_skip: header.score_skip.value,
        },
        buffers: table.buffers,
        nodes,
        entries,
    };
    Ok(Checked { schedule, warnings: diags })
}
