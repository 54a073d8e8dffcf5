//! Elementwise throughput: `BinaryFull` add (same shape and row broadcast)
//! and `relu`, dispatched (SIMD where available) against the scalar
//! reference, reported by criterion in bytes per second (bytes read plus
//! bytes written).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rlx_core::ActKind;
use rlx_runtime::kernels::activation::{act_in_place_f32, scalar_act_f32};
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

criterion_group!(benches, binary_add, relu);
criterion_main!(benches);
