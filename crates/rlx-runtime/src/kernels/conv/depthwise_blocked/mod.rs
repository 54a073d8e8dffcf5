//! Depthwise convolution on the blocked channel layout (NCHW16c,
//! `rlx_core::blocked`), one filter per channel (`groups == c_in ==
//! c_out`).
//!
//! Every output lane is `acc = +0; for ki { for kj { acc = fma(w, xpad,
//! acc) } }; out = acc + bias` (no add without a bias), then the
//! activation through the activation family's kernel: the operations of
//! the NCHW depthwise path (`super::depthwise`), in its order, so each lane
//! has its bits. A clamp activation (ReLU, Clip) runs in registers before
//! the store, with the activation kernel's bits. `xpad` is read from the zero-padded plane
//! (`PaddedPlane`) the input is copied into in scratch, or from the input
//! itself when no pixel read lies outside it: a padding tap multiplies a
//! real +0 as the NCHW phase planes do.
//!
//! A pixel's 16 channels are one vector, so nothing is broadcast: the
//! microkernel holds `R` output pixels of one row as `R` accumulators and
//! per tap loads the tap's weight vector once and `R` input vectors. Rows
//! are cut into nearly equal chunks of at most the variant's `R`, so any
//! row length runs at full width but for the last, shorter chunk.
//!
//! AVX-512F has a second, sliding microkernel for filter widths 3, 5, 7,
//! column stride 1 or 2 and column dilation 1 (the depthwise layers of
//! MobileNet / EfficientNet): per filter row it keeps the `kw` weight
//! vectors in registers and loads each input column once for all the
//! outputs that read it; it reads the input in place, a padding row or
//! column being a +0 vector (same bits as the padded plane's), so no
//! padded copy is made.
//!
//! [`Lanes16`] is one 16-lane block per ISA: `scalar` (the reference,
//! `[f32; 16]` with `mul_add`), `x86` (AVX-512F: one zmm; AVX2+FMA: two
//! ymm), `neon` (four q registers). Each variant's entry is the one
//! generic driver compiled with its target features, chosen once per
//! process. Work is split into (block, output row) tasks per image;
//! results are the same bits on every variant and thread count.

mod scalar;

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;

use crate::kernels::variants::variants;

use rlx_core::blocked::{channel_blocks, PaddedPlane, CHANNEL_BLOCK};
use rlx_core::ActKind;

use super::{Conv2dShape, SendPtr};
use crate::kernels::activation::as_clamp;

const L: usize = CHANNEL_BLOCK;

/// One block of 16 lanes in an ISA's registers; every operation is
/// lane-wise.
pub(super) trait Lanes16: Copy {
    /// Output pixels a microkernel call keeps in registers, at most.
    const R: usize;

    /// All lanes +0.
    ///
    /// # Safety
    ///
    /// The CPU has the ISA's features.
    unsafe fn zero() -> Self;

    /// 16 f32 from `p` (unaligned).
    ///
    /// # Safety
    ///
    /// `p` valid for reads of 16 f32; the CPU has the ISA's features.
    unsafe fn load(p: *const f32) -> Self;

    /// 16 f32 to `p` (unaligned).
    ///
    /// # Safety
    ///
    /// `p` valid for writes of 16 f32; the CPU has the ISA's features.
    unsafe fn store(self, p: *mut f32);

    /// `w * x + acc`, one rounding per lane.
    ///
    /// # Safety
    ///
    /// The CPU has the ISA's features.
    unsafe fn fma(w: Self, x: Self, acc: Self) -> Self;

    /// `self + b` per lane.
    ///
    /// # Safety
    ///
    /// The CPU has the ISA's features.
    unsafe fn add(self, b: Self) -> Self;

    /// `math::clip(self, lo, hi)` per lane, exactly (see
    /// `activation::as_clamp`).
    ///
    /// # Safety
    ///
    /// The CPU has the ISA's features.
    unsafe fn clamp(self, lo: f32, hi: f32) -> Self;
}

