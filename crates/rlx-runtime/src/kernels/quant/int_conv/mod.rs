//! `IntConv2D`: the 8-bit integer convolution with i32 accumulation.
//!
//! Two paths, chosen at gen time (`plan::int_conv2d_direct`):
//!
//! - **im2col + the packed product**: every output channel's `w - w_zero`
//!   becomes a row of i32 pairs (as `int_gemm` packs `a`), and each
//!   group's unfolded `x - x_zero` is written straight into the packed
//!   `b` layout (i16 pairs of patch rows per output pixel, 0 outside the
//!   image), so the product is `int_gemm`'s tiles with no second copy. The
//!   product runs in strips of output pixels whose packed columns stay in
//!   L2 while every output channel's row passes over them.
//! - **direct**, for depthwise convolutions (one input channel per group):
//!   each output plane accumulates its few window taps in i32, a row of
//!   output pixels at a time.
//!
//! Every sum is of exact products in wrapping i32, so both paths, the
//! threads and the reference give the same bits.

use rlx_core::plan::int_conv2d_direct;

mod scalar;
#[cfg(test)]
pub(super) mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use scalar::int_conv2d_reference;

use super::int_gemm::{pack_a, rows_product};
use super::IntElem;
use crate::kernels::conv::Conv2dShape;
use crate::kernels::reduce::SendPtr;
use crate::kernels::variants::variants;

/// `IntConv2D`: `out[b, oc, oy, ox] = sum over the window of (x - x_zero)
/// * (w[oc, ..] - w_zero)`, positions outside `x` contributing 0, in
/// wrapping i32. `x_zero` is one element (0 when null); `w_zero` one
/// element (`w_zero_len` 1) or one per output channel, 0 when null.
/// `par` splits the work over the pool.
///
/// # Safety
///
/// `x` readable for `n * c_in * h * w_in` elements, `w` for `c_out *
/// (c_in / groups) * kh * kw`, `x_zero` for one and `w_zero` for
/// `w_zero_len` unless null; `out` writable for `n * c_out * h_out *
/// w_out` i32 and overlapping no input; `scratch` writable for
/// `plan::int_conv2d_scratch_bytes(s)` bytes, 64-byte aligned, overlapping
/// nothing. `s` is a validated shape (its windows fit the stated padding).
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_conv2d<X: IntElem, W: IntElem>(
    scratch: *mut u8,
    x: *const X,
    w: *const W,
    x_zero: *const X,
    w_zero: *const W,
    out: *mut i32,
    s: &Conv2dShape,
    w_zero_len: usize,
    par: bool,
) {
    // SAFETY: the caller's contract; the best body runs on this CPU.
    unsafe { run_paths(*BODIES.best(), scratch, x, w, x_zero, w_zero, out, s, w_zero_len, par) }
}

/// What a call runs on: the product of the im2col path and the direct
/// path's planes.
#[derive(Clone, Copy, Debug)]
pub(super) enum ConvBody {
    /// The 8-bit quads (`vpdpbusd`), AVX2 planes.
    #[cfg(target_arch = "x86_64")]
    Vnni,
    /// The 16-bit pairs, AVX2 planes.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// The 16-bit pairs, portable planes.
    Portable,
}

variants! {
    /// The bodies, best first. The 16-bit pairs run `IntGemm`'s product,
    /// whose own variants pick its tiles.
    pub(super) static BODIES: ConvBody = [
        #[cfg(target_arch = "x86_64")]
        "avx512_vnni" if cpu::avx512_vnni() => ConvBody::Vnni,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => ConvBody::Avx2,
        "portable" => ConvBody::Portable,
    ];
}

