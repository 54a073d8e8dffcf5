//! The parsed, unchecked form of a `.sched` file. Every node carries its
//! byte span so later phases can point at the text.

use crate::dtype::DType;
use crate::schedule::{Role, Segment};
use crate::span::Span;
use crate::thunk::Thunk;

/// A value with the span it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

/// A parsed `.sched` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Ast {
    pub header: Header,
    pub buffers: Vec<BufferDecl>,
    pub thunks: Vec<ThunkDecl>,
    /// `entry` lines, in order; empty when the schedule has one implicit
    /// entry (`run` runs every thunk).
    pub entries: Vec<EntryDecl>,
    /// Comment lines after the last item, kept for the printer.
    pub trailing_comments: Vec<String>,
}

/// The header lines, all required except `weights`.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// `rlx-sched N`
    pub version: Spanned<u32>,
    /// `model NAME`
    pub model: Spanned<String>,
    /// `arena SIZE align ALIGN`
    pub arena_size: Spanned<usize>,
    pub arena_align: Spanned<usize>,
    /// `weights "PATH" sha256 "HEX"`
    pub weights: Option<WeightsDecl>,
    /// `mask_threshold X`: `Custom` attention masks hide keys whose mask
    /// value is below this.
    pub mask_threshold: Spanned<f32>,
    /// `mask_neg_inf X`: the score given to a masked position.
    pub mask_neg_inf: Spanned<f32>,
    /// `score_skip X`: attention skips a value row whose probability is not
    /// above this.
    pub score_skip: Spanned<f32>,
    /// Comment lines before the first header line.
    pub leading_comments: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WeightsDecl {
    /// Path of the safetensors file, relative to the `.sched` file.
    pub path: Spanned<String>,
    /// Lower-case hex sha256 of the whole weights file.
    pub sha256: Spanned<String>,
    pub span: Span,
}

/// `ROLE NAME: DTYPE[DIMS] @ SEGMENT+OFFSET`
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    pub role: Role,
    pub name: Spanned<String>,
    pub dtype: Spanned<DType>,
    pub shape: Spanned<Vec<usize>>,
    pub segment: Segment,
    pub offset: Spanned<usize>,
    /// The whole line.
    pub span: Span,
    /// 1-based line number.
    pub line: u32,
    /// `//` comment lines directly above, without the `//`.
    pub leading_comments: Vec<String>,
}

/// `entry NAME { inputs: [..], outputs: [..] }`: the thunks below it, up to
/// the next `entry` line, are one entry point of the generated model.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryDecl {
    pub name: Spanned<String>,
    /// The `input` buffers the caller writes before running this entry.
    pub inputs: Vec<Spanned<String>>,
    /// The `output` buffers this entry writes.
    pub outputs: Vec<Spanned<String>>,
    /// Index in [`Ast::thunks`] of the entry's first thunk.
    pub first_thunk: usize,
    /// The whole line.
    pub span: Span,
    /// 1-based line number.
    pub line: u32,
    pub leading_comments: Vec<String>,
}

/// How a thunk operand is written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `name` (offset 0) or the view `name+offset`.
    Buffer { name: String, offset: usize },
    /// `@offset`: raw bytes of the arena.
    Raw { offset: usize },
}

/// An operand as written, with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct OperandRef {
    pub target: Target,
    pub span: Span,
}

/// One thunk line.
#[derive(Clone, Debug, PartialEq)]
pub struct ThunkDecl {
    pub thunk: Thunk<OperandRef>,
    /// The whole thunk, kind name to closing brace.
    pub span: Span,
    pub kind_span: Span,
    /// The span of each written field's value, by field name.
    pub field_spans: Vec<(&'static str, Span)>,
    /// 1-based line number of the kind name.
    pub line: u32,
    pub leading_comments: Vec<String>,
    /// The older spelling the thunk was written in, if any: the
    /// validator's messages use its kind and field names.
    pub alias: Option<&'static crate::aliases::Alias>,
}

impl ThunkDecl {
    /// The span of a field's value, or of the whole thunk if not found.
    pub fn field_span(&self, field: &str) -> Span {
        self.field_spans.iter().find(|(n, _)| *n == field).map(|(_, s)| *s).unwrap_or(self.span)
    }
}
