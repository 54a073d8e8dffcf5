//! Matrix products and the bias add.

use rlx_core::plan::{gemm_temp_bytes, half_gemm_scratch_bytes};

use super::{Extents, Rules};
use crate::dtype::DType;
use crate::thunk::{
    BatchedSgemm, BiasAdd, FusedMmBiasAct, PackedGemm, PackedGemmHalf, PackedGemmQ8, Sgemm, SgemmBf16, SgemmF16, SgemmT,
};
use crate::validate::access::{Alias, Elem, F32};
use crate::validate::messages;

/// `c[m,n] = a[m,k] @ b[k,n]` with `b` of `b_elem`. The output may overlap
/// either input anywhere: the caller goes through a temporary
/// (`plan::gemm_needs_temp`).
fn gemm<'a, O>(r: &mut Rules<'a, O>, a: &'a O, b: &'a O, c: &'a O, [m, k, n]: [usize; 3], b_elem: Elem) {
    r.read_alias(Alias::Any, "a", a, F32, &[m, k], "m*k");
    r.read_alias(Alias::Any, "b", b, b_elem, &[k, n], "k*n");
    r.write("c", c, F32, &[m, n], "m*n");
    if b_elem == F32 {
        // The temporary is as large as `c`.
        r.scratch("c", gemm_temp_bytes(m, n), "m*n*4");
    } else {
        // The temporary, and the widened weights when `m` is large.
        r.scratch("c", half_gemm_scratch_bytes(m, k, n, true), "(m*n + k*n if m > 8)*4");
    }
}

/// The accesses of a product with a prepacked weight of `w_elem`.
fn packed<'a, O>(
    r: &mut Rules<'a, O>,
    [a, w, c]: [&'a O; 3],
    bias: &'a Option<O>,
    [m, k, n]: [usize; 3],
    w_elem: Elem,
) {
    r.read_alias(Alias::Any, "a", a, F32, &[m, k], "m*k");
    match crate::pack::packed_len(k, n) {
        Some(len) => r.read("w", w, w_elem, &[len], "k*ceil(n/16)*16"),
        None => r.issue("w", messages::extent_overflow("w", "k*ceil(n/16)*16"), Some(messages::overflow_hint())),
    }
    r.read_opt("bias", bias, F32, &[n], "n");
    r.write("c", c, F32, &[m, n], "m*n");
    r.scratch("c", gemm_temp_bytes(m, n), "m*n*4");
}

impl<O> Extents<O> for BatchedSgemm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } = self;
        let (a_count, a_formula) = if *a_bcast { (1, "m*k (a_bcast)") } else { (*batch, "batch*m*k") };
        let (b_count, b_formula) = if *b_bcast { (1, "k*n (b_bcast)") } else { (*batch, "batch*k*n") };
        r.read_alias(Alias::Any, "a", a, F32, &[a_count, *m, *k], a_formula);
        r.read_alias(Alias::Any, "b", b, F32, &[b_count, *k, *n], b_formula);
        r.write("c", c, F32, &[*batch, *m, *n], "batch*m*n");
        r.scratch("c", batch.checked_mul(*m).and_then(|rows| gemm_temp_bytes(rows, *n)), "batch*m*n*4");
    }
}

/// `c = act(a @ w + bias)`. `a` and `w` may overlap `c` (a temporary is
/// used), but `bias` is read after the product is stored, so it must not.
impl<O> Extents<O> for FusedMmBiasAct<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let FusedMmBiasAct { a, w, bias, c, m, k, n, act: _ } = self;
        r.read_alias(Alias::Any, "a", a, F32, &[*m, *k], "m*k");
        r.read_alias(Alias::Any, "w", w, F32, &[*k, *n], "k*n");
        r.read("bias", bias, F32, &[*n], "n");
        r.write("c", c, F32, &[*m, *n], "m*n");
        r.scratch("c", gemm_temp_bytes(*m, *n), "m*n*4");
    }
}

/// `c = act(a @ unpack(w) + bias)`: `w` holds a prepacked matrix (the
/// importer writes it to the weights file; any bytes of the right size are
/// a valid packing, so `w` may be any buffer). As for `FusedMmBiasAct`, `a`
/// may overlap `c` (a temporary is used); `w` and `bias` must not.
impl<O> Extents<O> for PackedGemm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let PackedGemm { a, w, bias, c, m, k, n, act: _ } = self;
        packed(r, [a, w, c], bias, [*m, *k, *n], F32);
    }
}

/// `PackedGemm` with the packed weight in f16 or bf16 (`w_dtype`).
impl<O> Extents<O> for PackedGemmHalf<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let PackedGemmHalf { a, w, bias, c, m, k, n, act: _, w_dtype } = self;
        if r.dtype_in("w_dtype", *w_dtype, &[DType::F16, DType::Bf16]) {
            packed(r, [a, w, c], bias, [*m, *k, *n], Elem::Exact(*w_dtype));
        }
    }
}

/// `PackedGemm` with the weight in the Q8 layout of `rlx_core::q8`
/// (bytes): whole blocks of 32 steps of `k`, so `k` must be a multiple of
/// 32.
impl<O> Extents<O> for PackedGemmQ8<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let PackedGemmQ8 { a, w, bias, c, m, k, n, act: _ } = self;
        let (m, k, n) = (*m, *k, *n);
        r.read_alias(Alias::Any, "a", a, F32, &[m, k], "m*k");
        if !k.is_multiple_of(crate::q8::BLOCK) {
            r.issue("k", messages::q8_block_multiple(k, crate::q8::BLOCK), Some(messages::q8_block_hint()));
        } else {
            match crate::q8::q8_len(k, n) {
                Some(len) => r.read("w", w, Elem::Exact(DType::U8), &[len], "ceil(n/16)*(k/32)*576"),
                None => r.issue(
                    "w",
                    messages::extent_overflow("w", "ceil(n/16)*(k/32)*576"),
                    Some(messages::overflow_hint()),
                ),
            }
        }
        r.read_opt("bias", bias, F32, &[n], "n");
        r.write("c", c, F32, &[m, n], "m*n");
        r.scratch("c", gemm_temp_bytes(m, n), "m*n*4");
    }
}

impl<O> Extents<O> for BiasAdd<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BiasAdd { src, bias, dst, rows, cols } = self;
        r.read_alias(Alias::Exact, "src", src, F32, &[*rows, *cols], "rows*cols");
        r.read("bias", bias, F32, &[*cols], "cols");
        r.write("dst", dst, F32, &[*rows, *cols], "rows*cols");
    }
}

impl<O> Extents<O> for Sgemm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Sgemm { a, b, c, m, k, n } = self;
        gemm(r, a, b, c, [*m, *k, *n], F32);
    }
}

impl<O> Extents<O> for SgemmT<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let SgemmT { a, b, c, m, k, n, .. } = self;
        gemm(r, a, b, c, [*m, *k, *n], F32);
    }
}

impl<O> Extents<O> for SgemmF16<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let SgemmF16 { a, b, c, m, k, n } = self;
        gemm(r, a, b, c, [*m, *k, *n], Elem::Exact(DType::F16));
    }
}

impl<O> Extents<O> for SgemmBf16<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let SgemmBf16 { a, b, c, m, k, n } = self;
        gemm(r, a, b, c, [*m, *k, *n], Elem::Exact(DType::Bf16));
    }
}
