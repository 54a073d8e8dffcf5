//! The input side of a convolution's product: the patch matrix, never
//! built, read as slices of phase planes ([`rlx_core::shapes::ConvGrid`]).
//!
//! Row `(ci * kh + ki) * kw + kj` of the patch matrix, over the product's
//! grid columns `f = ho * pitch + wo`, is the input at padded position
//! `(ho * sh + ki * dh, wo * sw + kj * dw)`: in phase plane
//! `(ki * dh % sh, kj * dw % sw)` of channel `ci`, that is the contiguous
//! run starting at `(ki * dh / sh) * pitch + kj * dw / sw`. A pass copies
//! whole panel rows from such runs; nothing is decided per element.

use std::ops::Range;

use rlx_core::pack::PANEL;
use rlx_core::shapes::ConvGrid;

use super::{valid_outputs, Conv2dShape, SendPtr};

/// Kernel sizes up to this get their window offsets from a table built
/// once per pass; larger ones compute each.
const MAX_TABLE_K: usize = 16;

/// Where the patch matrix's rows come from.
#[derive(Clone, Copy)]
pub(super) struct Planes {
    /// Channel 0's first phase plane.
    pub base: *const f32,
    /// Values per phase plane.
    pub plane_len: usize,
    /// Values per grid row.
    pub pitch: usize,
    /// Columns of the product (`h_out * pitch`); nothing at or past this
    /// is read.
    pub cols: usize,
}

// SAFETY: read-only views of planes nothing writes during the product.
unsafe impl Sync for Planes {}

impl Planes {
    /// The phase planes a group's input was split into (in scratch).
    pub(super) fn phases(base: *const f32, grid: &ConvGrid) -> Planes {
        Planes { base, plane_len: grid.plane_len, pitch: grid.pitch, cols: grid.cols }
    }

    /// A 1x1, stride-1, unpadded convolution's input read in place: one
    /// plane per channel, the grid being the output itself.
    pub(super) fn input(base: *const f32, s: &Conv2dShape) -> Planes {
        Planes { base, plane_len: s.h * s.w_in, pitch: s.w_out, cols: s.out_plane() }
    }

    /// Offset, from channel `ci`'s first plane, of window position
    /// `(ki, kj)`'s run.
    fn tap(&self, s: &Conv2dShape, ki: usize, kj: usize) -> usize {
        self.row_tap(s, ki) + self.col_tap(s, kj)
    }

    fn row_tap(&self, s: &Conv2dShape, ki: usize) -> usize {
        let (sh, sw) = (s.sh.max(1), s.sw.max(1));
        (ki * s.dh % sh) * sw * self.plane_len + (ki * s.dh / sh) * self.pitch
    }

    fn col_tap(&self, s: &Conv2dShape, kj: usize) -> usize {
        let sw = s.sw.max(1);
        (kj * s.dw % sw) * self.plane_len + kj * s.dw / sw
    }

    /// Writes the pass slice [`crate::kernels::gemm::Producer`] asks for:
    /// patch rows `p0..p0 + kc`, the panels covering `cols`, to `dst`.
    ///
    /// # Safety
    ///
    /// The planes hold what [`build_phases`] (or the input) put there, for
    /// the group's `c_in / groups` channels; `p0 + kc <= patch_len`;
    /// `cols` inside `0..self.cols`, starting on a panel; `dst` valid for
    /// `kc * PANEL` writes per panel of `cols`.
    pub(super) unsafe fn produce(&self, s: &Conv2dShape, p0: usize, kc: usize, cols: Range<usize>, dst: *mut f32) {
        let taps = s.kh * s.kw;
        if kc == 0 || taps == 0 {
            return;
        }
        let channel = s.sh.max(1) * s.sw.max(1) * self.plane_len;
        let table = s.kh <= MAX_TABLE_K && s.kw <= MAX_TABLE_K;
        let (mut rows, mut cols_at) = ([0usize; MAX_TABLE_K], [0usize; MAX_TABLE_K]);
        if table {
            for (ki, r) in rows[..s.kh].iter_mut().enumerate() {
                *r = self.row_tap(s, ki);
            }
            for (kj, c) in cols_at[..s.kw].iter_mut().enumerate() {
                *c = self.col_tap(s, kj);
            }
        }
        let (mut ci, t) = (p0 / taps, p0 % taps);
        let (mut ki, mut kj) = (t / s.kw, t % s.kw);
        for row in 0..kc {
            let off = ci * channel + if table { rows[ki] + cols_at[kj] } else { self.tap(s, ki, kj) };
            let run = self.base.wrapping_add(off);
            for (q, j0) in cols.clone().step_by(PANEL).enumerate() {
                let n = PANEL.min(self.cols - j0);
                // SAFETY: values `j0..j0 + n` of the run are inside its
                // plane (`run_offset + cols <= plane_len` by the grid's
                // sizes); the destination is row `row` of panel `q`.
                unsafe {
                    let (src, to) = (run.add(j0), dst.add(q * kc * PANEL + row * PANEL));
                    if n == PANEL {
                        to.cast::<[f32; PANEL]>().write_unaligned(src.cast::<[f32; PANEL]>().read_unaligned());
                    } else {
                        std::ptr::copy_nonoverlapping(src, to, n);
                        std::ptr::write_bytes(to.add(n), 0, PANEL - n);
                    }
                }
            }
            kj += 1;
            if kj == s.kw {
                kj = 0;
                ki += 1;
                if ki == s.kh {
                    ki = 0;
                    ci += 1;
                }
            }
        }
    }
}

