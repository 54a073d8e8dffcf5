//! `Pad`: the output's dims, where each padded position reads from, and
//! the canonical form the kernel walks.
//!
//! The kernel copies the source a row at a time and writes the borders
//! around each row. Axes with no padding after the last padded one move
//! with the row (a "unit" of that many elements per position of the row
//! axis), and runs of neighbouring unpadded axes before it merge into one,
//! so padding the spatial axes of a blocked `[n, cb, h, w, 16]` tensor
//! walks `[n * cb, h]` rows of `w` units of 16 elements.

use crate::ops::PadMode;

/// The most axes a `Pad` thunk has (the kernel's odometer lives on the
/// stack; the elementwise family's holds as many).
pub const PAD_MAX_RANK: usize = 8;

/// The output's dims, `dims[d] + before[d] + after[d]`; `None` when the
/// three lists differ in length or a sum overflows.
pub fn pad_out_dims(dims: &[usize], before: &[usize], after: &[usize]) -> Option<Vec<usize>> {
    if before.len() != dims.len() || after.len() != dims.len() {
        return None;
    }
    dims.iter().zip(before).zip(after).map(|((&n, &b), &a)| n.checked_add(b)?.checked_add(a)).collect()
}

/// The source index that position `o` of a padded axis reads (the axis
/// holds `len` source elements from position `before` on), or `None` for
/// the constant value: `constant` mode outside the source, or an empty
/// axis in any mode (which the validator allows only for an empty output).
///
/// `reflect` mirrors about the first and last elements without repeating
/// them: for the pads the validator admits (below `len`) that is
/// `before - o` and `2 * (len - 1) - (o - before)`; the rule is extended
/// periodically past them so every position maps inside the axis.
pub fn pad_source(mode: PadMode, o: usize, before: usize, len: usize) -> Option<usize> {
    if len == 0 {
        return None;
    }
    if o >= before && o - before < len {
        return Some(o - before);
    }
    // Signed position relative to the source's first element; both
    // operands are below `isize::MAX` for any tensor in memory.
    let t = o as i128 - before as i128;
    let n = len as i128;
    let i = match mode {
        PadMode::Constant => return None,
        PadMode::Edge => t.clamp(0, n - 1),
        PadMode::Wrap => t.rem_euclid(n),
        PadMode::Reflect if n == 1 => 0,
        PadMode::Reflect => {
            let period = 2 * (n - 1);
            let r = t.rem_euclid(period);
            if r < n {
                r
            } else {
                period - r
            }
        }
    };
    Some(i as usize)
}

/// A pad in canonical form: `dims`, `before` and `after` end with the row
/// axis (the last padded one) and hold fewer axes than the thunk when
/// unpadded ones merged; each position of the row axis is `unit`
/// contiguous elements (the product of the unpadded axes after it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PadPlan {
    pub dims: Vec<usize>,
    pub before: Vec<usize>,
    pub after: Vec<usize>,
    pub unit: usize,
}

/// The canonical form of a pad of `dims` (see the module docs): trailing
/// unpadded axes become the unit, neighbouring unpadded axes before the
/// row axis merge, and unpadded axes of one element vanish. A pad with no
/// padding at all is one row of one unit, the whole tensor.
///
/// # Panics
///
/// When the three lists differ in length (the validator rejects such a
/// thunk before it is lowered).
pub fn canonical_pad(dims: &[usize], before: &[usize], after: &[usize]) -> PadPlan {
    assert!(before.len() == dims.len() && after.len() == dims.len(), "canonical_pad: ranks differ");
    let padded = |d: usize| before[d] > 0 || after[d] > 0;
    let Some(row_axis) = (0..dims.len()).rev().find(|&d| padded(d)) else {
        return PadPlan { dims: vec![1], before: vec![0], after: vec![0], unit: dims.iter().product() };
    };
    let unit = dims[row_axis + 1..].iter().product();
    let mut plan = PadPlan { dims: Vec::new(), before: Vec::new(), after: Vec::new(), unit };
    // The product of the current run of unpadded axes, if any.
    let mut run: Option<usize> = None;
    for d in 0..=row_axis {
        if padded(d) {
            if let Some(n) = run.take().filter(|&n| n != 1) {
                plan.push(n, 0, 0);
            }
            plan.push(dims[d], before[d], after[d]);
        } else {
            run = Some(run.unwrap_or(1) * dims[d]);
        }
    }
    plan
}

