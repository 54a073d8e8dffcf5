//! What a generated model exposes to the model CLI and to tests.

use rlx_core::DType;

/// An input or output tensor of a generated model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: &'static str,
    pub dtype: DType,
    pub shape: &'static [usize],
    /// Byte offset in the arena.
    pub offset: usize,
    pub bytes: usize,
}

/// One thunk of the schedule, for `--profile` tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThunkInfo {
    pub kind: &'static str,
    /// Line in the `.sched` file.
    pub line: u32,
}

/// A named entry point of a generated model (an `entry` line of its
/// `.sched`): a run of thunks over the same arena, weights and state, with
/// its own inputs and outputs (a decoder's `prefill` and `decode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    pub name: &'static str,
    /// What the caller writes before running the entry.
    pub inputs: &'static [TensorInfo],
    /// What the entry writes.
    pub outputs: &'static [TensorInfo],
    /// Line of the `entry` line in the `.sched` file.
    pub line: u32,
}

/// Static facts about a generated model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    pub name: &'static str,
    /// Workspace-relative path of the `.sched` file.
    pub sched_path: &'static str,
    pub sched_sha256: &'static str,
    pub arena_bytes: usize,
    pub scratch_bytes: usize,
    pub weights_bytes: usize,
    /// The inputs and outputs of `run` (with entry points: of the first).
    pub inputs: &'static [TensorInfo],
    pub outputs: &'static [TensorInfo],
    /// The entry points, in `.sched` order, when the schedule has `entry`
    /// lines; empty otherwise (`run` is then the model's one entry).
    /// [`GeneratedModel::run_entry`] takes an index into this list.
    pub entries: &'static [EntryInfo],
    /// Buffers that persist between runs (`state` in the `.sched`): zeroed
    /// by `new` and [`GeneratedModel::reset_state`], else written by thunks.
    pub states: &'static [TensorInfo],
    pub thunks: &'static [ThunkInfo],
}

impl ModelInfo {
    /// The index of the entry point called `name`, for
    /// [`GeneratedModel::run_entry`].
    pub fn entry(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.name == name)
    }
}

/// Implemented by every generated `Model`.
pub trait GeneratedModel {
    const INFO: ModelInfo;
    /// Whether the model was built with per-thunk timing (`profile` feature).
    const PROFILED: bool = false;
    /// Allocates the arena and scratch (zeroed) and sets up the weights.
    /// Panics where [`GeneratedModel::try_new`] would fail.
    fn new() -> Self;
    /// Like `new`, but a model whose weights live in a side file reports a
    /// missing or mismatched file as an error.
    fn try_new() -> Result<Self, crate::weights::WeightsError>
    where
        Self: Sized,
    {
        Ok(Self::new())
    }
    /// Runs the schedule once (with entry points: the first). Allocates
    /// nothing.
    fn run(&mut self);
    /// Runs entry point `index` of [`ModelInfo::entries`] once; index 0 is
    /// what [`GeneratedModel::run`] runs. Allocates nothing.
    ///
    /// # Panics
    ///
    /// When `index` names no entry: beyond `INFO.entries`, or above 0 for a
    /// model without entry points. Look indices up with
    /// [`ModelInfo::entry`].
    fn run_entry(&mut self, index: usize) {
        assert!(index == 0, "model `{}` has no entry point {index}", Self::INFO.name);
        self.run();
    }
    fn arena(&self) -> &[u8];
    fn arena_mut(&mut self) -> &mut [u8];
    /// Zeroes every `state` buffer, as `new` left them (a decoder forgets
    /// its cached positions). Allocates nothing.
    fn reset_state(&mut self) {
        let arena = self.arena_mut();
        for s in Self::INFO.states {
            arena[s.offset..s.offset + s.bytes].fill(0);
        }
    }
}
