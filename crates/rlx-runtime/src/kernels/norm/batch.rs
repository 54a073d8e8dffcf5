//! `BatchNormInference`: per-channel affine normalisation of `[n, c, hw]`.
//!
//! Scalar only: one pass of a multiply-add per element over contiguous
//! planes, which the compiler vectorises. The in-place form (`out == x`)
//! and the out-of-place form run the same arithmetic on slices, so they
//! agree bit for bit.

use crate::threads::par_for;

/// Planes per parallel chunk hold at least this many elements.
const PAR_CHUNK: usize = 16 * 1024;

/// `y = ((v - mean) * inv) * scale + bias` for one plane, written as one
/// expression so both forms below round identically.
#[inline(always)]
fn affine(v: f32, mean: f32, inv: f32, scale: f32, bias: f32) -> f32 {
    ((v - mean) * inv) * scale + bias
}

/// Pointers of one call, shareable with `par_for` workers.
#[derive(Clone, Copy)]
struct Args {
    x: *const f32,
    scale: *const f32,
    bias: *const f32,
    mean: *const f32,
    var: *const f32,
    out: *mut f32,
}

// SAFETY: workers read the inputs and write disjoint planes of `out`; the
// `par_for` joins before the kernel returns.
unsafe impl Send for Args {}
// SAFETY: `&Args` only exposes the pointers by copy; the workers' use is
// the read-only / disjoint-plane access described above.
unsafe impl Sync for Args {}

/// `BatchNormInference`: `out[i, ch, k] = ((x[i, ch, k] - mean[ch]) * inv)
/// * scale[ch] + bias[ch]` with `inv = 1 / sqrt(var[ch] + eps)`, over an
/// `[n, c, hw]` tensor. Parallel over the `n * c` planes with `par`.
///
/// # Safety
/// `x` readable and `out` writable for `n * c * hw` f32; `scale`, `bias`,
/// `mean`, `var` readable for `c`; `out` equals `x` exactly or overlaps no
/// input.
pub unsafe fn batch_norm_inference_f32(
    x: *const f32,
    scale: *const f32,
    bias: *const f32,
    mean: *const f32,
    var: *const f32,
    out: *mut f32,
    n: usize,
    c: usize,
    hw: usize,
    eps: f32,
    par: bool,
) {
    let planes = n * c;
    if planes == 0 || hw == 0 {
        return;
    }
    let a = Args { x, scale, bias, mean, var, out };
    let block = |start: usize, len: usize| {
        for p in start..start + len {
            // SAFETY: forwarded contract, `p < n * c`.
            unsafe { plane(a, p, c, hw, eps) };
        }
    };
    if par {
        par_for(planes, (PAR_CHUNK / hw).max(1), &block);
    } else {
        block(0, planes);
    }
}

/// Normalises plane `p` (channel `p % c`) of `hw` elements.
///
/// # Safety
/// As [`batch_norm_inference_f32`], with `p < n * c`.
unsafe fn plane(a: Args, p: usize, c: usize, hw: usize, eps: f32) {
    let ch = p % c;
    // SAFETY: channel `ch` and plane `p` are in bounds by the contract.
    // The slices are built only where they cannot overlap: one `&mut` when
    // `out == x`, else disjoint ranges.
    unsafe {
        let (m, s, b) = (*a.mean.add(ch), *a.scale.add(ch), *a.bias.add(ch));
        let inv = 1.0 / (*a.var.add(ch) + eps).sqrt();
        let dst = std::slice::from_raw_parts_mut(a.out.add(p * hw), hw);
        if std::ptr::eq(a.x, a.out) {
            for v in dst.iter_mut() {
                *v = affine(*v, m, inv, s, b);
            }
        } else {
            let src = std::slice::from_raw_parts(a.x.add(p * hw), hw);
            for (o, &v) in dst.iter_mut().zip(src) {
                *o = affine(v, m, inv, s, b);
            }
        }
    }
}
