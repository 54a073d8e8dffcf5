//! Where a thunk's data lives: resolved operands and schedule-level
//! scalars.

/// Which memory an offset points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// The model's read-write arena.
    Arena,
    /// The read-only data section of the weights file.
    Weights,
}

impl Segment {
    pub fn name(self) -> &'static str {
        match self {
            Segment::Arena => "arena",
            Segment::Weights => "weights",
        }
    }
}

/// A resolved operand: a byte offset into a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    pub segment: Segment,
    /// Byte offset from the start of the segment.
    pub offset: usize,
    /// Index into `Schedule::buffers` when written as a buffer or a view.
    pub buffer: Option<usize>,
}

/// Schedule-level scalars used by attention.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub mask_threshold: f32,
    pub mask_neg_inf: f32,
    pub score_skip: f32,
}
