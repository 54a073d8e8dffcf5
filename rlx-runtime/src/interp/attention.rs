//! Interpreter arms for the attention family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn softmax(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Softmax")
}

pub(super) fn attention(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Attention")
}
