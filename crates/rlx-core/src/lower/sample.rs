//! Sampling at run-time coordinates: `GridSample`. Its output positions
//! split over threads from [`parallel`]'s threshold, counted in the
//! samples read (`2^rank` per output for linear, `4^rank` for cubic), so a
//! small cubic volume runs parallel where a nearest plane of the same size
//! does not.

use super::not_in_family;
use crate::call::KernelCall as K;
use crate::operand::Operand;
use crate::ops::GridSampleMode;
use crate::plan::parallel;
use crate::thunk::Thunk;

pub(super) fn lower(t: &Thunk<Operand>) -> K {
    match t {
        Thunk::GridSample { src, grid, dst, n, c, in_dims, out_dims, mode, padding, align_corners } => {
            let taps_per_axis: usize = match mode {
                GridSampleMode::Nearest => 1,
                GridSampleMode::Linear => 2,
                GridSampleMode::Cubic => 4,
            };
            let outputs = n * c * out_dims.iter().product::<usize>();
            // The validator bounds the rank by 3: at most 64 taps.
            let taps = taps_per_axis.pow(out_dims.len() as u32);
            K::GridSampleF32 {
                src: *src,
                grid: *grid,
                dst: *dst,
                n: *n,
                c: *c,
                in_dims: in_dims.clone(),
                out_dims: out_dims.clone(),
                mode: *mode,
                padding: *padding,
                align_corners: *align_corners,
                par: parallel(outputs.saturating_mul(taps)),
            }
        }
        _ => not_in_family("sample", t),
    }
}
