use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

use crate::kernels::test_support::{check_variants, identical, LENGTHS};
const U: f64 = f32::EPSILON as f64 / 2.0;

fn row_variants() -> Vec<(&'static str, RowFn)> {
    KERNELS.supported().into_iter().map(|(name, k)| (name, k.row)).collect()
}

fn column_variants() -> Vec<(&'static str, ColumnsFn)> {
    KERNELS.supported().into_iter().map(|(name, k)| (name, k.columns)).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The exact reduction in f64 and an error bound for any f32 summation
/// order: `(n + 2) u` times the sum of absolute terms (plus the final
/// divide or sqrt); `prod` compounds `n u` relatively; `log_sum_exp`
/// adds the shift rounding `|x - m| u` per term and the `exp` error.
fn naive(op: ReduceOp, x: &[f32]) -> (f64, f64) {
    let n = x.len() as f64;
    let xs: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let sum_tol = |terms: &[f64]| (n + 2.0) * U * terms.iter().map(|t| t.abs()).sum::<f64>();
    let has_nan = xs.iter().any(|v| v.is_nan());
    match op {
        ReduceOp::Sum => (xs.iter().sum(), sum_tol(&xs)),
        ReduceOp::Mean => (xs.iter().sum::<f64>() / n, sum_tol(&xs) / n + U * (xs.iter().sum::<f64>() / n).abs()),
        ReduceOp::L1 => {
            let a: Vec<f64> = xs.iter().map(|v| v.abs()).collect();
            (a.iter().sum(), sum_tol(&a))
        }
        ReduceOp::SumSquare | ReduceOp::L2 => {
            let sq: Vec<f64> = xs.iter().map(|v| v * v).collect();
            let (s, t) = (sq.iter().sum::<f64>(), sum_tol(&sq) + (n + 2.0) * U * sq.iter().sum::<f64>());
            if op == ReduceOp::L2 {
                // d sqrt(s) = ds / (2 sqrt(s)), plus the sqrt rounding.
                let r = s.sqrt();
                (r, if r > 0.0 { t / (2.0 * r) + U * r } else { t.sqrt() })
            } else {
                (s, t)
            }
        }
        ReduceOp::Max | ReduceOp::Min if has_nan => (f64::NAN, 0.0),
        ReduceOp::Max => (xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max), 0.0),
        ReduceOp::Min => (xs.iter().cloned().fold(f64::INFINITY, f64::min), 0.0),
        ReduceOp::Prod => {
            let p: f64 = xs.iter().product();
            (p, (n + 1.0) * U * p.abs())
        }
        ReduceOp::LogSumExp => {
            let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            if has_nan {
                return (f64::NAN, 0.0);
            }
            if m.is_infinite() {
                return (m, 0.0);
            }
            let s: f64 = xs.iter().map(|v| (v - m).exp()).sum();
            let spread = xs.iter().map(|v| (v - m).abs()).fold(0.0, f64::max);
            let r = m + s.ln();
            // ln turns the sum's relative error into an absolute one.
            (r, (n + 4.0 + spread) * U + 4.0 * U * r.abs())
        }
    }
}

fn data_for(op: ReduceOp, rng: &mut StdRng, n: usize) -> Vec<f32> {
    let (lo, hi) = if op == ReduceOp::Prod { (0.95, 1.05) } else { (-3.0, 3.0) };
    (0..n).map(|_| rng.gen_range(lo..hi)).collect()
}

#[test]
fn row_variants_match_exact_over_tail_lengths() {
    let mut rng = StdRng::seed_from_u64(40);
    for (name, row) in row_variants() {
        for &op in ReduceOp::ALL {
            for &n in &LENGTHS[1..] {
                let x = data_for(op, &mut rng, n);
                // SAFETY: `x` holds n.
                let got = unsafe { row(op, x.as_ptr(), n) } as f64;
                let (want, tol) = naive(op, &x);
                assert!((got - want).abs() <= tol, "{name} {op:?} n={n}: got {got} want {want} tol {tol:e}");
            }
        }
    }
}