/// [`int_conv2d`] on the body `body`: the direct path for depthwise
/// shapes, else the 8-bit quads or the 16-bit pairs.
///
/// # Safety
/// As [`int_conv2d`]; `body` runs on this CPU.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_paths<X: IntElem, W: IntElem>(
    body: ConvBody,
    scratch: *mut u8,
    x: *const X,
    w: *const W,
    x_zero: *const X,
    w_zero: *const W,
    out: *mut i32,
    s: &Conv2dShape,
    w_zero_len: usize,
    par: bool,
) {
    if s.n == 0 || s.c_out == 0 || s.out_plane() == 0 {
        return;
    }
    // SAFETY: non-null zero points are readable for their lengths (caller).
    let zx = if x_zero.is_null() { 0 } else { unsafe { (*x_zero).to_i32() } };
    let zw = WeightZero { ptr: SendPtr(w_zero.cast_mut()), len: w_zero_len };
    if int_conv2d_direct(s) {
        // SAFETY: the caller's extents and body.
        return unsafe { depthwise(body, x, w, zx, &zw, out, s, par) };
    }
    #[cfg(target_arch = "x86_64")]
    if let ConvBody::Vnni = body {
        // SAFETY: the body, and with it AVX-512 VNNI, runs on this CPU; the
        // caller's extents and scratch.
        return unsafe { unfolded_quads(scratch, x, w, zx, &zw, out, s, par) };
    }
    // SAFETY: the caller's extents and scratch.
    unsafe { unfolded(scratch, x, w, zx, &zw, out, s, par) }
}

/// The weight's zero point: null (0), one element, or one per output
/// channel.
struct WeightZero<W> {
    ptr: SendPtr<W>,
    len: usize,
}

impl<W: IntElem> WeightZero<W> {
    fn of(&self, oc: usize) -> i32 {
        let ptr = self.ptr.0;
        match (ptr.is_null(), self.len) {
            (true, _) => 0,
            // SAFETY: a non-null zero point is readable for `len` elements
            // (`int_conv2d`'s contract) and `oc < c_out == len` when per
            // channel.
            (false, 1) => unsafe { (*ptr).to_i32() },
            // SAFETY: as above.
            (false, _) => unsafe { (*ptr.add(oc)).to_i32() },
        }
    }
}

/// The im2col path (see the module docs).
///
/// # Safety
/// As [`int_conv2d`].
#[allow(clippy::too_many_arguments)]
unsafe fn unfolded<X: IntElem, W: IntElem>(
    scratch: *mut u8,
    x: *const X,
    w: *const W,
    zx: i32,
    zw: &WeightZero<W>,
    out: *mut i32,
    s: &Conv2dShape,
    par: bool,
) {
    let (patch, plane) = (s.patch_len(), s.out_plane());
    let kp = patch.div_ceil(2);
    let (cpg, opg) = (s.c_in_g(), s.c_out_g());
    let a_pairs = scratch.cast::<i32>();
    // SAFETY: the unfolded columns follow the weight rows, 64-byte aligned
    // (`plan::int_conv2d_scratch_bytes`).
    let cols = unsafe { scratch.add((s.c_out * kp * 4).div_ceil(64) * 64) }.cast::<i16>();
    for oc in 0..s.c_out {
        // SAFETY: row `oc` of `w` (`patch` long) and of `a_pairs` (`kp`).
        unsafe { pack_a(w.add(oc * patch), zw.of(oc), a_pairs.add(oc * kp), 1, patch) };
    }
    let split = |units: usize, min: usize, f: &(dyn Fn(usize, usize) + Sync)| split_units(par, units, min, f);
    let tiles = Tiles::new(kp * 4, plane, opg, par);
    for b in 0..s.n {
        for g in 0..s.groups {
            // SAFETY: batch `b`, group `g`'s channels are inside `x`.
            let xg = SendPtr(unsafe { x.add((b * s.c_in + g * cpg) * s.h * s.w_in) }.cast_mut());
            let cols_out = SendPtr(cols);
            split(kp, 8, &|start, len| {
                // SAFETY: pairs `start..start + len` of the unfolded
                // columns are inside the scratch; each task writes its own.
                unsafe { unfold(xg.get(), zx, s, cols_out.get(), start..start + len) }
            });
            let (ap, cp) = (SendPtr(a_pairs), SendPtr(cols));
            // SAFETY: group `g`'s output channels of batch `b` are inside `out`.
            let og = SendPtr(unsafe { out.add((b * s.c_out + g * opg) * plane) });
            split(tiles.count(), 1, &|start, len| {
                for task in start..start + len {
                    let (r0, rows, j0, width) = tiles.task(task, opg, plane);
                    // SAFETY: rows `r0..r0 + rows` of the group's weight
                    // pairs and output, columns `j0..j0 + width` of the
                    // unfolded pairs and output: all inside the extents;
                    // tasks write disjoint tiles of `out`.
                    unsafe {
                        rows_product(
                            ap.get().add((g * opg + r0) * kp),
                            cp.get().add(j0 * 2),
                            og.get().add(r0 * plane + j0),
                            rows,
                            kp,
                            plane,
                            width,
                        );
                    }
                }
            });
        }
    }
}

