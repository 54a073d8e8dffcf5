//! `ElementwiseRegion`: a fused chain over `len` elements.
//!
//! Interpreter and generated code both call [`region_f32`] (the
//! `RegionF32` entry), so they agree bit for bit. A block of elements goes
//! through one step at a time (one `match` per step and block instead of
//! per element). Each step is the kernel the same step runs unfused:
//! activations through the activation family's fast path (the vector
//! transcendentals, `docs/kernels/activation.md`), binaries through the
//! binary kernels, so fusing a chain never changes a bit of its result.

use super::binary::BinF32;
use super::ops::with_bin_op;
use super::par::{split, SyncPtr};
use super::paths::Kernel2;
use crate::kernels::activation::act_f32_slice;
use rlx_core::{Step, StepArg};

/// Elements per block: the accumulator block lives on the stack.
const BLOCK: usize = 256;

/// `dst[i] = chain(i)` for `i < len`, where `chain(i)` starts from
/// `inputs[0][i]` and applies `steps` in order (`Step::Binary` with
/// `StepArg::Input(n)` reads `inputs[n][i]`; `reversed` swaps the
/// operands). With no inputs nothing is written.
///
/// # Safety
/// Every `inputs[n]` readable and `dst` writable for `len` f32; `dst` may
/// equal any input (same offset) but overlaps no input otherwise; every
/// `StepArg::Input(n)` has `n < inputs.len()` (else this panics).
pub unsafe fn region_f32(inputs: &[*const f32], dst: *mut f32, len: usize, steps: &[Step], par: bool) {
    let Some(&first) = inputs.first() else {
        return;
    };
    let d = SyncPtr(dst);
    let inputs = SyncPtr::slice(inputs);
    // Every referenced input must exist: check once, before any work.
    for step in steps {
        if let Step::Binary { arg: StepArg::Input(n), .. } = step {
            assert!(*n < inputs.len(), "region step reads input {n} of {}", inputs.len());
        }
    }
    let first = SyncPtr::new_const(first);
    split(len, par, &|s, n| {
        let mut acc = [0f32; BLOCK];
        let mut b = s;
        while b < s + n {
            let m = BLOCK.min(s + n - b);
            let a = acc.as_mut_ptr();
            // SAFETY: `b + m <= s + n <= len`, so the block lies inside every input
            // and `dst`; `acc` is a local array of `BLOCK >= m` f32, so neither copy
            // overlaps and `apply_step`'s accumulator overlaps no input; chunks write
            // disjoint ranges of `dst`, and an input aliasing `dst` (same offset) is
            // read for this block before the final copy writes it.
            unsafe {
                std::ptr::copy_nonoverlapping(first.get().add(b), a, m);
                for step in steps {
                    apply_step(step, a, m, |k| inputs[k].get().add(b));
                }
                // Written last: an input aliasing `dst` is read before this.
                std::ptr::copy_nonoverlapping(a, d.get().add(b), m);
            }
            b += m;
        }
    });
}

/// Applies one step to `m` accumulator elements at `a`; `input(k)` points
/// at the block's elements of input `k`.
///
/// # Safety
/// `a` valid for `m` f32 and not overlapping any input; `input(k)`
/// readable for `m` f32.
#[inline]
unsafe fn apply_step(step: &Step, a: *mut f32, m: usize, input: impl Fn(usize) -> *const f32) {
    // SAFETY: the caller makes `a` valid for `m` f32, overlapping no input,
    // and `input(k)` readable for `m`; every kernel below reads `m` elements
    // and writes them to `a`, the exact alias each of them allows.
    unsafe {
        match *step {
            Step::Act(act) => act_f32_slice(act, a, a, m, false),
            Step::Binary { op, arg, reversed } => with_bin_op!(op, O => match (arg, reversed) {
                (StepArg::Input(k), false) => BinF32::<O>::same(a, input(k), a, m),
                (StepArg::Input(k), true) => BinF32::<O>::same(input(k), a, a, m),
                (StepArg::Const(c), false) => BinF32::<O>::scalar_rhs(a, c, a, m),
                (StepArg::Const(c), true) => BinF32::<O>::scalar_lhs(c, a, a, m),
            }),
        }
    }
}