/// Whether phase `phase` of a stride-`stride` axis holds any window
/// position of a `k`-tap, dilation-`dilation` window.
fn phase_used(phase: usize, k: usize, stride: usize, dilation: usize) -> bool {
    (0..k).any(|i| i * dilation % stride == phase)
}

/// Splits one group's input (`c_in / groups` channels of `h x w_in`) into
/// its zero-padded phase planes at `planes` (see the module docs); phases
/// no window position reads are skipped. Channels split over the pool when
/// `par`.
///
/// # Safety
///
/// `x` valid for the group's channels; `planes` for `c_in / groups *
/// grid.phases * grid.plane_len` writes, overlapping nothing else.
pub(super) unsafe fn build_phases(x: *const f32, s: &Conv2dShape, grid: &ConvGrid, planes: *mut f32, par: bool) {
    let (sh, sw) = (s.sh.max(1), s.sw.max(1));
    let rows = grid.plane_len / grid.pitch.max(1);
    let (x, planes) = (SendPtr(x.cast_mut()), SendPtr(planes));
    let run = |first: usize, count: usize| {
        for ci in first..first + count {
            let channel = x.get().cast_const().wrapping_add(ci * s.h * s.w_in);
            for a in (0..sh).filter(|&a| phase_used(a, s.kh, sh, s.dh)) {
                for b in (0..sw).filter(|&b| phase_used(b, s.kw, sw, s.dw)) {
                    let plane = planes.get().wrapping_add(((ci * sh + a) * sw + b) * grid.plane_len);
                    // Grid columns whose input column `c * sw + b - pw` exists.
                    let ok = valid_outputs(grid.pitch, sw, b as isize - s.pw as isize, s.w_in);
                    for r in 0..rows {
                        let hi = (r * sh + a) as isize - s.ph as isize;
                        // SAFETY: row `r` of this channel's phase plane,
                        // written only here; reads at input row `hi` (inside)
                        // and columns from `ok`, which map inside it.
                        unsafe {
                            let dst = plane.add(r * grid.pitch);
                            if hi < 0 || hi >= s.h as isize || ok.is_empty() {
                                std::ptr::write_bytes(dst, 0, grid.pitch);
                                continue;
                            }
                            std::ptr::write_bytes(dst, 0, ok.start);
                            std::ptr::write_bytes(dst.add(ok.end), 0, grid.pitch - ok.end);
                            let src = channel.add(hi as usize * s.w_in);
                            let first_col = ok.start * sw + b - s.pw;
                            if sw == 1 {
                                std::ptr::copy_nonoverlapping(src.add(first_col), dst.add(ok.start), ok.len());
                            } else {
                                for (i, c) in ok.clone().enumerate() {
                                    *dst.add(c) = *src.add(first_col + i * sw);
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    if par {
        crate::threads::par_for(
            s.c_in_g(),
            crate::kernels::reduce::units_per_chunk(grid.phases * grid.plane_len),
            &run,
        );
    } else {
        run(0, s.c_in_g());
    }
}
