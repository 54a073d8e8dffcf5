//! Attention (both paths), softmax, reductions, convolution (each path) and
//! pooling on model-like shapes.
//!
//! The attention group times the `Direct` and `Gemm` paths on the same
//! shapes, which is what `attention_path`'s threshold rests on: compare
//! their ratio within one run, not absolute numbers. Run with
//! `cargo bench -p rlx-runtime --bench attention_conv`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rlx_core::plan::parallel;
use rlx_runtime::kernels::attention::{
    attention_f32, attention_path, attention_scratch_bytes, AttentionPath, AttentionScores, AttentionShape, MaskKind,
};
use rlx_runtime::kernels::conv::{conv2d_f32, conv2d_path, conv2d_scratch_bytes, Conv2dShape};
use rlx_runtime::kernels::pool::{pool2d_f32, Pool2dShape, PoolKind};
use rlx_runtime::kernels::reduce::{reduce_f32, ReduceOp};
use rlx_runtime::kernels::softmax::softmax_f32;

fn data(len: usize, seed: u32) -> Vec<f32> {
    (0..len).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32 / 1000.0 - 0.5).collect()
}

fn attention_shape(seq: usize, kv_seq: usize, heads: usize, head_dim: usize) -> AttentionShape {
    AttentionShape {
        batch: 1,
        seq,
        kv_seq,
        heads,
        kv_heads: heads,
        head_dim,
        v_head_dim: head_dim,
        q_row_stride: heads * head_dim,
        k_row_stride: heads * head_dim,
        v_row_stride: heads * head_dim,
        bhsd: false,
    }
}

fn bench_attention(c: &mut Criterion) {
    let mut group = c.benchmark_group("attention");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    // Decoding with a cache, a short prefill, a BERT-base layer and the
    // path threshold's neighbourhood.
    for (name, seq, kv, heads, dh) in
        [("decode", 1, 512, 8, 64), ("small", 8, 8, 8, 64), ("edge", 16, 16, 12, 64), ("bert", 128, 128, 12, 64)]
    {
        let s = attention_shape(seq, kv, heads, dh);
        let q = data(seq * heads * dh, 1);
        let k = data(kv * heads * dh, 2);
        let v = data(kv * heads * dh, 3);
        let mut out = vec![0.0f32; seq * heads * dh];
        let mut scratch = vec![0.0f32; attention_scratch_bytes(&s) / 4];
        let scores = AttentionScores {
            mask_kind: MaskKind::Causal,
            scale: 0.125,
            softcap: 0.0,
            mask_threshold: 0.5,
            mask_neg_inf: -1e9,
            score_skip: 0.0,
        };
        let par = parallel(heads * seq * kv);
        eprintln!("attention {name}: chosen path {:?}, par {par}", attention_path(&s));
        group.throughput(Throughput::Elements((2 * seq * kv * heads * dh * 2) as u64));
        for path in [AttentionPath::Direct, AttentionPath::Gemm] {
            group.bench_function(BenchmarkId::new(format!("{path:?}"), name), |b| {
                b.iter(|| {
                    // SAFETY: every buffer is sized for `s`.
                    unsafe {
                        attention_f32(
                            q.as_ptr(),
                            k.as_ptr(),
                            v.as_ptr(),
                            std::ptr::null(),
                            out.as_mut_ptr(),
                            &s,
                            &scores,
                            path,
                            scratch.as_mut_ptr(),
                            par,
                        )
                    };
                    black_box(&out);
                })
            });
        }
    }
    group.finish();
}

fn bench_softmax_and_reduce(c: &mut Criterion) {
    let mut group = c.benchmark_group("rows");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    let (rows, cols) = (256, 1024);
    let x = data(rows * cols, 4);
    let mut out = vec![0.0f32; rows * cols];
    group.throughput(Throughput::Elements((rows * cols) as u64));
    group.bench_function("softmax_256x1024", |b| {
        // SAFETY: both buffers hold rows * cols.
        b.iter(|| unsafe { softmax_f32(x.as_ptr(), out.as_mut_ptr(), rows, cols, false) })
    });
    for (name, outer, inner) in [("row_sum", rows, 1), ("column_sum", 1, cols)] {
        let axis = rows * cols / (outer * inner);
        let mut dst = vec![0.0f32; outer * inner];
        group.bench_function(name, |b| {
            // SAFETY: `x` holds outer * axis * inner, `dst` outer * inner.
            b.iter(|| unsafe { reduce_f32(x.as_ptr(), dst.as_mut_ptr(), outer, axis, inner, ReduceOp::Sum, false) })
        });
    }
    group.finish();
}

fn bench_conv_pool(c: &mut Criterion) {
    let mut group = c.benchmark_group("conv");
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    let conv = |c_in, c_out, hw, k, s, p, groups| Conv2dShape {
        n: 1,
        c_in,
        h: hw,
        w_in: hw,
        c_out,
        h_out: (hw + 2 * p - k) / s + 1,
        w_out: (hw + 2 * p - k) / s + 1,
        kh: k,
        kw: k,
        sh: s,
        sw: s,
        ph: p,
        pw: p,
        dh: 1,
        dw: 1,
        groups,
    };
    // A ResNet block, a MobileNet depthwise and pointwise pair.
    for (name, s) in [
        ("resnet_3x3_64", conv(64, 64, 56, 3, 1, 1, 1)),
        ("depthwise_3x3_s2", conv(32, 32, 112, 3, 2, 1, 32)),
        ("pointwise_1x1", conv(32, 64, 56, 1, 1, 0, 1)),
    ] {
        let path = conv2d_path(&s);
        let x = data(s.c_in * s.h * s.w_in, 5);
        let w = data(s.c_out * s.c_in / s.groups * s.kh * s.kw, 6);
        let bias = data(s.c_out, 7);
        let mut out = vec![0.0f32; s.c_out * s.h_out * s.w_out];
        let mut scratch = vec![0.0f32; conv2d_scratch_bytes(&s, path) / 4 + 1];
        let par = parallel(s.c_out * s.h_out * s.w_out);
        let macs = s.c_out * s.h_out * s.w_out * s.c_in / s.groups * s.kh * s.kw;
        group.throughput(Throughput::Elements(2 * macs as u64));
        group.bench_function(BenchmarkId::new(format!("{path:?}"), name), |b| {
            b.iter(|| {
                // SAFETY: every buffer is sized for `s` and `path`.
                unsafe {
                    conv2d_f32(
                        x.as_ptr(),
                        w.as_ptr(),
                        bias.as_ptr(),
                        out.as_mut_ptr(),
                        &s,
                        path,
                        rlx_core::ActKind::Identity,
                        scratch.as_mut_ptr(),
                        par,
                    )
                };
                black_box(&out);
            })
        });
    }
    let p = Pool2dShape { n: 1, c: 64, h: 112, w: 112, h_out: 56, w_out: 56, kh: 3, kw: 3, sh: 2, sw: 2, ph: 1, pw: 1 };
    let x = data(p.c * p.h * p.w, 8);
    let mut out = vec![0.0f32; p.c * p.h_out * p.w_out];
    for kind in [PoolKind::Max, PoolKind::Mean] {
        group.bench_function(BenchmarkId::new("pool_3x3_s2", format!("{kind:?}")), |b| {
            // SAFETY: both buffers sized for `p`.
            b.iter(|| unsafe { pool2d_f32(x.as_ptr(), out.as_mut_ptr(), &p, kind, false, true) })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_attention, bench_softmax_and_reduce, bench_conv_pool);
criterion_main!(benches);
