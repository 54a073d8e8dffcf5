//! GEMM throughput on model-like shapes for the compiled BLAS backend.
//!
//! Criterion's throughput is set to the FLOP count (`2*m*k*n`), so its
//! "elem/s" figure reads as FLOP/s; a summary line per shape also prints
//! GFLOP/s directly. Run with `cargo bench -p rlx-runtime --bench gemm`
//! (add `--no-default-features --features pure-rust` for the other
//! backend) and compare ratios within one run, not absolute numbers.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rlx_runtime::blas;
use rlx_runtime::kernels::gemm;

/// `(name, m, k, n)`: an MLP layer at batch 1 and 64, BERT-base
/// projections at sequence 128, a square block and a decoding GEMV.
const SHAPES: [(&str, usize, usize, usize); 6] = [
    ("mlp_b1", 1, 784, 128),
    ("mlp_b64", 64, 784, 128),
    ("bert_qkv", 128, 768, 768),
    ("bert_ffn", 128, 768, 3072),
    ("square512", 512, 512, 512),
    ("gemv1024", 1, 1024, 1024),
];

fn data(len: usize, seed: u32) -> Vec<f32> {
    (0..len).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32 / 1000.0 - 0.5).collect()
}

fn gflops(m: usize, k: usize, n: usize, per_call: Duration) -> f64 {
    2.0 * (m * k * n) as f64 / per_call.as_secs_f64() / 1e9
}

/// A quick timing outside criterion, for the one-line summary.
fn time_per_call(mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    let mut calls = 0u32;
    while start.elapsed() < Duration::from_millis(200) {
        f();
        calls += 1;
    }
    start.elapsed() / calls.max(1)
}

fn bench_sgemm(c: &mut Criterion) {
    eprintln!("backend: {}, BLAS threads: {}", blas::backend_name(), blas::blas_threads());
    let mut group = c.benchmark_group(format!("sgemm_{}", blas::backend_name()));
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for (name, m, k, n) in SHAPES {
        let a = data(m * k, 1);
        let b = data(k * n, 2);
        let mut out = vec![0.0f32; m * n];
        let mut call = || {
            // SAFETY: buffers sized for the shape, no overlap.
            unsafe { gemm::sgemm_f32(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), m, k, n) };
            black_box(&out);
        };
        let t = time_per_call(&mut call);
        eprintln!("sgemm {name:>10} {m}x{k}x{n}: {:.2} GFLOP/s", gflops(m, k, n, t));
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        group.bench_function(BenchmarkId::from_parameter(name), |bench| bench.iter(&mut call));
    }
    group.finish();
}

fn bench_half_weights(c: &mut Criterion) {
    let mut group = c.benchmark_group("sgemm_f16w");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for (name, m, k, n) in [("gemv1024", 1, 1024, 1024), ("mlp_b64", 64, 784, 128), ("bert_qkv", 128, 768, 768)] {
        let a = data(m * k, 3);
        let w: Vec<u16> = data(k * n, 4).iter().map(|&x| half::f16::from_f32(x).to_bits()).collect();
        let mut scratch = vec![0.0f32; gemm::half_weight_scratch_elems(m, k, n)];
        let mut out = vec![0.0f32; m * n];
        let par = k * n >= 32 * 1024;
        let mut call = || {
            // SAFETY: buffers sized for the shape, no overlap.
            unsafe { gemm::sgemm_f16w(a.as_ptr(), w.as_ptr(), out.as_mut_ptr(), m, k, n, scratch.as_mut_ptr(), par) };
            black_box(&out);
        };
        let t = time_per_call(&mut call);
        eprintln!("sgemm_f16w {name:>10} {m}x{k}x{n}: {:.2} GFLOP/s", gflops(m, k, n, t));
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        group.bench_function(BenchmarkId::from_parameter(name), |bench| bench.iter(&mut call));
    }
    group.finish();
}

criterion_group!(benches, bench_sgemm, bench_half_weights);
criterion_main!(benches);
