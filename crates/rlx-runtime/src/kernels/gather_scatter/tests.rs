//! The entries against [`super::scalar`] over awkward shapes (size 1,
//! empty dims, tails past a power of two), negative and out-of-range
//! indices, both index types, every element width, serial and parallel,
//! and scatters in place. Every comparison is exact.

use rand::{Rng, SeedableRng};
use rlx_core::ScatterReduction;

use super::*;
use crate::kernels::cast::Bool;

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = rng(seed);
    (0..n).map(|_| r.gen()).collect()
}

/// Indices over an axis of `dim`: mostly in range, some negative, some
/// outside on either side.
fn random_indices(n: usize, dim: usize, seed: u64) -> Vec<i64> {
    let mut r = rng(seed);
    let d = dim as i64;
    (0..n).map(|_| r.gen_range(-d - 2..d + 2)).collect()
}

const REDUCTIONS: [ScatterReduction; 5] = [
    ScatterReduction::None,
    ScatterReduction::Add,
    ScatterReduction::Mul,
    ScatterReduction::Max,
    ScatterReduction::Min,
];

/// `(data_dims, index_dims, axis)` cases of the elements kinds.
fn elements_cases() -> Vec<(Vec<usize>, Vec<usize>, usize)> {
    vec![
        (vec![1], vec![1], 0),
        (vec![5], vec![3], 0),
        (vec![5], vec![9], 0),
        (vec![3, 4], vec![2, 4], 0),
        (vec![3, 4], vec![3, 2], 1),
        (vec![4, 1, 3], vec![2, 1, 3], 0),
        (vec![2, 3, 5], vec![2, 3, 7], 2),
        (vec![2, 3, 4], vec![1, 2, 3], 1),
        (vec![3, 17], vec![3, 33], 1),
        (vec![2, 0, 3], vec![2, 0, 3], 1),
        (vec![2, 3], vec![2, 0], 1),
        (vec![0, 3], vec![4, 3], 0),
        (vec![9, 1031], vec![7, 1031], 0),
    ]
}

/// Runs `gather_elements` with indices of type `I`.
fn run_gather_elements<I: GatherIndex>(
    data: &[u8],
    idx: &[I],
    case: &(Vec<usize>, Vec<usize>, usize),
    eb: usize,
    par: bool,
) -> Vec<u8> {
    let (data_dims, index_dims, axis) = case;
    let mut out = vec![0xA5u8; idx.len() * eb];
    // SAFETY: buffers sized by the dims; the cases keep every non-axis
    // index dim within the data's.
    unsafe { gather_elements(data.as_ptr(), idx.as_ptr(), out.as_mut_ptr(), data_dims, index_dims, *axis, eb, par) };
    out
}

#[test]
fn gather_elements_matches_the_reference() {
    for (n, case) in elements_cases().into_iter().enumerate() {
        let (data_dims, index_dims, axis) = &case;
        let total: usize = index_dims.iter().product();
        let idx = random_indices(total, data_dims[*axis], n as u64);
        let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
        for eb in [1, 2, 4, 8, 16] {
            let data = random_bytes(data_dims.iter().product::<usize>() * eb, 100 + n as u64);
            let want = scalar::gather_elements(&data, &idx, data_dims, index_dims, *axis, eb);
            for par in [false, true] {
                assert_eq!(run_gather_elements(&data, &idx, &case, eb, par), want, "{case:?} eb {eb} par {par}");
                assert_eq!(run_gather_elements(&data, &idx32, &case, eb, par), want, "{case:?} i32 eb {eb}");
            }
        }
    }
}

/// `(batch, lookups, data_dims, slice_len)` cases of the ND kinds.
fn nd_cases() -> Vec<(usize, usize, Vec<usize>, usize)> {
    vec![
        (1, 1, vec![], 5),
        (1, 3, vec![4], 3),
        (2, 5, vec![3, 4], 2),
        (3, 2, vec![2, 2, 2], 1),
        (1, 0, vec![3], 4),
        (2, 4, vec![5], 0),
        (1, 3, vec![0], 3),
        (2, 9, vec![1, 3], 17),
        (4, 300, vec![7], 33),
    ]
}

