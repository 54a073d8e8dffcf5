//! Attention: the subgraph exporters write for BERT-style eager attention
//! becomes one `Attention` thunk. After lowering it reads (Reshapes are
//! views, so they leave no thunk):
//!
//! ```text
//! Qt = Transpose(q as [B,S,H,D], perm 0,2,1,3)     [B,H,S,D]    (optionally Qt = Mul(Qt, c_q))
//! Kt = Transpose(k as [B,KV,H,D], perm 0,2,3,1)    [B,H,D,KV]   (optionally Kt = Mul(Kt, c_k))
//! Vt = Transpose(v as [B,KV,H,Dv], perm 0,2,1,3)   [B,H,KV,Dv]
//! S  = BatchedSgemm(Qt, Kt)                        [B,H,S,KV]
//! S  = Mul(S, c) or Div(S, c)                      (optional)
//! S  = Add(S, mask)                                (optional, any broadcast, either order)
//! P  = Softmax(S) over the last axis
//! O  = BatchedSgemm(P, Vt)                         [B,H,S,Dv]
//! out = Transpose(O, perm 0,2,1,3)                 [B,S,H,Dv]
//! ```
//!
//! The `Attention` reads `q`, `k` and `v` in place (BSHD, row strides
//! `H*D`, `H*D`, `H*Dv`), scales by `c_q * c_k * c` (`1/c` for the `Div`),
//! adds the mask as a `bias` and writes `out` directly. The kernel adds
//! the mask to the scaled scores before its softmax exactly as the graph
//! does, so a hidden key (bias `-3.4e38` or `-inf`) gets the same zero
//! weight and a row hiding every key the same uniform (or zero) weights.
//!
//! The kernel wants the mask as `[B, H, S, KV]`; a mask the graph
//! broadcasts (over heads, or a `[B, 1, 1, KV]` key-padding row) is
//! materialised once by a `Transpose` with stride-0 axes into a new
//! scratch buffer, before the first attention that reads it, and shared
//! by every attention reading the same mask the same way.
//!
//! One image (batch 1) may also come in the layout torch's
//! `nn.MultiheadAttention` exports, once the transposes pass has composed
//! its head splits: heads `[H, S, D]` (`[H, D, KV]` for the key) read from
//! rows of any stride at least `H * D` (q, k and v parts of one stacked
//! projection, rows `3 * H * D` apart), and the merged output `[S, H, Dv]`
//! with its size-1 batch axis anywhere; axes of size 1 are ignored when
//! the reads are compared, and the `Attention` gets each row stride.
//!
//! Any deviation leaves the graph as it is: another permutation, an
//! intermediate read by another thunk (or a graph output), a softmax over
//! another axis, the scale after the mask, a batch-broadcast product.

use std::collections::BTreeSet;

use rlx_sched::{BinaryOp, DType, MaskKind, Role, Thunk};

use super::{binary, fused_comment, is_private, Arg, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk, Storage};
use rlx_sched::thunk::{Attention, BatchedSgemm, BinaryFull, Compare, Sgemm, Softmax, Transpose, Where};

/// The sizes of one attention.
#[derive(Clone, Copy, Debug)]
struct Dims {
    batch: usize,
    heads: usize,
    seq: usize,
    kv_seq: usize,
    head_dim: usize,
    v_head_dim: usize,
    /// `batch * heads * seq * kv_seq`: the scores.
    scores: usize,
    /// The row strides of q and k (`heads * head_dim`, or wider when q,
    /// k and v are parts of one stacked projection).
    q_row: usize,
    k_row: usize,
    /// `heads * v_head_dim`: the row stride of v.
    v_row: usize,
}

/// How the graph's score `Add` reads its mask operand.
#[derive(Clone, Debug, PartialEq)]
struct MaskRead {
    storage: usize,
    op_len: usize,
    out_dims: Vec<usize>,
    strides: Vec<usize>,
}

/// A matched attention.
#[derive(Clone, Debug)]
struct Site {
    /// Every thunk of the pattern; the `Attention` goes where the last
    /// one (the output transpose, `out_at`) was.
    thunks: Vec<usize>,
    out_at: usize,
    q: usize,
    k: usize,
    v: usize,
    out: usize,
    /// The steps from the first bias on (empty without a mask).
    bias: Vec<ScoreStep>,
    dims: Dims,
    scale: f32,
}

