//! The opset-23 `Attention` op onto the `Attention` kind, and the preview
//! `FlexAttention` (composed: its modifier subgraphs read the scores).
//!
//! 4-D inputs (`[batch, heads, seq, dim]`) run with `bhsd: true`; 3-D ones
//! (`[batch, seq, heads * dim]`, heads from `q_num_heads`/`kv_num_heads`)
//! are read in place with row strides, or moved to 4-D when a past cache
//! is concatenated. Grouped heads map as ONNX repeats them (query head `h`
//! reads key/value head `h / (heads / kv_heads)`). Softcap applies before
//! the mask and a fully masked row gives zeros, in the kernel as in the
//! spec's reference. `is_causal` uses the kernel's causal mask where its
//! alignment (the last query sees every key) is the spec's: with a past
//! cache, or as many queries as keys; else, and with an `attn_mask`, the
//! mask is an additive `[batch, heads, seq, kv_seq]` bias built at run time
//! (a bool mask through `Where(mask, 0, -inf)`). Output 3 (the scores,
//! `qk_matmul_output`) is composed next to the kernel when a model names it.

use rlx_sched::{BinaryOp, DType, MaskKind, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::broadcast;
use crate::lower::build::subgraph::inline_graph;
use crate::lower::build::{binary_thunk, broadcast_into_scratch, concat_along, copy_thunk, permute_thunk, Dest, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Attention, Where};

/// The sizes of one `Attention` node, with the cache folded in.
struct Dims {
    batch: usize,
    heads: usize,
    kv_heads: usize,
    seq: usize,
    /// Keys of this call (without the past).
    new_kv: usize,
    past: usize,
    head_dim: usize,
    v_head_dim: usize,
}

pub(crate) fn attention(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 7)?;
    if ctx.input_name(6).is_some() {
        return Err(ctx.err("input 6 (nonpad_kv_seqlen) is not supported"));
    }
    let qk_mode = ctx.int_attr("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&qk_mode) {
        return Err(ctx.bad_attr("qk_matmul_output_mode", format!("is {qk_mode}; 0 to 3")));
    }
    if ctx.has_attr("softmax_precision") && ctx.int_attr("softmax_precision", 1)? != 1 {
        return Err(ctx.bad_attr("softmax_precision", "must be 1 (float): the softmax runs in f32"));
    }
    let is_causal = match ctx.int_attr("is_causal", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("is_causal", format!("is {v}; must be 0 or 1"))),
    };
    let softcap = ctx.float_attr("softcap", 0.0)?;
    if !(softcap.is_finite() && softcap >= 0.0) {
        return Err(ctx.bad_attr("softcap", format!("is {softcap:e}; it must be finite and not negative")));
    }
    let (q, qs) = lw.data_input(ctx, 0)?;
    let (k, ks) = lw.data_input(ctx, 1)?;
    let (v, vs) = lw.data_input(ctx, 2)?;
    let past = match (ctx.input_name(4), ctx.input_name(5)) {
        (None, None) => None,
        (Some(_), Some(_)) => Some((lw.data_input(ctx, 4)?, lw.data_input(ctx, 5)?)),
        _ => return Err(ctx.err("past_key and past_value must be given together")),
    };
    let d = dims(ctx, &qs, &ks, &vs, past.as_ref().map(|((_, pk), (_, pv))| (&pk[..], &pv[..])))?;
    let scale = if ctx.has_attr("scale") { ctx.float_attr("scale", 0.0)? } else { 1.0 / (d.head_dim as f32).sqrt() };
    if !scale.is_finite() {
        return Err(ctx.bad_attr("scale", format!("is {scale:e}; it must be finite")));
    }
    let rank = qs.len();
    let name = ctx.node.output[0].clone();
    let kv = d.past + d.new_kv;

    // 3-D operands with a cache are moved to 4-D: the cache is 4-D.
    let to_4d = |lw: &mut Lowerer, x: usize, heads: usize, rows: usize, dim: usize, what: &str| {
        let dst = lw.scratch_storage(&format!("{name}.{what}_bhsd"), vec![d.batch, heads, rows, dim], DType::F32)?;
        let t = permute_thunk(ctx, x, &[d.batch, rows, heads, dim], &[0, 2, 1, 3], dst)?;
        lw.emit(ctx, t);
        Ok::<usize, ImportError>(dst)
    };
    let four_d = rank == 4 || past.is_some();
    let (q4, k4, v4) = if rank == 3 && four_d {
        (
            to_4d(lw, q, d.heads, d.seq, d.head_dim, "q")?,
            to_4d(lw, k, d.kv_heads, d.new_kv, d.head_dim, "k")?,
            to_4d(lw, v, d.kv_heads, d.new_kv, d.v_head_dim, "v")?,
        )
    } else {
        (q, k, v)
    };
    let k_shape = vec![d.batch, d.kv_heads, d.new_kv, d.head_dim];
    let v_shape = vec![d.batch, d.kv_heads, d.new_kv, d.v_head_dim];
    let (k_all, v_all) = match &past {
        Some(((pk, pks), (pv, pvs))) => {
            let join = |lw: &mut Lowerer, past: usize, ps: &[usize], new: usize, ns: &[usize], i: usize| {
                let pieces = [
                    Value::Data { storage: past, shape: ps.to_vec() },
                    Value::Data { storage: new, shape: ns.to_vec() },
                ];
                let wanted = ctx.node.output.get(i).is_some_and(|o| !o.is_empty());
                let dest = if wanted { Dest::Output(i) } else { Dest::Scratch(format!("{name}.present{i}")) };
                let joined = concat_along(lw, ctx, &pieces, 2, &dest)?;
                if wanted {
                    lw.define(ctx, i, joined.clone())?;
                }
                match joined {
                    Value::Data { storage, .. } => Ok(storage),
                    Value::Const(_) => Err(ctx.err("the key/value cache folded to a constant")),
                }
            };
            (join(lw, *pk, pks, k4, &k_shape, 1)?, join(lw, *pv, pvs, v4, &v_shape, 2)?)
        }
        None => {
            // Without a cache the present key/value are the inputs.
            for (i, src, shape) in [(1, k4, &k_shape), (2, v4, &v_shape)] {
                if ctx.node.output.get(i).is_some_and(|o| !o.is_empty()) {
                    let dst = lw.output_storage(ctx, i, shape.clone())?;
                    lw.emit(ctx, copy_thunk(src, dst, shape, DType::F32));
                    lw.define(ctx, i, Value::Data { storage: dst, shape: shape.clone() })?;
                }
            }
            (k4, v4)
        }
    };

    let (mask_kind, mask) = mask(lw, ctx, &d, is_causal)?;
    if let Some(qk_out) = ctx.node.output.get(3).filter(|o| !o.is_empty()) {
        // The scores, besides the fused kernel's result: composed.
        let (q_bhsd, k_bhsd) = if four_d {
            (q4, k_all)
        } else {
            (to_4d(lw, q, d.heads, d.seq, d.head_dim, "q")?, to_4d(lw, k, d.kv_heads, d.new_kv, d.head_dim, "k")?)
        };
        let parts = QkParts { q: q_bhsd, k: k_bhsd, mask_kind, mask, scale, softcap, mode: qk_mode };
        qk_matmul_output(lw, ctx, &d, parts, qk_out)?;
    }
    let out_4d = vec![d.batch, d.heads, d.seq, d.v_head_dim];
    let out_3d = vec![d.batch, d.seq, d.heads * d.v_head_dim];
    let out = match (rank, four_d) {
        (4, _) => lw.output_storage(ctx, 0, out_4d.clone())?,
        (_, true) => lw.scratch_storage(&format!("{name}.bhsd"), out_4d.clone(), DType::F32)?,
        _ => lw.output_storage(ctx, 0, out_3d.clone())?,
    };
    lw.emit(
        ctx,
        Thunk::Attention(Attention {
            q: q4,
            k: k_all,
            v: v_all,
            mask,
            out,
            batch: d.batch,
            seq: d.seq,
            kv_seq: kv,
            heads: d.heads,
            head_dim: d.head_dim,
            v_head_dim: d.v_head_dim,
            mask_kind,
            scale,
            softcap,
            q_row_stride: d.heads * d.head_dim,
            k_row_stride: d.kv_heads * d.head_dim,
            v_row_stride: d.kv_heads * d.v_head_dim,
            bhsd: four_d,
            kv_heads: d.kv_heads,
        }),
    );
    let y = match (rank, four_d) {
        (3, true) => {
            let dst = lw.output_storage(ctx, 0, out_3d.clone())?;
            let t = permute_thunk(ctx, out, &out_4d, &[0, 2, 1, 3], dst)?;
            lw.emit(ctx, t);
            Value::Data { storage: dst, shape: out_3d }
        }
        (3, false) => Value::Data { storage: out, shape: out_3d },
        _ => Value::Data { storage: out, shape: out_4d },
    };
    lw.define(ctx, 0, y)
}

