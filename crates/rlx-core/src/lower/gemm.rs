//! GEMM family. The aliasing temporary: a GEMM whose output bytes overlap
//! an input's goes through scratch (`plan::gemm_needs_temp`, byte ranges,
//! not start pointers).

use super::{not_in_family, F32};
use crate::call::{KernelCall as K, QuantElem};
use crate::operand::Operand;
use crate::plan::{
    gemm_needs_temp, half_weight_scratch_elems, int_gemm_packed_scratch_bytes, int_gemm_scratch_bytes,
    packed_gemm_parallel, parallel,
};
use crate::thunk::Thunk;
use crate::DType;

const HALF: usize = 2;

pub(super) fn lower(t: &Thunk<Operand>) -> K {
    match *t {
        Thunk::Sgemm { a, b, c, m, k, n } => {
            if gemm_needs_temp(&a, m * k * F32, &b, k * n * F32, &c, m * n * F32) {
                K::SgemmF32Via { scratch: m * n * F32, a, b, c, m, k, n }
            } else {
                K::SgemmF32 { a, b, c, m, k, n }
            }
        }
        Thunk::SgemmT { a, b, c, m, k, n, ta, tb } => {
            if gemm_needs_temp(&a, m * k * F32, &b, k * n * F32, &c, m * n * F32) {
                K::SgemmTF32Via { scratch: m * n * F32, a, b, c, m, k, n, ta, tb }
            } else {
                K::SgemmTF32 { a, b, c, m, k, n, ta, tb }
            }
        }
        Thunk::SgemmF16 { a, b, c, m, k, n } => half(false, a, b, c, m, k, n),
        Thunk::SgemmBf16 { a, b, c, m, k, n } => half(true, a, b, c, m, k, n),
        Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } => {
            let a_count = if a_bcast { 1 } else { batch };
            let b_count = if b_bcast { 1 } else { batch };
            let c_bytes = batch * m * n * F32;
            let par = batch > 1 && parallel(batch * m * k * n);
            if gemm_needs_temp(&a, a_count * m * k * F32, &b, b_count * k * n * F32, &c, c_bytes) {
                K::BatchedSgemmF32Via { scratch: c_bytes, a, b, c, batch, m, k, n, a_bcast, b_bcast, par }
            } else {
                K::BatchedSgemmF32 { a, b, c, batch, m, k, n, a_bcast, b_bcast, par }
            }
        }
        Thunk::FusedMmBiasAct { a, w, bias, c, m, k, n, act } => {
            let par = parallel(m * n);
            if gemm_needs_temp(&a, m * k * F32, &w, k * n * F32, &c, m * n * F32) {
                K::FusedMmBiasActF32Via { scratch: m * n * F32, a, w, bias, c, m, k, n, act, par }
            } else {
                K::FusedMmBiasActF32 { a, w, bias, c, m, k, n, act, par }
            }
        }
        Thunk::PackedGemm { a, w, bias, c, m, k, n, act } => {
            let par = packed_gemm_parallel(m, k, n);
            // The validator keeps `w` and `bias` apart from `c`: only `a`
            // may overlap it.
            if gemm_needs_temp(&a, m * k * F32, &w, 0, &c, m * n * F32) {
                K::PackedGemmF32Via { scratch: m * n * F32, a, w, bias, c, m, k, n, act, par }
            } else {
                K::PackedGemmF32 { a, w, bias, c, m, k, n, act, par }
            }
        }
        Thunk::PackedGemmHalf { a, w, bias, c, m, k, n, act, w_dtype } => {
            let par = packed_gemm_parallel(m, k, n);
            let bf16 = w_dtype == DType::Bf16;
            if gemm_needs_temp(&a, m * k * F32, &w, 0, &c, m * n * F32) {
                K::PackedGemmHalfVia { scratch: m * n * F32, a, w, bias, c, m, k, n, act, bf16, par }
            } else {
                K::PackedGemmHalf { a, w, bias, c, m, k, n, act, bf16, par }
            }
        }
        Thunk::IntGemmPacked {
            a,
            w,
            w_sums,
            a_zero,
            w_zero,
            scale,
            bias,
            c,
            m,
            k,
            n,
            a_dtype,
            w_zero_len,
            scale_len,
        } => {
            let a_elem = if a_dtype == DType::I8 { QuantElem::I8 } else { QuantElem::U8 };
            let scratch = int_gemm_packed_scratch_bytes(m, k, w_zero.is_some());
            let par = packed_gemm_parallel(m, k, n);
            match scale {
                None => K::IntGemmPacked { scratch, a_elem, a, w, w_sums, a_zero, w_zero, c, m, k, n, w_zero_len, par },
                Some(scale) => K::IntGemmPackedF32 {
                    scratch,
                    a_elem,
                    a,
                    w,
                    w_sums,
                    a_zero,
                    w_zero,
                    scale,
                    bias,
                    c,
                    m,
                    k,
                    n,
                    w_zero_len,
                    scale_len,
                    par,
                },
            }
        }
        Thunk::IntGemm { a, b, a_zero, b_zero, c, batch, m, k, n, a_dtype, b_dtype, b_zero_len, b_bcast } => {
            let elem = |d: DType| if d == DType::I8 { QuantElem::I8 } else { QuantElem::U8 };
            K::IntGemm {
                scratch: int_gemm_scratch_bytes(batch, m, k, n),
                a_elem: elem(a_dtype),
                b_elem: elem(b_dtype),
                a,
                b,
                a_zero,
                b_zero,
                c,
                batch,
                m,
                k,
                n,
                b_zero_len,
                b_bcast,
                par: packed_gemm_parallel(batch * m, k, n),
            }
        }
        Thunk::DynamicQuantize { x, y, scale, zero, len } => {
            K::DynamicQuantize { x, y, scale, zero, len, par: parallel(len) }
        }
        Thunk::Requantize { acc, bias, scale, zero, out, outer, channels, inner, scale_len, out_dtype } => {
            K::Requantize {
                out_elem: if out_dtype == DType::I8 { QuantElem::I8 } else { QuantElem::U8 },
                acc,
                bias,
                scale,
                zero,
                out,
                outer,
                channels,
                inner,
                scale_len,
                par: parallel(outer * channels * inner),
            }
        }
        Thunk::BiasAdd { src, bias, dst, rows, cols } => {
            K::BiasAddF32 { src, bias, dst, rows, cols, par: parallel(rows * cols) }
        }
        _ => not_in_family("gemm", t),
    }
}

/// `SgemmF16` / `SgemmBf16`. Scratch is `[m*n output temporary when
/// aliased][k*n widened weights when m is above the streaming limit]`.
fn half(bf16: bool, a: Operand, b: Operand, c: Operand, m: usize, k: usize, n: usize) -> K {
    let par = parallel(k * n);
    let via = gemm_needs_temp(&a, m * k * F32, &b, k * n * HALF, &c, m * n * F32);
    let temp = if via { m * n } else { 0 };
    let scratch = (temp + half_weight_scratch_elems(m, k, n)) * F32;
    match (bf16, via) {
        (false, true) => K::SgemmF16wVia { scratch, a, b, c, m, k, n, par },
        (false, false) => K::SgemmF16w { a, b, c, m, k, n, scratch, par },
        (true, true) => K::SgemmBf16wVia { scratch, a, b, c, m, k, n, par },
        (true, false) => K::SgemmBf16w { a, b, c, m, k, n, scratch, par },
    }
}
