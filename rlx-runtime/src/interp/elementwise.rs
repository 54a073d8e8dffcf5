//! Interpreter arms for the elementwise family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn binary_full(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("BinaryFull")
}

pub(super) fn elementwise_region(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("ElementwiseRegion")
}

pub(super) fn activation_in_place(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("ActivationInPlace")
}

pub(super) fn activation(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Activation")
}

pub(super) fn fma(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Fma")
}

pub(super) fn compare(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Compare")
}

pub(super) fn select(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Where")
}
