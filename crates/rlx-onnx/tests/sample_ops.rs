//! `GridSample` and `AffineGrid`: hand-computed values (every padding
//! mode at points on, inside and outside the image, with and without
//! `align_corners`; nearest ties; bicubic weights), a trilinear volume and
//! a line against a naive f64 reference written here from the spec, the
//! opset-16 mode names, a constant grid, empty outputs, `AffineGrid` in
//! 2-D and 3-D (run-time and constant `theta`), the two chained as a
//! spatial transformer, and every refusal naming its attribute or shape.

use crate::common::typed::{f, i64s, run_graph_opset, In, T};
use crate::common::*;
use rlx_onnx::ImportOptions;

/// The 2x3 image `[[1, 2, 3], [4, 5, 6]]` as `[1, 1, 2, 3]`.
fn image() -> T {
    f(&[1, 1, 2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
}

/// `GridSample` of `x` at `grid` (both run-time data) at opset 20.
fn sample(test: &str, x: T, grid: T, attrs: Vec<rlx_onnx::proto::AttributeProto>) -> Vec<f32> {
    let nodes = vec![node("GridSample", "gs", &["x", "grid"], &["y"], attrs)];
    match run_graph_opset(test, nodes, vec![In::Data("x", x), In::Data("grid", grid)], &["y"], 20).remove(0) {
        T::F32(_, v) => v,
        other => panic!("{other:?}"),
    }
}

fn attrs(mode: &str, padding: &str, align: i64) -> Vec<rlx_onnx::proto::AttributeProto> {
    vec![attr_s("mode", mode), attr_s("padding_mode", padding), attr_i("align_corners", align)]
}

#[test]
fn image_points_by_hand_for_every_padding() {
    // (x, y) points: the top-left corner, the centre, and (1.5, 0) past the
    // right edge.
    let grid = f(&[1, 1, 3, 2], vec![-1.0, -1.0, 0.0, 0.0, 1.5, 0.0]);
    // align_corners: the corner is sample (0, 0); the centre (1, 0.5)
    // averages 2 and 5; (1.5, 0) is (2.5, 0.5).
    let cases = [
        ("zeros", 1, [1.0, 3.5, 0.5 * (0.5 * 3.0) + 0.5 * (0.5 * 6.0)]),
        ("border", 1, [1.0, 3.5, 4.5]),
        ("reflection", 1, [1.0, 3.5, 4.0]),
        // Without: the corner is (-0.5, -0.5), a quarter inside; (1.5, 0)
        // is (3.25, 0.5), past the last column's outer edge (2.5).
        ("zeros", 0, [0.25, 3.5, 0.0]),
        ("border", 0, [1.0, 3.5, 4.5]),
        ("reflection", 0, [1.0, 3.5, 4.25]),
    ];
    for (padding, align, want) in cases {
        let got = sample(&format!("gs_{padding}_{align}"), image(), grid.clone(), attrs("linear", padding, align));
        assert_eq!(got, want, "{padding} align_corners {align}");
    }
}

#[test]
fn nearest_rounds_ties_to_even_and_cubic_uses_keys_weights() {
    // (0, 0) without align_corners is (1, 0.5): the row rounds to 0;
    // (0.5, 0) is (1.75, 0.5) -> column 2.
    let grid = f(&[1, 1, 2, 2], vec![0.0, 0.0, 0.5, 0.0]);
    assert_eq!(sample("gs_nearest", image(), grid, attrs("nearest", "zeros", 0)), [2.0, 3.0]);
    // Cubic at (1, 0.5) with align_corners: rows -1..=2 weighted
    // [-0.09375, 0.59375, 0.59375, -0.09375], rows -1 and 2 zero or the
    // edge rows.
    let grid = f(&[1, 1, 1, 2], vec![0.0, 0.0]);
    assert_eq!(sample("gs_cubic_zeros", image(), grid.clone(), attrs("cubic", "zeros", 1)), [4.15625]);
    assert_eq!(sample("gs_cubic_border", image(), grid, attrs("cubic", "border", 1)), [3.5]);
}

/// Trilinear sampling with zeros padding and `align_corners`, in f64, from
/// the spec: the 8 samples around each point, zero outside.
fn trilinear(x: &[f32], dims: [usize; 3], points: &[f32]) -> Vec<f32> {
    let [d, h, w] = dims;
    let at = |z: i64, y: i64, xx: i64| -> f64 {
        let inside = (0..d as i64).contains(&z) && (0..h as i64).contains(&y) && (0..w as i64).contains(&xx);
        if inside {
            f64::from(x[(z as usize * h + y as usize) * w + xx as usize])
        } else {
            0.0
        }
    };
    points
        .chunks(3)
        .map(|p| {
            let pos = |g: f32, len: usize| (f64::from(g) + 1.0) / 2.0 * (len - 1) as f64;
            let (px, py, pz) = (pos(p[0], w), pos(p[1], h), pos(p[2], d));
            let (x0, y0, z0) = (px.floor(), py.floor(), pz.floor());
            let mut v = 0.0;
            for (dz, wz) in [(0, 1.0 - (pz - z0)), (1, pz - z0)] {
                for (dy, wy) in [(0, 1.0 - (py - y0)), (1, py - y0)] {
                    for (dx, wx) in [(0, 1.0 - (px - x0)), (1, px - x0)] {
                        v += wz * wy * wx * at(z0 as i64 + dz, y0 as i64 + dy, x0 as i64 + dx);
                    }
                }
            }
            v as f32
        })
        .collect()
}

#[test]
fn a_volume_and_a_line_against_naive_references() {
    let (dims, c) = ([3usize, 4, 5], 2);
    let x = values(c * 60, 801);
    let points: Vec<f32> = values(2 * 3 * 4 * 3, 802).iter().map(|v| v * 0.6).collect();
    let y = sample(
        "gs_volume",
        f(&[1, c, 3, 4, 5], x.clone()),
        f(&[1, 2, 3, 4, 3], points.clone()),
        attrs("linear", "zeros", 1),
    );
    let want: Vec<f32> = (0..c).flat_map(|ch| trilinear(&x[ch * 60..(ch + 1) * 60], dims, &points)).collect();
    assert_close(&y, &want, 1e-6, "trilinear");
    // A line: X [2, 1, 4], grid [2, 3, 1]; nearest with border padding
    // reads sample clamp(round((g + 1) * 4 / 2 - 0.5)).
    let line = f(&[2, 1, 4], vec![10.0, 11.0, 12.0, 13.0, 20.0, 21.0, 22.0, 23.0]);
    let g = f(&[2, 3, 1], vec![-1.0, 0.1, 2.0, -3.0, 0.6, 0.74]);
    // Positions: -0.5 -> -0 -> 0; 1.7 -> 2; 5.5 -> 6 -> 3 | -4.5 -> -4 ->
    // 0; 2.7 -> 3; 2.98 -> 3.
    let got = sample("gs_line", line, g, attrs("nearest", "border", 0));
    assert_eq!(got, [10.0, 12.0, 13.0, 20.0, 23.0, 23.0]);
}

#[test]
fn opset_16_takes_its_own_mode_names() {
    let grid = f(&[1, 1, 1, 2], vec![0.0, 0.0]);
    let run16 = |test: &str, mode: &str| {
        let nodes = vec![node("GridSample", "gs", &["x", "grid"], &["y"], vec![attr_s("mode", mode)])];
        let inputs = vec![In::Data("x", image()), In::Data("grid", grid.clone())];
        run_graph_opset(test, nodes, inputs, &["y"], 16).remove(0)
    };
    assert_eq!(run16("gs16_bilinear", "bilinear"), f(&[1, 1, 1, 1], vec![3.5]));
    assert_eq!(run16("gs16_bicubic", "bicubic"), f(&[1, 1, 1, 1], vec![4.15625]));
    // The default (bilinear) too.
    let nodes = vec![node("GridSample", "gs", &["x", "grid"], &["y"], vec![])];
    let out = run_graph_opset("gs16_default", nodes, vec![In::Data("x", image()), In::Data("grid", grid)], &["y"], 16);
    assert_eq!(out[0], f(&[1, 1, 1, 1], vec![3.5]));
}

#[test]
fn a_constant_grid_and_empty_outputs() {
    let nodes = vec![node("GridSample", "gs", &["x", "grid"], &["y"], attrs("linear", "border", 1))];
    let grid = f(&[1, 2, 1, 2], vec![1.0, 1.0, -1.0, 0.0]);
    let out = run_graph_opset("gs_const_grid", nodes, vec![In::Data("x", image()), In::Init("grid", grid)], &["y"], 20);
    assert_eq!(out[0], f(&[1, 1, 2, 1], vec![6.0, 2.5]));
    // No channels: an empty constant, no thunk.
    let m = model(
        vec![node("GridSample", "gs", &["x", "grid"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[1, 0, 2, 3]), vi("grid", &[1, 4, 4, 2])],
        vec![vi("y", &[1, 0, 4, 4])],
        20,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    assert_eq!(count_kind(&imported.sched_text, "GridSample"), 0, "{}", imported.sched_text);
}

/// The import error of a one-node model.
fn refusal(
    op: &str,
    inputs: Vec<rlx_onnx::proto::ValueInfoProto>,
    inits: Vec<rlx_onnx::proto::TensorProto>,
    attrs: Vec<rlx_onnx::proto::AttributeProto>,
    opset: i64,
) -> String {
    let names: Vec<String> =
        inputs.iter().map(|i| i.name.clone()).chain(inits.iter().map(|t| t.name.clone())).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let m = model(vec![node(op, "n", &names, &["y"], attrs)], inits, inputs, vec![vi("y", &[])], opset);
    import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("refused").to_string()
}

#[test]
fn grid_sample_refusals_name_the_attribute_or_shape() {
    let io = || vec![vi("x", &[1, 1, 2, 3]), vi("grid", &[1, 2, 2, 2])];
    for (attr, value, opset, needle) in [
        ("mode", "bilinear", 20, "at opset 20 it is one of linear, nearest, cubic"),
        ("mode", "cubic", 16, "at opset 16 it is one of bilinear, nearest, bicubic"),
        ("mode", "area", 20, "`area`"),
        ("padding_mode", "wrap", 20, "expected zeros, border or reflection"),
    ] {
        let e = refusal("GridSample", io(), vec![], vec![attr_s(attr, value)], opset);
        assert!(e.contains("`n`") && e.contains(attr) && e.contains(needle), "{e}");
    }
    let e = refusal("GridSample", io(), vec![], vec![attr_i("align_corners", 2)], 20);
    assert!(e.contains("align_corners") && e.contains("must be 0 or 1"), "{e}");
    // Shapes: four spatial axes; 3-D before opset 20; a grid whose last
    // axis is not the spatial rank; another batch.
    let e =
        refusal("GridSample", vec![vi("x", &[1, 1, 2, 2, 2, 2]), vi("grid", &[1, 1, 1, 1, 1, 4])], vec![], vec![], 20);
    assert!(e.contains("1 to 3 spatial axes"), "{e}");
    let e = refusal("GridSample", vec![vi("x", &[1, 1, 2, 2, 2]), vi("grid", &[1, 1, 1, 1, 3])], vec![], vec![], 16);
    assert!(e.contains("before opset 20 GridSample takes 4-D input"), "{e}");
    let e = refusal("GridSample", vec![vi("x", &[1, 1, 2, 3]), vi("grid", &[1, 2, 2, 3])], vec![], vec![], 20);
    assert!(e.contains("grid has shape [1, 2, 2, 3]"), "{e}");
    let e = refusal("GridSample", vec![vi("x", &[2, 1, 2, 3]), vi("grid", &[1, 2, 2, 2])], vec![], vec![], 20);
    assert!(e.contains("grid has shape [1, 2, 2, 2]"), "{e}");
    let e = refusal("GridSample", vec![vi("x", &[1, 1, 0, 3]), vi("grid", &[1, 2, 2, 2])], vec![], vec![], 20);
    assert!(e.contains("empty spatial axis"), "{e}");
}

/// `AffineGrid` of `theta` (run-time data) to `size` (a constant).
fn affine(test: &str, theta: T, size: &[i64], align: i64) -> T {
    let nodes = vec![node("AffineGrid", "ag", &["theta", "size"], &["grid"], vec![attr_i("align_corners", align)])];
    let inputs = vec![In::Data("theta", theta), In::Init("size", i64s(&[size.len()], size.to_vec()))];
    run_graph_opset(test, nodes, inputs, &["grid"], 20).remove(0)
}

#[test]
fn affine_grid_2d_by_hand() {
    // size [1, 1, 2, 2] without align_corners: x, y in {-0.5, 0.5};
    // theta maps (x, y) to (2x + 0.25, -y + 1).
    let theta = f(&[1, 2, 3], vec![2.0, 0.0, 0.25, 0.0, -1.0, 1.0]);
    let got = affine("ag2", theta, &[1, 1, 2, 2], 0);
    let want = vec![-0.75, 1.5, 1.25, 1.5, -0.75, 0.5, 1.25, 0.5];
    assert_eq!(got, f(&[1, 2, 2, 2], want));
    // Two batches with align_corners, H = 2, W = 3: the identity gives the
    // base grid, swapping the rows of theta swaps each point's x and y.
    let theta = f(&[2, 2, 3], vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
    let got = affine("ag2_batch", theta, &[2, 5, 2, 3], 1);
    let base = [-1.0, -1.0, 0.0, -1.0, 1.0, -1.0, -1.0, 1.0, 0.0, 1.0, 1.0, 1.0];
    let swapped: Vec<f32> = base.chunks(2).flat_map(|p| [p[1], p[0]]).collect();
    assert_eq!(got, f(&[2, 2, 3, 2], base.iter().copied().chain(swapped).collect()));
}

#[test]
fn affine_grid_3d_by_hand_and_with_a_constant_theta() {
    // size [1, 1, 2, 1, 2] without align_corners: z, x in {-0.5, 0.5},
    // y = 0; theta maps (x, y, z) to (z, x + y, 3).
    let theta = vec![0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0];
    let got = affine("ag3", f(&[1, 3, 4], theta.clone()), &[1, 1, 2, 1, 2], 0);
    let want = vec![-0.5, -0.5, 3.0, -0.5, 0.5, 3.0, 0.5, -0.5, 3.0, 0.5, 0.5, 3.0];
    assert_eq!(got, f(&[1, 2, 1, 2, 3], want.clone()));
    let nodes = vec![node("AffineGrid", "ag", &["theta", "size"], &["grid"], vec![])];
    let inputs = vec![In::Init("theta", f(&[1, 3, 4], theta)), In::Init("size", i64s(&[5], vec![1, 1, 2, 1, 2]))];
    let out = run_graph_opset("ag3_const", nodes, inputs, &["grid"], 20);
    assert_eq!(out[0], f(&[1, 2, 1, 2, 3], want));
}

#[test]
fn affine_grid_then_grid_sample_is_a_spatial_transformer() {
    // The identity transform resamples the image onto itself (bilinear,
    // without align_corners on both), a horizontal flip reverses the rows.
    let (h, w) = (3, 4);
    let x = values(2 * h * w, 811);
    let run = |test: &str, theta: Vec<f32>| {
        let nodes = vec![
            node("AffineGrid", "ag", &["theta", "size"], &["grid"], vec![]),
            node("GridSample", "gs", &["x", "grid"], &["y"], vec![]),
        ];
        let inputs = vec![
            In::Data("x", f(&[1, 2, h, w], x.clone())),
            In::Data("theta", f(&[1, 2, 3], theta)),
            In::Init("size", i64s(&[4], vec![1, 2, h as i64, w as i64])),
        ];
        match run_graph_opset(test, nodes, inputs, &["y"], 20).remove(0) {
            T::F32(_, v) => v,
            other => panic!("{other:?}"),
        }
    };
    assert_close(&run("stn_identity", vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]), &x, 1e-6, "identity");
    let flipped: Vec<f32> = x.chunks(w).flat_map(|row| row.iter().rev().copied().collect::<Vec<_>>()).collect();
    assert_close(&run("stn_flip", vec![-1.0, 0.0, 0.0, 0.0, 1.0, 0.0]), &flipped, 1e-6, "flip");
}

#[test]
fn affine_grid_refusals() {
    let theta = || vec![vi("theta", &[1, 2, 3])];
    let size = |v: &[i64]| vec![init_i64("size", &[v.len() as i64], v)];
    let e = refusal("AffineGrid", theta(), size(&[1, 1, 1, 4]), vec![attr_i("align_corners", 1)], 20);
    assert!(e.contains("align_corners") && e.contains("spatial size of 1"), "{e}");
    let e = refusal("AffineGrid", theta(), size(&[2, 1, 3, 4]), vec![], 20);
    assert!(e.contains("theta has shape [1, 2, 3]") && e.contains("[2, 2, 3]"), "{e}");
    let e = refusal("AffineGrid", theta(), size(&[1, 1, 3, 4, 5]), vec![], 20);
    assert!(e.contains("[1, 3, 4]"), "{e}");
    let e = refusal("AffineGrid", theta(), size(&[1, 4]), vec![], 20);
    assert!(e.contains("[N, C, H, W] or [N, C, D, H, W]"), "{e}");
    // `size` must be known at import time.
    let e = refusal("AffineGrid", vec![vi("theta", &[1, 2, 3]), vi_typed_i64("size", 4)], vec![], vec![], 20);
    assert!(e.contains("`size`") && e.contains("constant known at import time"), "{e}");
}

fn vi_typed_i64(name: &str, len: i64) -> rlx_onnx::proto::ValueInfoProto {
    use rlx_onnx::proto::{data_type, DimensionValue};
    vi_typed(name, data_type::INT64, vec![DimensionValue::DimValue(len)])
}
