//! An `IntGemm` by a constant weight becomes an `IntGemmPacked`: the
//! weight packed once, here, into the `vpdpbusd` blocks
//! (`rlx_core::qconv::pack_qgemm_weight`) with its column sums, instead of
//! being repacked by every call. When the i32 sums only feed the
//! dequantization that `quantize_dynamic` writes after `MatMulInteger`
//! (`Cast` to f32, `Mul` by the scale, optionally `Add` of a bias per
//! column), those steps join the product: its store writes the f32.
//!
//! Conditions: `b` an i8 or u8 constant shared by every batch (the batch
//! is folded into the rows), its zero point absent or constant. A u8
//! weight is stored as `b - 128` in i8 with its zero point shifted the
//! same way, which leaves every `b - b_zero` unchanged. The fused steps
//! are the composed ones in the same order (the cast, the product by the
//! scale, the sum with the bias), so the bits do not change.

use rlx_sched::qconv::{pack_qgemm_weight, qgemm_column_sums};
use rlx_sched::{BinaryOp, DType, Role, Thunk};

use super::{const_bytes, is_private, param, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk};
use rlx_sched::thunk::{BinaryFull, Cast, IntGemm, IntGemmPacked};

/// Packs every qualifying `IntGemm` and fuses its dequantization.
pub(super) fn pack_int_gemms(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    let mut new_storages = Vec::new();
    for i in 0..lowered.thunks.len() {
        let Thunk::IntGemm(IntGemm { a, b, a_zero, b_zero, c, batch, m, k, n, a_dtype, b_dtype, b_zero_len, b_bcast }) =
            lowered.thunks[i].thunk
        else {
            continue;
        };
        let storages = &lowered.storages;
        if !(b_bcast || batch == 1) || !rewrite.free(&[i]) {
            continue;
        }
        let Some(weights) = const_bytes(&storages[b], b_dtype) else { continue };
        let zero_points = match b_zero {
            None => Some(vec![0; 1]),
            Some(z) => const_bytes(&storages[z], b_dtype).map(|z| z.iter().map(|&v| int8(v, b_dtype)).collect()),
        };
        let Some(zero_points) = zero_points else { continue };
        // i8 storage of the weight and the matching zero points.
        let shift = if b_dtype == DType::U8 { 128 } else { 0 };
        let w: Vec<i8> = weights.iter().map(|&v| (int8(v, b_dtype) - shift) as i8).collect();
        let w_zero: Vec<i32> = zero_points.iter().map(|&z| z - shift).collect();
        let w_zero_len = if b_zero_len == n { n } else { 1 };
        let rows = batch * m;
        let epilogue = dequantization(lowered, &uses, i, c, rows * n, n);
        let last = epilogue.as_ref().map_or(i, |e| e.last);
        if uses.written_within(a, i + 1, last) || a_zero.is_some_and(|z| uses.written_within(z, i + 1, last)) {
            continue;
        }
        let fused: Vec<usize> = std::iter::once(i).chain(epilogue.iter().flat_map(|e| e.thunks.clone())).collect();
        if !rewrite.free(&fused) {
            continue;
        }
        let base = lowered.storages.len() + new_storages.len();
        let name = |suffix: &str| format!("{}.{suffix}", lowered.storages[b].name);
        let le = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        new_storages.push(param(
            name("qgemm"),
            DType::I8,
            pack_qgemm_weight(&w, k, n).into_iter().map(|v| v as u8).collect(),
        ));
        new_storages.push(param(name("qgemm_sums"), DType::I32, le(&qgemm_column_sums(&w, k, n))));
        let w_zero = if w_zero.iter().all(|&z| z == 0) {
            None
        } else {
            new_storages.push(param(name("qgemm_zero"), DType::I32, le(&w_zero)));
            Some(base + 2)
        };
        let (scale, bias, scale_len, out) = match &epilogue {
            Some(e) => (Some(e.scale), e.bias, e.scale_len, e.out),
            None => (None, None, 1, c),
        };
        let thunk = Thunk::IntGemmPacked(IntGemmPacked {
            a,
            w: base,
            w_sums: base + 1,
            a_zero,
            w_zero,
            scale,
            bias,
            c: out,
            m: rows,
            k,
            n,
            a_dtype,
            w_zero_len,
            scale_len,
        });
        let comment = fused.iter().map(|&t| lowered.thunks[t].comment.as_str()).collect::<Vec<_>>().join(" + ");
        rewrite.remove(&fused);
        rewrite.insert_before(last, LoweredThunk { thunk, comment });
    }
    lowered.storages.extend(new_storages);
    rewrite.apply(lowered);
}

