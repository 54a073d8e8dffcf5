//! Movement kernels against naive implementations written here. Every
//! comparison is exact: these kernels only move bits.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rlx_core::plan::{transpose_path, TransposePath};
use rlx_core::PadMode;

use super::*;

use crate::kernels::test_support::{check_variants, LENGTHS};

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = rng(seed);
    (0..n).map(|_| r.gen()).collect()
}

/// The kind's definition, written out: output element `o` (row-major over
/// `dims`) copies the `eb` bytes of input element `sum(c[d] * strides[d])`.
fn naive_transpose(input: &[u8], dims: &[usize], strides: &[usize], eb: usize) -> Vec<u8> {
    let total: usize = dims.iter().product();
    let mut out = vec![0u8; total * eb];
    for o in 0..total {
        let (mut rem, mut src) = (o, 0);
        for d in (0..dims.len()).rev() {
            src += (rem % dims[d]) * strides[d];
            rem /= dims[d];
        }
        out[o * eb..(o + 1) * eb].copy_from_slice(&input[src * eb..(src + 1) * eb]);
    }
    out
}

/// Runs the planned transpose for element type `T` over byte buffers that
/// start `skew` bytes past an allocation, so elements are misaligned when
/// `skew` is odd.
fn run_transpose<T: Elem>(input: &[u8], dims: &[usize], strides: &[usize], par: bool, skew: usize) -> Vec<u8> {
    let eb = size_of::<T>();
    let in_total = input.len() / eb;
    let path = transpose_path(dims, strides, eb, in_total);
    let total: usize = dims.iter().product();
    let mut src = vec![0u8; input.len() + skew];
    src[skew..].copy_from_slice(input);
    let mut dst = vec![0xA5u8; total * eb + skew];
    // SAFETY: buffers sized for the transpose; reads within `in_total` by
    // construction of the callers' strides.
    unsafe { transpose::<T>(src[skew..].as_ptr().cast(), dst[skew..].as_mut_ptr().cast(), &path, par) };
    dst.split_off(skew)
}

fn check_all_sizes(dims: &[usize], strides: &[usize], in_total: usize, seed: u64) {
    for (eb, skew) in [(1, 0), (2, 1), (4, 0), (4, 3), (8, 0), (8, 5), (16, 0), (16, 4)] {
        let input = random_bytes(in_total * eb, seed ^ eb as u64);
        let want = naive_transpose(&input, dims, strides, eb);
        for par in [false, true] {
            let got = match eb {
                1 => run_transpose::<u8>(&input, dims, strides, par, skew),
                2 => run_transpose::<u16>(&input, dims, strides, par, skew),
                4 => run_transpose::<u32>(&input, dims, strides, par, skew),
                8 => run_transpose::<u64>(&input, dims, strides, par, skew),
                _ => run_transpose::<[u64; 2]>(&input, dims, strides, par, skew),
            };
            assert!(got == want, "dims {dims:?} strides {strides:?} eb {eb} skew {skew} par {par}");
        }
    }
}

