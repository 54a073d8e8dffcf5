//! The reference microkernel: the rounding every other one reproduces.

use rlx_core::pack::PANEL;

use super::{Init, Tile};

/// Rows per call.
pub(super) const MR: usize = 6;

/// See [`super::Microkernel`]: each element starts from its `init`, then
/// takes one `mul_add` per step of `k`, in order.
///
/// # Safety
///
/// As [`super::Microkernel`].
pub(super) unsafe fn micro(t: &Tile) {
    // SAFETY: every index is inside the extents the caller promised:
    // `r < rows`, `j < cols`, `p < kc`.
    unsafe {
        for r in 0..t.rows {
            for j in 0..t.cols {
                let out = t.c.add(r * t.ldc + j);
                let mut acc = match t.init {
                    Init::Zero => 0.0,
                    Init::Load => *out,
                    Init::ColBias(bias) => *bias.add(j),
                    Init::RowBias(bias) => *bias.add(r),
                };
                for p in 0..t.kc {
                    acc = (*t.a.add(r * t.lda + p)).mul_add(*t.b.add(p * PANEL + j), acc);
                }
                *out = acc;
            }
        }
    }
}