/// Where a job's input planes are and what each task computes.
pub(super) struct Job<'a> {
    /// Block 0's padded plane (the scratch, or the input in place).
    src: SendPtr<f32>,
    /// When set, tasks are whole blocks that fill their padded plane (at
    /// `src`) from this image's input, row by row as they need it.
    fill: Option<(SendPtr<f32>, PaddedPlane)>,
    /// Pixels between two blocks' planes and between two rows of one.
    block_stride: usize,
    pitch: usize,
    w: SendPtr<f32>,
    bias: SendPtr<f32>,
    /// Image's block 0 of the output.
    out: SendPtr<f32>,
    s: &'a Conv2dShape,
    act: ActKind,
    /// Without `fill`: tasks in row-major order (task `t` is output row
    /// `t / cb` of block `t % cb`), else block-major (row `t % h_out` of
    /// block `t / h_out`). See [`row_major`].
    row_major: bool,
}

/// Whether (block, row) tasks go row-major. Each thread runs a contiguous
/// share of the tasks, so this decides whether a thread reads a band of
/// rows of every block or every row of some blocks. The pointwise
/// convolution that usually writes a depthwise input splits it by rows
/// when a channel's plane is larger than the channel count (see the
/// blocked convolution's `band_major`), by channel blocks otherwise: the
/// same rule here keeps most of the input in the reading core's cache.
/// (Row-major on a 7x7 plane of 1152 channels was also slower alone: each
/// task then switches blocks.)
fn row_major(s: &Conv2dShape) -> bool {
    s.h * s.w_in > channel_blocks(s.c_in) * L
}

/// Runs tasks `start..start + len` of a job: (block, output row) pairs in
/// the order of [`Job::row_major`], or whole blocks that fill.
///
/// # Safety
///
/// As [`run_tasks`].
type TasksFn = unsafe fn(job: &Job<'_>, start: usize, len: usize);

/// One variant.
#[derive(Clone, Copy)]
pub(super) struct Kernel {
    tasks: TasksFn,
    /// Its tasks on [`microkernel_slide`], for the shapes that takes
    /// ([`sliding`]), reading the unpadded input.
    slide: Option<TasksFn>,
}

const SCALAR: Kernel = Kernel { tasks: scalar::scalar_tasks, slide: None };

variants! {
    /// The variants, best first.
    static KERNELS: Kernel = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => Kernel {
            tasks: x86::avx512_tasks::<false>,
            slide: Some(x86::avx512_tasks::<true>),
        },
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Kernel { tasks: x86::avx2_tasks, slide: None },
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => Kernel { tasks: neon::neon_tasks, slide: None },
        "scalar" => SCALAR,
    ];
}

/// The best variant, detected once per process.
#[inline]
fn kernel() -> Kernel {
    *KERNELS.best()
}

/// Every variant this CPU can run, scalar last.
#[cfg(test)]
pub(super) fn supported_kernels() -> Vec<Kernel> {
    KERNELS.supported().into_iter().map(|(_, k)| k).collect()
}

/// The depthwise convolution of the module docs on blocked tensors.
///
/// `x` is `[n, cb, h, w_in, 16]`, `out` `[n, cb, h_out, w_out, 16]` with
/// `cb = ceil(c / 16)` (every lane of it written), `w` packed by
/// `rlx_core::blocked::pack_depthwise_filter`, `bias` null or `cb * 16`
/// values (`pad_channels`). Per lane the result has the bits of
/// `conv2d_f32` on `ConvPath::Depthwise`, `act` included; `par` splits
/// tasks over the pool, with the same bits.
///
/// # Safety
///
/// - `s.groups == s.c_in == s.c_out`; `sh`, `sw`, `dh`, `dw` >= 1;
/// - `x` valid for reads of `n * cb * h * w_in * 16` f32, `w` of `cb * kh
///   * kw * 16`, `bias` null or valid for `cb * 16`;
/// - `out` valid for writes of `n * cb * h_out * w_out * 16` f32,
///   overlapping no input;
/// - `scratch` valid for `conv_blocked_scratch_bytes(s)` bytes (4-byte
///   aligned, overlapping nothing else) when that is non-zero.
pub unsafe fn depthwise_blocked_f32(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: forwarded contract; the selected kernel runs on this CPU.
    unsafe { depthwise_blocked_with(x, w, bias, out, s, act, scratch, par, kernel()) }
}

