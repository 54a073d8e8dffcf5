//! Interpreter arms for the movement family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn copy(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Copy")
}

pub(super) fn copy_f64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CopyF64")
}

pub(super) fn copy_i64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("CopyI64")
}

pub(super) fn narrow(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Narrow")
}

pub(super) fn transpose(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Transpose")
}

pub(super) fn concat(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Concat")
}

pub(super) fn gather(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Gather")
}

pub(super) fn gather_axis(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("GatherAxis")
}

pub(super) fn kv_append(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("KvAppend")
}
