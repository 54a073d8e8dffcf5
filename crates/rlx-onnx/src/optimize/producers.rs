//! Fusions into the thunk just before:
//!
//! - **bias**: an `Sgemm` followed by the flat-form `Add` of a row bias of
//!   `n` elements to its result, when nothing else reads the product,
//!   becomes a `FusedMmBiasAct` (ONNX `MatMul` + `Add`);
//! - **activation**: `FusedMmBiasAct` or `Conv2D` (identity) followed by
//!   an `Activation` of its result, when nothing else reads that result,
//!   becomes one `FusedMmBiasAct` / `Conv2D` with the activation;
//! - **residual + LayerNorm**: the `Add` of two full-length tensors
//!   followed by a `LayerNorm` (with a shift) of the sum, when nothing else
//!   reads the sum, becomes one `FusedResidualLN`.
//!
//! The first two merge the output's storage into the input's; the merged
//! storage keeps the output's role, name and shape when the output is a
//! graph output, and views of the output become views of it.

use rlx_sched::{ActKind, BinaryOp, Role, Thunk};

use super::{compact, elems, remap};
use crate::lower::{Lowered, LoweredThunk, Storage};
use rlx_sched::thunk::{Activation, BinaryFull, Conv2D, FusedMmBiasAct, FusedResidualLN, LayerNorm, Sgemm};

/// Runs the three fusions in one sweep.
pub(super) fn fuse_into_producers(lowered: &mut Lowered) {
    let n = lowered.storages.len();
    let mut aliases = Aliases::new(&lowered.storages);
    let mut live = Liveness::new(&lowered.thunks, n);
    let mut kept: Vec<LoweredThunk> = Vec::with_capacity(lowered.thunks.len());
    for (t, mut lt) in std::mem::take(&mut lowered.thunks).into_iter().enumerate() {
        lt.thunk = remap(lt.thunk, &aliases.of);
        if let (Thunk::Activation(Activation { src, dst, act, .. }), Some(prev)) = (&lt.thunk, kept.last_mut()) {
            let produced = match &mut prev.thunk {
                Thunk::FusedMmBiasAct(FusedMmBiasAct { c, act: prev_act @ ActKind::Identity, .. }) => {
                    Some((*c, prev_act))
                }
                Thunk::Conv2D(Conv2D { out, act: prev_act @ ActKind::Identity, .. }) => Some((*out, prev_act)),
                _ => None,
            };
            if let Some((c, prev_act)) = produced {
                if c == *src && mergeable(&lowered.storages, &live, t, *src, *dst) {
                    *prev_act = *act;
                    prev.comment = format!("{} + {}", prev.comment, lt.comment);
                    merge(lowered, &mut aliases, &mut live, *src, *dst);
                    continue;
                }
            }
        }
        if let (Thunk::BinaryFull { .. }, Some(prev)) = (&lt.thunk, kept.last_mut()) {
            if let Some((bias, dst)) = bias_of_product(&prev.thunk, &lt.thunk) {
                let Thunk::Sgemm(Sgemm { a, b, c, m, k, n }) = prev.thunk else {
                    unreachable!("checked by bias_of_product")
                };
                if mergeable(&lowered.storages, &live, t, c, dst) {
                    prev.thunk =
                        Thunk::FusedMmBiasAct(FusedMmBiasAct { a, w: b, bias, c, m, k, n, act: ActKind::Identity });
                    prev.comment = format!("{} + {}", prev.comment, lt.comment);
                    merge(lowered, &mut aliases, &mut live, c, dst);
                    continue;
                }
            }
        }
        if let (Thunk::LayerNorm(LayerNorm { x, g, b: Some(b), out, rows, h, eps }), Some(prev)) =
            (&lt.thunk, kept.last_mut())
        {
            let sum_is_dead =
                lowered.storages[*x].role == Role::Scratch && lowered.storages[*x].is_plain() && live.last[*x] == t;
            if let Some((lhs, rhs)) = residual_add(&prev.thunk, *x, rows * h).filter(|_| sum_is_dead) {
                prev.thunk = Thunk::FusedResidualLN(FusedResidualLN {
                    x: lhs,
                    res: rhs,
                    bias: None,
                    g: *g,
                    b: *b,
                    out: *out,
                    rows: *rows,
                    h: *h,
                    eps: *eps,
                });
                prev.comment = format!("{} + {}", prev.comment, lt.comment);
                // Nothing names the sum any more: the final prune drops it.
                continue;
            }
        }
        kept.push(lt);
    }
    lowered.thunks = kept;
    compact(lowered, &aliases.of);
}