/// A bias operand built for the kernel: `thunks` write a new
/// `[batch, heads, seq, kv_seq]` scratch `dst` (`PLACEHOLDER` in `key`).
struct Materialised {
    /// The thunks with `PLACEHOLDER` for `dst`: sites with equal keys
    /// share one bias.
    key: Vec<Thunk<usize>>,
    /// The storage the name of `dst` comes from.
    named_after: usize,
    dst: usize,
    /// Index of the first thunk (an attention) reading `dst`: the
    /// thunks go right before it.
    at: usize,
}

/// Stands for a materialised bias in [`Materialised::key`].
const PLACEHOLDER: usize = usize::MAX;

/// A product of matrices: `Sgemm` as a batch of one.
#[derive(Clone, Copy, Debug)]
struct Product {
    a: usize,
    b: usize,
    c: usize,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
}

fn product(thunk: &Thunk<usize>) -> Option<Product> {
    match *thunk {
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: false, b_bcast: false }) => {
            Some(Product { a, b, c, batch, m, k, n })
        }
        Thunk::Sgemm(Sgemm { a, b, c, m, k, n }) => Some(Product { a, b, c, batch: 1, m, k, n }),
        _ => None,
    }
}

/// The product of `xs`, `None` on overflow.
fn prod(xs: &[usize]) -> Option<usize> {
    xs.iter().try_fold(1usize, |acc, &x| acc.checked_mul(x))
}

/// When `thunk` is the f32 `Transpose` writing `dst` with output dims
/// `dims` that reads its source with `strides` (on every axis longer than
/// one; a size-1 axis never steps): its source. `None` strides (an
/// overflowed size) match nothing.
fn head_transpose(thunk: &Thunk<usize>, dst: usize, dims: [usize; 4], strides: [Option<usize>; 4]) -> Option<usize> {
    let mut axes = Vec::with_capacity(4);
    for (&n, s) in dims.iter().zip(strides) {
        if n != 1 {
            axes.push((n, Some(s?)));
        }
    }
    strided_read(thunk, dst, &axes, 0).map(|(src, _)| src)
}

/// When `thunk` is the f32 `Transpose` writing `dst` whose axes longer
/// than one are `axes` (size, stride) in order, `None` standing for one row
/// stride of at least `min_row` shared by those axes (a row axis of size
/// one takes any): its source and that row stride (0 when no axis has
/// it). The source must hold every element the read reaches.
fn strided_read(
    thunk: &Thunk<usize>,
    dst: usize,
    axes: &[(usize, Option<usize>)],
    min_row: usize,
) -> Option<(usize, usize)> {
    let Thunk::Transpose(Transpose { src, dst: d, in_total, ref out_dims, ref in_strides, elem_bytes: 4 }) = *thunk
    else {
        return None;
    };
    if d != dst {
        return None;
    }
    let read: Vec<(usize, usize)> =
        out_dims.iter().zip(in_strides).filter(|(&n, _)| n != 1).map(|(&n, &s)| (n, s)).collect();
    let want: Vec<(usize, Option<usize>)> = axes.iter().copied().filter(|(n, _)| *n != 1).collect();
    // As written, else with adjacent axes that step as one merged on both
    // sides (heads split from batch, `[b, h]` read as `[b * h]`).
    match_axes(&read, &want, min_row, in_total)
        .or_else(|| {
            let read: Vec<(usize, Option<usize>)> = read.iter().map(|&(n, s)| (n, Some(s))).collect();
            let read: Vec<(usize, usize)> = merge_axes(&read).into_iter().map(|(n, s)| (n, s.unwrap_or(0))).collect();
            match_axes(&read, &merge_axes(&want), min_row, in_total)
        })
        .map(|row| (src, row))
}

/// Adjacent axes (size, stride) merged where the outer one steps over the
/// whole inner one (`stride_outer == size_inner * stride_inner`); an axis
/// of unknown stride (`None`) merges with nothing.
fn merge_axes(axes: &[(usize, Option<usize>)]) -> Vec<(usize, Option<usize>)> {
    let mut out: Vec<(usize, Option<usize>)> = Vec::with_capacity(axes.len());
    for &(n, s) in axes {
        match (out.last_mut(), s) {
            (Some((on, Some(os))), Some(s)) if n.checked_mul(s) == Some(*os) => {
                *on *= n;
                *os = s;
            }
            _ => out.push((n, s)),
        }
    }
    out
}

