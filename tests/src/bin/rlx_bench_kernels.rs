//! `rlx-bench-kernels`: one line per hot kernel family with its achieved
//! GB/s or GFLOP/s next to this machine's memcpy and sgemm figures,
//! measured in the same run. Run it with `cargo xtask bench-kernels`.

use std::time::{Duration, Instant};

use rlx_runtime::kernels::{activation, attention, conv, elementwise, movement, norm, reduce, softmax};
use rlx_sched::{ActKind, MaskKind, ReduceOp};

/// Median time of `f` over enough runs to fill ~0.2 s.
fn time(mut f: impl FnMut()) -> Duration {
    f();
    let once = {
        let t = Instant::now();
        f();
        t.elapsed().max(Duration::from_nanos(100))
    };
    let runs = (0.2 / once.as_secs_f64()).clamp(5.0, 2000.0) as usize;
    let mut v: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    v[v.len() / 2]
}

fn gbs(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn gflops(flops: f64, d: Duration) -> f64 {
    flops / d.as_secs_f64() / 1e9
}

fn main() {
    let n = 1 << 22; // 16 MiB of f32: well past the caches
    let src: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.01 - 0.4).collect();
    let src2: Vec<f32> = (0..n).map(|i| (i % 89) as f32 * 0.02 - 0.9).collect();
    let mut dst = vec![0.0f32; n];
    let par = rlx_sched::plan::parallel(n);

    // SAFETY (every block below): buffers are sized for the calls made.
    let memcpy = time(|| unsafe { movement::copy_f32(src.as_ptr(), dst.as_mut_ptr(), n, par) });
    let copy_gbs = gbs(2 * 4 * n, memcpy);
    let (m, k, nn) = (256, 256, 256);
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * nn];
    let mut c = vec![0.0f32; m * nn];
    let sg = time(|| unsafe {
        rlx_runtime::blas::sgemm(false, false, m, nn, k, 1.0, a.as_ptr(), k, b.as_ptr(), nn, 0.0, c.as_mut_ptr(), nn)
    });
    let sgemm = gflops(2.0 * (m * k * nn) as f64, sg);

    println!("threads {}, BLAS {}", rlx_runtime::threads::num_threads(), rlx_runtime::blas::backend_name());
    println!("{:<34} {:>10} {:>14}", "kernel", "achieved", "vs reference");
    println!("{:<34} {:>7.1} GB/s {:>14}", "copy_f32 (memcpy, 16 MiB)", copy_gbs, "1.00 of memcpy");
    println!("{:<34} {:>7.1} GF/s {:>14}", "sgemm 256x256x256", sgemm, "1.00 of sgemm");
    let mem = |name: &str, bytes: usize, d: Duration| {
        let g = gbs(bytes, d);
        println!("{:<34} {:>7.1} GB/s {:>9.2} of memcpy", name, g, g / copy_gbs);
    };
    let fl = |name: &str, flops: f64, d: Duration| {
        let g = gflops(flops, d);
        println!("{:<34} {:>7.1} GF/s {:>9.2} of sgemm", name, g, g / sgemm);
    };

    let d = time(|| unsafe {
        elementwise::binary_same_f32::<elementwise::ops::Add>(src.as_ptr(), src2.as_ptr(), dst.as_mut_ptr(), n, par)
    });
    mem("binary add (same shape)", 3 * 4 * n, d);
    let d = time(|| unsafe { activation::act_f32_slice(ActKind::Relu, src.as_ptr(), dst.as_mut_ptr(), n, par) });
    mem("relu", 2 * 4 * n, d);
    let small = 1 << 18;
    let d = time(|| unsafe { activation::act_f32_slice(ActKind::Gelu, src.as_ptr(), dst.as_mut_ptr(), small, false) });
    mem("gelu (exact, 1 MiB)", 2 * 4 * small, d);
    let (rows, cols) = (n / 1024, 1024);
    let d = time(|| unsafe { softmax::softmax_f32(src.as_ptr(), dst.as_mut_ptr(), rows, cols, par) });
    mem("softmax rows of 1024", 2 * 4 * n, d);
    let g = vec![1.0f32; 1024];
    let d = time(|| unsafe {
        norm::layer_norm_f32(src.as_ptr(), g.as_ptr(), None, dst.as_mut_ptr(), rows, cols, 1e-5, par)
    });
    mem("layer_norm rows of 1024", 2 * 4 * n, d);
    let d = time(|| unsafe {
        movement::transpose_batched_swap::<u32>(
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            &[],
            &[],
            2048,
            2048,
            2048,
            par,
        )
    });
    mem("transpose 2048x2048 f32", 2 * 4 * n, d);
    let d = time(|| unsafe { reduce::reduce_f32(src.as_ptr(), dst.as_mut_ptr(), rows, cols, 1, ReduceOp::Sum, par) });
    mem("reduce sum rows of 1024", 4 * n, d);
    // TF "same" padding of a blocked 64-channel 112x112 tensor: one more
    // row and column, the lanes moved as 16-element units.
    let (dims, before, after) = ([1, 4, 112, 112, 16], [0, 0, 0, 0, 0], [0, 0, 1, 1, 0]);
    let plan = rlx_sched::plan::canonical_pad(&dims, &before, &after);
    let (pad_in, pad_out) = (4 * 112 * 112 * 16, 4 * 113 * 113 * 16);
    let ppar = rlx_sched::plan::parallel(pad_out);
    let d = time(|| unsafe {
        movement::pad::<u32>(
            src.as_ptr().cast(),
            std::ptr::null(),
            dst.as_mut_ptr().cast(),
            &plan.dims,
            &plan.before,
            &plan.after,
            plan.unit,
            rlx_sched::PadMode::Constant,
            ppar,
        )
    });
    mem("pad blocked 64ch 112x112 (+1, +1)", 4 * (pad_in + pad_out), d);
    let (dims, before, after) = ([1, 64, 112, 112], [0, 0, 0, 0], [0, 0, 1, 1]);
    let plan = rlx_sched::plan::canonical_pad(&dims, &before, &after);
    let d = time(|| unsafe {
        movement::pad::<u32>(
            src.as_ptr().cast(),
            std::ptr::null(),
            dst.as_mut_ptr().cast(),
            &plan.dims,
            &plan.before,
            &plan.after,
            plan.unit,
            rlx_sched::PadMode::Constant,
            ppar,
        )
    });
    mem("pad NCHW 64ch 112x112 (+1, +1)", 4 * (pad_in + pad_out), d);

    let shape = attention::AttentionShape {
        batch: 1,
        seq: 128,
        kv_seq: 128,
        heads: 4,
        kv_heads: 4,
        head_dim: 64,
        v_head_dim: 64,
        q_row_stride: 256,
        k_row_stride: 256,
        v_row_stride: 256,
        bhsd: false,
    };
    let scores = attention::AttentionScores {
        mask_kind: MaskKind::None,
        scale: 0.125,
        softcap: 0.0,
        mask_threshold: 0.5,
        mask_neg_inf: -1e9,
        score_skip: 0.0,
    };
    // The plan's size: the scores and, on the GEMM path, K^T and V packed.
    let mut scratch = vec![0.0f32; rlx_sched::plan::attention_scratch_bytes(&shape) / 4];
    let path = rlx_sched::plan::attention_path(&shape);
    let apar = rlx_sched::plan::parallel(4 * 128 * 128);
    let d = time(|| unsafe {
        attention::attention_f32(
            src.as_ptr(),
            src2.as_ptr(),
            src.as_ptr(),
            std::ptr::null(),
            dst.as_mut_ptr(),
            &shape,
            &scores,
            path,
            scratch.as_mut_ptr(),
            apar,
        )
    });
    fl("attention seq 128, 4 heads of 64", 4.0 * 2.0 * 2.0 * 128.0 * 128.0 * 64.0, d);

    let cs = conv::Conv2dShape {
        n: 1,
        c_in: 32,
        h: 32,
        w_in: 32,
        c_out: 64,
        h_out: 32,
        w_out: 32,
        kh: 3,
        kw: 3,
        sh: 1,
        sw: 1,
        ph: 1,
        pw: 1,
        dh: 1,
        dw: 1,
        groups: 1,
    };
    let w = vec![0.01f32; 64 * 32 * 9];
    let mut col = vec![0.0f32; conv::conv2d_scratch_bytes(&cs, conv::conv2d_path(&cs)) / 4];
    let cpar = rlx_sched::plan::parallel(64 * 32 * 32);
    let d = time(|| unsafe {
        conv::conv2d_f32(
            src.as_ptr(),
            w.as_ptr(),
            std::ptr::null(),
            dst.as_mut_ptr(),
            &cs,
            conv::conv2d_path(&cs),
            ActKind::Identity,
            col.as_mut_ptr(),
            cpar,
        )
    });
    fl("conv2d 3x3 32->64 on 32x32", 2.0 * 64.0 * 32.0 * 9.0 * 32.0 * 32.0, d);
    let cs = conv::Conv2dShape { c_in: 64, h: 56, w_in: 56, h_out: 56, w_out: 56, ..cs };
    let w = vec![0.01f32; 64 * 64 * 9];
    let mut col = vec![0.0f32; conv::conv2d_scratch_bytes(&cs, conv::conv2d_path(&cs)) / 4];
    let cpar = rlx_sched::plan::parallel(64 * 56 * 56);
    let d = time(|| unsafe {
        conv::conv2d_f32(
            src.as_ptr(),
            w.as_ptr(),
            std::ptr::null(),
            dst.as_mut_ptr(),
            &cs,
            conv::conv2d_path(&cs),
            ActKind::Identity,
            col.as_mut_ptr(),
            cpar,
        )
    });
    fl("conv2d 3x3 64->64 on 56x56", 2.0 * 64.0 * 64.0 * 9.0 * 56.0 * 56.0, d);
    for (name, c, hw, k, stride) in
        [("depthwise 5x5 672 on 14x14", 672, 14, 5, 1), ("depthwise 3x3/2 96 on 112x112", 96, 112, 3, 2)]
    {
        let out_hw = hw / stride;
        let ds = conv::Conv2dShape {
            n: 1,
            c_in: c,
            h: hw,
            w_in: hw,
            c_out: c,
            h_out: out_hw,
            w_out: out_hw,
            kh: k,
            kw: k,
            sh: stride,
            sw: stride,
            ph: k / 2,
            pw: k / 2,
            dh: 1,
            dw: 1,
            groups: c,
        };
        let w = vec![0.01f32; c * k * k];
        let dpar = rlx_sched::plan::parallel(c * out_hw * out_hw);
        let d = time(|| unsafe {
            conv::conv2d_f32(
                src.as_ptr(),
                w.as_ptr(),
                std::ptr::null(),
                dst.as_mut_ptr(),
                &ds,
                conv::ConvPath::Depthwise,
                ActKind::Identity,
                std::ptr::null_mut(),
                dpar,
            )
        });
        fl(name, 2.0 * (c * out_hw * out_hw * k * k) as f64, d);
    }

    gemm_table();
    narrow_weights_table();
    conv_gemm_table();
}

