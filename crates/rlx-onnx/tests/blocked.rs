//! The blocked channel layout: the importer runs a chain of convolutions,
//! poolings and residual adds in it with conversions only at the chain's
//! edges, and the model gives the bits of the NCHW import.

use crate::common::*;
use rlx_onnx::ImportOptions;

/// `x` [1, 3, 8, 8] -> Conv 3x3 (16, ReLU) -> depthwise 3x3 -> + the ReLU
/// output -> MaxPool 2x2 -> Conv 1x1 (20) -> GlobalAveragePool -> Flatten
/// -> Gemm (5); the pooled tensor is also a model output, and a grouped
/// (not depthwise) Conv reads `x` too: it stays NCHW.
fn cnn() -> rlx_onnx::proto::ModelProto {
    let pads = || attr_ints("pads", &[1, 1, 1, 1]);
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["c1"], vec![pads()]),
        node("Relu", "r1", &["c1"], &["r1"], vec![]),
        node("Conv", "dw", &["r1", "w2", "b2"], &["d"], vec![pads(), attr_i("group", 16)]),
        node("Add", "res", &["d", "r1"], &["s"], vec![]),
        node("MaxPool", "mp", &["s"], &["p"], vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("strides", &[2, 2])]),
        node("Conv", "pw", &["p", "w3"], &["c3"], vec![]),
        node("GlobalAveragePool", "gap", &["c3"], &["g"], vec![]),
        node("Flatten", "fl", &["g"], &["f"], vec![]),
        node("Gemm", "fc", &["f", "w4", "b4"], &["y"], vec![attr_i("transB", 1)]),
        node("Conv", "grouped", &["r1", "w5"], &["z"], vec![pads(), attr_i("group", 4)]),
    ];
    let inits = vec![
        init_raw("w1", &[16, 3, 3, 3], &values(16 * 27, 1)),
        init_raw("b1", &[16], &values(16, 2)),
        init_raw("w2", &[16, 1, 3, 3], &values(16 * 9, 3)),
        init_raw("b2", &[16], &values(16, 4)),
        init_raw("w3", &[20, 16, 1, 1], &values(20 * 16, 5)),
        init_raw("w4", &[5, 20], &values(100, 6)),
        init_raw("b4", &[5], &values(5, 7)),
        init_raw("w5", &[8, 4, 3, 3], &values(8 * 36, 8)),
    ];
    let outputs = vec![vi("y", &[1, 5]), vi("p", &[1, 16, 4, 4]), vi("z", &[1, 8, 8, 8])];
    model(nodes, inits, vec![vi("x", &[1, 3, 8, 8])], outputs, 17)
}

#[test]
fn a_convolution_chain_changes_layout_only_at_its_edges() {
    let m = cnn();
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    let text = &blocked.sched_text;
    assert_eq!(count_kind(text, "BlockedConv2D"), 3, "{text}");
    assert_eq!(count_kind(text, "Conv2D"), 1, "the grouped convolution stays NCHW: {text}");
    assert_eq!(count_kind(text, "BlockedPool2D"), 2, "{text}");
    // In: nothing (the first convolution reads the 3-channel `x` as NCHW).
    // Out: the ReLU output for the grouped convolution, the pooled output
    // `p` (a model output) and the global pooling (read by the product).
    assert_eq!(count_kind(text, "ToBlocked"), 0, "{text}");
    assert_eq!(count_kind(text, "FromBlocked"), 3, "{text}");
    assert_eq!(text.matches("x_nchw: true").count(), 1, "{text}");
    assert!(text.contains("param   w1.blocked: f32[432] @"), "one output block x 3 x 3 x 3 x 16: {text}");
    assert_eq!(count_kind(&plain.sched_text, "ToBlocked"), 0, "{}", plain.sched_text);
    let x = values(3 * 64, 9);
    let outs = ["y", "p", "z"];
    let got = run("blocked-cnn", &blocked, &[("x", &x)], &outs);
    let want = run("blocked-cnn-nchw", &plain, &[("x", &x)], &outs);
    for (i, name) in outs.iter().enumerate() {
        assert_identical_bits(&got[i], &want[i], &format!("{name}: the blocked kernels give the NCHW bits"));
    }
}