/// [`depthwise_blocked_f32`] on a given variant.
///
/// # Safety
///
/// As [`depthwise_blocked_f32`]; `kernel` from [`supported_kernels`] (or
/// the selected one).
pub(super) unsafe fn depthwise_blocked_with(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
    kernel: Kernel,
) {
    debug_assert!(s.groups == s.c_in && s.c_in == s.c_out, "depthwise_blocked_f32: multiplier 1 only");
    if s.n == 0 || s.c_out == 0 || s.h_out == 0 || s.w_out == 0 {
        return;
    }
    let cb = channel_blocks(s.c_in);
    let plane = PaddedPlane::of(s);
    let slide = kernel.slide.filter(|_| sliding(s));
    let direct = slide.is_some();
    let in_place = direct || plane.reads_input_in_place(s);
    let (in_img, out_img) = (cb * s.h * s.w_in * L, cb * s.h_out * s.w_out * L);
    let (block_stride, pitch) = if in_place { (s.h * s.w_in, s.w_in) } else { (plane.rows * plane.cols, plane.cols) };
    let work = s.w_out * L * s.kh * s.kw;
    // With padding (not sliding) and enough blocks for the pool, a task is one block:
    // it fills each padded row just before its first reader, so the copy
    // stays in cache. Otherwise tasks are (block, row), after one fill of
    // the whole image.
    let threads = if par { crate::threads::num_threads() } else { 1 };
    let by_block = !in_place && cb >= threads;
    let (tasks, per_task) = if by_block { (cb, s.h_out * work) } else { (cb * s.h_out, work) };
    for img in 0..s.n {
        let x_img = x.wrapping_add(img * in_img);
        let src = if in_place {
            x_img
        } else {
            if !by_block {
                // SAFETY: image `img`'s blocks; the scratch holds `cb` padded
                // planes (`conv_blocked_scratch_bytes`).
                unsafe { fill_padded(x_img, scratch, s, plane, cb, par) };
            }
            scratch.cast_const()
        };
        let job = Job {
            src: SendPtr(src.cast_mut()),
            fill: by_block.then_some((SendPtr(x_img.cast_mut()), plane)),
            block_stride,
            pitch,
            w: SendPtr(w.cast_mut()),
            bias: SendPtr(bias.cast_mut()),
            out: SendPtr(out.wrapping_add(img * out_img)),
            s,
            act,
            row_major: row_major(s),
        };
        // SAFETY: tasks write disjoint output rows (and padded planes) and
        // read the planes, complete up to what they read and unchanged
        // while they run; the caller vouches for the kernel.
        let run = |start: usize, len: usize| unsafe { (slide.unwrap_or(kernel.tasks))(&job, start, len) };
        if par {
            crate::threads::par_for(tasks, crate::kernels::reduce::units_per_chunk(per_task), &run);
        } else {
            run(0, tasks);
        }
    }
}

/// Copies one image's `cb` input planes into the zero-padded planes at
/// `dst` (padded pixel `(r, q)` is input `(r - ph, q - pw)`, or 0
/// outside), in (block, row) tasks.
///
/// # Safety
///
/// `x` valid for reads of `cb * h * w_in * 16` f32, `dst` for writes of
/// `cb * plane.rows * plane.cols * 16`, not overlapping.
unsafe fn fill_padded(x: *const f32, dst: *mut f32, s: &Conv2dShape, plane: PaddedPlane, cb: usize, par: bool) {
    let (x, dst) = (SendPtr(x.cast_mut()), SendPtr(dst));
    let run = |start: usize, len: usize| {
        for t in start..start + len {
            // SAFETY: row `t % rows` of block `t / rows`, inside both.
            unsafe { fill_row(x.get(), dst.get().add(t * plane.cols * L), s, plane, t / plane.rows, t % plane.rows) };
        }
    };
    let rows = cb * plane.rows;
    if par {
        crate::threads::par_for(rows, crate::kernels::reduce::units_per_chunk(plane.cols * L), &run);
    } else {
        run(0, rows);
    }
}