/// What `qk_matmul_output` is computed from: 4-D `q` and `k` (past
/// included), the kernel's mask, and the attributes.
struct QkParts {
    q: usize,
    k: usize,
    mask_kind: MaskKind,
    mask: Option<usize>,
    scale: f32,
    softcap: f32,
    mode: i64,
}

/// Output 3 of `Attention`: `Q K^T * scale`, softcapped (modes 0 and 1),
/// plus the mask bias (mode 2), or the softmax of that with fully masked
/// rows zeroed (mode 3), as the spec's reference computes it; composed of
/// `MatMul` and elementwise ops next to the fused kernel.
fn qk_matmul_output(lw: &mut Lowerer, ctx: &NodeCtx<'_>, d: &Dims, p: QkParts, out: &str) -> R {
    let kv = d.past + d.new_kv;
    let ints =
        |v: &[usize]| ConstTensor { shape: vec![v.len()], data: ConstData::I64(v.iter().map(|&x| x as i64).collect()) };
    let attr = |name: &str, ints: Vec<i64>, i: i64| crate::proto::AttributeProto {
        name: name.to_string(),
        r#type: if ints.is_empty() { crate::proto::AttributeType::Int } else { crate::proto::AttributeType::Ints }
            as i32,
        ints,
        i,
        ..Default::default()
    };
    let scalar = |v: f32| ConstTensor { shape: vec![], data: ConstData::F32(vec![v]) };
    let named = |lw: &mut Lowerer, what: &str, storage: usize, shape: Vec<usize>| {
        let n = lw.internal_name(out, what);
        lw.values.insert(n.clone(), Value::Data { storage, shape });
        n
    };
    let q = named(lw, "q", p.q, vec![d.batch, d.heads, d.seq, d.head_dim]);
    let mut k = named(lw, "k", p.k, vec![d.batch, d.kv_heads, kv, d.head_dim]);
    let step = |lw: &mut Lowerer, op: &str, inputs: &[&str], what: &str, attrs| -> Result<String, ImportError> {
        let n = lw.internal_name(out, what);
        lw.lower_part(ctx, op, inputs, &[&n], attrs)?;
        Ok(n)
    };
    if d.heads != d.kv_heads {
        let group = d.heads / d.kv_heads;
        let lifted = lw.constant(out, "k_lifted_shape", ints(&[d.batch, d.kv_heads, 1, kv, d.head_dim]));
        let spread = lw.constant(out, "k_spread_shape", ints(&[d.batch, d.kv_heads, group, kv, d.head_dim]));
        let heads = lw.constant(out, "k_heads_shape", ints(&[d.batch, d.heads, kv, d.head_dim]));
        let a = step(lw, "Reshape", &[&k, &lifted], "k_lifted", Vec::new())?;
        let b = step(lw, "Expand", &[&a, &spread], "k_spread", Vec::new())?;
        k = step(lw, "Reshape", &[&b, &heads], "k_heads", Vec::new())?;
    }
    let kt = step(lw, "Transpose", &[&k], "k_t", vec![attr("perm", vec![0, 1, 3, 2], 0)])?;
    let raw = step(lw, "MatMul", &[&q, &kt], "qk", Vec::new())?;
    let scale = lw.constant(out, "scale", scalar(p.scale));
    let mut scores = step(lw, "Mul", &[&raw, &scale], "scaled", Vec::new())?;
    if p.softcap > 0.0 {
        let cap = lw.constant(out, "softcap", scalar(p.softcap));
        let a = step(lw, "Div", &[&scores, &cap], "capped_in", Vec::new())?;
        let b = step(lw, "Tanh", &[&a], "capped_tanh", Vec::new())?;
        scores = step(lw, "Mul", &[&b, &cap], "capped", Vec::new())?;
    }
    if p.mode <= 1 {
        return lw.lower_part(ctx, "Identity", &[&scores], &[out], Vec::new());
    }
    let bias = match (p.mask_kind, p.mask) {
        (MaskKind::Bias, Some(m)) => Some(named(lw, "bias", m, vec![d.batch, d.heads, d.seq, kv])),
        (MaskKind::Causal, _) => {
            lw.reserve_table(ctx, "the causal mask", &[d.seq, kv], 4)?;
            let c: Vec<f32> =
                (0..d.seq * kv).map(|at| if at % kv <= at / kv + d.past { 0.0 } else { f32::NEG_INFINITY }).collect();
            Some(lw.constant(out, "causal", ConstTensor { shape: vec![d.seq, kv], data: ConstData::F32(c) }))
        }
        _ => None,
    };
    let with_bias = match &bias {
        Some(b) => step(lw, "Add", &[&scores, b], "biased", Vec::new())?,
        None => scores,
    };
    if p.mode == 2 {
        return lw.lower_part(ctx, "Identity", &[&with_bias], &[out], Vec::new());
    }
    let probs = step(lw, "Softmax", &[&with_bias], "probs", vec![attr("axis", Vec::new(), -1)])?;
    let Some(b) = bias else {
        return lw.lower_part(ctx, "Identity", &[&probs], &[out], Vec::new());
    };
    // A row whose every key is masked gives zeros, not NaN.
    let last = lw.constant(out, "key_axis", ConstTensor { shape: vec![1], data: ConstData::I64(vec![-1]) });
    let row_max = step(lw, "ReduceMax", &[&b, &last], "row_max", vec![attr("keepdims", Vec::new(), 1)])?;
    let neg_inf = lw.constant(out, "neg_inf", scalar(f32::NEG_INFINITY));
    let open = step(lw, "Greater", &[&row_max, &neg_inf], "row_open", Vec::new())?;
    let zero = lw.constant(out, "zero", scalar(0.0));
    lw.lower_part(ctx, "Where", &[&open, &probs, &zero], &[out], Vec::new())
}

