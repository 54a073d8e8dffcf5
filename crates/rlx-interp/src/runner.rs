//! The whole-schedule runner.

use rlx_core::KernelCall;
use rlx_runtime::arena::Arena;
use rlx_runtime::exec::{execute, Memory};
use rlx_sched::{Buffer, Schedule, Segment};

/// Runs a whole schedule over its own arena. All memory (arena, scratch)
/// is allocated and every thunk lowered once in [`Interpreter::new`];
/// [`Interpreter::run`] allocates nothing itself.
pub struct Interpreter<'w> {
    schedule: Schedule,
    arena: Arena,
    scratch: Arena,
    weights: &'w [u8],
    /// One lowered call per node (`None`: the thunk does nothing).
    calls: Vec<Option<KernelCall>>,
}

/// Why an interpreter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum InterpError {
    #[error("the schedule reads {needed} bytes of weights but {given} were given")]
    WeightsTooShort { needed: usize, given: usize },
    /// Kernels read weights through typed pointers (f32, f64, i64), so a
    /// weights slice that is not aligned for the widest of them is refused
    /// rather than read misaligned.
    #[error("the weights slice starts at an address that is not {align}-byte aligned")]
    MisalignedWeights { align: usize },
    #[error("no buffer named `{0}`")]
    UnknownBuffer(String),
    #[error("buffer `{name}` holds {expected} bytes, {given} were given")]
    SizeMismatch { name: String, expected: usize, given: usize },
    /// The arena or scratch could not be allocated.
    #[error(transparent)]
    Alloc(#[from] rlx_runtime::arena::ArenaError),
}

impl<'w> Interpreter<'w> {
    /// `weights` is the data section of the weights file (after the
    /// safetensors header), or empty when the schedule has none. It must be
    /// long enough for the schedule and aligned to
    /// [`DATA_ALIGN`](rlx_runtime::weights::DATA_ALIGN), as
    /// [`Weights::data`](rlx_runtime::weights::Weights::data) always is;
    /// anything else is an error, so no safe call reads out of bounds or
    /// through a misaligned pointer.
    pub fn new(schedule: Schedule, weights: &'w [u8]) -> Result<Self, InterpError> {
        let needed = schedule.weights().as_ref().map_or(0, |w| w.data_len);
        if weights.len() < needed {
            return Err(InterpError::WeightsTooShort { needed, given: weights.len() });
        }
        let align = rlx_runtime::weights::DATA_ALIGN;
        if needed > 0 && !(weights.as_ptr() as usize).is_multiple_of(align) {
            return Err(InterpError::MisalignedWeights { align });
        }
        let calls: Vec<_> = schedule.nodes().iter().map(|n| rlx_core::lower(&n.thunk, &schedule.params())).collect();
        let scratch_len = calls.iter().flatten().map(KernelCall::scratch_bytes).max().unwrap_or(0).div_ceil(64) * 64;
        // Fallible: a schedule may declare more memory than the machine
        // has, and that is an error naming the bytes, not an abort.
        let arena = Arena::try_new_for("arena", schedule.arena_size())?;
        let scratch = Arena::try_new_for("scratch", scratch_len)?;
        Ok(Interpreter { arena, scratch, calls, schedule, weights })
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The lowered call of every node, in order.
    pub fn calls(&self) -> &[Option<KernelCall>] {
        &self.calls
    }

    fn arena_buffer(&self, name: &str) -> Result<&Buffer, InterpError> {
        self.schedule
            .buffers()
            .iter()
            .find(|b| b.name == name && b.segment == Segment::Arena)
            .ok_or_else(|| InterpError::UnknownBuffer(name.to_string()))
    }

    /// Copies raw little-endian bytes into an arena buffer (an input).
    pub fn set_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<(), InterpError> {
        let b = self.arena_buffer(name)?;
        if b.bytes() != bytes.len() {
            return Err(InterpError::SizeMismatch { name: name.to_string(), expected: b.bytes(), given: bytes.len() });
        }
        let off = b.offset;
        self.arena.as_mut_slice()[off..off + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// The raw bytes of an arena buffer (an output).
    pub fn bytes(&self, name: &str) -> Result<&[u8], InterpError> {
        let b = self.arena_buffer(name)?;
        Ok(&self.arena.as_slice()[b.offset..b.offset + b.bytes()])
    }

    /// The whole arena, for differential tests.
    pub fn arena(&self) -> &[u8] {
        self.arena.as_slice()
    }

    /// Zeroes every `state` buffer, as `new` left them (a decoder forgets
    /// its cached positions); the generated `reset_state` does the same.
    pub fn reset_state(&mut self) {
        let arena = self.arena.as_mut_slice();
        for b in self.schedule.states() {
            arena[b.offset..b.offset + b.bytes()].fill(0);
        }
    }

    /// Runs the schedule once (with entry points: the first), every thunk
    /// in order.
    pub fn run(&mut self) {
        self.run_entry(0);
    }

    /// Runs entry point `index` of [`Schedule::entries`] once.
    ///
    /// # Panics
    ///
    /// When `index` is not below `schedule().entries().len()`.
    pub fn run_entry(&mut self, index: usize) {
        let entry = &self.schedule.entries()[index];
        let nodes = entry.nodes.clone();
        let parallel = nodes.clone().any(|i| self.calls[i].as_ref().is_some_and(KernelCall::parallel));
        let mut all = || {
            for index in nodes.clone() {
                self.run_node(index);
            }
        };
        // Inside the pool when a call is parallel, as generated code does.
        if parallel {
            // SAFETY: the closure borrows `self`, which outlives the call,
            // and touches no thread-local state.
            unsafe { rlx_runtime::threads::run_in_pool(&mut all) }
        } else {
            all();
        }
    }

    /// The index of the entry point called `name`.
    pub fn entry(&self, name: &str) -> Option<usize> {
        self.schedule.entries().iter().position(|e| e.name.as_deref() == Some(name))
    }

    /// Runs one thunk by index (for per-thunk profiling).
    pub fn run_node(&mut self, index: usize) {
        let Some(call) = &self.calls[index] else { return };
        let mem = Memory::new(self.arena.as_mut_slice(), self.weights, self.scratch.as_mut_slice());
        // SAFETY: `call` is the lowering of a node of a validated schedule
        // (a `Schedule` only comes from the validator); the arena holds
        // `arena_size` bytes, `weights` at least the data section the
        // validator checked offsets against (checked in `new`), and the
        // scratch the maximum any call needs.
        unsafe { execute(call, &mem) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_the_allocator_refuses_is_an_error() {
        // Valid (under isize::MAX), but more than any machine has.
        let bytes = 1usize << 62;
        let text = format!(
            "rlx-sched 1\nmodel big\narena {bytes} align 64\nmask_threshold 0.5\nmask_neg_inf -1e9\nscore_skip 0.0\n\n\
             input x: f32[4] @ arena+0\noutput y: f32[4] @ arena+64\n\nCopy {{ src: x, dst: y, len: 4 }}\n"
        );
        let checked = rlx_sched::check_source(&text, std::path::Path::new(".")).expect("valid");
        let err = Interpreter::new(checked.schedule, &[]).err().expect("allocation fails");
        assert_eq!(err.to_string(), "cannot allocate 4611686018427387904 bytes (4.0 EiB) of memory for the arena");
    }
}