/// Padded row `r` of block `b` (see [`fill_padded`]) to `row`.
///
/// # Safety
///
/// `x` as in [`fill_padded`], `row` valid for writes of `plane.cols * 16`
/// f32, `b < cb`, `r < plane.rows`.
#[inline(always)]
unsafe fn fill_row(x: *const f32, row: *mut f32, s: &Conv2dShape, plane: PaddedPlane, b: usize, r: usize) {
    // Input columns that land in the plane, and where the first goes.
    let lead = s.pw.min(plane.cols);
    let copied = s.w_in.min(plane.cols - lead);
    let hi = r.wrapping_sub(s.ph);
    // SAFETY: the padded row's `cols` pixels; input row `hi` of block `b`
    // when inside, `copied` pixels from column 0.
    unsafe {
        if hi < s.h {
            row.write_bytes(0, lead * L);
            std::ptr::copy_nonoverlapping(x.add((b * s.h + hi) * s.w_in * L), row.add(lead * L), copied * L);
            let done = lead + copied;
            row.add(done * L).write_bytes(0, (plane.cols - done) * L);
        } else {
            row.write_bytes(0, plane.cols * L);
        }
    }
}

/// Tasks `start..start + len` of `job` on variant `V`: whole blocks
/// (filling their padded rows just ahead of the output rows that read
/// them) when the job fills, else (block, output row) pairs.
///
/// # Safety
///
/// As [`depthwise_blocked_with`], whose job this is; no other call runs
/// these tasks; the CPU has `V`'s features (this is inlined into a
/// function that enables them); `SLIDE` only for a job that reads the
/// input in place, of a shape `sliding` accepts.
#[inline(always)]
pub(super) unsafe fn run_tasks<V: Lanes16, const SLIDE: bool>(job: &Job<'_>, start: usize, len: usize) {
    let s = job.s;
    if let Some((x, plane)) = job.fill {
        // A window's rows: padded row `r` lives in slot `r % span` of the
        // block's plane, so the rows in use stay in cache.
        let span = (s.kh - 1) * s.dh + 1;
        for b in start..start + len {
            let ring = job.src.get().wrapping_add(b * job.block_stride * L);
            let mut filled = 0;
            for ho in 0..s.h_out {
                // Padded rows this output row reads, filled first (the
                // rows before them are read by no later output row).
                let need = ho * s.sh + span;
                for r in filled.max(ho * s.sh)..need {
                    // SAFETY: a slot of block `b`'s plane (`span <=
                    // plane.rows`), written by this task only.
                    unsafe { fill_row(x.get(), ring.add(r % span * job.pitch * L), s, plane, b, r) };
                }
                filled = need;
                // SAFETY: forwarded contract; the rows read are in their slots.
                unsafe { output_row::<V, SLIDE>(job, b, ho, ring, span) };
            }
        }
        return;
    }
    let cb = channel_blocks(s.c_in);
    for t in start..start + len {
        let (b, ho) = if job.row_major { (t % cb, t / cb) } else { (t / s.h_out, t % s.h_out) };
        let plane = job.src.get().wrapping_add(b * job.block_stride * L);
        // SAFETY: forwarded contract.
        unsafe { output_row::<V, SLIDE>(job, b, ho, plane, usize::MAX) };
    }
}

