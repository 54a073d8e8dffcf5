//! A validated thunk to its one kernel call, written once per kind.
//!
//! Every kind implements [`Lower`] in the module of its family (the
//! `family` column of `thunk_table!`, which is also the folder
//! `rlx_runtime::kernels::<family>` of the entries it lowers to). The
//! router, [`lower`], is generated from the table: a kind without a
//! `Lower` impl does not compile, and the error names it.
//!
//! Lowering is a pure function of the thunk's fields (and the schedule's
//! attention scalars). It makes every decision an interpreter would make
//! per call — the broadcast or transpose path, whether a GEMM output goes
//! through a temporary, serial or parallel, the conv and attention paths,
//! the element types of generic entries — and returns them as a
//! [`KernelCall`]. The interpreter executes that value; the code generator
//! prints it.
//!
//! The thunk must have passed `rlx_sched::validate`: the lowering trusts
//! its fields (element sizes, extents, aliasing) the way the kernels do.

mod activation;
mod attention;
mod cast;
mod conv;
mod elementwise;
mod gather_scatter;
mod gemm;
mod movement;
mod norm;
mod pool;
mod quant;
mod recurrent;
mod reduce;
mod rope;
mod sample;
mod softmax;

use crate::call::KernelCall;
use crate::operand::{Operand, Params};
use crate::thunk::Thunk;

/// A kind's lowering: its one kernel call, or `None` when it does nothing
/// (`Nop`, an empty transpose or fused chain).
pub trait Lower {
    fn lower(&self, params: &Params) -> Option<KernelCall>;
}

macro_rules! lower_router {
    ($( $(#[$doc:meta])* $kind:ident in $family:ident { $($fields:tt)* } )*) => {
        /// The kernel call of a validated thunk, or `None` when it does
        /// nothing.
        pub fn lower(thunk: &Thunk<Operand>, params: &Params) -> Option<KernelCall> {
            match thunk {
                $( Thunk::$kind(t) => Lower::lower(t, params), )*
            }
        }
    };
}

crate::thunk_table!(lower_router);

/// Bytes of scratch a thunk's call uses (0 for most kinds).
pub fn scratch_bytes(thunk: &Thunk<Operand>, params: &Params) -> usize {
    lower(thunk, params).map_or(0, |c| c.scratch_bytes())
}

const F32: usize = 4;
