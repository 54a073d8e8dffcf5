//! The blocked channel layout (`rlx_sched::blocked`, NCHW16c) for
//! convolution chains.
//!
//! Convolutions worth it (below) become `BlockedConv2D` with their filters
//! packed here, once. Each tensor then lives in one layout or both: a
//! blocked convolution writes the blocked form only; a pooling or a
//! same-length elementwise thunk whose inputs are all blocked runs on the
//! blocked forms, and so does a binary of such a tensor and one value per
//! channel; any other reader gets the plain form, converted by a
//! `FromBlocked` just before its first such reader, and a blocked
//! convolution reading a plain tensor gets a `ToBlocked` first. A chain of
//! convolutions, poolings and residual adds therefore never changes
//! layout between its layers: conversions sit only at its edges. A thunk
//! that writes a tensor in one layout makes the other form stale.
//!
//! A `Pad` of a blocked tensor on its spatial axes only (batch and
//! channels unpadded) stays blocked too: it pads the spatial axes of the
//! blocked form `[n, cb, spatial..., 16]`, so a pad between convolutions
//! that their padding cannot take (another reader, a mode other than
//! `constant`) costs no conversion. The pad's value lands in the padded
//! lanes as well, which no kernel lets reach a real lane
//! (`rlx_core::blocked`). A pad of the channels reads the plain form.
//!
//! A one-group convolution with fewer than 16 input channels whose input
//! is current only in NCHW (a network's image) reads that input directly
//! (`x_nchw`), so the first layer needs no conversion at all.
//!
//! Blocked: every one-group or depthwise (multiplier 1) convolution whose
//! filter (and bias) are f32 constants, whatever its channel count. With
//! few output channels most lanes are padding, but the NCHW products are
//! no better there (a 12-row microkernel on 6 rows), and staying blocked
//! spares the conversions and keeps the poolings on the blocked kernel:
//! LeNet-5's 6-channel first layer blocked runs the model about 7% faster
//! than NCHW (measured, `docs/benchmarks.md`). A grouped convolution whose
//! groups are whole 16-channel blocks (RegNet's 16-channel groups) is
//! blocked too: each group runs as a one-group convolution over its own
//! blocks (`rlx_core::blocked::blocked_grouped`). Other grouped
//! convolutions (groups of 4 or 8 channels, ResNeXt's) stay NCHW.

use std::collections::HashMap;

use rlx_sched::blocked::{
    blocked_grouped, channel_blocks, pack_conv_filter, pack_depthwise_filter, pad_channels, CHANNEL_BLOCK,
};
use rlx_sched::shapes::Conv2dShape;
use rlx_sched::winograd::{transform_winograd_filter, winograd_filter_len, winograd_pays};
use rlx_sched::{ActKind, BinaryOp, DType, Role, Step, StepArg, Thunk};

use super::{written, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk, Storage};
use rlx_sched::plan::PAD_MAX_RANK;
use rlx_sched::thunk::{
    Activation, BinaryFull, BlockedConv2D, BlockedPool2D, Conv2D, ElementwiseRegion, FromBlocked, Pad, Pool2D,
    ToBlocked, WinogradConv2D,
};

/// How a constant is rewritten for the blocked kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Packing {
    Filter,
    DepthwiseFilter,
    WinogradFilter,
    Bias,
}

/// `(n, c, hw)` of a tensor that has a blocked form.
type Dims3 = (usize, usize, usize);

/// Where each form of a tensor is and whether it holds the current value.
#[derive(Clone, Copy, Debug, Default)]
struct Forms {
    /// The blocked storage and the tensor's `(n, c, hw)`.
    blocked: Option<(usize, Dims3)>,
    blocked_current: bool,
    /// `false` only while the blocked form alone is current.
    plain_stale: bool,
}