/// A decode step's product (one row) and a prefill chunk's (16 rows) with
/// f32, f16 and Q8_0 weights, on one thread. The weights are 75 MB even
/// in 8 bits, past a 32 MiB last-level cache: with one row the weights'
/// bytes are the time, so the column to read is the weight bytes streamed
/// per second; with 16, GFLOP/s.
fn narrow_weights_table() {
    use rlx_runtime::kernels::gemm;
    let (k, n) = (4096, 16384);
    let b: Vec<f32> = (0..k * n).map(|i| (i % 251) as f32 * 0.004 - 0.5).collect();
    let w32 = rlx_sched::pack::pack_b(&b, k, n, false);
    let w16: Vec<u16> = w32.iter().map(|&x| rlx_runtime::half::f16::from_f32(x).to_bits()).collect();
    // Any blocks do: the time depends on the sizes alone.
    let w8 = rlx_sched::q8::pack_q8_blocks(k, n, |j, blk| {
        (0.004, std::array::from_fn(|i| ((blk * 32 + i + j) % 251) as u8 as i8))
    });
    drop(b);
    let id = ActKind::Identity;
    for m in [1, 16] {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 * 0.1 - 0.6).collect();
        let mut c = vec![0.0f32; m * n];
        println!();
        println!("product {m}x{k}x{n}, one thread             weights      time  weight GB/s     GF/s");
        // SAFETY (each call): the buffers hold the product's extents.
        let rows: [(&str, usize, Duration); 3] = [
            (
                "f32 (PackedGemm)",
                w32.len() * 4,
                time(|| unsafe {
                    gemm::packed_gemm_f32(a.as_ptr(), w32.as_ptr(), None, c.as_mut_ptr(), m, k, n, id, false)
                }),
            ),
            (
                "f16 (PackedGemmHalf)",
                w16.len() * 2,
                time(|| unsafe {
                    gemm::packed_gemm_half(a.as_ptr(), w16.as_ptr(), None, c.as_mut_ptr(), m, k, n, id, false, false)
                }),
            ),
            (
                "q8_0 (PackedGemmQ8)",
                w8.len(),
                time(|| unsafe {
                    gemm::packed_gemm_q8(a.as_ptr(), w8.as_ptr(), None, c.as_mut_ptr(), m, k, n, id, false)
                }),
            ),
        ];
        for (name, bytes, d) in rows {
            println!(
                "{name:<38} {:>7.1} MB {:>7.2} ms {:>10.1} {:>8.1}",
                bytes as f64 / 1e6,
                d.as_secs_f64() * 1e3,
                gbs(bytes, d),
                gflops(2.0 * (m * k * n) as f64, d)
            );
        }
    }
}

