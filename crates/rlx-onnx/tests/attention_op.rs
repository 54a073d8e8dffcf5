//! The opset-23 `Attention` op: 3-D and 4-D layouts, grouped heads, a bool
//! mask with `is_causal`, causal with fewer queries than keys (the spec's
//! top-left alignment), a past cache with the present outputs, softcap;
//! against a naive f64 reference written from the spec. Scores are sums of
//! at most 8 products of values <= ~1, so f32 rounding stays ~1e-6: 1e-5
//! catches a wrong head, key or mask cell (off by > 1e-2).

use crate::common::*;
use rlx_onnx::proto::{data_type, TensorProto};
use rlx_onnx::ImportOptions;

const TOL: f32 = 1e-5;

/// Sizes of one reference call; `past` keys come first.
#[derive(Clone, Copy)]
struct Shape {
    batch: usize,
    heads: usize,
    kv_heads: usize,
    seq: usize,
    kv: usize,
    past: usize,
    dim: usize,
    v_dim: usize,
}

/// `q [b, h, s, d]`, `k [b, kvh, kv, d]`, `v [b, kvh, kv, dv]` (dense,
/// past included), `allowed(b, h, i, j)`, additive `bias(b, h, i, j)`;
/// softcap before the bias, a row with no allowed key gives zeros.
fn reference(
    sh: Shape,
    (q, k, v): (&[f32], &[f32], &[f32]),
    scale: f64,
    softcap: f64,
    allowed: impl Fn(usize, usize, usize, usize) -> bool,
) -> Vec<f32> {
    let mut out = vec![0.0f32; sh.batch * sh.heads * sh.seq * sh.v_dim];
    for b in 0..sh.batch {
        for h in 0..sh.heads {
            let kh = h / (sh.heads / sh.kv_heads);
            for i in 0..sh.seq {
                let mut scores: Vec<f64> = (0..sh.kv)
                    .map(|j| {
                        let dot: f64 = (0..sh.dim)
                            .map(|t| {
                                f64::from(q[((b * sh.heads + h) * sh.seq + i) * sh.dim + t])
                                    * f64::from(k[((b * sh.kv_heads + kh) * sh.kv + j) * sh.dim + t])
                            })
                            .sum();
                        let s = dot * scale;
                        if softcap > 0.0 {
                            softcap * (s / softcap).tanh()
                        } else {
                            s
                        }
                    })
                    .collect();
                for (j, s) in scores.iter_mut().enumerate() {
                    if !allowed(b, h, i, j) {
                        *s = f64::NEG_INFINITY;
                    }
                }
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if max == f64::NEG_INFINITY {
                    continue;
                }
                let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                for t in 0..sh.v_dim {
                    let acc: f64 = (0..sh.kv)
                        .map(|j| e[j] / sum * f64::from(v[((b * sh.kv_heads + kh) * sh.kv + j) * sh.v_dim + t]))
                        .sum();
                    out[((b * sh.heads + h) * sh.seq + i) * sh.v_dim + t] = acc as f32;
                }
            }
        }
    }
    out
}

/// `[b, s, heads * d]` → `[b, heads, s, d]`.
fn to_bhsd(x: &[f32], b: usize, s: usize, heads: usize, d: usize) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for bi in 0..b {
        for si in 0..s {
            for h in 0..heads {
                for t in 0..d {
                    out[((bi * heads + h) * s + si) * d + t] = x[(bi * s + si) * heads * d + h * d + t];
                }
            }
        }
    }
    out
}

fn dims(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

fn bool_init(name: &str, shape: &[usize], data: &[bool]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims(shape),
        data_type: data_type::BOOL,
        raw_data: data.iter().map(|&b| u8::from(b)).collect(),
        ..Default::default()
    }
}

