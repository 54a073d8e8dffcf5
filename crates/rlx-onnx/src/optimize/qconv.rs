//! An `IntConv2D` whose sums only a `Requantize` reads becomes one
//! `QLinearConv2D` (`rlx_core::qconv`): the filter packed once, here, and
//! the requantization done in registers, with no i32 tensor in between.
//!
//! Conditions (what onnxruntime's quantizer writes for a CNN: u8
//! activations, symmetric int8 weights): one group or depthwise; `x` u8; `w` an i8
//! constant whose zero point is absent or all zeros; the input's zero
//! point absent or a u8 constant; the requantization's bias absent or an
//! i32 constant, its output u8, and the i32 sums private to the pair.
//! Then `sum((x - x_zero) * w) + bias` equals `sum(xp * w) + bias'` with
//! `xp` the input padded by `x_zero` and `bias'[oc] = bias[oc] - x_zero *
//! sum(w[oc])`, exactly in wrapping i32, so the fused kind gives the
//! pair's bits.

use rlx_sched::qconv::pack_qconv_filter;
use rlx_sched::{DType, Role, Thunk};

use super::{const_bytes, param, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk};
use rlx_sched::thunk::{IntConv2D, QLinearConv2D, Requantize};

/// Fuses every qualifying `IntConv2D` + `Requantize` pair.
pub(super) fn fuse_qlinear_convs(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    let mut new_storages = Vec::new();
    for i in 0..lowered.thunks.len() {
        let Thunk::IntConv2D(IntConv2D {
            x,
            w,
            x_zero,
            w_zero,
            out: acc,
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            groups,
            x_dtype: DType::U8,
            w_dtype: DType::I8,
            ..
        }) = lowered.thunks[i].thunk
        else {
            continue;
        };
        let depthwise = groups == c_in && groups == c_out;
        if groups != 1 && !depthwise {
            continue;
        }
        let Some(j) = uses.sole_reader(acc, i) else { continue };
        let Thunk::Requantize(Requantize {
            acc: read, bias, scale, zero, out, scale_len, out_dtype: DType::U8, ..
        }) = lowered.thunks[j].thunk
        else {
            continue;
        };
        let storages = &lowered.storages;
        let private = storages[acc].role == Role::Scratch && storages[acc].is_plain() && uses.writers[acc] == [i];
        let (Some(weights), true) = (const_bytes(&storages[w], DType::I8), private && read == acc) else { continue };
        let zero_weights = w_zero.is_none_or(|z| const_bytes(&storages[z], DType::I8).is_some_and(all_zero));
        let pad = match x_zero {
            None => Some(0),
            Some(z) => const_bytes(&storages[z], DType::U8).and_then(|b| (b.len() == 1).then(|| b[0])),
        };
        let bias_values = match bias {
            None => Some(vec![0; c_out]),
            Some(b) => const_bytes(&storages[b], DType::I32).map(|b| {
                b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes"))).collect::<Vec<i32>>()
            }),
        };
        let (true, Some(pad), Some(bias_values)) = (zero_weights, pad, bias_values) else { continue };
        // The fused thunk reads `x` where the `Requantize` was.
        if bias_values.len() != c_out || uses.written_within(x, i + 1, j) || !rewrite.free(&[i, j]) {
            continue;
        }
        let w_i8: Vec<i8> = weights.iter().map(|&b| b as i8).collect();
        let c_in_g = c_in / groups;
        let patch = c_in_g * kh * kw;
        let folded: Vec<u8> = bias_values
            .iter()
            .enumerate()
            .flat_map(|(oc, &b)| {
                let sum = w_i8[oc * patch..(oc + 1) * patch].iter().map(|&v| i32::from(v)).sum::<i32>();
                b.wrapping_sub(i32::from(pad).wrapping_mul(sum)).to_le_bytes()
            })
            .collect();
        let packed: Vec<u8> = pack_qconv_filter(&w_i8, c_out, c_in_g, kh, kw).into_iter().map(|v| v as u8).collect();
        let base = lowered.storages.len() + new_storages.len();
        let name = |suffix: &str| format!("{}.{suffix}", lowered.storages[w].name);
        new_storages.push(param(name("qconv"), DType::I8, packed));
        new_storages.push(param(name("qconv_bias"), DType::I32, folded));
        let thunk = Thunk::QLinearConv2D(QLinearConv2D {
            x,
            w: base,
            bias: Some(base + 1),
            scale,
            zero,
            out,
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            groups,
            x_pad: usize::from(pad),
            scale_len,
            x_nhwc: false,
            out_nhwc: false,
        });
        let comment = format!("{} + {}", lowered.thunks[i].comment, lowered.thunks[j].comment);
        rewrite.remove(&[i, j]);
        rewrite.insert_before(j, LoweredThunk { thunk, comment });
    }
    lowered.storages.extend(new_storages);
    rewrite.apply(lowered);
}

/// Keeps channels last every activation that one `QLinearConv2D` writes
/// and only `QLinearConv2D`s read, as their input: the producer then
/// stores pixels as its registers hold them and the readers copy rows (or
/// read in place), with no byte transposition either side. The tensor is
/// scratch the two sides alone see, so its layout is theirs to choose.
pub(super) fn chain_channels_last(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    for i in 0..lowered.thunks.len() {
        let Thunk::QLinearConv2D(QLinearConv2D { out, .. }) = lowered.thunks[i].thunk else { continue };
        let storage = &lowered.storages[out];
        let readers = &uses.touches[out];
        let conv_input =
            |t: usize| matches!(lowered.thunks[t].thunk, Thunk::QLinearConv2D(QLinearConv2D { x, .. }) if x == out);
        let private = storage.role == Role::Scratch && storage.is_plain() && uses.writers[out] == [i];
        if !private || readers.len() < 2 || readers[0] != i || !readers[1..].iter().all(|&t| conv_input(t)) {
            continue;
        }
        for &t in readers {
            if let Thunk::QLinearConv2D(QLinearConv2D { out_nhwc, x_nhwc, .. }) = &mut lowered.thunks[t].thunk {
                if t == i {
                    *out_nhwc = true;
                } else {
                    *x_nhwc = true;
                }
            }
        }
    }
}

/// The bytes of a constant of type `dtype` that is not a view.
fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}