/// Which stride-1 3x3 convolutions run by Winograd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Winograd {
    /// None: every one stays `BlockedConv2D`.
    Off,
    /// Where it pays (`winograd_pays`).
    Pays,
    /// Where it pays and its transformed f32 filter is at most
    /// [`HALF_MODEL_WINOGRAD_BYTES`]: a model stored in 2-byte floats,
    /// whose other filters stay 2-byte (`BlockedConv2DHalf`).
    PaysSmall,
}

/// The largest transformed filter a 2-byte model runs by Winograd: 4 MiB,
/// ResNet-18's 64- and 128-channel layers (0.6 and 2.4 MB, 2.9x and 3.3x
/// faster than direct) but not its 256- and 512-channel ones (9.4 and
/// 37.7 MB, 1.9x faster and not used; each 16x the bytes of its 2-byte
/// direct filter). `docs/onnx.md`, "2-byte floats".
pub(crate) const HALF_MODEL_WINOGRAD_BYTES: usize = 4 << 20;

struct Pass<'a> {
    lowered: &'a mut Lowered,
    winograd: Winograd,
    forms: HashMap<usize, Forms>,
    /// Packed filters and padded biases already written, by source.
    packed: HashMap<(usize, Packing), usize>,
    out: Vec<LoweredThunk>,
}

/// Rewrites convolution chains into the blocked layout, the stride-1 3x3
/// convolutions as `winograd` says.
pub(crate) fn block_channels(lowered: &mut Lowered, winograd: Winograd) {
    let thunks = std::mem::take(&mut lowered.thunks);
    let mut pass = Pass { lowered, winograd, forms: HashMap::new(), packed: HashMap::new(), out: Vec::new() };
    for lt in thunks {
        pass.thunk(lt);
    }
    // The caller reads outputs in NCHW.
    let outputs: Vec<usize> =
        (0..pass.lowered.storages.len()).filter(|&id| pass.lowered.storages[id].role == Role::Output).collect();
    for id in outputs {
        pass.make_plain_current(id);
    }
    pass.lowered.thunks = pass.out;
    fuse_residuals(lowered);
}

/// Folds a residual add, and an activation right after it, into the
/// one-group blocked convolution producing one of the add's operands
/// (`BlockedConv2D`'s `residual`): a ResNet block's `Add` + `Relu` then
/// cost nothing but a read of the skip tensor while the output is in L1.
/// Same bits: the kernel rounds the add and the activation as the
/// separate thunks do. Conditions: the convolution has no activation of
/// its own, the add is the only reader of its output, the skip tensor is
/// final when the convolution runs, and the add's destination is free
/// from the convolution on (not the skip tensor itself).
fn fuse_residuals(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    for i in 0..lowered.thunks.len() {
        let out = match lowered.thunks[i].thunk {
            Thunk::BlockedConv2D(BlockedConv2D { out, residual: None, act: ActKind::Identity, groups: 1, .. })
            | Thunk::WinogradConv2D(WinogradConv2D { out, residual: None, act: ActKind::Identity, .. }) => out,
            _ => continue,
        };
        let Some(j) = uses.sole_reader(out, i) else { continue };
        let Some((skip, act, dst)) = residual_add(&lowered.thunks[j].thunk, out) else { continue };
        let dst_free = dst == out || uses.touches[dst].iter().all(|&t| t >= j);
        if skip == out || dst == skip || !dst_free || uses.written_within(skip, i, j) || !rewrite.free(&[i, j]) {
            continue;
        }
        let mut thunk = lowered.thunks[i].thunk.clone();
        if let Thunk::BlockedConv2D(BlockedConv2D { residual, act: conv_act, out, .. })
        | Thunk::WinogradConv2D(WinogradConv2D { residual, act: conv_act, out, .. }) = &mut thunk
        {
            *residual = Some(skip);
            *conv_act = act;
            *out = dst;
        }
        let comment = format!("{} + {}", lowered.thunks[i].comment, lowered.thunks[j].comment);
        rewrite.remove(&[i, j]);
        rewrite.insert_before(i, LoweredThunk { thunk, comment });
    }
    rewrite.apply(lowered);
}

