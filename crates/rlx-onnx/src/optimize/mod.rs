//! Passes over lowered thunks before memory planning, in this order (see
//! `docs/onnx-fusion.md` for each pattern, its conditions and its effect):
//!
//! 0. **transposes of transposes** ([`transposes`]): a `Transpose` reading
//!    another's output reads its source instead, when the strides compose.
//! 1. **activations by value** ([`recognise`]): the elementwise thunks
//!    computed from one tensor are evaluated at probe points; those equal
//!    to GELU (erf or tanh), SiLU, Mish, HardSwish, sigmoid, softplus or
//!    tanh become one `Activation`, however the exporter spelled them.
//!    First, so that step 3 can fold it into the product before it.
//! 2. **attention** ([`attention`]): the BERT-style subgraph (head
//!    transposes, `Q @ K^T`, scale, mask, softmax, `P @ V`, merge of the
//!    heads) becomes one `Attention` reading the projections in place.
//!    Before step 4, which would otherwise take the scale and mask ops.
//! 3. **producers** ([`producers`]): bias add into the preceding `Sgemm`
//!    (`FusedMmBiasAct`), an activation into that product, a residual add
//!    into the `LayerNorm` after it (`FusedResidualLN`).
//! 4. **elementwise chains** ([`elementwise`]): what remains of runs of
//!    activations and same-length binaries becomes `ElementwiseRegion`s.
//!    After step 3, so a chain never takes a bias, an activation or a
//!    residual add that a fused kernel does better.
//!
//! Separately, [`prepack`] (on by default, `ImportOptions::prepack`)
//! rewrites products with a weight into `PackedGemm` ([`pack`]); it runs
//! after the fusions, so a fused bias and activation move into it.
//!
//! And [`blocked`] (on by default, `ImportOptions::blocked`) moves
//! convolution chains to the blocked channel layout, after the fusions,
//! so it sees the fused convolutions and residual adds, and folds each
//! residual add into the convolution before it.
//!
//! Last, with the fusions, **in place** ([`in_place`], [`work_in_place`]):
//! elementwise kinds write over an input read for the last time. Last, so
//! the passes before it see each value in a storage of its own.
//!
//! Storages no thunk touches any more (the intermediates of fused
//! patterns, constants only they read) are dropped at the end, so the
//! planner and the weights file never see them.

mod attention;
mod blocked;
mod elementwise;
mod in_place;
mod pack;
mod producers;
mod q8;
mod qconv;
mod qgemm;
mod recognise;
mod transposes;

use rlx_sched::{BinaryOp, DType, Role, Thunk, ThunkKind};

use crate::lower::{Lowered, LoweredThunk, Storage};
use rlx_sched::thunk::{BinaryFull, Nop};

pub(crate) use blocked::Winograd;

/// Prepacks the weights of matrix products (`PackedGemm`), of 8-bit
/// convolutions with their requantization (`QLinearConv2D`, [`qconv`]) and
/// of 8-bit products with their dequantization (`IntGemmPacked`, [`qgemm`]),
/// then drops the unpacked originals nothing reads any more.
pub(crate) fn prepack(lowered: &mut Lowered) {
    pack::pack_weights(lowered);
    qconv::fuse_qlinear_convs(lowered);
    qconv::chain_channels_last(lowered);
    qgemm::pack_int_gemms(lowered);
    prune(lowered);
}

/// Stores every prepacked product weight (and one-group blocked
/// convolution filter) in `dtype`, f16 or bf16 (`PackedGemmHalf`,
/// `BlockedConv2DHalf`); after [`prepack`].
pub(crate) fn narrow_packed_weights(lowered: &mut Lowered, dtype: DType) {
    pack::narrow_packed_weights(lowered, &|_| Some(dtype));
}

/// Stores every prepacked product weight whose `k` is a multiple of 32 in
/// 8 bits, ggml's Q8_0 (`PackedGemmQ8`); after [`prepack`].
pub(crate) fn quantize_packed_weights_q8(lowered: &mut Lowered) {
    q8::quantize_packed_weights(lowered);
}

/// Stores each prepacked product weight and one-group blocked convolution
/// filter whose values are all exactly f16 (or bf16) in that type:
/// lossless, for models whose initializers were 2-byte floats; after
/// [`prepack`] and [`block_channels`].
pub(crate) fn narrow_exact_packed_weights(lowered: &mut Lowered) {
    pack::narrow_packed_weights(lowered, &pack::exact_half_type);
}

/// Moves convolution chains to the blocked channel layout ([`blocked`]),
/// Winograd where it pays when `winograd`, then drops the NCHW filters
/// nothing reads any more.
pub(crate) fn block_channels(lowered: &mut Lowered, winograd: Winograd) {
    blocked::block_channels(lowered, winograd);
    transposes::compose_layout_conversions(lowered);
    prune(lowered);
}

