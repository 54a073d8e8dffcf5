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
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
            Role::Param => "param",
            Role::Scratch => "scratch",
        }
    }

    pub fn from_name(s: &str) -> Option<Role> {
        match s {
            "input" => Some(Role::Input),
            "output" => Some(Role::Output),
            "param" => Some(Role::Param),
            "scratch" => Some(Role::Scratch),
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

/// A checked schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub model: String,
    /// Lower-case hex sha256 of the `.sched` text.
    pub source_sha256: String,
    pub arena_size: usize,
    pub arena_align: usize,
    pub weights: Option<WeightsFile>,
    pub params: Params,
    pub buffers: Vec<Buffer>,
    pub nodes: Vec<Node>,
    /// Only `validate` can build a `Schedule`.
    pub(crate) _sealed: Sealed,
}

/// Keeps `Schedule` from being built outside this crate.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sealed;

impl Schedule {
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    pub fn inputs(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role == Role::Input)
    }

    pub fn outputs(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role == Role::Output)
    }
}
