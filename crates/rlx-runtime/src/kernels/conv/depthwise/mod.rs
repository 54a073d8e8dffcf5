//! Depthwise convolution (`groups == c_in`, `c_out` a multiple `m` of it):
//! one `kh x kw` filter per output channel `c`, applied directly to input
//! channel `c / m` ([`input_plane`]).
//!
//! Every output is `acc = +0; for ki { for kj { acc = fma(w[c, ki, kj],
//! xpad, acc) } }; out = acc + bias[c]` (no add without a bias), where
//! `xpad` is the input, or 0 in the padding: the same bits on every
//! variant, band size and thread count.
//!
//! # Phase planes
//!
//! With padded coordinates `hp = hi + ph`, `wp = wi + pw`, output `(ho,
//! wo)` reads tap `(ki, kj)` at `padded[ho*sh + ki*dh][wo*sw + kj*dw]`.
//! Phase `(a, b)` holds `padded[r*sh + a][q*sw + b]`; stored with rows of
//! `pitch = cols + (kw - 1)*dw/sw` columns, output `f = (ho - ho0)*pitch +
//! wo - wo0` reads tap `(ki, kj)` at `f + (ki*dh/sh)*pitch + kj*dw/sw` of
//! phase `(ki*dh % sh, kj*dw % sw)`: every tap is one
//! contiguous run over the whole band, whatever the stride, dilation and
//! padding. The columns `wo - wo0 >= cols` of each row are computed too
//! (they read into the next row) and dropped.
//!
//! # Units
//!
//! The work is cut into units of (plane, band of output rows, tile of
//! output columns; a tile is the whole row unless one row does not fit),
//! in that order from the fastest: consecutive units share a layout. A
//! unit (`banded.rs`, the banded path) copies the input its outputs read into the phase planes
//! (on the stack; input rows in order; at stride 2 one pass splits a row
//! into both column phases; the zeros of the padding only when the layout
//! changes), runs the band kernel into a flat accumulator, and copies the
//! valid columns of each row out. The band kernel keeps a few vectors of
//! `f` in registers and takes, per tap in order, one broadcast weight and
//! one FMA per vector; then it adds the bias. Each phase plane has a
//! vector of slack so the whole vectors past the band's last output stay
//! in the buffer.
//!
//! # Variants
//!
//! [`Isa`] is what a unit runs on: the band kernel and the short copies
//! (`scalar`, the reference; `x86`: AVX-512F, AVX2+FMA; `neon`), chosen
//! once per process. Each variant's entry is the one generic unit loop
//! compiled with its target features.
//!
//! Rows per band are as many as fit [`BUDGET`]. Shapes that cannot stage
//! one row of one column, with more than [`MAX_TAPS`] taps or more than
//! `MAX_PHASES` phases run the per-tap path (`per_tap.rs`: per plane and
//! tap, one `axpy` over each output row segment; the same function).
//! Nothing allocates: every buffer is on the stack.

mod banded;
mod per_tap;
mod scalar;

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::kernels::variants::variants;

use rlx_core::ActKind;

use super::{valid_outputs, Conv2dShape, SendPtr};
use banded::{run_units, Job};

/// Lanes every band kernel may round its length up to (the widest vector).
const PAD: usize = 16;
/// Taps a unit stages on the stack (16x16); larger filters fall back.
pub(super) const MAX_TAPS: usize = 256;
/// f32 of phase planes on each worker's stack.
const PHASE_BUF: usize = 8192;
/// f32 of accumulators on each worker's stack.
const ACC_BUF: usize = 4096;
/// Phase planes a unit may use (`sh * sw`); more fall back.
const MAX_PHASES: usize = 16;

/// Stack space a unit may use, in f32: [`BUDGET`] in the kernel; tests
/// shrink it to force narrow bands, column tiles and the per-tap path.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    /// Phase planes (at most [`PHASE_BUF`]).
    pub(super) phases: usize,
    /// Accumulators (at most [`ACC_BUF`]).
    pub(super) acc: usize,
}

/// The budget the kernel runs with.
pub(super) const BUDGET: Budget = Budget { phases: PHASE_BUF, acc: ACC_BUF };

