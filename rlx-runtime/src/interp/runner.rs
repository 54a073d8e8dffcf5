//! The whole-schedule runner.

use rlx_sched::{Buffer, Schedule, Segment};

use super::{exec_thunk, Memory};

/// Runs a whole schedule over its own arena. All memory (arena, scratch)
/// is allocated once in [`Interpreter::new`]; [`Interpreter::run`]
/// allocates nothing itself.
pub struct Interpreter<'w> {
    schedule: Schedule,
    arena: crate::arena::Arena,
    scratch: crate::arena::Arena,
    weights: &'w [u8],
    /// Per-node decisions computed once, so `run` allocates nothing.
    prepared: Vec<super::Prepared>,
}

/// Why an interpreter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum InterpError {
    #[error("the schedule reads {needed} bytes of weights but {given} were given")]
    WeightsTooShort { needed: usize, given: usize },
    #[error("no buffer named `{0}`")]
    UnknownBuffer(String),
    #[error("buffer `{name}` holds {expected} bytes, {given} were given")]
    SizeMismatch { name: String, expected: usize, given: usize },
    /// The arena or scratch could not be allocated.
    #[error(transparent)]
    Alloc(#[from] crate::arena::ArenaError),
}

impl<'w> Interpreter<'w> {
    /// `weights` is the data section of the weights file (after the
    /// safetensors header), or empty when the schedule has none.
    pub fn new(schedule: Schedule, weights: &'w [u8]) -> Result<Self, InterpError> {
        let needed = schedule.weights.as_ref().map_or(0, |w| w.data_len);
        if weights.len() < needed {
            return Err(InterpError::WeightsTooShort { needed, given: weights.len() });
        }
        let scratch_len = rlx_sched::plan::schedule_scratch_bytes(&schedule);
        // Fallible: a schedule may declare more memory than the machine
        // has, and that is an error naming the bytes, not an abort.
        let arena = crate::arena::Arena::try_new_for("arena", schedule.arena_size)?;
        let scratch = crate::arena::Arena::try_new_for("scratch", scratch_len)?;
        let prepared = schedule.nodes.iter().map(|n| super::prepare(&n.thunk)).collect();
        Ok(Interpreter { prepared, arena, scratch, schedule, weights })
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    fn arena_buffer(&self, name: &str) -> Result<&Buffer, InterpError> {
        self.schedule
            .buffers
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

    /// Runs every thunk in order.
    pub fn run(&mut self) {
        let mut mem = Memory::new(self.arena.as_mut_slice(), self.weights, self.scratch.as_mut_slice(), self.schedule.params);
        for (node, prepared) in self.schedule.nodes.iter().zip(&self.prepared) {
            mem.prepared = Some(prepared);
            exec_thunk(&mut mem, &node.thunk);
        }
    }

    /// Runs one thunk by index (for per-thunk profiling).
    pub fn run_node(&mut self, index: usize) {
        let mut mem = Memory::new(self.arena.as_mut_slice(), self.weights, self.scratch.as_mut_slice(), self.schedule.params);
        mem.prepared = Some(&self.prepared[index]);
        exec_thunk(&mut mem, &self.schedule.nodes[index].thunk);
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
        assert_eq!(
            err.to_string(),
            "cannot allocate 4611686018427387904 bytes (4.0 EiB) of memory for the arena"
        );
    }
}