/// [`strided_read`]'s comparison of the read axes with the wanted ones:
/// the row stride.
fn match_axes(
    read: &[(usize, usize)],
    want: &[(usize, Option<usize>)],
    min_row: usize,
    in_total: usize,
) -> Option<usize> {
    if read.len() != want.len() {
        return None;
    }
    let mut row = None;
    for (&(n, s), &(wn, ws)) in read.iter().zip(want) {
        match ws {
            _ if n != wn => return None,
            Some(w) if w != s => return None,
            Some(_) => {}
            None if s < min_row || row.is_some_and(|r| r != s) => return None,
            None => row = Some(s),
        }
    }
    // The last element read, plus one.
    let reach = read.iter().try_fold(1usize, |acc, &(n, s)| acc.checked_add((n - 1).checked_mul(s)?))?;
    (reach <= in_total).then_some(row.unwrap_or(if want.iter().any(|a| a.1.is_none()) { min_row } else { 0 }))
}

/// Runs the pass.
pub(super) fn fuse_attention(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    let mut sites = Vec::new();
    for t in 0..lowered.thunks.len() {
        if let Some(site) = match_at(lowered, &uses, t).filter(|s| rewrite.free(&s.thunks)) {
            rewrite.remove(&site.thunks);
            sites.push(site);
        }
    }
    // A boolean mask first on the scores starts its bias from zeros.
    let zero = sites.iter().any(|s| matches!(s.bias.first(), Some(ScoreStep::Select { .. }))).then(|| {
        let name = unique_name(lowered, "attention_mask_zero".to_string());
        lowered.storages.push(super::param(name, DType::F32, 0f32.to_le_bytes().to_vec()));
        lowered.storages.len() - 1
    });
    // One bias per distinct program; a single bias read as it is needs none.
    let mut shared: Vec<Materialised> = Vec::new();
    let mut masks = Vec::with_capacity(sites.len());
    for site in &sites {
        let len = site.dims.scores;
        let operand = match site.bias.as_slice() {
            [] => None,
            [ScoreStep::Bias { read: m, .. }]
                if m.op_len == len && rlx_sched::plan::reads_identically(len, m.op_len, &m.out_dims, &m.strides) =>
            {
                Some(m.storage)
            }
            steps => {
                let key = bias_program(lowered, steps, len, zero);
                if let Some(b) = shared.iter_mut().find(|b| b.key == key) {
                    b.at = b.at.min(site.out_at);
                    Some(b.dst)
                } else {
                    let named_after = steps[0].reads();
                    let dst = add_mask_storage(lowered, named_after, site.dims);
                    shared.push(Materialised { key, named_after, dst, at: site.out_at });
                    Some(dst)
                }
            }
        };
        masks.push(operand);
    }
    for b in shared {
        let name = &lowered.storages[b.named_after].name;
        let n = b.key.len();
        for thunk in b.key {
            let thunk = thunk
                .map_operands(&mut |_, id: usize| {
                    Ok::<_, std::convert::Infallible>(if id == PLACEHOLDER { b.dst } else { id })
                })
                .unwrap_or_else(|_: Vec<std::convert::Infallible>| unreachable!("renaming cannot fail"));
            let comment = if n == 1 {
                format!("attention mask `{name}` broadcast to [batch, heads, seq, kv_seq] (attention fusion)")
            } else {
                format!("attention bias from `{name}` and {} more step(s), as [batch, heads, seq, kv_seq] (attention fusion)", n - 1)
            };
            rewrite.insert_before(b.at, LoweredThunk { thunk, comment });
        }
    }
    for (site, mask) in sites.iter().zip(masks) {
        let d = site.dims;
        let thunk = Thunk::Attention(Attention {
            q: site.q,
            k: site.k,
            v: site.v,
            mask,
            out: site.out,
            batch: d.batch,
            seq: d.seq,
            kv_seq: d.kv_seq,
            heads: d.heads,
            head_dim: d.head_dim,
            v_head_dim: d.v_head_dim,
            mask_kind: if mask.is_some() { MaskKind::Bias } else { MaskKind::None },
            scale: site.scale,
            softcap: 0.0,
            q_row_stride: d.q_row,
            k_row_stride: d.k_row,
            v_row_stride: d.v_row,
            bhsd: false,
            kv_heads: d.heads,
        });
        let comment = fused_comment("attention", &lowered.thunks, &site.thunks);
        rewrite.insert_before(site.out_at, LoweredThunk { thunk, comment });
    }
    rewrite.apply(lowered);
}

