//! Passes over lowered thunks before memory planning:
//!
//! - **bias fusion**: an `Sgemm` followed by the flat-form `Add` of a row
//!   bias of `n` elements to its result, when nothing else reads the
//!   product, becomes a `FusedMmBiasAct` (ONNX `MatMul` + `Add`);
//! - **activation fusion**: `FusedMmBiasAct` (identity) followed by an
//!   `Activation` of its result, when nothing else reads that result,
//!   becomes one `FusedMmBiasAct` with the activation;
//! - **in place**: an `Activation`, `Softmax` or `BinaryFull` whose input
//!   is a scratch buffer read for the last time by that thunk writes over
//!   that input (an exact alias, which the validator allows for these
//!   kinds) instead of a new buffer;
//! - **residual + LayerNorm**: the `Add` of two full-length tensors
//!   followed by a `LayerNorm` (with a shift) of the sum, when nothing else
//!   reads the sum, becomes one `FusedResidualLN`.
//!
//! Both merge the output's storage into the input's; the merged storage
//! keeps the output's role, name and shape when the output is a graph
//! output.

use rlx_sched::{ActKind, BinaryOp, Role, Thunk};

use crate::lower::{Lowered, LoweredThunk};

/// Runs the passes in place.
pub(crate) fn optimize(lowered: &mut Lowered) {
    let n = lowered.storages.len();
    // Where each storage went: `alias[i] == i` while it is its own.
    let mut alias: Vec<usize> = (0..n).collect();
    let mut last = last_uses(&lowered.thunks, n);
    let mut kept: Vec<LoweredThunk> = Vec::with_capacity(lowered.thunks.len());
    for (t, mut lt) in std::mem::take(&mut lowered.thunks).into_iter().enumerate() {
        lt.thunk = remap(lt.thunk, &alias);
        // A merge is safe when the input is scratch, read for the last time
        // here, and the output is a fresh scratch or output storage of the
        // same size (dst != src: not already in place).
        let mergeable = |src: usize, dst: usize, storages: &[crate::lower::Storage], last: &[usize]| {
            src != dst
                && storages[src].is_plain()
                && storages[dst].is_plain()
                && storages[src].role == Role::Scratch
                && matches!(storages[dst].role, Role::Scratch | Role::Output)
                && last[src] == t
                && elems(&storages[src].shape) == elems(&storages[dst].shape)
                && storages[src].dtype == storages[dst].dtype
        };
        if let (Thunk::Activation { src, dst, act, .. }, Some(prev)) = (&lt.thunk, kept.last_mut()) {
            if let Thunk::FusedMmBiasAct { c, act: prev_act @ ActKind::Identity, .. } = &mut prev.thunk {
                if *c == *src && mergeable(*src, *dst, &lowered.storages, &last) {
                    *prev_act = *act;
                    prev.comment = format!("{} + {}", prev.comment, lt.comment);
                    merge(lowered, &mut alias, &mut last, *src, *dst);
                    continue;
                }
            }
        }
        if let (Thunk::BinaryFull { .. }, Some(prev)) = (&lt.thunk, kept.last_mut()) {
            if let Some((bias, dst)) = bias_of_product(&prev.thunk, &lt.thunk) {
                let Thunk::Sgemm { a, b, c, m, k, n } = prev.thunk else { unreachable!("checked by bias_of_product") };
                if mergeable(c, dst, &lowered.storages, &last) {
                    prev.thunk = Thunk::FusedMmBiasAct { a, w: b, bias, c, m, k, n, act: ActKind::Identity };
                    prev.comment = format!("{} + {}", prev.comment, lt.comment);
                    merge(lowered, &mut alias, &mut last, c, dst);
                    continue;
                }
            }
        }
        if let (Thunk::LayerNorm { x, g, b: Some(b), out, rows, h, eps }, Some(prev)) = (&lt.thunk, kept.last_mut()) {
            let sum_is_dead =
                lowered.storages[*x].role == Role::Scratch && lowered.storages[*x].is_plain() && last[*x] == t;
            if let Some((lhs, rhs)) = residual_add(&prev.thunk, *x, rows * h).filter(|_| sum_is_dead) {
                prev.thunk = Thunk::FusedResidualLN {
                    x: lhs,
                    res: rhs,
                    bias: None,
                    g: *g,
                    b: *b,
                    out: *out,
                    rows: *rows,
                    h: *h,
                    eps: *eps,
                };
                prev.comment = format!("{} + {}", prev.comment, lt.comment);
                // Nothing reads the sum any more: its storage goes (unless
                // the add already worked in place over `lhs`, which the
                // fused thunk now reads).
                let sum = *x;
                if sum != lhs && sum != rhs {
                    for a in alias.iter_mut().filter(|a| **a == sum) {
                        *a = lhs;
                    }
                }
                continue;
            }
        }
        let in_place = match &lt.thunk {
            Thunk::Activation { src, dst, .. } | Thunk::Softmax { src, dst, .. } => Some((*src, *dst)),
            Thunk::BinaryFull {
                lhs,
                rhs,
                dst,
                len,
                lhs_len,
                rhs_len,
                out_dims_bcast,
                bcast_lhs_strides,
                bcast_rhs_strides,
                ..
            } => {
                let identical = |op_len: usize, strides: &[usize]| {
                    op_len == *len && rlx_sched::plan::reads_identically(*len, op_len, out_dims_bcast, strides)
                };
                if identical(*lhs_len, bcast_lhs_strides) && mergeable(*lhs, *dst, &lowered.storages, &last) {
                    Some((*lhs, *dst))
                } else if identical(*rhs_len, bcast_rhs_strides) {
                    Some((*rhs, *dst))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some((src, dst)) = in_place {
            if mergeable(src, dst, &lowered.storages, &last) {
                merge(lowered, &mut alias, &mut last, src, dst);
                lt.thunk = remap(lt.thunk, &alias);
            }
        }
        kept.push(lt);
    }
    lowered.thunks = kept;
    compact(lowered, &alias);
}

/// When `add` adds a row bias of `n` elements (flat form, either operand
/// order) to the whole result of the `Sgemm` `product`: the bias and the
/// add's output.
fn bias_of_product(product: &Thunk<usize>, add: &Thunk<usize>) -> Option<(usize, usize)> {
    let Thunk::Sgemm { c, m, n, .. } = *product else { return None };
    let Thunk::BinaryFull { lhs, rhs, dst, len, lhs_len, rhs_len, op: BinaryOp::Add, out_dims_bcast, .. } = add else {
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
    let Thunk::BinaryFull {
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
    } = add
    else {
        return None;
    };
    let full = |op_len: usize, strides: &[usize]| {
        op_len == len && rlx_sched::plan::reads_identically(len, op_len, out_dims_bcast, strides)
    };
    (*dst == sum && *add_len == len && full(*lhs_len, bcast_lhs_strides) && full(*rhs_len, bcast_rhs_strides))
        .then_some((*lhs, *rhs))
}

fn elems(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn last_uses(thunks: &[LoweredThunk], n: usize) -> Vec<usize> {
    let mut last = vec![0usize; n];
    for (t, lt) in thunks.iter().enumerate() {
        for (_, &id) in lt.thunk.operands() {
            last[id] = last[id].max(t);
        }
    }
    last
}

fn remap(thunk: Thunk<usize>, alias: &[usize]) -> Thunk<usize> {
    thunk
        .map_operands(&mut |_, id: usize| Ok::<_, std::convert::Infallible>(alias[id]))
        .unwrap_or_else(|_: Vec<std::convert::Infallible>| unreachable!("remapping cannot fail"))
}

/// Folds storage `dst` into `src`: later thunks naming `dst` name `src`.
fn merge(lowered: &mut Lowered, alias: &mut [usize], last: &mut [usize], src: usize, dst: usize) {
    for a in alias.iter_mut() {
        if *a == dst {
            *a = src;
        }
    }
    last[src] = last[dst];
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

/// Drops merged-away storages and renumbers operands.
fn compact(lowered: &mut Lowered, alias: &[usize]) {
    let mut new_index = vec![usize::MAX; alias.len()];
    let mut storages = Vec::new();
    for (i, s) in lowered.storages.iter().enumerate() {
        if alias[i] == i {
            new_index[i] = storages.len();
            storages.push(s.clone());
        }
    }
    lowered.storages = storages;
    for lt in &mut lowered.thunks {
        let t = std::mem::replace(&mut lt.thunk, Thunk::Nop {});
        lt.thunk = remap(t, &new_index);
    }
}
