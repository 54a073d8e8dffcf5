//! What one operand of a thunk touches: direction, element type and the
//! byte pattern, as computed by the per-kind extent rules.

use crate::dtype::DType;

/// Whether a thunk reads or writes an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
    /// Read, then written in place (`ActivationInPlace`).
    ReadWrite,
}

impl Dir {
    pub(crate) fn reads(self) -> bool {
        matches!(self, Dir::Read | Dir::ReadWrite)
    }

    pub(crate) fn writes(self) -> bool {
        matches!(self, Dir::Write | Dir::ReadWrite)
    }

    pub(crate) fn verb(self) -> &'static str {
        match self {
            Dir::Read => "reads",
            Dir::Write => "writes",
            Dir::ReadWrite => "updates",
        }
    }
}

/// How an input may overlap the outputs of its thunk (the in-place
/// policy, which the kernels implement exactly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alias {
    /// Never: the kernel may hold slices of input and output at once.
    No,
    /// Only as the very same bytes (same offset, same extent): the kernel
    /// reads element `i` before it writes element `i`.
    Exact,
    /// Any overlap: the kernel goes through a temporary or has memmove
    /// semantics.
    Any,
}

/// The element type an operand must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    Exact(DType),
    /// One of these dtypes, all of the same size.
    OneOf(&'static [DType]),
    /// Any dtype of this many bytes: the kind only moves bytes. Elements of
    /// 16 bytes (complex pairs) accept every dtype.
    Bytes(usize),
}

pub(crate) const F32: Elem = Elem::Exact(DType::F32);
pub(crate) const I64: Elem = Elem::Exact(DType::I64);
/// One-byte truth values: the kernels test `!= 0`.
pub(crate) const BYTE_BOOL: Elem = Elem::OneOf(&[DType::Bool, DType::U8]);

impl Elem {
    pub(crate) fn size(self) -> usize {
        match self {
            Elem::Exact(d) => d.size(),
            Elem::OneOf(ds) => ds.first().map_or(1, |d| d.size()),
            Elem::Bytes(n) => n,
        }
    }

    /// Byte alignment the operand offset needs. A 16-byte element is moved
    /// as two 8-byte words, so it needs 8.
    pub(crate) fn align(self) -> usize {
        self.size().clamp(1, 8)
    }

    pub(crate) fn accepts(self, d: DType) -> bool {
        match self {
            Elem::Exact(e) => e == d,
            Elem::OneOf(ds) => ds.contains(&d),
            Elem::Bytes(n) => n == 16 || d.size() == n,
        }
    }

    /// For alignment messages: `f32`, `bool or u8`, `4-byte elements`.
    pub(crate) fn describe_elements(self) -> String {
        match self {
            Elem::Bytes(n) => format!("{n}-byte elements"),
            other => other.describe(),
        }
    }

    /// For messages: `f32`, `bool or u8`, `4-byte`.
    pub(crate) fn describe(self) -> String {
        match self {
            Elem::Exact(d) => d.name().to_string(),
            Elem::OneOf(ds) => ds.iter().map(|d| d.name()).collect::<Vec<_>>().join(" or "),
            Elem::Bytes(n) => format!("{n}-byte"),
        }
    }
}

/// The bytes an access touches, relative to its operand's offset: `rows`
/// runs of `chunk` bytes, `stride` bytes apart, the first at `start`.
/// A dense access is one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    pub start: usize,
    pub rows: usize,
    pub stride: usize,
    pub chunk: usize,
    /// One past the last byte touched (0 when nothing is).
    pub end: usize,
}

impl Pattern {
    pub(crate) const EMPTY: Pattern = Pattern { start: 0, rows: 0, stride: 0, chunk: 0, end: 0 };

    /// `bytes` contiguous bytes from the operand's offset.
    pub(crate) fn dense(bytes: usize) -> Pattern {
        if bytes == 0 {
            return Pattern::EMPTY;
        }
        Pattern { start: 0, rows: 1, stride: bytes, chunk: bytes, end: bytes }
    }

    /// A strided pattern; `None` when its end does not fit in `usize`.
    pub(crate) fn strided(start: usize, rows: usize, stride: usize, chunk: usize) -> Option<Pattern> {
        if rows == 0 || chunk == 0 {
            return Some(Pattern::EMPTY);
        }
        let end = (rows - 1).checked_mul(stride)?.checked_add(chunk)?.checked_add(start)?;
        if rows == 1 || stride == chunk {
            // Contiguous after all: keep the simpler dense form.
            let bytes = end - start;
            return Some(Pattern { start, rows: 1, stride: bytes, chunk: bytes, end });
        }
        Some(Pattern { start, rows, stride, chunk, end })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.end == 0
    }

    /// Whether the touched bytes form one contiguous run: rows that touch
    /// or overlap merge.
    pub(crate) fn is_contiguous(&self) -> bool {
        self.rows <= 1 || self.stride <= self.chunk
    }
}

/// One operand access of a thunk.
#[derive(Clone, Debug)]
pub(crate) struct Access<'a, O> {
    pub field: &'static str,
    /// Position in an operand list (`inputs`), for messages.
    pub index: Option<usize>,
    pub op: &'a O,
    pub dir: Dir,
    pub alias: Alias,
    pub elem: Elem,
    pub pattern: Pattern,
    /// How the extent follows from the fields, for hints: `m*k`.
    pub formula: &'static str,
    /// Elements touched, for dense accesses.
    pub elems: Option<usize>,
}

impl<O> Access<'_, O> {
    /// `a`, or `inputs[1]` for an element of a list.
    pub(crate) fn name(&self) -> String {
        match self.index {
            Some(i) => format!("{}[{i}]", self.field),
            None => self.field.to_string(),
        }
    }
}

/// A field value that contradicts the kind's rules.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Issue {
    pub field: &'static str,
    pub message: String,
    pub hint: Option<String>,
}