/// Runs the passes in place.
pub(crate) fn optimize(lowered: &mut Lowered) {
    transposes::compose_transposes(lowered);
    recognise::recognise_activations(lowered);
    attention::fuse_attention(lowered);
    producers::fuse_into_producers(lowered);
    elementwise::fuse_chains(lowered);
    prune(lowered);
}

/// Elementwise thunks write over an input read for the last time
/// ([`in_place`]); after every other pass.
pub(crate) fn work_in_place(lowered: &mut Lowered) {
    in_place::work_in_place(lowered);
    prune(lowered);
}

/// Element count of a shape.
fn elems(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The storages a thunk writes. Operand fields named `dst`, `out`,
/// `values`, `y`, `y_h`, `y_c` (`Recurrent`) and `c` are outputs (except
/// `Fma`'s `c`, an addend), `data`
/// and `cache` are updated in place; every other operand is read.
fn written(thunk: &Thunk<usize>) -> Vec<usize> {
    let kind = thunk.kind();
    thunk
        .operands()
        .into_iter()
        .filter(|(field, _)| match *field {
            "dst" | "out" | "values" | "data" | "cache" | "y" | "y_h" | "y_c" => true,
            "c" => kind != ThunkKind::Fma,
            _ => false,
        })
        .map(|(_, &id)| id)
        .collect()
}

/// Who touches each storage: the facts every pattern matcher checks.
struct Uses {
    /// Indices of the thunks naming each storage, ascending, no repeats.
    touches: Vec<Vec<usize>>,
    /// Indices of the thunks writing the bytes of each *root* storage (a
    /// view's writes count for its base), ascending.
    root_writers: Vec<Vec<usize>>,
    /// Indices of the thunks writing each storage as named.
    writers: Vec<Vec<usize>>,
    /// The base of each storage (itself unless a view).
    roots: Vec<usize>,
}

impl Uses {
    fn new(lowered: &Lowered) -> Self {
        let n = lowered.storages.len();
        let roots: Vec<usize> =
            lowered.storages.iter().enumerate().map(|(i, s)| s.view.map_or(i, |(b, _)| b)).collect();
        let mut uses = Uses {
            touches: vec![Vec::new(); n],
            root_writers: vec![Vec::new(); n],
            writers: vec![Vec::new(); n],
            roots,
        };
        for (t, lt) in lowered.thunks.iter().enumerate() {
            for (_, &id) in lt.thunk.operands() {
                push_once(&mut uses.touches[id], t);
            }
            for id in written(&lt.thunk) {
                push_once(&mut uses.writers[id], t);
                let root = uses.roots[id];
                push_once(&mut uses.root_writers[root], t);
            }
        }
        uses
    }

    /// The one thunk writing storage `id`, when exactly one does.
    fn sole_writer(&self, id: usize) -> Option<usize> {
        match self.writers[id].as_slice() {
            [w] => Some(*w),
            _ => None,
        }
    }

    /// The thunk after `producer` that reads `id`, when `id` is touched by
    /// exactly those two.
    fn sole_reader(&self, id: usize, producer: usize) -> Option<usize> {
        match self.touches[id].as_slice() {
            [p, r] if *p == producer => Some(*r),
            _ => None,
        }
    }

    /// Whether some thunk with index in `from..=to` writes the bytes of
    /// `id` (through any view of the same base).
    fn written_within(&self, id: usize, from: usize, to: usize) -> bool {
        self.next_write(id, from).is_some_and(|w| w <= to)
    }

    /// The first thunk with index `from` or later writing the bytes of
    /// `id` (through any view of the same base).
    fn next_write(&self, id: usize, from: usize) -> Option<usize> {
        let writers = &self.root_writers[self.roots[id]];
        writers.get(writers.partition_point(|&w| w < from)).copied()
    }
}

fn push_once(list: &mut Vec<usize>, t: usize) {
    if list.last() != Some(&t) {
        list.push(t);
    }
}

/// Whether storage `id` is an intermediate a fusion may drop: f32 scratch,
/// not involved in views, written by thunk `producer` and read by thunk
/// `consumer` and touched by no other thunk.
fn is_private(lowered: &Lowered, uses: &Uses, id: usize, producer: usize, consumer: usize) -> bool {
    let s = &lowered.storages[id];
    s.role == Role::Scratch
        && s.is_plain()
        && s.dtype == DType::F32
        && uses.touches[id] == [producer, consumer]
        && uses.writers[id] == [producer]
}

/// The bytes of a constant (a flat `param` storage) of `dtype`.
fn const_bytes(s: &Storage, dtype: DType) -> Option<&[u8]> {
    (s.role == Role::Param && s.dtype == dtype && s.view.is_none()).then_some(s.data.as_deref()?)
}

/// A constant of its own, flat.
fn param(name: String, dtype: DType, data: Vec<u8>) -> Storage {
    let len = data.len() / dtype.size();
    Storage { name, shape: vec![len], dtype, role: Role::Param, data: Some(data), view: None, viewed: false }
}

/// The value of a one-element f32 constant (a `param` storage).
fn scalar_param(storage: &Storage) -> Option<f32> {
    let bytes: [u8; 4] = storage.data.as_deref()?.try_into().ok()?;
    (storage.role == Role::Param && storage.dtype == DType::F32 && storage.view.is_none() && elems(&storage.shape) == 1)
        .then_some(f32::from_le_bytes(bytes))
}

/// How a `BinaryFull` reads one operand, as far as fusions care.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Arg {
    /// Element `i` for output element `i`.
    Full,
    /// A one-element constant, read for every output element.
    Const(f32),
    /// Anything else (a broadcast row, a runtime scalar, ...).
    Other,
}