fn dims(
    ctx: &NodeCtx<'_>,
    qs: &[usize],
    ks: &[usize],
    vs: &[usize],
    past: Option<(&[usize], &[usize])>,
) -> Result<Dims, ImportError> {
    let rank = qs.len();
    if !(rank == 3 || rank == 4) || ks.len() != rank || vs.len() != rank {
        return Err(ctx.err(format!("Q, K and V have shapes {qs:?}, {ks:?}, {vs:?}; expected all 3-D or all 4-D")));
    }
    let d = if rank == 4 {
        Dims {
            batch: qs[0],
            heads: qs[1],
            kv_heads: ks[1],
            seq: qs[2],
            new_kv: ks[2],
            past: 0,
            head_dim: qs[3],
            v_head_dim: vs[3],
        }
    } else {
        let heads = ctx.int_attr("q_num_heads", 0)?;
        let kv_heads = ctx.int_attr("kv_num_heads", 0)?;
        if heads <= 0 || kv_heads <= 0 {
            return Err(ctx.err("3-D inputs need positive q_num_heads and kv_num_heads attributes"));
        }
        let (heads, kv_heads) = (heads as usize, kv_heads as usize);
        if !qs[2].is_multiple_of(heads) || !ks[2].is_multiple_of(kv_heads) || !vs[2].is_multiple_of(kv_heads) {
            return Err(ctx.err(format!(
                "hidden sizes {}, {}, {} do not split into {heads} query and {kv_heads} key/value heads",
                qs[2], ks[2], vs[2]
            )));
        }
        Dims {
            batch: qs[0],
            heads,
            kv_heads,
            seq: qs[1],
            new_kv: ks[1],
            past: 0,
            head_dim: qs[2] / heads,
            v_head_dim: vs[2] / kv_heads,
        }
    };
    let k_dim = if rank == 4 { ks[3] } else { ks[2] / d.kv_heads };
    let consistent = ks[0] == d.batch
        && vs[0] == d.batch
        && k_dim == d.head_dim
        && (rank == 3 || (vs[1] == d.kv_heads && vs[2] == d.new_kv))
        && (rank == 4 || vs[1] == d.new_kv);
    if !consistent {
        return Err(ctx.err(format!("Q, K and V have inconsistent shapes {qs:?}, {ks:?}, {vs:?}")));
    }
    if d.kv_heads == 0 || d.heads % d.kv_heads != 0 {
        return Err(ctx.err(format!("{} query heads do not group over {} key/value heads", d.heads, d.kv_heads)));
    }
    if [d.batch, d.heads, d.seq, d.new_kv, d.head_dim, d.v_head_dim].contains(&0) {
        return Err(ctx.err(format!("empty shapes {qs:?}, {ks:?}, {vs:?} are not supported")));
    }
    let Some((pk, pv)) = past else { return Ok(d) };
    let want_k = [d.batch, d.kv_heads, pk.get(2).copied().unwrap_or(0), d.head_dim];
    let want_v = [d.batch, d.kv_heads, want_k[2], d.v_head_dim];
    if pk != want_k || pv != want_v {
        return Err(ctx.err(format!("past_key {pk:?} and past_value {pv:?} do not match K and V")));
    }
    Ok(Dims { past: want_k[2], ..d })
}

