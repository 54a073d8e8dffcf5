//! Element-wise kinds: binary ops with broadcasting, fused chains, fma,
//! comparisons and selection.

use super::{max_index, product, Extents, Rules};
use crate::dtype::DType;
use crate::ops::{Step, StepArg};
use crate::plan::reads_identically;
use crate::thunk::{BinaryFull, Compare, ElementwiseRegion, Fma, Where};
use crate::validate::access::{Alias, Elem, BYTE_BOOL, F32, I64};
use crate::validate::messages;

/// Exact aliasing when `ok`, none otherwise.
fn exact_if(ok: bool) -> Alias {
    if ok {
        Alias::Exact
    } else {
        Alias::No
    }
}

/// The elements a broadcast operand reads: nothing when the output is empty.
fn read_count(len: usize, n: usize) -> usize {
    if len == 0 {
        0
    } else {
        n
    }
}

/// Checks `out_dims_bcast` against `len`.
fn broadcast_dims<O>(r: &mut Rules<'_, O>, dims: &[usize], len: usize) {
    match product(dims) {
        Some(p) => r.require(p == len, "out_dims_bcast", || messages::bcast_dims_product(p, len)),
        None => r.issue("out_dims_bcast", messages::field_overflow("out_dims_bcast"), None),
    }
}

/// Checks one operand's broadcast strides: same rank as the dims, and the
/// furthest element they reach inside the operand's `n` elements. Returns
/// whether element `i` of the output reads element `i` of the operand, the
/// only broadcast that may run in place (the kernels' own test,
/// `plan::reads_identically`; the overlap check adds that the extents are
/// equal).
fn broadcast_operand<O>(
    r: &mut Rules<'_, O>,
    strides_field: &'static str,
    strides: &[usize],
    len_field: &'static str,
    n: usize,
    dims: &[usize],
    len: usize,
) -> bool {
    if strides.len() != dims.len() {
        r.issue(
            strides_field,
            messages::rank_mismatch(strides_field, strides.len(), "out_dims_bcast", dims.len()),
            None,
        );
        return false;
    }
    if len > 0 {
        match max_index(dims, strides) {
            Some(max) => {
                r.require(max < n, strides_field, || messages::index_past_len(strides_field, max, len_field, n))
            }
            None => r.issue(strides_field, messages::field_overflow(strides_field), None),
        }
    }
    reads_identically(len, n, dims, strides)
}

/// Checks the flat form: broadcasting by `i % n`, which is only a
/// broadcast when `n` divides `len`.
fn flat_operand<O>(r: &mut Rules<'_, O>, len_field: &'static str, n: usize, len: usize) {
    r.require_hint(
        len == 0 || (n > 0 && len.is_multiple_of(n)),
        len_field,
        || messages::flat_len_must_divide(len_field, n, len),
        messages::flat_broadcast_hint,
    );
}

impl<O> Extents<O> for BinaryFull<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BinaryFull {
            lhs,
            rhs,
            dst,
            len,
            lhs_len,
            rhs_len,
            op: _,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
            elem_bytes,
        } = self;
        let (len, ll, rl) = (*len, *lhs_len, *rhs_len);
        let elem = match elem_bytes {
            4 => F32,
            8 => I64,
            other => return r.issue("elem_bytes", messages::bad_elem_bytes(*other, "4 (f32) or 8 (i64)"), None),
        };
        let (lhs_alias, rhs_alias) = if out_dims_bcast.is_empty() {
            for (field, strides) in [("bcast_lhs_strides", bcast_lhs_strides), ("bcast_rhs_strides", bcast_rhs_strides)]
            {
                r.require(strides.is_empty(), field, || messages::strides_without_dims(field));
            }
            flat_operand(r, "lhs_len", ll, len);
            flat_operand(r, "rhs_len", rl, len);
            (exact_if(reads_identically(len, ll, &[], &[])), exact_if(reads_identically(len, rl, &[], &[])))
        } else {
            broadcast_dims(r, out_dims_bcast, len);
            let l = broadcast_operand(r, "bcast_lhs_strides", bcast_lhs_strides, "lhs_len", ll, out_dims_bcast, len);
            let rr = broadcast_operand(r, "bcast_rhs_strides", bcast_rhs_strides, "rhs_len", rl, out_dims_bcast, len);
            (exact_if(l), exact_if(rr))
        };
        r.read_alias(lhs_alias, "lhs", lhs, elem, &[read_count(len, ll)], "lhs_len");
        r.read_alias(rhs_alias, "rhs", rhs, elem, &[read_count(len, rl)], "rhs_len");
        r.write("dst", dst, elem, &[len], "len");
    }
}

impl<O> Extents<O> for ElementwiseRegion<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let ElementwiseRegion { inputs, dst, len, steps } = self;
        r.require(!inputs.is_empty(), "inputs", || messages::no_inputs("ElementwiseRegion"));
        for step in steps {
            if let Step::Binary { arg: StepArg::Input(i), .. } = step {
                r.require(*i < inputs.len(), "steps", || messages::step_input_out_of_range(*i, inputs.len()));
            }
        }
        for (i, input) in inputs.iter().enumerate() {
            r.read_item(Alias::Exact, "inputs", i, input, F32, &[*len], "len");
        }
        r.write("dst", dst, F32, &[*len], "len");
    }
}

