//! The banded path, one unit at a time: staging a block of one plane in
//! phase planes, the band kernel over them, and the copy to the output.

use std::mem::MaybeUninit;

use rlx_core::ActKind;

use super::{valid_outputs, Conv2dShape, Isa, Plan, SendPtr, Tap, ACC_BUF, MAX_PHASES, MAX_TAPS, PHASE_BUF};

/// Buffers on cache-line boundaries: a phase plane (a multiple of `PAD`
/// f32) and every vector of accumulators then start on one.
#[repr(C, align(64))]
struct Lines<const N: usize>([f32; N]);

/// The first `len` f32 of `buf`, zeroed.
#[inline(always)]
fn zeroed_prefix<const N: usize>(buf: &mut MaybeUninit<Lines<N>>, len: usize) -> &mut [f32] {
    assert!(len <= N);
    let p = buf.as_mut_ptr().cast::<f32>();
    // SAFETY: `len <= N` f32 of the buffer, zeroed (all-zero bytes are
    // +0.0) before the slice is made.
    unsafe {
        p.write_bytes(0, len);
        std::slice::from_raw_parts_mut(p, len)
    }
}

/// What every unit shares.
pub(super) struct Job<'a> {
    pub(super) x: SendPtr<f32>,
    pub(super) w: SendPtr<f32>,
    pub(super) bias: SendPtr<f32>,
    pub(super) out: SendPtr<f32>,
    pub(super) s: &'a Conv2dShape,
    pub(super) plan: Plan,
    /// Applied to each unit's accumulators before they are copied out.
    pub(super) act: ActKind,
}

/// Units `start..start + len`, band-major: unit `u` is block (band and
/// tile) `u / planes` of plane `u % planes`, so consecutive units share
/// the layout of the phase planes and only the first of a run writes
/// their padding.
///
/// # Safety
///
/// As [`super::depthwise_with`], whose plan `job` carries; no other call
/// runs these units; the CPU has `I`'s features (this is inlined into a
/// function that enables them).
#[inline(always)]
pub(super) unsafe fn run_units<I: Isa>(job: &Job<'_>, start: usize, len: usize) {
    let (s, p) = (job.s, &job.plan);
    // The parts the plan uses, zeroed once: the band kernels read (and
    // drop) values past what a unit writes, which must be initialised.
    let mut phases = MaybeUninit::<Lines<PHASE_BUF>>::uninit();
    let mut acc = MaybeUninit::<Lines<ACC_BUF>>::uninit();
    let phases = zeroed_prefix(&mut phases, s.sh * s.sw * p.plane);
    let acc = zeroed_prefix(&mut acc, p.acc);
    let mut taps = [Tap { off: 0, w: 0.0 }; MAX_TAPS];
    let taps = &mut taps[..s.kh * s.kw];
    for ki in 0..s.kh {
        for kj in 0..s.kw {
            let phase = (ki * s.dh % s.sh) * s.sw + kj * s.dw % s.sw;
            taps[ki * s.kw + kj].off = phase * p.plane + (ki * s.dh / s.sh) * p.pitch + kj * s.dw / s.sw;
        }
    }
    let (n_taps, planes) = (taps.len(), s.n * s.c_out);
    let (mut plane, mut block) = (start % planes, start / planes);
    let mut c = plane % s.c_out;
    let mut layout = Layout::new(s, p, block);
    let mut fresh = true;
    for _ in 0..len {
        for (i, t) in taps.iter_mut().enumerate() {
            // SAFETY: filter `c` has `kh * kw` weights.
            t.w = unsafe { *job.w.get().add(c * n_taps + i) };
        }
        // SAFETY: input plane `plane`; the layout is this block's.
        unsafe {
            fill::<I>(job.x.get().add(super::input_plane(s, plane) * s.h * s.w_in), s, p, &layout, fresh, phases)
        };
        let bias = job.bias.get();
        // SAFETY: bias `c` when there is a bias.
        let bias = (!bias.is_null()).then(|| unsafe { *bias.add(c) });
        let (rows, cols) = (layout.rows, layout.cols);
        let len = (rows - 1) * p.pitch + cols;
        // SAFETY: `plan` sized the phase planes for these reads and the
        // accumulators for `len` rounded up to `PAD` (module docs).
        unsafe { I::band(phases.as_ptr(), taps, acc.as_mut_ptr(), len, bias) };
        if job.act != ActKind::Identity {
            // The dropped columns between rows take it too, harmlessly.
            // SAFETY: `len` accumulators, in place.
            unsafe { crate::kernels::activation::act_f32_slice(job.act, acc.as_ptr(), acc.as_mut_ptr(), len, false) };
        }
        let out = job.out.get().wrapping_add((plane * s.h_out + layout.ho0) * s.w_out + layout.wo0);
        for r in 0..rows {
            // SAFETY: output row `ho0 + r`, columns `wo0..wo0 + cols` of
            // this plane: this unit's block.
            unsafe { I::copy(acc.as_ptr().add(r * p.pitch), out.add(r * s.w_out), cols) };
        }
        // The next unit: the next plane, or the next block's first.
        (plane, c, fresh) = (plane + 1, c + 1, false);
        if c == s.c_out {
            c = 0;
        }
        if plane == planes {
            (plane, c, block, fresh) = (0, 0, block + 1, true);
            if block < p.bands * p.tiles {
                layout = Layout::new(s, p, block);
            }
        }
    }
}