#[test]
fn gather_nd_matches_the_reference() {
    for (n, (batch, lookups, dims, slice)) in nd_cases().into_iter().enumerate() {
        let depth = dims.len();
        let mut idx = Vec::new();
        for t in 0..batch * lookups {
            for (d, &dim) in dims.iter().enumerate() {
                idx.extend(random_indices(1, dim, (n * 1000 + t * 10 + d) as u64));
            }
        }
        assert_eq!(idx.len(), batch * lookups * depth);
        let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
        for eb in [1, 4, 8, 16] {
            let data = random_bytes(batch * dims.iter().product::<usize>() * slice * eb, n as u64);
            let want = scalar::gather_nd(&data, &idx, batch, lookups, &dims, slice, eb);
            for par in [false, true] {
                let mut out = vec![0xA5u8; want.len()];
                let mut out32 = out.clone();
                // SAFETY: buffers sized by the case.
                unsafe {
                    gather_nd(data.as_ptr(), idx.as_ptr(), out.as_mut_ptr(), batch, lookups, &dims, slice, eb, par);
                    gather_nd(data.as_ptr(), idx32.as_ptr(), out32.as_mut_ptr(), batch, lookups, &dims, slice, eb, par);
                }
                assert_eq!(out, want, "{batch} {lookups} {dims:?} {slice} eb {eb} par {par}");
                assert_eq!(out32, want, "i32 {batch} {lookups} {dims:?} {slice} eb {eb}");
            }
        }
    }
}

/// Values for scatter tests, from random bytes mapped to the type.
trait TestValue: ScatterValue + PartialEq + std::fmt::Debug {
    fn from_seed(r: &mut rand::rngs::StdRng) -> Self;
    /// Equality of bits (NaN payloads included) for floats.
    fn same(a: &[Self], b: &[Self]) -> bool {
        a == b
    }
}

impl TestValue for f32 {
    fn from_seed(r: &mut rand::rngs::StdRng) -> Self {
        // Mostly small values, sometimes NaN, so max/min see it.
        if r.gen_ratio(1, 40) {
            f32::NAN
        } else {
            r.gen_range(-3.0f32..3.0)
        }
    }
    fn same(a: &[Self], b: &[Self]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }
}

impl TestValue for i32 {
    fn from_seed(r: &mut rand::rngs::StdRng) -> Self {
        r.gen_range(-1000..1000) * if r.gen_ratio(1, 20) { 1 << 20 } else { 1 }
    }
}

impl TestValue for i64 {
    fn from_seed(r: &mut rand::rngs::StdRng) -> Self {
        r.gen_range(-1 << 40..1 << 40)
    }
}

impl TestValue for Bool {
    fn from_seed(r: &mut rand::rngs::StdRng) -> Self {
        Bool(r.gen_range(0..2))
    }
}

impl TestValue for u16 {
    fn from_seed(r: &mut rand::rngs::StdRng) -> Self {
        r.gen()
    }
}

fn values<T: TestValue>(n: usize, seed: u64) -> Vec<T> {
    let mut r = rng(seed);
    (0..n).map(|_| T::from_seed(&mut r)).collect()
}

fn scatter_elements_cases<T: TestValue>(reductions: &[ScatterReduction]) {
    for (n, case) in elements_cases().into_iter().enumerate() {
        let (data_dims, index_dims, axis) = &case;
        // A scatter's index dims are the updates'; the data must be at
        // least as large on every axis but `axis` (already so).
        let total: usize = index_dims.iter().product();
        let len: usize = data_dims.iter().product();
        let idx = random_indices(total, data_dims[*axis], 7 + n as u64);
        let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
        let data: Vec<T> = values(len, n as u64);
        let upd: Vec<T> = values(total, 50 + n as u64);
        for &red in reductions {
            let want = scalar::scatter_elements(&data, &idx, &upd, data_dims, index_dims, *axis, red);
            for par in [false, true] {
                let mut out = data.clone();
                let mut in_place = data.clone();
                // SAFETY: buffers sized by the dims; in place is dst == data.
                unsafe {
                    let (d, u) = (data.as_ptr(), upd.as_ptr());
                    scatter_elements(d, idx.as_ptr(), u, out.as_mut_ptr(), data_dims, index_dims, *axis, red, par);
                    let p = in_place.as_mut_ptr();
                    scatter_elements(p, idx32.as_ptr(), u, p, data_dims, index_dims, *axis, red, par);
                }
                assert!(T::same(&out, &want), "{case:?} {red:?} par {par}: {out:?} != {want:?}");
                assert!(T::same(&in_place, &want), "in place, i32 {case:?} {red:?}");
            }
        }
    }
}

#[test]
fn scatter_elements_matches_the_reference() {
    scatter_elements_cases::<f32>(&REDUCTIONS);
    scatter_elements_cases::<i32>(&REDUCTIONS);
    scatter_elements_cases::<i64>(&REDUCTIONS);
    scatter_elements_cases::<Bool>(&REDUCTIONS);
    scatter_elements_cases::<u16>(&[ScatterReduction::None]);
}