/// Two residual blocks: `Conv` + `Add` + `Relu`, then `Conv` (1x1) + `Add`
/// whose convolution output is also a model output (not fused).
fn residual_blocks() -> rlx_onnx::proto::ModelProto {
    let pads = || attr_ints("pads", &[1, 1, 1, 1]);
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["c1"], vec![pads()]),
        node("Relu", "r1", &["c1"], &["r1"], vec![]),
        node("Conv", "c2", &["r1", "w2", "b2"], &["c2"], vec![pads()]),
        node("Add", "add2", &["r1", "c2"], &["s2"], vec![]),
        node("Relu", "r2", &["s2"], &["r2"], vec![]),
        node("Conv", "c3", &["r2", "w3"], &["c3"], vec![]),
        node("Add", "add3", &["c3", "r2"], &["s3"], vec![]),
        node("Conv", "c4", &["s3", "w4"], &["c4"], vec![]),
        node("Add", "add4", &["c4", "s3"], &["y"], vec![]),
    ];
    let inits = vec![
        init_raw("w1", &[20, 3, 3, 3], &values(20 * 27, 1)),
        init_raw("b1", &[20], &values(20, 2)),
        init_raw("w2", &[20, 20, 3, 3], &values(20 * 180, 3)),
        init_raw("b2", &[20], &values(20, 4)),
        init_raw("w3", &[20, 20, 1, 1], &values(400, 5)),
        init_raw("w4", &[20, 20, 1, 1], &values(400, 6)),
    ];
    let outputs = vec![vi("y", &[1, 20, 6, 7]), vi("c4", &[1, 20, 6, 7])];
    model(nodes, inits, vec![vi("x", &[1, 3, 6, 7])], outputs, 17)
}

#[test]
fn residual_adds_and_their_activation_fold_into_the_convolution() {
    let m = residual_blocks();
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    let text = &blocked.sched_text;
    assert_eq!(count_kind(text, "BlockedConv2D"), 4, "{text}");
    // c2 + Add + Relu and c3 + Add fused; c4 is a model output itself.
    assert_eq!(text.matches("residual: none").count(), 2, "{text}");
    assert_eq!(count_kind(text, "ElementwiseRegion") + count_kind(text, "BinaryFull"), 1, "{text}");
    assert!(text.contains("act: relu, x_nchw: false"), "the ReLU after the add moved into c2: {text}");
    let x = values(3 * 42, 9);
    let outs = ["y", "c4"];
    let got = run("blocked-residual", &blocked, &[("x", &x)], &outs);
    let want = run("blocked-residual-nchw", &plain, &[("x", &x)], &outs);
    for (i, name) in outs.iter().enumerate() {
        assert_identical_bits(&got[i], &want[i], &format!("{name}: fused residuals give the NCHW bits"));
    }
}

/// A 16x16 image through 3x3 `Conv` + `Relu`, 3x3 `Conv` + `Add` (skip) +
/// `Relu`: 16 output tiles each, enough for Winograd.
fn winograd_block() -> rlx_onnx::proto::ModelProto {
    let pads = || attr_ints("pads", &[1, 1, 1, 1]);
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["c1"], vec![pads()]),
        node("Relu", "r1", &["c1"], &["r1"], vec![]),
        node("Conv", "c2", &["r1", "w2", "b2"], &["c2"], vec![pads()]),
        node("Add", "add", &["c2", "x"], &["s"], vec![]),
        node("Relu", "r2", &["s"], &["y"], vec![]),
    ];
    let inits = vec![
        init_raw("w1", &[24, 24, 3, 3], &values(24 * 24 * 9, 1)),
        init_raw("b1", &[24], &values(24, 2)),
        init_raw("w2", &[24, 24, 3, 3], &values(24 * 24 * 9, 3)),
        init_raw("b2", &[24], &values(24, 4)),
    ];
    model(nodes, inits, vec![vi("x", &[1, 24, 16, 16])], vec![vi("y", &[1, 24, 16, 16])], 17)
}

#[test]
fn stride_one_3x3_convolutions_with_enough_tiles_run_by_winograd() {
    let m = winograd_block();
    let fast = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.winograd = false;
    let direct = import_model(&m, &opts).expect("import, no Winograd");
    let text = &fast.sched_text;
    assert_eq!(count_kind(text, "WinogradConv2D"), 2, "{text}");
    assert_eq!(count_kind(text, "BlockedConv2D"), 0, "{text}");
    assert_eq!(text.matches("residual: x.blocked").count(), 1, "the skip add fused: {text}");
    assert!(text.contains("param   w1.winograd: f32[27648] @"), "36 points x 2 blocks x 24 x 16: {text}");
    assert_eq!(count_kind(&direct.sched_text, "WinogradConv2D"), 0, "{}", direct.sched_text);
    assert_eq!(count_kind(&direct.sched_text, "BlockedConv2D"), 2, "{}", direct.sched_text);
    let x = values(24 * 256, 9);
    let got = run("winograd-block", &fast, &[("x", &x)], &["y"]);
    let want = run("winograd-block-direct", &direct, &[("x", &x)], &["y"]);
    // Winograd rounds differently: its error is bounded relative to its
    // own scale (`docs/kernels/conv-winograd.md`), about 1e-5 of the
    // largest output here after two layers; a wiring mistake (layout,
    // residual, activation) would be of the outputs' own size.
    let scale = want[0].iter().fold(1f32, |m, v| m.max(v.abs()));
    let worst = got[0].iter().zip(&want[0]).fold(0f32, |m, (g, w)| m.max((g - w).abs()));
    assert!(worst <= 1e-4 * scale, "largest difference {worst} against outputs up to {scale}");
}

