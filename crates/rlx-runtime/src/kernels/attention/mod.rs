//! Scaled dot-product attention, and the strided `dot` / `axpy` it (and
//! the depthwise convolution) is built from.
//!
//! For each batch `b`, query head `h` (kv head `h / (heads / kv_heads)`)
//! and query row `i`:
//!
//! 1. `s[j] = scale * dot(q[b, i, h], k[b, j, kvh])` over `head_dim`;
//! 2. softcap (when `softcap > 0`): `s[j] = softcap * tanh(s[j] / softcap)`;
//! 3. the mask: `Custom` sets `s[j] = mask_neg_inf` where
//!    `mask[b * kv_seq + j] < mask_threshold`; `Bias` adds
//!    `mask[((b * heads + h) * seq + i) * kv_seq + j]`; `Causal` and
//!    `SlidingWindow(w)` set `s[j] = -inf` for hidden keys (below);
//! 4. `p = softmax(s)` (stable; a row of only `-inf` gives zeros);
//! 5. `out[b, i, h] = sum over j with p[j] > score_skip of p[j] * v[b, j, kvh]`.
//!
//! Causal masking aligns the queries with the END of the keys: query `i`
//! sits at position `qpos = i + kv_seq - seq` (so with a KV cache the last
//! query sees every key), and key `j` is visible iff `j <= qpos`.
//! `SlidingWindow(w)` also requires `j + w >= qpos` (the query sees itself
//! and the `w` keys before it). When `seq > kv_seq` the first queries see
//! no key at all; their rows are zeros.
//!
//! Softcap comes BEFORE the mask, not after: capping after masking maps a masked `-inf` to `-softcap` and a masked
//! `mask_neg_inf` to about `-softcap`, so masked keys would leak back into
//! the softmax. Gemma 2, the model softcap exists for, caps the raw scores
//! and adds the mask afterwards.
//!
//! Layouts: BSHD (`bhsd == false`): `q` row `(b, i)` starts at
//! `(b * seq + i) * q_row_stride` and head `h` at `+ h * head_dim` (so Q,
//! K and V may be column slices of one fused QKV buffer); likewise K/V with
//! `k_row_stride` / `v_row_stride` and `kvh * head_dim` / `kvh *
//! v_head_dim`; `out` is dense `[batch, seq, heads, v_head_dim]`. BHSD:
//! every tensor is dense `[batch, heads_or_kv_heads, rows, dim]` and the
//! row strides are ignored.
//!
//! Two paths compute the same function (see [`attention_path`]); they
//! differ only in rounding, and the path is fixed at gen time so the
//! interpreter and generated code agree bit for bit.

pub(crate) mod scalar;
mod unit;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;

#[cfg(test)]
mod tests;

use crate::kernels::variants::variants;

/// Re-exported so generated code names one crate.
pub use rlx_core::plan::{attention_path, attention_scratch_bytes};
pub use rlx_core::shapes::{AttentionPath, AttentionScores, AttentionShape};
pub use rlx_core::MaskKind;

/// Scaled dot-product attention; see the module documentation for the
/// exact function, layouts and masks.
///
/// `par` (the caller's `rlx_core::plan::parallel(batch * heads * seq *
/// kv_seq)`) runs the (batch, head) units on the thread pool, with BLAS
/// limited to one thread meanwhile; each unit is computed the same way
/// either way, so results are bit-identical.
///
/// # Safety
///
/// - `q`, `k`, `v` valid for reads of their extents: BSHD `batch * seq *
///   q_row_stride` (K, V: `batch * kv_seq * k_row_stride` /
///   `v_row_stride`) with each head's slice inside its row; BHSD dense
///   `batch * heads * seq * head_dim`, `batch * kv_heads * kv_seq *
///   head_dim`, `batch * kv_heads * kv_seq * v_head_dim`.
/// - `heads` a multiple of `max(kv_heads, 1)`.
/// - `mask` valid for `batch * kv_seq` f32 (`Custom`), `batch * heads *
///   seq * kv_seq` (`Bias`); ignored (may be null) otherwise.
/// - `out` valid for writes of `batch * seq * heads * v_head_dim` f32 and
///   overlapping no input.
/// - `scratch` valid for [`attention_scratch_bytes`], 4-byte aligned,
///   overlapping nothing else.
/// - All pointers aligned for f32.
pub unsafe fn attention_f32(
    q: *const f32,
    k: *const f32,
    v: *const f32,
    mask: *const f32,
    out: *mut f32,
    shape: &AttentionShape,
    scores: &AttentionScores,
    path: AttentionPath,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: the caller's contract; the variant runs on this CPU.
    unsafe { attention_with(unit::rows_kernel(), q, k, v, mask, out, shape, scores, path, scratch, par) }
}

