//! One (batch, head) unit of attention: scores, softcap, mask, softmax and
//! the probability-weighted sum of value rows.

use super::{vec_ops, AttentionPath, AttentionScores, AttentionShape, MaskKind};
use crate::kernels::gemm::{pack_rows_f32, pack_transposed_f32, packed_gemm_strided_f32};
use crate::kernels::softmax::row_kernel;
use crate::kernels::variants::variants;
use rlx_core::pack::PANEL;

/// The call's base pointers, shared by the units.
pub(super) struct Ptrs {
    pub q: *const f32,
    pub k: *const f32,
    pub v: *const f32,
    pub mask: *const f32,
    pub out: *mut f32,
    pub scratch: *mut f32,
    /// Steps 2-4 of every unit: a variant this CPU runs.
    pub rows: RowsFn,
}

// SAFETY: units only read `q`, `k`, `v`, `mask` and write disjoint slices
// of `out` and `scratch` (one output head slice and one score matrix per
// unit), so sharing the pointers across pool threads is race-free.
unsafe impl Sync for Ptrs {}

/// One unit's operands: base pointers and row strides, in elements.
struct Operands {
    q: *const f32,
    q_rs: usize,
    k: *const f32,
    k_rs: usize,
    v: *const f32,
    v_rs: usize,
    out: *mut f32,
    out_rs: usize,
}

fn operands(p: &Ptrs, s: &AttentionShape, b: usize, h: usize) -> Operands {
    let kvh = h / s.group();
    let nkv = s.kv_heads.max(1);
    let (dh, dv) = (s.head_dim, s.v_head_dim);
    // Pointer arithmetic only (`wrapping_add`): nothing is dereferenced
    // here, and the offsets stay inside the caller's extents.
    if s.bhsd {
        Operands {
            q: p.q.wrapping_add((b * s.heads + h) * s.seq * dh),
            q_rs: dh,
            k: p.k.wrapping_add((b * nkv + kvh) * s.kv_seq * dh),
            k_rs: dh,
            v: p.v.wrapping_add((b * nkv + kvh) * s.kv_seq * dv),
            v_rs: dv,
            out: p.out.wrapping_add((b * s.heads + h) * s.seq * dv),
            out_rs: dv,
        }
    } else {
        Operands {
            q: p.q.wrapping_add(b * s.seq * s.q_row_stride + h * dh),
            q_rs: s.q_row_stride,
            k: p.k.wrapping_add(b * s.kv_seq * s.k_row_stride + kvh * dh),
            k_rs: s.k_row_stride,
            v: p.v.wrapping_add(b * s.kv_seq * s.v_row_stride + kvh * dv),
            v_rs: s.v_row_stride,
            out: p.out.wrapping_add(b * s.seq * s.heads * dv + h * dv),
            out_rs: s.heads * dv,
        }
    }
}