/// The models' GEMM shapes (`m x k x n`), each as `FusedMmBiasAct` runs it
/// (bias + activation over the BLAS backend) and as `PackedGemm` does
/// (own microkernel, weights prepacked, epilogue fused), same run.
fn gemm_table() {
    use rlx_runtime::kernels::gemm;
    let shapes: &[(&str, usize, usize, usize, ActKind)] = &[
        ("MiniLM qkv/out 128x384x384", 128, 384, 384, ActKind::Identity),
        ("MiniLM ffn1 128x384x1536 gelu", 128, 384, 1536, ActKind::Gelu),
        ("MiniLM ffn2 128x1536x384", 128, 1536, 384, ActKind::Identity),
        ("ViT-Tiny qkv 197x192x576", 197, 192, 576, ActKind::Identity),
        ("ViT-Tiny fc1 197x192x768 gelu", 197, 192, 768, ActKind::Gelu),
        ("ViT-Tiny fc2 197x768x192", 197, 768, 192, ActKind::Identity),
        ("ViT-B/32 qkv 50x768x2304", 50, 768, 2304, ActKind::Identity),
        ("GPT-2 fc 128x768x3072 gelu", 128, 768, 3072, ActKind::Gelu),
        ("bert_tiny 12x32x32", 12, 32, 32, ActKind::Identity),
        ("LeNet fc 1x400x120 relu", 1, 400, 120, ActKind::Relu),
        ("GEMV 1x384x1536", 1, 384, 1536, ActKind::Identity),
        ("square 256x256x256", 256, 256, 256, ActKind::Identity),
        ("conv-like 64x576x3136", 64, 576, 3136, ActKind::Identity),
        ("conv-like 128x1152x784", 128, 1152, 784, ActKind::Identity),
    ];
    let isa = gemm::tiled_gemm_isa();
    let threads = rlx_runtime::threads::num_threads();
    let peak = peak::measured_gflops(isa, threads);
    println!();
    println!("GEMM (c = act(a @ w + bias)); packed microkernel: {isa}");
    match peak {
        Some(p) => {
            println!("FMA peak ({isa}, {threads} thread(s)): {p:.1} GF/s measured (independent register FMA chains)");
            if let (Some(ghz), Some(lanes)) = (peak::nominal_ghz(), peak::lanes(isa)) {
                let two_units = ghz * 2.0 * lanes as f64 * 2.0 * threads as f64;
                println!(
                    "  theoretical at the nominal {ghz:.2} GHz with 2 FMA units of {lanes} lanes: {two_units:.1} GF/s \
                     (measured / that: {:.2}; above 1 the core runs faster than nominal)",
                    p / two_units
                );
            }
        }
        None => println!("FMA peak: not measured for {isa}"),
    }
    println!(
        "{:<34} {:>12} {:>12} {:>8} {:>8} {:>8}",
        "shape", "BLAS GF/s", "packed GF/s", "ratio", "BLAS %pk", "pack %pk"
    );
    let mut best = 0.0f64;
    for &(name, m, k, n, act) in shapes {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 * 0.05 - 0.3).collect();
        let w: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.03 - 0.1).collect();
        let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.001).collect();
        let packed = rlx_sched::pack::pack_b(&w, k, n, false);
        let mut c = vec![0.0f32; m * n];
        let par = rlx_sched::plan::packed_gemm_parallel(m, k, n);
        let blas_par = rlx_sched::plan::parallel(m * n);
        let flops = 2.0 * (m * k * n) as f64;
        // SAFETY: buffers are sized for the calls made.
        let blas = time(|| unsafe {
            gemm::fused_mm_bias_act_f32(a.as_ptr(), w.as_ptr(), bias.as_ptr(), c.as_mut_ptr(), m, k, n, act, blas_par)
        });
        // SAFETY: as above; `packed` holds the panels of `w`.
        let own = time(|| unsafe {
            gemm::packed_gemm_f32(a.as_ptr(), packed.as_ptr(), Some(bias.as_ptr()), c.as_mut_ptr(), m, k, n, act, par)
        });
        let (gb, gp) = (gflops(flops, blas), gflops(flops, own));
        let pct = |g: f64| peak.map_or("-".to_string(), |p| format!("{:.0}%", 100.0 * g / p));
        println!("{:<34} {:>12.1} {:>12.1} {:>8.2} {:>8} {:>8}", name, gb, gp, gp / gb, pct(gb), pct(gp));
        best = best.max(gb).max(gp);
    }
    if let Some(p) = peak.filter(|&p| best > p) {
        println!(
            "note: a product reached {best:.1} GF/s, above the measured peak {p:.1}: the chains did not measure \
             this core's peak here, so the percentages overstate"
        );
    }
}

