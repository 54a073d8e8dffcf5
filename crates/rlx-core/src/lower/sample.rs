//! Sampling at run-time coordinates: `GridSample`. Its output positions
//! split over threads from [`parallel`]'s threshold, counted in the
//! samples read (`2^rank` per output for linear, `4^rank` for cubic), so a
//! small cubic volume runs parallel where a nearest plane of the same size
//! does not.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::ops::GridSampleMode;
use crate::plan::parallel;
use crate::thunk::GridSample;

impl Lower for GridSample<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let GridSample { src, grid, dst, n, c, in_dims, out_dims, mode, padding, align_corners } = self;
        let taps_per_axis: usize = match mode {
            GridSampleMode::Nearest => 1,
            GridSampleMode::Linear => 2,
            GridSampleMode::Cubic => 4,
        };
        let outputs = n * c * out_dims.iter().product::<usize>();
        // The validator bounds the rank by 3: at most 64 taps.
        let taps = taps_per_axis.pow(out_dims.len() as u32);
        Some(K::GridSampleF32 {
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
        })
    }
}