/// `f` over `0..units`: split over the pool (chunks of at least `min`)
/// when `par`, else in one call.
fn split_units(par: bool, units: usize, min: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    if par {
        crate::threads::par_for(units, min, f);
    } else {
        f(0, units);
    }
}

/// The work split of the im2col paths' product: strips of output pixels
/// whose packed columns (`bytes_per_column` each) fill about 256 KiB,
/// and, when there are few strips, blocks of 16 rows.
struct Tiles {
    strip: usize,
    strips: usize,
    row_block: usize,
    row_blocks: usize,
}

impl Tiles {
    fn new(bytes_per_column: usize, plane: usize, opg: usize, par: bool) -> Tiles {
        let strip = ((256 * 1024 / bytes_per_column.max(1)) / 64 * 64).max(64).min(plane);
        let strips = plane.div_ceil(strip);
        let row_block = if par && strips < 4 { 16 } else { opg };
        Tiles { strip, strips, row_block, row_blocks: opg.div_ceil(row_block) }
    }

    fn count(&self) -> usize {
        self.strips * self.row_blocks
    }

    /// Task `task`'s first row and row count, first column and width.
    fn task(&self, task: usize, opg: usize, plane: usize) -> (usize, usize, usize, usize) {
        let (r0, j0) = (task / self.strips * self.row_block, task % self.strips * self.strip);
        (r0, self.row_block.min(opg - r0), j0, self.strip.min(plane - j0))
    }
}

