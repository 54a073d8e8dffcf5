//! Rotary position embedding (`Rope`) of `[batch, seq, heads, head_dim]`
//! f32 rows with `cos`/`sin` tables of `[seq, head_dim / 2]`.
//!
//! Pair `i < head_dim / 2` is `(i, i + head_dim / 2)`, or `(2i, 2i + 1)`
//! when interleaved, and rotates by table entry `[s, i]`:
//! `x1' = x1 * c - x2 * s`, `x2' = x2 * c + x1 * s`. With an odd
//! `head_dim` the last element belongs to no pair and is copied unchanged.
//! Products are rounded before they are summed on every ISA, so the AVX2
//! variant matches the scalar one bit for bit. `out` may equal `x`.

mod scalar;

#[cfg(target_arch = "x86_64")]
mod avx2;

#[cfg(test)]
mod tests;

use crate::kernels::variants::variants;

use crate::threads::par_for;

/// Elements per parallel chunk.
const PAR_CHUNK: usize = 16 * 1024;

/// One row's rotation: `(x, cos, sin, out, half)`.
type RowFn = unsafe fn(*const f32, *const f32, *const f32, *mut f32, usize);

/// The row functions of one ISA: half layout, then interleaved.
#[derive(Clone, Copy)]
pub(crate) struct RopeOps {
    half: RowFn,
    interleaved: RowFn,
}

pub(crate) const SCALAR: RopeOps = RopeOps { half: scalar::rotate_half, interleaved: scalar::rotate_interleaved };

#[cfg(target_arch = "x86_64")]
pub(crate) const AVX2: RopeOps = RopeOps { half: avx2::avx2_rotate_half, interleaved: avx2::avx2_rotate_interleaved };

variants! {
    /// The row functions, best first.
    pub(crate) static ROPE_OPS: RopeOps = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => AVX2,
        "scalar" => SCALAR,
    ];
}

/// The row functions for this CPU, chosen once.
#[inline]
fn ops() -> &'static RopeOps {
    ROPE_OPS.best()
}

/// Pointers of one call, shareable with `par_for` workers.
#[derive(Clone, Copy)]
struct Args {
    x: *const f32,
    cos: *const f32,
    sin: *const f32,
    out: *mut f32,
}

// SAFETY: workers read the inputs and write disjoint rows of `out`; the
// `par_for` joins before the kernel returns.
unsafe impl Send for Args {}
// SAFETY: `&Args` only exposes the pointers by copy; the workers' use is
// the read-only / disjoint-row access described above.
unsafe impl Sync for Args {}

/// `rope_f32` with the given row functions.
///
/// # Safety
/// As [`rope_f32`].
pub(crate) unsafe fn rope_with(
    ops: &RopeOps,
    x: *const f32,
    cos: *const f32,
    sin: *const f32,
    out: *mut f32,
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
    interleaved: bool,
    par: bool,
) {
    let rows = batch * seq * heads;
    if rows == 0 || head_dim == 0 {
        return;
    }
    let row_fn = if interleaved { ops.interleaved } else { ops.half };
    let a = Args { x, cos, sin, out };
    let block = |start: usize, len: usize| {
        for r in start..start + len {
            // SAFETY: forwarded contract, `r < rows`.
            unsafe { rope_row(row_fn, a, r, seq, heads, head_dim) };
        }
    };
    if par {
        par_for(rows, (PAR_CHUNK / head_dim).max(1), &block);
    } else {
        block(0, rows);
    }
}

/// Rotates row `r` of `[batch, seq, heads, head_dim]`.
///
/// # Safety
/// As [`rope_f32`], with `r < batch * seq * heads`.
unsafe fn rope_row(row_fn: RowFn, a: Args, r: usize, seq: usize, heads: usize, head_dim: usize) {
    let half = head_dim / 2;
    // Rows are `[b, s, h]` in order, so the position is the middle index.
    let s = (r / heads) % seq;
    let at = r * head_dim;
    // SAFETY: row `r` and table row `s` are in bounds by the contract; the
    // row functions allow `out == x`.
    unsafe {
        row_fn(a.x.add(at), a.cos.add(s * half), a.sin.add(s * half), a.out.add(at), half);
        if head_dim % 2 == 1 {
            *a.out.add(at + head_dim - 1) = *a.x.add(at + head_dim - 1);
        }
    }
}

/// `Rope` over `[batch, seq, heads, head_dim]` (see the module docs for
/// the pairing and the rotation). Parallel over rows with `par`.
///
/// # Safety
/// `x` readable and `out` writable for `batch * seq * heads * head_dim`
/// f32; `cos`, `sin` readable for `seq * (head_dim / 2)`; `out` equals `x`
/// exactly or overlaps no input.
pub unsafe fn rope_f32(
    x: *const f32,
    cos: *const f32,
    sin: *const f32,
    out: *mut f32,
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
    interleaved: bool,
    par: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { rope_with(ops(), x, cos, sin, out, batch, seq, heads, head_dim, interleaved, par) }
}

/// `Rope` of `[seq, heads, head_dim]` at the positions `p..p + seq` of a
/// decoder step, `p = *pos`: rows `p..p + seq` of the `[max_len, head_dim /
/// 2]` tables. A position outside the tables writes zeros.
///
/// # Safety
/// As [`rope_f32`] with `batch = 1`, except that `cos` and `sin` are
/// readable for `max_len * (head_dim / 2)` f32; `pos` readable for one i64.
pub unsafe fn rope_at_f32(
    x: *const f32,
    cos: *const f32,
    sin: *const f32,
    pos: *const i64,
    out: *mut f32,
    seq: usize,
    heads: usize,
    head_dim: usize,
    max_len: usize,
    interleaved: bool,
    par: bool,
) {
    // SAFETY: `pos` is readable by the contract.
    match unsafe { crate::kernels::step_position(pos, seq, max_len) } {
        Some(p) => {
            let at = p * (head_dim / 2);
            // SAFETY: rows `p..p + seq` lie inside the tables (`p + seq <=
            // max_len`); the rest is `rope_f32`'s contract.
            unsafe { rope_f32(x, cos.add(at), sin.add(at), out, 1, seq, heads, head_dim, interleaved, par) }
        }
        // SAFETY: `out` is writable for `seq * heads * head_dim` f32.
        None => unsafe { std::ptr::write_bytes(out, 0, seq * heads * head_dim) },
    }
}