/// One operand of an f32 `BinaryFull`.
#[derive(Clone, Copy, Debug)]
struct Side {
    id: usize,
    arg: Arg,
}

/// An f32 `BinaryFull` with its operands classified.
#[derive(Clone, Copy, Debug)]
struct Binary {
    op: BinaryOp,
    lhs: Side,
    rhs: Side,
    dst: usize,
    len: usize,
}

impl Binary {
    /// The sides in both orders: `(this, other)`.
    fn both_ways(&self) -> [(Side, Side); 2] {
        [(self.lhs, self.rhs), (self.rhs, self.lhs)]
    }
}

/// `thunk` as an f32 `BinaryFull`, operands classified.
fn binary(lowered: &Lowered, thunk: &Thunk<usize>) -> Option<Binary> {
    let Thunk::BinaryFull(BinaryFull {
        lhs,
        rhs,
        dst,
        len,
        lhs_len,
        rhs_len,
        op,
        out_dims_bcast,
        bcast_lhs_strides,
        bcast_rhs_strides,
        elem_bytes: 4,
    }) = thunk
    else {
        return None;
    };
    let side = |id: usize, op_len: usize, strides: &[usize]| {
        let s = &lowered.storages[id];
        let arg = if s.dtype != DType::F32 {
            Arg::Other
        } else if op_len == *len && rlx_sched::plan::reads_identically(*len, op_len, out_dims_bcast, strides) {
            Arg::Full
        } else if op_len == 1 {
            scalar_param(s).map_or(Arg::Other, Arg::Const)
        } else {
            Arg::Other
        };
        Side { id, arg }
    };
    (lowered.storages[*dst].dtype == DType::F32).then_some(Binary {
        op: *op,
        lhs: side(*lhs, *lhs_len, bcast_lhs_strides),
        rhs: side(*rhs, *rhs_len, bcast_rhs_strides),
        dst: *dst,
        len: *len,
    })
}

/// Removes and inserts thunks by their index in the current list.
struct Rewrite {
    removed: Vec<bool>,
    /// Thunks to insert before the thunk at each index, in order.
    inserted: std::collections::BTreeMap<usize, Vec<LoweredThunk>>,
}

impl Rewrite {
    fn new(n: usize) -> Self {
        Rewrite { removed: vec![false; n], inserted: std::collections::BTreeMap::new() }
    }

    /// Whether none of `thunks` is already removed by another rewrite.
    fn free(&self, thunks: &[usize]) -> bool {
        thunks.iter().all(|&t| !self.removed[t])
    }

    fn remove(&mut self, thunks: &[usize]) {
        for &t in thunks {
            self.removed[t] = true;
        }
    }

    fn insert_before(&mut self, at: usize, thunk: LoweredThunk) {
        self.inserted.entry(at).or_default().push(thunk);
    }

    fn apply(mut self, lowered: &mut Lowered) {
        let old = std::mem::take(&mut lowered.thunks);
        let mut thunks = Vec::with_capacity(old.len());
        for (t, lt) in old.into_iter().enumerate() {
            thunks.extend(self.inserted.remove(&t).unwrap_or_default());
            if !self.removed[t] {
                thunks.push(lt);
            }
        }
        lowered.thunks = thunks;
    }
}

/// The comment of a thunk standing for the thunks `from` .. `to`.
fn fused_comment(what: &str, thunks: &[LoweredThunk], indices: &[usize]) -> String {
    let first = indices.iter().min().map(|&i| thunks[i].comment.as_str()).unwrap_or_default();
    let last = indices.iter().max().map(|&i| thunks[i].comment.as_str()).unwrap_or_default();
    format!("{what}: {first} .. {last} ({} thunks fused)", indices.len())
}