/// Contiguous row-major strides of `dims`.
fn contiguous(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// `(out_dims, in_strides, in_total)` of permuting a contiguous `in_dims`.
fn permute(in_dims: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>, usize) {
    let s = contiguous(in_dims);
    let dims = perm.iter().map(|&p| in_dims[p]).collect();
    let strides = perm.iter().map(|&p| s[p]).collect();
    (dims, strides, in_dims.iter().product())
}

#[test]
fn every_path_matches_the_naive_walk() {
    let cases: Vec<(&str, Vec<usize>, Vec<usize>, usize)> = vec![
        ("empty", vec![3, 0, 2], vec![2, 2, 1], 6),
        ("copy", vec![5, 7, 9], vec![63, 9, 1], 315),
        ("splat", vec![4, 33], vec![0, 0], 1),
        // Conv bias [C] to [N, C, H, W], with big and odd planes.
        ("broadcast_runs", vec![2, 3, 5, 7], vec![0, 1, 0, 0], 3),
        ("broadcast_runs", vec![3, 300, 111], vec![0, 1, 0], 300),
        // [B, S, H, D] -> [B, H, S, D] with D of 17 and 64.
        ("inner_rows", permute(&[2, 5, 3, 17], &[0, 2, 1, 3]).0, permute(&[2, 5, 3, 17], &[0, 2, 1, 3]).1, 510),
        ("inner_rows", permute(&[2, 40, 4, 64], &[0, 2, 1, 3]).0, permute(&[2, 40, 4, 64], &[0, 2, 1, 3]).1, 20480),
        ("batched_swap", vec![33, 17], vec![1, 33], 561),
        ("batched_swap", vec![300, 257], vec![1, 300], 77100),
        // NCHW -> NHWC.
        ("batched_swap", permute(&[3, 9, 5, 7], &[0, 2, 3, 1]).0, permute(&[3, 9, 5, 7], &[0, 2, 3, 1]).1, 945),
        ("rank2", vec![33, 40], vec![3, 100], 4000),
        ("rank2", vec![70, 600], vec![2, 141], 140 + 599 * 141),
        ("general", permute(&[4, 5, 6], &[2, 1, 0]).0, permute(&[4, 5, 6], &[2, 1, 0]).1, 120),
        ("general", permute(&[40, 30, 50], &[2, 1, 0]).0, permute(&[40, 30, 50], &[2, 1, 0]).1, 60000),
        ("general", vec![7, 3], vec![0, 2], 5),
    ];
    for (i, (name, dims, strides, in_total)) in cases.iter().enumerate() {
        let path = transpose_path(dims, strides, 4, *in_total);
        assert_eq!(path.name(), *name, "case {i}: dims {dims:?} strides {strides:?} chose {path:?}");
        check_all_sizes(dims, strides, *in_total, i as u64);
    }
}

/// A random transpose: a permutation of a random contiguous input, some
/// dims then broadcast (stride 0, any size) and some sliced shorter.
fn transpose_case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, usize)> {
    (1usize..=5)
        .prop_flat_map(|rank| {
            (
                proptest::collection::vec(1usize..=6, rank),
                Just((0..rank).collect::<Vec<_>>()).prop_shuffle(),
                proptest::collection::vec(0u8..6, rank),
            )
        })
        .prop_map(|(in_dims, perm, tweaks)| {
            let (mut dims, mut strides, total) = permute(&in_dims, &perm);
            for (d, t) in tweaks.iter().enumerate() {
                match t {
                    0 => {
                        strides[d] = 0;
                        dims[d] = 1 + (dims[d] * 7 + d) % 5;
                    }
                    1 => dims[d] = dims[d].div_ceil(2),
                    _ => {}
                }
            }
            (dims, strides, total)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn transpose_matches_naive_walk((dims, strides, in_total) in transpose_case(), seed in any::<u64>()) {
        check_all_sizes(&dims, &strides, in_total, seed);
    }
}

#[test]
fn every_plane_transpose_matches_scalar() {
    let variants = PLANES_U32.supported();
    // The awkward lengths but the longest (a 4097-square plane is 64 MiB),
    // and eight 8x8 blocks and one.
    let sizes: Vec<usize> = LENGTHS.into_iter().filter(|&n| n <= 1023).chain([65]).collect();
    for &rows in &sizes {
        for &cols in &sizes {
            // Leading dims wider than the plane, as in a strided view.
            let (src_ld, dst_ld) = (rows + 3, cols + 5);
            let n_src = cols * src_ld + rows;
            let src: Vec<u32> = (0..n_src as u32).map(|v| v.wrapping_mul(2_654_435_761)).collect();
            let mut want = vec![0u32; rows * dst_ld + cols];
            // SAFETY: buffers hold every index the formula touches.
            unsafe { scalar::transpose_plane(src.as_ptr(), want.as_mut_ptr(), rows, cols, src_ld, dst_ld) };
            for i in 0..rows {
                for j in 0..cols {
                    assert_eq!(want[i * dst_ld + j], src[j * src_ld + i]);
                }
            }
            check_variants(
                &want,
                &variants,
                |g, w| g == w,
                &format!("rows {rows} cols {cols}"),
                |plane| {
                    let mut got = vec![0u32; want.len()];
                    // SAFETY: as above.
                    unsafe { plane(src.as_ptr(), got.as_mut_ptr(), rows, cols, src_ld, dst_ld) };
                    got
                },
            );
        }
    }
}

#[test]
fn copies_are_memmoves() {
    for &len in &LENGTHS {
        let data: Vec<f32> = (0..2 * len + 3).map(|i| i as f32 * 0.5 - 3.0).collect();
        for shift in [0usize, 1, 3] {
            // Forward and backward overlapping moves, serial only (the plan
            // never picks `par` for overlapping ranges).
            let mut fwd = data.clone();
            let mut back = data.clone();
            // SAFETY: both ranges lie within the buffers.
            unsafe {
                copy_f32(fwd.as_ptr(), fwd.as_mut_ptr().add(shift), len, false);
                copy_f32(back.as_ptr().add(shift), back.as_mut_ptr(), len, false);
            }
            let mut want_fwd = data.clone();
            want_fwd.copy_within(0..len, shift);
            let mut want_back = data.clone();
            want_back.copy_within(shift..shift + len, 0);
            assert_eq!(fwd, want_fwd, "len {len} shift {shift}");
            assert_eq!(back, want_back, "len {len} shift {shift}");
        }
    }
    let big: Vec<i64> = (0..300_001).map(|i| i * 7 - 5).collect();
    for par in [false, true] {
        let mut a = vec![0i64; big.len()];
        let mut b = vec![0f64; big.len()];
        let bf: Vec<f64> = big.iter().map(|&v| v as f64).collect();
        // SAFETY: disjoint buffers of equal length.
        unsafe {
            copy_i64(big.as_ptr(), a.as_mut_ptr(), big.len(), par);
            copy_f64(bf.as_ptr(), b.as_mut_ptr(), bf.len(), par);
        }
        assert_eq!(a, big);
        assert_eq!(b, bf);
    }
}

#[test]
fn narrow_copies_rows() {
    for (outer, inner, ss, ds, eb) in
        [(0, 4, 4, 4, 4), (3, 0, 2, 2, 4), (5, 3, 7, 4, 2), (9, 17, 20, 17, 1), (400, 100, 256, 100, 8)]
    {
        let src = random_bytes((outer * ss + inner) * eb, 7);
        let mut want = vec![0u8; (outer * ds + inner) * eb];
        for o in 0..outer {
            want[o * ds * eb..(o * ds + inner) * eb].copy_from_slice(&src[o * ss * eb..(o * ss + inner) * eb]);
        }
        for par in [false, true] {
            let mut got = vec![0u8; want.len()];
            // SAFETY: buffers hold every row.
            unsafe { narrow(src.as_ptr(), got.as_mut_ptr(), outer, ss, ds, inner, eb, par) };
            assert_eq!(got, want, "outer {outer} inner {inner} par {par}");
        }
    }
}

#[test]
fn concat_joins_rows() {
    for (outer, inner, eb) in
        [(1, vec![3, 0, 5], 4), (4, vec![1, 2, 3], 2), (300, vec![70, 33, 1], 4), (1, vec![40_000, 9], 1)]
    {
        let inputs: Vec<Vec<u8>> =
            inner.iter().enumerate().map(|(j, &n)| random_bytes(outer * n * eb, j as u64)).collect();
        let mut want = Vec::new();
        for o in 0..outer {
            for (inp, &n) in inputs.iter().zip(&inner) {
                want.extend_from_slice(&inp[o * n * eb..(o + 1) * n * eb]);
            }
        }
        let ptrs: Vec<*const u8> = inputs.iter().map(|v| v.as_ptr()).collect();
        for par in [false, true] {
            let mut got = vec![0u8; want.len()];
            // SAFETY: inputs and output sized by the formula.
            unsafe { concat(&ptrs, got.as_mut_ptr(), outer, &inner, eb, par) };
            assert_eq!(got, want, "outer {outer} inner {inner:?} par {par}");
        }
    }
}

#[test]
fn kv_append_writes_at_pos_and_clamps() {
    for (batch, new_len, max_len, row, pos, eb) in
        [(2, 3, 8, 4, 2, 4), (3, 1, 5, 7, 4, 2), (2, 4, 6, 3, 4, 4), (1, 2, 4, 2, 9, 8), (4, 64, 128, 128, 10, 4)]
    {
        let src = random_bytes(batch * new_len * row * eb, 3);
        let mut want = random_bytes(batch * max_len * row * eb, 4);
        let before = want.clone();
        for b in 0..batch {
            for s in 0..new_len {
                if pos + s >= max_len {
                    continue;
                }
                let from = ((b * new_len + s) * row) * eb;
                let to = ((b * max_len + pos + s) * row) * eb;
                want[to..to + row * eb].copy_from_slice(&src[from..from + row * eb]);
            }
        }
        for par in [false, true] {
            let mut got = before.clone();
            // SAFETY: cache and source sized by the formula.
            unsafe { kv_append(src.as_ptr(), got.as_mut_ptr(), batch, new_len, max_len, row, pos, eb, par) };
            assert_eq!(got, want, "batch {batch} new_len {new_len} pos {pos} par {par}");
        }
    }
}

/// The index rule written out: negative from the end, else zero row.
fn naive_row(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (i >= 0 && (i as usize) < len).then_some(i as usize)
}

#[test]
fn gather_resolves_negative_and_out_of_range_indices() {
    let (vocab, row) = (5usize, 3usize);
    let table: Vec<f32> = (0..vocab * row).map(|i| i as f32 + 1.0).collect();
    let idx_i64: Vec<i64> = vec![0, 4, -1, -5, 5, -6, i64::MIN, i64::MAX, 2];
    let want: Vec<f32> = idx_i64
        .iter()
        .flat_map(|&i| match naive_row(i, vocab) {
            Some(r) => table[r * row..(r + 1) * row].to_vec(),
            None => vec![0.0; row],
        })
        .collect();
    let n = idx_i64.len();
    let mut got = vec![f32::NAN; n * row];
    // SAFETY: table, indices and output sized by the formula.
    unsafe { gather_f32(table.as_ptr(), idx_i64.as_ptr(), got.as_mut_ptr(), n, row, vocab, false) };
    assert_eq!(got, want);

    let idx_i32: Vec<i32> = idx_i64.iter().map(|&i| i.clamp(i32::MIN as i64, i32::MAX as i64) as i32).collect();
    let mut got32 = vec![f32::NAN; n * row];
    // SAFETY: as above.
    unsafe { gather_f32(table.as_ptr(), idx_i32.as_ptr(), got32.as_mut_ptr(), n, row, vocab, false) };
    assert_eq!(got32, want);

    // f32 indices truncate toward zero; NaN reads row 0, infinities are
    // out of range.
    let idx_f32: Vec<f32> = vec![2.9, -0.9, -1.5, 4.99, 5.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    let rows_f32 = [Some(2), Some(0), Some(4), Some(4), None, Some(0), None, None];
    let mut gotf = vec![f32::NAN; idx_f32.len() * row];
    // SAFETY: as above.
    unsafe { gather_f32(table.as_ptr(), idx_f32.as_ptr(), gotf.as_mut_ptr(), idx_f32.len(), row, vocab, false) };
    for (k, r) in rows_f32.iter().enumerate() {
        let want_row = match r {
            Some(r) => table[r * row..(r + 1) * row].to_vec(),
            None => vec![0.0; row],
        };
        assert_eq!(gotf[k * row..(k + 1) * row], want_row[..], "f32 index {}", idx_f32[k]);
    }
}

#[test]
fn gather_axis_picks_middle_rows() {
    let mut r = rng(11);
    for (outer, axis, inner, eb, par) in
        [(3, 4, 5, 2, false), (2, 7, 1, 8, true), (40, 30, 64, 4, true), (1, 3, 0, 4, false)]
    {
        let src = random_bytes(outer * axis * inner * eb, 5);
        let idx: Vec<i64> = (0..9).map(|_| r.gen_range(-(axis as i64) - 2..axis as i64 + 2)).collect();
        let mut want = vec![0u8; outer * idx.len() * inner * eb];
        let rb = inner * eb;
        for o in 0..outer {
            for (j, &i) in idx.iter().enumerate() {
                if let Some(k) = naive_row(i, axis) {
                    let to = (o * idx.len() + j) * rb;
                    let from = (o * axis + k) * rb;
                    want[to..to + rb].copy_from_slice(&src[from..from + rb]);
                }
            }
        }
        let mut got = vec![0xFFu8; want.len()];
        // SAFETY: buffers sized by the formula.
        unsafe { gather_axis(src.as_ptr(), idx.as_ptr(), got.as_mut_ptr(), outer, axis, inner, idx.len(), eb, par) };
        assert_eq!(got, want, "outer {outer} axis {axis} inner {inner}");
    }
}

#[test]
fn odd_paths_cover_edge_shapes() {
    // One element, whatever its stride.
    check_all_sizes(&[1, 1, 1], &[9, 4, 2], 1, 1);
    // Rank-1 strided read.
    assert!(matches!(transpose_path(&[6], &[3], 4, 16), TransposePath::General { .. }));
    check_all_sizes(&[6], &[3], 16, 2);
    // Broadcast of a whole row block along a middle axis.
    check_all_sizes(&[2, 3, 40], &[40, 0, 1], 80, 3);
}

#[test]
fn walks_agree_with_index_decomposition_at_any_rank() {
    // Rank 3 takes the odometer, rank 17 the per-row decomposition; both
    // start mid-range, as a parallel chunk does.
    for rank in [3usize, 17] {
        let dims: Vec<usize> = (0..rank).map(|d| 2 + d % 2).collect();
        let strides: Vec<usize> = (0..rank).map(|d| (d * 7 + 3) % 11).collect();
        let total = walk::count_rows(&dims);
        let (start, len) = (total / 3, total / 2);
        let mut seen = Vec::new();
        walk::for_each_row(&dims, &strides, start, len, |row, off| seen.push((row, off)));
        let want: Vec<(usize, usize)> = (start..start + len)
            .map(|row| {
                let (mut rem, mut off) = (row, 0);
                for d in (0..rank).rev() {
                    off += (rem % dims[d]) * strides[d];
                    rem /= dims[d];
                }
                (row, off)
            })
            .collect();
        assert_eq!(seen, want, "rank {rank}");
    }
}

/// The reference's answer as source indices: `Some(i)` copies element
/// `i`, `None` is the value.
fn pad_indices(dims: &[usize], before: &[usize], after: &[usize], mode: PadMode) -> Vec<Option<usize>> {
    let ids: Vec<Option<usize>> = (0..dims.iter().product()).map(Some).collect();
    pad::scalar::pad(&ids, None, dims, before, after, mode)
}

/// Runs the kernel on the canonical form for element type `T`, with both
/// buffers `skew` bytes past an allocation (misaligned when odd).
fn run_pad<T: Elem + Default>(
    input: &[u8],
    value: Option<&[u8]>,
    dims: &[usize],
    before: &[usize],
    after: &[usize],
    mode: PadMode,
    par: bool,
    skew: usize,
) -> Vec<u8> {
    let eb = size_of::<T>();
    let out: usize = (0..dims.len()).map(|d| dims[d] + before[d] + after[d]).product();
    let mut src = vec![0u8; input.len() + skew];
    src[skew..].copy_from_slice(input);
    let mut val = vec![0u8; eb + skew];
    let value_ptr = value.map_or(std::ptr::null(), |v| {
        val[skew..].copy_from_slice(v);
        val[skew..].as_ptr().cast::<T>()
    });
    let mut dst = vec![0xA5u8; out * eb + skew];
    if out > 0 {
        let plan = rlx_core::plan::canonical_pad(dims, before, after);
        // SAFETY: buffers sized for the pad; the callers only pass pads
        // whose reads stay inside the source (`plan::pad_source`).
        unsafe {
            pad::pad::<T>(
                src[skew..].as_ptr().cast(),
                value_ptr,
                dst[skew..].as_mut_ptr().cast(),
                &plan.dims,
                &plan.before,
                &plan.after,
                plan.unit,
                mode,
                par,
            )
        };
    }
    dst.split_off(skew)
}

/// Every element size, aligned and not, serial and parallel, with and
/// without a value, against the reference.
fn check_pad(dims: &[usize], before: &[usize], after: &[usize], mode: PadMode, seed: u64) {
    let want = pad_indices(dims, before, after, mode);
    let n: usize = dims.iter().product();
    for (eb, skew) in [(1, 0), (2, 1), (4, 0), (4, 3), (8, 0), (8, 5), (16, 0), (16, 4)] {
        let input = random_bytes(n * eb, seed ^ eb as u64);
        let value = random_bytes(eb, !seed);
        let values: &[Option<&[u8]>] = if mode == PadMode::Constant { &[None, Some(&value)] } else { &[None] };
        for &v in values {
            let fill = v.map_or(vec![0u8; eb], <[u8]>::to_vec);
            let expected: Vec<u8> =
                want.iter().flat_map(|i| i.map_or(fill.clone(), |i| input[i * eb..(i + 1) * eb].to_vec())).collect();
            for par in [false, true] {
                let got = match eb {
                    1 => run_pad::<u8>(&input, v, dims, before, after, mode, par, skew),
                    2 => run_pad::<u16>(&input, v, dims, before, after, mode, par, skew),
                    4 => run_pad::<u32>(&input, v, dims, before, after, mode, par, skew),
                    8 => run_pad::<u64>(&input, v, dims, before, after, mode, par, skew),
                    _ => run_pad::<[u64; 2]>(&input, v, dims, before, after, mode, par, skew),
                };
                assert!(
                    got == expected,
                    "{mode:?} dims {dims:?} before {before:?} after {after:?} eb {eb} skew {skew} par {par} value {}",
                    v.is_some()
                );
            }
        }
    }
}

const PAD_MODES: [PadMode; 4] = [PadMode::Constant, PadMode::Edge, PadMode::Reflect, PadMode::Wrap];

/// Whether the validator admits `mode` for this pad (the kernel's
/// contract): `reflect` pads below their axis, and a source to copy from
/// whenever a copying mode has output to write.
fn pad_admitted(dims: &[usize], before: &[usize], after: &[usize], mode: PadMode) -> bool {
    let out_empty = (0..dims.len()).any(|d| dims[d] + before[d] + after[d] == 0);
    let reflect_ok =
        (0..dims.len()).all(|d| (before[d] == 0 && after[d] == 0) || (before[d] < dims[d] && after[d] < dims[d]));
    match mode {
        PadMode::Constant => true,
        _ if out_empty => mode != PadMode::Reflect || reflect_ok,
        _ if dims.contains(&0) => false,
        PadMode::Reflect => reflect_ok,
        _ => true,
    }
}

#[test]
fn pad_matches_the_reference_on_awkward_shapes() {
    let cases: Vec<(Vec<usize>, Vec<usize>, Vec<usize>)> = vec![
        // Rank 1: one element, both sides, one side, pads past the axis.
        (vec![1], vec![3], vec![2]),
        (vec![5], vec![2], vec![4]),
        (vec![5], vec![0], vec![1]),
        (vec![3], vec![7], vec![8]),
        // Zero pads everywhere: a copy.
        (vec![3, 4], vec![0, 0], vec![0, 0]),
        // Empty source axes, with and without output.
        (vec![0, 3], vec![1, 0], vec![2, 0]),
        (vec![0, 3], vec![0, 1], vec![0, 1]),
        (vec![2, 0], vec![0, 1], vec![0, 0]),
        // Size-1 axes between padded ones.
        (vec![1, 3, 1, 4], vec![1, 0, 0, 2], vec![0, 0, 2, 1]),
        // NCHW spatial "same" padding, asymmetric (TF style).
        (vec![2, 3, 7, 7], vec![0, 0, 0, 0], vec![0, 0, 1, 1]),
        (vec![1, 5, 6, 9], vec![0, 0, 2, 3], vec![0, 0, 1, 2]),
        // Only the outer axis: rows of whole planes.
        (vec![2, 3, 5], vec![1, 0, 0], vec![1, 0, 0]),
        // Every axis, rank 5, as the blocked view pads h and w.
        (vec![2, 2, 3, 4, 2], vec![1, 0, 2, 1, 1], vec![0, 1, 1, 3, 0]),
        (vec![1, 2, 5, 6, 16], vec![0, 0, 1, 1, 0], vec![0, 0, 2, 2, 0]),
        // Rank 8.
        (vec![2, 1, 2, 1, 2, 1, 2, 3], vec![1, 0, 0, 1, 1, 0, 0, 2], vec![0, 1, 1, 0, 1, 0, 1, 1]),
        // Long rows and many rows: past the parallel split.
        (vec![3, 4097], vec![0, 5], vec![1, 3]),
        (vec![64, 33, 17], vec![1, 2, 3], vec![2, 1, 1]),
        (vec![40000], vec![2], vec![1]),
    ];
    for (i, (dims, before, after)) in cases.iter().enumerate() {
        for mode in PAD_MODES {
            if pad_admitted(dims, before, after, mode) {
                check_pad(dims, before, after, mode, i as u64);
            }
        }
    }
}

#[test]
fn reflect_pads_reach_one_below_the_axis() {
    // The largest reflect pads ONNX allows, on a 2-element axis (1) and a
    // longer one; a 1-element axis reflects only without pads.
    check_pad(&[3, 2], &[0, 1], &[2, 1], PadMode::Reflect, 1);
    check_pad(&[6, 1], &[5, 0], &[5, 0], PadMode::Reflect, 2);
    assert!(!pad_admitted(&[3, 2], &[0, 2], &[0, 0], PadMode::Reflect));
}

/// A random pad: rank 1 to 5, small dims (0 now and then), pads 0 to 5.
fn pad_case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>, PadMode)> {
    (1usize..=5).prop_flat_map(|rank| {
        (
            proptest::collection::vec(0usize..=5, rank),
            proptest::collection::vec(0usize..=5, rank),
            proptest::collection::vec(0usize..=5, rank),
            proptest::sample::select(PAD_MODES.to_vec()),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn pad_matches_the_reference((dims, before, after, mode) in pad_case(), seed in any::<u64>()) {
        prop_assume!(pad_admitted(&dims, &before, &after, mode));
        check_pad(&dims, &before, &after, mode, seed);
    }
}

#[test]
fn the_reference_pads_as_the_onnx_examples() {
    // ONNX's Pad examples on [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    // padded (0, 1) before and (2, 3) after.
    let x: Vec<i32> = (1..=12).collect();
    let run = |mode| pad::scalar::pad(&x, 0, &[3, 4], &[0, 1], &[2, 3], mode);
    #[rustfmt::skip]
    let edge = [
        1, 1, 2, 3, 4, 4, 4, 4,
        5, 5, 6, 7, 8, 8, 8, 8,
        9, 9, 10, 11, 12, 12, 12, 12,
        9, 9, 10, 11, 12, 12, 12, 12,
        9, 9, 10, 11, 12, 12, 12, 12,
    ];
    assert_eq!(run(PadMode::Edge), edge);
    #[rustfmt::skip]
    let reflect = [
        2, 1, 2, 3, 4, 3, 2, 1,
        6, 5, 6, 7, 8, 7, 6, 5,
        10, 9, 10, 11, 12, 11, 10, 9,
        6, 5, 6, 7, 8, 7, 6, 5,
        2, 1, 2, 3, 4, 3, 2, 1,
    ];
    assert_eq!(run(PadMode::Reflect), reflect);
    #[rustfmt::skip]
    let constant = [
        0, 1, 2, 3, 4, 0, 0, 0,
        0, 5, 6, 7, 8, 0, 0, 0,
        0, 9, 10, 11, 12, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(run(PadMode::Constant), constant);
    #[rustfmt::skip]
    let wrap = [
        4, 1, 2, 3, 4, 1, 2, 3,
        8, 5, 6, 7, 8, 5, 6, 7,
        12, 9, 10, 11, 12, 9, 10, 11,
        4, 1, 2, 3, 4, 1, 2, 3,
        8, 5, 6, 7, 8, 5, 6, 7,
    ];
    assert_eq!(run(PadMode::Wrap), wrap);
}
