//! Runs one thunk on test memory.

use rlx_core::{Operand, Params, Thunk};
use rlx_runtime::exec::Memory;

/// Lowers and executes `t` on the given memory. The tests build thunks
/// whose extents fit the memory they pass, as the validator would demand.
pub(crate) fn exec(arena: &mut [u8], weights: &[u8], scratch: &mut [u8], params: Params, t: &Thunk<Operand>) {
    let mem = Memory::new(arena, weights, scratch);
    // SAFETY: each test sizes its arena, weights and scratch for its thunk.
    unsafe { crate::exec_thunk(&mem, t, &params) }
}
