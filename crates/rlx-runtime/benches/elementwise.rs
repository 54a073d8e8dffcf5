//! Elementwise throughput: `BinaryFull` add (same shape and row broadcast)
//! and `relu`, dispatched (SIMD where available) against the scalar
//! reference, reported by criterion in bytes per second (bytes read plus
//! bytes written); and the transcendental activations (`transcendental`
//! group: sigmoid, tanh, silu, exp, gelu_tanh, mish, softplus, elu) on 64K floats,
//! one thread, the vector form against the scalar `math` kernel.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rlx_core::ActKind;
use rlx_runtime::kernels::activation::{act_f32_slice, act_in_place_f32, scalar_act_f32};
use rlx_runtime::kernels::elementwise::{binary_row_rhs_f32, binary_same_f32, ops};

const SIZES: [usize; 3] = [4 * 1024, 64 * 1024, 1024 * 1024];

fn data(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 97) as f32 * 0.25 - 12.0).collect()
}

fn binary_add(c: &mut Criterion) {
    let mut g = c.benchmark_group("binary_add");
    for n in SIZES {
        let (l, r, mut o) = (data(n), data(n), vec![0f32; n]);
        let par = rlx_core::plan::parallel(n);
        g.throughput(Throughput::Bytes((3 * 4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("same", n), &n, |b, &n| {
            b.iter(|| unsafe { binary_same_f32::<ops::Add>(l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), black_box(n), par) })
        });
        g.bench_with_input(BenchmarkId::new("row768", n), &n, |b, &n| {
            b.iter(|| unsafe {
                binary_row_rhs_f32::<ops::Add>(l.as_ptr(), r.as_ptr(), o.as_mut_ptr(), black_box(n), 768, par)
            })
        });
        g.bench_with_input(BenchmarkId::new("naive_loop", n), &n, |b, &n| {
            b.iter(|| {
                for i in 0..black_box(n) {
                    o[i] = l[i] + r[i];
                }
            })
        });
    }
    g.finish();
}

fn relu(c: &mut Criterion) {
    let mut g = c.benchmark_group("relu");
    for n in SIZES {
        let mut x = data(n);
        let par = rlx_core::plan::parallel(n);
        g.throughput(Throughput::Bytes((2 * 4 * n) as u64));
        g.bench_with_input(BenchmarkId::new("in_place", n), &n, |b, &n| {
            b.iter(|| unsafe { act_in_place_f32(ActKind::Relu, x.as_mut_ptr(), black_box(n), par) })
        });
        g.bench_with_input(BenchmarkId::new("scalar", n), &n, |b, &n| {
            b.iter(|| unsafe {
                let p = x.as_mut_ptr();
                scalar_act_f32(ActKind::Relu, p, p, black_box(n))
            })
        });
        g.bench_with_input(BenchmarkId::new("gelu_in_place", n), &n, |b, &n| {
            b.iter(|| unsafe { act_in_place_f32(ActKind::Gelu, x.as_mut_ptr(), black_box(n), par) })
        });
    }
    g.finish();
}

/// Vector form (`act_f32_slice`, serial) against the scalar kernel, out of
/// place so every iteration sees the same inputs (in place, `exp` would
/// run away to `inf`).
fn transcendental(c: &mut Criterion) {
    let mut g = c.benchmark_group("transcendental");
    let n = 64 * 1024;
    // [-12, 12): both routes of every form, no overflow.
    let (x, mut o) = (data(n), vec![0f32; n]);
    g.throughput(Throughput::Elements(n as u64));
    let acts = [
        ("sigmoid", ActKind::Sigmoid),
        ("tanh", ActKind::Tanh),
        ("silu", ActKind::Silu),
        ("exp", ActKind::Exp),
        ("gelu_tanh", ActKind::GeluTanh),
        ("mish", ActKind::Mish),
        ("softplus", ActKind::Softplus),
        ("elu", ActKind::Elu { alpha: 1.0 }),
    ];
    for (name, act) in acts {
        g.bench_with_input(BenchmarkId::new(format!("{name}/vector"), n), &n, |b, &n| {
            b.iter(|| unsafe { act_f32_slice(act, x.as_ptr(), o.as_mut_ptr(), black_box(n), false) })
        });
        g.bench_with_input(BenchmarkId::new(format!("{name}/scalar"), n), &n, |b, &n| {
            b.iter(|| unsafe { scalar_act_f32(act, x.as_ptr(), o.as_mut_ptr(), black_box(n)) })
        });
    }
    g.finish();
}

criterion_group!(benches, binary_add, relu, transcendental);
criterion_main!(benches);