/// Runs unit `u = b * heads + h`.
///
/// # Safety
///
/// As [`super::attention_f32`]; `u < batch * heads`, and no other thread
/// runs the same unit concurrently.
pub(super) unsafe fn run_unit(p: &Ptrs, s: &AttentionShape, sc: &AttentionScores, path: AttentionPath, u: usize) {
    let (b, h) = (u / s.heads, u % s.heads);
    let (seq, kv) = (s.seq, s.kv_seq);
    let o = operands(p, s, b, h);
    let unit_elems = rlx_core::plan::attention_unit_scratch_elems(s);
    let scores = p.scratch.wrapping_add(u * unit_elems);
    // On the GEMM path, K^T and V packed for the tiled GEMM follow the
    // scores in this unit's scratch.
    let k_packed = scores.wrapping_add(seq * kv);
    let v_packed = k_packed.wrapping_add(s.head_dim * kv.div_ceil(PANEL) * PANEL);
    let ops = vec_ops();
    if kv == 0 {
        // No keys: every softmax row is empty, every output row zero.
        for i in 0..seq {
            // SAFETY: output row `i` of this head, written only here.
            unsafe { std::ptr::write_bytes(o.out.add(i * o.out_rs), 0, s.v_head_dim) };
        }
        return;
    }

    // 1. s = scale * q k^T.
    match path {
        AttentionPath::Direct => {
            for i in 0..seq {
                for j in 0..kv {
                    // SAFETY: rows `i`, `j` and the score cell are inside
                    // the caller's extents and this unit's matrix.
                    unsafe {
                        let d = (ops.dot)(o.q.add(i * o.q_rs), o.k.add(j * o.k_rs), s.head_dim);
                        *scores.add(i * kv + j) = d * sc.scale;
                    }
                }
            }
        }
        AttentionPath::Gemm => {
            // SAFETY: Q is `seq x head_dim` with stride `q_rs`, K is
            // `kv x head_dim` with stride `k_rs`, K^T packed and the dense
            // `seq x kv` scores are this unit's scratch and overlap neither.
            unsafe {
                pack_transposed_f32(o.k, o.k_rs, s.head_dim, kv, k_packed);
                packed_gemm_strided_f32(o.q, o.q_rs, k_packed, scores, kv, (seq, s.head_dim, kv));
            }
        }
    }

    // SAFETY: this unit owns its `seq * kv` score matrix; no other
    // reference to it exists while the slice lives.
    let sm = unsafe { std::slice::from_raw_parts_mut(scores, seq * kv) };
    let rows = Rows { mask: p.mask, s, sc, path, b, h };
    // SAFETY: the mask extent is the caller's (see `attention_f32`); the
    // variant runs on this CPU.
    unsafe { (p.rows)(sm, &rows) };

    // 5. out = P V, skipping p <= score_skip.
    let dv = s.v_head_dim;
    match path {
        AttentionPath::Direct => {
            for i in 0..seq {
                // SAFETY: output row `i` of this head is `dv` f32 that only
                // this unit writes; V rows are inside the caller's extent.
                unsafe {
                    let out_row = o.out.add(i * o.out_rs);
                    std::ptr::write_bytes(out_row, 0, dv);
                    for (j, &pj) in sm[i * kv..(i + 1) * kv].iter().enumerate() {
                        if pj > sc.score_skip {
                            (ops.axpy)(pj, o.v.add(j * o.v_rs), out_row, dv);
                        }
                    }
                }
            }
        }
        AttentionPath::Gemm => {
            // SAFETY: P is `seq x kv` dense, V is `kv x dv` with stride
            // `v_rs`, packed into this unit's scratch; the output head is
            // `seq x dv` with stride `out_rs` and overlaps neither.
            unsafe {
                pack_rows_f32(o.v, o.v_rs, kv, dv, v_packed, false);
                packed_gemm_strided_f32(scores, kv, v_packed, o.out, o.out_rs, (seq, kv, dv));
            };
        }
    }
}

/// What steps 2-4 need besides the scores: the unit, its mask and path.
pub(super) struct Rows<'a> {
    mask: *const f32,
    s: &'a AttentionShape,
    sc: &'a AttentionScores,
    path: AttentionPath,
    b: usize,
    h: usize,
}

/// Steps 2-4 over a unit's score matrix, one variant per instruction set.
///
/// # Safety
///
/// `sm` is the unit's `seq x kv_seq` scores (`kv_seq > 0`); the mask
/// extent of [`super::attention_f32`]; the CPU has the variant's features.
pub(super) type RowsFn = unsafe fn(sm: &mut [f32], r: &Rows<'_>);

/// The variant for this CPU, chosen once. The passes are the same IEEE
/// operations per element on every variant (`*`, `+`, compare and
/// select, no contraction), so they give the same bits; the wider ones
/// only let the compiler vectorise them.
#[inline]
pub(super) fn rows_kernel() -> RowsFn {
    *ROWS_KERNELS.best()
}

variants! {
    /// The variants of [`RowsFn`], best first.
    pub(super) static ROWS_KERNELS: RowsFn = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => rows_avx512,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2() => rows_avx2,
        "scalar" => rows_plain,
    ];
}

/// See [`RowsFn`].
///
/// # Safety
///
/// As [`RowsFn`]; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512(sm: &mut [f32], r: &Rows<'_>) {
    // SAFETY: forwarded contract.
    unsafe { finish_rows(sm, r) }
}

/// See [`RowsFn`].
///
/// # Safety
///
/// As [`RowsFn`]; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2(sm: &mut [f32], r: &Rows<'_>) {
    // SAFETY: forwarded contract.
    unsafe { finish_rows(sm, r) }
}

/// See [`RowsFn`].
///
/// # Safety
///
/// As [`RowsFn`].
unsafe fn rows_plain(sm: &mut [f32], r: &Rows<'_>) {
    // SAFETY: forwarded contract.
    unsafe { finish_rows(sm, r) }
}