impl<O> Extents<O> for Fma<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Fma { a, b, c, dst, len, elem_bytes } = self;
        let elem = match elem_bytes {
            4 => F32,
            8 => Elem::Exact(DType::F64),
            other => return r.issue("elem_bytes", messages::bad_elem_bytes(*other, "4 (f32) or 8 (f64)"), None),
        };
        for (field, op) in [("a", a), ("b", b), ("c", c)] {
            r.read_alias(Alias::Exact, field, op, elem, &[*len], "len");
        }
        r.write("dst", dst, elem, &[*len], "len");
    }
}

impl<O> Extents<O> for Compare<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Compare {
            lhs,
            rhs,
            dst,
            len,
            op: _,
            inputs_i64,
            inputs_elem_bytes,
            dst_elem_bytes,
            lhs_scalar,
            rhs_scalar,
            lhs_len,
            rhs_len,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
        } = self;
        let len = *len;
        let in_elem = match inputs_elem_bytes {
            1 => Some(BYTE_BOOL),
            4 => Some(F32),
            8 => Some(I64),
            other => {
                r.issue("inputs_elem_bytes", messages::bad_elem_bytes(*other, "1 (bool), 4 (f32) or 8 (i64)"), None);
                None
            }
        };
        if in_elem.is_some() {
            r.require(*inputs_i64 == (*inputs_elem_bytes == 8), "inputs_i64", || {
                messages::inputs_i64_mismatch(*inputs_i64, *inputs_elem_bytes)
            });
        }
        let dst_elem = match dst_elem_bytes {
            1 => Some(BYTE_BOOL),
            4 => Some(F32),
            other => {
                r.issue("dst_elem_bytes", messages::bad_elem_bytes(*other, "1 (bool) or 4 (f32)"), None);
                None
            }
        };
        let same_size = inputs_elem_bytes == dst_elem_bytes;
        let operands = [
            ("lhs", "lhs_scalar", *lhs_scalar, "lhs_len", *lhs_len),
            ("rhs", "rhs_scalar", *rhs_scalar, "rhs_len", *rhs_len),
        ];
        for (_, scalar_field, scalar, len_field, n) in operands {
            if scalar {
                r.require(n == 1, len_field, || messages::scalar_len(scalar_field, len_field, n));
            }
        }
        // (elements read, how it may alias the output) per operand.
        let mut reads = [(0usize, Alias::No); 2];
        if out_dims_bcast.is_empty() {
            for (field, strides) in [("bcast_lhs_strides", bcast_lhs_strides), ("bcast_rhs_strides", bcast_rhs_strides)]
            {
                r.require(strides.is_empty(), field, || messages::strides_without_dims(field));
            }
            for (i, (_, _, scalar, len_field, n)) in operands.into_iter().enumerate() {
                if !scalar {
                    r.require(n == len, len_field, || messages::flat_len_must_equal(len_field, n, len));
                }
                let count = if scalar { 1 } else { len };
                reads[i] = (read_count(len, count), exact_if(!scalar && same_size));
            }
        } else {
            broadcast_dims(r, out_dims_bcast, len);
            let strides = [("bcast_lhs_strides", bcast_lhs_strides), ("bcast_rhs_strides", bcast_rhs_strides)];
            for (i, ((_, _, _, len_field, n), (strides_field, s))) in operands.into_iter().zip(strides).enumerate() {
                let identity = broadcast_operand(r, strides_field, s, len_field, n, out_dims_bcast, len);
                reads[i] = (read_count(len, n), exact_if(identity && same_size));
            }
        }
        let (Some(in_elem), Some(dst_elem)) = (in_elem, dst_elem) else { return };
        r.read_alias(reads[0].1, "lhs", lhs, in_elem, &[reads[0].0], "lhs_len");
        r.read_alias(reads[1].1, "rhs", rhs, in_elem, &[reads[1].0], "rhs_len");
        r.write("dst", dst, dst_elem, &[len], "len");
    }
}

/// `Where`: a select of 4- or 8-byte elements by a bool, f32 or i64
/// condition.
impl<O> Extents<O> for Where<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Where {
            cond,
            on_true,
            on_false,
            dst,
            len,
            elem_bytes,
            cond_elem_bytes,
            cond_scalar,
            true_scalar,
            false_scalar,
        } = self;
        let elem = match elem_bytes {
            4 | 8 => Some(Elem::Bytes(*elem_bytes)),
            other => {
                r.issue("elem_bytes", messages::bad_elem_bytes(*other, "4 or 8"), None);
                None
            }
        };
        let cond_elem = match cond_elem_bytes {
            1 => Some(Elem::OneOf(&[DType::Bool, DType::U8, DType::I8])),
            4 => Some(F32),
            8 => Some(I64),
            other => {
                r.issue("cond_elem_bytes", messages::bad_elem_bytes(*other, "1 (bool), 4 (f32) or 8 (i64)"), None);
                None
            }
        };
        let (Some(elem), Some(cond_elem)) = (elem, cond_elem) else { return };
        let len = *len;
        let count = |scalar: bool| read_count(len, if scalar { 1 } else { len });
        let cond_alias = exact_if(!cond_scalar && cond_elem_bytes == elem_bytes);
        r.read_alias(cond_alias, "cond", cond, cond_elem, &[count(*cond_scalar)], "len (1 if cond_scalar)");
        r.read_alias(
            exact_if(!true_scalar),
            "on_true",
            on_true,
            elem,
            &[count(*true_scalar)],
            "len (1 if true_scalar)",
        );
        r.read_alias(
            exact_if(!false_scalar),
            "on_false",
            on_false,
            elem,
            &[count(*false_scalar)],
            "len (1 if false_scalar)",
        );
        r.write("dst", dst, elem, &[len], "len");
    }
}