/// The 8-bit im2col path (AVX-512 VNNI): `x` shifted into u8 and `w` into
/// i8 (the zero points with them, so every difference is unchanged), `w`
/// packed as quads of patch elements, each group's unfolded `x` as quads
/// of patch rows per output pixel (padding holds the zero point, so it
/// adds nothing), the product `x86::quads_product` with the zero-point
/// corrections at the store.
///
/// # Safety
/// As [`int_conv2d`], and AVX-512 F, BW and VNNI available.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn unfolded_quads<X: IntElem, W: IntElem>(
    scratch: *mut u8,
    x: *const X,
    w: *const W,
    zx: i32,
    zw: &WeightZero<W>,
    out: *mut i32,
    s: &Conv2dShape,
    par: bool,
) {
    use self::x86::{quads_product, Fix};
    let (patch, plane) = (s.patch_len(), s.out_plane());
    let kq = patch.div_ceil(4);
    let (cpg, opg) = (s.c_in_g(), s.c_out_g());
    let x_shift = if X::SIGNED { 128 } else { 0 };
    let w_shift = if W::SIGNED { 0 } else { 128 };
    let zx_u8 = zx + x_shift;
    let align = |b: usize| b.div_ceil(64) * 64;
    // SAFETY: the parts below follow one another inside the scratch, each
    // 64-byte aligned, within `plan::int_conv2d_scratch_bytes`.
    let (w_quads, row_fix, row_zero, col_sums, cols) = unsafe {
        let w_quads = scratch.cast::<i32>();
        let row_fix = scratch.add(align(s.c_out * kq * 4)).cast::<i32>();
        let row_zero = row_fix.cast::<u8>().add(align(s.c_out * 4)).cast::<i32>();
        let col_sums = row_zero.cast::<u8>().add(align(s.c_out * 4)).cast::<i32>();
        let cols = col_sums.cast::<u8>().add(align(plane * 4));
        (w_quads, row_fix, row_zero, col_sums, cols)
    };
    let mut any_zero = false;
    // A row of quads is the weight row's bytes (u8 weights flipped into
    // i8), zero-padded to a multiple of 4: int8 weights whose rows are a
    // whole number of quads are read where they are.
    let in_place = W::SIGNED && patch % 4 == 0;
    let flip = if W::SIGNED { 0 } else { 0x80u8 };
    for oc in 0..s.c_out {
        let z = zw.of(oc) - w_shift;
        // SAFETY: row `oc` of `w` (`patch` elements of one byte) and of
        // the quads (`kq * 4` bytes, not written when in place).
        let src = unsafe { std::slice::from_raw_parts(w.add(oc * patch).cast::<u8>(), patch) };
        if !in_place {
            // SAFETY: as above.
            let dst = unsafe { std::slice::from_raw_parts_mut(w_quads.add(oc * kq).cast::<u8>(), kq * 4) };
            for (d, &v) in dst.iter_mut().zip(src) {
                *d = v ^ flip;
            }
            dst[patch..].fill(0);
        }
        // The weight row's sum only matters with an activation zero point.
        let sum = if zx_u8 == 0 { 0 } else { src.iter().map(|&v| i32::from((v ^ flip) as i8)).sum::<i32>() };
        any_zero |= z != 0;
        // SAFETY: entry `oc` of the corrections.
        unsafe {
            *row_fix.add(oc) = (patch as i32).wrapping_mul(zx_u8).wrapping_mul(z).wrapping_sub(zx_u8.wrapping_mul(sum));
            *row_zero.add(oc) = z;
        }
    }
    let w_quads = if in_place { w.cast::<i32>().cast_mut() } else { w_quads };
    let split = |units: usize, min: usize, f: &(dyn Fn(usize, usize) + Sync)| split_units(par, units, min, f);
    let tiles = Tiles::new(kq * 4, plane, opg, par);
    let (wq, fixes, zeros, sums, cp) =
        (SendPtr(w_quads), SendPtr(row_fix), SendPtr(row_zero), SendPtr(col_sums), SendPtr(cols));
    for b in 0..s.n {
        for g in 0..s.groups {
            // SAFETY: batch `b`, group `g`'s channels are inside `x`.
            let xg = SendPtr(unsafe { x.add((b * s.c_in + g * cpg) * s.h * s.w_in) }.cast_mut());
            split(kq, 4, &|start, len| {
                // SAFETY: quads `start..start + len` of the unfolded
                // columns are inside the scratch; each task writes its own.
                unsafe { unfold_quads(xg.get(), x_shift, zx_u8 as u8, s, cp.get(), start..start + len) }
            });
            if any_zero {
                split(plane, 256, &|start, len| {
                    for p in start..start + len {
                        let mut sum = 0i32;
                        for q in 0..kq {
                            // SAFETY: quad `q` of column `p` is inside the
                            // unfolded columns; entry `p` of `col_sums`
                            // belongs to this task.
                            let quad = unsafe { std::slice::from_raw_parts(cp.get().add((q * plane + p) * 4), 4) };
                            sum += quad.iter().map(|&v| i32::from(v)).sum::<i32>();
                        }
                        // SAFETY: as above.
                        unsafe { *sums.get().add(p) = sum };
                    }
                });
            }
            // SAFETY: group `g`'s output channels of batch `b` are inside `out`.
            let og = SendPtr(unsafe { out.add((b * s.c_out + g * opg) * plane) });
            split(tiles.count(), 1, &|start, len| {
                for task in start..start + len {
                    let (r0, rows, j0, width) = tiles.task(task, opg, plane);
                    let row = g * opg + r0;
                    // SAFETY: rows `row..row + rows` of the weight quads and
                    // corrections, columns `j0..j0 + width` of the unfolded
                    // quads, the column sums and the output: all inside the
                    // extents; tasks write disjoint tiles of `out`.
                    unsafe {
                        let fix = Fix {
                            row_fix: fixes.get().add(row),
                            row_zero: zeros.get().add(row),
                            col_sums: if any_zero { sums.get().add(j0) } else { std::ptr::null() },
                        };
                        quads_product(
                            wq.get().add(row * kq),
                            cp.get().add(j0 * 4),
                            og.get().add(r0 * plane + j0),
                            rows,
                            kq,
                            plane,
                            width,
                            fix,
                        );
                    }
                }
            });
        }
    }
}