/// Steps 2-4, one score row at a time while it is in L1 (each step is per
/// element, so the order of rows changes nothing); on the GEMM path the
/// scale before them and the `score_skip` zeroing after.
///
/// # Safety
///
/// As [`RowsFn`] (inlined into a function with the features).
#[inline(always)]
unsafe fn finish_rows(sm: &mut [f32], r: &Rows<'_>) {
    let (s, sc) = (r.s, r.sc);
    let softmax = row_kernel();
    for (i, row) in sm.chunks_exact_mut(s.kv_seq).enumerate() {
        if r.path == AttentionPath::Gemm {
            // One rounded product by the scale after the sum, as BLAS's
            // `alpha` does (the direct path scaled each dot product).
            for x in row.iter_mut() {
                *x *= sc.scale;
            }
        }
        // 2. softcap, on the raw scores (see the module docs).
        if sc.softcap > 0.0 {
            for x in row.iter_mut() {
                *x = sc.softcap * (*x / sc.softcap).tanh();
            }
        }
        // 3. the mask.
        // SAFETY: the caller guarantees the mask extent documented on
        // `attention_f32` for the kinds that read it.
        unsafe { mask_row(row, i, r.mask, s, sc, r.b, r.h) };
        // 4. softmax, in place.
        // SAFETY: one row of `kv`; the kernel accepts an exact alias and
        // goes through the raw pointer only.
        unsafe { softmax(row.as_mut_ptr(), row.as_mut_ptr(), s.kv_seq) };
        if r.path == AttentionPath::Gemm {
            for x in row.iter_mut() {
                // `p > skip` is false for NaN: zeroed too, as the direct
                // path's `p > skip` skips it. A select, so it vectorises.
                let p = *x;
                *x = if p > sc.score_skip { p } else { 0.0 };
            }
        }
    }
}

/// Applies the mask kind to row `i` of one unit's `seq x kv_seq` scores.
///
/// # Safety
///
/// For `Custom` and `Bias`, `mask` must be valid for the extent documented
/// on [`super::attention_f32`].
#[inline(always)]
unsafe fn mask_row(
    row: &mut [f32],
    i: usize,
    mask: *const f32,
    s: &AttentionShape,
    sc: &AttentionScores,
    b: usize,
    h: usize,
) {
    let (seq, kv) = (s.seq, s.kv_seq);
    match sc.mask_kind {
        MaskKind::None => {}
        MaskKind::Custom => {
            // SAFETY: batch `b`'s row of `kv` key flags.
            let keep = unsafe { std::slice::from_raw_parts(mask.add(b * kv), kv) };
            for (x, &m) in row.iter_mut().zip(keep) {
                *x = if m < sc.mask_threshold { sc.mask_neg_inf } else { *x };
            }
        }
        MaskKind::Bias => {
            // SAFETY: row `i` of head `(b, h)`'s `seq x kv` bias block.
            let bias = unsafe { std::slice::from_raw_parts(mask.add(((b * s.heads + h) * seq + i) * kv), kv) };
            for (x, &m) in row.iter_mut().zip(bias) {
                *x += m;
            }
        }
        MaskKind::Causal | MaskKind::SlidingWindow(_) => {
            let window = match sc.mask_kind {
                MaskKind::SlidingWindow(w) => Some(w),
                _ => None,
            };
            let (lo, hi) = visible_keys(i, seq, kv, window);
            row[..lo].fill(f32::NEG_INFINITY);
            row[hi..].fill(f32::NEG_INFINITY);
        }
    }
}

/// The keys query row `i` may see, as `lo..hi`: `j <= qpos` with `qpos =
/// i + kv - seq`, and with a window `w` also `j + w >= qpos`. Empty when
/// `qpos < 0`.
pub(super) fn visible_keys(i: usize, seq: usize, kv: usize, window: Option<usize>) -> (usize, usize) {
    // `qpos + 1 = i + 1 + kv - seq`, computed without going negative.
    let hi = match (i + 1 + kv).checked_sub(seq) {
        Some(hi) if hi > 0 => hi.min(kv),
        _ => return (0, 0),
    };
    let lo = match window {
        // j >= qpos - w = hi - 1 - w.
        Some(w) => (hi - 1).saturating_sub(w),
        None => 0,
    };
    (lo, hi.max(lo))
}