fn scatter_nd_cases<T: TestValue>(reductions: &[ScatterReduction]) {
    // ScatterND has no batch: fold the batch of the ND cases into lookups.
    for (n, (batch, lookups, dims, slice)) in nd_cases().into_iter().enumerate() {
        let lookups = batch * lookups;
        let mut idx = Vec::new();
        for t in 0..lookups {
            for (d, &dim) in dims.iter().enumerate() {
                idx.extend(random_indices(1, dim, (n * 1000 + t * 10 + d) as u64));
            }
        }
        let idx32: Vec<i32> = idx.iter().map(|&i| i as i32).collect();
        let data: Vec<T> = values(dims.iter().product::<usize>() * slice, n as u64);
        let upd: Vec<T> = values(lookups * slice, 70 + n as u64);
        for &red in reductions {
            let want = scalar::scatter_nd(&data, &idx, &upd, lookups, &dims, slice, red);
            for par in [false, true] {
                let mut out = data.clone();
                let mut in_place = data.clone();
                // SAFETY: buffers sized by the case; in place is dst == data.
                unsafe {
                    let (d, u) = (data.as_ptr(), upd.as_ptr());
                    scatter_nd(d, idx.as_ptr(), u, out.as_mut_ptr(), lookups, &dims, slice, red, par);
                    let p = in_place.as_mut_ptr();
                    scatter_nd(p, idx32.as_ptr(), u, p, lookups, &dims, slice, red, par);
                }
                assert!(T::same(&out, &want), "{lookups} {dims:?} {slice} {red:?} par {par}");
                assert!(T::same(&in_place, &want), "in place, i32 {lookups} {dims:?} {slice} {red:?}");
            }
        }
    }
}

#[test]
fn scatter_nd_matches_the_reference() {
    scatter_nd_cases::<f32>(&REDUCTIONS);
    scatter_nd_cases::<i32>(&REDUCTIONS);
    scatter_nd_cases::<i64>(&REDUCTIONS);
    scatter_nd_cases::<Bool>(&REDUCTIONS);
    scatter_nd_cases::<u16>(&[ScatterReduction::None]);
}

#[test]
fn duplicate_indices_apply_in_index_order() {
    // Three updates to element 1: `none` keeps the last, `add` sums in
    // order, rounding to f32 after each one.
    let data = [0.0f32, 5.0, 0.0];
    let idx = [1i64, 1, -2];
    let upd = [1e8f32, 1.0, -1e8];
    let mut out = [0.0f32; 3];
    for (red, want) in [(ScatterReduction::None, -1e8f32), (ScatterReduction::Add, (5.0 + 1e8 + 1.0) - 1e8)] {
        // SAFETY: one axis of 3, three updates.
        unsafe {
            scatter_elements(data.as_ptr(), idx.as_ptr(), upd.as_ptr(), out.as_mut_ptr(), &[3], &[3], 0, red, false)
        };
        assert_eq!(out, [0.0, want, 0.0], "{red:?}");
    }
}

#[test]
fn out_of_range_indices_zero_gathers_and_skip_scatters() {
    let data = [1u32, 2, 3];
    let idx = [3i64, -4, i64::MAX, i64::MIN, 2];
    let mut out = [9u32; 5];
    // SAFETY: three data elements, five indices and outputs.
    unsafe {
        gather_elements(data.as_ptr().cast(), idx.as_ptr(), out.as_mut_ptr().cast(), &[3], &[5], 0, 4, false);
    }
    assert_eq!(out, [0, 0, 0, 0, 3]);
    let upd = [7u32, 7, 7, 7, 8];
    let mut dst = [0u32; 3];
    // SAFETY: as above.
    unsafe {
        scatter_elements(
            data.as_ptr(),
            idx.as_ptr(),
            upd.as_ptr(),
            dst.as_mut_ptr(),
            &[3],
            &[5],
            0,
            ScatterReduction::None,
            false,
        );
    }
    assert_eq!(dst, [1, 2, 8]);
}

#[test]
fn float_extrema_propagate_nan() {
    for (a, b) in [(f32::NAN, 1.0), (1.0, f32::NAN)] {
        assert!(ScatterValue::max(a, b).is_nan() && ScatterValue::min(a, b).is_nan());
    }
    assert_eq!(ScatterValue::max(-0.5f32, 2.0), 2.0);
    assert_eq!(ScatterValue::min(-0.5f32, 2.0), -0.5);
}