/// A squeeze-and-excitation block over 20 channels (one full block and a
/// partial one): `x` -> Conv 3x3 (20) -> `c`; `s = HardSigmoid(Conv 1x1
/// (Relu (Conv 1x1 (GlobalAveragePool(c)))))`; `m = c * s`; then
/// per-channel constants on either side, `a = (m * k) + b` and
/// `d = b - a` (the per-channel operand on the left of a
/// non-commutative op), then Conv 1x1 (8). Batch 2, so the computed
/// scale differs per image.
fn squeeze_excitation() -> rlx_onnx::proto::ModelProto {
    let nodes = vec![
        node("Conv", "c", &["x", "w1", "b1"], &["c"], vec![attr_ints("pads", &[1, 1, 1, 1])]),
        node("GlobalAveragePool", "gap", &["c"], &["g"], vec![]),
        node("Conv", "squeeze", &["g", "w2", "b2"], &["q"], vec![]),
        node("Relu", "r", &["q"], &["rq"], vec![]),
        node("Conv", "excite", &["rq", "w3", "b3"], &["e"], vec![]),
        node("HardSigmoid", "hs", &["e"], &["s"], vec![]),
        node("Mul", "scale", &["c", "s"], &["m"], vec![]),
        node("Mul", "k", &["m", "k"], &["mk"], vec![]),
        node("Add", "b", &["mk", "b"], &["a"], vec![]),
        node("Sub", "sub", &["b", "a"], &["d"], vec![]),
        node("Conv", "out", &["d", "w4"], &["y"], vec![]),
    ];
    let inits = vec![
        init_raw("w1", &[20, 3, 3, 3], &values(20 * 27, 21)),
        init_raw("b1", &[20], &values(20, 22)),
        init_raw("w2", &[5, 20, 1, 1], &values(100, 23)),
        init_raw("b2", &[5], &values(5, 24)),
        init_raw("w3", &[20, 5, 1, 1], &values(100, 25)),
        init_raw("b3", &[20], &values(20, 26)),
        init_raw("k", &[1, 20, 1, 1], &values(20, 27)),
        init_raw("b", &[20, 1, 1], &values(20, 28)),
        init_raw("w4", &[8, 20, 1, 1], &values(160, 29)),
    ];
    model(nodes, inits, vec![vi("x", &[2, 3, 6, 5])], vec![vi("y", &[2, 8, 6, 5])], 17)
}

#[test]
fn per_channel_scales_and_constants_stay_in_the_blocked_layout() {
    let m = squeeze_excitation();
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    let text = &blocked.sched_text;
    // The computed scale and the per-channel constants are read blocked:
    // the only conversion is the output's.
    assert_eq!(count_kind(text, "ToBlocked"), 0, "{text}");
    assert_eq!(count_kind(text, "FromBlocked"), 1, "{text}");
    assert_eq!(text.matches("out_dims_bcast: [2, 2, 30, 16]").count(), 4, "n, cb, pixels, lanes: {text}");
    let x = values(2 * 3 * 30, 30);
    let got = run("blocked-se", &blocked, &[("x", &x)], &["y"]);
    let want = run("blocked-se-nchw", &plain, &[("x", &x)], &["y"]);
    assert_identical_bits(&got[0], &want[0], "the blocked binaries give the NCHW bits");
}

