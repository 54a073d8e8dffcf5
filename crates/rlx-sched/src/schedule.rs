//! The validated schedule: what the interpreter runs and the emitter turns
//! into code. It can only be built by `validate`, so holding one means
//! every access is in bounds, aligned and consistent.

use rlx_core::{DType, Thunk};
pub use rlx_core::{Operand, Params, Segment};

/// What a buffer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Written by the caller before `run`.
    Input,
    /// Read by the caller after `run`.
    Output,
    /// A weight (always in the weights segment).
    Param,
    /// Intermediate data.
    Scratch,
    /// Data that persists from one run to the next (a decoder's KV cache):
    /// zeroed when the model is created and by `reset_state`, otherwise
    /// only thunks write it.
    State,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
            Role::Param => "param",
            Role::Scratch => "scratch",
            Role::State => "state",
        }
    }

    pub fn from_name(s: &str) -> Option<Role> {
        match s {
            "input" => Some(Role::Input),
            "output" => Some(Role::Output),
            "param" => Some(Role::Param),
            "scratch" => Some(Role::Scratch),
            "state" => Some(Role::State),
            _ => None,
        }
    }
}

/// A named region of one segment.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub segment: Segment,
    pub offset: usize,
    pub role: Role,
}

impl Buffer {
    pub fn elems(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn bytes(&self) -> usize {
        self.elems() * self.dtype.size()
    }
}

/// The weights file a schedule reads.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightsFile {
    /// As written in the `.sched` file: relative to it.
    pub path: String,
    /// Lower-case hex sha256 of the whole file.
    pub sha256: String,
    /// Bytes before the data section (the safetensors header).
    pub data_offset: usize,
    /// Bytes of the data section.
    pub data_len: usize,
}

/// A thunk with the `.sched` line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub thunk: Thunk<Operand>,
    /// 1-based line in the `.sched` file.
    pub line: u32,
}

/// One entry point: a run of consecutive nodes, the inputs the caller
/// writes before it and the outputs it writes (`docs/sched-format.md`,
/// "Entry points").
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// `None` for the one implicit entry of a schedule without `entry`
    /// lines.
    pub name: Option<String>,
    /// Indices into [`Schedule::buffers`], in the order the entry lists them.
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
    /// Its nodes, indices into [`Schedule::nodes`].
    pub nodes: std::ops::Range<usize>,
    /// 1-based line of the `entry` line; 0 for the implicit entry.
    pub line: u32,
}

/// A checked schedule. Only `validate` builds one, and its fields are
/// private: holding a `Schedule` means every access it describes is in
/// bounds, aligned and consistent, which the interpreter relies on for
/// soundness. Clones are still validated schedules.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub(crate) model: String,
    pub(crate) source_sha256: String,
    pub(crate) arena_size: usize,
    pub(crate) arena_align: usize,
    pub(crate) weights: Option<WeightsFile>,
    pub(crate) params: Params,
    pub(crate) buffers: Vec<Buffer>,
    pub(crate) nodes: Vec<Node>,
    /// Never empty: the first is what `run` runs.
    pub(crate) entries: Vec<Entry>,
}

impl Schedule {
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Lower-case hex sha256 of the `.sched` text.
    pub fn source_sha256(&self) -> &str {
        &self.source_sha256
    }

    pub fn arena_size(&self) -> usize {
        self.arena_size
    }

    pub fn arena_align(&self) -> usize {
        self.arena_align
    }

    pub fn weights(&self) -> Option<&WeightsFile> {
        self.weights.as_ref()
    }

    /// The schedule-level attention scalars.
    pub fn params(&self) -> Params {
        self.params
    }

    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The entry points, in `.sched` order; one unnamed entry covering
    /// every node when the schedule has no `entry` lines. The first is what
    /// `run` runs.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether the schedule has `entry` lines (several entry points, or one
    /// named).
    pub fn has_named_entries(&self) -> bool {
        self.entries.iter().any(|e| e.name.is_some())
    }

    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    pub fn inputs(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role == Role::Input)
    }

    pub fn outputs(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role == Role::Output)
    }

    /// The buffers that persist between runs (see [`Role::State`]).
    pub fn states(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role == Role::State)
    }
}
