//! The reference microkernel: the rounding every other one reproduces.

use super::{Tile, B};

/// See [`super::Microkernel`]: each output lane starts from its bias (or
/// +0.0, or itself when `load`), then takes one `mul_add` per input channel and tap, in order;
/// then the residual's `+` and the clamp.
///
/// # Safety
///
/// As [`super::Microkernel`] (any `r`, `q` and `rows` dividing `r`).
pub(super) unsafe fn micro(t: &Tile) {
    // SAFETY: every index is one of the tile's formula, inside the extents
    // the caller promised: `j < q`, `i < r`, `ci < c_in`, `ki < kh`,
    // `kj < kw`, `lane < 16`.
    unsafe {
        for j in 0..t.q {
            let w = t.w.add(j * t.w_block);
            for i in 0..t.r {
                let (y, c) = (i / (t.r / t.rows), i % (t.r / t.rows));
                for lane in 0..B {
                    let out = t.out.add(j * t.out_block + y * t.out_row + c * B + lane);
                    let mut acc = match (t.load, t.bias.is_null()) {
                        (true, _) => *out,
                        (false, true) => 0.0,
                        (false, false) => *t.bias.add(j * B + lane),
                    };
                    for ci in 0..t.c_in {
                        let x = t.x.add((ci / B) * t.x_block + y * t.x_row + c * t.x_step + (ci % B) * t.x_lane);
                        for ki in 0..t.kh {
                            for kj in 0..t.kw {
                                let xv = *x.add(ki * t.x_dh + kj * t.x_dw);
                                let wv = *w.add(((ci * t.kh + ki) * t.kw + kj) * B + lane);
                                acc = xv.mul_add(wv, acc);
                            }
                        }
                    }
                    if !t.residual.is_null() {
                        acc += *t.residual.add(j * t.out_block + y * t.out_row + c * B + lane);
                    }
                    if let Some((lo, hi)) = t.clamp {
                        acc = crate::math::clip(acc, lo, hi);
                    }
                    *out = acc;
                }
            }
        }
    }
}
