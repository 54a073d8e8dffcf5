//! Kinds that move bytes: copies, row copies, permutations, concatenation,
//! padding, gathers, the KV-cache writes, `Resize` and the conversions into
//! and out of the blocked channel layout.

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK};
use rlx_core::plan::{
    pad_out_dims, resize_axis_scale, resize_scratch_bytes_checked, resize_taps, resize_weighted, PAD_MAX_RANK,
};

use super::{max_index, product, Extents, Rules};
use crate::dtype::DType;
use crate::ops::{PadMode, ResizeMode};
use crate::thunk::{
    Concat, Copy, CopyF64, CopyI64, FromBlocked, Gather, GatherAxis, KvAppend, KvWrite, Narrow, Nop, Pad, Resize,
    ToBlocked, Transpose,
};
use crate::validate::access::{Alias, Dir, Elem, Pattern, F32, I64};
use crate::validate::messages;

/// The dtypes an index operand may have.
const INDEX_DTYPES: &[DType] = &[DType::I64, DType::I32, DType::F32];

/// A memmove: source and destination may overlap anywhere.
fn copy<'a, O>(r: &mut Rules<'a, O>, src: &'a O, dst: &'a O, len: usize, elem: Elem) {
    r.read_alias(Alias::Any, "src", src, elem, &[len], "len");
    r.write("dst", dst, elem, &[len], "len");
}

/// `outer` rows of `inner` elements, `stride` elements apart.
fn rows(outer: usize, stride: usize, inner: usize, elem_bytes: usize) -> Option<Pattern> {
    Pattern::strided(0, outer, stride.checked_mul(elem_bytes)?, inner.checked_mul(elem_bytes)?)
}

/// `Resize`: a positive finite scale unless `by_size`, a non-empty source when there is
/// output to read it for, a finite `cubic_a` and roi, antialias only for
/// linear and cubic, `exclude_outside` not for nearest (the reference
/// renormalizes a lone excluded tap by 0), the weighted path's table in
/// scratch, the extents.
impl<O> Extents<O> for Resize<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Resize {
            src,
            dst,
            outer,
            in_len,
            out_len,
            inner,
            scale,
            by_size,
            mode,
            cubic_a,
            exclude_outside,
            antialias,
            roi_start,
            roi_end,
            ..
        } = self;
        r.require(*by_size || (scale.is_finite() && *scale > 0.0), "scale", || {
            format!("`scale` is {scale}; it must be positive and finite (or `by_size: true`)")
        });
        r.require(*in_len > 0 || *out_len == 0, "in_len", || "`in_len` is 0 but the output reads it".to_string());
        r.finite("cubic_a", *cubic_a, false);
        r.finite("roi_start", *roi_start, false);
        r.finite("roi_end", *roi_end, false);
        let linear_or_cubic = matches!(mode, ResizeMode::Linear | ResizeMode::Cubic);
        r.require(!*antialias || linear_or_cubic, "antialias", || messages::resize_nearest_field("antialias", *mode));
        r.require(!*exclude_outside || linear_or_cubic, "exclude_outside", || {
            messages::resize_nearest_field("exclude_outside", *mode)
        });
        let shape = self.shape();
        let scale_ok = *by_size || (scale.is_finite() && *scale > 0.0);
        if scale_ok && *out_len > 0 && *in_len > 0 && resize_weighted(*mode, *antialias) {
            let s = resize_axis_scale(*in_len, *out_len, *scale, *by_size);
            if resize_taps(*mode, *antialias, s).is_none() {
                r.issue("scale", messages::resize_filter_too_wide(s), None);
            } else {
                r.scratch("out_len", resize_scratch_bytes_checked(&shape), "out_len*(taps+1)*8");
            }
        }
        r.read("src", src, F32, &[*outer, *in_len, *inner], "outer*in_len*inner");
        r.write("dst", dst, F32, &[*outer, *out_len, *inner], "outer*out_len*inner");
    }
}

impl<O> Extents<O> for Narrow<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Narrow { src, dst, outer, src_stride, dst_stride, inner, elem_bytes } = self;
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
}

impl<O> Extents<O> for Transpose<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes } = self;
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
}

impl<O> Extents<O> for Concat<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Concat { inputs, dst, outer, inner, elem_bytes } = self;
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
}

