//! The reference interpreter: runs a validated `Schedule` thunk by thunk.
//!
//! It is the semantics every generated binary is tested against, and it is
//! built from the same pieces: [`Interpreter::new`] lowers every thunk once
//! (`rlx_core::lower`) to the kernel call the generated code makes at the
//! same `.sched` line, and [`Interpreter::run`] executes those calls
//! (`rlx_runtime::exec`). There is no per-kind interpreter code.

#![deny(clippy::undocumented_unsafe_blocks)]

mod runner;

#[cfg(test)]
mod tests;

pub use runner::{InterpError, Interpreter};

use rlx_core::{Operand, Params, Thunk};
use rlx_runtime::exec::{execute, Memory};

/// Lowers and runs one thunk against `mem` (tests and tools that run a
/// thunk outside a schedule).
///
/// # Safety
///
/// As [`rlx_runtime::exec::execute`]: `thunk` passed the validator for a
/// schedule whose arena, weights and scratch `mem` holds.
pub unsafe fn exec_thunk(mem: &Memory<'_>, thunk: &Thunk<Operand>, params: &Params) {
    if let Some(call) = rlx_core::lower(thunk, params) {
        // SAFETY: the caller's contract.
        unsafe { execute(&call, mem) }
    }
}