/// The thunks that build a site's bias from its score steps (the first a
/// bias or a boolean mask) into `PLACEHOLDER`, `len` scores: the first
/// step writes it from the mask alone (a broadcast of the added tensor, or
/// the select between zero and the mask constant), every later one is the
/// graph's own thunk with the scores renamed to the bias. So `qk * scale +
/// bias`, with `scale` the product of every scale factor, is the graph's
/// chain: `((qk * c1 + b1) * c2 + b2) = qk * c1 * c2 + (b1 * c2 + b2)`.
fn bias_program(l: &Lowered, steps: &[ScoreStep], len: usize, zero: Option<usize>) -> Vec<Thunk<usize>> {
    let mut thunks = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let at = step.at();
        let thunk = match (i, step) {
            (0, ScoreStep::Bias { read, .. }) => broadcast(read, PLACEHOLDER, len),
            (0, ScoreStep::Select { scores, .. }) => {
                let Thunk::Where(mut w) = l.thunks[at].thunk.clone() else { unreachable!("a select is a `Where`") };
                let zero = zero.expect("a zero constant exists when a select comes first");
                if w.on_true == *scores {
                    (w.on_true, w.true_scalar) = (zero, true);
                } else {
                    (w.on_false, w.false_scalar) = (zero, true);
                }
                w.dst = PLACEHOLDER;
                Thunk::Where(w)
            }
            (_, step) => {
                let (scores, out) = (step.scores(), step.out());
                l.thunks[at]
                    .thunk
                    .clone()
                    .map_operands(&mut |_, id: usize| {
                        Ok::<_, std::convert::Infallible>(if id == scores || id == out { PLACEHOLDER } else { id })
                    })
                    .unwrap_or_else(|_: Vec<std::convert::Infallible>| unreachable!("renaming cannot fail"))
            }
        };
        thunks.push(thunk);
    }
    thunks
}

