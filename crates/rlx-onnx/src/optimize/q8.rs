//! 8-bit weights: each prepacked product weight (`PackedGemm`) whose `k`
//! is a multiple of 32 is quantized to ggml's Q8_0 with ggml's reference
//! rounding and rewritten in the layout of `rlx_core::q8`, and its
//! products become `PackedGemmQ8`. A product with another `k` keeps its
//! f32 weight: Q8_0 has no partial block (llama.cpp leaves such tensors
//! unquantized too).

use std::collections::HashMap;

use rlx_sched::q8::{q8_len, BLOCK};
use rlx_sched::thunk::{PackedGemm, PackedGemmQ8};
use rlx_sched::{DType, Role, Thunk};

use crate::lower::{Lowered, Storage};
use crate::quantize::quantize_q8;

/// Rewrites the products in place. A weight several products read is
/// quantized once.
pub(crate) fn quantize_packed_weights(lowered: &mut Lowered) {
    let mut done: HashMap<usize, bool> = HashMap::new();
    for t in 0..lowered.thunks.len() {
        let Thunk::PackedGemm(PackedGemm { a, w, bias, c, m, k, n, act }) = lowered.thunks[t].thunk else {
            continue;
        };
        if !k.is_multiple_of(BLOCK) || q8_len(k, n).is_none() {
            continue;
        }
        let quantized = *done.entry(w).or_insert_with(|| quantize_param(&mut lowered.storages[w], k, n));
        if quantized {
            lowered.thunks[t].thunk = Thunk::PackedGemmQ8(PackedGemmQ8 { a, w, bias, c, m, k, n, act });
        }
    }
}

/// Replaces a plain f32 packed weight (`pack_b`'s layout of a `k x n`
/// matrix) by its Q8 bytes; whether it did.
fn quantize_param(s: &mut Storage, k: usize, n: usize) -> bool {
    let plain_f32 = s.role == Role::Param && s.view.is_none() && !s.viewed && s.dtype == DType::F32;
    let Some(data) = s.data.as_mut().filter(|_| plain_f32) else { return false };
    let Some(len) = rlx_sched::pack::packed_len(k, n).filter(|&len| len * 4 == data.len()) else { return false };
    let packed: Vec<f32> = data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
    debug_assert_eq!(packed.len(), len);
    let matrix = rlx_sched::pack::unpack_b(&packed, k, n);
    let bytes = quantize_q8(&matrix, k, n, false);
    s.shape = vec![bytes.len()];
    s.dtype = DType::U8;
    *data = bytes;
    true
}
