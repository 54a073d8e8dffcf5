//! `Resize`: bilinear 2x (half_pixel) over the spatial axes of an NCHW map
//! by `scales`, nearest by `sizes` with `axes`, against naive references
//! from the spec's formulas; cubic, antialias, tf_crop_and_resize and the
//! keep-aspect policies on hand-computed values; the refusals name the
//! attribute. Linear blends two f32 values in f64 per axis: 1e-6 covers
//! two roundings.

use crate::common::*;
use rlx_onnx::proto::{AttributeProto, AttributeType, TensorProto};
use rlx_onnx::ImportOptions;

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// Bilinear sample of an `h x w` plane at output `(o_y, o_x)` with scale 2, half_pixel.
fn bilinear(plane: &[f32], h: usize, w: usize, oy: usize, ox: usize) -> f32 {
    let coord = |o: usize, n: usize| {
        let x = ((o as f64 + 0.5) / 2.0 - 0.5).max(0.0);
        let i0 = (x.floor() as usize).min(n - 1);
        let i1 = (i0 + 1).min(n - 1);
        (i0, i1, x - x.floor())
    };
    let ((y0, y1, wy), (x0, x1, wx)) = (coord(oy, h), coord(ox, w));
    let at = |y: usize, x: usize| f64::from(plane[y * w + x]);
    let top = (1.0 - wx) * at(y0, x0) + wx * at(y0, x1);
    let bottom = (1.0 - wx) * at(y1, x0) + wx * at(y1, x1);
    ((1.0 - wy) * top + wy * bottom) as f32
}