#[test]
fn empty_axis_gives_identities() {
    let x = [1.0f32];
    for (name, row) in row_variants() {
        // SAFETY: n = 0 reads nothing.
        let r = |op| unsafe { row(op, x.as_ptr(), 0) };
        assert_eq!(r(ReduceOp::Sum), 0.0, "{name}");
        assert!(r(ReduceOp::Mean).is_nan(), "{name}");
        assert_eq!(r(ReduceOp::Max), f32::NEG_INFINITY, "{name}");
        assert_eq!(r(ReduceOp::Min), f32::INFINITY, "{name}");
        assert_eq!(r(ReduceOp::Prod), 1.0, "{name}");
        assert_eq!(r(ReduceOp::L2), 0.0, "{name}");
        assert_eq!(r(ReduceOp::LogSumExp), f32::NEG_INFINITY, "{name}");
    }
}

#[test]
fn nan_and_infinities_in_rows() {
    for (name, row) in row_variants() {
        for &n in &LENGTHS[1..] {
            for at in [0, n / 2, n - 1] {
                let mut x = vec![0.25f32; n];
                // SAFETY: every `r` passes an `x` of `n` f32, and `row_variants`
                // only lists the AVX2 row when AVX2 and FMA were detected.
                let r = |op, x: &[f32]| unsafe { row(op, x.as_ptr(), n) };
                x[at] = f32::NAN;
                for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::LogSumExp, ReduceOp::L2] {
                    assert!(r(op, &x).is_nan(), "{name} {op:?} n={n} at={at}");
                }
                x[at] = f32::INFINITY;
                assert_eq!(r(ReduceOp::Max, &x), f32::INFINITY, "{name} n={n}");
                assert_eq!(r(ReduceOp::LogSumExp, &x), f32::INFINITY, "{name} n={n}");
                assert_eq!(r(ReduceOp::L1, &x), f32::INFINITY, "{name} n={n}");
                x[at] = f32::NEG_INFINITY;
                assert_eq!(r(ReduceOp::Min, &x), f32::NEG_INFINITY, "{name} n={n}");
                assert_eq!(r(ReduceOp::Sum, &x), f32::NEG_INFINITY, "{name} n={n}");
                let all = vec![f32::NEG_INFINITY; n];
                assert_eq!(r(ReduceOp::LogSumExp, &all), f32::NEG_INFINITY, "{name} n={n}");
                assert_eq!(r(ReduceOp::Max, &all), f32::NEG_INFINITY, "{name} n={n}");
            }
        }
    }
}

/// Runs the column kernel over a whole `[outer, n, inner]` tensor.
fn columns(k: ColumnsFn, op: ReduceOp, x: &[f32], outer: usize, n: usize, inner: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; outer * inner];
    for o in 0..outer {
        for c0 in (0..inner).step_by(BLOCK) {
            let cols = BLOCK.min(inner - c0);
            // SAFETY: block `c0..c0 + cols` of slice `o`.
            unsafe { k(op, x.as_ptr().add(o * n * inner + c0), inner, n, cols, out.as_mut_ptr().add(o * inner + c0)) };
        }
    }
    out
}

