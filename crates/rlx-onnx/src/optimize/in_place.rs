//! In place: an `Activation`, `Softmax`, `BinaryFull` or
//! `ElementwiseRegion` whose input is a scratch buffer read for the last
//! time by that thunk writes over that input (an exact alias, which the
//! validator allows for these kinds: each reads element `i` before it
//! writes element `i`) instead of a new buffer; so does a `ScatterElements`
//! or `ScatterNd` over its `data` (its kernel then skips the copy).

use rlx_sched::Thunk;

use super::producers::{merge, mergeable, Aliases, Liveness};
use super::{compact, remap};
use crate::lower::Lowered;
use rlx_sched::thunk::{Activation, BinaryFull, ElementwiseRegion, Nop, ScatterElements, ScatterNd, Softmax};

/// Runs the pass.
pub(super) fn work_in_place(lowered: &mut Lowered) {
    let n = lowered.storages.len();
    let mut aliases = Aliases::new(&lowered.storages);
    let mut live = Liveness::new(&lowered.thunks, n);
    let mut thunks = std::mem::take(&mut lowered.thunks);
    for (t, lt) in thunks.iter_mut().enumerate() {
        let thunk = std::mem::replace(&mut lt.thunk, Thunk::Nop(Nop {}));
        lt.thunk = remap(thunk, &aliases.of);
        let ok = |src: usize, dst: usize| mergeable(&lowered.storages, &live, t, src, dst);
        let in_place = match &lt.thunk {
            Thunk::Activation(Activation { src, dst, .. }) | Thunk::Softmax(Softmax { src, dst, .. }) => {
                Some((*src, *dst))
            }
            Thunk::BinaryFull(BinaryFull {
                lhs,
                rhs,
                dst,
                len,
                lhs_len,
                rhs_len,
                out_dims_bcast,
                bcast_lhs_strides,
                bcast_rhs_strides,
                ..
            }) => {
                let identical = |op_len: usize, strides: &[usize]| {
                    op_len == *len && rlx_sched::plan::reads_identically(*len, op_len, out_dims_bcast, strides)
                };
                if identical(*lhs_len, bcast_lhs_strides) && ok(*lhs, *dst) {
                    Some((*lhs, *dst))
                } else if identical(*rhs_len, bcast_rhs_strides) {
                    Some((*rhs, *dst))
                } else {
                    None
                }
            }
            // A scatter updates its copy of `data`; the indices and updates
            // must stay apart from it.
            Thunk::ScatterElements(ScatterElements { data, indices, updates, dst, .. })
            | Thunk::ScatterNd(ScatterNd { data, indices, updates, dst, .. })
                if data != indices && data != updates =>
            {
                Some((*data, *dst))
            }
            // Every input of a region is read element for element.
            Thunk::ElementwiseRegion(ElementwiseRegion { inputs, dst, .. }) => {
                inputs.iter().find(|&&i| ok(i, *dst)).map(|&i| (i, *dst))
            }
            _ => None,
        };
        if let Some((src, dst)) = in_place {
            if ok(src, dst) {
                merge(lowered, &mut aliases, &mut live, src, dst);
                let thunk = std::mem::replace(&mut lt.thunk, Thunk::Nop(Nop {}));
                lt.thunk = remap(thunk, &aliases.of);
            }
        }
    }
    lowered.thunks = thunks;
    compact(lowered, &aliases.of);
}