#[test]
fn bilinear_2x_by_scales_is_one_thunk_per_spatial_axis() {
    let (c, h, w) = (3, 4, 5);
    let x = values(c * h * w, 601);
    let m = model(
        vec![node("Resize", "up", &["x", "", "scales"], &["y"], vec![attr_s("mode", "linear")])],
        vec![init_raw("scales", &[4], &[1.0, 1.0, 2.0, 2.0])],
        vec![vi("x", &[1, 3, 4, 5])],
        vec![vi("y", &[1, 3, 8, 10])],
        19,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    assert_eq!(count_kind(&imported.sched_text, "Resize"), 2, "{}", imported.sched_text);
    let out = run("resize2x", &imported, &[("x", &x)], &["y"]);
    let mut want = Vec::new();
    for ch in 0..c {
        for oy in 0..8 {
            for ox in 0..10 {
                want.push(bilinear(&x[ch * h * w..(ch + 1) * h * w], h, w, oy, ox));
            }
        }
    }
    assert_close(&out[0], &want, 1e-6, "y");
}

#[test]
fn nearest_by_sizes_on_chosen_axes() {
    // Width 6 -> 4 (scale 2/3), asymmetric, floor: x = o * 1.5 -> 0, 1, 3, 4.
    let x = values(2 * 6, 611);
    let m = model(
        vec![node(
            "Resize",
            "down",
            &["x", "", "", "sizes"],
            &["y"],
            vec![
                attr_ints("axes", &[-1]),
                attr_s("coordinate_transformation_mode", "asymmetric"),
                attr_s("nearest_mode", "floor"),
            ],
        )],
        vec![init_i64("sizes", &[1], &[4])],
        vec![vi("x", &[2, 6])],
        vec![vi("y", &[2, 4])],
        19,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let out = run("resize_nearest", &imported, &[("x", &x)], &["y"]);
    let want: Vec<f32> = (0..2).flat_map(|r| [0, 1, 3, 4].map(|i| x[r * 6 + i])).collect();
    assert_eq!(out[0], want);
}

/// Imports one `Resize` node of `x` (`[2, 4]` unless `shape` says) and
/// runs it.
fn resize_1(
    test: &str,
    shape: &[i64],
    inputs: &[&str],
    inits: Vec<TensorProto>,
    attrs: Vec<AttributeProto>,
    out: &[i64],
    x: &[f32],
) -> Vec<f32> {
    let m =
        model(vec![node("Resize", "r", inputs, &["y"], attrs)], inits, vec![vi("x", shape)], vec![vi("y", out)], 19);
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    run(test, &imported, &[("x", x)], &["y"]).remove(0)
}

#[test]
fn cubic_upsampling_weighs_four_samples_by_the_kernel() {
    // Asymmetric 2x: x = o / 2. Integral coordinates read their sample;
    // x = k + 0.5 weighs samples k-1 ..= k+2 (clamped to the edges) by
    // -0.09375, 0.59375, 0.59375, -0.09375 (the kernel with a = -0.75 at
    // 1.5 and 0.5): exact in binary.
    let y = resize_1(
        "resize_cubic",
        &[1, 4],
        &["x", "", "scales"],
        vec![init_raw("scales", &[2], &[1.0, 2.0])],
        vec![attr_s("mode", "cubic"), attr_s("coordinate_transformation_mode", "asymmetric")],
        &[1, 8],
        &[1.0, 2.0, 4.0, 8.0],
    );
    assert_eq!(y, [1.0, 1.3125, 2.0, 2.71875, 4.0, 6.1875, 8.0, 8.375]);
}

#[test]
fn antialias_averages_every_sample_a_downscale_covers() {
    // Linear 8 -> 4, half_pixel: x = 2o + 0.5, and antialias stretches the
    // triangle to half-width 2: four taps weighted 1/8, 3/8, 3/8, 1/8.
    let x: Vec<f32> = (0..8).map(|i| 8.0 * i as f32).collect();
    let y = resize_1(
        "resize_antialias",
        &[1, 8],
        &["x", "", "", "sizes"],
        vec![init_i64("sizes", &[2], &[1, 4])],
        vec![attr_s("mode", "linear"), attr_i("antialias", 1)],
        &[1, 4],
        &x,
    );
    // o = 0 reads samples -1 ..= 2 (the first clamped to 0).
    assert_eq!(y, [5.0, 20.0, 36.0, 51.0]);
    // Without antialias the same downscale blends only two samples.
    let plain = resize_1(
        "resize_no_antialias",
        &[1, 8],
        &["x", "", "", "sizes"],
        vec![init_i64("sizes", &[2], &[1, 4])],
        vec![attr_s("mode", "linear")],
        &[1, 4],
        &x,
    );
    assert_eq!(plain, [4.0, 20.0, 36.0, 52.0]);
}

#[test]
fn crop_and_resize_extrapolates_outside_the_roi_on_the_listed_axis() {
    // axes [1], roi [-0.5, 1.0] of 4 outputs: x = 1.5 o - 1.5 = -1.5
    // (outside: 10), 0, 1.5, 3.
    let x = [0.0, 2.0, 4.0, 8.0, 1.0, 3.0, 5.0, 7.0];
    let y = resize_1(
        "resize_crop",
        &[2, 4],
        &["x", "roi", "", "sizes"],
        vec![init_raw("roi", &[2], &[-0.5, 1.0]), init_i64("sizes", &[1], &[4])],
        vec![
            attr_s("mode", "linear"),
            attr_s("coordinate_transformation_mode", "tf_crop_and_resize"),
            attr_ints("axes", &[1]),
            attr_f("extrapolation_value", 10.0),
        ],
        &[2, 4],
        &x,
    );
    assert_eq!(y, [10.0, 0.0, 3.0, 8.0, 10.0, 1.0, 4.0, 7.0]);
}

#[test]
fn keep_aspect_ratio_policies_scale_every_listed_axis_alike() {
    // sizes [4, 4] of a 2 x 4 image: ratios 2 and 1.
    let x: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let with = |test: &str, policy: &str, out: &[i64]| {
        resize_1(
            test,
            &[2, 4],
            &["x", "", "", "sizes"],
            vec![init_i64("sizes", &[2], &[4, 4])],
            vec![attr_s("keep_aspect_ratio_policy", policy)],
            out,
            &x,
        )
    };
    // not_larger: scale 1 everywhere, the identity.
    assert_eq!(with("resize_not_larger", "not_larger", &[2, 4]), x);
    // not_smaller: scale 2 everywhere, 4 x 8; nearest (round_prefer_floor,
    // half_pixel) repeats each sample twice.
    let y = with("resize_not_smaller", "not_smaller", &[4, 8]);
    let want: Vec<f32> = (0..4).flat_map(|r| (0..8).map(move |c| (r / 2 * 4 + c / 2) as f32)).collect();
    assert_eq!(y, want);
}

#[test]
fn refusals_name_the_node_and_attribute() {
    let refused = |inputs: &[&str], inits: Vec<TensorProto>, attrs: Vec<AttributeProto>| {
        let m = model(
            vec![node("Resize", "r", inputs, &["y"], attrs)],
            inits,
            vec![vi("x", &[3, 5])],
            vec![vi("y", &[2, 2])],
            19,
        );
        import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("refused").to_string()
    };
    let scales = || vec![init_raw("scales", &[2], &[2.0, 2.0])];
    let cases = [
        (vec![attr_i("antialias", 1)], "antialias"),
        (vec![attr_i("exclude_outside", 1)], "exclude_outside"),
        (vec![attr_s("mode", "cubic"), attr_f("cubic_coeff_a", f32::INFINITY)], "cubic_coeff_a"),
        (vec![attr_s("mode", "bicubic")], "mode"),
        (vec![attr_s("coordinate_transformation_mode", "tf_half_pixel_for_nn")], "coordinate_transformation_mode"),
    ];
    for (attrs, attr) in cases {
        let e = refused(&["x", "", "scales"], scales(), attrs);
        assert!(e.contains("`r`") && e.contains(attr), "{e}");
    }
    // tf_crop_and_resize without its roi.
    let e =
        refused(&["x", "", "scales"], scales(), vec![attr_s("coordinate_transformation_mode", "tf_crop_and_resize")]);
    assert!(e.contains("`r`") && e.contains("roi"), "{e}");
    // sizes [2, 2] of 3 x 5 with not_larger: the common scale 2/5 = 0.4 is
    // not an f32, and axis 0's own ratio would be 1/3.
    let sizes = vec![init_i64("sizes", &[2], &[2, 2])];
    let e = refused(&["x", "", "", "sizes"], sizes, vec![attr_s("keep_aspect_ratio_policy", "not_larger")]);
    assert!(e.contains("`r`") && e.contains("keep_aspect_ratio_policy") && e.contains("0.4"), "{e}");
    let sizes = vec![init_i64("sizes", &[2], &[2, 2])];
    let e = refused(&["x", "", "", "sizes"], sizes, vec![attr_s("keep_aspect_ratio_policy", "fit")]);
    assert!(e.contains("keep_aspect_ratio_policy") && e.contains("fit"), "{e}");
}