/// Quads `quads` of one group's unfolded `x` shifted into u8: byte `(q *
/// plane + p) * 4 + t` is patch row `4q + t` at output pixel `p`; the
/// shifted zero point outside the image, 0 past the patch. The output
/// columns whose four sources are all inside the image are interleaved 16
/// at a time with SSE2 when the horizontal stride is 1 or 2.
///
/// # Safety
/// `x` readable for the group's `c_in / groups` channels, `cols` writable
/// for `ceil(patch / 4) * plane * 4` bytes.
#[cfg(target_arch = "x86_64")]
unsafe fn unfold_quads<X: IntElem>(
    x: *const X,
    shift: i32,
    zero: u8,
    s: &Conv2dShape,
    cols: *mut u8,
    quads: std::ops::Range<usize>,
) {
    let (patch, plane) = (s.patch_len(), s.out_plane());
    let taps = s.kh * s.kw;
    let flip = if shift != 0 { 0x80u8 } else { 0 };
    for q in quads {
        // Each patch row's channel, window row and window column, and the
        // output columns whose input column is inside (`lo..hi`).
        let rows: [Option<PatchRow>; 4] = std::array::from_fn(|t| {
            let r = 4 * q + t;
            (r < patch).then(|| {
                let (ic, ki, kj) = (r / taps, (r % taps) / s.kw, r % s.kw);
                let (lo, hi) = inside(s.w_out, s.w_in, s.sw, kj * s.dw, s.pw);
                (ic, ki, kj, lo, hi)
            })
        });
        for oy in 0..s.h_out {
            // Each of the four patch rows: a constant, or an input row read
            // at `ox * sw + offset` for `ox` in `lo..hi`. Spelled out rather
            // than `array::map`, whose closure LLVM may leave out of line: a
            // call per row and a copy of the array, per output row.
            let streams = [
                Stream::of(rows[0], oy, zero, s),
                Stream::of(rows[1], oy, zero, s),
                Stream::of(rows[2], oy, zero, s),
                Stream::of(rows[3], oy, zero, s),
            ];
            let (mut lo, mut hi) = (0, s.w_out);
            for st in &streams {
                if let Stream::Row { lo: l, hi: h, .. } = *st {
                    (lo, hi) = (lo.max(l), hi.min(h));
                }
            }
            let hi = hi.max(lo);
            // SAFETY: output row `oy` of quad row `q`: `w_out * 4` bytes.
            let dst = unsafe { cols.add((q * plane + oy * s.w_out) * 4) };
            // Columns `cols` one at a time, a stream at a time.
            let scalar = |cols: std::ops::Range<usize>| {
                for (t, st) in streams.iter().enumerate() {
                    // SAFETY: byte `t` of output columns `cols` (inside the
                    // row); input columns only where the stream is inside.
                    unsafe {
                        let out = dst.add(t);
                        match *st {
                            Stream::Const(v) => cols.clone().for_each(|ox| *out.add(ox * 4) = v),
                            Stream::Row { row, offset, lo, hi } => {
                                let src = x.add(row);
                                for ox in cols.clone() {
                                    *out.add(ox * 4) = if (lo..hi).contains(&ox) {
                                        ((*src.add(ox * s.sw + offset - s.pw)).to_i32() + shift) as u8
                                    } else {
                                        zero
                                    };
                                }
                            }
                        }
                    }
                }
            };
            scalar(0..lo);
            let mut ox = lo;
            if s.sw <= 2 {
                // The last byte a 16-column step reads is `16 * sw - 1`
                // past its first: inside the row while the step's last
                // column is below `hi` (stride 1), or its next one is
                // (stride 2).
                let reach = if s.sw == 1 { 16 } else { 17 };
                let step = |ox: usize| {
                    let src = |st: &Stream| match *st {
                        Stream::Const(v) => Source::Splat(v),
                        Stream::Row { row, offset, .. } => {
                            // SAFETY: columns `ox..ox + 16` are inside `lo..hi`.
                            Source::Bytes(unsafe { x.add(row + ox * s.sw + offset - s.pw) }.cast::<u8>())
                        }
                    };
                    let sources = [src(&streams[0]), src(&streams[1]), src(&streams[2]), src(&streams[3])];
                    // SAFETY: the sources are readable as described above;
                    // output columns `ox..ox + 16` are 64 bytes of `dst`.
                    unsafe { interleave16(sources, s.sw, flip, dst.add(ox * 4)) };
                };
                while ox + reach <= hi {
                    step(ox);
                    ox += 16;
                }
                // The last few columns: one more step ending at the last
                // one it may reach, over columns already written (the
                // same bytes again).
                if ox < hi && hi >= lo + reach {
                    step(hi - reach);
                    ox = hi - reach + 16;
                }
            }
            scalar(ox..s.w_out);
        }
    }
}