#[test]
fn column_variants_are_bit_identical_and_match_exact() {
    let mut rng = StdRng::seed_from_u64(41);
    for &op in ReduceOp::ALL {
        for &(outer, n, inner) in &[(1, 5, 2), (2, 7, 9), (3, 1, 65), (1, 17, 130), (2, 0, 3)] {
            let mut x = data_for(op, &mut rng, outer * n * inner);
            if !x.is_empty() && op != ReduceOp::Prod {
                x[0] = f32::NAN;
                let last = x.len() - 1;
                x[last] = f32::INFINITY;
            }
            let reference = columns(scalar::scalar_reduce_columns, op, &x, outer, n, inner);
            let what = format!("{op:?} ({outer},{n},{inner})");
            check_variants(&reference, &column_variants(), identical, &what, |k| columns(k, op, &x, outer, n, inner));
            for o in 0..outer {
                for i in 0..inner {
                    let col: Vec<f32> = (0..n).map(|a| x[(o * n + a) * inner + i]).collect();
                    let got = reference[o * inner + i] as f64;
                    let (want, tol) = naive(op, &col);
                    let same = got == want || (got.is_nan() && want.is_nan()) || (got - want).abs() <= tol;
                    assert!(same, "{op:?} ({outer},{n},{inner}) o={o} i={i}: got {got} want {want}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn entry_par_is_bit_identical_and_matches_exact(
        outer in 0usize..6, n in 0usize..40, inner in 1usize..80, op in 0usize..9, seed in any::<u64>(),
    ) {
        let op = ReduceOp::ALL[op];
        let mut rng = StdRng::seed_from_u64(seed);
        let x = data_for(op, &mut rng, outer * n * inner);
        let mut serial = vec![0.0f32; outer * inner];
        let mut parallel = vec![0.0f32; outer * inner];
        // SAFETY: sized for the shape.
        unsafe {
            reduce_f32(x.as_ptr(), serial.as_mut_ptr(), outer, n, inner, op, false);
            reduce_f32(x.as_ptr(), parallel.as_mut_ptr(), outer, n, inner, op, true);
        }
        prop_assert_eq!(bits(&serial), bits(&parallel));
        for o in 0..outer {
            for i in 0..inner {
                let col: Vec<f32> = (0..n).map(|a| x[(o * n + a) * inner + i]).collect();
                let (want, tol) = naive(op, &col);
                let got = serial[o * inner + i] as f64;
                prop_assert!(got == want || (got.is_nan() && want.is_nan()) || (got - want).abs() <= tol,
                    "{:?} o={} i={}: got {} want {}", op, o, i, got, want);
            }
        }
    }
}

// ---- arg_reduce ----

/// Independent arg-extreme: scan with explicit NaN and tie rules.
fn naive_arg(col: &[f32], op: ArgOp, last: bool) -> usize {
    if let Some(p) = if last { col.iter().rposition(|v| v.is_nan()) } else { col.iter().position(|v| v.is_nan()) } {
        return p;
    }
    let target = match op {
        ArgOp::Max => col.iter().cloned().fold(f32::NEG_INFINITY, f32::max),
        ArgOp::Min => col.iter().cloned().fold(f32::INFINITY, f32::min),
    };
    let hit = |v: &f32| *v == target;
    if last { col.iter().rposition(hit) } else { col.iter().position(hit) }.unwrap_or(0)
}

fn run_arg(
    x: &[f32],
    outer: usize,
    n: usize,
    inner: usize,
    op: ArgOp,
    last: bool,
    i64_out: bool,
    par: bool,
) -> Vec<i64> {
    let mut raw = vec![0u64; outer * inner];
    // SAFETY: `raw` holds outer * inner 8-byte slots.
    unsafe { arg_reduce_f32(x.as_ptr(), raw.as_mut_ptr().cast(), outer, n, inner, op, last, i64_out, par) };
    if i64_out {
        raw.iter().map(|&v| v as i64).collect()
    } else {
        let f = raw.as_ptr().cast::<f32>();
        // SAFETY: f32 results packed at the front of the u64 buffer.
        (0..outer * inner).map(|i| unsafe { *f.add(i) } as i64).collect()
    }
}

#[test]
fn arg_reduce_ties_nan_and_layouts() {
    let mut rng = StdRng::seed_from_u64(42);
    for &(outer, n, inner) in &[(1, 1, 1), (2, 9, 1), (3, 17, 5), (1, 33, 70), (2, 0, 4)] {
        // Few distinct values so ties are common, plus specials.
        let mut x: Vec<f32> = (0..outer * n * inner).map(|_| rng.gen_range(0..4) as f32).collect();
        for v in x.iter_mut() {
            match rng.gen_range(0..30) {
                0 => *v = f32::NAN,
                1 => *v = f32::INFINITY,
                2 => *v = f32::NEG_INFINITY,
                _ => {}
            }
        }
        for op in [ArgOp::Max, ArgOp::Min] {
            for last in [false, true] {
                for i64_out in [true, false] {
                    let got = run_arg(&x, outer, n, inner, op, last, i64_out, false);
                    assert_eq!(got, run_arg(&x, outer, n, inner, op, last, i64_out, true));
                    for o in 0..outer {
                        for i in 0..inner {
                            let col: Vec<f32> = (0..n).map(|a| x[(o * n + a) * inner + i]).collect();
                            assert_eq!(
                                got[o * inner + i],
                                naive_arg(&col, op, last) as i64,
                                "{op:?} last={last} col={col:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

// ---- cumsum ----

fn naive_cumsum(x: &[f32], outer: usize, n: usize, inner: usize, exclusive: bool, reverse: bool) -> Vec<f32> {
    let mut out = vec![0.0f32; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = 0.0f32;
            let order: Vec<usize> = if reverse { (0..n).rev().collect() } else { (0..n).collect() };
            for a in order {
                let at = (o * n + a) * inner + i;
                let before = acc;
                acc += x[at];
                out[at] = if exclusive { before } else { acc };
            }
        }
    }
    out
}

#[test]
fn cumsum_matches_sequential_sum_in_place_too() {
    let mut rng = StdRng::seed_from_u64(43);
    for &(outer, n, inner) in &[(1, 1, 1), (2, 9, 1), (3, 17, 5), (1, 33, 70), (1, 4097, 1), (2, 0, 3)] {
        let mut x: Vec<f32> = (0..outer * n * inner).map(|_| rng.gen_range(-2.0..2.0)).collect();
        if x.len() > 3 {
            x[1] = f32::INFINITY;
            x[2] = f32::NAN;
        }
        for exclusive in [false, true] {
            for reverse in [false, true] {
                let want = naive_cumsum(&x, outer, n, inner, exclusive, reverse);
                for par in [false, true] {
                    let mut out = vec![0.0f32; x.len()];
                    let mut inplace = x.clone();
                    // SAFETY: sized for the shape; the in-place call is an
                    // exact alias.
                    unsafe {
                        cumsum_f32(x.as_ptr(), out.as_mut_ptr(), outer, n, inner, exclusive, reverse, par);
                        cumsum_f32(inplace.as_ptr(), inplace.as_mut_ptr(), outer, n, inner, exclusive, reverse, par);
                    }
                    // The same additions in the same order: exact.
                    assert_eq!(bits(&out), bits(&want), "({outer},{n},{inner}) ex={exclusive} rev={reverse}");
                    assert_eq!(bits(&inplace), bits(&want));
                }
            }
        }
    }
}

/// A running `f` along the middle axis, element by element from `identity`.
fn naive_running<T: Copy>(
    x: &[T],
    (outer, n, inner): (usize, usize, usize),
    identity: T,
    f: impl Fn(T, T) -> T,
    exclusive: bool,
    reverse: bool,
) -> Vec<T> {
    let mut out = x.to_vec();
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = identity;
            for step in 0..n {
                let a = if reverse { n - 1 - step } else { step };
                let at = (o * n + a) * inner + i;
                let before = acc;
                acc = f(acc, x[at]);
                out[at] = if exclusive { before } else { acc };
            }
        }
    }
    out
}

#[test]
fn cumulative_sums_and_products_match_the_sequential_definition() {
    use crate::kernels::elementwise::ops::{Add, Mul};
    let mut rng = StdRng::seed_from_u64(44);
    for &shape in &[(1, 1, 1), (2, 9, 1), (3, 17, 5), (1, 33, 70), (2, 0, 3), (1, 70, 1)] {
        let (outer, n, inner) = shape;
        let len = outer * n * inner;
        // Products of values near 1 stay finite; i64 products of large
        // values wrap, which the reference does the same way.
        let xf: Vec<f32> = (0..len).map(|_| rng.gen_range(0.5..1.5)).collect();
        let xi: Vec<i64> = (0..len).map(|_| rng.gen_range(-(1i64 << 40)..(1i64 << 40))).collect();
        for exclusive in [false, true] {
            for reverse in [false, true] {
                for par in [false, true] {
                    let what = format!("{shape:?} ex={exclusive} rev={reverse} par={par}");
                    let want = naive_running(&xf, shape, 1.0f32, |a, b| a * b, exclusive, reverse);
                    let mut out = vec![0.0f32; len];
                    // SAFETY: sized for the shape, not overlapping.
                    unsafe {
                        cumulative::<f32, Mul>(xf.as_ptr(), out.as_mut_ptr(), outer, n, inner, exclusive, reverse, par)
                    };
                    assert_eq!(bits(&out), bits(&want), "f32 mul {what}");
                    for (identity, f, mul) in
                        [(0i64, i64::wrapping_add as fn(i64, i64) -> i64, false), (1, i64::wrapping_mul, true)]
                    {
                        let want = naive_running(&xi, shape, identity, f, exclusive, reverse);
                        let mut inplace = xi.clone();
                        // SAFETY: sized for the shape; an exact alias.
                        unsafe {
                            if mul {
                                cumulative::<i64, Mul>(
                                    inplace.as_ptr(),
                                    inplace.as_mut_ptr(),
                                    outer,
                                    n,
                                    inner,
                                    exclusive,
                                    reverse,
                                    par,
                                );
                            } else {
                                cumulative::<i64, Add>(
                                    inplace.as_ptr(),
                                    inplace.as_mut_ptr(),
                                    outer,
                                    n,
                                    inner,
                                    exclusive,
                                    reverse,
                                    par,
                                );
                            }
                        }
                        assert_eq!(inplace, want, "i64 mul={mul} {what}");
                    }
                }
            }
        }
    }
}

// ---- top_k ----

/// Independent top-k: a stable sort of all indices by the documented key.
fn naive_top_k(row: &[f32], k: usize, largest: bool) -> Vec<usize> {
    let key = |v: f32| {
        if v.is_nan() {
            f64::INFINITY
        } else if v == f32::INFINITY {
            f64::MAX
        } else {
            v as f64
        }
    };
    let mut idx: Vec<usize> = (0..row.len()).collect();
    // Map NaN above +inf by shifting +inf down to f64::MAX: no finite f32
    // reaches it.
    idx.sort_by(|&a, &b| {
        let (ka, kb) = (key(row[a]), key(row[b]));
        if largest {
            kb.partial_cmp(&ka).unwrap()
        } else {
            ka.partial_cmp(&kb).unwrap()
        }
    });
    idx.truncate(k);
    idx
}

fn run_top_k(x: &[f32], outer: usize, n: usize, k: usize, largest: bool, i64_out: bool) -> (Vec<i64>, Vec<f32>) {
    let mut raw = vec![0u64; outer * k];
    let mut values = vec![0.0f32; outer * k];
    let mut scratch = vec![0u32; n + 1];
    // SAFETY: buffers sized for the shape.
    unsafe {
        top_k_f32(
            x.as_ptr(),
            raw.as_mut_ptr().cast(),
            values.as_mut_ptr(),
            outer,
            n,
            k,
            largest,
            i64_out,
            scratch.as_mut_ptr(),
        )
    };
    let idx = if i64_out {
        raw.iter().map(|&v| v as i64).collect()
    } else {
        let f = raw.as_ptr().cast::<f32>();
        // SAFETY: f32 results packed at the front.
        (0..outer * k).map(|i| unsafe { *f.add(i) } as i64).collect()
    };
    (idx, values)
}

#[test]
fn top_k_matches_stable_sort_with_ties_and_specials() {
    let mut rng = StdRng::seed_from_u64(44);
    for &(outer, n) in &[(1, 1), (3, 8), (2, 17), (1, 100), (2, 4097)] {
        let mut x: Vec<f32> = (0..outer * n).map(|_| rng.gen_range(0..6) as f32 - 2.0).collect();
        for v in x.iter_mut() {
            match rng.gen_range(0..20) {
                0 => *v = f32::NAN,
                1 => *v = f32::NEG_INFINITY,
                2 => *v = f32::INFINITY,
                3 => *v = -0.0,
                _ => {}
            }
        }
        for k in [0, 1, 2, n / 2, n].into_iter().filter(|&k| k <= n) {
            for largest in [true, false] {
                for i64_out in [true, false] {
                    let (idx, vals) = run_top_k(&x, outer, n, k, largest, i64_out);
                    for o in 0..outer {
                        let row = &x[o * n..(o + 1) * n];
                        let want = naive_top_k(row, k, largest);
                        let got: Vec<usize> = idx[o * k..(o + 1) * k].iter().map(|&i| i as usize).collect();
                        assert_eq!(got, want, "n={n} k={k} largest={largest}");
                        for (j, &i) in want.iter().enumerate() {
                            assert_eq!(vals[o * k + j].to_bits(), row[i].to_bits());
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn top_k_never_repeats_an_index_when_few_values_are_finite() {
    // A repeated argmax would re-select index 0 here.
    let x = [f32::NEG_INFINITY, f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY];
    let (idx, _) = run_top_k(&x, 1, 4, 4, true, true);
    assert_eq!(idx, vec![2, 0, 1, 3]);
}

#[test]
fn top_k_past_the_row_fills_minus_one_and_nan() {
    let x = [1.0f32, 5.0];
    let (idx, vals) = run_top_k(&x, 1, 2, 3, true, false);
    assert_eq!(idx, vec![1, 0, -1]);
    assert_eq!(&vals[..2], &[5.0, 1.0]);
    assert!(vals[2].is_nan());
}

#[test]
fn top_k_without_values_output() {
    let x = [3.0f32, 1.0, 2.0];
    let mut idx = [0i64; 2];
    let mut scratch = [0u32; 3];
    // SAFETY: sized for one row of 3, k = 2; no values output.
    unsafe {
        top_k_f32(x.as_ptr(), idx.as_mut_ptr().cast(), std::ptr::null_mut(), 1, 3, 2, false, true, scratch.as_mut_ptr())
    };
    assert_eq!(idx, [1, 2]);
}

/// `top_k_i64` against a stable sort of the row: exact values (beyond
/// 2^53 too, where f32 would round), ties by lower index, both
/// directions, `k` from 0 to the row, and past it (-1 and value 0).
#[test]
fn top_k_i64_matches_stable_sort_exactly() {
    let mut rng = StdRng::seed_from_u64(45);
    let big = 1i64 << 60;
    for &(outer, n) in &[(1, 1), (3, 8), (2, 17), (1, 300)] {
        let x: Vec<i64> = (0..outer * n)
            .map(|_| match rng.gen_range(0..10) {
                0 => i64::MAX,
                1 => i64::MIN,
                2 => big + rng.gen_range(0..3),
                _ => rng.gen_range(-3..3),
            })
            .collect();
        for k in [0, 1, 2, n / 2, n, n + 2] {
            for largest in [true, false] {
                let mut idx = vec![0i64; outer * k];
                let mut vals = vec![7i64; outer * k];
                let mut scratch = vec![0u32; top_k_scratch_bytes(n).div_ceil(4)];
                // SAFETY: the buffers hold the extents.
                unsafe {
                    top_k_i64(
                        x.as_ptr(),
                        idx.as_mut_ptr().cast(),
                        vals.as_mut_ptr(),
                        outer,
                        n,
                        k,
                        largest,
                        true,
                        scratch.as_mut_ptr(),
                    )
                };
                for o in 0..outer {
                    let row = &x[o * n..(o + 1) * n];
                    let mut order: Vec<usize> = (0..n).collect();
                    // Stable: equal values keep the lower index first.
                    order.sort_by(|&a, &b| if largest { row[b].cmp(&row[a]) } else { row[a].cmp(&row[b]) });
                    for j in 0..k {
                        let (want_i, want_v) = order.get(j).map_or((-1, 0), |&i| (i as i64, row[i]));
                        assert_eq!(
                            (idx[o * k + j], vals[o * k + j]),
                            (want_i, want_v),
                            "n={n} k={k} largest={largest} j={j}"
                        );
                    }
                }
            }
        }
    }
}
