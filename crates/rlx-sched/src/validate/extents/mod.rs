//! The extent rules: for every thunk kind, which operands it reads and
//! writes, how many bytes of which element type, how inputs may overlap
//! outputs, and which field values are consistent.
//!
//! One `match` over [`Thunk`] without a `_` arm, so a new kind does not
//! compile until it has rules. All arithmetic is checked: a product that
//! overflows is reported, never wrapped and never a panic.

mod attention;
mod conv;
mod elementwise;
mod gather_scatter;
mod gemm;
mod movement;
mod norm;
mod recurrent;
mod reduce;
mod sample;

use super::access::{Access, Alias, Dir, Elem, Issue, Pattern};
use super::messages;
use crate::dtype::DType;
use crate::thunk::Thunk;

/// Collects the accesses and field issues of one thunk.
pub(crate) struct Rules<'a, O> {
    pub accesses: Vec<Access<'a, O>>,
    pub issues: Vec<Issue>,
}

/// The product of `dims`, `None` on overflow. A zero factor makes it zero
/// whatever the others are.
pub(crate) fn product(dims: &[usize]) -> Option<usize> {
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// The largest flat index `sum((dims[i] - 1) * strides[i])` of a strided
/// walk over non-empty `dims`; `None` on overflow.
pub(crate) fn max_index(dims: &[usize], strides: &[usize]) -> Option<usize> {
    dims.iter().zip(strides).try_fold(0usize, |acc, (&d, &s)| acc.checked_add(d.saturating_sub(1).checked_mul(s)?))
}

impl<'a, O> Rules<'a, O> {
    fn new() -> Self {
        Rules { accesses: Vec::new(), issues: Vec::new() }
    }

    pub(crate) fn issue(&mut self, field: &'static str, message: String, hint: Option<String>) {
        self.issues.push(Issue { field, message, hint });
    }

    /// Records an issue at `field` unless `ok`.
    pub(crate) fn require(&mut self, ok: bool, field: &'static str, message: impl FnOnce() -> String) {
        if !ok {
            self.issue(field, message(), None);
        }
    }

    /// Records an issue with a hint at `field` unless `ok`.
    pub(crate) fn require_hint(
        &mut self,
        ok: bool,
        field: &'static str,
        message: impl FnOnce() -> String,
        hint: impl FnOnce() -> String,
    ) {
        if !ok {
            self.issue(field, message(), Some(hint()));
        }
    }

    /// An access of `product(dims)` contiguous elements.
    fn dense_access(
        &mut self,
        dir: Dir,
        alias: Alias,
        field: &'static str,
        index: Option<usize>,
        op: &'a O,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        let elems = product(dims);
        let bytes = elems.and_then(|n| n.checked_mul(elem.size()));
        match (elems, bytes) {
            (Some(elems), Some(bytes)) => self.accesses.push(Access {
                field,
                index,
                op,
                dir,
                alias,
                elem,
                pattern: Pattern::dense(bytes),
                formula,
                elems: Some(elems),
            }),
            _ => self.issue(field, messages::extent_overflow(field, formula), Some(messages::overflow_hint())),
        }
    }

    /// Reads `product(dims)` elements; the input never overlaps an output.
    pub(crate) fn read(&mut self, field: &'static str, op: &'a O, elem: Elem, dims: &[usize], formula: &'static str) {
        self.dense_access(Dir::Read, Alias::No, field, None, op, elem, dims, formula);
    }

    /// Reads `product(dims)` elements that may overlap an output as `alias` says.
    pub(crate) fn read_alias(
        &mut self,
        alias: Alias,
        field: &'static str,
        op: &'a O,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        self.dense_access(Dir::Read, alias, field, None, op, elem, dims, formula);
    }

    /// Reads element `index` of an operand list.
    pub(crate) fn read_item(
        &mut self,
        alias: Alias,
        field: &'static str,
        index: usize,
        op: &'a O,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        self.dense_access(Dir::Read, alias, field, Some(index), op, elem, dims, formula);
    }

    /// Reads an optional operand (`none` reads nothing).
    pub(crate) fn read_opt(
        &mut self,
        field: &'static str,
        op: &'a Option<O>,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        if let Some(op) = op {
            self.read(field, op, elem, dims, formula);
        }
    }

    pub(crate) fn write(&mut self, field: &'static str, op: &'a O, elem: Elem, dims: &[usize], formula: &'static str) {
        self.dense_access(Dir::Write, Alias::No, field, None, op, elem, dims, formula);
    }

    pub(crate) fn update(&mut self, field: &'static str, op: &'a O, elem: Elem, dims: &[usize], formula: &'static str) {
        self.dense_access(Dir::ReadWrite, Alias::No, field, None, op, elem, dims, formula);
    }

    /// A strided access; `pattern` is `None` when computing it overflowed.
    pub(crate) fn strided(
        &mut self,
        dir: Dir,
        field: &'static str,
        op: &'a O,
        elem: Elem,
        pattern: Option<Pattern>,
        formula: &'static str,
    ) {
        match pattern {
            Some(pattern) => self.accesses.push(Access {
                field,
                index: None,
                op,
                dir,
                alias: Alias::No,
                elem,
                pattern,
                formula,
                elems: None,
            }),
            None => self.issue(field, messages::extent_overflow(field, formula), Some(messages::overflow_hint())),
        }
    }

    /// Checks that the scratch a kind needs (see `rlx_core::lower`)
    /// is computable; `None` means it overflowed.
    pub(crate) fn scratch(&mut self, field: &'static str, bytes: Option<usize>, formula: &'static str) {
        if bytes.is_none_or(|b| b > isize::MAX as usize / 2) {
            self.issue(field, messages::scratch_overflow(formula), Some(messages::overflow_hint()));
        }
    }

    /// `elem_bytes` of a kind that only moves bytes.
    pub(crate) fn byte_elem(&mut self, field: &'static str, elem_bytes: usize) -> Option<Elem> {
        if matches!(elem_bytes, 1 | 2 | 4 | 8 | 16) {
            Some(Elem::Bytes(elem_bytes))
        } else {
            self.issue(field, messages::bad_elem_bytes(elem_bytes, "1, 2, 4, 8 or 16"), None);
            None
        }
    }

    /// A dtype field that must be one of `allowed`.
    pub(crate) fn dtype_in(&mut self, field: &'static str, dtype: DType, allowed: &[DType]) -> bool {
        let ok = allowed.contains(&dtype);
        if !ok {
            let names: Vec<_> = allowed.iter().map(|d| d.name()).collect();
            self.issue(field, messages::bad_dtype_field(field, dtype, &names.join(", ")), None);
        }
        ok
    }

    /// A float field that must be finite (and not negative if `non_negative`).
    pub(crate) fn finite(&mut self, field: &'static str, x: f32, non_negative: bool) {
        if !x.is_finite() {
            self.issue(field, messages::not_finite(field), None);
        } else if non_negative && x < 0.0 {
            self.issue(field, messages::negative(field), None);
        }
    }
}

