//! The reference `Pad`: each output element computed on its own, from
//! ONNX's definition (numpy's `pad` modes), over the thunk's own dims.
//! The kernel must give the same bits.

use rlx_core::PadMode;

/// `src` (`dims`, row-major) padded by `before`/`after` on each axis.
/// `value` fills `constant` positions; an axis with no source elements
/// gives `value` in every mode (the validator admits that only for an
/// empty output).
///
/// # Panics
///
/// When the lists differ in length or `src` is shorter than `dims` say.
pub fn pad<T: Copy>(src: &[T], value: T, dims: &[usize], before: &[usize], after: &[usize], mode: PadMode) -> Vec<T> {
    assert!(before.len() == dims.len() && after.len() == dims.len(), "pad: ranks differ");
    let out_dims: Vec<usize> = (0..dims.len()).map(|d| dims[d] + before[d] + after[d]).collect();
    let total: usize = out_dims.iter().product();
    let mut coord = vec![0usize; dims.len()];
    (0..total)
        .map(|i| {
            let mut rem = i;
            for d in (0..dims.len()).rev() {
                coord[d] = rem % out_dims[d];
                rem /= out_dims[d];
            }
            let mut at = Some(0usize);
            for d in 0..dims.len() {
                let s = source(mode, coord[d] as i64 - before[d] as i64, dims[d]);
                at = at.zip(s).map(|(a, s)| a * dims[d] + s);
            }
            at.map_or(value, |a| src[a])
        })
        .collect()
}

/// The source index read at signed position `t` (0 is the first source
/// element) of an axis of `n`, or `None` for the value.
fn source(mode: PadMode, t: i64, n: usize) -> Option<usize> {
    let n = n as i64;
    if (0..n).contains(&t) {
        return Some(t as usize);
    }
    if n == 0 {
        return None;
    }
    let i = match mode {
        PadMode::Constant => return None,
        PadMode::Edge => t.clamp(0, n - 1),
        PadMode::Wrap => t.rem_euclid(n),
        PadMode::Reflect if n == 1 => 0,
        // Mirror about the first or last element until inside (once for
        // the pads the validator admits).
        PadMode::Reflect => {
            let mut t = t;
            while !(0..n).contains(&t) {
                t = if t < 0 { -t } else { 2 * (n - 1) - t };
            }
            t
        }
    };
    Some(i as usize)
}