/// Whether the output `dst` of thunk `t` may take over the storage `src`
/// it reads: `src` is plain scratch read for the last time at `t`, `dst`
/// a distinct scratch or output storage (not a view; views of it, such as
/// the parts of a stacked projection, move with it: [`merge`]) of the same
/// size and type that no thunk before `t` names (thunks already passed are
/// not renamed).
pub(super) fn mergeable(storages: &[Storage], live: &Liveness, t: usize, src: usize, dst: usize) -> bool {
    src != dst
        && storages[src].is_plain()
        && storages[dst].view.is_none()
        && storages[src].role == Role::Scratch
        && matches!(storages[dst].role, Role::Scratch | Role::Output)
        && live.last[src] == t
        && live.first[dst] == t
        && elems(&storages[src].shape) == elems(&storages[dst].shape)
        && storages[src].dtype == storages[dst].dtype
}

/// When `add` adds a row bias of `n` elements (flat form, either operand
/// order) to the whole result of the `Sgemm` `product`: the bias and the
/// add's output.
fn bias_of_product(product: &Thunk<usize>, add: &Thunk<usize>) -> Option<(usize, usize)> {
    let Thunk::Sgemm(Sgemm { c, m, n, .. }) = *product else { return None };
    let Thunk::BinaryFull(BinaryFull {
        lhs, rhs, dst, len, lhs_len, rhs_len, op: BinaryOp::Add, out_dims_bcast, ..
    }) = add
    else {
        return None;
    };
    if !out_dims_bcast.is_empty() || *len != m * n {
        return None;
    }
    if *lhs == c && *lhs_len == *len && *rhs != c && *rhs_len == n {
        Some((*rhs, *dst))
    } else if *rhs == c && *rhs_len == *len && *lhs != c && *lhs_len == n {
        Some((*lhs, *dst))
    } else {
        None
    }
}

/// When `add` is the element-for-element f32 `Add` of two full-length
/// operands into `sum` (`len` elements): its two operands.
fn residual_add(add: &Thunk<usize>, sum: usize, len: usize) -> Option<(usize, usize)> {
    let Thunk::BinaryFull(BinaryFull {
        lhs,
        rhs,
        dst,
        len: add_len,
        lhs_len,
        rhs_len,
        op: BinaryOp::Add,
        out_dims_bcast,
        bcast_lhs_strides,
        bcast_rhs_strides,
        elem_bytes: 4,
    }) = add
    else {
        return None;
    };
    let full = |op_len: usize, strides: &[usize]| {
        op_len == len && rlx_sched::plan::reads_identically(len, op_len, out_dims_bcast, strides)
    };
    (*dst == sum && *add_len == len && full(*lhs_len, bcast_lhs_strides) && full(*rhs_len, bcast_rhs_strides))
        .then_some((*lhs, *rhs))
}

/// The first and last thunk naming each storage.
pub(super) struct Liveness {
    /// `usize::MAX` for a storage no thunk names.
    pub first: Vec<usize>,
    pub last: Vec<usize>,
}

impl Liveness {
    pub(super) fn new(thunks: &[LoweredThunk], n: usize) -> Self {
        let (mut first, mut last) = (vec![usize::MAX; n], vec![0usize; n]);
        for (t, lt) in thunks.iter().enumerate() {
            for (_, &id) in lt.thunk.operands() {
                first[id] = first[id].min(t);
                last[id] = last[id].max(t);
            }
        }
        Liveness { first, last }
    }
}

/// Where each storage went as storages are merged, with what it takes to
/// merge in time independent of the number of storages.
pub(super) struct Aliases {
    /// `of[i] == i` while storage `i` is its own.
    pub of: Vec<usize>,
    /// The storages `of` sends to each storage (itself included).
    members: Vec<Vec<usize>>,
    /// The views of each base storage.
    views: Vec<Vec<usize>>,
}

impl Aliases {
    pub(super) fn new(storages: &[Storage]) -> Self {
        let n = storages.len();
        let mut views = vec![Vec::new(); n];
        for (i, s) in storages.iter().enumerate() {
            if let Some((base, _)) = s.view {
                views[base].push(i);
            }
        }
        Aliases { of: (0..n).collect(), members: (0..n).map(|i| vec![i]).collect(), views }
    }
}

/// Folds storage `dst` into `src`: later thunks naming `dst` name `src`,
/// and views of `dst` view `src`.
pub(super) fn merge(lowered: &mut Lowered, aliases: &mut Aliases, live: &mut Liveness, src: usize, dst: usize) {
    for i in std::mem::take(&mut aliases.members[dst]) {
        aliases.of[i] = src;
        aliases.members[src].push(i);
    }
    let views = std::mem::take(&mut aliases.views[dst]);
    for &v in &views {
        if let Some((base, _)) = &mut lowered.storages[v].view {
            *base = src;
        }
    }
    if !views.is_empty() {
        lowered.storages[src].viewed = true;
    }
    aliases.views[src].extend(views);
    live.last[src] = live.last[dst];
    let (role, name, shape) = {
        let d = &lowered.storages[dst];
        (d.role, d.name.clone(), d.shape.clone())
    };
    if role == Role::Output {
        let s = &mut lowered.storages[src];
        s.role = Role::Output;
        s.name = name;
        s.shape = shape;
    }
}