/// Output row `ho` of block `b`: chunks of at most `V::R` pixels (nearly
/// equal), then the activation. Padded row `r` of the block is row `r %
/// slots` at `plane`. With `SLIDE`, chunks of at most `R_SLIDE` on
/// [`microkernel_slide`], `plane` being the block's unpadded input.
///
/// # Safety
///
/// As [`run_tasks`]; the padded rows the row reads are written there;
/// with `SLIDE`, `sliding(job.s)` and the job reads the input in place.
#[inline(always)]
unsafe fn output_row<V: Lanes16, const SLIDE: bool>(
    job: &Job<'_>,
    b: usize,
    ho: usize,
    plane: *const f32,
    slots: usize,
) {
    let s = job.s;
    let chunks = s.w_out.div_ceil(if SLIDE { R_SLIDE } else { V::R });
    let (base, extra) = (s.w_out / chunks, s.w_out % chunks);
    let taps = s.kh * s.kw;
    let bias = job.bias.get();
    // SAFETY: block `b`'s padded bias lanes.
    let bias = (!bias.is_null()).then(|| unsafe { V::load(bias.add(b * L)) });
    let clamp = as_clamp(job.act);
    let end = End { bias, clamp };
    let p = Geometry {
        plane,
        first: ho * s.sh,
        dh: s.dh,
        slots,
        row_pitch: job.pitch * L,
        col_step: s.sw * L,
        tap_step: s.dw * L,
        w: job.w.get().wrapping_add(b * taps * L),
        kh: s.kh,
        kw: s.kw,
        h: s.h,
        w_in: s.w_in,
        ph: s.ph,
        pw: s.pw,
    };
    let out = job.out.get().wrapping_add((b * s.h_out + ho) * s.w_out * L);
    let mut wo = 0;
    for c in 0..chunks {
        let r = base + usize::from(c < extra);
        // SAFETY: outputs `wo..wo + r` of this row; their windows lie in
        // the padded plane (`PaddedPlane`), or (sliding) are clipped to the
        // input.
        unsafe {
            if SLIDE {
                chunk_slide::<V>(&p, wo, r, &end, out.add(wo * L))
            } else {
                chunk::<V>(&p, wo, r, &end, out.add(wo * L))
            }
        };
        wo += r;
    }
    if clamp.is_none() && job.act != ActKind::Identity {
        // SAFETY: the row just written, in place.
        unsafe { crate::kernels::activation::act_f32_slice(job.act, out, out, s.w_out * L, false) };
    }
}

/// What finishes an output pixel's accumulator before its store: the bias
/// added, then the clamp.
struct End<V> {
    bias: Option<V>,
    clamp: Option<(f32, f32)>,
}

impl<V: Lanes16> End<V> {
    /// Finishes and stores `acc` at `out`.
    ///
    /// # Safety
    ///
    /// `out` valid for 16 writes; the CPU has `V`'s features.
    #[inline(always)]
    unsafe fn store(&self, acc: V, out: *mut f32) {
        // SAFETY: the caller's extents and features.
        unsafe {
            let mut v = acc;
            if let Some(b) = self.bias {
                v = v.add(b);
            }
            if let Some((lo, hi)) = self.clamp {
                v = v.clamp(lo, hi);
            }
            v.store(out);
        }
    }
}

/// One output row's reads: filter row `ki` reads padded row `first +
/// ki * dh`, stored at `plane` plus its slot (that row modulo `slots`)
/// times `row_pitch` f32; the steps (f32) to the next output column and
/// filter column; the block's filter.
struct Geometry {
    plane: *const f32,
    first: usize,
    dh: usize,
    slots: usize,
    row_pitch: usize,
    col_step: usize,
    tap_step: usize,
    w: *const f32,
    kh: usize,
    kw: usize,
    /// The input plane's size and padding, for [`microkernel_slide`]
    /// (which reads the input itself: `plane` is the block's input).
    h: usize,
    w_in: usize,
    ph: usize,
    pw: usize,
}

/// `r` outputs from column `wo` (`1 <= r <= 16`), one monomorphised
/// microkernel per count.
///
/// # Safety
///
/// As [`microkernel`].
#[inline(always)]
unsafe fn chunk<V: Lanes16>(p: &Geometry, wo: usize, r: usize, end: &End<V>, out: *mut f32) {
    // SAFETY: forwarded contract.
    unsafe {
        match r {
            1 => microkernel::<V, 1>(p, wo, end, out),
            2 => microkernel::<V, 2>(p, wo, end, out),
            3 => microkernel::<V, 3>(p, wo, end, out),
            4 => microkernel::<V, 4>(p, wo, end, out),
            5 => microkernel::<V, 5>(p, wo, end, out),
            6 => microkernel::<V, 6>(p, wo, end, out),
            7 => microkernel::<V, 7>(p, wo, end, out),
            8 => microkernel::<V, 8>(p, wo, end, out),
            9 => microkernel::<V, 9>(p, wo, end, out),
            10 => microkernel::<V, 10>(p, wo, end, out),
            11 => microkernel::<V, 11>(p, wo, end, out),
            12 => microkernel::<V, 12>(p, wo, end, out),
            13 => microkernel::<V, 13>(p, wo, end, out),
            14 => microkernel::<V, 14>(p, wo, end, out),
            15 => microkernel::<V, 15>(p, wo, end, out),
            16 => microkernel::<V, 16>(p, wo, end, out),
            _ => unreachable!("chunks hold at most 16 outputs"),
        }
    }
}

