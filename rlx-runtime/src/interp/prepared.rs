//! Per-thunk decisions computed once when an `Interpreter` is built.
//!
//! Some plan results own vectors (a strided broadcast's coalesced dims, a
//! transpose's lead dims); computing them per call would allocate on every
//! run. The interpreter computes them in `Interpreter::new` instead, and
//! the arms fall back to computing them only when a thunk is executed on
//! its own through `exec_thunk`.

use rlx_sched::plan::{binary_path, compare_path, transpose_path, BinaryPath, TransposePath};
use rlx_sched::{Operand, Thunk};

/// What one thunk's arm would otherwise compute per call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prepared {
    Nothing,
    Binary(BinaryPath),
    Transpose(TransposePath),
}

/// The prepared decisions of one thunk.
pub fn prepare(t: &Thunk<Operand>) -> Prepared {
    match t {
        Thunk::BinaryFull { len, lhs_len, rhs_len, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides, .. } => {
            Prepared::Binary(binary_path(*len, *lhs_len, *rhs_len, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides))
        }
        Thunk::Compare { len, lhs_scalar, rhs_scalar, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides, .. } => {
            Prepared::Binary(compare_path(*len, *lhs_scalar, *rhs_scalar, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides))
        }
        Thunk::Transpose { in_total, out_dims, in_strides, elem_bytes, .. } => {
            Prepared::Transpose(transpose_path(out_dims, in_strides, *elem_bytes, *in_total))
        }
        _ => Prepared::Nothing,
    }
}
