//! Reorders between NCHW `[n, c, hw]` and the blocked channel layout
//! `[n, cb, hw, 16]` (`rlx_core::blocked`): exact copies.
//!
//! Both directions walk (image, block, run of [`RUN`] pixels) tasks and
//! move 16 pixels x 16 channels at a time: on AVX-512 a register
//! transpose of 16 vectors (in-lane unpacks and shuffles, then 128-bit
//! lane shuffles), the short last tile masked; elsewhere plain loops.
//! Into the layout, the padded lanes of the last block are written as
//! +0.0; out of it, they are never read.

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK};

use super::SharedPtr;
use crate::kernels::variants::variants;

const L: usize = CHANNEL_BLOCK;

/// Pixels per task: 64 KiB of blocked output.
const RUN: usize = 1024;

/// One direction's tasks `start..start + len` (see [`for_tasks`]).
type TasksFn = unsafe fn(src: *const f32, dst: *mut f32, c: usize, hw: usize, start: usize, len: usize);

/// Both directions' tasks of one variant.
#[derive(Clone, Copy)]
struct Tasks {
    to_blocked: TasksFn,
    to_nchw: TasksFn,
}

variants! {
    /// The variants, best first.
    static TASKS: Tasks = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => Tasks { to_blocked: x86::to_blocked_tasks, to_nchw: x86::to_nchw_tasks },
        "scalar" => Tasks { to_blocked: to_blocked_tasks, to_nchw: to_nchw_tasks },
    ];
}

/// `[n, c, hw]` to `[n, ceil(c / 16), hw, 16]`, padded lanes +0.0.
///
/// # Safety
///
/// `src` valid for reads of `n * c * hw` f32, `dst` for writes of `n *
/// ceil(c / 16) * hw * 16`, not overlapping.
pub unsafe fn nchw_to_blocked_f32(src: *const f32, dst: *mut f32, n: usize, c: usize, hw: usize, par: bool) {
    // SAFETY: forwarded contract; the variant is one this CPU runs.
    unsafe { for_tasks(TASKS.best().to_blocked, src, dst, n, c, hw, par) }
}

/// `[n, ceil(c / 16), hw, 16]` to `[n, c, hw]` (padded lanes ignored).
///
/// # Safety
///
/// `src` valid for reads of `n * ceil(c / 16) * hw * 16` f32, `dst` for
/// writes of `n * c * hw`, not overlapping.
pub unsafe fn blocked_to_nchw_f32(src: *const f32, dst: *mut f32, n: usize, c: usize, hw: usize, par: bool) {
    // SAFETY: forwarded contract; the variant is one this CPU runs.
    unsafe { for_tasks(TASKS.best().to_nchw, src, dst, n, c, hw, par) }
}

/// Runs `tasks` over every (image, block, pixel run), split over the pool
/// when `par`.
///
/// # Safety
///
/// As the entry of `tasks`' direction; `tasks` runs on this CPU.
pub(super) unsafe fn for_tasks(
    tasks: TasksFn,
    src: *const f32,
    dst: *mut f32,
    n: usize,
    c: usize,
    hw: usize,
    par: bool,
) {
    let total = n * channel_blocks(c) * hw.div_ceil(RUN);
    let (src, dst) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    // SAFETY: tasks write disjoint pixel runs of disjoint blocks.
    let run = |start: usize, len: usize| unsafe { tasks(src.get(), dst.get(), c, hw, start, len) };
    if par {
        crate::threads::par_for(total, 1, &run);
    } else {
        run(0, total);
    }
}

/// What task `t` covers: its image, block, first pixel and pixel count.
#[inline(always)]
fn task(t: usize, c: usize, hw: usize) -> (usize, usize, usize, usize) {
    let runs = hw.div_ceil(RUN);
    let (plane, p0) = (t / runs, t % runs * RUN);
    let cb = channel_blocks(c);
    (plane / cb, plane % cb, p0, RUN.min(hw - p0))
}

/// The plain tasks into the layout.
///
/// # Safety
///
/// As [`nchw_to_blocked_f32`]; tasks inside `n * cb * ceil(hw / RUN)`.
pub(super) unsafe fn to_blocked_tasks(src: *const f32, dst: *mut f32, c: usize, hw: usize, start: usize, len: usize) {
    for t in start..start + len {
        let (img, b, p0, np) = task(t, c, hw);
        let real = L.min(c - b * L);
        // SAFETY: channels `b*16..b*16 + real` of image `img` and block `b`,
        // pixels `p0..p0 + np`.
        unsafe {
            let s = src.add((img * c + b * L) * hw + p0);
            let d = dst.add(((img * channel_blocks(c) + b) * hw + p0) * L);
            for p in 0..np {
                for l in 0..L {
                    *d.add(p * L + l) = if l < real { *s.add(l * hw + p) } else { 0.0 };
                }
            }
        }
    }
}