impl PadPlan {
    fn push(&mut self, n: usize, b: usize, a: usize) {
        self.dims.push(n);
        self.before.push(b);
        self.after.push(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_map_as_numpy_pads() {
        // [1, 2, 3] padded by 2 on both sides.
        let map = |mode| (0..7).map(|o| pad_source(mode, o, 2, 3)).collect::<Vec<_>>();
        assert_eq!(map(PadMode::Constant), [None, None, Some(0), Some(1), Some(2), None, None]);
        assert_eq!(map(PadMode::Edge), [0, 0, 0, 1, 2, 2, 2].map(Some));
        assert_eq!(map(PadMode::Reflect), [2, 1, 0, 1, 2, 1, 0].map(Some));
        assert_eq!(map(PadMode::Wrap), [1, 2, 0, 1, 2, 0, 1].map(Some));
        // Wrap and edge pads may exceed the axis.
        assert_eq!(
            (0..6).map(|o| pad_source(PadMode::Wrap, o, 4, 2)).collect::<Vec<_>>(),
            [0, 1, 0, 1, 0, 1].map(Some)
        );
        assert_eq!(pad_source(PadMode::Edge, 9, 0, 1), Some(0));
        // Reflect past one mirror stays inside; a lone element reflects to itself.
        assert!((0..20).all(|o| pad_source(PadMode::Reflect, o, 9, 3).is_some_and(|i| i < 3)));
        assert_eq!(pad_source(PadMode::Reflect, 0, 1, 1), Some(0));
        // An empty axis has nothing to read in any mode.
        assert_eq!(pad_source(PadMode::Edge, 0, 1, 0), None);
    }

    #[test]
    fn canonical_form_merges_unpadded_axes() {
        // NCHW spatial pad: n and c merge, nothing after w.
        let p = canonical_pad(&[2, 3, 4, 5], &[0, 0, 1, 2], &[0, 0, 1, 0]);
        assert_eq!(p, PadPlan { dims: vec![6, 4, 5], before: vec![0, 1, 2], after: vec![0, 1, 0], unit: 1 });
        // Blocked [n, cb, h, w, 16]: the lanes are the unit.
        let p = canonical_pad(&[1, 2, 7, 7, 16], &[0, 0, 0, 0, 0], &[0, 0, 1, 1, 0]);
        assert_eq!(p, PadPlan { dims: vec![2, 7, 7], before: vec![0, 0, 0], after: vec![0, 1, 1], unit: 16 });
        // Only the outer axis: one row axis, the rest one unit; size-1 runs vanish.
        let p = canonical_pad(&[1, 3, 4], &[0, 1, 0], &[0, 2, 0]);
        assert_eq!(p, PadPlan { dims: vec![3], before: vec![1], after: vec![2], unit: 4 });
        // An unpadded axis between padded ones stays.
        let p = canonical_pad(&[2, 3, 4], &[1, 0, 0], &[0, 0, 1]);
        assert_eq!(p, PadPlan { dims: vec![2, 3, 4], before: vec![1, 0, 0], after: vec![0, 0, 1], unit: 1 });
        // No padding: the whole tensor is one unit.
        let p = canonical_pad(&[2, 3], &[0, 0], &[0, 0]);
        assert_eq!(p, PadPlan { dims: vec![1], before: vec![0], after: vec![0], unit: 6 });
    }

    #[test]
    fn output_dims_are_checked() {
        assert_eq!(pad_out_dims(&[2, 3], &[1, 0], &[0, 2]), Some(vec![3, 5]));
        assert_eq!(pad_out_dims(&[2, 3], &[1], &[0, 2]), None);
        assert_eq!(pad_out_dims(&[usize::MAX], &[1], &[0]), None);
    }
}