/// `Pad`: 1 to `PAD_MAX_RANK` axes with a pad pair each, `value` only in
/// `constant` mode, a source to copy from whenever another mode has output
/// to write, `reflect` pads below their axis (ONNX's rule, which also
/// keeps each mirror image inside the source), the extents.
impl<O> Extents<O> for Pad<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Pad { src, value, dst, dims, before, after, mode, elem_bytes } = self;
        let rank = dims.len();
        r.require(rank > 0, "dims", || messages::empty_rank("dims"));
        r.require(rank <= PAD_MAX_RANK, "dims", || messages::pad_rank(rank));
        r.require(before.len() == rank, "before", || messages::rank_mismatch("before", before.len(), "dims", rank));
        r.require(after.len() == rank, "after", || messages::rank_mismatch("after", after.len(), "dims", rank));
        r.require_hint(
            value.is_none() || *mode == PadMode::Constant,
            "value",
            || messages::pad_value_unused(*mode),
            messages::pad_value_hint,
        );
        let elem = r.byte_elem("elem_bytes", *elem_bytes);
        if before.len() != rank || after.len() != rank {
            return;
        }
        let Some(out_dims) = pad_out_dims(dims, before, after) else {
            return r.issue("after", messages::field_overflow("after"), None);
        };
        let out_empty = out_dims.contains(&0);
        if *mode != PadMode::Constant && !out_empty {
            if let Some(d) = dims.iter().position(|&n| n == 0) {
                r.issue("dims", messages::pad_empty_source(d, *mode), None);
            }
        }
        if *mode == PadMode::Reflect {
            for (d, &len) in dims.iter().enumerate() {
                for (field, pads) in [("before", before), ("after", after)] {
                    let wide = pads[d] > 0 && pads[d] >= len;
                    r.require(!wide, field, || messages::pad_reflect_too_wide(field, d, pads[d], len));
                }
            }
        }
        let Some(elem) = elem else { return };
        // An empty output reads nothing.
        let read: &[usize] = if out_empty { &[0] } else { dims };
        r.read("src", src, elem, read, "product(dims)");
        r.read_opt("value", value, elem, &[1], "1");
        r.write("dst", dst, elem, &out_dims, "product(dims + before + after)");
    }
}

impl<O> Extents<O> for Gather<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Gather { table, indices, dst, num_indices, row_len, vocab, index_dtype } = self;
        // Any row may be looked up, so the whole table is read.
        r.read("table", table, F32, &[*vocab, *row_len], "vocab*row_len");
        if r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES) {
            r.read("indices", indices, Elem::Exact(*index_dtype), &[*num_indices], "num_indices");
        }
        r.write("dst", dst, F32, &[*num_indices, *row_len], "num_indices*row_len");
    }
}

impl<O> Extents<O> for GatherAxis<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let GatherAxis { src, indices, dst, outer, axis_dim, inner, num_indices, elem_bytes, index_dtype } = self;
        let index_ok = r.dtype_in("index_dtype", *index_dtype, INDEX_DTYPES);
        let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
        r.read("src", src, elem, &[*outer, *axis_dim, *inner], "outer*axis_dim*inner");
        if index_ok {
            r.read("indices", indices, Elem::Exact(*index_dtype), &[*num_indices], "num_indices");
        }
        r.write("dst", dst, elem, &[*outer, *num_indices, *inner], "outer*num_indices*inner");
    }
}

/// Writes `[batch, new_len, row]` into rows `pos..pos + new_len` of each
/// batch of a `[batch, max_len, row]` cache; the other rows are untouched.
impl<O> Extents<O> for KvAppend<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let KvAppend { src, cache, batch, new_len, max_len, row, pos, elem_bytes } = self;
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
}

impl<O> Extents<O> for KvWrite<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let KvWrite { src, cache, pos, new_len, max_len, row, elem_bytes } = self;
        r.require(new_len <= max_len, "new_len", || messages::step_longer_than_cache(*new_len, *max_len));
        r.read("pos", pos, I64, &[1], "1");
        let Some(elem) = r.byte_elem("elem_bytes", *elem_bytes) else { return };
        r.read("src", src, elem, &[*new_len, *row], "new_len*row");
        // The rows written depend on the run-time position; every other row
        // keeps its bytes, so the whole cache is read and written.
        r.update("cache", cache, elem, &[*max_len, *row], "max_len*row");
    }
}

impl<O> Extents<O> for Copy<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        copy(r, &self.src, &self.dst, self.len, Elem::Bytes(4));
    }
}

impl<O> Extents<O> for CopyF64<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        copy(r, &self.src, &self.dst, self.len, Elem::Exact(DType::F64));
    }
}

impl<O> Extents<O> for CopyI64<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        copy(r, &self.src, &self.dst, self.len, I64);
    }
}

/// `[n, c, hw]` plain on one side, blocked on the other.
fn reorder<'a, O>(r: &mut Rules<'a, O>, src: &'a O, dst: &'a O, [n, c, hw]: [usize; 3], to_blocked: bool) {
    let plain = [n, c, hw];
    let blocked = [n, channel_blocks(c), hw, CHANNEL_BLOCK];
    if to_blocked {
        r.read("src", src, F32, &plain, "n*c*hw");
        r.write("dst", dst, F32, &blocked, "n*ceil(c/16)*hw*16");
    } else {
        r.read("src", src, F32, &blocked, "n*ceil(c/16)*hw*16");
        r.write("dst", dst, F32, &plain, "n*c*hw");
    }
}

impl<O> Extents<O> for ToBlocked<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        reorder(r, &self.src, &self.dst, [self.n, self.c, self.hw], true);
    }
}

impl<O> Extents<O> for FromBlocked<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        reorder(r, &self.src, &self.dst, [self.n, self.c, self.hw], false);
    }
}

/// `Nop` touches nothing.
impl<O> Extents<O> for Nop {
    fn rules<'a>(&'a self, _: &mut Rules<'a, O>) {}
}
