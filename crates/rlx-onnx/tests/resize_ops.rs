//! `Resize`: bilinear 2x (half_pixel) over the spatial axes of an NCHW map
//! by `scales`, nearest by `sizes` with `axes`, against naive references
//! from the spec's formulas; the refused modes name the attribute. Linear
//! blends two f32 values in f64 per axis: 1e-6 covers two roundings.

mod common;

use common::*;
use rlx_onnx::proto::{AttributeProto, AttributeType};
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

#[test]
fn refused_modes_name_the_node_and_attribute() {
    for (attr, value) in [("mode", "cubic"), ("coordinate_transformation_mode", "tf_crop_and_resize")] {
        let m = model(
            vec![node("Resize", "r", &["x", "", "scales"], &["y"], vec![attr_s(attr, value)])],
            vec![init_raw("scales", &[2], &[2.0, 2.0])],
            vec![vi("x", &[2, 3])],
            vec![vi("y", &[4, 6])],
            19,
        );
        let e = import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("refused").to_string();
        assert!(e.contains("`r`") && e.contains(attr) && e.contains(value), "{e}");
    }
}