#[test]
fn a_channel_half_read_by_a_convolution_converts_under_a_name_of_its_own() {
    // ShuffleNet's channel split: the second half of the channels is a
    // view (`x+offset`) that a blocked convolution reads.
    let nodes = vec![
        node("Relu", "r", &["x"], &["rx"], vec![]),
        node("Split", "split", &["rx", "halves"], &["a", "b"], vec![attr_i("axis", 1)]),
        node("Conv", "c", &["b", "w"], &["y"], vec![]),
    ];
    let inits = vec![init_i64("halves", &[2], &[16, 16]), init_raw("w", &[8, 16, 1, 1], &values(128, 41))];
    let m =
        model(nodes, inits, vec![vi("x", &[1, 32, 3, 3])], vec![vi("y", &[1, 8, 3, 3]), vi("a", &[1, 16, 3, 3])], 13);
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    assert_eq!(count_kind(&blocked.sched_text, "BlockedConv2D"), 1, "{}", blocked.sched_text);
    let x = values(32 * 9, 42);
    let got = run("blocked-half", &blocked, &[("x", &x)], &["y", "a"]);
    let want = run("blocked-half-nchw", &plain, &[("x", &x)], &["y", "a"]);
    assert_identical_bits(&got[0], &want[0], "y");
    assert_identical_bits(&got[1], &want[1], "a");
}

/// EfficientNet-Lite's TF-style "same" padding where the pad cannot fold
/// into the convolution after it: `x` [1, 3, 12, 12] -> Conv 3x3 (20,
/// ReLU) -> Pad reflect (0, 0) before, (1, 1) after -> depthwise 3x3
/// stride 2 -> Pad zero (0, 1) on the width, read by a 3x3 stride-2
/// Conv (8) and by an `Add` of it to itself -> Conv 1x1 (8). 20 channels:
/// one full block and four lanes of a second.
fn unfoldable_pads() -> rlx_onnx::proto::ModelProto {
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["c1"], vec![attr_ints("pads", &[1, 1, 1, 1])]),
        node("Relu", "r1", &["c1"], &["r1"], vec![]),
        node("Pad", "same1", &["r1", "pads1"], &["p1"], vec![attr_s("mode", "reflect")]),
        node("Conv", "dw", &["p1", "w2", "b2"], &["d"], vec![attr_i("group", 20), attr_ints("strides", &[2, 2])]),
        node("Pad", "same2", &["d", "pads2"], &["p2"], vec![]),
        node("Conv", "c3", &["p2", "w3"], &["y"], vec![attr_ints("strides", &[2, 2])]),
        node("Add", "twice", &["p2", "p2"], &["a"], vec![]),
        node("Conv", "c4", &["a", "w4"], &["z"], vec![]),
    ];
    let inits = vec![
        init_raw("w1", &[20, 3, 3, 3], &values(20 * 27, 51)),
        init_raw("b1", &[20], &values(20, 52)),
        init_i64("pads1", &[8], &[0, 0, 0, 0, 0, 0, 1, 1]),
        init_raw("w2", &[20, 1, 3, 3], &values(20 * 9, 53)),
        init_raw("b2", &[20], &values(20, 54)),
        init_i64("pads2", &[8], &[0, 0, 0, 0, 0, 0, 0, 1]),
        init_raw("w3", &[8, 20, 3, 3], &values(8 * 180, 55)),
        init_raw("w4", &[8, 20, 1, 1], &values(160, 56)),
    ];
    let outputs = vec![vi("y", &[1, 8, 2, 3]), vi("z", &[1, 8, 6, 7])];
    model(nodes, inits, vec![vi("x", &[1, 3, 12, 12])], outputs, 17)
}

#[test]
fn spatial_pads_of_blocked_tensors_stay_blocked() {
    let m = unfoldable_pads();
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    let text = &blocked.sched_text;
    assert_eq!(count_kind(text, "BlockedConv2D"), 4, "{text}");
    assert_eq!(count_kind(text, "Concat"), 0, "{text}");
    // Both pads run on the blocked forms `[1, 2, h, w, 16]`; the only
    // conversions are the two outputs'.
    assert_eq!(count_kind(text, "Pad"), 2, "{text}");
    assert!(
        text.contains("dims: [1, 2, 12, 12, 16], before: [0, 0, 0, 0, 0], after: [0, 0, 1, 1, 0], mode: reflect"),
        "{text}"
    );
    assert!(
        text.contains("dims: [1, 2, 6, 6, 16], before: [0, 0, 0, 0, 0], after: [0, 0, 0, 1, 0], mode: constant"),
        "{text}"
    );
    assert_eq!(count_kind(text, "ToBlocked"), 0, "{text}");
    assert_eq!(count_kind(text, "FromBlocked"), 2, "{text}");
    assert_eq!(count_kind(&plain.sched_text, "Pad"), 2, "{}", plain.sched_text);
    let x = values(3 * 144, 57);
    let outs = ["y", "z"];
    let got = run("blocked-pads", &blocked, &[("x", &x)], &outs);
    let want = run("blocked-pads-nchw", &plain, &[("x", &x)], &outs);
    for (i, name) in outs.iter().enumerate() {
        assert_identical_bits(&got[i], &want[i], &format!("{name}: a blocked pad gives the NCHW bits"));
    }
}

