//! `ConvTranspose` (2-D, 1-D, groups, batches, a run-time filter) and
//! `Col2Im` against a naive f64 scatter written from the spec. Each output
//! sums at most 12 products of values <= ~2: 1e-5 catches a wrong tap,
//! group or padding (off by > 1e-2).

use crate::common::*;
use rlx_onnx::proto::AttributeProto;
use rlx_onnx::ImportOptions;

const TOL: f32 = 1e-5;

fn dims(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

/// `[n, c_in, h, w]` with `W [c_in, c_out/g, kh, kw]`: every input pixel
/// times every tap, scattered to `(iy * s - p + ki * d, ...)`.
#[allow(clippy::too_many_arguments)]
fn reference(
    x: &[f32],
    [n, c_in, h, w]: [usize; 4],
    wt: &[f32],
    [c_out_g, kh, kw]: [usize; 3],
    g: usize,
    bias: Option<&[f32]>,
    [sh, sw, ph, pw, dh, dw]: [usize; 6],
    [h_out, w_out]: [usize; 2],
) -> Vec<f32> {
    let c_out = c_out_g * g;
    let c_in_g = c_in / g;
    let mut out = vec![0.0f64; n * c_out * h_out * w_out];
    for b in 0..n {
        for co in 0..c_out {
            let start = bias.map_or(0.0, |bs| f64::from(bs[co]));
            out[(b * c_out + co) * h_out * w_out..][..h_out * w_out].fill(start);
        }
        for ci in 0..c_in {
            let gi = ci / c_in_g;
            for col in 0..c_out_g {
                let co = gi * c_out_g + col;
                for iy in 0..h {
                    for ix in 0..w {
                        for ki in 0..kh {
                            for kj in 0..kw {
                                let y = (iy * sh + ki * dh) as isize - ph as isize;
                                let xx = (ix * sw + kj * dw) as isize - pw as isize;
                                if y < 0 || xx < 0 || y as usize >= h_out || xx as usize >= w_out {
                                    continue;
                                }
                                let v = f64::from(x[((b * c_in + ci) * h + iy) * w + ix])
                                    * f64::from(wt[((ci * c_out_g + col) * kh + ki) * kw + kj]);
                                out[((b * c_out + co) * h_out + y as usize) * w_out + xx as usize] += v;
                            }
                        }
                    }
                }
            }
        }
    }
    out.into_iter().map(|v| v as f32).collect()
}

#[test]
fn grouped_strided_padded_dilated_with_output_padding_and_bias() {
    let (n, c_in, h, w, g, c_out_g, kh, kw) = (2, 4, 3, 4, 2, 3, 3, 2);
    let (sh, sw, dh, dw) = (2, 3, 1, 2);
    // pads [1, 0, 2, 1], output_padding [1, 2]:
    // h_out = 2*2 + 1 + 2 + 1 - 1 - 2 = 5, w_out = 3*3 + 2 + 2 + 1 - 0 - 1 = 13.
    let (h_out, w_out) = (5, 13);
    let x = values(n * c_in * h * w, 501);
    let wt = values(c_in * c_out_g * kh * kw, 502);
    let bias = values(c_out_g * g, 503);
    let attrs: Vec<AttributeProto> = vec![
        attr_i("group", g as i64),
        attr_ints("strides", &[sh as i64, sw as i64]),
        attr_ints("dilations", &[dh as i64, dw as i64]),
        attr_ints("pads", &[1, 0, 2, 1]),
        attr_ints("output_padding", &[1, 2]),
    ];
    for constant in [true, false] {
        let (inits, mut inputs) = if constant {
            (vec![init_raw("w", &dims(&[c_in, c_out_g, kh, kw]), &wt)], vec![])
        } else {
            (vec![], vec![vi("w", &dims(&[c_in, c_out_g, kh, kw]))])
        };
        inputs.insert(0, vi("x", &dims(&[n, c_in, h, w])));
        let m = model(
            vec![node("ConvTranspose", "up", &["x", "w", "b"], &["y"], attrs.clone())],
            [inits, vec![init_raw("b", &dims(&[c_out_g * g]), &bias)]].concat(),
            inputs,
            vec![vi("y", &dims(&[n, c_out_g * g, h_out, w_out]))],
            17,
        );
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
        assert_eq!(count_kind(&imported.sched_text, "Col2Im"), 1, "{}", imported.sched_text);
        let feeds: Vec<(&str, &[f32])> = if constant { vec![("x", &x)] } else { vec![("x", &x), ("w", &wt)] };
        let out = run("convt", &imported, &feeds, &["y"]);
        let want = reference(
            &x,
            [n, c_in, h, w],
            &wt,
            [c_out_g, kh, kw],
            g,
            Some(&bias),
            [sh, sw, 1, 0, dh, dw],
            [h_out, w_out],
        );
        assert_close(&out[0], &want, TOL, &format!("constant filter {constant}"));
    }
}

#[test]
fn one_d_with_auto_pad_same_upper() {
    // SAME_UPPER: output = input * stride = 10; full = 2*4 + 3 = 11, so one
    // pixel of padding, at the end.
    let (c_in, l, c_out, k, s) = (2, 5, 3, 3, 2);
    let x = values(c_in * l, 511);
    let wt = values(c_in * c_out * k, 512);
    let m = model(
        vec![node(
            "ConvTranspose",
            "up",
            &["x", "w"],
            &["y"],
            vec![
                attr_ints("strides", &[s as i64]),
                AttributeProto { name: "auto_pad".into(), r#type: 3, s: b"SAME_UPPER".to_vec(), ..Default::default() },
            ],
        )],
        vec![init_raw("w", &dims(&[c_in, c_out, k]), &wt)],
        vec![vi("x", &dims(&[1, c_in, l]))],
        vec![vi("y", &dims(&[1, c_out, 10]))],
        17,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let out = run("convt1d", &imported, &[("x", &x)], &["y"]);
    let want = reference(&x, [1, c_in, 1, l], &wt, [c_out, 1, k], 1, None, [1, s, 0, 0, 1, 1], [1, 10]);
    assert_close(&out[0], &want, TOL, "y");
}

#[test]
fn col2im_is_the_kind_with_blocks_counted_from_the_padded_image() {
    // A 4x5 image, 2x2 blocks, stride 1, pads [1, 0, 0, 1]: blocks
    // (4 + 1 - 2) + 1 = 4 by (5 + 1 - 2) + 1 = 5.
    let (c, h, w) = (2, 4, 5);
    let src = values(c * 4 * 20, 521);
    let m = model(
        vec![node("Col2Im", "c2i", &["x", "image", "block"], &["y"], vec![attr_ints("pads", &[1, 0, 0, 1])])],
        vec![init_i64("image", &[2], &[4, 5]), init_i64("block", &[2], &[2, 2])],
        vec![vi("x", &dims(&[1, c * 4, 20]))],
        vec![vi("y", &dims(&[1, c, h, w]))],
        18,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let out = run("col2im", &imported, &[("x", &src)], &["y"]);
    // As a transposed convolution of a 4x5 "input" (the block grid) whose
    // filter picks channel and tap: column row (ch, ki, kj) is tap (ki, kj).
    let mut want = vec![0.0f32; c * h * w];
    for ch in 0..c {
        for ki in 0..2 {
            for kj in 0..2 {
                for by in 0..4 {
                    for bx in 0..5 {
                        let (y, x) = (by + ki, bx + kj);
                        if y >= 1 && y - 1 < h && x < w {
                            want[(ch * h + y - 1) * w + x] += src[((ch * 2 + ki) * 2 + kj) * 20 + by * 5 + bx];
                        }
                    }
                }
            }
        }
    }
    assert_close(&out[0], &want, TOL, "y");
}

#[test]
fn wide_3d_and_negative_leading_padding_are_errors_naming_the_node() {
    // 3-D runs as a convolution of the spread input, which cannot start
    // past the dilated window's reach.
    let m = model(
        vec![node("ConvTranspose", "up3d", &["x", "w"], &["y"], vec![attr_ints("pads", &[2, 0, 0, 0, 0, 0])])],
        vec![init_raw("w", &[1, 1, 2, 2, 2], &[0.5; 8])],
        vec![vi("x", &[1, 1, 2, 2, 2])],
        vec![vi("y", &[1, 1, 1, 3, 3])],
        17,
    );
    let e = import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("3-D").to_string();
    assert!(e.contains("up3d") && e.contains("exceeds the dilated window"), "{e}");
    let m = model(
        vec![node("ConvTranspose", "big", &["x", "w"], &["y"], vec![attr_ints("output_shape", &[9, 9])])],
        vec![init_raw("w", &[1, 1, 2, 2], &[0.5; 4])],
        vec![vi("x", &[1, 1, 3, 3])],
        vec![vi("y", &[1, 1, 9, 9])],
        17,
    );
    let e = import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("negative padding").to_string();
    assert!(e.contains("big") && e.contains("negative padding"), "{e}");
}
