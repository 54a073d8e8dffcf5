//! GEMM family. The aliasing temporary: a GEMM whose output bytes overlap
//! an input's goes through scratch (`plan::gemm_needs_temp`, byte ranges,
//! not start pointers).

use super::{Lower, F32};
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::{gemm_needs_temp, gemm_temp_bytes, half_gemm_scratch_bytes, packed_gemm_parallel, parallel};
use crate::thunk::{
    BatchedSgemm, BiasAdd, FusedMmBiasAct, PackedGemm, PackedGemmHalf, PackedGemmQ8, Sgemm, SgemmBf16, SgemmF16, SgemmT,
};
use crate::DType;

const HALF: usize = 2;

impl Lower for Sgemm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Sgemm { a, b, c, m, k, n } = *self;
        Some(if gemm_needs_temp(&a, m * k * F32, &b, k * n * F32, &c, m * n * F32) {
            K::SgemmF32Via { scratch: temp(m, n), a, b, c, m, k, n }
        } else {
            K::SgemmF32 { a, b, c, m, k, n }
        })
    }
}

impl Lower for SgemmT<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let SgemmT { a, b, c, m, k, n, ta, tb } = *self;
        Some(if gemm_needs_temp(&a, m * k * F32, &b, k * n * F32, &c, m * n * F32) {
            K::SgemmTF32Via { scratch: temp(m, n), a, b, c, m, k, n, ta, tb }
        } else {
            K::SgemmTF32 { a, b, c, m, k, n, ta, tb }
        })
    }
}

impl Lower for SgemmF16<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let SgemmF16 { a, b, c, m, k, n } = *self;
        Some(half(false, a, b, c, m, k, n))
    }
}

impl Lower for SgemmBf16<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let SgemmBf16 { a, b, c, m, k, n } = *self;
        Some(half(true, a, b, c, m, k, n))
    }
}

impl Lower for BatchedSgemm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } = *self;
        let a_count = if a_bcast { 1 } else { batch };
        let b_count = if b_bcast { 1 } else { batch };
        let c_bytes = batch * m * n * F32;
        let scratch = temp(batch * m, n);
        let par = batch > 1 && parallel(batch * m * k * n);
        Some(if gemm_needs_temp(&a, a_count * m * k * F32, &b, b_count * k * n * F32, &c, c_bytes) {
            K::BatchedSgemmF32Via { scratch, a, b, c, batch, m, k, n, a_bcast, b_bcast, par }
        } else {
            K::BatchedSgemmF32 { a, b, c, batch, m, k, n, a_bcast, b_bcast, par }
        })
    }
}

impl Lower for FusedMmBiasAct<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let FusedMmBiasAct { a, w, bias, c, m, k, n, act } = *self;
        let par = parallel(m * n);
        Some(if gemm_needs_temp(&a, m * k * F32, &w, k * n * F32, &c, m * n * F32) {
            K::FusedMmBiasActF32Via { scratch: temp(m, n), a, w, bias, c, m, k, n, act, par }
        } else {
            K::FusedMmBiasActF32 { a, w, bias, c, m, k, n, act, par }
        })
    }
}

impl Lower for PackedGemm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let PackedGemm { a, w, bias, c, m, k, n, act } = *self;
        let par = packed_gemm_parallel(m, k, n);
        // The validator keeps `w` and `bias` apart from `c`: only `a` may
        // overlap it.
        Some(if gemm_needs_temp(&a, m * k * F32, &w, 0, &c, m * n * F32) {
            K::PackedGemmF32Via { scratch: temp(m, n), a, w, bias, c, m, k, n, act, par }
        } else {
            K::PackedGemmF32 { a, w, bias, c, m, k, n, act, par }
        })
    }
}

impl Lower for PackedGemmHalf<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let PackedGemmHalf { a, w, bias, c, m, k, n, act, w_dtype } = *self;
        let par = packed_gemm_parallel(m, k, n);
        let bf16 = w_dtype == DType::Bf16;
        Some(if gemm_needs_temp(&a, m * k * F32, &w, 0, &c, m * n * F32) {
            K::PackedGemmHalfVia { scratch: temp(m, n), a, w, bias, c, m, k, n, act, bf16, par }
        } else {
            K::PackedGemmHalf { a, w, bias, c, m, k, n, act, bf16, par }
        })
    }
}

impl Lower for PackedGemmQ8<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let PackedGemmQ8 { a, w, bias, c, m, k, n, act } = *self;
        let par = packed_gemm_parallel(m, k, n);
        Some(if gemm_needs_temp(&a, m * k * F32, &w, 0, &c, m * n * F32) {
            K::PackedGemmQ8Via { scratch: temp(m, n), a, w, bias, c, m, k, n, act, par }
        } else {
            K::PackedGemmQ8 { a, w, bias, c, m, k, n, act, par }
        })
    }
}

impl Lower for BiasAdd<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BiasAdd { src, bias, dst, rows, cols } = *self;
        Some(K::BiasAddF32 { src, bias, dst, rows, cols, par: parallel(rows * cols) })
    }
}

/// The output temporary of a validated GEMM.
fn temp(rows: usize, cols: usize) -> usize {
    gemm_temp_bytes(rows, cols).expect("the validator bounds a GEMM's temporary")
}

/// `SgemmF16` / `SgemmBf16`. Scratch is `[m*n output temporary when
/// aliased][k*n widened weights when m is above the streaming limit]`.
fn half(bf16: bool, a: Operand, b: Operand, c: Operand, m: usize, k: usize, n: usize) -> K {
    let par = parallel(k * n);
    let via = gemm_needs_temp(&a, m * k * F32, &b, k * n * HALF, &c, m * n * F32);
    let scratch = half_gemm_scratch_bytes(m, k, n, via).expect("the validator bounds a half-weight GEMM's scratch");
    match (bf16, via) {
        (false, true) => K::SgemmF16wVia { scratch, a, b, c, m, k, n, par },
        (false, false) => K::SgemmF16w { a, b, c, m, k, n, scratch, par },
        (true, true) => K::SgemmBf16wVia { scratch, a, b, c, m, k, n, par },
        (true, false) => K::SgemmBf16w { a, b, c, m, k, n, scratch, par },
    }
}