/// `R` output pixels in registers: per tap in `(ki, kj)` order one weight
/// vector and `R` loads and FMAs; then the bias and clamp; then the stores.
///
/// # Safety
///
/// Every tap of outputs `wo..wo + R` inside the plane `p` describes, the
/// filter's `kh * kw` vectors, `out` valid for `R * 16` writes; the CPU
/// has `V`'s features.
#[inline(always)]
unsafe fn microkernel<V: Lanes16, const R: usize>(p: &Geometry, wo: usize, end: &End<V>, out: *mut f32) {
    // SAFETY: the caller's extents and features.
    unsafe {
        let mut acc = [V::zero(); R];
        // The slot of padded row `first + ki * dh`, stepped without a
        // division (`dh < slots` whenever a second filter row exists).
        let mut slot = p.first % p.slots;
        for ki in 0..p.kh {
            let row = p.plane.add(slot * p.row_pitch + wo * p.col_step);
            slot += p.dh;
            if slot >= p.slots {
                slot -= p.slots;
            }
            let w = p.w.add(ki * p.kw * L);
            for kj in 0..p.kw {
                let wv = V::load(w.add(kj * L));
                let x = row.add(kj * p.tap_step);
                for (i, a) in acc.iter_mut().enumerate() {
                    *a = V::fma(wv, V::load(x.add(i * p.col_step)), *a);
                }
            }
        }
        for (i, &a) in acc.iter().enumerate() {
            end.store(a, out.add(i * L));
        }
    }
}

/// Output pixels of a [`microkernel_slide`] call, at most.
const R_SLIDE: usize = 16;

/// The +0 vector [`microkernel_slide`] reads for a padding column.
#[repr(align(64))]
struct Zero([f32; L]);
static ZERO: Zero = Zero([0.0; L]);

/// Whether [`microkernel_slide`] covers `s`: filter width 3, 5 or 7,
/// column stride 1 or 2, column dilation 1.
fn sliding(s: &Conv2dShape) -> bool {
    s.dw == 1 && matches!(s.sw, 1 | 2) && matches!(s.kw, 3 | 5 | 7)
}

/// [`chunk`] for [`microkernel_slide`]: one per filter width, stride and
/// count.
///
/// # Safety
///
/// As [`microkernel_slide`] with `KW == p.kw`, `S == p.col_step / 16` in
/// the `sliding` set; `1 <= r <= 16`.
#[inline(always)]
unsafe fn chunk_slide<V: Lanes16>(p: &Geometry, wo: usize, r: usize, end: &End<V>, out: *mut f32) {
    macro_rules! by_count {
        ($kw:literal, $s:literal) => {
            match r {
                1 => microkernel_slide::<V, $kw, $s, 1>(p, wo, end, out),
                2 => microkernel_slide::<V, $kw, $s, 2>(p, wo, end, out),
                3 => microkernel_slide::<V, $kw, $s, 3>(p, wo, end, out),
                4 => microkernel_slide::<V, $kw, $s, 4>(p, wo, end, out),
                5 => microkernel_slide::<V, $kw, $s, 5>(p, wo, end, out),
                6 => microkernel_slide::<V, $kw, $s, 6>(p, wo, end, out),
                7 => microkernel_slide::<V, $kw, $s, 7>(p, wo, end, out),
                8 => microkernel_slide::<V, $kw, $s, 8>(p, wo, end, out),
                9 => microkernel_slide::<V, $kw, $s, 9>(p, wo, end, out),
                10 => microkernel_slide::<V, $kw, $s, 10>(p, wo, end, out),
                11 => microkernel_slide::<V, $kw, $s, 11>(p, wo, end, out),
                12 => microkernel_slide::<V, $kw, $s, 12>(p, wo, end, out),
                13 => microkernel_slide::<V, $kw, $s, 13>(p, wo, end, out),
                14 => microkernel_slide::<V, $kw, $s, 14>(p, wo, end, out),
                15 => microkernel_slide::<V, $kw, $s, 15>(p, wo, end, out),
                16 => microkernel_slide::<V, $kw, $s, 16>(p, wo, end, out),
                _ => unreachable!("chunks hold at most 16 outputs"),
            }
        };
    }
    // SAFETY: forwarded contract.
    unsafe {
        match (p.kw, p.col_step / L) {
            (3, 1) => by_count!(3, 1),
            (5, 1) => by_count!(5, 1),
            (7, 1) => by_count!(7, 1),
            (3, 2) => by_count!(3, 2),
            (5, 2) => by_count!(5, 2),
            (7, 2) => by_count!(7, 2),
            _ => unreachable!("see `sliding`"),
        }
    }
}

