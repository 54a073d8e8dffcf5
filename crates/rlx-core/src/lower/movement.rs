//! Movement family: copies, `Narrow`, `Transpose` (path from
//! `plan::transpose_path`), `Concat`, gathers, `KvAppend`.

use super::not_in_family;
use crate::call::{IndexElem, KernelCall as K, MoveElem};
use crate::dtype::DType;
use crate::operand::Operand;
use crate::plan::{copy_parallel, narrow_parallel, parallel, transpose_path, TransposePath};
use crate::thunk::Thunk;

pub(super) fn lower(t: &Thunk<Operand>) -> Option<K> {
    Some(match t {
        &Thunk::Copy { src, dst, len } => K::CopyF32 { src, dst, len, par: copy_parallel(&src, &dst, len, 4) },
        &Thunk::CopyF64 { src, dst, len } => K::CopyF64 { src, dst, len, par: copy_parallel(&src, &dst, len, 8) },
        &Thunk::CopyI64 { src, dst, len } => K::CopyI64 { src, dst, len, par: copy_parallel(&src, &dst, len, 8) },
        &Thunk::Narrow { src, dst, outer, src_stride, dst_stride, inner, elem_bytes } => K::Narrow {
            src,
            dst,
            outer,
            src_stride,
            dst_stride,
            inner,
            elem_bytes,
            par: narrow_parallel(outer, inner, dst_stride),
        },
        Thunk::Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes } => {
            let (src, dst) = (*src, *dst);
            let par = parallel(out_dims.iter().product());
            let elem = move_elem(*elem_bytes);
            match transpose_path(out_dims, in_strides, *elem_bytes, *in_total) {
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
            }
        }
        Thunk::Concat { inputs, dst, outer, inner, elem_bytes } => K::Concat {
            inputs: inputs.clone(),
            dst: *dst,
            outer: *outer,
            inner: inner.clone(),
            elem_bytes: *elem_bytes,
            par: parallel(outer * inner.iter().sum::<usize>()),
        },
        &Thunk::Gather { table, indices, dst, num_indices, row_len, vocab, index_dtype } => K::GatherF32 {
            index: index_elem(index_dtype),
            table,
            indices,
            dst,
            num_indices,
            row_len,
            vocab,
            par: parallel(num_indices * row_len),
        },
        &Thunk::GatherAxis { src, indices, dst, outer, axis_dim, inner, num_indices, elem_bytes, index_dtype } => {
            K::GatherAxis {
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
            }
        }
        &Thunk::KvAppend { src, cache, batch, new_len, max_len, row, pos, elem_bytes } => K::KvAppend {
            src,
            cache,
            batch,
            new_len,
            max_len,
            row,
            pos,
            elem_bytes,
            par: parallel(batch * new_len * row),
        },
        &Thunk::KvWrite { src, cache, pos, new_len, max_len, row, elem_bytes } => {
            K::KvWrite { src, cache, pos, new_len, max_len, row, elem_bytes, par: parallel(new_len * row) }
        }
        _ => not_in_family("movement", t),
    })
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