#[test]
fn three_d_grouped_heads_with_a_bool_mask_and_causal() {
    let sh = Shape { batch: 2, heads: 4, kv_heads: 2, seq: 3, kv: 3, past: 0, dim: 4, v_dim: 5 };
    let (q, k, v) = (values(2 * 3 * 16, 401), values(2 * 3 * 8, 402), values(2 * 3 * 10, 403));
    // Key 1 of batch 1 is masked for every query.
    let mask: Vec<bool> = (0..2 * 3).map(|at| at != 4).collect();
    let m = model(
        vec![node(
            "Attention",
            "att",
            &["q", "k", "v", "m"],
            &["y"],
            vec![attr_i("q_num_heads", 4), attr_i("kv_num_heads", 2), attr_i("is_causal", 1)],
        )],
        vec![bool_init("m", &[2, 1, 1, 3], &mask)],
        vec![vi("q", &[2, 3, 16]), vi("k", &[2, 3, 8]), vi("v", &[2, 3, 10])],
        vec![vi("y", &[2, 3, 20])],
        23,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let out = run("att3d", &imported, &[("q", &q), ("k", &k), ("v", &v)], &["y"]);
    let want = reference(
        sh,
        (&to_bhsd(&q, 2, 3, 4, 4), &to_bhsd(&k, 2, 3, 2, 4), &to_bhsd(&v, 2, 3, 2, 5)),
        0.5,
        0.0,
        |b, _, i, j| j <= i && !(b == 1 && j == 1),
    );
    // The reference is [b, h, s, dv]; Y is [b, s, h * dv].
    let got = to_bhsd(&out[0], 2, 3, 4, 5);
    assert_close(&got, &want, TOL, "y");
}

#[test]
fn causal_with_fewer_queries_than_keys_is_top_left_aligned_and_softcap_applies() {
    let sh = Shape { batch: 1, heads: 2, kv_heads: 2, seq: 2, kv: 5, past: 0, dim: 3, v_dim: 3 };
    let (q, k, v) = (values(2 * 2 * 3, 411), values(2 * 5 * 3, 412), values(2 * 5 * 3, 413));
    let m = model(
        vec![node(
            "Attention",
            "att",
            &["q", "k", "v"],
            &["y"],
            vec![attr_i("is_causal", 1), attr_f("softcap", 0.3), attr_f("scale", 0.7)],
        )],
        vec![],
        vec![vi("q", &[1, 2, 2, 3]), vi("k", &[1, 2, 5, 3]), vi("v", &[1, 2, 5, 3])],
        vec![vi("y", &[1, 2, 2, 3])],
        23,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let out = run("attcausal", &imported, &[("q", &q), ("k", &k), ("v", &v)], &["y"]);
    let want = reference(sh, (&q, &k, &v), f64::from(0.7f32), f64::from(0.3f32), |_, _, i, j| j <= i);
    assert_close(&out[0], &want, TOL, "y");
}

#[test]
fn a_past_cache_is_concatenated_and_returned_as_present() {
    let sh = Shape { batch: 1, heads: 2, kv_heads: 1, seq: 2, kv: 5, past: 3, dim: 4, v_dim: 2 };
    let (q, k, v) = (values(2 * 2 * 4, 421), values(2 * 4, 422), values(2 * 2, 423));
    let (pk, pv) = (values(3 * 4, 424), values(3 * 2, 425));
    let m = model(
        vec![node(
            "Attention",
            "att",
            &["q", "k", "v", "", "pk", "pv"],
            &["y", "present_k", "present_v"],
            vec![attr_i("is_causal", 1)],
        )],
        vec![],
        vec![
            vi("q", &[1, 2, 2, 4]),
            vi("k", &[1, 1, 2, 4]),
            vi("v", &[1, 1, 2, 2]),
            vi("pk", &[1, 1, 3, 4]),
            vi("pv", &[1, 1, 3, 2]),
        ],
        vec![vi("y", &[1, 2, 2, 2]), vi("present_k", &[1, 1, 5, 4]), vi("present_v", &[1, 1, 5, 2])],
        23,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    assert!(imported.sched_text.contains("mask_kind: causal"), "{}", imported.sched_text);
    let inputs = [("q", &q[..]), ("k", &k[..]), ("v", &v[..]), ("pk", &pk[..]), ("pv", &pv[..])];
    let out = run("attpast", &imported, &inputs, &["y", "present_k", "present_v"]);
    let k_all: Vec<f32> = pk.iter().chain(&k).copied().collect();
    let v_all: Vec<f32> = pv.iter().chain(&v).copied().collect();
    assert_eq!(out[1], k_all);
    assert_eq!(out[2], v_all);
    // Query i sees the past and the new keys up to itself: j <= i + past.
    let want = reference(sh, (&q, &k_all, &v_all), 0.5, 0.0, |_, _, i, j| j <= i + sh.past);
    assert_close(&out[0], &want, TOL, "y");
}

#[test]
fn unsupported_outputs_and_inputs_are_errors_naming_the_node() {
    let build = |outputs: &[&str], inputs: &[&str], attrs| {
        model(
            vec![node("Attention", "att", inputs, outputs, attrs)],
            vec![],
            vec![vi("q", &[1, 1, 2, 4]), vi("k", &[1, 1, 2, 4]), vi("v", &[1, 1, 2, 4]), vi("n", &[1])],
            vec![vi("y", &[1, 1, 2, 4]), vi("qk", &[1, 1, 2, 2])],
            23,
        )
    };
    let err = |m| import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("must fail").to_string();
    let e = err(build(&["y", "", "", "qk"], &["q", "k", "v"], vec![attr_i("qk_matmul_output_mode", 4)]));
    assert!(e.contains("att") && e.contains("qk_matmul_output_mode"), "{e}");
    let e = err(build(&["y"], &["q", "k", "v", "", "", "", "n"], vec![]));
    assert!(e.contains("nonpad_kv_seqlen"), "{e}");
}

#[test]
fn flex_attention_runs_its_modifier_subgraphs_with_grouped_heads() {
    use crate::common::typed::{f, run_model, T};
    use rlx_onnx::proto::*;
    let (b, hq, hkv, s, kv, d) = (1usize, 4usize, 2usize, 3usize, 5usize, 4usize);
    let q = values(b * hq * s * d, 21);
    let k = values(b * hkv * kv * d, 22);
    let v = values(b * hkv * kv * d, 23);
    let bias = values(kv, 24);
    // score_mod adds an outer-scope bias per key; prob_mod doubles.
    let sub = |input: &str, op: &str, operand: &str, output: &str| GraphProto {
        node: vec![node(op, "m", &[input, operand], &[output], vec![])],
        input: vec![ValueInfoProto { name: input.to_string(), ..Default::default() }],
        output: vec![ValueInfoProto { name: output.to_string(), ..Default::default() }],
        ..Default::default()
    };
    let graph_attr = |name: &str, g: GraphProto| AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Graph as i32,
        g: Some(g),
        ..Default::default()
    };
    let mut flex = node(
        "FlexAttention",
        "flex",
        &["q", "k", "v"],
        &["y"],
        vec![
            graph_attr("score_mod", sub("scores", "Add", "bias", "biased")),
            graph_attr("prob_mod", sub("p", "Mul", "two", "doubled")),
        ],
    );
    flex.domain = "ai.onnx.preview".to_string();
    let (qt, kt, vt) = (f(&[b, hq, s, d], q.clone()), f(&[b, hkv, kv, d], k.clone()), f(&[b, hkv, kv, d], v.clone()));
    let mut m = model(
        vec![flex],
        vec![init_typed("bias", &[kv as i64], &bias), init_typed("two", &[], &[2.0])],
        vec![qt.info("q"), kt.info("k"), vt.info("v")],
        vec![ValueInfoProto { name: "y".to_string(), ..Default::default() }],
        26,
    );
    m.opset_import.push(OperatorSetIdProto { domain: "ai.onnx.preview".to_string(), version: 1 });
    let got = run_model("flex", &m, &[("q", qt.bytes()), ("k", kt.bytes()), ("v", vt.bytes())], &["y"]).remove(0);
    let T::F32(_, got) = got else { panic!("f32 expected") };
    let mut want = Vec::new();
    for h in 0..hq {
        let kh = h / (hq / hkv);
        for i in 0..s {
            let scores: Vec<f64> = (0..kv)
                .map(|j| {
                    let dot: f64 =
                        (0..d).map(|c| f64::from(q[(h * s + i) * d + c]) * f64::from(k[(kh * kv + j) * d + c])).sum();
                    dot / (d as f64).sqrt() + f64::from(bias[j])
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for c in 0..d {
                want.push((0..kv).map(|j| 2.0 * e[j] / sum * f64::from(v[(kh * kv + j) * d + c])).sum::<f64>() as f32);
            }
        }
    }
    assert_close(&got, &want, TOL, "flex attention");
}

#[test]
fn qk_matmul_output_in_every_mode() {
    // 4-D, 4 query heads over 2 kv heads, softcap, a bool mask that closes
    // every key of query 0 in batch 0 (a fully masked row).
    let (b, h, kvh, s, kv, d) = (2usize, 4usize, 2usize, 2usize, 3usize, 4usize);
    let (q, k, v) = (values(b * h * s * d, 411), values(b * kvh * kv * d, 412), values(b * kvh * kv * d, 413));
    let mask: Vec<bool> = (0..b * s * kv).map(|at| !(at / (s * kv) == 0 && at % (s * kv) / kv == 0)).collect();
    let (scale, softcap) = (0.5f64, 2.0f64);
    let allowed = |bi: usize, i: usize, j: usize| mask[(bi * s + i) * kv + j];
    for mode in 0..4 {
        let m = model(
            vec![node(
                "Attention",
                "att",
                &["q", "k", "v", "m"],
                &["y", "", "", "qk"],
                vec![
                    attr_f("scale", scale as f32),
                    attr_f("softcap", softcap as f32),
                    attr_i("qk_matmul_output_mode", mode),
                ],
            )],
            vec![bool_init("m", &[b, 1, s, kv], &mask)],
            vec![
                vi("q", &[b as i64, h as i64, s as i64, d as i64]),
                vi("k", &[b as i64, kvh as i64, kv as i64, d as i64]),
                vi("v", &[b as i64, kvh as i64, kv as i64, d as i64]),
            ],
            vec![
                vi("y", &[b as i64, h as i64, s as i64, d as i64]),
                vi("qk", &[b as i64, h as i64, s as i64, kv as i64]),
            ],
            23,
        );
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
        let got = run("qk-modes", &imported, &[("q", &q), ("k", &k), ("v", &v)], &["qk"]).remove(0);
        let mut want = Vec::new();
        for bi in 0..b {
            for hi in 0..h {
                let kh = hi / (h / kvh);
                for i in 0..s {
                    let capped: Vec<f64> = (0..kv)
                        .map(|j| {
                            let dot: f64 = (0..d)
                                .map(|t| {
                                    f64::from(q[((bi * h + hi) * s + i) * d + t])
                                        * f64::from(k[((bi * kvh + kh) * kv + j) * d + t])
                                })
                                .sum();
                            softcap * (dot * scale / softcap).tanh()
                        })
                        .collect();
                    let biased: Vec<f64> =
                        (0..kv).map(|j| if allowed(bi, i, j) { capped[j] } else { f64::NEG_INFINITY }).collect();
                    let row: Vec<f64> = match mode {
                        0 | 1 => capped,
                        2 => biased,
                        _ => {
                            let max = biased.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                            if max == f64::NEG_INFINITY {
                                vec![0.0; kv]
                            } else {
                                let e: Vec<f64> = biased.iter().map(|x| (x - max).exp()).collect();
                                let sum: f64 = e.iter().sum();
                                e.iter().map(|x| x / sum).collect()
                            }
                        }
                    };
                    want.extend(row.into_iter().map(|x| x as f32));
                }
            }
        }
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let ok = if w.is_infinite() { g == w } else { (g - w).abs() <= TOL };
            assert!(ok, "mode {mode} [{i}]: got {g}, want {w}");
        }
    }
}
