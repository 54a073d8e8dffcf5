//! Interpreter arms for the conv family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn conv2_d(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Conv2D")
}

pub(super) fn pool2_d(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Pool2D")
}
