//! The memory one thunk runs against: the arena, the weights and scratch.

use std::marker::PhantomData;

use rlx_sched::{Operand, Params, Segment};

/// Raw views of the arena, the weights' data section and the scratch
/// buffer. Thunks address them by `Operand`s that the validator has
/// already bounds- and alignment-checked, so lookups here only assert in
/// debug builds.
pub struct Memory<'a> {
    arena: *mut u8,
    arena_len: usize,
    weights: *const u8,
    weights_len: usize,
    scratch: *mut u8,
    scratch_len: usize,
    /// Schedule-level attention scalars.
    pub params: Params,
    /// The current thunk's decisions, when an `Interpreter` prepared them.
    pub(crate) prepared: Option<&'a super::prepared::Prepared>,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> Memory<'a> {
    pub fn new(arena: &'a mut [u8], weights: &'a [u8], scratch: &'a mut [u8], params: Params) -> Self {
        Memory {
            arena: arena.as_mut_ptr(),
            arena_len: arena.len(),
            weights: weights.as_ptr(),
            weights_len: weights.len(),
            scratch: scratch.as_mut_ptr(),
            scratch_len: scratch.len(),
            params,
            prepared: None,
            _borrow: PhantomData,
        }
    }

    /// Pointer to an operand's first byte, typed. Weights are never written
    /// (the validator rejects writes to them), so handing out `*mut` for
    /// them is sound as long as kernels honour their read-only contract.
    pub fn ptr<T>(&self, op: Operand) -> *mut T {
        let (base, len) = match op.segment {
            Segment::Arena => (self.arena, self.arena_len),
            Segment::Weights => (self.weights as *mut u8, self.weights_len),
        };
        debug_assert!(op.offset <= len, "operand offset {} past segment of {len} bytes", op.offset);
        debug_assert!(op.offset.is_multiple_of(std::mem::align_of::<T>().min(8)), "misaligned operand offset {}", op.offset);
        // SAFETY: the validator checked `offset` (plus the access extent)
        // lies inside the segment.
        unsafe { base.add(op.offset).cast() }
    }

    /// The scratch buffer, sized once for the whole schedule by
    /// `rlx_sched::plan::schedule_scratch_bytes`.
    pub fn scratch<T>(&self) -> *mut T {
        self.scratch.cast()
    }

    pub fn scratch_len(&self) -> usize {
        self.scratch_len
    }
}

impl<'a> Memory<'a> {
    /// The prepared broadcast path of the current thunk, if any.
    pub(crate) fn prepared_binary(&self) -> Option<&'a rlx_sched::plan::BinaryPath> {
        match self.prepared {
            Some(super::prepared::Prepared::Binary(p)) => Some(p),
            _ => None,
        }
    }

    /// The prepared transpose path of the current thunk, if any.
    pub(crate) fn prepared_transpose(&self) -> Option<&'a rlx_sched::plan::TransposePath> {
        match self.prepared {
            Some(super::prepared::Prepared::Transpose(p)) => Some(p),
            _ => None,
        }
    }
}