/// One filter tap: where its inputs start in the phase buffer (for output
/// `f = 0`) and its weight.
#[derive(Clone, Copy, Debug)]
struct Tap {
    off: usize,
    w: f32,
}

/// The primitives a unit runs on, one implementation per ISA. A variant's
/// entry point is [`run_units`] instantiated with its implementation,
/// inlined into a function compiled with its target features, so the
/// driver's loops and these (`#[inline]`) primitives are compiled for
/// that ISA and no short copy becomes a library call.
trait Isa {
    /// `acc[f] = fma(taps[T-1].w, src[taps[T-1].off + f], ... fma(taps[0].w,
    /// src[taps[0].off + f], +0))`, plus `bias` when given, for `f < len`.
    ///
    /// # Safety
    ///
    /// `src` valid for reads at `t.off + f` for every tap `t` and `f <
    /// len.next_multiple_of(PAD)`, `acc` for writes of
    /// `len.next_multiple_of(PAD)` f32 (whole vectors past `len` may be
    /// computed), not overlapping `src`; the CPU has the ISA's features.
    unsafe fn band(src: *const f32, taps: &[Tap], acc: *mut f32, len: usize, bias: Option<f32>);

    /// `dst[..n] = src[..n]`.
    ///
    /// # Safety
    ///
    /// Valid, non-overlapping ranges; the CPU has the ISA's features.
    unsafe fn copy(src: *const f32, dst: *mut f32, n: usize);

    /// `dst[..n] = 0`.
    ///
    /// # Safety
    ///
    /// `dst` valid for writes of `n` f32; the CPU has the ISA's features.
    unsafe fn zero(dst: *mut f32, n: usize);

    /// `even[i] = src[2 * i]`, `odd[i] = src[2 * i + 1]` for `i < n`.
    ///
    /// # Safety
    ///
    /// `src` valid for reads of `2 * n` f32 (no more), `even` and `odd`
    /// for writes of `n`, none overlapping; the CPU has the ISA's features.
    unsafe fn split2(src: *const f32, even: *mut f32, odd: *mut f32, n: usize);

    /// `dst[i] = src[2 * i]` for `i < n`.
    ///
    /// # Safety
    ///
    /// `src` valid for reads of `2 * n - 1` f32 (no more), `dst` for
    /// writes of `n`, not overlapping; the CPU has the ISA's features.
    unsafe fn gather2(src: *const f32, dst: *mut f32, n: usize);
}

