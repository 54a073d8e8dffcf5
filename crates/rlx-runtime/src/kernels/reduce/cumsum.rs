//! Running sums and products along the middle axis.

use rlx_core::BinaryOp;

use super::scalar::BLOCK;
use super::{units_per_chunk, SendPtr};
use crate::kernels::elementwise::ops::BinOp;

/// An element a running result accumulates: f32, or i64 with wrapping
/// arithmetic (the operator's `crate::math` definition).
pub trait CumElem: Copy + Send + Sync + 'static {
    /// The identity of `op` (`add`: 0, `mul`: 1), where an exclusive
    /// result starts.
    fn identity(op: BinaryOp) -> Self;
    fn apply<P: BinOp>(a: Self, b: Self) -> Self;
}

impl CumElem for f32 {
    fn identity(op: BinaryOp) -> Self {
        if op == BinaryOp::Mul {
            1.0
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn apply<P: BinOp>(a: Self, b: Self) -> Self {
        P::f32(a, b)
    }
}

impl CumElem for i64 {
    fn identity(op: BinaryOp) -> Self {
        i64::from(op == BinaryOp::Mul)
    }
    #[inline(always)]
    fn apply<P: BinOp>(a: Self, b: Self) -> Self {
        P::i64(a, b)
    }
}

/// Running `P` (`add` or `mul`) along the middle axis of `[outer,
/// axis_dim, inner]`, in axis order (from the end with `reverse`), each
/// column combined sequentially. Inclusive: `dst[a] = x[0] op ... op
/// x[a]`; with `exclusive` the current element is left out (`dst[first]`
/// is the identity).
///
/// `par` (the caller's `rlx_core::plan::parallel(outer * axis_dim *
/// inner)`) splits independent columns over the pool.
///
/// # Safety
///
/// `src` valid for reads and `dst` for writes of `outer * axis_dim *
/// inner` elements. They may be exactly the same range (in place) but must
/// not otherwise overlap.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cumulative<E: CumElem, P: BinOp>(
    src: *const E,
    dst: *mut E,
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
            let mut acc = [E::identity(P::OP); BLOCK];
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
                            *s = E::apply::<P>(*s, x);
                        } else {
                            *s = E::apply::<P>(*s, x);
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

/// Running sum of f32 ([`cumulative`] with `add`).
///
/// # Safety
///
/// As [`cumulative`].
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
    // SAFETY: the caller's contract is `cumulative`'s.
    unsafe {
        cumulative::<f32, crate::kernels::elementwise::ops::Add>(
            src, dst, outer, axis_dim, inner, exclusive, reverse, par,
        )
    }
}
