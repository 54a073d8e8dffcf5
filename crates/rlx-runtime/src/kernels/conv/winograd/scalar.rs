//! The reference kernels: one lane at a time, the op sequence of the
//! transform macros on `f32` and `f32::mul_add` wherever a vector kernel
//! fuses. Every other kernel reproduces these bits.

use super::{wino_in_1d, wino_input, wino_out_1d, wino_output, Gemm, OutTile, B, P, T};

fn add(a: f32, b: f32) -> f32 {
    a + b
}

fn sub(a: f32, b: f32) -> f32 {
    a - b
}

/// `a * b + c`, one rounding.
fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// See [`super::GemmFn`]: any `r` and `q`.
///
/// # Safety
///
/// As [`super::GemmFn`].
pub(super) unsafe fn gemm(g: &Gemm) {
    // SAFETY: every index is one of the formula's, inside the extents the
    // caller promised: `i < r`, `j < q`, `ci < c_in`, `lane < 16`.
    unsafe {
        for j in 0..g.q {
            for i in 0..g.r {
                for lane in 0..B {
                    let mut acc = 0.0f32;
                    for ci in 0..g.c_in {
                        let v = *g.v.add((ci / B) * g.v_block + i * g.v_tile + ci % B);
                        let u = *g.u.add(j * g.u_block + ci * B + lane);
                        acc = v.mul_add(u, acc);
                    }
                    *g.m.add((j * g.r + i) * B + lane) = acc;
                }
            }
        }
    }
}

/// See [`super::InputFn`].
///
/// # Safety
///
/// As [`super::InputFn`].
pub(super) unsafe fn input(src: *const f32, src_row: usize, dst: *mut f32, dst_step: usize) {
    for lane in 0..B {
        let mut d = [[0.0f32; P]; P];
        for (k, x) in d.iter_mut().flatten().enumerate() {
            // SAFETY: the patch's pixels.
            *x = unsafe { *src.add((k / P) * src_row + (k % P) * B + lane) };
        }
        let v = wino_input!(add, sub, fma, (4.0f32, -4.0f32, -5.0f32), d);
        for (k, x) in v.iter().flatten().enumerate() {
            // SAFETY: point `k`'s 16 lanes at `dst + k * dst_step`.
            unsafe { *dst.add(k * dst_step + lane) = *x };
        }
    }
}

/// See [`super::OutputFn`].
///
/// # Safety
///
/// As [`super::OutputFn`].
pub(super) unsafe fn output(o: &OutTile) {
    for lane in 0..B {
        let mut m = [[0.0f32; P]; P];
        for (k, x) in m.iter_mut().flatten().enumerate() {
            // SAFETY: the 36 products of the formula.
            *x = unsafe { *o.m.add(k * o.m_step + lane) };
        }
        let y = wino_output!(add, sub, fma, (2.0f32, 4.0f32, 8.0f32), m);
        for (i, row) in y.iter().enumerate().take(o.rows) {
            for (j, &v) in row.iter().enumerate().take(o.cols) {
                let at = i * o.out_row + j * B + lane;
                // SAFETY: pixel `(i, j) < (rows, cols)` of the tile, its
                // bias lane and residual when not null.
                unsafe {
                    let v = if o.bias.is_null() { v } else { v + *o.bias.add(lane) };
                    *o.out.add(at) = if o.res.is_null() { v } else { v + *o.res.add(at) };
                }
            }
        }
    }
    debug_assert!(o.rows <= T && o.cols <= T);
}