/// When `thunk` adds blocked tensor `conv_out` to another (`Add`, or an
/// `add` step then at most one activation): the other tensor, the
/// activation and the destination.
fn residual_add(thunk: &Thunk<usize>, conv_out: usize) -> Option<(usize, ActKind, usize)> {
    let (a, b, act, dst) = match thunk {
        Thunk::ElementwiseRegion(ElementwiseRegion { inputs, dst, steps, .. }) => {
            let [a, b] = inputs[..] else { return None };
            let act = match steps[..] {
                [Step::Binary { op: BinaryOp::Add, arg: StepArg::Input(1), reversed: false }] => ActKind::Identity,
                [Step::Binary { op: BinaryOp::Add, arg: StepArg::Input(1), reversed: false }, Step::Act(act)] => act,
                _ => return None,
            };
            (a, b, act, *dst)
        }
        Thunk::BinaryFull(BinaryFull {
            lhs,
            rhs,
            dst,
            op: BinaryOp::Add,
            len,
            lhs_len,
            rhs_len,
            out_dims_bcast,
            ..
        }) if lhs_len == len && rhs_len == len && out_dims_bcast.is_empty() => (*lhs, *rhs, ActKind::Identity, *dst),
        _ => return None,
    };
    match (a == conv_out, b == conv_out) {
        (true, false) => Some((b, act, dst)),
        (false, true) => Some((a, act, dst)),
        _ => None,
    }
}

