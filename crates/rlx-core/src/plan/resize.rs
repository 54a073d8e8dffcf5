//! `Resize`: the axis' scale, which of the kernel's two paths runs, and
//! the size of the weighted path's table (its scratch).

use crate::ops::ResizeMode;
use crate::shapes::ResizeShape;

/// The axis' scale in f64: the given one, or with `by_size` the exact
/// ratio `out_len / in_len` (ONNX computes a `sizes` scale in f64; its f32
/// rounding would move coordinates that fall on a tie).
pub fn resize_axis_scale(in_len: usize, out_len: usize, scale: f32, by_size: bool) -> f64 {
    if by_size {
        out_len as f64 / in_len as f64
    } else {
        f64::from(scale)
    }
}

/// Whether a resize runs the weighted path: a table of window starts and
/// f64 weights per output index, built once per call in scratch (the
/// weights do not depend on the row). Cubic, and linear with antialias.
/// Nearest and plain linear read at most two samples whose weight is
/// computed inline, with no scratch (antialias is refused for nearest).
pub fn resize_weighted(mode: ResizeMode, antialias: bool) -> bool {
    mode == ResizeMode::Cubic || (antialias && mode == ResizeMode::Linear)
}

/// Half the width of the filter: 1 sample each side for linear, 2 for
/// cubic (1 for the others, which never run weighted).
pub fn resize_support(mode: ResizeMode) -> f64 {
    if mode == ResizeMode::Cubic {
        2.0
    } else {
        1.0
    }
}

/// Taps per output index on the weighted path at scale `s`: the filter's
/// support widened by `1 / min(s, 1)` with `antialias`, as ONNX's
/// reference computes it (`start = floor(-support / s) + 1`, `2 - 2 *
/// start` taps: 4 for a cubic without antialias or at `s >= 1`, 2 for
/// linear). `None` when `s` is not positive and finite or the count does
/// not fit comfortably in memory.
pub fn resize_taps(mode: ResizeMode, antialias: bool, s: f64) -> Option<usize> {
    if !(s.is_finite() && s > 0.0) {
        return None;
    }
    let support = resize_support(mode);
    if !antialias {
        return Some(2 * support as usize);
    }
    let start = (-support / s.min(1.0)).floor() + 1.0;
    let taps = 2.0 - 2.0 * start;
    // `taps` is an even integer >= 2 here; the bound keeps it and the
    // table sizes below far from overflow.
    (taps <= (1u64 << 40) as f64).then_some(taps as usize)
}

/// Scratch bytes of a resize: on the weighted path, `out_len` window
/// starts (i64) and `out_len * taps` weights (f64); 0 otherwise. `None`
/// when a size overflows or the scale admits no table.
pub fn resize_scratch_bytes_checked(p: &ResizeShape) -> Option<usize> {
    if !resize_weighted(p.mode, p.antialias) || p.out_len == 0 {
        return Some(0);
    }
    let s = resize_axis_scale(p.in_len, p.out_len, p.scale, p.by_size);
    let taps = resize_taps(p.mode, p.antialias, s)?;
    taps.checked_add(1)?.checked_mul(p.out_len)?.checked_mul(8)
}

/// [`resize_scratch_bytes_checked`] of a validated shape (which cannot
/// overflow).
pub fn resize_scratch_bytes(p: &ResizeShape) -> usize {
    resize_scratch_bytes_checked(p).expect("the validator bounds a resize's scratch")
}

/// Whether a resize is worth splitting across threads: by its outputs,
/// times the taps each reads on the weighted path (a wide antialias
/// filter is many multiply-adds per output).
pub fn resize_parallel(p: &ResizeShape) -> bool {
    let outputs = p.outer.saturating_mul(p.out_len).saturating_mul(p.inner);
    let taps = if resize_weighted(p.mode, p.antialias) {
        let s = resize_axis_scale(p.in_len, p.out_len, p.scale, p.by_size);
        resize_taps(p.mode, p.antialias, s).unwrap_or(1)
    } else {
        1
    };
    super::parallel(outputs.saturating_mul(taps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_follow_the_reference_window() {
        use ResizeMode::{Cubic, Linear};
        assert_eq!(resize_taps(Cubic, false, 0.3), Some(4));
        assert_eq!(resize_taps(Linear, true, 2.0), Some(2));
        assert_eq!(resize_taps(Cubic, true, 1.0), Some(4));
        // 1 / 0.5 = 2 exactly: floor(-2) + 1 = -1, so 4 linear taps.
        assert_eq!(resize_taps(Linear, true, 0.5), Some(4));
        // 2 / 0.6 = 3.33: floor(-3.33) + 1 = -3, so 8 cubic taps.
        assert_eq!(resize_taps(Cubic, true, 0.6), Some(8));
        assert_eq!(resize_taps(Cubic, true, 0.0), None);
        assert_eq!(resize_taps(Linear, true, f64::NAN), None);
        assert_eq!(resize_taps(Cubic, true, 1e-30), None);
    }
}