/// One block (band and tile) of every plane: which outputs, and where
/// each phase's rows come from.
struct Layout {
    /// First output row and column, output rows and columns.
    ho0: usize,
    wo0: usize,
    rows: usize,
    cols: usize,
    /// Phase rows written: the outputs' and the `ext_h` below them.
    phase_rows: usize,
    /// The phase planes some tap reads (the others stay unwritten).
    planes: [usize; MAX_PHASES],
    n_planes: usize,
    /// What fills their rows.
    jobs: [RowJob; MAX_PHASES],
    n_jobs: usize,
}

/// Fills the rows of one phase (or, at stride 2, of both column phases of
/// one row phase) from the input.
#[derive(Clone, Copy)]
struct RowJob {
    /// Phase rows `r0..r1` lie inside the input (the others are padding).
    r0: usize,
    r1: usize,
    /// Input offset of row `r0`'s first column read, and the step to the
    /// next phase row (`sh` input rows).
    src: usize,
    src_step: usize,
    kind: JobKind,
}

/// Offsets are into phase row 0 of the buffer.
#[derive(Clone, Copy)]
enum JobKind {
    /// `dst[q] = src[q * sw]` for `q < n`.
    Strided { dst: usize, n: usize },
    /// Stride 2, both column phases: the input columns alternate between
    /// them. With `head`, `src[0]` goes to `odd - 1`; then `even[i] =
    /// src[h + 2i]`, `odd[i] = src[h + 2i + 1]` for `i < pairs` (`h =
    /// head`); with `tail`, `even[pairs] = src[h + 2 * pairs]`.
    Split { even: usize, odd: usize, head: bool, pairs: usize, tail: bool },
}