impl Pass<'_> {
    fn thunk(&mut self, lt: LoweredThunk) {
        if let Some(rewritten) = self
            .conv(&lt)
            .or_else(|| self.pool(&lt))
            .or_else(|| self.pad(&lt))
            .or_else(|| self.elementwise(&lt))
            .or_else(|| self.per_channel(&lt))
        {
            self.out.push(rewritten);
            return;
        }
        // A plain thunk: every tensor it names in its plain form.
        for (_, &id) in lt.thunk.operands() {
            let root = self.root(id);
            self.make_plain_current(root);
        }
        for id in written(&lt.thunk) {
            let root = self.root(id);
            let storages = &self.lowered.storages;
            for (&named, f) in self.forms.iter_mut() {
                if storages[named].view.map_or(named, |(base, _)| base) == root {
                    f.blocked_current = false;
                }
            }
        }
        self.out.push(lt);
    }

    fn root(&self, id: usize) -> usize {
        self.lowered.storages[id].view.map_or(id, |(base, _)| base)
    }

    /// Converts the blocked form back when only it is current.
    fn make_plain_current(&mut self, id: usize) {
        let Some(f) = self.forms.get_mut(&id) else { return };
        if !f.plain_stale {
            return;
        }
        f.plain_stale = false;
        let (src, (n, c, hw)) = f.blocked.expect("a stale plain form has a blocked one");
        let comment = format!("{} back to NCHW", self.lowered.storages[id].name);
        self.out.push(LoweredThunk { thunk: Thunk::FromBlocked(FromBlocked { src, dst: id, n, c, hw }), comment });
    }

    /// The blocked storage of tensor `id` (`(n, c, hw)`), created on first use.
    fn blocked_storage(&mut self, id: usize, dims: Dims3) -> usize {
        if let Some((b, d)) = self.forms.get(&id).and_then(|f| f.blocked) {
            debug_assert_eq!(d, dims, "one tensor, one shape");
            return b;
        }
        let (n, c, hw) = dims;
        let source = &self.lowered.storages[id];
        let storage = Storage {
            // A view is named `base+offset`, which only operands may spell.
            name: format!("{}.blocked", source.name.replace('+', "_at")),
            shape: vec![n, channel_blocks(c), hw, CHANNEL_BLOCK],
            dtype: DType::F32,
            role: Role::Scratch,
            data: None,
            view: None,
            viewed: false,
        };
        self.lowered.storages.push(storage);
        let b = self.lowered.storages.len() - 1;
        self.forms.entry(id).or_default().blocked = Some((b, dims));
        b
    }

    /// The blocked form of input `id`, converted first if it is not current.
    fn blocked_input(&mut self, id: usize, dims: Dims3) -> usize {
        if let Some((b, d)) = self.current_blocked(id) {
            if d == dims {
                return b;
            }
        }
        let root = self.root(id);
        self.make_plain_current(root);
        let b = self.blocked_storage(id, dims);
        let (n, c, hw) = dims;
        let comment = format!("{} to the blocked layout", self.lowered.storages[id].name);
        self.out.push(LoweredThunk { thunk: Thunk::ToBlocked(ToBlocked { src: id, dst: b, n, c, hw }), comment });
        self.forms.get_mut(&id).expect("just created").blocked_current = true;
        b
    }

    fn current_blocked(&self, id: usize) -> Option<(usize, Dims3)> {
        self.forms.get(&id).filter(|f| f.blocked_current).and_then(|f| f.blocked)
    }

    /// Records that a blocked thunk wrote tensor `id`'s blocked form.
    fn wrote_blocked(&mut self, id: usize) {
        let f = self.forms.get_mut(&id).expect("the output's blocked form exists");
        f.blocked_current = true;
        f.plain_stale = true;
    }

    /// A packed copy of constant `id`, written once.
    fn packed_param(&mut self, id: usize, key: Packing, pack: impl FnOnce(&[f32]) -> Vec<f32>) -> usize {
        if let Some(&p) = self.packed.get(&(id, key)) {
            return p;
        }
        let source = &self.lowered.storages[id];
        let values = f32_values(source).expect("checked constant");
        let bytes: Vec<u8> = pack(&values).into_iter().flat_map(f32::to_le_bytes).collect();
        let storage = Storage {
            name: format!("{}.{}", source.name, if key == Packing::WinogradFilter { "winograd" } else { "blocked" }),
            shape: vec![bytes.len() / 4],
            dtype: DType::F32,
            role: Role::Param,
            data: Some(bytes),
            view: None,
            viewed: false,
        };
        self.lowered.storages.push(storage);
        let p = self.lowered.storages.len() - 1;
        self.packed.insert((id, key), p);
        p
    }

    fn conv(&mut self, lt: &LoweredThunk) -> Option<LoweredThunk> {
        let Thunk::Conv2D(Conv2D {
            x,
            w,
            bias,
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
            act,
        }) = lt.thunk
        else {
            return None;
        };
        let depthwise = groups > 1 && groups == c_in && groups == c_out;
        let shape = Conv2dShape { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups };
        let grouped = blocked_grouped(&shape);
        let constants = f32_values(&self.lowered.storages[w]).is_some()
            && bias.is_none_or(|b| f32_values(&self.lowered.storages[b]).is_some_and(|v| v.len() == c_out));
        if !(groups == 1 || depthwise || grouped) || !constants || self.out_is_viewed(out) {
            return None;
        }
        // A one-group convolution of fewer than 16 channels whose input is
        // current only in NCHW (a network's image) reads it as it is: a
        // blocked copy would be mostly padding lanes.
        let x_nchw = groups == 1 && c_in < CHANNEL_BLOCK && self.current_blocked(x).is_none();
        let x = if x_nchw {
            let root = self.root(x);
            self.make_plain_current(root);
            x
        } else {
            self.blocked_input(x, (n, c_in, h * w_in))
        };
        let winograd = !x_nchw
            && groups == 1
            && winograd_pays(&shape)
            && match self.winograd {
                Winograd::Off => false,
                Winograd::Pays => true,
                Winograd::PaysSmall => winograd_filter_len(c_out, c_in)
                    .is_some_and(|len| len.saturating_mul(4) <= HALF_MODEL_WINOGRAD_BYTES),
            };
        let w = if winograd {
            self.packed_param(w, Packing::WinogradFilter, |v| transform_winograd_filter(v, c_out, c_in))
        } else if depthwise {
            self.packed_param(w, Packing::DepthwiseFilter, |v| pack_depthwise_filter(v, c_out, kh, kw))
        } else {
            // Groups of whole blocks: each output block's filter reads its
            // group's `c_in / groups` channels.
            let c_in_g = c_in / groups;
            self.packed_param(w, Packing::Filter, |v| pack_conv_filter(v, c_out, c_in_g, kh, kw))
        };
        let bias = bias.map(|b| self.packed_param(b, Packing::Bias, pad_channels));
        let out = {
            let blocked_out = self.blocked_storage(out, (n, c_out, h_out * w_out));
            self.wrote_blocked(out);
            blocked_out
        };
        let residual = None;
        let thunk = if winograd {
            Thunk::WinogradConv2D(WinogradConv2D {
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
                ph,
                pw,
                act,
            })
        } else {
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
                groups,
                act,
                x_nchw,
            })
        };
        Some(LoweredThunk { thunk, comment: lt.comment.clone() })
    }

    /// A storage whose bytes some view reads stays NCHW: views name byte
    /// ranges of the plain layout.
    fn out_is_viewed(&self, id: usize) -> bool {
        let s = &self.lowered.storages[id];
        s.viewed || s.view.is_some()
    }

    fn pool(&mut self, lt: &LoweredThunk) -> Option<LoweredThunk> {
        let Thunk::Pool2D(Pool2D {
            src,
            dst,
            n,
            c,
            h,
            w,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            kind,
            count_include_pad,
        }) = lt.thunk
        else {
            return None;
        };
        let (src_b, dims) = self.current_blocked(src)?;
        if dims != (n, c, h * w) || self.out_is_viewed(dst) {
            return None;
        }
        let dst_b = self.blocked_storage(dst, (n, c, h_out * w_out));
        self.wrote_blocked(dst);
        let thunk = Thunk::BlockedPool2D(BlockedPool2D {
            src: src_b,
            dst: dst_b,
            n,
            c,
            h,
            w,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            kind,
            count_include_pad,
        });
        Some(LoweredThunk { thunk, comment: lt.comment.clone() })
    }

    /// A `Pad` of `[n, c, spatial...]` with the batch and channels
    /// unpadded whose source is current blocked pads the blocked form,
    /// viewed as `[n, cb, spatial..., 16]` (the lanes unpadded), into the
    /// output's blocked form.
    fn pad(&mut self, lt: &LoweredThunk) -> Option<LoweredThunk> {
        let Thunk::Pad(Pad { src, value, dst, ref dims, ref before, ref after, mode, elem_bytes: 4 }) = lt.thunk else {
            return None;
        };
        let spatial_only = (0..2).all(|d| before.get(d) == Some(&0) && after.get(d) == Some(&0));
        if dims.len() < 3 || dims.len() + 1 > PAD_MAX_RANK || !spatial_only {
            return None;
        }
        let (n, c) = (dims[0], dims[1]);
        let (src_b, src_dims) = self.current_blocked(src)?;
        if src_dims != (n, c, dims[2..].iter().product()) || self.out_is_viewed(dst) {
            return None;
        }
        let out_pixels = (2..dims.len()).map(|d| dims[d] + before[d] + after[d]).product();
        let dst_b = self.blocked_storage(dst, (n, c, out_pixels));
        self.wrote_blocked(dst);
        let blocked = |v: &[usize], outer: [usize; 2], lanes: usize| {
            let mut out = outer.to_vec();
            out.extend_from_slice(&v[2..]);
            out.push(lanes);
            out
        };
        let thunk = Thunk::Pad(Pad {
            src: src_b,
            value,
            dst: dst_b,
            dims: blocked(dims, [n, channel_blocks(c)], CHANNEL_BLOCK),
            before: blocked(before, [0, 0], 0),
            after: blocked(after, [0, 0], 0),
            mode,
            elem_bytes: 4,
        });
        Some(LoweredThunk { thunk, comment: lt.comment.clone() })
    }

    /// A same-length f32 elementwise thunk whose inputs all have a current
    /// blocked form of one shape runs on those forms (lane by lane, so the
    /// layout does not matter), over the padded length.
    fn elementwise(&mut self, lt: &LoweredThunk) -> Option<LoweredThunk> {
        let (inputs, dst): (Vec<usize>, usize) = match &lt.thunk {
            Thunk::Activation(Activation { src, dst, .. }) => (vec![*src], *dst),
            Thunk::ElementwiseRegion(ElementwiseRegion { inputs, dst, .. }) => (inputs.clone(), *dst),
            Thunk::BinaryFull(BinaryFull {
                lhs,
                rhs,
                dst,
                len,
                lhs_len,
                rhs_len,
                elem_bytes: 4,
                out_dims_bcast,
                ..
            }) if lhs_len == len && rhs_len == len && out_dims_bcast.is_empty() => (vec![*lhs, *rhs], *dst),
            _ => return None,
        };
        let blocked: Vec<(usize, Dims3)> = inputs.iter().map(|&id| self.current_blocked(id)).collect::<Option<_>>()?;
        let dims = blocked[0].1;
        if blocked.iter().any(|&(_, d)| d != dims) || self.out_is_viewed(dst) {
            return None;
        }
        let len = dims.0 * channel_blocks(dims.1) * dims.2 * CHANNEL_BLOCK;
        let map: HashMap<usize, usize> = inputs.iter().zip(&blocked).map(|(&id, &(b, _))| (id, b)).collect();
        let dst_b = match map.get(&dst) {
            Some(&b) => b,
            None => self.blocked_storage(dst, dims),
        };
        let thunk = match lt.thunk.clone() {
            Thunk::Activation(Activation { src, act, .. }) => {
                Thunk::Activation(Activation { src: map[&src], dst: dst_b, len, act })
            }
            Thunk::ElementwiseRegion(ElementwiseRegion { inputs, steps, .. }) => {
                Thunk::ElementwiseRegion(ElementwiseRegion {
                    inputs: inputs.iter().map(|i| map[i]).collect(),
                    dst: dst_b,
                    len,
                    steps,
                })
            }
            Thunk::BinaryFull(BinaryFull {
                lhs,
                rhs,
                op,
                out_dims_bcast,
                bcast_lhs_strides,
                bcast_rhs_strides,
                elem_bytes,
                ..
            }) => Thunk::BinaryFull(BinaryFull {
                lhs: map[&lhs],
                rhs: map[&rhs],
                dst: dst_b,
                len,
                lhs_len: len,
                rhs_len: len,
                op,
                out_dims_bcast,
                bcast_lhs_strides,
                bcast_rhs_strides,
                elem_bytes,
            }),
            _ => unreachable!("matched above"),
        };
        self.wrote_blocked(dst);
        Some(LoweredThunk { thunk, comment: lt.comment.clone() })
    }
}