/// The plain tasks out of the layout.
///
/// # Safety
///
/// As [`blocked_to_nchw_f32`]; tasks inside `n * cb * ceil(hw / RUN)`.
pub(super) unsafe fn to_nchw_tasks(src: *const f32, dst: *mut f32, c: usize, hw: usize, start: usize, len: usize) {
    for t in start..start + len {
        let (img, b, p0, np) = task(t, c, hw);
        let real = L.min(c - b * L);
        // SAFETY: as in `to_blocked_tasks`, the other way.
        unsafe {
            let s = src.add(((img * channel_blocks(c) + b) * hw + p0) * L);
            let d = dst.add((img * c + b * L) * hw + p0);
            for l in 0..real {
                for p in 0..np {
                    *d.add(l * hw + p) = *s.add(p * L + l);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    //! AVX-512F tiles: 16 loads, a register transpose, 16 stores.

    use std::arch::x86_64::*;

    use super::{channel_blocks, task, L};

    /// `r[i][j]` to `r[j][i]`: pairs unpacked in 128-bit lanes, 4x4 lane
    /// transposes by `shuffle_ps`, then the 4x4 of 128-bit lanes by
    /// `shuffle_f32x4`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn transpose16(r: &mut [__m512; 16]) {
        let mut t = [_mm512_setzero_ps(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        // u[4g + k], 128-bit lane q: column 4q + k of rows 4g..4g + 4.
        let mut u = [_mm512_setzero_ps(); 16];
        for g in 0..4 {
            let (lo0, hi0, lo1, hi1) = (t[4 * g], t[4 * g + 1], t[4 * g + 2], t[4 * g + 3]);
            u[4 * g] = _mm512_shuffle_ps::<0x44>(lo0, lo1);
            u[4 * g + 1] = _mm512_shuffle_ps::<0xEE>(lo0, lo1);
            u[4 * g + 2] = _mm512_shuffle_ps::<0x44>(hi0, hi1);
            u[4 * g + 3] = _mm512_shuffle_ps::<0xEE>(hi0, hi1);
        }
        for k in 0..4 {
            let v0 = _mm512_shuffle_f32x4::<0x88>(u[k], u[4 + k]);
            let w0 = _mm512_shuffle_f32x4::<0xDD>(u[k], u[4 + k]);
            let v1 = _mm512_shuffle_f32x4::<0x88>(u[8 + k], u[12 + k]);
            let w1 = _mm512_shuffle_f32x4::<0xDD>(u[8 + k], u[12 + k]);
            r[k] = _mm512_shuffle_f32x4::<0x88>(v0, v1);
            r[4 + k] = _mm512_shuffle_f32x4::<0x88>(w0, w1);
            r[8 + k] = _mm512_shuffle_f32x4::<0xDD>(v0, v1);
            r[12 + k] = _mm512_shuffle_f32x4::<0xDD>(w0, w1);
        }
    }

    /// Lanes `< n` (at most 16).
    #[inline]
    fn mask(n: usize) -> __mmask16 {
        ((1u32 << n.min(16)) - 1) as __mmask16
    }

    /// # Safety
    ///
    /// As [`super::to_blocked_tasks`]; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn to_blocked_tasks(
        src: *const f32,
        dst: *mut f32,
        c: usize,
        hw: usize,
        start: usize,
        len: usize,
    ) {
        for t in start..start + len {
            let (img, b, p0, np) = task(t, c, hw);
            let real = L.min(c - b * L);
            // SAFETY: as in `super::to_blocked_tasks`; loads masked to the
            // `m` pixels left of each real channel row, stores to `m`
            // pixels; the other rows and pixels are neither read nor written
            // (a fully masked access is slow on some CPUs: skipped instead).
            unsafe {
                let s = src.add((img * c + b * L) * hw + p0);
                let d = dst.add(((img * channel_blocks(c) + b) * hw + p0) * L);
                let mut p = 0;
                while p < np {
                    let m = L.min(np - p);
                    // Constant trip counts keep the tile in registers.
                    let mut r: [__m512; 16] = std::array::from_fn(|l| {
                        if l < real {
                            _mm512_maskz_loadu_ps(mask(m), s.add(l * hw + p))
                        } else {
                            _mm512_setzero_ps()
                        }
                    });
                    transpose16(&mut r);
                    for (j, v) in r.iter().enumerate() {
                        if j < m {
                            _mm512_storeu_ps(d.add((p + j) * L), *v);
                        }
                    }
                    p += L;
                }
            }
        }
    }

    /// # Safety
    ///
    /// As [`super::to_nchw_tasks`]; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn to_nchw_tasks(
        src: *const f32,
        dst: *mut f32,
        c: usize,
        hw: usize,
        start: usize,
        len: usize,
    ) {
        for t in start..start + len {
            let (img, b, p0, np) = task(t, c, hw);
            let real = L.min(c - b * L);
            // SAFETY: as in `super::to_nchw_tasks`; `m` pixel vectors read,
            // stores masked to `m` pixels of each real channel row.
            unsafe {
                let s = src.add(((img * channel_blocks(c) + b) * hw + p0) * L);
                let d = dst.add((img * c + b * L) * hw + p0);
                let mut p = 0;
                while p < np {
                    let m = L.min(np - p);
                    let mut r: [__m512; 16] = std::array::from_fn(|j| {
                        if j < m {
                            _mm512_loadu_ps(s.add((p + j) * L))
                        } else {
                            _mm512_setzero_ps()
                        }
                    });
                    transpose16(&mut r);
                    for (l, v) in r.iter().enumerate() {
                        if l < real {
                            _mm512_mask_storeu_ps(d.add(l * hw + p), mask(m), *v);
                        }
                    }
                    p += L;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Both directions, every variant, serial and split: the layout's
    //! definition, padded lanes zero, and the exact round trip.

    use super::*;

    /// The variants of each direction this CPU runs: `(name, to, from)`.
    fn variants() -> Vec<(&'static str, TasksFn, TasksFn)> {
        TASKS.supported().into_iter().map(|(name, t)| (name, t.to_blocked, t.to_nchw)).collect()
    }

    #[test]
    fn layout_padding_and_round_trip() {
        for n in [1, 2] {
            for c in [1, 3, 16, 17, 40, 33] {
                for hw in [1, 5, 7, 13, 31, 49, 1030] {
                    let cb = channel_blocks(c);
                    let x: Vec<f32> = (0..n * c * hw).map(|i| i as f32 * 0.5 - 3.0).collect();
                    for (name, to, from) in variants() {
                        for par in [false, true] {
                            let mut b = vec![f32::NAN; n * cb * hw * L];
                            // SAFETY: buffers sized for the shape; the variant runs here.
                            unsafe { for_tasks(to, x.as_ptr(), b.as_mut_ptr(), n, c, hw, par) };
                            for img in 0..n {
                                for ch in 0..cb * L {
                                    for p in 0..hw {
                                        let got = b[((img * cb + ch / L) * hw + p) * L + ch % L];
                                        let want = if ch < c { x[(img * c + ch) * hw + p] } else { 0.0 };
                                        assert_eq!(got.to_bits(), want.to_bits(), "{name} n {n} c {c} hw {hw}");
                                    }
                                }
                            }
                            // Padded lanes are ignored on the way back.
                            for (i, v) in b.iter_mut().enumerate() {
                                if (i / (hw * L) % cb) * L + i % L >= c {
                                    *v = f32::NAN;
                                }
                            }
                            let mut back = vec![f32::NAN; n * c * hw];
                            // SAFETY: as above.
                            unsafe { for_tasks(from, b.as_ptr(), back.as_mut_ptr(), n, c, hw, par) };
                            assert_eq!(back, x, "{name} round trip n {n} c {c} hw {hw} par {par}");
                        }
                    }
                }
            }
        }
    }

    /// Both directions vs a plain copy of the same bytes, single thread
    /// (`cargo test --release -p rlx-runtime reorder_timing -- --ignored
    /// --nocapture`); prints only.
    #[test]
    #[ignore]
    fn reorder_timing() {
        let best_of = |f: &mut dyn FnMut()| {
            let mut best = f64::MAX;
            for _ in 0..30 {
                let t = std::time::Instant::now();
                f();
                best = best.min(t.elapsed().as_secs_f64());
            }
            best * 1e6
        };
        println!(
            "{:<14} {:>8} {:>10} {:>10} {:>10} {:>10}",
            "shape", "copy us", "to best", "to plain", "from best", "from plain"
        );
        for (c, hw) in [(64, 112 * 112), (3, 224 * 224)] {
            let x: Vec<f32> = (0..c * hw).map(|i| i as f32).collect();
            let mut b = vec![0.0f32; channel_blocks(c) * hw * L];
            let mut y = vec![0.0f32; c * hw];
            let t_copy = best_of(&mut || y.copy_from_slice(&x));
            // SAFETY: buffers sized for the shape.
            let t_to = best_of(&mut || unsafe { nchw_to_blocked_f32(x.as_ptr(), b.as_mut_ptr(), 1, c, hw, false) });
            // SAFETY: as above.
            let t_to_plain =
                best_of(&mut || unsafe { for_tasks(to_blocked_tasks, x.as_ptr(), b.as_mut_ptr(), 1, c, hw, false) });
            // SAFETY: as above.
            let t_from = best_of(&mut || unsafe { blocked_to_nchw_f32(b.as_ptr(), y.as_mut_ptr(), 1, c, hw, false) });
            // SAFETY: as above.
            let t_from_plain =
                best_of(&mut || unsafe { for_tasks(to_nchw_tasks, b.as_ptr(), y.as_mut_ptr(), 1, c, hw, false) });
            let name = format!("{c}x{hw}");
            println!("{name:<14} {t_copy:>8.1} {t_to:>10.1} {t_to_plain:>10.1} {t_from:>10.1} {t_from_plain:>10.1}");
        }
    }
}
