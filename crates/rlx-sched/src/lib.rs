//! The `.sched` front end: the text format (parser, printer), the
//! gen-time validator and its diagnostics, and the validated [`Schedule`].
//! The types it shares with the runtime (the thunk table, operands, the
//! lowering to kernel calls) live in `rlx-core` and are re-exported here.
//!
//! The pipeline is `parse(text) -> Ast` (syntax only, every node spanned),
//! then `validate(&Ast) -> Schedule` (a separate, checked type). Each phase
//! reports all of its diagnostics at once and stops at its boundary.
//!
//! Model binaries never link this crate; it never depends on syn or quote.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod aliases;
pub mod ast;
pub mod diag;
pub mod fields;
pub mod parse;
pub mod print;
pub mod schedule;
pub mod span;
pub mod validate;
pub mod value;

// The shared layer this front end is built on, re-exported so front-end
// users name one crate.
pub use rlx_core::{blocked, call, dtype, lower, ops, pack, plan, q8, qconv, shapes, thunk, winograd};

use std::path::{Path, PathBuf};

pub use ast::Ast;
pub use diag::{Diagnostic, Diagnostics, Severity};
pub use fields::FieldSyntax;
pub use parse::parse;
pub use print::print;
pub use rlx_core::{
    ActKind, DType, FieldSpec, KernelCall, MaskKind, Operand, Params, Segment, Step, StepArg, Thunk, ThunkKind,
};

/// Every enum of `rlx_core::field_enum_table!`, re-exported without a list
/// to keep.
macro_rules! reexport_field_enums {
    ($( $(#[$m:meta])* $name:ident as $what:literal { $($body:tt)* } )*) => {
        pub use rlx_core::{$($name),*};
    };
}

rlx_core::field_enum_table!(reexport_field_enums);
pub use schedule::{Buffer, Entry, Node, Role, Schedule, WeightsFile};
pub use span::Span;
pub use validate::{scratch_bound, validate, Checked, Policy, ValidateOptions, WeightsSource};

/// Lower-case hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses and validates `.sched` text. `base_dir` is where the weights
/// path is resolved from.
pub fn check_source(text: &str, base_dir: &Path) -> Result<Checked, Diagnostics> {
    check_source_with(text, base_dir, Policy::default())
}

/// [`check_source`] under a validation [`Policy`].
pub fn check_source_with(text: &str, base_dir: &Path, policy: Policy) -> Result<Checked, Diagnostics> {
    let ast = parse(text)?;
    validate(&ast, &ValidateOptions::new(sha256_hex(text.as_bytes()), base_dir).with_policy(policy))
}

/// Why a `.sched` file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} has {} error(s)", path.display(), diagnostics.0.iter().filter(|d| d.is_error()).count())]
    Invalid { path: PathBuf, text: String, diagnostics: Diagnostics },
}

/// The bytes of the regular file at `path`. Anything else is an error
/// before it is opened for reading: opening a FIFO blocks until a writer
/// comes, and a device (`/dev/zero`) never ends. Every front end reads
/// its inputs (schedules, ONNX models, checkpoints) through this.
pub fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let not_regular = |meta: &std::fs::Metadata| {
        let kind = validate::file_kind(&meta.file_type());
        std::io::Error::other(format!("it is {kind}, not a regular file"))
    };
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let mut file = std::fs::File::open(path)?;
    // Replaced between the two calls: still only a regular file.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Reads, parses and validates a `.sched` file.
pub fn load(path: &Path) -> Result<Checked, LoadError> {
    load_with(path, Policy::default())
}

/// [`load`] under a validation [`Policy`].
///
/// The path must name a regular file: a FIFO or a device (`/dev/zero`)
/// would make reading it never end, so that is an [`LoadError::Io`] before
/// anything is opened.
pub fn load_with(path: &Path, policy: Policy) -> Result<Checked, LoadError> {
    let io = |source| LoadError::Io { path: path.to_path_buf(), source };
    let bytes = read_regular_file(path).map_err(io)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        io(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("it is not UTF-8 text (byte {at})")))
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    check_source_with(&text, base, policy).map_err(|diagnostics| LoadError::Invalid {
        path: path.to_path_buf(),
        text,
        diagnostics,
    })
}