impl Pass<'_> {
    /// A binary of a blocked tensor `[n, c, h, w]` and one value per
    /// channel (`[n, c, 1, 1]` computed, as squeeze-and-excitation scales
    /// are; or a `[c]`-valued constant, as a per-channel affine has) runs
    /// on the blocked forms: the per-channel operand blocked too
    /// (`[n, cb, 1, 16]`, a constant padded once), read with stride 0
    /// along the pixels. Element for element the same operation: same
    /// bits.
    fn per_channel(&mut self, lt: &LoweredThunk) -> Option<LoweredThunk> {
        let Thunk::BinaryFull(BinaryFull {
            lhs,
            rhs,
            dst,
            len,
            lhs_len,
            rhs_len,
            op,
            ref out_dims_bcast,
            ref bcast_lhs_strides,
            ref bcast_rhs_strides,
            elem_bytes: 4,
        }) = lt.thunk
        else {
            return None;
        };
        use rlx_sched::plan::BinaryPath;
        let path =
            rlx_sched::plan::binary_path(len, lhs_len, rhs_len, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides);
        // The per-channel operand's side, and whether it holds a value per
        // image (`[n, c, 1, 1]`) or one shared by all (`[c, 1, 1]`, n > 1:
        // the strided form reading it with stride 0 along the images).
        let (chan_rhs, per_image) = match &path {
            BinaryPath::ColRhs { .. } => (true, true),
            BinaryPath::ColLhs { .. } => (false, true),
            BinaryPath::Strided { dims, lhs_strides, rhs_strides } if dims.len() == 3 => {
                let (c, hw) = (dims[1], dims[2]);
                let full = [c * hw, hw, 1];
                if lhs_strides == &full && rhs_strides == &[0, 1, 0] {
                    (true, false)
                } else if rhs_strides == &full && lhs_strides == &[0, 1, 0] {
                    (false, false)
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        let (full, chan) = if chan_rhs { (lhs, rhs) } else { (rhs, lhs) };
        let (full_b, dims) = self.current_blocked(full)?;
        let (n, c, hw) = dims;
        let chan_len = if chan_rhs { rhs_len } else { lhs_len };
        let expected = match &path {
            BinaryPath::ColRhs { row } | BinaryPath::ColLhs { row } => *row == hw && chan_len == n * c,
            BinaryPath::Strided { dims, .. } => dims.as_slice() == [n, c, hw] && chan_len == c,
            _ => false,
        };
        if !expected || len != n * c * hw || self.out_is_viewed(dst) || dst == chan {
            return None;
        }
        let cb = channel_blocks(c);
        let chan_b = match self.current_blocked(chan) {
            Some((b, d)) if per_image && d == (n, c, 1) => b,
            _ if (!per_image || n == 1) && f32_values(&self.lowered.storages[chan]).is_some() => {
                self.packed_param(chan, Packing::Bias, pad_channels)
            }
            // A computed per-channel tensor: its blocked form is small.
            _ if per_image && self.lowered.storages[chan].role != Role::Param => self.blocked_input(chan, (n, c, 1)),
            _ => return None,
        };
        let dst_b = if dst == full { full_b } else { self.blocked_storage(dst, dims) };
        let block = CHANNEL_BLOCK;
        let blocked_len = n * cb * hw * block;
        // `[n, cb, hw, 16]`; the per-channel operand is `[n or 1, cb, 1, 16]`.
        let full_strides = vec![cb * hw * block, hw * block, block, 1];
        let (chan_len_b, chan_strides) = if per_image {
            (n * cb * block, vec![cb * block, block, 0, 1])
        } else {
            (cb * block, vec![0, block, 0, 1])
        };
        let (l, r, ll, rl, ls, rs) = if chan_rhs {
            (full_b, chan_b, blocked_len, chan_len_b, full_strides, chan_strides)
        } else {
            (chan_b, full_b, chan_len_b, blocked_len, chan_strides, full_strides)
        };
        let thunk = Thunk::BinaryFull(BinaryFull {
            lhs: l,
            rhs: r,
            dst: dst_b,
            len: blocked_len,
            lhs_len: ll,
            rhs_len: rl,
            op,
            out_dims_bcast: vec![n, cb, hw, block],
            bcast_lhs_strides: ls,
            bcast_rhs_strides: rs,
            elem_bytes: 4,
        });
        self.wrote_blocked(dst);
        Some(LoweredThunk { thunk, comment: lt.comment.clone() })
    }
}

/// The values of an f32 constant of its own (not a view).
fn f32_values(s: &Storage) -> Option<Vec<f32>> {
    let data = s.data.as_deref()?;
    (s.role == Role::Param && s.dtype == DType::F32 && s.view.is_none())
        .then(|| data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect())
}