impl Layout {
    fn new(s: &Conv2dShape, p: &Plan, block: usize) -> Layout {
        let (ho0, wo0) = (block / p.tiles * p.rows, block % p.tiles * p.cols);
        let (rows, cols) = (p.rows.min(s.h_out - ho0), p.cols.min(s.w_out - wo0));
        let phase_rows = rows + p.ext_h;
        let empty = RowJob { r0: 0, r1: 0, src: 0, src_step: 0, kind: JobKind::Strided { dst: 0, n: 0 } };
        let mut l = Layout {
            ho0,
            wo0,
            rows,
            cols,
            phase_rows,
            planes: [0; MAX_PHASES],
            n_planes: 0,
            jobs: [empty; MAX_PHASES],
            n_jobs: 0,
        };
        let used_b = |b: usize| (0..s.kw).any(|kj| kj * s.dw % s.sw == b);
        let split = s.sw == 2 && used_b(0) && used_b(1);
        for a in (0..s.sh).filter(|&a| (0..s.kh).any(|ki| ki * s.dh % s.sh == a)) {
            let rs = valid_outputs(phase_rows, s.sh, (ho0 * s.sh + a) as isize - s.ph as isize, s.h);
            // Input row of phase row `rs.start` (inside when `rs` is not
            // empty).
            let row = ((ho0 + rs.start) * s.sh + a).saturating_sub(s.ph) * s.w_in;
            let job = |src: usize, kind: JobKind| RowJob {
                r0: rs.start,
                r1: rs.end,
                src: row + src,
                src_step: s.sh * s.w_in,
                kind,
            };
            for b in (0..s.sw).filter(|&b| used_b(b)) {
                l.planes[l.n_planes] = (a * s.sw + b) * p.plane;
                l.n_planes += 1;
            }
            if split {
                // Input columns `c_lo..c_hi`; column `c` is phase `(c +
                // pw) % 2`, column `(c + pw) / 2 - wo0`.
                let c_lo = (2 * wo0).saturating_sub(s.pw);
                let c_hi = (2 * (wo0 + p.pitch)).saturating_sub(s.pw).min(s.w_in);
                if rs.is_empty() || c_lo >= c_hi {
                    continue;
                }
                let head = (c_lo + s.pw) % 2 == 1;
                let q = (c_lo + s.pw).div_ceil(2) - wo0;
                let left = c_hi - c_lo - head as usize;
                let (even, odd) = ((a * 2) * p.plane + q, (a * 2 + 1) * p.plane + q);
                let kind = JobKind::Split { even, odd, head, pairs: left / 2, tail: left % 2 == 1 };
                l.jobs[l.n_jobs] = job(c_lo, kind);
                l.n_jobs += 1;
                continue;
            }
            for b in (0..s.sw).filter(|&b| used_b(b)) {
                let qs = valid_outputs(p.pitch, s.sw, (wo0 * s.sw + b) as isize - s.pw as isize, s.w_in);
                if rs.is_empty() || qs.is_empty() {
                    continue;
                }
                let col = (wo0 + qs.start) * s.sw + b - s.pw;
                let kind = JobKind::Strided { dst: (a * s.sw + b) * p.plane + qs.start, n: qs.len() };
                l.jobs[l.n_jobs] = job(col, kind);
                l.n_jobs += 1;
            }
        }
        l
    }
}

/// Writes the phase rows of `l`: row `r`, column `q` of phase `(a, b)` is
/// input `((ho0 + r)*sh + a - ph, (wo0 + q)*sw + b - pw)`, or 0 outside
/// the input. The zeros only when `fresh`: else the previous unit, of the
/// same layout, left them.
///
/// # Safety
///
/// `x` valid for reads of the `h * w_in` input plane; `phases` holds
/// `sh * sw` planes of `plan.plane` f32 and `l` is a block of `p`; the CPU
/// has `I`'s features.
#[inline(always)]
unsafe fn fill<I: Isa>(x: *const f32, s: &Conv2dShape, p: &Plan, l: &Layout, fresh: bool, phases: &mut [f32]) {
    let len = l.phase_rows * p.pitch;
    if fresh {
        for &plane in &l.planes[..l.n_planes] {
            // SAFETY: the phase plane's rows.
            unsafe { I::zero(phases[plane..][..len].as_mut_ptr(), len) };
        }
    }
    let dst = phases.as_mut_ptr();
    let jobs = &l.jobs[..l.n_jobs];
    // Padded rows in order, so the input is read front to back.
    for r in 0..l.phase_rows {
        for job in jobs {
            if r < job.r0 || r >= job.r1 {
                continue;
            }
            // SAFETY: the job's input row and phase rows (see `Layout`):
            // inside the input plane and the phase planes.
            unsafe {
                let (src, row) = (x.add(job.src + (r - job.r0) * job.src_step), dst.add(r * p.pitch));
                match job.kind {
                    JobKind::Strided { dst, n } => match s.sw {
                        1 => I::copy(src, row.add(dst), n),
                        2 => I::gather2(src, row.add(dst), n),
                        sw => {
                            for q in 0..n {
                                *row.add(dst + q) = *src.add(q * sw);
                            }
                        }
                    },
                    JobKind::Split { even, odd, head, pairs, tail } => {
                        if head {
                            *row.add(odd - 1) = *src;
                        }
                        let src = src.add(head as usize);
                        I::split2(src, row.add(even), row.add(odd), pairs);
                        if tail {
                            *row.add(even + pairs) = *src.add(2 * pairs);
                        }
                    }
                }
            }
        }
    }
}
