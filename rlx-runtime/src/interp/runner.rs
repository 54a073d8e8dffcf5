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
        let prepared = schedule.nodes.iter().map(|n| super::prepare(&n.thunk)).collect();
        Ok(Interpreter {
            prepared,
            arena: crate::arena::Arena::new(schedule.arena_size),
            scratch: crate::arena::Arena::new(scratch_len),
            schedule,
            weights,
        })
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