/// The mask kind and, for `Bias`, the `[batch, heads, seq, kv]` bias.
fn mask(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    d: &Dims,
    is_causal: bool,
) -> Result<(MaskKind, Option<usize>), ImportError> {
    let kv = d.past + d.new_kv;
    let name = ctx.node.output[0].clone();
    let full = vec![d.batch, d.heads, d.seq, kv];
    // The kernel's causal mask lets query `i` see keys `j <= i + kv - seq`;
    // the spec's, `j <= i + past`.
    let native_causal = d.past + d.seq == kv;
    let user_mask = match ctx.input_name(3) {
        Some(_) => Some(additive_mask(lw, ctx, &full)?),
        None => None,
    };
    if user_mask.is_none() && !is_causal {
        return Ok((MaskKind::None, None));
    }
    if user_mask.is_none() && native_causal {
        return Ok((MaskKind::Causal, None));
    }
    if is_causal {
        lw.count_table(ctx, "the causal mask", &[d.seq, kv], 4)?;
    }
    let causal = is_causal.then(|| {
        let bias: Vec<f32> =
            (0..d.seq * kv).map(|at| if at % kv <= at / kv + d.past { 0.0 } else { f32::NEG_INFINITY }).collect();
        ConstTensor { shape: vec![d.seq, kv], data: ConstData::F32(bias) }
    });
    let bias = match (user_mask, causal) {
        (Some((m, ms)), Some(c)) => {
            let c = lw.add_param(&format!("{name}.causal"), &c)?;
            let dst = lw.scratch_storage(&format!("{name}.bias"), full.clone(), DType::F32)?;
            lw.emit(ctx, binary_thunk(ctx, (m, &ms), (c, &[d.seq, kv]), dst, &full, BinaryOp::Add, 4)?);
            dst
        }
        (Some((m, ms)), None) if ms == full => m,
        (Some((m, ms)), None) => broadcast_into_scratch(lw, ctx, m, &ms, &full)?,
        (None, Some(c)) => {
            let c = lw.add_param(&format!("{name}.causal"), &c)?;
            broadcast_into_scratch(lw, ctx, c, &[d.seq, kv], &full)?
        }
        (None, None) => unreachable!("returned above"),
    };
    Ok((MaskKind::Bias, Some(bias)))
}

