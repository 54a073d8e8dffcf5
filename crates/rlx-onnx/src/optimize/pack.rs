//! Prepacking: every f32 matrix product whose right operand is a weight
//! (`Sgemm`, `SgemmT` without `ta`, `FusedMmBiasAct`) becomes a
//! `PackedGemm` reading that weight in the microkernel's panel layout
//! (`rlx_sched::pack`), written here once, so the model never packs at run
//! time. An in-place bias add right after a product without a bias moves
//! into it, and so does an activation right after (in place, or of an
//! intermediate nothing else reads). A weight that several products read is packed once; the unpacked
//! original is dropped by the final prune when nothing else reads it.

use std::collections::HashMap;

use rlx_sched::blocked::half_filter_fits;
use rlx_sched::{ActKind, DType, Role, Thunk};

use crate::lower::{Lowered, Storage};
use rlx_sched::thunk::{
    Activation, BiasAdd, BlockedConv2D, BlockedConv2DHalf, FusedMmBiasAct, PackedGemm, PackedGemmHalf, Sgemm, SgemmT,
};

/// The packed storage of each (weight, transposed) already written.
type Packed = HashMap<(usize, bool), usize>;

/// Rewrites the products in place.
pub(crate) fn pack_weights(lowered: &mut Lowered) {
    let mut packed = Packed::new();
    let mut touches = Touches::new(lowered);
    let mut t = 0;
    // Not a `for`: packing may take the thunks after thunk `t`.
    while t < lowered.thunks.len() {
        t = pack_product(lowered, t, &mut packed, &mut touches);
    }
    lowered.remove_thunks(&touches.removed);
}

/// The thunks that may name each storage, kept as products are rewritten,
/// and the thunks taken into a product (removed at the end, so indices
/// stay put and each step costs no more than the thunks it looks at).
struct Touches {
    /// For each storage, every thunk that named it at the start or was
    /// rewritten to name it since (some may not any more).
    maybe: Vec<Vec<usize>>,
    removed: Vec<bool>,
}

impl Touches {
    fn new(lowered: &Lowered) -> Self {
        let mut maybe = vec![Vec::new(); lowered.storages.len()];
        for (t, lt) in lowered.thunks.iter().enumerate() {
            for (_, &id) in lt.thunk.operands() {
                maybe[id].push(t);
            }
        }
        Touches { maybe, removed: vec![false; lowered.thunks.len()] }
    }

    /// Records that thunk `t` now names the operands it has.
    fn rewritten(&mut self, lowered: &Lowered, t: usize) {
        for (_, &id) in lowered.thunks[t].thunk.operands() {
            if self.maybe.len() <= id {
                self.maybe.resize(id + 1, Vec::new());
            }
            self.maybe[id].push(t);
        }
    }

    /// Whether no thunk left but `t` and `next` names storage `id`.
    fn named_only_by(&self, lowered: &Lowered, id: usize, t: usize, next: usize) -> bool {
        self.maybe.get(id).is_none_or(|ts| {
            ts.iter().all(|&i| {
                i == t
                    || i == next
                    || self.removed[i]
                    || lowered.thunks[i].thunk.operands().iter().all(|(_, &o)| o != id)
            })
        })
    }
}

/// Packs thunk `t` when it is a product with a weight; returns the index
/// of the first thunk it did not take.
fn pack_product(lowered: &mut Lowered, t: usize, packed: &mut Packed, touches: &mut Touches) -> usize {
    let mut next = t + 1;
    let (a, b, bias, c, m, k, n, act, transposed) = match lowered.thunks[t].thunk {
        Thunk::Sgemm(Sgemm { a, b, c, m, k, n }) => (a, b, None, c, m, k, n, ActKind::Identity, false),
        Thunk::SgemmT(SgemmT { a, b, c, m, k, n, ta: false, tb }) => (a, b, None, c, m, k, n, ActKind::Identity, tb),
        Thunk::FusedMmBiasAct(FusedMmBiasAct { a, w, bias, c, m, k, n, act }) => {
            (a, w, Some(bias), c, m, k, n, act, false)
        }
        _ => return next,
    };
    let Some(data) = weight_f32(&lowered.storages[b], k * n) else { return next };
    let w = *packed.entry((b, transposed)).or_insert_with(|| {
        let bytes: Vec<u8> =
            rlx_sched::pack::pack_b(&data, k, n, transposed).into_iter().flat_map(f32::to_le_bytes).collect();
        let source = &lowered.storages[b];
        let name = format!("{}.packed{}", source.name, if transposed { "_t" } else { "" });
        lowered.storages.push(Storage {
            name,
            shape: vec![bytes.len() / 4],
            dtype: DType::F32,
            role: Role::Param,
            data: Some(bytes),
            view: None,
            viewed: false,
        });
        lowered.storages.len() - 1
    });
    let mut bias = bias;
    // A product without a bias followed by an in-place bias add of
    // its output (a `Gemm` with `transB` lowers so) takes the add.
    if let (None, ActKind::Identity, Some(after)) = (bias, act, lowered.thunks.get(next)) {
        if let Thunk::BiasAdd(BiasAdd { src, bias: add, dst, rows, cols }) = after.thunk {
            if src == c && dst == c && rows == m && cols == n {
                bias = Some(add);
                take_comment(lowered, t, next, touches);
                next += 1;
            }
        }
    }
    let (mut act, mut c) = (act, c);
    // An activation of the output right after (a `Gemm` + `Relu` whose
    // bias came in just above) runs in the product's epilogue when nothing
    // else reads the pre-activation values: in place, or into a new tensor
    // from a private intermediate (the product then writes that tensor).
    if let (ActKind::Identity, Some(after)) = (act, lowered.thunks.get(next)) {
        let fused = match after.thunk {
            // The product may not write over one of its own inputs.
            Thunk::Activation(Activation { src, dst, len, act })
                if src == c && len == m * n && dst != a && Some(dst) != bias =>
            {
                (dst == c || private_to(lowered, touches, c, t, next)).then_some((act, dst))
            }
            _ => None,
        };
        if let Some((next_act, dst)) = fused {
            (act, c) = (next_act, dst);
            take_comment(lowered, t, next, touches);
            next += 1;
        }
    }
    lowered.thunks[t].thunk = Thunk::PackedGemm(PackedGemm { a, w, bias, c, m, k, n, act });
    touches.rewritten(lowered, t);
    next
}

