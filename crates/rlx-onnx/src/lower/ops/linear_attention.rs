//! `LinearAttention` (opset 26: `linear`, `gated`, `delta`, `gated_delta`
//! update rules), unrolled over the (static) sequence as the spec's
//! recurrence: per step, the state `[batch, kv_heads, d_k, d_v]` decays by
//! `exp(decay)` (gated rules), the value is corrected by what the state
//! already retrieves for the key (delta rules, scaled by `beta`), the
//! outer product `k v^T` is added, and the query reads the state (its
//! kv head repeated over the query heads of its group). Each step is a
//! handful of small products (`MatMul`) and elementwise ops; `chunk_size`
//! is a tuning hint without effect on the result and is ignored.

use crate::budget::Grouped;
use crate::error::ImportError;
use crate::lower::build::R;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType};
use crate::tensor::{ConstData, ConstTensor};

fn ints(v: &[usize]) -> ConstTensor {
    ConstTensor { shape: vec![v.len()], data: ConstData::I64(v.iter().map(|&d| d as i64).collect()) }
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

fn perm_attr() -> AttributeProto {
    AttributeProto {
        name: "perm".to_string(),
        r#type: AttributeType::Ints as i32,
        ints: vec![0, 2, 1, 3],
        ..Default::default()
    }
}

/// The lowering's own steps, each a node over named values.
struct Steps<'a, 'c> {
    lw: &'a mut Lowerer,
    ctx: &'a NodeCtx<'c>,
    base: String,
}

impl Steps<'_, '_> {
    fn op(&mut self, op: &str, inputs: &[&str], what: &str, attrs: Vec<AttributeProto>) -> Result<String, ImportError> {
        let out = self.lw.internal_name(&self.base, what);
        self.lw.lower_part(self.ctx, op, inputs, &[&out], attrs)?;
        Ok(out)
    }

    fn reshape(&mut self, x: &str, shape: &[usize], what: &str) -> Result<String, ImportError> {
        let s = self.lw.constant(&self.base, &format!("{what}_shape"), ints(shape));
        self.op("Reshape", &[x, &s], what, Vec::new())
    }

    /// `[b, t, h * d]` to `[b, h, t, d]`.
    fn heads_first(
        &mut self,
        x: &str,
        (b, t, h, d): (usize, usize, usize, usize),
        what: &str,
    ) -> Result<String, ImportError> {
        let split = self.reshape(x, &[b, t, h, d], &format!("{what}_split"))?;
        self.op("Transpose", &[&split], what, vec![perm_attr()])
    }

    /// Step `i` of `[b, h, t, d]` as `[b, h, d]`.
    fn at_step(&mut self, x: &str, i: usize, what: &str) -> Result<String, ImportError> {
        let idx = self.lw.constant(
            &self.base,
            &format!("{what}_index"),
            ConstTensor { shape: vec![], data: ConstData::I64(vec![i as i64]) },
        );
        self.op("Gather", &[x, &idx], what, vec![int_attr("axis", 2)])
    }
}

fn shape_of(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Vec<usize>, ImportError> {
    let (_, v) = lw.input(ctx, i)?;
    Ok(match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape,
    })
}

pub(crate) fn linear_attention(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 6)?;
    let rule = ctx.string_attr("update_rule")?.unwrap_or_else(|| "gated_delta".to_string());
    let (gated, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => return Err(ctx.bad_attr("update_rule", format!("is `{other}`; linear, gated, delta or gated_delta"))),
    };
    let heads = |name: &str| -> Result<usize, ImportError> {
        usize::try_from(ctx.int_attr(name, 0)?)
            .ok()
            .filter(|&h| h > 0)
            .ok_or_else(|| ctx.bad_attr(name, "must be positive"))
    };
    let (hq, hkv) = (heads("q_num_heads")?, heads("kv_num_heads")?);
    if hq % hkv != 0 {
        return Err(ctx.err(format!("q_num_heads {hq} is not a multiple of kv_num_heads {hkv}")));
    }
    let (qs, ks, vs) = (shape_of(lw, ctx, 0)?, shape_of(lw, ctx, 1)?, shape_of(lw, ctx, 2)?);
    let (&[b, t, qh], &[_, _, kh], &[_, _, vh]) = (&qs[..], &ks[..], &vs[..]) else {
        return Err(ctx.err(format!("query {qs:?}, key {ks:?}, value {vs:?}: [batch, seq, heads * dim] are expected")));
    };
    if qh % hq != 0 || vh % hkv != 0 || ks[..2] != qs[..2] || vs[..2] != qs[..2] || kh != hkv * (qh / hq) {
        return Err(
            ctx.err(format!("query {qs:?}, key {ks:?}, value {vs:?} do not match {hq} query and {hkv} kv heads"))
        );
    }
    let (dk, dv, group) = (qh / hq, vh / hkv, hq / hkv);
    let (decay, beta) = (ctx.input_name(4).map(str::to_string), ctx.input_name(5).map(str::to_string));
    if gated != decay.is_some() || delta != beta.is_some() {
        return Err(ctx.err(format!(
            "update rule `{rule}` needs decay: {gated}, beta: {delta}; the node gives decay: {}, beta: {}",
            decay.is_some(),
            beta.is_some()
        )));
    }
    let scale = match ctx.float_attr("scale", 0.0)? {
        0.0 => 1.0 / (dk as f64).sqrt(),
        s => f64::from(s),
    } as f32;
    let out = ctx.node.output[0].clone();
    let mut s = Steps { lw, ctx, base: out.clone() };
    let q4 = s.heads_first(&ctx.node.input[0], (b, t, hq, dk), "q")?;
    let k4 = s.heads_first(&ctx.node.input[1], (b, t, hkv, dk), "k")?;
    let v4 = s.heads_first(&ctx.node.input[2], (b, t, hkv, dv), "v")?;
    let decay4 = match &decay {
        Some(d) => {
            let last = shape_of(s.lw, ctx, 4)?[2];
            let per = if last == hkv {
                1
            } else if last == hkv * dk {
                dk
            } else {
                return Err(ctx.err(format!(
                    "decay's last dim {last} is neither kv_num_heads {hkv} nor kv_num_heads * d_k {}",
                    hkv * dk
                )));
            };
            Some(s.heads_first(d, (b, t, hkv, per), "decay")?)
        }
        None => None,
    };
    let beta4 = match &beta {
        Some(x) => {
            let last = shape_of(s.lw, ctx, 5)?[2];
            if last != hkv && last != 1 {
                return Err(ctx.err(format!("beta's last dim {last} is neither kv_num_heads {hkv} nor 1")));
            }
            Some(s.heads_first(x, (b, t, last, 1), "beta")?)
        }
        None => None,
    };
    let state_shape = [b, hkv, dk, dv];
    let mut state = match ctx.input_name(3) {
        Some(p) => {
            let ps = shape_of(s.lw, ctx, 3)?;
            if ps != state_shape {
                return Err(ctx.err(format!("past_state {ps:?} is not {state_shape:?}")));
            }
            p.to_string()
        }
        None => {
            s.lw.reserve_table(ctx, "the zero initial state", &state_shape, 4)?;
            let zeros = ConstTensor { shape: state_shape.to_vec(), data: ConstData::F32(vec![0.0; b * hkv * dk * dv]) };
            s.lw.constant(&out, "state0", zeros)
        }
    };
    // Each step lowers at least the 8 nodes every variant has (4 reshapes,
    // the outer product, its sum, the read and its scale).
    let needs = format!("unrolling the recurrence needs {} steps of at least 8 nodes each", Grouped(t as u128));
    s.lw.budget.reserve_nodes(ctx, &needs, t.checked_mul(8))?;
    let scale = s.lw.constant(&out, "scale", ConstTensor { shape: vec![], data: ConstData::F32(vec![scale]) });
    let mut steps = Vec::with_capacity(t);
    for i in 0..t {
        let (q_t, k_t, v_t) = (s.at_step(&q4, i, "q_t")?, s.at_step(&k4, i, "k_t")?, s.at_step(&v4, i, "v_t")?);
        if let Some(d4) = &decay4 {
            // [b, h, 1 or d_k] -> exp -> [b, h, 1 or d_k, 1] over d_v.
            let g = s.at_step(d4, i, "decay_t")?;
            let per = shape_of_named(s.lw, ctx, &g)?[2];
            let e = s.op("Exp", &[&g], "decay_exp", Vec::new())?;
            let e = s.reshape(&e, &[b, hkv, per, 1], "decay_col")?;
            state = s.op("Mul", &[&state, &e], "decayed", Vec::new())?;
        }
        let k_row = s.reshape(&k_t, &[b, hkv, 1, dk], "k_row")?;
        let v_t = match &beta4 {
            Some(b4) => {
                let retrieved = s.op("MatMul", &[&k_row, &state], "retrieved", Vec::new())?;
                let retrieved = s.reshape(&retrieved, &[b, hkv, dv], "retrieved_row")?;
                let diff = s.op("Sub", &[&v_t, &retrieved], "correction", Vec::new())?;
                let beta_t = s.at_step(b4, i, "beta_t")?;
                s.op("Mul", &[&beta_t, &diff], "v_delta", Vec::new())?
            }
            None => v_t,
        };
        let k_col = s.reshape(&k_t, &[b, hkv, dk, 1], "k_col")?;
        let v_row = s.reshape(&v_t, &[b, hkv, 1, dv], "v_row")?;
        let outer = s.op("MatMul", &[&k_col, &v_row], "outer", Vec::new())?;
        state = s.op("Add", &[&state, &outer], "state", Vec::new())?;
        let read = if group == 1 {
            state.clone()
        } else {
            let lifted = s.reshape(&state, &[b, hkv, 1, dk, dv], "state_lifted")?;
            let to = s.lw.constant(&out, "group_shape", ints(&[b, hkv, group, dk, dv]));
            let spread = s.op("Expand", &[&lifted, &to], "state_spread", Vec::new())?;
            s.reshape(&spread, &[b, hq, dk, dv], "state_read")?
        };
        let q_row = s.reshape(&q_t, &[b, hq, 1, dk], "q_row")?;
        let o = s.op("MatMul", &[&q_row, &read], "read", Vec::new())?;
        steps.push(s.op("Mul", &[&o, &scale], "out_t", Vec::new())?);
    }
    let refs: Vec<&str> = steps.iter().map(String::as_str).collect();
    let all =
        if refs.len() == 1 { steps[0].clone() } else { s.op("Concat", &refs, "steps", vec![int_attr("axis", 2)])? };
    let seq_first = s.op("Transpose", &[&all], "seq_first", vec![perm_attr()])?;
    let shape = s.lw.constant(&out, "out_shape", ints(&[b, t, hq * dv]));
    s.lw.lower_part(ctx, "Reshape", &[&seq_first, &shape], &[&out], Vec::new())?;
    if let Some(present) = ctx.node.output.get(1).filter(|o| !o.is_empty()) {
        s.lw.lower_part(ctx, "Identity", &[&state], &[present], Vec::new())?;
    }
    Ok(())
}

fn shape_of_named(lw: &Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<Vec<usize>, ImportError> {
    Ok(match lw.value(ctx, name)? {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    })
}
