//! `LinearAttention`: the importer's unrolled recurrence against the
//! spec's, written here step by step in f64, for every update rule, grouped
//! query heads, per-head and per-dimension decay, and a past state.

use crate::common::typed::*;
use crate::common::*;

struct Case {
    b: usize,
    t: usize,
    hq: usize,
    hkv: usize,
    dk: usize,
    dv: usize,
}

/// The spec's recurrence; returns (output `[b, t, hq * dv]`, state).
#[allow(clippy::too_many_arguments)]
fn reference(
    c: &Case,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    past: &[f32],
    decay: Option<(&[f32], usize)>,
    beta: Option<(&[f32], usize)>,
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let Case { b, t, hq, hkv, dk, dv } = *c;
    let mut state: Vec<f64> = past.iter().map(|&x| f64::from(x)).collect();
    let mut out = vec![0.0; b * t * hq * dv];
    let st = |bi: usize, h: usize, i: usize, j: usize| ((bi * hkv + h) * dk + i) * dv + j;
    for step in 0..t {
        for bi in 0..b {
            for h in 0..hkv {
                let kt: Vec<f64> = (0..dk).map(|i| f64::from(k[(bi * t + step) * hkv * dk + h * dk + i])).collect();
                let mut vt: Vec<f64> = (0..dv).map(|j| f64::from(v[(bi * t + step) * hkv * dv + h * dv + j])).collect();
                if let Some((d, per)) = decay {
                    for i in 0..dk {
                        let g =
                            f64::from(d[(bi * t + step) * hkv * per + h * per + if per == 1 { 0 } else { i }]).exp();
                        for j in 0..dv {
                            state[st(bi, h, i, j)] *= g;
                        }
                    }
                }
                if let Some((be, per)) = beta {
                    let bt = f64::from(be[(bi * t + step) * per + if per == 1 { 0 } else { h }]);
                    for (j, vj) in vt.iter_mut().enumerate() {
                        let retrieved: f64 = (0..dk).map(|i| state[st(bi, h, i, j)] * kt[i]).sum();
                        *vj = bt * (*vj - retrieved);
                    }
                }
                for i in 0..dk {
                    for j in 0..dv {
                        state[st(bi, h, i, j)] += kt[i] * vt[j];
                    }
                }
            }
            for h in 0..hq {
                let kvh = h / (hq / hkv);
                for j in 0..dv {
                    let dot: f64 = (0..dk)
                        .map(|i| f64::from(q[(bi * t + step) * hq * dk + h * dk + i]) * state[st(bi, kvh, i, j)])
                        .sum();
                    out[(bi * t + step) * hq * dv + h * dv + j] = scale * dot;
                }
            }
        }
    }
    (out, state)
}

#[test]
fn every_update_rule_matches_the_recurrence() {
    let c = Case { b: 2, t: 4, hq: 4, hkv: 2, dk: 3, dv: 2 };
    let (q, k, v) =
        (values(c.b * c.t * c.hq * c.dk, 1), values(c.b * c.t * c.hkv * c.dk, 2), values(c.b * c.t * c.hkv * c.dv, 3));
    let past = values(c.b * c.hkv * c.dk * c.dv, 4);
    let decay_heads: Vec<f32> = values(c.b * c.t * c.hkv, 5).iter().map(|x| -x.abs()).collect();
    let decay_dims: Vec<f32> = values(c.b * c.t * c.hkv * c.dk, 6).iter().map(|x| -x.abs()).collect();
    let beta: Vec<f32> = values(c.b * c.t * c.hkv, 7).iter().map(|x| x.abs()).collect();
    let beta_one: Vec<f32> = values(c.b * c.t, 8).iter().map(|x| x.abs()).collect();
    type Opt<'a> = Option<(&'a [f32], usize)>;
    let cases: [(&str, Opt<'_>, Opt<'_>); 5] = [
        ("linear", None, None),
        ("gated", Some((&decay_heads, 1)), None),
        ("gated", Some((&decay_dims, c.dk)), None),
        ("delta", None, Some((&beta, c.hkv))),
        ("gated_delta", Some((&decay_dims, c.dk)), Some((&beta_one, 1))),
    ];
    for (rule, decay, beta) in cases {
        let mut inputs = vec![
            In::Data("q", f(&[c.b, c.t, c.hq * c.dk], q.clone())),
            In::Data("k", f(&[c.b, c.t, c.hkv * c.dk], k.clone())),
            In::Data("v", f(&[c.b, c.t, c.hkv * c.dv], v.clone())),
            In::Data("past", f(&[c.b, c.hkv, c.dk, c.dv], past.clone())),
        ];
        let mut names = vec!["q", "k", "v", "past", "", ""];
        if let Some((d, per)) = decay {
            inputs.push(In::Data("decay", f(&[c.b, c.t, c.hkv * per], d.to_vec())));
            names[4] = "decay";
        }
        if let Some((be, per)) = beta {
            inputs.push(In::Data("beta", f(&[c.b, c.t, per], be.to_vec())));
            names[5] = "beta";
        }
        while names.last() == Some(&"") {
            names.pop();
        }
        let attrs = vec![
            attr_s("update_rule", rule),
            attr_i("q_num_heads", c.hq as i64),
            attr_i("kv_num_heads", c.hkv as i64),
            attr_f("scale", 0.75),
        ];
        let got = run_graph_opset(
            "linear-attention",
            vec![node("LinearAttention", "n", &names, &["y", "state"], attrs)],
            inputs,
            &["y", "state"],
            26,
        );
        let (want_y, want_state) = reference(&c, &q, &k, &v, &past, decay, beta, 0.75);
        let as_f32 = |w: Vec<f64>| w.into_iter().map(|x| x as f32).collect::<Vec<_>>();
        let floats = |t: &T| match t {
            T::F32(_, v) => v.clone(),
            other => panic!("f32 expected, got {other:?}"),
        };
        assert_close(&floats(&got[0]), &as_f32(want_y), 1e-5, &format!("{rule} output"));
        assert_close(&floats(&got[1]), &as_f32(want_state), 1e-5, &format!("{rule} state"));
    }
}
