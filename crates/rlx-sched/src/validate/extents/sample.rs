//! `GridSample`: sampling at run-time coordinates. The grid's values are
//! not known here; the kernel keeps every read inside `src` whatever they
//! hold (`docs/kernels/sample.md`), so these rules fix the shapes its
//! bounds rest on.

use super::{product, Extents, Rules};
use crate::thunk::GridSample;
use crate::validate::access::F32;
use crate::validate::messages;

/// The spatial axes the kernel samples (its tap tables are sized for 3).
const MAX_RANK: usize = 3;

impl<O> Extents<O> for GridSample<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let GridSample { src, grid, dst, n, c, in_dims, out_dims, mode: _, padding: _, align_corners: _ } = self;
        let rank = in_dims.len();
        if !(1..=MAX_RANK).contains(&rank) {
            return r.issue("in_dims", messages::grid_sample_rank(rank), None);
        }
        if out_dims.len() != rank {
            return r.issue("out_dims", messages::rank_mismatch("out_dims", out_dims.len(), "in_dims", rank), None);
        }
        let lead = [*n, *c];
        let output: Vec<usize> = lead.iter().chain(out_dims).copied().collect();
        // An empty input axis leaves nothing to read (nor to pad from) for an
        // output that has samples.
        if product(&output) != Some(0) {
            if let Some(axis) = in_dims.iter().position(|&d| d == 0) {
                r.issue("in_dims", messages::empty_sampled_axis(axis), None);
            }
        }
        let input: Vec<usize> = lead.iter().chain(in_dims).copied().collect();
        let points: Vec<usize> = [*n].iter().chain(out_dims).chain([&rank]).copied().collect();
        r.read("src", src, F32, &input, "n*c*product(in_dims)");
        r.read("grid", grid, F32, &points, "n*product(out_dims)*rank");
        r.write("dst", dst, F32, &output, "n*c*product(out_dims)");
    }
}
