//! Movement family: copies, `Narrow`, `Transpose` (path from
//! `plan::transpose_path`), `Concat`, `Pad` (canonical form from
//! `plan::canonical_pad`), gathers, cache writes, `Resize`, the
//! conversions into and out of the blocked layout, and `Nop`.

use super::Lower;
use crate::call::{IndexElem, KernelCall as K, MoveElem};
use crate::dtype::DType;
use crate::operand::{Operand, Params};
use crate::plan::{
    canonical_pad, copy_parallel, narrow_parallel, pad_out_dims, parallel, resize_parallel, resize_scratch_bytes,
    transpose_path, PadPlan, TransposePath,
};
use crate::thunk::{
    Concat, Copy, CopyF64, CopyI64, FromBlocked, Gather, GatherAxis, KvAppend, KvWrite, Narrow, Nop, Pad, Resize,
    ToBlocked, Transpose,
};

/// A `Nop` does nothing: no call.
impl Lower for Nop {
    fn lower(&self, _: &Params) -> Option<K> {
        None
    }
}

impl Lower for Copy<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Copy { src, dst, len } = *self;
        Some(K::CopyF32 { src, dst, len, par: copy_parallel(&src, &dst, len, 4) })
    }
}

impl Lower for CopyF64<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let CopyF64 { src, dst, len } = *self;
        Some(K::CopyF64 { src, dst, len, par: copy_parallel(&src, &dst, len, 8) })
    }
}

impl Lower for CopyI64<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let CopyI64 { src, dst, len } = *self;
        Some(K::CopyI64 { src, dst, len, par: copy_parallel(&src, &dst, len, 8) })
    }
}

impl Lower for Narrow<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Narrow { src, dst, outer, src_stride, dst_stride, inner, elem_bytes } = *self;
        Some(K::Narrow {
            src,
            dst,
            outer,
            src_stride,
            dst_stride,
            inner,
            elem_bytes,
            par: narrow_parallel(outer, inner, dst_stride),
        })
    }
}

impl Lower for Transpose<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes } = self;
        let (src, dst) = (*src, *dst);
        let par = parallel(out_dims.iter().product());
        let elem = move_elem(*elem_bytes);
        Some(match transpose_path(out_dims, in_strides, *elem_bytes, *in_total) {
            TransposePath::Empty => return None,
            TransposePath::Copy { len } => K::TransposeCopy { elem, src, dst, len, par },
            TransposePath::Splat { len } => K::TransposeSplat { elem, src, dst, len, par },
            TransposePath::BroadcastRuns { lead_dims, lead_strides, run } => {
                K::TransposeBroadcastRuns { elem, src, dst, lead_dims, lead_strides, run, par }
            }
            TransposePath::InnerRows { lead_dims, lead_strides, row } => {
                K::TransposeInnerRows { elem, src, dst, lead_dims, lead_strides, row, par }
            }
            TransposePath::BatchedSwap { lead_dims, lead_strides, rows, cols, src_ld } => {
                K::TransposeBatchedSwap { elem, src, dst, lead_dims, lead_strides, rows, cols, src_ld, par }
            }
            TransposePath::Rank2 { rows, cols, s0, s1 } => {
                K::TransposeRank2 { elem, src, dst, rows, cols, s0, s1, par }
            }
            TransposePath::General { dims, strides } => K::TransposeGeneral { elem, src, dst, dims, strides, par },
        })
    }
}

impl Lower for Concat<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Concat { inputs, dst, outer, inner, elem_bytes } = self;
        Some(K::Concat {
            inputs: inputs.clone(),
            dst: *dst,
            outer: *outer,
            inner: inner.clone(),
            elem_bytes: *elem_bytes,
            par: parallel(outer * inner.iter().sum::<usize>()),
        })
    }
}

/// An empty output needs no call; otherwise the kernel walks the
/// canonical form, split over threads by output rows when the output is
/// large enough.
impl Lower for Pad<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Pad { src, value, dst, dims, before, after, mode, elem_bytes } = self;
        let out_dims = pad_out_dims(dims, before, after).expect("validated: ranks agree, dims fit");
        if out_dims.contains(&0) {
            return None;
        }
        let PadPlan { dims, before, after, unit } = canonical_pad(dims, before, after);
        Some(K::Pad {
            elem: move_elem(*elem_bytes),
            src: *src,
            value: *value,
            dst: *dst,
            dims,
            before,
            after,
            unit,
            mode: *mode,
            par: parallel(out_dims.iter().product()),
        })
    }
}

impl Lower for Gather<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Gather { table, indices, dst, num_indices, row_len, vocab, index_dtype } = *self;
        Some(K::GatherF32 {
            index: index_elem(index_dtype),
            table,
            indices,
            dst,
            num_indices,
            row_len,
            vocab,
            par: parallel(num_indices * row_len),
        })
    }
}

impl Lower for GatherAxis<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let GatherAxis { src, indices, dst, outer, axis_dim, inner, num_indices, elem_bytes, index_dtype } = *self;
        Some(K::GatherAxis {
            index: index_elem(index_dtype),
            src,
            indices,
            dst,
            outer,
            axis_dim,
            inner,
            num_indices,
            elem_bytes,
            par: parallel(outer * num_indices * inner),
        })
    }
}

impl Lower for KvAppend<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let KvAppend { src, cache, batch, new_len, max_len, row, pos, elem_bytes } = *self;
        Some(K::KvAppend {
            src,
            cache,
            batch,
            new_len,
            max_len,
            row,
            pos,
            elem_bytes,
            par: parallel(batch * new_len * row),
        })
    }
}

impl Lower for KvWrite<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let KvWrite { src, cache, pos, new_len, max_len, row, elem_bytes } = *self;
        Some(K::KvWrite { src, cache, pos, new_len, max_len, row, elem_bytes, par: parallel(new_len * row) })
    }
}

impl Lower for Resize<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let shape = self.shape();
        let scratch = resize_scratch_bytes(&shape);
        let par = resize_parallel(&shape);
        Some(K::ResizeF32 { src: self.src, dst: self.dst, shape, scratch, par })
    }
}

impl Lower for ToBlocked<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let ToBlocked { src, dst, n, c, hw } = *self;
        Some(K::NchwToBlockedF32 { src, dst, n, c, hw, par: parallel(n * c * hw) })
    }
}

impl Lower for FromBlocked<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let FromBlocked { src, dst, n, c, hw } = *self;
        Some(K::BlockedToNchwF32 { src, dst, n, c, hw, par: parallel(n * c * hw) })
    }
}

/// The element a transpose moves: only its width matters.
fn move_elem(elem_bytes: usize) -> MoveElem {
    match elem_bytes {
        1 => MoveElem::U8,
        2 => MoveElem::U16,
        4 => MoveElem::U32,
        8 => MoveElem::U64,
        _ => MoveElem::U128,
    }
}

fn index_elem(d: DType) -> IndexElem {
    match d {
        DType::I32 => IndexElem::I32,
        DType::F32 => IndexElem::F32,
        _ => IndexElem::I64,
    }
}