/// [`attention_f32`] with the score rows' variant `rows`.
///
/// # Safety
/// As [`attention_f32`]; `rows` runs on this CPU.
#[allow(clippy::too_many_arguments)]
unsafe fn attention_with(
    rows: unit::RowsFn,
    q: *const f32,
    k: *const f32,
    v: *const f32,
    mask: *const f32,
    out: *mut f32,
    shape: &AttentionShape,
    scores: &AttentionScores,
    path: AttentionPath,
    scratch: *mut f32,
    par: bool,
) {
    let units = shape.batch * shape.heads;
    if units == 0 || shape.seq == 0 {
        return;
    }
    let ptrs = unit::Ptrs { q, k, v, mask, out, scratch, rows };
    let run = |start: usize, len: usize| {
        for u in start..start + len {
            // SAFETY: the caller's contract covers every unit; units write
            // disjoint output slices and disjoint score matrices.
            unsafe { unit::run_unit(&ptrs, shape, scores, path, u) };
        }
    };
    if par && units > 1 {
        crate::blas::with_serial_blas(|| crate::threads::par_for(units, 1, &run));
    } else {
        run(0, units);
    }
}

/// Causal attention of a decoder step: the `shape.seq` queries at
/// positions `p..p + seq` (`p = *pos`) over the first `p + seq` rows of the
/// key and value caches, whose full length is `shape.kv_seq` (`max_len`).
/// The step runs [`attention_f32`] on the shape narrowed to those rows, so
/// it computes exactly what a schedule specialised for that length would.
/// With `SlidingWindow(w)` the rows before `p - w`, which no query's
/// window reaches, are left out too (both masks align the queries with
/// the last key, so the narrowing moves no query's window): a decode
/// step costs the window, not the cache. A position outside the caches
/// writes zeros.
///
/// # Safety
/// As [`attention_f32`] for `shape` (batch 1, BSHD, causal or sliding
/// window): `k` and `v` readable for all `shape.kv_seq` rows, `scratch`
/// sized for `shape`; `pos` readable for one i64.
pub unsafe fn cached_attention_f32(
    q: *const f32,
    k: *const f32,
    v: *const f32,
    pos: *const i64,
    out: *mut f32,
    shape: &AttentionShape,
    scores: &AttentionScores,
    path: AttentionPath,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: `pos` is readable by the contract.
    match unsafe { crate::kernels::step_position(pos, shape.seq, shape.kv_seq) } {
        Some(p) => {
            let first = match scores.mask_kind {
                MaskKind::SlidingWindow(w) => p.saturating_sub(w),
                _ => 0,
            };
            let step = AttentionShape { kv_seq: p + shape.seq - first, ..*shape };
            // SAFETY: `step` reads rows `first..p + seq` of the ones `shape`
            // allows (`first <= p`) and needs no more scratch (a smaller
            // `kv_seq`); the rest is the caller's contract. No mask operand
            // for `Causal` or `SlidingWindow`.
            unsafe {
                let (k, v) = (k.add(first * shape.k_row_stride), v.add(first * shape.v_row_stride));
                attention_f32(q, k, v, std::ptr::null(), out, &step, scores, path, scratch, par)
            }
        }
        None => {
            let len = shape.seq * shape.heads * shape.v_head_dim;
            // SAFETY: `out` is writable for `seq * heads * v_head_dim` f32.
            unsafe { std::ptr::write_bytes(out, 0, len) }
        }
    }
}

/// The vector primitives for this CPU, chosen on first use.
#[derive(Clone, Copy)]
pub(crate) struct VecOps {
    pub dot: unsafe fn(*const f32, *const f32, usize) -> f32,
    pub axpy: unsafe fn(f32, *const f32, *mut f32, usize),
}

variants! {
    /// The vector primitives, best first.
    pub(crate) static VEC_OPS: VecOps = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => VecOps { dot: avx2::avx2_dot_f32, axpy: avx2::avx2_axpy_f32 },
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => VecOps { dot: neon::neon_dot_f32, axpy: neon::neon_axpy_f32 },
        "scalar" => VecOps { dot: scalar::scalar_dot_f32, axpy: scalar::scalar_axpy_f32 },
    ];
}

#[inline]
pub(crate) fn vec_ops() -> VecOps {
    *VEC_OPS.best()
}

/// `sum_i a[i] * b[i]` with this CPU's variant (lane-wise partial sums on
/// SIMD, so rounding differs from a sequential sum).
///
/// # Safety
///
/// `a` and `b` must be valid for reads of `n` f32.
pub unsafe fn dot_f32(a: *const f32, b: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { (vec_ops().dot)(a, b, n) }
}

/// `y[i] = alpha * x[i] + y[i]`, fused (one rounding) on every variant.
///
/// # Safety
///
/// `x` must be valid for reads and `y` for reads and writes of `n` f32;
/// they must not overlap.
pub unsafe fn axpy_f32(alpha: f32, x: *const f32, y: *mut f32, n: usize) {
    // SAFETY: forwarded contract.
    unsafe { (vec_ops().axpy)(alpha, x, y, n) }
}