/// `base`, or `base_N` for the first `N` from 2 no storage is named.
fn unique_name(lowered: &Lowered, base: String) -> String {
    let taken: BTreeSet<&str> = lowered.storages.iter().map(|s| s.name.as_str()).collect();
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(name.as_str()) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// The `Transpose` writing mask `m` as read for `len` scores into `dst`:
/// output element `i` is the mask element the graph's `Add` read for
/// score `i`.
fn broadcast(m: &MaskRead, dst: usize, len: usize) -> Thunk<usize> {
    let (out_dims, in_strides) = if m.out_dims.is_empty() {
        // Flat form: score `i` reads mask element `i % op_len`.
        (vec![len / m.op_len, m.op_len], vec![0, 1])
    } else {
        (m.out_dims.clone(), m.strides.clone())
    };
    Thunk::Transpose(Transpose { src: m.storage, dst, in_total: m.op_len, out_dims, in_strides, elem_bytes: 4 })
}

/// A new scratch storage for the `[batch, heads, seq, kv_seq]` form of
/// mask storage `mask`, named after it.
fn add_mask_storage(lowered: &mut Lowered, mask: usize, d: Dims) -> usize {
    let name = unique_name(lowered, format!("{}_heads", crate::names::sanitize(&lowered.storages[mask].name)));
    lowered.storages.push(Storage {
        name,
        shape: vec![d.batch, d.heads, d.seq, d.kv_seq],
        dtype: DType::F32,
        role: Role::Scratch,
        data: None,
        view: None,
        viewed: false,
    });
    lowered.storages.len() - 1
}

/// The attention whose softmax is thunk `sm_at`.
fn match_at(l: &Lowered, u: &Uses, sm_at: usize) -> Option<Site> {
    let Thunk::Softmax(Softmax { src: scores, dst: probs, rows, cols: kv_seq }) = l.thunks[sm_at].thunk else {
        return None;
    };
    // torch's SDPA export zeroes NaN probabilities before P @ V; the kernel
    // already gives a NaN probability no weight, so the guard is part of
    // the pattern when present.
    let guard = nan_guard(l, u, probs, sm_at);
    let (p_in, p_from) = guard.map_or((probs, sm_at), |g| (g.guarded, g.where_at));
    // P @ V, then the merge of the heads.
    let pv_at = u.sole_reader(p_in, p_from)?;
    let pv = product(&l.thunks[pv_at].thunk).filter(|p| p.a == p_in && p.k == kv_seq)?;
    let out_at = u.sole_reader(pv.c, pv_at)?;
    let Thunk::Transpose(Transpose { src: o, dst: out, ref out_dims, .. }) = l.thunks[out_at].thunk else {
        return None;
    };
    // `[batch, seq, heads, dv]` (BSHD, 4-D), else one image whose axes of
    // size 1 sit anywhere (torch's `nn.MultiheadAttention`: `[seq, 1,
    // heads, dv]` from `[heads, seq, dv]`, heads of a stacked projection).
    let (seq, v_head_dim) = (pv.m, pv.n);
    let four_d = match *out_dims.as_slice() {
        [batch, s, heads, dv] if s == seq && dv == v_head_dim && Some(pv.batch) == prod(&[batch, heads]) => {
            let merged = [prod(&[heads, seq, dv]), Some(dv), prod(&[seq, dv]), Some(1)];
            head_transpose(&l.thunks[out_at].thunk, out, [batch, seq, heads, dv], merged).map(|_| (batch, heads))
        }
        _ => None,
    };
    let one_image = || {
        let heads = pv.batch;
        let merged = [(seq, Some(v_head_dim)), (heads, prod(&[seq, v_head_dim])), (v_head_dim, Some(1))];
        strided_read(&l.thunks[out_at].thunk, out, &merged, 0).filter(|&(_, row)| row == 0).map(|_| (1, heads))
    };
    let (batch, heads) = four_d.or_else(one_image)?;
    if o != pv.c || Some(rows) != prod(&[batch, heads, seq]) {
        return None;
    }
    let vt_at = u.sole_writer(pv.b)?;
    let v_row_min = prod(&[heads, v_head_dim])?;
    let (v, v_row) = if four_d.is_some() {
        let v_strides = [prod(&[kv_seq, v_row_min]), Some(v_head_dim), Some(v_row_min), Some(1)];
        let v_dims = [batch, heads, kv_seq, v_head_dim];
        (head_transpose(&l.thunks[vt_at].thunk, pv.b, v_dims, v_strides)?, v_row_min)
    } else {
        let axes = [(heads, Some(v_head_dim)), (kv_seq, None), (v_head_dim, Some(1))];
        strided_read(&l.thunks[vt_at].thunk, pv.b, &axes, v_row_min)?
    };
    // The scores, back from the softmax to Q @ K^T.
    let len = prod(&[rows, kv_seq])?;
    let path = trace_scores(l, u, scores, sm_at, len)?;
    let qk = product(&l.thunks[path.qk_at].thunk)?;
    let head_dim = qk.k;
    if qk.batch != pv.batch || qk.m != seq || qk.n != kv_seq {
        return None;
    }
    let (qt_at, q_scale, q_thunks) = trace_head(l, u, qk.a, path.qk_at, prod(&[batch, heads, seq, head_dim])?)?;
    let (kt_at, k_scale, k_thunks) = trace_head(l, u, qk.b, path.qk_at, prod(&[batch, heads, head_dim, kv_seq])?)?;
    let qk_row = prod(&[heads, head_dim])?;
    let (qt, kt) = (&l.thunks[qt_at].thunk, &l.thunks[kt_at].thunk);
    let ((q, q_row), (k, k_row)) = if four_d.is_some() {
        let q_strides = [prod(&[seq, qk_row]), Some(head_dim), Some(qk_row), Some(1)];
        let k_strides = [prod(&[kv_seq, qk_row]), Some(head_dim), Some(1), Some(qk_row)];
        let q = head_transpose(qt, transpose_dst(l, qt_at)?, [batch, heads, seq, head_dim], q_strides)?;
        let k = head_transpose(kt, transpose_dst(l, kt_at)?, [batch, heads, head_dim, kv_seq], k_strides)?;
        ((q, qk_row), (k, qk_row))
    } else {
        let q_axes = [(heads, Some(head_dim)), (seq, None), (head_dim, Some(1))];
        let k_axes = [(heads, Some(head_dim)), (head_dim, Some(1)), (kv_seq, None)];
        (
            strided_read(qt, transpose_dst(l, qt_at)?, &q_axes, qk_row)?,
            strided_read(kt, transpose_dst(l, kt_at)?, &k_axes, qk_row)?,
        )
    };
    let probs_reader = guard.map_or(pv_at, |g| g.where_at);
    let mut private = vec![(pv.c, pv_at, out_at), (pv.b, vt_at, pv_at)];
    match guard {
        // The guard's compare and select read the probabilities.
        Some(g) => private.push((g.guarded, g.where_at, pv_at)),
        None => private.push((probs, sm_at, probs_reader)),
    }
    if !private.iter().all(|&(id, p, c)| is_private(l, u, id, p, c)) {
        return None;
    }
    let scale = path.scale * q_scale * k_scale;
    if !scale.is_finite() || scale == 0.0 {
        return None;
    }
    // The attention reads q, k, v and the masks at `out_at`: none may be
    // written from where the pattern read it until then. A bias may be
    // built once for later attentions too: nothing may write what it
    // reads after the read.
    let mut external = vec![(q, qt_at, out_at), (k, kt_at, out_at), (v, vt_at, out_at)];
    let bias = path.bias().to_vec();
    external
        .extend(bias.iter().filter(|s| !matches!(s, ScoreStep::Scale { .. })).map(|s| (s.reads(), s.at(), usize::MAX)));
    let stable = external.iter().all(|&(id, from, to)| !u.written_within(id, from, to));
    let all_f32 = [q, k, v, out].iter().all(|&id| l.storages[id].dtype == DType::F32);
    let reads_out = external.iter().any(|&(id, _, _)| id == out);
    if !stable || !all_f32 || u.writers[out] != [out_at] || reads_out {
        return None;
    }
    let mut thunks = vec![qt_at, kt_at, vt_at, path.qk_at, sm_at, pv_at, out_at];
    if let Some(g) = guard {
        thunks.extend([g.compare_at, g.where_at]);
    }
    thunks.extend(q_thunks.into_iter().chain(k_thunks).chain(path.steps.iter().map(ScoreStep::at)));
    thunks.sort_unstable();
    thunks.dedup();
    let dims = Dims { batch, heads, seq, kv_seq, head_dim, v_head_dim, scores: len, q_row, k_row, v_row };
    Some(Site { thunks, out_at, q, k, v, out, bias, dims, scale })
}

/// The NaN guard after a softmax: `n = Compare(p != p)` (ONNX `IsNaN`)
/// and `g = Where(n, 0.0, p)`, each read only by the next step.
#[derive(Clone, Copy, Debug)]
struct NanGuard {
    compare_at: usize,
    where_at: usize,
    guarded: usize,
}

fn nan_guard(l: &Lowered, u: &Uses, probs: usize, sm_at: usize) -> Option<NanGuard> {
    let &[p0, compare_at, where_at] = u.touches[probs].as_slice() else { return None };
    let p = &l.storages[probs];
    if p0 != sm_at || p.role != Role::Scratch || !p.is_plain() || u.writers[probs] != [sm_at] {
        return None;
    }
    let Thunk::Compare(Compare {
        lhs,
        rhs,
        dst: is_nan,
        op: rlx_sched::CmpOp::Ne,
        inputs_elem_bytes: 4,
        ref out_dims_bcast,
        lhs_scalar: false,
        rhs_scalar: false,
        ..
    }) = l.thunks[compare_at].thunk
    else {
        return None;
    };
    if lhs != probs || rhs != probs || !out_dims_bcast.is_empty() {
        return None;
    }
    let Thunk::Where(Where {
        cond,
        on_true,
        on_false,
        dst: guarded,
        cond_scalar: false,
        true_scalar: true,
        false_scalar: false,
        elem_bytes: 4,
        ..
    }) = l.thunks[where_at].thunk
    else {
        return None;
    };
    let n = &l.storages[is_nan];
    let zero = super::scalar_param(&l.storages[on_true]) == Some(0.0);
    let private_flag = n.role == Role::Scratch && n.is_plain() && u.touches[is_nan] == [compare_at, where_at];
    (cond == is_nan && on_false == probs && zero && private_flag && u.writers[guarded] == [where_at])
        .then_some(NanGuard { compare_at, where_at, guarded })
}

/// The storage a `Transpose` thunk writes.
fn transpose_dst(l: &Lowered, at: usize) -> Option<usize> {
    match l.thunks[at].thunk {
        Thunk::Transpose(Transpose { dst, .. }) => Some(dst),
        _ => None,
    }
}

/// One step on the scores between `Q @ K^T` and the softmax, each the
/// graph thunk `at` reading the scores from `scores` and writing `out`.
#[derive(Clone, Debug)]
enum ScoreStep {
    /// `s * c` or `s / c` for a constant (`factor` is `c` or `1 / c`).
    Scale { at: usize, scores: usize, out: usize, factor: f32 },
    /// `s + b` for a tensor `b` (an additive mask, a position bias), read
    /// as `read` describes.
    Bias { at: usize, scores: usize, out: usize, read: MaskRead },
    /// `Where(cond, s, v)` or `Where(cond, v, s)` for a constant `v` at
    /// most `-SELECT_FLOOR` (`-inf` included): a boolean mask.
    Select { at: usize, scores: usize, out: usize, cond: usize },
}

impl ScoreStep {
    fn at(&self) -> usize {
        match *self {
            ScoreStep::Scale { at, .. } | ScoreStep::Bias { at, .. } | ScoreStep::Select { at, .. } => at,
        }
    }

    fn scores(&self) -> usize {
        match *self {
            ScoreStep::Scale { scores, .. } | ScoreStep::Bias { scores, .. } | ScoreStep::Select { scores, .. } => {
                scores
            }
        }
    }

    fn out(&self) -> usize {
        match *self {
            ScoreStep::Scale { out, .. } | ScoreStep::Bias { out, .. } | ScoreStep::Select { out, .. } => out,
        }
    }

    /// The tensor a mask step reads besides the scores (for a scale, the
    /// scores).
    fn reads(&self) -> usize {
        match self {
            ScoreStep::Bias { read, .. } => read.storage,
            ScoreStep::Select { cond, .. } => *cond,
            ScoreStep::Scale { scores, .. } => *scores,
        }
    }
}

/// The steps between the product and the softmax this pass follows.
const MAX_SCORE_STEPS: usize = 8;

/// A boolean mask's constant must be at most `-SELECT_FLOOR` after every
/// later scale: then `x + v == v` in f32 for every score `|x| < 2^75`
/// (half an ulp of `1e30`), so selecting `v` and adding `v` give the same
/// bits, and `exp` of it is 0 against any unmasked score.
const SELECT_FLOOR: f32 = 1e30;

/// The path from `Q @ K^T` to the softmax.
struct ScorePath {
    qk_at: usize,
    /// The product of every scale factor.
    scale: f32,
    /// The steps in graph order.
    steps: Vec<ScoreStep>,
}

impl ScorePath {
    /// The steps from the first bias or boolean mask on (empty when there
    /// is none): what the kernel's bias operand stands for.
    fn bias(&self) -> &[ScoreStep] {
        let first = self.steps.iter().position(|s| !matches!(s, ScoreStep::Scale { .. }));
        first.map_or(&[], |i| &self.steps[i..])
    }
}

/// Follows the `len` scores in storage `cur`, read by thunk `consumer`,
/// back to their product through constant scales, added tensors and
/// boolean masks, in any order and number (up to `MAX_SCORE_STEPS`).
fn trace_scores(l: &Lowered, u: &Uses, cur: usize, consumer: usize, len: usize) -> Option<ScorePath> {
    let mut path = trace_back(l, u, cur, consumer, len, 0)?;
    path.steps.reverse();
    path.scale =
        path.steps.iter().map(|s| if let ScoreStep::Scale { factor, .. } = *s { factor } else { 1.0 }).product();
    // A boolean mask's constant, scaled by the factors after it, must stay
    // far below any score.
    for (i, step) in path.steps.iter().enumerate() {
        if let ScoreStep::Select { at, .. } = *step {
            let later: f32 = path.steps[i..]
                .iter()
                .map(|s| if let ScoreStep::Scale { factor, .. } = *s { factor } else { 1.0 })
                .product();
            let v = select_constant(l, at)?;
            // A NaN constant compares as neither: refused too.
            use std::cmp::Ordering::{Equal, Less};
            if !matches!((v * later).partial_cmp(&-SELECT_FLOOR), Some(Less | Equal)) {
                return None;
            }
        }
    }
    Some(path)
}

/// [`trace_scores`] with the steps in reverse order.
fn trace_back(l: &Lowered, u: &Uses, cur: usize, consumer: usize, len: usize, depth: usize) -> Option<ScorePath> {
    if depth > MAX_SCORE_STEPS {
        return None;
    }
    let w = u.sole_writer(cur)?;
    if !is_private(l, u, cur, w, consumer) {
        return None;
    }
    let thunk = &l.thunks[w].thunk;
    if product(thunk).is_some() {
        return Some(ScorePath { qk_at: w, scale: 1.0, steps: Vec::new() });
    }
    let follow = |scores: usize, step: ScoreStep| {
        let mut path = trace_back(l, u, scores, w, len, depth + 1)?;
        path.steps.push(step);
        Some(path)
    };
    if let Some((scores, cond)) = select(l, thunk, cur, len) {
        return follow(scores, ScoreStep::Select { at: w, scores, out: cur, cond });
    }
    let b = binary(l, thunk).filter(|b| b.len == len && b.dst == cur)?;
    match b.op {
        BinaryOp::Add => {
            let Thunk::BinaryFull(BinaryFull {
                lhs_len,
                rhs_len,
                ref out_dims_bcast,
                ref bcast_lhs_strides,
                ref bcast_rhs_strides,
                ..
            }) = *thunk
            else {
                return None;
            };
            let sides = [(b.lhs, b.rhs, rhs_len, bcast_rhs_strides), (b.rhs, b.lhs, lhs_len, bcast_lhs_strides)];
            sides.into_iter().find_map(|(scores, mask, op_len, strides)| {
                let usable = scores.arg == Arg::Full
                    && mask.id != scores.id
                    && mask.id != cur
                    && l.storages[mask.id].dtype == DType::F32
                    && op_len > 0
                    && len.is_multiple_of(op_len);
                let read =
                    MaskRead { storage: mask.id, op_len, out_dims: out_dims_bcast.clone(), strides: strides.clone() };
                usable.then(|| follow(scores.id, ScoreStep::Bias { at: w, scores: scores.id, out: cur, read }))?
            })
        }
        BinaryOp::Mul => b.both_ways().into_iter().find_map(|(scores, c)| {
            let (Arg::Full, Arg::Const(factor)) = (scores.arg, c.arg) else { return None };
            follow(scores.id, ScoreStep::Scale { at: w, scores: scores.id, out: cur, factor })
        }),
        BinaryOp::Div => {
            let (Arg::Full, Arg::Const(c)) = (b.lhs.arg, b.rhs.arg) else { return None };
            follow(b.lhs.id, ScoreStep::Scale { at: w, scores: b.lhs.id, out: cur, factor: 1.0 / c })
        }
        _ => None,
    }
}

/// When `thunk` is an f32 `Where` writing the `len` scores `out` that
/// selects between scores (a full operand) and a constant, on a full
/// boolean condition: the scores and the condition.
fn select(l: &Lowered, thunk: &Thunk<usize>, out: usize, len: usize) -> Option<(usize, usize)> {
    let Thunk::Where(Where {
        cond,
        on_true,
        on_false,
        dst,
        len: n,
        elem_bytes: 4,
        cond_elem_bytes: 1,
        cond_scalar: false,
        true_scalar,
        false_scalar,
    }) = *thunk
    else {
        return None;
    };
    let scores = match (true_scalar, false_scalar) {
        (false, true) => on_true,
        (true, false) => on_false,
        _ => return None,
    };
    let f32_full = |id: usize| l.storages[id].dtype == DType::F32;
    (dst == out && n == len && scores != cond && f32_full(scores) && f32_full(dst)).then_some((scores, cond))
}

/// The constant of the boolean mask `Where` at thunk `at`.
fn select_constant(l: &Lowered, at: usize) -> Option<f32> {
    let Thunk::Where(Where { on_true, on_false, true_scalar, .. }) = l.thunks[at].thunk else { return None };
    super::scalar_param(&l.storages[if true_scalar { on_true } else { on_false }])
}

/// Follows the `len`-element head tensor `id`, read by thunk `consumer`,
/// back to the `Transpose` that wrote it, through at most one `Mul` by a
/// constant: that transpose, the constant (1 without the `Mul`) and the
/// thunks passed.
fn trace_head(l: &Lowered, u: &Uses, id: usize, consumer: usize, len: usize) -> Option<(usize, f32, Vec<usize>)> {
    let w = u.sole_writer(id)?;
    if !is_private(l, u, id, w, consumer) {
        return None;
    }
    if matches!(l.thunks[w].thunk, Thunk::Transpose { .. }) {
        return Some((w, 1.0, vec![w]));
    }
    let b = binary(l, &l.thunks[w].thunk).filter(|b| b.op == BinaryOp::Mul && b.len == len && b.dst == id)?;
    let (head, c) = b.both_ways().into_iter().find_map(|(this, other)| match (this.arg, other.arg) {
        (Arg::Full, Arg::Const(c)) => Some((this.id, c)),
        _ => None,
    })?;
    let t = u.sole_writer(head)?;
    let is_transpose = matches!(l.thunks[t].thunk, Thunk::Transpose { .. });
    (is_transpose && is_private(l, u, head, t, w)).then(|| (t, c, vec![t, w]))
}