/// A patch row's channel, window row and window column, and the output
/// columns `lo..hi` whose input column is inside the image.
#[cfg(target_arch = "x86_64")]
type PatchRow = (usize, usize, usize, usize, usize);

/// One patch row of an output row in [`unfold_quads`].
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
enum Stream {
    Const(u8),
    /// Input elements `row + ox * sw + offset - pw` for `ox` in `lo..hi`.
    Row {
        row: usize,
        offset: usize,
        lo: usize,
        hi: usize,
    },
}

#[cfg(target_arch = "x86_64")]
impl Stream {
    /// Patch row `row` (none past the patch: 0) at output row `oy`: the
    /// zero point where the window row is outside the image or no column
    /// is inside, else the input row.
    #[inline(always)]
    fn of(row: Option<PatchRow>, oy: usize, zero: u8, s: &Conv2dShape) -> Stream {
        let Some((ic, ki, kj, lo, hi)) = row else { return Stream::Const(0) };
        let iy = (oy * s.sh + ki * s.dh).wrapping_sub(s.ph);
        if iy >= s.h || lo >= hi {
            return Stream::Const(zero);
        }
        Stream::Row { row: (ic * s.h + iy) * s.w_in, offset: kj * s.dw, lo, hi }
    }
}

/// Where [`interleave16`] reads one of its four byte streams.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
enum Source {
    Splat(u8),
    Bytes(*const u8),
}