/// A convolution of one image: `c_in -> c_out` channels, a square
/// `size` input, a square `k` window at stride `stride`, padding `pad`.
fn conv_shape(c_in: usize, c_out: usize, size: usize, k: usize, stride: usize, pad: usize) -> conv::Conv2dShape {
    let out = (size + 2 * pad - k) / stride + 1;
    conv::Conv2dShape {
        n: 1,
        c_in,
        h: size,
        w_in: size,
        c_out,
        h_out: out,
        w_out: out,
        kh: k,
        kw: k,
        sh: stride,
        sw: stride,
        ph: pad,
        pw: pad,
        dh: 1,
        dw: 1,
        groups: 1,
    }
}

/// Convolution-shaped products (`c_out x c_in*kh*kw x h_out*w_out`: the
/// weights on the left, the patches on the right, a bias per row): BLAS
/// `sgemm` + bias pass (how `Conv2D` ran before, the unfolding not
/// counted) against packing the patches + the tiled GEMM with the bias
/// fused (the NCHW `Conv2D` path), and against the kernel the importer
/// runs the convolution on (`BlockedConv2D`, or `WinogradConv2D` where
/// `winograd_pays`; GF/s of the direct convolution's multiply-adds),
/// same run.
fn conv_gemm_table() {
    use rlx_runtime::kernels::gemm;
    let shapes: &[(&str, conv::Conv2dShape)] = &[
        ("ResNet stem 64x147x12544", conv_shape(3, 64, 224, 7, 2, 3)),
        ("ResNet 3x3 64x576x3136", conv_shape(64, 64, 56, 3, 1, 1)),
        ("ResNet 3x3 128x1152x784", conv_shape(128, 128, 28, 3, 1, 1)),
        ("ResNet 3x3 256x2304x196", conv_shape(256, 256, 14, 3, 1, 1)),
        ("ResNet 3x3 512x4608x49", conv_shape(512, 512, 7, 3, 1, 1)),
        ("1x1 expand 96x16x12544", conv_shape(16, 96, 112, 1, 1, 0)),
        ("1x1 project 24x144x3136", conv_shape(144, 24, 56, 1, 1, 0)),
        ("LeNet conv2 16x150x100", conv_shape(6, 16, 14, 5, 1, 0)),
    ];
    println!();
    println!("Conv GEMM (c = w @ patches + bias[row]); tiled microkernel: {}", gemm::tiled_gemm_isa());
    println!(
        "{:<34} {:>12} {:>12} {:>8} {:>22} {:>8}",
        "shape", "BLAS GF/s", "tiled GF/s", "ratio", "model kernel GF/s", "ratio"
    );
    for &(name, s) in shapes {
        let (m, k, n) = (s.c_out, s.c_in * s.kh * s.kw, s.h_out * s.w_out);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 * 0.05 - 0.3).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.03 - 0.1).collect();
        let bias: Vec<f32> = (0..m).map(|i| i as f32 * 0.001).collect();
        let mut c = vec![0.0f32; m * n];
        let par = rlx_sched::plan::parallel(m * n);
        let flops = 2.0 * (m * k * n) as f64;
        // SAFETY: buffers are sized for the calls made.
        let blas = time(|| unsafe {
            rlx_runtime::blas::sgemm(false, false, m, n, k, 1.0, a.as_ptr(), k, b.as_ptr(), n, 0.0, c.as_mut_ptr(), n);
            for (row, bv) in c.chunks_exact_mut(n).zip(&bias) {
                row.iter_mut().for_each(|v| *v += bv);
            }
        });
        let mut packed = vec![0.0f32; rlx_sched::pack::packed_len(k, n).unwrap()];
        // SAFETY: as above. The tiled side includes packing the patches
        // (what a 1x1 convolution does; an unfolding writes them packed
        // at no extra cost).
        let own = time(|| unsafe {
            gemm::pack_rows_f32(b.as_ptr(), n, k, n, packed.as_mut_ptr(), par);
            gemm::packed_gemm_row_bias_f32(
                a.as_ptr(),
                k,
                packed.as_ptr(),
                Some(bias.as_ptr()),
                c.as_mut_ptr(),
                n,
                (m, k, n),
                par,
            )
        });
        let (kernel, model) = time_model_conv(&s, &a, &bias);
        let (gb, gt, gm) = (gflops(flops, blas), gflops(flops, own), gflops(flops, model));
        println!("{:<34} {:>12.1} {:>12.1} {:>8.2} {:>9} {:>12.1} {:>8.2}", name, gb, gt, gt / gb, kernel, gm, gm / gb);
    }
}

