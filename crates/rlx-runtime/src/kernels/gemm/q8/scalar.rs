//! The reference: the order of the sums every variant matches bit for bit
//! (`mod.rs`). Also the kernel where no vector one runs.

use rlx_core::pack::PANEL;
use rlx_core::q8::{BLOCK, BLOCK_BYTES};

use super::{Q8Tile, GROUP};

/// # Safety
///
/// As [`super::Q8Kernel`].
pub(super) unsafe fn kernel(t: &Q8Tile) {
    let Q8Tile { rows, panels, blocks, a, lda, b, panel_stride, c } = *t;
    // SAFETY: the extents of `Q8Kernel`; scales are read unaligned (the
    // weights file aligns tensors to 4 bytes at most, a U8 one not at all).
    unsafe {
        for r in 0..rows {
            for q in 0..panels {
                for col in 0..PANEL {
                    let out = c.add(r * GROUP + q * PANEL + col);
                    let mut acc = *out;
                    for blk in 0..blocks {
                        let at = b.add(q * panel_stride + blk * BLOCK_BYTES);
                        let d = (at as *const f32).add(col).read_unaligned();
                        let values = at.add(PANEL * 4);
                        let mut s = 0.0f32;
                        for p in 0..BLOCK {
                            let w = *values.add(p * PANEL + col) as i8 as f32;
                            s = (*a.add(r * lda + blk * BLOCK + p)).mul_add(w, s);
                        }
                        acc = s.mul_add(d, acc);
                    }
                    *out = acc;
                }
            }
        }
    }
}
