//! NEON inner loops (aarch64), bit-exact with the scalar reference: only
//! operators whose lane operation is the IEEE one (`+ - * /`) set
//! `BinOp::NEON`. Four lanes per step, scalar tail; every block is loaded
//! before it is stored, so an exact alias of an input is fine.

use std::arch::aarch64::*;

use super::ops::BinOp;

/// `o[j] = op(l[j], r[j])`.
///
/// # Safety
/// `l`, `r` readable and `o` writable for `n` f32; `o` equals an input or
/// overlaps neither.
pub(super) unsafe fn neon_same_f32<O: BinOp>(l: *const f32, r: *const f32, o: *mut f32, n: usize) {
    let mut j = 0;
    // SAFETY: NEON is baseline on aarch64; every access is at `j..j + 4 <= n`
    // or `j < n`, inside the caller's `n`-element extents; a block's loads
    // precede its store, so `o` may exactly alias an input.
    unsafe {
        while j + 4 <= n {
            vst1q_f32(o.add(j), O::neon(vld1q_f32(l.add(j)), vld1q_f32(r.add(j))));
            j += 4;
        }
        while j < n {
            *o.add(j) = O::f32(*l.add(j), *r.add(j));
            j += 1;
        }
    }
}

/// `o[j] = op(a, r[j])`.
///
/// # Safety
/// `r` readable and `o` writable for `n` f32; `o == r` or no overlap.
pub(super) unsafe fn neon_scalar_lhs_f32<O: BinOp>(a: f32, r: *const f32, o: *mut f32, n: usize) {
    let mut j = 0;
    // SAFETY: as in `neon_same_f32`: every access below `n`, each block of `r`
    // loaded before `o` is stored.
    unsafe {
        let av = vdupq_n_f32(a);
        while j + 4 <= n {
            vst1q_f32(o.add(j), O::neon(av, vld1q_f32(r.add(j))));
            j += 4;
        }
        while j < n {
            *o.add(j) = O::f32(a, *r.add(j));
            j += 1;
        }
    }
}

/// `o[j] = op(l[j], b)`.
///
/// # Safety
/// `l` readable and `o` writable for `n` f32; `o == l` or no overlap.
pub(super) unsafe fn neon_scalar_rhs_f32<O: BinOp>(l: *const f32, b: f32, o: *mut f32, n: usize) {
    let mut j = 0;
    // SAFETY: as in `neon_same_f32`: every access below `n`, each block of `l`
    // loaded before `o` is stored.
    unsafe {
        let bv = vdupq_n_f32(b);
        while j + 4 <= n {
            vst1q_f32(o.add(j), O::neon(vld1q_f32(l.add(j)), bv));
            j += 4;
        }
        while j < n {
            *o.add(j) = O::f32(*l.add(j), b);
            j += 1;
        }
    }
}

/// `d[j] = a[j] * b[j] + c[j]` with one rounding (`fmla`, the same
/// operation as `f32::mul_add`).
///
/// # Safety
/// Inputs readable and `d` writable for `n` f32; `d` equals an input or
/// overlaps none.
pub(super) unsafe fn neon_fma_f32(a: *const f32, b: *const f32, c: *const f32, d: *mut f32, n: usize) {
    let mut j = 0;
    // SAFETY: NEON is baseline on aarch64; every access is at `j..j + 4 <= n`
    // or `j < n`, inside the `n`-element extents; the inputs of a block are
    // loaded before `d` is stored, so an exact alias is fine.
    unsafe {
        while j + 4 <= n {
            // vfmaq_f32(c, a, b) = c + a * b, rounded once.
            let v = vfmaq_f32(vld1q_f32(c.add(j)), vld1q_f32(a.add(j)), vld1q_f32(b.add(j)));
            vst1q_f32(d.add(j), v);
            j += 4;
        }
        while j < n {
            *d.add(j) = (*a.add(j)).mul_add(*b.add(j), *c.add(j));
            j += 1;
        }
    }
}
