//! Interpreter arms for the reduce family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn reduce(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Reduce")
}

pub(super) fn arg_reduce(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("ArgReduce")
}

pub(super) fn cumsum(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Cumsum")
}

pub(super) fn top_k(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("TopK")
}
