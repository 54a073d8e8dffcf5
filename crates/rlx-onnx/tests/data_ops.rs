//! The ops over every carried type (f32, i64, i32, bool): arithmetic,
//! comparisons, logic, `Where`, `Cast`, and the movement ops (`Expand`,
//! `Slice`, `Split`, `Pad`, `Gather`, `Concat`, `Transpose`), plus `TopK`,
//! `CumSum`, `Einsum` and the constant folding of shape arithmetic. Each
//! case is a one-node (or small) ONNX graph built here, imported, validated
//! (no warnings), run in the interpreter and compared with a naive
//! computation written in the test. Integer and boolean results, moves and
//! selects are exact; float arithmetic is compared bit for bit where the
//! kernel computes the same IEEE operation, with a stated tolerance where
//! it does not.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;

#[test]
fn integer_arithmetic_broadcasts_and_wraps() {
    let a: Vec<i64> = vec![7, -7, i64::MAX, 0, 5, -9];
    let b: Vec<i64> = vec![2, -3, 1];
    for (op, f) in [
        ("Add", (|x: i64, y: i64| x.wrapping_add(y)) as fn(i64, i64) -> i64),
        ("Sub", |x, y| x.wrapping_sub(y)),
        ("Mul", |x, y| x.wrapping_mul(y)),
        ("Div", |x, y| x / y),
    ] {
        let got = one(
            &format!("int-{op}"),
            op,
            vec![In::Data("a", i64s(&[2, 3], a.clone())), In::Data("b", i64s(&[3], b.clone()))],
            vec![],
        );
        let want: Vec<i64> = (0..6).map(|i| f(a[i], b[i % 3])).collect();
        assert_eq!(got, i64s(&[2, 3], want), "{op}");
    }
    // i32 is computed in i64 and narrowed: the same wrapping results.
    let a32: Vec<i32> = vec![i32::MAX, -5, 6, i32::MIN];
    let got = one(
        "int32-add",
        "Add",
        vec![In::Data("a", i32s(&[2, 2], a32.clone())), In::Init("b", i32s(&[2, 1], vec![1, -7]))],
        vec![],
    );
    assert_eq!(got, i32s(&[2, 2], vec![i32::MIN, -4, -1, i32::MAX - 6]));
    let got = one(
        "int32-mul",
        "Mul",
        vec![In::Data("a", i32s(&[4], a32.clone())), In::Data("b", i32s(&[4], vec![2, 3, -4, -1]))],
        vec![],
    );
    assert_eq!(got, i32s(&[4], vec![-2, -15, -24, i32::MIN]));
    // Mixed types are refused with the op named.
    let m = model(
        vec![node("Add", "mix", &["a", "b"], &["y"], vec![])],
        vec![],
        vec![i64s(&[2], vec![0; 2]).info("a"), f(&[2], vec![0.0; 2]).info("b")],
        vec![vi("y", &[2])],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert_eq!(err, "ONNX op `Add` (node `mix`): inputs are i64 and f32; the op needs one type");
}

#[test]
fn comparisons_of_every_type_broadcast_to_bool() {
    let x: Vec<f32> = vec![1.0, f32::NAN, -0.0, 3.5, 2.0, -1.0];
    let y: Vec<f32> = vec![1.0, 0.0, 2.0];
    type Cmp = fn(f32, f32) -> bool;
    let cases: [(&str, Cmp); 5] = [
        ("Equal", |a, b| a == b),
        ("Less", |a, b| a < b),
        ("LessOrEqual", |a, b| a <= b),
        ("Greater", |a, b| a > b),
        ("GreaterOrEqual", |a, b| a >= b),
    ];
    for (op, cmp) in cases {
        let got = one(
            &format!("cmp-f32-{op}"),
            op,
            vec![In::Data("x", f(&[2, 3], x.clone())), In::Data("y", f(&[3], y.clone()))],
            vec![],
        );
        assert_eq!(got, bools(&[2, 3], (0..6).map(|i| cmp(x[i], y[i % 3])).collect()), "{op}");
        // A column against a row: a true two-sided broadcast, in i64.
        let xi: Vec<i64> = vec![1, 2, 3];
        let yi: Vec<i64> = vec![2, 1, 3, 0];
        let got = one(
            &format!("cmp-i64-{op}"),
            op,
            vec![In::Data("x", i64s(&[3, 1], xi.clone())), In::Data("y", i64s(&[1, 4], yi.clone()))],
            vec![],
        );
        let want = (0..12).map(|i| cmp(xi[i / 4] as f32, yi[i % 4] as f32)).collect();
        assert_eq!(got, bools(&[3, 4], want), "{op} i64");
        // i32 against a scalar.
        let got = one(
            &format!("cmp-i32-{op}"),
            op,
            vec![In::Data("x", i32s(&[3], vec![-1, 0, 1])), In::Init("y", i32s(&[], vec![0]))],
            vec![],
        );
        assert_eq!(got, bools(&[3], [-1, 0, 1].iter().map(|&v| cmp(v as f32, 0.0)).collect()), "{op} i32");
    }
    let got = one(
        "cmp-bool",
        "Equal",
        vec![
            In::Data("x", bools(&[4], vec![true, false, true, false])),
            In::Data("y", bools(&[4], vec![true, true, false, false])),
        ],
        vec![],
    );
    assert_eq!(got, bools(&[4], vec![true, false, false, true]));
}

#[test]
fn boolean_logic_and_where() {
    let a = vec![true, false, true, false, true, true];
    let b = vec![true, false, false];
    let got = one(
        "and",
        "And",
        vec![In::Data("a", bools(&[2, 3], a.clone())), In::Data("b", bools(&[3], b.clone()))],
        vec![],
    );
    assert_eq!(got, bools(&[2, 3], (0..6).map(|i| a[i] && b[i % 3]).collect()));
    let got =
        one("or", "Or", vec![In::Data("a", bools(&[2, 3], a.clone())), In::Data("b", bools(&[3], b.clone()))], vec![]);
    assert_eq!(got, bools(&[2, 3], (0..6).map(|i| a[i] || b[i % 3]).collect()));
    let got = one("not", "Not", vec![In::Data("a", bools(&[2, 3], a.clone()))], vec![]);
    assert_eq!(got, bools(&[2, 3], a.iter().map(|x| !x).collect()));

    // Where with a [2,1,3] condition, a [4,1] X and a scalar Y: X and the
    // condition are broadcast into scratch, Y read as a scalar.
    let cond: Vec<bool> = vec![true, false, true, false, false, true];
    let x: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0];
    let got = one(
        "where",
        "Where",
        vec![
            In::Data("c", bools(&[2, 1, 3], cond.clone())),
            In::Data("x", f(&[4, 1], x.clone())),
            In::Init("z", f(&[], vec![-9.5])),
        ],
        vec![],
    );
    let out = [2, 4, 3];
    let want: Vec<f32> =
        (0..24).map(|i| if cond[bidx(i, &out, &[2, 1, 3])] { x[bidx(i, &out, &[4, 1])] } else { -9.5 }).collect();
    assert_eq!(got, f(&out, want));
    // Int64 values.
    let got = one(
        "where-i64",
        "Where",
        vec![
            In::Data("c", bools(&[3], vec![true, false, true])),
            In::Data("x", i64s(&[3], vec![1, 2, 3])),
            In::Data("z", i64s(&[3], vec![-1, -2, -3])),
        ],
        vec![],
    );
    assert_eq!(got, i64s(&[3], vec![1, -2, 3]));
}

