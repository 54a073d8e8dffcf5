//! `DFT` and `STFT`: one-node graphs imported, validated, run in the
//! interpreter and compared with a naive f64 transform written here (the
//! importer's product of f32 twiddles agrees to a few ulps of the
//! signal's magnitude), over lengths cut and padded, every axis, both
//! directions and the one-sided forms.

use crate::common::typed::*;
use crate::common::*;

/// The DFT of the complex rows `x` (`[rows, len]` pairs), cut or padded
/// to `n`, inverse scaled by `1/n`: `[rows, n]` pairs.
fn dft_ref(x: &[(f64, f64)], rows: usize, len: usize, n: usize, inverse: bool) -> Vec<(f64, f64)> {
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut out = Vec::with_capacity(rows * n);
    for r in 0..rows {
        for j in 0..n {
            let (mut re, mut im) = (0.0, 0.0);
            for k in 0..len.min(n) {
                let (a, b) = x[r * len + k];
                let t = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                re += a * t.cos() - b * t.sin();
                im += a * t.sin() + b * t.cos();
            }
            let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
            out.push((re * scale, im * scale));
        }
    }
    out
}

fn pairs(v: &[f32], channels: usize) -> Vec<(f64, f64)> {
    v.chunks(channels).map(|c| (f64::from(c[0]), c.get(1).map_or(0.0, |&i| f64::from(i)))).collect()
}

fn flat(v: &[(f64, f64)]) -> Vec<f32> {
    v.iter().flat_map(|&(a, b)| [a as f32, b as f32]).collect()
}

/// One `DFT` node run under `test` (a name of its own: tests run in
/// parallel, each in its own directory).
fn dft_node(test: &str, x: T, length: Option<i64>, axis: i64, attrs: Vec<rlx_onnx::proto::AttributeProto>) -> Vec<f32> {
    let mut inputs = vec![In::Data("x", x)];
    let names: Vec<&str> = match length {
        Some(n) => {
            inputs.push(In::Init("n", i64s(&[], vec![n])));
            vec!["x", "n", "axis"]
        }
        None => vec!["x", "", "axis"],
    };
    inputs.push(In::Init("axis", i64s(&[], vec![axis])));
    let got = run_graph_opset(test, vec![node("DFT", "n", &names, &["out"], attrs)], inputs, &["out"], 20).remove(0);
    match got {
        T::F32(_, v) => v,
        other => panic!("expected f32, got {other:?}"),
    }
}

#[test]
fn dft_matches_the_definition_forward_and_inverse_cut_and_padded() {
    let (rows, len) = (3usize, 7usize);
    for channels in [1usize, 2] {
        let x = values(rows * len * channels, channels as u64);
        for (n, inverse) in [(7usize, false), (5, false), (12, false), (7, true), (9, true)] {
            let attrs = vec![attr_i("inverse", i64::from(inverse))];
            let got = dft_node("dft-cut-pad", f(&[1, rows, len, channels], x.clone()), Some(n as i64), 2, attrs);
            let want = flat(&dft_ref(&pairs(&x, channels), rows, len, n, inverse));
            assert_close(&got, &want, 2e-6, &format!("channels {channels} n {n} inverse {inverse}"));
        }
    }
}

#[test]
fn dft_along_an_inner_axis_moves_it_and_back() {
    // [1, 4, 3, 2]: transform axis 1 (length 4) of each of 3 columns.
    let x = values(24, 9);
    let got = dft_node("dft-axis", f(&[1, 4, 3, 2], x.clone()), None, 1, vec![]);
    let mut columns = Vec::new();
    for c in 0..3 {
        for k in 0..4 {
            columns.push((f64::from(x[(k * 3 + c) * 2]), f64::from(x[(k * 3 + c) * 2 + 1])));
        }
    }
    let per_column = dft_ref(&columns, 3, 4, 4, false);
    let mut want = vec![(0.0, 0.0); 12];
    for c in 0..3 {
        for j in 0..4 {
            want[j * 3 + c] = per_column[c * 4 + j];
        }
    }
    assert_close(&got, &flat(&want), 2e-6, "axis 1");
}

#[test]
fn one_sided_forward_and_inverse_round_trip() {
    // rfft of 8 real samples: 5 bins; irfft of those bins: the samples.
    let x = values(2 * 8, 4);
    let bins = dft_node("dft-rfft", f(&[1, 2, 8, 1], x.clone()), None, 2, vec![attr_i("onesided", 1)]);
    let full = dft_ref(&pairs(&x, 1), 2, 8, 8, false);
    let want: Vec<(f64, f64)> = (0..2).flat_map(|r| full[r * 8..r * 8 + 5].to_vec()).collect();
    assert_close(&bins, &flat(&want), 2e-6, "rfft");
    let back =
        dft_node("dft-irfft", f(&[1, 2, 5, 2], bins), None, 2, vec![attr_i("inverse", 1), attr_i("onesided", 1)]);
    assert_close(&back, &x, 2e-6, "irfft");
}

#[test]
fn stft_frames_windows_and_keeps_half_the_bins() {
    let (length, frame, step) = (20usize, 8usize, 3usize);
    let signal = values(length, 5);
    let window: Vec<f32> = (0..frame).map(|k| 0.5 + k as f32 / 16.0).collect();
    let got = run_graph_opset(
        "stft",
        vec![node("STFT", "n", &["s", "step", "w"], &["out"], vec![])],
        vec![
            In::Data("s", f(&[1, length, 1], signal.clone())),
            In::Init("step", i64s(&[], vec![step as i64])),
            In::Data("w", f(&[frame], window.clone())),
        ],
        &["out"],
        17,
    )
    .remove(0);
    let frames = (length - frame) / step + 1;
    let mut want = Vec::new();
    for t in 0..frames {
        let windowed: Vec<(f64, f64)> =
            (0..frame).map(|k| (f64::from(signal[t * step + k] * window[k]), 0.0)).collect();
        want.extend(dft_ref(&windowed, 1, frame, frame, false)[..frame / 2 + 1].to_vec());
    }
    assert_eq!(got.shape(), &[1, frames, frame / 2 + 1, 2]);
    let T::F32(_, got) = got else { panic!("f32 expected") };
    assert_close(&got, &flat(&want), 2e-6, "stft");
}
