//! Running sum along the middle axis.

use super::scalar::BLOCK;
use super::{units_per_chunk, SendPtr};

/// Running sum along the middle axis of `[outer, axis_dim, inner]`, in
/// axis order (from the end with `reverse`), each column summed
/// sequentially in f32. Inclusive: `dst[a] = x[0] + ... + x[a]`; with
/// `exclusive` the current element is left out (`dst[first] = 0`).
///
/// `par` (the caller's `rlx_core::plan::parallel(outer * axis_dim *
/// inner)`) splits independent columns over the pool.
///
/// # Safety
///
/// `src` valid for reads and `dst` for writes of `outer * axis_dim *
/// inner` f32. They may be exactly the same range (in place) but must not
/// otherwise overlap.
pub unsafe fn cumsum_f32(
    src: *const f32,
    dst: *mut f32,
    outer: usize,
    axis_dim: usize,
    inner: usize,
    exclusive: bool,
    reverse: bool,
    par: bool,
) {
    if outer == 0 || inner == 0 || axis_dim == 0 {
        return;
    }
    let (src, dst) = (SendPtr(src.cast_mut()), SendPtr(dst));
    let n = axis_dim;
    let blocks = inner.div_ceil(BLOCK);
    let run = |start: usize, len: usize| {
        for u in start..start + len {
            let (o, c0) = (u / blocks, u % blocks * BLOCK);
            let cols = BLOCK.min(inner - c0);
            let mut acc = [0.0f32; BLOCK];
            for step in 0..n {
                let a = if reverse { n - 1 - step } else { step };
                let at = (o * n + a) * inner + c0;
                for (c, s) in acc[..cols].iter_mut().enumerate() {
                    // SAFETY: element `at + c` is inside both extents; it
                    // is read before it is written (in place is fine), and
                    // only raw pointers touch it.
                    unsafe {
                        let x = *src.get().add(at + c);
                        if exclusive {
                            *dst.get().add(at + c) = *s;
                            *s += x;
                        } else {
                            *s += x;
                            *dst.get().add(at + c) = *s;
                        }
                    }
                }
            }
        }
    };
    if par {
        crate::threads::par_for(outer * blocks, units_per_chunk(n * BLOCK), &run);
    } else {
        run(0, outer * blocks);
    }
}