/// Interleaves 16 bytes of each of four sources into 16 quads (64 bytes
/// at `dst`): source `t`'s byte `i` (every `stride`-th byte, `stride` 1 or
/// 2, XORed with `flip`; a splat is not flipped) lands at `dst[4i + t]`.
///
/// # Safety
/// Each `Bytes` source readable for `16 * stride` bytes; `dst` writable
/// for 64.
#[cfg(target_arch = "x86_64")]
unsafe fn interleave16(sources: [Source; 4], stride: usize, flip: u8, dst: *mut u8) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of x86_64; the reads and writes are the
    // caller's extents.
    unsafe {
        let flip = _mm_set1_epi8(flip as i8);
        let [a, b, c, d] = sources.map(|src| match src {
            Source::Splat(v) => _mm_set1_epi8(v as i8),
            Source::Bytes(p) if stride == 1 => _mm_xor_si128(_mm_loadu_si128(p.cast()), flip),
            Source::Bytes(p) => {
                // The even bytes of 32.
                let even = _mm_set1_epi16(0xFF);
                let lo = _mm_and_si128(_mm_loadu_si128(p.cast()), even);
                let hi = _mm_and_si128(_mm_loadu_si128(p.add(16).cast()), even);
                _mm_xor_si128(_mm_packus_epi16(lo, hi), flip)
            }
        });
        let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
        let (cd_lo, cd_hi) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
        _mm_storeu_si128(dst.cast(), _mm_unpacklo_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(dst.add(16).cast(), _mm_unpackhi_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(dst.add(32).cast(), _mm_unpacklo_epi16(ab_hi, cd_hi));
        _mm_storeu_si128(dst.add(48).cast(), _mm_unpackhi_epi16(ab_hi, cd_hi));
    }
}

/// Pairs `pairs` of one group's unfolded `x - zx`: element `(q * plane +
/// p) * 2 + half` is patch row `2q + half` (`(ic * kh + ki) * kw + kj`) at
/// output pixel `p`; 0 outside the image and past the patch.
///
/// # Safety
/// `x` readable for the group's `c_in / groups` channels, `cols` writable
/// for `ceil(patch / 2) * plane * 2` i16.
unsafe fn unfold<X: IntElem>(x: *const X, zx: i32, s: &Conv2dShape, cols: *mut i16, pairs: std::ops::Range<usize>) {
    let (patch, plane) = (s.patch_len(), s.out_plane());
    let taps = s.kh * s.kw;
    for q in pairs {
        for half in 0..2 {
            let r = 2 * q + half;
            // SAFETY: pair row `q` of `cols`: `plane * 2` i16.
            let dst = unsafe { cols.add(q * plane * 2 + half) };
            if r >= patch {
                for p in 0..plane {
                    // SAFETY: as above.
                    unsafe { *dst.add(p * 2) = 0 };
                }
                continue;
            }
            let (ic, ki, kj) = (r / taps, (r % taps) / s.kw, r % s.kw);
            for oy in 0..s.h_out {
                let iy = (oy * s.sh + ki * s.dh).wrapping_sub(s.ph);
                // SAFETY: output row `oy` of the pair row.
                let row = unsafe { dst.add(oy * s.w_out * 2) };
                if iy >= s.h {
                    for ox in 0..s.w_out {
                        // SAFETY: output row `oy` of the pair row.
                        unsafe { *row.add(ox * 2) = 0 };
                    }
                    continue;
                }
                // SAFETY: channel `ic`, row `iy` of the group's input.
                let src = unsafe { x.add((ic * s.h + iy) * s.w_in) };
                for ox in 0..s.w_out {
                    let ix = (ox * s.sw + kj * s.dw).wrapping_sub(s.pw);
                    // SAFETY: `ix < w_in` is checked; `ox` inside the row.
                    unsafe {
                        let v = if ix < s.w_in { (*src.add(ix)).to_i32() - zx } else { 0 };
                        *row.add(ox * 2) = v as i16;
                    }
                }
            }
        }
    }
}

/// The direct path: one input channel per group (see the module docs).
///
/// # Safety
/// As [`int_conv2d`]; `body` runs on this CPU.
#[allow(clippy::too_many_arguments)]
unsafe fn depthwise<X: IntElem, W: IntElem>(
    body: ConvBody,
    x: *const X,
    w: *const W,
    zx: i32,
    zw: &WeightZero<W>,
    out: *mut i32,
    s: &Conv2dShape,
    par: bool,
) {
    let (plane, taps) = (s.out_plane(), s.kh * s.kw);
    let multiplier = s.c_out_g();
    let (xs, ws, os) = (SendPtr(x.cast_mut()), SendPtr(w.cast_mut()), SendPtr(out));
    let run = |start: usize, len: usize| {
        for task in start..start + len {
            let (b, oc) = (task / s.c_out, task % s.c_out);
            let ch = oc / multiplier;
            // SAFETY: plane `(b, oc)` of `out`, channel `(b, ch)` of `x` and
            // row `oc` of `w` are inside the caller's extents; each task
            // writes its own plane.
            unsafe {
                let dst = std::slice::from_raw_parts_mut(os.get().add(task * plane), plane);
                let src = xs.get().add((b * s.c_in + ch) * s.h * s.w_in);
                let weights = ws.get().add(oc * taps);
                depthwise_plane(body, dst, src, weights, zx, zw.of(oc), s);
            }
        }
    };
    if par {
        crate::threads::par_for(s.n * s.c_out, 1, &run);
    } else {
        run(0, s.n * s.c_out);
    }
}

/// One depthwise output plane: each window tap adds `(w - zw) * (x -
/// zx)` in wrapping i32 over the output columns whose input column is
/// inside the image, a row at a time; compiled with AVX2 for the vector
/// bodies (baseline x86-64 has no 32-bit vector multiply).
///
/// # Safety
/// `src` readable for one input plane (`h * w_in`), `weights` for `kh *
/// kw` elements; `body` runs on this CPU.
unsafe fn depthwise_plane<X: IntElem, W: IntElem>(
    body: ConvBody,
    dst: &mut [i32],
    src: *const X,
    weights: *const W,
    zx: i32,
    zw: i32,
    s: &Conv2dShape,
) {
    match body {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the body, and with it AVX2, runs on this CPU; the
        // caller's extents.
        ConvBody::Vnni | ConvBody::Avx2 => unsafe { depthwise_plane_avx2(dst, src, weights, zx, zw, s) },
        // SAFETY: the caller's extents.
        ConvBody::Portable => unsafe { depthwise_plane_body(dst, src, weights, zx, zw, s) },
    }
}

/// [`depthwise_plane`] compiled with AVX2.
///
/// # Safety
/// AVX2 available; as [`depthwise_plane`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn depthwise_plane_avx2<X: IntElem, W: IntElem>(
    dst: &mut [i32],
    src: *const X,
    weights: *const W,
    zx: i32,
    zw: i32,
    s: &Conv2dShape,
) {
    // SAFETY: the caller's extents.
    unsafe { depthwise_plane_body(dst, src, weights, zx, zw, s) }
}