/// Runs units `start..start + len` of a job (a variant's [`run_units`]).
///
/// # Safety
///
/// As [`run_units`]; the CPU has the variant's features.
type UnitsFn = unsafe fn(job: &Job<'_>, start: usize, len: usize);

/// A variant's primitives, alone (tests call them directly).
#[cfg(test)]
#[derive(Clone, Copy)]
struct Prims {
    band: unsafe fn(src: *const f32, taps: &[Tap], acc: *mut f32, len: usize, bias: Option<f32>),
    copy: unsafe fn(src: *const f32, dst: *mut f32, n: usize),
    zero: unsafe fn(dst: *mut f32, n: usize),
    split2: unsafe fn(src: *const f32, even: *mut f32, odd: *mut f32, n: usize),
    gather2: unsafe fn(src: *const f32, dst: *mut f32, n: usize),
}

/// One variant.
#[derive(Clone, Copy)]
pub(super) struct Kernel {
    units: UnitsFn,
    #[cfg(test)]
    prims: Prims,
}

macro_rules! kernel {
    ($isa:ty, $units:path) => {
        Kernel {
            units: $units,
            #[cfg(test)]
            prims: Prims {
                band: <$isa as Isa>::band,
                copy: <$isa as Isa>::copy,
                zero: <$isa as Isa>::zero,
                split2: <$isa as Isa>::split2,
                gather2: <$isa as Isa>::gather2,
            },
        }
    };
}

const SCALAR: Kernel = kernel!(scalar::Scalar, scalar::scalar_depthwise_units);

variants! {
    /// The variants, best first.
    static KERNELS: Kernel = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => kernel!(x86::Avx512, x86::avx512_depthwise_units),
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => kernel!(x86::Avx2, x86::avx2_depthwise_units),
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => kernel!(neon::Neon, neon::neon_depthwise_units),
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

/// [`supported_kernels`] with their names.
#[cfg(test)]
pub(super) fn supported_variants() -> Vec<(&'static str, Kernel)> {
    KERNELS.supported()
}

/// `(bands, tiles)` of `s` within `budget`, `None` for the per-tap path.
#[cfg(test)]
pub(super) fn plan_split(s: &Conv2dShape, budget: Budget) -> Option<(usize, usize)> {
    plan(s, budget).map(|p| (p.bands, p.tiles))
}

/// `kernel`'s band over `src` for taps `(offset, weight)`: `len` outputs.
#[cfg(test)]
pub(super) fn band_for_test(
    kernel: Kernel,
    src: &[f32],
    taps: &[(usize, f32)],
    len: usize,
    bias: Option<f32>,
) -> Vec<f32> {
    let taps: Vec<Tap> = taps.iter().map(|&(off, w)| Tap { off, w }).collect();
    let span = len.next_multiple_of(PAD);
    assert!(taps.iter().all(|t| t.off + span <= src.len()), "inputs too short");
    let mut acc = vec![f32::NAN; span];
    // SAFETY: every tap's reads and the accumulators are in bounds.
    unsafe { (kernel.prims.band)(src.as_ptr(), &taps, acc.as_mut_ptr(), len, bias) };
    acc.truncate(len);
    acc
}

/// `kernel`'s short copies over `n` elements of `src` into buffers of
/// `n + 40` NaNs, starting 20 in: `[copy, zero, split2 even, split2 odd,
/// gather2]`, the guards included, so a write out of range shows.
#[cfg(test)]
pub(super) fn prims_for_test(kernel: Kernel, src: &[f32], n: usize) -> [Vec<f32>; 5] {
    const GUARD: usize = 20;
    assert!(src.len() >= 2 * n);
    let mut out: [Vec<f32>; 5] = std::array::from_fn(|_| vec![f32::NAN; n + 2 * GUARD]);
    let [copy, zero, even, odd, gather] = &mut out;
    let p = &kernel.prims;
    // SAFETY: `src` holds `2 * n` f32 (`gather2` reads `2n - 1` when `n >
    // 0`); each output `n` after its guard.
    unsafe {
        (p.copy)(src.as_ptr(), copy[GUARD..].as_mut_ptr(), n);
        (p.zero)(zero[GUARD..].as_mut_ptr(), n);
        (p.split2)(src.as_ptr(), even[GUARD..].as_mut_ptr(), odd[GUARD..].as_mut_ptr(), n);
        (p.gather2)(src.as_ptr(), gather[GUARD..].as_mut_ptr(), n);
    }
    out
}

/// How a plane is cut into units and staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    /// Output rows per band (the last band may have fewer).
    rows: usize,
    /// Output columns per tile (the last tile may have fewer).
    cols: usize,
    bands: usize,
    tiles: usize,
    /// Extra phase rows / columns a band reads below / right of its
    /// outputs: `(kh - 1)*dh/sh`, `(kw - 1)*dw/sw`.
    ext_h: usize,
    ext_w: usize,
    /// Phase-plane row length: `cols + ext_w`.
    pitch: usize,
    /// f32 per phase plane: `rows + ext_h` rows and `PAD` slack, rounded
    /// up to `PAD`.
    plane: usize,
    /// Accumulators a band needs: `rows * pitch` rounded up to `PAD`.
    acc: usize,
}

/// The largest `v` in `lo..=hi` with `ok(v)`, for `ok` true up to some
/// point and false after it; `None` when `ok(lo)` is false.
fn largest(lo: usize, hi: usize, ok: impl Fn(usize) -> bool) -> Option<usize> {
    if lo > hi || !ok(lo) {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// The banding of `s` within `budget`, or `None` for the per-tap path.
fn plan(s: &Conv2dShape, budget: Budget) -> Option<Plan> {
    if s.kh * s.kw > MAX_TAPS || s.sh * s.sw > MAX_PHASES {
        return None;
    }
    let phases = s.sh * s.sw;
    let ext_h = (s.kh - 1) * s.dh / s.sh;
    let ext_w = (s.kw - 1) * s.dw / s.sw;
    let plane_len =
        |r: usize, c: usize| (r + ext_h).saturating_mul(c + ext_w).saturating_add(PAD).next_multiple_of(PAD);
    let acc_len = |r: usize, c: usize| r.saturating_mul(c + ext_w).saturating_add(PAD - 1) / PAD * PAD;
    let fits =
        |r: usize, c: usize| phases.saturating_mul(plane_len(r, c)) <= budget.phases && acc_len(r, c) <= budget.acc;
    let cols = largest(1, s.w_out, |c| fits(1, c))?;
    let rows = if cols == s.w_out { largest(1, s.h_out, |r| fits(r, cols))? } else { 1 };
    // Even bands and tiles: the same count, no smaller than the largest.
    let (bands, tiles) = (s.h_out.div_ceil(rows), s.w_out.div_ceil(cols));
    let (rows, cols) = (s.h_out.div_ceil(bands), s.w_out.div_ceil(tiles));
    let (pitch, plane, acc) = (cols + ext_w, plane_len(rows, cols), acc_len(rows, cols));
    Some(Plan { rows, cols, bands, tiles, ext_h, ext_w, pitch, plane, acc })
}

/// The input plane output plane `plane` (image `b`, channel `c` of
/// `c_out`) reads: channel `c / m` of image `b`, with `m = c_out / c_in`
/// filters per input channel (1 for a plain depthwise convolution).
pub(super) fn input_plane(s: &Conv2dShape, plane: usize) -> usize {
    let m = (s.c_out / s.c_in.max(1)).max(1);
    plane / s.c_out * s.c_in + plane % s.c_out / m
}

/// The depthwise convolution of [`super::conv2d_f32`], then `act` (each
/// unit's outputs while they are in cache, through the activation
/// family's kernel: the bits of a separate `Activation`).
///
/// # Safety
///
/// As [`super::conv2d_f32`] with `groups == c_in` dividing `c_out` and no
/// empty dimension of the output.
pub(super) unsafe fn depthwise(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    par: bool,
) {
    // SAFETY: forwarded contract; the selected kernel runs on this CPU.
    unsafe { depthwise_with(x, w, bias, out, s, act, par, kernel(), BUDGET) }
}

/// [`depthwise`] with a given band kernel and budget.
///
/// # Safety
///
/// As [`depthwise`]; `kernel` from [`supported_kernels`] (or the
/// selected one); `budget` within [`BUDGET`].
pub(super) unsafe fn depthwise_with(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    par: bool,
    kernel: Kernel,
    budget: Budget,
) {
    debug_assert!(budget.phases <= PHASE_BUF && budget.acc <= ACC_BUF);
    let Some(plan) = plan(s, budget) else {
        // SAFETY: forwarded contract; then the output just written, in
        // place.
        unsafe {
            per_tap::depthwise_rows(x, w, bias, out, s, par);
            if act != ActKind::Identity {
                crate::kernels::activation::act_f32_slice(act, out, out, s.n * s.c_out * s.out_plane(), par);
            }
        }
        return;
    };
    let job = Job {
        x: SendPtr(x.cast_mut()),
        w: SendPtr(w.cast_mut()),
        bias: SendPtr(bias.cast_mut()),
        out: SendPtr(out),
        s,
        plan,
        act,
    };
    let units = s.n * s.c_out * plan.bands * plan.tiles;
    // SAFETY: units write disjoint output blocks and read the inputs; the
    // caller vouches for the kernel.
    let run = |start: usize, len: usize| unsafe { (kernel.units)(&job, start, len) };
    if par {
        let work = plan.rows * plan.cols * s.kh * s.kw;
        crate::threads::par_for(units, crate::kernels::reduce::units_per_chunk(work), &run);
    } else {
        run(0, units);
    }
}