/// `attn_mask` as an f32 additive bias and its shape: a bool mask through
/// `Where(mask, 0, -inf)`. It must broadcast to `full` and cover every key.
fn additive_mask(lw: &mut Lowerer, ctx: &NodeCtx<'_>, full: &[usize]) -> Result<(usize, Vec<usize>), ImportError> {
    let (m, ms, mt) = lw.typed_input(ctx, 3)?;
    if ms.len() > 4 || broadcast(&ms, full).as_deref() != Some(full) {
        return Err(ctx.err(format!("attn_mask has shape {ms:?}; it must broadcast to {full:?}")));
    }
    match mt {
        DType::F32 => Ok((m, ms)),
        DType::Bool => {
            let name = ctx.node.output[0].clone();
            let zero = lw.add_param(
                &format!("{name}.attend"),
                &ConstTensor { shape: vec![], data: ConstData::F32(vec![0.0]) },
            )?;
            let neg = lw.add_param(
                &format!("{name}.masked"),
                &ConstTensor { shape: vec![], data: ConstData::F32(vec![f32::NEG_INFINITY]) },
            )?;
            let len = ms.iter().product();
            let dst = lw.scratch_storage(&format!("{name}.mask_bias"), ms.clone(), DType::F32)?;
            lw.emit(
                ctx,
                Thunk::Where(Where {
                    cond: m,
                    on_true: zero,
                    on_false: neg,
                    dst,
                    len,
                    elem_bytes: 4,
                    cond_elem_bytes: 1,
                    cond_scalar: false,
                    true_scalar: true,
                    false_scalar: true,
                }),
            );
            Ok((dst, ms))
        }
        other => Err(ctx.err(format!("attn_mask is {}; expected bool or f32", other.name()))),
    }
}

