//! Movement, norm and rope kernels on model-like shapes.
//!
//! Each transpose runs twice: through the path `transpose_path` picks and
//! through the general strided walk on the same dims, so the ratio shows
//! what the path is worth. Criterion's throughput is the bytes written.
//! Run with `cargo bench -p rlx-runtime --bench movement_norm` and compare
//! ratios within one run, not absolute numbers.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rlx_core::plan::{canonical_transpose, parallel, transpose_path};
use rlx_core::thunk::Transpose;
use rlx_core::{Operand, Params, Segment, Thunk};
use rlx_runtime::exec::{execute, Memory};
use rlx_runtime::kernels::{movement, norm, rope};

const PARAMS: Params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };

fn data(len: usize, seed: u32) -> Vec<f32> {
    (0..len).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32 / 1000.0 - 0.5).collect()
}

/// Contiguous strides of `dims` permuted by `perm`, with the output dims.
fn permuted(in_dims: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut strides = vec![1; in_dims.len()];
    for d in (0..in_dims.len() - 1).rev() {
        strides[d] = strides[d + 1] * in_dims[d + 1];
    }
    (perm.iter().map(|&p| in_dims[p]).collect(), perm.iter().map(|&p| strides[p]).collect())
}

/// `(name, input dims, permutation)`: a weight transpose, NCHW to NHWC,
/// an attention head permute and a batched last-two-axes swap.
const TRANSPOSES: [(&str, &[usize], &[usize]); 4] = [
    ("rank2_1024x768", &[1024, 768], &[1, 0]),
    ("nchw_nhwc_1x64x56x56", &[1, 64, 56, 56], &[0, 2, 3, 1]),
    ("bshd_bhsd_1x128x12x64", &[1, 128, 12, 64], &[0, 2, 1, 3]),
    ("swap_8x256x512", &[8, 256, 512], &[0, 2, 1]),
];

fn bench_transpose(c: &mut Criterion) {
    let mut group = c.benchmark_group("transpose_f32");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for (name, in_dims, perm) in TRANSPOSES {
        let (dims, strides) = permuted(in_dims, perm);
        let total: usize = dims.iter().product();
        // Source then destination in one arena, run as the lowered thunk:
        // exactly the call a model makes.
        let mut arena: Vec<u32> = data(total, 1).iter().map(|v| v.to_bits()).collect();
        arena.resize(2 * total, 0);
        let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
        let thunk = Thunk::Transpose(Transpose {
            src: at(0),
            dst: at(total * 4),
            in_total: total,
            out_dims: dims.clone(),
            in_strides: strides.clone(),
            elem_bytes: 4,
        });
        let call = rlx_core::lower(&thunk, &PARAMS).expect("a non-empty transpose");
        let path = transpose_path(&dims, &strides, 4, total);
        let (src, mut dst) = (arena[..total].to_vec(), vec![0u32; total]);
        let (cdims, cstrides) = canonical_transpose(&dims, &strides).expect("non-empty");
        let par = parallel(total);
        group.throughput(Throughput::Bytes((total * 4) as u64));
        group.bench_function(BenchmarkId::new(path.name(), name), |b| {
            b.iter(|| {
                // SAFETY: the arena holds the thunk's source and destination.
                let bytes = unsafe { std::slice::from_raw_parts_mut(arena.as_mut_ptr().cast::<u8>(), arena.len() * 4) };
                let mem = Memory::new(bytes, &[], &mut []);
                // SAFETY: `call` is the lowering of a transpose that fits the arena.
                unsafe { execute(&call, &mem) };
                black_box(&arena);
            })
        });
        group.bench_function(BenchmarkId::new("general", name), |b| {
            b.iter(|| {
                // SAFETY: as above.
                unsafe { movement::transpose_general::<u32>(src.as_ptr(), dst.as_mut_ptr(), &cdims, &cstrides, par) };
                black_box(&dst);
            })
        });
    }
    group.finish();
}

fn bench_copy(c: &mut Criterion) {
    let mut group = c.benchmark_group("copy_f32");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    let len = 4 << 20;
    let src = data(len, 2);
    let mut dst = vec![0.0f32; len];
    group.throughput(Throughput::Bytes((len * 4) as u64));
    for par in [false, true] {
        group.bench_function(BenchmarkId::new(if par { "parallel" } else { "serial" }, "16MiB"), |b| {
            b.iter(|| {
                // SAFETY: disjoint buffers of `len` f32.
                unsafe { movement::copy_f32(src.as_ptr(), dst.as_mut_ptr(), len, par) };
                black_box(&dst);
            })
        });
    }
    group.finish();
}

/// `(rows, h)`: BERT-base at sequence 128, a LLaMA-7B row block.
const NORMS: [(usize, usize); 2] = [(128, 768), (32, 4096)];

fn bench_norm(c: &mut Criterion) {
    let mut group = c.benchmark_group("norm_f32");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for (rows, h) in NORMS {
        let (x, res) = (data(rows * h, 3), data(rows * h, 4));
        let (g, b) = (data(h, 5), data(h, 6));
        let mut out = vec![0.0f32; rows * h];
        let par = parallel(rows * h);
        let id = format!("{rows}x{h}");
        group.throughput(Throughput::Bytes((rows * h * 4) as u64));
        group.bench_function(BenchmarkId::new("layer_norm", &id), |bn| {
            bn.iter(|| {
                // SAFETY: buffers sized for `rows * h` and `h`.
                unsafe {
                    norm::layer_norm_f32(x.as_ptr(), g.as_ptr(), Some(b.as_ptr()), out.as_mut_ptr(), rows, h, 1e-5, par)
                };
                black_box(&out);
            })
        });
        group.bench_function(BenchmarkId::new("rms_norm", &id), |bn| {
            bn.iter(|| {
                // SAFETY: as above.
                unsafe { norm::rms_norm_f32(x.as_ptr(), g.as_ptr(), out.as_mut_ptr(), rows, h, 1e-5, par) };
                black_box(&out);
            })
        });
        group.bench_function(BenchmarkId::new("fused_residual_ln", &id), |bn| {
            bn.iter(|| {
                // SAFETY: as above.
                unsafe {
                    norm::fused_residual_ln_f32(
                        x.as_ptr(),
                        res.as_ptr(),
                        None,
                        g.as_ptr(),
                        b.as_ptr(),
                        out.as_mut_ptr(),
                        rows,
                        h,
                        1e-5,
                        par,
                    )
                };
                black_box(&out);
            })
        });
    }
    group.finish();
}

fn bench_rope(c: &mut Criterion) {
    let mut group = c.benchmark_group("rope_f32");
    group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    let (batch, seq, heads, hd) = (1, 128, 32, 128);
    let n = batch * seq * heads * hd;
    let x = data(n, 7);
    let (cos, sin) = (data(seq * hd / 2, 8), data(seq * hd / 2, 9));
    let mut out = vec![0.0f32; n];
    group.throughput(Throughput::Bytes((n * 4) as u64));
    for interleaved in [false, true] {
        let name = if interleaved { "interleaved" } else { "half" };
        group.bench_function(BenchmarkId::new(name, "1x128x32x128"), |b| {
            b.iter(|| {
                // SAFETY: buffers sized for the dims.
                unsafe {
                    rope::rope_f32(
                        x.as_ptr(),
                        cos.as_ptr(),
                        sin.as_ptr(),
                        out.as_mut_ptr(),
                        batch,
                        seq,
                        heads,
                        hd,
                        interleaved,
                        parallel(n),
                    )
                };
                black_box(&out);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_transpose, bench_copy, bench_norm, bench_rope);
criterion_main!(benches);