/// Times `s` on the kernel the importer picks for it, `w` its filter
/// (`c_out x c_in*kh*kw`) and `bias` per output channel, the input in the
/// layout that kernel reads (NCHW for a 3-channel first layer, else
/// blocked): the kernel's name and its median time.
fn time_model_conv(s: &conv::Conv2dShape, w: &[f32], bias: &[f32]) -> (&'static str, Duration) {
    use rlx_sched::blocked::{
        channel_blocks, conv_blocked_scratch_bytes, pack_conv_filter, pad_channels, CHANNEL_BLOCK,
    };
    use rlx_sched::winograd::{transform_winograd_filter, winograd_pays, winograd_scratch_bytes};
    let nchw = s.c_in == 3;
    let x_len = if nchw { s.c_in * s.h * s.w_in } else { channel_blocks(s.c_in) * CHANNEL_BLOCK * s.h * s.w_in };
    let x: Vec<f32> = (0..x_len).map(|i| (i % 11) as f32 * 0.04 - 0.2).collect();
    let mut out = vec![0.0f32; channel_blocks(s.c_out) * CHANNEL_BLOCK * s.h_out * s.w_out];
    let bias = pad_channels(bias);
    let par = rlx_sched::plan::parallel(s.c_out * s.h_out * s.w_out);
    // The three kernels take the same arguments: pick one, its filter
    // layout and its scratch.
    type ConvFn = unsafe fn(
        *const f32,
        *const f32,
        *const f32,
        *const f32,
        *mut f32,
        &conv::Conv2dShape,
        ActKind,
        *mut f32,
        bool,
    );
    let (name, run, filter, scratch_bytes): (_, ConvFn, _, _) = if nchw {
        (
            "nchw blk",
            conv::conv2d_nchw_blocked_f32,
            pack_conv_filter(w, s.c_out, s.c_in, s.kh, s.kw),
            conv_blocked_scratch_bytes(s),
        )
    } else if winograd_pays(s) {
        (
            "winograd",
            conv::conv2d_winograd_f32,
            transform_winograd_filter(w, s.c_out, s.c_in),
            winograd_scratch_bytes(s),
        )
    } else {
        (
            "blocked",
            conv::conv2d_blocked_f32,
            pack_conv_filter(w, s.c_out, s.c_in, s.kh, s.kw),
            conv_blocked_scratch_bytes(s),
        )
    };
    let mut scratch = vec![0.0f32; scratch_bytes / 4 + 1];
    // SAFETY: every buffer has the extent the kernel reads or writes.
    let t = time(|| unsafe {
        run(
            x.as_ptr(),
            filter.as_ptr(),
            bias.as_ptr(),
            std::ptr::null(),
            out.as_mut_ptr(),
            s,
            ActKind::Identity,
            scratch.as_mut_ptr(),
            par,
        )
    });
    (name, t)
}