#[test]
fn casts_between_every_carried_type() {
    let x = vec![-2.7f32, -0.0, 0.5, 3.9, f32::NAN, 1e10];
    let to = |t: i32| vec![attr_i("to", t as i64)];
    let got = one("cast-f-i64", "Cast", vec![In::Data("x", f(&[6], x.clone()))], to(data_type::INT64));
    // Truncation toward zero, NaN to 0, saturating.
    assert_eq!(got, i64s(&[6], vec![-2, 0, 0, 3, 0, 10_000_000_000]));
    let got = one("cast-f-i32", "Cast", vec![In::Data("x", f(&[6], x.clone()))], to(data_type::INT32));
    assert_eq!(got, i32s(&[6], vec![-2, 0, 0, 3, 0, i32::MAX]));
    let got = one("cast-f-bool", "Cast", vec![In::Data("x", f(&[6], x.clone()))], to(data_type::BOOL));
    assert_eq!(got, bools(&[6], vec![true, false, true, true, true, true]));
    let ints = vec![-3i64, 0, 1 << 40, 7];
    let got = one("cast-i64-f", "Cast", vec![In::Data("x", i64s(&[4], ints.clone()))], to(data_type::FLOAT));
    assert_eq!(got, f(&[4], ints.iter().map(|&v| v as f32).collect()));
    let got = one("cast-i64-i32", "Cast", vec![In::Data("x", i64s(&[4], ints.clone()))], to(data_type::INT32));
    assert_eq!(got, i32s(&[4], ints.iter().map(|&v| v as i32).collect()));
    let got = one("cast-bool-f", "Cast", vec![In::Data("x", bools(&[2], vec![true, false]))], to(data_type::FLOAT));
    assert_eq!(got, f(&[2], vec![1.0, 0.0]));
    let got = one("cast-i32-i64", "Cast", vec![In::Data("x", i32s(&[2], vec![-1, i32::MAX]))], to(data_type::INT64));
    assert_eq!(got, i64s(&[2], vec![-1, i32::MAX as i64]));
    // Unsupported targets are named.
    let m = model(
        vec![node("Cast", "c", &["x"], &["y"], to(data_type::STRING))],
        vec![],
        vec![vi("x", &[2])],
        vec![vi("y", &[2])],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(
        err.starts_with("ONNX op `Cast` (node `c`): attribute `to` is STRING (8); supported targets: FLOAT, FLOAT16, BFLOAT16 and DOUBLE (computed in f32), INT64"),
        "{err}"
    );
}

fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

#[test]
fn expand_and_transpose_of_typed_data() {
    let got = one(
        "expand",
        "Expand",
        vec![In::Data("x", f(&[3, 1], vec![1.0, 2.0, 3.0])), In::Init("s", i64s(&[3], vec![2, 1, 4]))],
        vec![],
    );
    assert_eq!(got, f(&[2, 3, 4], (0..24).map(|i| [1.0, 2.0, 3.0][(i / 4) % 3]).collect()));
    let got = one(
        "expand-bool",
        "Expand",
        vec![In::Data("x", bools(&[2], vec![true, false])), In::Init("s", i64s(&[2], vec![3, 1]))],
        vec![],
    );
    assert_eq!(got, bools(&[3, 2], vec![true, false, true, false, true, false]));
    let got = one(
        "transpose-i64",
        "Transpose",
        vec![In::Data("x", i64s(&[2, 3], vec![0, 1, 2, 3, 4, 5]))],
        vec![attr_ints("perm", &[1, 0])],
    );
    assert_eq!(got, i64s(&[3, 2], vec![0, 3, 1, 4, 2, 5]));
}

/// Reference slice over a row-major tensor.
fn slice_ref(x: &[f32], shape: &[usize], start: &[usize], count: &[usize], step: &[i64]) -> Vec<f32> {
    let strides: Vec<usize> = (0..shape.len()).map(|d| shape[d + 1..].iter().product()).collect();
    let total: usize = count.iter().product();
    (0..total)
        .map(|i| {
            let mut rem = i;
            let mut at = 0i64;
            for d in (0..shape.len()).rev() {
                let c = rem % count[d];
                rem /= count[d];
                at += (start[d] as i64 + c as i64 * step[d]) * strides[d] as i64;
            }
            x[at as usize]
        })
        .collect()
}

#[test]
fn slices_are_views_row_copies_or_strided_reads() {
    let shape = [3, 4, 5];
    let x = iota(60);
    let data = || In::Data("x", f(&shape, x.clone()));
    let ints = |v: &[i64]| i64s(&[v.len()], v.to_vec());
    // Contiguous (rows 1..3 of axis 0): a view. Through a Relu so the
    // view is read by a thunk as well as copied out.
    let got = one("slice-view", "Slice", vec![data(), In::Init("s", ints(&[1])), In::Init("e", ints(&[3]))], vec![]);
    assert_eq!(got, f(&[2, 4, 5], slice_ref(&x, &shape, &[1, 0, 0], &[2, 4, 5], &[1, 1, 1])));
    // One middle axis cut: a row copy (`Narrow`); negative start, clamped end.
    let got = one(
        "slice-narrow",
        "Slice",
        vec![data(), In::Init("s", ints(&[-3])), In::Init("e", ints(&[100])), In::Init("a", ints(&[1]))],
        vec![],
    );
    assert_eq!(got, f(&[3, 3, 5], slice_ref(&x, &shape, &[0, 1, 0], &[3, 3, 5], &[1, 1, 1])));
    // Steps on two axes: a strided read.
    let got = one(
        "slice-strided",
        "Slice",
        vec![
            data(),
            In::Init("s", ints(&[0, 1])),
            In::Init("e", ints(&[3, 5])),
            In::Init("a", ints(&[0, 2])),
            In::Init("t", ints(&[2, 3])),
        ],
        vec![],
    );
    assert_eq!(got, f(&[2, 4, 2], slice_ref(&x, &shape, &[0, 0, 1], &[2, 4, 2], &[2, 1, 3])));
    // Negative steps over data: the other axes first, then a gather with
    // the reversed indices; over a constant the slice folds.
    let got = one(
        "slice-reversed",
        "Slice",
        vec![
            data(),
            In::Init("s", ints(&[-1, 1])),
            In::Init("e", ints(&[i64::MIN, 5])),
            In::Init("a", ints(&[1, 2])),
            In::Init("t", ints(&[-2, 2])),
        ],
        vec![],
    );
    assert_eq!(got, f(&[3, 2, 2], slice_ref(&x, &shape, &[0, 3, 1], &[3, 2, 2], &[1, -2, 2])));
    let got = run_graph(
        "slice-const-rev",
        vec![
            node("Slice", "rev", &["c", "s", "e", "a", "t"], &["r"], vec![]),
            node("Add", "add", &["x", "r"], &["y"], vec![]),
        ],
        vec![
            In::Data("x", f(&[4], vec![0.5; 4])),
            In::Init("c", f(&[4], vec![1.0, 2.0, 3.0, 4.0])),
            In::Init("s", ints(&[-1])),
            In::Init("e", ints(&[i64::MIN])),
            In::Init("a", ints(&[0])),
            In::Init("t", ints(&[-1])),
        ],
        &["y"],
    );
    assert_eq!(got[0], f(&[4], vec![4.5, 3.5, 2.5, 1.5]));
}

#[test]
fn split_parts_are_views_or_row_copies() {
    let x = iota(24);
    // Axis 0: views.
    let got = run_graph(
        "split-0",
        vec![node("Split", "s", &["x", "sz"], &["a", "b"], vec![attr_i("axis", 0)])],
        vec![In::Data("x", f(&[3, 8], x.clone())), In::Init("sz", i64s(&[2], vec![1, 2]))],
        &["a", "b"],
    );
    assert_eq!(got, vec![f(&[1, 8], x[..8].to_vec()), f(&[2, 8], x[8..].to_vec())]);
    // Axis 1 in three parts by `num_outputs` (8 = 3 + 3 + 2): row copies.
    let got = run_graph(
        "split-1",
        vec![node("Split", "s", &["x"], &["a", "b", "c"], vec![attr_i("axis", 1), attr_i("num_outputs", 3)])],
        vec![In::Data("x", f(&[3, 8], x.clone()))],
        &["a", "b", "c"],
    );
    let cols =
        |lo: usize, hi: usize| (0..3).flat_map(|r| (lo..hi).map(move |c| (r * 8 + c) as f32)).collect::<Vec<_>>();
    assert_eq!(got, vec![f(&[3, 3], cols(0, 3)), f(&[3, 3], cols(3, 6)), f(&[3, 2], cols(6, 8))]);
}

#[test]
fn constant_pad_with_negative_pads() {
    // [2,3] padded by (1 before, 2 after) on axis 0 and cropped by 1 at the
    // start of axis 1, value 7.
    let x = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let got = one(
        "pad",
        "Pad",
        vec![
            In::Data("x", f(&[2, 3], x)),
            In::Init("p", i64s(&[4], vec![1, -1, 2, 0])),
            In::Init("v", f(&[], vec![7.0])),
        ],
        vec![],
    );
    let want = vec![7.0, 7.0, 2.0, 3.0, 5.0, 6.0, 7.0, 7.0, 7.0, 7.0];
    assert_eq!(got, f(&[5, 2], want));
    // Only the last axis, int64, default value 0.
    let got = one(
        "pad-i64",
        "Pad",
        vec![
            In::Data("x", i64s(&[2, 2], vec![1, 2, 3, 4])),
            In::Init("p", i64s(&[2], vec![2, 1])),
            In::Init("v", i64s(&[], vec![0])),
            In::Init("ax", i64s(&[1], vec![-1])),
        ],
        vec![],
    );
    assert_eq!(got, i64s(&[2, 5], vec![0, 0, 1, 2, 0, 0, 0, 3, 4, 0]));
    // The copying modes, on [2, 3] padded (1, 2) on axis 1.
    let x = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    for (mode, want) in [
        ("edge", vec![1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 6.0]),
        ("reflect", vec![2.0, 1.0, 2.0, 3.0, 2.0, 1.0, 5.0, 4.0, 5.0, 6.0, 5.0, 4.0]),
        ("wrap", vec![3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 6.0, 4.0, 5.0, 6.0, 4.0, 5.0]),
    ] {
        let attr = AttributeProto {
            name: "mode".into(),
            s: mode.as_bytes().to_vec(),
            r#type: AttributeType::String as i32,
            ..Default::default()
        };
        let got = one(
            &format!("pad-{mode}"),
            "Pad",
            vec![In::Data("x", f(&[2, 3], x.clone())), In::Init("p", i64s(&[4], vec![0, 1, 0, 2]))],
            vec![attr],
        );
        assert_eq!(got, f(&[2, 6], want), "{mode}");
    }
    let mirror = AttributeProto {
        name: "mode".into(),
        s: b"mirror".to_vec(),
        r#type: AttributeType::String as i32,
        ..Default::default()
    };
    let m = model(
        vec![node("Pad", "p", &["x", "p"], &["y"], vec![mirror])],
        vec![init_i64("p", &[2], &[1, 1])],
        vec![vi("x", &[3])],
        vec![vi("y", &[5])],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert_eq!(err, "ONNX op `Pad` (node `p`): attribute `mode` is `mirror`; expected constant, edge, reflect or wrap");
}

/// numpy's `pad` of `x` (`shape`), one element at a time: `value` outside
/// in `constant` mode, else the edge, the mirror image or the wrapped
/// element.
fn naive_pad(x: &[f32], shape: &[usize], before: &[usize], after: &[usize], mode: &str, value: f32) -> Vec<f32> {
    let out: Vec<usize> = (0..shape.len()).map(|d| shape[d] + before[d] + after[d]).collect();
    let total: usize = out.iter().product();
    (0..total)
        .map(|i| {
            let (mut rem, mut at) = (i, Some(0usize));
            let mut coords = vec![0usize; out.len()];
            for d in (0..out.len()).rev() {
                coords[d] = rem % out[d];
                rem /= out[d];
            }
            for d in 0..out.len() {
                let (t, n) = (coords[d] as i64 - before[d] as i64, shape[d] as i64);
                let s = match mode {
                    _ if (0..n).contains(&t) => Some(t),
                    "edge" => Some(t.clamp(0, n - 1)),
                    "reflect" => Some(if t < 0 { -t } else { 2 * (n - 1) - t }),
                    "wrap" => Some(t.rem_euclid(n)),
                    _ => None,
                };
                at = at.zip(s).map(|(a, s)| a * shape[d] + s as usize);
            }
            at.map_or(value, |a| x[a])
        })
        .collect()
}

#[test]
fn pad_is_one_thunk_of_any_rank_and_folds_on_constants() {
    let pads_of = |b: &[usize], a: &[usize]| -> Vec<i64> { b.iter().chain(a).map(|&p| p as i64).collect() };
    // Rank 3, reflect on two axes: one `Pad` thunk, no concatenation.
    let (shape, before, after) = ([2usize, 3, 4], [0usize, 1, 2], [0usize, 2, 1]);
    let m = model(
        vec![node("Pad", "p", &["x", "pads"], &["y"], vec![attr_s("mode", "reflect")])],
        vec![init_i64("pads", &[6], &pads_of(&before, &after))],
        vec![vi("x", &[2, 3, 4])],
        vec![vi("y", &[2, 6, 7])],
        18,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let text = &imported.sched_text;
    assert_eq!((count_kind(text, "Pad"), count_kind(text, "Concat")), (1, 0), "{text}");
    let x = iota(24);
    let got = run("pad-reflect-one", &imported, &[("x", &x)], &["y"]);
    assert_eq!(got[0], naive_pad(&x, &shape, &before, &after, "reflect", 0.0));
    // Nine axes, five padded (edge): two thunks, three axes and two.
    let shape = [2usize, 1, 2, 1, 2, 1, 2, 1, 3];
    let (before, after) = ([1usize, 0, 0, 0, 2, 0, 1, 0, 0], [0usize, 0, 1, 0, 0, 0, 1, 0, 2]);
    let out: Vec<i64> = (0..9).map(|d| (shape[d] + before[d] + after[d]) as i64).collect();
    let m = model(
        vec![node("Pad", "p", &["x", "pads"], &["y"], vec![attr_s("mode", "edge")])],
        vec![init_i64("pads", &[18], &pads_of(&before, &after))],
        vec![vi("x", &shape.map(|d| d as i64))],
        vec![vi("y", &out)],
        18,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let text = &imported.sched_text;
    assert_eq!((count_kind(text, "Pad"), count_kind(text, "Concat")), (2, 0), "{text}");
    let x = iota(48);
    let got = run("pad-edge-rank9", &imported, &[("x", &x)], &["y"]);
    assert_eq!(got[0], naive_pad(&x, &shape, &before, &after, "edge", 0.0));
    // A value other than zero bits (here -0.0) is a one-element param; a
    // pad of a constant folds (no thunk for `w`'s pad).
    let m = model(
        vec![
            node("Pad", "p", &["x", "pads", "v"], &["y"], vec![]),
            node("Pad", "pw", &["w", "pads"], &["wp"], vec![attr_s("mode", "wrap")]),
            node("Add", "add", &["y", "wp"], &["z"], vec![]),
        ],
        vec![init_i64("pads", &[4], &[1, 0, 0, 2]), init_raw("v", &[], &[-0.0]), init_raw("w", &[2, 3], &iota(6))],
        vec![vi("x", &[2, 3])],
        vec![vi("z", &[3, 5])],
        18,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let text = &imported.sched_text;
    assert_eq!(count_kind(text, "Pad"), 1, "{text}");
    assert!(text.contains("param   y.value: f32[] @"), "{text}");
    assert!(text.contains("Pad { src: x, value: y.value, dst: "), "{text}");
    assert!(text.contains("dims: [2, 3], before: [1, 0], after: [0, 2], mode: constant"), "{text}");
    let x: Vec<f32> = iota(6).iter().map(|v| v + 10.0).collect();
    let got = run("pad-value-fold", &imported, &[("x", &x)], &["z"]);
    let (y, wp) = (
        naive_pad(&x, &[2, 3], &[1, 0], &[0, 2], "constant", -0.0),
        naive_pad(&iota(6), &[2, 3], &[1, 0], &[0, 2], "wrap", 0.0),
    );
    let want: Vec<f32> = y.iter().zip(&wp).map(|(a, b)| a + b).collect();
    assert_eq!(got[0], want);
}

#[test]
fn one_constant_index_on_the_outer_axis_is_a_view() {
    // A stacked projection's query/key/value: `x[k]` of `[3, 2, 4]` data
    // (and `x[-1]`, and the index as `[1]`) is a view, no thunk.
    let x = iota(24);
    for (index, shape, k) in [(1, vec![], 1usize), (-1, vec![], 2), (0, vec![1], 0)] {
        let nodes = vec![
            node("Relu", "r", &["x"], &["rx"], vec![]),
            node("Gather", "g", &["rx", "i"], &["y"], vec![]),
            node("Neg", "n", &["y"], &["z"], vec![]),
        ];
        let dims: Vec<i64> = shape.iter().map(|&d: &usize| d as i64).collect();
        let out: Vec<i64> = dims.iter().copied().chain([2, 4]).collect();
        let m = model(nodes, vec![init_i64("i", &dims, &[index])], vec![vi("x", &[3, 2, 4])], vec![vi("z", &out)], 13);
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
        assert_eq!(count_kind(&imported.sched_text, "Gather"), 0, "{}", imported.sched_text);
        assert_eq!(count_kind(&imported.sched_text, "GatherAxis"), 0, "{}", imported.sched_text);
        let got = run(&format!("gather-view{k}"), &imported, &[("x", &x)], &["z"]);
        let want: Vec<f32> = x[k * 8..k * 8 + 8].iter().map(|v| -v.max(0.0)).collect();
        assert_eq!(got[0], want, "index {index}");
    }
}

#[test]
fn gather_of_data_rows_and_axes() {
    // Embedding lookup: int64 ids (one negative) into an f32 table.
    let table = iota(5 * 3);
    let got = one(
        "gather-emb",
        "Gather",
        vec![In::Init("t", f(&[5, 3], table.clone())), In::Data("ids", i64s(&[2, 2], vec![4, 0, -1, 2]))],
        vec![],
    );
    let want: Vec<f32> = [4usize, 0, 4, 2].iter().flat_map(|&r| table[r * 3..r * 3 + 3].to_vec()).collect();
    assert_eq!(got, f(&[2, 2, 3], want));
    // int32 ids.
    let got = one(
        "gather-i32",
        "Gather",
        vec![In::Init("t", f(&[5, 3], table.clone())), In::Data("ids", i32s(&[1], vec![3]))],
        vec![],
    );
    assert_eq!(got, f(&[1, 3], table[9..12].to_vec()));
    // Axis 1 of data with constant indices: `GatherAxis`; a scalar index
    // drops the axis.
    let x = iota(24);
    let got = one(
        "gather-axis",
        "Gather",
        vec![In::Data("x", f(&[2, 4, 3], x.clone())), In::Init("i", i64s(&[], vec![2]))],
        vec![attr_i("axis", 1)],
    );
    assert_eq!(got, f(&[2, 3], vec![6.0, 7.0, 8.0, 18.0, 19.0, 20.0]));
    // Bool data on axis 0.
    let got = one(
        "gather-bool",
        "Gather",
        vec![
            In::Data("x", bools(&[3, 2], vec![true, false, false, false, true, true])),
            In::Init("i", i64s(&[2], vec![2, 0])),
        ],
        vec![],
    );
    assert_eq!(got, bools(&[2, 2], vec![true, true, true, false]));
}

#[test]
fn shape_arithmetic_folds_to_constants() {
    // torch's Expand idiom: Where(Equal(shape, -1), ones, shape) feeding
    // Expand, with ConstantOfShape, Range and Concat on the way. Nothing
    // of it runs: one Transpose (the broadcast) is the whole schedule.
    let nodes = vec![
        node("Shape", "shape", &["x"], &["xs"], vec![]),
        node(
            "ConstantOfShape",
            "ones",
            &["len"],
            &["o"],
            vec![AttributeProto {
                name: "value".into(),
                t: Some(i64s(&[1], vec![1]).proto("v")),
                r#type: AttributeType::Tensor as i32,
                ..Default::default()
            }],
        ),
        node("Range", "range", &["r0", "r1", "r2"], &["rng"], vec![]),
        node("Concat", "cat", &["rng", "xs"], &["target"], vec![attr_i("axis", 0)]),
        node("Equal", "eq", &["target", "neg"], &["is_neg"], vec![]),
        node("Where", "w", &["is_neg", "o", "target"], &["shape"], vec![]),
        node("Expand", "expand", &["x", "shape"], &["y"], vec![]),
    ];
    let inputs = vec![
        In::Data("x", f(&[1, 3], vec![1.0, 2.0, 3.0])),
        In::Init("len", i64s(&[1], vec![3])),
        In::Init("r0", i64s(&[], vec![2])),
        In::Init("r1", i64s(&[], vec![3])),
        In::Init("r2", i64s(&[], vec![1])),
        In::Init("neg", i64s(&[], vec![-1])),
    ];
    let got = run_graph("fold", nodes, inputs, &["y"]);
    // target = [2, 1, 3]: expand [1,3] to [2,1,3].
    assert_eq!(got[0], f(&[2, 1, 3], vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]));
}

#[test]
fn top_k_on_last_and_middle_axes() {
    let x = vec![3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0];
    let got = run_graph(
        "topk-last",
        vec![node("TopK", "k", &["x", "k"], &["v", "i"], vec![])],
        vec![In::Data("x", f(&[2, 4], x.clone())), In::Init("k", i64s(&[1], vec![2]))],
        &["v", "i"],
    );
    assert_eq!(got, vec![f(&[2, 2], vec![4.0, 3.0, 9.0, 6.0]), i64s(&[2, 2], vec![2, 0, 1, 3])]);
    // Smallest along axis 0 of [4, 2]: transposed in and out.
    let got = run_graph(
        "topk-axis0",
        vec![node("TopK", "k", &["x", "k"], &["v", "i"], vec![attr_i("axis", 0), attr_i("largest", 0)])],
        vec![In::Data("x", f(&[4, 2], x)), In::Init("k", i64s(&[1], vec![3]))],
        &["v", "i"],
    );
    // Columns: [3, 4, 5, 2] and [1, 1.5, 9, 6].
    assert_eq!(got, vec![f(&[3, 2], vec![2.0, 1.0, 3.0, 1.5, 4.0, 6.0]), i64s(&[3, 2], vec![3, 0, 0, 1, 1, 3])]);
}

#[test]
fn cum_sum_with_exclusive_and_reverse() {
    let x = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    for (exclusive, reverse, want) in [
        (0, 0, vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]),
        (1, 0, vec![0.0, 0.0, 0.0, 1.0, 2.0, 3.0]),
        (0, 1, vec![5.0, 7.0, 9.0, 4.0, 5.0, 6.0]),
        (1, 1, vec![4.0, 5.0, 6.0, 0.0, 0.0, 0.0]),
    ] {
        let got = one(
            &format!("cumsum-{exclusive}{reverse}"),
            "CumSum",
            vec![In::Data("x", f(&[2, 3], x.clone())), In::Init("a", i64s(&[], vec![0]))],
            vec![attr_i("exclusive", exclusive), attr_i("reverse", reverse)],
        );
        assert_eq!(got, f(&[2, 3], want), "exclusive {exclusive} reverse {reverse}");
    }
}

#[test]
fn einsum_attention_forms() {
    let eq = |s: &str| {
        vec![AttributeProto {
            name: "equation".into(),
            s: s.as_bytes().to_vec(),
            r#type: AttributeType::String as i32,
            ..Default::default()
        }]
    };
    let (b, h, q, k, d) = (1, 2, 3, 5, 4);
    let qv = values(b * h * q * d, 1);
    let kv = values(b * h * k * d, 2);
    let got = one(
        "einsum-qk",
        "Einsum",
        vec![In::Data("q", f(&[b, h, q, d], qv.clone())), In::Data("k", f(&[b, h, k, d], kv.clone()))],
        eq("bhqd,bhkd->bhqk"),
    );
    let mut want = Vec::new();
    for hh in 0..h {
        let qm = &qv[hh * q * d..(hh + 1) * q * d];
        let km = transpose2(&kv[hh * k * d..(hh + 1) * k * d], k, d);
        want.extend(matmul(qm, &km, q, d, k));
    }
    // The product runs in BLAS (its own summation order): 1e-5 covers a
    // 4-term dot of values below 1.
    let T::F32(shape, v) = got else { panic!("f32") };
    assert_eq!(shape, vec![b, h, q, k]);
    assert_close(&v, &want, 1e-5, "bhqd,bhkd->bhqk");
    // A plain product, a transpose and a row sum.
    let a = values(6, 3);
    let c = values(12, 4);
    let T::F32(_, v) = one(
        "einsum-mm",
        "Einsum",
        vec![In::Data("a", f(&[2, 3], a.clone())), In::Data("c", f(&[3, 4], c.clone()))],
        eq("ij,jk->ik"),
    ) else {
        panic!()
    };
    assert_close(&v, &matmul(&a, &c, 2, 3, 4), 1e-5, "ij,jk->ik");
    let got = one("einsum-t", "Einsum", vec![In::Data("a", f(&[2, 3], a.clone()))], eq("ij->ji"));
    assert_eq!(got, f(&[3, 2], transpose2(&a, 2, 3)));
    let T::F32(_, v) = one("einsum-sum", "Einsum", vec![In::Data("a", f(&[2, 3], a.clone()))], eq("ij->i")) else {
        panic!()
    };
    assert_close(&v, &[a[0] + a[1] + a[2], a[3] + a[4] + a[5]], 1e-6, "ij->i");
    // Output rows and columns swapped: the product is transposed after.
    let T::F32(_, v) = one(
        "einsum-ki",
        "Einsum",
        vec![In::Data("a", f(&[2, 3], a.clone())), In::Data("c", f(&[3, 4], c.clone()))],
        eq("ij,jk->ki"),
    ) else {
        panic!()
    };
    assert_close(&v, &transpose2(&matmul(&a, &c, 2, 3, 4), 2, 4), 1e-5, "ij,jk->ki");
}

#[test]
fn const_bindings_replace_graph_inputs() {
    // Reshape whose target shape is a graph input, bound with `consts`.
    let m = model(
        vec![node("Reshape", "r", &["x", "shape"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[2, 3]), vi_typed("shape", data_type::INT64, vec![DimensionValue::DimValue(2)])],
        vec![vi("y", &[3, 2])],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("input `shape` must be an integer constant known at import time"), "{err}");
    let mut opts = ImportOptions::new(WEIGHTS);
    let shape = rlx_onnx::tensor::ConstTensor { shape: vec![2], data: rlx_onnx::tensor::ConstData::I64(vec![3, -1]) };
    opts.consts.push(("shape".to_string(), shape.clone()));
    let imported = import_model(&m, &opts).unwrap();
    assert!(!imported.sched_text.contains("input   shape"), "{}", imported.sched_text);
    // A binding of the wrong type or an unknown name is refused.
    let mut bad = ImportOptions::new(WEIGHTS);
    bad.consts.push((
        "shape".to_string(),
        rlx_onnx::tensor::ConstTensor { shape: vec![2], data: rlx_onnx::tensor::ConstData::F32(vec![3.0, 2.0]) },
    ));
    let err = import_model(&m, &bad).unwrap_err().to_string();
    assert_eq!(err, "tensor `shape`: --const: the input is INT64, the value given is f32");
    let mut unknown = ImportOptions::new(WEIGHTS);
    unknown.consts.push(("nope".to_string(), shape));
    let err = import_model(&m, &unknown).unwrap_err().to_string();
    assert_eq!(err, "tensor `nope`: --const: no graph input has this name; inputs: x, shape");
}

#[test]
fn gemm_alpha_beta_softmax_axis_layer_norm_axes_and_scattered_reductions() {
    let a = values(6, 5);
    let b = values(12, 6);
    let c = values(4, 7);
    let got = one(
        "gemm-ab",
        "Gemm",
        vec![
            In::Data("a", f(&[2, 3], a.clone())),
            In::Data("b", f(&[3, 4], b.clone())),
            In::Init("c", f(&[4], c.clone())),
        ],
        vec![attr_f("alpha", 0.5), attr_f("beta", -2.0)],
    );
    let p = matmul(&a, &b, 2, 3, 4);
    let want: Vec<f32> = (0..8).map(|i| 0.5 * p[i] + -2.0 * c[i % 4]).collect();
    let T::F32(_, v) = got else { panic!() };
    // One rounding more or less than a fused alpha: 1e-6 on values below 2.
    assert_close(&v, &want, 1e-6, "alpha 0.5, beta -2");

    // Softmax over axis 1 of [2, 3, 2]: moved last and back.
    let x = values(12, 8);
    let T::F32(_, v) =
        one("softmax-axis1", "Softmax", vec![In::Data("x", f(&[2, 3, 2], x.clone()))], vec![attr_i("axis", 1)])
    else {
        panic!()
    };
    let mut want = vec![0.0; 12];
    for o in 0..2 {
        for i in 0..2 {
            let idx: Vec<usize> = (0..3).map(|j| o * 6 + j * 2 + i).collect();
            let m = idx.iter().map(|&k| x[k]).fold(f32::NEG_INFINITY, f32::max);
            let s: f32 = idx.iter().map(|&k| (x[k] - m).exp()).sum();
            for &k in &idx {
                want[k] = (x[k] - m).exp() / s;
            }
        }
    }
    // The kernel's vector exp: relative error below 2e-7 per term.
    assert_close(&v, &want, 1e-6, "softmax axis 1");

    // LayerNormalization over the last two axes of [2, 3, 4].
    let x = values(24, 9);
    let g = values(12, 10);
    let T::F32(_, v) = one(
        "ln-axes",
        "LayerNormalization",
        vec![In::Data("x", f(&[2, 3, 4], x.clone())), In::Init("g", f(&[3, 4], g.clone()))],
        vec![attr_i("axis", 1), attr_f("epsilon", 1e-5)],
    ) else {
        panic!()
    };
    let mut want = Vec::new();
    for r in 0..2 {
        let row = &x[r * 12..(r + 1) * 12];
        let mean = row.iter().sum::<f32>() / 12.0;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 12.0;
        want.extend(row.iter().zip(&g).map(|(v, g)| (v - mean) / (var + 1e-5).sqrt() * g));
    }
    assert_close(&v, &want, 1e-5, "layer norm over axes 1..");

    // ReduceSum over axes 0 and 2 of [2, 3, 2] (not one range).
    let T::F32(shape, v) = one(
        "reduce-scattered",
        "ReduceSum",
        vec![In::Data("x", f(&[2, 3, 2], x[..12].to_vec())), In::Init("ax", i64s(&[2], vec![0, 2]))],
        vec![attr_i("keepdims", 0)],
    ) else {
        panic!()
    };
    assert_eq!(shape, vec![3]);
    let want: Vec<f32> =
        (0..3).map(|j| [0, 1].iter().flat_map(|&o| [0, 1].map(|i| x[o * 6 + j * 2 + i])).sum()).collect();
    assert_close(&v, &want, 1e-6, "reduce over axes 0 and 2");
    // An empty axis reduces to the identity: 0 for a sum.
    let got = one(
        "reduce-empty",
        "ReduceSum",
        vec![In::Data("x", f(&[2, 0, 3], vec![])), In::Init("ax", i64s(&[1], vec![1]))],
        vec![],
    );
    assert_eq!(got, f(&[2, 1, 3], vec![0.0; 6]));
}

#[test]
fn layer_norm_mean_and_inv_std_dev_outputs() {
    let x = values(12, 11);
    let g = values(4, 12);
    let got = run_graph(
        "ln-stats",
        vec![node("LayerNormalization", "ln", &["x", "g"], &["y", "mean", "inv"], vec![attr_i("axis", -1)])],
        vec![In::Data("x", f(&[3, 4], x.clone())), In::Init("g", f(&[4], g))],
        &["mean", "inv"],
    );
    let (mut means, mut invs) = (Vec::new(), Vec::new());
    for r in 0..3 {
        let row = &x[r * 4..(r + 1) * 4];
        let m = row.iter().sum::<f32>() / 4.0;
        let var = row.iter().map(|v| (v - m) * (v - m)).sum::<f32>() / 4.0;
        means.push(m);
        invs.push(1.0 / (var + 1e-5).sqrt());
    }
    let (T::F32(ms, mv), T::F32(is, iv)) = (&got[0], &got[1]) else { panic!("f32 outputs") };
    assert_eq!((ms.as_slice(), is.as_slice()), (&[3, 1][..], &[3, 1][..]));
    // Sums of 4 terms in another order: a few ulp of values near 1.
    assert_close(mv, &means, 1e-6, "mean");
    assert_close(iv, &invs, 1e-5, "inv std dev");
}

/// Naive N-d pooling over `[n*c, spatial...]`: window positions outside the
/// input are skipped (max) or not counted (mean), or counted inside the
/// padded bounds with `count_include_pad`.
fn pool_ref(
    x: &[f32],
    planes: usize,
    dims: &[usize],
    kernel: &[usize],
    strides: &[usize],
    dil: &[usize],
    pads: &[(usize, usize)],
    outs: &[usize],
    max: bool,
    include_pad: bool,
) -> Vec<f32> {
    let k = dims.len();
    let plane: usize = dims.iter().product();
    let out_plane: usize = outs.iter().product();
    let taps: usize = kernel.iter().product();
    let mut result = Vec::new();
    for p in 0..planes {
        for o in 0..out_plane {
            let mut oc = vec![0; k];
            let mut r = o;
            for d in (0..k).rev() {
                oc[d] = r % outs[d];
                r /= outs[d];
            }
            let (mut acc, mut count) = (if max { f32::NEG_INFINITY } else { 0.0 }, 0usize);
            for t in 0..taps {
                let mut r = t;
                let mut idx = 0usize;
                let (mut inside, mut in_padded) = (true, true);
                for d in (0..k).rev() {
                    let j = r % kernel[d];
                    r /= kernel[d];
                    let pos = (oc[d] * strides[d] + j * dil[d]) as i64 - pads[d].0 as i64;
                    inside &= pos >= 0 && (pos as usize) < dims[d];
                    in_padded &= pos < (dims[d] + pads[d].1) as i64;
                    if inside {
                        idx += pos as usize * dims[d + 1..].iter().product::<usize>();
                    }
                }
                if inside {
                    let v = x[p * plane + idx];
                    acc = if max { acc.max(v) } else { acc + v };
                }
                if inside || (include_pad && in_padded) {
                    count += 1;
                }
            }
            result.push(if max { acc } else { acc / count as f32 });
        }
    }
    result
}

#[test]
fn pooling_in_3d_dilated_and_with_asymmetric_counted_padding() {
    // 3-D max and average with padding and ceil mode: [1, 2, 5, 4, 6].
    let dims = [5usize, 4, 6];
    let x = values(2 * 5 * 4 * 6, 21);
    let xs = [1, 2, 5, 4, 6];
    for (op, max) in [("MaxPool", true), ("AveragePool", false)] {
        let attrs = vec![
            attr_ints("kernel_shape", &[2, 3, 2]),
            attr_ints("strides", &[2, 1, 2]),
            attr_ints("pads", &[1, 0, 1, 0, 1, 1]),
            attr_i("ceil_mode", 1),
        ];
        let T::F32(shape, v) = one(&format!("pool3d-{op}"), op, vec![In::Data("x", f(&xs, x.clone()))], attrs) else {
            panic!()
        };
        // Output sizes with ceil mode: (5+1-2)/2 -> 3, (4+1-3)/1+1 -> 3, (6+2-2)/2 -> 4.
        assert_eq!(shape, vec![1, 2, 3, 3, 4], "{op}");
        let want = pool_ref(
            &x,
            2,
            &dims,
            &[2, 3, 2],
            &[2, 1, 2],
            &[1, 1, 1],
            &[(1, 0), (0, 1), (1, 1)],
            &[3, 3, 4],
            max,
            false,
        );
        // Max is exact; the mean sums taps in another order (few ulp).
        assert_close(&v, &want, if max { 0.0 } else { 1e-6 }, op);
    }
    // 2-D dilated max, and average with count_include_pad over asymmetric
    // pads (which the single-kernel path cannot count).
    let x = values(3 * 7 * 6, 22);
    let xs = [1, 3, 7, 6];
    let T::F32(_, v) = one(
        "pool-dilated",
        "MaxPool",
        vec![In::Data("x", f(&xs, x.clone()))],
        vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("dilations", &[2, 3])],
    ) else {
        panic!()
    };
    assert_eq!(v, pool_ref(&x, 3, &[7, 6], &[2, 2], &[1, 1], &[2, 3], &[(0, 0), (0, 0)], &[5, 3], true, false));
    let T::F32(_, v) = one(
        "pool-counted",
        "AveragePool",
        vec![In::Data("x", f(&xs, x.clone()))],
        vec![attr_ints("kernel_shape", &[3, 2]), attr_ints("pads", &[0, 1, 2, 0]), attr_i("count_include_pad", 1)],
    ) else {
        panic!()
    };
    let want = pool_ref(&x, 3, &[7, 6], &[3, 2], &[1, 1], &[1, 1], &[(0, 2), (1, 0)], &[7, 6], false, true);
    assert_close(&v, &want, 1e-6, "average, padding counted");
}

#[test]
fn batch_norm_training_mode_uses_batch_statistics() {
    let (n, c, hw) = (2usize, 3usize, 4usize);
    let x = values(n * c * hw, 31);
    let scale = values(c, 32);
    let bias = values(c, 33);
    let mean0 = values(c, 34);
    let var0: Vec<f32> = values(c, 35).iter().map(|v| v.abs() + 0.5).collect();
    let got = run_graph(
        "bn-train",
        vec![node(
            "BatchNormalization",
            "bn",
            &["x", "s", "b", "m", "v"],
            &["y", "rm", "rv"],
            vec![attr_i("training_mode", 1), attr_f("momentum", 0.8), attr_f("epsilon", 1e-3)],
        )],
        vec![
            In::Data("x", f(&[n, c, 2, 2], x.clone())),
            In::Init("s", f(&[c], scale.clone())),
            In::Init("b", f(&[c], bias.clone())),
            In::Init("m", f(&[c], mean0.clone())),
            In::Init("v", f(&[c], var0.clone())),
        ],
        &["y", "rm", "rv"],
    );
    let mut y = vec![0.0; n * c * hw];
    let (mut rm, mut rv) = (Vec::new(), Vec::new());
    for ch in 0..c {
        let idx: Vec<usize> = (0..n).flat_map(|b| (0..hw).map(move |i| (b * c + ch) * hw + i)).collect();
        let m = idx.iter().map(|&i| x[i]).sum::<f32>() / idx.len() as f32;
        let v = idx.iter().map(|&i| (x[i] - m) * (x[i] - m)).sum::<f32>() / idx.len() as f32;
        for &i in &idx {
            y[i] = (x[i] - m) / (v + 1e-3).sqrt() * scale[ch] + bias[ch];
        }
        rm.push(mean0[ch] * 0.8 + m * 0.2);
        rv.push(var0[ch] * 0.8 + v * 0.2);
    }
    let (T::F32(_, gy), T::F32(_, grm), T::F32(_, grv)) = (&got[0], &got[1], &got[2]) else { panic!("f32") };
    // Means and variances of 8 values summed in another order: 1e-5.
    assert_close(gy, &y, 1e-5, "y");
    assert_close(grm, &rm, 1e-6, "running mean");
    assert_close(grv, &rv, 1e-6, "running var");
}

#[test]
fn max_pool_indices_name_the_first_maximum() {
    // Ties included (values rounded to a few levels), padding and stride.
    let x: Vec<f32> = values(2 * 5 * 6, 41).iter().map(|v| (v * 3.0).round()).collect();
    let got = run_graph(
        "maxpool-indices",
        vec![node(
            "MaxPool",
            "p",
            &["x"],
            &["y", "i"],
            vec![attr_ints("kernel_shape", &[2, 3]), attr_ints("strides", &[2, 2]), attr_ints("pads", &[1, 0, 0, 1])],
        )],
        vec![In::Data("x", f(&[1, 2, 5, 6], x.clone()))],
        &["y", "i"],
    );
    // Output 3 x 3 per plane; the first maximum in window (row-major) order.
    let (mut want_v, mut want_i) = (Vec::new(), Vec::new());
    for c in 0..2 {
        for oh in 0..3 {
            for ow in 0..3 {
                let mut best: Option<(f32, i64)> = None;
                for kh in 0..2 {
                    for kw in 0..3 {
                        let (h, w) = ((oh * 2 + kh) as i64 - 1, (ow * 2 + kw) as i64);
                        if !(0..5).contains(&h) || !(0..6).contains(&w) {
                            continue;
                        }
                        let idx = (c * 5 + h as usize) * 6 + w as usize;
                        if best.is_none_or(|(b, _)| x[idx] > b) {
                            best = Some((x[idx], idx as i64));
                        }
                    }
                }
                let (v, i) = best.expect("every window sees the input");
                want_v.push(v);
                want_i.push(i);
            }
        }
    }
    assert_eq!(got, vec![f(&[1, 2, 3, 3], want_v.clone()), i64s(&[1, 2, 3, 3], want_i.clone())]);
    // Column-major indices count the spatial axes the other way round.
    let got = run_graph(
        "maxpool-indices-cm",
        vec![node(
            "MaxPool",
            "p",
            &["x"],
            &["y", "i"],
            vec![
                attr_ints("kernel_shape", &[2, 3]),
                attr_ints("strides", &[2, 2]),
                attr_ints("pads", &[1, 0, 0, 1]),
                attr_i("storage_order", 1),
            ],
        )],
        vec![In::Data("x", f(&[1, 2, 5, 6], x))],
        &["y", "i"],
    );
    let column_major: Vec<i64> = want_i.iter().map(|&i| (i / 30) * 30 + (i % 6) * 5 + (i % 30) / 6).collect();
    assert_eq!(got, vec![f(&[1, 2, 3, 3], want_v), i64s(&[1, 2, 3, 3], column_major)]);
}

#[test]
fn is_nan_marks_exactly_the_nans() {
    let x = vec![f32::NAN, 0.0, f32::INFINITY, -f32::NAN, -1.5];
    let got = one("isnan", "IsNaN", vec![In::Data("x", f(&[5], x))], vec![]);
    assert_eq!(got, bools(&[5], vec![true, false, false, true, false]));
}

#[test]
fn absurd_constants_are_errors_not_allocations() {
    let m = model(
        vec![node("ConstantOfShape", "c", &["s"], &["y"], vec![])],
        vec![init_i64("s", &[2], &[1 << 20, 1 << 20])],
        vec![],
        vec![ValueInfoProto { name: "y".into(), ..Default::default() }],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "ONNX op `ConstantOfShape` (node `c`): the f32 constant it computes, of shape [1048576, 1048576], \
             is larger than the fold limit (4194304 elements, 33554432 bytes)"
        ),
        "{err}"
    );
    let m = model(
        vec![node("Range", "r", &["a", "b", "d"], &["y"], vec![])],
        vec![init_i64("a", &[], &[0]), init_i64("b", &[], &[i64::MAX]), init_i64("d", &[], &[1])],
        vec![],
        vec![ValueInfoProto { name: "y".into(), ..Default::default() }],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("is larger than the fold limit"), "{err}");
}