/// The accesses and field issues of `t`, by kind.
pub(crate) fn rules<O>(t: &Thunk<O>) -> Rules<'_, O> {
    let mut r = Rules::new();
    match t {
        Thunk::Sgemm { a, b, c, m, k, n } | Thunk::SgemmT { a, b, c, m, k, n, .. } => {
            gemm::gemm(&mut r, a, b, c, [*m, *k, *n], super::access::F32);
        }
        Thunk::SgemmF16 { a, b, c, m, k, n } => gemm::gemm(&mut r, a, b, c, [*m, *k, *n], Elem::Exact(DType::F16)),
        Thunk::SgemmBf16 { a, b, c, m, k, n } => gemm::gemm(&mut r, a, b, c, [*m, *k, *n], Elem::Exact(DType::Bf16)),
        Thunk::BatchedSgemm { .. } => gemm::batched_sgemm(&mut r, t),
        Thunk::FusedMmBiasAct { .. } => gemm::fused_mm_bias_act(&mut r, t),
        Thunk::PackedGemm { .. } => gemm::packed_gemm(&mut r, t),
        Thunk::PackedGemmHalf { .. } => gemm::packed_gemm_half(&mut r, t),
        Thunk::IntGemm { .. } => gemm::int_gemm(&mut r, t),
        Thunk::IntGemmPacked { .. } => gemm::int_gemm_packed(&mut r, t),
        Thunk::Requantize { .. } => gemm::requantize(&mut r, t),
        Thunk::DynamicQuantize { .. } => gemm::dynamic_quantize(&mut r, t),
        Thunk::BiasAdd { .. } => gemm::bias_add(&mut r, t),
        Thunk::BinaryFull { .. } => elementwise::binary_full(&mut r, t),
        Thunk::ElementwiseRegion { .. } => elementwise::elementwise_region(&mut r, t),
        Thunk::ActivationInPlace { data, len, act: _ } => r.update("data", data, super::access::F32, &[*len], "len"),
        Thunk::Activation { src, dst, len, act: _ } => {
            r.read_alias(Alias::Exact, "src", src, super::access::F32, &[*len], "len");
            r.write("dst", dst, super::access::F32, &[*len], "len");
        }
        Thunk::Fma { .. } => elementwise::fma(&mut r, t),
        Thunk::Compare { .. } => elementwise::compare(&mut r, t),
        Thunk::Where { .. } => elementwise::select(&mut r, t),
        Thunk::CastF32ToI64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F32, DType::I64),
        Thunk::CastF32ToF64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F32, DType::F64),
        Thunk::CastF64ToF32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F64, DType::F32),
        Thunk::CastF64ToI64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F64, DType::I64),
        Thunk::CastF64ToI32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F64, DType::I32),
        Thunk::CastF64ToBool { src, dst, len } => cast(&mut r, src, dst, *len, DType::F64, DType::Bool),
        Thunk::CastI64ToI32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::I64, DType::I32),
        Thunk::CastI64ToF64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::I64, DType::F64),
        Thunk::CastI32ToF64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::I32, DType::F64),
        Thunk::CastF32ToF16 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F32, DType::F16),
        Thunk::CastF16ToF32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F16, DType::F32),
        Thunk::CastF32ToBf16 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F32, DType::Bf16),
        Thunk::CastBf16ToF32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::Bf16, DType::F32),
        Thunk::CastF32ToI32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::F32, DType::I32),
        Thunk::CastI64ToF32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::I64, DType::F32),
        Thunk::CastBoolToI32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::Bool, DType::I32),
        Thunk::CastI32ToF32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::I32, DType::F32),
        Thunk::CastI32ToI64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::I32, DType::I64),
        Thunk::CastI32ToBool { src, dst, len } => cast(&mut r, src, dst, *len, DType::I32, DType::Bool),
        Thunk::CastI64ToBool { src, dst, len } => cast(&mut r, src, dst, *len, DType::I64, DType::Bool),
        Thunk::CastBoolToI64 { src, dst, len } => cast(&mut r, src, dst, *len, DType::Bool, DType::I64),
        Thunk::CastBoolToF32 { src, dst, len } => cast(&mut r, src, dst, *len, DType::Bool, DType::F32),
        Thunk::CastF32ToBool { src, dst, len } => cast(&mut r, src, dst, *len, DType::F32, DType::Bool),
        Thunk::CastGeneric { src, dst, len, src_dtype, dst_dtype } => {
            cast(&mut r, src, dst, *len, *src_dtype, *dst_dtype);
        }
        Thunk::Copy { src, dst, len } => movement::copy(&mut r, src, dst, *len, Elem::Bytes(4)),
        Thunk::CopyF64 { src, dst, len } => movement::copy(&mut r, src, dst, *len, Elem::Exact(DType::F64)),
        Thunk::CopyI64 { src, dst, len } => movement::copy(&mut r, src, dst, *len, super::access::I64),
        Thunk::Narrow { .. } => movement::narrow(&mut r, t),
        Thunk::Transpose { .. } => movement::transpose(&mut r, t),
        Thunk::Concat { .. } => movement::concat(&mut r, t),
        Thunk::Gather { .. } => movement::gather(&mut r, t),
        Thunk::GatherAxis { .. } => movement::gather_axis(&mut r, t),
        Thunk::KvAppend { .. } => movement::kv_append(&mut r, t),
        Thunk::KvWrite { .. } => movement::kv_write(&mut r, t),
        Thunk::GatherElements { .. } => gather_scatter::gather_elements(&mut r, t),
        Thunk::GatherNd { .. } => gather_scatter::gather_nd(&mut r, t),
        Thunk::ScatterElements { .. } => gather_scatter::scatter_elements(&mut r, t),
        Thunk::ScatterNd { .. } => gather_scatter::scatter_nd(&mut r, t),
        Thunk::GridSample { .. } => sample::grid_sample(&mut r, t),
        Thunk::LayerNorm { .. } => norm::layer_norm(&mut r, t),
        Thunk::RmsNorm { .. } => norm::rms_norm(&mut r, t),
        Thunk::FusedResidualLN { .. } => norm::fused_residual_ln(&mut r, t),
        Thunk::FusedResidualRmsNorm { .. } => norm::fused_residual_rms_norm(&mut r, t),
        Thunk::BatchNormInference { .. } => norm::batch_norm_inference(&mut r, t),
        Thunk::Softmax { src, dst, rows, cols } => {
            r.read_alias(Alias::Exact, "src", src, super::access::F32, &[*rows, *cols], "rows*cols");
            r.write("dst", dst, super::access::F32, &[*rows, *cols], "rows*cols");
        }
        Thunk::Attention { .. } => attention::attention(&mut r, t),
        Thunk::Rope { .. } => norm::rope(&mut r, t),
        Thunk::RopeAt { .. } => norm::rope_at(&mut r, t),
        Thunk::CachedAttention { .. } => attention::cached_attention(&mut r, t),
        Thunk::Reduce { .. } => reduce::reduce(&mut r, t),
        Thunk::ArgReduce { .. } => reduce::arg_reduce(&mut r, t),
        Thunk::Cumsum { .. } => reduce::cumsum(&mut r, t),
        Thunk::Cumulative { .. } => reduce::cumulative(&mut r, t),
        Thunk::TopK { .. } | Thunk::TopKI64 { .. } => reduce::top_k(&mut r, t),
        Thunk::Conv2D { .. } => conv::conv2d(&mut r, t),
        Thunk::IntConv2D { .. } => conv::int_conv2d(&mut r, t),
        Thunk::QLinearConv2D { .. } => conv::qlinear_conv2d(&mut r, t),
        Thunk::Pool2D { .. } | Thunk::BlockedPool2D { .. } => conv::pool2d(&mut r, t),
        Thunk::Col2Im { .. } => conv::col2im(&mut r, t),
        Thunk::Resize { .. } => conv::resize(&mut r, t),
        Thunk::BlockedConv2D { .. } => conv::conv2d_blocked(&mut r, t),
        Thunk::BlockedConv2DHalf { .. } => conv::conv2d_blocked_half(&mut r, t),
        Thunk::WinogradConv2D { .. } => conv::conv2d_winograd(&mut r, t),
        Thunk::ToBlocked { .. } | Thunk::FromBlocked { .. } => conv::reorder(&mut r, t),
        Thunk::Recurrent { .. } => recurrent::recurrent(&mut r, t),
        Thunk::Nop {} => {}
    }
    r
}

/// A cast reads `len` elements of `from` and writes `len` of `to`; it runs
/// in place only when both have the same size.
fn cast<'a, O>(r: &mut Rules<'a, O>, src: &'a O, dst: &'a O, len: usize, from: DType, to: DType) {
    let alias = if from.size() == to.size() { Alias::Exact } else { Alias::No };
    r.read_alias(alias, "src", src, Elem::Exact(from), &[len], "len");
    r.write("dst", dst, Elem::Exact(to), &[len], "len");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_short_circuit_on_zero_and_detect_overflow() {
        assert_eq!(product(&[]), Some(1));
        assert_eq!(product(&[3, 4]), Some(12));
        assert_eq!(product(&[usize::MAX, 0, usize::MAX]), Some(0));
        assert_eq!(product(&[usize::MAX, 2]), None);
    }

    #[test]
    fn max_index_is_the_last_coordinate_dotted_with_strides() {
        assert_eq!(max_index(&[2, 3], &[3, 1]), Some(5));
        assert_eq!(max_index(&[2, 3], &[0, 1]), Some(2));
        assert_eq!(max_index(&[usize::MAX, 2], &[2, 1]), None);
    }
}