/// Takes thunk `next` into thunk `t`: its comment joins `t`'s, and it is
/// removed.
fn take_comment(lowered: &mut Lowered, t: usize, next: usize, touches: &mut Touches) {
    touches.removed[next] = true;
    let next_comment = std::mem::take(&mut lowered.thunks[next].comment);
    let lt = &mut lowered.thunks[t];
    lt.comment = format!("{} + {}", lt.comment, next_comment);
}

/// Stores the prepacked weight of each `PackedGemm` (making it a
/// `PackedGemmHalf`) and the packed filter of each one-group
/// `BlockedConv2D` whose passes fit the widening buffer (making it a
/// `BlockedConv2DHalf`) in the 2-byte type `choose` picks from its values
/// (f16 or bf16; `None` keeps f32): half the bytes in the weights file and
/// read per run, f32 compute. Each value rounds to nearest even. A weight
/// several thunks read is decided and converted once.
pub(crate) fn narrow_packed_weights(lowered: &mut Lowered, choose: &dyn Fn(&[f32]) -> Option<DType>) {
    let mut chosen: HashMap<usize, Option<DType>> = HashMap::new();
    for t in 0..lowered.thunks.len() {
        let w = match lowered.thunks[t].thunk {
            Thunk::PackedGemm(PackedGemm { w, .. }) => w,
            Thunk::BlockedConv2D(BlockedConv2D { w, groups: 1, c_in, kh, kw, .. })
                if half_filter_fits(c_in, kh, kw) =>
            {
                w
            }
            _ => continue,
        };
        let narrow = *chosen.entry(w).or_insert_with(|| narrow_param(&mut lowered.storages[w], choose));
        let Some(w_dtype) = narrow else { continue };
        let thunk = &mut lowered.thunks[t].thunk;
        *thunk = match *thunk {
            Thunk::PackedGemm(PackedGemm { a, w, bias, c, m, k, n, act }) => {
                Thunk::PackedGemmHalf(PackedGemmHalf { a, w, bias, c, m, k, n, act, w_dtype })
            }
            Thunk::BlockedConv2D(BlockedConv2D {
                x,
                w,
                bias,
                residual,
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
                groups: _,
                act,
                x_nchw,
            }) => Thunk::BlockedConv2DHalf(BlockedConv2DHalf {
                x,
                w,
                bias,
                residual,
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
                act,
                x_nchw,
                w_dtype,
            }),
            _ => unreachable!("matched above"),
        };
    }
}

/// Converts a plain f32 weight to the 2-byte type `choose` picks for its
/// values, if any; that type.
fn narrow_param(s: &mut Storage, choose: &dyn Fn(&[f32]) -> Option<DType>) -> Option<DType> {
    let plain_f32 = s.role == Role::Param && s.view.is_none() && s.dtype == DType::F32;
    let data = s.data.as_mut().filter(|_| plain_f32)?;
    let values: Vec<f32> = data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
    let dtype = choose(&values)?;
    *data = match dtype {
        DType::Bf16 => values.iter().flat_map(|&x| half::bf16::from_f32(x).to_le_bytes()).collect(),
        _ => values.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
    };
    s.dtype = dtype;
    Some(dtype)
}

/// The 2-byte type that holds every one of `values` exactly: f16, else
/// bf16, else `None`. Narrowing to it changes no bit of any product.
pub(crate) fn exact_half_type(values: &[f32]) -> Option<DType> {
    let exact_f16 = values.iter().all(|&x| half::f16::from_f32(x).to_f32().to_bits() == x.to_bits());
    let exact_bf16 = || values.iter().all(|&x| half::bf16::from_f32(x).to_f32().to_bits() == x.to_bits());
    match (exact_f16, exact_f16 || exact_bf16()) {
        (true, _) => Some(DType::F16),
        (false, true) => Some(DType::Bf16),
        _ => None,
    }
}

/// Whether storage `id` is a plain f32 intermediate that only thunks `t`
/// and `next` name.
fn private_to(lowered: &Lowered, touches: &Touches, id: usize, t: usize, next: usize) -> bool {
    let s = &lowered.storages[id];
    s.role == Role::Scratch && s.is_plain() && s.dtype == DType::F32 && touches.named_only_by(lowered, id, t, next)
}

/// The `len` values of an f32 weight of its own (not a view).
fn weight_f32(s: &Storage, len: usize) -> Option<Vec<f32>> {
    let data = s.data.as_deref()?;
    let usable = s.role == Role::Param && s.dtype == DType::F32 && s.view.is_none() && data.len() == len * 4;
    usable.then(|| data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect())
}
