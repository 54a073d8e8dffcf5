//! 2-D max / mean pooling over NCHW planes.
//!
//! Output `(ho, wo)` covers padded positions `ho*sh .. ho*sh + kh` (and
//! likewise in width); input row `ho*sh + ki - ph`. Positions outside the
//! input, whether leading padding or a ceil-mode overhang past the end,
//! are skipped: `max` takes the maximum of the real elements
//! (NaN-propagating; `-inf` if the window holds none), `mean` divides
//! their sum by how many there are. With `count_include_pad`, `mean`
//! divides instead by the window positions inside the padded input
//! `[0, h + 2*ph) x [0, w + 2*pw)` (padding taken as symmetric, as in
//! PyTorch), which still excludes a ceil-mode overhang beyond the padding.
//! A window with nothing to count gives 0.
//!
//! A case that matters in audio models: 259 frames pooled with kernel and
//! stride 100 in ceil mode make 3 windows, the last holding 59 real
//! frames; its mean divides by 59, not 100.
//!
//! Each output sums its window in `(ki, kj)` order. The AVX2 variant
//! compiles the same body with AVX2 enabled (vectorised across `wo` when
//! `sw == 1`), so it equals the reference bit for bit.

mod blocked;
pub(crate) mod scalar;

#[cfg(target_arch = "x86_64")]
mod avx2;

#[cfg(test)]
mod tests;

pub use blocked::pool2d_blocked_f32;
pub use rlx_core::shapes::Pool2dShape;
pub use rlx_core::PoolKind;

use crate::kernels::variants::variants;

type PlaneFn = unsafe fn(*const f32, *mut f32, &Pool2dShape, PoolKind, bool);

variants! {
    /// The plane kernels, best first.
    static PLANE_KERNELS: PlaneFn = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => avx2::avx2_pool_plane_f32,
        "scalar" => scalar::scalar_pool_plane_f32,
    ];
}

#[inline]
fn plane_kernel() -> PlaneFn {
    *PLANE_KERNELS.best()
}

/// Pools every `(image, channel)` plane; see the module docs.
///
/// `par` (the caller's `rlx_core::plan::parallel(n * c * h_out * w_out *
/// kh * kw)`) splits planes over the pool; bit-identical either way.
///
/// # Safety
///
/// `src` valid for reads of `n * c * h * w` f32, `dst` for writes of `n *
/// c * h_out * w_out` f32, not overlapping; `sh`, `sw` >= 1.
pub unsafe fn pool2d_f32(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    count_include_pad: bool,
    par: bool,
) {
    let planes = s.n * s.c;
    if planes == 0 || s.h_out * s.w_out == 0 {
        return;
    }
    let kernel = plane_kernel();
    let (src_addr, dst_addr) = (src as usize, dst as usize);
    let (in_plane, out_plane) = (s.h * s.w, s.h_out * s.w_out);
    let run = |start: usize, len: usize| {
        for p in start..start + len {
            let src = (src_addr as *const f32).wrapping_add(p * in_plane);
            let dst = (dst_addr as *mut f32).wrapping_add(p * out_plane);
            // SAFETY: plane `p` of both tensors; planes are disjoint.
            unsafe { kernel(src, dst, s, kind, count_include_pad) };
        }
    };
    if par {
        let per_plane = out_plane * s.kh * s.kw;
        crate::threads::par_for(planes, crate::kernels::reduce::units_per_chunk(per_plane), &run);
    } else {
        run(0, planes);
    }
}
