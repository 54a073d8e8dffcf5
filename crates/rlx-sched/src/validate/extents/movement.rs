//! Kinds that move bytes: copies, row copies, permutations, concatenation,
//! gathers and the KV-cache append.

use super::{max_index, product, Rules};
use crate::dtype::DType;
use crate::thunk::Thunk;
use crate::validate::access::{Alias, Dir, Elem, Pattern, F32, I64};
use crate::validate::messages;

/// The dtypes an index operand may have.
const INDEX_DTYPES: &[DType] = &[DType::I64, DType::I32, DType::F32];

/// A memmove: source and destination may overlap anywhere.
pub(super) fn copy<'a, O>(r: &mut Rules<'a, O>, src: &'a O, dst: &'a O, len: usize, elem: Elem) {
    r.read_alias(Alias::Any, "src", src, elem, &[len], "len");
    r.write("dst", dst, elem, &[len], "len");
}

/// `outer` rows of `inner` elements, `stride` elements apart.
fn rows(outer: usize, stride: usize, inner: usize, elem_bytes: usize) -> Option<Pattern> {
    Pattern::strided(0, outer, stride.checked_mul(elem_bytes)?, inner.checked_mul(elem_bytes)?)
}

pub(super) fn narrow<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Narrow { src, dst, outer, src_stride, dst_stride, inner, elem_bytes } = t else {
        unreachable!("narrow called on {:?}", t.kind())
    };
    // Overlapping destination rows would make the result depend on the
    // copy order (and race when rows are copied in parallel).
    r.require(*outer <= 1 || *inner == 0 || dst_stride >= inner, "dst_stride", || {
        messages::rows_overlap("dst_stride", *dst_stride, *inner)
    });
    let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
    let eb = *elem_bytes;
    r.strided(Dir::Read, "src", src, elem, rows(*outer, *src_stride, *inner, eb), "(outer-1)*src_stride + inner");
    r.strided(Dir::Write, "dst", dst, elem, rows(*outer, *dst_stride, *inner, eb), "(outer-1)*dst_stride + inner");
}

pub(super) fn transpose<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes } = t else {
        unreachable!("transpose called on {:?}", t.kind())
    };
    let elem = r.byte_elem("elem_bytes", *elem_bytes);
    let Some(total) = product(out_dims) else {
        return r.issue("out_dims", messages::field_overflow("out_dims"), None);
    };
    if in_strides.len() != out_dims.len() {
        r.issue(
            "in_strides",
            messages::rank_mismatch("in_strides", in_strides.len(), "out_dims", out_dims.len()),
            None,
        );
    } else if total > 0 {
        match max_index(out_dims, in_strides) {
            Some(max) => r.require(max < *in_total, "in_strides", || {
                messages::index_past_len("in_strides", max, "in_total", *in_total)
            }),
            None => r.issue("in_strides", messages::field_overflow("in_strides"), None),
        }
    }
    let Some(elem) = elem else { return };
    // An empty output reads nothing.
    let read = if total == 0 { 0 } else { *in_total };
    r.read("src", src, elem, &[read], "in_total");
    r.write("dst", dst, elem, &[total], "product(out_dims)");
}

pub(super) fn concat<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Concat { inputs, dst, outer, inner, elem_bytes } = t else {
        unreachable!("concat called on {:?}", t.kind())
    };
    r.require(!inputs.is_empty(), "inputs", || messages::no_inputs("Concat"));
    r.require(inner.len() == inputs.len(), "inner", || messages::inner_count(inner.len(), inputs.len()));
    let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
    let Some(row) = inner.iter().try_fold(0usize, |acc, &n| acc.checked_add(n)) else {
        return r.issue("inner", messages::field_overflow("inner"), None);
    };
    for (i, (input, n)) in inputs.iter().zip(inner).enumerate() {
        r.read_item(Alias::No, "inputs", i, input, elem, &[*outer, *n], "outer*inner[i]");
    }
    r.write("dst", dst, elem, &[*outer, row], "outer*sum(inner)");
}

pub(super) fn gather<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Gather { table, indices, dst, num_indices, row_len, vocab, index_dtype } = t else {
        unreachable!("gather called on {:?}", t.kind())
    };
    // Any row may be looked up, so the whole table is read.
    r.read("table", table, F32, &[*vocab, *row_len], "vocab*row_len");
    if r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES) {
        r.read("indices", indices, Elem::Exact(*index_dtype), &[*num_indices], "num_indices");
    }
    r.write("dst", dst, F32, &[*num_indices, *row_len], "num_indices*row_len");
}

pub(super) fn gather_axis<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::GatherAxis { src, indices, dst, outer, axis_dim, inner, num_indices, elem_bytes, index_dtype } = t
    else {
        unreachable!("gather_axis called on {:?}", t.kind())
    };
    let index_ok = r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES);
    let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
    r.read("src", src, elem, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
    if index_ok {
        r.read("indices", indices, Elem::Exact(*index_dtype), &[*num_indices], "num_indices");
    }
    r.write("dst", dst, elem, &[*outer, *num_indices, *inner], "outer*num_indices*inner");
}

/// Writes `[batch, new_len, row]` into rows `pos..pos + new_len` of each
/// batch of a `[batch, max_len, row]` cache; the other rows are untouched.
pub(super) fn kv_append<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::KvAppend { src, cache, batch, new_len, max_len, row, pos, elem_bytes } = t else {
        unreachable!("kv_append called on {:?}", t.kind())
    };
    r.require(pos.checked_add(*new_len).is_some_and(|end| end <= *max_len), "pos", || {
        messages::kv_append_past_end(*pos, *new_len, *max_len)
    });
    let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
    r.read("src", src, elem, &[*batch, *new_len, *row], "batch*new_len*row");
    let eb = *elem_bytes;
    let cache_rows = (|| {
        let row_bytes = row.checked_mul(eb)?;
        Pattern::strided(
            pos.checked_mul(row_bytes)?,
            *batch,
            max_len.checked_mul(row_bytes)?,
            new_len.checked_mul(row_bytes)?,
        )
    })();
    r.strided(Dir::Write, "cache", cache, elem, cache_rows, "rows pos..pos+new_len of batch*max_len*row");
}

pub(super) fn kv_write<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::KvWrite { src, cache, pos, new_len, max_len, row, elem_bytes } = t else {
        unreachable!("kv_write called on {:?}", t.kind())
    };
    r.require(new_len <= max_len, "new_len", || messages::step_longer_than_cache(*new_len, *max_len));
    r.read("pos", pos, I64, &[1], "1");
    let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
    r.read("src", src, elem, &[*new_len, *row], "new_len*row");
    // The rows written depend on the run-time position; every other row
    // keeps its bytes, so the whole cache is read and written.
    r.update("cache", cache, elem, &[*max_len, *row], "max_len*row");
}