/// [`microkernel`] on the unpadded input for `kw == KW`, `sw == S`, `dw
/// == 1`. Per filter row the `KW` weight vectors are loaded once, then the
/// `S * (R - 1) + KW` input columns the row's outputs read, each once,
/// feeding every output that reads it (output `i` takes column `S * i +
/// kj` with tap `kj`, so each accumulator still sees its taps in `(ki,
/// kj)` order). A column or row outside the input is a +0 vector, as the
/// padded plane's, so the padding taps keep their bits.
///
/// # Safety
///
/// `p.plane` is the block's unpadded input (`p.h` rows of `p.w_in` pixels,
/// `p.row_pitch` f32 apart), `p.kw == KW`, `p.col_step == S * 16`, `p.dh
/// >= 1`; outputs `wo..wo + R` exist; the filter's `kh * KW` vectors, `out`
/// valid for `R * 16` writes; the CPU has `V`'s features.
#[inline(always)]
unsafe fn microkernel_slide<V: Lanes16, const KW: usize, const S: usize, const R: usize>(
    p: &Geometry,
    wo: usize,
    end: &End<V>,
    out: *mut f32,
) {
    // Window column `j` is input column `col0 + j`: inside for `j` in
    // `lo..hi`.
    let cols = S * (R - 1) + KW;
    let lo = p.pw.saturating_sub(wo * S);
    let hi = (p.w_in + p.pw).saturating_sub(wo * S).min(cols);
    let col0 = (wo * S).wrapping_sub(p.pw);
    // SAFETY: the caller's extents and features; only inside columns of
    // inside rows are read from the input, the others from `ZERO`.
    unsafe {
        let mut acc = [V::zero(); R];
        for ki in 0..p.kh {
            let r = (p.first + ki * p.dh).wrapping_sub(p.ph);
            let row = p.plane.wrapping_add(r.wrapping_mul(p.row_pitch)).wrapping_add(col0.wrapping_mul(L));
            let (lo, hi) = if r < p.h { (lo, hi) } else { (0, 0) };
            let wr = p.w.add(ki * KW * L);
            let w: [V; KW] = std::array::from_fn(|kj| V::load(wr.add(kj * L)));
            // Window column `j` (unrolled: `acc` must stay in registers);
            // `cols <= 2 * 15 + 7`, so the list covers every column.
            macro_rules! column {
                ($($j:literal)*) => {$(
                    if $j < cols {
                        let inside = $j >= lo && $j < hi;
                        let x = V::load(if inside { row.wrapping_add($j * L) } else { ZERO.0.as_ptr() });
                        for (kj, wv) in w.iter().enumerate() {
                            let d = usize::wrapping_sub($j, kj);
                            if d % S == 0 && d / S < R {
                                acc[d / S] = V::fma(*wv, x, acc[d / S]);
                            }
                        }
                    }
                )*};
            }
            column!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36);
        }
        for (i, &a) in acc.iter().enumerate() {
            end.store(a, out.add(i * L));
        }
    }
}