/// Each operand renamed through `map`.
fn remap(thunk: Thunk<usize>, map: &[usize]) -> Thunk<usize> {
    thunk
        .map_operands(&mut |_, id: usize| Ok::<_, std::convert::Infallible>(map[id]))
        .unwrap_or_else(|_: Vec<std::convert::Infallible>| unreachable!("remapping cannot fail"))
}

/// Drops every storage `keep` rejects and renumbers operands and views.
/// `keep` must keep the base of every kept view and every storage an
/// operand names.
fn retain_storages(lowered: &mut Lowered, keep: &[bool]) {
    let mut new_index = vec![usize::MAX; keep.len()];
    let mut storages = Vec::new();
    for (i, s) in lowered.storages.iter().enumerate() {
        if keep[i] {
            new_index[i] = storages.len();
            storages.push(s.clone());
        }
    }
    for s in &mut storages {
        if let Some((base, _)) = &mut s.view {
            *base = new_index[*base];
        }
    }
    lowered.storages = storages;
    for lt in &mut lowered.thunks {
        let t = std::mem::replace(&mut lt.thunk, Thunk::Nop(Nop {}));
        lt.thunk = remap(t, &new_index);
    }
}

/// Drops storages merged away (`alias[i] != i`): operands already name
/// their target.
fn compact(lowered: &mut Lowered, alias: &[usize]) {
    let keep: Vec<bool> = alias.iter().enumerate().map(|(i, &a)| a == i).collect();
    retain_storages(lowered, &keep);
}

/// Drops storages nothing needs: neither a graph input or output, nor
/// named by a thunk, nor the base of a view a thunk names.
fn prune(lowered: &mut Lowered) {
    let mut keep: Vec<bool> =
        lowered.storages.iter().map(|s| matches!(s.role, Role::Input | Role::Output | Role::State)).collect();
    for lt in &lowered.thunks {
        for (_, &id) in lt.thunk.operands() {
            keep[id] = true;
            if let Some((base, _)) = lowered.storages[id].view {
                keep[base] = true;
            }
        }
    }
    // A kept view of a base that is otherwise unused still needs the base.
    for i in 0..keep.len() {
        if let (true, Some((base, _))) = (keep[i], lowered.storages[i].view) {
            keep[base] = true;
        }
    }
    retain_storages(lowered, &keep);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_sched::thunk::{self as kinds, Activation, Fma, Sgemm};

    fn storage(name: &str, role: Role, view: Option<(usize, usize)>) -> Storage {
        Storage { name: name.into(), shape: vec![4], dtype: DType::F32, role, data: None, view, viewed: false }
    }

    #[test]
    fn outputs_are_told_from_inputs_by_field() {
        let (a, b, c, dst) = (0, 1, 2, 3);
        assert_eq!(written(&Thunk::Sgemm(Sgemm { a, b, c, m: 1, k: 1, n: 1 })), [c]);
        // `Fma`'s `c` is an addend.
        assert_eq!(written(&Thunk::Fma(Fma { a, b, c, dst, len: 1, elem_bytes: 4 })), [dst]);
        assert_eq!(
            written(&Thunk::Activation(Activation { src: a, dst: a, len: 1, act: rlx_sched::ActKind::Relu })),
            [a]
        );
    }

    #[test]
    fn prune_keeps_interface_named_storages_and_view_bases() {
        // 0 input, 1 output, 2 unused scratch, 3 base of view 4 (named),
        // 5 unused param.
        let mut param = storage("p", Role::Param, None);
        param.data = Some(vec![0; 16]);
        let mut lowered = Lowered {
            storages: vec![
                storage("x", Role::Input, None),
                storage("y", Role::Output, None),
                storage("dead", Role::Scratch, None),
                Storage { viewed: true, ..storage("base", Role::Scratch, None) },
                storage("base+4", Role::Scratch, Some((3, 4))),
                param,
            ],
            thunks: vec![
                LoweredThunk { thunk: Thunk::Copy(kinds::Copy { src: 0, dst: 4, len: 3 }), comment: String::new() },
                LoweredThunk { thunk: Thunk::Copy(kinds::Copy { src: 4, dst: 1, len: 3 }), comment: String::new() },
            ],
            entries: Vec::new(),
        };
        prune(&mut lowered);
        let names: Vec<&str> = lowered.storages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "base", "base+4"]);
        assert_eq!(lowered.storages[3].view, Some((2, 4)), "the view follows its base");
        assert_eq!(lowered.thunks[0].thunk, Thunk::Copy(kinds::Copy { src: 0, dst: 3, len: 3 }));
        assert_eq!(lowered.thunks[1].thunk, Thunk::Copy(kinds::Copy { src: 3, dst: 1, len: 3 }));
    }
}
