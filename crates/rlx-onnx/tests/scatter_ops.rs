//! `GatherElements`, `GatherND`, `ScatterElements` (and the deprecated
//! `Scatter`) and `ScatterND` over f32, i64, i32 and bool data with i64 and
//! i32 indices: one-node graphs imported, validated, run in the
//! interpreter and compared exactly with naive computations written here
//! (sequential updates, as the kernels apply them). Also the run-time
//! policy for out-of-range indices, in-place scatters and the refusals.

use crate::common::*;
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;

/// An element type of these tests, with its ONNX type and bytes.
trait Elem: Copy + PartialEq + std::fmt::Debug {
    const ONNX: i32;
    fn bytes(v: &[Self]) -> Vec<u8>;
    fn from_bytes(b: &[u8]) -> Vec<Self>;
}

macro_rules! num_elem {
    ($t:ty, $onnx:expr) => {
        impl Elem for $t {
            const ONNX: i32 = $onnx;
            fn bytes(v: &[Self]) -> Vec<u8> {
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
            fn from_bytes(b: &[u8]) -> Vec<Self> {
                b.chunks_exact(size_of::<$t>()).map(|c| <$t>::from_le_bytes(c.try_into().unwrap())).collect()
            }
        }
    };
}

num_elem!(f32, data_type::FLOAT);
num_elem!(i64, data_type::INT64);
num_elem!(i32, data_type::INT32);

impl Elem for bool {
    const ONNX: i32 = data_type::BOOL;
    fn bytes(v: &[Self]) -> Vec<u8> {
        v.iter().map(|&x| u8::from(x)).collect()
    }
    fn from_bytes(b: &[u8]) -> Vec<Self> {
        b.iter().map(|&x| x != 0).collect()
    }
}

/// A graph input: name, ONNX type, shape, bytes.
type Input = (&'static str, i32, Vec<usize>, Vec<u8>);

fn input<T: Elem>(name: &'static str, shape: &[usize], v: &[T]) -> Input {
    (name, T::ONNX, shape.to_vec(), T::bytes(v))
}

/// Imports `nodes` (inputs fed at run time, output `out`) at `opset`.
fn import(nodes: Vec<NodeProto>, inputs: &[Input], opset: i64) -> Result<rlx_onnx::Imported, rlx_onnx::ImportError> {
    let infos = inputs
        .iter()
        .map(|(n, t, s, _)| vi_typed(n, *t, s.iter().map(|&d| DimensionValue::DimValue(d as i64)).collect()))
        .collect();
    let out = vec![ValueInfoProto { name: "out".to_string(), ..Default::default() }];
    import_model(&model(nodes, vec![], infos, out, opset), &ImportOptions::new(WEIGHTS))
}

/// One node `op` over the inputs, run; output `out` as `T`.
fn one<T: Elem>(test: &str, op: &str, inputs: &[Input], attrs: Vec<AttributeProto>, opset: i64) -> Vec<T> {
    let names: Vec<&str> = inputs.iter().map(|i| i.0).collect();
    let imported = import(vec![node(op, "n", &names, &["out"], attrs)], inputs, opset)
        .unwrap_or_else(|e| panic!("{test}: import: {e}"));
    let feeds: Vec<(&str, Vec<u8>)> = inputs.iter().map(|i| (i.0, i.3.clone())).collect();
    T::from_bytes(&run_raw(test, &imported, &feeds, &["out"]).remove(0))
}

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

fn coords(mut at: usize, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = at % dims[d];
        at /= dims[d];
    }
    c
}

fn flat(c: &[usize], dims: &[usize]) -> usize {
    c.iter().zip(dims).fold(0, |acc, (&x, &d)| acc * d + x)
}

/// `i` on an axis of `n`, negative from the end.
fn wrap(i: i64, n: usize) -> usize {
    if i < 0 {
        (i + n as i64) as usize
    } else {
        i as usize
    }
}

/// Where element `at` of `index_dims` lands in `data_dims` for the
/// elements ops.
fn elements_target(at: usize, i: i64, data: &[usize], index_dims: &[usize], axis: usize) -> usize {
    let mut c = coords(at, index_dims);
    c[axis] = wrap(i, data[axis]);
    flat(&c, data)
}

#[test]
fn gather_elements_over_types_axes_and_negative_indices() {
    let dims = [3usize, 4];
    let data: Vec<f32> = (0..12).map(|i| i as f32 * 1.5 - 4.0).collect();
    // (the axis attribute, the axis it names, index shape, indices)
    for (axis, a, idx_dims, idx) in [
        (1i64, 1usize, vec![3usize, 2], vec![0i64, -1, 3, 2, -4, 1]),
        (0, 0, vec![2, 4], vec![2, -3, 0, 1, -1, 2, 1, 0]),
        (-1, 1, vec![1, 5], vec![3, 3, -2, 0, 1]),
    ] {
        let want: Vec<f32> =
            idx.iter().enumerate().map(|(at, &i)| data[elements_target(at, i, &dims, &idx_dims, a)]).collect();
        let attrs = vec![attr_i("axis", axis)];
        let got: Vec<f32> = one(
            "ge-f32",
            "GatherElements",
            &[input("d", &dims, &data), input("i", &idx_dims, &idx)],
            attrs.clone(),
            13,
        );
        assert_eq!(got, want, "axis {axis}");
        // The same positions over i32 and bool data, with i32 indices.
        let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
        let d32: Vec<i32> = (0..12).map(|i| i * 7 - 30).collect();
        let got: Vec<i32> = one(
            "ge-i32",
            "GatherElements",
            &[input("d", &dims, &d32), input("i", &idx_dims, &idx32)],
            attrs.clone(),
            13,
        );
        let want32: Vec<i32> =
            idx.iter().enumerate().map(|(at, &i)| d32[elements_target(at, i, &dims, &idx_dims, a)]).collect();
        assert_eq!(got, want32);
        let db: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
        let got: Vec<bool> =
            one("ge-bool", "GatherElements", &[input("d", &dims, &db), input("i", &idx_dims, &idx)], attrs, 13);
        let wantb: Vec<bool> =
            idx.iter().enumerate().map(|(at, &i)| db[elements_target(at, i, &dims, &idx_dims, a)]).collect();
        assert_eq!(got, wantb);
    }
}

#[test]
fn out_of_range_run_time_indices_gather_zeros_and_skip_scatters() {
    let data = [1.0f32, 2.0, 3.0];
    let idx = [3i64, -4, 1];
    let got: Vec<f32> = one("ge-oob", "GatherElements", &[input("d", &[3], &data), input("i", &[3], &idx)], vec![], 13);
    assert_eq!(got, [0.0, 0.0, 2.0]);
    let got: Vec<f32> = one(
        "se-oob",
        "ScatterElements",
        &[input("d", &[3], &data), input("i", &[3], &idx), input("u", &[3], &[9.0f32, 9.0, 7.0])],
        vec![],
        13,
    );
    assert_eq!(got, [1.0, 7.0, 3.0]);
    let got: Vec<i64> = one(
        "gnd-oob",
        "GatherND",
        &[input("d", &[2, 2], &[1i64, 2, 3, 4]), input("i", &[2, 1], &[5i64, -1])],
        vec![],
        13,
    );
    assert_eq!(got, [0, 0, 3, 4]);
}

/// GatherND by the spec's definition, `batch_dims` included.
fn gather_nd_naive<T: Copy + Default>(data: &[T], d: &[usize], idx: &[i64], ix: &[usize], b: usize) -> Vec<T> {
    let (q, k) = (ix.len(), ix[ix.len() - 1]);
    let slice: usize = d[b + k..].iter().product();
    let lookups: usize = ix[b..q - 1].iter().product();
    let batch: usize = d[..b].iter().product();
    let block: usize = d[b..b + k].iter().product();
    let mut out = Vec::new();
    for bi in 0..batch {
        for l in 0..lookups {
            let t = &idx[(bi * lookups + l) * k..][..k];
            let c: Vec<usize> = t.iter().zip(&d[b..b + k]).map(|(&i, &n)| wrap(i, n)).collect();
            let at = (bi * block + flat(&c, &d[b..b + k])) * slice;
            out.extend_from_slice(&data[at..at + slice]);
        }
    }
    out
}

#[test]
fn gather_nd_with_batch_dims() {
    let d = [2usize, 3, 4];
    let data: Vec<f32> = (0..24).map(|i| i as f32 - 0.5).collect();
    for (b, ix, idx) in [
        (0usize, vec![2usize, 2], vec![1i64, -1, 0, 2]),
        (0, vec![3, 3], vec![1, 2, 3, 0, 0, -4, -1, -3, 1]),
        (1, vec![2, 2, 1], vec![2, -1, 0, 1]),
        (1, vec![2, 2], vec![0, 3, 2, -2]),
        (0, vec![1], vec![-2]),
    ] {
        let want = gather_nd_naive(&data, &d, &idx, &ix, b);
        let got: Vec<f32> = one(
            "gnd",
            "GatherND",
            &[input("d", &d, &data), input("i", &ix, &idx)],
            vec![attr_i("batch_dims", b as i64)],
            13,
        );
        assert_eq!(got, want, "batch_dims {b}, indices {ix:?}");
        let di: Vec<i64> = (0..24).map(|i| i * 1000 - 7).collect();
        let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
        let got: Vec<i64> = one(
            "gnd-i64",
            "GatherND",
            &[input("d", &d, &di), input("i", &ix, &idx32)],
            vec![attr_i("batch_dims", b as i64)],
            13,
        );
        assert_eq!(got, gather_nd_naive(&di, &d, &idx, &ix, b));
    }
}

/// A reduction of these tests, as its name and function.
type Red<T> = (&'static str, fn(T, T) -> T);

fn f32_reductions() -> Vec<Red<f32>> {
    vec![("none", |_, u| u), ("add", |x, u| x + u), ("mul", |x, u| x * u), ("max", f32::max), ("min", f32::min)]
}

fn i32_reductions() -> Vec<Red<i32>> {
    vec![
        ("none", |_, u| u),
        ("add", i32::wrapping_add),
        ("mul", i32::wrapping_mul),
        ("max", |x, u| x.max(u)),
        ("min", |x, u| x.min(u)),
    ]
}

#[test]
fn scatter_elements_reductions_apply_duplicates_in_order() {
    let dims = [3usize, 3];
    let data: Vec<f32> = (0..9).map(|i| i as f32 * 0.75 - 2.0).collect();
    let idx_dims = [2usize, 3];
    // Duplicates in column 1 and a negative index.
    let idx = [1i64, 0, 2, 1, 0, -1];
    let upd: Vec<f32> = vec![0.1, -3.5, 2.25, 1e7, 0.3, -1.0];
    for (name, f) in f32_reductions() {
        let mut want = data.clone();
        for (at, &i) in idx.iter().enumerate() {
            let to = elements_target(at, i, &dims, &idx_dims, 0);
            want[to] = f(want[to], upd[at]);
        }
        let got: Vec<f32> = one(
            "se",
            "ScatterElements",
            &[input("d", &dims, &data), input("i", &idx_dims, &idx), input("u", &idx_dims, &upd)],
            vec![attr_s("reduction", name), attr_i("axis", 0)],
            18,
        );
        assert_eq!(got, want, "{name}");
    }
    let d32: Vec<i32> = (0..9).map(|i| i * 11 - 40).collect();
    let u32s: Vec<i32> = vec![5, -6, i32::MAX, 8, 9, -10];
    let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
    for (name, f) in i32_reductions() {
        let mut want = d32.clone();
        for (at, &i) in idx.iter().enumerate() {
            let to = elements_target(at, i, &dims, &idx_dims, 1);
            want[to] = f(want[to], u32s[at]);
        }
        let got: Vec<i32> = one(
            "se-i32",
            "ScatterElements",
            &[input("d", &dims, &d32), input("i", &idx_dims, &idx32), input("u", &idx_dims, &u32s)],
            vec![attr_s("reduction", name), attr_i("axis", -1)],
            18,
        );
        assert_eq!(got, want, "i32 {name}");
    }
}

#[test]
fn deprecated_scatter_is_scatter_elements_without_reduction() {
    let data = [0i64; 6];
    let got: Vec<i64> = one(
        "scatter-10",
        "Scatter",
        &[input("d", &[2, 3], &data), input("i", &[2, 2], &[2i64, 0, -1, 1]), input("u", &[2, 2], &[1i64, 2, 3, 4])],
        vec![attr_i("axis", 1)],
        10,
    );
    assert_eq!(got, [2, 0, 1, 0, 4, 3]);
}

#[test]
fn scatter_nd_slices_and_reductions() {
    let d = [4usize, 2, 2];
    let data: Vec<f32> = (0..16).map(|i| i as f32 - 3.0).collect();
    // Two tuples of depth 1 (slices of 4), the first twice.
    let idx = [2i64, -2, 0];
    let upd: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 + 1.0).collect();
    for (name, f) in f32_reductions() {
        let mut want = data.clone();
        for (l, &i) in idx.iter().enumerate() {
            for j in 0..4 {
                let to = wrap(i, 4) * 4 + j;
                want[to] = f(want[to], upd[l * 4 + j]);
            }
        }
        let got: Vec<f32> = one(
            "snd",
            "ScatterND",
            &[input("d", &d, &data), input("i", &[3, 1], &idx), input("u", &[3, 2, 2], &upd)],
            vec![attr_s("reduction", name)],
            18,
        );
        assert_eq!(got, want, "{name}");
    }
    // Full-depth tuples over bool data: single elements.
    let db = vec![false; 8];
    let got: Vec<bool> = one(
        "snd-bool",
        "ScatterND",
        &[input("d", &[2, 4], &db), input("i", &[2, 2], &[1i32, 3, 0, -4]), input("u", &[2], &[true, true])],
        vec![],
        18,
    );
    assert_eq!(got, [true, false, false, false, false, false, false, true]);
}

#[test]
fn a_scatter_of_an_intermediate_works_in_place() {
    let nodes = vec![
        node("Neg", "neg", &["d"], &["t"], vec![]),
        node("ScatterElements", "se", &["t", "i", "u"], &["out"], vec![attr_s("reduction", "add")]),
    ];
    let inputs =
        [input("d", &[4], &[1.0f32, 2.0, 3.0, 4.0]), input("i", &[2], &[3i64, 3]), input("u", &[2], &[0.5f32, 0.25])];
    let imported = import(nodes, &inputs, 18).unwrap();
    let line = imported.sched_text.lines().find(|l| l.starts_with("ScatterElements")).unwrap();
    assert!(line.contains("data: out,") && line.contains("dst: out,"), "{line}");
    let feeds: Vec<(&str, Vec<u8>)> = inputs.iter().map(|i| (i.0, i.3.clone())).collect();
    let got = f32::from_bytes(&run_raw("se-in-place", &imported, &feeds, &["out"]).remove(0));
    assert_eq!(got, [-1.0, -2.0, -3.0, -3.25]);
}

#[test]
fn unsupported_cases_are_import_errors() {
    let f = |v: &[f32]| v.to_vec();
    let cases: Vec<(NodeProto, Vec<Input>, &str)> = vec![
        (
            node("ScatterElements", "se", &["d", "i", "u"], &["out"], vec![attr_s("reduction", "sum")]),
            vec![input("d", &[2], &f(&[1.0, 2.0])), input("i", &[1], &[0i64]), input("u", &[1], &f(&[1.0]))],
            "attribute `reduction`",
        ),
        (
            node("ScatterND", "snd", &["d", "i", "u"], &["out"], vec![]),
            vec![input("d", &[2], &f(&[1.0, 2.0])), input("i", &[1, 1], &[0i64]), input("u", &[1], &[1i64])],
            "updates are i64 but data is f32",
        ),
        (
            node("GatherElements", "ge", &["d", "i"], &["out"], vec![]),
            vec![input("d", &[2], &f(&[1.0, 2.0])), input("i", &[1], &f(&[0.0]))],
            "indices are f32; i64 or i32 are supported",
        ),
        (
            node("GatherElements", "ge", &["d", "i"], &["out"], vec![attr_i("axis", 0)]),
            vec![input("d", &[2, 2], &f(&[1.0; 4])), input("i", &[1, 3], &[0i64; 3])],
            "longer than data",
        ),
        (
            node("GatherND", "gnd", &["d", "i"], &["out"], vec![attr_i("batch_dims", 2)]),
            vec![input("d", &[2, 2], &f(&[1.0; 4])), input("i", &[2, 1], &[0i64; 2])],
            "attribute `batch_dims`",
        ),
        (
            node("ScatterND", "snd", &["d", "i", "u"], &["out"], vec![]),
            vec![input("d", &[2, 2], &f(&[1.0; 4])), input("i", &[1, 3], &[0i64; 3]), input("u", &[1], &f(&[1.0]))],
            "exceed the data's rank",
        ),
    ];
    for (n, inputs, needle) in cases {
        let Err(err) = import(vec![n], &inputs, 18) else { panic!("imported, expected `{needle}`") };
        let err = err.to_string();
        assert!(err.contains(needle), "{err}");
    }
}