/// The dequantization steps after an `IntGemm`, when they qualify.
struct Dequantization {
    /// The cast, the scale's product and the bias' sum, if any.
    thunks: Vec<usize>,
    last: usize,
    scale: usize,
    scale_len: usize,
    bias: Option<usize>,
    /// Where the last step writes.
    out: usize,
}

/// `cast(c) * scale (+ bias)` read by thunk `i`'s private i32 sums `c` of
/// `len` elements in rows of `n`: the scale one element or one per
/// column, the bias one per column, each read cyclically (`BinaryFull`
/// with no broadcast dims), all f32.
fn dequantization(lowered: &Lowered, uses: &Uses, i: usize, c: usize, len: usize, n: usize) -> Option<Dequantization> {
    let storages = &lowered.storages;
    let sums = &storages[c];
    let cast = uses.sole_reader(c, i)?;
    let private_sums = sums.role == Role::Scratch && sums.is_plain() && uses.writers[c] == [i];
    let Thunk::Cast(Cast { src, dst: cast_out, len: cast_len, from: DType::I32, to: DType::F32 }) =
        lowered.thunks[cast].thunk
    else {
        return None;
    };
    if !private_sums || src != c || cast_len != len {
        return None;
    }
    let mul = uses.sole_reader(cast_out, cast)?;
    let (scale, scale_len, scaled) = per_column_operand(lowered, mul, BinaryOp::Mul, cast_out, len, n)?;
    if !is_private(lowered, uses, cast_out, cast, mul) {
        return None;
    }
    let mut out = Dequantization { thunks: vec![cast, mul], last: mul, scale, scale_len, bias: None, out: scaled };
    if let Some(add) = uses.sole_reader(scaled, mul) {
        if let Some((bias, n_bias, sum)) = per_column_operand(lowered, add, BinaryOp::Add, scaled, len, n) {
            // The fused store reads the scale where the sum was.
            let scale_kept = !uses.written_within(scale, mul + 1, add);
            if n_bias == n && scale_kept && is_private(lowered, uses, scaled, mul, add) {
                out.thunks.push(add);
                (out.last, out.bias, out.out) = (add, Some(bias), sum);
            }
        }
    }
    Some(out)
}

/// When thunk `t` is an f32 `BinaryFull` of `op` between the full `len`
/// elements of `full` and an f32 operand of 1 or `n` elements read
/// cyclically: that operand, its length and the output.
fn per_column_operand(
    lowered: &Lowered,
    t: usize,
    op: BinaryOp,
    full: usize,
    len: usize,
    n: usize,
) -> Option<(usize, usize, usize)> {
    let Thunk::BinaryFull(BinaryFull {
        lhs,
        rhs,
        dst,
        len: t_len,
        lhs_len,
        rhs_len,
        op: t_op,
        ref out_dims_bcast,
        elem_bytes,
        ..
    }) = lowered.thunks[t].thunk
    else {
        return None;
    };
    let (other, other_len) = match (lhs == full && lhs_len == len, rhs == full && rhs_len == len) {
        (true, false) => (rhs, rhs_len),
        (false, true) => (lhs, lhs_len),
        _ => return None,
    };
    let f32_other = lowered.storages[other].dtype == DType::F32;
    (t_op == op
        && t_len == len
        && out_dims_bcast.is_empty()
        && elem_bytes == 4
        && f32_other
        && (other_len == 1 || other_len == n))
        .then_some((other, other_len, dst))
}

/// An 8-bit value of `dtype` stored as the byte `v`.
fn int8(v: u8, dtype: DType) -> i32 {
    if dtype == DType::I8 {
        i32::from(v as i8)
    } else {
        i32::from(v)
    }
}