/// # Safety
/// As [`depthwise_plane`].
#[inline(always)]
unsafe fn depthwise_plane_body<X: IntElem, W: IntElem>(
    dst: &mut [i32],
    src: *const X,
    weights: *const W,
    zx: i32,
    zw: i32,
    s: &Conv2dShape,
) {
    dst.fill(0);
    for tap in 0..s.kh * s.kw {
        let (ki, kj) = (tap / s.kw, tap % s.kw);
        // SAFETY: tap `tap` of the channel's `kh * kw` weights.
        let w = unsafe { *weights.add(tap) }.to_i32() - zw;
        // The output columns whose input column is inside.
        let (lo, hi) = inside(s.w_out, s.w_in, s.sw, kj * s.dw, s.pw);
        if lo >= hi {
            continue;
        }
        for oy in 0..s.h_out {
            let iy = (oy * s.sh + ki * s.dh).wrapping_sub(s.ph);
            if iy >= s.h {
                continue;
            }
            // SAFETY: input columns `lo * sw + kj * dw - pw`, every `sw`-th,
            // for output columns `lo..hi`: inside row `iy` of the plane.
            let xs = unsafe {
                let first = src.add(iy * s.w_in + lo * s.sw + kj * s.dw - s.pw);
                std::slice::from_raw_parts(first, (hi - lo - 1) * s.sw + 1)
            };
            let acc = &mut dst[oy * s.w_out + lo..oy * s.w_out + hi];
            if s.sw == 1 {
                for (a, &x) in acc.iter_mut().zip(xs) {
                    *a = a.wrapping_add(w.wrapping_mul(x.to_i32() - zx));
                }
            } else {
                for (a, &x) in acc.iter_mut().zip(xs.iter().step_by(s.sw)) {
                    *a = a.wrapping_add(w.wrapping_mul(x.to_i32() - zx));
                }
            }
        }
    }
}

/// The output positions `lo..hi` (of `out_len`) whose input position
/// `o * stride + offset - pad` lies inside `0..in_len`.
fn inside(out_len: usize, in_len: usize, stride: usize, offset: usize, pad: usize) -> (usize, usize) {
    // First `o` with `o * stride + offset >= pad`.
    let lo = pad.saturating_sub(offset).div_ceil(stride).min(out_len);
    // Past the last `o` with `o * stride + offset < in_len + pad`.
    let end = in_len + pad;
    let hi = if end <= offset { 0 } else { (end - offset).div_ceil(stride).min(out_len) };
    (lo, hi.max(lo))
}