/// The FMA throughput the GEMM's percentages are of: measured, because a
/// virtual machine's nominal clock says little of the clock its cores run.
mod peak {
    use std::time::Instant;

    /// Vector lanes of f32 per FMA of the packed GEMM's instruction set.
    pub fn lanes(isa: &str) -> Option<usize> {
        match isa {
            "avx512" => Some(16),
            "avx2" => Some(8),
            "neon" => Some(4),
            _ => None,
        }
    }

    /// The first `cpu MHz` of `/proc/cpuinfo`, in GHz.
    pub fn nominal_ghz() -> Option<f64> {
        let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("cpu MHz"))?;
        let mhz: f64 = line.split(':').nth(1)?.trim().parse().ok()?;
        Some(mhz / 1e3)
    }

    /// GF/s of `threads` threads each running `CHAINS` independent FMA
    /// chains in registers (enough to cover the FMA latency on two units),
    /// best of five; `None` where `isa` has no chains here.
    pub fn measured_gflops(isa: &str, threads: usize) -> Option<f64> {
        let lanes = lanes(isa)?;
        // Also the check that this machine runs `isa`'s chains.
        chains(isa, 1)?;
        // About 0.1 s per timing at a few hundred GF/s.
        let iters: u64 = 1 << 22;
        let flops = iters as f64 * CHAINS as f64 * lanes as f64 * 2.0 * threads as f64;
        let best = (0..5)
            .map(|_| {
                let t = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| std::hint::black_box(chains(isa, std::hint::black_box(iters))));
                    }
                });
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        Some(flops / best / 1e9)
    }

    const CHAINS: usize = 16;

    fn chains(isa: &str, iters: u64) -> Option<f32> {
        #[cfg(target_arch = "x86_64")]
        {
            if isa == "avx512" && std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F is present (checked above).
                return Some(unsafe { x86::chains_avx512(iters) });
            }
            if isa == "avx2"
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                // SAFETY: AVX2 and FMA are present (checked above).
                return Some(unsafe { x86::chains_avx2(iters) });
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if isa == "neon" {
                // SAFETY: NEON is part of every aarch64 target.
                return Some(unsafe { arm::chains_neon(iters) });
            }
        }
        let _ = (isa, iters);
        None
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use super::CHAINS;
        use std::arch::x86_64::*;

        /// # Safety
        /// The CPU must have AVX-512F.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn chains_avx512(iters: u64) -> f32 {
            let mut acc = [_mm512_set1_ps(0.0); CHAINS];
            let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
            for _ in 0..iters {
                for x in acc.iter_mut() {
                    *x = _mm512_fmadd_ps(*x, a, b);
                }
            }
            acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
        }

        /// # Safety
        /// The CPU must have AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        pub unsafe fn chains_avx2(iters: u64) -> f32 {
            let mut acc = [_mm256_set1_ps(0.0); CHAINS];
            let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
            for _ in 0..iters {
                for x in acc.iter_mut() {
                    *x = _mm256_fmadd_ps(*x, a, b);
                }
            }
            let mut lanes = [0.0f32; 8];
            let sum = acc.iter().fold(_mm256_setzero_ps(), |s, &x| _mm256_add_ps(s, x));
            // SAFETY: `lanes` holds the 8 values stored.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
            lanes.iter().sum()
        }
    }

    #[cfg(target_arch = "aarch64")]
    mod arm {
        use super::CHAINS;
        use std::arch::aarch64::*;

        /// # Safety
        /// The CPU must have NEON (every aarch64 CPU does).
        #[target_feature(enable = "neon")]
        pub unsafe fn chains_neon(iters: u64) -> f32 {
            let mut acc = [vdupq_n_f32(0.0); CHAINS];
            let (a, b) = (vdupq_n_f32(0.999_999), vdupq_n_f32(1e-7));
            for _ in 0..iters {
                for x in acc.iter_mut() {
                    *x = vfmaq_f32(b, *x, a);
                }
            }
            acc.iter().map(|&x| vaddvq_f32(x)).sum()
        }
    }
}