#[test]
fn a_pad_of_the_channels_reads_the_nchw_form() {
    // Conv (16) -> Pad 4 zero channels after -> Conv 1x1: the pad cannot
    // run on blocks, so the tensor converts out before it and back after.
    let nodes = vec![
        node("Conv", "c1", &["x", "w1"], &["c1"], vec![attr_ints("pads", &[1, 1, 1, 1])]),
        node("Pad", "grow", &["c1", "pads"], &["p"], vec![]),
        node("Conv", "c2", &["p", "w2"], &["y"], vec![]),
    ];
    let inits = vec![
        init_raw("w1", &[16, 3, 3, 3], &values(16 * 27, 61)),
        init_i64("pads", &[8], &[0, 0, 0, 0, 0, 4, 0, 0]),
        init_raw("w2", &[8, 20, 1, 1], &values(160, 62)),
    ];
    let m = model(nodes, inits, vec![vi("x", &[1, 3, 5, 5])], vec![vi("y", &[1, 8, 5, 5])], 17);
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let text = &blocked.sched_text;
    assert!(text.contains("dims: [1, 16, 5, 5], before: [0, 0, 0, 0], after: [0, 4, 0, 0], mode: constant"), "{text}");
    assert_eq!(count_kind(text, "ToBlocked"), 1, "{text}");
    assert_eq!(count_kind(text, "FromBlocked"), 2, "{text}");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    let x = values(75, 63);
    let got = run("blocked-channel-pad", &blocked, &[("x", &x)], &["y"]);
    let want = run("blocked-channel-pad-nchw", &plain, &[("x", &x)], &["y"]);
    assert_identical_bits(&got[0], &want[0], "a channel pad gives the NCHW bits");
}

/// ConvNeXt's channels-last detour between two convolutions: `Conv` ->
/// `Transpose` to NHWC -> `LayerNormalization` over channels -> `MatMul`
/// -> `Transpose` back -> depthwise `Conv`.
fn channels_last_block() -> rlx_onnx::proto::ModelProto {
    let pads = || attr_ints("pads", &[1, 1, 1, 1]);
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["c1"], vec![pads()]),
        node("Transpose", "to_nhwc", &["c1"], &["t1"], vec![attr_ints("perm", &[0, 2, 3, 1])]),
        node("LayerNormalization", "ln", &["t1", "g", "beta"], &["n1"], vec![attr_i("axis", -1)]),
        node("MatMul", "mm", &["n1", "w2"], &["m1"], vec![]),
        node("Transpose", "to_nchw", &["m1"], &["t2"], vec![attr_ints("perm", &[0, 3, 1, 2])]),
        node("Conv", "dw", &["t2", "w3"], &["y"], vec![pads(), attr_i("group", 32)]),
    ];
    let inits = vec![
        init_raw("w1", &[32, 3, 3, 3], &values(32 * 27, 1)),
        init_raw("b1", &[32], &values(32, 2)),
        init_raw("g", &[32], &values(32, 3)),
        init_raw("beta", &[32], &values(32, 4)),
        init_raw("w2", &[32, 32], &values(32 * 32, 5)),
        init_raw("w3", &[32, 1, 3, 3], &values(32 * 9, 6)),
    ];
    model(nodes, inits, vec![vi("x", &[1, 3, 6, 5])], vec![vi("y", &[1, 32, 6, 5])], 17)
}

#[test]
fn layout_conversions_next_to_a_transpose_become_one_strided_read() {
    let m = channels_last_block();
    let blocked = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import, blocked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.blocked = false;
    let plain = import_model(&m, &opts).expect("import, NCHW");
    let text = &blocked.sched_text;
    // Out of the blocked layout to NHWC and back in: one transpose each
    // way, reading or writing the blocked tensor; only the model output
    // converts.
    assert_eq!(count_kind(text, "BlockedConv2D"), 2, "{text}");
    assert_eq!(count_kind(text, "Transpose"), 2, "{text}");
    assert_eq!(count_kind(text, "ToBlocked"), 0, "{text}");
    assert_eq!(count_kind(text, "FromBlocked"), 1, "{text}");
    assert_eq!(blocked.report.layout_conversions, 1);
    let x = values(3 * 30, 9);
    let got = run("blocked-channels-last", &blocked, &[("x", &x)], &["y"]);
    let want = run("blocked-channels-last-nchw", &plain, &[("x", &x)], &["y"]);
    assert_identical_bits(&got[0], &want[0], "the composed reads give the NCHW bits");
}
