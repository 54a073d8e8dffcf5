//! `GridSample` through lowering and `exec_thunk`: against the kernel's
//! scalar reference (`rlx_runtime::kernels::sample::scalar`) over ranks 1
//! to 3, every mode and padding, a grid read from the weights segment, and
//! a size past the parallel threshold; and a bilinear case computed by
//! hand.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_runtime::arena::Arena;
use rlx_runtime::kernels::sample::scalar;
use rlx_sched::thunk::GridSample;
use rlx_sched::{GridSampleMode, GridSamplePadding, KernelCall, Operand, Params, Segment, Thunk};

const PARAMS: Params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };

fn at(segment: Segment, offset: usize) -> Operand {
    Operand { segment, offset, buffer: None }
}

fn put(seg: &mut Arena, off: usize, data: &[f32]) {
    for (i, x) in data.iter().enumerate() {
        seg.as_mut_slice()[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
}

fn get(seg: &Arena, off: usize, len: usize) -> Vec<f32> {
    (0..len).map(|i| f32::from_le_bytes(seg.as_slice()[off + 4 * i..off + 4 * i + 4].try_into().unwrap())).collect()
}

fn random(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(lo..hi)).collect()
}

/// `GridSample` of `src` (arena at 0) at `grid` (weights at 0) into the
/// arena after `src`; returns the output and whether the call ran parallel.
#[allow(clippy::too_many_arguments)]
fn sample(
    src: &[f32],
    grid: &[f32],
    n: usize,
    c: usize,
    in_dims: &[usize],
    out_dims: &[usize],
    mode: GridSampleMode,
    padding: GridSamplePadding,
    align_corners: bool,
) -> (Vec<f32>, bool) {
    let out_len = n * c * out_dims.iter().product::<usize>();
    let dst_off = (src.len() * 4).next_multiple_of(64);
    let mut arena = Arena::new(dst_off + out_len * 4 + 64);
    let mut weights = Arena::new(grid.len() * 4 + 64);
    put(&mut arena, 0, src);
    put(&mut weights, 0, grid);
    let t = Thunk::GridSample(GridSample {
        src: at(Segment::Arena, 0),
        grid: at(Segment::Weights, 0),
        dst: at(Segment::Arena, dst_off),
        n,
        c,
        in_dims: in_dims.to_vec(),
        out_dims: out_dims.to_vec(),
        mode,
        padding,
        align_corners,
    });
    let par = match rlx_core::lower(&t, &PARAMS) {
        Some(KernelCall::GridSampleF32 { par, .. }) => par,
        other => panic!("GridSample lowered to {other:?}"),
    };
    super::common::exec(arena.as_mut_slice(), weights.as_slice(), &mut [], PARAMS, &t);
    (get(&arena, dst_off, out_len), par)
}

#[test]
fn grid_sample_matches_the_reference() {
    let cases: [(usize, usize, &[usize], &[usize]); 5] = [
        (2, 3, &[6], &[4]),
        (1, 2, &[1, 4], &[3, 3]),
        (2, 1, &[5, 3], &[2, 7]),
        (1, 2, &[3, 1, 4], &[2, 2, 3]),
        (1, 1, &[2, 3, 2], &[1, 1, 1]),
    ];
    for (seed, (n, c, in_dims, out_dims)) in cases.into_iter().enumerate() {
        let src = random(n * c * in_dims.iter().product::<usize>(), -3.0, 3.0, seed as u64);
        let grid = random(n * out_dims.iter().product::<usize>() * in_dims.len(), -1.4, 1.4, seed as u64 + 50);
        for mode in GridSampleMode::ALL {
            for padding in GridSamplePadding::ALL {
                for align in [false, true] {
                    let want = scalar::grid_sample(&src, &grid, n, c, in_dims, out_dims, *mode, *padding, align);
                    let (got, _) = sample(&src, &grid, n, c, in_dims, out_dims, *mode, *padding, align);
                    assert_eq!(got, want, "{in_dims:?} -> {out_dims:?} {mode:?} {padding:?} align {align}");
                }
            }
        }
    }
}

#[test]
fn a_large_cubic_volume_runs_parallel_with_the_reference_bits() {
    // 2 * 2 * 10 * 12 * 14 outputs of 64 taps each: past the threshold.
    let (n, c, in_dims, out_dims) = (2, 2, [5usize, 6, 7], [10usize, 12, 14]);
    let src = random(n * c * 5 * 6 * 7, -3.0, 3.0, 11);
    let grid = random(n * 10 * 12 * 14 * 3, -1.2, 1.2, 12);
    let (mode, padding) = (GridSampleMode::Cubic, GridSamplePadding::Border);
    let (got, par) = sample(&src, &grid, n, c, &in_dims, &out_dims, mode, padding, false);
    assert!(par, "the lowering should split this one over threads");
    assert_eq!(got, scalar::grid_sample(&src, &grid, n, c, &in_dims, &out_dims, mode, padding, false));
    // The same points with nearest read one tap each: serial.
    let (_, par) = sample(&src, &grid, n, c, &in_dims, &[1, 12, 14], GridSampleMode::Nearest, padding, false);
    assert!(!par);
}

#[test]
fn bilinear_by_hand() {
    // A 2x2 image, align_corners: the four corners, the centre and a
    // point halfway along the top edge.
    let img = [0.0f32, 10.0, 20.0, 30.0];
    let grid = [-1.0f32, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, -1.0];
    let (got, _) = sample(&img, &grid, 1, 1, &[2, 2], &[1, 6], GridSampleMode::Linear, GridSamplePadding::Zeros, true);
    assert_eq!(got, [0.0, 10.0, 20.0, 30.0, 15.0, 5.0]);
    // Without align_corners the corners sit a quarter sample outside each
    // way: 1/4 of the corner sample under zeros padding.
    let (got, _) = sample(&img, &grid, 1, 1, &[2, 2], &[1, 6], GridSampleMode::Linear, GridSamplePadding::Zeros, false);
    assert_eq!(got, [0.0, 2.5, 5.0, 7.5, 15.0, 2.5]);
}