/// `ai.onnx.preview:FlexAttention`: rank-4 `Q`, `K`, `V`; `scores = Q K^T *
/// scale` (default `1/sqrt(head_size)`), the `score_mod` subgraph inlined
/// on them, `Softmax` over the keys, the `prob_mod` subgraph, `probs V`.
/// Grouped kv heads are repeated (`Expand`) over their query heads.
/// Composed of `MatMul`s (the scores are materialised, as the subgraphs
/// need them).
pub(crate) fn flex_attention(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    let shape = |lw: &Lowerer, i: usize| -> Result<Vec<usize>, ImportError> {
        let (_, v) = lw.input(ctx, i)?;
        Ok(match v {
            Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape,
        })
    };
    let (qs, ks, vs) = (shape(lw, 0)?, shape(lw, 1)?, shape(lw, 2)?);
    let (&[b, hq, _, d], &[_, hkv, kv_len, dk], &[_, _, _, dv]) = (&qs[..], &ks[..], &vs[..]) else {
        return Err(ctx.err(format!("Q {qs:?}, K {ks:?}, V {vs:?}: rank-4 inputs are expected")));
    };
    if dk != d || hkv == 0 || hq % hkv != 0 || vs[..3] != ks[..3] {
        return Err(ctx.err(format!("Q {qs:?}, K {ks:?}, V {vs:?} do not agree")));
    }
    if ctx.has_attr("softmax_precision") && ctx.int_attr("softmax_precision", 1)? != 1 {
        return Err(ctx.bad_attr("softmax_precision", "must be 1 (float): the softmax runs in f32"));
    }
    let scale = match ctx.float_attr("scale", 0.0)? {
        0.0 => (1.0 / (d as f64).sqrt()) as f32,
        s => s,
    };
    let out = ctx.node.output[0].clone();
    let ints =
        |v: &[usize]| ConstTensor { shape: vec![v.len()], data: ConstData::I64(v.iter().map(|&x| x as i64).collect()) };
    let attr_ints = |name: &str, v: &[i64]| crate::proto::AttributeProto {
        name: name.to_string(),
        r#type: crate::proto::AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    };
    let attr_int = |name: &str, i: i64| crate::proto::AttributeProto {
        name: name.to_string(),
        r#type: crate::proto::AttributeType::Int as i32,
        i,
        ..Default::default()
    };
    // Kv heads repeated over their query heads.
    let repeat = |lw: &mut Lowerer, x: &str, last: usize, what: &str| -> Result<String, ImportError> {
        if hkv == hq {
            return Ok(x.to_string());
        }
        let group = hq / hkv;
        let lifted_shape = lw.constant(&out, &format!("{what}_lifted_shape"), ints(&[b, hkv, 1, kv_len, last]));
        let spread_shape = lw.constant(&out, &format!("{what}_spread_shape"), ints(&[b, hkv, group, kv_len, last]));
        let heads_shape = lw.constant(&out, &format!("{what}_heads_shape"), ints(&[b, hq, kv_len, last]));
        let [lifted, spread, heads] =
            ["lifted", "spread", "heads"].map(|s| lw.internal_name(&out, &format!("{what}_{s}")));
        lw.lower_part(ctx, "Reshape", &[x, &lifted_shape], &[&lifted], Vec::new())?;
        lw.lower_part(ctx, "Expand", &[&lifted, &spread_shape], &[&spread], Vec::new())?;
        lw.lower_part(ctx, "Reshape", &[&spread, &heads_shape], &[&heads], Vec::new())?;
        Ok(heads)
    };
    let k = repeat(lw, &ctx.node.input[1], d, "k")?;
    let v = repeat(lw, &ctx.node.input[2], dv, "v")?;
    let [kt, raw, scores, probs] = ["k_t", "raw_scores", "scores", "probs"].map(|s| lw.internal_name(&out, s));
    lw.lower_part(ctx, "Transpose", &[&k], &[&kt], vec![attr_ints("perm", &[0, 1, 3, 2])])?;
    lw.lower_part(ctx, "MatMul", &[&ctx.node.input[0], &kt], &[&raw], Vec::new())?;
    let scale = lw.constant(&out, "scale", ConstTensor { shape: vec![], data: ConstData::F32(vec![scale]) });
    lw.lower_part(ctx, "Mul", &[&raw, &scale], &[&scores], Vec::new())?;
    let modified = |lw: &mut Lowerer, name: &str, x: String| -> Result<String, ImportError> {
        match ctx.graph_attr(name)? {
            None => Ok(x),
            Some(g) => {
                let prefix = lw.internal_name(&out, name);
                let outs = inline_graph(lw, ctx, g, &prefix, &[x])?;
                match &outs[..] {
                    [one] => Ok(one.clone()),
                    _ => Err(ctx.bad_attr(name, format!("has {} outputs; one is expected", outs.len()))),
                }
            }
        }
    };
    let scores = modified(lw, "score_mod", scores)?;
    lw.lower_part(ctx, "Softmax", &[&scores], &[&probs], vec![attr_int("axis", -1)])?;
    let probs = modified(lw, "prob_mod", probs)?;
    lw.lower_part(ctx, "MatMul", &[&probs, &v], &[&out], Vec::new())
}
